"""A real Slurm on this machine for the launcher tests: munged, slurmctld, and one slurmd per node.

Everything lives in one private temporary directory (config, state, spool, logs, the munge key
and socket); the clients find it through SLURM_CONF, so nothing under /etc is touched and two
harnesses can run side by side. It needs Debian's `slurm-wlm` and `munge` and must run as root
(SlurmUser=root, no systemd, no cgroups: proctrack/linuxproc and task/none).

Several nodes on one machine: each node is a host name that resolves to a loopback address,
because the generated Slurm script finds its rendezvous host with `scontrol show hostnames` and
torchrun must reach it. The names come from the machine's hostname and /etc/hosts (`localhost`
itself is useless: Slurm replaces it with the hostname). Each slurmd listens on its own port with
its own spool directory. GPUs are `gres/gpu` backed by placeholder files, so `--gpus-per-node`
is scheduled and accounted exactly as on a GPU cluster; the job itself runs with `--device cpu`.

The daemons are stopped by their pid files when the harness closes, after cancelling any job
still running (slurmstepd outlives slurmd otherwise).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("munge", "sbatch", "squeue", "scontrol", "sinfo", "scancel")
INSTALL = "apt-get install -y slurm-wlm munge"


def missing_binaries() -> list[str]:
    return [name for name in DAEMONS + CLIENTS if shutil.which(name) is None]


def loopback_names(hosts_file: Path = Path("/etc/hosts")) -> list[str]:
    """Host names that resolve to this machine through a loopback address, hostname first."""
    candidates = [socket.gethostname()]
    with contextlib.suppress(OSError):
        for line in hosts_file.read_text(encoding="utf-8").splitlines():
            fields = line.split("#", 1)[0].split()
            candidates += fields[1:]
    names: list[str] = []
    for name in candidates:
        if name in names or name.startswith("localhost") or not name.replace("-", "").replace(".", "").isalnum():
            continue
        try:
            address = socket.gethostbyname(name)
        except OSError:
            continue
        if ipaddress.ip_address(address).is_loopback:
            names.append(name)
    return names


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmError(RuntimeError):
    pass


@dataclass
class JobResult:
    job_id: str
    state: str
    exit_code: str
    output: str
    node_list: str
    """The allocation as Slurm writes it (`vm,runsc`, `node-[1-2]`); "" when unknown."""


@dataclass
class LocalSlurm:
    """`with LocalSlurm(nodes=2, gpus_per_node=4) as slurm: slurm.run(script, cwd)`."""

    nodes: int = 1
    gpus_per_node: int = 0
    start_timeout: float = 60.0
    root: Path = field(init=False)
    node_names: list[str] = field(init=False, default_factory=list)

    # -----------------------------------------------------------------------------------------
    def __enter__(self) -> LocalSlurm:
        if os.geteuid() != 0:
            raise SlurmError("the local Slurm runs its daemons as root")
        names = loopback_names()
        if len(names) < self.nodes:
            raise SlurmError(f"{self.nodes} Slurm nodes need {self.nodes} host names that resolve to this "
                             f"machine; found {names}. Add them to /etc/hosts, e.g. `127.0.0.1 node-a node-b`")
        self.node_names = names[: self.nodes]
        self.root = Path(tempfile.mkdtemp(prefix="parc-slurm-"))
        self.root.chmod(0o755)  # munged wants every directory on its socket's path searchable
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm's client commands."""
        return {**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")}

    # -----------------------------------------------------------------------------------------
    def _start(self) -> None:
        for name in ("key", "run", "log", "state", "spool", "dev"):
            (self.root / name).mkdir()
        (self.root / "key").chmod(0o700)
        (self.root / "key" / "munge.key").write_bytes(os.urandom(1024))
        (self.root / "key" / "munge.key").chmod(0o400)
        self._daemon(["munged", f"--key-file={self.root}/key/munge.key", f"--socket={self.socket}",
                      f"--pid-file={self.root}/run/munged.pid", f"--log-file={self.root}/log/munged.log",
                      f"--seed-file={self.root}/key/munged.seed"])
        self._wait(lambda: self.socket.exists(), "munged did not create its socket", "munged.log")

        for index in range(self.gpus_per_node):
            (self.root / "dev" / f"gpu{index}").touch()
        self._write_config()
        self._daemon(["slurmctld", "-f", str(self.root / "slurm.conf")])
        self._wait(lambda: self._ok(["scontrol", "ping"]), "slurmctld did not answer", "slurmctld.log")
        for name in self.node_names:
            (self.root / "spool" / name).mkdir()
            self._daemon(["slurmd", "-f", str(self.root / "slurm.conf"), "-N", name])
        self._wait(self._nodes_idle, "the nodes did not become idle", "slurmctld.log")

    @property
    def socket(self) -> Path:
        return self.root / "run" / "munge.sock"

    def _write_config(self) -> None:
        cpus = os.cpu_count() or 1
        root = self.root
        lines = [
            "ClusterName=parctest",
            f"SlurmctldHost={self.node_names[0]}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",  # several nodes share this machine's cores
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/run/slurmctld.pid",
            f"SlurmdPidFile={root}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd-%n.log",
        ]
        gres = ""
        if self.gpus_per_node:
            lines.append("GresTypes=gpu")
            gres = f" Gres=gpu:{self.gpus_per_node}"
            files = f"{root}/dev/gpu[0-{self.gpus_per_node - 1}]" if self.gpus_per_node > 1 else f"{root}/dev/gpu0"
            (root / "gres.conf").write_text(f"Name=gpu File={files}\n", encoding="utf-8")
        for name in self.node_names:
            lines.append(f"NodeName={name} NodeAddr=127.0.0.1 Port={free_port()} CPUs={cpus} "
                         f"RealMemory=1000{gres} State=UNKNOWN")
        lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        (root / "slurm.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _daemon(self, argv: list[str]) -> None:
        result = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise SlurmError(f"{argv[0]} failed to start: {result.stderr.strip()}\n{self.logs()}")

    def _ok(self, argv: list[str]) -> bool:
        return subprocess.run(argv, env=self.env, capture_output=True, timeout=30).returncode == 0

    def _nodes_idle(self) -> bool:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True, text=True,
                             timeout=30).stdout
        states = dict(line.split() for line in out.splitlines() if line.strip())
        return sorted(states) == sorted(self.node_names) and set(states.values()) == {"idle"}

    def _wait(self, ready, message: str, log: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.5)
        raise SlurmError(f"{message} within {self.start_timeout:.0f} s\n{self.logs()}")

    def logs(self, lines: int = 15) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*.log")):
            tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    # -----------------------------------------------------------------------------------------
    def submit(self, script: str, cwd: Path, args: tuple[str, ...] = (), env: dict | None = None) -> str:
        result = subprocess.run(["sbatch", "--parsable", script, *args], cwd=cwd, env={**self.env, **(env or {})},
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise SlurmError(f"sbatch failed: {result.stderr.strip()}")
        return result.stdout.strip().split(";")[0]

    def wait(self, job_id: str, timeout: float) -> tuple[str, str, str]:
        """Poll squeue until the job leaves the queue; return its final state, exit code and nodes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queued = subprocess.run(["squeue", "-h", "-j", job_id], env=self.env, capture_output=True, text=True,
                                    timeout=30).stdout.strip()
            if not queued:
                break
            time.sleep(1)
        else:
            subprocess.run(["scancel", job_id], env=self.env, capture_output=True, timeout=30)
            raise SlurmError(f"job {job_id} still queued or running after {timeout:.0f} s\n{self.logs()}")
        info = subprocess.run(["scontrol", "show", "job", job_id], env=self.env, capture_output=True, text=True,
                              timeout=30).stdout
        fields = dict(word.split("=", 1) for word in info.split() if "=" in word)
        return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "?"), fields.get("NodeList", "")

    def hostnames(self, node_list: str) -> list[str]:
        """`scontrol show hostnames`: a node list expanded to names."""
        out = subprocess.run(["scontrol", "show", "hostnames", node_list], env=self.env, capture_output=True,
                             text=True, timeout=30).stdout
        return out.split()

    def run(self, script: str, cwd: Path, output: str, args: tuple[str, ...] = (), env: dict | None = None,
            timeout: float = 300) -> JobResult:
        """Submit, wait, and read the job's output file (`output`, with %j for the job id)."""
        job_id = self.submit(script, cwd, args, env)
        state, exit_code, node_list = self.wait(job_id, timeout)
        path = cwd / output.replace("%j", job_id)
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        return JobResult(job_id=job_id, state=state, exit_code=exit_code, output=text, node_list=node_list)

    # -----------------------------------------------------------------------------------------
    def close(self) -> None:
        root = getattr(self, "root", None)
        if root is None or not root.exists():
            return
        if (root / "run" / "slurmctld.pid").exists():
            subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                out = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True, timeout=30)
                if out.returncode != 0 or not out.stdout.strip():
                    break
                time.sleep(0.5)
        for pid_file in [*sorted((root / "run").glob("slurmd-*.pid")), root / "run" / "slurmctld.pid",
                         root / "run" / "munged.pid"]:
            _stop(pid_file)
        shutil.rmtree(root, ignore_errors=True)


def _stop(pid_file: Path, timeout: float = 15.0) -> None:
    """Stop the daemon whose pid the file holds: SIGTERM, then SIGKILL if it lingers."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            if _is_zombie(pid):
                return
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
