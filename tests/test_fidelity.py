"""benchmarks/fidelity.py: the published runs as specs, their conventions, the fit, the document.

The calibration data lives in the repository (benchmarks/data/published.yaml, a copy of the
project's calibration rows); nothing here reads ../shared.
"""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys

import pytest
from parc.calibration import DEFAULT, EAGER_FITTED, FITTED_NAMES, TIME_MODEL_SPREAD

from .conftest import ROOT, load_yaml

SCRIPT = ROOT / "benchmarks" / "fidelity.py"


@pytest.fixture(scope="module")
def fidelity():
    spec = importlib.util.spec_from_file_location("fidelity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fidelity"] = module  # its dataclasses resolve their module by name
    spec.loader.exec_module(module)
    assert module.PUBLISHED.exists(), "benchmarks/data/published.yaml is needed"
    # the leave-one-source-out fits depend on the rows alone (each fit starts from fixed values,
    # not from the stored constants): the document's table and the out-of-sample test share them
    fits: dict[tuple, list] = {}
    refit = module.held_out_errors

    def held_out_errors(rows, prepared, base=module.DEFAULT):
        key = (tuple((r.id, r.spec, r.fitted) for r in rows), base)
        if key not in fits:
            fits[key] = refit(rows, prepared, base)
        return fits[key]

    module.held_out_errors = held_out_errors
    return module


@pytest.fixture(scope="module")
def rows(fidelity):
    rows, skipped = fidelity.load_rows()
    return rows, skipped, [fidelity.prepare(r) for r in rows]


def test_every_run_compiles_through_the_front_end(rows):
    evaluated, skipped, _ = rows
    assert len(evaluated) == 53 and len(skipped) == 2
    assert all("not published" in s.reason for s in skipped)
    for r in evaluated:
        assert r.plan is not None and r.plan.cluster.world_size == r.gpus, r.id
        rack = "gpu gb200-nvl72" in r.spec  # 4 GPUs a tray, one NVLink domain over the rack
        assert (f"on nodes({min(4, r.gpus)} gpus, nvl72)" if rack else f"on nodes({min(8, r.gpus)} gpus, nvlink)") \
            in r.spec, r.id


def test_unstated_fields_are_listed_as_assumptions(rows):
    evaluated, _, _ = rows
    by_id = {r.id: r for r in evaluated}
    megatron = by_id["megatron_readme2024_462B"]
    assert any("ffn 4h" in a for a in megatron.assumptions)
    assert any("zero1" in a for a in megatron.assumptions)
    assert "sharding zero1" in megatron.spec and "schedule 1f1b" in megatron.spec
    assert megatron.software.attention == "flash-te" and megatron.software.tp_overlap == "all"
    narayanan = by_id["narayanan21_t1_1T"]
    assert narayanan.software.attention == "unfused" and narayanan.software.tp_overlap == "none"
    assert "recompute full" in narayanan.spec and "sequence-parallel off" in narayanan.spec
    assert not by_id["korthikanti22_530B_2240gpu_selective_sp"].fitted


def test_korthikanti_conventions_agree_with_the_transcribed_step_times(fidelity, rows):
    """Eq. 7 model FLOPs / (step x GPUs x 312) reproduces the reported MFU: the formula is right."""
    evaluated, _, _ = rows

    data = {e["id"]: e for e in load_yaml(fidelity.PUBLISHED.read_text())}
    checked = 0
    for r in evaluated:
        out = data[r.id]["outcomes"]["reported"]
        if r.convention == "MFU (Korthikanti)" and "mfu_pct" in out and "step_time_s" in out:
            mfu = r.conv_flops / (out["step_time_s"] * r.gpus * 312e12)
            assert mfu == pytest.approx(out["mfu_pct"] / 100, rel=0.03), r.id
            checked += 1
    assert checked == 4


def test_narayanan_convention_reproduces_the_aggregate(fidelity):
    # 1T: 163 TFLOP/s per GPU on 3,072 GPUs = 502 PFLOP/s; Eq. 3 at the published batch gives
    # the FLOPs per step, so the implied step is ~103 s (Narayanan et al. 2021, Table 1)
    import published

    d = published.Dims(layers=128, hidden=25600, ffn=102400, heads=160, kv_heads=160, head_dim=160, vocab=51200,
                       seq=2048, swiglu=False, tied=True)
    flops = 3072 * published.narayanan_hfu(d)
    assert flops / (163e12 * 3072) == pytest.approx(102.6, rel=0.01)


def test_accuracy_on_the_published_runs(fidelity, rows):
    """In sample, reported in docs/time-model.md and only sanity-checked here (the fit saw these
    runs; the out-of-sample tests below are the measure): median |error| under 5 %, no run off
    by more than a quarter."""
    evaluated, _, prepared = rows
    results = fidelity.evaluate(evaluated, prepared, DEFAULT)
    fitted = [abs(x.error) for x in results if x.row.fitted]
    assert fitted
    assert statistics.median(fitted) < 0.05
    assert max(fitted) <= 0.25


@pytest.mark.slow
@pytest.mark.xdist_group("leave-one-source-out")
def test_each_source_is_predicted_by_a_fit_without_it(fidelity, rows):
    """Out of sample, the measure of the fit (in the default run: the in-sample test above is only
    a sanity check): the constants fitted without a source predict its runs with median |error|
    under 8 % and none beyond 15 % (the issue's targets for held-out runs: 8 % and 20 %). Slow:
    two refits, shared with the document's table (`fidelity` fixture)."""
    evaluated, _, prepared = rows
    held = fidelity.held_out_errors(evaluated, prepared)
    assert len(held) == len(fidelity.HELD_OUT_GROUPS) >= 2
    for group, errors, _ in held:
        assert len(errors) >= 5, group
        assert statistics.median(errors) < 0.08, group
        assert max(errors) < 0.15, group


@pytest.mark.slow
@pytest.mark.xdist_group("leave-one-source-out")
def test_the_written_spread_is_the_one_the_stored_constants_refit_to(fidelity, rows):
    """`TIME_MODEL_SPREAD` is the leave-one-source-out spread recomputed from the stored
    constants (`--write` once leaves a consistent tree: the band is fitted with the refitted
    attention and eager constants as `base`, not the ones imported before the write). Shares
    the refits with the test above (`fidelity` fixture); test_ranking's fast partner checks
    the band against the document's table."""
    evaluated, _, prepared = rows
    held = fidelity.held_out_errors(evaluated, prepared, DEFAULT)
    assert held
    assert fidelity.loso_spread(held) == TIME_MODEL_SPREAD


def test_the_eager_fit_predicts_each_run_it_did_not_see(fidelity):
    """`eager_efficiency` fitted on all but one of torchtitan's ten eager runs (every row parc's
    runtime facts express, its op-level selective recomputation included) predicts the one left
    out (leave one out), not only the runs it was fitted on: median |error| under 8 % and none
    beyond 15 % (the issue's held-out targets, 8 % and 20 %; measured 2.9 % and 10.6 %, the
    worst Llama 2 70B at one 4K sequence a GPU)."""
    held = fidelity.eager_held_out(DEFAULT)
    assert len(held) == sum(r.fitted for r in fidelity.EAGER_RUNS) == 10
    errors = [abs(error) for _, error in held]
    assert statistics.median(errors) < 0.08
    for run_id, error in held:
        assert abs(error) < 0.15, run_id


def test_stored_constants_are_the_fits_optimum(fidelity, rows):
    """Each fitted constant nudged by 2 % either way does not improve the fit (cheap stand-in for
    rerunning the fit: `benchmarks/fidelity.py --write` refits)."""
    evaluated, _, prepared = rows
    use = [(r, p) for r, p in zip(evaluated, prepared, strict=True) if r.fitted]
    rs, ps = [r for r, _ in use], [p for _, p in use]

    def loss(constants):
        errors = fidelity.log_errors(rs, ps, constants)
        return sum(e * e for e in errors) / len(errors)

    best = loss(DEFAULT)
    for name in FITTED_NAMES:
        for factor in (0.98, 1.02):
            nudged = DEFAULT.with_values({name: getattr(DEFAULT, name) * factor})
            assert loss(nudged) >= best - 1e-6, (name, factor)


def test_the_fit_is_deterministic_and_starts_from_fixed_values(fidelity):
    assert set(fidelity.START) >= set(FITTED_NAMES) and set(fidelity.BOUNDS) >= set(FITTED_NAMES)
    quadratic = lambda x: (x[0] - 1.0) ** 2 + 3 * (x[1] + 2.0) ** 2  # noqa: E731
    a, fa = fidelity.nelder_mead(quadratic, [0.0, 0.0])
    b, fb = fidelity.nelder_mead(quadratic, [0.0, 0.0])
    assert a == b and fa == fb
    assert a[0] == pytest.approx(1.0, abs=1e-3) and a[1] == pytest.approx(-2.0, abs=1e-3)
    for name in FITTED_NAMES:
        lo, hi = fidelity.BOUNDS[name]
        assert lo < getattr(DEFAULT, name) < hi, name  # not stuck at a bound
        z = fidelity._to_unit(name, getattr(DEFAULT, name))
        assert math.isclose(fidelity._from_unit(name, z), getattr(DEFAULT, name), rel_tol=1e-9)


def test_parc_runtime_matches_torchtitan_after_the_eager_fit(fidelity):
    """parc's runtime is eager PyTorch: with `eager_efficiency` fitted on torchtitan's eager runs,
    the fitted runs are predicted within a few per cent at the median (measured 2.1 %, worst
    6.3 %); with the Megatron-fitted speed alone (eager_efficiency 1) they would all come out
    over 2 % fast (measured 2.6-13.0 %; 3.8-18.8 % before FSDP2's copies were charged, which
    took part of what the constant had absorbed, docs/time-model.md)."""
    assert 0.5 < DEFAULT.eager_efficiency < 1.0
    _, median, worst = fidelity.eager_table(DEFAULT)
    assert median < 0.05 and worst < 0.08
    fused_speed = DEFAULT.with_values({"eager_efficiency": 1.0})
    fitted = [run for run in fidelity.EAGER_RUNS if run.fitted]
    assert len(fitted) == 10
    for run in fitted:
        plans = fidelity.eager_plans(run)
        assert fidelity.eager_predicted(plans, fused_speed)[0] > 1.02 * run.reported, run.id


def test_stored_eager_efficiency_is_the_fits_optimum(fidelity):
    runs = [(r, fidelity.eager_plans(r)) for r in fidelity.EAGER_RUNS if r.fitted]

    def loss(constants):
        errors = [math.log(fidelity.eager_predicted(plans, constants)[0] / r.reported) for r, plans in runs]
        return sum(e * e for e in errors)

    best = loss(DEFAULT)
    for factor in (0.98, 1.02):
        assert loss(DEFAULT.with_values({"eager_efficiency": DEFAULT.eager_efficiency * factor})) >= best - 1e-9
    assert EAGER_FITTED == ("eager_efficiency",)


def test_megatron_rows_are_predicted_with_fused_kernels(fidelity, rows):
    """The eager constant never touches the published Megatron-LM runs the other constants fit."""
    evaluated, _, prepared = rows
    assert all(r.software.kernels == "fused" for r in evaluated)
    slow = DEFAULT.with_values({"eager_efficiency": 0.5})
    for r, p in list(zip(evaluated, prepared, strict=True))[:3]:
        assert fidelity.predicted_step(r, p, slow).step == fidelity.predicted_step(r, p, DEFAULT).step


@pytest.mark.slow
@pytest.mark.xdist_group("leave-one-source-out")
def test_the_document_is_current(fidelity):
    """docs/time-model.md is the script's output for the stored constants (regenerate with --write;
    slow: the leave-one-source-out table refits twice)."""
    text = (ROOT / "docs" / "time-model.md").read_text()
    assert text == fidelity.generate(DEFAULT), "stale: run `.venv/bin/python benchmarks/fidelity.py --write`"


def test_a_published_table_never_fitted_on(fidelity):
    """Megatron-Bridge's published rows (benchmarks/data/, never fitted, so out of sample): every
    row is read and predicted, and every dense Llama row on every GPU (H100, B200, GB200: 8 rows,
    not a chosen few) comes within 25 %, their median within 15 % (docs/time-model.md shows them
    all, the MoE runs far off included)."""
    import statistics

    rows, skipped = fidelity.load_rows(fidelity.BRIDGE)
    assert not skipped and len(rows) == 16
    results = fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], DEFAULT)
    assert len(results) == 16 and all(math.isfinite(x.error) for x in results)
    dense = [abs(x.error) for x in results if not x.row.plan.model.experts]
    assert len(dense) == 8
    assert statistics.median(dense) < 0.15 and max(dense) < 0.25


def test_stored_attention_sustained_is_its_fits_optimum(fidelity, rows):
    """`attention_sustained` nudged by 2 % either way does not improve its fit on NeMo's
    long-sequence rows (all of them: the group's row count is the one the doc states), and it is
    a real slowdown, inside its bounds."""
    evaluated, _, prepared = rows
    use = [(r, p) for r, p in zip(evaluated, prepared, strict=True) if r.group == fidelity.LONG_SEQUENCE_GROUP]
    assert len(use) == fidelity.LONG_SEQUENCE_ROWS == 9
    assert not any(r.fitted for r, _ in use)  # partial rows: never in the GEMM fit
    rs, ps = [r for r, _ in use], [p for _, p in use]

    def loss(constants):
        errors = fidelity.log_errors(rs, ps, constants)
        return sum(e * e for e in errors) / len(errors)

    best = loss(DEFAULT)
    for factor in (0.98, 1.02):
        nudged = DEFAULT.with_values({"attention_sustained": DEFAULT.attention_sustained * factor})
        assert loss(nudged) >= best - 1e-6, factor
    lo, hi = fidelity.BOUNDS["attention_sustained"]
    assert lo < DEFAULT.attention_sustained < hi


def test_attention_sustained_removes_the_growth_with_sequence(fidelity, rows):
    """NeMo's long-sequence rows at the kernel benchmarks' speed (attention_sustained 1) grow too
    fast with the sequence (4K to 1M tokens, the issue's held-out pattern); with the fitted
    constant the error no longer grows with the sequence: 1M is within 12 points of 4K (measured
    -3.6 % against +7.2 %: the cp ring's hidden steps hold NCCL's SMs; 7 points before they did)
    and every row within 10 %. (At the benchmarks' speed 1M is 37 points faster than 4K.)"""
    evaluated, _, prepared = rows
    use = [(r, p) for r, p in zip(evaluated, prepared, strict=True) if r.group == fidelity.LONG_SEQUENCE_GROUP]
    assert use
    rs, ps = [r for r, _ in use], [p for _, p in use]
    benchmark = fidelity.evaluate(rs, ps, DEFAULT.with_values({"attention_sustained": 1.0}))
    fitted = fidelity.evaluate(rs, ps, DEFAULT)
    assert benchmark[-1].error - benchmark[0].error > 0.35
    assert abs(fitted[-1].error - fitted[0].error) < 0.12
    assert all(abs(x.error) < 0.1 for x in fitted)


def test_attention_sustained_holds_on_torchtitans_long_sequences(fidelity):
    """Out of sample: torchtitan's context-parallel rows (FlashAttention-2 through torch's SDPA,
    torch's context parallelism, torchao's float8: another source, runtime and kernel, never
    fitted) with the constant fitted on NeMo's rows: median |error| under 15 % (at the kernel
    benchmarks' speed, over 30 %)."""
    long_rows = [r for r in fidelity.EAGER_RUNS if r.compiled and r.seq >= 32768]
    assert len(long_rows) == 4

    def median_error(constants):
        return statistics.median(abs(fidelity.eager_predicted(fidelity.eager_plans(r), constants)[0] / r.reported - 1)
                                 for r in long_rows)

    assert median_error(DEFAULT) < 0.15
    assert median_error(DEFAULT.with_values({"attention_sustained": 1.0})) > 0.3


def test_torchtitans_h200_rows_never_fitted(fidelity):
    """torchtitan's June 2025 H200 baseline (Llama 3.1 8B on 4 and 8 hosts of 8 H200, compiled,
    Float8 with FSDP's float8 all-gather, per-op SAC, local batch 2; another part than any
    fitted run): the rows are the source's, typed here (tokens/s per GPU 10,938 and 10,753),
    their specs state what the source's command line states, and each is predicted within 5 %
    (measured: -1.2 % and +0.5 %)."""
    rows = {r.id: r for r in fidelity.EAGER_RUNS if r.gpu == "h200"}
    assert sorted(rows) == ["llama3_8b_32xH200_ac_op_compile_fp8", "llama3_8b_64xH200_ac_op_compile_fp8"]
    assert [rows[i].reported for i in sorted(rows)] == [10938, 10753]
    for run in rows.values():
        assert not run.fitted and run.compiled and run.precision == "fp8" and run.float8_all_gather
        spec = run.spec("8 x 400 Gb/s")
        assert "float8-all-gather on" in spec and "compile on" in spec and "gpu h200" in spec
        assert "micro-batch 2" in spec and "seq 8192" in spec and "recompute selective" in spec
        predicted = fidelity.eager_predicted(fidelity.eager_plans(run), DEFAULT)[0]
        assert abs(predicted / run.reported - 1) < 0.05, run.id


def test_public_papers_never_fitted(fidelity):
    """benchmarks/data/published_public.yaml (Llama 3, MT-NLG, BLOOM, OPT, PyTorch FSDP, MegaScale,
    torchtitan; never fitted): every row is read and predicted, or left out for what it states (OPT-175B's
    batch in tokens, the FSDP paper's TFLOPS without their FLOP count);
    the transcription agrees with figures typed here from the sources, one published column checked
    against another through each source's own FLOP count; and the rows that run the model their spec
    states on Megatron-LM (MegaScale's baseline) and torchtitan's 4D rows stay close."""
    import public_check

    rows, skipped = fidelity.load_rows(public_check.PUBLIC)
    assert [s.id for s in skipped] == ["opt_175b_992gpu_fsdp_tp8", "pytorch_fsdp_gpt175b_512gpu_batch1",
                                       "pytorch_fsdp_gpt175b_512gpu_batch2"] and len(rows) == 35
    assert all("not published" in s.reason or "`unspecified`" in s.reason for s in skipped)
    by_id = {r.id: r for r in rows}

    # Llama 3, Table 4: TFLOPs/GPU 430, 400, 380 and BF16 MFU 43 %, 41 %, 38 % of H100's 989
    for rid, tflops, mfu in (("llama3_405b_8192gpu_tp8_pp16_dp64_8k", 430, 43),
                             ("llama3_405b_16384gpu_tp8_pp16_dp128_8k", 400, 41),
                             ("llama3_405b_16384gpu_tp8_cp16_pp16_dp8_128k", 380, 38)):
        assert by_id[rid].reported_tflops == tflops and abs(tflops / 989 - mfu / 100) < 0.006
    llama = by_id["llama3_405b_8192gpu_tp8_pp16_dp64_8k"].spec
    assert "tp 8 x dp 64 x pp 16" in llama and "network 8 x 400 Gb/s" in llama and "recompute none" in llama
    assert "global-batch 2048" in llama  # DP 64 x 32 sequences per DP group
    long = by_id["llama3_405b_16384gpu_tp8_cp16_pp16_dp8_128k"].spec
    assert "tp 8 x cp 16 x dp 8 x pp 16" in long and "flavour all-gather" in long and "seq 131072" in long

    # MT-NLG: batch 1920, iteration 60.1 / 50.2 / 44.4 s, 126 / 121 / 113 TFLOP/s; Narayanan et
    # al.'s Eq. 3 (recomputation counted, vocabulary 51,200) turns the one into the other. The row
    # is compared on what was measured, the iteration time (`reported_tflops`: measured first)
    for gpus, step, tflops in ((2240, 60.1, 126), (2800, 50.2, 121), (3360, 44.4, 113)):
        row = by_id[f"mtnlg_530b_{gpus}gpu"]
        eq3 = 96 * 1920 * 2048 * 105 * 20480 ** 2 * (1 + 2048 / (6 * 20480) + 51200 / (16 * 105 * 20480))
        assert abs(eq3 / step / gpus / 1e12 / tflops - 1) < 0.01
        assert row.reported_from == "reported step time" and row.reported_tflops == pytest.approx(eq3 / step / gpus / 1e12)
        assert "network 8 x 200 Gb/s" in row.spec and "sequence-parallel off" in row.spec
        assert "recompute full" in row.spec and "flash-attention off" in row.spec

    # BLOOM: the run's log line, 105.22 s per iteration at GBS 2048, 149.02 TFLOPs
    bloom = by_id["bloom_176b_384gpu_tp4_pp12_dp8"]
    eq3 = 96 * 2048 * 2048 * 70 * 14336 ** 2 * (1 + 2048 / (6 * 14336) + 250880 / (16 * 70 * 14336))
    assert abs(eq3 / 105.22 / 384 / 1e12 / 149.02 - 1) < 0.005
    assert bloom.reported_tflops == pytest.approx(149.02, rel=0.005)
    for fact in ("tp 4 x dp 8 x pp 12", "network 4 x 100 Gb/s", "micro-batch 2", "recompute full",
                 "sharding zero1", "split [5, 6, 6", "flash-attention off", "position none"):
        assert fact in bloom.spec, fact

    # MegaScale, Table 2 (Megatron-LM): MFU against A100's 312 TFLOP/s, and the throughput column
    # through PaLM's count (6 N + 12 L H Q T per token, N = 96 x 12 h^2 + V h) gives the same MFU
    palm = 6 * (96 * 12 * 12288 ** 2 + 64000 * 12288) + 12 * 96 * 12288 * 2048
    table2 = ((256, 39.3e3, 53.0), (512, 74.1e3, 49.9), (768, 103.8e3, 46.7), (1024, 132.7e3, 44.7),
              (3072, 433.6e3, 48.7), (6144, 851.6e3, 47.8), (8192, 1027.9e3, 43.3), (12288, 1466.8e3, 41.2))
    for gpus, tokens, mfu in table2:
        row = by_id[f"megascale_megatron_175b_{gpus}gpu"]
        # compared on what was measured (the iteration time; its throughput column agrees), which
        # PaLM's count turns into the published MFU
        assert row.reported_from == "reported step time"
        assert row.reported_tflops == pytest.approx(tokens * palm / gpus / 1e12, rel=0.02)
        assert abs(tokens * palm / gpus / 312e12 * 100 - mfu) < 0.8, gpus
    assert "interleaved-1f1b, virtual-stages 6" in by_id["megascale_megatron_175b_256gpu"].spec

    # torchtitan Table 5: 512 GPUs, FSDP 8 x TP 8 x PP 8, local batch 32, global 256, 500 W; its
    # 405B config of 2024 gathered float8 weights (before torchtitan's rowwise float8)
    titan = by_id["torchtitan_405b_512gpu_3d_1f1b"].spec
    for fact in ("tp 8 x dp 8 x pp 8", "global-batch 256", "power-limit 500 W", "precision fp8",
                 "compile on, float8-all-gather on, tp-overlap all", "recompute full"):
        assert fact in titan, fact

    results = fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], DEFAULT)
    assert all(math.isfinite(x.error) for x in results)
    baseline = [abs(x.error) for x in results if x.row.group == "megascale_2024_megatron"]
    assert len(baseline) == 11 and max(baseline) < 0.25 and statistics.median(baseline) < 0.2
    four_d = [abs(x.error) for x in results if "_4d_" in x.row.id]
    assert len(four_d) == 4 and max(four_d) < 0.1
    # Llama 3's stated FSDP reduces once per step under pipelining (torch's stages); read with
    # Megatron's per-micro-batch contract the 8K rows were -23 % and -28 %
    llama3 = [x for x in results if x.row.group == "llama3_herd_2024_table4"]
    assert len(llama3) == 3 and max(abs(x.error) for x in llama3) < 0.1
    assert all(x.row.software.dp_runtime == "torch" for x in llama3)


def test_public_papers_predictions_stay_within_physics(fidelity):
    """Every public row's plan, as `parc explain` predicts it, satisfies the physical bounds of
    tests/test_bounds.py (FLOPs, HBM traffic, NVLink and NIC bytes over their datasheet rates)."""
    import public_check

    from .test_bounds import assert_within_physics

    rows, _ = fidelity.load_rows(public_check.PUBLIC)
    assert rows
    for r in rows:
        assert_within_physics(r.plan)


def test_torchtitans_selective_op_rows_are_read_under_its_own_policy(fidelity):
    """Every "selective op" row's spec says `target torchtitan`, so it is predicted under
    torchtitan's per-op policy (`timing.TORCHTITAN_OP`), which recomputes more than parc's: each
    such row without tp is predicted slower than under parc's policy (the same plan and
    constants, `Software.selective` "elementwise"), and the eager ones are fitted. Which policy
    reads the published runs better is judged with `eager_efficiency` refitted under each
    (`fit_eager`), never with the constant fitted under torchtitan's alone: torchtitan's fits
    the ten eager rows with the smaller mean squared log error (measured 2026-12-02: 0.0014
    against 0.0038, median |error| 2.4 % against 5.2 %)."""
    from dataclasses import replace

    from parc import timing
    from parc.targets import software_of

    rows = [r for r in fidelity.EAGER_RUNS if r.torchtitan_ac == "selective op"]
    assert sum(r.tp == 1 for r in rows) == 11  # with the two H200 rows
    for run in rows:
        plan = fidelity.eager_plans(run)[0]
        sw = software_of(plan)
        assert plan.target.name == "torchtitan" and sw.selective == timing.TORCHTITAN_OP, run.id
        assert run.fitted == (not run.compiled), run.id
        if run.tp > 1:
            continue
        own = timing.predict(plan, DEFAULT).tokens_per_second_per_gpu
        parcs = timing.predict(plan, DEFAULT, sw=replace(sw, selective="elementwise")).tokens_per_second_per_gpu
        assert own < parcs, run.id
    fitted = [(r, fidelity.eager_plans(r)) for r in fidelity.EAGER_RUNS if r.fitted]
    assert any(r.torchtitan_ac == "selective op" for r, _ in fitted)
    errors = {policy: fidelity.eager_fit_error(fitted, fidelity.fit_eager(DEFAULT, policy), policy)
              for policy in (None, "elementwise")}
    assert errors[None] < errors["elementwise"], errors


def test_independently_transcribed_runs_are_read_as_their_sources_state(fidelity):
    """benchmarks/data/published_more.yaml (stop 61: Nemotron-4 15B, GLM-130B, InternEvo's InternLM-7B
    table, the Megatron-Core MoE README's Mixtral 8x7B; stop 62: DGX Cloud 25.04/25.05, BLOOM's
    pre-launch benchmarks, Megatron-LM's 2021 GPT-3 example, Mixtral at MCore v0.9, DeepSeek-V3's
    GB200 baseline; stop 63: IBM's fms-fsdp table; never fitted): every row is read and
    predicted within physics, and each source's figures agree with one another through its own
    FLOP count, typed here from the sources: Nemotron-4 15B's iteration time and MFU (Table 2),
    GLM-130B's HFU and MFU (43.3 and 32.5 %: its activation recomputation, 4/3), InternEvo's
    tokens/s per GPU and TFLOPS columns (72 l h^2 (1 + s/6h + V/12lh) per token without
    recomputation, 96 with it)."""
    from .test_bounds import assert_within_physics

    rows, skipped = fidelity.load_rows(ROOT / "benchmarks" / "data" / "published_more.yaml")
    assert not skipped and len(rows) == 46
    for r in rows:
        assert_within_physics(r.plan)
    by_id = {r.id: r for r in rows}
    # Nemotron-4 15B, Table 2: 0.57 / 0.58 / 0.64 s and 34.3 / 33.3 / 30.5 % MFU of 989 at 384 / 768 /
    # 1152 sequences of 4,096: the step time the row is compared on gives the MFU within 1 %
    for gpus, mfu in ((768, 34.3), (1536, 33.3), (2304, 30.5)):
        row = by_id[f"nemotron4_15b_{gpus}gpu"]
        assert row.reported_from == "reported step time"
        assert abs(row.reported_tflops / 989 / (mfu / 100) - 1) < 0.012, gpus
    # GLM-130B: HFU 43.3 % over MFU 32.5 % is the recomputed forward's 4/3 (within rounding)
    assert abs(43.3 / 32.5 - 4 / 3) < 0.01 and by_id["glm130b_768gpu"].reported_tflops == pytest.approx(0.325 * 312)
    # InternEvo: TGS x FLOPs per token = the TFLOPS column (3314 -> 193, 2346 -> 105)
    layers, h, s, v = 32, 4096, 2048, 103168
    per_token = 72 * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h))  # model FLOPs per token (Korthikanti)
    for rid, tgs, tflops, recompute in (("internevo_7b_8gpu_ckpt_mb8_mn1", 3314, 193, True),
                                        ("internevo_7b_1024gpu_nockpt_mb2_mn1", 2346, 105, False)):
        counted = per_token * (4 / 3 if recompute else 1)
        assert abs(tgs * counted / 1e12 / tflops - 1) < 0.02, rid
        assert by_id[rid].reported_from == "reported tokens/s per GPU"
    assert by_id["mcore_moe_readme2024_mixtral8x7b_v08"].reported_tflops == 438
    # stop 62. DGX Cloud's 25.04/25.05 tables: tokens/s x step time = global batch x sequence
    # (GBS, seq, step s, tokens/s as the READMEs print them)
    for rid, gbs, seq, step, tokens in (("dgxc2504_h100_llama31_8b_bf16_8", 128, 8192, 12.27, 85459),
                                        ("dgxc2504_h100_nemotron4_340b_fp8_256", 64, 4096, 2.93, 89469),
                                        ("dgxc2505_gb200_nemotron4_340b_bf16_128", 32, 4096, 2.189, 59877)):
        assert abs(tokens * step / (gbs * seq) - 1) < 0.001, rid
        assert by_id[rid].reported_from == "reported step time"
    # BLOOM's pre-launch benchmarks and Megatron-LM's 2021 GPT-3 example: the TFLOP/s column is
    # Narayanan et al.'s Eq. 3 of the iteration time, 96 B s l h^2 (1 + s/6h + V/16lh) / (t N)
    for rid, batch, layers, h, vocab, gpus, t, tflops in (
            ("bloom176b_bench_tp8pp12dp4_mbs2", 2048, 70, 14336, 250880, 384, 121.63, 128.92),
            ("bloom181b_bench_tp8pp2dp24_mbs2", 2016, 72, 14336, 250880, 384, 136.13, 116.58),
            ("bloom177b_bench_tp1pp48dp8_mbs1", 2048, 96, 12288, 250880, 384, 142.17, 111.3),
            ("megatron_gpt3_175b_1024gpu", 1536, 96, 12288, 51200, 1024, 32, 138)):
        s = 2048
        eq3 = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + vocab / (16 * layers * h)) / (t * gpus * 1e12)
        assert abs(eq3 / tflops - 1) < 0.005, rid
    # stop 63. IBM's fms-fsdp table (compared on its tokens/s per GPU): the MFU column is PaLM's count of
    # the same tokens (6 N + 12 l h s per token over the dense peak), within the 10 % IBM's unpublished
    # parameter count leaves (Llama 2 7B: 3,700 tokens/s, 57 % of 312; 70B on H100: 800, 34 % of 989)
    for rid, tokens, mfu, (layers, h, ffn, kv, peak) in (
            ("fms2403_a100_l2_7b", 3700, 0.57, (32, 4096, 11008, 32, 312)),
            ("fms2403_h100_l2_70b", 800, 0.34, (80, 8192, 28672, 8, 989))):
        heads = h // 128
        params = layers * (2 * h * h + 2 * h * kv * (h // heads) + 3 * h * ffn) + 2 * 32000 * h
        palm = tokens * (6 * params + 12 * layers * h * 4096) / (peak * 1e12)
        assert abs(palm / mfu - 1) < 0.1, rid
        assert by_id[rid].reported_from == "reported tokens/s per GPU"
        assert by_id[rid].software.kernels == "eager"  # fms-fsdp names torch's FSDP1: `target torch`
    assert by_id["fms2405_a100_compile_l2_7b"].software.kernels == "fused"  # torch.compile stated
