"""The search benchmark measures a cold start: `benchmarks/search_speed.py`'s `clear_every_cache`
must empty every cache a search fills. One left out (the memory model's receive moments were)
made a process's second search 1 s faster than its first, and the benchmark's best of 3 reported
the second."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KEPT = {"parc.syntax._parser"}
"""Caches a process fills once and no search depends on for its cost: the grammar's parser, built
by the front end before any search."""


def _lru_caches() -> dict[str, object]:
    """Every `functools.lru_cache` at the top level of a loaded parc module, by qualified name."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("parc") or module is None:
            continue
        for attr, value in vars(module).items():
            if isinstance(value, functools._lru_cache_wrapper) and getattr(value, "__module__", "") == name:
                found[f"{name}.{attr}"] = value
    return found


def test_clear_every_cache_empties_every_cache_a_search_fills():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import search_speed
    from parc.memory import model, schedules
    from parc.search import engine

    text = search_speed.SPECS["megatron-1t, 16,384 H100 (deep pipelines)"]
    search_speed.clear_every_cache()
    search_speed.search(search_speed.compile_text(text, path="benchmark.par"), top=10)
    caches = _lru_caches()
    filled = {name for name, cache in caches.items() if cache.cache_info().currsize}
    # the search walks interleaved pipelines: the receive moments and their trace are among them
    assert {"parc.memory.schedules.receive_moments", "parc.memory.schedules._receive_trace",
            "parc.memory.schedules._compute_turns", "parc.timing.layer_work"} <= filled
    search_speed.clear_every_cache()
    left = sorted(name for name, cache in caches.items() if cache.cache_info().currsize and name not in KEPT)
    assert left == []
    assert not (schedules._REDUCED or model._PEAKS or model._MOMENTS or engine._SHARED)
