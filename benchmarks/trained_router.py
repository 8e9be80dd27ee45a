"""What a trained router's load imbalance would have to be for the time model to meet each MoE row,
beside what the published measurements of trained routers say (docs/time-model.md, "A trained
router's imbalance"; written by `fidelity.py --write`).

    .venv/bin/python benchmarks/trained_router.py

Why (issue 14): the model charges the busiest expert rank a random router's load
(`kernels.routing_imbalance`, the balls-into-bins floor). The ModelZoo's long-context Qwen3-235B
series ran the same jobs twice, once with the trained router (dropless) and once with
Megatron-Core's `--moe-router-force-load-balancing`, which replaces the router's logits with
normal noise per token (`megatron/core/transformer/moe/moe_utils.py`, `RandomSTE`): a random
router, the floor. Their difference is the trained router's own imbalance, published.

Nothing here is fitted or stored. `Software.routing_load` (the busiest rank's routed copies over
the mean, per micro-batch) is a what-if knob: `implied_load` finds, by bisection, the load at which
a row's prediction meets its published figure; `series_load` the load at which the model's
micro-batch on the busiest rank grows by what the long-context series' two lines differ by
(`longctx_series.lines`: everything but attention, dropless less forced balance). Whether one
load, or a load from a published measurement, predicts the rows is what the table shows."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parc.calibration import DEFAULT  # noqa: E402


@dataclass(frozen=True)
class Measured:
    """One published measurement of a trained router's imbalance."""

    source: str
    balancing: str
    experts: int
    top_k: int
    max_violation: float
    """MaxVio: (the busiest expert's load - the mean) / the mean, per expert, over the whole
    validation set ("global"), averaged over the MoE layers."""


MEASURED = (
    Measured("Wang et al. 2024 (arXiv 2408.15664) Table 2, 1B", "aux loss, coefficient 0.001", 64, 6, 0.72),
    Measured("Wang et al. 2024 (arXiv 2408.15664) Table 2, 1B", "aux-loss-free bias, rate 0.001", 64, 6, 0.04),
    Measured("Wang et al. 2024 (arXiv 2408.15664) Table 2, 3B", "aux loss, coefficient 0.001", 64, 6, 0.52),
    Measured("Wang et al. 2024 (arXiv 2408.15664) Table 2, 3B", "aux-loss-free bias, rate 0.001", 64, 6, 0.04),
)
"""The per-expert figures found (docs/time-model.md, "A trained router's imbalance", lists what
was searched). DeepSeekMoE architecture, sigmoid gate, 2 shared experts (their Table 5)."""


def rank_loads(max_violation: float, experts: int, ep: int) -> tuple[float, float]:
    """What a per-expert MaxVio says about the busiest of `ep` ranks holding experts / ep experts
    each: (alone, all hot). Alone: the busiest expert's excess is the only one on its rank, the
    rank's other experts at the mean, 1 + MaxVio x ep / experts. All hot: every expert of the rank
    as loaded as the busiest, 1 + MaxVio. Where between them the rank lies depends on how the hot
    experts' loads co-vary and fall on ranks, which no measurement found gives; and a micro-batch's
    violation exceeds the global one."""
    per_rank = max(1, experts // max(1, ep))
    return 1 + max_violation / per_rank, 1 + max_violation


SEARCH_STEPS = 60
"""Bisection steps (the bracket [1, ep] shrinks below 1e-15 of its width)."""


def with_load(row, load: float):
    """The row with `Software.routing_load` set (0: the random router's floor)."""
    return dataclasses.replace(row, software=dataclasses.replace(row.software, routing_load=load))


def step_at(row, load: float, constants=DEFAULT) -> float:
    """The predicted step with the busiest expert rank at `load` x the mean."""
    import fidelity

    variant = with_load(row, load)
    return fidelity.predicted_step(variant, fidelity.prepare(variant), constants).step


def error_at(row, load: float, constants=DEFAULT) -> float:
    """The row's relative error (predicted / reported TFLOP/s - 1) at `load`."""
    import fidelity

    return fidelity.predicted_tflops(row, step_at(row, load, constants)) / row.reported_tflops - 1


def expert_ranks(row) -> int:
    return max(1, row.plan.layout.degree("ep"))


def implied_load(row, constants=DEFAULT) -> float | None:
    """The busiest-rank load at which the row's prediction meets its published figure; None when
    the row is slower than published even at the mean load (1), or faster with every routed copy
    on one rank (ep): no routing load explains it."""
    ep = expert_ranks(row)
    if ep <= 1 or error_at(row, 1.0, constants) < 0 or error_at(row, float(ep), constants) > 0:
        return None
    low, high = 1.0, float(ep)
    for _ in range(SEARCH_STEPS):
        mid = (low + high) / 2
        if error_at(row, mid, constants) > 0:  # still too fast: the load is higher
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass(frozen=True)
class SeriesLoad:
    excess: float
    """Published: seconds per micro-batch the dropless line's intercept lies above the forced
    line's (everything but attention; `longctx_series.lines`)."""
    load: float
    """The busiest-rank load at which the model's micro-batch grows by `excess` (the mean over
    the dropless rows), from the random router's floor."""


def series_load(rows, constants=DEFAULT) -> SeriesLoad | None:
    """The load the long-context series implies (None when the series is not in `rows`)."""
    import longctx_series

    found = longctx_series.lines(rows)
    if set(found) != {"dropless", "forced_balance"}:
        return None
    excess = found["dropless"].rest - found["forced_balance"].rest
    chosen = [r for r in rows if r.id.startswith(longctx_series.SERIES) and r.id.endswith("dropless")]
    lay = chosen[0].plan.layout
    slots = {r.id: slots_of(r) for r in chosen}
    floor = {r.id: step_at(r, 0.0, constants) / slots[r.id] for r in chosen}

    def grown(load: float) -> float:
        return sum(step_at(r, load, constants) / slots[r.id] - floor[r.id] for r in chosen) / len(chosen)

    low, high = 1.0, float(max(1, lay.degree("ep")))
    if grown(high) < excess:
        return None
    for _ in range(SEARCH_STEPS):
        mid = (low + high) / 2
        low, high = (mid, high) if grown(mid) < excess else (low, mid)
    return SeriesLoad(excess=excess, load=(low + high) / 2)


def slots_of(row) -> float:
    """Micro-batch slots of the busiest rank's step: m + (p - 1) / v (interleaved 1F1B)."""
    lay, train = row.plan.layout, row.plan.training
    tp, pp, cp = lay.degree("tp"), lay.degree("pp"), lay.degree("cp")
    v = max(1, lay.pp.virtual_stages or 1)
    dp = row.gpus // (tp * pp * cp)
    return train.global_batch // (dp * (train.micro_batch or 1)) + (pp - 1) / v


def floor_load(row) -> float:
    """The random router's busiest-rank load the model charges the row (`kernels.routing_imbalance`
    at the row's mean routed copies per expert rank and micro-batch)."""
    from parc import kernels

    model, train, lay = row.plan.model, row.plan.training, row.plan.layout
    copies = train.seq_len * (train.micro_batch or 1) / lay.degree("cp") / lay.degree("tp") * model.top_k
    return kernels.routing_imbalance(copies, expert_ranks(row))


def table(rows, constants=DEFAULT) -> str:
    """Every MoE row: its routing, the model's floor, its error now, the load it implies, and its
    error at the series' load (what-if, not stored)."""
    found = series_load(rows, constants)
    out = ["| row | experts, top-k, ep | routing | floor (charged) | error | implied busiest-rank load | "
           f"error at the series' {found.load:.2f} |" if found else "| row | experts, top-k, ep | routing | "
           "floor (charged) | error | implied busiest-rank load | - |", "|---|---|---|---|---|---|---|"]
    moe = [r for r in rows if r.plan.model.experts]
    for row in moe:
        m = row.plan.model
        forced = row.id.endswith("forced_balance")
        implied = implied_load(row, constants)
        what_if = f"{100 * error_at(row, found.load, constants):+.1f}%" if found and not forced else "-"
        out.append(f"| `{row.id}` | {m.experts}, {m.top_k}, {expert_ranks(row)} | "
                   f"{'random (forced)' if forced else 'trained'} | {floor_load(row):.3f} | "
                   f"{100 * error_at(row, 0.0, constants):+.1f}% | "
                   f"{f'{implied:.2f}' if implied else 'none (slow at the mean)'} | {what_if} |")
    return "\n".join(out)


def section(rows, constants=DEFAULT) -> str:
    """docs/time-model.md's table and the series' figure (written by `fidelity.py --write`)."""
    found = series_load(rows, constants)
    if not found:
        return "(the long-context series is not in the calibration set)"
    return "\n".join([
        f"The long-context series' dropless line lies {1e3 * found.excess:.0f} ms per micro-batch above "
        f"its forced-balance line (everything but attention; the two routings' only difference). The "
        f"model's busiest rank takes that much longer at a load of {found.load:.2f}x the mean, against "
        f"the random router's {floor_load(next(r for r in rows if r.id.endswith('16k_cp1_dropless'))):.3f}x "
        f"(16K tokens, ep 8).",
        "",
        table(rows, constants),
    ])


def literature(rows, constants=DEFAULT) -> str:
    """The published per-expert figures as rank loads for the rows' expert meshes, beside the load
    the rows imply."""
    found = series_load(rows, constants)
    dsv3 = next((r for r in rows if r.id.startswith("deepseek_v3")), None)
    implied = implied_load(dsv3, constants) if dsv3 else None
    # each mesh beside the measurements of its own balancing: the ModelZoo's Qwen3-235B-A22B runs
    # an aux loss (coefficient 0.001, its Qwen3-235B-A22B.yaml), DeepSeek-V3 the aux-free bias
    meshes = [("Qwen3-235B-A22B, ep 8 (the long-context series)", 128, 8, "aux loss",
               f"{found.load:.2f} (the series' excess)" if found else "-"),
              ("DeepSeek-V3, ep 64", 256, 64, "aux-loss-free",
               f"{implied:.2f} (its +{100 * error_at(dsv3, 0.0, constants):.0f} % gap)" if implied else "-")]
    out = ["| measurement | balancing | MaxVio (per expert, global) | mesh | busiest rank: excess alone | "
           "all hot | the row implies |", "|---|---|---|---|---|---|---|"]
    for m in MEASURED:
        for name, experts, ep, balancing, wanted in meshes:
            if not m.balancing.startswith(balancing):
                continue
            alone, hot = rank_loads(m.max_violation, experts, ep)
            out.append(f"| {m.source} | {m.balancing} | {m.max_violation:.2f} | {name} | {alone:.3f} | {hot:.2f} | "
                       f"{wanted} |")
    return "\n".join(out)


def main() -> int:
    import fidelity

    rows, _ = fidelity.load_rows()
    print(section(rows))
    print()
    print(literature(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
