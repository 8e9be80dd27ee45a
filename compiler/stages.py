"""Which layers each pipeline rank holds: the one definition shared by memory, time and codegen.

The model is cut into `pp x virtual_stages` chunks in layer order. Chunk `c` lives on pp rank
`c % pp` for the loop schedules (gpipe, 1f1b, interleaved-1f1b, interleaved-zb), and on rank `c`
or `2pp - 1 - c` for the V schedules (zbv, dualpipe-v), which fold the second half back so that
rank 0 holds both the first and the last chunk. The embedding sits on chunk 0, the final norm
and output layer on the last chunk; with tied embeddings and pp > 1 the last chunk holds a copy
of the embedding matrix (Megatron-LM's convention) whose gradients are summed with the first's.
The V schedules put both ends on rank 0, which still holds two copies: each chunk is its own
pipeline stage and FSDP2 unit, and FSDP2 cannot share a parameter between two units (the
generated runtime adds the two gradients locally instead of over a group; docs/runtime.md).

An explicit `split` gives the layers of each chunk in model order. Without one, layers are
spread evenly; when they do not divide, the first chunks take one more layer each (and the
checks report the unevenness). The first and last entries may be 0 (Megatron-Core's
account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split): that chunk holds
only the embedding, or only the final norm, output layer and loss, and still sends and receives
activations like any other stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from .plan import Plan

V_SCHEDULES = ("zbv", "dualpipe-v")


@dataclass(frozen=True)
class Chunk:
    """One model chunk (virtual stage)."""

    index: int
    """Position in model order, 0 .. pp x v - 1."""
    rank: int
    """The pp coordinate that holds it."""
    first_layer: int
    layers: int
    """Transformer blocks in the chunk."""
    embedding: bool
    """Holds the input embedding (chunk 0)."""
    output: bool
    """Holds the final norm and the output projection (last chunk)."""
    tied_copy: bool
    """Holds a second copy of a tied embedding matrix (last chunk, pp > 1, whichever rank)."""

    @property
    def layer_range(self) -> range:
        return range(self.first_layer, self.first_layer + self.layers)


def chunk_rank(chunk: int, pp: int, schedule: str | None) -> int:
    if schedule in V_SCHEDULES:
        return chunk if chunk < pp else 2 * pp - 1 - chunk
    return chunk % pp


def layers_per_chunk(layers: int, chunks: int, split: tuple[int, ...] | None) -> tuple[int, ...]:
    if split is not None and len(split) == chunks and sum(split) == layers:
        return split
    base, extra = divmod(layers, chunks)
    return tuple(base + (1 if c < extra else 0) for c in range(chunks))


def empty_ends_split(layers: int, chunks: int) -> tuple[int, ...] | None:
    """The split of one or two layers too few for the chunks, one layer a chunk: the embedding
    (and, two short, the loss) takes a chunk of its own, which is what Megatron-Core's
    account_for_embedding_in_pipeline_split (and account_for_loss_in_pipeline_split) produce
    there. None when the layers are not one or two short (or would leave no layer at all)."""
    ends = chunks - layers
    if layers < 1 or ends not in (1, 2):
        return None
    return (0,) + (1,) * layers + ((0,) if ends == 2 else ())


def pipeline_chunks(plan: Plan) -> tuple[Chunk, ...]:
    """The chunks of a plan with known pp degree and virtual stages."""
    pp = plan.layout.pp.degree or 1
    v = plan.layout.pp.virtual_stages or 1
    return make_chunks(plan.model.layers, pp, v, plan.layout.pp.schedule, plan.layout.pp.split,
                       plan.model.tied_embeddings)


def make_chunks(layers: int, pp: int, v: int, schedule: str | None, split: tuple[int, ...] | None,
                tied: bool) -> tuple[Chunk, ...]:
    count = pp * v
    sizes = layers_per_chunk(layers, count, split)
    chunks = []
    first = 0
    for c, size in enumerate(sizes):
        last = c == count - 1
        rank = chunk_rank(c, pp, schedule)
        chunks.append(Chunk(index=c, rank=rank, first_layer=first, layers=size, embedding=c == 0,
                            output=last, tied_copy=last and tied and pp > 1))
        first += size
    return tuple(chunks)


def chunks_of_rank(chunks: tuple[Chunk, ...], rank: int) -> tuple[Chunk, ...]:
    return tuple(c for c in chunks if c.rank == rank)
