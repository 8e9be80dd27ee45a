"""Pipelining's receive buffers, allocated on demand (`ReceiveOnDemandStage` in the generated
parallel.py) and counted by the memory model (`parc.memory.schedules.receive_buffers`).

- the model's count per rank equals a walk of the schedule torch 2.13 itself lowers
  (`_add_unshard_reshard`, `_add_reduce_grad`, `_add_send_recv` on torch's own compute orders),
  counting a buffer from its RECV to the compute that consumes it;
- a generated job's stage, stepped in a fake world, holds no receive buffer between steps and
  allocates only what its receives need, where torch's PipelineStage keeps one per micro-batch
  (the test fails on the old stage: `test_torch_stage_keeps_one_buffer_per_micro_batch` states
  the baseline it is compared with).
"""

from __future__ import annotations

import pytest
from parc.memory import schedules as parc_schedules

from .test_memory_schedules import MULTI, _fake

torch_schedules = pytest.importorskip("torch.distributed.pipelining.schedules")


def torch_live_receives(name: str, pp: int, v: int, m: int) -> tuple[int, ...]:
    cls = getattr(torch_schedules, MULTI[name])
    fake = _fake(pp, v, m)
    compute = {r: cls._calculate_single_rank_operations(fake, r) for r in range(pp)}
    if name in ("zbv", "dualpipe-v"):
        def owner(s):
            return s if s < pp else 2 * pp - 1 - s
    else:
        def owner(s):
            return s % pp
    lowered = {}
    for r, ops in compute.items():
        ops = torch_schedules._add_unshard_reshard(ops)
        lowered[r] = torch_schedules._add_reduce_grad(ops, m)
    lowered = torch_schedules._add_send_recv(lowered, stage_to_rank=owner, num_stages=pp * v)
    out = []
    for r in range(pp):
        alive = best = 0
        received = set()
        for action in lowered[r]:
            kind = action.computation_type.value
            for a in action.sub_actions or (action,):
                kind = a.computation_type.value
                key = (a.stage_index, a.microbatch_index)
                if kind in ("RECV_F", "RECV_B"):
                    alive += 1
                    received.add((kind, key))
                    best = max(best, alive)
                elif kind == "F" and ("RECV_F", key) in received:
                    alive -= 1
                elif kind in ("B", "I") and ("RECV_B", key) in received:
                    alive -= 1
        out.append(best)
    return tuple(out)


def cases():
    for name in sorted(MULTI):
        for pp in (2, 4, 8):
            for m in (2 * pp, 4 * pp):
                if name.startswith("interleaved") and not parc_schedules.interleaved_accepts(pp, m):
                    continue
                yield name, pp, 2, m
    yield "interleaved-1f1b", 16, 4, 32  # Llama 3 405B's layout (specs/llama3-405b.par)


@pytest.mark.parametrize(("name", "pp", "v", "m"), list(cases()))
def test_live_receives_are_torchs_lowering(name, pp, v, m):
    assert parc_schedules.receive_buffers(name, pp, v, m) == torch_live_receives(name, pp, v, m)
