"""The generated train.py against a minimal hand-written loop on the same model and data.

    .venv/bin/python benchmarks/runtime_overhead.py [--steps N] [--rounds R] [--case NAME]

Two cases, each run as interleaved A/B rounds (generated, hand-written, generated, ...) so that
a machine's drift hits both alike; the figure of a run is its tokens/s over the steps after the
first window (start-up, the first step's allocations and, under pipelining, shape inference
left out), and a case's figure is the median over its rounds:

- `tiny, 1 process`: the tiny dense model (specs' tiny shape), dp 1, on one CPU process. The
  generated job runs under torchrun (gloo, FSDP2 over one rank for mixed precision, the
  optimizer on DTensor parameters); the hand-written loop is model.py's Transformer with plain
  tensors and torch's AdamW.
- `tiny, fsdp 2 ranks`: dp 2 with zero3; the hand-written loop applies fully_shard per block
  and to the root itself, with the same MixedPrecisionPolicy, under the same torchrun.

Both sides train on the same synthetic data (train.py's `synthetic_sequence`, imported by the
hand-written loop) with the same initial weights (model.initial_value), fp32 on CPU. One line
per case, ending in `ratio X.XX` (generated / hand-written tokens/s; the target is >= 0.98).
Nothing is asserted: speed targets live here, not in unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
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
times = []
start = time.perf_counter()
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
        now = time.perf_counter()
        times.append(now - start)
        start = now
if rank == 0:
    with open(out, "w") as f:
        json.dump({"window_s": times}, f)
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


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **extra}


def generated_tokens_per_s(job: Path, nproc: int, steps: int, window: int, tokens_per_step: int) -> float:
    log = job / "generated.jsonl"
    log.unlink(missing_ok=True)
    subprocess.run([*TORCHRUN, "--nproc-per-node", str(nproc), "train.py", "--device", "cpu", "--steps", str(steps),
                    "--log-every", str(window), "--log-json", str(log)], cwd=job, env=environment(),
                   check=True, capture_output=True, timeout=1800)
    records = [json.loads(line) for line in log.read_text().splitlines()][1:]  # the first window warms up
    seconds = sum(r["step_time_s"] * window for r in records)
    return tokens_per_step * window * len(records) / seconds


def hand_tokens_per_s(job: Path, nproc: int, steps: int, window: int, tokens_per_step: int) -> float:
    out = job / "hand.json"
    env = environment(STEPS=str(steps), WINDOW=str(window), OUT=str(out))
    command = [*TORCHRUN, "--nproc-per-node", str(nproc), "hand_loop.py"] if nproc > 1 else \
        [sys.executable, "hand_loop.py"]
    subprocess.run(command, cwd=job, env=env, check=True, capture_output=True, timeout=1800)
    windows = json.loads(out.read_text())["window_s"][1:]
    return tokens_per_step * window * len(windows) / sum(windows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--case", choices=sorted(CASES), help="run only this case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (layout, extra) in CASES.items():
            if args.case is not None and name != args.case:
                continue
            job = compile_job(name.replace(", ", "-").replace(" ", "-"), layout, extra, Path(tmp))
            plan = compile_text(SPEC.format(layout=layout, extra=extra), "overhead.par").plan
            nproc, tokens = plan.cluster.world_size, plan.training.tokens_per_step
            generated, hand = [], []
            for _ in range(args.rounds):
                generated.append(generated_tokens_per_s(job, nproc, args.steps, args.window, tokens))
                hand.append(hand_tokens_per_s(job, nproc, args.steps, args.window, tokens))
            g, h = statistics.median(generated), statistics.median(hand)
            print(f"{name}: generated {g:,.0f} tokens/s, hand-written {h:,.0f} tokens/s "
                  f"(median of {args.rounds} interleaved rounds of {args.steps} steps), ratio {g / h:.2f}", flush=True)


if __name__ == "__main__":
    main()
