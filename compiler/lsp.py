"""`parc lsp`: a language server that shows parc's diagnostics in an editor while a user types.

It speaks the Language Server Protocol over stdio (pygls, an optional extra: `pip install
'parc[lsp]'`). On open, change and save it compiles the buffer's text with the same front end
and checks as `parc check` and publishes every diagnostic: code, severity, range, the secondary
labels as related information, notes and the `help:` line in the message. There is no debounce:
a spec is at most 64 KiB and compiles in milliseconds (benchmarks/cli_startup.py), so every
change is compiled and the editor always shows the current text's findings.

Also: hover on a diagnostic code (`allow W0306`), a setting key or an axis shows its explanation,
and document formatting runs `parc fmt`.

Positions: parc's spans count characters (code points) with 1-based lines and columns; LSP's are
0-based with `character` in the negotiated encoding's code units (UTF-16 unless the client
offers UTF-8 or UTF-32 first, which pygls 2 negotiates). `lsp_range` does that conversion.

pygls is imported only here, and this module only by the `lsp` command, so `parc` itself starts
without it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from .codes import CODES
from .diagnostics import Diagnostic, Severity, sort_key
from .source import SourceFile, Span

SERVER_NAME = "parc"
SOURCE = "parc"

WORD = re.compile(r"[A-Za-z0-9_][\w\-./]*")

AXIS_DOCS = {
    "tp": "**tp**: tensor parallelism: each layer's matrices are split over the group's ranks",
    "pp": "**pp**: pipeline parallelism: layers are cut into stages that pass activations along",
    "dp": "**dp**: data parallelism: ranks take different sequences of the batch",
    "cp": "**cp**: context parallelism: one sequence's tokens are split over the group's ranks",
    "ep": "**ep**: expert parallelism: the experts of MoE layers are spread over the group's ranks",
}


# ---------------------------------------------------------------------------------------------
# Pure conversions (tested without a client)


def code_units(text: str, encoding: str = "utf-16") -> int:
    """Length of `text` in the client's position units."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def lsp_position(source: SourceFile, line: int, col: int, encoding: str) -> dict:
    """A 1-based (line, column in characters) as an LSP position."""
    text = source.line_text(line)
    return {"line": line - 1, "character": code_units(text[: col - 1], encoding)}


def lsp_range(source: SourceFile, span: Span | None, encoding: str = "utf-16") -> dict:
    if span is None:  # a file-level problem: the first character
        return {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    return {"start": lsp_position(source, span.line, span.col, encoding),
            "end": lsp_position(source, span.end_line, span.end_col, encoding)}


def message_of(d: Diagnostic) -> str:
    """The message an editor shows: parc's message, its label, notes and help, one per line."""
    lines = [d.message + (f": {d.label}" if d.label else "")]
    lines += [f"note: {note}" for note in d.notes]
    if d.help:
        lines.append(f"help: {d.help}")
    if d.allowed:
        lines.append(f"(acknowledged with `allow {d.code}`)")
    return "\n".join(lines)


def severity_of(d: Diagnostic) -> int:
    """LSP DiagnosticSeverity: 1 error, 2 warning, 3 information (an acknowledged warning), 4 hint."""
    if d.is_error:
        return 1
    if d.allowed:
        return 3
    return 2 if d.severity is Severity.warning else 3


def to_lsp(d: Diagnostic, source: SourceFile, uri: str, encoding: str = "utf-16") -> dict:
    """One parc diagnostic as an LSP Diagnostic (plain JSON-shaped data)."""
    related = []
    for label in d.labels:
        if label.span.file == source.path:
            related.append({"location": {"uri": uri, "range": lsp_range(source, label.span, encoding)},
                            "message": label.message})
    out = {"range": lsp_range(source, d.span, encoding), "severity": severity_of(d), "code": d.code,
           "source": SOURCE, "message": message_of(d)}
    if related:
        out["relatedInformation"] = related
    return out


def uri_to_path(uri: str) -> str:
    """The path shown in parc's messages: the file's path for file:// URIs, else the URI."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return uri


def diagnose(text: str, uri: str, encoding: str = "utf-16") -> list[dict]:
    """Compile a buffer as `parc check` would and return its diagnostics in LSP form."""
    from .diagnostics import error
    from .pipeline import compile_text
    from .syntax import MAX_SPEC_BYTES

    path = uri_to_path(uri)
    if text.startswith("\ufeff"):
        text = text[1:]
    source = SourceFile(path, text)
    size = len(text.encode("utf-8"))
    if size > MAX_SPEC_BYTES:
        found = [error("E0003", f"the spec is larger than {MAX_SPEC_BYTES // 1024} KiB", source.span(0, 0),
                       help="a spec is a few hundred bytes; is this the right file?")]
    elif "\x00" in text:
        at = text.index("\x00")
        found = [error("E0002", "the spec contains a NUL byte", source.span(at, at + 1), label="binary data",
                       help="save the file as plain UTF-8 text")]
    else:
        compilation = compile_text(text, path=path)
        source = compilation.source
        found = compilation.diagnostics
    return [to_lsp(d, source, uri, encoding) for d in sorted(found, key=sort_key)]


def word_at(line_text: str, character: int) -> str | None:
    """The parc word (names hold - . /) under a character index, if any."""
    for match in WORD.finditer(line_text):
        if match.start() <= character <= match.end():
            return match.group()
    return None


def hover_text(word: str) -> str | None:
    """Markdown explaining a diagnostic code, an axis or a setting key."""
    from .spec import BLOCK_KEYS, TOP_KEYS

    code = CODES.get(word.upper()) if re.fullmatch(r"[EWew]\d{4}", word) else None
    if code is not None:
        return f"**{code.code}** ({code.severity}): {code.title}\n\n```text\n{code.explanation}\n```"
    if word in AXIS_DOCS:
        return AXIS_DOCS[word]
    if word in TOP_KEYS:
        return f"**{word}**: {TOP_KEYS[word]}"
    for block, keys in BLOCK_KEYS.items():
        for key in keys:
            if key.name == word:
                text = f"**{word}** (in `{block}`): {key.doc}\n\nexample: `{key.example}`"
                if key.choices:
                    text += "\n\nchoices: " + ", ".join(f"`{c}`" for c in key.choices)
                return text
    return None


def formatted(text: str) -> str | None:
    """`parc fmt`'s text for a buffer, or None when it has syntax errors (nothing to format)."""
    from .diagnostics import has_errors
    from .fmt import format_document
    from .syntax import parse

    document, diagnostics = parse(SourceFile("<buffer>", text))
    if has_errors(diagnostics):
        return None
    return format_document(document)


# ---------------------------------------------------------------------------------------------
# The server (pygls)


def _server_class():
    try:
        from pygls.lsp.server import LanguageServer  # pygls 2
    except ImportError:
        from pygls.server import LanguageServer  # pygls 1.x
    return LanguageServer


def build_server():
    """A pygls LanguageServer with parc's features registered."""
    from lsprotocol import types

    from . import __version__

    server = _server_class()(SERVER_NAME, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)

    def encoding() -> str:
        value = getattr(server.workspace, "position_encoding", None) or "utf-16"
        return str(getattr(value, "value", value))

    def publish(uri: str, diagnostics: list, version=None) -> None:
        items = [_structure_diagnostic(d, types) for d in diagnostics]
        if hasattr(server, "text_document_publish_diagnostics"):  # pygls 2
            server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=items, version=version))
        else:
            server.publish_diagnostics(uri, items, version)

    def validate(uri: str) -> None:
        document = server.workspace.get_text_document(uri)
        publish(uri, diagnose(document.source, uri, encoding()), document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams):
        validate(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams):
        validate(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams):
        validate(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams):
        publish(params.text_document.uri, [])

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams):
        document = server.workspace.get_text_document(params.text_document.uri)
        lines = document.lines
        line = params.position.line
        if line >= len(lines):
            return None
        text = lines[line].rstrip("\r\n")
        character = _from_units(text, params.position.character, encoding())
        word = word_at(text, character)
        markdown = hover_text(word) if word else None
        if markdown is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    def formatting(params: types.DocumentFormattingParams):
        document = server.workspace.get_text_document(params.text_document.uri)
        text = document.source
        new = formatted(text)
        if new is None or new == text:
            return []
        lines = text.split("\n")
        end = types.Position(line=len(lines) - 1, character=code_units(lines[-1], encoding()))
        return [types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end),
                               new_text=new)]

    return server


def _from_units(text: str, units: int, encoding: str) -> int:
    """A position's code units back to a character index in `text`."""
    count = 0
    for index, ch in enumerate(text):
        if count >= units:
            return index
        count += code_units(ch, encoding)
    return len(text)


def _structure_diagnostic(data: dict, types):
    """The lsprotocol object for one diagnostic built by `to_lsp` (plain data, tested alone)."""

    def rng(r):
        return types.Range(start=types.Position(**r["start"]), end=types.Position(**r["end"]))

    related = [types.DiagnosticRelatedInformation(
        location=types.Location(uri=item["location"]["uri"], range=rng(item["location"]["range"])),
        message=item["message"]) for item in data.get("relatedInformation", [])]
    return types.Diagnostic(range=rng(data["range"]), message=data["message"],
                            severity=types.DiagnosticSeverity(data["severity"]), code=data["code"],
                            source=data["source"], related_information=related or None)


def serve_stdio() -> None:
    build_server().start_io()
