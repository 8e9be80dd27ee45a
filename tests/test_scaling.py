"""Throughput against GPU count (issue 14): a runtime that reduces its gradients after the whole
forward-backward (`Software.dp_overlap` False), the public check's reading of the runtimes that do,
and the series of published runs benchmarks/scaling_check.py takes apart (docs/time-model.md,
"Throughput against GPU count")."""

from __future__ import annotations

import importlib
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
    hidden, _ = timing._dp_exposed(ddp_ledger(), 8, 0.1, backward, LINK, LINK, LINK, LINK)
    whole, _ = timing._dp_exposed(ddp_ledger(), 8, 0.1, backward, LINK, LINK, LINK, LINK, (0.0, 0.0), False)
    assert hidden == pytest.approx(max(0.0, RING_BY_HAND - backward), rel=1e-9, abs=1e-15)
    assert whole == pytest.approx(RING_BY_HAND, rel=1e-9)


def test_the_post_step_gather_is_charged_whole_too():
    """The distributed optimizer's gather after its step (zero1 in Megatron-LM's contract) waits
    for nothing to hide under when the runtime runs it before the next forward-backward starts."""
    ledger = (Collective("dp", "reduce_scatter", GRADIENTS, 1, 4, 1, "last_backward"),
              Collective("dp", "all_gather", GRADIENTS / 2, 1, 4, 1, "after_step"))
    # each (n - 1) / n of its tensor over the ring, n - 1 crossing steps
    by_hand = 0.75 * GRADIENTS / 23e9 + 3 * 5e-6 + 0.75 * GRADIENTS / 2 / 23e9 + 3 * 5e-6
    whole, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINK, LINK, LINK, LINK, (0.0, 0.0), False)
    hidden, _ = timing._dp_exposed(ledger, 4, 1.0, 1.0, LINK, LINK, LINK, LINK)
    assert whole == pytest.approx(by_hand, rel=1e-9)
    # overlapped, the reduce-scatter hides under the last backward and the single post-step
    # gather shows whole (no earlier bucket's forward to hide under: `fsdp_fill`)
    assert hidden == pytest.approx(0.75 * GRADIENTS / 2 / 23e9 + 3 * 5e-6, rel=1e-9)


def test_per_micro_batch_windows_still_hide():
    """Only the once-per-step calls move: zero2's per-micro-batch reductions (none in the runtimes
    read so) keep their windows."""
    ledger = (Collective("dp", "reduce_scatter", GRADIENTS, 8, 4, 1, "backward"),)
    a, _ = timing._dp_exposed(ledger, 8, 1.0, 1.0, LINK, LINK, LINK, LINK)
    b, _ = timing._dp_exposed(ledger, 8, 1.0, 1.0, LINK, LINK, LINK, LINK, (0.0, 0.0), False)
    assert a == b


@pytest.fixture(scope="module")
def public_rows():
    fidelity = _load("fidelity")
    rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / "published_public.yaml")
    calibration, _ = fidelity.load_rows(fidelity.PUBLISHED)
    return {r.id: r for r in rows + calibration}


def test_the_contract_keeps_the_window_and_the_check_reads_the_code(public_rows):
    """Every row is evaluated with the contract's window (the fit's reading); the public check's
    second reading charges the whole reduction for the runtimes whose code reduces after the
    forward-backward (docs/time-model.md says why it is not the fit's reading)."""
    public_check = _load("public_check")
    assert all(r.software.dp_overlap for r in public_rows.values())
    after = [v for v in public_check.VARIANTS if dict(v.software).get("dp_overlap") is False]
    assert {v.match for v in after} == {"megascale_megatron_", "mtnlg_530b", "bloom_176b"}
    assert all(v.substitutions == () for v in after)


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
    assert all(p.dp_latency < 0.01 for p in baseline)
    assert max(p.dp for p in baseline) == 192 and min(p.dp for p in baseline) == 4
    # no spine term shows: the groups crossing MegaScale's 64-server rail sets lose no more
    inside, across = scaling.across_rails(points, "MegaScale's Megatron-LM baseline, 175B")
    assert across <= inside
    # the implied step is the reported throughput's: the same FLOPs over it
    for p in baseline:
        assert p.implied * p.reported == pytest.approx(p.step * p.predicted, rel=1e-12)
