"""FLOPs per rank: the time model's ledger against torch's own counter on the generated job.

Each case compiles a spec of tests/e2e/specs, imports the generated job's model.py and runs one
micro-batch forward and backward in-process (CPU, fp32) under
`torch.utils.flop_counter.FlopCounterMode`, which counts every matrix product (mm, addmm, bmm)
from its shapes. The ledger (`timing.rank_steps(...).ledger.compute`) comes from parc's closed
forms per layer kind; nothing is read from the job or from the counter to build it.

Tolerances and why:

- GEMMs: equal within 1e-9 (relative). The products are the same products; with balanced or
  unbalanced routing alike, the routed experts multiply top_k copies of every token in total on
  one rank, which is what the ledger charges.
- Attention core: the counter's formula for scaled-dot-product attention (torch's own
  `sdpa_flop_count` / `sdpa_backward_flop_count`, which FlopCounterMode has no entry for under
  the CPU kernel's name, so the test maps that name to torch's formulas) counts the full s x s
  square whatever the causal mask; the ledger charges what the flash kernel executes, the causal
  half. The counter must therefore be exactly twice the ledger (within 1e-9); its backward
  formula, like the ledger's `FLASH_BACKWARD`, recomputes the scores (five products).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import (
    compile_job,
    in_fresh_interpreter,
    model_module,
    one_micro_batch,
    only_rank_ledger,
    plan_of,
)

pytestmark = pytest.mark.e2e

TIGHT = 1e-9


def counted_flops(job: Path, plan) -> dict[str, float]:
    """One micro-batch of the job's model, forward and backward, under FlopCounterMode:
    {"attention": FLOPs of the attention kernels, "gemm": every other counted op}."""
    import torch
    from torch.utils import flop_counter as fc

    module = model_module(job, f"flops_of_{job.name.replace('-', '_')}")
    aten = torch.ops.aten
    # the model's attention is one custom op forward (parc::block_attention, opaque to the
    # counter), one causal block over the whole sequence without cp; its backward runs the aten
    # kernel's backward, which the counter sees
    whole = lambda q, k, v, *args, out_shape=None, **kw: fc.sdpa_flop_count(q, k, v)  # noqa: E731
    mapping = {
        torch.ops.parc.block_attention: whole,
        aten._scaled_dot_product_flash_attention_for_cpu:
            whole,
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda grad, q, k, v, *args, out_shape=None, **kw: fc.sdpa_backward_flop_count(grad, q, k, v),
    }
    counter = fc.FlopCounterMode(display=False, custom_mapping=mapping)
    one_micro_batch(module, plan, counter)
    by_op = counter.get_flop_counts()["Global"]
    assert by_op, "the counter saw no operation"
    attention = sum(n for op, n in by_op.items() if "scaled_dot_product" in str(op) or "block_attention" in str(op))
    return {"attention": float(attention), "gemm": float(sum(by_op.values()) - attention)}


def _counted_flops_of_spec(job: Path, spec: str) -> dict[str, float]:
    """`counted_flops` of a spec by name (run in a fresh interpreter, harness.in_fresh_interpreter)."""
    return counted_flops(job, plan_of(spec))


def ledger_flops(plan) -> dict[str, float]:
    """The ledger's FLOPs of one micro-batch on the plan's (only) rank, per op kind."""
    ledger, knobs = only_rank_ledger(plan)
    assert ledger.compute, "an empty compute ledger would check nothing"
    return {op: ledger.flops(op) / knobs.microbatches for op in ("gemm", "attention")}


@pytest.mark.parametrize("spec", ["reference", "reference-moe"])
def test_ledger_flops_equal_torchs_flop_counter(spec, tmp_path):
    """Dense (GQA, SwiGLU) and MoE (router, top-2 routed experts, a shared expert, a dense
    first layer): the ledger's GEMM FLOPs equal the counter's; its attention FLOPs are half the
    counter's (the counter ignores the causal mask, module doc)."""
    plan = plan_of(spec)
    assert plan.cluster.world_size == 1
    counted = in_fresh_interpreter(_counted_flops_of_spec, compile_job(spec, tmp_path), spec)
    model = ledger_flops(plan)
    assert counted["gemm"] > 0 and counted["attention"] > 0
    assert model["gemm"] == pytest.approx(counted["gemm"], rel=TIGHT)
    assert 2 * model["attention"] == pytest.approx(counted["attention"], rel=TIGHT)
