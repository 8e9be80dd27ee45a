"""Atomic output: a reader sees the old file (or directory) or the new one, never half of each.

Each write goes to a temporary sibling first and is then renamed over the target; `os.replace`
is atomic on POSIX within one file system, which a sibling guarantees. A directory is swapped in
one step where Linux offers it (renameat2 with RENAME_EXCHANGE), so even a process killed at any
moment leaves the old tree or the new one in place; elsewhere it takes two renames, and if
anything fails in between (short of a kill), the previous directory is put back.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

MARKER = "plan.json"
"""A directory parc wrote holds this file; parc refuses to replace any other non-empty directory."""


NEW_FILE_MODE = 0o644
"""The mode of a file parc creates (a report, a spec written anew); a file it rewrites keeps its own."""


class OutputError(Exception):
    """The output location cannot be written (exists and is not parc's, permissions, ...)."""


def write_file(path: str | os.PathLike, data: str | bytes) -> None:
    target = Path(os.path.realpath(path))  # through a symlink: rewrite its target, keep the link
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            shutil.copymode(target, temp)
        else:  # mkstemp makes 0600; a new file is readable by all, as compile's files are
            os.chmod(temp, NEW_FILE_MODE)
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
    if _exchange(staging, target):
        shutil.rmtree(staging, ignore_errors=True)  # it holds the previous tree now
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


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
"""From <linux/fcntl.h> and <linux/fs.h>: renameat2 relative to the working directory, swapping."""


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step; False where the system cannot, so the caller falls
    back to two renames (between which a killed process would leave no directory at all)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without the wrapper (glibc before 2.28)
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # kernel or file system without it
        return False
    raise OSError(code, os.strerror(code), str(b))
