"""The gathered (unsharded) parameters FSDP2 holds at a pipeline stage's peak, counted by hand.

Under pipelining the job turns `reshard_after_forward` off (zero2 in any case), so every layer
of a stage stays gathered from its first forward to the step's last backward: at the peak the
stage holds its sharded fp32 parameters plus one unsharded compute copy of each of its
parameters. parc's own job runs `precision fp8` as bf16 (W0601: no torchao), so those copies
are bf16, 2 bytes each; only torchtitan's float8 all-gathers 1-byte weights. The model counted
the matmul weights' copies at 1 byte for parc's job too, which left it 5.6 GiB (the 15 layers'
halves) under the rehearsal of the published Llama 3 405B 1F1B row at full depth
(docs/memory-model.md, section 7). One layer per stage at the row's widths shows the same.
"""

from __future__ import annotations

import pytest

from .test_rehearse import published_row_spec

ROW = "titan2412_t5_1f1b"  # tp 8 x dp 8 x pp 8, zero2, 1f1b, precision fp8, target torch


def compiled(layers_per_stage: int):
    from parc.pipeline import compile_text

    result = compile_text(published_row_spec(ROW, layers_per_stage), f"{ROW}.par")
    assert result.ok, [d.message for d in result.diagnostics]
    return result.plan


def first_stage_gathered_by_hand(plan, layers: int) -> int:
    """Rank 0 (pipeline stage 0): the embedding's tp shard (vocab / tp rows of h) and each
    layer's tp shards (q and o: h x h / tp each; k and v: h x kv_heads x head_dim / tp each;
    SwiGLU's three: h x F / tp each) plus its two RMSNorm weights (h each, replicated over tp),
    in bf16, 2 bytes an element."""
    m, tp = plan.model, plan.layout.tp.degree
    h, kv = m.hidden, m.kv_heads * m.head_dim
    layer = (2 * h * h + 2 * h * kv + 3 * h * m.ffn) // tp + 2 * h
    embedding = m.vocab * h // tp
    return 2 * (embedding + layers * layer)


def model_gathered(plan) -> int:
    """The model's parameters held at stage 0's peak less its sharded parameters (the
    rehearsal's "parameters" category, model states)."""
    from parc.memory import estimate
    from parc.rehearse import predicted

    stage = estimate(plan).stages[0]
    return stage.params - predicted(plan, 0, 0)["parameters"]


@pytest.mark.parametrize("layers", [1, 15])
def test_the_model_holds_every_layer_gathered_in_bf16_under_parcs_fp8_job(layers):
    plan = compiled(layers)
    assert plan.training.precision == "fp8"
    assert model_gathered(plan) == first_stage_gathered_by_hand(plan, layers)


def test_torchtitans_float8_gathers_the_matmul_weights_in_one_byte_only_where_it_did():
    """Under `target torchtitan { float8-all-gather on }` (the 2024 row's config set torchao's
    `enable_fsdp_float8_all_gather`) the matmul weights' copies are 1 byte, the norms and the
    embedding 2; torchtitan 0.3's rowwise float8, without the option, gathers bf16."""
    from parc.memory.inputs import Knobs

    assert Knobs(1, 1, 1, precision="fp8", model_code="torchtitan", fp8_all_gather=True).copy_precision == "fp8"
    assert Knobs(1, 1, 1, precision="fp8", model_code="torchtitan").copy_precision == "bf16"
    assert Knobs(1, 1, 1, precision="fp8", model_code="parc").copy_precision == "bf16"
    assert Knobs(1, 1, 1, precision="fp8", runtime="megatron").copy_precision == "fp8"
    assert Knobs(1, 1, 1, precision="fp32").copy_precision == "fp32"


@pytest.mark.slow
def test_the_rehearsed_peak_holds_the_hand_counted_gathered_parameters():
    """One layer per stage at the row's widths, rank 0 rehearsed (about 30 s): torch's memory
    tracker's unsharded parameters and all-gather outputs at the step's peak are the hand count,
    and so is the model's figure."""
    from parc.backends.torch import job_files
    from parc.rehearse import replay_limit, replay_policy, run

    plan = compiled(1)
    records = run(job_files(plan), 0, False, None, 3600, replay_limit(plan), replay_policy(plan))
    [record] = records
    peak = record.get("step_peak_fused_norm", record["step_peak"])
    hand = first_stage_gathered_by_hand(plan, 1)
    assert peak["gathered_parameters"] == hand, (peak["gathered_parameters"], hand)
    assert model_gathered(plan) == hand


def test_the_float8_all_gather_leaves_the_routed_experts_in_bf16():
    """torchao's float8 all-gather covers its Float8Linear layers; torchtitan's routed experts are
    grouped weights it does not convert: their gathered copies and their FSDP2 gathers stay bf16,
    typed by hand (the linears 1 byte, the experts, norms and embedding 2)."""
    from parc import timing
    from parc.memory.inputs import Knobs
    from parc.memory.parameters import Params
    from parc.memory.states import compute_copy_bytes

    assert compute_copy_bytes(Params(linear=1000, other=30, expert=600), "fp8") == 1000 + 2 * (600 + 30)
    assert compute_copy_bytes(Params(linear=1000, other=30, expert=600), "bf16") == 2 * 1630
    lk = timing.Link(size=8, ring=1e9, near=1e9, far=1e9, local=8, latency=0.0)
    r = timing.RankTimes(forward=1.0, backward_input=1.0, backward_weight=1.0, recompute=0.0,
                         exposed_f=(0.0,) * 4, exposed_b=(0.0,) * 4, sent=(0.0,) * 4,
                         params_dense=1030, params_expert=600, params_other=30, layers=3, moe_layers=3)
    k = Knobs(tp=1, pp=1, dp=8, ep=2, microbatches=1, sharding="zero3")
    ledger = timing.dp_ledger(r, k, timing.DpLinks(lk, lk, lk, lk), 4, "torch", 1)
    gathered = sum(c.count * c.payload for c in ledger if c.kind == "all_gather" and c.window == "forward")
    assert ledger and gathered == (1 * 1000 + 2 * 30) + 2 * 600
