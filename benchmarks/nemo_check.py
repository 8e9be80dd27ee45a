"""NeMo's published pre-training tables, never fitted: a check on runs the calibration never saw.

`benchmarks/data/nemo_performance.yaml` holds the pre-training rows of NeMo's performance summary
(24.07 on DGX-H100 from the NVIDIA/NeMo repository; from the NeMo Framework user guide, 25.02 on
DGX-B200 and its DGX-H100 GPT3-175B row, and 25.04 on DGX-GB200, each with Mixtral 8x7B and 8x22B), each citing its source. The file
is evaluated exactly as a held-out file is (`fidelity.py --published FILE`, the stored constants),
compared on tokens per second per GPU, and this module writes its section of docs/time-model.md
(`fidelity.py --write`), with public_check's table writer:

- every row's error, layout, bubble and exposed communication, and the facts the reader assumed;
- medians, p90 and worst over all rows, dense and mixture-of-experts rows, per release and system;
- every gross error (> 20 %) split into its step's parts: compute, recomputation, bubble, optimizer
  and exposed communication per axis.

    .venv/bin/python benchmarks/nemo_check.py          # print the section's tables
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import public_check  # noqa: E402

NEMO = ROOT / "benchmarks" / "data" / "nemo_performance.yaml"
LONG_SEQUENCE = ROOT / "benchmarks" / "data" / "nemo_long_sequence.yaml"
"""NeMo's long-sequence table on DGX-B200 (NeMo 25.04): never fitted, evaluated as a held-out file is."""


def check(constants=None):
    """Every row predicted with `constants` (the stored ones by default), and the rows left out."""
    return public_check.check(constants, NEMO)


def system_of(row) -> str:
    """The DGX system a row ran on (the id's second word, from the source's "System" line)."""
    return row.id.split("_")[1].upper()


def summary(results) -> str:
    """All rows; dense and mixture-of-experts; per release and system."""
    assert results, "no NeMo row compiled"
    dense = [x for x in results if not x.row.plan.model.experts]
    moe = [x for x in results if x.row.plan.model.experts]
    lines = ["| rows | runs | median abs. error | p90 | worst | median signed error |",
             "|---|---|---|---|---|---|", public_check._line("all evaluated", results)]
    for label, group in (("dense", dense), ("mixture of experts", moe),
                         ("on H100 (the constants' GPU)", [x for x in results if system_of(x.row) == "H100"]),
                         ("on B200 (`blackwell_sustained` fitted on the dense ones, with Bridge's)",
                          [x for x in results if system_of(x.row) == "B200"]),
                         ("on GB200 (`blackwell_sustained` fitted on the dense ones, with Bridge's)",
                          [x for x in results if system_of(x.row) == "GB200"])):
        if group:
            lines.append(public_check._line(label, group))
    for group in sorted({x.row.group for x in results}):
        lines.append(public_check._line(f"`{group}`", [x for x in results if x.row.group == group]))
    return "\n".join(lines)


def terms(results) -> str:
    """Each gross error's predicted step, part by part (seconds): where the time goes."""
    gross = [x for x in results if abs(x.error) > public_check.GROSS]
    axes = ("tp", "cp", "ep", "pp", "dp")
    lines = ["| run | error | step | compute | recompute | bubble | optimizer | "
             + " | ".join(f"exposed {a}" for a in axes) + " |", "|---" * (7 + len(axes)) + "|"]
    for x in gross:
        b = x.breakdown
        lines.append(f"| `{x.row.id}` | {x.error:+.1%} | {b.step:.3f} | {b.compute:.3f} | {b.recompute:.3f} | "
                     f"{b.bubble:.3f} | {b.optimizer:.3f} | "
                     + " | ".join(f"{b.exposed.get(a, 0.0):.3f}" for a in axes) + " |")
    return "\n".join(lines) if gross else "No row is off by more than 20 %."


def _readings(rows, constants) -> list[tuple[float, float]]:
    """Each row's error with `constants` and with attention at the kernel benchmarks' speed
    (`attention_sustained` 1, nothing else refitted)."""
    import fidelity

    prepared = [fidelity.prepare(r) for r in rows]
    kernel = constants.with_values({"attention_sustained": 1.0})
    return list(zip((x.error for x in fidelity.evaluate(rows, prepared, constants)),
                    (x.error for x in fidelity.evaluate(rows, prepared, kernel)), strict=True))


def _causal_rows(path: Path) -> list:
    """The rows of `path` read with attention counted causally (Megatron-Bridge's count) instead of
    the convention they state: the other reading of a table that publishes TFLOP/s alone."""
    import fidelity
    from yaml_data import read_yaml

    entries = [{**e, "flop_convention": "bridge_causal"} for e in read_yaml(path)]
    rows, skipped = fidelity.compile_entries(entries)
    assert rows and not skipped, "a long-sequence row did not compile under a causal count"
    return rows


H100_TABLE = "H100, NeMo 24.03.01 (fitted)"
B200_TABLE = "B200, NeMo 25.04.rc2 (not fitted)"


def long_sequence(constants=None) -> dict[str, str]:
    """Both of NeMo's long-sequence tables, Llama 2 7B on H100 (NeMo 24.03.01, the rows
    `attention_sustained` is fitted on) and Llama 3 8B on B200 (NeMo 25.04, never fitted), each
    row's error as stored and with attention at the kernel benchmarks' speed; the B200 rows also
    under a causal count of their published TFLOP/s. The dependence of the error on the sequence
    says how fast attention ran beside the rest of the step: a reading under which the error is
    flat in the sequence charges the two in the right proportion."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    h100 = [r for r in fidelity.load_rows()[0] if r.group == fidelity.LONG_SEQUENCE_GROUP]
    b200, skipped = fidelity.load_rows(LONG_SEQUENCE)
    assert h100 and b200 and not skipped, "a long-sequence row did not compile"
    causal = _causal_rows(LONG_SEQUENCE)
    causal_errors = [x.error for x in fidelity.evaluate(causal, [fidelity.prepare(r) for r in causal], constants)]
    h100_readings, b200_readings = _readings(h100, constants), _readings(b200, constants)
    lines = ["| table | sequence | GPUs | layout | reported TFLOP/s | error (stored constants) | "
             "error, attention at the kernel benchmarks' speed | error, TFLOP/s read as a causal count |",
             "|---|---|---|---|---|---|---|---|"]
    for label, rows, readings, other in ((H100_TABLE, h100, h100_readings, [None] * len(h100)),
                                         (B200_TABLE, b200, b200_readings, causal_errors)):
        for r, (stored, kernel), c in zip(rows, readings, other, strict=True):
            lines.append(f"| {label} | {r.plan.training.seq_len // 1024}K | {r.gpus:,} | "
                         f"{public_check.layout_text(r.plan)} | {r.reported_tflops:,.0f} | {stored:+.1%} | "
                         f"{kernel:+.1%} | {'-' if c is None else f'{c:+.1%}'} |")

    def span(values) -> str:
        return f"{min(values):+.1%} to {max(values):+.1%}"

    summary = (f"On B200 the stored constants give {span([x for x, _ in b200_readings])} from 8K to 1M tokens; "
               f"with attention at the kernel benchmarks' speed {span([y for _, y in b200_readings])}. On H100 "
               f"(NeMo 24.03.01) the stored constants give {span([x for x, _ in h100_readings])}, attention at the "
               f"benchmarks' speed {span([y for _, y in h100_readings])}. "
               f"Read as a causal count, the B200 rows are {span(causal_errors)}.")
    return {"NEMO_LONGSEQ_TABLE": "\n".join(lines), "NEMO_LONGSEQ_SUMMARY": summary,
            "NEMO_LONGSEQ_N": str(len(b200))}


def section(constants=None) -> dict[str, str]:
    """The NEMO_* placeholders of docs/time-model.md."""
    results, skipped = check(constants)
    moe = [abs(x.error) for x in results if x.row.plan.model.experts]
    dense = [abs(x.error) for x in results if not x.row.plan.model.experts]
    return {"NEMO_TABLE": public_check.table(results, skipped), "NEMO_SUMMARY": summary(results),
            "NEMO_TERMS": terms(results), "NEMO_N": str(len(results)), "NEMO_LEFT_OUT": str(len(skipped)),
            "NEMO_MOE_MEDIAN": f"{statistics.median(moe):.1%}" if moe else "-",
            "NEMO_DENSE_MEDIAN": f"{statistics.median(dense):.1%}" if dense else "-",
            **long_sequence(constants)}


def main() -> int:
    values = section()
    for key in ("NEMO_SUMMARY", "NEMO_TABLE", "NEMO_TERMS", "NEMO_LONGSEQ_TABLE", "NEMO_LONGSEQ_SUMMARY"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
