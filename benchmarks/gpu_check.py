"""parc's model against the generated job and its kernels on one GPU: memory (issue 15, point 5)
and time (issue 14: the model as the job's ledger), in three steps, so that the GPU machine needs
torch and nothing of parc:

    .venv/bin/python benchmarks/gpu_check.py prepare DIR [--spec SPEC] [--gpu GPU] [--rank R]
    python3 benchmarks/gpu_check.py measure DIR OUT          # on the GPU machine: torch only
    .venv/bin/python benchmarks/gpu_check.py report DIR OUT  # prints the Markdown tables

`prepare` compiles SPEC with its GPU replaced by GPU (default: specs/llama3-405b.par, TP 8 x PP 16
x DP 64, on the H200 this project is lent), writes the generated job to DIR/job and what to
measure to DIR/cases.json: the rank (default: the time model's slowest pipeline stage, which is
also the memory model's peak stage, tp 3, dp 39), the matrix products of one of its layers as the
job runs them (each nn.Linear of the attention and the SwiGLU, at one micro-batch's tokens), and
its fused attention at the rank's heads over a sweep of sequence lengths.

`measure` runs, on cuda:0:
- the bf16 matmul ceiling (8192^3) and the device-to-device copy bandwidth;
- each product forward (x @ W^T, as nn.Linear) and its two backward products, CUDA events, the
  median of 10 after 3 warm-ups;
- torch's flash attention forward and backward, the aten ops the job calls
  (`_scaled_dot_product_flash_attention` and its backward), causal, grouped heads as the job
  holds them;
- the job's rehearsal of the rank (`train.py --rehearse --device cuda`: fake process group at the
  plan's world size, real tensors and kernels): once with `--steps 0 --timed-steps 3` (no
  tracker: the rank's compute per step, each phase synchronised), once with `--steps 2` (the
  tracker's categories, and the allocator's max_memory_allocated / max_memory_reserved).
It writes OUT/kernels.json, OUT/timed.json, OUT/memory.json and OUT/log.txt, and goes on past a
part that fails (its error is in the log).

`report` prints each measurement beside parc's prediction for the same thing: the memory model's
peak and its predicted `max_memory_reserved`, the time model's compute + recomputation +
optimizer seconds of the rank's stage (collectives faked: no communication, no bubble), the
GEMM seconds it charges one layer, and its fused-attention seconds at each length.
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
REPEATS, WARMUP = 10, 3


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
        rank = default_rank(plan)
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
    }
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


# ---------------------------------------------------------------------------------------------
# measure (the GPU machine: torch only)


def timed(fn, *args, cuda: bool = True) -> float:
    """Median seconds of `fn(*args)` over REPEATS launches after WARMUP, by CUDA events (on CPU,
    the wall clock)."""
    import torch

    for _ in range(WARMUP):
        fn(*args)
    times = []
    for _ in range(REPEATS):
        if not cuda:
            started = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - started)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def measure_kernels(cases: dict, device: str) -> dict:
    import functools

    import torch
    import torch.nn.functional as F

    cuda = device == "cuda"
    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    timed_here = functools.partial(timed, cuda=cuda)
    bf16 = torch.bfloat16
    result: dict = {"gpu": torch.cuda.get_device_name(dev) if cuda else "cpu", "torch": torch.__version__,
                    "cuda": torch.version.cuda}
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
    return result


def rehearse(job: Path, rank: int, extra: list[str], out: Path, log, device: str) -> None:
    command = [sys.executable, "train.py", "--rehearse", "--device", device, "--rank", str(rank),
               "--rehearse-json", str(out.resolve()), *extra]
    if device == "cpu":
        command.append("--real-tensors")
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=job, stdout=log, stderr=subprocess.STDOUT, timeout=300)
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
    for job in cases["jobs"]:
        parts.append((job["name"], lambda job=job: rehearse(
            here / "jobs" / job["name"], job["rank"], ["--steps", "0", "--timed-steps", str(args.steps)],
            out / f"{job['name']}.json", log, args.device)))
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
    from parc.memory import estimate
    from parc.memory.inputs import shape_of
    from parc.targets import software_of

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
          "| forward + backward (s) | parc's compute + recomputation | optimizer step (s) | parc's |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for job in cases["jobs"]:
        record = _load(results / f"{job['name']}.json")
        if not record:
            print(f"| {job['name']} | {job['rank']} | not measured (log.txt says why) | | | | | | | |")
            continue
        plan = _plan(here, job)
        stage = int(job["coordinates"].get("pp", 0))
        est = estimate(plan)
        allocated = est.stages[stage].total
        reserved = allocated + (est.overheads.inside_allocator if est.overheads is not None else 0)
        b = timing.predict(plan).breakdown
        steps = record["timed_steps"][1:]  # the first warms the kernels and the allocator
        fb = statistics.median(s["forward_backward"] for s in steps)
        opt = statistics.median(s["finish_gradients"] + s["optimizer"] for s in steps)
        memory = (f"{record['max_memory_allocated'] / GIB:.2f} | {allocated / GIB:.2f} ({pct(allocated, record['max_memory_allocated'])}) | "
                  f"{record['max_memory_reserved'] / GIB:.2f} | {reserved / GIB:.2f} ({pct(reserved, record['max_memory_reserved'])})"
                  if "max_memory_allocated" in record else "| | |")
        print(f"| {job['name']} | {job['rank']} (stage {stage}) | {memory} | {fb:.3f} | "
              f"{b.compute + b.recompute:.3f} ({pct(b.compute + b.recompute, fb)}) | {opt:.4f} | {b.optimizer:.4f} |")
    print()
    plan = _plan(here, cases["jobs"][0])
    hw, shape, c = timing.hardware_of(plan), shape_of(plan), DEFAULT
    tp = plan.layout.degree("tp") or 1
    if kernels:
        print(f"one layer's matrix products at {kernels['gemms'][0]['m']} tokens (tp {tp}), as the job runs them\n")
        print("| product | m x k x n | forward TFLOP/s | backward TFLOP/s | parc forward (ms) | measured forward (ms) |")
        print("|---|---|---|---|---|---|")
        charged = measured_f = measured_b = 0.0
        for g in kernels["gemms"]:
            m, k, n = g["m"], g["k"], g["n"]
            flop = 2 * m * k * n
            model = timing.gemm_seconds(m, k, n, "bf16", hw, c)
            charged += model
            measured_f += g["forward_s"]
            measured_b += g["dgrad_s"] + g["wgrad_s"]
            print(f"| {g['name']} | {m} x {k} x {n} | {flop / g['forward_s'] / 1e12:.0f} | "
                  f"{2 * flop / (g['dgrad_s'] + g['wgrad_s']) / 1e12:.0f} | {1e3 * model:.3f} | {1e3 * g['forward_s']:.3f} |")
        layer = timing.attention_gemms(shape, tp, kernels["gemms"][0]["m"])
        up = shape.ffn_matrices - 1
        layer += [(1, 1, kernels["gemms"][0]["m"], shape.hidden, up * shape.ffn / tp),
                  (1, 1, kernels["gemms"][0]["m"], shape.ffn / tp, shape.hidden)]
        model_layer = sum(count * timing.gemm_seconds(m, k, n, "bf16", hw, c) for _, count, m, k, n in layer)
        if software_of(plan).kernels != "fused":  # the job's eager PyTorch (`timing.slowed`)
            model_layer /= c.eager_efficiency
        print(f"\nthe layer: forward {1e3 * measured_f:.2f} ms, backward {1e3 * measured_b:.2f} ms measured; "
              f"parc's GEMM model at the job's shapes {1e3 * charged:.2f} ms forward ({pct(charged, measured_f)}), "
              f"{2e3 * charged:.2f} ms backward ({pct(2 * charged, measured_b)}); what the time model charges the "
              f"layer (fused QKV and gate/up products, its eager runtime's factor) {1e3 * model_layer:.2f} ms forward ({pct(model_layer, measured_f)}), "
              f"{2e3 * model_layer:.2f} ms backward ({pct(2 * model_layer, measured_b)})\n")
        print(f"fused attention (torch's flash kernel, causal, {kernels['attention'][0]['heads']} query heads, "
              f"{kernels['attention'][0]['kv_heads']} kv, head dim {kernels['attention'][0]['head_dim']}, "
              f"{kernels['attention'][0]['seq'] * kernels['attention'][0]['batch']} tokens per call)\n")
        speed = c.attention_speed(hw.generation)
        print("| seq | forward TFLOP/s | backward TFLOP/s | forward (ms) | parc's curve | parc's charge "
              "| backward (ms) | parc's curve | parc's charge |")
        print("|---|---|---|---|---|---|---|---|---|")
        for a in kernels["attention"]:
            s, bsz = a["seq"], a["batch"]
            flop = 4 * bsz * a["heads"] * s * s * a["head_dim"] / 2  # causal: half the square
            f, bwd, _ = timing.flash_attention_seconds(shape, tp, 1, "ring", s, bsz * s, "flash", hw, speed)
            print(f"| {s} | {flop / a['forward_s'] / 1e12:.0f} | {2.5 * flop / a['backward_s'] / 1e12:.0f} | "
                  f"{1e3 * a['forward_s']:.2f} | {1e3 * f * speed:.2f} ({pct(f * speed, a['forward_s'])}) | "
                  f"{1e3 * f:.2f} | {1e3 * a['backward_s']:.2f} | {1e3 * bwd * speed:.2f} "
                  f"({pct(bwd * speed, a['backward_s'])}) | {1e3 * bwd:.2f} |")
        print(f"\n(the curve: FlashAttention-2's, `kernels.FA2_HOPPER`; the charge: the curve x attention_speed "
              f"{speed:.4g}, `Constants.attention_sustained`)")
    return 0


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
    p.add_argument("--rank", type=int)
    p.add_argument("--sweep", type=lambda s: [int(x) for x in s.split(",")], default=list(SWEEP),
                   help="attention's sequence lengths, comma-separated")
    p.add_argument("--sweep-tokens", type=int, default=SWEEP_TOKENS, help="tokens per attention call")
    m = sub.add_parser("measure")
    m.add_argument("dir")
    m.add_argument("out")
    m.add_argument("--steps", type=int, default=3, help="timed steps per job (the first is a warm-up)")
    m.add_argument("--no-kernels", action="store_true", help="only the jobs")
    m.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: a test of this script on small cases (wall clock, CPU kernels, real tensors)")
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("out")
    args = parser.parse_args()
    if args.command == "prepare" and not args.spec:
        args.spec = list(SPECS)
    return {"prepare": prepare, "measure": measure, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
