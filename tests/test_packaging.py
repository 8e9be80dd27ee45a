"""Build the wheel, install it into a fresh virtual environment outside the repository, run it.

Proves what a user gets from `pip install parc` (a built wheel, not the editable install): every
import package of the source tree is in the wheel, with its package data (grammar, templates,
catalogue), and every subcommand of the `parc` console script runs on the shipped specs without the
source tree. The fresh venv gets parc from the wheel only; its runtime dependencies (lark, jinja2,
pydantic, click, pygls) come from the test environment through PYTHONPATH, which adds their
directories without running the test environment's `.pth` files (so the editable install of parc
stays invisible), and the test needs no network.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT


def source_packages() -> set[str]:
    """The import packages the source tree holds, from `pyproject.toml`'s folder mapping and the
    folders that have an `__init__.py` (so a new sub-package the package list forgot shows here)."""
    import tomllib

    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    roots = {name: ROOT / folder for name, folder in mapping.items() if "." not in name}
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder).parts
            found.add(".".join((name, *relative)))
    assert found, "no package found in the source tree"
    return found


def wheel_packages(names: list[str]) -> set[str]:
    return {n[: -len("/__init__.py")].replace("/", ".") for n in names if n.endswith("/__init__.py")}


def test_every_source_package_is_listed_in_pyproject():
    """Fast partner of the wheel test: the explicit package list names every sub-package."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert source_packages() - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(parc script, environment, work folder) of the wheel installed in a fresh venv."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    wheelhouse = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheelhouse), str(ROOT)], check=True, timeout=300, capture_output=True)
    wheel = next(wheelhouse.glob("parc-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    missing = source_packages() - wheel_packages(names)
    assert not missing, f"packages missing from the wheel: {sorted(missing)}"
    assert "parc/grammar/par.lark" in names
    templates = sorted(p.relative_to(ROOT / "backends").as_posix()
                       for p in (ROOT / "backends").rglob("templates/**/*.jinja"))
    assert templates and all(f"parc/backends/{t}" in names for t in templates), "templates missing"
    assert not any(n.startswith(("tests/", "specs/", "benchmarks/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)  # ensurepip: offline
    subprocess.run([str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index", "-q", str(wheel)],
                   check=True, timeout=300, capture_output=True)
    target = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    work = tmp_path / "elsewhere"
    work.mkdir()
    for spec in ("tiny.par", "llama3-405b.par", "llama3-70b-search.par"):
        shutil.copy(ROOT / "specs" / spec, work / spec)
    from .test_import import HF_LLAMA3_8B

    (work / "config.json").write_text(json.dumps(HF_LLAMA3_8B))
    deps = os.pathsep.join(site.getsitepackages())
    env = {**os.environ, "PYTHONPATH": deps, "NO_COLOR": "1"}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import parc; print(parc.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(target), f"parc imported from {where}, not from the fresh venv"
    return venv / "bin" / "parc", env, work


def lsp_starts(script: Path, env: dict, work: Path) -> None:
    """initialize -> response with capabilities -> shutdown -> exit, with JSON-RPC framing."""
    def frame(payload: dict) -> bytes:
        body = json.dumps(payload).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    done = subprocess.run([str(script), "lsp"], input=b"".join(map(frame, messages)), cwd=work, env=env,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b'"capabilities"' in done.stdout and b'"id": 2' in done.stdout.replace(b'"id":2', b'"id": 2')


# Each subcommand of `parc`, run as a user would from the installed wheel, with what proves it worked.
RUNS = {
    "check": (["check", "tiny.par", "llama3-405b.par"], None),
    "explain": (["explain", "llama3-405b.par", "--format", "json"], "total_bytes"),
    "search": (["search", "llama3-70b-search.par", "--top", "2"], "winner"),
    "compile": (["compile", "tiny.par", "-o", "job"], None),
    "fmt": (["fmt", "--check", "tiny.par"], None),
    "diff": (["diff", "tiny.par", "llama3-405b.par", "--format", "md"], None),
    "report": (["report", "tiny.par", "-o", "tiny.html"], None),
    "codes": (["codes", "E0201"], "E0201"),
    "schema": (["schema"], "\"title\": \"Plan\""),
    "import": (["import", "config.json"], "model llama3-8b"),
    # the rehearsal itself (minutes of fake-tensor work) is tests/test_rehearse.py's; from the
    # wheel, that the command is there and starts
    "rehearse": (["rehearse", "--help"], "SPEC"),
}


@pytest.mark.slow
def test_every_subcommand_runs_from_the_wheel(installed):
    script, env, work = installed
    from parc.cli import main

    commands = set(main.commands)
    assert commands, "the CLI has no subcommands"
    assert commands - set(RUNS) - {"lsp"} == set(), "give every subcommand a run from the wheel here"
    for name, (args, expected) in RUNS.items():
        done = subprocess.run([str(script), *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 3) if name == "diff" else done.returncode == 0, (name, done.stderr[-2000:])
        if expected:
            assert expected in done.stdout, (name, done.stdout[-2000:])
    assert (work / "job" / "plan.json").is_file() and (work / "job" / "train.py").is_file()
    assert (work / "tiny.html").read_text().lower().startswith("<!doctype html>")
    lsp_starts(script, env, work)
