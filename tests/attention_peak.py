"""Peak memory of one attention forward + backward of a generated job, per sequence length.

    torchrun --nproc-per-node N tests/attention_peak.py JOB_DIR LENGTH...

N = 1 measures the job's plain causal attention (`model.causal_attention`); N = cp measures its
context-parallel attention (the one class of parallel.py that implements it) over a cp mesh of N
CPU processes. LENGTH is the sequence each rank holds. Rank 0 prints one JSON line:
{"attention": name, "lengths": [...], "peaks": [[bytes per length] per rank], "floor": [...]}.

The accounting is the operating system's, not torch's: run with MALLOC_MMAP_THRESHOLD_ set low
(tests/test_attention_memory.py sets 64 KiB) every tensor of more than a few pages is its own
mapping, returned to the system when freed; after `/proc/self/clear_refs` resets the high-water
mark to the current resident size, VmHWM - VmRSS is the peak of everything the step allocates,
whatever allocates it (inside custom operators, kernels' workspaces, received K/V blocks, the
collectives' buffers), which torch's dispatcher-level trackers cannot see inside a custom op.
`floor` is the bytes of dq, dk and dv alone, a lower bound any honest measurement must exceed.
"""

from __future__ import annotations

import gc
import json
import os
import sys

import torch
import torch.distributed as dist

FLAVOURS = ("RingAttention", "AllGatherAttention", "AllToAllAttention")
REPEATS = 2
"""Each length is measured this many times and the smallest peak kept (page-level noise)."""


def status(key: str) -> int:
    """A field of /proc/self/status, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def attention_under_test(world: int, mesh, length: int):
    """(name, callable (q, k, v) -> out) of the job this process runs in, for `length` tokens per
    rank (the job's CP_CHUNK, its spec's tokens per chunk, is set to match: an implementation may
    derive the chunks' positions from it)."""
    import model

    if world == 1:
        return "causal_attention", model.causal_attention
    import parallel

    names = [name for name in FLAVOURS if hasattr(parallel, name)]
    assert len(names) == 1, names
    parallel.CP_CHUNK = length if names[0] == "AllToAllAttention" else length // 2  # load-balanced: 2 chunks
    return names[0], getattr(parallel, names[0])(mesh, torch.device("cpu"))


def peak(world: int, mesh, length: int, seed: int) -> tuple[str, int, int]:
    """(attention, peak bytes of one forward + backward at `length` tokens per rank, bytes of its
    gradients)."""
    import model

    name, attention = attention_under_test(world, mesh, length)
    generator = torch.Generator().manual_seed(seed)

    def tensor(heads: int) -> torch.Tensor:
        return torch.randn(1, heads, length, model.HEAD_DIM, generator=generator).requires_grad_()

    q, k, v = tensor(model.HEADS), tensor(model.KV_HEADS), tensor(model.KV_HEADS)
    grad = torch.randn(q.shape, generator=generator)
    gc.collect()
    if dist.is_initialized():
        dist.barrier()
    resident = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    out = attention(q, k, v)
    out.backward(grad)
    top = status("VmHWM") - resident
    floor = sum(t.grad.numel() * t.grad.element_size() for t in (q, k, v))
    return name, top, floor


def main() -> None:
    directory, lengths = sys.argv[1], [int(a) for a in sys.argv[2:]]
    sys.path.insert(0, directory)
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    mesh = None
    if world > 1:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("cp",))
    name, _, _ = peak(world, mesh, lengths[0] // 2, 0)  # warm-up: lazy initialisation, first buffers
    peaks, floors = [], []
    for length in lengths:
        runs = [peak(world, mesh, length, seed) for seed in range(REPEATS)]
        peaks.append(min(top for _, top, _ in runs))
        floors.append(runs[0][2])
    if world > 1:
        everyone: list = [None] * world
        dist.all_gather_object(everyone, peaks)
    else:
        everyone = [peaks]
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({"attention": name, "lengths": lengths, "peaks": everyone, "floor": floors}))
    if world > 1:
        from torchrun_exit import leave_together  # tests/, first on sys.path under torchrun

        leave_together()


if __name__ == "__main__":
    main()
