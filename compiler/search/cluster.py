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

and whole nodes inside the asked range. The outer search first evaluates a ladder: the smallest
candidate of every power-of-two band of node counts (1, 2-3, 4-7, ...) and the largest. The
ladder shows in which band each boundary lies: where layouts start to fit in memory (and where
they stop: a batch too small to share), where the deadline is first met, where the budget is last
kept. Inside that one band the best time (and cost) is taken as monotone in the node count, and
the boundary is found by bisection: O(log n) layout searches per GPU instead of one per node count.
Across bands nothing is assumed (the ladder evaluates each), so a node count that forces an
awkward layout (5 nodes: pp 10) cannot mislead the search beyond its own band. The frontier of
time against cost is drawn over every cluster evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def tokens_per_dollar(self) -> float | None:
        return None if not self.cost else self.tokens / self.cost


@dataclass
class ClusterResult:
    question: ClusterQuestion
    constraints: Constraints
    candidates: dict[str, int] = field(default_factory=dict)
    """GPU -> how many node counts the candidate rule leaves."""
    points: list[Point] = field(default_factory=list)
    chosen: Point | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

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
    elif link == "nvl72" or gpu == "gb200-nvl72":
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


def evaluate(compilation: Compilation, question: ClusterQuestion, probe: Probe) -> Point:
    """The layout search on the spec filled with one cluster: its best layout and its budget."""
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
    result = search(filled, top=1)
    if result.winner is None:
        point.reason = ", ".join(sorted({d.code for d in result.diagnostics})) or "no layout"
        return point
    winner = result.winner
    run = budget(winner.compilation.plan, winner.prediction)
    point.text = winner.text
    point.values = dict(winner.values)
    point.step = winner.step
    point.layout = " x ".join(f"{a.name} {a.degree}" for a in winner.compilation.plan.layout.axes)
    if run is not None:
        point.days, point.gpu_hours, point.cost = run.days, run.gpu_hours, run.cost
        point.price_source, point.tokens = run.price_source, run.tokens
    return point


def states_floor(plan) -> int:
    """A floor on any layout's peak memory per GPU: the parameters (4 bytes each: fp32 in parc's
    runtime, bf16 plus an fp32 master in Megatron's) and their optimizer states
    (`memory.states`), spread evenly over every GPU. Every layout holds at least these bytes in
    all, so its fullest GPU holds at least their average: a cluster below it needs no search."""
    from ..memory.states import FP32, optimizer_bytes
    from ..targets import memory_runtime

    per_parameter = FP32 + optimizer_bytes(plan.training.optimizer, memory_runtime(plan.target))
    return plan.model.parameters * per_parameter // plan.cluster.world_size


# ---------------------------------------------------------------------------------------------
# The outer search


class _Evaluator:
    """Evaluates each cluster once, in the order asked (memoised)."""

    def __init__(self, compilation: Compilation, question: ClusterQuestion):
        self.compilation, self.question = compilation, question
        self.seen: dict[tuple[str, int], Point] = {}

    def __call__(self, probe: Probe) -> Point:
        key = (probe.gpu, probe.nodes)
        if key not in self.seen:
            self.seen[key] = evaluate(self.compilation, self.question, probe)
        return self.seen[key]


def _meets_deadline(point: Point, c: Constraints) -> bool:
    return point.ok and (c.deadline is None or point.days * 86_400 <= c.deadline * (1 + 1e-12))


def _within_budget(point: Point, c: Constraints) -> bool:
    return point.ok and (c.budget is None or (point.cost is not None and point.cost <= c.budget * (1 + 1e-12)))


def _first_true(nodes: list[int], test) -> int:
    """The index of the first node count for which `test` holds, assuming it holds from some
    index on (monotone); len(nodes) when it never does. Each call of `test` is one search."""
    lo, hi = 0, len(nodes)
    while lo < hi:
        mid = (lo + hi) // 2
        if test(nodes[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


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


def probe_bands(nodes: list[int], point_at, c: Constraints) -> None:
    """Evaluate the ladder, then bisect inside the doubling band where each boundary lies: where
    layouts start to fit (and stop: a batch too small for the cluster), where the deadline is
    first met, where the budget is last kept. Monotonicity is assumed only inside one band."""
    rungs = ladder(nodes)
    for n in rungs:
        point_at(n)
    ok = [i for i, n in enumerate(rungs) if point_at(n).ok]
    if not ok:
        return

    def between(rung: int) -> list[int]:
        """The candidates after rung-1 up to and including rung (one band)."""
        lo = nodes.index(rungs[rung - 1]) + 1 if rung > 0 else 0
        return nodes[lo:nodes.index(rungs[rung]) + 1]

    def after(rung: int) -> list[int]:
        """The candidates from rung up to the next rung (exclusive)."""
        lo = nodes.index(rungs[rung])
        hi = nodes.index(rungs[rung + 1]) if rung + 1 < len(rungs) else len(nodes)
        return nodes[lo:hi]

    first, last = ok[0], ok[-1]
    band = between(first)
    _first_true(band, lambda n: point_at(n).ok)
    band = after(last)
    _first_true(band, lambda n: not point_at(n).ok)
    if c.deadline is not None:
        meeting = [i for i in ok if _meets_deadline(point_at(rungs[i]), c)]
        if meeting:
            band = between(meeting[0])
            _first_true(band, lambda n: _meets_deadline(point_at(n), c))
    if c.budget is not None:
        within = [i for i in ok if _within_budget(point_at(rungs[i]), c)]
        if within:
            band = after(within[-1])
            over = _first_true(band, lambda n: point_at(n).ok and not _within_budget(point_at(n), c))
            if over > 0:
                point_at(band[over - 1])


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
    for gpu in gpu_names(question, spec):
        per_node = _gpus_per_node(spec, gpu)
        nodes = _nodes_for(spec, question, gpu, per_node)
        result.candidates[gpu] = len(nodes)
        if not nodes:
            continue

        def point_at(n: int, gpu=gpu, per_node=per_node) -> Point:
            return evaluate_once(Probe(gpu=gpu, nodes=n, gpus_per_node=per_node))

        probe_bands(nodes, point_at, constraints)
    result.points = sorted(evaluate_once.seen.values(), key=lambda p: (gpu_order(result, p), p.probe.nodes))
    _mark_frontier(result.points)
    feasible = [p for p in result.points if _meets_deadline(p, constraints) and _within_budget(p, constraints)]
    if constraints.objective in ("cost", "tokens-per-dollar"):
        feasible = [p for p in feasible if p.cost is not None]
    if feasible:
        result.chosen = min(feasible, key=lambda p: _objective_key(p, constraints.objective, result))
    else:
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


