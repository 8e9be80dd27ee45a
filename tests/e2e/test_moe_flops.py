"""The generated job's MoE layers in a distributed forward (torchrun on CPU, gloo):

- under tensor parallelism each tp rank routes only its own tokens: the routed experts' FLOPs
  per tp rank are 1/tp of one process's, counted by torch.utils.flop_counter.FlopCounterMode
  around every GroupedExperts forward. The tp 1 case is tiny-moe on one rank; the tp 2 cases run
  the same model and tokens with and without sequence parallelism (before this change every tp
  rank routed the whole sequence and the ratio was 1, not 1/2);
- every MoE layer syncs the host once per micro-batch (tests/host_syncs.py counts), also with
  expert parallelism, where the split sizes of the token exchange are that one sync.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from parc.atomic import write_tree
from parc.backends import job_files
from parc.pipeline import compile_path

from .harness import one_of_each_kind, run_ranks

pytestmark = pytest.mark.e2e

TORCHRUN = Path(sys.executable).with_name("torchrun")

SPEC = """job {name}
{layout}
model tiny-moe {{
  moe-layers from 1
  shared-experts {shared}
  {moe}
}}
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 4
  micro-batch {micro}
}}
{options}
"""

PROBE = '''
"""Forward of the job's model on fixed tokens; FLOPs of the routed experts on this rank."""
import json, os, sys
import torch
import torch.distributed as dist
from torch.utils.flop_counter import FlopCounterMode
import model, parallel
from host_syncs import HostSyncs

dist.init_process_group("gloo")
meshes = parallel.build_meshes("cpu")
rt = parallel.parallelize(meshes, torch.device("cpu"), torch.float32, 0)
counted = []
syncs = []

def enter_moe(module, args):
    module._syncs = HostSyncs()
    module._syncs.__enter__()

def leave_moe(module, args, output):
    module._syncs.__exit__(None, None, None)
    syncs.append(module._syncs.seen)

def enter(module, args):
    module._flops = FlopCounterMode(display=False)
    module._flops.__enter__()

def leave(module, args, output):
    module._flops.__exit__(None, None, None)
    counted.append(module._flops.get_total_flops())

for part in rt.parts:
    for block in part.layers.values():
        if hasattr(block.feed_forward, "experts"):
            block.feed_forward.experts.register_forward_pre_hook(enter)
            block.feed_forward.experts.register_forward_hook(leave)
            block.feed_forward.register_forward_pre_hook(enter_moe)
            block.feed_forward.register_forward_hook(leave_moe)
tokens = torch.randint(0, model.VOCAB, (4, model.SEQ_LEN), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    rt.parts[0](tokens)
with open(os.path.join(sys.argv[1], f"flops-{dist.get_rank()}.json"), "w") as f:
    json.dump({"flops": counted, "syncs": syncs}, f)
dist.destroy_process_group()
'''


def probe(tmp_path: Path, name: str, layout: str, ranks: int, options: str = "", micro: int = 4,
          moe: str = "", shared: int = 1) -> list[dict]:
    """Per rank, of each MoE layer in one forward: the routed experts' FLOPs ("flops") and the
    host syncs ("syncs", what each was)."""
    spec = tmp_path / f"{name}.par"
    spec.write_text(SPEC.format(name=name, layout=layout, options=options, micro=micro, moe=moe,
                                 shared=shared))
    result = compile_path(str(spec))
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    job = tmp_path / name
    write_tree(str(job), job_files(result.plan))
    (job / "probe.py").write_text(PROBE)
    (job / "host_syncs.py").write_text((Path(__file__).parent.parent / "host_syncs.py").read_text())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = run_ranks([str(TORCHRUN), "--standalone", "--nproc-per-node", str(ranks), "probe.py", str(job)],
                     cwd=job, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads((job / f"flops-{rank}.json").read_text()) for rank in range(ranks)]


def assert_one_sync_per_layer(ranks: list[dict]) -> None:
    for rank, found in enumerate(ranks):
        assert len(found["syncs"]) == 3, found  # layers 1-3 are MoE
        for layer, seen in enumerate(found["syncs"], 1):
            assert len(seen) == 1, f"rank {rank}, layer {layer}: {len(seen)} host syncs {seen}"


@pytest.mark.parametrize("sp", one_of_each_kind(["off", "on"], ["on"]))
def test_expert_flops_per_tp_rank_are_one_over_tp(tmp_path, sp):
    [one] = probe(tmp_path, "tp1", "dp 1 on nodes(1 gpus, nvlink)", 1)
    whole = one["flops"]
    assert len(whole) == 3 and all(f > 0 for f in whole)  # layers 1-3 are MoE
    # with SP, no shared experts: the MoE block is then the routed path alone
    shards = probe(tmp_path, f"tp2-sp-{sp}", "tp 2 on nodes(2 gpus, nvlink)", 2,
                   f"tp {{\n  sequence-parallel {sp}\n}}", shared=0 if sp == "on" else 1)
    for rank, found in enumerate(shards):
        assert found["flops"] == [f // 2 for f in whole], f"tp rank {rank}: {found['flops']} vs one process {whole}"
    assert_one_sync_per_layer([one, *shards])


@pytest.mark.parametrize("moe", one_of_each_kind(["", "moe-balance aux-free 0.001\n  capacity-factor 1.0"], [""]))
def test_one_host_sync_per_moe_layer_under_expert_parallelism(tmp_path, moe):
    """The dispatcher reads both count tables at once: the layer's one sync (also with the
    aux-free bias and a capacity limit, whose dropped copies stay behind)."""
    assert_one_sync_per_layer(probe(tmp_path, "ep2", "ep 2 on nodes(2 gpus, nvlink)", 2, micro=2, moe=moe))
