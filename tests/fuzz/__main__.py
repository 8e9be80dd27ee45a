"""The long fuzz run: `python -m tests.fuzz --minutes 30` from the project's root.

Mutates seeds (tests/fuzz/corpus.py) with stacks of byte, token and tree mutations, checks every
invariant in-process (tests/fuzz/oracle.py), every Nth input also as real subprocesses, and keeps
inputs whose set of diagnostic codes is new as further seeds (a cheap stand-in for coverage).
Each distinct failure is saved under --save (default /tmp/parc-fuzz) with its traceback, and
the run ends with its figures: inputs tried, per level, exit statuses, failures found.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import corpus, mutate, oracle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to run (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (runs are reproducible per seed)")
    parser.add_argument("--max-stack", type=int, default=8, help="most mutations applied to one input")
    parser.add_argument("--subprocess-every", type=int, default=200, help="every Nth input also as subprocesses (0: never)")
    parser.add_argument("--save", type=Path, default=Path(tempfile.gettempdir()) / "parc-fuzz",
                        help="where failing inputs are written")
    parser.add_argument("--time-limit", type=float, default=oracle.TIME_LIMIT_S,
                        help=f"seconds one command may take before it counts as a hang (default {oracle.TIME_LIMIT_S:.0f})")
    parser.add_argument("--memory-limit", type=float, default=4.0,
                        help="GiB of address space for the whole run (default 4): a memory bomb raises "
                        "MemoryError inside parc, which the oracle reports, instead of taking the machine")
    args = parser.parse_args(argv)
    oracle.TIME_LIMIT_S = args.time_limit
    limit = int(args.memory_limit * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    rng = random.Random(args.seed)
    seeds = corpus.seeds()
    clean = [seed for seed in seeds if _clean(seed)]
    pool: list[bytes] = list(seeds)
    seen_codes: set[frozenset[str]] = set()
    tried = 0
    per_level: collections.Counter[str] = collections.Counter()
    per_op: collections.Counter[str] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    subprocess_runs = 0
    failures: dict[str, tuple[oracle.Failure, bytes]] = {}
    args.save.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.minutes * 60
    next_report = time.monotonic() + 60
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="parc-fuzz-work-"))
    try:
        while time.monotonic() < deadline:
            if clean and rng.random() < 0.3:
                # A clean spec and one tree mutation: most such inputs still resolve, so they reach
                # the checks, the memory and time models and code generation.
                data, op = mutate.mutate(rng.choice(clean), rng, seeds, "tree")
                per_level["tree"] += 1
                per_op[op] += 1
            else:
                data = rng.choice(pool if rng.random() < 0.5 else seeds)
                stack = 1
                while stack < args.max_stack and rng.random() < 0.5:
                    stack += 1  # half the inputs carry one mutation
                for _ in range(stack):
                    level = rng.choice(mutate.LEVELS)
                    data, op = mutate.mutate(data, rng, seeds, level)
                    per_level[level] += 1
                    per_op[op] += 1
            _empty(work)
            outcome = oracle.check_input(data, work)
            found = list(outcome.failures)
            if args.subprocess_every and tried % args.subprocess_every == 0:
                _empty(work)
                found += oracle.check_subprocess(data, work)
                subprocess_runs += 1
            tried += 1
            statuses.update(f"{k}={v}" for k, v in outcome.statuses.items())
            if outcome.codes not in seen_codes and len(data) < 20_000:
                seen_codes.add(outcome.codes)
                pool.append(data)
            for failure in found:
                signature = failure.signature()
                if signature not in failures:
                    failures[signature] = (failure, data)
                    name = hashlib.sha1(data).hexdigest()[:12]
                    (args.save / f"{name}.par").write_bytes(data)
                    (args.save / f"{name}.txt").write_text(f"{signature}\n\n{failure.detail}\n")
                    print(f"FAILURE {signature}\n  input: {args.save / name}.par", flush=True)
            if time.monotonic() > next_report:
                next_report += 60
                print(f"[{(time.monotonic() - started) / 60:.0f} min] {tried} inputs, "
                      f"{len(failures)} distinct failures, pool {len(pool)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"\nparc fuzz: seed {args.seed}, {elapsed / 60:.1f} min, {len(seeds)} seeds ({len(clean)} clean)")
    print(f"inputs tried:         {tried:,} ({tried / elapsed:.0f}/s)")
    print(f"subprocess samples:   {subprocess_runs:,}")
    print("mutations applied:    " + ", ".join(f"{k} {v:,}" for k, v in sorted(per_level.items())))
    print(f"distinct code sets:   {len(seen_codes):,} (pool {len(pool):,})")
    print("exit statuses:        " + ", ".join(f"{k} {v:,}" for k, v in sorted(statuses.items())))
    print(f"distinct failures:    {len(failures)}")
    for signature, (_failure, data) in failures.items():
        print(f"  {signature}  ({len(data)} bytes)")
    return 1 if failures else 0


def _clean(data: bytes) -> bool:
    from parc.pipeline import compile_text

    try:
        return compile_text(data.decode("utf-8")).ok
    except UnicodeDecodeError:
        return False


def _empty(directory: Path) -> None:
    for path in directory.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


if __name__ == "__main__":
    sys.exit(main())
