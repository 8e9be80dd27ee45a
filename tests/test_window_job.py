"""The generated job's sliding-window attention against a hand-written band-mask reference.

The window is more blocks of the job's attention (model.py's `window_blocks`): whole, causal, and
edge blocks computed as causal blocks on flipped rows and keys. Checked here, on one process,
with the generated model.py imported (definitions only):
- the blocks cover exactly the (query, key) pairs of the band `query - W < key <= query`, each
  once (enumerated, for sequences that are and are not multiples of W);
- the output and the gradients of q, k, v match softmax over explicitly band-masked scores
  computed in float64, with grouped-query attention (tiny: 4 heads, 2 kv heads);
- the same comparison against a window one token wider or narrower fails (the test sees an
  off-by-one);
- the model applies the window on the layers the spec says, and a windowed model's loss differs
  from the full-causal one.
The generated job's training run under tp 2 x dp 2 is compared with one process in
tests/e2e/test_parity.py (`test_windowed_layout_matches_one_process`).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from tests.e2e.harness import compile_job, one_of_each_kind
from tests.window_cp_check import band_reference


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    job = compile_job("window-reference", tmp_path_factory.mktemp("window"))
    sys.path.insert(0, str(job))
    try:
        spec = importlib.util.spec_from_file_location("window_model", job / "model.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(job))
    return module


def inputs(model, length: int, seed: int):
    generator = torch.Generator().manual_seed(seed)

    def tensor(heads):
        return torch.randn(2, heads, length, model.HEAD_DIM, generator=generator, dtype=torch.float32)

    return tensor(model.HEADS), tensor(model.KV_HEADS), tensor(model.KV_HEADS), tensor(model.HEADS)


def covered_pairs(model, blocks) -> list[tuple[int, int]]:
    pairs = []
    for row0, row1, key0, key1, mask in model.quintuples(blocks):
        for r in range(row1 - row0):
            for c in range(key1 - key0):
                if mask == model.WHOLE or (mask == model.CAUSAL and c <= r) or (mask == model.UPPER and c >= r):
                    pairs.append((row0 + r, key0 + c))
    return pairs


@pytest.mark.parametrize(("length", "window"), [(32, 8), (30, 8), (13, 5), (9, 1), (9, 2), (7, 7), (5, 9)])
def test_blocks_cover_the_band_once(model, length, window):
    blocks = model.window_blocks(0, 0, length, window)
    got = covered_pairs(model, blocks)
    want = [(i, j) for i in range(length) for j in range(length) if i - window < j <= i]
    assert want and sorted(got) == want  # no pair twice, none missing, none extra


@pytest.mark.parametrize(("length", "window"), [(32, 8), (30, 8), (13, 5), (16, 1)])
def test_windowed_attention_matches_the_band_reference(model, length, window):
    q, k, v, grad = inputs(model, length, length + window)
    tensors = [t.requires_grad_() for t in (q, k, v)]
    out = model.windowed_attention(q, k, v, window)
    got = [out, *torch.autograd.grad(out, tensors, grad)]
    want_out = band_reference(q, k, v, window)
    want = [want_out, *torch.autograd.grad(want_out, tensors, grad.double())]
    assert len(got) == len(want) == 4
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a.double(), b.double(), atol=2e-5, rtol=1e-4)
    for off in (window - 1, window + 1):  # an off-by-one window is seen
        if off < 1:
            continue
        wrong = band_reference(q, k, v, off)
        assert (out.double() - wrong).abs().max() > 1e-3


def test_the_model_windows_the_layers_the_spec_says(model):
    assert model.WINDOW == 8
    with torch.device("meta"):
        net = model.Transformer()
    windows = [net.layers[str(i)].attention.window for i in range(model.LAYERS)]
    assert windows == [8, 0] * (model.LAYERS // 2)  # tiny: 8 layers, 1-based 2, 4, ... full


@pytest.mark.parametrize(("length", "window"), [(32, 8), (30, 8), (13, 5), (9, 1), (9, 2), (7, 7), (5, 9), (17, 8)])
def test_the_time_model_counts_the_jobs_kernels(model, length, window):
    """`timing.window_block_count` (the kernels the time model charges a windowed layer of
    parc's job) equals the blocks the job builds."""
    from parc import timing

    assert timing.window_block_count(length, window) == len(model.window_blocks(0, 0, length, window)) // 5


# --- context parallelism ----------------------------------------------------------------------

CP_SPEC = """job window-cp
cp {cp} on nodes({cp} gpus, nvlink)
model tiny {{
  window 8
  full-attention-every 2
}}
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 16
  micro-batch 16
}}
cp {{
  flavour {flavour}
}}
"""
CP_WINDOWS = (1, 3, 8, 12)
"""Windows the cp check runs at seq 32: one token, under a ring chunk (4 or 8 tokens), equal to
the spec's, and across two chunks."""


def cp_job(directory, flavour: str, cp: int):
    from parc.atomic import write_tree
    from parc.backends import job_diagnostics, job_files
    from parc.pipeline import compile_text

    result = compile_text(CP_SPEC.format(cp=cp, flavour=flavour), path="window-cp.par")
    assert result.ok and result.plan is not None, [d.message for d in result.diagnostics if d.is_error]
    assert not [d for d in job_diagnostics(result.plan) if d.is_error]  # E0604 is gone
    out = directory / f"{flavour}-{cp}"
    write_tree(str(out), job_files(result.plan))
    return out


def ring_steps_outside_the_window(cp: int, seq: int, window: int) -> int:
    """(rank, source) pairs of the zig-zag ring with no (query, key) pair in the band, by brute
    force over positions: the steps the job must skip."""
    chunk = seq // (2 * cp)

    def positions(r):
        return [*range(r * chunk, (r + 1) * chunk), *range((2 * cp - 1 - r) * chunk, (2 * cp - r) * chunk)]

    return sum(not any(0 <= i - j < window for i in positions(r) for j in positions(s))
               for r in range(cp) for s in range(cp))


@pytest.mark.parametrize(("flavour", "cp"), one_of_each_kind(
    [(f, cp) for cp in (2, 4) for f in ("ring", "all-gather", "all-to-all")],
    [("all-gather", 2), ("all-to-all", 2), ("ring", 4)]))
def test_cp_windowed_attention_matches_the_band_reference(flavour, cp, tmp_path):
    """The job's cp attention through a window, on cp CPU processes (tests/window_cp_check.py):
    output and dq, dk, dv on every rank's positions equal the float64 band-mask reference over the
    whole sequence; the W - 1 and W + 1 references are far from the output; the ring skips
    exactly the steps whose chunks no query's window reaches."""
    import json
    import os
    from pathlib import Path

    from tests.e2e.harness import TORCHRUN, run_ranks

    job = cp_job(tmp_path, flavour, cp)
    script = Path(__file__).resolve().parent / "window_cp_check.py"
    command = [*TORCHRUN, "--standalone", "--nproc-per-node", str(cp), str(script), str(job), *map(str, CP_WINDOWS)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    done = run_ranks(command, cwd=job, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [line["window"] for line in lines] == list(CP_WINDOWS)
    for line in lines:
        assert line["error"] <= 1e-5, line
        assert line["off_by_one"] > 1e-2, line
        want = ring_steps_outside_the_window(cp, 32, line["window"]) if flavour == "ring" else 0
        assert line["skipped"] == want, line
    if flavour == "ring" and cp == 4:  # the check above is not vacuous: some steps are skipped
        assert any(line["skipped"] for line in lines)
