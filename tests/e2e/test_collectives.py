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

from .harness import compile_job, plan_of, torchrun

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
    # blocks and the root), m micro-batches per step, n data ranks, S hsdp shard ranks
    "traffic-none": lambda P, U, m, n, S, sizes: {("all_reduce", "dp"): (FP32 * P, U)},
    # ZeRO-1 (a distributed optimizer): one flat bucket of the chunk's parameters, padded to a
    # multiple of n elements: one reduce-scatter of its fp32 gradients and one all-gather of the
    # updated parameters in the compute dtype per step (Megatron's 4 + 2 bytes per parameter)
    "traffic-zero1": lambda P, U, m, n, S, sizes: {("reduce_scatter", "dp"): (FP32 * (-(-P // n) * n), 1),
                                                   ("all_gather", "dp"): (BF16 * (-(-P // n) * n), 1)},
    "traffic-zero2": lambda P, U, m, n, S, sizes: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                                   ("all_gather", "dp"): (BF16 * P, U)},
    "traffic-zero3": lambda P, U, m, n, S, sizes: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                                   ("all_gather", "dp"): (m * 2 * BF16 * P, m * 2 * U)},
    "traffic-hsdp": lambda P, U, m, n, S, sizes: {("reduce_scatter", "dp_shard"): (m * FP32 * P, m * U),
                                                  ("all_gather", "dp_shard"): (m * 2 * BF16 * P, m * 2 * U),
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


@pytest.mark.parametrize("spec", sorted(DP_CASES))
def test_data_parallel_traffic_per_step_matches_the_table(spec, tmp_path):
    """The recorded collectives equal the table; and the time model's ledger (what `parc
    explain` charges) equals them: bytes within 1 % and calls exactly per kind, over the data
    axes."""
    job, plan, ranks = recorded(spec, tmp_path)
    counts = model_counts(job)
    expected = DP_CASES[spec](counts["total"], len(counts["layers"]) + 1, plan.training.grad_accum,
                              plan.layout.dp.degree, plan.layout.dp.shard or 1, counts["sizes"])
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


def test_tensor_parallel_traffic_per_step_matches_the_table(tmp_path):
    """tp 2 without sequence parallelism (Megatron's f and g operators, one per module as
    torch's ColwiseParallel and RowwiseParallel place them): per layer and micro-batch, two
    all-reduces of the (micro-batch, seq, hidden) activations forward (after wo and w2) and five
    backward (the input gradients of the column-parallel wq, wk, wv, w1 and w3, each its own
    module; Megatron fuses QKV and w1/w3 into two); the vocabulary-parallel embedding
    all-reduces its output forward and the column-parallel output layer its input gradient
    backward; loss_parallel all-reduces three (micro-batch, seq) fp32 statistics forward (the
    max, the sum of exponentials, the target logit). DDP then all-reduces each tp rank's
    gradients: half of every tp-split matrix, and the norms, which tp replicates, whole."""
    job, plan, ranks = recorded("traffic-tp2-dp2", tmp_path)
    m, L = plan.training.grad_accum, plan.model.layers
    tokens = plan.training.micro_batch * plan.training.seq_len
    activation = tokens * plan.model.hidden * BF16
    per_micro = 7 * L + 2
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
