"""Import Lark without the third-party `regex` module.

Lark imports `regex` whenever it is installed (torchtitan's and Hugging Face's dependencies bring
it), though it uses it only for grammars built with `regex=True`, which parc's is not: its
patterns are plain `re` ones. Importing `regex` is about 5 % of a cold `parc check`, so Lark is
imported once with `regex` hidden, and `regex` is put back as it was for everything else.
"""

from __future__ import annotations

import sys


def lark_without_regex():
    """The `lark` package, imported (if it is not already) while `import regex` fails."""
    if "lark" in sys.modules:
        return sys.modules["lark"]
    missing = object()
    saved = sys.modules.get("regex", missing)
    sys.modules["regex"] = None  # makes `import regex` raise ImportError
    try:
        import lark
        import lark.exceptions  # noqa: F401
    finally:
        if saved is missing:
            del sys.modules["regex"]
        else:
            sys.modules["regex"] = saved
    return lark
