"""launch/torchrun.sh for real: two "nodes" on this machine train tiny.par like one process.

specs/tiny.par is 2 nodes x 4 GPUs (tp 2 x pp 2 x dp 2). The test starts the generated script
twice, as the README says to on two machines, with the rendezvous on 127.0.0.1; the two torchrun
agents meet there, take 4 ranks each, and train on CPU. The per-step losses and the gradients of
every step must match the single-process reference (tests/e2e/harness.py's tolerances).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .e2e.harness import RUN_TIMEOUT, STEPS, assert_parity
from .launcher_runs import collect, compile_tiny, reference, train_args
from .slurm.cluster import free_port

pytestmark = pytest.mark.e2e


def start_node(job: Path, endpoint: str, rdzv_id: str, args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return subprocess.Popen(["bash", str(job / "launch" / "torchrun.sh"), "--rdzv-endpoint", endpoint,
                             "--rdzv-id", rdzv_id, *args], cwd=job, env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(processes: list[subprocess.Popen], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for other in processes:  # the script's whole session: torchrun and its workers
                if other.poll() is None:
                    os.killpg(other.pid, signal.SIGKILL)
                    other.wait()
            codes.append(-9)
    return codes


def test_torchrun_script_as_two_nodes_matches_one_process(tmp_path):
    expected = reference()
    job = compile_tiny(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    endpoint = f"127.0.0.1:{free_port()}"
    started = time.perf_counter()
    nodes = [start_node(job, endpoint, f"two-nodes-{os.getpid()}", train_args(out), tmp_path / f"node{i}.log")
             for i in range(2)]
    codes = finish(nodes, timeout=RUN_TIMEOUT)
    seconds = time.perf_counter() - started
    output = "\n".join(f"--- node {i} (exit {code})\n" + (tmp_path / f"node{i}.log").read_text(errors="replace")
                       for i, code in enumerate(codes))
    assert codes == [0, 0], output[-6000:]
    run = collect(out, 0, output, seconds)
    assert_parity(run, expected)
    # both scripts' torchrun agents took part, 4 ranks each: train.py's start-up guard stops
    # (exit 2) any rank whose WORLD_SIZE or LOCAL_WORLD_SIZE is not the plan's 8 and 4
    assert sorted(run.grads) == list(range(STEPS)), "no gradients were saved: the parity check would be vacuous"
