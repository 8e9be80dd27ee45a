"""A replay of torch's CUDA caching allocator: what `torch.cuda.max_memory_reserved()` would
report for a rank, given the sizes and order of its allocations and frees.

The memory model predicts reserved memory as the tensors' peak plus sourced overheads, the
allocator's rounding and fragmentation taken as a flat share of HBM (`gpu.FRAGMENTATION`). The
rehearsal (`parc rehearse`) records one rank's allocation sequence on fake tensors, and this
module replays it through the allocator's policy, so the reserve and the fragmentation of that
sequence are computed rather than assumed. Pure Python: the compiler never imports torch.

The policy is DeviceCachingAllocator's in pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp
(read at commit 001074d25084fdb87a799823e395a50f5ec044d3; functions named, as line numbers
drift), with the default configuration (no `PYTORCH_CUDA_ALLOC_CONF`):

- `round_size`: a request under kMinBlockSize = 512 bytes takes 512, any other is rounded up to
  a multiple of 512 (`roundup_power2_divisions` is off by default);
- `get_pool`: a rounded size <= kSmallSize = 1 MiB is served from the small pool, a larger one
  from the large pool; freed blocks of one pool never serve the other;
- `get_allocation_size`: a new segment (cudaMalloc) is kSmallBuffer = 2 MiB for the small pool,
  kLargeBuffer = 20 MiB for a request under kMinLargeAlloc = 10 MiB, and the request rounded up
  to kRoundLarge = 2 MiB otherwise;
- `get_free_block`: best fit, the smallest cached block of the pool at least the request's size
  (BlockComparatorSize: size, then address);
- `should_split`: the small pool splits when at least 512 bytes remain; the large pool when more
  than kSmallSize = 1 MiB remains (otherwise the whole block is handed out and counts as
  allocated); `alloc_found_block`: the request takes the block's front, the remainder stays
  cached behind it;
- `free_block` / `try_merge_blocks`: a freed block merges with its free neighbours of the same
  segment; segments are never returned to the driver while memory lasts;
- `malloc` / `alloc_block`: with no fitting cached block, a new segment; when that would pass
  the device's limit, `release_cached_blocks` frees every cached block that is a whole segment
  (`release_blocks`: `!block->prev && !block->next`), and the segment is tried again; past the
  limit still, the run is out of memory (`replay` stops there and names the event);
- `max_split_size` (PYTORCH_CUDA_ALLOC_CONF max_split_size_mb, with its oversize-block rules and
  `release_available_cached_blocks`) is off by default; nothing parc writes sets it, and it is
  not modelled.

Expandable segments (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, what torchtitan's
run_train.sh exports and what parc's generated train.py sets unless the job's environment says
otherwise: `policy_of`) change the policy, same file and commit:

- `ExpandableSegment`: one segment per pool per stream, a range of virtual addresses (1.125x the
  device's memory, `max_handles_`) of which pages are mapped to physical memory on demand;
  `alloc_block` calls `try_allocate_expandable_block` instead of cudaMalloc, and the page is
  the segment's `segment_size_`: kSmallBuffer = 2 MiB for the small pool, kLargeBuffer =
  20 MiB for the large one (`find_expandable_block`);
- `find_expandable_block`: the lowest-addressed unmapped block, started at the free mapped block
  before it when there is one, with enough free-or-unmapped room behind it; `map_block` maps
  whole pages (`ExpandableSegment::map`: `segmentLeft`..`segmentRight`) from the block's start,
  merges the mapped part with its free neighbours, and counts it reserved;
- `get_free_block`: best fit still, but the free block at the edge of the mapped part is taken
  by its `expandable_size` (its size and the unmapped room behind it), so any other cached block
  that fits comes first;
- `should_split`: with expandable segments the large pool too splits when 512 bytes remain;
- `release_cached_blocks` / `release_expandable_segment_block` / `unmap_block`: at the limit,
  every free block's whole pages are unmapped (its unaligned ends stay mapped), and the mapping
  is tried again.

Freed blocks of one pool lie side by side in one segment and merge (`try_merge_blocks`), so
the tensors' order rather than their sizes decides what is reused: the reserve beyond the
allocated peak is what the holes between live tensors leave, with pages of 20 MiB, not
segments of each request's size.

One stream: the caching allocator keeps freed blocks per stream (BlockComparatorSize compares
the stream first) and a tensor used on another stream is freed only when that stream's work is
done (`recordStream`, `insert_events`). FSDP2 all-gathers and reduce-scatters on streams of its
own; the rehearsal's fake tensors have no streams, so every request is replayed on one, which
lets blocks be reused across what would be streams on a GPU: the replay's reserve is a floor in
that respect (docs/memory-model.md, "Replaying the caching allocator").
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

K_MIN_BLOCK_SIZE = 512
"""kMinBlockSize: every size is rounded to a multiple of it."""
K_SMALL_SIZE = 1 << 20
"""kSmallSize: the largest request served from the small pool (1 MiB)."""
K_SMALL_BUFFER = 2 << 20
"""kSmallBuffer: the small pool's segments (2 MiB)."""
K_LARGE_BUFFER = 20 << 20
"""kLargeBuffer: the segment of a large request under kMinLargeAlloc (20 MiB)."""
K_MIN_LARGE_ALLOC = 10 << 20
"""kMinLargeAlloc: requests from 1 MiB up to this share 20 MiB segments (10 MiB)."""
K_ROUND_LARGE = 2 << 20
"""kRoundLarge: larger requests get a segment of their size rounded up to this (2 MiB)."""
ADDRESS_SPACE = 1 << 56
"""An expandable segment's virtual range when the replay has no limit: never the bound."""

DEFAULT = "default"
EXPANDABLE = "expandable"
POLICIES = (DEFAULT, EXPANDABLE)
GENERATED_ALLOC_CONF = "expandable_segments:True"
"""What parc's generated train.py sets PYTORCH_CUDA_ALLOC_CONF to when the environment has no
value of its own (torchtitan's run_train.sh exports the same)."""


def alloc_conf_of(env: dict[str, str] | None) -> tuple[str, str]:
    """The allocator variable a job whose ranks see `env` runs under, and its value: the spec's
    PYTORCH_ALLOC_CONF, else its PYTORCH_CUDA_ALLOC_CONF (torch >= 2.9 reads the first first:
    c10/core/AllocatorConfig.h), else what the generated train.py sets (`GENERATED_ALLOC_CONF`).
    `parc explain` names it beside its predicted `max_memory_reserved`, so that a reader knows
    which policy that figure is for."""
    env = env or {}
    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        if name in env:
            return name, env[name]
    return "PYTORCH_CUDA_ALLOC_CONF", GENERATED_ALLOC_CONF


def policy_of(env: dict[str, str] | None) -> str:
    """The allocator policy of a job whose ranks see the environment `env` (the spec's
    `launch { env ... }`): the policy the `expandable_segments` option selects (its parser,
    AcceleratorAllocatorConfig::parseExpandableSegments, takes True or False) in
    PYTORCH_ALLOC_CONF, else in PYTORCH_CUDA_ALLOC_CONF (torch >= 2.9 reads both, the first
    first: c10/core/AllocatorConfig.h), and when neither is set, the generated train.py's own
    `GENERATED_ALLOC_CONF`. A value exported by the submitting shell is not in the spec: the
    replay cannot see it."""
    _, text = alloc_conf_of(env)
    found = DEFAULT
    for item in text.replace(" ", "").split(","):
        key, _, value = item.partition(":")
        if key == "expandable_segments":
            found = EXPANDABLE if value == "True" else DEFAULT
    return found


class OutOfMemory(Exception):
    """The replay needed a segment past the device's limit after releasing every cached one
    (`Replay.malloc`'s; `replay` catches it and records where)."""


def round_size(size: int) -> int:
    """`round_size`: at least 512 bytes, a multiple of 512."""
    if size < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return K_MIN_BLOCK_SIZE * -(-size // K_MIN_BLOCK_SIZE)


def allocation_size(size: int) -> int:
    """`get_allocation_size`: the segment a rounded request asks cudaMalloc for."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * -(-size // K_ROUND_LARGE)


@dataclass(eq=False)
class Block:
    """A piece of a segment: allocated or cached. `prev`/`next` are its neighbours in the segment."""

    address: int
    size: int
    small: bool
    allocated: bool = False
    mapped: bool = True
    """False: a stretch of an expandable segment's addresses with no memory behind it."""
    prev: Block | None = None
    next: Block | None = None

    def key(self) -> tuple[int, int]:
        return (self.size, self.address)


@dataclass
class Replay:
    """The caching allocator's state and statistics over a replayed sequence."""

    limit: int | None = None
    """The device's memory for the allocator (bytes); None: unlimited (never out of memory)."""
    policy: str = DEFAULT
    """DEFAULT: cudaMalloc'd segments; EXPANDABLE: expandable segments (`policy_of`)."""
    reserved: int = 0
    allocated: int = 0
    requested: int = 0
    max_reserved: int = 0
    max_allocated: int = 0
    max_requested: int = 0
    allocated_at_max_reserved: int = 0
    segments: int = 0
    cuda_mallocs: int = 0
    retries: int = 0
    """`num_alloc_retries`: segments obtained only after releasing the cached ones."""
    out_of_memory: dict | None = None
    """Where the replay ran out of memory (`replay`'s record), or None: it ran to the end."""
    _free: dict = field(default_factory=lambda: {True: [], False: []})
    """Per pool (small?), the cached blocks as sorted (size, address, block) entries."""
    _next_address: int = 0
    _unmapped: dict = field(default_factory=dict)
    """Expandable segments only: per pool, the unmapped blocks as sorted (address, block) entries."""

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown allocator policy {self.policy!r}")
        if self.policy == EXPANDABLE:
            # one segment per pool (one stream), all of it unmapped: its addresses are the pool's own
            space = ADDRESS_SPACE if self.limit is None else self.limit + self.limit // 8 + K_LARGE_BUFFER
            self._unmapped = {small: [(0, Block(address=0, size=space, small=small, mapped=False))]
                              for small in (True, False)}

    # -- the pools ------------------------------------------------------------------------------

    def _insert(self, block: Block) -> None:
        bisect.insort(self._free[block.small], (block.size, block.address, block))

    def _remove(self, block: Block) -> None:
        pool = self._free[block.small]
        at = bisect.bisect_left(pool, (block.size, block.address))
        assert pool[at][2] is block
        del pool[at]

    def _best_fit(self, size: int, small: bool) -> Block | None:
        """`get_free_block`: the smallest cached block of the pool that holds `size`."""
        pool = self._free[small]
        at = bisect.bisect_left(pool, (size, -1))
        if at == len(pool):
            return None
        block = pool[at][2]
        del pool[at]
        return block

    def _should_split(self, block: Block, size: int) -> bool:
        remaining = block.size - size
        if block.small or self.policy == EXPANDABLE:
            return remaining >= K_MIN_BLOCK_SIZE
        return remaining > K_SMALL_SIZE

    # -- segments -------------------------------------------------------------------------------

    def _new_segment(self, size: int, small: bool) -> Block:
        """`alloc_block`, with `release_cached_blocks` and one retry at the limit."""
        grant = allocation_size(size)
        if self.limit is not None and self.reserved + grant > self.limit:
            self._release_cached_segments()
            self.retries += 1
            if self.reserved + grant > self.limit:
                raise OutOfMemory(grant)
        block = Block(address=self._next_address, size=grant, small=small)
        self._next_address += grant
        self.reserved += grant
        self.segments += 1
        self.cuda_mallocs += 1
        return block

    def _release_cached_segments(self) -> None:
        """`release_blocks` on both pools: cudaFree every cached block that is a whole segment."""
        for small in (True, False):
            kept = []
            for entry in self._free[small]:
                block = entry[2]
                if block.prev is None and block.next is None:
                    self.reserved -= block.size
                    self.segments -= 1
                else:
                    kept.append(entry)
            self._free[small] = kept

    # -- expandable segments ----------------------------------------------------------------------

    @staticmethod
    def _expandable_size(block: Block) -> int:
        """`get_free_block`'s `expandable_size`: the block and the unmapped room right behind it."""
        after = block.next
        return block.size + (after.size if after is not None and not after.mapped else 0)

    def _best_fit_expandable(self, size: int, small: bool) -> Block | None:
        """`get_free_block` with expandable segments: from the smallest fitting block, step to the
        next larger while that one's expandable size is smaller (the block at the mapped edge is
        taken only when nothing else fits)."""
        pool = self._free[small]
        at = bisect.bisect_left(pool, (size, -1))
        if at == len(pool):
            return None
        while at + 1 < len(pool) and self._expandable_size(pool[at + 1][2]) < self._expandable_size(pool[at][2]):
            at += 1
        block = pool[at][2]
        del pool[at]
        return block

    def _page(self, small: bool) -> int:
        """`segment_size_`: kSmallBuffer for the small pool, kLargeBuffer for the large one."""
        return K_SMALL_BUFFER if small else K_LARGE_BUFFER

    def _find_expandable(self, size: int, small: bool) -> Block:
        """`find_expandable_block`: the lowest unmapped block (with the free block before it, if
        any) that has `size` bytes of free or unmapped room from its start."""
        for _, block in self._unmapped[small]:
            start = block.prev if block.prev is not None and not block.prev.allocated else block
            room, cursor = 0, start
            while room < size and cursor is not None and not cursor.allocated:
                room += cursor.size
                cursor = cursor.next
            if room >= size:
                return start
        raise OutOfMemory(size)  # the segment's whole address range is in use

    def _map(self, block: Block, size: int) -> Block:
        """`map_block`: map the whole pages that cover `size` bytes from the unmapped `block`'s
        start, merge them with free mapped neighbours, cache the result and return it."""
        page = self._page(block.small)
        grant = min(block.size, page * -(-size // page))
        if self.limit is not None and self.reserved + grant > self.limit:
            raise OutOfMemory(grant)
        pool = self._unmapped[block.small]
        del pool[bisect.bisect_left(pool, (block.address,))]
        if grant < block.size:
            rest = Block(address=block.address + grant, size=block.size - grant, small=block.small, mapped=False,
                         prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = grant
            bisect.insort(pool, (rest.address, rest))
        block.mapped = True
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.mapped and not neighbour.allocated:
                self._remove(neighbour)
                self._absorb(block, neighbour)
        self._insert(block)
        self.reserved += grant
        self.cuda_mallocs += 1
        return block

    @staticmethod
    def _absorb(block: Block, neighbour: Block) -> None:
        """`try_merge_blocks`: `block` takes over its neighbour's bytes."""
        if neighbour is block.prev:
            block.address, block.prev = neighbour.address, neighbour.prev
            if block.prev is not None:
                block.prev.next = block
        else:
            block.next = neighbour.next
            if block.next is not None:
                block.next.prev = block
        block.size += neighbour.size

    def _expand(self, size: int, small: bool) -> Block:
        """`alloc_block` -> `try_allocate_expandable_block`, with `release_cached_blocks` and one
        retry at the limit."""
        try:
            return self._try_expand(size, small)
        except OutOfMemory:
            self._unmap_cached()
            self.retries += 1
            return self._try_expand(size, small)

    def _try_expand(self, size: int, small: bool) -> Block:
        block = self._find_expandable(size, small)
        if not block.mapped:
            block = self._map(block, min(block.size, size))
        while block.size < size:
            block = self._map(block.next, min(size - block.size, block.next.size))
        self._remove(block)
        self.segments = sum(1 for s in (True, False) if self._mapped_bytes(s))
        return block

    def _mapped_bytes(self, small: bool) -> bool:
        """Whether the pool's segment has any page mapped."""
        pool = self._unmapped[small]
        return not (len(pool) == 1 and pool[0][1].prev is None and pool[0][1].next is None)

    def _unmap_cached(self) -> None:
        """`release_cached_blocks` with expandable segments (`release_expandable_segment_block`,
        `unmap_block`): every cached block's whole pages are unmapped; the unaligned head and tail
        stay mapped and cached."""
        for small in (True, False):
            page = self._page(small)
            for _, _, block in list(self._free[small]):
                begin = page * -(-block.address // page)
                end = page * ((block.address + block.size) // page)
                if end <= begin:
                    continue
                self._remove(block)
                head, tail = begin - block.address, block.address + block.size - end
                if head:
                    self._insert(self._split_front(block, head))
                if tail:
                    back = self._split_front(block, end - begin)
                    back, block = block, back  # `block` is now the [begin, end) piece
                    self._insert(back)
                block.mapped = False
                self.reserved -= end - begin
                for neighbour in (block.prev, block.next):
                    if neighbour is not None and not neighbour.mapped:
                        self._unmapped[small].pop(bisect.bisect_left(self._unmapped[small], (neighbour.address,)))
                        self._absorb(block, neighbour)
                bisect.insort(self._unmapped[small], (block.address, block))

    @staticmethod
    def _split_front(block: Block, size: int) -> Block:
        """Cut the first `size` bytes off `block` into a new block before it (same state)."""
        front = Block(address=block.address, size=size, small=block.small, allocated=block.allocated,
                      mapped=block.mapped, prev=block.prev, next=block)
        if block.prev is not None:
            block.prev.next = front
        block.prev = front
        block.address += size
        block.size -= size
        return front

    # -- requests -------------------------------------------------------------------------------

    def malloc(self, requested: int) -> Block:
        """`malloc`: a block for a request of `requested` bytes."""
        size = round_size(requested)
        small = size <= K_SMALL_SIZE
        if self.policy == EXPANDABLE:
            block = self._best_fit_expandable(size, small) or self._expand(size, small)
        else:
            block = self._best_fit(size, small) or self._new_segment(size, small)
        if self._should_split(block, size):
            rest = Block(address=block.address + size, size=block.size - size, small=small, prev=block,
                         next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.requested += requested
        self.max_allocated = max(self.max_allocated, self.allocated)
        self.max_requested = max(self.max_requested, self.requested)
        if self.reserved > self.max_reserved:
            self.max_reserved, self.allocated_at_max_reserved = self.reserved, self.allocated
        elif self.reserved == self.max_reserved:
            self.allocated_at_max_reserved = max(self.allocated_at_max_reserved, self.allocated)
        return block

    def free(self, block: Block, requested: int) -> None:
        """`free_block`: back to its pool, merged with free neighbours (`try_merge_blocks`)."""
        block.allocated = False
        self.allocated -= block.size
        self.requested -= requested
        before, after = block.prev, block.next
        if before is not None and not before.allocated and before.mapped:
            self._remove(before)
            block.address, block.size, block.prev = before.address, before.size + block.size, before.prev
            if block.prev is not None:
                block.prev.next = block
        if after is not None and not after.allocated and after.mapped:
            self._remove(after)
            block.size += after.size
            block.next = after.next
            if block.next is not None:
                block.next.prev = block
        self._insert(block)

    @property
    def reserved_beyond_allocated_peak(self) -> int:
        """`max_memory_reserved` less `max_memory_allocated`: what the allocator reserves beyond the
        most the tensors (rounded to its blocks) ever held: its rounding, the unsplit tails of
        blocks and cached blocks no request could use. The one fragmentation figure parc reports
        (`parc rehearse`'s "beyond peak", docs/memory-model.md), set against the model's
        allowance, which is likewise added to the peak of tensors."""
        return self.max_reserved - self.max_allocated

    def json(self) -> dict:
        return {"max_reserved_bytes": self.max_reserved, "max_allocated_bytes": self.max_allocated,
                "max_requested_bytes": self.max_requested,
                "allocated_at_max_reserved_bytes": self.allocated_at_max_reserved,
                "reserved_beyond_allocated_peak_bytes": self.reserved_beyond_allocated_peak,
                "segments": self.segments, "cuda_mallocs": self.cuda_mallocs, "alloc_retries": self.retries,
                "limit_bytes": self.limit, "out_of_memory": self.out_of_memory, "policy": self.policy}


def replay(events, skip=(), limit: int | None = None, policy: str = DEFAULT) -> Replay:
    """Replay a rank's allocation sequence. `events` as the rehearsal writes them
    (`rehearse.py`'s trace): a positive integer n allocates n bytes as the next allocation
    (numbered from 0 in order), a negative -(i + 1) frees allocation i. Allocations numbered in
    `skip` are left out, with their frees (the CPU's composite-norm copies a GPU never makes).

    With a `limit` (the bytes the device lets the allocator reserve), a request that needs a
    segment past it after the cached segments are released is where a GPU runs out of memory:
    the replay stops there and records it (`Replay.out_of_memory`: the event's index in
    `events`, the allocation's number and bytes, the segment asked for and what was reserved),
    its statistics those of the sequence up to that event.

    `policy`: DEFAULT (no PYTORCH_CUDA_ALLOC_CONF) or EXPANDABLE (expandable segments; `policy_of`
    reads it from a job's environment)."""
    state = Replay(limit=limit, policy=policy)
    skip = set(skip)
    live: dict[int, tuple[Block, int]] = {}
    count = 0
    for index, n in enumerate(events):
        if n > 0:
            if count not in skip:
                try:
                    live[count] = (state.malloc(n), n)
                except OutOfMemory as exc:
                    state.out_of_memory = {"event": index, "allocation": count, "requested_bytes": int(n),
                                           "segment_bytes": exc.args[0], "reserved_bytes": state.reserved}
                    return state
            count += 1
        elif n < 0:
            held = live.pop(-n - 1, None)
            if held is not None:
                state.free(*held)
    return state
