"""GEMM operand bytes: the ledger's HBM count against the matrix products the running model issues.

Each case compiles a spec of tests/e2e/specs, imports the generated job's model.py and runs one
micro-batch forward and backward in-process (CPU, fp32) under a `TorchDispatchMode` that records
every `mm`, `addmm` and `bmm` torch dispatches, with the sizes of its input and output tensors as
they reach the kernel. The ledger (`timing.rank_steps(...).ledger`, `hbm.py`'s per-layer closed
forms) is built from the plan alone; nothing is read from the job or from the recording to build it.

The job runs in fp32 here, the ledger counts the runtime's bf16 GEMMs (2 bytes an element): the
comparison is in elements (recorded bytes / 4 against ledger bytes / 2), exact within 1e-9. The
recorded products are the job's own: a linear layer per projection (Q, K, V apart, SwiGLU's gate
and up apart), every local expert's product on its rows (an expert that gets no rows still reads
its weights), the router, the output layer; each backward an input-gradient and a
weight-gradient product.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from .harness import compile_job, plan_of

pytestmark = pytest.mark.e2e

TIGHT = 1e-9


def recorded_gemm_elements(job: Path, plan) -> tuple[float, int]:
    """(elements read and written by every matrix product of one micro-batch, products seen)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    products = {aten.mm.default, aten.addmm.default, aten.bmm.default}

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.elements = 0
            self.calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in products:
                self.calls += 1
                self.elements += sum(a.numel() for a in args if isinstance(a, torch.Tensor)) + out.numel()
            return out

    spec = importlib.util.spec_from_file_location(f"hbm_of_{job.name.replace('-', '_')}", job / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    net = module.Transformer()
    for p in net.parameters():
        if p.is_floating_point():
            torch.nn.init.normal_(p, std=0.02)
    tokens = torch.randint(0, plan.model.vocab, (plan.training.micro_batch, plan.training.seq_len))
    recorder = Recorder()
    with recorder:
        logits = net(tokens)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())
        loss.backward()
    assert next(net.parameters()).dtype == torch.float32
    return float(recorder.elements), recorder.calls


def ledger_gemm_bytes(plan) -> float:
    """The ledger's GEMM HBM bytes of one micro-batch on the plan's (only) rank."""
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    hw = timing.hardware_of(plan)
    knobs = knobs_of(plan, "torch")
    _, steps = timing.rank_steps(shape_of(plan), knobs, hw, timing.geometry_of(plan, hw), sw=software_of(plan))
    assert len(steps) == 1
    ledger = next(iter(steps.values())).ledger
    assert knobs.recompute == "none"  # the in-process run recomputes nothing
    return ledger.hbm_bytes("gemm") / knobs.microbatches


@pytest.mark.parametrize("spec", ["reference", "reference-moe"])
def test_ledger_gemm_bytes_equal_the_products_torch_dispatches(spec, tmp_path):
    """Dense (GQA, SwiGLU) and MoE (router, top-2 routed experts, a shared expert, a dense first
    layer): every product's operands and result, forward and backward."""
    plan = plan_of(spec)
    assert plan.cluster.world_size == 1
    elements, calls = recorded_gemm_elements(compile_job(spec, tmp_path), plan)
    assert calls > 0 and elements > 0
    assert ledger_gemm_bytes(plan) / 2 == pytest.approx(elements, rel=TIGHT)
