"""Activation offloading (`train { offload-activations N }`, Megatron-Core's `--cpu-offloading`):
the knob, what Megatron-Core refuses beside it, and the targets that cannot run it."""

from __future__ import annotations

from parc.backends import job_diagnostics
from parc.pipeline import compile_text


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
    plan = compile_text(spec(target="target torchtitan"), path="x.par").plan
    assert [d.code for d in job_diagnostics(plan)] == ["E0614"]
    plan = compile_text(spec(target="target torchtitan", train="recompute none"), path="x.par").plan
    assert job_diagnostics(plan) == []


def test_megatron_runs_it_without_a_pipeline():
    from parc.backends import megatron

    plan = compile_text(spec(target="target megatron"), path="x.par").plan
    assert job_diagnostics(plan) == []
    assert ("--cpu-offloading-num-layers", "16") in megatron.arguments(plan)
    assert not any(o.startswith("--recompute") for o, _ in megatron.arguments(plan))
