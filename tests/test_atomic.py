"""Atomic output (issue 8): a failure in the middle of writing leaves the previous output whole.

`parc compile` builds the job directory in a temporary sibling and swaps it in; `parc fmt`
writes a temporary sibling of the spec and renames it over (compiler/atomic.py). Two kinds of
failure are injected at every step of that sequence, one run per step:

- an OSError (disk full, I/O error) from the k-th file-system call: the command exits 2 with a
  message, the previous output and the spec are byte-identical, no temporary file is left;
- SIGKILL of a real `parc` process just before or just after the k-th call: nothing can clean
  up, yet the output path holds exactly the old or exactly the new tree, never a mix or nothing
  (the leftover temporary sibling is harmless and named `.NAME.*`).

`parc search --write` gets the same tests in tests/test_search_write.py (issue 6).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import parc.atomic as atomic
import pytest

from .conftest import ROOT, run_cli

TINY = (ROOT / "specs" / "tiny.par").read_text()
OLD_SPEC = TINY
NEW_SPEC = TINY.replace("steps 4", "steps 7").replace("job tiny", "job tiny-new")
MESSY = TINY.replace("tp 2 x pp 2 x dp 2", "tp 2   x pp 2 x   dp 2").replace("  seq 32", "\tseq    32")

PATCHED = [
    ("os", "replace"), ("os", "fsync"), ("os", "fdopen"), ("os", "rename"), ("tempfile", "mkstemp"),
    ("tempfile", "mkdtemp"), ("shutil", "copymode"), ("pathlib", "Path.write_bytes"), ("pathlib", "Path.mkdir"),
    ("pathlib", "Path.chmod"), ("parc.atomic", "_exchange"),
]
"""Every file-system call atomic.py makes that can fail; a fault is injected into each in turn."""


def _owner(module: str, name: str):
    """The object that holds the attribute (`Path` for `Path.mkdir`) and the attribute's name."""
    import importlib

    owner = importlib.import_module(module)
    *path, attr = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attr


class Faults:
    """Counts calls of the patched functions and raises OSError(EIO) at call number `fail_at`."""

    def __init__(self, monkeypatch, fail_at: int | None = None):
        self.calls: list[str] = []
        self.fail_at = fail_at
        for module, name in PATCHED:
            owner, attr = _owner(module, name)
            monkeypatch.setattr(owner, attr, self._wrap(getattr(owner, attr), f"{module}.{name}"))

    def _wrap(self, real, label):
        def wrapper(*args, **kwargs):
            self.calls.append(label)
            if self.fail_at is not None and len(self.calls) == self.fail_at:
                raise OSError(errno.EIO, f"injected fault in {label}")
            return real(*args, **kwargs)

        return wrapper


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def siblings(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------------------------------------
# compile


def _compile_setup(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    old = tmp_path / "old.par"
    old.write_text(OLD_SPEC)
    new = tmp_path / "new.par"
    new.write_text(NEW_SPEC)
    out = tmp_path / "job"
    assert run_cli("compile", str(old), "-o", str(out)).exit_code == 0
    return new, out, tree(out)


def test_compile_with_a_fault_at_every_step_keeps_the_old_job(tmp_path, monkeypatch):
    steps = 0
    for fail_at in range(1, 100):
        work = tmp_path / str(fail_at)
        work.mkdir()
        new, out, before = _compile_setup(work)
        specs = {p.name: p.read_bytes() for p in work.glob("*.par")}
        with monkeypatch.context() as patch:
            faults = Faults(patch, fail_at)
            result = run_cli("compile", str(new), "-o", str(out))
        if fail_at > len(faults.calls):
            assert result.exit_code == 0 and tree(out) != before  # no fault: the new job
            break
        steps += 1
        where = f"fault in {faults.calls[-1]} (call {fail_at})"
        assert result.exit_code == 2, (where, result.stdout, result.stderr)
        assert "cannot write" in result.stderr and "injected fault" in result.stderr, where
        assert tree(out) == before, f"{where} changed the job"
        assert siblings(work) == ["job", "new.par", "old.par"], f"{where} left files behind"
        assert {p.name: p.read_bytes() for p in work.glob("*.par")} == specs
    assert steps >= 8, "every write must go through the patched calls"


def test_without_an_atomic_exchange_a_fault_still_puts_the_old_job_back(tmp_path, monkeypatch):
    """Where renameat2 is missing the swap takes two renames; a fault between them rolls back."""
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    new, out, before = _compile_setup(tmp_path)
    real = os.replace

    def second_rename_fails(src, dst):
        if Path(dst) == out and Path(src).name.endswith(".tmp"):  # staging -> job, not the roll-back
            raise OSError(errno.EIO, "injected fault in the second rename")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", second_rename_fails)
    result = run_cli("compile", str(new), "-o", str(out))
    monkeypatch.undo()
    assert result.exit_code == 2 and tree(out) == before
    assert siblings(tmp_path) == ["job", "new.par", "old.par"]


def test_the_exchange_swaps_two_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("A")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "f").write_text("B")
    if not atomic._exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this system has no renameat2 RENAME_EXCHANGE: parc falls back to two renames")
    assert (tmp_path / "a" / "f").read_text() == "B" and (tmp_path / "b" / "f").read_text() == "A"


def test_compile_interrupted_by_ctrl_c_keeps_the_old_job(tmp_path, monkeypatch):
    new, out, before = _compile_setup(tmp_path)
    real = Path.write_bytes

    def interrupted(self, data):
        if self.name == "README.md":
            raise KeyboardInterrupt
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", interrupted)
    result = run_cli("compile", str(new), "-o", str(out))
    monkeypatch.undo()
    assert result.exit_code != 0
    assert tree(out) == before and siblings(tmp_path) == ["job", "new.par", "old.par"]


# ---------------------------------------------------------------------------------------------
# fmt


def rewrite_with_a_fault_at_every_step(tmp_path: Path, monkeypatch, name: str, text: str,
                                       command: Callable[[str], tuple[str, ...]],
                                       written: Callable[[str], bool]) -> None:
    """Run the command that rewrites a spec (NAME holding TEXT) once per file-system call it
    makes, failing that call: each run exits 2 with a message and leaves the spec byte-identical,
    mode included, with no sibling; the first run past the last call succeeds and `written`
    accepts what it wrote."""
    steps = 0
    for fail_at in range(1, 30):
        work = tmp_path / str(fail_at)
        work.mkdir()
        spec = work / name
        spec.write_text(text)
        spec.chmod(0o640)
        with monkeypatch.context() as patch:
            faults = Faults(patch, fail_at)
            result = run_cli(*command(str(spec)))
        if fail_at > len(faults.calls):
            assert result.exit_code == 0 and written(spec.read_text())
            break
        steps += 1
        where = f"fault in {faults.calls[-1]} (call {fail_at})"
        assert result.exit_code == 2, (where, result.stderr)
        assert "cannot write" in result.stderr and "injected fault" in result.stderr, where
        assert spec.read_text() == text and siblings(work) == [name], where
        assert spec.stat().st_mode & 0o777 == 0o640, where
    assert steps >= 4


def test_fmt_with_a_fault_at_every_step_keeps_the_spec(tmp_path, monkeypatch):
    rewrite_with_a_fault_at_every_step(tmp_path, monkeypatch, "messy.par", MESSY,
                                       lambda spec: ("fmt", spec), lambda new: new != MESSY)


def test_fmt_writes_the_formatted_text_and_keeps_the_mode(tmp_path):
    spec = tmp_path / "messy.par"
    spec.write_text(MESSY)
    spec.chmod(0o640)
    assert run_cli("fmt", str(spec)).exit_code == 0
    assert spec.read_text() != MESSY and run_cli("fmt", "--check", str(spec)).exit_code == 0
    assert spec.stat().st_mode & 0o777 == 0o640 and siblings(tmp_path) == ["messy.par"]


def test_fmt_through_a_symlink_rewrites_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "real.par"
    real.write_text(MESSY)
    link = tmp_path / "link.par"
    link.symlink_to("real.par")
    assert run_cli("fmt", str(link)).exit_code == 0
    assert link.is_symlink() and real.read_text() != MESSY
    assert run_cli("fmt", "--check", str(real)).exit_code == 0
    assert siblings(tmp_path) == ["link.par", "real.par"]


def test_fmt_of_several_files_stops_at_none_and_reports_the_one_it_could_not_write(tmp_path, monkeypatch):
    good, bad = tmp_path / "a.par", tmp_path / "b.par"
    good.write_text(MESSY)
    bad.write_text(MESSY)
    real = os.replace

    def failing(src, dst):
        if str(dst).endswith("b.par"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    result = run_cli("fmt", str(good), str(bad))
    monkeypatch.undo()
    assert result.exit_code == 2
    assert f"cannot write `{bad}`" in result.stderr
    assert bad.read_text() == MESSY and good.read_text() != MESSY
    assert siblings(tmp_path) == ["a.par", "b.par"]


# ---------------------------------------------------------------------------------------------
# SIGKILL at every step, in a real process

_KILLER = textwrap.dedent("""
    import importlib, os, signal, sys
    step, when = int(os.environ["PARC_TEST_KILL_AT"]), os.environ["PARC_TEST_KILL_WHEN"]
    calls = [0]
    def wrap(owner, name):
        real = getattr(owner, name)
        def wrapper(*args, **kwargs):
            calls[0] += 1
            if calls[0] == step and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = real(*args, **kwargs)
            if calls[0] == step and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        setattr(owner, name, wrapper)
    for module, name in {patched!r}:
        owner = importlib.import_module(module)
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        wrap(owner, attr)
    if os.environ.get("PARC_TEST_NO_EXCHANGE"):
        import parc.atomic
        parc.atomic._exchange = lambda a, b: False
    from parc.cli import main
    main(sys.argv[1:], prog_name="parc")
""")


def _killed_run(args: list[str], step: int, when: str, cwd: Path, exchange: bool = True) -> int:
    env = {**os.environ, "PARC_TEST_KILL_AT": str(step), "PARC_TEST_KILL_WHEN": when, "NO_COLOR": "1"}
    if not exchange:
        env["PARC_TEST_NO_EXCHANGE"] = "1"
    proc = subprocess.run([sys.executable, "-c", _KILLER.format(patched=PATCHED), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", pytest.param("after", marks=pytest.mark.long)])
def test_compile_killed_at_every_step_leaves_the_old_or_the_new_job(tmp_path, monkeypatch, when):
    # Relative paths throughout: plan.json names the spec as given, so trees compare across folders.
    reference = tmp_path / "reference"
    reference.mkdir()
    monkeypatch.chdir(reference)
    _compile_setup(Path("."))
    assert run_cli("compile", "new.par", "-o", "new-job").exit_code == 0
    new_tree = tree(reference / "new-job")
    killed = 0
    for step in range(1, 60):
        work = tmp_path / f"{when}-{step}"
        work.mkdir()
        monkeypatch.chdir(work)
        _, out, old_tree = _compile_setup(Path("."))
        status = _killed_run(["compile", "new.par", "-o", "job"], step, when, work)
        if status == 0:
            break  # past the last call: the run finished
        assert status == -signal.SIGKILL
        killed += 1
        assert out.is_dir(), f"killed {when} call {step}: the job directory is gone"
        assert tree(out) in (old_tree, new_tree), f"killed {when} call {step}: a mix of old and new"
        leftovers = [n for n in siblings(work) if n not in ("job", "new.par", "old.par")]
        assert all(n.startswith(".job.") for n in leftovers), leftovers
    assert killed >= 8


@pytest.mark.long
def test_the_kill_test_can_fail_two_renames_leave_a_moment_without_the_job(tmp_path, monkeypatch):
    """Why the exchange matters: without it, a kill between the two renames loses the job path."""
    for step in range(1, 60):
        work = tmp_path / str(step)
        work.mkdir()
        monkeypatch.chdir(work)
        _compile_setup(Path("."))
        status = _killed_run(["compile", "new.par", "-o", "job"], step, "after", work, exchange=False)
        assert status != 0, "the run finished without ever losing the job directory"
        if not (work / "job").exists():
            return
    pytest.fail("no step left the job path empty")


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after"])
def test_fmt_killed_at_every_step_leaves_the_old_or_the_new_spec(tmp_path, when):
    formatted_dir = tmp_path / "reference"
    formatted_dir.mkdir()
    (formatted_dir / "messy.par").write_text(MESSY)
    assert run_cli("fmt", str(formatted_dir / "messy.par")).exit_code == 0
    formatted = (formatted_dir / "messy.par").read_text()
    killed = 0
    for step in range(1, 20):
        work = tmp_path / f"{when}-{step}"
        work.mkdir()
        spec = work / "messy.par"
        spec.write_text(MESSY)
        status = _killed_run(["fmt", str(spec)], step, when, work)
        if status == 0:
            break
        assert status == -signal.SIGKILL
        killed += 1
        assert spec.read_text() in (MESSY, formatted)
        assert all(n == "messy.par" or n.startswith(".messy.par.") for n in siblings(work))
    assert killed >= 3


# ---------------------------------------------------------------------------------------------


def test_search_write_is_atomic_too():
    """Issue 6: `parc search --write` rewrites the spec through atomic.write_file; its fault and
    kill tests, with this file's harness, are in tests/test_search_write.py."""
    from . import test_search_write

    assert test_search_write.rewrite_with_a_fault_at_every_step is rewrite_with_a_fault_at_every_step
    assert test_search_write._killed_run is _killed_run
    names = [n for n in dir(test_search_write) if n.startswith("test_")]
    assert any("fault_at_every_step" in n for n in names) and any("killed_at_every_step" in n for n in names)


def test_write_tree_refuses_paths_outside_before_touching_anything(tmp_path):
    with pytest.raises(atomic.OutputError):
        atomic.write_tree(tmp_path / "out", {"plan.json": "{}", "../escape": "x"})
    assert siblings(tmp_path) == []
