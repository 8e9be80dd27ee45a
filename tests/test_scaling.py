"""Throughput against GPU count (issue 14): a runtime that reduces its gradients after the whole
forward-backward (`Software.dp_overlap` False), the public check's reading of the runtimes that do,
and the series of published runs benchmarks/scaling_check.py takes apart (docs/time-model.md,
"Throughput against GPU count")."""

from __future__ import annotations

import dataclasses
import importlib
import math
import statistics
import sys

import pytest
from parc import timing
from parc.ledger import Collective

from .conftest import ROOT


def _load(name):
    """A benchmarks/ module (the one already loaded, if another test loaded it)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


# One GPU per node in each of 4 nodes, its 25 GB/s NIC share at 0.92 of line rate, 5 us a step.
LINK = timing.Link(size=4, ring=23e9, near=240e9, far=23e9, local=1, latency=5e-6, step_near=1e-6)
LINKS = timing.DpLinks(LINK, LINK, LINK, LINK)
GRADIENTS = 1e9  # bytes of fp32 gradients one rank all-reduces once per step
# A ring all-reduce by hand: 2 (n - 1) / n of the buffer over the ring, 2 (n - 1) steps, each
# crossing a node boundary: 1.5 x 1e9 / 23e9 + 6 x 5 us.
RING_BY_HAND = 0.06521739130434782 + 30e-6


def ddp_ledger(calls: int = 1) -> tuple[Collective, ...]:
    return (Collective("dp", "all_reduce", GRADIENTS / calls, calls, 4, 1, "last_backward"),)


def test_the_hand_ring_is_the_links_all_reduce():
    assert timing.collective_seconds(ddp_ledger()[0], LINK) == pytest.approx(RING_BY_HAND, rel=1e-12)


@pytest.mark.parametrize("backward", [0.0, 0.01, 0.05, 0.2])
def test_a_reduction_after_the_forward_backward_is_charged_whole(backward):
    """Overlapped, the last micro-batch's backward hides what it can of the all-reduce; after the
    forward-backward (Megatron-LM before --overlap-grad-reduce) nothing does."""
    hidden, _ = timing._dp_exposed(ddp_ledger(), 8, 0.1, backward, LINKS)
    whole, _ = timing._dp_exposed(ddp_ledger(), 8, 0.1, backward, LINKS, (0.0, 0.0), ("last_backward", "after_step"))
    assert hidden == pytest.approx(max(0.0, RING_BY_HAND - backward), rel=1e-9, abs=1e-15)
    assert whole == pytest.approx(RING_BY_HAND, rel=1e-9)


def test_the_post_step_gather_is_charged_whole_too():
    """The distributed optimizer's gather after its step (zero1 in Megatron-LM's contract) waits
    for nothing to hide under when the runtime runs it before the next forward-backward starts."""
    ledger = (Collective("dp", "reduce_scatter", GRADIENTS, 1, 4, 1, "last_backward"),
              Collective("dp", "all_gather", GRADIENTS / 2, 1, 4, 1, "after_step"))
    # each (n - 1) / n of its tensor over the ring, n - 1 crossing steps
    by_hand = 0.75 * GRADIENTS / 23e9 + 3 * 5e-6 + 0.75 * GRADIENTS / 2 / 23e9 + 3 * 5e-6
    whole, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINKS, (0.0, 0.0), ("last_backward", "after_step"))
    hidden, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINKS)
    assert whole == pytest.approx(by_hand, rel=1e-9)
    # overlapped, the reduce-scatter hides under the last backward and the single post-step
    # gather shows whole (no earlier bucket's forward to hide under: `fsdp_fill`)
    assert hidden == pytest.approx(0.75 * GRADIENTS / 2 / 23e9 + 3 * 5e-6, rel=1e-9)


def test_per_micro_batch_windows_still_hide():
    """Only the once-per-step calls move: zero2's per-micro-batch reductions (none in the runtimes
    read so) keep their windows."""
    ledger = (Collective("dp", "reduce_scatter", GRADIENTS, 8, 4, 1, "backward"),)
    a, _ = timing._dp_exposed(ledger, 8, 1.0, 1.0, LINKS)
    b, _ = timing._dp_exposed(ledger, 8, 1.0, 1.0, LINKS, (0.0, 0.0), ("last_backward", "after_step"))
    assert a == b


def test_torch_pipelining_reduces_after_each_stages_last_backward():
    """torch.distributed.pipelining (parc's job and torchtitan under pp) puts one REDUCE_GRAD per
    stage in each rank's order right after that stage's last backward (`_add_reduce_grad`), where FSDP's post-backward
    issues the stage's reduce-scatters and makes the compute stream wait for them: under 1F1B it
    is each rank's last action, with no computation of that rank after it. The time model charges
    that reduction whole under pp (`timing.serial_windows`), and hides it under the last
    micro-batch's backward without pp."""
    from torch.distributed.pipelining.schedules import (
        REDUCE_GRAD,
        Schedule1F1B,
        ScheduleInterleaved1F1B,
        _add_reduce_grad,
        _ComputationType,
    )

    class Stage:  # what the schedules' constructors read of a stage
        def __init__(self, index, stages):
            self.stage_index, self.num_stages, self.group_size, self.group_rank = index, stages, 2, index % 2

    computations = (_ComputationType.FORWARD, _ComputationType.BACKWARD_INPUT, _ComputationType.FULL_BACKWARD,
                    _ComputationType.BACKWARD_WEIGHT)
    for schedule, per_rank in ((Schedule1F1B, 1), (ScheduleInterleaved1F1B, 2)):
        for rank in range(2):
            stages = [Stage(rank + 2 * c, 2 * per_rank) for c in range(per_rank)]
            built = schedule(stages[0] if per_rank == 1 else stages, n_microbatches=4)
            actions = [a for a in built.pipeline_order[rank] if a is not None]
            if not any(a.computation_type == REDUCE_GRAD for a in actions):  # a multi-stage schedule's
                actions = _add_reduce_grad(actions, 4)  # compute-only order, lowered as `_load_actions` does
            reduces = [i for i, a in enumerate(actions) if a.computation_type == REDUCE_GRAD]
            assert len(reduces) == per_rank, actions
            for i in reduces:
                stage = actions[i].stage_index
                backward = [j for j, a in enumerate(actions) if a.stage_index == stage
                            and a.computation_type in computations[1:]]
                assert backward and i == backward[-1] + 1  # right after the stage's last backward
            if per_rank == 1:
                assert not [a for a in actions[reduces[0] + 1:] if a.computation_type in computations]
    ledger = (Collective("dp", "reduce_scatter", GRADIENTS, 1, 4, 1, "last_backward"),)
    by_hand = 0.75 * GRADIENTS / 23e9 + 3 * 5e-6
    megatron = dataclasses.replace(timing.PARC, dp_runtime="megatron")
    assert timing.serial_windows(timing.PARC, 4) == ("last_backward",)
    assert timing.serial_windows(timing.PARC, 1) == timing.serial_windows(megatron, 4) == ()
    assert timing.serial_windows(dataclasses.replace(timing.PARC, pp_reduce_waits=False), 4) == ()
    piped, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINKS, (0.0, 0.0), timing.serial_windows(timing.PARC, 4))
    alone, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINKS, (0.0, 0.0), timing.serial_windows(timing.PARC, 1))
    assert piped == pytest.approx(by_hand, rel=1e-9) and alone < 0.1 * by_hand


@pytest.fixture(scope="module")
def public_rows():
    fidelity = _load("fidelity")
    rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / "published_public.yaml")
    calibration, _ = fidelity.load_rows(fidelity.PUBLISHED)
    return {r.id: r for r in rows + calibration}


AFTER_THE_STEP = {
    # MegaScale's baseline: Megatron-LM 285068c8 (2023-01-11), before --overlap-grad-reduce
    *(f"megascale_megatron_175b_{n}gpu" for n in (256, 512, 768, 1024, 3072, 6144, 8192, 12288)),
    *(f"megascale_megatron_530b_{n}gpu" for n in (2240, 4480, 11200)),
    # Megatron-DeepSpeed under pipelining: DeepSpeed's pipeline engine
    "mtnlg_530b_2240gpu", "mtnlg_530b_2800gpu", "mtnlg_530b_3360gpu", "bloom_176b_384gpu_tp4_pp12_dp8",
}


def test_the_contract_keeps_the_window_and_the_check_reads_the_code(public_rows):
    """Every row is evaluated with the contract's window (the fit's reading); the public check's
    second reading charges the whole reduction for exactly the rows whose stated runtime reduces
    after the forward-backward (docs/time-model.md says why it is not the fit's reading)."""
    public_check = _load("public_check")
    assert public_rows
    assert all(r.software.dp_overlap for r in public_rows.values())
    after = public_check.after_step_variants()
    assert after
    assert {v.match for v in after} == AFTER_THE_STEP
    assert all(v.exact and v.substitutions == () and dict(v.software) == {"dp_overlap": False} for v in after)
    # an exact match: no other row of the file takes a row's reading
    assert all(sum(v.selects(i) for i in public_rows) == 1 for v in after)


@pytest.mark.parametrize(("runtime", "pp", "after"), [
    ({"name": "Megatron-LM", "commit": "285068c8", "date": "2023-01-11"}, 8, True),
    ({"name": "Megatron-LM", "date": "2023-08-15"}, 1, True),
    ({"name": "Megatron-LM", "date": "2023-08-16"}, 8, False),  # the day --overlap-grad-reduce arrived
    ({"name": "Megatron-LM", "date": "2022"}, 8, True),
    ({"name": "Megatron-LM", "date": "2023"}, 8, False),  # a year that holds the day decides nothing
    ({"name": "Megatron-LM", "date": "2023-07"}, 8, True),
    ({"name": "Megatron-LM", "date": "2023-08"}, 8, False),
    ({"name": "Megatron-LM", "date": None}, 8, False),
    ({"name": "Megatron-DeepSpeed", "date": "2021"}, 35, True),
    ({"name": "Megatron-DeepSpeed (BigScience fork)", "date": "2024"}, 12, True),  # the engine, at any date
    ({"name": "Megatron-DeepSpeed", "date": "2021"}, 1, False),  # no pipeline engine without pipelining
    ({"name": "MegaScale", "date": "2024-02"}, 8, False),
    ({"name": "torchtitan", "date": "2022"}, 8, False),
    (None, 8, False),
])
def test_who_reduces_after_the_step_is_read_from_the_rows_facts(runtime, pp, after):
    public_check = _load("public_check")
    entry = {"id": "x", "layout": {"pp": pp}, **({"runtime": runtime} if runtime else {})}
    assert (public_check.reduces_after_step(entry) is not None) == after


def test_the_baseline_pays_its_reduction_whole(public_rows):
    """On a MegaScale baseline row the change is what the last backward used to hide: more dp
    seconds, by at most that backward's length."""
    import dataclasses

    fidelity = _load("fidelity")
    row = public_rows["megascale_megatron_175b_12288gpu"]
    prepared = fidelity.prepare(row)
    before = fidelity.predicted_step(row, prepared, fidelity.DEFAULT)
    after = fidelity.predicted_step(dataclasses.replace(row, software=dataclasses.replace(row.software,
                                                                                            dp_overlap=False)),
                                    prepared, fidelity.DEFAULT)
    _, steps = timing.rank_steps(prepared.shape, prepared.knobs, prepared.hardware, prepared.geometry,
                                 fidelity.DEFAULT, row.software)
    backward = max(s.times.backward_input + s.times.backward_weight + s.times.recompute for s in steps.values())
    assert 0 < after.exposed["dp"] - before.exposed["dp"] <= backward + 1e-9


@pytest.mark.slow
def test_the_series_and_what_the_doc_says_of_them():
    """Every series has its rows; the MegaScale baseline's gap is about the same seconds from 4 to
    192 data-parallel ranks (the doc's reading), and the dp collectives' ring latency is
    milliseconds there, not seconds."""
    scaling = _load("scaling_check")
    points = scaling.series_points()
    assert len(points) == len(scaling.SERIES)
    for series, pts in points:
        assert len(pts) >= 2, series.label
        assert [p.gpus for p in pts] == sorted(p.gpus for p in pts)
    baseline = [p for s, pts in points if s.label.startswith("MegaScale's Megatron-LM baseline, 175B") for p in pts]
    assert len(baseline) == 8
    assert all(0.5 < p.gap < 3.5 for p in baseline)
    assert all(p.dp_latency < 0.05 for p in baseline)  # tens of milliseconds, not seconds
    assert max(p.dp for p in baseline) == 192 and min(p.dp for p in baseline) == 4
    # "the gap does not grow with the scale": its growth with dp, the least-squares slope of log gap
    # on log dp (by hand), where a constant term reads 0, a ring's per-step latency (a term
    # growing with the ranks) 1 and a cost the ranks share -1. At batch 768 no trend: within a
    # quarter of 0 either way. At batch 6,144 the gap falls (below -0.25, above -1: it is not a
    # shared cost either), and the fall is the 3,072-GPU run's: without it, no trend again.
    small, large = (s.label for s in scaling.SERIES[:2])
    slopes = {}
    for label in (small, large):
        pts = [p for s, ps in points if s.label == label for p in ps]
        assert len(pts) == 4 and len({p.dp for p in pts}) == 4
        slopes[label] = statistics.linear_regression([math.log(p.dp) for p in pts],
                                                     [math.log(p.gap) for p in pts]).slope
        assert scaling.gap_elasticity(points, label) == pytest.approx(slopes[label], rel=1e-9)
    assert -0.25 < slopes[small] < 0.25, slopes
    assert -1.0 < slopes[large] < -0.25, slopes
    assert -0.25 < scaling.gap_elasticity(points, large, 3072) < 0.25
    # the spreads the doc prints, pinned ~10 % above the model's figures (1.37, 2.74 and 1.69 since
    # stop 59 compares these rows on their iteration time, the measured figure, not their MFU) so a
    # change that moves them is seen: the small-batch series within 40 % of its least gap; the
    # large-batch one's 3,072-GPU run stands out (2.74), without it the series spreads as little
    # as 1.69
    assert scaling.gap_spread(points, small) < 1.5
    assert scaling.gap_spread(points, large) < 2.95
    assert scaling.gap_spread(points, large, 3072) < 1.8
    # the line rate the gap would need: the whole dp traffic's bytes at bus x line rate, by hand
    bus = _load("fidelity").DEFAULT.bus_network
    lo, hi = scaling.line_rate_needed(points, "MegaScale's Megatron-LM baseline, 175B", bus)
    by_hand = [bus * (p.dp_total - p.dp_latency) / (p.dp_total - p.dp_latency + p.gap) for p in baseline]
    assert (lo, hi) == (min(by_hand), max(by_hand))
    assert all(p.dp_exposed <= p.dp_total + 1e-9 for p in baseline)
    # no spine term shows: the groups crossing MegaScale's 64-server rail sets lose no more
    inside, across = scaling.across_rails(points, "MegaScale's Megatron-LM baseline, 175B")
    assert across <= inside
    # the implied step is the reported throughput's: the same FLOPs over it
    for p in baseline:
        assert p.implied * p.reported == pytest.approx(p.step * p.predicted, rel=1e-12)


def test_the_dp_seconds_are_the_models_own(public_rows):
    """scaling_check builds each dp call's link from the call's own group; the time model's dp
    windows charge the same calls the same seconds (their per-micro-batch windows times the
    micro-batches), and the latency is what a call with no payload takes on that link."""
    fidelity, scaling = _load("fidelity"), _load("scaling_check")
    row = public_rows["megascale_megatron_175b_1024gpu"]
    p = fidelity.prepare(row)
    loads, steps = timing.rank_steps(p.shape, p.knobs, p.hardware, p.geometry, fidelity.DEFAULT, row.software)
    geo, hw, c = p.geometry, p.hardware, fidelity.DEFAULT
    links = (timing.link(geo.dense, hw, c), timing.link(geo.expert, hw, c), timing.link(geo.shard, hw, c),
             timing.link(geo.replicate, hw, c))
    for load in loads:
        dp = tuple(x for x in steps[load].ledger.collectives if x.axis == "dp")
        assert dp
        busy = timing.dp_windows(dp, p.knobs.microbatches, timing.DpLinks(*links))[0]
        model = sum(s * (p.knobs.microbatches if w in ("forward", "backward") else 1) for w, s in busy.items())
        total, latency = scaling.dp_seconds(steps[load].ledger, hw, c)
        assert total == pytest.approx(model, rel=1e-12)
        # each call's ring steps at the network's 5 us (one rank per node): a ring all-reduce's
        # 2 (n - 1) steps, an all-gather's or reduce-scatter's n - 1
        steps_per_call = {"all_reduce": 2, "reduce_scatter": 1, "all_gather": 1}
        by_hand = sum(x.count * steps_per_call[x.kind] * (x.size - 1) * c.latency_inter for x in dp)
        assert latency == pytest.approx(by_hand, rel=1e-3)


# Two nodes of 8 GPUs: a ring of 16 ranks enters and leaves each node once.
TWO_NODES = timing.Link(size=16, ring=200e9, near=240e9, far=23e9, local=8, latency=5e-6, step_near=1e-6)


@pytest.mark.parametrize(("lk", "crossing", "inside", "inner"), [
    (TWO_NODES, 1, 14, 1e-6),  # 2 nodes: 1 network step, 14 NVLink steps per trip
    (dataclasses.replace(TWO_NODES, size=64), 7, 56, 1e-6),  # 8 nodes of 8
    (LINK, 3, 0, 0.0),  # one GPU per node: every step crosses
    (dataclasses.replace(TWO_NODES, size=8, latency=1e-6), 0, 7, 1e-6),  # inside one node: its own latency
])
def test_every_ring_counts_its_steps_as_nccls_tuner(lk, crossing, inside, inner):
    """NCCL's tuner (src/graph/tuning.cc) charges a ring trip nNodes - 1 network steps and the
    others at NVLink's latency; the all-gather (and reduce-scatter) make one trip, the all-reduce
    two, through the one function (`Link.ring_latency`)."""
    n, nbytes = lk.size, 3e8
    trip = crossing * lk.latency + inside * inner
    assert crossing + inside == n - 1
    assert lk.ring_latency(1) == pytest.approx(trip, rel=1e-12)
    assert lk.all_gather(nbytes) == pytest.approx((n - 1) / n * nbytes / lk.ring + trip, rel=1e-12)
    assert lk.ring_all_reduce(nbytes) == pytest.approx(2 * (n - 1) / n * nbytes / lk.ring + 2 * trip, rel=1e-12)
