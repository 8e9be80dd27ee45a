"""docs/memory-model.md, "The two 405B gaps ... ruled out": torch 1963fc8's pipelining keeps every
micro-batch's stage output in `output_chunks` until the next step (no `return_outputs` then), a
term parc does not count for `target torchtitan`. The doc rules it out as the cause of the 405B
gaps because it sits on the last stage, which stays below stage 0 even with it. This checks that
argument against parc's per-stage figures, with the bytes counted by hand from each row's fields."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLAMA3_VOCAB = 128_256  # Llama 3's tokenizer (meta-llama/Llama-3.1-405B config.json, vocab_size)
BF16 = 2


def _bench():
    spec = importlib.util.spec_from_file_location("memory_fidelity", ROOT / "benchmarks" / "memory_fidelity.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_fidelity"] = module
    spec.loader.exec_module(module)
    return module


bench = _bench()
PIPELINED_405B = [r for r in bench.load()["rows"]
                  if r["model"] == "llama3-405b" and r["layout"]["pp"] > 1]


def kept_logits_bytes(row: dict) -> int:
    """The earlier micro-batches' bf16 logits the last stage still holds at its last backward:
    (m - 1) x tokens per micro-batch on the rank x vocabulary rows per tp rank x 2 bytes."""
    lay, train = row["layout"], row["train"]
    m = lay["microbatches"]
    tokens = train["seq"] * train["local_batch"] // m // lay["cp"]
    return (m - 1) * tokens * (LLAMA3_VOCAB // lay["tp"]) * BF16


def test_the_hand_count_is_the_docs_figure():
    assert PIPELINED_405B, "no pipelined 405B row"
    assert {kept_logits_bytes(r) for r in PIPELINED_405B} == {7 * 32_768 * 16_032 * 2} == {7_354_712_064}


def test_output_chunks_leave_the_last_stage_below_the_worst_rank():
    from parc.memory import estimate

    assert PIPELINED_405B, "no pipelined 405B row"
    for row in PIPELINED_405B:
        plan, _ = bench._compile(bench.spec_text(row), row["id"])
        stages = estimate(plan).stages
        worst = max(s.total for s in stages)
        assert stages[0].total == worst, row["id"]
        assert stages[-1].total + kept_logits_bytes(row) < worst, row["id"]
