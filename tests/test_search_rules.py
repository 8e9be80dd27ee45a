"""Search prunes with the checks' own conditions: an assignment search rejects is one `parc check`
rejects, and one it keeps is one `parc check` accepts (memory aside: that is E0401's job, which
search decides with the memory model's `peak`, compared in test_search_engine.py).

Assignments are drawn at random (fixed seed) from every hole's complete domain, and also from the
groups search keeps, so both answers are exercised; each is written into the spec with
`search.fill` and compiled by the real front end.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from parc.backends import job_diagnostics
from parc.diagnostics import has_errors
from parc.pipeline import compile_path, compile_text
from parc.search.engine import UNPREDICTED, Engine, _divisors
from parc.search.fill import fill
from parc.search.space import SHARDING, Assignment, build_space

from .conftest import GOLDEN, ROOT

SPECS = [ROOT / "specs" / "llama3-70b-search.par", *sorted((GOLDEN / "search" / "specs").glob("*.par"))]
DRAWS = 150
"""Assignments drawn per spec from the complete space, and as many from the groups search keeps."""


def _random_assignment(space, engine: Engine, rng: random.Random) -> Assignment:
    degrees = dict(space.fixed)
    rest = space.world
    for d in space.fixed.values():
        rest //= d
    for i, axis in enumerate(space.open_axes):
        d = rest if i == len(space.open_axes) - 1 else rng.choice(_divisors(rest))
        degrees[axis] = d
        rest //= d
    if space.ep_open:
        folded = 1
        for a in space.ep_fold:
            folded *= degrees[a]
        ep = rng.choice(_divisors(folded))
    else:
        ep = degrees.get("ep", space.ep_fixed)
    order = list(space.axes)
    if space.order_open:
        rng.shuffle(order)
    schedule = rng.choice(space.schedules)
    v = rng.choice(space.virtual_stage_choices(schedule, degrees.get("pp", 1)))
    return _assignment(space, degrees, ep, tuple(order), rng, schedule, v, rng.choice(space.micro),
                       rng.choice(space.sequence_parallel), rng.choice(space.recompute))


def _assignment(space, degrees, ep, order, rng, schedule, v, micro, sp, recompute) -> Assignment:
    dp = degrees.get("dp", 1)
    if space.sharding_open:
        options = [(mode, 0) for mode in SHARDING] + [("hsdp", s) for s in _divisors(dp) if 1 < s < dp]
        sharding, shard = rng.choice(options)
    else:
        mode, _, shard = space.fixed_sharding
        sharding, shard = mode, shard if mode == "hsdp" else 0
    return Assignment(degrees=tuple((a, degrees[a]) for a in order), ep=ep, micro=micro, recompute=recompute,
                      sharding=sharding, shard=shard, schedule=schedule, virtual_stages=v, sequence_parallel=sp)


def _kept_assignment(space, groups, rng: random.Random) -> Assignment:
    item, schedule, v, micro, _, sp, recompute = rng.choice(groups)
    return _assignment(space, item.degrees, item.ep, rng.choice(item.orders), rng, schedule, v, micro, sp, recompute)


def _neighbour(space, groups, rng: random.Random) -> Assignment:
    """A kept assignment with one value changed: where single rules start to fail."""
    from dataclasses import replace

    a = _kept_assignment(space, groups, rng)
    field = rng.choice(["degrees", "micro", "schedule", "sequence_parallel", "virtual_stages"])
    if field == "degrees" and len(space.open_axes) >= 2:
        x, y = rng.sample(list(space.open_axes), 2)
        degrees = dict(a.degrees)
        moved = rng.choice([p for p in (2, 3, 5) if degrees[x] % p == 0] or [1])
        degrees[x] //= moved
        degrees[y] *= moved
        ep = degrees["ep"] if "ep" in degrees else a.ep
        moved_a = replace(a, degrees=tuple((n, degrees[n]) for n, _ in a.degrees), ep=ep)
        dp = degrees.get("dp", 1)
        if a.sharding == "hsdp" and not (1 < a.shard < dp and dp % a.shard == 0):
            moved_a = replace(moved_a, sharding="none", shard=0)  # hsdp's factors follow dp, as search's do
        return moved_a
    if field == "micro":
        return replace(a, micro=rng.choice(space.micro))
    if field == "schedule":
        schedule = rng.choice(space.schedules)
        v = rng.choice(space.virtual_stage_choices(schedule, a.degree("pp")))
        return replace(a, schedule=schedule, virtual_stages=v)
    if field == "sequence_parallel":
        return replace(a, sequence_parallel=rng.choice(space.sequence_parallel))
    return replace(a, virtual_stages=rng.choice(space.virtual_stage_choices(a.schedule, a.degree("pp"))))


def _groups(space) -> tuple[Engine, list]:
    """Every group the rules keep, in the enumeration's order: those the scan gets and those of
    degrees whose memory floor does not fit (set aside unbounded, `Engine._degrees_floor`)."""
    from parc.search.engine import Stats

    engine = Engine(space, keep=1)
    kept = []
    engine._scan = lambda groups: kept.extend(groups)  # enumerate only
    engine.run()
    kept += [g for item, pipes, canonical, splits in engine._skipped
             for g in engine._list_groups(item, pipes, canonical, splits, 0, 1, 1, Stats())]
    kept.sort(key=lambda g: g[0].index)  # stable: each degrees' groups in their own order
    return engine, kept


def _draws(path: Path):
    compilation = compile_path(str(path.relative_to(ROOT)))
    space = build_space(compilation)
    engine, groups = _groups(space)
    assert groups, "the spec should have valid layouts"
    rng = random.Random(f"rules-{path.stem}")
    draws = [_random_assignment(space, engine, rng) for _ in range(DRAWS)]
    draws += [_kept_assignment(space, groups, rng) for _ in range(DRAWS)]
    draws += [_neighbour(space, groups, rng) for _ in range(DRAWS)]
    return compilation, space, engine, draws


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_search_rejects_exactly_what_check_rejects(path: Path):
    compilation, space, engine, draws = _draws(path)
    seen = {"kept": 0, "rejected": 0}
    for a in draws:
        problem = engine.rule_problem(a)
        result = compile_text(fill(space, a), path=compilation.source.path)
        found = list(result.diagnostics)
        if result.plan is not None and not has_errors(found):
            found += job_diagnostics(result.plan)  # what `parc compile` adds for the runtime
        errors = sorted({d.code for d in found if d.is_error and d.code != "E0401"})
        if problem == UNPREDICTED:  # parc check accepts it without a memory prediction; search cannot rank it
            assert not errors, (a, errors)
            continue
        if problem is None:
            seen["kept"] += 1
            assert not errors, f"search keeps {a}, parc check reports {errors}"
        else:
            seen["rejected"] += 1
            assert problem in errors, f"search rejects {a} with {problem}, parc check reports {errors}"
        assert result.plan is not None and not result.plan.holes
    assert seen["kept"] >= DRAWS // 2 and seen["rejected"] > 0, seen


def test_the_draws_reach_every_layout_rule():
    """The comparison is only as good as the rules it reaches: every rule search applies, but for
    E0313 (no catalogue model has heads that tp divides and hidden it does not)."""
    seen = set()
    for path in SPECS:
        _, _, engine, draws = _draws(path)
        seen.update(engine.rule_problem(a) for a in draws)
    wanted = {"E0304", "E0310", "E0312", "E0315", "E0316", "E0317", "E0318", "E0320", "E0321", "E0322",
              "E0330", "E0331", "E0332", "E0340", "E0341", "E0342", "E0350", "E0623", "E0624"}
    assert wanted <= seen, sorted(wanted - seen)


def test_a_kept_assignment_is_one_check_accepts_in_every_group():
    """Every group of a small space, with its first rank order and sharding, passes parc check."""
    compilation = compile_path("specs/llama3-70b-search.par")
    space = build_space(compilation)
    _, groups = _groups(space)
    rng = random.Random(0)
    for item, schedule, v, micro, _, sp, recompute in groups:
        a = _assignment(space, item.degrees, item.ep, item.orders[0], rng, schedule, v, micro, sp, recompute)
        result = compile_text(fill(space, a), path=compilation.source.path)
        assert not has_errors([d for d in result.diagnostics if d.code != "E0401"]), a
