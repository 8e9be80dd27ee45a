"""Static checks of the generated runtime (fast: nothing is launched).

For every spec in specs/ and tests/e2e/specs without holes: parallel.py, model.py, train.py and rehearse.py
pass `ruff check` (pyflakes, pycodestyle, isort, bugbear, pyupgrade) and py_compile, import only
torch, the standard library and each other, come out byte-identical twice, carry the plan's
mesh and pipeline chunks as data, and contain no code for axes the layout does not use.
"""

from __future__ import annotations

import ast
import importlib
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest
from parc.backends.torch import runtime
from parc.pipeline import compile_path
from parc.stages import pipeline_chunks

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.par")) + sorted((ROOT / "tests" / "e2e" / "specs").glob("*.par"))
RUFF = Path(sys.executable).with_name("ruff")
RUFF_RULES = ["--isolated", "--select", "E,F,W,I,B,UP", "--ignore", "E501", "--target-version", "py310"]
RUNTIME_FILES = ("model.py", "parallel.py", "train.py", "rehearse.py")


def _plan(path: Path):
    result = compile_path(str(path))
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    return result.plan


COMPLETE = [p for p in SPECS if not _plan(p).holes]


@pytest.fixture(params=COMPLETE, ids=[f"{p.parent.name}/{p.stem}" for p in COMPLETE])
def generated(request, tmp_path):
    plan = _plan(request.param)
    files = runtime.files(plan)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return plan, files, tmp_path


def test_ruff_and_py_compile(generated):
    _, _, directory = generated
    done = subprocess.run([str(RUFF), "check", *RUFF_RULES, *RUNTIME_FILES], cwd=directory,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in RUNTIME_FILES:
        py_compile.compile(str(directory / name), doraise=True)


def test_imports_only_torch_and_the_standard_library(generated):
    _, files, _ = generated
    allowed = set(sys.stdlib_module_names) | {"torch", "model", "parallel", "rehearse", "__future__"}
    for name, text in files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                assert module.split(".")[0] in allowed, f"{name} imports {module}"


def test_deterministic(generated):
    plan, files, _ = generated
    assert runtime.files(plan) == files


def test_mesh_and_chunks_are_the_plans(generated):
    """Import the generated parallel.py (definitions only) and read its data back."""
    plan, _, directory = generated
    sys.path.insert(0, str(directory))
    try:
        for module in ("model", "parallel"):
            sys.modules.pop(module, None)
        parallel = importlib.import_module("parallel")
        written = [(a.name, a.degree) for a in plan.layout.axes]
        dims = [(d, n) for d, n in zip(parallel.MESH_DIMS, parallel.MESH_SHAPE, strict=True)
                if d not in ("dp_replicate", "dp_shard")]
        if plan.layout.dp.sharding == "hsdp":
            dims.append(("dp", plan.layout.dp.degree))
        assert sorted(dims) == sorted(written + ([("dp", 1)] if "dp" not in dict(written) else []))
        ordered = [d for d in parallel.MESH_DIMS if d != "dp_shard"]
        ordered = ["dp" if d == "dp_replicate" else d for d in ordered]  # hsdp splits dp in place
        assert [d for d in reversed(ordered) if d in dict(written)] == [a for a, _ in written]
        assert parallel.WORLD_SIZE == plan.cluster.world_size
        if (plan.layout.pp.degree or 1) > 1:
            chunks = pipeline_chunks(plan)
            assert [(c.index, c.pp_rank, c.layers, c.embedding, c.output) for c in parallel.CHUNKS] == [
                (c.index, c.rank, c.layer_range, c.embedding, c.output) for c in chunks]
        else:
            assert not hasattr(parallel, "CHUNKS")
    finally:
        sys.path.remove(str(directory))
        for module in ("model", "parallel"):
            sys.modules.pop(module, None)


ABSENT = {
    "tp": ("parallelize_module", "apply_tensor_parallel", "loss_parallel"),
    "pp": ("pipelining", "PipelineStage", "CHUNKS", "split_pipeline"),
    "cp": ("apply_context_parallel", "Attention(", "sequence_positions"),
    "ep": ("TokenDispatcher", "apply_expert_parallel", "AllToAll.apply(x["),
}


def test_no_code_for_absent_axes(generated):
    plan, files, _ = generated
    for axis, markers in ABSENT.items():
        degree = (plan.layout.ep.degree if axis == "ep" else plan.layout.degree(axis)) or 1
        present = [m for m in markers if m in files["parallel.py"]]
        if degree == 1:
            assert not present, f"{axis} is absent but parallel.py has {present}"
        else:
            assert present == list(markers), f"{axis} {degree}: parallel.py lacks {set(markers) - set(present)}"
