"""The memory of every pipeline rank: model states + activations in flight + transient buffers.

Pure functions over a `Shape` and `Knobs`; the pieces are cached by the part of the knobs they
depend on, so a search that changes one knob recomputes one piece:

- parameters per rank (`rank_params`): tp, ep, the chunking (pp, virtual stages, schedule, split);
- activations per rank (`rank_activations`): tp, sequence parallelism, cp and its flavour, seq,
  micro-batch, recomputation, and the chunking;
- micro-batches in flight (`schedules.peak_states`): schedule, pp, virtual stages, micro-batches;
- model states: plain arithmetic on the parameters and dp, cp, sharding, precision, optimizer.

A rank's peak is the largest, over the undominated schedule states, of

    sum over its chunks c:  held_c x A_c + pending_c x D_c (+ unsharded_c x U_c, zero3)

with A_c the chunk's saved activations per micro-batch, D_c what a micro-batch waiting for its
weight backward keeps on top (the output gradients the weight backward needs), and U_c
the chunk's gathered parameters, plus the persistent model states and the transient buffers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType

from ..frozen import hash_once
from . import activations as act
from .activations import LayerActivations, layer_activations
from .buffers import (
    backward_working_set,
    ffn_weight_gradients,
    fsdp_buffers,
    fsdp_expert_temporaries,
    largest_layer,
    last_layer,
)
from .inputs import Knobs, Shape
from .parameters import (
    Params,
    by_rank,
    chunk_params,
    chunks_of,
    fsdp_padding,
    layer_params,
    padded_vocab,
)
from .schedules import (
    MAX_STATE_CHUNKS,
    SINGLE_STAGE,
    ZERO_BUBBLE,
    kept_receive_buffers,
    moment_states,
    peak_states,
    receive_buffers,
    receive_moments,
    received_chunks,
    walked_peak,
    weighted_peak,
)
from .states import (
    FP32,
    States,
    checkpoint_gather_bytes,
    compute_copy_bytes,
    model_states,
    zero1_buffer_bytes,
    zero1_param_bytes,
)


@dataclass(frozen=True, slots=True)
class StageMemory:
    """The worst rank of one pipeline stage (all its ranks hold the same), in bytes."""

    stage: int
    layers: int
    params: int
    grads: int
    optimizer: int
    activations: int
    buffers: int
    in_flight: int
    """Chunk-micro-batches whose activations are held at the peak."""
    p2p: int = 0
    """Pipelining's receive buffers alive at the rank's worst moment (`p2p_buffers`): posted
    and not yet used, or read by the running backward."""
    embedding_backward: int = 0
    """How far the vocabulary-parallel embedding's backward (the whole vocabulary's gradient and
    this rank's rows copied out of it, `activations.embedding_backward_buffer`, less the saved
    tensors its micro-batch's layers have freed by then, `embedding_moment`) rises above the
    layers' working set counted in `buffers`: the two are alive at different moments, so only
    the excess adds."""
    checkpoint: int = 0
    """Bytes while a checkpoint is saved or loaded: the parameters (and copies held between
    steps), the optimizer states and what building the state dict gathers (ZeRO-1: whole
    optimizer states). Between steps, outside `total`, the step's peak."""
    moment: tuple | None = None
    """The schedule state that sets the peak, as the walk found it: (held per chunk, pending per
    chunk, running local chunk, kind of moment, receive buffers alive), the last three None where
    the model adds the largest working set to the largest state (no pairing); None past
    `MAX_STATE_CHUNKS`. `memory.moment.name_moment` names the action (`parc explain`)."""
    backward_of_step: int = 0
    """Where a rank runs no forward between its first two backwards (`relieved_split`): 1 or 2,
    the backward of the step whose bytes the peak is; 0 elsewhere."""
    embedding_peak: bool = False
    """Whether that backward's peak is the embedding's backward rather than a layer's
    (`relieved_split`; only where `backward_of_step` is set)."""

    @property
    def total(self) -> int:
        return (self.params + self.grads + self.optimizer + self.activations + self.buffers + self.p2p
                + self.embedding_backward)


@dataclass(frozen=True, slots=True)
class ChunkActivations:
    saved: int
    """A_c: bytes held per micro-batch in flight."""
    pending: int
    """D_c: extra bytes per micro-batch between its input and its weight backward: the output
    gradients torch's `stage_backward_input` stores for `stage_backward_weight` and the stage
    input's gradient (`split_pending`)."""
    output: int = 0
    """Held per micro-batch in flight beside what autograd saves: a pipeline stage keeps its
    output in `fwd_cache` from the forward to the backward (`PipelineStage.forward_one_chunk`;
    the residual stream, or the last chunk's logits: fp32 in parc's job, the compute dtype in
    torchtitan's, `activations.stage_output_logits_bytes`). 0 without pipelining.

    The stage's input is not counted beside `saved`: a received tensor (the generated job's
    `ReceiveOnDemandStage` hands the received buffer to the forward as its input) *is* the
    block input the first layer saves (its norm's input; the checkpoint's input under
    selective or full recomputation), or the final norm's input of a chunk without layers: one
    storage, counted once in `saved`. The first stage's input is the token ids; the embedding
    output is the first layer's saved input. A rehearsal histogram of the middle 405B stage
    shows four boundary tensors per micro-batch in flight under selective recomputation
    (block input, q, attention output, kept output), not five (docs/memory-model.md, §7)."""

    shared_input: int = 0
    """Of `saved`, the bytes that are another local chunk's kept `output`, one storage: at the
    turn of a V schedule (`v_turn`) the second chunk's input is the first's output
    (`PipelineStage.set_local_fwd_input` detaches it, sharing its storage), so the block input
    its first layer saves is counted with the first chunk."""

    @property
    def held(self) -> int:
        """Bytes per micro-batch in flight: saved activations and the stage's kept output (less
        an input another local chunk holds)."""
        return self.saved + self.output - self.shared_input


@dataclass(frozen=True, slots=True)
class RankParams:
    chunks: tuple
    """The rank's chunks (`stages.Chunk`), model order."""
    params: Params
    per_chunk: tuple[Params, ...]
    layers: int
    output: bool
    largest_layer: Params | None
    root: Params = Params()
    """What the chunks hold outside their layers (embeddings, final norm, output layer): FSDP2
    keeps a root module's parameters gathered from its forward to its backward."""
    last_layer: Params | None = None
    """The rank's last layer in model order (`buffers.last_layer`): torchtitan does not reshard
    it after forward (`model.gathered_at_loss`)."""


@dataclass(frozen=True, slots=True)
class RankActivations:
    chunks: tuple[ChunkActivations, ...]
    transient: int
    """The larger of the backward working set of one layer and the loss buffers."""
    embedding_backward: int = 0
    """What the embedding's backward adds to the activations in flight (`embedding_moment`: the
    whole vocabulary's gradient and this rank's rows, less the backpropagated micro-batch's
    freed layer tensors; 0 without the embedding). The stage counts how far it rises above the
    layers' moment (`StageMemory.embedding_backward`)."""
    working: tuple[int, ...] = ()
    """Each chunk's backward working set (with the stage input's gradient Schedule1F1B keeps,
    `sent_input_gradient`); `transient` is the largest. A chunk's working set is alive while that
    chunk computes, so it pairs with the schedule's moments of that chunk (`moments_peak`)."""
    embedding_chunk: int = -1
    """The local chunk that holds the embedding (its backward is `embedding_backward`'s moment), or -1."""
    input_working: tuple[int, ...] = ()
    """Each chunk's `ChunkPieces.input_working` (with `sent_input_gradient`): the extra of its
    input backward's moment over the state before it (`moments_peak`)."""
    weight_working: tuple[int, ...] = ()
    """Each chunk's `ChunkPieces.weight_working`: the extra of its weight backward's moment."""


def layer_mode(recompute: str, recompute_layers: int | None, index_in_chunk: int) -> str:
    """Recompute mode of a layer: `full N` recomputes the first N layers of each chunk."""
    if recompute == "full" and recompute_layers is not None and index_in_chunk >= recompute_layers:
        return "none"
    return recompute


@lru_cache(maxsize=4096)
def _layer_kinds(shape: Shape, first: int, layers: int, recompute: str,
                 recompute_layers: int | None) -> tuple[tuple[tuple[bool, str], int], ...]:
    """How many layers of a chunk are of each (MoE?, recompute mode) kind, first seen first.
    Kept (emptied by `clear_caches`): an MoE model's chunks are walked layer by layer, and the
    same chunk recurs under every activation knob a search tries (`_chunk_activations`)."""
    if not shape.moe and (recompute != "full" or recompute_layers is None):
        return (((False, recompute), layers),) if layers else ()
    kinds: dict[tuple[bool, str], int] = {}
    for i in range(layers):
        key = (shape.is_moe(first + i), layer_mode(recompute, recompute_layers, i))
        kinds[key] = kinds.get(key, 0) + 1
    return tuple(kinds.items())


@lru_cache(maxsize=4096)
def rank_params(shape: Shape, tp: int, ep: int, pp: int, v: int, schedule: str,
                split: tuple[int, ...] | None, runtime: str) -> tuple[RankParams, ...]:
    """Each pp rank's parameters. A rank's figures read its chunks through their layer counts,
    embedding, output and tied-copy flags and (MoE) which of their layers are MoE layers only
    (`chunk_params`, `largest_layer`, `last_layer`), so ranks alike in those (most of a deep
    pipeline's) share one computation (`_rank_figures`); each keeps its own chunks."""
    chunks = chunks_of(shape.layers, pp, v, schedule, split, shape.tied, shape.mtp)
    out = []
    alike: dict[tuple, RankParams] = {}
    for mine in by_rank(chunks, pp):
        key = tuple((c.layers, c.embedding, c.output, c.tied_copy,
                     shape.moe[c.first_layer:c.first_layer + c.layers] if shape.moe else None) for c in mine)
        found = alike.get(key)
        if found is None:
            found = alike[key] = _rank_figures(shape, tp, ep, runtime, mine)
        out.append(found if found.chunks is mine else RankParams(
            chunks=mine, params=found.params, per_chunk=found.per_chunk, layers=found.layers, output=found.output,
            largest_layer=found.largest_layer, root=found.root, last_layer=found.last_layer))
    return tuple(out)


def _rank_figures(shape: Shape, tp: int, ep: int, runtime: str, mine: tuple) -> RankParams:
    """One pp rank's `RankParams` from its chunks (`rank_params`' per rank)."""
    per_chunk = tuple(chunk_params(shape, c, tp, ep, runtime) for c in mine)
    total = Params()
    for p in per_chunk:
        total += p
    # the layers' own parameters, by kind (a layer's depend on its kind only): counted, not
    # summed layer by layer (the same integers)
    moe = sum(shape.moe[c.first_layer:c.first_layer + c.layers].count(True) for c in mine) if shape.moe else 0
    layered = Params()
    for is_moe, count in ((False, sum(c.layers for c in mine) - moe), (True, moe)):
        if count:
            p = layer_params(shape, tp, ep, is_moe)
            layered += Params(p.linear * count, p.other * count, p.expert * count)
    return RankParams(chunks=mine, params=total, per_chunk=per_chunk,
                      layers=sum(c.layers for c in mine), output=any(c.output for c in mine),
                      largest_layer=largest_layer(shape, tp, ep, mine),
                      root=Params(total.linear - layered.linear, total.other - layered.other,
                                  total.expert - layered.expert),
                      last_layer=last_layer(shape, tp, ep, mine))


@lru_cache(maxsize=16384)
def activation_knobs(tp: int, sp: bool, cp: int, flavour: str, seq: int, micro: int, runtime: str, ep: int = 1,
                     precision: str = "bf16", device: str = "cuda", model_code: str = "parc",
                     fp8_recipe: str = "delayed") -> Knobs:
    """The knobs a layer's activations depend on, and only those (they key its cache). torch's
    layers do not depend on bf16, fp16 or fp8 (all keep bf16 activations: torchao's float8 linear
    saves its high-precision input); fp32 they do, and Megatron's fp8 and NVFP4 (Transformer Engine's linears
    save their quantized inputs, `activations._megatron_layer`), and under fp8 its recipe (which
    linears keep their bf16 input instead). Kept: one frozen object per value, so the caches it keys
    find it by identity (a fresh bundle was built, then compared field by field, on each of a
    search's thousands of floors)."""
    megatron = runtime.startswith("megatron")
    kept = precision if precision == "fp32" or (precision in ("fp8", "nvfp4") and megatron) else "bf16"
    recipe = fp8_recipe if kept == "fp8" else "delayed"
    return Knobs(tp=tp, pp=1, dp=1, cp=cp, ep=ep, sequence_parallel=sp, cp_flavour=flavour, seq=seq,
                 micro_batch=micro, runtime=runtime, precision=kept, device=device, model_code=model_code,
                 fp8_recipe=recipe)


def layer_knobs_of(shape: Shape, k: Knobs) -> Knobs:
    """`activation_knobs` of a layout's knobs: ep counts only where the model has experts."""
    return activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                            k.ep if shape.moe else 1, k.precision, k.device, k.model_code, k.fp8_recipe)


@dataclass(frozen=True, slots=True)
class RankLayout:
    """What a pp rank's activations depend on beyond the model: one layer's activation knobs
    (`activation_knobs`), how the pipeline chunks the layers, and what is recomputed or
    offloaded. Not the dp degree, the batch nor the micro-batch count, so the layouts of a search
    that differ only there share one computation (it keys `_rank_activations` and `_end_ranks`)."""

    layer_knobs: Knobs
    pp: int
    v: int
    """Virtual stages per pp rank."""
    schedule: str
    split: tuple[int, ...] | None
    recompute: str
    recompute_layers: int | None
    offload: int
    """Layers whose saved activations are offloaded to the host."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, shape: Shape, k: Knobs) -> RankLayout:
        return cls(layer_knobs=layer_knobs_of(shape, k),
                   pp=k.pp, v=k.virtual_stages, schedule=k.schedule, split=k.split, recompute=k.recompute,
                   recompute_layers=k.recompute_layers, offload=k.offload_layers)

    @property
    def released(self) -> bool:
        """Whether a backward frees its micro-batch's saved tensors (`released_backward`)."""
        return released_backward(self.schedule, self.pp)

    def turn(self, index: int) -> bool:
        """Whether pp rank `index` holds the turn of a V in parc's job (`v_turn`)."""
        return self.layer_knobs.runtime == "torch" and v_turn(self.schedule, self.pp, index)


def rank_activations(shape: Shape, k: Knobs) -> tuple[RankActivations, ...]:
    return _rank_activations(shape, RankLayout.of(shape, k))


ChunkSignature = tuple[int, bool, bool, int]
"""(layers, embedding?, output?, first layer when the model is MoE, else 0): chunks of equal
signature hold the same activations (the layer kinds depend on the first layer only through the
MoE pattern). Whether a chunk receives its input does not matter: the received tensor is its
first layer's saved input (see `ChunkActivations`)."""


def _signature(shape: Shape, chunk) -> ChunkSignature:
    return (chunk.layers, chunk.embedding, chunk.output,
            _canonical_firsts(shape, chunk.layers)[chunk.first_layer] if shape.moe else 0)


@lru_cache(maxsize=4096)
def _canonical_firsts(shape: Shape, layers: int) -> tuple[int, ...]:
    """Per first layer of a chunk of `layers` layers, the first layer of the earliest chunk with
    the same MoE pattern (`Shape.moe` over its layers): a chunk reads its first layer through
    that pattern alone (`_layer_kinds`), so chunks of one pattern share one signature and their
    activations are computed once. Every layer MoE (Mixtral) or every layer past a few dense
    ones (DeepSeek-V3): one signature where each first layer had its own, and a search's memory
    floors (`first_backward_floors`, per tp, cp, ep and pipeline) computed a chunk's
    activations once per pattern instead of once per position."""
    seen: dict[tuple[bool, ...], int] = {}
    return tuple(seen.setdefault(shape.moe[first:first + layers], first) for first in range(len(shape.moe) + 1))


@lru_cache(maxsize=4096)
def rank_signatures(shape: Shape, pp: int, v: int, schedule: str,
                    split: tuple[int, ...] | None) -> tuple[tuple[ChunkSignature, ...], ...]:
    """Each pp rank's chunks as signatures, model order (interleaving makes many alike)."""
    chunks = chunks_of(shape.layers, pp, v, schedule, split, shape.tied, shape.mtp)
    return tuple(tuple(_signature(shape, c) for c in mine) for mine in by_rank(chunks, pp))


@lru_cache(maxsize=4096)
def distinct_rank_signatures(shape: Shape, pp: int, v: int, schedule: str,
                             split: tuple[int, ...] | None) -> tuple[tuple[ChunkSignature, ...], ...]:
    """`rank_signatures` without repeats, in rank order: deep pipelines have a few distinct
    ranks (the first, the last, the ones between), and floors over every rank need one each."""
    return tuple(dict.fromkeys(rank_signatures(shape, pp, v, schedule, split)))


@dataclass(frozen=True)
class ChunkPieces:
    """What one chunk signature holds: its activations, its backward working set, and the
    embedding's backward buffer when the chunk has the embedding."""

    activations: ChunkActivations
    working: int
    embedding_backward: int
    input_working: int = 0
    """What the chunk's input backward (a zero-bubble schedule's I) adds to the state before it
    at its worst moment (`input_pass_working`); `working` where there is no input pass."""
    weight_working: int = 0
    """What its weight backward (W) adds to the state before it: a layer's working set (the
    bound on the whole saved set, recomputation included) or the output projection's weight
    gradient, not the loss's (the weight pass runs no loss); `working` where there is no W."""


@lru_cache(maxsize=65536)
def _chunk_activations(shape: Shape, ak: Knobs, signature: ChunkSignature, recompute: str,
                       recompute_layers: int | None, pipelined: bool, released: bool = True,
                       offload: int = 0) -> ChunkPieces:
    """The activations, working set and embedding backward buffer of one chunk signature.
    `released`: the backward frees the micro-batch's tensors as it consumes them
    (`buffers.backward_working_set`); not under a zero-bubble schedule, whose input backward
    runs autograd with retain_graph=True and keeps the saved set for the weight backward.
    `offload`: the first layers whose saved sets go to host memory (`offload_relief`)."""
    layers, embedding, output, first = signature
    vocab = padded_vocab(shape.vocab, ak.tp, ak.runtime)
    torch = ak.runtime == "torch"
    saved = grads = work = weight_layer = embedding_buffer = 0
    for (moe, mode), count in _layer_kinds(shape, first, layers, recompute, recompute_layers):
        a = layer_activations(shape, ak, moe, mode)
        saved += count * a.saved
        grads += count * a.weight_grads
        if torch:
            work = max(work, backward_working_set(a, ffn_weight_gradients(shape, ak, moe), released))
            weight_layer = max(weight_layer, weight_pass_working(a, ffn_weight_gradients(shape, ak, moe)))
    saved -= offload_relief(shape, ak, first, layers, offload, recompute, recompute_layers)
    if embedding:
        # the embedding's backward runs after its micro-batch's layers have run theirs, which
        # freed their saved tensors (`embedding_moment`)
        embedding_buffer = embedding_moment(act.embedding_backward_buffer(shape, ak), saved, released)
        saved += act.embedding_activations(shape, ak)
    if output:
        head = act.output_activations(shape, ak, vocab)
        saved += head
        if torch and released:
            work = max(0, work - head + output_weight_gradient(shape, ak, vocab))
        work = max(work, act.logits_buffer(ak, vocab))
    kept = 0
    if torch and pipelined:
        kept = act.stage_output_logits_bytes(ak, vocab) if output else act.boundary_bytes(shape, ak)
    pending = split_pending(shape, ak, grads, layers, embedding, torch, pipelined)
    input_work = weight_work = work
    if torch and not released and layers:
        input_work = input_pass_working(work, weight_layer, pending, act.boundary_bytes(shape, ak) if pipelined
                                        and pending else 0)
        weight_work = max(weight_layer, output_weight_gradient(shape, ak, vocab) if output else 0)
    return ChunkPieces(ChunkActivations(saved=saved, pending=pending, output=kept),
                       work, embedding_buffer, input_work, weight_work)


def offloaded_saved(shape: Shape, ak: Knobs, first: int, layers: int, offload: int, recompute: str,
                    recompute_layers: int | None) -> tuple[int, ...]:
    """The saved-activation bytes of each offloaded layer of a chunk (its first
    min(offload, layers - 1), in order) per micro-batch: what goes to host memory in the forward
    and comes back in the backward (Megatron-Core's `cpu_offloading_num_layers` counts layers
    from the chunk's first; it refuses as many as the chunk holds, E0371)."""
    count = min(offload, layers - 1)
    if count <= 0:
        return ()
    return tuple(layer_activations(shape, ak, shape.is_moe(first + i), layer_mode(recompute, recompute_layers, i)).saved
                 for i in range(count))


def offload_relief(shape: Shape, ak: Knobs, first: int, layers: int, offload: int, recompute: str,
                   recompute_layers: int | None) -> int:
    """What offloading takes off a micro-batch's saved set at its peak: under Megatron-Core every
    offloaded layer's saved set but the last one's; in parc's own job every offloaded layer's.

    Transformer Engine's handler (`AsyncDoubleBufferGroupOffloadHandler`, cpu_offload_v1.py,
    which Megatron-Core's `get_cpu_offload_context` builds with the block's layers as the model's
    groups) copies offloaded layer k's tensors on a side stream and frees their GPU copy at the
    end of layer `layer_window_map[k]` = about (k + 1) x layers / N - 1; group N - 1's window is
    the chunk's last layer. Saved sets on the GPU after layer j: j + 1 produced less those
    freed, which grows with j, so the most is at the end of the forward: every layer that is
    not offloaded and the last offloaded one, still in flight. The backward mirrors it (group k
    is reloaded when the backward reaches layer `layer_window_map[k]`, first group N - 1, before
    the chunk's last layer runs its backward). parc's own job (`HostOffload`, as `save_on_cpu`)
    copies on the compute stream, so a saved tensor's GPU block is free for the next kernel as
    soon as autograd drops it (the caching allocator orders reuse on the stream, after the copy):
    every offloaded layer leaves by the end of the forward, and the backward reloads one layer's
    tensors as it unpacks them, never more than the layer it replaces. With several
    micro-batches in flight (a
    pipeline, `target torch` only: Megatron-Core refuses it, E0622), all but the newest have
    every offloaded layer on the host: each counted so is an upper bound. Nothing leaves where the
    tensors already are in host memory (`device` cpu, and the CPU fake-tensor rehearsal, "fake":
    the job's hook leaves them as they are)."""
    if ak.device != "cuda":
        return 0
    sizes = offloaded_saved(shape, ak, first, layers, offload, recompute, recompute_layers)
    return sum(sizes) if ak.runtime == "torch" else sum(sizes[:-1])


def weight_pass_working(a: LayerActivations, weight_gradients: int) -> int:
    """What a layer's weight pass (torch's `stage_backward_weight`, a zero-bubble schedule's W)
    adds to the state before it: the released backward's worst moment less the saved set
    (`buffers.backward_working_set` with `released`), the bound where the layer has no moments.

    The weight pass computes no activation gradient: the ones it reads are the micro-batch's
    pending set (`split_pending`), already counted in the state. What it adds is the
    recomputed forward, which the checkpoint frees as each tensor is unpacked (its "Rule 4",
    also under retain_graph), and the weight gradients: a backward that frees what it consumes
    holds as much of both at its worst moment, with the activation gradients alive then on
    top. Before, the weight pass added the input pass's bound (the whole recomputed set, every
    activation gradient and the FFN's weight gradients at once), counting the activation
    gradients twice: at DeepSeek's rank 2047 (rehearse-deepseek-32, a weight pass of stage 16's
    MoE layer) 4,046,503,936 bytes where the tracker holds 3,493,382,144 of the layer's
    recomputed tensors; the moment gives 3,698,900,992 (docs/memory-model.md, "Moments by
    chunk")."""
    return backward_working_set(a, weight_gradients, released=True)


def input_pass_working(working: int, layer_working: int, pending: int, input_gradient: int) -> int:
    """What a zero-bubble input backward (torch's `stage_backward_input`) adds at its worst
    moment to what the rank held before it, its micro-batch's pending set (`split_pending`)
    included as far as it exists then: the loss's backward (in `working` on the output chunk)
    runs first, before any layer has left an output gradient for the weight pass; a layer's
    backward (`layer_working`: `weight_pass_working`, the released backward's worst moment,
    whose activation gradients the pass keeps in the pending set as it goes and whose weight
    gradients it does not compute) runs with at most the pending set but the stage input's
    gradient, which comes after every layer. `layer_working` was the bound on the whole
    saved set (every activation gradient beside the pending set that holds some of them:
    DeepSeek's rank 2047 peaked in its input pass by the model, 347,602,944 bytes over the
    moment, above the weight pass where the rehearsal peaks). Before, the moment was
    the state after the input pass (the whole pending set) plus the chunk's working set: at
    DeepSeek's first rank (rehearse-deepseek-32, rank 0, DualPipe-V) the loss's two fp32 logits
    tensors (4.24 GB) beside the whole pending set (1.28 GB) of its micro-batch on stage 31
    (docs/memory-model.md, "Moments by chunk")."""
    return max(working, layer_working + pending - input_gradient)


def output_weight_gradient(shape: Shape, ak: Knobs, vocab: int) -> int:
    """The output projection's compute-dtype weight gradient (vocab / tp rows), alive from the
    output projection's backward until FSDP2's post-backward of the root module that holds it,
    which runs after every layer of the chunk has run its backward (`ffn_weight_gradients`: the
    same for a layer's FFN).

    The layers' backward on the last chunk comes after the loss's and the output projection's:
    the micro-batch's head activations (`activations.output_activations`: the final norm's and
    the output projection's inputs, the fp32 log-softmax, the targets) are freed by then and this
    gradient is alive; the stage's kept fp32 logits (`ChunkActivations.output`) are still held
    (the stage drops them when the backward returns). So a layer's working set on that chunk
    adds to the micro-batch's held set less its head plus this gradient (`_chunk_activations`;
    the loss's moment, `logits_buffer`, is the other). Traced at Llama 3 405B's last stage
    (rehearse-405b-16 rank 120): at the layer's worst moment the 525 MB bf16 output gradient
    and the 525 MB fp32 logits are alive, the 827 MB head is not; the model had added the
    layer's working set to the whole held set, 152 MB over its worst moment (the loss's
    backward). Not under a zero-bubble schedule, whose input pass keeps the graph."""
    return round(vocab / ak.tp * shape.hidden * act.activation_bytes(ak.precision))


def sent_input_gradient(shape: Shape, ak: Knobs, first: ChunkSignature, schedule: str, pp: int, v: int) -> int:
    """The stage input's gradient that a non-first stage still holds through its next
    micro-batch's backward (one boundary tensor, alive at every backward moment but the step's
    first): torch's `Schedule1F1B` keeps the backward's send ops (`bwd_sends`, P2POps holding
    the gradient `get_bwd_send_ops` popped from `bwd_cache`) in a local until the next backward
    replaces them. The first stage receives token ids, which need no gradient. Only
    `Schedule1F1B` (schedule 1f1b, one chunk per rank) keeps them: `ScheduleGPipe` and the
    multi-chunk runtime schedules rebind their send ops before each action's compute (what a
    GPU's unwaited NCCL sends would hold there is not modelled). Under a zero-bubble schedule
    the input pass's gradient is counted per pending micro-batch (`split_pending`), not here;
    nor is it in `first_backward_floors` (nothing is held at the step's first backward).
    Rehearsed at Llama 3 405B's middle and last stages (ranks 64 and 120 of
    rehearse-405b-16): each rose by one such tensor once the received inputs required grad
    (docs/memory-model.md, "The stage input's gradient")."""
    if ak.runtime != "torch" or pp == 1 or schedule != "1f1b" or v != 1 or first[1]:  # [1]: the embedding
        return 0
    return act.boundary_bytes(shape, ak)


def split_pending(shape: Shape, ak: Knobs, grads: int, layers: int, embedding: bool, torch: bool,
                  pipelined: bool) -> int:
    """D_c: what a micro-batch keeps between torch's input pass (`stage_backward_input`) and its
    weight pass (`stage_backward_weight`), beside its saved activations:

    - the output gradients of the nodes the weight pass starts from (`grads`, the layers'
      `weight_grads`; a chunk's last one is its received output gradient, kept with the
      micro-batch's backward state);
    - the stage input's gradient: the input pass sets it as the input's `.grad`, and the
      stage keeps the inputs in its backward state until the weight pass (one boundary
      tensor, sent to the previous stage and still held here);
    - nothing on the first stage: torch skips its input pass (its input, token ids, needs no
      gradient) and runs a full backward in the weight pass;
    - under fake tensors on the CPU (the rehearsal, `device == "fake"`), each of a layer's two
      RMSNorms keeps its weight's output gradient in fp32: the CPU's composite RMSNorm multiplies
      by the weight before casting back, where a GPU's fused kernel takes the compute-dtype
      gradient the layer's `weight_grads` count (one boundary-sized tensor more per norm).

    Traced at DualPipe-V's turn (rehearse-dualpipe rank 7, rehearse-deepseek-32 rank 2047): per
    pending micro-batch on stage pp - 1 the input pass leaves q, k, v, o's output gradients,
    the FFN's, the norms' and one add: the input gradient (docs/memory-model.md)."""
    if not torch:
        return 0
    if embedding and pipelined:
        return 0
    boundary = act.boundary_bytes(shape, ak)
    composite = 0
    if ak.device == "fake" and not shape.layernorm:  # LayerNorm has a CPU kernel of its own
        composite = 2 * layers * round(boundary * (act.FP32 - act.activation_bytes(ak.precision))
                                       / act.activation_bytes(ak.precision))
    return grads + composite + (boundary if pipelined else 0)


def embedding_moment(buffer: int, layers_saved: int, released: bool) -> int:
    """What the embedding's backward adds to the activations in flight (counted whole, the
    backpropagated micro-batch's included): its buffer (`activations.embedding_backward_buffer`)
    less the saved tensors of the chunk's layers for that micro-batch, which their backward,
    run just before, has freed (autograd releases a node's saved variables once it has run;
    not under a zero-bubble schedule, whose input backward keeps the graph for the weight
    backward). Rehearsed at Llama 3 405B's first stage (1F1B, 16 micro-batches in flight): at
    the peak, 15 micro-batches' saved layer tensors are held, with the 16th's kept output and
    its received gradient."""
    if buffer == 0:
        return 0
    return max(0, buffer - layers_saved) if released else buffer


def second_embedding_backward(shape: Shape, k: Knobs, rank: int, acts: RankActivations,
                              accumulated: bool) -> int:
    """How much lower the embedding's worst moment is than its buffer on top of the walk's peak
    activations, when the stage runs out of forwards before its second backward (1F1B with no
    more micro-batches than the stages ahead, GPipe always). The first backward of the step
    holds the walk's peak but no accumulated embedding gradient yet (FSDP2 makes it at that
    backward's end); from the second on the accumulated fp32 rows are there (counted in the
    model states) and here one micro-batch fewer is in flight. So the moment is the walk's
    peak less the smaller of the two. Rehearsed at the 128K layout's first stage (16
    micro-batches over 16 stages): the peak is the second micro-batch's embedding backward,
    with the accumulated rows and 15 micro-batches in flight. Other schedules keep the bound."""
    if not acts.embedding_backward or not accumulated or not one_fewer_at_second_backward(k, rank):
        return 0
    return min(embedding_rows(shape, k, acts, accumulated), acts.chunks[0].held)


def embedding_rows(shape: Shape, k: Knobs, acts: RankActivations, accumulated: bool) -> int:
    """The embedding's accumulated fp32 gradient on its stage: the rank's rows (and, where no
    hook keeps them to those, the rest of the vocabulary, `whole_vocabulary_gradient`)."""
    return -(-shape.vocab // k.tp) * shape.hidden * FP32 + whole_vocabulary_gradient(shape, k, acts, accumulated)


def one_fewer_at_second_backward(k: Knobs, rank: int) -> bool:
    """Whether pp rank `rank` runs no forward between its first and second backward of a step
    (1F1B with no more micro-batches than the stages from it to the last, GPipe always; one
    chunk per rank, two micro-batches or more): then its second backward runs with one
    micro-batch fewer in flight than its first (`second_embedding_backward`,
    `first_backward_relief`)."""
    return one_fewer_in_pipeline(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank)


def one_fewer_in_pipeline(schedule: str, pp: int, v: int, m: int, rank: int) -> bool:
    """`one_fewer_at_second_backward` from the pipeline alone (search's floors read it per
    pipeline and micro-batch count, before any knobs exist)."""
    if v != 1 or m < 2:
        return False
    return schedule == "gpipe" or (schedule == "1f1b" and m <= pp - rank)


def first_backward_relief(shape: Shape, k: Knobs, rank: int, params: RankParams, acts: RankActivations,
                          accumulated: bool) -> int:
    """How much lower a layer's backward moment is than its working set on top of the walk's
    peak activations and every accumulated gradient, on a rank that runs no forward between its
    first and second backward (`one_fewer_at_second_backward`).

    The walk's peak (every micro-batch in flight) is the step's first backward, and FSDP2 makes
    a layer's accumulated fp32 gradient only at that layer's post-backward
    (`FSDPParam.to_accumulated_grad_if_needed`): at any layer's moment of the first backward,
    that layer's and every layer's before it (the backward runs them last) and the embedding's
    rows are not there yet, at least the rank's smallest layer's fp32 gradient and, on the
    embedding's stage, its rows (`embedding_rows`). From the second backward on they are all
    there, with one micro-batch fewer in flight (its held bytes, `ChunkActivations.held`). So
    the layers' worst moment is the walk's peak, the working set and every accumulated gradient
    less the smaller of the two; the model had counted all of them at once, a moment that never
    happens. Traced at the published 405B 1F1B row as parc's job (tp 8, dp 8, pp 8, 8
    micro-batches, full recomputation; rank 0, 2 and 4 layers per stage): the tracker's peak is
    the second micro-batch's backward of the stage's last layer, with both layers' and the
    embedding's fp32 gradients and 7 micro-batches' boundary tensors (3 each: the embedding's
    output, each layer's output) held, not 8; the model was one micro-batch's held bytes over,
    0.125 GiB per layer and stage (docs/memory-model.md, "The two 405B runs")."""
    if not accumulated or not one_fewer_at_second_backward(k, rank):
        return 0
    kinds = {shape.is_moe(layer) for c in params.chunks for layer in c.layer_range}
    if not kinds:
        return 0
    missing = FP32 * min(layer_params(shape, k.tp, k.ep, moe).total for moe in kinds)
    if acts.embedding_backward:
        missing += embedding_rows(shape, k, acts, accumulated)
    return min(missing, acts.chunks[0].held)


@dataclass(frozen=True, slots=True)
class RelievedSplit:
    """The unpaired peak's moment and categories where a relief applies (`relieved_split`)."""

    moment: tuple
    """The state named (`StageMemory.moment`): the walk's largest, or one micro-batch fewer on
    chunk 0 at the second backward."""
    backward_of_step: int
    """1 or 2: the first or the second backward of the step."""
    embedding_peak: bool
    """Whether the embedding's backward is the winning moment."""
    fewer: int
    """Micro-batches in flight fewer than the walk's largest state: 1 at the second backward."""
    off_activations: int
    """Taken off the walk's peak activations: one micro-batch's held bytes at the second backward."""
    off_gradients: int
    """Taken off the accumulated gradients: those the first backward has not made yet."""
    buffers: int
    embedding_rise: int


def relieved_split(acts: RankActivations, moment: tuple, buffers: int, layers_relief: int,
                   embedding_relief: int) -> RelievedSplit:
    """The unpaired peak of a rank that runs no forward between its first two backwards
    (`stage_memory`: the walk's largest state plus the larger of the layers' moment, `buffers`
    less `layers_relief`, and the embedding's, `RankActivations.embedding_backward` less
    `embedding_relief`), named and split as the moment whose bytes they are, so that
    `parc explain`'s moment, `in_flight` and the categories tell the same story.

    The winning moment's relief is the smaller of one micro-batch's held bytes and the
    accumulated gradients the first backward lacks then (`first_backward_relief`,
    `second_embedding_backward`). Where it is the micro-batch, the peak is the second backward:
    every accumulated gradient, one micro-batch fewer in flight (activations less one held
    set; `memory.moment.name_moment` names the state with one fewer on chunk 0, where the second
    backward stands, a backward being named before a forward). Else it is the first backward:
    every micro-batch in flight, the gradients less those not made yet. The categories sum to
    the same total either way: the walk's peak plus the winning moment's extra. Ties go to the
    layers' moment."""
    held = acts.chunks[0].held
    layers = buffers - layers_relief
    embedding = acts.embedding_backward - embedding_relief
    relief = layers_relief if layers >= embedding else embedding_relief
    second = relief == held and held > 0 and len(moment[0]) == 1 and moment[0][0] >= 1
    if layers >= embedding:
        working, rise = buffers, 0
    else:
        working = min(buffers, acts.embedding_backward)
        rise = acts.embedding_backward - working
    if second:
        return RelievedSplit(moment=((moment[0][0] - 1,), moment[1], None, None, None), backward_of_step=2,
                             embedding_peak=layers < embedding, fewer=1,
                             off_activations=held, off_gradients=0, buffers=working, embedding_rise=rise)
    return RelievedSplit(moment=moment, backward_of_step=1, embedding_peak=layers < embedding, fewer=0,
                         off_activations=0, off_gradients=relief, buffers=working,
                         embedding_rise=rise)


def first_backward_relief_bound(k: Knobs, rank: int, acts: RankActivations) -> int:
    """The most `first_backward_relief` can take off pp rank `rank`'s layers' moment under any
    sharding (search's floors): one micro-batch's held bytes where it applies."""
    return acts.chunks[0].held if one_fewer_at_second_backward(k, rank) else 0


def whole_vocabulary_gradient(shape: Shape, k: Knobs, acts: RankActivations, accumulated: bool) -> int:
    """The embedding gradient's rows beyond this tp rank's that FSDP2 accumulates in fp32 under
    pipelining on the embedding's stage, when no hook keeps the rank's rows (torchtitan; parc's
    job has `gradient_in_own_rows`, `activations.embedding_backward_buffer`): DTensor computes
    the vocabulary-parallel embedding's gradient over the whole vocabulary, Replicate over tp,
    and FSDP2 (`FSDPParam.to_accumulated_grad_if_needed`, reduce_dtype fp32) accumulates that
    DTensor whole between micro-batches, redistributing it to the rank's rows only when it
    reduces (`_get_grad_inner_tensor`): (V - ceil(V/t)) x h x 4 bytes more than the rank's rows
    (at Llama 3 405B, tp 8: 7.35 GB, the figure the rehearsal measured in parc's job before the
    hook). torchtitan 9dec370 (parallelize_llama.py) registers no such hook."""
    if not k.torchtitan_block or k.tp == 1 or not accumulated or not acts.embedding_backward:
        return 0
    return (shape.vocab - -(-shape.vocab // k.tp)) * shape.hidden * FP32


def v_turn(schedule: str, pp: int, rank: int) -> bool:
    """Whether pp rank `rank` holds the turn of a V (zbv, dualpipe-v: the last rank holds stages
    pp - 1 and pp), where the second chunk's input is handed over on the rank, not received.

    There the second chunk's input *is* the first chunk's kept output, one storage, and every
    micro-batch the second chunk holds the first holds too: the first runs its forward before
    the second and its input pass after the second's, and DualPipe-V's weight queue (first in,
    first out) and ZB-V's order run the second chunk's weight pass first (tests/test_v_turn.py
    walks each micro-batch to check it). So per micro-batch
    the second chunk holds its saved activations less that input (`ChunkActivations.shared_input`).
    Rehearsed at rehearse-dualpipe's rank 7 and rehearse-deepseek-32's rank 2047: three
    boundary tensors per micro-batch held on both chunks (stage pp - 1's received input, its
    output, stage pp's output), not four."""
    return pp > 1 and rank == pp - 1 and schedule in ("zbv", "dualpipe-v")


def released_backward(schedule: str, pp: int) -> bool:
    """Whether a backward frees its micro-batch's saved tensors as it consumes them: every
    schedule but the zero-bubble ones, whose input backward (torch's `stage_backward_input`)
    keeps the graph (retain_graph=True) for the weight backward."""
    return pp == 1 or schedule not in ZERO_BUBBLE


@lru_cache(maxsize=16384)
def _rank_activations(shape: Shape, layout: RankLayout) -> tuple[RankActivations, ...]:
    out = []
    # ranks of equal chunks (most of a deep pipeline), apart from the turn of a V
    alike: dict[tuple[tuple[ChunkSignature, ...], bool], RankActivations] = {}
    for index, mine in enumerate(rank_signatures(shape, layout.pp, layout.v, layout.schedule, layout.split)):
        turn = layout.turn(index)
        rank = alike.get((mine, turn))
        if rank is None:
            rank = alike[(mine, turn)] = _one_rank(shape, layout, mine, turn)
        out.append(rank)
    return tuple(out)


def end_rank_activations(shape: Shape, k: Knobs) -> tuple[RankActivations, RankActivations]:
    """`rank_activations(shape, k)` of the first and the last pp rank only (search's memory
    floor reads those two, `Engine._quick_floor`): a deep pipeline's other ranks are not
    walked. The same objects' values as `rank_activations`' (one rank's computation,
    `_one_rank`)."""
    return _end_ranks(shape, RankLayout.of(shape, k))


@lru_cache(maxsize=16384)
def _end_ranks(shape: Shape, layout: RankLayout) -> tuple[RankActivations, RankActivations]:
    signatures = rank_signatures(shape, layout.pp, layout.v, layout.schedule, layout.split)
    return tuple(_one_rank(shape, layout, signatures[index], layout.turn(index)) for index in (0, layout.pp - 1))


def _one_rank(shape: Shape, layout: RankLayout, mine: tuple[ChunkSignature, ...], turn: bool) -> RankActivations:
    """One pp rank's activations from its chunks' signatures (`_rank_activations`' per rank)."""
    ak, pp, schedule, v = layout.layer_knobs, layout.pp, layout.schedule, layout.v
    released = layout.released
    pieces = [_chunk_activations(shape, ak, sig, layout.recompute, layout.recompute_layers, pp > 1, released,
                                 layout.offload)
              for sig in mine]
    chunks = tuple(p.activations for p in pieces)
    if turn:  # the second chunk's input is the first's kept output, its gradient the first's
        boundary = act.boundary_bytes(shape, ak)  # output gradient (counted in the first's `grads`)
        chunks = (chunks[0], replace(chunks[1], shared_input=chunks[0].output,
                                     pending=chunks[1].pending - boundary))
    sent = sent_input_gradient(shape, ak, mine[0], schedule, pp, v)
    working = tuple(p.working + sent for p in pieces)
    return RankActivations(
        chunks=chunks, transient=max(working, default=0),
        embedding_backward=max((p.embedding_backward for p in pieces), default=0), working=working,
        embedding_chunk=next((c for c, sig in enumerate(mine) if sig[1]), -1),
        input_working=tuple(p.input_working + sent for p in pieces),
        weight_working=tuple(p.weight_working + sent for p in pieces))


def first_backward_floors(shape: Shape, k: Knobs) -> dict[tuple[ChunkSignature, ...], int]:
    """Per distinct rank (its chunks' signatures), a floor under what it holds when it runs its
    first backward in every schedule: one micro-batch's saved activations on each of its chunks,
    plus the working set of its last chunk (every schedule's first backward on a rank is its
    last chunk's, after a forward on each), and at least any chunk's own micro-batch with its
    working set (a chunk's backward runs with its working set only: `moments_peak`); never more
    than `rank_activations`' sums give, without building every rank (search's cheapest memory
    floor, `Engine._first_floor`)."""
    ak = layer_knobs_of(shape, k)
    return _first_backward_floors(shape, ak, k.pp, k.virtual_stages, k.schedule, k.split, k.recompute,
                                  k.recompute_layers, k.offload_layers)


@lru_cache(maxsize=4096)
def _counted_rank_signatures(shape: Shape, pp: int, v: int, schedule: str, split: tuple[int, ...] | None
                             ) -> tuple[tuple[tuple[ChunkSignature, ...], tuple[tuple[ChunkSignature, int], ...]], ...]:
    """`distinct_rank_signatures`, each with its chunks' signatures counted (first seen first)."""
    return tuple((mine, tuple(Counter(mine).items()))
                 for mine in distinct_rank_signatures(shape, pp, v, schedule, split))


def _first_backward_floors(shape: Shape, ak: Knobs, pp: int, v: int, schedule: str,
                           split: tuple[int, ...] | None, recompute: str,
                           recompute_layers: int | None, offload: int = 0) -> Mapping[tuple[ChunkSignature, ...], int]:
    """`first_backward_floors` on what it reads: the layer's activation knobs and the chunking,
    not the data-parallel degree nor the micro-batch count, so the layout searches of an outer
    search over cluster sizes (`nodes ?`) share it (the same tp, cp, pp, micro-batch and
    recomputation recur at every size). A rank's chunks of one signature are counted, not
    looked up one by one (an interleaved rank holds up to 63 alike); the sums are integers, so
    the result is the same. Kept (`_floors_of`) per the ranks' counted signatures and whether
    the backward releases, not per schedule: schedules that chunk alike (1F1B and GPipe, the
    interleaved ones of one virtual-stage count) share one computation."""
    return _floors_of(shape, ak, _counted_rank_signatures(shape, pp, v, schedule, split), pp > 1,
                      released_backward(schedule, pp), recompute, recompute_layers, offload)


@lru_cache(maxsize=16384)
def _floors_of(shape: Shape, ak: Knobs, ranks: tuple, pipelined: bool, released: bool, recompute: str,
               recompute_layers: int | None, offload: int = 0) -> Mapping[tuple[ChunkSignature, ...], int]:
    """`_first_backward_floors` of the distinct ranks' counted chunk signatures (`ranks`,
    `_counted_rank_signatures`)."""
    out: dict[tuple[ChunkSignature, ...], int] = {}
    pieces: dict[ChunkSignature, ChunkPieces] = {}  # each signature's, looked up once (ranks share them)
    for mine, counted in ranks:
        saved = own = 0
        for sig, count in counted:
            p = pieces.get(sig)
            if p is None:
                p = pieces[sig] = _chunk_activations(shape, ak, sig, recompute, recompute_layers, pipelined,
                                                     released, offload)
            saved += count * p.activations.saved
            own = max(own, p.activations.saved + p.working)
        last = pieces[mine[-1]].working
        out[mine] = max(saved + last, own)
    return MappingProxyType(out)


@lru_cache(maxsize=4096)
def most_rank_layers(shape: Shape, pp: int, v: int, schedule: str, split: tuple[int, ...] | None) -> int:
    """The most layers any pp rank holds (over its chunks) under this chunking."""
    return max(sum(sig[0] for sig in mine) for mine in distinct_rank_signatures(shape, pp, v, schedule, split))


def first_backward_ceiling(shape: Shape, k: Knobs, layers: int) -> int:
    """A ceiling on every value of `first_backward_floors(shape, k)` when no rank holds more than
    `layers` layers (`most_rank_layers`), computed from one layer of each kind and the embedding
    and output layer, without a rank's chunks: search proves with it that a family of layouts fits
    (`Engine._family_fits`) without summing each rank's chunks.

    A rank's floor is max(its chunks' saved sets + its last chunk's working set, the largest
    of one chunk's saved set + its working set): at most the sum of its chunks' saved sets plus
    the largest working set of a chunk (both are non-negative). The saved sets add up per layer
    (`_chunk_activations`: each layer its kind's, the embedding's and the head's once, and each of
    these sits on one chunk of one rank), so the sum is at most `layers` x the largest of a layer
    kind plus the embedding's and the head's. A chunk's working set is the largest of its layer
    kinds' (at most the largest kind's), and on the output chunk that less the head plus the
    output projection's weight gradient where the backward releases, at least the loss's buffer:
    the same expressions, each non-decreasing in the layers' working set, at the largest kind's.
    tests/test_search_speed_exact.py holds it at or above each rank's floor over sampled
    layouts."""
    ak = layer_knobs_of(shape, k)
    per_layer, rest = _ceiling_pieces(shape, ak, released_backward(k.schedule, k.pp), k.recompute,
                                      k.recompute_layers)
    return layers * per_layer + rest


@lru_cache(maxsize=4096)
def _ceiling_pieces(shape: Shape, ak: Knobs, released: bool, recompute: str,
                    recompute_layers: int | None) -> tuple[int, int]:
    """`first_backward_ceiling`'s (largest saved set of a layer, what a rank adds beyond its
    layers' saved sets at most: the embedding's and the head's saved sets and the largest working
    set of a chunk), over every layer kind (MoE or dense, and the recomputation modes `full N`
    gives by position, `layer_mode`)."""
    vocab = padded_vocab(shape.vocab, ak.tp, ak.runtime)
    torch = ak.runtime == "torch"
    modes = {recompute, layer_mode(recompute, recompute_layers, shape.layers)}
    saved = work = 0
    for moe in sorted(set(shape.moe)) if shape.moe else (False,):
        for mode in sorted(modes):
            a = layer_activations(shape, ak, moe, mode)
            saved = max(saved, a.saved)
            if torch:
                work = max(work, backward_working_set(a, ffn_weight_gradients(shape, ak, moe), released))
    head = act.output_activations(shape, ak, vocab)
    output_work = max(0, work - head + output_weight_gradient(shape, ak, vocab)) if torch and released else work
    output_work = max(output_work, act.logits_buffer(ak, vocab))
    return saved, act.embedding_activations(shape, ak) + head + max(work, output_work)


def transient_buffers(transient: int, params: RankParams, k: Knobs, shape: Shape) -> int:
    """The working set of the rank's worst moment with the data-parallel wrapper's buffers.
    Without pipelining FSDP2 gathers and reduces around every layer while it computes, so its
    buffers add to the working set. Under pipelining every layer stays gathered (a model state)
    and gradients are reduced once, in the step's last backward, after each layer's backward
    is done (post-backward hook): that reduction is a moment of its own, not on top of a
    layer's working set or the loss's (measured by the rehearsal: at the last stage's peak, the
    loss's backward, no reduction buffer is alive)."""
    return with_wrapper(transient, wrapper_buffers(params, k, shape), k)


def wrapper_buffers(params: RankParams, k: Knobs, shape: Shape) -> int:
    """The data-parallel wrapper's buffers of a rank (`transient_buffers`' part that reads no
    working set: a rank's moments share it, `moment_extras`)."""
    wrapper = fsdp_buffers(params.largest_layer, k, params.root)
    experts = fsdp_expert_temporaries(shape, k)  # 0 unless expert stacks are sharded on dim 1
    if experts and any(shape.is_moe(layer) for c in params.chunks for layer in c.layer_range):
        wrapper += experts
    return wrapper


def with_wrapper(transient: int, wrapper: int, k: Knobs) -> int:
    """`transient_buffers` of a working set and the rank's `wrapper_buffers`."""
    if k.pp > 1:
        return max(transient, wrapper)
    return transient + wrapper


def p2p_buffers(shape: Shape, k: Knobs, rank: int, acts: RankActivations | None = None) -> int:
    """Pipelining's receive buffers alive at once on pp rank `rank`, each one boundary tensor.

    torch 2.13's PipelineStage would allocate one activation and one output-gradient buffer per
    micro-batch and chunk at its first step and keep them across steps (8 GiB at Llama 3 405B):
    a runtime that runs it (`Knobs.pp_receives == "kept"`: torchtitan) is counted so
    (`kept_p2p_buffers`). The generated job's `ReceiveOnDemandStage` allocates a buffer when its receive is posted and
    drops it once handed to the forward or backward. What remains is what the schedule's
    receives hold before use (`schedules.receive_buffers`, walked on torch's own lowering:
    multi-stage schedules post a receive when the sender runs, ahead of its use), plus the
    output gradient a running full backward reads. A consumed activation is the stage's input,
    the first layer's saved block input (counted in `ChunkActivations.saved`), and a zero-bubble input
    backward's gradient is kept for its weight backward (`pending`): both are counted with the
    activations, not here."""
    if k.runtime != "torch" or k.pp == 1:
        return 0
    if k.pp_receives == "kept":
        return kept_p2p_buffers(shape, k, rank, acts)
    live = receive_buffers(k.schedule, k.pp, k.virtual_stages, k.microbatches)[rank]
    return live * act.boundary_bytes(shape, k)


def kept_p2p_buffers(shape: Shape, k: Knobs, rank: int, acts: RankActivations | None = None) -> int:
    """torch's stock `PipelineStage` (`Knobs.pp_receives == "kept"`, torchtitan): one input and
    one output-gradient buffer per micro-batch and chunk, allocated at the first step and kept
    (`schedules.kept_receive_buffers`). A received input is handed to the forward as the buffer
    itself (`_retrieve_recv_activations`: `requires_grad_` on it, no copy), so the inputs in
    flight at the rank's activation peak are already counted there, as their first layer's saved
    input (`ChunkActivations.saved`): they are taken out here, not counted twice."""
    fwd, bwd = kept_receive_buffers(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank)
    if acts is None:
        acts = rank_activations(shape, k)[rank]
    received = received_chunks(k.schedule, k.pp, k.virtual_stages, rank)
    inputs = inputs_in_flight(k, rank, acts, received)
    return (fwd + bwd - inputs) * act.boundary_bytes(shape, k)


def inputs_in_flight(k: Knobs, rank: int, acts: RankActivations, received: tuple[bool, ...]) -> int:
    """Received inputs held at the rank's activation peak: the micro-batches in flight on chunks
    whose input came through a receive, at the moment `_activation_peaks` takes (the first
    largest). Past `MAX_STATE_CHUNKS` chunks only the total in flight is known: the share of
    receiving chunks of it, rounded down (fewer taken out: the larger figure)."""
    chunks = acts.chunks
    if k.virtual_stages > MAX_STATE_CHUNKS:
        _, held = weighted_peak(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank,
                                tuple(c.held for c in chunks), tuple(c.pending for c in chunks))
        return held * sum(received) // len(received)
    best, at = -1, ()
    for held, pending, _ in peak_states(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank):
        a = sum(held[c] * ca.held + pending[c] * ca.pending for c, ca in enumerate(chunks))
        if a > best:
            best, at = a, held
    return sum(h for h, r in zip(at, received, strict=False) if r)


def rank_padding(shape: Shape, k: Knobs, params: RankParams) -> Params:
    """The rows FSDP2 pads on this rank's parameters (`fsdp_padding`; sharded modes only)."""
    if k.runtime != "torch" or k.sharding not in ("zero2", "zero3", "hsdp"):
        return Params()
    return fsdp_padding(shape, params.chunks, k.tp, k.ep, k.dense_shard_group, k.expert_shard_group, k.runtime)


def keeps_gathered(k: Knobs) -> bool:
    """Whether FSDP2 holds every layer's gathered compute copy for the whole step: zero2
    (reshard_after_forward=False), and every mode under pipelining (the runtime turns
    reshard_after_forward off there, and torch's stages skip the reshard after every backward
    but the step's last). zero1 runs no FSDP2: it has no compute copy."""
    return k.sharding == "zero2" or (k.pp > 1 and k.sharding != "zero1")


def moments_peak(k: Knobs, rank: int, acts: RankActivations, extras: tuple[tuple[int, ...], ...],
                 receive: int = 0) -> tuple[int, int, int, int, int | None] | None:
    """`paired_moment` without the winning state: (activations in flight, chunk-micro-batches
    held, local chunk, kind of moment, receive buffers alive or None)."""
    found = paired_moment(k, rank, acts, extras, receive)
    return None if found is None else found[:5]


def paired_peak(k: Knobs, rank: int, acts: RankActivations, extras: tuple[tuple[int, ...], ...],
                receive: int = 0) -> tuple[int, int | None, tuple] | None:
    """The worst moment's bytes beyond the model states, as every caller pairs it: (activations
    in flight plus the running chunk's extra, `extras[kind][chunk]`, none at an idle moment; the
    receive buffers alive then, in bytes, or None where they are not paired; `paired_moment`'s
    answer). None where `paired_moment` pairs nothing. `stage_memory`, `peak` and
    `activation_floors` read the moment through it, so the three agree by construction."""
    found = paired_moment(k, rank, acts, extras, receive)
    if found is None:
        return None
    activations, _, chunk, kind, live, _ = found
    extra = extras[kind][chunk] if kind < 3 else 0
    return activations + extra, (None if live is None else live * receive), found


def paired_moment(k: Knobs, rank: int, acts: RankActivations, extras: tuple[tuple[int, ...], ...],
                  receive: int = 0) -> tuple | None:
    """(activations in flight, chunk-micro-batches held, local chunk, kind of moment, receive
    buffers alive or None, the state (held per chunk, pending per chunk)) at pp rank `rank`'s worst moment when what a moment adds beyond the
    activations in flight is its running chunk's, `extras[kind][c]` (`schedules.moment_states`'
    kinds: 0 a forward or full backward, chunk c's backward working set with the wrapper's
    buffers or its embedding backward; 1 an input backward, over the state before it,
    `input_pass_working`; 2 a weight backward; 3 no computation, nothing), and, given the bytes
    of one receive buffer (`receive`, multi-stage schedules), the receive buffers alive then
    (`schedules.receive_moments`). None where pairing changes nothing: one chunk or every
    chunk's extra alike, no split backward and no receives paired, or more chunks than the walk
    enumerates (`MAX_STATE_CHUNKS`: there the largest state plus the largest extra and the most
    receive buffers stand, a bound never below the paired one).

    Before, the largest extra was added to the largest state whichever chunk ran then. At
    rehearse-mixtral-8's rank 255 (pp rank 3 of 4, chunks 3 and 7, one MoE layer each) the
    largest state (4 micro-batches on chunk 3, 1 on chunk 7 with its head and fp32 logits:
    2.90 GB) is chunk 7's loss backward, whose extra is the loss's three fp32 logit tensors
    (3.15 GB); the MoE layer's working set (3.66 GB) runs on chunk 3 with 5 micro-batches there
    and none on chunk 7 (0.67 GB). The model had added 3.66 to 2.90 GB: +6.58 % against the
    rehearsal, which peaks in the loss's backward (docs/memory-model.md, "Moments by chunk")."""
    if k.virtual_stages > MAX_STATE_CHUNKS:
        return None
    moments = None
    if receive and k.pp > 1 and k.schedule not in SINGLE_STAGE:
        moments = receive_moments(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank)
    split = k.pp > 1 and k.schedule in ZERO_BUBBLE
    if moments is None and not split and (len(extras[0]) < 2 or min(extras[0]) == max(extras[0])):
        return None
    key = (id(acts), k.schedule, k.pp, k.virtual_stages, k.microbatches, rank, extras, receive if moments else 0)
    entry = _MOMENTS.get(key)
    if entry is not None and entry[0] is acts:
        return entry[1]
    weights = [ca.held for ca in acts.chunks] + [ca.pending for ca in acts.chunks]
    best = -1
    found: tuple = (0, 0, 0, 0, None, ((), ()))
    if moments is None:
        for held, pending, chunk, kind in moment_states(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank):
            a = sum(n * w for n, w in zip(held + pending, weights))  # noqa: B905 - equal lengths by construction
            if a + extras[kind][chunk] > best:
                best, found = a + extras[kind][chunk], (a, sum(held), chunk, kind, None, (held, pending))
    else:
        for held, pending, chunk, kind, live in moments:
            a = sum(n * w for n, w in zip(held + pending, weights))  # noqa: B905 - equal lengths by construction
            total = a + (extras[kind][chunk] if kind < 3 else 0) + live * receive
            if total > best:
                best, found = total, (a, sum(held), chunk, kind, live, (held, pending))
    if len(_MOMENTS) > 65536:
        _MOMENTS.clear()
    _MOMENTS[key] = (acts, found)
    return found


_MOMENTS: dict[tuple, tuple] = {}
"""`moments_peak`'s answers, keyed by the identity of the cached `acts` (kept alive in the entry,
so the id stays valid), the walk and the extras: search asks the same rank of many shardings."""


def receive_bytes(shape: Shape, k: Knobs) -> int:
    """One receive buffer where the model pairs the receives alive with each moment
    (`moments_peak`): parc's job's `ReceiveOnDemandStage` under a multi-stage schedule (torch's
    stock stage keeps them all, `kept_p2p_buffers`; single-stage schedules post one right before
    its use, `schedules.receive_buffers`); else 0."""
    if k.runtime != "torch" or k.pp == 1 or k.schedule in SINGLE_STAGE or k.pp_receives == "kept":
        return 0
    return act.boundary_bytes(shape, k)


def received_gradients(shape: Shape, k: Knobs, rank: int, params: RankParams) -> tuple[int, ...]:
    """Per local chunk, the bytes of the running backward's output gradient that the receive
    buffers (`p2p_buffers`) already count at a layer's backward moment, and that the layer's
    working set counts too: taken off the working set, so it is counted once.

    A chunk's backward starts at its last layer, whose output gradient (the residual stream's,
    `activations.backward_moments`' `residual`, alive through the block's backward) *is* the
    received buffer: the generated job's `ReceiveOnDemandStage` and torch's stock stage hand the
    buffer itself to the backward (`_retrieve_recv_grads`). The receive buffers count it where
    they are not paired with the moment: single-stage schedules (`schedules.receive_buffers`:
    "one output gradient during a backward") and torch's kept buffers (`kept_p2p_buffers`, every
    output-gradient buffer of the step). Where they are paired (multi-stage schedules under the
    generated job, `receive_moments`) a computation's live receives are those left once it has
    taken its inputs, so nothing is counted twice: 0. At a chunk's earlier layers the received
    buffer is still alive and the layer's output gradient is a tensor of its own, but the later
    layers' saved inputs of that micro-batch (each at least a boundary tensor) are freed, so the
    moment less one boundary tensor still bounds them. 0 on the model's last stage (its output
    gradient comes from the loss) and on a chunk without layers. Traced on the published 405B
    1F1B row as parc's job (rank 0, 2 layers per stage): the model was one boundary tensor (0.125
    GiB) over the rehearsal's tracker at its peak, the stage's last layer's backward
    (docs/memory-model.md, "The stage's second backward")."""
    if k.runtime != "torch" or k.pp == 1:
        return (0,) * max(1, len(params.chunks))
    if k.pp_receives != "kept" and k.schedule not in SINGLE_STAGE:
        return (0,) * len(params.chunks)
    from .schedules import _stage_of

    boundary = act.boundary_bytes(shape, k)
    last = k.pp * k.virtual_stages - 1
    return tuple(boundary if len(c.layer_range) and _stage_of(k.schedule, k.pp, rank, i) != last else 0
                 for i, c in enumerate(params.chunks))


def moment_working(acts: RankActivations) -> tuple[tuple[int, ...], ...]:
    """The chunks' working sets by kind of moment (`moments_peak`): a forward's or full
    backward's, an input backward's, a weight backward's."""
    return acts.working, acts.input_working or acts.working, acts.weight_working or acts.working


def moment_extras(shape: Shape, k: Knobs, params: RankParams, acts: RankActivations,
                  relief: int, received: tuple[int, ...] = ()) -> tuple[tuple[int, ...], ...]:
    """What each local chunk's moment of each kind adds to the activations in flight
    (`moments_peak`): its working set (`moment_working`) with the wrapper's buffers
    (`transient_buffers`), and on the embedding's chunk the larger of that and the embedding's
    backward (`embedding_moment`, less `relief`: `second_embedding_backward`). A full or input
    backward's working set is less the received output gradient the receive buffers count
    (`received`, per chunk: `received_gradients`)."""
    out = []
    wrapper = wrapper_buffers(params, k, shape)  # the same at every moment of the rank
    for kind, working in enumerate(moment_working(acts)):
        extras = []
        for c, work in enumerate(working):
            if kind < 2 and received:
                work -= received[c]
            extra = with_wrapper(work, wrapper, k)
            if c == acts.embedding_chunk:
                extra = max(extra, acts.embedding_backward - relief)
            extras.append(extra)
        out.append(tuple(extras))
    return tuple(out)


def stage_memory(shape: Shape, k: Knobs, rank: int, params: RankParams | None = None,
                 acts: RankActivations | None = None) -> StageMemory:
    """The memory of pp rank `rank`."""
    if params is None:
        params = rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)[rank]
    if acts is None:
        acts = rank_activations(shape, k)[rank]
    states = model_states(params.params, k, params.per_chunk, rank_padding(shape, k, params))

    # FSDP's gathered copies (every sharding mode but zero1: none runs on FSDP2 with shards of
    # one rank, whose compute copy is a buffer of its own): zero2 keeps every layer's from
    # forward to backward; under pipelining every mode does (the runtime sets
    # reshard_after_forward=False there, as torchtitan does, and torch's stages keep them
    # gathered until the step's last backward); with pp = 1 only the layers in flight and the
    # root's parameters are gathered (buffers).
    persistent = 0
    if states.unsharded and keeps_gathered(k):
        persistent = states.unsharded

    buffers = 0
    received = received_gradients(shape, k, rank, params)  # counted in p2p, not in the working set
    if k.runtime == "torch":
        buffers = transient_buffers(acts.transient - min(received), params, k, shape)
    relief = second_embedding_backward(shape, k, rank, acts, states.accumulated_grads > 0)
    layers_relief = first_backward_relief(shape, k, rank, params, acts, states.accumulated_grads > 0) \
        if k.runtime == "torch" else 0
    embedding_rise = max(0, acts.embedding_backward - relief - (buffers - layers_relief))
    p2p = p2p_buffers(shape, k, rank, acts)
    paired = paired_peak(k, rank, acts, moment_extras(shape, k, params, acts, relief, received),
                         receive_bytes(shape, k)) if k.runtime == "torch" else None

    best = -1
    best_acts = best_held = missing = backward_of_step = 0
    embedding_peak = False
    moment = None
    chunks = acts.chunks
    if paired is None and k.virtual_stages > MAX_STATE_CHUNKS:
        best_acts, best_held = weighted_peak(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank,
                                             tuple(c.held for c in chunks), tuple(c.pending for c in chunks))
    # the largest state, where the moments are not paired (the paired moment replaces it)
    walk = () if paired is not None or k.virtual_stages > MAX_STATE_CHUNKS else \
        peak_states(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank)
    for held, pending, _ in walk:
        a = 0
        for c, ca in enumerate(chunks):
            a += held[c] * ca.held + pending[c] * ca.pending
        if a > best:
            best, best_acts, best_held = a, a, sum(held)
            moment = (held, pending, None, None, None)

    if paired is None:  # the layers' moment in the second backward (`first_backward_relief`)
        best_acts -= layers_relief
        if layers_relief or relief:  # split as the moment that wins (`relieved_split`)
            split = relieved_split(acts, moment, buffers, layers_relief, relief)
            moment, best_held = split.moment, best_held - split.fewer
            best_acts, buffers, embedding_rise = best_acts + layers_relief - split.off_activations, split.buffers, \
                split.embedding_rise
            missing = split.off_gradients
            backward_of_step, embedding_peak = split.backward_of_step, split.embedding_peak
    if paired is not None:  # the working set of the chunk that runs at the worst moment
        _, live_bytes, (best_acts, best_held, chunk, kind, live, state) = paired
        moment = (*state, chunk, kind, live)
        # the moment's extra split as the breakdown shows it: the wrapper's buffers with the
        # chunk's working set, and how far the embedding's backward rises above them
        buffers = transient_buffers(moment_working(acts)[kind][chunk] - (received[chunk] if kind < 2 else 0),
                                    params, k, shape) if kind < 3 else 0
        embedding = acts.embedding_backward - relief if chunk == acts.embedding_chunk and kind < 3 else 0
        embedding_rise = max(0, embedding - buffers)
        if live_bytes is not None:  # the receive buffers alive at that moment
            p2p = live_bytes
    return StageMemory(
        stage=rank, layers=params.layers, params=states.params + persistent,
        grads=peak_gradients(states) + whole_vocabulary_gradient(shape, k, acts, states.accumulated_grads > 0)
        - missing,
        optimizer=states.optimizer,
        activations=best_acts, buffers=buffers, in_flight=best_held,
        p2p=p2p, embedding_backward=embedding_rise, moment=moment, backward_of_step=backward_of_step,
        embedding_peak=embedding_peak,
        checkpoint=states.params + persistent + states.optimizer + checkpoint_gather_bytes(params.params, k),
    )


def _pieces(shape: Shape, k: Knobs):
    return (rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime),
            rank_activations(shape, k))


@lru_cache(maxsize=256)
def per_stage(shape: Shape, k: Knobs) -> tuple[StageMemory, ...]:
    """Every pipeline stage's memory, stage 0 first. Kept (it reads only the shape and the knobs,
    and the stages are frozen): the front end's checks of one plan (`fits_in_memory`,
    `fits_within_the_error`) and search's answers ask `memory.estimate` for the same plan two and
    three times, and a deep pipeline's breakdown walks every rank's moments."""
    params, acts = _pieces(shape, k)
    return tuple(stage_memory(shape, k, r, params[r], acts[r]) for r in range(k.pp))


def peak(shape: Shape, k: Knobs) -> tuple[int, int]:
    """(bytes, stage) of the worst rank: what search and the memory check compare with HBM.

    The same totals as `per_stage` (a test holds them equal), without building the breakdown:
    per rank, model states are a few multiplications and the activation peak over the schedule
    states is cached per (activations, schedule, micro-batches).

    A rank's moments are paired with what runs then (`paired_peak`: a walk of its schedule's
    moments and receives) only where its bound can reach the worst rank so far (`worst_rank`):
    its model states plus its largest state, its largest extra and the most receive buffers it
    ever holds (`p2p_buffers`) is never below its total, since every moment's state is one of
    the walk's (the weights are not negative) and every moment's receive buffers are among
    those the lowering counts. A deep pipeline's middle ranks hold less than its first and last:
    their walks are skipped."""
    params, acts = _pieces(shape, k)
    if k.runtime != "torch":
        best, where = -1, 0
        for r in range(k.pp):
            total = stage_memory(shape, k, r, params[r], acts[r]).total
            if total > best:
                best, where = total, r
        return best, where
    peaks = _activation_peaks(acts, k.schedule, k.pp, k.virtual_stages, k.microbatches)
    receive = receive_bytes(shape, k)
    bounded = _weights_non_negative(acts)
    rows = []  # per rank: (the bound on its total, its model states and whole-vocabulary gradient, ...)
    for r in range(k.pp):
        rp, a = params[r], acts[r]
        # two moments: a layer's backward (with the wrapper's buffers), the embedding's backward
        embedding = a.embedding_backward
        whole = layers_relief = 0
        if embedding or one_fewer_at_second_backward(k, r):
            states = model_states(rp.params, k, rp.per_chunk, rank_padding(shape, k, rp))
            embedding -= second_embedding_backward(shape, k, r, a, states.accumulated_grads > 0)
            whole = whole_vocabulary_gradient(shape, k, a, states.accumulated_grads > 0)
            layers_relief = first_backward_relief(shape, k, r, rp, a, states.accumulated_grads > 0)
        received = received_gradients(shape, k, r, rp)
        buffers = max(transient_buffers(a.transient - min(received), rp, k, shape) - layers_relief, embedding)
        extras = None
        if len(a.working) > 1 or k.schedule in ZERO_BUBBLE or receive:
            extras = moment_extras(shape, k, rp, a, a.embedding_backward - embedding, received)
        base = exact_state_bytes(shape, k, rp) + whole
        p2p = p2p_buffers(shape, k, r, a)
        largest_extra = max([buffers, 0] + [e for each in extras for e in each]) if extras is not None else buffers
        rows.append((base + peaks[r] + largest_extra + p2p if bounded else None, base, buffers, extras, p2p))

    def total(r: int) -> int:
        _, base, buffers, extras, p2p = rows[r]
        moment = peaks[r] + buffers
        if extras is not None:
            paired = paired_peak(k, r, acts[r], extras, receive)
            if paired is not None:
                moment, live_bytes, _ = paired
                if live_bytes is not None:
                    p2p = live_bytes
        return base + moment + p2p

    return worst_rank([row[0] for row in rows], total)


def _weights_non_negative(acts: tuple[RankActivations, ...]) -> bool:
    """Whether every chunk's bytes per micro-batch held and pending are non-negative: then no
    moment of a rank's walk weighs more than its largest state (`_activation_peaks`), which the
    per-rank bounds of `peak` and `activation_floor_with` rest on."""
    return all(c.held >= 0 and c.pending >= 0 for a in acts for c in a.chunks)


def worst_rank(bounds: list[int | None], total: Callable[[int], int]) -> tuple[int, int]:
    """(the largest `total(r)` over ranks r, the first rank with it), calling `total` only for
    the ranks whose bound (`bounds[r]`, at least `total(r)`; None: unknown) can still beat or
    tie before the worst rank so far: the largest bound first, so that a deep pipeline's
    middle ranks, which hold less than its first and last, are mostly never walked."""
    order = sorted(range(len(bounds)), key=lambda r: (0, 0, r) if bounds[r] is None else (1, -bounds[r], r))
    best, where = None, 0
    for r in order:
        bound = bounds[r]
        if best is not None and bound is not None and (bound < best or (bound == best and r > where)):
            continue  # its total cannot beat (or tie before) the worst rank so far
        value = total(r)
        if best is None or value > best or (value == best and r < where):
            best, where = value, r
    return best, where


def cached_logits_bytes(shape: Shape, k: Knobs) -> int:
    """What the allocator holds reserved at the loss beyond the stage's peak of tensors: both of
    `loss_holes_bytes`' figures. Search adds it to a candidate's peak as the memory check does."""
    return sum(loss_holes_bytes(shape, k))


def loss_holes_bytes(shape: Shape, k: Knobs) -> tuple[int, int]:
    """`gpu.loss_holes` of a plan without pipelining under the torch accounting: its one stage
    holds the output layer and runs the loss, and the loss's buffers and the stage's `buffers`
    (`transient_buffers`) are the model's own; the output layer's all-gather staging block is
    the gathered input, tokens x hidden in the compute dtype, where tp gathers it (sequence
    parallelism) into a copy (more than one sequence per micro-batch). Under pipelining (0, 0): torchtitan's stage keeps its bf16 output in the
    schedule's forward cache until the backward (allocated, not cached), and parc's job sends
    fp32 logits out of the stage; Megatron-LM's fused cross-entropy has no such cast."""
    from .gpu import loss_holes

    if k.runtime != "torch" or k.pp > 1 or k.precision == "fp32" or k.saved_logits_loss:
        return 0, 0  # a compiled or fused loss saves the logits for its backward: none freed (`act.compiled_loss_saved`)
    params, acts = _pieces(shape, k)
    vocab = padded_vocab(shape.vocab, k.tp, k.runtime)
    compute = act.logits_bytes(k, vocab) * act.activation_bytes(k.precision) // FP32
    gathers_a_copy = k.sp and k.micro_batch > 1  # `gpu.loss_holes`: one sequence per rank gathers into a view
    staging = round(k.seq * k.micro_batch / k.cp * shape.hidden) * act.activation_bytes(k.precision) if gathers_a_copy else 0
    buffers = transient_buffers(acts[0].transient, params[0], k, shape)
    return loss_holes(compute, act.logits_buffer(k, vocab), buffers, gathered_at_loss(k, params[0]), staging)


def gathered_at_loss(k: Knobs, params: RankParams) -> int:
    """FSDP2's gathered parameters alive while the loss runs its backward (no pipelining): the
    root's (embedding, final norm, output layer; FSDP2 does not reshard a root after its forward,
    `buffers.gathered_buffers`: by design, pytorch/pytorch#131965; from mid-2025 only when
    `reshard_after_forward` is left to its default, #154704, as parc's job leaves it) and, under
    torchtitan, the last block's, which torchtitan 9dec370 does not reshard after forward either
    (`apply_fsdp`: "FSDP would prefetch it immediately").
    The layer FSDP2 computes, its prefetch and its reduce-scatter buffer (`fsdp_buffers`) are
    not alive then."""
    from .buffers import gathered_buffers

    held = gathered_buffers(None, k, params.root)
    if k.torchtitan_block and k.sharding in ("zero3", "hsdp") and params.last_layer is not None:
        held += compute_copy_bytes(params.last_layer, k.copy_precision)
    return held


def exact_state_bytes(shape: Shape, k: Knobs, rp: RankParams) -> int:
    """`stage_memory`'s model states (padded shards and buckets, accumulated gradients, the
    gathered copies FSDP2 keeps), for `peak`."""
    states = model_states(rp.params, k, rp.per_chunk, rank_padding(shape, k, rp))
    held = states.unsharded if states.unsharded and keeps_gathered(k) else 0
    return states.params + held + peak_gradients(states) + states.optimizer


def peak_gradients(states: States) -> int:
    """The gradient bytes at the step's peak, inside a micro-batch's backward. Under pipelining
    FSDP2 accumulates each parameter's unsharded fp32 gradient over the micro-batches and makes
    the sharded gradient only in the step's last backward, by reduce-scattering the sum, which it
    then frees (one layer after another, after that layer's backward); the previous step's
    sharded gradients are gone (`optimizer.zero_grad()` sets them to None). So the sharded and
    the accumulated gradients are never held at once: at the peak, the accumulated ones. Traced
    at Llama 3 405B's last stage (rehearse-405b-16 rank 120): no sharded gradient is alive at the
    peak (the loss's backward) nor at the layer's backward; the model counted both (41 MB over).
    Without accumulation (or under zero1's flat buffers) the sharded gradients are the peak's."""
    return states.accumulated_grads if states.accumulated_grads else states.grads


def state_bytes(p: Params, k: Knobs, groups: tuple[int, int]) -> int:
    """What one rank of parc's runtime holds for its parameters `p` between and during steps:
    parameters, gradients and optimizer states under k's sharding over `groups` (the dense and
    expert shard groups; zero1's flat buckets too), plus the gathered compute copies FSDP2 keeps
    across layers (`keeps_gathered`). `peak`'s model states; search also takes its least over a
    layout's shardings as a floor (it never decreases as `p` grows: each term is a rounding of a
    non-negative multiple; unpadded, so never above `exact_state_bytes`)."""
    sharding = k.sharding
    opt = 8 if k.optimizer != "sgd" else 4
    total = p.linear + p.other + p.expert
    if sharding == "none":
        states = (8 + opt) * total
    else:
        sharded = (p.linear + p.other) / groups[0] + p.expert / groups[1]
        if sharding == "zero1":
            states = (zero1_param_bytes(k) + 4) * total + round(opt * sharded) + zero1_buffer_bytes(p, k)
        else:
            states = round(4 * sharded) + round(opt * sharded)  # parameters, optimizer states
            states += 4 * total if k.pp > 1 else round(4 * sharded)  # gradients (`peak_gradients`)
    if keeps_gathered(k):
        states += compute_copy_bytes(p, k.copy_precision)
    return states


def activation_floor(shape: Shape, k: Knobs) -> int:
    """The least `peak` can be under any dp sharding: the worst rank's activations in flight plus
    its transient buffers (model states and FSDP buffers only add to it). Search tests it once
    for all the shardings of a layout before predicting each."""
    return max(activation_floors(shape, k))


def activation_floors(shape: Shape, k: Knobs) -> tuple[int, ...]:
    """`activation_floor` per pp rank (search adds each rank's least model states to it)."""
    acts = rank_activations(shape, k)
    peaks = _activation_peaks(acts, k.schedule, k.pp, k.virtual_stages, k.microbatches)
    return tuple(_rank_activation_floor(k, acts[r], r, peaks[r], _floor_extras(k, acts[r])) for r in range(k.pp))


def activation_floor_with(shape: Shape, k: Knobs, states: tuple[int, ...]) -> int:
    """max over pp ranks r of `activation_floors`[r] + states[r] (search's floor for a layout
    under any sharding: `states` the least model states per rank), pairing each rank's moments
    with its chunks' working sets (`paired_peak`, a walk of the rank's schedule) only where the
    rank's bound can raise the max: its largest state (`_activation_peaks`) plus its largest
    extra is never below its paired floor, as every moment's state is one of the walk's and
    the weights are not negative (`_weights_non_negative`). The same figure as the max over
    `activation_floors` (tests/test_search_speed_exact.py), without walking the moments of
    every rank of a deep pipeline."""
    acts = rank_activations(shape, k)
    peaks = _activation_peaks(acts, k.schedule, k.pp, k.virtual_stages, k.microbatches)
    bounded = _weights_non_negative(acts)
    rows = []
    for r in range(k.pp):
        a = acts[r]
        extras = _floor_extras(k, a)
        unpaired = peaks[r] + max(a.transient - first_backward_relief_bound(k, r, a), _floor_embedding(a))
        largest = max([unpaired] + [peaks[r] + e for each in extras for e in each]) if extras is not None else unpaired
        rows.append((largest + states[r] if bounded else None, extras))
    return worst_rank([row[0] for row in rows],
                      lambda r: _rank_activation_floor(k, acts[r], r, peaks[r], rows[r][1]) + states[r])[0]


def _floor_embedding(a: RankActivations) -> int:
    """The embedding's moment less the most `second_embedding_backward` can take off (a floor)."""
    return a.embedding_backward - (a.chunks[0].held if a.embedding_backward else 0)


def _floor_extras(k: Knobs, a: RankActivations) -> tuple[tuple[int, ...], ...] | None:
    """Each moment's extra for the floor (its own chunk's working set; the embedding's moment on
    the embedding's chunk), where the floor pairs them (parc's runtime, several chunks or a
    split backward); else None."""
    if k.runtime != "torch" or not (len(a.working) > 1 or k.schedule in ZERO_BUBBLE):
        return None
    embedding = _floor_embedding(a)
    return tuple(tuple(max(w, embedding) if c == a.embedding_chunk else w for c, w in enumerate(each))
                 for each in moment_working(a))


def _rank_activation_floor(k: Knobs, a: RankActivations, r: int, peak_r: int,
                           extras: tuple[tuple[int, ...], ...] | None) -> int:
    """One rank's `activation_floors` entry: its largest state plus the larger of its transient
    buffers and the embedding's moment, or, each moment with its own chunk's working set
    (`extras`, `_floor_extras`), the paired peak."""
    floor = peak_r + max(a.transient - first_backward_relief_bound(k, r, a), _floor_embedding(a))
    if extras is not None:
        paired = paired_peak(k, r, a, extras)
        if paired is not None:
            floor = paired[0]
    return floor


_PEAKS: dict[tuple, tuple] = {}


def _activation_peaks(acts: tuple[RankActivations, ...], schedule: str, pp: int, v: int, m: int) -> tuple[int, ...]:
    """Each rank's largest activation bytes over its schedule states (no per-state unsharding).
    Keyed by the identity of the cached `acts` (kept alive in the entry, so the id stays valid).

    With weights that are not negative the largest over the undominated states (`peak_states`)
    is the largest over every moment of the walk (each moment is dominated by a kept state, and
    the kept states are moments), which `schedules.walked_peak` gives from the moments kept per
    walk and chunk classes, the same ones search's floors (`Engine._quick_floor`) already asked
    for: a deep pipeline's ranks are not walked once more for their (held, pending, unsharded)
    states (tests/test_search_speed_exact.py holds the two equal)."""
    key = (id(acts), schedule, pp, v, m)
    entry = _PEAKS.get(key)
    if entry is not None and entry[0] is acts:
        return entry[1]
    out = []
    walked = _weights_non_negative(acts)
    for r in range(pp):
        chunks = acts[r].chunks
        if v > MAX_STATE_CHUNKS:
            out.append(weighted_peak(schedule, pp, v, m, r, tuple(c.held for c in chunks),
                                     tuple(c.pending for c in chunks))[0])
            continue
        if walked:  # the same largest sum (below), from the walk's moments kept per chunk classes
            out.append(walked_peak(schedule, pp, v, m, r, tuple(c.held for c in chunks),
                                   tuple(c.pending for c in chunks)))
            continue
        best = 0
        for held, pending, _ in peak_states(schedule, pp, v, m, r):
            a = 0
            for c, ca in enumerate(chunks):
                a += held[c] * ca.held + pending[c] * ca.pending
            best = max(best, a)
        out.append(best)
    if len(_PEAKS) > 65536:
        _PEAKS.clear()
    _PEAKS[key] = (acts, tuple(out))
    return _PEAKS[key][1]


def trim_caches() -> None:
    """Forget what grows with a pipeline's depth (each rank's activations, the schedules' action
    lists, the activation peaks keyed by them), and keep the undominated schedule states (a few
    small tuples per rank, which the next layouts of a search share: walking them again is most
    of a deep search's cost) and the per-layer pieces. A long search calls it to bound its
    memory."""
    from . import schedules

    _rank_activations.cache_clear()
    _end_ranks.cache_clear()
    schedules._walked_actions.cache_clear()
    schedules._action_indices.cache_clear()
    _PEAKS.clear()
    _MOMENTS.clear()


def clear_caches() -> None:
    """Forget every cached piece (benchmarks measure a cold start with it)."""
    from . import activations, parameters, schedules

    for function in (activation_knobs, rank_params, _rank_activations, _end_ranks, _chunk_activations, _floors_of,
                     _layer_kinds, most_rank_layers, _ceiling_pieces,
                     _counted_rank_signatures, rank_signatures, distinct_rank_signatures, _canonical_firsts,
                     activations.layer_activations, activations.embedding_activations,
                     activations.output_activations, activations.logits_buffer,
                     activations.embedding_backward_buffer, parameters.layer_params,
                     parameters.chunk_params, parameters.chunks_of, parameters.fsdp_padding, schedules.peak_states,
                     schedules._walked_actions, schedules._action_indices, schedules.receive_buffers,
                     schedules._walked_states,
                     schedules.moment_states, schedules.receive_moments, schedules._compute_turns,
                     schedules._receive_trace, schedules._walked_receives, per_stage):
        function.cache_clear()
    schedules._REDUCED.clear()
    _PEAKS.clear()
    _MOMENTS.clear()
