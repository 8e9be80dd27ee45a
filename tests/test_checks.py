"""The layout and memory rules (compiler/checks): each code triggers on one case and not on its
neighbour, help lines give values that work, warnings can be acknowledged, and the rules never
raise or change the plan.

Trigger cases and their rendered text live in tests/golden/diagnostics/ (`eNNNN_*.par` and
`.stderr`, checked by test_diagnostics_golden.py); the clean neighbour of each, differing in the
one number the rule is about, is tests/checks/<same name>.clean.par.
"""

from __future__ import annotations

import random
import re

import pytest
from parc.checks import RULE_MODULES, RULES, run_checks
from parc.codes import CODES
from parc.pipeline import compile_path, compile_text

from .conftest import GOLDEN, ROOT, SPECS

CHECKS = ROOT / "tests" / "checks"
RULE_CODES = sorted(c for c in CODES if re.fullmatch(r"[EW]0(3[0-9][4-9]|3[1-9]\d|4\d\d)", c))
"""The codes the checks emit (E0301-E0303 belong to resolution)."""
CLEAN = sorted(CHECKS.glob("*.clean.par"))


def codes_of(result) -> list[str]:
    return sorted(d.code for d in result.diagnostics)


def test_every_rule_code_has_a_trigger_and_a_clean_case():
    assert len(RULE_CODES) >= 25
    for code in RULE_CODES:
        triggers = list((GOLDEN / "diagnostics").glob(f"{code.lower()}_*.par"))
        assert triggers, f"{code}: no trigger case in tests/golden/diagnostics/"
        for trigger in triggers:
            assert (CHECKS / f"{trigger.stem}.clean.par").exists(), f"{code}: no clean neighbour of {trigger.name}"


@pytest.mark.parametrize("clean", CLEAN, ids=[c.name.split(".")[0] for c in CLEAN])
def test_trigger_reports_exactly_its_code_and_neighbour_does_not(clean):
    name = clean.name.split(".")[0]
    code = name.split("_")[0].upper()
    trigger = compile_path(str((GOLDEN / "diagnostics" / f"{name}.par").relative_to(ROOT)))
    assert codes_of(trigger) == [code]
    neighbour = compile_path(str(clean.relative_to(ROOT)))
    assert codes_of(neighbour) == [], [d.message for d in neighbour.diagnostics]


def test_the_example_specs_pass_every_rule():
    for spec in SPECS:
        result = compile_path(str(spec.relative_to(ROOT)))
        unacknowledged = [d for d in result.diagnostics if d.is_error or not d.allowed]
        assert not unacknowledged, (spec.name, [d.message for d in unacknowledged])


def test_rule_modules_load_in_report_order():
    run_checks(compile_path(str(SPECS[0].relative_to(ROOT)), checks=False).plan)
    modules = [r.__module__.rsplit(".", 1)[1] for r in RULES]
    assert sorted(set(modules), key=modules.index) == list(RULE_MODULES)
    assert RULE_MODULES[-1] == "memory"


# ---------------------------------------------------------------------------------------------
# Help lines suggest values that work


BASE = """\
{layout}
model {model}
hardware {{ gpu {gpu} }}
train {{ seq {seq}, global-batch {batch}, micro-batch {micro} }}
{extra}
"""


def spec(layout="tp 2 x pp 2 x dp 2 on nodes(8 gpus, nvlink)", model="llama3-8b { layers 16 }", gpu="h100-sxm",
         seq=4096, batch=32, micro=1, extra="dp { sharding zero1 }") -> str:
    return BASE.format(layout=layout, model=model, gpu=gpu, seq=seq, batch=batch, micro=micro, extra=extra)


def only(result, code):
    found = [d for d in result.diagnostics if d.code == code]
    assert len(found) == 1, [d.message for d in result.diagnostics]
    return found[0]


def test_heads_help_lists_degrees_that_divide_the_heads_and_fit_the_node():
    model = "{ layers 16, hidden 5120, ffn 13824, heads 40, kv-heads 8, vocab 32000 }"
    gpu = "big { hbm 192 GB, bf16 800 TFLOP/s, link 450 GB/s, nvlink-domain 40 }"
    d = only(compile_text(spec(layout="tp 16 x dp 5 on nodes(40 gpus, nvlink)", model=model, gpu=gpu)), "E0310")
    assert d.help == "tp must divide 40 heads: try 8, 10 or 20"
    for tp in (8, 10, 20):
        fixed = compile_text(spec(layout=f"tp {tp} x dp {80 // tp} on nodes(40 gpus, nvlink)", model=model, gpu=gpu))
        assert "E0310" not in codes_of(fixed)


def test_split_help_is_a_valid_split():
    d = only(compile_text(spec(layout="tp 2 x pp 3 on nodes(6 gpus, nvlink)", batch=24, extra="")), "E0315")
    split = re.search(r"split \[([\d, ]+)\]", d.help).group(1)
    fixed = compile_text(spec(layout="tp 2 x pp 3 on nodes(6 gpus, nvlink)", batch=24,
                              extra=f"pp {{ split [{split}] }}"))
    assert not codes_of(fixed)


def test_micro_batch_help_values_divide_the_batch():
    d = only(compile_text(spec(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)", batch=48, micro=5)), "E0321")
    values = [int(v) for v in re.findall(r"\d+", d.help.split("(")[0])]
    assert values
    for micro in values:
        fixed = compile_text(spec(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)", batch=48, micro=micro))
        assert "E0321" not in codes_of(fixed), micro


def test_a_conflict_points_at_where_each_number_came_from():
    text = spec(layout="tp 8 x dp 2 on nodes(8 gpus, nvlink)",
                model="{ layers 16, hidden 4096, ffn 14336, heads 36, kv-heads 4, head-dim 128, vocab 32000 }")
    d = only(compile_text(text), "E0310")
    assert text[d.span.start:d.span.end] == "8"  # the tp degree
    assert [text[label.span.start:label.span.end] for label in d.labels] == ["36"]  # the heads


# ---------------------------------------------------------------------------------------------
# Acknowledging warnings


BUBBLY = spec(layout="tp 2 x pp 4 on nodes(8 gpus, nvlink)", batch=8, extra="pp { schedule 1f1b }ALLOW")


def bubbly(allow: str) -> str:
    return BUBBLY.replace("ALLOW", allow)


def test_a_warning_can_be_allowed_on_its_statement():
    plain = only(compile_text(bubbly("")), "W0323")
    assert not plain.allowed
    allowed = only(compile_text(bubbly(" allow W0323")), "W0323")
    assert allowed.allowed
    assert compile_text(bubbly(" allow W0323")).ok


def test_an_allow_on_another_statement_does_not_acknowledge():
    text = bubbly("").replace("model llama3-8b { layers 16 }", "model llama3-8b { layers 16 } allow W0323")
    assert not only(compile_text(text), "W0323").allowed


def test_a_different_code_does_not_acknowledge():
    assert not only(compile_text(bubbly(" allow W0319")), "W0323").allowed


def test_an_error_cannot_be_allowed():
    text = spec(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink) allow E0401", model="llama3-70b", extra="")
    result = compile_text(text)
    assert "E0401" in codes_of(result) and "E0216" in codes_of(result)
    assert not result.ok


# ---------------------------------------------------------------------------------------------
# Rules never raise and never change the plan


def random_spec(rnd: random.Random) -> str:
    axes = {"tp": rnd.choice([1, 2, 3, 4, 8, 16]), "pp": rnd.choice([1, 2, 3, 4, 8]), "dp": rnd.choice([1, 2, 3, 4, 6]),
            "cp": rnd.choice([1, 1, 2, 4])}
    names = [a for a in axes if axes[a] > 1] or ["dp"]
    rnd.shuffle(names)
    layout = " x ".join(f"{a} {axes[a]}" for a in names)
    per_node = rnd.choice([4, 8])
    model = rnd.choice(["llama3-8b", "tiny", "tiny-moe", "mixtral-8x7b", "gpt3-175b { layers 12 }",
                        "deepseek-v3-like { layers 8 }"])
    fold = ""
    if model.startswith(("tiny-moe", "mixtral", "deepseek")) and rnd.random() < 0.7:
        over = [a for a in ("dp", "cp") if a in names] or names[:1]
        fold = f"\nep {rnd.choice([2, 3, 4, 8])} over {' x '.join(over)}"
    schedule = rnd.choice(["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
    sharding = rnd.choice(["none", "zero1", "zero2", "zero3", "hsdp 2 x 2"])
    chunks = f", virtual-stages {rnd.choice([2, 3, 5, 8])}" if schedule.startswith("interleaved") else ""
    blocks = [f"pp {{ schedule {schedule}{chunks} }}" if "pp" in names else "",
              f"dp {{ sharding {sharding} }}" if "dp" in names else "",
              f"cp {{ flavour {rnd.choice(['ring', 'all-gather', 'all-to-all'])} }}" if "cp" in names else "",
              f"tp {{ sequence-parallel {rnd.choice(['on', 'off'])} }}" if "tp" in names else ""]
    recompute = rnd.choice(["none", "selective", "full", "full 1"])
    return (f"{layout} on nodes({per_node} gpus, {rnd.choice(['nvlink', 'pcie'])}){fold}\nmodel {model}\n"
            f"hardware {{ gpu {rnd.choice(['h100-sxm', 'a100-40gb', 'gb200-nvl72'])} }}\n"
            f"train {{ seq {rnd.choice([256, 1000, 4096])}, global-batch {rnd.choice([7, 16, 64, 96])}, "
            f"micro-batch {rnd.choice([1, 2, 3])}, recompute {recompute} }}\n" + "\n".join(b for b in blocks if b) + "\n")


def test_rules_never_raise_and_never_change_the_plan():
    rnd = random.Random(20260101)
    checked = 0
    for _ in range(300):
        text = random_spec(rnd)
        result = compile_text(text, checks=False)
        if result.plan is None or not result.ok:
            continue
        before = result.plan.model_dump()
        found = run_checks(result.plan)
        assert not [d for d in found if d.code == "E0299"], (text, [d.notes for d in found if d.code == "E0299"])
        assert result.plan.model_dump() == before
        for d in found:
            assert d.help and d.span is not None and d.message == d.message.rstrip(".")
        checked += 1
    assert checked > 150


# ---------------------------------------------------------------------------------------------
# Placement


def nvl72(tp: int, dp: int) -> str:
    return spec(layout=f"tp {tp} x dp {dp} on nodes(4 gpus, nvl72)", gpu="gb200-nvl72", batch=72 * 4 // tp,
                extra="dp { sharding zero1 }")


def test_nvl72_domain_spans_trays():
    """A GB200 NVL72 rack is one 72-GPU NVLink domain over 18 trays of 4: tp 8 crosses trays
    but stays in the domain; tp 16 groups straddle racks (72 is not a multiple of 16)."""
    assert "E0304" not in codes_of(compile_text(nvl72(8, 9)))
    d = only(compile_text(nvl72(16, 9)), "E0304")
    assert "straddle" in d.message and "72-GPU" in d.message


def test_rank_order_warning_is_silent_inside_one_nvlink_domain():
    """64 GPUs of a GB200 NVL72 rack are one NVLink domain: pp 4 at stride 16 spans 64 ranks, which
    does not divide 72, yet no group leaves the rack. Two racks' worth (128 GPUs) the second
    pipeline (ranks 64-127) straddles the boundary at 72, and W0306 says so."""
    spec = ("tp 2 x dp {dp} x pp 4 on nodes(4 gpus, nvl72)\nmodel llama3-70b\n"
            "hardware {{ gpu gb200-nvl72, network 4 x 400 Gb/s }}\ntarget megatron\n"
            "train {{ seq 8192, global-batch 256, micro-batch 1, recompute none }}\ntp {{ sequence-parallel on }}\n"
            "pp {{ schedule interleaved-1f1b, virtual-stages 5 }}\ndp {{ sharding zero1 }}\n")
    assert "W0306" not in codes_of(compile_text(spec.format(dp=8)))
    assert "W0306" in codes_of(compile_text(spec.format(dp=16)))


def test_rank_order_warning_is_silent_when_search_chooses_the_order():
    text = (GOLDEN / "diagnostics" / "w0306_cp_across_nodes.par").read_text()
    assert "W0306" in codes_of(compile_text(text))
    assert "W0306" not in codes_of(compile_text(text + "order ?\n"))


def test_rank_order_counts_folded_expert_groups():
    """ep 4 folded over dp: behind tp 2 x cp 2 its groups cross nodes; with dp before cp they fit
    beside tp in a node, and cp (lighter here) crosses instead."""
    base = ("{layout} on nodes(8 gpus, nvlink)\nep 4 over dp\nmodel mixtral-8x7b {{ layers 8 }}\n"
            "hardware {{ gpu h100-sxm }}\ntrain {{ seq 4096, global-batch 64, recompute full }}\ndp {{ sharding zero1 }}\n")
    outside = compile_text(base.format(layout="tp 2 x cp 2 x dp 4"))
    inside = compile_text(base.format(layout="tp 2 x dp 4 x cp 2"))
    d = only(outside, "W0306")
    assert "ep" in d.message.split(" traffic")[0] and "tp 2 x dp 4 x cp 2" in d.help
    assert "W0306" not in codes_of(inside)
