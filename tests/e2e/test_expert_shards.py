"""FSDP2 shards routed experts evenly: every rank holds 1/world of every expert weight.

A routed-expert stack is one (local experts, rows, columns) tensor. FSDP2 shards on dim 0 by
default and pads that dim to a multiple of its shard group, so with fewer local experts than
ranks in the group each rank stored a whole expert (real or padding: twice its share in the
first case below). The job now shards such stacks on another dim (`EXPERT_SHARD_DIMS`, from
parc's `expert_shard_dim`, as torchtitan does for MoE). Checked on the job's own parallelize,
built as one rank of its real world in a fake process group (the rehearsal's, fast: nothing
is trained), with real tensors: the bytes of each expert parameter's local storage (FSDP2's
padded shard) against

- a closed form: the full tensor's bytes / world size (each case spreads every expert over all
  of its ranks: ep x the expert shard group);
- the memory model: the rank's expert parameters (`rank_params`) plus FSDP2's padding
  (`rank_padding`) over the expert shard group, in fp32.

The cases (tests/e2e/specs): `moe-experts-sharded`, 2 local experts (4 / ep 2) over an expert
group of 4 (dp 8 / ep 2), the experts' own FSDP2 unit; `moe-dp8-experts-sharded` (long),
4 experts over 8 data ranks inside the block's unit; `moe-hsdp-experts`, hsdp 2 x 4 with
ep 2 over dp 8: the dense parameters are hybrid-sharded, the experts are sharded over all 4
ranks of their edp group (the mesh the job reduces them over, `runtime.ep_mesh`), on dim 1,
which the memory model's expert shard group follows (`Knobs.expert_shard_group`; it had
assumed hsdp's shard of 4 over dp 8, a group of 2: twice the bytes). Training parity of the
first two with the one-process reference: tests/e2e/test_parity.py (MOE).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .harness import compile_job, plan_of

pytestmark = pytest.mark.e2e

PROBE = textwrap.dedent("""
    import json, sys
    import torch
    import parallel, rehearse
    meshes = rehearse.join_fake_world(int(sys.argv[1]), "cpu")
    rt = parallel.parallelize(meshes, torch.device("cpu"), torch.float32, 0)
    out = {}
    for part in rt.parts:
        for name, p in part.named_parameters():
            if ".experts." in name:
                local = p.to_local()
                out[parallel.fqn(name)] = dict(numel=p.numel(), element=local.element_size(),
                                               stored=local.untyped_storage().nbytes(),
                                               placements=[str(x) for x in p.placements])
    print(json.dumps(out))
""")


def expert_shards(job: Path, rank: int) -> dict[str, dict]:
    """Each expert parameter of `rank` as the job builds it: full elements, stored bytes."""
    env = dict(os.environ, PYTHONPATH=str(job))
    done = subprocess.run([sys.executable, "-c", PROBE, str(rank)], cwd=job, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def model_expert_bytes(plan) -> float:
    """The memory model's fp32 expert parameter bytes on one rank (no pp: stage 0)."""
    from parc import memory
    from parc.memory.model import rank_padding, rank_params

    k, shape = memory.knobs_of(plan), memory.shape_of(plan)
    params = rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)[0]
    padding = rank_padding(shape, k, params)
    return 4 * (params.params.expert + padding.expert) / k.expert_shard_group


CASES = [
    pytest.param("moe-experts-sharded", 5, id="moe-experts-sharded"),
    pytest.param("moe-dp8-experts-sharded", 7, marks=pytest.mark.long, id="moe-dp8-experts-sharded"),
    # long: the default run checks the same group against the job's expert mesh in
    # tests/test_expert_mesh.py (`test_the_memory_models_expert_shard_group_is_the_jobs`)
    pytest.param("moe-hsdp-experts", 6, marks=pytest.mark.long, id="moe-hsdp-experts"),
]


@pytest.mark.parametrize("spec,rank", CASES)
def test_every_rank_holds_its_share_of_every_expert(spec, rank, tmp_path):
    plan = plan_of(spec)
    shards = expert_shards(compile_job(spec, tmp_path), rank)
    assert len(shards) == 3 * len(plan.model.moe_layers), sorted(shards)  # w1, w2, w3 per MoE layer
    world = plan.cluster.world_size
    for name, s in shards.items():
        assert s["stored"] == s["numel"] * s["element"] // world, (name, s)
    assert sum(s["stored"] for s in shards.values()) == model_expert_bytes(plan)
