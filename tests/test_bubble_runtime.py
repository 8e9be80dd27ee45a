"""The time model's bubble formulas against a replay of the runtime's own schedule orders.

`compiler/schedule.py` replays the action order torch 2.13 executes (the memory model checks
that order action by action against torch's). For gpipe, 1f1b and interleaved-1f1b the closed
forms must equal the replay exactly; the zero-bubble papers analyse their own orders, so their
formulas must be lower bounds of torch's (the gap is tabulated in docs/time-model.md).
DualPipe-V overlaps a forward with a backward on GPUs, which a sequential replay cannot show.

The step's own bubble calls `simulate()`, so comparing the two would restate the code (that
test is gone); the last tests take torch's own action lists (`torch.distributed.pipelining`) and
replay them with a small event simulator written in this file, every shape in the default run.
"""

from __future__ import annotations

import pytest
from parc.schedule import Durations, simulate
from parc.timing import bubble_seconds

TIMES = [(1.0, 1.0, 1.0), (1.0, 1.2, 0.8), (0.7, 1.5, 1.1), (1.0, 2.0, 0.5), (2.0, 1.0, 1.0)]
SHAPES = [(2, 4), (4, 8), (4, 12), (8, 16)]


def replay_idle(schedule, pp, v, m, f, b, w) -> float:
    timeline = simulate(schedule, pp, v, m, Durations.uniform(pp, f, b, w))
    busy = m * v * (f + b + w)
    assert timeline.busy(0) == pytest.approx(busy)
    return timeline.makespan - busy


@pytest.mark.parametrize("schedule, v", [("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("interleaved-1f1b", 3)])
@pytest.mark.parametrize("pp, m", SHAPES)
@pytest.mark.parametrize("f, b, w", TIMES)
def test_closed_form_is_exact(schedule, v, pp, m, f, b, w):
    if schedule.startswith("interleaved") and m % pp:
        pytest.skip("torch's interleaved schedules take multiples of pp")
    assert bubble_seconds(schedule, pp, f, b, w) == pytest.approx(replay_idle(schedule, pp, v, m, f, b, w), abs=1e-9)


@pytest.mark.parametrize("schedule", ["interleaved-zb", "zbv"])
@pytest.mark.parametrize("pp, m", SHAPES)
@pytest.mark.parametrize("f, b, w", TIMES)
def test_paper_formula_is_a_lower_bound(schedule, pp, m, f, b, w):
    if m % pp:
        pytest.skip("multiples of pp only")
    assert bubble_seconds(schedule, pp, f, b, w) <= replay_idle(schedule, pp, 2, m, f, b, w) + 1e-9


@pytest.mark.parametrize("schedule", ["interleaved-zb", "zbv"])
@pytest.mark.parametrize("f, b, w", TIMES)
def test_deeper_pipelines_scale_the_replay_and_stay_above_the_papers(schedule, f, b, w):
    from parc.timing import runtime_bubble_seconds

    for pp in (16, 32):
        m = 2 * pp
        predicted = runtime_bubble_seconds(schedule, pp, 2, m, f, b, w)
        assert predicted >= bubble_seconds(schedule, pp, f, b, w)
        if pp == 16:  # replayable here: the scaling stays within 10 % of the bubble
            assert predicted == pytest.approx(replay_idle(schedule, pp, 2, m, f, b, w), rel=0.10)


# ---------------------------------------------------------------------------------------------
# An independent partner: torch's own action lists, replayed by a simulator written here


def _torch_ops(schedule: str, pp: int, v: int, m: int) -> list[list[tuple[str, int, int]]]:
    """Per rank, torch 2.13's compute actions (type, global stage, micro-batch), in order."""
    schedules = pytest.importorskip("torch.distributed.pipelining.schedules")
    from .test_memory_schedules import MULTI, _fake

    cls = getattr(schedules, MULTI[schedule])
    out = []
    for rank in range(pp):
        ops = []
        for action in cls._calculate_single_rank_operations(_fake(pp, v, m), rank):
            if action is None:
                continue
            for a in action.sub_actions or (action,):
                kind = a.computation_type.value
                if kind in ("F", "B", "I", "W"):
                    ops.append((kind, a.stage_index, a.microbatch_index))
        out.append(ops)
    return out


def _makespan(ranks: list[list[tuple[str, int, int]]], stages: int, f: float, b: float, w: float) -> float:
    """Each rank runs its actions in its order, each as soon as the rank is free and its inputs
    exist: a forward needs the previous stage's forward of its micro-batch; an input backward
    (I, or a full B) needs its own forward and the next stage's backward; W needs its I."""
    length = {"F": f, "I": b, "B": b + w, "W": w}
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * len(ranks)
    position = [0] * len(ranks)
    progress = True
    while progress:
        progress = False
        for r, ops in enumerate(ranks):
            while position[r] < len(ops):
                kind, s, mb = ops[position[r]]
                if kind == "F":
                    needs = [("F", s - 1, mb)] if s > 0 else []
                elif kind in ("I", "B"):
                    needs = [("F", s, mb)] + ([("back", s + 1, mb)] if s < stages - 1 else [])
                else:
                    needs = [("back", s, mb)]
                if any(n not in done for n in needs):
                    break
                start = max([free[r]] + [done[n] for n in needs])
                free[r] = start + length[kind]
                done[(kind, s, mb)] = free[r]
                if kind in ("I", "B"):
                    done[("back", s, mb)] = free[r]
                position[r] += 1
                progress = True
    assert all(p == len(ops) for p, ops in zip(position, ranks, strict=True)), "deadlock"
    return max(free)


@pytest.mark.parametrize("schedule", ["interleaved-zb", "zbv", "interleaved-1f1b"])
@pytest.mark.parametrize("pp, m", [(2, 4), (4, 8), (4, 12), (8, 16)])
def test_the_step_bubble_is_torchs_own_order_replayed_independently_fast(schedule, pp, m):
    """Every shape, one set of durations (the long test below runs them all): this replaces a
    test that compared the step's bubble with the `simulate()` the step itself calls."""
    _torch_replay_check(schedule, pp, m, 0.7, 1.5, 1.1)


@pytest.mark.long
@pytest.mark.parametrize("schedule", ["interleaved-zb", "zbv", "interleaved-1f1b"])
@pytest.mark.parametrize("pp, m", [(2, 4), (4, 8), (4, 12), (8, 16)])
@pytest.mark.parametrize("f, b, w", TIMES)
def test_the_step_bubble_is_torchs_own_order_replayed_independently(schedule, pp, m, f, b, w):
    _torch_replay_check(schedule, pp, m, f, b, w)


def _torch_replay_check(schedule, pp, m, f, b, w):
    """The bubble a step charges equals the idle of torch's own action lists (not parc's copy of
    them, not `schedule.simulate`) run by the small event replay above."""
    from parc.timing import runtime_bubble_seconds

    v = 2
    ranks = _torch_ops(schedule, pp, v, m)
    assert ranks and all(ranks)
    assert sum(len(ops) for ops in ranks) >= 2 * pp * v * m
    idle = _makespan(ranks, pp * v, f, b, w) - m * v * (f + b + w)
    w_split = schedule != "interleaved-1f1b"
    charged = runtime_bubble_seconds(schedule, pp, v, m, f, b, w) if w_split else bubble_seconds(schedule, pp, f, b, w)
    assert charged == pytest.approx(idle, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("schedule", ["interleaved-zb", "zbv", "dualpipe-v"])
@pytest.mark.parametrize("pp, m", [(2, 4), (4, 8), (4, 16), (8, 16)])
def test_weight_passes_are_torchs_split_backwards(schedule, pp, m):
    """The weight passes each rank runs apart (each its own autograd call, which recomputes a
    checkpointed chunk again: `timing.recomputed_again`) are torch's W actions, rank by rank:
    all of them under interleaved-zb and zbv, DualPipe-V's cool-down's only."""
    from parc.timing import weight_passes

    ops = _torch_ops(schedule, pp, 2, m)
    counted = [sum(1 for kind, _, _ in rank if kind == "W") for rank in ops]
    assert all(counted), counted
    assert [weight_passes(schedule, pp, 2, m, rank) for rank in range(pp)] == counted
    assert weight_passes("interleaved-1f1b", pp, 2, m, 0) == weight_passes("1f1b", pp, 1, m, 0) == 0
