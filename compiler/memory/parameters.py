"""Parameters one rank holds, per chunk, from the exact shapes.

A parameter is one of three kinds, because each is divided and stored differently:

- `linear`: the transformer layers' dense matrices (Q, K, V, output projection, the dense FFN,
  shared experts), split by tp; the matrices fp8 training casts to 1 byte;
- `other`: norms, the router, embeddings, the output layer and learned positions; norms and the
  router are replicated over tp, the embedding and output rows are split by tp (vocab-parallel);
- `expert`: routed experts, E / ep whole experts per rank (not split by tp: torchtitan's and
  Megatron-Core's default expert-tensor-parallel degree of 1).

K and V are split by tp only when tp divides the kv heads; otherwise every tp rank holds all of
them (replicated; a check warns). The vocabulary: Megatron-LM pads it to a multiple of 128 x tp
(`make-vocab-size-divisible-by`); the torch runtime does not pad, DTensor gives the first tp ranks
ceil(V / tp) rows and the last ones fewer, and the model counts the fullest rank: V' / tp rows with
V' = V rounded up to a multiple of tp (`padded_vocab`), which is that rank's exact share.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..latent import COLUMN, Linear, latent_norm_widths, mla_linears
from ..stages import Chunk, layers_per_chunk, make_chunks
from .inputs import Knobs, Shape

MEGATRON_VOCAB_MULTIPLE = 128


@dataclass(frozen=True, slots=True)
class Params:
    """Parameter counts on one rank (elements)."""

    linear: int = 0
    other: int = 0
    expert: int = 0
    buffer_bytes: int = 0
    """Bytes of module buffers held beside the parameters, never sharded, with no gradient or
    optimizer state (`Shape.router_buffer_bytes`); not in `total`, which counts elements."""

    @property
    def total(self) -> int:
        return self.linear + self.other + self.expert

    def __add__(self, o: Params) -> Params:
        return Params(self.linear + o.linear, self.other + o.other, self.expert + o.expert,
                      self.buffer_bytes + o.buffer_bytes)


def padded_vocab(vocab: int, tp: int, runtime: str = "torch") -> int:
    """Megatron-LM's padded vocabulary; for torch, tp x the rows of the fullest tp rank."""
    multiple = tp * (MEGATRON_VOCAB_MULTIPLE if runtime != "torch" else 1)
    return -(-vocab // multiple) * multiple


def attention_linears(shape: Shape) -> tuple[Linear, ...]:
    """Multi-head latent attention's matrices (`latent.mla_linears`) for `shape`."""
    return mla_linears(shape.hidden, shape.heads, shape.head_dim, shape.q_lora, shape.kv_lora, shape.rope_dim,
                       shape.v_dim)


def up_projections(shape: Shape) -> tuple[int, ...]:
    """Positions, in `attention_linears` and in `timing.mla_gemms`' list, of MLA's up projections:
    the column-parallel matrices, which the latents' tp gather feeds and which `--recompute-modules
    mla_up_proj` runs again."""
    return tuple(i for i, w in enumerate(attention_linears(shape)) if w.split == COLUMN)


def split_weights(shape: Shape, split: str) -> int:
    """Weights of MLA's matrices that tp splits as `split` (`latent.COLUMN`, `DUPLICATED`)."""
    return sum(w.weights for w in attention_linears(shape) if w.split == split)


def latent_norm_params(shape: Shape) -> int:
    """Weights of MLA's latent norms on every rank (whole: they run before the column-parallel up
    projections, on the duplicated down projections' outputs)."""
    return (2 if shape.layernorm else 1) * sum(latent_norm_widths(shape.q_lora, shape.kv_lora))


def kv_split(shape: Shape, tp: int) -> bool:
    """Are the K and V projections split over tp (rather than replicated on every tp rank)?"""
    return shape.kv_heads % tp == 0


@lru_cache(maxsize=4096)
def layer_params(shape: Shape, tp: int, ep: int, moe: bool) -> Params:
    """One transformer layer on one rank."""
    h, m = shape.hidden, shape.ffn_matrices
    if shape.mla:  # multi-head latent attention: its matrices as Megatron-Core splits them, its latent norms
        attention = sum(round(i * o) for i, o in (w.local(tp) for w in attention_linears(shape)))
        norms = 2 * shape.norm_params + latent_norm_params(shape)
    else:
        kv = shape.kv // tp if kv_split(shape, tp) else shape.kv
        attention = h * shape.q // tp + 2 * h * kv + shape.q * h // tp
        norms = 2 * shape.norm_params
    if not moe:
        return Params(linear=attention + m * h * shape.ffn // tp, other=norms)
    shared = shape.shared_experts * m * h * shape.expert_ffn // tp
    routed = shape.experts // ep * m * h * shape.expert_ffn if ep <= shape.experts else m * h * shape.expert_ffn
    return Params(linear=attention + shared, other=norms + h * shape.experts, expert=routed)


def ffn_params(shape: Shape, tp: int, ep: int, moe: bool) -> int:
    """One layer's FFN weights on one rank: the dense FFN, or the router, shared and routed
    experts (the part of `layer_params` that is not attention or norms)."""
    h, m = shape.hidden, shape.ffn_matrices
    if not moe:
        return m * h * shape.ffn // tp
    p = layer_params(shape, tp, ep, True)
    return p.expert + shape.shared_experts * m * h * shape.expert_ffn // tp + h * shape.experts


@lru_cache(maxsize=4096)
def chunks_of(layers: int, pp: int, v: int, schedule: str, split: tuple[int, ...] | None,
              tied: bool, mtp: int = 0) -> tuple[Chunk, ...]:
    """The model's chunks (`stages.make_chunks`). `layers` counts the `mtp` multi-token prediction
    layers after the decoder's; they go to the last chunk, where Megatron-Core builds them (the
    stage that computes the loss, `mtp_process`), whatever the decoder's split (`split` is the
    decoder's, the spec's or the even one)."""
    if mtp and pp * v > 1:
        split = list(layers_per_chunk(layers - mtp, pp * v, split))
        split[-1] += mtp
        split = tuple(split)
    return make_chunks(layers, pp, v, schedule, split, tied)


@lru_cache(maxsize=16384)
def chunk_params(shape: Shape, chunk: Chunk, tp: int, ep: int, runtime: str) -> Params:
    """The parameters of one chunk on one rank, embedding and output layer included."""
    total = Params()
    dense = moe = 0
    for layer in chunk.layer_range:
        if shape.is_moe(layer):
            moe += 1
        else:
            dense += 1
    if dense:
        p = layer_params(shape, tp, ep, False)
        total += Params(p.linear * dense, p.other * dense, p.expert * dense)
    if moe:
        p = layer_params(shape, tp, ep, True)
        total += Params(p.linear * moe, p.other * moe, p.expert * moe,
                        shape.router_buffer_bytes * moe if runtime == "torch" else 0)
    table = padded_vocab(shape.vocab, tp, runtime) * shape.hidden // tp
    if chunk.embedding:
        total += Params(other=table + shape.position_params)
    if chunk.output:
        linear, other = output_params(shape, chunk, tp, table)
        total += Params(linear=linear, other=other)
    return total


def output_params(shape: Shape, chunk: Chunk, tp: int, table: int) -> tuple[int, int]:
    """(linear, other) parameters of the output end on one rank: the final norm and the output
    layer (tied: shared with the embedding, or a copy); and each multi-token prediction module's
    own (its `eh_proj`, column-parallel 2h -> h; its enorm, hnorm and final norm) and, where the
    chunk does not hold the embedding, the embedding table Megatron-Core keeps on the stage that
    runs them (`GPTModel` builds `self.embedding` where `mtp_process`, beside the output layer's
    weight, which a tied model's last stage allocates too: two tables there)."""
    own_table = not shape.tied or chunk.tied_copy
    other = shape.norm_params + (table if own_table else 0)
    linear = 0
    if shape.mtp:
        linear = shape.mtp * 2 * shape.hidden * shape.hidden // tp
        other += shape.mtp * 3 * shape.norm_params + (table if not chunk.embedding else 0)
    return linear, other


def rank_chunks(shape: Shape, k: Knobs) -> tuple[tuple[Chunk, ...], ...]:
    """The chunks each pp rank holds (from `stages.py`, the one definition)."""
    return by_rank(chunks_of(shape.layers, k.pp, k.virtual_stages, k.schedule, k.split, shape.tied, shape.mtp), k.pp)


def by_rank(chunks: tuple[Chunk, ...], pp: int) -> tuple[tuple[Chunk, ...], ...]:
    """The chunks of each pp rank, in model order (one pass over the chunks)."""
    ranks: list[list[Chunk]] = [[] for _ in range(pp)]
    for c in chunks:
        ranks[c.rank].append(c)
    return tuple(tuple(r) for r in ranks)


def layer_rows(shape: Shape, tp: int, ep: int, moe: bool) -> tuple[tuple[int, int, str], ...]:
    """One layer's tensors on one rank as (dim-0 rows, elements per row, kind), the dim FSDP2
    shards: a column-parallel weight's rows are its tp shard's, a row-parallel one keeps all
    (tp splits its columns); routed experts are (experts on this rank, h, F) stacks."""
    h, m = shape.hidden, shape.ffn_matrices
    norms = [(h, 1, "other")] * (4 if shape.layernorm else 2)
    if shape.mla:  # each matrix stored (outputs, inputs), this rank's part; the latent norms
        attention = [(round(o), round(i), "linear") for i, o in (w.local(tp) for w in attention_linears(shape))]
        norms += [(width, 1, "other") for width in latent_norm_widths(shape.q_lora, shape.kv_lora)
                  for _ in range(2 if shape.layernorm else 1)]
    else:
        kv = shape.kv // tp if kv_split(shape, tp) else shape.kv
        attention = [(shape.q // tp, h, "linear"), (kv, h, "linear"), (kv, h, "linear"), (h, shape.q // tp, "linear")]

    def ffn(width: int, kind: str) -> list[tuple[int, int, str]]:
        return [(width // tp, h, kind)] * (m - 1) + [(h, width // tp, kind)]

    if not moe:
        return tuple(norms + attention + ffn(shape.ffn, "linear"))
    local = shape.experts // ep if ep <= shape.experts else 1
    routed = [(local, h * shape.expert_ffn, "expert")] * m
    shared = ffn(shape.shared_experts * shape.expert_ffn, "linear") if shape.shared_experts else []
    return tuple(norms + attention + [(shape.experts, h, "other")] + shared + routed)


def expert_shard_dim(local_shape: tuple[int, ...], group: int) -> int:
    """The dim FSDP2 shards one routed-expert stack (local experts, rows, columns) on over its
    `group` ranks, so that every rank holds 1/group of every expert. FSDP2's default dim 0 pads
    it to a multiple of the group: with fewer local experts than ranks each rank stores a whole
    expert, real or padding (Mixtral at ep 8 over a 16-rank group: its expert 16 times over).
    torchtitan then shards on dim 1 (`shard_placement_fn`); FSDP2 refuses an uneven split on any
    dim but 0, so: dim 0 when the local experts divide evenly, else the first other dim that
    does, else dim 0 with its padding (`fsdp_padding` counts it). The job (`EXPERT_SHARD_DIMS`)
    and the memory model both take it from here."""
    if group <= 1 or local_shape[0] % group == 0:
        return 0
    return next((d for d in range(1, len(local_shape)) if local_shape[d] % group == 0), 0)


@lru_cache(maxsize=4096)
def fsdp_padding(shape: Shape, chunks: tuple[Chunk, ...], tp: int, ep: int, dense_group: int,
                 expert_group: int, runtime: str = "torch") -> Params:
    """Elements FSDP2 adds to a rank's parameters when it shards them: it pads every tensor's
    dim 0 to a multiple of its shard group (`FSDPParam`: padded_sharded_param_size), so a rank
    holds ceil(rows / group) rows of each. The vocabulary tables' rows (V / tp) are the usual
    case (Llama 3's 128,256 / 8 = 16,032 over 64 ranks: 251 rows, not 250.5); by kind, so that
    `model_states` divides each by its group. Every rank's shard is padded alike. Routed-expert
    stacks are sharded on another dim when their local experts do not divide evenly
    (`expert_shard_dim`): unpadded, unless no dim divides."""
    def pad(rows: int, group: int) -> int:
        return -(-rows // group) * group - rows

    def expert_pad(rows: int, per_row: int) -> int:
        if expert_shard_dim((rows, shape.hidden, shape.expert_ffn), expert_group):
            return 0
        return pad(rows, expert_group) * per_row

    def layer_pad(moe: bool) -> tuple[int, int, int]:
        """One layer's (linear, other, expert) padding: it reads the layer's kind only."""
        linear = other = expert = 0
        for rows, per_row, kind in layer_rows(shape, tp, ep, moe):
            extra = expert_pad(rows, per_row) if kind == "expert" else pad(rows, dense_group) * per_row
            linear += extra if kind == "linear" else 0
            other += extra if kind == "other" else 0
            expert += extra if kind == "expert" else 0
        return linear, other, expert

    # every layer of a kind pads alike: the layers counted per kind, one layer's padding each
    # (integers: the same sums as layer by layer)
    n_moe = sum(shape.moe[c.first_layer:c.first_layer + c.layers].count(True) for c in chunks) if shape.moe else 0
    n_dense = sum(c.layers for c in chunks) - n_moe
    linear = other = expert = 0
    for moe, count in ((False, n_dense), (True, n_moe)):
        if count:
            one = layer_pad(moe)
            linear, other, expert = linear + count * one[0], other + count * one[1], expert + count * one[2]
    for chunk in chunks:
        table = (padded_vocab(shape.vocab, tp, runtime) // tp, shape.hidden)
        if chunk.embedding:
            other += pad(table[0], dense_group) * table[1]
            if shape.position_params:
                other += pad(shape.position_params // shape.hidden, dense_group) * shape.hidden
        if chunk.output:
            other += pad(shape.hidden, dense_group) * (2 if shape.layernorm else 1)  # the final norm
            if not shape.tied or chunk.tied_copy:
                other += pad(table[0], dense_group) * table[1]
    return Params(linear, other, expert)


def fsdp_shard_shortfall(shape: Shape, chunks: tuple[Chunk, ...], tp: int, ep: int, dense_group: int,
                         index: int, runtime: str = "torch") -> Params:
    """Elements the dense-parameter shard at position `index` of its `dense_group` holds fewer
    than the padded shard `fsdp_padding` counts. FSDP2 cuts dim 0 as `torch.chunk` does: every
    rank's storage is ceil(rows / group) rows (the padded shard: parameters and gradients are
    views of it), but the local tensor covers only the rows that exist, ceil(rows / group) on the
    first ranks and fewer, down to none, on the last (Llama 3's 16,032 vocabulary rows over 128
    ranks: 126 rows on ranks 0..126, 30 on rank 127). Adam's moments are `zeros_like` the local
    tensor, so a tail rank's optimizer states hold only its rows. The worst rank of a stage (the
    model's figure) holds full shards; a rehearsed tail rank is compared with its own (`parc
    rehearse`). Dense parameters only: routed-expert stacks keep the worst rank's figure."""
    def short(rows: int) -> int:
        size = -(-rows // dense_group)
        return size - min(size, max(0, rows - index * size))

    linear = other = 0
    for chunk in chunks:
        for layer in chunk.layer_range:
            for rows, per_row, kind in layer_rows(shape, tp, ep, shape.is_moe(layer)):
                if kind == "linear":
                    linear += short(rows) * per_row
                elif kind == "other":
                    other += short(rows) * per_row
        table = (padded_vocab(shape.vocab, tp, runtime) // tp, shape.hidden)
        if chunk.embedding:
            other += short(table[0]) * table[1]
            if shape.position_params:
                other += short(shape.position_params // shape.hidden) * shape.hidden
        if chunk.output:
            other += short(shape.hidden) * (2 if shape.layernorm else 1)  # the final norm
            if not shape.tied or chunk.tied_copy:
                other += short(table[0]) * table[1]
    return Params(linear, other, 0)
