"""Every diagnostic code parc can emit, with its long explanation (`parc codes CODE`).

Codes are stable: a code is never reused for a different problem. Ranges:
E00xx reading files, E01xx syntax, E02xx names and values, E03xx layout rules,
E04xx memory, W03xx/W04xx warnings (which a spec may acknowledge with `allow CODE`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    severity: str  # "error" | "warning"
    title: str
    explanation: str


CODES: dict[str, Code] = {}


def register(code: str, title: str, explanation: str) -> None:
    severity = "warning" if code.startswith("W") else "error"
    CODES[code] = Code(code, severity, title, explanation.strip("\n"))


register("E0001", "the spec cannot be read", """
The path given to parc is missing, is a directory, or cannot be opened. This is a usage error:
parc exits with status 2.

    $ parc check specs/
    error[E0001]: `specs/` is a directory, not a spec

Pass one or more `.par` files: `parc check specs/*.par`.
""")

register("E0002", "the spec is not UTF-8 text", """
Specs are UTF-8 text. A byte sequence that is not valid UTF-8, or a NUL byte, usually means a
binary file was passed by mistake. The diagnostic points at the first bad byte.
""")

register("E0003", "the spec is too large", """
parc refuses specs over 64 KiB before parsing them. A real spec is a few hundred bytes; a larger
file is the wrong file or generated junk, and refusing it keeps every command fast and bounded.
""")

register("E0101", "unexpected character", """
The spec contains a character that is not part of the language. parc uses names, numbers, `x`,
`?`, braces, brackets, parentheses, commas, strings in double quotes and `#` comments.

    tp 8 x pp 16 ; dp 4      # `;` is not used: write `tp 8 x pp 16 x dp 4`
""")

register("E0102", "unexpected token", """
The statement does not follow the language's shape. The label lists what could come next.
Statements are one per line:

    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)   # the layout line
    model llama3-405b                                # a preset
    train { seq 8192, global-batch 2048 }            # a block of settings
""")

register("E0103", "`=` in a setting", """
parc settings are written `key value`, without `=` or `:`:

    tp=8            # wrong
    tp 8            # right
    micro-batch 4   # inside `train { }`
""")

register("E0104", "missing `x` between axes", """
Axes on the layout line are joined by `x`, read "by":

    tp 8 pp 16             # wrong
    tp 8 x pp 16 x dp 64   # right
""")

register("E0105", "a number runs into a word", """
A number and its unit or keyword need a space between them, so that `8gpus` is not read as a
name:

    on nodes(8gpus, nvlink)    # wrong
    on nodes(8 gpus, nvlink)   # right
    hbm 80GB                   # wrong
    hbm 80 GB                  # right
""")

register("E0106", "unbalanced braces", """
Every `{` that opens a block needs a matching `}`, and a `}` needs an open block:

    train {
      seq 8192
    }
""")

register("E0107", "unterminated string", """
A string starts with `"` and ends with `"` on the same line. Use `\\"` for a quote inside it:

    image "nvcr.io/nvidia/pytorch:24.07-py3"
""")

register("E0108", "nested too deeply", """
Blocks and lists may nest at most 16 deep; a real spec nests three deep at most:

    hardware { gpu my-gpu { hbm 80 GB } }

Deeper nesting is refused before parsing, so that a generated or corrupted file cannot exhaust
the parser's stack. Close the blocks that were left open, or remove the extra brackets.
""")

register("E0109", "too many syntax errors", """
parc reports every syntax error in a file, up to 100; past that it stops reading and says
where. A file with that many broken lines is usually not a spec (a log, a YAML file, a file
saved in another encoding). Fix the first errors and run `parc check` again.
""")

register("E0201", "unknown statement or setting", """
The key is not one parc knows in this place. Top-level statements are the layout line, `ep N over
...`, `job`, `model`, `hardware`, `train`, `launch`, `order`, and axis blocks (`tp { }`,
`pp { }`, `dp { }`, `cp { }`, `ep { }`). Each block has its own settings, listed in the help line
and in docs/language.md. Keys use dashes: `micro-batch`, not `micro_batch`.
""")

register("E0202", "unknown name", """
A preset, GPU, schedule or other name is not one parc knows. The help line suggests the closest
known names. Model presets and GPUs are listed in the README; a spec can also define its own:

    model { layers 32, hidden 4096, ffn 14336, heads 32, kv-heads 8, vocab 128256 }
    hardware { gpu my-gpu { hbm 96 GB, bf16 800 TFLOP/s, link 450 GB/s, nvlink-domain 8 } }
""")

register("E0203", "a value of the wrong shape", """
The setting exists but its value is not of the kind it takes: a number where a name is expected,
two values for a one-value setting, a block where none is taken. The help line shows the form:

    micro-batch 2
    sequence-parallel on
    sharding hsdp 8 x 8
    split [31, 32, 32, 31]
""")

register("E0204", "set twice", """
A spec states each thing once. A second `model`, a repeated setting in a block, or a second
layout line is an error, because which one wins would be a guess. The secondary label shows the
first definition.
""")

register("E0205", "missing or wrong unit", """
Quantities carry units, written after the number with a space. Bytes: B, KB, MB, GB, TB, KiB,
MiB, GiB, TiB. Bandwidth: Mb/s, Gb/s, Tb/s (bits) and MB/s, GB/s, TB/s (bytes). Compute:
GFLOP/s, TFLOP/s, PFLOP/s. Batch sizes count sequences unless followed by `tokens`.

    hbm 80 GB
    network 8 x 400 Gb/s
    global-batch 16_777_216 tokens
""")

register("E0206", "a hole where none is allowed", """
`?` marks a value for `parc search` to choose. It is allowed for layout degrees and tuning knobs
(micro-batch, recompute, sharding, schedule, virtual stages, sequence parallelism, the fold degree
of ep, rank order), not for facts such as the model's shape or the GPU.
""")

register("E0207", "a number out of range", """
The number is below 1 (or 0 where zero is allowed), or above what parc plans for: degrees and the
world size up to 1,048,576 GPUs, sizes up to 10^9. Such numbers are typos or hostile input; parc
refuses them before doing any arithmetic with them.
""")

register("E0208", "an axis written twice", """
Each axis appears at most once on the layout line. Multiply the degrees instead:

    tp 2 x dp 4 x tp 4    # wrong
    tp 8 x dp 4           # right
""")

register("E0209", "a required statement is missing", """
A complete spec has a layout line, a model, a GPU (in `hardware`) and a `train` block:

    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)
    model llama3-405b
    hardware { gpu h100-sxm }
    train { seq 8192, global-batch 2048 }
""")

register("E0210", "an incomplete definition", """
A custom model needs layers, hidden, ffn, heads and vocab; a mixture-of-experts model also needs
top-k; a custom GPU needs hbm, bf16, link and nvlink-domain; `train` needs seq and global-batch.
Start from a preset and override fields to need fewer:

    model llama3-8b { layers 16 }
""")

register("E0211", "misplaced axis options", """
Options were given for an axis that is not on the layout line, or `over` was used with anything
but expert parallelism. Expert ranks either form their own layout axis (`ep 8 x dp 16`) or are
folded onto existing axes (`ep 8 over dp x cp`), never both. Folding follows torchtitan and
Megatron-Core: non-expert layers use the layout's axes; MoE layers regroup the ranks of the
folded axes into ep groups (the fastest-varying ranks first).
""")

register("E0212", "an inconsistent model or batch", """
The model's numbers contradict each other (hidden not divisible by heads without an explicit
head-dim, kv-heads not dividing heads, top-k above the expert count), or a batch in tokens is not
a whole number of sequences.
""")

register("E0214", "GPUs per node stated twice, differently", """
The layout's `on nodes(N gpus, ...)` and hardware's `gpus-per-node` disagree. State it once,
preferably on the layout line.
""")

register("E0215", "an unsafe string", """
Strings from a spec end up in shell scripts, YAML manifests and Python files. parc accepts only
safe characters in names (job, partition, account, namespace: letters, digits, `.`, `_`, `-`),
container images (also `/`, `:`, `@`, `+`), environment variable names (letters, digits, `_`) and
time limits (`HH:MM:SS`). Environment variable values may hold anything printable; they are
quoted wherever they are written.
""")

register("E0216", "an error cannot be allowed", """
`allow CODE` acknowledges a warning (a W code). Errors describe layouts that cannot run or
cannot fit; they must be fixed, not acknowledged.
""")

register("E0217", "`allow` names an unknown code", """
The code after `allow` is not a diagnostic code. `parc codes` lists them.
""")

register("E0218", "holes left open at compile time", """
`parc compile` generates code for one concrete layout, so every `?` must be filled first.
`parc search SPEC --write` fills them with the best layout it finds and rewrites the spec, so the
choice is reviewed as a diff before it is compiled.
""")

register("E0299", "internal error", """
parc hit a bug while processing this spec. The other findings are still reported. Please report
the spec that caused it.
""")

register("E0301", "world size mismatch", """
The product of the layout's degrees must equal the cluster size, and `nodes` x GPUs per node
must equal `gpus` when both are stated. The message spells out both products:

    tp 8 x pp 16 x dp 64 = 8,192 GPUs
    nodes 512 x 8 GPUs per node = 4,096 GPUs
""")

register("E0302", "a layout with holes needs the cluster size", """
`parc search` fills `?` degrees so that their product is the cluster size, so the size must be
stated when any degree is open:

    tp ? x pp ? x dp ? on nodes(8 gpus, nvlink)
    hardware { gpu h100-sxm, nodes 1024 }
""")

register("E0303", "not a whole number of nodes", """
The world size must be a multiple of the GPUs per node: parc places whole nodes.
""")


# ---------------------------------------------------------------------------------------------
# Layout rules (compiler/checks): E03xx errors, W03xx warnings. Add new codes below this line.


# ---------------------------------------------------------------------------------------------
# Memory (compiler/memory.py and its check): E04xx, W04xx. Add new codes below this line.


# ---------------------------------------------------------------------------------------------
# Time model, search and review tools: E05xx, W05xx. Add new codes below this line.
