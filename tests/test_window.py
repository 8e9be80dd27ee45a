"""Sliding-window attention: the spec keys, the FLOPs, the time model and what does not change.

Every expected figure here is computed by hand or by enumerating the (query, key) pairs of a
band mask, never by the functions under test."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from parc import flops, timing
from parc.memory import estimate
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

BASE = """\
tp 2 x dp 4 on nodes(8 gpus, nvlink)
model llama3-8b {{ layers {layers}{model} }}
hardware {{ gpu h100-sxm }}
train {{ seq {seq}, global-batch 16, micro-batch 1 }}
"""


def compiled(model: str = "", seq: int = 8192, checks: bool = False, layers: int = 4):
    return compile_text(BASE.format(model=model, seq=seq, layers=layers), path="w.par", checks=checks)


def plan_of(model: str = "", seq: int = 8192, layers: int = 4):
    result = compiled(model, seq, layers=layers)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def band_pairs(seq: int, window: int) -> int:
    """(query, key) pairs a window allows, by enumeration: key in (query - window, query]."""
    return sum(1 for i in range(seq) for j in range(seq) if i - window < j <= i)


# --- the language -----------------------------------------------------------------------------

def test_windowed_layers_follow_megatrons_skip_rule():
    # 1-based layers 2 and 4 keep full attention (window_attn_skip_freq 2; gpt-oss's layer_types
    # "sliding, full, sliding, full"): 0-based 0 and 2 are windowed
    plan = plan_of(", window 128, full-attention-every 2")
    assert plan.model.window == 128
    assert plan.model.windowed_layers == (0, 2)
    assert plan_of(", window 128").model.windowed_layers == (0, 1, 2, 3)
    # Gemma 3's 5 local : 1 global over 12 layers: 1-based 6 and 12 are global
    plan = plan_of(", window 1024, full-attention-every 6", layers=12)
    assert plan.model.windowed_layers == (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)
    assert plan_of("").model.windowed_layers == ()


@pytest.mark.parametrize(("model", "seq", "code"), [
    (", window 0", 8192, "E0207"),
    (", full-attention-every 0, window 8", 8192, "E0207"),
    (", full-attention-every 2", 8192, "E0212"),
    (", window 8192", 8192, "W0241"),
    (", window 9000", 8192, "W0241"),
    (", window 8, full-attention-every 1", 8192, "W0241"),
])
def test_diagnostics(model, seq, code):
    result = compiled(model, seq, checks=True)
    found = [d for d in result.diagnostics if d.code == code]
    assert found, [d.code for d in result.diagnostics]
    assert found[0].span is not None and found[0].span.line == 2 and found[0].help


def test_a_window_shorter_than_seq_is_clean():
    result = compiled(", window 8191, full-attention-every 2", 8192, checks=True)
    assert not [d for d in result.diagnostics if d.code in ("W0241", "E0212", "E0207")]


def test_explain_json_adds_the_window_fields():
    from parc.explain import build_report

    report = json.loads(json.dumps(build_report(compiled(", window 128, full-attention-every 2", checks=True))))
    assert (report["window"], report["full_attention_every"], report["windowed_layers"]) == (128, 2, 2)


# --- FLOPs ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("seq", "window"), [(8, 3), (8, 1), (8, 8), (8, 20), (13, 5), (64, 16)])
def test_dropped_entries_match_the_band_mask(seq, window):
    causal = seq * (seq + 1) // 2
    assert causal - flops.window_dropped_entries(seq, window) == band_pairs(seq, window)
    if seq >= window:  # the closed form of the task: S W - W (W - 1) / 2
        assert band_pairs(seq, window) == seq * window - window * (window - 1) // 2


def test_a_window_at_least_seq_is_the_causal_mask():
    for seq in (1, 7, 4096):
        assert flops.windowed_keys(seq, seq) == flops.causal_keys(seq)
        assert flops.windowed_keys(seq, 10 * seq) == flops.causal_keys(seq)


def test_windowed_keys_tend_to_the_window():
    # s / 2 less (s - W)(s - W + 1) / 2s: W - 1/2 - W (W - 1) / 2s, by hand at s = 1024, W = 128
    assert flops.windowed_keys(1024, 128) == pytest.approx(128 - 0.5 - 128 * 127 / 2048, rel=1e-15)


def test_model_flops_drop_by_the_windowed_entries_only():
    seq, window = 8192, 128
    full, every, half = (shape_of(plan_of(m)) for m in ("", f", window {window}", f", window {window}, full-attention-every 2"))
    q = 32 * 128  # llama3-8b: 32 heads of 128
    dropped_per_token = (seq - window) * (seq - window + 1) / 2 / seq
    # 3 x (forward) x 4 q per key, on every windowed layer
    saving = 3 * 4 * q * dropped_per_token
    assert flops.model_flops_per_token(full, seq) - flops.model_flops_per_token(every, seq) \
        == pytest.approx(4 * saving, rel=1e-12)
    # every other layer windowed: exactly half the saving
    assert flops.model_flops_per_token(full, seq) - flops.model_flops_per_token(half, seq) \
        == pytest.approx(2 * saving, rel=1e-12)


# --- the time model ---------------------------------------------------------------------------

def test_a_window_covering_seq_predicts_exactly_the_causal_step():
    full = timing.predict(plan_of("", seq=4096))
    covered = timing.predict(plan_of(", window 4096, full-attention-every 2", seq=4096))
    assert covered.breakdown.step == full.breakdown.step
    assert covered.mfu == full.mfu


def test_a_window_shortens_the_step_and_moves_mfu_with_its_flops():
    full = timing.predict(plan_of(""))
    windowed = timing.predict(plan_of(", window 128"))
    half = timing.predict(plan_of(", window 128, full-attention-every 2"))
    assert windowed.breakdown.step < half.breakdown.step < full.breakdown.step
    assert windowed.model_flops_per_token < half.model_flops_per_token < full.model_flops_per_token


def test_windowed_attention_never_beats_the_peak():
    plan = plan_of(", window 128")
    shape = shape_of(plan)
    hw = timing.hardware_of(plan)
    n = 8192.0
    work = n * flops.attention_core_flops(shape, flops.windowed_keys(8192, 128)) / 2
    full = n * flops.attention_core_flops(shape, flops.causal_keys(8192)) / 2
    cases = [(1, "ring"), (2, "ring"), (4, "ring"), (2, timing.GATHERED_BLOCKS)]
    assert cases
    for cp, flavour in cases:
        forward, backward, _ = timing.flash_attention_seconds(shape, 2, cp, flavour, 8192, n / cp, "flash", hw)
        assert forward >= work / cp / hw.bf16
        assert backward >= flops.FLASH_BACKWARD * work / cp / hw.bf16
        # and the window only ever saves time against the causal charge of the same kernels
        causal = timing.flash_attention_seconds(replace(shape, windowed=()), 2, cp, flavour, 8192, n / cp, "flash", hw)
        assert forward < causal[0] and backward < causal[1]
        assert causal[0] >= full / cp / hw.bf16


def test_window_share_counts_only_layers_the_window_cuts():
    shape = shape_of(plan_of(", window 128, full-attention-every 2"))
    assert timing.window_share(shape, 8192) == 0.5
    assert timing.window_share(shape, 128) == 0.0
    assert timing.window_share(replace(shape, windowed=()), 8192) == 0.0


# --- memory -----------------------------------------------------------------------------------

def test_memory_does_not_change_under_a_window():
    """Flash attention holds no (s x s) tensor: its saved state is q, k, v, the output and the
    log-sum-exp rows, none of which depends on the mask."""
    full, windowed = estimate(plan_of("")), estimate(plan_of(", window 128, full-attention-every 2"))
    assert full is not None and windowed is not None
    assert full.peak_bytes == windowed.peak_bytes
    assert [s.total for s in full.stages] == [s.total for s in windowed.stages]


# --- the targets ------------------------------------------------------------------------------

TARGET = """\
tp 2 x {cp}dp 2 on nodes({gpus} gpus, nvlink)
model llama3-8b {{ layers 4, window 128, full-attention-every 2 }}
hardware {{ gpu h100-sxm }}
target {target}
train {{ seq 4096, global-batch 16, micro-batch 1 }}
"""


def target_plan(target: str, cp: int = 1):
    text = TARGET.format(target=target, cp=f"cp {cp} x " if cp > 1 else "", gpus=4 * cp)
    result = compile_text(text, path="t.par")
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def test_megatron_takes_the_window_as_w_minus_1_keys_before_the_query():
    from parc.backends import job_diagnostics
    from parc.backends.megatron import arguments

    plan = target_plan("megatron")
    args = dict(arguments(plan))
    # Megatron-Core window_size (left, right): 127 keys before the query plus itself = 128
    assert args["--window-size"] == "127,0"
    assert args["--window-attn-skip-freq"] == "2"
    assert not [d for d in job_diagnostics(plan) if d.is_error]
    assert "--window-size" not in dict(arguments(target_plan("megatron").model_copy(
        update={"model": plan.model.model_copy(update={"window": 0, "windowed_layers": ()})})))


def test_torchtitan_says_it_cannot_and_parcs_cp_can():
    """torchtitan has no window (E0610); parc's job runs one under every cp flavour (E0604 is no
    longer reported: tests/test_window_job.py checks the windowed cp attention)."""
    from parc.backends import job_diagnostics

    found = job_diagnostics(target_plan("torchtitan"))
    assert [d.code for d in found if d.is_error] == ["E0610"]
    assert "sliding window" in found[0].message
    assert not [d for d in job_diagnostics(target_plan("torch", cp=2)) if d.is_error]
    assert not [d for d in job_diagnostics(target_plan("torch")) if d.is_error]


# --- published rows ---------------------------------------------------------------------------

def test_published_gpt_oss_rows_state_the_bridges_window():
    """Every gpt-oss row carries Megatron-Bridge's window (gpt_oss_bridge.py: window_size
    (sliding_window - 1, 0) = (127, 0), window_attn_skip_freq 2), and the reader puts it in the
    row's spec: 18 of the 36 layers windowed."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    rows = []
    for name in ("megatron_bridge_25_11.yaml", "megatron_bridge_releases_moe.yaml"):
        rows += [r for r in load_yaml((ROOT / "benchmarks" / "data" / name).read_text())
                 if r["model"]["name"] == "gpt-oss-120b"]
    assert len(rows) >= 16
    for entry in rows:
        assert (entry["model"]["window"], entry["model"]["full_attention_every"]) == (128, 2)
        run = published.row_spec(entry)
        assert isinstance(run, published.Run), run
        plan = compile_text(run.spec, path="row.par", checks=False).plan
        assert plan is not None and plan.model.window == 128
        assert plan.model.windowed_layers == tuple(range(0, 36, 2))


def test_the_editor_explains_the_window_keys():
    from parc.lsp import hover_text

    assert "W - 1" in hover_text("window") and "(in `model`)" in hover_text("window")
    assert "window_attn_skip_freq" in hover_text("full-attention-every")
    assert "sliding window" in hover_text("W0241")


def test_the_formatter_keeps_the_window():
    from parc.fmt import format_document
    from parc.source import SourceFile
    from parc.syntax import parse

    text = BASE.format(layers=4, model=",window   128 ,full-attention-every 2", seq=8192)
    document, errors = parse(SourceFile("w.par", text))
    assert not errors
    formatted = format_document(document)
    assert "  window 128\n  full-attention-every 2\n" in formatted
    plan = compile_text(formatted, path="w.par", checks=False).plan
    assert plan is not None and plan.model.windowed_layers == (0, 2)


# --- context parallelism ----------------------------------------------------------------------

@pytest.mark.parametrize(("distance", "chunk", "window"), [(0, 8, 3), (0, 8, 20), (1, 8, 3), (1, 8, 9), (2, 8, 9),
                                                          (2, 8, 17), (3, 5, 12), (4, 4, 2)])
def test_band_entries_count_the_pairs(distance, chunk, window):
    want = sum(1 for q in range(distance * chunk, (distance + 1) * chunk) for k in range(chunk)
               if 0 <= q - k < window)
    assert timing.band_entries(distance, chunk, window) == want


@pytest.mark.parametrize(("cp", "window"), [(2, 8), (4, 8), (4, 3), (4, 40)])
def test_the_ring_walks_every_chunk_pair_once_and_skips_the_far_ones(cp, window):
    """With unit rates a rank's forward seconds are its pairs of work: summed over the ranks they
    are every (query chunk, earlier key chunk) pair's band once, by brute force."""
    from types import SimpleNamespace

    seq, chunk = 16 * cp, 8
    unit = SimpleNamespace(efficiency=lambda *a: 1.0)
    hw = SimpleNamespace(bf16=1.0, ceiling=1.0, attention_ceiling=((128, 1.0, 1.0),), achievable=1.0, generation="unit",
                         exp_scale=1.0)  # no exponential floor: pure rates
    kernel = timing.AttentionKernel(score_flops=4 * 64, head_dim=64, sustained=1.0)
    ranks = [timing.windowed_ring_rank(r, cp, seq, window, 1.0, unit, kernel, hw) for r in range(cp)]

    def pairs(i, j):
        count = sum(1 for q in range(i * chunk, (i + 1) * chunk) for k in range(j * chunk, (j + 1) * chunk)
                    if 0 <= q - k < window)
        return count * chunk / (chunk + 1) if i == j else count

    want = sum(pairs(i, j) for i in range(2 * cp) for j in range(i + 1))
    assert sum(f for f, _, _ in ranks) == pytest.approx(want, rel=1e-12)
    # a step runs a kernel only if its chunks are within the window: W <= chunk leaves the own
    # step and the neighbours' (zig-zag: rank r's chunks touch ranks r - 1 and r + 1)
    if window <= chunk:
        assert [k for _, _, k in ranks] == [min(cp, 2) if r in (0, cp - 1) else min(cp, 3) for r in range(cp)] \
            or cp == 2


@pytest.mark.parametrize(("every", "cp", "seq", "window", "launched"), [
    ("", 4, 32, 3, 3.0),  # every layer windowed: the busiest rank runs 3 of its 4 steps
    (", full-attention-every 2", 4, 32, 3, 3.5),  # half the layers full (4 kernels), half 3
    ("", 2, 32, 12, 2.0),  # no step outside the window: both steps launch
])
def test_a_skipped_ring_step_launches_no_kernel(every, cp, seq, window, launched):
    """The ring's kernel launches on a windowed layer count only the steps that do work; by hand
    for cp 4, seq 32 (chunks of 4 tokens, rank r holds chunks r and 7 - r), W 3 (a query reaches
    2 keys back): rank 1 (chunks 1, 6) needs its own K/V, rank 0's (chunk 0 before chunk 1) and
    rank 2's (chunk 5 before chunk 6), not rank 3's (chunks 3, 4: 2 and more tokens too far from
    chunk 6, after chunk 1): 3 kernels; ranks 0 and 3 need 2 (their own and one neighbour's), and
    rank 1 has the most work. Each launch costs `kernel_overhead` in the forward and the backward
    (read off as the attention seconds' slope in it); the K/V exchange stays (every step still
    sends). The same layer without a window launches cp kernels."""
    from parc.calibration import DEFAULT

    shape = shape_of(plan_of(f", window {window}{every}"))
    hw = timing.hardware_of(plan_of())
    more = replace(DEFAULT, kernel_overhead=DEFAULT.kernel_overhead + 1e-3)

    def work(s, c):
        return timing.layer_work(s, timing.LayerCase(moe=False, tp=1, sp=False, cp=cp, flavour="ring", seq=seq,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused", cp_runtime="parc"), hw, c)

    for s, want in ((shape, launched), (replace(shape, windowed=()), float(cp))):
        base, slower = work(s, DEFAULT), work(s, more)
        assert slower.attention_f - base.attention_f == pytest.approx(want * 1e-3, rel=1e-9)
        assert slower.attention_b - base.attention_b == pytest.approx(want * 1e-3, rel=1e-9)
    windowed, causal = work(shape, DEFAULT), work(replace(shape, windowed=()), DEFAULT)
    assert causal.launches_f - windowed.launches_f == pytest.approx(cp - launched)
    assert causal.launches_b - windowed.launches_b == pytest.approx(cp - launched)
    assert windowed.cp_bytes == causal.cp_bytes  # the relay still sends every step's K/V


def test_parcs_all_to_all_charges_the_windowed_blocks_of_one_process():
    """Under all-to-all parc's job attends over the whole sequence for heads / cp of the heads
    (`model.local_attention`), so a windowed layer launches the blocks it launches on one
    process: at seq 32, W 8, 4 tiles of 8 rows, each a causal block and, after the first, an
    edge block: 7 kernels (by hand), where the causal layer launches 1."""
    from parc.calibration import DEFAULT

    shape = shape_of(plan_of(", window 8"))
    hw = timing.hardware_of(plan_of())
    more = replace(DEFAULT, kernel_overhead=DEFAULT.kernel_overhead + 1e-3)

    def slope(s, cp, flavour):
        def work(c):
            return timing.layer_work(s, timing.LayerCase(moe=False, tp=1, sp=False, cp=cp, flavour=flavour, seq=32,
                                                         micro=1, ep=1, precision="bf16", attention="flash",
                                                         kernels="fused", cp_runtime="parc"), hw, c)
        return (work(more).attention_f - work(DEFAULT).attention_f) / 1e-3

    assert slope(shape, 2, "all-to-all") == pytest.approx(7.0, rel=1e-9)
    assert slope(shape, 1, "ring") == pytest.approx(7.0, rel=1e-9)
    assert slope(replace(shape, windowed=()), 2, "all-to-all") == pytest.approx(1.0, rel=1e-9)


def test_parcs_all_gather_launches_each_chunks_band():
    """parc's all-gather cp runs each query chunk's band (`gathered_blocks(..., window)` in the
    generated parallel.py): at cp 2, seq 32 (chunks of 8), W 3, rank 1 (chunks 1 and 2) launches
    8 + 7 = 15 kernels and rank 0 (chunks 0 and 3) 6 + 7 = 13 (tiles counted by hand in
    tests/test_gathered_attention.py), so the layer is charged 15 launches each way, where the
    causal layer launches its 4 gathered blocks (rank 1: an unmasked and a causal block per
    chunk). Read off as the attention seconds' slope in `kernel_overhead`."""
    from parc.calibration import DEFAULT

    shape = shape_of(plan_of(", window 3"))
    hw = timing.hardware_of(plan_of())
    more = replace(DEFAULT, kernel_overhead=DEFAULT.kernel_overhead + 1e-3)

    def work(s, c):
        return timing.layer_work(s, timing.LayerCase(moe=False, tp=1, sp=False, cp=2, flavour="all-gather", seq=32,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused", cp_runtime="parc"), hw, c)

    for s, want in ((shape, 15.0), (replace(shape, windowed=()), 4.0)):
        base, slower = work(s, DEFAULT), work(s, more)
        assert slower.attention_f - base.attention_f == pytest.approx(want * 1e-3, rel=1e-9)
        assert slower.attention_b - base.attention_b == pytest.approx(want * 1e-3, rel=1e-9)


def test_parcs_all_gather_window_bytes_by_hand():
    """The bookkeeping bytes of a windowed all-gather layer at cp 2, seq 32, W 3, 16 tokens on the
    rank, widths q = kv = 1. The busiest rank (1) runs chunk 1 (positions 8-15) as tiles [8, 9)
    whole (keys 6-7) + causal, [9, 12) and [12, 15) edge (2 rows, 2 keys) + causal (3, 3),
    [15, 16) whole (keys 13-14) + causal: 14 block-rows, 16 block-keys; chunk 2 (16-23) as
    [16, 18) whole (2 rows, key 15) + edge (1, 1) + causal (2, 2), [18, 21) and [21, 24) edge +
    causal: 15 block-rows, 14 block-keys; 9 edge rows. Forward: stack 32 x 4, reorder 64 x 8,
    zeroed accumulator 16 x 4, merges 26 x 29, cast 16 x 6, edge flips 9 x 16 = 1698. Backward:
    dQ zeroed 16 x 4, += 10 x 29, cast 16 x 6, dK/dV zeroed and cast 64 x 10, += 10 x 2 x 30,
    reorder and stack again 64 x 8 + 32 x 4, edge flips 9 x 32 = 2618."""
    assert timing.gathered_window_bytes(2, 32, 3, 16, 1, 1) == (1698, 2618)


def test_a_skipped_ring_step_merges_nothing():
    """parc's ring merges a step's block into the accumulators only when the step runs: at cp 4,
    seq 32, W 3 the busiest rank runs 3 of its 4 steps (test_a_skipped_ring_step_launches_no_kernel),
    so the forward merges on 1 + 0.75 x 2 = 2.5 rank-rows of the 26-byte merge, not 1 + 0.75 x 3:
    with 8 tokens and widths 1, forward 8 x (4 + 26 x 2.5 + 6) + 16 x 4 = 664 (820 with every
    step), backward 8 x (4 + 10 x 2.5 + 6) + 16 x (4 x 4 + 10 x 2.5 + 10 x 3 + 6 x 4 + 4) = 1864.
    In the layer, the windowed layer's ring bytes are the causal layer's less 26 x 0.75 x n q
    forward (n = 8 tokens, q = 32 heads x 128), read off as the attention seconds' slope in
    1 / hbm_efficiency."""
    from parc.calibration import DEFAULT

    assert timing.ring_bytes("parc", "eager", 4, 8, 1, 1, run=3) == (664, 1864)
    assert timing.ring_bytes("parc", "eager", 4, 8, 1, 1)[0] == 820
    shape = shape_of(plan_of(", window 3"))
    hw = timing.hardware_of(plan_of())
    slower = replace(DEFAULT, hbm_efficiency=DEFAULT.hbm_efficiency / 2)

    def bytes_f(s):
        def work(c):
            return timing.layer_work(s, timing.LayerCase(moe=False, tp=1, sp=False, cp=4, flavour="ring", seq=32,
                                                         micro=1, ep=1, precision="bf16", attention="flash",
                                                         kernels="fused", cp_runtime="parc"), hw, c)
        return (work(slower).attention_f - work(DEFAULT).attention_f) * hw.hbm * DEFAULT.hbm_efficiency

    assert bytes_f(replace(shape, windowed=())) - bytes_f(shape) == pytest.approx(26 * 0.75 * 8 * 32 * 128,
                                                                                   rel=1e-9)
