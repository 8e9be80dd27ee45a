"""The same run across software releases: is Blackwell's gap the hardware or the release?

NeMo's 25.02 (B200) and 25.04 (GB200) tables are predicted about 20 % fast where Megatron-Bridge's
25.11 table, the same system's later release, is within a few percent. The model's prediction for a
run does not depend on the release (no term reads it), so putting one model, layout and GPU side by
side across releases separates the two: if the same system's reported throughput rises release over
release to within the model's H100 error, the gap was the release; if it does not, something else is
left. The rows come from four files, each evaluated exactly as a held-out file is (`fidelity.py
--published FILE`, the stored constants), never fitted but for one constant (the dense Blackwell
rows fit `blackwell_sustained`, `blackwell_fit.py`, which the section's figures include):

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
         DATA / "megatron_bridge_25_11.yaml", DATA / "megatron_bridge_releases.yaml",
         DATA / "megatron_bridge_releases_moe.yaml")
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
    table_only: object = None
    """`fidelity.Result` of a row that states its recipe (`recipe`: the release's performance
    recipe, dense and MoE alike) read without it, from its table alone; None for the others."""
    recipe: dict | None = None
    """The row's `recipe` (the release's performance recipe for it), None where the file has none."""

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
    def table_error(self) -> float:
        """The error of the row read from its table alone: the second reading, or the row as it is
        where it states no recipe."""
        return (self.table_only or self.result).error


def evaluate_row(row, constants=None, **software):
    """A compiled row through the time model exactly as `fidelity.py --published` evaluates it;
    `software` replaces fields of the row's `Software` (a what-if: `host_op_seconds`), on a copy."""
    from dataclasses import replace

    import fidelity

    if software:
        row = replace(row, software=replace(row.software, **software))
    return fidelity.evaluate([row], [fidelity.prepare(row)], constants or fidelity.DEFAULT)[0]


def evaluate_entry(entry: dict, entries: list[dict], constants=None):
    """One row of a file through the reader and parc (`row_spec` -> `compiled`), then
    `evaluate_row`. None where the row does not compile."""
    from published import Skipped, compiled, row_spec

    row = row_spec(entry, entries)
    row = row if isinstance(row, Skipped) else compiled(row)
    return None if isinstance(row, Skipped) else evaluate_row(row, constants)


def table_alone(entry: dict, entries: list[dict], constants=None):
    """A row that states its recipe, read from its table alone (no `recipe`): the prediction every
    release of the configuration shares."""
    return evaluate_entry({k: v for k, v in entry.items() if k != "recipe"}, entries, constants)


def offloaded(p: Point) -> int:
    """Layers whose activations the row's recipe offloads to the Grace CPU's memory in place of
    recomputation (`cpu_offloading_num_layers`; 0 where it states none). The main reading takes the
    recipe's recomputation (none) and its offloading (`offload-activations N`: the copies over the
    Grace link, `timing.offload_exposed`); the table-alone reading charges the least recomputation
    that fits."""
    return int((p.recipe or {}).get("cpu_offloading_num_layers") or 0)


def offload_table(pts: list[Point]) -> str:
    """The offloading rows as read (the recipe's recomputation, none, and its offloading) and from
    the table alone (recomputation assumed: the least that fits), part by part. The offload columns:
    the seconds the step's copies need on the host link (`Ledger.host_bytes` over the GPU's share
    at the links' achieved fraction) and what of them the step exposes (`Breakdown.offload`: the
    part of each copy longer than the layers it runs beside, and the copies' HBM traffic)."""
    from parc import timing

    rows = sorted((p for p in pts if offloaded(p)), key=lambda p: (p.model, release_order(p.release)))
    assert rows, "no offloading row"
    lines = ["| run | release | layers offloaded (recipe) | error as read (no recomputation, offloaded) | "
             "host link: copies' seconds / exposed (s of step) | parc's memory check as read | "
             "error, table alone | recomputation the table-alone reading charges (s of step) |",
             "|---|---|---|---|---|---|---|---|"]
    for p in rows:
        b, read = p.table_only.breakdown, p.result.breakdown
        copies = read.host_bytes / (timing.hardware_of(p.result.row.plan).host * timing.DEFAULT.bus_nvlink)
        lines.append(f"| `{p.result.row.id}` | {p.release} | {offloaded(p)} | {p.result.error:+.1%} | "
                     f"{copies:.2f} / {read.offload:.2f} of {read.step:.2f} | "
                     f"{', '.join(p.result.row.findings) or 'fits'} | {p.table_error:+.1%} | "
                     f"{b.recompute:.2f} of {b.step:.2f} |")
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
    from yaml_data import read_yaml

    out = []
    for path in FILES:
        listed = read_yaml(path)
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
                             table_only=table_alone(entry, listed, constants) if "recipe" in entry else None,
                             recipe=entry.get("recipe")))
    return out


def span(errors) -> str:
    """A range of signed errors as the doc writes it: lowest .. highest."""
    errors = list(errors)
    return f"{min(errors):+.1%} .. {max(errors):+.1%}"


def dense(pts: list[Point]) -> list[Point]:
    return [p for p in pts if not p.result.row.plan.model.experts]


def by_release(pts: list[Point]) -> str:
    """Per GPU and release, the dense rows: how many, median signed error, range."""
    lines = ["| GPU | release | framework | dense rows | median signed error | range | median, table alone |",
             "|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[Point]] = {}
    for p in dense(pts):
        groups.setdefault((p.system, p.release, p.framework), []).append(p)
    assert groups, "no dense row compiled"
    for (system, release, framework), group in sorted(groups.items(), key=lambda kv: (
            list(SYSTEMS.values()).index(kv[0][0]), release_order(kv[0][1]))):
        errors = [p.result.error for p in group]
        alike = statistics.median(p.table_error for p in group)
        lines.append(f"| {system} | {release} | {framework} | {len(group)} | {statistics.median(errors):+.1%} | "
                     f"{span(errors)} | {alike:+.1%} |")
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
             "error, table alone | as read |", "|---|---|---|---|---|---|---|---|---|---|"]
    for group in groups:
        first = group[0]
        for i, p in enumerate(group):
            label = describe(p) if i == 0 else ""
            lines.append(f"| {label} | {p.release} | {p.published} | {p.framework} | {p.tokens:,.0f} | "
                         f"{p.tokens / first.tokens - 1:+.1%} | {p.predicted_tokens:,.0f} | {p.result.error:+.1%} | "
                         f"{p.table_error:+.1%} | {assumed(p)} |")
    return "\n".join(lines)


def ends(groups: list[list[Point]]) -> str:
    """Each series' first and last release: throughput change and the error at each end."""
    lines = ["| configuration | releases | reported, first -> last | change | error, first -> last | "
             "error from the table alone, first -> last | spread of the releases' throughput |",
             "|---|---|---|---|---|---|---|"]
    for group in groups:
        first, last = group[0], group[-1]
        spread = max(p.tokens for p in group) / min(p.tokens for p in group) - 1
        lines.append(f"| {describe(first)} | {' -> '.join(p.release for p in group)} | {first.tokens:,.0f} -> "
                     f"{last.tokens:,.0f} | {last.tokens / first.tokens - 1:+.1%} | {first.result.error:+.1%} -> "
                     f"{last.result.error:+.1%} | {first.table_error:+.1%} -> {last.table_error:+.1%} | {spread:.1%} |")
    return "\n".join(lines)


def h100_band(pts: list[Point]) -> tuple[float, float]:
    """The model's error on H100, where the constants were fitted, for the system whose later
    releases are the question: Megatron-Bridge's dense H100 rows, as read."""
    errors = [p.result.error for p in dense(pts) if p.system == "H100" and p.framework == "Megatron-Bridge"]
    assert errors, "no H100 row"
    return min(errors), max(errors)


def find(groups: list[list[Point]], model: str, system: str, gpus: int, micro_batch: int,
         fsdp: bool = False, recipe: str | None = None) -> list[Point]:
    """The series of one configuration (the doc's reading quotes these); it must exist. `recipe`
    (`Point.per_tensor`) tells apart two series that differ in their FP8 recipe alone."""
    found = [g for g in groups if g[0].model == model and g[0].system == system and g[0].result.row.gpus == gpus
             and g[0].result.row.plan.training.micro_batch == micro_batch
             and (g[0].result.row.plan.layout.dp.sharding == "zero3") == fsdp
             and recipe in (None, g[0].per_tensor)]
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
    g405b = find(groups, "Llama 3.1 405B", "GB200", 256, 1, recipe="per-tensor")
    h70 = [p for g in groups if g[0].system == "H100" and g[0].model == "Llama 3 70B" for p in g]
    h405 = [p for g in groups if g[0].system == "H100" and g[0].model == "Llama 3.1 405B" for p in g]
    assert h70 and h405, "no H100 series"
    off = [p for g in groups for p in g if offloaded(p)]
    assert off, "no offloading row in a series"
    h_spread = max(max(p.tokens for p in g) / min(p.tokens for p in g) - 1 for g in groups if g[0].system == "H100"
                   and g[0].framework == "Megatron-Bridge")
    return "\n".join([
        f"- **B200, Llama 3 8B, dp 8 (tp 1: of the recipes' facts only the bf16 gradient reduction enters):** "
        f"{run(b8)}. The same system's throughput rose {b8[-1].tokens / b8[0].tokens - 1:+.1%} from NeMo 25.02 "
        f"to Megatron-Bridge {b8[-1].release}, and the error went to {b8[-1].result.error:+.1%}, against the model's "
        f"error "
        f"on Bridge's H100 rows ({band[0]:+.1%} .. {band[1]:+.1%})" + (": this gap was the release."
                                                                   if inside(b8[-1].result.error) else
                                                                   ", yet not inside it: the release is not all of it."),
        f"- **B200, Llama 3.1 405B, tp 4 cp 2 pp 8:** {run(b405)}, read with the facts Bridge's recipes state "
        f"(bf16 gradient reduction, tp overlap; NeMo 25.02's row states them too); from the tables alone "
        f"{b405[0].table_error:+.1%} -> {b405[-1].table_error:+.1%}. Throughput rose "
        f"{b405[-1].tokens / b405[0].tokens - 1:+.1%}"
        + (f": the release closes {1 - b405[-1].result.error / b405[0].result.error:.0%} of the gap as read"
           if b405[0].result.error > 0 else "")
        + (", and the rest is inside the H100 band." if inside(b405[-1].result.error) else
           f"; the rest ({b405[-1].result.error:+.1%}) is outside the H100 band."),
        f"- **GB200, Llama 3 8B, dp 8:** {run(g8)}. "
        + (f"No later release is faster than NeMo 25.04, whose row was already within "
           f"{abs(g8[0].result.error):.0%}: on GB200 the all-compute row never had the gap."
           if max(p.tokens for p in g8[1:]) <= g8[0].tokens else
           f"The fastest release runs {max(p.tokens for p in g8) / g8[0].tokens - 1:+.1%} on NeMo 25.04's row "
           f"(predicted {g8[0].result.error:+.1%})."),
        f"- **GB200 FSDP rows across releases:** Llama 3 70B FSDP dp 64, micro-batch 1: {run(g70)}; "
        f"Llama 3.1 405B FSDP tp 2 dp 64, micro-batch 1: {run(g405)}. Their throughput moved "
        f"{g70[-1].tokens / g70[0].tokens - 1:+.1%} and {g405[-1].tokens / g405[0].tokens - 1:+.1%} between releases: "
        f"these gaps are not the release. On {len(off)} Bridge rows of this kind the recipe offloads activations "
        f"to the Grace CPU in place of recomputation (the table below): read as stated (no recomputation, the "
        f"offloading's copies charged where they outlast the layers beside them, "
        f"{span(p.result.breakdown.offload / p.result.breakdown.step for p in off)} of the step; its memory check "
        f"finds {', '.join(sorted({c for p in off for c in p.result.row.findings})) or 'no error'} on "
        f"{sum(1 for p in off if p.result.row.findings)} of them) "
        f"they are {span(p.result.error for p in off)}; from the "
        f"tables alone (the reader's least recomputation that fits) {min(p.table_error for p in off):+.1%} .. "
        f"{max(p.table_error for p in off):+.1%}. The 70B at micro-batch 2 (batch 256, "
        f"{', '.join(p.release for p in g70b)}) runs {g70b[0].tokens / g70[0].tokens - 1:+.1%} on NeMo's micro-batch 1 "
        f"where the model predicts {g70b[0].predicted_tokens / g70[0].predicted_tokens - 1:+.1%}; Llama 3.1 405B on "
        f"256 GB200 (tp 4 pp 16) {min(p.result.error for p in g405b):+.1%} .. "
        f"{max(p.result.error for p in g405b):+.1%}.",
        h100_test(h70, h405),
        f"- **Release-to-release spread of one configuration:** up to {h_spread:.1%} on H100 (Bridge), "
        f"{max(max(p.tokens for p in g) / min(p.tokens for p in g) - 1 for g in groups if g[0].system == 'GB200' and g[0].framework == 'Megatron-Bridge'):.1%} "
        f"on GB200 (Bridge), with no trend: after 25.09 a release moves one configuration by a few percent either way.",
    ])


# ---------------------------------------------------------------------------------------------
# The mixture-of-experts rows (megatron_bridge_releases_moe.yaml beside megatron_bridge_25_11.yaml)

def moe(pts: list[Point]) -> list[Point]:
    return [p for p in pts if p.result.row.plan.model.experts]


def moe_series(pts: list[Point]) -> list[list[Point]]:
    """The MoE configurations (model, GPU, every degree, batch, precision) published in two
    releases or more, each ordered by release."""
    groups: dict[tuple, list[Point]] = {}
    for p in moe(pts):
        layout = p.result.row.plan.layout
        groups.setdefault(p.key + (p.result.row.plan.training.precision, layout.degree("ep")), []).append(p)
    found = [sorted(g, key=lambda p: release_order(p.release)) for g in groups.values()
             if len({p.release for p in g}) > 1]
    return sorted(found, key=lambda g: (list(SYSTEMS.values()).index(g[0].system), g[0].result.row.plan.model.hidden,
                                        g[0].result.row.plan.training.micro_batch, g[0].result.row.id))


def recipe_text(p: Point) -> str:
    """The recipe's MoE facts in a few words: dispatcher, CUDA graphs, ep overlap, routing."""
    r = p.recipe
    if r is None:
        return "not transcribed (megatron_bridge_25_11.yaml)"
    dispatcher = r.get("moe_token_dispatcher_type", "?")
    if dispatcher == "flex":
        dispatcher = f"flex/{r.get('moe_flex_dispatcher_backend', '?')}"
    graphs = r.get("cuda_graph_impl", "none")
    if graphs == "transformer_engine":
        graphs = "TE graphs of " + ", ".join(r.get("cuda_graph_scope") or [])
    elif graphs == "local":
        graphs = "per-layer graphs"
    elif graphs == "full_iteration":
        graphs = "full-iteration graph"
    else:
        graphs = "no graphs"
    words = [dispatcher, graphs]
    if r.get("moe_a2a_overlap"):
        words.append("a2a overlap")
    if r.get("moe_pad_expert_input_to_capacity"):
        words.append(f"token drop, capacity {r.get('moe_expert_capacity_factor')} padded")
    if r.get("other"):
        words.append(", ".join(r["other"]))
    return "; ".join(words)


def moe_by_release(pts: list[Point]) -> str:
    """Per GPU and release, the MoE rows: how many, median signed error as read and from the table alone."""
    lines = ["| GPU | release | MoE rows | median signed error | range | median, table alone |",
             "|---|---|---|---|---|---|"]
    groups: dict[tuple, list[Point]] = {}
    for p in moe(pts):
        groups.setdefault((p.system, p.release), []).append(p)
    assert groups, "no MoE row compiled"
    for (system, release), group in sorted(groups.items(), key=lambda kv: (
            list(SYSTEMS.values()).index(kv[0][0]), release_order(kv[0][1]))):
        errors = [p.result.error for p in group]
        lines.append(f"| {system} | {release} | {len(group)} | {statistics.median(errors):+.1%} | "
                     f"{span(errors)} | "
                     f"{statistics.median(p.table_error for p in group):+.1%} |")
    return "\n".join(lines)


def moe_describe(p: Point) -> str:
    row = p.result.row
    import public_check

    layout, text = row.plan.layout, public_check.layout_text(row.plan)
    folded = f" (ep {layout.degree('ep')} folded)" if layout.ep.folded_over and f"ep{layout.degree('ep')}" not in text else ""
    return (f"{p.model} on {row.gpus:,} {p.system}, {text}{folded}, "
            f"micro-batch {row.plan.training.micro_batch}, batch {row.plan.training.global_batch}, "
            f"{row.plan.training.precision}" + (f" {p.per_tensor}" if row.plan.training.precision == "fp8" else ""))


def moe_series_table(groups: list[list[Point]]) -> str:
    """Each MoE series release by release, with what its recipe states."""
    assert groups, "no MoE configuration is published in two releases"
    lines = ["| configuration | release | reported tokens/s/GPU | vs first | predicted | error | error, table alone | "
             "recipe: dispatcher; CUDA graphs; other |", "|---|---|---|---|---|---|---|---|"]
    for group in groups:
        first = group[0]
        for i, p in enumerate(group):
            lines.append(f"| {moe_describe(p) if i == 0 else ''} | {p.release} | {p.tokens:,.0f} | "
                         f"{p.tokens / first.tokens - 1:+.1%} | {p.predicted_tokens:,.0f} | {p.result.error:+.1%} | "
                         f"{p.table_error:+.1%} | {recipe_text(p)} |")
    return "\n".join(lines)


def moe_summary(pts: list[Point]) -> str:
    """megatron_bridge_releases_moe.yaml's rows: median, p90 and worst |error|, as read and from the
    table alone, and per model."""
    rows = [p for p in moe(pts) if p.recipe is not None]
    assert rows, "no row of megatron_bridge_releases_moe.yaml"

    def stats(errors):
        errors = sorted(abs(e) for e in errors)
        p90 = errors[min(len(errors) - 1, round(0.9 * (len(errors) - 1)))]
        return f"median {statistics.median(errors):.1%}, p90 {p90:.1%}, worst {errors[-1]:.1%}"

    models = sorted({p.model for p in rows})
    per_model = "; ".join(f"{m} ({sum(p.model == m for p in rows)}) {stats(p.result.error for p in rows if p.model == m)}"
                          for m in models)
    return (f"The {len(rows)} rows of `megatron_bridge_releases_moe.yaml` as read: |error| "
            f"{stats(p.result.error for p in rows)}; from the table alone {stats(p.table_error for p in rows)}. "
            f"Per model, as read: {per_model}.")


def token_layer_gap(p: Point) -> float:
    """Seconds the prediction lacks per token-layer: the step time the model misses (reported less
    predicted) over the token-layers one pipeline rank runs a step, its micro-batches' tokens
    (micro-batches x micro-batch x sequence / cp) times the layers it holds (layers / pp); the tp
    ranks of a stage share the figure. The reading that compares rows of other models,
    micro-batches and GPUs: a cost per token-layer comes out the same on all of them, one per
    micro-batch or per step does not (docs/time-model.md, "The same gap outside gpt-oss")."""
    plan, step = p.result.row.plan, p.result.breakdown.step
    tokens = p.result.breakdown.microbatches * plan.training.micro_batch * plan.training.seq_len
    tokens /= plan.layout.degree("cp")
    return step * p.result.error / (tokens * plan.model.layers / plan.layout.degree("pp"))


def graph_kind(recipe: dict) -> str:
    """The recipe's CUDA graphs in one word, for sorting: none, partial (Transformer Engine's
    scopes), full (a full-iteration graph or Megatron-Core's per-layer ones)."""
    impl = recipe.get("cuda_graph_impl", "none")
    return "none" if impl == "none" else "partial" if impl == "transformer_engine" else "full"


def gap_table(pts: list[Point]) -> str:
    """Every row of megatron_bridge_releases_moe.yaml with its recipe's graphs and dispatcher, its
    error and what it lacks per token-layer (`token_layer_gap`), rows without any CUDA graph first."""
    rows = [p for p in moe(pts) if p.recipe is not None]
    assert rows, "no row of megatron_bridge_releases_moe.yaml"
    order = ("none", "partial", "full")
    rows.sort(key=lambda p: (order.index(graph_kind(p.recipe)), p.model,
                             list(SYSTEMS.values()).index(p.system), release_order(p.release)))
    lines = ["| run | GPU | release | micro-batch | recipe | error | lacks per token-layer |",
             "|---|---|---|---|---|---|---|"]
    for p in rows:
        lines.append(f"| `{p.result.row.id}` | {p.system} | {p.release} | {p.result.row.plan.training.micro_batch} | "
                     f"{recipe_text(p)} | {p.result.error:+.1%} | {token_layer_gap(p) * 1e6:+.2f} us |")
    return "\n".join(lines)


HOST_SCALES = (2, 4)
"""Multiples of `kernels.HOST_OP_SECONDS` the host check tries (a what-if, never stored)."""


def graphs_over_experts(recipe: dict) -> bool:
    """The recipe captures the MoE layers' experts and dispatcher in a CUDA graph: a full-iteration
    graph, Megatron-Core's per-layer ("local") graphs, or Transformer Engine's graphs with the "moe"
    scope. TE's scopes attn / moe_router / moe_preprocess leave the experts and the token-count read
    eager."""
    impl = recipe.get("cuda_graph_impl")
    return impl in ("full_iteration", "local") or (impl == "transformer_engine"
                                                   and "moe" in (recipe.get("cuda_graph_scope") or ()))


def host_rows(pts: list[Point]) -> list[Point]:
    """Every MoE row whose recipe states no CUDA graph over its experts and whose dispatcher reads
    the token counts on the host (`Software.moe_host_sync`): the rows the host term decides."""
    return [p for p in moe(pts) if p.recipe and "cuda_graph_impl" in p.recipe and not graphs_over_experts(p.recipe)
            and p.result.row.software.moe_host_sync]


def host_errors(pts: list[Point], constants=None) -> dict[str, tuple[float, ...]]:
    """Each of `host_rows` predicted again with the host's time per op at each of `HOST_SCALES` x
    `kernels.HOST_OP_SECONDS` (`Software.host_op_seconds` on a copy of the row): the errors, the
    stored value's first."""
    from parc import kernels

    rows = host_rows(pts)
    assert rows, "no MoE row keeps the host sync without graphs over its experts"
    return {p.result.row.id: (p.result.error,) + tuple(
        evaluate_row(p.result.row, constants, host_op_seconds=kernels.HOST_OP_SECONDS * k).error for k in HOST_SCALES)
        for p in rows}


def host_table(pts: list[Point], host: dict[str, tuple[float, ...]]) -> str:
    """The host check's rows: every MoE row without graphs over its experts that keeps the host sync."""
    from parc import kernels

    rows = sorted((p for p in moe(pts) if p.result.row.id in host),
                  key=lambda p: (list(SYSTEMS.values()).index(p.system), p.model, release_order(p.release),
                                 p.result.row.id))
    assert rows, "no row in the host check"
    head = " | ".join(f"error at {kernels.HOST_OP_SECONDS * k * 1e6:g} us" for k in (1,) + HOST_SCALES)
    lines = [f"| run | release | micro-batch | recipe | {head} |", "|---|---|---|---|" + "---|" * (1 + len(HOST_SCALES))]
    for p in rows:
        errors = " | ".join(f"{e:+.1%}" for e in host[p.result.row.id])
        lines.append(f"| `{p.result.row.id}` | {p.release} | {p.result.row.plan.training.micro_batch} | "
                     f"{recipe_text(p)} | {errors} |")
    return "\n".join(lines)


def moe_find(pts: list[Point], model: str, system: str, release: str, micro_batch: int | None = None) -> Point:
    """One MoE row (the reading quotes it); it must exist and be the only one."""
    found = [p for p in moe(pts) if p.model == model and p.system == system and p.release == release
             and (micro_batch is None or p.result.row.plan.training.micro_batch == micro_batch)]
    assert len(found) == 1, (model, system, release, micro_batch, [p.result.row.id for p in found])
    return found[0]



def oss_b_memory(rows) -> str:
    """What parc's memory check says of the gpt-oss B200 rows under the recipe's recomputation."""
    codes = sorted({c for p in rows for c in p.result.row.findings})
    if codes:
        return f"under which parc's memory check finds the step does not fit ({', '.join(codes)})"
    return "under which parc's memory check finds the step fits"

def moe_reading(pts: list[Point], host: dict[str, tuple[float, ...]]) -> str:
    """What the MoE series show, each figure computed here."""
    from parc import kernels

    op_us = kernels.HOST_OP_SECONDS * 1e6
    q = "Qwen3-30B-A3B"
    b1, b2, b4 = (moe_find(pts, q, "B200", r) for r in ("25.11", "26.02", "26.02.01"))
    b4s = [moe_find(pts, q, "B200", r) for r in ("26.02.01", "26.04", "26.04.01")]
    g11, g4 = moe_find(pts, q, "GB200", "25.11"), moe_find(pts, q, "GB200", "26.02.01")
    g401, g606 = moe_find(pts, q, "GB200", "26.04.01"), moe_find(pts, q, "GB200", "26.06")
    h0, h1 = moe_find(pts, q, "H100", "26.02"), moe_find(pts, q, "H100", "26.02.01")
    h9, h11 = moe_find(pts, q, "H100", "25.09"), moe_find(pts, q, "H100", "25.11")
    l0, l1 = (next(p for p in dense(pts) if p.framework == "Megatron-Bridge" and p.system == "H100"
                   and p.model == "Llama 3 70B" and p.release == r) for r in ("26.02", "26.02.01"))
    groups = moe_series(pts)
    oss = next(g for g in groups if g[0].model == "gpt-oss-120b" and g[0].system == "GB200")
    oss_b = next(g for g in groups if g[0].model == "gpt-oss-120b" and g[0].system == "B200"
                 and g[0].result.row.plan.layout.degree("ep") == 8)  # the printed ep 8 (26.02 printed ep 64)
    oss6 = moe_find(pts, "gpt-oss-120b", "GB200", "26.06")
    ds, ds0 = moe_find(pts, "DeepSeek-V3", "B200", "26.04.01"), moe_find(pts, "DeepSeek-V3", "B200", "26.04")
    big = sorted((p for p in moe(pts) if p.model == "Qwen3-235B-A22B" and p.system == "H100"
                  and p.recipe and p.recipe.get("moe_a2a_overlap")), key=lambda p: release_order(p.release))
    assert len(oss) >= 4 and big and oss_b, "missing series"
    oss_b_bare = [p.table_only.row.assumptions for p in oss_b if p.table_only]
    oss_b_least = sorted({a.split(" (")[0] for found in oss_b_bare for a in found if "least that fits" in a})

    def per_layer_micro(p):
        """(layer, micro-batch) pairs one GPU runs per step, and the reported and predicted step."""
        plan = p.result.row.plan
        micro = plan.training.global_batch // ((plan.layout.dp.degree or 1) * plan.training.micro_batch)
        pairs = plan.model.layers // (plan.layout.pp.degree or 1) * micro
        reported = plan.training.global_batch * plan.training.seq_len / p.result.row.gpus / p.tokens
        return pairs, reported, p.result.breakdown.step

    (n1, r1, s1), (n4, r4, s4) = per_layer_micro(b2), per_layer_micro(b4)
    fixed_reported, fixed_predicted = (r1 - r4) / (n1 - n4), (s1 - s4) / (n1 - n4)

    def need(p):
        """The smallest tried multiple of the host's op time that takes the row to or past the
        reported speed, or None."""
        errors = host[p.result.row.id]
        for k, e in zip((1,) + HOST_SCALES, errors, strict=True):
            if e <= 0:
                return k
        return None

    def times(p):
        k = need(p)
        return f"{k} x" if k else f"more than {HOST_SCALES[-1]} x"

    moved = []
    for g in groups:
        first, last = g[0], g[-1]
        moved.append((abs(last.result.error) - abs(first.result.error), first, last))
    toward = [m for m in moved if m[0] < -0.02]
    away = [m for m in moved if m[0] > 0.02]
    jumps = [(f, lst) for _, f, lst in moved if abs(lst.tokens / f.tokens - 1) > 0.2]
    quiet = max(abs(lst.tokens / f.tokens - 1) for _, f, lst in moved if abs(lst.tokens / f.tokens - 1) <= 0.2)

    def step(f, lst):
        return (f"{f.model} on {f.system} {f.release} -> {lst.release} ({lst.tokens / f.tokens - 1:+.0%}; "
                f"{recipe_text(f)} -> {recipe_text(lst)})")

    return "\n".join([
        f"- **Release over release, one configuration:** of {len(groups)} MoE configurations published twice or "
        f"more, {len(toward)} end closer to the prediction than they start, {len(away)} further from it and "
        f"{len(groups) - len(toward) - len(away)} within 2 points. Throughput moves by more than 20 % in "
        f"{len(jumps)}: {'; '.join(step(f, lst) for f, lst in jumps)}. The other {len(groups) - len(jumps)} move "
        f"{quiet:.1%} at most from first to last. The large changes come with one the recipe or the page states "
        f"(token drop to dropless from 25.11 on; a full-iteration CUDA graph with fused kernels in 26.06) or, on "
        f"H100, with none (below).",
        f"- **B200's Qwen3-30B-A3B gap is the micro-batch, which the table states.** At micro-batch 1 "
        f"(25.11, 26.02) {b1.tokens:,.0f} and {b2.tokens:,.0f} tokens/s, predicted {b1.result.error:+.1%} and "
        f"{b2.result.error:+.1%}; 26.02.01's recipe runs micro-batch 4 (and HybridEP, and CUDA graphs over "
        f"attention too): {b4.tokens:,.0f} ({b4.tokens / b2.tokens:.2f}x), predicted {b4.result.error:+.1%}, and "
        f"26.04 / 26.04.01 {', '.join(f'{p.result.error:+.1%}' for p in b4s[1:])}. The model gives micro-batch 4 "
        f"{b4.predicted_tokens / b2.predicted_tokens:.2f}x micro-batch 1 where the runs give "
        f"{b4.tokens / b2.tokens:.2f}x: the same tokens in {n1:,} (layer, micro-batch) pairs per GPU instead of {n4:,} "
        f"cost the runs {r1 - r4:.1f} s more per step, {fixed_reported * 1e3:.1f} ms per extra pair, where the model "
        f"charges {fixed_predicted * 1e3:.1f} ms: a fixed cost per layer and micro-batch, whatever issues it. The 25.11 table's 2.6x between B200 and GB200 at one layout is not one "
        f"layout: GB200 ran micro-batch 4 (25.11: {g11.tokens:,.0f}); at micro-batch 4 on both (26.02.01) B200 "
        f"{b4.tokens:,.0f} and GB200 {g4.tokens:,.0f}, predicted {b4.result.error:+.1%} and {g4.result.error:+.1%}.",
        f"- **The rows without graphs over the experts, against the host term.** Megatron-Bridge's partial "
        f"CUDA graphs (scope moe_router, moe_preprocess, attn) leave the experts and the dispatcher's "
        f"token-count read eager, so every dropless row here before 26.06 keeps the host sync parc charges "
        f"(`kernels.host_stall_seconds`, `host_paced_seconds`, {op_us:g} us per op, `HOST_OP_SECONDS`). Raising "
        f"that time (the table below, a what-if, nothing stored) reaches the micro-batch 1 B200 row at "
        f"{times(b2)} and the H100 26.02 row at {times(h0)}, but then the H100 26.02.01 row (the same printed "
        f"layout; recipe {recipe_text(h1)}) falls from {host[h1.result.row.id][0]:+.1%} to "
        f"{host[h1.result.row.id][-1]:+.1%}, and the micro-batch 4 rows (B200 26.02.01 {host[b4.result.row.id][0]:+.1%}, "
        f"GB200 26.04.01 {host[g401.result.row.id][0]:+.1%}) to {host[b4.result.row.id][-1]:+.1%} and "
        f"{host[g401.result.row.id][-1]:+.1%}. Within 10 % of the runs, of the {len(host)} rows of the host check: "
        + ", ".join(f"{sum(abs(e[i]) <= 0.10 for e in host.values())} at {k} x" for i, k in enumerate((1,) + HOST_SCALES))
        + (": no one host time per op fits these rows, so it is not changed." if all(
            sum(abs(e[i]) <= 0.10 for e in host.values()) < len(host) for i in range(1 + len(HOST_SCALES))) else "."),
        f"- **H100's Qwen3-30B-A3B, 26.02 -> 26.02.01,** the same printed layout: {h0.tokens:,.0f} -> "
        f"{h1.tokens:,.0f} tokens/s ({h1.tokens / h0.tokens - 1:+.1%}), error {h0.result.error:+.1%} -> "
        f"{h1.result.error:+.1%}; the stated recipe "
        + ("is the same" if recipe_text(h0) == recipe_text(h1) else
           f"changes ({recipe_text(h0)} -> {recipe_text(h1)}), which the model reads in the other direction "
           f"(table alone {h0.table_error:+.1%} -> {h1.table_error:+.1%})"
           if h0.predicted_tokens > h1.predicted_tokens else f"changes ({recipe_text(h0)} -> {recipe_text(h1)})")
        + f". Among the changes in `scripts/performance` between "
        f"the two commits, one every run goes through is the mock dataset's DataLoader settings "
        f"(utils/datasets.py: num_workers, pin_memory, persistent_workers now taken from the recipe); the same "
        f"releases' dense H100 row (Llama 3 70B, tp 4 pp 8) moved {l1.tokens / l0.tokens - 1:+.1%}. The earlier drop was the move from token drop to "
        f"dropless: 25.09 (capacity factor 1.0, padded; {h9.tokens:,.0f}, {h9.result.error:+.1%}) -> 25.11 "
        f"(dropless, force-balanced; {h11.tokens:,.0f}, {h11.result.error:+.1%}) on the same layout; the model "
        f"moves {h11.predicted_tokens / h9.predicted_tokens - 1:+.1%} where the runs move "
        f"{h11.tokens / h9.tokens - 1:+.1%}.",
        f"- **GB200's Qwen3-30B-A3B** rose {g11.tokens:,.0f} (25.11, {g11.result.error:+.1%}) -> "
        f"{g401.tokens:,.0f} (26.04.01, {g401.result.error:+.1%}): toward the prediction. 26.06 adds a "
        f"full-iteration CUDA graph, the ep overlap, cuteDSL's fused grouped MLP and FP8 attention: "
        f"{g606.tokens:,.0f} ({g606.tokens / g401.tokens - 1:+.1%}); reading the graph (no host sync), the "
        f"overlap, the FP8 attention and the fused grouped MLP takes it from {g606.table_error:+.1%} to "
        f"{g606.result.error:+.1%}.",
        f"- **gpt-oss-120b on GB200 stays fast in every release:** {', '.join(f'{p.release} {p.tokens:,.0f} ({p.result.error:+.1%})' for p in oss)}; "
        f"table alone {span(p.table_error for p in oss)}. Its "
        f"throughput moves {max(p.tokens for p in oss) / min(p.tokens for p in oss) - 1:.1%} across releases: not the "
        f"release. 26.06's MXFP8 row with the full-iteration graph and fused kernels: {oss6.tokens:,.0f}, "
        f"{oss6.result.error:+.1%}.",
        f"- **gpt-oss-120b on 64 B200 at the printed ep 8** ({', '.join(p.release for p in oss_b)}): "
        f"{span(p.table_error for p in oss_b)} from the table alone "
        f"(the reader's least recomputation that fits: {', '.join(oss_b_least) or 'none'}), "
        f"{span(p.result.error for p in oss_b)} with the recipe's "
        f"recomputation (layernorm, moe_act), {oss_b_memory(oss_b)}; the recipe's own B200 "
        f"config is ep 64 through 26.02.01 (`recipe.layout_note`), so the printed ep may not be what ran.",
        f"- **DeepSeek-V3 on 256 B200, 26.04.01:** the recipe moves to DeepEP, ep 32 over pp 8 (v2) and the ep "
        f"overlap ({ds.tokens:,.0f} tokens/s, {ds.tokens / ds0.tokens - 1:+.1%} on 26.04's ep 8 pp 16). From the "
        f"table alone (NCCL's all-to-all, no overlap) ep 32 spans four nodes' NICs: {ds.table_error:+.1%}; read with "
        f"the stated DeepEP and overlap, whose physics parc has: {ds.result.error:+.1%}. Here the recipe's facts "
        f"decide the row.",
        f"- **The stated ep overlap (`moe_a2a_overlap`) read as parc charges it** takes Qwen3-235B-A22B on 256 H100 "
        f"from {span(p.table_error for p in big)} (table alone) to "
        f"{span(p.result.error for p in big)}: it hides more of the "
        f"all-to-all than these runs do. Read, as every stated fact with physics is; not tuned.",
    ])


def conclusion(pts: list[Point], groups: list[list[Point]], band: tuple[float, float]) -> str:
    """The hypothesis per GPU, each figure computed from the points: B200's all-compute row against
    the H100 band; on GB200 the all-compute row, the offloading rows, the MXFP8 tp 2 pp 4 series,
    the pipeline-parallel 405B, and MXFP8 beside FP8-CS at one layout and release."""
    b8 = find(groups, "Llama 3 8B", "B200", 8, 2)
    g8 = find(groups, "Llama 3 8B", "GB200", 8, 2)
    g405b = find(groups, "Llama 3.1 405B", "GB200", 256, 1, recipe="per-tensor")
    off = [p for p in pts if offloaded(p)]
    mx = [g for g in groups if g[0].system == "GB200" and g[0].per_tensor == "MXFP8"]
    assert off and mx, "no offloading row or GB200 MXFP8 series"
    bridge = [p for p in dense(pts) if p.framework == "Megatron-Bridge"]
    pairs = {}
    for p in bridge:
        pairs.setdefault((p.key[:-1], p.release), {})[p.per_tensor] = p
    ratios = [d["MXFP8"].tokens / d["per-tensor"].tokens - 1 for d in pairs.values() if len(d) == 2]
    assert ratios, "no MXFP8 / FP8-CS pair"
    holds = band[0] <= b8[-1].result.error <= band[1]
    return "\n".join([
        f"- **B200:** the all-compute row (Llama 3 8B, dp 8) goes from {b8[0].result.error:+.1%} ({b8[0].framework} "
        f"{b8[0].release}) to {b8[-1].result.error:+.1%} ({b8[-1].release}) against the H100 band "
        f"({band[0]:+.1%} .. {band[1]:+.1%}): " + ("NeMo 25.02's gap is the release, closed with no term changed."
                                                   if holds else "the release closes part of it, not all."),
        f"- **GB200:** the all-compute row (Llama 3 8B, dp 8) reads {span(p.result.error for p in g8)} in "
        f"{len(g8)} releases, from NeMo {g8[0].release} on, so the gap there is not the release. The rows that "
        f"stay fast (or slow) are tied to configuration: the {len(off)} FSDP rows whose recipe offloads activations "
        f"{span(p.result.error for p in off)} as read (table alone {span(p.table_error for p in off)}); MXFP8 "
        + ", ".join(f"at {public_check_layout(g[0])} {span(p.result.error for p in g)} in {len(g)} rows" for g in mx)
        + f"; Llama 3.1 405B on 256 GB200 (pipeline parallel, no FSDP, no offloading) "
        f"{span(p.result.error for p in g405b)}. At one layout and release Bridge's MXFP8 rows run "
        f"{span(ratios)} on its FP8-CS ones ({len(ratios)} pairs); the model charges them alike but for the "
        f"quantize launches.",
    ])


def public_check_layout(p: Point) -> str:
    import public_check

    return public_check.layout_text(p.result.row.plan)


def h100_test(h70: list[Point], h405: list[Point]) -> str:
    """H100, where the constants were fitted: the recipes' facts read against the tables alone,
    and which reading is nearer the runs (median |error|), computed."""
    def nearer(group):
        read = statistics.median(abs(p.result.error) for p in group)
        alone = statistics.median(abs(p.table_error) for p in group)
        return "nearer the runs" if read < alone else "further from the runs"

    return (f"- **H100, the readings' own test:** from the tables alone the Llama 3 70B rows (tp 4 pp 8) read "
            f"{span(p.table_error for p in h70)} and with the recipes' facts (bf16 gradient reduction, full tp "
            f"overlap) {span(p.result.error for p in h70)} ({nearer(h70)}); the Llama 3.1 405B rows (tp 8 cp 2 pp 8) "
            f"{span(p.table_error for p in h405)} and {span(p.result.error for p in h405)} ({nearer(h405)}). The "
            f"facts are read because they are stated, whichever way they move the error.")


def section(constants=None, pts: list[Point] | None = None, host: dict | None = None) -> dict[str, str]:
    """The RELEASE_* placeholders of docs/time-model.md (from `pts` and the host what-if `host`
    where already predicted with the same constants)."""
    pts = points(constants) if pts is None else pts
    groups = series(pts)
    low, high = h100_band(pts)
    return {"RELEASE_BY_GPU": by_release(pts), "RELEASE_SERIES": series_table(groups),
            "RELEASE_ENDS": ends(groups), "RELEASE_N": str(len(dense(pts))),
            "RELEASE_SERIES_N": str(len(groups)), "RELEASE_H100_BAND": f"{low:+.1%} .. {high:+.1%}",
            "RELEASE_READING": reading(groups, (low, high)), "RELEASE_OFFLOAD": offload_table(pts),
            "RELEASE_CONCLUSION": conclusion(pts, groups, (low, high)),
            **moe_section(pts, constants, host)}


def moe_section(pts: list[Point], constants=None, host: dict | None = None) -> dict[str, str]:
    """The RELEASE_MOE_* placeholders."""
    groups = moe_series(pts)
    host = host_errors(pts, constants) if host is None else host
    rows = moe(pts)
    return {"RELEASE_MOE_N": str(len(rows)), "RELEASE_MOE_SERIES_N": str(len(groups)),
            "RELEASE_MOE_SUMMARY": moe_summary(pts),
            "RELEASE_MOE_BY_GPU": moe_by_release(pts), "RELEASE_MOE_SERIES": moe_series_table(groups),
            "RELEASE_MOE_HOST": host_table(pts, host), "RELEASE_MOE_READING": moe_reading(pts, host),
            "RELEASE_MOE_GAP": gap_table(pts)}


def main() -> int:
    values = section()
    for key in ("RELEASE_BY_GPU", "RELEASE_SERIES", "RELEASE_ENDS", "RELEASE_READING", "RELEASE_OFFLOAD", "RELEASE_CONCLUSION",
                "RELEASE_MOE_BY_GPU", "RELEASE_MOE_SERIES", "RELEASE_MOE_HOST", "RELEASE_MOE_READING",
                "RELEASE_MOE_GAP"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
