"""Atomic output: a reader sees the old file (or directory) or the new one, never half of each.

Each write goes to a temporary sibling first and is then renamed over the target; `os.replace`
is atomic on POSIX within one file system, which a sibling guarantees. A directory is swapped in
two renames; if anything fails in between, the previous directory is put back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

MARKER = "plan.json"
"""A directory parc wrote holds this file; parc refuses to replace any other non-empty directory."""


class OutputError(Exception):
    """The output location cannot be written (exists and is not parc's, permissions, ...)."""


def write_file(path: str | os.PathLike, data: str | bytes) -> None:
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            shutil.copymode(target, temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def safe_relative(name: str) -> bool:
    """A generated file name must stay inside the output directory."""
    path = Path(name)
    return not path.is_absolute() and ".." not in path.parts and name.strip() == name and bool(name)


def write_tree(directory: str | os.PathLike, files: Mapping[str, str | bytes], executable: tuple[str, ...] = ()) -> None:
    """Replace `directory` with exactly `files` (relative path -> content)."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise OutputError(f"`{target}` exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).is_file():
        raise OutputError(f"refusing to replace `{target}`: it is not empty and parc did not write it")
    for name in files:
        if not safe_relative(name):
            raise OutputError(f"generated path `{name}` would leave the output directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        for name in sorted(files):
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            content = files[name]
            path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
            path.chmod(0o755 if name in executable else 0o644)
        staging.chmod(0o755)
        _swap(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    backup.rmdir()
    os.replace(target, backup)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)

