"""Runtime files of the generated job: parallel.py, model.py, train.py."""

from __future__ import annotations

from ...plan import Plan


def files(plan: Plan) -> dict[str, str]:
    return {}
