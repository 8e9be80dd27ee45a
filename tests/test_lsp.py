"""`parc lsp`: a real exchange with the language server over stdio.

The client here is a few lines of JSON-RPC with Content-Length framing, written from the LSP
specification, so the test does not trust pygls to test pygls. It starts `parc lsp` as a
subprocess and goes initialize -> initialized -> didOpen a spec with errors -> publishDiagnostics
(ranges, codes, severities, related information and help compared with parc's own compilation,
positions recomputed in UTF-16 here) -> hover -> formatting -> didChange to the fixed text ->
empty diagnostics -> shutdown -> exit, and the process ends with status 0.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from parc.pipeline import compile_text

from .conftest import ROOT

pytest.importorskip("pygls", reason="pygls is in the `test` extra; `pip install -e '.[test]'`")

BAD = """\
# a spec with mistakes: 😋 a character outside the BMP before the error on line 3
job "ü😋" demo
launch { image "😋", prot 29500 }
tp 2 x pp 2 x dp 2 on nodes(4 gpus, nvlink)
model tiny { heads 3 }
hardware {
  gpu h100-sxm
}
train {
  seq 32
  global-batch 16
  micro_batch 2
}
"""

FIXED = """\
job demo
tp 2 x pp 2 x dp 2 on nodes(4 gpus, nvlink)
model tiny
hardware {
  gpu h100-sxm
}
train {
  seq 32
  global-batch 64
  micro-batch 2
}
"""

ACKNOWLEDGED = FIXED.replace("global-batch 64", "global-batch 16") + """\
pp {
  schedule gpipe
} allow W0323
"""


class Client:
    """A minimal LSP client: framed JSON-RPC over a subprocess's pipes."""

    def __init__(self, command: list[str]):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=ROOT)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put(json.loads(body.decode("utf-8")))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict | None, timeout: float = 30) -> dict:
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)
        assert "error" not in reply, reply
        return reply["result"]

    def wait(self, match, timeout: float = 30) -> dict:
        while True:
            try:
                message = self.messages.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("the server sent nothing matching in time") from None
            assert message is not None, f"the server exited: {self.process.stderr.read().decode()}"
            if message.get("method") == "window/logMessage":
                continue
            if match(message):
                return message

    def diagnostics(self, uri: str, version: int) -> list[dict]:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and m["params"].get("version") == version)
        return message["params"]["diagnostics"]


def utf16_position(text: str, line: int, col: int) -> dict:
    """parc's 1-based (line, column in characters) as LSP's 0-based UTF-16 position."""
    line_text = text.split("\n")[line - 1]
    return {"line": line - 1, "character": len(line_text[: col - 1].encode("utf-16-le")) // 2}


@pytest.fixture
def client():
    c = Client([sys.executable, "-m", "parc", "lsp", "--stdio"])
    yield c
    if c.process.poll() is None:
        c.process.kill()
    c.process.wait(timeout=10)
    for stream in (c.process.stdin, c.process.stdout, c.process.stderr):
        stream.close()


def test_diagnostics_while_typing(client, tmp_path: Path):
    uri = (tmp_path / "demo.par").as_uri()
    init = client.request("initialize", {"processId": None, "rootUri": None,
                                         "capabilities": {"general": {"positionEncodings": ["utf-16"]}}})
    caps = init["capabilities"]
    assert caps["positionEncoding"] == "utf-16"
    assert caps["hoverProvider"] and caps["documentFormattingProvider"]
    assert init["serverInfo"]["name"] == "parc"
    client.notify("initialized", {})

    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "par", "version": 1,
                                                            "text": BAD}})
    got = client.diagnostics(uri, 1)
    expected = compile_text(BAD, path=str(tmp_path / "demo.par")).diagnostics
    assert {d["code"] for d in got} == {d.code for d in expected}
    assert len(got) == len(expected) >= 3
    for d in expected:
        match = [g for g in got if g["code"] == d.code and g["range"]["start"] == utf16_position(BAD, d.span.line, d.span.col)]
        assert match, (d.code, d.span, got)
        lsp = match[0]
        assert lsp["range"]["end"] == utf16_position(BAD, d.span.end_line, d.span.end_col)
        assert lsp["severity"] == (1 if d.is_error else 2)
        assert lsp["source"] == "parc"
        assert lsp["message"].startswith(d.message)
        if d.help:
            assert f"help: {d.help}" in lsp["message"]
        for label in d.labels:
            assert {"location": {"uri": uri, "range": {"start": utf16_position(BAD, label.span.line, label.span.col),
                                                       "end": utf16_position(BAD, label.span.end_line, label.span.end_col)}},
                    "message": label.message} in lsp.get("relatedInformation", [])
    # Fixed by hand: `prot` on line 3 sits after two astral characters (two UTF-16 units each).
    prot = next(g for g in got if "`prot`" in g["message"])
    assert prot["code"] == "E0201"
    assert prot["range"] == {"start": {"line": 2, "character": 21}, "end": {"line": 2, "character": 25}}
    micro = next(g for g in got if "`micro_batch`" in g["message"])
    assert micro["range"]["start"] == {"line": 11, "character": 2}
    assert "help: did you mean `micro-batch`?" in micro["message"]

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 11, "character": 4}})
    assert hover is None or "micro_batch" not in json.dumps(hover)  # not a key: nothing to explain
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 9, "character": 3}})
    assert "sequence length" in hover["contents"]["value"]

    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": FIXED}]})
    assert client.diagnostics(uri, 2) == []

    # An acknowledged warning stays visible as information, with its secondary labels.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": ACKNOWLEDGED}]})
    (ack,) = client.diagnostics(uri, 3)
    assert ack["code"] == "W0323" and ack["severity"] == 3
    assert ack["range"] == {"start": {"line": 12, "character": 11}, "end": {"line": 12, "character": 16}}
    assert [r["location"]["range"]["start"] for r in ack["relatedInformation"]] == [
        {"line": 1, "character": 10}, {"line": 8, "character": 15}]
    assert ack["relatedInformation"][1]["message"] == "4 micro-batches per step"
    assert ack["message"].endswith("(acknowledged with `allow W0323`)")
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 13, "character": 10}})
    assert hover["contents"]["value"].startswith("**W0323**")

    messy = FIXED.replace("tp 2 x pp 2", "tp 2  x   pp 2").replace("  seq 32", "seq 32")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4},
                                             "contentChanges": [{"text": messy}]})
    assert client.diagnostics(uri, 4) == []
    edits = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                       "options": {"tabSize": 2, "insertSpaces": True}})
    assert len(edits) == 1 and edits[0]["newText"] == FIXED

    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")["params"]["diagnostics"] == []
    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    assert client.process.wait(timeout=30) == 0


def test_positions_in_the_negotiated_encoding(client, tmp_path: Path):
    uri = (tmp_path / "demo.par").as_uri()
    init = client.request("initialize", {"processId": None, "rootUri": None,
                                         "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}})
    encoding = init["capabilities"].get("positionEncoding", "utf-16")
    assert encoding in ("utf-8", "utf-16")  # pygls 2 takes the client's first choice, pygls 1.3 utf-16
    client.notify("initialized", {})
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "par", "version": 1,
                                                            "text": BAD}})
    prot = next(g for g in client.diagnostics(uri, 1) if "`prot`" in g["message"])
    line = BAD.split("\n")[2]
    start = len(line[: line.index("prot")].encode(encoding + ("-le" if encoding == "utf-16" else "")))
    start //= 2 if encoding == "utf-16" else 1
    assert prot["range"]["start"] == {"line": 2, "character": start}
    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    assert client.process.wait(timeout=30) == 0


def test_conversions_without_a_server():
    from parc.lsp import code_units, lsp_range, word_at
    from parc.source import SourceFile

    assert code_units("a😋b") == 4 and code_units("a😋b", "utf-8") == 6 and code_units("a😋b", "utf-32") == 3
    source = SourceFile("x.par", "é😋 tp\n")
    assert lsp_range(source, source.span(3, 5)) == {"start": {"line": 0, "character": 4},
                                                    "end": {"line": 0, "character": 6}}
    assert lsp_range(source, None)["start"] == {"line": 0, "character": 0}
    assert word_at("  global-batch 16", 5) == "global-batch"


def test_parc_starts_without_pygls():
    """`parc --help` never imports pygls, and `parc lsp` without it says what to install."""
    probe = """
import sys
sys.modules["pygls"] = None  # as if not installed: import raises ImportError
from parc.cli import main
try:
    main(["lsp"], standalone_mode=True)
except SystemExit as exc:
    print("STATUS", exc.code)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "STATUS 2" in done.stdout, done
    assert "needs the pygls package" in done.stderr and "pip install 'parc[lsp]'" in done.stderr
    done = subprocess.run([sys.executable, "-c", "import sys; from parc.cli import main\n"
                           "try: main(['--help'])\nexcept SystemExit: pass\n"
                           "print(sorted(m for m in sys.modules if m.startswith(('pygls', 'lsprotocol'))))"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip().endswith("[]"), done


def test_help_shows_an_example():
    from .conftest import run_cli

    result = run_cli("lsp", "--help")
    assert result.exit_code == 0 and "parc lsp --stdio" in result.stdout
