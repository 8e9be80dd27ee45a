"""In-network reduction: `hardware { nvls on }` (NVLink SHARP) and `sharp on` (InfiniBand SHARP).

parc never assumes it; where the hardware block states it, an all-reduce may reduce in the
switches. Each check compares with figures written here from the physics and NCCL's own tuner
constants (`src/graph/tuning.cc`), not with what the code under test returns:

- NVLS inside one node: each GPU sends its S bytes into the NVSwitch once and reads the sum back,
  at NCCL's `nvlsEfficiency` (Hopper 0.85) of the ring's bus bandwidth, plus its 25 us latency;
- SHARP across nodes: the NIC carries S / k (k GPUs per node) at 0.85 of its bus bandwidth,
  beside the node's own NVLink reduce-scatter and all-gather, plus 31 us and NCCL's arity term;
- reduce-scatters and all-gathers are unchanged (a rank still receives (n - 1)/n of the tensor);
- the ledger's link bytes, the bound every prediction respects, count the fewer bytes;
- the generated launchers set NCCL_NVLS_ENABLE and NCCL_COLLNET_ENABLE as the spec states.
"""

from __future__ import annotations

import pytest
from parc import timing
from parc.backends.torch import launchers
from parc.calibration import DEFAULT
from parc.catalog import gpus
from parc.ledger import Collective
from parc.pipeline import compile_text

H100_NVLINK = 450e9  # bytes/s one direction per GPU (NVLink 4, 18 links)
NIC = 400e9 / 8  # one 400 Gb/s NIC per GPU
BUS_NVLINK, BUS_NETWORK = 0.8, 0.92  # calibration.DEFAULT's fixed bus efficiencies
NVLS_HOPPER, SHARP = 0.85, 0.85  # NCCL's nvlsEfficiency (Hopper) and CollNet factor (sm90+)
GB = 1e9


def _link(size: int, local: int, nvls: bool = False, sharp: bool = False, generation: str = "hopper"):
    hw = timing.Hardware(generation=generation, bf16=989e12, fp8=1979e12, hbm=3.35e12, intra=H100_NVLINK,
                         nic=NIC, level=8, nvls=nvls, sharp=sharp)
    group = timing.Group(size=size, local=local)
    return timing.link(group, hw, DEFAULT)


def test_the_constants_are_nccls():
    """NCCL's tuner (`src/graph/tuning.cc`): nvlsEfficiency {0, 0, 0.85, 0.74} (Volta, Ampere,
    Hopper, Blackwell); hwLatencies NVLINK NVLS Simple 25, NET NVLS Simple 18, NET CollNetDirect
    Simple 31, NET Tree Simple 14 (one GPU a node), NVLINK CollNetDirect Simple 3.7 us; CollNet
    Direct's 0.4 us arity term and its x0.85 from sm90; `src/enqueue.cc`: CollNet only up to
    NCCL_MAX_DIRECT_ARITY + 1 = 8 local ranks."""
    assert timing.NVLS_EFFICIENCY == {"hopper": NVLS_HOPPER, "blackwell": 0.74}
    # the generations the time model charges NVLS on are the ones E0373 and the job README accept
    assert tuple(timing.NVLS_EFFICIENCY) == gpus.NVLS_GENERATIONS
    assert timing.SHARP_EFFICIENCY == SHARP
    assert (timing.NVLS_LATENCY, timing.NVLS_NET_LATENCY) == (25e-6, 18e-6)
    assert (timing.SHARP_LATENCY, timing.SHARP_ONE_LATENCY, timing.SHARP_HOP_LATENCY) == (31e-6, 14e-6, 3.7e-6)
    assert (timing.SHARP_ARITY_LATENCY, timing.COLLNET_MAX_LOCAL) == (0.4e-6, 8)
    assert (DEFAULT.bus_nvlink, DEFAULT.bus_network) == (BUS_NVLINK, BUS_NETWORK)


def test_nvls_moves_each_gpus_shard_through_the_switch():
    """8 GPUs: each reads its 1/8 of the sum from all 8 copies through the switch and writes it
    back for the multicast: 9/8 of the buffer each way, against a ring's 2 x 7/8."""
    size = 8 * GB
    ring = 2 * 7 / 8 * size / (H100_NVLINK * BUS_NVLINK) + 14 * 1e-6  # 14 steps at latency_intra
    nvls = 9 / 8 * size / (NVLS_HOPPER * H100_NVLINK * BUS_NVLINK) + 25e-6
    assert _link(8, 8).all_reduce(size) == pytest.approx(ring, rel=1e-9)  # off: the ring
    assert _link(8, 8, nvls=True).all_reduce(size) == pytest.approx(nvls, rel=1e-9)
    assert ring / nvls == pytest.approx(1.75 * 0.85 / 1.125, rel=1e-3)  # 1.32x: the doc's figure


def test_two_gpus_keep_the_ring():
    """A ring of two sends the buffer once; NVLS would move 3/2 of it: never chosen."""
    assert _link(2, 2, nvls=True).all_reduce(8 * GB) == _link(2, 2).all_reduce(8 * GB)


def test_small_calls_stay_on_the_ring():
    """NVLS's 25 us cost more than a ring's few steps: NCCL's tuner keeps small calls on the ring."""
    small = 64e3
    assert _link(8, 8, nvls=True).all_reduce(small) == _link(8, 8).all_reduce(small)


def test_nvls_needs_a_generation_whose_switch_reduces():
    assert _link(8, 8, nvls=True, generation="ampere").all_reduce(8 * GB) == _link(8, 8).all_reduce(8 * GB)
    blackwell = 9 / 8 * 8 * GB / (0.74 * H100_NVLINK * BUS_NVLINK) + 25e-6
    assert _link(8, 8, nvls=True, generation="blackwell").all_reduce(8 * GB) == pytest.approx(blackwell, rel=1e-9)


def test_sharp_halves_the_nic_bytes_of_one_gpu_per_node():
    """dp over 16 nodes, one GPU each (tp 8 inside the node): the ring's NIC carries 2 (N-1)/N S,
    SHARP S once (NCCL's tree latency with one GPU a node)."""
    size = 4 * GB
    sharp = size / (SHARP * NIC * BUS_NETWORK) + 14e-6
    ring = 2 * 15 / 16 * size / (NIC * BUS_NETWORK)
    assert _link(16, 1, sharp=True).all_reduce(size) == pytest.approx(sharp, rel=1e-9)
    assert _link(16, 1).all_reduce(size) == pytest.approx(ring, rel=1e-2)
    assert _link(16, 1).all_reduce(size) / _link(16, 1, sharp=True).all_reduce(size) == pytest.approx(
        2 * 15 / 16 * SHARP, rel=1e-3)


def test_with_eight_gpus_per_node_the_nvlink_exchange_sets_the_pace():
    """128 ranks, 8 per node: each NIC carries S / 8, while NVLink carries the node's
    reduce-scatter and all-gather, 2 x 7/8 S, the longer part; with NVLS too, NCCL's NVLS across
    nodes moves 9/8 S through the switch instead, faster still."""
    size = 4 * GB
    inner = 2 * 7 / 8 * size / (H100_NVLINK * BUS_NVLINK)
    outer = size / 8 / (SHARP * NIC * BUS_NETWORK)
    assert inner > outer
    latency = 31e-6 + 2 * (3.7e-6 + 7 * 0.4e-6)  # CollNet Direct: the tree, one NVLink hop, 7 ranks' arity
    assert _link(128, 8, sharp=True).all_reduce(size) == pytest.approx(inner + latency, rel=1e-9)
    through_switch = 9 / 8 * size / (NVLS_HOPPER * H100_NVLINK * BUS_NVLINK)
    assert through_switch > outer
    both = _link(128, 8, nvls=True, sharp=True)
    assert both.all_reduce(size) == pytest.approx(through_switch + 25e-6 + 18e-6, rel=1e-9)


def test_a_rack_of_72_reduces_across_racks_only_through_nvls():
    """NCCL runs CollNet for at most 8 GPUs a node: two NVL72 racks reduce over SHARP only with
    NVLS (NCCL's NVLS algorithm across nodes)."""
    size = 4 * GB
    rack = dict(size=144, local=72, generation="blackwell")
    assert _link(**rack, sharp=True).all_reduce(size) == _link(**rack).all_reduce(size)
    outer = size / 72 / (SHARP * NIC * BUS_NETWORK)
    inner = 73 / 72 * size / (0.74 * H100_NVLINK * BUS_NVLINK)
    assert _link(**rack, nvls=True, sharp=True).all_reduce(size) == pytest.approx(
        max(inner, outer) + 43e-6, rel=1e-9)


SHAPES = [(n, k) for n in (2, 4, 8, 16, 32, 64, 128, 144, 512, 1152) for k in (1, 2, 4, 8, 72) if k <= n and n % k == 0]


@pytest.mark.parametrize(("n", "k"), SHAPES)
def test_turning_in_network_reduction_on_never_slows_an_all_reduce(n, k):
    assert len(SHAPES) > 30
    for generation in ("hopper", "blackwell"):
        for size in (1e3, 1e6, 64e6, 4 * GB):
            off = _link(n, k, generation=generation).all_reduce(size)
            nvls = _link(n, k, nvls=True, generation=generation).all_reduce(size)
            sharp = _link(n, k, sharp=True, generation=generation).all_reduce(size)
            both = _link(n, k, nvls=True, sharp=True, generation=generation).all_reduce(size)
            assert nvls <= off and sharp <= off and both <= min(nvls, sharp), (n, k, generation, size)


def test_gathers_and_scatters_are_unchanged():
    """NCCL's NVLS and CollNet reduce-scatters and all-gathers gain no bandwidth: parc keeps the ring."""
    for n, k in ((128, 8), (8, 8), (16, 1)):
        on, off = _link(n, k, nvls=True, sharp=True), _link(n, k)
        for kind in ("all_gather", "reduce_scatter"):
            call = Collective("dp", kind, 4 * GB, 1, n, k, "backward")
            assert timing.collective_seconds(call, on) == timing.collective_seconds(call, off) > 0
            assert call.link_bytes((True, True)) == call.link_bytes()


def test_link_bytes_count_the_fewer_bytes():
    inside = Collective("dp", "all_reduce", 8.0, 1, 8, 8, "last_backward")
    assert inside.link_bytes() == (2 * 7 / 8 * 8, 0.0)
    assert inside.link_bytes((True, False)) == (9.0, 0.0)
    across = Collective("dp", "all_reduce", 8.0, 1, 128, 8, "last_backward")
    assert across.link_bytes() == (2 * 7 / 8 * 8, 2 * 15 / 16 * 8 / 8)
    assert across.link_bytes((True, True)) == (9.0, 1.0)
    two = Collective("dp", "all_reduce", 8.0, 1, 2, 2, "last_backward")
    assert two.link_bytes((True, False)) == (8.0, 0.0)  # a ring of two moves fewer than NVLS's 3/2


SPEC = """job reduce
{layout} on nodes(8 gpus, nvlink)
model {model}
hardware {{
  gpu h100-sxm
  network 8 x {rate} Gb/s
  {reduction}
}}
train {{
  seq 4096
  global-batch {batch}
  micro-batch 1
  recompute full
}}
dp {{
  sharding {sharding}
}}
{tp}"""


SMALL = ("{ layers 16, hidden 2048, ffn 5632, heads 16, kv-heads 16, vocab 32000, activation swiglu, "
         "norm rmsnorm, position rope, tied-embeddings off }")
"""About 1B parameters: its gradients' all-reduce over a slow NIC outlasts its computation."""


def _spec(reduction: str = "", layout: str = "tp 8 x dp 16", model: str = "llama3-8b", sharding: str = "none",
          sp: str = "off", rate: int = 400, batch: int = 16) -> str:
    tp = f"tp {{\n  sequence-parallel {sp}\n}}\n" if "tp" in layout else ""
    return SPEC.format(layout=layout, model=model, reduction=reduction, sharding=sharding, rate=rate, batch=batch,
                       tp=tp)


def _plan(reduction: str = "", layout: str = "tp 8 x dp 16", model: str = "llama3-8b", sharding: str = "none",
          sp: str = "off", rate: int = 400, batch: int = 16):
    result = compile_text(_spec(reduction, layout, model, sharding, sp, rate, batch), "reduce.par")
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert not errors, [d.message for d in errors]
    return result.plan


def test_nvls_shortens_the_tensor_parallel_all_reduces():
    off, on = timing.predict(_plan()), timing.predict(_plan("nvls on"))
    assert on.breakdown.exposed["tp"] < 0.9 * off.breakdown.exposed["tp"]
    assert on.breakdown.compute == off.breakdown.compute
    assert on.step_seconds < off.step_seconds


def test_under_sequence_parallelism_nvls_changes_nothing():
    """tp's collectives are all-gathers and reduce-scatters then, which NVLS does not speed up."""
    off, on = timing.predict(_plan(sp="on")), timing.predict(_plan("nvls on", sp="on"))
    assert on.step_seconds == off.step_seconds


def test_sharp_shortens_a_comm_bound_data_parallel_step_and_stays_above_the_nic():
    """A 1B model's gradients all-reduced over 16 nodes on a 25 Gb/s NIC per GPU: the step is
    the all-reduce. SHARP cuts it, and the step stays above the NIC's time for the bytes SHARP
    sends (each GPU its 1/8 of the gradients, once), but below a ring's."""
    args = dict(layout="dp 128", model=SMALL, rate=25, batch=128)
    off, on = timing.predict(_plan(**args)), timing.predict(_plan("sharp on", **args))
    assert on.breakdown.exposed["dp"] < off.breakdown.exposed["dp"]
    plan = _plan("sharp on", **args)
    grads = 4 * plan.model.parameters  # fp32 gradients, one all-reduce per step
    nic = 25e9 / 8
    ring_floor = 2 * 15 / 16 * grads / 8 / nic
    assert grads / 8 / nic <= on.step_seconds < ring_floor  # faster than any ring could be
    assert off.step_seconds >= ring_floor


def test_the_plan_carries_it_only_where_stated():
    plan = _plan("nvls on, sharp on")
    assert plan.cluster.nvls and plan.cluster.sharp
    assert not _plan().cluster.nvls and not _plan().cluster.sharp
    assert _plan("nvls off, sharp off").cluster.nvls is False and _plan().cluster.nvls is None


def test_explain_json_and_text_name_it(tmp_path):
    from .conftest import run_cli

    spec = tmp_path / "reduce.par"
    spec.write_text(_spec("nvls on\n  sharp on"))
    import json

    report = json.loads(run_cli("explain", str(spec), "--format", "json").stdout)
    assert report["in_network_reduction"] == ["nvls", "sharp"]
    text = run_cli("explain", str(spec)).stdout
    assert "NVLink SHARP inside each NVLink domain; InfiniBand SHARP across nodes" in text
    spec.write_text(_spec())
    assert json.loads(run_cli("explain", str(spec), "--format", "json").stdout)["in_network_reduction"] == []


def _env(plan) -> dict[str, str]:
    return dict(launchers.job_shape(plan).env)


def test_the_launchers_set_nccls_switches_as_the_spec_states():
    assert _env(_plan()) == {}  # unstated: NCCL's own defaults
    assert _env(_plan("nvls on")) == {"NCCL_NVLS_ENABLE": "1"}
    assert _env(_plan("nvls off")) == {"NCCL_NVLS_ENABLE": "0"}
    assert _env(_plan("sharp on")) == {"NCCL_COLLNET_ENABLE": "1"}
    assert _env(_plan("nvls off, sharp off")) == {"NCCL_NVLS_ENABLE": "0", "NCCL_COLLNET_ENABLE": "0"}
    files = launchers.files(_plan("nvls on, sharp on"))
    for name in ("launch/torchrun.sh", "launch/slurm.sbatch"):
        assert "export NCCL_NVLS_ENABLE=1\n" in files[name] and "export NCCL_COLLNET_ENABLE=1\n" in files[name]
    assert "NCCL_NVLS_ENABLE=1" in files["README.md"] and "nccl-rdma-sharp-plugins" in files["README.md"]


def test_the_readme_advises_nvls_only_where_the_switches_reduce():
    assert "`hardware { nvls on }`" in launchers.files(_plan())["README.md"]  # HGX H100, unstated
    for gpu, node in (("a100-80gb", "8 gpus, nvlink"), ("h100-sxm", "8 gpus, pcie"), ("h100-sxm", "4 gpus, nvlink"),
                      ("mi300x", "8 gpus, xgmi")):
        four = node.startswith("4")
        text = _spec(layout="tp 4 x dp 32" if four else "tp 8 x dp 16", batch=32 if four else 16)
        text = text.replace("gpu h100-sxm", f"gpu {gpu}").replace("8 gpus, nvlink", node)
        result = compile_text(text, "reduce.par")
        assert result.plan is not None and not [d for d in result.diagnostics if d.severity == "error"], gpu
        readme = launchers.files(result.plan)["README.md"]
        assert "In-network reduction" not in readme and "NCCL_NVLS_ENABLE" not in readme, (gpu, node)


def test_the_spec_environment_comes_after_and_wins():
    text = _spec("nvls on") + 'launch {\n  env NCCL_NVLS_ENABLE "0"\n}\n'
    plan = compile_text(text, "reduce.par").plan
    assert launchers.job_shape(plan).env == (("NCCL_NVLS_ENABLE", "0"),)


def test_nvls_needs_an_nvswitch_of_8_gpus():
    text = _spec("nvls on", layout="tp 4 x dp 32", batch=32).replace("8 gpus, nvlink", "4 gpus, nvlink")
    result = compile_text(text, "reduce.par")
    [error] = [d for d in result.diagnostics if d.severity == "error"]
    assert error.code == "E0373" and "4-GPU NVLink domain" in error.message and error.help
