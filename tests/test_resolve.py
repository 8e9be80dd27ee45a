"""Resolution: presets, defaults and the derived facts every later stage relies on."""

from __future__ import annotations

import pytest
from parc.pipeline import compile_path, compile_text
from parc.stages import make_chunks, pipeline_chunks

from .conftest import ROOT

BASE = """tp 2 x dp 4 on nodes(8 gpus, nvlink)
model tiny
hardware { gpu h100-sxm }
train { seq 32, global-batch 16 }
"""


def plan_of(text: str):
    result = compile_text(text, "t.par")
    assert result.plan is not None, result.diagnostics
    return result.plan


def spec(name: str):
    result = compile_path(str(ROOT / "specs" / f"{name}.par"))
    assert result.plan is not None
    return result.plan


def test_rank_order_first_axis_fastest():
    layout = spec("llama3-405b").layout
    assert [(a.name, a.degree, a.stride) for a in layout.axes] == [("tp", 8, 1), ("pp", 16, 8), ("dp", 64, 128)]
    assert layout.coordinates(129) == {"tp": 1, "pp": 0, "dp": 1}
    assert layout.rank_of({"tp": 1, "pp": 0, "dp": 1}) == 129
    assert layout.group("tp", 129) == tuple(range(128, 136))
    assert layout.group("pp", 1) == tuple(range(1, 128, 8))
    assert layout.group("dp", 5)[:3] == (5, 133, 261) and len(layout.group("dp", 5)) == 64
    assert layout.group("cp", 7) == (7,)


def test_every_rank_round_trips_through_coordinates():
    layout = spec("mixtral-8x7b-5d").layout
    for rank in range(256):
        assert layout.rank_of(layout.coordinates(rank)) == rank


def test_folded_ep_groups_take_the_fastest_ranks_first():
    layout = spec("mixtral-8x7b-5d").layout  # tp 2 x cp 2 x dp 16 x pp 4, ep 8 over cp x dp
    assert layout.ep.folded_over == ("cp", "dp")
    assert layout.group("ep", 0) == (0, 2, 4, 6, 8, 10, 12, 14)
    assert layout.group("ep", 1) == (1, 3, 5, 7, 9, 11, 13, 15)
    assert layout.group("ep", 16) == (16, 18, 20, 22, 24, 26, 28, 30)
    groups = {layout.group("ep", r) for r in range(256)}
    assert len(groups) == 32 and all(len(g) == 8 for g in groups)
    deepseek = spec("deepseek-v3-like").layout  # dp 128 x pp 16, ep 64 over dp: 8 whole nodes
    assert deepseek.group("ep", 0) == tuple(range(64))
    assert deepseek.group("ep", 200) == tuple(range(192, 256))


def test_derived_world_nodes_and_accumulation():
    plan = spec("llama3-405b")
    assert (plan.cluster.world_size, plan.cluster.nodes) == (8192, 1024)
    assert plan.training.grad_accum == 2048 // 64
    assert plan.layout.batch_degree == 64
    plan = spec("llama3-405b-128k")
    assert plan.training.global_batch == 128  # 16,777,216 tokens / 131,072
    assert plan.training.grad_accum == 16


def test_layout_ep_axis_splits_the_batch():
    plan = plan_of(BASE.replace("tp 2 x dp 4", "ep 2 x dp 4").replace("model tiny", "model tiny-moe"))
    assert plan.layout.batch_degree == 8 and plan.training.grad_accum == 2


def test_size_from_hardware_when_layout_has_holes():
    plan = spec("llama3-70b-search")
    assert plan.cluster.world_size == 1024 and plan.layout.world_size is None
    assert [h.name for h in plan.holes] == ["tp", "pp", "dp", "train.micro-batch", "train.recompute", "dp.sharding"]
    assert plan.training.micro_batch is None and plan.training.grad_accum is None
    assert plan.layout.dp.sharding is None and plan.training.recompute is None


def test_gpus_stated_instead_of_nodes():
    plan = plan_of(BASE.replace("gpu h100-sxm", "gpu h100-sxm, gpus 8"))
    assert (plan.cluster.world_size, plan.cluster.nodes) == (8, 1)


def test_defaults():
    plan = plan_of(BASE.replace("tp 2 x dp 4", "tp 2 x pp 2 x dp 2"))
    assert plan.layout.tp.sequence_parallel is True
    assert (plan.layout.pp.schedule, plan.layout.pp.virtual_stages) == ("1f1b", 1)
    assert plan.layout.dp.sharding == "none" and plan.layout.cp.flavour == "ring"
    assert (plan.training.precision, plan.training.optimizer, plan.training.recompute) == ("bf16", "adamw", "none")
    assert plan.training.micro_batch == 1
    assert plan.launch.job == "t" and plan.launch.port == 29500
    assert plan.cluster.link == "nvlink" and plan.cluster.network.nics == 8
    interleaved = plan_of(BASE.replace("tp 2 x dp 4", "tp 2 x pp 2 x dp 2") + "pp { schedule interleaved-1f1b }\n")
    assert interleaved.layout.pp.virtual_stages == 2


def test_catalogue_defaults_follow_the_gpu():
    plan = plan_of(BASE.replace("tp 2 x dp 4 on nodes(8 gpus, nvlink)", "tp 4 x dp 2")
                   .replace("gpu h100-sxm", "gpu gb200-nvl72"))
    assert (plan.cluster.gpus_per_node, plan.cluster.link, plan.cluster.domain_size) == (4, "nvl72", 72)
    mi = plan_of(BASE.replace(" on nodes(8 gpus, nvlink)", "").replace("gpu h100-sxm", "gpu mi300x"))
    assert mi.cluster.link == "xgmi"
    pcie = plan_of(BASE.replace("nvlink", "pcie"))
    assert pcie.cluster.domain_size == 1 and pcie.cluster.intra_bandwidth == 64e9


def test_network_and_units():
    plan = plan_of(BASE.replace("gpu h100-sxm", "gpu h100-sxm, network 4 x 200 Gb/s"))
    assert plan.cluster.network.nics == 4 and plan.cluster.network.nic_bandwidth == 25e9
    assert plan.cluster.network.node_bandwidth == 100e9


def test_gpu_override_and_custom_gpu():
    plan = plan_of(BASE.replace("gpu h100-sxm", "gpu h100 { hbm 96 GiB }"))
    assert plan.cluster.gpu.name == "h100-sxm" and plan.cluster.gpu.hbm_bytes == 96 * 2**30
    assert plan.cluster.gpu.bf16_flops == 989e12
    custom = plan_of(BASE.replace("gpu h100-sxm", "gpu accel { hbm 64 GB, bf16 500 TFLOP/s, link 100 GB/s, "
                                                  "nvlink-domain 4, generation ampere }"))
    gpu = custom.cluster.gpu
    assert (gpu.hbm_bytes, gpu.bf16_flops, gpu.link_bandwidth, gpu.nvlink_domain, gpu.fp8_flops) == (
        64e9, 500e12, 100e9, 4, None)
    assert custom.cluster.domain_size == 4


def test_model_override_keeps_the_rest_of_the_preset():
    plan = plan_of(BASE.replace("model tiny", "model llama3-8b { layers 4 }"))
    assert plan.model.layers == 4 and plan.model.hidden == 4096 and plan.model.kv_heads == 8
    assert plan.model.span_of("layers").line == 2


@pytest.mark.parametrize("name, billions, active", [
    ("llama3-405b", 405.85, 405.85), ("gpt3-175b", 174.59, 174.59), ("megatron-1t", 1008.0, 1008.0),
    ("mixtral-8x7b-5d", 46.70, 12.88), ("deepseek-v3-like", 674.8, 41.4),
])
def test_parameter_counts_match_published_sizes(name, billions, active):
    model = spec(name).model
    assert model.parameters / 1e9 == pytest.approx(billions, rel=2e-3)
    assert model.active_parameters / 1e9 == pytest.approx(active, rel=2e-3)


def test_moe_layer_rules():
    assert spec("deepseek-v3-like").model.moe_layers == tuple(range(3, 61))
    every = plan_of(BASE.replace("model tiny", "model tiny-moe { layers 4, moe-layers every 2 }"))
    assert every.model.moe_layers == (1, 3)


def test_chunks_loop_and_v_layouts():
    loop = make_chunks(8, 2, 2, "interleaved-1f1b", None, tied=False)
    assert [(c.rank, c.first_layer, c.layers) for c in loop] == [(0, 0, 2), (1, 2, 2), (0, 4, 2), (1, 6, 2)]
    v = make_chunks(8, 2, 2, "zbv", None, tied=True)
    assert [c.rank for c in v] == [0, 1, 1, 0]
    assert v[-1].output and v[-1].tied_copy  # rank 0 holds both ends, each chunk its own copy
    tied = make_chunks(8, 2, 1, "1f1b", None, tied=True)
    assert tied[-1].tied_copy and tied[0].embedding


def test_uneven_split_is_used():
    chunks = pipeline_chunks(spec("llama3-405b"))  # 16 stages x 4 chunks, one layer fewer at each end
    assert [c.layers for c in sorted(chunks, key=lambda c: c.index)] == [1] + [2] * 62 + [1]
    assert sum(c.layers for c in chunks) == 126


def test_allow_inside_a_block_is_kept():
    text = BASE.replace("train { seq 32, global-batch 16 }", "train {\n  seq 32\n  global-batch 16 allow W0323\n}")
    plan = plan_of(text)
    assert [(a.code, a.statement.line) for a in plan.allows] == [("W0323", 6)]


def every_key():
    from parc.spec import BLOCK_KEYS

    return [key for keys in BLOCK_KEYS.values() for key in keys]


def test_aliases_are_other_names_of_exactly_one_thing():
    """Issue 17: `cp { flavour flavor }` was `ring` (an alias table entry `flavor = ring`).

    An alias is a real name of exactly one choice: never the name of a key, never a prefix that
    fits two choices (`a100`: 40 or 80 GB), never a family or a different schedule."""
    from parc.catalog import gpus, models
    from parc.spec import TOP_KEYS

    keys = every_key()
    key_names = {key.name for key in keys} | set(TOP_KEYS)
    tables = [(dict(key.aliases), key.choices) for key in keys if key.aliases]
    tables += [(gpus.ALIASES, tuple(gpus.GPUS)), (models.ALIASES, tuple(models.MODELS))]
    assert len(tables) >= 4
    for aliases, choices in tables:
        assert aliases
        for alias, target in aliases.items():
            assert target in choices, (alias, target)
            assert alias not in key_names, f"alias `{alias}` is a key's name"
            assert alias not in choices, alias
            fits = [c for c in choices if c.startswith(alias + "-")]
            assert len(fits) <= 1, f"alias `{alias}` fits {fits}"


@pytest.mark.parametrize("text, code", [
    ("cp { flavour flavor }", "E0202"), ("pp { schedule zero-bubble }", "E0202"),
    ("pp { schedule dualpipe }", "E0202"), ("pp { schedule interleaved }", "E0202"), ("hardware { gpu a100, nodes 1 }", "E0"),
])
def test_removed_aliases_are_rejected_with_a_suggestion(text, code):
    result = compile_text(f"tp 2 x cp 2 x pp 2 on nodes(8 gpus, nvlink)\nmodel tiny\n{text}\n", path="x.par")
    errors = [d for d in result.diagnostics if d.severity.value == "error"]
    assert errors and errors[0].code.startswith(code), result.diagnostics
    assert "did you mean" in (errors[0].help or "") or "`" in (errors[0].help or "")
