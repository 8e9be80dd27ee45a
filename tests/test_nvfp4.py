"""`precision nvfp4`: Transformer Engine's NVFP4 recipe as Megatron-LM runs it, from the language to
the launcher, the memory and time models and the reader of published runs.

Independent partners: the datasheets' FP4 peaks (hand-copied below), Megatron-LM core_v0.16.0's
own option list (tests/data), the bytes an NVFP4 tensor takes written out from its format (half a
byte per E2M1 value, one E4M3 scale per 16), and the published NVFP4 rows of Megatron-Bridge's
tables (benchmarks/data/megatron_bridge_nvfp4.yaml), which no constant was fitted on."""

from __future__ import annotations

import statistics
import sys

import pytest
from parc import timing
from parc.backends import job_diagnostics
from parc.backends import megatron as backend
from parc.catalog.gpus import GPUS
from parc.importer import import_source
from parc.memory import estimate
from parc.pipeline import compile_text
from parc.source import SourceFile

from .conftest import ROOT, load_yaml
from .test_bounds import assert_within_physics

NVFP4_ELEMENT = 0.5 + 1 / 16
"""Half a byte per E2M1 value and one E4M3 (one-byte) scale per block of 16 values."""

LLAMA_8B = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware {{ gpu {gpu} }}\n{target}\n"
            "train {{ seq 8192, global-batch 64, micro-batch 1, precision {precision}, recompute none }}\n"
            "tp {{ sequence-parallel on }}\ndp {{ sharding {sharding} }}\n")


def spec(gpu: str = "b200", target: str = "target megatron", precision: str = "nvfp4", sharding: str = "zero1") -> str:
    return LLAMA_8B.format(gpu=gpu, target=target, precision=precision, sharding=sharding)


def plan_of(text: str):
    result = compile_text(text, path="x.par")
    errors = [d for d in result.diagnostics if d.is_error]
    assert result.plan is not None and not errors, [d.message for d in errors]
    return result.plan


# ---------------------------------------------------------------------------------------------
# The catalogue and the checks


@pytest.mark.parametrize("gpu, dense_fp4", [
    ("b200", 9000e12),  # DGX B200: 144 PFLOPS FP4 (sparse) for 8 GPUs
    ("gb200-nvl72", 10000e12),  # GB200 NVL72: 1,440 PFLOPS FP4 (sparse) for 72 GPUs
    ("b300", 13500e12),  # HGX B300: 108 PFLOPS FP4 dense for 8 GPUs
    ("gb300-nvl72", 15000e12),  # GB300 NVL72: 1,080 PFLOPS FP4 dense for 72 GPUs
])
def test_fp4_peaks_are_the_datasheets_dense_figures(gpu, dense_fp4):
    assert GPUS[gpu]["fp4_flops"] == dense_fp4
    assert all(not g.get("fp4_flops") for name, g in GPUS.items() if g["generation"] != "blackwell")


def test_nvfp4_on_a_gpu_without_fp4_tensor_cores_is_refused_where_the_spec_says_it():
    result = compile_text(spec(gpu="h100-sxm"), path="x.par")
    found = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in found] == ["E0629"]
    assert found[0].help and "b200" in found[0].help
    text = spec(gpu="h100-sxm")
    assert text[found[0].span.start:found[0].span.end] == "nvfp4"
    assert not [d for d in compile_text(spec(), path="x.par").diagnostics if d.is_error]


def test_a_spec_defined_gpu_states_its_fp4_peak():
    text = spec(gpu="my-gpu { hbm 192 GB, bf16 2000 TFLOP/s, fp8 4000 TFLOP/s, fp4 8000 TFLOP/s, "
                    "link 900 GB/s, nvlink-domain 8, generation blackwell }")
    plan = plan_of(text)
    assert plan.cluster.gpu.fp4_flops == 8000e12
    assert timing.hardware_of(plan).fp4 == 8000e12
    unstated = compile_text(text.replace("fp4 8000 TFLOP/s, ", ""), path="x.par")
    assert [d.code for d in unstated.diagnostics if d.is_error] == ["E0629"]


def test_the_torch_runtimes_say_what_they_run_instead():
    torch = compile_text(spec(target="target torch", sharding="zero3"), path="x.par")
    assert not [d for d in torch.diagnostics if d.is_error]
    assert "W0601" in {d.code for d in job_diagnostics(torch.plan)}
    titan = compile_text(spec(target="target torchtitan", sharding="zero3"), path="x.par")
    assert titan.plan is not None and "E0611" in {d.code for d in job_diagnostics(titan.plan) if d.is_error}


def test_a_gpu_search_rules_out_the_gpus_without_fp4():
    from parc.search.cluster import search_cluster

    text = ("tp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\n"
            "hardware { gpu ? in [h100-sxm, b200], gpus 64 }\ntarget megatron\n"
            "train { seq 4096, global-batch 256, micro-batch 1, precision nvfp4, tokens 1T }\ndp { sharding zero1 }\n")
    c = compile_text(text)
    assert c.plan is not None and not [d for d in c.diagnostics if d.is_error]
    result = search_cluster(c)
    ruled = [p for p in result.points if p.reason]
    assert ruled and all("E0629" in p.reason for p in ruled) and {p.probe.gpu for p in ruled} == {"h100-sxm"}
    assert result.chosen is not None and result.chosen.probe.gpu == "b200"


# ---------------------------------------------------------------------------------------------
# The launcher and `parc import`

FLAGS = {line for line in (ROOT / "tests" / "data" / "megatron_lm_core_v0.16.0_flags.txt").read_text().splitlines()
         if line.startswith("--")}


def test_megatron_runs_nvfp4_with_its_own_flags():
    args = dict(backend.arguments(plan_of(spec())))
    assert (args["--fp4-format"], args["--fp4-recipe"]) == ("e2m1", "nvfp4")
    assert "--fp4-param-gather" in args and "--bf16" in args
    assert not {a for a in args if a.startswith("--fp8")}  # Megatron-LM refuses fp4 beside fp8
    assert set(args) <= FLAGS
    kept = dict(backend.arguments(plan_of(spec(target="target megatron { fp8-params off }"))))
    assert "--fp4-format" in kept and "--fp4-param-gather" not in kept
    ddp = dict(backend.arguments(plan_of(spec(sharding="none"))))
    assert "--fp4-format" in ddp and "--fp4-param-gather" not in ddp


MEGATRON_LINE = ("torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                 "--seq-length 4096 --vocab-size 32000 --micro-batch-size 1 --bf16 --data-parallel-size 8 "
                 "--use-distributed-optimizer {extra}\n")


@pytest.mark.parametrize("extra, precision, params_off", [
    ("--fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather", "nvfp4", False),
    ("--fp4-format e2m1", "nvfp4", True),  # nvfp4 is Megatron-LM's default recipe; bf16 weights kept
])
def test_import_reads_megatrons_nvfp4_back(extra, precision, params_off):
    imported = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra=extra)))
    assert not [d for d in imported.diagnostics if d.code == "W0701"], [d.message for d in imported.diagnostics]
    assert f"precision {precision}" in imported.text
    assert ("fp8-params off" in imported.text) == params_off


def test_import_reports_an_fp4_recipe_parc_does_not_model():
    imported = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra="--fp4-format e2m1 --fp4-recipe custom")))
    unread = [d for d in imported.diagnostics if d.code == "W0701"]
    assert unread and "precision bf16" in imported.text


# ---------------------------------------------------------------------------------------------
# The time model


@pytest.mark.parametrize("gpu", ["b200", "gb200-nvl72", "b300", "gb300-nvl72"])
def test_an_nvfp4_gemm_never_beats_the_fp4_peak_nor_the_bytes_it_reads(gpu):
    """A large product is compute-bound: never faster than its FLOPs at the FP4 peak, and faster
    than the same product in fp8. A thin one is memory-bound: never faster than its operands
    (0.5625 bytes an element) and bf16 output over the HBM bandwidth."""
    plan = plan_of(spec(gpu=gpu))
    hw, c = timing.hardware_of(plan), timing.DEFAULT
    m, k, n = 16384, 8192, 28672
    flops = 2 * m * k * n
    fp4 = timing.gemm_seconds(m, k, n, "nvfp4", hw, c)
    fp8 = timing.gemm_seconds(m, k, n, "fp8", hw, c)
    assert flops / GPUS[gpu]["fp4_flops"] <= fp4 < fp8
    thin = timing.gemm_seconds(8, k, n, "nvfp4", hw, c)
    assert thin >= (NVFP4_ELEMENT * (8 * k + k * n) + 2 * 8 * n) / hw.hbm


def test_nvfp4_layer_pays_its_casts_and_counts_its_launches():
    """One Llama 3 8B layer at tp 2 with sequence parallelism, 8,192 tokens, on B200: the HBM ledger
    (`hbm.layer_bytes`) under NVFP4 moves more cast bytes than under fp8 by exactly (5.125 - 3)
    bytes an element of every GEMM input forward and output gradient backward, the sequence-parallel
    gathers' on the rank's own rows (NVFP4: an amax
    read, a cast read, two 0.5625-byte copies; fp8 delayed scaling on Blackwell: read 2, write 1,
    no transpose), the elements counted here from the model's sizes; its host issues the quantize,
    global-scale and swizzle kernels (three, then two per GEMM). Two differences besides: under
    delayed fp8 the norms write QKV's and fc1's fp8 inputs themselves (4 bytes an element of their
    own rows: no bf16 output, no read back), NVFP4's run unfused; under NVFP4 the output
    projection keeps its bf16 input (Megatron-Core's `set_save_original_input`), writing only the
    rowwise copy forward (0.5625 less) and the Hadamard-rotated columnwise one backward after its
    own amax pass (2 + 2 + 0.5625)."""
    from parc import hbm, kernels
    from parc.memory.inputs import shape_of
    from parc.targets import software_of

    plan = plan_of(spec())
    shape, sw = shape_of(plan), software_of(plan)

    def bytes_of(precision: str):
        case = timing.LayerCase.under(sw, moe=False, tp=2, sp=True, cp=1, flavour="ring", seq=8192, micro=1,
                                      ep=1, precision=precision)
        return hbm.layer_bytes(shape, case, transposed=False)

    tokens, h, q, kv, ffn, tp = 8192, 4096, 4096, 1024, 14336, 2
    # QKV, output projection, fc1 (gate and up), fc2; QKV's and fc1's inputs, and the output
    # projection's and fc2's output gradients, quantized on the rank's own rows before the
    # sequence-parallel gather (1/tp of them)
    inputs = tokens * (h / tp + q / tp + h / tp + ffn / tp)
    gradients = tokens * ((q + 2 * kv) / tp + h / tp + 2 * ffn / tp + h / tp)
    fp8, nv = bytes_of("fp8"), bytes_of("nvfp4")
    normed, projected = tokens * (h + h) / tp, tokens * q / tp
    assert nv.memory_f - fp8.memory_f == pytest.approx((5.125 - 3) * inputs + 4 * normed - 0.5625 * projected,
                                                       rel=1e-9)
    assert nv.memory_b - fp8.memory_b == pytest.approx((5.125 - 3) * gradients + 4.5625 * projected, rel=1e-9)
    assert kernels.gemm_cast_launches("nvfp4") == 5 and kernels.gemm_cast_launches("current") == 1
    assert kernels.gemm_cast_launches("nvfp4", 2) == 7  # backward: data and weight gradients


def test_megatron_nvfp4_predicts_within_physics_and_mfu_counts_the_fp4_peak():
    for gpu in ("b200", "gb200-nvl72", "gb300-nvl72"):
        plan = plan_of(spec(gpu=gpu))
        prediction = assert_within_physics(plan)
        assert prediction.peak == GPUS[gpu]["fp4_flops"]
        bf16 = timing.predict(plan_of(spec(gpu=gpu, precision="bf16")))
        fp8 = timing.predict(plan_of(spec(gpu=gpu, precision="fp8")))
        assert prediction.step_seconds < fp8.step_seconds < bf16.step_seconds


@pytest.mark.parametrize("target", ["target torch", "target torchtitan"])
def test_the_torch_runtimes_time_nvfp4_as_the_bf16_they_run(target):
    """parc's job and torchtitan have no NVFP4 linears (W0601, E0611): an nvfp4 spec is timed as
    the bf16 it would run, without the FP4 caveat."""
    from parc import caveats

    plan = plan_of(spec(target=target, sharding="zero3"))
    nv = timing.predict(plan)
    bf16 = timing.predict(plan_of(spec(target=target, sharding="zero3", precision="bf16")))
    assert nv.step_seconds == bf16.step_seconds
    assert "fp4-gemm" not in [c.code for c in caveats.of_prediction(plan, nv.breakdown)]


# ---------------------------------------------------------------------------------------------
# The memory model


def _linear_params_per_rank(tp: int) -> float:
    """Llama 3 8B's linear weights on one tp rank, from its sizes: q 4096, k and v 1024 each, the
    output 4096, three FFN matrices of 14336, 32 layers."""
    h, kv, ffn, layers = 4096, 1024, 14336, 32
    return layers * (h * (h + 2 * kv) + h * h + 3 * h * ffn) / tp


def test_nvfp4_weights_are_two_nvfp4_copies_in_place_of_bf16():
    """With `--fp4-param-gather` each linear weight is an NVFP4 tensor, rowwise and columnwise
    (2 x 0.5625 bytes) where bf16 held 2; without it the bf16 weight stays beside the cached
    NVFP4 copies."""
    linear = _linear_params_per_rank(2)
    bf16 = estimate(plan_of(spec(precision="bf16"))).stages[0].params
    nv = estimate(plan_of(spec())).stages[0].params
    assert bf16 - nv == pytest.approx((2 - 2 * NVFP4_ELEMENT) * linear, rel=1e-6)
    kept = estimate(plan_of(spec(target="target megatron { fp8-params off }"))).stages[0].params
    assert kept - bf16 == pytest.approx(2 * NVFP4_ELEMENT * linear, rel=1e-6)


def test_nvfp4_linears_save_their_inputs_as_transformer_engine_keeps_them():
    """Transformer Engine's linears keep the quantized input their weight gradient reads, per token
    and layer: the QKV and fc1 inputs (h each, the tokens tp-split by sequence parallelism; fused
    norm-and-linears, which under NVFP4 keep both copies, 2 x 0.5625, against fp8's byte), the
    output projection's (q / tp: fp8 keeps a quantized copy beside the bf16 output, NVFP4 none,
    Megatron-Core's `save_original_input`) and fc2's (F / tp: 1 byte against 0.5625)."""
    tp, h, q, ffn, layers, tokens = 2, 4096, 4096, 14336, 32, 8192
    per_token = (1 - 2 * NVFP4_ELEMENT) * (h + h) / tp + 1 * q / tp + (1 - NVFP4_ELEMENT) * ffn / tp
    expected = per_token * tokens * layers
    fp8 = estimate(plan_of(spec(precision="fp8"))).stages[0]
    nv = estimate(plan_of(spec())).stages[0]
    assert fp8.activations - nv.activations == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("recipe", ["tensorwise", "mxfp8"])
def test_fp8_recipes_but_delayed_keep_the_output_projections_bf16_input(recipe):
    """Megatron-Core has the output projection keep its bf16 input under every fp8 recipe but
    delayed scaling, as under NVFP4 (`set_save_original_input`, attention.py, TE >= 2.6): the
    quantized copy delayed scaling keeps beside the core's bf16 output (q / tp, one byte a token
    and layer under fp8) is not kept. Nothing else of the dense layer's saved inputs differs."""
    tp, q, layers, tokens = 2, 4096, 32, 8192
    delayed = estimate(plan_of(spec(precision="fp8"))).stages[0]
    other = estimate(plan_of(spec(precision="fp8", target=f"target megatron {{ fp8-recipe {recipe} }}"))).stages[0]
    assert delayed.activations - other.activations == pytest.approx(1 * q / tp * tokens * layers, rel=0.01)


# ---------------------------------------------------------------------------------------------
# Published NVFP4 runs


def test_the_reader_reads_nvfp4_and_refuses_other_4_bit_formats():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    assert published.precision_of({"precision": "NVFP4"}) == "nvfp4"
    for text in ("nv-fp4 (E2M1, 16-element blocks)", "NV FP4", "bf16_with_nvfp4_mixed", "FP4 (NVFP4 recipe)"):
        assert published.precision_of({"precision": text}) == "nvfp4", text
    with pytest.raises(published.Unusable):
        published.precision_of({"precision": "MXFP4"})


def test_megatron_bridges_nvfp4_rows_are_predicted_and_none_beats_physics():
    """Every NVFP4 row Megatron-Bridge published (never fitted on) is read and predicted, within
    the error band the other Blackwell rows have, without a bias: median |error| 7.6 % and median
    signed error +0.1 % since the casts are charged before the sequence-parallel gather as
    Transformer Engine runs them (stop 51; 6.8 % with a -2.1 % bias when they were charged on the
    gathered tensor), worst under 25 %."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    path = ROOT / "benchmarks" / "data" / "megatron_bridge_nvfp4.yaml"
    rows, left_out = fidelity.load_rows(path)
    assert len(rows) >= 16 and not left_out
    errors = []
    for row in rows:
        assert "precision nvfp4" in row.spec
        prepared = fidelity.prepare(row)
        step = fidelity.predicted_step(row, prepared, fidelity.DEFAULT).step
        errors.append(row.conv_flops / step / row.gpus / 1e12 / row.reported_tflops - 1)
    errors.sort(key=abs)
    assert statistics.median(abs(e) for e in errors) < 0.08 and abs(errors[-1]) < 0.25, errors
    assert abs(statistics.median(errors)) < 0.03, errors


@pytest.mark.parametrize("gpu, memory, key, stated, override", [
    ("GB200", 186, "gb200-nvl72", 10000, False), ("GB200", 186, "gb200-nvl72", 5000, False),
    ("GB200", 186, "gb200-nvl72", 2500, False), ("GB200", 186, "gb200-nvl72", 20000, False),
    ("GB200", 186, "gb200-nvl72", 8000, True),
    # Blackwell Ultra: 1,440 PFLOPS sparse, 1,080 dense for 72 GPUs; 144 and 108 for 8
    ("GB300", 288, "gb300-nvl72", 20000, False), ("GB300", 288, "gb300-nvl72", 30000, True),
    ("B300", 288, "b300", 18000, False), ("B300", 288, "b300", 13500, False)])
def test_an_nvfp4_rows_stated_peak_overrides_the_fp4_peak_only_where_it_is_another_part(gpu, memory, key, stated,
                                                                                         override):
    """A row's "peak at precision" for an NVFP4 run may be the part's FP8, BF16 or sparse FP4 figure
    (the datasheets': not twice the dense one on Blackwell Ultra): its MFU convention, not a slower
    part; any other figure is the row's own part and overrides the catalogue's dense FP4 peak."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    notes: list[str] = []
    block, found, _, peak = published.hardware_block(
        {"gpu": gpu, "gpu_memory_gb": memory, "gpus_per_node": 4, "peak_tflops_dense_at_precision": stated},
        "nvfp4", notes)
    assert found == key and peak == stated
    assert ("fp4 " in block) == override, block


def test_the_reader_leaves_out_nvfp4_it_cannot_predict():
    """NVFP4 on a part without FP4 tensor cores, or under a runtime other than Megatron-LM's
    Transformer Engine, is left out with the reason, never predicted as bf16 or as TE's recipe."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    row = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_nvfp4.yaml").read_text())[0]
    hopper = dict(row, hardware=dict(row["hardware"], gpu="H100-SXM5-80GB", gpu_memory_gb=80,
                                     peak_tflops_dense_at_precision=None))
    skipped = published.row_spec(hopper)
    assert isinstance(skipped, published.Skipped) and "FP4 tensor cores" in skipped.reason
    titan = dict(row, group="torchtitan", source={"title": "torchtitan benchmarks", "locator": "x"})
    skipped = published.row_spec(titan)
    assert isinstance(skipped, published.Skipped) and "Transformer Engine" in skipped.reason


def test_explain_says_nvfp4_products_stand_on_fp8s_measured_ceiling():
    """The caveat where the runtime runs NVFP4 products (Megatron-LM), not where it runs the spec in
    bf16 (parc's job)."""
    from parc import caveats

    def codes(text: str) -> list[str]:
        plan = plan_of(text)
        return [c.code for c in caveats.of_prediction(plan, timing.predict(plan).breakdown)]

    assert "fp4-gemm" in codes(spec())
    assert "fp4-gemm" not in codes(spec(target="target torch", sharding="zero3"))
    assert "fp4-gemm" not in codes(spec(precision="fp8"))


@pytest.mark.parametrize("precision, forward, again, gradient", [
    ("bf16", 2, 2, 2), ("fp8", 1, 1, 1), ("nvfp4", NVFP4_ELEMENT, NVFP4_ELEMENT, 2 * NVFP4_ELEMENT)])
def test_sequence_parallel_all_gathers_carry_the_quantized_tensors(precision, forward, again, gradient):
    """Under sequence parallelism Transformer Engine quantizes before it gathers: forward each
    column-parallel input (QKV's, fc1's: the rowwise copy), backward each saved shard again (the
    columnwise copy) and each row-parallel output gradient (the output projection's, fc2's: both
    copies under NVFP4, for the data- and the weight-gradient GEMMs; fp8's per-tensor one). The
    reduce-scatters carry bf16 outputs; the output layer (Megatron-LM's own linear) gathers bf16.
    Llama 3 8B at tp 2, one 8,192-token sequence a micro-batch: per layer and micro-batch two
    all-gathers forward, two re-gathers and two gradient gathers backward."""
    from .conftest import rank_steps_of

    plan = plan_of(spec(gpu="b200", precision=precision))
    records = [c for rank in rank_steps_of(plan).values() for c in rank.ledger.collectives
               if c.axis == "tp" and c.pairs]
    tensor = 8192 * 4096
    per_micro: dict[tuple[str, float], int] = {}
    for c in records:
        if c.kind == "all_gather":
            per_micro[(c.phase, c.payload)] = per_micro.get((c.phase, c.payload), 0) + c.micro
    expected: dict[tuple[str, float], int] = {}
    for phase, size, calls in (("forward", forward, 2 * 32), ("forward", 2, 1), ("backward", again, 2 * 32),
                               ("backward", gradient, 2 * 32), ("backward", 2, 2)):
        expected[(phase, size * tensor)] = expected.get((phase, size * tensor), 0) + calls
    assert per_micro == {k: v for k, v in expected.items() if v}
    assert {c.payload for c in records if c.kind == "reduce_scatter"} == {2 * tensor}


def test_the_megatron_job_runs_nvfp4_as_nvidias_recipes_and_says_what_it_needs():
    """`train.py` sets NVTE_USE_FAST_MATH only where the options run NVFP4 (run here on options
    with and without `--fp4-format`, as the launchers run it, up to Megatron-LM's import); the
    job README names the software `--fp4-param-gather` needs, and only then."""
    from parc.backends import job_files

    files = job_files(plan_of(spec()))
    assert "core_v0.18.0" in files["README.md"] and "Transformer Engine 2.14" in files["README.md"]
    assert "NVTE_USE_FAST_MATH" in files["train.py"]
    kept = job_files(plan_of(spec(target="target megatron { fp8-params off }")))["README.md"]
    assert "NVFP4" in kept and "core_v0.18.0" not in kept
    assert "NVFP4" not in job_files(plan_of(spec(precision="fp8")))["README.md"]


@pytest.mark.parametrize("fp4, expected", [(True, "1"), (False, None)])
def test_train_py_sets_fast_math_only_under_nvfp4(tmp_path, monkeypatch, fp4, expected):
    import os
    import runpy

    from parc.backends import job_files

    files = job_files(plan_of(spec(precision="nvfp4" if fp4 else "fp8")))
    (tmp_path / "train.py").write_text(files["train.py"])
    (tmp_path / "megatron.args").write_text(files["megatron.args"])
    checkout = tmp_path / "megatron"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("import os\nSEEN = os.environ.get('NVTE_USE_FAST_MATH')\n")
    monkeypatch.setenv("MEGATRON_LM", str(checkout))
    monkeypatch.delenv("NVTE_USE_FAST_MATH", raising=False)
    monkeypatch.setattr(sys, "argv", ["train.py"])
    monkeypatch.setattr(sys, "path", list(sys.path))
    runpy.run_path(str(tmp_path / "train.py"), run_name="__main__")
    assert os.environ.get("NVTE_USE_FAST_MATH") == expected


def test_the_reader_runs_a_stated_userbuffers_overlap_as_megatrons_backward_under_nvfp4():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    rows = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_nvfp4.yaml").read_text())
    row = next(r for r in rows if r["layout"]["tp"] > 1)
    run = published.row_spec(dict(row, recipe=dict(row["recipe"], tp_comm_overlap=True)))
    target = next(line for line in run.spec.splitlines() if line.startswith("target"))
    assert run.software.tp_overlap == "backward" and "tp-overlap" not in target
    assert "E0630" in " ".join(run.assumptions)
