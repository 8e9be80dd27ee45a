"""One rank of Llama 3 405B (TP 8 x PP 16 x DP 64, specs/llama3-405b.par) rehearsed with real
compute on one GPU, collectives faked, against parc's prediction (issue 15, point 5).

    .venv/bin/python benchmarks/gpu_rehearse.py [--spec SPEC] [--rank R] [--steps N]

Compiles the spec to a temporary directory, runs `train.py --rehearse --device cuda --rank R`
there (fake process group at the plan's world size, real tensors on cuda:0: the rank's real
shapes, kernels and allocator), and prints one Markdown table: torch.cuda.max_memory_reserved,
max_memory_allocated, the tracker's peak, the compute time of one step, and parc's predicted
peak of that rank's pipeline stage with the differences. Needs a GPU with room for one rank
(405B: about 60 GB of parameters, gradients and optimizer states per rank under zero1).

Not run in the session that wrote it (no GPU there); the table it prints goes into
docs/memory-model.md once run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 2 ** 30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/llama3-405b.par")
    parser.add_argument("--rank", type=int, default=5059, help="default: pp stage 8, tp 3, dp 39")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    from parc.backends import job_files
    from parc.memory import estimate
    from parc.pipeline import compile_text

    result = compile_text((ROOT / args.spec).read_text(encoding="utf-8"), args.spec)
    if not result.ok:
        print(f"{args.spec} does not compile", file=sys.stderr)
        return 1
    plan = result.plan
    with tempfile.TemporaryDirectory(prefix="parc-gpu-rehearse-") as tmp:
        for name, text in job_files(plan).items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        out = Path(tmp) / "rehearsal.json"
        subprocess.run([sys.executable, "train.py", "--rehearse", "--device", "cuda", "--rank", str(args.rank),
                        "--steps", str(args.steps), "--rehearse-json", str(out)], cwd=tmp, check=True)
        [record] = json.loads(out.read_text())
    if "max_memory_reserved" not in record:
        print("no GPU: the rehearsal ran on fake tensors", file=sys.stderr)
        return 1
    stage = int(record["coordinates"].get("pp", 0))
    result = estimate(plan)
    allocated = result.stages[stage].total
    inside = result.overheads.inside_allocator if result.overheads is not None else 0
    rows = [  # max_memory_reserved against the stage's peak plus cuBLAS workspaces and fragmentation
        ("max_memory_reserved", record["max_memory_reserved"], allocated + inside),
        ("max_memory_allocated", record["max_memory_allocated"], allocated),
        ("tracker peak", record["peak"]["total"], allocated),
    ]
    print(f"{args.spec}, rank {args.rank} (pp stage {stage}), {args.steps} steps, "
          f"{record['step_s']:.2f} s per step (collectives faked; the tracker's overhead included)\n")
    print("| measure | GiB | parc's prediction (GiB) | difference |")
    print("|---|---|---|---|")
    for name, value, predicted in rows:
        print(f"| {name} | {value / GIB:.2f} | {predicted / GIB:.2f} | {100 * (predicted - value) / value:+.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
