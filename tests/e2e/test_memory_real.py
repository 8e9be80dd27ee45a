"""parc's memory model against the tensors the generated runtime allocates (issue 3, section 5).

Each case compiles a spec of tests/e2e/specs (`mem-*.par`, and two of the parity specs), runs two steps of it with torchrun on
CPU in fp32 with `train.py --measure-memory` (every rank's parameter shards, gradients after the
backward, optimizer states after the step, what a checkpoint's state dict gathers, FSDP's
gathered parameters, and the activations each micro-batch saves for backward, per block, metered
with saved_tensors_hooks), and compares them with the memory model run for the same settings
(`precision="fp32"`, `device="cpu"`):

- parameters, gradients and optimizer states of every rank equal the model's to the byte (where
  tp does not divide the vocabulary, the model describes the fullest tp rank: it is equal, the
  others hold less);
- the activations one micro-batch saves, per layer and per chunk, are within 10 % of the model
  (MoE layers: the mean over the ranks that exchange tokens, because the model assumes balanced
  routing and a real batch is not balanced);
- FSDP's gathered parameter buffers never exceed the model's figure, and equal it where every
  layer stays gathered (zero2, and every FSDP mode, none included, under a zero-bubble
  schedule; zero1 runs no FSDP2 and gathers nothing); no checkpoint gathers optimizer states.

    .venv/bin/python -m tests.e2e.test_memory_real [--write]

runs the cases and prints the table of measured and predicted figures (--write puts it in
docs/memory-model.md, which test_the_document_table_is_measured holds current).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import pytest

from .harness import ROOT, compile_job, one_of_each_kind, plan_of, torchrun

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("memory-real")]
"""One worker runs the module (the README's `--dist loadgroup`): its launched runs are cached per process."""

CASES = (
    "mem-tp2-dp2-ddp",            # ddp, tp without SP, no recomputation, vocabulary 255 over tp 2
    "mem-tp2-sp-zero3",           # zero3, tp with SP, selective
    "mem-hsdp-full",              # hsdp 2 x 2, full recomputation
    "mem-pp2-1f1b-zero2",         # 1F1B, zero2
    "mem-pp2-interleaved-zero1",  # interleaved 1F1B (2 chunks per rank), zero1
    "mem-zbv-tied-zero1",         # ZB-V, zero1, tied embeddings, LayerNorm/GELU/learned positions
    "mem-cp2-ring",               # ring context parallelism, zero2
    "cp2-all-gather",             # cp 2 with K/V all-gathered (tests/e2e's parity spec), ddp
    "cp2-all-to-all",             # cp 2, Ulysses (tests/e2e's parity spec), ddp
    "mem-ep2-moe",                # MoE, ep 2 as a layout axis, zero2, selective
    "mem-moe-tp2-sp-zero3",       # MoE under tp 2 with SP, ep 2 over dp, zero3
)
DEFAULT_CASES = ("mem-tp2-sp-zero3", "mem-zbv-tied-zero1", "mem-cp2-ring", "mem-ep2-moe")
"""The cases of the default run, one of each kind (zero3 with tp and SP; a zero-bubble schedule with
zero1 and tied embeddings; context parallelism; MoE); `pytest -m long` measures every case."""
TOLERANCE = 0.10
"""Saved activations per micro-batch: |measured / predicted - 1| at most this."""
DOC = ROOT / "docs" / "memory-model.md"
BEGIN = "<!-- BEGIN MEASURED: .venv/bin/python -m tests.e2e.test_memory_real --write -->"
END = "<!-- END MEASURED -->"


# ---------------------------------------------------------------------------------------------
# Measuring and predicting


def measure(spec: str, directory: Path) -> list[dict]:
    """One step of the spec's generated job on CPU; every rank's measurement, by rank."""
    job = compile_job(spec, directory)
    out = job / "memory.json"
    run = torchrun(job, plan_of(spec).cluster.world_size, "--steps", "2", "--measure-memory", str(out),
                   grads=False).check()
    assert out.exists(), run.output[-3000:]
    return sorted(json.loads(out.read_text()), key=lambda r: r["rank"])


@dataclass(frozen=True)
class Model:
    """The memory model for a spec, at the runtime's CPU settings."""

    plan: object
    shape: object
    knobs: object

    @classmethod
    def of(cls, spec: str) -> Model:
        from parc import memory

        plan = plan_of(spec)
        knobs = replace(memory.knobs_of(plan), precision="fp32", device="cpu")
        return cls(plan, memory.shape_of(plan), knobs)

    def rank_params(self, stage: int):
        from parc.memory.model import rank_params

        k = self.knobs
        return rank_params(self.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, "torch")[stage]

    def states(self, stage: int):
        from parc.memory.states import model_states

        return model_states(self.rank_params(stage).params, self.knobs)

    def stage(self, stage: int):
        from parc.memory.model import per_stage

        return per_stage(self.shape, self.knobs)[stage]

    def gathered(self, stage: int) -> int:
        """Gathered parameter copies the model counts on a rank at its peak: model states beyond
        the shards (`StageMemory.params` - the shards) and buffers (`gathered_buffers`)."""
        from parc.memory.buffers import gathered_buffers

        rp = self.rank_params(stage)
        held = self.stage(stage).params - self.states(stage).params
        return held + gathered_buffers(rp.largest_layer, self.knobs, rp.root)

    def checkpoint_gather(self, stage: int) -> int:
        from parc.memory.states import checkpoint_gather_bytes

        return checkpoint_gather_bytes(self.rank_params(stage).params, self.knobs)

    def layer(self, layer: int, index_in_chunk: int) -> int:
        """Bytes one micro-batch saves in `layer` (the `index_in_chunk`-th of its chunk)."""
        from parc.memory.activations import layer_activations
        from parc.memory.model import activation_knobs, layer_mode

        k = self.knobs
        ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, "torch",
                              k.ep if self.shape.moe else 1, k.precision, k.device)
        mode = layer_mode(k.recompute, k.recompute_layers, index_in_chunk)
        return layer_activations(self.shape, ak, self.shape.is_moe(layer), mode).saved

    def chunk(self, stage: int, chunk: int) -> int:
        """Bytes one micro-batch saves in a chunk: its layers, embedding and loss."""
        from parc.memory.model import rank_activations

        mine = self.rank_params(stage).chunks
        position = [c.index for c in mine].index(chunk)
        return rank_activations(self.shape, self.knobs)[stage].chunks[position].saved


def stage_of(rank: dict) -> int:
    return rank["coordinates"].get("pp", 0)


def microbatch_bytes(record: dict) -> int:
    return sum(record["layers"].values()) + record["rest"]


@cache
def _workdir() -> Path:
    """One directory for the process's jobs, removed at exit (the tests and `main` share it)."""
    import atexit
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="parc-memory-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@cache
def _measured(spec: str) -> tuple[dict, ...]:
    """Each case is launched once per process, whichever test asks first."""
    return tuple(measure(spec, _workdir()))


@pytest.fixture(params=one_of_each_kind(CASES, DEFAULT_CASES))
def case(request):
    return request.param, _measured(request.param), Model.of(request.param)


# ---------------------------------------------------------------------------------------------
# Tests


def test_model_states_of_every_rank_are_the_models(case):
    spec, ranks, model = case
    for stage in range(model.knobs.pp):
        states = model.states(stage)
        mine = [r for r in ranks if stage_of(r) == stage]
        for key, predicted in (("params_bytes", states.params), ("grads_bytes", states.grads),
                               ("optimizer_bytes", states.optimizer)):
            got = [r[key] for r in mine]
            assert max(got) == predicted, f"{spec} stage {stage} {key}: measured {got}, model {predicted}"
            if model.plan.model.vocab % model.knobs.tp == 0:
                assert set(got) == {predicted}, f"{spec} stage {stage} {key}: measured {got}, model {predicted}"


def test_saved_activations_per_micro_batch_are_within_10_percent(case):
    spec, ranks, model = case
    k = model.knobs
    for rank in ranks:
        stage = stage_of(rank)
        chunks = {c.index: c for c in model.rank_params(stage).chunks}
        records = rank["activations"]
        assert len(records) == k.microbatches * len(chunks), f"{spec} rank {rank['rank']}: {len(records)} forwards"
        for record in records:
            chunk = chunks[record["chunk"]]
            for name, got in record["layers"].items():
                layer = int(name)
                if model.shape.is_moe(layer):
                    continue  # routing is not balanced on a real batch: compared on average below
                _within(got, model.layer(layer, layer - chunk.first_layer), f"{spec} rank {rank['rank']} layer {name}")
            if not any(model.shape.is_moe(int(n)) for n in record["layers"]):
                _within(microbatch_bytes(record), model.chunk(stage, chunk.index),
                        f"{spec} rank {rank['rank']} chunk {chunk.index}")
    for stage in range(k.pp):
        mine = [r for r in ranks if stage_of(r) == stage]
        for chunk in model.rank_params(stage).chunks:
            records = [rec for r in mine for rec in r["activations"] if rec["chunk"] == chunk.index]
            for layer in chunk.layer_range:
                if model.shape.is_moe(layer):
                    got = sum(rec["layers"][str(layer)] for rec in records) / len(records)
                    _within(got, model.layer(layer, layer - chunk.first_layer), f"{spec} MoE layer {layer}, mean")
            got = sum(microbatch_bytes(rec) for rec in records) / len(records)
            _within(got, model.chunk(stage, chunk.index), f"{spec} chunk {chunk.index}, mean")


def _within(got: float, predicted: int, what: str) -> None:
    assert abs(got / predicted - 1) <= TOLERANCE, f"{what}: measured {got:,.0f} bytes, model {predicted:,}"


def test_fsdp_holds_no_more_gathered_parameters_than_the_model(case):
    """The most FSDP held gathered at once (sampled after each block's forward and whenever
    backward reads a saved tensor) is at most the model's figure, and equal to it where every
    layer stays gathered from forward to backward: zero2, and every mode (none and zero1
    included) under a zero-bubble schedule; the interleaved schedule's chunks ahead; and DDP's
    and ZeRO-1's root and layer copies without pipelining (zero3's prefetched layer comes and
    goes between two samples)."""
    spec, ranks, model = case
    k = model.knobs
    every_layer = k.sharding == "zero2" or (k.pp > 1 and k.schedule in ("interleaved-zb", "zbv", "dualpipe-v"))
    exact = every_layer or (k.pp > 1 and k.schedule == "interleaved-1f1b") or \
        (k.pp == 1 and k.sharding in ("none", "zero1"))
    for stage in range(k.pp):
        predicted = model.gathered(stage)
        got = [r["gathered_peak_bytes"] for r in ranks if stage_of(r) == stage]
        assert max(got) <= predicted, f"{spec} stage {stage}: gathered {got}, model {predicted:,}"
        if exact:  # the fullest rank (a tp rank with fewer vocabulary rows holds less)
            assert max(got) == predicted, f"{spec} stage {stage}: gathered {got}, model {predicted:,}"


def test_no_checkpoint_gathers_optimizer_states(case):
    """Building a checkpoint's state dict allocates nothing in any mode: zero1's states are
    ShardedTensor views of its flat shards (it gathered 2 x params_bytes of whole moments before)."""
    spec, ranks, model = case
    for rank in ranks:
        predicted = model.checkpoint_gather(stage_of(rank))
        assert rank["checkpoint_extra_bytes"] == predicted == 0, f"{spec} rank {rank['rank']}"
        assert rank["optimizer_bytes"] > 0


def test_tied_embeddings_under_a_v_schedule_are_two_copies_on_rank_0():
    """ZB-V puts both ends on pp rank 0; each chunk holds its own copy (a chunk is its own FSDP
    unit, or under zero1 its own buckets), so the rank holds the embedding and a copy for the
    output layer, and the model (stages.py) counts both."""
    spec = "mem-zbv-tied-zero1"
    model = Model.of(spec)
    first, last = model.rank_params(0).chunks[0], model.rank_params(0).chunks[-1]
    assert first.embedding and last.output and last.tied_copy
    shape = model.shape
    assert model.rank_params(0).root.total == 2 * shape.vocab * shape.hidden + shape.norm_params + shape.position_params
    stage0 = {r["params_bytes"] for r in _measured(spec) if stage_of(r) == 0}
    assert stage0 == {4 * model.rank_params(0).params.total}  # zero1: whole parameters, fp32 on CPU


def _document_table() -> str:
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC.name} has no measured table"
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def test_the_document_rows_of_the_default_cases_are_measured():
    """The default run measures only DEFAULT_CASES: their rows of the document's table are current."""
    lines = _document_table().splitlines()
    for spec in DEFAULT_CASES:
        rows = table_rows(spec)
        assert rows and all(row in lines for row in rows), \
            f"{spec}: stale: run `.venv/bin/python -m tests.e2e.test_memory_real --write`"


@pytest.mark.long
def test_the_document_table_is_measured():
    assert _document_table() == "\n" + table() + "\n", \
        "stale: run `.venv/bin/python -m tests.e2e.test_memory_real --write`"


# ---------------------------------------------------------------------------------------------
# The table of docs/memory-model.md


def table() -> str:
    lines = [
        "| case | layout | stage | params | grads | optimizer | gathered (model) | activations / micro-batch | model | ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec in CASES:
        lines += table_rows(spec)
    return "\n".join(lines)


def table_rows(spec: str) -> list[str]:
    """One case's rows of the table: one per pipeline stage."""
    lines = []
    ranks, model = _measured(spec), Model.of(spec)
    for stage in range(model.knobs.pp):
        mine = [r for r in ranks if stage_of(r) == stage]
        states = model.states(stage)
        cells = []
        for key, predicted in (("params_bytes", states.params), ("grads_bytes", states.grads),
                               ("optimizer_bytes", states.optimizer)):
            got = max(r[key] for r in mine)
            cells.append(f"{got:,}" + ("" if got == predicted else f" ({predicted:,})"))
        gathered = max(r["gathered_peak_bytes"] for r in mine)
        cells.append(f"{gathered:,} ({model.gathered(stage):,})")
        measured = sum(microbatch_bytes(rec) for r in mine for rec in r["activations"]) / len(mine) \
            / model.knobs.microbatches
        predicted = sum(model.chunk(stage, c.index) for c in model.rank_params(stage).chunks)
        cells += [f"{measured:,.0f}", f"{predicted:,}", f"{measured / predicted:.3f}"]
        lines.append(f"| {spec.removeprefix('mem-')} | {_layout(model)} | {stage} | " + " | ".join(cells) + " |")
    return lines


def _layout(model: Model) -> str:
    k = model.knobs
    parts = [f"{name} {degree}" for name, degree in (("tp", k.tp), ("cp", k.cp), ("pp", k.pp), ("dp", k.dp))
             if degree > 1]
    if k.ep > 1:
        parts.append(f"ep {k.ep}")
    if k.tp > 1:
        parts.append("SP" if k.sequence_parallel else "no SP")
    if k.pp > 1:
        parts.append(k.schedule + (f" v{k.virtual_stages}" if k.virtual_stages > 1 else ""))
    parts += [k.sharding if k.sharding != "hsdp" else f"hsdp {k.dp // k.hsdp_shard} x {k.hsdp_shard}",
              f"recompute {k.recompute}"]
    return ", ".join(parts)


def main(argv: list[str]) -> None:
    text = table()
    if "--write" in argv:
        doc = DOC.read_text()
        start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
        DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[end:])
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])


def test_zero1_holds_its_parameters_in_the_compute_dtype(tmp_path):
    """zero1 in bf16 (Megatron-Core's distributed optimizer): the parameters are bf16 views of the
    buckets (2 bytes each, where FSDP2's storage held fp32), the main gradients fp32 (4), and the
    fp32 master, reduced-gradient shards and two Adam moments 16 bytes per owned element; each
    rank's measured bytes equal the memory model's in bf16."""
    from parc import memory
    from parc.memory.states import model_states

    spec = "traffic-zero1-buckets"
    job = compile_job(spec, tmp_path)
    out = job / "memory.json"
    plan = plan_of(spec)
    torchrun(job, plan.cluster.world_size, "--steps", "2", "--precision", "bf16", "--measure-memory", str(out),
             grads=False).check()
    ranks = json.loads(out.read_text())
    knobs = replace(memory.knobs_of(plan), precision="bf16", device="cpu")
    model = Model(plan, memory.shape_of(plan), knobs)
    states = model_states(model.rank_params(0).params, knobs)
    total = model.rank_params(0).params.total
    assert states.params == 2 * total and states.grads == 4 * total
    assert len(ranks) == plan.cluster.world_size
    for rank in ranks:
        assert rank["params_bytes"] == states.params, rank["params_bytes"]
        assert rank["grads_bytes"] == states.grads, rank["grads_bytes"]
        # the buckets are padded to a multiple of the ranks: within one element per bucket and rank
        assert abs(rank["optimizer_bytes"] - states.optimizer) <= 16 * 3, (rank["optimizer_bytes"], states.optimizer)
