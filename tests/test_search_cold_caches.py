"""The search benchmark measures a cold start: `benchmarks/search_speed.py`'s `clear_every_cache`
must empty every cache a search fills. One left out (the memory model's receive moments were)
made a process's second search 1 s faster than its first, and the benchmark's best of 3 reported
the second."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KEPT = {"parc.syntax._parser", "parc.backends.torch.render.environment"}
"""Caches a process fills once and no search depends on for its cost: the grammar's parser, built
by the front end before any search, and the job renderer's Jinja environment (a search renders
nothing)."""


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


def _every_parc_module() -> None:
    """Import every module of every parc package (the packages map to several folders, so each
    package's own path is walked)."""
    import parc

    packages = [parc]
    while packages:
        package = packages.pop()
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            if info.ispkg:
                packages.append(module)


def test_clear_every_cache_clears_every_cache_of_parc(monkeypatch):
    """Structural, whatever ran before in this process: every `lru_cache` of every parc module,
    but the `KEPT` ones, has its `cache_clear` called by the benchmark's `clear_every_cache`."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import search_speed

    _every_parc_module()
    caches = _lru_caches()
    assert "parc.timing.layer_work" in caches and "parc.memory.schedules.receive_moments" in caches
    cleared: set[str] = set()
    for name, cache in caches.items():
        monkeypatch.setattr(cache, "cache_clear", lambda name=name, clear=cache.cache_clear: (cleared.add(name), clear()))
    search_speed.clear_every_cache()
    assert sorted(set(caches) - KEPT - cleared) == []


def test_clear_every_cache_empties_every_cache_a_search_fills(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import search_speed
    from parc.memory import model, schedules
    from parc.search import engine

    text = search_speed.SPECS["megatron-1t, 16,384 H100 (deep pipelines)"]
    search_speed.clear_every_cache()
    caches = _lru_caches()
    before = {name for name, cache in caches.items() if cache.cache_info().currsize}  # KEPT, from earlier tests
    search_speed.search(search_speed.compile_text(text, path="benchmark.par"), top=10)
    caches = _lru_caches()
    filled = {name for name, cache in caches.items() if cache.cache_info().currsize} - before
    # the search walks interleaved pipelines: the receive moments and their trace are among them
    assert {"parc.memory.schedules.receive_moments", "parc.memory.schedules._receive_trace",
            "parc.memory.schedules._compute_turns", "parc.timing.layer_work"} <= filled
    search_speed.clear_every_cache()
    left = sorted(name for name in filled - KEPT if caches[name].cache_info().currsize)
    assert left == []
    assert not (schedules._REDUCED or model._PEAKS or model._MOMENTS or engine._SHARED or engine._DIVISORS)
