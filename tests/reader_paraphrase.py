"""The harness the reader's paraphrase tests share (tests/test_reader_paraphrases.py,
tests/test_reader_paraphrases_more.py): the published rows by id, edits of a row (a pattern
replaced in every string, a note added, a field set, the recipe written as text, a model extra), and
what the reader makes of a row, compared field by field.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import re
import sys

from .conftest import ROOT, load_yaml

sys.path.insert(0, str(ROOT / "benchmarks"))
published = importlib.import_module("published")

ROWS: dict[str, tuple[dict, list]] = {}
SOURCE_FILE: dict[str, str] = {}
"""The data file each row of `ROWS` comes from."""
for _path in sorted((ROOT / "benchmarks" / "data").glob("*.yaml")):
    _entries = load_yaml(_path.read_text())
    if isinstance(_entries, list) and _entries and isinstance(_entries[0], dict) and "layout" in _entries[0]:
        for _row in _entries:
            ROWS[_row["id"]] = (_row, _entries)
            SOURCE_FILE[_row["id"]] = _path.name


# ------------------------------------------------------------------ row edits
def _walk(x, fn):
    if isinstance(x, str):
        return fn(x)
    if isinstance(x, dict):
        return {k: (v if k == "id" else _walk(v, fn)) for k, v in x.items()}
    if isinstance(x, list):
        return [_walk(v, fn) for v in x]
    return x


def rep(pattern, text, flags=re.I):
    def op(row):
        hits = [0]

        def fn(s):
            new, n = re.subn(pattern, lambda m: text, s, flags=flags)
            hits[0] += n
            return new
        out = _walk(row, fn)
        if not hits[0]:
            raise RuntimeError(f"pattern {pattern!r} not found")
        return out
    return op


def note(text):
    def op(row):
        row = copy.deepcopy(row)
        n = row.get("notes")
        if n is None:
            row["notes"] = [text]
        elif isinstance(n, list):
            row["notes"] = n + [text]
        else:
            row["notes"] = str(n) + "; " + text
        return row
    return op


DROP = object()


def setf(path, value):
    def op(row):
        row = copy.deepcopy(row)
        keys = path.split(".")
        cur = row
        for k in keys[:-1]:
            cur = cur.setdefault(k, {})
        if value is DROP:
            cur.pop(keys[-1], None)
        else:
            cur[keys[-1]] = value
        return row
    return op


def apply(row, ops):
    row = copy.deepcopy(row)
    for op in ops:
        row = op(row)
    return row


# ------------------------------------------------------------------ new edits
def recipe_text(*drop, replace=None):
    """The row's `recipe` (not in the shared schema) written into its notes as YAML-ish text, as a
    transcriber would paste it, without the keys (or `other` names) in `drop`; `replace` sets a key."""
    def op(row):
        row = copy.deepcopy(row)
        rec = dict(row.pop("recipe"))
        rec.pop("source", None)
        if "recompute" in rec and not (row.get("layout") or {}).get("recompute"):
            # the transcription's own `recompute` key: the shared schema's field for it is layout.recompute
            row["layout"] = dict(row["layout"], recompute=str(rec.pop("recompute")))
        for k, v in (replace or {}).items():
            rec[k] = v
        for k in drop:
            if k in rec:
                rec.pop(k)
            elif k in (rec.get("other") or []):
                rec["other"] = [o for o in rec["other"] if o != k]
            else:
                raise RuntimeError(f"recipe key {k!r} not found")
        txt = "; ".join(f"{k}: {('[' + ', '.join(map(str, v)) + ']') if isinstance(v, list) else v}" for k, v in rec.items())
        n = row.get("notes")
        row["notes"] = ([n] if isinstance(n, str) else list(n or [])) + ["recipe: " + txt]
        return row
    return op


def extra(text):
    """model.extra, the shared schema's place for model facts beyond its fields."""
    def op(row):
        row = copy.deepcopy(row)
        m = row.setdefault("model", {})
        old = m.get("extra")
        m["extra"] = (str(old) + "; " + text) if old else text
        return row
    return op


# ------------------------------------------------------------------ reading
MARKERS = ("random routing", "node-limited", "FP8 all-to-alls", "DeepEP", "Hybrid-EP", "torch.compile",
           "fused cross-entropy", "power limit", "HBM bandwidth", "offloaded", "no host read",
           "FP8 dot-product attention", "fused grouped MLP", "expert tensor parallelism")


def reading(row, others, exact: bool = False):
    """What the reader makes of `row`: its spec (but the source comment), every runtime fact, its
    reported figure and convention, and the notes that only add a fact (`MARKERS`). A paraphrase
    may write its figure rounded or per node: `exact` (a whole row transcribed again) also holds
    the figure to 6 decimals and which published number it came from."""
    run = published.row_spec(row, others)
    if isinstance(run, published.Skipped):
        return {"SKIPPED": run.reason}
    spec = [ln for ln in run.spec.splitlines() if not ln.startswith("#")]
    out = {f"sw.{k}": v for k, v in dataclasses.asdict(run.software).items() if not k.startswith("_")}
    out["spec"] = spec
    out["recompute_stated"] = run.recompute_stated
    out["reported_tflops"] = round(run.reported_tflops, 6 if exact else 3)
    if exact:
        out["reported_from"] = run.reported_from
    out["convention"] = run.convention
    out["fp8_linears_stated"] = run.fp8_linears_stated  # kept through `compiled` (`te_fp8_linears`)
    marks = [m for m in MARKERS if any(m in a for a in run.assumptions)]
    # note_stated_attention_kernel (applied in `compiled`): the Triton note
    if run.software.attention == "flash" and published.affirms(run.source_words, published.TRITON_ATTENTION):
        marks.append("Triton attention note")
    out["markers"] = tuple(marks)
    return out


def diff(a, b):
    if "SKIPPED" in a or "SKIPPED" in b:
        return [] if a == b else [f"skipped: {a.get('SKIPPED')!s:.110} (expected {b.get('SKIPPED', 'a reading')!s:.60})"]
    out = []
    for k in a:
        if k == "spec":
            sa, sb = a[k], b[k]
            if sa != sb:
                got = [ln for ln in sa if ln not in sb]
                exp = [ln for ln in sb if ln not in sa]
                out.append(f"spec: {' | '.join(x.strip() for x in got)} (expected {' | '.join(x.strip() for x in exp)})")
        elif a[k] != b[k]:
            out.append(f"{k}: {a[k]!r} (expected {b[k]!r})")
    return out


def want_diff(a, want: dict):
    if "SKIPPED" in a:
        return [f"skipped: {a['SKIPPED']!s:.110}"]
    out = []
    for k, v in want.items():
        if k == "spec~":  # a line the spec must contain (substring)
            if not any(v in ln for ln in a["spec"]):
                out.append(f"spec: no `{v}`")
        elif k == "spec!~":
            if any(v in ln for ln in a["spec"]):
                out.append(f"spec: has `{v}` (expected none)")
        elif a.get(k) != v:
            out.append(f"{k}: {a.get(k)!r} (expected {v!r})")
    return out
