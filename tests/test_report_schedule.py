"""compiler/schedule.py: every schedule's timeline does all the work once, in data-flow order.

The orders come from memory/schedules.py (tested against torch's action lists); these tests check
what the timeline adds: micro-batch numbering, the cross-rank dependencies, the simulation, and
the makespans the schedule papers derive in closed form.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from parc.memory.schedules import interleaved_accepts
from parc.schedule import (
    BACKWARD,
    FORWARD,
    INPUT,
    WEIGHT,
    Durations,
    ScheduleError,
    dependencies,
    drawable_microbatches,
    rank_chunks,
    rank_orders,
    simulate,
)
from parc.stages import chunk_rank

SCHEDULES = {"gpipe": 1, "1f1b": 1, "interleaved-1f1b": 2, "interleaved-zb": 2, "zbv": 2, "dualpipe-v": 2}


def cases():
    for schedule, v in SCHEDULES.items():
        for pp in (1, 2, 3, 4, 8):
            for m in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32):
                if schedule in ("zbv", "dualpipe-v") and pp > 1 and m < 2 * pp:
                    continue  # parc's checks require 2 pp micro-batches for the V schedules
                if schedule.startswith("interleaved") and pp > 1 and (m < pp or not interleaved_accepts(pp, m)):
                    continue
                for chunks in ((v, 3) if schedule.startswith("interleaved") else (v,)):
                    yield schedule, pp, chunks, m


CASES = list(cases())


@pytest.mark.parametrize("schedule,pp,v,m", CASES, ids=[f"{s}-pp{p}-v{v}-m{m}" for s, p, v, m in CASES])
def test_every_block_once_and_in_data_flow_order(schedule, pp, v, m):
    per_rank = rank_orders(schedule, pp, v, m)
    for rank, actions in enumerate(per_rank):
        chunks = rank_chunks(pp, v, schedule, rank)
        assert all(chunk_rank(c, pp, schedule) == rank for c in chunks)
        count = Counter((a.kind, a.chunk, a.micro) for a in actions)
        assert max(count.values()) == 1, "an action twice"
        for c, i in itertools.product(chunks, range(m)):
            assert count[(FORWARD, c, i)] == 1
            full, split = count[(BACKWARD, c, i)], count[(INPUT, c, i)]
            assert full + split == 1, (c, i)
            assert count[(WEIGHT, c, i)] == split, "a weight backward for each input backward"
        assert len(actions) == sum(count.values())
    timeline = simulate(schedule, pp, v, m, Durations.uniform(pp, 1.0, 1.3, 0.7, p2p=0.1))
    assert len(timeline.blocks) == sum(len(a) for a in per_rank)
    end = {}
    for block in timeline.blocks:
        a = block.action
        end[("W" if a.kind == WEIGHT else ("F" if a.kind == FORWARD else "B"), a.chunk, a.micro)] = block
    last = pp * v - 1
    for block in timeline.blocks:
        for need in dependencies(block.action, last):
            before = end[need]
            gap = 0.1 if before.rank != block.rank else 0.0
            assert block.start >= before.end + gap - 1e-9, (block, before)
    for rank in range(pp):
        mine = sorted(timeline.of_rank(rank), key=lambda b: b.start)
        assert all(x.end <= y.start + 1e-9 for x, y in zip(mine, mine[1:], strict=False)), "overlap on a rank"


@pytest.mark.parametrize("pp,m", [(2, 4), (4, 8), (4, 16), (8, 32), (3, 7)])
def test_gpipe_and_1f1b_take_m_plus_p_minus_1_slots(pp, m):
    """Narayanan et al. 2021: (m + p - 1)(F + B) for both, the bubble (p - 1)(F + B)."""
    f, b, w = 1.0, 1.5, 0.5
    for schedule in ("gpipe", "1f1b"):
        t = simulate(schedule, pp, 1, m, Durations.uniform(pp, f, b, w))
        assert t.makespan == pytest.approx((m + pp - 1) * (f + b + w))
        assert t.idle(0) == pytest.approx((pp - 1) * (f + b + w))


@pytest.mark.parametrize("pp,v,m", [(2, 2, 4), (4, 2, 8), (4, 2, 16), (4, 3, 8), (8, 2, 16)])
def test_interleaving_divides_the_bubble_by_v(pp, v, m):
    """Narayanan et al. 2021, Section 2.2: bubble (p - 1)(F + B) / v in whole-stage units."""
    f, b, w = 1.0, 1.5, 0.5  # one chunk's times
    t = simulate("interleaved-1f1b", pp, v, m, Durations.uniform(pp, f, b, w))
    assert t.makespan == pytest.approx(m * v * (f + b + w) + (pp - 1) * (f + b + w))


@pytest.mark.parametrize("pp,m", [(4, 8), (4, 16), (8, 32)])
def test_zero_bubble_fills_the_cool_down_with_weight_backwards(pp, m):
    """ZB-H1 (Qi et al. 2024): bubble (p - 1)(F + B - W), as the time model's formula says."""
    from parc.timing import bubble_seconds

    f, b, w = 1.0, 1.0, 1.0
    t = simulate("interleaved-zb", pp, 2, m, Durations.uniform(pp, f, b, w))
    assert t.makespan - m * 2 * (f + b + w) == pytest.approx(bubble_seconds("interleaved-zb", pp, f, b, w))
    one_f_one_b = simulate("1f1b", pp, 1, m, Durations.uniform(pp, 2 * f, 2 * b, 2 * w))
    for schedule in ("interleaved-zb", "zbv", "dualpipe-v"):
        assert simulate(schedule, pp, 2, m, Durations.uniform(pp, f, b, w)).makespan < one_f_one_b.makespan


def test_a_slow_stage_sets_the_pace():
    slow = Durations((1.0, 1.0, 2.0, 1.0), (2.0, 2.0, 4.0, 2.0), (0.0,) * 4)
    t = simulate("1f1b", 4, 1, 16, slow)
    assert t.makespan >= 16 * 6.0
    assert t.idle(2) < t.idle(0)


def test_deadlock_is_reported():
    with pytest.raises(ScheduleError):
        # dualpipe-v with fewer than 2 pp micro-batches leaves a rank waiting for work never sent
        simulate("dualpipe-v", 4, 2, 3, Durations.uniform(4))


def test_drawable_microbatches_keeps_whole_rounds():
    assert drawable_microbatches("1f1b", 16, 1, 32) == 32
    shown = drawable_microbatches("1f1b", 64, 1, 512)
    assert shown % 64 == 0 and 64 <= shown < 512
    shown = drawable_microbatches("interleaved-1f1b", 8, 3, 192)
    assert shown % 8 == 0 and interleaved_accepts(8, shown) and shown < 192
    assert drawable_microbatches("dualpipe-v", 16, 2, 120) >= 32
