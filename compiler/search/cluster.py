"""Cluster questions: how many nodes, which GPU, by when, at what cost (`nodes ?`, `gpu ?`).

The layout search (`search()`) answers "which layout is fastest on this cluster". A spec may also
leave the cluster open: `hardware { gpu ? in [h100-sxm, a100-80gb], nodes ? in 1 to 2048 }`, with
constraints in `train` (`deadline 60 days`, `budget $2.5M`) and an `objective` (`time`, `cost`,
`tokens-per-dollar`; by default the fewest GPUs). This module is the outer search over clusters;
each cluster it tries is answered by the inner layout search on the spec's own text with the
cluster's values written in, so every point is a spec that `parc check` passes and `parc compile`
accepts, and its time and cost are `parc explain`'s (`compiler/budget.py`).

Candidates (docs/search.md, "Cluster questions"): the GPU counts some layout can fill. Every layout
rule below is a *necessary* condition, so a count outside the set has no valid layout at all:

    GPUs = (product of the written degrees) x dp x tp x pp x cp x ep (the open ones)
    dp divides the global batch (E0321)        tp divides the heads, tp <= the NVLink domain (E0310, E0304)
    pp divides the layers (E0315; with a written `split`, pp is its length, E0316)
    cp divides the sequence (E0330)            ep divides the experts (E0340)

and whole nodes inside the asked range.

The answer is exact: the cluster an exhaustive scan of every candidate would choose
(tests/test_cluster_search.py holds them equal). Nothing is assumed about how the best time
varies with the node count, because it is not monotone: divisibility decides which layouts a
count allows (405B: 1,792 nodes train in 88 days, 2,048 in 101; 504 nodes take 351 days, 448
take 348). What makes the scan cheap is what it does not search:

1. floors (`Floors`), per GPU: the model states
   spread over every GPU (a cluster that cannot hold them has no layout) and the model's FLOPs
   at the fastest any kernel runs (`kernel_ceiling`: no layout on g GPUs steps faster than
   FLOPs / (g x peak x ceiling)); and, per GPU count of a dense model, the busiest rank's layers
   at the time model's own kernel times for the best degrees that count allows
   (`ComputeFloor`). A cluster whose floor misses the deadline or the budget, or
   cannot beat the best answer found so far under the objective (`answer_limit`), is ruled out
   without a layout search;
2. ceilings: every other cluster the answer depends on is searched only for a layout at most
   as slow as that limit (the engine's own bounds prune everything slower before any memory or
   time evaluation); finding none proves the cluster cannot be the answer, at about half the
   cost of a full search;
3. order: candidates are visited best floor first (the fewest GPUs, the fastest floor, the
   cheapest), so the best answer found early rules out the most;
4. the ladder: the smallest candidate of every power-of-two band of node counts (1, 2-3, 4-7,
   ...) and the largest, each that its floors let meet the constraints, is searched in full
   first: the frontier of time against cost spans the range, and its points are the first
   incumbents;
5. what each layout search walks: only the degrees a valid layout can take on each axis
   (`layout_degrees`, the one-axis rules), not every ordered factorisation of the GPU count (a
   count of many divisors has tens of thousands, nearly all rejected); and what does not read
   the node count is computed once for every cluster (the engine's shared pieces and loads, the
   memory model's first-backward floors).

The frontier is drawn over the clusters listed: the ladder's and every cluster searched for the
answer that has a layout within its ceiling (a cluster ruled out is slower or dearer than the
question allows, or than the answer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..budget import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ..catalog import gpus as gpu_catalog
from ..diagnostics import Diagnostic, Label, error, has_errors
from ..pipeline import Compilation, compile_text
from ..spec import HOLE, MAX_NODES_DEFAULT, ClusterQuestion, Spec

OBJECTIVES = ("gpus", "time", "cost", "tokens-per-dollar")
"""What the answer minimises; "gpus" (the fewest GPUs that meet the constraints) unless stated."""


@dataclass(frozen=True)
class Constraints:
    """What the answer must meet, from `train { deadline ..., budget ..., objective ... }`."""

    deadline: float | None
    """Seconds the run may take."""
    budget: float | None
    """Dollars the run may cost."""
    objective: str


@dataclass(frozen=True)
class Probe:
    """One cluster to try: a GPU and a node count."""

    gpu: str
    nodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass
class Point:
    """One cluster, answered by the layout search."""

    probe: Probe
    text: str | None = None
    """The spec filled for this cluster (the layout search's winner); None when nothing fits."""
    reason: str | None = None
    """Why no layout: the layout search's or the front end's error codes."""
    step: float | None = None
    days: float | None = None
    gpu_hours: float | None = None
    cost: float | None = None
    price_source: str | None = None
    tokens: int = 0
    layout: str = ""
    values: dict = field(default_factory=dict)
    """The layout search's values for the spec's other holes (`search()`'s `Candidate.values`)."""
    frontier: bool = False
    searched: bool = False
    """Whether a layout search ran (not when the front end or the memory floor answered)."""
    memory: object | None = None
    """The winning layout's memory estimate (`memory.Estimate`): its margin, predicted
    `max_memory_reserved` and whether it is at risk (W0410, `Estimate.at_risk`)."""
    clear_runner_up: RunnerUp | None = None
    """With an at-risk winner: the fastest runner-up clear of the band among the layouts `parc
    search` lists on this cluster (`name_clear_runner_ups`); None when none listed is clear."""
    listed: int = 0
    """How many layouts that listing held (0 when the winner is not at risk: none was made)."""
    filled: Compilation | None = field(default=None, repr=False, compare=False)
    """The filled spec's compilation the layout search ran on, kept only while the winner is at
    risk: `name_clear_runner_ups` lists that same spec again and needs not compile it twice."""

    @property
    def at_risk(self) -> bool:
        return self.memory is not None and self.memory.at_risk

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def tokens_per_dollar(self) -> float | None:
        return None if not self.cost else self.tokens / self.cost


@dataclass(frozen=True)
class RunnerUp:
    """A cluster's fastest runner-up layout clear of the memory band, as the layout search names
    it (`ranking.memory_clear_runner_up`) when its winner is at risk."""

    rank: int
    """Its place in the cluster's layout search (`parc search` on the filled spec), 1 = the winner."""
    layout: str
    values: dict
    step: float
    slower: float
    """How much slower its predicted step is than the winner's, a fraction (`ranking.gap`)."""
    margin_bytes: int
    """What it has to spare under the usable memory (`Estimate.margin_bytes`)."""


@dataclass
class ClusterResult:
    question: ClusterQuestion
    constraints: Constraints
    candidates: dict[str, int] = field(default_factory=dict)
    """GPU -> how many node counts the candidate rule leaves."""
    points: list[Point] = field(default_factory=list)
    chosen: Point | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    searches: int = 0
    """Layout searches run (in full or under a ceiling)."""
    ruled_out: int = 0
    """Candidates not listed: ruled out by their floors, or with no layout under their ceiling."""
    runner_up_searches: int = 0
    """Layout searches run after the answer to name at-risk clusters' clear runners-up
    (`name_clear_runner_ups`); not counted in `searches`."""

    @property
    def frontier(self) -> list[Point]:
        return [p for p in self.points if p.frontier]


# ---------------------------------------------------------------------------------------------
# The question and its constraints


def constraints_of(spec: Spec) -> Constraints:
    settings = spec.train.settings if spec.train else {}

    def value(name):
        located = settings.get(name)
        return None if located is None else located.value

    return Constraints(deadline=value("deadline"), budget=value("budget"), objective=value("objective") or "gpus")


def gpu_names(question: ClusterQuestion, spec: Spec) -> list[str]:
    """The GPUs to try: the listed ones, every catalogue entry, or the written one."""
    if question.gpu is None:
        return [spec.gpu.preset.value if spec.gpu and spec.gpu.preset else ""]
    if question.gpu.choices:
        return [gpu_catalog.ALIASES.get(c.value, c.value) for c in question.gpu.choices]
    return list(gpu_catalog.GPUS)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def candidate_nodes(spec: Spec, plan_facts: dict, gpus_per_node: int, low: int, high: int) -> list[int]:
    """Node counts in [low, high] whose GPUs some layout can fill (the module's rule)."""
    fixed = 1
    options: list[list[int]] = []
    for axis in spec.layout.axes:
        if axis.degree.value != HOLE:
            fixed *= axis.degree.value
            continue
        options.append(plan_facts["choices"][axis.name])
    ceiling = high * gpus_per_node
    worlds = {fixed}
    for values in options:
        worlds = {w * v for w in worlds for v in values if w * v <= ceiling}
    return sorted(w // gpus_per_node for w in worlds if w % gpus_per_node == 0 and low <= w // gpus_per_node <= high)


def degree_choices(compilation_facts) -> dict[str, list[int]]:
    model, seq, batch, domain = compilation_facts
    return {
        "dp": _divisors(batch),
        "tp": [t for t in _divisors(model.heads) if t <= domain],
        "pp": _divisors(model.layers),
        "cp": _divisors(seq),
        "ep": _divisors(model.experts) if model.experts else [1],
    }


def _model_facts(spec: Spec, gpu: str, gpus_per_node: int) -> dict | None:
    """The model's heads, layers and experts, the sequence and the batch in sequences, through
    resolution's own code (the model preset and its overrides)."""
    from ..resolve import _Resolver

    resolver = _Resolver(spec)
    seq = resolver.setting(spec.train, "seq") if spec.train else None
    model = resolver.model(spec.model, seq) if spec.model is not None else None
    batch = spec.train.settings.get("global_batch") if spec.train else None
    if model is None or seq is None or batch is None:
        return None
    sequences = batch.value.count if batch.value.unit == "sequences" else batch.value.count // seq
    entry = gpu_catalog.GPUS.get(gpu, {})
    domain = min(entry.get("nvlink_domain", gpus_per_node), gpus_per_node)
    link = spec.layout.link.value if spec.layout and spec.layout.link else None
    if link == "pcie":
        domain = 1
    elif link == "nvl72" or entry.get("nvlink_domain", 0) > entry.get("gpus_per_node", 8):  # a rack-scale domain
        domain = entry.get("nvlink_domain", gpus_per_node)
    choices = degree_choices((model, seq, max(1, sequences), domain))
    pp_options = spec.axis_options.get("pp")
    split = pp_options.settings.get("split") if pp_options else None
    if split is not None:  # a written split fixes the stages (E0316), whatever divides the layers
        choices["pp"] = [len(split.value)]
    return {"choices": choices}


def _gpus_per_node(spec: Spec, gpu: str) -> int:
    if spec.layout is not None and spec.layout.gpus_per_node is not None:
        return spec.layout.gpus_per_node.value
    stated = spec.hardware.settings.get("gpus_per_node") if spec.hardware else None
    if stated is not None:
        return stated.value
    return gpu_catalog.GPUS.get(gpu, {}).get("gpus_per_node", 8)


# ---------------------------------------------------------------------------------------------
# Evaluating one cluster


def fill_cluster(text: str, question: ClusterQuestion, probe: Probe) -> str:
    """The spec's text with the cluster's values where the `?` (and its range or list) stood."""
    edits = []
    if question.size is not None:
        value = probe.nodes if question.size.key == "nodes" else probe.gpus
        edits.append((question.size.span.start, question.size.span.end, str(value)))
    if question.gpu is not None:
        edits.append((question.gpu.span.start, question.gpu.span.end, probe.gpu))
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text


def evaluate(compilation: Compilation, question: ClusterQuestion, probe: Probe,
             ceiling: float = math.inf) -> Point | None:
    """The layout search on the spec filled with one cluster: its best layout and its budget.
    With a `ceiling` (seconds per step), only a layout at most that fast is looked for: None when
    there is none (the cluster cannot be the answer; whether anything slower fits is not asked)."""
    from ..budget import budget
    from . import search

    text = fill_cluster(compilation.source.text, question, probe)
    filled = compile_text(text, compilation.source.path)
    point = Point(probe=probe)
    if filled.plan is None or has_errors(filled.diagnostics):
        point.reason = ", ".join(sorted({d.code for d in filled.diagnostics if d.is_error})) or "no plan"
        return point
    floor = states_floor(filled.plan)
    if floor > filled.plan.cluster.gpu.hbm_bytes:
        from ..human import size

        point.reason = f"E0502: the model states alone need {size(floor)} per GPU"
        return point
    result = search(filled, top=1, ceiling=ceiling, degree_values=layout_degrees(filled.plan))
    point.searched = True
    if result.winner is None:
        if ceiling < math.inf:
            return None
        point.reason = ", ".join(sorted({d.code for d in result.diagnostics})) or "no layout"
        return point
    winner = result.winner
    run = budget(winner.compilation.plan, winner.prediction)
    point.text = winner.text
    point.values = dict(winner.values)
    point.step = winner.step
    point.layout = layout_of(winner)
    point.memory = winner.memory
    if point.at_risk:
        point.filled = filled
    if run is not None:
        point.days, point.gpu_hours, point.cost = run.days, run.gpu_hours, run.cost
        point.price_source, point.tokens = run.price_source, run.tokens
    return point


def layout_of(candidate) -> str:
    """A layout search candidate's axes and degrees, as the cluster table writes them."""
    return " x ".join(f"{a.name} {a.degree}" for a in candidate.compilation.plan.layout.axes)


def name_clear_runner_ups(compilation: Compilation, question: ClusterQuestion, points: list[Point]) -> int:
    """For each listed cluster whose winner is at risk in memory (W0410), the fastest runner-up
    clear of the band, found as `parc search` on the filled spec finds it: its default listing
    (`DEFAULT_TOP` layouts, no ceiling: a runner-up is slower than the winner by definition, so a
    ceiling set for the answer would hide it) and the layout search's own rule
    (`ranking.memory_clear_runner_up`). Only at-risk winners pay this second search; the answer
    and the frontier do not depend on it. Returns how many searches ran."""
    from . import DEFAULT_TOP, search
    from .ranking import gap, memory_clear_runner_up

    searches = 0
    for point in points:
        if not point.at_risk:
            continue
        filled = point.filled if point.filled is not None else compile_text(
            fill_cluster(compilation.source.text, question, point.probe), compilation.source.path)
        point.filled = None  # listed: the compilation is no longer needed
        listing = search(filled, top=DEFAULT_TOP, degree_values=layout_degrees(filled.plan))
        searches += 1
        point.listed = len(listing.candidates)
        clear = memory_clear_runner_up(listing.candidates)
        if clear is not None:
            winner = listing.candidates[0]
            point.clear_runner_up = RunnerUp(rank=clear.rank, layout=layout_of(clear), values=dict(clear.values),
                                             step=clear.step, slower=gap(winner, clear),
                                             margin_bytes=clear.memory.margin_bytes)
    return searches


def layout_degrees(plan) -> dict[str, frozenset[int]]:
    """Per layout axis, a set holding every degree a valid layout of this plan can take, read
    from the degree rules that concern one axis alone (each necessary): tp divides the heads
    (E0310), cp the sequence (E0330), pp the layers (E0315; with a written split, its length
    is pp x v, E0316), dp the global batch (E0321), and ep the experts (E0340; 1 on a dense
    model, E0342). The layout search enumerates only these (`Engine`'s `degree_values`): a
    cluster of many divisors is otherwise walked degree tuple by degree tuple before the rules
    reject nearly all (Llama 3 405B on 8,064 nodes of 8 GPUs: 75,075 ordered factorisations over
    five axes, 112 in these sets, 72 valid). Nothing here depends on the node count."""
    model, train, split = plan.model, plan.training, plan.layout.pp.split
    sizes = {"tp": model.heads, "cp": train.seq_len, "pp": len(split) if split else model.layers,
             "dp": train.global_batch}
    # an axis whose size is unknown is left unfiltered (the rules decide, as without the sets)
    out = {axis: frozenset(_divisors(n)) for axis, n in sizes.items() if isinstance(n, int) and n > 0}
    out["ep"] = frozenset(_divisors(model.experts)) if model.is_moe and model.experts else frozenset((1,))
    return out


def state_bytes(plan) -> int:
    """The parameters (4 bytes each: fp32 in parc's runtime, bf16 plus an fp32 master in
    Megatron's) and their optimizer states (`memory.states`), all GPUs together: every layout
    holds at least these bytes in all, whatever the cluster."""
    from ..memory.states import FP32, optimizer_bytes
    from ..targets import memory_runtime

    return plan.model.parameters * (FP32 + optimizer_bytes(plan.training.optimizer, memory_runtime(plan.target)))


def states_floor(plan) -> int:
    """A floor on any layout's peak memory per GPU: `state_bytes` spread evenly over every GPU.
    Its fullest GPU holds at least their average: a cluster below it needs no search."""
    return state_bytes(plan) // plan.cluster.world_size


# ---------------------------------------------------------------------------------------------
# Floors: what no layout on one GPU beats, at any node count

SLACK = 1e-9
"""Relative slack on every limit compared with a floor or passed as a ceiling, so that rounding
in the floors' and the limits' arithmetic can never rule out a cluster that ties."""


@dataclass(frozen=True)
class Floors:
    """Bounds every layout on one GPU type obeys. The numbers here do not depend on the node
    count (the model, the batch, the run's steps, the GPU's peak and price), so they are read
    once per GPU from one compiled cluster; `compute` answers per GPU count. A cluster whose
    floor already misses a constraint (or cannot beat the best answer so far) is ruled out
    without a layout search."""

    state_bytes: int
    """`state_bytes`: the model states of any layout, all GPUs together."""
    hbm_bytes: int
    gpu_seconds: float
    """GPU-seconds of one step at the fastest any kernel runs: the model's FLOPs per step
    (`Prediction`'s 6N + attention, `flops.model_flops_per_token`) over the peak MFU divides by,
    times `kernel_ceiling`. On g GPUs no layout steps faster than gpu_seconds / g (see
    `kernel_ceiling`): a prediction's step is at least this floor."""
    steps: int
    """Optimizer steps of the run (`budget.steps_for`): the batch is fixed, so they are too."""
    price: float | None
    compute: ComputeFloor | None = None
    """The layers' kernel time at the best degrees a GPU count allows (dense models)."""

    def fits(self, gpus: int) -> bool:
        """`states_floor`'s test, with the same integer arithmetic."""
        return self.state_bytes // gpus <= self.hbm_bytes

    def step(self, gpus: int) -> float:
        flops = self.gpu_seconds / gpus
        return flops if self.compute is None else max(flops, self.compute.at(gpus))

    def rate(self, gpus: int) -> float | None:
        """Dollars the run costs per second of step time (cost = rate x step), None unpriced."""
        return None if self.price is None else self.price * gpus * self.steps / SECONDS_PER_HOUR


class ComputeFloor:
    """A floor on the step at a GPU count from the time model's own kernel times: the busiest
    pipeline rank's layers, computed, for every micro-batch.

    A step is at least m x (the slowest rank's computation, recomputation and exposed
    communication per micro-batch) (`timing.step_time`: the bubble, the data-parallel tail, the
    optimizer and the links' floor only add), so at least m x the computation and exposed tp
    communication of the rank with the most layers, which holds at least L / pp of the L
    identical dense layers. With m x micro = B / dp (the global batch's sequences per replica,
    E0321), that is (B / dp) x (L / pp) x layer(tp, sp, cp, micro) / micro, where layer is
    `timing.layer_work`'s forward, input backward and weight backward as the runtime's kernels
    run them (`slowed`) plus the exposed time of the layer's tp collectives (`timing.exposed`,
    with the runtime's tp overlap) on a tp group inside its NVLink domain, where E0304 puts it
    (a group across nodes only waits longer).
    No layout at the GPU count does better than the least of this over every assignment of the
    degrees that multiplies to it (the candidate rule's choices, or the written degrees), every
    micro-batch the space allows that divides the batch and fills the pipeline (E0321, E0322),
    and sequence parallelism on and off unless written. Unlike FLOPs at the kernel ceiling it
    sees what the degrees force: at 10,000 nodes 2,048 sequences leave each GPU a few hundred
    tokens, in small GEMMs far from their ceiling. Dense models only (MoE: routing imbalance and
    expert GEMMs vary by rank; `floors_of` leaves them to the FLOPs floor)."""

    def __init__(self, plan, degrees: dict[str, list[int]]):
        from ..memory.inputs import shape_of
        from ..targets import software_of
        from ..timing import hardware_of
        from .space import MICRO_BATCHES, SEQUENCE_PARALLEL

        train, lay = plan.training, plan.layout
        self.shape, self.hw, self.sw = shape_of(plan), hardware_of(plan), software_of(plan)
        self.degrees = degrees
        self.layers = self.shape.layers
        self.batch = train.global_batch
        self.seq, self.precision, self.flavour = train.seq_len, train.precision, lay.cp.flavour
        self.micro = MICRO_BATCHES if train.micro_batch is None else (train.micro_batch,)
        self.sp = SEQUENCE_PARALLEL if lay.tp.sequence_parallel is None else (lay.tp.sequence_parallel,)
        self.per_sequence: dict[tuple[int, int, int], float] = {}
        self.memo: dict[int, float] = {}

    def layer(self, tp: int, cp: int, micro: int) -> float:
        """Seconds of one dense layer's kernels and exposed tp communication per sequence: the
        least over sequence parallelism."""
        key = (tp, cp, micro)
        if key not in self.per_sequence:
            from ..calibration import DEFAULT
            from ..timing import (
                Group,
                LayerCase,
                exposed,
                layer_work,
                link,
                slowed,
                tp_calls,
            )

            alone = link(Group(), self.hw, DEFAULT)
            tp_link = link(Group(size=tp, local=tp), self.hw, DEFAULT)  # inside its NVLink domain (E0304)
            best = math.inf
            for sp in self.sp:
                sp_on = sp and tp > 1
                # the layer as the target's runtime runs it (its cp exchange and fp8 scaling too:
                # a floor built on another runtime's kernels need not stay under this one's step)
                case = LayerCase.under(self.sw, moe=False, tp=tp, sp=sp_on, cp=cp, flavour=self.flavour,
                                       seq=self.seq, micro=micro, ep=1, precision=self.precision)
                w = slowed(layer_work(self.shape, case, self.hw, DEFAULT), self.sw, DEFAULT)
                x = exposed(w, tp_link, alone, alone, False, self.sw.tp_overlap, DEFAULT,
                            tp_calls("dense", sp_on, tp, w))
                best = min(best, (w.forward + w.backward_input + w.backward_weight + x.tp_f + x.tp_b) / micro)
            self.per_sequence[key] = best
        return self.per_sequence[key]

    def at(self, gpus: int) -> float:
        if gpus not in self.memo:
            self.memo[gpus] = self._least(gpus)
        return self.memo[gpus]

    def _least(self, gpus: int) -> float:
        from ..checks.predicates import microbatches_fill_pipeline, microbatches_per_step

        d = self.degrees
        best = math.inf
        # the degrees that divide the GPU count, outermost first: the same assignments as the
        # plain triple loop, without walking the cp and pp choices under a tp that cannot divide
        for tp in d["tp"]:
            if gpus % tp:
                continue
            for cp in d["cp"]:
                if gpus % (tp * cp):
                    continue
                for pp in d["pp"]:
                    rest = gpus // (tp * cp * pp) if gpus % (tp * cp * pp) == 0 else 0
                    if rest not in d["dp"] or self.layers % pp:
                        continue
                    dp = rest
                    for micro in self.micro:
                        m = microbatches_per_step(self.batch, dp, micro)
                        if m is None or not microbatches_fill_pipeline(m, pp):
                            continue
                        best = min(best, self.batch / dp * self.layers / pp * self.layer(tp, cp, micro))
        return 0.0 if best == math.inf else best


def kernel_ceiling(generation: str) -> float:
    """The largest fraction of the matrix peak the time model lets any FLOP run at: a GEMM at most
    at its generation's fitted ceiling (`Constants.gemm_efficiency`, times factors <= 1:
    intensity, waves), a fused attention kernel at most at its curve's plateau (`kernels`, times
    factors <= 1) times the largest measured attention ceiling (`kernels.ATTENTION_MEASURED`, or 1),
    what a training run sustains of the benchmarks (`Constants.attention_speed`) and the largest
    speedup an FP8 kernel gets over the BF16 one (`kernels.ATTENTION_FP8_MEASURED`, or the
    unmeasured parts' 2 x `FP8_ATTENTION_SHARE`), at the BF16 peak. Every FLOP the MFU convention
    counts is executed by some rank (the backward at least twice the forward, recomputation only
    adds), the busiest rank does at least the average and a step is at least its rank's
    computation, so MFU <= this ceiling; tests/test_cluster_search.py holds it on the random
    layouts of tests/test_bounds.py and the shipped specs."""
    from ..calibration import DEFAULT
    from ..kernels import (
        ATTENTION_FP8_MEASURED,
        ATTENTION_MEASURED,
        FP8_ATTENTION_SHARE,
        attention_curve,
    )

    curves = [attention_curve(kernel, generation) for kernel in ("sdpa", "te")]
    plateau = max(x for c in curves for x in (c.forward, c.backward))
    ceiling = max([1.0] + [x for by_dim in ATTENTION_MEASURED.values() for pair in by_dim.values() for x in pair])
    speedup = max([2 * FP8_ATTENTION_SHARE] + [x for layers in ATTENTION_FP8_MEASURED.values()
                                               for kinds in layers.values() for masks in kinds.values()
                                               for pair in masks.values() for x in pair if x is not None])
    attention = plateau * ceiling * DEFAULT.attention_speed * speedup
    return max(DEFAULT.gemm_efficiency(generation), attention)


def floors_of(compilation: Compilation, question: ClusterQuestion, probes: list[Probe]) -> Floors | None:
    """The floors of one GPU, read from the first of its clusters whose spec resolves (the front
    end only: no checks, no search); None when none does (its clusters are then searched
    without floors)."""
    from ..budget import steps_for
    from ..flops import model_flops_per_token
    from ..memory.inputs import shape_of
    from ..timing import hardware_of, matmul_peak

    for probe in probes[:4]:
        filled = compile_text(fill_cluster(compilation.source.text, question, probe), compilation.source.path,
                              checks=False)
        plan = filled.plan
        if plan is None or has_errors(filled.diagnostics) or plan.model is None:
            continue
        stated = steps_for(plan)
        if stated is None:
            return None
        train = plan.training
        hw = hardware_of(plan)
        fastest = matmul_peak(hw, train.precision) * kernel_ceiling(hw.generation)
        return Floors(state_bytes=state_bytes(plan), hbm_bytes=plan.cluster.gpu.hbm_bytes,
                      gpu_seconds=model_flops_per_token(shape_of(plan), train.seq_len) * train.tokens_per_step / fastest,
                      steps=stated[1], price=plan.cluster.price,
                      compute=compute_floor(compilation.spec, plan, probe))
    return None


def compute_floor(spec: Spec, plan, probe: Probe) -> ComputeFloor | None:
    """`ComputeFloor` over the degrees some layout can take (the candidate rule's choices, the
    written degrees as they are); None for a model with experts, a written pipeline split, a
    batch in whole sequences unknown, or an ep axis."""
    from ..memory.inputs import shape_of

    shape = shape_of(plan)
    if shape.experts or any(shape.moe) or plan.layout.pp.split is not None or not plan.training.global_batch:
        return None
    facts = _model_facts(spec, probe.gpu, probe.gpus_per_node)
    if facts is None:
        return None
    degrees: dict[str, list[int]] = {}
    for axis in spec.layout.axes:
        degrees[axis.name] = facts["choices"][axis.name] if axis.degree.value == HOLE else [axis.degree.value]
    if degrees.get("ep", [1]) != [1] or spec.ep_fold is not None:
        return None
    for name in ("tp", "cp", "pp", "dp"):
        degrees.setdefault(name, [1])
    return ComputeFloor(plan, degrees)


def constraint_limit(probe: Probe, floors: Floors, c: Constraints) -> float | None:
    """The slowest step (seconds) at which this cluster meets the deadline and the budget; None
    when it can meet neither whatever its step (a budget on a GPU without a price)."""
    limit = math.inf
    if c.deadline is not None:
        limit = min(limit, c.deadline / floors.steps)
    if c.budget is not None:
        rate = floors.rate(probe.gpus)
        if rate is None:
            return None
        limit = min(limit, c.budget / rate)
    return limit


def answer_limit(probe: Probe, floors: Floors, c: Constraints, best: Point | None) -> float | None:
    """The slowest step at which this cluster could still be the answer: the constraints' limit
    and, under the objective, the best answer found so far's (`_objective_key`: a cluster with
    more GPUs than the best never wins the fewest GPUs; a slower run never wins on time; a dearer
    one never on cost). None when it cannot be the answer at any step."""
    limit = constraint_limit(probe, floors, c)
    if limit is None:
        return None
    cost_objective = c.objective in ("cost", "tokens-per-dollar")
    if cost_objective and floors.price is None:
        return None  # an unpriced cluster is never chosen by cost
    if best is None:
        return limit
    if c.objective == "time":
        limit = min(limit, best.days * SECONDS_PER_DAY / floors.steps)
    elif cost_objective:
        limit = min(limit, best.cost / floors.rate(probe.gpus))
    elif probe.gpus > best.probe.gpus:
        return None
    return limit


def within(probe: Probe, floors: Floors | None, limit: float | None) -> bool:
    """Whether the cluster's floors allow a step within `limit` (memory first): if not, no layout
    search can find one."""
    if floors is None:
        return True
    if limit is None or not floors.fits(probe.gpus):
        return False
    return floors.step(probe.gpus) <= limit * (1 + SLACK)


# ---------------------------------------------------------------------------------------------
# The outer search


class _Evaluator:
    """Evaluates each cluster once (memoised): in full, or under a ceiling. A search under a
    ceiling that finds nothing is remembered with its ceiling, so a later ask at or under it is
    answered without a search, and one above it searches again."""

    def __init__(self, compilation: Compilation, question: ClusterQuestion):
        self.compilation, self.question = compilation, question
        self.seen: dict[tuple[str, int], Point] = {}
        self.missed: dict[tuple[str, int], float] = {}
        """Clusters with no layout at most this fast (the ceiling they were searched under)."""
        self.searches = 0
        """Layout searches run (in full or under a ceiling)."""

    def __call__(self, probe: Probe, ceiling: float = math.inf) -> Point | None:
        key = (probe.gpu, probe.nodes)
        if key in self.seen:
            return self.seen[key]
        if ceiling <= self.missed.get(key, -1.0):
            return None
        point = evaluate(self.compilation, self.question, probe, ceiling)
        self.searches += point is None or point.searched
        if point is None:
            self.missed[key] = ceiling
        else:
            self.seen[key] = point
            self.missed.pop(key, None)
        return point


def _meets_deadline(point: Point, c: Constraints) -> bool:
    return point.ok and (c.deadline is None or point.days * 86_400 <= c.deadline * (1 + 1e-12))


def _within_budget(point: Point, c: Constraints) -> bool:
    return point.ok and (c.budget is None or (point.cost is not None and point.cost <= c.budget * (1 + 1e-12)))


def _feasible(point: Point, c: Constraints) -> bool:
    """Meets the constraints and can be ranked by the objective (cost objectives need a price)."""
    if not (_meets_deadline(point, c) and _within_budget(point, c)):
        return False
    return point.cost is not None or c.objective not in ("cost", "tokens-per-dollar")


def ladder(nodes: list[int]) -> list[int]:
    """The smallest candidate of each power-of-two band of node counts, and the largest."""
    picks = []
    band = -1
    for n in nodes:
        if n.bit_length() != band:
            band = n.bit_length()
            picks.append(n)
    if nodes and nodes[-1] not in picks:
        picks.append(nodes[-1])
    return picks


@dataclass
class _Space:
    """Every candidate cluster of a question, with its GPU's floors."""

    probes: list[Probe]
    rungs: list[Probe]
    floors: dict[str, Floors | None]
    gpu_rank: dict[str, int]


def draw_ladder(space: _Space, evaluate_once: _Evaluator, c: Constraints) -> None:
    """The frontier's skeleton: every rung of the ladder (one cluster per doubling band of node
    counts, and the largest) whose floors can meet the constraints, searched in full, so that the
    time-cost frontier spans the range. A rung whose floors miss the deadline or the budget is
    left out: it is slower or dearer than the question allows, whatever its layout."""
    for probe in space.rungs:
        floors = space.floors[probe.gpu]
        if floors is not None and floors.fits(probe.gpus) and not within(probe, floors,
                                                                          constraint_limit(probe, floors, c)):
            continue
        evaluate_once(probe)


def find_answer(space: _Space, evaluate_once: _Evaluator, c: Constraints, result: ClusterResult) -> Point | None:
    """The best feasible cluster under the objective, equal to an exhaustive scan of every
    candidate (tests/test_cluster_search.py holds it so). Every candidate is visited in the order
    its objective's floor ranks it, and ruled out without a search where its floors cannot meet
    the constraints or beat the best found so far; the rest are searched under that limit as a
    ceiling (the engine's own bounds then prune whatever is slower). Nothing is assumed about how
    the best time varies with the node count: it is not monotone (divisibility: 1,792 nodes can
    beat 2,048, docs/search.md)."""
    def key(p: Point) -> tuple:
        return _objective_key(p, c.objective, result)

    best = None
    for p in evaluate_once.seen.values():
        if _feasible(p, c) and (best is None or key(p) < key(best)):
            best = p
    for probe in sorted(space.probes, key=lambda p: _visit_key(p, space, c.objective)):
        floors = space.floors[probe.gpu]
        if floors is None:  # no floors: only the fewest-GPUs objective's own rule applies
            if c.objective == "gpus" and best is not None and probe.gpus > best.probe.gpus:
                continue
            point = evaluate_once(probe)
        else:
            limit = answer_limit(probe, floors, c, best)
            if not within(probe, floors, limit):
                continue
            point = evaluate_once(probe, limit * (1 + SLACK))
        if point is not None and _feasible(point, c) and (best is None or key(point) < key(best)):
            best = point
    return best


def _visit_key(probe: Probe, space: _Space, objective: str) -> tuple:
    """Candidates whose floor is best under the objective first (the fewest GPUs; the fastest
    floor; the cheapest), so that the best answer found early rules out the most."""
    tail = (probe.gpus, space.gpu_rank[probe.gpu], probe.nodes)
    floors = space.floors[probe.gpu]
    if floors is None or objective == "gpus":
        return (0.0, *tail)
    if objective == "time":
        return (floors.step(probe.gpus) * floors.steps, *tail)
    rate = floors.rate(probe.gpus)
    return ((floors.step(probe.gpus) * rate) if rate is not None else math.inf, *tail)


def search_cluster(compilation: Compilation) -> ClusterResult:
    """The cluster that best answers the spec's question, and the time-cost frontier."""
    spec = compilation.spec
    question = spec.cluster
    constraints = constraints_of(spec)
    result = ClusterResult(question=question, constraints=constraints)
    missing = _missing_inputs(spec, constraints)
    if missing is not None:
        result.diagnostics.append(missing)
        return result
    evaluate_once = _Evaluator(compilation, question)
    space = _Space(probes=[], rungs=[], floors={}, gpu_rank={})
    for gpu in gpu_names(question, spec):
        per_node = _gpus_per_node(spec, gpu)
        nodes = _nodes_for(spec, question, gpu, per_node)
        result.candidates[gpu] = len(nodes)
        space.gpu_rank[gpu] = len(space.gpu_rank)
        probes = [Probe(gpu=gpu, nodes=n, gpus_per_node=per_node) for n in nodes]
        space.floors[gpu] = floors_of(compilation, question, probes) if probes else None
        space.probes += probes
        rungs = set(ladder(nodes))
        space.rungs += [p for p in probes if p.nodes in rungs]
    draw_ladder(space, evaluate_once, constraints)
    result.chosen = find_answer(space, evaluate_once, constraints, result)
    if result.chosen is None:
        # what the diagnostic states, exactly: the fastest run, and the cheapest within the deadline
        find_answer(space, evaluate_once, Constraints(deadline=None, budget=None, objective="time"), result)
        if constraints.budget is not None:
            find_answer(space, evaluate_once, Constraints(deadline=constraints.deadline, budget=None,
                                                          objective="cost"), result)
    result.points = sorted(evaluate_once.seen.values(), key=lambda p: (gpu_order(result, p), p.probe.nodes))
    result.searches = evaluate_once.searches
    result.runner_up_searches = name_clear_runner_ups(compilation, question, result.points)
    result.ruled_out = sum(result.candidates.values()) - len(result.points)
    _mark_frontier(result.points)
    if result.chosen is None:
        result.diagnostics.append(_infeasible(spec, result))
    return result


def gpu_order(result: ClusterResult, point: Point) -> int:
    return list(result.candidates).index(point.probe.gpu)


def _objective_key(p: Point, objective: str, result: ClusterResult) -> tuple:
    tail = (gpu_order(result, p), p.probe.nodes)
    if objective == "time":
        return (p.days, p.probe.gpus, *tail)
    if objective in ("cost", "tokens-per-dollar"):
        # the tokens are fixed by the spec, so the most tokens per dollar is the cheapest run
        return (p.cost, p.days, *tail)
    return (p.probe.gpus, p.cost if p.cost is not None else math.inf, p.days, *tail)


def _mark_frontier(points: list[Point]) -> None:
    """Pareto frontier of time to train against cost (points without a price are left out)."""
    priced = [p for p in points if p.ok and p.cost is not None]
    for p in priced:
        p.frontier = not any((q.days <= p.days and q.cost <= p.cost) and (q.days < p.days or q.cost < p.cost)
                             for q in priced)


def _nodes_for(spec: Spec, question: ClusterQuestion, gpu: str, per_node: int) -> list[int]:
    written = spec.hardware.settings.get("nodes") if spec.hardware else None
    size = question.size
    if size is None:  # only the GPU is asked: the written size
        gpus = spec.hardware.settings.get("gpus") if spec.hardware else None
        if written is not None:
            return [written.value]
        if gpus is not None:
            return [gpus.value // per_node] if gpus.value % per_node == 0 else []
        derived = math.prod(a.degree.value for a in spec.layout.axes)
        return [derived // per_node] if derived % per_node == 0 else []
    if size.key == "nodes":
        low, high = size.low, size.high or MAX_NODES_DEFAULT
    else:
        low, high = -(-size.low // per_node), (size.high or MAX_NODES_DEFAULT * per_node) // per_node
    facts = _model_facts(spec, gpu, per_node)
    if facts is None:
        return []
    return candidate_nodes(spec, facts, per_node, low, high)


# ---------------------------------------------------------------------------------------------
# Diagnostics


def _missing_inputs(spec: Spec, c: Constraints) -> Diagnostic | None:
    """A cluster question is answered in time to train: it needs the run's length."""
    train = spec.train.settings if spec.train else {}
    if "tokens" in train or "steps" in train:
        return None
    hole = spec.cluster.size or spec.cluster.gpu
    return error("E0504", "a cluster question needs the run's length", hole.span,
                 label="sized for how long a run?",
                 help="state it in train: `tokens 15T` (or `steps 250000`), so search can compare time to train")


def _infeasible(spec: Spec, result: ClusterResult) -> Diagnostic:
    c = result.constraints
    ok = [p for p in result.points if p.ok]
    train = spec.train.settings
    hole = result.question.size or result.question.gpu
    if not ok:
        reasons = sorted({p.reason for p in result.points if p.reason})
        return error("E0505", "no cluster in the range has a layout that fits", hole.span,
                     label="every cluster tried fails", notes=tuple(f"{r}" for r in reasons[:4]),
                     help="widen the range (`nodes ? in 1 to 4096`) or open more of the layout (`?`)")
    from ..budget import days_text, dollars

    fastest = min(ok, key=lambda p: (p.days, p.probe.gpus))
    where = f"{fastest.probe.nodes:,} nodes of {fastest.probe.gpu}"
    if c.deadline is not None and not any(_meets_deadline(p, c) for p in ok):
        span = train["deadline"].span
        return error("E0505", f"no cluster finishes within {days_text(c.deadline / 86_400)}", span,
                     label=f"the fastest reachable is {days_text(fastest.days)}",
                     labels=(Label(span=hole.span, message=f"the fastest: {where}"),),
                     help=f"allow at least {days_text(fastest.days)} (`deadline {math.ceil(fastest.days)} days`), "
                     "widen the cluster range, or train on fewer tokens")
    priced = [p for p in ok if p.cost is not None and _meets_deadline(p, c)]
    if c.budget is not None and priced:
        cheapest = min(priced, key=lambda p: p.cost)
        return error("E0505", f"no cluster that meets the constraints costs at most {dollars(c.budget)}",
                     train["budget"].span, label=f"the cheapest is {dollars(cheapest.cost)}",
                     labels=(Label(span=hole.span, message=f"the cheapest: {cheapest.probe.nodes:,} nodes of "
                                   f"{cheapest.probe.gpu}"),),
                     help=f"raise the budget to {dollars(cheapest.cost)} or more"
                     + (", or relax the deadline" if c.deadline is not None else ""))
    return error("E0505", "no cluster has a price to compare costs by", hole.span,
                 label="cost is unknown",
                 help="state the rate you pay in hardware: `price 2.50 $/gpu-hour`")


