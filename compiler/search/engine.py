"""The search: enumerate the holes' values, prune with the rules, bound, evaluate, rank.

Candidates are never built as Plans. They are visited as a tree of plain numbers, each level
pruned by the checks' own conditions (`checks/predicates.py`) before the next is expanded:

1. degrees: every ordered factorisation of the cluster size over the open axes (and a folded
   ep's divisors); tp against the model and the NVLink domain, cp against the sequence, ep
   against the experts, the batch against dp (E0304, E0310-E0313, E0321, E0330, E0332,
   E0340-E0342);
2. pipeline: schedule and virtual stages (E0315-E0317; chunks the memory model predicts);
3. micro-batch: whole micro-batches, enough for the pipeline, accepted by the schedule
   (E0318, E0320-E0322); sequence parallelism (E0331); recomputation;
4. rank order: permutations passing E0304; orders that place every group alike (the same
   `timing.Geometry`) share one evaluation;
5. sharding: none, zero1-3, hsdp R x S.

A *group* is everything but the rank order and the sharding: one computation per micro-batch.
Each group enters a queue at a lower bound on the step time of all its candidates: first its
computation alone (`quick_bound`), then, when that comes out, the time model's own pieces with
the communication no rank order can avoid (`bound`: tp inside its domain; cp's and ep's
exchanges and the pipeline sends at the least any of its orders gives them), the smallest
bubble of any rank and the cheapest optimizer step. Communication only adds time and the bubble
only grows with it, so the bound never exceeds a candidate's step (tests/test_search_speed_exact.py
checks each bound against every order's and sharding's step over random groups). When a group
comes out of the queue at its full bound, memory floors first (a group whose
activations and least model states over its shardings do not fit is out, whatever its
sharding; its family's floor, the same group at the smallest micro-batch, is tried first and
rejects all its micro-batches at once), then a tighter bound per sharding
with the data-parallel tail at the best placement any order gives (`refine`), and back into the
queue; when it comes out again, memory per sharding, then step time per order that fits
(`_evaluate`, each order first at its own placements' bound). Before its full bound (a set's
groups: before any bound of their own), a group's held floor is tried (`Engine._held_floor`: the micro-batches
its first and last rank hold at once, each chunk at its layers x the least layer's saved
activations, from numbers shared across the space), the cheapest memory test that rejects most
of a large space's groups. The scan stops when the cheapest
bound left cannot beat the N-th best step
found, so the top N is exact; docs/search.md lists what is exact and what is a bound.

Some assignments are the same layout or dominated by one, and are folded into it without an
evaluation (exact, each tested): with pp 1 every schedule predicts the same step and at least
the memory of `1f1b`; with tp 1 sequence parallelism means nothing; sharding over a single
data-parallel rank (W0353) is `none` or worse where the data-parallel runtime makes no copies of
its own (Megatron-LM; `folds_single_rank`).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .. import kernels as kernel_model
from .. import timing
from ..calibration import DEFAULT
from ..checks import predicates as rules
from ..frozen import replaced
from ..memory import MAX_CHUNKS
from ..memory import activations as act
from ..memory.buffers import reserve_bytes
from ..memory.inputs import Knobs, fp8_transposed, model_code, shape_of
from ..memory.model import (
    _chunk_activations,
    activation_floor_with,
    activation_knobs,
    cached_logits_bytes,
    end_rank_activations,
    first_backward_ceiling,
    first_backward_floors,
    first_backward_relief_bound,
    most_rank_layers,
    one_fewer_in_pipeline,
    peak,
    rank_params,
    rank_signatures,
    released_backward,
    state_bytes,
    trim_caches,
    v_turn,
)
from ..memory.parameters import Params, chunks_of, layer_params, padded_vocab
from ..memory.schedules import walked_peak
from ..targets import float8_all_gather, fp8_scaling, grad_bytes
from ..targets import runtime as target_runtime
from ..timing import SCHEDULES
from . import space as space_module
from .space import RECOMPUTE, SEQUENCE_PARALLEL, SHARDING, Assignment, Space, canonical_key

UNPREDICTED = "unpredicted"
"""Not a rule: pipelines of more chunks than the memory model predicts (`memory.MAX_CHUNKS`); parc
check accepts them without a memory prediction, search cannot rank them."""
PIPES = "pipes"
"""The scan's mark of a queued set of pipelines (`Engine.pipes_bound`)."""
COARSE = "coarse"
"""The scan's mark of a group queued at its computation-only bound (`Engine.quick_bound`): when it
comes out, it goes back in at `Engine.bound`."""
FLOORED = "floored"
"""The scan's mark of a group queued alone (a set of one pipeline) at `Engine.alone_bound` (its
layout's `Engine.pipes_bound` with the MoE layers at a floor): when it comes out, it goes back in
at `Engine.pipes_bound` (ALONE)."""
SET_FLOORED = "set floored"
"""The scan's mark of a set of pipelines queued at `Engine.alone_bound` (`Engine.pipes_bound` with
the MoE layers at a floor; it reads no pipeline): when it comes out, it goes back in at
`Engine.pipes_bound` (PIPES)."""
ALONE = "alone"
"""The scan's mark of a group queued alone at its layout's `Engine.pipes_bound`: when it comes
out, it goes back in at its own `Engine.quick_bound` (COARSE)."""
MEMBER = "member"
"""The scan's mark of a pipeline of a set that came out (PIPES), queued at `Engine.member_bound`
(the set's `pipes_bound` plus a floor on its own bubble): when it comes out, it goes back in at
its own `Engine.quick_bound` (COARSE). Most never come out: their rank sums are never added."""
PIPES_SLACK = 1e-9
"""`pipes_bound` is shaved by this fraction: its total and the busiest rank's sum add the same
pieces in another order, so they may differ in the last bits."""
NO_NIC = (0.0, 0.0)
"""`timing.nic_busy` of a rank without collectives of its own (the bounds' `RankTimes`)."""
BOUND_SLACK = 1e-9
"""A group is skipped when its bound exceeds the N-th best step by more than this fraction, so
floating-point rounding in the bound's sums can never drop a candidate that ties."""
_KEEPS_LEAST = ("full", "selective", "none")
"""The recomputation modes in the order `_degrees_floor` tries them (most recomputed first)."""
MAX_GROUPS = 600_000
"""Most groups one search keeps (about 150 MB with what they share): beyond, the space is too large (E0503)."""
MAX_DEGREE_TUPLES = 2_000_000
"""Most degree assignments one search walks."""
CACHE_WORK = 25_000
"""The memory model's per-rank caches are emptied after every this many pipeline-rank
evaluations (`memory.model.trim_caches`): a search through deep pipelines would otherwise keep
gigabytes of per-rank activations and action lists. The schedule states stay: they are small
and walking them again cost more than half of a deep search."""
MAX_WORK = 400_000
"""Most pipeline-rank evaluations of the memory and time models one search makes (a memory or
time prediction costs one per pipeline rank, a memory floor one): a few minutes on a 2-core
machine at worst. The 16,384-GPU benchmark needs about 10,000; a search that would need more
stops with E0503."""


class SpaceTooLarge(Exception):
    """The space after the rules exceeds what one search walks (E0503)."""

    def __init__(self, what: str, count: int, limit: int, stats: Stats):
        super().__init__(f"{what}: more than {limit:,}")
        self.what, self.count, self.limit, self.stats = what, count, limit, stats


@dataclass
class Stats:
    """How the space was cut. Counts are assignments (one value for every hole); rank orders
    that differ only in where axes of degree 1 sit are one order."""

    raw: int = 0
    """The complete space: every value of every hole (degrees multiplying to the cluster)."""
    pruned: Counter = field(default_factory=Counter)
    """Assignments a rule rejected, by the code of the first rule that fails."""
    merged: int = 0
    """Valid assignments folded into an equivalent or dominating one without evaluation."""
    bounded: int = 0
    """Valid assignments in groups whose lower bound could not reach the top N."""
    out_of_memory: int = 0
    """Valid assignments whose memory was predicted and does not fit (E0401)."""
    timed: int = 0
    """Valid assignments that fit and whose step time was predicted."""
    groups: int = 0
    bound_evaluations: int = 0
    """Groups bounded before the scan, each by its own bound (`Engine.bound`) or with the other
    pipelines of its layout by theirs (`Engine.pipes_bound`): every group but those of degrees
    whose memory floor does not fit (`Engine._degrees_floor`, counted out of memory unbounded)."""
    group_bounds: int = 0
    """Of which groups bounded on their own (a set's groups when the set came out)."""
    pipe_set_bounds: int = 0
    """Sets of pipelines bounded as one (`Engine.pipes_bound`)."""
    memory_evaluations: int = 0
    time_evaluations: int = 0
    """Calls of the time model (rank orders with the same geometry share one)."""
    work: int = 0
    """Pipeline ranks the memory and time models evaluated (`MAX_WORK`)."""

    @property
    def valid(self) -> int:
        """Assignments that pass every layout rule (memory not yet known for all of them)."""
        return self.merged + self.bounded + self.out_of_memory + self.timed

    def as_json(self) -> dict:
        return {"raw": self.raw, "valid": self.valid, "pruned_by_rule": dict(sorted(self.pruned.items())),
                "merged": self.merged, "bounded": self.bounded, "out_of_memory": self.out_of_memory,
                "timed": self.timed, "groups": self.groups, "bound_evaluations": self.bound_evaluations,
                "memory_evaluations": self.memory_evaluations, "time_evaluations": self.time_evaluations,
                "work": self.work}


@dataclass(frozen=True)
class Found:
    """One evaluated candidate, as the fast path predicted it."""

    step: float
    peak_bytes: int
    key: tuple
    assignment: Assignment

    @property
    def rank_key(self) -> tuple:
        """The documented order: step time ascending (tokens/s descending), then peak memory
        ascending, then the canonical order of the assignment."""
        return (self.step, self.peak_bytes, self.key)


@dataclass
class Outcome:
    found: list[Found]
    """The best candidates, best first (up to the number asked for, plus a few spares)."""
    stats: Stats
    smallest_peak: int | None
    """The least memory any evaluated candidate needs (when none fits)."""
    usable_bytes: int


class _Degrees:
    """One degree assignment that passed the degree rules, with what its subtree shares."""

    __slots__ = ("index", "degrees", "ep", "batch_degree", "orders", "order_weight", "orders_raw",
                 "shardings", "shardings_raw", "classes", "opt_cache", "single_rank")

    def __init__(self, index, degrees, ep, batch_degree):
        self.index = index
        self.degrees = degrees
        self.ep = ep
        self.batch_degree = batch_degree
        self.orders: list[tuple[str, ...]] = []
        self.order_weight = 1
        self.orders_raw = 1
        self.shardings: list[tuple[str, int]] = []
        self.shardings_raw = 1
        self.classes: dict[int, list] = {}
        self.opt_cache: dict = {}
        self.single_rank = False
        """Every sharding spreads over a single rank (`is_single_rank`)."""


class _Sums:
    """One tuple of pipeline ranks' sums (`Engine._kept_sums`: per rank (F, B input, B weight,
    recomputation, exposed forward, exposed backward, load)) with what `Engine._bound_core`
    reads of them: the busiest rank's total, taken in the pass that sums them, and the least
    per-stage bubble over the ranks per schedule, filled on first request."""

    __slots__ = ("pieces", "loads", "sums", "busiest", "bubbles")

    def __init__(self, pieces: dict, loads: tuple, sums: tuple, busiest: float):
        self.pieces = pieces
        self.loads = loads
        """The distinct rank loads the sums were made from (kept by identity: `_kept_sums`' key)."""
        self.sums = sums
        self.busiest = busiest
        self.bubbles: dict[str, float] = {}


_GROUP_KNOBS = ("tp", "pp", "dp", "cp", "ep", "ep_axis", "virtual_stages", "schedule", "sequence_parallel",
                "sharding", "hsdp_shard", "micro_batch", "microbatches", "recompute")
"""The `Knobs` fields a group (and its sharding) sets; the engine's `fixed` sets the others."""


def knobs_builder(fixed: dict) -> Callable[..., Knobs]:
    """A function of `_GROUP_KNOBS` (positional, in that order) returning the `Knobs` that
    `Knobs(**those, **fixed)` returns: every field set through its slot, the others at
    `fixed`'s values or their defaults (`_hash` 0: hashed on first use). A frozen dataclass's
    own `__init__` sets each of its fields through `object.__setattr__` by name, and the
    call spreads `fixed` as keywords: 7.5 us a bundle, 1.5 us here, and a search builds one per
    group it bounds (tests/test_search_speed_exact.py holds each equal, field by field and in
    its hash, to the bundle built the plain way). Generated once per engine, as `dataclasses`
    generates `__init__` itself."""
    env: dict = {"new": object.__new__, "Knobs": Knobs}
    lines = [f"def build({', '.join(_GROUP_KNOBS)}):", "    o = new(Knobs)"]
    for f in dataclasses.fields(Knobs):
        env[f"set_{f.name}"] = getattr(Knobs, f.name).__set__
        if f.name in _GROUP_KNOBS:
            lines.append(f"    set_{f.name}(o, {f.name})")
            continue
        if f.name in fixed:
            env[f"v_{f.name}"] = fixed[f.name]
        elif f.default is not dataclasses.MISSING:
            env[f"v_{f.name}"] = f.default
        else:
            raise TypeError(f"Knobs.{f.name} has no value for the search's builder")
        lines.append(f"    set_{f.name}(o, v_{f.name})")
    lines.append("    return o")
    exec("\n".join(lines), env)  # noqa: S102 - our own field names, as dataclasses does
    return env["build"]


class Engine:
    """One search over one space; `run()` returns the best candidates and the statistics."""

    def __init__(self, space: Space, keep: int, progress: Callable[[int, int], None] | None = None,
                 software: timing.Software = timing.PARC, runtime: str = "torch", ceiling: float = math.inf,
                 degree_values: dict[str, frozenset[int]] | None = None):
        """`keep` the best candidates; `software` and `runtime` are the time and memory models'
        (parc's runtime unless a study says otherwise); with a `ceiling`, every candidate at most
        that fast is kept (up to `keep`), which ranks a given layout in its space. With
        `degree_values` (open axis -> degrees), the factorisations skip every other degree of
        those axes unenumerated: the caller (the outer cluster search) passes per axis a set that
        holds every degree a valid layout can take, so the answer is the same, and the
        statistics then count only the assignments enumerated."""
        self.space = space
        self.keep = keep
        self.progress = progress
        plan = space.plan
        self.plan = plan
        self.model = plan.model
        self.shape = shape_of(plan)
        self.hw = timing.hardware_of(plan)
        self.constants = DEFAULT
        self.software = software
        self.folds_single_rank = folds_single_rank(software)
        """Shardings over a single rank fold into `none` (`folds_single_rank`)."""
        self.runtime = runtime
        self.ceiling = ceiling
        self.degree_values = degree_values
        self.usable = plan.cluster.gpu.hbm_bytes - reserve_bytes(plan.cluster.gpu.hbm_bytes)
        self.domain = plan.cluster.domain_size
        self.pcie = plan.cluster.link == "pcie"
        train, lay = plan.training, plan.layout
        self.seq, self.global_batch = train.seq_len, train.global_batch
        self.flavour = lay.cp.flavour
        self.split = lay.pp.split
        self.stats = Stats()
        self.ep_axis = "ep" in space.axes
        self.fixed = dict(precision=train.precision, optimizer=train.optimizer,
                          recompute_layers=train.recompute_layers, recompute_modules=train.recompute_modules,
                          offload_layers=train.offload_layers, cp_flavour=self.flavour, seq=self.seq,
                          split=self.split, ep_over_tp="tp" in space.ep_fold, runtime=runtime,
                          grad_bytes=grad_bytes(plan.target, train.precision),
                          pp_receives=target_runtime(plan.target).pp_receives,
                          model_code=model_code(plan.target), fp8_recipe=fp8_scaling(plan.target),
                          fp8_transposed=fp8_transposed(plan.cluster.gpu.generation),
                          fp8_all_gather=float8_all_gather(plan.target), fp8_params=plan.target.fp8_params)
        self._new_knobs = knobs_builder(self.fixed)
        self.needs_sp = plan.target.name == "megatron" and bool(rules.megatron_needs_sequence_parallel(
            bool(plan.model.is_moe), plan.target.tp_overlap or "backward"))
        """Megatron-LM refuses tp > 1 without sequence parallelism here (E0624)."""
        self.best: list[Found] = []
        self._sums: dict[tuple, _Sums] = {}  # `_kept_sums`' sums per (pieces, loads, send)
        self._sharded_knobs: dict[tuple, tuple] = {}  # `_with_sharding` per (knobs, sharding, shard)
        self._piece_cache, self._load_cache = _shared_caches(
            (self.shape, self.hw, self.constants, software, runtime, self.pcie, self.flavour, self.seq, self.split,
             train.precision, train.recompute_layers))
        c, hw = self.constants, self.hw
        self.inside_is_fastest = (c.latency_intra <= c.latency_inter
                                  and hw.intra * c.bus_nvlink >= hw.nic * c.bus_network)
        """Links inside a fast level beat links across it (true of every catalogue GPU): the
        bound may then take the inside link as the fastest an order can give."""
        self.smallest_peak: int | None = None
        moe_layers = sum(self.shape.moe) if self.shape.moe else 0
        self._layer_counts = tuple((moe, n) for moe, n in ((False, self.shape.layers - moe_layers),
                                                            (True, moe_layers)) if n)
        self._tp_problems: dict[int, str | None] = {}
        self._micro_lists: dict[tuple, tuple[list, list]] = {}  # `_micro_rules`
        self._pipe_classes: dict[tuple, int] = {}  # (pp, schedule, v) -> `_pipeline_class`
        self._pipe_class_ids: dict[tuple, int] = {}
        self._floor_pieces: dict[tuple, tuple] = {}  # `_layer_floor_pieces`
        self._skipped: list[tuple] = []  # groups of degrees whose floor does not fit (`run`)
        self.pipe_sets = train.recompute_layers is None and not train.offload_layers
        """Whether groups that differ only in their pipeline enter the scan as one set at
        `pipes_bound` (not with `full N` nor offloading: the layers they treat per rank follow
        the chunking)."""
        self.lazy_alone = True
        """Whether a group that is a set of one, and a set of pipelines, enter the scan at
        `alone_bound` (their own bounds computed when that comes out: `_scan`) rather than at
        their own (`quick_bound`, `pipes_bound`; the tests run the scan both ways)."""
        self.known_out = True
        """Whether the scan counts a group out of memory, without a bound or a floor of its own,
        when its first floor's family (`_first_fails`) already failed at a micro-batch no larger
        than its own (the tests run the scan both ways)."""
        self.held_floors = True
        """Whether the scan tries each group's held floor (`_held_out`) before its bounds: when a set
        of pipelines comes out, each of its groups before it is queued; a group alone when it comes
        out at its computation-only bound (the tests run the scan both ways)."""

    # -----------------------------------------------------------------------------------------
    # Level 1: degrees

    def _factorisations(self, prune: Callable[[dict, str, int], bool] | None = None):
        """(layout degrees, ep) for every way to fill the open degrees (the raw space). With
        `prune` (the chosen degrees so far, the axis just chosen, what is left to split), a
        prefix it accepts is not descended into: it has counted the subtree itself (`run`)."""
        space = self.space
        rest = space.world
        for d in space.fixed.values():
            if rest % d:
                return
            rest //= d
        opened = space.open_axes
        allowed = [self.degree_values.get(a) if self.degree_values else None for a in opened]

        # each assignment as one dict in the layout's axis order (the fixed degrees' values kept)
        template = {a: space.fixed.get(a, 0) for a in space.axes}

        def fill(remaining: int):
            """Depth first, each axis's divisors ascending, the last axis taking what is left:
            one generator frame with a stack of divisor iterators (a recursive generator passes
            each of the hundred thousand assignments up through every level)."""
            last = len(opened) - 1
            chosen: dict = {}
            rests, iters = [remaining] * (last + 1), [iter(_divisors(remaining))] * (last + 1)
            level = 0
            while level >= 0:
                if level == last:
                    if allowed[last] is None or rests[last] in allowed[last]:
                        degrees = template.copy()
                        degrees.update(chosen)
                        degrees[opened[last]] = rests[last]
                        yield degrees
                    level -= 1
                    continue
                for d in iters[level]:
                    if allowed[level] is not None and d not in allowed[level]:
                        continue
                    chosen[opened[level]] = d
                    if prune is not None and prune(chosen, opened[level], rests[level] // d):
                        continue
                    level += 1
                    rests[level] = rests[level - 1] // d
                    if level < last:
                        iters[level] = iter(_divisors(rests[level]))
                    break
                else:
                    chosen.pop(opened[level], None)
                    level -= 1

        if not opened:
            if rest != 1:
                return
            layouts = [{a: space.fixed[a] for a in space.axes}]
        else:
            layouts = fill(rest)
        for degrees in layouts:
            if space.ep_open:
                folded = math.prod(degrees[a] for a in space.ep_fold)
                for ep in _divisors(folded):
                    yield degrees, ep
            else:
                yield degrees, (degrees["ep"] if self.ep_axis else space.ep_fixed)

    def _degree_problem(self, degrees: dict, ep: int) -> str | None:
        """The first degree rule that fails, in the checks' report order."""
        model = self.model
        tp, cp = degrees.get("tp", 1), degrees.get("cp", 1)
        if tp > 1 and not self.pcie:
            # with `order ?` tp can go first (stride 1, the best placement); else as written
            if self.space.order_open and rules.crosses_domain(1, tp, self.domain):
                return "E0304"
            if not self.space.order_open and self._order_problem(degrees, self.space.axes):
                return "E0304"
        problem = self._tp_problems.get(tp, False)
        if problem is False:
            problem = self._tp_problems[tp] = self._tp_problem(tp)
        if problem:
            return problem
        if degrees.get("pp", 1) > model.layers:  # no chunk count fits: E0315, or E0316 with a split
            return rules.layers_fill_chunks(model.layers, degrees["pp"], 1, self.split)
        batch_degree = degrees.get("dp", 1) * (degrees.get("ep", 1) if self.ep_axis else 1)
        if self.global_batch % batch_degree:
            return "E0321"
        if not rules.sequence_splits(self.seq, cp, self.flavour):
            return "E0330"
        if not rules.all_to_all_splits_heads(model.heads, tp, cp, self.flavour):
            return "E0332"
        problem = rules.experts_problem(model.is_moe, model.experts, ep)
        if problem:
            return problem
        if self.space.ep_fold and not rules.ep_fits_folded(ep, math.prod(degrees[a] for a in self.space.ep_fold)):
            return "E0341"
        mode, replicate, shard = self.space.fixed_sharding
        if not self.space.sharding_open and mode == "hsdp" and not rules.hsdp_factors_match(
                replicate, shard, degrees.get("dp", 1)):
            return "E0350"
        return None

    def _prunable(self) -> bool:
        """Whether the walk may count a subtree at once (`_prefix_problem`): every assignment is
        one degree tuple (no ep folded over other axes, whose divisors multiply the tuples
        unevenly), and tp's first rule reads tp alone (`order ?`, PCIe, or no tp axis: with a
        written order E0304 reads the degrees placed before tp)."""
        space = self.space
        return not space.ep_open and (space.order_open or self.pcie or "tp" not in space.axes)

    def _prefix_problem(self, chosen: dict, axis: str) -> str | None:
        """The first degree rule (`_degree_problem`'s order) that every assignment below a
        prefix of the walk fails, when the prefix's degrees decide it: tp's own rules (E0304 at
        tp's best stride, E0310, E0312, E0313) once tp is chosen, and pp against the layers
        once pp is chosen and tp (chosen or written) passes. None when the prefix does not
        decide (the walk goes on). Read only where `_prunable`."""
        if axis not in ("tp", "pp"):
            return None
        space = self.space
        if "tp" in chosen:
            tp = chosen["tp"]
        elif "tp" in space.open_axes:
            return None  # tp's rules come first and tp is still open below
        else:
            tp = space.fixed.get("tp", 1)
        problem = self._tp_first(tp)
        if problem or axis == "tp":
            return problem
        pp = chosen["pp"]
        if pp > self.model.layers:
            return rules.layers_fill_chunks(self.model.layers, pp, 1, self.split)
        return None

    def _tp_first(self, tp: int) -> str | None:
        """`_degree_problem`'s first two rules, which read tp alone under `_prunable`."""
        if tp > 1 and not self.pcie and self.space.order_open and rules.crosses_domain(1, tp, self.domain):
            return "E0304"
        problem = self._tp_problems.get(tp, False)
        if problem is False:
            problem = self._tp_problems[tp] = self._tp_problem(tp)
        return problem

    def _subtree(self, chosen: dict, rest: int, raw_of: Callable[[str, int], int]) -> tuple[int, int]:
        """(degree tuples, their summed raw factors) below a prefix of the walk: every ordered
        factorisation of `rest` over the axes not yet chosen (each within the outer search's
        degree set, the last taking what is left), each weighing the product of `raw_of` over
        every axis (the written degrees' too), as `run` weighs one tuple."""
        space = self.space
        opened = space.open_axes
        allowed = self.degree_values or {}
        below = opened[len(chosen):]
        constant = math.prod(raw_of(a, d) for a, d in chosen.items()) * math.prod(
            raw_of(a, d) for a, d in space.fixed.items())
        for axis in ("pp", "dp"):  # an axis the layout does not name is 1, and still weighs
            if axis not in space.axes:
                constant *= raw_of(axis, 1)
        memo: dict[tuple[int, int], tuple[int, int]] = {}

        def walk(level: int, remaining: int) -> tuple[int, int]:
            key = (level, remaining)
            if key in memo:
                return memo[key]
            axis, ok = below[level], allowed.get(below[level])
            if level == len(below) - 1:
                found = (1, raw_of(axis, remaining)) if ok is None or remaining in ok else (0, 0)
            else:
                count = weight = 0
                for d in _divisors(remaining):
                    if ok is not None and d not in ok:
                        continue
                    c, w = walk(level + 1, remaining // d)
                    count += c
                    weight += raw_of(axis, d) * w
                found = (count, weight)
            memo[key] = found
            return found

        if not below:
            return 1, constant
        count, weight = walk(0, rest)
        return count, constant * weight

    def _tp_problem(self, tp: int) -> str | None:
        """The degree rules that read tp alone (E0310, E0312, E0313), in report order: kept per
        tp (`_tp_problems`), since a space's degree assignments repeat a few tp degrees."""
        model = self.model
        if not rules.tp_splits(model.heads, tp):
            return "E0310"
        for _, size, _ in rules.tp_ffn_sizes(model.layers, len(model.moe_layers), model.ffn, model.is_moe,
                                             model.shared_experts, model.expert_ffn):
            if not rules.tp_splits(size, tp):
                return "E0312"
        if not rules.tp_splits(model.hidden, tp):
            return "E0313"
        return None

    def _orders(self, item: _Degrees) -> None:
        """Rank orders that keep tp inside the NVLink domain (E0304), and the raw orders each
        stands for (the positions of the axes of degree 1)."""
        space = self.space
        degrees = item.degrees
        orders = space.orders(degrees)
        moving = sum(1 for a in space.axes if degrees[a] > 1)
        total = math.factorial(len(space.axes)) if space.order_open else 1
        item.order_weight = total // math.factorial(moving) if space.order_open else 1
        item.orders_raw = total
        item.orders = [order for order in orders if self._order_problem(degrees, order) is None]

    def _shardings(self, item: _Degrees) -> list[tuple[str, int]]:
        """The written sharding, or every mode and every hsdp factorisation of dp."""
        space = self.space
        dp = item.degrees.get("dp", 1)
        refused = self._fsdp_refused(item.degrees, item.ep)
        if not space.sharding_open:
            mode, _, shard = space.fixed_sharding
            return [] if mode == "zero3" and refused else [(mode, shard if mode == "hsdp" else 0)]  # E0623
        allowed = target_runtime(self.plan.target).shardings  # what the target runs (E0362)
        options = [(mode, 0) for mode in SHARDING if mode in allowed and not (mode == "zero3" and refused)]
        if "hsdp" in allowed:
            options += [("hsdp", s) for s in _divisors(dp) if 1 < s < dp]
        return options

    # -----------------------------------------------------------------------------------------
    # Levels 2-3: pipeline, micro-batch, sequence parallelism, recomputation

    def _pipelines(self, pp: int) -> tuple[list[tuple[str, int]], list[tuple[str, int, str]], int]:
        """(valid (schedule, v), rejected (schedule, v, code), raw count) for a pp degree."""
        space = self.space
        layers = self.model.layers
        valid, rejected, raw = [], [], 0
        for schedule in space.schedules:
            for v in space.virtual_stage_choices(schedule, pp):
                raw += 1
                problem = self._pipeline_problem(pp, schedule, v, layers)
                if problem:
                    rejected.append((schedule, v, problem))
                else:
                    valid.append((schedule, v))
        return valid, rejected, raw

    def _pipeline_problem(self, pp: int, schedule: str, v: int, layers: int) -> str | None:
        problem = rules.layers_fill_chunks(layers, pp, v, self.split)
        if problem is None and not rules.virtual_stages_fit(schedule, pp, v):
            problem = "E0317"
        if problem is None and self.fixed["offload_layers"]:
            problem = rules.offload_problem(layers, pp, v, self.split, self.fixed["offload_layers"],
                                            self.plan.target.name)
        if problem is None and pp * v > MAX_CHUNKS:
            problem = UNPREDICTED
        return problem

    def _micro_problem(self, batch_degree: int, pp: int, schedule: str, micro: int) -> tuple[int | None, str | None]:
        """(micro-batches per step, the first batch or schedule rule that fails)."""
        m = rules.microbatches_per_step(self.global_batch, batch_degree, micro)
        if m is None:
            return None, "E0321"
        if not rules.microbatches_fill_pipeline(m, pp):
            return m, "E0322"
        return m, rules.schedule_rejects_microbatches(schedule, pp, m)

    def _micro_rules(self, batch_degree: int, pp: int, schedule: str) -> tuple[list, list]:
        """(the valid (micro-batch, micro-batches per step), the first rule each other micro-batch
        fails) of a schedule: `_micro_problem` reads the batch degree, pp and the schedule alone,
        so the degree assignments that share them (every tp, cp and ep of a dp) share the lists
        (read only)."""
        key = (batch_degree, pp, schedule)
        found = self._micro_lists.get(key)
        if found is None:
            valid, problems = [], []
            for micro in self.space.micro:
                m, problem = self._micro_problem(batch_degree, pp, schedule, micro)
                if problem:
                    problems.append(problem)
                else:
                    valid.append((micro, m))
            found = self._micro_lists[key] = (valid, problems)
        return found

    def _order_problem(self, degrees: dict, order: tuple[str, ...]) -> str | None:
        """E0304 for one rank order: tp's groups leave the NVLink domain."""
        tp = degrees.get("tp", 1)
        if tp <= 1 or self.pcie:
            return None
        stride = 1
        for name in order:
            if name == "tp":
                break
            stride *= degrees[name]
        return "E0304" if rules.crosses_domain(stride, tp, self.domain) else None

    def _runtime_problem(self, degrees: dict, ep: int = 1) -> str | None:
        """What `parc compile` refuses for the generated runtime although `parc check` accepts it:
        the checks allow replicated kv heads (W0311), the runtime splits K and V by whole heads
        (E0603). Search proposes only what parc can run. And what the target refuses with these
        degrees: torchtitan's async TP without compile at tp > 1 (E0616), Megatron-LM's FSDP2
        (the written sharding) with pp or ep (E0623)."""
        tp = degrees.get("tp", 1)
        if tp > 1 and self.model.kv_heads % tp:
            return "E0603"
        target = self.plan.target
        if target.name == "torchtitan" and rules.torchtitan_async_tp_refused(tp, target.tp_overlap, target.compile):
            return "E0616"  # torchtitan's async TP is a torch.compile pass
        if not self.space.sharding_open and self.space.fixed_sharding[0] == "zero3" and self._fsdp_refused(degrees, ep):
            return "E0623"
        return None

    def _fsdp_refused(self, degrees: dict, ep: int) -> bool:
        """E0623: Megatron-LM's torch FSDP2 (zero3) refused with these degrees or the spec's model."""
        return self.plan.target.name == "megatron" and bool(rules.megatron_fsdp_refuses(
            degrees.get("pp", 1), ep, self.plan.model.tied_embeddings, self.fixed["precision"]))

    def _sp_refused(self, tp: int, sequence_parallel: bool) -> bool:
        """E0624: Megatron-LM refuses tp > 1 without sequence parallelism here."""
        return self.needs_sp and tp > 1 and not sequence_parallel

    def rule_problem(self, a: Assignment) -> str | None:
        """The first rule a whole assignment fails, checked as `run` checks each level (used by
        tests to compare search's pruning with `parc check`)."""
        degrees = {name: degree for name, degree in a.degrees}
        problem = self._degree_problem(degrees, a.ep)
        if problem:
            return problem
        pp, tp, cp = degrees.get("pp", 1), degrees.get("tp", 1), degrees.get("cp", 1)
        problem = self._pipeline_problem(pp, a.schedule, a.virtual_stages, self.model.layers)
        if problem:
            return problem
        batch_degree = degrees.get("dp", 1) * (degrees.get("ep", 1) if self.ep_axis else 1)
        _, problem = self._micro_problem(batch_degree, pp, a.schedule, a.micro)
        if problem:
            return problem
        if not rules.local_sequence_splits(self.seq, cp, tp, a.sequence_parallel):
            return "E0331"
        if self._sp_refused(tp, a.sequence_parallel):
            return "E0624"
        if a.sharding not in target_runtime(self.plan.target).shardings:
            return "E0362"
        if a.sharding == "zero3" and self._fsdp_refused(degrees, a.ep):
            return "E0623"
        return self._order_problem(degrees, a.order) or self._runtime_problem(degrees, a.ep)

    def run(self) -> Outcome:
        """Every group of the space, then the scan (`_scan`), with the cyclic garbage collector
        paused (`collector_paused`)."""
        with collector_paused():
            return self._run()

    def _run(self) -> Outcome:
        space, stats = self.space, self.stats
        groups = []
        tuples = 0
        pipelines_by_pp: dict[int, tuple] = {}
        n_micro, n_sp, n_rec = len(space.micro), len(space.sequence_parallel), len(space.recompute)
        orders_raw = math.factorial(len(space.axes)) if space.order_open else 1
        shard_raws: dict[int, int] = {}  # per dp: the raw shardings (every mode, every hsdp split)
        skipped: list[tuple] = []  # degrees whose groups do not fit (`_degrees_floor`), to list again
        n_skipped = 0  # their groups

        def raw_of(axis: str, d: int) -> int:
            """An axis's factor in an assignment's raw count: pp's pipelines, dp's shardings."""
            if axis == "pp":
                if d not in pipelines_by_pp:
                    pipelines_by_pp[d] = self._pipelines(d)
                return pipelines_by_pp[d][2]
            if axis == "dp":
                found = shard_raws.get(d)
                if found is None:
                    found = shard_raws[d] = (len(SHARDING) + sum(1 for s in _divisors(d) if 1 < s < d)
                                             if space.sharding_open else 1)
                return found
            return 1

        def prune(chosen: dict, axis: str, rest: int) -> bool:
            """A prefix whose first failing rule its degrees decide (`_prefix_problem`): every
            assignment below it is counted under that rule, as the walk would count each."""
            nonlocal tuples
            problem = self._prefix_problem(chosen, axis)
            if problem is None:
                return False
            count, weight = self._subtree(chosen, rest, raw_of)
            if tuples + count > MAX_DEGREE_TUPLES:
                return False  # walked one by one: the limit stops the walk where it always did
            tuples += count
            raw = weight * orders_raw * n_micro * n_sp * n_rec
            stats.raw += raw
            stats.pruned[problem] += raw
            return True

        for degrees, ep in self._factorisations(prune if self._prunable() else None):
            tuples += 1
            if tuples > MAX_DEGREE_TUPLES:
                raise SpaceTooLarge("degree assignments", tuples, MAX_DEGREE_TUPLES, stats)
            pp, dp = degrees.get("pp", 1), degrees.get("dp", 1)
            pipes_raw = raw_of("pp", pp)
            pipes, bad_pipes, _ = pipelines_by_pp[pp]
            shard_raw = raw_of("dp", dp)
            below_pipe = orders_raw * n_micro * n_sp * n_rec * shard_raw
            stats.raw += pipes_raw * below_pipe
            problem = self._degree_problem(degrees, ep) or self._runtime_problem(degrees, ep)
            if problem:
                stats.pruned[problem] += pipes_raw * below_pipe
                continue
            for _, _, code in bad_pipes:
                stats.pruned[code] += below_pipe
            if not pipes:
                continue
            item = _Degrees(tuples, degrees, ep, dp * (degrees.get("ep", 1) if self.ep_axis else 1))
            self._orders(item)
            tp, cp = degrees.get("tp", 1), degrees.get("cp", 1)
            e0304 = (len(space.orders(degrees)) - len(item.orders)) * item.order_weight
            if not item.orders:
                stats.pruned["E0304"] += len(pipes) * n_micro * n_sp * orders_raw * n_rec * shard_raw
                continue
            item.shardings = self._shardings(item)
            canonical_pipe = canonical_pipe_of(pipes)
            # the replicas depend on the degrees only: any pipeline and micro-batch will do
            item.single_rank = self.folds_single_rank and is_single_rank(
                self._knobs(item, *canonical_pipe, space.micro[0], 1, True, "none"), bool(self.shape.moe))
            splits = {sp: rules.local_sequence_splits(self.seq, cp, tp, sp) for sp in space.sequence_parallel}
            # degrees whose every candidate's memory floor exceeds the part: their groups are
            # counted out of memory and never bounded (kept aside for "each needs at least")
            out = self._degrees_floor(item, [sp for sp in space.sequence_parallel
                                             if splits[sp] and not self._sp_refused(tp, sp)]) > self.usable
            listed = self._list_groups(item, pipes, canonical_pipe, splits, e0304, orders_raw, shard_raw, stats,
                                       count_only=out)
            n_listed = listed if out else len(listed)
            if len(groups) + n_skipped + n_listed > MAX_GROUPS:
                raise SpaceTooLarge("groups", MAX_GROUPS + 1, MAX_GROUPS, stats)
            if out:
                if n_listed:
                    stats.out_of_memory += self._group_size((item,)) * n_listed
                    skipped.append((item, pipes, canonical_pipe, splits))
                    n_skipped += n_listed
                continue
            groups.extend(listed)
        self._skipped = skipped
        stats.groups = len(groups) + n_skipped
        return self._scan(groups)

    def _list_groups(self, item: _Degrees, pipes: list, canonical_pipe: tuple, splits: dict, e0304: int,
                     orders_raw: int, shard_raw: int, stats: Stats, count_only: bool = False) -> list[tuple] | int:
        """The groups of one degree assignment, in the scan's order (pipeline, micro-batch,
        sequence parallelism, recomputation: the index breaks ties between equal bounds), and
        the counts of what its rules reject or fold (`stats`); `count_only`, how many (the
        degrees' floor set them aside: listed again only if nothing fits). What depends on fewer
        of the loops' values than the loops is computed once: the micro-batch rules per schedule
        (every virtual-stage count alike), the sequence splits per degrees."""
        space = self.space
        n_sp, n_rec = len(space.sequence_parallel), len(space.recompute)
        recomputes = space.recompute
        pruned = stats.pruned
        pp, tp = item.degrees.get("pp", 1), item.degrees.get("tp", 1)
        below_order = n_rec * shard_raw
        n_orders_valid = len(item.orders) * item.order_weight
        valid_here = n_orders_valid * len(item.shardings)
        folded = n_orders_valid * (len(item.shardings) - 1) if item.single_rank and space.sharding_open else 0
        refused_sp = [sp for sp in space.sequence_parallel if splits[sp] and self._sp_refused(tp, sp)]  # E0624
        good_sp = [sp for sp in space.sequence_parallel if splits[sp] and sp not in refused_sp]
        bad_sp = n_sp - len(good_sp) - len(refused_sp)
        # tp 1: sequence parallelism means nothing, every value but the first is folded into it
        kept_sp = [sp for sp in good_sp if not (tp == 1 and n_sp > 1 and sp != SEQUENCE_PARALLEL[0])]
        merged_sp = len(good_sp) - len(kept_sp)
        per_schedule: dict[str, tuple] = {}  # schedule -> (its valid (micro-batch, micro-batches per step),
        #                                       the first rule each other micro-batch fails)
        listed: list[tuple] = []
        counted = 0
        for schedule, v in pipes:
            found = per_schedule.get(schedule)
            if found is None:
                found = per_schedule[schedule] = self._micro_rules(item.batch_degree, pp, schedule)
            valid, problems = found
            for problem in problems:
                pruned[problem] += n_sp * orders_raw * below_order
            n_valid = len(valid)
            if not n_valid:
                continue
            if bad_sp:
                pruned["E0331"] += n_valid * bad_sp * orders_raw * below_order
            if refused_sp:
                pruned["E0624"] += n_valid * len(refused_sp) * orders_raw * below_order
            if good_sp:  # (counted even when none: the count's entry exists as it always did)
                pruned["E0304"] += n_valid * len(good_sp) * e0304 * below_order
            if pp == 1 and (schedule, v) != canonical_pipe:  # one pipeline stands for every one
                stats.merged += n_valid * len(good_sp) * valid_here * n_rec
                continue
            stats.merged += n_valid * (merged_sp * valid_here + len(kept_sp) * folded) * n_rec
            if count_only:
                counted += n_valid * len(kept_sp) * n_rec
                continue
            listed += [(item, schedule, v, micro, m, sp, recompute) for micro, m in valid
                       for sp in kept_sp for recompute in recomputes]
        return counted if count_only else listed

    # -----------------------------------------------------------------------------------------
    # Bounds and evaluation

    def _knobs(self, item: _Degrees, schedule, v, micro, m, sp, recompute, sharding="none", shard=0) -> Knobs:
        """The group's knobs, built once per group and sharding and kept with the degrees: a
        group is asked for them by its floors, its bounds and its evaluation, and building a
        frozen bundle of 28 fields costs more than finding it (a tenth of the 983,040-GPU
        space's search went to building `Knobs`). Knobs are frozen, so one object serves all."""
        key = ("knobs", schedule, v, micro, m, sp, recompute, sharding, shard)
        cached = item.opt_cache.get(key)
        if cached is None:
            d = item.degrees
            cached = item.opt_cache[key] = self._new_knobs(
                d.get("tp", 1), d.get("pp", 1), d.get("dp", 1), d.get("cp", 1), item.ep, self.ep_axis and item.ep > 1,
                v, schedule, sp, sharding, shard, micro, m, recompute)  # as `_build_knobs`, built faster
        return cached

    def _build_knobs(self, item: _Degrees, schedule, v, micro, m, sp, recompute, sharding="none", shard=0) -> Knobs:
        """The group's knobs built the plain way (`_knobs` builds the same with `knobs_builder`)."""
        d = item.degrees
        return Knobs(tp=d.get("tp", 1), pp=d.get("pp", 1), dp=d.get("dp", 1), cp=d.get("cp", 1), ep=item.ep,
                     ep_axis=self.ep_axis and item.ep > 1, virtual_stages=v, schedule=schedule,
                     sequence_parallel=sp, sharding=sharding, hsdp_shard=shard, micro_batch=micro,
                     microbatches=m, recompute=recompute, **self.fixed)

    def _with_sharding(self, k: Knobs, sharding: str, shard: int) -> Knobs:
        """`k` with another sharding, built once per (knobs, sharding) and kept: the knobs come
        from `_knobs`, one object per group, so they are found by identity (the entry holds `k`,
        so its id cannot be reused while the entry lives)."""
        if sharding == k.sharding and shard == k.hsdp_shard:
            return k
        key = (id(k), sharding, shard)
        kept = self._sharded_knobs.get(key)
        if kept is not None and kept[0] is k:
            return kept[1]
        out = replaced(k, sharding=sharding, hsdp_shard=shard)  # `_plain_with_sharding`'s knobs, copied slot by slot
        self._sharded_knobs[key] = (k, out)
        return out

    @staticmethod
    def _plain_with_sharding(k: Knobs, sharding: str, shard: int) -> Knobs:
        if sharding == k.sharding and shard == k.hsdp_shard:
            return k
        return Knobs(tp=k.tp, pp=k.pp, dp=k.dp, cp=k.cp, ep=k.ep, ep_axis=k.ep_axis, ep_over_tp=k.ep_over_tp,
                     virtual_stages=k.virtual_stages, schedule=k.schedule, split=k.split,
                     sequence_parallel=k.sequence_parallel, cp_flavour=k.cp_flavour, sharding=sharding,
                     hsdp_shard=shard, seq=k.seq, micro_batch=k.micro_batch, microbatches=k.microbatches,
                     precision=k.precision, optimizer=k.optimizer, recompute=k.recompute,
                     recompute_layers=k.recompute_layers, recompute_modules=k.recompute_modules,
                     offload_layers=k.offload_layers, runtime=k.runtime,
                     grad_bytes=k.grad_bytes, pp_receives=k.pp_receives, model_code=k.model_code,
                     fp8_recipe=k.fp8_recipe, fp8_transposed=k.fp8_transposed, fp8_all_gather=k.fp8_all_gather,
                     fp8_params=k.fp8_params)

    def _group_shardings(self, item: _Degrees, k: Knobs) -> list[tuple[str, int]]:
        """The shardings a group's candidates take: only `none` where sharding spreads over a
        single rank (`is_single_rank`, decided once per degrees in `run`; the others are folded
        into it)."""
        if self.space.sharding_open and item.single_rank:
            return [("none", 0)]
        return item.shardings

    def _optimizer_floor(self, item, k: Knobs, loads) -> float:
        """The cheapest optimizer step over the group's shardings (it depends on the chunking and
        the sharding only: a `Load` carries the parameters `optimizer_seconds` reads)."""
        key = (k.schedule, k.virtual_stages)
        if key in item.opt_cache:
            return item.opt_cache[key]
        best = math.inf
        # ranks holding the same parameters take the same step: one of each; and the step of
        # some parameters under a sharding is the same in every pipeline (`_optimizer`'s cache)
        distinct = list({(load.params_dense, load.params_expert): load for load in loads}.values())
        cache = item.opt_cache
        # the least step is never under an hsdp split where zero3 is there: the step reads the
        # parameters over the shard groups (`timing.optimizer_seconds`), and hsdp's are at most
        # zero3's (`least_state_shardings`), so its step is at least zero3's for every rank
        for sharding, shard in least_state_shardings(self._group_shardings(item, k)):
            ks = None
            slowest = -math.inf
            for load in distinct:
                seconds = cache.get(("opt", load.params_dense, load.params_expert, sharding, shard))
                if seconds is None:
                    if ks is None:
                        ks = self._degree_sharded(item, k, sharding, shard)
                    seconds = self._optimizer(item, load, ks)
                slowest = max(slowest, seconds)
            best = min(best, slowest)
        item.opt_cache[key] = best
        return best

    def _pieces(self, tp: int, sp: bool, cp: int, micro: int, ep: int, placements: tuple | None = None,
                overlaps: tuple[bool, ...] = (False,)) -> dict:
        """Per-micro-batch seconds of one layer per (MoE?, recompute mode), and of the embedding
        and the output layer, from the time model's own pieces (`timing.piece_of`) with the
        communication of `_bound_links`, as (forward, input backward, weight backward,
        recomputation, exposed in the forward, exposed in the backward). `placements`: the
        (cp group, ep group) pairs the rank orders give (`_placements`; by default cp inside a
        fast level and no ep traffic); with several, each entry is the least over them, so it
        is at most what any of the orders charges. `overlaps`: whether the ep all-to-alls hide
        under the other micro-batch (`timing._rank_times`: DualPipe-V or `Software.ep_overlap`);
        with both, the least of the two."""
        if placements is None:
            placements = ((timing.Group(cp, cp), timing.Group()),)
        key = (tp, sp, cp, micro, ep, placements, overlaps)
        cached = self._piece_cache.get(key)
        if cached is not None:
            return cached
        if len(placements) > 1:
            each = [self._pieces(tp, sp, cp, micro, ep, (pair,), overlaps) for pair in placements]
            out = {name: tuple(min(values) for values in zip(*(p[name] for p in each), strict=True))
                   for name in each[0]}
        else:
            out = self._placed_pieces(tp, sp, cp, micro, ep, *placements[0], overlaps)
        if len(self._piece_cache) > 65536:
            self._piece_cache.clear()
        self._piece_cache[key] = out
        return out

    def _placed_pieces(self, tp: int, sp: bool, cp: int, micro: int, ep: int, cp_group, ep_group,
                       overlaps: tuple[bool, ...]) -> dict:
        """`_pieces` with the cp and ep groups placed as one rank order places them."""
        shape, hw, c, sw = self.shape, self.hw, self.constants, self.software
        links = self._bound_links(tp, cp, cp_group, ep_group)

        def summed(work, modes=RECOMPUTE, overlaps=(False,), calls=None, shared=False) -> list[tuple]:
            """Per recomputation mode, the least over `overlaps`. `calls`: the piece's tp calls
            (`timing.tp_calls`; None: a layer's f/g pairs, `pair_calls`); `shared`: the shared
            experts beside the all-to-alls (`timing.overlaps_shared_experts`)."""
            xs = [timing.exposed(work, *links, overlap, sw.tp_overlap, c, calls, overlap_shared=shared)
                  for overlap in overlaps]
            out = []
            for mode in modes:
                each = []
                for x in xs:
                    p = timing.piece_of(work, x, mode, sw.selective)
                    each.append((p[0], p[1], p[2], p[3], p[4] + p[5] + p[6], p[7] + p[8] + p[9]))
                out.append(each[0] if len(each) == 1 else tuple(min(values) for values in zip(*each, strict=True)))
            return out

        # a dense layer, the embedding and the output layer do not read ep (`timing.layer_work`
        # reads it for MoE layers only): kept without it, shared by every ep of an MoE search
        free_key = ("ep-free", tp, sp, cp, micro, cp_group)
        free = self._piece_cache.get(free_key)
        if free is None:
            dense = self._work_of(False, tp, sp, cp, micro, ep)
            free = dict(zip(((False, mode) for mode in RECOMPUTE), summed(dense), strict=True))
            vocab = padded_vocab(shape.vocab, tp, self.runtime)
            split = timing.TokenSplit(tp, sp, cp, self.seq, micro)
            free["embedding"] = summed(timing.slowed(timing.embedding_work(shape, split, hw, c), sw, c),
                                       ("none",))[0]
            # the output layer as `timing._rank_times` builds it: with its backward re-gather
            # (`regathered`) and its own tp calls (`tp_calls`: under sp its gradient is
            # reduce-scattered backward, which a runtime that overlaps tp, Megatron-LM's
            # "backward", hides under its GEMM; a layer's f/g pairs would charge an all-gather
            # there, with no GEMM to hide it, above the step); its loss statistics left out
            # (they only add)
            output = timing.regathered(timing.slowed(timing.output_work(shape, split, vocab, "bf16", sw.loss_kernels,
                                                                        hw, c), sw, c), sw)
            free["output"] = summed(output, ("none",), calls=timing.tp_calls("output", sp, tp, output))[0]
            self._piece_cache[free_key] = free
        if not shape.moe:
            return free
        moe = self._work_of(True, tp, sp, cp, micro, ep)
        shared = timing.overlaps_shared_experts(sw, shape, tp)
        return {**free, **dict(zip(((True, mode) for mode in RECOMPUTE), summed(moe, RECOMPUTE, overlaps, shared=shared),
                                   strict=True))}

    def _work_of(self, moe: bool, tp: int, sp: bool, cp: int, micro: int, ep: int) -> timing.Work:
        """One layer's work as `timing._rank_times` computes it (an MoE layer as the runtime
        dispatches it), kept per what it reads (a dense layer does not read ep)."""
        key = ("work", moe, tp, sp, cp, micro, ep if moe else 1)
        work = self._piece_cache.get(key)
        if work is None:
            shape, hw, c, sw = self.shape, self.hw, self.constants, self.software
            case = timing.LayerCase.under(sw, moe=moe, tp=tp, sp=sp, cp=cp, flavour=self.flavour, seq=self.seq,
                                          micro=micro, ep=ep, precision=self.fixed["precision"])
            work = timing.runtime_work(timing.layer_work(shape, case, hw, c),
                                       moe, shape, hw, sw, c)  # `slowed`, then `dispatched` if moe
            self._piece_cache[key] = work
        return work

    def _compute_pieces(self, tp: int, sp: bool, cp: int, micro: int, ep: int) -> dict:
        """`_pieces` without any communication: the computation alone (`timing.piece_of` with
        nothing exposed), which every placement of every order at least takes."""
        key = ("compute", tp, sp, cp, micro, ep)
        cached = self._piece_cache.get(key)
        if cached is None:
            cached = dict(self._compute_free(tp, sp, cp, micro))
            if any(moe for moe, _ in self._layer_counts):
                self._add_modes(cached, self._work_of(True, tp, sp, cp, micro, ep))
            self._piece_cache[key] = cached
        return cached

    def _compute_free(self, tp: int, sp: bool, cp: int, micro: int) -> dict:
        """`_compute_pieces`' entries that do not read ep: the embedding, the output layer and a
        dense layer (`_work_of`), computed once for every ep of an MoE search."""
        free_key = ("compute ep-free", tp, sp, cp, micro)
        free = self._piece_cache.get(free_key)
        if free is None:
            shape, hw, c, sw = self.shape, self.hw, self.constants, self.software
            nothing, selective = timing.Exposed(), sw.selective
            vocab = padded_vocab(shape.vocab, tp, self.runtime)
            free = {}
            split = timing.TokenSplit(tp, sp, cp, self.seq, micro)
            for name, work in (("embedding", timing.embedding_work(shape, split, hw, c)),
                               ("output", timing.output_work(shape, split, vocab, "bf16",
                                                             sw.loss_kernels, hw, c))):
                p = timing.piece_of(timing.slowed(work, sw, c), nothing, "none", selective)
                free[name] = (p[0], p[1], p[2], p[3], 0.0, 0.0)
            if any(not moe for moe, _ in self._layer_counts):
                self._add_modes(free, self._work_of(False, tp, sp, cp, micro, 1))
            self._piece_cache[free_key] = free
        return free

    def _add_modes(self, pieces: dict, work: timing.Work) -> None:
        """A layer's computation alone (`timing.piece_of` with nothing exposed) under each
        recomputation mode, into `pieces` at (MoE?, mode)."""
        nothing, selective = timing.Exposed(), self.software.selective
        for mode in RECOMPUTE:
            p = timing.piece_of(work, nothing, mode, selective)
            pieces[(work.moe, mode)] = (p[0], p[1], p[2], p[3], 0.0, 0.0)

    def _moe_floor_pieces(self, tp: int, sp: bool, cp: int, micro: int) -> dict:
        """`_compute_pieces` with the MoE layer at a floor no ep's own entry is under: its GEMMs
        that no ep reads (`timing.moe_gemm_floor`) slowed as the runtime slows them, its
        attention (which reads no ep: taken from the layer at ep 1), and nothing else (the
        memory-bound kernels, the dispatcher's host stall and the routed experts' GEMMs are
        never negative). `timing.piece_of` adds the same fields in the same order, so each
        entry is at most every ep's, float for float; the other entries are `_compute_pieces`'
        own. Kept per (tp, sequence parallelism, cp, micro-batch): one layer work (at ep 1)
        where `_compute_pieces` computes one per ep."""
        key = ("compute moe floor", tp, sp, cp, micro)
        cached = self._piece_cache.get(key)
        if cached is None:
            shape, hw, c, sw = self.shape, self.hw, self.constants, self.software
            attention = self._work_of(True, tp, sp, cp, micro, 1)
            gemm = timing.moe_gemm_floor(shape, tp, cp, self.seq, micro,
                                         timing.gemm_precision(self.fixed["precision"], sw), hw, c)
            floor = timing.slowed(timing.Work(gemm=gemm, attention_f=attention.attention_f,
                                              attention_b=attention.attention_b, moe=True), sw, c)
            cached = dict(self._compute_free(tp, sp, cp, micro))
            self._add_modes(cached, floor)
            self._piece_cache[key] = cached
        return cached

    def _placements(self, item: _Degrees) -> tuple:
        """The distinct (cp group, ep group) placements (`timing.Group`) the degrees' rank orders
        give, as `timing.geometry` places them. The bound charges cp's and ep's exchanges at the
        least over them, never less than an order's own."""
        cached = item.opt_cache.get("placements")
        if cached is None:
            degrees, level, fold = item.degrees, self.hw.level, self.space.ep_fold
            if degrees.get("cp", 1) == 1 and item.ep == 1:
                cached = ((timing.Group(), timing.Group()),)
            else:
                pairs = set()
                for order in item.orders:
                    # `timing.geometry`'s cp and ep parts, without its other groups
                    parts, stride = {}, 1
                    for name in order:
                        parts[name] = (degrees[name], stride)
                        stride *= degrees[name]
                    if fold:
                        ep_parts = timing._take([parts[n] for n in sorted(fold, key=order.index) if n in parts],
                                                item.ep)[0]
                    else:
                        ep_parts = [parts["ep"]] if "ep" in parts else []
                    pairs.add((timing._group([parts["cp"]] if "cp" in parts else [], level),
                               timing._group(ep_parts, level)))
                cached = tuple(sorted(pairs, key=lambda p: (p[0].size, p[0].local, p[1].size, p[1].local)))
            item.opt_cache["placements"] = cached
        return cached

    def _bound_links(self, tp: int, cp: int, cp_group=None, ep_group=None) -> tuple:
        """The tp, cp and ep links of the bound. tp: the rank order never matters, since E0304
        keeps every tp group inside one NVLink domain (except over PCIe, where tp counts nothing
        here); cp and ep: at `cp_group` and `ep_group`, a placement some rank order gives them
        (their exact links: the least over the orders' placements is taken in `_pieces`, with
        no assumption on which is fastest, since an all-to-all split over NVLink and the network
        can beat one inside a node). By default cp inside a fast level and no ep traffic."""
        key = ("links", tp, cp, cp_group, ep_group)
        cached = self._piece_cache.get(key)
        if cached is None:
            hw, c = self.hw, self.constants
            null = timing.link(timing.Group(), hw, c)
            tp_link = null if self.pcie or tp == 1 else timing.link(timing.Group(tp, tp), hw, c)
            cp_link = null
            if cp > 1:
                cp_link = timing.link(cp_group if cp_group is not None else timing.Group(cp, cp), hw, c)
            ep_link = null if ep_group is None else timing.link(ep_group, hw, c)
            cached = self._piece_cache[key] = (tp_link, cp_link, ep_link)
        return cached

    def _kept_sums(self, item, schedule, v, micro, sp, recompute, geo: timing.Geometry | None = None,
                   compute_only: bool = False) -> _Sums:
        """Each distinct pipeline rank's per-micro-batch sums (as `_pieces`, plus its chunks and
        parameters), as `timing.rank_time` adds them up, with the pipeline sends at
        `_pp_send`: for every rank order (the least over them), or for one order's `geo`; or,
        `compute_only`, the computation alone (`_compute_pieces`, no sends); with the busiest
        rank's total, summed in the same pass (`_Sums`)."""
        d = item.degrees
        tp, pp, cp = d.get("tp", 1), d.get("pp", 1), d.get("cp", 1)
        # the pieces of these degrees read the micro-batch, sequence parallelism and (with
        # communication) whether the schedule overlaps ep: kept per those with the degrees, a
        # key cheaper to look up than `_pieces`' own (which holds the orders' placements)
        pieces_key = ("pieces", compute_only, micro, sp and tp > 1, schedule == "dualpipe-v") if geo is None else None
        pieces = item.opt_cache.get(pieces_key)
        if pieces is None:
            if compute_only:
                pieces = self._compute_pieces(tp, sp and tp > 1, cp, micro, item.ep)
            else:
                placements = self._placements(item) if geo is None else ((geo.cp, geo.ep),)
                overlaps = (schedule == "dualpipe-v" or self.software.ep_overlap,)  # as `timing._rank_times`
                pieces = self._pieces(tp, sp and tp > 1, cp, micro, item.ep, placements, overlaps)
            if pieces_key is not None:
                item.opt_cache[pieces_key] = pieces
        key = (tp, item.ep, pp, v, schedule, recompute)
        distinct = self._load_cache.get(key)
        if distinct is None:
            # `timing.rank_loads` reads the schedule and the virtual stages through the chunks
            # alone (`chunks_of`): schedules that chunk alike (1F1B and GPipe always, the
            # interleaved ones of one virtual-stage count) share one tuple of loads, computed
            # once, so that their sums below are computed once too
            chunked = ("chunked", tp, item.ep, pp, recompute,
                       chunks_of(self.shape.layers, pp, v, schedule, self.split, self.shape.tied, self.shape.mtp))
            distinct = self._load_cache.get(chunked)
            if distinct is None:
                distinct = tuple(dict.fromkeys(timing.rank_loads(
                    self.shape, timing.Chunking(tp, item.ep, pp, v, schedule, self.split, self.runtime), recompute,
                    self.fixed["recompute_layers"])))
                distinct = self._load_cache[chunked] = self._load_cache.setdefault(("interned", distinct), distinct)
            self._load_cache[key] = distinct
        send = 0.0 if compute_only else self._pp_send(item, tp, pp, cp, micro, geo)
        # the sums read the pieces, the loads and the send only: kept per those (by identity;
        # the entry holds both objects, so neither id can be reused while it lives)
        sums_key = (id(pieces), id(distinct), send)
        kept = self._sums.get(sums_key)
        if kept is not None and kept.pieces is pieces and kept.loads is distinct:
            return kept
        out = []
        busiest = 0.0
        # sends a multi-chunk rank's runtime overlaps are charged after its computation is summed
        # (`timing.pp_sends_exposed`, as `timing.rank_time`); the others before, as always
        overlap = self.software.pp_overlap if send else "none"
        # the SMs an NCCL send holds: the part's, whatever link the pp group crosses (`timing.link`)
        share = kernel_model.sm_share(kernel_model.NCCL_SMS, self.hw.sms)
        for load in distinct:
            f = bi = bw = rec = 0.0
            later = timing.sends_overlapped(load, overlap)
            xf, xb = (0.0, 0.0) if later else (load.sends_f * send, load.sends_b * send)
            for is_moe, mode, count in load.pieces:
                p = pieces[(is_moe, mode)]
                f, bi, bw = f + count * p[0], bi + count * p[1], bw + count * p[2]
                rec, xf, xb = rec + count * p[3], xf + count * p[4], xb + count * p[5]
            # the embedding's pieces, then the output layer's (the order of the sums as before)
            if load.embedding:
                p = pieces["embedding"]
                f, bi, bw, rec, xf, xb = f + p[0], bi + p[1], bw + p[2], rec + p[3], xf + p[4], xb + p[5]
            if load.output:
                p = pieces["output"]
                f, bi, bw, rec, xf, xb = f + p[0], bi + p[1], bw + p[2], rec + p[3], xf + p[4], xb + p[5]
            if later:
                sf, sb = timing.pp_sends_exposed(load, send, share, overlap, f, bi + bw + rec)
                xf, xb = xf + sf, xb + sb
            out.append((f, bi, bw, rec, xf, xb, load))
            total = f + bi + bw + rec + xf + xb  # a rank added up as `step_time` does
            if total > busiest:  # `max(busiest, total)`, without the call
                busiest = total
        kept = self._sums[sums_key] = _Sums(pieces, distinct, tuple(out), busiest)
        return kept

    def _pp_send(self, item: _Degrees, tp: int, pp: int, cp: int, micro: int,
                 geo: timing.Geometry | None = None) -> float:
        """The least seconds of one pipeline send (`timing._rank_times`'s `pp_send`: one micro-
        batch's boundary activations, b x s/cp x h / tp in 16 bits) over the rank orders of the
        degrees: what a send costs never falls as it grows, waited on or beside the next chunk
        (`timing.pp_sends_exposed`), so each rank's sends at this length never exceed what any
        order's step charges. The pp group's placement depends
        only on its stride (the product of the degrees before it), and a smaller stride never
        places fewer of its ranks inside one fast level, but the least over the orders' own
        strides is taken rather than assumed. With `geo`, that order's own send."""
        if pp <= 1:
            return 0.0
        if geo is not None:
            return timing.link(geo.pp, self.hw, self.constants).send(timing.ACT * (self.seq * micro / cp)
                                                                     * self.shape.hidden / tp)
        key = ("send", micro)
        cached = item.opt_cache.get(key)
        if cached is None:
            strides = item.opt_cache.get("pp strides")
            if strides is None:
                strides = set()
                for order in item.orders:
                    stride = 1
                    for name in order[:order.index("pp")]:
                        stride *= item.degrees[name]
                    strides.add(stride)
                strides = item.opt_cache["pp strides"] = tuple(sorted(strides))
            tokens = self.seq * micro / cp  # as `_rank_times` computes it, to the last bit
            boundary = timing.ACT * tokens * self.shape.hidden / tp
            level, hw, c = self.hw.level, self.hw, self.constants
            cached = item.opt_cache[key] = min(
                timing.link(timing._group([(pp, stride)], level), hw, c).send(boundary) for stride in strides)
        return cached

    @staticmethod
    def _bound_core(kept: _Sums, schedule: str, pp: int, m: int) -> float:
        """m x the busiest rank + the smallest bubble of any rank (`step_time`'s F, B, W), from
        `kept`'s sums without another pass over them: the busiest rank's total was taken while
        summing (`_kept_sums`), and the least bubble is (p - 1) x the least `timing.stage_bubble`
        over the ranks (a positive factor keeps the order: the same rank's, to the last bit),
        kept per schedule with the sums (the schedules that chunk alike share them)."""
        if pp <= 1:
            return m * kept.busiest + 0.0  # `bubble_seconds` is 0 on one stage
        unit = kept.bubbles.get(schedule)
        if unit is None:
            unit = math.inf
            for f, bi, bw, rec, xf, xb, load in kept.sums:
                v = load.chunks
                unit = min(unit, timing.stage_bubble(schedule, (f + xf) / v, (bi + rec + xb) / v, bw / v))
            kept.bubbles[schedule] = unit
        return m * kept.busiest + (pp - 1) * unit

    def bound(self, item, schedule, v, micro, m, sp, recompute) -> float:
        """A lower bound on the step time of every candidate of a group (see the module doc):
        `step_time`'s sum for the slowest rank, m x (F + B + W) + bubble + the data-parallel tail,
        with the communication of `_bound_links`, the bubble at its smallest over the ranks, no
        data-parallel communication and the optimizer at its cheapest sharding."""
        kept = self._kept_sums(item, schedule, v, micro, sp, recompute)
        return self._summed_bound(item, schedule, v, micro, m, sp, recompute, kept)

    def quick_bound(self, item, schedule, v, micro, m, sp, recompute) -> float:
        """`bound` with the computation alone (`_compute_pieces`, no sends): at most `bound`
        (communication only adds, to the busiest rank and to the bubble), and it needs no
        placement and no exposure. Every group enters the scan at it; only those that come out
        are bounded in full (most never do)."""
        kept = self._kept_sums(item, schedule, v, micro, sp, recompute, compute_only=True)
        return self._summed_bound(item, schedule, v, micro, m, sp, recompute, kept)

    def _summed_bound(self, item, schedule, v, micro, m, sp, recompute, kept: _Sums) -> float:
        """`_bound_core` over the ranks' sums plus the cheapest optimizer step of the degrees."""
        floor = item.opt_cache.get((schedule, v))
        if floor is None:
            k = self._knobs(item, schedule, v, micro, m, sp, recompute)
            floor = self._optimizer_floor(item, k, kept.loads)
        return self._bound_core(kept, schedule, item.degrees.get("pp", 1), m) + floor

    def pipes_bound(self, item, schedule, v, micro, m, sp, recompute) -> float:
        """A lower bound on `bound` for every pipeline (schedule, virtual stages) of these degrees,
        micro-batch, sequence parallelism and recomputation: m x the mean over the pp ranks of
        a micro-batch's work. Every layer, the embedding and the output layer sit on exactly one
        rank whatever the chunking, so the ranks' sums add up to the same total for every
        pipeline, and the busiest rank's is at least their mean; the bubble and the optimizer
        step only add (`bound`). Shaved by `PIPES_SLACK` for the sums' rounding. Only where every
        layer of a chunk is recomputed alike (`pipe_sets`)."""
        d = item.degrees
        tp, pp = d.get("tp", 1), d.get("pp", 1)
        key = ("pipes total", tp, sp and tp > 1, d.get("cp", 1), micro, item.ep, recompute)  # all it reads
        total = self._load_cache.get(key)
        if total is None:
            total = self._load_cache[key] = self._pieces_total(
                self._compute_pieces(tp, sp and tp > 1, d.get("cp", 1), micro, item.ep), recompute)
        return m * total / pp * (1 - PIPES_SLACK)

    def member_bound(self, item, schedule, v, micro, m, sp, recompute) -> float:
        """At most `quick_bound` and at least `pipes_bound`: `pipes_bound` (m x the mean rank's
        work, which the busiest rank's is at least) plus (p - 1) x a floor on the least rank's
        `timing.stage_bubble` (`_bubble_floor`), which `quick_bound` adds on top of the busiest
        rank; the optimizer step only adds. A pipeline of a set that comes out enters the scan
        at it (MEMBER), and at its own `quick_bound` only when it comes out: the bubble is what
        the set's mean does not see (Mixtral at 16,384 GPUs: 7,915 of the 8,252 pipelines whose
        quick bound is above the final top are above it here already)."""
        d = item.degrees
        pp = d.get("pp", 1)
        base = self.pipes_bound(item, schedule, v, micro, m, sp, recompute)
        if pp <= 1:
            return base
        tp, cp = d.get("tp", 1), d.get("cp", 1)
        key = ("layer figures", tp, sp and tp > 1, cp, micro, item.ep, recompute)
        figures = self._load_cache.get(key)
        if figures is None:
            figures = self._load_cache[key] = self._layer_figures(
                self._compute_pieces(tp, sp and tp > 1, cp, micro, item.ep), recompute)
        return base + (pp - 1) * self._bubble_floor(figures, pp, v, schedule)

    def _bubble_floor(self, figures: dict, pp: int, v: int, schedule: str) -> float:
        """A floor on `_bound_core`'s least `timing.stage_bubble` over the ranks (computation
        alone, as `quick_bound`): a rank's unclipped figure (`timing.bubble_terms`, linear) is the
        sum of its layers', its embedding's and its output layer's, over its chunks; each layer's
        is at least the least layer's (every layer of a rank recomputed alike: `pipe_sets`), the
        embedding and the output add at least min(0, theirs), and dividing those by the chunks
        (>= 1) only raises them. So each rank's is at least (its layers / its chunks) x the least
        layer's + the two; a least layer's figure <= 0 gives no floor (0: the bubble is never
        negative). Lowered by 2e-9 of the magnitudes summed, far above the sums' rounding, which
        matters where the terms cancel (zero-bubble schedules)."""
        terms, per_chunk, most = self._pipeline_figures(pp, v, schedule)
        least, ends, size, end_size = figures[terms]
        if least <= 0:
            return 0.0
        return max(0.0, per_chunk * least + ends - 2e-9 * (most * size + end_size))

    def _layer_figures(self, pieces: dict, recompute: str) -> dict:
        """Per `timing.bubble_terms` of the schedules: the least layer's unclipped figure (every
        layer at this recomputation), the embedding's and output's min(0, theirs) summed, the
        largest layer's magnitude (F + B + W + recompute) and the two ends' magnitudes."""
        layers = [pieces[(moe, recompute)] for moe, count in self._layer_counts if count]
        ends = (pieces["embedding"], pieces["output"])
        out = {}
        for terms in {timing.bubble_terms(s) for s in SCHEDULES}:
            cf, cb, cw = terms
            least = min(cf * p[0] + cb * (p[1] + p[3]) + cw * p[2] for p in layers)
            low = sum(min(0.0, cf * p[0] + cb * (p[1] + p[3]) + cw * p[2]) for p in ends)
            out[terms] = (least, low, max(p[0] + p[1] + p[2] + p[3] for p in layers),
                          sum(p[0] + p[1] + p[2] + p[3] for p in ends))
        return out

    def _pipeline_figures(self, pp: int, v: int, schedule: str) -> tuple:
        """The schedule's `timing.bubble_terms`, the least (layers / chunks) over the pipeline's
        ranks and the most layers of a rank, from `chunks_of` (the chunks `timing.rank_loads`
        reads), kept per pipeline."""
        key = ("pipeline figures", pp, v, schedule)
        found = self._load_cache.get(key)
        if found is None:
            layers, chunks = [0] * pp, [0] * pp
            for c in chunks_of(self.shape.layers, pp, v, schedule, self.split, self.shape.tied, self.shape.mtp):
                layers[c.rank] += c.layers
                chunks[c.rank] += 1
            found = self._load_cache[key] = (timing.bubble_terms(schedule),
                                             min(n / max(c, 1) for n, c in zip(layers, chunks, strict=True)),
                                             max(layers))
        return found

    def _pieces_total(self, pieces: dict, recompute: str) -> float:
        """A micro-batch's work of every layer, the embedding and the output layer, summed in one
        fixed order (per-entry floors summed here stay under the entries' sum, float for float)."""
        total = 0.0
        for name, count in self._layer_counts:
            p = pieces[(name, recompute)]
            total += count * (p[0] + p[1] + p[2] + p[3] + p[4] + p[5])
        for name in ("embedding", "output"):
            p = pieces[name]
            total += p[0] + p[1] + p[2] + p[3] + p[4] + p[5]
        return total

    def alone_bound(self, item, schedule, v, micro, m, sp, recompute) -> float:
        """At most `pipes_bound`, without the ep's own MoE layer: `pipes_bound`'s sum over
        `_moe_floor_pieces` (each entry at most `_compute_pieces`' of every ep, summed in the same
        order, so the total is at most its total, float for float). A group alone enters the
        scan at it (ALONE): most never come out, and their ep's layer is never computed
        (DeepSeek: one layer work per (tp, sequence parallelism, cp, micro-batch) instead of one
        per ep). Without MoE layers, `pipes_bound` itself."""
        if not any(moe for moe, _ in self._layer_counts):
            return self.pipes_bound(item, schedule, v, micro, m, sp, recompute)
        d = item.degrees
        tp, pp, cp = d.get("tp", 1), d.get("pp", 1), d.get("cp", 1)
        key = ("moe floor total", tp, sp and tp > 1, cp, micro, recompute)
        total = self._load_cache.get(key)
        if total is None:
            total = self._load_cache[key] = self._pieces_total(self._moe_floor_pieces(tp, sp and tp > 1, cp, micro),
                                                               recompute)
        return m * total / pp * (1 - PIPES_SLACK)

    def _best_links(self, item: _Degrees, shard: int) -> timing.DpLinks:
        """The dense, expert, hsdp shard and replicate links, each with as many ranks inside one
        fast level as the best of the rank orders gives it: data-parallel time only grows with
        fewer, so no order's tail is shorter than with these."""
        key = ("links", shard)
        cached = item.opt_cache.get(key)
        if cached is not None:
            return cached
        groups = [cls[1] for cls in self._classes(item, shard)]
        links = []
        # the expert set's group as `timing.rank_steps` reads it: in torch's runtime tp ranks
        # hold whole experts, so they are data ranks to them (`Geometry.expert_tp`)
        expert = "expert_tp" if self.software.dp_runtime == "torch" else "expert"
        for name in ("dense", expert, "shard", "replicate"):
            size = getattr(groups[0], name).size
            local = max(getattr(g, name).local for g in groups)
            links.append(timing.link(timing.Group(size, local), self.hw, self.constants))
        item.opt_cache[key] = timing.DpLinks(*links)
        return item.opt_cache[key]

    def _optimizer(self, item: _Degrees, r, k: Knobs) -> float:
        """`timing.optimizer_seconds` of one rank, kept per parameters and sharding."""
        return self._optimizer_of(item, r, k, k.sharding, k.hsdp_shard)

    def _optimizer_of(self, item: _Degrees, r, k: Knobs, sharding: str, shard: int) -> float:
        """`_optimizer` under `k` with another sharding, whose knobs are built only when the
        step is not kept yet (`_with_sharding`: most lookups find it)."""
        key = ("opt", r.params_dense, r.params_expert, sharding, shard)
        cached = item.opt_cache.get(key)
        if cached is None:
            ks = self._degree_sharded(item, k, sharding, shard)
            cached = item.opt_cache[key] = timing.optimizer_seconds(r, ks, self.hw, self.constants)
        return cached

    def _degree_sharded(self, item: _Degrees, k: Knobs, sharding: str, shard: int) -> Knobs:
        """Knobs of the degrees with this sharding, built from the first group that asks and
        kept with the degrees, for what reads the degrees, the sharding and the fixed knobs
        only: `timing.optimizer_seconds` reads the shard groups (`Knobs.dense_shard_group`,
        `expert_shard_group`: dp, cp, ep, tp, the runtime and the sharding) and the optimizer.
        Each group's own (`_with_sharding`) was built afresh for every group whose ranks
        hold parameters not seen yet."""
        key = ("degree sharded", sharding, shard)
        ks = item.opt_cache.get(key)
        if ks is None:
            ks = item.opt_cache[key] = self._with_sharding(k, sharding, shard)
        return ks

    def _parts(self, group) -> tuple:
        """What the bounds of a group's shardings share: its knobs, the busiest-rank-and-bubble
        core, each rank's times, its shardings and their knobs."""
        k, core, times, shardings = self._parts_of(group)
        return k, core, times, shardings, [self._with_sharding(k, *sharding) for sharding in shardings]

    def _lazy_parts(self, group) -> tuple:
        """`_parts` without the shardings' knobs (`refine` and `_evaluate` build one only where
        a step or a tail is not kept yet), each group's kept: both ask for the same group."""
        key = ("parts",) + group[1:]
        item = group[0]
        found = item.opt_cache.get(key)
        if found is None:
            found = item.opt_cache[key] = self._parts_of(group)
        return found

    def _parts_of(self, group) -> tuple:
        item, schedule, v, micro, m, sp, recompute = group
        kept = self._kept_sums(item, schedule, v, micro, sp, recompute)
        loads = kept.sums
        k = self._knobs(item, schedule, v, micro, m, sp, recompute)
        core = self._bound_core(kept, schedule, item.degrees.get("pp", 1), m)
        times = [timing.RankTimes(forward=f, backward_input=bi, backward_weight=bw, recompute=rec,
                                  exposed_f=(xf, 0.0, 0.0, 0.0), exposed_b=(xb, 0.0, 0.0, 0.0),
                                  sent=(0.0, 0.0, 0.0, 0.0), chunks=load.chunks, params_dense=load.params_dense,
                                  params_expert=load.params_expert, blocks_dense=load.blocks_dense,
                                  blocks_expert=load.blocks_expert, params_root=load.params_root,
                                  layers=sum(count for _, _, count in load.pieces),
                                  moe_layers=sum(count for is_moe, _, count in load.pieces if is_moe))
                 for f, bi, bw, rec, xf, xb, load in loads]
        return k, core, times, self._group_shardings(item, k)

    def refine(self, group, threshold: float) -> tuple[float, tuple]:
        """Per sharding of a group, a lower bound: first the coarse one with that sharding's
        optimizer step; then, cheapest first until the rest cannot beat the best so far, tightened
        with the data-parallel tail (`_tail`). Returns the group's tightest bound and, per
        sharding, (bounds, whether each is tightened)."""
        item = group[0]
        k, core, times, shardings = self._lazy_parts(group)
        bounds = [core + max(self._optimizer_of(item, r, k, sharding, shard) for r in times)
                  for sharding, shard in shardings]
        tight = [False] * len(bounds)
        best = math.inf
        for j in sorted(range(len(bounds)), key=bounds.__getitem__):
            if bounds[j] >= best or bounds[j] > threshold * (1 + BOUND_SLACK):
                break
            bounds[j], tight[j] = self._tail_of(item, k, *shardings[j], core, times), True
            best = min(best, bounds[j])
        return min(bounds), (tuple(bounds), tuple(tight))

    def _tail(self, item: _Degrees, ks: Knobs, core: float, times: list) -> float:
        """The core plus the data-parallel tail `step_time` charges for this sharding on
        `_best_links` (the optimizer step alone where inside links are not the faster ones)."""
        return self._tail_of(item, ks, ks.sharding, ks.hsdp_shard, core, times)

    def _tail_of(self, item: _Degrees, k: Knobs, sharding: str, shard: int, core: float, times: list) -> float:
        """`_tail` under `k` with another sharding, its knobs built only where needed."""
        if not self.inside_is_fastest:
            return core + max(self._optimizer_of(item, r, k, sharding, shard) + self._copies_of(item, r, k, sharding, shard)
                              for r in times)
        return core + max(self._rank_tail_of(item, r, k, sharding, shard) for r in times)

    def _rank_tail(self, item: _Degrees, r, ks: Knobs) -> float:
        """One rank's `timing.dp_exposed` on `_best_links` plus its optimizer step, kept with the
        degrees on the plain numbers that determine it: the rank's parameters, layers, forward
        and whole backward summed as `dp_exposed` sums it (the zero-bubble schedules split it
        differently), the micro-batches, sharding, pp, virtual stages and hsdp shard (what
        `dp_ledger` and `dp_exposed` read; the links follow from the degrees and the shard). The
        groups of a layout repeat a few ranks' values (every schedule with the same chunks), and
        the time model's own caches hash its links and ledger on every call."""
        return self._rank_tail_of(item, r, ks, ks.sharding, ks.hsdp_shard)

    def _rank_tail_of(self, item: _Degrees, r, k: Knobs, sharding: str, shard: int) -> float:
        """`_rank_tail` under `k` with another sharding: the key reads the sharding and its shard
        and otherwise `k`'s own fields, so the sharding's knobs are built only on a miss.

        The virtual stages are in the key under zero1 only: `timing.dp_ledger` reads them (the
        chunks per rank) and the chunks' blocks for zero1's buckets in parc's runtime (one bucket
        per model chunk and parameter set) and nowhere else; every other sharding's collectives,
        their windows and the optimizer step follow from the rank's parameters, layers, pp and
        links. So the pipelines of one degree assignment that differ only in their virtual
        stages (the interleaved schedules' 1 to 6 at gpt3-175b's 96 layers, whose ranks hold the
        same parameters) share one ledger, one pass over it and one exposure per lengths
        (tests/test_search_speed_exact.py checks each tail against the time model's own)."""
        back = r.backward_input + r.backward_weight + r.recompute
        # the virtual stages only where the ledger reads them (zero1's buckets: see the docstring)
        key = ("tail", r.params_dense, r.params_expert, r.params_root, r.params_other, r.layers, r.moe_layers,
               r.forward, back, k.microbatches,
               sharding, k.pp, k.virtual_stages if sharding == "zero1" else 0, shard, k.optimizer)
        cache = item.opt_cache
        cached = cache.get(key)
        if cached is None:
            # what the ledger costs per window does not depend on the forward and backward
            # lengths: kept without them (many micro-batches and recomputation modes share it),
            # and `dp_exposed`'s exposure charged against the lengths afresh. The bound's ranks
            # carry no collectives of their own, so no other axis takes NIC time (`nic_busy`).
            # Nor on the micro-batch count m (`_windows_key`): kept without it too.
            wkey = self._windows_key(key)
            windows = cache.get(wkey)
            if windows is None:  # the sharding's knobs built only here (the ledger reads them)
                ks = self._with_sharding(k, sharding, shard)
                links = self._best_links(item, ks.hsdp_shard)
                ledger = timing.dp_ledger(r, ks, links, self.software.grad_bytes, self.software.dp_runtime,
                                          self.software.gather_bytes)
                windows = cache[wkey] = (timing.dp_windows(ledger, ks.microbatches, links),
                                         self._optimizer(item, r, ks))
            serial = timing.serial_windows(self.software, k.pp)
            cached = cache[key] = timing.dp_window_exposure(windows[0], k.microbatches, r.forward, back,
                                                            NO_NIC, serial) + windows[1] \
                + self._copies_of(item, r, k, sharding, shard)
        return cached

    def _copies_of(self, item: _Degrees, r, k: Knobs, sharding: str, shard: int) -> float:
        """`timing.dp_copy_seconds` of one rank under `k` with this sharding, kept per the plain
        numbers `timing.dp_copy_bytes` reads: the rank's parameters, the micro-batches, sharding,
        pp and hsdp shard (the group sizes follow from the degrees and the shard)."""
        key = ("copies", r.params_dense, r.params_expert, r.params_root, k.microbatches, sharding, k.pp, shard)
        cached = item.opt_cache.get(key)
        if cached is None:
            ks = self._with_sharding(k, sharding, shard)
            copied = timing.dp_copy_bytes(r, ks, self._best_links(item, ks.hsdp_shard), self.software)
            cached = item.opt_cache[key] = timing.dp_copy_seconds(copied, self.hw, self.constants)
        return cached

    @staticmethod
    def _windows_key(tail_key: tuple) -> tuple:
        """The key of a tail's `timing.dp_windows` (and optimizer step) among the degrees' kept
        values: the tail's key less the forward and backward lengths and the micro-batch count
        m. What `timing.dp_window_exposure` reads of the windows does not depend on m: a
        per-micro-batch window's collectives are issued m x calls times and `dp_windows` divides
        by m (busy seconds, FSDP units: (m x calls) / m is calls, exactly, in floats), a
        once-per-step window's once; only the bytes sent per step (`windows[3]`, which the
        exposure does not read) grow with m. Groups that differ only in their micro-batch (and
        so in m) share one ledger and one pass over it (tests/test_search_speed_exact.py checks
        the exposure against windows of the group's own m)."""
        return ("windows",) + tail_key[1:7] + tail_key[10:]

    def _classes(self, item: _Degrees, shard: int) -> list:
        """Rank orders grouped by the placement they give every group: [(order, geometry, weight)]."""
        cached = item.classes.get(shard)
        if cached is not None:
            return cached
        fold = self.space.ep_fold
        seen: dict = {}
        out = []
        for order in item.orders:
            axes = tuple((name, item.degrees[name]) for name in order)
            folded = tuple(sorted(fold, key=order.index))
            geo = timing.geometry(axes, folded, item.ep, shard, self.hw.level)
            if geo in seen:
                out[seen[geo]][2] += item.order_weight
                continue
            seen[geo] = len(out)
            out.append([order, geo, item.order_weight])
        item.classes[shard] = out
        return out

    def _scan(self, groups: list) -> Outcome:
        """Best first: every group enters a queue at its computation-only bound (`quick_bound`;
        or, with the other pipelines of its degrees, micro-batch, sequence parallelism and
        recomputation, at their `pipes_bound`, and at its own only when that comes out); when
        one comes out, its family's memory floor is tried (`_family_floor`) and it goes back in
        at its coarse bound (`bound`, communication included); when it comes out again it is
        refined per sharding and queued again; when a refined one comes out it is evaluated.
        The scan ends when the smallest bound left cannot reach the top.

        A set of pipelines enters at (its bound, its first group's index): never after any of its
        groups would have come out, so the groups come out in the same order as if each had
        entered on its own, and every answer and evaluation is the same (tests/test_search_speed_exact.py
        runs both; a set's groups that do not fit are counted so when it comes out, where one by
        one some would stay queued, counted bounded out).

        A group that is a set of one (its layout has one pipeline) enters the same way, at
        `alone_bound` (FLOORED: its layout's `pipes_bound` with the MoE layers at a floor no ep's
        exceeds, kept per tp, sequence parallelism, cp, micro-batch and recomputation, so nearly
        free), at `pipes_bound` when that comes out (ALONE), and at its own `quick_bound` when
        that does; a set of pipelines enters at `alone_bound` too (SET_FLOORED), and at
        `pipes_bound` when that comes out. Without MoE layers the two are one: a group alone
        enters at `pipes_bound` (ALONE), a set at its own. Since `alone_bound` <= `pipes_bound` <= `quick_bound`,
        each entry comes out no later than the group or set would have at its own bound (a tie
        on the bound is broken by the index, unique in the queue),
        so the groups come out in the same order, at the same bounds, and every answer and count
        is the same (tests/test_search_speed_exact.py runs both); the scan ends where it did, as
        no entry left is below its bound. Likewise a set's pipelines that fit enter, when it comes
        out, at `member_bound` (MEMBER: the set's bound plus a floor on each one's bubble,
        between `pipes_bound` and `quick_bound`), and at their own `quick_bound` only when that
        comes out; they are counted bounded one by one when they enter, as before. Most never come out: their own bound (the rank sums,
        loads and optimizer floor) is never computed (DeepSeek's 16,659 groups: 1,386), nor, for
        most, their ep's own MoE layer."""
        stats = self.stats
        total = len(groups)
        queue = []
        members: dict[int, list[int]] = {}  # a set's first group index -> its groups' indices
        if self.pipe_sets:
            # without MoE layers `alone_bound` is `pipes_bound`: no floored step in between
            floored = any(moe for moe, _ in self._layer_counts)
            sets: dict[tuple, list[int]] = {}
            for i, (item, _, _, micro, _, sp, recompute) in enumerate(groups):
                sets.setdefault((item.index, micro, sp, recompute), []).append(i)
            for n, indices in enumerate(sets.values()):
                if self.progress is not None and n % 512 == 0:
                    self.progress(indices[0], 2 * total)
                if len(indices) > 1:
                    members[indices[0]] = indices
                    if self.lazy_alone and floored:  # at the set's own bound when this comes out
                        queue.append((self.alone_bound(*groups[indices[0]]), indices[0], SET_FLOORED))
                    else:
                        queue.append((self.pipes_bound(*groups[indices[0]]), indices[0], PIPES))
                    stats.pipe_set_bounds += 1
                elif self.lazy_alone:  # its own bound when this comes out (most never do)
                    first = groups[indices[0]]
                    queue.append((self.alone_bound(*first), indices[0], FLOORED) if floored
                                 else (self.pipes_bound(*first), indices[0], ALONE))
                    stats.group_bounds += 1
                else:
                    queue.append((self.quick_bound(*groups[indices[0]]), indices[0], COARSE))
                    stats.group_bounds += 1
        else:
            for i, group in enumerate(groups):
                queue.append((self.quick_bound(*group), i, COARSE))
                if self.progress is not None and i % 512 == 0:
                    self.progress(i, 2 * total)
            stats.group_bounds = total
        stats.bound_evaluations = total
        heapq.heapify(queue)
        threshold = self.ceiling
        done = 0
        unnoted = []  # rejected by their family's floor or their held floor, their own not computed
        held_passed: set[int] = set()  # groups whose held floor fits (`_held_out`, tried once)
        # the smallest entry is looked at in place (`queue[0]`) and leaves only when its fate is
        # known: one that goes back in replaces it (`heapreplace`, one sift instead of a pop's
        # and a push's). The keys (bound, group index) are distinct, so the heap hands out the
        # same entries in the same order whichever of the two moves it makes.
        pop, replace_top = heapq.heappop, heapq.heapreplace
        while queue:
            lower, i, refined = queue[0]
            if lower > threshold * (1 + BOUND_SLACK):
                break
            if refined is FLOORED or refined is SET_FLOORED:  # in again with its ep's own MoE layers
                replace_top(queue, (self.pipes_bound(*groups[i]), i, ALONE if refined is FLOORED else PIPES))
                continue
            if refined is ALONE or refined is MEMBER:  # in again at its own computation-only bound
                replace_top(queue, (self.quick_bound(*groups[i]), i, COARSE))
                continue
            if refined is PIPES:  # its groups enter at their own bounds, those that fit
                indices = members.pop(i)
                item, _, _, _, _, sp, recompute = groups[i]
                floor = item.opt_cache.get(("pipelines", sp, recompute)) if self.runtime == "torch" else None
                if floor is not None and floor > self.usable:
                    # all out at once: the pipelines' floor is under each one's family floor
                    pop(queue)
                    stats.out_of_memory += self._group_size(groups[i]) * len(indices)
                    unnoted.extend(groups[j] for j in indices)
                    continue
                top = True  # the set's entry still at queue[0]: the first group in replaces it
                for j in indices:
                    if (self.held_floors and self._held_out(groups[j], unnoted)) or \
                            self._family_out_of_memory(groups[j], unnoted):
                        continue
                    held_passed.add(j)
                    if top:
                        replace_top(queue, (self.member_bound(*groups[j]), j, MEMBER))
                        top = False
                    else:
                        heapq.heappush(queue, (self.member_bound(*groups[j]), j, MEMBER))
                    stats.group_bounds += 1
                if top:
                    pop(queue)
                continue
            if refined is COARSE:
                # its held floor first (a group alone; a set's were tried when it came out),
                # then its family's memory floor (kept per family: most of a large space's
                # groups that come out do not fit), then its communication too, and back in
                if self.held_floors and i not in held_passed and self._held_out(groups[i], unnoted):
                    pop(queue)
                    continue
                if self._family_out_of_memory(groups[i], unnoted):
                    pop(queue)
                    continue
                if self.known_out and self._known_out_of_memory(groups[i]):
                    pop(queue)
                    stats.out_of_memory += self._group_size(groups[i])
                    unnoted.append(groups[i])
                    continue
                replace_top(queue, (self.bound(*groups[i]), i, None))
                continue
            if refined is None:
                # Memory first: a group whose activations alone do not fit is out whatever its
                # sharding, and that costs less to learn than its bounds per sharding (its
                # family's floor was tried when it came out at its computation-only bound).
                if self.known_out and self._known_out_of_memory(groups[i]):
                    pop(queue)
                    stats.out_of_memory += self._group_size(groups[i])
                    unnoted.append(groups[i])
                    continue
                floor = self._quick_floor(self._knobs(*groups[i]), groups[i][0], exact=False)
                if floor > self.usable:
                    pop(queue)
                    stats.out_of_memory += self._group_size(groups[i])
                    self._note_smallest(floor)
                    continue
                tighter, refined = self.refine(groups[i], threshold)
                replace_top(queue, (tighter, i, refined))
                continue
            pop(queue)
            done += 1
            if self.progress is not None and done % 64 == 0:
                self.progress(total + done, 2 * total)
            threshold = self._evaluate(groups[i], refined, threshold)
        sizes: dict[int, int] = {}  # per degrees (`_group_size` reads them only; a set's groups share them)
        bounded = 0
        for _, i, refined in queue:
            item = groups[i][0]
            size = sizes.get(item.index)
            if size is None:
                size = sizes[item.index] = self._group_size(groups[i])
            bounded += size * len(members[i]) if refined is PIPES or refined is SET_FLOORED else size
        stats.bounded += bounded
        if not self.best:  # "each needs at least": the least of their own floors, as without families
            for group in unnoted:
                self._note_smallest(self._quick_floor(self._knobs(*group), group[0]))
            # and of the degrees that did not fit: with no ceiling each of their groups would have
            # come out and been noted so; under a ceiling, the degrees' floor (cheaper, a floor)
            for group in [g for item, pipes, canonical, splits in self._skipped
                          for g in self._list_groups(item, pipes, canonical, splits, 0, 1, 1, Stats())]:
                self._note_smallest(self._quick_floor(self._knobs(*group), group[0]) if self.ceiling == math.inf
                                    else group[0].opt_cache["degrees floor"])
        if self.progress is not None:
            self.progress(2 * total, 2 * total)
        return Outcome(found=self.best, stats=stats, smallest_peak=self.smallest_peak, usable_bytes=self.usable)

    def _group_size(self, group) -> int:
        """Candidates of a group: its rank orders times its shardings (`_group_shardings`)."""
        item = group[0]
        shardings = 1 if self.space.sharding_open and item.single_rank else len(item.shardings)
        return len(item.orders) * item.order_weight * shardings

    def _evaluate(self, group, refined, threshold) -> float:
        """Memory, then step time, of a group's candidates whose bound can still reach the top."""
        stats = self.stats
        item = group[0]
        bounds, tight = refined
        k0, core, times, shardings = self._lazy_parts(group)
        n_orders = len(item.orders) * item.order_weight
        floor = None
        for j, (sharding, shard) in enumerate(shardings):
            lower = bounds[j]
            if lower <= threshold * (1 + BOUND_SLACK) and not tight[j]:
                lower = self._tail_of(item, k0, sharding, shard, core, times)
            if lower > threshold * (1 + BOUND_SLACK):
                stats.bounded += n_orders
                continue
            if floor is None and self.runtime != "torch":
                floor = 0  # the floors count parc's runtime's transient buffers
            if floor is None:
                stats.memory_evaluations += 1
                self._work(k0.pp)
                states = self._states_floor(item, k0)
                floor = activation_floor_with(self.shape, k0, states)
            if floor > self.usable:  # no sharding can fit: the activations alone do not
                stats.out_of_memory += n_orders
                self._note_smallest(floor)
                continue
            k = self._with_sharding(k0, sharding, shard)
            stats.memory_evaluations += 1
            self._work(k.pp)
            peak_bytes, _ = peak(self.shape, k)
            peak_bytes += cached_logits_bytes(self.shape, k)  # reserved at the loss, as the memory check counts
            if peak_bytes > self.usable:
                stats.out_of_memory += n_orders
                self._note_smallest(peak_bytes)
                continue
            classes = self._classes(item, shard)
            for order, geo, weight in classes:
                limit = threshold if len(self.best) >= self.keep else self.ceiling
                if len(classes) > 1 and self._class_bound(group, geo, k, times) > limit * (1 + BOUND_SLACK):
                    stats.bounded += weight  # this order's own placement cannot reach the top
                    continue
                stats.time_evaluations += 1
                self._work(k.pp)
                stats.timed += weight
                step = timing.step_time(self.shape, k, self.hw, geo, self.constants, self.software).step
                if step > limit:
                    continue
                threshold = self._keep(step, peak_bytes, item, order, k, sharding, shard)
        return threshold

    def _class_bound(self, group, geo: timing.Geometry, k: Knobs, times: list) -> float:
        """`_tail`'s bound for one rank order class: the cp and ep exchanges and the pipeline
        sends at the order's own placement (`geo`) instead of the least over the orders; the
        data-parallel tail as before (it reads the ranks' parameters and computation only)."""
        item, schedule, v, micro, m, sp, recompute = group
        kept = self._kept_sums(item, schedule, v, micro, sp, recompute, geo)
        return self._tail(item, k, self._bound_core(kept, schedule, item.degrees.get("pp", 1), m), times)

    def _states_floor(self, item: _Degrees, k: Knobs) -> tuple[int, ...]:
        """Per pp rank, the least model states (`memory.model.state_bytes`) of any of the group's
        shardings: `peak` adds exactly these states to each rank's activations and buffers, so a
        rank's activation floor plus them is still a floor. They depend on the degrees, the
        chunking and the sharding only: kept per (schedule, virtual stages) for the degrees.
        Zeros outside parc's runtime (the floors are its)."""
        if self.runtime != "torch":
            return (0,) * k.pp
        key = ("states", k.schedule, k.virtual_stages)
        cached = item.opt_cache.get(key)
        if cached is None:
            params = rank_params(self.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)
            cached = item.opt_cache[key] = tuple(self._least_states(item, k, rp.params) for rp in params)
        return cached

    def _least_states(self, item: _Degrees, k: Knobs, params: Params) -> int:
        """The least `memory.model.state_bytes` of `params` over the group's shardings: it reads
        the parameters, the sharding and its groups, pp, the optimizer and the precision, so it
        is kept with the degrees per parameters (ranks holding the same parameters hold the same
        states, in every pipeline). hsdp never holds less than zero3 (`least_state_shardings`)."""
        least = item.opt_cache.get("least states")
        if least is None:
            least = item.opt_cache["least states"] = {}
        cached = least.get(params)
        if cached is None:
            shardings = item.opt_cache.get("state shardings")
            if shardings is None:
                knobs = [self._with_sharding(k, *s) for s in least_state_shardings(self._group_shardings(item, k))]
                shardings = item.opt_cache["state shardings"] = [
                    (ks, (ks.dense_shard_group, ks.expert_shard_group) if ks.sharding != "none" else (1, 1))
                    for ks in knobs]
            cached = least[params] = min(state_bytes(params, ks, g) for ks, g in shardings)
        return cached

    def _first_floor(self, k: Knobs, item: _Degrees) -> int:
        """`_quick_floor`'s first step: per rank, one micro-batch's activations on each of its
        chunks, its transient buffers and its least model states; the largest over the ranks.
        It never decreases as the micro-batch grows (every term is per token or constant;
        tests/test_search_engine.py holds it over sampled groups), which `_family_floor` uses."""
        self.stats.memory_evaluations += 1
        self._work(1)
        # the same group's floor as its family's when it has the smallest micro-batch (the
        # floor does not read the micro-batch count): computed once, counted as before
        pipe = self._pipeline_class(k.pp, k.schedule, k.virtual_stages)  # all it reads of the pipeline
        once = ("first", pipe, k.micro_batch, k.sequence_parallel, k.recompute)
        cached = item.opt_cache.get(once)
        if cached is not None:
            return cached
        held = first_backward_floors(self.shape, k)
        key = ("ranks", pipe)
        ranks = item.opt_cache.get(key)
        if ranks is None:  # the distinct (chunk signatures, least states) pairs over the pp ranks
            states = self._states_floor(item, k)
            signatures = rank_signatures(self.shape, k.pp, k.virtual_stages, k.schedule, k.split)
            ranks = item.opt_cache[key] = tuple(dict.fromkeys(zip(signatures, states, strict=True)))
        floor = item.opt_cache[once] = max(held[mine] + s for mine, s in ranks)
        return floor

    def _family_out_of_memory(self, group, unnoted: list) -> bool:
        """Whether the group's family floor (`_family_floor`) already exceeds the usable
        memory under parc's runtime; if so it is counted out of memory and noted later. Its
        pipelines' floor (`_pipelines_floor`, a floor under the family floor of every pipeline
        of the degrees) is tried first: one computation for all of them."""
        if self.runtime != "torch":
            return False
        item, schedule, v, _, _, sp, recompute = group
        if ("family fits", schedule, v, sp, recompute) in item.opt_cache:  # `_family_fits`, kept
            return False
        floor = item.opt_cache.get(("family", schedule, v, sp, recompute))
        if floor is None:  # the pipelines' floor first (kept per fewer values), then the family's
            floor = item.opt_cache.get(("pipelines", sp, recompute))
            if floor is None:
                floor = self._pipelines_floor(group)
            if floor <= self.usable:
                if self._family_fits(group):  # a ceiling on the family floor fits: so does the floor
                    return False
                floor = self._family_floor(group)
        if floor <= self.usable:
            return False
        self.stats.out_of_memory += self._group_size(group)
        unnoted.append(group)
        return True

    def _pipelines_floor(self, group) -> int:
        """A floor under `_family_floor` for every pipeline (schedule, virtual stages) of the
        group's degrees, sequence parallelism and recomputation, without building one: kept per
        those three. `_first_floor` is the largest over the ranks of a rank's saved activations
        (one micro-batch on each chunk, at least its layers' saved tensors) plus its working set
        plus its least model states (`_least_states`, which never decreases as the parameters
        grow). Whatever the chunking, some rank holds at least n = ceil(layers / pp) layers, of
        which at least n less the other kind's layers of each kind (dense, MoE), so at least their
        saved activations and (componentwise) parameters, and the rest's at the least of a layer
        kind, and at its first backward its last chunk's working set (at least the least of a
        layer kind's and the loss's);
        and the ranks' saved activations add up
        to the whole model's (each layer, the embedding and the output layer sit on exactly one
        rank), so the largest is at least their mean. Zero outside the plain recomputation
        modes (`full N` recomputes by position in the chunk) and parc's runtime, and without
        pipelining (one pipeline, whose family floor is as cheap)."""
        item, _, _, _, _, sp, recompute = group
        key = ("pipelines", sp, recompute)
        cached = item.opt_cache.get(key)
        if cached is not None:
            return cached
        if not self._layers_floor_applies() or item.degrees.get("pp", 1) == 1:
            item.opt_cache[key] = 0
            return 0
        self.stats.memory_evaluations += 1
        cached = item.opt_cache[key] = self._layers_floor(item, sp, recompute)
        return cached

    def _layers_floor_applies(self) -> bool:
        """The floors by layer counts (`_layers_floor`) hold in parc's runtime under the plain
        recomputation modes (`full N` recomputes by position in the chunk) without offloading
        (which frees the first layers of each chunk: a layer's saved set is no floor of it)."""
        return self.fixed["recompute_layers"] is None and not self.fixed["offload_layers"] and self.runtime == "torch"

    def _layers_floor(self, item: _Degrees, sp: bool, recompute: str) -> int:
        """`_pipelines_floor`'s value (see there), for pp 1 too (one rank holding every layer):
        the busiest rank's sure layers' saved activations, the rest's at the least of a layer
        kind, the largest working set of a layer it surely holds and the least model states of
        those layers' parameters (`_least_layer_states`), or the ranks' mean of the whole
        model's saved activations, whichever is larger. The per-layer pieces depend on neither
        pp nor dp (`_layer_floor_pieces`), the states not on sequence parallelism nor the
        recomputation: each is computed once and shared."""
        d = item.degrees
        tp, cp, pp = d.get("tp", 1), d.get("cp", 1), d.get("pp", 1)
        saved, working, whole, loss = self._layer_floor_pieces(tp, sp, cp, item.ep, recompute)
        sure, rest, states = self._least_layer_states(item, pp)
        # at its first backward the rank holds a micro-batch on every chunk and its last chunk
        # computes: that chunk's working set, at least a layer kind's least or the loss's
        # (`first_backward_floors`; an output chunk's is at least `logits_buffer`)
        busiest = (sum(c * a for c, a in zip(sure, saved, strict=True)) + rest * min(saved)
                   + min(min(working), loss) + states)
        return max(busiest, -(-whole // pp))

    def _layer_floor_pieces(self, tp: int, sp: bool, cp: int, ep: int, recompute: str) -> tuple:
        """Per layer kind (dense, MoE) one layer's saved activations and least working set (with
        and without the backward releasing a micro-batch's tensors: the schedules' least), each
        as a chunk of its own at the space's smallest micro-batch, and the whole model's saved
        activations (every layer, the embedding and the output layer) and the loss's buffer: what `_layers_floor`
        reads of the activations, kept per (tp, sequence parallelism, cp, ep, recomputation)."""
        key = (tp, sp, cp, ep, recompute)
        found = self._floor_pieces.get(key)
        if found is None:
            saved, working = [], []
            for moe, _ in self._layer_counts:
                # a dense layer reads no ep (the activation knobs of a dense model carry none):
                # its pieces are shared by every ep of an MoE search
                one = self._one_layer_floor(tp, sp, cp, ep if moe else 1, recompute, moe)
                saved.append(one[0])
                working.append(one[1])
            whole = sum(count * s for (_, count), s in zip(self._layer_counts, saved, strict=True))
            outer, loss = self._one_layer_floor(tp, sp, cp, ep, recompute, None)
            found = self._floor_pieces[key] = (tuple(saved), tuple(working), whole + outer, loss)
        return found

    def _one_layer_floor(self, tp: int, sp: bool, cp: int, ep: int, recompute: str, moe: bool | None) -> tuple:
        """(saved, least working set) of one layer of a kind as a chunk of its own, or with
        `moe` None (the embedding's and the output layer's saved activations, the loss's buffer): the pieces of
        `_layer_floor_pieces`, kept per what they read."""
        key = (tp, sp, cp, ep, recompute, moe)
        found = self._floor_pieces.get(key)
        if found is None:
            shape, fixed = self.shape, self.fixed
            ak = activation_knobs(tp, sp, cp, fixed["cp_flavour"], self.seq, self.space.micro[0], self.runtime,
                                  ep if shape.moe else 1, fixed["precision"], fp8_recipe=fixed["fp8_recipe"])
            if moe is None:
                vocab = padded_vocab(shape.vocab, tp, self.runtime)
                found = (act.embedding_activations(shape, ak) + act.output_activations(shape, ak, vocab),
                         act.logits_buffer(ak, vocab))
            else:
                each = [_chunk_activations(shape, ak, (1, False, False, shape.moe.index(moe) if shape.moe else 0),
                                           recompute, None, True, released) for released in (True, False)]
                found = (each[0].activations.saved, min(p.working for p in each))
            self._floor_pieces[key] = found
        return found

    def _least_layer_states(self, item: _Degrees, pp: int) -> tuple:
        """(sure layers of each kind, the rest, their least model states) of the busiest rank:
        of its n = ceil(layers / pp) layers or more, at least n less the other kind's layers are
        of each kind, the rest of either; the least states (`_least_states`) of their
        parameters, each of the rest at the least of a layer kind (componentwise). Kept with the
        degrees (it reads neither sequence parallelism nor the recomputation)."""
        found = item.opt_cache.get("layer states")
        if found is None:
            shape = self.shape
            params = [layer_params(shape, item.degrees.get("tp", 1), item.ep, moe) for moe, _ in self._layer_counts]
            n = -(-shape.layers // pp)
            sure = [max(0, n - (shape.layers - count)) for _, count in self._layer_counts]
            rest = n - sum(sure)
            least = Params(*(sum(c * getattr(p, name) for c, p in zip(sure, params, strict=True))
                             + rest * min(getattr(p, name) for p in params) for name in ("linear", "other", "expert")))
            k = self._knobs(item, "1f1b", 1, self.space.micro[0], 1, False, "none")
            found = item.opt_cache["layer states"] = (sure, rest, self._least_states(item, k, least))
        return found

    def _degrees_floor(self, item: _Degrees, sequence_parallel: list[bool]) -> int:
        """A floor on the memory of every candidate of these degrees, whatever its pipeline,
        micro-batch, sequence parallelism (of `sequence_parallel`, those that split the
        sequence), recomputation and sharding: the least `_layers_floor` over sequence
        parallelism and recomputation (each at most the family floor of every pipeline: see
        `_pipelines_floor`). When it exceeds the usable memory, the degrees' groups are never
        bounded (`run`); else the pipelines' floors it computed are kept for the scan: it stops
        at the first that fits, returning it (then not the least, only not above the part). Zero
        where the layers' floors do not hold, and without pipelining: one pipeline, whose
        family floors the scan computes as cheaply, and few such degrees do not fit (they would
        add 240 groups to the 983,040-GPU space's 182,724 set aside), while every one would pay
        for its layers' pieces (an MoE layer's per ep: deepseek-v3-like's space, all pp 1,
        took a third longer)."""
        if not self._layers_floor_applies() or item.degrees.get("pp", 1) == 1:
            item.opt_cache["degrees floor"] = 0
            return 0
        self.stats.memory_evaluations += 1
        least = math.inf
        # the least is all that matters, and only whether it exceeds the part: the modes that
        # keep the least first (full recomputation, then selective), and the first that fits
        # ends the search (the scan computes the others' pipelines' floors where it needs them)
        for recompute in sorted(self.space.recompute, key=_KEEPS_LEAST.index):
            for sp in sequence_parallel:
                floor = item.opt_cache[("pipelines", sp, recompute)] = self._layers_floor(item, sp, recompute)
                least = min(least, floor)
                if least <= self.usable:
                    return least
        item.opt_cache["degrees floor"] = least
        return least

    def _family_floor(self, group) -> int:
        """A floor on the memory of every group that differs from this one only in its
        micro-batch: `_first_floor` at the smallest micro-batch of the space (it only grows with
        the micro-batch). One computation rejects a whole family of out-of-memory groups (a
        large space's cheapest bounds are mostly layouts whose activations do not fit; taking
        the least over the recomputation modes or sequence parallelism too was measured to cost
        more floors than it saves). Kept per (schedule, virtual stages, sequence parallelism,
        recomputation) for the degrees."""
        item, schedule, v, _, _, sp, recompute = group
        key = ("family", schedule, v, sp, recompute)
        cached = item.opt_cache.get(key)
        if cached is None:
            # shared by the pipelines of equal chunks and backward (`_pipeline_class`)
            shared = ("family class", self._pipeline_class(item.degrees.get("pp", 1), schedule, v), sp, recompute)
            cached = item.opt_cache.get(shared)
            if cached is None:
                micro = self.space.micro[0]
                cached = item.opt_cache[shared] = self._first_floor(
                    self._knobs(item, schedule, v, micro, 1, sp, recompute), item)
            item.opt_cache[key] = cached
        return cached

    def _family_fits(self, group) -> bool:
        """Whether the group's family floor (`_family_floor`) surely fits, from a ceiling on it
        that sums no rank's chunks: the most layers a rank of the pipeline holds
        (`memory.model.most_rank_layers`) at the largest saved set of a layer kind, with the
        embedding's, the head's and the largest working set (`first_backward_ceiling`), plus the
        least model states of a rank holding that many layers of the largest kind (componentwise)
        and the embedding and output tables (`_least_states` never decreases as the parameters
        grow; no rank holds more). Where the floor's exact value is not needed (it fits: the
        family is not out of memory, nothing is noted), the ceiling spares its sums and the
        ranks' states; where the ceiling does not fit, the floor decides. Most families of a
        large space's layouts that come out fit (gpt3-175b's 16,384-GPU space: every one of
        3,073). Kept per (pipeline class, sequence parallelism, recomputation) for the degrees,
        as the family floor is, and computed per (most layers, release) of the pipeline; counted as that floor's computation was (one memory evaluation
        and one unit of work per family class), so the statistics are unchanged."""
        item, schedule, v, _, _, sp, recompute = group
        if not self._layers_floor_applies():
            return False
        pp = item.degrees.get("pp", 1)
        pipe = self._pipeline_class(pp, schedule, v)
        key = ("family ceiling", pipe, sp, recompute)
        ceiling = item.opt_cache.get(key)
        if ceiling is None:
            layers = most_rank_layers(self.shape, pp, v, schedule, self.split)
            # all the ceiling reads of the pipeline: its most layers and whether it releases
            # (the classes of many pipelines share them; their knobs are built only here)
            shared = ("ceiling", layers, released_backward(schedule, pp), sp, recompute)
            ceiling = item.opt_cache.get(shared)
            if ceiling is None:
                k = self._knobs(item, schedule, v, self.space.micro[0], 1, sp, recompute)
                ceiling = item.opt_cache[shared] = (first_backward_ceiling(self.shape, k, layers)
                                                    + self._states_ceiling(item, k, layers))
            item.opt_cache[key] = ceiling
            if ceiling <= self.usable and ("family class", pipe, sp, recompute) not in item.opt_cache:
                self.stats.memory_evaluations += 1  # as `_first_floor` counted the floor it stands for
                self._work(1)
        if ceiling > self.usable:
            return False
        item.opt_cache[("family fits", schedule, v, sp, recompute)] = True  # asked first next time
        return True

    def _states_ceiling(self, item: _Degrees, k: Knobs, layers: int) -> int:
        """The least model states (`_least_states`) of parameters no rank of a pipeline whose
        ranks hold at most `layers` layers exceeds, componentwise: that many layers of the
        largest kind, the embedding (its table and positions) and the output layer (its norm and
        table, which a tied model's output chunk holds as a copy): `memory.parameters.chunk_params`
        counts nothing else. Kept with the degrees per layer count."""
        key = ("states ceiling", layers)
        cached = item.opt_cache.get(key)
        if cached is None:
            shape = self.shape
            kinds = [layer_params(shape, k.tp, k.ep, moe) for moe, _ in self._layer_counts]
            table = padded_vocab(shape.vocab, k.tp, k.runtime) * shape.hidden // k.tp
            most = Params(linear=layers * max(p.linear for p in kinds),
                          other=layers * max(p.other for p in kinds) + 2 * table + shape.position_params
                          + shape.norm_params,
                          expert=layers * max(p.expert for p in kinds))
            cached = item.opt_cache[key] = self._least_states(item, k, most)
        return cached

    def _pipeline_class(self, pp: int, schedule: str, v: int) -> int:
        """What `_first_floor` reads of a pipeline, as a small number: its chunks (`chunks_of`:
        the ranks' chunk signatures and parameters, hence their least states) and whether its
        backward releases a micro-batch's tensors as it consumes them (`released_backward`: not
        under a zero-bubble schedule). The first floor reads the schedule and the virtual stages
        through these alone, so pipelines of one class share it: 1F1B and GPipe always, the
        interleaved schedules of one virtual-stage count (tests/test_search_speed_exact.py)."""
        key = (pp, schedule, v)
        found = self._pipe_classes.get(key)
        if found is None:
            what = (chunks_of(self.shape.layers, pp, v, schedule, self.split, self.shape.tied, self.shape.mtp),
                    released_backward(schedule, pp))
            found = self._pipe_classes[key] = self._pipe_class_ids.setdefault(what, len(self._pipe_class_ids))
        return found

    def _first_fails(self, item: _Degrees, pp: int, schedule: str, v: int, sp: bool, recompute: str) -> tuple:
        """The key under which the degrees keep the smallest micro-batch whose first floor
        (`_first_floor`) was found above the usable memory, per what that floor reads besides
        the micro-batch: the pipeline's class, sequence parallelism and the recomputation."""
        return ("first fails", self._pipeline_class(pp, schedule, v), sp, recompute)

    def _known_out_of_memory(self, group) -> bool:
        """Whether the group's first floor is known to exceed the usable memory without computing
        it: the first floor never decreases as the micro-batch grows (every term is per token or
        constant; `_first_floor`), so a group whose family failed at a micro-batch no larger
        than its own fails too. Its own floor is at least the one noted for that smaller
        micro-batch, so the smallest floor noted does not change either (tests/test_search_speed_exact.py)."""
        item, schedule, v, micro, _, sp, recompute = group
        fails = item.opt_cache.get(self._first_fails(item, item.degrees.get("pp", 1), schedule, v, sp, recompute))
        return fails is not None and fails <= micro

    def _quick_floor(self, k: Knobs, item: _Degrees, exact: bool = True) -> int:
        """A floor on the memory of every sharding of these knobs, cheaper than the memory
        model's `activation_floors`, in two steps (the second only when the first fits), each
        rank's least model states over the shardings (`_states_floor`) added. First without
        walking the schedule: every schedule holds, when a rank runs its first backward, the
        activations of micro-batch 0 on each of its chunks (it went forward through all of them
        and the backward starts from the last), so the sum over a rank's chunks plus its
        transient buffers is a floor. Then the first and the last rank's activations at their
        worst moment (`walked_peak`, `schedules.weighted_peak`'s largest sum: one walk each, where
        the model walks every rank).
        Only for parc's runtime (the floors count its transient buffers, which the others' do not
        have).

        Not `exact` (the scan, which only compares it with the usable memory and notes it when
        it does not fit): the first step is skipped where a ceiling on it fits (`_first_fits`).
        Above the usable memory the value is then the same (the first step's, below it, is not
        the largest term); at or below, it is only known to fit, as the exact one does."""
        if self.runtime != "torch":
            return 0
        if not exact and self._first_fits(k, item):
            floor = 0  # the first floor fits: the walked terms decide
        else:
            floor = self._first_floor(k, item)
            if floor > self.usable:
                key = self._first_fails(item, k.pp, k.schedule, k.virtual_stages, k.sequence_parallel, k.recompute)
                item.opt_cache[key] = min(item.opt_cache.get(key, k.micro_batch), k.micro_batch)
                return floor
        first, last = end_rank_activations(self.shape, k)  # those two only, not every rank's
        acts = {0: first, k.pp - 1: last}
        states = self._states_floor(item, k)
        for rank in sorted({0, k.pp - 1}):
            chunks = acts[rank].chunks
            held = walked_peak(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank,
                               tuple(c.saved for c in chunks), tuple(c.pending for c in chunks))
            # any moment's working set is some chunk's, of some kind of pass (`model.moments_peak`;
            # a zero-bubble weight pass adds less than a full backward): the least of them
            a = acts[rank]
            held -= first_backward_relief_bound(k, rank, a)  # the second backward's (`model.first_backward_relief`)
            floor = max(floor, held + min(a.working + a.input_working + a.weight_working) + states[rank])
        return floor

    def _held_out(self, group, unnoted: list) -> bool:
        """Whether the group's held floor (`_held_floor`) exceeds the usable memory; if so it is
        counted out of memory and noted later (its own `_quick_floor` computed only if nothing
        fits, as for a family's). Decided by `_held_exceeds`, which builds the ranks' least
        model states only where cheaper exact tests leave the answer open."""
        if not self._held_exceeds(group):
            return False
        self.stats.out_of_memory += self._group_size(group)
        unnoted.append(group)
        return True

    def _held_exceeds(self, group) -> bool:
        """Whether `_held_floor(group)` exceeds the usable memory, its end ranks' least model
        states (`_states_floor`: every pp rank's parameters and their states, most of the held
        floor's cost) read only where two exact tests without them leave it open. The floor is
        the largest over the walked end ranks of activations plus states, the states never
        negative: if one rank's activations alone exceed the usable memory, so does the floor
        (the Mixtral 16,384-GPU row: 1,423 of the 1,991 groups whose degrees' states were not
        built yet). And each rank's states are at most `_states_ceiling` at the layers it holds
        (a componentwise ceiling on its parameters; `_least_states` never decreases as they
        grow): if every rank's activations plus that ceiling fit, so does the floor (210 more).
        Where the degrees' states are kept already, the floor itself (tests/test_search_speed_exact.py
        checks the decision against the floor's over random groups and memories)."""
        item, schedule, v, micro, m, sp, recompute = group
        if not self._layers_floor_applies() or ("states", schedule, v) in item.opt_cache:
            return self._held_floor(group) > self.usable
        d = item.degrees
        pp = d.get("pp", 1)
        least = self._least_layer_saved(d.get("tp", 1), sp, d.get("cp", 1), item.ep, recompute, micro)
        counts = self._held_counts(pp, v, schedule, m)
        usable = self.usable
        for _, count in counts:
            if least * count > usable:
                return True
        layers = self._end_layers(pp, v, schedule)
        k = None
        for rank, count in counts:
            ceiling = item.opt_cache.get(("states ceiling", layers[rank]))
            if ceiling is None:
                k = k or self._knobs(*group)
                ceiling = self._states_ceiling(item, k, layers[rank])
            if least * count + ceiling > usable:
                break  # left open by the ceiling: the low states may still decide
        else:
            return False
        for rank, count in counts:
            low = item.opt_cache.get(("states low", layers[rank]))
            if low is None:
                k = k or self._knobs(*group)
                low = self._states_low(item, k, layers[rank])
            if least * count + low > usable:
                return True
        return self._held_floor(group) > usable

    def _states_low(self, item: _Degrees, k: Knobs, layers: int) -> int:
        """The least model states (`_least_states`) of `layers` layers at the least of a layer
        kind's parameters, componentwise: no more than a rank holding that many layers holds
        (its parameters are its layers' plus its chunks' embedding, output and norm ones, none
        negative: `memory.parameters.chunk_params`; `_least_states` never decreases as the
        parameters grow). Kept with the degrees per layer count."""
        key = ("states low", layers)
        cached = item.opt_cache.get(key)
        if cached is None:
            kinds = [layer_params(self.shape, k.tp, k.ep, moe) for moe, _ in self._layer_counts]
            fewest = Params(linear=layers * min(p.linear for p in kinds), other=layers * min(p.other for p in kinds),
                            expert=layers * min(p.expert for p in kinds))
            cached = item.opt_cache[key] = self._least_states(item, k, fewest)
        return cached

    def _end_layers(self, pp: int, v: int, schedule: str) -> dict[int, int]:
        """The layers the first and the last pp rank hold (their chunks' in `rank_signatures`,
        the ones `_held_counts` walks), kept per pipeline."""
        key = ("end layers", pp, v, schedule)
        found = self._floor_pieces.get(key)
        if found is None:
            signatures = rank_signatures(self.shape, pp, v, schedule, self.split)
            found = self._floor_pieces[key] = {rank: sum(sig[0] for sig in signatures[rank])
                                               for rank in sorted({0, pp - 1})}
        return found

    def _held_floor(self, group) -> int:
        """A floor under `_quick_floor`'s walked step, from numbers shared far beyond one group:
        each chunk's saved activations at the least of a layer kind's (`_least_layer_saved`)
        times its layers, no pending input-pass state and no working set, walked on the first
        and the last rank, plus the rank's least model states (`_states_floor`). A chunk's saved
        activations are its layers' sum plus the embedding's and the output layer's, none
        negative (`memory.model._chunk_activations`), so each chunk's weight here is at most the
        walk's; a pending micro-batch's bytes are never negative off a V's turn (`split_pending`;
        a rank at the turn is not walked here, `_held_ranks`) and a moment's counts never are,
        so every moment's sum, and the largest, is at most the walked one's. The walk's weights
        are the layer counts times one number, so its largest sum is that number times the
        largest sum of the layer counts (`_held_counts`, kept per pipeline and micro-batch
        count: integers, exact). What it reads besides: one layer's activations per (tp,
        sequence parallelism, cp, ep, recomputation, micro-batch), for the whole space; the
        memory model's ranks (`end_rank_activations`, shared by no other group) are not built.
        It rejects far more than the first floor (a micro-batch on each chunk) does: most
        layouts that do not fit hold many micro-batches at once (the 983,040-GPU space: 2,763 of
        the 2,772 groups whose first floor fits). Zero where the layers' floors do not hold
        (`_layers_floor_applies`)."""
        if not self._layers_floor_applies():
            return 0
        item, schedule, v, micro, m, sp, recompute = group
        d = item.degrees
        tp, pp = d.get("tp", 1), d.get("pp", 1)
        least = self._least_layer_saved(tp, sp, d.get("cp", 1), item.ep, recompute, micro)
        states = item.opt_cache.get(("states", schedule, v))
        if states is None:
            states = self._states_floor(item, self._knobs(*group))
        floor = 0
        for rank, count in self._held_counts(pp, v, schedule, m):
            floor = max(floor, least * count + states[rank])
        return floor

    def _held_counts(self, pp: int, v: int, schedule: str, m: int) -> tuple:
        """(rank, the largest over the walk's moments of the layers held: each chunk's
        micro-batches held times its layers, `walked_peak` with the layer counts as weights) of
        the first and the last pp rank, less a rank at a V's turn (`v_turn`), kept per
        pipeline and micro-batch count. The chunks in the walk's order are `rank_signatures`',
        the ones `end_rank_activations` builds."""
        key = ("held counts", pp, v, schedule, m)
        found = self._floor_pieces.get(key)
        if found is None:
            signatures = rank_signatures(self.shape, pp, v, schedule, self.split)
            found = []
            for rank in sorted({0, pp - 1}):
                if v_turn(schedule, pp, rank):
                    continue
                layers = tuple(sig[0] for sig in signatures[rank])
                count = walked_peak(schedule, pp, v, m, rank, layers, (0,) * len(layers))
                if one_fewer_in_pipeline(schedule, pp, v, m, rank):
                    # the second backward's relief (`model.first_backward_relief`): the model's
                    # layers' moment may hold one micro-batch fewer than the walk's peak
                    count -= layers[0]
                found.append((rank, count))
            found = self._floor_pieces[key] = tuple(found)
        return found

    def _least_layer_saved(self, tp: int, sp: bool, cp: int, ep: int, recompute: str, micro: int) -> int:
        """The least saved activations of one layer of a kind (dense, MoE) at this micro-batch and
        recomputation, each as a chunk of its own (as `_one_layer_floor`, at `micro`), kept per
        what they read."""
        key = ("least saved", tp, sp, cp, ep, recompute, micro)
        found = self._floor_pieces.get(key)
        if found is None:
            shape, fixed = self.shape, self.fixed
            ak = activation_knobs(tp, sp, cp, fixed["cp_flavour"], self.seq, micro, self.runtime,
                                  ep if shape.moe else 1, fixed["precision"], fp8_recipe=fixed["fp8_recipe"])
            found = self._floor_pieces[key] = min(
                _chunk_activations(shape, ak, (1, False, False, shape.moe.index(moe) if shape.moe else 0),
                                   recompute, None, True).activations.saved
                for moe, _ in self._layer_counts)
        return found

    def _first_fits(self, k: Knobs, item: _Degrees) -> bool:
        """Whether the group's first floor (`_first_floor`) surely fits, by the ceiling
        `_family_fits` takes (`memory.model.first_backward_ceiling` at the most layers a rank
        holds plus `_states_ceiling`) at the group's own micro-batch; counted as that floor is.
        Not where the floor is kept already, nor where the ceiling does not hold (`full N`)."""
        if not self._layers_floor_applies():
            return False
        pipe = self._pipeline_class(k.pp, k.schedule, k.virtual_stages)
        if ("first", pipe, k.micro_batch, k.sequence_parallel, k.recompute) in item.opt_cache:
            return False
        layers = most_rank_layers(self.shape, k.pp, k.virtual_stages, k.schedule, self.split)
        if first_backward_ceiling(self.shape, k, layers) + self._states_ceiling(item, k, layers) > self.usable:
            return False
        self.stats.memory_evaluations += 1  # as `_first_floor` counts the floor it stands for
        self._work(1)
        return True

    def _work(self, ranks: int) -> None:
        before = self.stats.work
        self.stats.work += ranks
        if self.stats.work // CACHE_WORK != before // CACHE_WORK:
            trim_caches()  # deep pipelines fill them fast: keep the process's memory bounded
        if self.stats.work > MAX_WORK:
            raise SpaceTooLarge("pipeline-rank evaluations", self.stats.work, MAX_WORK, self.stats)

    def _note_smallest(self, nbytes: int) -> None:
        if self.smallest_peak is None or nbytes < self.smallest_peak:
            self.smallest_peak = nbytes

    def _keep(self, step, peak_bytes, item, order, k, sharding, shard) -> float:
        assignment = Assignment(
            degrees=tuple((name, item.degrees[name]) for name in order), ep=item.ep, micro=k.micro_batch,
            recompute=k.recompute, sharding=sharding, shard=shard, schedule=k.schedule,
            virtual_stages=k.virtual_stages, sequence_parallel=k.sequence_parallel)
        found = Found(step=step, peak_bytes=peak_bytes, key=canonical_key(self.space, assignment),
                      assignment=assignment)
        keys = [f.rank_key for f in self.best]
        self.best.insert(bisect.bisect(keys, found.rank_key), found)
        del self.best[self.keep:]
        return min(self.ceiling, self.best[-1].step if len(self.best) >= self.keep else math.inf)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, as it was before after it (even on
    an exception). A search allocates millions of small objects (bounds' tuples, keys, knobs)
    that it keeps in its caches: each allocation count past the threshold ran a collection
    that walked them all again (the oldest generation too, every so often), finding no cycle
    to free. What the search makes is freed by reference counting as before; cycles made in
    the block wait for the next collection of the oldest generation after it.

    On the way out, the objects the block made are moved to the oldest generation untraversed
    (`gc.freeze` then `gc.unfreeze`, two list splices): left in the youngest, the first
    allocation after `gc.enable` ran a collection that walked every one of them (a tenth of a
    second after the 983,040-GPU search, whose caches are then freed by reference counting
    anyway). Only where nothing was frozen before (`gc.unfreeze` would thaw another's freeze)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def least_state_shardings(shardings: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The shardings among which the least `memory.model.state_bytes` of any parameters lies:
    every hsdp R x S is left out where zero3 is there. Both take `state_bytes`'s sharded branch
    with the same gradients and the same gathered compute copy (`keeps_gathered` reads pp and
    not the shard), and hsdp splits the dense and the expert states over at most zero3's groups
    (S x the dense replicas / dp <= the dense replicas; the expert replicas x S / dp, or all of
    them with an expert grid, <= the expert replicas): each rounded term only grows as its
    group shrinks. Exact, not a floor (tests/test_search_speed_exact.py compares the least with
    the least over every sharding)."""
    if ("zero3", 0) not in shardings:
        return shardings
    return [s for s in shardings if s[0] != "hsdp"]


def folds_single_rank(sw: timing.Software) -> bool:
    """Whether shardings over a single rank are `none` or worse under this runtime, so that search
    may fold them into `none`: where the data-parallel runtime makes no copies of its own
    (Megatron-LM). In parc's job and torchtitan they differ in their copies
    (`timing.dp_copy_bytes`): FSDP2 over one rank (`none`) casts every weight before each forward
    and backward and accumulates unreduced gradients in fp32, zero1's buckets cast once a step,
    so at many micro-batches zero1 (or zero2) over one rank is faster; each is evaluated."""
    return sw.dp_runtime != "torch" or sw.dp_copies == "none"


def is_single_rank(k: Knobs, moe: bool) -> bool:
    """Whether a sharding of these knobs spreads over a single rank (W0353): one dense replica
    and, in an MoE model, one expert replica, as `Knobs.dense_replicas` and
    `Knobs.expert_replicas` count them (in parc's runtime tp ranks are expert replicas). Then
    every sharding is `none` or worse, and search folds them into `none`; the one predicate both
    the fold's count (`Engine.run`) and the groups' shardings (`Engine._group_shardings`) read."""
    return k.dense_replicas == 1 and (k.expert_replicas == 1 or not moe)


_SHARED: dict[tuple, tuple[dict, dict]] = {}
"""The time model's per-layer pieces and the ranks' loads of every search in this process, per
everything they depend on besides their own keys: an outer search over cluster sizes (`nodes ?`)
calls the engine once per size, and the pieces of a (tp, cp, micro-batch, ...) are the same at
every size."""


def _shared_caches(context: tuple) -> tuple[dict, dict]:
    """(pieces, loads) caches for searches of this model, hardware and software."""
    caches = _SHARED.get(context)
    if caches is None:
        if len(_SHARED) >= 16:
            _SHARED.clear()
        caches = _SHARED[context] = ({}, {})
    return caches


def clear_caches() -> None:
    """Forget the pieces and loads shared between searches (benchmarks measure a cold start)."""
    _SHARED.clear()
    _DIVISORS.clear()
    space_module.clear_caches()


def canonical_pipe_of(pipes: list[tuple[str, int]]) -> tuple[str, int]:
    """The (schedule, virtual stages) the others are folded into when pp is 1."""
    return ("1f1b", 1) if ("1f1b", 1) in pipes else pipes[0]


_DIVISORS: dict[int, tuple[int, ...]] = {}


def _divisors(n: int) -> tuple[int, ...]:
    cached = _DIVISORS.get(n)
    if cached is None:
        small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
        cached = tuple(sorted(set(small + [n // d for d in small])))
        if len(_DIVISORS) > 4096:
            _DIVISORS.clear()
        _DIVISORS[n] = cached
    return cached


__all__ = ["Engine", "Found", "Outcome", "SpaceTooLarge", "Stats", "RECOMPUTE", "SCHEDULES"]
