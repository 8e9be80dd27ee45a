"""`target megatron`: the generated pretrain_gpt.py options against Megatron-LM core_v0.16.0's
option list (tests/data, with its source), megatron-core's own TransformerConfig and its rank
generator (megatron-core 0.16 from .ci/install-targets; those tests skip without it).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from parc.backends import job_diagnostics, job_files
from parc.backends import megatron as backend
from parc.pipeline import compile_path, compile_text

from .conftest import ROOT, rank_steps_of

FLAGS = {line for line in (ROOT / "tests" / "data" / "megatron_lm_core_v0.16.0_flags.txt").read_text().splitlines()
         if line.startswith("--")}
HAVE_MCORE = importlib.util.find_spec("megatron") is not None and importlib.util.find_spec("megatron.core") is not None
"""(find_spec of a submodule raises when its parent package is missing.)"""

LAYOUTS = {
    "dense-vpp-zero1": ("tp 8 x dp 4 x pp 4 on nodes(8 gpus, nvlink)", "llama3-70b", "",
                        "train { seq 8192, global-batch 256, micro-batch 1, recompute selective }\n"
                        "dp { sharding zero1, bucket 20000000 }\npp { schedule interleaved-1f1b, virtual-stages 5 }\n"),
    "cp-fsdp-fp8-overlap": ("tp 4 x cp 2 x dp 4 on nodes(8 gpus, nvlink)", "llama3-8b",
                            " { tp-overlap all, grad-reduce bf16 }",
                            "train { seq 16384, global-batch 64, micro-batch 1, precision fp8, recompute full }\n"
                            "dp { sharding zero3 }\ncp { flavour all-to-all }\n"),
    "uneven-1f1b": ("tp 8 x dp 2 x pp 16 on nodes(8 gpus, nvlink)", "llama3-405b", "",
                    "train { seq 8192, global-batch 256, micro-batch 1, recompute full 2 }\ndp { sharding zero1 }\n"
                    "pp { schedule 1f1b, split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7] }\n"),
    "empty-ends-vpp": ("tp 8 x dp 2 x pp 16 on nodes(8 gpus, nvlink)", "llama3-405b", "",
                       "train { seq 8192, global-batch 256, micro-batch 1, recompute full }\ndp { sharding zero1 }\n"
                       "pp { schedule interleaved-1f1b, virtual-stages 8, split ["
                       + ", ".join(["0"] + ["1"] * 126 + ["0"]) + "] }\n"),
    "empty-ends-1f1b": ("tp 2 x dp 1 x pp 4 on nodes(8 gpus, nvlink)", "llama3-8b { layers 3 }", "",
                        "train { seq 4096, global-batch 32, micro-batch 1 }\npp { schedule 1f1b, split [0, 1, 1, 1] }\n"),
    "embedding-counted-vpp": ("tp 2 x dp 1 x pp 4 on nodes(8 gpus, nvlink)", "llama3-8b { layers 31 }", "",
                              "train { seq 4096, global-batch 32, micro-batch 1, recompute full }\n"
                              "pp { schedule interleaved-1f1b, virtual-stages 2, split [3, 4, 4, 4, 4, 4, 4, 4] }\n"),
    "moe-ep-over-dp": ("tp 2 x dp 8 on nodes(8 gpus, nvlink)\nep 8 over dp", "mixtral-8x7b", "",
                       "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\ndp { sharding zero1 }\n"),
    "moe-ep-over-tp": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 8 over tp x dp", "mixtral-8x7b", "",
                       "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\ndp { sharding zero1 }\n"),
    "fp16-2021": ("tp 8 x dp 2 x pp 8 on nodes(8 gpus, nvlink)", "gpt3-175b",
                  " { flash-attention off, tp-overlap none }",
                  "train { seq 2048, global-batch 128, micro-batch 1, precision fp16, recompute full }\n"
                  "tp { sequence-parallel off }\n"),
    "moe-top1-aux-capacity": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp",
                              "mixtral-8x7b { top-k 1, moe-balance aux-loss 0.02, capacity-factor 1.25 }", "",
                              "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\n"
                              "dp { sharding zero1 }\n"),
    "mla-moe-tp2": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp",
                    "{ layers 4, hidden 1024, ffn 2816, heads 16, head-dim 64, vocab 32000, kv-lora-rank 128, "
                    "q-lora-rank 256, rope-head-dim 32, v-head-dim 64, experts 8, top-k 2, expert-ffn 512, "
                    "shared-experts 1, moe-layers from 1, mtp 1 }", "",
                    "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\ndp { sharding zero1 }\n"),
    "mla-moe-modules": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp",
                        "{ layers 4, hidden 1024, ffn 2816, heads 16, head-dim 64, vocab 32000, kv-lora-rank 128, "
                        "q-lora-rank 256, rope-head-dim 32, v-head-dim 64, experts 8, top-k 2, expert-ffn 512, "
                        "shared-experts 1, moe-layers from 1 }", "",
                        "train { seq 4096, global-batch 64, micro-batch 1, "
                        "recompute selective [mla_up_proj, moe_act, layernorm, mlp, shared_experts] }\n"
                        "dp { sharding zero1 }\n"),
    "mla-moe-shared-overlap": ("dp 8 on nodes(8 gpus, nvlink)\nep 8 over dp",
                              "{ layers 4, hidden 1024, ffn 2816, heads 16, head-dim 64, vocab 32000, "
                              "kv-lora-rank 128, q-lora-rank 256, rope-head-dim 32, v-head-dim 64, experts 8, "
                              "top-k 2, expert-ffn 512, shared-experts 1, moe-layers from 1 }", "",
                              "train { seq 4096, global-batch 64, micro-batch 1, recompute selective [mla_up_proj] }\n"
                              "dp { sharding zero1 }\n"),
    "fp8-blockwise-zero1": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)", "llama3-8b", " { fp8-recipe blockwise }",
                            "train { seq 8192, global-batch 64, micro-batch 1, precision fp8 }\n"
                            "dp { sharding zero1 }\n"),
    "fp8-tensorwise-zero1": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)", "llama3-8b", " { fp8-recipe tensorwise }",
                             "train { seq 8192, global-batch 64, micro-batch 1, precision fp8 }\n"
                             "dp { sharding zero1 }\n"),
    "flash-attn-fp8": ("tp 4 x dp 4 x pp 8 on nodes(8 gpus, nvlink)", "gpt3-175b",
                       " { attention-backend flash, tp-overlap all }",
                       "train { seq 2048, global-batch 256, micro-batch 1, precision fp8 }\ndp { sharding zero1 }\n"
                       "pp { schedule interleaved-1f1b, virtual-stages 12 }\n"),
    "offload-fsdp": ("tp 2 x dp 4 on nodes(8 gpus, nvlink)", "llama3-8b", "",
                     "train { seq 8192, global-batch 64, micro-batch 1, offload-activations 16 }\n"
                     "dp { sharding zero3 }\n"),
}


def compiled(name: str, gpu: str = "h100-sxm"):
    layout, model, options, rest = LAYOUTS[name]
    text = f"{layout}\nmodel {model}\nhardware {{ gpu {gpu} }}\ntarget megatron{options}\n{rest}"
    result = compile_text(text, path=f"{name}.par")
    # whether it fits in memory is not what these cases are about (E0401)
    errors = [d for d in result.diagnostics + job_diagnostics(result.plan) if d.is_error and d.code != "E0401"]
    assert result.plan is not None and not errors, [d.message for d in errors]
    return result.plan


def options(plan) -> dict[str, str | None]:
    return {option: value for option, value in backend.arguments(plan)}


SHIPPED = sorted(p for p in (ROOT / "specs").glob("*.par") if "\ntarget megatron" in p.read_text())


def test_the_flag_list_is_megatrons():
    assert len(FLAGS) > 600 and "--tensor-model-parallel-size" in FLAGS


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_option_is_one_of_megatron_lms(name):
    names = [option for option, _ in backend.arguments(compiled(name))]
    assert names and set(names) <= FLAGS, sorted(set(names) - FLAGS)
    assert len(names) == len(set(names))


def test_shipped_megatron_specs_use_megatron_lms_options():
    assert SHIPPED
    for path in SHIPPED:
        result = compile_path(str(path.relative_to(ROOT)))
        assert result.ok, path
        names = [option for option, _ in backend.arguments(result.plan)]
        assert set(names) <= FLAGS


def transformer_config(plan):
    """megatron-core's TransformerConfig from the generated options, as Megatron-LM builds it:
    each option's name with `-` as `_` is the config field (core_transformer_config_from_args),
    and the few renamed ones are translated as there."""
    import torch
    from megatron.core.transformer import TransformerConfig
    from megatron.core.transformer.transformer_config import MLATransformerConfig

    o = options(plan)
    if "--multi-latent-attention" in o:  # core_transformer_config_from_args picks the MLA config class
        TransformerConfig = MLATransformerConfig  # noqa: N806 - the class Megatron-LM builds
    fields = {f: TransformerConfig.__dataclass_fields__[f] for f in TransformerConfig.__dataclass_fields__}
    kwargs = {}
    for option, value in o.items():
        name = option[2:].replace("-", "_")
        if name in fields and value is not None:
            kind = type(fields[name].default) if fields[name].default is not None else int
            if kind is float or (kind is int and "." in value):
                kwargs[name] = float(value)
            else:
                kwargs[name] = value if kind is str else (int(value) if value.lstrip("-").isdigit() else value)
        elif name in fields:
            kwargs[name] = True
    kwargs.pop("recompute_granularity", None)
    # checked on the options instead: Megatron-Core imports Transformer Engine's fused permutation
    # to validate it, which a CPU install does not have
    kwargs.pop("moe_permute_fusion", None)
    if "--recompute-granularity" in o:
        kwargs["recompute_granularity"] = o["--recompute-granularity"]
    if "--recompute-modules" in o:  # nargs='*': the list of its words
        kwargs["recompute_modules"] = o["--recompute-modules"].split()
    for option, field in (("--decoder-first-pipeline-num-layers", "num_layers_in_first_pipeline_stage"),
                          ("--decoder-last-pipeline-num-layers", "num_layers_in_last_pipeline_stage")):
        if option in o:  # renamed in core_transformer_config_from_args
            kwargs[field] = int(o[option])
    if int(o.get("--cpu-offloading-num-layers") or 0) > 0:  # Megatron-LM's validate_args sets it so
        kwargs["cpu_offloading"] = True
    if "--num-experts" in o:
        kwargs["num_moe_experts"] = int(o["--num-experts"])
    if "--disable-bias-linear" in o:  # its parser's dest is add_bias_linear
        kwargs["add_bias_linear"] = False
    if "--multi-latent-attention" in o:
        # `--no-rope-fusion` is store_false into apply_rope_fusion, on unless given (arguments.py);
        # MLA's config refuses the fusion with plain RoPE (set for MLA only: without Transformer
        # Engine, which this CPU install lacks, the fusion is refused whatever the model)
        kwargs["apply_rope_fusion"] = "--no-rope-fusion" not in o
    if "--swiglu" in o:
        kwargs.update(gated_linear_unit=True, activation_func=torch.nn.functional.silu)
    kwargs.pop("fp8", None)
    if "--fp8-format" in o:
        kwargs["fp8"] = o["--fp8-format"]
    if "--fp8-param-gather" in o:  # Megatron-LM's arguments.py: kw_args['fp8_param'] = args.fp8_param_gather
        kwargs["fp8_param"] = True
    if "--num-layers-per-virtual-pipeline-stage" in o:  # Megatron-LM's arguments.py, the layers
        per = int(o["--num-layers-per-virtual-pipeline-stage"])  # counting the embedding and loss when told
        units = plan.model.layers + sum(f"--account-for-{what}-in-pipeline-split" in o for what in ("embedding", "loss"))
        kwargs["virtual_pipeline_model_parallel_size"] = units // (plan.layout.pp.degree * per)
    pp = int(o["--pipeline-model-parallel-size"])
    if pp > 1:
        kwargs["pipeline_dtype"] = torch.bfloat16 if "--bf16" in o else torch.float16
    kwargs["params_dtype"] = torch.bfloat16 if "--bf16" in o else torch.float16
    from megatron.core.transformer.enums import AttnBackend

    kwargs["attention_backend"] = AttnBackend[o["--attention-backend"]]
    for unused in ("num_query_groups",):
        kwargs.setdefault(unused, None)
    return TransformerConfig(**{k: v for k, v in kwargs.items() if k in fields})


@pytest.mark.skipif(not HAVE_MCORE, reason="megatron-core not installed (.ci/install-targets)")
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_megatron_cores_transformer_config_accepts_the_values(name):
    plan = compiled(name)
    c = transformer_config(plan)
    lay, m = plan.layout, plan.model
    assert (c.num_layers, c.hidden_size, c.ffn_hidden_size, c.num_attention_heads) == (m.layers, m.hidden, m.ffn, m.heads)
    assert (c.tensor_model_parallel_size, c.pipeline_model_parallel_size, c.context_parallel_size,
            c.expert_model_parallel_size) == (lay.tp.degree, lay.pp.degree or 1, lay.cp.degree or 1, lay.ep.degree or 1)
    assert c.sequence_parallel == bool(lay.tp.sequence_parallel and lay.tp.degree > 1)
    assert (c.num_query_groups or m.heads) == m.kv_heads
    assert (c.mtp_num_layers or 0) == m.mtp_layers
    if m.mla:  # Megatron-Core's own MLA fields (megatron/core/transformer/transformer_config.py)
        assert c.multi_latent_attention and c.rope_type == "rope" and c.qk_layernorm and not c.apply_rope_fusion
        assert (c.q_lora_rank, c.kv_lora_rank, c.qk_head_dim, c.qk_pos_emb_head_dim, c.v_head_dim) == (
            m.q_lora_rank or None, m.kv_lora_rank, m.head_dim, m.rope_head_dim, m.v_head_dim)
    assert (c.hidden_dropout, c.attention_dropout) == (0, 0)  # parc's models have none; Megatron's default is 0.1
    assert (c.virtual_pipeline_model_parallel_size or 1) == (lay.pp.virtual_stages or 1)
    if plan.training.recompute == "full":
        assert c.recompute_granularity == "full"
        layers = plan.training.recompute_layers
        assert (c.recompute_method, c.recompute_num_layers) == (("uniform", 1) if layers is None else ("block", layers))
    assert (c.cpu_offloading, c.cpu_offloading_num_layers) == (bool(plan.training.offload_layers),
                                                                plan.training.offload_layers)
    if m.is_moe:
        assert (c.num_moe_experts, c.moe_router_topk, c.moe_ffn_hidden_size) == (m.experts, m.top_k, m.expert_ffn)
        assert c.expert_tensor_parallel_size == backend.expert_tp(plan)
        # the dispatcher parc's time model charges (Megatron-Core's default is allgather)
        assert c.moe_token_dispatcher_type == "alltoall" and "--moe-permute-fusion" in options(plan)
        assert c.moe_router_pre_softmax == (m.top_k == 1)
        if m.moe_balance == "aux-loss":
            assert (c.moe_router_load_balancing_type, c.moe_aux_loss_coeff) == ("aux_loss", m.balance_rate)
        else:
            assert c.moe_router_load_balancing_type == "none"
        assert (c.moe_expert_capacity_factor or 0.0) == m.capacity_factor
        # the shared experts beside the dispatch where there is no tensor parallelism, as the time
        # model charges them (`targets.shared_overlap_applies`)
        assert c.moe_shared_expert_overlap == (m.shared_experts > 0 and lay.tp.degree == 1
                                               and "shared_experts" not in plan.training.recompute_modules)
    if plan.training.precision == "fp8" and plan.target.fp8_recipe in (None, "delayed"):
        # NVIDIA's delayed-scaling preset (Megatron's default keeps one amax)
        assert (c.fp8_recipe, c.fp8_amax_history_len, c.fp8_amax_compute_algo) == ("delayed", 1024, "max")
    elif plan.training.precision == "fp8":
        assert c.fp8_recipe == plan.target.fp8_recipe
    # the attention parc times: `attention-backend`, else unfused under `flash-attention off`, else auto
    assert c.attention_backend.name == (plan.target.attention_backend
                                        or ("auto" if plan.target.flash_attention else "unfused"))
    # fp8 weights held as fp8 tensors with the distributed optimizer, as NVIDIA's recipes run them
    assert c.fp8_param == (plan.training.precision == "fp8" and lay.dp.sharding == "zero1")
    if lay.dp.bucket is not None:  # the bucket goes to megatron-core's DDP config (parameters per bucket)
        from megatron.core.distributed import DistributedDataParallelConfig

        o = options(plan)
        ddp = DistributedDataParallelConfig(use_distributed_optimizer="--use-distributed-optimizer" in o,
                                            bucket_size=int(o["--ddp-bucket-size"]))
        assert (ddp.use_distributed_optimizer, ddp.bucket_size) == (True, lay.dp.bucket)


@pytest.mark.skipif(not HAVE_MCORE, reason="megatron-core not installed (.ci/install-targets)")
@pytest.mark.parametrize("name", sorted(LAYOUTS) + [p.stem for p in SHIPPED])
def test_megatron_cores_rank_groups_are_parcs(name):
    """megatron-core's RankGenerator (order tp-cp-ep-dp-pp, as initialize_model_parallel builds its
    groups) gives every rank the same tp, cp, dp, pp and expert groups as parc's rank order."""
    from megatron.core.parallel_state import RankGenerator

    plan = compiled(name) if name in LAYOUTS else compile_path(f"specs/{name}.par").plan
    lay = plan.layout
    tp, pp, cp, dp, ep = (lay.tp.degree or 1, lay.pp.degree or 1, lay.cp.degree or 1, lay.dp.degree or 1,
                          lay.ep.degree or 1)
    dense = RankGenerator(tp=tp, ep=1, dp=dp, pp=pp, cp=cp, order="tp-cp-ep-dp-pp")
    compared = 0
    for axis, token in (("tp", "tp"), ("cp", "cp"), ("dp", "dp"), ("pp", "pp")):
        for group in dense.get_ranks(token):
            assert sorted(plan.layout.group(axis, group[0])) == sorted(group), (axis, group)
            compared += 1
    if ep > 1:
        etp = backend.expert_tp(plan)
        experts = RankGenerator(tp=etp, ep=ep, dp=tp * cp * dp // (etp * ep), pp=pp, cp=1, order="tp-cp-ep-dp-pp")
        for group in experts.get_ranks("ep"):
            assert sorted(plan.layout.group("ep", group[0])) == sorted(group), ("ep", group)
            compared += 1
    assert compared > 0


@pytest.mark.skipif(not HAVE_MCORE, reason="megatron-core not installed (.ci/install-targets)")
@pytest.mark.parametrize("name", ["empty-ends-vpp", "empty-ends-1f1b", "embedding-counted-vpp", "uneven-1f1b"])
def test_megatron_cores_layers_per_chunk_are_the_splits(name):
    """megatron-core's own get_num_layers_to_build, for every pipeline rank and virtual stage,
    from the TransformerConfig of the generated options, against the spec's written split
    (chunk c = vp_stage x pp + pp_rank in model order, as Megatron-Core interleaves)."""
    from megatron.core.transformer.transformer_block import get_num_layers_to_build

    plan = compiled(name)
    c = transformer_config(plan)
    pp, v = plan.layout.pp.degree, plan.layout.pp.virtual_stages or 1
    built = [get_num_layers_to_build(c, vp_stage=(chunk // pp) if v > 1 else None, pp_rank=chunk % pp)
             for chunk in range(pp * v)]
    assert tuple(built) == plan.layout.pp.split


def test_empty_ends_are_megatron_cores_accounting():
    o = options(compiled("empty-ends-vpp"))
    assert "--account-for-embedding-in-pipeline-split" in o and "--account-for-loss-in-pipeline-split" in o
    assert o["--num-layers-per-virtual-pipeline-stage"] == "1"  # (126 + 2) / (16 x 8)
    assert "--decoder-first-pipeline-num-layers" not in o
    o = options(compiled("empty-ends-1f1b"))
    assert "--account-for-embedding-in-pipeline-split" in o and "--account-for-loss-in-pipeline-split" not in o
    o = options(compiled("embedding-counted-vpp"))
    assert "--account-for-embedding-in-pipeline-split" in o and "--account-for-loss-in-pipeline-split" not in o
    o = options(compiled("uneven-1f1b"))  # lighter ends without virtual stages: as before
    assert o["--decoder-first-pipeline-num-layers"] == "7" and not any("account" in k for k in o)


@pytest.mark.parametrize("split", ["[0, 8, 8, 16]", "[0, 16, 16, 0]", "[1, 15, 16, 0]"])
def test_empty_ends_megatron_cannot_count_are_refused(split):
    text = ("tp 2 x dp 1 x pp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
            f"target megatron\ntrain {{ seq 4096, global-batch 32, micro-batch 1, recompute full }}\n"
            f"pp {{ schedule 1f1b, split {split} }}\n")
    plan = compile_text(text, path="x.par").plan
    assert [d.code for d in job_diagnostics(plan)] == ["E0620"]


def test_what_megatron_cannot_express_is_refused():
    text = ("tp 2 x dp 2 x pp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
            "target megatron\ntrain { seq 4096, global-batch 32, micro-batch 1, recompute full }\n"
            "pp { schedule 1f1b, split [7, 9, 7, 9] }\ndp { sharding zero1 }\n")
    plan = compile_text(text, path="x.par").plan
    assert [d.code for d in job_diagnostics(plan)] == ["E0620"]


def offload_with_pipeline():
    return ("tp 2 x dp 2 x pp 2 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
            "target megatron\ntrain { seq 4096, global-batch 32, micro-batch 1, offload-activations 8 }\n")


def test_offloading_with_a_pipeline_is_refused():
    """Checked with the spec (`parc check` says it), where the layout is known."""
    result = compile_text(offload_with_pipeline(), path="x.par")
    assert [d.code for d in result.diagnostics if d.is_error] == ["E0622"]
    assert "E0622" not in [d.code for d in compile_text(offload_with_pipeline().replace(
        "tp 2 x dp 2 x pp 2", "tp 2 x dp 4"), path="x.par").diagnostics]


@pytest.mark.skipif(not HAVE_MCORE, reason="megatron-core not installed (.ci/install-targets)")
def test_megatron_core_refuses_what_e0622_refuses():
    """The refusal is Megatron-Core's own: its TransformerConfig raises on the same values."""
    import torch
    from megatron.core.transformer import TransformerConfig

    with pytest.raises(ValueError, match="Pipeline parallelism with CPU offloading"):
        TransformerConfig(num_layers=32, hidden_size=4096, num_attention_heads=32, cpu_offloading=True,
                          cpu_offloading_num_layers=8, pipeline_model_parallel_size=2,
                          pipeline_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="recomputation"):
        TransformerConfig(num_layers=32, hidden_size=4096, num_attention_heads=32, cpu_offloading=True,
                          cpu_offloading_num_layers=8, recompute_granularity="selective")
    with pytest.raises(ValueError, match="only for layers less than 32"):
        TransformerConfig(num_layers=32, hidden_size=4096, num_attention_heads=32, cpu_offloading=True,
                          cpu_offloading_num_layers=32)


def test_the_entry_point_hands_megatron_the_generated_options(tmp_path: Path):
    """train.py as generated, with a pretrain_gpt.py that records its sys.argv: the generated options,
    then the given ones; Megatron-LM's own data options given there replace the mock data."""
    plan = compiled("moe-ep-over-dp")
    files = job_files(plan)
    for name in ("train.py", "megatron.args"):
        (tmp_path / name).write_text(files[name])
    checkout = tmp_path / "Megatron-LM"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("import json, sys\nprint(json.dumps(sys.argv))\n")
    out = subprocess.run([sys.executable, str(tmp_path / "train.py"), "--log-interval", "1"], capture_output=True,
                         text=True, check=True, env={"MEGATRON_LM": str(checkout)})
    expected = [word for option, value in backend.arguments(plan) for word in ([option] if value is None
                                                                               else [option, *value.split()])]
    argv = json.loads(out.stdout)
    assert Path(argv[0]).name == "pretrain_gpt.py" and argv[1:] == [*expected, "--log-interval", "1"]
    assert "--mock-data" in argv
    data = ["--data-path", "1.0", "/data/tokens_text_document", "--tokenizer-type", "HuggingFaceTokenizer"]
    out = subprocess.run([sys.executable, str(tmp_path / "train.py"), *data], capture_output=True, text=True,
                         check=True, env={"MEGATRON_LM": str(checkout)})
    argv = json.loads(out.stdout)
    assert argv[1:] == [word for word in expected if word != "--mock-data"] + data, "real data replaces the mock data"
    missing = subprocess.run([sys.executable, str(tmp_path / "train.py")], capture_output=True, text=True, env={})
    assert missing.returncode != 0 and "MEGATRON_LM" in missing.stderr


def test_the_optimizer_is_parcs_own():
    """Megatron-LM's command line trains the optimizer parc's torch job runs (train.py.jinja's
    `make_optimizer`, typed here): a constant 3e-4, AdamW's betas 0.9 / 0.95 and eps 1e-8 with
    weight decay 0.1 (`adamw`, parc's default; 0 for `adam`), SGD's momentum 0.9, and the spec's
    clipping (none unless stated). Megatron-LM has
    no default learning rate (its scheduler fails on None), decays linearly to 0, keeps beta2 0.999
    and weight decay 0.01, and clips at 1.0."""
    from parc.backends.torch.runtime import DEFAULT_LR

    assert DEFAULT_LR == "3e-4"
    o = options(compiled("moe-ep-over-dp"))
    assert (o["--optimizer"], o["--lr"], o["--lr-decay-style"]) == ("adam", "3e-4", "constant")
    assert (o["--adam-beta1"], o["--adam-beta2"], o["--adam-eps"], o["--weight-decay"]) == ("0.9", "0.95", "1e-08", "0.1")
    assert o["--clip-grad"] == "0"
    text = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\ntarget megatron\n"
            "train { seq 4096, global-batch 64, micro-batch 1, optimizer OPT, clip-grad-norm 1.5 }\n")
    for optimizer, decay in (("adamw", "0.1"), ("adam", "0")):
        o = options(compile_text(text.replace("OPT", optimizer), path="x.par").plan)
        assert (o["--weight-decay"], o["--clip-grad"]) == (decay, "1.5")
    o = options(compile_text(text.replace("OPT", "sgd"), path="x.par").plan)
    assert (o["--optimizer"], o["--sgd-momentum"], o["--weight-decay"]) == ("sgd", "0.9", "0")


@pytest.mark.parametrize("gpu, recipe, sharding, flags", [
    ("h100-sxm", "", "zero1", {"--fp8-recipe": "delayed", "--fp8-amax-history-len": "1024",
                               "--fp8-amax-compute-algo": "max", "--fp8-param-gather": None}),
    ("h100-sxm", "tensorwise", "zero1", {"--fp8-recipe": "tensorwise", "--fp8-param-gather": None}),
    ("b200", "mxfp8", "zero1", {"--fp8-recipe": "mxfp8", "--fp8-param-gather": None,
                                "--reuse-grad-buf-for-mxfp8-param-ag": None}),
    ("b200", "mxfp8", "none", {"--fp8-recipe": "mxfp8"}),
    ("b200", "tensorwise", "zero3", {"--fp8-recipe": "tensorwise"}),
    ("h100-sxm", "tensorwise, fp8-params off", "zero1", {"--fp8-recipe": "tensorwise"}),
    ("b200", "mxfp8, fp8-params off", "zero1", {"--fp8-recipe": "mxfp8"}),
])
def test_the_fp8_recipe_and_fp8_parameters_are_nvidias(gpu, recipe, sharding, flags):
    """`fp8-recipe` is Megatron-LM's `--fp8-recipe`; with the distributed optimizer the weights are
    fp8 tensors gathered as such (`--fp8-param-gather`, and MXFP8's gather through the gradient
    buffer), as NeMo's and Megatron-Bridge's fp8 recipes set (`bf16_with_fp8_current_scaling_mixed`,
    `bf16_with_mxfp8_mixed`: fp8_param_gather True, reuse_grad_buf_for_mxfp8_param_ag True);
    Megatron-LM allows it only with the distributed optimizer or FSDP and turns it off under
    torch FSDP2 with Transformer Engine 2, so DDP and zero3 keep bf16 weights. Delayed scaling
    keeps NVIDIA's amax history; the others have none. The spec comes back from `parc import`."""
    target = f" {{ fp8-recipe {recipe} }}" if recipe else ""
    text = (f"tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware {{ gpu {gpu} }}\n"
            f"target megatron{target}\ntrain {{ seq 4096, global-batch 64, micro-batch 1, precision fp8 }}\n"
            f"dp {{ sharding {sharding} }}\n")
    plan = compile_text(text, path="fp8.par").plan
    assert plan is not None
    o = options(plan)
    fp8 = {k: v for k, v in o.items() if k.startswith(("--fp8-", "--reuse-grad-buf"))}
    assert fp8.pop("--fp8-format") == "hybrid"
    assert fp8 == flags
    assert set(o) <= FLAGS
    from parc.importer import Defaults, import_source
    from parc.source import SourceFile

    imported = import_source(SourceFile("megatron.args", job_files(plan)["megatron.args"]),
                             Defaults(gpu=gpu, gpus_per_node=8, dp=4))
    assert not imported.diagnostics, [d.message for d in imported.diagnostics]
    again = compile_text(imported.text, path="imported.par").plan
    recipe, _, params = recipe.partition(", ")
    assert again.target.fp8_recipe == (recipe if recipe and recipe != "delayed" else None)
    assert again.target.fp8_params == (params != "fp8-params off")


def test_fp8_weights_without_fp8_param_gather_are_imported_as_bf16_weights():
    """A Megatron-LM command line under fp8 with the distributed optimizer but without
    `--fp8-param-gather` (Megatron-LM's own default) keeps bf16 weights beside their fp8 casts:
    `parc import` writes `fp8-params off`, whose memory holds the bf16 weight and the cached cast
    (2 + 2 bytes per fp8-linear element on Hopper, against 2 for the fp8 tensor and its transpose)
    and whose zero1 gathers them in bf16 (Llama 3 8B's 7.5 B linear weights on tp 2: the gathered
    bytes grow by one byte per element)."""
    from parc.importer import Defaults, import_source
    from parc.memory import estimate
    from parc.source import SourceFile
    from parc.targets import software_of

    plan = compiled("fp8-tensorwise-zero1")
    args = job_files(plan)["megatron.args"]
    assert "--fp8-param-gather\n" in args
    imported = import_source(SourceFile("megatron.args", args.replace("--fp8-param-gather\n", "")),
                             Defaults(gpu="h100-sxm", gpus_per_node=8, dp=4))
    assert not imported.diagnostics, [d.message for d in imported.diagnostics]
    assert "fp8-params off" in imported.text
    bf16 = compile_text(imported.text, path="imported.par").plan
    assert not bf16.target.fp8_params and "--fp8-param-gather" not in options(bf16)
    assert software_of(bf16).gather_bytes == 2 and software_of(plan).gather_bytes == 1

    def rank(p):
        (step,) = rank_steps_of(p).values()
        return step, estimate(p).stages[0].params

    (fp8_step, fp8_params), (bf16_step, bf16_params) = rank(plan), rank(bf16)
    # Llama 3 8B's linear weights on one tp-2 rank: q, k, v (8 kv heads of 128), o, SwiGLU's three
    per_rank_linear = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336) // 2
    assert bf16_params - fp8_params == pytest.approx(2 * per_rank_linear, rel=1e-6)
    gathered = [sum(c.payload * c.count for c in s.ledger.collectives if c.axis == "dp" and c.kind == "all_gather")
                for s in (fp8_step, bf16_step)]
    assert gathered[1] - gathered[0] == pytest.approx(per_rank_linear, rel=1e-6)


@pytest.mark.parametrize("name", ["dense-vpp-zero1", "moe-ep-over-dp", "fp16-2021"])
def test_the_job_builds_the_models_vocabulary(name):
    """Megatron-LM's NullTokenizer reports one id more than it is given, its end-of-document id
    (core_v0.16.0 megatron/training/tokenizer/tokenizer.py: `_NullTokenizer.vocab_size` returns
    `_vocab_size_without_eod + 1`, typed here), and `_vocab_size_with_padding` rounds that up to a
    multiple of `--make-vocab-size-divisible-by` (128) x tp: the job's embedding has the rows
    parc's memory and time models count (`padded_vocab`)."""
    from parc.memory.parameters import padded_vocab

    plan = compiled(name)
    o = options(plan)
    assert o["--tokenizer-type"] == "NullTokenizer"
    tokenizer_vocab = int(o["--vocab-size"]) + 1
    assert tokenizer_vocab == plan.model.vocab
    multiple = 128 * plan.layout.tp.degree
    assert -(-tokenizer_vocab // multiple) * multiple == padded_vocab(plan.model.vocab, plan.layout.tp.degree, "megatron")


def test_the_data_parallel_overlap_parc_charges_is_on():
    """parc's time model hides the gradient reduce-scatter under the backward and the distributed
    optimizer's gather under the next forward, bucket by bucket: Megatron-LM does so only with
    --overlap-grad-reduce (and --overlap-param-gather, which needs the distributed optimizer);
    torch FSDP2 (zero3) overlaps on its own and refuses fused gradient accumulation."""
    o = options(compiled("dense-vpp-zero1"))
    assert {"--overlap-grad-reduce", "--overlap-param-gather", "--use-distributed-optimizer"} <= set(o)
    assert o["--ddp-bucket-size"] == "20000000"
    o = options(compiled("offload-fsdp"))
    assert {"--use-torch-fsdp2", "--no-gradient-accumulation-fusion"} <= set(o)
    assert not {"--overlap-grad-reduce", "--overlap-param-gather"} & set(o)
    # cuDNN's fused attention as parc times it (`flash` would turn it off), and no dataloader mask
    assert o["--attention-backend"] == "auto" and "--no-create-attention-mask-in-dataloader" in o


def test_the_ledger_cuts_the_buckets_the_job_asks_megatron_for():
    """The job hands `dp { bucket }` to Megatron-LM as --ddp-bucket-size, which Megatron-Core's
    `resolve_ddp_bucket_size` takes as is (elements per bucket; unset, max(40M, 1M x dp)): the time
    model's zero1 reduce-scatter is cut into as many calls as those buckets make of the rank's
    gradients, and the default bucket into fewer."""
    from dataclasses import replace

    from parc.targets import software_of

    plan = compiled("dense-vpp-zero1")
    written = int(options(plan)["--ddp-bucket-size"])

    def reduce_scatters(p):
        grad = software_of(p).grad_bytes
        found = [(c, grad) for step in rank_steps_of(p).values() for c in step.ledger.collectives
                 if c.axis == "dp" and c.kind == "reduce_scatter"]
        assert found
        return found

    for c, grad in reduce_scatters(plan):
        elements = c.payload * c.count / grad  # the rank's gradients, whole
        assert c.count == -(-round(elements) // written) and c.payload <= written * grad * (1 + 1e-9)
    default = replace(plan, layout=replace(plan.layout, dp=replace(plan.layout.dp, bucket=None)))
    for (c, _), (d, _) in zip(reduce_scatters(plan), reduce_scatters(default), strict=True):
        assert c.payload * c.count == pytest.approx(d.payload * d.count) and d.count < c.count


@pytest.mark.parametrize("name, connections", [("moe-ep-over-dp", "1"), ("offload-fsdp", None)])
def test_the_entry_point_sets_one_hardware_queue_unless_fsdp(tmp_path: Path, name, connections):
    """Megatron-LM asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with tp or cp before Blackwell, and its
    FSDP asserts the opposite: train.py sets it from the options it hands over (a stub
    pretrain_gpt.py prints what it finds)."""
    files = job_files(compiled(name))
    for file in ("train.py", "megatron.args"):
        (tmp_path / file).write_text(files[file])
    checkout = tmp_path / "Megatron-LM"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("import json, os\nprint(json.dumps(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS')))\n")
    out = subprocess.run([sys.executable, str(tmp_path / "train.py")], capture_output=True, text=True, check=True,
                         env={"MEGATRON_LM": str(checkout)})
    assert json.loads(out.stdout) == connections


@pytest.mark.parametrize("spec, code", [
    ("tp 2 x dp 2 x pp 2 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\ntarget megatron\n"
     "train { seq 4096, global-batch 64, micro-batch 1 }\ndp { sharding zero3 }\n", "E0623"),
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel gpt3-175b { layers 2 }\nhardware { gpu h100-sxm }\ntarget megatron\n"
     "train { seq 2048, global-batch 64, micro-batch 1 }\ndp { sharding zero3 }\n", "E0623"),
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
     "target megatron { tp-overlap all }\ntrain { seq 4096, global-batch 64, micro-batch 1 }\n"
     "tp { sequence-parallel off }\n", "E0624"),
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp\nmodel mixtral-8x7b\nhardware { gpu h100-sxm }\n"
     "target megatron\ntrain { seq 4096, global-batch 64, micro-batch 1 }\ntp { sequence-parallel off }\n", "E0624"),
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp\nmodel mixtral-8x7b { moe-balance aux-free }\n"
     "hardware { gpu h100-sxm }\ntarget megatron\ntrain { seq 4096, global-batch 64, micro-batch 1 }\n", "E0625"),
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu a100-80gb }\ntarget megatron\n"
     "train { seq 4096, global-batch 64, micro-batch 1, precision fp8 }\n", "E0626"),
])
def test_what_megatron_refuses_is_said_with_the_spec(spec, code):
    """Each refusal is Megatron-LM's or Megatron-Core's own (megatron/training/arguments.py
    `validate_args`, TransformerConfig, MoELayer.forward, Transformer Engine at core_v0.16.0):
    `parc check` reports it where the spec says it, and the same spec under `target torch` has
    no such error."""
    result = compile_text(spec, path="x.par")
    found = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in found if d.code.startswith("E062")] == [code], [d.message for d in found]
    assert found[0].span is not None
    torch = compile_text(spec.replace("target megatron { tp-overlap all }", "").replace("target megatron", ""),
                         path="x.par")
    assert code not in {d.code for d in torch.diagnostics}



def test_search_holds_the_bf16_weights_fp8_params_off_keeps():
    """`parc search` fills holes with the target's fp8 parameters as written: under `fp8-params off`
    every candidate holds the bf16 weight beside its cached cast (2 bytes more per fp8-linear
    element on Hopper), the same layouts otherwise, and its peak is what `parc explain` says of
    the candidate's plan."""
    from parc.memory import estimate
    from parc.search import search

    text = ("tp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm, nodes 2 }\n"
            "target megatronTARGET\ntrain { seq 8192, global-batch 64, micro-batch 1, precision fp8 }\n"
            "dp { sharding zero1 }\n")
    found = {}
    for name, target in (("fp8", ""), ("bf16", " { fp8-params off }")):
        result = search(compile_text(text.replace("TARGET", target), path="s.par"), top=3)
        assert result.candidates
        found[name] = {c.compilation.plan.layout.degree("tp"): c for c in result.candidates}
    assert set(found["fp8"]) == set(found["bf16"]) and found["fp8"]
    for tp, bf16 in found["bf16"].items():
        assert not bf16.compilation.plan.target.fp8_params
        linear = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336) // tp
        assert bf16.peak_bytes - found["fp8"][tp].peak_bytes == pytest.approx(2 * linear, rel=0.02)
        assert bf16.peak_bytes == estimate(bf16.compilation.plan).peak_bytes


def test_recompute_modules_are_megatron_cores_list():
    """`recompute selective [...]` is Megatron-LM's `--recompute-granularity selective
    --recompute-modules ...`: one word per module on the command line (the option takes a list),
    which megatron-core's TransformerConfig keeps as its `recompute_modules`."""
    plan = compiled("mla-moe-modules")
    o = options(plan)
    assert o["--recompute-granularity"] == "selective"
    assert o["--recompute-modules"].split() == ["mla_up_proj", "moe_act", "layernorm", "mlp", "shared_experts"]
    files = job_files(plan)
    assert "--recompute-modules mla_up_proj moe_act layernorm mlp shared_experts\n" in files["megatron.args"]
    if HAVE_MCORE:
        config = transformer_config(plan)
        assert config.recompute_granularity == "selective"
        assert list(config.recompute_modules) == ["mla_up_proj", "moe_act", "layernorm", "mlp", "shared_experts"]


@pytest.mark.skipif(not HAVE_MCORE, reason="megatron-core not installed (.ci/install-targets)")
def test_megatron_core_refuses_what_e0628_refuses():
    """Megatron-Core's TransformerConfig raises on `mla_up_proj` without latent attention, as
    parc's E0628 does, and on a name outside its list, as parc's parser does."""
    from megatron.core.transformer import TransformerConfig

    with pytest.raises(ValueError, match="mla_up_proj"):
        TransformerConfig(num_layers=4, hidden_size=1024, num_attention_heads=16, recompute_granularity="selective",
                          recompute_modules=["mla_up_proj"])
    with pytest.raises(AssertionError, match="Invalid choices"):
        TransformerConfig(num_layers=4, hidden_size=1024, num_attention_heads=16, recompute_granularity="selective",
                          recompute_modules=["moe_akt"])
    spec = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\ntarget megatron\n"
            "train { seq 4096, global-batch 64, micro-batch 1, recompute selective [mla_up_proj] }\n")
    assert "E0628" in {d.code for d in compile_text(spec, path="x.par").diagnostics}
