"""The generated MoE layer (model.py), run in one process: host syncs, balancing, capacity.

Each case compiles a small spec, imports the job's model.py and drives one MoE layer:

- host syncs: at most one per MoE layer and micro-batch (the expert split sizes), counted by a
  dispatch mode over the ops that read device data back to the host (`_local_scalar_dense`,
  data-dependent shapes: nonzero, bincount, unique, repeat_interleave without `output_size`)
  plus `Tensor.tolist` / `Tensor.item`, which CPU tensors serve without dispatching;
- routing collapse: from an adversarial router (every token prefers expert 0), balancing
  (aux-free or aux-loss) brings max/mean expert load under BALANCED within STEPS steps; with
  `moe-balance none` it stays collapsed above it;
- capacity: no expert processes more than ceil(factor x copies / experts) copies; dropped
  copies contribute nothing (checked against a hand-written top-k loop);
- the aux loss's gradient reaches the router (checked against torch.autograd on the formula).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from parc.backends import job_files  # noqa: E402
from parc.pipeline import compile_path  # noqa: E402

from .host_syncs import HostSyncs  # noqa: E402

SPEC = """job moe-unit
dp 1 on nodes(1 gpus, nvlink)
model tiny-moe {{
  experts 8
  top-k 2
  {extra}
}}
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 4
  micro-batch 4
}}
"""

STEPS = 200
"""Steps the balancing gets to undo the adversarial router (with router training)."""
BIAS_STEPS = 120
"""... with the aux-free bias alone (it converges in about 80 steps at rate 0.003)."""
TOKENS = 96
BALANCED = 1.25
"""max/mean routed copies per expert counted as balanced (collapsed: experts / top-k = 4)."""


def generated_model(tmp_path: Path, extra: str = ""):
    """model.py of a tiny-moe job (8 experts, top-2) with `extra` in its model block."""
    spec = tmp_path / "moe-unit.par"
    spec.write_text(SPEC.format(extra=extra))
    result = compile_path(str(spec))
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    path = tmp_path / "model.py"
    path.write_text(job_files(result.plan)["model.py"])
    name = f"moe_unit_model_{abs(hash(str(path)))}"
    loader = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module
    loader.loader.exec_module(module)
    return module


def moe_layer(model, seed: int = 0):
    """One MoE layer with model.initial_value's weights (buffers at zero)."""
    torch.manual_seed(seed)
    layer = model.MoE()
    with torch.no_grad():
        for name, param in layer.named_parameters():
            param.copy_(model.initial_value(f"layers.1.feed_forward.{name}", param.shape, seed, torch.device("cpu")))
        for buffer in layer.buffers():
            buffer.zero_()
    return layer


# ---------------------------------------------------------------------------------------------
# Host syncs

def test_the_sync_counter_sees_what_the_old_router_did():
    """The counter is not blind: bincount, tolist and a tensor-valued repeat_interleave (the
    previous router's four syncs) are each counted."""
    chosen = torch.tensor([0, 2, 2, 1])
    with HostSyncs() as syncs:
        counts = torch.bincount(chosen, minlength=4)
        counts.tolist()
        torch.arange(4).repeat_interleave(counts)
        torch.arange(4).repeat_interleave(counts, output_size=4)  # sync-free: not counted
    assert syncs.count == 3, syncs.seen


@pytest.mark.parametrize("extra", ["moe-balance none", "moe-balance aux-free 0.001", "moe-balance aux-loss 0.01",
                                   "capacity-factor 1.25"])
def test_one_host_sync_per_moe_layer_and_micro_batch(tmp_path, extra):
    model = generated_model(tmp_path, extra)
    layer = moe_layer(model)
    x = torch.randn(4, 32, model.HIDDEN, requires_grad=True)
    with HostSyncs() as syncs:
        out = layer(x)
        out.square().mean().backward()
    assert syncs.count == 1, syncs.seen  # forward: the expert split sizes; backward: none
    assert layer.router.weight.grad is not None and layer.experts.w1.grad is not None


# ---------------------------------------------------------------------------------------------
# Routing collapse


def adversarial(layer, model) -> torch.Tensor:
    """Inputs sharing one direction, and a router that sends all of them to expert 0 (and,
    second, expert 1): the collapse balancing has to undo."""
    generator = torch.Generator().manual_seed(7)
    direction = torch.randn(model.HIDDEN, generator=generator)
    direction /= direction.norm()
    x = 0.3 * torch.randn(TOKENS, model.HIDDEN, generator=generator) + direction
    with torch.no_grad():
        # Small random rows keep the tokens' preferences apart (identical tokens could only
        # ever be moved all at once); rows 0 and 1 dominate them.
        layer.router.weight.copy_(0.15 * torch.randn(model.EXPERTS, model.HIDDEN, generator=generator))
        layer.router.weight[0] += 3.0 * direction
        layer.router.weight[1] += 2.5 * direction
    return x


def load_ratio(layer, model, x: torch.Tensor) -> float:
    """max/mean routed copies per expert: 1 balanced, experts / top-k when collapsed."""
    with torch.no_grad():
        logits = torch.nn.functional.linear(x, layer.router.weight).float().softmax(-1)
        if hasattr(layer, "expert_bias"):
            logits = logits + layer.expert_bias
        chosen = logits.topk(model.TOP_K, dim=-1).indices.reshape(-1)
    load = torch.zeros(model.EXPERTS).index_add_(0, chosen, torch.ones(chosen.numel()))
    return float(load.max() / load.mean())


def run_router(layer, model, x: torch.Tensor, steps: int, train: bool) -> list[float]:
    """`steps` steps of the layer on x, each followed by the aux-free bias update when the
    layer has one; with `train`, each step is also an Adam step of a regression task on the
    router (the aux loss, if any, included through the layer's backward). Returns the load
    ratio before every step and after the last."""
    target = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    optimizer = torch.optim.Adam(layer.router.parameters(), lr=2e-2)
    layer.experts.requires_grad_(False)
    ratios = []
    for _ in range(steps):
        ratios.append(load_ratio(layer, model, x))
        if train:
            optimizer.zero_grad()
            (layer(x[None]) - target[None]).square().mean().backward()
            optimizer.step()
        else:
            with torch.no_grad():
                layer(x[None])
        if hasattr(layer, "update_bias"):
            layer.update_bias(layer.load.clone())
    ratios.append(load_ratio(layer, model, x))
    return ratios


def assert_balances(ratios: list[float]) -> None:
    assert min(ratios) < BALANCED, f"max/mean load never fell under {BALANCED}: last {ratios[-5:]}"
    settled = ratios[-10:]  # the sign update dithers around balance, far from the collapse
    assert max(settled) < BALANCED + 0.25, settled


@pytest.mark.parametrize("balance", ["aux-free 0.003", "none"])
def test_aux_free_bias_undoes_a_collapsed_router(tmp_path, balance):
    """The bias update alone (no training) balances the adversarial router; without it the
    same steps leave it collapsed."""
    model = generated_model(tmp_path, f"moe-balance {balance}")
    layer = moe_layer(model)
    x = adversarial(layer, model)
    ratios = run_router(layer, model, x, BIAS_STEPS, train=False)
    assert ratios[0] == pytest.approx(model.EXPERTS / model.TOP_K)  # collapsed at the start
    if balance == "none":
        assert min(ratios) == pytest.approx(model.EXPERTS / model.TOP_K)
    else:
        assert_balances(ratios)


@pytest.mark.slow
@pytest.mark.parametrize("balance", ["aux-loss 0.1", "none"])
def test_aux_loss_undoes_a_collapsed_router(tmp_path, balance):
    """Training with the Switch loss balances the adversarial router; the same training
    without it leaves the router collapsed."""
    model = generated_model(tmp_path, f"moe-balance {balance}")
    layer = moe_layer(model)
    x = adversarial(layer, model)
    ratios = run_router(layer, model, x, STEPS, train=True)
    assert ratios[0] == pytest.approx(model.EXPERTS / model.TOP_K)
    if balance == "none":
        assert min(ratios) > BALANCED + 0.5, ratios[-5:]  # never near the balanced bound
    else:
        assert_balances(ratios)


def test_aux_free_bias_moves_by_the_rate_times_the_sign(tmp_path):
    model = generated_model(tmp_path, "moe-balance aux-free 0.003")
    layer = moe_layer(model)
    load = torch.tensor([10, 0, 4, 4, 4, 4, 4, 2])  # mean 4
    layer.load += 5
    layer.update_bias(load)
    expected = torch.tensor([-1, 1, 0, 0, 0, 0, 0, 1]) * 0.003
    torch.testing.assert_close(layer.expert_bias, expected)
    assert not layer.load.any()
    assert "expert_bias" in layer.state_dict() and "load" not in layer.state_dict()


# ---------------------------------------------------------------------------------------------
# Reference: a hand-written top-k MoE (no sorting, a loop over tokens)


def reference_moe(layer, model, x: torch.Tensor, capacity: int | None) -> torch.Tensor:
    """Token by token in order, top-k by the (biased) scores, gates from the unbiased ones; a
    copy beyond an expert's `capacity` is dropped."""
    probs = torch.nn.functional.linear(x, layer.router.weight).float().softmax(-1)
    scores = probs + layer.expert_bias if hasattr(layer, "expert_bias") else probs
    taken = [0] * model.EXPERTS
    rows = []
    for t in range(x.shape[0]):
        chosen = scores[t].topk(model.TOP_K).indices.tolist()
        gates = probs[t, chosen] / probs[t, chosen].sum()
        row = torch.zeros(model.HIDDEN)
        for e, gate in zip(chosen, gates, strict=True):
            taken[e] += 1
            if capacity is not None and taken[e] > capacity:
                continue
            w1, w2, w3 = layer.experts.w1[e], layer.experts.w2[e], layer.experts.w3[e]
            row = row + gate * ((torch.nn.functional.silu(x[t] @ w1) * (x[t] @ w3)) @ w2)
        rows.append(row)
    return torch.stack(rows)


@pytest.mark.parametrize("factor", [None, 1.0, 0.5])
def test_capacity_drops_the_late_copies_like_a_hand_written_loop(tmp_path, factor):
    model = generated_model(tmp_path, f"capacity-factor {factor}" if factor else "")
    layer = moe_layer(model)
    x = adversarial(layer, model)[:64]  # skewed: experts 0 and 1 overflow
    with torch.no_grad():
        layer.router.weight.mul_(0.3)  # skewed, not degenerate: every expert gets some
        got = layer(x[None])[0]
        capacity = math.ceil(factor * x.shape[0] * model.TOP_K / model.EXPERTS) if factor else None
        want = reference_moe(layer, model, x, capacity)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    if factor:
        full = reference_moe(layer, model, x, None)
        assert not torch.allclose(want, full), "the case drops nothing: it proves nothing"


def test_aux_loss_gradient_is_the_switch_loss(tmp_path):
    """The router's gradient with aux-loss = the gradient without it + that of
    coeff x E x sum_i f_i P_i, written out here with torch.autograd."""
    model = generated_model(tmp_path, "moe-balance aux-loss 0.05")
    layer = moe_layer(model)
    x = torch.randn(1, 48, model.HIDDEN, generator=torch.Generator().manual_seed(1))
    layer(x).sum().backward()
    with_aux = layer.router.weight.grad.clone()
    layer.router.weight.grad = None
    layer.aux_scale = 0.0
    layer(x).sum().backward()
    without = layer.router.weight.grad.clone()
    weight = layer.router.weight.detach().clone().requires_grad_(True)
    probs = torch.nn.functional.linear(x[0], weight).softmax(-1)
    chosen = probs.topk(model.TOP_K, dim=-1).indices.reshape(-1)
    f = torch.zeros(model.EXPERTS).index_add_(0, chosen, torch.ones(chosen.numel())) / chosen.numel()
    (0.05 * model.EXPERTS * (f * probs.mean(0)).sum()).backward()
    torch.testing.assert_close(with_aux - without, weight.grad, rtol=1e-4, atol=1e-7)
