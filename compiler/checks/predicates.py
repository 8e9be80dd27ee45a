"""The layout rules' conditions as plain functions of numbers, shared by the checks and search.

A rule (the other modules of this package) reads a Plan, decides with one of these functions
whether its finding applies, and then builds the diagnostic. `parc search` prunes millions of
candidate assignments with the same functions on plain numbers, without building a Plan per
candidate, so a layout search accepts is one `parc check` accepts (tests/test_search_rules.py
compares the two on random candidates). Each function names the code whose condition it is.

No function here builds a diagnostic, reads a Plan or registers a rule.
"""

from __future__ import annotations

from ..memory.schedules import interleaved_accepts
from ..stages import V_SCHEDULES, layers_per_chunk

SINGLE = ("gpipe", "1f1b")
"""Schedules that run one chunk per pipeline rank."""
INTERLEAVED = ("interleaved-1f1b", "interleaved-zb")
"""Looped schedules with `virtual-stages` chunks per rank."""


# ---------------------------------------------------------------------------------------------
# Placement (topology.py)


def crosses_domain(stride: int, degree: int, domain: int) -> bool:
    """E0304: an axis of `degree` ranks at `stride` spans stride x degree consecutive ranks; its
    groups leave the NVLink domain unless that span divides the domain."""
    span = stride * degree
    return degree > 1 and (span > domain or domain % span != 0)


# ---------------------------------------------------------------------------------------------
# Tensor parallelism against the model (tensor.py)


def tp_splits(size: int, tp: int) -> bool:
    """E0310 (heads), E0312 (FFN sizes), E0313 (hidden): tp divides the size."""
    return tp <= 1 or size % tp == 0


def tp_ffn_sizes(layers: int, moe_layers: int, ffn: int, is_moe: bool, shared_experts: int,
                 expert_ffn: int) -> list[tuple[str, int, str]]:
    """E0312: the FFN sizes tp must divide, as (model field, size, what): the dense FFN when any
    layer is dense, the shared experts' FFN (routed experts are not split over tp)."""
    sizes = []
    if moe_layers < layers:
        sizes.append(("ffn", ffn, "FFN size"))
    if is_moe and shared_experts:
        sizes.append(("expert_ffn", expert_ffn, "shared-expert FFN size"))
    return sizes


# ---------------------------------------------------------------------------------------------
# Pipeline (schedule.py)


def layers_fill_chunks(layers: int, pp: int, v: int, split: tuple[int, ...] | None) -> str | None:
    """E0316 (a written split of the wrong length or sum) or E0315 (layers do not split evenly
    over pp x v chunks, or fewer layers than chunks); None when the layers fill the chunks."""
    chunks = pp * v
    if split is not None:
        return "E0316" if len(split) != chunks or sum(split) != layers else None
    return None if layers % chunks == 0 else "E0315"


def virtual_stages_fit(schedule: str, pp: int, v: int) -> bool:
    """E0317: gpipe and 1f1b run one chunk per rank, the V schedules exactly two, the
    interleaved ones at least two (with a pipeline)."""
    if schedule in SINGLE:
        return v == 1
    if schedule in V_SCHEDULES:
        return v == 2
    if schedule in INTERLEAVED:
        return v >= 2 or pp <= 1
    return True


def schedule_rejects_microbatches(schedule: str, pp: int, m: int) -> str | None:
    """E0318 (torch's interleaved schedules need whole rounds of micro-batches) or E0320
    (dualpipe-v needs 2 pp of them); None when the schedule accepts m. Only with pp > 1."""
    if pp == 1:
        return None
    if schedule in INTERLEAVED and not interleaved_accepts(pp, m):
        return "E0318"
    if schedule == "dualpipe-v" and m < 2 * pp:
        return "E0320"
    return None


# ---------------------------------------------------------------------------------------------
# Batch (batch.py)


def microbatches_per_step(global_batch: int, batch_degree: int, micro: int) -> int | None:
    """Micro-batches per step on one pipeline, or None when the global batch does not divide
    into batch_degree x micro (E0321). The same arithmetic as resolution's `grad_accum`."""
    unit = batch_degree * micro
    if unit <= 0 or global_batch % unit:
        return None
    return global_batch // unit


def microbatches_fill_pipeline(m: int, pp: int) -> bool:
    """E0322: every pipeline stage needs a micro-batch to work on."""
    return pp <= 1 or m >= pp


# ---------------------------------------------------------------------------------------------
# Context parallelism (context.py)


def cp_chunks_per_rank(flavour: str) -> int:
    """Load-balanced flavours give each cp rank two chunks, one from each end of the sequence."""
    return 1 if flavour == "all-to-all" else 2


def sequence_splits(seq: int, cp: int, flavour: str) -> bool:
    """E0330: the sequence splits into the chunks the cp flavour needs."""
    return cp <= 1 or seq % (cp_chunks_per_rank(flavour) * cp) == 0


def local_sequence_splits(seq: int, cp: int, tp: int, sequence_parallel: bool) -> bool:
    """E0331: under sequence parallelism each cp rank's tokens split over tp (when seq splits
    over cp at all: E0330 reports that)."""
    if tp <= 1 or not sequence_parallel or seq % max(1, cp):
        return True
    return (seq // max(1, cp)) % tp == 0


def all_to_all_splits_heads(heads: int, tp: int, cp: int, flavour: str) -> bool:
    """E0332: all-to-all (Ulysses) cp scatters each tp rank's heads over cp (when tp divides the
    heads: E0310 reports that)."""
    if cp <= 1 or flavour != "all-to-all" or heads % max(1, tp):
        return True
    return (heads // max(1, tp)) % cp == 0


# ---------------------------------------------------------------------------------------------
# Experts (experts.py) and sharding (sharding.py)


def experts_problem(is_moe: bool, experts: int, ep: int) -> str | None:
    """E0342 (ep on a dense model) or E0340 (ep does not divide the experts); None when fine."""
    if ep <= 1:
        return None
    if not is_moe:
        return "E0342"
    return None if experts % ep == 0 else "E0340"


def ep_fits_folded(ep: int, folded_ranks: int) -> bool:
    """E0341: ep carves whole groups out of the ranks of the axes it is folded onto."""
    return ep <= 1 or folded_ranks % ep == 0


def hsdp_factors_match(replicate: int, shard: int, dp: int) -> bool:
    """E0350: hsdp's replicate x shard is the dp degree."""
    return replicate * shard == dp


def fewest_offloadable(layers: int, chunks: int, split: tuple[int, ...] | None) -> int:
    """The fewest layers a pipeline chunk holds, not counting an empty end of the split (only the
    embedding or the loss, `split [0, ..., 0]`): `offload-activations N` must stay below it
    (E0371; the layout must already fill its chunks)."""
    return min((c for c in layers_per_chunk(layers, chunks, split) if c), default=0)


def offload_problem(layers: int, pp: int, v: int, split: tuple[int, ...] | None, offload: int,
                    target: str) -> str | None:
    """E0371 (`offload-activations` not below a chunk's layers) or E0622 (Megatron-Core offloads
    only without pipeline parallelism); None without offloading or when both hold. Search's
    engine prunes by it, so that no layout it ranks is one `parc check` or `compile` refuses."""
    if not offload:
        return None
    if offload >= fewest_offloadable(layers, pp * v, split):
        return "E0371"
    if target == "megatron" and pp > 1:
        return "E0622"
    return None


# ---------------------------------------------------------------------------------------------
# What torchtitan refuses (backends/torchtitan.py)


def torchtitan_async_tp_refused(tp: int, tp_overlap: str | None, compile: bool) -> bool:
    """E0616: torchtitan's async tensor parallelism (`tp-overlap all`) is torch's micro-pipelining,
    a torch.compile pass: its CompileConfig refuses it without `compile on`, wherever tp > 1."""
    return (tp_overlap or "none") == "all" and tp > 1 and not compile


# ---------------------------------------------------------------------------------------------
# What Megatron-LM refuses (target.py)


def megatron_fsdp_refuses(pp: int | None, ep: int | None, tied: bool, precision: str) -> str | None:
    """E0623: what Megatron-LM's `--use-torch-fsdp2` (parc's zero3 under `target megatron`) is
    refused with (megatron/training/arguments.py, `validate_args` at core_v0.16.0): pipeline or
    expert parallelism, tied embeddings, fp16; None when it runs. An open degree refuses nothing."""
    if (pp or 1) > 1:
        return "pipeline parallelism"
    if (ep or 1) > 1:
        return "expert parallelism"
    if tied:
        return "tied embeddings"
    if precision == "fp16":
        return "fp16"
    return None


def megatron_needs_sequence_parallel(moe: bool, tp_overlap: str) -> str | None:
    """E0624: why Megatron-LM needs sequence parallelism whenever tp > 1: `--tp-comm-overlap`
    asserts it (`validate_args`), and a MoE layer raises in training without it
    (`MoELayer.forward`); None when it does not."""
    if tp_overlap == "all":
        return "tensor-parallel overlap (`tp-overlap all`)"
    if moe:
        return "mixture-of-experts layers"
    return None

