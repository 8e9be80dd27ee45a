"""Row fields written in words the reader misread after stop 60's transcriptions, found by reading
its own open items and a third round of independent transcriptions (stop 61).

- A GPU count per group is never the job's: "64 nodes (8 GPUs each)", "32 DGX nodes, 8 GPUs per
  node", "8 nodes (8x H100 each)" multiply the groups (`gpus_of`; before, the count in the
  parenthesis, or the node count, was read as the job's GPUs).
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import ROWS, apply, diff, published, reading, setf

N145B = "narayanan21_t1_145B"  # 192 nodes of 8 A100


@pytest.mark.parametrize("written,gpus", [
    ("64 nodes (8 GPUs each)", 512),
    ("64 nodes (8 GPUs per node)", 512),
    ("8 nodes (8x H100 each)", 64),
    ("32 DGX nodes, 8 GPUs each", 256),
    ("64 nodes, 8 GPUs per node", 512),
    ("64 nodes each with 8 GPUs", 512),
    ("16 nodes, 8/node", 128),
    ("64 nodes x 8 GPUs each", 512),
    # controls: a total beside the groups wins; a bare count is the job's
    ("384 nodes (3072 GPUs)", 3072),
    ("512 GPUs (64 nodes x 8)", 512),
    ("12288 GPUs (1536 nodes)", 12288),
    ("64 x 8 = 512", 512),
    ("16K GPUs", 16384),
    ("3,072 GPUs", 3072),
    ("256x8", 2048),
    ("18 trays x 4 GPUs", 72),
])
def test_a_gpu_count_per_group_multiplies_the_groups(written, gpus):
    assert published.gpus_of({"num_gpus": written}) == gpus


@pytest.mark.parametrize("written", ["192 nodes (8 GPUs each)", "192 DGX A100 nodes, 8 GPUs per node",
                                     "192 nodes each with 8 GPUs"])
def test_a_row_whose_gpus_are_counted_per_node_reads_as_published(written):
    row, others = ROWS[N145B]
    assert diff(reading(apply(row, [setf("hardware.num_gpus", written)]), others), reading(row, others)) == []
