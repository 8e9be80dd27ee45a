"""A checkpoint written under one layout resumes under another, and training continues exactly.

tp 2 x dp 4 (zero3, sequence parallel) trains 4 steps and saves DCP checkpoints after steps 2
and 4; pp 2 x dp 4 (1F1B, ZeRO-1) resumes from the step-2 checkpoint and runs steps 2 and 3.
DCP reshards the 2-D (FSDP x TP) parameters and optimizer states into whole per-stage ones, and
ZeRO-1 slices them again. Both runs' losses must match the uninterrupted single-process run.
Losing the optimizer state (moments or step count) would show in the step-3 loss and in the
gradients of steps 2 and 3, which are compared too. A MoE job
with auxiliary-loss-free balancing saves its routers' expert bias under ep 2 x dp 2 and resumes
in one process.
"""

from __future__ import annotations

import shutil

import pytest

from .harness import assert_parity, compile_job, train

pytestmark = pytest.mark.e2e


def test_resume_under_another_layout(workdir, reference):
    saved = workdir / "checkpoints-tp2-dp4"
    first = train(compile_job("tp2-dp4-sp", workdir), 8, "--checkpoint-dir", str(saved),
                  "--checkpoint-every", "2", out=workdir / "save-run")
    assert_parity(first, reference)
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]

    resume_dir = workdir / "checkpoints-pp2-dp4"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(compile_job("pp2-dp4", workdir), 8, "--checkpoint-dir", str(resume_dir), "--resume",
                   out=workdir / "resume-run")
    assert_parity(second, reference, steps=range(2, 4))
    assert "resumed from" in second.output
    assert (resume_dir / "step-4").is_dir()


def test_asynchronous_checkpoints_resume_like_synchronous_ones(workdir, reference):
    """--async-checkpoint (dcp.async_save, written in the background while training goes on):
    both checkpoints are complete and renamed, and resuming from the first continues exactly."""
    job = compile_job("reference", workdir)
    saved = workdir / "checkpoints-async"
    first = train(job, 1, "--checkpoint-dir", str(saved), "--checkpoint-every", "2", "--async-checkpoint",
                  out=workdir / "async-save-run")
    assert_parity(first, reference)
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]
    resume_dir = workdir / "checkpoints-async-resume"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(job, 1, "--checkpoint-dir", str(resume_dir), "--resume", out=workdir / "async-resume-run")
    assert_parity(second, reference, steps=range(2, 4))
    assert "resumed from" in second.output


def test_aux_free_expert_bias_resumes_under_another_layout(workdir):
    """The routers' expert bias is model state: ep 2 x dp 2 saves it after step 2, one process
    resumes from it and steps 2 and 3 match the uninterrupted single-process run."""
    import torch.distributed.checkpoint as dcp

    reference = train(compile_job("reference-moe-aux-free", workdir), 1).check()
    saved = workdir / "checkpoints-ep2-aux-free"
    first = train(compile_job("moe-ep2-aux-free", workdir), 4, "--checkpoint-dir", str(saved),
                  "--checkpoint-every", "2", out=workdir / "save-aux-free")
    assert_parity(first, reference)
    keys = dcp.FileSystemReader(str(saved / "step-2")).read_metadata().state_dict_metadata
    biases = [k for k in keys if k.endswith("feed_forward.expert_bias")]
    assert len(biases) == 3, sorted(keys)  # layers 1-3

    resume_dir = workdir / "checkpoints-aux-free-one"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(compile_job("reference-moe-aux-free", workdir), 1, "--checkpoint-dir", str(resume_dir),
                   "--resume", out=workdir / "resume-aux-free")
    assert_parity(second, reference, steps=range(2, 4))
    assert "resumed from" in second.output


def test_zero1_saves_shards_and_resumes_under_other_dp_degrees_and_shardings(workdir, reference):
    """ZeRO-1 (dp 4) writes each rank's contiguous shard of the flat optimizer states only: in
    the checkpoint's metadata every Adam moment is tiled by blocks none larger than one rank's
    shard of its bucket, and the big matrices are split over several ranks (a gathered moment
    would be one whole block). ZeRO-1 on dp 2 and zero3 on dp 8 resume from it; losses and the
    gradients of steps 2 and 3 match the uninterrupted single-process run."""
    import math

    import torch.distributed.checkpoint as dcp

    saved = workdir / "checkpoints-zero1-dp4"
    first = train(compile_job("zero1", workdir), 4, "--checkpoint-dir", str(saved), "--checkpoint-every", "2",
                  out=workdir / "save-zero1")
    assert_parity(first, reference)
    metadata = dcp.FileSystemReader(str(saved / "step-2")).read_metadata().state_dict_metadata
    moments = {k: v for k, v in metadata.items() if k.startswith("optimizer.state.") and k.endswith(".exp_avg")}
    assert moments, sorted(metadata)
    total = sum(math.prod(m.size) for m in moments.values())
    shard = -(-total // 4)  # one bucket (one chunk, dense): each rank's share of it
    split = 0
    for key, m in moments.items():
        volumes = [math.prod(c.sizes) for c in m.chunks]
        assert sum(volumes) == math.prod(m.size), key  # tiled exactly, no overlap
        assert max(volumes) <= shard, (key, volumes, shard)
        split += len({tuple(c.offsets) for c in m.chunks}) > 1
    assert split >= 3, "the large matrices lie across rank boundaries"

    for spec, ranks in (("zero1-dp2", 2), ("fsdp8", 8)):
        resume_dir = workdir / f"checkpoints-zero1-to-{spec}"
        shutil.copytree(saved / "step-2", resume_dir / "step-2")
        second = train(compile_job(spec, workdir), ranks, "--checkpoint-dir", str(resume_dir), "--resume",
                       out=workdir / f"resume-zero1-{spec}")
        assert_parity(second, reference, steps=range(2, 4))
        assert "resumed from" in second.output


def test_zero1_moe_with_tp_and_ep_saves_shards_one_process_resumes(workdir, reference_moe):
    """zero1 under tp 2 (SP) x dp 2 with ep 2 over dp: the dense bucket mixes tp-split and
    tp-replicated parameters and the experts have their own bucket over edp; one process
    resumes from its step-2 checkpoint and steps 2 and 3 match the uninterrupted run."""
    saved = workdir / "checkpoints-moe-zero1"
    first = train(compile_job("moe-tp2-ep2-zero1", workdir), 4, "--checkpoint-dir", str(saved),
                  "--checkpoint-every", "2", out=workdir / "save-moe-zero1")
    assert_parity(first, reference_moe)
    resume_dir = workdir / "checkpoints-moe-zero1-one"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    second = train(compile_job("reference-moe", workdir), 1, "--checkpoint-dir", str(resume_dir), "--resume",
                   out=workdir / "resume-moe-zero1")
    assert_parity(second, reference_moe, steps=range(2, 4))
    assert "resumed from" in second.output
