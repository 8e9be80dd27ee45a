"""The generated job on one GPU against `parc explain`: tokens/s, MFU and max_memory_reserved
(issue 13, point 8).

    .venv/bin/python benchmarks/gpu_smoke.py [--gpu h100-sxm] [--layers 4] [--steps 30] [--window 5]

Compiles a one-GPU spec (Llama 3 8B's shape with `--layers` layers, seq 4,096, 8 sequences of
one micro-batch each per step, `sharding zero3`: FSDP2 over one rank, so the job's mixed
precision runs as on a cluster), runs its `train.py --device cuda --precision bf16` under
torchrun with one process (fused attention: SDPA's flash kernel), and prints one Markdown
table of what the job measured next to what `parc explain --format json` predicts for the same
spec: tokens/s (the median of the logged windows after the first), MFU (the measured tokens/s
times the model FLOPs per token parc counts, over the GPU's peak), and
torch.cuda.max_memory_reserved() (read in the job's process when it finishes).

Not run in the session that wrote it (no GPU there); `--help` runs anywhere, and the table it
prints goes into docs/runtime.md once run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 2 ** 30
SPEC = """job gpu-smoke
dp 1 on nodes(1 gpus, nvlink)
model llama3-8b {{ layers {layers} }}
hardware {{ gpu {gpu} }}
train {{ seq 4096, global-batch 8, micro-batch 1 }}
dp {{ sharding zero3 }} allow W0353
"""
PROBE = r'''
import json, sys
import torch
import train

out = sys.argv[1]
finish = train.finish


def report(status=0):
    with open(out, "w") as f:
        json.dump({"max_memory_reserved": torch.cuda.max_memory_reserved(),
                   "max_memory_allocated": torch.cuda.max_memory_allocated(),
                   "device": torch.cuda.get_device_name()}, f)
    finish(status)


train.finish = report
train.main(sys.argv[2:])
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h100-sxm", help="parc's catalogue name of the GPU it runs on")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--window", type=int, default=5)
    args = parser.parse_args()
    if args.steps < 2 * args.window:
        parser.error("--steps must cover at least two windows (the first is left out)")

    sys.path.insert(0, str(ROOT))
    from parc.atomic import write_tree
    from parc.backends import job_files
    from parc.pipeline import compile_text

    text = SPEC.format(layers=args.layers, gpu=args.gpu)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "gpu-smoke.par"
        spec.write_text(text)
        result = compile_text(text, str(spec))
        if not result.ok:
            print("\n".join(d.message for d in result.diagnostics if d.is_error), file=sys.stderr)
            return 1
        job = Path(tmp) / "job"
        write_tree(str(job), job_files(result.plan))
        (job / "smoke_probe.py").write_text(PROBE)
        explained = subprocess.run([sys.executable, "-m", "parc", "explain", str(spec), "--format", "json"],
                                   cwd=ROOT, capture_output=True, text=True, check=True)
        predicted = json.loads(explained.stdout)
        log, memory = job / "log.jsonl", job / "memory.json"
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
                        "smoke_probe.py", str(memory), "--device", "cuda", "--precision", "bf16",
                        "--steps", str(args.steps), "--log-every", str(args.window), "--log-json", str(log)],
                       cwd=job, check=True, timeout=3600)
        records = [json.loads(line) for line in log.read_text().splitlines()][1:]  # the first window warms up
        measured = json.loads(memory.read_text())

    throughput = predicted["throughput"]
    tokens = statistics.median(r["tokens_per_s"] for r in records)
    flops_per_token = throughput["model_tflops_per_gpu"] / throughput["tokens_per_second_per_gpu"]  # TFLOP
    mfu = tokens * flops_per_token / throughput["peak_tflops_per_gpu"]
    reserved = predicted["memory"]["predicted_max_memory_reserved_bytes"]
    print(f"gpu-smoke on {measured['device']}: llama3-8b shape, {args.layers} layers, seq 4,096, bf16, "
          f"fsdp of one rank; median of {len(records)} windows of {args.window} steps")
    print()
    print("| quantity | measured | parc explain | measured / predicted |")
    print("|---|---:|---:|---:|")
    rows = (("tokens/s", tokens, throughput["tokens_per_second_per_gpu"], "{:,.0f}"),
            ("MFU", mfu, throughput["mfu"], "{:.3f}"),
            ("max_memory_reserved (GiB)", measured["max_memory_reserved"] / GIB, reserved / GIB, "{:.2f}"))
    for name, got, want, form in rows:
        print(f"| {name} | {form.format(got)} | {form.format(want)} | {got / want:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
