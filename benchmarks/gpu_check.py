"""parc's model against the generated job and its kernels on one GPU: memory (issue 15, point 5)
and time (issue 14: the model as the job's ledger), in three steps, so that the GPU machine needs
torch and nothing of parc:

    .venv/bin/python benchmarks/gpu_check.py prepare DIR [--spec SPEC ...] [--gpu GPU] [--rank R]
    python3 benchmarks/gpu_check.py measure DIR OUT [--steps N] [--no-kernels]   # on the GPU machine
    .venv/bin/python benchmarks/gpu_check.py report DIR OUT  # prints the Markdown tables

`prepare` compiles each SPEC (default: SPECS) with its GPU replaced by GPU (default: the H200 this
project is lent), writes each generated job to DIR/jobs/NAME, and what to measure to
DIR/cases.json: each job's rank (default: the first rank of the time model's slowest pipeline
stage; `--rank` for the first spec's), the matrix products of one layer of the first spec as its
job runs them (each nn.Linear of the attention and the SwiGLU, at one micro-batch's tokens), and
its fused attention at the rank's heads over a sweep of sequence lengths.

`measure` runs, on cuda:0:
- the bf16 matmul ceiling (8192^3) and the device-to-device copy bandwidth, and nvidia-smi's
  driver, power limit and clocks;
- each product forward (x @ W^T, as nn.Linear) and its two backward products, and torch's flash
  attention forward and backward (the aten ops the job calls: `_scaled_dot_product_flash_attention`
  and its backward; causal, grouped heads as the job holds them), each timed by CUDA events over
  back-to-back launches, the median of 5;
- one layer's products of each model's first FP8 run in DGXC's H100 tables (`fp8_cases`), whole
  and cut into the chunks Transformer Engine's userbuffers launch (`userbuffers_chunks`), in bf16
  and in fp8 as Transformer Engine runs them (`fp8_products`), and each forward product again
  under the blockwise recipe's scales (1x128 tiles by 128x128 blocks, `fp8-recipe blockwise`);
- with `--sustain S`: the attention at 32K and the 8192^3 matmul (bf16, then fp8) launched back to
  back for S seconds each, with nvidia-smi's clock and power each second (`sustained`);
- each job's rank rehearsed (`train.py --rehearse --device cuda --steps 0 --timed-steps N`: fake
  process group at the plan's world size, real tensors and kernels, no memory tracker): each
  step's phases, and the allocator's max_memory_allocated / max_memory_reserved.
It writes OUT/kernels.json, OUT/sustained.json, OUT/NAME.json for each job and OUT/log.txt, and
goes on past a part that fails (its error is in the log).

`report` prints each measurement beside parc's prediction for the same thing: the memory model's
peak and its predicted `max_memory_reserved`, the time model's compute + recomputation and
optimizer seconds of the rank's stage (collectives faked: no communication, no bubble), the GEMM
seconds it charges one layer, and its fused-attention seconds at each length.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 2 ** 30
SWEEP = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
"""Sequence lengths of the attention sweep; each runs SWEEP_TOKENS tokens (batch = tokens / seq)."""
SWEEP_TOKENS = 131072
SPECS = ("specs/llama3-405b.par", "benchmarks/data/gpu/llama3-8b-fsdp-8k.par", "benchmarks/data/gpu/llama3-8b-fsdp-32k.par")
"""What `prepare` compiles by default: the 405B job of issue 15 (its slowest stage), and parc's own
FSDP2 job of Llama 3 8B at 8K and 32K tokens (the sequence lengths where the time model's
attention was found short; issue 14)."""
DGXC = "benchmarks/data/dgxc_benchmarking_h100.yaml"
"""Where `prepare` takes the FP8 products from: one layer of each model's first FP8 run there, as
Megatron-Core's Transformer Engine layers run it (issue 14: the time model overstates FP8's speed-up
over BF16 on Llama 3.1 70B and GPT-3 175B, not on 8B, 15B or 405B)."""
REPEATS, WARMUP = 5, 3
BURST_S = 0.05
"""Seconds of back-to-back launches between a pair of CUDA events (`timed`)."""
CPU_BURST_S = 0.002
"""The same on a CPU, where the script only tests itself (`--device cpu`): its hundreds of products
would otherwise take minutes of wall clock whatever their size."""


# ---------------------------------------------------------------------------------------------
# prepare (here: parc)


def compiled(spec: str, gpu: str):
    """The spec's plan on `gpu` (its hardware block's `gpu` line replaced), and its text."""
    from parc.pipeline import compile_text

    lines = (ROOT / spec).read_text(encoding="utf-8").splitlines(keepends=True)
    swapped = [f"  gpu {gpu}\n" if line.strip().startswith("gpu ") else line for line in lines]
    if sum(line.strip().startswith("gpu ") for line in lines) != 1:
        raise SystemExit(f"{spec}: expected one `gpu` line in its hardware block")
    text = "".join(swapped)
    result = compile_text(text, spec)
    if not result.ok:
        raise SystemExit(f"{spec} on {gpu} does not compile: "
                         + "; ".join(d.message for d in result.diagnostics if d.severity == "error"))
    return result.plan, text


def job_gemms(plan) -> list[dict]:
    """One layer's products as the generated job runs them (model.py: separate wq, wk, wv, wo;
    SwiGLU's w1, w3, w2; each an nn.Linear), at one micro-batch's tokens per tp rank (the
    gathered sequence under sequence parallelism)."""
    from parc.memory.inputs import shape_of

    shape, tp = shape_of(plan), plan.layout.degree("tp") or 1
    n = plan.training.seq_len * plan.training.micro_batch // (plan.layout.degree("cp") or 1)
    h, q, kv = shape.hidden, shape.q // tp, shape.kv // tp
    f = shape.ffn // tp
    return [dict(name=name, m=n, k=k, n=out) for name, k, out in
            (("wq", h, q), ("wk", h, kv), ("wv", h, kv), ("wo", q, h), ("w1", h, f), ("w3", h, f), ("w2", f, h))]


def megatron_gemms(row: dict) -> list[dict]:
    """One layer's products as Megatron-Core's Transformer Engine layers run them for a published
    row (fused QKV, the attention's projection, fc1 (gate and up fused where the MLP is gated),
    fc2), at one micro-batch's tokens per tp rank: the gathered sequence under sequence
    parallelism, less the context-parallel split."""
    model, lay = row["model"], row["layout"]
    tp, cp = lay.get("tp") or 1, lay.get("cp") or 1
    head_dim = model.get("head_dim") or model["hidden"] // model["heads"]
    q, kv = model["heads"] * head_dim // tp, (model.get("kv_heads") or model["heads"]) * head_dim // tp
    h, f = model["hidden"], model["ffn"] // tp
    gated = "swiglu" in model.get("arch", "").lower()
    m = model["seq_len"] * (lay.get("micro_batch") or 1) // cp
    return [dict(name=name, m=m, k=k, n=n) for name, k, n in
            (("qkv", h, q + 2 * kv), ("proj", q, h), ("fc1", h, (2 if gated else 1) * f), ("fc2", f, h))]


def userbuffers_chunks(gemms: list[dict], tp: int) -> list[dict]:
    """The products Transformer Engine's userbuffers overlap actually launches under
    `--tp-comm-overlap` at tp > 1, TE's default config (`initialize_ub`): a ring exchange
    (`split_overlap_ag`, QKV's and fc1's forward all-gathers) runs tp GEMMs, one per rank's m / tp
    input rows; a pipelined reduce-scatter (`split_overlap_rs`, the projection's and fc2's forward)
    runs `num_splits` = 4 GEMMs, each on a quarter of the weight's output rows (TE 1.10's
    comm_gemm_overlap.h: `m = A.size(0)`, A the weight, `m_chunk = m / _num_splits`; the same in
    TE 2.x's comm_gemm_overlap.cpp): every input row against n / 4 of the outputs. Each chunk's
    shape once, marked `chunk_of` (the whole product's name) so that `fp8_table` keeps them out of
    the layer's sums. The time model times each product whole
    (`kernels.userbuffers_exposed`); what a chunk loses to its smaller shape is the open question."""
    if tp <= 1:
        return []
    out = []
    for g in gemms:
        if g["name"] in ("qkv", "fc1"):
            out.append(dict(g, name=f"{g['name']}/{tp}", m=max(16, g["m"] // tp // 16 * 16), chunk_of=g["name"]))
        elif g["name"] in ("proj", "fc2"):
            out.append(dict(g, name=f"{g['name']}/4", n=max(16, g["n"] // 4 // 16 * 16), chunk_of=g["name"]))
    return out


def fp8_cases(divide: int) -> list[dict]:
    """The FP8 products `measure` times in fp8 and in bf16: one layer of the first FP8 run of each
    distinct shape in DGXC (`megatron_gemms`), then the chunks userbuffers split them into at the
    row's tp (`userbuffers_chunks`), every dimension divided by `divide` (at least 16, a multiple
    of 16: fp8 kernels' alignment) where it is above 1, to test the script on a CPU."""
    from yaml_data import read_yaml

    rows = read_yaml(ROOT / DGXC)
    cases, seen = [], set()
    for row in rows:
        lay, gemms = row["layout"], megatron_gemms(row)
        shapes = tuple((g["m"], g["k"], g["n"]) for g in gemms)
        if lay["precision"].upper() != "FP8" or shapes in seen:
            continue
        seen.add(shapes)
        if divide > 1:
            gemms = [dict(g, **{d: max(16, g[d] // divide // 16 * 16) for d in "mkn"}) for g in gemms]
        gemms += userbuffers_chunks(gemms, lay.get("tp") or 1)
        cases.append(dict(model=row["model"]["name"].split(" (")[0].split(",")[0], row=row["id"],
                          tp=lay.get("tp") or 1, cp=lay.get("cp") or 1, gemms=gemms))
    return cases


def default_rank(plan) -> int:
    """The first rank of the time model's slowest pipeline stage."""
    from parc.timing import predict

    stage = predict(plan).breakdown.stage
    return next(r for r in range(plan.cluster.world_size) if plan.layout.coordinates(r).get("pp", 0) == stage)


def prepare(args) -> int:
    from parc.backends import job_files
    from parc.memory.inputs import shape_of

    out = Path(args.dir)
    jobs = []
    for spec in args.spec:
        plan, text = compiled(spec, args.gpu)
        name = Path(spec).stem
        job = out / "jobs" / name
        job.mkdir(parents=True, exist_ok=True)
        for file, body in job_files(plan).items():
            path = job / file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        (job / "spec.par").write_text(text, encoding="utf-8")
        rank = args.rank if args.rank is not None and spec == args.spec[0] else default_rank(plan)
        jobs.append(dict(name=name, spec=spec, rank=rank, coordinates=plan.layout.coordinates(rank)))
        print(f"{job}: rank {rank} {jobs[-1]['coordinates']}")
    plan, _ = compiled(args.spec[0], args.gpu)
    shape, tp = shape_of(plan), plan.layout.degree("tp") or 1
    cases = {
        "gpu": args.gpu, "jobs": jobs, "kernels_spec": args.spec[0],
        "gemms": job_gemms(plan),
        "attention": [dict(seq=s, batch=max(1, args.sweep_tokens // s), heads=shape.heads // tp,
                           kv_heads=max(1, shape.kv_heads // tp), head_dim=shape.head_dim)
                      for s in args.sweep if s <= args.sweep_tokens],
        "fp8": fp8_cases(args.fp8_divide),
    }
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


# ---------------------------------------------------------------------------------------------
# measure (the GPU machine: torch only)


def timed(fn, *args, cuda: bool = True) -> float:
    """Seconds of one `fn(*args)`: after WARMUP launches, the median over REPEATS of a run of
    back-to-back launches (as many as fill BURST_S, CPU_BURST_S on a CPU, at least one) between two CUDA events, so that
    no launch's latency or host sync lands inside a short kernel's time (on CPU, the wall clock)."""
    import torch

    for _ in range(WARMUP):
        fn(*args)
    one = time.perf_counter()
    fn(*args)
    if cuda:
        torch.cuda.synchronize()
    launches = max(1, int((BURST_S if cuda else CPU_BURST_S) / max(time.perf_counter() - one, 1e-6)))
    times = []
    for _ in range(REPEATS):
        if not cuda:
            started = time.perf_counter()
            for _ in range(launches):
                fn(*args)
            times.append((time.perf_counter() - started) / launches)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / launches)
    return statistics.median(times)


def gpu_state() -> dict:
    """nvidia-smi's driver, power limit and clocks now (empty where it is not there)."""
    fields = "driver_version,power.limit,power.draw,clocks.sm,clocks.max.sm,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(fields.split(","), (v.strip() for v in out[0].split(",")), strict=False)) if out else {}


def measure_kernels(cases: dict, device: str) -> dict:
    import functools

    import torch
    import torch.nn.functional as F

    cuda = device == "cuda"
    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    timed_here = functools.partial(timed, cuda=cuda)
    bf16 = torch.bfloat16
    result: dict = {"gpu": torch.cuda.get_device_name(dev) if cuda else "cpu", "torch": torch.__version__,
                    "cuda": torch.version.cuda, "before": gpu_state() if cuda else {}}
    side = 8192 if cuda else 512
    a = torch.randn(side, side, device=dev, dtype=bf16)
    b = torch.randn(side, side, device=dev, dtype=bf16)
    result["matmul_8192_tflops"] = 2 * side ** 3 / timed_here(torch.matmul, a, b) / 1e12
    src = torch.empty(2 * GIB if cuda else 2 ** 24, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    result["copy_tb_per_s"] = 2 * src.numel() / timed_here(dst.copy_, src) / 1e12  # read + write
    del a, b, src, dst
    gemms = []
    for g in cases["gemms"]:
        m, k, n = g["m"], g["k"], g["n"]
        x = torch.randn(m, k, device=dev, dtype=bf16)
        w = torch.randn(n, k, device=dev, dtype=bf16)
        dy = torch.randn(m, n, device=dev, dtype=bf16)
        gemms.append(dict(g, forward_s=timed_here(F.linear, x, w),
                          dgrad_s=timed_here(torch.matmul, dy, w),  # (m x n) @ (n x k)
                          wgrad_s=timed_here(torch.matmul, dy.t(), x)))  # (n x m) @ (m x k)
        del x, w, dy
    result["gemms"] = gemms
    attention = []
    aten = torch.ops.aten
    if cuda:
        flash = aten._scaled_dot_product_flash_attention

        def flash_backward(grad, q, k, v, out, lse, s):
            seed = torch.zeros((), dtype=torch.int64, device=dev)  # dropout 0: never read
            return aten._scaled_dot_product_flash_attention_backward(grad, q, k, v, out, lse, None, None, s, s,
                                                                     0.0, True, seed, seed)
    else:
        flash = aten._scaled_dot_product_flash_attention_for_cpu

        def flash_backward(grad, q, k, v, out, lse, s):
            return aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, q, k, v, out, lse, 0.0, True)
    for case in cases["attention"]:
        s = case["seq"]
        # (batch, heads, seq, head_dim), viewed as the job's transpose of (batch, seq, heads, head_dim)
        q, k, v = (torch.randn(case["batch"], s, case[count], case["head_dim"], device=dev, dtype=bf16).transpose(1, 2)
                   for count in ("heads", "kv_heads", "kv_heads"))
        out, lse, *_ = flash(q, k, v, 0.0, True)
        grad = torch.randn_like(out)
        forward = timed_here(flash, q, k, v, 0.0, True)
        backward = timed_here(flash_backward, grad, q, k, v, out, lse, s)
        attention.append(dict(case, forward_s=forward, backward_s=backward))
        del q, k, v, out, lse, grad
        if cuda:
            torch.cuda.empty_cache()
    result["attention"] = attention
    result["fp8"] = [dict(case, gemms=[dict(g, **fp8_products(g, dev, timed_here)) for g in case["gemms"]])
                     for case in cases.get("fp8", [])]
    if cuda:
        result["after"] = gpu_state()
        torch.cuda.empty_cache()  # the rehearsals that follow are processes of their own
    return result


def fp8_products(g: dict, dev, timed_here) -> dict:
    """One product's forward and its two backward products (dgrad: dy @ W, wgrad: dy^T @ x) in
    bf16 and as Transformer Engine runs them in fp8 with per-tensor scales (`torch._scaled_mm`:
    e4m3 operands forward with fast accumulation; the e5m2 output gradient against an e4m3 operand
    backward, split accumulation), each operand in the layout cuBLASLt's fp8 kernels take (the
    first row-major, the second column-major: TE keeps transposed fp8 copies for that). Seconds
    by `timed`; an error (a shape the kernel refuses) is recorded in place of the seconds. The
    forward also runs as the blockwise recipe's GEMM (`blockwise_forward`)."""
    import functools

    import torch

    bf16, e4m3, e5m2 = torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2
    one = torch.ones((), device=dev, dtype=torch.float32)
    m, k, n = g["m"], g["k"], g["n"]
    out: dict = {}
    for way, (rows, inner, cols), first in (("forward", (m, k, n), e4m3), ("dgrad", (m, n, k), e5m2),
                                           ("wgrad", (n, m, k), e5m2)):
        a = torch.randn(rows, inner, device=dev, dtype=bf16)
        b = torch.randn(cols, inner, device=dev, dtype=bf16)
        out[f"{way}_bf16_s"] = timed_here(torch.matmul, a, b.t())
        try:
            out[f"{way}_fp8_s"] = timed_here(functools.partial(
                torch._scaled_mm, a.to(first), b.to(e4m3).t(), scale_a=one, scale_b=one, out_dtype=bf16,
                use_fast_accum=way == "forward"))
        except (RuntimeError, TypeError) as error:
            out[f"{way}_fp8_error"] = str(error).splitlines()[0][:300]
        if way == "forward":
            out.update(blockwise_forward(a, b, timed_here))
        del a, b
    return out


BLOCK = 128
"""The blockwise recipe's scale granularity: an fp32 scale per 1 x 128 tile of the activation and per
128 x 128 block of the weight (Transformer Engine's `Float8BlockScaling`, DeepSeek-V3's scheme)."""


def blockwise_forward(a, b, timed_here) -> dict:
    """The forward product `a @ b^T` as the blockwise recipe runs it (`torch._scaled_mm` with
    (BlockWise1x128, BlockWise128x128) scales: `scale_a` (m, k / 128), `scale_b` (k / 128, n / 128),
    cuBLAS 12.9's block-scaled fp8 GEMM on Hopper). Whether it keeps per-tensor fp8's speed is what
    the time model assumes (`timing.BLOCK_SCALED`: the same GEMM rate) and what this measures. The
    scales are tried row-major, then outer-dimension-major (the layout cuBLAS's block scaling
    reads); both errors are recorded where neither runs."""
    import functools

    import torch

    e4m3, dev = torch.float8_e4m3fn, a.device
    rows, inner = a.shape
    cols = b.shape[0]
    a8, b8 = a.to(e4m3), b.to(e4m3).t()
    tiles = (inner + BLOCK - 1) // BLOCK
    scale_a = torch.ones(rows, tiles, device=dev, dtype=torch.float32)
    scale_b = torch.ones(tiles, (cols + BLOCK - 1) // BLOCK, device=dev, dtype=torch.float32)
    errors = []
    for sa, sb in ((scale_a, scale_b), (scale_a.t().contiguous().t(), scale_b.t().contiguous().t())):
        try:
            return {"forward_blockwise_s": timed_here(functools.partial(
                torch._scaled_mm, a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))}
        except (RuntimeError, TypeError, ValueError) as error:
            errors.append(str(error).splitlines()[0][:200])
    return {"forward_blockwise_error": " | ".join(errors)}


WINDOW_S = 0.5
"""Seconds of launches between a pair of CUDA events in `sustained`: its throughput's sampling."""
COPIES_PER_WINDOW = 400
"""2 GiB device copies queued beside each half-second window of `sustained` (about 1 ms each
alone): enough to keep the second stream busy through the window."""


def sustained(cases: dict, seconds: float) -> dict:
    """The kernels under sustained load, as a training run holds them and a short burst does not:
    the fused attention's forward and backward at 32K tokens (the sweep's heads), then the bf16
    8192^3 matmul, each launched back to back for `seconds`, then the attention again with a
    device-to-device copy running beside it on a second stream (a stand-in for the communication
    kernels a training run overlaps with its compute). Each second: the kernels' throughput (by
    CUDA events) and nvidia-smi's SM clock, power draw and temperature."""
    import threading

    import torch

    dev = torch.device("cuda", 0)
    bf16 = torch.bfloat16
    aten = torch.ops.aten
    case = next(a for a in cases["attention"] if a["seq"] == 32768)
    s = case["seq"]
    q, k, v = (torch.randn(case["batch"], s, case[count], case["head_dim"], device=dev, dtype=bf16).transpose(1, 2)
               for count in ("heads", "kv_heads", "kv_heads"))
    out, lse, *_ = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)
    grad = torch.randn_like(out)
    seed = torch.zeros((), dtype=torch.int64, device=dev)
    flop_attention = 3.5 * 4 * case["batch"] * case["heads"] * s * s * case["head_dim"] / 2  # forward + 2.5x backward

    def attention():
        aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)
        aten._scaled_dot_product_flash_attention_backward(grad, q, k, v, out, lse, None, None, s, s, 0.0, True,
                                                          seed, seed)
    a = torch.randn(8192, 8192, device=dev, dtype=bf16)
    b = torch.randn(8192, 8192, device=dev, dtype=bf16)
    src = torch.empty(2 * GIB, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    side = torch.cuda.Stream(dev)

    def run(name, fn, flop, beside=False):
        samples, stop = [], threading.Event()

        def poll():
            while not stop.is_set():
                samples.append(dict(t=time.perf_counter(), **gpu_state()))
                stop.wait(1.0)
        poller = threading.Thread(target=poll, daemon=True)  # never keeps the process alive on an error
        poller.start()
        one = time.perf_counter()
        fn()
        torch.cuda.synchronize(dev)
        launches = max(1, int(WINDOW_S / (time.perf_counter() - one)))  # a window's worth, not a queue's
        started, rates = time.perf_counter(), []
        copies = 0
        while time.perf_counter() - started < seconds:
            if beside:
                with torch.cuda.stream(side):
                    for _ in range(COPIES_PER_WINDOW):
                        dst.copy_(src)
                        copies += 1
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(launches):
                fn()
            end.record()
            end.synchronize()
            rates.append(dict(t=round(time.perf_counter() - started, 2),
                              tflops=flop * launches / (begin.elapsed_time(end) / 1e3) / 1e12))
        torch.cuda.synchronize(dev)
        stop.set()
        poller.join()
        return dict(name=name, rates=rates, smi=samples, copies=copies)

    runs = [run("attention", attention, flop_attention), run("matmul", lambda: torch.matmul(a, b), 2 * 8192 ** 3)]
    # the same product in fp8 as Transformer Engine runs its forward (e4m3, per-tensor scales, fast
    # accumulation): whether fp8 holds its clock under sustained load as bf16 does (issue 14: the
    # FP8 rows with tp overlap run slower than the model beyond their BF16 twins)
    one = torch.ones((), device=dev, dtype=torch.float32)
    try:
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t()

        def fp8_matmul():
            torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=bf16, use_fast_accum=True)
        fp8_matmul()
        runs.append(run("matmul fp8", fp8_matmul, 2 * 8192 ** 3))
    except (RuntimeError, TypeError, AttributeError) as error:  # a part without fp8 matmuls
        runs.append(dict(name="matmul fp8", error=str(error).splitlines()[0][:300]))
    runs.append(run("attention beside a copy stream", attention, flop_attention, beside=True))
    return {"attention_case": case, "seconds": seconds, "runs": runs}


def rehearse(job: Path, rank: int, extra: list[str], out: Path, log, device: str, timeout: float) -> None:
    command = [sys.executable, "train.py", "--rehearse", "--device", device, "--rank", str(rank),
               "--rehearse-json", str(out.resolve()), *extra]
    if device == "cpu":
        command.append("--real-tensors")
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=job, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    log.write(f"exit {done.returncode} after {time.perf_counter() - started:.1f} s\n")
    log.flush()
    if done.returncode:
        raise RuntimeError(f"the rehearsal exited with {done.returncode}")


def measure(args) -> int:
    import traceback

    here, out = Path(args.dir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = json.loads((here / "cases.json").read_text())
    parts = [] if args.no_kernels else [("kernels", lambda: (out / "kernels.json").write_text(
        json.dumps(measure_kernels(cases, args.device), indent=1) + "\n"))]
    if args.sustain:
        parts.append(("sustained", lambda: (out / "sustained.json").write_text(
            json.dumps(sustained(cases, args.sustain), indent=1) + "\n")))
    for job in cases["jobs"] if not args.no_jobs else []:
        parts.append((job["name"], lambda job=job: rehearse(
            here / "jobs" / job["name"], job["rank"], ["--steps", "0", "--timed-steps", str(args.steps)],
            out / f"{job['name']}.json", log, args.device, args.job_timeout)))
    with open(out / "log.txt", "w") as log:
        for name, part in parts:
            started = time.perf_counter()
            try:
                part()
                log.write(f"{name}: done in {time.perf_counter() - started:.1f} s\n")
            except Exception:  # noqa: BLE001 - the next part still runs; the log has why
                log.write(f"{name}: failed\n{traceback.format_exc()}\n")
            log.flush()
    print((out / "log.txt").read_text())
    return 0


# ---------------------------------------------------------------------------------------------
# report (here: parc)


def pct(predicted: float, measured: float) -> str:
    return f"{100 * (predicted - measured) / measured:+.1f} %"


def report(args) -> int:
    from parc import timing
    from parc.calibration import DEFAULT

    here, results = Path(args.dir), Path(args.out)
    cases = json.loads((here / "cases.json").read_text())
    kernels = _load(results / "kernels.json")
    if kernels:
        hw = timing.hardware_of(_plan(here, cases["jobs"][0]))
        print(f"{kernels['gpu']}, torch {kernels['torch']} (CUDA {kernels['cuda']}): bf16 matmul 8192^3 "  # 512^3 on CPU
              f"{kernels['matmul_8192_tflops']:.0f} TFLOP/s ({100 * kernels['matmul_8192_tflops'] * 1e12 / hw.bf16:.1f} % "
              f"of {hw.bf16 / 1e12:.0f}), device copy {kernels['copy_tb_per_s']:.2f} TB/s "
              f"(read + write; {100 * kernels['copy_tb_per_s'] * 1e12 / hw.hbm:.1f} % of {hw.hbm / 1e12:.1f})\n")
    print("each job's rank rehearsed with real kernels, every collective faked: memory by torch's allocator, "
          "time per step (the median of the steps after the first)\n")
    print("| job | rank | max_memory_allocated (GiB) | parc's peak | max_memory_reserved (GiB) | parc's reserved "
          "| forward + backward (s) | parc's compute + recomputation + dp copies | clip + optimizer step (s) | parc's |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for job in cases["jobs"]:
        record = _load(results / f"{job['name']}.json")
        if not record:
            print(f"| {job['name']} | {job['rank']} | not measured (log.txt says why) | | | | | | | |")
            continue
        f = job_figures(_plan(here, job), job, record, DEFAULT)
        fb, allocated, reserved = f["forward_backward"], f["model_allocated"], f["model_reserved"]
        memory = (f"{record['max_memory_allocated'] / GIB:.2f} | {allocated / GIB:.2f} ({pct(allocated, record['max_memory_allocated'])}) | "
                  f"{record['max_memory_reserved'] / GIB:.2f} | {reserved / GIB:.2f} ({pct(reserved, record['max_memory_reserved'])})"
                  if "max_memory_allocated" in record else "| | |")
        print(f"| {job['name']} | {job['rank']} (stage {f['stage']}) | {memory} | {fb:.3f} | "
              f"{f['model_compute']:.3f} ({pct(f['model_compute'], fb)}) | {f['optimizer']:.4f} | "
              f"{f['model_optimizer']:.4f} |")
    print()
    if kernels:
        plan = _plan(here, cases["jobs"][0])
        tables = kernel_tables(kernels, plan, DEFAULT)
        g = tables["gemm"]
        print(f"one layer's matrix products at {kernels['gemms'][0]['m']} tokens, as the job runs them\n")
        print(tables["gemm_table"])
        print(f"\nthe layer: forward {1e3 * g['forward']:.2f} ms, backward {1e3 * g['backward']:.2f} ms measured; "
              f"parc's GEMM model at the job's shapes {1e3 * g['model']:.2f} ms forward ({pct(g['model'], g['forward'])}), "
              f"{2e3 * g['model']:.2f} ms backward ({pct(2 * g['model'], g['backward'])}); what the time model charges the "
              f"layer (`layer_work`: fused QKV and gate/up products, launch overheads, the runtime's factor) "
              f"{1e3 * g['charge']:.2f} ms forward ({pct(g['charge'], g['forward'])}), "
              f"{2e3 * g['charge']:.2f} ms backward ({pct(2 * g['charge'], g['backward'])})\n")
        a = kernels["attention"][0]
        print(f"fused attention (torch's flash kernel, causal, {a['heads']} query heads, {a['kv_heads']} kv, "
              f"head dim {a['head_dim']}, {a['seq'] * a['batch']} tokens per call)\n")
        print(tables["attention_table"])
        if kernels.get("fp8"):
            print("\nFP8 against BF16: one layer's products of the first FP8 run of each model in "
                  f"{DGXC} as Transformer Engine runs them (forward, dgrad and wgrad)\n")
            print(fp8_table(kernels["fp8"], timing.hardware_of(plan), DEFAULT)["table"])
            chunks = chunk_table(kernels["fp8"], timing.hardware_of(plan), DEFAULT)
            if chunks["ratios"]:
                print("\nThe same products cut as Transformer Engine's userbuffers cut them (forward): the chunks' "
                      "seconds x splits over the whole product's\n")
                print(chunks["table"])
            blocks = blockwise_table(kernels["fp8"])
            print("\nThe forward products under the blockwise recipe's scales (1x128 by 128x128) against "
                  "per-tensor fp8 (parc charges both at one rate: 1)\n")
            print(blocks["table"])
        print(f"\n(the curve: FlashAttention-2's, `kernels.FA2_HOPPER`, in seconds; the charge: the curve's seconds "
              f"/ attention_speed {tables['speed']:.4g}, `Constants.attention_sustained`)")
    return 0


def job_figures(plan, job: dict, record: dict, c) -> dict:
    """One rehearsed rank measured and modelled: its stage; the median forward + backward and
    clip + optimizer seconds of the steps after the first (which warms the kernels and the
    allocator); the memory model's peak and predicted reserved bytes of the stage; the time
    model's compute + recomputation + data-parallel copies (FSDP2's, which run inside the
    forward and backward) and optimizer seconds of the stage under constants `c`."""
    from parc.memory import estimate

    stage = int(job["coordinates"].get("pp", 0))
    est = estimate(plan)
    allocated = est.stages[stage].total
    steps = record["timed_steps"][1:]
    model = stage_model(plan, stage, c)
    return {"stage": stage,
            "forward_backward": statistics.median(s["forward_backward"] for s in steps),
            "optimizer": statistics.median(s["finish_gradients"] + s.get("clip", 0.0) + s["optimizer"] for s in steps),
            "model_allocated": allocated,
            "model_reserved": allocated + (est.overheads.inside_allocator if est.overheads is not None else 0),
            "model_compute": model["compute"] + model["copies"], "model_copies": model["copies"],
            "model_optimizer": model["optimizer"]}


def stage_model(plan, stage: int, c) -> dict[str, float]:
    """What the time model charges a rank of pipeline stage `stage` per step under constants `c`
    with every collective faked: its compute and recomputation (`compute`), the data-parallel
    runtime's copies around the faked collectives (`copies`: they run, only the collectives are
    faked) and its optimizer step (seconds)."""
    from parc import timing
    from parc.memory.inputs import knobs_of
    from parc.targets import memory_runtime

    loads, steps = timing.plan_rank_steps(plan, c)
    step = steps[loads[stage]]
    m = knobs_of(plan, memory_runtime(plan.target)).microbatches  # as `timing.step_time` counts them
    return {"compute": m * (step.times.compute + step.times.recompute), "copies": step.copies,
            "optimizer": step.optimizer}


def kernel_tables(kernels: dict, plan, c) -> dict:
    """The measured kernels beside parc's models of them under constants `c`: the products' table
    and the layer's sums (`gemm`: measured forward and backward, the GEMM model at the job's
    shapes, the time model's charge), the attention's table and the curve's errors."""
    from parc import timing
    from parc.memory.inputs import shape_of

    hw, shape = timing.hardware_of(plan), shape_of(plan)
    tp = plan.layout.degree("tp") or 1
    lines = ["| product | m x k x n | forward TFLOP/s | backward TFLOP/s | parc forward (ms) | measured forward (ms) |",
             "|---|---|---|---|---|---|"]
    model = forward = backward = 0.0
    for g in kernels["gemms"]:
        m, k, n = g["m"], g["k"], g["n"]
        flop = 2 * m * k * n
        seconds = timing.gemm_seconds(m, k, n, "bf16", hw, c)
        model += seconds
        forward += g["forward_s"]
        backward += g["dgrad_s"] + g["wgrad_s"]
        lines.append(f"| {g['name']} | {m} x {k} x {n} | {flop / g['forward_s'] / 1e12:.0f} | "
                     f"{2 * flop / (g['dgrad_s'] + g['wgrad_s']) / 1e12:.0f} | {1e3 * seconds:.3f} | "
                     f"{1e3 * g['forward_s']:.3f} |")
    speed = c.attention_speed
    rows = ["| seq | forward TFLOP/s | backward TFLOP/s | forward (ms) | parc's curve | parc's charge "
            "| backward (ms) | parc's curve | parc's charge |", "|---|---|---|---|---|---|---|---|---|"]
    curve_errors, charge_ratios = [], []
    for a in kernels["attention"]:
        s, bsz = a["seq"], a["batch"]
        flop = 4 * bsz * a["heads"] * s * s * a["head_dim"] / 2  # causal: half the square
        f, bwd, _ = timing.flash_attention_seconds(shape, tp, 1, "ring", s, bsz * s, "flash", hw, speed)
        curve_errors += [(s, "forward", f * speed / a["forward_s"] - 1), (s, "backward", bwd * speed / a["backward_s"] - 1)]
        charge_ratios += [f / a["forward_s"], bwd / a["backward_s"]]
        rows.append(f"| {s} | {flop / a['forward_s'] / 1e12:.0f} | {2.5 * flop / a['backward_s'] / 1e12:.0f} | "
                    f"{1e3 * a['forward_s']:.2f} | {1e3 * f * speed:.2f} ({pct(f * speed, a['forward_s'])}) | "
                    f"{1e3 * f:.2f} | {1e3 * a['backward_s']:.2f} | {1e3 * bwd * speed:.2f} "
                    f"({pct(bwd * speed, a['backward_s'])}) | {1e3 * bwd:.2f} |")
    return {"gemm_table": "\n".join(lines), "attention_table": "\n".join(rows), "speed": speed,
            "gemm": {"forward": forward, "backward": backward, "model": model, "charge": layer_charge(plan, c)},
            "curve_errors": curve_errors, "charge_ratios": charge_ratios}


def fp8_table(cases: list[dict], hw, c) -> dict:
    """Each model's layer: BF16 and FP8 seconds of its products measured (forward + dgrad + wgrad)
    beside `timing.gemm_seconds` at each precision, and the speed-ups (`speedups`: (model,
    measured, parc's)). A product whose fp8 kernel failed is left out of its layer's sums and
    named."""
    from parc import timing

    lines = ["| model (row's tp) | product | m x k x n | BF16 (ms) | FP8 (ms) | FP8 speed-up | parc's speed-up |",
             "|---|---|---|---|---|---|---|"]
    speedups = []
    for case in cases:
        layer = {"bf16": 0.0, "fp8": 0.0, "parc_bf16": 0.0, "parc_fp8": 0.0}
        for g in case["gemms"]:
            if g.get("chunk_of"):
                continue  # `chunk_table`
            ways = ("forward", "dgrad", "wgrad")
            if any(f"{w}_fp8_s" not in g for w in ways):
                lines.append(f"| {case['model']} | {g['name']} | | fp8 failed: "
                             f"{next(g[f'{w}_fp8_error'] for w in ways if f'{w}_fp8_error' in g)} | | | |")
                continue
            shapes = [(g["m"], g["k"], g["n"]), (g["m"], g["n"], g["k"]), (g["n"], g["m"], g["k"])]
            bf16 = sum(g[f"{w}_bf16_s"] for w in ways)
            fp8 = sum(g[f"{w}_fp8_s"] for w in ways)
            model_bf16 = sum(timing.gemm_seconds(*shape, "bf16", hw, c) for shape in shapes)
            model_fp8 = sum(timing.gemm_seconds(*shape, "fp8", hw, c) for shape in shapes)
            for key, value in zip(layer, (bf16, fp8, model_bf16, model_fp8), strict=True):
                layer[key] += value
            lines.append(f"| {case['model']} ({case['tp']}) | {g['name']} | {g['m']} x {g['k']} x {g['n']} | "
                         f"{1e3 * bf16:.3f} | {1e3 * fp8:.3f} | {bf16 / fp8:.2f} | {model_bf16 / model_fp8:.2f} |")
        if layer["fp8"]:
            speedups.append((case["model"], layer["bf16"] / layer["fp8"], layer["parc_bf16"] / layer["parc_fp8"]))
            lines.append(f"| {case['model']} ({case['tp']}) | the layer | | {1e3 * layer['bf16']:.3f} | "
                         f"{1e3 * layer['fp8']:.3f} | {speedups[-1][1]:.2f} | {speedups[-1][2]:.2f} |")
    return {"table": "\n".join(lines), "speedups": speedups}


def chunk_table(cases: list[dict], hw, c) -> dict:
    """Each userbuffers chunk (`userbuffers_chunks`) against the product it is cut from, forward, at
    each precision: the chunks' measured seconds summed over the split (chunk seconds x splits,
    the splits the whole's m x n over the chunk's) over the whole product's measured seconds, and
    the same ratio as `timing.gemm_seconds` charges it (`ratios`: (model, product, precision,
    measured, parc's)). 1 where the cut costs nothing."""
    from parc import timing

    lines = ["| model (tp) | chunk | m x k x n | precision | splits x chunk / whole, measured | the same, parc's |",
             "|---|---|---|---|---|---|"]
    ratios = []
    for case in cases:
        whole = {g["name"]: g for g in case["gemms"] if not g.get("chunk_of")}
        for g in (g for g in case["gemms"] if g.get("chunk_of")):
            parent = whole[g["chunk_of"]]
            splits = parent["m"] * parent["n"] / (g["m"] * g["n"])
            for precision in ("bf16", "fp8"):
                key = f"forward_{precision}_s"
                if key not in g or key not in parent:
                    continue
                measured = splits * g[key] / parent[key]
                charged = (splits * timing.gemm_seconds(g["m"], g["k"], g["n"], precision, hw, c)
                           / timing.gemm_seconds(parent["m"], parent["k"], parent["n"], precision, hw, c))
                ratios.append((case["model"], g["name"], precision, measured, charged))
                lines.append(f"| {case['model']} ({case['tp']}) | {g['name']} | {g['m']} x {g['k']} x {g['n']} | "
                             f"{precision} | {measured:.3f} | {charged:.3f} |")
    return {"table": "\n".join(lines), "ratios": ratios}


def blockwise_table(cases: list[dict]) -> dict:
    """Each whole forward product's blockwise seconds over its per-tensor fp8 seconds, measured
    (`ratios`: (model, product, ratio)); the time model charges both at one rate
    (`timing.BLOCK_SCALED`), so 1 is what it assumes. A product whose blockwise kernel did not run
    is named with its error."""
    lines = ["| model (tp) | product | m x k x n | per-tensor fp8 (ms) | blockwise (ms) | blockwise / per-tensor |",
             "|---|---|---|---|---|---|"]
    ratios = []
    for case in cases:
        for g in (g for g in case["gemms"] if not g.get("chunk_of") and "forward_fp8_s" in g):
            head = f"| {case['model']} ({case['tp']}) | {g['name']} | {g['m']} x {g['k']} x {g['n']} | "
            if "forward_blockwise_s" not in g:
                lines.append(head + f"{1e3 * g['forward_fp8_s']:.3f} | failed: {g.get('forward_blockwise_error', '')} | |")
                continue
            ratio = g["forward_blockwise_s"] / g["forward_fp8_s"]
            ratios.append((case["model"], g["name"], ratio))
            lines.append(head + f"{1e3 * g['forward_fp8_s']:.3f} | {1e3 * g['forward_blockwise_s']:.3f} | {ratio:.2f} |")
    return {"table": "\n".join(lines), "ratios": ratios}


MEASURED = ROOT / "benchmarks" / "data" / "gpu" / "h200_kernels.json"
"""What `measure` printed of the kernels on the H200 lent to one session (specs/llama3-405b.par's
layer at tp 8)."""


def section(constants) -> dict[str, str]:
    """The H200_* placeholders of docs/time-model.md ("Measured on an H200"): the committed
    measurement beside the model under `constants` (benchmarks/fidelity.py --write)."""
    kernels = json.loads(MEASURED.read_text())
    plan, _ = compiled("specs/llama3-405b.par", "h200")
    tables = kernel_tables(kernels, plan, constants)
    g = tables["gemm"]
    errors = tables["curve_errors"]
    assert errors, "no attention case measured"
    short = max(abs(e) for s, _, e in errors if s <= 32768)
    long_forward = [e for s, way, e in errors if s > 32768 and way == "forward"]
    return {
        "H200_GEMMS": tables["gemm_table"], "H200_ATTENTION": tables["attention_table"],
        "H200_FORWARD": f"{1e3 * g['forward']:.2f}", "H200_BACKWARD": f"{1e3 * g['backward']:.2f}",
        "H200_MODEL_F": f"{1e3 * g['model']:.2f} ms ({pct(g['model'], g['forward'])})",
        "H200_MODEL_B": f"{2e3 * g['model']:.2f} ms ({pct(2 * g['model'], g['backward'])})",
        "H200_CHARGE_F": f"{1e3 * g['charge']:.2f} ms ({pct(g['charge'], g['forward'])})",
        "H200_CHARGE_B": f"{2e3 * g['charge']:.2f} ms ({pct(2 * g['charge'], g['backward'])})",
        "H200_CURVE_SHORT": f"{100 * short:.0f} %",
        "H200_CURVE_LONG": " and ".join(f"{100 * e:+.0f} %" for e in long_forward),
        "H200_SPEED": f"{tables['speed']:.4g}",
        "H200_CHARGE_MULTIPLE": f"{1 / tables['speed']:.2f}x the curve, "
                                f"{min(tables['charge_ratios']):.2f}-{max(tables['charge_ratios']):.2f}x",
    }


def layer_charge(plan, c) -> float:
    """The GEMM seconds the time model charges one dense layer of `plan`'s job on one micro-batch
    under constants `c` (`timing.layer_work`, slowed as the runtime's kernels are: `timing.slowed`)."""
    from parc import timing
    from parc.memory.inputs import knobs_of, shape_of
    from parc.targets import software_of

    sw = software_of(plan)
    work = timing.layer_work(shape_of(plan), timing.LayerCase.of(knobs_of(plan), False, sw), timing.hardware_of(plan), c)
    return timing.slowed(work, sw, c).gemm


def _plan(here: Path, job: dict):
    from parc.pipeline import compile_text

    return compile_text((here / "jobs" / job["name"] / "spec.par").read_text(encoding="utf-8"), job["spec"]).plan


def _load(path: Path):
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data[0] if isinstance(data, list) else data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    p.add_argument("--spec", action="append", help="repeatable (default: SPECS); the first's layer is the kernels'")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--rank", type=int, help="the first spec's rank to rehearse")
    p.add_argument("--sweep", type=lambda s: [int(x) for x in s.split(",")], default=list(SWEEP),
                   help="attention's sequence lengths, comma-separated")
    p.add_argument("--sweep-tokens", type=int, default=SWEEP_TOKENS, help="tokens per attention call")
    p.add_argument("--fp8-divide", type=int, default=1, help="divide the FP8 products' dimensions (a CPU test)")
    m = sub.add_parser("measure")
    m.add_argument("dir")
    m.add_argument("out")
    m.add_argument("--steps", type=int, default=3, help="timed steps per job (the first is a warm-up)")
    m.add_argument("--no-kernels", action="store_true", help="only the jobs")
    m.add_argument("--no-jobs", action="store_true", help="no rehearsal")
    m.add_argument("--sustain", type=float, default=0, help="seconds of each sustained-load run (GPU only)")
    m.add_argument("--job-timeout", type=float, default=300, help="seconds each job's rehearsal may run")
    m.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: a test of this script on small cases (wall clock, CPU kernels, real tensors)")
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("out")
    args = parser.parse_args()
    if args.command == "measure" and args.steps < 3:
        parser.error("--steps needs at least 3: the first warms up, the median is of the others")
    if args.command == "prepare" and not args.spec:
        args.spec = list(SPECS)
    return {"prepare": prepare, "measure": measure, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
