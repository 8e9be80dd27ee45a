"""Fit the attention-kernel curves of `compiler/kernels.py` to published kernel benchmarks.

    .venv/bin/python benchmarks/kernel_fit.py           # fit, print the table of fitted vs published
    .venv/bin/python benchmarks/kernel_fit.py --write   # and rewrite kernels.py's fitted block

The data: `benchmarks/data/attention_kernels.yaml` (FlashAttention-3 paper, Figures 5 and 6, H100).
Each kernel's seven constants are fitted by least squares on log(predicted / published TFLOP/s)
over its head-dim 64 and 128 curves; head dim 256 is outside the model's range (taken as 128)
and is printed, not fitted. Deterministic: Nelder-Mead from a fixed start.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "attention_kernels.yaml"
KERNELS = ROOT / "compiler" / "kernels.py"
BEGIN = "# BEGIN FITTED (written by benchmarks/kernel_fit.py --write; do not edit by hand)"
END = "# END FITTED"
MEASURED_BEGIN = "# BEGIN MEASURED (written by benchmarks/kernel_fit.py --write; do not edit by hand)"
MEASURED_END = "# END MEASURED"
NAMES = {"fa2": "FA2_HOPPER", "cudnn": "CUDNN_HOPPER"}

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parc.kernels import AttentionCurve  # noqa: E402


def load() -> dict:
    import yaml

    return yaml.safe_load(DATA.read_text())


def points(data: dict, kernel: str, gpu: str = "h100") -> list[tuple[int, int, bool, bool, float]]:
    """(keys, head dim, causal, backward, fraction of peak) of every published bar."""
    peak = data["peaks"][gpu]
    out = []
    for curve in data["curves"]:
        if curve["kernel"] != kernel or curve["gpu"] != gpu:
            continue
        for s, t in zip(curve["seq"], curve["tflops"], strict=True):
            out.append((s, curve["head_dim"], curve["causal"], curve["direction"] == "backward", t / peak))
    return out


def _curve(z: list[float]) -> AttentionCurve:
    f, b, fh, bh, c, ch, hh = (math.exp(v) for v in z)
    return AttentionCurve(forward=f, backward=b, forward_half=fh, backward_half=bh, causal=min(c, 1.0),
                          causal_half=ch, head_half=hh)


def fit(data: dict, kernel: str) -> AttentionCurve:
    from fidelity import nelder_mead

    pts = [p for p in points(data, kernel) if p[1] <= 128]

    def objective(z):
        curve = _curve(z)
        errors = [math.log(curve.efficiency(s, d, causal, bwd) / frac) for s, d, causal, bwd, frac in pts]
        return sum(e * e for e in errors) / len(errors)

    start = [math.log(v) for v in (0.4, 0.35, 200.0, 200.0, 0.9, 300.0, 30.0)]
    z, _ = nelder_mead(objective, start, iterations=4000)
    c = _curve(z)
    return AttentionCurve(**{f.name: float(f"{getattr(c, f.name):.4g}") for f in fields(AttentionCurve)})


def _peak(part: str) -> float:
    """A catalogue part's dense BF16 peak, TFLOP/s."""
    from parc.catalog.gpus import GPUS

    return GPUS[part]["bf16_flops"] / 1e12


def measured_ratios(data: dict) -> dict[str, tuple[float, float]]:
    """`kernels.ATTENTION_MEASURED`: each part of the yaml's `parts` against the `releases` entry
    named by `parts_reference` (H200), (forward, backward): the median over the (seq, causal)
    points both hold of (part TFLOP/s / part peak) / (reference TFLOP/s / reference peak). A
    measurement, not a fit: no constant is chosen to match anything."""
    import statistics

    reference = next(r for r in data["releases"] if r["release"] == data["parts_reference"])
    ref_peak = _peak("h200")
    ref = {(s, c): (f / ref_peak, b / ref_peak) for s, c, f, b in reference["points"]}
    out = {}
    for part in data["parts"]:
        peak = _peak(part["part"])
        common = [(f / peak / ref[(s, c)][0], b / peak / ref[(s, c)][1])
                  for s, c, f, b in part["points"] if (s, c) in ref]
        if not common:
            raise SystemExit(f"kernel_fit: {part['part']} shares no point with {data['parts_reference']}")
        out[part["part"]] = (round(statistics.median(x for x, _ in common), 4),
                             round(statistics.median(y for _, y in common), 4))
    return out


SWEEP_NODES = {"gb200-nvl72": "nodes(4 gpus, nvl72)", "gb300-nvl72": "nodes(4 gpus, nvl72)", "h200": "nodes(8 gpus, nvlink)"}


def sweep_case(gpu: str, heads: int, kv_heads: int, head_dim: int, window: int | None = None):
    """(Hardware, Shape) of a two-layer model with a sweep's heads on `gpu` (only its attention
    core is timed)."""
    from parc import timing
    from parc.memory.inputs import shape_of
    from parc.pipeline import compile_text

    text = "\n".join([
        f"dp 2 on {SWEEP_NODES[gpu]}", "model {",
        f"  layers 2, hidden {heads * head_dim}, ffn {heads * head_dim}, heads {heads}, kv-heads {kv_heads}, "
        "vocab 32000",
        f"  head-dim {head_dim}, activation swiglu, norm rmsnorm, position rope, tied-embeddings off",
        *([f"  window {window}"] if window else []), "}",
        f"hardware {{ gpu {gpu} }}", "target megatron", "train {", "  seq 4096, global-batch 2, micro-batch 1",
        "  precision bf16, optimizer adamw, recompute none", "}"]) + "\n"
    plan = compile_text(text, path="sweep.par", checks=False).plan
    return timing.hardware_of(plan), shape_of(plan)


def sweep_quotients(gpu: str, run: dict, seq: int, causal: bool, forward: float, backward: float,
                    window: int | None = None) -> tuple[float, float]:
    """(forward, backward): the time model's seconds for one point of a cudnn-frontend sweep, at the
    kernel's own speed (`sustained` 1), over the seconds the sweep's TFLOP/s give under its own FLOP
    count (benchmark_single_sdpa.py's `flops()`: 4 x head dim x heads x batch x the unmasked
    entries, the causal triangle with its diagonal, a window's band; the backward 2.5x)."""
    from parc import timing

    hw, shape = sweep_case(gpu, run["heads"], run["kv_heads"], run["head_dim"], window)
    batch = run.get("batch") or 1
    f, b, _ = timing.flash_attention_seconds(shape, 1, 1, "ring", seq, batch * seq, "flash-te", hw, 1.0)
    if window:
        entries = window * (window + 1) // 2 + (seq - window) * window
    else:
        entries = seq * (seq + 1) // 2 if causal else seq * seq
    flop = 4.0 * entries * run["head_dim"] * run["heads"] * batch
    return f / (flop / (forward * 1e12)), b / (2.5 * flop / (backward * 1e12))


def sweep_table(data: dict) -> str:
    """The model's seconds over each sweep's, causal points: H200 (the reference), GB200, GB300
    (`parts`), and the sliding-window preset (`windowed`); for docs/time-model.md."""
    reference = next(r for r in data["releases"] if r["release"] == data["parts_reference"])
    runs = [("H200 (cuDNN 9.19.1)", "h200", reference)] + [
        (f"{p['gpu'].removeprefix('NVIDIA ')} ({p['release']})", p["part"], p) for p in data["parts"]]
    seqs = sorted({s for _, _, run in runs for s, c, _, _ in run["points"] if c})
    lines = ["| run, head dim 128, causal | " + " | ".join(f"{s // 1024}K fwd / bwd" for s in seqs) + " |",
             "|---|" + "---|" * len(seqs)]
    for label, gpu, run in runs:
        cells = {s: sweep_quotients(gpu, run, s, True, f, b) for s, c, f, b in run["points"] if c}
        lines.append(f"| {label} | " + " | ".join(f"{cells[s][0]:.2f} / {cells[s][1]:.2f}" for s in seqs) + " |")
    for w in data["windowed"]:
        cells = [sweep_quotients(w["part"], w, s, True, f, b, w["window"]) for s, f, b in w["points"]]
        lines.append(f"| {w['gpu'].removeprefix('NVIDIA ')}, head dim 64, window {w['window']} | "
                     + " | ".join(f"{f:.2f} / {b:.2f}" for f, b in cells)
                     + " |" * (len(seqs) - len(cells) + 1))
    return "\n".join(lines)


def table(data: dict, curves: dict[str, AttentionCurve]) -> str:
    lines = ["kernel  dir  mask    d   " + "".join(f"{s:>12}" for s in (512, 1024, 2048, 4096, 8192, 16384))]
    peak = data["peaks"]["h100"]
    for curve in data["curves"]:
        model = curves[curve["kernel"]]
        row = f"{curve['kernel']:<7} {curve['direction'][:3]:<4} {'causal' if curve['causal'] else 'none':<6} " \
              f"{curve['head_dim']:>3}   "
        for s, t in zip(curve["seq"], curve["tflops"], strict=True):
            p = model.efficiency(s, curve["head_dim"], curve["causal"], curve["direction"] == "backward") * peak
            row += f"{t:>5.0f}/{p:<5.0f} "
        lines.append(row)
    return "\n".join(lines) + "\n(published / fitted TFLOP/s on H100)"


def write(curves: dict[str, AttentionCurve]) -> None:
    text = KERNELS.read_text()
    block = "\n".join(f"{NAMES[k]} = AttentionCurve(" + ", ".join(
        f"{f.name}={getattr(c, f.name):.4g}" for f in fields(AttentionCurve)) + ")" for k, c in curves.items())
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: f"{BEGIN}\n{block}\n{END}", text, flags=re.S)
    KERNELS.write_text(new)


def bf16_points(data: dict, part: str) -> dict[tuple[int, bool], tuple[float, float]]:
    """A part's BF16 sweep in the suite: H200's `releases` entry (`parts_reference`), else its `parts`
    entry; (seq, causal) -> (forward, backward) TFLOP/s."""
    if part == "h200":
        run = next(r for r in data["releases"] if r["release"] == data["parts_reference"])
    else:
        run = next(p for p in data["parts"] if p["part"] == part)
    return {(s, c): (f, b) for s, c, f, b in run["points"]}


def fp8_speedups(data: dict) -> dict[str, dict[str, tuple[float, float]]]:
    """`kernels.ATTENTION_FP8_MEASURED`: for each part of the yaml's `quantized`, each FP8 kind it was
    run in ("fp8", "mxfp8") -> (forward, backward): the median over the (seq, causal) points the
    part's BF16 run also holds of FP8 TFLOP/s over BF16 TFLOP/s. A measurement, not a fit."""
    import statistics

    out: dict[str, dict[str, tuple[float, float]]] = {}
    for run in data["quantized"]:
        bf16 = bf16_points(data, run["part"])
        for kind in ("fp8", "mxfp8"):
            pairs = [(f / bf16[(s, c)][0], b / bf16[(s, c)][1])
                     for s, c, f, b in run.get(kind, []) if (s, c) in bf16]
            if pairs:
                out.setdefault(run["part"], {})[kind] = (round(statistics.median(x for x, _ in pairs), 4),
                                                         round(statistics.median(y for _, y in pairs), 4))
    return out


def write_measured(ratios: dict[str, tuple[float, float]],
                   speedups: dict[str, dict[str, tuple[float, float]]]) -> None:
    text = KERNELS.read_text()
    block = "ATTENTION_MEASURED = {" + ", ".join(f'"{k}": ({f}, {b})' for k, (f, b) in ratios.items()) + "}\n"
    block += "ATTENTION_FP8_MEASURED = {" + ", ".join(
        f'"{part}": {{' + ", ".join(f'"{kind}": ({f}, {b})' for kind, (f, b) in kinds.items()) + "}"
        for part, kinds in speedups.items()) + "}"
    new = re.sub(re.escape(MEASURED_BEGIN) + r".*?" + re.escape(MEASURED_END),
                 lambda _: f"{MEASURED_BEGIN}\n{block}\n{MEASURED_END}", text, flags=re.S)
    KERNELS.write_text(new)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    data = load()
    curves = {k: fit(data, k) for k in NAMES}
    for k, c in curves.items():
        print(f"{NAMES[k]} = {c}")
    print(table(data, curves))
    ratios = measured_ratios(data)
    for part, (f, b) in ratios.items():
        print(f"{part}: fused attention {f:.4f} forward, {b:.4f} backward of H200's fraction of peak")
    speedups = fp8_speedups(data)
    for part, kinds in speedups.items():
        for kind, (f, b) in kinds.items():
            print(f"{part}: {kind} attention {f:.4f}x forward, {b:.4f}x backward its BF16 kernel")
    if args.write:
        write(curves)
        write_measured(ratios, speedups)
    return 0


if __name__ == "__main__":
    sys.exit(main())
