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


def torch_compute(name: str, pp: int, v: int, m: int):
    """torch's own per-rank compute actions for the schedule, and the rank that owns each stage
    (the V schedules fold stages back onto the ranks; the others loop over them)."""
    cls = getattr(torch_schedules, MULTI[name])
    fake = _fake(pp, v, m)
    compute = {r: cls._calculate_single_rank_operations(fake, r) for r in range(pp)}
    if name in ("zbv", "dualpipe-v"):
        def owner(s):
            return s if s < pp else 2 * pp - 1 - s
    else:
        def owner(s):
            return s % pp
    return compute, owner


def torch_live_receives(name: str, pp: int, v: int, m: int) -> tuple[int, ...]:
    compute, owner = torch_compute(name, pp, v, m)
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


def torch_receive_trace(name: str, pp: int, v: int, m: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Per rank, the receive buffers alive along torch's own lowering (as above): at each
    computing action (F, B, I, or DualPipe-V's overlapped pair), once it has taken its inputs,
    and the most alive before the first such action and after each until the next (W and
    FSDP's actions compute nothing that takes a received input)."""
    compute, owner = torch_compute(name, pp, v, m)
    lowered = {r: torch_schedules._add_reduce_grad(torch_schedules._add_unshard_reshard(ops), m)
               for r, ops in compute.items()}
    lowered = torch_schedules._add_send_recv(lowered, stage_to_rank=owner, num_stages=pp * v)
    out = []
    for r in range(pp):
        alive = gap = 0
        lives, gaps = [], []
        received = set()
        for action in lowered[r]:
            computes = False
            for a in action.sub_actions or (action,):
                kind = a.computation_type.value
                key = (a.stage_index, a.microbatch_index)
                if kind in ("RECV_F", "RECV_B"):
                    alive += 1
                    received.add((kind, key))
                    gap = max(gap, alive)
                elif kind in ("F", "B", "I"):
                    computes = True
                    if (("RECV_F" if kind == "F" else "RECV_B"), key) in received:
                        alive -= 1
            if computes:
                gaps.append(gap)
                lives.append(alive)
                gap = alive
        out.append((tuple(lives), tuple(gaps) + (gap,)))
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


def torch_dualpipe_v(pp: int, m: int):
    """torch's own ScheduleDualPipeV for rank 0, on stand-ins for its two stages (its constructor
    reads only these fields before it checks the micro-batch count)."""
    import types

    import torch

    def stage(index: int):
        return types.SimpleNamespace(group_size=pp, group_rank=0, num_stages=2 * pp, stage_index=index,
                                     submod=torch.nn.Linear(1, 1), is_first=index == 0, is_last=False)
    return torch_schedules.ScheduleDualPipeV([stage(0), stage(2 * pp - 1)], m)


@pytest.mark.parametrize("pp", (2, 4, 8))
def test_dualpipe_v_under_two_pp_microbatches_is_no_job(pp):
    """Under 2 pp micro-batches (DeepSeek-V3's ramp start, 3,072 sequences: 24 on pp 16) there is
    no DualPipe-V job whose receives could be counted: torch's constructor refuses (parc says
    E0320), and below 2 pp - 1 torch cannot even place the sends and receives of its own compute
    order. There `receive_buffers` is the bound of every receive of the step alive at once
    (2 v m, each one boundary tensor), which grows with m; from 2 pp - 1 on it is torch's walk,
    at most 4 per rank whatever m (docs/memory-model.md, section 4, `p2p`)."""
    from parc.checks.predicates import schedule_rejects_microbatches

    lowered = 0
    for m in range(1, 2 * pp + 2):
        refused = m < 2 * pp
        assert (schedule_rejects_microbatches("dualpipe-v", pp, m) == "E0320") == refused
        if refused:
            with pytest.raises(ValueError, match="at least as many microbatches as stages"):
                torch_dualpipe_v(pp, m)
        else:
            torch_dualpipe_v(pp, m)
        try:
            walked = torch_live_receives("dualpipe-v", pp, 2, m)
        except AssertionError as failed:
            assert "can't schedule sends/recvs" in str(failed)
            assert m < 2 * pp - 1
            assert parc_schedules.receive_buffers("dualpipe-v", pp, 2, m) == (2 * 2 * m,) * pp
            continue
        lowered += 1
        assert m >= 2 * pp - 1
        assert parc_schedules.receive_buffers("dualpipe-v", pp, 2, m) == walked
        assert max(walked) <= 4
    assert lowered == 3  # 2 pp - 1 (refused by the constructor only), 2 pp, 2 pp + 1


def test_deepseek_v3_ramp_start_is_refused():
    """specs/deepseek-v3-like.par at its ramp's start: 3,072 sequences over dp 128 are 24
    micro-batches on pp 16, under torch's 32; the p2p `parc explain` shows there (96 receives,
    5.2 GiB) is the every-receive bound, not a job's (test above, at pp 2, 4 and 8)."""
    with pytest.raises(ValueError, match="at least as many microbatches as stages"):
        torch_dualpipe_v(16, 24)
    assert parc_schedules.receive_buffers("dualpipe-v", 16, 2, 24) == (96,) * 16
    assert max(parc_schedules.receive_buffers("dualpipe-v", 16, 2, 120)) == 4


@pytest.mark.parametrize(("name", "pp", "v", "m"), list(cases()))
def test_receives_alive_at_each_computation_are_torchs_lowering(name, pp, v, m):
    """The memory model pairs each moment with the receive buffers alive then
    (`schedules.receive_moments`, read from `_receive_trace`): per rank, at each computation and
    between computations, the same counts as a walk of torch's own lowering."""
    ours = parc_schedules._receive_trace(name, pp, v, m)
    theirs = torch_receive_trace(name, pp, v, m)
    assert ours == theirs
    assert any(lives for lives, _ in theirs)
    assert tuple(max(gaps) for _, gaps in theirs) == torch_live_receives(name, pp, v, m)
