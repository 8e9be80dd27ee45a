"""NVIDIA's DGX Cloud benchmarking tables on DGX H100 (benchmarks/data/dgxc_benchmarking_h100.yaml),
never fitted.

The transcription is checked against figures typed here from the source (NVIDIA/dgxc-benchmarking
v24.11.1, each workload's README "Expected Performance" tables): each row's step time, and the
table's other two figures, tokens/s (its global batch x sequence / step time) and MFU (tokens/s per
GPU x NeMo's non-causal FLOP count per token, typed here from Megatron-Core's
`num_floating_point_operations`, over the dense peak), not through benchmarks/published.py. The
reader's use of each configuration's stated facts and the doc section are checked too."""

from __future__ import annotations

import pytest

from .conftest import ROOT, benchmark_script, load_yaml

# model: (layers, hidden, ffn, heads, kv heads, head dim, vocab, gated MLP, sequence)
SHAPES = {
    "llama31_8b": (32, 4096, 14336, 32, 8, 128, 128256, True, 8192),
    "llama31_70b": (80, 8192, 28672, 64, 8, 128, 128256, True, 8192),
    "llama31_405b": (126, 16384, 53248, 128, 16, 128, 128256, True, 8192),  # the release's config: 16 groups
    "nemotron4_15b": (32, 6144, 24576, 48, 8, 128, 256000, False, 4096),
    "nemotron4_340b": (96, 18432, 73728, 96, 8, 192, 256000, False, 4096),
    "gpt3_175b": (96, 12288, 49152, 96, 96, 128, 50257, False, 2048),
}

# (model, precision): {GPUs: (global batch, step s, tokens/s, MFU %)}, typed from the READMEs
TYPED = {
    ("llama31_8b", "bf16"): {8: (128, 12.91, 81222, 59.37), 128: (2048, 13.10, 1280704, 58.51)},
    ("llama31_8b", "fp8"): {8: (128, 9.67, 108436, 39.63), 64: (1024, 9.80, 855980, 39.10)},
    ("llama31_70b", "bf16"): {64: (128, 14.72, 71235, 54.10), 2048: (4096, 14.98, 2248957, 53.38)},
    ("llama31_70b", "fp8"): {128: (256, 10.93, 191871, 36.43), 1024: (2048, 11.28, 1487342, 35.30)},
    ("llama31_405b", "bf16"): {32: (126, 8.85, 116632, 58.63), 96: (126, 8.75, 117965, 56.17),
                               576: (252, 17.20, 120022, 55.78)},
    ("llama31_405b", "fp8"): {192: (252, 11.00, 187740, 44.07), 2304: (1008, 12.35, 668626, 38.87)},
    ("nemotron4_15b", "bf16"): {16: (64, 2.83, 92630, 62.10), 2048: (8192, 2.96, 11335957, 59.37)},
    ("nemotron4_15b", "fp8"): {256: (1024, 2.1, 1997288, 41.82)},
    ("nemotron4_340b", "bf16"): {128: (32, 4.61, 28432, 55.38), 2048: (512, 4.84, 433296, 52.75)},
    ("nemotron4_340b", "fp8"): {512: (128, 3.26, 160825, 39.14)},
    ("gpt3_175b", "bf16"): {1024: (2048, 9.01, 465517, 49.38)},
    ("gpt3_175b", "fp8"): {128: (256, 5.92, 88562, 37.56), 2048: (4096, 6.24, 1344328, 35.63)},
}
TABLES = {("llama31_8b", "bf16"): 5, ("llama31_8b", "fp8"): 5, ("llama31_70b", "bf16"): 6, ("llama31_70b", "fp8"): 6,
          ("llama31_405b", "bf16"): 6, ("llama31_405b", "fp8"): 6, ("nemotron4_15b", "bf16"): 8,
          ("nemotron4_15b", "fp8"): 8, ("nemotron4_340b", "bf16"): 5, ("nemotron4_340b", "fp8"): 5,
          ("gpt3_175b", "bf16"): 5, ("gpt3_175b", "fp8"): 5}
"""Columns per table in the READMEs."""
LAYERS_405B = {32: 7, 96: 21, 192: 42}
"""The 405B rows below 576 GPUs run part of the model (the README's `Layers` line, configure.sh)."""


MHA_COUNTED = {"nemotron4_15b", "nemotron4_340b"}
"""Models whose MFU counts the key and value projections at the queries' width, as if every head
had its own (the 340B README's own figure, 1.01e16 FLOPs a sequence, is that count; with its 8
query groups it would be 8.6e15)."""


def flops_per_token(model: str, layers: int) -> float:
    """NeMo's model FLOPs per token as its DGX Cloud MFU counts them: Megatron-Core's
    `num_floating_point_operations` with the whole attention square (12 s/h, non-causal)."""
    _, h, f, heads, kv, d, vocab, gated, seq = SHAPES[model]
    kv = heads if model in MHA_COUNTED else kv
    q = heads * d
    attention = (1 + kv / heads + seq / h) * (q / h)
    mlp = f / h * (1.5 if gated else 1.0)
    return 12 * layers * h * h * (attention + mlp + vocab / (2 * layers * h))


def load():
    return load_yaml((ROOT / "benchmarks" / "data" / "dgxc_benchmarking_h100.yaml").read_text())


def key_of(row_id: str) -> tuple[str, str, int]:
    words = row_id.split("_")  # dgxc2411_h100_<model>_<precision>_<N>gpu
    return "_".join(words[2:-2]), words[-2], int(words[-1].removesuffix("gpu"))


def test_every_table_column_is_transcribed_and_the_typed_ones_match():
    rows = load()
    assert len(rows) == sum(TABLES.values()) == 70
    seen: dict[tuple[str, str], int] = {}
    for r in rows:
        model, precision, gpus = key_of(r["id"])
        seen[model, precision] = seen.get((model, precision), 0) + 1
        lay, hw = r["layout"], r["hardware"]
        assert hw["num_gpus"] == gpus and lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == gpus
        assert lay["global_batch"] == lay["micro_batch"] * lay["dp"] * lay["grad_accum"]
        assert hw["peak_tflops_dense_at_precision"] == (1979 if precision == "fp8" else 989)
        layers, hidden, ffn, heads, kv, head_dim, vocab, _, seq = SHAPES[model]
        m = r["model"]
        want_layers = LAYERS_405B.get(gpus, layers) if model == "llama31_405b" else layers
        assert (m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["head_dim"], m["vocab"],
                m["seq_len"]) == (want_layers, hidden, ffn, heads, kv, head_dim, vocab, seq), r["id"]
        typed = TYPED.get((model, precision), {}).get(gpus)
        if typed:
            batch, step, tokens, mfu = typed
            assert (lay["global_batch"], r["outcomes"]["reported"]) == (batch, {"step_time_s": step}), r["id"]
            assert r["outcomes"]["table"] == {"tokens_per_s": tokens, "mfu_pct": mfu}, r["id"]
    assert seen == TABLES


@pytest.mark.parametrize("row", load(), ids=lambda r: r["id"])
def test_each_rows_three_figures_agree(row):
    """A row's step time, tokens/s and MFU agree through the batch and a FLOP count typed here (the
    step time is printed to 0.01 s, hence 0.6 %; MFU within 1.5 %)."""
    model, precision, gpus = key_of(row["id"])
    lay, table = row["layout"], row["outcomes"]["table"]
    step = row["outcomes"]["reported"]["step_time_s"]
    seq = SHAPES[model][-1]
    assert lay["global_batch"] * seq / step == pytest.approx(table["tokens_per_s"], rel=0.006)
    peak = 1979e12 if precision == "fp8" else 989e12
    mfu = table["tokens_per_s"] / gpus * flops_per_token(model, row["model"]["layers"]) / peak
    assert 100 * mfu == pytest.approx(table["mfu_pct"], rel=0.015)


def test_the_340b_readmes_flop_count_is_the_one_typed_here():
    """The README: "The model flops for NeMoTron4 340b for GBS=1 is 1.01e16"."""
    assert flops_per_token("nemotron4_340b", 96) * 4096 == pytest.approx(1.01e16, rel=0.005)


def _dgxc_check():
    return benchmark_script("dgxc_check")


def test_every_row_is_evaluated_within_physics_and_the_doc_section_is_current():
    """Every row compiles and is predicted (none left out), no predicted step beats its busiest
    link, and docs/time-model.md holds the section the script writes now (`fidelity.py --write`)."""
    module = _dgxc_check()
    results, skipped = module.check()
    assert len(results) == 70 and not skipped
    for x in results:
        b = x.breakdown
        assert b.step >= max(b.bounds.nic, b.bounds.intra) * (1 - 1e-9), x.row.id
    values = module.section()
    doc = (ROOT / "docs" / "time-model.md").read_text()
    for key in ("DGXC_H100_TABLE", "DGXC_H100_SUMMARY", "DGXC_H100_PAIRS"):
        assert values[key] in doc, f"stale {key}: run `.venv/bin/python benchmarks/fidelity.py --write`"


def test_the_configurations_stated_facts_reach_the_spec():
    """What each release config states, as the reader writes it: bf16 gradient reduction through the
    distributed optimizer everywhere, the userbuffers tp overlap at tp > 1, Nemotron-4 340B's
    selective recomputation and no recomputation elsewhere, fp8 parameters gathered at a byte in
    every FP8 run; the 405B rows below 576 GPUs with their 7, 21 or 42 layers."""
    results, _ = _dgxc_check().check()
    assert results
    for x in results:
        model, precision, gpus = key_of(x.row.id)
        spec, sw, plan = x.row.spec, x.row.software, x.row.plan
        assert "grad-reduce bf16" in spec and plan.layout.dp.sharding == "zero1", x.row.id
        assert (sw.tp_overlap == "all") == (plan.layout.degree("tp") > 1), x.row.id
        assert plan.training.recompute == ("selective" if model == "nemotron4_340b" else "none"), x.row.id
        assert sw.gather_bytes == (1 if precision == "fp8" else 2) and plan.target.fp8_params, x.row.id
        if model == "llama31_405b":
            assert plan.model.layers == LAYERS_405B.get(gpus, 126), x.row.id


def test_the_fp8_speedup_matches_the_tables_own_bf16_twins():
    """Each FP8 run beside its BF16 twin: same model, GPUs, layout and release, the precision the
    only difference. What FP8 buys on H100 under NeMo is measured here apart from the level both
    rows share (the table's BF16 rows are themselves predicted about 7 % fast): the model's
    FP8-over-BF16 throughput ratio over the table's, pair by pair, has a median within 3 % of 1
    and no pair beyond 20 % but one: GPT-3 175B at 1,024 GPUs, whose own table gains 1.50x from FP8
    at 128 and 256 GPUs, 1.34x at 1,024 and 1.45x at 2,048 at one layout per GPU (no term of the
    layout moves so), sits at 1.23 since its interleaved schedule's pipeline sends run beside the
    next chunk (stop 52; 1.20 since the casts run on the rank's own rows before the
    sequence-parallel gather, stop 51; 1.19 before), and is held under 25 %. An FP8 GEMM ceiling scaled by the matmul sweep's FP8-over-BF16
    maximum (0.883 on H100, `kernels.MAMF_FP8` over `MAMF_BF16`) was tried against these pairs
    and put the median at 0.94: the fitted BF16 ceiling's losses are not carried into FP8 at that
    ratio, so it was not kept."""
    import statistics

    results, _ = _dgxc_check().check()
    by_id = {x.row.id: x for x in results}
    ratios, ratios_by_row = [], {}
    for row_id, fp8 in by_id.items():
        if "_fp8_" not in row_id:
            continue
        bf16 = by_id[row_id.replace("_fp8_", "_bf16_")]
        degrees = [tuple((a.name, a.degree) for a in x.row.plan.layout.axes) for x in (fp8, bf16)]
        assert degrees[0] == degrees[1], row_id
        measured = fp8.row.reported_tflops / bf16.row.reported_tflops
        ratios.append(fp8.predicted / bf16.predicted / measured)
        ratios_by_row[row_id] = ratios[-1]
    assert len(ratios) == 35
    assert abs(statistics.median(ratios) - 1) < 0.03
    outlier = "dgxc2411_h100_gpt3_175b_fp8_1024gpu"
    assert all(0.8 < r < 1.2 for row_id, r in ratios_by_row.items() if row_id != outlier), ratios_by_row
    assert 0.8 < ratios_by_row[outlier] < 1.25, ratios_by_row[outlier]
