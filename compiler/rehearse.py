"""`parc rehearse`: run one rank of the generated job at its real world size and put its
measured memory beside the memory model's prediction.

The job's own `train.py --rehearse` (backends/torch/templates/rehearse.py.jinja) does the
work in a child process with the current interpreter, so that `parc` never imports torch:
a fake process group at the plan's world size, fake tensors, torch's FSDPMemTracker. This
module only writes the job to a temporary directory, starts that process, and compares.

Compared per rank (the memory model predicts the worst rank of each pipeline stage; every rank
of a stage holds the same shapes, so the rehearsed rank stands for its stage):

- parameters, gradients, optimizer states: the model's `model_states` against the tracker's
  sharded parameters after the step, gradients after the step's last backward (FSDP2's
  accumulated unsharded fp32 gradients are freed by then: they count in the peak), optimizer states after the step (less Adam's scalar
  step counters, which torch keeps on the host for GPU parameters);
- beyond states: the peak less parameters and optimizer states (activations, gradients,
  temporaries, buffers): the part the model derives rather than counts;
- peak: the model's stage total (every category) against
  the tracker's peak over the steps, before the checkpoint's state dict is built (the model
  counts a checkpoint apart, `StageMemory.checkpoint`): everything the rank's tensors held at
  its worst moment, as a GPU would hold them: on fake CPU tensors the CPU composite RMSNorm's
  fp32 copies are left out and named (`rehearsed`).

Beside them, reserved memory (`reserved`): the rank's allocation sequence (`train.py
--allocator-trace`) replayed through torch's caching allocator (`memory.allocator`), plus the
cuBLAS workspaces the fake run never allocates, against the model's predicted
`max_memory_reserved` for the stage (its peak plus the allocator's overheads, `gpu.py`). An
account, not a category held to the tolerance: the model's fragmentation is an allowance. The
replay runs under the part's real limit (`replay_limit`), so it releases cached segments where a
GPU would and, where a GPU would run out of memory, says at which event of the trace.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from array import array
from dataclasses import dataclass
from pathlib import Path

from .plan import Plan

CATEGORIES = ("parameters", "gradients", "optimizer_states", "beyond_states", "peak")


class RehearsalError(Exception):
    """The rehearsal could not run (no torch, the job failed): a message for the user."""


@dataclass(frozen=True)
class Row:
    """One category of one rank: predicted and rehearsed bytes."""

    rank: int
    stage: int
    category: str
    predicted: int
    rehearsed: int

    @property
    def difference_percent(self) -> float:
        """(predicted - rehearsed) / rehearsed: negative when the model says less than the job holds."""
        if self.rehearsed == 0:
            return 0.0 if self.predicted == 0 else 100.0
        return 100.0 * (self.predicted - self.rehearsed) / self.rehearsed


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def unrehearsable(plan: Plan, file: str) -> str | None:
    """Why this plan has no rehearsal to run (a message for the user), or None. The rehearsal is
    the `rehearse.py` of parc's own PyTorch job (`target torch`): Megatron-LM's and torchtitan's
    jobs are their frameworks' programs, which parc does not write, and a layout with holes has
    no job until `parc search` fills them."""
    if plan.holes:
        names = ", ".join(h.name for h in plan.holes)
        return (f"the rehearsal runs one rank of a complete layout and {len(plan.holes)} "
                f"hole{'s are' if len(plan.holes) > 1 else ' is'} open ({names}); fill them first: "
                f"parc search {file} --write, then rehearse it again")
    if plan.target.name != "torch":
        return (f"the rehearsal runs the job parc writes for `target torch`; this spec's target is "
                f"{plan.target.name}, whose job is {TARGET_PROGRAMS[plan.target.name]}, not parc's; "
                "rehearse the same layout with `target torch` to check the memory model's figures")
    return None


TARGET_PROGRAMS = {"megatron": "Megatron-LM's pretrain_gpt.py", "torchtitan": "torchtitan's train.py"}


def run(files: dict[str, str], rank: int | None, classes: bool, steps: int | None, timeout: float,
        limit: int | None = None, policy: str = "default", also: tuple[str, ...] = ()) -> list[dict]:
    """Write the job to a temporary directory and run `train.py --rehearse` there; each rank's
    allocation trace is replayed under `limit` (`replay_limit`'s bytes; None: unlimited) with the
    allocator `policy` (`replay_policy`'s), and under each policy in `also` (`replay_trace`)."""
    if not torch_available():
        raise RehearsalError("the rehearsal runs the generated PyTorch job and torch is not installed; "
                             "install the torch extra: pip install 'parc[torch]'")
    with tempfile.TemporaryDirectory(prefix="parc-rehearse-") as tmp:
        for name, text in files.items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        out = Path(tmp) / "rehearsal.json"
        command = [sys.executable, "train.py", "--rehearse", "--rehearse-json", str(out), "--device", "cpu",
                   "--allocator-trace", str(Path(tmp) / "allocator.trace")]
        command += ["--ranks", "classes"] if classes else ["--rank", str(rank or 0)]
        if steps is not None:
            command += ["--steps", str(steps)]
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        try:
            done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RehearsalError(f"the rehearsal did not finish within {timeout:.0f} s") from exc
        if done.returncode != 0 or not out.exists():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise RehearsalError(f"the rehearsal failed (exit {done.returncode}):\n{tail}")
        records = json.loads(out.read_text())
        for record in records:
            replay_trace(record, limit, policy, also)
        return records


def replay_limit(plan: Plan) -> int:
    """The bytes the plan's GPU lets the caching allocator reserve for the rank's tensors: the
    memory model's reserved limit (HBM less the CUDA context and NCCL, `Estimate.reserved_limit_bytes`)
    less the cuBLAS workspaces, which a GPU takes from the same allocator but the fake run's
    trace does not hold."""
    from .memory import estimate
    from .memory.gpu import CUBLAS_HANDLES, CUBLAS_WORKSPACE

    return estimate(plan).reserved_limit_bytes - CUBLAS_WORKSPACE * CUBLAS_HANDLES


def replay_policy(plan: Plan) -> str:
    """The caching allocator's policy the plan's job runs under (`allocator.policy_of` of the
    spec's launch environment; without an allocator variable there, the generated train.py's
    expandable segments)."""
    from .memory.allocator import policy_of

    return policy_of(plan.launch.environment())


def replay_trace(record: dict, limit: int | None = None, policy: str = "default",
                 also: tuple[str, ...] = ()) -> None:
    """Replace the record's trace file (in the temporary directory, about to go) by its replay
    through the caching allocator under `limit` and `policy` (`allocator_replay`, with
    `out_of_memory` where the replay ran out; `allocator_replays`: one per policy in `also`); the
    file's name is dropped, so that the JSON stays the same from run to run."""
    from .memory.allocator import replay

    trace = record.get("allocator_trace")
    if trace is None:
        return
    events = array("q")
    with open(trace.pop("file"), "rb") as stream:
        events.fromfile(stream, trace["events"])
    record["allocator_replay"] = replay(events, trace["skip"], limit=limit, policy=policy).json()
    if also:  # the same sequence under other policies (benchmarks/reserve_replay.py sets them side by side)
        record["allocator_replays"] = {other: replay(events, trace["skip"], limit=limit, policy=other).json()
                                       for other in also}
    trace["skipped"] = len(trace.pop("skip"))


def pp_stage(plan: Plan, record: dict) -> int:
    return int(record["coordinates"].get("pp", 0))


def dense_shard_index(plan: Plan, rank: int) -> int:
    """`rank`'s position in the group its dense parameters are sharded over: its coordinates on
    the data axes (dp, cp, and ep where it is an axis of its own; hsdp: dp's shard part),
    flattened in rank order, slowest first, as the job's data mesh flattens them."""
    lay = plan.layout
    coordinates = lay.coordinates(rank)
    index = 0
    for axis in reversed(lay.axes):
        if axis.name not in ("dp", "cp", "ep") or (axis.name == "ep" and lay.ep.folded_over):
            continue
        degree, coordinate = axis.degree, coordinates[axis.name]
        if axis.name == "dp" and lay.dp.sharding == "hsdp":
            degree, coordinate = lay.dp.shard, coordinate % lay.dp.shard
        index = index * degree + coordinate
    return index


def predicted(plan: Plan, stage: int, rank: int | None = None) -> dict[str, int]:
    """The memory model's bytes for one rank of pipeline stage `stage`, in rehearsal categories,
    for the rehearsal's own conditions: fake tensors on CPU (`Knobs.device = "fake"`: the same
    kernels' memory as a GPU, but a meta kernel's where a GPU kernel keeps scratch of its own;
    the one that differs is the embedding's backward, `activations.embedding_backward_buffer`).

    The model's stage figure is the stage's worst rank. Given `rank`, its optimizer states (and
    so its peak) are that rank's own: a tail rank of an uneven FSDP2 shard holds fewer rows of
    Adam's moments (`parameters.fsdp_shard_shortfall`); its parameters and gradients are the
    padded shard's, as on every rank."""
    from dataclasses import replace

    from .memory import knobs_of, per_stage, shape_of
    from .memory.model import rank_padding, rank_params
    from .memory.parameters import fsdp_shard_shortfall
    from .memory.states import model_states, optimizer_bytes

    knobs = replace(knobs_of(plan), device="fake")
    shape = shape_of(plan)
    params = rank_params(shape, knobs.tp, knobs.ep, knobs.pp, knobs.virtual_stages, knobs.schedule, knobs.split,
                         knobs.runtime)[stage]
    states = model_states(params.params, knobs, params.per_chunk, rank_padding(shape, knobs, params))
    memory = per_stage(shape, knobs)[stage]
    short = 0
    if rank is not None and knobs.runtime == "torch" and knobs.sharding in ("zero2", "zero3", "hsdp"):
        missing = fsdp_shard_shortfall(shape, params.chunks, knobs.tp, knobs.ep, knobs.dense_shard_group,
                                       dense_shard_index(plan, rank), knobs.runtime)
        short = round(optimizer_bytes(knobs.optimizer, knobs.runtime) * (missing.linear + missing.other))
    return {"parameters": states.params, "gradients": states.grads,
            "optimizer_states": states.optimizer - short, "peak": memory.total - short,
            "beyond_states": memory.total - memory.params - memory.optimizer}


def rehearsed(record: dict) -> dict[str, int]:
    """The tracker's figures; `beyond_states` is the step's peak less the parameters (sharded and
    gathered) and optimizer states held then: activations, gradients (FSDP2's accumulated ones
    included) and every temporary and buffer, against the model's total less the same.

    The peak is the GPU figure where the rehearsal ran on fake CPU tensors
    (`step_peak_fused_norm`): without the fp32 copies the CPU's composite RMSNorm makes in its
    forward and a GPU's fused kernel does not (the record names them, `cpu_norm_copies_at_peak`
    at the CPU's own peak, `step_peak`), with the input the fused kernel saves held instead."""
    peak = record.get("step_peak_fused_norm", record["step_peak"])
    return {"parameters": record["after_step"]["parameters"], "gradients": record["after_backward"]["gradients"],
            "optimizer_states": record["after_step"]["optimizer_states"] - record["optimizer_step_counters"],
            "peak": peak["total"],
            "beyond_states": peak["total"] - peak["parameters"] - peak["gathered_parameters"]
            - peak["optimizer_states"]}


def compare(plan: Plan, records: list[dict]) -> list[Row]:
    rows = []
    for record in records:
        stage = pp_stage(plan, record)
        want, got = predicted(plan, stage, record["rank"]), rehearsed(record)
        rows += [Row(record["rank"], stage, c, want[c], got[c]) for c in CATEGORIES]
    return rows


@dataclass(frozen=True)
class Reserved:
    """One rank's reserved memory: the allocator replay's against the model's."""

    rank: int
    stage: int
    replayed: dict
    """`allocator.Replay.json()` of the rank's trace."""
    workspaces: int
    """cuBLAS workspaces (`gpu.CUBLAS_WORKSPACE` x `gpu.CUBLAS_HANDLES`): reserved on a GPU, not
    in a fake run's trace."""
    peak: int
    """The model's peak of tensors for the rank (`predicted`'s)."""
    overheads: int
    """What the model adds inside the allocator: cuBLAS, fragmentation, the loss's stranded blocks
    (cached logits, the output layer's staging block; `gpu.py`)."""

    @property
    def predicted(self) -> int:
        """The model's `max_memory_reserved` for this rank."""
        return self.peak + self.overheads

    @property
    def replayed_reserved(self) -> int:
        return self.replayed["max_reserved_bytes"] + self.workspaces

    @property
    def difference_percent(self) -> float:
        """(predicted - replayed) / replayed: negative when the model reserves less."""
        return 100.0 * (self.predicted - self.replayed_reserved) / self.replayed_reserved

    @property
    def out_of_memory(self) -> dict | None:
        """Where the replay ran out of the part's memory (`allocator.replay`'s record), or None."""
        return self.replayed.get("out_of_memory")

    def json(self) -> dict:
        return {"rank": self.rank, "stage": self.stage, "replay": self.replayed,
                "cublas_workspace_bytes": self.workspaces,
                "replayed_max_memory_reserved_bytes": self.replayed_reserved,
                "predicted_peak_bytes": self.peak, "predicted_allocator_overheads_bytes": self.overheads,
                "predicted_max_memory_reserved_bytes": self.predicted,
                "difference_percent": round(self.difference_percent, 2), "out_of_memory": self.out_of_memory}


def reserved(plan: Plan, records: list[dict]) -> list[Reserved]:
    """Each rehearsed rank's replayed reserve beside the model's (ranks without a trace left out)."""
    from .memory import estimate
    from .memory.gpu import CUBLAS_HANDLES, CUBLAS_WORKSPACE

    gpu = estimate(plan).overheads
    out = []
    for record in records:
        if "allocator_replay" not in record:
            continue
        stage = pp_stage(plan, record)
        out.append(Reserved(rank=record["rank"], stage=stage, replayed=record["allocator_replay"],
                            workspaces=CUBLAS_WORKSPACE * CUBLAS_HANDLES,
                            peak=predicted(plan, stage, record["rank"])["peak"], overheads=gpu.inside_allocator))
    return out


def report(plan: Plan, records: list[dict], rows: list[Row], tolerance: float) -> dict:
    """The JSON document of `parc rehearse --format json`. `passed` is what the exit status
    reports: every category within the tolerance and no rank's allocator replay out of the
    part's memory (a replay that runs out is a rank that would run out on the GPU unless the
    allocator's streams or the CPU run's own requests differ from it, which docs/memory-model.md
    lists under what the replay leaves out: a failure worth stopping for, as a category past the
    tolerance is)."""
    accounts = reserved(plan, records)
    within = all(abs(r.difference_percent) <= tolerance for r in rows)
    out_of_memory = any(a.out_of_memory is not None for a in accounts)
    return {
        "job": plan.launch.job, "world_size": plan.cluster.world_size, "tolerance_percent": tolerance,
        "within_tolerance": within, "replay_out_of_memory": out_of_memory,
        "passed": within and not out_of_memory,
        "rows": [{"rank": r.rank, "stage": r.stage, "category": r.category, "predicted_bytes": r.predicted,
                  "rehearsed_bytes": r.rehearsed, "difference_percent": round(r.difference_percent, 2)}
                 for r in rows],
        "reserved": [a.json() for a in accounts],
        "ranks": records,
    }


def size(n: int) -> str:
    """Bytes in the largest binary unit that keeps a whole number in front."""
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def render(plan: Plan, rows: list[Row], tolerance: float, records: list[dict] | None = None) -> str:
    lines = [f"rehearsal of {plan.launch.job} at {plan.cluster.world_size:,} ranks (fake process group, "
             "fake tensors; torch's FSDPMemTracker)", "",
             f"{'rank':>6} {'stage':>5}  {'category':<17} {'predicted':>12} {'rehearsed':>12} {'diff':>8}"]
    for r in rows:
        flag = "" if abs(r.difference_percent) <= tolerance else "  past tolerance"
        lines.append(f"{r.rank:>6} {r.stage:>5}  {r.category:<17} {size(r.predicted):>12} {size(r.rehearsed):>12} "
                     f"{r.difference_percent:>+7.1f}%{flag}")
    accounts = reserved(plan, records or [])
    if accounts:
        policies = sorted({a.replayed.get("policy", "default") for a in accounts})
        policy = " and ".join("expandable segments" if p == "expandable" else "its default policy" for p in policies)
        lines += ["", "max_memory_reserved: the rank's allocations replayed through torch's caching allocator "
                  f"(parc.memory.allocator, {policy}) under the part's limit, plus cuBLAS workspaces, against the model's "
                  "prediction; 'beyond peak' is the replayed reserve less the allocated peak",
                  f"{'rank':>6} {'stage':>5}  {'allocated':>12} {'replayed':>12} {'beyond peak':>12} "
                  f"{'predicted':>12} {'diff':>8}"]
        for a in accounts:
            flag = "" if a.out_of_memory is None else "  out of memory"
            lines.append(f"{a.rank:>6} {a.stage:>5}  {size(a.replayed['max_allocated_bytes']):>12} "
                         f"{size(a.replayed_reserved):>12} "
                         f"{size(a.replayed['reserved_beyond_allocated_peak_bytes']):>12} "
                         f"{size(a.predicted):>12} {a.difference_percent:>+7.1f}%{flag}")
        lines += [out_of_memory_line(a) for a in accounts if a.out_of_memory is not None]
    return "\n".join(lines) + "\n"


def out_of_memory_line(account: Reserved) -> str:
    """Where a rank's replay ran out of the part's memory, in words."""
    oom = account.out_of_memory
    return (f"rank {account.rank}: out of memory at event {oom['event']:,} of its trace (allocation "
            f"{oom['allocation']:,}, {size(oom['requested_bytes'])}): a {size(oom['segment_bytes'])} segment "
            f"past the {size(account.replayed['limit_bytes'])} the allocator may reserve, "
            f"{size(oom['reserved_bytes'])} reserved after releasing its cached segments; the figures above "
            "are the trace's up to there")
