"""Where a rehearsed rank's step goes on a GPU: its kernels by kind, and how long the GPU sat idle.

    cd JOB && python3 /path/to/gpu_profile.py --rank R --steps N --out FILE [--device cpu]

Runs the generated job's rehearsal (`train.py --rehearse --device cuda --steps 0 --timed-steps N`:
every collective faked, real tensors and kernels) under `torch.profiler`, and writes FILE (JSON):
the profiled window's wall seconds, the seconds some kernel ran (`busy`: the union of the kernels'
intervals), and per kind of kernel (`KINDS`: matrix products, fused attention, copies, the rest)
their count and summed seconds, with the 20 longest kernels by name. Torch alone, like
`gpu_check.py measure`: the GPU machine needs nothing of parc. `--device cpu` profiles the CPU
ops of a small job instead (a test of the script).

Why: a rehearsed step of parc's FSDP2 job at 2K tokens took 0.30 s where the time model charges
0.21 s, and about 0.13 s of it did not scale with tokens (docs/time-model.md, "A second run on an
H200"). Kernels that run longer than modelled and a GPU that waits on the host tell apart here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

KINDS = (
    ("attention", re.compile(r"flash|fmha|attention", re.I)),
    ("matmul", re.compile(r"gemm|cutlass|nvjet|xmma|sm90_|matmul|addmm|mm_", re.I)),
    ("copy", re.compile(r"copy|cat|split_with_sizes|memcpy|memset", re.I)),
)
"""Each kernel's kind, the first pattern its name matches; else `other` (elementwise, norms,
reductions, the optimizer's foreach kernels)."""


def kind_of(name: str) -> str:
    return next((kind for kind, pattern in KINDS if pattern.search(name)), "other")


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of (start, end) intervals in microseconds."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, str(Path.cwd()))
    import train  # the generated job's, in the current directory

    cuda = args.device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    argv = ["--rehearse", "--device", args.device, "--rank", str(args.rank), "--steps", "0",
            "--timed-steps", str(args.steps)]
    if not cuda:
        argv.append("--real-tensors")
    import rehearse  # the job's: rehearse.main ends the process, rehearse_rank returns its record

    with profile(activities=activities) as prof:
        rehearsal = rehearse.rehearse_rank(train.parse_args(argv), train)
    wanted = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    # a user annotation's GPU range (the optimizer's `Optimizer.step#AdamW.step`) is no kernel
    kernels = [e for e in prof.events() if e.device_type == wanted and not getattr(e, "is_user_annotation", False)
               and (cuda or not e.cpu_parent)]
    assert kernels, "the profile holds no kernel"
    intervals = [(e.time_range.start, e.time_range.end) for e in kernels]
    kinds: dict[str, dict] = {}
    names: dict[str, float] = {}
    for e in kernels:
        seconds = e.time_range.elapsed_us() / 1e6
        entry = kinds.setdefault(kind_of(e.name), {"count": 0, "seconds": 0.0})
        entry["count"] += 1
        entry["seconds"] += seconds
        names[e.name] = names.get(e.name, 0.0) + seconds
    window = (max(s for _, s in intervals) - min(s for s, _ in intervals)) / 1e6
    result = {
        "rank": args.rank, "steps": args.steps, "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
        "window_s": window, "busy_s": busy_seconds(intervals), "kinds": kinds,
        "longest": sorted(([n[:160], s] for n, s in names.items()), key=lambda x: -x[1])[:20],
        "rehearsal": rehearsal,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("window_s", "busy_s", "kinds")}, indent=1))
    sys.stdout.flush()
    os._exit(0)  # as the rehearsal ends: skips the fake process group's teardown


if __name__ == "__main__":
    sys.exit(main())
