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
    alike: object = None
    """`fidelity.Result` with the facts Megatron-Bridge's recipes state (`RECIPE_FACTS`), for a
    Bridge row; None for the others (NeMo's files already state them from 25.02 on)."""
    table_only: object = None
    """`fidelity.Result` of a row that states its recipe (`recipe`, megatron_bridge_releases_moe.yaml)
    read without it, as megatron_bridge_25_11.yaml's rows are read; None for the others."""
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


def read_table_only(entry: dict, entries: list[dict], constants):
    """A row that states its recipe, read from its table alone (no `recipe`), as
    megatron_bridge_25_11.yaml's MoE rows are: the prediction every release of the configuration
    shares."""
    import fidelity
    from published import Skipped, compiled, row_spec

    bare = {k: v for k, v in entry.items() if k != "recipe"}
    row = row_spec(bare, entries)
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
            moe = bool(entry["model"].get("experts"))
            out.append(Point(result=x, framework="Megatron-Bridge" if bridge else "NeMo",
                             release=release_of(entry), published=str(entry.get("published") or "-"),
                             system=SYSTEMS[x.row.plan.cluster.gpu.name],
                             tokens=float(entry["outcomes"]["reported"]["tokens_per_s_per_gpu"]),
                             model=entry["model"]["name"],
                             alike=read_alike(entry, listed, constants) if bridge and not moe else None,
                             table_only=read_table_only(entry, listed, constants) if "recipe" in entry else None,
                             recipe=entry.get("recipe")))
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


# ---------------------------------------------------------------------------------------------
# The mixture-of-experts rows (megatron_bridge_releases_moe.yaml beside megatron_bridge_25_11.yaml)

def moe(pts: list[Point]) -> list[Point]:
    return [p for p in pts if p.result.row.plan.model.experts]


def table_error(p: Point) -> float:
    """The error of the row read from its table alone (megatron_bridge_25_11.yaml's reading)."""
    return (p.table_only or p.result).error


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
                     f"{min(errors):+.1%} .. {max(errors):+.1%} | "
                     f"{statistics.median(table_error(p) for p in group):+.1%} |")
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
                         f"{table_error(p):+.1%} | {recipe_text(p)} |")
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
            f"{stats(p.result.error for p in rows)}; from the table alone {stats(table_error(p) for p in rows)}. "
            f"Per model, as read: {per_model}.")


HOST_SCALES = (2, 4)
"""Multiples of `kernels.HOST_OP_SECONDS` the host check tries (a what-if, never stored)."""


def host_errors(pts: list[Point], constants=None) -> dict[str, tuple[float, ...]]:
    """Each MoE row whose dispatcher reads its token counts on the host, predicted again with the
    host's time per op at each of `HOST_SCALES` x `kernels.HOST_OP_SECONDS`: the errors, the
    stored value's first. The constant is restored (and the timing caches cleared) afterwards."""
    import fidelity
    from parc import timing

    rows = [p.result.row for p in moe(pts) if p.result.row.software.moe_host_sync]
    assert rows, "no MoE row keeps the host sync"
    prepared = [fidelity.prepare(r) for r in rows]
    stored = timing.kernel_model.HOST_OP_SECONDS
    out = {p.result.row.id: [p.result.error] for p in moe(pts) if p.result.row.software.moe_host_sync}
    try:
        for scale in HOST_SCALES:
            timing.kernel_model.HOST_OP_SECONDS = stored * scale
            timing.clear_caches()
            for x in fidelity.evaluate(rows, prepared, constants or fidelity.DEFAULT):
                out[x.row.id].append(x.error)
    finally:
        timing.kernel_model.HOST_OP_SECONDS = stored
        timing.clear_caches()
    return {k: tuple(v) for k, v in out.items()}


HOST_ROWS = ("Qwen3-30B-A3B",)
"""The small-expert model whose rows the host check lists (768-wide experts: the shortest kernels)."""


def host_table(pts: list[Point], host: dict[str, tuple[float, ...]]) -> str:
    """The host check's rows: Qwen3-30B-A3B wherever the dispatcher syncs."""
    from parc import timing

    stored = timing.kernel_model.HOST_OP_SECONDS
    rows = sorted((p for p in moe(pts) if p.result.row.id in host and p.model in HOST_ROWS),
                  key=lambda p: (list(SYSTEMS.values()).index(p.system), release_order(p.release)))
    assert rows, "no Qwen3-30B-A3B row keeps the host sync"
    head = " | ".join(f"error at {stored * k * 1e6:g} us" for k in (1,) + HOST_SCALES)
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


def moe_reading(pts: list[Point], host: dict[str, tuple[float, ...]]) -> str:
    """What the MoE series show, each figure computed here."""
    from parc import timing

    op_us = timing.kernel_model.HOST_OP_SECONDS * 1e6
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
        f"layout and the same recipe: ep 16, HybridEP, no graphs, as 26.02) falls from {host[h1.result.row.id][0]:+.1%} to "
        f"{host[h1.result.row.id][-1]:+.1%}, and the micro-batch 4 rows (B200 26.02.01 {host[b4.result.row.id][0]:+.1%}, "
        f"GB200 26.04.01 {host[g401.result.row.id][0]:+.1%}) to {host[b4.result.row.id][-1]:+.1%} and "
        f"{host[g401.result.row.id][-1]:+.1%}. No one host time per op fits these rows, so it is not changed.",
        f"- **H100's Qwen3-30B-A3B: the release, with no stated fact changed.** 26.02 -> 26.02.01, the same "
        f"printed layout and recipe: {h0.tokens:,.0f} -> {h1.tokens:,.0f} tokens/s ({h1.tokens / h0.tokens - 1:+.1%}), "
        f"error {h0.result.error:+.1%} -> {h1.result.error:+.1%}. Among the changes in `scripts/performance` between "
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
        f"{g606.tokens:,.0f} ({g606.tokens / g401.tokens - 1:+.1%}); reading the graph (no host sync) and the "
        f"overlap takes it from {table_error(g606):+.1%} to {g606.result.error:+.1%}; the fused kernels parc "
        f"does not model are the rest.",
        f"- **gpt-oss-120b on GB200 stays fast in every release:** {', '.join(f'{p.release} {p.tokens:,.0f} ({p.result.error:+.1%})' for p in oss)}; "
        f"table alone {min(table_error(p) for p in oss):+.1%} .. {max(table_error(p) for p in oss):+.1%}. Its "
        f"throughput moves {max(p.tokens for p in oss) / min(p.tokens for p in oss) - 1:.1%} across releases: not the "
        f"release. 26.06's MXFP8 row with the full-iteration graph and fused kernels: {oss6.tokens:,.0f}, "
        f"{oss6.result.error:+.1%}.",
        f"- **gpt-oss-120b on 64 B200 at the printed ep 8** ({', '.join(p.release for p in oss_b)}): "
        f"{min(table_error(p) for p in oss_b):+.1%} .. {max(table_error(p) for p in oss_b):+.1%} from the table alone "
        f"(the reader's least recomputation that fits: {', '.join(oss_b_least) or 'none'}), "
        f"{min(p.result.error for p in oss_b):+.1%} .. {max(p.result.error for p in oss_b):+.1%} with the recipe's "
        f"recomputation (layernorm, moe_act), under which parc's memory check finds the step does not fit "
        f"({', '.join(sorted({c for p in oss_b for c in p.result.row.findings})) or 'fits'}); the recipe's own B200 "
        f"config is ep 64 through 26.02.01 (`recipe.layout_note`), so the printed ep may not be what ran.",
        f"- **DeepSeek-V3 on 256 B200, 26.04.01:** the recipe moves to DeepEP, ep 32 over pp 8 (v2) and the ep "
        f"overlap ({ds.tokens:,.0f} tokens/s, {ds.tokens / ds0.tokens - 1:+.1%} on 26.04's ep 8 pp 16). From the "
        f"table alone (NCCL's all-to-all, no overlap) ep 32 spans four nodes' NICs: {table_error(ds):+.1%}; read with "
        f"the stated DeepEP and overlap, whose physics parc has: {ds.result.error:+.1%}. Here the recipe's facts "
        f"decide the row.",
        f"- **The stated ep overlap (`moe_a2a_overlap`) read as parc charges it** takes Qwen3-235B-A22B on 256 H100 "
        f"from {min(table_error(p) for p in big):+.1%} .. {max(table_error(p) for p in big):+.1%} (table alone) to "
        f"{min(p.result.error for p in big):+.1%} .. {max(p.result.error for p in big):+.1%}: it hides more of the "
        f"all-to-all than these runs do. Read, as every stated fact with physics is; not tuned.",
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
            "RELEASE_READING": reading(groups, (low, high)), "RELEASE_OFFLOAD": offload_table(pts, constants),
            **moe_section(pts, constants)}


def moe_section(pts: list[Point], constants=None) -> dict[str, str]:
    """The RELEASE_MOE_* placeholders."""
    groups = moe_series(pts)
    host = host_errors(pts, constants)
    rows = moe(pts)
    return {"RELEASE_MOE_N": str(len(rows)), "RELEASE_MOE_SERIES_N": str(len(groups)),
            "RELEASE_MOE_SUMMARY": moe_summary(pts),
            "RELEASE_MOE_BY_GPU": moe_by_release(pts), "RELEASE_MOE_SERIES": moe_series_table(groups),
            "RELEASE_MOE_HOST": host_table(pts, host), "RELEASE_MOE_READING": moe_reading(pts, host)}


def main() -> int:
    values = section()
    for key in ("RELEASE_BY_GPU", "RELEASE_SERIES", "RELEASE_ENDS", "RELEASE_READING", "RELEASE_OFFLOAD",
                "RELEASE_MOE_BY_GPU", "RELEASE_MOE_SERIES", "RELEASE_MOE_HOST", "RELEASE_MOE_READING"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
