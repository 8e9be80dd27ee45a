"""Helpers shared by the launcher tests: plans from spec text, and fake commands that record argv.

A fake `torchrun`, `srun` or `scontrol` is a small Python script put first on PATH. It writes
what it was called with (arguments and the environment variables asked for) as JSON, so a test
can run the real generated shell and check every word that reached the command.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from parc.pipeline import compile_path, compile_text

from .conftest import ROOT


def plan_of(text: str, path: str = "test.par"):
    result = compile_text(text, path)
    assert result.ok, [d.message for d in result.diagnostics]
    return result.plan


def plan_of_file(path: Path):
    result = compile_path(str(path))
    assert result.ok, [d.message for d in result.diagnostics]
    return result.plan


def par_string(value: str) -> str:
    """A Python string as a .par string literal (the spec's escapes: \\\\, \\", \\n, \\t)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def spec_text(layout: str = "tp 2 x dp 4 on nodes(4 gpus, nvlink)", launch: str = "", job: str = "t",
              global_batch: int = 16) -> str:
    return f"""job {job}
{layout}
model tiny
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch {global_batch}
  micro-batch 2
}}
launch {{
  steps 3
{launch}
}}
"""


HOSTILE_VALUES = {
    "P_QUOTES": "it's \"quoted\" and 'single'",
    "P_EXPANSIONS": "$HOME ${PATH} $(touch pwned) `touch pwned2` $$ $1 !x",
    "P_LINES": "first line\nsecond\tline\n",
    "P_GLOB": "* ? [a-z] ~ ; & | < > #not-a-comment",
    "P_UNICODE": "ünïcödé ✓ 🚀 \u00a0nbsp",
    "P_SPACES": "  padded  ",
    "P_EMPTY": "",
    "P_BACKSLASH": "a\\b\\\\c\\n",
    "P_DASHES": "--not-an-option -x",
    "P_K8S_VAR": "$(MASTER_ADDR) and $$(ESCAPED) and $",
}
"""Environment values that break a launcher that pastes text instead of quoting it."""


def hostile_launch_block() -> str:
    return "\n".join(f"  env {name} {par_string(value)}" for name, value in HOSTILE_VALUES.items())


def write_job(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        if name.endswith(".sh") or name.endswith(".sbatch"):
            target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return directory


def fake_command(bin_dir: Path, name: str, record: Path, env_names=(), stdout: str = "") -> Path:
    """An executable `name` in `bin_dir` that appends {"argv", "env"} as one JSON line to `record`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"names = {list(env_names)!r}\n"
        f"with open({str(record)!r}, 'a', encoding='utf-8') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv[1:], 'env': {n: os.environ.get(n) for n in names}}) + '\\n')\n"
        f"sys.stdout.write({stdout!r})\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without launcher variables that would change the scripts' defaults."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "MASTER_", "PET_", "TORCHELASTIC_")) and k not in ("RANK", "WORLD_SIZE")}
    env.update(extra)
    return env


SPEC_DIR = ROOT / "specs"
LAUNCH_OPTIONS = ROOT / "tests" / "data" / "specs" / "launch-options.par"
