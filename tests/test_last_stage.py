"""The last pipeline stage's worst moment and the gradients at the peak (issue 15).

Traced on the rehearsal of Llama 3 405B's last stage (tests/data/specs/rehearse-405b-16.par,
rank 120; every live tensor by the op that made it, docs/memory-model.md, "The last stage"):

- at the peak (the loss's backward) and at the layer's worst backward moment no sharded
  gradient is alive: FSDP2 accumulates unsharded fp32 gradients over the micro-batches and
  makes the sharded ones only in the step's last backward, freeing the sums
  (`model.peak_gradients`);
- the layer's backward runs after the loss's and the output projection's: the head's
  activations are freed, the output projection's bf16 weight gradient (16,032 x 16,384 x 2 =
  525,336,576 bytes) and the kept fp32 logits are alive (`model.output_weight_gradient`). The
  model had put the layer's working set on top of the whole micro-batch, 152 MB over.

Checked against hand counts from the spec's widths, not against the model's own pieces.
"""

from __future__ import annotations

from dataclasses import replace

from parc.memory import knobs_of, per_stage, shape_of
from parc.memory.model import rank_activations, rank_params

from .conftest import ROOT

SPEC = "tests/data/specs/rehearse-405b-16.par"

# Llama 3 405B on one rank of tp 8 with sequence parallelism, 8,192 tokens, bf16, over dp 64
TOKENS, H, VOCAB_T, TP, DP = 8192, 16384, 128256 // 8, 8, 64
LOGITS = TOKENS * VOCAB_T * 4                  # 525,336,576: one micro-batch's fp32 logits
OUTPUT_GRADIENT = VOCAB_T * H * 2              # 525,336,576: the output projection's bf16 gradient
BOUNDARY = TOKENS // TP * H * 2                # 33,554,432: the residual stream, sequence-sharded
# the head: the final norm's input and rstd, the output projection's gathered input, the fp32
# log-softmax, the int64 targets, the loss's fp32 total weight
HEAD = BOUNDARY + TOKENS // TP * 4 + TOKENS * H * 2 + LOGITS + TOKENS * 8 + 4


def plan_and_knobs():
    from parc.pipeline import compile_text

    result = compile_text((ROOT / SPEC).read_text(encoding="utf-8"), SPEC)
    assert result.ok
    plan = result.plan
    return plan, shape_of(plan), replace(knobs_of(plan), device="fake")


def test_the_loss_moment_is_the_last_stage_worst_and_the_layers_is_below_it():
    """The last stage's working set is the loss's backward (three fp32 logits-shaped tensors)
    plus the previous micro-batch's input gradient (Schedule1F1B's send), not the layer's."""
    _, shape, k = plan_and_knobs()
    acts = rank_activations(shape, k)
    last, middle = acts[15], acts[8]
    assert last.transient == 3 * LOGITS + BOUNDARY
    # the middle stage's layer working set (its transient less the same sent gradient) is the
    # layer's own moment; on the last stage it adds the output gradient and loses the head
    layer_work = middle.transient - BOUNDARY
    assert layer_work > 3 * LOGITS  # the old bound: the layer's working set on the whole held set
    assert layer_work - HEAD + OUTPUT_GRADIENT < 3 * LOGITS


def test_the_peak_holds_the_accumulated_gradients_not_also_the_sharded_ones():
    """Stage 15 holds one layer, the final norm and the output layer: FSDP2's fp32 sums of
    every parameter of its tp shard (4 bytes each) are the peak's gradients: 2,644,705,280
    bytes, the sum of the fp32 `_to_copy` gradients in the rehearsal's histogram at its peak."""
    _, shape, k = plan_and_knobs()
    layer = (2 * H * H // TP + 2 * H * 1024 // TP + 3 * H * 53248 // TP) + 2 * H
    head = H + VOCAB_T * H
    stage = per_stage(shape, k)[15]
    assert stage.grads == 4 * (layer + head) == 2_644_705_280
    params = rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)[15]
    assert params.params.total == layer + head
