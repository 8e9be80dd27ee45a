"""A run's recipe stated in its text reads as the same recipe in the `recipe` field.

The repository's transcriptions carry Megatron-Bridge's and NeMo's performance recipes in a
`recipe` field of their own (benchmarks/published.py `read_recipe`). The held-out runs follow
the shared schema, which has no such field: whoever transcribes a run writes the options its
config sets into the evidence or the notes, as a config, a command line or a note writes them
("moe_a2a_overlap: True", "--moe-token-dispatcher-type flex", "recompute_modules=[mla_up_proj]").
Before `published.stated_options` (main at e90b6d2), every one of the 269 rows with a recipe that
the reader keeps read differently that way, in each of the three spellings below: bf16 gradient
reduction, the recomputed modules, the ep overlap, the dispatcher, the padding, the pipeline
layout, the offloading and the fused grouped MLP were lost, and "..._force_load_balancing: False"
was read as on.

The reference is each row as the repository reads it through its `recipe` field; the variant is
the same row with that field removed and its options written into the row's notes, in three
spellings, never through the code under test.
"""

from __future__ import annotations

import copy
import importlib
import sys

import pytest

from .conftest import ROOT, load_yaml

sys.path.insert(0, str(ROOT / "benchmarks"))
published = importlib.import_module("published")

DATA = ROOT / "benchmarks" / "data"
RECIPE_FILES = ("dgxc_benchmarking.yaml", "dgxc_benchmarking_h100.yaml", "megatron_bridge_25_11.yaml",
                "megatron_bridge_blackwell_ultra.yaml", "megatron_bridge_nvfp4.yaml", "megatron_bridge_releases.yaml",
                "megatron_bridge_releases_moe.yaml", "published.yaml")


def _rows() -> list[tuple[str, dict, list[dict]]]:
    out = []
    for name in RECIPE_FILES:
        entries = load_yaml((DATA / name).read_text())
        for e in entries:
            if isinstance(e.get("recipe"), dict):
                out.append((name, e, entries))
    return out


ROWS = _rows()


def _written(key: str, value, style: str) -> str:
    """One option as a transcriber pasting a config would write it (typed here, not produced by the
    reader): a YAML line, a `key=value` override, or a command line."""
    if style == "colon":
        return f"{key}: {value}"
    if style == "equals":
        return f"{key}={value!r}" if isinstance(value, list) else f"{key}={value}"
    flag = "--" + key.replace("_", "-")
    if isinstance(value, list):
        return " ".join([flag, *map(str, value)])
    if value is True:
        return flag
    return f"{flag} {str(value).lower() if isinstance(value, bool) else value}"


def _as_text(entry: dict, style: str) -> dict:
    """`entry` without its `recipe`, the recipe's options written into its notes instead (its
    recomputation, or an empty list of recomputed modules, into `layout.recompute`, the schema's
    place for it, where the row has none)."""
    out = copy.deepcopy(entry)
    recipe = out.pop("recipe")
    lines = []
    if recipe.get("recompute_modules") == [] and not recipe.get("recompute"):
        recipe["recompute"] = "none"  # no module recomputed: the schema's field says so
    for key, value in recipe.items():
        if key in ("source", "recompute") or value == []:
            continue
        if key == "other":  # Megatron-Bridge's list of switches that are on
            lines += [_written(name, True, style) for name in value]
        else:
            lines.append(_written(key, value, style))
    if recipe.get("recompute") and not out["layout"].get("recompute"):
        out["layout"]["recompute"] = recipe["recompute"]
    out["notes"] = "; ".join(([str(out["notes"])] if out.get("notes") else []) + lines)
    return out


def _spec_body(run) -> str:
    return "\n".join(line for line in run.spec.splitlines() if not line.startswith("#"))


@pytest.mark.parametrize("style", ["colon", "equals", "command line"])
def test_a_recipe_written_in_the_notes_reads_as_the_recipe_field(style):
    differ, compared = [], 0
    for name, entry, others in ROWS:
        want = published.row_spec(entry, others)
        got = published.row_spec(_as_text(entry, style), others)
        if isinstance(want, published.Skipped):  # a row the reader leaves out is left out the same way
            same = got == want
        else:
            compared += 1
            same = not isinstance(got, published.Skipped) and _spec_body(got) == _spec_body(want) \
                and got.software == want.software and got.recompute_stated == want.recompute_stated
        if not same:
            differ.append(f"{name}:{entry['id']}")
    assert compared >= 250
    assert not differ, differ[:10]


def test_the_recipe_field_wins_over_the_text():
    """A row that states an option both ways reads the `recipe` field's value."""
    entry = next(e for _, e, _ in ROWS if e["id"] == "bridge2602_b300_qwen3_235b_a22b_fp8mx")
    assert entry["recipe"]["moe_a2a_overlap"] is True
    said = dict(copy.deepcopy(entry), notes="moe_a2a_overlap: False")
    assert published.row_spec(said).software.ep_overlap is True


@pytest.mark.parametrize(("note", "field", "on", "off"), [
    ("tp_comm_overlap: {}", "tp_overlap", "all", "backward"),
    ("moe_a2a_overlap={}", "ep_overlap", True, False),
    ("grad_reduce_in_fp32: {}", "grad_bytes", 4, 2),
    ("moe_pad_expert_input_to_capacity {}", "moe_host_sync", False, True),
])
def test_an_option_set_false_in_the_text_is_read_off(note, field, on, off):
    """"moe_router_force_load_balancing: False" names the option to turn it off; each of these
    was read as on by its name alone before."""
    entry = next(e for _, e, _ in ROWS if e["id"] == "bridge2602_h100_qwen3_30b_a3b_fp8cs")
    base = copy.deepcopy(entry)
    base["recipe"] = {k: v for k, v in base["recipe"].items()
                      if k not in ("tp_comm_overlap", "moe_a2a_overlap", "grad_reduce_in_fp32",
                                   "moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor")}
    if "capacity" in note:
        base["recipe"]["moe_expert_capacity_factor"] = 1.0
    base["layout"] = dict(base["layout"], tp=2, dp=base["layout"]["dp"] // 2) if "tp_comm" in note else base["layout"]
    values = {}
    for word in ("True", "False"):
        run = published.row_spec(dict(copy.deepcopy(base), notes=note.format(word)))
        assert not isinstance(run, published.Skipped), run
        values[word] = getattr(run.software, field)
    assert values == {"True": on, "False": off}


@pytest.mark.parametrize(("text", "read"), [
    ("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep",
     {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep"}),
    ("recompute_modules=['mla_up_proj', 'mlp']", {"recompute_modules": ["mla_up_proj", "mlp"]}),
    ("ub_tp_comm_overlap false", {"tp_comm_overlap": False}),
    ("--grad-reduce-in-bf16 --tp-comm-overlap", {"grad_reduce_in_fp32": False, "tp_comm_overlap": True}),
    ("pipeline_model_parallel_layout: Et|(tt|)*30L", {"pipeline_model_parallel_layout": "Et|(tt|)*30L"}),
    ("cpu_offloading_num_layers: 40, moe_expert_capacity_factor=1.0",
     {"cpu_offloading_num_layers": 40, "moe_expert_capacity_factor": 1.0}),
    ("fp8_dot_product_attention: true; cutedsl_fused_grouped_mlp: false",
     {"other": ["fp8_dot_product_attention"]}),
    ("activations_checkpoint_granularity null", {"recompute_granularity": "none"}),
    ("optim distributed_fused_adam with grad_sync_dtype bf16", {"grad_reduce_in_fp32": False}),
    ("moe_token_dispatcher_type: null", {}),
    ("the run overlapped the a2a with compute", {}),  # no option's name
])
def test_the_options_a_text_states(text, read):
    assert published.stated_options({"notes": text}) == read


@pytest.mark.parametrize(("recompute", "modules"), [
    ("--recompute-modules mla_up_proj mlp", ("mla_up_proj", "mlp")),
    ("selective (mla_up_proj, mlp)", ("mla_up_proj", "mlp")),
    ("recompute_modules=['layernorm', 'moe_act']", ("layernorm", "moe_act")),
    ("selective [moe_act]", ("moe_act",)),
    ("selective (the attention core)", ()),
    ("selective", ()),
    ("full", ()),
    # MaxText's remat policies: what each recomputes, as Megatron-Core's modules
    ("selective: MaxText remat_policy=save_qkv_proj (scan_layers=true)", ("core_attn", "layernorm", "mlp")),
    ("remat_policy: minimal", ("core_attn", "layernorm")),
    ("save_dot_except_mlp", ("core_attn", "layernorm", "mlp")),
    ("remat_policy=full", ()),
    ("minimal", ()),  # not a policy's name without the option's
])
def test_the_recomputed_modules_however_written(recompute, modules):
    assert published.megatron_modules({"layout": {"recompute": recompute}}) == modules


# MaxText layers/decoders.py `get_remat_policy`: the activations each policy saves (names of
# `checkpoint_name` in its attention and MLP layers); written here from that source, not from
# published.py. A layer's parts and the saved activation each needs to be skipped again:
MAXTEXT_SAVED = {
    "save_dot_except_mlp": {"query_proj", "value_proj", "key_proj", "qkv_proj", "out_proj"},
    "save_qkv_proj": {"query_proj", "value_proj", "key_proj", "qkv_proj"},
    "save_dot_with_context_except_mlp": {"query_proj", "value_proj", "key_proj", "qkv_proj", "context", "out_proj"},
}
PART_SKIPPED_BY = {"core_attn": "context", "mlp": "mlpwo"}  # the norms feed saved projections: recomputed always


@pytest.mark.parametrize("policy", sorted(MAXTEXT_SAVED))
def test_a_maxtext_policy_recomputes_the_modules_whose_outputs_it_does_not_save(policy):
    expected = {"layernorm"} | {part for part, output in PART_SKIPPED_BY.items() if output not in MAXTEXT_SAVED[policy]}
    assert set(published.megatron_modules({"layout": {"recompute": f"remat_policy={policy}"}})) == expected
    notes = []
    assert published.recompute_of({"recompute": f"remat_policy={policy}"}, 80, "megatron", notes) == "selective"
    assert len(notes) == 1 and f"MaxText's remat_policy {policy}" in notes[0]


def _model_rows() -> list[tuple[dict, list[dict], list[str]]]:
    out = []
    for path in sorted(DATA.glob("*.yaml")):
        entries = load_yaml(path.read_text())
        if not isinstance(entries, list):
            continue
        for e in entries:
            keys = [k for k in published.MODEL_FACTS if k in (e.get("model") or {})]
            if keys:
                out.append((e, entries, keys))
    return out


@pytest.mark.parametrize("form", ["mapping", "text"])
def test_model_facts_in_model_extra_read_as_fields(form):
    """The shared schema keeps facts beyond its model fields in `model.extra`: MLA's ranks, the
    multi-token prediction depth, gpt-oss's window, expert bias, clamp and YaRN factor, moved
    there from the repository's own fields, read the same (before `read_model_extra` a window
    there was dropped and gpt-oss's layers attended to the whole sequence)."""
    rows = _model_rows()
    assert len(rows) >= 60
    differ = []
    for entry, others, keys in rows:
        want = published.row_spec(entry, others)
        moved = copy.deepcopy(entry)
        facts = {k: moved["model"].pop(k) for k in keys}
        moved["model"]["extra"] = facts if form == "mapping" else ", ".join(f"{k}: {v}" for k, v in facts.items())
        got = published.row_spec(moved, others)
        if isinstance(want, published.Skipped):
            same = got == want
        else:
            same = not isinstance(got, published.Skipped) and _spec_body(got) == _spec_body(want) \
                and got.software == want.software
        if not same:
            differ.append(entry["id"])
    assert not differ, differ[:10]


def test_a_config_s_own_names_for_a_model_fact():
    """Hugging Face's and Megatron-Core's names for the same facts (gpt-oss's `sliding_window`,
    `swiglu_limit`; DeepSeek-V3's `num_nextn_predict_layers`)."""
    entry = {"model": {"name": "x", "extra": "sliding_window: 128, swiglu_limit=7.0, num_nextn_predict_layers 1"}}
    model = published.read_model_extra(entry)["model"]
    assert (model["window"], model["activation_clamp"], model["mtp_layers"]) == (128, 7.0, 1)
    kept = {"model": {"window": 64, "extra": {"sliding_window": 128}}}
    assert published.read_model_extra(kept)["model"]["window"] == 64


def test_the_code_s_date_stated_beside_its_commit_reads_as_the_runtime_block():
    """MegaScale's Megatron-LM baseline (commit 285068c8 of 2023-01-11) sends its pipeline's
    activations blocking, before `overlap_p2p_comm`: with the `runtime` block removed and the
    date written beside the commit in the evidence, the row reads the same; with neither, the
    paper's 2024 reads as the later code."""
    entries = load_yaml((DATA / "published_public.yaml").read_text())
    entry = next(e for e in entries if e["id"] == "megascale_megatron_175b_256gpu")
    assert entry["runtime"]["date"] == "2023-01-11"
    want = published.row_spec(entry, entries)
    bare = copy.deepcopy(entry)
    del bare["runtime"]
    dated = copy.deepcopy(bare)
    dated["source"]["primary_evidence"] = [e.replace("commit 285068c8", "commit 285068c8 of 2023-01-11")
                                           for e in dated["source"]["primary_evidence"]]
    assert published.runtime_date(dated) == "2023-01-11" and published.runtime_date(bare) == ""
    got = published.row_spec(dated, entries)
    assert _spec_body(got) == _spec_body(want) and got.software == want.software
    assert want.software.pp_overlap == "none"
    assert published.row_spec(bare, entries).software.pp_overlap == "all"


def test_dgx_cloud_rows_read_the_same_from_their_evidence_alone():
    """DGX Cloud's rows quote their launcher configs in their evidence ("activations_checkpoint_granularity
    null; ub_tp_comm_overlap True; optim distributed_fused_adam with grad_sync_dtype bf16"): without
    the `recipe` field the repository adds, each reads the same. Before NeMo 1.x's names were read,
    70 of the 72 lost their bf16 gradient reduction and 59 their stated recomputation."""
    compared = 0
    for name in ("dgxc_benchmarking.yaml", "dgxc_benchmarking_h100.yaml"):
        entries = load_yaml((DATA / name).read_text())
        for entry in entries:
            bare = {k: v for k, v in entry.items() if k != "recipe"}
            want, got = published.row_spec(entry, entries), published.row_spec(bare, entries)
            assert not isinstance(want, published.Skipped), want
            assert _spec_body(got) == _spec_body(want) and got.software == want.software, entry["id"]
            compared += 1
    assert compared == 72
