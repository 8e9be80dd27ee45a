"""Honest ranking: which runners-up the time model cannot tell from the winner, and what would.

A search ranks layouts by predicted step time, but the prediction has an error. The measured one
is the leave-one-source-out check in docs/time-model.md ("Generalisation: leaving a source out"):
fitted without a source, the model predicts that source's runs with a median absolute error
the table states per held-out source (`TIME_MODEL_SPREAD`: the larger, written by
benchmarks/fidelity.py --write beside the constants it fits). A runner-up whose predicted step
is within that of the winner's is *indistinguishable* from it: the ranking between them is
inside the model's typical error, and only a measurement can order them.

What to measure first: layouts that share most of their step (the same compute, the same
bubble, the same exposed traffic) share the model's errors too, so their order is more robust
than the raw gap says. The order of two layouts whose steps are made of different parts is the
one the error can flip. So the short benchmark pits the winner against the indistinguishable
runner-up *least like it*: the largest summed difference of the step's parts (compute,
recompute, bubble, optimizer, exposed communication per axis).
"""

from __future__ import annotations

import textwrap

from ..calibration import TIME_MODEL_SPREAD
from .explain import parts


def gap(winner, other) -> float:
    """How much slower `other`'s predicted step is, as a fraction of the winner's."""
    return (other.step - winner.step) / winner.step if winner.step > 0 else 0.0


def unlikeness(winner, other) -> float:
    """Summed absolute difference of the two steps' parts, as a fraction of the winner's step:
    0 for layouts whose steps are made of the same parts, larger the more their errors can
    differ."""
    mine, theirs = parts(other.prediction.breakdown), parts(winner.prediction.breakdown)
    total = sum(abs(mine[p] - theirs[p]) for p in mine)
    return total / winner.step if winner.step > 0 else 0.0


def mark_indistinguishable(candidates: list, spread: float = TIME_MODEL_SPREAD) -> object | None:
    """Set `indistinguishable` on each runner-up within `spread` of the winner's step; return the
    one to benchmark against the winner first (the least like it), or None when every runner-up
    is clearly slower."""
    if not candidates:
        return None
    winner = candidates[0]
    close = []
    for other in candidates[1:]:
        other.indistinguishable = gap(winner, other) <= spread
        if other.indistinguishable:
            close.append(other)
    if not close:
        return None
    # Most unlike first; equal unlikeness keeps the ranking's order (the faster one).
    return max(close, key=lambda c: (unlikeness(winner, c), -c.rank))


def benchmark_line(candidates: list, first, spread: float = TIME_MODEL_SPREAD) -> str | None:
    """One sentence for the search's text: who is indistinguishable and what to run."""
    if first is None:
        return None
    close = [c for c in candidates[1:] if c.indistinguishable]
    ranks = ", ".join(f"#{c.rank}" for c in close)
    verb = "is" if len(close) == 1 else "are"
    winner = candidates[0]
    mine, theirs = parts(first.prediction.breakdown), parts(winner.prediction.breakdown)
    differs = sorted(((abs(mine[p] - theirs[p]), p) for p in mine), key=lambda d: (-d[0], d[1]))[:2]
    what = ", ".join(f"{p} {_seconds(theirs[p])} vs {_seconds(mine[p])}" for delta, p in differs if delta > 0)
    text = (f"{ranks} {verb} within the time model's error band ({spread:.1%} of the step, the leave-one-source-out "
            f"spread in docs/time-model.md) of #1: the prediction cannot order them. A short benchmark can: time a "
            f"few steps of #1 and #{first.rank} first, the runner-up least like #1" + (f" ({what})" if what else "")
            + "; `parc compile` each with `launch { steps 20 }` and compare the step times.")
    return textwrap.fill(text, width=110, break_on_hyphens=False)


def _seconds(x: float) -> str:
    from ..diff import value_text

    return value_text("s", x)


# ---------------------------------------------------------------------------------------------
# Memory: a winner that fits by less than the memory model's measured error
#
# Search ranks by the point verdict (`Estimate.fits`), not by "fits with the band to spare": the
# band is the model's worst under-prediction on 20 published runs (compiler/memory/band.py), a
# bound on its record, not a distribution to rank by; most of the error is shared by layouts of one
# model and schedule (the five 405B 1F1B rows are all under, by 3.7-13.3 %; the 8B rows within
# 2.5 % either way), so a uniform band says nothing about which of two close layouts is safer; and
# dropping every layout within 15 % of the part would drop the fastest options of every
# memory-bound model for a risk a short run on the part settles. So an at-risk winner stays first and is marked, beside the fastest runner-up that is
# clear of the band: the safe choice and what it costs.


def memory_clear_runner_up(candidates: list) -> object | None:
    """The fastest listed runner-up whose memory is not at risk, when the winner's is; None when
    the winner is clear of the band (or no listed runner-up is)."""
    if not candidates or not candidates[0].memory.at_risk:
        return None
    return next((c for c in candidates[1:] if not c.memory.at_risk), None)


def memory_risk_line(candidates: list) -> str | None:
    """One sentence for the search's text when the winner fits by less than the band (W0410)."""
    if not candidates or not candidates[0].memory.at_risk:
        return None
    from ..human import size

    winner, clear = candidates[0], memory_clear_runner_up(candidates)
    m = winner.memory
    text = (f"#1 is at risk in memory (W0410): it fits by {size(m.margin_bytes)}, less than the memory model's "
            f"measured under-prediction ({m.error_band:.1%} of the prediction on published runs), so it may not fit. ")
    if clear is None:
        text += (f"No listed runner-up is clear of the band ({len(candidates) - 1} listed): a larger `--top`, more "
                 "GPUs, or a rehearsal of #1 (`parc rehearse`) settles it.")
    else:
        text += (f"The fastest runner-up clear of it is #{clear.rank} ({size(clear.memory.margin_bytes)} to spare, "
                 f"{gap(winner, clear):.1%} slower per step).")
    return textwrap.fill(text, width=110, break_on_hyphens=False)
