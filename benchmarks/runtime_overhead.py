"""The generated train.py against a minimal hand-written loop on the same model and data.

    .venv/bin/python benchmarks/runtime_overhead.py [--steps N] [--window W] [--rounds R] [--case NAME]

Two cases, each run as R rounds of one generated run and one hand-written run, the order
alternating between rounds (generated first, then hand-written first, ...) so that a machine's
drift hits both sides alike. A run's figure is its tokens/s over the windows of W steps after
the first window (start-up, the first step's allocations and, under pipelining, shape inference
left out); a case prints the median of each side's figures and the median of the R paired
ratios (generated / hand-written of the same round), which a load that changes between rounds
moves less than a ratio of medians:

- `tiny, 1 process`: the tiny dense model (specs' tiny shape), dp 1, on one CPU process. The
  generated job runs under torchrun (gloo; in fp32 with one data rank it keeps plain tensors,
  no fully_shard); the hand-written loop is model.py's Transformer with plain tensors, run
  without torchrun.
- `tiny, fsdp 2 ranks`: dp 2 with zero3; the hand-written loop applies fully_shard per block
  and to the root itself (torch's defaults), with the same MixedPrecisionPolicy, under the same
  torchrun.

Both sides train on the same synthetic data (train.py's `synthetic_sequence`, imported by the
hand-written loop) with the same initial weights (model.initial_value), fp32 on CPU, and the
same optimizer implementation: torch's AdamW with `fused=True`, as train.py's make_optimizer
builds it (a for-each AdamW in the hand-written loop would dispatch every elementwise op of the
step through DTensor on FSDP's parameters and flatter the generated job).

Each window is timed twice, on rank 0: the wall clock (what tokens/s means) and the process's
CPU time (all its threads; train.py logs it as `cpu_time_s`). On a machine shared with other
jobs the wall clock of a window includes the time other processes ran; the CPU time does not,
so the line also gives the paired ratio of tokens per CPU second (`per CPU second X.XX of the
hand-written loop's tokens`) and the 1-minute load
average seen during the case. One line per case, ending in `ratio X.XX` (generated /
hand-written tokens/s, wall clock; the target is >= 0.98). Nothing is asserted: speed targets
live here, not in unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parc.atomic import write_tree  # noqa: E402
from parc.backends import job_files  # noqa: E402
from parc.pipeline import compile_text  # noqa: E402

CASES = {
    "tiny, 1 process": ("dp 1 on nodes(1 gpus, nvlink)", ""),
    "tiny, fsdp 2 ranks": ("dp 2 on nodes(2 gpus, nvlink)", "dp { sharding zero3 }\n"),
}
SPEC = """\
job overhead
{layout}
model tiny
hardware {{ gpu h100-sxm }}
train {{ seq 128, global-batch 16, micro-batch 4 }}
{extra}"""
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]

HAND_LOOP = '''\
"""A minimal training loop of the job's model: what train.py does, written plainly."""
import json, os, sys, time
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.argv = sys.argv[:1]
import model
import train as generated  # only for synthetic_sequence and the batch constants

steps, window, out = int(os.environ["STEPS"]), int(os.environ["WINDOW"]), os.environ["OUT"]
distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import distribute_tensor
    dist.init_process_group("gloo")
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (dist.get_world_size(),))
rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
torch.manual_seed(0)
with torch.device("meta"):
    net = model.Transformer()
if distributed:
    mp = MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=torch.float32)
    for block in net.layers.values():
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(net, mesh=mesh, mp_policy=mp)
net.to_empty(device="cpu")
with torch.no_grad():
    for name, p in net.named_parameters():
        full = model.initial_value(name, p.shape, 0, torch.device("cpu"))
        if distributed:
            p.to_local().copy_(distribute_tensor(full, p.device_mesh, p.placements, src_data_rank=None).to_local())
        else:
            p.copy_(full)
opt = torch.optim.AdamW(net.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
local = generated.GLOBAL_BATCH // world
micro = generated.parallel.MICRO_BATCH
times, cpu = [], []
start, start_cpu = time.perf_counter(), time.process_time()
for step in range(steps):
    rows = range(rank * local, (rank + 1) * local)
    tokens = torch.stack([generated.synthetic_sequence(step, 0, r) for r in rows])
    for x, y in zip(tokens[:, :-1].split(micro), tokens[:, 1:].split(micro)):
        loss = F.cross_entropy(net(x).flatten(0, 1), y.flatten(0, 1)) / (local // micro)
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if (step + 1) % window == 0:
        loss.item()
        now, now_cpu = time.perf_counter(), time.process_time()
        times.append(now - start)
        cpu.append(now_cpu - start_cpu)
        start, start_cpu = now, now_cpu
if rank == 0:
    with open(out, "w") as f:
        json.dump({"window_s": times, "cpu_s": cpu}, f)
if distributed:
    dist.barrier()
    dist.destroy_process_group()
'''


def compile_job(name: str, layout: str, extra: str, directory: Path) -> Path:
    result = compile_text(SPEC.format(layout=layout, extra=extra), f"{name}.par")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    job = directory / name
    write_tree(str(job), job_files(result.plan))
    (job / "hand_loop.py").write_text(HAND_LOOP)
    return job


@dataclass(frozen=True)
class Run:
    """One run's tokens/s after its first window: per wall-clock second and per CPU second."""

    wall: float
    cpu: float


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **extra}


def rate(tokens: int, seconds: list[float]) -> float:
    assert seconds and sum(seconds) > 0, "no window was timed after the first"
    return tokens * len(seconds) / sum(seconds)


def generated_run(job: Path, nproc: int, steps: int, window: int, tokens_per_step: int) -> Run:
    log = job / "generated.jsonl"
    log.unlink(missing_ok=True)
    subprocess.run([*TORCHRUN, "--nproc-per-node", str(nproc), "train.py", "--device", "cpu", "--steps", str(steps),
                    "--log-every", str(window), "--log-json", str(log)], cwd=job, env=environment(),
                   check=True, capture_output=True, timeout=1800)
    records = [json.loads(line) for line in log.read_text().splitlines()][1:]  # the first window warms up
    return Run(rate(tokens_per_step * window, [r["step_time_s"] * window for r in records]),
               rate(tokens_per_step * window, [r["cpu_time_s"] * window for r in records]))


def hand_run(job: Path, nproc: int, steps: int, window: int, tokens_per_step: int) -> Run:
    out = job / "hand.json"
    env = environment(STEPS=str(steps), WINDOW=str(window), OUT=str(out))
    command = [*TORCHRUN, "--nproc-per-node", str(nproc), "hand_loop.py"] if nproc > 1 else \
        [sys.executable, "hand_loop.py"]
    subprocess.run(command, cwd=job, env=env, check=True, capture_output=True, timeout=1800)
    found = json.loads(out.read_text())
    return Run(rate(tokens_per_step * window, found["window_s"][1:]),
               rate(tokens_per_step * window, found["cpu_s"][1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", choices=sorted(CASES), help="run only this case")
    args = parser.parse_args()
    if args.steps < 2 * args.window:
        parser.error("--steps must cover at least two windows (the first is left out)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (layout, extra) in CASES.items():
            if args.case is not None and name != args.case:
                continue
            job = compile_job(name.replace(", ", "-").replace(" ", "-"), layout, extra, Path(tmp))
            plan = compile_text(SPEC.format(layout=layout, extra=extra), "overhead.par").plan
            nproc, tokens = plan.cluster.world_size, plan.training.tokens_per_step
            sides = {"generated": generated_run, "hand": hand_run}
            runs: dict[str, list[Run]] = {"generated": [], "hand": []}
            loads = []
            for round_ in range(args.rounds):
                for side in (("generated", "hand") if round_ % 2 == 0 else ("hand", "generated")):
                    runs[side].append(sides[side](job, nproc, args.steps, args.window, tokens))
                loads.append(os.getloadavg()[0])
            g = statistics.median(r.wall for r in runs["generated"])
            h = statistics.median(r.wall for r in runs["hand"])
            wall = statistics.median(a.wall / b.wall for a, b in zip(runs["generated"], runs["hand"], strict=True))
            cpu = statistics.median(a.cpu / b.cpu for a, b in zip(runs["generated"], runs["hand"], strict=True))
            print(f"{name}: generated {g:,.0f} tokens/s, hand-written {h:,.0f} tokens/s (median of {args.rounds} "
                  f"interleaved rounds of {args.steps} steps, the first {args.window} left out; per CPU second "
                  f"{cpu:.2f} of the hand-written loop's tokens; load average {statistics.median(loads):.1f} on {os.cpu_count()} cores), "
                  f"ratio {wall:.2f}", flush=True)


if __name__ == "__main__":
    main()
