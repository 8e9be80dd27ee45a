"""The start-up guard stops a wrong launch in seconds; --dry-run shows the plan's groups.

The guard runs before any collective, so a launch that does not match the plan fails fast with
one clear line instead of hanging until a timeout. The dry run builds the device mesh only and
prints every rank's coordinates and groups, which must be exactly the plan's
(`plan.layout.coordinates`, `plan.layout.group`, `parc.stages.pipeline_chunks`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from parc.stages import pipeline_chunks

from .harness import TORCHRUN, compile_job, one_of_each_kind, plan_of, torchrun

pytestmark = pytest.mark.e2e

GUARD_SECONDS = 60
"""A wrong launch must end within this: without the guard it waits out the rendezvous (train.py's
`--timeout`, 300 s). Alone it ends in about 5 s (importing torch); the bound leaves room for a
machine busy with other work (31 s seen with 14 other processes on 2 cores)."""


def _timed(command, cwd, env=None):
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    return done, time.perf_counter() - started


def test_wrong_world_size_stops_fast_with_a_clear_message(workdir):
    job = compile_job("ddp8", workdir)
    done, seconds = _timed([*TORCHRUN, "--standalone", "--nproc-per-node", "2", "train.py", "--device", "cpu"],
                           job)
    assert done.returncode != 0
    assert "needs WORLD_SIZE=8" in done.stderr and "torchrun started 2 processes" in done.stderr
    assert "--nproc-per-node 8" in done.stderr
    assert seconds < GUARD_SECONDS


def test_missing_torchrun_and_missing_gpu_are_explained(workdir):
    job = compile_job("ddp8", workdir)
    done, seconds = _timed([sys.executable, "train.py", "--device", "cpu"], job)
    assert done.returncode == 2
    assert "start train.py with torchrun" in done.stderr
    # The default device is cuda: on a machine without one, the guard says so before starting.
    env = {"RANK": "0", "WORLD_SIZE": "8", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29599", "CUDA_VISIBLE_DEVICES": ""}
    done, seconds = _timed([sys.executable, "train.py"], job, env)
    assert done.returncode == 2
    assert "no CUDA device" in done.stderr and "--device cpu" in done.stderr
    assert seconds < GUARD_SECONDS


def _dry_run(spec, workdir):
    plan = plan_of(spec)
    run = torchrun(compile_job(spec, workdir), plan.cluster.world_size, "--dry-run", grads=False,
                   out=workdir / f"dry-{spec}")
    run.check()
    ranks = {r["rank"]: r for r in run.records}
    assert sorted(ranks) == list(range(plan.cluster.world_size))
    return plan, ranks, run


def test_dry_run_prints_the_plans_coordinates_and_groups(workdir):
    plan, ranks, run = _dry_run("tp2-pp2-dp2-1f1b", workdir)
    assert "rank    7:" in run.output
    chunks = pipeline_chunks(plan)
    for rank, info in ranks.items():
        mesh_only = {"dp_shard": 0}  # zero1's shard dim of one rank
        assert info["coordinates"] == {**plan.layout.coordinates(rank), **mesh_only}
        for axis in ("tp", "pp", "dp"):
            assert info["groups"][axis] == list(plan.layout.group(axis, rank)), (rank, axis)
        # zero1: gradients all-reduced over the dp ranks (FSDP2 with shards of one rank)
        assert info["groups"]["data_replicate"] == list(plan.layout.group("dp", rank))
        assert info["groups"]["data_shard"] == [rank]
        mine = [c for c in chunks if c.rank == info["coordinates"]["pp"]]
        assert info["layers"] == [list(c.layer_range) for c in mine]
    assert not any("loss" in r for r in run.records)  # no training


@pytest.mark.parametrize("spec", one_of_each_kind(["moe-4d", "moe-ep-over-cp-dp"], ["moe-ep-over-cp-dp"]))
def test_dry_run_expert_groups_follow_the_plans_fold(spec, workdir):
    """ep 2 over dp with tp and pp around it; ep 4 over cp x dp."""
    plan, ranks, _ = _dry_run(spec, workdir)
    for rank, info in ranks.items():
        assert info["groups"]["ep"] == list(plan.layout.group("ep", rank)), rank
        # edp: the data ranks and the tp ranks (each tp rank routes its own tokens), i.e. the same
        # coordinates but dp, cp and tp, at the same place in their ep group
        mine = plan.layout.coordinates(rank)
        place = plan.layout.group("ep", rank).index(rank)
        same = [r for r in range(plan.cluster.world_size)
                if all(v == mine[a] for a, v in plan.layout.coordinates(r).items() if a not in ("dp", "cp", "tp"))
                and plan.layout.group("ep", r).index(r) == place]
        assert sorted(info["groups"]["edp"]) == same, rank
