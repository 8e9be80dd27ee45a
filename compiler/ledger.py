"""The step's ledger: every collective one rank issues in one optimizer step, and the bytes each
puts on each link class, as frozen records the time model reduces and tests compare.

Why a record and not a number: the time model, the physical bounds and the runtime's recorded
collectives must agree on the same facts (which axis, which collective, how many bytes, how many
times per step, in which overlap window). `timing.dp_ledger` writes the data-parallel part by the
traffic contract of docs/time-model.md; `timing.step_ledger` adds the per-micro-batch traffic of
tp, cp, ep and pp; `link_bytes` splits each record over the links it crosses.

Links (one direction, per GPU):

- `intra`: the fast level (NVLink or NVL72 domain; PCIe when the node has no NVLink);
- `nic`: this GPU's share of its node's NICs. A node's GPUs run the same collectives at once, so
  the bytes leaving a node divided by its GPUs is what each GPU's share must carry.

A group of `n` ranks with `k` inside one fast level spans `N = ceil(n / k)` levels. Hierarchical
ring collectives (NCCL's tree/ring across nodes after a reduce inside each node) move, per GPU,
`(N - 1) / N x S / k` over the NIC for an all-gather or reduce-scatter of S bytes (twice that for
an all-reduce) and `(k - 1) / k x S` (twice) inside the level. An all-to-all sends `(n - k) / n x S`
over the NIC and `(k - 1) / n x S` inside (DeepEP's deduplicated dispatch and combine carry their
own split, `Collective.spread`). A ring of point-to-point sends (ring attention, the
pipeline's chain) crosses a level boundary on one hop in k: `1 / k` of its bytes per GPU on
average go over the NIC. In-network reduction, where the hardware states it, lowers an
all-reduce's bytes: NVLink SHARP (`nvls on`) moves (n + 1) / n x S through the NVSwitch inside a
level (not 2 (n - 1) / n x S), InfiniBand SHARP (`sharp on`) each GPU's 1/k share once into the
fabric's switches (S / k over the NIC, not 2 (N - 1) / N x S / k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send")
PHASES = ("forward", "backward", "recompute", "step")
"""When a path collective runs: in a micro-batch's forward, its backward, the forward again
before the backward under full recomputation, or once per step (`step`)."""
WINDOWS = ("forward", "backward", "last_backward", "after_step", "path")
"""Where a collective may hide: under each micro-batch's forward or backward (`forward`,
`backward`), under the last micro-batch's backward only (`last_backward`: ddp and zero1 reduce
once per step), under the next step's first forward (`after_step`: the post-optimizer gather), or
on the critical path (`path`: tp, cp, ep, pp traffic, whose exposure the per-layer model sets)."""


@dataclass(frozen=True, slots=True)
class Collective:
    """One kind of collective one rank issues: `count` calls per step on a group of `size`
    ranks, `local` of them inside one fast level. `payload` is the full tensor of one call: the
    all-reduced tensor, the gathered tensor of an all-gather, the unreduced tensor of a
    reduce-scatter, the bytes leaving a rank in an all-to-all or a send (a ring of sends: all
    its steps)."""

    axis: str
    kind: str
    payload: float
    count: int
    size: int
    local: int
    window: str
    micro: int = 0
    """Calls per micro-batch (0: issued per step, not per micro-batch)."""
    phase: str = "step"
    """`PHASES`: where in a micro-batch the call runs (the data-parallel gradients' and parameters'
    records: `step`; Transformer Engine's amax all-reduces, on the dp axis: `forward`, `backward`)."""
    spread: tuple[float, float] | None = None
    """An all-to-all that does not send every byte of its payload once to its destination rank:
    the (NVLink, NIC) bytes per GPU as fractions of `payload` (DeepEP's dispatch and combine,
    `kernels.deepep_fractions`). None: a plain all-to-all (the module doc's split)."""
    pairs: bool = False
    """A tp call of the piece's own f/g pairs (`timing.tp_calls`), one a runtime may run beside
    the GEMM that produces or consumes it (`timing.paired_tp_exposed`); extras on the same axis
    (the loss's statistics, the router's gradient) never pair, whatever their size."""

    def scaled(self, times: int) -> Collective:
        """The same calls `times` over (a piece's records for all the layers of one kind)."""
        return Collective(self.axis, self.kind, self.payload, self.count * times, self.size, self.local,
                          self.window, self.micro * times, self.phase, self.spread, self.pairs)

    def per_step(self, microbatches: int) -> Collective:
        """A micro-batch's record (count = calls per micro-batch) over a step."""
        return Collective(self.axis, self.kind, self.payload, self.count * microbatches, self.size, self.local,
                          self.window, self.count, self.phase, self.spread, self.pairs)

    @property
    def sent(self) -> float:
        """Bytes this rank sends per call (ring algorithms; docs/time-model.md)."""
        n = self.size
        if n <= 1 or self.payload <= 0:
            return 0.0
        if self.spread is not None:
            return sum(self.spread) * self.payload
        if self.kind == "all_reduce":
            return 2 * (n - 1) / n * self.payload
        if self.kind == "send":
            return self.payload
        return (n - 1) / n * self.payload

    @property
    def sent_per_step(self) -> float:
        return self.count * self.sent

    @property
    def hbm_bytes(self) -> float:
        """HBM bytes one call moves on this rank: it reads its input buffer and writes its output
        once (an all-gather reads its shard and writes the gathered tensor, a reduce-scatter the
        reverse; an all-reduce and an all-to-all read and write the whole tensor; a send is read
        by its sender and written by its receiver, which in a ring is this rank too)."""
        n, s = self.size, self.payload
        if n <= 1 or s <= 0:
            return 0.0
        if self.kind in ("all_gather", "reduce_scatter"):
            return s + s / n
        return 2 * s

    def link_bytes(self, in_network: tuple[bool, bool] = (False, False)) -> tuple[float, float]:
        """(intra, nic) bytes this rank's GPU carries per call, by the rules of the module doc.
        `in_network` (NVLS, SHARP), where the hardware states them: an all-reduce may move
        (n + 1)/n of its buffer through the NVSwitch inside a level, and each GPU its 1/k share
        once into the fabric's switches across levels (`timing.Link.nvls_all_reduce`,
        `sharp_all_reduce`); the fewer of those and the ring's bytes count, so the bound holds
        whichever NCCL picks."""
        n, k, s = self.size, min(self.local, self.size), self.payload
        if n <= 1 or s <= 0:
            return 0.0, 0.0
        if self.kind == "send":
            return (s, 0.0) if k >= n else (s - s / k, s / k)
        if self.spread is not None:
            return self.spread[0] * s, self.spread[1] * s
        if self.kind == "all_to_all":
            return (k - 1) / n * s, (n - k) / n * s
        twice = 2 if self.kind == "all_reduce" else 1
        nvls, sharp = in_network if self.kind == "all_reduce" else (False, False)
        if k >= n:
            ring = twice * (n - 1) / n * s
            return (min(ring, (n + 1) / n * s) if nvls else ring), 0.0
        levels = math.ceil(n / k)
        intra, nic = twice * (k - 1) / k * s, twice * (levels - 1) / levels * s / k
        return (min(intra, (k + 1) / k * s) if nvls and k > 1 else intra), (min(nic, s / k) if sharp else nic)


def merged(records: list[Collective] | tuple[Collective, ...]) -> tuple[Collective, ...]:
    """Records of the same call (axis, kind, payload, group, window, phase) summed into one,
    in first-seen order (deterministic): a rank's pieces issue the same calls layer after layer."""
    out: dict[tuple, Collective] = {}
    for c in records:
        if c.count <= 0:
            continue
        key = (c.axis, c.kind, c.payload, c.size, c.local, c.window, c.phase, c.spread)
        seen = out.get(key)
        out[key] = c if seen is None else Collective(c.axis, c.kind, c.payload, seen.count + c.count, c.size,
                                                      c.local, c.window, seen.micro + c.micro, c.phase, c.spread,
                                                      seen.pairs and c.pairs)
    return tuple(out.values())


OPS = ("gemm", "attention", "memory", "optimizer")
"""Compute op kinds: matrix products (GEMMs), the attention core (flash: the causal half),
memory-bound kernels (norms, activations, residuals, RoPE, softmax, casts, the embedding, the
loss), the optimizer step (bytes only)."""


@dataclass(frozen=True, slots=True)
class Compute:
    """One kind of computation one rank does in one step: FLOPs of the forward, the backward
    (input and weight gradients) and the recomputation, and the HBM bytes of memory-bound
    kernels (forward plus backward plus recomputation). `hbm_bytes` is every byte the op kind
    reads and writes in HBM over the step, forward, backward and recomputation (`hbm.py`,
    GEMM operands and attention IO included). FLOPs are those the runtime executes:
    GEMMs as shaped on this rank (tp shards, routed tokens), attention with the causal half
    skipped; memory-bound kernels carry bytes, not FLOPs."""

    op: str
    forward: float = 0.0
    backward: float = 0.0
    recompute: float = 0.0
    hbm_bytes: float = 0.0

    @property
    def flops(self) -> float:
        return self.forward + self.backward + self.recompute


@dataclass(frozen=True, slots=True)
class Ledger:
    """The collectives and the compute of one rank over one step."""

    collectives: tuple[Collective, ...]
    compute: tuple[Compute, ...] = ()
    host_bytes: float = 0.0
    """Bytes over the GPU's link to host memory per step, both directions: activation
    offloading's copies out in the forward and back in the backward (`timing.offload_bytes`)."""

    def sent(self, axis: str) -> float:
        return sum(c.sent_per_step for c in self.collectives if c.axis == axis)

    def flops(self, op: str | None = None) -> float:
        """FLOPs per step on this rank, of one op kind or of all."""
        return sum(x.flops for x in self.compute if op is None or x.op == op)

    def hbm_bytes(self, op: str | None = None) -> float:
        """HBM bytes per step on this rank: of one compute op kind, of the collectives'
        buffers (`"collectives"`), or of everything (the HBM bound's numerator)."""
        out = 0.0
        if op is None or op == "collectives":
            out += sum(c.count * c.hbm_bytes for c in self.collectives)
        if op != "collectives":
            out += sum(x.hbm_bytes for x in self.compute if op is None or x.op == op)
        return out

    def link_bytes(self, axis: str | None = None,
                   in_network: tuple[bool, bool] = (False, False)) -> tuple[float, float]:
        """(intra, nic) bytes per step, of one axis or of all (`in_network`: the hardware's NVLS
        and SHARP, `Collective.link_bytes`)."""
        intra = nic = 0.0
        for c in self.collectives:
            if axis is None or c.axis == axis:
                a, b = c.link_bytes(in_network)
                intra += c.count * a
                nic += c.count * b
        return intra, nic


@dataclass(frozen=True, slots=True)
class Bounds:
    """Seconds one step cannot undercut on one rank, each from one physical resource:
    `intra` and `nic` the ledger's bytes over each link class's datasheet bandwidth."""

    intra: float
    nic: float
    host: float = 0.0
    """The ledger's host-link bytes over the GPU's share of that link (activation offloading).
    Not in `links`: the collectives' floor; the offload's own exposure keeps the step above it."""

    @property
    def links(self) -> float:
        return max(self.intra, self.nic)
