"""The launchers as text: numbers from the plan, quoting, determinism, shellcheck, the README.

The generated shell is also run here, against fake `torchrun`, `srun` and `scontrol` commands
that record their arguments: that proves what reaches torchrun, word by word, including
environment values written to break naive quoting. Running the real job through these
launchers is in test_launchers_e2e.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from parc.backends.torch import launchers
from parc.backends.torch.launchers import LauncherError, job_shape, k8s_name
from parc.pipeline import compile_text

from .conftest import ROOT, SPECS
from .launcher_helpers import (
    HOSTILE_VALUES,
    LAUNCH_OPTIONS,
    clean_env,
    fake_command,
    hostile_launch_block,
    plan_of,
    plan_of_file,
    records,
    spec_text,
    write_job,
)

LAUNCHER_FILES = {"launch/torchrun.sh", "launch/slurm.sbatch", "launch/k8s.yaml", "README.md"}
COMPILABLE = [p for p in SPECS if not plan_of_file(p).holes] + [LAUNCH_OPTIONS]
TEMPLATES = ROOT / "backends" / "torch" / "templates"
MY_TEMPLATES = sorted((TEMPLATES / "launch").glob("*.jinja")) + [TEMPLATES / "README.md.jinja"]


@pytest.fixture(scope="module")
def hostile_plan():
    return plan_of(spec_text(launch=hostile_launch_block()))


# ---------------------------------------------------------------------------------------------
# the files and their numbers


@pytest.mark.parametrize("path", COMPILABLE, ids=lambda p: p.stem)
def test_files_are_the_four_launchers(path):
    assert set(launchers.files(plan_of_file(path))) == LAUNCHER_FILES


SHAPES = [  # layout line, global batch -> (nodes, GPUs per node)
    ("tp 2 x dp 4 on nodes(8 gpus, nvlink)", 16, 1, 8),
    ("tp 2 x dp 6 on nodes(4 gpus, nvlink)", 48, 3, 4),
    ("dp 6 on nodes(2 gpus, nvlink)", 48, 3, 2),
    ("tp 2 x pp 2 x dp 4 on nodes(4 gpus, nvlink)", 16, 4, 4),
    ("tp 2 x pp 4 x dp 16 on nodes(8 gpus, nvlink)", 128, 16, 8),
]


@pytest.mark.parametrize(("layout", "batch", "nodes", "gpus"), SHAPES)
def test_every_launcher_number_is_the_plans(layout, batch, nodes, gpus):
    plan = plan_of(spec_text(layout=layout, launch="  port 29611", global_batch=batch))
    assert (plan.cluster.nodes, plan.cluster.gpus_per_node) == (nodes, gpus)
    files = launchers.files(plan)

    torchrun = files["launch/torchrun.sh"]
    assert re.findall(r"--nnodes (\S+)", torchrun) == [str(nodes)]
    assert re.findall(r"--nproc-per-node (\S+)", torchrun) == [str(gpus)]
    assert re.findall(r"^port=(\d+)$", torchrun, re.M) == ["29611"]

    sbatch = files["launch/slurm.sbatch"]
    directives = dict(re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", sbatch, re.M))
    assert directives["nodes"] == str(nodes) and directives["gpus-per-node"] == str(gpus)
    assert directives["ntasks-per-node"] == "1"
    # torchrun reads the counts from Slurm, so the script states each number once
    assert '--nnodes "${SLURM_JOB_NUM_NODES}"' in sbatch
    assert '--nproc-per-node "${SLURM_GPUS_ON_NODE}"' in sbatch
    assert numbers_in_commands(sbatch) == ["29611"], "a number typed outside the #SBATCH lines"
    assert numbers_in_commands(torchrun) == ["29611", str(nodes), str(gpus)], "a number stated twice"

    job = launchers.pytorchjob(job_shape(plan))
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert sum(r["replicas"] for r in replicas.values()) == nodes
    assert replicas["Master"]["replicas"] == 1
    assert ("Worker" in replicas) == (nodes > 1)
    assert job["spec"]["nprocPerNode"] == str(gpus)
    for replica in replicas.values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == gpus
        command = container["command"]
        assert command[command.index("--nnodes") + 1] == str(nodes)
        assert command[command.index("--nproc-per-node") + 1] == str(gpus)
        assert container["ports"][0]["containerPort"] == 29611

    readme = files["README.md"]
    assert f"= {nodes * gpus} ranks" in readme


FIXED_TEXT = re.compile(r"NCCL_(?:NVLS|COLLNET)_ENABLE=[01]|python3|>&2|exit 2|shift 2|head -n 1|--kill-on-bad-exit=1|c10d|127\.0\.0\.1|\[0\]|-gt 0|\$\{1#|\$[12]\b|\$\{?[12]:|: 1\)\)")
"""Numbers that are part of the scripts' fixed text, not facts about the job (NCCL's in-network
switches are the hardware block's, checked in tests/test_in_network.py; `: 1))` is the floor of
one CPU thread per rank)."""


def numbers_in_commands(script: str) -> list[str]:
    """The numbers in a script's commands (comments and #SBATCH lines left out)."""
    body = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    return re.findall(r"\d+", FIXED_TEXT.sub("", body))


def test_a_plan_with_holes_has_no_launchers():
    plan = plan_of_file(ROOT / "specs" / "llama3-70b-search.par")
    assert plan.holes
    with pytest.raises(LauncherError, match="holes"):
        launchers.files(plan)


def test_output_is_deterministic_and_free_of_machine_paths(tmp_path, monkeypatch):
    relative = launchers.files(plan_of_file(LAUNCH_OPTIONS.relative_to(ROOT)))
    absolute = launchers.files(plan_of_file(LAUNCH_OPTIONS))
    monkeypatch.chdir(tmp_path)
    elsewhere = launchers.files(plan_of_file(LAUNCH_OPTIONS))
    assert relative == absolute == elsewhere
    for name, text in relative.items():
        assert str(ROOT) not in text and str(tmp_path) not in text, name
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), f"{name} carries a date"


def test_the_same_env_name_twice_keeps_the_last_value_everywhere():
    plan = plan_of(spec_text(launch='  env A "1"\n  env B "2"\n  env A "3"'))
    assert job_shape(plan).env == (("A", "3"), ("B", "2"))
    files = launchers.files(plan)
    assert "export A=1" not in files["launch/torchrun.sh"]
    assert files["launch/torchrun.sh"].count("export A=3") == 1


@pytest.mark.parametrize(("job", "nodes", "expected"), [
    ("tiny", 2, "tiny"),
    ("Launch_Options.v2", 2, "launch-options-v2"),
    ("3d-layout", 1, "job-3d-layout"),
    ("a" * 63, 1024, "a" * (63 - len("-worker-1022"))),
    ("x-" + "b" * 60, 1, "x-" + "b" * (63 - len("-master-0") - 2)),
])
def test_kubernetes_names_are_dns_labels_with_room_for_pod_suffixes(job, nodes, expected):
    name = k8s_name(job, nodes)
    assert name == expected
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name)
    assert len(f"{name}-worker-{max(nodes - 2, 0)}") <= 63 and len(f"{name}-master-0") <= 63


def test_sbatch_lines_refuse_values_that_would_need_quoting():
    with pytest.raises(LauncherError):
        launchers.sbatch_value("batch queue")
    assert launchers.sbatch_value("04:00:00") == "04:00:00"


# ---------------------------------------------------------------------------------------------
# templates compute nothing

EXPRESSION = re.compile(r"{{\s*(.*?)\s*}}")
STATEMENT = re.compile(r"{%-?\s*(.*?)\s*-?%}")
PLAIN_VALUE = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")
PLAIN_STATEMENT = re.compile(
    r"^(for [a-z_, ]+ in [a-z_.]+|if (not )?[a-z_][a-z0-9_.]*|else|endif|endfor)$")


@pytest.mark.parametrize("template", MY_TEMPLATES, ids=lambda p: p.name)
def test_templates_only_place_values(template):
    text = template.read_text(encoding="utf-8")
    for expression in EXPRESSION.findall(text):
        assert PLAIN_VALUE.match(expression), f"{template.name}: `{{{{ {expression} }}}}` computes"
    for statement in STATEMENT.findall(text):
        assert PLAIN_STATEMENT.match(statement), f"{template.name}: `{{% {statement} %}}` computes"
    if template.name != "README.md.jinja":
        assert numbers_in_commands(text) == [], f"{template.name}: a number typed in the template"


# ---------------------------------------------------------------------------------------------
# shellcheck

needs_shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None,
                                      reason="shellcheck is not installed (apt-get install shellcheck)")


@needs_shellcheck
@pytest.mark.parametrize("path", COMPILABLE, ids=lambda p: p.stem)
def test_generated_shell_passes_shellcheck(path, tmp_path):
    job = write_job(tmp_path, launchers.files(plan_of_file(path)))
    scripts = [str(job / "launch" / "torchrun.sh"), str(job / "launch" / "slurm.sbatch")]
    result = subprocess.run(["shellcheck", "--severity=style", *scripts], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_shellcheck
def test_shellcheck_passes_with_hostile_environment_values(hostile_plan, tmp_path):
    job = write_job(tmp_path, launchers.files(hostile_plan))
    result = subprocess.run(["shellcheck", "--severity=style", str(job / "launch" / "torchrun.sh"),
                             str(job / "launch" / "slurm.sbatch")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


# ---------------------------------------------------------------------------------------------
# running the scripts against fake commands

ENV_NAMES = [*HOSTILE_VALUES, "MASTER_ADDR"]


def run_torchrun_sh(plan, tmp_path, *args, **env):
    job = write_job(tmp_path / "job", launchers.files(plan))
    record = tmp_path / "torchrun.jsonl"
    bin_dir = tmp_path / "bin"
    fake_command(bin_dir, "python3", record, ENV_NAMES)
    result = subprocess.run(["bash", str(job / "launch" / "torchrun.sh"), *args], cwd=tmp_path,
                            env=clean_env(PATH=f"{bin_dir}:/usr/bin:/bin", **env),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    (call,) = records(record)
    assert call["argv"][:2] == ["-m", "torch.distributed.run"], "torchrun is the interpreter's module"
    call["argv"] = call["argv"][2:]
    return job, call, result.stderr


def test_torchrun_sh_needs_no_torchrun_on_path_and_honours_python(tmp_path):
    """Issue 17: the script runs `$PYTHON -m torch.distributed.run`; PATH has no torchrun here."""
    plan = plan_of(spec_text(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)"))
    job = write_job(tmp_path / "job", launchers.files(plan))
    record = tmp_path / "calls.jsonl"
    interpreter = fake_command(tmp_path / "elsewhere", "my-python", record)
    result = subprocess.run(["bash", str(job / "launch" / "torchrun.sh"), "--device", "cpu"], cwd=tmp_path,
                            env=clean_env(PATH="/usr/bin:/bin", PYTHON=str(interpreter)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    (call,) = records(record)
    assert call["argv"][:4] == ["-m", "torch.distributed.run", "--nnodes", "1"]
    assert call["argv"][-2:] == ["--device", "cpu"]


def option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_torchrun_sh_passes_values_and_arguments_through_exactly(hostile_plan, tmp_path):
    tricky_args = ["--device", "cpu", "two words", "$HOME", "--steps=2", ""]
    job, call, _ = run_torchrun_sh(hostile_plan, tmp_path, "--rdzv-endpoint", "10.0.0.7:4242", *tricky_args)
    argv = call["argv"]
    assert option(argv, "--nnodes") == "2" and option(argv, "--nproc-per-node") == "4"
    assert option(argv, "--rdzv-backend") == "c10d"
    assert option(argv, "--rdzv-endpoint") == "10.0.0.7:4242"
    assert option(argv, "--rdzv-id") == "t"
    train = argv.index(str(job / "train.py"))
    assert argv[train + 1:] == tricky_args
    assert {k: call["env"][k] for k in HOSTILE_VALUES} == HOSTILE_VALUES


@pytest.mark.parametrize(("args", "env", "endpoint", "rdzv_id", "rest", "noted"), [
    ([], {}, "127.0.0.1:29500", "t", [], True),
    (["--device", "cpu"], {"MASTER_ADDR": "head", "MASTER_PORT": "1234"}, "head:1234", "t", ["--device", "cpu"], False),
    (["--rdzv-endpoint", "node0"], {}, "node0:29500", "t", [], False),
    (["--rdzv-endpoint=node0:7", "--rdzv-id=run-2", "--", "--rdzv-id", "x"], {}, "node0:7", "run-2",
     ["--rdzv-id", "x"], False),
    (["--rdzv-id", "r", "--dry-run"], {"MASTER_ADDR": "m"}, "m:29500", "r", ["--dry-run"], False),
])
def test_torchrun_sh_rendezvous_options(tmp_path, args, env, endpoint, rdzv_id, rest, noted):
    plan = plan_of(spec_text(layout="tp 2 x dp 4 on nodes(4 gpus, nvlink)"))
    job, call, stderr = run_torchrun_sh(plan, tmp_path, *args, **env)
    argv = call["argv"]
    assert option(argv, "--rdzv-endpoint") == endpoint
    assert option(argv, "--rdzv-id") == rdzv_id
    assert argv[argv.index(str(job / "train.py")) + 1:] == rest
    assert ("every node must run on this machine" in stderr) == noted


def test_torchrun_sh_on_one_node_says_nothing_about_the_default(tmp_path):
    plan = plan_of(spec_text(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)"))
    _, call, stderr = run_torchrun_sh(plan, tmp_path)
    assert option(call["argv"], "--nnodes") == "1" and stderr == ""
    assert "endpoint_given" not in launchers.files(plan)["launch/torchrun.sh"]  # no unused variable


def run_sbatch_script(plan, tmp_path, *args, cwd=None, cpus_on_node="96"):
    job = write_job(tmp_path / "job", launchers.files(plan))
    (job / "train.py").touch()  # the script only checks that it is submitted from the job directory
    record = tmp_path / "calls.jsonl"
    bin_dir = tmp_path / "bin"
    fake_command(bin_dir, "srun", record, [*ENV_NAMES, "OMP_NUM_THREADS"])
    fake_command(bin_dir, "scontrol", record, stdout="gpu-node-17\ngpu-node-18\n")
    env = clean_env(PATH=f"{bin_dir}:/usr/bin:/bin", SLURM_JOB_NODELIST="gpu-node-[17-18]",
                    SLURM_JOB_NUM_NODES="2", SLURM_GPUS_ON_NODE="4", SLURM_JOB_ID="4711",
                    SLURM_CPUS_ON_NODE=cpus_on_node)
    result = subprocess.run(["bash", str(job / "launch" / "slurm.sbatch"), *args], cwd=cwd or job, env=env,
                            capture_output=True, text=True, timeout=60)
    return result, records(record)


def test_slurm_script_runs_one_torchrun_per_node_with_the_first_host(hostile_plan, tmp_path):
    result, calls = run_sbatch_script(hostile_plan, tmp_path, "--device", "cpu", "a b")
    assert result.returncode == 0, result.stderr
    scontrol, srun = calls
    assert scontrol["argv"] == ["show", "hostnames", "gpu-node-[17-18]"]
    assert srun["argv"] == ["--kill-on-bad-exit=1", "--cpus-per-task=96", "--gpu-bind=none",
                            "python3", "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "4",
                            "--rdzv-backend", "c10d", "--rdzv-endpoint", "gpu-node-17:29500",
                            "--rdzv-id", "4711", "train.py", "--device", "cpu", "a b"]
    assert {k: srun["env"][k] for k in HOSTILE_VALUES} == HOSTILE_VALUES
    assert srun["env"]["OMP_NUM_THREADS"] == "24", "96 CPUs shared by 4 ranks"


def test_slurm_script_gives_each_rank_a_thread_when_the_node_has_fewer_cpus_than_gpus(tmp_path):
    """2 CPUs for 4 ranks: integer division gives 0, which libgomp rejects and replaces with every
    core of the node for every rank (the Slurm test cluster's 8 ranks on 2 cores ran each step in
    about 20 s so)."""
    plan = plan_of(spec_text())
    result, calls = run_sbatch_script(plan, tmp_path, cpus_on_node="2")
    assert result.returncode == 0, result.stderr
    assert calls[-1]["env"]["OMP_NUM_THREADS"] == "1"


def test_slurm_script_keeps_a_given_omp_num_threads(tmp_path):
    plan = plan_of(spec_text(launch='  env OMP_NUM_THREADS "7"'))
    result, calls = run_sbatch_script(plan, tmp_path)
    assert result.returncode == 0, result.stderr
    assert calls[-1]["env"]["OMP_NUM_THREADS"] == "7"


def test_slurm_script_with_an_image_runs_torchrun_in_the_container(tmp_path):
    result, calls = run_sbatch_script(plan_of_file(LAUNCH_OPTIONS), tmp_path)
    assert result.returncode == 0, result.stderr
    srun = calls[-1]["argv"]
    job = str(tmp_path / "job")
    assert srun[:9] == ["--kill-on-bad-exit=1", "--cpus-per-task=96", "--gpu-bind=none",
                         "--container-image=nvcr.io/nvidia/pytorch:24.07-py3",
                         f"--container-mounts={job}:{job}", f"--container-workdir={job}", "python3", "-m",
                         "torch.distributed.run"]
    assert option(srun, "--rdzv-endpoint") == "gpu-node-17:29510"
    assert option(srun, "--max-restarts") == "2"  # `launch { restarts 2 }`
    # torchrun's own parser reads the options as written (torch.distributed.run)
    from torch.distributed.run import get_args_parser
    start = srun.index("torch.distributed.run") + 1
    parsed = get_args_parser().parse_args(srun[start:])
    assert (parsed.max_restarts, parsed.rdzv_endpoint, parsed.training_script) == (2, "gpu-node-17:29510", "train.py")


def test_slurm_script_outside_the_job_directory_stops_with_a_message(hostile_plan, tmp_path):
    result, calls = run_sbatch_script(hostile_plan, tmp_path, cwd=tmp_path)
    assert result.returncode == 2
    assert "submit from the job directory" in result.stderr
    assert calls == []


def test_sbatch_directives_carry_the_spec_settings():
    sbatch = launchers.files(plan_of_file(LAUNCH_OPTIONS))["launch/slurm.sbatch"]
    head = [line for line in sbatch.splitlines() if line.startswith("#SBATCH")]
    assert head == ["#SBATCH --job-name=Launch_Options.v2", "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1",
                    "#SBATCH --gpus-per-node=4", "#SBATCH --exclusive", "#SBATCH --output=%x-%j.out",
                    "#SBATCH --partition=batch", "#SBATCH --account=my-team", "#SBATCH --time=04:00:00"]
    assert sbatch.splitlines()[1:len(head) + 1] == head, "#SBATCH lines must come before any command"


# ---------------------------------------------------------------------------------------------
# the job's README


def test_readme_tells_how_to_launch_each_way_and_the_layout():
    plan = plan_of_file(ROOT / "specs" / "tiny.par")
    readme = launchers.files(plan)["README.md"]
    for needle in ("launch/torchrun.sh --rdzv-endpoint FIRST_NODE:29500", "sbatch launch/slurm.sbatch",
                   "kubectl apply -f launch/k8s.yaml", "tp 2 x pp 2 x dp 2 = 8 ranks",
                   "rank = tp + 2 * pp + 4 * dp", "schedule 1f1b", "`WORLD_SIZE` = 8", "`LOCAL_WORLD_SIZE` = 4",
                   "--device cpu", "| 1 | 1 | layers 4-7, final norm and output |"):
        assert needle in readme, needle
    assert "context parallel" not in readme and "expert parallel" not in readme  # absent axes stay silent


def test_readme_lists_environment_names_not_values(hostile_plan):
    readme = launchers.files(hostile_plan)["README.md"]
    for name in HOSTILE_VALUES:
        assert f"`{name}`" in readme
    assert "$(touch pwned)" not in readme


@pytest.mark.parametrize(("job", "launch"), [('"t\\n"', ""), ("t", '  partition "batch\\n"'),
                                            ("t", '  time-limit "04:00:00\\n"'), ("t", '  image "img\\n"')])
def test_a_string_resolution_should_refuse_never_reaches_a_launcher(job, launch):
    result = compile_text(spec_text(job=job, launch=launch))
    if result.ok:  # resolve.py's `^...$` patterns let a final newline through: the backend refuses it
        with pytest.raises(LauncherError, match="not safe"):
            launchers.files(result.plan)
    else:
        assert [d.code for d in result.diagnostics if d.is_error] == ["E0215"]


@needs_shellcheck
def test_shellcheck_passes_for_a_one_node_job(tmp_path):
    plan = plan_of(spec_text(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)"))
    job = write_job(tmp_path, launchers.files(plan))
    result = subprocess.run(["shellcheck", "--severity=style", str(job / "launch" / "torchrun.sh"),
                             str(job / "launch" / "slurm.sbatch")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(("layout", "numpy"), [("tp 2 x dp 4 on nodes(8 gpus, nvlink)", False),
                                               ("tp 2 x pp 2 x dp 2 on nodes(8 gpus, nvlink)", True)])
def test_readme_names_every_python_dependency_of_the_job(layout, numpy):
    """numpy exactly when the job pipelines (torch.distributed.pipelining's object p2p needs it)."""
    readme = launchers.files(plan_of(spec_text(layout=layout)))["README.md"]
    section = readme[readme.index("- Python packages"):readme.index("- `launch/torchrun.sh`")]
    named = re.findall(r"^  - `([a-z]+)`", section, re.M)
    assert named == (["torch", "numpy"] if numpy else ["torch"])
