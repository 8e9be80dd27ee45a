"""The dim FSDP2 shards a routed-expert stack on (`expert_shard_dim`), which the generated job
(`EXPERT_SHARD_DIMS`) and the memory model (`fsdp_padding`) share; the running job's shards are
checked in tests/e2e/test_expert_shards.py."""

from __future__ import annotations

from parc.memory.parameters import expert_shard_dim


def test_dim_0_when_the_local_experts_divide_evenly():
    assert expert_shard_dim((8, 4096, 14336), 8) == 0
    assert expert_shard_dim((16, 4096, 14336), 8) == 0
    assert expert_shard_dim((3, 5, 7), 1) == 0


def test_the_first_even_dim_when_they_do_not():
    """Mixtral at ep 8 (1 local expert) over a 16-rank expert group: dim 1 (hidden 4,096);
    a w2 stack (local, F, h) with F uneven: dim 2."""
    assert expert_shard_dim((1, 4096, 14336), 16) == 1
    assert expert_shard_dim((2, 90, 64), 4) == 2


def test_dim_0_and_its_padding_when_no_dim_divides():
    assert expert_shard_dim((3, 5, 7), 4) == 0


def test_the_memory_model_counts_no_whole_expert_padding_where_the_job_shards_dim_1():
    """Mixtral 8x7B at ep 8 over a 16-rank expert group (tp 2 x dp 64 / ep 8), zero3: one local
    expert per rank. On dim 0 each rank would store the whole expert (15/16 of it padding, 3 x
    4,096 x 14,336 elements per layer); on dim 1 nothing is padded."""
    from parc import memory
    from parc.memory.model import rank_padding, rank_params
    from parc.pipeline import compile_text

    text = """tp 2 x dp 64 on nodes(8 gpus, nvlink)
ep 8 over dp
model mixtral-8x7b
hardware { gpu h100-sxm }
train { seq 4096, global-batch 512, micro-batch 1, recompute full }
dp { sharding zero3 }
"""
    result = compile_text(text, "x.par")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    k, shape = memory.knobs_of(result.plan), memory.shape_of(result.plan)
    assert k.expert_shard_group == 16 and shape.experts // k.ep == 1
    params = rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)[0]
    assert params.params.expert == 32 * 3 * 4096 * 14336  # one local expert per layer, 32 layers
    assert rank_padding(shape, k, params).expert == 0
