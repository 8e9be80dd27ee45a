"""parc's per-rank action orders are torch 2.13's, action for action, for every schedule.

The memory model counts micro-batches in flight by walking `parc.memory.schedules.actions`;
this compares those orders with the ones torch.distributed.pipelining builds itself
(`_get_pipeline_order` for the single-stage schedules, `_calculate_single_rank_operations` for
the multi-stage ones), over a grid of pipeline sizes and micro-batch counts. No process group is
needed: the order is computed from a handful of attributes.
"""

from __future__ import annotations

import types

import pytest
from parc.memory import schedules as parc_schedules

torch_schedules = pytest.importorskip("torch.distributed.pipelining.schedules")

MULTI = {
    "interleaved-1f1b": "ScheduleInterleaved1F1B",
    "interleaved-zb": "ScheduleInterleavedZeroBubble",
    "zbv": "ScheduleZBVZeroBubble",
    "dualpipe-v": "ScheduleDualPipeV",
}
SINGLE = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}


def _fake(pp: int, v: int, m: int):
    rounds, per_round = parc_schedules.rounds(pp, m)
    return types.SimpleNamespace(pp_group_size=pp, n_local_stages=v, _n_microbatches=m, num_stages=pp * v,
                                 _num_stages=pp * v, number_of_rounds=rounds, microbatches_per_round=per_round)


def _flatten(ops, local) -> list[tuple[str, int]]:
    out = []
    for action in ops:
        if action is None:
            continue
        for a in action.sub_actions or (action,):  # an overlapped F+B runs F, then B
            if a.computation_type.value in ("F", "B", "I", "W"):  # compute only (not REDUCE_GRAD)
                out.append((a.computation_type.value, local(a.stage_index)))
    return out


def torch_multi(name: str, pp: int, v: int, m: int, rank: int) -> list[tuple[str, int]]:
    cls = getattr(torch_schedules, MULTI[name])
    ops = cls._calculate_single_rank_operations(_fake(pp, v, m), rank)
    if name in ("zbv", "dualpipe-v"):
        return _flatten(ops, lambda stage: 0 if stage == rank else 1)
    return _flatten(ops, lambda stage: stage // pp)


def torch_single(name: str, pp: int, m: int, rank: int) -> list[tuple[str, int]]:
    cls = getattr(torch_schedules, SINGLE[name])
    order = cls._get_pipeline_order(_fake(pp, 1, m))
    return _flatten(order[rank], lambda stage: 0)


def cases(name: str):
    for pp in (2, 3, 4, 8):
        for m in range(1, 4 * pp + 3):
            for v in ((2, 3) if name.startswith("interleaved") else (2,)):
                if name == "dualpipe-v" and m < 2 * pp:
                    continue  # torch raises
                if name.startswith("interleaved") and not parc_schedules.interleaved_accepts(pp, m):
                    continue  # torch raises (E0318)
                yield pp, v, m


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_stage_orders_are_torchs(name):
    compared = 0
    for pp, v, m in cases(name):
        for rank in range(pp):
            assert parc_schedules.actions(name, pp, v, m, rank) == torch_multi(name, pp, v, m, rank), (pp, v, m, rank)
            compared += 1
    assert compared > 100


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_stage_orders_are_torchs(name):
    for pp in (2, 3, 4, 8):
        for m in range(pp, 3 * pp + 2):  # torch's 1F1B needs m >= pp (E0322)
            for rank in range(pp):
                assert parc_schedules.actions(name, pp, 1, m, rank) == torch_single(name, pp, m, rank), (pp, m, rank)


def test_every_schedule_name_parc_knows_is_covered():
    from parc.spec import SCHEDULES

    assert set(SCHEDULES) == set(MULTI) | set(SINGLE)
