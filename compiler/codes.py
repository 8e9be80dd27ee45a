"""Every diagnostic code parc can emit, with its long explanation (`parc codes CODE`).

Codes are stable: a code is never reused for a different problem. Ranges:
E00xx reading files, E01xx syntax, E02xx names and values, E03xx layout rules,
E04xx memory, W02xx/W03xx/W04xx warnings (which a spec may acknowledge with `allow CODE`).
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
GFLOP/s, TFLOP/s, PFLOP/s. Power: W, kW. Batch sizes count sequences unless followed by `tokens`.

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

register("W0240", "`allow` of a warning that is not reported on its statement", """
`allow CODE` acknowledges a warning on the statement it sits on. When the rules run and that
warning is not reported there, the `allow` hides nothing: either the layout changed and the
acknowledgement is stale, or it names the wrong code (`allow W0306`, rank-order traffic, where
the pipeline bubble, W0323, was meant), or it sits on a different statement than the one the
warning points at. A reader of the spec would believe a problem was reviewed that is not there.

    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink) allow W0306
                                                        ^^^^^ W0306 does not fire on this statement

Remove the `allow`, or move it to the statement that `parc check` underlines for the warning.
It is judged only once every hole is filled (a rule may fire for the filled layout), and not for
the generated runtime's W06xx warnings, which `parc compile` reports.
""")

register("W0241", "a sliding window with no effect", """
`window W` makes a token attend to itself and the W - 1 tokens before it. With W at least the
sequence length every causal key already lies inside the window, and with `full-attention-every 1`
every layer keeps full attention: either way nothing is windowed, and parc predicts (and the job
runs) full causal attention. Usually `seq` or the window was mistyped.

    model gpt-oss-like { window 128, full-attention-every 2 }   # ok: odd layers windowed
    train { seq 64 }                                            # W0241: 128 >= 64
""")

register("E0219", "an option the target does not have", """
`target NAME { ... }` takes the options of that runtime only: `compile` is torchtitan's
(torch.compile), `flash-attention` Megatron-LM's (`--use-flash-attn`), `tp-overlap` and
`grad-reduce` belong to torchtitan and megatron. parc's own job (`target torch`) has none: it is
eager PyTorch with fp32 gradient reduction.

    target torchtitan { compile on }     # ok
    target megatron { compile on }       # E0219: Megatron-LM has no torch.compile switch
""")

register("E0220", "an empty chunk inside the pipeline", """
A `split` entry may be 0 only for the first chunk, which then holds just the input embedding,
and for the last, which then holds just the final norm, the output layer and the loss
(Megatron-Core's `account_for_embedding_in_pipeline_split` and
`account_for_loss_in_pipeline_split`). An inner chunk with no layers would only pass the
activations on, so parc refuses it:

    pp 16 x 8 chunks, 126 layers:  split [0, 1, 1, ..., 1, 0]   # accepted
    pp 4:                          split [2, 0, 3, 3]           # the 0 is refused
""")

register("E0230", "the training budget is stated twice", """
A run's length is one number: either the tokens it trains on or its optimizer steps. Each one
determines the other through the global batch (steps = tokens / (global batch x seq), rounded up),
so stating both could contradict:

    train { seq 8192, global-batch 2048, tokens 15T, steps 900000 }

Keep one: `tokens 15T` (the usual way papers state a budget) or `steps 894070`. `parc explain`
then shows the time to train, the GPU-hours and, with a `price`, the cost.
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

register("E0304", "the tp group crosses an NVLink domain", """
Tensor parallelism exchanges activations several times per layer, in the critical path, so every
tp group must sit inside one NVLink domain (8 GPUs of an HGX node, 72 of a GB200 NVL72 rack). The
group spans `stride x tp` consecutive ranks, where the stride is the product of the degrees
written before tp in rank order; that span must divide the domain so that no group straddles two:

    dp 2 x tp 8 on nodes(8 gpus, nvlink)   # tp 8 with stride 2 spans 16 ranks: two nodes
    tp 8 x dp 2 on nodes(8 gpus, nvlink)   # tp 8 spans ranks 0-7: one node

Write tp first, or choose a tp that divides the domain.
""")

register("W0305", "tensor parallelism over PCIe", """
The cluster's GPUs are linked by PCIe only (`on nodes(8 gpus, pcie)`), so there is no NVLink
domain and every tp collective runs at PCIe speed, several times per layer. It works, but tp 1
with more pipeline or data parallelism is usually faster. Acknowledge with `allow W0305` when tp is
needed to fit the model.
""")

register("W0306", "rank order sends heavy traffic over the network", """
parc estimates how many bytes each GPU sends per step on every axis (tp and cp every layer, ep
every MoE layer, pp every micro-batch, dp once per step) and which axes' groups cross NVLink
domains in the written rank order. When another order keeps a heavier axis inside the domain and
puts a lighter one outside, the warning names that order and the network time it saves:

    dp 16 x cp 2 x tp 8 ...   # cp's groups cross nodes while dp's stay inside

Reorder the layout line (the first axis varies fastest), write `order ?` to let search choose, or
acknowledge with `allow W0306` on the layout line.
""")

register("E0310", "tp does not divide the attention heads", """
Tensor parallelism gives each rank heads / tp whole query heads (the Q projection is split by
columns, head by head). The help line lists nearby degrees that divide the head count and fit the
NVLink domain:

    model { heads 40 ... }
    tp 16 x ...    # 40 / 16 = 2.5 heads per rank: try tp 4, 5 or 8
""")

register("W0311", "kv heads are replicated", """
With grouped-query attention the K and V projections have fewer heads than Q. When the degree
that splits heads (tp, times cp under all-to-all context parallelism) does not divide the kv head
count, each rank keeps all kv heads it needs instead of a slice: the K/V weights (and their
activations) are replicated, which costs memory the warning quantifies. Megatron-LM and
torchtitan do the same. Choose a degree that divides the kv heads, or acknowledge with
`allow W0311`.
""")

register("E0312", "tp does not divide the FFN size", """
The FFN's up-projections are split by columns over tp (and the down-projection by rows), so tp must
divide the FFN inner size, and the shared experts' size of a mixture-of-experts model. (Routed
experts are not split by tp: expert parallelism divides them.)
""")

register("E0313", "tp does not divide the hidden size", """
Tensor parallelism and sequence parallelism assume the hidden size splits evenly over tp (the
row-parallel projections' partial sums, Megatron-LM's and torchtitan's layouts). Choose a tp that
divides the hidden size.
""")

register("W0314", "the vocabulary splits unevenly over tp", """
The embedding and output layers are split over tp by vocabulary rows. When tp does not divide the
vocabulary, parc's runtime gives some ranks one row more than others (it does not pad); the
fullest rank sets the memory figure and the slowest output projection. It is usually harmless:
Megatron-LM pads instead (GPT-2's 50,257 tokens to 50,304), which costs the same on every rank.
Acknowledge it with `allow W0314` on the model line, or choose a vocabulary that tp divides.
""")

register("E0315", "layers do not split evenly over the pipeline", """
Each pipeline rank holds `layers / (pp x virtual stages)` layers per chunk. When that is not whole,
write the uneven split explicitly so that the balance is a decision, not an accident:

    pp { split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7] }   # 126 layers over 16 stages

The help line proposes a split, or degrees that divide the layer count.
""")

register("E0316", "the pipeline split does not match", """
`split` lists the layers of every chunk in model order: pp x virtual-stages entries that sum to
the model's layer count. The message says which of the two is off.
""")

register("E0317", "virtual stages do not match the schedule", """
gpipe and 1f1b run one chunk per pipeline rank (`virtual-stages 1`); interleaved-1f1b and
interleaved-zb take 2 or more; zbv and dualpipe-v run exactly two chunks per rank in a V
(torch.distributed.pipelining raises otherwise).
""")

register("E0318", "the interleaved schedule rejects this micro-batch count", """
torch's interleaved schedules (interleaved-1f1b, interleaved-zb) group micro-batches into
rounds = max(1, m // pp) rounds of m / rounds each, and raise unless m is a multiple of the
number of rounds:

    pp 4, 9 micro-batches: 2 rounds, 9 % 2 = 1   # rejected
    pp 4, 8 micro-batches: 2 rounds of 4         # accepted
""")

register("W0319", "interleaved micro-batches are not a multiple of pp", """
The interleaved schedule of Narayanan et al. 2021 (and Megatron-LM) needs the number of
micro-batches to be a multiple of pp. torch's flexible version accepts other counts in rounds of
m / rounds micro-batches, but a round that is not a multiple of pp leaves ranks idle between
chunks. Make the micro-batches per step (global batch / (dp x micro-batch)) a multiple of pp, or
acknowledge with `allow W0319`.
""")

register("E0320", "dualpipe-v needs at least 2 x pp micro-batches", """
DualPipeV feeds micro-batches from both ends of the V and needs at least as many as pipeline
stages, 2 x pp (torch.distributed.pipelining raises otherwise).
""")

register("E0321", "the global batch does not divide over the data-parallel ranks", """
Every step, each of the batch-parallel ranks (dp, and ep when it is a layout axis) takes
global-batch / (dp x micro-batch) micro-batches of micro-batch sequences. That must be a whole
number:

    global-batch 2048, dp 64, micro-batch 3: 2,048 / 192 = 10.67   # not whole
""")

register("E0322", "fewer micro-batches than pipeline stages", """
A pipeline of pp stages needs at least pp micro-batches in flight to have every stage busy;
torch's 1F1B schedule raises with fewer, and any schedule would leave stages idle most of the
time. Lower the micro-batch size, raise the global batch, or use fewer pipeline stages.
""")

register("W0323", "the pipeline bubble exceeds 10 %", """
A pipeline spends (pp - 1) micro-batch slots filling and draining. The bubble is, everywhere in
parc, that idle time as a share of the step: idle / (busy + idle). The idle/busy ratio is
(Narayanan et al. 2021) (pp - 1) / m for gpipe and 1f1b, (pp - 1) / (v x m) for the interleaved
schedule, and a third of that for the zero-bubble schedules (interleaved-zb, zbv, dualpipe-v: Qi
et al. 2024 fill the bubble with weight-gradient work, to one third when forward, input-backward
and weight-backward take equal time). The warning uses this closed form, without communication;
`parc explain` gives the time model's share, with communication in the step and, for the
zero-bubble schedules, the idle time of the order torch runs. Above 10 % the warning says how many micro-batches would bring it under. More micro-batches (a smaller micro-batch or a larger global
batch), more virtual stages or fewer stages shrink it; acknowledge with `allow W0323`.
""")

register("E0330", "the sequence does not split over context parallelism", """
Context parallelism gives each cp rank a slice of every sequence. The ring and all-gather flavours
balance causal attention by giving each rank two chunks, one from each end (Llama 3's and
Megatron-LM's load balancing), so seq must divide by 2 x cp; all-to-all (Ulysses) needs seq to
divide by cp.
""")

register("E0331", "the local sequence does not split over tp under sequence parallelism", """
Sequence parallelism shards the norm and residual activations along the sequence over the tp
ranks, so the sequence each cp rank holds (seq / cp) must divide by tp.
""")

register("E0332", "all-to-all context parallelism needs heads divisible by cp", """
Ulysses-style context parallelism trades the sequence split for a head split: an all-to-all
gives each cp rank all tokens of heads / (tp x cp) heads. The query heads each tp rank holds must
therefore divide by cp. Use the ring or all-gather flavour, or a cp that divides heads / tp.
""")

register("E0340", "ep does not divide the experts", """
Expert parallelism gives each ep rank experts / ep whole routed experts, so ep must divide the
number of routed experts.
""")

register("E0341", "ep does not fit the axes it folds over", """
`ep N over A x B` regroups the ranks of axes A and B into expert groups of N ranks (torchtitan's
and Megatron-Core's MoE parallel folding), so N must divide the product of their degrees:

    dp 16 x cp 2 ..., ep 12 over dp x cp   # 32 ranks do not form groups of 12
""")

register("E0342", "expert parallelism on a dense model", """
Expert parallelism spreads the routed experts of mixture-of-experts layers; the model has none.
Remove ep, or describe the experts in the model (`experts 8, top-k 2`).
""")

register("W0343", "routed experts spread over ranks with neither balancing nor a capacity", """
With `moe-balance none` and no `capacity-factor`, nothing keeps the router from sending most
tokens to a few experts: the ep ranks that hold them receive rows without bound, run out of
memory first, and the all-to-all waits on them. parc's memory and time models assume balanced
routing, so their figures do not cover such a run. Balance the router (`moe-balance aux-free
0.001`, DeepSeek-V3's bias update, or `aux-loss 0.01`, the Switch Transformer's loss), or cap
what each expert takes (`capacity-factor 1.25`). A run that measures its routing (a router
already trained, say) may `allow W0343`.
""")

register("E0350", "hsdp replicate x shard is not dp", """
`sharding hsdp R x S` shards every parameter over S ranks and keeps R replicas of those shards,
so R x S must equal the dp degree.
""")

register("W0351", "zero3 with pipeline parallelism keeps the parameters gathered for the whole step", """
Under pipeline parallelism each stage runs a forward for every micro-batch. Resharding the
parameters after each forward (zero3's reshard_after_forward) would all-gather them again for
every one of those forwards, m times per step instead of once, so the generated runtime turns it
off under pipelining, as torchtitan does: the stage's parameters are gathered at the step's first
forward and stay gathered until its last backward, and torch.distributed.pipelining keeps the
gradients unsharded in fp32 until the step ends (it disables gradient reduction until the last
backward). So zero3 under pipelining holds what zero2 holds while a step runs, and saves only the
sharded parameters between steps; the memory model counts it that way. Write `sharding zero2` to
say what runs, or acknowledge with `allow W0351`.
""")

register("W0352", "zero3 under a zero-bubble schedule runs as zero2", """
torch's zero-bubble schedules (interleaved-zb, zbv, dualpipe-v) split the backward into input and
weight gradients. With FSDP2 they give wrong gradients unless parameters stay gathered from
forward to backward (reshard_after_forward=False, see docs/torch-cpu.md caveat 1), so the
generated runtime runs zero3 as zero2 and the memory model counts it that way. Write
`sharding zero2` to say so, or acknowledge with `allow W0352`.
""")

register("W0353", "sharding over a single rank", """
ZeRO and FSDP shard states over the data-parallel ranks of a stage (dp x cp, and ep when it is a
layout axis). With only one such rank there is nothing to shard over: under Megatron-LM the
setting only adds overhead; use `sharding none`. In parc's own job the shardings still differ in
the copies the runtime makes (docs/time-model.md, "FSDP2's copies"): `none` is FSDP2 over one rank,
which casts every weight before each micro-batch's forward and backward and frees the bf16 copy
after each use (the least memory). zero2 keeps that copy from the step's first forward to its last
backward (one cast a step, one bf16 copy of the weights held) and zero1's buckets cast once a
step, so with many micro-batches either can be faster at a little more memory. `parc explain`
shows each one's `dp copies`; `parc search` weighs them. Acknowledge with `allow W0353` if that is
the trade you want.
""")

register("E0354", "a gradient bucket size without zero1", """
`dp { bucket N }` sets how many parameters each of zero1's gradient buckets holds (its
distributed optimizer reduce-scatters bucket by bucket during the backward; default max(40M,
1M x dp), Megatron-Core's). The other shardings reduce per FSDP unit (a transformer block), so
the setting would do nothing there. Remove `bucket`, or write `sharding zero1`.
""")


register("E0360", "the target has no such pipeline schedule", """
Each runtime implements its own set of pipeline schedules. Megatron-Core runs 1F1B and the
interleaved 1F1B (`--num-layers-per-virtual-pipeline-stage`) only; torchtitan and parc's own job
run every schedule of torch.distributed.pipelining. Choose a schedule the target has, or change
the target (`parc codes` and docs/targets.md list them).
""")

register("E0361", "the target has no such context-parallel flavour", """
torchtitan's context parallelism is torch's `context_parallel`: K/V blocks passed around a ring
(rotate method `alltoall`) or gathered (`allgather`); it has no all-to-all (Ulysses) flavour that
scatters heads. Megatron-Core has all three (`--cp-comm-type p2p | all_gather | a2a`).
""")

register("E0362", "the target has no such data-parallel sharding", """
torchtitan shards with FSDP2 only (zero3, zero2 as `fsdp_reshard_after_forward never`, hsdp, or
plain replication): it has no optimizer-only sharding (zero1). Megatron-LM has DDP, the
distributed optimizer (zero1, `--use-distributed-optimizer`) and FSDP (zero3), no zero2 or hsdp.
""")

register("E0363", "the target cannot fold ep over that axis", """
Expert parallelism folded onto other axes must use axes the runtime can carve expert groups
from. parc's own job folds over dp and cp only (E0602); torchtitan and Megatron-Core also borrow
tp ranks, never pp.
""")

register("E0364", "the target builds its device mesh in a fixed rank order", """
torchtitan builds its mesh as [pp, dp_replicate, dp_shard, cp, tp] (slowest first) and
Megatron-Core as `tp-cp-ep-dp-pp` (fastest first): in both, tp is the fastest-varying axis, then
cp, then dp, then pp. A layout line written in another order would put different ranks in each
group than the runtime does, so parc's predictions would describe another job. Write the axes
in the runtime's order, e.g. `tp 8 x cp 2 x dp 4 x pp 2`.
""")

register("W0365", "`compile-loss` without `compile on`", """
`compile-loss` says whether torchtitan compiles its loss beside its model (`--compile.components
model,loss`, its default, or `model` alone with `compile-loss off`). torchtitan compiles neither
unless `compile.enable` is on, so without `compile on` the option changes nothing: not the
generated command line, not the memory model, not the step time.

    target torchtitan { compile-loss off }               # W0365: nothing is compiled
    target torchtitan { compile on, compile-loss off }   # ok: the block compiled, the loss eager

Add `compile on`, or remove `compile-loss`.
""")

register("W0366", "an fp8 option without `precision fp8`", """
`fp8-recipe` picks Transformer Engine's fp8 scaling for a Megatron-LM job (`--fp8-recipe`),
`fp8-params` whether it holds fp8 weights (`--fp8-param-gather`), and `float8-all-gather` says
torchtitan's FSDP2 gathers float8 weights. All concern only fp8 linears, so under `precision
bf16`, `fp16` or `nvfp4` they change neither the generated job nor the memory and time models
(but `fp8-params`, which under `nvfp4` also says whether Megatron-LM keeps NVFP4 weights,
`--fp4-param-gather`).

    target megatron { fp8-recipe mxfp8 }             # W0366 with train { precision bf16 }
    target megatron { fp8-params off }               # W0366 with train { precision bf16 }
    target torchtitan { float8-all-gather on }       # W0366 with train { precision bf16 }

Write `precision fp8`, or remove the option.
""")

register("W0367", "`fp8-params` without the distributed optimizer", """
`fp8-params` says whether a Megatron-LM job holds its fp8 linears' weights as fp8 and all-gathers
them so (`--fp8-param-gather`). Megatron-LM does that only where its distributed optimizer
gathers the parameters: parc's Megatron job sets it with `dp { sharding zero1 }`. Under DDP
(`sharding none`) the bf16 weights stay and Transformer Engine caches their fp8 casts; under
torch FSDP2 (`zero3`) Megatron-LM turns fp8 parameters off itself. There the option changes
neither the job nor the memory and time models.

    target megatron { fp8-params off }               # W0367 with dp { sharding none }

Write `dp { sharding zero1 }`, or remove `fp8-params`.
""")

register("E0370", "a power limit parc cannot derate", """
`hardware { power-limit 500 W }` runs every GPU under that power limit (`nvidia-smi -pl`). At
its limit a GPU lowers its clock until its power fits; near the top of its voltage-frequency
curve power goes as the cube of the clock, so the clock, and the dense peak every prediction is
built on, fall as (limit / board power)^(1/3) (docs/time-model.md). Two limits cannot be
modelled so: one on a GPU defined in the spec, whose board power parc does not know (write the
peak it sustains instead, `gpu my-gpu { bf16 700 TFLOP/s ... }`), and one below a quarter of
the board power, below what the drivers accept and where the law no longer holds.

    hardware {
      gpu h100-sxm
      power-limit 500 W
    }
""")

register("E0371", "more layers offloaded than a chunk holds", """
`train { offload-activations N }` copies the saved activations of the first N layers of each
chunk to host memory (Megatron-Core's `--cpu-offloading-num-layers`). Megatron-Core requires N
to be below the layers it offloads from (`TransformerConfig.__post_init__`): its handler frees
an offloaded layer's GPU copy at the end of a later layer, so a chunk's last layer is never
offloaded.

    model llama3-70b           # 80 layers
    train { offload-activations 40 }   # ok
    train { offload-activations 80 }   # E0371

Offload fewer layers than each chunk holds.
""")

register("E0372", "activation offloading with recomputation", """
Megatron-Core refuses `--cpu-offloading` with any `--recompute-granularity` ("CPU offloading
does not work when activation recomputation is enabled", `TransformerConfig.__post_init__`):
the two are alternative ways to fit the saved activations. parc's memory and time models follow
that handler, so they describe no job that combines them. Write `recompute none` beside
`offload-activations`, or drop the offloading.
""")

register("E0373", "NVLink SHARP on hardware without it", """
`hardware { nvls on }` lets NCCL reduce all-reduces inside the NVLink domain in the NVSwitches
themselves (NVLink SHARP, NCCL's NVLS algorithm): each GPU sends its buffer into the switch once
and reads the sum back, where a ring sends 2 (n - 1) / n of it. Only the third-generation
NVSwitch of Hopper and Blackwell systems reduces (HGX H100, H200 and B200 boards, GB200 and GB300
NVL72 racks); an Ampere NVSwitch, PCIe, AMD's Infinity Fabric and NVLink domains of fewer than 8
GPUs (2- and 4-GPU boards link their GPUs directly, without a switch) do not, so parc refuses the
setting there rather than predict a speed the hardware cannot reach. Unstated, parc predicts no
NVLS and leaves NCCL its own default; `nvls off` pins it off in the generated job.

    hardware {
      gpu a100-80gb
      nvls on   # E0373
    }
""")

register("E0374", "`attention-backend` against `flash-attention`", """
A Megatron-LM job runs one attention. `flash-attention off` is Megatron-LM's unfused attention
(`--attention-backend unfused`: the s x s scores materialised); `attention-backend` names the
backend itself: `auto` (Transformer Engine's choice, cuDNN's fused attention on Hopper and later),
`fused` (cuDNN's), `flash` (flash-attn's FlashAttention-2, `NVTE_FUSED_ATTN=0`) or `unfused`.
Written together they must name the same one: a fused backend beside `flash-attention off`, or
`unfused` beside `flash-attention on`, leaves it open which attention the job runs and parc
times.

    target megatron { flash-attention off, attention-backend flash }   # E0374

Keep one of the two: `attention-backend flash` alone, or `flash-attention off` alone.
""")

register("E0375", "`attention-backend flash` for an attention flash-attn cannot run", """
`attention-backend flash` asks Megatron-LM to run flash-attn's FlashAttention-2 and turns
Transformer Engine's other backends off (`NVTE_FUSED_ATTN=0`, `NVTE_UNFUSED_ATTN=0`).
FlashAttention-2 runs query-key head dims up to 256, in multiples of 8, equal to the value head
dim; it has no multi-head latent attention. For any other attention Transformer Engine is left
with no backend and the job stops at its first layer, so parc refuses the spec rather than time
a kernel that cannot run.

    model { ..., kv-lora-rank 512, ... }
    target megatron { attention-backend flash }   # E0375

Use `attention-backend auto` (cuDNN's fused attention, which runs both) or `fused`.
""")

# ---------------------------------------------------------------------------------------------
# Memory (compiler/memory.py and its check): E04xx, W04xx. Add new codes below this line.

register("E0401", "the layout does not fit in GPU memory", """
parc predicts, for every pipeline stage, the peak memory of its worst rank: parameters, gradients
and optimizer states (per dp sharding), the activations of the micro-batches the schedule keeps
in flight (per recompute mode, under tp, sequence parallelism and cp), and transient buffers
(FSDP gathers, gradient reduction, logits and loss, the backward working set). The peak must fit
in the GPU's memory minus a reserve for the CUDA context, NCCL buffers and allocator
fragmentation. The notes give the breakdown of the worst stage; the help line lists single changes
and how much each frees, computed by re-running the model with that change:

    help: recompute selective frees 31.0 GiB; sharding zero1 frees 40.2 GiB

`parc explain SPEC` prints every stage. docs/memory-model.md derives each term.
""")

register("W0410", "the layout fits by less than the memory model's measured error", """
The memory model predicts the worst rank's peak to within a few percent on most published runs,
but not on all: on the published per-GPU memory of torchtitan's runs
(benchmarks/data/published_memory.yaml) the true `torch.cuda.max_memory_reserved()` has been up
to the *error band* above parc's prediction (compiler/memory/band.py, written by
`benchmarks/memory_fidelity.py --write`; nothing in the model is fitted on those runs). When the
prediction fits but the margin left is smaller than that band, parc cannot tell the layout from
a twin that needs more than the GPU has, so it says "fits (at risk)" instead of "fits":

    warning[W0410]: fits by 5.9 GiB, less than the memory model's measured under-prediction
    (15.3% on published runs): it may not fit

The notes give the worst rank's breakdown and what it would reserve at the band's edge; the help
line lists the single changes that free enough to clear the band (as E0401's does), or says to
spread the model further. `parc explain --format json` carries the same verdict as
`memory.margin_bytes`, `memory.error_band` and `memory.at_risk`; `parc search` ranks by the
point prediction and marks an at-risk winner with the fastest runner-up that is not. The band
was measured on the torch runtime's accounting (targets torch and torchtitan); under `target
megatron` (Megatron's accounting, not measured against these runs) no band is claimed and W0410
is not raised (`memory.error_band` is null). A layout
whose peak was measured (a rehearsal, or a run) may acknowledge the warning with `allow W0410`
on the layout line.
""")


# ---------------------------------------------------------------------------------------------
# Time model, search and review tools: E05xx, W05xx. Add new codes below this line.

register("E0501", "no assignment of the holes passes the layout rules", """
`parc search` tried every value of every `?` (degrees whose product is the cluster size, rank
orders, micro-batches, recomputation, sharding, schedules) and each assignment breaks a layout
rule: usually the values written beside the holes leave nothing valid (a written `tp 16` on
8-GPU nodes, a `split` whose length no pp fits, a global batch the data-parallel ranks cannot
share). The notes count the assignments each rule rejected first, most common first:

    error[E0501]: no assignment of the holes passes the layout rules
    note: E0304: 2,016 of 2,688 (75%): the tp group crosses an NVLink domain
    note: E0350: 480 of 2,688 (18%): hsdp replicate x shard is not dp

Change or open (`?`) the values the most frequent rule names (here: tp written last in the rank
order); `parc codes CODE` explains each.
""")

register("E0502", "no valid layout fits in GPU memory", """
Some assignments of the holes pass every layout rule, but the memory model predicts that each
needs more than the GPU's memory (minus the reserve), as `parc check` would report E0401 for it.
The note gives the least memory any of them needs. Leave `recompute ?`, `sharding ?` and
`micro-batch ?` open so that search may trade speed for memory, or use more GPUs or GPUs with
more memory.
""")

register("E0503", "the search space is too large", """
After the layout rules, the space still holds more candidates than one search walks (a million
groups of layouts, or a few hundred thousand pipeline-rank evaluations of the memory and time
models: minutes on a small machine at most). This keeps every `parc search` bounded in time and
memory, whatever the spec. Write the values you already know instead of `?` (for example
`tp 8` inside a node, or `order fixed`), and search the rest.
""")

register("E0504", "a cluster question needs the run's length", """
`nodes ?`, `gpus ?` and `gpu ?` ask `parc search` for a cluster, and clusters are compared by the
time and the cost of the whole run (compiler/budget.py): steps x the predicted step time. Without
the run's length there is nothing to compare:

    hardware { gpu ?, nodes ? }
    train { seq 8192, global-batch 2048 }                 # E0504: how long a run?
    train { seq 8192, global-batch 2048, tokens 15T }     # ok

State `tokens` (or `steps`) in `train`. docs/search.md, "Cluster questions", describes the search.
""")

register("E0505", "no cluster meets the constraints", """
`parc search` tried the clusters a spec asks about (`nodes ?`, `gpu ?`) and none meets its
constraints: the `deadline` (time to train), the `budget` (the run's cost), or no layout fits on
any cluster of the range. The label says the best reachable figure, so the fix is concrete:

    train { tokens 15T, deadline 10 days }
    error[E0505]: no cluster finishes within 10 days
      label: the fastest reachable is 41 days
    help: allow at least 41 days (`deadline 41 days`), widen the cluster range, or train on fewer tokens

Relax the constraint to the figure given, widen `nodes ? in LOW to HIGH`, or add GPUs to
`gpu ? in [...]`. The search assumes more GPUs never make the best layout slower (docs/search.md).
""")

# ---------------------------------------------------------------------------------------------
# Code generation (backends/torch, `parc compile`): E06xx, W06xx. Add new codes below this line.

register("W0601", "the precision runs as bf16 in the generated runtime", """
The generated PyTorch runtime imports torch alone. It computes in bf16 (FSDP2's
MixedPrecisionPolicy, fp32 parameters and gradient reductions) whatever the spec's precision:
fp8 matmuls need torchao's float8 training recipe, NVFP4's Transformer Engine, and fp16 loss
scaling, none of which the runtime implements. The memory and time models still describe the precision written.
Write `precision bf16`, or acknowledge with `allow W0601` on the precision line.
""")

register("E0602", "ep folded over an axis that is not data-parallel", """
The generated runtime carves expert groups from ranks that see different tokens: dp and cp (or
ep as its own layout axis). Folding ep over tp or pp would put ranks that hold the same tokens,
or different layers, in one group; the runtime does not generate that layout.

    ep 8 over dp x cp    # supported
    ep 8 over tp x dp    # E0602
""")

register("E0603", "tp does not divide the kv heads (generated runtime)", """
The generated runtime splits the K and V projections over tp by whole heads, like the Q
projection. When tp does not divide the kv head count, Megatron-LM and torchtitan replicate the
kv heads on every tp rank (W0311 describes the memory); the generated runtime does not. Choose
a tp that divides the kv heads.
""")


register("E0604", "a sliding window under context parallelism (generated runtime; no longer reported)", """
No longer reported: the generated runtime runs a sliding window under every context-parallel
flavour it generates. The ring intersects each step's blocks with the band and computes nothing
on a step whose keys lie outside every query's window (the K/V still moves on around the ring);
the all-gather flavour attends each query chunk's band of the gathered sequence; all-to-all runs
the windowed blocks over the whole sequence for its heads. Earlier versions reported E0604 for
a window with cp > 1; the code stays reserved.
""")

register("E0605", "multi-head latent attention in the generated runtime", """
The generated PyTorch runtime builds grouped-query attention: one Q, K and V projection per head.
Multi-head latent attention (`kv-lora-rank`, DeepSeek-V2/V3) projects the hidden state down to
compressed latents, normalises them and projects them up to every head's key, value and query,
with a decoupled RoPE part; the generated model does not implement those layers. parc still
predicts the model's memory and time as Megatron-Core runs it.

    model { ..., head-dim 128, kv-lora-rank 512, q-lora-rank 1536 }
    target megatron    # emits --multi-latent-attention --kv-lora-rank 512 ...
""")

register("E0606", "multi-token prediction in the generated runtime", """
The generated PyTorch runtime trains the next token only. Multi-token prediction (`mtp N`,
DeepSeek-V3 section 2.2) adds N modules after the last layer, each predicting one token further
with its own projection, transformer layer and loss; the generated model does not implement them.
parc still predicts the model's memory and time as Megatron-Core runs it.

    model { ..., mtp 1 }
    target megatron    # emits --mtp-num-layers 1
""")

register("E0610", "torchtitan cannot build this model", """
torchtitan 0.3 builds a job from a config function (`--module llama3 --config llama3_70b`). For
the shapes it registers (`llama3-8b`, `llama3-70b`, `llama3-405b` unchanged) parc names that
config; for any other shape it generates `parc_torchtitan.py`, a config built from torchtitan's
llama3 decoder (dense) or qwen3 decoder (MoE, per-layer MoE or dense FFN, no q/k norms) with the
spec's layers, width, heads, kv heads, head size, FFN, vocabulary, tied embeddings and experts.
Those decoders have SwiGLU, RMSNorm and RoPE and a dropless router balanced by the expert bias
or not at all, so they cannot build a GELU FFN, LayerNorm, learned or no positions, an auxiliary
balancing loss or an expert capacity (GPT-3, Megatron's 1T model): use `target torch` or
`target megatron` for those. Nor can they attend through a sliding window (`window`): torchtitan's
gpt-oss decoder has one (FlexAttention) but is not a shape parc's models can state (attention
sinks, biases); `target megatron` emits `--window-size`. Nor can they build multi-head latent
attention (`kv-lora-rank`): torchtitan's deepseek_v3 decoder has it, but parc does not generate
that decoder's config; `target megatron` emits `--multi-latent-attention`. Nor multi-token
prediction (`mtp`): `target megatron` emits `--mtp-num-layers`.
""")

register("E0611", "the precision differs from torchtitan's registered config", """
torchtitan's registered `llama3_405b` config converts the linear layers to float8 in its model
spec, which the command line cannot change; the 8B and 70B configs train in bf16. The spec's
precision must say what the job will run: `precision fp8` for llama3-405b, `bf16` for the others.
The flavour parc generates for any other shape (`parc_torchtitan.py`) trains in bf16.
""")

register("E0612", "torchtitan recomputes all layers or none", """
torchtitan 0.3's activation checkpointing is `full`, `selective` (per-op) or `none` for every
layer; it has no "first N layers of each stage" (`recompute full N`). Write `recompute full`
or `recompute selective`.
""")

register("E0613", "torchtitan cannot place layers as this pipeline split does", """
torchtitan spreads `layers + a + b` over the pipeline's stages, the first stages one more, and
gives the first stage `a` fewer layers (its embedding) and the last `b` fewer (its output layer):
`pipeline_parallel_first_stage_less_layers` and `..._last_stage_less_layers`. A `split` that no
a and b reproduce (or a virtual-stage count no `pipeline_parallel_layers_per_stage` gives) cannot
be expressed; use an even split or one with lighter ends.
""")

register("E0615", "torchtitan has no SGD optimizer", """
torchtitan 0.3 builds its optimizers by name from Adam, AdamW and Muon
(`torchtitan/components/optimizer`); a spec's `optimizer sgd` would silently train its config's
AdamW. Write `optimizer adamw` (weight decay 0.1) or `optimizer adam` (no decay), or use
`target torch`.
""")

register("E0616", "torchtitan's async tensor parallelism needs torch.compile", """
`tp-overlap all` under `target torchtitan` is torch's async TP, a torch.compile pass that
micro-pipelines each all-gather and reduce-scatter with its matmul; torchtitan refuses
`--compile.enable-async-tensor-parallel` without `--compile.enable` and the model among the
compiled components (`CompileConfig`). Add `compile on`, or drop the overlap.
""")

register("E0617", "torchtitan 0.3 has no such overlap or reduction", """
torchtitan overlaps tensor-parallel communication only through async TP (`tp-overlap all` with
`compile on`), which hides the forward's collectives, and reduces gradients in fp32 only
(`mixed_precision_reduce`). `tp-overlap backward` and `grad-reduce bf16` under `target
torchtitan` would change parc's prediction and nothing in the job: remove them.
""")

register("E0618", "torchtitan 0.3 has no float8 all-gather", """
`target torchtitan { float8-all-gather on }` says FSDP2 gathers the float8 linears' weights in
float8 (torchao's `enable_fsdp_float8_all_gather`), as torchtitan's 405B config did in 2024 with
tensorwise float8; the time model then gathers those weights at a byte and the memory model holds
float8 compute copies. torchtitan 0.3 trains rowwise float8 (`Float8LinearConverter`'s only
recipes are `rowwise` and `rowwise_with_gw_hp`), which gathers the bf16 weight, so the job
`parc compile` writes cannot run it: remove the option. `parc check` predicts with it (the
published 2024 runs are read so).
""")

register("E0620", "Megatron-LM cannot place layers as this pipeline split does", """
Megatron-LM spreads layers evenly over the pipeline's stages; the only unevenness it takes is a
different count on the first and the last stage (`--decoder-first-pipeline-num-layers`,
`--decoder-last-pipeline-num-layers`), and none with virtual stages. Use an even split, or one
where only the two ends differ.
""")

register("E0621", "Megatron-Core cannot carve expert groups from those axes", """
Megatron-Core carves expert-parallel groups from all the dense ranks in its order tp-cp-dp:
with expert tensor parallelism 1 the expert group takes consecutive ranks of tp x cp x dp
(`ep N over tp x cp x dp`); with expert tensor parallelism equal to tp, of cp x dp
(`ep N over cp x dp`). A fold that leaves out cp or dp (when their degree is above 1) would
group other ranks than Megatron-Core does.
""")


register("E0614", "torchtitan has no activation offloading", """
torchtitan 0.3 has no option that copies saved activations to host memory (its activation
checkpointing is `none`, `selective` or `full`; its CPU offload is FSDP2's parameter offload,
another thing). A spec with `offload-activations` cannot be run by `target torchtitan`: use
`target torch` (the generated job wraps the offloaded layers in saved-tensor hooks that copy to
host memory, as `torch.autograd.graph.save_on_cpu` does) or `target megatron`
(`--cpu-offloading-num-layers`), or remove it. `parc check` reports it with the spec.
""")

register("E0622", "Megatron-Core does not offload activations with pipeline parallelism", """
Megatron-Core raises "Currently there is no support for Pipeline parallelism with CPU
offloading" when `--cpu-offloading` meets `--pipeline-model-parallel-size` above 1
(`TransformerConfig.__post_init__`). Under `target megatron`, `offload-activations` needs `pp 1`
(Megatron-Bridge's GB200 recipes that offload shard with FSDP instead); `target torch` runs it
with a pipeline. `parc check` reports it with the layout, and `parc search` never ranks a
pipelined layout that offloads under `target megatron`.
""")

register("E0623", "Megatron-LM's torch FSDP2 does not run with that", """
Under `target megatron`, `sharding zero3` is Megatron-LM's `--use-torch-fsdp2`, whose argument
checks (`validate_args`, megatron/training/arguments.py at core_v0.16.0) refuse it with pipeline
parallelism, expert parallelism, tied input and output embeddings and fp16. Use `sharding zero1`
(Megatron-Core's distributed optimizer), or `target torch`, whose generated FSDP2 job runs with
all of them. `parc search` never ranks such a layout under `target megatron`.
""")

register("E0624", "Megatron-LM needs sequence parallelism here", """
With tensor parallelism above 1, Megatron-LM asserts sequence parallelism under
`--tp-comm-overlap` (parc's `tp-overlap all`: the GEMMs overlap the all-gather and
reduce-scatter that sequence parallelism turns the all-reduces into), and Megatron-Core's MoE
layer raises on the first training step without it ("performance may degrade if MoE and tensor
parallelism are enabled without also enabling sequence parallelism"). Write
`tp { sequence-parallel on }` (the default). `parc search` keeps sequence parallelism on there.
""")

register("E0625", "Megatron-Core's expert bias needs a sigmoid router", """
DeepSeek-V3's auxiliary-loss-free balancing (`moe-balance aux-free`) adds a per-expert bias to
the router's scores; Megatron-Core implements it (`--moe-router-enable-expert-bias`) only with
a sigmoid score function (TransformerConfig refuses it otherwise), and parc's router is a
softmax, so the Megatron job would train another router. Use `moe-balance aux-loss RATE` under
`target megatron`, or `target torch` / `target torchtitan`, which run the bias over a softmax.
""")

register("E0626", "fp8 on a GPU without fp8 tensor cores", """
Transformer Engine, which runs Megatron-LM's fp8, asserts compute capability 8.9 or higher (Ada,
Hopper, Blackwell). On an A100 (8.0) a `precision fp8` job under `target megatron` stops at its
first step; write `precision bf16`. (`target torch` runs an fp8 spec in bf16 and says so, W0601.)
""")

register("E0627", "An fp8 block-scaling recipe the GPU cannot run", """
MXFP8 (`fp8-recipe mxfp8`) scales each block of 32 elements by its own power of two, which only
Blackwell's tensor cores apply inside the GEMM; Transformer Engine refuses the recipe on Hopper
and Ada ("MXFP8 ... requires compute capability 10.0"). Use `fp8-recipe tensorwise`, `blockwise`
or `delayed` there, or a Blackwell GPU (`gpu b200`, `gpu gb200-nvl72`, `gpu b300`, `gpu gb300-nvl72`).
The blockwise recipe (`fp8-recipe blockwise`, DeepSeek-V3's 1x128 and 128x128 blocks) needs the
block-scaled fp8 GEMMs of compute capability 9.0 or later (Hopper, Blackwell; "FP8 block scaled
GEMM requires compute capability 9.0 or higher and CUDA >= 12.9").
""")

register("E0629", "NVFP4 on a GPU without FP4 tensor cores", """
NVFP4 (`precision nvfp4`) multiplies 4-bit E2M1 values scaled per block of 16 by an E4M3 factor,
which only Blackwell's fifth-generation tensor cores do; Transformer Engine refuses the recipe
below compute capability 10.0. Under `target megatron` use a Blackwell GPU (`gpu b200`,
`gb200-nvl72`, `b300`, `gb300-nvl72`), or `precision fp8` (Hopper, Ada) or `bf16`. A GPU
defined in the spec states its FP4 peak with `fp4 ... TFLOP/s`.
""")

register("E0630", "NVFP4 with the userbuffers tp overlap", """
`tp-overlap all` runs Megatron-LM's `--tp-comm-overlap`: Transformer Engine's userbuffers, which
overlap the sequence-parallel all-gathers and reduce-scatters with the GEMMs chunk by chunk. Their
buffers take FP8, MXFP8 or FP8-block inputs only; under NVFP4 Transformer Engine stops at the first
forward ("Unsupported quantizer for Userbuffers"), and NVIDIA's NVFP4 recipes turn the overlap
off. Write `tp-overlap backward` (Megatron-LM's default overlap of the backward's collectives), or
`precision fp8`.
""")

register("E0628", "recompute modules Megatron-Core cannot run here", """
`recompute selective [moe_act, mla_up_proj, ...]` names Megatron-Core's `--recompute-modules`: the
parts of each layer it runs again before the backward instead of keeping their activations
(core_attn, layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj). They exist only under
`target megatron`: parc's job and torchtitan have their own selective policies (`recompute
selective`). Each module must name a part the model has: `mla_up_proj` latent attention
(Megatron-Core refuses it otherwise), `moe` and `moe_act` MoE layers, `shared_experts` shared
experts, `mlp` dense FFN layers. Under fp8 with delayed scaling Megatron-Core does not recompute
`moe_act` or `layernorm`; per-tensor current scaling (`fp8-recipe tensorwise`) and MXFP8 do.

    train { recompute selective [mla_up_proj, moe_act] }
""")

# ---------------------------------------------------------------------------------------------
# `parc import` (compiler/importer.py): E07xx, W07xx.

register("W0701", "an option parc does not import", """
`parc import` reads a torchtitan command line, a Megatron-LM launch script or a Hugging Face
config.json into a spec. An option or key that no parc setting describes (a logging interval,
a learning rate, a data path, a bias in the attention) is reported at its file:line instead of
being dropped silently: check that the spec describes the job you meant.
""")

register("W0703", "a torchtitan command line that compiles the loss but not the model", """
torchtitan's `--compile.components` lists what `--compile.enable` compiles: `model` (every block,
`apply_compile`) and `loss` (`BaseLoss._maybe_compile`), both by default. It is one word split on
commas (`--compile.components model,loss`, or `model` alone: parc's `compile-loss off`).

A list without `model` (`--compile.components loss`) leaves every block eager. parc's `compile on`
means the blocks compiled, and parc has no setting for a compiled loss beside an eager model, so
the file is imported as `compile off` (the model as it runs; the compiled loss's saving of the
logits' fp32 copy is not counted) and this warning says so at the option.
""")

register("E0702", "a file parc cannot import", """
The file is none of the three kinds `parc import` reads (a torchtitan 0.3 command line, a
Megatron-LM pretrain_gpt.py command line, a Hugging Face config.json), or it lacks what a spec
needs (the layer count, a registered model, an explicit degree).

A torchtitan command line with `--module parc_torchtitan --config parc_job` names the flavour
module `parc compile` writes for a shape torchtitan does not register. parc reads it from the
command line's folder without running it (it is parsed, and only literals such as `LAYERS = 32`
are read), so the module must be beside the command line, define the `--config` function, and
give the model's shape as literal constants whose MoE layers a `moe-layers` rule can state.
""")
