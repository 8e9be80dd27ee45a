"""A counter of host syncs: reads of device data by the host (self-contained: the MoE tests
also copy this file next to a generated job and import it there).

On CUDA each of these blocks the host until the GPU catches up. On CPU nothing blocks, so the
counter looks for the operations instead: a TorchDispatchMode sees `_local_scalar_dense`
(`.item()`, `int(t)`, `bool(t)`) and the ops whose output shape depends on the data (nonzero,
bincount, unique, masked_select, repeat_interleave with a tensor of repeats and no
`output_size`); `Tensor.tolist`, `Tensor.item` and `Tensor.cpu` (a device-to-host copy on a GPU),
which CPU tensors serve without dispatching, are wrapped while the counter is active.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

DATA_DEPENDENT = {
    torch.ops.aten._local_scalar_dense.default,
    torch.ops.aten.nonzero.default,
    torch.ops.aten.bincount.default,
    torch.ops.aten.masked_select.default,
    torch.ops.aten._unique2.default,
    torch.ops.aten.unique_consecutive.default,
}


class HostSyncs(TorchDispatchMode):
    """Counts reads of device data by the host while active."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.seen: list[str] = []
        self._patched: dict[str, object] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        data_dependent = func in DATA_DEPENDENT or (
            func.overloadpacket is torch.ops.aten.repeat_interleave
            and isinstance(args[0] if func is torch.ops.aten.repeat_interleave.Tensor else args[1], torch.Tensor)
            and kwargs.get("output_size") is None)
        if data_dependent:
            self.note(str(func))
        return func(*args, **kwargs)

    def note(self, what: str) -> None:
        self.count += 1
        self.seen.append(what)

    def __enter__(self):
        for method in ("tolist", "item", "cpu"):
            original = getattr(torch.Tensor, method)
            self._patched[method] = original

            def counted(t, *a, _original=original, _method=method, **k):
                self.note(_method)
                return _original(t, *a, **k)

            setattr(torch.Tensor, method, counted)
        return super().__enter__()

    def __exit__(self, *exc):
        for method, original in self._patched.items():
            setattr(torch.Tensor, method, original)
        return super().__exit__(*exc)
