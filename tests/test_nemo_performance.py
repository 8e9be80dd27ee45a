"""NeMo's published pre-training tables (benchmarks/data/nemo_performance.yaml), never fitted.

The transcription is checked against figures typed here from the sources (NVIDIA/NeMo
docs/source/performance/performance_summary.md at 8e3d65dcfe for 24.07; the NeMo Framework user
guide's 25.02 Performance Summary), and each row's tokens/s against NeMo's own model TFLOP/s
through a FLOP count typed here from Megatron-Core's `num_floating_point_operations` (NeMo's
counter), not through benchmarks/published.py. The doc section is checked current."""

from __future__ import annotations

import pytest

from .conftest import ROOT, benchmark_script, load_yaml

# model: (layers, hidden, ffn, heads, kv heads, head dim, vocab, gated MLP, experts per token)
SHAPES = {
    "gpt3_5b": (24, 4096, 16384, 32, 32, 128, 51200, False, 1),
    "gpt3_20b": (44, 6144, 24576, 48, 48, 128, 51200, False, 1),
    "gpt3_175b": (96, 12288, 49152, 96, 96, 128, 51200, False, 1),
    "llama2_7b": (32, 4096, 11008, 32, 32, 128, 32000, True, 1),
    "llama2_13b": (40, 5120, 13824, 40, 40, 128, 32000, True, 1),
    "llama2_70b": (80, 8192, 28672, 64, 8, 128, 32000, True, 1),
    "nemotron3_8b": (32, 4096, 16384, 32, 32, 128, 256000, False, 1),
    "nemotron3_22b": (40, 6144, 24576, 48, 48, 128, 256000, False, 1),
    "nemotron4_15b": (32, 6144, 24576, 48, 8, 128, 256000, False, 1),
    "nemotron4_340b": (96, 18432, 73728, 96, 8, 192, 256000, False, 1),
    "llama3_8b": (32, 4096, 14336, 32, 8, 128, 128256, True, 1),
    "llama3_70b": (80, 8192, 28672, 64, 8, 128, 128256, True, 1),
    "llama31_405b": (126, 16384, 53248, 128, 8, 128, 128256, True, 1),
    "mixtral_8x7b": (32, 4096, 14336, 32, 8, 128, 32000, True, 2),
    "mixtral_8x22b": (56, 6144, 16384, 48, 8, 128, 32768, True, 2),
}

# id: (sequence, tokens/s/GPU, model TFLOP/s/GPU, attention counted causally), typed from the tables
TYPED = {
    "nemo2407_h100_gpt3_5b_64gpu": (2048, 23406, 765, False),
    "nemo2407_h100_gpt3_20b_64gpu": (2048, 5851, 750, False),
    "nemo2407_h100_gpt3_175b_128gpu": (2048, 716, 771, False),
    "nemo2407_h100_gpt3_175b_512gpu": (2048, 825, 888, False),  # the TFLOP/s cell links to MLCommons
    "nemo2407_h100_llama2_7b_8gpu": (4096, 16934, 780, False),
    "nemo2407_h100_llama2_13b_16gpu": (4096, 8715, 760, False),
    "nemo2407_h100_llama2_70b_64gpu": (4096, 1728, 768, False),
    "nemo2407_h100_nemotron3_8b_64gpu": (4096, 12507, 643, False),
    "nemo2407_h100_nemotron3_22b_64gpu": (4096, 4312, 562, False),
    "nemo2407_h100_nemotron4_340b_128gpu": (4096, 326, 686, False),
    "nemo2407_h100_llama3_8b_8gpu": (8192, 12273, 711, False),
    "nemo2407_h100_llama3_70b_64gpu": (8192, 1524, 734, False),
    "nemo2502_b200_gpt3_175b_512gpu": (2048, 1600, 1722, False),
    "nemo2502_b200_llama3_8b_8gpu": (8192, 26006, 1506, False),
    "nemo2502_b200_llama3_70b_64gpu": (8192, 3062, 1474, False),
    "nemo2502_b200_llama31_405b_128gpu": (8192, 625, 1658, False),
    "nemo2502_b200_nemotron4_15b_64gpu": (4096, 14760, 1387, False),
    "nemo2502_b200_nemotron4_340b_128gpu": (4096, 602, 1268, False),
    "nemo2502_b200_mixtral_8x7b_64gpu": (4096, 15457, 1282, False),
    "nemo2502_b200_mixtral_8x22b_256gpu": (65536, 2232, 824, True),
    "nemo2502_h100_gpt3_175b_512gpu": (2048, 866, 932, False),
    "nemo2504_gb200_gpt3_175b_128gpu": (2048, 1804, 1942, False),
    "nemo2504_gb200_llama3_8b_8gpu": (8192, 33099, 1917, False),
    "nemo2504_gb200_llama3_70b_64gpu": (8192, 4035, 1943, False),
    "nemo2504_gb200_llama31_405b_128gpu": (8192, 665, 1763, False),
    "nemo2504_gb200_nemotron4_15b_64gpu": (4096, 17809, 1674, False),
    "nemo2504_gb200_nemotron4_340b_128gpu": (4096, 737, 1551, False),
    "nemo2504_gb200_mixtral_8x7b_64gpu": (4096, 19275, 1598, False),
    "nemo2504_gb200_mixtral_8x22b_256gpu": (65536, 2731, None, True),  # the TFLOP/s cell: cut off in the copy read
}
def flops_per_token(model: str, seq: int, causal: bool) -> float:
    L, h, f, heads, kv, d, V, gated, k = SHAPES[model]
    q = heads * d
    attention = (1 + kv / heads + seq / ((2 if causal else 1) * h)) * (q / h)
    mlp = f / h * k * (1.5 if gated else 1.0)
    return 12 * L * h * h * (attention + mlp + V / (2 * L * h))


def load():
    return load_yaml((ROOT / "benchmarks" / "data" / "nemo_performance.yaml").read_text())


def model_key(row_id: str) -> str:
    return row_id.split("_", 2)[2].rsplit("_", 1)[0]


def test_the_transcription_matches_the_typed_figures():
    rows = {r["id"]: r for r in load()}
    assert set(rows) == set(TYPED)
    for rid, (seq, tokens, tflops, *_) in TYPED.items():
        r = rows[rid]
        assert r["model"]["seq_len"] == seq
        assert r["outcomes"]["reported"] == {"tokens_per_s_per_gpu": tokens,
                                             **({"nemo_model_tflops_per_gpu": tflops} if tflops else {})}
        lay = r["layout"]
        assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == r["hardware"]["num_gpus"]
        assert lay["global_batch"] == lay["micro_batch"] * lay["dp"] * lay["grad_accum"]
        layers, hidden, ffn, heads, kv, head_dim, vocab, *_ = SHAPES[model_key(rid)]
        m = r["model"]
        assert (m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["head_dim"], m["vocab"]) == (
            layers, hidden, ffn, heads, kv, head_dim, vocab)


@pytest.mark.parametrize("rid", sorted(r for r, typed in TYPED.items() if typed[2]))
def test_tokens_per_second_agree_with_nemos_tflops_through_its_flop_count(rid):
    """Each row's two published figures agree through Megatron-Core's FLOP count (within 1.5 %:
    both are rounded, and the 405B row's is 1.1 % apart). The 64K-token Mixtral 8x22B row agrees
    only with attention counted causally (non-causal would be 36 % higher): NeMo counted it so."""
    seq, tokens, tflops, causal = TYPED[rid]
    computed = tokens * flops_per_token(model_key(rid), seq, causal) / 1e12
    assert computed == pytest.approx(tflops, rel=0.015)
    if causal:
        assert tokens * flops_per_token(model_key(rid), seq, False) / 1e12 > 1.3 * tflops


def _nemo_check():
    return benchmark_script("nemo_check")


def test_every_row_is_evaluated_and_the_doc_section_is_current():
    """Every row compiles and is predicted (none left out), and docs/time-model.md holds the section
    the script writes now (`fidelity.py --write` regenerates it)."""
    values = _nemo_check().section()
    assert values["NEMO_N"] == str(len(TYPED)) and values["NEMO_LEFT_OUT"] == "0"
    doc = (ROOT / "docs" / "time-model.md").read_text()
    for key in ("NEMO_TABLE", "NEMO_SUMMARY", "NEMO_TERMS"):
        assert values[key] in doc, f"stale {key}: run `.venv/bin/python benchmarks/fidelity.py --write`"


def test_the_recipes_stated_facts_reach_the_spec():
    """NeMo 2.2/2.3's performance recipes (the 25.02 and 25.04 rows) reduce gradients in bf16 and,
    for GPT3-175B, Llama 3 70B, Llama 3.1 405B and Nemotron-4 340B at tp > 1, overlap tp
    communication with the GEMMs; the reader turns each into the spec's target options. 24.07's
    rows state neither and keep the defaults (fp32 reduction, Megatron's backward overlap)."""
    results, _ = _nemo_check().check()
    by_id = {x.row.id: x.row for x in results}
    later = [r for r in by_id if not r.startswith("nemo2407")]
    assert len(later) == 17
    for rid in later:
        assert "grad-reduce bf16" in by_id[rid].spec, rid
    overlapped = [r for r in later if any(m in r for m in ("gpt3_175b", "llama3_70b", "llama31_405b", "nemotron4_340b"))
                  and by_id[r].plan.layout.degree("tp") > 1]
    assert len(overlapped) == 8
    for rid in overlapped:
        assert any(a.startswith("tp overlap: all") for a in by_id[rid].assumptions), rid
    for rid in (r for r in by_id if r.startswith("nemo2407")):
        assert "grad-reduce" not in by_id[rid].spec and not any(a.startswith("tp overlap: all")
                                                               for a in by_id[rid].assumptions), rid


def test_no_prediction_beats_the_peak_or_its_links():
    """Each predicted step is at least its busiest rank's link floor, and the predicted tokens/s
    times the hand-typed FLOP count (causal where NeMo counts so) stays under the GPU's dense FP8
    peak (H100 1,979, B200 4,500, GB200 5,000 TFLOP/s)."""
    results, _ = _nemo_check().check()
    peaks = {"h100": 1979, "b200": 4500, "gb200": 5000}
    assert len(results) == len(TYPED)
    for x in results:
        b = x.breakdown
        assert b.step >= max(b.bounds.intra, b.bounds.nic), x.row.id
        seq, tokens, _, causal = TYPED[x.row.id]
        predicted_tokens = tokens * (1 + x.error)
        assert predicted_tokens * flops_per_token(model_key(x.row.id), seq, causal) / 1e12 < peaks[x.row.id.split("_")[1]]
