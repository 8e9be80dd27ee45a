"""A pipeline schedule as a timeline: when each forward, backward and weight-gradient block runs.

The order in which one pp rank runs its work comes from `memory/schedules.py`, which writes down
every schedule (gpipe, 1f1b, interleaved-1f1b, interleaved-zb, zbv, dualpipe-v) as torch 2.13's
`torch.distributed.pipelining` builds it and is tested against torch's own action lists. This
module adds what a picture or a what-if needs on top of an order:

- which micro-batch each action is for: a rank takes the micro-batches of a chunk in order, so
  the n-th forward (or backward) of a chunk is micro-batch n, and a weight backward W is for the
  oldest micro-batch whose input backward I ran without its W yet;
- the data flow between ranks: the forward of chunk c needs chunk c - 1's forward of the same
  micro-batch, the backward of chunk c needs chunk c + 1's backward and its own forward, and a
  weight backward W needs its input backward I;
- a list-scheduling simulation: every rank runs its actions in its order, each as soon as the
  rank is free and the inputs have arrived. The idle gaps are the bubble.

An overlapped forward-backward pair of DualPipe-V is run one action after the other here (the
memory model counts it the same way), so the drawing shows its order, not its overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .memory import schedules as orders
from .stages import V_SCHEDULES, chunk_rank

FORWARD, BACKWARD, INPUT, WEIGHT = "F", "B", "I", "W"
"""F forward; B full backward (input and weight gradients); I input-gradient backward; W weight
backward (the zero-bubble split of B)."""


class ScheduleError(ValueError):
    """The orders cannot run: a rank waits for work that never comes (never for parc's schedules)."""


@dataclass(frozen=True, slots=True)
class Action:
    kind: str
    chunk: int
    """Model-order chunk index, 0 .. pp x v - 1."""
    micro: int
    """Micro-batch, 0 .. m - 1."""


@dataclass(frozen=True, slots=True)
class Block:
    """One action placed in time on one pp rank."""

    rank: int
    action: Action
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Durations:
    """Seconds (or any unit) of one chunk's work for one micro-batch, per pp rank.

    `forward[r]`, `backward_input[r]`, `backward_weight[r]`: rank r's per-chunk times (a full
    backward B takes backward_input + backward_weight); `p2p`: the time an activation or its
    gradient takes from one rank to the next."""

    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    p2p: float = 0.0

    @classmethod
    def uniform(cls, pp: int, f: float = 1.0, b: float = 1.0, w: float = 1.0, p2p: float = 0.0) -> Durations:
        return cls((f,) * pp, (b,) * pp, (w,) * pp, p2p)

    def of(self, rank: int, kind: str) -> float:
        if kind == FORWARD:
            return self.forward[rank]
        if kind == INPUT:
            return self.backward_input[rank]
        if kind == WEIGHT:
            return self.backward_weight[rank]
        return self.backward_input[rank] + self.backward_weight[rank]


@dataclass(frozen=True)
class Timeline:
    schedule: str
    pp: int
    virtual_stages: int
    microbatches: int
    blocks: tuple[Block, ...]
    makespan: float

    def of_rank(self, rank: int) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.rank == rank)

    def busy(self, rank: int) -> float:
        return sum(b.end - b.start for b in self.blocks if b.rank == rank)

    def idle(self, rank: int) -> float:
        """The rank's bubble: time in [0, makespan] it does no work."""
        return self.makespan - self.busy(rank)

    @property
    def bubble_fraction(self) -> float:
        """Idle share of the whole pipeline's time (all ranks)."""
        total = self.makespan * self.pp
        return sum(self.idle(r) for r in range(self.pp)) / total if total else 0.0


def rank_chunks(pp: int, v: int, schedule: str, rank: int) -> list[int]:
    """Model-order chunks of a rank, in local order (the order `memory/schedules.py` numbers them)."""
    return sorted(c for c in range(pp * v) if chunk_rank(c, pp, schedule) == rank)


def rank_orders(schedule: str, pp: int, v: int, m: int) -> list[list[Action]]:
    """Every rank's actions in the order it runs them, with chunks and micro-batches named."""
    result = []
    for rank in range(pp):
        mine = rank_chunks(pp, v, schedule, rank)
        seen: dict[tuple[str, int], int] = {}
        waiting: dict[int, list[int]] = {}  # chunk -> micro-batches whose I ran and W did not, oldest first
        actions = []
        for kind, local in orders.actions(schedule, pp, v, m, rank):
            chunk = mine[local]
            if kind == WEIGHT:
                micro = waiting[chunk].pop(0)
            else:
                stream = FORWARD if kind == FORWARD else BACKWARD
                micro = seen.get((stream, chunk), 0)
                seen[(stream, chunk)] = micro + 1
                if kind == INPUT:
                    waiting.setdefault(chunk, []).append(micro)
            actions.append(Action(kind, chunk, micro))
        result.append(actions)
    return result


def dependencies(action: Action, last_chunk: int) -> list[tuple[str, int, int]]:
    """(stream, chunk, micro) that must be finished before `action` starts.

    Streams: "F" forwards, "B" input gradients (from a B or an I)."""
    c, i = action.chunk, action.micro
    if action.kind == FORWARD:
        return [(FORWARD, c - 1, i)] if c > 0 else []
    if action.kind == WEIGHT:
        return [(BACKWARD, c, i)]
    needs = [(FORWARD, c, i)]
    if c < last_chunk:
        needs.append((BACKWARD, c + 1, i))
    return needs


def simulate(schedule: str, pp: int, v: int, m: int, durations: Durations) -> Timeline:
    """Place every rank's actions in time (see the module's docstring): each action starts when
    its rank is free and its inputs have arrived, in the order `_placement` found."""
    if pp == 1:
        v = max(1, v)
    program = _placement(schedule, pp, v, m)
    ends = [0.0] * len(program)
    clock = [0.0] * pp
    blocks: list[Block] = []
    p2p = durations.p2p
    for index, (rank, action, needs) in enumerate(program):
        ready = clock[rank]
        for source, crosses in needs:
            ready = max(ready, ends[source] + (p2p if crosses else 0.0))
        end = ready + durations.of(rank, action.kind)
        blocks.append(Block(rank, action, ready, end))
        ends[index] = end
        clock[rank] = end
    makespan = max((b.end for b in blocks), default=0.0)
    return Timeline(schedule, pp, v, m, tuple(blocks), makespan)


def makespan(schedule: str, pp: int, v: int, m: int, durations: Durations) -> float:
    """`simulate(...).makespan` without building the blocks (the time model replays schedules
    for their length only): the same additions in the same order, so the same number."""
    if pp == 1:
        v = max(1, v)
    ends: list[float] = []
    clock = [0.0] * pp
    p2p = durations.p2p
    of = durations.of
    best = 0.0
    for rank, action, needs in _placement(schedule, pp, v, m):
        ready = clock[rank]
        for source, crosses in needs:
            ready = max(ready, ends[source] + (p2p if crosses else 0.0))
        end = ready + of(rank, action.kind)
        ends.append(end)
        clock[rank] = end
        best = max(best, end)
    return best


@lru_cache(maxsize=64)
def _placement(schedule: str, pp: int, v: int, m: int) -> tuple[tuple[int, Action, tuple[tuple[int, bool], ...]], ...]:
    """The list-scheduling pass without the clock: which action is placed when does not depend on
    the durations (a rank runs its next action once the actions it needs are placed, whatever
    they took), so the pass is done once per (schedule, pp, v, m) and `simulate` only adds up
    times along it. Each entry: (rank, action, (index of each needed entry, whether it ran on
    another rank and so pays the p2p time)). A few dozen kept: a deep interleaved order is
    megabytes, and the time model replays at most 8 ranks."""
    per_rank = rank_orders(schedule, pp, v, m)
    last = pp * v - 1
    done: dict[tuple[str, int, int], tuple[int, int]] = {}  # (stream, chunk, micro) -> (rank, index)
    cursor = [0] * pp
    program: list[tuple[int, Action, tuple[tuple[int, bool], ...]]] = []
    remaining = sum(len(a) for a in per_rank)
    while remaining:
        progressed = False
        for rank in range(pp):
            while cursor[rank] < len(per_rank[rank]):
                action = per_rank[rank][cursor[rank]]
                needs = []
                for need in dependencies(action, last):
                    if need not in done:
                        break
                    source, index = done[need]
                    needs.append((index, source != rank))
                else:
                    stream = WEIGHT if action.kind == WEIGHT else (FORWARD if action.kind == FORWARD else BACKWARD)
                    done[(stream, action.chunk, action.micro)] = (rank, len(program))
                    program.append((rank, action, tuple(needs)))
                    cursor[rank] += 1
                    remaining -= 1
                    progressed = True
                    continue
                break
        if not progressed:
            stuck = [(r, per_rank[r][cursor[r]]) for r in range(pp) if cursor[r] < len(per_rank[r])]
            raise ScheduleError(f"{schedule} with pp {pp}, v {v}, m {m} deadlocks at {stuck[:3]}")
    return tuple(program)


def clear_caches() -> None:
    """Forget the placement orders (benchmarks measure a cold start)."""
    _placement.cache_clear()


def drawable_microbatches(schedule: str, pp: int, v: int, m: int, budget: int = 6000) -> int:
    """The micro-batches a picture can show within `budget` blocks: m itself when it fits, else a
    multiple of pp (whole rounds for the interleaved schedules, at least 2 pp for the V ones),
    enough to show the warm-up, a steady state and the cool-down, which then repeat."""
    per_micro = pp * v * (3 if schedule in orders.ZERO_BUBBLE else 2)
    if m * per_micro <= budget or pp == 1:
        return m
    rounds = max(2 if schedule in V_SCHEDULES else 1, budget // (per_micro * pp))
    shown = min(m, rounds * pp)
    while shown > pp and not orders.interleaved_accepts(pp, shown):
        shown -= pp
    return shown
