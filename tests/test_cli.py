"""The `parc` command: exit codes, hostile paths, colour, help, version, every subcommand."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from parc.diagnostics import Style

from .conftest import ROOT, SPECS, run_cli

PARC = [sys.executable, "-m", "parc"]
GOOD = str(ROOT / "specs" / "tiny.par")


def run(*args, cwd=ROOT, env=None, input=None):
    return subprocess.run([*PARC, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, input=input)


def test_check_all_specs_clean():
    result = run_cli("check", *[str(p) for p in SPECS])
    assert result.exit_code == 0, result.stderr
    assert "error" not in result.stderr


def test_check_reports_errors_with_status_1(tmp_path):
    bad = tmp_path / "bad.par"
    bad.write_text("tp=8\n")
    result = run_cli("check", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:1:3: error[E0103]" in result.stderr
    assert "help:" in result.stderr


def test_all_errors_of_several_files_in_one_run(tmp_path):
    one, two = tmp_path / "one.par", tmp_path / "two.par"
    one.write_text("tp 2 pp 2\n")
    two.write_text("modle tiny\n")
    result = run_cli("check", str(one), str(two), GOOD)
    assert result.exit_code == 1
    assert "E0104" in result.stderr and "E0201" in result.stderr
    assert "tiny.par: ok" in result.stdout


@pytest.mark.parametrize("kind", ["directory", "missing", "unreadable"])
def test_unreadable_paths_are_usage_errors(tmp_path, kind):
    path = tmp_path / "x.par"
    if kind == "directory":
        path.mkdir()
    elif kind == "unreadable":
        path.write_text("tp 2\n")
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads anything: use a FIFO-free stand-in
            path.chmod(0o644)
            path = tmp_path / "dir.par"
            path.mkdir()
    result = run("check", str(path))
    assert result.returncode == 2, result.stderr
    assert "error[E0001]" in result.stderr
    assert "Traceback" not in result.stderr


def test_binary_junk_is_a_diagnostic(tmp_path):
    junk = tmp_path / "junk.par"
    junk.write_bytes(bytes(range(256)) * 4)
    result = run("check", str(junk))
    assert result.returncode == 1
    assert "error[E0002]" in result.stderr and "Traceback" not in result.stderr


def test_nul_byte_is_a_diagnostic(tmp_path):
    spec = tmp_path / "nul.par"
    spec.write_text("tp 2\x00 x dp 4\n")
    result = run("check", str(spec))
    assert result.returncode == 1 and "E0002" in result.stderr


def test_ten_megabyte_spec_is_refused_quickly(tmp_path):
    big = tmp_path / "big.par"
    big.write_text(("# padding " * 100 + "\n") * 10_500)
    assert big.stat().st_size > 10_000_000
    result = run("check", str(big))
    assert result.returncode == 1 and "E0003" in result.stderr


def test_huge_numbers_are_diagnosed(tmp_path):
    spec = tmp_path / "huge.par"
    spec.write_text(open(GOOD).read().replace("tp 2 x pp 2 x dp 2", "tp 2 x pp 2 x dp 1e30"))
    result = run("check", str(spec))
    assert result.returncode == 1 and "E0207" in result.stderr


def test_empty_file(tmp_path):
    spec = tmp_path / "empty.par"
    spec.write_text("")
    result = run("check", str(spec))
    assert result.returncode == 1 and "the spec is empty" in result.stderr


def test_json_format(tmp_path):
    bad = tmp_path / "bad.par"
    bad.write_text("tp 2 x dp 4\nmodel llama3-450b\n")
    result = run_cli("check", str(bad), GOOD, "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    files = {f["file"]: f for f in data["files"]}
    assert files[GOOD]["ok"] is True
    codes = [d["code"] for d in files[str(bad)]["diagnostics"]]
    assert "E0202" in codes
    first = files[str(bad)]["diagnostics"][0]
    assert {"code", "severity", "message", "span", "help", "labels", "notes"} <= set(first)
    assert first["span"]["line"] >= 1


def test_holes_are_listed():
    result = run_cli("check", str(ROOT / "specs" / "llama3-70b-search.par"))
    assert result.exit_code == 0
    assert "holes open: tp, pp, dp, train.micro-batch, train.recompute, dp.sharding" in result.stdout


def test_compile_writes_plan_atomically(tmp_path):
    out = tmp_path / "job"
    result = run_cli("compile", GOOD, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["cluster"]["world_size"] == 8
    first = (out / "plan.json").read_bytes()
    assert run_cli("compile", GOOD, "-o", str(out)).exit_code == 0
    assert (out / "plan.json").read_bytes() == first


def test_compile_failure_leaves_output_untouched(tmp_path):
    out = tmp_path / "job"
    assert run_cli("compile", GOOD, "-o", str(out)).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = tmp_path / "bad.par"
    bad.write_text("tp 2 x dp 4\nmodel nope\n")
    assert run_cli("compile", str(bad), "-o", str(out)).exit_code == 1
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after


def test_compile_refuses_holes():
    result = run_cli("compile", str(ROOT / "specs" / "llama3-70b-search.par"), "-o", "/tmp/never")
    assert result.exit_code == 1 and "E0218" in result.stderr
    assert not os.path.exists("/tmp/never/plan.json")


def test_compile_refuses_to_replace_a_foreign_directory(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious")
    result = run("compile", GOOD, "-o", str(foreign))
    assert result.returncode == 2 and "refusing to replace" in result.stderr
    assert (foreign / "notes.txt").read_text() == "precious"


def test_schema_is_the_plan_json_schema():
    result = run_cli("schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "Plan"
    assert {"model", "cluster", "layout", "training"} <= set(schema["properties"])
    # every field documents itself
    model = schema["$defs"]["Model"]["properties"]
    assert model["hidden"]["description"].startswith("Model width")


def test_codes_list_and_explain():
    listing = run_cli("codes")
    assert "E0103" in listing.stdout
    one = run_cli("codes", "E0103")
    assert one.exit_code == 0 and "tp=8" in one.stdout
    unknown = run_cli("codes", "E9999")
    assert unknown.exit_code == 2


def test_version_and_module_entry_point():
    from parc import __version__

    assert run("--version").stdout.strip() == f"parc, version {__version__}"


@pytest.mark.parametrize("command", ["check", "compile", "fmt", "schema", "codes"])
def test_every_help_shows_an_example(command):
    result = run_cli(command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout


def test_usage_errors_exit_2():
    assert run_cli("check").exit_code == 2
    assert run("check", "--format", "yaml", GOOD).returncode == 2
    assert run("frobnicate").returncode == 2


def test_colour_only_on_a_terminal(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert Style.for_stream(Tty()).enabled
    assert not Style.for_stream(open(os.devnull, "w")).enabled
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Style.for_stream(Tty()).enabled


def test_piped_output_has_no_escape_codes(tmp_path):
    bad = tmp_path / "bad.par"
    bad.write_text("tp=8\n")
    result = run("check", str(bad), env={"NO_COLOR": ""})
    assert "\x1b[" not in result.stderr


def test_plan_json_has_no_machine_paths(tmp_path):
    out = tmp_path / "job"
    assert run_cli("compile", str((ROOT / "specs" / "tiny.par").resolve()), "-o", str(out)).exit_code == 0
    text = (out / "plan.json").read_text()
    assert str(ROOT) not in text and str(tmp_path) not in text
    assert json.loads(text)["source"] == "tiny.par"


def test_the_grammar_cache_is_written_reused_and_survives_damage(tmp_path):
    """A cold `parc check` loads Lark's analysed grammar from PARC_CACHE_DIR; a damaged cache file
    is rebuilt silently (Lark checks the grammar's SHA-256 stored in it), never a traceback."""
    env = {**os.environ, "PARC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "parc", "check", str(ROOT / "specs" / "tiny.par")]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    cached = list((tmp_path / "cache").glob("grammar-*.pickle"))
    assert first.returncode == 0 and len(cached) == 1, first.stderr
    cached[0].write_bytes(b"not a pickle\n" + b"\0" * 64)
    damaged = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert (damaged.returncode, damaged.stdout, damaged.stderr) == (0, first.stdout, first.stderr)
    assert cached[0].read_bytes().startswith(b"not a pickle") is False, "the damaged cache was not rewritten"
    off = subprocess.run(command, env={**env, "PARC_CACHE_DIR": ""}, capture_output=True, text=True, timeout=120)
    assert off.stdout == first.stdout
