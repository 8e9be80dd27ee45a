"""torch's async TP (torchtitan's `tp-overlap all`, `Software.tp_overlap` "forward"): each of the
forward's tensor-parallel collectives hides under its own GEMM, the backward's stay exposed. By
hand on one layer, and against torchtitan's published async-TP gains (never fitted)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from parc import timing
from parc.calibration import DEFAULT

ROOT = Path(__file__).resolve().parents[1]


def test_async_tp_hides_the_forward_collectives_only():
    """A layer under sequence parallelism on tp 8 inside a node: two all-gathers and two
    reduce-scatters of S each way, each (n - 1)/n S over the ring plus (n - 1) steps, each beside
    its own GEMM (TE's and torch's pairs, written out here: forward the all-gathers before QKV
    and FC1, the reduce-scatters after the output projection and FC2; backward the output
    gradients' all-gathers before the projection's and FC2's input-gradient GEMMs, the input
    gradients' reduce-scatters beside QKV's and FC1's weight-gradient GEMMs). Forward: what
    outlasts each call's own GEMM (torch's copy engines hold no SM); backward: all of it."""
    hw = timing.Hardware("hopper", 989e12, 1979e12, 3.35e12, intra=450e9, nic=50e9, level=8)
    tp = timing.link(timing.Group(8, 8), hw, DEFAULT)
    none = timing.link(timing.Group(1, 1), hw, DEFAULT)
    size = 512e6
    call = 7 / 8 * size / (450e9 * DEFAULT.bus_nvlink) + 7 * DEFAULT.latency_intra
    # every GEMM shorter than a call; then the attention's two short, the FFN's two long
    for qkv, proj, up, down in ((0.25e-3,) * 4, (0.1e-3, 0.2e-3, 20e-3, 20e-3)):
        pairs = (("forward", "all_gather", qkv), ("forward", "reduce_scatter", proj),
                 ("forward", "all_gather", up), ("forward", "reduce_scatter", down),
                 ("backward", "all_gather", proj), ("backward", "all_gather", down),
                 ("backward", "reduce_scatter", qkv), ("backward", "reduce_scatter", up))
        work = timing.Work(gemm=qkv + proj + up + down, tp_bytes=size, tp_gather=(4, 4), tp_gemms=pairs)
        calls = timing.tp_calls("dense", True, 8, work)
        x = timing.exposed(work, tp, none, none, False, "forward", DEFAULT, calls)
        assert x.tp_f == pytest.approx(sum(max(0.0, call - g) for g in (qkv, proj, up, down)), rel=1e-9)
        assert x.tp_b == pytest.approx(4 * call, rel=1e-9)
        # Megatron-Core's overlap on TE's userbuffers: the backward hides too, but its transfers
        # hold SMs (the all-gathers by ring exchange on 1 SM, the reduce-scatters on 16, of 132)
        everything = timing.exposed(work, tp, none, none, False, "all", DEFAULT, calls)
        gathers = sum(max(call - g, call / 132) for g in (proj, down))
        scatters = sum(max(call - g, call * 16 / 132) for g in (qkv, up))
        assert everything.tp_b == pytest.approx(gathers + scatters, rel=1e-9)


PUBLISHED_GAINS = {
    # torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md: async / vanilla tokens per second
    ("llama3_70b_256xH100_tp8_bf16_2025", "llama3_70b_256xH100_tp8_bf16_2025_async"): 652.4 / 597.3,
    ("llama3_70b_256xH100_tp8_fp8_2025", "llama3_70b_256xH100_tp8_fp8_2025_async"): 942.4 / 809.8,
    ("llama3_8b_64xH100_tp8_bf16_2025", "llama3_8b_64xH100_tp8_bf16_2025_async"): 4809.4 / 4378,
    ("llama3_8b_64xH100_tp8_fp8_2025", "llama3_8b_64xH100_tp8_fp8_2025_async"): 5570.1 / 5078.1,
}


def test_async_tp_gains_are_torchtitans_published_ones():
    """Each async-TP row's predicted gain over its synchronous twin (same spec but the overlap)
    within 0.07 of the published 1.09-1.16. Hiding the backward's collectives too (`all`, TE's
    userbuffers, which also charges their SM shares) on the 70B Float8 row: TE's backward pairs
    are the forward's mirror images (`initialize_ub`'s method table: the output gradients'
    all-gathers beside the projection's and FC2's input-gradient GEMMs, the input gradients'
    reduce-scatters beside QKV's and FC1's weight-gradient GEMMs), the same four calls of the same
    bytes beside the same four GEMMs' times, so the backward can hide no more than one forward
    hides, and the forward's hiding is what the async twin gained (its step's saving D, over one
    or more forward passes). The what-if gains more than the async row and at most
    step_sync / (step_sync - 2 D), never more than twice the forward's hiding."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    runs = {r.id: r for r in fidelity.EAGER_RUNS}
    assert PUBLISHED_GAINS
    for (sync, overlapped), published in PUBLISHED_GAINS.items():
        plain = timing.predict(fidelity.eager_plans(runs[sync])[0]).tokens_per_second_per_gpu
        plan = fidelity.eager_plans(runs[overlapped])[0]
        fast = timing.predict(plan).tokens_per_second_per_gpu
        assert fast / plain == pytest.approx(published, abs=0.07), (overlapped, fast / plain)
    plan = fidelity.eager_plans(runs["llama3_70b_256xH100_tp8_fp8_2025_async"])[0]
    from dataclasses import replace

    from parc.targets import software_of

    sw = replace(software_of(plan), tp_overlap="all")
    plain = timing.predict(fidelity.eager_plans(runs["llama3_70b_256xH100_tp8_fp8_2025"])[0])
    forward = timing.predict(plan)
    both = timing.predict(plan, sw=sw)
    saved = plain.breakdown.step - forward.breakdown.step  # D: the forward's hiding
    assert saved > 0
    gain = both.tokens_per_second_per_gpu / plain.tokens_per_second_per_gpu
    assert forward.tokens_per_second_per_gpu / plain.tokens_per_second_per_gpu < gain
    assert gain <= plain.breakdown.step / (plain.breakdown.step - 2 * saved)
    # with the async gain at most the published 942.4 / 809.8 + 0.07 (above), the same bound in
    # torchtitan's measured terms
    r = 942.4 / 809.8 + 0.07
    assert gain <= 1 / (2 / r - 1)
