"""Launcher files of the generated job: torchrun, Slurm, Kubernetes, and the job's README."""

from __future__ import annotations

from ...plan import Plan


def files(plan: Plan) -> dict[str, str]:
    return {}
