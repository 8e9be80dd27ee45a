"""A rank's worst moment pairs the activations in flight with the working set of the chunk that
computes then (issue 15; `schedules.moment_states`, `model.moments_peak`).

Traced on the rehearsal of Mixtral 8x7B's 5-D layout, last pp rank (tests/data/specs/
rehearse-mixtral-8.par, rank 255: chunks 3 and 7 of 8, one MoE layer each, chunk 7 with the
final norm, the output layer and the loss; every live tensor at the peak by the op that made
it, docs/memory-model.md, "Moments by chunk"): the peak is the loss's backward of the step's
last micro-batch on chunk 7, with four micro-batches on chunk 3 and one on chunk 7; beside them
the loss's three fp32 logits-shaped tensors (`zeros_like`, `exp` and their sum) and no MoE
tensor. The model had added the MoE layer's backward working set, which runs on chunk 3 (five
micro-batches there, none on chunk 7), to that moment: +6.58 %.

Checked against hand counts from the spec's widths and against a plain walk of every action.
"""

from __future__ import annotations

import random
from dataclasses import replace
from types import SimpleNamespace

import pytest
from parc.memory import knobs_of, per_stage, shape_of
from parc.memory.model import (
    ChunkActivations,
    RankActivations,
    moments_peak,
    peak,
    rank_activations,
)
from parc.memory.schedules import MULTI_STAGE, B, F, I, W, actions, interleaved_accepts

from .conftest import ROOT

SPEC = "tests/data/specs/rehearse-mixtral-8.par"

# Mixtral 8x7B on one rank of tp 2 (sequence parallelism) x cp 2: 32,768 / 2 tokens, bf16
TOKENS, H, VOCAB_T, TP = 32768 // 2, 4096, 32000 // 2, 2
BOUNDARY = TOKENS // TP * H * 2                # 67,108,864: the residual stream, sequence-sharded
LOGITS = TOKENS * VOCAB_T * 4                  # 1,048,576,000: one micro-batch's fp32 logits
# the head: the final norm's input and rstd, the output projection's gathered input, the fp32
# log-softmax, the int64 targets, the loss's fp32 total weight
HEAD = BOUNDARY + TOKENS // TP * 4 + TOKENS * H * 2 + LOGITS + TOKENS * 8 + 4


def shape_and_knobs():
    from parc.pipeline import compile_text

    result = compile_text((ROOT / SPEC).read_text(encoding="utf-8"), SPEC)
    assert result.ok
    return shape_of(result.plan), replace(knobs_of(result.plan), device="fake")


def test_mixtrals_last_rank_peaks_in_the_loss_backward_not_beside_the_moe_working_set():
    """pp rank 3 (interleaved 1F1B, 2 chunks, 32 micro-batches): per micro-batch chunk 3 holds
    its block input (full recomputation) and its kept output, chunk 7 its block input, the head
    and the kept fp32 logits. Its worst moment is chunk 7's loss backward with 4 micro-batches
    on chunk 3: 4 x 2 x 67,108,864 + 67,108,864 + 1,250,066,436 + 1,048,576,000 bytes in flight
    and the loss's 3 x 1,048,576,000 (the rehearsal's temporaries at its peak: 3,146,268,672,
    the same three and 540,672 bytes of int64 and bool index tensors)."""
    shape, k = shape_and_knobs()
    assert (k.schedule, k.pp, k.virtual_stages, k.microbatches) == ("interleaved-1f1b", 4, 2, 32)
    assert HEAD == 1_250_066_436
    stage = per_stage(shape, k)[3]
    assert stage.activations == 4 * 2 * BOUNDARY + BOUNDARY + HEAD + LOGITS == 2_902_622_212
    assert stage.in_flight == 5
    assert stage.buffers == 3 * LOGITS == 3_145_728_000
    assert peak(shape, k) == (stage.total, 3)
    # the MoE layer's working set (chunk 3's, as every middle rank's) is larger than the loss's,
    # and its own moment (5 micro-batches on chunk 3, none on chunk 7) is below the loss's
    acts = rank_activations(shape, k)[3]
    moe = acts.working[0]
    assert moe == rank_activations(shape, k)[1].transient > 3 * LOGITS
    assert 5 * 2 * BOUNDARY + moe < stage.activations + stage.buffers
    # the old figure put the two together: 653,834,240 bytes more than this one
    assert stage.activations + moe - (stage.activations + stage.buffers) == moe - 3 * LOGITS


def plain_moments_peak(schedule: str, pp: int, v: int, m: int, rank: int, held: list[int], pending: list[int],
                       extras: tuple[list[int], list[int], list[int]]) -> int:
    """Every action of the step, walked: a forward holds the state after it, a full or weight
    backward the state before it, each with its own chunk's extra of its kind; an input backward
    the state before it with its chunk's input-pass extra (what it adds, its pending set
    included)."""
    h, p = [0] * v, [0] * v
    best = 0

    def state() -> int:
        return sum(a * x for a, x in zip(h, held, strict=True)) + sum(a * x for a, x in zip(p, pending, strict=True))

    for kind, chunk in actions(schedule, pp, v, m, rank):
        if kind == F:
            h[chunk] += 1
            best = max(best, state() + extras[0][chunk])
        elif kind == B:
            best = max(best, state() + extras[0][chunk])
            h[chunk] -= 1
        elif kind == I:
            best = max(best, state() + extras[1][chunk])
            p[chunk] += 1
        elif kind == W:
            best = max(best, state() + extras[2][chunk])
            h[chunk] -= 1
            p[chunk] -= 1
        best = max(best, state())  # between actions
    return best


@pytest.mark.parametrize("schedule", MULTI_STAGE)
def test_the_paired_peak_is_a_plain_walk_of_every_action(schedule):
    """`moments_peak` (undominated moments per chunk and kind, over `walk_microbatches`'
    micro-batches) against a plain walk of every action of the whole step, with random weights
    and extras; never above the largest state plus the largest extra (the bound the model used
    before) nor below the largest state plus the least."""
    rng = random.Random(schedule)
    checked = 0
    for _ in range(40):
        pp = rng.choice([2, 3, 4, 8])
        v = 2 if schedule in ("zbv", "dualpipe-v") else rng.choice([2, 3, 4])
        m = rng.choice([pp, 2 * pp, 3 * pp, 8 * pp, 4 * pp + 5])
        if schedule == "dualpipe-v" and m < 2 * pp or schedule.startswith("interleaved") and not \
                interleaved_accepts(pp, m):
            continue
        rank = rng.randrange(pp)
        held = [rng.randrange(1, 1000) for _ in range(v)]
        pending = [rng.randrange(0, 1000) for _ in range(v)]
        extras = tuple([rng.randrange(0, 5000) for _ in range(v)] for _ in range(3))
        k = SimpleNamespace(schedule=schedule, pp=pp, virtual_stages=v, microbatches=m)
        acts = RankActivations(chunks=tuple(ChunkActivations(saved=a, pending=d)
                                            for a, d in zip(held, pending, strict=True)), transient=0)
        paired = moments_peak(k, rank, acts, tuple(tuple(e) for e in extras))
        assert paired is not None
        got, _, chunk, kind, live = paired
        assert live is None  # no receive buffer asked for
        total = got + extras[kind][chunk]
        assert total == plain_moments_peak(schedule, pp, v, m, rank, held, pending, extras), (pp, v, m, rank)
        largest = plain_moments_peak(schedule, pp, v, m, rank, held, pending, ([0] * v,) * 3)
        every = [e for each in extras for e in each]
        assert largest + min(every) <= total <= largest + max(every)
        checked += 1
    assert checked > 10


DEEPSEEK = "tests/data/specs/rehearse-deepseek-32.par"


def test_deepseeks_first_rank_keeps_the_loss_apart_from_the_pending_set():
    """DeepSeek-V3-like's first pp rank (DualPipe-V, 32 micro-batches over 16 ranks: chunks 0
    and 31; the embedding and a dense layer, a MoE layer and the head). Early in the step it
    runs stage 31's input pass and weight pass one micro-batch at a time with 31 micro-batches
    on stage 0 (rehearsal: the peak, traced, holds 31 embedding outputs and 31 layer outputs of
    stage 0 and one micro-batch's head on stage 31, in stage 31's MoE layer's recomputed
    backward). The loss's two fp32 logits-shaped tensors (no tp: 2 x 4,096 x 129,280 x 4) run
    first in the input pass, before any output gradient is kept for the weight pass, and the
    weight pass runs no loss: the model had put them on top of the micro-batch's whole pending
    set (+2.50 % against the rehearsal; +1.91 % after; +1.02 % since a layer's weight and input
    passes add the released backward's moment, `model.weight_pass_working`)."""
    from parc.pipeline import compile_text

    result = compile_text((ROOT / DEEPSEEK).read_text(encoding="utf-8"), DEEPSEEK)
    shape, k = shape_of(result.plan), replace(knobs_of(result.plan), device="fake")
    assert (k.schedule, k.pp, k.microbatches, k.tp) == ("dualpipe-v", 16, 32, 1)
    tokens, h, vocab = 4096, 7168, 129280
    boundary, logits = tokens * h * 2, tokens * vocab * 4
    head = boundary + tokens * 4 + tokens * h * 2 + logits + tokens * 8 + 4  # as HEAD above, no sp
    acts = rank_activations(shape, k)[0]
    first, last = acts.chunks
    assert first.held == 2 * boundary + tokens * 8     # the block input with the token ids, the kept output
    assert last.held == boundary + head + logits        # the block input, the head, the kept fp32 logits
    assert acts.working[1] == 2 * logits                # the loss's backward: the chunk's largest
    stage = per_stage(shape, k)[0]
    before = 31 * first.held + last.held                # before stage 31's input pass
    # the worst moment is stage 31's weight pass: the micro-batch's pending set and a layer's
    # working set (not the loss's)
    assert stage.activations == before + last.pending
    assert stage.buffers == acts.weight_working[1] < 2 * logits
    # the input pass: the loss with nothing pending, or the layer with at most the pending set
    # less the stage input's gradient
    assert acts.input_working[1] == max(2 * logits, acts.weight_working[1] + last.pending - boundary)
    assert stage.activations + stage.buffers > before + acts.input_working[1]
    # the old figure, the whole pending set beside the loss, is 537,346,048 bytes higher
    assert before + last.pending + 2 * logits - (stage.activations + stage.buffers) == 537_346_048


def plain_receive_walk(schedule: str, pp: int, v: int, m: int, rank: int, held: list[int], pending: list[int],
                       extras: tuple[list[int], list[int], list[int]], receive: int) -> int:
    """Every action of torch 2.13's own lowering of the step (tests/test_receive_buffers.py,
    `_add_send_recv`), walked with the receive buffers alive: a computation holds those left
    once it (or DualPipe-V's overlapped pair) has taken its inputs; a weight backward and the
    time between computations hold those alive then."""
    from .test_receive_buffers import MULTI, _fake, torch_schedules

    cls = getattr(torch_schedules, MULTI[schedule])
    fake = _fake(pp, v, m)
    if schedule in ("zbv", "dualpipe-v"):
        def owner(s):
            return s if s < pp else 2 * pp - 1 - s
    else:
        def owner(s):
            return s % pp
    lowered = {r: torch_schedules._add_reduce_grad(torch_schedules._add_unshard_reshard(
        cls._calculate_single_rank_operations(fake, r)), m) for r in range(pp)}
    lowered = torch_schedules._add_send_recv(lowered, stage_to_rank=owner, num_stages=pp * v)
    local = {s: c for c, s in enumerate(sorted(s for s in range(pp * v) if owner(s) == rank))}
    h, p = [0] * v, [0] * v
    alive = best = 0
    received = set()

    def state() -> int:
        return sum(a * x for a, x in zip(h, held, strict=True)) + sum(a * x for a, x in zip(p, pending, strict=True))

    for action in lowered[rank]:
        subs = action.sub_actions or (action,)
        for a in subs:  # the inputs the computation takes
            kind, key = a.computation_type.value, (a.stage_index, a.microbatch_index)
            if kind in ("F", "B", "I") and (("RECV_F" if kind == "F" else "RECV_B"), key) in received:
                alive -= 1
        for a in subs:
            kind = a.computation_type.value
            if kind in ("RECV_F", "RECV_B"):
                alive += 1
                received.add((kind, (a.stage_index, a.microbatch_index)))
            elif kind in ("F", "B", "I", "W"):
                c = local[a.stage_index]
                if kind == "F":
                    h[c] += 1
                    best = max(best, state() + extras[0][c] + alive * receive)
                elif kind == "B":
                    best = max(best, state() + extras[0][c] + alive * receive)
                    h[c] -= 1
                elif kind == "I":
                    best = max(best, state() + extras[1][c] + alive * receive)
                    p[c] += 1
                else:
                    best = max(best, state() + extras[2][c] + alive * receive)
                    h[c] -= 1
                    p[c] -= 1
            best = max(best, state() + alive * receive)
    return best


@pytest.mark.parametrize("schedule", MULTI_STAGE)
def test_the_receives_paired_with_each_moment_are_a_walk_of_torchs_lowering(schedule):
    """`moments_peak` given one receive buffer's bytes pairs each moment with the receives alive
    then (`schedules.receive_moments`) instead of adding the most a rank ever holds to its worst
    moment. Against a plain walk of torch's own lowering with random weights: never below it,
    equal where the schedule has no weight pass (a weight pass takes the most alive between its
    neighbouring computations, a bound), never above the old bound."""
    pytest.importorskip("torch")
    from parc.memory.schedules import receive_buffers

    rng = random.Random("receives " + schedule)
    checked = 0
    for _ in range(40):
        pp = rng.choice([2, 4])
        v = 2 if schedule in ("zbv", "dualpipe-v") else rng.choice([2, 3])
        m = rng.choice([2 * pp, 3 * pp, 4 * pp])
        if schedule == "dualpipe-v" and m < 2 * pp or schedule.startswith("interleaved") and not \
                interleaved_accepts(pp, m):
            continue
        rank = rng.randrange(pp)
        held = [rng.randrange(1, 1000) for _ in range(v)]
        pending = [rng.randrange(0, 1000) for _ in range(v)] if schedule in ("interleaved-zb", "zbv", "dualpipe-v") \
            else [0] * v
        extras = tuple([rng.randrange(0, 5000) for _ in range(v)] for _ in range(3))
        receive = rng.randrange(1, 3000)
        k = SimpleNamespace(schedule=schedule, pp=pp, virtual_stages=v, microbatches=m)
        acts = RankActivations(chunks=tuple(ChunkActivations(saved=a, pending=d)
                                            for a, d in zip(held, pending, strict=True)), transient=0)
        paired = moments_peak(k, rank, acts, tuple(tuple(e) for e in extras), receive)
        assert paired is not None
        got, _, chunk, kind, live = paired
        total = got + (extras[kind][chunk] if kind < 3 else 0) + live * receive
        plain = plain_receive_walk(schedule, pp, v, m, rank, held, pending, extras, receive)
        assert total >= plain, (pp, v, m, rank)
        if schedule == "interleaved-1f1b":
            assert total == plain, (pp, v, m, rank)
        unpaired = plain_moments_peak(schedule, pp, v, m, rank, held, pending, extras)
        assert total <= unpaired + receive_buffers(schedule, pp, v, m)[rank] * receive
        checked += 1
    assert checked > 10


def test_the_worst_moments_hold_the_receives_the_rehearsal_traced():
    """Mixtral's rank 255 (chunk 7's loss backward of the step's last micro-batch): two receive
    buffers alive, as the tracker's trace holds, where the most the rank ever holds is four
    (125 MB the model had over the rehearsal). DeepSeek's rank 2047 (stage 16's weight pass in
    DualPipe-V's cool-down): none; its received boundary tensors at the peak are the inputs in
    flight and the kept output gradients, counted in the activations and the pending set."""
    from parc.memory.model import p2p_buffers

    shape, k = shape_and_knobs()
    stage = per_stage(shape, k)[3]
    assert stage.p2p == 2 * BOUNDARY
    assert p2p_buffers(shape, k, 3, rank_activations(shape, k)[3]) == 4 * BOUNDARY
    from parc.pipeline import compile_text

    result = compile_text((ROOT / DEEPSEEK).read_text(encoding="utf-8"), DEEPSEEK)
    shape, k = shape_of(result.plan), replace(knobs_of(result.plan), device="fake")
    assert per_stage(shape, k)[15].p2p == 0
    assert peak(shape, k)[0] == max(s.total for s in per_stage(shape, k))
