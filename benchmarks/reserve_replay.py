"""The caching allocator's reserve on the rank's own allocation sequence, under both policies.

    .venv/bin/python benchmarks/reserve_replay.py                 # the fast cases
    .venv/bin/python benchmarks/reserve_replay.py --case NAME ... # chosen cases (--list names them)
    .venv/bin/python benchmarks/reserve_replay.py --json          # one object per case

Each case is a spec and a rank. The generated job is rehearsed once (`parc rehearse`'s run: fake
tensors at the real world size, `train.py --rehearse --allocator-trace`), and the rank's recorded
sequence of allocations and frees is replayed through `parc.memory.allocator` twice, under the
part's limit: with the default policy and with expandable segments (what the generated train.py
sets, as torchtitan's launcher does). Printed per case and policy: the allocated peak, the
reserve, the reserve beyond the allocated peak (the allocator's fragmentation and rounding),
set against the memory model's flat allowance (`gpu.FRAGMENTATION` of HBM) and its derived
blocks stranded at the loss (`gpu.loss_holes`: cached logits, the output layer's staging block); and the rehearsal's
categories against the model's (what the tensors themselves hold).

The cases are the shipped rehearsal specs (tests/test_rehearse.py) and published torchtitan rows
(benchmarks/data/published_memory.yaml) as parc's own job (`target torch`), cut to a few layers
per stage where marked: a full-depth rehearsal takes minutes to an hour on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GiB = float(1 << 30)


def _fidelity():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import memory_fidelity

    return memory_fidelity


def published(row_id: str, layers_per_stage: int | None) -> str:
    """A published row's spec as parc's job, optionally `layers_per_stage` layers on each stage."""
    fidelity = _fidelity()
    row = next(r for r in fidelity.load()["rows"] if r["id"] == row_id)
    text, n = re.subn(r"target torchtitan \{[^}]*\}", "target torch", fidelity.spec_text(row))
    assert n == 1, n
    if layers_per_stage is not None:
        pp = row["layout"]["pp"]
        model = row["model"]
        if pp > 1:
            text, n = re.subn(r"split \[[^]]*\]", "split [" + ", ".join([str(layers_per_stage)] * pp) + "]", text)
            assert n == 1, n
        text, n = re.subn(rf"model {model}\b", f"model {model} {{ layers {layers_per_stage * pp} }}", text)
        assert n == 1, n
    return text


CASES = {
    # name: (spec text or path, rank, fast?)
    "405b-pp16-1f1b-16": ("tests/data/specs/rehearse-405b-16.par", 0, True),
    "405b-128k-cp16-16": ("tests/data/specs/rehearse-405b-128k-16.par", 0, False),
    "70b-tp8-t4_2d-8-layers": (("titan2412_t4_2d", 8), 0, True),
    "405b-t5_1f1b-2-layers": (("titan2412_t5_1f1b", 2), 0, True),
    "405b-t6_cp8-2-layers": (("titan2412_t6_fsdp1_cp8", 2), 0, True),
    "70b-tp8-t4_2d-full": (("titan2412_t4_2d", None), 0, False),
    "405b-t5_1f1b-full": (("titan2412_t5_1f1b", None), 0, False),
    "405b-t6_cp8-full": (("titan2412_t6_fsdp1_cp8", None), 0, False),
}


def spec_of(source) -> tuple[str, str]:
    if isinstance(source, tuple):
        return published(*source), f"{source[0]}.par"
    return (ROOT / source).read_text(encoding="utf-8"), source


def measure(name: str, timeout: float = 7200) -> dict:
    from parc.backends.torch import job_files
    from parc.memory import estimate
    from parc.memory.allocator import DEFAULT, EXPANDABLE
    from parc.pipeline import compile_text
    from parc.rehearse import compare, replay_limit, reserved, run

    source, rank, _ = CASES[name]
    text, path = spec_of(source)
    result = compile_text(text, path)
    assert result.ok, [d.message for d in result.diagnostics]
    plan = result.plan
    records = run(job_files(plan), rank, False, None, timeout, replay_limit(plan), EXPANDABLE, also=(DEFAULT,))
    [record] = records
    [account] = reserved(plan, records)
    e = estimate(plan)
    replays = {EXPANDABLE: record["allocator_replay"], DEFAULT: record["allocator_replays"][DEFAULT]}
    return {
        "case": name, "rank": rank, "stage": account.stage,
        "rows": {r.category: {"predicted_bytes": r.predicted, "rehearsed_bytes": r.rehearsed}
                 for r in compare(plan, records)},
        "replays": {p: {k: replays[p][k] for k in ("max_allocated_bytes", "max_reserved_bytes",
                                                   "reserved_beyond_allocated_peak_bytes", "out_of_memory")}
                    for p in replays},
        "model_fragmentation_bytes": e.overheads.fragmentation,
        "model_cached_logits_bytes": e.overheads.cached_logits,
        "model_staged_gather_bytes": e.overheads.staged_gather,
        "model_allocator_overheads_bytes": account.overheads,
        "predicted_max_memory_reserved_bytes": account.predicted,
    }


def table(results: list[dict]) -> str:
    lines = ["| case | rehearsed peak (model) | policy | allocated | reserved | beyond peak | model's allowance "
             "| + the loss's stranded blocks |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        peak = r["rows"]["peak"]
        for policy, rep in sorted(r["replays"].items()):
            lines.append(f"| {r['case']} | {peak['rehearsed_bytes'] / GiB:.2f} ({peak['predicted_bytes'] / GiB:.2f}) | "
                         f"{policy} | {rep['max_allocated_bytes'] / GiB:.2f} | {rep['max_reserved_bytes'] / GiB:.2f} | "
                         f"{rep['reserved_beyond_allocated_peak_bytes'] / GiB:.3f} | "
                         f"{r['model_fragmentation_bytes'] / GiB:.2f} | "
                         f"{(r['model_cached_logits_bytes'] + r['model_staged_gather_bytes']) / GiB:.2f} |")
    lines += ["", "| case | category | predicted | rehearsed | diff |", "|---|---|---:|---:|---:|"]
    for r in results:
        for category, row in r["rows"].items():
            diff = 100.0 * (row["predicted_bytes"] - row["rehearsed_bytes"]) / max(row["rehearsed_bytes"], 1)
            lines.append(f"| {r['case']} | {category} | {row['predicted_bytes'] / GiB:.2f} | "
                         f"{row['rehearsed_bytes'] / GiB:.2f} | {diff:+.1f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{n}{'' if fast else '  (slow)'}" for n, (_, _, fast) in CASES.items()))
        return 0
    names = args.case or [n for n, (_, _, fast) in CASES.items() if fast]
    assert names, "no case chosen"
    results = []
    for name in names:
        results.append(measure(name))
        print(json.dumps(results[-1], sort_keys=True) if args.json else f"{name}: done", file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1, sort_keys=True) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
