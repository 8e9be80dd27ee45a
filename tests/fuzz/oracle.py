"""Run one input through the real `parc` commands and check what must hold for any input.

The invariants (issue 8):
- no command raises: in-process runs set PARC_DEBUG=1 so that parc's last-resort guard re-raises
  and the traceback is kept; subprocess runs leave the guard on and treat its status 70 as a bug;
  a check rule that raised shows as an E0299 "internal error" diagnostic: a bug too;
- every exit status is 0, 1 or 2, and the text and JSON forms of `check` agree on it;
- every error diagnostic has a span, inside the file, whose line and column match its offset;
- `compile -o DIR` writes a complete directory or nothing (no temporary siblings left behind),
  writes the same bytes twice, and fails exactly when `check` does;
- `fmt` leaves a file it cannot format byte-identical; what it writes parses, means the same
  (tests/test_fmt.py's `meaning`) and is a fixed point (`fmt --check` passes on it);
- `explain` and `search` (once they exist) obey the same status and traceback rules.
Each run has a time limit; running past it is a failure too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SPEC_NAME = "fuzz.par"
TIME_LIMIT_S = 10.0
"""Per command; a fuzzed spec checks in well under a second, so this only catches hangs. It also
bounds a memory bomb in-process (one input grew by 300 MB a second); the long run adds RLIMIT_AS."""


@dataclass(frozen=True)
class Failure:
    kind: str
    """exception | internal (E0299) | status | span | json | compile | fmt | timeout | traceback"""
    command: str
    detail: str

    def signature(self) -> str:
        """What makes two failures the same bug: the kind, command and the last parc frame."""
        last = [line for line in self.detail.splitlines() if "/compiler/" in line or "/backends/" in line]
        where = last[-1].strip() if last else self.detail.splitlines()[-1][:120] if self.detail else ""
        return f"{self.kind}:{self.command.split()[0]}:{where}"


@dataclass
class Outcome:
    failures: list[Failure] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    codes: frozenset[str] = frozenset()
    """Diagnostic codes `check` reported: the long run keeps inputs that show new sets."""


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` in parc swallows it."""


@contextmanager
def _time_limit(seconds: float):
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _commands() -> set[str]:
    from parc.cli import main

    return set(main.commands)


def invoke(args: list[str], time_limit: float | None = None):
    """`parc ARGS` in-process with the guard off; returns (status, stdout, stderr, failure)."""
    from click.testing import CliRunner

    time_limit = TIME_LIMIT_S if time_limit is None else time_limit
    from parc.cli import main

    runner = CliRunner()
    command = " ".join(args[:1] + [a for a in args[1:] if a.startswith("-")])
    try:
        with _time_limit(time_limit):
            result = runner.invoke(main, args, env={"NO_COLOR": "1", "PARC_DEBUG": "1"}, catch_exceptions=True)
    except Hang:  # raised inside parc, so the traceback says where it was stuck
        return None, "", "", Failure("timeout", command, f"over {time_limit:.0f} s\n{traceback.format_exc()}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if isinstance(result.exception, Hang):
            detail = "".join(traceback.format_exception(*result.exc_info))
            return None, "", "", Failure("timeout", command, f"over {time_limit:.0f} s\n{detail}")
        detail = "".join(traceback.format_exception(*result.exc_info))
        return None, result.stdout, result.stderr, Failure("exception", command, detail)
    status = result.exit_code
    if status not in (0, 1, 2):
        return status, result.stdout, result.stderr, Failure("status", command, f"exit status {status}\n{result.stderr[-2000:]}")
    return status, result.stdout, result.stderr, None


def _source_text(path: Path) -> str | None:
    from parc.pipeline import UnreadableSpec, read_source

    try:
        source, _ = read_source(str(path))
    except UnreadableSpec:
        return None
    return source.text


def _check_spans(report: dict, text: str) -> list[Failure]:
    from parc.source import SourceFile

    source = SourceFile(SPEC_NAME, text)
    out = []
    for file in report.get("files", []):
        for d in file["diagnostics"]:
            spans = [("span", d.get("span"))] + [("label", label["span"]) for label in d.get("labels", [])]
            for what, span in spans:
                if span is None:
                    if d["severity"] == "error" and what == "span":
                        out.append(Failure("span", "check", f"{d['code']} has no span: {d['message']}"))
                    continue
                inside = 0 <= span["start"] <= span["end"] <= len(text)
                if not inside:
                    out.append(Failure("span", "check", f"{d['code']} {what} {span['start']}..{span['end']} "
                                       f"outside 0..{len(text)}: {d['message']}"))
                    continue
                if (span["line"], span["col"]) != source.position(span["start"]) or (
                        span["end_line"], span["end_col"]) != source.position(span["end"]):
                    out.append(Failure("span", "check", f"{d['code']} {what} line/col disagree with offsets: {span}"))
    return out


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def check_input(data: bytes, workdir: Path | None = None, extra: bool = True) -> Outcome:
    """Every invariant on one input, in-process. `workdir` is emptied by the caller."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="parc-fuzz-") as tmp:
            return check_input(data, Path(tmp), extra)
    outcome = Outcome()
    fail = outcome.failures.append
    spec = workdir / SPEC_NAME
    spec.write_bytes(data)
    text = _source_text(spec)

    # check, as JSON and as text
    status, stdout, _, failure = invoke(["check", str(spec), "--format", "json"])
    outcome.statuses["check-json"] = status
    if failure:
        fail(failure)
    elif status in (0, 1):
        try:
            report = json.loads(stdout)
        except ValueError as exc:
            fail(Failure("json", "check --format json", f"{exc}: {stdout[:300]!r}"))
            report = {}
        if report and text is not None:
            outcome.failures.extend(_check_spans(report, text))
            diagnostics = [d for f in report["files"] for d in f["diagnostics"]]
            outcome.codes = frozenset(d["code"] for d in diagnostics)
            for d in diagnostics:
                if d["code"] == "E0299":  # a stage or rule that raised, caught by parc itself
                    fail(Failure("internal", "check", f"E0299 {d['message']}: {' '.join(d.get('notes', []))}"))
            has_errors = any(d["severity"] == "error" for d in diagnostics)
            if has_errors != (status == 1):
                fail(Failure("status", "check --format json", f"status {status} but errors={has_errors}"))
    text_status, _, stderr, failure = invoke(["check", str(spec)])
    outcome.statuses["check"] = text_status
    if failure:
        fail(failure)
    elif text_status != status:
        fail(Failure("status", "check", f"text status {text_status} != json status {status}\n{stderr[-1000:]}"))

    # compile, twice into the same directory
    out = workdir / "job"
    compile_status, _, stderr, failure = invoke(["compile", str(spec), "-o", str(out)])
    outcome.statuses["compile"] = compile_status
    if failure:
        fail(failure)
    else:
        leftovers = sorted(p.name for p in workdir.iterdir() if p.name not in (SPEC_NAME, "job"))
        if leftovers:
            fail(Failure("compile", "compile -o", f"left behind {leftovers}"))
        if compile_status == 0:
            if not (out / "plan.json").is_file():
                fail(Failure("compile", "compile -o", "status 0 but no plan.json"))
            first = _tree(out)
            again, _, stderr2, failure = invoke(["compile", str(spec), "-o", str(out)])
            if failure:
                fail(failure)
            elif again != 0 or _tree(out) != first:
                fail(Failure("compile", "compile -o", f"second compile: status {again}, same files: "
                             f"{_tree(out) == first}\n{stderr2[-1000:]}"))
        elif out.exists():
            fail(Failure("compile", "compile -o", f"status {compile_status} but `{out.name}/` was written"))
        if status == 1 and compile_status not in (1, None):
            fail(Failure("compile", "compile -o", f"check failed but compile exited {compile_status}"))
        if status == 0 and compile_status == 2:
            fail(Failure("compile", "compile -o", f"check passed but compile could not write\n{stderr[-1000:]}"))

    # fmt --check leaves the file alone; fmt on a copy writes a fixed point with the same meaning
    check_status, _, _, failure = invoke(["fmt", "--check", str(spec)])
    outcome.statuses["fmt-check"] = check_status
    if failure:
        fail(failure)
    if spec.read_bytes() != data:
        fail(Failure("fmt", "fmt --check", "the spec changed"))
    copy = workdir / "copy.par"
    copy.write_bytes(data)
    fmt_status, _, _, failure = invoke(["fmt", str(copy)])
    if failure:
        fail(failure)
    elif fmt_status == 0:
        formatted = _source_text(copy)  # as parc reads it: a byte-order mark is not part of the text
        outcome.failures.extend(_check_formatted(text, formatted))
        if check_status == 0 and copy.read_bytes() != data:
            fail(Failure("fmt", "fmt", "`fmt --check` passed but `fmt` changed the file"))
        again, _, _, failure = invoke(["fmt", "--check", str(copy)])
        if failure:
            fail(failure)
        elif again != 0:
            fail(Failure("fmt", "fmt", "not idempotent: `fmt --check` fails on fmt's own output"))
    elif copy.read_bytes() != data:
        fail(Failure("fmt", "fmt", f"status {fmt_status} but the file was rewritten"))
    copy.unlink(missing_ok=True)

    if extra:
        commands = _commands()
        if "explain" in commands:
            explain_status, _, _, failure = invoke(["explain", str(spec)])
            outcome.statuses["explain"] = explain_status
            if failure:
                fail(failure)
    return outcome


def _check_formatted(original: str | None, formatted: str) -> list[Failure]:
    from parc.source import SourceFile
    from parc.syntax import parse

    from ..test_fmt import meaning

    document, errors = parse(SourceFile(SPEC_NAME, formatted))
    if errors:
        return [Failure("fmt", "fmt", f"fmt's output does not parse: {errors[0].code} {errors[0].message}")]
    if original is not None:
        try:
            if meaning(formatted) != meaning(original):
                return [Failure("fmt", "fmt", "fmt changed the meaning")]
        except AssertionError as exc:
            return [Failure("fmt", "fmt", f"fmt succeeded on a spec with syntax errors: {exc}"[:500])]
    return []


# ---------------------------------------------------------------------------------------------
# As a separate process: what a user sees (the guard on, the real interpreter start-up)


def check_subprocess(data: bytes, workdir: Path, time_limit: float = 60.0) -> list[Failure]:
    spec = workdir / SPEC_NAME
    spec.write_bytes(data)
    out = workdir / "sub-job"
    failures = []
    runs = [["check", str(spec), "--format", "json"], ["compile", str(spec), "-o", str(out)],
            ["fmt", "--check", str(spec)]]
    if "explain" in _commands():
        runs.append(["explain", str(spec)])
    env = {k: v for k, v in os.environ.items() if k != "PARC_DEBUG"}
    env["NO_COLOR"] = "1"
    for args in runs:
        name = " ".join(args[:1] + [a for a in args[1:] if a.startswith("-")])
        try:
            proc = subprocess.run([sys.executable, "-m", "parc", *args], capture_output=True, text=True,
                                  timeout=time_limit, env=env, errors="replace")
        except subprocess.TimeoutExpired:
            failures.append(Failure("timeout", name, f"subprocess over {time_limit:.0f} s"))
            continue
        if proc.returncode not in (0, 1, 2):
            failures.append(Failure("status", name, f"subprocess exit {proc.returncode}\n{proc.stderr[-2000:]}"))
        if "Traceback" in proc.stderr:
            failures.append(Failure("traceback", name, proc.stderr[-2000:]))
    return failures
