"""Which moment of the schedule sets a stage's peak, named as a user reads a pipeline: the action
(a forward, a full backward, an input or a weight backward), its chunk and micro-batch, how many
chunk-micro-batches are held then and what the moment adds on top of them.

The memory model walks the schedule as undominated states (`schedules.moment_states`,
`model.paired_moment`), which forget when a state happened. This module walks the rank's actions
once more (`schedules.actions`, every micro-batch) and returns the first action at which the
winning state stands, as the model pairs it: a forward or full backward holds its state after a
forward and before a backward (the model charges the chunk's backward working set there, so a
backward is named when one stands at that state), an input or weight backward the state before
it. Only `parc explain` asks (a walk of every action per stage), never search.
"""

from __future__ import annotations

from dataclasses import dataclass

from .schedules import B, F, I, W, actions

KINDS = ("forward or backward", "backward-input", "backward-weight", "idle")
"""`schedules.moment_states`' kinds of moment, in order (3: between computations, a receive)."""

ACTION_NAMES = {F: "forward", B: "backward", I: "backward-input", W: "backward-weight"}


@dataclass(frozen=True)
class PeakMoment:
    """The moment that sets one stage's peak."""

    action: str
    """"forward", "backward", "backward-input", "backward-weight", or "idle" (between
    computations, when a receive arrives)."""
    chunk: int
    """The local chunk (0 = the rank's first in model order) that runs, or ran last when idle."""
    microbatch: int
    """The micro-batch of that action (0-based, as the schedule numbers them)."""
    position: int
    """The action's index in the rank's step (0-based; for "idle", the computation before it)."""
    in_flight: int
    """Chunk-micro-batches whose saved activations are held then."""
    adds: str
    """What the moment adds beyond the activations in flight: the running pass's working set
    ("the backward's working set of chunk 0", "the largest working set of any chunk" where the
    model does not pair), and the receive buffers alive when the schedule pairs them."""
    paired: bool
    """Whether the model paired this moment with its own chunk's working set (else it added the
    largest working set of any chunk to the largest state: one chunk, or nothing to pair)."""

    def json(self) -> dict:
        return {"action": self.action, "chunk": self.chunk, "microbatch": self.microbatch,
                "position": self.position, "in_flight": self.in_flight, "adds": self.adds, "paired": self.paired}


def name_moment(schedule: str, pp: int, v: int, m: int, rank: int, moment: tuple | None) -> PeakMoment | None:
    """The first action of pp rank `rank` at which `moment` (`StageMemory.moment`) stands."""
    if moment is None:
        return None
    held_at, pending_at, chunk_at, kind_at, live = moment
    held_at, pending_at = tuple(held_at), tuple(pending_at)
    paired = kind_at is not None
    held, pending = [0] * v, [0] * v
    seen: dict[str, int] = {}
    first_forward = None
    last = None  # (action, chunk, micro-batch, position) of the last computation, for idle moments
    for position, (kind, chunk) in enumerate(actions(schedule, pp if pp > 1 else 1, v, m, rank)):
        counter = (W if kind == W else F if kind == F else B, chunk)  # B and I number the same backwards
        index = seen.get(counter, 0)
        seen[counter] = index + 1
        if kind == F:
            held[chunk] += 1
        here = (tuple(held), tuple(pending))
        tag = 0 if kind in (F, B) else 1 if kind == I else 2
        if here == (held_at, pending_at) and (not paired or (chunk == chunk_at and tag == kind_at)):
            found = (ACTION_NAMES[kind], chunk, index, position)
            if kind != F:
                return _moment(found, held_at, chunk_at, kind_at, live, v == 1)
            if first_forward is None:
                first_forward = found
        if kind == I:
            pending[chunk] += 1
        elif kind == B:
            held[chunk] -= 1
        elif kind == W:
            held[chunk] -= 1
            pending[chunk] -= 1
        last = (ACTION_NAMES[kind], chunk, index, position)
        if paired and kind_at == 3 and (tuple(held), tuple(pending)) == (held_at, pending_at):
            return _moment(("idle", *last[1:]), held_at, chunk_at, kind_at, live, v == 1)
    if first_forward is not None:
        return _moment(first_forward, held_at, chunk_at, kind_at, live, v == 1)
    return None


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
    return PeakMoment(action=action, chunk=at_chunk, microbatch=index, position=position, in_flight=sum(held),
                      adds=adds, paired=kind is not None)
