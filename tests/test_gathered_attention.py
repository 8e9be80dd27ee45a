"""parc's own all-gather context parallelism (`AllGatherAttention` in the generated parallel.py)
runs one SDPA kernel per block of its query chunks against the gathered sequence, not one
causal kernel over all s keys: checked against the generated code's own block list and against
counts written here by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from parc import timing

TEMPLATE = Path(__file__).resolve().parent.parent / "backends" / "torch" / "templates" / "parallel.py.jinja"


def generated_gathered_blocks():
    """The generated job's `gathered_blocks`, taken from the template's text and run as it is."""
    text = TEMPLATE.read_text()
    match = re.search(r"^def gathered_blocks\(.*?^    return blocks$", text, re.S | re.M)
    assert match, "the template no longer defines gathered_blocks"
    source = match.group(0).replace("model.Blocks", "list")
    scope: dict = {}
    exec(source, scope)  # noqa: S102 - the repository's own template, no user input
    return scope["gathered_blocks"]


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_the_blocks_are_the_generated_jobs(cp: int):
    chunk = 1024
    generated = generated_gathered_blocks()
    ranks = list(range(cp))
    assert ranks
    for rank in ranks:
        blocks = generated(rank, cp, chunk)
        quintuples = [blocks[i:i + 5] for i in range(0, len(blocks), 5)]
        want = [(key1 - key0, bool(causal)) for _, _, key0, key1, causal in quintuples]
        assert timing.gathered_blocks(rank, cp, chunk) == want


def test_the_blocks_by_hand_and_their_balance():
    """cp 4, chunks of L tokens: rank 0 holds chunks 0 and 7 (7 L keys unmasked, two causal
    blocks of L), rank 1 chunks 1 and 6 (L, 6 L), rank 3 chunks 3 and 4 (3 L, 4 L). Each rank's
    work is 2 cp L^2 = 8 L^2 query-key pairs (a causal block counts half its square): the
    causal total s^2 / 2 = (8 L)^2 / 2 split evenly over 4 ranks."""
    L = 1.0
    assert timing.gathered_blocks(0, 4, L) == [(L, True), (7 * L, False), (L, True)]
    assert timing.gathered_blocks(1, 4, L) == [(L, False), (L, True), (6 * L, False), (L, True)]
    assert timing.gathered_blocks(3, 4, L) == [(3 * L, False), (L, True), (4 * L, False), (L, True)]
    for rank in range(4):
        pairs = sum(L * (keys / 2 if causal else keys) for keys, causal in timing.gathered_blocks(rank, 4, L))
        assert pairs == pytest.approx(8 * L * L)


def test_the_merges_by_hand():
    """Llama 3 8B, 8K tokens over cp 8 (1,024 tokens a rank, two chunks of 512): the pacing rank
    runs 4 kernels (3 on rank 0), and around them `attend_blocks` merges each block into an fp32
    accumulator and `blocks_backward` sums dQ, dK, dV per block. Forward by hand: stack 4 x
    2 x 1,024 x 1,024 (K and V of the rank), reorder and reshape 8 x 2 x 8,192 x 1,024,
    accumulator 4 + cast 6 per output element (1,024 x 4,096), merges 26 per element of each
    block's 512 rows: 4 blocks x 26 x 512 x 4,096; 8.4 + 134.2 + 41.9 + 218.1 = 402.7 MB."""
    n, q, kv, cp = 1024, 4096, 1024, 8
    forward, backward = timing.gathered_bytes(cp, n, q, kv, 4, cp * n)
    by_hand = 4 * 2 * n * kv + 8 * 2 * cp * n * kv + 10 * n * q + 26 * 4 * 512 * q
    assert forward == pytest.approx(by_hand)
    assert forward == pytest.approx(402.65e6, rel=1e-4)
    assert backward > forward  # dK and dV over the whole gathered sequence in fp32

