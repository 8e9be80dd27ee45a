"""The training loop's own settings, end to end on CPU: gradient clipping and --log-every.

Gradient clipping (`train { clip-grad-norm C }`) is checked three ways, each against something
the clipping code did not produce: the logged norm of step 0 equals the norm of the full
gradients the run saved (--save-grads gathers them; the norm is summed here in float64); a
tp 2 x pp 2 run with clipping has the losses and gradients of the single-process reference
with the same clipping (so the global norm counts every element once however the model is
split); and the clipped run's losses leave those of the same run without clipping (so the clipping
binds). The optimizer is SGD at a learning rate of 0.1: its update is proportional to the
gradient, so clipping changes it (Adam's first updates are nearly scale-invariant).
"""

from __future__ import annotations

import math

import pytest

from .harness import STEPS, assert_parity, compile_job, train

SGD_LR = ("--lr", "0.1")
"""After the harness's --lr (the later option wins)."""

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def reference_clip(workdir):
    return train(compile_job("reference-clip", workdir), 1, *SGD_LR).check()


@pytest.fixture(scope="module")
def reference_sgd(workdir):
    return train(compile_job("reference-sgd", workdir), 1, *SGD_LR).check()


def saved_norm(grads: dict) -> float:
    assert grads, "no gradients were saved: the check would be vacuous"
    return math.sqrt(sum(float(g.double().square().sum()) for g in grads.values()))


def test_clipping_bounds_the_update_and_logs_the_true_norm(reference_clip, reference_sgd):
    record = next(r for r in reference_clip.records if r["step"] == 0)
    assert record["grad_norm"] == pytest.approx(saved_norm(reference_clip.grads[0]), rel=1e-5)
    assert record["grad_norm"] > 0.1, "the clipping threshold must bind for this test to mean anything"
    # the first step's gradients are the same (clipping acts after them); the updates differ
    assert reference_clip.losses[0] == pytest.approx(reference_sgd.losses[0], abs=1e-6)
    drop_clipped = reference_clip.losses[0] - reference_clip.losses[STEPS - 1]
    drop_free = reference_sgd.losses[0] - reference_sgd.losses[STEPS - 1]
    assert 0 < drop_clipped < 0.5 * drop_free, (drop_clipped, drop_free)


@pytest.mark.long
def test_clipping_under_tp_and_pp_matches_one_process(workdir, reference_clip):
    run = train(compile_job("clip-tp2-pp2", workdir), 4, *SGD_LR)
    assert_parity(run, reference_clip)
    assert sorted(run.grads) == list(range(STEPS)), "no gradients were saved: the parity check would be vacuous"
    for step in (0, 1):
        logged = next(r["grad_norm"] for r in run.records if r["step"] == step)
        assert logged == pytest.approx(saved_norm(run.grads[step]), rel=1e-5), step


def test_log_every_logs_only_those_steps_with_the_same_values(workdir, reference):
    run = train(compile_job("reference", workdir), 1, "--log-every", "3", grads=False).check()
    # the harness passes --log-every 1 first; the later option wins
    assert sorted(run.losses) == [2, 3], "every third step and the last"
    for step, loss in run.losses.items():
        assert loss == pytest.approx(reference.losses[step], abs=1e-7)
