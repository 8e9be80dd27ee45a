"""Empty pipeline ends: `split [0, ..., 0]`, Megatron-Core's account_for_embedding_in_pipeline_split
and account_for_loss_in_pipeline_split (NVIDIA's Llama 3.1 405B and Qwen3-235B recipes).

The first chunk then holds only the embedding, the last only the final norm, the output layer
and the loss. The checks accept 0 at the ends only (E0220 elsewhere), and the memory and time
models predict such layouts; the figures are compared with sums done by hand from the model's
shape, not with what the models print. The generated job trains them like one process
(tests/e2e/test_parity.py: pp4-empty-ends, pp2-interleaved-empty-ends).
"""

from __future__ import annotations

import re

import pytest
from parc.memory import estimate
from parc.pipeline import compile_text
from parc.stages import empty_ends_split, pipeline_chunks
from parc.timing import predict

from .conftest import run_cli

VOCAB, HIDDEN = 256, 64
"""The tiny model's (compiler/catalog/models.py)."""
LAYER_PARAMS = (HIDDEN * HIDDEN * 2 + HIDDEN * 32 * 2) + 3 * HIDDEN * 128 + 2 * HIDDEN
"""One tiny block by hand: wq and wo 64 x 64, wk and wv 64 x 32 (2 KV heads of 16), SwiGLU's
three 64 x 128 matrices, two RMSNorm weights."""
MICROBATCHES = 8


def spec(split, layout="pp 4", schedule="1f1b", extra="") -> str:
    return f"""job empty-ends
{layout} on nodes(4 gpus, nvlink)
model tiny {{ layers {sum(split)} }}
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 16
  micro-batch 2
}}
pp {{
  schedule {schedule}
  split [{', '.join(map(str, split))}]{extra}
}} allow W0323
"""


def compiled(text: str):
    result = compile_text(text)
    assert not [d for d in result.diagnostics if d.is_error], [d.message for d in result.diagnostics]
    return result.plan


def test_ends_may_be_empty_and_hold_the_embedding_and_the_loss():
    chunks = pipeline_chunks(compiled(spec((0, 3, 3, 0))))
    assert [(c.layers, c.embedding, c.output) for c in chunks] == [
        (0, True, False), (3, False, False), (3, False, False), (0, False, True)]
    assert [c.first_layer for c in chunks] == [0, 0, 3, 6]


@pytest.mark.parametrize("split, entry", [((2, 0, 2, 2), 1), ((0, 0, 3, 3), 1), ((3, 3, 0, 0), 2)])
def test_an_empty_inner_chunk_is_refused_on_its_entry(split, entry):
    text = spec(split)
    result = compile_text(text)
    [d] = [d for d in result.diagnostics if d.is_error]
    assert d.code == "E0220" and d.help
    line = text.splitlines()[d.span.line - 1]
    column = line.index("[") + 1 + sum(len(f"{n}, ") for n in split[:entry])
    assert text[d.span.start:d.span.end] == "0" and d.span.col - 1 == column


@pytest.mark.parametrize("layers, chunks, expected", [
    (126, 128, (0,) + (1,) * 126 + (0,)), (94, 96, (0,) + (1,) * 94 + (0,)), (7, 8, (0,) + (1,) * 7),
    (6, 6, None), (5, 8, None), (0, 2, None)])
def test_empty_ends_split(layers, chunks, expected):
    assert empty_ends_split(layers, chunks) == expected


def test_the_layers_short_help_offers_the_empty_ends_split():
    text = spec((1, 1, 1, 1, 1, 1), layout="pp 4", schedule="interleaved-1f1b",
                extra="\n  virtual-stages 2").replace("  split [1, 1, 1, 1, 1, 1]\n", "")
    [d] = [d for d in compile_text(text).diagnostics if d.is_error]
    assert d.code == "E0315"
    written = re.search(r"split (\[[\d, ]+\])", d.help).group(1)
    assert written == "[0, 1, 1, 1, 1, 1, 1, 0]"
    fixed = text.replace("virtual-stages 2", f"virtual-stages 2\n  split {written}")
    assert not [d for d in compile_text(fixed).diagnostics if d.is_error]


def test_memory_of_the_empty_ends_by_hand():
    """No sharding: fp32 parameters with a bf16 compute copy (4 + 2 bytes), fp32 gradients (4),
    Adam's two fp32 moments (8); docs/memory-model.md section 2."""
    stages = estimate(compiled(spec((0, 3, 3, 0)))).stages
    embedding, head = VOCAB * HIDDEN, HIDDEN + VOCAB * HIDDEN  # the head: final norm + output layer
    assert [(s.layers, s.params, s.grads, s.optimizer) for s in stages] == [
        (0, 6 * embedding, 4 * embedding, 8 * embedding),
        (3, 6 * 3 * LAYER_PARAMS, 4 * 3 * LAYER_PARAMS, 8 * 3 * LAYER_PARAMS),
        (3, 6 * 3 * LAYER_PARAMS, 4 * 3 * LAYER_PARAMS, 8 * 3 * LAYER_PARAMS),
        (0, 6 * head, 4 * head, 8 * head)]
    assert stages[0].p2p > 0 and stages[3].activations > 0  # still a stage: it sends, it receives


@pytest.mark.parametrize("layout, schedule, v, extra, ratio", [
    ("pp 4", "1f1b", 1, "", 1.5), ("pp 2 x dp 2", "interleaved-1f1b", 2, "\n  virtual-stages 2", 1.0)])
def test_step_of_the_empty_ends_by_hand(layout, schedule, v, extra, ratio):
    """Under 1F1B the slowest rank holds 3 layers and nothing else, 3/2 the compute of
    [1, 2, 2, 1]'s slowest rank, whose 2 layers are the same blocks. Interleaved over pp 2 x 2,
    rank 0 holds chunks 0 and 2 (0 + 3 or 1 + 2 layers and the embedding), rank 1 chunks 1 and 3
    (3 + 0 or 2 + 1 and the head): the same compute either way. The bubble is (pp - 1) / (v m)
    of the slowest rank's busy time (Narayanan et al. 2021), the pipeline sending across every
    chunk boundary, empty or not."""
    pp = 4 // v
    m = MICROBATCHES // (1 if v == 1 else 2)
    empty = predict(compiled(spec((0, 3, 3, 0), layout, schedule, extra))).breakdown
    even = predict(compiled(spec((1, 2, 2, 1), layout, schedule, extra))).breakdown
    assert empty.microbatches == even.microbatches == m
    assert empty.compute == pytest.approx(ratio * even.compute, rel=1e-9)
    for b in (empty, even):
        busy = b.compute + b.recompute + b.exposed["tp"] + b.exposed["pp"]
        assert b.bubble == pytest.approx((pp - 1) / (v * m) * busy, rel=1e-9)
        assert b.step == pytest.approx(b.compute + b.recompute + b.bubble + sum(b.exposed.values()) + b.optimizer + b.copies)
    assert empty.exposed["pp"] > 0 and empty.exposed["pp"] == pytest.approx(even.exposed["pp"])
    assert empty.stage in (1, 2) if v == 1 else empty.stage in (0, 1)


def test_explain_shows_the_empty_stages(tmp_path):
    path = tmp_path / "empty.par"
    path.write_text(spec((0, 3, 3, 0)), encoding="utf-8")
    result = run_cli("explain", str(path))
    assert result.exit_code == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+[0-3]\s+[0-3]\s", line)]
    assert [(r[0], r[1]) for r in rows[:4]] == [("0", "0"), ("1", "3"), ("2", "3"), ("3", "0")]


def test_a_long_split_is_shortened_in_the_help_and_counted():
    from parc.checks.schedule import spelled_split

    assert spelled_split(empty_ends_split(126, 128)) == (
        "`pp { split [0, 1, ..., 1, 0] }` (128 entries, 126 inner ones of 1)")
    assert spelled_split((0, 2, 0)) == "`pp { split [0, 2, 0] }`"


def test_search_fills_holes_around_a_written_empty_ends_split(tmp_path):
    """pp is a hole, the split's 32 entries over 8 virtual stages fix it at 4 (E0316 rejects the
    rest); every layout left is timed, each as `parc explain` of the filled spec times it."""
    import json

    split = ", ".join(["0"] + ["1"] * 30 + ["0"])
    path = tmp_path / "holes.par"
    path.write_text(f"""job s
tp ? x pp ? x dp ? on nodes(8 gpus, nvlink)
model llama3-8b {{ layers 30 }}
hardware {{
  gpu h100-sxm
  nodes 4
}}
train {{
  seq 4096
  global-batch 64
}}
pp {{
  schedule interleaved-1f1b
  virtual-stages 8
  split [{split}]
}}
""", encoding="utf-8")
    result = run_cli("search", str(path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["candidates"]) == 4 and all(c["degrees"]["pp"] == 4 for c in data["candidates"])
    for c in data["candidates"]:
        text = path.read_text().replace("tp ? x pp ? x dp ?", c["layout"])
        assert predict(compiled(text)).breakdown.step == pytest.approx(c["step_seconds"], rel=1e-5)


def test_the_job_readme_names_the_empty_stages():
    from parc.backends import job_files

    readme = job_files(compiled(spec((0, 3, 3, 0))))["README.md"]
    assert "embedding, no layers" in readme and "no layers, final norm and output" in readme
    assert "layers 0-2" in readme and "layers 3-5" in readme and "--1" not in readme


def test_a_split_of_the_wrong_length_is_shown_the_empty_ends_one():
    """6 layers over pp 2 x 4 chunks, split written for 4: the help's example is the empty-ends
    split, which compiles."""
    text = spec((0, 3, 3, 0), layout="pp 2 x dp 2", schedule="interleaved-1f1b", extra="\n  virtual-stages 4")
    [d] = [d for d in compile_text(text).diagnostics if d.is_error]
    assert d.code == "E0316"
    written = re.search(r"split (\[[\d, ]+\])", d.help).group(1)
    assert written == "[0, 1, 1, 1, 1, 1, 1, 0]"
    assert not [d for d in compile_text(text.replace("[0, 3, 3, 0]", written)).diagnostics if d.is_error]
