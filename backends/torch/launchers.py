"""Launcher files of the generated job: torchrun, Slurm, Kubernetes, and the job's README.

    launch/torchrun.sh    one torchrun per node; multi-node through a c10d rendezvous
    launch/slurm.sbatch   sbatch: one srun task per node, each a torchrun
    launch/k8s.yaml       a Kubeflow PyTorchJob (kubeflow.org/v1): one Master and nodes - 1 Workers
    README.md             how to launch it each way, the layout, what the runtime expects

Every number a launcher prints comes from one `JobShape`, read from the plan once: the node
count, GPUs per node (torchrun's processes per node) and their product, the world size. The
templates only place values; this module computes them. Shell words are quoted here with
`shlex.quote` (or are fixed variable expansions), the Kubernetes manifest is built as data and
serialised by `yaml_text`, and no file carries a timestamp, an absolute path or a version.

Strings from the spec (job name, image, environment, Slurm partition, account and time limit,
namespace) were already checked by resolve.py against its SAFE_* patterns; they are quoted
again wherever they appear, and an `#SBATCH` value that quoting would change is refused.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import PurePath

from ...catalog.gpus import nvls_capable
from ...plan import Plan
from ...resolve import SAFE_ENV_NAME, SAFE_IMAGE, SAFE_NAME, SAFE_TIME
from ...stages import pipeline_chunks
from . import yaml_text
from .render import render

TRAIN_SCRIPT = "train.py"
"""The runtime's entry point, at the top of the job directory (runtime.py writes it)."""
RDZV_BACKEND = "c10d"
"""torchrun's built-in rendezvous: the first agent to bind the endpoint hosts the store."""
K8S_API = "kubeflow.org/v1"
K8S_CONTAINER = "pytorch"
"""The training operator injects MASTER_ADDR/MASTER_PORT only into a container of this name."""
K8S_PORT_NAME = "pytorchjob-port"
"""The operator takes MASTER_PORT from the Master's container port of this name."""
K8S_WORKDIR_ROOT = "/workspace"
"""Where the image holds the job directory (`COPY . /workspace/<job>` in the README)."""
DNS_LABEL_MAX = 63


class LauncherError(ValueError):
    """The plan cannot be launched as it stands (open holes, or a fact resolution should have
    guaranteed is missing); `parc compile` refuses such plans before reaching the backend."""


# ---------------------------------------------------------------------------------------------
# The facts every launcher reads


@dataclass(frozen=True)
class JobShape:
    """What the launchers need from a plan, each value read once."""

    job: str
    spec_name: str
    """The spec's file name without its directories (no absolute paths in generated files)."""
    nodes: int
    gpus_per_node: int
    world_size: int
    port: int
    steps: int
    restarts: int
    """torchrun's --max-restarts."""
    env: tuple[tuple[str, str], ...]
    """Environment for every rank, in first-written order; a name written twice keeps its last value.
    NCCL's in-network reduction switches come first (`nccl_in_network`), the spec's `env` after."""
    image: str | None
    partition: str | None
    account: str | None
    time_limit: str | None
    namespace: str | None
    train_options: str = "`--device cpu`, `--dry-run` or `--steps N`"
    """Examples of the target's own train.py options, for the launchers' usage line."""


TRAIN_OPTIONS = {"torch": "`--device cpu`, `--dry-run` or `--steps N`",
                 "torchtitan": "`--training.steps N` or `--metrics.log-freq 1` (torchtitan's options)",
                 "megatron": "`--log-interval 1` or `--train-iters N` (Megatron-LM's options)"}
"""What a launcher's usage line offers to pass on, per target."""


def job_shape(plan: Plan) -> JobShape:
    if plan.holes:
        raise LauncherError("a plan with open holes has no launchers: " + ", ".join(h.name for h in plan.holes))
    cluster = plan.cluster
    if cluster.nodes is None or cluster.world_size is None:
        raise LauncherError("the plan has no cluster size")
    if cluster.nodes * cluster.gpus_per_node != cluster.world_size:
        raise LauncherError(f"{cluster.nodes} nodes x {cluster.gpus_per_node} GPUs per node "
                            f"!= world size {cluster.world_size}")
    _check_spec_strings(plan)
    env: dict[str, str] = dict(nccl_in_network(plan))
    for var in plan.launch.env:
        env[var.name] = var.value  # dicts keep first-insertion order; the last value wins
    launch = plan.launch
    return JobShape(job=launch.job, spec_name=_printable(PurePath(plan.source).name), nodes=cluster.nodes,
                    gpus_per_node=cluster.gpus_per_node, world_size=cluster.world_size, port=launch.port,
                    steps=launch.steps, restarts=launch.restarts, env=tuple(env.items()), image=launch.image, partition=launch.partition,
                    account=launch.account, time_limit=launch.time_limit, namespace=launch.namespace,
                    train_options=TRAIN_OPTIONS[plan.target.name])


def nccl_in_network(plan: Plan) -> tuple[tuple[str, str], ...]:
    """NCCL's switches for in-network reduction, set where the spec's hardware block states them
    (`nvls on|off`, `sharp on|off`), so that the job reduces as the time model charges it.
    Unstated, they are left to NCCL: CollNet (SHARP) is then off, and NVLS on wherever NCCL finds
    NVSwitches that reduce, which the prediction does not count on (a conservative figure for
    those all-reduces; `nvls_note`). `sharp on` also needs the SHARP plugin
    (`nccl-rdma-sharp-plugins`) in the image. The spec's `env` comes after these and wins."""
    cluster = plan.cluster
    out = []
    if cluster.nvls is not None:
        out.append(("NCCL_NVLS_ENABLE", "1" if cluster.nvls else "0"))
    if cluster.sharp is not None:
        out.append(("NCCL_COLLNET_ENABLE", "1" if cluster.sharp else "0"))
    return tuple(out)


def nccl_note(plan: Plan) -> str:
    """The job README's lines on in-network reduction: what the launchers set and why; empty
    where the spec says nothing and the cluster has no NVSwitch that reduces."""
    cluster = plan.cluster
    parts = []
    if cluster.nvls:
        parts.append("NVLink SHARP on (`NCCL_NVLS_ENABLE=1`, the spec's `nvls on`): NCCL may reduce all-reduces "
                     "inside each NVLink domain in the NVSwitches, as the prediction charges them.")
    elif cluster.nvls is False:
        parts.append("NVLink SHARP off (`NCCL_NVLS_ENABLE=0`, the spec's `nvls off`): rings and trees only, "
                     "as the prediction charges them.")
    elif nvls_capable(cluster.link, cluster.gpu.generation, cluster.domain_size):
        parts.append("NVLink SHARP is left to NCCL, which uses it by default on these NVSwitches; the prediction "
                     "does not count on it (its all-reduces inside a node are charged as rings). Write "
                     "`hardware { nvls on }` to have it counted, or `nvls off` to pin it off.")
    if cluster.sharp:
        parts.append("InfiniBand SHARP on (`NCCL_COLLNET_ENABLE=1`, the spec's `sharp on`): the image needs NCCL's "
                     "SHARP plugin (`nccl-rdma-sharp-plugins`, in HPC-X), and the fabric switches with SHARP "
                     "enabled and its aggregation manager running.")
    elif cluster.sharp is False:
        parts.append("InfiniBand SHARP off (`NCCL_COLLNET_ENABLE=0`, the spec's `sharp off`).")
    if not parts:
        return ""
    text = "In-network reduction (docs/time-model.md, \"Communication\"): " + " ".join(parts)
    # wrapped as the README's other items are, never inside a code span
    glued = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\0"), text)
    lines = textwrap.wrap(glued, width=98, break_long_words=False, break_on_hyphens=False)
    return "\n  ".join(line.replace("\0", " ") for line in lines)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 node`, `2 nodes`: the phrases the generated files print, built here, not in templates."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def shape_phrase(shape: JobShape, per_node: str = "GPUs per node") -> str:
    """`2 nodes x 4 GPUs per node = 8 ranks`: the one sentence every launcher's header states."""
    return f"{count(shape.nodes, 'node')} x {shape.gpus_per_node} {per_node} = {count(shape.world_size, 'rank')}"


def _check_spec_strings(plan: Plan) -> None:
    """resolve.py's SAFE_* patterns, matched over the whole string. Resolution should already
    have refused anything else with a diagnostic; a string that got through anyway (a pattern
    whose `$` accepts a final newline) stops the backend before it writes a broken file."""
    launch = plan.launch
    fields = [("job", launch.job, SAFE_NAME), ("image", launch.image, SAFE_IMAGE),
              ("partition", launch.partition, SAFE_NAME), ("account", launch.account, SAFE_NAME),
              ("namespace", launch.namespace, SAFE_NAME), ("time-limit", launch.time_limit, SAFE_TIME)]
    fields += [("env", var.name, SAFE_ENV_NAME) for var in launch.env]
    for what, value, pattern in fields:
        if value is not None and not pattern.fullmatch(value):  # fullmatch: `$` cannot skip a "\n"
            raise LauncherError(f"the {what} {value!r} is not safe in a launcher")


def _printable(text: str) -> str:
    """A file name safe inside a shell comment or a Markdown code span."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text) or "spec"


# ---------------------------------------------------------------------------------------------
# Shell words


class Expansion(str):
    """A shell word that expands variables, already double-quoted; never passed to shlex.quote."""


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHELL_SAFE_TAIL = re.compile(r"[A-Za-z0-9_.:/-]*")


def expand(name: str, before: str = "", after: str = "") -> Expansion:
    """`"<before>${name}<after>"`; `before` and `after` are fixed text from this module."""
    if not _SHELL_NAME.fullmatch(name) or not (_SHELL_SAFE_TAIL.fullmatch(before) and _SHELL_SAFE_TAIL.fullmatch(after)):
        raise ValueError(f"not a fixed shell expansion: {before!r} ${name} {after!r}")
    return Expansion(f'"{before}${{{name}}}{after}"')


def shell_word(value: str | int) -> str:
    return value if isinstance(value, Expansion) else shlex.quote(str(value))


def shell_command(head: list[str | int], options: list[tuple[str, str | int]], tail: list[str | int]) -> str:
    """A command over several lines: `head` on the first, one option per line, then `tail`."""
    lines = [" ".join(shell_word(w) for w in head)]
    lines += [f"  {shell_word(flag)} {shell_word(value)}" for flag, value in options]
    lines.append("  " + " ".join(shell_word(w) for w in tail))
    return " \\\n".join(lines)


def sbatch_value(value: str | int) -> str:
    """A value on an `#SBATCH` line, which sbatch reads without a shell: it must need no quoting."""
    text = str(value)
    if shlex.quote(text) != text:
        raise LauncherError(f"{text!r} cannot appear on an #SBATCH line")
    return text


SRUN_BINDING = [
    Expansion('"--cpus-per-task=${SLURM_CPUS_ON_NODE}"'),
    "--gpu-bind=none",
]
"""One srun task per node (`#SBATCH --ntasks-per-node=1`), torchrun's agent, which starts one worker per GPU: the task gets
every CPU of its (exclusive) node, not Slurm's default of one, which on clusters that bind tasks
to CPUs would put all of a node's ranks on one core; and every GPU of the node, unbound
(`--gpu-bind=none`), since each worker takes `cuda:LOCAL_RANK` itself (train.py)."""
OMP_THREADS = ('export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$((SLURM_CPUS_ON_NODE >= SLURM_GPUS_ON_NODE'
               ' ? SLURM_CPUS_ON_NODE / SLURM_GPUS_ON_NODE : 1))}"')
"""CPU threads per rank: the node's CPUs shared by its ranks (torchrun would set 1), at least one,
unless the spec's environment or the submitting shell sets OMP_NUM_THREADS. Fewer CPUs than ranks
would make the share 0, which libgomp rejects ("Invalid value for environment variable
OMP_NUM_THREADS") and replaces with every core of the node for every rank."""

PYXIS_MOUNT = Expansion('"--container-mounts=${PWD}:${PWD}"')
PYXIS_WORKDIR = Expansion('"--container-workdir=${PWD}"')


def exports(shape: JobShape) -> list[str]:
    """`export NAME=value` lines. A value with `$` or a backtick is literal by design (single
    quotes), which shellcheck's SC2016 would flag as a likely mistake, and a backslash before a
    closing quote looks like an attempt to escape it (SC1003): that line says so."""
    lines = []
    for name, value in shape.env:
        codes = [code for code, hit in (("SC2016", "$" in value or "`" in value), ("SC1003", "\\" in value)) if hit]
        if codes:
            lines.append(f"# shellcheck disable={','.join(codes)}  # the value is literal text")
        lines.append(f"export {name}={shlex.quote(value)}")
    return lines


# ---------------------------------------------------------------------------------------------
# torchrun's command line, the one definition all three launchers use


def torchrun_options(nnodes: str | int, nproc_per_node: str | int, endpoint: str, rdzv_id: str,
                     restarts: int = 0) -> list[tuple[str, str | int]]:
    """`restarts`: torchrun's --max-restarts (a failed worker restarts every worker of the job;
    train.py prefixes each attempt's store keys and resumes from --checkpoint-dir)."""
    return [
        ("--nnodes", nnodes),
        ("--nproc-per-node", nproc_per_node),
        ("--rdzv-backend", RDZV_BACKEND),
        ("--rdzv-endpoint", endpoint),
        ("--rdzv-id", rdzv_id),
    ] + ([("--max-restarts", restarts)] if restarts else [])


def python() -> Expansion:
    """The interpreter that starts torchrun's agent: `$PYTHON`, else `python3` from PATH.
    `python -m torch.distributed.run` is torchrun itself, without needing its console script
    on PATH (a virtual environment that is not activated, a module system, a container whose
    entry points were not installed): the agent and its workers run in the interpreter that has
    PyTorch."""
    return Expansion('"${PYTHON:-python3}"')


TORCHRUN = ["-m", "torch.distributed.run"]
"""torchrun as a module of `python()`."""


def torchrun_sh(shape: JobShape) -> str:
    command = shell_command(
        ["exec", python(), *TORCHRUN],
        torchrun_options(shape.nodes, shape.gpus_per_node, expand("rdzv_endpoint"), expand("rdzv_id"), shape.restarts),
        [expand("job_dir", after=f"/{TRAIN_SCRIPT}"), Expansion('"$@"')],
    )
    return render("launch/torchrun.sh.jinja", shape=shape, multi_node=shape.nodes > 1,
                  shape_phrase=shape_phrase(shape, "processes per node"),
                  mark_given="endpoint_given=yes; " if shape.nodes > 1 else "",
                  default_host="127.0.0.1", port=shape.port, rdzv_id=shell_word(shape.job),
                  exports=exports(shape), command=command)


def slurm_sbatch(shape: JobShape) -> str:
    directives = [
        ("job-name", sbatch_value(shape.job)),
        ("nodes", sbatch_value(shape.nodes)),
        ("ntasks-per-node", "1"),
        ("gpus-per-node", sbatch_value(shape.gpus_per_node)),
        ("exclusive", None),
        ("output", "%x-%j.out"),
    ]
    for flag, value in (("partition", shape.partition), ("account", shape.account), ("time", shape.time_limit)):
        if value is not None:
            directives.append((flag, sbatch_value(value)))
    srun = ["srun", "--kill-on-bad-exit=1", *SRUN_BINDING]
    if shape.image is not None:  # pyxis/enroot: the job directory mounted at the same path
        srun += [f"--container-image={shape.image}", PYXIS_MOUNT, PYXIS_WORKDIR]
    command = shell_command(
        srun + [python(), *TORCHRUN],
        torchrun_options(expand("SLURM_JOB_NUM_NODES"), expand("SLURM_GPUS_ON_NODE"),
                         expand("head_node", after=f":{shape.port}"), expand("SLURM_JOB_ID"), shape.restarts),
        [TRAIN_SCRIPT, Expansion('"$@"')],
    )
    lines = [f"#SBATCH --{flag}" + ("" if value is None else f"={value}") for flag, value in directives]
    return render("launch/slurm.sbatch.jinja", shape=shape, directives=lines, exports=exports(shape),
                  shape_phrase=shape_phrase(shape), threads=OMP_THREADS,
                  train_script=TRAIN_SCRIPT, command=command)


# ---------------------------------------------------------------------------------------------
# Kubernetes: a Kubeflow PyTorchJob built as data


def k8s_name(job: str, nodes: int) -> str:
    """The job name as the operator needs it: a DNS-1035 label (lower-case letters, digits and
    `-`, starting with a letter) short enough that its pods' names, `<name>-worker-<i>`, stay
    labels of at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", job.lower()).strip("-")
    if not name or not name[0].isalpha():
        name = "job-" + name
    longest_suffix = f"-worker-{nodes - 2}" if nodes > 1 else "-master-0"
    return name[: DNS_LABEL_MAX - len(longest_suffix)].rstrip("-")


def default_image(shape: JobShape) -> str:
    """The spec's image, else a local name the README's `docker build` gives the job's image
    (the Kubernetes name: lower-case, so also a valid image reference)."""
    return shape.image if shape.image is not None else k8s_name(shape.job, shape.nodes)


def k8s_env_value(value: str) -> str:
    """Kubernetes expands `$(NAME)` in env values and reads `$$` as `$`: doubling every `$`
    passes the value through unchanged."""
    return value.replace("$", "$$")


def pytorchjob(shape: JobShape) -> dict:
    """The PyTorchJob as data: one Master pod and `nodes - 1` Worker pods, each running one
    torchrun over all of its node's GPUs. Each replica gets its own copies (no shared objects)."""
    name = k8s_name(shape.job, shape.nodes)
    command = ["torchrun"]
    for flag, value in torchrun_options(shape.nodes, shape.gpus_per_node, "$(MASTER_ADDR):$(MASTER_PORT)", name,
                                          shape.restarts):
        command += [flag, str(value)]
    command.append(TRAIN_SCRIPT)

    def container() -> dict:
        spec: dict = {
            "name": K8S_CONTAINER,
            "image": default_image(shape),
            "workingDir": f"{K8S_WORKDIR_ROOT}/{shape.job}",
            "command": list(command),
        }
        if shape.env:
            spec["env"] = [{"name": key, "value": k8s_env_value(value)} for key, value in shape.env]
        spec["ports"] = [{"name": K8S_PORT_NAME, "containerPort": shape.port, "protocol": "TCP"}]
        spec["resources"] = {"limits": {"nvidia.com/gpu": shape.gpus_per_node}}
        spec["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        return spec

    def replica(count: int) -> dict:
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {"spec": {
                "containers": [container()],
                # NCCL and DataLoader workers share memory through /dev/shm, 64 MiB by default in a pod
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            }},
        }

    replicas = {"Master": replica(1)}
    if shape.nodes > 1:
        replicas["Worker"] = replica(shape.nodes - 1)
    metadata = {"name": name}
    if shape.namespace is not None:
        metadata["namespace"] = shape.namespace
    return {
        "apiVersion": K8S_API,
        "kind": "PyTorchJob",
        "metadata": metadata,
        "spec": {"nprocPerNode": str(shape.gpus_per_node), "pytorchReplicaSpecs": replicas},
    }


def k8s_yaml(shape: JobShape) -> str:
    header = (f"# Kubeflow PyTorchJob for the parc job `{shape.job}`: "
              f"{count(shape.nodes, 'pod')} x {shape.gpus_per_node} GPUs per pod = {count(shape.world_size, 'rank')}.\n"
              f"# Generated from {shape.spec_name}; change the spec and recompile rather than editing.\n")
    return header + yaml_text.dump(pytorchjob(shape))


# ---------------------------------------------------------------------------------------------
# The job's README


def _degree_expression(plan: Plan) -> str:
    return " x ".join(f"{a.name} {a.degree}" for a in plan.layout.axes)


def _rank_formula(plan: Plan) -> str:
    terms = [a.name if a.stride == 1 else f"{a.stride} * {a.name}" for a in plan.layout.axes]
    return "rank = " + " + ".join(terms)


def _options(plan: Plan) -> list[tuple[str, str]]:
    """One line per parallelism the layout uses; absent axes say nothing."""
    layout = plan.layout
    rows = []
    if layout.tp.degree and layout.tp.degree > 1:
        rows.append(("tensor parallel", f"degree {layout.tp.degree}, sequence parallelism "
                     + ("on" if layout.tp.sequence_parallel else "off")))
    if layout.pp.degree and layout.pp.degree > 1:
        rows.append(("pipeline parallel", f"degree {layout.pp.degree}, schedule {layout.pp.schedule}, "
                     f"{count(layout.pp.virtual_stages, 'virtual stage')} per rank"))
    if layout.dp.degree and layout.dp.degree > 1:
        sharding = {"none": "none (DDP)", "zero3": "zero3 (FSDP)"}.get(layout.dp.sharding, layout.dp.sharding)
        if layout.dp.sharding == "hsdp":
            sharding = f"hsdp ({layout.dp.replicate} replicas x {layout.dp.shard} shards)"
        rows.append(("data parallel", f"degree {layout.dp.degree}, sharding {sharding}"))
    if layout.cp.degree and layout.cp.degree > 1:
        rows.append(("context parallel", f"degree {layout.cp.degree}, flavour {layout.cp.flavour}"))
    if layout.ep.degree and layout.ep.degree > 1:
        over = f", folded over {' x '.join(layout.ep.folded_over)}" if layout.ep.folded_over else ""
        rows.append(("expert parallel", f"degree {layout.ep.degree}{over}"))
    return rows


def _model_line(plan: Plan) -> str:
    m = plan.model
    parts = [f"{m.layers} layers", f"hidden {m.hidden}", f"{m.heads} heads ({m.kv_heads} KV)",
             f"{m.activation} FFN {m.ffn}", m.norm, f"vocab {m.vocab}"]
    if m.is_moe:
        parts.append(f"{m.experts} experts (top-{m.top_k}, FFN {m.expert_ffn}) in {len(m.moe_layers)} layers")
    return f"{m.name}: " + ", ".join(parts) + f"; {m.parameters:,} parameters"


def _training_line(plan: Plan) -> str:
    t = plan.training
    recompute = t.recompute_stated
    accumulation = "" if t.grad_accum is None else f", {count(t.grad_accum, 'micro-batch', 'micro-batches')} per step"
    return (f"seq {t.seq_len}, global batch {t.global_batch} sequences ({t.tokens_per_step:,} tokens), "
            f"micro-batch {t.micro_batch}{accumulation}, {t.precision}, {t.optimizer}, recompute {recompute}")


def _stage_rows(plan: Plan) -> list[tuple[int, int, str]]:
    if not plan.layout.pp.degree or plan.layout.pp.degree == 1:
        return []
    rows = []
    for chunk in pipeline_chunks(plan):
        parts = [f"layers {chunk.first_layer}-{chunk.first_layer + chunk.layers - 1}" if chunk.layers else "no layers"]
        if chunk.embedding:
            parts.insert(0, "embedding")
        if chunk.output:
            parts.append("final norm and output")
        rows.append((chunk.index, chunk.rank, ", ".join(parts)))
    return rows


def python_dependencies(plan: Plan) -> list[tuple[str, str]]:
    """Every Python distribution the job imports, with why: PyTorch always; numpy when the
    layout pipelines, because torch.distributed.pipelining exchanges the stages' shapes as
    pickled objects and torch's object collectives convert them through numpy."""
    needs = [("torch", "PyTorch with torch.distributed (NCCL on GPUs, gloo on CPU)")]
    if plan.layout.pp.degree and plan.layout.pp.degree > 1:
        needs.append(("numpy", "torch.distributed.pipelining's shape exchange (torch's object "
                               "send/receive) imports it"))
    return needs


def readme(plan: Plan, shape: JobShape) -> str:
    cluster = plan.cluster
    summary = [
        ("model", _model_line(plan)),
        ("layout", f"{_degree_expression(plan)} = {shape.world_size} ranks; {_rank_formula(plan)}"),
        ("cluster", f"{count(shape.nodes, 'node')} x {shape.gpus_per_node} {cluster.gpu.name} GPUs per node "
                    f"= {count(shape.world_size, 'GPU')}, {cluster.link} inside a node"),
        *_options(plan),
        ("training", _training_line(plan)),
        ("steps", f"{shape.steps} (train.py's default)"),
    ]
    return render("README.md.jinja", plan=plan, shape=shape, summary=summary, stages=_stage_rows(plan),
                  k8s_name=k8s_name(shape.job, shape.nodes), workdir=f"{K8S_WORKDIR_ROOT}/{shape.job}",
                  image=default_image(shape), train_script=TRAIN_SCRIPT,
                  env=shape.env, multi_node=shape.nodes > 1, shape_phrase=shape_phrase(shape),
                  rdzv_backend=RDZV_BACKEND, nodes=count(shape.nodes, "node"),
                  dependencies=python_dependencies(plan), nccl_note=nccl_note(plan),
                  workers=count(shape.nodes - 1, "Worker pod"), nodes_number=shape.nodes)


def files(plan: Plan) -> dict[str, str]:
    shape = job_shape(plan)
    return {
        "launch/torchrun.sh": torchrun_sh(shape),
        "launch/slurm.sbatch": slurm_sbatch(shape),
        "launch/k8s.yaml": k8s_yaml(shape),
        "README.md": readme(plan, shape),
    }
