"""zero1's bucket count (parc.timing.bucket_count, what the time model charges per call) against
the rule written out block by block, and Megatron-Core's default bucket size."""

from __future__ import annotations

import random

from parc import timing


def buckets_by_walking(blocks: list[int], cap: int) -> int:
    """The rule of parallel.py's build_buckets, one block at a time: a bucket closes after the
    block that brings it to `cap` elements, the last one at the end."""
    count, held = 0, 0
    for size in blocks:
        held += size
        if held >= cap:
            count, held = count + 1, 0
    return count + (1 if held else 0)


def test_the_closed_form_counts_the_blocks_as_the_job_cuts_them():
    rnd = random.Random(13)
    cases = 0
    for _ in range(3000):
        runs = tuple((rnd.choice([1, 7, 100, 999, 4096, 50_000]), rnd.randint(0, 40)) for _ in range(rnd.randint(1, 5)))
        cap = rnd.choice([1, 50, 1000, 4096, 100_000, 40_000_000])
        blocks = [size for size, n in runs for _ in range(n)]
        assert timing.bucket_count(runs, cap) == buckets_by_walking(blocks, cap), (runs, cap)
        cases += 1
    assert cases == 3000


def test_a_hostile_layer_count_costs_nothing():
    assert timing.bucket_count(((1, 10**15),), 3) == -(-10**15 // 3)


def test_the_default_bucket_is_megatrons():
    """Megatron-Core's DistributedDataParallelConfig: bucket_size = max(40,000,000, 1,000,000 x dp)."""
    assert timing.zero1_bucket_size(8) == 40_000_000
    assert timing.zero1_bucket_size(64) == 64_000_000
    assert timing.zero1_bucket_size(64, 1_000) == 1_000


SPEC = """dp 2 on nodes(2 gpus, nvlink)
model tiny
hardware { gpu h100-sxm }
train { seq 32, global-batch 8, micro-batch 2 }
dp { SETTINGS }
"""


def test_a_bucket_size_without_zero1_is_an_error_at_the_bucket():
    from parc.codes import CODES
    from parc.pipeline import compile_text

    for settings in ("sharding zero3, bucket 1000", "bucket 1000"):
        text = SPEC.replace("SETTINGS", settings)
        errors = [d for d in compile_text(text, "x.par").diagnostics if d.is_error]
        assert [d.code for d in errors] == ["E0354"], errors
        span = errors[0].span
        assert text[span.start:span.end] == "1000"
        assert "sharding zero1" in errors[0].help
    assert "E0354" in CODES
    ok = compile_text(SPEC.replace("SETTINGS", "sharding zero1, bucket 1000"), "x.par")
    assert not [d for d in ok.diagnostics if d.is_error]
    assert ok.plan.layout.dp.bucket == 1000
