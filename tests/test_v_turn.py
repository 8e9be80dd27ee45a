"""The turn of a V schedule (zbv, dualpipe-v) and what torch's split backward keeps per micro-batch.

The last pp rank holds stages pp - 1 and pp and hands stage pp its input on the rank
(`PipelineStage.set_local_fwd_input`: a detached view of stage pp - 1's output, the same
storage). Between a micro-batch's input pass (`stage_backward_input`, retain_graph=True) and its
weight pass, torch keeps the output gradients the weight pass starts from, and the stage input's
gradient (set as the input's `.grad`, the inputs kept in the stage's backward state); on the first
stage it skips the input pass altogether.

The hand counts below are read from the rehearsal's histograms at the peak of
tests/data/specs/rehearse-dualpipe.par's rank 7 (pp rank 3: stages 3 and 4, inside the first
weight pass, two micro-batches held and pending on each chunk), every storage named by the op
that made it (docs/memory-model.md, "DualPipe-V's turn of the V, re-traced").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from parc.memory import knobs_of, per_stage, shape_of
from parc.memory import schedules as S
from parc.memory.model import rank_activations, v_turn
from parc.pipeline import compile_text

ROOT = Path(__file__).resolve().parent.parent
SMALL = "tests/data/specs/rehearse-dualpipe.par"


def _micro_batch_walk(schedule: str, pp: int, m: int, rank: int):
    """Each chunk's held micro-batches (by index) after every action: forwards and backwards in
    micro-batch order per chunk; a weight pass takes the chunk's oldest pending micro-batch."""
    forwards, backwards = [0, 0], [0, 0]
    held: list[set[int]] = [set(), set()]
    pending: list[list[int]] = [[], []]
    for kind, chunk in S.actions(schedule, pp, 2, m, rank):
        if kind == S.F:
            held[chunk].add(forwards[chunk])
            forwards[chunk] += 1
        elif kind == S.B:
            held[chunk].discard(backwards[chunk])
            backwards[chunk] += 1
        elif kind == S.I:
            pending[chunk].append(backwards[chunk])
            backwards[chunk] += 1
        else:
            held[chunk].discard(pending[chunk].pop(0))
        yield held


@pytest.mark.parametrize("schedule", ["zbv", "dualpipe-v"])
def test_at_the_turn_every_micro_batch_of_the_second_chunk_is_held_by_the_first(schedule):
    """Why the second chunk's input is counted with the first chunk: the storage lives while
    either holds its micro-batch, and the second never holds one the first does not. Walked
    micro-batch by micro-batch on the action orders tests/test_memory_schedules.py holds equal
    to torch's."""
    walked = 0
    for pp in (2, 3, 4, 8, 16):
        for m in sorted({2 * pp, 2 * pp + 3, 4 * pp}):
            rank = pp - 1
            assert v_turn(schedule, pp, rank) and not v_turn(schedule, pp, rank - 1)
            for held in _micro_batch_walk(schedule, pp, m, rank):
                assert held[1] <= held[0], (pp, m, held)
                walked += 1
    assert walked > 1000


def _small():
    plan = compile_text((ROOT / SMALL).read_text(encoding="utf-8"), SMALL).plan
    return shape_of(plan), knobs_of(plan)


B = 64 * 256 * 2
"""rehearse-dualpipe's boundary tensor: seq 64 x hidden 256, bf16 (32,768 bytes)."""
FFN = 64 * 512 * 2
"""One SwiGLU projection's output (w1's or w3's): seq 64 x ffn 512, bf16."""


@pytest.mark.parametrize("device", ["fake", "cuda"])
def test_the_turns_peak_state_is_the_hand_count(device):
    """Rank 3 of rehearse-dualpipe (pp 4, 8 micro-batches, one layer per stage, full
    recomputation). Its worst state is the end of the input passes: two micro-batches held on
    each chunk, both pending. By hand, per micro-batch:

    - held on both chunks: stage 3's received input (its block input), stage 3's output (=
      stage 4's input, one storage), stage 4's output: 3 boundary tensors (the model counted 4);
    - pending on stage 3: q, k, v and o's output gradients (4 B), w1's and w3's (2 FFN), w2's
      (its output gradient: stage 4's input gradient, B), the two norms' (2 B; 2 x 2 B in fp32
      under the CPU's composite RMSNorm), its own input gradient (B);
    - pending on stage 4: the same without the input gradient, which is stage 3's output
      gradient above.

    Rehearsed (the histogram): 21,651,976 bytes at the peak; each input pass adds 4 fp32
    norm-sized and 5 boundary tensors (425,984 bytes; stage 3 one more than stage 4, whose input
    gradient is stage 3's output gradient)."""
    shape, k = _small()
    k = replace(k, device=device)
    norms = 2 * (2 * B if device == "fake" else B)
    stage3 = 4 * B + 2 * FFN + B + norms + B
    stage4 = 4 * B + 2 * FFN + B + norms
    peak_state = ((2, 2), (2, 2))
    assert any(state[:2] == peak_state for state in S.peak_states(k.schedule, k.pp, 2, k.microbatches, 3))
    expected = 2 * 3 * B + 2 * stage3 + 2 * stage4
    turn = rank_activations(shape, k)[3]
    assert [c.held for c in turn.chunks] == [2 * B, B]
    assert [c.pending for c in turn.chunks] == [stage3, stage4]
    assert per_stage(shape, k)[3].activations == expected
    if device == "fake":
        assert expected == 1_966_080


def test_the_first_stage_keeps_nothing_between_its_passes():
    """torch skips the input pass of the first stage (`backward_one_chunk`: `if not
    self.is_first`) and runs a full backward in its weight pass: no output gradients wait."""
    shape, k = _small()
    first = rank_activations(shape, k)[0]
    assert first.chunks[0].pending == 0
    assert first.chunks[1].pending > 0  # stage 7 (the loss) splits like any other
