"""The generated job's expert mesh (backends/torch/runtime.ep_mesh): its ep groups are the plan's
(`plan.layout.group("ep", rank)`), its edp groups are the ranks holding the same experts, and the
ranks of every group ascend with their mesh coordinate.

The last is what DTensor and FSDP2 rely on: a process group orders its ranks ascending, and an
all-gather puts group rank i's shard where mesh coordinate i's belongs. tp 2 x dp 4 with ep 2 over
dp once listed an edp group as (0, 4, 1, 5): FSDP2 swapped the middle shards of every expert
weight and the step-0 loss differed from one process (tests/e2e/specs/moe-tp2-dp4-ep2-zero3.par).
"""

from __future__ import annotations

import pytest
import torch
from parc.backends.torch.runtime import Layout, ep_mesh
from parc.pipeline import compile_text

BASE = """job mesh
{layout} on nodes(8 gpus, nvlink)
{ep}
model tiny-moe {{
  moe-layers from 1
  experts 16
}}
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 64
  micro-batch 1
}}
dp {{
  sharding {sharding}
}}
"""

LAYOUTS = [
    ("tp 2 x dp 4", "ep 2 over dp", "zero3"),
    ("dp 4 x tp 2", "ep 2 over dp", "zero3"),
    ("tp 2 x dp 8", "ep 4 over dp", "zero2"),
    ("tp 2 x dp 8", "ep 8 over dp", "none"),
    ("tp 2 x pp 2 x dp 4", "ep 2 over dp", "zero3"),
    ("tp 2 x cp 2 x dp 4", "ep 4 over cp x dp", "zero3"),
    ("tp 2 x cp 2 x dp 4", "ep 2 over cp x dp", "zero1"),
    ("cp 2 x tp 2 x dp 4", "ep 4 over cp x dp", "zero3"),
    ("tp 2 x dp 4", "ep 2 over dp", "hsdp 2 x 2"),
    ("tp 2 x ep 2 x dp 2", "", "zero3"),
    ("tp 4 x dp 2", "", "zero3"),
]


def expert_grid(text: str):
    result = compile_text(text, "mesh.par")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    plan = result.plan
    layout = Layout.of(plan)
    digits, permutation, shape = ep_mesh(plan, layout)
    world = torch.arange(plan.cluster.world_size).reshape(layout.shape)
    return plan, world.reshape(digits).permute(*permutation).reshape(shape)


def fibers(grid: torch.Tensor, dim: int) -> list[list[int]]:
    return grid.movedim(dim, -1).reshape(-1, grid.shape[dim]).tolist()


@pytest.mark.parametrize(("layout", "ep", "sharding"), LAYOUTS)
def test_expert_groups_are_the_plans_and_ascend(layout, ep, sharding):
    plan, grid = expert_grid(BASE.format(layout=layout, ep=ep, sharding=sharding))
    lay = plan.layout
    world = plan.cluster.world_size
    assert sorted(grid.reshape(-1).tolist()) == list(range(world))
    ep_groups, edp_groups = fibers(grid, 3), fibers(grid, 1)
    assert ep_groups and edp_groups
    for group in ep_groups + edp_groups:
        assert group == sorted(group), f"{layout}, {ep}: group {group} does not ascend"
    for group in ep_groups:
        for rank in group:
            assert tuple(group) == lay.group("ep", rank)
    # The ranks holding the same experts: same pipeline stage, same place in their ep group.
    def holds(rank: int) -> tuple[int, int]:
        return lay.coordinates(rank).get("pp", 0), lay.group("ep", rank).index(rank)
    for group in edp_groups:
        expected = sorted(q for q in range(world) if holds(q) == holds(group[0]))
        assert group == expected


def test_the_reported_layouts_expert_data_group_is_in_rank_order():
    """tp 2 x dp 4, ep 2 over dp: rank r = 2 dp + tp; ep pairs dp (0, 1) and (2, 3) at equal tp,
    so rank 0's expert data ranks are dp 0 and 2 at tp 0 and 1: ranks 0, 1, 4, 5, in that order."""
    _, grid = expert_grid(BASE.format(layout="tp 2 x dp 4", ep="ep 2 over dp", sharding="zero3"))
    assert grid[0, :, 0, 0].tolist() == [0, 1, 4, 5]
    assert grid[0, 0, 0, :].tolist() == [0, 2]


HSDP_LAYOUTS = [
    ("tp 2 x dp 8", "ep 2 over dp", "hsdp 2 x 4"),
    ("dp 8", "ep 2 over dp", "hsdp 4 x 2"),
    ("tp 2 x cp 2 x dp 4", "ep 4 over cp x dp", "hsdp 2 x 2"),
]


@pytest.mark.parametrize(("layout", "ep", "sharding"), LAYOUTS + HSDP_LAYOUTS)
def test_the_memory_models_expert_shard_group_is_the_jobs(layout, ep, sharding):
    """The memory model divides a routed expert's states by `Knobs.expert_shard_group`; the job
    shards (or, zero1, reduce-scatters) them over its expert mesh's edp dim (`expert_data`),
    whatever the sharding, hsdp included (the model had assumed hsdp's replica share: a group
    of edp x S / dp, 2 where the job's is 4 on the first layout here); `none` shards nothing."""
    from parc.memory import knobs_of

    plan, grid = expert_grid(BASE.format(layout=layout, ep=ep, sharding=sharding))
    k = knobs_of(plan)
    assert k.expert_shard_group == (1 if sharding == "none" else grid.shape[1])
