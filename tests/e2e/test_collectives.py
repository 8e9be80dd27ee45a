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
import sys
from pathlib import Path

import pytest

from .harness import compile_job, plan_of, torchrun

pytestmark = pytest.mark.e2e

FP32, BF16 = 4, 2
TOLERANCE = 0.01


def model_counts(job: Path, plan) -> dict:
    """Parameters of the model as written: per layer, and the root's (embedding, final norm,
    output); with the stages' layer ranges from parc's pipeline split."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"model_{job.name.replace('-', '_')}", job / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(job))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(job))
    with torch.device("meta"):
        net = module.Transformer()
    layers = {int(name): sum(p.numel() for p in block.parameters()) for name, block in net.layers.items()}
    embedding = sum(p.numel() for p in net.tok_embeddings.parameters())
    head = sum(p.numel() for p in net.norm.parameters()) + sum(p.numel() for p in net.output.parameters())
    return {"layers": layers, "embedding": embedding, "head": head,
            "total": sum(p.numel() for p in net.parameters())}


def recorded(spec: str, tmp: Path) -> tuple[Path, object, list[dict]]:
    job = compile_job(spec, tmp)
    plan = plan_of(spec)
    out = tmp / f"{spec}.json"
    run = torchrun(job, plan.cluster.world_size, "--steps", "2", "--precision", "bf16",
                   "--record-collectives", str(out), grads=False).check()
    assert out.exists(), run.output[-3000:]
    return job, plan, json.loads(out.read_text())


def table(record: dict) -> dict[tuple[str, str], tuple[int, int]]:
    """(kind, axis) -> (bytes, count) of one rank, groups of one rank left out."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for c in record["collectives"]:
        if c["group_size"] > 1:
            b, n = out.get((c["kind"], c["axis"]), (0, 0))
            out[(c["kind"], c["axis"])] = (b + c["bytes"], n + c["count"])
    return out


def assert_matches(got: dict, expected: dict, where: str) -> None:
    assert expected, "an empty expectation would check nothing"
    assert set(got) == set(expected), f"{where}: collectives {sorted(got)} != expected {sorted(expected)}"
    for key, (size, count) in expected.items():
        real_size, real_count = got[key]
        assert real_count == count, f"{where} {key}: {real_count} calls, expected {count}"
        assert abs(real_size - size) <= TOLERANCE * size, f"{where} {key}: {real_size:,} bytes, expected {size:,.0f}"


DP_CASES = {
    # spec: expected (kind, axis) -> (bytes, count) for P parameters, U FSDP units (blocks and
    # the root), m micro-batches per step, S shard ranks
    "traffic-none": lambda P, U, m, S: {("all_reduce", "dp"): (FP32 * P, U)},
    "traffic-zero1": lambda P, U, m, S: {("all_reduce", "dp"): (FP32 * P, U),
                                         ("all_gather", "dp"): (FP32 * P, "params")},
    "traffic-zero2": lambda P, U, m, S: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                         ("all_gather", "dp"): (BF16 * P, U)},
    "traffic-zero3": lambda P, U, m, S: {("reduce_scatter", "dp"): (m * FP32 * P, m * U),
                                         ("all_gather", "dp"): (m * 2 * BF16 * P, m * 2 * U)},
    "traffic-hsdp": lambda P, U, m, S: {("reduce_scatter", "dp_shard"): (m * FP32 * P, m * U),
                                        ("all_gather", "dp_shard"): (m * 2 * BF16 * P, m * 2 * U),
                                        ("all_reduce", "dp_replicate"): (FP32 * P / S, U)},
}


@pytest.mark.parametrize("spec", sorted(DP_CASES))
def test_data_parallel_traffic_per_step_matches_the_table(spec, tmp_path):
    job, plan, ranks = recorded(spec, tmp_path)
    counts = model_counts(job, plan)
    P, U = counts["total"], len(counts["layers"]) + 1
    m = plan.training.grad_accum
    S = plan.layout.dp.shard or 1
    expected = DP_CASES[spec](P, U, m, S)
    if ("all_gather", "dp") in expected and expected[("all_gather", "dp")][1] == "params":
        # ZeRO-1 gathers every parameter tensor after the step (one call each), its slices
        # padded to ceil(numel / n) elements
        n = plan.layout.dp.degree
        shapes = parameter_sizes(job)
        expected[("all_gather", "dp")] = (FP32 * sum(-(-k // n) * n for k in shapes), len(shapes))
    assert len(ranks) == plan.cluster.world_size
    for record in ranks:
        assert_matches(table(record), expected, f"{spec} rank {record['rank']}")


def parameter_sizes(job: Path) -> list[int]:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"sizes_{job.name.replace('-', '_')}", job / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        return [p.numel() for p in module.Transformer().parameters()]


def test_tensor_parallel_traffic_per_step_matches_the_table(tmp_path):
    """tp 2 without sequence parallelism (Megatron's f and g): per layer and micro-batch, two
    all-reduces of the (micro-batch, seq, hidden) activations forward (after wo and w2) and two
    backward (the input gradients of the column-parallel wq/wk/wv and w1/w3); the
    vocabulary-parallel embedding all-reduces its output forward, the column-parallel output
    layer its input gradient backward; loss_parallel all-reduces three (micro-batch, seq)
    statistics forward (the max, the sum of exponentials, the target logit) and none backward.
    The data-parallel gradients (DDP) are each tp rank's half of the tp-split weights."""
    job, plan, ranks = recorded("traffic-tp2-dp2", tmp_path)
    m, L = plan.training.grad_accum, plan.model.layers
    tokens = plan.training.micro_batch * plan.training.seq_len
    activation = tokens * plan.model.hidden * BF16
    expected_tp = {("all_reduce", "tp"): (m * ((4 * L + 2) * activation + 3 * tokens * FP32), m * (4 * L + 2 + 3))}
    counts = model_counts(job, plan)
    for record in ranks:
        got = table(record)
        tp_part = {k: v for k, v in got.items() if k[1] == "tp"}
        assert_matches(tp_part, expected_tp, f"tp rank {record['rank']}")
        dp_part = {k: v for k, v in got.items() if k[1] == "dp"}
        assert set(dp_part) == {("all_reduce", "dp")}
        size, count = dp_part[("all_reduce", "dp")]
        assert count == L + 1
        # the tp-split matrices are halved; norms are replicated over tp (whole on every rank)
        assert FP32 * counts["total"] / 2 < size < FP32 * counts["total"]


def test_pipeline_traffic_per_step_matches_the_table(tmp_path):
    """pp 2 (gpipe) x dp 2 under zero3: each micro-batch's activations (micro-batch, seq,
    hidden) go forward once and their gradients backward once; the weights are gathered once
    per step (reshard_after_forward is off under pipelining) and torch's stages reduce-scatter
    the gradients once, after the last backward."""
    job, plan, ranks = recorded("traffic-pp2-dp2", tmp_path)
    from parc.stages import pipeline_chunks

    counts = model_counts(job, plan)
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
