"""FSDP2's temporaries for routed-expert stacks sharded on dim 1 (issue 13's leftover, issue 15):
`buffers.fsdp_expert_temporaries`, against what the rehearsal's tracker held, written out here.

Traced on tests/data/specs/dim1-experts-zero3.par (two local experts of 1,024 x 4,096 per stack,
ep 2 over dp 8: an expert group of 4 that 2 local experts do not divide, so the job shards every
stack on dim 1; zero3, no pipelining), rank 0, step 2, with a histogram of every tensor alive
(2026-12-02, the 2-core machine):

- at the re-gather of layer 0's experts (`aten.cat.out`, FSDP2's `foreach_all_gather_copy_out`):
  the flat all-gather output (50,331,648 bytes: 25,165,824 bf16 elements, the unit) and three
  `empty_like` temporaries of 16,777,216 bytes, one per stack (w1, w2, w3), which a dim-0 unit
  does not make;
- at layer 1's experts' reduce-scatter (`fsdp.chunk_cat`, `foreach_reduce`): the fp32
  reduce-scatter input (100,663,296 bytes), the three stacks' gradients re-laid out shard-major
  by `torch.cat` (16,777,216 bytes each, replacing the originals) and one original gradient of
  16,777,216 bytes still referenced.
"""

from __future__ import annotations

from dataclasses import replace

from parc.memory import knobs_of, per_stage, shape_of
from parc.memory.buffers import fsdp_expert_temporaries

from .conftest import ROOT

SPEC = "tests/data/specs/dim1-experts-zero3.par"
STACK = 2 * 1024 * 4096  # local experts x hidden x expert FFN: one stack's elements
COPY_OUT = 3 * 16_777_216  # the three empty_like temporaries the tracker held
REDUCE = 16_777_216  # the one original gradient beside the re-laid copies


def knobs(spec: str = SPEC):
    from parc.pipeline import compile_text

    result = compile_text((ROOT / spec).read_text(encoding="utf-8"), spec)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return shape_of(result.plan), replace(knobs_of(result.plan), device="fake")


def test_the_copy_out_temporaries_are_what_the_tracker_held():
    shape, k = knobs()
    assert k.expert_shard_group == 4 and shape.experts // k.ep == 2  # dim 1: 2 rows over 4 ranks
    assert 3 * STACK * 2 == COPY_OUT
    assert fsdp_expert_temporaries(shape, k) == max(COPY_OUT, REDUCE) == COPY_OUT


def test_under_pipelining_the_reduce_counts_one_fp32_stack():
    """The gather runs once, at the step's first forward; the reduce's extra original is FSDP2's
    fp32 accumulated gradient."""
    shape, k = knobs()
    assert fsdp_expert_temporaries(shape, replace(k, pp=2)) == 4 * STACK


def test_none_where_experts_shard_on_dim_0_or_fsdp2_does_not_shard_them():
    shape, k = knobs()
    assert fsdp_expert_temporaries(replace(shape, experts=16), k) == 0  # 8 local experts over 4: dim 0
    assert fsdp_expert_temporaries(shape, replace(k, sharding="zero1")) == 0
    assert fsdp_expert_temporaries(shape, replace(k, sharding="none")) == 0


def test_the_stage_counts_them_in_its_buffers():
    shape, k = knobs()
    with_them = per_stage(shape, k)[0].buffers
    import parc.memory.model as model

    saved = model.fsdp_expert_temporaries
    model.fsdp_expert_temporaries = lambda shape, k: 0
    try:
        model.clear_caches()
        without = per_stage(shape, k)[0].buffers
    finally:
        model.fsdp_expert_temporaries = saved
        model.clear_caches()
    assert with_them - without == COPY_OUT
