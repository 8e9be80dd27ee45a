"""The caching allocator replay (`parc.memory.allocator`) on hand-written sequences, each
reserved figure worked out by hand from the policy of torch's CUDACachingAllocator.cpp
(round_size, get_pool, get_allocation_size, get_free_block, should_split, free_block) as
docs/memory-model.md states it, not from the replay."""

from __future__ import annotations

import pytest
from parc.memory.allocator import OutOfMemory, allocation_size, replay, round_size

KiB, MiB = 1 << 10, 1 << 20


def free(i: int) -> int:
    """The trace's code for freeing allocation i."""
    return -(i + 1)


def test_requests_round_to_512_bytes_and_segments_by_size_class():
    assert [round_size(n) for n in (1, 511, 512, 513, 1000)] == [512, 512, 512, 1024, 1024]
    assert allocation_size(512) == allocation_size(1 * MiB) == 2 * MiB  # the small pool's 2 MiB segments
    assert allocation_size(1 * MiB + 512) == allocation_size(10 * MiB - 512) == 20 * MiB  # 1-10 MiB: 20 MiB
    assert allocation_size(10 * MiB) == 10 * MiB and allocation_size(11 * MiB + 1) == 12 * MiB  # 2 MiB steps


def test_small_requests_pack_into_one_2_mib_segment():
    # four 100-byte tensors take 512 bytes each of one small segment: 2 MiB reserved, 2 KiB allocated
    r = replay([100, 100, 100, 100])
    assert r.max_reserved == 2 * MiB and r.max_allocated == 4 * 512 and r.max_requested == 400
    assert r.segments == 1
    # 1 MiB requests: two fill one 2 MiB segment exactly, the third takes a second segment
    assert replay([MiB, MiB, MiB]).max_reserved == 4 * MiB


def test_medium_requests_share_a_20_mib_segment():
    # 3 MiB, 5 MiB, 7 MiB: the first takes a 20 MiB segment and splits it (17 MiB > 1 MiB remain),
    # the second fits the 17 MiB tail (12 MiB remain), the third the 12 MiB (5 MiB remain)
    r = replay([3 * MiB, 5 * MiB, 7 * MiB])
    assert r.max_reserved == 20 * MiB and r.segments == 1 and r.max_allocated == 15 * MiB
    # a 6 MiB request then does not fit the 5 MiB left: a second 20 MiB segment
    assert replay([3 * MiB, 5 * MiB, 7 * MiB, 6 * MiB]).max_reserved == 40 * MiB


def test_a_remainder_of_1_mib_or_less_is_not_split_off():
    # 19.5 MiB in a 20 MiB segment leaves 0.5 MiB, not more than 1 MiB: the whole block is handed out
    # (should_split) and counts as allocated; a 512 KiB request then needs a small segment
    r = replay([19 * MiB + 512 * KiB, 512 * KiB])
    assert r.max_allocated == 20 * MiB + 512 * KiB
    assert r.max_reserved == 20 * MiB + 2 * MiB


def test_a_freed_block_is_reused_best_fit():
    # 40 MiB and 60 MiB segments; both freed; a 38 MiB request takes the 40 MiB block (the smallest
    # that fits), splits it (2 MiB left), and a 58 MiB one the 60 MiB block: nothing new reserved
    r = replay([40 * MiB, 60 * MiB, free(0), free(1), 38 * MiB, 58 * MiB])
    assert r.max_reserved == 100 * MiB and r.segments == 2 and r.cuda_mallocs == 2


def test_fragmentation_a_larger_request_cannot_use_two_freed_holes():
    # three 100 MiB segments; the first and third freed: 200 MiB cached in two 100 MiB holes;
    # a 150 MiB request fits neither and reserves a new 150 MiB segment: 450 MiB reserved for
    # 250 MiB allocated, 200 MiB of fragmentation at the peak
    r = replay([100 * MiB, 100 * MiB, 100 * MiB, free(0), free(2), 150 * MiB])
    assert r.max_reserved == 450 * MiB
    assert r.allocated_at_max_reserved == 250 * MiB and r.fragmentation == 200 * MiB


def test_split_blocks_merge_when_their_neighbour_is_freed():
    # one 100 MiB segment split into 30 + 30 + 40 MiB (the 40 MiB tail stays a cached block); the two
    # 30 MiB blocks freed merge with each other and the tail into the whole 100 MiB block, which a
    # 90 MiB request reuses: 100 MiB reserved throughout
    r = replay([100 * MiB, free(0), 30 * MiB, 30 * MiB, free(1), free(2), 90 * MiB])
    assert r.max_reserved == 100 * MiB and r.segments == 1
    # without the merge (the middle block still held) the 90 MiB request needs a segment of its own
    r = replay([100 * MiB, free(0), 30 * MiB, 30 * MiB, free(1), 90 * MiB])
    assert r.max_reserved == 190 * MiB


def test_small_and_large_pools_never_share_blocks():
    # a freed 16 MiB block of the large pool cannot serve a 512 KiB request (small pool): that takes
    # a 2 MiB small segment
    r = replay([16 * MiB, free(0), 512 * KiB])
    assert r.max_reserved == 16 * MiB + 2 * MiB


def test_max_split_size_keeps_large_blocks_whole():
    # with max_split_size 64 MiB: a freed 100 MiB block is oversize; a 30 MiB request may not take it
    # (a request under max_split_size never takes an oversize block) and gets a new segment
    events = [100 * MiB, free(0), 30 * MiB]
    assert replay(events).max_reserved == 100 * MiB  # default: split it
    assert replay(events, max_split_size=64 * MiB).max_reserved == 130 * MiB
    # an oversize request takes an oversize block only within kLargeBuffer (20 MiB) of its size
    assert replay([100 * MiB, free(0), 90 * MiB], max_split_size=64 * MiB).max_reserved == 100 * MiB
    assert replay([100 * MiB, free(0), 70 * MiB], max_split_size=64 * MiB).max_reserved == 170 * MiB


def test_skipped_allocations_are_left_out_with_their_frees():
    events = [100 * MiB, 50 * MiB, free(1), free(0)]
    assert replay(events).max_reserved == 150 * MiB
    assert replay(events, skip={1}).max_reserved == 100 * MiB


def test_at_the_limit_cached_segments_are_released_before_running_out():
    # 100 MiB freed and cached; a 150 MiB request with a 200 MiB limit: 100 + 150 > 200, so the
    # cached whole segment is released (release_cached_blocks) and the request fits: 150 reserved
    r = replay([100 * MiB, free(0), 150 * MiB], limit=200 * MiB)
    assert r.reserved == 150 * MiB and r.retries == 1 and r.max_reserved == 150 * MiB
    # a cached block that is part of a split segment cannot be released: out of memory
    with pytest.raises(OutOfMemory):
        replay([100 * MiB, free(0), 30 * MiB, 150 * MiB], limit=200 * MiB)
