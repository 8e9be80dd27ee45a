"""Running a generated job through its launchers, and the reference it must agree with.

The reference and the parity check are the runtime's end-to-end harness (tests/e2e/harness.py):
the tiny model trained in one process on the whole batch, and `assert_parity` on the per-step
losses and the gradients of every step. Here only the launch differs: the job is started by
launch/torchrun.sh as two "nodes" or by launch/slurm.sbatch, with the harness's training options.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from parc.atomic import write_tree
from parc.backends import job_files
from parc.pipeline import compile_path

from .conftest import ROOT
from .e2e import harness

TINY = ROOT / "specs" / "tiny.par"


def train_args(out: Path) -> list[str]:
    """train.py options of a parity run: the harness's steps and learning rate, logs under `out`."""
    return ["--device", "cpu", "--steps", str(harness.STEPS), "--lr", harness.LR, "--timeout", "120",
            "--log-json", str(out / "log.jsonl"), "--log-every", "1", "--save-grads", str(out / "grads")]


def compile_tiny(directory: Path) -> Path:
    result = compile_path(str(TINY))
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    job = directory / "tiny"
    write_tree(str(job), job_files(result.plan), executable=("launch/torchrun.sh",))
    return job


collect = harness.collect
"""What a run left under `out`, as the harness's Run (the e2e harness's own reader)."""


@functools.lru_cache(maxsize=1)
def reference() -> harness.Run:
    """The single-process reference run, once per test process."""
    directory = Path(tempfile.mkdtemp(prefix="parc-reference-"))
    atexit.register(shutil.rmtree, directory, True)
    return harness.train(harness.compile_job("reference", directory), 1).check()
