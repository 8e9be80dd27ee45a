"""`parc diff`: what a change to a spec changes, and what that does to memory and speed.

A layout is reviewed like code, so the diff is of *facts*, not of text: two specs that differ
only in comments or formatting have no diff, and a one-word change (`schedule 1f1b` ->
`interleaved-1f1b`) shows its effect on every prediction. Facts come from each side's Plan,
predictions from `parc explain`'s report (memory and time models), so the diff never computes a
number of its own.

Exit status, for CI gates (documented in docs/ci.md):

- 0: the new spec is clean (warnings allowed) and within the thresholds;
- 1: the new spec has errors (which include E0401: it no longer fits in memory), or its
  predicted peak memory exceeds the usable HBM;
- 2: usage error (unreadable file, unknown git revision);
- 3: the new layout is predicted slower than the old by more than `--max-slowdown PCT`.

Errors in the *old* spec do not fail the diff: the change may be the fix. The old side is then
shown with its errors and without predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import budget as run_budget
from .diagnostics import has_errors
from .pipeline import Compilation
from .plan import Plan

GiB = 1 << 30

STATUS_OK, STATUS_ERRORS, STATUS_SLOWER = 0, 1, 3
NOISE = 0.005
"""Relative changes below this are not called better or worse (the models are not that exact)."""


@dataclass
class Side:
    """One spec of the comparison: where it came from, its compilation and explain's report."""

    label: str
    compilation: Compilation
    report: dict | None

    @classmethod
    def of(cls, label: str, compilation: Compilation) -> Side:
        report = None
        if compilation.plan is not None and not _front_end_errors(compilation):
            from .explain import build_report

            report = build_report(compilation)
        return cls(label, compilation, report)


def _front_end_errors(compilation: Compilation) -> bool:
    """Errors before the checks (parse, names, resolution): the plan is then not trustworthy."""
    return compilation.plan is None or any(d.is_error and not d.code.startswith(("E03", "E04"))
                                           for d in compilation.diagnostics)


# ---------------------------------------------------------------------------------------------
# Facts


def _axis_text(plan: Plan, name: str) -> str:
    degree = plan.layout.degree(name)
    if name == "ep" and plan.layout.ep.folded_over and (degree or 1) > 1:
        return f"{degree} over {' x '.join(plan.layout.ep.folded_over)}"
    return "?" if degree is None else str(degree)


def _attention_text(model) -> str:
    """Full causal, or the sliding window and its layer pattern; and multi-head latent attention's
    latents where the model has them."""
    latent = ""
    if model.kv_lora_rank:
        latent = f", latent kv {model.kv_lora_rank:,}" + (f" q {model.q_lora_rank:,}" if model.q_lora_rank else "")
    if not model.window:
        return "full causal" + latent
    every = f", every {model.full_attention_every} full" if model.full_attention_every else ""
    return f"window {model.window:,} on {len(model.windowed_layers)} layers{every}" + latent


def _opt(value) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def facts(plan: Plan) -> dict[str, str]:
    """The facts a reviewer compares, in reading order, as text."""
    layout, train, cluster, model = plan.layout, plan.training, plan.cluster, plan.model
    out: dict[str, str] = {}
    out["layout"] = " x ".join(f"{a.name} {_opt(a.degree)}" for a in layout.axes)
    out["rank order"] = ", ".join(a.name for a in layout.axes) + (" (open)" if layout.order_open else "")
    for name in ("tp", "pp", "dp", "cp", "ep"):
        out[f"{name} degree"] = _axis_text(plan, name)
    out["GPUs"] = _opt(cluster.world_size)
    out["nodes"] = _opt(cluster.nodes)
    out["GPUs per node"] = str(cluster.gpus_per_node)
    out["gpu"] = cluster.gpu.name
    out["HBM per GPU"] = f"{cluster.gpu.hbm_bytes / GiB:,.1f} GiB"
    out["intra-node link"] = f"{cluster.link}, {cluster.intra_bandwidth / 1e9:,.0f} GB/s per GPU"
    out["network"] = f"{cluster.network.nics} x {cluster.network.nic_bandwidth * 8 / 1e9:,.0f} Gb/s per node"
    # the hardware block's optional facts, where the spec states them (the other side shows none)
    if cluster.power_limit is not None:
        out["power limit"] = f"{cluster.power_limit:,g} W"
    if cluster.hbm_bandwidth is not None:
        out["HBM bandwidth"] = f"{cluster.hbm_bandwidth / 1e12:,.2f} TB/s"
    stated = [f"{name} {'on' if on else 'off'}" for name, on in (("NVLS", cluster.nvls), ("SHARP", cluster.sharp))
              if on is not None]
    if stated:
        out["in-network reduction"] = ", ".join(stated)
    out["model"] = model.name
    out["parameters"] = f"{model.parameters:,}"
    for key, value in (("layers", model.layers), ("hidden", model.hidden), ("heads", model.heads),
                       ("kv-heads", model.kv_heads), ("experts", model.experts), ("mtp", model.mtp_layers)):
        out[key] = str(value)
    out["attention"] = _attention_text(model)
    out["seq"] = f"{train.seq_len:,}"
    out["global batch"] = f"{train.global_batch:,} sequences"
    out["micro-batch"] = _opt(train.micro_batch)
    out["micro-batches per step"] = _opt(train.grad_accum)
    out["precision"] = train.precision
    out["optimizer"] = train.optimizer
    out["recompute"] = train.recompute_stated
    if train.offload_layers:  # a fact only where a side offloads (the other shows none)
        out["offloaded layers"] = str(train.offload_layers)
    out["schedule"] = _opt(layout.pp.schedule)
    out["virtual stages"] = _opt(layout.pp.virtual_stages)
    out["split"] = _opt(layout.pp.split) if layout.pp.split else "even"
    out["sequence parallel"] = _opt(layout.tp.sequence_parallel)
    out["cp flavour"] = layout.cp.flavour
    sharding = _opt(layout.dp.sharding)
    if layout.dp.sharding == "hsdp":
        sharding += f" {layout.dp.replicate} x {layout.dp.shard}"
    out["dp sharding"] = sharding
    if train.budget_tokens is not None:
        out["training budget"] = f"{run_budget.tokens_text(train.budget_tokens)} tokens"
    elif train.budget_steps is not None:
        out["training budget"] = f"{train.budget_steps:,} steps"
    if cluster.price is not None:
        out["price"] = f"${cluster.price:,.2f} per GPU-hour"
    target = plan.target
    options = [o for o, on in (("compile", target.compile), ("no compiled loss", target.compile and target.compile_loss is False),
                               ("no flash-attention", not target.flash_attention)) if on]
    options += [f"attention-backend {target.attention_backend}"] if target.attention_backend else []
    options += [f"tp-overlap {target.tp_overlap}"] if target.tp_overlap else []
    options += [f"grad-reduce {target.grad_reduce}"] if target.grad_reduce else []
    options += [f"fp8-recipe {target.fp8_recipe}"] if target.fp8_recipe else []
    options += ["fp8-params off"] if target.name == "megatron" and not target.fp8_params else []
    options += ["float8-all-gather"] if target.float8_all_gather else []
    out["target"] = target.name + (f" ({', '.join(options)})" if options else "")
    return out


# ---------------------------------------------------------------------------------------------
# Predictions

AXES = ("tp", "pp", "dp", "cp", "ep")

METRICS: tuple[tuple[str, str, str], ...] = (
    # (name, unit, better)
    ("step time", "s", "lower"),
    ("tokens/s", "count", "higher"),
    ("MFU", "fraction", "higher"),
    ("bubble", "fraction", "lower"),
    ("peak memory", "bytes", "lower"),
    ("compute", "s", "lower"),
    ("recompute", "s", "lower"),
    ("bubble time", "s", "lower"),
    ("optimizer", "s", "lower"),
    ("offload", "s", "lower"),
    ("dp copies", "s", "lower"),
    *((f"exposed {a}", "s", "lower") for a in AXES),
    *((f"sent {a}", "bytes", "lower") for a in AXES),
    ("sent host", "bytes", "lower"),
    ("time to train", "days", "lower"),
    ("GPU-hours", "gpu-hours", "lower"),
    ("cost", "dollars", "lower"),
    *((f"GPU-hours {run_budget.part_label(p)}", "gpu-hours", "lower") for p in run_budget.PARTS),
)
"""Every prediction compared, in the order shown."""


def predictions(report: dict | None) -> dict[str, float | None]:
    values: dict[str, float | None] = {name: None for name, _, _ in METRICS}
    if report is None:
        return values
    time, rate, memory = report.get("time"), report.get("throughput"), report.get("memory")
    if time is not None:
        values.update({"step time": time["step_seconds"], "bubble": time["bubble_share"],  # of the step
                       "compute": time["compute_seconds"], "recompute": time["recompute_seconds"],
                       "bubble time": time["bubble_seconds"], "optimizer": time["optimizer_seconds"],
                       # activation offloading's copies over the host link: a part of the step like the
                       # others (0 without offloading, so that switching it on shows what it costs)
                       "offload": time.get("offload_seconds", 0.0), "sent host": time.get("host_bytes", 0),
                       # the data-parallel runtime's own copies (FSDP2's; 0 under Megatron-LM)
                       "dp copies": time.get("dp_copy_seconds", 0.0)})
        for axis in AXES:
            values[f"exposed {axis}"] = time["exposed_comm_seconds"].get(axis)
            values[f"sent {axis}"] = time.get("comm_bytes", {}).get(axis)
    if rate is not None:
        values["tokens/s"] = rate["tokens_per_second"]
        values["MFU"] = rate["mfu"]
    if memory is not None:
        values["peak memory"] = memory["peak_bytes"]
    budget = report.get("budget")
    if budget is not None:
        values.update({"time to train": budget["days"], "GPU-hours": budget["gpu_hours"], "cost": budget["cost"]})
        for part in run_budget.PARTS:
            values[f"GPU-hours {run_budget.part_label(part)}"] = budget["parts"][part]["gpu_hours"]
    return values


def _stage_totals(report: dict | None) -> list[int]:
    memory = report.get("memory") if report else None
    return [s["total_bytes"] for s in memory["per_stage"]] if memory else []


def _side_json(side: Side | None) -> dict | None:
    if side is None:
        return None
    diagnostics = side.compilation.diagnostics
    memory = side.report.get("memory") if side.report else None
    return {"file": side.label, "ok": not has_errors(diagnostics),
            "errors": sum(1 for d in diagnostics if d.is_error),
            "warnings": sum(1 for d in diagnostics if not d.is_error and not d.allowed),
            "holes": [h.name for h in side.compilation.plan.holes] if side.compilation.plan else [],
            "fits": memory["fits"] if memory else None,
            "usable_bytes": memory["usable_bytes"] if memory else None,
            "peak_stage": memory["peak_stage"] if memory else None}


def build(old: Side | None, new: Side, max_slowdown: float | None = None) -> dict[str, Any]:
    """The diff as data (what `--format json` prints); text and markdown render this."""
    old_facts = facts(old.compilation.plan) if old and old.compilation.plan and not _front_end_errors(old.compilation) else {}
    new_facts = facts(new.compilation.plan) if new.compilation.plan and not _front_end_errors(new.compilation) else {}
    rows = []
    for name in dict.fromkeys([*new_facts, *old_facts]):
        a, b = old_facts.get(name), new_facts.get(name)
        rows.append({"name": name, "old": a, "new": b, "changed": a != b})
    before, after = predictions(old.report if old else None), predictions(new.report)
    metrics = []
    for name, unit, better in METRICS:
        a, b = before[name], after[name]
        delta = b - a if a is not None and b is not None else None
        relative = delta / a if delta is not None and a else None
        metrics.append({"name": name, "unit": unit, "better": better, "old": a, "new": b,
                        "delta": delta, "relative": relative})
    stages_old, stages_new = _stage_totals(old.report if old else None), _stage_totals(new.report)
    per_stage = []
    for stage in range(max(len(stages_old), len(stages_new))):
        a = stages_old[stage] if stage < len(stages_old) else None
        b = stages_new[stage] if stage < len(stages_new) else None
        per_stage.append({"stage": stage, "old": a, "new": b,
                          "delta": b - a if a is not None and b is not None else None})
    result = {"old": _side_json(old), "new": _side_json(new), "facts": rows, "metrics": metrics,
              "memory_per_stage": per_stage, "max_slowdown_percent": max_slowdown,
              "caveats": caveat_change(old.report if old else None, new.report)}
    result["status"], result["reasons"] = status(result, max_slowdown)
    result["summary"] = summary(result)
    return result


def _caveats(report: dict | None) -> dict[str, str]:
    """code -> text of the caveats explain's report gives its time prediction (`parc.caveats`)."""
    time = (report or {}).get("time") or {}
    return {c["code"]: c["text"] for c in time.get("caveats", ())}


def caveat_change(old: dict | None, new: dict | None) -> dict[str, Any]:
    """The new prediction's caveats (where it leans on what the time model measured least) and
    which the change adds or removes: a review sees when a change moves a layout into the
    model's least certain ground, or out of it."""
    before, after = _caveats(old), _caveats(new)
    return {"new": [{"code": code, "text": text} for code, text in after.items()],
            "added": [code for code in after if code not in before],
            "removed": [code for code in before if code not in after]}


def caveat_lines(diff: dict) -> list[str]:
    """The caveat change as text lines (a caveat the change adds is marked new)."""
    change = diff.get("caveats") or {"new": [], "added": [], "removed": []}
    lines = [f"caveat ({c['code']}{', new' if c['code'] in change['added'] else ''}): {c['text']}"
             for c in change["new"]]
    lines += [f"caveat ({code}): no longer applies" for code in change["removed"]]
    return lines


def metric(diff: dict, name: str) -> dict:
    return next(m for m in diff["metrics"] if m["name"] == name)


def status(diff: dict, max_slowdown: float | None) -> tuple[int, list[str]]:
    """The exit status and why (see the module's docstring)."""
    new = diff["new"]
    reasons = []
    if not new["ok"]:
        reasons.append(f"{new['file']} has {new['errors']} error{'s' if new['errors'] != 1 else ''}")
    if new["fits"] is False:
        reasons.append("the new layout does not fit in memory")
    if reasons:
        return STATUS_ERRORS, reasons
    step = metric(diff, "step time")
    if max_slowdown is not None and step["relative"] is not None and step["relative"] * 100 > max_slowdown:
        return STATUS_SLOWER, [f"step time +{step['relative'] * 100:.1f}% is more than the allowed "
                               f"{max_slowdown:g}%"]
    return STATUS_OK, []


# ---------------------------------------------------------------------------------------------
# Formatting


def value_text(unit: str, value: float | None) -> str:
    if value is None:
        return "-"
    if unit == "s":
        if value == 0:
            return "0 s"
        if abs(value) >= 1:
            return f"{value:,.2f} s"
        if abs(value) >= 1e-3:
            return f"{value * 1e3:,.1f} ms"
        return f"{value * 1e6:,.0f} us"
    if unit == "fraction":
        return f"{value * 100:.1f}%"
    if unit == "days":
        return f"{value:,.1f} days"
    if unit == "gpu-hours":
        return run_budget.hours_text(value)
    if unit == "dollars":
        return run_budget.dollars(value)
    if unit == "bytes":
        for scale, name in ((GiB, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if abs(value) >= scale:
                return f"{value / scale:,.1f} {name}"
        return f"{value:,.0f} B"
    return f"{value:,.0f}"


def delta_text(m: dict) -> str:
    delta, unit = m["delta"], m["unit"]
    if delta is None:
        return ""
    if delta == 0:
        return "="
    if unit == "fraction":
        return f"{delta * 100:+.1f} pt"
    sign = "+" if delta > 0 else "-"
    text = sign + value_text(unit, abs(delta))
    if m["relative"] is not None:
        text += f" ({m['relative'] * 100:+.1f}%)"
    return text


def verdict(m: dict) -> str:
    """better / worse for a changed metric, by its direction."""
    delta = m["delta"]
    if not delta:
        return ""
    if m["relative"] is not None and abs(m["relative"]) < NOISE:
        return ""
    good = delta < 0 if m["better"] == "lower" else delta > 0
    return "better" if good else "worse"


def shown_metrics(diff: dict) -> list[dict]:
    """The headline metrics always; the breakdown rows only where either side is non-zero."""
    out = []
    for m in diff["metrics"]:
        headline = m["name"] in ("step time", "tokens/s", "MFU", "bubble", "peak memory")
        if headline or (m["old"] or m["new"]):
            out.append(m)
    return out


def summary(diff: dict) -> str:
    """One line a reviewer reads first."""
    changed = [f for f in diff["facts"] if f["changed"]]
    parts = []
    if diff["old"] is None:
        parts.append(f"new spec {diff['new']['file']}")
    elif not changed:
        parts.append("no change in the layout's facts")
    else:
        names = [f["name"] for f in changed]
        parts.append("changed " + ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else ""))
    step, mfu, peak = metric(diff, "step time"), metric(diff, "MFU"), metric(diff, "peak memory")
    if step["old"] is not None and step["new"] is not None:
        change = f" ({step['relative'] * 100:+.1f}%)" if step["relative"] is not None else ""
        parts.append(f"step time {value_text('s', step['old'])} -> {value_text('s', step['new'])}{change}")
    elif step["new"] is not None:
        parts.append(f"step time {value_text('s', step['new'])}")
    if mfu["old"] is not None and mfu["new"] is not None:
        parts.append(f"MFU {value_text('fraction', mfu['old'])} -> {value_text('fraction', mfu['new'])}")
    if peak["old"] is not None and peak["new"] is not None:
        parts.append(f"peak memory {value_text('bytes', peak['old'])} -> {value_text('bytes', peak['new'])}")
    elif peak["new"] is not None:
        parts.append(f"peak memory {value_text('bytes', peak['new'])}")
    days, cost = metric(diff, "time to train"), metric(diff, "cost")
    if days["new"] is not None:
        before = f"{value_text('days', days['old'])} -> " if days["old"] is not None else ""
        parts.append(f"time to train {before}{value_text('days', days['new'])}")
    if cost["new"] is not None:
        before = f"{value_text('dollars', cost['old'])} -> " if cost["old"] is not None else ""
        parts.append(f"cost {before}{value_text('dollars', cost['new'])}")
    fits = diff["new"]["fits"]
    if fits is not None:
        parts.append("fits" if fits else "DOES NOT FIT")
    if diff["reasons"]:
        parts.append("FAIL: " + "; ".join(diff["reasons"]))
    return "; ".join(p for p in parts if p)


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _old_label(diff: dict) -> str:
    return diff["old"]["file"] if diff["old"] else "(none)"


def render_text(diff: dict) -> str:
    lines = [f"parc diff: {_old_label(diff)} -> {diff['new']['file']}", ""]
    changed = [f for f in diff["facts"] if f["changed"]]
    if changed:
        lines.append("what changed:")
        lines += _table([[f["name"], f["old"] or "-", "->", f["new"] or "-"] for f in changed], set())
    else:
        lines.append("what changed: nothing in the layout's facts")
    lines.append("")
    shown = shown_metrics(diff)
    if any(m["new"] is not None or m["old"] is not None for m in shown):
        lines.append("predicted effect:")
        rows = [["", "old", "new", "delta", ""]]
        for m in shown:
            rows.append([m["name"], value_text(m["unit"], m["old"]), value_text(m["unit"], m["new"]),
                         delta_text(m), verdict(m)])
        lines += _table(rows, {1, 2, 3})
        stages = diff["memory_per_stage"]
        if stages:
            lines.append("")
            lines.append("peak memory per pipeline stage (worst rank):")
            rows = [["stage", "old", "new", "delta"]]
            for s in stages:
                m = {"delta": s["delta"], "unit": "bytes", "relative": (s["delta"] / s["old"]) if s["delta"] is not None and s["old"] else None}
                rows.append([str(s["stage"]), value_text("bytes", s["old"]), value_text("bytes", s["new"]), delta_text(m)])
            lines += _table(rows, {0, 1, 2, 3})
    else:
        lines.append("predicted effect: not predicted (errors or open holes)")
    caveats = caveat_lines(diff)
    if caveats:
        lines += ["", *caveats]
    lines.append("")
    lines.append(f"summary: {diff['summary']}")
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("`", "\\`").replace("*", "\\*").replace("_", "\\_")


def render_markdown(diff: dict) -> str:
    """A pull-request comment: a headline, the changed facts, the effect, per-stage memory."""
    icon = {STATUS_OK: "✅", STATUS_ERRORS: "❌", STATUS_SLOWER: "⚠️"}[diff["status"]]
    lines = [f"### {icon} parc diff: `{_old_label(diff)}` → `{diff['new']['file']}`", "",
             _md_escape(diff["summary"]).replace(" -&gt; ", " → "), ""]
    changed = [f for f in diff["facts"] if f["changed"]]
    if changed:
        lines += ["| fact | old | new |", "|---|---|---|"]
        lines += [f"| {_md_escape(f['name'])} | {_md_escape(f['old'] or '-')} | {_md_escape(f['new'] or '-')} |"
                  for f in changed]
    else:
        lines.append("No change in the layout's facts.")
    lines.append("")
    shown = shown_metrics(diff)
    if any(m["new"] is not None or m["old"] is not None for m in shown):
        lines += ["| prediction | old | new | delta | |", "|---|--:|--:|--:|---|"]
        for m in shown:
            v = verdict(m)
            mark = {"better": "🟢 better", "worse": "🔴 worse"}.get(v, "")
            lines.append(f"| {m['name']} | {value_text(m['unit'], m['old'])} | {value_text(m['unit'], m['new'])} | "
                         f"{delta_text(m)} | {mark} |")
        stages = diff["memory_per_stage"]
        if stages:
            lines += ["", "<details><summary>peak memory per pipeline stage</summary>", "",
                      "| stage | old | new | delta |", "|--:|--:|--:|--:|"]
            for s in stages:
                m = {"delta": s["delta"], "unit": "bytes", "relative": (s["delta"] / s["old"]) if s["delta"] is not None and s["old"] else None}
                lines.append(f"| {s['stage']} | {value_text('bytes', s['old'])} | {value_text('bytes', s['new'])} | "
                             f"{delta_text(m)} |")
            lines += ["", "</details>"]
    else:
        lines.append("Not predicted: errors or open holes.")
    caveats = caveat_lines(diff)
    if caveats:
        lines += [""] + [f"- {_md_escape(line)}" for line in caveats]
    lines += ["", f"<sub>parc diff, exit status {diff['status']}</sub>"]
    return "\n".join(lines) + "\n"
