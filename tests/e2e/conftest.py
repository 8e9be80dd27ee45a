"""Shared fixtures of the end-to-end tests: one work directory and the references, per session."""

from __future__ import annotations

import pytest

from .harness import compile_job, train


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def reference(workdir):
    """The dense model of tests/e2e/specs trained in one process on the whole batch."""
    return train(compile_job("reference", workdir), 1).check()


@pytest.fixture(scope="session")
def reference_moe(workdir):
    """tiny-moe trained in one process on the whole batch."""
    return train(compile_job("reference-moe", workdir), 1).check()


@pytest.fixture(scope="session")
def reference_gpt(workdir):
    """The GPT-style tiny model (tied, learned positions, GELU, LayerNorm) in one process."""
    return train(compile_job("reference-gpt", workdir), 1).check()
