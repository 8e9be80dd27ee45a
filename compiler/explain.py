"""`parc explain`: a plan's predicted numbers as one report, built as data, rendered as text.

The report is a dict (what `--format json` prints, keys sorted by `dumps_json`) assembled from
sections; the text is one renderer per section, in order. Adding a section (the time model's,
say) is one builder in `SECTIONS` and one renderer in `TEXT_SECTIONS`.

JSON keys that tools depend on (add keys freely; never rename): `world_size`, `nodes`,
`memory.per_stage[].{stage, params_bytes, grads_bytes, optimizer_bytes, activations_bytes,
buffers_bytes, total_bytes}`, `memory.peak_bytes`, `memory.peak_stage`, `memory.hbm_bytes`,
`memory.per_stage[].peak_moment` (`{action, chunk, microbatch, position, in_flight, adds,
paired, receive_buffers, bound, backward_of_step, embedding_backward}`, or null: the schedule
action that sets the stage's peak, `memory.moment`; position 0-based; backward_of_step 1 or 2
where a rank runs no forward between its first two backwards, `model.relieved_split`),
`memory.{margin_bytes, error_band, at_risk}` (usable - peak; the model's measured error as a
fraction of the prediction, compiler/memory/band.py, null for an accounting it was not measured
on (Megatron's); fits by less than it, W0410),
`time.{step_seconds, compute_seconds, recompute_seconds, bubble_seconds, bubble_fraction,
exposed_comm_seconds.{tp, pp, dp, cp, ep}, comm_bytes.{tp, pp, dp, cp, ep}, caveats[].{code, text}}`
(`caveats`: where the prediction leans on what the time model measured least, `parc.caveats`),
`throughput.{tokens_per_second, tokens_per_second_per_gpu, model_tflops_per_gpu,
hardware_tflops_per_gpu, mfu, hfu}`, `diagnostics`.

The bubble has one definition everywhere parc prints it (explain, W0323, diff, search, report):
the pipeline's idle time as a share of the step, `time.bubble_share` = bubble_seconds /
step_seconds. `time.bubble_fraction` is kept for tools but is the idle/busy ratio (bubble over
the micro-batches' busy time, (p - 1) / m for 1F1B); `time.idle_busy_ratio` is the same number
under a name that says so. `budget` (null without `tokens`/`steps` in
`train`): `{stated, steps, tokens, tokens_per_step, seconds, days, gpu_hours, price_per_gpu_hour,
price_source, cost, parts.{compute, recompute, bubble, tp, pp, dp, cp, ep, optimizer}.{days,
gpu_hours, cost}, excludes}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import budget as run_budget
from . import caveats
from .diagnostics import Severity, Style, as_json, render_text, summary_line
from .human import byte_unit, in_unit, percent, size
from .human import count as count_text
from .memory import estimate, peak_moments, unpredictable
from .memory.gpu import FRAGMENTATION
from .pipeline import Compilation
from .plan import AXES, Plan
from .timing import predict

# ---------------------------------------------------------------------------------------------
# Data


def layout_text(plan: Plan) -> str:
    return " x ".join(f"{a.name} {a.degree if a.degree is not None else '?'}" for a in plan.layout.axes)


def header_section(compilation: Compilation) -> dict[str, Any]:
    plan = compilation.plan
    train = plan.training
    return {
        "file": compilation.source.path,
        "world_size": plan.cluster.world_size,
        "nodes": plan.cluster.nodes,
        "gpus_per_node": plan.cluster.gpus_per_node,
        "gpu": plan.cluster.gpu.name,
        "in_network_reduction": [name for name, on in (("nvls", plan.cluster.nvls), ("sharp", plan.cluster.sharp))
                                 if on],
        "layout": layout_text(plan),
        "model": plan.model.name,
        "target": plan.target.name,
        "parameters": plan.model.parameters,
        "window": plan.model.window,
        "full_attention_every": plan.model.full_attention_every,
        "windowed_layers": len(plan.model.windowed_layers),
        "kv_lora_rank": plan.model.kv_lora_rank,
        "q_lora_rank": plan.model.q_lora_rank,
        "mtp_layers": plan.model.mtp_layers,
        "seq": train.seq_len,
        "global_batch": train.global_batch,
        "micro_batch": train.micro_batch,
        "microbatches": train.grad_accum,
        "holes": [h.name for h in plan.holes],
        "memory_unpredictable": unpredictable(plan),
    }


def memory_section(compilation: Compilation) -> dict[str, Any] | None:
    """Per-stage bytes of the worst rank of each pipeline stage; None while holes are open."""
    plan = compilation.plan
    result = estimate(plan)
    if result is None:
        return None
    stages = []
    moments = peak_moments(plan, result)
    for s, moment in zip(result.stages, moments, strict=True):
        stages.append({
            "stage": s.stage,
            "layers": s.layers,
            "params_bytes": s.params,
            "grads_bytes": s.grads,
            "optimizer_bytes": s.optimizer,
            "activations_bytes": s.activations,
            "buffers_bytes": s.buffers,
            "p2p_bytes": s.p2p,
            "embedding_backward_bytes": s.embedding_backward,
            "total_bytes": s.total,
            "in_flight": s.in_flight,
            "hbm_fraction": round(s.total / result.hbm_bytes, 4),
            "peak_moment": moment.json() if moment is not None else None,
        })
    return {
        "runtime": result.runtime,
        "per_stage": stages,
        "peak_bytes": result.peak_bytes,
        "peak_stage": result.peak_stage,
        "hbm_bytes": result.hbm_bytes,
        "reserve_bytes": result.reserve_bytes,
        "usable_bytes": result.usable_bytes,
        "fits": result.fits,
        "margin_bytes": result.margin_bytes,
        "error_band": result.error_band,
        "at_risk": result.at_risk,
        "predicted_max_memory_reserved_bytes": result.predicted_reserved_bytes,
        "reserved_limit_bytes": result.reserved_limit_bytes,
        "overheads": ({"cuda_context_bytes": result.overheads.cuda_context, "nccl_bytes": result.overheads.nccl,
                       "cublas_bytes": result.overheads.cublas, "fragmentation_bytes": result.overheads.fragmentation,
                       "cached_logits_bytes": result.overheads.cached_logits,
                       "staged_gather_bytes": result.overheads.staged_gather}
                      if result.overheads is not None else None),
        "padded_vocab": result.padded_vocab,
        "virtual_stages": plan.layout.pp.virtual_stages,
        **allocator_assumed(plan),
    }


ALLOC_SOURCES = {"torch": "set by parc's generated train.py", "torchtitan": "as torchtitan's run_train.sh exports it"}
"""Who sets the allocator variable when the spec's launch environment does not: parc's train.py
(`allocator.GENERATED_ALLOC_CONF`) and torchtitan's launcher set expandable segments; Megatron-LM's
pretrain_gpt.py sets nothing, so its jobs run PyTorch's default allocator."""


def allocator_assumed(plan: Plan) -> dict[str, Any]:
    """The caching-allocator configuration the predicted `max_memory_reserved` is for (issue 15):
    `allocator_conf` ("VARIABLE=value", or None for PyTorch's default), `allocator_policy`
    ("default" or "expandable", `allocator.policy_of`) and `allocator_conf_source` (the spec's
    launch environment, or who sets it for the target's job)."""
    from .memory.allocator import DEFAULT, alloc_conf_of, policy_of

    env = plan.launch.environment()
    name, value = alloc_conf_of(env)
    if name in env:
        source = "the spec's launch environment"
    elif plan.target.name in ALLOC_SOURCES:
        source = ALLOC_SOURCES[plan.target.name]
    else:
        return {"allocator_conf": None, "allocator_policy": DEFAULT, "allocator_conf_source": "unset"}
    return {"allocator_conf": f"{name}={value}", "allocator_policy": policy_of(env), "allocator_conf_source": source}


def time_section(compilation: Compilation) -> dict[str, Any] | None:
    """The predicted step and where it goes (`parc.timing`), with the caveats that say where it
    leans on what the model measured least (`parc.caveats`); None while holes are open."""
    plan = compilation.plan
    prediction = predict(plan)
    if prediction is None:
        return None
    section = prediction.time_json()
    section["caveats"] = [c.json() for c in caveats.of_prediction(plan, prediction.breakdown)]
    return section


def throughput_section(compilation: Compilation) -> dict[str, Any] | None:
    prediction = predict(compilation.plan)
    return None if prediction is None else prediction.throughput_json()


def budget_section(compilation: Compilation) -> dict[str, Any] | None:
    """The whole run's time, GPU-hours and cost (`parc.budget`); None without a stated budget."""
    plan = compilation.plan
    if run_budget.steps_for(plan) is None:
        return None
    result = run_budget.budget(plan, predict(plan))
    return None if result is None else result.json()


SECTIONS: list[tuple[str, Callable[[Compilation], Any]]] = [
    ("memory", memory_section),
    ("time", time_section),
    ("throughput", throughput_section),
    ("budget", budget_section),
]
"""(key, builder) for every section after the header, in report order."""


def build_report(compilation: Compilation) -> dict[str, Any]:
    """The report as data. Needs a plan (the front end succeeded)."""
    report = header_section(compilation)
    for key, builder in SECTIONS:
        report[key] = builder(compilation)
    report["diagnostics"] = as_json(compilation.diagnostics)
    return report


# ---------------------------------------------------------------------------------------------
# Text


def header_text(report: dict, compilation: Compilation, style: Style) -> list[str]:
    size = f"{report['world_size']:,} GPUs" if report["world_size"] else "size open"
    count = report["nodes"]
    nodes = f"{count:,} node{'s' if count != 1 else ''} of {report['gpus_per_node']} {report['gpu']}" if count \
        else report["gpu"]
    lines = [style.bold(f"{report['file']}: {report['layout']} on {nodes} ({size})")]
    if report["target"] != "torch":
        lines.append(f"target {report['target']}: predicted as {report['target']} runs it (docs/targets.md)")
    reducing = {"nvls": "NVLink SHARP inside each NVLink domain", "sharp": "InfiniBand SHARP across nodes"}
    if report.get("in_network_reduction"):
        lines.append("all-reduces may reduce in the network: "
                     + "; ".join(reducing[name] for name in report["in_network_reduction"]))
    accum = report["microbatches"]
    micro = report["micro_batch"] if report["micro_batch"] is not None else "?"
    batch = (f"seq {report['seq']:,}, global batch {report['global_batch']:,}, micro-batch {micro}"
             + (f", {accum} micro-batches per step" if accum else ""))
    lines.append(f"{report['model']}: {count_text(report['parameters'])} parameters; {batch}")
    if report.get("window"):
        every = report["full_attention_every"]
        pattern = f" (layers {every}, {2 * every}, ... full causal)" if every else ""
        lines.append(f"sliding-window attention: {report['window']:,} tokens on {report['windowed_layers']} "
                     f"layers{pattern}")
    if report.get("mtp_layers"):
        n = report["mtp_layers"]
        lines.append(f"multi-token prediction: {n} module{'s' if n > 1 else ''} (a layer and a loss each) "
                     "on the last pipeline stage")
    if report.get("kv_lora_rank"):
        queries = f", queries through a {report['q_lora_rank']:,}-wide latent" if report["q_lora_rank"] else ""
        lines.append(f"multi-head latent attention: keys and values from a {report['kv_lora_rank']:,}-wide latent"
                     f"{queries}")
    return lines


def memory_text(report: dict, compilation: Compilation, style: Style) -> list[str]:
    memory = report.get("memory")
    if memory is None:
        return [f"memory: not predicted: {unpredictable(compilation.plan)}"]
    v = memory["virtual_stages"] or 1
    flight = "in flight" if v == 1 else "chunks in flight"
    head = ("stage", "layers", "params", "grads", "optimizer", "activations", "buffers", "p2p", "emb bwd", "total",
            "% HBM", flight)
    unit = byte_unit(memory["peak_bytes"])  # one unit for the table, scaled to its largest cell
    rows = []
    for s in memory["per_stage"]:
        rows.append((str(s["stage"]), str(s["layers"]), in_unit(s["params_bytes"], unit), in_unit(s["grads_bytes"], unit),
                     in_unit(s["optimizer_bytes"], unit), in_unit(s["activations_bytes"], unit),
                     in_unit(s["buffers_bytes"], unit), in_unit(s["p2p_bytes"], unit),
                     in_unit(s["embedding_backward_bytes"], unit), in_unit(s["total_bytes"], unit),
                     percent(s["total_bytes"] / memory["hbm_bytes"], 0), str(s["in_flight"])))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [style.bold(f"memory per GPU, worst rank of each pipeline stage ({unit[0]}; {memory['runtime']} runtime)")]
    lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    usable = memory["usable_bytes"]
    for s, row in zip(memory["per_stage"], rows, strict=True):
        line = "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
        lines.append(style.red(line) if s["total_bytes"] > usable else line)
    verdict = memory_verdict(memory, compilation)
    lines.append(f"peak: stage {memory['peak_stage']}, {size(memory['peak_bytes'])} of {size(usable)} usable "
                 f"({size(memory['hbm_bytes'])} HBM - {size(memory['reserve_bytes'])} reserve): {verdict}")
    offloaded = offload_text(compilation)
    if offloaded:
        lines.append(offloaded)
    moment = next(s["peak_moment"] for s in memory["per_stage"] if s["stage"] == memory["peak_stage"])
    if moment is not None:
        lines.append(f"peak moment of stage {memory['peak_stage']}: {moment_text(moment, v)}")
    o = memory["overheads"]
    if o is not None:
        lines.append(f"predicted torch.cuda.max_memory_reserved(): {size(memory['predicted_max_memory_reserved_bytes'])} "
                     f"(peak + cuBLAS workspaces {size(o['cublas_bytes'])} + allocator fragmentation "
                     f"{size(o['fragmentation_bytes'])}"
                     + (f" + cached logits {size(o['cached_logits_bytes'])}" if o.get("cached_logits_bytes") else "")
                     + (f" + the output layer's freed gather {size(o['staged_gather_bytes'])}"
                        if o.get("staged_gather_bytes") else "")
                     + f") of {size(memory['reserved_limit_bytes'])} (HBM less the CUDA "
                     f"context {size(o['cuda_context_bytes'])} and NCCL buffers {size(o['nccl_bytes'])})")
        lines.append(allocator_text(memory))
    lines.append(f"{flight}: {'chunk-' if v > 1 else ''}micro-batches whose saved activations the stage holds at its "
                 "peak; the one being worked on counts under buffers (its working set), so a stage whose peak "
                 "falls between a backward and the next forward (the last 1F1B stage) can show 0")
    return lines


def allocator_text(memory: dict) -> str:
    """One line: the allocator configuration the reserved figure assumes, and that its
    fragmentation allowance is the flat share of HBM whatever the policy."""
    conf = memory["allocator_conf"]
    policy = "expandable segments" if memory["allocator_policy"] == "expandable" else "default policy"
    what = (f"{conf} ({policy}; {memory['allocator_conf_source']})" if conf
            else "PYTORCH_CUDA_ALLOC_CONF unset (PyTorch's default allocator)")
    return (f"reserved figure assumes allocator {what}; its fragmentation is a flat "
            f"{round(100 * FRAGMENTATION)} % of HBM under either policy")


def moment_text(moment: dict, chunks: int = 1) -> str:
    """"the backward of micro-batch 0 (action 5 of the step), 4 micro-batches held, plus the
    backward's working set" (`memory.moment.PeakMoment`); with chunks per rank, which chunk. The
    action is counted from 1 here (JSON's `position` from 0)."""
    what = "idle after the action" if moment["action"] == "idle" else f"the {moment['action']}"
    where = f" on chunk {moment['chunk']}" if chunks > 1 else ""
    n = moment["in_flight"]
    unit = ("micro-batch" if chunks == 1 else "chunk-micro-batch") + ("es" if n != 1 else "")
    if moment["position"] is None:  # a step too long to walk action by action
        return f"{what}{where}, {n:,} {unit} held, plus {moment['adds']}"
    return (f"{what} of micro-batch {moment['microbatch']}{where} (action {moment['position'] + 1:,} of the step), "
            f"{n:,} {unit} held, plus {moment['adds']}")


def memory_verdict(memory: dict, compilation: Compilation) -> str:
    """"fits" is the memory model's word; a layout with another error (dualpipe-v short of
    micro-batches, E0320; a batch that does not divide, ...) does not run however little it
    holds, so the verdict says so next to the figure instead of a bare "fits"."""
    if not memory["fits"]:
        return "does not fit"
    others = sorted({d.code for d in compilation.diagnostics if d.is_error} - {"E0401"})
    risk = at_risk_text(memory)
    if not others:
        return f"fits ({risk})" if risk else "fits"
    fits = f"fits in memory ({risk})" if risk else "fits in memory"
    return f"{fits}, but the layout does not run ({', '.join(f'error[{c}]' for c in others)} below)"


def at_risk_text(memory: dict) -> str | None:
    """"at risk: ... W0410" when the margin is under the memory model's measured error (the point
    estimate fits, the model's record cannot promise it), else None."""
    if not memory.get("at_risk"):
        return None
    return (f"at risk: {size(memory['margin_bytes'])} to spare, under the model's measured under-prediction of "
            f"{percent(memory['error_band'])}, W0410")


def offload_text(compilation: Compilation) -> str | None:
    """What `offload-activations` sends to host memory from the first stage's chunks, and what it
    takes off the stage's activations (`memory.model.offload_relief`); None without offloading."""
    plan = compilation.plan
    n = plan.training.offload_layers if plan.training else 0
    if not n:
        return None
    from .memory.inputs import knobs_of, shape_of
    from .targets import memory_runtime
    from .timing import offload_sizes

    k = knobs_of(plan, memory_runtime(plan.target))
    if k is None:
        return None
    shape = shape_of(plan)
    # the stage that moves the most (stage 0 may hold only the embedding, or dense layers alone)
    stage, sizes = max(((s, offload_sizes(shape, k, s)) for s in range(k.pp)),
                       key=lambda item: (sum(sum(each) for _, _, each in item[1]), -item[0]))
    moved = sum(sum(each) for _, _, each in sizes)
    if k.runtime == "torch":  # parc's job copies on the compute stream: every offloaded layer leaves
        kept, why = 0, "every offloaded layer's copy is done when the forward ends"
    else:
        kept = sum(each[-1] for _, _, each in sizes if each)
        why = "the last offloaded layer's copy is still in flight when the forward ends"
    return (f"offloaded to host: the saved activations of {n} layer{'s' if n > 1 else ''} a chunk, "
            f"{size(moved)} a micro-batch out in the forward and back in the backward on stage {stage}; "
            f"{size(moved - kept)} off its peak ({why})")


def time_text(report: dict, compilation: Compilation, style: Style) -> list[str]:
    time, rate = report.get("time"), report.get("throughput")
    if time is None:
        return [f"time: not predicted: {unpredictable(compilation.plan) or 'the layout is incomplete'}"]
    step = time["step_seconds"]
    rows = [("compute", time["compute_seconds"], None), ("recompute", time["recompute_seconds"], None),
            ("bubble", time["bubble_seconds"], None)]
    for axis in AXES:
        seconds, sent = time["exposed_comm_seconds"][axis], time["comm_bytes"][axis]
        if seconds or sent:
            rows.append((f"{axis} exposed", seconds, sent))
    if "offload_seconds" in time:  # activation offloading's copies over the host link
        rows.append(("offload", time["offload_seconds"], time["host_bytes"]))
    if time.get("dp_copy_seconds"):  # FSDP2's (or zero1's buckets') copies around the collectives
        rows.append(("dp copies", time["dp_copy_seconds"], None))
    rows.append(("optimizer", time["optimizer_seconds"], None))
    lines = [style.bold(f"time per step, slowest pipeline stage ({time['slowest_stage']}): {_seconds(step)}")]
    lines.append(f"{'part':>12}  {'seconds':>9}  {'share':>6}  {'sent per GPU':>12}")
    for name, seconds, sent in rows:
        moved = _bytes(sent) if sent else ""
        lines.append(f"{name:>12}  {_seconds(seconds):>9}  {percent(seconds / step):>6}  {moved:>12}".rstrip())
    lines.append(f"bubble: {percent(time['bubble_share'])} of the step (idle/busy ratio {time['idle_busy_ratio']:.3f}); "
                 f"{rate['tokens_per_second']:,.0f} tokens/s ({rate['tokens_per_second_per_gpu']:,.0f} per GPU)")
    lines.append(f"{_flops(rate['model_tflops_per_gpu'])} model TFLOP/s per GPU, MFU {percent(rate['mfu'])}; "
                 f"{_flops(rate['hardware_tflops_per_gpu'])} hardware TFLOP/s, HFU {percent(rate['hfu'])} "
                 f"(peak {_flops(rate['peak_tflops_per_gpu'])}"
                 + (f"; {_flops(rate['sustained_peak_tflops_per_gpu'])} under the power limit"
                    if "sustained_peak_tflops_per_gpu" in rate else "") + ")")
    lines += [f"caveat ({c['code']}): {c['text']}" for c in time.get("caveats", ())]
    return lines


def budget_text(report: dict, compilation: Compilation, style: Style) -> list[str]:
    """The run's length, GPU-hours and cost, and the step's breakdown scaled to the run."""
    budget = report.get("budget")
    if budget is None:
        return []
    stated = "stated" if budget["stated"] == "tokens" else "from the stated steps"
    lines = [style.bold(f"training budget: {run_budget.tokens_text(budget['tokens'])} tokens ({stated}) = "
                        f"{budget['steps']:,} steps of {budget['tokens_per_step']:,} tokens")]
    cost = budget["cost"]
    head = (f"time to train {run_budget.days_text(budget['days'])} on {report['world_size']:,} GPUs; "
            f"{run_budget.hours_text(budget['gpu_hours'])}")
    if cost is None:
        lines.append(head + "; cost unknown: no price for this GPU (add `price 2.50 $/gpu-hour` to `hardware`)")
    else:
        source = "stated" if budget["price_source"] == "spec" else budget["price_source"]
        lines.append(head + f"; cost {run_budget.dollars(cost)} at ${budget['price_per_gpu_hour']:,.2f} per "
                     f"GPU-hour ({source})")
    lines.append(f"{'part':>12}  {'days':>8}  {'GPU-hours':>16}" + (f"  {'cost':>10}" if cost is not None else ""))
    for name, part in budget["parts"].items():
        if not part["gpu_hours"]:
            continue
        row = (f"{run_budget.part_label(name):>12}  {part['days']:>8,.2f}  "
               f"{run_budget.hours_text(part['gpu_hours']):>19}")
        if cost is not None:
            row += f"  {run_budget.dollars(part['cost']):>10}"
        lines.append(row)
    lines.append(f"({budget['excludes']})")
    return lines


def _bytes(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def _flops(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _seconds(x: float) -> str:
    if x == 0:
        return "0"
    if x >= 1:
        return f"{x:,.2f} s"
    return f"{x * 1e3:.3g} ms" if x >= 1e-3 else f"{x * 1e6:.3g} us"


def diagnostics_text(report: dict, compilation: Compilation, style: Style) -> list[str]:
    findings = [d for d in compilation.diagnostics if d.severity is not Severity.note]
    if not findings:
        return ["checks: no findings"]
    text = render_text(compilation.diagnostics, {compilation.source.path: compilation.source}, style)
    return [style.bold(f"checks: {summary_line(compilation.diagnostics, style)}"), "", text.rstrip("\n")]


TEXT_SECTIONS: list[Callable[[dict, Compilation, Style], list[str]]] = [
    header_text,
    memory_text,
    time_text,
    budget_text,
    diagnostics_text,
]
"""One renderer per section, in order; each returns its lines (blank lines go between)."""


def render_report(report: dict, compilation: Compilation, style: Style) -> str:
    blocks = ["\n".join(render(report, compilation, style)) for render in TEXT_SECTIONS]
    return "\n\n".join(b for b in blocks if b) + "\n"
