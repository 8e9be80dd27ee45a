"""Generated documentation stays in sync with the code that it describes."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT


def test_language_reference_is_current():
    result = subprocess.run([sys.executable, str(ROOT / "docs" / "update_reference.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_readme_examples_parse():
    """Every ```par block in the README and the language reference parses."""
    import re

    from parc.source import SourceFile
    from parc.syntax import parse

    for doc in (ROOT / "README.md", ROOT / "docs" / "language.md"):
        if not doc.exists():
            continue
        blocks = re.findall(r"```par\n(.*?)```", doc.read_text(), re.S)
        assert blocks, f"{doc.name} has no ```par example"
        for block in blocks:
            _, errors = parse(SourceFile(str(doc), block))
            assert not errors, (doc.name, block, errors)
