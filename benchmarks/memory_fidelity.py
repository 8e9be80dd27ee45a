"""parc's memory prediction against published per-GPU memory of torch training jobs.

    .venv/bin/python benchmarks/memory_fidelity.py            # print the table
    .venv/bin/python benchmarks/memory_fidelity.py --json     # one object per row, and the summary
    .venv/bin/python benchmarks/memory_fidelity.py --write    # rewrite the table in docs/memory-model.md
                                                              # and the error band in compiler/memory/band.py

Each row of benchmarks/data/published_memory.yaml (torchtitan's published runs; every figure is
`torch.cuda.max_memory_reserved()` of the fullest rank, in GiB) becomes the spec a user would write
for that run, `target torchtitan`: its layout in torchtitan's mesh order, its model, its GPU, its
batch, sequence, recomputation, float8, torch.compile (and whether it compiled the loss) and
async tp. The spec is compiled as any
spec is, and the prediction is read from `parc.memory.estimate`, the same numbers `parc explain`
prints: the predicted `max_memory_allocated` (the worst rank's peak of tensors) and
`max_memory_reserved` (that peak plus the GPU's overheads inside the allocator, `memory/gpu.py`),
under the target's accounting (`targets.memory_runtime`: FSDP2's, "torch") and, beside it, the
reserved figure under Megatron-LM's fused-kernel accounting ("megatron-flash"), which parc used
for torchtitan under torch.compile until these rows showed it under by a median 43 %. Nothing here is
fitted, and no row is treated by its id: what a row means is read from its fields.

What differs between a torchtitan run and the spec (written out in docs/memory-model.md):
torchtitan's per-op selective recomputation (saves every other matmul output and the attention
outputs) is `recompute selective`, which `target torchtitan` counts with torchtitan's policy
(`activations.torchtitan_selective`); its float8 training (torchao's dynamic scaling) is
parc's `precision fp8`; the pipelining microbatches, the layer split and FSDP's resharding are
torchtitan's defaults at the run's commit (the row's `inferred` list cites them).

"fits" checks: a run "needed more than the part has" when its measured reserved memory exceeds
the part's HBM. On its own part no published run did (they ran); the same run on an 80 GB H100
(`h100-sxm`, the part of the issue's "82 GiB of an 80 GB part") would have, for every row above
79.6 GiB, and the benchmark asks whether parc says "fits" there.

The error band: the worst under-prediction, as a fraction of the prediction ((measured -
predicted) / predicted on the row parc under-predicts most), and the p90 of |error|. Nothing is
fitted on these rows, so they are measured out of sample in that sense (the band is still set by
these rows, the only GPU measurements parc has). `--write` writes both into
compiler/memory/band.py, which the compiler reads: a "fits" with less headroom than the band is
answered "fits (at risk)" (`memory.Estimate.at_risk`, W0410). The table's last column says, for the
runs that needed more than an 80 GB H100, whether parc gives a bare "fits" there.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from yaml_data import read_yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "published_memory.yaml"
DOC = ROOT / "docs" / "memory-model.md"
BAND_FILE = ROOT / "compiler" / "memory" / "band.py"
BEGIN_BAND = "# BEGIN MEASURED (written by benchmarks/memory_fidelity.py --write; do not edit by hand)"
END_BAND = "# END MEASURED"
BEGIN = "<!-- BEGIN PUBLISHED MEMORY: .venv/bin/python benchmarks/memory_fidelity.py --write -->"
END = "<!-- END PUBLISHED MEMORY -->"
GiB = 1 << 30
EIGHTY_GB_PART = "h100-sxm"
"""The catalogue's 80 GB H100: the part the issue's held-out runs overflowed."""

# ---------------------------------------------------------------------------------------------
# A row as a spec


def load(path: Path = DATA) -> dict:
    return read_yaml(path)


def torchtitan_split(layers: int, chunks: int) -> list[int]:
    """torchtitan's `generate_split_points` (9dec370, pipelining_utils.py): the first and the
    last chunk take layers // chunks, the middle chunks one more while the remainder lasts."""
    base, extra = divmod(layers, chunks)
    sizes = []
    for i in range(chunks - 1):
        if i > 0 and extra > 0:
            sizes.append(base + 1)
            extra -= 1
        else:
            sizes.append(base)
    sizes.append(layers - sum(sizes))
    return sizes


def gpu_line(hw: dict, gpu_override: str | None) -> str:
    """The catalogue's part of the row's family whose HBM is within 8 % of the row's (the source
    writes datasheet GB; the catalogue holds what the driver reports), else a part stated in the spec with the row's HBM and the catalogue H100's
    other figures (which memory does not read)."""
    from parc.catalog.gpus import GPUS

    if gpu_override is not None:
        return f"gpu {gpu_override}"
    name = hw["gpu"].lower()
    for key, gpu in GPUS.items():
        same_family = key.split("-")[0] in name.replace(" ", "")
        if same_family and abs(gpu["hbm_bytes"] / 1e9 - hw["hbm_gb"]) <= 0.08 * hw["hbm_gb"]:
            return f"gpu {key}"
    return (f"gpu part-{hw['hbm_gb']}gb {{ hbm {hw['hbm_gb']} GB, bf16 989 TFLOP/s, fp8 1979 TFLOP/s, "
            f"link 450 GB/s, nvlink-domain {hw['gpus_per_node']}, generation hopper }}")


def float8_all_gather(row: dict) -> bool:
    """Whether the row's float8 run gathered float8 weights through FSDP2 (`train.float8_all_gather`,
    torchao's `enable_fsdp_float8_all_gather`): a fact of its config that a float8 row must state."""
    train = row["train"]
    if "float8_all_gather" not in train:
        raise SystemExit(f"{row.get('id', '(a row without an id)')}: train has float8: true but no "
                         "float8_all_gather: (did FSDP2 gather float8 weights? the run's config says)")
    return bool(train["float8_all_gather"])


def compile_loss(row: dict) -> bool:
    """Whether the row's compiled run compiled its loss too (`train.compile_loss`). Which
    torchtitan commit ran decides it, and nothing in the row's other fields says which, so a row
    without it is refused by name rather than guessed."""
    train = row.get("train", {})
    if "compile_loss" not in train:
        raise SystemExit(f"{row.get('id', '(a row without an id)')}: train has compile: true but no compile_loss: "
                         "say whether the run's torchtitan compiled the loss (benchmarks/data/published_memory.yaml's "
                         "header: read from the run's commit)")
    return bool(train["compile_loss"])


def spec_text(row: dict, gpu_override: str | None = None) -> str:
    """The .par a user would write for the row's run under `target torchtitan`."""
    lay, train, hw = row["layout"], row["train"], row["hardware"]
    from parc.catalog.models import MODELS

    # torchtitan's mesh is ["pp", "dp_replicate", "dp_shard", "cp", "tp"], slowest first; FSDP
    # shards over dp_shard x cp, so dp is written (degree 1 included) wherever that is over 1
    fsdp = lay["dp_shard"] * lay["cp"] > 1
    axes = [(a, lay[k]) for a, k in (("tp", "tp"), ("cp", "cp"), ("dp", "dp_shard"), ("pp", "pp"))]
    written = " x ".join(f"{a} {d}" for a, d in axes if d > 1 or (a == "dp" and fsdp)) or "dp 1"
    pp = lay["pp"]
    microbatches = lay["microbatches"] or 1
    micro = train["local_batch"] // microbatches
    lines = [
        f"job {row['id'].replace('_', '-')}",
        f"{written} on nodes({hw['gpus_per_node']} gpus, nvlink)",
        f"model {row['model']}",
        "hardware {",
        f"  {gpu_line(hw, gpu_override)}",
        "}",
        "train {",
        f"  seq {train['seq']}",
        f"  global-batch {train['local_batch'] * lay['dp_shard']}",
        f"  micro-batch {micro}",
        f"  precision {'fp8' if train['float8'] else 'bf16'}",
        "  optimizer adamw",
        f"  recompute {'full' if train['activation_checkpointing'] == 'full' else 'selective'}",
        "}",
    ]
    if lay["tp"] > 1:
        lines.append("tp { sequence-parallel on }")
    if pp > 1:
        interleaved = lay["pipeline_schedule"] != "1f1b"
        chunks = pp * (2 if interleaved else 1)
        split = torchtitan_split(MODELS[row["model"]]["layers"], chunks)
        body = [f"schedule {lay['pipeline_schedule']}"]
        if interleaved:
            body.append("virtual-stages 2")
        body.append("split [" + ", ".join(map(str, split)) + "]")
        lines.append("pp { " + ", ".join(body) + " }")
    if lay["cp"] > 1:
        # torch's context_parallel rotates K/V by all-gather by default (torchtitan sets no other)
        lines.append("cp { flavour all-gather }")
    if fsdp:
        # torchtitan's apply_fsdp: reshard_after_forward=False under pp (zero2), else True (zero3)
        lines.append(f"dp {{ sharding {'zero2' if pp > 1 else 'zero3'} }}")
    options = [f"compile {'on' if train['compile'] else 'off'}"]
    if train["compile"] and not compile_loss(row):
        options.append("compile-loss off")  # the run's torchtitan left the loss eager
    if train["async_tp"]:
        options.append("tp-overlap all")
    if train["float8"] and float8_all_gather(row):
        options.append("float8-all-gather on")  # FSDP2 gathered tensorwise float8 weights
    lines.append("target torchtitan { " + ", ".join(options) + " }")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Prediction against measurement


@dataclass(frozen=True)
class Result:
    id: str
    measured_gib: float
    runtime: str
    predicted_allocated_gib: float
    predicted_reserved_gib: float
    error_pct: float
    """(predicted reserved - measured) / measured, signed: negative is under."""
    megatron_reserved_gib: float
    """The same plan under Megatron-LM's accounting ("megatron-flash"): parc's choice for
    torchtitan under `compile on` before these rows."""
    megatron_error_pct: float
    fits: bool
    part_gib: float
    needed_more_than_part: bool
    fits_on_80gb: bool | None
    """parc's verdict for the same run on an 80 GB H100; None for parts other than H100."""
    needed_more_than_80gb: bool | None
    errors: tuple[str, ...]
    """Error codes parc raised for the spec (the prediction stands; what they say is reported)."""
    under_fraction: float = 0.0
    """(measured - predicted reserved) / predicted reserved: how far above the prediction the run
    measured, as a fraction of the prediction (the error band's unit); negative when over."""
    headroom_80gb: float | None = None
    """On an 80 GB H100, (reserved limit - predicted reserved) / predicted reserved: how much more
    than predicted the run could need and still fit (`Estimate.margin_bytes` over the prediction)."""
    at_risk_on_80gb: bool | None = None
    """parc's "fits (at risk)" on an 80 GB H100: it fits, by less than the measured error band."""


def _compile(text: str, name: str):
    from parc.pipeline import compile_text

    comp = compile_text(text, path=f"{name}.par")
    if comp.plan is None:
        raise SystemExit(f"{name}: does not compile:\n" + "\n".join(d.message for d in comp.diagnostics))
    errors = tuple(sorted({d.code for d in comp.diagnostics if d.is_error}))
    return comp.plan, errors


def evaluate(row: dict) -> Result:
    from parc.memory import estimate

    assert row["measured"]["unit"] == "GiB" and row["measured"]["kind"] == "reserved"
    plan, errors = _compile(spec_text(row), row["id"])
    est = estimate(plan)
    other = estimate(plan, runtime="megatron-flash")
    measured = row["measured"]["value"]
    reserved = est.predicted_reserved_bytes / GiB
    megatron_reserved = other.predicted_reserved_bytes / GiB
    fits80 = needed80 = headroom80 = None
    if "h100" in row["hardware"]["gpu"].lower():
        plan80, _ = _compile(spec_text(row, gpu_override=EIGHTY_GB_PART), row["id"])
        est80 = estimate(plan80)
        fits80 = est80.fits
        needed80 = measured * GiB > est80.hbm_bytes
        headroom80 = est80.margin_bytes / est80.predicted_reserved_bytes
    return Result(
        id=row["id"], measured_gib=measured, runtime=est.runtime,
        predicted_allocated_gib=round(est.peak_bytes / GiB, 2), predicted_reserved_gib=round(reserved, 2),
        error_pct=round(100 * (reserved - measured) / measured, 1),
        megatron_reserved_gib=round(megatron_reserved, 2),
        megatron_error_pct=round(100 * (megatron_reserved - measured) / measured, 1),
        fits=est.fits, part_gib=round(est.hbm_bytes / GiB, 1), needed_more_than_part=measured * GiB > est.hbm_bytes,
        fits_on_80gb=fits80, needed_more_than_80gb=needed80, errors=errors,
        under_fraction=(measured * GiB - est.predicted_reserved_bytes) / est.predicted_reserved_bytes,
        headroom_80gb=headroom80)


@dataclass(frozen=True)
class Band:
    """The memory model's measured error on the rows (compiler/memory/band.py's block)."""

    rows: int
    worst_under: float
    """The largest (measured - predicted) / predicted, rounded up to 4 decimals."""
    worst_under_row: str
    worst_predicted_gib: float
    worst_measured_gib: float
    p90_abs: float
    """The table's p90 of |error| (a fraction of the measured figure)."""


def measure_band(results: list[Result]) -> Band:
    """The worst under-prediction and the p90 of |error|. Rounded up, so that the band written
    covers the worst row it was measured on."""
    assert results, "no published memory row"
    worst = max(results, key=lambda r: (r.under_fraction, r.id))
    return Band(rows=len(results), worst_under=max(0.0, math.ceil(worst.under_fraction * 1e4) / 1e4),
                worst_under_row=worst.id, worst_predicted_gib=worst.predicted_reserved_gib,
                worst_measured_gib=worst.measured_gib,
                p90_abs=round(percentile([abs(r.error_pct) for r in results], 90) / 100, 4))


def with_band(results: list[Result], band: Band) -> list[Result]:
    """Each row's "at risk" verdict on an 80 GB H100 under the band measured on the rows (what
    parc says once compiler/memory/band.py holds it: `Estimate.at_risk`)."""
    return [replace(r, at_risk_on_80gb=None if r.headroom_80gb is None
                    else bool(r.fits_on_80gb and r.headroom_80gb < band.worst_under)) for r in results]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of |values| (deterministic, no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * q // 100) - 1))]


@dataclass(frozen=True)
class Summary:
    rows: int
    median_error_pct: float
    p90_abs_error_pct: float
    worst_error_pct: float
    under: int
    false_fits: int
    """Rows where parc says "fits" and the run needed more than its part."""
    false_fits_on_80gb: int
    """Rows where parc says "fits" on an 80 GB H100 and the run needed more than that part."""
    needed_more_than_80gb: int
    megatron_median_error_pct: float
    bare_fits_on_80gb: int = 0
    """Of the runs that needed more than an 80 GB H100, those parc answers a bare "fits" (not at
    risk) for on it: the issue's target is none."""
    error_band_pct: float = 0.0
    """The band (`Band.worst_under`) in percent of the prediction."""


def summarise(results: list[Result], band: Band | None = None) -> Summary:
    assert results, "no published memory row"
    band = band or measure_band(results)
    errs = [r.error_pct for r in results]
    return Summary(
        rows=len(results), median_error_pct=round(statistics.median(errs), 1),
        p90_abs_error_pct=percentile([abs(e) for e in errs], 90),
        worst_error_pct=max(errs, key=abs), under=sum(e < 0 for e in errs),
        false_fits=sum(r.fits and r.needed_more_than_part for r in results),
        false_fits_on_80gb=sum(bool(r.fits_on_80gb and r.needed_more_than_80gb) for r in results),
        needed_more_than_80gb=sum(bool(r.needed_more_than_80gb) for r in results),
        megatron_median_error_pct=round(statistics.median(r.megatron_error_pct for r in results), 1),
        bare_fits_on_80gb=sum(bool(r.fits_on_80gb and not r.at_risk_on_80gb and r.needed_more_than_80gb)
                              for r in results),
        error_band_pct=round(100 * band.worst_under, 2))


def measure(data: dict | None = None) -> tuple[list[Result], Band, Summary]:
    """Every row predicted, the band measured on them, each 80 GB verdict under that band."""
    data = data or load()
    results = [evaluate(row) for row in data["rows"]]
    band = measure_band(results)
    results = with_band(results, band)
    return results, band, summarise(results, band)


def run_all(data: dict | None = None) -> tuple[list[Result], Summary]:
    results, _, summary = measure(data)
    return results, summary


# ---------------------------------------------------------------------------------------------
# Output


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def _fits80(r: Result) -> str:
    if r.fits_on_80gb is None:
        return "-"
    return "yes (at risk)" if r.at_risk_on_80gb else _yes(r.fits_on_80gb)


def table(results: list[Result], summary: Summary) -> str:
    head = ("| row | measured reserved | parc allocated | parc reserved | error | Megatron's accounting reserved | error "
            "| fits | on an 80 GB H100: needed more / parc says fits | parc errors |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|---|---|\n")
    body = "".join(
        f"| {r.id} | {r.measured_gib:.2f} | {r.predicted_allocated_gib:.2f} | {r.predicted_reserved_gib:.2f} "
        f"| {r.error_pct:+.1f} % | {r.megatron_reserved_gib:.2f} | {r.megatron_error_pct:+.1f} % | {_yes(r.fits)} "
        f"| {_yes(r.needed_more_than_80gb)} / {_fits80(r)} | {' '.join(r.errors) or '-'} |\n"
        for r in results)
    s = summary
    foot = (f"\n{s.rows} rows (GiB; parc's figures under `target torchtitan`). Error of predicted reserved: "
            f"median {s.median_error_pct:+.1f} %, p90 of |error| {s.p90_abs_error_pct:.1f} %, worst "
            f"{s.worst_error_pct:+.1f} %; under on {s.under} of {s.rows}. Megatron's accounting "
            f"(parc's choice for `compile on` before): median {s.megatron_median_error_pct:+.1f} %. \"fits\" where the run needed more than its "
            f"part: {s.false_fits}; on an 80 GB H100, {s.needed_more_than_80gb} runs would need more than the "
            f"part and parc says \"fits\" for {s.false_fits_on_80gb} of them. The error band (the worst "
            f"under-prediction, as a share of the prediction; nothing is fitted on these rows): "
            f"{s.error_band_pct:.2f} %, written to compiler/memory/band.py; a \"fits\" with less headroom is "
            f"\"fits (at risk)\" (W0410), and parc answers a bare \"fits\" for {s.bare_fits_on_80gb} of the "
            f"{s.needed_more_than_80gb}.\n")
    return head + body + foot


def write_doc(text: str, doc: Path = DOC) -> None:
    from parc.atomic import write_file

    current = doc.read_text()
    start, end = current.index(BEGIN) + len(BEGIN), current.index(END)
    write_file(str(doc), current[:start] + "\n" + text + current[end:])


def doc_block(doc: Path = DOC) -> str:
    current = doc.read_text()
    return current[current.index(BEGIN) + len(BEGIN):current.index(END)].strip("\n") + "\n"


def band_block(band: Band) -> str:
    """compiler/memory/band.py's measured block for `band`."""
    return (f"{BEGIN_BAND}\nROWS = {band.rows}\nWORST_UNDER = {band.worst_under!r}\n"
            f'"""(measured - predicted) / predicted on the row whose reserved memory parc under-predicts most\n'
            f'({band.worst_under_row}: predicted {band.worst_predicted_gib:.2f} GiB, measured '
            f'{band.worst_measured_gib:.2f} GiB)."""\n'
            f"WORST_UNDER_ROW = \"{band.worst_under_row}\"\nP90_ABS = {band.p90_abs!r}\n"
            f'"""p90 of |predicted - measured| / measured over the rows (nearest rank)."""\n')


def write_band(band: Band, path: Path = BAND_FILE) -> None:
    from parc.atomic import write_file

    text = path.read_text()
    start, end = text.index(BEGIN_BAND), text.index(END_BAND)
    write_file(str(path), text[:start] + band_block(band) + text[end:])


def written_band_block(path: Path = BAND_FILE) -> str:
    text = path.read_text()
    return text[text.index(BEGIN_BAND):text.index(END_BAND)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--write", action="store_true", help="rewrite the table in docs/memory-model.md")
    parser.add_argument("--spec", metavar="ID", help="print the spec built for one row and stop")
    args = parser.parse_args(argv)
    data = load()
    if args.spec:
        rows = [r for r in data["rows"] if r["id"] == args.spec]
        if not rows:
            print(f"no row {args.spec!r}", file=sys.stderr)
            return 2
        print(spec_text(rows[0]), end="")
        return 0
    results, band, summary = measure(data)
    if args.json:
        print(json.dumps({"rows": [asdict(r) for r in results], "summary": asdict(summary), "band": asdict(band)},
                         indent=1, sort_keys=True))
    else:
        print(table(results, summary), end="")
    if args.write:
        write_doc(table(results, summary))
        write_band(band)
    return 0


if __name__ == "__main__":
    sys.exit(main())
