"""train.py's learning-rate schedule, read back from the rates the job logs at every step:
linear warm-up, then constant, linear or cosine decay to --min-lr at the last step. The
expected rates are written here from the schedule's definition, not taken from the job."""

from __future__ import annotations

import math

import pytest

from .harness import compile_job, one_of_each_kind, torchrun

pytestmark = pytest.mark.e2e

STEPS, WARMUP, PEAK, FLOOR = 7, 2, 1e-3, 1e-4


def expected(decay: str, step: int) -> float:
    if step < WARMUP:
        return PEAK * (step + 1) / WARMUP
    if decay == "constant":
        return PEAK
    progress = (step - WARMUP) / (STEPS - 1 - WARMUP)  # 0 after the warm-up, 1 at the last step
    shape = 1 - progress if decay == "linear" else (1 + math.cos(math.pi * progress)) / 2
    return FLOOR + (PEAK - FLOOR) * shape


@pytest.mark.parametrize("decay", one_of_each_kind(["cosine", "linear", "constant"], ["cosine"]))
def test_the_logged_rates_follow_the_schedule(decay, workdir):
    job = compile_job("reference", workdir)
    run = torchrun(job, 1, "--steps", str(STEPS), "--lr", str(PEAK), "--warmup", str(WARMUP), "--lr-decay", decay,
                   "--min-lr", str(FLOOR), out=workdir / f"lr-{decay}", grads=False)
    assert run.returncode == 0, run.output[-3000:]
    rates = {r["step"]: r["lr"] for r in run.records if "lr" in r}
    assert sorted(rates) == list(range(STEPS))
    for step, rate in rates.items():
        assert rate == pytest.approx(expected(decay, step), rel=1e-9), (decay, step)
    if decay != "constant":
        assert rates[STEPS - 1] == pytest.approx(FLOOR, rel=1e-9) and rates[WARMUP] == pytest.approx(PEAK, rel=1e-9)
