"""benchmarks/published.py: any row of published.yaml's schema becomes a spec, or a reason.

The calibration set exercises three sources; the set kept apart to check the model holds others
(conventions.md names their FLOP conventions and GPUs). `tests/data/published_schema_cases.yaml`
holds rows of that schema with real models' shapes on other GPUs, conventions, axes and
schedules, plus broken rows; its throughput figures are made up (plumbing, not accuracy).
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import ROOT, load_yaml

CASES = ROOT / "tests" / "data" / "published_schema_cases.yaml"
LEFT_OUT = {"tpu_palm", "no_throughput", "model_unpublished", "words_for_numbers", "degrees_disagree",
            "unknown_gpu"}


def _load(name):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def published():
    return _load("published")


@pytest.fixture(scope="module")
def fidelity():
    return _load("fidelity")


@pytest.fixture(scope="module")
def cases(fidelity):
    rows, skipped = fidelity.load_rows(CASES)
    results = fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], fidelity.DEFAULT)
    return {r.row.id: r for r in results}, {s.id: s.reason for s in skipped}


def test_every_row_is_predicted_or_left_out_with_its_reason(cases):
    results, skipped = cases
    assert set(skipped) == LEFT_OUT
    assert len(results) == 15  # the 21 mappings less the 6 left out, and "not a mapping" ignored
    for run_id, x in results.items():
        assert math.isfinite(x.predicted) and x.predicted > 0, run_id
        assert x.row.plan.cluster.world_size == x.row.gpus, run_id
    assert "TPU" in skipped["tpu_palm"] and "Gaudi 3" in skipped["unknown_gpu"]
    assert "8 GPUs, not the 16" in skipped["degrees_disagree"]
    assert "`layers`, `hidden`, `heads`, `vocab`" in skipped["model_unpublished"]
    assert "'several'" in skipped["words_for_numbers"]  # a number spelled out ("eight") reads


def spec_of(cases, run_id):
    return cases[0][run_id].row.spec


def test_hardware_is_read_from_the_gpu_name_note_and_figures(cases):
    assert "on nodes(4 gpus, nvl72)" in spec_of(cases, "gb200_llama405b_bridge")
    assert "gpu gb200-nvl72" in spec_of(cases, "gb200_llama405b_bridge")
    assert "gpu h100-sxm { hbm 96 GB }" in spec_of(cases, "h100_hbm2e_torchtitan")
    assert "gpu a100-40gb, network 4 x 200 Gb/s" in spec_of(cases, "a100_40gb_bloom_zero2")
    assert "on nodes(8 gpus, xgmi)" in spec_of(cases, "mi300x_step_only")
    assert "gpu h800" in spec_of(cases, "h800_deepseek_dualpipe")
    v100 = spec_of(cases, "ulysses_grad_accum")
    assert "bf16 125 TFLOP/s" in v100 and "hbm 32 GB" in v100 and "link 150 GB/s" in v100
    assert "hbm-bandwidth 0.9 TB/s" in v100  # the V100 SXM2 datasheet's 900 GB/s, not the A100's it stands on
    assert "network 8 x 400 Gb/s" in spec_of(cases, "llama3_405b_cp_allgather")  # one 400 Gb/s NIC per GPU
    torchtitan = cases[0]["h100_hbm2e_torchtitan"].row
    assert torchtitan.peak == 989 and any("states none" in a for a in torchtitan.assumptions)


def test_counts_with_a_multiplier_keep_it(published):
    """A sequence's "8K" is 8,192 tokens (it once read as 8); other counts' K, M and B are decimal."""
    assert published._int("8K", "seq_len", binary=True) == 8192
    assert published._int("128k", "seq_len", binary=True) == 131072
    assert published._int("seq=1M", "seq_len", binary=True) == 2**20
    assert published._int("50K", "vocab") == 50_000 and published._int("1.5M", "x") == 1_500_000
    assert published._int("32 blocks", "layers") == 32 and published._int("TP=8", "tp") == 8
    assert published._int("1.5K", "seq_len", binary=True) == 1536
    with pytest.raises(published.Unusable):
        published._int("1.2345K", "x")  # 1,234.5 is no count


def test_a_v100_row_with_its_own_peak_compiles(published):
    """A V100 whose row states a peak other than the SXM2's 125 TFLOP/s (DGX-2's SXM3 parts run at
    130): that peak replaces the assumed one (the block once set `bf16` twice: E0204, the row left out)."""
    notes: list[str] = []
    text, key, _, peak = published.hardware_block(
        {"gpu": "V100-SXM3-32GB", "gpu_memory_gb": 32, "gpus_per_node": 16, "peak_tflops_dense_at_precision": 130},
        "fp16", notes)
    assert key == "a100-40gb" and peak == 130 and text.count("bf16 ") == 1 and "bf16 130 TFLOP/s" in text
    from parc.pipeline import compile_text
    spec = (f"dp 16 on nodes(16 gpus, nvlink)\nmodel tiny\n{text}\n"
            "train { seq 32, global-batch 16, precision fp16 }\n")
    result = compile_text(spec, path="v100.par", checks=False)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    assert result.plan.cluster.gpu.bf16_flops == 130e12


def test_layouts_axes_and_schedules(cases):
    assert "tp 2 x dp 16 x pp 4" in spec_of(cases, "h800_mixtral_folded_ep")
    # expert tensor parallelism 1 with tp 2: Megatron-Core's expert mesh takes the tp ranks first
    assert "ep 8 over tp x dp" in spec_of(cases, "h800_mixtral_folded_ep")
    assert spec_of(cases, "ep_as_axis").splitlines()[2].startswith("ep 8 x dp 4")
    assert "tp 8 x cp 16 x dp 8 x pp 16" in spec_of(cases, "llama3_405b_cp_allgather")
    assert "cp { flavour all-gather }" in spec_of(cases, "llama3_405b_cp_allgather")
    assert "cp { flavour all-to-all }" in spec_of(cases, "ulysses_grad_accum")
    assert "split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]" in spec_of(cases, "llama3_405b_cp_allgather")
    assert "schedule dualpipe-v, virtual-stages 2, split [1, 2," in spec_of(cases, "h800_deepseek_dualpipe")
    assert "schedule interleaved-zb, virtual-stages 2" in spec_of(cases, "zero_bubble_gpt")
    assert "schedule interleaved-1f1b, virtual-stages 5" in spec_of(cases, "b200_llama70b_fp8_nemo")
    assert "tp 8 x dp 16 x pp 8" in spec_of(cases, "tp_unstated")
    assert "tp 2 x cp 4 x dp 8 on" in spec_of(cases, "dp_includes_cp")  # the published dp 32 counted cp
    assert "on nodes(8 gpus, pcie)" in spec_of(cases, "h100_pcie")
    assert "global-batch 32, micro-batch 1" in spec_of(cases, "ulysses_grad_accum")  # dp 8 x cp 8 ... x 4 steps
    assert "sharding zero2" in spec_of(cases, "a100_40gb_bloom_zero2")
    assert "sharding zero3" in spec_of(cases, "mi300x_step_only")
    assert "precision fp8" in spec_of(cases, "b200_llama70b_fp8_nemo")
    deepseek = spec_of(cases, "h800_deepseek_dualpipe")
    assert "experts 256, top-k 8, expert-ffn 2048, shared-experts 1, moe-layers from 3" in deepseek
    assert "head-dim 128" in deepseek


def test_runtime_facts_come_from_the_source(cases):
    results = cases[0]
    titan = results["h100_hbm2e_torchtitan"].row.software
    assert titan.kernels == "eager" and titan.selective == "torchtitan-op" and titan.attention == "flash"
    bloom = results["a100_40gb_bloom_zero2"].row.software
    assert bloom.attention == "unfused" and bloom.kernels == "fused"  # published 2022
    assert results["h800_mixtral_folded_ep"].row.software.tp_overlap == "backward"  # Megatron since late 2021
    assert results["llama3_405b_cp_allgather"].row.software.tp_overlap == "none"
    assert results["ulysses_grad_accum"].row.software.grad_bytes == 2  # fp16


def test_torchtitan_with_torch_compile_runs_at_the_fused_speed(published):
    entry = {"group": "torchtitan_h100", "source": {"title": "pytorch/torchtitan performance 2024"},
             "layout": {"extra": "FSDP2, torch.compile"}}
    notes = []
    software, family = published.software_of(entry, "bf16", 1, 8, notes)
    assert family == "torchtitan" and software.kernels == "fused" and any("compile" in n for n in notes)
    entry["layout"]["extra"] = "FSDP2"
    assert published.software_of(entry, "bf16", 1, 8, [])[0].kernels == "eager"


def test_a_source_that_denies_flashattention_is_read_as_unfused(published):
    """A 2022 row whose notes say its attention ran without FlashAttention is unfused (the word
    alone used to be read as the kernel); one that states it is flash."""
    entry = {"group": "g", "source": {"title": "A 2022 run"}, "notes": ["attention without FlashAttention"]}
    assert published.software_of(entry, "bf16", 1, 8, [])[0].attention == "unfused"
    entry["notes"] = ["FlashAttention (stated)"]
    assert published.software_of(entry, "bf16", 1, 8, [])[0].attention != "unfused"


def test_a_source_that_states_fsdp_on_no_megatron_runtime_moves_torchs_traffic(published):
    """A run stating PyTorch's FSDP (Llama 3's own stack) reduces its gradients once per step
    under pipelining, as torch's pipeline stages do: `dp_runtime` torch. The same words in a
    Megatron source, and a ZeRO-1 run on no named runtime, keep Megatron's contract."""
    llama3 = {"group": "llama3_herd_2024_table4", "source": {"title": "The Llama 3 Herd of Models"},
              "layout": {"zero_or_fsdp": "FSDP sharding optimizer states and gradients (ZeRO-2)"}}
    notes: list[str] = []
    assert published.software_of(llama3, "bf16", 8, 64, notes)[0].dp_runtime == "torch"
    assert any("once per step" in n for n in notes)
    megatron = dict(llama3, source={"title": "Megatron-FSDP on Megatron-Core"})
    assert published.software_of(megatron, "bf16", 8, 64, [])[0].dp_runtime == "megatron"
    zero1 = dict(llama3, layout={"zero_or_fsdp": "ZeRO-1"})
    assert published.software_of(zero1, "bf16", 8, 64, [])[0].dp_runtime == "megatron"


def test_reported_figures_in_each_convention(cases, published):
    results = cases[0]
    assert results["h800_mixtral_folded_ep"].row.reported_tflops == pytest.approx(0.35 * 989)
    assert results["tp_unstated"].row.reported_from == "reported % of peak"
    assert results["ulysses_grad_accum"].row.reported_tflops == pytest.approx(0.40 * 125)
    deepseek = results["h800_deepseek_dualpipe"].row  # "3.0e6" is a string to YAML 1.1
    assert deepseek.reported_from == "reported tokens/s"
    step_only = results["mi300x_step_only"].row
    assert step_only.reported_from == "reported step time"
    assert step_only.reported_tflops == pytest.approx(step_only.conv_flops / (40 * 64) / 1e12)


def llama(published, **over):
    fields = dict(layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8, head_dim=128, vocab=128256, seq=8192,
                  swiglu=True, tied=False)
    fields.update(over)
    return published.Dims(**fields)


def test_conventions_reproduce_the_arithmetic_in_conventions_md(published):
    """conventions.md checks each convention against a published pair: Bridge Llama 3 70B
    4.49e11 and 405B 2.52e12 FLOPs per token (causal); NeMo GPT-3 175B 1.077e12 and Llama 3 70B
    4.81e11 (non-causal)."""
    conv = published.CONVENTIONS
    l70 = llama(published)
    l405 = llama(published, layers=126, hidden=16384, ffn=53248, heads=128)
    gpt3 = published.Dims(layers=96, hidden=12288, ffn=49152, heads=96, kv_heads=96, head_dim=128, vocab=51200,
                          seq=2048, swiglu=False, tied=True)
    assert conv["bridge_causal"].model(l70) / 8192 == pytest.approx(4.49e11, rel=2e-3)
    assert conv["bridge_causal"].model(l405) / 8192 == pytest.approx(2.52e12, rel=2e-3)
    assert conv["nemo_dgxc_noncausal"].model(gpt3) / 2048 == pytest.approx(1.077e12, rel=2e-3)
    assert conv["nemo_dgxc_noncausal"].model(l70) / 8192 == pytest.approx(4.81e11, rel=2e-3)
    # 1619 tokens/s per GPU x 4.49e11 = 727 TFLOP/s (Megatron-Bridge's Llama 3 70B row)
    assert 1619 * conv["bridge_causal"].model(l70) / 8192 / 1e12 == pytest.approx(727, rel=3e-3)


def test_megatron_core_convention_is_non_causal_before_2025(published):
    d = llama(published)
    noncausal = published.megatron_core(d, causal=False)
    causal = published.megatron_core(d, causal=True)
    assert noncausal > causal
    assert noncausal - causal == pytest.approx(12 * 8192 * 80 * 8192**2 * (8192 / (2 * 8192)))

    def entry(title, notes=()):
        return {"source": {"title": title}, "notes": list(notes), "flop_convention": "megatron_core_model_flops"}

    assert published.convention_of(entry("Megatron-LM README 2024"))[1].label == "MFU (Megatron-Core)"
    assert "causal" in published.convention_of(entry("Megatron-LM ModelZoo 2025"))[1].label
    assert published.convention_of(entry("x", ["attention counted non-causal"]))[1].label == "MFU (Megatron-Core)"


def test_parameter_counts_match_llama3_8b(published):
    """Llama 3 8B: 8,030,261,248 weights; 525,336,576 of them the input embedding."""
    d = llama(published, layers=32, hidden=4096, ffn=14336, heads=32)
    norms = 32 * 2 * 4096 + 4096
    assert d.matmul_params() + norms == 8_030_261_248 - 525_336_576
    assert d.total_params() == pytest.approx(8_030_261_248, rel=1e-4)


def test_korthikanti_hardware_over_model_flops_is_the_published_hfu_over_mfu(published):
    """22B (s 2048, h 6144, L 48, V 51200): HFU 43.7 % against MFU 41.5 % (Table 5)."""
    d = published.Dims(layers=48, hidden=6144, ffn=24576, heads=64, kv_heads=64, head_dim=96, vocab=51200, seq=2048,
                       swiglu=False, tied=True)
    ratio = published.korthikanti_selective_hardware(d) / published.korthikanti_model(d)
    assert ratio == pytest.approx(43.7 / 41.5, rel=2e-3)


def test_split_puts_the_lighter_stages_at_the_ends(published):
    assert published.split_of(126, 16) == [7] + [8] * 14 + [7]
    assert published.split_of(128, 16) is None
    assert sum(published.split_of(61, 32)) == 61
    with pytest.raises(published.Unusable):
        published.split_of(10, 16)


def test_two_layers_short_the_embedding_and_loss_take_a_chunk_each(published, fidelity):
    """Megatron-Core's account_for_embedding/loss_in_pipeline_split: 126 layers over 128 chunks
    (Llama 3.1 405B, pp 16 x vp 8), 94 over 96 (Qwen3-235B, pp 32 x vp 3); one or three short
    is no split Megatron-Core's accounting of both gives, so the row stays out."""
    rows, _ = fidelity.load_rows()
    qwen = next(r for r in rows if r.id == "modelzoo_qwen3_235b_intranode_ep8_a2a_pp32")
    assert qwen.plan.layout.pp.split == (0,) + (1,) * 94 + (0,)
    assert any("the only split of 94 layers over 96 chunks" in a for a in qwen.assumptions)
    assert published.split_of(126, 128) == [0] + [1] * 126 + [0]
    assert published.split_of(94, 96) == [0] + [1] * 94 + [0]
    for layers in (127, 125):
        with pytest.raises(published.Unusable):
            published.split_of(layers, 128)


def test_calibration_rows_are_the_same_specs_as_before(fidelity):
    """The general reader writes the calibration set exactly as the fitted constants assume."""
    rows, skipped = fidelity.load_rows()
    by_id = {r.id: r for r in rows}
    assert len(rows) == 53 and len(skipped) == 2
    assert by_id["korthikanti22_530B_2240gpu_selective_sp"].spec.count("global-batch 2240") == 1
    assert any("korthikanti22_530B_selective_sp's 280 micro-batches" in a
               for a in by_id["korthikanti22_530B_2240gpu_selective_sp"].assumptions)


def test_cli_evaluates_another_file_as_json():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), "--published", str(CASES), "--json"],
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    assert {r["id"] for r in data["left_out"]} == LEFT_OUT
    assert len(data["runs"]) == 15 and data["median_abs_error"] > 0
    assert all(set(r["caveats"]) <= {"attention", "gemm-ceiling", "fp4-gemm", "expert-all-to-all"} for r in data["runs"])
    refused = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), "--published", str(CASES),
                              "--write"], capture_output=True, text=True)
    assert refused.returncode == 2 and "calibration set only" in refused.stderr


JUNK = st.one_of(st.none(), st.integers(-5, 10**7), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=12), st.booleans(), st.lists(st.integers(0, 9), max_size=3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_to_a_row_gives_a_run_or_a_reason(published, data):
    """Replace a few fields of a real row with junk: the reader returns a Run or a Skipped, and a
    Run's spec goes through parc without an exception."""
    from parc.pipeline import compile_text

    entries = [e for e in load_yaml(CASES.read_text()) if isinstance(e, dict)]
    entry = json.loads(json.dumps(data.draw(st.sampled_from(entries))))
    for _ in range(data.draw(st.integers(1, 4))):
        section = data.draw(st.sampled_from(["model", "layout", "hardware"]))
        keys = sorted(entry[section])
        entry[section][data.draw(st.sampled_from(keys))] = data.draw(JUNK)
    run = published.row_spec(entry, entries)
    assert isinstance(run, (published.Run, published.Skipped))
    if isinstance(run, published.Run):
        compile_text(run.spec, path="x.par")
    else:
        assert run.reason


@pytest.mark.parametrize("note, network", [
    ("Selene DGX A100, 8x200Gb/s HDR IB per node", "8 x 200 Gb/s"),
    ("one 400 Gb/s RoCE NIC per GPU", "8 x 400 Gb/s"),
    ("3.2 Tbps of InfiniBand per node", "8 x 400 Gb/s"),
    ("4x NDR", "4 x 400 Gb/s"),
    ("8× 200G InfiniBand NICs", "8 x 200 Gb/s"),
    ("8 x 80GB GPUs", None),  # bytes of memory, not a link
    # GB/s is bytes, Gb/s bits: eight NICs of 50 GB/s are eight 400 Gb/s NICs, not 6.25 Gb/s ones
    ("IB 8x50 GB/s per node", "8 x 400 Gb/s"),
    ("400 GB/s of InfiniBand per node", "8 x 400 Gb/s"),
    ("25 GB/s per GPU", "8 x 200 Gb/s"),
    ("NVLink 900 GB/s, IB 8x50 GB/s per node", "8 x 400 Gb/s"),  # NVLink's rate is not the network's
    ("NVLink 600 GB/s per GPU", None),
    ("H100 SKU not stated in README", None),
])
def test_network_is_read_from_the_hardware_note(published, note, network):
    notes = []
    got = published.network_of({"note": note}, 8, published.GPUS["a100-80gb"], notes)
    assert got == (network or "8 x 200 Gb/s")
    assert bool(notes) == (network is None)  # the catalogue's node is an assumption, listed


@pytest.mark.parametrize("note, network", [
    ("NDR 400Gb/s x8", "8 x 400 Gb/s"),  # the count after the rate
    ("8 x ConnectX-7 (400 Gb/s each)", "8 x 400 Gb/s"),  # adapters counted by name
    ("InfiniBand NDR400, 4 HCAs per node", "4 x 400 Gb/s"),
    ("8 NICs x 400G", "8 x 400 Gb/s"),
    ("2 InfiniBand NICs at 100 Gbps", "2 x 100 Gb/s"),
    ("Mellanox HDR 200Gb/s x8 per node", "8 x 200 Gb/s"),  # the count before the scope (was 8 x 25)
    ("eight 400 Gb/s NICs per node", "8 x 400 Gb/s"),  # per NIC, counted in words (was 8 x 50)
    ("4 400 Gb/s HCAs per node", "4 x 400 Gb/s"),
])
def test_network_counts_stated_apart_from_the_rate(published, note, network):
    notes = []
    assert published.network_of({"note": note}, 8, published.GPUS["a100-80gb"], notes) == network
    assert not notes


@pytest.mark.parametrize("note, network", [
    # a rate with no count and no scope is each of the usual node's 8 NICs (A100: 8 x 200 Gb/s), never
    # dropped for the catalogue's rate: 100 Gb/s read as 200 would predict twice the network it had
    ("100 Gbps Ethernet", "8 x 100 Gb/s"),
    ("ConnectX-6 100Gb/s", "8 x 100 Gb/s"),
    ("InfiniBand EDR", "8 x 100 Gb/s"),
    # more than any one port carries (ConnectX-8: 800 Gb/s): the node's aggregate over its 8 NICs
    ("EFA 3200 Gbps", "8 x 400 Gb/s"),
    ("1.6 Tb/s fabric", "8 x 200 Gb/s"),
])
def test_network_rate_without_count_is_read_and_noted(published, note, network):
    notes = []
    assert published.network_of({"note": note}, 8, published.GPUS["a100-80gb"], notes) == network
    assert len(notes) == 1 and "usual" in notes[0] and "unstated" not in notes[0]


@pytest.mark.parametrize("raw, expected", [
    (True, "full"), (False, "none"),  # YAML's `recompute: yes` is a bool, not the word
    ("enabled", "full"), ("checkpoint-activations", "full"),  # Megatron-LM's old flag: whole layers
    ("recompute all layers", "full"), ("partial (4 layers)", "full 4"),
    ("--recompute-activations", "selective"),  # Megatron-LM's flag for Korthikanti's selective
    ("off", "none"), ("no checkpointing", "none"),
    ("MaxText remat_policy=full", "full"), ("remat_policy: save_out_proj", "full"),  # only the output projection kept
    ("selective: MaxText remat_policy=save_qkv_proj", "selective"),
])
def test_recompute_phrasings(published, raw, expected):
    assert published.recompute_of({"recompute": raw}, 32, "megatron", []) == expected


def test_virtual_stages_stated_as_vp(published):
    for text in ("Interleaved 1F1B (VP=4)", "interleaved, vpp 4", "interleaved (virtual stages 4)"):
        notes = []
        assert published.schedule_of({"pipeline_schedule": text}, 8, notes) == ("interleaved-1f1b", 4), text
        assert not notes


def test_four_bit_precision_other_than_nvfp4_is_left_out_not_read_as_bf16(published):
    assert published.precision_of({"precision": "NVFP4"}) == "nvfp4"
    for text in ("MXFP4", "FP4 (blockwise)", "4-bit"):
        with pytest.raises(published.Unusable, match="4-bit"):
            published.precision_of({"precision": text})
    assert published.precision_of({"precision": "MXFP8"}) == "fp8"
    assert published.sharding_of({"zero_or_fsdp": "optimizer sharding"}, "megatron", "", []) == "zero1"


@pytest.mark.parametrize("raw, sequences", [
    (1024, 1024), ("1,536", 1536),  # a thousands separator is not the end of the number
    ("4M tokens", 1024),  # 4 x 2^20 tokens of 4,096: papers' "4M"
    ("4,194,304 tokens", 1024), ("2048 x 4096 tokens", 2048), ("16M tokens (4096 seqs)", 4096),
    ("512K tokens", 128),  # 2^19: a power-of-two count reads binary, though 512,000 is 125 sequences too
    ("1.5M tokens", 384),  # 1.5 x 2^20: the reading that makes whole sequences (1,500,000 is not)
    ("3M tokens", 768),  # 3 x 2^20, though 3 is no power of two: 3,000,000 is not whole sequences
    ("1024K tokens", 256),  # 1,048,576 tokens, as "1M"
])
def test_global_batch_in_sequences_or_tokens(published, raw, sequences):
    entry = {"layout": {"global_batch": raw, "micro_batch": 1}, "model": {"seq_len": 4096}}
    assert published.batch_of(entry, 8, [], []) == (1, sequences)


def test_whole_numbers_as_rows_write_them(published):
    assert [published._int(v, "tp") for v in ("8", "8 (TP)", "TP=8", "tp 8", "1,024")] == [8, 8, 8, 8, 1024]
    for bad in ("2.5", "-3", "1,5", "x"):
        with pytest.raises(published.Unusable, match="whole number"):
            published._int(bad, "tp")
    with pytest.raises(published.Unusable, match="not whole sequences"):
        published.batch_of({"layout": {"global_batch": "1000 tokens"}, "model": {"seq_len": 4096}}, 1, [], [])


def test_reported_numbers_written_with_units(published):
    dims = published.Dims(layers=2, hidden=64, ffn=256, heads=4, kv_heads=4, head_dim=16, vocab=100, seq=16,
                          swiglu=False, tied=True)
    conv = published.convention_of({"flop_convention": "narayanan_hfu"})[1]
    # 52 % of a 989 TFLOP/s peak, however the row writes it
    for out in ({"mfu": "52%"}, {"mfu_pct": "52 %"}, {"mfu": 0.52}):
        assert published.reported_tflops(out, conv, "k", dims, 8, 8, 989, "none")[0] == pytest.approx(514.28)
    assert published.reported_tflops({"tflops_per_gpu": "~400 TFLOP/s"}, conv, "k", dims, 8, 8, 989, "none") == (
        400.0, "reported TFLOP/s")
    # a multiplier is the figure's: "1.2M tokens/s" is 1.2e6 (it once read as 1.2)
    per_token = published.reported_tflops({"tokens_per_s": 1.2e6}, conv, "k", dims, 8, 8, 989, "none")[0]
    assert published.reported_tflops({"tokens_per_s": "1.2M tokens/s"}, conv, "k", dims, 8, 8, 989, "none")[0] \
        == pytest.approx(per_token)
    for unread in ("n/a", "400-450"):  # a range is not a figure
        with pytest.raises(published.Unusable, match="no throughput"):
            published.reported_tflops({"tflops_per_gpu": unread}, conv, "k", dims, 8, 8, 989, "none")


def test_tokens_per_second_unsaid_whose_total_reading_is_no_training_run_are_per_gpu(published):
    """A tokens/s figure that says neither per GPU nor the job's is the job's, unless that reading
    would put each GPU under 1 % of its peak while the per-GPU reading stays under it (torchtitan's
    docs/mxfp8.md "Median tokens/s" of Llama 4 Scout on 256 GB200, its per-device `tps`: 6,169 read
    as the job's was 0.1 % of the peak and 354x the prediction)."""
    dims = published.Dims(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256,
                          seq=8192, swiglu=True, tied=False)
    conv = published.convention_of({"flop_convention": "torchtitan"})[1]
    per_gpu, said = published.reported_tflops({"tokens_per_s_median": 6169}, conv, "k", dims, 256, 256, 2500, "none")
    assert per_gpu == pytest.approx(published.reported_tflops({"tokens_per_s_per_gpu": 6169}, conv, "k", dims, 256,
                                                              256, 2500, "none")[0])
    assert "per GPU" in said and 100 < per_gpu < 2500
    # a job's total that is a training run's: 49,200 tokens/s on 8 H100 (6,150 each, about 36 % MFU)
    total, said = published.reported_tflops({"tokens_per_s": 49200}, conv, "k", dims, 8, 8, 989, "none")
    assert said == "reported tokens/s"
    assert total == pytest.approx(published.reported_tflops({"tokens_per_s_per_gpu": 6150}, conv, "k", dims, 8, 8,
                                                            989, "none")[0])
    # the job's total under a per-GPU key: 49,200 "tokens/s per GPU" would run each H100 at 2.9x its peak
    misfiled, said = published.reported_tflops({"tokens_per_s_per_gpu": 49200}, conv, "k", dims, 8, 8, 989, "none")
    assert misfiled == pytest.approx(total) and "the job's" in said


def test_words_of_layouts_and_models(published):
    notes = []
    assert published.schedule_of({"pipeline_schedule": "interleaved 1F1B (vpp 4)"}, 8, notes) == ("interleaved-1f1b", 4)
    assert published.schedule_of({"pipeline_schedule": "ZB-V"}, 8, notes) == ("zbv", 2)
    assert published.recompute_of({"recompute": "selective, every layer"}, 32, "megatron", notes) == "selective"
    assert published.recompute_of({"recompute": "selective layer"}, 32, "torchtitan", notes) == "full 16"
    assert published.recompute_of({"recompute": "full, 10 layers"}, 32, "megatron", notes) == "full 10"
    assert published.recompute_of({"recompute": "uniform, 1 layer"}, 32, "megatron", notes) == "full"  # groups of 1
    assert published.recompute_of({"recompute": "partial (core attention)"}, 32, "megatron", notes) == "selective"
    for raw, expected in (("ZeRO-3", "zero3"), ("shard_grad_op", "zero2"), ("distributed optimizer", "zero1"),
                          ("FSDP2", "zero3"), ("none (DDP)", "none"), ("fully sharded", "zero3"),
                          # what a stage was used in place of is not the stage (MoE Parallel Folding's
                          # TP+EP+DP baseline: "use ZeRO-1 instead of ZeRO-3", read as ZeRO-3: -73 %)
                          ('ZeRO-1 (text: TP+EP+DP "use ZeRO-1 instead of ZeRO-3")', "zero1"),
                          ("distributed optimizer rather than FSDP", "zero1"),
                          ("ZeRO stage 1 in place of ZeRO stage 3", "zero1")):
        assert published.sharding_of({"zero_or_fsdp": raw}, "other", "", notes) == expected, raw
    text, dims = published.model_block({"layers": 96, "hidden": 18432, "heads": 96, "kv_heads": 8, "vocab": 256000,
                                        "seq_len": 4096, "ffn": 73728, "arch": "Nemotron-4: squared ReLU, RoPE, GQA"},
                                       notes)
    assert not dims.swiglu and "activation gelu" in text and "position rope" in text
    _, bloom = published.model_block({"layers": 70, "hidden": 14336, "heads": 112, "vocab": 250880, "seq_len": 2048,
                                      "arch": "BLOOM: ALiBi, GeLU"}, notes)
    assert not bloom.learned_positions
    with pytest.raises(published.Unusable, match="top-k"):
        published.model_block({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq_len": 16, "experts": 8,
                                "moe_ffn": 32}, notes)


def test_throughput_in_other_units(published):
    d = llama(published)
    conv = published.CONVENTIONS["palm_mfu"]
    per_seq = conv.model(d)
    by_ms = published.reported_tflops({"step_time_ms": 2000}, conv, "palm_mfu", d, 64, 32, 989, "none")
    by_samples = published.reported_tflops({"samples_per_s": 32}, conv, "palm_mfu", d, 64, 32, 989, "none")
    assert by_ms[0] == pytest.approx(per_seq * 64 / 2 / 32 / 1e12)
    assert by_samples[0] == pytest.approx(by_ms[0])


def test_unstated_recomputation_is_the_least_that_fits(cases):
    """A run that ran fitted in memory: Llama 3 70B, FSDP over 64 GB200, micro-batch 2 at 8K does
    not fit without recomputation as Megatron-LM keeps activations (with FlashAttention), so the
    row is predicted with the fewest fully recomputed layers that fit."""
    from parc import memory
    from parc.pipeline import compile_text

    run = cases[0]["gb200_fsdp_recompute_unstated"].row
    found = re.search(r"recompute full (\d+)", run.spec)
    assert found and any("the least that fits in memory" in a for a in run.assumptions)
    n = int(found.group(1))

    def fits(mode):
        plan = compile_text(run.spec.replace(f"recompute full {n}", f"recompute {mode}"), path="x.par").plan
        return memory.estimate(plan, "megatron-flash").fits

    assert fits(f"full {n}") and not fits(f"full {n - 1}") and not fits("selective") and not fits("none")
    stated = cases[0]["gb200_llama405b_bridge"].row  # "recompute: full" is kept as written
    assert "recompute full\n" in stated.spec


@pytest.mark.parametrize("hardware, lines", [
    ({"note": "Grand Teton, 500W power cap, HBM2e (2.4 TB/s)"}, ["power-limit 500 W", "hbm-bandwidth 2.4 TB/s"]),
    ({"note": "8x400Gb/s, power limit 450 W"}, ["power-limit 450 W"]),
    ({"note": "GPUs capped at 600 W"}, ["power-limit 600 W"]),
    ({"note": "2.4 TB/s HBM"}, ["hbm-bandwidth 2.4 TB/s"]),
    ({"power_limit_w": 500, "hbm_bandwidth_tbps": 2.4}, ["power-limit 500 W", "hbm-bandwidth 2.4 TB/s"]),
    ({"note": "Selene DGX A100, 8x200Gb/s HDR IB per node"}, []),
    ({"note": "NVLink 900 GB/s, IB 8x50 GB/s per node"}, []),  # bandwidth, but not memory's
])
def test_power_limits_and_hbm_bandwidth_reach_the_spec(published, hardware, lines):
    """A row that states a power cap or its HBM bandwidth (fields, or words of its note) says so
    in its spec's hardware block, which the compiler derates (parc.power): no benchmark-side
    correction. The block compiles."""
    from parc.pipeline import compile_text

    notes = []
    assert published.power_and_memory(hardware, notes) == lines
    assert len(notes) == len(lines)
    block, _, _, _ = published.hardware_block({"gpu": "H100 SXM", "num_gpus": 8, **hardware}, "bf16", [])
    for line in lines:
        assert line in block
    text = f"job r\ndp 8 on nodes(8 gpus, nvlink)\nmodel llama3-8b\n{block}\ntrain {{ seq 8192, global-batch 8 }}\n"
    plan = compile_text(text, path="r.par", checks=False).plan
    assert plan is not None
    assert (plan.cluster.power_limit is not None) == any(x.startswith("power-limit") for x in lines)
    assert (plan.cluster.hbm_bandwidth is not None) == any(x.startswith("hbm-bandwidth") for x in lines)


def test_moe_rows_fold_ep_as_megatron_core_does_and_run_the_dispatcher_they_state(fidelity):
    """The ModelZoo's Qwen3-235B rows state expert tensor parallelism 1: Megatron-Core's expert
    mesh then takes the tp ranks first, so "EP 8" with tp 2 stays inside a node (the table's
    "intra-node EP") and "EP 32" spans tp 2 x dp 16. The long-context rows' "forced balance"
    figures ran Megatron-Core's `--moe-router-force-load-balancing`, random logits per token
    (`moe_utils.RandomSTE`): a random router, charged the random router's floor like every other
    row, never `Software.balanced_routing` (an exactly even load). Rows that state DeepEP's dispatcher run it
    (`Software.ep_dispatcher`), the "+1f1b overlap" row overlaps its all-to-alls
    (`Software.ep_overlap`), and no MoE row is fitted (out-of-sample checks), with the reason."""
    rows, _ = fidelity.load_rows()
    moe = {r.id: r for r in rows if r.group == "megatron_moe_modelzoo_qwen3"}
    assert len(moe) == 13  # pp 32 x vp 3 over 94 layers read with empty ends (test_two_layers_short_...)
    # the long-context table's "forced balance" figures: a random router, stated and noted
    forced = [r for r in moe.values() if r.id.endswith("forced_balance")]
    assert len(forced) == 4 and all(any("RandomSTE" in n for n in r.assumptions) for r in forced)
    assert not any(r.software.balanced_routing or r.software.routing_load for r in moe.values())
    # the long-context rows' expert tp 1 is in the repository's Qwen3-235B-A22B.yaml at the same
    # commit: their ep 8 groups too take the tp ranks first and stay in one node
    assert "ep 8 over tp x cp x dp" in moe["modelzoo_qwen3_235b_longctx_32k_cp2_dropless"].spec
    assert fidelity.prepare(moe["modelzoo_qwen3_235b_longctx_128k_cp8_dropless"]).geometry.ep.local == 8
    assert "ep 8 over tp x dp" in moe["modelzoo_qwen3_235b_intranode_ep8_deepep_tp4"].spec
    assert "ep 32 over tp x dp" in moe["modelzoo_qwen3_235b_crossnode_ep32_deepep"].spec
    deepseek = next(r for r in rows if r.id == "deepseek_v3_pretraining_2048xH800")
    assert "ep 64 over dp" in deepseek.spec and "dualpipe-v" in deepseek.spec
    assert deepseek.software.ep_node_limit == 4  # "node-limited routing (at most 4 nodes per token)"
    assert all(r.software.ep_node_limit == 0 for r in moe.values())
    # 180K H800 GPU hours per trillion tokens: 1e12 / (180e3 x 3600) = 1,543 tokens/s per GPU
    assert deepseek.reported_from == "reported GPU hours per trillion tokens"
    for r in [*moe.values(), deepseek]:
        assert not r.fitted
        assert any(a.startswith("not fitted: a mixture-of-experts row") for a in r.assumptions), r.id
        assert r.software.ep_dispatcher == ("all-to-all" if "_a2a_" in r.id else "deepep"), r.id  # "dispatcher A2A"
        assert r.software.ep_overlap == r.id.endswith("1f1b_overlap"), r.id


def test_nemo_long_sequence_rows_read_as_published(fidelity):
    """NeMo's long-sequence table (Llama 2 7B, FP8, H100): each row's layout, sequence and GPUs as
    the table prints them, fp8 under Transformer Engine, cp through TE's ring, and partial (never
    in the GEMM fit: micro-batch and recomputation unstated)."""
    rows, _ = fidelity.load_rows()
    nemo = {r.id: r for r in rows if r.group == "nemo_long_sequence_h100"}
    assert len(nemo) == 9
    last = nemo["nemo2403_llama2_7b_fp8_1024k"]
    layout = last.plan.layout
    assert (layout.degree("tp"), layout.degree("cp"), layout.degree("dp"), layout.degree("pp")) == (8, 32, 4, 1)
    assert last.plan.training.seq_len == 1024 * 1024 and last.gpus == 1024
    assert last.plan.training.precision == "fp8" and last.software.fp8 == "linear"
    assert last.software.context_parallel == "te" and last.software.fp8_scaling == "delayed"
    assert not any(r.fitted for r in nemo.values())


def test_megatron_cores_flop_count_reproduces_bridges_published_tflops(published):
    """Megatron-Bridge prints Megatron-Core's own model TFLOP/s (`num_floating_point_operations`,
    causal) beside tokens/s: the convention's count (MLA's latent projections and core, the
    multi-token-prediction layer, projection and head included) times the published tokens must
    give the published TFLOP/s. gpt-oss is left out: Bridge counts its experts and window its own
    way (megatron_bridge_releases_moe.yaml's header)."""
    checked = {"mla": 0, "other": 0}
    for name in ("megatron_bridge_releases_moe.yaml", "megatron_bridge_releases.yaml", "megatron_bridge_25_11.yaml"):
        for entry in load_yaml((ROOT / "benchmarks" / "data" / name).read_text()):
            reported = entry["outcomes"]["reported"]
            if "bridge_model_tflops_per_gpu" not in reported or "gpt_oss" in entry["id"]:
                continue
            _, dims = published.model_block(published.read_recipe(entry)["model"], [])
            ours = published.megatron_core(dims, causal=True) / dims.seq * reported["tokens_per_s_per_gpu"] / 1e12
            mla = dims.kv_lora > 0
            assert ours == pytest.approx(reported["bridge_model_tflops_per_gpu"], rel=0.005 if mla else 0.03), entry["id"]
            checked["mla" if mla else "other"] += 1
    assert checked["mla"] >= 15 and checked["other"] >= 60


def test_a_torchtitan_row_recomputes_every_layer_or_none(published):
    """The least recomputation that fits, for a row that states none: torchtitan has no `full N`
    (E0612), so a torchtitan run that does not fit selectively recomputes every layer; a Megatron
    run of the same shape takes the fewest layers that fit."""
    from parc.pipeline import compile_text

    spec = ("job t\ndp 8 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\nTARGET\n"
            "train { seq 8192, global-batch 64, micro-batch 2, recompute none }\ndp { sharding zero3 }\n")

    def least(target: str):
        text = spec.replace("TARGET", target)
        plan = compile_text(text, path="t.par").plan
        return published.least_recompute_that_fits(text, plan, "torch", lambda t: compile_text(t, path="t.par"))[0]

    assert least("target torchtitan") == "full"
    megatron = least("target megatron")
    assert megatron.startswith("full ") and int(megatron.split()[1]) < 32


@pytest.mark.parametrize(("words", "causal"), [
    ("Eos cluster, DGX H100; PyTorch 2.5.0, CUDA 12.6", False),  # MoE Parallel Folding (2025), run on 2024's stack
    ("NeMo container 24.09", False),
    ("Megatron-Core v0.9", False),
    ("PyTorch 2.7.0, CUDA 12.8", True),
    ("NeMo container 25.04", True),
])
def test_a_2025_source_on_software_older_than_megatron_cores_causal_count_is_read_non_causal(published, words, causal):
    """Megatron-Core counted attention causally from 2025-03-06 (commit 8873b55d6a; core_r0.12.0):
    a source dated 2025 whose runs name older software (PyTorch 2.5 or older, a 2023-2024
    container, Megatron-Core v0.11 or older) reports in the non-causal count."""
    entry = {"flop_convention": "megatron_core_model_flops",
             "source": {"title": "A paper (arXiv 2504.00000, 2025)", "primary_evidence": [words]}}
    assert published.convention_of(entry)[1].label.endswith("causal)") is causal
