"""`target torchtitan`: the generated command line against torchtitan 0.3's own parser, parallel
dims, device mesh and pipeline split (installed by .ci/install-targets; skipped without it).

torchtitan's config registry imports its GPU kernel modules, which import triton at import time;
the CPU wheel of torch has no triton, so those three kernel modules (never run here) are given
inert stand-ins before torchtitan is imported. Everything compared is torchtitan's own code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from unittest import mock

import pytest
from parc.backends import job_diagnostics, job_files
from parc.backends import torchtitan as backend
from parc.pipeline import compile_path, compile_text
from parc.stages import pipeline_chunks

from .conftest import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torchtitan") is None,
                                reason="torchtitan not installed (.ci/install-targets)")

KERNEL_MODULES = ("torchtitan.distributed.minimal_async_ep.kernels", "torchtitan.overrides.fused_mla",
                  "torchtitan.overrides.fused_swiglu")


@pytest.fixture(scope="module")
def titan():
    if importlib.util.find_spec("triton") is None:
        for name in KERNEL_MODULES:
            sys.modules.setdefault(name, mock.MagicMock())
    import torchtitan.models.llama3.config_registry  # noqa: F401 - registers the llama3 configs
    from torchtitan.config import ConfigManager
    from torchtitan.distributed import ParallelDims, pipeline_parallel

    return ConfigManager, ParallelDims, pipeline_parallel


HEAD = "model {model}\nhardware {{ gpu h100-sxm }}\ntarget torchtitan{options}\n"
LAYOUTS = {
    "fsdp-tp-pp": ("tp 8 x dp 4 x pp 4 on nodes(8 gpus, nvlink)", "llama3-70b", " { compile on }",
                   "train { seq 8192, global-batch 256, micro-batch 1, recompute full }\n"
                   "dp { sharding zero2 }\npp { schedule interleaved-1f1b, virtual-stages 2 }\n"),
    "hsdp-cp": ("tp 2 x cp 2 x dp 8 on nodes(8 gpus, nvlink)", "llama3-8b", "",
                "train { seq 8192, global-batch 64, micro-batch 2, recompute selective }\n"
                "dp { sharding hsdp 2 x 4 }\ncp { flavour all-gather }\n"),
    "fsdp": ("dp 16 on nodes(8 gpus, nvlink)", "llama3-8b", "",
            "train { seq 4096, global-batch 128, micro-batch 2, recompute full }\ndp { sharding zero3 }\n"),
    # tp 8: torchtitan's FSDP2 keeps every layer's gathered copy under a zero-bubble schedule, so
    # tp 4 x pp 4 needs 77.9 GiB a rank since parc counts torchtitan as FSDP2 (targets.memory_runtime)
    "zbv": ("tp 8 x dp 2 x pp 4 on nodes(8 gpus, nvlink)", "llama3-70b", " { compile on, tp-overlap all }",
            "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\n"
            "dp { sharding zero2 }\npp { schedule zbv }\n"),
    "405b": ("tp 8 x dp 64 x pp 16 on nodes(8 gpus, nvlink)", "llama3-405b", " { compile on }",
             "train { seq 8192, global-batch 2048, micro-batch 1, precision fp8, recompute full }\n"
             "dp { sharding zero2 }\npp { schedule 1f1b, split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7] }\n"),
}
CUSTOM_LAYOUTS = {  # not in LAYOUTS: tests/test_import.py round-trips those (parc import reads registered configs)
    # shapes torchtitan registers no config for: parc generates the flavour (parc_torchtitan.py)
    "custom-dense": ("tp 2 x dp 2 x pp 2 on nodes(8 gpus, nvlink)",
                     "llama3-8b { layers 10, hidden 2048, heads 16, kv-heads 4, ffn 5632, vocab 32000, "
                     "tied-embeddings true }", "",
                     "train { seq 4096, global-batch 32, micro-batch 1, recompute selective }\n"
                     "dp { sharding zero3 }\npp { schedule 1f1b }\n"),
    "custom-moe": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 8 over tp x dp",
                   "deepseek-v3-like { layers 5, moe-balance aux-free 0.001 }", "",
                   "train { seq 4096, global-batch 32, micro-batch 1, recompute full }\ndp { sharding zero3 }\n"),
    # empty ends: torchtitan's first/last_stage_less_layers at the layers per stage leave the
    # first stage only tok_embeddings and the last only norm and the output
    "empty-ends-1f1b": ("tp 2 x pp 4 on nodes(8 gpus, nvlink)", "llama3-8b { layers 6 }", "",
                        "train { seq 4096, global-batch 32, micro-batch 1, recompute full }\n"
                        "pp { schedule 1f1b, split [0, 3, 3, 0] }\n"),
    "empty-ends-interleaved": ("tp 2 x pp 4 on nodes(8 gpus, nvlink)", "llama3-8b { layers 6 }", "",
                               "train { seq 4096, global-batch 32, micro-batch 1, recompute full }\n"
                               "pp { schedule interleaved-1f1b, virtual-stages 2, split [0, 1, 1, 1, 1, 1, 1, 0] }\n"),
    "mixtral": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 8 over tp x dp", "mixtral-8x7b { layers 4 }", "",
                "train { seq 4096, global-batch 32, micro-batch 1, recompute full }\ndp { sharding zero3 }\n"),
}
CUSTOM = sorted(CUSTOM_LAYOUTS)
ALL = {**LAYOUTS, **CUSTOM_LAYOUTS}


def compiled(name: str):
    layout, model, options, rest = ALL[name]
    result = compile_text(layout + "\n" + HEAD.format(model=model, options=options) + rest, path=f"{name}.par")
    errors = [d for d in result.diagnostics if d.is_error]
    assert result.plan is not None and not errors, [d.message for d in errors]
    assert not [d for d in job_diagnostics(result.plan) if d.is_error]
    return result.plan


def argv(plan) -> list[str]:
    """The options as train.py hands them to torchtitan."""
    text = job_files(plan)["torchtitan.args"]
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return [word for line in lines for word in line.split(" ", 1)]


SHIPPED = sorted(p for p in (ROOT / "specs").glob("*.par") if "\ntarget torchtitan" in p.read_text())


PARSED = sorted(n for n in ALL if n != "405b")
"""torchtitan's registered llama3_405b config swaps in float8 linears while it is built, which
raises on a machine without an SM89 GPU: its options are checked by the split test only."""


def parse(config_manager, plan, job_dir: Path, monkeypatch):
    """torchtitan's ConfigManager on the generated options, the job's own files importable as
    train.py makes them (its directory first on sys.path): parc_torchtitan.py when generated."""
    files = job_files(plan)
    if f"{backend.MODULE}.py" in files:
        (job_dir / f"{backend.MODULE}.py").write_text(files[f"{backend.MODULE}.py"])
        monkeypatch.syspath_prepend(str(job_dir))
        monkeypatch.delitem(sys.modules, backend.MODULE, raising=False)
    return config_manager().parse_args(argv(plan))


@pytest.mark.parametrize("name", PARSED)
def test_torchtitans_config_manager_parses_the_generated_options(titan, name, tmp_path, monkeypatch):
    config_manager, parallel_dims, _ = titan
    plan = compiled(name)
    config = parse(config_manager, plan, tmp_path, monkeypatch)
    p, t, lay = config.parallelism, config.training, plan.layout
    assert (p.tensor_parallel_degree, p.pipeline_parallel_degree, p.context_parallel_degree,
            p.expert_parallel_degree) == (lay.tp.degree, lay.pp.degree or 1, lay.cp.degree or 1, lay.ep.degree or 1)
    assert p.data_parallel_replicate_degree * p.data_parallel_shard_degree == lay.dp.degree
    assert t.seq_len == plan.training.seq_len and t.global_batch_size == plan.training.global_batch
    assert config.compile.enable == plan.target.compile
    ac = type(config.activation_checkpoint).__qualname__.split(".")[0]
    assert ac == {"none": "NoAC", "selective": "SelectiveAC", "full": "FullAC"}[plan.training.recompute], ac
    # the micro-batches per step torchtitan runs are parc's
    ranks = p.data_parallel_replicate_degree * p.data_parallel_shard_degree
    if (lay.pp.degree or 1) > 1:
        assert t.local_batch_size // p.pipeline_parallel_microbatch_size == plan.training.grad_accum
    else:
        assert t.global_batch_size // (t.local_batch_size * ranks) == plan.training.grad_accum
        assert t.local_batch_size == plan.training.micro_batch
    dims = parallel_dims.from_config(p, plan.cluster.world_size)
    assert dims.world_size == plan.cluster.world_size


@pytest.mark.parametrize("name", sorted(ALL))
def test_torchtitans_pipeline_split_is_parcs(titan, name):
    _, _, pipeline_parallel = titan
    plan = compiled(name)
    pp = plan.layout.pp.degree or 1
    if pp == 1:
        return
    stages = pp * (plan.layout.pp.virtual_stages or 1)
    options = dict(zip(argv(plan)[::1], argv(plan)[1:] + [""], strict=True))
    a = int(options["--parallelism.pipeline-parallel-first-stage-less-layers"])
    b = int(options["--parallelism.pipeline-parallel-last-stage-less-layers"])
    parts = pipeline_parallel._generate_llm_fqn_per_model_part(stages, plan.model.layers, a, b)
    theirs = [sum(1 for m in part if m.startswith("layers.")) for part in parts]
    ours = [c.layers for c in sorted(pipeline_chunks(plan), key=lambda c: c.index)]
    assert theirs == ours


@pytest.mark.parametrize("name", ["empty-ends-1f1b", "empty-ends-interleaved"])
def test_torchtitan_builds_the_empty_ends_as_stages_of_their_own(titan, name):
    """torchtitan's own module split from the generated options: the first stage holds only the
    embedding, the last only the final norm and the output layer."""
    _, _, pipeline_parallel = titan
    plan = compiled(name)
    options = dict(zip(argv(plan), argv(plan)[1:] + [""], strict=True))
    stages = plan.layout.pp.degree * (plan.layout.pp.virtual_stages or 1)
    parts = pipeline_parallel._generate_llm_fqn_per_model_part(
        stages, plan.model.layers, int(options["--parallelism.pipeline-parallel-first-stage-less-layers"]),
        int(options["--parallelism.pipeline-parallel-last-stage-less-layers"]))
    assert parts[0] == ["tok_embeddings"] and parts[-1] == ["norm", "lm_head"]
    assert all(m.startswith("layers.") for part in parts[1:-1] for m in part)


def mesh_groups(parallel_dims, degrees: dict, rank: int) -> dict[str, list[int]]:
    """torchtitan's groups of `rank`, from its own mesh (a fake process group: no devices)."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=degrees["world_size"])
    try:
        dims = parallel_dims(**degrees)
        dims.build_mesh()
        out = {}
        for ours, theirs in (("tp", "tp"), ("cp", "cp"), ("pp", "pp"), ("ep", "ep"), ("dp", "batch")):
            if (degrees[ours] if ours != "dp" else degrees["dp_replicate"] * degrees["dp_shard"]) > 1:
                out[ours] = dims.get_mesh(theirs).mesh.flatten().tolist()
        return out
    finally:
        dist.destroy_process_group()


def check_mesh(parallel_dims, plan) -> int:
    degrees = backend.degrees(plan)
    world = degrees["world_size"]
    ranks = range(world) if world <= 64 else sorted({0, 1, 7, 9, world // 2 + 3, world - 9, world - 1})
    compared = 0
    for rank in ranks:
        for axis, theirs in mesh_groups(parallel_dims, degrees, rank).items():
            assert sorted(theirs) == sorted(plan.layout.group(axis, rank)), (axis, rank)
            compared += 1
    return compared


@pytest.mark.parametrize("name", PARSED)
def test_torchtitans_mesh_groups_are_parcs_rank_order(titan, name):
    _, parallel_dims, _ = titan
    assert check_mesh(parallel_dims, compiled(name)) > 0


def test_shipped_torchtitan_specs(titan, tmp_path, monkeypatch):
    """Every shipped spec that targets torchtitan parses, is accepted, and has parc's groups."""
    config_manager, parallel_dims, _ = titan
    assert SHIPPED
    for path in SHIPPED:
        result = compile_path(str(path.relative_to(ROOT)))
        assert result.ok, path
        plan = result.plan
        config = parse(config_manager, plan, tmp_path, monkeypatch)
        parallel_dims.from_config(config.parallelism, plan.cluster.world_size)
        assert check_mesh(parallel_dims, plan) > 0


@pytest.mark.parametrize("name", CUSTOM)
def test_a_generated_flavour_is_the_plans_model(titan, name, tmp_path, monkeypatch):
    """A shape torchtitan does not register: the command line names the generated module, which
    registers a config torchtitan's ConfigManager loads, and torchtitan's own model built from it
    on the meta device has exactly parc's parameter count (resolve.count_parameters: an
    independent closed form) and parc's layer kinds, heads and vocabulary."""
    import torch

    config_manager, _, _ = titan
    plan = compiled(name)
    assert backend._registered(plan) is None
    assert argv(plan)[:4] == ["--module", backend.MODULE, "--config", "parc_job"]
    config = parse(config_manager, plan, tmp_path, monkeypatch)
    assert sys.modules[backend.MODULE].__file__ == str(tmp_path / f"{backend.MODULE}.py")
    with torch.device("meta"):
        model = config.model_spec.model.build()
    m = plan.model
    assert sum(p.numel() for p in model.parameters()) == m.parameters
    blocks = list(model.layers.values())
    assert len(blocks) == m.layers
    moe = [i for i, b in enumerate(blocks) if getattr(b, "moe", None) is not None]
    assert moe == list(m.moe_layers)
    assert (blocks[0].attention.n_heads, blocks[0].attention.n_kv_heads) == (m.heads, m.kv_heads)
    assert model.tok_embeddings.weight.shape == (m.vocab, m.hidden)
    assert (model.lm_head.weight is model.tok_embeddings.weight) == m.tied_embeddings
    if moe:
        layer = blocks[moe[0]].moe
        assert (layer.router.top_k, layer.load_balance_coeff) == (
            m.top_k, m.balance_rate if m.moe_balance == "aux-free" else None)
        assert (layer.shared_experts is not None) == (m.shared_experts > 0)
    # the loss's vocabulary is the model's
    assert config.loss.loss_fn.global_vocab_size == m.vocab


@pytest.mark.slow
def test_a_generated_flavour_runs_a_forward_pass(titan, tmp_path, monkeypatch):
    """The generated module's model on real tensors: torchtitan builds it on the CPU, initialises
    it and runs a forward pass with its own (flex) attention masks over a tiny MoE shape with a
    shared expert (about 40 s: flex attention compiles on the CPU; its backward needs a GPU).
    At initialisation the logits are near zero, so the loss is near ln(vocab)."""
    import math

    import torch

    config_manager, _, _ = titan
    text = ("dp 2 on nodes(2 gpus, nvlink)\nmodel tiny-moe { shared-experts 1 }\nhardware { gpu h100-sxm }\n"
            "target torchtitan\ntrain { seq 64, global-batch 4, micro-batch 1, recompute none }\n"
            "dp { sharding zero3 }\n")
    plan = compile_text(text, path="tiny.par").plan
    assert not job_diagnostics(plan) and backend._registered(plan) is None
    config = parse(config_manager, plan, tmp_path, monkeypatch)
    torch.manual_seed(0)
    model = config.model_spec.model.build()
    model.init_states()
    assert sum(p.numel() for p in model.parameters()) == plan.model.parameters
    tokens = torch.randint(0, plan.model.vocab, (2, plan.training.seq_len))
    positions = torch.arange(plan.training.seq_len).repeat(2, 1)
    with torch.no_grad():
        logits = model(tokens, positions, model.get_attention_masks(positions))
    assert logits.shape == (2, plan.training.seq_len, plan.model.vocab)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens.roll(-1, 1).flatten())
    assert abs(loss.item() - math.log(plan.model.vocab)) < 0.25, loss.item()


def test_what_torchtitan_cannot_express_is_refused():
    text = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b { layers 16, norm layernorm }\n"
            "hardware { gpu h100-sxm }\ntarget torchtitan\n"
            "train { seq 4096, global-batch 32, micro-batch 1, recompute full 2 }\ndp { sharding zero3 }\n")
    plan = compile_text(text, path="x.par").plan
    assert sorted(d.code for d in job_diagnostics(plan)) == ["E0610", "E0612"]
    # an unregistered shape is expressed (a generated flavour); fp8 only with the registered 405b
    custom = text.replace(", norm layernorm", "").replace("recompute full 2", "recompute full")
    assert not job_diagnostics(compile_text(custom, path="x.par").plan)
    fp8 = custom.replace("recompute full", "precision fp8, recompute full")
    assert [d.code for d in job_diagnostics(compile_text(fp8, path="x.par").plan)] == ["E0611"]
    for model in ("gpt3-175b", "megatron-1t", "mixtral-8x7b { moe-balance aux-loss 0.01 }",
                  "mixtral-8x7b { capacity-factor 1.25 }"):
        plan = compile_text(custom.replace("llama3-8b { layers 16 }", model), path="x.par").plan
        assert plan is not None, model
        assert "E0610" in [d.code for d in job_diagnostics(plan)], model


def test_the_entry_point_hands_torchtitan_the_generated_options(tmp_path: Path):
    """train.py as generated, with torchtitan.train replaced by a recorder of sys.argv."""
    plan = compiled("fsdp")
    files = job_files(plan)
    for name in ("train.py", "torchtitan.args"):
        (tmp_path / name).write_text(files[name])
    recorder = tmp_path / "record" / "torchtitan"
    recorder.mkdir(parents=True)
    (recorder / "__init__.py").write_text("")
    (recorder / "train.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    import json
    import subprocess

    out = subprocess.run([sys.executable, str(tmp_path / "train.py"), "--training.steps", "3"],
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(tmp_path / "record")})
    # the launcher's options go before the activation-checkpoint subcommand, which tyro reads last
    # (after it they would be the subcommand's, and torchtitan refuses them)
    *options, subcommand = argv(plan)
    assert subcommand.startswith("activation-checkpoint:")
    assert json.loads(out.stdout) == options + ["--training.steps", "3", subcommand]
    from torchtitan.config import ConfigManager

    config = ConfigManager().parse_args(json.loads(out.stdout))
    assert config.training.steps == 3


def test_the_optimizer_and_the_sharding_are_parcs(titan, tmp_path, monkeypatch):
    """torchtitan's ConfigManager reads back the optimizer parc's own job runs (train.py.jinja's
    `make_optimizer`): AdamW at weight decay 0.1 (Adam at 0), a constant 3e-4 with no warm-up (the
    registered configs warm up for 200-600 steps and decay to 0), torchtitan's betas and eps, the
    spec's clipping (`inf` when none: torchtitan clips at 1.0 unless told), no profiler; and zero3
    reshards as torchtitan's default does (after the forward, but not under pipelining), which
    parc's memory and time models hold."""
    config_manager, _, _ = titan
    config = parse(config_manager, compiled("fsdp-tp-pp"), tmp_path, monkeypatch)
    (group,) = config.optimizer.param_groups
    assert group.optimizer_name == "AdamW"
    assert {k: group.optimizer_kwargs[k] for k in ("lr", "weight_decay")} == {"lr": 3e-4, "weight_decay": 0.1}
    assert (config.lr_scheduler.warmup_steps, config.lr_scheduler.min_lr_factor) == (0, 1.0)
    assert config.training.max_norm == float("inf") and not config.profiler.enable_profiling
    assert config.parallelism.fsdp_reshard_after_forward == "never"  # zero2
    for name in ("fsdp", "hsdp-cp"):  # zero3, hsdp
        config = parse(config_manager, compiled(name), tmp_path, monkeypatch)
        assert config.parallelism.fsdp_reshard_after_forward == "default", name
    text = ("dp 16 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\ntarget torchtitan\n"
            "train { seq 4096, global-batch 64, micro-batch 1, optimizer adam, clip-grad-norm 0.5 }\n"
            "dp { sharding zero2 }\n")
    config = parse(config_manager, compile_text(text, path="x.par").plan, tmp_path, monkeypatch)
    (group,) = config.optimizer.param_groups
    assert (group.optimizer_name, group.optimizer_kwargs["weight_decay"]) == ("Adam", 0)
    assert config.training.max_norm == 0.5


@pytest.mark.parametrize("extra, code", [
    ("train { seq 4096, global-batch 64, micro-batch 1, optimizer sgd }", "E0615"),
    ("target torchtitan { tp-overlap all }", "E0616"),
    ("target torchtitan { tp-overlap backward }", "E0617"),
    ("target torchtitan { grad-reduce bf16 }", "E0617"),
    ("target torchtitan { float8-all-gather on }", "E0618"),
])
def test_what_torchtitan_would_run_otherwise_is_refused(extra, code):
    """SGD (torchtitan builds Adam, AdamW and Muon), async TP without compile (torchtitan's
    CompileConfig refuses it), a backward-only tp overlap and a bf16 gradient reduction (torchtitan
    has neither: the prediction would change and the job would not), and a float8 all-gather
    (0.3's rowwise float8 gathers bf16)."""
    text = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
            "target torchtitan\ntrain { seq 4096, global-batch 64, micro-batch 1 }\n")
    if extra.startswith("train"):
        text = text.replace("train { seq 4096, global-batch 64, micro-batch 1 }", extra)
    else:
        text = text.replace("target torchtitan", extra)
    plan = compile_text(text, path="x.par").plan
    assert [d.code for d in job_diagnostics(plan)] == [code]
    assert job_diagnostics(plan)[0].span is not None
    if code == "E0616":  # with compile on, async TP is torch's own pass, and accepted
        on = compile_text(text.replace("tp-overlap all", "tp-overlap all, compile on"), path="x.par").plan
        assert not job_diagnostics(on)

