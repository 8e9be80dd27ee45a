"""benchmarks/gpu_check.py and what its one GPU run measured.

- The kernels it measured on an H200 (torch 2.11's flash attention and cuBLAS;
  benchmarks/data/gpu/h200_kernels.json, as the device printed it) against parc's kernel models,
  which were fitted on other people's published sweeps and training runs, never on this file:
  the fused attention's seconds at every length, the GEMM model at one Llama 3 405B layer's
  product shapes, and what the time model charges parc's job for those products.
- The script's three steps end to end on the CPU (a small spec, the job's `--real-tensors` and
  `--timed-steps` path), and the job's refusal of a rehearsal with no step.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import ROOT

MEASURED = json.loads((ROOT / "benchmarks/data/gpu/h200_kernels.json").read_text())


def h200_plan():
    """specs/llama3-405b.par on the H200 the kernels ran on, as `gpu_check.py prepare` compiles it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check

    plan, _ = gpu_check.compiled("specs/llama3-405b.par", "h200")
    return plan


def test_the_flash_attention_the_model_charges_is_torchs_kernel_on_an_h200():
    """The time model's fused-attention seconds (`timing.flash_attention_seconds`, at the kernel's
    own speed: `sustained` 1) for each case of the sweep (405B at tp 8: 16 query heads on 1 kv head,
    head dim 128, causal, 131,072 tokens per call) against torch's flash kernel timed on an H200.
    The curve behind it was fitted on Dao's published H100 sweep, never on this file. Forward
    within 7 % to 32K tokens and 12 % beyond (the measured forward falls off at 64K-128K, the
    curve saturates), backward within 7 % everywhere."""
    from parc import timing
    from parc.memory.inputs import shape_of

    plan = h200_plan()
    hw, shape = timing.hardware_of(plan), shape_of(plan)
    rows = MEASURED["attention"]
    assert len(rows) == 8
    for row in rows:
        s = row["seq"]
        assert (row["heads"], row["kv_heads"], row["head_dim"]) == (shape.heads // 8, shape.kv_heads // 8,
                                                                     shape.head_dim)
        forward, backward, kernels = timing.flash_attention_seconds(shape, 8, 1, "ring", s, row["batch"] * s,
                                                                    "flash", hw, 1.0)
        assert kernels == 1
        assert forward == pytest.approx(row["forward_s"], rel=0.07 if s <= 32768 else 0.12), s
        assert backward == pytest.approx(row["backward_s"], rel=0.07), s


def test_no_memory_bound_kernel_is_charged_faster_than_the_h200s_copy():
    """The time model runs memory-bound kernels at `hbm_efficiency` of the datasheet's bandwidth
    (a fixed constant, sourced from STREAM-like copies on A100 and H100); a device-to-device copy of
    2 GiB on the H200, counting reads and writes, moved 4.16 TB/s (86.7 % of 4.8): the charged
    rate must stay under what the part's own best memory-bound kernel reaches."""
    from parc import timing
    from parc.calibration import DEFAULT

    hw = timing.hardware_of(h200_plan())
    copy = MEASURED["copy_tb_per_s"] * 1e12
    assert 0.8 < copy / hw.hbm < 0.95  # a sane copy on a 4.8 TB/s part
    one_gib = 2 ** 30
    assert timing.memory_seconds(one_gib, hw, DEFAULT) >= one_gib / copy


def layer_products():
    """(forward, backward) seconds of one 405B layer's seven nn.Linear products as measured (tp 8,
    8,192 tokens; the backward is each product's two GEMMs)."""
    gemms = MEASURED["gemms"]
    assert [g["name"] for g in gemms] == ["wq", "wk", "wv", "wo", "w1", "w3", "w2"]
    assert {g["m"] for g in gemms} == {8192}
    return sum(g["forward_s"] for g in gemms), sum(g["dgrad_s"] + g["wgrad_s"] for g in gemms)


def test_the_gemm_model_at_the_jobs_shapes_is_the_h200s_products():
    """parc's GEMM model (`timing.gemm_seconds`: the fitted Hopper ceiling, intensity and waves,
    fitted on Megatron-LM training runs) at each of the job's seven product shapes, summed over
    the layer, against the measured products: 9.10 ms against 9.33 forward, 18.21 (twice the
    forward's shapes, as the model charges a backward) against 19.22. Within 6 % both ways; the
    model charges the thin K and V projections 1.5-1.6x their time and the others within 12 %,
    so the sum says more than any one product."""
    from parc import timing
    from parc.calibration import DEFAULT

    hw = timing.hardware_of(h200_plan())
    forward, backward = layer_products()
    model = sum(timing.gemm_seconds(g["m"], g["k"], g["n"], "bf16", hw, DEFAULT) for g in MEASURED["gemms"])
    assert model == pytest.approx(forward, rel=0.06)
    assert 2 * model == pytest.approx(backward, rel=0.06)


def test_what_the_time_model_charges_the_jobs_layer_products():
    """What the time model charges parc's job for the same layer's products: `layer_work`'s GEMM
    seconds (its fused QKV and gate/up products, each kernel's launch overhead), slowed by the eager
    runtime's factor (`slowed`: `eager_efficiency`, fitted on whole torchtitan steps, which this
    measurement of bare kernels cannot test): 9.69 ms forward and 19.38 backward against the
    measured 9.33 and 19.22, within 5 %."""
    from parc import timing
    from parc.calibration import DEFAULT
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    plan = h200_plan()
    hw, shape, sw = timing.hardware_of(plan), shape_of(plan), software_of(plan)
    case = timing.LayerCase.of(knobs_of(plan), False, sw)
    assert (case.tp, case.sp, case.seq, case.micro, case.kernels) == (8, True, 8192, 1, "eager")  # the layer measured
    work = timing.slowed(timing.layer_work(shape, case, hw, DEFAULT), sw, DEFAULT)
    forward, backward = layer_products()
    assert work.gemm == pytest.approx(forward, rel=0.05)
    assert 2 * work.gemm == pytest.approx(backward, rel=0.05)  # the input and weight passes: `Work.gemm` each


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """prepare, measure (CPU) and report on tests/data/specs/gpu-check-cpu.par (pipeline, tp, zero3 at
    8,192 ranks; rehearse-8k.par a quarter as wide, since this CPU runs bf16 products ~100x slower than
    fp32: 144 s a step there, 1 s here), the FP8 products divided down to their 16-aligned minimum."""
    here = tmp_path_factory.mktemp("gpu-check")
    script = [sys.executable, str(ROOT / "benchmarks/gpu_check.py")]
    subprocess.run([*script, "prepare", str(here / "cases"), "--spec", "tests/data/specs/gpu-check-cpu.par",
                    "--sweep", "64,128", "--sweep-tokens", "256", "--fp8-divide", "256"], cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run([*script, "measure", str(here / "cases"), str(here / "out"), "--device", "cpu", "--steps", "3"],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    report = subprocess.run([*script, "report", str(here / "cases"), str(here / "out")], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return here, report


def test_the_three_steps_run_on_the_cpu(checked):
    here, report = checked
    cases = json.loads((here / "cases/cases.json").read_text())
    [job] = cases["jobs"]
    assert job["coordinates"]["pp"] == 3  # the time model's slowest stage: the last, with the loss
    assert [g["name"] for g in cases["gemms"]] == ["wq", "wk", "wv", "wo", "w1", "w3", "w2"]
    assert [(g["m"], g["k"], g["n"]) for g in cases["gemms"]][:2] == [(128, 512, 64), (128, 512, 64)]
    [record] = json.loads((here / "out/gpu-check-cpu.json").read_text())
    assert record["rank"] == job["rank"] and record["steps"] == 0
    timings = record["timed_steps"]
    assert len(timings) == 3
    for step in timings:
        assert step["forward_backward"] > 0 and step["optimizer"] > 0
        # the spec clips nothing: the phase is empty, a sliver of the step however loaded the box
        # (an absolute wall-clock bound failed at 4 ms on a loaded 2-core runner)
        assert step["clip"] < 0.05 * step["forward_backward"]
    assert "peak" not in record  # no tracked step: no tracker
    kernels = json.loads((here / "out/kernels.json").read_text())
    assert [a["seq"] for a in kernels["attention"]] == [64, 128]
    assert all(a["forward_s"] > 0 and a["backward_s"] > 0 for a in kernels["attention"])
    assert "| gpu-check-cpu |" in report and "| wq | 128 x 512 x 64 |" in report and "| 128 |" in report
    # the FP8 products of DGXC's six model shapes, divided down for the CPU, in both precisions
    assert len(kernels["fp8"]) == 6
    assert all(g["forward_fp8_s"] > 0 and g["wgrad_bf16_s"] > 0 for case in kernels["fp8"] for g in case["gemms"])
    assert "| GPT-3 175B (4) | the layer |" in report
    # and the chunks Transformer Engine's userbuffers cut them into, timed and reported apart
    chunks = [g for case in kernels["fp8"] for g in case["gemms"] if g.get("chunk_of")]
    assert chunks and all(g["forward_fp8_s"] > 0 and g["forward_bf16_s"] > 0 for g in chunks)
    assert "| GPT-3 175B (4) | proj/4 |" in report


def test_userbuffers_chunks_are_the_products_transformer_engine_launches():
    """Counted by hand from TE 1.10's `comm_gemm_overlap.h` and its default userbuffers config: a
    ring exchange (QKV's and fc1's forward all-gathers) runs tp GEMMs of m / tp input rows
    (`n_chunk = n / _tp_size` of the input B); the pipelined reduce-scatter (the projection's and
    fc2's forward) `num_splits` 4 GEMMs, each on a quarter of the weight A's rows
    (`m_chunk = m / _num_splits`, m = A.size(0)): every token against a quarter of the output
    features. Llama 3.1 70B on DGXC (tp 4, cp 2: 4,096 rows; hidden 8,192) and 405B (tp 8, cp 2;
    hidden 16,384, the release's 16 query groups: QKV (16,384 + 2 x 2,048) / 8 = 2,560 wide): 1,024
    rows at tp 4, 512 at tp 8, and 2,048 and 4,096 output features for the reduce-scatter's
    chunks; none at tp 1."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check

    cases = {case["model"]: case for case in gpu_check.fp8_cases(1)}
    assert cases, "no FP8 row read from DGXC's table"

    def cut(model):
        return {g["name"]: (g["m"], g["k"], g["n"], g["chunk_of"]) for g in cases[model]["gemms"] if g.get("chunk_of")}
    whole = {g["name"]: (g["k"], g["n"]) for g in cases["Llama 3.1 70B"]["gemms"] if not g.get("chunk_of")}
    assert cut("Llama 3.1 70B") == {"qkv/4": (1024, *whole["qkv"], "qkv"), "proj/4": (4096, whole["proj"][0], 2048, "proj"),
                                    "fc1/4": (1024, *whole["fc1"], "fc1"), "fc2/4": (4096, whole["fc2"][0], 2048, "fc2")}
    assert {name: (m, n) for name, (m, _, n, _) in cut("Llama 3.1 405B").items()} == {
        "qkv/8": (512, 2560), "proj/4": (4096, 4096), "fc1/8": (512, 13312), "fc2/4": (4096, 4096)}
    assert not cut("Llama 3.1 8B")  # tp 1: no userbuffers


def test_chunk_table_compares_the_cut_with_the_whole():
    """A chunk measured at exactly its share of the whole product reads 1; one 20 % slower than its
    share reads 1.2; the layer's speed-ups ignore the chunks. The model's own ratio charges the narrower chunk
    no less than the whole (its intensity curve and waves)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check
    from parc import timing
    from parc.calibration import DEFAULT

    whole = dict(name="fc2", m=4096, k=7168, n=8192, forward_bf16_s=1.0e-3, forward_fp8_s=0.5e-3,
                 dgrad_bf16_s=1e-3, dgrad_fp8_s=0.5e-3, wgrad_bf16_s=1e-3, wgrad_fp8_s=0.5e-3)
    chunk = dict(whole, name="fc2/4", n=2048, chunk_of="fc2", forward_bf16_s=0.25e-3, forward_fp8_s=0.15e-3)
    hw = timing.hardware_of(h200_plan())
    cases = [dict(model="M", tp=4, gemms=[whole, chunk])]
    ratios = gpu_check.chunk_table(cases, hw, DEFAULT)["ratios"]
    assert [(r[2], round(r[3], 6)) for r in ratios] == [("bf16", 1.0), ("fp8", 1.2)]
    assert all(r[4] >= 1.0 for r in ratios)
    assert gpu_check.fp8_table(cases, hw, DEFAULT)["speedups"] == [("M", 2.0, pytest.approx(
        gpu_check.fp8_table([dict(model="M", tp=4, gemms=[whole])], hw, DEFAULT)["speedups"][0][2]))]


def test_blockwise_table_reads_the_blockwise_over_the_per_tensor_forward():
    """A blockwise forward twice as slow as per-tensor fp8 reads 2; one that failed is named with
    its error and counts no ratio; the chunks are left to `chunk_table`; an empty list gives no
    ratio at all (the table must not pass by having nothing in it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check

    ran = dict(name="qkv", m=4096, k=8192, n=10240, forward_fp8_s=1e-3, forward_blockwise_s=2e-3)
    failed = dict(name="fc1", m=4096, k=8192, n=28672, forward_fp8_s=1e-3, forward_blockwise_error="no kernel")
    chunk = dict(ran, name="qkv/4", m=1024, chunk_of="qkv")
    table = gpu_check.blockwise_table([dict(model="M", tp=4, gemms=[ran, failed, chunk])])
    assert table["ratios"] == [("M", "qkv", 2.0)]
    assert "failed: no kernel" in table["table"] and "qkv/4" not in table["table"]
    assert gpu_check.blockwise_table([])["ratios"] == []


@pytest.mark.parametrize("argv, says", [
    (["--rehearse", "--steps", "0"], "needs --steps or --timed-steps"),
    (["--timed-steps", "2"], "belong to a rehearsal"),
    (["--real-tensors"], "belong to a rehearsal"),
    (["--rehearse", "--steps", "0", "--timed-steps", "1", "--allocator-trace", "t.bin"], "needs --steps >= 1"),
])
def test_the_rehearsals_options_refuse_what_they_cannot_do(checked, argv, says):
    here, _ = checked
    done = subprocess.run([sys.executable, "train.py", *argv], cwd=here / "cases/jobs/gpu-check-cpu",
                          capture_output=True, text=True)
    assert done.returncode == 2 and says in done.stderr


# ---------------------------------------------------------------------------------------------
# The second run on an H200 (2026-12-04, torch 2.11): parc's own jobs rehearsed with real kernels
# (every collective faked), FP8 products at DGXC's shapes, and the kernels under sustained load.

RUN = ROOT / "benchmarks/data/gpu/h200_2026-12-04"


def rehearsed(constants=None):
    """(job, gpu_check.job_figures) of every rank the H200 rehearsed, under `constants`."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check
    from parc.calibration import DEFAULT

    jobs = json.loads((RUN / "jobs.json").read_text())
    assert len(jobs) == 8
    out = []
    for job in jobs:
        plan, _ = gpu_check.compiled(job["spec"], job["gpu"])
        out.append((job, gpu_check.job_figures(plan, job, job["record"], constants or DEFAULT)))
    return out


def test_the_memory_model_bounds_every_rank_the_h200_ran_from_above():
    """torch's allocator on the GPU (max_memory_allocated, max_memory_reserved) against the memory
    model's peak and predicted reserved bytes of the rank's stage: never under, and at most 20 %
    (allocated) and 15 % (reserved) over. Largest at 2K tokens (+19.6 %, +14.8 %), within 3 % on
    both 405B stages."""
    for job, f in rehearsed():
        record = job["record"]
        assert record["max_memory_allocated"] <= f["model_allocated"] <= 1.2 * record["max_memory_allocated"], job["name"]
        assert record["max_memory_reserved"] <= f["model_reserved"] <= 1.15 * record["max_memory_reserved"], job["name"]
        if job["name"] == "llama3-405b":
            assert f["model_allocated"] <= 1.03 * record["max_memory_allocated"]


def test_the_time_model_against_parcs_own_job_on_an_h200():
    """The rank's forward + backward with real kernels against the time model's compute and
    recomputation of its stage (collectives faked: no communication, no bubble). Both Llama 3 405B
    stages (tp 8, 32 micro-batches of 8K tokens) within 10 %. Llama 3 8B FSDP2 from 2K to 32K
    tokens: the stored `attention_sustained` (fitted on NeMo's long-sequence runs) charges the fused
    attention about 1.7x torch's kernel, which runs at its curve inside this job, so the model
    overstates the job at 16K-32K by 18-31 %; at the kernel's own speed (attention_sustained 1)
    every job from 8K up is within 7 %. The model's side carries FSDP2's copies (`dp_copy_bytes`:
    31 ms a step of the 8B job, 0.26-0.27 s of a 405B stage). Below 8K the job is slower than
    either (2K: -20 %, -23 % at the kernel's speed): a fixed cost per step the model has no term
    for, host time (docs/time-model.md, "Measured on an H200")."""
    from parc.calibration import DEFAULT

    stored = {(job["name"], job["rank"]): f for job, f in rehearsed()}
    at_kernel = {(job["name"], job["rank"]): f for job, f in rehearsed(DEFAULT.with_values({"attention_sustained": 1.0}))}

    def error(f):
        return f["model_compute"] / f["forward_backward"] - 1

    assert abs(error(stored["llama3-405b", 8])) < 0.1 and abs(error(stored["llama3-405b", 120])) < 0.1
    assert error(stored["llama3-8b-fsdp-32k", 0]) > 0.2 and error(stored["llama3-8b-fsdp-16k", 0]) > 0.1
    long = [key for key in at_kernel if not key[0].endswith(("-2k", "-4k"))]
    assert len(long) == 6
    for key in long:
        assert abs(error(at_kernel[key])) < 0.07, key
    assert error(at_kernel["llama3-8b-fsdp-2k", 0]) < -0.2  # the fixed cost per step the model lacks


def test_fp8_speed_up_over_bf16_at_dgxcs_shapes_is_the_h200s():
    """One layer's products (forward, dgrad, wgrad) of each model's first FP8 run in
    dgxc_benchmarking_h100.yaml, timed on the H200 in bf16 and as Transformer Engine runs them in
    fp8 (`torch._scaled_mm`, per-tensor scales): the measured speed-up is 1.86-1.96x, not 2x, and
    the GEMM model's, which writes a bf16 output under fp8 inputs (`timing.OUTPUT_BYTES`), is
    within 3 % of it for every model. Charging the output at one byte gave 1.97-2.00x."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check
    from parc import timing
    from parc.calibration import DEFAULT

    kernels = json.loads((RUN / "kernels.json").read_text())
    plan, _ = gpu_check.compiled("specs/llama3-405b.par", "h200")
    speedups = gpu_check.fp8_table(kernels["fp8"], timing.hardware_of(plan), DEFAULT)["speedups"]
    assert len(speedups) == 6
    for model, measured, parc in speedups:
        assert 1.8 < measured < 2.0, model
        assert abs(parc / measured - 1) < 0.03, model


def test_the_h200_sustains_the_attention_kernel_under_load():
    """40 s of back-to-back fused attention at 32K tokens at the board's 700 W: throughput within
    5 % of the sweep's short bursts (forward and backward together), where the 8192^3 matmul drops
    to about 87 % of its burst as the clock falls to ~1.5 GHz. A training run's slower attention
    (`attention_sustained`) is not the kernel's clock."""
    data = json.loads((RUN / "sustained.json").read_text())
    kernels = json.loads((RUN / "kernels.json").read_text())
    runs = {r["name"]: r for r in data["runs"]}
    burst = next(a for a in kernels["attention"] if a["seq"] == 32768)
    flop = 4 * burst["batch"] * burst["heads"] * 32768 ** 2 * burst["head_dim"] / 2
    burst_rate = 3.5 * flop / (burst["forward_s"] + burst["backward_s"]) / 1e12
    rates = [w["tflops"] for w in runs["attention"]["rates"]]
    assert rates and min(rates) > 0.95 * burst_rate
    matmul = [w["tflops"] for w in runs["matmul"]["rates"]]
    assert matmul and max(matmul[-5:]) < 0.92 * kernels["matmul_8192_tflops"]


def test_the_profiles_kinds_and_fsdp2s_copies():
    """benchmarks/gpu_profile.py's kernel kinds by name and its busy time as the union of
    intervals (by hand), and what its H200 profiles of parc's 8B FSDP2 job count: FSDP2's own
    copies (the reduce-scatter's `chunk_cat` into fp32, the all-gathers' `split_with_sizes_copy`)
    take 35-45 ms a step at 2K and at 8K tokens alike. The ledger's `dp_copies` carries them: the
    copy-out, 2 x 2 bytes per gathered element (every parameter twice but the root's 1.05e9),
    within 10 % of the kernel's time at `hbm_efficiency`; `chunk_cat`, 2 + 4 bytes per element,
    ran at about 2 TB/s, 42 % of the H200's 4.8 TB/s, so the ledger's charge for it (at 80 %) is
    about half the kernel's time, never more (docs/time-model.md, "FSDP2's copies")."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check
    import gpu_profile

    assert gpu_profile.kind_of("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>") == "attention"
    assert gpu_profile.kind_of("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == "matmul"
    assert gpu_profile.kind_of("void at::native::detail::chunk_cat_cuda_kernel<float, c10::BFloat16>") == "copy"
    assert gpu_profile.kind_of("void at::native::vectorized_elementwise_kernel<4, at::native::silu>") == "other"
    assert gpu_profile.busy_seconds([(0, 10), (5, 20), (30, 40), (32, 35)]) == pytest.approx(30e-6)
    from parc import timing
    from parc.calibration import DEFAULT

    plan, _ = gpu_check.compiled("benchmarks/data/gpu/llama3-8b-fsdp-2k.par", "h200")
    loads, steps = timing.plan_rank_steps(plan, DEFAULT)
    times = steps[loads[0]].times
    params, root = times.params_dense, times.params_root
    assert 8.0e9 < params < 8.1e9 and 1.0e9 < root < 1.1e9  # Llama 3 8B; embedding and output
    rate = timing.hardware_of(plan).hbm * DEFAULT.hbm_efficiency
    copy_out, chunk_cat = 2 * 2 * (2 * params - root) / rate, (2 + 4) * params / rate
    for tokens in ("2k", "8k"):
        profile = json.loads((RUN / f"llama3-8b-fsdp-{tokens}.profile.json").read_text())
        longest = {name: s / profile["steps"] for name, s in profile["longest"]}
        measured_out = [s for name, s in longest.items() if "split_with_sizes_copy" in name]
        measured_cat = [s for name, s in longest.items() if "chunk_cat" in name]
        assert len(measured_out) == 1 and len(measured_cat) == 1
        assert 0.035 < measured_out[0] + measured_cat[0] < 0.045, tokens
        assert abs(copy_out / measured_out[0] - 1) < 0.1, tokens
        assert 0.45 < chunk_cat / measured_cat[0] < 0.6, tokens


@pytest.mark.long
def test_the_profile_script_runs_on_the_cpu(checked):
    """gpu_profile.py end to end on the CPU fixture's job (its `--device cpu` path: the CPU ops of
    one real-tensor step): a file with every kind's count and seconds and the rehearsal's record."""
    here, _ = checked
    job = here / "cases/jobs/gpu-check-cpu"
    rank = json.loads((here / "cases/cases.json").read_text())["jobs"][0]["rank"]
    subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_profile.py"), "--rank", str(rank), "--steps", "1",
                    "--out", str(here / "profile.json"), "--device", "cpu"], cwd=job, check=True, capture_output=True,
                   timeout=1200)
    profile = json.loads((here / "profile.json").read_text())
    assert profile["kinds"] and all(k["count"] > 0 and k["seconds"] > 0 for k in profile["kinds"].values())
    assert 0 < profile["busy_s"] <= profile["window_s"] + 1e-6
    assert profile["rehearsal"]["timed_steps"]
