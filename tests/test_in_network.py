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
    assert timing.NVLS_EFFICIENCY == {"hopper": NVLS_HOPPER, "blackwell": 0.74}
    assert timing.SHARP_EFFICIENCY == SHARP
    assert (timing.NVLS_LATENCY, timing.SHARP_LATENCY, timing.SHARP_ARITY_LATENCY) == (25e-6, 31e-6, 0.4e-6)
    assert (DEFAULT.bus_nvlink, DEFAULT.bus_network) == (BUS_NVLINK, BUS_NETWORK)


def test_nvls_sends_the_buffer_once_inside_a_node():
    size = 8 * GB
    ring = 2 * 7 / 8 * size / (H100_NVLINK * BUS_NVLINK)
    nvls = size / (NVLS_HOPPER * H100_NVLINK * BUS_NVLINK) + 25e-6
    assert _link(8, 8).all_reduce(size) == pytest.approx(ring, rel=1e-3)  # off: the ring
    assert _link(8, 8, nvls=True).all_reduce(size) == pytest.approx(nvls, rel=1e-9)
    assert ring / nvls == pytest.approx(1.75 * 0.85, rel=1e-3)  # 1.49x: the doc's figure


def test_small_calls_stay_on_the_ring():
    """NVLS's 25 us cost more than a ring's few steps: NCCL's tuner keeps small calls on the ring."""
    small = 64e3
    assert _link(8, 8, nvls=True).all_reduce(small) == _link(8, 8).all_reduce(small)


def test_nvls_needs_a_generation_whose_switch_reduces():
    assert _link(8, 8, nvls=True, generation="ampere").all_reduce(8 * GB) == _link(8, 8).all_reduce(8 * GB)


def test_sharp_halves_the_nic_bytes_of_one_gpu_per_node():
    """dp over 16 nodes, one GPU each (tp 8 inside the node): the ring's NIC carries 2 (N-1)/N S,
    SHARP S once."""
    size = 4 * GB
    sharp = size / (SHARP * NIC * BUS_NETWORK) + 31e-6
    ring = 2 * 15 / 16 * size / (NIC * BUS_NETWORK)
    assert _link(16, 1, sharp=True).all_reduce(size) == pytest.approx(sharp, rel=1e-9)
    assert _link(16, 1).all_reduce(size) == pytest.approx(ring, rel=1e-2)
    assert _link(16, 1).all_reduce(size) / _link(16, 1, sharp=True).all_reduce(size) == pytest.approx(
        2 * 15 / 16 * SHARP, rel=1e-3)


def test_with_eight_gpus_per_node_the_nvlink_exchange_sets_the_pace():
    """128 ranks, 8 per node: each NIC carries S / 8, while NVLink carries the node's
    reduce-scatter and all-gather, 2 x 7/8 S, the longer part; with NVLS too, S through the switch."""
    size = 4 * GB
    inner = 2 * 7 / 8 * size / (H100_NVLINK * BUS_NVLINK)
    outer = size / 8 / (SHARP * NIC * BUS_NETWORK)
    assert inner > outer
    latency = 31e-6 + 2 * (1e-6 + 7 * 0.4e-6)  # one NVLink step (latency_intra) and the arity term
    assert _link(128, 8, sharp=True).sharp_all_reduce(size) == pytest.approx(inner + latency, rel=1e-9)
    through_switch = size / (NVLS_HOPPER * H100_NVLINK * BUS_NVLINK)
    both = _link(128, 8, nvls=True, sharp=True)
    assert both.sharp_all_reduce(size) == pytest.approx(max(through_switch, outer) + latency, rel=1e-9)
    assert both.all_reduce(size) <= _link(128, 8).all_reduce(size)


def test_gathers_and_scatters_are_unchanged():
    on, off = _link(128, 8, nvls=True, sharp=True), _link(128, 8)
    assert on.all_gather(4 * GB) == off.all_gather(4 * GB)
    inside_on, inside_off = _link(8, 8, nvls=True), _link(8, 8)
    assert inside_on.all_gather(4 * GB) == inside_off.all_gather(4 * GB)


def test_link_bytes_count_the_fewer_bytes():
    inside = Collective("dp", "all_reduce", 8.0, 1, 8, 8, "last_backward")
    assert inside.link_bytes() == (2 * 7 / 8 * 8, 0.0)
    assert inside.link_bytes((True, False)) == (8.0, 0.0)
    across = Collective("dp", "all_reduce", 8.0, 1, 128, 8, "last_backward")
    assert across.link_bytes() == (2 * 7 / 8 * 8, 2 * 15 / 16 * 8 / 8)
    assert across.link_bytes((True, True)) == (8.0, 1.0)
    two = Collective("dp", "all_reduce", 8.0, 1, 2, 2, "last_backward")
    assert two.link_bytes((True, False)) == (8.0, 0.0)  # a ring of two already sends S once
    gather = Collective("dp", "all_gather", 8.0, 1, 128, 8, "forward")
    assert gather.link_bytes((True, True)) == gather.link_bytes()


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
    assert on.breakdown.exposed["tp"] < 0.8 * off.breakdown.exposed["tp"]
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
    assert not _plan("nvls off, sharp off").cluster.nvls


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


def test_the_launchers_set_ncclS_switches_as_the_spec_states():
    assert _env(_plan()) == {"NCCL_NVLS_ENABLE": "0"}
    assert _env(_plan("nvls on")) == {"NCCL_NVLS_ENABLE": "1"}
    assert _env(_plan("sharp on")) == {"NCCL_NVLS_ENABLE": "0", "NCCL_COLLNET_ENABLE": "1"}
    files = launchers.files(_plan("nvls on, sharp on"))
    for name in ("launch/torchrun.sh", "launch/slurm.sbatch"):
        assert "export NCCL_NVLS_ENABLE=1\n" in files[name] and "export NCCL_COLLNET_ENABLE=1\n" in files[name]
    assert "NCCL_NVLS_ENABLE=1" in files["README.md"] and "nccl-rdma-sharp-plugins" in files["README.md"]


def test_the_spec_environment_comes_after_and_wins():
    text = _spec("nvls on") + 'launch {\n  env NCCL_NVLS_ENABLE "0"\n}\n'
    plan = compile_text(text, "reduce.par").plan
    assert launchers.job_shape(plan).env == (("NCCL_NVLS_ENABLE", "0"),)
