"""Property tests (hypothesis).

1. Random valid layouts, written with random spacing, comments and block styles, round-trip
   through `parc fmt`: the formatted text means the same, and formatting is idempotent.
2. Random mutations of every spec (bytes, tokens, statements) never raise, and every error
   they cause carries a span inside the file.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parc.diagnostics import Style, render_text
from parc.fmt import format_document
from parc.pipeline import compile_text
from parc.source import SourceFile
from parc.syntax import parse

from .conftest import SPECS
from .test_fmt import meaning

AXES = ["tp", "pp", "dp", "cp", "ep"]
SPACE = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def layout_line(draw):
    names = draw(st.permutations(AXES))[: draw(st.integers(1, 5))]
    terms = []
    for name in names:
        degree = draw(st.one_of(st.sampled_from(["?"]), st.integers(1, 64).map(str)))
        terms.append(f"{name}{draw(SPACE)}{degree}")
    joiner = draw(SPACE) + "x" + draw(SPACE)
    line = joiner.join(terms)
    if draw(st.booleans()):
        gpus = draw(st.sampled_from([4, 8]))
        link = draw(st.sampled_from(["nvlink", "pcie", "nvl72"]))
        line += f" on nodes({gpus} gpus,{draw(SPACE)}{link})"
    return line


SETTINGS = {
    "train": ["seq 4096", "global-batch 512", "micro-batch ?", "micro-batch 2", "precision bf16",
              "optimizer adamw", "recompute full 4", "recompute ?", "global-batch 2_097_152 tokens"],
    "hardware": ["gpu h100-sxm", "nodes 16", "network 8 x 400 Gb/s", "gpus-per-node 8", "link nvlink"],
    "pp": ["schedule interleaved-1f1b", "virtual-stages 2", "split [1, 2, 3]", "schedule ?"],
    "dp": ["sharding zero1", "sharding hsdp 2 x 4", "sharding ?"],
    "tp": ["sequence-parallel on", "sequence-parallel ?"],
    "launch": ['image "nvcr.io/nvidia/pytorch:24.07-py3"', 'env NCCL_DEBUG "WARN"', "steps 5"],
}

COMMENT = st.sampled_from(["", "  # note", " # x = 3 { } \"quoted\"", "\t# tab"])


@st.composite
def block(draw, kind):
    chosen = draw(st.lists(st.sampled_from(SETTINGS[kind]), min_size=0, max_size=4, unique_by=lambda s: s.split()[0]))
    head = kind
    if draw(st.booleans()):
        return head + " { " + ", ".join(chosen) + " }" + draw(COMMENT)
    lines = [head + draw(SPACE) + "{" + draw(COMMENT)]
    for setting in chosen:
        lines.append(draw(st.sampled_from(["  ", "    ", "\t"])) + setting + draw(COMMENT))
        if draw(st.booleans()):
            lines.append("")
    lines.append("}")
    return "\n".join(lines)


@st.composite
def spec_text(draw):
    statements = [layout_line(), st.just("model tiny"), st.just("model llama3-8b { layers 4 }")]
    statements += [block(kind) for kind in SETTINGS]
    chosen = draw(st.lists(st.sampled_from(range(len(statements))), min_size=1, max_size=6, unique=True))
    parts = []
    for index in chosen:
        if draw(st.booleans()):
            parts.append("# " + draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)))
        parts.append(draw(statements[index]) + draw(COMMENT))
        parts.append(draw(st.sampled_from(["", "\n", "\n\n"])))
    return "\n".join(parts) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_text())
def test_random_layouts_round_trip_through_fmt(text):
    document, errors = parse(SourceFile("x.par", text))
    assert not errors, (text, errors)
    formatted = format_document(document)
    assert meaning(formatted) == meaning(text)
    again, errors = parse(SourceFile("x.par", formatted))
    assert not errors
    assert format_document(again) == formatted


# ---------------------------------------------------------------------------------------------
# Mutations

SPEC_TEXTS = [p.read_text() for p in SPECS]
JUNK = ["=", "{", "}", "?", "x", "#", '"', "\x00", "\t", "\n", "tp", "8gpus", "1e30", "-1", "[", "]",
        "\u00e9", "\ufeff", "ep 2 over dp", ",", "allow W0001", "(", ")", "\r\n", "999999999999999999999"]


def mutate(text: str, rng: random.Random) -> str:
    kind = rng.randrange(6)
    if not text:
        return rng.choice(JUNK)
    position = rng.randrange(len(text) + 1)
    if kind == 0:  # insert junk
        return text[:position] + rng.choice(JUNK) + text[position:]
    if kind == 1:  # delete a range
        return text[:position] + text[position + rng.randrange(1, 40):]
    if kind == 2:  # replace a character with an arbitrary one
        return text[:position] + chr(rng.randrange(1, 0x3000)) + text[position + 1:]
    lines = text.split("\n")
    if kind == 3:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif kind == 4:  # duplicate a line elsewhere
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
    else:  # swap two tokens on a line
        index = rng.randrange(len(lines))
        words = lines[index].split(" ")
        if len(words) > 1:
            a, b = rng.randrange(len(words)), rng.randrange(len(words))
            words[a], words[b] = words[b], words[a]
        lines[index] = " ".join(words)
    return "\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(range(len(SPEC_TEXTS))), st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_mutated_specs_never_raise_and_errors_have_spans(which, seed, rounds):
    rng = random.Random(seed)
    text = SPEC_TEXTS[which]
    for _ in range(rounds):
        text = mutate(text, rng)
    result = compile_text(text, "m.par")
    render_text(result.diagnostics, {"m.par": result.source}, Style(False))
    for d in result.diagnostics:
        if d.is_error:
            assert d.span is not None, d
            assert 0 <= d.span.start <= d.span.end <= len(result.source.text), d
    if result.plan is None:
        assert any(d.is_error for d in result.diagnostics), "no plan and no error"
    document, errors = parse(result.source)
    if not errors:
        formatted = format_document(document)
        assert format_document(parse(SourceFile("m.par", formatted))[0]) == formatted
