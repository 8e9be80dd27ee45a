"""FSDP's per-unit collectives as a two-stage pipeline (`timing.fsdp_fill`), checked against an
event-by-event simulation of the streams written here: a compute stream running the units in
order and one communication stream taking calls in the order they are issued (prefetch depth 1:
the next unit's gather is issued when a unit's computation starts; a unit's reduce-scatter when
its backward ends)."""

from __future__ import annotations

import pytest
from parc import timing


def simulate_forward(units: int, gather: float, work: float) -> float:
    """Exposed seconds of one forward: total time minus the computation."""
    gather_done, compute_done = gather, 0.0
    for _ in range(units):
        start = max(compute_done, gather_done)
        gather_done = max(gather_done, start) + gather  # the next unit's, issued now
        compute_done = start + work
    return compute_done - units * work


def simulate_backward(units: int, gather: float, reduce: float, work: float) -> float:
    """Exposed seconds of one backward: gathers one unit ahead and reduce-scatters after each
    unit's gradients, all on one link in issue order."""
    link_free = gather
    gathered = [gather] + [0.0] * units
    compute_done = reduced = 0.0
    for i in range(units):
        start = max(compute_done, gathered[i])
        if i + 1 < units:
            link_free = max(link_free, start) + gather
            gathered[i + 1] = link_free
        compute_done = start + work
        link_free = reduced = max(link_free, compute_done) + reduce
    return max(compute_done, reduced) - units * work


def charged(units: int, comm: float, work: float) -> float:
    """What `_dp_exposed` charges one micro-batch's window: the excess plus the fill."""
    busy, length = units * comm, units * work
    return max(0.0, busy - length) + timing.fsdp_fill(busy, length, units)


CASES = [(40, 1.0, 5.0), (40, 5.0, 1.0), (40, 3.0, 3.0), (10, 2.0, 1.0), (1, 2.0, 3.0), (97, 0.2, 0.21)]


@pytest.mark.parametrize("units, gather, work", CASES)
def test_forward_fill_equals_the_simulated_pipeline(units, gather, work):
    assert charged(units, gather, work) == pytest.approx(simulate_forward(units, gather, work), rel=1e-12)


@pytest.mark.parametrize("units, gather, reduce, work", [(40, 1.0, 2.0, 10.0), (40, 2.0, 2.0, 4.0), (25, 0.3, 0.6, 1.0),
                                                         (40, 3.0, 6.0, 5.0), (24, 0.5, 1.0, 1.2)])
def test_backward_fill_against_the_simulated_pipeline(units, gather, reduce, work):
    """Exact while the link keeps up (the first gather and the last reduce-scatter show); when it
    does not, never below the simulation and above it by less than one unit's calls."""
    sim = simulate_backward(units, gather, reduce, work)
    got = charged(units, gather + reduce, work)
    if gather + reduce <= work:
        assert got == pytest.approx(sim, rel=1e-12)
        assert got == pytest.approx(gather + reduce)
    else:
        assert sim - 1e-9 <= got <= sim + min(gather, reduce) + 1e-9


def test_no_per_unit_calls_no_fill():
    assert timing.fsdp_fill(1.0, 2.0, 0) == 0.0
    assert timing.fsdp_fill(0.0, 2.0, 40) == 0.0


def simulate_post_step_gathers(buckets: int, gather: float, work: float) -> float:
    """zero1's all-gathers of the updated parameters (Megatron-Core's overlap_param_gather, as
    parallel.py runs them): all issued on one link after the step, in bucket order; bucket k's
    forward waits for its gather (a forward pre-hook) and for bucket k - 1's forward. Exposed
    seconds of the first forward."""
    compute_done = 0.0
    for k in range(buckets):
        compute_done = max(compute_done, (k + 1) * gather) + work
    return compute_done - buckets * work


@pytest.mark.parametrize("buckets, gather, work", [(3, 1.0, 5.0), (3, 5.0, 1.0), (8, 2.0, 2.0), (1, 2.0, 3.0),
                                                   (40, 0.2, 0.21)])
def test_post_step_gathers_expose_the_first_bucket_and_the_excess(buckets, gather, work):
    """`_dp_exposed` on a ledger of `buckets` post-step all-gathers under one forward of
    `buckets` x `work` seconds equals the simulation: the first bucket's gather when the link
    keeps up (which hid nothing before the job waited for the gathers in the forward: all of it
    was charged as hidden), the excess plus one forward share when it does not."""
    from parc.ledger import Collective

    link = timing.Link(size=2, ring=1.0, near=1.0, far=0.0, local=2, latency=0.0)
    payload = gather * 2 / (2 - 1) * link.ring  # all_gather(payload) = (n - 1) / n x payload / ring
    assert link.all_gather(payload) == pytest.approx(gather)
    ledger = (Collective("dp", "all_gather", payload, buckets, 2, 2, "after_step"),)
    exposed, _ = timing._dp_exposed(ledger, 1, buckets * work, 10.0 * buckets * work,
                                    timing.DpLinks(link, link, link, link))
    assert exposed == pytest.approx(simulate_post_step_gathers(buckets, gather, work), rel=1e-12)
    assert exposed > 0
