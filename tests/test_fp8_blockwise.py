"""`fp8-recipe blockwise` (issue 14: the runtimes' own recipes): Transformer Engine's
`Float8BlockScaling`, which Megatron-LM runs as `--fp8-recipe blockwise` and DeepSeek-V3 trained
with (an fp32 scale per 1x128 tile of each activation and gradient, per 128x128 block of each
weight). What it must be is read from Transformer Engine 2.9 and Megatron-Core, not from the
model: supported from compute capability 9.0 (`check_fp8_block_scaling_support`); block scales
found inside the one quantize kernel (no amax pass, no amax reduced over tp, no history); the
output projection's bf16 input kept (`set_save_original_input`, every recipe but delayed). The
cast bytes are hand-counted in tests/test_fp8_casts.py."""

from __future__ import annotations

import pytest
from parc import kernels, targets, timing
from parc.backends import megatron as backend
from parc.memory import activations
from parc.memory.inputs import knobs_of, shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

SPEC = """tp 4 x dp 2 on nodes(8 gpus, nvlink)
model llama3-8b
hardware {{ gpu {gpu} }}
target megatron {{ fp8-recipe {recipe} }}
train {{ seq 8192, global-batch 64, micro-batch 1, precision fp8 }}
dp {{ sharding zero1 }}
"""


def compiled(gpu: str = "h100-sxm", recipe: str = "blockwise"):
    return compile_text(SPEC.format(gpu=gpu, recipe=recipe), path="bw.par")


def test_the_recipe_is_megatrons_blockwise_with_fp8_weights():
    plan = compiled().plan
    assert plan is not None and plan.target.fp8_recipe == "blockwise"
    assert targets.software_of(plan).fp8_scaling == "blockwise"
    args = dict(backend.arguments(plan))
    assert args["--fp8-recipe"] == "blockwise"
    assert "--fp8-amax-history-len" not in args  # no history: each block's scale is its own
    assert "--fp8-param-gather" in args and "--reuse-grad-buf-for-mxfp8-param-ag" not in args
    # weights gathered at a byte an element, as Megatron-Core's blockwise parameters are
    assert targets.gather_bytes(plan.target, "fp8") == 1


@pytest.mark.parametrize("gpu, code", [("h100-sxm", None), ("h200", None), ("b200", None),
                                       ("mi300x", "E0627"), ("a100-80gb", "E0626")])
def test_blockwise_needs_compute_capability_9(gpu, code):
    """Hopper and Blackwell run it; a GPU with fp8 but not TE's block-scaled GEMMs is refused at the
    recipe (E0627), one with no fp8 at all at the precision, once (E0626)."""
    result = compiled(gpu)
    codes = [d.code for d in result.diagnostics if d.code in ("E0626", "E0627")]
    assert codes == ([code] if code else [])
    if code == "E0627":
        (e,) = [d for d in result.diagnostics if d.code == code]
        assert e.span is not None and "Hopper" in e.help


def test_no_amax_is_reduced_and_one_kernel_quantizes():
    """Unlike per-tensor current scaling (an amax all-reduce over tp per gathered tensor and four
    kernels a cast), the blockwise quantizer needs no tensor-wide amax: no tp record, one launch."""
    plan = compiled().plan
    inputs = timing.plan_inputs(plan)
    link = timing.link(inputs.geo.tp, inputs.hw, timing.DEFAULT)
    case = timing.LayerCase.of(inputs.knobs, False, inputs.sw)
    assert case.fp8_scaling == "blockwise" and case.sp
    assert timing.tp_amax_reductions(inputs.shape, case, inputs.hw, link) == ()
    current = timing.LayerCase.of(inputs.knobs, False, targets.software_of(compiled(recipe="tensorwise").plan))
    assert timing.tp_amax_reductions(inputs.shape, current, inputs.hw, link)
    assert kernels.QUANTIZE_KERNELS["blockwise"] == 1 < kernels.QUANTIZE_KERNELS["current"]


def test_the_output_projection_keeps_its_bf16_input():
    """Megatron-Core's `set_save_original_input` under every recipe but delayed scaling: the output
    projection saves its bf16 input, the attention's output, which the attention kernel keeps for
    its own backward anyway, instead of a quantized copy beside it: a byte an element less than
    delayed scaling holds (a 4,096-wide query at tp 4, 8,192 tokens), as under current scaling."""
    def saved(recipe: str) -> float:
        plan = compiled(recipe=recipe).plan
        k = knobs_of(plan, "megatron-flash")
        return activations.layer_activations(shape_of(plan), k, False, "none").saved

    assert saved("delayed") - saved("blockwise") == pytest.approx(8192 * 4096 / 4, abs=1)
    assert saved("blockwise") == saved("tensorwise")


def test_the_reader_takes_deepseek_v3s_fine_grained_scaling_as_blockwise():
    """DeepSeek-V3's report (Section 3.3.2: tile-wise 1x128 activations, block-wise 128x128
    weights) is the blockwise recipe; Megatron-Bridge's FP8-CS and FP8-MX cells stay theirs."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    def recipe(words: str) -> str:
        return published.fp8_recipe_of({"layout": {"precision": words}})

    assert recipe("FP8 (fine-grained block-wise scaling)") == "blockwise"
    assert recipe("FP8-CS") == "current" and recipe("FP8-MX") == "mxfp8" and recipe("FP8") == "delayed"

    entries = load_yaml((ROOT / "benchmarks" / "data" / "published.yaml").read_text())
    (row,) = [e for e in entries if e["id"] == "deepseek_v3_pretraining_2048xH800"]
    run = published.row_spec(row)
    assert isinstance(run, published.Run)
    assert "fp8-recipe blockwise" in run.spec and run.software.fp8_scaling == "blockwise"
    assert compile_text(run.spec, path="dsv3.par").plan.target.fp8_recipe == "blockwise"
