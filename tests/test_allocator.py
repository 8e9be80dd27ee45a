"""The caching allocator replay (`parc.memory.allocator`) on hand-written sequences, each
reserved figure worked out by hand from the policy of torch's CUDACachingAllocator.cpp
(round_size, get_pool, get_allocation_size, get_free_block, should_split, free_block) as
docs/memory-model.md states it, not from the replay."""

from __future__ import annotations

import pytest
from parc.memory.allocator import (
    DEFAULT,
    EXPANDABLE,
    Replay,
    allocation_size,
    policy_of,
    replay,
    round_size,
)

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


def test_a_large_remainder_of_exactly_1_mib_stays_with_the_block():
    # 19 MiB in a 20 MiB segment leaves exactly 1 MiB: should_split needs more than kSmallSize, so the
    # whole 20 MiB is handed out (a >= would split it and allocate 19 MiB)
    assert replay([19 * MiB]).max_allocated == 20 * MiB
    # 512 bytes less leaves 1 MiB + 512 bytes: split, 19 MiB - 512 bytes allocated
    assert replay([19 * MiB - 512]).max_allocated == 19 * MiB - 512


def test_a_small_remainder_of_exactly_512_bytes_is_split_off_and_reused():
    # a 2 MiB small segment: 1 MiB (1 MiB remains, split), then 1 MiB - 512 bytes, which leaves exactly
    # 512 bytes: the small pool splits at 512 bytes or more, so 2 MiB - 512 bytes are allocated and a
    # 512-byte request takes the remainder, no second segment (a > would hand out the whole block:
    # 2 MiB allocated, and the 512 bytes a second 2 MiB segment)
    r = replay([MiB, MiB - 512])
    assert r.max_allocated == 2 * MiB - 512 and r.max_reserved == 2 * MiB
    r = replay([MiB, MiB - 512, 512])
    assert r.max_allocated == 2 * MiB and r.max_reserved == 2 * MiB and r.segments == 1


def test_best_fit_between_equal_sizes_takes_the_lowest_address():
    # two 40 MiB segments at addresses 0 and 40 MiB (cudaMalloc order), freed last one first: a 40 MiB
    # request takes the block at address 0 (BlockComparatorSize: size, then address), whichever was
    # freed last
    r = Replay()
    first, second = r.malloc(40 * MiB), r.malloc(40 * MiB)
    assert (first.address, second.address) == (0, 40 * MiB)
    r.free(second, 40 * MiB)
    r.free(first, 40 * MiB)
    assert r.malloc(40 * MiB).address == 0
    r = Replay()
    first, second = r.malloc(40 * MiB), r.malloc(40 * MiB)
    r.free(first, 40 * MiB)
    r.free(second, 40 * MiB)
    assert r.malloc(40 * MiB).address == 0


def test_a_freed_block_is_reused_best_fit():
    # 40 MiB and 60 MiB segments; both freed; a 38 MiB request takes the 40 MiB block (the smallest
    # that fits), splits it (2 MiB left), and a 58 MiB one the 60 MiB block: nothing new reserved
    r = replay([40 * MiB, 60 * MiB, free(0), free(1), 38 * MiB, 58 * MiB])
    assert r.max_reserved == 100 * MiB and r.segments == 2 and r.cuda_mallocs == 2


def test_fragmentation_a_larger_request_cannot_use_two_freed_holes():
    # three 100 MiB segments; the first and third freed: 200 MiB cached in two 100 MiB holes;
    # a 150 MiB request fits neither and reserves a new 150 MiB segment: 450 MiB reserved for
    # 250 MiB allocated then; the most ever allocated was 300 MiB (the three 100 MiB tensors), so
    # the reserve is 150 MiB beyond the allocated peak
    r = replay([100 * MiB, 100 * MiB, 100 * MiB, free(0), free(2), 150 * MiB])
    assert r.max_reserved == 450 * MiB and r.max_allocated == 300 * MiB
    assert r.allocated_at_max_reserved == 250 * MiB and r.reserved_beyond_allocated_peak == 150 * MiB
    assert r.json()["reserved_beyond_allocated_peak_bytes"] == 150 * MiB


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


def test_skipped_allocations_are_left_out_with_their_frees():
    events = [100 * MiB, 50 * MiB, free(1), free(0)]
    assert replay(events).max_reserved == 150 * MiB
    assert replay(events, skip={1}).max_reserved == 100 * MiB


def test_at_the_limit_cached_segments_are_released_before_running_out():
    # 100 MiB freed and cached; a 150 MiB request with a 200 MiB limit: 100 + 150 > 200, so the
    # cached whole segment is released (release_cached_blocks) and the request fits: 150 reserved
    r = replay([100 * MiB, free(0), 150 * MiB], limit=200 * MiB)
    assert r.reserved == 150 * MiB and r.retries == 1 and r.max_reserved == 150 * MiB
    assert r.out_of_memory is None
    # without a limit the cached segment stays: 250 MiB reserved
    assert replay([100 * MiB, free(0), 150 * MiB]).max_reserved == 250 * MiB


def test_out_of_memory_is_a_result_naming_the_event():
    # the 30 MiB request splits the cached 100 MiB segment (70 MiB cached behind it), which then
    # cannot be released; the 150 MiB request (event 3, allocation 2) needs 100 + 150 > 200 MiB: the
    # replay stops there, its figures those before it
    r = replay([100 * MiB, free(0), 30 * MiB, 150 * MiB, 10 * MiB], limit=200 * MiB)
    assert r.out_of_memory == {"event": 3, "allocation": 2, "requested_bytes": 150 * MiB,
                               "segment_bytes": 150 * MiB, "reserved_bytes": 100 * MiB}
    assert r.max_reserved == 100 * MiB and r.retries == 1
    assert r.json()["out_of_memory"]["event"] == 3 and r.json()["limit_bytes"] == 200 * MiB


# -- expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ------------------------
# Worked by hand from CUDACachingAllocator.cpp's expandable-segment path: one segment per pool whose
# pages (20 MiB large, 2 MiB small: `find_expandable_block`'s segment_size) are mapped on demand from
# the lowest unmapped address (`try_allocate_expandable_block`, `map_block`), split at 512 bytes
# (`should_split`), the block at the mapped edge taken last (`get_free_block`'s expandable_size).


def expandable(events, **options) -> Replay:
    return replay(events, policy=EXPANDABLE, **options)


def test_expandable_pages_of_20_mib_are_mapped_as_a_request_needs_them():
    # 3, 5, 7 MiB: one 20 MiB page, split three times (5 MiB left at the edge)
    r = expandable([3 * MiB, 5 * MiB, 7 * MiB])
    assert r.max_reserved == 20 * MiB and r.max_allocated == 15 * MiB and r.segments == 1
    # 30 MiB: two pages (40 MiB), not a 30 MiB segment; a 10 MiB request then fits the 10 MiB tail
    r = expandable([30 * MiB, 10 * MiB])
    assert r.max_reserved == 40 * MiB and r.cuda_mallocs == 1
    assert replay([30 * MiB, 10 * MiB]).max_reserved == 40 * MiB and replay([30 * MiB]).max_reserved == 30 * MiB
    # 6 MiB after the 5 MiB edge: the edge block and one more page merge (25 MiB), the request takes 6
    assert expandable([3 * MiB, 5 * MiB, 7 * MiB, 6 * MiB]).max_reserved == 40 * MiB


def test_expandable_freed_neighbours_merge_across_what_would_be_two_segments():
    # 30 + 30 MiB: pages 0-40 then 40-60 (the first's 10 MiB edge and one more page); both freed,
    # they merge into one 60 MiB block that a 60 MiB request takes: 60 MiB reserved
    events = [30 * MiB, 30 * MiB, free(0), free(1), 60 * MiB]
    r = expandable(events)
    assert r.max_reserved == 60 * MiB and r.max_allocated == 60 * MiB
    # the default policy's two 30 MiB segments never merge: a third, 60 MiB, segment
    assert replay(events).max_reserved == 120 * MiB


def test_expandable_best_fit_takes_the_block_at_the_mapped_edge_last():
    # 10 MiB and 2 MiB in one page (8 MiB left at the edge); the 10 MiB freed is a hole. 5 MiB: the
    # 8 MiB edge block is the smallest that fits, but its expandable size is larger than the hole's,
    # so the hole takes it (5 MiB left); 9 MiB then fits neither: the edge grows by a page (40 MiB)
    events = [10 * MiB, 2 * MiB, free(0), 5 * MiB, 9 * MiB]
    r = expandable(events)
    assert r.max_reserved == 40 * MiB and r.max_allocated == 16 * MiB
    # default: 10 MiB is a segment of its own (kRoundLarge) and 2 MiB a 20 MiB one; 5 MiB takes the
    # freed 10 MiB segment, 9 MiB the 18 MiB tail: 30 MiB
    assert replay(events).max_reserved == 30 * MiB


def test_expandable_large_blocks_split_down_to_512_bytes():
    # a 1 MiB remainder stays with the block by default (should_split: more than kSmallSize); with
    # expandable segments any remainder of 512 bytes or more is split off
    assert expandable([19 * MiB]).max_allocated == 19 * MiB
    assert replay([19 * MiB]).max_allocated == 20 * MiB


def test_expandable_small_pool_pages_are_2_mib():
    r = expandable([100, 100, 100, 100])
    assert r.max_reserved == 2 * MiB and r.max_allocated == 4 * 512
    assert expandable([MiB, MiB, MiB]).max_reserved == 4 * MiB
    # the large pool's freed pages never serve the small pool: 40 + 2 MiB
    assert expandable([30 * MiB, free(0), 512 * KiB]).max_reserved == 42 * MiB


def test_expandable_at_the_limit_cached_pages_are_unmapped_and_mapped_again():
    # 30 MiB maps 40; freed, it stays mapped. A small request needs 2 MiB more: 42 > 40, so every
    # free block's whole pages are unmapped (unmap_block) and the small page mapped: 2 MiB reserved
    r = expandable([30 * MiB, free(0), 100, 20 * MiB], limit=40 * MiB)
    assert r.out_of_memory is None and r.retries == 1 and r.max_reserved == 40 * MiB
    assert r.reserved == 22 * MiB  # then 20 MiB maps one large page again
    # 30 MiB instead needs 40 MiB beside the small page's 2: nothing left to unmap, out of memory
    r = expandable([30 * MiB, free(0), 100, 30 * MiB], limit=40 * MiB)
    assert r.out_of_memory == {"event": 3, "allocation": 2, "requested_bytes": 30 * MiB,
                               "segment_bytes": 40 * MiB, "reserved_bytes": 2 * MiB}
    assert r.retries == 2


def test_expandable_unmapping_keeps_a_free_blocks_unaligned_ends_mapped():
    # 5 MiB at 0-5, 50 MiB at 5-55 (pages to 60), 5 MiB at 55-60; the 50 MiB freed: its whole pages
    # are 20-40 only (0-20 and 40-60 hold live tensors), so 20 MiB is unmapped at the limit and a
    # 512 KiB request's small page fits: 40 + 2 MiB
    r = expandable([5 * MiB, 50 * MiB, 5 * MiB, free(1), 512 * KiB], limit=60 * MiB)
    assert r.out_of_memory is None and r.retries == 1 and r.reserved == 42 * MiB


@pytest.mark.parametrize("env,policy", [
    (None, EXPANDABLE),  # the generated train.py's own default
    ({}, EXPANDABLE),
    ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, EXPANDABLE),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"}, EXPANDABLE),
    ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}, DEFAULT),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, DEFAULT),  # set without the option: off
    ({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, EXPANDABLE),
    # PYTORCH_ALLOC_CONF is read first; PYTORCH_CUDA_ALLOC_CONF only without it
    ({"PYTORCH_ALLOC_CONF": "expandable_segments:False", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
     DEFAULT),
])
def test_the_policy_is_the_jobs_allocator_configuration(env, policy):
    assert policy_of(env) == policy


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError):
        Replay(policy="bogus")
