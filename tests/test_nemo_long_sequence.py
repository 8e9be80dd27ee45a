"""NeMo's long-sequence table on DGX-B200 (benchmarks/data/nemo_long_sequence.yaml), never fitted.

The transcription is checked against the table typed here from its source (NVIDIA/NeMo
docs/source/performance/performance_long_sequence.md at 14d427f575, "LLAMA3-8B (FP8) - B200"), not
against the yaml's own numbers; the predictions against the B200's FP8 peak through a FLOP count
typed here; the doc's part of the NeMo section is checked current."""

from __future__ import annotations

import pytest

from .conftest import ROOT, load_yaml
from .test_nemo_performance import _nemo_check

# sequence (K tokens): (GPUs, global batch in sequences, tp, cp, dp, TFLOPS / GPU), typed from the table
TYPED = {
    8: (2, 512, 1, 1, 2, 1671),
    16: (4, 256, 1, 1, 4, 1717),
    32: (8, 128, 1, 2, 4, 1624),
    64: (16, 64, 1, 4, 4, 1600),
    128: (32, 32, 2, 4, 4, 1588),
    256: (64, 16, 4, 4, 4, 1590),
    512: (128, 8, 4, 8, 4, 1619),
    1024: (256, 4, 4, 16, 4, 1608),
}

# Llama 3 8B: layers, hidden, ffn, heads, kv heads, vocab
LAYERS, HIDDEN, FFN, HEADS, KV, VOCAB = 32, 4096, 14336, 32, 8, 128256


def nemo_flops_per_sequence(seq: int) -> float:
    """NeMo's llama3 count (nemo/utils/flops_formulas.py at 811bd0e64d), typed here: the whole
    attention square (non-causal), fwd + bwd."""
    return seq * LAYERS * HIDDEN * HIDDEN * (12 + 12 * KV / HEADS + 18 * FFN / HIDDEN + 12 * seq / HIDDEN
                                             + 6 * VOCAB / (LAYERS * HIDDEN))


def causal_flops_per_sequence(seq: int) -> float:
    """The same with each query attending to s / 2 keys: what the GPU executes at least."""
    return nemo_flops_per_sequence(seq) - seq * LAYERS * HIDDEN * 6 * seq


def _rows():
    return load_yaml((ROOT / "benchmarks" / "data" / "nemo_long_sequence.yaml").read_text())


def test_the_transcription_matches_the_typed_table():
    rows = _rows()
    assert len(rows) == len(TYPED) == 8
    for row in rows:
        k = row["model"]["seq_len"] // 1024
        gpus, batch, tp, cp, dp, tflops = TYPED[k]
        layout = row["layout"]
        assert (row["hardware"]["num_gpus"], layout["global_batch"], layout["tp"], layout["cp"], layout["dp"],
                layout["pp"]) == (gpus, batch, tp, cp, dp, 1), row["id"]
        assert tp * cp * dp == gpus, row["id"]
        assert row["outcomes"]["reported"] == {"tflops_per_gpu": tflops}, row["id"]
        assert row["flop_convention"] == "nemo_dgxc_noncausal" and row["hardware"]["gpu"] == "B200"


def test_every_row_is_predicted_and_the_doc_is_current():
    values = _nemo_check().long_sequence()
    assert values["NEMO_LONGSEQ_N"] == "8"
    lines = [line for line in values["NEMO_LONGSEQ_TABLE"].splitlines() if line.startswith("| B200")]
    assert len(lines) == 8
    doc = (ROOT / "docs" / "time-model.md").read_text()
    for key in ("NEMO_LONGSEQ_TABLE", "NEMO_LONGSEQ_SUMMARY"):
        assert values[key] in doc, f"stale {key}: run `.venv/bin/python benchmarks/fidelity.py --write`"


def test_the_reading_is_the_counts_and_no_prediction_beats_the_peak():
    """The reader's FLOP count agrees with NeMo's typed here, and each predicted step does at least
    the causal FLOPs at under the B200's dense FP8 peak (4,500 TFLOP/s), the link floors too."""
    results, skipped = _nemo_check().public_check.check(None, _nemo_check().LONG_SEQUENCE)
    assert not skipped and len(results) == 8
    for x in results:
        seq = x.row.plan.training.seq_len
        per_gpu = x.row.plan.training.global_batch / x.row.gpus
        assert x.row.conv_flops / x.row.plan.training.global_batch == pytest.approx(nemo_flops_per_sequence(seq),
                                                                                    rel=0.01), x.row.id
        b = x.breakdown
        assert per_gpu * causal_flops_per_sequence(seq) / b.step / 1e12 < 4500, x.row.id
        assert b.step >= max(b.bounds.intra, b.bounds.nic), x.row.id
