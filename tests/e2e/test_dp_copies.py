"""HBM bytes the data-parallel runtime copies around its collectives: the ledger against the
running job.

Each case compiles a spec of tests/e2e/specs and rehearses rank 0 of its job in a fresh
interpreter on CPU (`rehearse.rehearse_rank`: the fake process group, real tensors, bf16 compute
as on GPUs) under a `TorchDispatchMode` that records every op torch dispatches while FSDP2 unshards
a module (`FSDPParamGroup.unshard`, `wait_for_unshard`) or reduces its gradients
(`post_backward`, `finalize_backward`), or while parc's zero1 buckets accumulate, reduce and
gather (`Bucket`'s and `DistributedOptimizer`'s methods in the job's parallel.py, its optimizer
step left out: the ledger charges that apart). Each op's bytes are what it reads and writes as its
tensors reach it: inputs read and outputs written; a copy reads its source and writes its
destination; an in-place op reads its operands and writes the first; zeroing writes. Collectives
are not counted (NCCL's kernels move those bytes), nor allocations and views. One step is the
difference between a rehearsal of two timed steps and one of one (the first step of a pipelined
job gathers twice).

The expected bytes are the time model's ledger (`timing.rank_steps`, its `dp_copies` entry, from
`timing.dp_copy_bytes`' closed form), built from the plan alone. Within 1 %.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from .harness import compile_job, in_fresh_interpreter, one_of_each_kind, plan_of, tensor_bytes

pytestmark = pytest.mark.e2e

TOLERANCE = 0.01
FSDP_PHASES = {"unshard": "gather", "wait_for_unshard": "gather", "post_backward": "reduce",
               "finalize_backward": "reduce"}
"""FSDPParamGroup's methods whose ops are FSDP2's copies, by phase."""
ZERO1_METHODS = {"accumulate", "collect", "start_reduction", "wait", "start_gather", "finish_gather",
                 "zero_grad"}
"""The job's zero1 methods (parallel.py's Bucket and DistributedOptimizer) that copy gradients and
parameters; `step` (the optimizer's own update) is not one."""
NOT_COPIES = ("c10d.", "profiler.", "fsdp.all_gather_copy_in")
"""Ops recorded inside those methods that are not copies on the compute stream: the collectives,
the profiler's ranges, and FSDP2's copy-in operator, whose own `_foreach_copy_` is recorded."""
NO_BYTES = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "view", "_unsafe_view", "as_strided",
            "alias", "detach", "slice", "split", "split_with_sizes", "narrow", "select", "unbind", "t",
            "reshape", "flatten", "expand", "squeeze", "unsqueeze", "set_", "resize_", "chunk",
            "_local_scalar_dense", "record_stream"}
"""Allocations and views: no bytes move."""


def op_bytes(name: str, args: tuple, kwargs: dict, out) -> int:
    """Bytes one op reads and writes (the module doc's rule)."""
    short = name.rsplit(".", 1)[-1]
    if short in ("zero_", "fill_"):
        return tensor_bytes(args[0])
    if "copy_" in short:  # copy_, _foreach_copy_: the source read, the destination written
        return tensor_bytes(args)
    if short.endswith("_"):  # in place: the operands read, the first written
        return tensor_bytes(args) + tensor_bytes(args[0])
    if "out" in kwargs:
        return tensor_bytes(args) + tensor_bytes({k: v for k, v in kwargs.items() if k != "out"}) + tensor_bytes(kwargs["out"])
    return tensor_bytes(args) + tensor_bytes(kwargs) + tensor_bytes(out)


def recording(label_of):
    """A dispatch mode that adds each op's bytes (`op_bytes`) under "LABEL OP", LABEL what
    `label_of(op name)` says (None: not counted), and the dict it fills. Collectives, allocations
    and views are never counted (`NOT_COPIES`, `NO_BYTES`)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    recorded: dict[str, int] = {}

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = str(func.overloadpacket)
            if not name.startswith(NOT_COPIES) and name.rsplit(".", 1)[-1] not in NO_BYTES:
                label = label_of(name)
                if label:
                    key = f"{label} {name}"
                    recorded[key] = recorded.get(key, 0) + op_bytes(name, args, kwargs, out)
            return out

    return Recorder(), recorded


def calling_frames(limit: int = 60):
    """The Python frames above the caller's, innermost first (at most `limit`)."""
    frame = sys._getframe(2)
    while frame is not None and limit > 0:
        yield frame
        frame, limit = frame.f_back, limit - 1


def copied_bytes(job: str, timed_steps: int) -> dict[str, int]:
    """{phase op: bytes} over a rehearsal of rank 0 with `timed_steps` timed steps (and none
    untimed): run in a fresh interpreter (`in_fresh_interpreter`)."""
    import torch.distributed.fsdp._fully_shard._fsdp_param_group as param_group

    os.chdir(job)
    sys.path.insert(0, job)
    phase: list[str | None] = [None]

    def labelled(method, label):
        def run(*args, **kwargs):
            outer, phase[0] = phase[0], phase[0] or label
            try:
                return method(*args, **kwargs)
            finally:
                phase[0] = outer
        return run

    for name, label in FSDP_PHASES.items():
        setattr(param_group.FSDPParamGroup, name, labelled(getattr(param_group.FSDPParamGroup, name), label))

    def zero1_method() -> str | None:
        for frame in calling_frames():
            code = frame.f_code
            if code.co_filename.endswith("parallel.py") and code.co_name in ZERO1_METHODS | {"step"}:
                return None if code.co_name == "step" else "zero1"
        return None

    recorder, recorded = recording(lambda name: phase[0] or zero1_method())

    import rehearse  # the job's
    import train

    argv = ["--rehearse", "--device", "cpu", "--rank", "0", "--steps", "0", "--timed-steps", str(timed_steps),
            "--real-tensors"]
    with recorder:
        rehearse.rehearse_rank(train.parse_args(argv), train)
    return recorded


def measured_step(job: Path) -> tuple[int, dict[str, int]]:
    """Bytes copied in one steady step: two timed steps less one."""
    one = in_fresh_interpreter(copied_bytes, str(job), 1)
    two = in_fresh_interpreter(copied_bytes, str(job), 2)
    ops = {key: two.get(key, 0) - one.get(key, 0) for key in set(one) | set(two)}
    return sum(ops.values()), ops


def ledger_copies(spec: str) -> float:
    """The `dp_copies` bytes of rank 0's ledger (the first pipeline stage), as `predict` builds it."""
    from parc import timing

    loads, steps = timing.plan_rank_steps(plan_of(spec))
    return sum(c.hbm_bytes for c in steps[loads[0]].ledger.compute if c.op == "dp_copies")


CASES = {
    "fsdp8": "zero3, two micro-batches: every micro-batch gathers (twice, the root once) and reduces",
    "hsdp": "hsdp 2 x 2: zero3's copies over the shard group of two",
    "ddp8": "none: FSDP2 over a shard group of one casts and copies without a gather; one micro-batch",
    "copies-none-m2": "none, two micro-batches: the first is accumulated unsynchronised in fp32",
    "copies-zero2-m2": "zero2: one gather a step, a reduce-scatter each micro-batch",
    "copies-zero1-m2": "zero1: parc's buckets accumulate every micro-batch into fp32 main gradients",
    "traffic-pp2-dp2": "zero3 under pp 2: gathered once, four micro-batches accumulated, reduced once",
}


@pytest.mark.slow
@pytest.mark.parametrize("spec", one_of_each_kind(sorted(CASES), ["fsdp8", "hsdp", "copies-none-m2", "copies-zero2-m2",
                                                                  "copies-zero1-m2"]))
def test_dp_copies_ledger_equals_the_running_job(spec, tmp_path):
    """One case of each sharding in the default run (ddp8 is copies-none-m2 with one micro-batch,
    traffic-pp2-dp2 fsdp8 under a pipeline: `pytest -m long`)."""
    job = compile_job(spec, tmp_path)
    total, ops = measured_step(job)
    assert total > 0 and ops, f"{spec}: no copies recorded ({CASES[spec]})"
    expected = ledger_copies(spec)
    assert expected == pytest.approx(total, rel=TOLERANCE), (spec, CASES[spec], expected, total, sorted(ops.items()))


# ---------------------------------------------------------------------------------------------
# torch's FSDP1, as Composer runs the published MPT rows (`Software.dp_copies` "fsdp1")

FSDP1_RANKS = 8
FSDP1_FILES = ("/torch/distributed/fsdp/_runtime_utils.py", "/torch/distributed/fsdp/_flat_param.py",
               "/torch/distributed/fsdp/_fully_shard", "/torch/distributed/utils.py")
"""Python files of FSDP1's unshard, reduction and casts: an op dispatched under one of their frames
is FSDP1's."""


def fsdp1_copied_bytes(micro_batches: int) -> tuple[int, int, int, dict[str, int]]:
    """(parameters, the root's, bytes, {op: bytes}) of one step of a small MPT-like model (GELU
    blocks, LayerNorm, an embedding and an output layer) under torch's FSDP1 on rank 0 of a fake
    group of FSDP1_RANKS: FULL_SHARD, one unit per block and the root, bf16 parameters, fp32
    reduction (Composer's `DEFAULT`), every micro-batch synchronised (Composer's
    `ddp_sync_context` leaves an FSDP model alone). Recorded as `copied_bytes` does: the ops
    dispatched under FSDP1's own frames, and the flat gradients' concatenation, which autograd
    runs (the model has no `cat` of its own). A step unrecorded first: FSDP1 initialises lazily."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=FSDP1_RANKS)
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, h: int) -> None:
            super().__init__()
            self.norm, self.up, self.down = nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class Net(nn.Module):
        def __init__(self, h: int = 64, layers: int = 4, vocab: int = 256) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab, h)
            self.blocks = nn.ModuleList(Block(h) for _ in range(layers))
            self.output = nn.Linear(h, vocab)

        def forward(self, tokens):
            x = self.embedding(tokens)
            for block in self.blocks:
                x = block(x)
            return self.output(x)

    net = Net()
    params = sum(p.numel() for p in net.parameters())
    root = params - sum(p.numel() for block in net.blocks for p in block.parameters())
    model = FullyShardedDataParallel(
        net, auto_wrap_policy=ModuleWrapPolicy({Block}), sharding_strategy=ShardingStrategy.FULL_SHARD,
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                                       buffer_dtype=torch.bfloat16),
        device_id=torch.device("cpu"))
    optimizer = torch.optim.AdamW(model.parameters())
    tokens = torch.randint(0, 256, (2, 16))

    def step() -> None:
        for _ in range(micro_batches):
            model(tokens).float().sum().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def fsdp1(name: str) -> str | None:
        if name == "aten.cat" or any(any(f in frame.f_code.co_filename for f in FSDP1_FILES)
                                     for frame in calling_frames()):
            return "fsdp1"
        return None

    recorder, recorded = recording(fsdp1)
    step()
    with recorder:
        step()
    dist.destroy_process_group()
    return params, root, sum(recorded.values()), recorded


@pytest.mark.slow
@pytest.mark.parametrize("micro_batches", [1, 3])
def test_fsdp1_copies_are_what_torchs_fsdp1_does(micro_batches):
    """`Software.dp_copies` "fsdp1" (`timing._fsdp1_copy_bytes`) against torch's FSDP1 counted op by
    op (`fsdp1_copied_bytes`), one and three synchronised micro-batches: within 1 %. The count holds
    the flat gradient's concatenation, its cast to fp32, both divisions and the shards' casts, and
    (three micro-batches) the sharded gradients' accumulation."""
    from parc import timing

    params, root, total, ops = in_fresh_interpreter(fsdp1_copied_bytes, micro_batches)
    assert {"fsdp1 aten.cat", "fsdp1 aten._to_copy", "fsdp1 aten.div_"} <= set(ops), ops
    expected = timing._fsdp1_copy_bytes(params, FSDP1_RANKS, root, micro_batches, "zero3", 1, 4)
    assert expected == pytest.approx(total, rel=TOLERANCE), (expected, total, sorted(ops.items()))
