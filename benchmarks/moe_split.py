"""Where the time model puts one MoE layer's time, part by part, beside each part's roofline.

    .venv/bin/python benchmarks/moe_split.py                       # H100 Qwen3-30B-A3B (Bridge 25.11)
    .venv/bin/python benchmarks/moe_split.py bridge2511_b200_qwen3_30b_a3b

Why: the small-expert MoE rows of Megatron-Bridge's table are predicted about 2x too fast
(issue 14). Before adding physics, each part the model charges for one layer and one micro-batch
is set beside the least time physics allows it, counted here by hand from the shapes and the
datasheet alone (FLOPs / dense peak, and HBM bytes / bandwidth with every operand read once and
every result written once). A part far above its roofline is charged a low efficiency; a part at
its roofline cannot be where a 2x gap hides.

The parts are the model's own (`timing.gemm_seconds`, `timing.memory_seconds` over the byte
counts `timing.layer_work` charges); `split` reconciles them with `layer_work`'s totals so the
table cannot drift from the model (tests/test_moe_split.py). Seconds per layer and micro-batch
on one GPU (forward, backward with its two GEMMs per forward GEMM)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parc import kernels as kernel_model  # noqa: E402
from parc import timing  # noqa: E402
from parc.calibration import DEFAULT  # noqa: E402


@dataclass(frozen=True)
class Part:
    """One part of a layer: the model's forward and backward seconds, and the roofline's."""

    name: str
    forward: float
    backward: float
    flops_f: float = 0.0
    """FLOPs of the forward (the backward's are twice, for GEMMs)."""
    bytes_f: float = 0.0
    bytes_b: float = 0.0

    def roofline(self, peak: float, hbm: float) -> tuple[float, float]:
        """The least time the hardware allows, forward and backward."""
        return (max(self.flops_f / peak, self.bytes_f / hbm),
                max(2 * self.flops_f / peak if self.name != "attention core" else 2.5 * self.flops_f / peak,
                    self.bytes_b / hbm))


def _gemm_part(name: str, products: list[tuple[float, float, float, float, float, float]], precision: str,
               hw: timing.Hardware, c) -> Part:
    """`products`: (kernels, count, m, k, n, pooled) as `layer_work` lists them."""
    seconds = sum(count * timing.gemm_seconds(m, k, n, precision, hw, c, pooled) + kernels * c.kernel_overhead
                  for kernels, count, m, k, n, pooled in products)
    element = timing.operand_bytes(hw, precision) if precision in timing.OPERAND_BYTES else 2
    flops = sum(2 * count * m * k * n for _, count, m, k, n, _ in products)
    # forward: read A and B, write C; backward: dA = dC B^T and dB = A^T dC (each reads two, writes one)
    bytes_f = sum(count * element * (m * k + k * n + m * n) for _, count, m, k, n, _ in products)
    bytes_b = 2 * bytes_f
    return Part(name, seconds, 2 * seconds, flops, bytes_f, bytes_b)


class Unsplittable(ValueError):
    """A layer this split does not write out part by part (its parts would not add up to
    `layer_work`)."""


def split(shape, knobs, hw: timing.Hardware, sw: timing.Software, c=DEFAULT) -> list[Part]:
    """The parts of one MoE layer (tp 1, cp 1, fused kernels, flash attention: the Bridge rows;
    grouped-query attention and routed experts only: `Unsplittable` otherwise)."""
    assert knobs.tp == 1 and knobs.cp == 1 and sw.kernels == "fused" and sw.attention != "unfused"
    if shape.mla or shape.shared_experts:
        raise Unsplittable("multi-head latent attention" if shape.mla else "shared experts")
    precision = timing.gemm_precision(knobs.precision, sw)
    n = knobs.seq * knobs.micro_batch
    h, q, kv, e, f = shape.hidden, shape.q, shape.kv, shape.experts, shape.expert_ffn
    up = shape.ffn_matrices - 1
    ep = knobs.ep
    local = max(1, e // ep)
    mean = n * shape.top_k
    assigned = mean * (1.0 if sw.balanced_routing else kernel_model.routing_imbalance(mean, ep, shape.capacity_factor))
    per_expert = kernel_model.padded_rows(assigned / local, sw.balanced_routing)
    # Transformer Engine's fused grouped MLP (`timing.fuses_grouped_mlp`): one kernel per grouped GEMM,
    # the GLU and two casts in their epilogues
    case = timing.LayerCase.of(knobs, True, sw)
    fused = timing.fuses_grouped_mlp(shape, case)
    rounds = 1 if fused else kernel_model.grouped_rounds(local)
    pooled = local if fused else min(local, kernel_model.GROUPED_STREAMS)
    act = timing.ACT
    parts = [
        _gemm_part("dense GEMMs (qkv, out)", [(1, 1, n, h, q + 2 * kv, 1), (1, 1, n, q, h, 1)], precision, hw, c),
        _gemm_part("router GEMM", [(1, 1, n, h, e, 1)], precision, hw, c),
        _gemm_part("expert GEMMs", [(rounds, local, per_expert, h, up * f, pooled),
                                    (rounds, local, per_expert, f, h, pooled)], precision, hw, c),
    ]
    kernel = timing.attention_kernel(sw, precision)  # FP8 attention where the run states it
    fa_f, fa_b, steps = timing.flash_attention_seconds(shape, 1, 1, "ring", knobs.seq, n, kernel, hw,
                                                       c.attention_speed)
    from parc import flops
    core = flops.attention_core_flops(shape, flops.causal_keys(knobs.seq)) * n
    lse = 4 * n * shape.heads
    parts.append(Part("attention core", fa_f + steps * c.kernel_overhead, fa_b + steps * c.kernel_overhead, core,
                      act * (2 * n * q + 2 * n * kv) + lse, act * (5 * n * q + 4 * n * kv) + 3 * lse))

    def memory(name: str, bytes_f: float, bytes_b: float, kernels: int = 0) -> Part:
        return Part(name, timing.memory_seconds(bytes_f, hw, c) + kernels * c.kernel_overhead,
                    timing.memory_seconds(bytes_b, hw, c) + kernels * c.kernel_overhead,
                    0.0, bytes_f, bytes_b)

    norms = act * 10 * h * n + act * 2 * (q + kv) * n
    parts.append(memory("norms, residuals, RoPE", norms, 2 * norms, timing.MEMORY_KERNELS))
    if not fused:
        swiglu = act * assigned * (up + 1) * f
        parts.append(memory("expert SwiGLU", swiglu, 2 * swiglu))
    parts.append(memory("router (fp32 softmax, top-k, aux)", timing.ROUTER_BYTES[0] * n * e,
                        timing.ROUTER_BYTES[1] * n * e, timing.ROUTER_KERNELS))
    (plain_f, plain_b), (sort_f, sort_b) = timing.PERMUTE_PASSES[timing.permute_kind("fused", sw.ep_dispatcher)]
    sorted_ = ep > 1 and local > 1
    parts.append(memory("permute, unpermute, sort", act * (plain_f + (sort_f if sorted_ else 0)) * assigned * h,
                        act * (plain_b + (sort_b if sorted_ else 0)) * assigned * h))
    if sw.expert_bias:
        bias = timing.expert_bias_work(assigned, h, local)
        parts.append(Part("expert output bias (eager)",
                          timing.memory_seconds(bias.bytes_f, hw, c) + bias.kernels_f * c.kernel_overhead,
                          timing.memory_seconds(bias.bytes_b, hw, c) + bias.kernels_b * c.kernel_overhead,
                          0.0, bias.bytes_f, bias.bytes_b))
    if sw.rope_unfused and not shape.position_params:
        rope_f, rope_b = timing.UNFUSED_ROPE_BYTES[0] * (q + kv) * n, timing.UNFUSED_ROPE_BYTES[1] * (q + kv) * n
        kernels_f, kernels_b = (2 * k - 1 for k in timing.UNFUSED_ROPE_KERNELS)
        parts.append(Part("RoPE unfused, beyond the fused kernel",
                          timing.memory_seconds(rope_f, hw, c) + kernels_f * c.kernel_overhead,
                          timing.memory_seconds(rope_b, hw, c) + kernels_b * c.kernel_overhead, 0.0, rope_f, rope_b))
    if sw.expert_clamp:
        clamp = timing.expert_clamp_work(assigned, up * f)
        parts.append(Part("expert GLU clamp (eager)",
                          timing.memory_seconds(clamp.bytes_f, hw, c) + clamp.kernels_f * c.kernel_overhead,
                          timing.memory_seconds(clamp.bytes_b, hw, c) + clamp.kernels_b * c.kernel_overhead,
                          0.0, clamp.bytes_f, clamp.bytes_b))
    quantized = timing.fp8_recipe(precision, sw.fp8_scaling, hw) != "bf16"  # fp8 or NVFP4 the part runs
    if quantized:
        # on each expert's own rows (its GEMMs compute whole tiles; the casts quantize the rows)
        gemms = [(1, 1, n, h, q + 2 * kv), (1, 1, n, q, h), (1, 1, n, h, e),
                 (rounds, local, assigned / local, h, up * f), (rounds, local, assigned / local, f, h)]
        cast_f, cast_b = timing.fp8_cast_bytes(gemms, timing.cast_scaling(precision, sw.fp8_scaling),
                                               timing.fp8_transposed(hw.generation))
        # what the runtime moves instead: casts on the rank's own rows before a gather, a fused
        # norm's own fp8 copy or amax, the kept bf16 inputs quantized again in the backward
        more_f, more_b = timing.cast_correction(shape, case, timing.fp8_transposed(hw.generation))
        cast_f, cast_b = cast_f + more_f, cast_b + more_b
        recipe = timing.fp8_recipe(precision, sw.fp8_scaling, hw)
        if fused:
            epilogue_f, epilogue_b = timing.fused_mlp_epilogue_casts(local, assigned / local, f, up)
            pad = kernel_model.expert_padding_launches(local, recipe)
            parts.append(Part("fp8 casts (the fused MLP's group quantizes)",
                              timing.memory_seconds(cast_f - epilogue_f, hw, c)
                              + (kernel_model.FUSED_MLP_MEMORY_KERNELS.forward + pad) * c.kernel_overhead,
                              timing.memory_seconds(cast_b - epilogue_b, hw, c)
                              + (kernel_model.FUSED_MLP_MEMORY_KERNELS.backward + pad) * c.kernel_overhead,
                              0.0, cast_f - epilogue_f, cast_b - epilogue_b))
        else:
            parts.append(memory("fp8 casts", cast_f, cast_b, kernel_model.expert_quantize_launches(local, recipe)))
    return parts


def reconcile(parts: list[Part], work: timing.Work) -> tuple[float, float]:
    """(forward, backward) the parts sum to minus `layer_work`'s: zero when the split is the model's."""
    forward = sum(p.forward for p in parts)
    backward = sum(p.backward for p in parts)
    return forward - work.forward, backward - (work.backward_input + work.backward_weight)


def layer_of(row_id: str, path: Path | None = None):
    """(parts, Work, row, prepared) for one MoE row of a published file: `path`, else the first of
    the published run files (`fidelity.run_files`) that holds a row of that id."""
    import fidelity

    for candidate in [path] if path else fidelity.run_files():
        row = fidelity.load_row(row_id, candidate)
        if row is not None:
            break
    else:
        raise SystemExit(f"moe_split: no row {row_id!r} in {path or 'benchmarks/data/*.yaml'}")
    if isinstance(row, fidelity.Skipped):
        raise SystemExit(f"moe_split: {row_id} is left out: {row.reason}")
    p = fidelity.prepare(row)
    k, s, hw, sw = p.knobs, p.shape, p.hardware, row.software
    work = timing.layer_work(s, timing.LayerCase.of(k, True, sw), hw, DEFAULT)
    return split(s, k, hw, sw), work, row, p


def main(argv: list[str]) -> int:
    row_id = argv[0] if argv else "bridge2511_h100_qwen3_30b_a3b"
    try:
        parts, work, row, p = layer_of(row_id)
    except Unsplittable as why:
        print(f"moe_split: {row_id}'s layer has {why}, which this split does not write out part by part")
        return 1
    hw, k = p.hardware, p.knobs
    peak = timing.matmul_peak(hw, timing.gemm_precision(k.precision, row.software))
    print(f"{row.id}: one MoE layer, one micro-batch of {k.seq * k.micro_batch:,} tokens, ep {k.ep}, "
          f"{k.precision} (ms; roofline = max(FLOPs / dense peak, bytes / HBM), bf16 for attention)")
    print(f"{'part':36} {'fwd':>7} {'roof':>7} {'bwd':>7} {'roof':>7} {'of roofline':>11}")
    for part in parts:
        pk = hw.bf16 if part.name == "attention core" else peak
        rf, rb = part.roofline(pk, hw.hbm)
        ratio = (rf + rb) and (part.forward + part.backward) / (rf + rb)
        print(f"{part.name:36} {1e3 * part.forward:7.3f} {1e3 * rf:7.3f} {1e3 * part.backward:7.3f} "
              f"{1e3 * rb:7.3f} {ratio:10.2f}x")
    for name, charged, floor in step_shares(row, p):
        print(f"{name:36} {1e3 * charged:7.3f} {1e3 * floor:7.3f}   (a pair's share of the step, forward and backward)")
    df, db = reconcile(parts, work)
    print(f"{'layer (layer_work)':36} {1e3 * work.forward:7.3f} {'':7} "
          f"{1e3 * (work.backward_input + work.backward_weight):7.3f}   (parts - layer_work: {df:.1e}, {db:.1e} s)")
    return 0



# ---------------------------------------------------------------------------------------------
# Tables for docs/time-model.md (written by benchmarks/fidelity.py --write)


def split_table(row_id: str = "bridge2511_h100_qwen3_30b_a3b") -> str:
    """The split of `main` as a markdown table."""
    parts, work, row, p = layer_of(row_id)
    hw, k = p.hardware, p.knobs
    peak = timing.matmul_peak(hw, timing.gemm_precision(k.precision, row.software))
    lines = ["| part | forward ms | its roofline | backward ms | its roofline | charged / roofline |",
             "|---|---|---|---|---|---|"]
    for part in parts:
        rf, rb = part.roofline(hw.bf16 if part.name == "attention core" else peak, hw.hbm)
        lines.append(f"| {part.name} | {1e3 * part.forward:.3f} | {1e3 * rf:.3f} | {1e3 * part.backward:.3f} | "
                     f"{1e3 * rb:.3f} | {(part.forward + part.backward) / (rf + rb):.2f}x |")
    lines.append(f"| the layer (`layer_work`) | {1e3 * work.forward:.3f} | | "
                 f"{1e3 * (work.backward_input + work.backward_weight):.3f} | | |")
    for name, charged, floor in step_shares(row, p):
        lines.append(f"| {name} | {1e3 * charged:.3f} (forward and backward) | {1e3 * floor:.3f} | | | |")
    return "\n".join(lines)


def step_shares(row, p) -> list[tuple[str, float, float]]:
    """What the step adds to each (MoE layer, micro-batch) pair beyond the layer's kernels, as the
    model's step (`timing.step_time`) charges it, spread over the fullest stage's pairs, with its
    floor: the expert all-to-alls' exposed time against the bytes this GPU sends over NVLink
    (an intra-node ep group), the pipeline's sends against the NIC, the optimizer's step."""
    import fidelity

    k, hw = p.knobs, p.hardware
    b = fidelity.predicted_step(row, p, DEFAULT)
    pairs = -(-p.shape.layers // k.pp) * k.microbatches
    return [("expert all-to-all (exposed)", b.exposed["ep"] / pairs, b.sent["ep"] / pairs / hw.intra),
            ("pipeline sends (exposed)", b.exposed["pp"] / pairs, b.sent["pp"] / pairs / hw.nic),
            ("optimizer step", b.optimizer / pairs, 0.0)]


def residual_table(path: Path = ROOT / "benchmarks" / "data" / "megatron_bridge_25_11.yaml") -> str:
    """Per MoE row of the Bridge table: the reported step less the predicted one, spread over the
    (MoE layer, micro-batch) pairs a GPU runs in a step, beside the layer's modelled GPU time:
    a cost per layer and micro-batch the model lacks shows as a constant residual, one per token
    as a residual that grows with the micro-batch's tokens."""
    import fidelity

    rows, _ = fidelity.load_rows(path)
    lines = ["| run | precision | tokens per micro-batch | (layer, micro-batch) pairs on the fullest stage | modelled GPU ms per pair "
             "| predicted step s | reported step s | residual ms per pair |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if not row.plan.model.experts:
            continue
        p = fidelity.prepare(row)
        k, sw = p.knobs, row.software
        step = fidelity.predicted_step(row, p, DEFAULT).step
        reported = step * fidelity.predicted_tflops(row, step) / row.reported_tflops
        pairs = -(-p.shape.layers // k.pp) * k.microbatches  # the fullest stage's layers
        work = timing.layer_work(p.shape, timing.LayerCase.of(k, True, sw), p.hardware, DEFAULT)
        gpu = work.forward + work.backward_input + work.backward_weight
        lines.append(f"| {row.id} | {row.plan.training.precision} | {k.seq * k.micro_batch // max(1, k.tp):,} | "
                     f"{pairs:,} | {1e3 * gpu:.1f} | {step:.2f} | {reported:.2f} | "
                     f"{1e3 * (reported - step) / pairs:+.1f} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class HostRow:
    """One MoE row's (layer, micro-batch) pair as the host and the GPU see it."""

    id: str
    recipe: str
    local: int
    tokens: int
    ops_f: int
    """Kernels the forward launches plus the router's and dispatcher's host ops."""
    ops_b: int
    gpu: float
    """The layer's modelled GPU seconds, forward and backward."""
    charged: float
    """What the model adds for the host (`timing.dispatched`), forward and backward."""
    reported: float
    """The reported step over the fullest stage's pairs."""

    @property
    def host(self) -> float:
        return (self.ops_f + self.ops_b) * kernel_model.HOST_OP_SECONDS

    @property
    def op_to_take_it(self) -> float:
        """Host seconds per op at which the host alone would take the reported pair time."""
        return self.reported / (self.ops_f + self.ops_b)


def host_rows(path: Path = ROOT / "benchmarks" / "data" / "megatron_bridge_25_11.yaml") -> list[HostRow]:
    """Per MoE row of a published file: the kernels one (MoE layer, micro-batch) pair launches
    (`timing.layer_launches`, the experts' by `kernels.grouped_mlp_launches` at the row's local
    experts and fp8 recipe) plus the router's and dispatcher's host ops, beside the GPU's time
    for the layer, what the model charges for the host (the forward's sync and lag, the
    backward's pacing), and the reported step over the pairs of the fullest stage (everything
    the step holds: the most generous reading of what the host would have to take)."""
    import fidelity

    rows, _ = fidelity.load_rows(path)
    out = []
    for row in rows:
        if not row.plan.model.experts:
            continue
        p = fidelity.prepare(row)
        k, sw, s, hw = p.knobs, row.software, p.shape, p.hardware
        step = fidelity.predicted_step(row, p, DEFAULT).step
        reported = step * fidelity.predicted_tflops(row, step) / row.reported_tflops
        pairs = -(-s.layers // k.pp) * k.microbatches  # the fullest stage's layers
        case = timing.LayerCase.of(k, True, sw)
        precision = case.precision
        work = timing.slowed(timing.layer_work(s, case, hw, DEFAULT), sw, DEFAULT)
        charged = timing.dispatched(work, s, hw, sw)
        out.append(HostRow(
            id=row.id, recipe=timing.fp8_recipe(precision, sw.fp8_scaling, hw), local=max(1, s.experts // k.ep),
            tokens=k.seq * k.micro_batch // max(1, k.tp), ops_f=work.launches_f + kernel_model.DISPATCHER_OPS,
            ops_b=work.launches_b + kernel_model.DISPATCHER_BACKWARD_OPS,
            gpu=work.forward + work.backward_input + work.backward_weight,
            charged=(charged.forward + charged.backward_input) - (work.forward + work.backward_input),
            reported=reported / pairs))
    return out


def host_table(path: Path = ROOT / "benchmarks" / "data" / "megatron_bridge_25_11.yaml") -> str:
    """`host_rows` for the doc."""
    lines = ["| run | fp8 recipe | local experts | tokens per micro-batch | host ops forward | host ops backward "
             "| host ms per pair | GPU ms per pair | host charge ms per pair | reported ms per pair "
             "| us per op for the host alone to take it |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in host_rows(path):
        lines.append(f"| {r.id} | {r.recipe} | {r.local} | {r.tokens:,} | {r.ops_f} | {r.ops_b} | "
                     f"{1e3 * r.host:.2f} | {1e3 * r.gpu:.2f} | {1e3 * r.charged:.2f} | {1e3 * r.reported:.1f} | "
                     f"{1e6 * r.op_to_take_it:.0f} |")
    return "\n".join(lines)


def gemm_check_table() -> str:
    """The model's FP8 GEMM speed at DeepGEMM's published shapes (H800)."""
    import yaml

    data = yaml.safe_load((ROOT / "benchmarks" / "data" / "fp8_gemm_kernels.yaml").read_text())
    hw = timing.Hardware(generation="hopper", bf16=989e12, fp8=data["peak_fp8"] * 1e12, hbm=3.35e12, intra=400e9,
                         nic=50e9, level=8, sms=132)
    rows = [(1, r["m"], r["n"], r["k"], r["tflops"]) for r in data["dense"]]
    rows += [(r["groups"], r["m"], r["n"], r["k"], r["tflops"]) for r in data["grouped"]]
    lines = ["| groups | M | N | K | DeepGEMM TFLOP/s | model TFLOP/s | model / DeepGEMM |", "|---|---|---|---|---|---|---|"]
    for g, m, n, k, published in rows:
        model = 2 * m * n * k / timing.gemm_seconds(m, k, n, "fp8", hw, DEFAULT, g) / 1e12
        lines.append(f"| {g} | {m:,} | {n:,} | {k:,} | {published:,} | {model:,.0f} | {model / published:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
