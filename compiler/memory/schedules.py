"""Micro-batches in flight: what each pipeline rank holds at its worst moment, per schedule.

The memory of a pipeline rank depends on the order in which it runs forwards and backwards, so
this module writes that order down for each schedule exactly as torch 2.13's
`torch.distributed.pipelining` runs it (tests/test_memory_schedules.py compares every sequence
with torch's own action lists), then walks it and records, after every action, how many
micro-batches each local chunk holds:

- `held`: forward done, activations kept (a full backward B, or a weight backward W, frees them);
- `pending`: input backward I done, weight backward W not yet: torch's `stage_backward_input`
  runs autograd with `retain_graph=True` and keeps the graph, so such a micro-batch still holds
  its saved activations (it stays `held`) *and* the output gradients W needs. Recomputed
  activations are not kept: torch.utils.checkpoint frees them as they are unpacked even with
  retain_graph (its "Rule 4"), and the weight backward recomputes them again;
- `unsharded`: zero3 under a single-stage schedule: a chunk's parameters stay gathered from a
  backward (pipelining sets `reshard_after_backward=False`) until the next forward reshards them.

Orders (p = pp, m = micro-batches, v = chunks per rank, r = pp rank):

- gpipe (Huang et al. 2019): all m forwards, then all m backwards: m held.
- 1f1b (PipeDream-Flush, Narayanan et al. 2021): min(p - r, m) forwards, then backward-forward
  pairs: rank r holds min(p - r, m).
- interleaved-1f1b (Narayanan et al. 2021, Section 2.2; torch's flexible rounds): warm-up of
  (v - 1) x m_round + 2 (p - 1 - r) chunk-forwards, then forward-backward pairs; rank 0 holds
  p + (p - 1)/v stage-equivalents, Megatron-LM's (1 + (p - 1)/(p v)) penalty.
- interleaved-zb (ZB1P, Qi et al. 2024): warm-up (v - 1) x m_round + (p - 1 - r), then F, I and,
  after r steps, the oldest deferred W.
- zbv (Qi et al. 2024, Section 6): two chunks in a V; W right after I in the steady state.
- dualpipe-v (DeepSeek-AI 2024; DualPipe's V-shaped variant): overlapped forward-backward pairs,
  with input/weight split backwards in its cool-down.

A state is the tuple (held per chunk, pending per chunk, unsharded per chunk); only the states
no other state dominates are kept, so the memory model takes a max over a handful.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate, compress
from operator import mul

F, B, I, W = "F", "B", "I", "W"  # noqa: E741 - the schedule papers' names for the four actions

SINGLE_STAGE = ("gpipe", "1f1b")
MULTI_STAGE = ("interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")
ZERO_BUBBLE = ("interleaved-zb", "zbv", "dualpipe-v")

Action = tuple[str, int]
"""(kind, local chunk index)."""


def rounds(pp: int, m: int) -> tuple[int, int]:
    """torch's interleaved schedules: rounds = max(1, m // pp) of m / rounds micro-batches each."""
    count = max(1, m // pp)
    return count, m // count


def interleaved_accepts(pp: int, m: int) -> bool:
    """torch raises unless the micro-batches split into whole rounds."""
    count, _ = rounds(pp, m)
    return m % count == 0


def gpipe(pp: int, m: int, rank: int) -> list[Action]:
    return [(F, 0)] * m + [(B, 0)] * m


def one_f_one_b(pp: int, m: int, rank: int) -> list[Action]:
    warmup = min(m, pp - rank)
    actions: list[Action] = [(F, 0)] * warmup
    forwards = warmup
    for _ in range(m - warmup):
        actions += [(B, 0), (F, 0)]
        forwards += 1
    actions += [(B, 0)] * (m - (forwards - warmup))
    return actions


def _looped(pp: int, v: int, m: int, rank: int, zero_bubble: bool) -> list[Action]:
    """Interleaved 1F1B and ZB1P: chunks visited in rounds of m_round micro-batches."""
    _, per_round = rounds(pp, m)
    factor = 1 if zero_bubble else 2
    warmup = min((v - 1) * per_round + factor * (pp - 1 - rank), m * v)
    total = m * v
    # step s forwards chunk (s // per_round) % v and, from the warm-up's end on, backwards
    # chunk v - 1 - ((s - warmup) // per_round) % v; the action tuples are made once per chunk
    forwards = [(F, c) for c in range(v)]
    backward = I if zero_bubble else B
    backwards = [(backward, c) for c in range(v)]
    weights = [(W, c) for c in range(v)]
    actions: list[Action] = [forwards[(step // per_round) % v] for step in range(min(warmup, total))]
    append = actions.append
    done_backwards: list[int] = []
    done = done_backwards.append
    waited = 0
    for step in range(warmup, warmup + total):
        if step < total:
            append(forwards[(step // per_round) % v])
        chunk = v - 1 - ((step - warmup) // per_round) % v
        append(backwards[chunk])
        if zero_bubble:
            done(chunk)
            if step - warmup >= rank:
                append(weights[done_backwards[waited]])
                waited += 1
    if zero_bubble:
        actions += [weights[c] for c in done_backwards[waited:]]
    return actions


def interleaved_1f1b(pp: int, v: int, m: int, rank: int) -> list[Action]:
    return _looped(pp, v, m, rank, zero_bubble=False)


def interleaved_zb(pp: int, v: int, m: int, rank: int) -> list[Action]:
    return _looped(pp, v, m, rank, zero_bubble=True)


def zbv(pp: int, m: int, rank: int) -> list[Action]:
    """ZB-V: the schedule is built for at least 2p - 1 micro-batches; the extra ones are dropped."""
    n = max(2 * pp - 1, m)
    seq: list[tuple[str, int, int]] = []  # (kind, chunk, micro-batch)
    f = [0, 0]
    b = [0, 0]

    def add(kind: str, chunk: int, counter: list[int]) -> None:
        seq.append((kind, chunk, counter[chunk]))
        counter[chunk] += 1

    for _ in range(2 * (pp - rank) - 1):
        add(F, 0, f)
    for _ in range(rank):
        add(F, 1, f)
        add(F, 0, f)
    for _ in range(pp - rank):
        add(F, 1, f)
        seq.append((I, 1, b[1]))
        add(W, 1, b)
    while f[1] < f[0] or f[0] < n:
        if f[0] < n:
            add(F, 0, f)
        seq.append((I, 0, b[0]))
        add(W, 0, b)
        add(F, 1, f)
        seq.append((I, 1, b[1]))
        add(W, 1, b)
    w = list(b)
    for _ in range(rank):
        add(I, 0, b)
        add(I, 1, b)
    for _ in range(pp - rank):
        add(I, 0, b)
        add(W, 0, w)
    while w[1] < b[1]:
        add(W, 1, w)
    while w[0] < b[0]:
        add(W, 0, w)
    return [(kind, chunk) for kind, chunk, micro in seq if micro < m]


def dualpipe_v(pp: int, m: int, rank: int) -> list[Action]:
    """DualPipeV as torch builds it; an overlapped forward-backward pair counts as F then B."""
    actions: list[Action] = []
    deferred: list[int] = []

    def weight() -> None:
        if deferred:
            actions.append((W, deferred.pop(0)))

    def backward_input(chunk: int) -> None:
        actions.append((I, chunk))
        deferred.append(chunk)

    def backward(chunk: int, split: bool) -> None:
        if split:
            backward_input(chunk)
        else:
            actions.append((B, chunk))

    for _ in range(2 * (pp - rank - 1)):
        actions.append((F, 0))
    for _ in range(rank + 1):
        actions += [(F, 0), (F, 1)]
    for _ in range(pp - rank - 1):
        backward_input(1)
        weight()
        actions.append((F, 1))
    for _ in range(m - 2 * pp + rank + 1):
        actions += [(F, 0), (B, 1), (F, 1), (B, 0)]
    for _ in range(pp - rank - 1):
        actions += [(B, 1), (F, 1), (B, 0)]
    split = False
    steps = rank + 1
    for i in range(steps):
        if i == steps // 2 and rank % 2 == 1:
            split = True
        backward(1, split)
        if i == steps // 2 and rank % 2 == 0:
            split = True
        backward(0, split)
    for _ in range(pp - rank - 1):
        weight()
        backward(0, split)
    for _ in range(rank + 1):
        weight()
    return actions


def actions(schedule: str, pp: int, v: int, m: int, rank: int) -> list[Action]:
    """The compute actions of one pp rank, in order. With pp = 1 there is no pipeline: each
    micro-batch runs forward then backward."""
    if pp == 1:
        out: list[Action] = []
        for _ in range(m):
            out += [(F, c) for c in range(v)] + [(B, c) for c in reversed(range(v))]
        return out
    if schedule == "gpipe":
        return gpipe(pp, m, rank)
    if schedule == "1f1b":
        return one_f_one_b(pp, m, rank)
    if schedule == "interleaved-1f1b":
        return interleaved_1f1b(pp, v, m, rank)
    if schedule == "interleaved-zb":
        return interleaved_zb(pp, v, m, rank)
    if schedule == "zbv":
        return zbv(pp, m, rank)
    if schedule == "dualpipe-v":
        return dualpipe_v(pp, m, rank)
    raise ValueError(f"unknown schedule {schedule}")


State = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

MAX_STATE_CHUNKS = 4
"""Up to this many chunks per rank the undominated states are enumerated and cached (a few
dozen); beyond, states have as many dimensions as chunks and `weighted_peak` walks the order
with the chunks' weights instead (no caching, linear in the actions)."""


REPEATS = 4
"""Steady-state repetitions walked when a step has many micro-batches (see `walk_microbatches`)."""


def walk_microbatches(schedule: str, pp: int, m: int) -> int:
    """A micro-batch count whose walk visits the same states as m's, for m too large to walk.

    After its warm-up every schedule repeats a fixed pattern per micro-batch (per round of
    m_round for the interleaved ones) and its cool-down mirrors the warm-up, so a few repetitions
    show every state the full walk would: tests/test_memory.py checks the equality for every m up
    to 14 pp. gpipe (it holds all m) and 1f1b are in closed form."""
    if pp == 1:
        return min(m, 2)
    if schedule in ("interleaved-1f1b", "interleaved-zb"):
        count, per_round = rounds(pp, m)
        smaller = per_round * REPEATS
        if count > REPEATS and rounds(pp, smaller) == (REPEATS, per_round):
            return smaller
        return m
    return min(m, 4 * pp + REPEATS)


@lru_cache(maxsize=65536)
def peak_states(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[State, ...]:
    """The undominated (held, pending, unsharded) states of one rank over a step."""
    rest = (0,) * (v - 1)
    if schedule == "gpipe" and pp > 1:  # every forward, then every backward
        return (((m - 1,) + rest, (0,) * v, (1,) + rest), ((m,) + rest, (0,) * v, (0,) * v))
    if schedule == "1f1b" and pp > 1:  # warm-up of min(p - r, m) forwards, then B-F pairs
        warm = min(pp - rank, m)
        return (((warm - 1,) + rest, (0,) * v, (1,) + rest), ((warm,) + rest, (0,) * v, (0,) * v))
    return _walked_states(schedule, pp, v, walk_microbatches(schedule, pp, m), rank)


@lru_cache(maxsize=65536)
def _walked_states(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[State, ...]:
    """`walk_states`, kept per walked micro-batch count: the many m of one search that walk the
    same few micro-batches (`walk_microbatches`) share one walk."""
    return walk_states(schedule, pp, v, m, rank)


def walk_states(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[State, ...]:
    """Walk every action of the rank and keep the undominated states (no shortcut).

    A state that the very next action only adds to (an input-gradient `I`, or a forward `F` of a
    chunk whose copy is not held gathered) is dominated by the state after it and never kept,
    so it is not collected: the walk's candidates halve and the result is the same."""
    # one list of counts: held per chunk, then pending, then unsharded; a state is collected as
    # it stands before an action that does not add to it (the state after the previous action)
    counts = [0] * (3 * v)
    seen: set[tuple[int, ...]] = set()
    started = False
    for kind, chunk in actions(schedule, pp, v, m, rank):
        if kind == F:
            if started and counts[2 * v + chunk]:
                seen.add(tuple(counts))
            counts[chunk] += 1
            counts[2 * v + chunk] = 0
        elif kind == B:
            if started:
                seen.add(tuple(counts))
            counts[chunk] -= 1
            counts[2 * v + chunk] = 1
        elif kind == I:
            counts[v + chunk] += 1
            counts[2 * v + chunk] = 1
        else:
            if started:
                seen.add(tuple(counts))
            counts[chunk] -= 1
            counts[v + chunk] -= 1
        started = True
    if started:
        seen.add(tuple(counts))
    # Largest total first: a state can only be dominated by one listed before it (`by_total`)
    flat = by_total(seen)
    return tuple(sorted((c[:v], c[v:2 * v], c[2 * v:]) for c in (flat[i] for i in undominated(flat))))


Moment = tuple[tuple[int, ...], tuple[int, ...], int, int]
"""(held per chunk, pending per chunk, the local chunk whose action runs then, its kind: 0 a
forward or full backward, 1 an input backward, 2 a weight backward)."""


@lru_cache(maxsize=65536)
def moment_states(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[Moment, ...]:
    """The undominated moments of one rank's step, each with the chunk that computes then: what
    an action holds while it runs is at most the larger of the states before and after it (a
    forward adds its micro-batch, a backward or a weight backward frees it), and its working
    set is its own chunk's, not another's. An input backward (I) is its state before plus what
    the pass itself adds (its working set and the pending set it builds, `model.input_pass_working`),
    marked 1; a weight backward (W), its state before with the weight pass's working set (no
    loss), marked 2. `peak_states` forgets which chunk runs, so the memory model added the rank's
    largest working set to its largest state, two moments the schedule never holds at once: on
    Mixtral's last interleaved rank (rehearse-mixtral-8, rank 255) a MoE layer's backward
    working set on one chunk beside the output chunk's head and fp32 logits in flight, when the
    MoE chunk's backward runs with the output chunk holding nothing (`model.moments_peak`;
    tests/test_moments.py).

    Kept undominated per chunk and kind (a moment is dominated only by another of the same
    extra). The state after an input backward is not a moment of its own: the next action's
    covers it. Walked on `walk_microbatches` as `peak_states`."""
    walked = walk_microbatches(schedule, pp, m) if schedule != "gpipe" else m
    held, pending = [0] * v, [0] * v
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for kind, chunk in _walked_actions(schedule, pp, v, walked, rank):
        if kind == F:
            held[chunk] += 1
        seen.add((3 * chunk + (kind == I) + 2 * (kind == W), tuple(held) + tuple(pending)))  # after F, before B, W, I
        if kind == I:
            pending[chunk] += 1
        elif kind == B:
            held[chunk] -= 1
        elif kind == W:
            held[chunk] -= 1
            pending[chunk] -= 1
    out: list[Moment] = []
    for tag in range(3 * v):
        mine = by_total(c for t, c in seen if t == tag)
        out += [(mine[i][:v], mine[i][v:], tag // 3, tag % 3) for i in undominated(mine)]
    return tuple(sorted(out, key=lambda s: (s[2], s[3], s[0], s[1])))


ReceiveMoment = tuple[tuple[int, ...], tuple[int, ...], int, int, int]
"""A `Moment` with the receive buffers alive then; kind 3: no computation (a receive arrived)."""


@lru_cache(maxsize=65536)
def receive_moments(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[ReceiveMoment, ...] | None:
    """`moment_states` with the receive buffers alive at each moment (`_receive_trace`: a
    computation holds those left once it has taken its inputs, a weight backward the most
    alive between its neighbours' computations), and the moments between computations when a
    receive arrives (kind 3, with the state after the last computation); multi-stage schedules
    only, None where torch refuses the layout. The memory model counted the most receive
    buffers a rank ever holds beside its worst state (`p2p_buffers`): at Mixtral's last rank
    (rehearse-mixtral-8, 255) four, where the loss's moment of the step's last micro-batch holds
    two (docs/memory-model.md, "Moments by chunk")."""
    walked = walk_microbatches(schedule, pp, m) if schedule != "gpipe" else m
    trace = _receive_trace(schedule, pp, v, walked)
    if trace is None:
        return None
    lives, gaps = trace[rank]
    sizes = turn_sizes(schedule, pp, v, walked, rank)
    # one list of counts: held per chunk, pending per chunk, the receive buffers alive; each
    # moment collected into its tag's set (3 x chunk + kind; 3 v: no computation) as one tuple
    counts = [0] * (2 * v + 1)
    live = 2 * v
    by_tag: list[set[tuple[int, ...]]] = [set() for _ in range(3 * v + 1)]
    idle = by_tag[3 * v]
    counts[live] = gaps[0]
    idle.add(tuple(counts))
    turn = used = 0
    for kind, chunk in _walked_actions(schedule, pp, v, walked, rank):
        if kind == W:
            counts[live] = gaps[turn]
            by_tag[3 * chunk + 2].add(tuple(counts))
            counts[chunk] -= 1
            counts[v + chunk] -= 1
            continue
        if kind == F:
            counts[chunk] += 1
        counts[live] = lives[turn]
        if kind == I:
            by_tag[3 * chunk + 1].add(tuple(counts))
            counts[v + chunk] += 1
        else:
            by_tag[3 * chunk].add(tuple(counts))
            if kind == B:
                counts[chunk] -= 1
        used += 1
        if used == sizes[turn]:
            turn, used = turn + 1, 0
            counts[live] = gaps[turn]
            idle.add(tuple(counts))
    out: list[ReceiveMoment] = []
    for tag, moments in enumerate(by_tag):
        mine = sorted(moments, key=sum, reverse=True)  # `by_total`
        out += [(mine[i][:v], mine[i][v:2 * v], min(tag // 3, v - 1), 3 if tag == 3 * v else tag % 3, mine[i][-1])
                for i in undominated(mine)]
    return tuple(sorted(out, key=lambda s: (s[2], s[3], s[0], s[1], s[4])))


def by_total(vectors) -> list[tuple[int, ...]]:
    """Distinct count vectors, largest total first, as `undominated` takes them. Ties stay in the
    order given: two distinct vectors of one total never dominate each other, so which are kept
    does not depend on their order (every caller sorts what it keeps, or takes a max over it)."""
    return sorted(vectors, key=sum, reverse=True)


def undominated(ordered: list[tuple[int, ...]]) -> list[int]:
    """The indices of the count vectors (non-negative) that no vector kept before them dominates
    (at least as large in every field), for vectors listed largest total first (a vector can only
    be dominated by one listed before it): `walk_states`' and `walked_peak`'s walks' moments.

    Counts packed into one integer, a field per count with a guard bit on top: `other` dominates
    `counts` when subtracting field by field leaves every guard bit set (no field borrows), one
    integer operation instead of a comparison per count (long walks keep thousands of states).
    Kept vectors carry their guard bits already. Counts from 0 to 127 are packed a byte each by
    `int.from_bytes` (any width above the largest count's bits gives the same answer; a byte
    each packs in C instead of a Python loop over the fields). The kept vector that dominated the
    last one is tried first, before the loop over the others: four in five of a deep pipeline's
    receive moments are dominated, most by that one."""
    largest = max(map(max, ordered), default=0)
    n = len(ordered[0]) if ordered else 0
    bytewise = largest < 128 and min(map(min, ordered), default=0) >= 0
    width = 8 if bytewise else largest.bit_length() + 1
    shifts = [i * width for i in range(n)]
    guard = sum(1 << (shift + width - 1) for shift in shifts)
    kept: list[int] = []
    out: list[int] = []
    # the kept vectors side by side in one integer, a block of n fields each (`_dominated_by_any`;
    # counts not negative: the packing is exact only there)
    at_once = bytewise or min(map(min, ordered), default=0) >= 0
    block = max(n, 1) * width
    every = ones = guards = highs = 0
    from_bytes = int.from_bytes
    for index, counts in enumerate(ordered):
        if bytewise:
            packed = from_bytes(bytes(counts), "little")
        else:
            packed = 0
            for c, shift in zip(counts, shifts, strict=True):
                packed |= c << shift
        if kept and (kept[0] - packed) & guard == guard:
            continue
        if at_once and len(kept) > MANY_KEPT:  # all kept at once, in one integer (`_dominated_by_any`)
            if _dominated_by_any(packed, every, ones, guards, highs, width):
                continue
        else:
            for i, other in enumerate(kept):
                if (other - packed) & guard == guard:
                    if i:  # the vector that dominated this one likely dominates the next: try it first
                        kept[i], kept[0] = kept[0], other
                    break
            else:
                i = -1
            if i >= 0:
                continue
        shift = block * len(kept)
        kept.append(packed | guard)
        out.append(index)
        if at_once:
            every |= (packed | guard) << shift
            ones |= 1 << shift
            guards |= guard << shift
            highs |= 1 << (shift + block - 1)
    return out


MANY_KEPT = 6
"""Past this many kept vectors `undominated` tests a vector against all of them at once
(`_dominated_by_any`): a few operations on integers of (kept x fields) bytes instead of a
Python loop over the kept ones (a deep pipeline's receive moments keep up to hundreds per tag;
every rank's receive moments of the Megatron 1T row's five deep lowerings took 380 ms of CPU
with the loop up to 48 kept, 345 up to 16, 318 up to 6, 336 up to 2)."""


def _dominated_by_any(packed: int, every: int, ones: int, guards: int, highs: int, width: int) -> bool:
    """Whether any vector of `every` dominates `packed`: `every` holds the kept vectors (with
    their guard bits) side by side in blocks of `block` bits (fields x width), `ones` a 1 at the
    bottom of each block, `guards` each block's guard bits, `highs` each block's top bit.

    Subtracting `packed` from every block at once (`packed x ones`) borrows across no field, as
    in `undominated`: each field of each block keeps its guard bit exactly where the kept count
    is at least the vector's. A block dominates where all its guard bits stay; XOR with
    `guards` leaves such a block zero and every other block not, with its bits only at the
    fields' guard positions. Shifted down by width - 1 those sit at each field's bottom bit, so
    a block's value stays below its top bit (each field is at least 2 bits wide): then
    (x - ones) & highs is non-zero exactly when some block of x is zero (the lowest zero block
    borrows through all its bits, its top one included; without one, no block borrows and every
    block minus one keeps its top bit clear), the zero-byte test of bit tricks, a block wide."""
    x = (((every - packed * ones) & guards) ^ guards) >> (width - 1)
    return bool((x - ones) & highs)


@lru_cache(maxsize=1024)
def _walked_actions(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[Action, ...]:
    """`actions`, kept: `weighted_peak` walks the same order with the weights of many layouts."""
    return tuple(actions(schedule, pp, v, m, rank))


def weighted_peak(schedule: str, pp: int, v: int, m: int, rank: int, saved: tuple[int, ...],
                  pending: tuple[int, ...]) -> tuple[int, int]:
    """(largest sum of held x saved + pending x pending-bytes, chunk micro-batches held then),
    walking the actions once: for ranks with many chunks, where enumerating states would not do.

    Each action adds one of 4 v amounts to the sum (a forward chunk c's saved bytes, a full
    backward their negative, an input backward its pending bytes, a weight backward minus
    both), so the walk is the running sum of those amounts picked by the action's index
    (`_action_indices`, kept per walk) and its largest value the first to reach it: summed and
    compared in C (`itertools.accumulate`, `max`) instead of a Python loop over the actions;
    the moments held then are found only at that one index (tests/test_search_speed_exact.py
    holds both against the plain walk)."""
    if schedule == "gpipe" and pp > 1:
        return m * saved[0], m
    if schedule == "1f1b" and pp > 1:
        return min(pp - rank, m) * saved[0], min(pp - rank, m)
    walked = walk_microbatches(schedule, pp, m)
    indices = _action_indices(schedule, pp, v, walked, rank)
    amounts = list(saved) + [-s for s in saved] + list(pending) + [-s - p for s, p in zip(saved, pending, strict=True)]
    sums = list(accumulate(map(amounts.__getitem__, indices)))
    best = max(sums, default=0)
    if best <= 0:  # no moment above the empty state before the first action
        return 0, 0
    at = sums.index(best)  # the first moment with the largest sum
    steps = [1] * v + [-1] * v + [0] * v + [-1] * v  # what each action does to the micro-batches held
    return best, sum(map(steps.__getitem__, indices[:at + 1]))


@lru_cache(maxsize=1024)
def _action_indices(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[int, ...]:
    """`_walked_actions` as indices into `weighted_peak`'s 4 v amounts: kind x v + chunk, the
    kinds F, B, I, W in that order."""
    index = {(kind, c): start + c for kind, start in ((F, 0), (B, v), (I, 2 * v), (W, 3 * v)) for c in range(v)}
    return tuple(map(index.__getitem__, _walked_actions(schedule, pp, v, m, rank)))


_REDUCED: dict[tuple, tuple[tuple[int, ...], ...] | int] = {}
"""`walked_peak`'s states per walk and chunk classes (or how often it was walked, the first two times)."""


def walked_peak(schedule: str, pp: int, v: int, m: int, rank: int, saved: tuple[int, ...],
                pending: tuple[int, ...]) -> int:
    """`weighted_peak`'s largest sum (held micro-batches x saved bytes plus pending ones
    x pending bytes, per chunk, over every moment of the rank's walk) without walking for every
    layout: chunks of equal (saved, pending) weigh alike, so the walk's moments, counted per
    class of such chunks, are kept once per walk and classes (`_reduced_states`, only those no
    other moment has at least as many of in every class: the weights are not negative), and
    each layout takes the largest weighted sum over them. Search's floors ask it of thousands of
    layouts that share a few hundred walks; keeping the moments costs a few walks, so a walk is
    kept from its third request on (tests/test_search_speed_exact.py holds it equal to
    `weighted_peak`'s)."""
    if (pp > 1 and schedule in ("gpipe", "1f1b")  # `weighted_peak`'s closed forms
            or min(saved) < 0 or min(pending) < 0):  # the kept moments are those of non-negative weights
        return weighted_peak(schedule, pp, v, m, rank, saved, pending)[0]
    classes: dict[tuple[int, int], int] = {}
    labels = tuple(classes.setdefault(pair, len(classes)) for pair in zip(saved, pending, strict=True))
    key = (schedule, pp, v, walk_microbatches(schedule, pp, m), rank, labels)
    states = _REDUCED.get(key)
    if states is None or states.__class__ is int:  # a walk asked for at most twice is walked
        if len(_REDUCED) > 8192:
            _REDUCED.clear()
        if (states or 0) < 2:
            _REDUCED[key] = (states or 0) + 1
            return weighted_peak(schedule, pp, v, m, rank, saved, pending)[0]
        states = _REDUCED[key] = _reduced_states(key, len(classes))
    weights = [w for pair in classes for w in pair]
    return max(sum(map(mul, state, weights)) for state in states)  # each state's products summed in order


def _reduced_states(key: tuple, n: int) -> tuple[tuple[int, ...], ...]:
    """The undominated moments of a walk as (held, pending) counts per chunk class, interleaved
    (class 0's held, class 0's pending, class 1's ...); the moment before the first action (all
    zero) included, as `weighted_peak` starts from nothing.

    The counts are packed into one integer, a field per count wider than the walk is long, so
    each action adds one fixed amount: the moments are a running sum and a
    set of integers made in C, and only the distinct ones are unpacked, of the moments before a
    full or weight backward and the last (each other one is below the moment after it). A
    field would borrow from the next only where a count went negative, which no walk torch
    runs does: the interleaved rounds with a remainder (a layout it refuses, E0318) are walked
    count by count (`_plain_reduced_states`), and a borrow seen in a kept moment sends the walk
    there too (tests/test_search_speed_exact.py holds the two equal, refused layouts
    included)."""
    schedule, pp, v, m, rank, labels = key
    if schedule.startswith("interleaved") and pp > 1 and not interleaved_accepts(pp, m):
        return _plain_reduced_states(key, n)  # the only walks whose counts go negative (E0318)
    indices = _action_indices(schedule, pp, v, m, rank)
    width = len(indices).bit_length() + 1  # a field holds up to twice the walk's length
    fields = [2 * labels[c] * width for c in range(v)]  # where each chunk's class's held count sits
    held = [1 << f for f in fields]
    pending = [1 << (f + width) for f in fields]
    steps = held + [-h for h in held] + pending + [-h - p for h, p in zip(held, pending, strict=True)]
    # a moment right before a forward or an input backward is below the next one (it only
    # adds): only those before a full or weight backward, and the last, can be undominated
    frees = bytes(map((b"\x00" * v + b"\x01" * v + b"\x00" * v + b"\x01" * v).__getitem__, indices)) + b"\x01"
    packed = set(compress(accumulate(map(steps.__getitem__, indices), initial=0), frees))
    mask, limit = (1 << width) - 1, len(indices)
    shifts = range(0, 2 * n * width, width)
    seen = [tuple((x >> shift) & mask for shift in shifts) for x in packed]
    if min(packed) < 0 or max(map(max, seen)) > limit:  # a count went negative: a field borrowed
        return _plain_reduced_states(key, n)
    ordered = by_total(seen)
    return tuple(ordered[i] for i in undominated(ordered))


def _plain_reduced_states(key: tuple, n: int) -> tuple[tuple[int, ...], ...]:
    """`_reduced_states` walked count by count, for any walk."""
    schedule, pp, v, m, rank, labels = key
    counts = [0] * (2 * n)
    seen = {tuple(counts)}
    for kind, chunk in _walked_actions(schedule, pp, v, m, rank):
        c = 2 * labels[chunk]
        if kind == F:
            counts[c] += 1
        elif kind == B:
            counts[c] -= 1
        elif kind == I:
            counts[c + 1] += 1
        else:
            counts[c] -= 1
            counts[c + 1] -= 1
        seen.add(tuple(counts))
    ordered = by_total(seen)
    return tuple(ordered[i] for i in undominated(ordered))


def max_in_flight(schedule: str, pp: int, v: int, m: int, rank: int) -> int:
    """Most chunk-micro-batches the rank holds at once (for reports)."""
    return max(sum(h) for h, _, _ in peak_states(schedule, pp, v, m, rank))


def _stage_of(schedule: str, pp: int, rank: int, chunk: int) -> int:
    """The global stage index of a rank's local chunk: a V for zbv and dualpipe-v, loops else."""
    if schedule in ("zbv", "dualpipe-v"):
        return rank if chunk == 0 else 2 * pp - 1 - rank
    return chunk * pp + rank


def _indexed(schedule: str, pp: int, v: int, m: int, rank: int) -> list[tuple[str, int, int]]:
    """`actions` as (kind, stage, micro-batch): torch numbers each chunk's forwards, input (or
    full) backwards and weight backwards in micro-batch order."""
    seen: dict[tuple[str, int], int] = {}
    out = []
    for kind, chunk in actions(schedule, pp, v, m, rank):
        key = ("B" if kind in (B, I) else kind, chunk)
        micro = seen.get(key, 0)
        seen[key] = micro + 1
        out.append((kind, _stage_of(schedule, pp, rank, chunk), micro))
    return out


def _fsdp_rounds(ops: list[tuple[str, int, int]], active: int = 3) -> list[tuple]:
    """torch's `_add_unshard_reshard` (3 stages prefetched) and `_add_reduce_grad` (after a
    stage's last backward), which every `_PipelineScheduleRuntime` applies: they add no
    dependency but each takes a turn of the lowering's lockstep, so they shift when a rank
    posts its receives."""
    nexts: list[list[int]] = [[]] * len(ops)  # per position: the stages next used, nearest first
    order: list[int] = []  # the nearest `active` of them: the rest never reach a later position's
    for i in range(len(ops) - 1, -1, -1):
        stage = ops[i][1]
        if not order or order[0] != stage:  # else the same stages, the same list
            order = ([stage] + [s for s in order if s != stage])[:active]
        nexts[i] = order
    out: list[tuple] = []
    held: list[int] = []
    previous = None
    for i, op in enumerate(ops):
        upcoming = nexts[i]
        if upcoming is previous:  # held is already what is upcoming: nothing to gather or free
            out.append(op)
            continue
        previous = upcoming
        for stage in [s for s in held if s not in upcoming]:
            held.remove(stage)
            out.append(("RESHARD", stage, None))
        for stage in [s for s in upcoming if s not in held]:
            held.append(stage)
            out.append(("UNSHARD", stage, None))
        out.append(op)
    for stage in held:
        out.append(("RESHARD", stage, None))
    lasts = {}
    for i, (kind, stage, _micro) in enumerate(out):
        if kind in (B, W):
            lasts[stage] = i
    reduced: list[tuple] = []
    for i, op in enumerate(out):
        reduced.append(op)
        if lasts.get(op[1]) == i and op[0] in (B, W):
            reduced.append(("REDUCE_GRAD", op[1], None))
    return reduced


def _turns(schedule: str, pp: int, rank: int, ops: list[tuple]) -> list[tuple]:
    """The lowering's turns: one action each, but dualpipe-v's overlapped pairs (a forward
    right before a full backward: torch's OVERLAP_F_B) run in one turn, once both are ready;
    torch leaves the last rank's first steady-state pair apart ("to further reduce bubble
    size")."""
    turns: list[tuple] = []
    apart = schedule == "dualpipe-v" and rank == pp - 1
    i = 0
    while i < len(ops):
        if schedule == "dualpipe-v" and ops[i][0] == F and i + 1 < len(ops) and ops[i + 1][0] == B and apart:
            apart = False
            turns += [(ops[i],), (ops[i + 1],)]
            i += 2
        elif schedule == "dualpipe-v" and ops[i][0] == F and i + 1 < len(ops) and ops[i + 1][0] == B:
            turns.append((ops[i], ops[i + 1]))
            i += 2
        else:
            turns.append((ops[i],))
            i += 1
    return turns


def _lowered(schedule: str, pp: int, v: int, m: int) -> dict[int, list[tuple]]:
    """Every rank's actions with its receives, as torch 2.13's `_add_send_recv` places them: in
    lockstep turns over the ranks, a compute action runs once its input is there, and the
    matching receive goes into the receiver's list right when the sender runs (ASAP: the
    schedules' default, `defer_pp_recv=False`)."""
    stages = pp * v
    owner = {_stage_of(schedule, pp, r, c): r for r in range(pp) for c in range(v)}
    todo = {r: _turns(schedule, pp, r, _fsdp_rounds(_indexed(schedule, pp, v, m, r))) for r in range(pp)}
    done: dict[int, set] = {r: set() for r in range(pp)}
    lowered: dict[int, list[tuple]] = {r: [] for r in range(pp)}

    def ready(rank: int, op: tuple) -> bool:
        kind, stage, micro = op
        if kind == F and stage != 0:
            return ("RECV_F", stage, micro) in done[rank] or (F, stage - 1, micro) in done[rank]
        if kind in (B, I) and stage != stages - 1:
            return ("RECV_B", stage, micro) in done[rank] or (I, stage + 1, micro) in done[rank] \
                or (B, stage + 1, micro) in done[rank]
        return True

    heads = {r: 0 for r in range(pp)}
    # A rank whose turn was not ready stays so until a receive arrives (only its own turns and
    # its peers' receives change what it has done): it is skipped until then, which changes no
    # turn's place, only the checks that would fail again.
    blocked = [False] * pp
    unfinished = sum(1 for r in range(pp) if todo[r])
    while unfinished:
        progress = False
        for r in range(pp):
            if blocked[r] or heads[r] == len(todo[r]):
                continue
            turn = todo[r][heads[r]]
            if not all(ready(r, op) for op in turn):
                blocked[r] = True
                continue
            for op in turn:
                lowered[r].append(op)
                done[r].add(op)
            for kind, stage, micro in turn:
                peer = None
                if kind == F and stage != stages - 1 and owner[stage + 1] != r:
                    peer, recv = owner[stage + 1], ("RECV_F", stage + 1, micro)
                elif kind in (B, I) and stage != 0 and owner[stage - 1] != r:
                    peer, recv = owner[stage - 1], ("RECV_B", stage - 1, micro)
                if peer is not None:
                    lowered[peer].append(recv)
                    done[peer].add(recv)
                    blocked[peer] = False
            heads[r] += 1
            unfinished -= heads[r] == len(todo[r])
            progress = True
        if not progress:
            raise ValueError(f"{schedule}: the actions cannot be lowered")
    return lowered


def live_receives(lowered: list[tuple]) -> int:
    """The most receive buffers one rank holds at once when each is allocated as its receive is
    posted and let go once used (the generated job's `ReceiveOnDemandStage`): received, not yet
    consumed, plus the output gradient the running backward reads. A forward's input becomes
    the stage input saved for backward (counted with the activations) and an input backward's
    gradient is kept for the weight backward (counted as pending), so neither is counted after."""
    alive = best = 0
    received: set = set()
    for kind, stage, micro in lowered:
        if kind in ("RECV_F", "RECV_B"):
            alive += 1
            received.add((kind, stage, micro))
            best = max(best, alive)
        elif kind == F and ("RECV_F", stage, micro) in received:
            alive -= 1
        elif kind in (B, I) and ("RECV_B", stage, micro) in received:
            alive -= 1
    return best


EMPTY = -1
"""`_compute_turns`' code of a turn that computes nothing."""

PAIR = 1 << 32
"""`_compute_turns`' codes of one computation stay below it: a turn of two (dualpipe-v's
overlapped pairs) is coded -2 - (first x PAIR + second)."""


def turn_code(pp: int, v: int, direction: int, stage: int, micro: int) -> int:
    """One computation of a turn as one integer: micro-batch x 2 pp v + direction x pp v +
    stage. Its input's flag in `_receive_trace` sits at the same index, and the input it makes
    for the next stage (forward, + 1) or the previous one (backward, - 1) right beside it; the
    key (direction, stage) is the code modulo 2 pp v."""
    return micro * 2 * pp * v + direction * pp * v + stage


def decoded_turns(pp: int, v: int, turns: tuple[int, ...]) -> tuple[tuple, ...]:
    """`_compute_turns`' codes written out: per turn, its compute actions as (0 forward /
    1 backward, stage, micro-batch), () for a turn that computes nothing (`turn_code`, `PAIR`)."""
    stride, count = 2 * pp * v, pp * v

    def one(code: int) -> tuple[int, int, int]:
        micro, key = divmod(code, stride)
        return (*divmod(key, count), micro)

    out: list[tuple] = []
    for turn in turns:
        if turn == EMPTY:
            out.append(())
        elif turn >= 0:
            out.append((one(turn),))
        else:
            first, second = divmod(-2 - turn, PAIR)
            out.append((one(first), one(second)))
    return tuple(out)


def turn_sizes(schedule: str, pp: int, v: int, m: int, rank: int) -> list[int]:
    """How many computations each of the rank's computing turns runs (`_compute_turns`): one,
    or two for dualpipe-v's overlapped pairs."""
    return [1 if turn >= 0 else 2 for turn in _compute_turns(schedule, pp, v, m, rank) if turn != EMPTY]


@lru_cache(maxsize=4096)
def _compute_turns(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[int, ...]:
    """The rank's lowering turns as `_walked_receives` reads them, one integer each: its compute
    action (0 forward / 1 backward, stage, micro-batch) coded by `turn_code`, two of them in one
    (`PAIR`), `EMPTY` for a turn that computes nothing (a weight backward, FSDP's unshard,
    reshard and reduce-grad). Written out (`decoded_turns`), the same list as
    `_turns(_fsdp_rounds(_indexed(...)))` with W and FSDP's actions emptied
    (tests/test_search_speed_exact.py holds the two equal), built without the intermediate lists
    of operations: a deep interleaved pipeline has hundreds of thousands of them, and building
    them cost more than the lowering's walk. Integers, not a tuple of tuples per turn: the
    lockstep reads a flag at the code itself, and a search that lowers a few deep pipelines
    made 400,000 tuples that Python's garbage collector then walked over and over with the rest
    of the search's heap (the same turns, no containers).

    FSDP's rounds (`_fsdp_rounds`), counted: a rank holds the nearest `active` (3) stages it
    uses next, so where the stage changes from one action to the next it reshards those that
    leave the set and unshards those that enter it (all of them before its first action, and
    reshards all it holds after its last); after the last full or weight backward of each stage
    one reduce-grad. The set of stages held changes only where the stage does: it is found
    for the first action of each run of one stage only (a looped schedule's steady state
    changes stage at every action, its warm-up once per round), and only by one stage in and
    at most one out, so the actions are counted from the recency list alone, without building
    the sets (tests/test_search_speed_exact.py compares the turns with the plain composition,
    deep pipelines included). Each chunk's last full or weight backward is found from the end
    of its actions."""
    acts = _walked_actions(schedule, pp, v, m, rank)
    if schedule == "dualpipe-v":
        return _paired_turns(schedule, pp, v, m, rank, acts)
    stage_of = [_stage_of(schedule, pp, rank, c) for c in range(v)]
    stride = 2 * pp * v
    # Built from the last action back, in one pass: where the stage changes (each chunk is its
    # own stage), the run before the change and the nearest 3 distinct stages from the change on
    # decide FSDP's actions there; a chunk's last full or weight backward is its first one met.
    # Each chunk's codes count down from its last micro-batch (`_chunk_counts`).
    forwards, backwards = _chunk_counts(schedule, pp, v, m, acts)
    nexts = [stage + (count - 1) * stride for stage, count in zip(stage_of, forwards, strict=True)]
    backs = [pp * v + stage + (count - 1) * stride for stage, count in zip(stage_of, backwards, strict=True)]
    reduced = [False] * v
    order: list[int] = []  # the nearest 3 distinct stages used from here on, nearest first
    out: list[int] = []
    append = out.append
    previous = -1
    settled = False  # every stage of the rank held (3 or fewer): no FSDP action from here back
    for kind, chunk in reversed(acts):
        if chunk != previous and not settled:
            # FSDP's actions between this run and the one after it (after the last run, at the
            # step's end): where this run's stage is among the 3 held from the next run on, the
            # set is the same, none; else it enters, one unshard, and with 3 held pushes one
            # out, one reshard
            stage = stage_of[chunk]
            if stage in order:
                order.remove(stage)
                order.insert(0, stage)
            else:
                out += (EMPTY,) * (1 + (len(order) == 3))
                order.insert(0, stage)
                del order[3:]
                settled = len(order) == v
            previous = chunk
        if kind == F:
            append(nexts[chunk])
            nexts[chunk] -= stride
            continue
        if not reduced[chunk]:  # the chunk's last full or weight backward: a reduce-grad after it
            reduced[chunk] = True
            append(EMPTY)
        if kind == W:
            append(EMPTY)
        else:
            append(backs[chunk])
            backs[chunk] -= stride
    out += (EMPTY,) * len(order)  # the first run unshards all it holds
    out.reverse()
    return tuple(out)


def _chunk_counts(schedule: str, pp: int, v: int, m: int, acts: tuple[Action, ...]) -> tuple[list[int], list[int]]:
    """Per chunk, how many forwards and how many input or full backwards the rank runs: m each
    wherever torch runs the schedule (every chunk takes each micro-batch once each way), counted
    on the actions where the interleaved rounds leave a remainder (a layout torch refuses, E0318,
    which the tests still lower)."""
    if not schedule.startswith("interleaved") or pp == 1 or interleaved_accepts(pp, m):
        return [m] * v, [m] * v
    forwards, backwards = [0] * v, [0] * v
    for kind, chunk in acts:
        if kind == F:
            forwards[chunk] += 1
        elif kind != W:
            backwards[chunk] += 1
    return forwards, backwards


def _paired_turns(schedule: str, pp: int, v: int, m: int, rank: int, acts: tuple[Action, ...]) -> tuple[int, ...]:
    """`_compute_turns` for dualpipe-v, whose overlapped forward-backward pairs run in one turn."""
    n = len(acts)
    stage_of = [_stage_of(schedule, pp, rank, c) for c in range(v)]
    stages = [stage_of[chunk] for _, chunk in acts]
    # the nearest 3 distinct stages used from each position on (its own first), as a set: a
    # new one only where a stage enters it (the same object while only their order changes)
    nexts: list = [None] * n
    order: list[int] = []
    current: frozenset = frozenset()
    for i in range(n - 1, -1, -1):
        stage = stages[i]
        if stage not in current:
            order = ([stage] + order)[:3]
            current = frozenset(order)
        elif order[0] != stage:
            order = [stage] + [s for s in order if s != stage]
        nexts[i] = current
    last_bw: dict[int, int] = {}
    for i, (kind, _) in enumerate(acts):
        if kind == B or kind == W:
            last_bw[stages[i]] = i
    reduce_after = set(last_bw.values())
    counters = [0] * (3 * v)  # micro-batches counted per chunk: forwards, (input) backwards, weight backwards
    pairs = schedule == "dualpipe-v"
    apart = pairs and rank == pp - 1
    stride, count = 2 * pp * v, pp * v
    out: list[int] = []
    held: frozenset = frozenset()
    i = 0
    while i < n:
        if i == 0 or stages[i] != stages[i - 1]:
            upcoming = nexts[i]
            if upcoming is not held:
                out += (EMPTY,) * (len(held - upcoming) + len(upcoming - held))
                held = upcoming
        kind, chunk = acts[i]
        slot = chunk if kind == F else (2 * v + chunk if kind == W else v + chunk)
        micro = counters[slot]
        counters[slot] = micro + 1
        if pairs and kind == F and i + 1 < n and acts[i + 1][0] == B and (
                stages[i + 1] == stages[i] or nexts[i + 1] == held):
            # dualpipe-v's overlapped pair: a forward right before a full backward, with no
            # FSDP action between (the stages held do not change)
            nslot = v + acts[i + 1][1]
            nmicro = counters[nslot]
            counters[nslot] = nmicro + 1
            first, second = micro * stride + stages[i], nmicro * stride + count + stages[i + 1]
            if apart:
                apart = False
                out += (first, second)
            else:
                out.append(-2 - first * PAIR - second)
            if i + 1 in reduce_after:
                out.append(EMPTY)
            i += 2
            continue
        out.append(EMPTY if kind == W else micro * stride + (0 if kind == F else count) + stages[i])
        if i in reduce_after:
            out.append(EMPTY)
        i += 1
    out += (EMPTY,) * len(held)
    return tuple(out)


@lru_cache(maxsize=4096)
def receive_buffers(schedule: str, pp: int, v: int, m: int) -> tuple[int, ...]:
    """Per pp rank, the most receive buffers alive at once (`live_receives`), each one boundary
    tensor. Single-stage schedules post a receive right before the computation that uses it
    (`Schedule1F1B`, `ScheduleGPipe`): one output gradient during a backward, on every rank but
    the last. Multi-stage schedules post receives when the sender runs, ahead of use: the
    lowering is walked (over `walk_microbatches`' micro-batches when m is large: the steady
    state repeats)."""
    if pp == 1:
        return (0,)
    if schedule in SINGLE_STAGE:
        return tuple(int(r < pp - 1) for r in range(pp))
    walked = _walked_receives(schedule, pp, v, walk_microbatches(schedule, pp, m))
    if walked is None:
        # a layout torch refuses (dualpipe-v under 2 pp micro-batches: E0320 says so); the
        # bound: every receive of the step at once, one per micro-batch, chunk and direction
        return (2 * v * m,) * pp
    return walked


@lru_cache(maxsize=4096)
def _walked_receives(schedule: str, pp: int, v: int, m: int) -> tuple[int, ...] | None:
    """`live_receives` of every rank of `_lowered`, kept per walked micro-batch count (the many
    m of a search that walk the same few share one lowering); None where torch refuses: the
    most receive buffers each rank holds at any moment of `_receive_trace`."""
    trace = _receive_trace(schedule, pp, v, m)
    if trace is None:
        return None
    return tuple(max(gaps) for _, gaps in trace)


ReceiveTrace = tuple[tuple[int, ...], tuple[int, ...]]
"""One rank's live receive buffers: (at each of its computing turns, once the turn has taken its
inputs; the most at any moment before its first such turn, and after each until the next)."""


@lru_cache(maxsize=4096)
def _receive_trace(schedule: str, pp: int, v: int, m: int) -> tuple[ReceiveTrace, ...] | None:
    """Every rank's live receive buffers along its own turns (`ReceiveTrace`), as `_lowered`
    places the receives; None where torch refuses. The memory model pairs them with what the
    rank holds at each moment (`receive_moments`).

    Counted while lowering, on flags instead of lists of operations (a deep pipeline lowers
    hundreds of thousands of them; tests/test_receive_buffers.py holds the most equal to
    `live_receives`): an input is there for the forward (backward) of stage s, micro-batch i
    once stage s - 1's forward (s + 1's backward) of i has run, on whichever rank; the receive
    that brought it is alive on its rank from when the sender runs until that forward
    (backward) runs. Almost every visit of a deep pipeline's lockstep runs a turn (pp 32,
    interleaved-zb: 50,112 visits, 50,112 turns), so the cost is the turn's own reading: a turn
    of one computation is one integer (`turn_code`), whose input flag is at the code itself and
    the flag of the input it makes one beside it; per (direction, stage) three numbers looked
    up."""
    stages = pp * v
    stride = 2 * stages  # codes per micro-batch: one per (direction, stage), the key
    owner = [0] * stages
    for r in range(pp):
        for c in range(v):
            owner[_stage_of(schedule, pp, r, c)] = r
    todo = [_compute_turns(schedule, pp, v, m, r) for r in range(pp)]
    # one flag per code (direction, stage, micro-batch): the input of that computation is there.
    # A chunk's micro-batches are counted along the rank's turns, so each code (and the one
    # beside it) is below the most turns of a rank plus one, times the stride. The first
    # stage's forwards and the last stage's backwards need no input: their flags stand from
    # the start (no computation makes those inputs, so none is set twice)
    rows = max(len(turns) for turns in todo) + 1
    arrived = bytearray(rows * stride)
    arrived[0::stride] = b"\x01" * rows
    arrived[stride - 1::stride] = b"\x01" * rows
    alive, gap = [0] * pp, [0] * pp
    lives: list[list[int]] = [[] for _ in range(pp)]
    gaps: list[list[int]] = [[] for _ in range(pp)]
    heads = [0] * pp
    blocked = [False] * pp
    last = stages - 1
    unfinished = sum(1 for r in range(pp) if todo[r])
    # Per key (direction x stages + stage) looked up rather than worked out at every turn:
    # whether its input came by a receive (another rank runs the stage before), where the flag
    # of the input its output makes lies from its own (+ 1 forward, - 1 backward, 0: none) and
    # the rank that receives that output (-1: none, or its own rank).
    sources = [s - 1 for s in range(stages)] + [s + 1 if s != last else -1 for s in range(stages)]
    targets = [s + 1 if s != last else -1 for s in range(stages)] + [s - 1 for s in range(stages)]
    frees, moves, peers = [], [], []
    for key in range(stride):
        direction, stage = divmod(key, stages)
        source, to = sources[key], targets[key]
        frees.append(int(source >= 0 and owner[source] != owner[stage]))
        moves.append(0 if to < 0 else (1 if direction == 0 else -1))
        peers.append(owner[to] if to >= 0 and owner[to] != owner[stage] else -1)
    # A turn that computes nothing (EMPTY: a weight backward, FSDP's actions, a third of
    # interleaved-zb's turns at pp 32, v 4) needs no input, frees none and sends none: it
    # takes its pass and skips the checks below (the same passes, the same counts).
    ends = [len(turns) for turns in todo]
    while unfinished:
        progress = False
        for r in range(pp):
            if blocked[r]:
                continue
            head = heads[r]
            if head == ends[r]:
                continue
            turn = todo[r][head]
            if turn >= 0:  # one computation
                if not arrived[turn]:
                    blocked[r] = True
                    continue
                key = turn % stride
                now = alive[r] - frees[key]  # an input that came by a receive is used
                alive[r] = now
                gaps[r].append(gap[r])
                lives[r].append(now)
                gap[r] = now
                move = moves[key]
                if move:  # the input this turn makes, received where another rank runs it
                    arrived[turn + move] = 1
                    peer = peers[key]
                    if peer >= 0:
                        now = alive[peer] + 1
                        alive[peer] = now
                        if now > gap[peer]:
                            gap[peer] = now
                        blocked[peer] = False
            elif turn != EMPTY:  # dualpipe-v's overlapped pair
                pair = divmod(-2 - turn, PAIR)
                if not (arrived[pair[0]] and arrived[pair[1]]):
                    blocked[r] = True
                    continue
                for code in pair:
                    alive[r] -= frees[code % stride]
                gaps[r].append(gap[r])
                lives[r].append(alive[r])
                gap[r] = alive[r]
                for code in pair:
                    key = code % stride
                    move = moves[key]
                    if not move:
                        continue
                    arrived[code + move] = 1
                    peer = peers[key]
                    if peer >= 0:
                        alive[peer] += 1
                        if alive[peer] > gap[peer]:
                            gap[peer] = alive[peer]
                        blocked[peer] = False
            heads[r] = head + 1
            unfinished -= head + 1 == ends[r]
            progress = True
        if not progress:
            return None
    return tuple((tuple(lives[r]), tuple(gaps[r]) + (gap[r],)) for r in range(pp))


def kept_receive_buffers(schedule: str, pp: int, v: int, m: int, rank: int) -> tuple[int, int]:
    """(input buffers, output-gradient buffers) torch's stock `PipelineStage` keeps on pp rank
    `rank` from its first step on (torchtitan's stage; parc's job receives on demand instead).
    torch 2.13 `PipelineStage._setup_forward_recv_info` (called by `_prepare_forward_infra`)
    allocates one input buffer per micro-batch for every stage but the first, and
    `_setup_backward_recv_info` (`_prepare_backward_infra`) one output-gradient buffer per
    micro-batch for every stage but the last; `args_recv_info`/`grad_recv_info` keep them.
    Same-rank hand-offs of the V schedules put the passed tensor in the slot instead
    (`set_local_fwd_input`, `set_local_bwd_input`): the slot still holds one boundary tensor."""
    if pp == 1:
        return 0, 0
    last = pp * v - 1
    stages = [_stage_of(schedule, pp, rank, c) for c in range(v)]
    return m * sum(s != 0 for s in stages), m * sum(s != last for s in stages)


def received_chunks(schedule: str, pp: int, v: int, rank: int) -> tuple[bool, ...]:
    """Per local chunk of `rank`, whether its input comes through a receive buffer (every stage
    but the model's first)."""
    return tuple(_stage_of(schedule, pp, rank, c) != 0 for c in range(v))
