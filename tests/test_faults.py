"""The generated job under faults (issue 8), tested from the outside through torchrun on CPU.

1. Launched with the wrong world size, the job stops with a message naming both sizes, within
   seconds and before any collective (train.py's start-up check, exit status 2).
2. One rank is SIGKILLed in the middle of a run under `torchrun --max-restarts 1`: torchrun
   restarts every rank, they resume from the last checkpoint, and every step's loss equals the
   uninterrupted run's.

The kill is injected deterministically by a small wrapper that torchrun starts instead of
train.py (train.py has no fault-injection switch, and needs none): on the first attempt, on rank
FAULT_RANK, it kills the process as the optimizer starts step FAULT_AT_STEP. The wrapper also
passes `--resume` only once a checkpoint exists, because train.py's `--resume` refuses an empty
checkpoint directory, so one command line cannot serve a first attempt and its restarts.

A restart needs one more thing: torchrun keeps its store across attempts, so a restarted gloo
group would read the dead group's addresses and could not connect (reproduced with a 20-line
script). train.py gives each attempt its own store prefix (TORCHELASTIC_RESTART_COUNT) and
`--resume` starts from step 0 when there is no checkpoint yet; the wrapper's own prefixing
(FAULT_PREFIX_STORE) stays as a second path and steps aside when train.py passes a store.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.e2e

TORCHRUN = Path(sys.executable).with_name("torchrun")
SPEC = """\
# Four CPU ranks: two pipeline stages (1F1B) x two ZeRO-1 data-parallel replicas.
job faults

pp 2 x dp 2 on nodes(4 gpus, nvlink)

model tiny

hardware {
  gpu h100-sxm
}

train {
  seq 32
  global-batch 16
  micro-batch 2
}

pp {
  schedule 1f1b
} allow W0323

dp {
  sharding zero1
}
"""
RANKS = 4
STEPS = 8
EVERY = 2
KILL_RANK = 1
KILL_AT_STEP = 5
"""Killed during step 5: steps 0-4 done, the newest checkpoint is step-4, steps 4.. run again."""
LOSS_TOLERANCE = 2e-5
RUN_TIMEOUT = 300
WRONG_SIZE_SECONDS = 60
"""A generous bound: the check itself is instant; torch's import takes most of it (measured ~5-8 s)."""

WRAPPER = textwrap.dedent('''\
    """Started by torchrun in place of train.py: fault injection and restart plumbing for tests."""
    import os, runpy, signal, sys
    from pathlib import Path

    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if any(Path(os.environ["FAULT_CHECKPOINT_DIR"]).glob("step-*")):
        sys.argv.append("--resume")
    if os.environ.get("FAULT_PREFIX_STORE") == "1":
        from datetime import timedelta
        import torch.distributed as dist
        real_init = dist.init_process_group

        def init_process_group(backend, timeout=timedelta(minutes=5), **kwargs):
            if "store" in kwargs:  # train.py prefixes the store itself
                return real_init(backend, timeout=timeout, **kwargs)
            store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                                  int(os.environ["WORLD_SIZE"]), is_master=False, timeout=timeout)
            return real_init(backend, timeout=timeout, store=dist.PrefixStore(f"attempt-{attempt}", store),
                             rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]), **kwargs)

        dist.init_process_group = init_process_group
    if attempt == 0 and os.environ["RANK"] == os.environ["FAULT_RANK"]:
        import torch.optim
        real_step = torch.optim.AdamW.step
        calls = [0]

        def step(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] == int(os.environ["FAULT_AT_STEP"]) + 1:
                os.kill(os.getpid(), signal.SIGKILL)
            return real_step(self, *args, **kwargs)

        torch.optim.AdamW.step = step
    sys.argv[0] = "train.py"
    sys.path.insert(0, os.getcwd())
    runpy.run_path("train.py", run_name="__main__")
''')


def torchrun(job: Path, script: str, *args: str, nproc: int = RANKS, env: dict | None = None,
             launcher: tuple[str, ...] = ("--standalone",), timeout: float = RUN_TIMEOUT):
    command = [str(TORCHRUN), *launcher, "--nproc-per-node", str(nproc), script, "--device", "cpu", *args]
    started = time.monotonic()
    done = subprocess.run(command, cwd=job, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})})
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def losses(log: Path) -> list[tuple[int, float]]:
    """(step, loss) in the order rank 0 logged them, restarts included."""
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [(r["step"], r["loss"]) for r in records if "loss" in r]


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("faults")
    spec = tmp / "faults.par"
    spec.write_text(SPEC)
    result = run_cli("compile", str(spec), "-o", str(tmp / "job"))
    assert result.exit_code == 0, result.stderr
    (tmp / "job" / "fault_wrapper.py").write_text(WRAPPER)
    return tmp / "job"


@pytest.fixture(scope="module")
def uninterrupted(job) -> dict[int, float]:
    log = job.parent / "uninterrupted.jsonl"
    status, output, _ = torchrun(job, "train.py", "--steps", str(STEPS), "--lr", "1e-3", "--log-json", str(log),
                                 "--checkpoint-dir", str(job.parent / "ck-uninterrupted"),
                                 "--checkpoint-every", str(EVERY))
    assert status == 0, output[-6000:]
    curve = losses(log)
    assert [s for s, _ in curve] == list(range(STEPS)), curve
    return dict(curve)


def test_the_wrong_world_size_stops_within_seconds_with_both_sizes(job):
    status, output, seconds = torchrun(job, "train.py", "--steps", "2", nproc=2, timeout=WRONG_SIZE_SECONDS * 2)
    assert status != 0
    assert "needs WORLD_SIZE=4" in output and "started 2 processes" in output, output[-3000:]
    assert re.search(r"exitcode\s*:\s*2\b", output), "train.py's start-up check exits with status 2"
    assert 'File "train.py"' not in output, "a clear message from train.py, not a traceback (torchrun adds its own)"
    assert seconds < WRONG_SIZE_SECONDS, f"took {seconds:.1f} s"


def _killed_run(job: Path, name: str, prefix_store: bool, launcher=("--standalone",)):
    checkpoints = job.parent / f"ck-{name}"
    log = job.parent / f"{name}.jsonl"
    env = {"FAULT_CHECKPOINT_DIR": str(checkpoints), "FAULT_RANK": str(KILL_RANK),
           "FAULT_AT_STEP": str(KILL_AT_STEP), "FAULT_PREFIX_STORE": "1" if prefix_store else "0"}
    status, output, seconds = torchrun(job, "fault_wrapper.py", "--steps", str(STEPS), "--lr", "1e-3",
                                       "--log-json", str(log), "--checkpoint-dir", str(checkpoints),
                                       "--checkpoint-every", str(EVERY), env=env,
                                       launcher=(*launcher, "--max-restarts", "1"))
    return status, output, losses(log), checkpoints


def _assert_resumed(status, output, curve, checkpoints, uninterrupted):
    assert "exitcode: -9" in output or "exitcode  : -9" in output, "rank 1 was not killed"
    assert status == 0, output[-6000:]
    last = KILL_AT_STEP - KILL_AT_STEP % EVERY
    assert re.search(rf"resumed from \S*step-{last}\b", output), output[-3000:]
    steps = [s for s, _ in curve]
    assert steps == list(range(KILL_AT_STEP)) + list(range(last, STEPS)), steps
    for step, loss in curve:  # both attempts' records, the repeated steps too
        assert abs(loss - uninterrupted[step]) <= LOSS_TOLERANCE, (step, loss, uninterrupted[step])
    assert (checkpoints / f"step-{STEPS}").is_dir()


def test_a_killed_rank_resumes_from_the_last_checkpoint_with_the_same_losses(job, uninterrupted):
    _assert_resumed(*_killed_run(job, "killed", prefix_store=True), uninterrupted)


def test_a_killed_rank_resumes_with_the_runtime_as_generated(job, uninterrupted):
    _assert_resumed(*_killed_run(job, "as-generated", prefix_store=False), uninterrupted)


def test_resume_with_no_checkpoint_yet_starts_from_step_zero(job, uninterrupted):
    log = job.parent / "resume-empty.jsonl"
    status, output, _ = torchrun(job, "train.py", "--steps", "2", "--lr", "1e-3", "--log-json", str(log),
                                 "--checkpoint-dir", str(job.parent / "ck-empty"), "--resume")
    assert status == 0, output[-3000:]
    assert [s for s, _ in losses(log)] == [0, 1]
