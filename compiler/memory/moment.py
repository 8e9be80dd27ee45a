"""Which moment of the schedule sets a stage's peak, named as a user reads a pipeline: the action
(a forward, a full backward, an input or a weight backward), its chunk and micro-batch, how many
chunk-micro-batches are held then and what the moment adds on top of them.

The memory model walks the schedule as undominated states (`schedules.moment_states`,
`model.paired_moment`), which forget when a state happened. This module walks the rank's actions
once more (on the model's shorter walk, renumbered as in the full step) and returns the first action at which the
winning state stands, as the model pairs it: a forward or full backward holds its state after a
forward and before a backward (the model charges the chunk's backward working set there, so a
backward is named when one stands at that state), an input or weight backward the state before
it. Only `parc explain` asks, never search.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .schedules import B, F, I, W, actions, rounds, walk_microbatches

KINDS = ("forward or backward", "backward-input", "backward-weight", "idle")
"""`schedules.moment_states`' kinds of moment, in order (3: between computations, a receive)."""

ACTION_NAMES = {F: "forward", B: "backward", I: "backward-input", W: "backward-weight"}

MAX_WALKED = 200_000
"""Micro-batches x chunks x pp ranks up to which a step is walked. Every schedule but gpipe walks
`schedules.walk_microbatches`' shorter step (a few hundred micro-batches at most), as the model
does; gpipe's walk is the whole step, and past this its moment is not named."""


@dataclass(frozen=True)
class PeakMoment:
    """The moment that sets one stage's peak."""

    action: str
    """"forward", "backward", "backward-input", "backward-weight", or "idle" (between
    computations, when a receive arrives)."""
    chunk: int
    """The local chunk (0 = the rank's first in model order) that runs, or ran last when idle."""
    microbatch: int | None
    """The micro-batch of that action (0-based, as the schedule numbers them); None where the
    shorter walk's action cannot be placed in the full step (`_full_numbering`) or gpipe's step
    is too long to walk (`MAX_WALKED`)."""
    position: int | None
    """The action's index in the rank's step (0-based; for "idle", the computation before it);
    None as `microbatch`."""
    in_flight: int
    """Chunk-micro-batches whose saved activations are held then."""
    adds: str
    """What the moment adds beyond the activations in flight: the running pass's working set
    ("the backward's working set of chunk 0", "the largest working set of any chunk" where the
    model does not pair), and the receive buffers alive when the schedule pairs them."""
    paired: bool
    """Whether the model paired this moment with its own chunk's working set (else it added the
    largest working set of any chunk to the largest state: one chunk, or nothing to pair)."""
    receive_buffers: int | None = None
    """Pipelining's receive buffers alive at the moment, where the model pairs them (else None:
    the stage's `p2p` is the most it holds, `model.p2p_buffers`)."""
    bound: bool = False
    """Whether the figure at this moment is the model's bound rather than what the action holds:
    a forward named because no backward stands at the winning state (with its receives) is
    charged its chunk's backward working set (`schedules.moment_states`' kind 0 pairs the two);
    the forward's own working set is smaller, so the stage's true peak at that state is at most
    the figure."""
    backward_of_step: int | None = None
    """On a rank that runs no forward between its first two backwards (`model.relieved_split`):
    1 where the peak is the step's first backward (every micro-batch in flight, the accumulated
    gradients it has not made yet left out), 2 where it is the second (every accumulated
    gradient, one micro-batch fewer in flight); None elsewhere."""
    embedding: bool = False
    """Whether that backward's peak is the embedding's backward rather than a layer's."""

    def json(self) -> dict:
        return {"action": self.action, "chunk": self.chunk, "microbatch": self.microbatch,
                "position": self.position, "in_flight": self.in_flight, "adds": self.adds, "paired": self.paired,
                "receive_buffers": self.receive_buffers, "bound": self.bound,
                "backward_of_step": self.backward_of_step, "embedding_backward": self.embedding}


def name_moment(schedule: str, pp: int, v: int, m: int, rank: int, moment: tuple | None,
                relieved: tuple[int, bool] = (0, False)) -> PeakMoment | None:
    """The first action of pp rank `rank` at which `moment` (`StageMemory.moment`) stands, with
    the receive buffers alive then where the model paired them (a forward or full backward
    matches first; a forward only where no backward stands at the state). `relieved`:
    (`StageMemory.backward_of_step`, `StageMemory.embedding_peak`); at the second backward the
    moment's state already holds one micro-batch fewer, so the action found is that backward.

    Found on the model's own shorter walk (`schedules.walk_microbatches`: the same warm-up, a few
    repetitions of the steady pattern, the same cool-down; its receive trace is the one the model
    lowered), then numbered as in the full step (`_full_numbering`), so a long step costs no more
    than the model's walk."""
    if moment is None:
        return None
    held_at, pending_at, chunk_at, kind_at, live_at = moment
    want = (tuple(held_at), tuple(pending_at))
    walked = walk_microbatches(schedule, pp, m) if schedule != "gpipe" else m
    if walked * v * max(pp, 1) > MAX_WALKED:
        return None
    receives = live_at is not None
    walk = list(moments_walked(schedule, pp, v, walked, rank, receives))
    first_forward = found = None
    for at, (action, chunk, _, _, state, tag, live) in enumerate(walk):
        if state != want or (kind_at is not None and (tag != kind_at or live != live_at)):
            continue
        if kind_at is not None and kind_at != 3 and chunk != chunk_at:  # idle: the chunk that ran last,
            continue  # which `receive_moments` does not keep (it files every idle moment under the last chunk)
        if action != "forward":
            found = at
            break
        if first_forward is None:
            first_forward = at
    found = first_forward if found is None else found
    if found is None:
        return None
    named = walk[found][:4]
    if walked != m:
        named = _full_numbering(schedule, pp, v, m, walked, rank, walk, found)
    found = _moment(named, want[0], chunk_at, kind_at, live_at, v == 1)
    return with_relief(found, *relieved) if relieved[0] else found


def with_relief(moment: PeakMoment, backward_of_step: int, embedding: bool) -> PeakMoment:
    """`moment` said as the first or second backward of the step (`model.relieved_split`): which
    backward's working set and which accumulated gradients the bytes hold."""
    what = "the embedding's backward" if embedding else "a layer's backward"
    if backward_of_step == 2:
        adds = (f"{what}'s working set, in the step's second backward: every accumulated gradient held, "
                "one micro-batch fewer in flight than at the first")
    else:
        adds = (f"{what}'s working set, in the step's first backward: the accumulated gradients it has "
                "not made yet left out")
    return replace(moment, adds=adds, backward_of_step=backward_of_step, embedding=embedding)


def _full_numbering(schedule: str, pp: int, v: int, m: int, walked: int, rank: int, walk: list,
                    at: int) -> tuple:
    """The moment `walk[at]` of the `walked`-micro-batch walk as (action, chunk, micro-batch,
    position) of the m-micro-batch step. The step is the walk with more repetitions of its steady
    pattern. A moment before the first forward of the walk's last repetition (micro-batch
    walked - step on) stands at the same place in the step: every longer walk shares that part,
    the receives torch posts ahead included. A moment from there on is in the part the walk shares
    with the step's end: it stands as far from the end, its position moved on by the actions each
    added micro-batch adds and its micro-batch by how often its pass and chunk run per added
    micro-batch (counted on a walk one repetition longer, actions only). It is the step's first
    occurrence: a state of the steady pattern recurs at every repetition, so one seen first at the
    end is not in the middle. Both parts were measured on walks one repetition longer (receives
    included: they agree from 2 moments past that forward on, and the shared end starts 20 or
    more before it, pp 2-16, m up to 256), and the result is checked against the full step's own
    walk on a grid (tests/test_peak_moment.py)."""
    action, chunk, index, position = walk[at][:4]
    step = rounds(pp, m)[1] if schedule in ("interleaved-1f1b", "interleaved-zb") else 1
    if all(x[0] != "forward" or x[2] < walked - step for x in walk[:at + 1]):
        return action, chunk, index, position
    short, longer = actions(schedule, pp, v, walked, rank), actions(schedule, pp, v, walked + step, rank)
    counted = _counter(short[position])
    per_microbatch, odd = divmod(len(longer) - len(short), step)
    more, odd_count = divmod(sum(_counter(a) == counted for a in longer) - sum(_counter(a) == counted for a in short),
                             step)
    if odd or odd_count:  # no whole number of actions per micro-batch: not the pattern assumed
        return action, chunk, None, None
    return action, chunk, index + (m - walked) * more, position + (m - walked) * per_microbatch


def _counter(action: tuple[str, int]) -> tuple[str, int]:
    """What numbers an action's micro-batch: its pass (an input backward numbers as a full one)
    and chunk."""
    kind, chunk = action
    return (W if kind == W else F if kind == F else B), chunk


def moments_walked(schedule: str, pp: int, v: int, m: int, rank: int, receives: bool):
    """Every moment of the rank's step in order, as (action, chunk, micro-batch, position,
    (held, pending), kind, receive buffers alive or None): the walk `schedules.moment_states`
    and `receive_moments` make, on every micro-batch and without dropping dominated moments."""
    from . import schedules

    trace = schedules._receive_trace(schedule, pp, v, m) if receives and pp > 1 else None
    lives = gaps = sizes = None
    if trace is not None:
        lives, gaps = trace[rank]
        sizes = schedules.turn_sizes(schedule, pp, v, m, rank)
    held, pending = [0] * v, [0] * v
    numbered: dict[tuple[str, int], int] = {}
    turn = used = 0
    for position, (kind, chunk) in enumerate(actions(schedule, pp, v, m, rank)):
        counter = _counter((kind, chunk))  # B and I number the same backwards
        index = numbered.get(counter, 0)
        numbered[counter] = index + 1
        if kind == W:
            live = gaps[turn] if trace is not None else None
            yield ACTION_NAMES[kind], chunk, index, position, (tuple(held), tuple(pending)), 2, live
            held[chunk] -= 1
            pending[chunk] -= 1
            continue
        if kind == F:
            held[chunk] += 1
        live = lives[turn] if trace is not None else None
        yield ACTION_NAMES[kind], chunk, index, position, (tuple(held), tuple(pending)), int(kind == I), live
        if kind == I:
            pending[chunk] += 1
        elif kind == B:
            held[chunk] -= 1
        if trace is not None:
            used += 1
            if used == sizes[turn]:
                turn, used = turn + 1, 0
                # between computations: a receive arrives; the state after the turn
                yield "idle", chunk, index, position, (tuple(held), tuple(pending)), 3, gaps[turn]


def _moment(found: tuple, held: tuple, chunk: int | None, kind: int | None, live: int | None,
            single: bool) -> PeakMoment:
    action, at_chunk, index, position = found
    if kind is None:  # unpaired: one chunk's backward working set, or the largest of the chunks'
        adds = "the backward's working set" if single else "the largest working set of any chunk"
    elif kind == 3:
        adds = "no working set"
    else:
        passes = ("backward", "input backward", "weight backward")[kind]
        adds = f"the {passes}'s working set of chunk {chunk}"
    if live is not None:
        adds += f" and {live} receive buffer{'s' if live != 1 else ''} alive"
    bound = action == "forward" and kind in (0, None)
    if bound:  # no backward stands at that state (with those receives): the figure is a bound
        adds += " (the model's bound: it charges a forward its chunk's backward working set)"
    return PeakMoment(action=action, chunk=at_chunk, microbatch=index, position=position, in_flight=sum(held),
                      adds=adds, paired=kind is not None, receive_buffers=live, bound=bound)
