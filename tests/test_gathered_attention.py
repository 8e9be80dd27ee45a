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



MODEL_TEMPLATE = TEMPLATE.parent / "model.py.jinja"


def generated_windowed_gathered_blocks():
    """The generated job's `gathered_blocks` with its window, `model.window_blocks` taken from
    the generated model.py's text, both run as they are (no torch needed: plain lists)."""
    import types

    text = MODEL_TEMPLATE.read_text()
    match = re.search(r"^def window_blocks\(.*?^    return blocks$", text, re.S | re.M)
    assert match, "the model template no longer defines window_blocks"
    masks = re.search(r"^WHOLE, CAUSAL, UPPER = .*$", text, re.M)
    assert masks, "the model template no longer names its masks"
    scope: dict = {}
    exec(masks.group(0) + "\n" + match.group(0).replace("-> Blocks", "-> list").replace(": Blocks", ": list"),
         scope)  # noqa: S102 - the repository's own template, no user input
    model = types.SimpleNamespace(window_blocks=scope["window_blocks"], Blocks=list)
    gathered = generated_gathered_blocks()
    gathered.__globals__["model"] = model
    return gathered


def enumerated_band(blocks: list) -> timing.BandBlocks:
    """Kernels, block-rows, block-keys and edge rows of a generated block list, by enumeration."""
    quintuples = [blocks[i:i + 5] for i in range(0, len(blocks), 5)]
    return timing.BandBlocks(len(quintuples), sum(r1 - r0 for r0, r1, _, _, _ in quintuples),
                             sum(k1 - k0 for _, _, k0, k1, _ in quintuples),
                             sum(r1 - r0 for r0, r1, _, _, m in quintuples if m == 2))


@pytest.mark.parametrize(("cp", "chunk", "window"), [
    (2, 8, 3), (2, 8, 1), (2, 8, 8), (2, 8, 5), (4, 4, 3), (4, 4, 6), (4, 5, 7), (8, 3, 2), (3, 7, 4), (2, 8, 16),
])
def test_the_windowed_blocks_are_the_generated_jobs(cp: int, chunk: int, window: int):
    """`timing.band_blocks`' closed form (what the time model charges) against the generated job's
    own `gathered_blocks(rank, cp, chunk, window)` enumerated, per query chunk of every rank, and
    `timing.gathered_band` against the rank that launches most."""
    generated = generated_windowed_gathered_blocks()
    ranks = list(range(cp))
    assert ranks
    per_rank = []
    for rank in ranks:
        got = enumerated_band(generated(rank, cp, chunk, window))
        first, second = rank, 2 * cp - 1 - rank
        want = (timing.band_blocks(first * chunk, (first + 1) * chunk, window)
                + timing.band_blocks(second * chunk, (second + 1) * chunk, window))
        assert want == got
        per_rank.append(got)
    assert timing.gathered_band(cp, 2 * cp * chunk, window) == max(per_rank, key=lambda b: (b.count, b.rows))


def test_the_windowed_blocks_by_hand():
    """cp 2, seq 32 (chunks of 8), W 3, tiles at multiples of 3. Rank 0 (chunks 0 and 3): positions
    0-7 as tiles [0, 3) causal only, [3, 6) edge + causal, [6, 8) whole + edge + causal: 6;
    24-31 as [24, 27), [27, 30) edge + causal each, [30, 32) whole + edge + causal: 7; 13 kernels.
    Rank 1 (chunks 1 and 2): 8-15 as [8, 9) whole + causal (one row: no edge), [9, 12), [12, 15)
    edge + causal, [15, 16) whole + causal: 8; 16-23 as [16, 18) whole + edge + causal, [18, 21),
    [21, 24) edge + causal: 7; 15 kernels, the busiest. Rank 1's edge rows: 2 + 2 (chunk 1) and
    1 + 2 + 2 (chunk 2) = 9."""
    assert timing.band_blocks(0, 8, 3).count == 6
    assert timing.band_blocks(24, 32, 3).count == 7
    assert timing.band_blocks(8, 16, 3).count == 8
    assert timing.band_blocks(16, 24, 3).count == 7
    busiest = timing.gathered_band(2, 32, 3)
    assert busiest.count == 15
    assert busiest.edge == 9
    # the one-process layer: tiles [0,3) ... [30,32): 11 causal, 10 edges, the short last tile whole
    assert timing.window_block_count(32, 3) == 22
