"""A checkpoint written under one layout resumes under another, and training continues exactly.

tp 2 x dp 4 (zero3, sequence parallel) trains 4 steps and saves DCP checkpoints after steps 2
and 4; pp 2 x dp 4 (1F1B, ZeRO-1) resumes from the step-2 checkpoint and runs steps 2 and 3.
DCP reshards the 2-D (FSDP x TP) parameters and optimizer states into whole per-stage ones, and
ZeRO-1 slices them again. Both runs' losses must match the uninterrupted single-process run.
Losing the optimizer state (moments or step count) would show in the step-3 loss and in the
gradients of steps 2 and 3, which are compared too.
"""

from __future__ import annotations

import shutil

import pytest

from .harness import assert_parity, compile_job, train

pytestmark = pytest.mark.e2e


def test_resume_under_another_layout(workdir, reference):
    saved = workdir / "checkpoints-tp2-dp4"
    first = train(compile_job("tp2-dp4-sp", workdir), 8, "--checkpoint-dir", str(saved),
                  "--checkpoint-every", "2", out=workdir / "save-run")
    assert_parity(first, reference)
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]

    resume_dir = workdir / "checkpoints-pp2-dp4"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(compile_job("pp2-dp4", workdir), 8, "--checkpoint-dir", str(resume_dir), "--resume",
                   out=workdir / "resume-run")
    assert_parity(second, reference, steps=range(2, 4))
    assert "resumed from" in second.output
    assert (resume_dir / "step-4").is_dir()


def test_asynchronous_checkpoints_resume_like_synchronous_ones(workdir, reference):
    """--async-checkpoint (dcp.async_save, written in the background while training goes on):
    both checkpoints are complete and renamed, and resuming from the first continues exactly."""
    job = compile_job("reference", workdir)
    saved = workdir / "checkpoints-async"
    first = train(job, 1, "--checkpoint-dir", str(saved), "--checkpoint-every", "2", "--async-checkpoint",
                  out=workdir / "async-save-run")
    assert_parity(first, reference)
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]
    resume_dir = workdir / "checkpoints-async-resume"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(job, 1, "--checkpoint-dir", str(resume_dir), "--resume", out=workdir / "async-resume-run")
    assert_parity(second, reference, steps=range(2, 4))
    assert "resumed from" in second.output
