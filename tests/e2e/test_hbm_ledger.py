"""HBM bytes: the ledger's GEMM operands and attention IO against what the running model hands
its kernels.

Each case compiles a spec of tests/e2e/specs, imports the generated job's model.py, casts it to
bf16 (the runtime's compute dtype) and runs one micro-batch forward and backward in-process on
CPU under a `TorchDispatchMode` that records every kernel call torch dispatches with the bytes of
its input and output tensors as they reach the kernel. The ledger (`timing.rank_steps(...)`,
`hbm.py`'s per-layer closed forms) is built from the plan alone; nothing is read from the job or
from the recording to build it.

- GEMMs: every `mm`, `addmm` and `bmm`, forward and backward. The recorded products are the
  job's own: a linear layer per projection (Q, K, V apart, SwiGLU's gate and up apart), every
  local expert's product on its rows (an expert that gets no rows still reads its weights), the
  router, the output layer; each backward an input-gradient and a weight-gradient product.
  Equal within 1e-9.
- Attention: the model's attention operator (`parc::block_attention`: Q, K, V in, the output and
  the fp32 log-sum-exp out) and the flash kernel's backward (dO, Q, K, V, O and the
  log-sum-exp in; dQ, dK, dV out). The ledger counts one more pass, FlashAttention-2's
  preprocessing kernel on GPUs (read O and dO, write their fp32 row sums, which the backward then
  reads), which torch's CPU kernel does inside its one call: the test adds that pass's bytes,
  written here from the shapes (2 x 2 n q + 4 n heads + 4 n heads per layer). Equal within 1e-9.
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
    tensor_bytes,
)

pytestmark = pytest.mark.e2e

TIGHT = 1e-9


def recorded_bytes(job: Path, plan) -> dict[str, tuple[int, int]]:
    """{"gemm" | "attention_f" | "attention_b": (calls, bytes read and written)} of one
    micro-batch of the job's model in bf16."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    module = model_module(job, f"hbm_of_{job.name.replace('-', '_')}")  # registers parc::block_attention
    aten = torch.ops.aten
    kinds = {aten.mm.default: "gemm", aten.addmm.default: "gemm", aten.bmm.default: "gemm",
             torch.ops.parc.block_attention.default: "attention_f",
             aten._scaled_dot_product_flash_attention_for_cpu_backward.default: "attention_b"}
    seen: dict[str, list[int]] = {}

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            kind = kinds.get(func)
            if kind is not None:
                calls_bytes = seen.setdefault(kind, [0, 0])
                calls_bytes[0] += 1
                calls_bytes[1] += tensor_bytes(args) + tensor_bytes(out)
            return out

    one_micro_batch(module, plan, Recorder(), dtype=torch.bfloat16)
    return {kind: (calls, nbytes) for kind, (calls, nbytes) in seen.items()}


def _recorded_bytes_of_spec(job: Path, spec: str) -> dict[str, tuple[int, int]]:
    """`recorded_bytes` of a spec by name, run in a fresh interpreter (harness.in_fresh_interpreter):
    in this process an earlier test's model.py may own the name parc::block_attention."""
    return recorded_bytes(job, plan_of(spec))


def ledger_bytes(plan) -> dict[str, float]:
    """The ledger's HBM bytes of one micro-batch on the plan's (only) rank, per op kind."""
    ledger, knobs = only_rank_ledger(plan)
    assert knobs.recompute == "none"  # the in-process run recomputes nothing
    return {op: ledger.hbm_bytes(op) / knobs.microbatches for op in ("gemm", "attention")}


@pytest.mark.parametrize("spec", ["reference", "reference-moe"])
def test_ledger_hbm_bytes_equal_what_the_kernels_are_handed(spec, tmp_path):
    """Dense (GQA, SwiGLU) and MoE (router, top-2 routed experts, a shared expert, a dense first
    layer): every product's operands and result, and the attention kernels' IO (module doc)."""
    plan = plan_of(spec)
    assert plan.cluster.world_size == 1
    seen = in_fresh_interpreter(_recorded_bytes_of_spec, compile_job(spec, tmp_path), spec)
    model = ledger_bytes(plan)
    m = plan.model
    layers = m.layers
    assert seen["gemm"][0] > 0 and seen["attention_f"][0] == seen["attention_b"][0] == layers
    assert model["gemm"] == pytest.approx(seen["gemm"][1], rel=TIGHT)
    tokens = plan.training.micro_batch * plan.training.seq_len
    prepass = 2 * 2 * tokens * m.heads * m.head_dim + 2 * 4 * tokens * m.heads
    attention = seen["attention_f"][1] + seen["attention_b"][1] + layers * prepass
    assert model["attention"] == pytest.approx(attention, rel=TIGHT)
