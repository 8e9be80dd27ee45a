"""The generated job's per-step overhead, guarded without a clock (torchrun on CPU, gloo).

benchmarks/runtime_overhead.py times the generated train.py against a hand-written loop; the
causes of the gap it measured are each held here by a count that does not depend on the
machine's speed or load. A probe runs train.py's own `main` in the job's processes, with
--log-every larger than the run (only the last step logs), and counts over the whole run:

- host syncs (tests/host_syncs.py: `.item()`, `.tolist()`, data-dependent shapes) and
  torch.distributed collectives issued through the module (FSDP's, the loop's, the norm's):
  a run of 5 steps issues exactly as many host syncs as a run of 2, so no step but a logging
  one syncs; with one rank no step issues a collective either (before plain tensors, FSDP over
  one rank all-reduced every unit's gradients every step);
- the ops of every optimizer step, seen by a TorchDispatchMode: one fused AdamW kernel for all
  parameters per step, on plain tensors when one rank computes in fp32 (before: FSDP's
  DTensor parameters, every op dispatched through DTensor), and one kernel per step on FSDP's
  DTensor parameters too (a for-each AdamW issues tens of ops per parameter group).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from parc.atomic import write_tree
from parc.backends import job_files
from parc.pipeline import compile_text

from .harness import run_ranks

pytestmark = pytest.mark.e2e

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
SPEC = """job overhead
{layout}
model tiny
hardware {{ gpu h100-sxm }}
train {{ seq 32, global-batch 8, micro-batch 2 }}
{extra}"""

PROBE = r'''
import collections, json, sys
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule
from torch.distributed.tensor import DTensor
from torch.utils._python_dispatch import TorchDispatchMode
import parallel, train
from host_syncs import HostSyncs

out = sys.argv[1]
collectives = collections.Counter()
for name in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_to_all_single",
             "all_gather", "all_gather_object", "barrier"):
    original = getattr(dist, name)

    def counted(*args, _original=original, _name=name, **kwargs):
        collectives[_name] += 1
        return _original(*args, **kwargs)

    setattr(dist, name, counted)

# FSDP2's all-gathers (one per FSDP unit it gathers; its collective goes through its own handle)
import torch.distributed.fsdp._fully_shard._fsdp_param_group as fsdp_group
gather = fsdp_group.foreach_all_gather


def counted_gather(*args, **kwargs):
    collectives["fsdp_all_gather"] += 1
    return gather(*args, **kwargs)


fsdp_group.foreach_all_gather = counted_gather


class OptimizerOps(TorchDispatchMode):
    """The ops one optimizer step dispatches, and whether any took a DTensor."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()
        self.dtensor = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        self.dtensor |= any(issubclass(t, DTensor) for t in types)
        return func(*args, **(kwargs or {}))


steps = []
plain_step = parallel.Optimizers.step


def step(self):
    with OptimizerOps() as mode:
        plain_step(self)
    steps.append({"ops": dict(mode.ops), "dtensor": mode.dtensor})


parallel.Optimizers.step = step
parallel_build = parallel.parallelize
parts = []


def parallelize(*args, **kwargs):
    rt = parallel_build(*args, **kwargs)
    parts.extend(rt.parts)
    return rt


parallel.parallelize = parallelize
syncs = HostSyncs()
finish = train.finish


def report(status=0):
    syncs.__exit__(None, None, None)
    with open(f"{out}-{dist.get_rank()}.json", "w") as f:
        json.dump({"syncs": syncs.seen, "collectives": dict(collectives), "steps": steps,
                   "fsdp": any(isinstance(m, FSDPModule) for p in parts for m in p.modules()),
                   "dtensor_params": any(isinstance(q, DTensor) for p in parts for q in p.parameters())}, f)
    finish(status)


train.finish = report
syncs.__enter__()
train.main(sys.argv[2:])
'''


def compile_job(tmp: Path, name: str, layout: str, extra: str = "") -> Path:
    result = compile_text(SPEC.format(layout=layout, extra=extra), f"{name}.par")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    job = tmp / name
    write_tree(str(job), job_files(result.plan))
    (job / "probe.py").write_text(PROBE)
    (job / "host_syncs.py").write_text((Path(__file__).parent.parent / "host_syncs.py").read_text())
    return job


def probe(job: Path, ranks: int, steps: int) -> list[dict]:
    """Every rank's counts over a run of `steps` steps that logs only its last."""
    out = job / f"counts-{steps}"
    done = run_ranks([*TORCHRUN, "--nproc-per-node", str(ranks), "probe.py", str(out), "--device", "cpu",
                      "--steps", str(steps), "--log-every", "1000"],
                     cwd=job, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(Path(f"{out}-{rank}.json").read_text()) for rank in range(ranks)]


def assert_one_fused_kernel_per_step(found: dict, steps: int) -> None:
    assert len(found["steps"]) == steps, "the probe saw no optimizer step: the check would be vacuous"
    for index, step in enumerate(found["steps"]):
        adam = {op: n for op, n in step["ops"].items() if "adam" in op}
        assert adam == {"aten._fused_adamw_.default": 1}, f"step {index}: {step['ops']}"


def assert_no_step_syncs(short: dict, long: dict) -> None:
    assert short["syncs"], "the logging step's host sync was not seen: the counter would be vacuous"
    assert long["syncs"] == short["syncs"], "host syncs grow with the number of (non-logging) steps"


def test_one_process_in_fp32_runs_plain_tensors_without_per_step_syncs_or_collectives(tmp_path):
    job = compile_job(tmp_path, "dp1", "dp 1 on nodes(1 gpus, nvlink)")
    [short], [long] = probe(job, 1, 2), probe(job, 1, 5)
    assert not long["fsdp"] and not long["dtensor_params"], "one rank in fp32 needs no fully_shard"
    assert_one_fused_kernel_per_step(long, 5)
    assert not any(step["dtensor"] for step in long["steps"]), "the optimizer step dispatched through DTensor"
    assert_no_step_syncs(short, long)
    assert short["collectives"], "the logging step's collectives were not seen: the counter would be vacuous"
    assert long["collectives"] == short["collectives"], "a non-logging step issued collectives on one rank"


TINY_LAYERS = 8


def test_fsdp_over_two_ranks_steps_with_one_fused_kernel_and_no_per_step_syncs(tmp_path):
    """zero3 over 2 ranks: one fused AdamW kernel per step, no host sync but the logging step's,
    and per micro-batch one all-gather per unit for the forward and one per layer for the
    backward: the root (embedding, final norm, output) stays gathered from its forward to its
    backward (FSDP2's default for a root, torchtitan's choice; before, `reshard_after_forward=True`
    on the root freed it after the forward and gathered it again at once, one more call)."""
    job = compile_job(tmp_path, "fsdp2", "dp 2 on nodes(2 gpus, nvlink)", "dp { sharding zero3 }\n")
    short, long = probe(job, 2, 2), probe(job, 2, 5)
    micro_batches = 8 // 2 // 2  # global batch / dp / micro-batch
    for rank in range(2):
        assert long[rank]["fsdp"] and long[rank]["dtensor_params"]
        assert_one_fused_kernel_per_step(long[rank], 5)
        assert_no_step_syncs(short[rank], long[rank])
        gathers = long[rank]["collectives"]["fsdp_all_gather"] - short[rank]["collectives"]["fsdp_all_gather"]
        assert gathers == 3 * micro_batches * ((TINY_LAYERS + 1) + TINY_LAYERS), gathers


def test_context_parallel_steps_without_per_step_syncs(tmp_path):
    """cp 2: each step's batch is cut to this rank's positions on the host, where it is made (before,
    the positions lived on the device and every step copied them back to the host: one sync a step,
    which HostSyncs counts as `cpu`)."""
    job = compile_job(tmp_path, "cp2", "cp 2 on nodes(2 gpus, nvlink)")
    short, long = probe(job, 2, 2), probe(job, 2, 5)
    for rank in range(2):
        assert_no_step_syncs(short[rank], long[rank])
