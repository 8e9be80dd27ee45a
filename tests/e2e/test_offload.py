"""Activation offloading in the generated job (`train { offload-activations N }`), against torch.

- The losses and gradients of a run whose first blocks keep their saved activations in host
  memory (`HostOffload` in the generated parallel.py) equal those of the same layout without it:
  offloading moves bytes, not numbers.
- What it moves, the bytes autograd saves in the offloaded blocks for one micro-batch, counted by
  a `torch.autograd.graph.saved_tensors_hooks` pair of this test around those blocks of the job's
  own model.py (parameters and their views excepted, as the job's hook leaves them), equals parc's
  ledger of offloaded bytes (`timing.offload_sizes`, from the memory model's closed forms) within
  1 %: the ledger equals the runtime.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from .harness import LOSS_TOLERANCE, compile_job, in_fresh_interpreter, model_module, plan_of, train

pytestmark = pytest.mark.e2e


def saved_in_offloaded_blocks(job: Path, spec: str) -> int:
    """Bytes autograd saves in the job's first `offload_layers` blocks for one micro-batch (fp32,
    CPU), each storage once, counted by torch's saved-tensor hooks around those blocks."""
    import torch

    plan = plan_of(spec)
    module = model_module(job, f"offload_count_{spec.replace('-', '_')}")
    torch.manual_seed(0)
    net = module.Transformer()
    for p in net.parameters():
        if p.is_floating_point():
            torch.nn.init.normal_(p, std=0.02)
    params = {p.untyped_storage().data_ptr() for p in net.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        if isinstance(t, torch.nn.Parameter) or isinstance(t._base, torch.nn.Parameter) \
                or t.untyped_storage().data_ptr() in params:
            return t
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes() if t.is_floating_point() else t.numel() * t.element_size()
        return t

    for name in list(net.layers)[:plan.training.offload_layers]:
        counter = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        net.layers[name].register_forward_pre_hook(lambda m, a, c=counter: c.__enter__())
        net.layers[name].register_forward_hook(lambda m, a, o, c=counter: c.__exit__(None, None, None))
    tokens = torch.randint(0, plan.model.vocab, (plan.training.micro_batch, plan.training.seq_len))
    logits = net(tokens)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten()).backward()
    return sum(seen.values())


def blocks_that_keep_their_tensors(job: Path) -> list[str]:
    """The blocks of the job's model whose saved tensors a hook of this test still sees after the
    generated `apply_activation_offloading` ran: an inner `saved_tensors_hooks` (the job's
    HostOffload) takes every tensor its block saves, so the offloaded blocks are the ones missing."""
    import importlib.util
    import sys

    import torch

    sys.path.insert(0, str(job))  # parallel.py imports the job's model.py as `model`
    try:
        spec = importlib.util.spec_from_file_location("parallel", job / "parallel.py")
        parallel = sys.modules["parallel"] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
        spec.loader.exec_module(parallel)
    finally:
        sys.path.remove(str(job))
    net = parallel.model.Transformer()
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.02)
    parallel.apply_activation_offloading(net)
    current: list[str] = []
    seen: set[str] = set()
    for name, block in net.layers.items():
        block.register_forward_pre_hook(lambda m, a, name=name: current.append(name), prepend=True)
        block.register_forward_hook(lambda m, a, o: current.pop() and None)  # None: keep the output

    def pack(t):
        if current and not isinstance(t, torch.nn.Parameter) and not isinstance(t._base, torch.nn.Parameter):
            seen.add(current[-1])
        return t

    tokens = torch.randint(0, 256, (2, 32))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        net(tokens).float().sum().backward()
    return sorted(seen, key=int)


def dropped_graph_outlives(job: Path) -> bool:
    """Whether a tensor an op saves of its own output (exp saves its result) outlives its graph
    dropped without a backward, under the job's HostOffload on CPU."""
    import gc
    import importlib.util
    import sys
    import weakref

    import torch

    sys.path.insert(0, str(job))
    try:
        spec = importlib.util.spec_from_file_location("parallel", job / "parallel.py")
        parallel = sys.modules["parallel"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(parallel)
    finally:
        sys.path.remove(str(job))
    x = torch.randn(1000, requires_grad=True)
    with parallel.HostOffload():
        e = (x * 2).exp()
        f = e * 3
    ref = weakref.ref(e)
    del e, f
    gc.collect()
    return ref() is not None


def test_a_dropped_graph_frees_what_the_hook_kept(workdir):
    """The hook hands back a CPU tensor detached: packed with its grad_fn, an op's saved output
    holds the op in a cycle, and a graph dropped without its backward (the pipeline drops some)
    stayed alive (the rehearsal of tiny read 171,520 bytes still held after the step)."""
    job = compile_job("offload", workdir)
    assert in_fresh_interpreter(dropped_graph_outlives, job) is False


def test_the_generated_hook_takes_the_offloaded_blocks_tensors(workdir):
    job = compile_job("offload", workdir)
    assert in_fresh_interpreter(blocks_that_keep_their_tensors, job) == [str(i) for i in range(3, 8)]


def test_the_pack_hook_sees_the_ledgers_bytes(workdir):
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of

    job = compile_job("offload", workdir)
    plan = plan_of("offload")
    knobs = replace(knobs_of(plan, "torch"), precision="fp32", device="cpu")
    sizes = timing.offload_sizes(shape_of(plan), knobs, 0)
    ledger = sum(sum(each) for _, _, each in sizes)
    assert [len(each) for _, _, each in sizes] == [3]
    counted = in_fresh_interpreter(saved_in_offloaded_blocks, job, "offload")
    assert counted == pytest.approx(ledger, rel=0.01)


def assert_same_training(offloaded, plain) -> None:
    """Offloading moves saved activations to the host and back, bit for bit: the same losses and
    gradients as the same layout without it."""
    assert sorted(offloaded.losses) == sorted(plain.losses) and offloaded.losses
    for step, loss in offloaded.losses.items():
        assert abs(loss - plain.losses[step]) <= LOSS_TOLERANCE, (step, loss, plain.losses[step])
    assert offloaded.grads
    for step, grads in offloaded.grads.items():
        assert grads
        for name, g in grads.items():
            assert (g - plain.grads[step][name]).abs().max().item() <= 1e-6, (step, name)


def test_offloading_on_one_rank_keeps_the_losses_and_gradients(workdir, reference):
    """The fast case of the kind (the default run): offload.par is the reference's model and batch
    on one rank with 3 of its 8 blocks offloading."""
    job = compile_job("offload", workdir)
    assert "apply_activation_offloading(" in (job / "parallel.py").read_text()
    assert_same_training(train(job, 1).check(), reference)


@pytest.mark.long
def test_offloading_keeps_the_losses_and_gradients(workdir):
    """Under tp 2 x pp 2 x dp 2 (sequence parallel, 1F1B, ZeRO-1): two 8-rank runs."""
    plain = train(compile_job("tp2-pp2-dp2-1f1b", workdir), 8).check()
    job = compile_job("tp2-pp2-dp2-offload", workdir)
    assert "apply_activation_offloading(part)" in (job / "parallel.py").read_text()
    assert_same_training(train(job, 8).check(), plain)
