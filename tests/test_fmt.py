"""`parc fmt`: canonical layout, comments kept, idempotent, same meaning."""

from __future__ import annotations

import pytest
from parc.fmt import format_document
from parc.resolve import strip_spans
from parc.source import SourceFile
from parc.spec import build
from parc.syntax import parse

from .conftest import GOLDEN, check_golden, run_cli


def meaning(text: str) -> dict:
    """What a spec says, without positions: equal for a spec and its formatted text."""
    document, errors = parse(SourceFile("x.par", text))
    assert not errors, errors
    spec, _ = build(document)
    data = strip_spans(spec.model_dump(mode="json"))
    data["comments"] = [c.text for c in document.comments]
    return data


def fmt(text: str) -> str:
    document, errors = parse(SourceFile("x.par", text))
    assert not errors
    return format_document(document)


def test_every_spec_is_formatted_and_round_trips(spec_path):
    text = spec_path.read_text()
    formatted = fmt(text)
    assert formatted == text, f"{spec_path.name} is not in canonical form (run `parc fmt`)"
    assert meaning(formatted) == meaning(text)
    assert fmt(formatted) == formatted


@pytest.mark.parametrize("case", sorted((GOLDEN / "fmt").glob("*.par")), ids=lambda p: p.stem)
def test_golden(case):
    text = case.read_text()
    formatted = fmt(text)
    check_golden(case.with_suffix(".formatted"), formatted)
    assert fmt(formatted) == formatted, "not idempotent"
    assert meaning(formatted) == meaning(text)


def test_fmt_check_and_write(tmp_path):
    messy = tmp_path / "messy.par"
    messy.write_text((GOLDEN / "fmt" / "messy.par").read_text())
    assert run_cli("fmt", "--check", str(messy)).exit_code == 1
    assert messy.read_text() == (GOLDEN / "fmt" / "messy.par").read_text(), "--check must not write"
    result = run_cli("fmt", str(messy))
    assert result.exit_code == 0 and "reformatted" in result.stderr
    assert messy.read_text() == (GOLDEN / "fmt" / "messy.formatted").read_text()
    assert run_cli("fmt", "--check", str(messy)).exit_code == 0


def test_fmt_diff(tmp_path):
    messy = tmp_path / "messy.par"
    messy.write_text("tp 2  x dp 4\n")
    result = run_cli("fmt", "--check", "--diff", str(messy))
    assert "-tp 2  x dp 4" in result.stdout and "+tp 2 x dp 4" in result.stdout


def test_fmt_diff_alone_never_writes(tmp_path):
    messy = tmp_path / "messy.par"
    messy.write_text("tp 2  x dp 4\n")
    before = messy.stat().st_mtime_ns
    result = run_cli("fmt", "--diff", str(messy))
    assert result.exit_code == 0
    assert "-tp 2  x dp 4" in result.stdout and "+tp 2 x dp 4" in result.stdout
    assert messy.read_text() == "tp 2  x dp 4\n", "--diff must not write"
    assert messy.stat().st_mtime_ns == before
    assert "reformatted" not in result.stderr


def test_fmt_refuses_a_spec_with_syntax_errors(tmp_path):
    broken = tmp_path / "broken.par"
    original = "tp=2\nmodel   tiny\n"
    broken.write_text(original)
    result = run_cli("fmt", str(broken))
    assert result.exit_code == 1 and "E0103" in result.stderr
    assert broken.read_text() == original


def test_comments_stay_where_they_were():
    text = "# head\n\ntp 2 x dp 4  # layout\n# before model\nmodel tiny\ntrain {\n  # inside\n  seq 32  # s\n}  # after\n"
    assert fmt(text) == text


def test_fmt_drops_a_byte_order_mark(tmp_path):
    spec = tmp_path / "bom.par"
    spec.write_bytes(b"\xef\xbb\xbftp 2 x dp 4\n")
    assert run_cli("fmt", "--check", str(spec)).exit_code == 1
    assert run_cli("fmt", str(spec)).exit_code == 0
    assert spec.read_bytes() == b"tp 2 x dp 4\n"
