"""The training budget: how long a whole run takes, how many GPU-hours it burns and what it costs.

A spec states its budget in `train` as the tokens to train on (`tokens 15T`) or as optimizer steps
(`steps 250000`); the other follows from the tokens one step consumes (global batch x seq), with
the step count rounded up so the run sees at least the stated tokens. Everything else is the time
model's predicted step (`parc.timing.predict`) times the steps, so the budget is exactly as good
as that prediction and adds no model of its own:

    time to train = steps x step time           (wall clock; no restarts, checkpoints or evals)
    GPU-hours     = GPUs x time to train / 3600
    cost          = GPU-hours x price           (price per GPU-hour: the spec's, or the catalogue's)

The breakdown is the step's (compute, recompute, bubble, exposed communication per axis,
optimizer), each part scaled the same way, so a reader sees which part of the bill the bubble or
the dp all-reduce is. What the budget leaves out (failures and restarts, checkpoint writes,
evaluation, warm-up of the job) is stated wherever the numbers are shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .plan import AXES, Plan
from .timing import Prediction

SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600

PARTS: tuple[str, ...] = ("compute", "recompute", "bubble", *AXES, "optimizer")
"""The step's parts in `parc explain`'s order; an axis name is that axis's exposed communication."""

LEFT_OUT = "steady-state steps only: no failures, restarts, checkpoints or evaluation"


@dataclass(frozen=True)
class Budget:
    """A whole run's time, GPU-hours and cost, from its step count and the predicted step."""

    stated: str
    """"tokens" or "steps": which one the spec gave (the other is derived)."""
    steps: int
    tokens: int
    """Tokens the run trains on: steps x tokens per step (at least the stated budget)."""
    tokens_per_step: int
    gpus: int
    step_seconds: float
    parts: tuple[tuple[str, float], ...]
    """(part, seconds of one step) in `PARTS` order, then "offload" where activation offloading
    adds seconds and "dp copies" where the data-parallel runtime copies (FSDP2); they sum to the
    step."""
    price: float | None
    """Dollars per GPU-hour; None when neither the spec nor the catalogue gives one."""
    price_source: str | None

    @property
    def seconds(self) -> float:
        return self.steps * self.step_seconds

    @property
    def days(self) -> float:
        return self.seconds / SECONDS_PER_DAY

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.seconds / SECONDS_PER_HOUR

    @property
    def cost(self) -> float | None:
        return None if self.price is None else self.gpu_hours * self.price

    def part_gpu_hours(self, seconds_per_step: float) -> float:
        return self.gpus * self.steps * seconds_per_step / SECONDS_PER_HOUR

    def json(self) -> dict:
        parts = {}
        for name, per_step in self.parts:
            hours = self.part_gpu_hours(per_step)
            parts[name] = {"days": _r(self.steps * per_step / SECONDS_PER_DAY), "gpu_hours": _r(hours),
                           "cost": None if self.price is None else _r(hours * self.price)}
        return {
            "stated": self.stated,
            "steps": self.steps,
            "tokens": self.tokens,
            "tokens_per_step": self.tokens_per_step,
            "seconds": _r(self.seconds),
            "days": _r(self.days),
            "gpu_hours": _r(self.gpu_hours),
            "price_per_gpu_hour": None if self.price is None else _r(self.price),
            "price_source": self.price_source,
            "cost": None if self.cost is None else _r(self.cost),
            "parts": parts,
            "excludes": LEFT_OUT,
        }


def steps_for(plan: Plan) -> tuple[str, int] | None:
    """("tokens" | "steps", the run's optimizer steps), or None when the spec states no budget."""
    train = plan.training
    if train.budget_steps is not None:
        return "steps", train.budget_steps
    if train.budget_tokens is not None:
        return "tokens", math.ceil(train.budget_tokens / train.tokens_per_step)
    return None


def budget(plan: Plan, prediction: Prediction | None) -> Budget | None:
    """The run's budget; None without a stated budget or without a predicted step."""
    stated = steps_for(plan)
    if stated is None or prediction is None:
        return None
    kind, steps = stated
    b = prediction.breakdown
    seconds = {"compute": b.compute, "recompute": b.recompute, "bubble": b.bubble, "optimizer": b.optimizer,
               **{axis: b.exposed[axis] for axis in AXES}}
    return Budget(stated=kind, steps=steps, tokens=steps * plan.training.tokens_per_step,
                  tokens_per_step=plan.training.tokens_per_step, gpus=prediction.world, step_seconds=b.step,
                  parts=tuple((name, seconds[name]) for name in PARTS)
                  + ((("offload", b.offload),) if b.offload else ())  # activation offloading's copies
                  + ((("dp copies", b.copies),) if b.copies else ()),  # the data-parallel runtime's copies
                  price=plan.cluster.price,
                  price_source=plan.cluster.price_source)


def _r(x: float) -> float:
    """Six significant digits, as the time section's JSON."""
    return float(f"{x:.6g}")


# ---------------------------------------------------------------------------------------------
# Text


def days_text(days: float) -> str:
    if days >= 10:
        return f"{days:,.0f} days"
    if days >= 1:
        return f"{days:,.1f} days"
    hours = days * 24
    return f"{hours:,.1f} hours" if hours >= 1 else f"{hours * 60:,.1f} minutes"


def hours_text(hours: float) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if hours >= scale:
            return f"{hours / scale:,.2f} {unit} GPU-hours"
    return f"{hours:,.1f} GPU-hours"


def dollars(amount: float) -> str:
    for scale, unit in ((1e9, " B"), (1e6, " M"), (1e3, " k")):
        if amount >= scale:
            return f"${amount / scale:,.2f}{unit}"
    return f"${amount:,.2f}"


def tokens_text(tokens: int) -> str:
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if tokens >= scale:
            return f"{tokens / scale:,.3g}{unit}"
    return f"{tokens:,}"


def part_label(name: str) -> str:
    return f"{name} exposed" if name in AXES else name
