"""The speed-ups of the search's hot paths change no number: each fast path against the plain
one it replaces (kept as the reference), over many schedules, depths and micro-batch counts.

- `schedule.simulate` / `schedule.makespan` place actions in an order found once per schedule
  shape (`_placement`): checked against a list-scheduling loop written out here;
- the memory model's receive buffers are counted while lowering (`_walked_receives`): checked
  against `live_receives` over the full lowering `_lowered`.
"""

from __future__ import annotations

import random

import pytest
from parc import schedule
from parc.memory import schedules

SHAPES = [(s, pp, v) for s in ("gpipe", "1f1b") for pp in (1, 2, 3, 4, 8) for v in (1,)] + \
         [(s, pp, v) for s in ("interleaved-1f1b", "interleaved-zb") for pp in (1, 2, 3, 4, 8) for v in (1, 2, 3)] + \
         [(s, pp, 2) for s in ("zbv", "dualpipe-v") for pp in (1, 2, 3, 4, 8)]
MICRO = (1, 2, 3, 4, 8, 12, 16, 32)


def _reference_simulate(name, pp, v, m, d):
    """List scheduling as the module's docstring says it: every rank runs its actions in order,
    each as soon as the rank is free and its inputs have arrived (one p2p later from another
    rank). Returns the blocks as (rank, kind, chunk, micro, start, end)."""
    per_rank = schedule.rank_orders(name, pp, max(1, v) if pp == 1 else v, m)
    last = pp * (max(1, v) if pp == 1 else v) - 1
    done, clock, cursor, blocks = {}, [0.0] * pp, [0] * pp, []
    while any(cursor[r] < len(per_rank[r]) for r in range(pp)):
        moved = False
        for r in range(pp):
            while cursor[r] < len(per_rank[r]):
                a = per_rank[r][cursor[r]]
                needs = schedule.dependencies(a, last)
                if any(n not in done for n in needs):
                    break
                ready = max([clock[r]] + [done[n][1] + (d.p2p if done[n][0] != r else 0.0) for n in needs])
                end = ready + d.of(r, a.kind)
                blocks.append((r, a.kind, a.chunk, a.micro, ready, end))
                stream = "W" if a.kind == "W" else ("F" if a.kind == "F" else "B")
                done[(stream, a.chunk, a.micro)] = (r, end)
                clock[r], cursor[r], moved = end, cursor[r] + 1, True
        if not moved:
            raise schedule.ScheduleError("deadlock")
    return blocks


@pytest.mark.parametrize("name,pp,v", SHAPES)
def test_simulate_and_makespan_are_the_plain_list_scheduling(name, pp, v):
    rng = random.Random(f"{name}{pp}{v}")
    checked = 0
    for m in MICRO:
        d = schedule.Durations(tuple(rng.random() for _ in range(pp)), tuple(rng.random() for _ in range(pp)),
                               tuple(rng.random() for _ in range(pp)), rng.random() / 10)
        try:
            expected = _reference_simulate(name, pp, v, m, d)
        except (schedule.ScheduleError, ValueError, KeyError, IndexError):
            continue
        timeline = schedule.simulate(name, pp, v, m, d)
        assert [(b.rank, b.action.kind, b.action.chunk, b.action.micro, b.start, b.end)
                for b in timeline.blocks] == expected
        assert timeline.makespan == max(e for *_, e in expected)
        assert schedule.makespan(name, pp, v, m, d) == timeline.makespan
        checked += 1
    assert checked


@pytest.mark.parametrize("name,pp,v", [(s, pp, v) for s, pp, v in SHAPES if pp > 1 and s not in ("gpipe", "1f1b")]
                         + [pytest.param("interleaved-zb", 16, 4, marks=pytest.mark.slow),
                            pytest.param("interleaved-1f1b", 16, 8, marks=pytest.mark.slow)])
def test_receive_buffers_counted_while_lowering_are_those_of_the_full_lowering(name, pp, v):
    checked = 0
    for m in MICRO + (48, 64):
        try:
            lowered = schedules._lowered(name, pp, v, m)
        except ValueError:
            assert schedules._walked_receives(name, pp, v, m) is None
            continue
        assert schedules._walked_receives(name, pp, v, m) == tuple(
            schedules.live_receives(lowered[r]) for r in range(pp))
        checked += 1
    assert checked


PIPE_SPACES = ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/moe-fold.par",
               "specs/llama3-70b-search.par"]


def _engine(path: str, **kwargs):
    from parc.pipeline import compile_path
    from parc.search.engine import Engine
    from parc.search.space import build_space

    return Engine(build_space(compile_path(path)), keep=14, **kwargs)


@pytest.mark.parametrize("path", PIPE_SPACES)
def test_sets_of_pipelines_rank_and_count_as_groups_bounded_one_by_one(path):
    """The scan with the pipelines of a layout queued as one set (`pipes_bound`) against the
    scan with every group queued at its own bound: the same top, the same statistics."""
    one_by_one = _engine(path)
    one_by_one.pipe_sets = False
    plain = one_by_one.run()
    sets = _engine(path)
    assert sets.pipe_sets
    fast = sets.run()
    assert plain.found
    assert [f.rank_key for f in fast.found] == [f.rank_key for f in plain.found]
    assert fast.stats.as_json() == plain.stats.as_json()
    assert fast.smallest_peak == plain.smallest_peak
    assert plain.stats.group_bounds == plain.stats.groups
    if "llama3-70b-search" not in path:  # its schedule is written: one pipeline per pp
        assert fast.stats.pipe_set_bounds and fast.stats.group_bounds < plain.stats.group_bounds


@pytest.mark.parametrize("path", PIPE_SPACES[:2])
def test_a_set_of_pipelines_bound_is_below_each_of_its_groups_bound(path):
    engine = _engine(path)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    checked = 0
    for group in groups:
        assert engine.pipes_bound(*group) <= engine.bound(*group), group
        checked += 1
    assert checked


@pytest.mark.parametrize("path", PIPE_SPACES[:2])
def test_kept_rank_tails_are_the_time_models_own(path):
    """`Engine._rank_tail` keeps each rank's data-parallel tail and optimizer step on the plain
    numbers that determine them: over every group and sharding of a space, visited in a
    shuffled order (so kept values are reused across groups and pipelines), the kept tail is
    `timing.dp_exposed` + `timing.optimizer_seconds` computed afresh."""
    from parc import timing

    engine = _engine(path)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    random.Random(18).shuffle(groups)
    sw, checked = engine.software, 0
    for group in groups[:400]:  # a sample: reused values come from many layouts still
        item = group[0]
        _, core, times, _, knobs = engine._parts(group)
        for ks in knobs:
            links = engine._best_links(item, ks.hsdp_shard)
            plain = core + max(timing.dp_exposed(r, ks, *links, sw.grad_bytes, sw.dp_runtime)[0]
                               + timing.optimizer_seconds(r, ks, engine.hw, engine.constants) for r in times)
            if engine.inside_is_fastest:
                assert engine._tail(item, ks, core, times) == plain
                checked += 1
    assert checked


@pytest.mark.parametrize("name", ["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_compute_turns_are_the_lowerings_turns_with_fsdp_and_weight_actions_emptied(name):
    """`_compute_turns` (what `_walked_receives` walks) against the plain composition it replaces:
    torch's order (`_indexed`), FSDP's rounds written out as operations (`_fsdp_rounds`) and the
    turns over them (`_turns`), with every action but F, B and I emptied."""
    codes = {schedules.F: 0, schedules.B: 1, schedules.I: 1}
    checked = 0
    for pp in (2, 3, 4, 5, 8):
        for v in ((2,) if name in ("zbv", "dualpipe-v") else (1, 2, 3, 4)):
            for m in (1, 2, 3, 4, 5, 8, 12, 16, 32):
                for r in range(pp):
                    try:
                        plain = schedules._turns(name, pp, r, schedules._fsdp_rounds(
                            schedules._indexed(name, pp, v, m, r)))
                    except (ValueError, IndexError, KeyError):
                        continue
                    expected = [tuple((codes[kind], stage, micro) for kind, stage, micro in turn if kind in codes)
                                for turn in plain]
                    assert schedules._compute_turns(name, pp, v, m, r) == expected, (pp, v, m, r)
                    checked += 1
    assert checked
