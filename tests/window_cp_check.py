"""A generated job's context-parallel attention through a sliding window, against a float64
band-mask reference computed here over the whole sequence.

    torchrun --nproc-per-node CP tests/window_cp_check.py JOB_DIR WINDOW...

Every rank builds the same whole-sequence q, k, v and output gradient (one seed), runs the job's
cp attention class (the one parallel.py defines) on the positions it holds
(`parallel.sequence_positions`), and compares its output and its dq, dk, dv with the reference's
rows at those positions. The reference is softmax over scores masked to key in (query - W,
query] in float64 with K/V repeated per query head; it shares nothing with the job's blocks.
Rank 0 prints one JSON line per window: {"window", "error" (largest absolute difference over
out, dq, dk, dv and all ranks), "off_by_one" (the smallest, over W - 1 and W + 1, of the
largest difference between the job's output and that window's reference, over the ranks), "skipped" (ring
steps with no block, summed over ranks; 0 for the other flavours)}.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist

FLAVOURS = ("RingAttention", "AllGatherAttention", "AllToAllAttention")


def band_reference(q, k, v, window: int):
    """Softmax over scores masked to key in (query - window, query], in float64, K/V repeated
    (also the one-process reference of tests/test_window_job.py)."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    rows = torch.arange(q.shape[2])[:, None]
    keys = torch.arange(k.shape[2])[None, :]
    hidden = (keys > rows) | (keys <= rows - window)
    return scores.masked_fill(hidden, float("-inf")).softmax(-1) @ v


def check(attention, positions, length: int, window: int, seed: int) -> tuple[float, list[float]]:
    """(largest difference from the reference, [largest difference of the output from the W - 1
    and the W + 1 references]) on this rank's positions."""
    import model

    generator = torch.Generator().manual_seed(seed)

    def tensor(heads: int) -> torch.Tensor:
        return torch.randn(2, heads, length, model.HEAD_DIM, generator=generator, dtype=torch.float32)

    q, k, v, grad = tensor(model.HEADS), tensor(model.KV_HEADS), tensor(model.KV_HEADS), tensor(model.HEADS)
    whole = [t.clone().requires_grad_() for t in (q, k, v)]
    want_out = band_reference(*whole, window)
    want = [want_out, *torch.autograd.grad(want_out, whole, grad.double())]
    mine = [t[:, :, positions].contiguous().requires_grad_() for t in (q, k, v)]
    out = attention(*mine, window)
    got = [out, *torch.autograd.grad(out, mine, grad[:, :, positions].contiguous())]
    error = max((a.double() - b[:, :, positions]).abs().max().item() for a, b in zip(got, want, strict=True))
    off = [(out.double() - band_reference(q, k, v, w)[:, :, positions]).abs().max().item() if w >= 1
           else float("inf") for w in (window - 1, window + 1)]
    return error, off


def main() -> None:
    directory, windows = sys.argv[1], [int(a) for a in sys.argv[2:]]
    sys.path.insert(0, directory)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    import parallel
    from torch.distributed.device_mesh import init_device_mesh

    world, rank = dist.get_world_size(), dist.get_rank()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("cp",))
    names = [name for name in FLAVOURS if hasattr(parallel, name)]
    assert len(names) == 1, names
    attention = getattr(parallel, names[0])(mesh, torch.device("cpu"))
    positions = parallel.sequence_positions(rank, torch.device("cpu"))
    length = world * positions.numel()
    for window in windows:
        error, off = check(attention, positions, length, window, 7 + window)
        skipped = 0
        if names[0] == "RingAttention":
            chunk = positions.numel() // 2
            skipped = sum(not parallel.step_blocks(rank, s, world, chunk, window) for s in range(world))
        figures = torch.tensor([error, *off, float(skipped)], dtype=torch.float64)
        everyone = [torch.zeros_like(figures) for _ in range(world)]
        dist.all_gather(everyone, figures)
        if rank == 0:
            stacked = torch.stack(everyone)
            # a wrong window is seen if some rank's output differs (a rank whose queries all lie
            # within W of position 0 cannot tell W from W + 1)
            off_by_one = min(stacked[:, 1].max().item(), stacked[:, 2].max().item())
            print(json.dumps({"attention": names[0], "window": window, "error": stacked[:, 0].max().item(),
                              "off_by_one": off_by_one, "skipped": int(stacked[:, 3].sum())}))
    from torchrun_exit import leave_together  # tests/, first on sys.path under torchrun

    leave_together()


if __name__ == "__main__":
    main()
