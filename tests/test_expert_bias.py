"""The routed experts' eager elementwise work of gpt-oss (issue 14). Megatron-Core's `TEGroupedMLP`
adds the experts' fc2 bias in eager PyTorch, one expert after another (`_apply_bias`,
megatron/core/transformer/moe/experts.py), when the model has linear biases (gpt-oss through
Megatron-Bridge: `add_bias_linear = True`), and clamps the GLU input outside its compiled
activation (`weighted_bias_quick_geglu_impl`, megatron/core/fusions/fused_bias_geglu.py) when the
model sets a clamp (gpt-oss: 7.0); under YaRN with a concentration factor other than 1 (gpt-oss:
factor 32) its RoPE runs unfused (`_apply_rotary_pos_emb_bshd`). parc charges them as
`timing.EXPERT_BIAS_PASSES` / `EXPERT_BIAS_KERNELS`, `EXPERT_CLAMP_PASSES` / `EXPERT_CLAMP_KERNELS`
and `UNFUSED_ROPE_BYTES` / `UNFUSED_ROPE_KERNELS` where `Software.expert_bias`, `expert_clamp` and
`rope_unfused` are set.

Checked against references the model did not produce: torch's own dispatcher counts the kernels
and bytes of Megatron-Core's expression, forward and backward; the layer's extra time is counted
here by hand from the shapes; the reader sets the fact on the rows whose model states it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from parc import timing
from parc.calibration import DEFAULT
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

GPT_OSS_LIKE = """job g
dp 8 on nodes(8 gpus, nvlink)
ep 8 over dp
model {
  layers 4, hidden 2880, ffn 2880, heads 64, kv-heads 8, vocab 201088
  head-dim 64
  activation swiglu, norm rmsnorm, position rope, tied-embeddings off
  experts 128, top-k 4, expert-ffn 2880, shared-experts 0, moe-layers all
}
hardware { gpu h100-sxm }
target megatron
train { seq 4096, global-batch 16, micro-batch 1 }
"""
"""gpt-oss-120b's layer shapes (hidden 2,880, 128 experts, top-4, expert FFN 2,880) on 4 layers."""


def megatron_apply_bias(out, biases, probs, tokens_per_expert):
    """Megatron-Core's `TEGroupedMLP._apply_bias`, transcribed (Megatron-LM 23265d2)."""
    import torch

    shape = out.shape
    return torch.cat([t + b * p for t, b, p in zip(torch.split(out.view(-1, shape[-1]), tokens_per_expert),
                                                    biases, torch.split(probs, tokens_per_expert), strict=True)]
                     ).view(shape).to(out.dtype)


def dispatched(fn):
    """(kernels, bytes read and written) of the non-view aten ops `fn` runs, by torch's dispatcher."""
    from torch.utils._python_dispatch import TorchDispatchMode

    views = {"view", "split", "split_with_sizes", "slice", "detach", "_unsafe_view", "alias"}

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.kernels = 0
            self.bytes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            import torch

            out = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ not in views:
                flat = [a for a in args if isinstance(a, torch.Tensor)]
                flat += [x for a in args if isinstance(a, (list, tuple)) for x in a if isinstance(x, torch.Tensor)]
                flat += [t for t in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(t, torch.Tensor)]
                self.kernels += 1
                self.bytes += sum(t.numel() * t.element_size() for t in flat)
            return out

    with Count() as count:
        fn()
    return count.kernels, count.bytes


@pytest.mark.parametrize("local", [2, 16])
def test_torch_counts_megatrons_bias_as_the_constants_say(local):
    torch = pytest.importorskip("torch")
    h, per = 512, 128
    rows = local * per
    out = torch.randn(rows, h, dtype=torch.bfloat16, requires_grad=True)
    biases = [torch.randn(h, dtype=torch.bfloat16, requires_grad=True) for _ in range(local)]
    probs = torch.rand(rows, 1, dtype=torch.bfloat16, requires_grad=True)
    result = {}

    def forward():
        result["y"] = megatron_apply_bias(out, biases, probs, [per] * local)

    kernels_f, bytes_f = dispatched(forward)
    y = result["y"]
    grad = torch.ones_like(y)
    kernels_b, bytes_b = dispatched(lambda: y.backward(grad))
    (per_f, once_f), (per_b, once_b) = timing.EXPERT_BIAS_KERNELS
    assert (kernels_f, kernels_b) == (per_f * local + once_f, per_b * local + once_b)
    # passes over the bf16 copies: the gates and the biases add under 1 % at h = 512
    passes = (bytes_f / (2 * rows * h), bytes_b / (2 * rows * h))
    assert passes[0] == pytest.approx(timing.EXPERT_BIAS_PASSES[0], rel=0.01)
    assert passes[1] == pytest.approx(timing.EXPERT_BIAS_PASSES[1], rel=0.01)


def megatron_clamp(x, clamp_value):
    """The eager prelude of Megatron-Core's `weighted_bias_quick_geglu_impl`, transcribed
    (Megatron-LM 23265d2)."""
    import torch

    x_glu, x_linear = x.chunk(2, -1)
    return torch.cat((x_glu.clamp(min=None, max=clamp_value), x_linear.clamp(min=-clamp_value, max=clamp_value)),
                     -1)


def test_torch_counts_megatrons_clamp_as_the_constants_say():
    torch = pytest.importorskip("torch")
    rows, f = 1024, 512
    x = torch.randn(rows, 2 * f, dtype=torch.bfloat16, requires_grad=True)
    result = {}

    def forward():
        result["y"] = megatron_clamp(x, 7.0)

    kernels_f, bytes_f = dispatched(forward)
    y = result["y"]
    grad = torch.ones_like(y)
    kernels_b, bytes_b = dispatched(lambda: y.backward(grad))
    assert (kernels_f, kernels_b) == timing.EXPERT_CLAMP_KERNELS
    assert bytes_f / (2 * rows * 2 * f) == pytest.approx(timing.EXPERT_CLAMP_PASSES[0], rel=0.01)
    assert bytes_b / (2 * rows * 2 * f) == pytest.approx(timing.EXPERT_CLAMP_PASSES[1], rel=0.01)


@pytest.mark.parametrize("ep", [1, 8])
def test_the_layer_pays_the_clamp_bytes_and_kernels_counted_by_hand(ep):
    plan = compile_text(GPT_OSS_LIKE, path="g.par", checks=False).plan
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    case = timing.LayerCase(True, 1, False, 1, "ring", 4096, 1, ep, "bf16", "flash-te", "fused", balanced=True)
    plain = timing.layer_work(shape, case, hw, DEFAULT)
    clamped = timing.layer_work(shape, replace(case, expert_clamp=True), hw, DEFAULT)
    copies, width = 4096 * 4, 2 * 2880  # the fc1 output: gate and linear halves of the expert FFN
    # forward: two clamps read and write a half each, cat reads and writes the whole; backward:
    # masks (0.75 each: ge, le, and, le), two where (1.25 each), cat of the halves' gradients (2)
    bytes_f = 2 * copies * width * (1 + 1 + 2)
    bytes_b = 2 * copies * width * (4 * 0.75 + 2 * 1.25 + 2)
    rate = hw.hbm * DEFAULT.hbm_efficiency
    assert clamped.memory_f - plain.memory_f == pytest.approx(bytes_f / rate + 3 * DEFAULT.kernel_overhead)
    assert clamped.memory_b - plain.memory_b == pytest.approx(bytes_b / rate + 9 * DEFAULT.kernel_overhead)
    # `--recompute-modules moe_act` runs the clamp's forward again
    assert clamped.moe_act_again - plain.moe_act_again == pytest.approx(bytes_f / rate + 3 * DEFAULT.kernel_overhead)


def megatron_unfused_rope(t, freqs, mscale):
    """Megatron-Core's `_apply_rotary_pos_emb_bshd` with `_rotate_half`, transcribed (Megatron-LM
    23265d2, not interleaved, no latent attention)."""
    import torch

    rot_dim = freqs.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
    sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
    x1, x2 = torch.chunk(t, 2, dim=-1)
    t = (t * cos_) + (torch.cat((-x2, x1), dim=-1) * sin_)
    return torch.cat((t, t_pass), dim=-1)


def test_torch_counts_megatrons_unfused_rope_as_the_constants_say():
    torch = pytest.importorskip("torch")
    s, heads, d = 256, 256, 64
    t = torch.randn(s, 1, heads, d, dtype=torch.bfloat16, requires_grad=True)
    freqs = torch.randn(s, 1, 1, d)
    result = {}

    def forward():
        result["y"] = megatron_unfused_rope(t, freqs, 1.3466)

    kernels_f, bytes_f = dispatched(forward)
    y = result["y"]
    grad = torch.ones_like(y)
    kernels_b, bytes_b = dispatched(lambda: y.backward(grad))
    assert (kernels_f, kernels_b) == timing.UNFUSED_ROPE_KERNELS
    # bytes per element beyond the fused kernel's 4 forward and 8 backward; the per-position cos
    # and sin add 1 / heads
    assert bytes_f / t.numel() - 4 == pytest.approx(timing.UNFUSED_ROPE_BYTES[0], rel=0.02)
    assert bytes_b / t.numel() - 8 == pytest.approx(timing.UNFUSED_ROPE_BYTES[1], rel=0.02)


def test_the_layer_pays_the_unfused_rope_counted_by_hand():
    plan = compile_text(GPT_OSS_LIKE, path="g.par", checks=False).plan
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    case = timing.LayerCase(True, 1, False, 1, "ring", 4096, 1, 8, "bf16", "flash-te", "fused", balanced=True)
    plain = timing.layer_work(shape, case, hw, DEFAULT)
    unfused = timing.layer_work(shape, replace(case, rope_unfused=True), hw, DEFAULT)
    elements = 4096 * (64 * 64 + 8 * 64)  # queries and keys of the micro-batch
    rate = hw.hbm * DEFAULT.hbm_efficiency
    # 12 passes of 2 bytes forward and 14 backward, less the fused kernel's 2 and 4; 24 and 14
    # kernels for the two calls, less the fused one
    assert unfused.memory_f - plain.memory_f == pytest.approx(elements * 2 * (12 - 2) / rate
                                                              + 23 * DEFAULT.kernel_overhead)
    assert unfused.memory_b - plain.memory_b == pytest.approx(elements * 2 * (14 - 4) / rate
                                                              + 13 * DEFAULT.kernel_overhead)


def test_yarn_concentration_is_megatrons():
    import published

    assert published.yarn_concentration({}) == 1.0
    assert published.yarn_concentration({"yarn_factor": 32}) == pytest.approx(1 + 0.1 * 3.4657359, rel=1e-6)
    # DeepSeek-V3's YaRN (factor 40, mscale = mscale_all_dim = 1): concentration 1, fused RoPE
    assert published.yarn_concentration({"yarn_factor": 40, "yarn_mscale": 1.0, "yarn_mscale_all_dim": 1.0}) == 1.0


@pytest.mark.parametrize("ep", [1, 8])
def test_the_layer_pays_the_bias_bytes_and_kernels_counted_by_hand(ep):
    plan = compile_text(GPT_OSS_LIKE, path="g.par", checks=False).plan
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    case = timing.LayerCase(True, 1, False, 1, "ring", 4096, 1, ep, "bf16", "flash-te", "fused", balanced=True)
    plain = timing.layer_work(shape, case, hw, DEFAULT)
    biased = timing.layer_work(shape, replace(case, expert_bias=True), hw, DEFAULT)
    copies = 4096 * 4  # balanced: every routed copy of the micro-batch lands on this GPU's experts
    local = 128 // ep
    h = 2880
    # forward: b * p writes a bias row per copy, the add reads it and the output and writes, cat
    # reads and writes; backward: grad * p and its sum, grad * b and its sum, split's cat
    bytes_f = 2 * copies * h * (1 + 3 + 2)
    bytes_b = 2 * copies * h * (3 + 3 + 2)
    rate = hw.hbm * DEFAULT.hbm_efficiency
    assert biased.memory_f - plain.memory_f == pytest.approx(bytes_f / rate + (2 * local + 1) * DEFAULT.kernel_overhead)
    assert biased.memory_b - plain.memory_b == pytest.approx(bytes_b / rate + (4 * local + 2) * DEFAULT.kernel_overhead)
    assert biased.gemm == plain.gemm and biased.attention_f == plain.attention_f


def test_gpt_oss_eager_passes_make_its_prediction_slower():
    import fidelity

    rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml")
    row = next(r for r in rows if r.id == "bridge2604_h100_gpt_oss_120b_bf16")
    assert row.software.expert_bias
    p = fidelity.prepare(row)
    from dataclasses import replace

    assert row.software.expert_clamp
    assert row.software.rope_unfused
    without = replace(row, software=replace(row.software, expert_bias=False, expert_clamp=False, rope_unfused=False))
    assert fidelity.predicted_step(row, p, DEFAULT).step > fidelity.predicted_step(without, p, DEFAULT).step


def test_the_reader_sets_the_fact_where_the_model_states_it():
    import published

    seen = {True: 0, False: 0}
    for name in ("megatron_bridge_25_11.yaml", "megatron_bridge_releases_moe.yaml"):
        for entry in load_yaml((ROOT / "benchmarks" / "data" / name).read_text()):
            run = published.row_spec(entry)
            if not isinstance(run, published.Run):
                continue
            fused = "cutedsl_fused_grouped_mlp" in ((entry.get("recipe") or {}).get("other") or ())
            gpt_oss = entry["model"]["name"] == "gpt-oss-120b"
            assert run.software.expert_bias == (gpt_oss and not fused), entry["id"]
            assert run.software.expert_clamp == (gpt_oss and not fused), entry["id"]
            assert run.software.rope_unfused == gpt_oss, entry["id"]  # the fused MLP leaves RoPE alone
            seen[run.software.expert_bias] += 1
    assert seen[True] >= 15 and seen[False] >= 40


def test_the_hbm_ledger_holds_the_bias_bytes():
    from parc import hbm

    plan = compile_text(GPT_OSS_LIKE, path="g.par", checks=False).plan
    shape = shape_of(plan)
    case = timing.LayerCase(True, 1, False, 1, "ring", 4096, 1, 8, "bf16", "flash-te", "fused")
    plain, biased = hbm.layer_bytes(shape, case), hbm.layer_bytes(shape, replace(case, expert_bias=True))
    copies, h = 4096 * 4, 2880
    assert biased.memory_f - plain.memory_f == 2 * copies * h * 6
    assert biased.memory_b - plain.memory_b == 2 * copies * h * 8
    clamped = hbm.layer_bytes(shape, replace(case, expert_clamp=True))
    assert clamped.memory_f - plain.memory_f == 2 * copies * 2 * h * 4
    assert clamped.memory_b - plain.memory_b == 2 * copies * 2 * h * 7.5


def test_moe_splits_parts_still_add_up_to_the_gpt_oss_layer():
    import moe_split

    parts, work, row, _ = moe_split.layer_of("bridge2604_gb200_gpt_oss_120b_bf16",
                                             ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml")
    names = [p.name for p in parts]
    assert "expert output bias (eager)" in names and "expert GLU clamp (eager)" in names
    assert "RoPE unfused, beyond the fused kernel" in names
    forward, backward = moe_split.reconcile(parts, work)
    assert forward == pytest.approx(0.0, abs=1e-12) and backward == pytest.approx(0.0, abs=1e-12)
