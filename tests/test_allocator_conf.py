"""The generated job's CUDA caching-allocator configuration: train.py sets expandable segments
(torchtitan's run_train.sh ships `expandable_segments:True`) before torch is imported, unless the
environment already configures the allocator, and the rehearsal replays the policy the job runs
under (`allocator.policy_of`, from the spec's launch environment)."""

from __future__ import annotations

import os

import pytest
from parc.backends.torch import job_files
from parc.memory.allocator import DEFAULT, EXPANDABLE, policy_of

from .launcher_helpers import plan_of, spec_text

SHIPPED = "expandable_segments:True"
"""torchtitan's run_train.sh (pytorch/torchtitan, 0168bd5): PYTORCH_ALLOC_CONF="expandable_segments:True"."""


def allocator_head(plan) -> str:
    """train.py up to its `import torch`: what runs before torch reads the configuration."""
    text = job_files(plan)["train.py"]
    end = text.index("\nimport torch")
    assert "import torch" not in text[:end], "torch imported before the allocator's configuration"
    return text[:end]


@pytest.mark.parametrize("given,expected", [
    ({}, {"PYTORCH_CUDA_ALLOC_CONF": SHIPPED}),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}),
    ({"PYTORCH_ALLOC_CONF": "expandable_segments:False"}, {"PYTORCH_ALLOC_CONF": "expandable_segments:False"}),
])
def test_train_py_sets_expandable_segments_unless_the_environment_says_otherwise(monkeypatch, given, expected):
    head = allocator_head(plan_of(spec_text()))
    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    exec(compile(head, "train.py", "exec"), {"__name__": "not_main"})
    found = {n: os.environ[n] for n in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF") if n in os.environ}
    assert found == expected


def test_the_generated_setting_is_the_policy_the_model_replays():
    # no allocator variable in the spec: the job sets expandable segments, the replay follows it
    plan = plan_of(spec_text())
    assert policy_of({v.name: v.value for v in plan.launch.env}) == EXPANDABLE
    # the spec's launch environment turns it off: the job keeps that value and the replay follows
    plan = plan_of(spec_text(launch='  env PYTORCH_CUDA_ALLOC_CONF "expandable_segments:False"'))
    assert policy_of({v.name: v.value for v in plan.launch.env}) == DEFAULT
