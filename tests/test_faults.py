"""The generated job under faults (issue 8), tested from the outside through torchrun on CPU.

1. Launched with the wrong world size, the job stops with a message naming both sizes, within
   seconds and before any collective (train.py's start-up check, exit status 2), said even where
   another rank reaches the check first.
2. One rank is SIGKILLed in the middle of a run under `torchrun --max-restarts 1`: torchrun
   restarts every rank, they resume from the last checkpoint, and every step's loss equals the
   uninterrupted run's.

The kill is injected deterministically by a small wrapper that torchrun starts instead of
train.py (train.py has no fault-injection switch, and needs none): on the first attempt, on rank
FAULT_RANK, it kills the process as the optimizer starts step FAULT_AT_STEP. Everything else is
the job as generated, with one command line for the first attempt and the restart (`--resume`
starts from step 0 while there is no checkpoint yet).

Two runtime gaps this test found are closed in train.py (commit 87d9f8d): torchrun keeps its
store across attempts, so a restarted gloo group read the dead group's addresses and could not
connect (train.py now prefixes the store with TORCHELASTIC_RESTART_COUNT); and `--resume`
refused an empty checkpoint directory.
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

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("faults")]
"""One worker runs the module (the README's `--dist loadgroup`): its launched runs are cached per process."""

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
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
    """Started by torchrun in place of train.py: kills rank FAULT_RANK at step FAULT_AT_STEP, once."""
    import os, runpy, signal, sys

    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
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

SLOW_FIRST_WRAPPER = textwrap.dedent('''\
    """Started by torchrun in place of train.py: holds each node's first process back SLOW_FIRST
    seconds, so that the others reach train.py's start-up check first."""
    import os, runpy, sys, time

    if os.environ["LOCAL_RANK"] == "0":
        time.sleep(float(os.environ["SLOW_FIRST"]))
    sys.argv[0] = "train.py"
    sys.path.insert(0, os.getcwd())
    runpy.run_path("train.py", run_name="__main__")
''')


def torchrun(job: Path, script: str, *args: str, nproc: int = RANKS, env: dict | None = None,
             launcher: tuple[str, ...] = ("--standalone",), timeout: float = RUN_TIMEOUT):
    command = [*TORCHRUN, *launcher, "--nproc-per-node", str(nproc), script, "--device", "cpu", *args]
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
    (tmp / "job" / "slow_first.py").write_text(SLOW_FIRST_WRAPPER)
    return tmp / "job"


@pytest.fixture(scope="module")
def uninterrupted(job) -> dict[int, float]:
    log = job.parent / "uninterrupted.jsonl"
    status, output, _ = torchrun(job, "train.py", "--steps", str(STEPS), "--lr", "1e-3", "--log-json", str(log), "--log-every", "1",
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


@pytest.mark.parametrize("delay", [1.0, 9.0], ids=["first-process-late", "first-process-later-than-the-grace"])
def test_the_wrong_world_size_is_said_even_when_another_rank_fails_first(job, delay):
    """torchrun stops the whole group at the first exit. A rank that is not its node's first holds its
    message back FAULT_REPORT_GRACE_SECONDS (5 s), so the first process still says it; where the
    first is later than that, the other says it, naming itself. Without the grace the message was
    lost: CI saw rank 1 exit with status 2 and rank 0 stopped before it printed."""
    status, output, _ = torchrun(job, "slow_first.py", "--steps", "2", nproc=2, env={"SLOW_FIRST": str(delay)},
                                 timeout=WRONG_SIZE_SECONDS * 2)
    assert status != 0
    said = re.findall(r"^error: (rank \d+: )?the layout .* needs WORLD_SIZE=4", output, flags=re.MULTILINE)
    assert said and set(said) <= {"", "rank 1: "}, output[-3000:]
    # Late by less than the grace, the first process says it; the other may too where the first's exit
    # (torch's teardown) outlasts the grace on a loaded machine. Later than the grace, the other does.
    assert ("" if delay < 5 else "rank 1: ") in said, output[-3000:]


def _killed_run(job: Path, name: str, launcher=("--standalone",), resume=("--resume",)):
    checkpoints = job.parent / f"ck-{name}"
    log = job.parent / f"{name}.jsonl"
    env = {"FAULT_RANK": str(KILL_RANK), "FAULT_AT_STEP": str(KILL_AT_STEP)}
    status, output, seconds = torchrun(job, "fault_wrapper.py", "--steps", str(STEPS), "--lr", "1e-3",
                                       "--log-json", str(log), "--log-every", "1", "--checkpoint-dir", str(checkpoints),
                                       "--checkpoint-every", str(EVERY), *resume, env=env,
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
    """Without `--resume`: a restarted attempt (TORCHELASTIC_RESTART_COUNT > 0) with a
    checkpoint directory resumes by itself, as `launch { restarts N }` runs it."""
    _assert_resumed(*_killed_run(job, "killed", resume=()), uninterrupted)


@pytest.mark.long
@pytest.mark.parametrize("launcher", [("--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:29581", "--nnodes", "1"),
                                      ("--nnodes", "1", "--master-addr", "127.0.0.1", "--master-port", "29582")],
                         ids=["c10d-rendezvous", "static-rendezvous"])
def test_a_killed_rank_resumes_under_other_rendezvous(job, uninterrupted, launcher):
    """launch/torchrun.sh uses a c10d endpoint; the static form is torchrun's other common one.
    Left out of the default run (`pytest -m long`): each is a killed 4-rank run and its restart,
    like the default run's --standalone case (itself a c10d rendezvous on a local endpoint)."""
    _assert_resumed(*_killed_run(job, f"killed-{launcher[1]}", launcher=launcher), uninterrupted)


@pytest.mark.long
def test_resume_with_no_checkpoint_yet_starts_from_step_zero(job, uninterrupted):
    log = job.parent / "resume-empty.jsonl"
    status, output, _ = torchrun(job, "train.py", "--steps", "2", "--lr", "1e-3", "--log-json", str(log), "--log-every", "1",
                                 "--checkpoint-dir", str(job.parent / "ck-empty"), "--resume")
    assert status == 0, output[-3000:]
    assert [s for s, _ in losses(log)] == [0, 1]


def test_a_resume_with_other_settings_stops_before_the_model_is_built(job, uninterrupted):
    """Every checkpoint keeps the run's seed and learning-rate schedule; a resume that changes
    them (here --seed and --lr) would train on another data stream at another rate without a
    word, so it stops with exit status 2 naming each change, unless --override-settings."""
    import shutil
    checkpoints = job.parent / "ck-changed"
    shutil.copytree(job.parent / "ck-uninterrupted" / f"step-{EVERY}", checkpoints / f"step-{EVERY}")
    changed = ("--steps", str(STEPS), "--seed", "1", "--lr", "2e-3", "--checkpoint-dir", str(checkpoints), "--resume")
    status, output, _ = torchrun(job, "train.py", *changed)
    assert status != 0 and re.search(r"exitcode\s*:\s*2\b", output), output[-3000:]
    assert "seed 0 in the checkpoint, 1 now" in output and "lr 0.001 in the checkpoint, 0.002 now" in output, output[-3000:]
    assert "help: pass the checkpoint's values again, or --override-settings" in output
    assert 'File "train.py"' not in output and "resumed from" not in output, output[-3000:]
    log = job.parent / "changed.jsonl"
    status, output, _ = torchrun(job, "train.py", *changed, "--override-settings", "--log-json", str(log),
                                 "--log-every", "1")
    assert status == 0, output[-3000:]
    assert "note: resuming" in output and re.search(rf"resumed from \S*step-{EVERY}\b", output), output[-3000:]
    assert [s for s, _ in losses(log)] == list(range(EVERY, STEPS))
