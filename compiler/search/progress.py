"""The progress bar of a long search: on stderr, only on a terminal, only after a second.

Most searches end well within a second and print nothing here; output that goes to a file or a
pipe never gets a bar (it would be noise in a log), and the bar is erased when the search ends,
so stdout and stderr stay byte-identical run to run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

DELAY_S = 1.0
"""A search shorter than this shows no bar."""
INTERVAL_S = 0.1
"""Redraw at most this often."""
WIDTH = 30


class ProgressBar:
    """Call it with (done, total) as work advances; `close()` erases the line."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic, delay: float = DELAY_S,
                 interval: float = INTERVAL_S):
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self.stream = stream
        self.clock = clock
        self.delay = delay
        self.interval = interval
        self.start = clock()
        self.last = -1.0
        self.drawn = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or (now - self.last < self.interval and done < total):
            return
        self.last = now
        fraction = min(1.0, done / total) if total else 1.0
        filled = int(fraction * WIDTH)
        line = f"\rsearching [{'#' * filled}{'.' * (WIDTH - filled)}] {fraction:4.0%} {now - self.start:5.1f} s"
        self.stream.write(line)
        self.stream.flush()
        self.drawn = len(line) - 1

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0
