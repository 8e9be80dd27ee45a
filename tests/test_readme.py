"""The README's commands work as written: each one quoted here is found verbatim in README.md
(so a README edit that changes a command fails here until the command is tried again), then run
with the installed `parc` in a fresh folder holding a copy of specs/, and its result checked.

Left to other tests: the test command (`.ci/run` runs it), running the two-node launcher line
(tests/test_launchers_e2e.py starts launch/torchrun.sh twice, as the README says), `parc
rehearse` (tests/test_rehearse.py), `parc import` (tests/test_import.py) and the ```par blocks
(tests/test_docs.py). Left out: the installs (they would download torch), the long fuzz run
and the benchmarks, which print tables for minutes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

README = (ROOT / "README.md").read_text()
PARC = str(Path(sys.executable).parent / "parc")


def in_readme(command: str) -> str:
    assert command in README, f"the README no longer says `{command}`: try its new form and update this test"
    return command


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A README command line, `parc` being the installed one (the README's `.venv/bin/parc`)."""
    words = command.split()
    words[0] = PARC if words[0] in ("parc", ".venv/bin/parc") else words[0]
    return subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    return tmp_path


def test_set_up_compiles_the_405b_example_into_out(folder):
    command = in_readme(".venv/bin/parc compile specs/llama3-405b.par")
    done = run(command, folder)
    assert done.returncode == 0, done.stderr
    assert "out/llama3-405b/" in README and (folder / "out" / "llama3-405b" / "train.py").is_file()


def test_the_tiny_job_directory_has_the_files_the_table_lists(folder):
    done = run(in_readme("parc compile specs/tiny.par -o job/"), folder)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^wrote job/ \(\d+ files\)$", done.stdout, re.M), done.stdout  # as given, not `job//`
    section = README.split("## The generated job", 1)[1].split("\nOnly what the layout uses", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    files = [name for row in rows for name in re.findall(r"`([^`]+)`", row.split(" | ")[0])]
    assert {"parallel.py", "model.py", "train.py", "README.md", "plan.json", "launch/torchrun.sh"} <= set(files)
    for name in files:
        assert (folder / "job" / name).is_file(), name
    # the two-node CPU line (run for real by tests/test_launchers_e2e.py): one start per node,
    # and the interpreter it names is the one the launcher takes
    in_readme("cd job && for _ in 1 2; do PYTHON=../.venv/bin/python launch/torchrun.sh --device cpu & done; wait")
    launcher = (folder / "job" / "launch" / "torchrun.sh").read_text()
    assert '"${PYTHON:-python3}" -m torch.distributed.run' in launcher and "--nnodes 2 " in launcher


def test_the_diagnostic_example_is_what_parc_prints(folder):
    """The README's example error, produced by a spec whose line 9 is the line it shows."""
    block = re.search(r"A diagnostic names the file.*?```text\n(.*?)```", README, re.S)[1]
    assert block.startswith("specs/x.par:9:3: error[E0201]")
    (folder / "specs" / "x.par").write_text(
        "tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware {\n  gpu h100-sxm\n}\n\n"
        "train {\n  seq 4096\n  micro_batch 4\n  global-batch 64\n}\n")
    done = run("parc check specs/x.par", folder)
    assert done.returncode == 1 and done.stderr == block
    assert run(in_readme("parc codes E0201"), folder).stdout.startswith("E0201 (error)")


def test_report_writes_the_page(folder):
    done = run(in_readme("parc report\nspecs/llama3-405b.par -o report.html").replace("\n", " "), folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "report.html").read_text().lower().startswith("<!doctype html>")


def test_diff_against_the_main_branch_of_a_clone(folder):
    """`parc diff FILE --against origin/main`, in a git repository whose origin/main holds the
    specs as committed (as a fresh clone has it): no change in the facts, exit 0."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed (CI installs it)")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for step in (["init", "-q"], ["add", "specs"], ["commit", "-q", "-m", "specs"],
                 ["update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run([*git, *step], cwd=folder, check=True, capture_output=True)
    command = in_readme("parc diff specs/llama3-405b.par\n--against origin/main").replace("\n", " ")
    done = run(command, folder)
    assert done.returncode == 0, done.stderr
    assert "summary: no change in the layout's facts" in done.stdout


def test_every_command_of_the_table_has_its_help(folder):
    """Each command of "The command line" exists, with every option the table gives it."""
    rows = re.findall(r"^\| `parc ([a-z]+)([^`]*)`", README, re.M)
    assert len(rows) >= 12, rows
    for command, usage in rows:
        done = run(f"parc {command} --help", folder)
        assert done.returncode == 0, (command, done.stderr)
        for option in re.findall(r"--[a-z-]+", usage):
            assert option in done.stdout, (command, option)
    assert run(in_readme("parc --version"), folder).stdout.startswith("parc, version")
    module = subprocess.run([sys.executable, "-m", "parc", "--version"], capture_output=True, text=True)
    assert in_readme("`python -m parc` works too") and module.stdout.startswith("parc, version")


def test_the_regeneration_commands_exist():
    """The scripts the README names for regenerating documents and goldens, and their options."""
    for script, option in (("docs/update_reference.py", None), ("docs/memory_table.py", "--write"),
                           ("docs/search_doc.py", "--write"), ("benchmarks/fidelity.py", "--write"),
                           ("benchmarks/fidelity.py", "--published"), ("benchmarks/cli_startup.py", None),
                           ("benchmarks/memory_speed.py", None), ("benchmarks/search_speed.py", None),
                           ("benchmarks/hostile_input.py", None), ("benchmarks/gpu_check.py", None)):
        assert script in README, script
        assert (ROOT / script).is_file(), script
        if option:
            assert option in (ROOT / script).read_text(), (script, option)
    assert in_readme("python -m tests.golden_jobs") and (ROOT / "tests" / "golden_jobs.py").is_file()
    assert in_readme("python -m tests.fuzz --minutes 30") and (ROOT / "tests" / "fuzz" / "__main__.py").is_file()


def test_the_example_specs_figures_are_parcs(tmp_path):
    """The predicted throughputs the README's example table quotes are what `parc explain` says
    today, to the digits written: Meta's convention for the Llama 3 runs (a hand count of PaLM's
    MFU FLOPs, tests/test_targets_specs.py), hardware TFLOP/s for Megatron's 1T."""
    import json

    from .test_targets_specs import LLAMA3_405B, palm_flops_per_token

    def explained(spec: str) -> dict:
        done = run(f"parc explain {ROOT / spec} --format json", tmp_path)  # HOME is tmp_path: nothing written here
        return json.loads(done.stdout)

    quoted = {
        "specs/llama3-405b.par": r"`specs/llama3-405b\.par` \|[^|]*: (\d+) predicted vs 430",
        "specs/llama3-405b-128k.par": r"`specs/llama3-405b-128k\.par` \|[^|]*\((\d+) predicted vs 380",
        "specs/megatron-1t.par": r"`specs/megatron-1t\.par` \|[^|]*\(([\d.]+) predicted vs 163",
        "specs/llama3-70b-nvfp4.par": r"`specs/llama3-70b-nvfp4\.par` \|[^|]*: ([\d,]+) tokens/s per GPU predicted vs 4,864",
    }
    for spec, pattern in quoted.items():
        written = re.search(pattern, README)
        assert written, f"the README's row for {spec} no longer quotes a prediction this way"
        report = explained(spec)
        t = report["throughput"]
        if "nvfp4" in spec:
            predicted = f"{t['tokens_per_second_per_gpu']:,.0f}"
        elif "megatron" in spec:
            predicted = f"{t['hardware_tflops_per_gpu']:.1f}"
        else:
            predicted = f"{t['tokens_per_second_per_gpu'] * palm_flops_per_token(LLAMA3_405B, report['seq']) / 1e12:.0f}"
        assert written[1] == predicted, f"README says {written[1]} for {spec}, parc predicts {predicted}: update the README"
