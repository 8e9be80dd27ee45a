"""The search engine: its top N is the exact top N of the whole space, its bounds are bounds, the
assignments it folds away are equal or dominated, and its figures are `parc explain`'s.

"Brute force" below is the same enumeration with every bound switched off: every valid
candidate's memory and step time predicted and ranked.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from parc import timing
from parc.memory.model import peak
from parc.pipeline import compile_path, compile_text
from parc.search import engine as engine_module
from parc.search import search
from parc.search.engine import Engine, Outcome
from parc.search.fill import fill
from parc.search.space import Assignment, build_space, canonical_key

from .conftest import GOLDEN, ROOT

SMALL = ["specs/llama3-70b-search.par", "tests/golden/search/specs/pcie.par",
         "tests/golden/search/specs/fixed-parts.par", "tests/golden/search/specs/moe-fixed-ep.par"]
"""Spaces small enough to evaluate every candidate in a test."""


class BruteForce(Engine):
    """Every group evaluated, no bound used; each bound checked against the steps it bounds."""

    def _scan(self, groups):
        for group in groups:
            coarse = self.bound(*group)
            _, refined = self.refine(group, math.inf)
            _, core, times, shardings, knobs = self._parts(group)
            tails = [self._tail(group[0], ks, core, times) for ks in knobs]
            before = len(self.steps)
            self._evaluate(group, refined, math.inf)
            for j, sharding in enumerate(shardings):
                for step, s, sh in self.steps[before:]:
                    if (s, sh) == sharding:
                        assert refined[0][j] <= step * (1 + 1e-12), (group, sharding, refined[0][j], step)
                        assert tails[j] <= step * (1 + 1e-12), (group, sharding, tails[j], step)
            for step, _, _ in self.steps[before:]:
                assert coarse <= step * (1 + 1e-12), (group, coarse, step)
        return Outcome(found=self.best, stats=self.stats, smallest_peak=self.smallest_peak, usable_bytes=self.usable)

    def _keep(self, step, peak_bytes, item, order, k, sharding, shard):
        self.steps.append((step, sharding, shard))
        return super()._keep(step, peak_bytes, item, order, k, sharding, shard)


def _space(path: str):
    return build_space(compile_path(path))


@pytest.mark.parametrize("path", SMALL)
def test_the_top_n_is_the_brute_force_top_n_and_every_bound_holds(path, monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_WORK", 10**12)
    space = _space(path)
    fast = Engine(space, keep=10).run()
    brute = BruteForce(space, keep=10**9)
    brute.steps = []
    everything = brute.run()
    assert [f.rank_key for f in fast.found] == [f.rank_key for f in everything.found[:10]]
    assert fast.stats.valid == everything.stats.valid
    assert fast.stats.time_evaluations < everything.stats.time_evaluations or len(everything.found) <= 10


def test_the_raw_space_is_counted_as_documented():
    """llama3-70b-search: tp x pp x dp = 1,024 (66 ways), micro-batch 1-16, 3 recompute modes,
    4 shardings plus hsdp R x S for every 1 < S < dp; the schedule is not open."""
    stats = Engine(_space("specs/llama3-70b-search.par"), keep=10).run().stats
    total = 0
    for k in range(11):  # dp = 2^k, tp x pp = 2^(10-k) in 11 - k ways
        hsdp = max(0, k - 1)
        total += (11 - k) * 16 * 3 * (4 + hsdp)
    assert stats.raw == total == 20_592
    assert stats.valid + sum(stats.pruned.values()) == stats.raw


def test_every_valid_assignment_is_accounted_for():
    stats = Engine(_space("tests/golden/search/specs/five-axes.par"), keep=10).run().stats
    assert stats.valid + sum(stats.pruned.values()) == stats.raw
    assert stats.valid == stats.merged + stats.bounded + stats.out_of_memory + stats.timed
    assert stats.merged and stats.bounded and stats.timed


# ---------------------------------------------------------------------------------------------
# What is folded away without an evaluation


def _knobs_of_text(text: str):
    from parc.memory.inputs import knobs_of, shape_of

    result = compile_text(text)
    assert not [d for d in result.diagnostics if d.is_error and d.code != "E0401"], result.diagnostics
    plan = result.plan
    hw = timing.hardware_of(plan)
    return shape_of(plan), knobs_of(plan), hw, timing.geometry_of(plan, hw)


BASE = """\
tp 2 x dp 4 on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-sxm }
train { seq 4096, global-batch 64, micro-batch 2, recompute selective }
dp { sharding zero1 }
"""


@pytest.mark.parametrize("schedule,v", [("gpipe", 1), ("interleaved-1f1b", 1), ("interleaved-1f1b", 4),
                                        ("interleaved-zb", 2), ("zbv", 2), ("dualpipe-v", 2)])
@pytest.mark.parametrize("sharding", ["none", "zero1", "zero2", "zero3"])
def test_with_pp_1_every_schedule_predicts_what_1f1b_does(schedule, v, sharding):
    """Search keeps `1f1b` for pp 1 and folds the other schedules into it: same step time, and
    never less memory."""
    text = BASE.replace("sharding zero1", f"sharding {sharding}")
    shape, k, hw, geo = _knobs_of_text(text)
    other = replace(k, schedule=schedule, virtual_stages=v)
    assert timing.step_time(shape, other, hw, geo).step == pytest.approx(timing.step_time(shape, k, hw, geo).step,
                                                                          rel=1e-12)
    assert peak(shape, other)[0] >= peak(shape, k)[0]


def test_with_tp_1_sequence_parallelism_changes_nothing():
    shape, k, hw, geo = _knobs_of_text(BASE.replace("tp 2 x dp 4", "dp 8"))
    off = replace(k, sequence_parallel=False)
    assert timing.step_time(shape, off, hw, geo).step == timing.step_time(shape, k, hw, geo).step
    assert peak(shape, off) == peak(shape, k)


@pytest.mark.parametrize("layout", ["tp 8 x dp 1", "tp 2 x pp 4 x dp 1"])
@pytest.mark.parametrize("sharding", ["zero1", "zero2", "zero3"])
def test_sharding_over_a_single_rank_is_never_better_than_none(sharding, layout):
    """W0353's case: dp x cp = 1, so sharding has nothing to shard over. Under Megatron-LM's
    runtime (no copies of its own) never faster and never less memory than `none`, which is why
    search folds it (`folds_single_rank`). In parc's job never less memory, and its step differs
    from `none`'s by the data-parallel copies alone (`timing.dp_copy_bytes`): zero1's buckets
    cast the weights once a step where FSDP2 over one rank casts them before each of the 32
    micro-batches' forward and backward, so there zero1 is faster (by 0.22 s of 6.9 at tp 8);
    under pp 4 both cast once a step and accumulate every micro-batch in fp32, and zero1 is
    never slower."""
    from parc.search.engine import folds_single_rank

    text = BASE.replace("tp 2 x dp 4", layout).replace("sharding zero1", "sharding none")
    shape, k, hw, geo = _knobs_of_text(text)
    sharded = replace(k, sharding=sharding)
    megatron = replace(timing.PARC, dp_runtime="megatron")
    assert not folds_single_rank(timing.PARC) and folds_single_rank(megatron)
    assert timing.step_time(shape, sharded, hw, geo, sw=megatron).step >= timing.step_time(shape, k, hw, geo,
                                                                                           sw=megatron).step
    assert peak(shape, sharded)[0] >= peak(shape, k)[0]
    mine, plain = timing.step_time(shape, sharded, hw, geo), timing.step_time(shape, k, hw, geo)
    if sharding == "zero1":
        assert mine.step <= plain.step and mine.step - plain.step == pytest.approx(mine.copies - plain.copies)
        if "pp" not in layout:
            assert mine.copies < plain.copies / 2


# ---------------------------------------------------------------------------------------------
# Figures and ties


def test_the_fast_figures_are_the_front_ends():
    """The engine ranks by `step_time` and `peak` on plain numbers; the candidates shown are the
    filled specs through the real front end: the same numbers exactly."""
    result = search(compile_path("tests/golden/search/specs/moe-fold.par"), top=5)
    assert result.candidates and not result.rejected
    for c in result.candidates:
        assert c.fast_step == c.prediction.breakdown.step
        assert c.memory.fits
        assert [d for d in c.compilation.diagnostics if d.is_error] == []


def test_a_spec_without_holes_is_its_own_only_candidate():
    compilation = compile_path("specs/llama3-405b.par")
    result = search(compilation, top=10)
    assert result.stats.raw == 1 and len(result.candidates) == 1
    from parc.timing import predict

    assert result.winner.step == predict(compilation.plan).breakdown.step
    assert result.winner.text == compilation.source.text


def test_ties_are_broken_by_peak_memory_then_the_canonical_order():
    result = search(compile_path(str((GOLDEN / "search" / "specs" / "five-axes.par").relative_to(ROOT))), top=10)
    keys = [(c.step, c.peak_bytes, canonical_key(result.space, c.assignment)) for c in result.candidates]
    assert keys == sorted(keys)


def test_the_canonical_order_is_the_documented_one():
    space = _space("tests/golden/search/specs/five-axes.par")
    base = Assignment(degrees=(("tp", 2), ("cp", 1), ("pp", 2), ("dp", 64), ("ep", 1)), ep=1, micro=1,
                      recompute="none", sharding="none", shard=0, schedule="1f1b", virtual_stages=1,
                      sequence_parallel=True)
    later = [
        replace(base, degrees=(("tp", 4), ("cp", 1), ("pp", 2), ("dp", 32), ("ep", 1))),  # larger tp
        replace(base, degrees=(("pp", 2), ("cp", 1), ("tp", 2), ("dp", 64), ("ep", 1))),  # another order
        replace(base, micro=2),
        replace(base, recompute="selective"),
        replace(base, sequence_parallel=False),
        replace(base, schedule="interleaved-1f1b", virtual_stages=2),
        replace(base, sharding="zero3"),
        replace(base, sharding="hsdp", shard=2),
    ]
    for other in later:
        assert canonical_key(space, base) < canonical_key(space, other), other
    assert canonical_key(space, replace(base, sharding="zero3")) < canonical_key(space, replace(base, sharding="hsdp",
                                                                                                 shard=2))


def test_the_written_order_wins_a_tie_between_orders():
    space = _space("tests/golden/search/specs/five-axes.par")
    assert space.orders({"tp": 2, "cp": 1, "pp": 2, "dp": 64, "ep": 1})[0] == space.axes


def test_the_same_spec_gives_the_same_result():
    path = "tests/golden/search/specs/schedules.par"
    first = search(compile_path(path), top=10)
    timing.clear_caches()
    second = search(compile_path(path), top=10)
    assert [c.values for c in first.candidates] == [c.values for c in second.candidates]
    assert [c.lost_because for c in first.candidates] == [c.lost_because for c in second.candidates]
    assert first.stats == second.stats


# ---------------------------------------------------------------------------------------------
# Limits


def test_too_many_groups_stop_with_e0503(monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_GROUPS", 100)
    result = search(compile_path("tests/golden/search/specs/five-axes.par"))
    assert [d.code for d in result.diagnostics] == ["E0503"] and not result.candidates


def test_too_much_work_stops_with_e0503(monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_WORK", 10)
    result = search(compile_path("tests/golden/search/specs/five-axes.par"))
    assert [d.code for d in result.diagnostics] == ["E0503"]
    assert "pipeline-rank evaluations" in result.diagnostics[0].label


def test_fill_writes_every_hole_and_nothing_else():
    space = _space("tests/golden/search/specs/five-axes.par")
    a = Assignment(degrees=(("dp", 32), ("cp", 2), ("pp", 2), ("tp", 2), ("ep", 1)), ep=1, micro=2,
                   recompute="full", sharding="hsdp", shard=4, schedule="interleaved-zb", virtual_stages=4,
                   sequence_parallel=False)
    text = fill(space, a)
    assert "?" not in text.replace("`?`", "")
    assert "dp 32 x cp 2 x pp 2 x tp 2 x ep 1 on nodes(8 gpus, nvlink)  # rank order chosen below" in text
    assert "order fixed  # search picks the rank order" in text
    assert "sharding hsdp 8 x 4" in text and "virtual-stages 4" in text and "schedule interleaved-zb" in text
    original = space.compilation.source.text.splitlines()
    filled = text.splitlines()
    assert len(original) == len(filled)
    for before, after in zip(original, filled, strict=True):
        if "?" not in before:
            assert before == after


@pytest.mark.parametrize("path", ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/schedules.par",
                                  "tests/golden/search/specs/moe-fold.par"])
def test_the_memory_floors_never_exceed_a_peak(path):
    """Search rejects a layout when a floor of its memory does not fit; each floor must be at
    most the memory model's peak under every sharding (sampled groups of three spaces)."""
    import random

    from parc.memory.model import activation_floor, activation_floors

    engine = Engine(_space(path), keep=1)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    for group in random.Random(path).sample(groups, min(150, len(groups))):
        k, _, _, _, knobs = engine._parts(group)
        quick, full = engine._quick_floor(k, group[0]), activation_floor(engine.shape, k)
        states = engine._states_floor(group[0], k)
        with_states = max(a + s for a, s in zip(activation_floors(engine.shape, k), states, strict=True))
        peaks = [peak(engine.shape, ks)[0] for ks in knobs]
        assert full <= with_states <= min(peaks), (group, full, with_states, peaks)
        assert quick <= with_states, (group, quick, with_states)


@pytest.mark.parametrize("path", ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/moe-fold.par",
                                  "tests/golden/search/specs/moe-fixed-ep.par"])
def test_single_rank_is_what_sharding_spreads_over(path):
    """`is_single_rank`, the one predicate the fold and the groups' shardings read, holds exactly
    when every sharding of the degrees shards over one rank (the memory model's shard groups)."""
    from parc.search.engine import is_single_rank

    engine = Engine(_space(path), keep=1)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    items = {id(g[0]): g for g in groups}
    assert items
    seen = set()
    for group in items.values():
        item = group[0]
        k = engine._knobs(*group)
        spread = {(ks.dense_shard_group, ks.expert_shard_group if engine.shape.moe else 1)
                  for ks in (engine._with_sharding(k, *s) for s in item.shardings if s[0] != "none")}
        single = is_single_rank(k, bool(engine.shape.moe))
        assert single == (spread <= {(1, 1)}), (item.degrees, spread)
        # parc's job: FSDP2's copies differ by sharding even over one rank, so nothing is folded
        assert item.single_rank == (engine.folds_single_rank and single)
        assert engine._group_shardings(item, k) == ([("none", 0)] if item.single_rank else item.shardings)
        seen.add(single)
    assert False in seen
    if path.endswith("five-axes.par"):
        assert True in seen


@pytest.mark.parametrize("path", ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/schedules.par",
                                  "tests/golden/search/specs/moe-fold.par"])
def test_a_familys_floor_never_exceeds_its_groups_floors(path):
    """Search rejects every micro-batch of a group when their family's floor does not fit
    (`Engine._family_floor`): it must be at most each member's own first floor and
    peak under every sharding. It rests on the first floor never decreasing as the micro-batch
    grows, checked here directly too (sampled groups of three spaces, every micro-batch)."""
    import random

    engine = Engine(_space(path), keep=1)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert len(engine.space.micro) > 1
    checked = 0
    for group in random.Random(path).sample(groups, min(60, len(groups))):
        item, schedule, v, _, m, sp, recompute = group
        family = engine._family_floor(group)
        floors = [engine._first_floor(engine._knobs(item, schedule, v, micro, m, sp, recompute), item)
                  for micro in engine.space.micro]
        assert floors == sorted(floors), (group, floors)
        k, _, _, _, knobs = engine._parts(group)
        own = engine._first_floor(k, item)
        assert family <= own <= engine._quick_floor(k, item) <= min(peak(engine.shape, ks)[0] for ks in knobs)
        checked += 1
    assert checked


def _every_hole_open(path: str, gpus: int) -> str:
    """benchmarks/search_speed.py's spec with every hole open, for a shipped spec on `gpus` GPUs."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("search_speed", ROOT / "benchmarks" / "search_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.every_hole_open(ROOT / path, gpus)


@pytest.mark.parametrize("path,gpus", [("specs/tiny.par", 8),
                                       pytest.param("specs/llama3-70b-torchtitan.par", 32, marks=pytest.mark.long),
                                       pytest.param("specs/mixtral-8x7b-5d.par", 32, marks=pytest.mark.long)])
def test_shipped_specs_with_every_hole_open_rank_as_brute_force_does(path, gpus, monkeypatch):
    """The fast path (bounds, memory floors, families) against every candidate evaluated: the
    same winner and runners-up, in the same order, for shipped specs at small GPU counts."""
    monkeypatch.setattr(engine_module, "MAX_WORK", 10**12)
    space = build_space(compile_text(_every_hole_open(path, gpus), path="every-hole.par"))
    fast = Engine(space, keep=10).run()
    brute = BruteForce(space, keep=10**9)
    brute.steps = []
    everything = brute.run()
    assert everything.found, path
    assert [f.rank_key for f in fast.found] == [f.rank_key for f in everything.found[:10]]
    assert fast.stats.valid == everything.stats.valid


def test_searches_over_cluster_sizes_share_the_time_models_pieces_and_rank_the_same():
    """An outer search over cluster sizes calls the engine once per size: the per-layer pieces
    and rank loads are shared between them, and a search after another ranks as a cold one."""
    text = (ROOT / "specs" / "llama3-70b-search.par").read_text()
    sizes = [text.replace("nodes 128", f"nodes {n}") for n in (128, 64)]
    assert sizes[0] != sizes[1]
    engine_module.clear_caches()
    first = Engine(build_space(compile_text(sizes[0], path="a.par")), keep=10)
    first.run()
    warm = Engine(build_space(compile_text(sizes[1], path="b.par")), keep=10)
    assert warm._piece_cache is first._piece_cache and warm._piece_cache
    warm_found = warm.run().found
    engine_module.clear_caches()
    timing.clear_caches()
    cold = Engine(build_space(compile_text(sizes[1], path="b.par")), keep=10)
    assert cold._piece_cache is not first._piece_cache
    cold_found = cold.run().found
    assert cold_found and [f.rank_key for f in warm_found] == [f.rank_key for f in cold_found]
