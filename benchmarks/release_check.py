"""The same run across software releases: is Blackwell's gap the hardware or the release?

NeMo's 25.02 (B200) and 25.04 (GB200) tables are predicted about 20 % fast where Megatron-Bridge's
25.11 table, the same system's later release, is within a few percent. The model's prediction for a
run does not depend on the release (no term reads it), so putting one model, layout and GPU side by
side across releases separates the two: if the same system's reported throughput rises release over
release to within the model's H100 error, the gap was the release; if it does not, something else is
left. The rows come from four files, each evaluated exactly as a held-out file is (`fidelity.py
--published FILE`, the stored constants), never fitted:

- `nemo_performance.yaml` (NeMo 24.07, 25.02, 25.04), `nemo_performance_25_07.yaml` (NeMo 25.07);
- `megatron_bridge_25_11.yaml` and `megatron_bridge_releases.yaml` (Bridge 25.09, 25.11, 26.02,
  26.02.01, 26.04, 26.04.01, 26.06).

A row's release is its `release` field where the file records it, else its group's tag
(`nemo_2502_performance` -> 25.02, `megatron_bridge_25_11` -> 25.11). This module writes the
RELEASE_* placeholders of docs/time-model.md (`fidelity.py --write`):

- per GPU and release, the dense rows' median signed error;
- every configuration (model, GPU, layout, batch, FP8 recipe) published in two releases or more,
  release by release: reported tokens/s, the prediction, the error and what the reader assumed;
- the series' first and last releases side by side (the figures the doc's reading quotes).

    .venv/bin/python benchmarks/release_check.py          # print the section's tables
"""

from __future__ import annotations

import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DATA = ROOT / "benchmarks" / "data"
FILES = (DATA / "nemo_performance.yaml", DATA / "nemo_performance_25_07.yaml",
         DATA / "megatron_bridge_25_11.yaml", DATA / "megatron_bridge_releases.yaml")
SYSTEMS = {"h100-sxm": "H100", "b200": "B200", "gb200-nvl72": "GB200"}


@dataclass(frozen=True)
class Point:
    """One published row, evaluated: its release and the configuration it shares with other releases."""

    result: object
    """`fidelity.Result` (the row, its predicted step, its predicted TFLOP/s)."""
    framework: str
    release: str
    published: str
    system: str
    tokens: float
    """Reported tokens/s per GPU."""
    model: str
    alike: object = None
    """`fidelity.Result` with the facts Megatron-Bridge's recipes state (`RECIPE_FACTS`), for a
    Bridge row; None for the others (NeMo's files already state them from 25.02 on)."""

    @property
    def predicted_tokens(self) -> float:
        return self.tokens * (1 + self.result.error)

    @property
    def key(self) -> tuple:
        """What must match for two rows to be the same run in two releases: model, GPU, every
        degree, micro-batch, batch, sequence, sharding and the FP8 recipe."""
        plan = self.result.row.plan
        layout = plan.layout
        return (plan.model.layers, plan.model.hidden, self.system,
                tuple((a.name, a.degree) for a in layout.axes), layout.pp.virtual_stages or 1,
                plan.training.micro_batch, plan.training.global_batch, plan.training.seq_len,
                str(layout.dp.sharding), self.per_tensor)

    @property
    def per_tensor(self) -> str:
        """MXFP8, or per-tensor FP8: current scaling where stated, delayed (the reader's default)
        where a release does not say; one class, since NeMo 25.02's unstated recipe is the question."""
        return "MXFP8" if self.result.row.software.fp8_scaling == "mxfp8" else "per-tensor"

    @property
    def alike_error(self) -> float:
        """The error read with the recipes' facts: the Bridge variant, or the row as it is."""
        return (self.alike or self.result).error


RECIPE_FACTS = (
    "grad-reduce-in-bf16: Megatron-Bridge's performance configs set grad_reduce_in_fp32 = False for Llama 3 "
    "and 3.1 in every release read (scripts/performance/configs/llama3/*.yaml at fa0315ae26, "
    "configs/llama/llama3_llm_pretrain.py and llama31_llm_pretrain.py at 00b7660be0 through c270efc505)")
TP_FACTS = ("; tp-comm-overlap: the same configs give the 70B and 405B a userbuffers tp_comm_overlap_cfg per GPU "
            "and keep the overlap on except for nvfp4")
"""What Megatron-Bridge's recipes state and its tables do not, in the words the reader takes from a
row's notes (`published.software_of`), exactly as nemo_performance.yaml states NeMo 25.02/25.04's.
The Bridge files leave them out (read with the reader's defaults, fp32 reduction and backward-only
tp overlap); the section shows both readings."""


def read_alike(entry: dict, entries: list[dict], constants):
    """A Bridge row predicted with the recipes' facts added to its notes; None if it does not compile."""
    import fidelity
    from published import Skipped, compiled, row_spec

    tp = int((entry.get("layout") or {}).get("tp") or 1)
    notes = "; ".join(n for n in (entry.get("notes"), RECIPE_FACTS + (TP_FACTS if tp > 1 else "")) if n)
    row = row_spec(dict(entry, notes=notes), entries)
    row = row if isinstance(row, Skipped) else compiled(row)
    if isinstance(row, Skipped):
        return None
    return fidelity.evaluate([row], [fidelity.prepare(row)], constants or fidelity.DEFAULT)[0]


OFFLOADED = {"Llama 3 70B": 40, "Llama 3.1 405B": 95}
"""Layers whose activations Megatron-Bridge's recipes offload to the Grace CPU's memory on GB200 with
Megatron-FSDP at FP8-CS, in place of recomputation (`cpu_offloading_num_layers`; no recomputation
stated): scripts/performance/configs/llama3/llama3_70b_llm_pretrain.yaml and
llama31/llama31_405b_llm_pretrain.yaml at fa0315ae26 (25.09: gb200 fp8_cs, 40 and 95), and
configs/llama/llama3_workload_base_configs.py (LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_*: 40) at
00b7660be0 (25.11), c0b9a00031, cfeddcd944, 74695a06d7 and 21d102f5ec. parc models no activation
offloading, so the reader charges the least recomputation that fits instead."""


def offloaded(p: Point) -> bool:
    """A Bridge GB200 Megatron-FSDP FP8-CS row of a model whose recipe offloads activations."""
    row = p.result.row
    return (p.framework == "Megatron-Bridge" and p.system == "GB200" and p.model in OFFLOADED
            and row.plan.layout.dp.sharding == "zero3" and row.software.fp8_scaling == "current")


def without_recompute(entry: dict, entries: list[dict], constants):
    """The row with recomputation stated as none (its activations offloaded, which parc does not
    charge: a step with neither recomputation nor offload traffic), and the memory findings."""
    import fidelity
    from published import Skipped, compiled, row_spec

    row = row_spec(dict(entry, layout=dict(entry["layout"], recompute="none")), entries)
    row = row if isinstance(row, Skipped) else compiled(row)
    assert not isinstance(row, Skipped), (entry["id"], row.reason)
    return fidelity.evaluate([row], [fidelity.prepare(row)], constants or fidelity.DEFAULT)[0]


def offload_table(pts: list[Point], constants=None) -> str:
    """The offloading rows as read (recomputation assumed) and with none, part by part."""
    import yaml

    entries = {}
    for path in FILES:
        listed = yaml.safe_load(path.read_text())
        entries.update({e["id"]: (e, listed) for e in listed})
    rows = sorted((p for p in pts if offloaded(p)), key=lambda p: (p.model, release_order(p.release)))
    assert rows, "no offloading row"
    lines = ["| run | release | layers offloaded (recipe) | error as read | recomputation charged (s of step) | "
             "error without recomputation | parc's memory check without it |", "|---|---|---|---|---|---|---|"]
    for p in rows:
        entry, listed = entries[p.result.row.id]
        bare = without_recompute(entry, listed, constants)
        b = p.result.breakdown
        lines.append(f"| `{p.result.row.id}` | {p.release} | {OFFLOADED[p.model]} | {p.result.error:+.1%} | "
                     f"{b.recompute:.2f} of {b.step:.2f} | {bare.error:+.1%} | {', '.join(bare.row.findings) or 'fits'} |")
    return "\n".join(lines)


def release_of(entry: dict) -> str:
    """The release a row states (`release`), else the tag in its group's name."""
    if entry.get("release"):
        return str(entry["release"])
    found = re.search(r"(\d\d)_?(\d\d)(?:_(\d\d))?(?:_|$)", entry["group"])
    assert found, entry["group"]
    return ".".join(g for g in found.groups() if g)


def release_order(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def points(constants=None) -> list[Point]:
    """Every row of the four files, predicted with `constants` (the stored ones by default)."""
    import public_check
    import yaml

    out = []
    for path in FILES:
        listed = yaml.safe_load(path.read_text())
        entries = {e["id"]: e for e in listed}
        results, _ = public_check.check(constants, path)
        for x in results:
            entry = entries[x.row.id]
            bridge = not entry["group"].startswith("nemo")
            out.append(Point(result=x, framework="Megatron-Bridge" if bridge else "NeMo",
                             release=release_of(entry), published=str(entry.get("published") or "-"),
                             system=SYSTEMS[x.row.plan.cluster.gpu.name],
                             tokens=float(entry["outcomes"]["reported"]["tokens_per_s_per_gpu"]),
                             model=entry["model"]["name"],
                             alike=read_alike(entry, listed, constants) if bridge else None))
    return out


def dense(pts: list[Point]) -> list[Point]:
    return [p for p in pts if not p.result.row.plan.model.experts]


def by_release(pts: list[Point]) -> str:
    """Per GPU and release, the dense rows: how many, median signed error, range."""
    lines = ["| GPU | release | framework | dense rows | median signed error | range | median, recipes' facts |",
             "|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[Point]] = {}
    for p in dense(pts):
        groups.setdefault((p.system, p.release, p.framework), []).append(p)
    assert groups, "no dense row compiled"
    for (system, release, framework), group in sorted(groups.items(), key=lambda kv: (
            list(SYSTEMS.values()).index(kv[0][0]), release_order(kv[0][1]))):
        errors = [p.result.error for p in group]
        alike = statistics.median(p.alike_error for p in group)
        lines.append(f"| {system} | {release} | {framework} | {len(group)} | {statistics.median(errors):+.1%} | "
                     f"{min(errors):+.1%} .. {max(errors):+.1%} | {alike:+.1%} |")
    return "\n".join(lines)


def series(pts: list[Point]) -> list[list[Point]]:
    """The configurations published in two releases or more, each ordered by release."""
    groups: dict[tuple, list[Point]] = {}
    for p in dense(pts):
        groups.setdefault(p.key, []).append(p)
    found = [sorted(g, key=lambda p: release_order(p.release)) for g in groups.values()
             if len({p.release for p in g}) > 1]
    return sorted(found, key=lambda g: (list(SYSTEMS.values()).index(g[0].system), g[0].result.row.plan.model.hidden,
                                        g[0].result.row.id))


def describe(p: Point) -> str:
    """A configuration in words: model, GPU, layout, batch, FP8 recipe."""
    import public_check

    row = p.result.row
    sharding = " fsdp" if row.plan.layout.dp.sharding == "zero3" else ""
    return (f"{p.model} on {row.gpus:,} {p.system}, {public_check.layout_text(row.plan)}{sharding}, "
            f"micro-batch {row.plan.training.micro_batch}, batch {row.plan.training.global_batch}, "
            f"FP8 {p.per_tensor}")


def assumed(p: Point) -> str:
    """What the reader assumed or read from the row's notes: recomputation, tp overlap, the FP8
    recipe, gradient-reduction precision."""
    import public_check

    row = p.result.row
    extra = [f"FP8 {row.software.fp8_scaling}"] + (["grad-reduce bf16"] if "grad-reduce bf16" in row.spec else [])
    return "; ".join([public_check.assumed_text(row)] + extra)


def series_table(groups: list[list[Point]]) -> str:
    """Each series release by release."""
    assert groups, "no configuration is published in two releases"
    lines = ["| configuration | release | date | framework | reported tokens/s/GPU | vs first | predicted | error | "
             "error, recipes' facts | as read |", "|---|---|---|---|---|---|---|---|---|---|"]
    for group in groups:
        first = group[0]
        for i, p in enumerate(group):
            label = describe(p) if i == 0 else ""
            lines.append(f"| {label} | {p.release} | {p.published} | {p.framework} | {p.tokens:,.0f} | "
                         f"{p.tokens / first.tokens - 1:+.1%} | {p.predicted_tokens:,.0f} | {p.result.error:+.1%} | "
                         f"{p.alike_error:+.1%} | {assumed(p)} |")
    return "\n".join(lines)


def ends(groups: list[list[Point]]) -> str:
    """Each series' first and last release: throughput change and the error at each end."""
    lines = ["| configuration | releases | reported, first -> last | change | error, first -> last | "
             "error with the recipes' facts, first -> last | spread of the releases' throughput |",
             "|---|---|---|---|---|---|---|"]
    for group in groups:
        first, last = group[0], group[-1]
        spread = max(p.tokens for p in group) / min(p.tokens for p in group) - 1
        lines.append(f"| {describe(first)} | {' -> '.join(p.release for p in group)} | {first.tokens:,.0f} -> "
                     f"{last.tokens:,.0f} | {last.tokens / first.tokens - 1:+.1%} | {first.result.error:+.1%} -> "
                     f"{last.result.error:+.1%} | {first.alike_error:+.1%} -> {last.alike_error:+.1%} | {spread:.1%} |")
    return "\n".join(lines)


def h100_band(pts: list[Point]) -> tuple[float, float]:
    """The model's error on H100, where the constants were fitted, for the system whose later
    releases are the question: Megatron-Bridge's dense H100 rows, as read."""
    errors = [p.result.error for p in dense(pts) if p.system == "H100" and p.framework == "Megatron-Bridge"]
    assert errors, "no H100 row"
    return min(errors), max(errors)


def find(groups: list[list[Point]], model: str, system: str, gpus: int, micro_batch: int,
         fsdp: bool = False) -> list[Point]:
    """The series of one configuration (the doc's reading quotes these); it must exist."""
    found = [g for g in groups if g[0].model == model and g[0].system == system and g[0].result.row.gpus == gpus
             and g[0].result.row.plan.training.micro_batch == micro_batch
             and (g[0].result.row.plan.layout.dp.sharding == "zero3") == fsdp]
    assert len(found) == 1, (model, system, gpus, micro_batch, len(found))
    return found[0]


def reading(groups: list[list[Point]], band: tuple[float, float]) -> str:
    """What the series show, each figure computed here."""
    def inside(error):
        return band[0] <= error <= band[1]

    def run(group):
        return ", ".join(f"{p.release} {p.tokens:,.0f} ({p.result.error:+.1%})" for p in group)

    b8 = find(groups, "Llama 3 8B", "B200", 8, 2)
    b405 = find(groups, "Llama 3.1 405B", "B200", 128, 1)
    g8 = find(groups, "Llama 3 8B", "GB200", 8, 2)
    g70 = find(groups, "Llama 3 70B", "GB200", 64, 1, fsdp=True)
    g70b = find(groups, "Llama 3 70B", "GB200", 64, 2, fsdp=True)
    g405 = find(groups, "Llama 3.1 405B", "GB200", 128, 1, fsdp=True)
    g405b = find(groups, "Llama 3.1 405B", "GB200", 256, 1)
    h70 = [p for g in groups if g[0].system == "H100" and g[0].model == "Llama 3 70B" for p in g]
    h405 = [p for g in groups if g[0].system == "H100" and g[0].model == "Llama 3.1 405B" for p in g]
    assert h70 and h405, "no H100 series"
    h_spread = max(max(p.tokens for p in g) / min(p.tokens for p in g) - 1 for g in groups if g[0].system == "H100"
                   and g[0].framework == "Megatron-Bridge")
    return "\n".join([
        f"- **B200, Llama 3 8B, dp 8 (all compute; no reading of tp overlap or recomputation enters):** "
        f"{run(b8)}. The same system's throughput rose {b8[-1].tokens / b8[0].tokens - 1:+.1%} from NeMo 25.02 "
        f"to Megatron-Bridge {b8[-1].release}, and the error fell to {b8[-1].result.error:+.1%}, against the model's "
        f"error "
        f"on Bridge's H100 rows ({band[0]:+.1%} .. {band[1]:+.1%})" + (": this gap was the release."
                                                                   if inside(b8[-1].result.error) else
                                                                   ", yet not inside it: the release is not all of it."),
        f"- **B200, Llama 3.1 405B, tp 4 cp 2 pp 8:** {run(b405)}; read with the facts Bridge's recipes state "
        f"(bf16 gradient reduction, tp overlap; NeMo 25.02's row states them), {b405[0].alike_error:+.1%} -> "
        f"{b405[-1].alike_error:+.1%}. Throughput rose {b405[-1].tokens / b405[0].tokens - 1:+.1%}: the release "
        f"closes {1 - b405[-1].alike_error / b405[0].alike_error:.0%} of the gap read alike"
        + (", and the rest is inside the H100 band." if inside(b405[-1].alike_error) else
           f"; the rest ({b405[-1].alike_error:+.1%}) is outside the H100 band."),
        f"- **GB200, Llama 3 8B, dp 8:** {run(g8)}. No later release is faster than NeMo 25.04, whose row was "
        f"already within {abs(g8[0].result.error):.0%}: on GB200 the all-compute row never had the gap.",
        f"- **GB200 rows that stay fast in every release:** Llama 3 70B FSDP dp 64, micro-batch 1: {run(g70)}; "
        f"Llama 3.1 405B FSDP tp 2 dp 64, micro-batch 1: {run(g405)}. Their throughput moved "
        f"{g70[-1].tokens / g70[0].tokens - 1:+.1%} and {g405[-1].tokens / g405[0].tokens - 1:+.1%} between releases: "
        f"these gaps are not the release. Beside them the same 70B at micro-batch 2 (batch 256) runs "
        f"{g70b[0].tokens / g70[0].tokens - 1:+.1%} faster than at micro-batch 1 where the model predicts it "
        f"{g70b[0].predicted_tokens / g70[0].predicted_tokens - 1:+.1%} slower (the reader's least recomputation that "
        f"fits: {public_check_assumed(g70[0])} at micro-batch 1, {public_check_assumed(g70b[0])} at 2, where the "
        f"recipe offloads activations instead: the table below); as read, its errors across five releases are {min(p.result.error for p in g70b):+.1%} .. {max(p.result.error for p in g70b):+.1%}, "
        f"and Llama 3.1 405B on 256 GB200 (tp 4 pp 16) {min(p.result.error for p in g405b):+.1%} .. "
        f"{max(p.result.error for p in g405b):+.1%}.",
        f"- **H100, the reading's own test:** read with Bridge's recipes' facts, the Llama 3 70B rows (tp 4 pp 8) "
        f"move from {min(p.result.error for p in h70):+.1%} .. {max(p.result.error for p in h70):+.1%} to "
        f"{min(p.alike_error for p in h70):+.1%} .. {max(p.alike_error for p in h70):+.1%}, the Llama 3.1 405B rows "
        f"(tp 8 cp 2 pp 8) from {min(p.result.error for p in h405):+.1%} .. {max(p.result.error for p in h405):+.1%} "
        f"to {min(p.alike_error for p in h405):+.1%} .. {max(p.alike_error for p in h405):+.1%}: full tp overlap "
        f"as the model charges it hides more of the 405B's tp traffic than these runs do, so the alike reading "
        f"is not closer everywhere and the as-read errors remain the section's figures.",
        f"- **Release-to-release spread of one configuration:** up to {h_spread:.1%} on H100 (Bridge), "
        f"{max(max(p.tokens for p in g) / min(p.tokens for p in g) - 1 for g in groups if g[0].system == 'GB200' and g[0].framework == 'Megatron-Bridge'):.1%} "
        f"on GB200 (Bridge), with no trend: after 25.09 a release moves one configuration by a few percent either way.",
    ])


def public_check_assumed(p: Point) -> str:
    import public_check

    return public_check.assumed_text(p.result.row).split("; ")[0]


def section(constants=None, pts: list[Point] | None = None) -> dict[str, str]:
    """The RELEASE_* placeholders of docs/time-model.md (from `pts` where already predicted with
    the same constants)."""
    pts = points(constants) if pts is None else pts
    groups = series(pts)
    low, high = h100_band(pts)
    return {"RELEASE_BY_GPU": by_release(pts), "RELEASE_SERIES": series_table(groups),
            "RELEASE_ENDS": ends(groups), "RELEASE_N": str(len(dense(pts))),
            "RELEASE_SERIES_N": str(len(groups)), "RELEASE_H100_BAND": f"{low:+.1%} .. {high:+.1%}",
            "RELEASE_READING": reading(groups, (low, high)), "RELEASE_OFFLOAD": offload_table(pts, constants)}


def main() -> int:
    values = section()
    for key in ("RELEASE_BY_GPU", "RELEASE_SERIES", "RELEASE_ENDS", "RELEASE_READING", "RELEASE_OFFLOAD"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
