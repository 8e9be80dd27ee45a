"""Injection (issue 8): no string from a spec can inject shell, YAML or Python into a job directory.

Strings reach generated files two ways. Names (job, image, partition, account, namespace, time
limit, environment variable names) must match resolve.py's documented SAFE_* patterns, or the
spec is refused with E0215 before anything is written. Environment *values* may be any text
without NUL, so every launcher quotes them. These tests go through the real `parc compile` with
specs full of hostile strings, written in the spec's own escapes, and judge every generated file
by its kind, from the outside:

- shell (`*.sh`, `*.sbatch`): shellcheck passes, and running the script against fake commands
  hands each value over byte for byte while no payload runs (a canary file stays absent);
- YAML: it parses with `yaml.safe_load`; the document has the same shape as the one built from
  harmless values (strings masked), and each value, after Kubernetes' own `$(VAR)` expansion,
  equals the original;
- Python: every file parses with `ast.parse` and has the same syntax tree as with harmless values
  once string constants are masked, so a value can only ever be a string literal;
- JSON: it parses and holds each value unchanged; Markdown: hostile values do not add lines or
  code fences.
The launcher tests (tests/test_launchers*.py) test quoting function by function; these tests
hold for any file a backend adds later, because they compare with a harmless twin.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from parc.atomic import OutputError, safe_relative, write_tree
from parc.resolve import SAFE_ENV_NAME, SAFE_IMAGE, SAFE_NAME, SAFE_TIME

from .conftest import ROOT, run_cli

TINY = (ROOT / "specs" / "tiny.par").read_text()
CANARY = "CANARY"
"""A payload that runs creates this file in the working directory of the script."""

HOSTILE = [
    f"$(touch {CANARY})", f"`touch {CANARY}`", f"${{IFS}}touch${{IFS}}{CANARY}", "$HOME ${PATH} $1 $@ $$ !!",
    f"'; touch {CANARY}; '", f'"; touch {CANARY}; "', f"a\ntouch {CANARY}\n", f"a\\\ntouch {CANARY}",
    "\\", "it's", '"', "'", "`", "$", "a\tb", "a\rb", "line\n", "\n", "",
    "  padded  ", "--rdzv-endpoint=evil:1", "-o", "; & | < > >> 2>&1 * ? [a-z] ~ {a,b}",
    # YAML
    "key: value # comment", "{}", "[a, b]", "{a: b}", "*alias", "&anchor x", "!!python/object/apply:os.system",
    f"!!python/object/apply:os.system ['touch {CANARY}']", "- item", "? complex", "|", ">", "%TAG ! x",
    "@at", "null", "~", "true", "yes", "no", "off", "0x1F", "1e3", "007", ".inf", "---", "...", "<<: *a",
    # Kubernetes expansion
    "$(MASTER_ADDR)", "$$(ESCAPED)", "$(", "$$$",
    # Python and templates
    f"__import__('os').system('touch {CANARY}')", '"""', "'''", "\\N{BULLET}", "{{ jinja }}", "{% raw %}",
    "%(name)s", "{name}", "\\x00", "\\u2028",
    # Unicode line breaks, controls, direction marks
    "a\u2028b", "a\u2029b", "a\u0085b", "\ufeffbom", "a\x1b[31mred", "a\x7fb", "a\x0bb\x0cc", "\u202eevil",
    "\u00a0nbsp", "ünïcödé ✓ 🚀", "x" * 4096,
]
"""Environment values: anything but NUL, up to 4,096 characters, is accepted and must be quoted."""

HOSTILE_NAMES = [
    f"$(touch {CANARY})", f"`touch {CANARY}`", "a b", "a;b", "a\nb", "tiny\n", "-rf", "../../etc", "/abs",
    "a/../b", "key: value", "{}", "*alias", "!!python/object", "a\u2028b", "a#b", "", " x", "x ", "a'b", 'a"b',
    "a$b", "ünï", "a" * 300, "a\\b",
]
"""Names: none of these matches its SAFE_* pattern, so each is refused with E0215."""

NAME_FIELDS = {
    "job": (SAFE_NAME, lambda v: TINY.replace("job tiny", f"job {par_string(v)}")),
    "image": (SAFE_IMAGE, lambda v: _launch(f"image {par_string(v)}")),
    "partition": (SAFE_NAME, lambda v: _launch(f"partition {par_string(v)}")),
    "account": (SAFE_NAME, lambda v: _launch(f"account {par_string(v)}")),
    "namespace": (SAFE_NAME, lambda v: _launch(f"namespace {par_string(v)}")),
    "time-limit": (SAFE_TIME, lambda v: _launch(f"time-limit {par_string(v)}")),
}


def par_string(value: str) -> str:
    """A Python string as a .par string literal, in the spec's own escapes (\\\\, \\", \\n, \\t)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _launch(*lines: str) -> str:
    assert "  steps 4\n" in TINY
    return TINY.replace("  steps 4\n", "  steps 4\n" + "".join(f"  {line}\n" for line in lines))


def env_spec(values: list[str]) -> str:
    return _launch(*(f"env V{i} {par_string(v)}" for i, v in enumerate(values)))


def harmless(values: list[str]) -> list[str]:
    return [f"harmless{i}" for i in range(len(values))]


def compile_spec(tmp_path: Path, name: str, text: str) -> tuple[int, Path, str]:
    spec = tmp_path / f"{name}.par"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / f"{name}-job"
    result = run_cli("compile", str(spec), "-o", str(out))
    return result.exit_code, out, result.stderr


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The tiny spec compiled twice: with every hostile value, and with harmless ones."""
    tmp = tmp_path_factory.mktemp("injection")
    status, hostile, stderr = compile_spec(tmp, "hostile", env_spec(HOSTILE))
    assert status == 0, stderr
    status, twin, stderr = compile_spec(tmp, "harmless", env_spec(harmless(HOSTILE)))
    assert status == 0, stderr
    return hostile, twin


def files_of(job: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in job.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def test_the_job_directory_has_the_same_files_either_way(jobs):
    hostile, twin = jobs
    assert [p.relative_to(hostile) for p in files_of(hostile, "")] == [p.relative_to(twin) for p in files_of(twin, "")]
    assert files_of(hostile, ".sh", ".sbatch") and files_of(hostile, ".yaml")


# ---------------------------------------------------------------------------------------------
# shell


def is_shell(path: Path) -> bool:
    return path.suffix in (".sh", ".sbatch") or path.read_bytes()[:20].startswith((b"#!/bin/bash", b"#!/usr/bin/env bash",
                                                                                     b"#!/bin/sh"))


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed (apt-get install shellcheck)")
def test_shellcheck_passes_on_every_script(jobs):
    hostile, _ = jobs
    scripts = [str(p) for p in files_of(hostile, "") if is_shell(p)]
    assert scripts
    result = subprocess.run(["shellcheck", "--severity=style", *scripts], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _fake(bin_dir: Path, name: str, record: Path) -> None:
    """A command that records its arguments and the spec's environment variables as JSON."""
    script = bin_dir / name
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"with open({str(record)!r}, 'a', encoding='utf-8') as out:\n"
        "    env = {k: v for k, v in os.environ.items() if k.startswith('V') and k[1:].isdigit()}\n"
        "    out.write(json.dumps({'cmd': os.path.basename(sys.argv[0]), 'argv': sys.argv[1:], 'env': env}) + '\\n')\n"
        "if os.path.basename(sys.argv[0]) == 'scontrol':\n    print('node-1')\n",
        encoding="utf-8")
    script.chmod(0o755)


@pytest.mark.parametrize("script", ["launch/torchrun.sh", "launch/slurm.sbatch"])
def test_running_a_script_passes_every_value_through_and_runs_no_payload(jobs, tmp_path, script):
    hostile, _ = jobs
    job = tmp_path / "job"
    shutil.copytree(hostile, job)
    (job / "train.py").touch(exist_ok=True)  # the Slurm script checks it is in a job directory
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls.jsonl"
    for command in ("python3", "srun", "scontrol"):  # the scripts run torchrun as python3 -m
        _fake(bin_dir, command, record)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_", "V"))}
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", SLURM_JOB_NODELIST="node-1", SLURM_JOB_NUM_NODES="2",
               SLURM_GPUS_ON_NODE="4", SLURM_JOB_ID="7", SLURM_CPUS_ON_NODE="8")
    result = subprocess.run(["bash", str(job / script)], cwd=job, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    calls = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    launched = [c for c in calls if c["cmd"] in ("python3", "srun")]
    assert launched, calls
    assert launched[0]["env"] == {f"V{i}": v for i, v in enumerate(HOSTILE)}
    assert not list(job.rglob(CANARY)) and not list(tmp_path.glob(CANARY)), "a payload ran"
    for value in HOSTILE:
        if value.strip() and value not in ("-o", "$", "|", ">", "~", "~"):
            assert value not in launched[0]["argv"], f"a value became an argument: {value!r}"


# ---------------------------------------------------------------------------------------------
# YAML


def mask(data):
    """The shape of parsed data: every string replaced, lists and keys kept."""
    if isinstance(data, dict):
        return {k: mask(v) for k, v in data.items()}
    if isinstance(data, list):
        return [mask(v) for v in data]
    return "<str>" if isinstance(data, str) else data


def k8s_expand(value: str) -> tuple[str, list[str]]:
    """Kubernetes' expansion of an env value (k8s.io/kubernetes third_party/forked/golang/expansion):
    `$$` is a literal `$`, `$(NAME)` a reference. Returns the result and the names referenced."""
    out, refs, i = [], [], 0
    while i < len(value):
        if value[i] == "$" and i + 1 < len(value):
            if value[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            if value[i + 1] == "(":
                close = value.find(")", i + 2)
                if close != -1:
                    refs.append(value[i + 2 : close])
                    out.append(value[i : close + 1])
                    i = close + 1
                    continue
        out.append(value[i])
        i += 1
    return "".join(out), refs


def test_k8s_expand_reads_references_like_kubernetes():
    assert k8s_expand("$(A) $$(B) $$ $") == ("$(A) $(B) $ $", ["A"])


def test_every_yaml_file_keeps_its_shape_and_every_value(jobs):
    hostile, twin = jobs
    for path in files_of(hostile, ".yaml", ".yml"):
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        harmless_documents = list(yaml.safe_load_all((twin / path.relative_to(hostile)).read_text(encoding="utf-8")))
        assert mask(documents) == mask(harmless_documents), f"{path.name}: a value changed the document's structure"
        containers = [c for d in documents for c in _containers(d)]
        assert containers
        for container in containers:
            env = {e["name"]: e["value"] for e in container["env"]}
            for i, original in enumerate(HOSTILE):
                value, refs = k8s_expand(env[f"V{i}"])
                assert refs == [] and value == original, (original, env[f"V{i}"])


def _containers(data):
    if isinstance(data, dict):
        if "containers" in data:
            yield from data["containers"]
        for value in data.values():
            yield from _containers(value)
    elif isinstance(data, list):
        for value in data:
            yield from _containers(value)


# ---------------------------------------------------------------------------------------------
# Python, JSON, Markdown


class _MaskStrings(ast.NodeTransformer):
    def visit_Constant(self, node):
        return ast.Constant("<str>") if isinstance(node.value, str) else node


def python_shape(text: str) -> str:
    return ast.dump(_MaskStrings().visit(ast.parse(text)))


def test_every_python_file_parses_and_values_are_only_string_literals(jobs):
    hostile, twin = jobs
    sources = files_of(hostile, ".py")
    if not sources:
        pytest.skip("the backend writes no Python file yet (the torch runtime, train.py, has not landed)")
    for path in sources:
        text = path.read_text(encoding="utf-8")
        ast.parse(text, filename=str(path))
        assert python_shape(text) == python_shape((twin / path.relative_to(hostile)).read_text(encoding="utf-8")), \
            f"{path.name}: a spec string changed the program"


ACCEPTED_TRICKY_NAMES = ["os.system", "import", "null", "1e3", "0x1F", "007", "a.b-c_d", "True", "None",
                         "x" * 63, "exec"]
"""Job names SAFE_NAME accepts that are code, numbers or keywords if pasted into Python or YAML."""


@pytest.mark.parametrize("job", ACCEPTED_TRICKY_NAMES)
def test_an_accepted_job_name_is_only_ever_a_string(tmp_path, job):
    status, out, stderr = compile_spec(tmp_path, "tricky", TINY.replace("job tiny", f"job {par_string(job)}"))
    assert status == 0, stderr
    status, twin, stderr = compile_spec(tmp_path, "plain", TINY.replace("job tiny", "job plain-name"))
    assert status == 0, stderr
    sources = files_of(out, ".py")
    assert sources, "the runtime writes Python files"
    for path in sources:
        assert python_shape(path.read_text()) == python_shape((twin / path.relative_to(out)).read_text()), path.name
    for path in files_of(out, ".yaml"):
        assert mask(yaml.safe_load(path.read_text())) == mask(yaml.safe_load((twin / path.relative_to(out)).read_text()))


def test_python_shape_catches_an_injected_statement():
    """The comparison can fail: a value pasted into code changes the tree, a quoted one does not."""
    payload = "x'; import os; os.system('id'); '"
    assert python_shape(f"name = {payload!r}\n") == python_shape("name = 'harmless'\n")
    assert python_shape(f"name = '{payload}'\n") != python_shape("name = 'harmless'\n")


def test_plan_json_holds_each_value_unchanged(jobs):
    hostile, _ = jobs
    plan = json.loads((hostile / "plan.json").read_text(encoding="utf-8"))
    assert [e["value"] for e in plan["launch"]["env"]] == HOSTILE


def test_markdown_gains_no_lines_or_fences(jobs):
    hostile, twin = jobs
    for path in files_of(hostile, ".md"):
        text = path.read_text(encoding="utf-8")
        other = (twin / path.relative_to(hostile)).read_text(encoding="utf-8")
        assert len(text.splitlines()) == len(other.splitlines())
        assert text.count("```") == other.count("```")


# ---------------------------------------------------------------------------------------------
# Names: refused by a documented pattern, nothing written


@pytest.mark.parametrize("field", sorted(NAME_FIELDS))
def test_hostile_names_are_refused_with_the_pattern(tmp_path, field):
    pattern, make = NAME_FIELDS[field]
    refused = [v for v in HOSTILE_NAMES if not pattern.fullmatch(v)]  # `a/../b` is a fine image name
    assert len(refused) >= len(HOSTILE_NAMES) - 2
    for index, value in enumerate(refused):
        status, out, stderr = compile_spec(tmp_path, f"{field}-{index}", make(value))
        assert status == 1, (field, value, stderr)
        assert "error[E0215]" in stderr or "error[E0203]" in stderr, (field, value, stderr)
        if "E0215" in stderr:
            assert f"allowed: {pattern.pattern}" in stderr
        assert not out.exists(), f"{field} {value!r}: a job directory was written"


def test_hostile_environment_names_are_refused(tmp_path):
    for index, name in enumerate(["A-B", "1A", "A.B", "A/B", "LD_PRELOAD/../x", "a" * 200]):
        assert not SAFE_ENV_NAME.fullmatch(name)
        status, out, stderr = compile_spec(tmp_path, f"env-{index}", _launch(f'env {name} "x"'))
        assert status == 1 and "E0215" in stderr, (name, stderr)
        assert not out.exists()


@pytest.mark.parametrize("name", ["null", "yes", "no", "on", "true", "1e3", "0x1F", "007", "1_000", "Inf", "nan"])
def test_names_yaml_would_reinterpret_stay_strings(tmp_path, name):
    """Accepted by SAFE_NAME, yet a number, a boolean or null to a careless YAML writer."""
    text = _launch(f"namespace {par_string(name)}").replace("job tiny", f"job {par_string(name)}")
    status, out, stderr = compile_spec(tmp_path, "yamlish", text)
    assert status == 0, stderr
    manifest = yaml.safe_load((out / "launch" / "k8s.yaml").read_text(encoding="utf-8"))
    assert manifest["metadata"]["namespace"] == name
    assert all(isinstance(v, str) for v in _strings_at(manifest, "workingDir"))
    assert json.loads((out / "plan.json").read_text())["launch"]["job"] == name


def _strings_at(data, key):
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key:
                yield v
            yield from _strings_at(v, key)
    elif isinstance(data, list):
        for v in data:
            yield from _strings_at(v, key)


def test_a_hostile_spec_file_name_stays_data(tmp_path):
    """The spec's own file name reaches comments and plan.json: a shell payload in it runs nowhere."""
    name = f"a $(touch {CANARY}) `id` ; b"
    spec = tmp_path / f"{name}.par"
    spec.write_text(TINY.replace("job tiny\n", ""), encoding="utf-8")
    out = tmp_path / "job"
    result = run_cli("compile", str(spec), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    for path in files_of(out, ".sh", ".sbatch"):
        assert "$(touch" not in path.read_text(encoding="utf-8")
    plan = json.loads((out / "plan.json").read_text())
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", plan["launch"]["job"])


# ---------------------------------------------------------------------------------------------
# Output paths stay inside the output directory


ESCAPING = ["../x", "a/../../x", "/etc/x", "/", "..", "a/..", "./../x", " x", "x ", "", "a/../../../tmp/x"]


@pytest.mark.parametrize("name", ESCAPING)
def test_a_generated_path_cannot_leave_the_output_directory(tmp_path, name):
    assert not safe_relative(name) or not (tmp_path / "out" / name).resolve().is_relative_to(tmp_path.parent)
    outside = sorted(p for p in tmp_path.parent.rglob("*"))
    with pytest.raises(OutputError):
        write_tree(tmp_path / "out", {"plan.json": "{}", name: "payload"})
    assert not (tmp_path / "out").exists()
    assert sorted(p for p in tmp_path.parent.rglob("*")) == outside, "something was written"


@pytest.mark.parametrize("name", ["a..b", "..a", "a/b/c.txt", "launch/x.sh", ".hidden"])
def test_ordinary_names_with_dots_are_still_written(tmp_path, name):
    write_tree(tmp_path / "out", {"plan.json": "{}", name: "ok"})
    assert (tmp_path / "out" / name).read_text() == "ok"


def test_compile_refuses_to_replace_a_directory_parc_did_not_write(tmp_path):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    spec = tmp_path / "tiny.par"
    spec.write_text(TINY)
    result = run_cli("compile", str(spec), "-o", str(precious))
    assert result.exit_code == 2 and "did not write it" in result.stderr
    assert sorted(p.name for p in precious.iterdir()) == ["notes.txt"]
    assert (precious / "notes.txt").read_text() == "keep me"


def test_output_through_a_symlink_replaces_the_link_not_its_target(tmp_path):
    spec = tmp_path / "tiny.par"
    spec.write_text(TINY)
    target = tmp_path / "target"
    assert run_cli("compile", str(spec), "-o", str(target)).exit_code == 0
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    link = tmp_path / "link"
    link.symlink_to(target)
    assert run_cli("compile", str(spec), "-o", str(link)).exit_code == 0
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert not link.is_symlink() and (link / "plan.json").is_file()
