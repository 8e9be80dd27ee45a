"""Code generators: each turns a checked `Plan` into the files of a job directory.

A backend is a function `Plan -> dict[relative path, text]`; it never writes to disk itself
(the CLI writes the whole directory atomically) and never reads the clock, the environment or
absolute paths, so the same plan always gives byte-identical files.
"""

from __future__ import annotations

from collections.abc import Callable

from ..diagnostics import dumps_json
from ..plan import Plan
from ..resolve import plan_json

Backend = Callable[[Plan], dict[str, str]]


def plan_files(plan: Plan) -> dict[str, str]:
    """`plan.json`: the resolved plan as data, without source spans."""
    return {"plan.json": dumps_json(plan_json(plan))}


def _backend(plan: Plan):
    """The plan's target's code generator (`target torch | torchtitan | megatron`)."""
    import importlib

    return importlib.import_module(f"{__name__}.{plan.target.name}")


def job_files(plan: Plan) -> dict[str, str]:
    """Every file `parc compile` writes for this plan (its target backend's job directory)."""
    return _backend(plan).job_files(plan)


def job_diagnostics(plan: Plan):
    """Findings of the backend about a checked plan: what the generated job cannot run as written."""
    backend = _backend(plan)
    return backend.job_diagnostics(plan) if hasattr(backend, "job_diagnostics") else backend.diagnostics(plan)
