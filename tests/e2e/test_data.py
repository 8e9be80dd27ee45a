"""The generated job trains on a token file (`train.py --data`), not only on synthetic sequences.

A file of token ids is written here (uint16, the width the tiny model's 256-token vocabulary
takes); the job maps it and cuts it into windows of SEQ_LEN + 1 tokens at a stride of SEQ_LEN,
in an order set by the seed and the step alone (`TokenFile`). Checked:

- the windows: over one epoch every window of the file is read exactly once, each sequence is
  the file's tokens at its window (compared with the bytes read here, not with the job's own
  arithmetic), and the next epoch reads every window again in another order; another seed,
  another order;
- the ranks read their own rows: a ZeRO-1 job on dp 4 trains on the file exactly as one
  process does (losses and gradients, harness.assert_parity), and differently from the
  synthetic data;
- bad files stop with a message and exit status 2, not a traceback: ids outside the vocabulary,
  a size that is not whole ids, a file shorter than one sequence, uint32 ids the vocabulary's
  width (uint16) would misread;
- every rank reads the same file: two processes on a gloo group, each with its own copy (as two
  nodes with their own mounts), pass where the copies are equal and both stop, the differing
  rank naming itself, where one copy's last token differs (`check_same_data`).
"""

from __future__ import annotations

import array
import random
import re
from pathlib import Path

import pytest

from .harness import assert_parity, compile_job, in_fresh_interpreter, one_of_each_kind, train

pytestmark = pytest.mark.e2e

SEQ_LEN, VOCAB, GLOBAL_BATCH = 32, 256, 16
"""The reference spec's sequence, the tiny model's vocabulary, the reference's global batch."""


def write_tokens(path: Path, count: int, seed: int = 0, vocab: int = VOCAB) -> list[int]:
    """`count` token ids to `path` as uint16: runs of arithmetic progressions (something to
    learn) with a few random ids. Returns them."""
    rng = random.Random(seed)
    ids: list[int] = []
    while len(ids) < count:
        first, stride = rng.randrange(vocab), rng.randrange(1, 8)
        ids += [(first + stride * i) % vocab if rng.random() > 0.1 else rng.randrange(vocab) for i in range(50)]
    ids = ids[:count]
    with open(path, "wb") as f:
        array.array("H", ids).tofile(f)
    return ids


def _windows(job: Path, path: Path, seeds: tuple[int, ...], epochs: int) -> dict:
    """Runs in a fresh interpreter (train.py imports the job's modules): per seed, the window
    index and the tokens of every sequence n = step x GLOBAL_BATCH + row over `epochs` epochs."""
    import importlib.util
    import sys

    sys.path.insert(0, str(job))
    spec = importlib.util.spec_from_file_location("train_of_job", job / "train.py")
    train_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_module)
    out = {}
    for seed in seeds:
        data = train_module.TokenFile(path, "auto", seed)
        total = epochs * data.windows
        steps = -(-total // GLOBAL_BATCH)
        read = [(data.window(step, row), data.sequence(step, row).tolist())
                for step in range(steps) for row in range(GLOBAL_BATCH)][:total]
        out[seed] = {"windows": data.windows, "read": read}
    return out


def test_every_window_once_per_epoch_in_a_seeded_order(tmp_path):
    job = compile_job("reference", tmp_path)
    path = tmp_path / "tokens.bin"
    ids = write_tokens(path, 40 * SEQ_LEN + 5)
    got = in_fresh_interpreter(_windows, job, path, (0, 1), 2)
    windows = (len(ids) - 1) // SEQ_LEN
    assert windows == 40
    for seed, seen in got.items():
        assert seen["windows"] == windows
        read = seen["read"]
        assert len(read) == 2 * windows
        for epoch in range(2):
            chosen = [w for w, _ in read[epoch * windows:(epoch + 1) * windows]]
            assert sorted(chosen) == list(range(windows)), (seed, epoch)
        for w, tokens in read:
            assert tokens == ids[w * SEQ_LEN:w * SEQ_LEN + SEQ_LEN + 1]
        first, second = ([w for w, _ in read[e * windows:(e + 1) * windows]] for e in range(2))
        assert first != second, "each epoch in its own order"
        assert first != sorted(first), "shuffled, not read front to back"
    assert [w for w, _ in got[0]["read"]] != [w for w, _ in got[1]["read"]], "another seed, another order"


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "tokens.bin"
    write_tokens(path, 200 * SEQ_LEN + 1, seed=7)
    return path


def test_a_layout_trains_on_the_file_as_one_process_does(workdir, reference, data_file):
    one = train(compile_job("reference", workdir), 1, "--data", str(data_file),
                out=workdir / "data-one").check()
    assert max(abs(one.losses[s] - reference.losses[s]) for s in one.losses) > 1e-3, \
        "the file's batches train like the synthetic ones: was --data read?"
    spread = train(compile_job("zero1", workdir), 4, "--data", str(data_file), out=workdir / "data-zero1")
    assert_parity(spread, one)


@pytest.mark.parametrize("case", one_of_each_kind(["outside the vocabulary", "odd bytes", "too short", "uint32 ids"],
                                                  ["outside the vocabulary"]))
def test_a_bad_token_file_stops_with_a_message(case, tmp_path):
    job = compile_job("reference", tmp_path)
    path = tmp_path / "bad.bin"
    if case == "outside the vocabulary":
        write_tokens(path, 10 * SEQ_LEN, vocab=2 * VOCAB)
        expected = "is outside the model's vocabulary of 256"
    elif case == "odd bytes":
        path.write_bytes(b"\x01\x00" * 100 + b"\x01")
        expected = "201 bytes are not whole uint16 token ids"
    elif case == "too short":
        write_tokens(path, SEQ_LEN)
        expected = f"{SEQ_LEN} tokens, fewer than one sequence of {SEQ_LEN + 1}"
    else:  # uint32 ids read as the uint16 the vocabulary takes: every second one would be 0
        ids = write_tokens(path, 10 * SEQ_LEN)
        with open(path, "wb") as f:
            array.array("I", ids).tofile(f)
        expected = "help: pass --data-dtype uint32"
    run = train(job, 1, "--data", str(path), grads=False)
    assert run.returncode != 0 and re.search(r"exitcode\s*:\s*2\b", run.output), run.output[-3000:]
    assert expected in run.output, run.output[-3000:]
    assert not re.search(r'File "[^"]*train\.py"', run.output), "a message from train.py, not a traceback"


def _check_copy(job: Path, path: Path, rank: int, store: Path) -> tuple[int | None, str]:
    """Rank `rank` of two on a gloo group (a FileStore at `store`) runs the job's `check_same_data`
    on its own copy `path`: (exit status or None, what it printed to stderr)."""
    import contextlib
    import importlib.util
    import io
    import os
    import sys

    import torch
    import torch.distributed as dist

    os.environ.update(RANK=str(rank), LOCAL_RANK="0")  # as torchrun sets them: each its own node
    sys.path.insert(0, str(job))
    spec = importlib.util.spec_from_file_location("train_of_job", job / "train.py")
    train_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_module)
    dist.init_process_group("gloo", store=dist.FileStore(str(store), 2), rank=rank, world_size=2)
    err = io.StringIO()
    status = None
    try:
        with contextlib.redirect_stderr(err):
            train_module.check_same_data(train_module.TokenFile(path, "auto", 0), torch.device("cpu"))
    except SystemExit as e:
        status = e.code
    dist.destroy_process_group()
    return status, err.getvalue()


def _two_ranks(job: Path, paths: list[Path], store: Path) -> list[tuple[int | None, str]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_check_copy, job, paths[r], r, store) for r in range(2)]
        return [f.result(timeout=300) for f in futures]


@pytest.mark.parametrize("copies", ["equal", "last token differs"])
def test_every_rank_reads_the_same_file(copies, tmp_path):
    job = compile_job("reference", tmp_path)
    ids = write_tokens(tmp_path / "node0.bin", 100 * SEQ_LEN + 1, seed=3)
    if copies == "last token differs":
        ids[-1] = (ids[-1] + 1) % VOCAB
    with open(tmp_path / "node1.bin", "wb") as f:
        array.array("H", ids).tofile(f)
    got = _two_ranks(job, [tmp_path / "node0.bin", tmp_path / "node1.bin"], tmp_path / "store")
    if copies == "equal":
        assert got == [(None, ""), (None, "")]
        return
    (status0, err0), (status1, err1) = got
    assert status0 == status1 == 2
    assert "error: rank 1: --data" in err1 and "this node's copy is not rank 0's (3,201 tokens" in err1, err1
    assert "1 rank(s) read another copy of the file than rank 0" in err0, err0
    assert "help: give every node the same file" in err0 and "help:" in err1
