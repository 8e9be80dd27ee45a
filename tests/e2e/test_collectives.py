"""Bytes per collective per step, recorded from the running job, against docs/runtime.md's table.

Each case compiles a `traffic-*.par` spec, runs two steps on CPU in bf16 compute (so that the
all-gathers move 2-byte compute copies and the reductions 4-byte fp32 gradients, as on GPUs)
with `train.py --record-collectives FILE`, which wraps torch.distributed's and the functional
collectives and writes, per rank, the payload bytes and the number of calls of every kind of
collective on every axis in the last step. The expected values are written here from first
principles: the parameter counts come from the model definition (model.py on the meta device,
split into pipeline stages by `parc.stages.pipeline_chunks`), the activation sizes from the
spec; nothing is read from the runtime's own bookkeeping. Bytes must agree within 1 %, counts
exactly.

Payload convention (docs/runtime.md, "Collective traffic per step"): the whole buffer reduced,
gathered or scattered (an all-gather's output, a reduce-scatter's input), the sent tensor of a
point-to-point transfer. A ring collective over n ranks sends (n - 1) / n of it per rank (twice
that for an all-reduce). Collectives over groups of one rank move nothing and are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import compile_job, one_of_each_kind, plan_of, torchrun

pytestmark = pytest.mark.e2e

FP32, BF16 = 4, 2
TOLERANCE = 0.01


def meta_model(job: Path):
    """The job's model.py Transformer on the meta device: the model as written, no runtime."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"model_of_{job.name.replace('-', '_')}", job / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        return module.Transformer()


def model_counts(job: Path) -> dict:
    """Parameters of the model as written: per layer, the embedding, the head (final norm and
    output), the normalisation weights, every tensor's size, and the total."""
    net = meta_model(job)
    return {"layers": {int(name): sum(p.numel() for p in block.parameters()) for name, block in net.layers.items()},
            "embedding": sum(p.numel() for p in net.tok_embeddings.parameters()),
            "head": sum(p.numel() for p in net.norm.parameters()) + sum(p.numel() for p in net.output.parameters()),
            "norms": sum(p.numel() for name, p in net.named_parameters() if "norm" in name),
            "sizes": [p.numel() for p in net.parameters()],
            "total": sum(p.numel() for p in net.parameters())}


def recorded(spec: str, tmp: Path) -> tuple[Path, object, list[dict]]:
    job = compile_job(spec, tmp)
    plan = plan_of(spec)
    out = tmp / f"{spec}.json"
    run = torchrun(job, plan.cluster.world_size, "--steps", "2", "--precision", "bf16",
                   "--record-collectives", str(out), grads=False).check()
    assert out.exists(), run.output[-3000:]
    return job, plan, json.loads(out.read_text())


def table(record: dict, by_dtype: bool = False) -> dict[tuple, tuple[int, int]]:
    """(kind, axis[, dtype]) -> (bytes, count) of one rank, groups of one rank left out."""
    out: dict[tuple, tuple[int, int]] = {}
    for c in record["collectives"]:
        if c["group_size"] > 1:
            key = (c["kind"], c["axis"], c["dtype"]) if by_dtype else (c["kind"], c["axis"])
            b, n = out.get(key, (0, 0))
            out[key] = (b + c["bytes"], n + c["count"])
    return out


def assert_matches(got: dict, expected: dict, where: str) -> None:
    assert expected, "an empty expectation would check nothing"
    assert set(got) == set(expected), f"{where}: collectives {sorted(got)} != expected {sorted(expected)}"
    for key, (size, count) in expected.items():
        real_size, real_count = got[key]
        assert real_count == count, f"{where} {key}: {real_count} calls, expected {count}"
        assert abs(real_size - size) <= TOLERANCE * size, f"{where} {key}: {real_size:,} bytes, expected {size:,.0f}"


DP_CASES = {
    # spec -> expected (kind, axis) -> (bytes, calls), from P parameters, U FSDP units (the
    # blocks and the root), m micro-batches per step, n data ranks, S hsdp shard ranks, R the
    # root's parameters (embedding, final norm, output: FSDP2 keeps a root gathered from its
    # forward to its backward, so the backward gathers only the U - 1 blocks)
    "traffic-none": lambda P, U, m, n, S, sizes, R: {("all_reduce", "dp"): (FP32 * P, U)},
    # ZeRO-1 (a distributed optimizer): one flat bucket of the chunk's parameters (the tiny model is under
    # the default 40M-element cap; test_zero1_buckets_... below caps it), padded to a
    # multiple of n elements: one reduce-scatter of its fp32 gradients and one all-gather of the
    # updated parameters in the compute dtype per step (Megatron's 4 + 2 bytes per parameter)
    "traffic-zero1": lambda P, U, m, n, S, sizes, R: {("reduce_scatter", "dp"): (FP32 * (-(-P // n) * n), 1),
                                                   ("all_gather", "dp"): (BF16 * (-(-P // n) * n), 1)},
    "traffic-zero2": lambda P, U, m, n, S, sizes, R: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                                   ("all_gather", "dp"): (BF16 * P, U)},
    "traffic-zero3": lambda P, U, m, n, S, sizes, R: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                                   ("all_gather", "dp"): (m * BF16 * (2 * P - R), m * (2 * U - 1))},
    "traffic-hsdp": lambda P, U, m, n, S, sizes, R: {("reduce_scatter", "dp_shard"): (m * FP32 * P, m * U),
                                                  ("all_gather", "dp_shard"): (m * BF16 * (2 * P - R), m * (2 * U - 1)),
                                                  ("all_reduce", "dp_replicate"): (FP32 * P / S, U)},
}


def model_dp_ledger(plan) -> dict[str, tuple[float, int]]:
    """The time model's data-parallel ledger of the plan's rank 0: kind -> (payload bytes per
    step, calls per step), as `parc explain` charges it (timing.rank_steps with the target's
    software: parc's job here)."""
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    hw = timing.hardware_of(plan)
    _, steps = timing.rank_steps(shape_of(plan), knobs_of(plan, "torch"), hw, timing.geometry_of(plan, hw),
                                 sw=software_of(plan))
    out: dict[str, tuple[float, int]] = {}
    for c in next(iter(steps.values())).ledger.collectives:
        if c.axis == "dp" and c.size > 1:
            b, n = out.get(c.kind, (0.0, 0))
            out[c.kind] = (b + c.payload * c.count, n + c.count)
    return out


@pytest.mark.parametrize("spec", one_of_each_kind(sorted(DP_CASES), ["traffic-zero1", "traffic-zero3"]))
def test_data_parallel_traffic_per_step_matches_the_table(spec, tmp_path):
    """The recorded collectives equal the table; and the time model's ledger (what `parc
    explain` charges) equals them: bytes within 1 % and calls exactly per kind, over the data
    axes."""
    job, plan, ranks = recorded(spec, tmp_path)
    counts = model_counts(job)
    expected = DP_CASES[spec](counts["total"], len(counts["layers"]) + 1, plan.training.grad_accum,
                              plan.layout.dp.degree, plan.layout.dp.shard or 1, counts["sizes"],
                              counts["embedding"] + counts["head"])
    assert len(ranks) == plan.cluster.world_size
    for record in ranks:
        assert_matches(table(record), expected, f"{spec} rank {record['rank']}")
    by_kind: dict[str, tuple[int, int]] = {}
    for (kind, _axis), (size, count) in table(ranks[0]).items():
        b, n = by_kind.get(kind, (0, 0))
        by_kind[kind] = (b + size, n + count)
    ledger = model_dp_ledger(plan)
    assert ledger and set(ledger) == set(by_kind), (ledger, by_kind)
    for kind, (size, count) in by_kind.items():
        model_bytes, model_calls = ledger[kind]
        assert abs(model_bytes - size) <= TOLERANCE * size, f"{spec} {kind}: model {model_bytes:,.0f}, job {size:,}"
        assert model_calls == count, f"{spec} {kind}: model {model_calls} calls, job {count}"


# ---------------------------------------------------------------------------------------------
# The time model's whole ledger against the running job, per family


def model_ledgers(plan, balanced: bool = False) -> dict[int, object]:
    """pp stage -> the time model's ledger of that stage's ranks (`timing.rank_steps`, what
    `parc explain` charges, with the target's software: parc's job here). `balanced`: routing
    exactly even over the expert ranks (`Software.balanced_routing`), i.e. what a rank receives
    on average, which is what the mean over the recorded ranks measures (the model otherwise
    charges the busiest expert rank's expected excess)."""
    from dataclasses import replace

    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    hw = timing.hardware_of(plan)
    sw = replace(software_of(plan), balanced_routing=balanced)
    loads, steps = timing.rank_steps(shape_of(plan), knobs_of(plan, "torch"), hw, timing.geometry_of(plan, hw), sw=sw)
    return {stage: steps[load].ledger for stage, load in enumerate(loads)}


def ledger_table(ledger) -> dict[tuple[str, str], tuple[float, int]]:
    """(axis, kind) -> (payload bytes per step, calls per step) of the model's ledger, in the
    recorder's kinds: a pipeline send is pipelining's p2p; ring attention's shift is an
    all_to_all_single with one non-empty split (the runtime's `RingShift`)."""
    out: dict[tuple[str, str], tuple[float, int]] = {}
    for c in ledger.collectives:
        if c.size <= 1 or c.count <= 0:
            continue
        kind = {"pp": "p2p", "cp": "all_to_all"}.get(c.axis, c.kind) if c.kind == "send" else c.kind
        b, n = out.get((c.axis, kind), (0.0, 0))
        out[(c.axis, kind)] = (b + c.payload * c.count, n + c.count)
    return out


def recorded_table(record: dict) -> dict[tuple[str, str], tuple[int, int]]:
    """(axis, kind) -> (bytes, calls) of one rank's recorded step, on the ledger's axes: the tp,
    pp and ep groups by name (and all-to-alls on a data group, module below); the cp group's 16-bit traffic (its fp32 reductions are the
    gradients' over the data ranks, which are the cp ranks when dp is 1); every other group
    (dp, dp_shard, dp_replicate, edp, the flattened data dims) is data parallelism."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for c in record["collectives"]:
        if c["group_size"] <= 1:
            continue
        axis = c["axis"]
        if axis not in ("tp", "pp", "ep") and not (axis == "cp" and c["dtype"] != "float32"):
            # data parallelism never issues an all-to-all: one on a data group is ep's, folded
            # over that whole data axis (its group is the axis's and carries its name)
            axis = "ep" if c["kind"] == "all_to_all" else "dp"
        b, n = out.get((axis, c["kind"]), (0, 0))
        out[(axis, c["kind"])] = (b + c["bytes"], n + c["count"])
    return out


ROUTED = ("ep", "all_to_all")
"""Under balanced routing, which the model assumes: each rank's dispatch forward and combine
backward send its own token copies (exact), while the combine forward and dispatch backward
carry what its experts received, balanced only on average: their bytes are compared as the mean
over the ranks (counts per rank, exactly)."""


def assert_ledger_is_the_job(spec: str, tmp: Path) -> None:
    _, plan, ranks = recorded(spec, tmp)
    assert_ledger_matches(spec, plan, ranks)


def assert_ledger_matches(spec: str, plan, ranks: list[dict]) -> None:
    ledgers = model_ledgers(plan, balanced=True)
    assert len(ranks) == plan.cluster.world_size and ledgers
    totals: dict[tuple[str, str], list[float]] = {}
    for record in ranks:
        got = recorded_table(record)
        expected = ledger_table(ledgers[record["coordinates"].get("pp", 0)])
        assert expected, "an empty ledger would check nothing"
        where = f"{spec} rank {record['rank']}"
        assert set(got) == set(expected), f"{where}: job {sorted(got)} != ledger {sorted(expected)}"
        for key, (size, count) in expected.items():
            real_size, real_count = got[key]
            assert real_count == count, f"{where} {key}: job {real_count} calls, ledger {count}"
            if key == ROUTED:
                pair = totals.setdefault(key, [0.0, 0.0])
                pair[0] += real_size
                pair[1] += size
                continue
            assert abs(real_size - size) <= TOLERANCE * size, f"{where} {key}: job {real_size:,} bytes, ledger {size:,.0f}"
    for key, (real, model) in totals.items():
        assert abs(real - model) <= TOLERANCE * model, f"{spec} {key}: job {real:,.0f} bytes over the ranks, ledger {model:,.0f}"


FAST = ("traffic-tp2-sp", "traffic-pp2-zbv", "cp2-ring", "ep2-over-dp", "moe-zbv-recompute", "traffic-pp2-tied")
"""One case per kind in the default run; the others are `long`."""
LEDGER_CASES = FAST + ("traffic-tp2-dp2", "traffic-pp2-dp2", "traffic-pp2-1f1b", "traffic-pp2-interleaved",
                       "traffic-pp2-zb", "traffic-pp2-dualpipe", "cp2-all-gather", "cp2-all-to-all", "ep2-axis",
                       "traffic-moe-tp2", "moe-tp2-dp2", "moe-4d",
                       # MoE without ep or tp: the experts in their layers' zero1 buckets, FSDP2 units
                       "traffic-moe-zero1", "moe-dp8-experts-sharded")


@pytest.mark.parametrize("spec", one_of_each_kind(LEDGER_CASES, FAST))
def test_the_ledger_is_what_the_job_issues(spec, tmp_path):
    """The time model's ledger of every rank (tp with and without sp, each pipeline schedule,
    each cp flavour, ep as an axis and folded over dp with MoE layers, MoE under tp with and
    without sp, and the data-parallel collectives alongside; moe-4d: tp 2 (sp) x dp 2 x pp 2 with
    ep 2 folded over dp, zero2 and selective recomputation, whose replay re-issues tp's gathers
    but not the expert-count exchange, which the job keeps from the forward; moe-zbv-recompute:
    ZB-V with full recomputation, each block recomputed in its input pass and again in its
    weight pass, both without the count exchange, and the V's first rank holding two FSDP roots,
    the second none; traffic-pp2-tied: the tied embedding's two copies, their gradients summed
    over the two stages once a step) equals the collectives the running job records in one step,
    per (axis, kind): calls exactly, bytes within 1 %."""
    assert_ledger_is_the_job(spec, tmp_path)


@pytest.mark.long  # tp traffic in the default run: test_the_ledger_is_what_the_job_issues[traffic-tp2-sp]
def test_tensor_parallel_traffic_per_step_matches_the_table(tmp_path):
    """tp 2 without sequence parallelism (Megatron's f and g operators, one pair per attention and
    per FFN): per layer and micro-batch, two all-reduces of the (micro-batch, seq, hidden)
    activations forward (after wo and w2) and two backward (the input gradients of attention
    and of the FFN: their column-parallel wq, wk, wv and w1, w3 receive a Replicate DTensor,
    whose Partial gradients are summed on the rank and all-reduced once per module, as
    Megatron's fused QKV and w1/w3 are; not one per linear); the vocabulary-parallel embedding
    all-reduces its output forward and the column-parallel output layer its input gradient
    backward; loss_parallel all-reduces three (micro-batch, seq) fp32 statistics forward (the
    max, the sum of exponentials, the target logit). DDP then all-reduces each tp rank's
    gradients: half of every tp-split matrix, and the norms, which tp replicates, whole."""
    job, plan, ranks = recorded("traffic-tp2-dp2", tmp_path)
    m, L = plan.training.grad_accum, plan.model.layers
    tokens = plan.training.micro_batch * plan.training.seq_len
    activation = tokens * plan.model.hidden * BF16
    per_micro = 4 * L + 2
    counts = model_counts(job)
    norms = counts["norms"]
    assert 0 < norms < counts["total"]
    expected = {
        ("all_reduce", "tp", "bfloat16"): (m * per_micro * activation, m * per_micro),
        ("all_reduce", "tp", "float32"): (m * 3 * tokens * FP32, m * 3),
        ("all_reduce", "dp", "float32"): (FP32 * ((counts["total"] - norms) / 2 + norms), L + 1),
    }
    assert len(ranks) == plan.cluster.world_size
    for record in ranks:
        assert_matches(table(record, by_dtype=True), expected, f"tp rank {record['rank']}")


@pytest.mark.long  # ... and SP there too
def test_sequence_parallel_traffic_per_step_matches_the_table(tmp_path):
    """tp 2 with sequence parallelism, one collective per module each way (Megatron's f/g pairs:
    attention's and the FFN's input is gathered once into a Replicate DTensor, so the Partial
    input gradients of wq, wk, wv and of w1, w3 are summed on the rank and reduce-scattered
    once, not all-reduced once per linear): per layer and micro-batch, two all-gathers (the
    inputs of attention and the FFN) and two reduce-scatters (wo's and w2's outputs) of the
    (micro-batch, seq, hidden) activations forward, and the same backward; the embedding
    reduce-scatters forward and all-gathers backward, the output layer the reverse. In fp32:
    loss_parallel's three (micro-batch, seq) statistics per micro-batch, and once per step each
    norm's gradient (the norms are replicated over tp, each rank saw half the sequence)."""
    job, plan, ranks = recorded("traffic-tp2-sp", tmp_path)
    m, L = plan.training.grad_accum, plan.model.layers
    tokens = plan.training.micro_batch * plan.training.seq_len
    activation = tokens * plan.model.hidden * BF16
    per_micro = 4 * L + 2
    norms = model_counts(job)["norms"]
    assert norms > 0
    expected = {
        ("all_gather", "tp", "bfloat16"): (m * per_micro * activation, m * per_micro),
        ("reduce_scatter", "tp", "bfloat16"): (m * per_micro * activation, m * per_micro),
        ("all_reduce", "tp", "float32"): (m * 3 * tokens * FP32 + norms * FP32, m * 3 + 2 * L + 1),
    }
    assert len(ranks) == plan.cluster.world_size
    for record in ranks:
        assert_matches(table(record, by_dtype=True), expected, f"tp rank {record['rank']}")


@pytest.mark.long  # pp traffic in the default run: test_the_ledger_is_what_the_job_issues[traffic-pp2-zbv]
def test_pipeline_traffic_per_step_matches_the_table(tmp_path):
    """pp 2 (gpipe) x dp 2 under zero3: each micro-batch's activations (micro-batch, seq,
    hidden) go forward once and their gradients backward once; the weights are gathered once
    per step (reshard_after_forward is off under pipelining) and torch's stages reduce-scatter
    the gradients once, after the last backward."""
    job, plan, ranks = recorded("traffic-pp2-dp2", tmp_path)
    from parc.stages import pipeline_chunks

    counts = model_counts(job)
    m = plan.training.grad_accum
    activation = plan.training.micro_batch * plan.training.seq_len * plan.model.hidden * BF16
    chunks = pipeline_chunks(plan)
    assert chunks
    for record in ranks:
        stage = record["coordinates"]["pp"]
        mine = [c for c in chunks if c.rank == stage]
        params = sum(counts["layers"][i] for c in mine for i in range(c.first_layer, c.first_layer + c.layers))
        params += sum(counts["embedding"] for c in mine if c.embedding)
        params += sum(counts["head"] for c in mine if c.output)
        units = sum(c.layers for c in mine) + len(mine)
        expected = {("p2p", "pp"): (m * activation, m),
                    ("all_gather", "dp"): (BF16 * params, units),
                    ("reduce_scatter", "dp"): (FP32 * params, units)}
        assert_matches(table(record), expected, f"pp stage {stage} rank {record['rank']}")


# ---------------------------------------------------------------------------------------------
# zero1's size-capped buckets, overlapped with the backward


def zero1_buckets(counts: dict, cap: int, n: int) -> list[int]:
    """The buckets' sizes (elements, each padded to a multiple of the n data ranks) as written
    here from the rule docs/runtime.md states: the blocks in model order (the embedding, each
    layer, the head), a bucket closed after the block that brings it to `cap` elements."""
    blocks = [counts["embedding"]] + [counts["layers"][i] for i in sorted(counts["layers"])] + [counts["head"]]
    buckets, held = [], 0
    for size in blocks:
        held += size
        if held >= cap:
            buckets.append(held)
            held = 0
    if held:
        buckets.append(held)
    return [-(-b // n) * n for b in buckets]


def test_zero1_buckets_are_capped_and_reduced_during_the_backward(tmp_path):
    """zero1 with `bucket 100000` on dp 2, two micro-batches: one fp32 reduce-scatter and one
    compute-dtype all-gather per bucket (more than one bucket), each reduce-scatter issued from
    inside the backward (the last micro-batch's, when its bucket's gradients are all in), the
    all-gathers after it, each waited for inside the next forward (a pre-hook of the first
    module using its bucket: Megatron-Core's overlap_param_gather), none before it; and the
    time model's ledger charges the same calls and bytes."""
    spec = "traffic-zero1-buckets"
    job, plan, ranks = recorded(spec, tmp_path)
    n, cap = plan.layout.dp.degree, plan.layout.dp.bucket
    assert cap == 100_000 and plan.training.grad_accum == 2
    sizes = zero1_buckets(model_counts(job), cap, n)
    assert len(sizes) == 3, sizes  # the spec's point: several buckets
    expected = {("reduce_scatter", "dp"): (FP32 * sum(sizes), len(sizes)),
                ("all_gather", "dp"): (BF16 * sum(sizes), len(sizes))}
    assert len(ranks) == n
    for record in ranks:
        assert_matches(table(record), expected, f"{spec} rank {record['rank']}")
        inside = {c["kind"]: c["in_backward"] for c in record["collectives"] if c["group_size"] > 1}
        assert inside == {"reduce_scatter": len(sizes), "all_gather": 0}, inside
        waited = {c["kind"]: c["waited_in_forward"] for c in record["collectives"] if c["group_size"] > 1}
        assert waited == {"reduce_scatter": 0, "all_gather": len(sizes)}, waited
    ledger = model_dp_ledger(plan)
    assert ledger == {kind: (pytest.approx(size, rel=TOLERANCE), calls)
                      for (kind, _), (size, calls) in expected.items()}, ledger


def test_zero1_under_a_zero_bubble_schedule_reduces_during_the_schedule(tmp_path):
    """zero1 under ZB-V (pp 2 x dp 2, two chunks per rank): torch's weight backward assigns the
    weight gradients without firing the post-accumulate-grad hook, so the later chunk's buckets
    used to be collected and reduced after the schedule (finish_gradients), with a compute-dtype
    `.grad` accumulating over the micro-batches. The job's stage hands each weight gradient to
    its bucket as the weight backward ends: on every rank every dp reduce-scatter is issued
    inside forward_backward (the schedule's step), none after it, and the calls and bytes are
    the time model's ledger."""
    spec = "traffic-zero1-zbv"
    _, plan, ranks = recorded(spec, tmp_path)
    assert plan.layout.pp.schedule == "zbv" and plan.layout.dp.sharding == "zero1"
    assert len(ranks) == plan.cluster.world_size
    for record in ranks:
        scatters = [c for c in record["collectives"] if c["kind"] == "reduce_scatter" and c["group_size"] > 1]
        assert scatters, f"rank {record['rank']}: no reduce-scatter recorded"
        for c in scatters:
            assert c["in_forward_backward"] == c["count"], (record["rank"], c)
    assert_ledger_matches(spec, plan, ranks)
