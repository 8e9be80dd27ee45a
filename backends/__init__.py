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


def launched_job(plan: Plan, own: dict[str, str]) -> dict[str, str]:
    """A target's job directory: its own files (configuration, entry point, README), the torch
    backend's torchrun/Slurm/Kubernetes launchers, which start any target's `train.py` the same
    way, and `plan.json`; sorted, so the output is the same whatever the order of `own`."""
    from .torch import launchers

    shape = launchers.job_shape(plan)
    files = {**own, "launch/torchrun.sh": launchers.torchrun_sh(shape),
             "launch/slurm.sbatch": launchers.slurm_sbatch(shape), "launch/k8s.yaml": launchers.k8s_yaml(shape),
             **plan_files(plan)}
    return dict(sorted(files.items()))


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
