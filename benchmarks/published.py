"""A published training run, in published.yaml's schema, as a parc spec.

The calibration set beside conventions.md and the larger set kept apart to check the model share
one schema, so everything here works from the schema and the words of each row, never from a
table keyed by its id or its source group: which GPU, network, model family, schedule, sharding and recomputation a row
means is read from its fields (and, for the facts a spec cannot state, such as the attention
kernel or tensor-parallel overlap, from its source's year and text). Whatever a row leaves out
is filled with the producing software's documented default and listed in `Run.assumptions`; a
row that cannot be expressed becomes `Skipped`, with the reason, never an exception.

A row becomes:
- the `.par` text (layout, model, hardware, training settings) that parc compiles as a user's
  spec would be compiled;
- the runtime facts (`timing.Software`) the time model needs and a spec does not say;
- the FLOPs per step in the row's *own* convention (conventions.md), so that predicted and
  reported TFLOP/s per GPU compare like with like; the reported figure in that convention, from
  whichever of TFLOP/s, MFU, HFU, step time or tokens per second the row publishes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from parc import timing
from parc.catalog.gpus import ALIASES as GPU_ALIASES
from parc.catalog.gpus import FP4_SPARSE_FLOPS, GPUS, PRECISION_PEAK
from parc.kernels import DEEPEP_SMS, HYBRIDEP_SMS
from parc.memory.inputs import keeps_original_input
from parc.plan import Target
from parc.power import BOARD_POWER
from parc.spec import modules_of_absent_parts
from parc.stages import empty_ends_split
from parc.targets import gather_bytes, shared_overlap_applies

# ---------------------------------------------------------------------------------------------
# What a row is turned into


@dataclass
class Run:
    id: str
    group: str
    convention: str
    gpus: int
    peak: float
    """Dense peak TFLOP/s at the row's precision (the row's own figure, else the catalogue's)."""
    reported_tflops: float
    """TFLOP/s per GPU in the row's convention, as published or from its MFU, step time, ..."""
    reported_from: str
    spec: str
    software: timing.Software
    assumptions: list[str] = field(default_factory=list)
    fitted: bool = True
    conv_flops: float = 0.0
    """FLOPs per step in the row's convention."""
    plan: object = None
    findings: list[str] = field(default_factory=list)
    recompute_stated: bool = True
    """False when the row leaves recomputation out (then `compiled` picks the least that fits)."""
    whole_layers_only: bool = False
    """The runtime recomputes every layer or none (Megatron-LM before Korthikanti et al. 2022's
    selective and per-layer recomputation): what `least_recompute_that_fits` may choose."""
    source_words: str = ""
    """What the row's source says about its software (`source_text`), for the facts a spec cannot state."""
    fp8_linears_stated: bool = False
    """The row's eager PyTorch runtime runs Transformer Engine's fp8 linears (`te_fp8_linears`), which
    its `target torch` statement cannot say: `compiled` keeps the row's `fp8`."""
    compile_stated: bool = False
    """The row's PyTorch FSDP runtime ran under torch.compile (`COMPILE_WORDS`), which its `target
    torch` statement cannot say (parc's own job is eager): `compiled` keeps the row's fused kernels."""


@dataclass
class Skipped:
    id: str
    reason: str


class Unusable(Exception):
    """A row that cannot be written as a spec; its message is the reason."""


# ---------------------------------------------------------------------------------------------
# Reading the row's words


def _strings(*parts) -> list[str]:
    """Every string in the given fields (nested lists and dicts too), numbers as written, in order."""
    out: list[str] = []

    def walk(x):
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif x is not None and not isinstance(x, bool):
            out.append(str(x))

    for p in parts:
        walk(p)
    return out


def keyed(value):
    """A mapping as one "key: value; ..." text, where its keys say what its numbers are
    (`dp_shard: 8`, `sliding_window: 128`), which `_words` (values only) would drop; anything else
    as it is."""
    return "; ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, dict) else value


def _words(*parts) -> str:
    """Every string in the given fields (nested lists and dicts too), lower-cased, one text: one
    line each, so that no clause runs from one field or note into the next (`affirms`)."""
    return "\n".join(_strings(*parts)).lower()


SENTENCE_END = r"(?<!\d)(?<![\d.]\w)(?<!\bvs)\.(?!\d)(?!\w\.)|\n"
"""Where a sentence ends: a full stop after no digit (a decimal point, "v0.8", "1.5 TB/s", and a
number's own full stop stay with it) and no abbreviation ("vs.", "e.g.", "i.e."), or a line (each
field and note is its own line, `_words`)."""


def clauses(text: str, at: str = ";") -> list[str]:
    """`text` cut into its sentences (`SENTENCE_END`) and, within them, at each of the characters
    of `at`: "" for whole sentences, ";" for clauses (the default), ";," for the pieces between
    commas too. One splitter for every reading that asks what one sentence or clause says."""
    return re.split((f"[{re.escape(at)}]|" if at else "") + SENTENCE_END, text)


def words_before(text: str, start: int, reach: int = 60) -> str:
    """The words of a mention's own clause just before it (at most `reach` characters): cut at
    sentence and clause ends, commas and parentheses, and before a command line's next flag ("--a
    --no-b": each flag is its own clause). What a denial before a mention must sit in."""
    return re.split(r"[.;,()\n]|\s--(?=\w)", text[max(0, start - reach):start])[-1]


def source_text(entry: dict) -> str:
    """What the source says about its software: title, locator, evidence, notes, extras, and the
    precision's own words ("MXFP8 with FP8 attention")."""
    lay = entry.get("layout") or {}
    return _words(entry.get("group"), entry.get("source"), entry.get("notes"), lay.get("extra"),
                  (entry.get("model") or {}).get("extra"), lay.get("precision"))


ARXIV_ID = r"arxiv(?:\.org/(?:abs|pdf)/|[:.\s]+(?:preprint\s+)?(?:arxiv:)?)(\d\d)(\d\d)\.\d{4,5}"
"""An arXiv identifier as a row writes it: "arXiv:2104.04473", "arxiv.org/abs/2104.04473", "arXiv
preprint 2104.04473", "arXiv.2104.04473"."""


def arxiv_month(entry: dict) -> tuple[int, int] | None:
    """(year, month) of the row's arXiv identifier, its first submission, in its title, else its
    locator; None where it has none."""
    src = entry.get("source") or {}
    for text in (src.get("title"), src.get("locator")):
        found = re.search(ARXIV_ID, str(text or ""), flags=re.I)
        if found and 1 <= int(found.group(2)) <= 12:
            return 2000 + int(found.group(1)), int(found.group(2))
    return None


def source_year(entry: dict) -> int | None:
    """The year the run was published: its arXiv identifier's (the first submission: "arXiv:2205.05198"
    is 2022 whatever venue's year follows), else the first 20xx in the source's title (else its
    locator or the group's name), else a venue's abbreviated year ("SC '21", "SC21")."""
    src = entry.get("source") or {}
    month = arxiv_month(entry)
    if month:  # first submitted then, whatever venue year follows it
        return month[0]
    for text in (src.get("title"), src.get("locator"), entry.get("group")):
        found = re.findall(r"(?<!\d)(20[12]\d)(?!\d)", str(text or ""))
        if found:
            return int(found[0])
    for text in (src.get("title"), src.get("locator")):  # a venue's year as its name writes it: "SC '21", "SC21"
        venue = re.search(r"\b(?:sc|neurips|nips|icml|iclr|mlsys|osdi|nsdi|sosp|atc|ppopp|asplos|eurosys|isca|ipdps|hpdc)"
                          r"\s*['\u2019]?(\d\d)\b", str(text or ""), flags=re.I)
        if venue:
            return 2000 + int(venue.group(1))
    return None


def _int(value, name: str, binary: bool = False) -> int | None:
    """A whole number as a row writes it (`WHOLE`), or with a multiplier (`SCALED`: "50K", "1.5M"):
    decimal, or powers of 1,024 where `binary` (a sequence's "8K" is 8,192 tokens). A multiplier
    is never dropped: "2K" read as 2 would predict a sequence of two tokens."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise Unusable(f"`{name}` is not a number ({value!r})")
    if isinstance(value, (int, float)):
        if math.isfinite(value) and float(value).is_integer() and value >= 0:
            return int(value)
        raise Unusable(f"`{name}` is not a whole number ({value!r})")
    if placeholder(value):  # "n/a", "not stated", "-": the row does not say
        return None
    text = str(value)
    exact = re.fullmatch(r"\s*(?:~|≈|about|approx\.?|approximately|circa)\s*[\d.,]+\s*[KkMmBb]?\s*\(\s*" + COUNT + r"\s*\)\s*",
                         text, flags=re.I)
    if exact:  # "~51K (51,200)": the exact count beside the rounded one
        return int(exact.group(1).replace(",", ""))
    spelled = re.fullmatch(r"\s*([a-z]+(?:-[a-z]+)?)\s*", text.lower())
    if spelled and spelled.group(1) in SPELLED:  # "eight"
        return SPELLED[spelled.group(1)]
    # the number the field counts where it holds more than one: its own label's ("4 experts per rank,
    # EP=64"), an arithmetic's result or a derivation's ("1536 / (8x8) = 24", "n/a (derived: 24)"), the
    # sequences beside a token count ("4096 tokens (2 sequences)")
    label = FIELD_LABELS.get(name, re.escape(name.split("_")[0]))
    own = re.search(r"(?<![\w-])(?<![a-z] )(?:" + label + r")\s*[=:]\s*" + COUNT + r"(?![\d.])", text, flags=re.I)
    result = (re.search(r"\d\s*[/*×x+]\s*[\d(][^=]*=\s*" + COUNT + r"\s*\)?\s*$", text)
              or re.search(r"\bderived\W{0,3}" + COUNT + r"\b", text, flags=re.I))
    sequences = (name in ("micro_batch", "global_batch") and "token" in text.lower()
                 and re.search(COUNT + r"\s*(?:seqs?|sequences|samples)\b", text, flags=re.I))
    chosen = own if own and len(re.findall(r"\d+", text)) > 1 else result or sequences
    if chosen:
        return int(chosen.group(1).replace(",", ""))
    scaled = re.match(SCALED, str(value))
    if scaled:
        scale = BINARY_SCALE if binary or scaled.group(3) else DECIMAL_SCALE  # "8Ki" is binary whatever the field
        number = float(scaled.group(1)) * scale[scaled.group(2).lower()]
        if number.is_integer():
            return int(number)
        raise Unusable(f"`{name}` is not a whole number ({value!r})")
    found = re.match(WHOLE, str(value))  # "8 (stated)", "TP=8", "TP-8", "tensor parallel 8", "1,536"
    if found:
        return int(found.group(1).replace(",", ""))
    found = re.fullmatch(r"\s*(\d+)\.0+\s*", str(value))  # "8.0"
    if found:
        return int(found.group(1))
    raise Unusable(f"`{name}` is not a whole number ({value!r})")


PLACEHOLDER = (r"\s*(?:n/?a|n/s|tb[ad]|null|unknown|unstated|unspecified|not\s+(?:stated|published|given|reported|specified)"
               r"|[-–—?]+)?\s*\.?\s*(?:\((?:not|un|to be)[^)]*\)"
               r"|\([^)]*\b(?:not\s+(?:stated|published|given|reported|specified)|unstated|unknown|unspecified)\b[^)]*\)"
               r"|(?<=\?)\s*[^()\d]*\bnot (?:stated|published|given|reported)\b[^()\d]*)?\s*"
               r"|\s*(?:unknown|unstated|unspecified|not\s+(?:stated|published|given|reported|specified))\s*[.,;:]?\s*"
               r"\([^)]*\)\s*")  # "unstated (see recipe)": the aside says where, not what
"""What a transcriber writes for a field the source leaves open: "n/a", "not stated", "-", "?
(interleaved, V not stated)", or nothing; such a field is unstated, never a value."""


def memory_of(value) -> float | None:
    """One GPU's memory in GB as a row writes it: 80, "80 GB", "8 x 80 GB" (a node's GPUs: one of
    them), "40960 MiB" (40 GiB, read as 40); None where no figure is given."""
    if isinstance(value, str):
        # a node's total beside the GPU's ("80 (640 GB per node)"): the GPU's
        value = re.sub(r"[(,;]?\s*\d[\d,]*(?:\.\d+)?\s*(?:gi?b|tb)?\s*(?:per|/|a)\s*(?:node|server|host|dgx)\b\)?", "",
                       value, flags=re.I)
        per_gpu = re.search(r"(\d[\d,]*(?:\.\d+)?)\s*(?:gi?b)?\s*(?:per|/|a)\s*gpu\b", value, flags=re.I)
        if per_gpu:  # "96 per GPU", "(96 per GPU)"
            return float(per_gpu.group(1).replace(",", ""))
        value = re.sub(r"^\s*(\d[\d,]*(?:\.\d+)?)\s*(gi?b)?\s*\([^)]*\)\s*$", r"\1 \2", value, flags=re.I)  # "96 (HBM2e)"
        found = re.search(r"(\d[\d,]*(?:\.\d+)?)\s*(mi?b|gi?b|tb)?\s*$|(\d[\d,]*(?:\.\d+)?)\s*(mi?b|gi?b)\b", value,
                          flags=re.I)
        if found:
            number = float((found.group(1) or found.group(3)).replace(",", ""))
            unit = (found.group(2) or found.group(4) or "").lower()
            return number / 1024 if unit.startswith("m") else number * 1000 if unit == "tb" else number
        return None
    return figure(value)


def stated_bool(value) -> bool | None:
    """A yes/no field as a row writes it: YAML's booleans, or "true"/"false", "yes"/"no", "on"/"off",
    "enabled"/"disabled", 1/0; None where it says nothing (`placeholder`)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    text = str(value).strip().lower()
    if placeholder(value) or re.fullmatch(r"\(\s*(?:n/?a|none|unknown|\?)\s*\)|tbd", text):  # bare "none" is a no
        return None
    if re.match(r"\W*(?:" + LEFT_OPEN_WORDS + r")\b", text):  # "not stated (default on with TP)"
        return None
    label = re.match(r"^([a-z][\w -]*?)\s*[:=]\s*(?=\S)", text)  # the subject's label: "SP: no", "sequence parallel: no"
    if label and label.group(1).strip() not in ("no", "yes", "n", "y", "none", "on", "off", "true", "false"):
        text = text[label.end():]
    first = re.match(r"[\W_]*([a-z0-9]+|[✓✗])", text)
    token = first.group(1) if first else ""
    if token in ("no", "none", "n", "false", "off", "disabled", "disable", "0", "without", "not", "✗"):
        return False
    if token in ("yes", "y", "true", "on", "enabled", "enable", "1", "with", "✓"):
        return True
    # the words after the subject, in its clause: "SP off", "SP no", "sequence parallelism was not used" (not
    # "Megatron SP (not Ulysses)", whose aside denies something else)
    return not re.search(r"\b(?:off|disabled|false|no|none|not|never)\b|✗", re.split(r"[(,;]", text)[0])


UNUSED_HEAD = r"(?:n/?a|none|no|off|disabled|unused|not[ -](?:used|applicable|enabled)|[-–—]+(?![a-z-]))"
"""The words that write a parallel degree as not used, where they open the field."""


def unused(value) -> bool:
    """A parallel degree written as not used: "none", "n/a", "-", "off", also with words after them
    ("n/a (no tensor parallelism)", "none (FSDP only)", "- (seq 2048)", "n/a: dense", "expert TP:
    none"), "no TP", "no pipelining", "without experts", "single stage": 1. Unlike "not stated" or
    "unknown", which leave it open, and a count derived beside the words ("n/a (derived: 24)"). Where
    the source wrote it may follow ("NA in table")."""
    if not isinstance(value, str):
        return False
    text = re.sub(r"^\s*[a-z][a-z _-]*:\s*(?=" + UNUSED_HEAD + r"\W*$)", "", value.lower())  # "expert TP: none"
    # where the source wrote it: "NA in table (read as no interleaving)" is the table's "NA"
    text = re.sub(r"^(\s*" + UNUSED_HEAD + r")\s+(?:in|per)\s+(?:the\s+)?(?:table|source|column|readme|paper|docs?)\b",
                  r"\1", text)
    if re.fullmatch(r"\s*" + UNUSED_HEAD + r"\s*", text):
        return True
    if re.search(r"deriv|" + LEFT_OPEN, text):
        return False
    return bool(re.match(r"\s*" + UNUSED_HEAD + r"\s*(?:[(:,;—–-]|$)", text)
                or re.match(r"\s*(?:no|without)\s+(?!\d)\w", text)
                or re.match(r"\s*single[ -](?:stage|replica|chunk|pipeline|model[ -]chunk)", text))


def expert_tp_of(lay: dict, text: str) -> int | None:
    """Expert tensor parallelism: the row's `expert_tp`, where a degree written as not used
    ("none", "off", "n/a") is 1, else the degree its words state (`expert_tensor_parallel_size: 1`,
    "ETP=1", `--expert-tensor-parallel-size 1`); None where neither says."""
    raw = lay.get("expert_tp")
    if unused(raw) or (isinstance(raw, str) and re.fullmatch(r"\s*(?:n/?a|none|no|off)\W*\(?\s*1\s*\)?\s*", raw, re.I)):
        return 1
    if not placeholder(raw):
        return _int(raw, "expert_tp")
    said = re.search(r"(?:expert[-_ ]tensor[-_ ]parallel(?:ism|[-_ ]size)?|\betp)\b[\s\"':=]*(\d+)\b", text)
    return int(said.group(1)) if said else None


def placeholder(value) -> bool:
    """Whether a row's field says nothing (`PLACEHOLDER`); a YAML boolean says something."""
    return value is None or (isinstance(value, str) and re.fullmatch(PLACEHOLDER, value, flags=re.I) is not None)


COUNT = r"(\d{1,3}(?:,\d{3})+|\d+)"
"""A whole number, bare or with thousands separators ("1,536", which must never read as 1)."""
WHOLE = (r"\s*(?:-{0,2}[A-Za-z][A-Za-z _-]*?\s*[=:(-]?\s*)?" + COUNT
         + r"(?![\d.]|,\d|[KkMm]i?(?![A-Za-z])|\s*(?:[-–]|to\b)\s*\d)")  # "2-4" is a range, no count
"""A whole number as a row writes it: bare, after a label ("TP=8", "tp 8", "TP(8)", a command
line's "--tensor-model-parallel-size 8"), or with thousands separators ("1,536", which must never
read as 1; "gbs=384, mbs=1" is 384)."""
FIELD_LABELS = {"global_batch": r"gbs|global[ _-]?batch(?:[ _-]?size)?", "micro_batch": r"mbs|micro[ _-]?batch(?:[ _-]?size)?",
                "grad_accum": r"grad(?:ient)?[ _-]?accum\w*"}
"""The labels a field's own number follows where its value holds several ("gbs=384, mbs=1")."""
SPELLED = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "twelve": 12,
           "sixteen": 16, "thirty-two": 32, "sixty-four": 64}
"""Degrees and counts a field spells out ("eight", "four")."""
SCALED = r"\s*(?:[A-Za-z][A-Za-z _-]*?\s*[=:-]?\s*)?(\d+(?:\.\d+)?)\s*([KkMmBb])(i?)(?![A-Za-z\d])"
"""A number with a multiplier letter: "2K", "128k", "1.5M", "seq=8K"; "8Ki" (binary, always)."""
DECIMAL_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9}
"""Multipliers as counts and throughputs are written: "50K" vocabulary, "1.2M tokens/s"."""
BINARY_SCALE = {"": 1, "k": 2**10, "m": 2**20, "b": 2**30}
"""Multipliers of a sequence length: "8K" is 8,192 tokens."""
TOKEN_SCALE = {"": 1, "k": 10**3, "m": 2**20, "b": 10**9}
"""Multipliers of a token count: "4M tokens" is 4 x 2^20 (a batch of 4,194,304 = 1,024 x 4,096
tokens is what papers call 4M); K and B are decimal."""


def global_batch_sequences(value, seq: int | None, notes: list[str], multiple: int = 1) -> int | None:
    """A global batch in sequences from what a row writes: a count of sequences, or of tokens
    ("4M tokens", "4,194,304 tokens", "16M tokens (4096 seqs)"), divided by the sequence length.
    A token count read as sequences would predict a batch a few thousand times too small."""
    text = str(value) if value is not None and not isinstance(value, (int, float, bool)) else None
    if text is None or "token" not in text.lower():
        return _int(value, "global_batch")
    leading = re.match(r"\s*" + COUNT + r"\s*(?:\(|seqs?\b|sequences\b|samples\b)", text)  # "1536 (6.3M tokens)"
    if leading:
        return int(leading.group(1).replace(",", ""))
    stated = (re.search(COUNT + r"\s*(?:seqs?|sequences|samples)\b", text, flags=re.I)
              or re.search(COUNT + r"\s*[x×]\s*[\d,]+\s*tokens", text))  # "2048 x 4096 tokens"
    if stated:
        return int(stated.group(1).replace(",", ""))
    found = re.search(r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*([kmb])?\w*\s*tokens", text, flags=re.I)
    if not found or not seq:
        raise Unusable(f"global batch `{value}`: a token count that cannot be read in sequences")
    unit = (found.group(2) or "").lower()
    tokens = float(found.group(1).replace(",", "")) * TOKEN_SCALE[unit]
    # the reading of the multiplier that makes whole sequences: "2M tokens" at 2,000 a sequence is
    # 1,000 (decimal); "512K tokens" at 4,096 is 128 (2^19: a power-of-two count is binary first,
    # though 512,000 is 125 whole sequences too); "1.5M tokens" at 2,048 is 768 (binary)
    mantissa = float(found.group(1).replace(",", ""))
    binary_first = mantissa.is_integer() and mantissa > 0 and not int(mantissa) & (int(mantissa) - 1)
    order = (BINARY_SCALE, DECIMAL_SCALE) if binary_first else (DECIMAL_SCALE, BINARY_SCALE)
    whole = [scale[unit] * mantissa for scale in order if unit and not scale[unit] * mantissa % seq]
    if whole:
        tokens = whole[0]
    if tokens % seq and found.group(2):
        # "4.2M tokens": a rounded figure; the nearest whole sequences that divide over the replicas'
        # micro-batches (`multiple`)
        batch = max(1, round(tokens / seq / multiple)) * multiple
        notes.append(f"global batch {batch:,} sequences ({value}, a rounded figure, / seq {seq:,})")
        return batch
    if tokens % seq:
        raise Unusable(f"global batch `{value}`: {tokens:,.0f} tokens are not whole sequences of {seq:,}")
    notes.append(f"global batch {int(tokens // seq):,} sequences ({value} / seq {seq:,})")
    return int(tokens // seq)


# ---------------------------------------------------------------------------------------------
# Hardware


def gpu_key(name: str, memory_gb) -> str:
    """The catalogue entry a row's GPU name means (the closest part: overrides adjust it)."""
    n = re.sub(r"[\s_]+", "-", (name or "").lower())
    if "tpu" in n:
        raise Unusable(f"{name}: a TPU; parc models GPUs in NVLink domains with NICs, not TPU "
                       "pods' ICI tori")
    if n in GPUS:
        return n
    if n in GPU_ALIASES:
        return GPU_ALIASES[n]
    for pattern, key in (("gb300", "gb300-nvl72"), ("gb200", "gb200-nvl72"), ("b300", "b300"), ("b200", "b200"),
                         ("h200", "h200"), ("h800", "h800"), ("h100", "h100-sxm"), ("mi3", "mi300x")):
        if pattern in n:
            return key
    if "a100" in n or "a800" in n:
        # the part's memory: a stated `gpu_memory_gb`, else "40GB" / "40-GB" in the name (not "400W")
        memory = memory_of(memory_gb)
        # "40GB", "40 GB", "40G", "40GiB"; a DGX A100 of 320 GB holds eight of them
        forty = memory == 40 if memory else re.search(r"(?<!\d)40(?:-?g(?:i?b)?)?\b|(?<!\d)320-?gb", n) is not None
        return "a100-40gb" if forty else "a100-80gb"
    if "v100" in n:
        return "a100-40gb"
    raise Unusable(f"GPU `{name}` is not one parc's catalogue knows, and the row gives no figures to define it")


def peak_field(key: str, precision: str) -> str:
    """The catalogue field of the peak a run at `precision` on the part `key` runs its products at:
    the precision's own where the part has it, else bf16 (the spec then says which: E0626, E0629)."""
    field = PRECISION_PEAK.get(precision, "bf16")
    return field if GPUS[key].get(f"{field}_flops") else "bf16"


def _catalogue_peak(key: str, precision: str) -> float:
    return GPUS[key][f"{peak_field(key, precision)}_flops"] / 1e12


def _other_peaks(key: str) -> tuple[float, ...]:
    """The peaks (TFLOP/s) a row of an NVFP4 run on part `key` may state for its precision without
    meaning the dense FP4 one: the part's dense FP8 and BF16 peaks, and its sparse FP4
    (`catalog.gpus.FP4_SPARSE_FLOPS`)."""
    g = GPUS[key]
    return tuple(f / 1e12 for f in (g["fp8_flops"], g["bf16_flops"], FP4_SPARSE_FLOPS.get(key)) if f)


def stated_peak_of(raw, precision: str) -> float | None:
    """The dense peak (TFLOP/s) a row's `peak_tflops_dense_at_precision` states, however written:
    a number; "989 TFLOP/s BF16 dense (1979 with sparsity)" (the dense one, never the sparse);
    "5 PFLOP/s FP8 dense" (5,000: peta is a thousand tera); "FP8 1979 / BF16 989 (dense)" (the
    row's precision's); "1979 (FP8, dense; 2x with sparsity)" (a factor is no peak)."""
    if not isinstance(raw, str):
        return figure(raw)
    numbers = list(re.finditer(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d.])(?!\s*[x×%])", raw))
    if not numbers:
        return None
    candidates = []
    for i, found in enumerate(numbers):
        after = raw[found.end():numbers[i + 1].start() if i + 1 < len(numbers) else len(raw)].lower()
        before = raw[numbers[i - 1].end() if i else 0:found.start()].lower()
        value = float(found.group(1).replace(",", ""))
        if re.match(r"\s*(?:p(?:eta)?flop|pf\b)", after):
            value *= 1000
        # a number's own words: up to the next ";" "," "/" after it (its parenthesis included: "624
        # (sparse)"), back to the last ";" "," "/" ")" before it
        if re.search(r"sparse|sparsity|2:4", re.split(r"[;,/]", after)[0]) or re.search(
                r"sparse\W*$", re.split(r"[;,/)]", before)[-1]):
            continue
        words = before[-12:] + re.split(r"[;,/]", after)[0]
        named = re.findall(r"\b(bf16|fp16|fp8|fp4|nvfp4|mxfp8|tf32|fp32)\b", words)
        candidates.append((value, named))
    if not candidates:
        return None
    wanted = {"nvfp4": ("nvfp4", "fp4"), "fp8": ("fp8", "mxfp8"), "fp16": ("fp16",)}.get(precision, ("bf16", "fp16"))
    matching = [v for v, named in candidates if any(n in wanted for n in named)]
    return (matching or [candidates[0][0]])[0]


H100_HBM2E_TBPS_PER_GB = 2.0 / 80
"""HBM2e's rate on an H100, TB/s per GB of stacks: the H100 PCIe datasheet's 2.0 TB/s over its
80 GB (five 16 GB stacks at 0.4 TB/s each)."""


def hardware_block(hw: dict, precision: str, notes: list[str]) -> tuple[str, str, int, float]:
    """The spec's `hardware { ... }` block, the GPU key, GPUs per node and the peak (TFLOP/s)."""
    name = hw.get("gpu") or ""
    memory = memory_of(hw.get("gpu_memory_gb"))
    key = gpu_key(name, memory)
    g = GPUS[key]
    overrides: list[str] = []
    lowered = name.lower()
    if "v100" in lowered:
        overrides += ["bf16 125 TFLOP/s", "link 150 GB/s", "generation ampere"]
        notes.append("V100: 125 TFLOP/s fp16, 900 GB/s HBM2, Ampere's efficiency constants (Volta is not "
                     "calibrated)")
    if "a800" in lowered:
        overrides.append("link 200 GB/s")  # the A800: an A100 with NVLink cut to 400 GB/s bidirectional
    stated_peak = hw.get("peak_tflops_dense_at_precision")
    peak = stated_peak_of(stated_peak, precision)
    catalogue = _catalogue_peak(key, precision) if "v100" not in lowered else 125
    if isinstance(peak, (int, float)) and peak > 0 and precision == "nvfp4" and key in GPUS and any(
            abs(peak - other) <= 0.5 for other in _other_peaks(key)):
        # an NVFP4 row whose "peak at precision" is the part's FP8 or BF16 peak, or its sparse FP4
        # one: the row's MFU convention, not a slower FP4 part (the figure still converts its MFU)
        notes.append(f"peak {peak:,.0f} TFLOP/s stated for an NVFP4 run: the {g['description']}'s "
                     f"{'sparse FP4' if peak > catalogue else 'FP8 or BF16'} peak, read as the row's MFU "
                     f"convention; its products at the catalogue's dense FP4 {catalogue:,.0f}")
    elif isinstance(peak, (int, float)) and peak > 0:
        if abs(peak - catalogue) > 0.5:  # the row's own peak replaces the one assumed above (a V100's)
            field = peak_field(key, precision)
            overrides = [o for o in overrides if not o.startswith(field + " ")] + [f"{field} {peak:g} TFLOP/s"]
    else:
        peak = catalogue
        if name:
            notes.append(f"peak {peak:,.0f} TFLOP/s (the catalogue's {g['description']}; the row states none)")
    if isinstance(memory, (int, float)) and memory > 0 and abs(memory * 1e9 - g["hbm_bytes"]) > 0.1 * g["hbm_bytes"]:
        overrides.append(f"hbm {memory:g} GB")
    stated_per_node = hw.get("gpus_per_node")
    named = re.search(r"(\d+)\s*(?:x\s*)?gpus?\b", stated_per_node, flags=re.I) if isinstance(stated_per_node, str) else None
    per_node = (int(named.group(1)) if named  # "DGX H100 (8 GPUs)": not the 100 of its name
                else _int(stated_per_node, "gpus_per_node") or g["gpus_per_node"])
    network = network_of(hw, per_node, g, notes)
    gpu = f"gpu {key}" + (f" {{ {', '.join(overrides)} }}" if overrides else "")
    limited = power_and_memory(hw, notes, BOARD_POWER.get(key))
    if "v100" in lowered and not any(line.startswith("hbm-bandwidth") for line in limited):
        limited.append("hbm-bandwidth 0.9 TB/s")  # V100 SXM2 datasheet: 900 GB/s HBM2
    if (key.startswith("h100") and re.search(r"hbm2e", f"{name} {hw.get('note') or ''}", flags=re.I)
            and not any(line.startswith("hbm-bandwidth") for line in limited)):
        # an H100 with HBM2e stacks, not the SXM part's HBM3: the rate per GB of H100 PCIe's (2.0 TB/s
        # over five 16 GB stacks), so Meta's 96 GB part has six stacks, 2.4 TB/s
        stacks_gb = memory if isinstance(memory, (int, float)) and memory > 0 else g["hbm_bytes"] / 1e9
        tbps = round(H100_HBM2E_TBPS_PER_GB * stacks_gb, 2)
        limited.append(f"hbm-bandwidth {tbps:g} TB/s")
        notes.append(f"HBM bandwidth {tbps:g} TB/s (HBM2e named on an H100: H100 PCIe's 2.0 TB/s for 80 GB, "
                     "per GB of stacks)")
    limits = "".join(f", {line}" for line in limited)
    return f"hardware {{ {gpu}, network {network}{limits} }}", key, per_node, float(peak)


POWER = r"(\d+(?:\.\d+)?)\s*(-?W\b|-?watts?\b|kW\b)"
"""A power figure ("500 W", "500W", "500-watt", "0.5 kW"), which a hardware note states as a limit
or cap."""

POWER_LIMIT = (POWER + r"[\w\s-]{0,20}?\b(?:power[- ]?)?(?:cap(?:ped)?|limit(?:ed)?)\b"
               r"|\b(?:power[- ]?(?:cap|limit)|capped|limited to|(?:tdp|power) (?:limited|capped) (?:to|at))\D{0,20}?" + POWER
               + r"|\brun(?:ning|s)? at " + POWER + r"\s*\(power[- ]capped\)"
               + r"|\bmax(?:imum)? (?:board )?power\W{0,3}" + POWER)
"""A power limit stated in a hardware note: "500 W power cap", "power limit 500W", "TDP limited to
500 W", "500-watt power cap", "0.5 kW power limit", "running at 500 W (power-capped)", "max
power 500 W". A figure that belongs to something else ("3000 W power supplies") is none, and so is
a part's TDP ("400 W TDP per GPU, no power cap"): its rating, not a cap."""


def power_and_memory(hw: dict, notes: list[str], board: float | None = None) -> list[str]:
    """The spec's `power-limit` and `hbm-bandwidth` lines from a row's hardware: the optional
    fields `power_limit_w` and `hbm_bandwidth_tbps`, else a note's "500 W power cap" / "power
    limit 500W" and "HBM2e (2.4 TB/s)" / "2.4 TB/s HBM" (the compiler derates the peak,
    `parc.power`; bytes per second, never bits, for memory), else a power in the GPU's name below
    its `board` power ("H100 96GB HBM2e (Grand Teton, 500 W)"; "A100 (400W TDP)" is its own)."""
    out = []
    text = " ".join(str(hw.get(k) or "") for k in ("note", "network"))
    watts = hw.get("power_limit_w")
    if not isinstance(watts, (int, float)) or watts <= 0:
        found = re.search(POWER_LIMIT, text, flags=re.I)
        smi = re.search(r"nvidia-smi\s+(?:-pl|--power-limit)[\s=]+(\d+(?:\.\d+)?)", text, flags=re.I)
        watts = None
        if found:  # the one figure in the limit's words, in watts
            value, unit = re.search(POWER, found.group(0), flags=re.I).groups()
            watts = float(value) * (1000.0 if unit.lower() == "kw" else 1.0)
        elif smi:  # `nvidia-smi -pl 500`: watts
            watts = float(smi.group(1))
        elif board and re.search(POWER, str(hw.get("gpu") or ""), flags=re.I) and not re.search(
                r"tdp|pcie|v100", str(hw.get("gpu")), flags=re.I):
            # the part's own power in its name ("H100 96GB HBM2e (Grand Teton, 500 W)"): the power it ran
            # at, a limit where below the datasheet's board power
            value, unit = re.search(POWER, str(hw["gpu"]), flags=re.I).groups()
            named = float(value) * (1000.0 if unit.lower() == "kw" else 1.0)
            watts = named if named < board else None
    if watts:
        out.append(f"power-limit {watts:g} W")
        notes.append(f"power limit {watts:g} W stated: the peak is derated by the compiler")
    tbps = hw.get("hbm_bandwidth_tbps")
    if not isinstance(tbps, (int, float)) or tbps <= 0:
        found = (re.search(r"\b(?:HBM|memory bandwidth)[\w\s(,:@-]{0,14}?(\d+(?:\.\d+)?)\s*TB/s", text, flags=re.I)
                 or re.search(r"(\d+(?:\.\d+)?)\s*TB/s\)?\s*(?:of\s+)?(?:HBM|memory bandwidth)", text, flags=re.I))
        tbps = float(found.group(1)) if found else None
        # a superchip's or a node's bandwidth over the GPUs it names ("GB200 superchip (72 Arm cores,
        # 2x Blackwell GPUs, 16 TB/s memory bandwidth)"): each GPU's share
        scope = text[max(0, found.start() - 120):found.start()] if found else ""
        scope = re.sub(NUMBER_WORDS, lambda word: str(NUMBERS[word.group(1).lower()]), scope, flags=re.I)
        shared = re.search(r"(?<![\w.])(\d+)\s*x?\s*(?:[\w-]+\s+){0,2}?gpus?\b", scope, flags=re.I)
        after = text[found.end():found.end() + 40] if found else ""
        per_gpu = re.match(r"[\w\s]{0,14}?(?:\b(?:per|for each|a)\s+gpu\b|/\s*gpu\b|\beach\b)", after, flags=re.I)
        if tbps and shared and int(shared.group(1)) > 1 and not per_gpu and (
                re.search(r"superchip", scope, flags=re.I)
                or re.search(r"\b(?:aggregate|total|combined)\b|\bper\s+(?:node|superchip|tray|board)\b", after, flags=re.I)):
            notes.append(f"HBM bandwidth {tbps:g} TB/s stated for {shared.group(1)} GPUs together: "
                         f"{tbps / int(shared.group(1)):g} TB/s each")
            tbps /= int(shared.group(1))
            out.append(f"hbm-bandwidth {tbps:g} TB/s")
            return out
    if tbps:
        out.append(f"hbm-bandwidth {tbps:g} TB/s")
        notes.append(f"HBM bandwidth {tbps:g} TB/s stated")
    return out


RATE = (r"(\d+(?:\.\d+)?)\s*(?:([GT])(?:(b/s|bps|bit/s|bits?|bE|b)|(B/s|Bps|[Bb]ytes?/s))(?![A-Za-z])"
        r"|(G)(?=\s*(?i:ib|infiniband|roce|nics?|ethernet|hcas?|adapters?|ports?|edr|hdr|ndr|xdr)\b))")
"""A link rate with its unit: bits ("200Gb/s", "400 Gbps", "3.2 Tbps", "400G RoCE") or bytes per
second ("50 GB/s", "400 GBps"). The unit's case is the unit: b is a bit, B a byte. A size without
"/s" ("80GB") is memory, never a link."""
GENERATIONS = {"edr": 100, "hdr": 200, "ndr": 400, "xdr": 800, "omni-path": 100, "omnipath": 100, "opa": 100}
"""InfiniBand generations by name, Gb/s per port, and Intel's Omni-Path (100 Gb/s a port)."""
GENERATION = r"\b(edr|hdr|ndr|xdr|omni-?path|opa(?![a-z]))"
"""A generation's name where a note states one ("NDR", "NDR400", "HDR 200")."""
NOT_NETWORK = ("nvlink", "nvswitch", "pcie", "xgmi", "infinity fabric", "hbm")
NETWORK_WORDS = r"\b(?:ib|infiniband|roce\w*|ethernet|nics?|hcas?|rdma|efa|edr|hdr|ndr|xdr|omni-?path|connectx\S*)\b"
"""Words that name the scale-out network itself."""
"""Words that make a rate in a hardware note a scale-up or memory figure, not the NICs'."""


def rate_gbits(found: re.Match, offset: int = 0) -> float:
    """Gb/s of a `RATE` match (groups from `offset`): bytes are 8 bits, T is 1,000 G."""
    value, prefix, bits, nbytes = (found.group(offset + i) for i in (1, 2, 3, 4))
    scale = 1000 if prefix == "T" else 1
    return float(value) * scale * (8 if nbytes else 1)


def _network_rates(text: str) -> list[re.Match]:
    """Rate phrases that speak of the network, not of NVLink, PCIe or memory: no such word in the
    rate's own clause, before it back to the last "," ";" or "(" (or 40 characters) and after it up
    to the next delimiter ("900 GB/s NVLink, 8x400 Gb/s IB": the first is NVLink's; "NVLink offers
    a bandwidth of 160 GB/s": NVLink's); a rate alone in parentheses is what the words before them
    name ("NVLink/NVSwitch inside a node (160 GB/s), InfiniBand between nodes (50 GB/s)")."""
    kept = []
    for found in re.finditer(r"(?:(\d+)\s*[x*]\s*)?" + RATE, text):
        before = re.split(r"[,;(]", text[max(0, found.start() - 40):found.start()])[-1].lower()
        clause = re.split(r"[,;]", text[max(0, found.start() - 60):found.start()])[-1].lower()
        inside = clause.rfind("(")
        own = before + re.split(r"[)]", text[found.end():found.end() + 40])[0].lower()
        if inside >= 0 and ")" not in clause[inside:] and not re.search(NETWORK_WORDS, own):
            # in parentheses ("NVLink (900 GB/s per GPU)", "inside a node (report: about 160 GB/s)"):
            # the rate of what the words before them name, unless its own words name the network
            before = clause
        after = re.split(r"[,;()]", text[found.end():found.end() + 24])[0].lower()
        terabytes = found.group(3) == "T" and found.group(5)  # "2.4 TB/s": HBM's, no port moves that
        start = max((m.end() for m in re.finditer(r"[,;](?![^()]*\))", text[:found.start()])), default=0)
        end = next((m.start() for m in re.finditer(r"[,;](?![^()]*\))", text[found.end():])), len(text) - found.end())
        side = _node_side(text[start:found.end() + end])
        if side is None or found.group(0) not in side:
            continue  # "Tomahawk 4 switches (25.6Tbps, ...)", "64x400GbE switches": the switch's ports
        if not terabytes and not any(word in before or word in after for word in NOT_NETWORK):
            kept.append(found)
    return kept


MAX_PORT_GBITS = 800
"""The fastest scale-out port in service (ConnectX-8 / XDR-class 800 Gb/s): an unscoped rate above it
is a node's aggregate, not one NIC's."""
NIC_NOUN = r"(?:nics?|hcas?|adapters?|ports?|rails?|links?|connectx-\d+|cx-?\d+)"
"""Words that name a network adapter: "8 HCAs", "8 x ConnectX-7", "eight-rail", "4 Omni-Path links"
(only in a clause about the compute fabric: `compute_clauses`)."""
COUNTED_NICS = r"(?<![\w-])(\d+)\s*(?:x\s*)?(?:[\w-]+\s+|\([^()]{0,20}\)\s*){0,3}?" + NIC_NOUN + r"\b"
"""A count of adapters with up to three words (or a short aside) between ("8 InfiniBand NICs", "8 x
ConnectX-7", "4 Omni-Path (OPA) links")."""


NUMBERS = SPELLED
"""Counts a note may spell out ("eight 400 Gb/s NICs per node"): the fields' spelled numbers."""
NUMBER_WORDS = r"\b(" + "|".join(NUMBERS) + r")\b"


NOT_COMPUTE = NOT_NETWORK + ("storage", "mgmt", "management", "frontend", "front-end", "bluefield", "ethernet mgmt")
"""Words that put a clause's ports elsewhere than the compute fabric: scale-up links, memory,
storage and management networks ("2x 200G storage")."""


SWITCH_WORDS = r"\bswitch(?:es)?\b|\btor\b|top[- ]of[- ]rack|tomahawk|\bspine\b|\bleaf\b|\bclos\b"
"""Words that name the fabric's switches: a port count or rate after them in their clause is the
switch's ("Broadcom Tomahawk 4 switches (25.6Tbps, 64x400G)", "ToR 400G split to 2x200G"), never
the node's NICs; before them it may be ("8x 400G NICs to NDR switches")."""


def compute_clauses(text: str) -> list[str]:
    """A hardware note's clauses (between "," and ";" outside parentheses, so an aside stays with
    what it describes) that may speak of the compute fabric: not of NVLink, memory, storage or
    management (`NOT_COMPUTE`), and cut where they begin to describe the fabric's switches
    (`SWITCH_WORDS`)."""
    out = []
    for clause in re.split(r"[,;](?![^()]*\))", text):
        if any(word in clause.lower() for word in NOT_COMPUTE):
            continue
        kept = _node_side(clause)
        if kept is not None:
            out.append(kept)
    return out


def _node_side(clause: str) -> str | None:
    """The part of a note's clause that may speak of the node's NICs where it also describes the
    fabric's switches (`SWITCH_WORDS`): the words before the switch where they name an adapter
    ("8x 400G NICs to NDR switches"), else those after it that do ("HDR switches connecting 4x 200G
    HCAs per node"), else none ("64x400G leaf switches": the switch's ports). A clause with no switch
    is kept whole."""
    # an aside that only describes the switches ("400 Gb/s per GPU RoCE (Arista 7800 and Minipack2
    # switches; 3-layer Clos)") leaves the words around it the node's
    clause = re.sub(r"\([^()]*\)", lambda aside: "" if re.search(SWITCH_WORDS, aside.group(0), flags=re.I)
                    and not re.search(RATE + r"|\d+\s*[x×]\s*\d+\s*G", aside.group(0)) else aside.group(0), clause)
    switch = re.search(SWITCH_WORDS, clause, flags=re.I)
    if not switch:
        return clause
    node_words = NIC_NOUN + r"|\b\d+\s*[x×]\s*(?:[a-z][\w-]*\s*)?\d{2,4}\s*g|\bper (?:node|gpu|server)\b|\beach (?:node|gpu|server)\b"
    if re.search(node_words, clause[:switch.start()], flags=re.I):
        return clause[:switch.start()]
    if re.search(r"\b(?:nics?|hcas?|adapters?|connectx-\d+|cx-?\d+)\b", clause[switch.end():], flags=re.I):
        return clause[switch.end():]  # a switch's "ports" after it are its own
    return None


def _stated_port_rate(text: str) -> float | None:
    """Gb/s of one port as a note names it: the first network rate ("400Gb/s", "200G IB"), else an
    InfiniBand generation ("NDR", "NDR400", "HDR 200")."""
    for found in _network_rates(text):
        return rate_gbits(found, 1)
    found = re.search(r"\b(\d{2,4})\s*G\b", ",".join(compute_clauses(text)))  # "8 NICs x 400G"; "80GB" is memory
    if found:
        return float(found.group(1))
    found = re.search(GENERATION, text, flags=re.I)
    return float(GENERATIONS[found.group(1).lower()]) if found else None


PORT_RATES = (25.0, 50.0, 100.0, 200.0, 400.0, 800.0)
"""The Gb/s of network ports (Ethernet and InfiniBand generations): a G figure in parentheses after a
GPU's name is a port only at one of these, else memory ("DGX-A100 (8x40G)")."""


def _short_ports(text: str, per_node: int) -> str | None:
    """A count of ports at a rate written the short way, clause by clause, skipping clauses about
    NVLink, storage or management (`NOT_COMPUTE`): "4 x 200G", "8x400G", "4 x HDR200", "8x NDR400",
    and with the count after, "HDR200 x4", "200G HDR x 4 per node", "ConnectX-6 200G x4"; "per
    GPU" counts each GPU's. A G figure after a GPU's name ("A100 80G x 8", "DGX-A100 (8x40G)") is memory,
    not a port."""
    for clause in compute_clauses(text):
        port = r"(?:(?:edr|hdr|ndr|xdr)\s*(?P<gen>\d{2,4})|(?<![\d.])(?P<g>\d{2,4})\s*G(?![Bb]/?s?\b|B))"
        found = (re.search(r"(?<![\w-])(?P<count>\d+)\s*x\s*(?P<named>(?:(?!" + GPU_MODEL + r")[A-Za-z][\w-]*\s+){0,2})" + port, clause,
                           flags=re.I)  # "4 x 200G", "4x OPA 100G" (not "8x H100 80G")
                 or re.search(port + r"(?:\s*[A-Za-z]+){0,2}?\s*x\s*(?P<count>\d+)\b", clause, flags=re.I))
        if not found:
            continue
        count, rate = int(found.group("count")), float(found.group("gen") or found.group("g"))
        after_gpu = re.search(r"\b(?:[abhv]|gb|mi)\d{3}\w*[\s(\[:,-]*$", clause[:found.start()], flags=re.I)
        if after_gpu and (not re.search(r"[(\[:,-]\s*$", clause[:found.start()]) or rate not in PORT_RATES):
            continue  # "A100 80G x 8", "DGX-A100 (8x40G)": memory; "DGX H100 (8x 400G NDR)" is the ports'

        if re.search(r"\bper\s+gpu\b", clause[found.end():], flags=re.I):
            count *= per_node
        return f"{count} x {rate:g} Gb/s"
    return None


def network_of(hw: dict, per_node: int, gpu: dict, notes: list[str]) -> str:
    """The node's scale-out NICs from the hardware note: "8x200Gb/s HDR IB per node", "one 400 Gb/s
    NIC per GPU", "3.2 Tbps per node", "IB 8x50 GB/s per node" (eight 400 Gb/s NICs: bytes are
    read as bytes), "8x NDR", "NDR 400Gb/s x8", "8 InfiniBand HCAs at 200 Gb/s"; a rate stated
    with no count and no scope ("100 Gbps Ethernet") is each of the catalogue node's NICs, noted;
    with nothing stated, the catalogue node's, noted. A stated rate is never dropped for the
    catalogue's: a node read at 8 x 400 Gb/s when its note says 100 Gb/s would be predicted with
    up to 32x the network it had."""
    text = " ".join(str(hw.get(k) or "") for k in ("note", "network")).replace("×", "x")
    text = re.sub(NUMBER_WORDS, lambda word: str(NUMBERS[word.group(1).lower()]), text, flags=re.I)
    short = _short_ports(text, per_node)
    if short:
        return short
    unscoped = None
    for found in _network_rates(text):
        gbits = rate_gbits(found, 1)
        if found.group(1):  # "8 x 200 Gb/s": a count of NICs, each at the rate
            return f"{int(found.group(1))} x {gbits:g} Gb/s"
        after = re.split(r"[,;]", text[found.end():])[0]  # the rate's own clause
        # a count with its "x" before the rate and the product or fabric between: "8x CX7 400G IB per
        # node", "4x Intel Omni-Path 100 Gb/s", "8x Mellanox HDR 200Gb/s (compute) + 2x HDR storage"
        before = re.search(r"(?<![\w-])(\d+)\s*[x×]\s*(?:[A-Za-z][\w-]*\s+){0,3}$", text[:found.start()])
        if before and not re.search(r"gpus?\b|(?:[abh]|gb)\d{3}", text[before.end(1):found.start()], flags=re.I):
            return f"{int(before.group(1))} x {gbits:g} Gb/s"
        # "NDR 400Gb/s x8", "200Gb/s x8 per node", "400Gb/s InfiniBand x8", "200 Gbps HDR InfiniBand x 4", "(x4)"
        times = re.match(r"(?:\s*\)?\s*[A-Za-z][\w/-]*){0,3}?\s*[()]?\s*x\s*(\d+)\b", after)
        if times:
            return f"{int(times.group(1))} x {gbits:g} Gb/s"
        # a node's total with its links counted after it: "400 Gb/s Omni-Path per node (4 links)"
        links = re.match(r"[^;]*?\bper\s+node\s*\(\s*(\d+)\s*(?:links?|ports?|nics?|hcas?|adapters?|rails?)\s*\)",
                         text[found.end():], flags=re.I)
        if links and int(links.group(1)):
            return f"{int(links.group(1))} x {gbits / int(links.group(1)):g} Gb/s"
        counted_after = re.match(r"[\s),]*(\d+)\s*(?:x\s*)?(?:per\s+node|nics?|hcas?|ports?|adapters?|rails?)\b",
                                 text[found.end():], flags=re.I)  # "HDR (200 Gb/s), 4 per node"
        if counted_after:
            return f"{int(counted_after.group(1))} x {gbits:g} Gb/s"
        scope = re.match(r"([\w\s/-]{0,40}?)\bper\s+(gpu|node)", after, flags=re.I)
        if scope and scope.group(2).lower() == "gpu":
            return f"{per_node} x {gbits:g} Gb/s"
        if scope and re.search(NIC_NOUN, scope.group(1), flags=re.I):  # "eight 400 Gb/s NICs per node"
            # each NIC's rate, counted before it: "8 400 Gb/s NICs", "4 Omni-Path 100 Gbps links"
            count = re.search(r"(?<![\w-])(\d+)\s*(?:[A-Za-z][\w-]*\s+){0,3}$", text[:found.start()])
            nics = int(count.group(1)) if count else gpu["nics"] * per_node // gpu["gpus_per_node"] or 1
            return f"{nics} x {gbits:g} Gb/s"
        # "8 ports of 200 Gb/s per node", "8 HDR links at 200 Gb/s per node": a count of NICs before the rate
        ported = re.search(r"(?<![\w-])(\d+)\s*(?:[A-Za-z][\w-]*\s+){0,2}?" + NIC_NOUN + r"\s+(?:of|at|@)\s*$",
                           text[:found.start()], flags=re.I)
        if scope and ported:
            return f"{int(ported.group(1))} x {gbits:g} Gb/s"
        if scope:
            return f"{per_node} x {gbits / per_node:g} Gb/s"
        if found.group(3) == "T" or re.search(r"\b(?:aggregate|total|combined)\b", after, flags=re.I):
            # "3.2 Tb/s", "0.8 Tb/s aggregate": a node's, over its usual NICs
            nics = gpu["nics"] * per_node // gpu["gpus_per_node"] or 1
            notes.append(f"network {nics} x {gbits / nics:g} Gb/s per node (the note's {gbits:g} Gb/s is the node's, "
                         f"over the {gpu['description']}'s usual {nics} NICs)")
            return f"{nics} x {gbits / nics:g} Gb/s"
        if unscoped is None:
            unscoped = gbits
    counted = re.search(COUNTED_NICS, ",".join(compute_clauses(text)), flags=re.I)
    rate = _stated_port_rate(text)
    if counted and rate:  # "8 InfiniBand NICs at 200Gbps", "8 x ConnectX-7 (400 Gb/s each)"
        if re.match(r"\s*(?:per|for each|to each)\s+gpu\b", text[counted.end():], flags=re.I):
            return f"{int(counted.group(1)) * per_node} x {rate:g} Gb/s"  # "one port per GPU": the node's GPUs'
        return f"{int(counted.group(1))} x {rate:g} Gb/s"
    found = re.search(r"(\d+)\s*x\s*(edr|hdr|ndr|xdr)\b", text, flags=re.I)
    if found:
        return f"{int(found.group(1))} x {GENERATIONS[found.group(2).lower()]} Gb/s"
    nics = gpu["nics"] * per_node // gpu["gpus_per_node"] or 1
    stated = unscoped or (rate if counted is None and re.search(GENERATION, text, flags=re.I) else None)
    if stated and stated > MAX_PORT_GBITS:  # "EFA 3200 Gbps": no port runs that fast, so the node's
        notes.append(f"network {nics} x {stated / nics:g} Gb/s per node (the note's {stated:g} Gb/s is more than "
                     f"one port carries: read as the node's, over the {gpu['description']}'s usual {nics} NICs)")
        return f"{nics} x {stated / nics:g} Gb/s"
    if stated:
        notes.append(f"network {nics} x {stated:g} Gb/s per node (the note states the rate, not how many NICs: "
                     f"the {gpu['description']}'s usual node has {nics})")
        return f"{nics} x {stated:g} Gb/s"
    nic = gpu["nic_bandwidth"] * 8 / 1e9
    notes.append(f"network {nics} x {nic:g} Gb/s per node (unstated: the {gpu['description']}'s usual node)")
    return f"{nics} x {nic:g} Gb/s"


# ---------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True)
class Dims:
    """The model's shapes as the FLOP conventions need them."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    seq: int
    swiglu: bool
    tied: bool
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    learned_positions: bool = False
    params_b: float | None = None
    mtp: int = 0
    kv_lora: int = 0
    """Multi-head latent attention's KV latent (0: not MLA); then `head_dim` is the query/key part
    without RoPE, as Megatron-Core's `qk_head_dim`."""
    q_lora: int = 0
    """MLA's query latent (0: the queries projected from the hidden state directly)."""
    rope_dim: int = 0
    """MLA's decoupled RoPE dims per head (`qk_pos_emb_head_dim`)."""
    v_dim: int = 0
    """MLA's value head dim."""

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0

    @property
    def q(self) -> int:
        return self.heads * self.head_dim

    @property
    def core_width(self) -> float:
        """The width PaLM-style counts (`12 L H Q T`) give the attention core, `heads x head_dim`,
        generalised to MLA's unequal query/key and value widths: the mean of the two products'
        inner widths, `heads (head_dim + rope_dim + v_dim) / 2`."""
        if not self.kv_lora:
            return self.q
        return self.heads * (self.head_dim + self.rope_dim + self.v_dim) / 2

    def attention_params(self) -> int:
        """Weights of one layer's attention products: Q, K, V and the output (GQA), or MLA's down and
        up projections, the keys' shared RoPE part and the output."""
        if not self.kv_lora:
            return self.hidden * (2 * self.q + 2 * self.kv_heads * self.head_dim)
        h, qk = self.hidden, self.heads * (self.head_dim + self.rope_dim)
        queries = self.q_lora * (h + qk) if self.q_lora else h * qk
        keys_values = self.kv_lora * (h + self.heads * (self.head_dim + self.v_dim)) + h * self.rope_dim
        return queries + keys_values + self.heads * self.v_dim * h

    def ffn_params(self, width: int) -> int:
        return (3 if self.swiglu else 2) * self.hidden * width

    def active_ffn_params_total(self) -> int:
        """FFN weights one token passes through, summed over the layers."""
        dense = (self.layers - self.moe_layers) * self.ffn_params(self.ffn)
        routed = self.moe_layers * (self.top_k + self.shared_experts) * self.ffn_params(self.expert_ffn)
        router = self.moe_layers * self.hidden * self.experts
        return dense + routed + router

    def matmul_params(self) -> int:
        """Weights in matrix products per token: attention, active FFN, the output layer."""
        return self.layers * self.attention_params() + self.active_ffn_params_total() + self.vocab * self.hidden

    def total_params(self) -> int:
        """Every weight (all experts, both embeddings unless tied, learned positions)."""
        dense = (self.layers - self.moe_layers) * self.ffn_params(self.ffn)
        experts = self.moe_layers * ((self.experts + self.shared_experts) * self.ffn_params(self.expert_ffn)
                                     + self.hidden * self.experts)
        embed = self.vocab * self.hidden * (1 if self.tied else 2)
        positions = self.seq * self.hidden if self.learned_positions else 0
        return self.layers * (self.attention_params() + 4 * self.hidden) + dense + experts + embed + positions


MLA_RANKS = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64}
"""Multi-head latent attention's widths where a row names MLA without them: DeepSeek-V2's and
DeepSeek-V3's (V2 section 2.1.2 and V3 section 4.2: KV latent 512, query latent 1,536, 64
decoupled RoPE dims per head), which later MLA models (Kimi K2) keep; the value head dim is the
row's head dim, as in both."""

MLA_HEAD_DIM = 128
"""The head dim of an MLA row that states none: DeepSeek-V2's and V3's (128 without RoPE, values of
128), not hidden / heads (56 for DeepSeek-V3)."""

MLA_WORDS = {"kv_lora_rank": r"kv[ _-]?lora(?:[ _-]?rank)?\s*(\d+)", "q_lora_rank": r"\bq[ _-]?lora(?:[ _-]?rank)?\s*(\d+)",
             "qk_rope_head_dim": r"(\d+)\s*rope dims|rope[ _-]?head[ _-]?dim\s*(\d+)"}
"""How an `arch` note states MLA's widths ("q LoRA 1536, kv LoRA 512, ... + 64 RoPE dims")."""


def latent_from_words(arch: str, head_dim: int, notes: list[str]) -> dict:
    """MLA's widths from a row whose `arch` names it: those the note states, else `MLA_RANKS`."""
    out, assumed = {}, []
    for key, pattern in MLA_WORDS.items():
        found = re.search(pattern, arch)
        value = next((int(g) for g in found.groups() if g), None) if found else None
        if value is None:
            value = MLA_RANKS[key]
            assumed.append(f"{key} {value}")
        out[key] = value
    out["v_head_dim"] = head_dim
    notes.append("multi-head latent attention (stated) with " + ", ".join(f"{k} {v}" for k, v in out.items())
                 + (f" ({', '.join(assumed)} unstated: DeepSeek-V2/V3's)" if assumed else " (as the note states them)"))
    return out


def mtp_from_words(arch: str, notes: list[str]) -> int:
    """Multi-token prediction modules a row's `arch` names ("multi-token prediction depth 1"):
    the depth stated, else 1 (DeepSeek-V3's, the one published runs use)."""
    arch = arch.replace("multi-token-prediction", "multi-token prediction")
    if not affirms(arch, r"multi-token prediction|\bmtp\b"):
        return 0  # none named, or denied ("no MTP", "without multi-token prediction", "MTP not used")
    found = (re.search(r"(?:multi-token prediction|mtp)[^,;.]*?(?:depth|layers?|modules?)\s*(?:of\s*)?(\d+)", arch)
             or re.search(r"(?:multi-token prediction|mtp)\s*\(\s*d\s*=\s*(\d+)", arch)
             or re.search(r"\b(\d+|one|two) (?:mtp|multi-token prediction) (?:modules?|layers?|depth)", arch))
    depth = int(NUMBERS.get(found.group(1), found.group(1))) if found else 1
    notes.append(f"multi-token prediction (stated): {depth} module{'s' if depth > 1 else ''}"
                 + ("" if found else " (depth unstated: DeepSeek-V3's 1)"))
    return depth


def width_of(raw, name: str, hidden: int) -> int | None:
    """An FFN width as a row writes it: a number ("14336", "14336 (SwiGLU)", "16K"), or a multiple
    of the hidden size ("4h", "4 x hidden", "4*h", "2.6875 d_model"), or a product ("4 x 12288"),
    whichever explicit number beside it wins ("4h (49152)", "4h = 49152"). Never the multiplier
    alone: "4h" read as 4 would predict a model without its FFN."""
    if not isinstance(raw, str):
        return _int(raw, name, binary=True)
    text = raw.replace("×", "x").replace(",", "")
    stated = re.search(r"(?:=|\()\s*(\d{3,})\b", text)
    if stated:
        return int(stated.group(1))
    product = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[x*]\s*(\d{3,})\s*", text)
    if product:
        return round(float(product.group(1)) * int(product.group(2)))
    multiple = re.match(r"\s*(\d+(?:\.\d+)?)\s*[x*]?\s*(?:h|hidden(?:[ _]size)?|d[ _]?model|d)\b", text, flags=re.I)
    if multiple:
        return round(float(multiple.group(1)) * hidden)
    return _int(raw, name, binary=True)


NAMED_MODELS = (
    (r"\bopt\b", {"vocab": 50272}, "OPT's GPT-2 BPE with its special tokens (Zhang et al. 2022; its configs' vocab_size)"),
    (r"\bgpt[- ]?(?:2|3)\b|\bgpt3\b|megatron[- ]turing|\bmt-nlg\b", {"vocab": 50257},
     "GPT-2's byte-pair encoding, which GPT-3 kept (Brown et al. 2020, Section 2.1)"),
    (r"\bmpt\b|gpt-?neox|pythia", {"vocab": 50432}, "the GPT-NeoX tokenizer padded to 50,432 (MPT's and GPT-NeoX-20B's configs)"),
    (r"\bbloom\b", {"vocab": 250880}, "BLOOM's tokenizer, padded (BigScience 2022)"),
    (r"llama[- ]?3|llama3", {"vocab": 128256}, "Llama 3's tiktoken-based tokenizer (Dubey et al. 2024)"),
    (r"llama[- ]?4|llama4", {"vocab": 202048}, "Llama 4's tokenizer (its configs' vocab_size, 202,048)"),
    (r"llama[- ]?2|llama2|\bllama(?![- ]?\d(?:\.\d)?(?!\d))\b", {"vocab": 32000},
     "Llama and Llama 2's SentencePiece tokenizer (Touvron et al. 2023)"),
    (r"mixtral[- ]?8x22b", {"vocab": 32768}, "Mixtral 8x22B's tokenizer (its model card: 32,768)"),
    (r"mistral[- ]?nemo", {"vocab": 131072}, "Mistral NeMo's Tekken tokenizer (131,072)"),
    (r"mixtral|mistral", {"vocab": 32000}, "Mistral's and Mixtral 8x7B's SentencePiece tokenizer"),
    (r"nemotron-?4|nemotron(?![- ]?h\b)", {"vocab": 256000}, "Nemotron-4's SentencePiece tokenizer (Parmar et al. 2024)"),
    (r"qwen[- ]?3", {"vocab": 151936}, "Qwen3's tokenizer (its configs' vocab_size)"),
    (r"qwen[- ]?2", {"vocab": 152064}, "Qwen2's and Qwen2.5's tokenizer as their larger models' configs pad it (152,064)"),
    (r"deepseek[- ]?(?:v3|r1)", {"vocab": 129280}, "DeepSeek-V3's tokenizer (DeepSeek-AI 2024)"),
    (r"deepseek[- ]?v2", {"vocab": 102400}, "DeepSeek-V2's tokenizer (DeepSeek-AI 2024)"),
    (r"gpt[- ]?oss", {"vocab": 201088, "window": 128, "full_attention_every": 2, "expert_bias": True,
                      "activation_clamp": 7.0, "yarn_factor": 32.0},
     "gpt-oss's published config (openai/gpt-oss-120b and -20b config.json: vocab_size 201,088, sliding_window "
     "128 on alternate layer_types, rope_scaling yarn factor 32, swiglu_limit 7.0; the experts' MLPs carry "
     "biases, OpenAI's gpt-oss model card, 2025)"),
    (r"falcon", {"vocab": 65024}, "Falcon's tokenizer (Almazrouei et al. 2023)"),
)
"""Facts of a model a row names but may leave unsaid, with their source: its tokenizer's
vocabulary (the logits are a few per cent of a large model's FLOPs, so a row without `vocab` reads
with it rather than not at all), and gpt-oss's architecture beyond the shared schema (the
alternating 128-token sliding window, the experts' linear biases, the GLU input clamped at 7.0,
YaRN at factor 32). The first pattern the model's name matches decides (`named_model`). Facts of the
model, never fitted; a row that states a fact keeps its own."""


LIKENESS = r"\W{0,2}(?:style|like|architecture|arch|based|inspired|compatible|family)\b"
"""Words after a model's name that make it another model's likeness ("Llama-style 7B", "OPT-like",
"DeepSeek-V3 architecture"): not that model."""


def likeness_after(name: str, end: int) -> bool:
    """Whether the words after a model's name ending at `end` make it a likeness (`LIKENESS`)."""
    return re.match(r"[\w.-]*" + LIKENESS, name[end:]) is not None


def named_model(model: dict) -> tuple[dict, str] | None:
    """The `NAMED_MODELS` facts and their source for the model a row's `name` names (its `arch`
    describes a model, and often names another to compare), or None: never a name followed by
    `LIKENESS` or denied ("custom 7B (not Llama)")."""
    name = _words(model.get("name"))
    for pattern, facts, source in NAMED_MODELS:
        found = next((m for m in re.finditer(pattern, name)
                      if not likeness_after(name, m.end()) and not denied(name, m)
                      and not set_aside(name, m)), None)
        if found:
            return facts, source
    return None


def tokenizer_vocab(m: dict, notes: list[str]) -> int | None:
    """The vocabulary of the tokenizer a row's model name names (`NAMED_MODELS`),
    noted as an assumption; None where it names none parc knows."""
    named = named_model(m)
    if named is None or "vocab" not in named[0]:
        return None
    notes.append(f"vocab {named[0]['vocab']:,} (unstated: {named[1]})")
    return named[0]["vocab"]


STATE_SPACE_NAMES = r"nemotron[- ]?h\b|\bjamba\b|\bzamba\w*|\bsamba\b|\bmamba\w*"
"""Model families built of state-space (Mamba) layers, by name: Nemotron-H, Jamba, Zamba, Samba, Mamba."""

STATE_SPACE_LAYERS = (r"hybrid\b[^.;\n]{0,40}?(?:mamba|ssms?\b|state[- ]space)"
                      r"|\b(?:\d+|some|half)\s+(?:of\s+the\s+)?(?:mamba\w*|ssms?)\s*(?:layers?|blocks?|mixers?)?"
                      r"|(?:mamba\w*|ssms?|state[- ]space)[- ](?:layers?|blocks?|mixers?)"
                      r"|(?:mamba\w*|ssms?|state[- ]space(?: layers)?)\s*(?:and|\+|/|with)\s*(?:attention|attn)"
                      r"|(?:mamba\w*|ssms?|state[- ]space)[- ](?:\w+[- ])?hybrid"
                      r"|state[- ]space[^.;\n]{0,20}?(?:layers?|blocks?|mixers?)")
"""Words that give a model state-space layers: "hybrid Mamba2/attention", "54 Mamba layers", "SSMs and
attention"."""

STATE_SPACE_ELSEWHERE = r"baseline|\bstud(?:y|ies)\b|\bvs\b|versus|compar\w*|separate row|variant|\bunlike\b"
"""Words by which a clause names state-space models only beside the row's transformer ("the Transformer
baseline of the Mamba-2 study", "attention only (vs. Jamba)")."""


def state_space_hybrid(m: dict) -> bool:
    """Whether the row's model has state-space (Mamba) layers: its name names such a family (not a
    likeness, `LIKENESS`), or its words give it such layers in a clause that does not name them only
    as another model's (`STATE_SPACE_ELSEWHERE`)."""
    name = _words(m.get("name"))
    for found in re.finditer(STATE_SPACE_NAMES, name):
        if not likeness_after(name, found.end()) and not re.search(STATE_SPACE_ELSEWHERE, name):
            return True
    words = _words(m.get("arch"), m.get("extra"))
    for clause in clauses(words):
        if re.search(STATE_SPACE_ELSEWHERE, clause):
            continue
        if any(not denied(clause, found) for found in re.finditer(STATE_SPACE_LAYERS, clause)):
            return True
    return False


def model_block(m: dict, notes: list[str]) -> tuple[str, Dims]:
    """The spec's `model { ... }` block, and the shapes the FLOP conventions read."""
    if placeholder(m.get("vocab")):  # "null (not verified)", "n/a": unstated, as an empty field
        m = dict(m, vocab=tokenizer_vocab(m, notes))
    missing = [k for k in ("layers", "hidden", "heads", "vocab", "seq_len") if m.get(k) is None]
    if missing:
        raise Unusable("the model's " + ", ".join(f"`{k}`" for k in missing) + " not published")
    # widths written with a multiplier are powers of two ("8K" hidden is 8,192)
    layers, h, heads = _int(m["layers"], "layers"), _int(m["hidden"], "hidden", binary=True), _int(m["heads"], "heads")
    vocab, seq = _int(m["vocab"], "vocab"), _int(m["seq_len"], "seq_len", binary=True)
    zero = [k for k, v in (("layers", layers), ("hidden", h), ("heads", heads), ("vocab", vocab), ("seq_len", seq))
            if v == 0]
    if zero:
        raise Unusable("the model's " + ", ".join(f"`{k}`" for k in zero) + " is 0")
    arch = _words(m.get("arch"), m.get("name"))
    if state_space_hybrid(m):
        raise Unusable("a hybrid of state-space (Mamba) and attention layers: parc models transformer layers only "
                       "(read as a transformer of all its layers, its prediction would be another model's)")
    arch = re.sub(r"swish[- ]gated linear unit|swish-glu|silu-gated", "swiglu", arch)
    arch = re.sub(r"gated gelu|gelu-gated linear unit", "geglu", arch)
    arch = re.sub(r"\brms[- ]norm(?:ali[sz]ation)?\b", "rmsnorm", arch)
    arch = re.sub(r"rotary (?:position(?:al)? )?embeddings?", "rope", arch)
    llama_like = affirms(arch, r"llama|swiglu|mixtral|mistral|qwen|deepseek|nemotron-h|gemma|rmsnorm|rope|silu|glu")
    plain = affirms(arch, r"gelu(?!-)|\brelu") and not affirms(arch, r"geglu")  # GELU, (squared) ReLU: 2 matrices
    swiglu = affirms(arch, r"swiglu|geglu|silu") or (llama_like and not plain)
    kv_lora = _int(m.get("kv_lora_rank"), "kv_lora_rank")
    named_mla = not kv_lora and bool(re.search(r"\bmla\b", arch) or "latent attention" in arch)
    raw_kv = m.get("kv_heads")
    # "MHA": every head its own key and value; "GQA-8", "8 (GQA)": the number
    grouped = re.search(r"(\d+)\s*(?:kv[ _-]?heads?|groups?|query groups?)\b(?!\s*size)", raw_kv, flags=re.I) \
        if isinstance(raw_kv, str) else None  # "GQA (8 groups)", "GQA, 8 KV heads"
    sized = re.search(r"group[ _-]?size\s*[=:]?\s*(\d+)|heads?\s+per\s+(?:kv\s+)?group\s*[=:]?\s*(\d+)",
                      raw_kv, flags=re.I) if isinstance(raw_kv, str) else None  # "GQA group size 4": heads / 4
    if sized and not grouped:
        size = int(sized.group(1) or sized.group(2))
        if not size or heads % size:
            raise Unusable(f"`kv_heads` {raw_kv!r}: {heads} heads do not split into groups of {size}")
        raw_kv = heads // size
    if isinstance(raw_kv, str) and not grouped:
        # "GQA (8)", "8 (GQA)": the count; "MHA (96)", "none (MHA)", "n/a (MLA)": every head its own
        counted = re.fullmatch(r"\s*(?:gqa|mqa)?\W*(\d+)\W*(?:gqa|mqa|kv[ _-]?heads?)?\W*", raw_kv, flags=re.I)
        if re.search(r"\b(?:mha|multi[- ]head(?: attention)?|mla)\b", raw_kv, flags=re.I) and not re.search(
                r"\b(?:gqa|mqa|group)", re.sub(r"\b(?:no|not|without)\s+(?:gqa|mqa)\b", "", raw_kv, flags=re.I), flags=re.I):
            raw_kv = "MHA"
        elif counted:
            raw_kv = int(counted.group(1))
        elif re.fullmatch(r"\s*(?:mqa|multi[- ]query(?: attention)?)\s*", raw_kv, flags=re.I):
            raw_kv = 1
    kv = (heads if isinstance(raw_kv, str) and re.fullmatch(r"\s*(?:mha|multi[- ]head(?: attention)?)\s*", raw_kv,
                                                            flags=re.I)
          else int(grouped.group(1)) if grouped else _int(raw_kv, "kv_heads"))
    if (kv_lora or named_mla) and kv not in (None, heads):
        # MLA's shared latent is sometimes written as one kv head: its heads' keys and values are their own
        notes.append(f"kv_heads {kv} read as {heads}: multi-head latent attention gives every head its own "
                     "key and value (from the shared latent)")
        kv = heads
    if kv is None:
        kv = heads
        notes.append("kv-heads = heads (no grouped-query attention stated)")
    head_dim = _int(m.get("head_dim"), "head_dim")
    if head_dim is None and (kv_lora or named_mla):
        head_dim = MLA_HEAD_DIM
        notes.append(f"head_dim {MLA_HEAD_DIM} (unstated: DeepSeek-V2/V3's query/key part without RoPE, "
                     "and their value head dim)")
    if head_dim is None:
        if h % heads:
            raise Unusable(f"hidden {h} is not a multiple of {heads} heads and no head_dim is published")
        head_dim = h // heads
    latent = latent_from_words(arch, head_dim, notes) if named_mla else {}
    experts = _int(m.get("experts"), "experts") or 0
    top_k = _int(m.get("top_k"), "top_k") or 0
    if experts and not top_k:
        raise Unusable("a mixture-of-experts model without its top-k (experts per token)")
    ffn = width_of(m.get("ffn"), "ffn", h)
    expert_ffn = width_of(m.get("moe_ffn"), "moe_ffn", h)
    if experts and expert_ffn is None:
        expert_ffn = ffn
    if ffn is None and experts and expert_ffn:
        ffn = expert_ffn
    if ffn is None:
        if swiglu:
            ffn = 256 * math.ceil(int(2 * 4 * h / 3) / 256)
            notes.append(f"ffn {ffn} (unstated: 8h/3 rounded up to 256, the Llama rule)")
        else:
            ffn = 4 * h
            notes.append("ffn 4h (Megatron-LM's default `ffn_hidden_size`)")
    if experts and not expert_ffn:
        raise Unusable("a mixture-of-experts model without an expert FFN size")
    shared = _int(m.get("shared_experts"), "shared_experts") or 0
    dense_layers = _int(m.get("dense_layers"), "dense_layers") or 0
    if experts and dense_layers >= layers:
        raise Unusable(f"{dense_layers} dense layers of {layers}: no layer is a mixture of experts")
    alibi = "alibi" in arch
    learned = not llama_like and not alibi and not affirms(arch, r"rope|rotary")
    untied = affirms(arch, r"untied|tie[-_ ]word[-_ ]embeddings\W{1,3}false") or bool(
        re.search(r"(?:\bno|\bnot|\bwithout)[^.;,]{0,12}\btied\b|\btied\b[^.;,]{0,12}\bnot\b|embeddings not tied", arch))
    stated_tied = not untied and affirms(arch, r"(?<!un)\btied\b|tie[-_ ]word[-_ ]embeddings\W{1,3}true|weight tying"
                                               r"|shared input/output embedding|embedding weights tied")
    tied = False if untied else True if stated_tied else not llama_like
    # multi-head latent attention: head_dim is then the query/key part without RoPE; the widths a
    # spec leaves out take the compiler's defaults (`resolve`: RoPE 64 dims, the value head_dim)
    ranks_of = {}
    if kv_lora or latent:
        stated = {key: _int(m.get(key), key) for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                                                          "v_head_dim")}
        ranks_of = {key: stated[key] or latent.get(key) for key in stated if stated[key] or latent.get(key)}
    dims = Dims(layers=layers, hidden=h, ffn=ffn, heads=heads, kv_heads=kv, head_dim=head_dim, vocab=vocab,
                seq=seq, swiglu=swiglu, tied=tied, experts=experts, top_k=top_k, expert_ffn=expert_ffn or 0,
                shared_experts=shared, dense_layers=dense_layers, learned_positions=learned,
                params_b=m.get("params_b") if isinstance(m.get("params_b"), (int, float)) else None,
                mtp=_int(m.get("mtp_layers"), "mtp_layers") or mtp_from_words(arch, notes),
                kv_lora=ranks_of.get("kv_lora_rank", 0), q_lora=ranks_of.get("q_lora_rank", 0),
                rope_dim=ranks_of.get("qk_rope_head_dim", 64) if ranks_of else 0,
                v_dim=ranks_of.get("v_head_dim", head_dim) if ranks_of else 0)
    fields = [f"layers {layers}, hidden {h}, ffn {ffn}, heads {heads}, kv-heads {kv}, vocab {vocab}"]
    if head_dim * heads != h:
        fields.append(f"head-dim {head_dim}")
    if ranks_of:
        fields[0] = fields[0].replace(f", kv-heads {kv}", "")
        fields.append(", ".join(f"{name} {ranks_of[key]}" for key, name in (
            ("kv_lora_rank", "kv-lora-rank"), ("q_lora_rank", "q-lora-rank"), ("qk_rope_head_dim", "rope-head-dim"),
            ("v_head_dim", "v-head-dim")) if key in ranks_of))
    # a norm the row names decides ("DeepNorm Post-LN", "LayerNorm" beside RoPE: Nemotron-4, GLM-130B)
    layer_norm = not affirms(arch, r"rmsnorm") and affirms(arch, r"(?<!qk[- ])(?<!qk)layer[- ]?norm|deepnorm")
    fields.append(f"activation {'swiglu' if swiglu else 'gelu'}, norm {'rmsnorm' if llama_like and not layer_norm else 'layernorm'}, "
                  f"position {'learned' if learned else 'none' if alibi else 'rope'}, "
                  f"tied-embeddings {'on' if tied else 'off'}")
    if experts:
        layers_rule = f"from {dense_layers}" if dense_layers else "all"
        fields.append(f"experts {experts}, top-k {top_k}, expert-ffn {expert_ffn}, shared-experts {shared}, "
                      f"moe-layers {layers_rule}")
        factor = m.get("capacity_factor")
        if isinstance(factor, (int, float)) and factor > 0:
            fields.append(f"capacity-factor {factor}")
    if dims.mtp:  # multi-token prediction modules (Megatron-Core's mtp_num_layers)
        fields.append(f"mtp {dims.mtp}")
    window = 0 if unused(m.get("window")) else _int(m.get("window"), "window")  # "none": no window
    if window:  # optional: the keys a token sees, itself included (HF sliding_window; Megatron (W-1, 0))
        every = _int(m.get("full_attention_every"), "full_attention_every")
        fields.append(f"window {window}" + (f", full-attention-every {every}" if every else ""))
    return "model {\n  " + "\n  ".join(fields) + "\n}", dims


# ---------------------------------------------------------------------------------------------
# FLOP conventions (conventions.md), transcribed independently of parc's FLOP counter.
# Each gives FLOPs per sequence; "hardware" variants count recomputation where the source does.


def narayanan_hfu(d: Dims) -> float:
    """Narayanan et al. 2021, Eq. 3: fwd + bwd + full-recompute forward, non-causal attention."""
    s, L, h, V = d.seq, d.layers, d.hidden, d.vocab
    return 96 * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def korthikanti_model(d: Dims) -> float:
    """Korthikanti et al. 2022, Eq. 7 (model FLOPs, no recomputation, non-causal)."""
    s, L, h, V = d.seq, d.layers, d.hidden, d.vocab
    return 72 * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L))


def korthikanti_selective_hardware(d: Dims) -> float:
    """Korthikanti et al. 2022, Eq. 8: selective recomputation adds the attention scores again."""
    s, L, h, V = d.seq, d.layers, d.hidden, d.vocab
    return 72 * L * s * h * h * (1 + s / (3 * h) + V / (12 * h * L))


def megatron_core(d: Dims, causal: bool) -> float:
    """Megatron-Core `num_floating_point_operations` (megatron/training/training.py,
    `transformer_flops`): non-causal (`s/h`) up to 2025-03-06, causal (`s/2h`) after; dense and
    MoE layers each with their own FFN term. Multi-head latent attention by its own terms (the
    query latent's projections `q_lora (h + heads (d + r) + 1)`, the KV latent's
    `kv_lora (h + heads (d + v) + 1) + h r`, the output `heads v h`; the core
    `heads (d + r) / 2 + heads v / 2` per token pair); each multi-token-prediction module is one
    more layer (of the last layer's kind) plus its projection and norms `3h + 2h^2` and one more
    output layer."""
    s, h = d.seq, d.hidden
    layers = d.layers + d.mtp
    moe = d.moe_layers + (d.mtp if d.moe_layers else 0)  # the MTP layer is the last layer's kind
    gate = 3 if d.swiglu else 2
    mlp = 6 * h * gate * ((layers - moe) * d.ffn + moe * (d.top_k + d.shared_experts) * d.expert_ffn)
    half = 2 if causal else 1
    if d.kv_lora:
        qk = d.heads * (d.head_dim + d.rope_dim)
        queries = d.q_lora * (h + qk + 1) if d.q_lora else h * qk
        linear = 6 * (queries + d.kv_lora * (h + d.heads * (d.head_dim + d.v_dim) + 1) + h * d.rope_dim
                      + d.heads * d.v_dim * h)
        core = 6 * (qk + d.heads * d.v_dim) / half
    else:
        kv = d.kv_heads * d.head_dim
        linear = 6 * (h * (d.q + 2 * kv) + d.q * h)
        core = 12 * d.q / half
    extra = 6 * d.mtp * (3 * h + 2 * h * h) + 6 * h * d.vocab * (d.mtp + 1)
    return s * (mlp + layers * linear + extra) + s * s * core * layers


def nemo_noncausal(d: Dims) -> float:
    """NeMo / DGX Cloud READMEs: `s (attn + mlp + 6 V h)`, GPT and Llama forms, non-causal."""
    s, L, h = d.seq, d.layers, d.hidden
    if d.swiglu:
        attn = 12 * L * h * h * (1 + d.kv_heads / d.heads + s / h)
        widths = (L - d.moe_layers) * d.ffn + d.moe_layers * (d.top_k + d.shared_experts) * d.expert_ffn
        mlp = 18 * widths * h
    else:
        attn = 24 * L * h * h + 12 * L * h * s
        mlp = 48 * L * h * h
    return s * (attn + mlp + 6 * d.vocab * h)


def torchtitan_flops(d: Dims) -> float:
    """torchtitan: `6 N_non-embedding + 12 l heads head_dim s` per token (non-causal)."""
    return d.seq * (6 * d.matmul_params() + 12 * d.layers * d.core_width * d.seq)


def llm_foundry_mfu(d: Dims) -> float:
    """llm-foundry's MFU (scripts/train/benchmarking/README.md): `3 (2 N s + 4 l h s^2)` per
    sequence, N every parameter the model has (embedding and learned positions too), attention
    counted over the full square (non-causal)."""
    return d.seq * (6 * d.total_params() + 12 * d.layers * d.hidden * d.seq)


def palm_flops(d: Dims) -> float:
    """PaLM, Appendix B (Llama 3's and MegaScale's MFU): `6 N + 12 L H Q T` per token, no
    rematerialisation; N the weights in matrix products (the embedding lookup is not one)."""
    return d.seq * (6 * d.matmul_params() + 12 * d.layers * d.core_width * d.seq)


def bloom_flops(d: Dims) -> float:
    """Megatron-DeepSpeed's throughput for BLOOM: about 8 N per token (4 x 2: the recompute
    forward counted, attention's s^2 term ignored), N the published parameter count."""
    n = d.params_b * 1e9 if d.params_b else d.total_params()
    return d.seq * 8 * n


@dataclass(frozen=True)
class Convention:
    label: str
    model: object
    """Dims -> FLOPs per sequence in the convention's own counting."""
    hardware: object = None
    """Dims -> FLOPs per sequence with recomputation, where the source defines it (HFU)."""
    utilisation: str = "mfu"
    """What the convention's own "% of peak" means: "mfu" or "hfu"."""


CONVENTIONS: dict[str, Convention] = {
    "narayanan_hfu": Convention("HFU (Narayanan)", narayanan_hfu, narayanan_hfu, "hfu"),
    "korthikanti_mfu_hfu": Convention("MFU (Korthikanti)", korthikanti_model, korthikanti_selective_hardware),
    "megatron_core_model_flops": Convention("MFU (Megatron-Core)", lambda d: megatron_core(d, causal=False)),
    "bridge_causal": Convention("MFU (Megatron-Bridge, causal)", lambda d: megatron_core(d, causal=True)),
    "nemo_dgxc_noncausal": Convention("MFU (NeMo DGXC)", nemo_noncausal),
    "torchtitan": Convention("MFU (torchtitan)", torchtitan_flops),
    "palm_mfu": Convention("MFU (PaLM)", palm_flops),
    "llm_foundry_mfu": Convention("MFU (llm-foundry)", llm_foundry_mfu),
    "megascale_mfu": Convention("MFU (PaLM, MegaScale)", palm_flops),
    "bloom_hfu_4x": Convention("HFU (8N, BLOOM)", bloom_flops, bloom_flops, "hfu"),
}
STEP_ONLY = Convention("step time (no FLOP convention)", palm_flops)
"""For rows whose convention is unknown but whose step time or tokens per second is published:
any FLOP count gives the same ratio of predicted to reported, so PaLM's serves as the unit."""


CONVENTION_ALIASES = {
    "megatron_core": "megatron_core_model_flops", "megatron_core_model_flop": "megatron_core_model_flops",
    "megatron_core_mfu": "megatron_core_model_flops", "megatron_core_model_flops_mfu": "megatron_core_model_flops",
    "nemo_dgxc_non_causal": "nemo_dgxc_noncausal", "nemo_non_causal": "nemo_dgxc_noncausal",
    "megatron_bridge_causal": "bridge_causal", "megatron_bridge": "bridge_causal", "bridge": "bridge_causal",
    "llm_foundry": "llm_foundry_mfu", "palm": "palm_mfu", "megascale": "megascale_mfu",
}
"""Other spellings of a convention's key (`convention_key` folds case, hyphens and spaces first)."""


CONVENTION_WORDS = (
    (r"megascale", "megascale_mfu"), (r"narayanan", "narayanan_hfu"), (r"korthikanti", "korthikanti_mfu_hfu"),
    (r"torchtitan", "torchtitan"), (r"llm_?foundry", "llm_foundry_mfu"), (r"bloom|\b8_?n\b", "bloom_hfu_4x"),
    (r"dgxc|dgx_cloud", "nemo_dgxc_noncausal"), (r"bridge|megatron_core\w*(?<!non)_causal\b", "bridge_causal"),
    (r"megatron_core", "megatron_core_model_flops"), (r"palm", "palm_mfu"), (r"nanotron", "palm_mfu"),
)
"""A convention named in other words ("MFU (PaLM)", "torchtitan's MFU", "Narayanan et al. 2021 HFU",
"Megatron-Core model FLOPs, causal"): the first source or counting its words name, in this order
(MegaScale counts as PaLM does but is its own row family). nanotron's `get_flops`
(src/nanotron/models/llama.py) is PaLM's count: 3 x the forward's matrix products, the
projections (grouped-query aware), the MLP's and the LM head's, plus the attention's two s x s
products over the whole square, 6 N + 12 l H s per token with no recomputation."""


def convention_key(value) -> str:
    """A row's `flop_convention` as `CONVENTIONS` keys it: lower case, words joined by "_"
    ("Megatron-Core model FLOPs" is `megatron_core_model_flops`), aliases resolved, else a
    convention's label ("MFU (NeMo DGXC)") or the words that name one (`CONVENTION_WORDS`)."""
    if placeholder(value):
        return "unspecified"
    key = re.sub(r"[^a-z0-9]+", "_", str(value).strip().lower()).strip("_")
    key = CONVENTION_ALIASES.get(key, key)
    if key in CONVENTIONS:
        return key
    labels = {re.sub(r"[^a-z0-9]+", "_", c.label.lower()).strip("_"): k for k, c in CONVENTIONS.items()}
    if key in labels:
        return labels[key]
    return next((k for words, k in CONVENTION_WORDS if re.search(words, key)), key)


def convention_of(entry: dict) -> tuple[str, Convention]:
    key = convention_key(entry.get("flop_convention"))
    if key == "megatron_core_model_flops" and _megatron_causal(entry):
        return key, Convention("MFU (Megatron-Core, causal)", lambda d: megatron_core(d, causal=True))
    if key in CONVENTIONS:
        return key, CONVENTIONS[key]
    return key, STEP_ONLY


BEFORE_CAUSAL_COUNT = (r"\bpytorch\W{0,3}v?2\.[0-5](?:\.\d+)?\b|\b(?:nemo|pytorch|ngc|nvcr)\W{0,3}(?:container\W{0,3})?(?:2[34])\.\d\d\b"
                       r"|\b(?:mcore|megatron[- ]core)\W{0,3}v?0\.(?:[0-9]|1[01])\b")
"""Software a row names that predates Megatron-Core's causal count (2025-03-06): PyTorch 2.5 or
older (NGC's 25.01 container moved to 2.6), an NGC or NeMo container of 2023-2024, Megatron-Core
v0.11 or older (core_r0.12.0 is the first release with it). A paper of 2025 that ran on such
software reports its utilisation in the non-causal count (MoE Parallel Folding, arXiv 2504.14960:
"PyTorch 2.5.0, CUDA 12.6")."""


def _megatron_causal(entry: dict) -> bool:
    """Megatron-Core counted attention causally from 2025-03-06 (commit 8873b55d6a): the
    ModelZoo and Bridge tables, and any source dated 2025 or later."""
    text = source_text(entry)
    year = source_year(entry)
    if re.search(r"non[- ]?causal", text) or re.search(BEFORE_CAUSAL_COUNT, text):
        return False
    return "causal" in text or "modelzoo" in text.replace(" ", "") or "bridge" in text \
        or (year is not None and year >= 2025)


# ---------------------------------------------------------------------------------------------
# Reported figure


def _key(name) -> str:
    """A reported figure's key as `reported_tflops` looks it up: lower case, letters, digits and %."""
    return re.sub(r"[^a-z0-9%]", "", str(name).lower())


MULTIPLIER_WORDS = {"million": "m", "billion": "b", "thousand": "k"}


def figure(value, seconds: bool = False) -> float | None:
    """A figure as a row writes it: a number as it stands, or the first number of a string,
    whatever surrounds it ("41.2% MFU", "MFU 41.2 %", "430 (TFLOP/s/GPU)", "~400 TFLOP/s", "96 GB"),
    with its multiplier ("1.2M tokens/s", "1.007k", "1.2 million": decimal, as throughputs are
    written); in a field of seconds, "12300 ms" is 12.3. None for no number (a boolean, nothing),
    or a range ("400-450"), which is no figure."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value)
    found = re.search(r"(?<![\w.])[~≈]?\s*(\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*"
                      r"([KMBkmb](?![A-Za-z])|million\b|billion\b|thousand\b)?", text)
    if not found or re.match(r"\s*(?:[-–]|to\b)\s*\d|\s*[x×]\s*10\b", text[found.end():]):  # a range, "3.2 × 10^6"
        return None
    letter = (found.group(2) or "").lower()
    value = float(found.group(1).replace(",", "")) * DECIMAL_SCALE[MULTIPLIER_WORDS.get(letter, letter)]
    if seconds and re.match(r"\s*ms\b", text[found.end():]):
        value /= 1000
    elif seconds and re.match(r"\s*min(?:utes?)?\b", text[found.end():]):  # "2.5 min"
        value *= 60
    return value


def figure_kind(name, value) -> str | None:
    """What a reported figure measures, from the words of its key and of its value's unit, for a
    key the explicit lists of `reported_tflops` do not hold ("TFLOPs/s/GPU", "achieved_tflops",
    "TGS", "throughput: 4312 tokens/s/GPU", "tokens_per_s_per_node", "train_step_timing",
    "elapsed_time_per_iteration_ms", "samples/s", "model FLOPs utilization (%)"): "tflops",
    "mfu", "hfu", "aggregate", "tokens_gpu", "tokens_node", "tokens", "samples", "step",
    "step_ms", "step_rate", "pct", "gpu_hours", or None. A count of tokens or samples without a
    time ("tokens_per_batch: 16M") is no throughput."""
    key = str(name).lower().replace("_", " ")
    words = (key + " " + (value if isinstance(value, str) else "")).lower().replace("_", " ")
    if re.search(r"\bmfu\b|model flops? util", words):
        return "mfu"
    if re.search(r"\bhfu\b|hardware flops? util", words):
        return "hfu"
    if re.search(r"pflop|petaflop", words) and re.search(r"aggregate|total|cluster|all gpus", words):
        return "aggregate"
    if re.search(r"(?:percent|%|pct)\W*(?:of\W*)?(?:theoretical\W*|the\W*)?peak", words):
        return "pct"
    if re.search(r"gpu[ -]?h(?:ou)?rs?\b", words) and re.search(r"trillion|\b1 ?t\b|\bt tokens", words):
        return "gpu_hours"
    if re.search(r"tflop", words) and not re.search(r"aggregate|total|cluster", words):
        return "tflops"
    rate = re.search(r"/ ?s(?:ec)?\b|per ?s(?:ec(?:ond)?)?\b|\b(?:t|w|tok)ps\b|throughput|\btgs\b|\bwps\b|a second", words)
    # torchtitan's "TPS" (tokens per second; "tps_gpu", "TPS/GPU") and fairseq's "wps" count tokens
    if re.search(r"token|\btoks?\b|\btgs\b|\btps\b|\bwps\b", words) and "hour" not in words and rate:
        # torchtitan's "tps" is per device (its metrics divide the rank's tokens by the step's time)
        if re.search(r"per[ -]?(?:gpu|device|chip|accelerator|rank)\b|/ ?(?:gpu|device|chip|rank)\b|\btgs\b|gpu per s"
                     r"|\b(?:tps|wps)\W*(?:gpu|device|chip|rank)\b", words) \
                or (re.search(r"\btps\b", words) and not re.search(r"total|\bjob\b|cluster|aggregate|all gpus", words)):
            return "tokens_gpu"
        if re.search(r"per[ -]?(?:\d+[- ]gpu |dgx |gpu )?(?:node|server|host)\b|/ ?node\b|\bnode(?:'s)? (?:throughput|tokens)",
                     words):
            return "tokens_node"
        return "tokens"
    if re.search(r"sample|\bseq(?:uence)?s? ?(?:/|per) ?s", words) and rate:
        return "samples"
    if re.search(r"(?:steps?|iter\w*|\bit)\s*(?:/|per)\s*(?:s\b|sec)", words):
        return "step_rate"  # "iterations per second", "train_steps_per_second", "it/s"
    if re.search(r"step|iter|\bit\b", words) and re.search(r"time|timing|second|\bsec\b|duration|elapsed|\bs\b|\bms\b",
                                                             words):
        # a key in milliseconds whose value carries no unit of its own ("... (ms)": "12,910")
        in_ms = re.search(r"\bms\b|millisecond", key) and not (
            isinstance(value, str) and re.search(r"\d\s*(?:ms|s|sec\w*|min\w*)\b", value))
        return "step_ms" if in_ms else "step"
    return None


def outcomes_as_rates(out: dict) -> dict:
    """A row's reported figures with those written over more than one step or per other units put
    as the keys `reported_tflops` reads: a time per N steps as one step's ("time_per_100_steps_s":
    3783 is 37.83 s a step), days per trillion tokens as the job's tokens per second, tokens per
    GPU-hour as tokens per second per GPU, a job's total with the per-GPU figure beside it ("26,240
    tokens/s total (410 per GPU)") as that per-GPU figure. Other figures are kept as written."""
    rates: dict = {}
    for name, raw in out.items():
        words = (str(name) + " " + (raw if isinstance(raw, str) else "")).lower().replace("_", " ")
        key = str(name).lower().replace("_", " ")
        steps = re.search(r"\b(?:per|for|every)\s+(\d+)\s*(?:steps?|iter\w*)\b", key)  # the key names the span
        if steps and int(steps.group(1)) > 1 and "token" not in key and re.search(r"time|duration|elapsed|\bs\b|sec", key):
            value = figure(raw, seconds=True)
            if value:
                rates.setdefault("step_time_s", value / int(steps.group(1)))
                continue
        if re.search(r"\bdays?\b", words) and not re.search(r"gpu[ -]?days?", words) and re.search(
                r"(?:per|/)\s*(?:1\s*)?(?:trillion|1\s*t\b|t\b)\s*tokens?", words):
            value = figure(raw)
            if value:
                rates.setdefault("tokens_per_s", 1e12 / (value * 86400))
                continue
        if re.search(r"tokens?\s*(?:per|/)\s*gpu[ -]?h(?:ou)?r", words):
            value = figure(raw)
            if value:
                rates.setdefault("tokens_per_s_per_gpu", value / 3600)
                continue
        aside = isinstance(raw, str) and re.search(r"\btotal\b|\bjob\b|\bcluster\b|all gpus", raw.lower()) and re.search(
            r"\(\s*(?:~\s*)?(\d[\d,]*(?:\.\d+)?)\s*(?:tokens?/s\s*)?(?:per|/)\s*(?:gpu|device)\b[^)]*\)", raw, flags=re.I)
        if aside and re.search(r"token", words):
            rates.setdefault("tokens_per_s_per_gpu", float(aside.group(1).replace(",", "")))
            continue
        rates.setdefault(name, raw)
    return rates


IMPLAUSIBLE_SHARE = 0.01
"""A tokens-per-second figure whose words say neither per GPU nor the job's total is the job's
total, unless that reading would put each GPU under this share of its dense peak in the row's own
FLOP count while the per-GPU reading stays within the peak: then it is per GPU (torchtitan's
"Median tokens/s" is its per-device `tps`). The other way too: a figure said to be per GPU that
would run each GPU above its dense peak is the job's, where that reading is above this share.
The slowest published runs the repository holds run at about 5 % (nanotron's 1.34B on 512 GPUs);
an aggregate read as per GPU would be gpus times too fast, over the peak for all but the smallest
jobs."""


def reported_tflops(out: dict, conv: Convention, key: str, per_seq: Dims, batch: int, gpus: int,
                    peak: float, recompute: str, per_node: int = 0) -> tuple[float, str]:
    """TFLOP/s per GPU in the row's convention, and which published number it came from."""
    out = outcomes_as_rates(out)
    model = conv.model(per_seq) * batch
    hardware = conv.hardware(per_seq) * batch if conv.hardware else None
    per_token = model / (batch * per_seq.seq)  # FLOPs per token in the convention's count
    # what the run measured (its step time, tokens or sequences per second: no FLOP count enters the
    # ratio of predicted to reported) before what a convention derived from it (TFLOP/s, MFU, HFU),
    # which moves the error wherever the source's count differs from the convention as implemented
    if conv is STEP_ONLY:
        order = ("step", "tokens")
    else:
        order = ("step", "tokens", "tflops", "mfu", "pct", "hfu", "aggregate")

    keyed = {_key(k): v for k, v in out.items()}  # "MFU (%)", "TFLOP/s/GPU", "tokens/s/GPU" as their keys

    def usable(raw, seconds: bool) -> float | None:
        v = figure(raw, seconds=seconds)  # YAML 1.1 reads "3.0e6" as a string; rows write "52%", "~400 TFLOP/s"
        return v if v is not None and math.isfinite(v) and v > 0 else None

    def listed(*names, seconds: bool = False, kinds: tuple[str, ...] = ()) -> float | None:
        """The first of the listed keys the row holds, as a figure."""
        return next((v for n in names if (v := usable(out[n] if n in out else keyed.get(_key(n)), seconds))), None)

    def worded(*names, seconds: bool = False, kinds: tuple[str, ...] = ()) -> float | None:
        """The first key no list holds whose words say it measures one of `kinds` (`figure_kind`)."""
        return next((v for n, raw in out.items() if figure_kind(n, raw) in kinds and (v := usable(raw, seconds))), None)

    def first(number) -> tuple[float, str] | None:
        """The first figure `number` finds, kind by kind in `order`, as TFLOP/s per GPU in the
        convention's count, with where it came from; None if none."""
        for kind in order:
            if kind == "tflops":
                v = number("tflops_per_gpu", "model_tflops_per_gpu", "achieved_tflops_per_gpu", "tflops", "model_tflops",
                           "tflops_gpu", "tflop_s_per_gpu", "tflops_per_gpu_model", "tflop/s/gpu", "model_tflop/s/gpu",
                           kinds=("tflops",))
                if v:
                    return v, "reported TFLOP/s"
            elif kind == "mfu":
                v = number("mfu_pct", "mfu", "mfu_percent", "MFU", "mfu_%", "mfu (%)", kinds=("mfu",))
                if v:
                    return (v if v > 1 else 100 * v) / 100 * peak, "reported MFU"
            elif kind == "pct":
                v = number("pct_of_peak", kinds=("pct",))
                if v:
                    return v / 100 * peak, "reported % of peak"
            elif kind == "hfu" and hardware:
                v = number("hfu_pct", "hfu", "hfu_percent", "HFU", kinds=("hfu",))
                if v and (recompute == "selective" or conv.utilisation == "hfu"):
                    return (v if v > 1 else 100 * v) / 100 * peak * model / hardware, "reported HFU"
            elif kind == "step":
                v = number("step_time_s", "iteration_time_s", "step_s", "iteration_s", "step_time", "time_per_step_s",
                           "iteration_time", "seconds_per_step", "step_time (s)", seconds=True, kinds=("step",))
                ms = number("step_time_ms", "iteration_time_ms", kinds=("step_ms",))
                rate = number("steps_per_s", "iterations_per_s", kinds=("step_rate",))
                if v or ms or rate:
                    return model / ((v or (ms / 1000 if ms else 1 / rate)) * gpus) / 1e12, "reported step time"
            elif kind == "tokens":
                v = number("tokens_per_s_per_gpu", "tokens_per_sec_per_gpu", "tokens_per_gpu_per_s",
                           "tokens_per_second_per_gpu", "tokens_per_gpu_per_second", "tokens/s/gpu", "tok/s/gpu",
                           kinds=("tokens_gpu",))
                if v:
                    per_gpu = per_token * v / 1e12
                    if gpus > 1 and per_gpu > peak and IMPLAUSIBLE_SHARE * peak <= per_gpu / gpus:
                        return per_gpu / gpus, (f"reported tokens/s, the job's (per GPU, each would run at "
                                                f"{per_gpu / peak:.2g}x its dense peak)")
                    return per_gpu, "reported tokens/s per GPU"
                v = number(kinds=("tokens_node",)) if per_node else None
                if v:
                    return per_token * v / per_node / 1e12, "reported tokens/s per node"
                v = number("tokens_per_s", "tokens_per_sec", "throughput_tokens_per_s", "tokens_per_second", kinds=("tokens",))
                if v:
                    per_gpu = per_token * v / 1e12
                    if gpus > 1 and per_gpu / gpus < IMPLAUSIBLE_SHARE * peak and per_gpu <= peak:
                        return per_gpu, (f"reported tokens/s, per GPU (as the job's total, each GPU would run at "
                                         f"{100 * per_gpu / gpus / peak:.2g} % of its peak)")
                    return per_gpu / gpus, "reported tokens/s"
                v = number("gpu_hours_per_trillion_tokens", "gpu_hours_per_1t_tokens", "gpu_hours_per_1t",
                           "h800_gpu_hours_per_trillion_tokens", kinds=("gpu_hours",))
                if v:  # DeepSeek-V3's report: "each trillion tokens requires 180K H800 GPU hours"
                    return per_token * 1e12 / (v * 3600) / 1e12, "reported GPU hours per trillion tokens"
                v = number("samples_per_s", "sequences_per_s", "samples_per_sec", kinds=("samples",))
                if v:
                    return model / batch * v / gpus / 1e12, "reported sequences/s"
            elif kind == "aggregate":
                v = number("aggregate_pflops", kinds=("aggregate",))
                if v:
                    return v * 1000 / gpus, "reported aggregate PFLOP/s"
        return None

    def either(*names, seconds: bool = False, kinds: tuple[str, ...] = ()) -> float | None:
        """A listed key, else one read by its words, of the same kind: a step time under a key no
        list holds ("s/iter") still comes before a listed TFLOP/s or MFU."""
        return listed(*names, seconds=seconds, kinds=kinds) or (worded(seconds=seconds, kinds=kinds) if kinds else None)

    found = first(either)
    if found:
        return found
    raise Unusable(f"no throughput reported that the FLOP convention `{key}` can be compared on")


# ---------------------------------------------------------------------------------------------
# The runtime facts a spec cannot state


MEGATRON_WORDS = r"megatron|\bnemo(?!tron)|megascale|nvidia/|nvidia-nemo|nvcr\.io/nvidia|dgx[ -]?cloud|dgxc"
"""The words that name the Megatron family as a row's runtime: Megatron-LM, -Core, -Bridge,
-DeepSpeed, NeMo (not Nemotron, a model), MegaScale (a Megatron-LM fork), NVIDIA's repositories
and containers (`NVIDIA/Megatron-LM`, `NVIDIA-NeMo/...`, `nvcr.io/nvidia/nemo`) and DGX Cloud's
benchmarks. NVIDIA's name alone, or an NVLink "bridge", names a GPU, not a runtime."""
NEMO_WORDS = r"\bnemo(?!tron)|megatron[- _]bridge|nvidia-nemo"
"""The words that name NeMo or Megatron-Bridge (whose recipes turn on Megatron-Core's distributed
optimizer) as a row's runtime; not Nemotron, a model, nor an NVLink "bridge"."""
DEEPSPEED_WORDS = r"deepspeed"
"""The words that name DeepSpeed, here Megatron-DeepSpeed (a row of the Megatron family that names
it: BLOOM's, MT-NLG's, GLM-130B's)."""
MEGATRON_DEEPSPEED_ASYNC_FROM = 2023
"""The first year whose Megatron-DeepSpeed rows are read with Megatron-LM's asynchronous
input-gradient all-reduce. The fork's `megatron/mpu/layers.py` (bigscience-workshop's at b1359ee,
microsoft's at 1619965) all-reduces the input gradient in `copy_to_tensor_model_parallel_region`'s
backward, before the weight-gradient GEMM, with nothing beside it; microsoft/Megatron-DeepSpeed
took Megatron-Core's `tensor_parallel` layers, which overlap it, when it merged upstream
Megatron-LM (9e72d571, 2023-07-04)."""
BIGSCIENCE_WORDS = r"\bbig[- ]?science\b"
"""The words that name BigScience, whose own Megatron-DeepSpeed fork (bigscience-workshop/Megatron-DeepSpeed)
ran its trainings (BLOOM's tr11 and the benchmarks before it). That fork never took either of the
two later kernels, whatever a row's year: at its head (8387ae17, 2023-12-07) `megatron/mpu/layers.py`
all-reduces the column-parallel input gradient synchronously (no `async_op` in the file's history)
and `megatron/model/transformer.py` computes attention unfused (`baddbmm`, then
`FusedScaleMaskSoftmax`; no FlashAttention anywhere under `megatron/`)."""
TORCH_NATIVE_WORDS = r"\bolmo[- _]?core\b"
"""Training programs built on torch's own parallelism as torchtitan is, whose runs are predicted
as `target torchtitan` runs them: Ai2's OLMo-core (allenai/OLMo-core, src/olmo_core/nn/transformer:
FSDP2's `fully_shard` on each block, `block.py`; `torch.compile` on each block and the LM head,
`model.py`; flash-attn's FlashAttention-2 through `nn/attention`; HSDP over a
`dp_replicate` x `dp_shard` device mesh, `distributed/parallel`): the same runtime facts as
torchtitan's (per-block FSDP2, compiled blocks, FlashAttention-2 kernels)."""
TORCH_FSDP_WORDS = r"llm[- _]?foundry|composer|\btorch fsdp|\bfms[- _]fsdp\b|torch\.distributed\.fsdp|fullyshardeddataparallel"
"""Sources whose runs are eager PyTorch with torch's FSDP and flash-attn's FlashAttention-2
(MosaicML's llm-foundry through Composer; IBM's fms-fsdp, torch's `FullyShardedDataParallel` by its
module or class name): the runtime facts of `target torch`, parc's own job. "PyTorch FSDP" alone
also describes in-house stacks built on it (Meta's for Llama 3), which are not named so."""


SET_OFF = (r"""[ \t"')\]]*(?:(?:[:=]|\bis\b|\bwas\b)?[ \t"'(\[]*(?:false|off|none|no|0|disabled)\b"""
           r"""|[:=][ \t"'(\[]*not\b)""")
"""What follows an option set off as a row may write it: "tp_comm_overlap: False",
"moe_a2a_overlap=false", "ub_tp_comm_overlap false", `"overlap": "false"`, "(False)", a field
written off in words ("torch.compile: not mentioned in the doc", "DeepEP: not used"); on its own
line, never the next field's ("... padded to capacity" above a recompute field's "none")."""

DENIED_BEFORE = re.compile(r"(?:\bno|\bnot|\bnon|\bnever|\bneither|\bnor|\bwithout|\bw/o|\bdisabled?|\bpre(?!-?train)|\bpredates?"
                           r"|\bbefore|\bunlike|\bexcept|\binstead of)[\s-]+(?:[\w.'-]+(?:\s+|\s*/\s*)){0,2}$")
"""A denial in the words just before a mention, within its clause: "no DeepEP", "without
torch.compile", "did not use FlashAttention", "pre-FlashAttention", "no DeepEP/HybridEP" (not
"pre-training with ...")."""

OTHER_RUNS = (r"\b(?:the|these|those)\b(?:[^.;,()\n]|(?<=\d)\.(?=\d)){0,30}?\b(?:rows|configs|configurations|versions|releases"
              r"|recipes|tables|columns|containers|(?:\d[\w.,-]*|gpu) runs)\b|\b(?:other|later|earlier|newer|older|larger|smaller"
              r"|companion|another|second|third|previous|prior|next|follow-up|future)\b(?:[^.;,()\n]|(?<=\d)\.(?=\d)){0,30}?"
              r"\b(?:rows?|runs?|configs?|configurations|versions?|releases?|recipes?|tables?|columns?|containers?|figures?"
              r"|experiments?)\b|\b(?:the )?same table\s*[:,]")
"""A clause that names other rows, runs or releases ("the 8B runs use Async TP", "later Megatron versions
use FlashAttention", "the 25.02 rows reduce gradients in bf16", "the previous release used ...",
"same table: FSDP + torch.compile 6,667"): what it names is theirs, unless the clause says it of
this run too (`SELF`)."""

SELF = (r"\b(?:this|our|the same)(?: [\w.-]+)? (?:run|job|row|one|configuration|config|recipe|table|release|experiment)s?\b"
        r"|\bhere\b"
        r"|\bthese runs\b|\bwe (?:use|used|run|ran|enable|enabled)\b")
"""Words by which a sentence speaks of the row's own run ("this run enables ...", "(enabled here)",
"the runs in this table use ..."): a fact it names is the row's, whatever else the sentence compares."""

SELF_DENIED = (r"\b(?:this|our)(?: [\w.-]+){0,2} (?:run|job|row|one)\b[^.;\n]{0,20}?\b(?:does not|did not|doesn't|didn't|not"
               r"|leaves it off|has it off|keeps it off)\b"
               r"|\bnot (?:in )?(?:this|our) (?:run|job|row|one)\b|\bnot here\b")
"""Words that say the row's own run lacks what the sentence names ("this one does not", "(not this run)")."""

SET_ASIDE_AFTER = re.compile(
    r"^\)?(?:[\w-]+\s+){0,2}?\W{0,3}(?:(?:is|are|was|were)\s+)?(?:recommended|suggested|advised|the fallback"
    r"|the next optimi[sz]ation)\b"
    r"|^[^.;\n]{0,60}?\(\s*not (?:in )?this (?:run|row|one)\s*\)"
    r"|^(?:\([^)]*\)|[^.;,()\n]|(?<=\d)\.(?=\d)){0,60}?\b(?:used (?:only )?by the (?:larger|smaller|other)|used only (?:by|in)"
    r"|in a later release|the default in (?:newer|later) releases|(?:is|are) separate|in (?:a|the) (?:separate|other)"
    r" (?:table|column|row))\b|^[^.;,()\n]{0,40}?\b(?:rows?|column|table) (?:is|are) separate\b"
    r"|^\W{0,3}(?:would|could|might|should|can|will)\b|^[\w-]*\s+(?:rows?|column|table)\b"
    r"|^[^.\n]{0,60}?;\s*this(?: [\w.-]+){0,2} (?:one|run|row) (?:(?:does not|did not|doesn't)\s*(?:[.;)\n]|$)"
    r"|leaves it off|has it off|keeps it off)")
"""Words after a mention that set it aside: a recommendation ("AsyncTP is recommended for H100"), a
possibility ("X would speed this up", "X can be enabled"), another run's ("... is used by the larger
configs only", "... are in the other column", "the 8B row"), a later release's, or this run's lack
of it elliptically ("the 8B runs use X; this one does not")."""

HEDGED_BEFORE = re.compile(r"\b(?:recommend(?:s|ed)?|suggest(?:s|ed)?|advis(?:es|ed)|if|whether|planned|future|would|could|should)\b")
"""A mention its clause only recommends or supposes ("the README recommends --use-distributed-
optimizer", "if FP8 attention were enabled"): what a source advises is not what the run did."""

LEFT_OPEN_WORDS = r"not (?:stated|specified|confirmed|known|given|published)|unstated|unconfirmed|unknown"
"""Words that leave what they follow open: "current scaling not stated", "DeepEP (unconfirmed)"."""
LEFT_OPEN_AFTER = re.compile(r"[^.;,()\n]{0,70}?\b(?:are|is|were|was) (?:" + LEFT_OPEN_WORDS + r")\b|\W{0,3}(?:"
                             + LEFT_OPEN_WORDS + r")\b")
"""A clause that names settings to say they are not stated ("Recompute, distributed optimizer and
comm-overlap settings for the benchmarked run are not stated"): none of them is read."""
LEFT_OPEN = r"\b(?:" + LEFT_OPEN_WORDS + r")\b"

DENIED_AFTER = re.compile(r"^(?:\s*\(\s*(?=not\b|un|dis|off\b|no\b|left\b|(?:released|published|came|was|were|is|are)\b)|(?:\s*\([^)]*\))?)"
                          r"(?:(?!\b(?:on|enabled|used|and|but|though|while)\b)[^.;,()\n]){0,30}?\b(?:(?:was|were|is|are)"
                          r" not|not (?:used|set|enabled|on|applied|available)|not yet available|disabled|turned off"
                          r"|switched off|(?:was|were|is|are) off|left off|unused|unavailable|unsupported|did not exist"
                          r"|didn't exist|would not|(?:was )?(?:published|released) later|came (?:in )?(?:a )?later|postdates|"
                          + LEFT_OPEN_WORDS + r")\b")
"""A denial in the words just after a mention, within its clause and before anything affirms it:
"FP8 dispatch was not used", "overlap_moe_expert_parallel_comm was disabled", "DeepEP (not used)";
and a mention its clause leaves open ("current scaling not stated", "DeepEP (unconfirmed)"), which
states nothing either (not "X is on here even though SP is not")."""


HOLDS_ITS_VALUE = r"\b\B"
"""The `set_off` of `affirms` for a pattern that holds its own value (`NVTE_FUSED_ATTN=0`,
"fp8-param-gather: false"): nothing after it can set it off, so this never matches."""


NO_EFFECT_AFTER = (r"[^.;()\n]{0,40}?,?\s*but (?:that|it|this|which) (?:has|had|have) no effect"
                   r"|[^.;,()\n]{0,40}?\b(?:is|was|are|were) ignored\b"
                   r"|\s*(?:[\w-]+\s+)?(?:(?:is|was|are|were|but|and)\s+)?(?:\w+\s+)?sets?\s+(?:it\s+|them\s+)?to\s+['\"]?"
                   r"(?:false|off|0|none|disabled)\b|\s*(?:[\w-]+\s+){0,2}?(?:(?:is|was|are|were)\s+)?set to ['\"]?"
                   r"(?:false|off|0|none)\b"
                   r"|\s*(?:\([^)]*)?\)?\s*,\s*which (?:is|was|are|were) not\b")
"""A setting named only to say it does nothing: "the library also stores
moe_flex_dispatcher_backend='deepep', but that has no effect unless the dispatcher is 'flex'"."""


def denied(text: str, found: re.Match, set_off: str = SET_OFF) -> bool:
    """Whether a denial in its own clause takes the mention `found` back: before it ("no DeepEP",
    "without fp8 dispatch", "predates FlashAttention": `DENIED_BEFORE`; a command line's flags are
    each their own clause) or after it ("DeepEP not used", "fp8 dispatch: off": `set_off`,
    `DENIED_AFTER`). A mention only set aside (`set_aside`) is not denied: it states nothing."""
    before = words_before(text, found.start())
    after = text[found.end():found.end() + 120]  # room for an aside before the denial (`DENIED_AFTER`)
    if DENIED_BEFORE.search(before) or re.match(set_off, after) or DENIED_AFTER.match(after) \
            or re.match(NO_EFFECT_AFTER, after):
        return True
    # a mention inside an aside glosses what the words before it name, and shares its denial: "FP8
    # attention (fp8_dot_product_attention / fp8_multi_head_attention) is not set"
    opened = text.rfind("(", max(0, found.start() - 80), found.start())
    closed = text.find(")", found.end(), found.end() + 80) if opened >= 0 and ")" not in text[opened:found.start()] else -1
    if closed < 0:
        return False
    glossed = text[max(0, opened - 40):opened]  # "FP8 attention is not set (fp8_dot_product_attention)"
    return bool(DENIED_AFTER.match(text[closed + 1:closed + 61]) or re.match(NO_EFFECT_AFTER, text[closed:closed + 61])
                or re.match(NO_EFFECT_AFTER, text[closed + 1:closed + 61])
                or re.search(r"\b(?:is|was|are|were) not (?:set|used|enabled|on)\s*$|\b(?:disabled|off)\s*$", glossed))


def clause_of(text: str, found: re.Match) -> tuple[str, str]:
    """The words of the mention `found`'s sentence before it, and of its clause before it (split at
    commas, semicolons and parentheses; a mention inside parentheses takes the words before them)."""
    sentence = clauses(text[max(0, found.start() - 120):found.start()], at="")[-1]
    parts = re.split(r"[;,()]", sentence)
    clause = parts[-1]
    if not clause.strip() and len(parts) > 1 and sentence.rstrip().endswith("("):
        clause = parts[-2]  # "the NeMo 2 rows (bf16 gradient reduction)": the words the parenthesis glosses
    return sentence, clause


def set_aside(text: str, found: re.Match) -> bool:
    """Whether the mention `found` states nothing of the row's own run: recommended or supposed
    (`HEDGED_BEFORE` in its clause, `SET_ASIDE_AFTER`), named for other rows, runs or releases
    (`OTHER_RUNS` or "unlike" in its clause), compared with (`COMPARED` before it in its clause), or
    left open (`LEFT_OPEN_AFTER`); never where its sentence speaks of this run (`SELF`) without
    saying it lacks it (`SELF_DENIED`). Unlike a denial, which states the fact off."""
    sentence, clause = clause_of(text, found)
    after = re.sub(r"^\w+", "", text[found.end():found.end() + 120])  # from the end of the mention's word
    after_clause = re.match(r"(?:\s*\([^)]*\))?(?:[^,;.()\n]|(?<=\d)\.(?=\d))*", after).group(0)  # its clause, an aside after it
    whole = sentence + text[found.start():found.end()] + clauses(after, at="")[0]
    if re.search(SELF, clause + " " + after_clause) and not re.search(SELF_DENIED, whole):
        return False
    hedges = list(HEDGED_BEFORE.finditer(sentence))  # "recommends A, B and C": the list is recommended, up to a verb
    hedged = bool(hedges) and not re.search(r"\b(?:is|are|was|were|uses?|used|enables?|enabled|runs?|ran|sets?|turns?)\b|;",
                                            re.sub(r"--[\w-]*", " ", sentence[hedges[-1].end():]))
    return bool(hedged or re.search(r"\bunlike\b", clause) or re.search(OTHER_RUNS, clause)
                or re.search(COMPARED_BEFORE, clause) or SET_ASIDE_AFTER.match(after)
                or re.search(OTHER_RUNS, re.sub(r"\([^)]*\)", " ", after_clause)) or LEFT_OPEN_AFTER.match(after[:100]))


def affirms(text: str, pattern: str, set_off: str = SET_OFF) -> bool:
    """Whether `text` (lower-cased; in `software_of`'s `compact`, `_` written `-`) states what
    `pattern` names: some mention of it that no denial takes back (`denied`) and that is the row's
    own (`set_aside`). One denied mention does not cancel another ("FlashAttention-2 (not
    FlashAttention-1)" states FlashAttention); a config pasted into a note
    ("moe_router_force_load_balancing: False") names an option to set it off."""
    return any(not denied(text, found, set_off) and not set_aside(text, found) for found in re.finditer(pattern, text))


def denies(text: str, pattern: str, set_off: str = SET_OFF) -> bool:
    """Whether `text` states what `pattern` names off: some mention of it denied (`denied`), none
    affirmed; a mention only set aside states neither ("later Megatron versions use FlashAttention")."""
    return not affirms(text, pattern, set_off) and any(denied(text, found, set_off) for found in re.finditer(pattern, text))


def dp_overlap_denied(compact: str, options: dict) -> bool:
    """Whether the row states that its gradients' reduction does not overlap the backward
    (`Software.dp_overlap` off): Megatron's `overlap_grad_reduce` set false or denied
    ("--overlap-grad-reduce not set", "no --overlap-grad-reduce"), or in words ("gradient reduction
    not overlapped with the backward")."""
    if options.get("overlap_grad_reduce") is not None:
        return not options["overlap_grad_reduce"]
    return bool(re.search(r"grad\w*[- ](?:reduction|reduce|all-?reduce|reduce-scatter)\w*[^.;\n]{0,10}?\bnot overlapped", compact))


def fsdp_version(family: str, text: str) -> str:
    """Whose copies the data-parallel runtime makes around its collectives (`Software.dp_copies`),
    from what the row's source states: torchtitan runs FSDP2; Composer (llm-foundry) wraps torch's
    FSDP1 (its flat parameters), as does a source that names FSDP1; one that names FSDP2 or
    `fully_shard` runs FSDP2. Otherwise, and outside the torch families, none is charged."""
    if family == "torchtitan" or affirms(uncompared(text), r"\bfsdp[- ]?v?2\b(?!-way)|fully[-_ ]shard\b"):
        return "fsdp2"
    if family == "torch" and affirms(uncompared(text), r"\bfsdp[- ]?v?1\b|composer|llm[- _]?foundry"):
        return "fsdp1"
    return "none"


def yarn_concentration(model: dict) -> float:
    """The factor YaRN multiplies RoPE's sine and cosine by, from the model's stated `yarn_factor`
    and optional `yarn_mscale`, `yarn_mscale_all_dim`, as Megatron-Core computes it
    (`_yarn_get_concentration_factor`, megatron/core/models/common/embeddings/
    yarn_rotary_pos_embedding.py at Megatron-LM 23265d2): 0.1 m ln(s) + 1 for a factor s > 1 (m = 1
    unless both mscales are given, then their ratio of such terms); 1 without YaRN."""
    factor = model.get("yarn_factor")
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 1:
        return 1.0

    def mscale(m: float) -> float:
        return 0.1 * m * math.log(factor) + 1.0

    m, m_all = model.get("yarn_mscale"), model.get("yarn_mscale_all_dim")
    if m is None or m_all is None:
        return mscale(1.0)
    return mscale(float(m)) / mscale(float(m_all))


DEEPEP_MECHANISM = (r"(?:\bib\b|infiniband|rdma)[^.;\n]{0,60}?\bnvlink\b[^.;\n]{0,40}?\bforward"
                    r"|(?:\bib\b|infiniband|rdma)[^.;\n]{0,60}?\bforward\w*[^.;\n]{0,30}?\bnvlink\b"
                    r"|forward\w*[^.;\n]{0,40}?\bnvlink\b[^.;\n]{0,60}?(?:\bib\b|infiniband|rdma)")
"""DeepEP's dispatch described by what it does, as DeepSeek-V3's report describes it before the
library had its name: each token sent once per destination node over InfiniBand (RDMA), then
forwarded over NVLink to its GPUs ("IB sends, then NVLink forwarding", "send it to each node over IB
and forward it over NVLink")."""

FLASH_WORDS = r"(?<!nvte[-_])flash[- _]?attn|flash[- _]?attention|\bfa[23]\b|io-aware\b[^.;]{0,20}?attention|\bflash\b(?! storage| memory| drive)"
"""A fused attention kernel named: FlashAttention (-2, -3, flash-attn), "FA2", Dao et al.'s
IO-aware attention, or "flash" where it does not name a storage medium."""

TE_FLASH_ATTN = (r"nvte[_-]fused[_-]attn[\"']?\s*[:= ]\s*[\"']?0\b|nvte[_-]fused[_-]attn (?:disabled|off)"
                 r"|\bte\b[^.;]{0,20}?flash-?attn (?:rather than|instead of|over) cudnn|flash-?attn backend in (?:te|transformer engine)"
                 r"|attention[_ -]backend[\s:=\"']+(?:attnbackend\.)?"
                 r"(?:flash\b|flash-?attn|flashattention)"
                 r"|(?:cudnn|fused) (?:fused )?attention (?:was |is )?(?:disabled|off|turned off)")
"""Transformer Engine told to run flash-attn's FlashAttention-2 instead of cuDNN's fused kernel:
`NVTE_FUSED_ATTN=0` (or `: 0`, quoted) in a launch script, Megatron-Core's `--attention-backend
flash` (`AttnBackend.flash`), or cuDNN's fused attention said to be off."""

ASYNC_TP = r"async(?:hronous)?[- ]?(?:tp|tensor[- ]parall\w*)|enable-async-tensor-parallel|micro-?pipelined? tp"
"""torch's asynchronous tensor parallelism (torchtitan's `enable_async_tensor_parallel`)."""

NO_OPTIMIZATIONS = r"\boptimi[sz]ations?\b[\s\"':=|/]{0,4}none\b"
"""A row's own cell of the optimizations it ran, written empty: torchtitan's performance tables put
"None" beside "Float8" and "Float8 + Async TP" (docs/performance.md at 3faaa1a0de, Llama 3.1 405B on
128 H100), so async TP named in the config the row quotes (`enable_async_tensor_parallel = true`,
which the optimized rows ran) is not the row's."""

TP_OVERLAP = (r"tp[- ]comm[- ]overlap|\btp(?:/sp)? (?:communication |comm )?(?:is )?overlap\w*|tensor[- ]parallel(?:ism)? "
              r"(?:communication |comm )?overlap|tensor[- ]parallel communication overlapped|userbuffers?|comm-gemm overlap"
              r"|\bub overlap|overlapp\w* tensor[- ]parallel (?:all-gathers?|collectives|communication)")
"""Transformer Engine's userbuffers overlap of the tensor-parallel collectives with their GEMMs
(Megatron-Core's `--tp-comm-overlap`, NeMo's `ub_tp_comm_overlap`), however written."""

BF16_REDUCTION = (r"(?:bf16|bfloat16) grad\w*[- ](?:all-?)?reduc|grad\w* (?:are |is |were )?(?:all-?)?reduc[\w-]* (?:in|as|with) bf16"
                  r"|grad\w* (?:communicated|sync\w*) in bf16|bf16 grad\w* (?:communication|sync\w*)"
                  r"|(?:reduce-scatter|all-?reduce) of grad\w* in bf16"
                  r"|bf16 reduce\b|grad\w*[- ]reduc\w*[- ](?:in[- ])?(?:bf16|bfloat16)\b|no fp32 grad\w*[- ]reduc"
                  r"|mixed[-_ ]precision[\s\"':=]+pure\b|reduc\w*[^.;\n]{0,30}?dtypes?\b[^.;\n]{0,20}?\b(?:all )?"
                  r"(?:bf16|bfloat16)"
                  r"|reduc\w* (?:the )?grad\w* in bf16|reduce-dtype[\s\"':=]+(?:torch\.)?(?:bf16|bfloat16)"
                  r"|grad\w*[- ]reduc\w* (?:runs?|ran|happens?|is done|was done|occurs?|is performed) in (?:bf16|bfloat16)"
                  r"|grad[- ]reduce[- ]in[- ]fp32\b[^.;\n]{0,60}?(?:\bto\b|[=:])\s*false\b")
"""Gradients reduced in bf16, in words ("gradients reduced in bf16", "bf16 gradient all-reduce",
"gradients reduce-scattered in bf16", "param, reduce and buffer dtypes all bf16"), as llm-foundry's
FSDP `mixed_precision: PURE` (parameters, gradients and their reduction in bf16)
or as torch FSDP's `MixedPrecision(reduce_dtype=torch.bfloat16)`."""

COMPILE_WORDS = (r"torch\.compile|torch-compile|torch compile|torchinductor|\binductor\b|torch\.-dynamo|--compile\b"
                 r"|--training\.compile\b"
                 r"|\bcompilation\b|compile\.enable\W*(?:true|on)"
                 r"|\bcompiled? (?:with|by|model|graph|mode)|\bcompile(?:d)?\b(?=[\s\"':=]*(?:true|on|yes|1)\b)")
"""torch.compile named as what ran: by name, its Inductor back end, a `--compile` flag or a
compile option set on. "compiled from" (a table compiled from a file) names no compiler."""

FP8_DISPATCH = (r"fp8[- ](?:token[- ]|all-to-all[- ])?dispatch|dispatch\w* (?:\w+ )?(?:in|as|with) fp8|fp8 all-to-all"
                r"|quantiz\w* (?:in)?to fp8[^.;]{0,30}?\bdispatch"
                r"|low-precision \(fp8\) dispatch|fp8 communication for the dispatch|moe-dispatch-fp8")
"""The all-to-alls into the experts carried in FP8 (DeepSeek-V3's low-precision dispatch)."""

EP_OVERLAP = (r"1f1b[- ](?:a2a |all-to-all |ep )?overlap(?! of p2p| of the pipeline)|(?:ep|expert-parallel) (?:a2a|all-to-all"
              r"|communication|comm) overlap|a2a overlap|moe-a2a-overlap|overlap of the (?:ep|expert-parallel) all-to-all"
              r"|(?:ep|expert-parallel) (?:a2a|all-to-all) hidden by overlapping")
"""The expert-parallel all-to-alls overlapped with another micro-batch's computation (Megatron-
Core's 1F1B all-to-all overlap), not the pipeline's sends ("1F1B overlap of P2P communication")."""

FULL_ITERATION_GRAPH = (r"(?:full|whole|entire)[- ]iteration[- ](?:cuda[- ])?graphs?(?: capture)?|cuda[- ]graphs? captures? the"
                        r" (?:entire|whole) (?:training )?(?:step|iteration)|cuda[- ]graphs?\W{1,3}full[- ]iteration"
                        r"|cuda[- ]graphs? (?:over|of|for|capturing) the (?:whole|entire|full)"
                        r" (?:training )?iteration|(?:whole|entire) (?:training )?iteration captured in (?:one|a) cuda[- ]graph"
                        r"|cuda[- ]graph\W{1,3}full[- ]iteration|cuda-graph-impl\W{1,3}full-iteration")
"""A CUDA graph over the whole training iteration (Megatron-Core's `cuda_graph_impl: full_iteration`)."""

FP8_ATTENTION = (r"fp8[- ]dot[- ]product[- ]attention|fp8[- ](?:fused )?attention|fp8[- ]dpa|attention in fp8|dpa in fp8"
                 r"|fp8[- ]sdpa|fp8[- ]multi[- ]head[- ]attention|fp8[- ]mha|attention (?:computed |bmms |gemms )in fp8")
"""Transformer Engine's FP8 fused attention (Megatron-Core's `fp8_dot_product_attention`, "FP8 DPA")."""

FUSED_GROUPED_MLP = (r"fused[- ]grouped[- ]mlp(?!\W{0,3}0\b)|transformer-engine-op-fuser|te op fuser|cutedsl[- ]grouped[- ]mlp"
                     r"|grouped[- ]mlp fusion")
"""Transformer Engine's fused grouped MLP for the routed experts (Megatron-Bridge's
`cutedsl_fused_grouped_mlp`, Megatron-Core's `use_transformer_engine_op_fuser`)."""


def bf16_parameters(fmt: str) -> str:
    """The quantized run's parameters held and gathered in bf16, however written: Megatron's
    `fp8_param_gather` off for an fp8 run, `fp4_param_gather` off for an NVFP4 one (`fmt` "fp8" or
    "fp4": the other format's flag says nothing of this run)."""
    return (fmt + r"-param-gather" + SET_OFF + r"|(?:nvfp4 |fp8 )?param(?:eter)?s? (?:all-)?gathered in bf16"
            r"|bf16 (?:weights|parameters) (?:are |were )?kept|(?:weights|param(?:eter)?s) (?:are |were )?kept in bf16"
            r"|not (?:all-)?gathered in " + fmt + r"|no " + fmt + r" parameter(?:s)? (?:all-)?gather|" + fmt
            + r"-param-gather[^.;,]{0,12}(?:not set|off|disabled|not used)|" + fmt + r"-params" + SET_OFF
            + r"|(?:param(?:eter)?s|weights) (?:are |were )?all-gathered in bf16|bf16 param(?:eter)?s? all-gather"
            + r"|" + fmt + r" param(?:eter)? all-gather (?:disabled|off)")


UNFUSED_BACKEND = (r"attention[-_ ]backend[\s:=\"']+(?:attnbackend\.)?(?:unfused|local)\b|\b(?:un|non-?)fused (?:softmax )?attention\b"
                   r"|\battention (?:\w+ ){0,2}unfused\b|\battention[^.;]{0,20}?without a fused kernel|\battention (?:was |is )?not fused")
"""Megatron-Core told to run its unfused attention (`--attention-backend unfused`), or a source
that says its attention was unfused, whatever its year."""

OFFLOAD_WORDS = (r"offload\w* (?:the )?activations of (\d+) layers|activations of (\d+) layers offloaded"
                 r"|offloads? (\d+) layers of activations|offloading of activations \((\d+) layers\)"
                 r"|offload-activations\W{1,3}(\d+)|activation cpu offload \(num-layers\W(\d+)\)"
                 r"|(\d+) transformer layers'? activations offloaded|activations offloaded to (?:the )?(?:cpu|host) for (\d+) layers"
                 r"|cpu-offloading\W{1,3}true \((\d+) layers\)"
                 r"|(\d+) layers'? activations offloaded|activation offloading[^.;]{0,40}?\b(\d+)(?: of \d+)? layers"
                 r"|activation offloading\W+(\d+) layers|(?:cpu )?act(?:ivations?)? offload(?:ing)?\W+(\d+) layers"
                 r"|(\d+) layers(?:'? activations)? offloaded(?: to (?:the )?(?:cpu|host))?")
"""Activations offloaded to host memory for a number of layers, in words (Megatron-Bridge's
`cpu_offloading_num_layers`)."""


def node_limit_of(compact: str) -> int:
    """The nodes each token's experts lie within, where the text states node-limited routing
    (DeepSeek-V3's "at most 4 nodes", its `topk_group`, Megatron-Core's `--moe-router-group-topk`);
    0 where it states none, or denies it."""
    number = r"(\d+|" + "|".join(NUMBERS) + r")"
    for pattern in (r"(?:topk-group|moe-router-group-topk)[\s\"':=]+" + number,
                    r"node[- ]limited routing[^.;]{0,60}?(?:at most|max(?:imum)?|<=|up to|m\s*=)\s*" + number,
                    r"(?:routed|sent|dispatched) to at most " + number + r" nodes",
                    r"at most " + number + r" nodes per token"):
        for found in re.finditer(pattern, compact):
            sentence = clauses(compact[:found.start()])[-1]
            if re.search(r"\b(?:no|not|without)\s+node[- ]limited", sentence):
                continue  # "no node-limited routing (at most 4 nodes per token in the paper's setup)"
            if not denied(compact, found) \
                    and not re.match(r"[^.;]{0,40}?\b(?:was|were) not (?:used|applied)", compact[found.end():]):
                value = found.group(1)
                return int(value) if value.isdigit() else NUMBERS[value]
    return 0


def uncompared(text: str) -> str:
    """`text` without its clauses that compare with another run, release or runtime (`COMPARED`):
    "compared with Megatron-LM's published MFU", "torchtitan later reproduced a 405B run"."""
    return "\n".join(c for c in clauses(text, at=";,")
                     if not re.search(COMPARED + r"|benchmarks? report", c, flags=re.I))


ATTENTION_FIELD = r"attn|attention(?:[ _-](?:kernel|backend|impl\w*|type|kind))?|attn[ _-]impl\w*"
"""The names of a row's own field for its attention kernel, in its layout's or model's extras
(`attention_kernel: Without FlashAttention`, `attn_implementation: flash_attention_2`)."""


def attention_field(entry: dict) -> str:
    """The words of the row's own attention-kernel field (`ATTENTION_FIELD`), "" where it has none."""
    for block in ((entry.get("layout") or {}).get("extra"), (entry.get("model") or {}).get("extra")):
        if isinstance(block, dict):
            for key, value in block.items():
                if re.fullmatch(ATTENTION_FIELD, str(key).strip().lower()) and not placeholder(value):
                    return _words(value)
    return ""


def runtime_family(entry: dict) -> str:
    """Whose runtime a row ran, "torchtitan" (or a program built as it is, `TORCH_NATIVE_WORDS`),
    "megatron", "torch" (eager PyTorch with torch's FSDP: llm-foundry's Composer) or "other", from
    the words that name it (`MEGATRON_WORDS`, `TORCH_FSDP_WORDS`), each mention taken only where no
    denial takes it back (`affirms`). The row's own account of what ran decides before its notes,
    where a comparison ("faster than torchtitan's figure") names another runtime; and of that
    account, the source's name (its group, title and locator: "NVIDIA/Megatron-LM
    examples/llama/README.md") before its evidence and extras, where a model's shape may be cited
    from another project ("the 70B shape as in torchtitan's registry")."""
    lay, model = entry.get("layout") or {}, entry.get("model") or {}
    source = entry.get("source") or {}
    named = _words(entry.get("group"), source.get("title"), source.get("locator"))
    primary = _words(source.get("primary_evidence"), lay.get("extra"), model.get("extra"))
    for text in (named, primary, uncompared(source_text(entry))):
        if affirms(text, "torchtitan") or affirms(text, TORCH_NATIVE_WORDS):
            return "torchtitan"
        if affirms(text, MEGATRON_WORDS):
            return "megatron"
        if affirms(text, TORCH_FSDP_WORDS):
            return "torch"
    return "other"


def software_of(entry: dict, precision: str, tp: int, dp: int, notes: list[str]) -> tuple[timing.Software, str]:
    """The training program's facts, from its source: kernels, attention, overlap, gradients.
    Returns them and the family ("megatron", "torchtitan" or "other") whose defaults fill gaps."""
    text = source_text(entry)
    year = source_year(entry)
    family = runtime_family(entry)
    native = re.search(TORCH_NATIVE_WORDS, text, re.I)
    if family == "torchtitan" and native and not affirms(text, "torchtitan"):
        notes.append(f"runtime read as torchtitan's (stated: {native.group(0)}, built as torchtitan is: FSDP2 and "
                     "torch.compile on each block, FlashAttention-2)")
    if precision == "nvfp4" and family != "megatron":
        raise Unusable("NVFP4 outside Megatron-LM and Transformer Engine: parc models Transformer Engine's NVFP4 "
                       "recipe only (another runtime's kernels and casts differ)")
    # "without FlashAttention" / "before FlashAttention" / "no flash" name the kernel to deny it;
    # the row's own attention field decides before the rest of its source, whose title may name
    # the kernel another column of the same table ran ("FlashAttention-2" above a baseline column)
    kernel_field = attention_field(entry)
    said = kernel_field if kernel_field and (affirms(kernel_field, FLASH_WORDS) or denies(kernel_field, FLASH_WORDS)) else text
    flash_stated = affirms(said, FLASH_WORDS)
    flash_denied = not flash_stated and denies(said, FLASH_WORDS)  # "FlashAttention was not used"
    unfused_stated = flash_denied or affirms(text, UNFUSED_BACKEND)
    own = uncompared(text)  # the row's own words, comparisons with other runs set aside
    bigscience = family == "megatron" and affirms(own, BIGSCIENCE_WORDS)
    unfused = unfused_stated or (not flash_stated and (bigscience or (year is not None and year <= 2022)))
    if unfused_stated:
        notes.append("unfused attention (stated: no fused attention kernel; not expressible in a spec)")
    elif unfused and bigscience:
        notes.append("unfused attention (BigScience's Megatron-DeepSpeed fork, which has no fused attention "
                     "kernel at any commit; not expressible in a spec)")
    elif unfused:
        notes.append(f"unfused attention (published {year}, before FlashAttention was in training "
                     "frameworks; not expressible in a spec)")
    # Transformer Engine told to run flash-attn's FlashAttention-2 instead of cuDNN's fused kernel:
    # `NVTE_FUSED_ATTN=0` in a launch script, or Megatron-Core's `--attention-backend flash`
    flash_attn_te = family == "megatron" and not unfused and affirms(text, TE_FLASH_ATTN, HOLDS_ITS_VALUE)
    if flash_attn_te:
        notes.append("flash-attn's FlashAttention-2 through Transformer Engine (stated: NVTE_FUSED_ATTN=0; "
                     "`attention-backend flash`)")
    compact = text.replace("_", "-")
    # "ub_tp_comm_overlap false" (a launcher configuration quoted as evidence) states the opposite;
    # the option's own value decides over a mention of userbuffers elsewhere ("the userbuffers config")
    options = stated_recipe(entry)  # parsed once for the options read below
    tp_option = options.get("tp_comm_overlap")
    tp_comm_overlap = tp_option if tp_option is not None else affirms(compact, TP_OVERLAP)
    async_tp = affirms(compact, ASYNC_TP) and not re.search(NO_OPTIMIZATIONS, compact)
    if tp_comm_overlap or async_tp:
        overlap, why = "all", "tensor-parallel communication overlap stated in the source"
    elif bigscience:
        overlap, why = "none", ""
        if tp > 1:
            notes.append("tp overlap: none (BigScience's Megatron-DeepSpeed fork: its column-parallel linears "
                         "all-reduce the input gradient synchronously at every commit; not expressible in a spec)")
    elif family == "megatron" and year is not None and year < MEGATRON_DEEPSPEED_ASYNC_FROM \
            and affirms(own, DEEPSPEED_WORDS):
        overlap, why = "none", ""
        if tp > 1:
            notes.append(f"tp overlap: none (Megatron-DeepSpeed, published {year}: its column-parallel linears "
                         "all-reduce the input gradient synchronously; not expressible in a spec)")
    elif family == "megatron" and (year is None or year >= 2022):
        overlap, why = "backward", ("Megatron-LM's asynchronous input-gradient all-reduce / reduce-scatter "
                                    "under the weight-gradient GEMM, on by default since late 2021")
    else:
        overlap, why = "none", ""
        if tp > 1 and family == "other":
            notes.append("tp overlap: none (the row names no runtime whose default overlaps tensor-parallel "
                         "communication)")
    if overlap == "all" and precision == "nvfp4" and family == "megatron":
        # Transformer Engine's userbuffers take no NVFP4 (E0630): NVIDIA's NVFP4 recipes turn them off
        overlap, why = "backward", ("the userbuffers overlap stated, which Transformer Engine has not for "
                                    "NVFP4 (E0630): Megatron-LM's backward overlap")
    if overlap != "none" and tp > 1:
        notes.append(f"tp overlap: {overlap} ({why}; not expressible in a spec)")
    grad_bytes = 4
    if precision == "fp16" and family != "torchtitan":
        grad_bytes = 2
        if dp > 1:
            notes.append("fp16 gradients reduced in fp16 (Megatron-LM reduces in the parameters' dtype; "
                         "only bf16 forces fp32)")
    # what the row's words say of its own release: a clause naming another release is that one's
    release = container_release(entry)
    own = "\n".join(c for c in clauses(compact) if not other_release(c, release) or re.search(SELF, c))
    if affirms(own, "grad-reduce-in-bf16") or affirms(own, BF16_REDUCTION):
        grad_bytes = 2
    elif (family == "megatron" and precision != "fp16" and release in NEMO_BF16_REDUCTION
          and affirms(text, NEMO_PERFORMANCE_WORDS)
          and not denies(own, "grad-reduce-in-bf16") and not denies(own, BF16_REDUCTION)
          and options.get("grad_reduce_in_fp32") is not True
          and not re.search(r"reduc\w*[^.;\n]{0,40}?\b(?:fp32|float32)\b|\b(?:fp32|float32)\b[^.;\n]{0,40}?reduc"
                            r"|grad-sync-dtype\W+(?:torch\.)?(?:fp32|float32)", own)):
        grad_bytes = 2
        if dp > 1:
            notes.append(f"gradients reduced in bf16 (unstated: NeMo {release}'s performance recipes "
                         "set grad_reduce_in_fp32 False for every model, NVIDIA/NeMo 78f445f822)")
    kernels = "fused"
    if family in ("torchtitan", "torch"):
        compiled = affirms(text, COMPILE_WORDS)
        kernels = "fused" if compiled else "eager"
        if compiled:
            notes.append("torch.compile: fused kernels' speed (the eager runtime's without it)")
    if affirms(compact, "force-load-balancing") or affirms(text, r"forced?[- ](?:expert[- ])?(?:load[- ])?balanc\w*|forced to (?:a )?"
                                                            r"(?:balance|uniform)|load balancing forced"):
        # Megatron-Core's benchmark mode replaces the router's logits with normal noise for every
        # token (megatron/core/transformer/moe/moe_utils.py, RandomSTE: "random logits of router
        # for load-balanced benchmark"): a random router, whose busiest rank the model's floor
        # (kernels.routing_imbalance) already charges; not an exactly even load
        notes.append("random routing (stated: Megatron-Core's --moe-router-force-load-balancing draws the router's "
                     "logits as normal noise per token, moe_utils.RandomSTE): the random router's busiest-rank "
                     "load, kernels.routing_imbalance")
    balanced = False
    # DeepEP's Hybrid-EP kernels (Megatron-Core's flex dispatcher, backend hybridep) before DeepEP's own
    dispatcher = options.get("moe_token_dispatcher_type")
    plain_dispatcher = dispatcher in ("alltoall", "all_to_all", "allgather", "all_gather", "alltoall_seq")  # no flex: no DeepEP, whatever is named
    hybridep = not plain_dispatcher and affirms(compact, r"hybrid[- ]?ep(?![\w+])|deepep'?s? hybrid")
    deepep = not hybridep and not plain_dispatcher and (affirms(compact, r"deep[- ]?ep(?![\w+])|moe-enable-deepep|"
                                                                + DEEPEP_MECHANISM)
                               or bool(re.search(r"moe-token-dispatcher-type[\s\"':=]+flex\b", compact)))
    if deepep:
        notes.append("DeepEP's dispatcher (stated): one copy per destination node over RDMA, forwarded over NVLink, "
                     f"on {DEEPEP_SMS} SMs (not expressible in a spec)")
    if hybridep:
        notes.append("Hybrid-EP's dispatcher (stated): DeepEP's fan-out, no re-sort by local expert "
                     f"(timing.PERMUTE_PASSES), on {HYBRIDEP_SMS} SMs (not expressible in a spec)")
    node_limit = node_limit_of(compact)
    if node_limit:
        notes.append(f"node-limited routing (stated): each token's experts within {node_limit} nodes "
                     "(not expressible in a spec)")
    dispatch_fp8 = affirms(compact, FP8_DISPATCH)
    if dispatch_fp8:
        notes.append("FP8 all-to-alls into the experts (stated: the dispatch, and the gradient before the down "
                     "projection; the combine and its gradient in BF16), e4m3 with a scale per 128 channels "
                     "(not expressible in a spec)")
    ep_overlap = affirms(compact, EP_OVERLAP) or affirms(compact, "overlap-moe-expert-parallel-comm")
    if ep_overlap:
        notes.append("ep all-to-all overlapped with another micro-batch's computation (stated: 1F1B overlap; "
                     "not expressible in a spec)")
    # Megatron-Core's shared experts on their own stream beside the alltoall dispatcher's
    # all-to-alls (`Software.shared_expert_overlap`); Megatron-Bridge turns it off beside the 1F1B
    # overlap and under the flex dispatcher
    shared_overlap = (affirms(compact, r"(?:moe-)?shared[- ]experts?[- ](?:computation |compute )?overlap\w*|overlap[- ]shared[- ]experts?")
                      and not ep_overlap and not (deepep or hybridep)
                      and bool((entry.get("model") or {}).get("shared_experts")) and shared_overlap_applies(tp))
    if shared_overlap:
        notes.append("shared experts beside the dispatcher's all-to-alls (stated: --moe-shared-expert-overlap; "
                     "timing.shared_beside_ep)")
    # the dispatcher reads each layer's token counts on the host unless the runtime keeps them on
    # the GPU: inputs padded to a stated capacity, or a CUDA graph over the whole iteration
    host_sync = not (affirms(compact, PADDED_TO_CAPACITY)
                     or affirms(compact, FULL_ITERATION_GRAPH))
    if not host_sync:
        notes.append("no host read of the token counts (stated: experts' inputs padded to capacity or a "
                     "full-iteration CUDA graph; Software.moe_host_sync off)")
    modules = megatron_modules(entry)
    if modules and maxtext_remat(_words((entry.get("layout") or {}).get("recompute"))) is None:  # recompute_of notes a policy
        notes.append(f"Megatron-Core's --recompute-modules {' '.join(modules)} (stated): "
                     + recompute_modules_text(modules) + " again before the backward (`recompute selective [...]`)")
    # A run that states FSDP (PyTorch's fully sharded data parallel) on no Megatron runtime moves
    # FSDP's traffic: under pipelining torch's stages defer the gradients' reduction to the last
    # micro-batch (`PipelineStage.backward_maybe_with_nosync`), where the megatron contract's
    # zero2 reduce-scatters every micro-batch.
    sharding_words = re.sub(r"reshard[\w-]*\W{0,3}(?:disabled|off|false|0)\b", " ",  # an option of FSDP, not a denial of it
                            _words((entry.get("layout") or {}).get("zero_or_fsdp")))
    torch_fsdp = family == "other" and affirms(sharding_words,
                                               r"\bfsdp\d?\b|fully[ _]shard|shard_grad_op|full_shard|hybrid_shard")
    if torch_fsdp:
        notes.append("PyTorch FSDP's data-parallel traffic (FSDP stated, no Megatron runtime): under "
                     "pipelining the gradients are reduced once per step, after the last micro-batch")
    # a model with linear biases in its routed experts (gpt-oss: Megatron-Bridge's gpt_oss_bridge.py
    # sets `add_bias_linear = True`): Megatron-Core adds the down projection's bias in eager
    # PyTorch, expert by expert (`timing.EXPERT_BIAS_PASSES`); a fact of the model the row states
    expert_bias = (entry.get("model") or {}).get("expert_bias") is True and family == "megatron"
    if expert_bias:
        notes.append("the routed experts' output bias added in eager PyTorch per expert (stated: linear biases; "
                     "Megatron-Core TEGroupedMLP._apply_bias; not expressible in a spec)")
    # a clamped GLU in the routed experts (gpt-oss: `activation_func_clamp_value = 7.0`): Megatron-Core
    # clamps and concatenates the fc1 output in eager PyTorch before its compiled activation
    # (`timing.EXPERT_CLAMP_PASSES`); a fact of the model the row states
    clamp = (entry.get("model") or {}).get("activation_clamp")
    expert_clamp = isinstance(clamp, (int, float)) and not isinstance(clamp, bool) and clamp > 0 \
        and family == "megatron"
    if expert_clamp:
        notes.append(f"the routed experts' GLU input clamped at {clamp} in eager PyTorch before the fused "
                     "activation (stated; Megatron-Core weighted_bias_quick_geglu_impl; not expressible in a spec)")
    # YaRN with a concentration factor other than 1 (gpt-oss: factor 32, no mscale): Megatron-Core
    # runs its unfused RoPE, op by op (`timing.UNFUSED_ROPE_BYTES`); a fact of the model the row states
    concentration = yarn_concentration(entry.get("model") or {})
    rope_unfused = family == "megatron" and abs(concentration - 1.0) > 1e-9
    if rope_unfused:
        notes.append(f"YaRN concentration {concentration:.3f} (stated YaRN factor): Megatron-Core's unfused RoPE "
                     "(rope_utils.apply_rotary_pos_emb; not expressible in a spec)")
    # Transformer Engine's FP8 dot-product attention (Megatron-Core's `fp8_dot_product_attention`,
    # which Megatron-Bridge's recipes set): the attention's products in FP8 too
    attention_fp8 = family == "megatron" and precision == "fp8" and affirms(compact, FP8_ATTENTION)
    if attention_fp8:
        notes.append("FP8 dot-product attention (stated: Transformer Engine's FP8 fused attention)")
    # Transformer Engine's fused grouped MLP (Megatron-Bridge's `cutedsl_fused_grouped_mlp`, which
    # sets Megatron-Core's `use_transformer_engine_op_fuser`): the experts' GLU and quantizations
    # in their grouped GEMMs' epilogues, where TE fuses (`timing.fuses_grouped_mlp`)
    fused_grouped_mlp = family == "megatron" and affirms(compact, FUSED_GROUPED_MLP)
    if fused_grouped_mlp:
        notes.append("Transformer Engine's fused grouped MLP (stated): the experts' GLU and quantizations in the "
                     "grouped GEMMs' epilogues, one kernel per GEMM for all local experts, on Blackwell under "
                     "MXFP8 (not expressible in a spec)")
    # a fused cross-entropy the source states (llm-foundry's MPT: `loss_fn: fused_crossentropy`,
    # flash-attention's xentropy CUDA extension): one kernel each way on the 16-bit logits
    loss_kernel = "xentropy" if family == "torch" and affirms(compact, r"fused[- ]?(?:softmax[- ])?cross[- ]?entropy|fused ce\b"
                                                              r"|\bxentropy|cross[- ]?entropy fused") \
        else ""
    if loss_kernel:
        notes.append("flash-attention's fused cross-entropy (stated: llm-foundry's `loss_fn: fused_crossentropy`, "
                     "xentropy on the 16-bit logits; not expressible in a spec)")
    if te_fp8_linears(family, precision, text):
        notes.append("Transformer Engine's fp8 linears (stated: the model's fc_type te under amp_fp8; `target torch` "
                     "states none, parc's runtime has no fp8 matmuls)")
    recipe = "dynamic" if family == "torchtitan" else fp8_recipe_of(entry)
    if precision == "fp8" and recipe in TARGET_RECIPES:
        name = {"current": "per-tensor current scaling", "mxfp8": "MXFP8", "blockwise": "blockwise (1x128, 128x128)"}
        notes.append(f"Transformer Engine's {name[recipe]} fp8 recipe (stated: `fp8-recipe {TARGET_RECIPES[recipe]}`)")
    if family == "torchtitan" and precision == "fp8" and titan_float8_all_gather(entry) \
            and not re.search(FLOAT8_ALL_GATHER + r"|enable-fsdp-float8-all-gather|fp8[- ]all[- ]?gather", compact):
        notes.append("float8 all-gather (torchtitan's float8 configs gathered float8 weights until "
                     f"{TITAN_ROWWISE}; not stated)")
    software = timing.Software(
        attention="unfused" if unfused else ("flash" if family in ("torchtitan", "torch")
                                             else "flash-te-fa2" if flash_attn_te else "flash-te"),
        attention_fp8=attention_fp8,
        selective=("modules:" + ",".join(modules) if modules else timing.TORCHTITAN_OP if family == "torchtitan"
                   else "elementwise" if family == "torch" else "attention-core"),
        tp_overlap=overlap,
        kernels=kernels,
        loss_kernel=loss_kernel,
        fp8="linear",  # Transformer Engine (Megatron-LM, NeMo) and torchao's float8 (torchtitan)
        fp4=family == "megatron",  # Transformer Engine's NVFP4 recipe (`software_of` refuses it elsewhere)
        fp8_scaling=recipe,
        context_parallel="torch" if family in ("torchtitan", "torch") else "te",
        dp_runtime="torch" if family in ("torchtitan", "torch") or torch_fsdp else "megatron",
        # torch.distributed.pipelining's REDUCE_GRAD (`timing.serial_windows`): torchtitan's; an
        # FSDP run's own pipeline (Meta's Llama 3) is not described by its source
        pp_reduce_waits=family in ("torchtitan", "torch"),
        # ... whose zero-bubble weight passes recompute again (`timing.weight_pass_recomputes`)
        weight_pass_recomputes=family in ("torchtitan", "torch"),
        dp_copies=fsdp_version(family, text),
        dp_overlap=not dp_overlap_denied(compact, options),
        # Megatron-LM's and TE's linears re-gather their saved sharded input in the backward
        # (`timing.regathered`); DTensor (torchtitan, FSDP with plain PyTorch) saves it gathered
        tp_regather=family == "megatron",
        fused_grouped_mlp=fused_grouped_mlp,
        grad_bytes=grad_bytes,
        # as the target the row compiles to gathers its fp8 weights (`targets.gather_bytes`): the
        # Megatron launcher's `--fp8-param-gather` (NeMo's and Megatron-Bridge's fp8 recipes set
        # it; MXFP8's in bf16), torchtitan's float8 all-gather where the run had it
        # (NVFP4's from Megatron-Bridge 26.04.01, `fp4_param_gather`; bf16 before, `read_recipe`)
        gather_bytes=gather_bytes(Target(name=target_name(family), fp8_recipe=TARGET_RECIPES.get(recipe),
                                         float8_all_gather=family == "torchtitan" and titan_float8_all_gather(entry),
                                         fp8_params=not affirms(compact, bf16_parameters("fp4" if precision == "nvfp4" else "fp8"),
                                                                HOLDS_ITS_VALUE)),
                                  precision),
        balanced_routing=balanced,
        ep_dispatcher="hybridep" if hybridep else "deepep" if deepep else "all-to-all",
        ep_overlap=ep_overlap,
        shared_expert_overlap=shared_overlap,
        ep_dispatch_fp8=dispatch_fp8,
        save_original_input=save_original_input_of(entry, family, precision, recipe, notes),
        ep_node_limit=node_limit,
        moe_host_sync=host_sync,
        moe_counts_kept=False,  # parc's own job alone keeps them (`targets.Runtime.moe_counts_kept`)
        expert_bias=expert_bias,
        expert_clamp=expert_clamp,
        rope_unfused=rope_unfused,
        pp_overlap=pp_overlap_of(entry, family, year, options),
    )
    return software, family


P2P_OVERLAP_DEFAULT = "2023-10-12"
"""Megatron-LM made `overlap_p2p_comm` its default on this day (4eeff55d1f); what the interleaved
schedule then does is `timing.Software.pp_overlap`'s "all". NeMo 2's `MegatronCommOverlapCallback`
(1d5de59460, 2024-09-06) and Megatron-Bridge's `CommOverlapConfig` set it whenever there are
virtual stages, and NeMo 1's launcher configs state it (NeMo-Framework-Launcher
conf/training/llama/llama3_1_70b.yaml, dgxc-benchmarking nemo_megatron/gpt3_175b_hydra.yaml:
`overlap_p2p_comm: true`, `batch_p2p_comm: false`); NeMo 1's example configs leave it off."""

NEMO_BF16_REDUCTION = ("25.02", "25.04")
"""NeMo containers whose performance recipes reduce every model's gradients in bf16: NVIDIA/NeMo
78f445f822 (2025-01-30) sets `recipe.trainer.plugins.grad_reduce_in_fp32 = False` in each
pretraining script of scripts/llm/performance (v2.2.0, the 25.02 container) and
scripts/performance/llm (v2.3.0, 25.04), which the Performance Summary's and DGX Cloud
Benchmarking's figures of those containers come from. Earlier releases' scripts leave NeMo's default
(fp32); later ones were not read, so they keep it too."""

NEMO_PERFORMANCE_WORDS = (r"performance[-_ ]summary|performance recipes?|scripts/(?:llm/)?performance"
                          r"|dgxc[-_ ]benchmarking|dgx cloud benchmarking")
"""The words that name NeMo's performance scripts as what produced a row's figure: its Performance
Summary page, its performance recipes, DGX Cloud Benchmarking (whose recipes launch them)."""


NEMO2_RELEASE = "24.09"
"""The first NeMo 2 container (NeMo 1d5de59460, 2024-09-06: `MegatronCommOverlapCallback` sets
`overlap_p2p_comm` under virtual stages). An earlier container's run states no config of its own
here, and NeMo 1's example configs leave the overlap off (megatron_gpt_config.yaml at 8e3d65dcfe)."""

P2P_FORWARD_WAIT = ("26.06", "2026-04-16")
"""The first NeMo container, and the Megatron-LM date (260cba7133), from which the interleaved
schedule waits on each forward send at once (`Software.pp_overlap` "backward"): Megatron-Bridge
c270efc505's submodule addc601f57 (26.06) has it, 26.04's 23265d2 is the day before it."""


COMPARED = (r"\b(?:compared (?:with|to)|than|versus|vs\.?|unlike|instead|as introduced by|introduced by|as in|same \w+ as"
            r"|definition|defined|reproduc\w*|later|earlier|newer|older|slower|faster|another|other)\b|-style\b")
"""Words that make a clause a comparison with another run, release or runtime ("compared with
Megatron-LM commit ...", "a later container (NeMo 25.07)", "Megatron-style tensor parallelism"): what
it names is not the row's own."""

COMPARED_BEFORE = (r"\b(?:compared (?:with|to)|than|versus|vs\.?|as introduced by|introduced by|same \w+ as"
                   r"|reproduc\w*)\s+(?:(?!and\b|but\b|while\b)[\w.'/-]+\s+){0,3}[\w.'/-]*$")
"""Comparison words just before a mention in its clause, with no "and" or "but" between ("compared with
runs using X", "faster than NeMo's recipe": the mention is what the row is compared with; not "reduced
in BF16 rather than FP32 and the TP communication overlapped")."""

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")


def _dates_in(clause: str) -> list[str]:
    """The dates a clause writes: "2025-06-01", "2025/06/01", "1 June 2025", "June 1, 2025", as ISO."""
    out = [f"{y}-{m}" + (f"-{d}" if d else "") for y, m, d in
           re.findall(r"\b(20\d\d)[-/]([01]\d)(?:[-/]([0-3]\d))?\b", clause)]
    out += [f"{y}-{MONTHS.index(m) + 1:02d}-{int(d):02d}" for d, m, y in
            re.findall(r"\b(\d{1,2}) (" + "|".join(MONTHS) + r"),? (20\d\d)\b", clause)]
    out += [f"{y}-{MONTHS.index(m) + 1:02d}-{int(d):02d}" for m, d, y in
            re.findall(r"\b(" + "|".join(MONTHS) + r") (\d{1,2}),? (20\d\d)\b", clause)]
    return out


def runtime_date(entry: dict) -> str:
    """The date of the code a row ran, "YYYY", "YYYY-MM" or "YYYY-MM-DD", or "": its `runtime`
    block's, else a date its text states beside the code it names ("Megatron-LM commit 285068c8 of
    2023-01-11", "at commit fa0315ae26 (2025-10-10)", "Megatron-LM 1a2b3c4d (2025-06-01)", "code as of
    June 1, 2025", "Megatron-LM main of 2025/06/01"), never in a clause that compares another run's
    (`COMPARED`): the shared schema has no `runtime` block, so a transcriber who knows the date
    writes it there."""
    stated = str((entry.get("runtime") or {}).get("date") or "")
    if stated:
        return stated
    for clause in clauses(source_text(entry)):
        if re.search(COMPARED, clause):
            continue
        if re.search(r"\b(?:added|introduced|published|moved|renamed|removed|updated|edited)\s+(?:in|by|at|with)\s+"
                     r"(?:the\s+)?commit", clause):
            continue  # the document's commit ("table added in commit 820504e20, 2025-06-13"), not the code that ran
        if re.search(r"commit\s+[0-9a-f]{7,40}\b|\b(?:megatron[- ](?:lm|core)|nemo|torchtitan)\s+(?:main\s+)?(?:[0-9a-f]{7,40}\b|of\b)"
                     r"|code as of|\bmain of\b", clause):
            dates = _dates_in(clause)
            if dates:
                return dates[0]
    return ""


def container_release(entry: dict) -> str:
    """The NeMo container a row ran, "YY.MM", or "": the image's tag where the source names it
    (`nvcr.io/nvidia/nemo:24.09`; DGX Cloud's recipes carry their own release numbers beside it),
    else the row's `release`, else its title's "26.06.01 NeMo container" / "NeMo25.04.rc2", else the
    one release the rest of its source and notes name ("image nvcr.io/nvidia/nemo:25.04.01" in its
    evidence)."""
    source = entry.get("source") or {}
    title = str(source.get("title") or "")
    tag = re.search(r"nvidia/nemo:(\d\d\.\d\d)", title)
    if tag:
        return tag.group(1)
    stated = re.search(r"(\d\d\.\d\d)", str(entry.get("release") or ""))
    if stated:
        return stated.group(1)
    found = re.search(CONTAINER_WORDS, title, flags=re.I)
    if found:
        return next(g for g in found.groups() if g)
    # the rest of the row's words: only where they name one release (a note comparing two names neither)
    rest = "\n".join(_strings(source.get("locator"), source.get("primary_evidence"), source.get("corroboration"),
                               entry.get("notes")))
    named = {next(g for g in m.groups() if g) for clause in clauses(rest)
             if not re.search(COMPARED, clause, flags=re.I)
             for m in re.finditer(r"nemo:(\d\d\.\d\d)|" + CONTAINER_WORDS, clause, flags=re.I)}
    return named.pop() if len(named) == 1 else ""


CONTAINER_WORDS = (r"(?<![\d.])(\d\d\.\d\d)(?:\.\d+)?(?:\.rc\d+)?\s+NeMo\s+container|NeMo\s*v?(\d\d\.\d\d)"
                   r"|NeMo\s+(?:framework\s+)?(?:container\s+)?(\d\d\.\d\d)|release\s+(\d\d\.\d\d)\S*\s+of\s+the\s+NeMo"
                   r"|NeMo\s*2?\s*\(container\s+(\d\d\.\d\d)")
"""A NeMo container's release in words: "26.06.01 NeMo container", "NeMo25.04.rc2", "NeMo 24.07",
"NeMo container 25.02"."""


SAVE_ORIGINAL_INPUT = ("25.09", "2025-08-19")
"""The first NeMo container, and the Megatron-LM date (781e765818, "Support recomputation for FP8
layernorm/moe_act/shared_experts"), from which Megatron-Core's output projection and shared-expert
fc1 keep their bf16 input under the fp8 recipes but delayed scaling and under NVFP4
(`timing.Software.save_original_input`): Megatron-LM's tag 25.09-alpha.rc1 contains it, and
core_v0.15.0; core_r0.14.0 does not."""


def save_original_input_of(entry: dict, family: str, precision: str, recipe: str, notes: list[str]) -> bool:
    """`timing.Software.save_original_input` for a Megatron-family row: False where its NeMo
    container (`container_release`), or failing that its code's date, predates
    `SAVE_ORIGINAL_INPUT`; else the current Megatron-Core's True (a row that states neither is
    read as the current code, as the target it compiles to runs). Noted only where the fact
    changes what the row runs: its `precision` and fp8 `recipe` are ones Megatron-Core keeps the
    bf16 input under (`memory.inputs.keeps_original_input`)."""
    if family != "megatron":
        return True
    release = container_release(entry)
    date = runtime_date(entry)
    if release:
        current = release >= SAVE_ORIGINAL_INPUT[0]
    elif len(date) >= 10:
        current = date >= SAVE_ORIGINAL_INPUT[1]
    else:
        return True
    if not current and keeps_original_input(precision, recipe):
        notes.append(f"Megatron-Core before `set_save_original_input` (NeMo container {release or date}, before "
                     f"{SAVE_ORIGINAL_INPUT[0]}): the output projection and shared-expert fc1 keep their quantized "
                     "input under current scaling, MXFP8 and NVFP4")
    return current


PP_OVERLAP_WORDS = (r"(?:pipeline|\bpp)[- ](?:parallel[- ])?(?:p2p |send/recv )?(?:communication |comm )?(?:is )?overlap\w*"
                    r"|overlap of (?:the )?pipeline[- ]parallel (?:send/recv|p2p|communication)|\bp2p (?:communication )?overlap\w*")
"""The pipeline's sends overlapped with computation, in words ("PP communication overlap enabled",
"pipeline p2p communication not overlapped", "P2P overlap: on")."""


def pp_overlap_of(entry: dict, family: str, year: int | None, options: dict | None = None) -> str:
    """Which chunk-boundary sends of an interleaved schedule the row's runtime runs beside the next
    chunk (`timing.Software.pp_overlap`), from what the row states of its software, first found:
    torch's pipelining (torchtitan, torch FSDP runs) "all"; another non-Megatron runtime "none";
    a stated `overlap_p2p_comm` flag; NeMo's launcher, whose configs state it; a NeMo container
    by its release (`NEMO2_RELEASE`), or Megatron-LM code by its date (`P2P_FORWARD_WAIT`:
    "backward" from then, else "all" from `P2P_OVERLAP_DEFAULT` on); a Megatron-family source
    published from 2024 on "all"; else "none", as before. `options`: the row's `stated_recipe`,
    where the caller has it."""
    if family in ("torchtitan", "torch"):
        return "all"
    if family != "megatron":
        return "none"
    text = source_text(entry).replace("-", "_")
    # `overlap_p2p_comm`, `--no-overlap-p2p-communication`
    stated = (stated_recipe(entry) if options is None else options).get("overlap_p2p_comm")
    if stated is None and re.search(r"(?:\bp2p|send/recv|pipeline[- ](?:parallel[- ])?(?:p2p|communication|comm|send\w*)|\bpp "
                                    r"(?:p2p|communication|comm))[^.;,\n]{0,20}?\bnot overlapped", text.replace("_", " ")):
        stated = False  # "pipeline p2p communication not overlapped"
    if stated is None and re.search(PP_OVERLAP_WORDS, text.replace("_", " ")):  # said in words: on, or denied
        words = text.replace("_", " ")
        stated = True if affirms(words, PP_OVERLAP_WORDS) else False if denies(words, PP_OVERLAP_WORDS) else None
    release = container_release(entry)
    date = runtime_date(entry)
    if release:
        forward_waits = release >= P2P_FORWARD_WAIT[0]
    else:  # a day decides; a month or a year that holds 2026-04-16 does not
        forward_waits = len(date) >= 10 and date >= P2P_FORWARD_WAIT[1]
    if stated is not None:
        return "backward" if stated and forward_waits else "all" if stated else "none"
    if re.search(r"nemo.s launcher|nemo[-_ ](?:framework[-_ ])?launcher", text):
        return "all"  # the launcher's training configs state it (`P2P_OVERLAP_DEFAULT`)
    if release:  # NeMo 2 (`NEMO2_RELEASE` on) and Megatron-Bridge set it; NeMo 1's own configs leave it off
        return "backward" if forward_waits else "all" if release >= NEMO2_RELEASE else "none"
    if len(date) >= 7:  # a month or a day: compared with the default's
        return "backward" if forward_waits else "all" if date >= P2P_OVERLAP_DEFAULT[:len(date)] else "none"
    if date:  # a year alone decides only where the whole year is past the default
        return "all" if date > P2P_OVERLAP_DEFAULT[:4] else "none"
    return "all" if year is not None and year >= 2024 else "none"


TITAN_ROWWISE = "2026-04-27"
"""torchtitan's float8 became rowwise only on this day (pytorch/torchtitan 6348d93d1, "quantize
on config instead of on model"): before it, its llama3_405b config trained tensorwise float8
with `enable_fsdp_float8_all_gather` (train_configs/llama3_405b.toml, `[quantize.linear.float8]`,
and the registry that replaced the TOML on 2026-02-23, 9810191bb), so FSDP2 gathered float8
weights; torchtitan 0.3, which `target torchtitan` generates for, gathers bf16."""


FLOAT8_ALL_GATHER = r"float8[- ]all[- ]?gather|all[- ]?gathers? float8 weights|float8 weights (?:are )?all[- ]?gathered"
"""FSDP2 gathering torchao's float8 weights (torchtitan's `enable_fsdp_float8_all_gather`)."""


def titan_float8_all_gather(entry: dict) -> bool:
    """Whether a torchtitan row's float8 run gathered float8 weights: as the row states it (its
    `enable_fsdp_float8_all_gather`, the float8 all-gather affirmed or denied, weights gathered in
    bf16), else whether its run (the runtime's date, else the publication's year) predates
    `TITAN_ROWWISE`."""
    text = source_text(entry).replace("_", "-")
    option = re.search(r"enable-fsdp-float8-all-gather\W{0,4}(true|false)", text)
    if option:
        return option.group(1) == "true"
    if affirms(text, r"all[- ]?gathers? bf16 weights|weights (?:are )?all[- ]?gathered in bf16"):
        return False
    if affirms(text, FLOAT8_ALL_GATHER) or denies(text, FLOAT8_ALL_GATHER):
        return affirms(text, FLOAT8_ALL_GATHER)
    date = runtime_date(entry)
    if date:
        return date < TITAN_ROWWISE[:len(date)]
    year = source_year(entry)
    return year is not None and year < int(TITAN_ROWWISE[:4])


def target_name(family: str) -> str:
    """The target a row of this family compiles to: torchtitan runs as `target torchtitan`, plain
    PyTorch FSDP as `target torch`, Megatron-LM's and the other frameworks' fused-kernel runs as
    `target megatron`."""
    return family if family in ("torchtitan", "torch") else "megatron"


TARGET_RECIPES = {"current": "tensorwise", "mxfp8": "mxfp8", "blockwise": "blockwise"}
"""A row's Transformer Engine recipe (`fp8_recipe_of`) as the Megatron target's `fp8-recipe`
(delayed, the default, is not written)."""


def target_line(software: timing.Software, family: str, precision: str) -> str:
    """The spec's `target` statement carrying those facts (compiler/targets.py derives the
    time model's `Software` back from it), with the options in which the row differs from its
    target's defaults (`target_name`)."""
    name = target_name(family)
    if name == "torch":
        return "target torch"  # its runtime facts are `target torch`'s; it takes no options
    options = []
    if name == "torchtitan" and software.kernels == "fused":
        options.append("compile on")
    if name == "torchtitan" and precision == "fp8" and software.gather_bytes == 1:
        options.append("float8-all-gather on")
    if name == "megatron" and software.attention == "unfused":
        options.append("flash-attention off")
    if name == "megatron" and software.attention == "flash-te-fa2":
        options.append("attention-backend flash")
    if software.tp_overlap != ("backward" if name == "megatron" else "none"):
        options.append(f"tp-overlap {software.tp_overlap}")
    default_grad = 2 if name == "megatron" and precision == "fp16" else 4
    if software.grad_bytes != default_grad:
        options.append(f"grad-reduce {'bf16' if software.grad_bytes == 2 else 'fp32'}")
    if name == "megatron" and software.gather_bytes == 2 and (
            precision == "nvfp4" or (precision == "fp8" and software.fp8_scaling != "mxfp8")):
        # bf16 parameters beside their NVFP4 or fp8 casts (`targets.fp4_params`, `targets.gather_bytes`):
        # `fp4_param_gather` or `fp8_param_gather` off
        options.append("fp8-params off")
    if name == "megatron" and precision == "fp8" and software.fp8_scaling in TARGET_RECIPES:
        options.append(f"fp8-recipe {TARGET_RECIPES[software.fp8_scaling]}")
    return f"target {name}" + (f" {{ {', '.join(options)} }}" if options else "")


# ---------------------------------------------------------------------------------------------
# Layout and training settings


FP8_RECIPES = (("mxfp8", r"fp8mx|mxfp8|microscal|blockscal\w*mx|32elementblock|block32\b|block32scal|1x32(?!\d)|per32element"
                         r"|e8m0"),
               ("blockwise", r"blockwise|finegrained(?:block|scal|quant)|1x128|128x128|fp8blockscal|float8blockscal|subchannel"),
               ("current", r"fp8cs|currentscal|tensorwise|pertensorcurrent|pertensordynamic|dynamicpertensor|dynamicscal"),
               ("delayed", r"delayedscal|amaxhistory"))
"""Transformer Engine's fp8 recipes as rows write them, matched with spaces, "_", "-" and
parentheses removed ("FP8 (MX)" is "fp8mx"): MXFP8's 32-element blocks, DeepSeek-V3's 1x128 and
128x128 blocks (`Float8BlockScaling`), per-tensor current scaling, delayed scaling."""

FP8_RECIPE_OPTION = r"(?<![\w-])(?:--fp8-recipe|fp8_recipe)\W{0,4}(\w+)|(?<![\w-])fp8[- ]recipe\s*[:=]\s*[\"']?(\w+)"
"""The recipe option as a config or command line writes it: "--fp8-recipe tensorwise",
"fp8_recipe: mxfp8", "fp8_recipe='blockwise'" (Megatron-Core's `--fp8-recipe` choices)."""


def _fp8_recipes_named(words: str) -> list[str]:
    """The recipes `words` name, in `FP8_RECIPES`' order, read with the clauses that leave the
    recipe open left out ("fp8 (delayed/current scaling not stated)" names none)."""
    first, *rest = re.split(r"[(),;]", words.lower())  # a later clause that denies or compares names none
    words = " ".join(c for c in [first] + [c for c in rest if not re.search(SET_ASIDE, c)] if not re.search(LEFT_OPEN, c))
    words = re.sub(r"\bnon-\w+", " ", words)  # "the non-blockwise recipe" names no recipe
    text = re.sub(r"[\s_()-]+", "", words)  # "FP8 (MX)" = "fp8mx"
    return [name for name, pattern in FP8_RECIPES if re.search(pattern, text)]


RELEASE_NAMED = (r"(?:releases?|containers?|nemo|bridge|versions?|from|since|in|unlike|than|vs)\W{0,3}"
                 r"(?:megatron-bridge\W{0,3})?(\d\d\.\d\d)\b"
                 r"|(?<![\d.])(\d\d\.\d\d)(?:\.\d+)?(?:'s)?\W{0,3}(?:release|container|recipe|table|\+|on\b)")
"""A NeMo or Megatron-Bridge release named in words ("the 25.04 release", "NeMo 25.04's recipe",
"from 25.04 on", "Megatron-Bridge 25.09")."""


def other_release(clause: str, own: str) -> bool:
    """Whether `clause` names a release (`RELEASE_NAMED`) and not the row's own (`own`, "YY.MM"; a
    row that names none has no release of its own to match)."""
    named = {next(g for g in m.groups() if g) for m in re.finditer(RELEASE_NAMED, clause, flags=re.I)}
    return bool(named) and own not in named


def _before_others(clause: str) -> str:
    """The words of `clause` before it names other runs or releases (`OTHER_RUNS`, unless it has
    spoken of this run first: `SELF`) or a comparison (`COMPARED`)."""
    others, own = re.search(OTHER_RUNS, clause), re.search(SELF, clause)
    cuts = [m.start() for m in (re.search(COMPARED, clause), others if not own or others and others.start() < own.start()
                                else None) if m]
    return clause[:min(cuts)] if cuts else clause


def fp8_recipe_of(entry: dict) -> str:
    """Transformer Engine's fp8 recipe where the row names it (Megatron-Bridge's table: "FP8-CS",
    per-tensor current scaling; "FP8-MX", MXFP8; DeepSeek-V3's "fine-grained block-wise scaling",
    1x128 tiles and 128x128 blocks, TE's `Float8BlockScaling`), else its default, delayed scaling.
    Read from the precision field; where that names none, from the recipe option the row's words
    state ("--fp8-recipe tensorwise"), else from its notes and evidence where they name one recipe
    and no other (a note comparing two decides nothing). It decides the casts' bytes and how many
    quantize kernels each GEMM input launches (`kernels.QUANTIZE_KERNELS`)."""
    precision = _words((entry.get("layout") or {}).get("precision"))
    first, *asides = re.split(r"[(),;]", precision)
    release = container_release(entry)
    named = _fp8_recipes_named(",".join([first] + [a for a in asides if not other_release(a, release)]))
    if named:
        return named[0]
    source = entry.get("source") or {}
    rest = "\n".join(_strings(source.get("locator"), source.get("primary_evidence"), entry.get("notes"),
                               entry.get("recipe")))
    recipe = entry.get("recipe") if isinstance(entry.get("recipe"), dict) else {}
    option = re.search(FP8_RECIPE_OPTION, rest, flags=re.I)
    stated = recipe.get("fp8_recipe") or (next(g for g in option.groups() if g) if option else None)
    if stated:  # the option decides, whatever else the words name
        named = _fp8_recipes_named(str(stated))
        return named[0] if named else "delayed"
    # what a clause says after it names another run's or release's recipe ("later (25.04+) versions
    # state per-tensor current scaling") or compares with one is not this row's
    own = "\n".join(_before_others(c) for c in clauses(rest.lower()) if not other_release(c, release))
    named = _fp8_recipes_named(own)
    return named[0] if len(named) == 1 else "delayed"


NVFP4_WORDS = r"nv[- ]?fp4|fp4\W{0,3}(?:\w+\W+){0,3}?16[- ]element"
"""NVFP4 by name, or by its definition: FP4 in blocks of 16 elements (MXFP4's are 32)."""

PARENTHESISED_FIGURES = r"\bin paren(?:s|theses)\b|\bparenthesi[sz]ed\b|\bbracketed\b"
"""Words that name a table's other figures, those it prints in parentheses ("MXFP8 in parens",
"parenthesized 330 = blockwise"): what they say is those figures', not the row's."""

SET_ASIDE = (r"\b(?:no|not|without|unused|disabled|off|false|none|vs\.?|versus|unlike|instead|separate|separately|companion"
             r"|other|later|earlier|older|previous)\b|[:=]\s*(?:false|0)\b|" + PARENTHESISED_FIGURES)
"""Words that set a format named after the first clause aside: denied ("FP8 unused", "fp8=False",
"no FP8 autocast"), named in contrast ("vs FP8 in the companion row") or for a table's other
figures ("MXFP8 in parens": its parenthesised ones)."""

COMPUTE_WORDS = r"gemm|matmul|linear|layers|compute|recipe|autocast|transformer engine|\bte\b|training"
"""Words that say a format named after the first clause is the GEMMs' ("BF16 (FP8 linears via TE)")."""


def _formats(text: str) -> list[str]:
    """The GEMM formats `text` names, in the reader's order of precedence."""
    found = []
    if re.search(NVFP4_WORDS, text):
        found.append("nvfp4")
    elif re.search(r"fp4|float4|\b4[- ]?bit", text):
        found.append("fp4")
    if re.search(r"fp8|float8|\be4m3|\be5m2", text):
        found.append("fp8")
    if re.search(r"(?<!b)fp16|(?<!b)float16|\bhalf\b", text):
        found.append("fp16")
    if re.search(r"bf16|bfloat16", text):
        found.append("bf16")
    return found


def precision_of(lay: dict) -> str:
    """The GEMMs' format a row's precision field states: the format its first clause names (its
    precedence: NVFP4, fp8, fp16, bf16; "FP16 (A100 supports BF16 too)" is fp16), a later clause's
    fp8 where it says the GEMMs run in it ("BF16 (FP8 linears via TE)"), a later clause's formats
    where the first names none; never a format denied or set aside ("BF16 (FP8 unused)", "BF16
    (vs FP8 in the companion row)"); bf16 where none is named."""
    # a negated format says which is not used: "BF16 (no FP8)", "FP8 disabled", "fp16 (not bf16)"
    # (only where the denial ends its clause: "fp8 disabled in the first layers" still runs fp8)
    first, *rest = re.split(r"[(),;]", _words(lay.get("precision")))
    first = re.sub(r"\b(?:no|not|without)\s+(\w+)(?:\s+(?:training|gemms?|matmuls?|linears?|recipe|compute|autocast))?"
                   r"\s*$|(\w+)\s+(?:(?:was|were|is)\s+)?(?:disabled|off|not\s+used)\s*$", " ", first)
    kept = [c for c in rest if not re.search(SET_ASIDE, c)]
    formats = _formats(first)
    if "fp8" not in formats and any("fp8" in _formats(c) and re.search(COMPUTE_WORDS, c) for c in kept):
        formats = ["fp8"]
    formats = formats or _formats(" ".join(kept))
    if formats and formats[0] == "fp4" and re.search(NVFP4_WORDS, " ".join([first] + kept)):
        formats = ["nvfp4"]  # "FP4 (NVIDIA's 16-element block format)"
    if formats and formats[0] == "fp4":
        raise Unusable(f"precision `{lay.get('precision')}`: 4-bit GEMMs other than NVFP4 (MXFP4's 32-element "
                       "blocks), which parc does not model; read as NVFP4, fp8 or bf16 the run would be "
                       "predicted at another speed than it ran")
    return formats[0] if formats else "bf16"


MODULE_WORDS = {"core_attn": "the attention core", "layernorm": "the two norms",
                "moe_act": "the experts' activation", "moe": "the whole MoE layer (router, permutations, "
                "expert GEMMs, its dispatch and combine)",
                "mla_up_proj": "multi-head latent attention's up projections and key/value assembly",
                "mlp": "the dense layers' FFN", "shared_experts": "the shared experts"}
"""Megatron-Core's `--recompute-modules` names (`timing.MEGATRON_MODULES`, `spec.RECOMPUTE_MODULES`)."""

MODULE_SPELLINGS = ((r"\blayer[ -]norms?\b|\brms[ -]?norms?\b", "layernorm"), (r"\bmoe[ -]act(?:ivation)?s?\b", "moe_act"),
                    (r"\bexperts'? activations?\b", "moe_act"), (r"\bmla[ -]up[ -]proj(?:ections?)?\b", "mla_up_proj"),
                    (r"\bshared[ -]experts\b", "shared_experts"), (r"\bcore[ -]attn\b", "core_attn"))
"""Prose spellings of Megatron-Core's module names ("MoE activation", "layer norm")."""


def spelled_as_modules(text: str) -> str:
    """`text`, lower-cased by the caller, with each prose spelling of a module (`MODULE_SPELLINGS`)
    written as the module's own name ("rmsnorm and the mla up-projections" -> "layernorm and the
    mla_up_proj"): what `megatron_modules` and `read_stated_recompute` read modules from."""
    for words, module in MODULE_SPELLINGS:
        text = re.sub(words, module, text)
    return text


def modules_the_model_has(modules: tuple[str, ...], dims: Dims, notes: list[str]) -> tuple[str, ...]:
    """The stated modules that name a part of the model (the ones `recompute selective [...]` may
    write, E0628): a module of a part the model lacks recomputes nothing, and is noted."""
    absent = modules_of_absent_parts(modules, mla=dims.kv_lora > 0, moe=dims.moe_layers > 0,
                                     shared=dims.shared_experts > 0, dense=dims.moe_layers < dims.layers)
    kept = tuple(m for m in modules if m not in absent)
    if kept != modules:
        notes.append("--recompute-modules " + " ".join(m for m in modules if m not in kept)
                     + " stated, of parts the model has not: nothing recomputed")
    return kept


MODULE_SHORT = {"norm": "layernorm", "norms": "layernorm", "act": "moe_act", "up_proj": "mla_up_proj"}
"""The short names a table gives Megatron-Core's modules in a list of them: Megatron-Core's
ModelZoo writes `--recompute-modules layernorm moe_act` as "norm, act"; "up_proj" beside them is
MLA's up projections (Megatron-Core has no other up-projection module)."""


MAXTEXT_REMAT = {
    "minimal": ("core_attn", "layernorm"), "minimal_offloaded": ("core_attn", "layernorm"),
    "minimal_with_context": ("layernorm",), "save_dot_with_context_except_mlp": ("layernorm", "mlp"),
    "save_dot_except_mlpwi": ("core_attn", "layernorm", "mlp"), "save_dot_except_mlp": ("core_attn", "layernorm", "mlp"),
    "save_qkv_proj": ("core_attn", "layernorm", "mlp"), "qkv_proj_offloaded": ("core_attn", "layernorm", "mlp"),
}
"""MaxText's `remat_policy` names as the Megatron-Core modules whose work a layer runs again (MaxText
`layers/decoders.py`, `get_remat_policy`: each policy the named activations it saves, everything
else recomputed): `minimal` saves every weight matmul's output (`checkpoint_dots_with_no_batch_dims`)
and recomputes the attention core and the element-wise work; `save_dot_except_mlp` saves the
q/k/v and output projections, so the FFN runs again too; `save_qkv_proj` saves the q/k/v
projections alone (the attention core, the output projection, the norms and the FFN again: the
output projection is no module of Megatron-Core's and goes uncharged, `maxtext_remat`);
`save_dot_except_mlpwi` keeps the FFN's down projection, charged again with the FFN. The
`_offloaded` variants recompute what their base policy does. `full` is full recomputation;
`save_out_proj` (only the output projection kept) is read as full too."""

MAXTEXT_FULL = ("full", "save_out_proj")


def maxtext_remat(text: str) -> str | None:
    """The MaxText `remat_policy` a row's recomputation names (`MAXTEXT_REMAT`, `MAXTEXT_FULL`), or
    None: after the option's name ("remat_policy=save_qkv_proj", "remat_policy: minimal"), or a
    policy name no other runtime uses written alone ("save_dot_except_mlp")."""
    named = re.search(r"remat[_ ]policy\W{0,3}([a-z_]+)", text)
    if named and (named.group(1) in MAXTEXT_REMAT or named.group(1) in MAXTEXT_FULL):
        return named.group(1)
    alone = re.search(r"\b(" + "|".join(p for p in (*MAXTEXT_REMAT, *MAXTEXT_FULL) if "_" in p) + r")\b", text)
    return alone.group(1) if alone else None


def maxtext_note(policy: str) -> str:
    if policy in MAXTEXT_FULL:
        return f"MaxText's remat_policy {policy} (stated): every layer recomputed (`full`)"
    modules = MAXTEXT_REMAT[policy]
    unnamed = "; its output projection, no module of Megatron-Core's, is not charged again" if policy in (
        "save_qkv_proj", "qkv_proj_offloaded") else ""
    return (f"MaxText's remat_policy {policy} (stated): " + recompute_modules_text(modules)
            + f" again before the backward (`recompute selective [{', '.join(modules)}]`{unnamed})")


def megatron_modules(entry: dict) -> tuple[str, ...]:
    """The modules a row's recomputation names (Megatron-Core's selective recomputation by module,
    `--recompute-modules`, `megatron/training/arguments.py`; default `core_attn`), in the order
    written; () when it names none. Read after the option's name however it is written
    ("--recompute-modules mla_up_proj mlp", "recompute_modules: [mla_up_proj, mlp]") or after a
    leading "selective" ("selective (mla_up_proj, mlp)"). Words that are not Megatron-Core's
    module names are kept out, so "selective (the attention core)" names none. A MaxText remat
    policy names the modules it recomputes (`MAXTEXT_REMAT`)."""
    text = spelled_as_modules(str((entry.get("layout") or {}).get("recompute") or "").lower())
    if (policy := maxtext_remat(text)) is not None:
        return MAXTEXT_REMAT.get(policy, ())
    found = (re.search(r"recompute[d]?[-_ ]modules(.*)", text, flags=re.S) or re.match(r"\s*selective\b(.*)", text, flags=re.S)
             or re.match(r"\s*recompute[d]?\s*:(.*)", text, flags=re.S))
    named = [MODULE_SHORT.get(m, m) for m in re.findall(r"[a-z_]+", found.group(1) if found else text)]
    listed = re.fullmatch(r"[\s,/+&]*(?:(?:" + "|".join(MODULE_SHORT) + r"|and)[\s,/+&]*)+", text)  # "norm, act"
    if not found and not listed and not any("_" in m and m in MODULE_WORDS and m != "core_attn" for m in named):
        # without the option's name or "selective", only a module's own name (moe_act, mla_up_proj), or a
        # list of nothing but short names, says it; "core_attn" alone is Megatron-Core's default, Korthikanti
        # et al.'s selective recomputation
        return ()
    return tuple(dict.fromkeys(m for m in named if m in MODULE_WORDS))


def recompute_modules_text(modules: tuple[str, ...]) -> str:
    return ", ".join(MODULE_WORDS[m] for m in modules)


def recompute_of(lay: dict, layers: int, family: str, notes: list[str]) -> str:
    raw = lay.get("recompute")
    if isinstance(raw, bool):  # YAML's `recompute: yes` / `true`: activation checkpointing on, whole layers
        if raw:
            notes.append("recompute `true` read as full (activation checkpointing of every layer)")
        return "full" if raw else "none"
    text = _words(raw)
    if placeholder(raw) or not text:
        notes.append(UNSTATED_RECOMPUTE)
        return "none"
    if (policy := maxtext_remat(text)) is not None:
        notes.append(maxtext_note(policy))
        return "full" if policy in MAXTEXT_FULL else "selective"
    if megatron_modules({"layout": lay}):
        return "selective"  # Megatron-Core's selective recomputation by module (`software_of` names them)
    if text.startswith(("none", "no ", "off", "false", "disabled")) or text in ("no", "0"):
        return "none"
    # a negation with no kind of recomputation named: "without activation checkpointing",
    # "activation_checkpointing: False", "checkpointing off"
    # (the subject whole: "activation_checkpointing_reentrant: false" is an option of it, not it)
    subject = r"(?:activation[\s_-]*)?(?:recomput(?:e|ed|ation|ing)?|checkpoint(?:s|ed|ing)?|remat\w*|ac)(?![\w-])"
    if (re.search(r"\b(?:no|not|without)\s+" + subject + r"|\b" + subject + r"\s*[:=]?\s*(?:off|false|disabled|none)\b"
                  r"|\b" + subject + r"[^.;,]{0,20}?\b(?:(?:was|were) not used|not used|not enabled|turned off|switched off"
                  r"|disabled)\b", text)
            and not re.search(r"\b(?:selective|full|uniform|block|every|partial|core|\d+\s*(?:of\s*\d+\s*)?layers?)\b",
                              text)):
        return "none"
    leading_full = re.match(r"\W*(?:full|uniform)\b", text)  # "full (not selective)": the rest compares
    if not leading_full and re.search(r"selective[\s_-]*layer|every (?:other|2nd|second) layer", text):
        notes.append(f"selective per layer = full recomputation of every second layer (`full {layers // 2}`)")
        return f"full {layers // 2}"
    if not leading_full and "selective" in text:
        if family == "torchtitan":
            notes.append("torchtitan's per-op policy: `selective` under `target torchtitan` (every second "
                         "matmul of a block recomputed)")
        return "selective"
    if not leading_full and re.search(r"--recompute-activations\b|\brecompute[-_ ]activations\b", text):
        return "selective"  # Megatron-LM's --recompute-activations: selective (Korthikanti et al. 2022)
    if not leading_full and re.search(r"core[\s_-]*att(?:ention|n)|att(?:ention|n)[\s_-]*(?:core|only|recompute)|^(?:attention|attn)$"
                 r"|recompute\W*(?:attention|attn)\b|softmax[^.;]{0,40}?(?:attention|dropout)|attention[- ]over[- ]v\b", text):
        return "selective"  # recomputing the core attention alone is Korthikanti et al.'s selective
    if re.search(r"full|uniform|block|every (?:\w+ )?layer|all (?:\w+ )?layers|checkpoint|partial|^(?:yes|true|on|enabled)\b"
                 r"|\b(?:ac|recomput\w*|checkpoint\w*)\b[^.;]{0,20}?\b(?:every|all)\b|\b(?:every|all)\b[^.;]{0,30}?"
                 r"\b(?:recomputed|checkpointed)\b", text):
        # "full 8 layers", "16 of 80 layers"; not "1 layer per checkpoint" (a checkpoint's granularity)
        count = re.search(r"(\d+)\s*(?:of\s*\d+\s*)?layers?(?!\s*(?:(?:per|each|in each|a)\s+|/\s*)(?:checkpoint|group|block))",
                          text)
        # Megatron's `uniform` method checkpoints every group of N layers: every layer, whatever N
        if count and 0 < int(count.group(1)) < layers and "every" not in text and "uniform" not in text:
            return f"full {int(count.group(1))}"
        if "partial" in text:
            notes.append(f"recompute `{raw}` read as full (no layer count stated)")
        return "full"
    notes.append(f"recompute `{lay.get('recompute')}` read as none")
    return "none"


DISTRIBUTED_OPTIMIZER = (r"(?:overlap-)?param-gather|distributed[- ]optimi[sz]er|optimi[sz]er[- ]states? (?:are |is )?shard"
                         r"|optimi[sz]er-state shard|\bzero-?1\b|zero stage 1")
"""Megatron's distributed optimizer (ZeRO-1) named in a row's words, where its sharding field is
unstated: `--use-distributed-optimizer`, `--overlap-param-gather` (which needs it), "optimizer
states sharded over the data-parallel ranks"."""


DISTRIBUTED_OPTIMIZER_NAMES = r"distributedoptimi[sz]er|\bdist-?opt\b|distributed-fused-adam|overlap-param-sync"
"""The distributed optimizer by its class's or its options' names ("DistributedOptimizer", "dist-opt on",
NeMo 1's `distributed_fused_adam` and its `overlap_param_sync`)."""


DIST_OPT_WORDS = r"distributed[- ]optimi[sz]er|\bdist-?opt\b|use-distributed-optimizer"
"""The distributed optimizer by name, in a sharding field's words."""


HSDP_DEGREES = {
    "replicate": r"(?:dp[-_ ]?)?rep(?:licat\w*|s?)\b",
    "shard": r"(?:dp[-_ ]?)?shard(?:ing|ed|s)?\b",
}
"""The names of hybrid sharding's two degrees as a row states them: "shard dim 8, replicate dim 64",
"DP-rep 64 | DP-shard 8" (Olmo 3's Table 34), `dp_replicate: 64`, `dp_shard: 8` (OLMo-core's and
torchtitan's mesh names)."""


def hsdp_groups(lay: dict, dp: int) -> tuple[int, int] | None:
    """(replicas, ranks each replica is sharded over) of a hybrid-sharded row, as its sharding field
    and layout extras state them, where they multiply to the data-parallel degree (one stated and
    dividing it gives the other); None where neither is stated or they do not fit the degree."""
    words = _words(lay.get("zero_or_fsdp"), keyed(lay.get("extra")))
    found: dict[str, int] = {}
    for key, name in HSDP_DEGREES.items():
        said = re.search(r"(?<![\w-])" + name + r"\W{0,3}(?:dim(?:ension)?|size|degree|group)?\W{0,3}(\d+)\b", words)
        if said:
            found[key] = int(said.group(1))
    replicate, shard = found.get("replicate"), found.get("shard")
    if replicate and not shard and dp % replicate == 0:
        shard = dp // replicate
    if shard and not replicate and dp % shard == 0:
        replicate = dp // shard
    if replicate and shard and replicate * shard == dp:
        return replicate, shard
    return None


def sharding_of(lay: dict, family: str, text: str, notes: list[str]) -> str:
    raw = lay.get("zero_or_fsdp")
    if isinstance(raw, str) and re.match(r"\s*(?:none|nothing|no\w*)\s+(?:stated|given|published|reported)\b", raw, re.I):
        raw = None  # "none stated (FSDP column '/')": unstated, whatever its aside names
    if isinstance(raw, str) and re.search(r"(?:distributed[- ]optimi[sz]er|\bdist-?opt\b|optimi[sz]er[- ](?:state[- ])?shard\w*"
                                          r"|\bzero\b)[^.;,)]{0,30}?\b(?:" + LEFT_OPEN_WORDS + r")", raw, re.I) \
            and not re.search(r"\b(?:zero[- ]?[123]|fsdp(?!\W{0,3}(?:0|column|off|no)\b)|hsdp|shard(?:ed|ing)? (?:params|parameters|weights))",
                              re.sub(r"fsdp\W{0,3}(?:0|off|none|no)\b", "", raw, flags=re.I), re.I):
        # "none (FSDP 0, DDP; distributed-optimizer setting not stated)": no FSDP, and the optimizer's
        # sharding left open: the runtime's default, as an empty field
        raw = None
    plain = raw.lower().replace("_", "-") if isinstance(raw, str) else ""
    fsdp_off = bool(re.search(r"fsdp\W{0,12}?(?:col(?:umn)?\W{0,3})?(?:0|off|no|false|disabled|none|n/?a|-(?!\w)|✗|x\b)(?!\w)"
                              r"|\b(?:no|without|not)\s+(?:megatron[- ])?fsdp", plain)) or denies(plain, r"\bfsdp\b")
    if plain and family == "megatron" and affirms(text, NEMO_WORDS) and re.search(DIST_OPT_WORDS, plain) \
            and denies(plain, DIST_OPT_WORDS) and (fsdp_off or "fsdp" not in plain):
        return "none"  # "DDP; FSDP 0; distributed optimizer not used": neither
    if isinstance(raw, str) and family == "megatron" and affirms(text, NEMO_WORDS) and fsdp_off \
            and not re.search(r"zero|distributed[- ]optimi|optimi[sz]er[- ](?:state[- ])?shard|shard(?:ed|ing)|hsdp"
                              r"|fsdp\W{0,12}?(?:col(?:umn)?\W{0,3})?(?:1|on|yes|true)\b", raw, re.I):
        # NeMo's and Megatron-Bridge's tables have an FSDP column and no distributed-optimizer one:
        # "none (table FSDP=0: DDP)" says the run did not use FSDP, not that its optimizer was whole
        # (their recipes turn the distributed optimizer on): the runtime's default, as an empty field
        raw = None
    words = re.sub(r"[^a-z0-9]", "", _words(raw))  # "ZeRO-3", "zero_3", "full_shard": one spelling
    if placeholder(raw):  # unstated, or "n/a", "not stated": the runtime's default
        if family == "megatron" and affirms(text.replace("_", "-"), DISTRIBUTED_OPTIMIZER):
            notes.append("zero1 (--overlap-param-gather needs the distributed optimizer)")
            return "zero1"
        if family == "megatron" and affirms(text, NEMO_WORDS):
            notes.append("zero1 (the distributed optimizer: NeMo's and Megatron-Bridge's default)")
            return "zero1"
        if affirms(text.replace("_", "-"), DISTRIBUTED_OPTIMIZER_NAMES):
            notes.append("zero1 (the distributed optimizer named: Megatron's DistributedOptimizer, NeMo's "
                         "distributed_fused_adam)")
            return "zero1"
        if family == "torchtitan":
            notes.append("zero3 (torchtitan shards with FSDP2)")
            return "zero3"
        notes.append("no optimizer sharding (unstated)")
        return "none"
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= 3:  # a ZeRO stage: 0 is DDP
        return ("none", "zero1", "zero2", "zero3")[raw]
    # what is denied ("no distributed optimizer", "without CPU offload", "FSDP 0", "FSDP column: 0",
    # "DistributedDataParallel")
    # says nothing of the stage; a stage named anywhere else decides it
    # and what it was used in place of ("ZeRO-1 instead of ZeRO-3", "rather than FSDP")
    stated = re.sub(r"\b(?:no|without|not)\s+[\w-]+(?:\s+optimi[sz]er)?|[\w-]+(?:\s+(?:optimi[sz]er|col(?:umn)?|field))?\W{0,3}"
                    r"(?:off|false|disabled|0)\b|distributed[\s_-]*data[\s_-]*parallel"
                    r"|\b(?:instead\s+of|rather\s+than|in\s+place\s+of)\W{0,3}[\w-]+(?:\s+(?:stage\s+)?\d\b)?", " ", _words(raw))
    words = re.sub(r"[^a-z0-9]", "", stated)
    # FSDP that keeps the gathered parameters after the forward (SHARD_GRAD_OP): ZeRO-2
    kept = re.search(r"reshardafterforward(?:false|disabled|off|0)|no(?:t)?reshard(?:ing)?afterforward|notreshardedafterforward"
                     r"|(?:parameters|params)(?:kept|stay|remain)gathered", re.sub(r"[^a-z0-9]", "", _words(raw))) is not None
    aside = re.match(r"\s*none\b\W*\(([^)]*)\)", _words(raw))
    if aside and re.search(r"distributed[- ]optimi[sz]er|\bdist-?opt\b|\bzero[- ]?1\b|optimi[sz]er[- ]states? shard", aside.group(1)) \
            and not re.search(r"\b(?:no|not|without|off|disabled|predates|before|unused)\b", aside.group(1)):
        return "zero1"  # "none (distributed optimizer)": no FSDP, the optimizer's state sharded
    if re.match(r"\s*(?:none|ddp)\b\W*\((?![^)]*\b(?:zero|fsdp|shard\w*|sharded)\b)[^)]*\bpredates\b|\s*none\b\W*\(",
                _words(raw)) and not re.match(r"\s*ddp\b\W*\([^)]*\b(?:distributed|zero|shard)", _words(raw)):
        return "none"  # "none (predates the distributed optimizer)": the aside explains; "DDP (distributed optimizer)" is zero1
    zero_paper = re.search(r"\bp_?os\b(\W*\+\W*g)?(\W*\+\W*p)?", _words(raw))  # the ZeRO paper's P_os, P_os+g, P_os+g+p
    if zero_paper and re.search(r"zero", _words(raw)):
        return "zero3" if zero_paper.group(2) else "zero2" if zero_paper.group(1) else "zero1"
    if ("hsdp" in words or "hybrid" in words) and any(w in words for w in ("zero1", "stage1", "optimizerstate")) \
            and not any(w in words for w in ("zero3", "stage3", "fullshard", "zero2", "stage2")):
        # InternEvo's "Hybrid ZeRO: zero1 size 8": the optimizer state sharded over groups of the data
        # ranks, the parameters whole: zero1's traffic, over every data rank in parc
        notes.append(f"zero1 (`{raw}`: the optimizer state sharded over groups of the data ranks, read as over all "
                     "of them)")
        return "zero1"
    if "hsdp" in words or "hybrid" in words:
        return "hsdp"
    if any(w in words for w in ("zero3", "stage3", "fullshard", "fullysharded", "fullyshard")):
        return "zero2" if kept else "zero3"
    if any(w in words for w in ("zero2", "stage2", "shardgrad", "gradop")):
        return "zero2"
    if "fsdp" in words and not any(w in words for w in ("zero1", "stage1")):  # what FSDP shards, whatever it also names
        return "zero2" if kept else "zero3"
    if any(w in words for w in ("zero1", "stage1", "distributed", "distopt", "optimizershard", "shardedoptim",
                                "optimizerstate", "optimizerstatesshard")):
        return "zero1"
    if "fsdp" in words:
        return "zero2" if kept else "zero3"
    if (not words or words.startswith(("none", "no", "ddp", "false", "zero0", "stage0"))
            or stated.strip() != _words(raw).strip()):  # only denials, or plain DDP
        return "none"
    notes.append(f"sharding `{raw}` read as none")
    return "none"


def schedule_of(lay: dict, pp: int, notes: list[str], layers: int = 0) -> tuple[str, int]:
    """The pipeline schedule and virtual stages per rank: `vpp`, or the schedule's words ("vpp 4",
    "VPP=4", "virtual pipeline size 4", "--virtual-pipeline-model-parallel-size 4", "4 virtual
    stages", "4 model chunks per rank", "V=4"; "--num-layers-per-virtual-pipeline-stage 2" with the
    model's `layers` over pp ranks)."""
    text = _words(lay.get("pipeline_schedule")).replace("_", "-")
    text = re.sub(r"\b(" + "|".join(SPELLED) + r")\b", lambda m: str(SPELLED[m.group(1)]), text)  # "four virtual stages"
    # words that leave only the count open ("interleaved (virtual stages unstated)") deny no interleaving
    text = re.sub(r"\(?\s*(?:the\s+)?(?:number of\s+)?(?:virtual\s+)?(?:stages?|chunks?|vpp|degree)\s+(?:"
                  + LEFT_OPEN_WORDS + r")\s*\)?", " ", text)
    vpp = 1 if unused(lay.get("vpp")) else _int(lay.get("vpp"), "vpp")
    per_stage = (re.search(r"layers[ -]per[ -]virtual[ -](?:pipeline[ -])?stage\s*[=:]?\s*(\d+)", text)
                 or re.search(r"(\d+)\s*layers[ -]per[ -]virtual[ -](?:pipeline[ -])?stage", text))
    stated = (re.search(r"(?:\bvpp?(?:[ -](?:size|degree))?|\bv(?=\s*=)|virtual[ -]?(?:pipeline[ -]?)?(?:model[ -])?"
                        r"(?:parallel[ -])?(?:size|degree|stages?|chunks?)?|num-model-chunks)\s*[=:]?\s*(\d+)", text)
              or re.search(r"(\d+)\s*(?:virtual[ -]?(?:pipeline[ -]?)?(?:stages?|chunks?)|v-?stages?\b|(?:model[ -])?chunks?[ -]per"
                           r"|(?:interleaved\s+)?stages?\s+per\s+(?:device|rank|gpu))", text)
              or re.search(r"(?:interleav\w*|1f1b)\W[^.;]{0,12}?\bx?(\d+)\s*(?:model[ -])?chunks\b", text))
    if per_stage and layers and pp and int(per_stage.group(1)) and layers % (pp * int(per_stage.group(1))) == 0:
        stated_v = layers // (pp * int(per_stage.group(1)))
    else:
        stated_v = int(stated.group(1)) if stated and not per_stage else None
    vpp = vpp or stated_v or 1
    if re.search(r"non[ -]?interleav|not[ -]interleav|no[ -]interleav|without[ -]interleav", text) \
            or ("interleav" in text and not affirms(text, r"interleav\w*", SET_OFF + r"|\s*(?:schedule )?(?:off|not used)\b")):
        text = re.sub(r"\w*[ -]?interleav\w*", "", text)  # plain 1F1B, whatever else the words say
        vpp = 1 if stated_v else vpp
    if pp == 1:
        return "1f1b", 1
    if affirms(text, r"dual[- ]?pipe"):
        return "dualpipe-v", 2
    zero_bubble = affirms(text, r"zero[- ]?bubble|\bzb(?:1p|-h\d?|-?v)?\b|zbv")
    if zero_bubble and re.search(r"zb-?v|\bzb v\b|zero[- ]?bubble[^.;]{0,12}?\bv(?:-shaped| schedule)?\b", text):
        return "zbv", 2
    if zero_bubble:
        if vpp < 2:
            notes.append("interleaved-zb with 2 virtual stages (torch's zero-bubble schedule interleaves; "
                         "parc has no single-chunk one)")
        return "interleaved-zb", max(vpp, 2)
    gpipe = re.search(r"gpipe|\bafab\b|all[- ]forward[- ](?:then[- ])?all[- ]backward", text)
    compared = gpipe and (re.search(r"1f1b|interleav|pipedream", text[:gpipe.start()])  # "1F1B; GPipe would need more"
                          or re.search(r"(?:rather than|instead of|\bvs\.?|versus|than|unlike|compared (?:with|to))\W*"
                                       r"(?:the\s+)?$", text[:gpipe.start()]))  # "1F1B (vs GPipe)"
    if not compared and affirms(text, r"gpipe|\bafab\b|all[- ]forward[- ](?:then[- ])?all[- ]backward",
                                SET_OFF + r"|\W{0,3}(?:'s|memory)"):
        return "gpipe", 1
    if "interleav" in text or vpp > 1:
        if vpp < 2:
            notes.append("virtual stages 2 (interleaving stated, the number of virtual stages not)")
            vpp = 2
        return "interleaved-1f1b", vpp
    if not text or text in ("n/a", "none"):
        notes.append("1f1b without interleaving (no schedule or virtual stages stated)")
    return "1f1b", 1


def cp_flavour(text: str, family: str = "megatron", notes: list[str] | None = None) -> str:
    """How context-parallel ranks exchange K/V: Ulysses' all-to-all, an all-gather (Llama 3's),
    else the runtime's default (Megatron-Core's ring; torch's all-gather, `_cp_options.rotate_method`
    ALL_GATHER, which torchtitan keeps: `context_parallel_rotate_method` "allgather"), as the row's
    words state it of its context
    parallelism: Megatron-Core's `cp_comm_type` (p2p, all_gather, a2a), or the exchange named in
    the same clause as the context parallelism ("all-gather based context parallelism", "CP with
    K/V all-gathered"), never another axis's collective (the experts' all-to-all, the optimizer's
    parameter all-gather) nor a denied one ("ring, not all-gather")."""
    words = text.replace("_", "-")
    stated = re.search(r"cp-comm-type[\s\"':=]+(p2p|all-?gather|a2a\+p2p|a2a)\b", words)
    if stated:
        return {"p2p": "ring", "a2a": "all-to-all", "a2a+p2p": "all-to-all"}.get(stated.group(1), "all-gather")
    for clause in clauses(words):
        if not re.search(r"context[- ]parallel|\bcp\b|ulysses", clause):
            continue
        if affirms(clause, r"ulysses|all-to-all|\ba2a\b") and not re.search(r"\b(?:ep|expert|moe|token)s?\b[^,]{0,20}all-to-all",
                                                                           clause):
            return "all-to-all"
        if affirms(clause, r"all-?gather"):
            return "all-gather"
        if affirms(clause, r"\bring\b|\bp2p\b|alltoall-?free|round-?robin"):
            return "ring"
    default = "all-gather" if family in ("torchtitan", "torch") else "ring"
    if notes is not None:
        notes.append(f"cp flavour {default} ({'torch' if default == 'all-gather' else 'Megatron-Core'}'s default; "
                     "the exchange not stated)")
    return default


def split_of(layers: int, chunks: int) -> list[int] | None:
    """Layers per pipeline chunk when they do not divide evenly: the first and last chunks, which
    also hold the embedding and the output layer, take the fewer (Llama 3's split). Two layers
    short of the chunks, the ends hold the embedding and the loss alone (`split [0, 1, ..., 1, 0]`):
    Megatron-Core's account_for_embedding/loss_in_pipeline_split, the only way such a row ran."""
    if layers % chunks == 0:
        return None
    base, extra = divmod(layers, chunks)
    if base == 0 and layers + 2 == chunks:
        return list(empty_ends_split(layers, chunks))
    if base == 0:
        raise Unusable(f"{layers} layers cannot fill {chunks} pipeline chunks")
    order = sorted(range(chunks), key=lambda i: (i in (0, chunks - 1), abs(i - (chunks - 1) / 2)))
    sizes = [base] * chunks
    for i in order[:extra]:
        sizes[i] += 1
    return sizes


LAYOUT_SYMBOLS = "EtmL"
"""Megatron-Core's pipeline-layout symbols (`PipelineParallelLayerLayout`, core_v0.16.0
megatron/core/transformer/pipeline_parallel_layer_layout.py): embedding, decoder layer, MTP layer, loss."""


def layout_split(layout: str, chunks: int) -> tuple[list[int], int]:
    """(decoder layers per chunk, MTP layers) from a `--pipeline-model-parallel-layout` string
    ("Et*4|(t*4|)*14tmL": `|` ends a chunk, `x*n` and `(...)*n` repeat): the chunks must be the
    layout's pp x vpp, and multi-token prediction must sit in the last chunk (where parc's models
    put it)."""
    text = re.sub(r"[\s,]+", "", str(layout))  # Megatron-Core strips commas and spaces too
    for _ in range(16):  # innermost groups first
        expanded = re.sub(r"\(([^()]*)\)\*(\d+)", lambda g: g.group(1) * int(g.group(2)), text)
        if expanded == text:
            break
        text = expanded
    text = re.sub(r"([EtmL])\*(\d+)", lambda g: g.group(1) * int(g.group(2)), text)
    if any(ch not in LAYOUT_SYMBOLS + "|" for ch in text):
        raise Unusable(f"pipeline layout `{layout}` has symbols other than {LAYOUT_SYMBOLS} and |")
    stages = text.split("|")
    if len(stages) != chunks:
        raise Unusable(f"pipeline layout `{layout}` has {len(stages)} chunks, not pp x vpp = {chunks}")
    if any("m" in s for s in stages[:-1]):
        raise Unusable(f"pipeline layout `{layout}` places multi-token prediction before the last chunk "
                       "(Megatron-Core's standalone MTP stage): parc's models put it with the loss")
    order = "".join(stages)
    if "E" in order[1:] or "L" in order[:-1] or re.search(r"m.*t", order):
        raise Unusable(f"pipeline layout `{layout}` is not embedding, decoder layers, MTP, loss in order")
    return [s.count("t") for s in stages], stages[-1].count("m")


def layout_of(lay: dict, gpus: int, notes: list[str]) -> dict:
    """Degrees of every axis, with the one a row leaves out derived from its GPU count."""
    # a degree written as not used is 1; for dp not a bare placeholder (its "n/a" leaves it to the GPU count)
    deg = {a: 1 if unused(lay.get(a)) and (a != "dp" or not placeholder(lay.get(a)))
           else _int(lay.get(a), a) for a in ("tp", "pp", "dp", "cp", "ep")}
    if all(deg[a] is None for a in ("tp", "pp", "dp")):  # the layout as one string: "TP8/PP4/DP16", "tp=8, pp=4"
        written = " ".join(str(v) for v in lay.values() if isinstance(v, str))
        for axis, degree in re.findall(r"\b(tp|pp|dp|cp|ep)\s*[=:-]?\s*(\d+)\b", written, flags=re.I):
            deg[axis.lower()] = int(degree)
    for a in ("cp", "ep"):
        deg[a] = deg[a] or 1
    known = [a for a in ("tp", "pp", "dp") if deg[a] is not None]
    if len(known) == 3:
        pass
    elif len(known) == 2 and gpus:
        missing = next(a for a in ("tp", "pp", "dp") if deg[a] is None)
        rest = math.prod(deg[a] for a in known) * deg["cp"]
        if gpus % rest:
            raise Unusable(f"{gpus} GPUs are not a multiple of the published degrees ({rest})")
        deg[missing] = gpus // rest
        notes.append(f"{missing} {deg[missing]} (unstated: GPUs / the other degrees)")
    else:
        unknown = [a for a in ("tp", "pp", "dp") if deg[a] is None] + ([] if gpus else ["the GPU count"])
        raise Unusable(f"{' and '.join(unknown) if len(unknown) < 3 else ', '.join(unknown[:-1]) + ' and ' + unknown[-1]} "
                       f"{'is' if len(unknown) == 1 else 'are'} not published for this run; any layout would be a guess")
    for a, d in deg.items():
        if d == 0:
            raise Unusable(f"`{a}` is 0")
    dense = deg["tp"] * deg["pp"] * deg["dp"] * deg["cp"]
    if gpus and dense != gpus and deg["cp"] > 1 and dense == gpus * deg["cp"] and deg["dp"] % deg["cp"] == 0:
        deg["dp"] //= deg["cp"]  # a "dp" that counts the context-parallel ranks too (GPUs / (tp x pp))
        dense = gpus
        notes.append(f"dp {deg['dp']}: the published dp {deg['dp'] * deg['cp']} counts the cp ranks too")
    deg["ep_axis"] = False
    if deg["ep"] > 1 and gpus and dense * deg["ep"] == gpus and dense != gpus:
        deg["ep_axis"] = True  # dp counts the non-expert replicas only; ep is its own axis
    elif gpus and dense != gpus:
        raise Unusable(f"the published degrees multiply to {dense:,} GPUs, not the {gpus:,} the run used")
    return deg


# ---------------------------------------------------------------------------------------------
# A whole row


STATED_OPTIONS: dict[str, tuple[str, str]] = {
    # the name as a config, a command line or a note writes it: (the `recipe` key, kind of value)
    "grad_reduce_in_fp32": ("grad_reduce_in_fp32", "bool"),
    "grad_reduce_in_bf16": ("grad_reduce_in_fp32", "not"),  # Megatron-LM's `--grad-reduce-in-bf16`
    "grad_sync_dtype": ("grad_reduce_in_fp32", "dtype"),  # NeMo 1.x's distributed_fused_adam
    "tp_comm_overlap": ("tp_comm_overlap", "bool"),
    "ub_tp_comm_overlap": ("tp_comm_overlap", "bool"),  # NeMo 1.x's name
    "moe_a2a_overlap": ("moe_a2a_overlap", "bool"),
    "overlap_moe_expert_parallel_comm": ("moe_a2a_overlap", "bool"),  # Megatron-Core's name
    "moe_shared_expert_overlap": ("moe_shared_expert_overlap", "bool"),
    "moe_router_force_load_balancing": ("moe_router_force_load_balancing", "bool"),
    "moe_pad_expert_input_to_capacity": ("moe_pad_expert_input_to_capacity", "bool"),
    "fp4_param_gather": ("fp4_param_gather", "bool"),
    "fp8_dot_product_attention": ("other", "bool"),
    "cutedsl_fused_grouped_mlp": ("other", "bool"),
    "moe_token_dispatcher_type": ("moe_token_dispatcher_type", "word"),
    "moe_flex_dispatcher_backend": ("moe_flex_dispatcher_backend", "word"),
    "cuda_graph_impl": ("cuda_graph_impl", "word"),
    "recompute_granularity": ("recompute_granularity", "word"),
    "activations_checkpoint_granularity": ("recompute_granularity", "word"),  # NeMo 1.x's name
    "moe_expert_capacity_factor": ("moe_expert_capacity_factor", "number"),
    "capacity_factor": ("moe_expert_capacity_factor", "number"),  # "capacity factor 1.0" in prose
    "cpu_offloading_num_layers": ("cpu_offloading_num_layers", "number"),
    "recompute_modules": ("recompute_modules", "modules"),
    "pipeline_model_parallel_layout": ("pipeline_model_parallel_layout", "layout"),
    "pipeline_layout": ("pipeline_model_parallel_layout", "layout"),
    "pp_layout": ("pipeline_model_parallel_layout", "layout"),
    "overlap_p2p_comm": ("overlap_p2p_comm", "bool"),
    "overlap_grad_reduce": ("overlap_grad_reduce", "bool"),  # Megatron-LM's `--overlap-grad-reduce`
    "overlap_p2p_communication": ("overlap_p2p_comm", "bool"),  # Megatron-LM's `--no-overlap-p2p-communication`
}
"""The options `read_recipe` reads, as a row's text may state them instead of a `recipe`: Megatron-
Bridge's and Megatron-Core's names (words joined by `_`, `-` or a space, optionally a command
line's `--`, quoted as a JSON or Python key may be), each followed by `:`, `=`, a parenthesis or a
space and its value (quoted or bare). A yes/no option named with no value after it is on (a
command line's flag) unless a denial takes it back (`--no-...`, "no ...", "... was disabled":
`affirms`)."""

PADDED_TO_CAPACITY = (r"\bpad(?:s|ded|ding)?\b[^.;\n]{0,30}?\bcapacity\b|capacity[- ]factor[^;\n]{0,20}?\bwith "
                      r"padding\b")
"""The experts' inputs padded to their capacity, in words ("capacity factor 1.0 with padding", "pads
to capacity", "inputs are padded to capacity"): `moe_pad_expert_input_to_capacity`."""

OPTION_SEP = r"""["']?(?:\s*[:=]\s*|\s*\(\s*|\s+of\s+|\s+)["']?"""
"""Between an option's name and its value: `: `, `=`, ` (`, a space, a quote either side."""

OPTION_VALUES = {
    "bool": OPTION_SEP + r"(true|false|on|off|yes|no|enabled|disabled|1|0)\b",
    "not": OPTION_SEP + r"(true|false|on|off|yes|no|enabled|disabled|1|0)\b",
    "word": OPTION_SEP + r"([a-z][\w-]*)",
    "dtype": OPTION_SEP + r"(?:torch\.)?(bf16|bfloat16|fp32|float32)\b",
    "number": OPTION_SEP + r"(\d+(?:\.\d+)?|\.\d+)\b",
    "modules": OPTION_SEP + r"(\[[^\]]*\]|[a-z_]+(?:,?\s+[a-z_]+)*)",
    "layout": OPTION_SEP + r"((?:[EtmL0-9*|(),]|\s(?=[EtmL0-9*|(),]))+)",
}
"""The value each kind of option takes after its name (`STATED_OPTIONS`)."""

ON_WORDS = ("true", "on", "yes", "enabled", "1")


def stated_options(entry: dict) -> dict:
    """The `recipe` options (`STATED_OPTIONS`) a row's own text states, in the `recipe` field's
    form: what a transcriber who pasted the run's config into its evidence or notes wrote
    ("moe_a2a_overlap: True", "--moe-token-dispatcher-type flex", "recompute_modules=[mla_up_proj,
    mlp]"). The first statement of each option counts; a yes/no option named with no value is on,
    as a command line's flag; names it does not know of are not read."""
    lay, model = entry.get("layout") or {}, entry.get("model") or {}
    text = "\n".join(_strings(entry.get("source"), entry.get("notes"), lay.get("extra"), model.get("extra"),
                               lay.get("recompute")))  # "no AC; CPU act offload 80 layers"
    out: dict = {}
    for name, (key, kind) in STATED_OPTIONS.items():
        words = name.replace("_", "[_ -]")
        # (not Megatron-Core's `moe_expert_rank_capacity_factor`, a receive buffer for CUDA graphs)
        said = next((m for m in re.finditer(r"(?<![\w-])(?<!rank[-_ ])(--no-)?(?:--)?" + words + r"(?![\w-])", text,
                                            flags=re.I) if not set_aside(text.lower(), m)), None)
        if not said:  # not named, or named only as recommended, another run's or left open
            continue
        rest = text[said.end():]
        value = re.match(OPTION_VALUES[kind], rest, flags=0 if kind == "layout" else re.I)
        if value is None and kind in ("bool", "not"):
            # a value set in words later in the clause: "sets both a.grad_reduce_in_fp32 and
            # b.grad_reduce_in_fp32 to False"
            value = re.match(r"(?:[^.;\n]|\.(?=\w)){0,80}?\bto\s+['\"]?(true|false|on|off)\b", rest, flags=re.I)
        if value is not None and re.match(NO_EFFECT_AFTER, rest[value.end():value.end() + 80], flags=re.I):
            continue  # "stores fp8_dot_product_attention=True, but that has no effect": nothing stated
        if kind in ("bool", "not"):
            if value is not None:
                on = value.group(1).lower() in ON_WORDS
            else:  # a flag: on, unless denied ("--no-...", "no ...", "... was disabled", an aside's denial)
                on = not (said.group(1) or denied(text.lower(), said))
            if key == "other":
                if on:
                    out.setdefault("other", []).append(name)
            elif key not in out:
                out[key] = on if kind == "bool" else not on
        elif value is None or key in out:
            continue
        elif kind == "word":
            word = value.group(1).lower().replace("-", "_")
            # a granularity of null is Megatron-Core's no recomputation; another option's null says nothing
            if word not in ("null", "none") or key in ("cuda_graph_impl", "recompute_granularity"):
                out[key] = "none" if word == "null" else word
        elif kind == "dtype":  # the gradients' reduction dtype: fp32 unless bf16
            out[key] = value.group(1).lower() in ("fp32", "float32")
        elif kind == "number":
            number = float(value.group(1))
            out[key] = int(number) if number.is_integer() and key == "cpu_offloading_num_layers" else number
        elif kind == "modules":
            named = re.findall(r"[a-z_]+", value.group(1).lower())
            modules = [m for m in named if m in MODULE_WORDS]
            if modules or not named:  # "recompute_modules: []" states none; unknown names state nothing
                out[key] = modules
        else:  # a layout, its spaces and commas dropped as Megatron-Core's parser drops them
            # what follows the layout in prose ("..14tmL, EP32", "..14tmL (recipe)") is not the layout's
            written = re.sub(r"[\s,]", "", value.group(1))
            if not re.search(r"[EtmL]", written):
                continue  # "an uneven pipeline layout (94 not divisible by 24)": a count, no layout
            out[key] = written[:written.rindex("L") + 1] if "L" in written else written.rstrip("(")
    words = text.lower().replace("_", "-")  # what the text says in prose, where no option's name is used
    if "cutedsl_fused_grouped_mlp" not in out.get("other", ()) and affirms(words, FUSED_GROUPED_MLP):
        out.setdefault("other", []).append("cutedsl_fused_grouped_mlp")
    if "moe_pad_expert_input_to_capacity" not in out and affirms(words, PADDED_TO_CAPACITY):
        out["moe_pad_expert_input_to_capacity"] = True
    offloaded = re.search(OFFLOAD_WORDS, words)
    if "cpu_offloading_num_layers" not in out and offloaded and affirms(words, re.escape(offloaded.group(0))):
        out["cpu_offloading_num_layers"] = int(next(g for g in offloaded.groups() if g))
    return out


def stated_recipe(entry: dict) -> dict:
    """The `recipe` options a row states: its `recipe` field, over the same options in its words
    (`stated_options`). What `read_recipe` reads, and what an option's own value decides where a
    row's words also mention its library (`software_of`, `pp_overlap_of`)."""
    recipe = entry.get("recipe")
    return {**stated_options(entry), **(recipe if isinstance(recipe, dict) else {})}


PUBLISHED_RECIPES = Path(__file__).resolve().parent / "data"
"""Where the repository keeps the published runs it transcribed with their performance recipes
(each row's `recipe`, read from the framework's scripts at the table's commit)."""


def release_of(entry: dict) -> str:
    """The row's NeMo container release with its patch level where the row gives one ("26.02.01"):
    `container_release`'s "YY.MM", followed by the ".NN" its `release`, title or locator writes."""
    release = container_release(entry)
    if not release:
        return ""
    source = entry.get("source") or {}
    for text in (entry.get("release"), source.get("title"), source.get("locator")):
        patched = re.search(r"(?<![\d.])" + re.escape(release) + r"\.(\d{1,2})(?![\d.])", str(text or ""))
        if patched:
            return f"{release}.{patched.group(1)}"
    return release


def run_key(entry: dict) -> tuple | None:
    """What makes two rows the same published run of a NeMo or Megatron-Bridge table: the container
    release, the GPU, the model's shape, the GEMMs' format, the GPU count and every degree, the
    micro- and global batch. None where the row lacks one (nothing is matched on a guess)."""
    lay, m, hw = entry.get("layout") or {}, entry.get("model") or {}, entry.get("hardware") or {}
    try:
        numbers = tuple(_int(lay.get(k), k) for k in ("tp", "pp", "cp", "micro_batch", "global_batch"))
        shape = tuple(_int(m.get(k), k, binary=k == "hidden") for k in ("layers", "hidden"))
        experts = _int(m.get("experts"), "experts") if not placeholder(m.get("experts")) else 0
        ep = _int(lay.get("ep"), "ep") if not placeholder(lay.get("ep")) else 1
        vpp = _int(lay.get("vpp"), "vpp") if not placeholder(lay.get("vpp")) else 1
        key = (release_of(entry), gpu_key(str(hw.get("gpu") or ""), hw.get("gpu_memory_gb")), shape, experts or 0,
               precision_of(lay), gpus_of(hw), numbers, ep or 1, vpp or 1)
    except (Unusable, KeyError, TypeError, ValueError):
        return None
    if not key[0] or key[5] is None or any(v is None for v in (*shape, *numbers)):
        return None
    return key


def _repository_rows(holding: str = ""):
    """The repository's published rows (`PUBLISHED_RECIPES`' files, with `yaml_data.load_yaml`) with
    their `run_key`, from the files whose text holds `holding` only (a file without "recipe:" holds
    no recipe: not parsed); rows without a key are left out."""
    from yaml_data import load_yaml

    for path in sorted(PUBLISHED_RECIPES.glob("*.yaml")):
        text = path.read_text()
        if holding not in text:
            continue
        rows = load_yaml(text)
        for row in rows if isinstance(rows, list) else ():
            key = run_key(row) if isinstance(row, dict) else None
            if key is not None:
                yield row, key


@lru_cache(maxsize=1)
def _published_recipes() -> dict[tuple, list[dict]]:
    """The repository's rows that carry a `recipe`, by `run_key` (read once a process)."""
    found: dict[tuple, list[dict]] = {}
    for row, key in _repository_rows("recipe:"):
        if isinstance(row.get("recipe"), dict):
            found.setdefault(key, []).append(row)
    return found


def with_published_recipe(entry: dict) -> dict:
    """A NeMo or Megatron-Bridge table row that states none of its recipe's options, with the recipe
    of the same published run (`run_key`) where the repository transcribed it from the release's
    performance scripts: the table prints the layout, the scripts set the dispatcher, the overlaps,
    the recomputation and the CUDA graphs, and a transcriber of the table alone leaves them to the
    runtime's defaults (Megatron-Bridge's MoE rows then read 20-40 % slow, stop 62). One run only:
    where two of the repository's rows share the key and their recipes differ, none is taken."""
    if entry.get("recipe") or stated_options(entry) or runtime_family(entry) != "megatron" \
            or not affirms(source_text(entry), NEMO_WORDS):
        return entry
    key = run_key(entry)
    twins = _published_recipes().get(key, []) if key else []
    recipes = {repr(sorted(t["recipe"].items())) for t in twins}
    if len(recipes) != 1 or any(t.get("id") == entry.get("id") for t in twins):
        return entry
    twin = twins[0]
    model = dict(entry.get("model") or {})
    mtp = (twin.get("model") or {}).get("mtp_layers")
    if mtp and placeholder(model.get("mtp_layers")):
        # the recipe's pipeline layout places the same run's multi-token prediction layer: the row
        # leaves it unsaid, unless its words take it back ("DeepSeekV3 (w/o MTP)")
        if denies(_words(model.get("name"), model.get("arch"), model.get("extra"), entry.get("notes")).replace("w/o", "without"),
                  r"\bmtp\b|multi-token prediction"):
            return entry
        model["mtp_layers"] = mtp
    return dict(entry, model=model, recipe=twin["recipe"],
                recipe_from=f"{twin['id']} ({twin['recipe'].get('source', 'its recipe')})")


@lru_cache(maxsize=1)
def _published_virtual_stages() -> dict[tuple, list[tuple[str, int]]]:
    """The repository's pipelined rows that state their virtual stages, as (id, stages) by `run_key`
    without the virtual pipeline (read once a process, and only where a row asks)."""
    found: dict[tuple, list[tuple[str, int]]] = {}
    for row, key in _repository_rows():
        vpp = (row.get("layout") or {}).get("vpp")
        if isinstance(vpp, int) and not isinstance(vpp, bool) and vpp > 1:
            found.setdefault(key[:-1], []).append((str(row.get("id")), vpp))
    return found


def with_published_virtual_stages(entry: dict) -> dict:
    """A pipelined NeMo-family row whose table prints its virtual pipeline as not used ("NA"), with
    the virtual stages of the same published run (`run_key` but the virtual pipeline) where the
    repository holds them from the release's launch script: DGX Cloud Benchmarking 25.04's
    Nemotron-4 340B table prints "VP NA" while its nemotron/launch.sh sets VP=12 and passes `-vp`
    (stop 64; read as printed, the run's bubble is twelve times the run's). One run only: twins
    that disagree lend nothing, and a row never lends to itself."""
    lay = entry.get("layout") or {}
    if not unused(lay.get("vpp")) or runtime_family(entry) != "megatron" \
            or not affirms(source_text(entry), NEMO_WORDS):
        return entry
    key = run_key(dict(entry, layout=dict(lay, vpp=None)))
    degrees = key[6] if key else ()  # run_key's (tp, pp, cp, micro_batch, global_batch)
    if not degrees or degrees[1] < 2:
        return entry
    twins = _published_virtual_stages().get(key[:-1], [])
    if len({vpp for _, vpp in twins}) != 1 or any(rid == entry.get("id") for rid, _ in twins):
        return entry
    twin, vpp = twins[0]
    return dict(entry, layout=dict(lay, vpp=vpp), virtual_stages_from=f"{vpp} (repository row {twin})")


def read_recipe(entry: dict) -> dict:
    """A row with the facts its `recipe` states (the framework's performance recipe for the run,
    megatron_bridge_releases_moe.yaml: Megatron-Bridge's option names and values), put as the
    words and fields the reader already takes from a source. Only the options parc has physics
    for are read: bf16 gradient reduction, tp communication overlap, the ep all-to-all overlapped
    with another micro-batch (`moe_a2a_overlap` sets Megatron-Core's
    `overlap_moe_expert_parallel_comm`), forced balancing, DeepEP under the flex dispatcher, the
    recomputation, the activations offloaded to host memory (`cpu_offloading_num_layers`:
    `train { offload-activations N }`), and an expert capacity with padding (`moe_expert_capacity_factor`,
    `moe_pad_expert_input_to_capacity`) or a full-iteration CUDA graph, either of which keeps the
    token counts on the GPU (`Software.moe_host_sync` off), and Transformer Engine's fused grouped
    MLP, which adds the experts' biases and clamps their GLU inside its kernels
    (`Software.expert_bias`, `Software.expert_clamp` off), and Transformer Engine's FP8 attention
    (`fp8_dot_product_attention` in `other`: `Software.attention_fp8`), and HybridEP under the flex
    dispatcher (`Software.ep_dispatcher` "hybridep"), and NVFP4 weights kept in bf16
    (`fp4_param_gather` False: `target megatron { fp8-params off }`). The others (partial CUDA graphs, fused
    kernels) are kept in the row for the record. The options its text states (`stated_options`) are read
    as the same recipe, the `recipe` field first. A row that states none of them is unchanged."""
    r = stated_recipe(entry)
    if not r:
        return entry
    said = []
    if r.get("grad_reduce_in_fp32") is False:
        said.append("grad-reduce-in-bf16 (recipe: grad_reduce_in_fp32 False)")
    if r.get("tp_comm_overlap"):
        said.append("tp-comm-overlap (recipe)")
    if r.get("moe_a2a_overlap"):
        said.append("overlap-moe-expert-parallel-comm (recipe: moe_a2a_overlap)")
    if r.get("moe_shared_expert_overlap"):
        said.append("moe-shared-expert-overlap (recipe)")
    if r.get("moe_router_force_load_balancing"):
        said.append("moe-router-force-load-balancing (recipe)")
    if r.get("moe_token_dispatcher_type") == "flex" and r.get("moe_flex_dispatcher_backend") == "deepep":
        said.append("DeepEP under the flex dispatcher (recipe)")
    if r.get("moe_token_dispatcher_type") == "flex" and r.get("moe_flex_dispatcher_backend") == "hybridep":
        said.append("HybridEP under the flex dispatcher (recipe)")
    if r.get("moe_expert_capacity_factor") and r.get("moe_pad_expert_input_to_capacity"):
        said.append(f"pad-expert-input-to-capacity (recipe: capacity factor {r['moe_expert_capacity_factor']})")
    if r.get("fp4_param_gather") is False:
        said.append("bf16 parameters (recipe: fp4_param_gather False)")
    if r.get("cuda_graph_impl") == "full_iteration":
        said.append("full-iteration-cuda-graph (recipe: cuda_graph_impl full_iteration)")
    if "fp8_dot_product_attention" in (r.get("other") or ()):
        said.append("fp8-dot-product-attention (recipe: fp8_dot_product_attention)")
    if "cutedsl_fused_grouped_mlp" in (r.get("other") or ()):
        said.append("fused-grouped-mlp (recipe: cutedsl_fused_grouped_mlp)")
    lay, model = dict(entry.get("layout") or {}), dict(entry.get("model") or {})
    if placeholder(lay.get("recompute")) or not str(lay.get("recompute")).strip():  # "not stated", "-": the recipe's
        if r.get("recompute_modules"):
            lay["recompute"] = "--recompute-modules " + " ".join(r["recompute_modules"])
        elif r.get("recompute") == "none" or r.get("recompute_modules") == []:
            lay["recompute"] = "none (recipe)"
        elif r.get("recompute_granularity") == "selective":  # NeMo 1.x: Megatron-Core's core-attention recompute
            lay["recompute"] = "selective (recipe: activations_checkpoint_granularity selective)"
        elif r.get("recompute_granularity") == "full":  # every layer, Megatron-Core's uniform method
            lay["recompute"] = "full (recipe: recompute granularity full)"
        elif r.get("recompute_granularity") == "none":  # null: Megatron-Core recomputes nothing
            lay["recompute"] = "none (recipe: recompute granularity null)"
    if r.get("pipeline_model_parallel_layout") and not lay.get("pipeline_layout"):
        lay["pipeline_layout"] = r["pipeline_model_parallel_layout"]
    if r.get("cpu_offloading_num_layers") and not lay.get("offload_activations"):
        lay["offload_activations"] = int(r["cpu_offloading_num_layers"])
        said.append(f"activations of {lay['offload_activations']} layers offloaded to host memory "
                    f"(recipe: cpu_offloading_num_layers {lay['offload_activations']})")
    if r.get("moe_expert_capacity_factor") and "capacity_factor" not in model:
        model["capacity_factor"] = r["moe_expert_capacity_factor"]
    if (model.get("expert_bias") or model.get("activation_clamp")) \
            and "cutedsl_fused_grouped_mlp" in (r.get("other") or ()):
        # Megatron-Bridge's `cutedsl_fused_grouped_mlp` turns on `use_transformer_engine_op_fuser`
        # (scripts/performance/utils/overrides.py at c270efc505): `TEGroupedMLP._fused_forward`
        # runs Transformer Engine's fused ops, whose grouped linear adds the bias itself and whose
        # `ScaledClampedQGeGLU` clamps inside the activation; neither `_apply_bias` nor the eager
        # clamp runs (megatron/core/transformer/moe/experts.py, Megatron-LM addc601)
        model["expert_bias"] = False
        model["activation_clamp"] = None
        said.append("experts' bias and clamp inside Transformer Engine's fused grouped MLP "
                    "(recipe: cutedsl_fused_grouped_mlp)")
    # the row's own notes kept one a line (never a list's repr), the recipe's words after them
    notes = _strings(entry.get("notes")) + ([", ".join(said)] if said else [])
    return dict(entry, notes=notes or None, layout=lay, model=model)


MODEL_FACTS: dict[str, tuple[str, tuple[str, ...]]] = {
    # the model field the reader takes: (kind of value, other names a config gives it)
    "kv_lora_rank": ("int", ()),
    "q_lora_rank": ("int", ()),
    "qk_rope_head_dim": ("int", ()),
    "v_head_dim": ("int", ()),
    "mtp_layers": ("int", ("mtp_num_layers", "num_nextn_predict_layers")),
    "window": ("int", ("sliding_window", "window_size")),
    "full_attention_every": ("int", ()),
    "expert_bias": ("bool", ("add_bias_linear",)),
    "activation_clamp": ("float", ("activation_func_clamp_value", "swiglu_limit")),
    "yarn_factor": ("float", ("yarn_rotary_scaling_factor", "rope_scaling_factor")),
    "yarn_mscale": ("float", ()),
    "yarn_mscale_all_dim": ("float", ()),
    "capacity_factor": ("float", ("moe_expert_capacity_factor",)),
    "shared_experts": ("int", ("n_shared_experts", "num_shared_experts", "moe_shared_experts")),
    "dense_layers": ("int", ("first_k_dense_replace", "num_dense_layers")),
    "top_k": ("int", ("num_experts_per_tok", "moe_router_topk", "topk")),
    "kv_heads": ("int", ("num_key_value_heads", "num_query_groups")),
}
"""The model's facts beyond the shared schema's fields that the reader takes (`model_block`,
`software_of`), and the names Megatron-Core's and Hugging Face's configs give them
(`num_nextn_predict_layers`, `sliding_window`, `swiglu_limit`), as a row may state them in
`model.extra`, the schema's place for them, instead of as fields of their own."""

FACT_VALUES = {"int": r"(\d+)\b", "float": r"(\d+(?:\.\d+)?|\.\d+)", "bool": r"(true|false|yes|no|on|off)\b"}

FACT_WORDS: dict[str, tuple[str, ...]] = {
    # the same facts in prose, in a model's `extra` or `arch`: patterns whose first group holds the value
    "shared_experts": (r"(\d+|one|two) shared experts?\b", r"routed \+ (\d+) shared", r"\((one|two) shared experts?\)"),
    "dense_layers": (r"first (\d+) layers (?:are |being )?dense", r"(\d+) dense layers", r"moe[-_ ]layer[-_ ]freq\W+\[0\]\s*\*\s*(\d+)"),
    "top_k": (r"(\d+) (?:routed )?(?:of \d+ )?experts per token", r"\btop[- ]?(\d+)\b"),
    "window": (r"sliding[-_ ]window(?:[-_ ]attention)?\W{0,3}\(?\s*(\d+)", r"window[-_ ]size\W{0,3}(\d+)", r"\bswa\W{0,3}(\d+)",
               r"(\d+)[-_ ]tokens?[-_ ](?:sliding[-_ ]|local[-_ ])?window"),
    "full_attention_every": (r"window[-_ ]attn[-_ ]skip[-_ ]freq\W{0,3}(\d+)",),
    "yarn_factor": (r"yarn\W{0,3}\(?factor\W{0,3}(\d+(?:\.\d+)?)", r"yarn\W{0,3}x\s*(\d+(?:\.\d+)?)",
                    r"type\W{1,5}yarn\W{1,5}factor\W{1,5}(\d+(?:\.\d+)?)",
                    r"yarn\b[^.;\n]{0,30}?\bfactor\W{0,3}(\d+(?:\.\d+)?)"),
    "capacity_factor": (r"(?<!rank[-_ ])capacity factor (?:of )?(\d+(?:\.\d+)?)", r"\bcf\W{0,3}(\d+(?:\.\d+)?)"),
    "kv_heads": (r"\bgqa[- ]?(\d+)\b", r"(\d+) (?:kv|key[- ]value) heads", r"num[-_ ]key[-_ ]value[-_ ]heads\W{1,3}(\d+)"),
    "expert_bias": (r"experts?'? (?:\w+ ){0,2}(?:carry|have|with|use) (?:linear )?bias(?:es)?\b",
                    r"(?:linear )?bias(?:es)? (?:in|on) the (?:routed )?experts?",
                    r"\bbiased linears?\b|linear layers? with bias(?:es)?\b|add[-_ ]bias[-_ ]linear\W{0,3}(?:true|1)\b"),
}
"""Prose forms of `MODEL_FACTS`: "1 shared expert", "the first 3 layers dense", "8 of 256 experts per
token", "sliding-window attention (128)", "128-token sliding-window attention", "YaRN (factor 32)",
"capacity factor of 1.25"."""

ALTERNATE_LAYERS = r"(?:on |in )?(?:alternate|every other|every second) layers?|alternating"
"""A window that applies to every other layer: full attention every second layer (gpt-oss)."""

WINDOW_WORDS = r"window|\bswa\b|sliding[-_ ]attention"
"""The words that name a sliding attention window in a model's prose."""

WINDOWED_SHARE = (r"(\d+)\s*(?:/|of every|out of every|out of|in every|of each)\s*(\d+)\s*"
                  r"(?:of\s+(?:the\s+|all\s+)?)?layers?\b")
"""A share of the layers, "3/4 of layers", "3 of every 4 layers", "3 out of 4 layers": with a
window named beside it, the windowed layers' share."""

ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8}

FULL_EVERY = (r"(?:full|global)[- ]attention\s+(?:on\s+|in\s+|at\s+|for\s+)?(?:every|each)\s+"
              r"(\d+)(?:st|nd|rd|th)?[- ]?(?:\s|-)*layers?|every\s+(\d+)(?:st|nd|rd|th)?\s+layers?\s+"
              r"(?:is\s+|uses\s+|has\s+|keeps\s+)?(?:full|global)")
"""Full attention every N-th layer, "full attention every 4th layer", "every 4th layer uses full
attention" (ordinal words are read as their numbers first, `ORDINALS`)."""


def full_attention_period(prose: str) -> int | None:
    """Every how many layers a windowed model keeps full causal attention, from its prose: (N - 1)
    of every N layers windowed ("SWA on 3/4 of layers", "sliding-window attention on 3 of every 4
    layers": Olmo 3's [4096, 4096, 4096, full] pattern), a window list that ends in full attention
    ("[4096, 4096, 4096, -1]", OLMo-core's `SlidingWindowAttentionConfig.pattern`), or "full
    attention every 4th layer". None where the prose says none of these, or a share that is not
    one full layer in N (a spec's `full-attention-every N` states no other pattern)."""
    text = re.sub(r"\b(" + "|".join(ORDINALS) + r")\b", lambda m: str(ORDINALS[m.group(1)]), prose.lower())
    for clause in re.split(r"[.;\n]", text):
        if not re.search(WINDOW_WORDS, clause):
            continue
        for share in re.finditer(WINDOWED_SHARE, clause):
            windowed, every = int(share.group(1)), int(share.group(2))
            if every >= 2 and windowed == every - 1:
                return every
        pattern = re.search(r"\[((?:\s*\d+\s*,)+)\s*(?:-1|none|null|full)\s*\]", clause)
        if pattern:
            sizes = {e.strip() for e in pattern.group(1).split(",") if e.strip()}
            if len(sizes) == 1:
                return pattern.group(1).count(",") + 1
    for said in re.finditer(FULL_EVERY, text):
        every = int(said.group(1) or said.group(2))
        if every >= 2:
            return every
    return None


DEGREE_NAMES: dict[str, str] = {
    "tp": r"tensor[-_ ]model[-_ ]parallel[-_ ]size|tensor[-_ ]parallel(?:ism)?(?:[-_ ](?:size|degree))?|tp(?:[-_ ](?:size|degree))?",
    "pp": r"pipeline[-_ ]model[-_ ]parallel[-_ ]size|pipeline[-_ ]parallel(?:ism)?(?:[-_ ](?:size|degree))?"
          r"|pp(?:[-_ ](?:size|degree))?",
    "vpp": r"virtual[-_ ]pipeline[-_ ]model[-_ ]parallel[-_ ]size|virtual[-_ ]pipeline(?:[-_ ](?:size|degree|stages))?"
           r"|vpp?(?:[-_ ](?:size|degree))?",
    "dp": r"data[-_ ]parallel(?:ism)?(?:[-_ ](?:size|degree))?|dp(?:[-_ ](?:size|degree))?",
    "cp": r"context[-_ ]parallel(?:ism)?(?:[-_ ](?:size|degree))?|cp(?:[-_ ](?:size|degree))?",
    "ep": r"expert[-_ ]model[-_ ]parallel[-_ ]size|expert[-_ ]parallel(?:ism)?(?:[-_ ](?:size|degree))?"
          r"|ep(?:[-_ ](?:size|degree))?",
    "micro_batch": r"micro[-_ ]?batch(?:[-_ ]size)?|mbs",
    "global_batch": r"global[-_ ]batch(?:[-_ ]size)?|gbs",
}
"""The names a row's words give a layout field (`read_stated_degrees`): Megatron-Core's and NeMo's
option names (`context_parallel_size`, `--micro-batch-size`), the words ("context parallelism",
"pipeline-parallel degree") and the tables' abbreviations ("CP", "VP", "MBS", "GBS"); a virtual
pipeline's or the experts' own degree is never the pipeline's or the dense layers' ("virtual
pipeline parallel size", "expert tensor parallel size", `expert_tp`)."""

DEGREE_VALUE = (r"\s*[\"']?\s*(?:[:=]|\bof\b|\bis\b|\()?\s*[\"']?\s*(\d+)"
                r"(?!\d|[.,]\d|\s*[kmb](?![a-z])|\s*(?:[-–]|to\b)\s*\d|\s*(?:tokens?|gpus?|nodes?|layers?)\b)")
"""A degree after its name: "CP 2", "CP=2", "cp: 2", "TP8", "context parallelism of 2",
`--context-parallel-size 2`, `"context_parallel_size": 2`; never a range ("2-4"), a scaled figure
("4M") or a count of something else ("8 GPUs")."""


def read_stated_degrees(entry: dict) -> dict:
    """A row with the layout fields it leaves empty (`layout.cp` null, no `micro_batch`) filled from
    its own words, where those state the field (`DEGREE_NAMES`: "CP=2" in a note, "TP 1, CP 2, DP 4"
    in the locator, `--micro-batch-size 1` in quoted evidence, "4-way context parallelism"). A
    field the row fills is kept, and "n/a" is a degree of 1, never a gap. A field is read only
    where every mention of it gives the same value (two runs described in one note state neither,
    nor does "vp 5 in the config, no vp in the table"), and none is
    kept where the row then cannot be read (the degrees disagree with its GPU count, the batch with
    its replicas: `row_spec`). Each one read is listed among the run's assumptions."""
    lay = entry.get("layout") or {}
    open_fields = [f for f in DEGREE_NAMES if placeholder(lay.get(f)) and not unused(lay.get(f))]
    if not open_fields:
        return entry
    text = "\n".join(_strings(entry.get("source"), entry.get("notes"), lay.get("extra"),
                               (entry.get("model") or {}).get("extra")))
    found: dict[str, int] = {}
    for field_name in open_fields:
        named = (r"(?<![\w-])(?<!virtual[-_ ])(?<!expert[-_ ])(?:--)?(?:" + DEGREE_NAMES[field_name]
                 + r")(?![a-z])")
        values = set()
        for mention in re.finditer(named, text, flags=re.I):
            after = re.match(DEGREE_VALUE, text[mention.end():], flags=re.I)
            way = re.search(r"(?<![\w.])(\d+)[- ]way\s+$", text[max(0, mention.start() - 12):mention.start()])
            values.add(int(after.group(1)) if after else int(way.group(1)) if way else None)
        if len(values) == 1 and None not in values:  # every mention states it, and the same
            found[field_name] = values.pop()
    if not found:
        return entry
    said = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in found.items())
    return dict(entry, layout=dict(lay, **found), stated_degrees=said)


GPU_MODEL = r"(?:[abhv]|gb|mi)\d{3}x?s?\b"
"""A GPU counted by its model's name: "1536 A100s", "2048 H800s", "128 B200 GPUs", "64 GB200"."""

GROUP_WORDS = r"(?:nodes?|servers?|trays?|hosts?|machines?|systems?|boxes)"
"""What a row counts GPUs in groups of: "64 nodes", "32 DGX systems", "18 trays"."""

PER_GROUP = r"(?:each|apiece|per\s+" + GROUP_WORDS + r"|/\s*" + GROUP_WORDS + r")"
"""The words that make a GPU count a group's, not the job's: "8 GPUs each", "8 per node", "8/node"."""


def gpus_of(hw: dict) -> int | None:
    """The row's GPU count: `num_gpus` as a number, "16K GPUs" (16,384), "192 nodes x 8 GPUs", "64
    nodes of 8 GPUs", "64 trays x 4", "64 nodes (8 GPUs each)", "32 DGX nodes, 8 GPUs per node",
    or the total written beside them ("64 x 8 = 512", "384 nodes (3072 GPUs)", "512 GPUs (64
    nodes x 8)"). A total is a count of GPUs no group word qualifies; a group's count ("8 GPUs
    each") multiplies the groups, never stands for the job."""
    raw = str(hw.get("num_gpus") or "")
    grouped = re.search(GROUP_WORDS + r"|[x×*]", raw, flags=re.I)
    stated = re.search(r"(?:=\s*|\(\s*|^\s*|[,/;]\s*)(\d[\d,]*)\s*(?:gpus?\b|" + GPU_MODEL + r"|\)|$)(?!\s*"
                       + PER_GROUP + ")", raw, flags=re.I)
    if stated and grouped and int(stated.group(1).replace(",", "")) > 0:  # "64 x 8 = 512", "(3072 GPUs)"
        return int(stated.group(1).replace(",", ""))
    groups = re.search(r"(\d[\d,]*)\s*(?:(?!gpus?\b|per\b)[a-z][\w-]*\s+){0,2}" + GROUP_WORDS + r"\b", raw, flags=re.I)
    each = (re.search(r"(\d+)\s*[x×*]?\s*(?:(?!" + GROUP_WORDS + r")[a-z][\w-]*\s+)?(?:gpus?\s*|accelerators?\s*|devices?\s*)?"
                      + PER_GROUP + r"(?![\w])", raw, flags=re.I)  # "8 GPUs each", "8x H100 each", "8 per node"
            or re.search(GROUP_WORDS + r"\W*(?:each\s+)?(?:of|with|having|x|×|\*)\s*(\d+)", raw, flags=re.I))
    if groups and each and groups.start(1) != each.start(1):  # "64 nodes (8 GPUs each)", "64 nodes of 8 GPUs"
        return int(groups.group(1).replace(",", "")) * int(each.group(1))
    counted = re.fullmatch(r"\s*(\d+)\s*[x×*]\s*(\d+)(?:\s*gpus?)?\s*", raw, flags=re.I)
    if counted:  # "256x8", "64 * 4 GPUs"
        return int(counted.group(1)) * int(counted.group(2))
    boxes = boxes_of(raw, hw.get("gpus_per_node"))
    if boxes:
        return boxes
    return _int(hw.get("num_gpus"), "num_gpus", binary=True)  # "16K GPUs" is 16,384


BOX = r"[dh]gx[-\s]?(?:a100|h100|h200|h800|h20|b200|b300)\b"
"""A server named by its product, which holds 8 GPUs: "DGX B200", "HGX H100", "DGX-A100"."""

RACK = r"(?:gb200|gb300)?[-\s]?nvl(\d+)(?:\s+(?:racks?|systems?|domains?))?"
"""A rack named by its NVLink domain, which holds that many GPUs: "GB200 NVL72 racks"."""


def boxes_of(raw: str, per_group) -> int | None:
    """GPUs counted by the groups that hold them, where no count per group is written beside them
    (`gpus_of` reads those): "4 DGX B200 systems" and "one DGX B200" (8 each, as every DGX and HGX
    of these parts holds), "2 GB200 NVL72 racks" (72 each), "64 nodes" with the row's
    `gpus_per_node`. None where the field counts no group, or a plain group ("nodes") whose size the
    row does not state. A digit inside a part's name ("B200") is never a count."""
    count = r"(?<![\w.])(\d[\d,]*|" + "|".join(SPELLED) + r")\s*[x×]?\s*(?:[a-z][\w-]*\s+){0,2}?"
    rack = re.search(count + RACK, raw, flags=re.I)
    box = re.search(count + BOX, raw, flags=re.I)
    group = re.search(count + GROUP_WORDS + r"\b", raw, flags=re.I)
    found = rack or box or group
    if not found:
        return None
    n = found.group(1).lower().replace(",", "")
    n = SPELLED[n] if n in SPELLED else int(n)
    if rack:
        return n * int(rack.group(2))
    stated = per_group if isinstance(per_group, int) and not isinstance(per_group, bool) and per_group > 0 else None
    if box:
        return n * (stated or 8)
    return n * stated if stated else None


RECOMPUTE_WORDS = (r"(?:full|selective|uniform)[-_ ](?:activation[-_ ])?(?:recomput\w*|checkpoint\w*)"
                   r"|(?:recomput\w*|checkpoint\w*)\b[^.;\n]{0,30}?\b(?:every|all|each) (?:\w+ )?layers?"
                   r"|(?:every|all|each) (?:\w+ )?layers?(?:'s)?\b[^.;\n]{0,30}?\b(?:recomputed|checkpointed)"
                   r"|--checkpoint-activations|--recompute-activations|--recompute-granularity[\s=:]+\w+"
                   r"|activations?-checkpoint-method[\s=:]+uniform"
                   r"|recomput\w*\s+(?:all|every)\s+(?:of\s+)?(?:the\s+)?(?:layers'\s+)?activations"
                   r"|(?:all|every)\s+(?:of\s+)?(?:the\s+)?activations\s+(?:were\s+|are\s+)?recomputed")
"""Recomputation stated in words where the row's `recompute` field is empty: "full activation
checkpointing", "every layer's activations recomputed", `--checkpoint-activations`,
`--recompute-granularity full`. Not its absence ("without activation checkpointing"), which an
empty field already reads as, and which a note as often says of another run of the source ("8K
sequences pre-trained without activation checkpointing" beside a 128K row)."""


def read_stated_recompute(entry: dict) -> dict:
    """A row whose `recompute` field is empty, with the recomputation its own words state, read
    from its notes, evidence and locator, put in the field as those words say it, for
    `recompute_of` to read as it reads the field: the modules a clause says are recomputed ("the
    report states recomputation of RMSNorm and the MLA up-projections": `--recompute-modules
    layernorm mla_up_proj`), else one of `RECOMPUTE_WORDS`; a row whose words state none, or two
    different ones, is unchanged. The field, where filled (or filled from the recipe), wins."""
    lay = entry.get("layout") or {}
    if not placeholder(lay.get("recompute")):
        return entry
    source = entry.get("source") or {}
    text = "\n".join(_strings(source.get("locator"), source.get("primary_evidence"), entry.get("notes"))).lower()
    for clause in clauses(text):  # modules named beside "recompute": Megatron-Core's selective
        mention = re.search(r"recomput\w*", clause)
        if not mention or denied(clause, mention) or set_aside(clause, mention):
            continue
        modules = tuple(dict.fromkeys(m for m in re.findall(r"[a-z_]+", spelled_as_modules(clause))
                                      if m in MODULE_WORDS and m != "core_attn"))
        if modules:
            return dict(entry, layout=dict(lay, recompute="--recompute-modules " + " ".join(modules)
                                           + " (stated in the row's words)"))
    said = {m.group(0) for m in re.finditer(RECOMPUTE_WORDS, text) if not denied(text, m) and not set_aside(text, m)}
    if len(said) != 1:
        return entry
    words = said.pop()
    return dict(entry, layout=dict(lay, recompute=f"{words} (stated in the row's words)"))


def read_model_extra(entry: dict) -> dict:
    """A row with the model facts (`MODEL_FACTS`) its `model.extra` states, a mapping or a text
    ("kv_lora_rank: 512, sliding_window 128"), or its `extra` and `arch` say in prose
    (`FACT_WORDS`), put as the model's own fields; a field the row already has is kept. A row
    whose words state none of them is unchanged."""
    model = entry.get("model") or {}
    extra = model.get("extra")
    # a mapping's nested values too ("rope_scaling: {rope_type: yarn, factor: 32}"), as text
    extra_text = str(keyed(extra) or "")
    prose = "\n".join(x for x in (extra_text, str(model.get("arch") or "")) if x).lower()
    if not extra and not prose and named_model(model) is None:
        return entry
    found: dict = {}
    for key, (kind, aliases) in MODEL_FACTS.items():
        if not placeholder(model.get(key)):
            continue
        for pattern in FACT_WORDS.get(key, ()):
            said = re.search(pattern, prose)
            if said and affirms(prose, re.escape(said.group(0))):
                if kind == "bool":  # a statement of the fact, no value: on
                    found[key] = True
                    break
                value = NUMBERS.get(said.group(1), said.group(1))
                found[key] = int(float(value)) if kind == "int" else float(value)
                break
        if key in found or not extra:
            continue
        for name in (key, *aliases):
            if isinstance(extra, dict):
                value = next((v for k, v in extra.items()
                              if re.sub(r"[ -]", "_", str(k).strip().lower()) == name), None)
                if isinstance(value, str):
                    said = re.match(FACT_VALUES[kind], value.strip(), flags=re.I)
                    value = said.group(1) if said else None
            else:
                said = re.search(r"(?<![\w-])" + name.replace("_", "[_ -]") + r"(?![\w-])\s*[:=]?\s*"
                                 + FACT_VALUES[kind], str(extra), flags=re.I)
                value = said.group(1) if said else None
            if value is None or isinstance(value, (dict, list)):
                continue
            if kind == "bool":
                found[key] = value if isinstance(value, bool) else str(value).lower() in ("true", "yes", "on")
            else:
                found[key] = int(float(value)) if kind == "int" else float(value)
            break
    named = named_model_facts(model, found)
    found.update(named)
    window = found.get("window") or model.get("window")
    if window and placeholder(model.get("full_attention_every")) and "full_attention_every" not in found:
        # "sliding window 128 on alternate layers", else "sliding window 4096 on 3 of every 4 layers"
        alternate = re.search(r"(?:" + WINDOW_WORDS + r")[^.;]{0,40}?(?:" + ALTERNATE_LAYERS + r")|(?:"
                              + ALTERNATE_LAYERS + r")[^.;]{0,40}?(?:" + WINDOW_WORDS + r")", prose)
        period = 2 if alternate else full_attention_period(prose)
        if period:
            found["full_attention_every"] = period
    if not found:
        return entry
    read = dict(entry, model=dict(model, **found))
    if named:
        read["named_model_facts"] = (", ".join(f"{k.replace('_', ' ')} {v}" for k, v in named.items())
                                     + f" (unstated: {named_model(model)[1]})")
    return read


FACT_DENIALS = {
    "window": r"sliding[- ]window|\bswa\b|\bwindow\w*", "full_attention_every": r"sliding[- ]window|\bswa\b|\bwindow\w*",
    "expert_bias": r"bias(?:es)?\b", "activation_clamp": r"clamp\w*|swiglu[-_ ]limit", "yarn_factor": r"\byarn\b",
}
"""The words whose denial in a row's model text ("no sliding window", "experts without biases",
"RoPE (no YaRN scaling)") takes a named model's fact (`NAMED_MODELS`) back."""


def named_model_facts(model: dict, found: dict) -> dict:
    """The `NAMED_MODELS` facts beyond the shared schema (not its `vocab`) of the model the row
    names that it leaves unstated (neither its fields nor its words, `found`, give them) and does
    not deny (`FACT_DENIALS`; "full attention in every layer" denies the window)."""
    named = named_model(model)
    if named is None:
        return {}
    words = _words(model.get("arch"), model.get("extra")).replace("_", "-")
    every_layer = re.search(r"full attention (?:in|on|at) (?:every|all|each) layers?|no (?:sliding[- ])?window", words)
    return {k: v for k, v in named[0].items()
            if k != "vocab" and placeholder(model.get(k)) and k not in found
            and not (k in FACT_DENIALS and denies(words, FACT_DENIALS[k]))
            and not (k in ("window", "full_attention_every") and (every_layer or unused(model.get("window"))))}


def row_spec(entry: dict, others: list[dict] = ()) -> Run | Skipped:
    """The .par text of one published run, with the facts it had to assume; never raises.
    `others`, the rest of the file, may lend a missing global batch (`sibling_micro_batches`)."""
    try:
        read = read_stated_recompute(read_recipe(with_published_recipe(with_published_virtual_stages(
            read_model_extra(entry)))))
        stated = read_stated_degrees(read)
        try:
            return _row_spec(stated, others)
        except Unusable:
            if stated is read:
                raise
            return _row_spec(read, others)  # its words describe another layout than its fields
    except Unusable as e:
        return Skipped(str(entry.get("id", "?")), str(e))
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError) as e:
        return Skipped(str(entry.get("id", "?")), f"the row does not follow the schema ({type(e).__name__}: {e})")


def sibling_micro_batches(entry: dict, others: list[dict]) -> tuple[int, str] | None:
    """Micro-batches per pipeline from another run of the same model and model-parallel layout
    that publishes its global batch (Korthikanti et al. quote the 2,240-GPU 530B run's
    throughput without its batch; the 280-GPU run of the same configuration states it)."""
    m, lay = entry.get("model") or {}, entry.get("layout") or {}
    same = ("layers", "hidden", "heads", "seq_len")
    title = (entry.get("source") or {}).get("title")
    for other in sorted(others, key=lambda o: (o.get("source") or {}).get("title") != title):
        om, ol = other.get("model") or {}, other.get("layout") or {}
        if other is entry or any(om.get(k) != m.get(k) for k in same):
            continue
        try:
            if (_int(ol.get("tp"), "tp"), _int(ol.get("pp"), "pp")) != (_int(lay.get("tp"), "tp"), _int(lay.get("pp"), "pp")):
                continue
        except Unusable:
            continue
        try:
            seq = _int(om.get("seq_len"), "seq_len", binary=True)
            batch, dp = global_batch_sequences(ol.get("global_batch"), seq, []), _int(ol.get("dp"), "dp")
            micro = _int(ol.get("micro_batch"), "micro_batch") or 1
        except Unusable:
            continue
        if batch and dp and batch % (dp * micro) == 0:
            return batch // (dp * micro), str(other.get("id"))
    return None


TITAN_MICROBATCHES = (("2025-01-07", "the pp degree"), ("2025-04-08", "the pp degree x stages per rank"))
"""torchtitan's pipeline micro-batches where a run sets none, by the date of its code: until
pytorch/torchtitan#781 (2025-01-07) `n_microbatches` defaulted to the pp degree
(parallelisms/pipelining_utils.py: "if n_microbatches is None: n_microbatches =
pipeline_parallel_degree"), whatever the stages per rank; from it to #1073 (2025-04-08), to the pp
degree times the stages per rank; #1073 replaced the count by `pipeline_parallel_microbatch_size`,
default 1: a micro-batch of one sequence, the reader's default for every runtime."""


def titan_micro_batches(entry: dict, family: str, pp: int, stages: int) -> tuple[int, str] | None:
    """The micro-batches per pipeline torchtitan ran where a row states no micro-batch
    (`TITAN_MICROBATCHES`), from the date of its code (`runtime_date`, else the publication's
    year): None outside torchtitan, without pipeline parallelism, or from 2025-04-08 (or a run
    not dated before it), where the micro-batch of one sequence is the default."""
    if family != "torchtitan" or pp <= 1:
        return None
    date = runtime_date(entry) or str(source_year(entry) or "")
    if not date:
        return None
    for until, rule in TITAN_MICROBATCHES:
        if date < until[:len(date)]:  # a year decides only where the whole of it falls before the change
            return (pp if rule == "the pp degree" else pp * stages), rule
    return None


def count_of(value, name: str) -> int | None:
    """A micro-batch or accumulation count as a row writes it: the number, or the one beside a
    placeholder ("n/a (1)"); gradient accumulation written as not used ("none", "off", "no
    accumulation") is 1; a count left open ("n/a (DualPipe micro-batches not published)") or a
    micro-batch written as not used is unstated (None)."""
    if isinstance(value, str):
        beside = re.fullmatch(r"\s*(?:n/?a|none|off|[-–—]+)\W*\(\s*(\d+)\s*\)\s*", value, flags=re.I)
        if beside:
            return int(beside.group(1))
        if re.search(r"\d", value) and not unused(value):  # "1 (not stated)", "n/a (derived: 16)": the number
            return _int(value, name)
        if unused(value) and not placeholder(value):  # "none", "no accumulation", "n/a (no accumulation)"
            return 1 if name == "grad_accum" else None
        if re.search(LEFT_OPEN, value.lower()) or re.match(r"\s*n/?a\b", value, flags=re.I):
            return None
    return _int(value, name)


LOCAL_BATCH = (r"local[ _-]batch(?:[ _-]size)?|batch (?:size )?per (?:dp|data[- ]parallel) rank"
               r"|per[- ](?:dp[- ]|data[- ]parallel[- ])?rank batch")
"""How a row says its micro-batch field holds a data rank's batch (torchtitan's `local_batch_size`),
which a pipeline schedule splits into micro-batches, not a micro-batch."""


def batch_of(entry: dict, replicas: int, others: list[dict], notes: list[str],
             default_micro_batches: tuple[int, str] | None = None) -> tuple[int, int]:
    """Micro-batch and global batch (sequences): as published, else from gradient accumulation,
    else from the runtime's default count of micro-batches (`titan_micro_batches`), else 1; a
    global batch unpublished is borrowed from a sibling run (`sibling_micro_batches`)."""
    lay = entry.get("layout") or {}
    micro = count_of(lay.get("micro_batch"), "micro_batch")
    seq = _int((entry.get("model") or {}).get("seq_len"), "seq_len", binary=True)
    pipelined = bool(default_micro_batches)  # a torchtitan pipeline: its micro-batches split each rank's batch
    if micro is not None and pipelined and re.search(LOCAL_BATCH, _words(lay.get("micro_batch"), entry.get("notes"))):
        # torchtitan's "local batch size" is a data rank's batch, which its pipeline schedule splits
        # into micro-batches; written in the micro-batch field it is no micro-batch
        notes.append(f"micro-batch field {micro} read as the data rank's local batch (stated), which the pipeline "
                     "splits into micro-batches")
        micro = None
    batch = global_batch_sequences(lay.get("global_batch"), seq, notes, replicas * (micro or 1))
    accum = count_of(lay.get("grad_accum"), "grad_accum")
    if micro is None:
        count = default_micro_batches[0] if default_micro_batches else 0
        if batch and accum and batch % (replicas * accum) == 0:
            micro = batch // (replicas * accum)
        elif batch and count and batch % (replicas * count) == 0:
            micro = batch // (replicas * count)
            notes.append(f"micro-batch {micro}: {count} micro-batches per pipeline (torchtitan's default at the "
                         f"run's date, {default_micro_batches[1]}; none stated)")
        else:
            micro = 1
            notes.append("micro-batch 1")
    if batch is None:
        borrowed = None if accum else sibling_micro_batches(entry, others)
        if accum:
            batch = replicas * micro * accum
        elif borrowed:
            batch = replicas * micro * borrowed[0]
            notes.append(f"global batch {batch:,} (unpublished: {borrowed[1]}'s {borrowed[0]:,} micro-batches "
                         "per pipeline)")
        else:
            raise Unusable("the global batch is not published (nor gradient-accumulation steps)")
    raw = lay.get("global_batch")
    if micro and batch % (replicas * micro) and isinstance(raw, str) and "token" not in raw.lower():
        binary = _int(raw, "global_batch", binary=True)  # "2K" sequences: 2,048 where 2,000 does not divide
        if binary != batch and binary % (replicas * micro) == 0:
            notes.append(f"global batch {binary:,} sequences (`{raw}` read in powers of 1,024: {batch:,} does not "
                         f"divide over {replicas} replicas x micro-batch {micro})")
            batch = binary
    if micro == 0 or batch % (replicas * micro):
        raise Unusable(f"global batch {batch} is not a multiple of {replicas} replicas x micro-batch {micro}")
    return micro, batch


def _row_spec(entry: dict, others: list[dict]) -> Run:
    run_id = str(entry["id"])
    m, lay, hw = entry.get("model") or {}, entry.get("layout") or {}, entry.get("hardware") or {}
    out = (entry.get("outcomes") or {}).get("reported") or {}
    src = entry.get("source") or {}
    notes: list[str] = []
    gpus = gpus_of(hw)
    if entry.get("stated_degrees"):
        notes.append(f"{entry['stated_degrees']} (the layout field empty; stated in the row's words)")
    if entry.get("named_model_facts"):
        notes.append(entry["named_model_facts"])
    if entry.get("recipe_from"):
        notes.append(f"the recipe of the same published run, unstated in the row: repository row {entry['recipe_from']}")
    if entry.get("virtual_stages_from"):
        notes.append(f"the virtual stages of the same published run, printed as not used in the row: "
                     f"{entry['virtual_stages_from']}")
    deg = layout_of(lay, gpus or 0, notes)
    tp, pp, dp, cp, ep = deg["tp"], deg["pp"], deg["dp"], deg["cp"], deg["ep"]
    gpus = gpus or tp * pp * dp * cp * (ep if deg["ep_axis"] else 1)
    precision = precision_of(lay)
    model_text, dims = model_block(m, notes)
    software, family = software_of(entry, precision, tp, dp * cp, notes)
    hardware_text, key, per_node, peak = hardware_block(hw, precision, notes)
    if gpus and gpus < per_node and per_node % gpus == 0:  # "4 GPUs of a DGX-H100": one node, partly used
        notes.append(f"{gpus} GPUs of one {per_node}-GPU node: a node of {gpus} (no traffic leaves it)")
        per_node = gpus
    if precision == "fp8" and not GPUS[key]["fp8_flops"]:
        raise Unusable(f"fp8 on {GPUS[key]['description']}, which has no FP8 tensor cores")
    if precision == "nvfp4" and not GPUS[key].get("fp4_flops"):
        raise Unusable(f"NVFP4 on {GPUS[key]['description']}, which has no FP4 tensor cores")
    text = source_text(entry)

    schedule_notes: list[str] = []  # the schedule's, noted after the batch's and the recomputation's
    schedule, vpp = schedule_of(lay, pp, schedule_notes, dims.layers)
    micro, batch = batch_of(entry, dp * (ep if deg["ep_axis"] else 1), others, notes,
                            titan_micro_batches(entry, family, pp, vpp))
    recompute = recompute_of(lay, dims.layers, family, notes)
    sp = stated_bool(lay.get("sequence_parallel"))
    if sp is None:
        sp = tp > 1
        if tp > 1:
            notes.append("sequence parallelism on (the frameworks' choice with tensor parallelism)")
    notes += schedule_notes
    sharding = sharding_of(lay, family, text, notes)
    if sharding == "zero2" and family == "megatron" and not affirms(text, r"deepspeed"):
        # Megatron-Core's distributed optimizer (and MegaScale's, a fork) shards the optimizer state
        # and main gradients, which some sources call ZeRO-2, but accumulates each micro-batch's
        # gradients in a full buffer and reduce-scatters once per step: zero1's traffic (DeepSpeed's
        # ZeRO-2 under Megatron-DeepSpeed does reduce every micro-batch)
        sharding = "zero1"
        notes.append("zero1 (ZeRO-2 as stated, on a Megatron runtime: its distributed optimizer reduce-scatters "
                     "the accumulated gradients once per step)")
    expert_tp = expert_tp_of(lay, text)
    if expert_tp not in (None, 1):
        notes.append(f"expert tensor parallelism {expert_tp} not modelled: experts whole on each rank")

    axes = [("tp", tp), ("cp", cp)] + ([("ep", ep)] if deg["ep_axis"] else []) + [("dp", dp), ("pp", pp)]
    # a sharded job over the cp ranks alone (torchtitan's FSDP and Megatron's distributed optimizer
    # shard over dp x cp) writes `dp 1`, so that its `dp { sharding }` has an axis to attach to
    sharded_over_cp = dp == 1 and cp > 1 and sharding != "none"
    written = [(n, d) for n, d in axes if d > 1 or (n == "dp" and sharded_over_cp)] or [("tp", 1)]
    layout = " x ".join(f"{n} {d}" for n, d in written)
    pcie = "pcie" in _words(hw.get("gpu")) and "sxm" not in _words(hw.get("gpu"))  # not "SXM5 (PCIe Gen5 host link)"
    if pcie:
        notes.append("PCIe part: intra-node traffic over PCIe" + ("" if "hbm-bandwidth" in hardware_text
                                                                  else "; HBM bandwidth of the SXM part"))
    rack = GPUS[key]["nvlink_domain"] > GPUS[key]["gpus_per_node"]  # GB200 and GB300 NVL72
    link = "pcie" if pcie else "nvl72" if rack else "xgmi" if key == "mi300x" else "nvlink"
    lines = [
        "# " + ": ".join(str(x) for x in (src.get("title"), src.get("locator")) if x).replace("\n", " "),
        f"job {re.sub(r'[^A-Za-z0-9._-]', '-', run_id)[:60] or 'run'}",
        f"{layout} on nodes({per_node} gpus, {link})",
    ]
    if ep > 1 and not deg["ep_axis"]:
        folded = [n for n, d in (("cp", cp), ("dp", dp)) if d > 1]
        if (family == "megatron" and tp > 1 and (tp * cp * dp) % ep == 0
                and (expert_tp == 1 or (cp * dp) % ep)):
            # Megatron-Core's expert mesh regroups the tp x cp x dp ranks, tp fastest: with expert
            # tensor parallelism 1 an ep group takes the tp ranks first (ep 8 over tp 2 x dp 4
            # stays in one node), and ep may exceed the data ranks (ep 32 over tp 2 x dp 16)
            folded = ["tp"] + folded
            notes.append(f"ep {ep} over tp x cp x dp (Megatron-Core's expert mesh with expert tensor parallelism 1)")
        elif not folded or (cp * dp) % ep:
            raise Unusable(f"ep {ep} does not divide the data-parallel ranks ({dp} x cp {cp}) it folds over")
        lines.append(f"ep {ep} over {' x '.join(folded)}")
    written = recompute
    if recompute == "selective" and family == "megatron":  # the modules, as Megatron-Core's list
        stated = modules_the_model_has(megatron_modules(entry), dims, notes)
        written = f"selective [{', '.join(stated)}]" if stated else recompute
    lines += [
        model_text,
        hardware_text,
        target_line(software, family, precision),
        "train {",
        f"  seq {dims.seq}, global-batch {batch}, micro-batch {micro}",
        f"  precision {precision}, optimizer adam, recompute {written}",
    ]
    offload = _int(lay.get("offload_activations"), "offload_activations")
    if offload:
        if recompute != "none":
            raise Unusable(f"{offload} layers offloaded beside recompute {recompute} (Megatron-Core refuses both)")
        lines.append(f"  offload-activations {offload}")
    lines += [
        "}",
    ]
    if tp > 1:
        lines.append(f"tp {{ sequence-parallel {'on' if sp else 'off'} }}")
    if pp > 1:
        split = split_of(dims.layers, pp * vpp)
        options = [f"schedule {schedule}"] + ([f"virtual-stages {vpp}"] if schedule != "1f1b" else [])
        if lay.get("pipeline_layout"):
            split, mtp = layout_split(lay["pipeline_layout"], pp * vpp)
            if sum(split) != dims.layers or mtp != dims.mtp:
                raise Unusable(f"pipeline layout `{lay['pipeline_layout']}` holds {sum(split)} layers and {mtp} MTP, "
                               f"not the model's {dims.layers} and {dims.mtp}")
            options.append(f"split [{', '.join(map(str, split))}]")
            notes.append(f"layers split as the recipe's pipeline layout `{lay['pipeline_layout']}` places them")
        elif dims.mtp:
            # no layout stated: the last chunk holds the MTP layers and 1 + MTP output passes, each
            # counted as a layer in the balance (as Megatron-Core's account_for_loss_in_pipeline_split
            # counts the loss; Megatron-Bridge's DeepSeek-V3 layouts leave its last chunk one layer)
            chunks = pp * vpp
            ends = dims.mtp + 1 + dims.mtp
            last = max(0, (dims.layers + ends) // chunks - ends)
            base, extra = divmod(dims.layers - last, chunks - 1)  # the rest evenly, the lighter first
            split = [base + (1 if c >= chunks - 1 - extra else 0) for c in range(chunks - 1)] + [last]
            if base == 0:
                raise Unusable(f"{dims.layers} layers cannot fill {chunks} pipeline chunks beside the MTP layer")
            options.append(f"split [{', '.join(map(str, split))}]")
            notes.append(f"layers split {min(split)}-{max(split)} per stage, the MTP layer and each output pass "
                         "counted as a layer of the last (no pipeline layout stated)")
        elif split and split[0] == 0:
            options.append(f"split [{', '.join(map(str, split))}]")
            notes.append("embedding and loss counted as pipeline layers (Megatron-Core's account_for_embedding/"
                         f"loss_in_pipeline_split; the only split of {dims.layers} layers over {pp * vpp} chunks)")
        elif split:
            options.append(f"split [{', '.join(map(str, split))}]")
            notes.append(f"layers split {min(split)}-{max(split)} per stage (uneven; the lighter at the ends)")
        lines.append(f"pp {{ {', '.join(options)} }}")
    if sharding == "hsdp":
        groups = hsdp_groups(lay, dp)
        if groups:
            sharding = f"hsdp {groups[0]} x {groups[1]}"
            notes.append(f"hsdp: {groups[0]} replicas, each sharded over {groups[1]} ranks (stated)")
        else:
            notes.append("hsdp read as zero3 over all data-parallel ranks (the shard group is not published)")
            sharding = "zero3"
    if dp > 1 or sharded_over_cp:
        lines.append(f"dp {{ sharding {sharding} }}")
    if cp > 1:
        lines.append(f"cp {{ flavour {cp_flavour(text, family, notes)} }}")
    spec = "\n".join(lines) + "\n"

    key_conv, conv = convention_of(entry)
    stated_key = key_conv
    try:
        reported, source = reported_tflops(out, conv, key_conv, dims, batch, gpus, peak, recompute, per_node)
        if conv is STEP_ONLY:
            notes.append(f"FLOP convention `{key_conv}` unknown: compared on the step time")
    except Unusable:
        if conv is not STEP_ONLY or family != "megatron":
            raise
        # no step time or tokens, only a utilisation: a Megatron-family runtime's own count, which it
        # prints as TFLOP/s per GPU (`num_floating_point_operations`), is the one its figure is in
        key_conv, conv = convention_of({**entry, "flop_convention": "megatron_core_model_flops"})
        reported, source = reported_tflops(out, conv, key_conv, dims, batch, gpus, peak, recompute, per_node)
        notes.append(f"FLOP convention `{stated_key}` unknown and no step time or "
                     f"tokens published: read in the runtime's own count, Megatron-Core's ({conv.label})")
    fitted = entry.get("completeness") == "full"
    if fitted and dims.experts:
        # the fitted constants are the dense kernels' (GEMM, launch, attention): the MoE physics
        # (routing, dispatch, DeepEP, expert GEMMs) has no constant of its own, and its rows check
        # it out of sample
        fitted = False
        notes.append("not fitted: a mixture-of-experts row, an out-of-sample check of the MoE physics "
                     "(no fitted constant is a MoE one)")
    return Run(id=run_id, group=str(entry.get("group", "")), convention=conv.label, gpus=gpus, peak=peak,
               reported_tflops=reported, reported_from=source, spec=spec, software=software, assumptions=notes,
               fitted=fitted, conv_flops=conv.model(dims) * batch,
               recompute_stated=not placeholder(lay.get("recompute")), source_words=text,
               fp8_linears_stated=te_fp8_linears(family, precision, text),
               compile_stated=family == "torch" and software.kernels == "fused",
               whole_layers_only=family == "megatron" and before_partial_recompute(entry))


UNSTATED_RECOMPUTE = "recompute none (unstated; the frameworks' default)"

PARTIAL_RECOMPUTE = (2022, 5)
"""When Megatron-LM gained recomputation of part of a model (Korthikanti et al., arXiv:2205.05198,
May 2022: selective recomputation, and `--recompute-num-layers` beside `--recompute-method
block`); before it, `--checkpoint-activations` recomputed every layer or none."""


def before_partial_recompute(entry: dict) -> bool:
    """Whether the row's run was published before `PARTIAL_RECOMPUTE`: its arXiv identifier's month
    ("arXiv:2201.11990" is January 2022), else its year before 2022."""
    month = arxiv_month(entry)
    if month:
        return month < PARTIAL_RECOMPUTE
    src = entry.get("source") or {}
    short = [m[:3] for m in MONTHS]
    named = re.search(r"\b(" + "|".join(short) + r")\w*\.?\s+(20\d\d)\b", _words(src.get("title"), src.get("locator")))
    if named:  # "(April 2022 README)"
        return (int(named.group(2)), short.index(named.group(1)) + 1) < PARTIAL_RECOMPUTE
    year = source_year(entry)
    return year is not None and year < PARTIAL_RECOMPUTE[0]


def least_recompute_that_fits(spec: str, plan, runtime: str, compile_spec, loss_kernel: str = "",
                              whole_layers_only: bool = False):
    """The cheapest recomputation under which the spec fits in memory as `runtime` keeps it
    (with the run's fused cross-entropy, `loss_kernel`, where its source states one):
    selective, then full recomputation of the first N layers of each pipeline chunk for the
    smallest N (memory falls as N grows), then every layer; None if even that does not fit. A
    torchtitan run recomputes every layer or none (E0612): selective, then full. A runtime from
    before `PARTIAL_RECOMPUTE` (`whole_layers_only`) had only every layer."""
    def fits(mode: str):
        text = spec.replace("recompute none", f"recompute {mode}", 1)
        result = compile_spec(text)
        return ((mode, text, result) if result.plan is not None and fits_memory(result.plan, runtime, loss_kernel)
                else None)

    if whole_layers_only:
        return fits("full")
    if (found := fits("selective")):
        return found
    if plan.target.name == "torchtitan":  # no `full N` in torchtitan
        return fits("full")
    pp = plan.layout.pp
    per_chunk = -(-plan.model.layers // ((pp.degree or 1) * (pp.virtual_stages or 1)))
    lo, hi, best = 1, per_chunk - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if (found := fits(f"full {mid}")):
            best, hi = found, mid - 1
        else:
            lo = mid + 1
    return best or fits("full")


def fits_memory(plan, runtime: str, loss_kernel: str = "") -> bool:
    from parc import memory

    estimate = memory.estimate(plan, runtime, loss_kernel)
    return estimate is None or estimate.fits


FUSED_LOSS_FITS = ("memory: the stated fused cross-entropy's tensors (the 16-bit logits, their gradient and an "
                   "fp32 log-sum-exp a token, `Knobs.loss_kernel`), not the fp32 copies of the eager loss `target "
                   "torch` states: fits, where the spec as written does not (E0401)")
"""The assumption of a row whose spec overflows only by the eager loss its source did not run."""


def stated_loss_findings(run: Run, plan, runtime: str, findings: list[str]) -> list[str]:
    """The compiler's findings on the run's spec, read with the loss kernel its source states:
    a spec cannot name a fused cross-entropy, so the compiler's memory check (E0401) counts the
    eager loss's fp32 logits, which such a run never allocates. Where the row's stated kernel
    (`Software.loss_kernel`) fits, E0401 is not the run's and goes, with an assumption saying so;
    every other finding stays."""
    kernel = run.software.loss_kernel
    if not kernel or "E0401" not in findings:
        return findings
    try:
        fits = fits_memory(plan, runtime, kernel)
    except Exception:  # noqa: BLE001 - a second reading of memory must not cost a row its evaluation
        return findings
    if not fits:
        return findings
    run.assumptions.append(FUSED_LOSS_FITS)
    return [code for code in findings if code != "E0401"]


TRITON_ATTENTION = (r"attn[_-]impl[\s\"':=]*(?:default\s+)?triton|flash ?attention in triton|triton flash"
                    r"|triton (?:implementation|port|version|kernel) of flash ?attention|flash ?attention'?s? triton"
                    r"|flash ?attention \(triton|attention\W{1,3}triton\b")
"""How a source states that its runs used FlashAttention in Triton (llm-foundry's `attn_impl: triton`)."""

TRITON_NOTE = ("attention: FlashAttention in Triton, as the source states; evaluated with the "
               "FlashAttention-2 curve x `attention_sustained`, the speed training runs reach relative "
               "to the kernel benchmarks (fitted on NeMo's long-sequence rows read as cuDNN's, held on "
               "torchtitan's SDPA rows), "
               "which already carries the gap; Dao 2023's Triton-vs-FlashAttention-2 ratio (Section 4.1) "
               "was measured on OpenAI's `triton.ops.flash_attention`, not on this kernel (Tri Dao's "
               "`flash_attn_triton.py`, which llm-foundry copies)")
"""The assumption a row stating a Triton kernel carries: why it is not modelled as a slower curve."""


def note_stated_attention_kernel(software: timing.Software, run: Run) -> None:
    """Record in the row's assumptions the attention kernel its source states where a spec's
    `target` cannot say it (eager PyTorch with FlashAttention in Triton). The row keeps its
    target's kernel curve: a Triton-specific slowdown on top of `attention_sustained` would count
    the same gap twice (docs/time-model.md, llm-foundry's section)."""
    if software.attention == "flash" and affirms(run.source_words, TRITON_ATTENTION):
        run.assumptions.append(TRITON_NOTE)


TARGET_STATES = ("attention", "selective", "tp_overlap", "kernels", "fp8", "context_parallel", "grad_bytes",
                 "fp8_scaling", "gather_bytes")
"""The `Software` fields a spec's `target` statement states (`targets.software_of`); every other
field is a fact of the row (its routing, dispatcher, dp runtime, host sync, and any field
added later) and is carried through `compiled` untouched."""


def te_fp8_linears(family: str, precision: str, text: str) -> bool:
    """An eager PyTorch run (`target torch`) whose source states Transformer Engine's linears under
    fp8 (llm-foundry's H100 FP8 table: submit_benchmarks.py sets the MPT model's `fc_type: te` with
    `--precision fp8`): its linears' GEMMs run in fp8, which the `target torch` statement, parc's own
    runtime's, does not say, so the row's `fp8` is kept through `compiled`."""
    return family == "torch" and precision == "fp8" and (bool(re.search(r"fc[_-]type[\s:=\"']+te\b", text))
                                                         or affirms(text, TE_LINEARS))


TE_LINEARS = (r"transformer[- ]?engine(?:'s)? (?:\w+ ){0,2}(?:linears?|modules?|layers?)|\bte\.linear\b"
              r"|(?:linears?|linear layers?|gemms?|matmuls?)[^.;\n]{0,50}?(?:transformer[- ]?engine|\bte\b)"
              r"|(?:fp8|float8)[^.;\n]{0,20}?(?:via|through|with|by|\() ?(?:nvidia )?(?:transformer[- ]?engine|\bte\b)")
"""Transformer Engine's linears named in words ("the MPT linear layers are Transformer Engine
modules", "te.Linear", "fp8 via Transformer Engine"): llm-foundry's `fc_type: te`."""


def software_compiled(row: timing.Software, target: timing.Software, keep_fp8: bool = False,
                      keep_kernels: bool = False) -> timing.Software:
    """The row's software with the fields its compiled `target` states taken from the target: built
    from the row's (`dataclasses.replace`), so that a field no target states is never lost. A
    `modules:` recomputation list is the row's own (a target names only the policy's family)."""
    stated = {f: getattr(target, f) for f in TARGET_STATES}
    if row.selective.startswith("modules:"):
        stated["selective"] = row.selective
    if keep_fp8:  # the runtime's fp8 linears, which its target statement cannot say (`te_fp8_linears`)
        stated["fp8"], stated["fp8_scaling"] = row.fp8, row.fp8_scaling
    if keep_kernels:  # torch.compile under plain PyTorch FSDP, which `target torch` cannot say
        stated["kernels"] = row.kernels
    return replace(row, **stated)


def compiled(run: Run) -> Run | Skipped:
    """The run's spec through parc's front end and checks. A run that ran fitted in memory: where
    the row does not state its recomputation and none would not fit as its runtime keeps memory
    (Megatron-LM's accounting for fused-kernel runs, parc's runtime's for eager ones), the least
    that fits (`least_recompute_that_fits`) is what it must have used."""
    from parc.pipeline import compile_text

    def compile_spec(spec: str):
        try:
            return compile_text(spec, path=f"{run.id}.par")
        except Exception as e:  # noqa: BLE001 - one odd row must not end the evaluation of the others
            raise Unusable(f"parc failed on its spec ({type(e).__name__}: {e})") from None

    from parc import targets

    try:
        result = compile_spec(run.spec)
        if result.plan is None:
            return Skipped(run.id, "the spec does not compile: "
                           + "; ".join(d.message for d in result.diagnostics if d.is_error))
        # the spec's `target` states them; the attention kernel a source states, forced load
        # balancing and PyTorch FSDP's traffic on a runtime no target names are benchmark facts
        # no spec states
        software = targets.software_of(result.plan)
        note_stated_attention_kernel(software, run)
        run.software = software_compiled(run.software, software, run.fp8_linears_stated, run.compile_stated)
        runtime = targets.memory_runtime(result.plan.target)
        loss_kernel = run.software.loss_kernel
        if not run.recompute_stated and not fits_memory(result.plan, runtime, loss_kernel):
            found = least_recompute_that_fits(run.spec, result.plan, runtime, compile_spec, loss_kernel,
                                              run.whole_layers_only)
            if found:
                mode, run.spec, result = found
                run.assumptions = [f"recompute {mode} (unstated; the least that fits in memory)"
                                   if a == UNSTATED_RECOMPUTE else a for a in run.assumptions]
    except Unusable as e:
        return Skipped(run.id, str(e))
    run.plan = result.plan
    findings = sorted({d.code for d in result.diagnostics if d.is_error})
    run.findings = stated_loss_findings(run, result.plan, targets.memory_runtime(result.plan.target), findings)
    return run
