"""Coverage-guided fuzzing of the front end with atheris (libFuzzer for Python). Optional.

atheris is not a dependency of parc or of its tests: `pip install atheris` into the venv, then

    .venv/bin/python tests/fuzz/atheris_fuzz.py -max_total_time=600 -rss_limit_mb=4096 /tmp/parc-corpus

The corpus folder starts from every seed (tests/fuzz/corpus.py) and grows with each input that
reaches new code in parc's own modules (only they are instrumented). Each input goes through the
same front-end pipeline and the same invariants as the hypothesis run: no exception, every
error's span inside the file, and fmt's output re-parses to itself. The full CLI oracle
(compile, subprocesses) is too slow for libFuzzer's pace; `python -m tests.fuzz` covers it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _seed(corpus: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.fuzz.corpus import seed_paths

    corpus.mkdir(parents=True, exist_ok=True)
    for path in seed_paths():
        target = corpus / f"seed-{path.parent.name}-{path.name}"
        if not target.exists():
            target.write_bytes(path.read_bytes())


def main() -> None:
    import atheris

    folders = [Path(a) for a in sys.argv[1:] if not a.startswith("-")]
    if folders:
        _seed(folders[0])
    with atheris.instrument_imports(include=["parc"]):
        from parc.diagnostics import Style, render_text
        from parc.fmt import format_document
        from parc.pipeline import compile_source, read_source  # noqa: F401
        from parc.source import SourceFile
        from parc.syntax import MAX_SPEC_BYTES, parse

    def one_input(data: bytes) -> None:
        if len(data) > MAX_SPEC_BYTES:
            return
        text = data.decode("utf-8", errors="replace").replace("\x00", " ")
        source = SourceFile("fuzz.par", text)
        result = compile_source(source)
        render_text(result.diagnostics, {"fuzz.par": source}, Style(False))
        for d in result.diagnostics:
            if d.is_error:
                assert d.span is not None, d
                assert 0 <= d.span.start <= d.span.end <= len(text), d
                assert d.code != "E0299", d
        document, errors = parse(source)
        if not errors:
            formatted = format_document(document)
            again, errors = parse(SourceFile("fuzz.par", formatted))
            assert not errors, (formatted, errors)
            assert format_document(again) == formatted, formatted

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
