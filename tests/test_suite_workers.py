"""The README's test command spreads the suite over two workers with `--dist loadgroup` and relies
on it to keep each `xdist_group` on one worker: the leave-one-source-out refits, the measured-memory
launches, the fault tests' uninterrupted run, the rehearsals and the windowed reference are each
computed once per process and shared by the tests of their group. pytest 9.2 with pytest-xdist 3.8
dropped the grouping silently (pytest-dev/pytest-xdist#1386: xdist writes the group into a node id
field pytest no longer reads), and every group's result was computed on both workers: 2-3 minutes
of the default run. This runs two workers on a group of four tests and one loose test and reads
which worker ran each."""

from __future__ import annotations

import json
import subprocess
import sys

GROUPED = '''
import json, os, pathlib
import pytest

pytestmark = pytest.mark.xdist_group("shared")
OUT = pathlib.Path(__file__).with_name("workers.jsonl")


def record(name):
    with OUT.open("a") as f:
        f.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")


@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    record(f"grouped-{i}")
'''

LOOSE = '''
import json, os, pathlib

OUT = pathlib.Path(__file__).with_name("workers.jsonl")


def test_loose():
    with OUT.open("a") as f:
        f.write(json.dumps(["loose", os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
'''


def test_an_xdist_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_loose.py").write_text(LOOSE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", "-o", "addopts=", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [json.loads(line) for line in (tmp_path / "workers.jsonl").read_text().splitlines()]
    grouped = {worker for name, worker in ran if name.startswith("grouped")}
    assert len([name for name, _ in ran if name.startswith("grouped")]) == 4
    assert any(name == "loose" for name, _ in ran)
    assert len(grouped) == 1, f"the group ran on {sorted(grouped)}: {ran}"
