"""tests/e2e/harness.py's `run_ranks`: a CPU job whose worker dies of SIGSEGV or SIGABRT (torch's
gloo backend under load) runs once more; any other failure fails at once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.e2e.harness import died_of_a_signal, run_ranks  # noqa: E402

SCRIPT = """
import os, sys
marker = sys.argv[1]
runs = int(open(marker).read()) if os.path.exists(marker) else 0
open(marker, "w").write(str(runs + 1))
how = sys.argv[2]
if how == "abort-once" and runs == 0 or how == "abort-always":
    os.abort()
sys.exit(1 if how == "fail" else 0)
"""


def _run(tmp_path: Path, how: str):
    marker = tmp_path / "runs"
    done = run_ranks([sys.executable, "-c", SCRIPT, str(marker), how], timeout=60)
    return done, int(marker.read_text())


def test_a_worker_that_aborts_once_runs_again_and_says_so(tmp_path):
    done, runs = _run(tmp_path, "abort-once")
    assert done.returncode == 0 and runs == 2
    assert "died of a signal and the job ran again" in done.stderr


def test_a_worker_that_always_aborts_still_fails(tmp_path):
    done, runs = _run(tmp_path, "abort-always")
    assert done.returncode != 0 and runs == 2


def test_an_ordinary_failure_is_not_run_again(tmp_path):
    done, runs = _run(tmp_path, "fail")
    assert done.returncode == 1 and runs == 1


def test_torchruns_root_cause_is_read():
    """torchrun exits 1 and names the worker's signal under "Root Cause"; only that worker counts."""
    report = ("Failures:\n  exitcode  : -15 (pid: 4110)  (SIGTERM)\nRoot Cause (first observed failure):\n"
              "  exitcode  : -6 (pid: 4111)  (SIGABRT)\n")
    assert died_of_a_signal(1, report)
    assert not died_of_a_signal(1, report.replace("-6 (pid: 4111)  (SIGABRT)", "1 (pid: 4111)"))
    assert not died_of_a_signal(1, "AssertionError: losses differ")
