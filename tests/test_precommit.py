"""`.pre-commit-hooks.yaml`: the hooks load as pre-commit's manifest and work in a real repository.

The long test runs `pre-commit try-repo` (pre-commit builds a virtualenv and pip-installs parc
into it, as a user's first commit would, for each of four runs: minutes) against a fresh git
repository holding one good spec, one unformatted spec and one spec with an error. The default run
keeps the fast case of the same kind: each hook's manifest `entry`, run as pre-commit runs it (the
command with the matching files appended, in the repository's root) by the installed `parc`, gives
the same outcomes on the same files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT

MANIFEST = ROOT / ".pre-commit-hooks.yaml"
HOOKS = {"parc-fmt", "parc-fmt-check", "parc-check"}


def test_manifest_has_the_fields_pre_commit_requires():
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert {h["id"] for h in hooks} == HOOKS
    for hook in hooks:
        assert {"id", "name", "entry", "language"} <= set(hook), hook
        assert hook["language"] == "python"
        assert hook["entry"].split()[0] == "parc"
        pattern = re.compile(hook["files"])
        assert pattern.search("specs/llama3-405b.par") and not pattern.search("specs/notes.md")
        assert not pattern.search("x.parc")


def test_manifest_loads_with_pre_commit():
    clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit is in the `test` extra")
    hooks = clientlib.load_manifest(str(MANIFEST))
    assert {h["id"] for h in hooks} == HOOKS


def _hook_repository(tmp: Path) -> Path:
    """A git repository with this work tree's parc in it (try-repo reads committed files only)."""
    repo = tmp / "parc"
    repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    for folder in ("compiler", "grammar", "backends"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "parc")
    return repo


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True)


BAD = """\
job bad
tp 2 x pp 2 x dp 2 on nodes(4 gpus, nvlink)
model tiny
hardware {
  gpu h100-sxm
}
train {
  seq 32
  global-batch 64
  micro_batch 2
}
"""


def _user_repository(tmp_path: Path) -> tuple[Path, str]:
    """A folder with specs/tiny.par and specs/messy.par (tiny's text with extra spaces); the messy text."""
    user = tmp_path / "user"
    (user / "specs").mkdir(parents=True)
    shutil.copy2(ROOT / "specs" / "tiny.par", user / "specs" / "tiny.par")
    messy = (ROOT / "specs" / "tiny.par").read_text(encoding="utf-8").replace("tp 2 x pp 2", "tp 2   x pp 2")
    (user / "specs" / "messy.par").write_text(messy, encoding="utf-8")
    return user, messy


def test_each_hooks_entry_does_what_the_hook_promises(tmp_path):
    """The manifest's entries, as pre-commit calls them (entry, then the files its `files` pattern
    matches, from the repository root), with the `parc` installed beside this interpreter."""
    parc = Path(sys.executable).parent / "parc"
    if not parc.exists():
        pytest.skip("the parc console script is not installed beside this interpreter")
    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))}
    user, messy = _user_repository(tmp_path)

    def run(hook: str) -> subprocess.CompletedProcess:
        entry = hooks[hook]["entry"].split()
        pattern = re.compile(hooks[hook]["files"])
        files = sorted(name for name in (p.relative_to(user).as_posix() for p in user.rglob("*") if p.is_file())
                       if pattern.search(name))
        assert files, hook
        return subprocess.run([str(parc), *entry[1:], *files], cwd=user, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "NO_COLOR": "1"})

    done = run("parc-check")
    assert done.returncode == 0, done.stdout + done.stderr

    done = run("parc-fmt-check")
    assert done.returncode == 1 and "would reformat specs/messy.par" in done.stdout + done.stderr, done
    assert (user / "specs" / "messy.par").read_text(encoding="utf-8") == messy

    run("parc-fmt")  # pre-commit fails a hook that changed a file; the file is what matters
    assert (user / "specs" / "messy.par").read_text(encoding="utf-8") == \
        (ROOT / "specs" / "tiny.par").read_text(encoding="utf-8")
    assert run("parc-fmt-check").returncode == 0

    (user / "specs" / "bad.par").write_text(BAD, encoding="utf-8")
    done = run("parc-check")
    assert done.returncode == 1, done.stdout
    assert "specs/bad.par:10:3: error[E0201]: unknown setting `micro_batch` in `train`" in done.stdout + done.stderr
    assert "help: did you mean `micro-batch`?" in done.stdout + done.stderr


@pytest.mark.long
def test_hooks_run_in_a_real_repository(tmp_path):
    pytest.importorskip("pre_commit", reason="pre-commit is in the `test` extra")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hook_repo = _hook_repository(tmp_path)
    user, messy = _user_repository(tmp_path)
    _git(user, "init", "-q")
    _git(user, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo)]

    def run(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run([*pre_commit, hook, "--all-files"], cwd=user, env=env, capture_output=True,
                              text=True, timeout=600)

    done = run("parc-check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout

    done = run("parc-fmt-check")
    assert done.returncode == 1 and "would reformat specs/messy.par" in done.stdout, done.stdout
    assert (user / "specs" / "messy.par").read_text(encoding="utf-8") == messy

    done = run("parc-fmt")
    assert done.returncode == 1 and "files were modified by this hook" in done.stdout, done.stdout
    assert (user / "specs" / "messy.par").read_text(encoding="utf-8") == \
        (ROOT / "specs" / "tiny.par").read_text(encoding="utf-8")

    (user / "specs" / "bad.par").write_text(BAD, encoding="utf-8")
    _git(user, "add", "-A")
    done = run("parc-check")
    assert done.returncode == 1, done.stdout
    assert "specs/bad.par:10:3: error[E0201]: unknown setting `micro_batch` in `train`" in done.stdout
    assert "help: did you mean `micro-batch`?" in done.stdout
