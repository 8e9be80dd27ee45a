"""torch's stock `PipelineStage` keeps a receive buffer per micro-batch, chunk and direction
(issue 15: torchtitan runs it; parc's job receives on demand), and `target torchtitan` counts them.

- torch 2.13's own stage, built in a fake world, allocates what `schedules.kept_receive_buffers`
  says on every rank of 1F1B, interleaved 1F1B and ZBV pipelines;
- the memory model's `p2p` under `target torchtitan` equals a hand count: the kept buffers less
  the received inputs in flight at the peak (the buffer is the saved input), each b x s/t x h
  bf16 bytes; `target torch` keeps its on-demand count.
"""

from __future__ import annotations

import pytest
from parc.memory import per_stage, shape_of
from parc.memory.inputs import knobs_of
from parc.memory.schedules import _stage_of, kept_receive_buffers
from parc.pipeline import compile_text
from parc.targets import memory_runtime

SPEC = """job kept
tp 2 x pp 4 x dp 2 on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-80gb }
train {
  seq 4096
  global-batch 16
  micro-batch 1
  precision bf16
  optimizer adamw
  recompute full
}
tp { sequence-parallel on }
pp { schedule 1f1b }
dp { sharding zero3 }
TARGET
"""


def torch_stage_buffers(num_stages: int, m: int) -> list[tuple[int, int]]:
    """(input, output-gradient) buffers torch's PipelineStage holds per stage index after
    `_prepare_forward_infra` and `_prepare_backward_infra`, as a schedule's first step calls them."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.stage import InferenceMode
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        out = []
        for index in range(num_stages):
            stage = PipelineStage(torch.nn.Linear(3, 3), index, num_stages, torch.device("cpu"),
                                  input_args=torch.zeros(2, 3), output_args=torch.zeros(2, 3, requires_grad=True))
            stage._inference_mode = InferenceMode.STATIC
            stage._prepare_forward_infra(m, None, None, has_backward=True)
            stage._prepare_backward_infra(m)
            fwd = sum(info.buffer is not None for infos in stage.args_recv_info.values() for info in infos)
            bwd = sum(info.buffer is not None for infos in stage.grad_recv_info.values() for info in infos)
            out.append((fwd, bwd))
        return out
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("schedule,v", [("1f1b", 1), ("interleaved-1f1b", 2), ("zbv", 2)])
def test_the_count_is_torchs_own_stage(schedule, v):
    pp, m = 4, 5
    per_stage_index = torch_stage_buffers(pp * v, m)
    assert len(per_stage_index) == pp * v and any(f for f, _ in per_stage_index)
    for rank in range(pp):
        mine = [per_stage_index[_stage_of(schedule, pp, rank, c)] for c in range(v)]
        expected = (sum(f for f, _ in mine), sum(b for _, b in mine))
        assert kept_receive_buffers(schedule, pp, v, m, rank) == expected, (rank, mine)


def _stages(target: str):
    plan = compile_text(SPEC.replace("TARGET", target), path="kept.par").plan
    return per_stage(shape_of(plan), knobs_of(plan, memory_runtime(plan.target)))


def test_torchtitan_counts_the_kept_buffers_by_hand():
    boundary = 1 * 4096 // 2 * 4096 * 2  # micro-batch x seq / tp (sequence parallel) x hidden x bf16
    m, pp = 16 // 2, 4  # micro-batches: global batch / dp / micro-batch
    stages = _stages("target torchtitan")
    assert len(stages) == pp
    # 1F1B: rank r holds pp - r micro-batches at its peak (its warm-up forwards plus one);
    # rank 0 has no input buffer, the last rank no gradient buffer
    expected = [m, 2 * m - (pp - 1), 2 * m - (pp - 2), m - 1]
    assert [s.in_flight for s in stages] == [pp - r for r in range(pp)]
    assert [s.p2p for s in stages] == [n * boundary for n in expected]


def test_parcs_job_keeps_its_on_demand_count():
    boundary = 1 * 4096 // 2 * 4096 * 2
    stages = _stages("target torch")
    # Schedule1F1B posts each receive right before its use: one output gradient in a backward
    assert [s.p2p for s in stages] == [boundary, boundary, boundary, 0]
