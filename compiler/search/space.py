"""What `parc search` may choose: each `?` of a spec and the values it ranges over.

The space is read from the spec's typed IR (which `?` are where) and its Plan (everything fixed:
model, cluster, precision, ...). It is the *complete* space the issue names, before any rule:

- a `?` degree (tp, pp, dp, cp, ep on the layout line, or `ep ? over ...`): every positive
  integer; the layout's degrees must multiply to the cluster size, so in practice the ordered
  factorisations of the cluster size over the open axes (a folded ep: the divisors of the ranks
  it folds over);
- `order ?`: every permutation of the layout's axes;
- `micro-batch ?`: 1 to 16 sequences (`MICRO_BATCHES`);
- `recompute ?`: none, selective, full;
- `sharding ?`: none, zero1, zero2, zero3, and hsdp R x S for every R x S = dp with 1 < S < dp;
- `schedule ?`: the six schedules; `virtual-stages ?`: 1 to layers / pp chunks per rank
  (at most the memory model's 512 chunks per pipeline); with `schedule ?` and no
  `virtual-stages`, each schedule's default (2 for the multi-chunk schedules, else 1);
- `sequence-parallel ?`: on, off.

An `Assignment` is one value for every `?`; `canonical_key` orders assignments for the
documented tie-break (docs/search.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from ..memory import MAX_CHUNKS
from ..pipeline import Compilation
from ..plan import Plan
from ..spec import HOLE, Spec
from ..targets import runtime
from ..timing import SCHEDULES

MICRO_BATCHES = tuple(range(1, 17))
"""Sequences per micro-batch a `micro-batch ?` ranges over (the issue's 1 to 16)."""
RECOMPUTE = ("none", "selective", "full")
SHARDING = ("none", "zero1", "zero2", "zero3")
"""Sharding modes in canonical order; hsdp R x S follows them, by S ascending."""
SEQUENCE_PARALLEL = (True, False)
"""`on` first: the default, and the canonical value where it means nothing (tp 1)."""
MULTI_CHUNK = ("interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")
"""Schedules whose default is 2 virtual stages (resolution's default)."""

AXIS_HOLES = ("tp", "pp", "dp", "cp", "ep")


@dataclass(frozen=True)
class Assignment:
    """One value for every `?` of a spec (and the fixed values beside them), as numbers."""

    degrees: tuple[tuple[str, int], ...]
    """The layout line's axes in their chosen rank order, with degrees (fastest first)."""
    ep: int
    """The ep degree (a layout axis or a fold)."""
    micro: int
    recompute: str
    sharding: str
    shard: int
    """hsdp: ranks each replica is sharded over (S); 0 otherwise."""
    schedule: str
    virtual_stages: int
    sequence_parallel: bool

    def degree(self, axis: str) -> int:
        if axis == "ep":
            return self.ep
        return dict(self.degrees).get(axis, 1)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.degrees)

    def sharding_text(self) -> str:
        if self.sharding == "hsdp":
            return f"hsdp {self.degree('dp') // self.shard} x {self.shard}"
        return self.sharding


@dataclass(frozen=True)
class Space:
    """The holes of one spec and the fixed facts search works around."""

    compilation: Compilation
    plan: Plan
    spec: Spec
    world: int
    axes: tuple[str, ...]
    """The layout line's axes as written (rank order unless `order ?`)."""
    fixed: dict
    """Written degrees of layout axes (axis -> degree)."""
    open_axes: tuple[str, ...]
    """Layout axes whose degree is `?`, in written order."""
    ep_fold: tuple[str, ...]
    """Axes ep is folded over (empty when ep is a layout axis or absent)."""
    ep_open: bool
    """`ep ? over ...`."""
    ep_fixed: int
    order_open: bool
    micro: tuple[int, ...]
    recompute: tuple[str, ...]
    sharding_open: bool
    fixed_sharding: tuple[str, int, int]
    """(mode, replicate, shard) when the sharding is written."""
    schedules: tuple[str, ...]
    v_open: bool
    v_written: int | None
    """A written `virtual-stages N` (None when unwritten or `?`)."""
    sequence_parallel: tuple[bool, ...]
    holes: tuple[str, ...]
    """The `?`s in the order they are written (names as in `Spec.holes`)."""

    @property
    def has_holes(self) -> bool:
        return bool(self.holes)

    def virtual_stage_choices(self, schedule: str, pp: int) -> tuple[int, ...]:
        """Chunks per rank to consider for one schedule (before the rules)."""
        if self.v_written is not None:
            return (self.v_written,)
        if not self.v_open:
            return (2 if schedule in MULTI_CHUNK else 1,)
        most = max(1, min(self.plan.model.layers, MAX_CHUNKS) // max(1, pp))
        return tuple(range(1, most + 1))

    def orders(self, degrees: dict[str, int]) -> list[tuple[str, ...]]:
        """Rank orders to consider: the written one, or with `order ?` every permutation of the
        axes whose degree exceeds 1 placed in their written positions (axes of degree 1 change
        nothing, so they stay where they are written), the written order first."""
        if not self.order_open:
            return [self.axes]
        # the orders read only which axes exceed 1: kept per (axes, those), the many degree
        # assignments of a search sharing a few (emptied by `clear_caches`)
        key = (self.axes, tuple(degrees[a] > 1 for a in self.axes))
        kept = _ORDERS.get(key)
        if kept is None:
            moving = [a for a in self.axes if degrees[a] > 1]
            slots = [i for i, a in enumerate(self.axes) if degrees[a] > 1]
            out = []
            for perm in permutations(moving):
                order = list(self.axes)
                for slot, name in zip(slots, perm, strict=True):
                    order[slot] = name
                out.append(tuple(order))
            kept = _ORDERS[key] = tuple(out)
        return list(kept)


_ORDERS: dict[tuple, tuple[tuple[str, ...], ...]] = {}
"""`Space.orders` per (axes, which exceed 1)."""


def clear_caches() -> None:
    """Forget the rank orders kept per axes (benchmarks measure a cold start)."""
    _ORDERS.clear()


def build_space(compilation: Compilation) -> Space:
    """The space of a compiled spec (its plan exists, it has no front-end errors)."""
    spec, plan = compilation.spec, compilation.plan
    layout = spec.layout
    axes = tuple(a.name for a in layout.axes)
    fixed = {a.name: a.degree.value for a in layout.axes if a.degree.value != HOLE}
    open_axes = tuple(a.name for a in layout.axes if a.degree.value == HOLE)
    fold = spec.ep_fold
    ep_fold = tuple(o.value for o in fold.over) if fold is not None else ()
    ep_open = fold is not None and fold.degree.value == HOLE
    if fold is not None and not ep_open:
        ep_fixed = fold.degree.value
    else:
        ep_fixed = fixed.get("ep", 1)
    train = plan.training
    lay = plan.layout
    holes = tuple(h.value for h in spec.holes)
    pp_options = spec.axis_options.get("pp")
    v_setting = pp_options.settings.get("virtual_stages") if pp_options else None
    v_open = v_setting is not None and v_setting.value == HOLE
    v_written = v_setting.value if v_setting is not None and not v_open else None
    return Space(
        compilation=compilation, plan=plan, spec=spec, world=plan.cluster.world_size, axes=axes,
        fixed=fixed, open_axes=open_axes, ep_fold=ep_fold, ep_open=ep_open, ep_fixed=ep_fixed,
        order_open=lay.order_open,
        micro=MICRO_BATCHES if train.micro_batch is None else (train.micro_batch,),
        recompute=RECOMPUTE if train.recompute is None else (train.recompute,),
        sharding_open=lay.dp.sharding is None,
        fixed_sharding=(lay.dp.sharding or "none", lay.dp.replicate or 0, lay.dp.shard or 0),
        # an open schedule ranges over what the target runs (compiler/targets.py, E0360)
        schedules=tuple(s for s in SCHEDULES if s in runtime(plan.target).schedules) if lay.pp.schedule is None
        else (lay.pp.schedule,),
        v_open=v_open, v_written=v_written,
        sequence_parallel=SEQUENCE_PARALLEL if lay.tp.sequence_parallel is None else (lay.tp.sequence_parallel,),
        holes=holes,
    )


def canonical_key(space: Space, a: Assignment) -> tuple:
    """The last tie-break: each hole's value by its position in its domain, holes in the order
    they are written. Degrees and micro-batches ascend; recompute none < selective < full;
    sharding none < zero1 < zero2 < zero3 < hsdp (by S); schedules in the language's order
    (gpipe, 1f1b, interleaved-1f1b, interleaved-zb, zbv, dualpipe-v); sequence parallelism on <
    off; rank orders in permutation order of the written one (the written order first)."""
    key = []
    for hole in space.holes:
        if hole in AXIS_HOLES:
            key.append(a.degree(hole))
        elif hole == "order":
            degrees = dict(a.degrees)
            orders = space.orders(degrees)
            key.append(orders.index(a.order) if a.order in orders else len(orders))
        elif hole == "train.micro-batch":
            key.append(a.micro)
        elif hole == "train.recompute":
            key.append(RECOMPUTE.index(a.recompute))
        elif hole == "dp.sharding":
            key.append((SHARDING.index(a.sharding), 0) if a.sharding in SHARDING else (len(SHARDING), a.shard))
        elif hole == "pp.schedule":
            key.append(SCHEDULES.index(a.schedule))
        elif hole == "pp.virtual-stages":
            key.append(a.virtual_stages)
        elif hole == "tp.sequence-parallel":
            key.append(SEQUENCE_PARALLEL.index(a.sequence_parallel))
    return tuple(key)


def hole_values(space: Space, a: Assignment) -> dict[str, str]:
    """Each hole's chosen value as it is written into the spec."""
    out = {}
    for hole in space.holes:
        if hole in AXIS_HOLES:
            out[hole] = str(a.degree(hole))
        elif hole == "order":
            out[hole] = " x ".join(name for name in a.order)
        elif hole == "train.micro-batch":
            out[hole] = str(a.micro)
        elif hole == "train.recompute":
            out[hole] = a.recompute
        elif hole == "dp.sharding":
            out[hole] = a.sharding_text()
        elif hole == "pp.schedule":
            out[hole] = a.schedule
        elif hole == "pp.virtual-stages":
            out[hole] = str(a.virtual_stages)
        elif hole == "tp.sequence-parallel":
            out[hole] = "on" if a.sequence_parallel else "off"
    return out
