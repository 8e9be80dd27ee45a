"""Regenerate the generated sections of docs/language.md from parc's own tables.

    .venv/bin/python docs/update_reference.py          # rewrite
    .venv/bin/python docs/update_reference.py --check  # exit 1 if stale (tests do this)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent / "language.md"


def sections() -> dict[str, str]:
    from parc.catalog import catalog_reference
    from parc.resolve import DEFAULTS
    from parc.spec import key_reference

    defaults = ["| setting | default |", "|---|---|"]
    defaults += [f"| `{name}` | {value} |" for name, value in DEFAULTS.items()]
    return {
        "reference": key_reference() + "\n" + catalog_reference(),
        "defaults": "\n".join(defaults) + "\n",
    }


def render(text: str) -> str:
    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", re.S)
        text = pattern.sub(lambda m, body=body: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)
    return text


def main() -> int:
    current = DOC.read_text()
    fresh = render(current)
    if "--check" in sys.argv:
        if fresh != current:
            print("docs/language.md is stale: run .venv/bin/python docs/update_reference.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
