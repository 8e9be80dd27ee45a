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


def test_moe_without_ep_or_tp_buckets_its_experts_with_their_layers():
    """tiny-moe (hidden 64, 4 heads of 16, 2 kv heads, dense FFN 128, 4 experts of FFN 64, one
    shared expert, layer 0 dense, vocabulary 256, untied) on dp 2 with zero1 and no ep or tp:
    the job has no expert mesh, so each MoE layer's experts sit in that layer's block (and
    bucket), as build_buckets walks them. Written out by hand: embedding 256 x 64; attention
    2 x 64 x 64 + 2 x 32 x 64 and two norms of 64; the dense FFN 3 x 64 x 128; a MoE layer's
    router 4 x 64, shared expert 3 x 64 x 64, routed experts 3 x 4 x 64 x 64; the head 64 +
    256 x 64. With the spec's cap of 40,000 elements: 5 buckets, where a separate expert set
    (the old ledger) charged 6 calls of each kind."""
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.pipeline import compile_text
    from parc.targets import software_of

    text = """dp 2 on nodes(2 gpus, nvlink)
model tiny-moe { moe-layers from 1, shared-experts 1 }
hardware { gpu h100-sxm }
train { seq 32, global-batch 8, micro-batch 2 }
dp { sharding zero1, bucket 40000 }
"""
    result = compile_text(text, "x.par")
    assert result.ok, [d.message for d in result.diagnostics]
    plan = result.plan
    attention = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 64
    dense_layer = attention + 3 * 64 * 128
    moe_layer = attention + 4 * 64 + 3 * 64 * 64 + 3 * 4 * 64 * 64
    blocks = [256 * 64, dense_layer, moe_layer, moe_layer, moe_layer, 64 + 256 * 64]
    expected = buckets_by_walking(blocks, 40_000)
    assert expected == 5
    hw = timing.hardware_of(plan)
    _, steps = timing.rank_steps(shape_of(plan), knobs_of(plan, "torch"), hw, timing.geometry_of(plan, hw),
                                 sw=software_of(plan))
    dp = [c for c in next(iter(steps.values())).ledger.collectives if c.axis == "dp"]
    assert sorted((c.kind, c.count) for c in dp) == [("all_gather", expected), ("reduce_scatter", expected)]
    assert sum(c.payload * c.count for c in dp if c.kind == "reduce_scatter") >= 4 * sum(blocks)
