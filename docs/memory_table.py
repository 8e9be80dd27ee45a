"""Generate the comparison tables of docs/memory-model.md.

    .venv/bin/python docs/memory_table.py           # print the tables
    .venv/bin/python docs/memory_table.py --write   # rewrite them in docs/memory-model.md

The published formulas are transcribed here, independently of parc's code, so the tables compare
two implementations: Korthikanti et al. 2022 (Table 2) for activations per layer, Megatron-LM's
`theoretical_memory_usage.py` for the first pipeline stage, and the ZeRO paper for bytes per
parameter. The runs are the dense GPT rows of benchmarks/data/published.yaml (Narayanan et
al. 2021 Table 1, Korthikanti et al. 2022 Table 5). tests/test_memory.py fails when the tables in
the document are stale.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "benchmarks" / "data" / "published.yaml"
DOC = ROOT / "docs" / "memory-model.md"
BEGIN = "<!-- BEGIN GENERATED: .venv/bin/python docs/memory_table.py --write -->"
END = "<!-- END GENERATED -->"
GiB = 1 << 30
MiB = 1 << 20

sys.path.insert(0, str(ROOT))


# ---------------------------------------------------------------------------------------------
# The published formulas, transcribed


def korthikanti_layer(s: int, b: int, h: int, a: int, t: int, sp: bool, recompute: str) -> float:
    """Bytes of activations per layer, Korthikanti et al. 2022, Table 2 (16-bit, MHA, FFN 4h)."""
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    scores = 0 if recompute == "selective" else 5 * a * s / h
    if sp:
        return sbh / t * (34 + scores)
    return sbh * (10 + 24 / t + scores / t)


def megatron_first_stage(row: dict, microbatches: int) -> tuple[float, float]:
    """Megatron-LM theoretical_memory_usage.py: (weights + optimizer, activations) of the first
    pipeline stage, bytes; DDP (no distributed optimizer), LayerNorm, GELU, tied embeddings."""
    m, lay = row["model"], row["layout"]
    h, layers, ffn = m["hidden"], m["layers"], m["ffn"]
    tp, pp, vpp = lay["tp"], lay["pp"], lay["vpp"] or 1
    s, b = m["seq_len"], lay["micro_batch"]
    vocab = math.ceil(m["vocab"] / (128 * tp)) * 128 * tp
    norm = 2
    self_attn = 2 * h * h * (1 + 1)  # num_query_groups == heads, q projection == hidden
    layer = 2 * h * (ffn + norm) + self_attn
    block = layer * layers + norm * h
    embedding = h * vocab
    shard = (block / pp + embedding) / tp
    weights = shard * 18
    sp = bool(lay["sequence_parallel"])
    selective = str(lay["recompute"]).startswith("selective")
    if sp and selective:
        act = s * b * h * (18 + 4 * ffn / h) * layers
        act += 8 * s * b * pp + s * b * h * pp
        if vpp > 1:
            act *= 1 + (pp - 1) / (pp * vpp)
        elif pp > 1:
            act *= min(1, microbatches / pp)
        if pp == 1:
            act += s * b * h * 4 * (1 + vocab / h)
        return weights, act / tp
    act = s * b * h * (10 + 24 / tp) * layers
    act += 8 * s * b * pp + s * b * h * pp
    if vpp > 1:
        act *= 1 + (pp - 1) / (pp * vpp)
    elif pp > 1:
        act *= min(1, microbatches / pp)
    if pp == 1:
        act += (s * b * vocab / tp + s * b * h) * 2
    return weights, act * 1.05


ZERO = {"none": lambda n: 16, "zero1": lambda n: 4 + 12 / n, "zero2": lambda n: 2 + 14 / n, "zero3": lambda n: 16 / n}
"""Rajbhandari et al. 2020, Section 3.1: bytes per parameter for mixed-precision Adam."""


# ---------------------------------------------------------------------------------------------
# parc


def spec_text(row: dict) -> str:
    m, lay = row["model"], row["layout"]
    axes = [("tp", lay["tp"]), ("pp", lay["pp"]), ("dp", lay["dp"])]
    layout = " x ".join(f"{a} {d}" for a, d in axes if d > 1) or "dp 1"
    recompute = "full" if str(lay["recompute"]).startswith("full") else "selective"
    vpp = lay["vpp"] or 1
    lines = [
        f"{layout} on nodes(8 gpus, nvlink)",
        f"model {{ layers {m['layers']}, hidden {m['hidden']}, ffn {m['ffn']}, heads {m['heads']}, "
        f"vocab {m['vocab']}, activation gelu, norm layernorm, position learned, tied-embeddings on }}",
        "hardware { gpu a100-80gb }",
        f"train {{ seq {m['seq_len']}, global-batch {lay['global_batch']}, micro-batch {lay['micro_batch']}, "
        f"precision fp16, optimizer adam, recompute {recompute} }}",
    ]
    if lay["tp"] > 1:
        lines.append(f"tp {{ sequence-parallel {'on' if lay['sequence_parallel'] else 'off'} }}")
    if vpp > 1:
        lines.append(f"pp {{ schedule interleaved-1f1b, virtual-stages {vpp} }}")
    return "\n".join(lines) + "\n"


def rows() -> list[dict]:
    import yaml

    data = yaml.safe_load(PUBLISHED.read_text())
    keep = []
    for row in data:
        group = row["group"]
        lay = row["layout"]
        if group in ("narayanan2021_table1", "korthikanti2022_table5") and lay["tp"] and lay["global_batch"]:
            keep.append(row)
    return keep


def fmt(value: float, unit: int) -> str:
    return f"{value / unit:,.1f}"


def runs_table() -> list[str]:
    from parc import memory
    from parc.memory.activations import layer_activations
    from parc.pipeline import compile_text

    out = [
        "| run | layout | recompute | layer, Korthikanti (MiB) | layer, parc megatron | layer, parc torch "
        "| stage 0, Megatron-LM (GiB) | stage 0, parc megatron | stage 0, parc torch | peak, parc torch |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows():
        m, lay = row["model"], row["layout"]
        result = compile_text(spec_text(row), path=f"{row['id']}.par", checks=False)
        plan = result.plan
        assert plan is not None, (row["id"], [d.message for d in result.diagnostics])
        shape, k = memory.shape_of(plan), memory.knobs_of(plan)
        recompute = k.recompute
        layer_k = korthikanti_layer(m["seq_len"], lay["micro_batch"], m["hidden"], m["heads"], lay["tp"],
                                    bool(lay["sequence_parallel"]), recompute)
        layer_m = layer_activations(shape, replace(k, runtime="megatron"), False, recompute).saved
        layer_t = layer_activations(shape, k, False, recompute).saved
        weights, act = megatron_first_stage(row, k.microbatches)
        mega = memory.estimate(plan, "megatron")
        torch = memory.estimate(plan, "torch")
        layout = f"tp {lay['tp']} pp {lay['pp']}" + (f" (v {lay['vpp']})" if (lay["vpp"] or 1) > 1 else "") \
            + f" dp {lay['dp']}, b {lay['micro_batch']}, m {k.microbatches}" + (", SP" if lay["sequence_parallel"] else "")
        out.append(
            f"| {row['id']} | {layout} | {recompute} | {fmt(layer_k, MiB)} | {fmt(layer_m, MiB)} | {fmt(layer_t, MiB)} "
            f"| {fmt(weights, GiB)} + {fmt(act, GiB)} | {fmt(mega.stages[0].total, GiB)} "
            f"| {fmt(torch.stages[0].total, GiB)} | {fmt(torch.peak_bytes, GiB)} (stage {torch.peak_stage}) |"
        )
    return out


def zero_table() -> list[str]:
    from parc.memory.inputs import Knobs
    from parc.memory.parameters import Params
    from parc.memory.states import model_states

    psi = 10**9
    out = ["| sharding | ZeRO paper | parc zero | parc megatron | parc torch (pp 1) | parc torch (pp > 1) |",
           "|---|---:|---:|---:|---:|---:|"]
    n = 64
    for sharding in ("none", "zero1", "zero2", "zero3"):
        cells = [f"{ZERO[sharding](n):.2f}"]
        for runtime, pp in (("zero", 1), ("megatron", 1), ("torch", 1), ("torch", 4)):
            s = model_states(Params(linear=psi), Knobs(tp=1, pp=pp, dp=n, sharding=sharding, runtime=runtime))
            held = s.unsharded if runtime == "torch" and (sharding == "zero2" or pp > 1) else 0
            cells.append(f"{(s.params + s.grads + s.optimizer + s.accumulated_grads + held) / psi:.2f}")
        out.append(f"| {sharding} | " + " | ".join(cells) + " |")
    return out


def in_flight_table() -> list[str]:
    from parc.memory.schedules import peak_states

    pp, m = 8, 32
    out = [f"| schedule (pp {pp}, m {m}, v 2 where it applies) | rank 0 held | rank 0 pending W | "
           f"rank {pp - 1} held | rank {pp - 1} pending W |", "|---|---:|---:|---:|---:|"]
    for schedule in ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"):
        v = 1 if schedule in ("gpipe", "1f1b") else 2
        cells = []
        for rank in (0, pp - 1):
            states = peak_states(schedule, pp, v, m, rank)
            held = max(sum(h) for h, _, _ in states)
            pending = max(sum(p) for _, p, _ in states)
            unit = "" if v == 1 else " chunks"
            cells += [f"{held}{unit}", f"{pending}"]
        out.append(f"| {schedule} | " + " | ".join(cells) + " |")
    return out


def generate() -> str:
    lines = ["### Published runs", "", *runs_table(), "", "### Bytes per parameter (dp 64)", "", *zero_table(), "",
             "### Micro-batches in flight", "", *in_flight_table()]
    return "\n".join(lines) + "\n"


def write() -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + generate() + text[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the tables in docs/memory-model.md")
    args = parser.parse_args()
    if args.write:
        write()
    else:
        sys.stdout.write(generate())


if __name__ == "__main__":
    main()
