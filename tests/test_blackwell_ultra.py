"""Blackwell Ultra in the catalogue (issue 14): the B300 (DGX / HGX B300) and the GB300 in an NVL72
rack, the parts Megatron-Bridge's tables publish beside GB200 since 25.11.

Checked against the datasheets' own figures, not the catalogue's arithmetic: the rack and system
totals divided by their GPUs, the 800 Gb/s ConnectX-8 NICs in bytes, the exponential rate NVIDIA
quotes per GPU (10.7 TeraExponentials/s on Blackwell Ultra, 5 on Blackwell) against the one the
model derives from the dense BF16 peak, and the reader's reading of a table's "DGX-GB300"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from parc import kernels, power, timing
from parc.catalog import gpus
from parc.pipeline import compile_text

from .conftest import load_yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

SPEC = """job q
dp 8 on nodes(GPUS gpus)
model llama3-8b
hardware { gpu GPU }
train { seq 4096, global-batch 64, micro-batch 1, precision fp8 }
"""


def plan_on(gpu: str, per_node: int):
    return compile_text(SPEC.replace("GPUS", str(per_node)).replace("GPU", gpu), path="q.par", checks=False).plan


def test_the_datasheets_totals_per_gpu():
    gb300, b300 = gpus.GPUS["gb300-nvl72"], gpus.GPUS["b300"]
    # GB300 NVL72: 360 PFLOPS FP8 dense, 20.7 TB HBM3e, 576 TB/s over 72 GPUs; 72 ConnectX-8 at 800 Gb/s
    assert gb300["fp8_flops"] == pytest.approx(360e15 / 72) and gb300["bf16_flops"] == pytest.approx(180e15 / 72)
    assert gb300["hbm_bytes"] == pytest.approx(20.7e12 / 72, rel=0.002)
    assert timing.HBM_BANDWIDTH["gb300-nvl72"] == pytest.approx(576e12 / 72)
    assert gb300["nics"] / gb300["gpus_per_node"] == 1 and gb300["nic_bandwidth"] == 100e9
    assert gb300["nvlink_domain"] == 72 and gb300["gpus_per_node"] == 4
    # DGX B300: 72 PFLOPS FP8 (sparse) and 2.3 TB over 8 GPUs; 8 ConnectX-8 at 800 Gb/s
    assert b300["fp8_flops"] == pytest.approx(72e15 / 8 / 2) and b300["bf16_flops"] == pytest.approx(2250e12)
    assert b300["hbm_bytes"] == pytest.approx(2.3e12 / 8, rel=0.002)
    assert b300["nics"] == 8 and b300["nic_bandwidth"] == 100e9
    assert power.BOARD_POWER["gb300-nvl72"] == 1400 and power.BOARD_POWER["b300"] == 1100
    assert gpus.ALIASES["gb300"] == "gb300-nvl72" and gpus.ALIASES["b300-sxm"] == "b300"


@pytest.mark.parametrize("gpu, quoted", [("gb200-nvl72", 5e12), ("gb300-nvl72", 10.7e12),
                                         ("b300", 10.7e12 * 2250 / 2500)])
def test_the_exponential_rate_is_the_one_nvidia_quotes(gpu, quoted):
    """The model derives the exponential unit's rate from the dense BF16 peak (16 per SM and
    clock, 8,192 BF16 FLOPs per SM and clock) times the part's `EXP_SCALE`; NVIDIA quotes it per
    GPU (10.7 for Blackwell Ultra, at GB300's clock: a B300, whose BF16 peak is quoted at 2,250
    of GB300's 2,500, runs its units at that clock's share). Within 10 %."""
    hw = timing.hardware_of(plan_on(gpu, gpus.GPUS[gpu]["gpus_per_node"]))
    assert kernels.exp_rate(hw.bf16, hw.generation, hw.exp_scale) == pytest.approx(quoted, rel=0.1)
    # twice the floor's speed on Blackwell Ultra: half the seconds for the same score entries
    if gpu != "gb200-nvl72":
        assert hw.exp_scale == pytest.approx(2.14)
        assert kernels.exp_seconds(1e12, hw.bf16, hw.generation, hw.exp_scale) == pytest.approx(
            kernels.exp_seconds(1e12, hw.bf16, hw.generation) / 2.14)


def test_gb300_defaults_to_its_rack_wide_nvlink_domain():
    plan = compile_text(SPEC.replace("on nodes(GPUS gpus)", "").replace("dp 8", "dp 144 on nodes(4 gpus)")
                        .replace("GPU", "gb300"), path="q.par", checks=False).plan
    assert plan.cluster.gpu.name == "gb300-nvl72"
    assert plan.cluster.domain_size == 72 and plan.cluster.gpus_per_node == 4
    hw = timing.hardware_of(plan)
    assert hw.level == 72 and hw.nic == pytest.approx(100e9)
    b300 = plan_on("b300", 8)
    assert b300.cluster.domain_size == 8 and timing.hardware_of(b300).nic == pytest.approx(100e9)


def test_the_reader_reads_a_table_s_blackwell_ultra_systems():
    import published

    assert published.gpu_key("GB300", 288) == "gb300-nvl72"
    assert published.gpu_key("DGX-GB300", None) == "gb300-nvl72"
    assert published.gpu_key("B300", 288) == "b300"
    assert published.gpu_key("DGX-B300", None) == "b300"
    entry = {"id": "gb300_row", "source": {"title": "t"},
             "model": {"name": "Llama 3 8B", "layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32,
                       "kv_heads": 8, "vocab": 128256, "seq_len": 8192},
             "hardware": {"gpu": "GB300", "num_gpus": 8, "gpus_per_node": 4},
             "layout": {"tp": 1, "pp": 1, "dp": 8, "cp": 1, "micro_batch": 1, "global_batch": 128,
                        "precision": "FP8-MX"},
             "outcomes": {"reported": {"tflops_per_gpu": 1800}}, "flop_convention": "megatron_core_model_flops"}
    run = published.row_spec(entry)
    assert isinstance(run, published.Run), run
    assert "gpu gb300-nvl72" in run.spec and "gpus, nvl72)" in run.spec


BLACKWELL_ULTRA = ROOT / "benchmarks" / "data" / "megatron_bridge_blackwell_ultra.yaml"


def test_the_transcribed_rows_agree_with_their_own_tflops():
    """Each Megatron-Bridge GB300 / B300 row prints tokens/s and Megatron-Core's model TFLOP/s:
    the convention's count (`published.megatron_core`, causal, MLA and MTP included) times the
    tokens must give the TFLOP/s (gpt-oss left out: Bridge counts it its own way), so a mistyped
    cell or model shows. Every row reads: none is left out."""
    import published

    entries = load_yaml(BLACKWELL_ULTRA.read_text())
    systems = {"GB300": 0, "B300": 0}
    for entry in entries:
        run = published.row_spec(entry)
        assert isinstance(run, published.Run), (entry["id"], getattr(run, "reason", None))
        systems[entry["hardware"]["gpu"]] += 1
        reported = entry["outcomes"]["reported"]
        if "gpt_oss" in entry["id"]:
            continue
        _, dims = published.model_block(published.read_recipe(entry)["model"], [])
        ours = published.megatron_core(dims, causal=True) / dims.seq * reported["tokens_per_s_per_gpu"] / 1e12
        assert ours == pytest.approx(reported["bridge_model_tflops_per_gpu"], rel=0.015), entry["id"]
    assert systems["GB300"] >= 45 and systems["B300"] >= 15
    # the reader places them on the Blackwell Ultra entries, GB300 in its rack
    gb300 = published.row_spec(next(e for e in entries if e["hardware"]["gpu"] == "GB300"))
    assert "gpu gb300-nvl72" in gb300.spec and "gpus, nvl72)" in gb300.spec
