"""Activation offloading (`train { offload-activations N }`): what Megatron-Core's
`--cpu-offloading` accepts, whichever target runs it (the memory and time models follow its
handler, so a layout it refuses would describe no job)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error
from ..plan import Plan
from . import rule
from .helpers import labels
from .predicates import fewest_offloadable, layers_fill_chunks


@rule
def offload_fits_chunk(plan: Plan) -> Iterator[Diagnostic]:
    """E0371: Megatron-Core requires `cpu_offloading_num_layers < num_layers`
    (TransformerConfig.__post_init__): the handler frees an offloaded layer's GPU copy only at
    the end of a later layer (its `layer_window_map`), so the last layer of the chunk is never
    offloaded."""
    train, pp = plan.training, plan.layout.pp
    n = train.offload_layers if train else 0
    if not n or pp.degree is None or pp.virtual_stages is None:
        return
    layers, split = plan.model.layers, pp.split
    if layers_fill_chunks(layers, pp.degree, pp.virtual_stages, split) is not None:
        return
    # an empty end of the split (only the embedding or the loss: `split [0, ..., 0]`) has no layer to
    # offload, and the generated hook and the memory model take nothing from it
    fewest = fewest_offloadable(layers, pp.degree * pp.virtual_stages, split)
    if n < fewest:
        return
    where = "the model has" if pp.degree * pp.virtual_stages == 1 else "a pipeline chunk holds"
    noun = "layer" if n == 1 else "layers"
    if fewest > 1:
        help_ = f"offload fewer layers than each chunk holds, e.g. `offload-activations {fewest // 2 or 1}`"
    else:  # a chunk of one layer: no count is below it
        help_ = ("every chunk keeps its last layer on the GPU, so a chunk of one layer offloads nothing: remove "
                 "`offload-activations`, or give each chunk at least 2 layers (fewer pipeline chunks)")
    yield error("E0371", f"{n} offloaded {noun}, but {where} {fewest}", train.span_of("offload_activations"),
                label=f"not below {fewest}", labels=labels((pp.span_of("degree"), "the chunks")), help=help_)


@rule
def offload_without_recompute(plan: Plan) -> Iterator[Diagnostic]:
    """E0372: Megatron-Core raises "CPU offloading does not work when activation recomputation
    is enabled" (TransformerConfig.__post_init__)."""
    train = plan.training
    if not train or not train.offload_layers or train.recompute in (None, "none"):
        return
    yield error("E0372", f"activation offloading with `recompute {train.recompute_stated}`", train.span_of("recompute"),
                label="recomputation here",
                labels=labels((train.span_of("offload_activations"), "offloading here")),
                help="write `recompute none` with `offload-activations`, or remove `offload-activations`")


@rule
def offload_under_target(plan: Plan) -> Iterator[Diagnostic]:
    """E0614: torchtitan 0.3 has no activation offloading. E0622: Megatron-Core raises "Currently
    there is no support for Pipeline parallelism with CPU offloading" (TransformerConfig). Rules
    of the target, checked with the layout (as `checks/target.py`'s are), so that `parc check`
    says what `parc compile` refuses and search never ranks it (`predicates.offload_problem`)."""
    train, pp = plan.training, plan.layout.pp
    n = train.offload_layers if train else 0
    if not n:
        return
    if plan.target.name == "torchtitan":
        yield error("E0614", "torchtitan has no activation offloading", train.span_of("offload_activations"),
                    label=f"offload-activations {n}", labels=labels((plan.target.span_of("name"), "target torchtitan")),
                    help="remove `offload-activations` (or write `recompute selective` to save memory), "
                    "or use `target torch` or `target megatron`")
    elif plan.target.name == "megatron" and (pp.degree or 1) > 1:
        yield error("E0622", "Megatron-Core does not offload activations with pipeline parallelism",
                    train.span_of("offload_activations"), label=f"offloading beside pp {pp.degree}",
                    labels=labels((pp.span_of("degree"), "the pipeline")),
                    help="write the layout without pp (shard the model with `dp { sharding zero3 }` "
                    "instead), remove `offload-activations`, or use `target torch`")
