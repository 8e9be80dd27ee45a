"""`parc import`: a generated torchtitan or Megatron-LM job imported back gives the same
settings; a Hugging Face config.json gives the model; what parc cannot read is reported with
file:line (W0701), never dropped.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from parc.backends import job_files
from parc.importer import Defaults, import_source
from parc.pipeline import compile_text
from parc.source import SourceFile

from .conftest import ROOT, run_cli
from .test_targets_megatron import LAYOUTS as MEGATRON_LAYOUTS
from .test_targets_megatron import compiled as megatron_compiled
from .test_targets_torchtitan import CUSTOM_LAYOUTS as TITAN_CUSTOM_LAYOUTS
from .test_targets_torchtitan import HEAD as TITAN_HEAD
from .test_targets_torchtitan import LAYOUTS as TITAN_LAYOUTS
from .test_targets_torchtitan import compiled as titan_compiled


def settings(plan) -> dict:
    """The facts a job's configuration carries (not the cluster, which no imported file says): both
    launchers write the optimizer, its weight decay and the clipping, which tell parc's settings
    apart."""
    lay, t = plan.layout, plan.training
    return {
        "model": plan.model.model_dump(exclude={"spans", "name"}),
        "axes": [(a.name, a.degree) for a in lay.axes if a.degree != 1],
        "sp": lay.tp.sequence_parallel if (lay.tp.degree or 1) > 1 else None,
        "pp": (lay.pp.schedule, lay.pp.virtual_stages, tuple(c for c in (lay.pp.split or ()))) if (lay.pp.degree or 1) > 1
        else None,
        "dp": (lay.dp.sharding, lay.dp.replicate, lay.dp.shard, lay.dp.bucket) if (lay.dp.degree or 1) * (lay.cp.degree or 1) > 1
        else None,
        "cp": lay.cp.flavour if (lay.cp.degree or 1) > 1 else None,
        "ep": (lay.ep.degree, lay.ep.folded_over),
        "train": (t.seq_len, t.global_batch, t.micro_batch, t.precision, t.recompute, t.recompute_layers,
                  t.recompute_modules, t.offload_layers, t.optimizer, t.clip_grad_norm),
        "target": plan.target.model_dump(exclude={"spans"}),
        "steps": plan.launch.steps,
    }


def reimport(plan, name: str, dp: int = 1):
    source = SourceFile(name, job_files(plan)[name])
    imported = import_source(source, Defaults(gpu=plan.cluster.gpu.name, gpus_per_node=plan.cluster.gpus_per_node,
                                              dp=dp))
    assert imported.text is not None, [d.message for d in imported.diagnostics]
    assert not imported.diagnostics, [d.message for d in imported.diagnostics]
    result = compile_text(imported.text, path="imported.par")
    assert result.plan is not None, [d.message for d in result.diagnostics if d.is_error]
    return result.plan


def _normalise(plan, s: dict) -> dict:
    # an even split is written by neither backend; parc's plan keeps `split` only when stated
    if s["pp"]:
        from parc.stages import pipeline_chunks

        layers = tuple(c.layers for c in sorted(pipeline_chunks(plan), key=lambda c: c.index))
        s["pp"] = (s["pp"][0], s["pp"][1], layers)
    return s


@pytest.mark.parametrize("name", sorted(TITAN_LAYOUTS))
def test_torchtitan_round_trip(name):
    plan = titan_compiled(name)
    again = reimport(plan, "torchtitan.args")
    assert _normalise(again, settings(again)) == _normalise(plan, settings(plan))


@pytest.mark.parametrize("name", sorted(MEGATRON_LAYOUTS))
def test_megatron_round_trip(name):
    plan = megatron_compiled(name)
    again = reimport(plan, "megatron.args", dp=plan.layout.dp.degree or 1)
    assert _normalise(again, settings(again)) == _normalise(plan, settings(plan))


def test_shipped_specs_round_trip():
    checked = 0
    for path in sorted((ROOT / "specs").glob("*.par")):
        text = path.read_text()
        for target, name in (("torchtitan", "torchtitan.args"), ("megatron", "megatron.args")):
            if f"\ntarget {target}" in text:
                plan = compile_text(text, path=path.name).plan
                again = reimport(plan, name, dp=plan.layout.dp.degree or 1)
                assert _normalise(again, settings(again)) == _normalise(plan, settings(plan)), path
                checked += 1
    assert checked >= 2


HF_LLAMA3_8B = {  # meta-llama/Meta-Llama-3-8B config.json, as published
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 128000,
    "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0", "use_cache": True, "vocab_size": 128256,
}

HF_MIXTRAL = {  # mistralai/Mixtral-8x7B-v0.1 config.json, as published
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": False,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0",
    "use_cache": True, "vocab_size": 32000,
}

SPEC = "dp 8 on nodes(8 gpus, nvlink)\n{model}\nhardware {{ gpu h100-sxm }}\ntrain {{ seq 4096, global-batch 8 }}\n"


@pytest.mark.parametrize(("config", "preset"), [(HF_LLAMA3_8B, "llama3-8b"), (HF_MIXTRAL, "mixtral-8x7b")])
def test_hf_config_gives_the_models_shape(config, preset):
    text = json.dumps(config, indent=2)
    imported = import_source(SourceFile("config.json", text))
    assert imported.text is not None
    ours = compile_text(SPEC.format(model=imported.text.strip()), path="a.par", checks=False).plan.model
    theirs = compile_text(SPEC.format(model=f"model {preset}"), path="b.par", checks=False).plan.model
    assert ours.model_dump(exclude={"spans"}) == theirs.model_dump(exclude={"spans"})
    # keys parc has no field for are reported where they are written, none silently dropped
    reported = {d.message.split("`")[1] for d in imported.diagnostics}
    assert reported == {k for k in config if k in ("rope_scaling", "sliding_window")}
    for d in imported.diagnostics:
        assert d.code == "W0701" and text.splitlines()[d.span.line - 1].strip().startswith(f'"{d.message.split("`")[1]}"')


def test_unknown_options_are_reported_with_their_line(tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\ntorchrun --nproc-per-node 8 pretrain_gpt.py \\\n"
                      "  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\\n"
                      "  --seq-length 4096 --vocab-size 32000 --lr 1e-4 \\\n"
                      "  --tensor-model-parallel-size 2 --data-path /data/x  # the corpus\n")
    result = run_cli("import", str(script), "--dp", "4")
    assert result.exit_code == 0
    assert "tp 2 x dp 4" in result.stdout
    for option, line in (("--lr", 4), ("--data-path", 5), ("--nproc-per-node", 2)):
        assert f"{script}:{line}:" in result.stderr and f"`{option}` is not imported" in result.stderr
    assert "torchrun" in result.stderr and "pretrain_gpt.py" in result.stderr  # the words around the options


def test_unrecognised_file_is_an_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    result = run_cli("import", str(path))
    assert result.exit_code == 1 and "E0702" in result.stderr and result.stdout == ""


# ---------------------------------------------------------------------------------------------
# A generated torchtitan flavour module (parc_torchtitan.py) read back


FLAVOUR_LAYOUTS = TITAN_CUSTOM_LAYOUTS | {
    # a `model { ... }` block of no preset, MoE on every second layer, with a bias step
    "block-every-2": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 8 over tp x dp",
                      "{ layers 6, hidden 1024, ffn 4096, heads 8, kv-heads 2, head-dim 64, vocab 50000, experts 16, "
                      "top-k 4, expert-ffn 512, shared-experts 2, moe-layers every 2, moe-balance aux-free 0.0005 }",
                      "", "train { seq 2048, global-batch 16, micro-batch 1, recompute full }\ndp { sharding zero3 }\n"),
}


EXPLAIN_FACTS = ("model", "layout", "parameters", "world_size", "seq", "global_batch", "micro_batch", "memory", "time")
"""The `parc explain --format json` fields a round trip keeps (the file's name is the one that differs)."""


@pytest.mark.parametrize("name", sorted(FLAVOUR_LAYOUTS))
def test_generated_flavour_round_trips_through_the_command_line(name, tmp_path):
    """`parc compile` a shape torchtitan registers no config for, `parc import` the job folder's
    command line (which loads parc_torchtitan.py), and explain both specs: same model, layout,
    parameter count, memory and time."""
    layout, model, options, rest = FLAVOUR_LAYOUTS[name]
    original = tmp_path / f"{name}.par"
    original.write_text(layout + "\n" + TITAN_HEAD.format(model=model, options=options) + rest)
    job = tmp_path / "job"
    assert run_cli("compile", str(original), "-o", str(job)).exit_code == 0
    assert "--module parc_torchtitan" in (job / "torchtitan.args").read_text()
    imported = tmp_path / "imported.par"
    result = run_cli("import", str(job / "torchtitan.args"), "-o", str(imported))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # nothing in the module or the options went unread
    explained = [json.loads(run_cli("explain", str(p), "--format", "json").stdout) for p in (original, imported)]
    facts = [{k: e[k] for k in EXPLAIN_FACTS} for e in explained]
    assert facts[0]["model"] == (model.split()[0] if model[0] != "{" else "custom") and facts[0]["parameters"] > 0
    assert facts[1] == facts[0]


@pytest.mark.parametrize("name", sorted(TITAN_CUSTOM_LAYOUTS))
def test_generated_flavour_gives_the_same_settings(name):
    """The in-process import (the module handed over by `read`) gives every model field."""
    plan = titan_compiled(name)
    files = job_files(plan)
    source = SourceFile("job/torchtitan.args", files["torchtitan.args"])
    imported = import_source(source, Defaults(gpu=plan.cluster.gpu.name, gpus_per_node=plan.cluster.gpus_per_node),
                             read=lambda path: files.get(path.removeprefix("job/")))
    assert imported.text is not None and not imported.diagnostics, [d.message for d in imported.diagnostics]
    again = compile_text(imported.text, path="imported.par").plan
    assert again.model.model_dump(exclude={"spans"}) == plan.model.model_dump(exclude={"spans"})
    assert _normalise(again, settings(again)) == _normalise(plan, settings(plan))


def _flavour_job(tmp_path, edit=None):
    """The custom-dense job written to tmp_path/job, its module optionally edited."""
    files = job_files(titan_compiled("custom-dense"))
    job = tmp_path / "job"
    job.mkdir(parents=True)
    for file in ("torchtitan.args", "parc_torchtitan.py"):
        (job / file).write_text(files[file])
    if edit:
        module = job / "parc_torchtitan.py"
        module.write_text(edit(module.read_text()))
    return job


def test_missing_flavour_module_is_an_error_at_the_module_option(tmp_path):
    job = _flavour_job(tmp_path)
    (job / "parc_torchtitan.py").unlink()
    result = run_cli("import", str(job / "torchtitan.args"))
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{job / 'torchtitan.args'}:3:1: error[E0702]" in result.stderr
    assert "parc_torchtitan.py" in result.stderr and "help:" in result.stderr


@pytest.mark.parametrize(("edit", "line", "words"), [
    (lambda t: t.replace("LAYERS = 10\n", "LAYERS = layers()\n"), 23, "`LAYERS` is not a whole number"),
    (lambda t: t.replace("MOE_LAYERS = ()\nEXPERTS = 0\nTOP_K = 0\nEXPERT_FFN = 0",
                         "MOE_LAYERS = (0, 2)\nEXPERTS = 8\nTOP_K = 2\nEXPERT_FFN = 512"), 34, "MoE layers (0, 2)"),
    (lambda t: t.replace("def parc_job():", "def other_job():"), 4, "no function `parc_job`"),
    (lambda t: t.replace("HEADS = 16\n", "HEADS = 16 +\n"), 25, "not Python"),
])
def test_unreadable_flavour_is_an_error_at_its_line(tmp_path, edit, line, words):
    job = _flavour_job(tmp_path, edit)
    where = job / ("torchtitan.args" if "parc_job" in words else "parc_torchtitan.py")
    result = run_cli("import", str(job / "torchtitan.args"))
    assert result.exit_code == 1 and result.stdout == "", result.stdout
    assert f"{where}:{line}:" in result.stderr and "error[E0702]" in result.stderr and words in result.stderr
    assert "help:" in result.stderr


def test_flavour_norm_epsilon_and_rope_theta_are_imported(tmp_path):
    """The module's constants become the model's settings where they differ from its preset's
    (llama3-8b: theta 500,000, epsilon 1e-5)."""
    unchanged = run_cli("import", str(_flavour_job(tmp_path / "a") / "torchtitan.args"))
    assert "rope-theta" not in unchanged.stdout and "norm-eps" not in unchanged.stdout, unchanged.stdout
    job = _flavour_job(tmp_path / "b", lambda t: t.replace("NORM_EPS = 1e-05", "NORM_EPS = 1e-06")
                       .replace("ROPE_THETA = 500000.0", "ROPE_THETA = 250000.0"))
    result = run_cli("import", str(job / "torchtitan.args"))
    assert result.exit_code == 0 and "layers 10" in result.stdout
    assert "rope-theta 250000" in result.stdout and "norm-eps 1e-06" in result.stdout, result.stdout
    assert result.stderr == ""


def test_flavour_setting_that_is_not_a_number_is_reported(tmp_path):
    job = _flavour_job(tmp_path, lambda t: t.replace("NORM_EPS = 1e-05", "NORM_EPS = -1"))
    result = run_cli("import", str(job / "torchtitan.args"))
    assert result.exit_code == 0 and "layers 10" in result.stdout and "norm-eps" not in result.stdout
    assert f"{job / 'parc_torchtitan.py'}:32:" in result.stderr and "warning[W0701]" in result.stderr
    assert "NORM_EPS" in result.stderr


def test_importing_reads_the_module_without_running_it(tmp_path):
    """The module is parsed, never executed: a statement that would fail when run changes nothing."""
    job = _flavour_job(tmp_path, lambda t: "raise SystemExit('executed')\n" + t)
    result = run_cli("import", str(job / "torchtitan.args"))
    assert result.exit_code == 0 and "layers 10" in result.stdout
    # and the module's imports (torch, torchtitan) are never loaded: `parc` does not import torch
    probe = ("import sys\nfrom parc.cli import main\ntry:\n    main(['import', sys.argv[1]])\n"
             "except SystemExit as exc:\n    assert not exc.code, exc.code\nprint(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('torch', 'torchtitan')))")
    done = subprocess.run([sys.executable, "-c", probe, str(job / "torchtitan.args")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


COMPILED_TITAN = ("dp 8 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
                  "train { seq 4096, global-batch 16, micro-batch 2, recompute selective }\n"
                  "dp { sharding zero3 }\ntarget torchtitan { compile on }\n")
COMPONENT_FORMS = {
    # what follows `--compile.enable` on the command line -> the target line imported (None: refused)
    "": "target torchtitan { compile on }",  # torchtitan's default: model and loss
    "--compile.components model,loss": "target torchtitan { compile on }",
    "--compile.components=model,loss": "target torchtitan { compile on }",
    '--compile.components "model,loss"': "target torchtitan { compile on }",
    "--compile.components loss,model": "target torchtitan { compile on }",
    "--compile.components model": "target torchtitan { compile on, compile-loss off }",
    "--compile.components=model": "target torchtitan { compile on, compile-loss off }",
    "--compile.components loss": "target torchtitan\n",  # the model eager (W0703)
    "--compile.components model loss": None,  # tyro refuses a second word (E0702)
}


@pytest.mark.parametrize("form", sorted(COMPONENT_FORMS))
def test_torchtitans_compile_components_in_every_form_it_accepts(form):
    """torchtitan reads `--compile.components` as one word split on commas (tyro's
    `list_str_rule`, nargs=1); "model" absent leaves the blocks eager (W0703); a second word is
    a command line torchtitan refuses (E0702), not the first word kept."""
    plan = compile_text(COMPILED_TITAN, path="t.par").plan
    assert plan is not None
    args = job_files(plan)["torchtitan.args"]
    assert "--compile.enable\n" in args and "--compile.components" not in args
    text = args.replace("--compile.enable\n", f"--compile.enable\n{form}\n" if form else "--compile.enable\n")
    imported = import_source(SourceFile("torchtitan.args", text), Defaults(gpu="h100-sxm", gpus_per_node=8, dp=1))
    codes = [d.code for d in imported.diagnostics]
    expected = COMPONENT_FORMS[form]
    if expected is None:
        assert imported.text is None and codes == ["E0702"]
        (d,) = imported.diagnostics
        assert "model,loss" in d.help and text[d.span.start:d.span.end] == "loss"
        return
    assert codes == (["W0703"] if form.endswith(" loss") else []), codes  # "model" absent
    assert expected in imported.text, imported.text
    if codes:
        (d,) = imported.diagnostics
        assert text[d.span.start:d.span.end] == "--compile.components"


def test_an_unknown_compile_component_is_reported_not_dropped():
    plan = compile_text(COMPILED_TITAN, path="t.par").plan
    text = job_files(plan)["torchtitan.args"].replace("--compile.enable\n",
                                                      "--compile.enable\n--compile.components model,optimizer\n")
    imported = import_source(SourceFile("torchtitan.args", text), Defaults(gpu="h100-sxm", gpus_per_node=8, dp=1))
    assert [d.code for d in imported.diagnostics] == ["W0701"]
    assert "`optimizer`" in imported.diagnostics[0].message
    assert "target torchtitan { compile on, compile-loss off }" in imported.text
    # no word after the option (tyro: "expected 1 argument"): refused at the option
    empty = import_source(SourceFile("torchtitan.args", text.replace("--compile.components model,optimizer\n",
                                                                     "--compile.components\n")),
                          Defaults(gpu="h100-sxm", gpus_per_node=8, dp=1))
    assert empty.text is None and [d.code for d in empty.diagnostics] == ["E0702"]


MEGATRON_LINE = ("torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                 "--seq-length 4096 --vocab-size 32000 --micro-batch-size 1 {extra}\n")


@pytest.mark.parametrize("extra, option", [
    ("--cpu-offloading-num-layers -3", "--cpu-offloading-num-layers"),  # a sign: never `offload-activations -3`
    ("--cpu-offloading-num-layers", "--cpu-offloading-num-layers"),  # no value: not 1
    ("--tensor-model-parallel-size two", "--tensor-model-parallel-size"),
    ("--global-batch-size 1.5", "--global-batch-size"),
])
def test_megatron_option_that_is_not_a_whole_number_is_an_error_where_it_stands(extra, option):
    text = MEGATRON_LINE.format(extra=extra)
    imported = import_source(SourceFile("train.sh", text))
    assert imported.text is None  # nothing half-imported (a train block silently dropped, say)
    [d] = imported.diagnostics
    assert d.code == "E0702" and option in d.message
    assert text[d.span.start:d.span.end].startswith(option)


@pytest.mark.parametrize("extra, option", [
    ("--position-embedding-type rope --rotary-base 0", "--rotary-base"),
    ("--norm-epsilon tiny", "--norm-epsilon"),
])
def test_megatron_real_option_that_is_not_positive_is_an_error_where_it_stands(extra, option):
    text = MEGATRON_LINE.format(extra=extra)
    imported = import_source(SourceFile("train.sh", text))
    assert imported.text is None
    [d] = imported.diagnostics
    assert d.code == "E0702" and option in d.message and "positive" in d.message and d.help
    assert text[d.span.start:d.span.end].startswith(option)


def test_megatron_rope_base_and_norm_epsilon_are_read():
    """Megatron-LM's own defaults (--rotary-base 10000, --norm-epsilon 1e-5) are the spec's: no
    setting; other values become `rope-theta` and `norm-eps`, which the plan then carries."""
    plain = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra="--position-embedding-type rope")))
    assert "rope-theta" not in plain.text and "norm-eps" not in plain.text
    text = MEGATRON_LINE.format(extra="--position-embedding-type rope --rotary-base 500000 --norm-epsilon 1e-6")
    imported = import_source(SourceFile("train.sh", text))
    assert not imported.diagnostics and "rope-theta 500000" in imported.text and "norm-eps 1e-06" in imported.text
    model = compile_text(imported.text, path="x.par", checks=False).plan.model
    assert (model.rope_theta, model.norm_eps) == (500000.0, 1e-6)


def test_megatron_heads_of_zero_is_an_error_not_a_division():
    imported = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra="").replace(
        "--num-attention-heads 32", "--num-attention-heads 0")))
    assert [d.code for d in imported.diagnostics] == ["E0702"] and "1 or more" in imported.diagnostics[0].message


def test_megatron_offloading_of_zero_layers_is_off():
    imported = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra="--cpu-offloading-num-layers 0")))
    assert imported.text is not None and "offload" not in imported.text
    imported = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra="--cpu-offloading-num-layers 4")))
    assert "offload-activations 4" in imported.text


@pytest.mark.parametrize("value, reported", [("0", False), ("0.0", False), ("0.1", True)])
def test_megatron_dropout_of_zero_is_parcs_own(value, reported):
    """parc's models have no dropout (its Megatron launcher passes 0 for both): 0 imports silently,
    any other rate is reported where it stands, as a setting parc does not have."""
    extra = f"--hidden-dropout {value} --attention-dropout {value}"
    text = MEGATRON_LINE.format(extra=extra)
    imported = import_source(SourceFile("train.sh", text))
    assert imported.text is not None
    named = [d for d in imported.diagnostics if "dropout" in d.message]
    assert len(named) == (2 if reported else 0)
    for d in named:
        assert d.code == "W0701" and text[d.span.start:d.span.end].startswith("--")


def test_megatron_optimizer_and_clipping_are_read_as_megatron_runs_them():
    """Megatron-LM clips at 1.0 unless told (`--clip-grad 0` turns it off); its `adam` is AdamW,
    parc's `adamw` at weight decay 0.1 and `adam` at 0; its default decay, 0.01, parc has not: the
    spec says adamw and the option is reported. A learning rate other than parc's is reported too."""
    def imported(extra):
        result = import_source(SourceFile("train.sh", MEGATRON_LINE.format(extra=extra)))
        reported = {d.message.split("`")[1] for d in result.diagnostics if d.code == "W0701"}
        return result.text, reported

    text, reported = imported("")
    assert "clip-grad-norm 1.0" in text and "optimizer adamw" in text and "--weight-decay" not in reported
    text, reported = imported("--clip-grad 0 --weight-decay 0 --lr 3e-4")
    assert "clip-grad-norm" not in text and "optimizer adam," in text and not {"--weight-decay", "--lr"} & reported
    text, reported = imported("--clip-grad 2.5 --weight-decay 0.01 --lr 1e-4")
    assert "clip-grad-norm 2.5" in text and "optimizer adamw" in text and {"--weight-decay", "--lr"} <= reported
