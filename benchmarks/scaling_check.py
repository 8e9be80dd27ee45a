"""Throughput against GPU count: each published series, its predicted step term by term.

Issue 14 asks what governs throughput as the GPUs grow at a fixed global (or per-GPU) batch, and
whether the model has it. A series is a set of published runs of one source that differ only in
the GPU count (and so in the data-parallel degree and the micro-batches each replica runs):
MegaScale's Megatron-LM baseline and its own runtime (Jiang et al. 2024, Table 2: 175B at a
global batch of 768 on 256-1,024 GPUs and of 6,144 on 3,072-12,288; 530B with the batch growing
with the GPUs), Llama 3 405B at 8K tokens on 8,192 and 16,384 H100 (Dubey et al. 2024, Table 4)
and llm-foundry's MPT runs on 128-512 H100 at a fixed per-GPU batch. Every row is predicted
exactly as `fidelity.py --published` predicts it (the stored constants, never fitted on these
rows), and split into the terms that can change with the GPU count:

- the pipeline bubble (seconds: fixed per micro-batch size, a larger share as fewer
  micro-batches run per replica);
- the exposed tp, pp and dp communication, and of the dp collectives their number per step and
  the seconds their ring steps' latency takes (`Link`'s per-step latency x steps, the part that
  grows with the ranks a ring spans);
- `gap`: the step the reported throughput implies less the predicted step, in seconds. A term the
  model lacks that costs the same seconds at every scale shows as a gap constant along a
  series; one that grows with the ranks, as a gap growing with them.

This module writes the section "Throughput against GPU count" of docs/time-model.md (through
`public_check.section`, `fidelity.py --write`).

    .venv/bin/python benchmarks/scaling_check.py
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PUBLIC = ROOT / "benchmarks" / "data" / "published_public.yaml"
MPT = ROOT / "benchmarks" / "data" / "llm_foundry_mpt.yaml"


@dataclass(frozen=True)
class Series:
    """Rows of one file whose ids match `pattern`, in the order of their GPU counts."""

    label: str
    path: Path
    pattern: str


SERIES = (
    Series("MegaScale's Megatron-LM baseline, 175B, batch 768", PUBLIC, r"^megascale_megatron_175b_(256|512|768|1024)gpu$"),
    Series("MegaScale's Megatron-LM baseline, 175B, batch 6,144", PUBLIC,
           r"^megascale_megatron_175b_(3072|6144|8192|12288)gpu$"),
    Series("MegaScale's Megatron-LM baseline, 530B, batch grows with the GPUs", PUBLIC, r"^megascale_megatron_530b_"),
    Series("MegaScale's own runtime, 175B, batch 768", PUBLIC, r"^megascale_megascale_175b_(256|512|768|1024)gpu$"),
    Series("MegaScale's own runtime, 175B, batch 6,144", PUBLIC, r"^megascale_megascale_175b_(3072|6144|8192|12288)gpu$"),
    Series("Llama 3 405B, 8K tokens, batch 16M tokens", PUBLIC, r"^llama3_405b_(8192|16384)gpu_tp8_pp16_dp\d+_8k$"),
    Series("llm-foundry MPT-70B, 8 sequences per GPU", MPT, r"^mpt_h100big_70b_"),
    Series("llm-foundry MPT-30B, 8 sequences per GPU", MPT, r"^mpt_h100big_30b_"),
    Series("llm-foundry MPT-13B, 16 sequences per GPU", MPT, r"^mpt_h100big_13b_"),
    Series("llm-foundry MPT-7B, 6 sequences per GPU", MPT, r"^mpt_h100big_7b_"),
    Series("llm-foundry MPT-3B, 8 sequences per GPU", MPT, r"^mpt_h100big_3b_"),
    Series("llm-foundry MPT-1B, 12 sequences per GPU", MPT, r"^mpt_h100big_1b_"),
)


@dataclass(frozen=True)
class Point:
    """One row of a series, its prediction split by term (seconds per step)."""

    id: str
    gpus: int
    dp: int
    microbatches: int
    reported: float
    predicted: float
    step: float
    bubble: float
    tp: float
    pp: float
    dp_exposed: float
    dp_calls: int
    dp_total: float
    """Seconds the step's dp collectives take on their links, hidden or not."""
    dp_latency: float
    """Seconds of the step's dp collectives that are their ring steps' latency (hidden or not)."""

    @property
    def error(self) -> float:
        return self.predicted / self.reported - 1

    @property
    def implied(self) -> float:
        """The step the reported throughput implies (the same FLOPs per step)."""
        return self.step * self.predicted / self.reported

    @property
    def gap(self) -> float:
        return self.implied - self.step


def call_latency(c, lk) -> float:
    """Seconds of one call on `lk` that are its algorithm steps' latency, for the algorithm the
    call runs at its payload: an all-reduce's ring or tree, whichever `Link.all_reduce` picks
    (at no payload the tree would always win, so the latency is the chosen one's at zero bytes);
    any other call's time with no payload to move."""
    if c.kind == "all_reduce":
        if c.size <= 1 or c.payload <= 0:
            return 0.0
        ring = lk.ring_all_reduce(c.payload) <= lk.tree_all_reduce(c.payload)
        return lk.ring_all_reduce(0.0) if ring else lk.tree_all_reduce(0.0)
    from parc import timing

    return timing.collective_seconds(dataclasses.replace(c, payload=1e-300), lk)


def dp_seconds(ledger, hw, constants) -> tuple[float, float]:
    """(seconds, latency seconds) of a step's dp collectives, hidden or not: each call's time on
    its group's link, and of it its algorithm steps' latency (`call_latency`). The link is the
    one of the call's own group (`timing.Group(size, local)`, which is all a link depends on),
    never looked up among the rank's other groups."""
    from parc import timing

    total = latency = 0.0
    for c in ledger.collectives:
        if c.axis != "dp":
            continue
        lk = timing.link(timing.Group(c.size, c.local), hw, constants)
        total += c.count * timing.collective_seconds(c, lk)
        latency += c.count * call_latency(c, lk)
    return total, latency


def point(row, constants) -> Point:
    import fidelity
    from parc import timing

    prepared = fidelity.prepare(row)
    shape, knobs, hw, geo = prepared.shape, prepared.knobs, prepared.hardware, prepared.geometry
    # one set of ranks: the step reported and the ledger read are the same computation's
    ranks = timing.rank_steps(shape, knobs, hw, geo, constants, row.software)
    b = timing.step_from(ranks, shape, knobs, hw, geo, constants, row.software)
    loads, steps = ranks
    rank = steps[loads[b.stage]]
    dp_calls = sum(c.count for c in rank.ledger.collectives if c.axis == "dp")
    dp_total, dp_latency = dp_seconds(rank.ledger, hw, constants)
    return Point(id=row.id, gpus=row.gpus, dp=row.plan.layout.degree("dp"), microbatches=b.microbatches,
                 reported=row.reported_tflops, predicted=fidelity.predicted_tflops(row, b.step), step=b.step,
                 bubble=b.bubble, tp=b.exposed["tp"], pp=b.exposed["pp"], dp_exposed=b.exposed["dp"],
                 dp_calls=dp_calls, dp_total=dp_total, dp_latency=dp_latency)


def series_points(constants=None) -> list[tuple[Series, list[Point]]]:
    """Every series' rows, predicted (the stored constants by default)."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    loaded: dict[Path, list] = {}
    out = []
    for s in SERIES:
        if s.path not in loaded:
            loaded[s.path] = fidelity.load_rows(s.path)[0]
        rows = sorted((r for r in loaded[s.path] if re.search(s.pattern, r.id)), key=lambda r: r.gpus)
        assert len(rows) >= 2, f"series {s.label!r} has {len(rows)} rows"
        out.append((s, [point(r, constants) for r in rows]))
    return out


def table(points: list[tuple[Series, list[Point]]]) -> str:
    lines = ["| series | GPUs | dp | micro-batches | reported | predicted | error | step (s) | bubble (s) | "
             "exposed tp / pp / dp (s) | dp calls | dp seconds, hidden or not | dp ring latency (s) | gap (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s, pts in points:
        for i, p in enumerate(pts):
            label = s.label if i == 0 else ""
            lines.append(f"| {label} | {p.gpus:,} | {p.dp} | {p.microbatches} | {p.reported:.1f} | {p.predicted:.1f} | "
                         f"{p.error:+.1%} | {p.step:.2f} | {p.bubble:.2f} | {p.tp:.2f} / {p.pp:.2f} / "
                         f"{p.dp_exposed:.2f} | {p.dp_calls} | {p.dp_total:.2f} | {p.dp_latency:.3f} | {p.gap:+.2f} |")
    return "\n".join(lines)


def drop(first: float, last: float) -> str:
    return f"{last / first - 1:+.1%}"


def summary(points: list[tuple[Series, list[Point]]]) -> str:
    """Per series, first row to last: the reported and predicted change in throughput per GPU,
    the share of the step the bubble and the exposed dp take at each end, and the gap's range."""
    lines = ["| series | GPUs | reported change | predicted change | bubble share | exposed dp share | "
             "gap (s), range | gap / step, range |", "|---|---|---|---|---|---|---|---|"]
    for s, pts in points:
        a, z = pts[0], pts[-1]
        gaps = [p.gap for p in pts]
        shares = [p.gap / p.implied for p in pts]
        lines.append(f"| {s.label} | {a.gpus:,} -> {z.gpus:,} | {drop(a.reported, z.reported)} | "
                     f"{drop(a.predicted, z.predicted)} | {a.bubble / a.step:.1%} -> {z.bubble / z.step:.1%} | "
                     f"{a.dp_exposed / a.step:.1%} -> {z.dp_exposed / z.step:.1%} | "
                     f"{min(gaps):+.2f} to {max(gaps):+.2f} | {min(shares):+.1%} to {max(shares):+.1%} |")
    return "\n".join(lines)


def constant_gap(points: list[tuple[Series, list[Point]]], prefix: str) -> tuple[float, float, float]:
    """(min, median, max) of the gap in seconds over the series whose label starts with `prefix`."""
    gaps = [p.gap for s, pts in points if s.label.startswith(prefix) for p in pts]
    assert gaps, prefix
    return min(gaps), statistics.median(gaps), max(gaps)


def gap_spread(points: list[tuple[Series, list[Point]]], label: str, leave_out: int | None = None) -> float:
    """Largest over smallest gap along the series `label` (without its run on `leave_out` GPUs)."""
    gaps = [p.gap for s, pts in points if s.label == label for p in pts if p.gpus != leave_out]
    assert len(gaps) >= 2 and min(gaps) > 0, label
    return max(gaps) / min(gaps)


def gap_elasticity(points: list[tuple[Series, list[Point]]], label: str, leave_out: int | None = None) -> float:
    """How the gap grows with the data-parallel ranks along the series `label` (without its run on
    `leave_out` GPUs): the least-squares slope of log(gap) on log(dp). A term the model lacks that
    costs the same seconds at every scale reads 0; one that grows with the ranks a ring spans (a
    ring's per-step latency) 1; one that shrinks as the ranks share it -1."""
    pairs = [(math.log(p.dp), math.log(p.gap)) for s, pts in points if s.label == label for p in pts
             if p.gpus != leave_out]
    assert len(pairs) >= 2 and all(math.isfinite(y) for _, y in pairs), label
    mx = sum(x for x, _ in pairs) / len(pairs)
    my = sum(y for _, y in pairs) / len(pairs)
    return sum((x - mx) * (y - my) for x, y in pairs) / sum((x - mx) ** 2 for x, _ in pairs)


def line_rate_needed(points: list[tuple[Series, list[Point]]], prefix: str, bus: float) -> tuple[float, float]:
    """If the gap were all data-parallel traffic, the fraction of the NIC's line rate the step's
    dp collectives would run at: the model moves their bytes in `dp_total` less their latency at
    `bus` of line rate, and the same bytes would then take the gap longer, so
    `bus` x (total - latency) / (total - latency + gap); (min, max) over the series whose label
    starts with `prefix`."""
    rates = [bus * (p.dp_total - p.dp_latency) / (p.dp_total - p.dp_latency + p.gap)
             for s, pts in points if s.label.startswith(prefix) for p in pts]
    assert rates, prefix
    return min(rates), max(rates)


def gap_per_latency(points: list[tuple[Series, list[Point]]], prefix: str) -> tuple[float, float]:
    """(min, max) over consecutive rows of the series whose label starts with `prefix` of the
    gap's growth over the growth of the dp collectives' ring latency."""
    ratios = [(b.gap - a.gap) / (b.dp_latency - a.dp_latency) for s, pts in points if s.label.startswith(prefix)
              for a, b in zip(pts, pts[1:], strict=False) if b.dp_latency > a.dp_latency]
    assert ratios, prefix
    return min(ratios), max(ratios)


RAIL_SERVERS = 64
"""Servers under one set of MegaScale's rail ToR switches (Jiang et al. 2024, Section 3.6: "the
number of GPU servers connected by the same sets of ToR switches can reach 64"; 1:1 downlink to
uplink bandwidth at every layer of its three-layer CLOS). A data-parallel group of one GPU per
server spans more than one set, and so crosses the aggregation layer, beyond this many servers."""


def across_rails(points: list[tuple[Series, list[Point]]], prefix: str) -> tuple[float, float]:
    """(largest gap within one rail set, largest gap across sets) over the series whose label
    starts with `prefix` (one GPU per server in each dp group: dp servers)."""
    pts = [p for s, ps in points if s.label.startswith(prefix) for p in ps]
    inside = [p.gap for p in pts if p.dp <= RAIL_SERVERS]
    across = [p.gap for p in pts if p.dp > RAIL_SERVERS]
    assert inside and across, prefix
    return max(inside), max(across)


def section(constants=None) -> dict[str, str]:
    """The SCALING_* placeholders of docs/time-model.md."""
    import fidelity
    import scale_slope

    constants = constants or fidelity.DEFAULT
    points = series_points(constants)
    baseline = "MegaScale's Megatron-LM baseline, 175B"
    lo, mid, hi = constant_gap(points, baseline)
    rate = line_rate_needed(points, baseline, constants.bus_network)
    ratio = gap_per_latency(points, "llm-foundry")
    inside, across = across_rails(points, baseline)
    small, large = (s.label for s in SERIES[:2])
    latency = max(p.dp_latency for s, pts in points if s.label.startswith(baseline) for p in pts)
    mpt70 = next(pts for s, pts in points if s.label.startswith("llm-foundry MPT-70B"))
    spread = (f"largest over smallest {gap_spread(points, small):.2f} at batch 768, {gap_spread(points, large):.2f} "
              f"at batch 6,144, {gap_spread(points, large, 3072):.2f} without its 3,072-GPU run; its growth with "
              f"dp, the slope of log gap on log dp, {gap_elasticity(points, small):+.2f} at batch 768 and "
              f"{gap_elasticity(points, large):+.2f} at batch 6,144 ({gap_elasticity(points, large, 3072):+.2f} "
              f"without its 3,072-GPU run), where a constant term reads 0 and one growing with the ranks a ring "
              f"spans 1")
    return {"SCALING_TABLE": table(points), "SCALING_SUMMARY": summary(points),
            "SCALING_GAP": f"{lo:.1f}-{hi:.1f} s, median {mid:.1f} s; {spread}",
            "SCALING_LINE_RATE": f"{rate[0]:.0%}-{rate[1]:.0%}",
            "SCALING_BASELINE_LATENCY": f"at most {latency * 1e3:.0f} ms",
            "SCALING_MPT70_LATENCY": (f"{mpt70[0].dp_latency:.3f} -> {mpt70[-1].dp_latency:.3f} s per step under a "
                                      f"{mpt70[-1].step:.0f} s step"),
            "SCALING_MPT_RATIO": f"{ratio[0]:.1f}-{ratio[1]:.1f}x",
            "SCALING_RAILS": f"at most {across:.1f} s across 96-192 servers, against up to {inside:.1f} s within one set",
            "SCALING_SLOPES": slopes_line(scale_slope.all_series(constants))}


def slopes_line(found) -> str:
    """How many of the series `found` (`scale_slope.all_series`) see their error rise with the
    GPUs, and the median rise per doubling."""
    rising = sum(s.slope > 0 for s in found)
    return (f"{rising} of the {len(found)} series see the prediction's error rise with the GPU count, by a median "
            f"{statistics.median(s.slope for s in found):+.2f} points per doubling")


def main() -> int:
    values = section()
    print(values["SCALING_SUMMARY"], end="\n\n")
    print(values["SCALING_TABLE"], end="\n\n")
    for key in ("SCALING_GAP", "SCALING_LINE_RATE", "SCALING_BASELINE_LATENCY", "SCALING_MPT70_LATENCY",
                "SCALING_MPT_RATIO", "SCALING_RAILS"):
        print(key, values[key])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
