"""`target torch | torchtitan | megatron`: the language, the runtime facts the Plan carries
(compiler/targets.py), what explain and the memory model read from them, and the published-run
reader stating its runs' software as a `target` instead of passing it on the side.

The rule cases (E0360-E0364) live with the other rules: tests/golden/diagnostics/e036*.par and
their clean neighbours in tests/checks/ (test_checks.py, test_diagnostics_golden.py).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from parc import targets, timing
from parc.memory import estimate
from parc.pipeline import compile_text

from .conftest import ROOT, load_yaml

BASE = """\
tp 8 x dp 4 x pp 4 on nodes(8 gpus, nvlink)
model llama3-70b
hardware { gpu h100-sxm }
train { seq 8192, global-batch 256, micro-batch 1, precision PRECISION, recompute selective }
dp { sharding zero1 }
TARGET
"""


def plan_of(target: str = "", precision: str = "bf16", base: str = BASE):
    result = compile_text(base.replace("TARGET", target).replace("PRECISION", precision), path="t.par")
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result


def test_default_target_is_torch_and_keeps_parcs_software():
    plan = plan_of().plan
    assert plan.target.name == "torch"
    assert targets.software_of(plan) == timing.PARC
    assert targets.memory_runtime(plan.target) == "torch"


# Hand-written: what each runtime does, from its documentation (docs/targets.md cites each).
EXPECTED = {
    "target torch": dict(kernels="eager", selective="elementwise", tp_overlap="none", attention="flash", grad=4),
    "target torchtitan": dict(kernels="eager", selective="torchtitan-op", tp_overlap="none", attention="flash",
                              grad=4),
    "target torchtitan { compile on, tp-overlap all }": dict(kernels="fused", selective="torchtitan-op",
                                                             tp_overlap="forward", attention="flash", grad=4),
    "target megatron": dict(kernels="fused", selective="attention-core", tp_overlap="backward",
                            attention="flash-te", grad=4),
    "target megatron { flash-attention off, tp-overlap none, grad-reduce bf16 }": dict(
        kernels="fused", selective="attention-core", tp_overlap="none", attention="unfused", grad=2),
}


@pytest.mark.parametrize("line", sorted(EXPECTED))
def test_each_target_carries_its_runtime_facts(line):
    expected = EXPECTED[line]
    sw = targets.software_of(plan_of(line).plan)
    assert (sw.kernels, sw.selective, sw.tp_overlap, sw.attention, sw.grad_bytes) == (
        expected["kernels"], expected["selective"], expected["tp_overlap"], expected["attention"], expected["grad"])


def test_fp16_gradients_reduce_in_the_runtimes_dtype():
    """Megatron-LM reduces fp16 gradients in fp16 unless told otherwise; FSDP2 always in fp32."""
    assert targets.software_of(plan_of("target megatron", "fp16").plan).grad_bytes == 2
    assert targets.software_of(plan_of("target torchtitan", "fp16").plan).grad_bytes == 4
    assert targets.software_of(plan_of("target megatron { grad-reduce fp32 }", "fp16").plan).grad_bytes == 4


def test_explain_and_memory_predict_the_targets_job():
    """Fused kernels and overlapped tp make Megatron-LM's step shorter than parc's eager job on the
    same layout; its memory is Megatron's accounting (padded vocabulary, fp32 gradient buffer)."""
    torch_plan, megatron_plan = plan_of().plan, plan_of("target megatron").plan
    t, m = timing.predict(torch_plan), timing.predict(megatron_plan)
    assert m.step_seconds < t.step_seconds
    # the same as asking the time model for those facts explicitly
    explicit = timing.predict(torch_plan, sw=targets.software_of(megatron_plan), runtime="megatron-flash")
    assert explicit.step_seconds == m.step_seconds
    assert estimate(torch_plan).runtime == "torch" and estimate(megatron_plan).runtime == "megatron-flash"
    assert estimate(megatron_plan).padded_vocab % 128 == 0


def test_explain_json_names_the_target():
    from click.testing import CliRunner
    from parc.cli import main

    path = ROOT / "tests" / "checks" / "e0360_target_schedule.clean.par"
    out = CliRunner().invoke(main, ["explain", str(path.relative_to(ROOT)), "--format", "json"])
    assert '"target": "megatron"' in out.output


def test_every_runtime_option_is_a_spec_key():
    from parc.spec import TARGET_KEYS

    keys = {k.name for k in TARGET_KEYS}
    options = {o for rt in targets.RUNTIMES.values() for o in rt.options}
    assert options and options <= keys
    assert set(targets.TARGETS) == set(targets.RUNTIMES)


def test_unknown_target_and_missing_name_are_diagnosed():
    result = compile_text(BASE.replace("TARGET", "target megatorn").replace("PRECISION", "bf16"), path="t.par")
    (d,) = [d for d in result.diagnostics if d.is_error]
    assert d.code == "E0202" and "megatron" in d.help and d.span.line == 6
    result = compile_text(BASE.replace("TARGET", "target { compile on }").replace("PRECISION", "bf16"), path="t.par")
    assert [d.code for d in result.diagnostics if d.is_error] == ["E0203"]


# ---------------------------------------------------------------------------------------------
# The published-run reader


def _load(name):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


PUBLISHED_FILES = [ROOT / "benchmarks" / "data" / "megatron_bridge_25_11.yaml",
                   ROOT / "tests" / "data" / "published_schema_cases.yaml"]


def test_published_specs_state_the_software_the_reader_infers():
    """Each row's software as the reader infers it from the source's words and year equals what
    the compiled spec's `target` statement gives back: nothing is passed on the side."""
    published = _load("published")
    checked = 0
    for path in PUBLISHED_FILES:
        entries = load_yaml(path.read_text())
        if isinstance(entries, dict):
            entries = next(v for v in entries.values() if isinstance(v, list))
        entries = [e for e in entries if isinstance(e, dict)]
        for entry in entries:
            run = published.row_spec(entry, entries)
            if isinstance(run, published.Skipped):
                continue
            inferred = run.software
            assert "\ntarget " in run.spec
            done = published.compiled(run)
            if isinstance(done, published.Skipped):
                continue
            assert done.software == inferred, (run.id, run.spec)
            checked += 1
    assert checked >= 20


# ---------------------------------------------------------------------------------------------
# What each backend refuses at `parc compile` (E061x torchtitan, E062x megatron)

REFUSED = {
    "E0610": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)", "llama3-8b { layers 16, activation gelu }", "torchtitan", "recompute full", ""),
    "E0611": ("tp 8 x dp 4 on nodes(8 gpus, nvlink)", "llama3-70b", "torchtitan", "precision fp8, recompute full", ""),
    "E0612": ("tp 8 x dp 4 on nodes(8 gpus, nvlink)", "llama3-70b", "torchtitan", "recompute full 10", ""),
    "E0613": ("tp 8 x dp 2 x pp 4 on nodes(8 gpus, nvlink)", "llama3-70b", "torchtitan", "recompute full",
              "pp { schedule 1f1b, split [30, 10, 10, 30] }"),
    "E0620": ("tp 8 x dp 2 x pp 4 on nodes(8 gpus, nvlink)", "llama3-70b", "megatron", "recompute full",
              "pp { schedule 1f1b, split [18, 22, 18, 22] }"),
    "E0621": ("tp 2 x cp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp", "mixtral-8x7b", "megatron",
              "recompute full", ""),
}


@pytest.mark.parametrize("code", sorted(REFUSED))
def test_each_backend_refuses_what_its_runtime_cannot_run(code):
    from parc.backends import job_diagnostics

    layout, model, target, train, extra = REFUSED[code]
    text = (f"{layout}\nmodel {model}\nhardware {{ gpu h200 }}\ntarget {target}\n"
            f"train {{ seq 4096, global-batch 64, micro-batch 1, {train} }}\ndp {{ sharding zero3 }}\n{extra}\n")
    if target == "megatron":
        text = text.replace("zero3", "zero1")
    result = compile_text(text, path="x.par")
    assert result.plan is not None
    found = job_diagnostics(result.plan)
    assert [d.code for d in found if d.is_error] == [code], [d.message for d in found]
    (d,) = found
    assert d.span is not None and d.help


def test_diff_lists_a_target_change_and_its_effect(tmp_path):
    from .conftest import run_cli

    old = (ROOT / "specs" / "tiny.par").read_text().replace("tp 2 x pp 2 x dp 2", "tp 2 x dp 2 x pp 2")
    (tmp_path / "old.par").write_text(old)
    (tmp_path / "new.par").write_text(old + "target megatron\n")
    out = run_cli("diff", str(tmp_path / "old.par"), str(tmp_path / "new.par")).stdout
    assert "target  torch  ->  megatron" in out and "step time" in out


def test_torchtitans_compile_loss_option_reaches_its_command_line_and_comes_back():
    """`compile-loss off` is torchtitan's `--compile.components model` (its default compiles the
    model and the loss); the memory model reads which (`Knobs.model_code`), and `parc import`
    reads it back."""
    from parc.backends import job_files
    from parc.importer import Defaults, import_source
    from parc.memory.inputs import model_code
    from parc.source import SourceFile

    args = {}
    for options in ("compile on", "compile on, compile-loss off", "compile off"):
        plan = plan_of(f"target torchtitan {{ {options} }}").plan
        args[options] = job_files(plan)["torchtitan.args"]
        assert model_code(plan.target) == {"compile on": "torchtitan-compiled",
                                           "compile on, compile-loss off": "torchtitan-compiled-model",
                                           "compile off": "torchtitan"}[options]
    assert "--compile.components model\n" in args["compile on, compile-loss off"]
    assert "--compile.components" not in args["compile on"] + args["compile off"]
    back = import_source(SourceFile("torchtitan.args", args["compile on, compile-loss off"]),
                         Defaults(gpu="h100-sxm", gpus_per_node=8, dp=1))
    assert not back.diagnostics, [d.message for d in back.diagnostics]
    assert "target torchtitan { compile on, compile-loss off }" in back.text
    result = compile_text(BASE.replace("TARGET", "target torch { compile-loss off }").replace("PRECISION", "bf16"),
                          path="t.par")
    assert [d.code for d in result.diagnostics if d.is_error] == ["E0219"]


def test_compile_loss_without_compile_warns_through_parc_check_and_diff_says_nothing_of_it(tmp_path):
    """`compile-loss` alone compiles nothing: `parc check` warns at the option (W0365) with its
    help line, and `parc diff` does not call a target that compiles nothing "no compiled loss"."""
    from parc.diff import facts

    from .conftest import run_cli

    spec = BASE.replace("TARGET", "target torchtitan { compile-loss off }").replace("PRECISION", "bf16").replace(
        "zero1", "zero2")  # torchtitan has no zero1
    path = tmp_path / "t.par"
    path.write_text(spec)
    done = run_cli("check", str(path))
    line = next(i for i, text in enumerate(spec.splitlines(), 1) if "compile-loss" in text)
    col = spec.splitlines()[line - 1].index("compile-loss") + 1  # the key and its value underlined
    assert f"t.par:{line}:{col}: warning[W0365]" in done.stderr + done.stdout
    assert "help: compile-loss only matters with compile on" in done.stderr + done.stdout
    assert done.exit_code == 0  # a warning, not an error
    alone = compile_text(spec, path="t.par")
    assert facts(alone.plan)["target"] == "torchtitan"
    with_compile = compile_text(spec.replace("{ compile-loss off }", "{ compile on, compile-loss off }"), path="t.par")
    assert "W0365" not in {d.code for d in with_compile.diagnostics}
    assert facts(with_compile.plan)["target"] == "torchtitan (compile, no compiled loss)"
