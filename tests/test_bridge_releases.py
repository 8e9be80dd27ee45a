"""Megatron-Bridge's tables release by release and NeMo 25.07's (benchmarks/data/
megatron_bridge_releases.yaml, nemo_performance_25_07.yaml), never fitted, and the cross-release
subsection benchmarks/release_check.py writes.

The transcriptions are checked against figures typed here from the sources (Megatron-Bridge
docs/performance-summary-archive.md at 067f987df, a different file and commit from the ones the data
file cites; the NeMo Framework user guide's 25.07 Performance Summary), and each row's tokens/s
against the table's own model TFLOP/s through a FLOP count typed here from Megatron-Core's
`num_floating_point_operations` (Bridge counts attention causally; NeMo 25.07 as the whole square),
not through benchmarks/published.py."""

from __future__ import annotations

import importlib
import sys

import pytest

from .conftest import ROOT, load_yaml

DATA = ROOT / "benchmarks" / "data"

# model: (layers, hidden, ffn, heads, kv heads, head dim, vocab); SwiGLU MLPs
SHAPES = {
    "llama3_8b": (32, 4096, 14336, 32, 8, 128, 128256),
    "llama3_70b": (80, 8192, 28672, 64, 8, 128, 128256),
    "llama31_405b": (126, 16384, 53248, 128, 8, 128, 128256),
}

# id: (GPUs, tp, pp, cp, vp, FSDP, micro-batch, batch, tokens/s/GPU, model TFLOP/s/GPU), typed from the archive
BRIDGE = {
    "bridge2509_gb200_llama3_8b_fp8cs": (8, 1, 1, 1, None, False, 2, 128, 31357, 1614),
    "bridge2509_gb200_llama3_8b_fp8mx": (8, 1, 1, 1, None, False, 2, 128, 29925, 1540),
    "bridge2509_gb200_llama3_70b_fp8cs": (64, 1, 1, 1, 1, True, 2, 128, 3986, 1791),
    "bridge2509_gb200_llama31_405b_fp8cs": (128, 2, 1, 1, 1, True, 1, 64, 729, 1840),
    "bridge2509_gb200_llama31_405b_fp8mx": (128, 4, 8, 2, 8, False, 1, 64, 578, 1458),
    "bridge2509_b200_llama3_8b_fp8cs": (8, 1, 1, 1, None, False, 2, 128, 29994, 1544),
    "bridge2509_b200_llama3_8b_fp8mx": (8, 1, 1, 1, None, False, 2, 128, 29388, 1513),
    "bridge2509_b200_llama31_405b_fp8cs": (128, 4, 8, 2, 8, False, 1, 64, 664, 1676),
    "bridge2509_b200_llama31_405b_fp8mx": (128, 4, 8, 2, 8, False, 1, 64, 622, 1569),
    "bridge2509_h100_llama3_8b_fp8cs": (8, 1, 1, 1, None, True, 1, 128, 14079, 725),
    "bridge2509_h100_llama3_70b_fp8cs": (64, 4, 8, 1, 5, False, 1, 128, 1619, 727),
    "bridge2509_h100_llama31_405b_fp8cs": (1024, 8, 8, 2, 8, False, 1, 512, 302, 763),
    "bridge2602_gb200_llama3_70b_fp8cs": (64, 1, 1, 1, None, True, 2, 256, 4040, 1815),
    "bridge2602_gb200_llama3_70b_fp8mx": (64, 2, 4, 1, 5, False, 1, 256, 3613, 1623),
    "bridge2602_gb200_llama31_405b_fp8cs": (256, 4, 16, 1, 4, False, 1, 1536, 793, 2004),
    "bridge2602_gb200_llama31_405b_fp8mx": (256, 4, 16, 1, 8, False, 1, 1536, 786, 1983),
    "bridge2602_h100_llama3_70b_fp8cs": (64, 4, 8, 1, 5, False, 1, 256, 1621, 728),
    "bridge2602_h100_llama31_405b_fp8cs": (1024, 8, 8, 2, 8, False, 1, 1536, 311, 784),
    "bridge260201_gb200_llama3_70b_fp8cs": (64, 1, 1, 1, None, True, 2, 256, 4357, 1956),
    "bridge260201_gb200_llama3_70b_fp8mx": (64, 2, 4, 1, 5, False, 1, 256, 3837, 1724),
    "bridge260201_gb200_llama31_405b_fp8cs": (256, 4, 16, 1, 4, False, 1, 1536, 818, 2063),
    "bridge260201_gb200_llama31_405b_fp8mx": (256, 4, 16, 1, 8, False, 1, 1536, 775, 1957),
    "bridge260201_h100_llama3_70b_fp8cs": (64, 4, 8, 1, 5, False, 1, 256, 1639, 736),
    "bridge2604_gb200_llama3_70b_fp8cs": (64, 1, 1, 1, None, True, 2, 256, 4143, 1861),
    "bridge2604_gb200_llama3_70b_fp8mx": (64, 2, 4, 1, 5, False, 1, 256, 3828, 1721),
    "bridge2604_gb200_llama31_405b_fp8cs": (256, 4, 16, 1, 4, False, 1, 1536, 842, 2126),
    "bridge2604_gb200_llama31_405b_fp8mx": (256, 4, 16, 1, 8, False, 1, 1536, 793, 2002),
    "bridge2604_h100_llama3_70b_fp8cs": (64, 4, 8, 1, 5, False, 1, 256, 1633, 734),
    "bridge260401_gb200_llama3_70b_fp8cs": (64, 1, 1, 1, None, True, 2, 256, 4224, 1892),
    "bridge260401_gb200_llama3_70b_fp8mx": (64, 2, 4, 1, 5, False, 1, 256, 3712, 1664),
    "bridge260401_gb200_llama31_405b_fp8cs": (256, 4, 16, 1, 4, False, 1, 1536, 864, 2144),
    "bridge260401_gb200_llama31_405b_fp8mx": (256, 4, 16, 1, 8, False, 1, 1536, 800, 1994),
    "bridge260401_h100_llama3_70b_fp8cs": (64, 4, 8, 1, 5, False, 1, 256, 1664, 731),
    "bridge260401_h100_llama31_405b_fp8cs": (1024, 8, 8, 2, 8, False, 1, 1536, 328, 827),
    "bridge2606_gb200_llama31_405b_fp8cs": (256, 4, 16, 1, 4, False, 1, 1536, 843, 2129),
    "bridge2606_gb200_llama31_405b_fp8mx": (256, 4, 16, 1, 8, False, 1, 1536, 783, 1976),
    "bridge2606_h100_llama31_405b_fp8cs": (1024, 8, 8, 2, 8, False, 1, 1536, 326, 822),
}
NEMO_2507 = {  # the user guide's 25.07 page, DGX-GB200, figures outside parentheses
    "nemo2507_gb200_llama3_8b_8gpu": (8, 1, 1, 1, None, False, 2, 128, 31737, 1838),
    "nemo2507_gb200_llama3_70b_64gpu": (64, 1, 1, 1, None, True, 1, 128, 4066, 1957),
    "nemo2507_gb200_llama31_405b_128gpu": (128, 2, 1, 1, None, True, 1, 64, 706, 1854),
}
COARSE = ("bridge260401_", "bridge260601_", "bridge2608_")
"""26.04.01's tokens/s are coarse (multiples of 8-128 in both commits that published it): they
agree with its TFLOP/s within 2.5 %, every other release's within 0.2 %. 26.06.01's and 26.08's too:
every tokens/s of their tables is a multiple of 16 (26.06.01: 18,304 of 128, 40,960 of 8,192; 26.08:
28,672 of 4,096), and their four (MoE) rows each agree with their TFLOP/s within 0.6 % (Qwen3-30B-A3B:
26.06.01 40,960 tokens/s for 937 TFLOP/s, 0.57 %; 26.08 39,936 for 923, 0.46 %)."""

EMPTY_ENDS = {f"bridge{r}_gb200_llama31_405b_fp8mx" for r in ("2602", "260201", "2604", "260401", "2606")}
"""pp 16 x vp 8 = 128 virtual stages for 126 layers: read as Megatron-Core's accounting of the
embedding and the loss as a layer each (`split [0, 1, ..., 1, 0]`), the only way they ran."""


def flops_per_token(model: str, seq: int, causal: bool) -> float:
    L, h, f, heads, kv, d, V = SHAPES[model]
    q = heads * d
    attention = (1 + kv / heads + seq / ((2 if causal else 1) * h)) * (q / h)
    return 12 * L * h * h * (attention + f / h * 1.5 + V / (2 * L * h))


def model_key(row_id: str) -> str:
    return row_id.split("_", 2)[2].rsplit("_", 1)[0]


def load(name: str) -> dict:
    return {r["id"]: r for r in load_yaml((DATA / name).read_text())}


@pytest.mark.parametrize("name,typed,key", [("megatron_bridge_releases.yaml", BRIDGE, "bridge_model_tflops_per_gpu"),
                                            ("nemo_performance_25_07.yaml", NEMO_2507, "nemo_model_tflops_per_gpu")])
def test_the_transcription_matches_the_typed_figures(name, typed, key):
    rows = load(name)
    assert set(rows) == set(typed)
    for rid, (gpus, tp, pp, cp, vp, fsdp, mbs, gbs, tokens, tflops) in typed.items():
        r, lay = rows[rid], rows[rid]["layout"]
        assert r["hardware"]["num_gpus"] == gpus and r["model"]["seq_len"] == 8192, rid
        assert (lay["tp"], lay["pp"], lay["cp"], lay["micro_batch"], lay["global_batch"]) == (tp, pp, cp, mbs, gbs), rid
        assert (lay["vpp"] or None) == vp and (lay["zero_or_fsdp"] == "FSDP") == fsdp, rid
        assert lay["dp"] * tp * pp * cp == gpus and lay["dp"] * mbs * lay["grad_accum"] == gbs, rid
        assert r["outcomes"]["reported"] == {"tokens_per_s_per_gpu": tokens, key: tflops}, rid
        assert lay["precision"] == ("FP8-MX" if rid.endswith("fp8mx") else "FP8-CS"), rid
        m = r["model"]
        assert (m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["head_dim"], m["vocab"]) == (
            SHAPES[model_key(rid)]), rid
        assert r["release"] == (rid[6:8] + "." + rid[8:10] + ("." + rid[10:12] if rid[10].isdigit() else "")
                                if rid.startswith("bridge") else "25.07"), rid


@pytest.mark.parametrize("rid", sorted(BRIDGE) + sorted(NEMO_2507))
def test_tokens_per_second_agree_with_the_tables_tflops_through_the_flop_count(rid):
    """Bridge counts attention causally, NeMo 25.07 as the whole square: each row's two figures
    agree through that count within 0.2 % (26.04.01's coarse tokens/s: 2.5 %), and the other count
    misses by more than 3.5 % (405B, the least attention-heavy, by 4 %)."""
    causal = rid.startswith("bridge")
    *_, tokens, tflops = (BRIDGE if causal else NEMO_2507)[rid]
    computed = tokens * flops_per_token(model_key(rid), 8192, causal) / 1e12
    assert computed == pytest.approx(tflops, rel=0.025 if rid.startswith(COARSE) else 0.002)
    other = tokens * flops_per_token(model_key(rid), 8192, not causal) / 1e12
    assert abs(other / tflops - 1) > 0.035


@pytest.fixture(scope="module")
def release_check():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("release_check")


@pytest.fixture(scope="module")
def points(release_check):
    return release_check.points()


@pytest.fixture(scope="module")
def host(release_check, points):
    """The host what-if, computed once for the file (the doc test and the MoE series test share it)."""
    return release_check.host_errors(points)


def test_every_row_is_evaluated(points):
    ids = {p.result.row.id for p in points}
    assert set(NEMO_2507) <= ids
    assert ids & set(BRIDGE) == set(BRIDGE)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    _, skipped = fidelity.load_rows(DATA / "megatron_bridge_releases.yaml")
    assert not skipped


def test_126_layers_over_128_chunks_are_read_with_empty_ends(points):
    """The five GB200 405B MXFP8 rows (pp 16 x vp 8): the first chunk the embedding alone, the
    last the loss alone, every other one layer; the reading is stated among the assumptions."""
    rows = {p.result.row.id: p.result.row for p in points if p.result.row.id in EMPTY_ENDS}
    assert set(rows) == EMPTY_ENDS
    for row in rows.values():
        assert row.plan.layout.pp.split == (0,) + (1,) * 126 + (0,), row.id
        assert any("account_for_embedding/loss_in_pipeline_split" in a for a in row.assumptions), row.id


def test_the_405b_gb200_recipes_without_recomputation_are_read_so(points):
    """Megatron-Bridge's GB200 Llama 3.1 405B V2 presets (FP8_CS_V2: tp 4, pp 16, vp 4; FP8_MX_V2:
    vp 8) set no recompute_num_layers, no offloading and no Megatron-FSDP, and the model recipe's
    recompute_granularity is None, at every release's commit from 26.02 on: the rows state it in
    their `recipe`, and the reader reads no recomputation from it, not the least that parc's memory
    model fits (which, 4 GiB over on the FP8-CS rows, would charge a recomputed layer)."""
    wanted = {f"bridge{r}_gb200_llama31_405b_fp8{x}" for r in ("2602", "260201", "2604", "260401", "2606")
              for x in ("cs", "mx")}
    rows = {p.result.row.id: p.result.row for p in points if p.result.row.id in wanted}
    assert set(rows) == wanted
    for row in rows.values():
        assert row.plan.training.recompute == "none", row.id
        assert not any("least that fits" in a for a in row.assumptions), row.id


def test_the_prediction_does_not_read_the_release(points, release_check):
    """One configuration gets one prediction in every Bridge release (no term reads the release
    but the software fact its Megatron-Core ships: whether the interleaved schedule waits for its
    forward sends, `published.pp_overlap_of`): within each series the section compares, the rows
    read into the same spec and the same pipeline-send overlap (a release whose recipe states a
    fact the table does not, such as no recomputation, reads into another) have one predicted
    tokens/s."""

    def configuration(p) -> str:
        spec = "\n".join(line for line in p.result.row.spec.splitlines() if not line.startswith(("#", "job ")))
        return spec + "\npp sends overlapped: " + p.result.row.software.pp_overlap

    groups = []
    for series in release_check.series(points):
        bridge = [p for p in series if p.framework == "Megatron-Bridge"]
        for key in {configuration(p) for p in bridge}:
            groups.append([p for p in bridge if configuration(p) == key])
    groups = [g for g in groups if len(g) > 1]
    assert len(groups) >= 6
    for g in groups:
        assert {round(p.predicted_tokens, 6) for p in g} == {round(g[0].predicted_tokens, 6)}, g[0].result.row.id


def test_the_b200_series_the_doc_reads(points, release_check):
    """The figures the reading rests on, against the typed ones: NeMo 25.02's Llama 3 8B on 8 B200
    (26,006 tokens/s, nemo_performance.yaml) -> Bridge 25.09 / 25.11 (29,994 / 30,624) is +17.8 %
    on the same layout, and the error falls by more than 15 points (+4.9 % -> -13.0 % with
    `blackwell_sustained` as last refitted, on the GB200 405B FP8-CS rows read without recomputation
    as their recipe states): the release, which no term reads, is most of the gap. On GB200, 25.04's
    70B FSDP at micro-batch 1 (4,035) and 25.07's (4,066) are within 1 % of each other and both
    predicted within 5 % (+1.4 %, -0.9 %)."""
    groups = release_check.series(points)
    b8 = release_check.find(groups, "Llama 3 8B", "B200", 8, 2)
    assert [(p.release, p.tokens) for p in b8] == [("25.02", 26006), ("25.09", 29994), ("25.11", 30624)]
    assert b8[0].result.error > b8[-1].result.error + 0.15 and abs(b8[-1].result.error) < 0.14
    g70 = release_check.find(groups, "Llama 3 70B", "GB200", 64, 1, fsdp=True)
    assert [(p.release, p.tokens) for p in g70] == [("25.04", 4035), ("25.07", 4066)]
    assert all(abs(p.result.error) < 0.05 for p in g70)
    assert abs(g70[0].result.error - g70[1].result.error) < 0.03


def test_the_dense_recipes_facts_are_read_in_the_main_reading(points):
    """As read, each Bridge dense row's spec reduces gradients in bf16 and, at tp > 1, overlaps tp
    communication with the GEMMs (its `recipe` states both); read from the table alone it does
    neither (fp32 reduction, Megatron's backward-only overlap)."""
    bridge = [p for p in points if p.framework == "Megatron-Bridge" and not p.result.row.plan.model.experts]
    assert len(bridge) >= 35
    for p in bridge:
        assert p.table_only is not None and "grad-reduce bf16" in p.result.row.spec, p.result.row.id
        assert "grad-reduce bf16" not in p.table_only.row.spec
        tp = p.result.row.plan.layout.degree("tp")
        assert (p.result.row.software.tp_overlap == "all") == (tp > 1), p.result.row.id
        assert p.table_only.row.software.tp_overlap == "backward", p.result.row.id


def test_no_prediction_beats_the_peak_or_its_links(points):
    """Each predicted step is at least its busiest rank's link floor, and predicted tokens/s times the
    hand-typed causal FLOP count stays under the GPU's dense FP8 peak."""
    peaks = {"H100": 1979, "B200": 4500, "GB200": 5000}
    checked = 0
    for p in points:
        if p.result.row.id not in BRIDGE and p.result.row.id not in NEMO_2507:
            continue
        b = p.result.breakdown
        assert b.step >= max(b.bounds.intra, b.bounds.nic), p.result.row.id
        flops = flops_per_token(model_key(p.result.row.id), 8192, True)
        assert p.predicted_tokens * flops / 1e12 < peaks[p.system], p.result.row.id
        checked += 1
    assert checked == len(BRIDGE) + len(NEMO_2507)


def test_the_doc_section_is_current(release_check, points, host):
    """docs/time-model.md holds the section the script writes now (`fidelity.py --write`)."""
    values = release_check.section(pts=points, host=host)
    doc = (ROOT / "docs" / "time-model.md").read_text()
    for key in ("RELEASE_BY_GPU", "RELEASE_SERIES", "RELEASE_ENDS", "RELEASE_READING", "RELEASE_OFFLOAD",
                "RELEASE_CONCLUSION", "RELEASE_MOE_BY_GPU", "RELEASE_MOE_SERIES", "RELEASE_MOE_HOST",
                "RELEASE_MOE_READING", "RELEASE_MOE_GAP"):
        assert values[key] in doc, f"stale {key}: run `.venv/bin/python benchmarks/fidelity.py --write`"


def test_the_offloading_rows_are_read_without_recomputation(points, release_check):
    """Bridge's GB200 FSDP FP8-CS recipes offload activations to the Grace CPU and state no
    recomputation: the rows whose recipe says so are exactly the 70B (25.09 to 26.04.01) and 405B
    (25.09) FSDP rows; as read each charges no recomputation and offloads the recipe's layers
    (`offload-activations N`, its copies over the host link charged), and from the table alone the
    reader's least recomputation that fits is charged and the row is predicted slower."""
    rows = [p for p in points if release_check.offloaded(p)]
    assert {p.result.row.id for p in rows} == {
        "bridge2509_gb200_llama3_70b_fp8cs", "bridge2511_gb200_llama3_70b", "bridge2602_gb200_llama3_70b_fp8cs",
        "bridge260201_gb200_llama3_70b_fp8cs", "bridge2604_gb200_llama3_70b_fp8cs",
        "bridge260401_gb200_llama3_70b_fp8cs", "bridge2509_gb200_llama31_405b_fp8cs"}
    for p in rows:
        assert p.result.breakdown.recompute == 0 and p.table_only.breakdown.recompute > 0, p.result.row.id
        n = release_check.offloaded(p)
        assert f"offload-activations {n}\n" in p.result.row.spec and p.result.row.plan.training.offload_layers == n
        assert p.result.breakdown.host_bytes > 0 and p.result.breakdown.offload > 0, p.result.row.id
        assert p.table_only.breakdown.host_bytes == 0, p.result.row.id
        assert p.result.error > p.table_only.error + 0.1, p.result.row.id


RAN_WITHOUT_RECOMPUTATION = ("bridge2602_gb200_llama31_405b_fp8mx", "bridge260201_gb200_llama31_405b_fp8mx",
                             "bridge2604_gb200_llama31_405b_fp8mx", "bridge260401_gb200_llama31_405b_fp8mx",
                             "bridge2606_gb200_llama31_405b_fp8mx")
"""Rows whose run held no recomputation, by the release's own code: the GB200 MXFP8 V2 preset
(`llama31_workload_base_configs.py` at v0.3.0, v0.3.1, v0.4.0, v0.4.2 and v0.5.0: tp 4, pp 16, vp 8,
cp 1, batch 1,536, and no recompute_num_layers or recompute_modules) over the recipe's
`cfg.model.recompute_granularity = None` (`recipes/llama/llama3.py`, `llama31_405b_pretrain_config`;
c0b9a00031 for 26.02), with `grad_reduce_in_fp32 = False`: they ran, so they fit in 186 GB."""


def test_the_layouts_that_ran_without_recomputation_fit(points):
    """A layout a published run held without recomputation fits in parc's memory model: the reader
    then charges none. Under Megatron's bf16-era accounting (fp32 main gradients, every linear's
    input saved in bf16) the worst stage needed 190 GiB of the 164 usable and the rows were read
    with every layer recomputed, 20-22 % slow; Megatron-Core's bf16 gradient buffer and Transformer
    Engine's fp8 saved inputs are what the run's code does (`memory/states.py`,
    `memory/activations._megatron_layer`)."""
    ran = [p for p in points if p.result.row.id in RAN_WITHOUT_RECOMPUTATION]
    assert len(ran) == len(RAN_WITHOUT_RECOMPUTATION)
    for p in ran:
        assert p.result.row.plan.training.recompute in (None, "none"), p.result.row.id
        assert p.result.breakdown.recompute == 0, p.result.row.id
        assert "recompute none" in p.result.row.spec, p.result.row.id


# ---------------------------------------------------------------------------------------------
# The mixture-of-experts rows (megatron_bridge_releases_moe.yaml), typed from the archive
# (docs/performance-summary-archive.md at 067f987df, 26.06.01's included; 26.08, the current release
# there, from that commit's docs/performance-summary.md), not from the commits the data file cites.

# model: (layers, hidden, heads, kv heads, head dim, vocab, experts, top-k, expert FFN)
MOE_SHAPES = {
    "qwen3_30b_a3b": (48, 2048, 32, 4, 128, 151936, 128, 8, 768),
    "qwen3_235b_a22b": (94, 4096, 64, 4, 128, 151936, 128, 8, 1536),
    "gpt_oss_120b": (36, 2880, 64, 8, 64, 201088, 128, 4, 2880),
    "deepseek_v3": (61, 7168, 128, 128, 128, 129280, 256, 8, 2048),
}

# id: (GPUs, tp, pp, vp, ep, micro-batch, batch, tokens/s/GPU, model TFLOP/s/GPU); sequence 4096
MOE = {
    "bridge2509_gb200_deepseek_v3_fp8cs": (256, 1, 4, 4, 64, 1, 2048, 3454, 899),
    "bridge2509_gb200_deepseek_v3_fp8mx": (256, 1, 8, 2, 64, 1, 2048, 2835, 738),
    "bridge2509_gb200_qwen3_30b_a3b_fp8cs": (8, 1, 1, 1, 8, 4, 512, 22775, 524),
    "bridge2509_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, 1, 8, 4, 512, 23723, 546),
    "bridge2509_gb200_qwen3_235b_a22b_fp8cs": (64, 2, 1, 1, 64, 1, 1024, 4452, 659),
    "bridge2509_gb200_qwen3_235b_a22b_fp8mx": (64, 2, 1, 1, 64, 1, 1024, 4416, 654),
    "bridge2509_b200_deepseek_v3_fp8cs": (256, 1, 16, 1, 8, 1, 2048, 2265, 589),
    "bridge2509_b200_deepseek_v3_fp8mx": (256, 1, 16, 1, 8, 1, 2048, 2159, 562),
    "bridge2509_b200_qwen3_30b_a3b_fp8cs": (8, 1, 1, 1, 8, 1, 512, 18066, 416),
    "bridge2509_b200_qwen3_235b_a22b_fp8cs": (64, 1, 8, 2, 8, 1, 1024, 4104, 607),
    "bridge2509_b200_qwen3_235b_a22b_fp8mx": (64, 1, 8, 2, 8, 1, 1024, 4275, 633),
    "bridge2509_h100_deepseek_v3_fp8cs": (1024, 2, 8, 4, 64, 1, 8192, 1297, 338),
    "bridge2509_h100_qwen3_30b_a3b_fp8cs": (16, 1, 2, 24, 8, 2, 512, 10494, 241),
    "bridge2509_h100_qwen3_235b_a22b_fp8cs": (256, 2, 8, 4, 32, 1, 2048, 1204, 178),
    "bridge2602_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 3955, 1028),
    "bridge2602_gb200_gpt_oss_120b_bf16": (64, 1, 1, None, 64, 4, 1280, 15784, 428),
    "bridge2602_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26084, 600),
    "bridge2602_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, None, 32, 1, 8192, 5448, 806),
    "bridge2602_b200_deepseek_v3_fp8mx": (256, 1, 16, None, 8, 1, 4096, 2689, 699),
    "bridge2602_b200_gpt_oss_120b_bf16": (64, 1, 1, None, 64, 4, 1280, 8047, 219),
    "bridge2602_b200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 1, 512, 9691, 223),
    "bridge2602_b200_qwen3_235b_a22b_fp8mx": (256, 1, 8, None, 8, 1, 8192, 3805, 563),
    "bridge2602_h100_gpt_oss_120b_bf16": (64, 1, 4, None, 8, 1, 1280, 5993, 163),
    "bridge2602_h100_qwen3_30b_a3b_fp8cs": (16, 1, 2, 12, 8, 1, 1024, 5113, 118),
    "bridge2602_h100_qwen3_235b_a22b_fp8cs": (256, 2, 8, 4, 32, 1, 8192, 1633, 242),
    "bridge260201_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4021, 1046),
    "bridge260201_b200_deepseek_v3_fp8mx": (256, 1, 16, None, 8, 1, 4096, 2790, 725),
    "bridge260201_gb200_gpt_oss_120b_bf16": (64, 1, 1, None, 64, 4, 1280, 15754, 428),
    "bridge260201_b200_gpt_oss_120b_bf16": (64, 1, 1, None, 8, 4, 1280, 13722, 373),
    "bridge260201_h100_gpt_oss_120b_bf16": (64, 1, 4, None, 8, 1, 1280, 5984, 163),
    "bridge260201_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26373, 607),
    "bridge260201_b200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26695, 614),
    "bridge260201_h100_qwen3_30b_a3b_fp8cs": (16, 1, 2, 12, 8, 1, 1024, 9058, 208),
    "bridge260201_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, None, 32, 1, 8192, 5530, 819),
    "bridge260201_h100_qwen3_235b_a22b_fp8cs": (256, 2, 8, 4, 32, 1, 8192, 1611, 238),
    "bridge2604_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4193, 1090),
    "bridge2604_b200_deepseek_v3_fp8mx": (256, 1, 16, None, 8, 1, 4096, 2815, 732),
    "bridge2604_gb200_gpt_oss_120b_bf16": (64, 1, 1, None, 64, 4, 1280, 15938, 433),
    "bridge2604_b200_gpt_oss_120b_bf16": (64, 1, 1, None, 8, 4, 1280, 13045, 355),
    "bridge2604_h100_gpt_oss_120b_bf16": (64, 1, 4, None, 8, 1, 1280, 5810, 158),
    "bridge2604_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26032, 599),
    "bridge2604_b200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26859, 618),
    "bridge2604_h100_qwen3_30b_a3b_fp8cs": (16, 1, 1, None, 16, 1, 1024, 8901, 205),
    "bridge2604_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, 3, 32, 1, 8192, 5672, 840),
    "bridge2604_h100_qwen3_235b_a22b_fp8cs": (256, 2, 8, 4, 32, 1, 8192, 1686, 250),
    "bridge260401_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4256, 1106),
    "bridge260401_b200_deepseek_v3_fp8mx": (256, 1, 8, 2, 32, 1, 4096, 3328, 864),
    "bridge260401_gb200_gpt_oss_120b_bf16": (64, 1, 1, None, 64, 4, 1280, 16640, 452),
    "bridge260401_b200_gpt_oss_120b_bf16": (64, 1, 1, None, 8, 4, 1280, 13568, 369),
    "bridge260401_h100_gpt_oss_120b_bf16": (64, 1, 4, None, 8, 1, 1280, 5824, 158),
    "bridge260401_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 26112, 599),
    "bridge260401_b200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 27136, 619),
    "bridge260401_h100_qwen3_30b_a3b_fp8cs": (16, 1, 1, None, 16, 1, 1024, 8960, 206),
    "bridge260401_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, 3, 32, 1, 8192, 5680, 840),
    "bridge260401_b200_qwen3_235b_a22b_fp8mx": (256, 1, 8, None, 8, 1, 8192, 3776, 560),
    "bridge260401_h100_qwen3_235b_a22b_fp8cs": (256, 2, 8, 4, 32, 1, 8192, 1712, 253),
    "bridge2606_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4969, 1292),
    "bridge2606_gb200_gpt_oss_120b_fp8mx": (64, 1, 1, None, 64, 4, 1280, 28947, 943),
    "bridge2606_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 40706, 936),
    "bridge2606_h100_qwen3_30b_a3b_fp8cs": (16, 1, 1, None, 16, 1, 1024, 8826, 203),
    "bridge2606_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, 3, 32, 1, 8192, 7376, 1092),
    # 26.06.01: GB200 rows only (and GB300); gpt-oss's TFLOP/s cell carries [^gpt-oss-note], a known
    # regression (cudnn-frontend issue 256): its tokens/s are slow, its FLOP count is 26.06's (below)
    "bridge260601_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4928, 1280),
    "bridge260601_gb200_gpt_oss_120b_fp8mx": (64, 1, 1, None, 64, 4, 1280, 18304, 597),
    "bridge260601_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 40960, 937),
    "bridge260601_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, 3, 32, 1, 8192, 7360, 1089),
    "bridge2608_gb200_deepseek_v3_fp8mx": (256, 1, 4, 4, 64, 1, 4096, 4912, 1276),
    "bridge2608_gb200_gpt_oss_120b_fp8mx": (64, 1, 1, None, 64, 4, 1280, 28672, 934),
    "bridge2608_gb200_qwen3_30b_a3b_fp8mx": (8, 1, 1, None, 8, 4, 512, 39936, 923),
    "bridge2608_gb200_qwen3_235b_a22b_fp8mx": (256, 1, 8, 3, 32, 1, 8192, 7280, 1077),
}
MOE_LEFT_OUT = {"bridge2509_gb200_deepseek_v3_fp8mx"}
"""pp 8 of 256 GPUs at tp 1 leaves 32 data-parallel ranks, which ep 64 cannot fold over."""


def moe_key(row_id: str) -> str:
    return next(k for k in MOE_SHAPES if f"_{k}_" in row_id)


def moe_flops_per_token(model: str, seq: int, gated_experts: bool = True, window: int = 0,
                        experts: str = "active") -> float:
    """Megatron-Core's count (`num_floating_point_operations`), typed here: causal attention, the
    routed experts' FFN for the top-k experts a token visits ("active") or, as a foil, for every
    expert ("all"); `window`: a sliding window on every other layer (gpt-oss's first of each pair)."""
    L, h, heads, kv, d, V, E, k, f = MOE_SHAPES[model]
    q = heads * d
    width = (k if experts == "active" else E) * f * (1.5 if gated_experts else 1.0)
    total = 6 * h * V
    for layer in range(L):
        scores = min(window, seq) if window and layer % 2 == 0 else seq / 2
        total += 12 * h * h * ((1 + kv / heads) * q / h + scores / h * q / h + width / h)
    return total


def deepseek_v3_flops_per_token(seq: int, mtp: int = 1) -> float:
    """The same count for DeepSeek-V3 (Megatron-Core's MLA branch, typed here): q LoRA 1536, kv
    LoRA 512, 128 heads of 128 + 64 RoPE dims (values 128), 3 dense layers of FFN 18432, 58 MoE
    layers of 8 routed + 1 shared 2048-wide experts, and `mtp` multi-token-prediction layers (a
    MoE layer and a further output head each)."""
    L, h, heads, _, _, V, _, k, f = MOE_SHAPES["deepseek_v3"]
    q_lora, kv_lora, qk, rope, v, ffn, shared, dense = 1536, 512, 128, 64, 128, 18432, 2048, 3
    projections = q_lora * (h + heads * (qk + rope) + 1) + kv_lora * (h + heads * (qk + v) + 1) + h * rope + heads * v * h
    core = (heads * (qk + rope) + heads * v) / 2 * seq
    mlp = h * 3 * (ffn * dense + (k * f + shared) * (L - dense + mtp))
    return 6 * ((L + mtp) * (projections + core) + mlp + h * V * (1 + mtp))


def test_the_moe_transcription_matches_the_archive():
    rows = load("megatron_bridge_releases_moe.yaml")
    assert set(rows) == set(MOE)
    for rid, (gpus, tp, pp, vp, ep, mbs, gbs, tokens, tflops) in MOE.items():
        r, lay = rows[rid], rows[rid]["layout"]
        assert r["hardware"]["num_gpus"] == gpus and r["model"]["seq_len"] == 4096, rid
        assert (lay["tp"], lay["pp"], lay["cp"], lay["ep"], lay["micro_batch"], lay["global_batch"]) == (
            tp, pp, 1, ep, mbs, gbs), rid
        assert lay["vpp"] == vp and lay["zero_or_fsdp"] is None, rid
        assert lay["dp"] * tp * pp == gpus and lay["dp"] * mbs * lay["grad_accum"] == gbs, rid
        assert r["outcomes"]["reported"] == {"tokens_per_s_per_gpu": tokens, "bridge_model_tflops_per_gpu": tflops}, rid
        assert lay["precision"] == {"fp8cs": "FP8-CS", "fp8mx": "FP8-MX", "bf16": "BF16"}[rid.rsplit("_", 1)[1]], rid
        m = r["model"]
        assert (m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["head_dim"], m["vocab"], m["experts"],
                m["top_k"], m["moe_ffn"]) == MOE_SHAPES[moe_key(rid)], rid
        assert r["release"] == (rid[6:8] + "." + rid[8:10] + ("." + rid[10:12] if rid[10].isdigit() else "")), rid
        # every row says what its recipe states, read at the commit its table is cited from
        commit = r["source"]["title"].split("at commit ")[1].split()[0]
        assert commit in r["recipe"]["source"], rid


@pytest.mark.parametrize("rid", sorted(k for k in MOE if "deepseek" in k))
def test_deepseek_v3_tokens_per_second_agree_with_the_tables_tflops_with_its_mtp_layer(rid):
    """Bridge's DeepSeek-V3 TFLOP/s count its multi-token-prediction layer: through the typed MLA
    count with it each row agrees within 0.6 %, without it every row misses by more than 3.5 %
    (the rows state it, `mtp_layers: 1`, and parc charges it: tests/test_mtp.py)."""
    *_, tokens, tflops = MOE[rid]
    assert tokens * deepseek_v3_flops_per_token(4096) / 1e12 == pytest.approx(tflops, rel=0.006)
    assert tokens * deepseek_v3_flops_per_token(4096, mtp=0) / 1e12 < tflops * 0.965


@pytest.mark.parametrize("rid", sorted(k for k in MOE if "deepseek" not in k))
def test_moe_tokens_per_second_agree_with_the_tables_tflops_through_the_active_parameters(rid):
    """Each MoE row's tokens/s times a hand FLOP count of the parameters a token visits (top-k
    experts, causal attention) is its table's TFLOP/s within 0.35 % (26.04.01's, 26.06.01's and
    26.08's coarse tokens/s: 1 %); counting every expert misses by more than 3x. gpt-oss: 26.02-26.04.01
    count its experts as two matrices and every layer's attention whole; 26.06, 26.06.01 and 26.08
    count the gated (SwiGLU) experts and the 128-token window of every other layer (Bridge's FLOP
    count changed, not the run). 26.06.01's gpt-oss row, footnoted as a known performance regression
    (cudnn-frontend issue 256), counts as 26.06's: the footnote changes the run's speed, not its FLOPs.
    DeepSeek-V3: the next test."""
    *_, tokens, tflops = MOE[rid]
    model = moe_key(rid)
    kwargs = {}
    if model == "gpt_oss_120b":
        kwargs = {"window": 128} if rid.startswith(("bridge2606_", "bridge260601_", "bridge2608_")) \
            else {"gated_experts": False}
    computed = tokens * moe_flops_per_token(model, 4096, **kwargs) / 1e12
    assert computed == pytest.approx(tflops, rel=0.01 if rid.startswith(COARSE) else 0.0035)
    every = tokens * moe_flops_per_token(model, 4096, experts="all", **kwargs) / 1e12
    assert every > 3 * tflops
    if model == "gpt_oss_120b":  # the other release's convention misses
        other = {"gated_experts": False} if kwargs.get("window") else {"window": 128}
        assert abs(tokens * moe_flops_per_token(model, 4096, **other) / 1e12 / tflops - 1) > 0.05


def moe_points(points):
    return {p.result.row.id: p for p in points if p.result.row.id in MOE}


def test_every_moe_row_is_evaluated_but_the_layout_parc_refuses(points):
    assert set(moe_points(points)) == set(MOE) - MOE_LEFT_OUT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    _, skipped = fidelity.load_rows(DATA / "megatron_bridge_releases_moe.yaml")
    assert {s.id for s in skipped} == MOE_LEFT_OUT
    assert all("ep 64 does not divide the data-parallel ranks (32" in s.reason for s in skipped)


def test_the_recipes_stated_facts_are_read(points):
    """What each recipe states reaches the reading where parc has the physics: token drop padded to
    a capacity (25.09) states `capacity-factor 1.0` and no host sync, a full-iteration CUDA graph
    (26.06) no host sync, `moe_a2a_overlap` the ep overlap, DeepEP under the flex dispatcher
    DeepEP's fan-out, HybridEP its own, `grad_reduce_in_fp32 = False` bf16 reduction, `fp8_dot_product_attention`
    (26.06's `other`) the FP8 attention; the same row read from its table alone keeps every
    default."""
    rows = load("megatron_bridge_releases_moe.yaml")
    pts = moe_points(points)
    assert len(pts) == len(MOE) - len(MOE_LEFT_OUT)
    seen = set()
    for rid, p in pts.items():
        recipe, sw, spec = rows[rid]["recipe"], p.result.row.software, p.result.row.spec
        padded = bool(recipe.get("moe_pad_expert_input_to_capacity"))
        graph = recipe.get("cuda_graph_impl") == "full_iteration"
        assert ("capacity-factor 1.0" in spec) == padded, rid
        assert sw.moe_host_sync == (not (padded or graph)), rid
        assert sw.ep_overlap == bool(recipe.get("moe_a2a_overlap")), rid
        deepep = recipe.get("moe_token_dispatcher_type") == "flex" and recipe.get("moe_flex_dispatcher_backend") == "deepep"
        assert (sw.ep_dispatcher == "deepep") == deepep, rid
        hybridep = recipe.get("moe_token_dispatcher_type") == "flex" and recipe.get("moe_flex_dispatcher_backend") == "hybridep"
        assert (sw.ep_dispatcher == "hybridep") == hybridep, rid
        assert ("grad-reduce bf16" in spec) == (recipe.get("grad_reduce_in_fp32") is False), rid
        fp8_attention = "fp8_dot_product_attention" in (recipe.get("other") or ())
        assert sw.attention_fp8 == fp8_attention, rid
        bare = p.table_only
        assert bare is not None and bare.row.software.moe_host_sync and not bare.row.software.ep_overlap, rid
        assert not bare.row.software.attention_fp8 and bare.row.software.ep_dispatcher == "all-to-all", rid
        assert "capacity-factor" not in bare.row.spec and "grad-reduce bf16" not in bare.row.spec, rid
        seen |= {k for k, v in (("padded", padded), ("graph", graph), ("deepep", deepep),
                                ("overlap", sw.ep_overlap), ("fp8 attention", fp8_attention),
                                ("hybridep", hybridep)) if v}
    assert seen == {"padded", "graph", "deepep", "overlap", "fp8 attention", "hybridep"}


def test_read_recipe_leaves_rows_without_one_alone():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from published import read_recipe

    row = load("megatron_bridge_25_11.yaml")["bridge2511_b200_qwen3_30b_a3b"]
    assert read_recipe(row) is row


def test_the_moe_series_the_doc_reads(points, release_check, host):
    """B200's Qwen3-30B-A3B: micro-batch 1 (26.02, 9,691 tokens/s) is predicted about twice as fast
    (+100 %), micro-batch 4 (26.02.01, 26,695) within 10 % (-9.4 %; -6.3 % before the FP8
    products counted their bf16 output); H100's same printed layout from 26.02 (5,113) to
    26.02.01 (9,058) gets one prediction from the table alone; no tried host time per op brings both
    H100 rows within 20 %."""
    pts = moe_points(points)
    b1, b4 = pts["bridge2602_b200_qwen3_30b_a3b_fp8mx"], pts["bridge260201_b200_qwen3_30b_a3b_fp8mx"]
    assert (b1.tokens, b4.tokens) == (9691, 26695)
    assert b1.result.error > 0.9 and abs(b4.result.error) < 0.1
    h0, h1 = pts["bridge2602_h100_qwen3_30b_a3b_fp8cs"], pts["bridge260201_h100_qwen3_30b_a3b_fp8cs"]
    # the same printed layout: one prediction from the table alone; the recipes differ (release tags)
    assert h0.tokens * (1 + h0.table_error) == pytest.approx(h1.tokens * (1 + h1.table_error), rel=1e-9)
    assert h1.tokens / h0.tokens - 1 > 0.7
    tried = list(zip(host[h0.result.row.id], host[h1.result.row.id], strict=True))
    assert len(tried) == 1 + len(release_check.HOST_SCALES)
    assert not any(abs(a) < 0.2 and abs(b) < 0.2 for a, b in tried)
    # DeepSeek-V3 on 256 B200 in 26.04.01: the recipe's DeepEP and ep overlap decide the row
    ds = pts["bridge260401_b200_deepseek_v3_fp8mx"]
    assert ds.table_only.error < -0.4 and abs(ds.result.error) < 0.2
    assert ds.result.row.software.ep_dispatcher == "deepep" and ds.result.row.software.ep_overlap


# (row, reported tokens/s per GPU, GPUs, tokens one pipeline rank runs a step, layers it holds),
# typed from the tables' layouts: batch x sequence / the data-parallel degree, layers / pp
GAP_BY_HAND = [
    ("bridge2604_gb200_gpt_oss_120b_bf16", 15938, 64, 1280 * 4096 / 64, 36),
    ("bridge2602_h100_qwen3_235b_a22b_fp8cs", 1633, 256, 8192 * 4096 / 16, 94 / 8),  # tp 2, pp 8, dp 16
]


@pytest.mark.parametrize("rid,tokens,gpus,rank_tokens,layers", GAP_BY_HAND)
def test_the_token_layer_gap_is_the_reported_step_less_the_predicted(points, release_check, rid, tokens, gpus,
                                                                      rank_tokens, layers):
    """`release_check.token_layer_gap` against the published figure by hand: the reported step is
    the batch's tokens over the GPUs' reported tokens/s (1,280 x 4,096 / (64 x 15,938) = 5.14 s for
    gpt-oss on GB200), less the predicted step, over the token-layers one pipeline rank runs."""
    p = moe_points(points)[rid]
    batch = p.result.row.plan.training.global_batch * p.result.row.plan.training.seq_len
    reported_step = batch / (gpus * tokens)
    expected = (reported_step - p.result.breakdown.step) / (rank_tokens * layers)
    assert release_check.token_layer_gap(p) == pytest.approx(expected, rel=1e-6)


def test_the_eager_rows_the_doc_reads(points, release_check):
    """docs/time-model.md, "The same gap outside gpt-oss": the 26.02-26.04.01 rows of gpt-oss-120b
    on Blackwell and of Qwen3-235B-A22B on B200 and H100 whose recipe runs no CUDA graph lack
    0.15-1.0 us a token-layer (measured 0.198-0.68 us since the interleaved schedule's sends are
    overlapped, which lowered `blackwell_sustained`; 0.25-0.65 us before); gpt-oss-120b on H100, its eager passes
    charged ("gpt-oss's own eager passes"), and Qwen3-235B-A22B on GB200, with Transformer Engine's
    graphs of attention, router and preprocess, within 0.35 us of nothing (measured -0.31 to
    +0.10 us; -0.26 to +0.12 before the FP8 products counted their bf16 output, which made the
    GB200 FP8 rows' GEMMs slower)."""
    pts = moe_points(points)
    releases = ("2602", "260201", "2604", "260401")
    eager = [p for rid, p in pts.items() if rid.split("_")[0][6:] in releases
             and ("gpt_oss_120b_bf16" in rid or ("qwen3_235b" in rid and "gb200" not in rid))]
    graphed = [p for rid, p in pts.items() if rid.split("_")[0][6:] in releases
               and "gb200_qwen3_235b" in rid]
    assert len(eager) == 18 and len(graphed) == 4
    assert all(release_check.graph_kind(p.recipe) == "none" for p in eager)
    assert all(release_check.graph_kind(p.recipe) == "partial" for p in graphed)
    charged = [p for rid, p in pts.items() if rid.split("_")[0][6:] in releases and "h100_gpt_oss_120b_bf16" in rid]
    assert len(charged) == 4
    assert all(0.15e-6 < release_check.token_layer_gap(p) < 1.0e-6 for p in eager if p not in charged)
    assert all(abs(release_check.token_layer_gap(p)) < 0.35e-6 for p in graphed + charged)


def test_no_moe_prediction_beats_the_peak_or_its_links(points):
    """Each MoE step is at least its busiest rank's link floor, and predicted tokens/s times the
    hand-typed active-parameter FLOP count stays under the GPU's dense peak at the row's precision."""
    peaks = {("H100", "bf16"): 989, ("H100", "fp8"): 1979, ("B200", "bf16"): 2250, ("B200", "fp8"): 4500,
             ("GB200", "bf16"): 2500, ("GB200", "fp8"): 5000}
    checked = 0
    for rid, p in moe_points(points).items():
        b = p.result.breakdown
        assert b.step >= max(b.bounds.intra, b.bounds.nic), rid
        model = moe_key(rid)
        flops = deepseek_v3_flops_per_token(4096, mtp=0) if model == "deepseek_v3" else moe_flops_per_token(model, 4096)
        assert p.predicted_tokens * flops / 1e12 < peaks[(p.system, p.result.row.plan.training.precision)], rid
        checked += 1
    assert checked == len(MOE) - len(MOE_LEFT_OUT)


# ---------------------------------------------------------------------------------------------
# The recipe blocks against a second copy: each release's config read at its release tag of
# NVIDIA-NeMo/Megatron-Bridge (the branch r0.x the container was cut from), not at the docs commit
# the data files cite (main). Typed here by hand from scripts/performance/configs/*/ at the tags
# (the workload base configs' `replace` chains followed to the variant whose degrees and batch
# are the row's; from 26.08 the flat functions of src/megatron/bridge/perf_recipes/<model>/<gpu>/,
# named by GPU count, GPU and precision, and the helpers they call). Tags: 26.02 v0.3.0 (21b02e0cf),
# 26.02.01 v0.3.1 (9c9dd8489), 26.04 v0.4.0 (0fbfe7d3e), 26.04.01 v0.4.2 (c81012934), 26.06 v0.5.0
# (fcbb60311), 26.06.01 v0.5.1 (5cb3444c4, on r0.5.0; docs/versions1.json at f83545d98: "0.5.1 ·
# 26.06.01"), 26.08 v0.6.0 (51885cf13, on r0.6.0). Every MoE and dense row of those releases is
# checked; 25.09's and 25.11's rows have no tag checked here (no second copy).

RELEASE_TAGS = {"26.02": "v0.3.0", "26.02.01": "v0.3.1", "26.04": "v0.4.0", "26.04.01": "v0.4.2", "26.06": "v0.5.0",
                "26.06.01": "v0.5.1", "26.08": "v0.6.0"}

TE = "transformer_engine"
ROUTER = ("moe_router", "moe_preprocess")
ATTN = ("attn", "moe_router", "moe_preprocess")
LN_ACT = ("layernorm", "moe_act")
# row id: (dispatcher backend or "alltoall", moe_a2a_overlap, cuda_graph_impl, cuda_graph_scope,
#          recompute_modules, (pp, ep, micro-batch) of the tag's config or None where the table prints another)
TAG_RECIPES = {
    "bridge2602_gb200_deepseek_v3_fp8mx": ("hybridep", False, TE, ATTN, ("mla_up_proj",), (4, 64, 1)),
    "bridge2602_b200_deepseek_v3_fp8mx": ("hybridep", False, None, (), ("mla_up_proj",), (16, 8, 1)),
    "bridge260201_gb200_deepseek_v3_fp8mx": ("hybridep", False, TE, ATTN, ("mla_up_proj",), (4, 64, 1)),
    "bridge260201_b200_deepseek_v3_fp8mx": ("hybridep", False, None, (), ("mla_up_proj",), (16, 8, 1)),
    "bridge2604_gb200_deepseek_v3_fp8mx": ("hybridep", False, TE, ATTN, ("mlp",), (4, 64, 1)),
    "bridge2604_b200_deepseek_v3_fp8mx": ("hybridep", False, None, (), ("mla_up_proj",), (16, 8, 1)),
    "bridge260401_gb200_deepseek_v3_fp8mx": ("hybridep", False, TE, ATTN, ("mlp",), (4, 64, 1)),
    "bridge260401_b200_deepseek_v3_fp8mx": ("deepep", True, TE, ATTN, ("mla_up_proj", "mlp"), (8, 32, 1)),
    "bridge2606_gb200_deepseek_v3_fp8mx": ("hybridep", True, "full_iteration", (), ("mla_up_proj",), (4, 64, 1)),
    # v0.5.1 deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2 (= FP8_MX_V1 at
    # global batch 4096: hybridep, moe_a2a_overlap, full_iteration, scope [], recompute_modules
    # ["mla_up_proj"]), unchanged from v0.5.0
    "bridge260601_gb200_deepseek_v3_fp8mx": ("hybridep", True, "full_iteration", (), ("mla_up_proj",), (4, 64, 1)),
    # v0.6.0 perf_recipes/deepseek/gb200/deepseek_v3.py deepseek_v3_pretrain_256gpu_gb200_fp8mx_config:
    # recompute_modules ["mla_up_proj"], then _enable_deepseek_full_iteration_mxfp8 (flex/hybridep,
    # full_iteration, scope [], overlap_moe_expert_parallel_comm)
    "bridge2608_gb200_deepseek_v3_fp8mx": ("hybridep", True, "full_iteration", (), ("mla_up_proj",), (4, 64, 1)),
    "bridge2602_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ROUTER, (), (1, 8, 4)),
    "bridge2602_b200_qwen3_30b_a3b_fp8mx": ("alltoall", False, TE, ROUTER, (), (1, 8, 1)),
    "bridge2602_h100_qwen3_30b_a3b_fp8cs": ("deepep", True, None, (), (), (2, 8, 1)),
    "bridge260201_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ROUTER, (), (1, 8, 4)),
    "bridge260201_b200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ATTN, (), (1, 8, 4)),
    "bridge260201_h100_qwen3_30b_a3b_fp8cs": ("hybridep", False, None, (), (), None),  # tag: pp 1 ep 16; printed pp 2 ep 8
    "bridge2604_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ROUTER, (), (1, 8, 4)),
    "bridge2604_b200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ATTN, (), (1, 8, 4)),
    "bridge2604_h100_qwen3_30b_a3b_fp8cs": ("hybridep", False, None, (), (), (1, 16, 1)),
    "bridge260401_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ROUTER, (), (1, 8, 4)),
    "bridge260401_b200_qwen3_30b_a3b_fp8mx": ("hybridep", False, TE, ATTN, (), (1, 8, 4)),
    "bridge260401_h100_qwen3_30b_a3b_fp8cs": ("hybridep", False, None, (), (), (1, 16, 1)),
    "bridge2606_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 8, 4)),
    "bridge2606_h100_qwen3_30b_a3b_fp8cs": ("hybridep", False, None, (), (), (1, 16, 1)),
    # v0.5.1 qwen3_workload_base_configs.py QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1 and
    # QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2 (hybridep, moe_a2a_overlap, full_iteration, scope []),
    # unchanged from v0.5.0 (v0.5.1 changes only the B200, B300 and VR200 Qwen3 configs)
    "bridge260601_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 8, 4)),
    # v0.6.0 perf_recipes/qwen/gb200/qwen3_moe.py qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config and
    # qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config: flex/hybridep, recompute_granularity None, then
    # qwen/common.py _enable_hybridep_full_iteration_mxfp8 (full_iteration, scope [],
    # overlap_moe_expert_parallel_comm)
    "bridge2608_gb200_qwen3_30b_a3b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 8, 4)),
    # Qwen3-235B-A22B (the V2 configs, global batch 8192); on H100 qwen3_llm_pretrain.py forces
    # moe_token_dispatcher_type = "alltoall" (v0.3.1 also sets the backend deepep, unused under it)
    "bridge2602_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", False, TE, ATTN, (), (8, 32, 1)),
    "bridge2602_b200_qwen3_235b_a22b_fp8mx": ("alltoall", False, None, (), (), (8, 8, 1)),
    "bridge2602_h100_qwen3_235b_a22b_fp8cs": ("alltoall", True, None, (), (), (8, 32, 1)),
    "bridge260201_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", False, TE, ATTN, (), (8, 32, 1)),
    "bridge260201_h100_qwen3_235b_a22b_fp8cs": ("alltoall", True, None, (), (), (8, 32, 1)),
    "bridge2604_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", False, TE, ATTN, (), (8, 32, 1)),
    "bridge2604_h100_qwen3_235b_a22b_fp8cs": ("alltoall", True, None, (), (), (8, 32, 1)),
    "bridge260401_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", False, TE, ATTN, (), (8, 32, 1)),
    "bridge260401_b200_qwen3_235b_a22b_fp8mx": ("alltoall", False, None, (), (), (8, 8, 1)),
    "bridge260401_h100_qwen3_235b_a22b_fp8cs": ("alltoall", True, None, (), (), (8, 32, 1)),
    "bridge2606_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", True, "full_iteration", (), (), (8, 32, 1)),
    "bridge260601_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", True, "full_iteration", (), (), (8, 32, 1)),
    "bridge2608_gb200_qwen3_235b_a22b_fp8mx": ("hybridep", True, "full_iteration", (), (), (8, 32, 1)),
    # gpt-oss-120b (V2, global batch 1280)
    "bridge2602_gb200_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (1, 64, 4)),
    "bridge2602_b200_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (1, 64, 4)),
    "bridge2602_h100_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (4, 8, 1)),
    "bridge260201_gb200_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (1, 64, 4)),
    "bridge260201_b200_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, None),  # tag: ep 64; printed ep 8
    "bridge260201_h100_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (4, 8, 1)),
    "bridge2604_gb200_gpt_oss_120b_bf16": ("hybridep", True, None, (), LN_ACT, (1, 64, 4)),
    "bridge2604_b200_gpt_oss_120b_bf16": ("hybridep", False, None, (), LN_ACT, (1, 8, 4)),
    "bridge2604_h100_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (4, 8, 1)),
    "bridge260401_gb200_gpt_oss_120b_bf16": ("alltoall", True, None, (), LN_ACT, (1, 64, 4)),
    "bridge260401_b200_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (1, 8, 4)),
    "bridge260401_h100_gpt_oss_120b_bf16": ("alltoall", False, None, (), LN_ACT, (4, 8, 1)),
    "bridge2606_gb200_gpt_oss_120b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 64, 4)),
    # v0.5.1 gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2 (hybridep,
    # moe_a2a_overlap, full_iteration, scope [], recompute_modules []), unchanged from v0.5.0: the
    # 26.06.01 table's regression (its [^gpt-oss-note]) is not the recipe's
    "bridge260601_gb200_gpt_oss_120b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 64, 4)),
    # v0.6.0 perf_recipes/gpt_oss/gb200/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config:
    # gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs (flex/hybridep, full_iteration,
    # scope [], overlap_moe_expert_parallel_comm), then recompute_modules = []
    "bridge2608_gb200_gpt_oss_120b_fp8mx": ("hybridep", True, "full_iteration", (), (), (1, 64, 4)),
}
# deepseek_llm_pretrain.py, qwen3_llm_pretrain.py and gpt_oss_llm_pretrain.py (120B) at every tag
# above: grad_reduce_in_fp32 = False, moe_router_force_load_balancing = True (v0.6.0: the perf recipes
# set moe_router_force_load_balancing = True, _perf_precision and _benchmark_common grad_reduce_in_fp32
# = False)
# llama3_llm_pretrain.py / llama31_llm_pretrain.py at every tag above: grad_reduce_in_fp32 = False;
# tp_comm_overlap = tp > 1 (CommOverlapConfig) except for nvfp4; llama3_workload_base_configs.py:
# LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V1/V2 cpu_offloading_num_layers=40, no recompute_modules
TAG_OFFLOADED = {"Llama 3 70B": 40}


def test_the_moe_recipes_agree_with_the_release_tags():
    """The deciding fields of each checked MoE row's `recipe` equal the release tag's config typed
    above, and the tag's degrees and micro-batch are the row's (where the table prints the tag's)."""
    rows = load("megatron_bridge_releases_moe.yaml")
    assert set(TAG_RECIPES) == {k for k, e in rows.items() if e["release"] in RELEASE_TAGS}
    for rid, (backend, overlap, graph, scope, modules, layout) in TAG_RECIPES.items():
        entry = rows[rid]
        assert entry["release"] in RELEASE_TAGS, rid
        r = entry["recipe"]
        dispatcher = r.get("moe_flex_dispatcher_backend") if r.get("moe_token_dispatcher_type") == "flex" else "alltoall"
        assert dispatcher == backend, rid
        assert bool(r.get("moe_a2a_overlap")) == overlap, rid
        assert (r.get("cuda_graph_impl") or "none") == (graph or "none"), rid
        assert tuple(r.get("cuda_graph_scope") or ()) == scope, rid
        assert tuple(r.get("recompute_modules") or ()) == modules, rid
        assert r.get("grad_reduce_in_fp32") is False and r.get("moe_router_force_load_balancing") is True, rid
        assert not r.get("moe_pad_expert_input_to_capacity"), rid  # dropless in every tagged release
        if layout is not None:
            lay = entry["layout"]
            assert (int(lay["pp"] or 1), int(lay["ep"] or 1), int(lay["micro_batch"])) == layout, rid


def test_the_dense_recipes_agree_with_the_release_tags():
    """Every dense Bridge row of a tagged release states what the tag's Llama configs set: bf16
    gradient reduction, tp overlap exactly where tp > 1 (no nvfp4 row is transcribed), and on GB200
    with Megatron-FSDP at FP8-CS the 70B's offloaded layers with no recomputation."""
    rows = [e for e in load("megatron_bridge_releases.yaml").values() if e["release"] in RELEASE_TAGS]
    assert len(rows) >= 20
    offloading = 0
    for e in rows:
        r, lay = e["recipe"], e["layout"]
        assert "nvfp4" not in str(lay["precision"]).lower(), e["id"]
        assert r["grad_reduce_in_fp32"] is False, e["id"]
        assert bool(r.get("tp_comm_overlap")) == (int(lay["tp"] or 1) > 1), e["id"]
        fsdp_cs = (e["hardware"]["gpu"] == "GB200" and str(lay.get("zero_or_fsdp") or "").upper() == "FSDP"
                   and lay["precision"] == "FP8-CS")
        if fsdp_cs and e["model"]["name"] in TAG_OFFLOADED:
            assert r.get("cpu_offloading_num_layers") == TAG_OFFLOADED[e["model"]["name"]] and r["recompute"] == "none"
            offloading += 1
        else:
            assert "cpu_offloading_num_layers" not in r, e["id"]
    assert offloading == 4


def test_every_software_field_a_target_does_not_state_survives_compiled():
    """`published.compiled` builds the row's `Software` from the row's own (dataclasses.replace):
    every field the spec's target does not state keeps the row's value, whatever it is, and the
    fields the target states are the target's (`targets.software_of`)."""
    import dataclasses

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published
    from parc import targets
    from parc.timing import Software

    entry = load("megatron_bridge_releases.yaml")["bridge2602_h100_llama3_70b_fp8cs"]
    run = published.row_spec(entry)
    fields = [f for f in dataclasses.fields(Software) if f.init]
    own = [f for f in fields if f.name not in published.TARGET_STATES]
    assert set(published.TARGET_STATES) < {f.name for f in fields} and own

    def other(v):
        return (not v) if isinstance(v, bool) else v + 3 if isinstance(v, int) else v + 0.25 if isinstance(v, float) \
            else v + "-row"

    marked = {f.name: other(getattr(run.software, f.name)) for f in own}
    run.software = dataclasses.replace(run.software, **marked)
    out = published.compiled(run)
    assert not isinstance(out, published.Skipped), out
    for name, value in marked.items():
        assert getattr(out.software, name) == value, name
    target = targets.software_of(out.plan)
    for name in published.TARGET_STATES:
        assert getattr(out.software, name) == getattr(target, name), name
