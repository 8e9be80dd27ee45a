"""torch's context-parallel attention backward, as torchtitan runs it, in the memory model
(issue 15: the full-recomputation gap at cp).

- torch 2.13's own `_templated_ring_attention_backward` (rotate method allgather), run on every
  rank of a fake process group under torch's `MemTracker` with K and V repeated to the query
  heads (torchtitan's `repeat_kv`), peaks at what `activations.torch_cp_backward_transient`
  counts (the kernel is a stand-in returning gradients shaped as flash attention's);
- the term at Llama 3 405B's tp 8 x cp 8 layout at 256K tokens is a hand count;
- torchtitan's SDPA saves K and V repeated to every query head (`full`), its selective policy
  wv's output before the repeat; parc's own job keeps its counts.
"""

from __future__ import annotations

import dataclasses

import pytest
from parc.memory import shape_of
from parc.memory.activations import Tokens, _tokens, torch_cp_backward_transient, torch_layer
from parc.memory.inputs import Knobs, knobs_of
from parc.pipeline import compile_text
from parc.targets import memory_runtime

BATCH, HEADS, ROWS, DIM = 1, 8, 64, 16
"""One cp rank's local block: its two zig-zag chunks of 32 rows."""


def torch_backward_peaks(cp: int) -> list[int]:
    """Per rank, the bytes torch's context-parallel backward allocates beyond its inputs at its
    worst moment (torch's MemTracker on CPU; the collectives in a fake process group)."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.distributed.tensor.experimental._context_parallel import _attention as cp_attention
    from torch.testing._internal.distributed.fake_pg import FakeStore

    def flash_backward(query, key, value, out, logsumexp, is_causal=False, **kwargs):
        return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)

    def block():  # (batch, seq, heads, dim) transposed, as torchtitan hands SDPA its inputs
        return torch.randn(BATCH, ROWS, HEADS, DIM, dtype=torch.bfloat16).transpose(1, 2)

    peaks = []
    for rank in range(cp):
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=cp)
        try:
            q, k, v, out, grad_out = (block() for _ in range(5))
            lse = torch.randn(BATCH, HEADS, ROWS)
            tracker = MemTracker()
            tracker.track_external(q, k, v, out, lse, grad_out)
            cpu = torch.device("cpu")
            base = tracker.get_tracker_snapshot("current")[cpu]["Total"]
            with tracker:
                cp_attention._templated_ring_attention_backward(
                    dist.group.WORLD, 2, flash_backward, grad_out, "grad_out", q, k, v, out, lse, is_causal=True)
            peaks.append(tracker.get_tracker_snapshot("peak")[cpu]["Total"] - base)
        finally:
            dist.destroy_process_group()
    return peaks


def local_tokens(cp: int) -> Tokens:
    width = HEADS * DIM
    return Tokens(tokens=BATCH * ROWS, routed=BATCH * ROWS, sp=1, q=width, kv=width, o=width, heads=HEADS)


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_the_backward_transient_is_what_torchs_own_code_allocates(cp):
    peaks = torch_backward_peaks(cp)
    assert len(peaks) == cp and min(peaks) > 0
    model = torch_cp_backward_transient(Knobs(tp=1, pp=1, dp=1, cp=cp, model_code="torchtitan"), local_tokens(cp), 2)
    assert model == pytest.approx(max(peaks), rel=0.04), (model, peaks)


def test_no_term_for_parcs_own_operators_nor_without_cp():
    assert torch_cp_backward_transient(Knobs(tp=1, pp=1, dp=1, cp=8), local_tokens(8), 2) == 0
    assert torch_cp_backward_transient(Knobs(tp=1, pp=1, dp=1, cp=1, model_code="torchtitan"), local_tokens(1), 2) == 0


SPEC_405B = """job cp8
tp 8 x cp 8 x dp 1 x pp 8 on nodes(8 gpus, nvlink)
model llama3-405b
hardware { gpu h100-sxm }
train {
  seq 262144
  global-batch 8
  micro-batch 1
  precision bf16
  optimizer adamw
  recompute full
}
tp { sequence-parallel on }
pp { schedule 1f1b }
cp { flavour all-gather }
dp { sharding zero2 }
TARGET
"""


def _knobs(target: str) -> tuple:
    plan = compile_text(SPEC_405B.replace("TARGET", target), path="cp8.par").plan
    return shape_of(plan), knobs_of(plan, memory_runtime(plan.target))


def test_405b_at_cp_8_hand_count():
    shape, k = _knobs("target torchtitan")
    assert k.model_code == "torchtitan"
    # one local query-sized bf16 tensor: 262,144 / 8 tokens x 128 / 8 heads x 128 = 128 MiB
    q_bytes = 2 * (262144 // 8) * (128 // 8) * 128
    assert q_bytes == 128 << 20
    assert torch_cp_backward_transient(k, _tokens(shape, k), 2) == (2 * 8 + 22) * q_bytes  # 4.75 GiB
    shape, parc = _knobs("target torch")
    assert parc.model_code == "parc" and torch_cp_backward_transient(parc, _tokens(shape, parc), 2) == 0


def test_torchtitan_saves_k_and_v_repeated_to_the_query_heads():
    plan = compile_text(SPEC_405B.replace("TARGET", "target torchtitan").replace("cp 8 x ", "")
                        .replace("cp { flavour all-gather }\n", "").replace("seq 262144", "seq 8192"),
                        path="cp1.par").plan
    shape, k = shape_of(plan), knobs_of(plan, memory_runtime(plan.target))
    assert k.cp == 1 and k.model_code == "torchtitan"
    parc = Knobs(**{**{f.name: getattr(k, f.name) for f in dataclasses.fields(k) if f.init}, "model_code": "parc"})
    tokens = 8192  # micro-batch 1, cp 1
    # per token K and V at 16 query heads of 128 instead of 1 kv head of 128, bf16, each
    extra = tokens * 2 * 2 * (16 - 1) * 128
    assert torch_layer(shape, k, False, "none").full - torch_layer(shape, parc, False, "none").full == extra
    # torchtitan 0.3's selective policy keeps its fused wqkv's output, before the repeat: per token
    # q/8 and 2 kv/8; the flash output, F/8 (w1), w2's partial sums (h), two reduce-scatters, the
    # block input (h/8) and the fp32 log-sum-exp of 16 heads
    per_token = 2 * (2048 + 2 * 128 + 2048 + 6656 + 16384 + 2 * 2048 + 2048) + 16 * 4
    assert torch_layer(shape, k, False, "selective").saved == tokens * per_token == 549_978_112
