"""Activation offloading (`train { offload-activations N }`, Megatron-Core's `--cpu-offloading`):
the knob, what Megatron-Core refuses beside it, and the targets that cannot run it."""

from __future__ import annotations

import pytest
from parc.backends import job_diagnostics
from parc.pipeline import compile_text

from .conftest import rank_steps_of


def spec(train: str = "offload-activations 16", layout: str = "tp 2 x dp 4", target: str = "",
         model: str = "llama3-8b") -> str:
    return (f"{layout} on nodes(8 gpus, nvlink)\nmodel {model}\nhardware {{ gpu h100-sxm }}\n{target}\n"
            f"train {{ seq 8192, global-batch 64, micro-batch 1, {train} }}\ndp {{ sharding zero3 }}\n")


def codes(text: str) -> list[str]:
    result = compile_text(text, path="x.par")
    return [d.code for d in result.diagnostics if d.is_error]


def test_the_knob_reaches_the_plan():
    result = compile_text(spec(), path="x.par")
    assert result.ok and result.plan.training.offload_layers == 16
    assert compile_text(spec(train="recompute none"), path="x.par").plan.training.offload_layers == 0


def test_as_many_layers_as_the_model_has_are_refused():
    # llama3-8b has 32 layers; Megatron-Core requires cpu_offloading_num_layers < num_layers
    assert codes(spec(train="offload-activations 31")) == []
    assert codes(spec(train="offload-activations 32")) == ["E0371"]


def test_the_bound_is_the_pipeline_chunk():
    text = spec(train="offload-activations 8", layout="tp 2 x dp 2 x pp 2").replace(
        "dp { sharding zero3 }", "pp { schedule 1f1b }")
    assert codes(text) == []  # 16 layers a chunk
    assert codes(text.replace("offload-activations 8", "offload-activations 16")) == ["E0371"]


def test_recomputation_beside_offloading_is_refused():
    assert codes(spec(train="offload-activations 8, recompute selective")) == ["E0372"]
    assert codes(spec(train="offload-activations 8, recompute full 2")) == ["E0372"]
    assert codes(spec(train="offload-activations 8, recompute none")) == []


def test_zero_layers_is_not_a_knob_value():
    assert codes(spec(train="offload-activations 0")) == ["E0207"]


def test_torchtitan_refuses_it():
    """A rule of the target checked with the spec: `parc check` says it, not only `parc compile`."""
    assert codes(spec(target="target torchtitan")) == ["E0614"]  # compile_text: parc check's diagnostics
    plan = compile_text(spec(target="target torchtitan", train="recompute none"), path="x.par").plan
    assert codes(spec(target="target torchtitan", train="recompute none")) == [] and job_diagnostics(plan) == []


def test_megatron_runs_it_without_a_pipeline():
    from parc.backends import megatron

    plan = compile_text(spec(target="target megatron"), path="x.par").plan
    assert job_diagnostics(plan) == []
    assert ("--cpu-offloading-num-layers", "16") in megatron.arguments(plan)
    assert not any(o.startswith("--recompute") for o, _ in megatron.arguments(plan))


# ---------------------------------------------------------------------------------------------
# Memory: what leaves the GPU, by hand

# llama3-8b under target megatron (flash attention, sequence parallelism), tp 2, seq 8192,
# micro-batch 1, bf16: a layer saves, per token and over t, the two norms' inputs and outputs
# (4 x 2 h), q and the attention output (2 x 2 q), k and v (2 x 2 kv: 8 kv heads of 128),
# SwiGLU's 2F-wide fc1 output and fc2's input (2 x 3 ffn), and attention's fp32 log-sum-exp,
# 4 heads s / t (Korthikanti et al. 2022's tensors at Llama's widths, no dropout masks)
S, H, Q, KV, FFN, HEADS, T = 8192, 4096, 4096, 1024, 14336, 32, 2
LAYER_BYTES = S * (8 * H + 4 * Q + 4 * KV + 6 * FFN) // T + 4 * HEADS * S // T
MICRO_BATCHES = 64 // 4  # global batch over dp 4, micro-batch 1


def megatron_plan(train: str = "offload-activations 16", hardware: str = ""):
    text = spec(target="target megatron", train=train).replace("gpu h100-sxm", f"gpu h100-sxm {hardware}".strip()
                                                               if not hardware else "gpu h100-sxm\n" + hardware)
    result = compile_text(text, path="x.par")
    assert result.plan is not None and not [d for d in result.diagnostics if d.is_error]
    return result.plan


def activations(plan) -> int:
    from parc.memory import model
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import memory_runtime

    (stage,) = model.per_stage(shape_of(plan), knobs_of(plan, memory_runtime(plan.target)))
    return stage.activations


def test_the_layer_by_hand():
    assert LAYER_BYTES == 570_949_632


@pytest.mark.parametrize("n", [1, 2, 16, 31])
def test_offloading_frees_all_but_the_copy_in_flight(n):
    """Transformer Engine's handler holds, at the end of the forward, every layer it does not
    offload and the last offloaded one (its copy waits for the chunk's last layer): n - 1 layers'
    saved sets leave the GPU."""
    assert activations(megatron_plan("recompute none")) - activations(megatron_plan(f"offload-activations {n}")) \
        == (n - 1) * LAYER_BYTES


def test_the_ledger_counts_every_offloaded_layer_both_ways():
    from parc import timing

    b = timing.predict(megatron_plan("offload-activations 16")).breakdown
    assert b.host_bytes == MICRO_BATCHES * 2 * 16 * LAYER_BYTES
    assert timing.predict(megatron_plan("recompute none")).breakdown.host_bytes == 0


# ---------------------------------------------------------------------------------------------
# Time: each copy against the layers it runs beside


def test_transformer_engines_windows():
    """`layer_window_map` of cpu_offload_v1.py, written out: 80 layers, 40 offloaded, every second
    layer; 126 layers, 95 offloaded (the 405B recipe), the first 31 every second layer, then each."""
    from parc.timing import offload_windows

    assert offload_windows(80, 40) == tuple(2 * i + 1 for i in range(40))
    assert offload_windows(126, 95) == tuple(2 * i + 1 for i in range(31)) + tuple(i + 31 for i in range(31, 95))
    assert offload_windows(32, 31)[-1] == 31 and offload_windows(7, 3) == (2, 4, 6)


def exposed_by_hand(plan, link: float) -> float:
    """16 of 32 layers: layer k's copy (k >= 1) runs beside layers 2k and 2k + 1, layer 0's beside
    layer 1 alone; the forward waits for what a copy takes beyond them, the backward likewise for
    the reload; and the copies read and write HBM once."""
    (rank,) = rank_steps_of(plan).values()
    f, b = rank.times.layer_times[0]
    copy = LAYER_BYTES / (link * 0.8)  # bus_nvlink, the links' achieved share
    per_micro = (max(0, copy - f) + max(0, copy - b)) + 15 * (max(0, copy - 2 * f) + max(0, copy - 2 * b))
    per_micro += 2 * 16 * LAYER_BYTES / (3.35e12 * 0.8)  # HBM read out, written back
    return MICRO_BATCHES * per_micro, f, copy


def test_a_slow_host_link_is_exposed():
    from parc import timing

    plan = megatron_plan(hardware="host-bandwidth 8 GB/s")
    want, f, copy = exposed_by_hand(plan, 8e9)
    assert copy > 2 * f  # the link is the bottleneck
    assert timing.predict(plan).breakdown.offload == pytest.approx(want, rel=1e-9)


def test_a_fast_host_link_hides_under_the_layers():
    from parc import timing

    plan = megatron_plan(hardware="host-bandwidth 900 GB/s")
    want, f, copy = exposed_by_hand(plan, 900e9)
    assert copy < f  # every copy hides
    got = timing.predict(plan).breakdown
    assert got.offload == pytest.approx(want, rel=1e-9)
    assert got.offload == pytest.approx(MICRO_BATCHES * 2 * 16 * LAYER_BYTES / (3.35e12 * 0.8), rel=1e-9)


def test_the_step_adds_the_offload():
    from parc import timing

    off = timing.predict(megatron_plan("recompute none")).breakdown
    on = timing.predict(megatron_plan(hardware="host-bandwidth 8 GB/s")).breakdown
    assert on.compute == off.compute and on.offload > 0
    assert on.step == pytest.approx(off.step + on.offload, rel=1e-9)


def test_parcs_job_copies_on_the_compute_stream():
    """`save_on_cpu` copies on the current stream: nothing hides."""
    from parc import timing

    plan = compile_text(spec(), path="x.par").plan
    b = timing.predict(plan).breakdown
    assert b.offload == pytest.approx(b.host_bytes / (64e9 * 0.8) + b.host_bytes / (3.35e12 * 0.8), rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Search carries the knob


def test_search_ranks_with_the_offload(tmp_path):
    """Every candidate's step includes its copies (the search's knobs carry the layer count) and
    equals what `parc explain` predicts for the filled spec."""
    import json

    from parc import timing

    from .conftest import run_cli

    path = tmp_path / "s.par"
    text = ("tp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm, nodes 1 }\n"
            "train { seq 8192, global-batch 64, micro-batch ?, offload-activations 16 }\ndp { sharding ? }\n")
    path.write_text(text)
    out = run_cli("search", str(path), "--format", "json")
    assert out.exit_code == 0, out.stderr
    report = json.loads(out.stdout)
    best = report["candidates"][0]
    assert best["time"]["offload_seconds"] > 0 and best["time"]["host_bytes"] > 0
    d, v = best["degrees"], best["values"]
    filled = (f"tp {d['tp']} x dp {d['dp']} on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware {{ gpu h100-sxm }}\n"
              f"train {{ seq 8192, global-batch 64, micro-batch {v['train.micro-batch']}, offload-activations 16 }}\n"
              f"dp {{ sharding {v['dp.sharding']} }}\n")
    plan = compile_text(filled, path="x.par").plan
    assert timing.predict(plan).step_seconds == pytest.approx(best["step_seconds"], rel=1e-5)


def test_the_memory_check_suggests_offloading_more_not_recomputing():
    """Beside offloading, recomputation is refused (E0372): E0401's alternatives offload as many
    layers as the chunk allows (one fewer than it holds) instead."""
    from parc.memory import alternatives

    text = spec(train="offload-activations 10", layout="dp 8", model="llama3-70b")
    result = compile_text(text, path="x.par")
    e0401 = [d for d in result.diagnostics if d.code == "E0401"]
    assert e0401 and "offload-activations 79" in e0401[0].help and "recompute" not in e0401[0].help
    changes = [a.change for a in alternatives(result.plan)]
    assert "offload-activations 79" in changes and not any(c.startswith("recompute") for c in changes)


def test_the_budget_and_the_report_carry_the_offload():
    """The step's parts still sum to the step: the budget and the report's step picture gain an
    "offload" part where the step has one, and only there."""
    from parc import budget, report, timing

    plan = megatron_plan("offload-activations 16, tokens 1T")
    prediction = timing.predict(plan)
    run = budget.budget(plan, prediction)
    parts = dict(run.parts)
    assert parts["offload"] == prediction.breakdown.offload > 0
    assert sum(parts.values()) == pytest.approx(prediction.step_seconds, rel=1e-9)
    time = prediction.time_json()
    shown = report.time_parts(time)
    assert [name for name, _, _ in shown][-1] == "offload"
    assert sum(v for _, _, v in shown) == pytest.approx(time["step_seconds"], rel=1e-4)
    plain = timing.predict(megatron_plan("recompute none, tokens 1T"))
    assert "offload" not in dict(budget.budget(plan, plain).parts)
    assert "offload" not in [name for name, _, _ in report.time_parts(plain.time_json())]


PIPELINED = """job p
pp 2 x dp 4 on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-sxm }
train { seq 4096, global-batch 64, micro-batch 1%s }
pp { schedule 1f1b }
dp { sharding zero1 }
"""


def test_parc_jobs_copies_lengthen_every_pipeline_slot():
    """Under `target torch` the copies run on the compute stream, so each of the (pp - 1) slots a
    1F1B stage waits while the pipeline fills and drains grows by a micro-batch's copies, out and
    back (Narayanan et al.'s bubble, (pp - 1) x (f + b)): written out here, not read from the model."""
    from parc.timing import predict

    plain = predict(compile_text(PIPELINED % "", path="x.par").plan).breakdown
    offloaded = predict(compile_text(PIPELINED % ", offload-activations 15", path="x.par").plan).breakdown
    assert plain.offload == 0 and offloaded.offload > 0
    m, pp = 64 // 4, 2
    per_microbatch = offloaded.offload / m
    assert offloaded.compute == pytest.approx(plain.compute)
    assert offloaded.bubble - plain.bubble == pytest.approx((pp - 1) * per_microbatch, rel=1e-6)


def test_empty_ends_of_the_split_do_not_bound_it():
    """An empty end (`split [0, ..., 0]`: only the embedding or the loss) has no layer to offload;
    the bound is the fewest layers of the other chunks (16 here), and its help never suggests a
    count it refuses."""
    text = spec(train="offload-activations 2", layout="dp 2 x pp 4").replace(
        "dp { sharding zero3 }", "pp { schedule 1f1b, split [0, 16, 16, 0] }")
    assert "E0371" not in codes(text)
    result = compile_text(text.replace("offload-activations 2", "offload-activations 16"), path="x.par")
    [d] = [d for d in result.diagnostics if d.is_error]
    assert d.code == "E0371" and d.message == "16 offloaded layers, but a pipeline chunk holds 16"
    assert "offload-activations 8" in d.help
    ones = spec(train="offload-activations 1", layout="dp 4 x pp 2").replace(
        "dp { sharding zero3 }", "pp { schedule 1f1b, split [31, 1] }")
    [d] = [d for d in compile_text(ones, path="x.par").diagnostics if d.code == "E0371"]
    assert d.message == "1 offloaded layer, but a pipeline chunk holds 1"
    assert "offload-activations 1" not in d.help  # the count it refuses


SEARCHED = """job s
tp ? x dp ? x pp ? on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-sxm, nodes 4 }
train { seq 4096, global-batch 256, micro-batch 1, offload-activations 2 }
%s
"""


def test_search_ranks_no_layout_the_target_refuses_for_offloading():
    """Megatron-Core offloads only without a pipeline (E0622), and every chunk must keep a layer
    (E0371): search prunes both, so nothing it ranks is refused afterwards. torchtitan has no
    offloading at all: the spec is refused as `parc check` reads it (E0614), not, after every
    layout is searched, as an internal error."""
    from parc.search import search

    megatron = search(compile_text(SEARCHED % "target megatron", path="s.par"))
    assert megatron.candidates and not megatron.rejected
    assert all(c.values["pp"] == "1" for c in megatron.candidates)
    assert megatron.stats.pruned["E0622"] and megatron.stats.pruned["E0371"]
    # torchtitan: refused before any layout is searched, at the written `offload-activations`
    assert codes(SEARCHED % "target torchtitan") == ["E0614"]
