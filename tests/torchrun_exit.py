"""How a test script run under torchrun on CPU leaves: as the generated train.py's `finish` does.

Every rank leaves together (a barrier, then the process group destroyed), and `os._exit` skips
the interpreter's teardown, which can abort after a correct run (gloo's threads and DeviceMesh
shutdown: "terminate called without an active exception", SIGABRT; docs/torch-cpu.md, caveat 2).
The scripts import it by file name: torchrun puts the script's folder (tests/) first on sys.path.
"""

from __future__ import annotations

import os
import sys

import torch.distributed as dist


def leave_together() -> None:
    """Barrier, destroy the process group, flush, and exit 0 without the interpreter's teardown."""
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
