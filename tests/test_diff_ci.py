"""The CI recipe in docs/ci.md works as written: its diff script, run on a real pull request.

A git repository gets a `main` branch with two specs and a pull-request branch that changes one of
them (slower), breaks nothing, and adds a third; the script from docs/ci.md runs with `parc` on
PATH, and must leave a comment with one section per changed spec and the right status.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def script() -> str:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- ci-diff-script -->\n```bash\n(.*?)```", text, re.S)
    assert match, "docs/ci.md lost its diff script"
    return match[1]


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True)


@pytest.mark.parametrize("threshold,expected", [("200", "0"), ("1", "3")])
def test_ci_script_on_a_pull_request(tmp_path, threshold, expected):
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("git and bash are needed")
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    tiny = (ROOT / "specs" / "tiny.par").read_text(encoding="utf-8")
    (repo / "specs" / "a.par").write_text(tiny, encoding="utf-8")
    (repo / "specs" / "b.par").write_text(tiny.replace("job tiny", "job other"), encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    # a: half the micro-batch, so twice the micro-batches: predicted slower on this tiny model
    (repo / "specs" / "a.par").write_text(tiny.replace("micro-batch 2", "micro-batch 1"), encoding="utf-8")
    (repo / "specs" / "c.par").write_text(tiny.replace("job tiny", "job third"), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    out = tmp_path / "github_output"
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "BASE": "main", "MAX_SLOWDOWN": threshold, "GITHUB_OUTPUT": str(out),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    (repo / "parc-diff.sh").write_text(script(), encoding="utf-8")
    done = subprocess.run(["bash", "parc-diff.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").strip() == f"status={expected}"
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert comment.count("### ") == 2
    assert "parc diff: `main:specs/a.par` → `specs/a.par`" in comment
    assert "| micro-batch | 2 | 1 |" in comment
    assert "new spec specs/c.par" in comment
    assert "b.par" not in comment
    if expected == "3":
        assert "### ⚠️" in comment and "is more than the allowed 1%" in comment
