"""Reading the YAML of benchmarks/data/ (and a `--published FILE`): PyYAML's safe loader, in its
libyaml build where PyYAML has one.

The same documents as `yaml.safe_load` (the C loader builds the same Python objects from the same
safe constructors), six times faster: the published runs are about 10 MB of YAML, which every
checker of docs/time-model.md and many tests read (4.8 s -> 0.8 s a full read on the development
machine). Where PyYAML lacks libyaml the pure-Python loader reads the same.
"""

from __future__ import annotations

from pathlib import Path

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe loader: libyaml's where built in, else PyYAML's own."""


def load_yaml(text: str):
    """`text` parsed as `yaml.safe_load` parses it."""
    return yaml.load(text, Loader=LOADER)  # noqa: S506 - LOADER is a safe loader


def read_yaml(path: Path | str):
    """The YAML file at `path`, parsed as `yaml.safe_load` parses it."""
    return load_yaml(Path(path).read_text(encoding="utf-8"))
