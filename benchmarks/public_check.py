"""Public papers' runs never fitted: Llama 3, MT-NLG, BLOOM, OPT, MegaScale and torchtitan's 405B.

`benchmarks/data/published_public.yaml` holds well-known public training runs transcribed from
their papers and run repositories (each row cites its source and lists what it inferred). None is
fitted: the file is evaluated exactly as a held-out file is (`fidelity.py --published FILE`, the
stored constants), and this module writes its section of docs/time-model.md (`fidelity.py
--write`):

- every row's error, with the layout, the runtime and the facts the reader assumed;
- summaries over all rows and per source, with MegaScale's own runtime apart (its rows change the
  model: parallel block, sliding-window attention, LAMB, which no spec can state);
- the same physics under the other readings of the facts a source leaves open (`VARIANTS`),
  computed, never used to choose a reading;
- `--fit`: what adding these rows to the fit would do to the constants and to the
  leave-one-source-out figures (printed, not written: the file stays a check).

    .venv/bin/python benchmarks/public_check.py          # print the section's tables
    .venv/bin/python benchmarks/public_check.py --fit    # the fit question (a few minutes)
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PUBLIC = ROOT / "benchmarks" / "data" / "published_public.yaml"

OWN_MODEL_GROUPS = ("megascale_2024_megascale",)
"""Groups whose runtime changes the model itself (stated in each row's notes): reported, and
summarised apart from the rows that run the model the spec states."""


@dataclass(frozen=True)
class Variant:
    """Another reading of facts a source leaves open: spec substitutions on the rows whose id
    contains `match`."""

    match: str
    label: str
    substitutions: tuple[tuple[str, str], ...]
    why: str
    software: tuple[tuple[str, object], ...] = ()
    """`timing.Software` fields the reading changes that no spec states."""
    exact: bool = False
    """`match` is the whole id of the one row the reading is for."""

    def selects(self, row_id: str) -> bool:
        return row_id == self.match if self.exact else self.match in row_id


VARIANTS = (
    Variant("llama3_405b", "gradients reduced once per step (zero1's traffic)",
            (("sharding zero2", "sharding zero1"),),
            "the paper accumulates gradients in FP32 over micro-batches and reduce-scatters them in FP32; "
            "whether once per step or per micro-batch (ZeRO-2's contract, as read) is not stated"),
    Variant("llama3_405b", "4 virtual stages per rank", (("virtual-stages 2", "virtual-stages 4"),),
            "V is not stated (2 as read)"),
    Variant("llama3_405b", "both", (("sharding zero2", "sharding zero1"), ("virtual-stages 2", "virtual-stages 4")),
            "both open facts at once"),
    Variant("mtnlg_530b", "sequence parallelism on", (("sequence-parallel off", "sequence-parallel on"),),
            "what the reader's default would have charged (sequence parallelism postdates the run)"),
    Variant("megascale_megatron_", "attention unfused", (("target megatron\n", "target megatron { flash-attention off }\n"),),
            "MegaScale counts FlashAttention-2 among its operator gains over Megatron-LM (Section 3.3; 1.7 MFU points "
            "with its fused LayerNorm and GeLU, Table 3); whether the baseline ran an older FlashAttention or none "
            "is not stated"),
    Variant("torchtitan_405b_512gpu_3d_interleaved", "16 micro-batches (micro-batch 2)",
            (("micro-batch 4", "micro-batch 2"),),
            "the option's help text says its default is the number of stages (16 with two per rank); the code at "
            "9dec370 takes the pp degree (8, as read)"),
)


OVERLAP_GRAD_REDUCE = "2023-08-16"
"""Megatron-LM's `--overlap-grad-reduce` (NVIDIA/Megatron-LM 2d5220a424, "Add --overlap-grad-reduce
command-line argument"). Before it `train_step` reduced the gradients after the whole
forward-backward (`optimizer.reduce_model_grads` after `forward_backward_func`) and gathered the
distributed optimizer's parameters after its step (`gather_model_params`), where nothing hides
them (`timing.Software.dp_overlap` False)."""


def reduces_after_step(entry: dict) -> str | None:
    """Why a row's runtime reduces its gradients only after its whole forward-backward, from the
    facts its `runtime` block states (name, date of the code or of the run), or None when it
    overlaps them or its facts cannot tell (the contract's reading then stands alone):

    - DeepSpeed's pipeline engine (Megatron-DeepSpeed under pipelining): its `TrainSchedule`
      issues `ReduceGrads` after the last micro-batch, at any date;
    - Megatron-LM code dated before `OVERLAP_GRAD_REDUCE` (a date no finer than a year or month
      that contains that day decides nothing)."""
    rt = entry.get("runtime") or {}
    name = str(rt.get("name") or "")
    date = str(rt.get("date") or "")
    pp = int((entry.get("layout") or {}).get("pp") or 1)
    if name.startswith("Megatron-DeepSpeed") and pp > 1:
        return (f"{name} runs DeepSpeed's pipeline engine (pp {pp}), which reduces after the last micro-batch of "
                "its schedule (its ReduceGrads instruction), where the contract hides it under the last backward")
    if name == "Megatron-LM" and date and date < OVERLAP_GRAD_REDUCE[:len(date)]:
        code = f"Megatron-LM {rt['commit']} of {date}" if rt.get("commit") else f"Megatron-LM of {date}"
        return (f"the stated code ({code}: `train_step` calls `optimizer.reduce_model_grads` after "
                "`forward_backward_func`) reduces after the whole forward-backward, where the calibration's "
                f"contract hides the reduction under the last backward; `--overlap-grad-reduce` came on "
                f"{OVERLAP_GRAD_REDUCE}")
    return None


def after_step_variants(path: Path = PUBLIC) -> tuple[Variant, ...]:
    """The reading "gradients reduced after the forward-backward" for every row of `path` whose
    stated runtime does so (`reduces_after_step`)."""
    from yaml_data import read_yaml

    entries = [e for e in read_yaml(path) or [] if isinstance(e, dict)]
    return tuple(Variant(e["id"], "gradients reduced after the forward-backward", (), why,
                         (("dp_overlap", False),), exact=True)
                 for e in entries if (why := reduces_after_step(e)))


def check(constants=None, path: Path = PUBLIC):
    """Every row of `path` predicted with `constants` (the stored ones by default), and the rows
    left out with their reasons."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    rows, skipped = fidelity.load_rows(path)
    results = fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], constants)
    return results, skipped


def layout_text(plan) -> str:
    text = " ".join(f"{a.name}{a.degree}" for a in plan.layout.axes)
    pp = plan.layout.pp
    if (pp.degree or 1) > 1 and (pp.virtual_stages or 1) > 1:
        text += f" (v{pp.virtual_stages})"
    return text


def assumed_text(row) -> str:
    keep = ("recompute", "zero1", "no optimizer sharding", "micro-batch", "tp overlap", "virtual stages",
            "unfused", "power limit")
    return "; ".join(re.sub(r" \(.*", "", a) for a in row.assumptions if a.startswith(keep)) or "-"


def table(results, skipped) -> str:
    lines = ["| run | GPUs | layout | compared on | reported | predicted | error | bubble | exposed comm | "
             "assumed by the reader |", "|---|---|---|---|---|---|---|---|---|---|"]
    for x in results:
        b = x.breakdown
        lines.append(f"| `{x.row.id}` | {x.row.gpus:,} | {layout_text(x.row.plan)} | {x.row.reported_from} "
                     f"({x.row.convention}) | {x.row.reported_tflops:.1f} | {x.predicted:.1f} | {x.error:+.1%} | "
                     f"{b.bubble / b.step:.0%} | {sum(b.exposed.values()) / b.step:.0%} | {assumed_text(x.row)} |")
    for s in skipped:
        lines.append(f"| `{s.id}` | | | | | | left out | | | {s.reason} |")
    return "\n".join(lines)


def _line(label: str, group) -> str:
    import fidelity

    errors = [abs(x.error) for x in group]
    worst = max(group, key=lambda x: abs(x.error))
    return (f"| {label} | {len(group)} | {statistics.median(errors):.1%} | {fidelity.p90(errors):.1%} | "
            f"{max(errors):.1%} (`{worst.row.id}`) | {statistics.median(x.error for x in group):+.1%} |")


def summary(results) -> str:
    """All rows; the rows running the model their spec states; per source."""
    assert results, "no public row compiled"
    own = [x for x in results if x.row.group not in OWN_MODEL_GROUPS]
    lines = ["| rows | runs | median abs. error | p90 | worst | median signed error |",
             "|---|---|---|---|---|---|",
             _line("all evaluated", results),
             _line("all but MegaScale's own runtime", own)]
    for group in sorted({x.row.group for x in results}):
        lines.append(_line(f"`{group}`", [x for x in results if x.row.group == group]))
    return "\n".join(lines)


def variants(results, constants=None) -> str:
    """The rows again under the other readings of what their sources leave open."""
    import fidelity
    from published import Skipped, compiled, split_of

    constants = constants or fidelity.DEFAULT
    lines = ["| run | reading | predicted | error | parc check | why open |", "|---|---|---|---|---|---|"]
    for v in VARIANTS + after_step_variants():
        for x in results:
            if not v.selects(x.row.id):
                continue
            spec = x.row.spec
            for old, new in v.substitutions:
                assert old in spec, (x.row.id, old)
                spec = spec.replace(old, new)
                if old.startswith("virtual-stages"):  # the reader's uneven split, for the new chunk count
                    chunks = x.row.plan.layout.pp.degree * int(new.split()[-1])
                    split = split_of(x.row.plan.model.layers, chunks)
                    spec = re.sub(r", split \[[^\]]*\]", f", split [{', '.join(map(str, split))}]" if split else "",
                                  spec)
            row = compiled(dataclasses.replace(x.row, spec=spec, assumptions=list(x.row.assumptions)))
            if isinstance(row, Skipped):
                lines.append(f"| `{x.row.id}` | {v.label} | - | left out: {row.reason} | | {v.why} |")
                continue
            if v.software:
                row = dataclasses.replace(row, software=dataclasses.replace(row.software, **dict(v.software)))
            predicted = fidelity.predicted_tflops(row, fidelity.predicted_step(row, fidelity.prepare(row),
                                                                               constants).step)
            errors = ", ".join(row.findings) or "ok"
            lines.append(f"| `{x.row.id}` | {v.label} (as read: {x.error:+.1%}) | {predicted:.1f} | "
                         f"{predicted / x.row.reported_tflops - 1:+.1%} | {errors} | {v.why} |")
    return "\n".join(lines)


GROSS = 0.20
"""An error beyond which a row's physics is looked into term by term (issue 14, point 3)."""


def terms(results) -> str:
    """Each gross error's step, part by part: where the predicted seconds go."""
    gross = [x for x in results if abs(x.error) > GROSS]
    lines = ["| run | error | predicted step (s) | bubble | exposed tp | exposed pp | exposed dp | exposed cp |",
             "|---|---|---|---|---|---|---|---|"]
    for x in gross:
        b = x.breakdown
        lines.append(f"| `{x.row.id}` | {x.error:+.1%} | {b.step:.2f} | {b.bubble:.2f} | "
                     + " | ".join(f"{b.exposed[a]:.2f}" for a in ("tp", "pp", "dp", "cp")) + " |")
    return "\n".join(lines) if gross else "No row is off by more than 20 %."


def same_model_elsewhere(constants=None) -> str:
    """The calibration rows that run a public row's model on its hardware with another runtime:
    Narayanan et al.'s 530B (Megatron-LM, Selene, 2021) beside MT-NLG's (Megatron-DeepSpeed, the
    same cluster and year)."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    rows, _ = fidelity.load_rows(fidelity.PUBLISHED)
    same = [r for r in rows if r.plan.model.layers == 105 and r.plan.model.hidden == 20480 and r.fitted]
    assert same, "no calibration row runs the 530B model"
    results = fidelity.evaluate(same, [fidelity.prepare(r) for r in same], constants)
    return "; ".join(f"`{x.row.id}` ({layout_text(x.row.plan)}, {x.row.gpus:,} GPUs) {x.error:+.1%}"
                     for x in results)


def section(constants=None) -> dict[str, str]:
    """The PUBLIC_* placeholders of docs/time-model.md."""
    import scaling_check

    results, skipped = check(constants)
    return {**scaling_check.section(constants), "PUBLIC_TABLE": table(results, skipped), "PUBLIC_SUMMARY": summary(results),
            "PUBLIC_VARIANTS": variants(results, constants), "PUBLIC_N": str(len(results)),
            "PUBLIC_LEFT_OUT": str(len(skipped)), "PUBLIC_TERMS": terms(results),
            "PUBLIC_SAME_MODEL": same_model_elsewhere(constants)}


def fit_question() -> str:
    """What adding the public rows that run the model their spec states to the fit does: the
    constants, the calibration rows' errors in sample and leave-one-source-out (each public
    source then held out too), and the public rows' own errors. Printed, never written."""
    import fidelity

    calibration, _ = fidelity.load_rows(fidelity.PUBLISHED)
    public, _ = check()
    public_rows = [dataclasses.replace(x.row, fitted=True) for x in public
                   if x.row.group not in OWN_MODEL_GROUPS]
    out = []
    for label, rows, groups in (
            ("calibration only (stored)", calibration, fidelity.HELD_OUT_GROUPS),
            ("calibration + public", calibration + public_rows,
             fidelity.HELD_OUT_GROUPS + tuple(sorted({r.group for r in public_rows})))):
        prepared = [fidelity.prepare(r) for r in rows]
        constants = fidelity.fit(rows, prepared, fidelity.DEFAULT)
        fitted = [x for x in fidelity.evaluate(rows, prepared, constants) if x.row.fitted]
        calib = [abs(x.error) for x in fitted if x.row.group not in {r.group for r in public_rows}]
        pub = [abs(x.error) for x in fitted if x.row.group in {r.group for r in public_rows}]
        saved = fidelity.HELD_OUT_GROUPS
        fidelity.HELD_OUT_GROUPS = groups
        try:
            held = fidelity.held_out_errors(rows, prepared)
        finally:
            fidelity.HELD_OUT_GROUPS = saved
        out.append(f"{label}: " + ", ".join(f"{n} {getattr(constants, n):.4g}" for n in fidelity.FITTED_NAMES))
        out.append(f"  calibration rows in sample: median {statistics.median(calib):.1%}, "
                   f"p90 {fidelity.p90(calib):.1%}, worst {max(calib):.1%}")
        if pub:
            out.append(f"  public rows in sample: median {statistics.median(pub):.1%}, p90 {fidelity.p90(pub):.1%}, "
                       f"worst {max(pub):.1%}")
        for group, errors, _ in held:
            out.append(f"  held out {group}: median {statistics.median(errors):.1%}, "
                       f"p90 {fidelity.p90(errors):.1%}, worst {max(errors):.1%} ({len(errors)} runs)")
        calibration_held = [e for g, errors, _ in held if g in saved for e in errors]
        out.append(f"  calibration sources held out, pooled: median {statistics.median(calibration_held):.1%}, "
                   f"p90 {fidelity.p90(calibration_held):.1%}, worst {max(calibration_held):.1%}")
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--fit" in argv:
        print(fit_question())
        return 0
    values = section()
    for key in ("PUBLIC_SUMMARY", "PUBLIC_TABLE", "PUBLIC_TERMS", "PUBLIC_VARIANTS", "PUBLIC_SAME_MODEL"):
        print(values[key], end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
