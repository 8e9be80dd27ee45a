"""Compile a spec of tests/e2e/specs, run its generated job with torchrun on CPU, read what it logged.

Also a command line for trying one case by hand:

    .venv/bin/python -m tests.e2e.harness SPEC [train.py options]     # e.g. tp2-dp4-sp

prints the per-step losses and the largest gradient difference against the reference.

Parity, the question every end-to-end test asks, in float32:
- the per-step losses of a run and of the single-process reference differ by at most
  LOSS_TOLERANCE (absolute; the losses are about 5.5);
- the gradients of step 0 agree element by element within GRAD_ATOL + GRAD_RTOL x |reference|
  (rounding: observed differences are about 1e-6 of the norm);
- the gradients of every later step (--save-grads writes every step), computed after AdamW
  steps, agree per parameter within STEP1_RTOL in norm: ||g - g_ref|| <= STEP1_RTOL x ||g_ref||. The first AdamW update is
  g / (|g| + eps), so rounding-level differences in near-zero gradients become parameter
  differences of up to lr x 1e-1, and step 1's gradients differ by up to ~1e-4 of their norm
  with every layout correct; the bugs this is for (a gradient summed twice, an expert gradient
  halved, a missing all-gather, an unsynchronised norm) are off by 1e-2 to 1e2.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "tests" / "e2e" / "specs"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
"""torchrun, as the interpreter running the tests has it (no console script needed on PATH)."""
LOSS_TOLERANCE = 2e-5
GRAD_ATOL = 2e-6
GRAD_RTOL = 1e-4
STEP1_RTOL = 1e-3
LR = "1e-3"
"""Large enough that four AdamW steps change the loss visibly."""
STEPS = 4
RUN_TIMEOUT = 240
"""Seconds for one torchrun (8 processes start in about 10 s on 2 shared cores)."""


WORKER_CRASHES = (signal.SIGSEGV, signal.SIGABRT)
"""Signals a CPU worker has died of inside torch's gloo backend, at random, under the loaded 2-core
machine the suite runs on (SIGSEGV in a tp2-pp2-dp2 1F1B run's collectives; SIGABRT, "terminate
called without an active exception", in a 2-rank ep run): the same job passed three times in a row
each time, and the generated job runs NCCL on GPUs, not gloo. `run_ranks` runs such a job once more."""


def died_of_a_signal(returncode: int, output: str) -> bool:
    """The launcher itself, or the worker torchrun names as the root cause, was killed by one of
    `WORKER_CRASHES` (an assertion, an exception or a timeout is not: those fail at once)."""
    if -returncode in WORKER_CRASHES:
        return True
    cause = output.split("Root Cause", 1)[1] if "Root Cause" in output else ""
    found = re.search(r"exitcode\s*:\s*-(\d+)", cause)
    return bool(found) and int(found.group(1)) in WORKER_CRASHES


def run_ranks(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(command, capture_output=True, text=True, **kwargs)`, run once more when a
    worker died of a signal (`died_of_a_signal`); the second attempt's result stands, and its output
    says that a first attempt crashed and how."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    first = done.stdout + done.stderr
    if done.returncode == 0 or not died_of_a_signal(done.returncode, first):
        return done
    again = subprocess.run(command, capture_output=True, text=True, **kwargs)
    again.stderr += f"\n[harness] a first attempt's worker died of a signal and the job ran again:\n{first[-2000:]}"
    return again


@dataclass
class Run:
    returncode: int
    output: str
    seconds: float
    records: list[dict] = field(default_factory=list)
    grads: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)

    @property
    def losses(self) -> dict[int, float]:
        return {r["step"]: r["loss"] for r in self.records if "loss" in r}

    def check(self) -> Run:
        assert self.returncode == 0, f"torchrun exited {self.returncode}:\n{self.output[-6000:]}"
        return self


def compile_job(spec: str, directory: Path) -> Path:
    """`parc compile` of tests/e2e/specs/SPEC.par into directory/SPEC (through the library)."""
    from parc.atomic import write_tree
    from parc.backends import job_files
    from parc.pipeline import compile_path

    result = compile_path(str(SPECS / f"{spec}.par"))
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    out = directory / spec
    write_tree(str(out), job_files(result.plan))
    return out


def plan_of(spec: str):
    from parc.pipeline import compile_path

    return compile_path(str(SPECS / f"{spec}.par")).plan


def model_module(job: Path, name: str):
    """The job's model.py imported as module `name` (in this process: its custom operators are
    registered here)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, job / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_of_each_kind(cases, kept):
    """`cases` as pytest parameters, those not in `kept` marked `long`: the default run keeps one
    fast case of each kind (the whole suite has a time budget), `pytest -m long` runs every case.
    A case is a value or a tuple of values (several parameters)."""
    kept = set(kept)
    assert kept and kept <= set(cases), f"kept cases {sorted(kept - set(cases))} are not cases"
    return [case if case in kept else
            pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.long)
            for case in cases]


def in_fresh_interpreter(fn, *args):
    """`fn(*args)` in a spawned interpreter. The job's custom operators (parc::block_attention) are
    registered by name, once per process: an earlier test's model.py, collected since, leaves the
    name pointing at an operator a counter or recorder in this process never sees. `fn` must be a
    module-level function and its arguments picklable."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def one_micro_batch(module, plan, mode, dtype: torch.dtype | None = None) -> None:
    """One micro-batch of the job's model, forward and backward, under `mode` (a counter or a
    recorder): weights drawn from N(0, 0.02) with seed 0, in `dtype` if given, tokens as the
    plan's micro-batch and sequence, cross-entropy loss in fp32."""
    torch.manual_seed(0)
    net = module.Transformer()
    for p in net.parameters():
        if p.is_floating_point():
            torch.nn.init.normal_(p, std=0.02)
    if dtype is not None:
        net = net.to(dtype)
    tokens = torch.randint(0, plan.model.vocab, (plan.training.micro_batch, plan.training.seq_len))
    with mode:
        logits = net(tokens)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())
        loss.backward()


def tensor_bytes(x) -> int:
    """Bytes of the tensors in `x` (a tensor, or lists, tuples and dicts of them; anything else
    counts 0): what a recorded op reads or writes."""
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(tensor_bytes(y) for y in x)
    if isinstance(x, dict):
        return sum(tensor_bytes(y) for y in x.values())
    return 0


def only_rank_ledger(plan):
    """The time model's ledger of a one-rank plan, and its knobs (`timing.rank_steps` as the
    torch runtime runs it)."""
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    hw = timing.hardware_of(plan)
    knobs = knobs_of(plan, "torch")
    _, steps = timing.rank_steps(shape_of(plan), knobs, hw, timing.geometry_of(plan, hw), sw=software_of(plan))
    assert len(steps) == 1
    return next(iter(steps.values())).ledger, knobs


def torchrun(job: Path, nproc: int, *args: str, out: Path | None = None, timeout: float = RUN_TIMEOUT,
             grads: bool = True) -> Run:
    """Run train.py of `job` with `nproc` CPU processes; logs and gradients go under `out`."""
    out = out or job / "out"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.jsonl"
    log.unlink(missing_ok=True)
    command = [*TORCHRUN, "--standalone", "--nproc-per-node", str(nproc), "train.py", "--device", "cpu",
               "--log-json", str(log), "--log-every", "1", "--timeout", "120", *args]
    if grads:
        command += ["--save-grads", str(out / "grads")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    try:
        done = run_ranks(command, cwd=job, env=env, timeout=timeout)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = -9, f"timed out after {timeout} s\n{exc.stdout or ''}{exc.stderr or ''}"
    return collect(out, code, output, time.perf_counter() - started)


def collect(out: Path, returncode: int, output: str, seconds: float) -> Run:
    """What a run left under `out` (train.py's JSON log and saved gradients), as a Run."""
    run = Run(returncode, output, seconds)
    log = out / "log.jsonl"
    if log.exists():
        run.records = [json.loads(line) for line in log.read_text().splitlines()]
    for path in sorted((out / "grads").glob("grads-step*-rank*.pt")):
        step = int(path.name.removeprefix("grads-step").split("-")[0])
        run.grads.setdefault(step, {}).update(torch.load(path))
    return run


def train(job: Path, nproc: int, *args: str, **kwargs) -> Run:
    return torchrun(job, nproc, "--steps", str(STEPS), "--lr", LR, *args, **kwargs)


def loss_differences(run: Run, reference: Run) -> dict[int, float]:
    return {step: abs(loss - reference.losses[step]) for step, loss in run.losses.items()}


def grad_difference(run: Run, reference: Run, step: int) -> tuple[float, str]:
    """The largest gradient error as a multiple of its tolerance (<= 1 passes), and where."""
    worst, where = 0.0, ""
    ref = reference.grads[step]
    got = run.grads[step]
    assert ref and got, f"step {step}: no gradients to compare (reference {len(ref)}, run {len(got)})"
    aliases = {"output.weight": "tok_embeddings.weight"}  # a tied pipeline's last-stage copy
    for name in sorted(set(ref) | set(got)):
        mine = got.get(name)
        theirs = ref.get(name, ref.get(aliases.get(name, ""), None))
        assert mine is not None, f"step {step}: no gradient for {name}"
        assert theirs is not None, f"step {step}: unexpected parameter {name}"
        assert mine.shape == theirs.shape, f"{name}: shape {tuple(mine.shape)} != {tuple(theirs.shape)}"
        if step == 0:  # later steps: the norm tolerance (after AdamW steps; module docstring)
            error = ((mine - theirs).abs() / (GRAD_ATOL + GRAD_RTOL * theirs.abs())).max().item()
        else:
            error = ((mine - theirs).norm() / (STEP1_RTOL * theirs.norm() + 1e-12)).item()
        if error > worst:
            worst, where = error, name
    return worst, where


def assert_parity(run: Run, reference: Run, steps: range | None = None, grads: bool = True) -> None:
    """Losses and, unless `grads` is False (a run that saved none), gradients of every step in
    `steps`, which must exist on both sides."""
    run.check()
    steps = steps if steps is not None else range(STEPS)
    assert sorted(run.losses) == list(steps), f"logged steps {sorted(run.losses)}:\n{run.output[-3000:]}"
    for step, diff in loss_differences(run, reference).items():
        assert diff <= LOSS_TOLERANCE, (f"step {step}: loss {run.losses[step]:.7f} vs reference "
                                        f"{reference.losses[step]:.7f} (|diff| {diff:.2e})")
    if grads:
        expected = list(steps)
        assert sorted(run.grads) == expected, f"gradients saved for steps {sorted(run.grads)}, not {expected}"
        assert all(s in reference.grads for s in expected), "the reference saved no gradients for these steps"
    for step in run.grads:
        error, name = grad_difference(run, reference, step)
        assert error <= 1.0, f"step {step}: gradient of {name} off by {error:.2f} x tolerance"


def main(argv: list[str]) -> None:
    import tempfile

    spec, *extra = argv
    plan = plan_of(spec)
    reference_spec = "reference-moe" if plan.model.is_moe else "reference-gpt" if plan.model.tied_embeddings else "reference"
    with tempfile.TemporaryDirectory() as tmp:
        ref = train(compile_job(reference_spec, Path(tmp)), 1).check()
        run = train(compile_job(spec, Path(tmp)), plan.cluster.world_size, *extra)
        print(run.output[-4000:] if run.returncode else "", end="")
        print(f"{spec}: exit {run.returncode} in {run.seconds:.1f} s")
        for step, loss in sorted(run.losses.items()):
            print(f"  step {step}: loss {loss:.7f}  reference {ref.losses.get(step, float('nan')):.7f}")
        for step in sorted(run.grads):
            error, name = grad_difference(run, ref, step)
            print(f"  step {step}: worst gradient {error:.3f} x tolerance ({name})")


if __name__ == "__main__":
    main(sys.argv[1:])
