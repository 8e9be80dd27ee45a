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
from pathlib import Path

import pytest

from .harness import Run, assert_parity, compile_job, train

pytestmark = pytest.mark.e2e


def save_checkpoints(workdir: Path, spec: str, ranks: int, reference: Run, name: str, *options: str) -> Path:
    """Train SPEC on RANKS processes, saving DCP checkpoints after steps 2 and 4 under
    workdir/checkpoints-NAME; the run must match the uninterrupted reference. Returns the folder."""
    saved = workdir / f"checkpoints-{name}"
    run = train(compile_job(spec, workdir), ranks, "--checkpoint-dir", str(saved), "--checkpoint-every", "2",
                *options, out=workdir / f"save-{name}")
    assert_parity(run, reference)
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]
    return saved


def resume_elsewhere(workdir: Path, saved: Path, spec: str, ranks: int, reference: Run, name: str) -> Path:
    """Copy the step-2 checkpoint into a fresh folder (workdir/checkpoints-NAME), resume SPEC on
    RANKS processes from it: steps 2 and 3 (losses and gradients) must match the uninterrupted
    reference, so nothing of the model or optimizer state was lost. Returns the new folder."""
    resume_dir = workdir / f"checkpoints-{name}"
    shutil.copytree(saved / "step-2", resume_dir / "step-2")
    run = train(compile_job(spec, workdir), ranks, "--checkpoint-dir", str(resume_dir), "--resume",
                out=workdir / f"resume-{name}")
    assert_parity(run, reference, steps=range(2, 4))
    assert "resumed from" in run.output
    return resume_dir


@pytest.mark.long
def test_resume_under_another_layout(workdir, reference):
    """Two 8-rank runs; the default run keeps the fast case of the kind,
    `test_zero1_saves_shards_and_resumes_under_another_dp_degree`."""
    saved = save_checkpoints(workdir, "tp2-dp4-sp", 8, reference, "tp2-dp4")
    resumed = resume_elsewhere(workdir, saved, "pp2-dp4", 8, reference, "pp2-dp4")
    assert (resumed / "step-4").is_dir()


def test_asynchronous_checkpoints_resume_like_synchronous_ones(workdir, reference):
    """--async-checkpoint (dcp.async_save, written in the background while training goes on):
    both checkpoints are complete and renamed, and resuming from the first continues exactly."""
    saved = save_checkpoints(workdir, "reference", 1, reference, "async", "--async-checkpoint")
    resume_elsewhere(workdir, saved, "reference", 1, reference, "async-resume")


def test_a_checkpoint_written_before_the_run_settings_were_saved_resumes(workdir, reference):
    """Checkpoints now keep the run's settings (`run_settings`; a resume with other values
    stops: tests/test_faults.py). One written before has none: the step-2 checkpoint is
    rewritten without them (DCP -> torch.save -> DCP, torch's own format converters) and
    resumes exactly as before."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

    saved = save_checkpoints(workdir, "reference", 1, reference, "with-settings")
    whole = workdir / "with-settings.pt"
    dcp_to_torch_save(saved / "step-2", whole)
    state = torch.load(whole, weights_only=False)
    assert state["progress"].pop("settings")["seed"] == 0, "the settings are saved"
    torch.save(state, whole)
    old = workdir / "checkpoints-pre-settings"
    torch_save_to_dcp(whole, old / "step-2")
    resume_elsewhere(workdir, old, "reference", 1, reference, "pre-settings-resume")


@pytest.mark.long
def test_aux_free_expert_bias_resumes_under_another_layout(workdir):
    """The routers' expert bias is model state: ep 2 x dp 2 saves it after step 2, one process
    resumes from it and steps 2 and 3 match the uninterrupted single-process run."""
    import torch.distributed.checkpoint as dcp

    reference = train(compile_job("reference-moe-aux-free", workdir), 1).check()
    saved = save_checkpoints(workdir, "moe-ep2-aux-free", 4, reference, "ep2-aux-free")
    keys = dcp.FileSystemReader(str(saved / "step-2")).read_metadata().state_dict_metadata
    biases = [k for k in keys if k.endswith("feed_forward.expert_bias")]
    assert len(biases) == 3, sorted(keys)  # layers 1-3
    resume_elsewhere(workdir, saved, "reference-moe-aux-free", 1, reference, "aux-free-one")


@pytest.fixture(scope="module")
def zero1_saved(workdir, reference) -> Path:
    """ZeRO-1 on dp 4 trained 4 steps, checkpoints after steps 2 and 4 (shared by the resumes)."""
    return save_checkpoints(workdir, "zero1", 4, reference, "zero1-dp4")


def test_zero1_saves_shards_and_resumes_under_another_dp_degree(workdir, reference, zero1_saved):
    """ZeRO-1 (dp 4) writes each rank's contiguous shard of the flat optimizer states only: in
    the checkpoint's metadata every Adam moment is tiled by blocks none larger than one rank's
    shard of its bucket, and the big matrices are split over several ranks (a gathered moment
    would be one whole block). ZeRO-1 on dp 2 resumes from it; losses and the gradients of
    steps 2 and 3 match the uninterrupted single-process run."""
    import math

    import torch.distributed.checkpoint as dcp

    metadata = dcp.FileSystemReader(str(zero1_saved / "step-2")).read_metadata().state_dict_metadata
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

    resume_elsewhere(workdir, zero1_saved, "zero1-dp2", 2, reference, "zero1-to-zero1-dp2")


@pytest.mark.long
def test_zero1_checkpoint_resumes_under_zero3_on_dp8(workdir, reference, zero1_saved):
    """The same checkpoint under another sharding (zero3, dp 8): 8 processes on the CI's cores,
    left out of the default run (`pytest -m long`); the default run resumes ZeRO-1 on dp 2 from
    it, and test_resume_under_another_layout resumes a zero3 checkpoint under ZeRO-1."""
    resume_elsewhere(workdir, zero1_saved, "fsdp8", 8, reference, "zero1-to-fsdp8")


@pytest.mark.long
def test_zero1_moe_with_tp_and_ep_saves_shards_one_process_resumes(workdir, reference_moe):
    """zero1 under tp 2 (SP) x dp 2 with ep 2 over dp: the dense bucket mixes tp-split and
    tp-replicated parameters and the experts have their own bucket over edp; one process
    resumes from its step-2 checkpoint and steps 2 and 3 match the uninterrupted run."""
    saved = save_checkpoints(workdir, "moe-tp2-ep2-zero1", 4, reference_moe, "moe-zero1")
    resume_elsewhere(workdir, saved, "reference-moe", 1, reference_moe, "moe-zero1-one")


@pytest.mark.long
def test_experts_sharded_on_dim_1_save_and_resume_elsewhere(workdir, reference_moe):
    """FSDP2 shards the experts on dim 1 (2 local experts over an expert group of 4: dp 8, ep 2
    over dp, zero3; tests/e2e/test_expert_shards.py): the step-2 checkpoint resumes in one
    process and under ep2-over-dp (experts on dim 0), steps 2 and 3 matching the uninterrupted
    run."""
    saved = save_checkpoints(workdir, "moe-experts-sharded", 8, reference_moe, "experts-dim1")
    resume_elsewhere(workdir, saved, "reference-moe", 1, reference_moe, "experts-dim1-one")
    resume_elsewhere(workdir, saved, "ep2-over-dp", 4, reference_moe, "experts-dim1-ep2")
