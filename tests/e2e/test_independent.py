"""The generated job against a decoder written here by hand, in one process, with plain tensors.

test_parity.py compares every layout with the generated code run on one rank; if model.py or
the loop were wrong in a way every layout shares, those tests would still pass. This one
rebuilds the tiny dense model from its definition (RMSNorm, rotary positions in rotate-half
form, grouped-query causal attention written out as softmax(q k^T / sqrt(d)) v, SwiGLU, untied
embeddings), the synthetic data from its formula, and the training step from torch's own AdamW,
with the initial weights copied by name from model.initial_value (the weights every layout
starts from). The generated single-process run and a tp 2 x pp 2 x dp 2 run must then agree
with it within the harness's tolerances: losses and gradients of every step. The mixture of
experts is written the same way (`mixture_of_experts`: the router's softmax, top-k with
renormalised gates, every expert computed densely and weighted, the shared expert) and
compared with the generated tiny-moe job in one process and under tp 2 (SP) x dp 2 with ep 2
over dp.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from .harness import LR, STEPS, Run, assert_parity, compile_job, one_of_each_kind, plan_of, train

pytestmark = pytest.mark.e2e


def data(step: int, seed: int, batch: int, seq: int, vocab: int) -> torch.Tensor:
    """The global batch of `step` as docs/runtime.md defines it: sequence r from its own
    generator seeded by (seed, step, r), an arithmetic progression modulo the vocabulary with
    10 % random tokens."""
    rows = []
    for row in range(batch):
        g = torch.Generator().manual_seed(((seed * 1_000_003 + step) * batch + row) % 2**63)
        first = torch.randint(vocab, (1,), generator=g)
        stride = torch.randint(1, 8, (1,), generator=g)
        tokens = (first + stride * torch.arange(seq + 1)) % vocab
        noise = torch.rand(tokens.shape, generator=g) < 0.1
        rows.append(torch.where(noise, torch.randint(vocab, tokens.shape, generator=g), tokens))
    return torch.stack(rows)


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, theta):
    """Rotate-half rotary embedding of x: (batch, heads, seq, head_dim)."""
    half = x.shape[-1] // 2
    freqs = theta ** (-torch.arange(half, dtype=torch.float32) / half)
    angles = torch.arange(x.shape[2], dtype=torch.float32)[:, None] * freqs[None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * angles.cos() - x2 * angles.sin(), x1 * angles.sin() + x2 * angles.cos()], dim=-1)


def swiglu(w: dict, p: str, x: torch.Tensor) -> torch.Tensor:
    return (F.silu(x @ w[p + "w1.weight"].T) * (x @ w[p + "w3.weight"].T)) @ w[p + "w2.weight"].T


def mixture_of_experts(w: dict, p: str, x: torch.Tensor, m) -> torch.Tensor:
    """Top-k routing written densely: every expert computes every token, and token t takes
    sum over its k chosen experts e of gate(t, e) x expert_e(t), the gates being the router's
    fp32 softmax probabilities of the chosen experts renormalised to sum to 1 (no balancing,
    no capacity limit: the spec's `moe-balance none`); plus the shared expert on every token."""
    probs = (x @ w[p + "router.weight"].T).float().softmax(-1)
    gates, chosen = probs.topk(m.TOP_K, dim=-1)
    gates = gates / gates.sum(-1, keepdim=True)
    weight = torch.zeros_like(probs).scatter_add(-1, chosen, gates)  # (batch, seq, experts)
    routed = torch.zeros_like(x)
    for e in range(m.EXPERTS):
        expert = (F.silu(x @ w[p + "experts.w1"][e]) * (x @ w[p + "experts.w3"][e])) @ w[p + "experts.w2"][e]
        routed = routed + weight[..., e:e + 1] * expert
    return routed + swiglu(w, p + "shared_experts.", x)


def decoder_loss(w: dict, tokens: torch.Tensor, m, model) -> torch.Tensor:
    """The tiny decoder, by hand: mean next-token cross-entropy over the batch. Its shape comes
    from the job's module `m`; RoPE's base and the norms' epsilon from the plan's `model` (what the
    spec says), so that a job that computes with other values fails."""
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    batch, seq = inputs.shape
    h = w["tok_embeddings.weight"][inputs]
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()
    for i in range(m.LAYERS):
        p = f"layers.{i}."
        x = rms_norm(h, w[p + "attention_norm.weight"], model.norm_eps)
        q = (x @ w[p + "attention.wq.weight"].T).view(batch, seq, m.HEADS, m.HEAD_DIM).transpose(1, 2)
        k = (x @ w[p + "attention.wk.weight"].T).view(batch, seq, m.KV_HEADS, m.HEAD_DIM).transpose(1, 2)
        v = (x @ w[p + "attention.wv.weight"].T).view(batch, seq, m.KV_HEADS, m.HEAD_DIM).transpose(1, 2)
        q, k = rope(q, model.rope_theta), rope(k, model.rope_theta)
        group = m.HEADS // m.KV_HEADS
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(m.HEAD_DIM)
        attention = scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v
        h = h + attention.transpose(1, 2).reshape(batch, seq, -1) @ w[p + "attention.wo.weight"].T
        x = rms_norm(h, w[p + "ffn_norm.weight"], model.norm_eps)
        if i in getattr(m, "MOE_LAYERS", ()):
            h = h + mixture_of_experts(w, p + "feed_forward.", x, m)
        else:
            h = h + swiglu(w, p + "feed_forward.", x)
    logits = rms_norm(h, w["norm.weight"], model.norm_eps) @ w["output.weight"].T
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def hand_run(job: Path, plan) -> Run:
    """STEPS steps of the hand-written model under torch's AdamW, as a harness Run."""
    spec = importlib.util.spec_from_file_location("tiny_model_definition", job / "model.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    shapes = {"tok_embeddings.weight": (m.VOCAB, m.HIDDEN), "norm.weight": (m.HIDDEN,),
              "output.weight": (m.VOCAB, m.HIDDEN)}
    for i in range(m.LAYERS):
        p = f"layers.{i}."
        shapes |= {p + "attention_norm.weight": (m.HIDDEN,), p + "ffn_norm.weight": (m.HIDDEN,),
                   p + "attention.wq.weight": (m.HEADS * m.HEAD_DIM, m.HIDDEN),
                   p + "attention.wk.weight": (m.KV_HEADS * m.HEAD_DIM, m.HIDDEN),
                   p + "attention.wv.weight": (m.KV_HEADS * m.HEAD_DIM, m.HIDDEN),
                   p + "attention.wo.weight": (m.HIDDEN, m.HEADS * m.HEAD_DIM),
                   }
        if i in getattr(m, "MOE_LAYERS", ()):
            f, shared = p + "feed_forward.", m.SHARED_EXPERTS * m.EXPERT_FFN
            shapes |= {f + "router.weight": (m.EXPERTS, m.HIDDEN),
                       f + "experts.w1": (m.EXPERTS, m.HIDDEN, m.EXPERT_FFN),
                       f + "experts.w3": (m.EXPERTS, m.HIDDEN, m.EXPERT_FFN),
                       f + "experts.w2": (m.EXPERTS, m.EXPERT_FFN, m.HIDDEN),
                       f + "shared_experts.w1.weight": (shared, m.HIDDEN), f + "shared_experts.w3.weight": (shared, m.HIDDEN),
                       f + "shared_experts.w2.weight": (m.HIDDEN, shared)}
        else:
            shapes |= {p + "feed_forward.w1.weight": (m.FFN, m.HIDDEN), p + "feed_forward.w3.weight": (m.FFN, m.HIDDEN),
                       p + "feed_forward.w2.weight": (m.HIDDEN, m.FFN)}
    weights = {name: m.initial_value(name, torch.Size(shape), 0, torch.device("cpu")).requires_grad_()
               for name, shape in shapes.items()}
    optimizer = torch.optim.AdamW(list(weights.values()), lr=float(LR), betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    run = Run(0, "", 0.0)
    t = plan.training
    for step in range(STEPS):
        loss = decoder_loss(weights, data(step, 0, t.global_batch, t.seq_len, m.VOCAB), m, plan.model)
        loss.backward()
        run.records.append({"step": step, "loss": loss.item()})
        run.grads[step] = {name: w.grad.detach().clone() for name, w in weights.items()}
        optimizer.step()
        optimizer.zero_grad()
    return run


@pytest.fixture(scope="module")
def by_hand(workdir):
    return hand_run(compile_job("reference", workdir), plan_of("reference"))


@pytest.mark.parametrize("spec", one_of_each_kind(["reference", "tp2-pp2-dp2-1f1b"], ["reference"]))
def test_generated_job_matches_the_hand_written_decoder(spec, workdir, by_hand):
    assert sorted(by_hand.grads) == list(range(STEPS)) and by_hand.grads[0]
    run = train(compile_job(spec, workdir), plan_of(spec).cluster.world_size)
    assert_parity(run, by_hand)


def test_generated_job_computes_with_the_specs_rope_base_and_norm_epsilon(workdir):
    """Llama 3's RoPE base (500,000) and another epsilon than the default: the hand-written
    decoder takes both from the plan, so a job that kept the defaults (10,000 and 1e-5, as
    parc's job once hard-coded) would fail here."""
    spec = "reference-rope"
    model = plan_of(spec).model
    assert (model.rope_theta, model.norm_eps) == (500000.0, 1e-3)
    job = compile_job(spec, workdir)
    assert_parity(train(job, 1), hand_run(job, plan_of(spec)))


@pytest.fixture(scope="module")
def moe_by_hand(workdir):
    return hand_run(compile_job("reference-moe", workdir), plan_of("reference-moe"))


@pytest.mark.parametrize("spec", one_of_each_kind(["reference-moe", "moe-tp2-ep2-zero1"], ["reference-moe"]))
def test_generated_moe_job_matches_the_hand_written_mixture_of_experts(spec, workdir, moe_by_hand):
    """tiny-moe (4 experts, top-2, one shared expert, layer 0 dense) by hand against the
    generated job in one process and under tp 2 (SP) x dp 2 with ep 2 over dp (zero1):
    losses and the gradients of every parameter (the router's and every expert's included)."""
    assert sorted(moe_by_hand.grads) == list(range(STEPS))
    assert any(".experts." in name for name in moe_by_hand.grads[0])
    run = train(compile_job(spec, workdir), plan_of(spec).cluster.world_size)
    assert set(run.grads[0]) == set(moe_by_hand.grads[0])
    assert_parity(run, moe_by_hand)
