"""A tail rank of an uneven FSDP2 shard (`parameters.fsdp_shard_shortfall`, `rehearse.dense_shard_index`).

FSDP2 cuts a parameter's dim 0 as `torch.chunk` does and pads every rank's storage to the first
chunk's rows; Adam's moments are `zeros_like` the local rows, so the last ranks of a shard group
hold fewer optimizer bytes than the stage's worst rank. Found by rehearsing Llama 3 405B at
128K's last rank (16,383): the output layer's 16,032 vocabulary rows over 128 data ranks are
126 rows on ranks 0..126 and 30 on rank 127, and the rehearsal's optimizer states were
12,582,912 bytes under the model's (the worst rank's) figure.
"""

from __future__ import annotations

import pytest

from .conftest import ROOT

SPEC = "tests/data/specs/rehearse-405b-128k-16.par"


def plan_of(spec: str):
    from parc.pipeline import compile_text

    result = compile_text((ROOT / spec).read_text(encoding="utf-8"), spec)
    assert result.ok, [d.message for d in result.diagnostics]
    return result.plan


def test_the_data_shard_index_is_the_flattened_dp_cp_coordinate():
    """Rank order tp, cp, pp, dp (fastest first): the data mesh flattens (dp, cp), dp slowest."""
    from parc.rehearse import dense_shard_index

    plan = plan_of(SPEC)
    for rank in (0, 7, 8, 1927, 16383, 12345):
        c = plan.layout.coordinates(rank)
        assert dense_shard_index(plan, rank) == c["dp"] * 16 + c["cp"], rank


def test_the_last_stage_tail_rank_lacks_96_vocabulary_rows_of_adams_moments():
    """By hand: 16,032 rows over 128 ranks in chunks of ceil(16032 / 128) = 126 rows; rank 127
    holds 16,032 - 127 x 126 = 30 rows, 96 fewer, of 16,384 elements each; the layer's and the
    norms' rows divide evenly. Adam: 8 bytes per element (two fp32 moments)."""
    from parc.rehearse import predicted

    plan = plan_of(SPEC)
    worst = predicted(plan, 15)
    tail = predicted(plan, 15, 16383)
    first = predicted(plan, 15, 1927)
    assert worst["optimizer_states"] - tail["optimizer_states"] == 96 * 16384 * 8 == 12_582_912
    assert worst["peak"] - tail["peak"] == 12_582_912
    assert first == worst  # shard index 0 holds full chunks
    assert tail["parameters"] == worst["parameters"] and tail["gradients"] == worst["gradients"]  # padded storage


@pytest.mark.parametrize("rows,group", [(16032, 128), (16032, 64), (100, 8), (3, 8), (1024, 128), (5, 2)])
def test_the_shortfall_is_torch_chunks(rows, group):
    """Against torch itself: the rows `torch.chunk` gives each rank (FSDP2's `_chunk_with_empty`),
    for a one-tensor model (the final norm of a layerless chunk with `hidden` = rows)."""
    torch = pytest.importorskip("torch")
    from parc.memory.inputs import Shape
    from parc.memory.parameters import fsdp_shard_shortfall
    from parc.stages import Chunk

    shape = Shape(layers=0, hidden=rows, ffn=4, heads=1, kv_heads=1, head_dim=rows, vocab=8, tied=True,
                  ffn_matrices=2, layernorm=False, position_params=0)
    chunk = Chunk(index=0, rank=0, first_layer=0, layers=0, embedding=False, output=True, tied_copy=False)
    pieces = [p.shape[0] for p in torch.chunk(torch.empty(rows, 0), group)]
    pieces += [0] * (group - len(pieces))
    assert pieces, "torch.chunk gave no pieces"
    full = -(-rows // group)
    for index in range(group):
        missing = fsdp_shard_shortfall(shape, (chunk,), 1, 1, group, index)
        assert missing.other == full - pieces[index], index
        assert missing.linear == missing.expert == 0
