"""The golden record of generated job directories, kept under tests/golden/jobs/<name>/.

Each directory is exactly what `parc compile SPEC -o DIR` writes for one spec, so a change to a
template or to the backend shows up in review as a diff of the files a user would get. After an
intended change, regenerate the record with the one command

    .venv/bin/python -m tests.golden_jobs

and review the diff (`PARC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden_jobs.py` does the
same, like every other golden file). tests/test_golden_jobs.py compiles the specs through the
CLI and compares the directories byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_JOBS = ROOT / "tests" / "golden" / "jobs"
SPECS = {
    "tiny": "specs/tiny.par",
    "llama3-405b": "specs/llama3-405b.par",
    "launch-options": "tests/data/specs/launch-options.par",
}
"""Record name -> spec path relative to the repository (the path the plan records as `source`):
the small layout the end-to-end tests run, a large one, and one with every launcher setting."""


def generate(name: str) -> dict[str, str]:
    """The job directory for one recorded spec, as relative path -> text."""
    from parc.backends import job_files
    from parc.pipeline import compile_text

    relative = SPECS[name]
    result = compile_text((ROOT / relative).read_text(encoding="utf-8"), relative)
    if not result.ok:
        raise SystemExit(f"{relative} does not compile: " + "; ".join(d.message for d in result.diagnostics))
    return job_files(result.plan)


def recorded(name: str) -> dict[str, str]:
    directory = GOLDEN_JOBS / name
    return {path.relative_to(directory).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(directory.rglob("*")) if path.is_file()}


def write(name: str, files: dict[str, str]) -> None:
    directory = GOLDEN_JOBS / name
    shutil.rmtree(directory, ignore_errors=True)
    for relative, text in files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def main() -> None:
    for stale in sorted(p.name for p in GOLDEN_JOBS.iterdir() if p.is_dir() and p.name not in SPECS):
        shutil.rmtree(GOLDEN_JOBS / stale)
        print(f"removed tests/golden/jobs/{stale}/")
    for name in SPECS:
        files = generate(name)
        changed = files != recorded(name) if (GOLDEN_JOBS / name).exists() else True
        write(name, files)
        print(f"{'rewrote' if changed else 'unchanged'} tests/golden/jobs/{name}/ ({len(files)} files)")


if __name__ == "__main__":
    main()
