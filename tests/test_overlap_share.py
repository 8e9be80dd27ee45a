"""Overlapped communication is not free (issue 14, point 3): a transfer holds its kernels' share
of the SMs while it runs and the computation beside it runs on the rest. The rule on closed
forms and against a step-by-step simulation of the shared GPU, and each overlap site (tp forward
and backward under each runtime, the cp ring, torch's cp, ep by NCCL and by DeepEP, the dp
windows) shown to read its share: raising the constant it cites moves its exposure by exactly
what the rule says."""

from __future__ import annotations

import pytest
from parc import kernels, timing
from parc.calibration import DEFAULT

HW = timing.Hardware("hopper", 989e12, 1979e12, 3.35e12, intra=450e9, nic=50e9, level=8)
SMS = 132


def simulated(compute: float, transfers: list[tuple[float, float]], steps: int = 200_000) -> float:
    """Seconds until both the computation and the transfers are done, stepping time: the
    transfers run one after another at their own pace; while one runs the computation advances
    at 1 - its share of full speed, after them at full speed."""
    total = compute + sum(t for t, _ in transfers)
    dt = total / steps
    left, now = compute, 0.0
    queue = [list(t) for t in transfers]
    while left > 1e-15 or queue:
        share = queue[0][1] if queue else 0.0
        if queue:
            queue[0][0] -= dt
            if queue[0][0] <= 1e-15:
                queue.pop(0)
        left = max(0.0, left - (1.0 - share) * dt)
        now += dt
    return now


@pytest.mark.parametrize(("w", "t", "s", "exposed"), [
    (10.0, 4.0, 0.25, 1.0),  # long computation: the transfer's SMs show, s T
    (2.0, 4.0, 0.25, 2.0),   # the computation finishes on the rest inside T: T - W
    (3.5, 4.0, 0.25, 1.0),   # 3 of 3.5 done during T, 0.5 after: W + s T = 4.5
    (3.0, 4.0, 0.25, 1.0),   # exactly (1 - s) T: both forms agree
    (5.0, 4.0, 0.0, 0.0),    # copy engines: free overlap
    (0.0, 4.0, 0.25, 4.0),   # nothing to hide under
    (5.0, 0.0, 0.25, 0.0),   # nothing to hide
])
def test_the_rule_on_closed_forms(w, t, s, exposed):
    assert kernels.overlap_exposed(w, t, s * t) == pytest.approx(exposed, rel=1e-12, abs=1e-12)


def test_the_rule_against_a_simulated_shared_gpu():
    """Two transfers of different shares (TE's ring exchange on 1 SM, a pipeline on 16) beside
    computation of several lengths: the closed form with the summed share-seconds equals the
    step-by-step simulation."""
    transfers = [(3e-3, 1 / SMS), (2e-3, 16 / SMS)]
    checked = 0
    for w in (1e-3, 4.5e-3, 4.9e-3, 6e-3, 20e-3):
        t = sum(x for x, _ in transfers)
        occupied = sum(x * s for x, s in transfers)
        rule = w + kernels.overlap_exposed(w, t, occupied)
        assert rule == pytest.approx(simulated(w, transfers), rel=2e-4), w
        checked += 1
    assert checked == 5


def test_the_shares_are_the_sources_figures():
    """Typed from the sources each constant cites: NCCL's 16 channels (one CTA, one SM each) on
    an 8-GPU NVLink node; TE's userbuffers defaults (`num_sm` 1 for ring exchange on the copy
    engines, 16 for pipeline and bulk); torch's async TP on copy engines; DeepEP's 20."""
    assert (kernels.NCCL_SMS, kernels.UB_RING_EXCHANGE_SMS, kernels.UB_KERNEL_SMS) == (16, 1, 16)
    assert (kernels.TORCH_ASYNC_TP_SMS, kernels.DEEPEP_SMS) == (0, 20)
    assert timing.link(timing.Group(8, 8), HW, DEFAULT).sm_share == pytest.approx(16 / 132)
    assert kernels.sm_share(200, 132) == 1.0 and kernels.sm_share(16, 0) == 0.0


def _with(monkeypatch, **constants) -> None:
    for name, value in constants.items():
        monkeypatch.setattr(kernels, name, value)
    timing.clear_caches()


def _tp_case(mode: str, gemm: float):
    tp = timing.link(timing.Group(8, 8), HW, DEFAULT)
    none = timing.link(timing.Group(1, 1), HW, DEFAULT)
    # two tp-split blocks (attention, FFN), each GEMM a quarter of the layer's
    work = timing.Work(gemm=gemm, tp_bytes=256e6, tp_gather=(4, 4),
                       tp_gemms=timing.tp_partners([(gemm / 4, gemm / 4)] * 2, True))
    calls = timing.tp_calls("dense", True, 8, work)
    call = timing.collective_seconds(timing.Collective("tp", "all_gather", 256e6, 1, 8, 8, "path", 1, "forward"), tp)
    return timing.exposed(work, tp, none, none, False, mode, DEFAULT, calls), call


@pytest.mark.parametrize(("mode", "patched", "phase", "gather_sms", "scatter_sms"), [
    ("all", {"UB_RING_EXCHANGE_SMS": 33, "UB_KERNEL_SMS": 66}, "tp_f", 33, 66),
    ("all", {"UB_RING_EXCHANGE_SMS": 33, "UB_KERNEL_SMS": 66}, "tp_b", 33, 66),
    ("backward", {"NCCL_SMS": 66}, "tp_b", None, 66),
    ("forward", {"TORCH_ASYNC_TP_SMS": 66}, "tp_f", 66, 66),
])
def test_each_tp_overlap_reads_its_runtimes_share(monkeypatch, mode, patched, phase, gather_sms, scatter_sms):
    """A layer under sp on tp 8 (two all-gathers, two reduce-scatters each way), each call beside
    its own GEMM longer than the call: the exposed seconds are the share-seconds, by the
    runtime's own constant; raising that constant raises them as the rule says. Megatron-LM's
    backward overlap pairs only the reduce-scatters (`gather_sms` None): its output gradients'
    all-gathers wait whole."""
    gemm = 50e-3
    before, call = _tp_case(mode, gemm)
    assert call > 0
    _with(monkeypatch, **patched)
    after, _ = _tp_case(mode, gemm)
    gathers = 2 * call if gather_sms is None else 2 * call * gather_sms / SMS
    assert getattr(after, phase) == pytest.approx(gathers + 2 * call * scatter_sms / SMS, rel=1e-9)
    assert getattr(after, phase) > getattr(before, phase)
    timing.clear_caches()


def test_megatrons_default_tp_overlap_holds_nccls_sms_in_the_backward_only():
    """Megatron-LM's asynchronous input-gradient reduction ("backward"): the backward's two
    reduce-scatters of column-parallel input gradients hide under their weight-gradient GEMMs at
    NCCL's share, its two all-gathers of output gradients wait whole (synchronous before the
    row-parallel input-gradient GEMM); the forward's calls wait whole."""
    x, call = _tp_case("backward", 50e-3)
    assert x.tp_b == pytest.approx(2 * call + 2 * call * 16 / SMS, rel=1e-9)
    assert x.tp_f == pytest.approx(4 * call, rel=1e-9)


def _cp_case(runtime: str, flavour: str):
    cp = timing.link(timing.Group(4, 4), HW, DEFAULT)
    none = timing.link(timing.Group(1, 1), HW, DEFAULT)
    block = 64e6
    bytes_ = (block, block) if runtime == "torch" else (block, 2 * block)
    work = timing.Work(gemm=1e-3, attention_f=40e-3, attention_b=100e-3, cp_flavour=flavour, cp_bytes=bytes_,
                       cp_runtime=runtime)
    return timing.exposed(work, none, cp, none, False, "none", DEFAULT), cp, block


@pytest.mark.parametrize("runtime", ["parc", "torch"])
def test_the_cp_ring_reads_nccls_share(monkeypatch, runtime):
    """cp 4 ring, each step's block transfer well under one step of attention (10 ms forward,
    25 ms backward): each hidden shift shows NCCL's share of its seconds; the last dK/dV
    shift home shows whole. Hand-computed per runtime's calls."""
    _with(monkeypatch, NCCL_SMS=66)
    x, cp, block = _cp_case(runtime, "ring")
    shift = block / cp.ring + cp.latency
    dkv = 2 * block / cp.ring + cp.latency
    assert shift < 10e-3
    share = 66 / SMS
    if runtime == "torch":  # forward K/V shifts; backward a K/V and a dK/dV shift per step, then dK/dV home
        assert x.cp_f == pytest.approx(3 * share * shift, rel=1e-9)
        assert x.cp_b == pytest.approx(3 * share * (shift + dkv) + dkv, rel=1e-9)
    else:  # TE's ring: K/V shifts forward; backward K/V with dK/dV (one call of 2 blocks), then a shift home
        assert x.cp_f == pytest.approx(3 * share * shift, rel=1e-9)
        assert x.cp_b == pytest.approx(3 * share * dkv + shift, rel=1e-9)
    timing.clear_caches()


@pytest.mark.parametrize("dispatcher", ["all-to-all", "deepep"])
def test_the_ep_overlap_reads_its_dispatchers_share(monkeypatch, dispatcher):
    """ep 8 all-to-alls overlapped with the other micro-batch's computation (much longer): the
    exposed time is the dispatcher's share of their seconds (NCCL's for the all-to-all,
    DeepEP's kernels' for DeepEP)."""
    _with(monkeypatch, NCCL_SMS=66, DEEPEP_SMS=44)
    ep = timing.link(timing.Group(8, 8), HW, DEFAULT)
    none = timing.link(timing.Group(1, 1), HW, DEFAULT)
    payload = 64e6
    deepep = dispatcher == "deepep"
    work = timing.Work(gemm=50e-3, moe_again=20e-3, ep_bytes=payload, moe=True,
                       ep_fanout=(64, 8, 0) if deepep else (0, 0, 0),
                       ep_sm_share=kernels.sm_share(kernels.DEEPEP_SMS, SMS) if deepep else 0.0)
    x = timing.exposed(work, none, none, ep, True, "none", DEFAULT)
    busy = sum(r.count * timing.collective_seconds(r, ep) for r in x.collectives if r.axis == "ep")
    assert busy > 0
    share = (44 if deepep else 66) / SMS
    assert x.ep_f + x.ep_b == pytest.approx(share * busy, rel=1e-9)
    timing.clear_caches()


def test_each_all_to_all_hides_only_under_its_partner_block():
    """Megatron-Core's 1F1B all-to-all overlap pairs each of a MoE layer's four all-to-alls with
    one block of the other micro-batch (`schedule_layer_1f1b`): backward combine / forward
    attention, forward dispatch / backward expert MLP, backward dispatch / forward expert MLP,
    forward combine / backward attention. By hand, for a layer whose forward is 10 ms of
    attention and 2 ms of expert MLP (so 4 ms of expert MLP backward and 20 ms of attention
    backward) and all-to-alls of 5 ms each, no SM share: the expert MLP's forward and backward are
    shorter than their transfers, by 3 and 1 ms, though the layer's computation (36 ms) outlasts
    all four (20 ms)."""
    work = timing.Work(gemm=4e-3, attention_f=8e-3, moe_again=2e-3, memory_b=12e-3, attention_b=4e-3, moe=True)
    assert work.forward == pytest.approx(12e-3) and work.backward_input + work.backward_weight == pytest.approx(24e-3)
    assert timing.paired_ep_exposed(work, 10e-3, 10e-3, 0.0) == pytest.approx(4e-3, rel=1e-9)
    # with a share s each pair shows at least s T (0.2 x 5 ms = 1 ms): 3 ms beside the forward's
    # expert MLP, 1 ms beside each of the other three
    assert timing.paired_ep_exposed(work, 10e-3, 10e-3, 0.2) == pytest.approx(3e-3 + 3 * 1e-3, rel=1e-9)
    # the whole layer's computation against the four together would have hidden them all
    assert kernels.overlap_exposed(36e-3, 20e-3, 0.0) == 0.0


def test_the_dp_windows_read_nccls_share(monkeypatch):
    """One reduce-scatter of t seconds once per step under a backward of 3 t on 8 nodes: hidden,
    it shows NCCL's share of t, by `NCCL_SMS`."""
    hw = timing.Hardware("hopper", 989e12, None, 3.35e12, intra=450e9, nic=50e9, level=8)
    for sms in (16, 66):
        _with(monkeypatch, NCCL_SMS=sms)
        lk = timing.link(timing.Group(64, 8), hw, DEFAULT)
        ledger = (timing.Collective("dp", "reduce_scatter", 4e9, 1, 64, 8, "last_backward"),)
        t = timing.collective_seconds(ledger[0], lk)
        exposed, _ = timing._dp_exposed(ledger, 1, t, 3 * t, timing.DpLinks(lk, lk, lk, lk))
        assert exposed == pytest.approx(sms / SMS * t, rel=1e-9)
    timing.clear_caches()
