"""`parc diff`: golden outputs in every format, the exit-code policy, and `--against REV`.

Goldens live in tests/golden/diff/ (`PARC_UPDATE_GOLDEN=1` rewrites them). They hold the models'
predictions, so a change to the memory or time model shows up here as a reviewable diff.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import GOLDEN, ROOT, check_golden, run_cli

DIFF = GOLDEN / "diff"
PAIRS = {
    # golden name: (old, new)
    "llama3-405b-pp8": ("specs/llama3-405b.par", "tests/golden/diff/llama3-405b-pp8.par"),
    "tiny-reordered": ("specs/tiny.par", "tests/golden/diff/tiny-reordered.par"),
    "tiny-reformatted": ("specs/tiny.par", "tests/golden/diff/tiny-reformatted.par"),
}


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("fmt,suffix", [("text", "txt"), ("md", "md"), ("json", "json")])
def test_golden(name, fmt, suffix):
    old, new = PAIRS[name]
    result = run_cli("diff", old, new, "--format", fmt)
    assert result.exit_code == 0, result.stderr
    check_golden(DIFF / f"{name}.{suffix}", result.stdout)
    assert run_cli("diff", old, new, "--format", fmt).stdout == result.stdout  # identical across runs


def test_facts_and_effects_of_the_pp8_change():
    data = json.loads(run_cli("diff", *PAIRS["llama3-405b-pp8"], "--format", "json").stdout)
    changed = {f["name"]: (f["old"], f["new"]) for f in data["facts"] if f["changed"]}
    assert changed["pp degree"] == ("16", "8") and changed["dp degree"] == ("64", "128")
    assert changed["virtual stages"] == ("4", "2") and changed["recompute"] == ("selective", "full")
    assert "schedule" not in changed and "dp sharding" not in changed
    assert changed["micro-batches per step"] == ("32", "16")
    assert "rank order" not in changed and "gpu" not in changed
    metrics = {m["name"]: m for m in data["metrics"]}
    step = metrics["step time"]
    assert step["delta"] == pytest.approx(step["new"] - step["old"])
    assert step["relative"] == pytest.approx(step["delta"] / step["old"])
    assert len(data["memory_per_stage"]) == 16
    assert data["memory_per_stage"][8]["new"] is None and data["memory_per_stage"][0]["new"] is not None
    assert data["summary"].startswith("changed layout, pp degree, dp degree")
    assert data["status"] == 0 and data["new"]["fits"] is True


def test_rank_order_is_a_fact():
    data = json.loads(run_cli("diff", *PAIRS["tiny-reordered"], "--format", "json").stdout)
    changed = {f["name"]: (f["old"], f["new"]) for f in data["facts"] if f["changed"]}
    assert changed["rank order"] == ("tp, pp, dp", "dp, tp, pp")
    assert changed["micro-batch"] == ("2", "1")


def test_the_hardware_blocks_optional_facts_are_facts(tmp_path):
    """A power limit, a slower HBM and in-network reduction change predictions: a reviewer sees
    each as a changed fact, not only its effect."""
    base = (ROOT / "specs" / "tiny.par").read_text()
    assert "hardware {" in base
    changed_text = base.replace("hardware {", "hardware {\n  power-limit 500 W\n  hbm-bandwidth 2.4 TB/s\n"
                                             "  nvls off\n  sharp on", 1)
    new = tmp_path / "tiny-hardware.par"
    new.write_text(changed_text)
    data = json.loads(run_cli("diff", "specs/tiny.par", str(new), "--format", "json").stdout)
    changed = {f["name"]: (f["old"], f["new"]) for f in data["facts"] if f["changed"]}
    assert changed == {"power limit": (None, "500 W"), "HBM bandwidth": (None, "2.40 TB/s"),
                       "in-network reduction": (None, "NVLS off, SHARP on")}


def test_comments_and_formatting_are_no_change():
    data = json.loads(run_cli("diff", *PAIRS["tiny-reformatted"], "--format", "json").stdout)
    assert not any(f["changed"] for f in data["facts"])
    assert all(m["delta"] in (0, None) for m in data["metrics"])
    assert data["summary"].startswith("no change in the layout's facts")


def test_exit_status_policy(tmp_path):
    old, new = PAIRS["llama3-405b-pp8"]
    data = json.loads(run_cli("diff", old, new, "--format", "json").stdout)
    slowdown = data["metrics"][0]["relative"] * 100
    assert slowdown > 1  # the golden change is slower
    result = run_cli("diff", old, new, "--max-slowdown", f"{slowdown - 0.5:.2f}")
    assert result.exit_code == 3 and "FAIL: step time +" in result.stdout
    assert run_cli("diff", old, new, "--max-slowdown", f"{slowdown + 0.5:.2f}").exit_code == 0
    assert run_cli("diff", new, old, "--max-slowdown", "0").exit_code == 0  # faster passes any threshold
    # The new layout no longer fits: status 1, with the memory error on stderr.
    too_big = tmp_path / "too-big.par"
    too_big.write_text((ROOT / "specs" / "llama3-405b.par").read_text(encoding="utf-8")
                       .replace("recompute selective", "recompute none").replace("micro-batch 1", "micro-batch 4")
                       .replace("global-batch 2048", "global-batch 4096"), encoding="utf-8")
    result = run_cli("diff", "specs/llama3-405b.par", str(too_big), "--format", "md")
    assert result.exit_code == 1
    assert "error[E0401]" in result.stderr
    assert "DOES NOT FIT" in result.stdout and result.stdout.startswith("### ❌ parc diff")
    # Errors in the old spec do not fail the diff (the change may be the fix).
    broken = tmp_path / "broken.par"
    broken.write_text("tp 2 x\n", encoding="utf-8")
    result = run_cli("diff", str(broken), "specs/tiny.par")
    assert result.exit_code == 0 and "error" in result.stderr
    assert run_cli("diff", "specs/tiny.par", str(broken)).exit_code == 1
    # Usage errors.
    assert run_cli("diff", "specs/tiny.par").exit_code == 2
    assert run_cli("diff", "specs/tiny.par", str(tmp_path / "missing.par")).exit_code == 2
    assert run_cli("diff", "specs/tiny.par", "specs/tiny.par", "--against", "HEAD").exit_code == 2


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True, text=True).stdout


def test_against_a_git_revision(tmp_path, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    spec = repo / "specs" / "job.par"
    spec.write_text((ROOT / "specs" / "tiny.par").read_text(encoding="utf-8"), encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    spec.write_text((ROOT / DIFF / "tiny-reordered.par").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(repo)
    result = run_cli("diff", "specs/job.par", "--against", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["old"]["file"] == "HEAD:specs/job.par"
    assert {f["name"] for f in data["facts"] if f["changed"]} == {"layout", "rank order", "micro-batch",
                                                                 "micro-batches per step"}
    # Run from inside the spec's folder too: the path is resolved against the file's directory.
    monkeypatch.chdir(repo / "specs")
    assert run_cli("diff", "job.par", "--against", "HEAD").exit_code == 0
    monkeypatch.chdir(repo)
    # A spec that did not exist at the revision is a new spec, not an error.
    (repo / "specs" / "new.par").write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_cli("diff", "specs/new.par", "--against", "HEAD")
    assert result.exit_code == 0 and "summary: new spec specs/new.par" in result.stdout
    result = run_cli("diff", "specs/job.par", "--against", "no-such-rev")
    assert result.exit_code == 2 and "cannot read `specs/job.par` at `no-such-rev`" in result.stderr


def test_help_shows_examples_and_the_exit_policy():
    result = run_cli("diff", "--help")
    assert "parc diff specs/llama3-405b.par --against origin/main" in result.stdout
    assert "3 slower than --max-slowdown" in result.stdout


OFFLOAD_BASE = """job a
dp 8 on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-sxm }
target megatron
train {
  seq 8192, global-batch 64, micro-batch 1
  precision bf16, recompute none%s
}
dp { sharding zero3 }
"""


def test_offloading_is_a_part_of_the_step_both_sides_show(tmp_path):
    """Switching `offload-activations` on adds its copies as their own row, so each side's breakdown
    still sums to its step (before this row, the step grew by seconds no row named)."""
    old, new = tmp_path / "a.par", tmp_path / "b.par"
    old.write_text(OFFLOAD_BASE % "")
    new.write_text(OFFLOAD_BASE % ", offload-activations 20")
    result = run_cli("diff", str(old), str(new), "--format", "json")
    metrics = {m["name"]: m for m in json.loads(result.stdout)["metrics"]}
    assert metrics["offload"]["old"] == 0 and metrics["offload"]["new"] > 0
    assert metrics["sent host"]["old"] == 0 and metrics["sent host"]["new"] > 0
    parts = ["compute", "recompute", "bubble time", "optimizer", "offload",
             *(f"exposed {a}" for a in ("tp", "pp", "dp", "cp", "ep"))]
    for side in ("old", "new"):
        total = sum(metrics[p][side] or 0 for p in parts)
        assert total == pytest.approx(metrics["step time"][side], rel=1e-3), side
    text = run_cli("diff", str(old), str(new)).stdout
    assert "  offload " in text and "  sent host " in text
