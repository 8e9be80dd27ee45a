"""`pip install .` into a fresh virtual environment outside the repository, then run it.

Proves the wheel carries the grammar and the templates and that the console script works
without the source tree. The fresh venv gets parc from the built wheel; its runtime
dependencies (lark, jinja2, pydantic, click) come from the test environment through PYTHONPATH,
so the test needs no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from .conftest import ROOT


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_repo(tmp_path):
    wheelhouse = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheelhouse), str(ROOT)], check=True, timeout=300, capture_output=True)
    wheel = next(wheelhouse.glob("parc-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "parc/grammar/par.lark" in names
    assert any(n.startswith("parc/backends/torch/templates/") for n in names) or not any(
        (ROOT / "backends" / "torch" / "templates").rglob("*.jinja")), "templates missing from the wheel"
    assert not any(n.startswith(("tests/", "specs/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)  # ensurepip: offline
    subprocess.run([str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index", "-q", str(wheel)],
                   check=True, timeout=300, capture_output=True)
    script = venv / "bin" / "parc"  # written by pip from the wheel's entry point
    target = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()

    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(ROOT / "specs" / "tiny.par", work / "tiny.par")
    deps = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "PYTHONPATH": deps, "NO_COLOR": "1"}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import parc; print(parc.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(target), f"parc imported from {where}, not from the fresh venv"
    check = subprocess.run([str(script), "check", "tiny.par"], cwd=work, env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    compiled = subprocess.run([str(script), "compile", "tiny.par", "-o", "job"], cwd=work, env=env,
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    assert (work / "job" / "plan.json").is_file()
