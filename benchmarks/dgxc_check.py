"""NVIDIA's DGX Cloud benchmarking tables on DGX H100, never fitted: a third NVIDIA source beside
NeMo's and Megatron-Bridge's performance summaries.

`benchmarks/data/dgxc_benchmarking_h100.yaml` holds every Expected Performance table of the dense
NeMo workloads of NVIDIA/dgxc-benchmarking v24.11.1 (Llama 3.1 8B, 70B, 405B; Nemotron-4 15B, 340B;
GPT-3 175B; BF16 and FP8; 8 to 2,304 H100), each row with the launcher configuration the release
ships (recomputation, tensor-parallel overlap, bf16 gradient reduction, fp8 parameters). The file is
evaluated exactly as a held-out file is (`fidelity.py --published FILE`, the stored constants) and
this module writes its section of docs/time-model.md (`fidelity.py --write`): the summary per
model and precision, and every row.

    .venv/bin/python benchmarks/dgxc_check.py          # print the section's tables
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import public_check  # noqa: E402

DGXC_H100 = ROOT / "benchmarks" / "data" / "dgxc_benchmarking_h100.yaml"


def check(constants=None):
    """Every row predicted with `constants` (the stored ones by default), and the rows left out."""
    return public_check.check(constants, DGXC_H100)


def workload(row) -> str:
    """The table a row comes from: model and precision (`dgxc2411_h100_<model>_<precision>_<N>gpu`)."""
    words = row.id.split("_")
    return "_".join(words[2:-2]) + " " + words[-2].upper()


def summary(results) -> str:
    """All rows; BF16 and FP8 apart; per table (model and precision)."""
    assert results, "no DGX Cloud H100 row compiled"
    lines = ["| rows | runs | median abs. error | p90 | worst | median signed error |",
             "|---|---|---|---|---|---|", public_check._line("all evaluated", results)]
    for precision in ("BF16", "FP8"):
        lines.append(public_check._line(precision, [x for x in results if workload(x.row).endswith(precision)]))
    for name in sorted({workload(x.row) for x in results}):
        lines.append(public_check._line(f"`{name}`", [x for x in results if workload(x.row) == name]))
    return "\n".join(lines)


def fp8_pairs(results) -> list[float]:
    """Each FP8 run's predicted FP8-over-BF16 throughput ratio over the table's, against its BF16
    twin (same model, GPUs, layout and release: the precision the only difference), so that what
    FP8 buys is read apart from the level both rows share."""
    by_id = {x.row.id: x for x in results}
    ratios = []
    for row_id, fp8 in by_id.items():
        bf16 = by_id.get(row_id.replace("_fp8_", "_bf16_")) if "_fp8_" in row_id else None
        if bf16 is not None:
            measured = fp8.row.reported_tflops / bf16.row.reported_tflops
            ratios.append(fp8.predicted / bf16.predicted / measured)
    return ratios


def section(constants=None) -> dict[str, str]:
    """The DGXC_H100_* placeholders of docs/time-model.md."""
    results, skipped = check(constants)
    pairs = fp8_pairs(results)
    assert pairs, "no FP8 row with its BF16 twin"
    errors = sorted(abs(x.error) for x in results)
    fp8 = [x.error for x in results if workload(x.row).endswith("FP8")]
    bf16 = [x.error for x in results if workload(x.row).endswith("BF16")]
    return {"DGXC_H100_TABLE": public_check.table(results, skipped), "DGXC_H100_SUMMARY": summary(results),
            "DGXC_H100_N": str(len(results)), "DGXC_H100_LEFT_OUT": str(len(skipped)),
            "DGXC_H100_MEDIAN": f"{statistics.median(errors):.1%}",
            "DGXC_H100_FP8_SIGNED": f"{statistics.median(fp8):+.1%}" if fp8 else "-",
            "DGXC_H100_BF16_SIGNED": f"{statistics.median(bf16):+.1%}" if bf16 else "-",
            "DGXC_H100_PAIRS": f"{len(pairs)} pairs, median {statistics.median(pairs):.3f} "
                               f"({min(pairs):.3f} to {max(pairs):.3f})"}


def main() -> int:
    values = section()
    for key in ("DGXC_H100_SUMMARY", "DGXC_H100_TABLE"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
