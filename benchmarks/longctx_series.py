"""What the ModelZoo long-context series says about attention and the MoE layers, from its own
published figures alone (no time model), beside what parc charges for the same parts.

    .venv/bin/python benchmarks/longctx_series.py

Why (issue 14): Megatron-MoE-ModelZoo's Qwen3-235B-A22B long-context table (best_practice/Qwen3/
readme.md, commit c1ad0b5, added 2025-11-04) runs 16K, 32K, 64K and 128K tokens with cp = seq /
16K, every other setting equal (tp 4, pp 8, vpp 4, ep 8, micro-batch 1 (the repository's
runtime.conf for Qwen3-235B-A22B), global batch 256 sequences, DeepEP, `--recompute-modules
layernorm moe`). Each rank therefore holds 16K tokens of a sequence at every length: per
micro-batch its GEMMs, norms, router, permutations and token exchanges are the same at every
length, and only the attention core grows, in proportion to the sequence (each local query
attends to s / 2 keys on average under the causal mask, the load-balanced chunks included). So the
time of one micro-batch on the busiest rank is a straight line in s:

    t(s) = X + a s

`X` is everything but the attention core (the MoE layers, the dense GEMMs, the exposed
communication), `a s` the attention core. Both come out of a least-squares line through the four
published points of a series, and `a` gives the speed the runtime's attention kernels sustained:
the FLOPs they execute per unit of s (forward 4 (q / tp) n s / 2 per layer, the backward 2.5x, as
FlashAttention counts them) over `a`.

The published figure is TFLOP/s per GPU in Megatron-Core's count (`num_floating_point_operations`,
causal since commit 8873b55d6a of 2025-03-06, which the table's date postdates); the step time is
that count over the figure. One micro-batch's time is the step over m + (p - 1) / v slots
(interleaved 1F1B: the fill and drain take (p - 1) / v micro-batches' time on the busiest rank).
The busiest rank holds ceil(L / pp) layers."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parc.calibration import DEFAULT  # noqa: E402

SERIES = "modelzoo_qwen3_235b_longctx_"
"""The rows' id prefix in benchmarks/data/published.yaml; `_dropless` and `_forced_balance` end
the two routings."""

FLASH_BACKWARD = 2.5
"""FlashAttention's backward executes 2.5x its forward's products (it recomputes the scores): Dao
2023 and Shah et al. 2024 count it so. Stated here, not imported, so the split does not read the
time model."""


@dataclass(frozen=True)
class Point:
    seq: int
    micro_seconds: float
    """Published step time over m + (p - 1) / v: one micro-batch on the busiest rank."""
    attention_flops: float
    """Attention-core FLOPs the busiest rank executes in one micro-batch (forward and backward)."""


@dataclass(frozen=True)
class Line:
    """t(s) = rest + slope s through a series' points."""

    routing: str
    points: tuple[Point, ...]
    rest: float
    slope: float

    @property
    def attention_tflops(self) -> float:
        """The attention kernels' sustained speed: executed FLOPs per unit of s over the slope."""
        per_s = self.points[0].attention_flops / self.points[0].seq
        return per_s / self.slope / 1e12

    def residual(self) -> float:
        """Largest |relative| distance of a published point from the line."""
        return max(abs(self.rest + self.slope * p.seq - p.micro_seconds) / p.micro_seconds for p in self.points)


def point(row) -> Point:
    """One published row as a point: its micro-batch time and its attention FLOPs, from the row's
    own layout and shape (the plan's facts, not the time model's)."""
    lay, train, model = row.plan.layout, row.plan.training, row.plan.model
    tp, pp, cp = lay.degree("tp"), lay.degree("pp"), lay.degree("cp")
    v = max(1, lay.pp.virtual_stages or 1)
    seq, micro = train.seq_len, train.micro_batch or 1
    step = row.conv_flops / (row.reported_tflops * 1e12 * row.gpus)
    dp = row.gpus // (tp * pp * cp)
    m = train.global_batch // (dp * micro)
    slots = m + (pp - 1) / v
    layers = math.ceil(model.layers / pp)
    q = model.heads * model.head_dim
    local = seq * micro / cp
    forward = 4 * (q / tp) * local * seq / 2
    return Point(seq=seq, micro_seconds=step / slots, attention_flops=layers * (1 + FLASH_BACKWARD) * forward)


def fit(routing: str, points: list[Point]) -> Line:
    """Least squares through the points."""
    n = len(points)
    xs = [p.seq for p in points]
    ys = [p.micro_seconds for p in points]
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return Line(routing, tuple(points), my - slope * mx, slope)


def lines(rows) -> dict[str, Line]:
    """The dropless and the forced-balance series, each as its line."""
    out = {}
    for routing in ("dropless", "forced_balance"):
        chosen = sorted((point(r) for r in rows if r.id.startswith(SERIES) and r.id.endswith(routing)),
                        key=lambda p: p.seq)
        if len(chosen) >= 2:
            out[routing] = fit(routing, chosen)
    return out


def model_split(row, constants=DEFAULT) -> tuple[float, float, float]:
    """(parc's micro-batch time, its attention-core seconds in it, its attention speed in TFLOP/s)
    for a row: the step over the same slots, and the attention kernels `timing.layer_work`
    charges on the busiest rank's layers (forward, backward and any recomputation of the core)."""
    import fidelity
    from parc import timing

    p = fidelity.prepare(row)
    k, s, hw, sw = p.knobs, p.shape, p.hardware, row.software
    b = fidelity.predicted_step(row, p, constants)
    v = max(1, k.virtual_stages)
    micro = b.step / (k.microbatches + (k.pp - 1) / v)
    w = timing.layer_work(s, timing.LayerCase.of(k, bool(s.moe), sw), hw, constants)
    layers = math.ceil(s.layers / k.pp)
    attention = layers * (w.attention_f + w.attention_b)
    flops = point(row).attention_flops
    return micro, attention, flops / attention / 1e12


def table(rows, constants=DEFAULT) -> str:
    out = ["| series | published: attention TFLOP/s | rest X, ms per micro-batch | line's worst residual | "
           "parc: attention TFLOP/s | parc: rest, ms |", "|---|---|---|---|---|---|"]
    found = lines(rows)
    for routing, line in found.items():
        chosen = [r for r in rows if r.id.startswith(SERIES) and r.id.endswith(routing)]
        splits = [model_split(r, constants) for r in chosen]
        rest = sum(m - a for m, a, _ in splits) / len(splits)
        speed = sum(t for _, _, t in splits) / len(splits)
        out.append(f"| {routing.replace('_', ' ')} | {line.attention_tflops:.0f} | {1e3 * line.rest:.0f} | "
                   f"{100 * line.residual():.1f}% | {speed:.0f} | {1e3 * rest:.0f} |")
    return "\n".join(out)


NEMO = "nemo2403_llama2_7b_fp8_"
"""NeMo's long-sequence table (NeMo 24.03.01 container, Llama 2 7B in FP8, H100): the rows
`attention_sustained` is fitted on."""


def nemo_line(rows) -> Line | None:
    """The same split for NeMo's table: its rows at the longest sequences that share tp and the
    tokens a rank holds (512K and 1M tokens at tp 8, cp 16 and 32: 32K tokens a rank). Its
    figures are in NeMo's non-causal count, which physics requires (read causally, its attention
    would outrun cuDNN's own kernel benchmarks: `nemo_causal_reading`); `point` uses the row's own
    count, whichever it is."""
    found = _nemo_longest(rows, causal=False)
    return fit("nemo", sorted(found[1], key=lambda p: p.seq)) if found else None


def nemo_causal_reading(rows) -> Line | None:
    """The same split had NeMo counted only the causal half of the score square: its count's
    attention term (12 L h s^2 a sequence, `published.nemo_noncausal`) halved, so each step the
    published TFLOP/s stand for is that much shorter."""
    found = _nemo_longest(rows, causal=True)
    return fit("nemo causal", sorted(found[1], key=lambda p: p.seq)) if found else None


def _causal_point(row) -> Point:
    """`point` with the step NeMo's figure would give under a causal count."""
    import dataclasses

    m, train = row.plan.model, row.plan.training
    square = 12 * m.layers * m.hidden * train.seq_len ** 2 * train.global_batch
    shorter = (row.conv_flops - square / 2) / row.conv_flops
    p = point(row)
    return dataclasses.replace(p, micro_seconds=p.micro_seconds * shorter)


def _nemo_longest(rows, causal: bool) -> tuple[int, list[Point]] | None:
    """NeMo's longest group of rows sharing tp and the tokens a rank holds: (those tokens, points),
    read in its own count or (`causal`) in a causal one."""
    by_group: dict[tuple[int, int], list[Point]] = {}
    for row in rows:
        if not row.id.startswith(NEMO):
            continue
        p = _causal_point(row) if causal else point(row)
        by_group.setdefault((row.plan.layout.degree("tp"), rank_tokens(row)), []).append(p)
    groups = [(key[1], g) for key, g in by_group.items() if len(g) >= 2]
    if not groups:
        return None
    return max(groups, key=lambda kg: max(p.seq for p in kg[1]))


def rank_tokens(row) -> int:
    """Tokens of a sequence one rank holds: the keys each ring step's kernels walk."""
    lay, train = row.plan.layout, row.plan.training
    return int(train.seq_len * (train.micro_batch or 1) // lay.degree("cp"))


def release_runtimes(rows) -> list:
    """The two runtimes' sustained attention speeds, with the keys their kernels walk, for
    `kernel_releases` (the ModelZoo series first, then NeMo's longest pair)."""
    import kernel_releases

    found, nemo, causal = lines(rows), _nemo_longest(rows, causal=False), nemo_causal_reading(rows)
    series = [r for r in rows if r.id.startswith(SERIES)]
    if "forced_balance" not in found or not nemo or not series or not causal:
        return []
    return [kernel_releases.Runtime("ModelZoo series", found["forced_balance"].attention_tflops,
                                    rank_tokens(series[0])),
            kernel_releases.Runtime("NeMo 24.03.01", fit("nemo", nemo[1]).attention_tflops, nemo[0],
                                    causal.attention_tflops)]


def section(rows, constants=DEFAULT) -> str:
    """docs/time-model.md's account of the series (written by `fidelity.py --write`)."""
    found = lines(rows)
    if set(found) != {"dropless", "forced_balance"}:
        return "(the long-context rows are not in the calibration set)"
    import kernel_releases

    nemo = nemo_line(rows)
    ratio = found["dropless"].rest / found["forced_balance"].rest
    model_speed = table_speed(rows, constants)
    sustained = constants.attention_sustained
    measured = found["forced_balance"].attention_tflops
    what_if = errors_at(rows, measured / model_speed, constants)
    forced = [abs(e) for i, e in what_if.items() if i.endswith("forced_balance")]
    dropless = [e for i, e in what_if.items() if i.endswith("dropless")]
    nemo_text = (f"NeMo's own table split the same way (its 512K and 1M rows, tp 8 and 32K tokens a rank "
                 f"at both) gives {nemo.attention_tflops:.0f} TFLOP/s" if nemo else "NeMo's table gives no pair")
    return "\n".join([
        table(rows, constants),
        "",
        f"Each routing's four points lie on one line within {100 * max(x.residual() for x in found.values()):.1f} %, "
        f"and both lines give the same attention speed: the premise holds. Everything but the attention "
        f"core, with the router forced to an even load, is where the model puts it (the intercept beside "
        f"the model's step less its attention kernels). Dropless, the same part takes {ratio:.2f}x as long "
        f"as forced balance: the trained router's imbalance. Megatron-Core's forced balancing draws the "
        f"router's logits as normal noise per token (`moe_utils.RandomSTE`), a random router, so the model "
        f"charges both routings the random router's load and makes them equal: it has no trained-router "
        f"term (\"A trained router's imbalance\", below).",
        "",
        f"The attention kernels of these runs (Megatron-Core with Transformer Engine and cuDNN as of late "
        f"2025: the build line atop the repository's `dockers/Dockerfile` at that commit tags its image "
        f"`te2.6.0.dev0-cudnn9.11.0.92`) sustain {measured:.0f} TFLOP/s, "
        f"{measured / (model_speed / sustained):.2f}x the cuDNN curve the model holds "
        f"(`attention_kernels.yaml`, FlashAttention-3's paper), where the model charges "
        f"{model_speed:.0f}: the curve times `attention_sustained` ({sustained:.4g}). {nemo_text}: "
        f"the constant is right for the runtime it was fitted on (NeMo's 24.03.01 container, early 2024) "
        f"and {measured / model_speed:.1f}x slow for this later one. One global constant cannot hold both, "
        f"and the published rows of the two runtimes say so without the model. With attention at the series' own speed (what-if, "
        f"not stored) the forced-balance rows would come within {100 * max(forced):.0f} % and the "
        f"dropless rows {100 * min(dropless):+.0f} to {100 * max(dropless):+.0f} % (the imbalance above).",
        "",
        kernel_releases.section(release_runtimes(rows)),
    ])


def errors_at(rows, factor: float, constants=DEFAULT) -> dict[str, float]:
    """Each series row's error with its attention kernels `factor` times as fast (what-if)."""
    import fidelity

    constants = constants.with_values({"attention_sustained": constants.attention_sustained * factor})
    out = {}
    for row in rows:
        if row.id.startswith(SERIES):
            step = fidelity.predicted_step(row, fidelity.prepare(row), constants).step
            out[row.id] = fidelity.predicted_tflops(row, step) / row.reported_tflops - 1
    return out


def table_speed(rows, constants=DEFAULT) -> float:
    """The model's attention speed for the series (every row's is the same to 1 %)."""
    speeds = [model_split(r, constants)[2] for r in rows if r.id.startswith(SERIES)]
    return sum(speeds) / len(speeds)


def main() -> int:
    import fidelity

    rows, _ = fidelity.load_rows()
    found = lines(rows)
    for routing, line in found.items():
        print(f"{routing}: t(s) = {line.rest * 1e3:.1f} ms + {line.slope * 16384 * 1e3:.1f} ms per 16K tokens; "
              f"attention {line.attention_tflops:.0f} TFLOP/s; worst residual {100 * line.residual():.1f}%")
        for p in line.points:
            print(f"  {p.seq:>7}  {p.micro_seconds * 1e3:8.1f} ms per micro-batch")
    if "dropless" in found and "forced_balance" in found:
        print(f"dropless / forced balance, everything but attention: "
              f"{found['dropless'].rest / found['forced_balance'].rest:.2f}x")
    nemo = nemo_line(rows)
    if nemo:
        print(f"NeMo 24.03 (its longest pair): attention {nemo.attention_tflops:.0f} TFLOP/s, "
              f"rest {nemo.rest * 1e3:.1f} ms per sequence")
    print()
    print(section(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
