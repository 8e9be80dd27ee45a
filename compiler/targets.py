"""The runtimes a spec can target, and what each one does that a layout does not say.

A spec names the program that will run it with `target torch | torchtitan | megatron` (default
`torch`, the job parc generates). The runtime decides facts the time and memory models need and a
layout line cannot carry: whether kernels are fused, what selective recomputation repeats, which
tensor-parallel collectives hide under GEMMs, the dtype gradients are reduced in, how the
activations are kept. It also decides what can be run at all: a pipeline schedule the runtime
does not implement, a context-parallel flavour it lacks, a rank order it cannot build.

This module is the one place that knowledge lives: one frozen `Runtime` record per target, read
from the Plan's `target` section by explain, search, diff, the memory check and the benchmarks
(`benchmarks/published.py` writes `target ...` into the specs of published runs instead of passing
these facts on the side). Each fact cites the runtime's own option or source.
"""

from __future__ import annotations

from dataclasses import dataclass

from .plan import Plan, Target

TARGETS = ("torch", "torchtitan", "megatron")


@dataclass(frozen=True)
class Runtime:
    """What one training program does and can do."""

    name: str
    description: str
    kernels: str
    """"eager" (one kernel per op, plain PyTorch) or "fused" (Megatron-LM's fused kernels and
    Transformer Engine); `compile on` makes torchtitan's "fused" (torch.compile)."""
    selective: str
    """What `recompute selective` repeats: "elementwise" (parc's `SelectivePolicy`: keeps the
    matmul outputs but the attention output projection's), "torchtitan-op" (torchtitan's
    `activation-checkpoint:selective`, its per-op `SelectiveAC`: every second matmul of a block
    and everything but the saved ops, `timing.TORCHTITAN_OP`) or "attention-core" (Megatron-LM's
    `--recompute-granularity selective`, Korthikanti et al. 2022)."""
    tp_overlap: str
    """Default tensor-parallel overlap: "none", "backward" (Megatron-LM's asynchronous
    input-gradient all-reduce under the weight-gradient GEMM, default since late 2021) or "all"."""
    schedules: tuple[str, ...]
    """Pipeline schedules it implements (parc's names)."""
    cp_flavours: tuple[str, ...]
    """Context-parallel flavours it implements."""
    shardings: tuple[str, ...]
    """Data-parallel shardings it implements."""
    ep_fold: tuple[str, ...]
    """Axes expert parallelism may be folded over."""
    rank_order: tuple[str, ...] | None
    """The fixed rank order its device mesh is built in (fastest first), or None when any order
    can be built (parc's own DeviceMesh follows the layout line)."""
    options: tuple[str, ...]
    """`target NAME { ... }` options it accepts."""
    fp16_grad_bytes: int
    """Bytes of a gradient element reduced under fp16: Megatron-LM reduces in the parameters'
    dtype (2) unless told `--accumulate-allreduce-grads-in-fp32`; FSDP2 reduces in fp32 (4)."""
    dp_runtime: str = "torch"
    """Whose data-parallel traffic the time model charges (`Software.dp_runtime`): "torch"
    (FSDP2 and torch.distributed.pipelining: parc's job and torchtitan) or "megatron" (its DDP
    and distributed optimizer)."""
    fp8: str = "none"
    """Which GEMMs an fp8 spec runs in fp8 (the time model's `Software.fp8`): "none" (parc's job
    has no fp8 matmuls: an fp8 spec runs in bf16, W0601) or "linear" (Transformer Engine in
    Megatron-LM, torchao's float8 in torchtitan: the transformer layers' linear layers)."""
    fp4: bool = False
    """Whether the runtime runs an nvfp4 spec's linears in NVFP4 (the time model's `Software.fp4`):
    Transformer Engine's recipe in Megatron-LM; parc's job runs it in bf16 (W0601) and torchtitan
    has no NVFP4 training (E0611)."""
    fp8_scaling: str = "delayed"
    """`Software.fp8_scaling`: "delayed" (Transformer Engine's default recipe) or "dynamic"
    (torchao's tensorwise float8, torchtitan's default)."""
    context_parallel: str = "parc"
    """`Software.context_parallel`: whose attention exchange runs cp ("parc", "torch": torch's
    `context_parallel` as torchtitan calls it, "te": Transformer Engine's)."""
    tp_regather: bool = False
    """`Software.tp_regather`: whether its column-parallel linears save their input sharded under
    sequence parallelism and all-gather it again in the backward (Megatron-LM's and Transformer
    Engine's linears: True; DTensor's, in parc's job and torchtitan, save the gathered input)."""
    moe_counts_kept: bool = False
    """`Software.moe_counts_kept`: whether a recomputed MoE layer reuses its forward's expert-count
    exchange and host read (parc's job: its dispatcher keeps them) or runs its dispatcher again
    (torchtitan, Megatron-Core)."""
    pp_overlap: str = "none"
    """`Software.pp_overlap`: which sends of its interleaved schedule run beside the next chunk.
    Megatron-LM core_v0.16.0 (the version `target megatron` writes for): "all", its default
    `overlap_p2p_comm` under the interleaved schedule, whose forward sends are waited on only
    before the next is posted (the wait before freeing the output came with 260cba7133, after
    core_v0.17.0). torch.distributed.pipelining (parc's job, torchtitan): "all" too, its
    multi-stage schedules (`ScheduleInterleaved1F1B`, the zero-bubble ones, `ScheduleDualPipeV`)
    run through `_PipelineScheduleRuntime`, which posts each send as soon as its chunk is done and
    waits on the sends only at the end of the step, and each receive as early as the schedule
    allows (`_add_send_recv`; torch 2.13's schedules.py); its single-stage `Schedule1F1B` waits on
    every send with the receive it is batched with."""
    pp_receives: str = "on-demand"
    """How its pipeline stages hold receive buffers (the memory model's `Knobs.pp_receives`):
    "on-demand" (parc's `ReceiveOnDemandStage` allocates one when the receive is posted and drops
    it once used; Megatron-LM allocates per p2p call) or "kept" (torch's stock `PipelineStage`,
    which torchtitan builds in `pipeline_llm`: one input and one output-gradient buffer per
    micro-batch and chunk, allocated by `_prepare_forward_infra`/`_prepare_backward_infra` at the
    first step and kept)."""


ALL_SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")

RUNTIMES: dict[str, Runtime] = {
    "torch": Runtime(
        name="torch", description="the PyTorch job parc generates (DTensor, FSDP2, torch.distributed.pipelining)",
        kernels="eager", selective="elementwise", tp_overlap="none", schedules=ALL_SCHEDULES,
        cp_flavours=("ring", "all-gather", "all-to-all"), shardings=("none", "zero1", "zero2", "zero3", "hsdp"),
        ep_fold=("dp", "cp"), rank_order=None, options=(), fp16_grad_bytes=4, moe_counts_kept=True,
        pp_overlap="all"),
    "torchtitan": Runtime(
        name="torchtitan", description="torchtitan 0.3 (FSDP2, DTensor TP, torch.distributed.pipelining, "
        "torch's context_parallel)",
        kernels="eager", selective="torchtitan-op", tp_overlap="none",
        # torchtitan passes the schedule name to torch's get_schedule_class: every schedule torch has
        schedules=ALL_SCHEDULES,
        # torch's context_parallel with its default rotate method, allgather (torchtitan 0.3 has
        # no option for the ring's alltoall rotation), and no Ulysses head scatter
        cp_flavours=("all-gather",),
        # FSDP2 only: dp_shard (zero3, or zero2 with reshard_after_forward never), dp_replicate
        # (DDP), both (HSDP); no optimizer-only sharding
        shardings=("none", "zero2", "zero3", "hsdp"),
        # ParallelDims: efsdp * ep == dp_shard * cp * tp, ep borrows from FSDP, cp and TP
        ep_fold=("dp", "cp", "tp"),
        # ParallelDims.build_mesh: ["pp", "dp_replicate", "dp_shard", "cp", "tp"], slowest first
        rank_order=("tp", "cp", "dp", "pp"),
        options=("compile", "compile-loss", "tp-overlap", "grad-reduce", "float8-all-gather"), fp16_grad_bytes=4,
        fp8="linear",
        fp8_scaling="dynamic", context_parallel="torch", pp_receives="kept", pp_overlap="all"),
    "megatron": Runtime(
        name="megatron", description="Megatron-LM / Megatron-Core (pretrain_gpt.py, Transformer Engine)",
        kernels="fused", selective="attention-core", tp_overlap="backward",
        # Megatron-Core's get_forward_backward_func: no pipelining, 1F1B, interleaved 1F1B
        schedules=("1f1b", "interleaved-1f1b"),
        # --cp-comm-type p2p | all_gather | a2a
        cp_flavours=("ring", "all-gather", "all-to-all"),
        # DDP, --use-distributed-optimizer (ZeRO-1), --use-torch-fsdp2 (ZeRO-3)
        shardings=("none", "zero1", "zero3"),
        # MoE parallel folding: expert groups carved from tp x cp x dp
        ep_fold=("dp", "cp", "tp"),
        # RankGenerator's default order "tp-cp-ep-dp-pp"
        rank_order=("tp", "cp", "ep", "dp", "pp"),
        options=("flash-attention", "attention-backend", "tp-overlap", "grad-reduce", "fp8-recipe", "fp8-params"),
        fp16_grad_bytes=2,
        fp8="linear", fp4=True,
        dp_runtime="megatron", context_parallel="te", tp_regather=True, pp_overlap="all"),
}


def runtime(target: Target | str) -> Runtime:
    return RUNTIMES[target if isinstance(target, str) else target.name]


def kernels(target: Target) -> str:
    if target.name == "torchtitan":
        return "fused" if target.compile else "eager"
    return runtime(target).kernels


def attention_backend(target: Target) -> str:
    """Megatron-Core's `--attention-backend` for the target: the spec's `attention-backend`, else
    "unfused" under `flash-attention off`, else "auto" (Transformer Engine's choice: cuDNN's fused
    attention on Hopper and later)."""
    if target.attention_backend is not None:
        return target.attention_backend
    return "auto" if target.flash_attention else "unfused"


def attention(target: Target) -> str:
    """"flash" (torch's SDPA: FlashAttention-2), "flash-te" (Megatron-LM: Transformer Engine's
    fused attention, cuDNN's on Hopper), "flash-te-fa2" (Transformer Engine running flash-attn's
    FlashAttention-2: `attention-backend flash`), or "unfused" for Megatron-LM without
    `--use-flash-attn` (before mid-2022) or with `--attention-backend unfused`."""
    if target.name != "megatron":
        return "flash" if target.flash_attention else "unfused"
    backend = attention_backend(target)
    if backend == "unfused":
        return "unfused"
    return "flash-te-fa2" if backend == "flash" else "flash-te"


def tp_overlap(target: Target) -> str:
    """The tp collectives the runtime hides (`Software.tp_overlap`). torchtitan's `tp-overlap all`
    is torch's async TP, whose micro-pipelining fuses only the forward's collectives ("forward")."""
    overlap = target.tp_overlap or runtime(target).tp_overlap
    return "forward" if overlap == "all" and runtime(target).name == "torchtitan" else overlap


def grad_bytes(target: Target, precision: str) -> int:
    """Bytes of a gradient element as data-parallel ranks reduce it."""
    if target.grad_reduce is not None:
        return 4 if target.grad_reduce == "fp32" else 2
    return runtime(target).fp16_grad_bytes if precision == "fp16" else 4


FP8_SCALING = {"delayed": "delayed", "tensorwise": "current", "mxfp8": "mxfp8", "blockwise": "blockwise"}
"""`fp8-recipe` (Megatron-LM's `--fp8-recipe` names) as the time model's `Software.fp8_scaling`."""


def fp8_scaling(target: Target) -> str:
    """The fp8 recipe whose casts and quantize kernels the runtime's fp8 GEMMs pay
    (`Software.fp8_scaling`): the spec's `fp8-recipe`, else the runtime's own."""
    if target.fp8_recipe is not None:
        return FP8_SCALING[target.fp8_recipe]
    return runtime(target).fp8_scaling


def fp8_params(target: Target, precision: str, sharding: str | None) -> bool:
    """Whether the runtime holds the fp8 linears' weights as fp8 tensors and gathers them so:
    Megatron-LM's `--fp8-param-gather`, which parc's Megatron launcher sets under fp8 with the
    distributed optimizer, as every fp8 recipe of NeMo's and Megatron-Bridge's does
    (`bf16_with_fp8_*_mixed`, `bf16_with_mxfp8_mixed`: `fp8_param_gather = True`). Megatron-LM
    allows it with the distributed optimizer or FSDP, and turns it off under torch FSDP2 with
    Transformer Engine 2 (`validate_args`), so only `zero1` has it; `fp8-params off` (Megatron-LM's
    own default, `Target.fp8_params`) keeps bf16 weights."""
    return target.name == "megatron" and target.fp8_params and precision == "fp8" and sharding == "zero1"


def fp4_params(target: Target, precision: str, sharding: str | None) -> bool:
    """Whether the runtime holds the NVFP4 linears' weights as NVFP4 tensors and gathers them so:
    Megatron-LM's `--fp4-param-gather`, set with the distributed optimizer as Megatron-Bridge's
    `bf16_with_nvfp4_mixed` sets it (`fp4_param_gather = True`). The spec's `fp8-params` states
    both (Megatron's two options are one choice: keep the quantized weight, not a bf16 one);
    `fp8-params off` keeps bf16 weights, quantized on each step's first micro-batch."""
    return target.name == "megatron" and target.fp8_params and precision == "nvfp4" and sharding == "zero1"


def float8_all_gather(target: Target) -> bool:
    """Whether FSDP2 gathers the float8 linears' weights in float8: torchtitan with
    `float8-all-gather on` (torchao's `enable_fsdp_float8_all_gather`; `Knobs.fp8_all_gather`)."""
    return target.name == "torchtitan" and target.float8_all_gather


NVFP4_GATHER_BYTES = 0.5
"""Bytes per element of an NVFP4 weight in Megatron-LM's parameter all-gather
(`--fp4-param-gather`): its buffer holds the packed rowwise E2M1 data, N/2 uint8 for N elements
(`param_and_grad_buffer.py`); the block scales and the columnwise copy are rebuilt on each rank
after the gather."""


def gather_bytes(target: Target, precision: str) -> float:
    """Bytes per element of an fp8 linear's weight as the data-parallel all-gather moves it
    (`Software.gather_bytes`): 1 where Megatron-LM keeps fp8 parameters of delayed or
    per-tensor scaling (its parameter buffer is uint8, param_and_grad_buffer.py; read only where
    the ledger gathers fp8 parameters, `fp8_params`) and where torchtitan's FSDP2 gathers float8
    weights (`float8-all-gather on`); 2 otherwise: the compute dtype (`fp8-params off`: bf16
    weights), and MXFP8's, whose bf16 values are gathered into the gradient buffer
    (`--reuse-grad-buf-for-mxfp8-param-ag`) and quantized after (`_post_param_sync`); NVFP4
    parameters `NVFP4_GATHER_BYTES`."""
    if precision == "nvfp4":
        return NVFP4_GATHER_BYTES if target.name == "megatron" and target.fp8_params else 2
    if precision != "fp8":
        return 2
    if target.name == "megatron" and target.fp8_params and fp8_scaling(target) != "mxfp8":
        return 1
    return 1 if float8_all_gather(target) else 2


def memory_runtime(target: Target) -> str:
    """How the memory model counts this target's rank (`memory.estimate`'s runtime): "torch"
    for PyTorch with FSDP2, parc's job and torchtitan, compiled or not (FSDP2's sharded fp32
    states, gathered parameters, unsharded gradients and reduce-scatter buffers, the loss's fp32
    logits: what Megatron's accounting does not have; torch.compile's fused elementwise kernels
    save fewer activations than eager ones, so under `compile on` with selective recomputation
    this is an upper bound); the fused-kernel accounting of Korthikanti et al. 2022 for
    Megatron-LM ("megatron", or "megatron-flash" with FlashAttention's log-sum-exp instead of
    the scores). Against torchtitan's published max_memory_reserved (docs/memory-model.md,
    "Against published GPU memory") Megatron's accounting was under by a median 43 %."""
    if kernels(target) == "eager" or target.name == "torchtitan":
        return "torch"
    return "megatron-flash" if attention(target) != "unfused" else "megatron"


def shared_expert_overlap(plan: Plan) -> bool:
    """Whether the runtime runs a MoE layer's shared experts on their own stream beside the token
    dispatcher (`Software.shared_expert_overlap`): Megatron-Core's `--moe-shared-expert-overlap`,
    which parc's Megatron launcher passes for a model with shared experts (as NVIDIA's recipes
    run them) unless they are recomputed (Megatron-Core refuses the two together), and only where
    `shared_overlap_applies`."""
    return (plan.target.name == "megatron" and bool(plan.model.shared_experts)
            and "shared_experts" not in plan.training.recompute_modules)


def shared_overlap_applies(tp: int) -> bool:
    """Where the shared experts' overlap runs: without tensor parallelism. Under tp Megatron-Core's
    overlapped shared experts gather their input themselves in bf16 and their linears keep it
    gathered for the backward (`SharedExpertMLP.pre_forward_comm`; TE's `parallel_mode` cleared):
    tp times the saved bytes of that input, traffic Transformer Engine would have sent quantized.
    parc's launcher passes the flag only here, and the time model applies it only here."""
    return tp == 1


def software_of(plan: Plan):
    """The time model's `Software` bundle for the plan's target."""
    from .timing import Software

    target = plan.target
    modules = plan.training.recompute_modules
    # `recompute selective [...]` (Megatron-Core's modules) in place of the runtime's own policy
    selective = "modules:" + ",".join(modules) if modules else runtime(target).selective
    return Software(attention=attention(target), selective=selective,
                    tp_overlap=tp_overlap(target), kernels=kernels(target), fp8=runtime(target).fp8,
                    fp4=runtime(target).fp4,
                    fp8_scaling=fp8_scaling(target), context_parallel=runtime(target).context_parallel,
                    dp_runtime=runtime(target).dp_runtime, tp_regather=runtime(target).tp_regather,
                    grad_bytes=grad_bytes(target, plan.training.precision),
                    gather_bytes=gather_bytes(target, plan.training.precision),
                    moe_counts_kept=runtime(target).moe_counts_kept, pp_overlap=runtime(target).pp_overlap,
                    shared_expert_overlap=shared_expert_overlap(plan))
