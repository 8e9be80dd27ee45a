"""The front end as one call: read a file, run the stages in order, collect every diagnostic.

Reading is where hostile input first arrives (a directory, a binary file, 10 MB of text), so it
is handled here once: each failure becomes a diagnostic, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import resolve as resolve_stage
from . import spec as spec_stage
from . import syntax
from .checks import run_checks
from .diagnostics import Diagnostic, error, has_errors
from .plan import Plan
from .source import SourceFile
from .spec import Spec
from .syntax import Document

_INDEPENDENT = {"E0202", "E0212", "E0214", "E0215"}
"""Resolution findings that stay true whatever a broken statement elsewhere meant."""


class UnreadableSpec(Exception):
    """The path cannot be read at all (missing, a directory, no permission): a usage error."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


@dataclass
class Compilation:
    """Everything the front end produced for one spec; later stages read `plan`."""

    source: SourceFile
    document: Document | None = None
    spec: Spec | None = None
    plan: Plan | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.plan is not None and not has_errors(self.diagnostics)


def read_source(path: str) -> tuple[SourceFile, list[Diagnostic]]:
    """Read a spec as text. Raises UnreadableSpec when there is nothing to read."""
    empty = SourceFile(path, "")
    try:
        with open(path, "rb") as handle:
            data = handle.read(syntax.MAX_SPEC_BYTES + 1)
    except IsADirectoryError:
        raise UnreadableSpec(error("E0001", f"`{path}` is a directory, not a spec", None,
                                   help="pass a .par file, e.g. `parc check specs/llama3-405b.par`")) from None
    except FileNotFoundError:
        raise UnreadableSpec(error("E0001", f"`{path}` does not exist", None,
                                   help="check the path; specs usually live in `specs/`")) from None
    except PermissionError:
        raise UnreadableSpec(error("E0001", f"`{path}` cannot be read: permission denied", None,
                                   help="check the file's permissions")) from None
    except OSError as exc:
        raise UnreadableSpec(error("E0001", f"`{path}` cannot be read: {exc.strerror or exc}", None,
                                   help="pass a regular .par file")) from None
    if len(data) > syntax.MAX_SPEC_BYTES:
        return empty, [error("E0003", f"`{path}` is larger than {syntax.MAX_SPEC_BYTES // 1024} KiB", empty.span(0, 0),
                             help="a spec is a few hundred bytes; is this the right file?")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        source = SourceFile(path, good + data[exc.start :].decode("utf-8", errors="replace"))
        return source, [error("E0002", "the spec is not UTF-8 text", source.span(len(good), len(good) + 1),
                              label=f"byte 0x{data[exc.start]:02x} is not valid UTF-8",
                              help="save the file as UTF-8; is it a binary file?")]
    if "\x00" in text:
        at = text.index("\x00")
        source = SourceFile(path, text)
        return source, [error("E0002", "the spec contains a NUL byte", source.span(at, at + 1),
                              label="binary data", help="save the file as plain UTF-8 text")]
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, text), []


def compile_source(source: SourceFile, checks: bool = True) -> Compilation:
    """Run parse -> build -> resolve -> checks, stopping where a stage has nothing to pass on."""
    result = Compilation(source)
    document, diagnostics = syntax.parse(source)
    result.document = document
    result.diagnostics.extend(diagnostics)
    spec, diagnostics = spec_stage.build(document)
    result.spec = spec
    result.diagnostics.extend(diagnostics)
    earlier_errors = has_errors(result.diagnostics)
    plan, diagnostics = resolve_stage.resolve(spec)
    if earlier_errors:
        # A statement that failed to parse is missing from the Spec, so "missing" and
        # "mismatch" findings would be echoes of that error; unknown names are still real.
        result.diagnostics.extend(d for d in diagnostics if d.code in _INDEPENDENT)
        return result
    result.diagnostics.extend(diagnostics)
    result.plan = plan
    if plan is not None and checks and not has_errors(result.diagnostics):
        result.diagnostics.extend(run_checks(plan))
    return result


def compile_path(path: str, checks: bool = True) -> Compilation:
    source, diagnostics = read_source(path)
    if diagnostics:
        return Compilation(source, diagnostics=diagnostics)
    return compile_source(source, checks=checks)


def compile_text(text: str, path: str = "<spec>", checks: bool = True) -> Compilation:
    return compile_source(SourceFile(path, text), checks=checks)
