"""launch/slurm.sbatch submitted to a real Slurm that the test starts (tests/slurm/).

The cluster has two nodes on this machine with four (placeholder) GPUs each, so the generated
script is submitted unchanged: `#SBATCH --nodes`, `--gpus-per-node` and `--exclusive` are
scheduled by slurmctld, srun starts one torchrun per node, and the rendezvous host comes from
`scontrol show hostnames`. The job runs with `--device cpu` and must finish with the same
losses as a single-node run of the same job.

Skipped only when the Slurm or munge programs are missing (Debian: `apt-get install slurm-wlm
munge`; .ci/run installs them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from .e2e.harness import RUN_TIMEOUT, STEPS, assert_parity
from .launcher_runs import collect, compile_tiny, reference, train_args
from .slurm import INSTALL, LocalSlurm, missing_binaries

pytestmark = pytest.mark.skipif(bool(missing_binaries()),
                                reason=f"needs {', '.join(missing_binaries())} ({INSTALL})")

TRIVIAL = """#!/bin/bash
#SBATCH --job-name=harness
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --exclusive
#SBATCH --output=%x-%j.out
set -euo pipefail
echo "first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
srun bash -c 'echo "task=$SLURM_PROCID node=$SLURMD_NODENAME gpus=$SLURM_GPUS_ON_NODE args=$*"' _ "$@"
"""


@pytest.fixture(scope="module")
def slurm():
    with LocalSlurm(nodes=2, gpus_per_node=4) as cluster:
        yield cluster


@pytest.mark.slow
def test_the_harness_runs_a_two_node_job_with_gpus(slurm, tmp_path):
    (tmp_path / "trivial.sbatch").write_text(TRIVIAL, encoding="utf-8")
    result = slurm.run("trivial.sbatch", tmp_path, "harness-%j.out", args=("a b", "c"), timeout=60)
    assert (result.state, result.exit_code) == ("COMPLETED", "0:0"), result.output + slurm.logs()
    assert sorted(slurm.hostnames(result.node_list)) == sorted(slurm.node_names)
    lines = result.output.splitlines()
    first = sorted(slurm.node_names)[0]  # Slurm lists an allocation's nodes in name order
    assert lines[0] == f"first={first}"
    tasks = sorted(lines[1:])
    assert tasks == sorted(f"task={rank} node={name} gpus=4 args=a b c"
                           for rank, name in enumerate(sorted(slurm.node_names)))


@pytest.mark.slow
def test_a_failing_job_is_reported_as_failed(slurm, tmp_path):
    (tmp_path / "fail.sbatch").write_text("#!/bin/bash\n#SBATCH --output=fail-%j.out\necho before\nexit 3\n",
                                          encoding="utf-8")
    result = slurm.run("fail.sbatch", tmp_path, "fail-%j.out", timeout=60)
    assert (result.state, result.exit_code, result.output) == ("FAILED", "3:0", "before\n")


@pytest.mark.e2e
def test_generated_sbatch_runs_tiny_to_completion_like_one_process(slurm, tmp_path):
    expected = reference()
    job = compile_tiny(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    # sbatch hands the submitting environment to the job: torchrun from this virtual environment
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
    result = slurm.run("launch/slurm.sbatch", job, "tiny-%j.out", args=tuple(train_args(out)), env=env,
                       timeout=RUN_TIMEOUT)
    assert (result.state, result.exit_code) == ("COMPLETED", "0:0"), result.output[-6000:] + slurm.logs()
    run = collect(out, 0, result.output, 0.0)
    assert_parity(run, expected)
    assert sorted(run.grads) == list(range(STEPS)), "no gradients were saved: the parity check would be vacuous"
    # the allocation had both nodes, and srun (one task per node) ran a torchrun on each: train.py's
    # start-up guard stops (exit 2) any rank whose WORLD_SIZE or LOCAL_WORLD_SIZE is not 8 and 4
    assert sorted(slurm.hostnames(result.node_list)) == sorted(slurm.node_names)
