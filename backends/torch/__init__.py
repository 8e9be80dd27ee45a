"""The PyTorch backend: a self-contained job directory for one plan.

    parallel.py, model.py, train.py     runtime (runtime.py)
    launch/torchrun.sh, launch/slurm.sbatch, launch/k8s.yaml, README.md   launchers (launchers.py)
    plan.json                           the resolved plan

Every file comes from one Jinja2 template in `templates/` named after it (plus `.jinja`), or,
for data formats (JSON, YAML), from data serialised in Python; templates compute nothing.
"""

from __future__ import annotations

from ...diagnostics import Diagnostic
from ...plan import Plan
from .. import plan_files
from . import launchers, runtime


def job_diagnostics(plan: Plan) -> list[Diagnostic]:
    """What the generated job cannot run as the plan says (E06xx errors, W06xx warnings)."""
    return runtime.diagnostics(plan)


def job_files(plan: Plan) -> dict[str, str]:
    files: dict[str, str] = {}
    files.update(runtime.files(plan))
    files.update(launchers.files(plan))
    files.update(plan_files(plan))
    return dict(sorted(files.items()))
