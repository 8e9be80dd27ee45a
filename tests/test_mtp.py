"""Multi-token prediction (`model { mtp N }`): its parameters, FLOPs, placement and time against
figures the code did not produce (DeepSeek-V3's published checkpoint size, Megatron-Core's FLOP
formula typed by hand, hand counts), its refusals, and Megatron's pipeline-layout strings.
"""

from __future__ import annotations

import sys

import pytest
from parc import flops, timing
from parc.backends import job_diagnostics
from parc.memory import parameters
from parc.memory.inputs import knobs_of, shape_of

from .conftest import ROOT, load_yaml
from .test_bridge_releases import deepseek_v3_flops_per_token
from .test_mla import DEEPSEEK_V3, plan_of

sys.path.insert(0, str(ROOT / "benchmarks"))
import published  # noqa: E402

WITH_MTP = DEEPSEEK_V3.replace("moe-layers from 3", "moe-layers from 3, mtp 1")
H, V = 7168, 129280


def test_deepseek_v3s_mtp_module_is_the_checkpoints_14b():
    """deepseek-ai/DeepSeek-V3's model card: 685B on Hugging Face, "671B of the Main Model weights
    and 14B of the Multi-Token Prediction (MTP) Module weights" (the 14B by difference). The
    checkpoint stores the module's own copies of the embedding and the output head (2 V h), which
    parc's model shares with the main model's: with them the count is 684.5B, the card's 685B
    (it also stores fp8 block scales, a 128 x 128th of each matrix), and the module 13.5B."""
    main, total = plan_of().model.parameters, plan_of(WITH_MTP).model.parameters
    assert 684e9 <= total + 2 * V * H < 685.5e9
    assert 13e9 <= total - main + 2 * V * H < 14.5e9


def test_model_flops_are_megatron_cores_count_with_its_mtp_layer():
    """Megatron-Core's `num_floating_point_operations` with `mtp_num_layers` 1 (typed in
    test_bridge_releases, which Bridge's published TFLOP/s agree with): the MTP layer as one more
    MoE layer and one more pass through the output layer. parc also counts the module's 2h -> h
    projection and the routers, which Megatron's formula leaves out."""
    shape = shape_of(plan_of(WITH_MTP))
    ours = flops.model_flops_per_token(shape, 4096)
    routers = 3 * 59 * flops.router_flops(shape)
    projection = 3 * 2 * 2 * H * H
    assert ours - routers - projection == pytest.approx(deepseek_v3_flops_per_token(4096, mtp=1), rel=5e-4)


@pytest.mark.parametrize("split", [None, "split [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1]"])
def test_the_mtp_layer_sits_in_the_last_chunk(split):
    """Megatron-Core builds the MTP modules on the stage that computes the loss (`mtp_process`):
    the last chunk holds them whatever the decoder's split, and the embedding copy they read."""
    plan = plan_of(WITH_MTP, layout="dp 16 x pp 16 on nodes(8 gpus, nvlink)\nep 8 over dp",
                   extra=f"pp {{ {split} }}\n" if split else "")
    shape, k = shape_of(plan), knobs_of(plan, "megatron")
    ranks = parameters.rank_chunks(shape, k)
    layers = [sum(c.layers for c in r) for r in ranks]
    decoder = [4] * 15 + [1] if split else [4] * 13 + [3] * 3
    assert layers == decoder[:-1] + [decoder[-1] + 1]
    last = ranks[-1][0]
    assert last.output and shape.is_moe(last.layer_range[-1])
    # the last stage: its layers; the final norm (h) and the head (V h); the module's own, its
    # eh_proj (2h x h) and three norms (3h); and the embedding copy it reads (V h: untied)
    p = parameters.chunk_params(shape, last, 1, 8, "megatron")
    layer = parameters.layer_params(shape, 1, 8, True)
    assert p.linear == (decoder[-1] + 1) * layer.linear + 2 * H * H
    assert p.other == (decoder[-1] + 1) * layer.other + H + V * H + 3 * H + V * H


def test_the_output_piece_runs_each_head_and_projection():
    """Under mtp 1 the output piece is the main head twice (logits GEMM, norm and loss) and the
    2h -> h projection once: by hand from `gemm_seconds` and the piece without MTP."""
    with_mtp, without = shape_of(plan_of(WITH_MTP)), shape_of(plan_of())
    plan = plan_of()
    hw, c = timing.hardware_of(plan), timing.DEFAULT
    split = (1, False, 1, 4096, 1)
    one = timing.output_work(without, split, V, "bf16", "fused", hw, c)
    two = timing.output_work(with_mtp, split, V, "bf16", "fused", hw, c)
    projection = timing.gemm_seconds(4096, 2 * H, H, "bf16", hw, c) + c.kernel_overhead
    assert two.gemm == pytest.approx(2 * one.gemm + projection, rel=1e-12)
    assert two.memory_f > 2 * one.memory_f and two.memory_b > 2 * one.memory_b


@pytest.mark.parametrize("target, code", [("torch", "E0606"), ("torchtitan", "E0610")])
def test_runtimes_without_mtp_refuse_it(target, code):
    plan = plan_of(layout="dp 8 on nodes(8 gpus, nvlink)", target=target,
                   model="model { layers 2, hidden 256, ffn 512, heads 4, vocab 1024, mtp 1 }\n")
    found = [d for d in job_diagnostics(plan) if d.is_error]
    assert code in {d.code for d in found}
    message = next(d for d in found if d.code == code)
    assert "multi-token prediction" in message.message + " ".join(message.notes or ()) + message.help


def test_megatron_emits_mtp_num_layers():
    from parc.backends import megatron

    assert dict(megatron.arguments(plan_of(WITH_MTP)))["--mtp-num-layers"] == "1"
    assert "--mtp-num-layers" not in dict(megatron.arguments(plan_of()))


@pytest.mark.parametrize("layout, chunks, split, mtp", [
    ("Et*4|(t*4|)*14tmL", 16, [4] * 15 + [1], 1),  # Megatron-Bridge's DeepSeek-V3 (16, 1), (8, 2), (4, 4)
    ("Et|(tt|)*30mL", 32, [1] + [2] * 30 + [0], 1),  # its H100 (8, 4) layout
    ("Et*4|(t*7|)*5t*8|tmL", 8, [4, 7, 7, 7, 7, 7, 8, 1], 1),  # its Qwen3 layout of 26.04
    ("E|t*2|t t|L", 4, [0, 2, 2, 0], 0),
    ("Ettt|(tt|)*29,m|L", 32, [3] + [2] * 29 + [0, 0], None),  # Megatron-Core's docstring example: MTP standalone
    ("E|t*4|t*4|t*4,mL", 4, [0, 4, 4, 4], 1),  # commas are cosmetic
])
def test_megatron_layout_strings_read_as_splits(layout, chunks, split, mtp):
    """Megatron-Core's `--pipeline-model-parallel-layout` grammar (`|` ends a chunk, `x*n` and
    `(...)*n` repeat, commas and spaces ignored), expanded by hand; an MTP stage of its own is
    refused (parc puts MTP with the loss)."""
    if mtp is None:
        with pytest.raises(published.Unusable, match="standalone"):
            published.layout_split(layout, chunks)
        return
    assert published.layout_split(layout, chunks) == (split, mtp)


@pytest.mark.parametrize("layout, chunks", [("Et|mt|tL", 3), ("Et*4|t*4L", 3), ("Et*4|tXL", 2), ("Et|t|mtL", 3),
                                            ("tE|t|tL", 3)])
def test_layouts_parc_cannot_read_are_refused(layout, chunks):
    with pytest.raises(published.Unusable):
        published.layout_split(layout, chunks)


def test_the_bridge_deepseek_rows_read_their_mtp_and_layout():

    entries = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml").read_text())
    rows = [e for e in entries if "deepseek" in e["id"]]
    assert rows
    for entry in rows:
        assert entry["model"]["mtp_layers"] == 1
        run = published.row_spec(entry, entries)
        if isinstance(run, published.Skipped):
            continue
        assert "mtp 1" in run.spec
        if entry["recipe"].get("pipeline_model_parallel_layout") == "Et*4|(t*4|)*14tmL":
            assert "split [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1]" in run.spec


def _without(entry: dict, *keys: str) -> dict:
    import copy

    out = copy.deepcopy(entry)
    for key in keys:
        out["model"].pop(key, None)
        (out.get("recipe") or {}).pop(key, None)
    return out


def test_without_a_layout_the_reader_places_the_mtp_layer_as_the_recipes_do():
    """Megatron-Bridge's hand-written DeepSeek-V3 layouts ("Et*4|(t*4|)*14tmL" over 16 chunks,
    "Et|(tt|)*30mL" over 32) are what the reader's rule gives a row that states MTP and no layout:
    the MTP layer and each output pass counted as a layer of the last chunk, the rest even, the
    lighter first."""

    entries = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml").read_text())
    compared = 0
    for entry in entries:
        if not (entry.get("recipe") or {}).get("pipeline_model_parallel_layout"):
            continue
        stated = published.row_spec(entry, entries)
        ruled = published.row_spec(_without(entry, "pipeline_model_parallel_layout"), entries)
        assert stated.spec == ruled.spec, entry["id"]
        compared += 1
    assert compared >= 12


@pytest.mark.parametrize("name, rid", [("published.yaml", "deepseek_v3_pretraining_2048xH800"),
                                       ("megatron_bridge_releases_moe.yaml", "bridge2602_b200_deepseek_v3_fp8mx")])
def test_a_row_naming_mla_and_mtp_in_words_reads_as_one_stating_them(name, rid):
    """A row whose `arch` says "multi-head latent attention" and "multi-token prediction" but
    states no ranks or depth is read with DeepSeek-V2/V3's ranks and one module, each said in its
    assumptions: the same spec as the row with the fields."""

    entries = load_yaml((ROOT / "benchmarks" / "data" / name).read_text())
    entry = next(e for e in entries if e["id"] == rid)
    worded = published.row_spec(_without(entry, "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim",
                                          "mtp_layers", "pipeline_model_parallel_layout"), entries)
    assert worded.spec == published.row_spec(entry, entries).spec
    said = " ".join(worded.assumptions)
    assert "multi-head latent attention (stated)" in said and "multi-token prediction (stated)" in said
    # the shared latent written as one kv head, and no head dim (hidden / heads would be 56)
    sparse = _without(entry, "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim", "mtp_layers",
                      "pipeline_model_parallel_layout", "head_dim")
    sparse["model"]["kv_heads"] = 1
    assert published.row_spec(sparse, entries).spec == worded.spec


@pytest.mark.parametrize("sp, gathers, reduces", [(True, (6, 6), (0, 0)), (False, (0, 0), (2, 3))])
def test_the_output_piece_carries_each_modules_tp_collectives(sp, gathers, reduces):
    """By hand from Megatron-Core's MultiTokenPredictionLayer (core_v0.16.0): under sequence
    parallelism the embedding's reduce-scatter, the projection's 2h input gathered, its output
    gathered and the head's input gathered (5 hidden widths) beside the main head's one, each way;
    without it the embedding's all-reduce and the output's gather forward, the projection's 2h
    input gradient backward beside the main head's one."""
    shape = shape_of(plan_of(WITH_MTP))
    plan = plan_of()
    work = timing.output_work(shape, (2, sp, 1, 4096, 1), V, "bf16", "fused", timing.hardware_of(plan),
                              timing.DEFAULT)
    assert (work.tp_gather, work.tp_all_reduce) == (gathers, reduces)
    calls = set(timing.tp_calls("output", sp, 2, work))
    if sp:  # the embedding's reduce-scatter and three gathers, the projection's 2h one counted twice
        assert calls == {("forward", "all_gather", 5), ("forward", "reduce_scatter", 1),
                         ("backward", "reduce_scatter", 5), ("backward", "all_gather", 1)}
    else:
        assert calls == {("forward", "all_reduce", 2), ("backward", "all_reduce", 3)}


def test_search_over_a_latent_attention_model_with_mtp_agrees_with_explain_and_physics():
    """Search's fast path (its own chunk walk and bounds) and the front end's prediction of the
    filled spec agree on a DeepSeek-V3-shaped model with MLA and an MTP layer, and every
    candidate stays within the physical bounds."""
    from parc.pipeline import compile_text
    from parc.search import search

    from .test_bounds import assert_within_physics

    text = ("job s\ntp ? x dp ? x pp ? on nodes(8 gpus, nvlink)\nep 8 over dp\n"
            "model deepseek-v3 { layers 16, mtp 1, moe-balance aux-loss 0.001 }\n"
            "hardware { gpu h100-sxm, nodes 32, network 8 x 400 Gb/s }\ntarget megatron\n"
            "train { seq 4096, global-batch 1024, micro-batch 1, recompute full }\ndp { sharding zero1 }\n")
    compiled = compile_text(text, path="s.par")
    result = search(compiled, top=3)
    assert result.candidates and not result.rejected, [d.message for d in result.diagnostics]
    for candidate in result.candidates:
        assert candidate.fast_step == pytest.approx(candidate.prediction.breakdown.step, rel=1e-9)
        assert_within_physics(candidate.compilation.plan)


def test_the_mtp_stage_sums_its_embedding_copy_with_the_first_stage_once_a_step():
    """Megatron-Core keeps an embedding on the stage that runs multi-token prediction and
    all-reduces its gradient with the first stage's over the embedding group once a step
    (`finalize_model_grads`): one call of V'/tp x h gradient elements (fp32: Megatron's default
    gradient buffer) on the first and the last stage, none between; without MTP none."""
    from parc.memory.parameters import padded_vocab

    for mtp, model in ((1, WITH_MTP), (0, DEEPSEEK_V3)):
        plan = plan_of(model.replace("layers 61", "layers 16"), layout="tp 2 x dp 8 x pp 4 on nodes(8 gpus, nvlink)\n"
                       "ep 8 over dp", extra="pp { schedule 1f1b }\n")
        loads, steps = timing.plan_rank_steps(plan)
        calls = [[c for c in steps[load].ledger.collectives if c.axis == "pp" and c.kind == "all_reduce"]
                 for load in loads]
        assert len(calls) == 4
        if not mtp:
            assert not any(calls)
            continue
        table = padded_vocab(V, 2, "megatron") * H / 2
        for stage, found in enumerate(calls):
            if stage in (0, 3):
                assert [(c.count, c.size, c.payload) for c in found] == [(1, 2, 4 * table)]
                assert steps[loads[stage]].embedding_sync > 0
            else:
                assert not found and steps[loads[stage]].embedding_sync == 0
