"""A single-host SLURM cluster for the tests: Debian's slurm-wlm daemons (munged, slurmctld, slurmd) started in
the foreground from a generated `slurm.conf` in a folder of their own, and stopped again.

The cluster is one node of `cpus` CPUs and one default partition, free of cgroups (proctrack/linuxproc,
task/none) so that it runs in a container, without accounting (no slurmdbd), as root. Its own munge key and
socket, ports the kernel picked as free, and every state, spool, pid and log file in the folder keep it apart
from any SLURM the machine runs. Client commands reach it through `SLURM_CONF` (`SlurmCluster.env`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scancel")
# Where Debian installs the daemons; a user's PATH often lacks the sbin folders.
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
PARTITION = "grade"
# Memory the node offers (config_overrides makes the configured figures the node's, whatever the machine has):
# enough for the tests' jobs, which ask for 1 GB each.
NODE_MEMORY_MB = 4096
MUNGE_KEY_BYTES = 1024  # munge's documented key size (random bytes)
START_TIMEOUT_S = 60  # only bounds a cluster that does not come up
STOP_TIMEOUT_S = 30
POLL_S = 0.2
# A Unix socket's path must fit in sockaddr_un.sun_path (108 bytes with its terminating NUL).
MAX_SOCKET_PATH = 107


def find_program(name: str) -> str | None:
    """The path of `name` on PATH or in the system's sbin folders; None when it is not installed."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))


def missing_programs() -> list[str]:
    """The daemons and client commands this cluster needs that the machine lacks."""
    return [name for name in DAEMONS + CLIENTS if find_program(name) is None]


def _free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports on the loopback that the kernel says are free now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def slurm_conf(folder: Path, host: str, cpus: int, ports: tuple[int, int], munge_socket: Path) -> str:
    """The slurm.conf of a one-node cluster whose files all live in `folder`."""
    return "\n".join([
        "ClusterName=grade-tests",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "SlurmdParameters=config_overrides",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={NODE_MEMORY_MB} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


@dataclass(frozen=True)
class SlurmCluster:
    """A running cluster: its folder, configuration file, node name, and the environment its commands need."""

    folder: Path
    conf: Path
    node: str

    @property
    def env(self) -> dict[str, str]:
        """This process's environment pointed at the cluster, without the SLURM_* variables of a job this process
        may itself run in (on another cluster), which sbatch and srun would take as theirs."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str) -> str:
        """A client command's output (`squeue`, `scancel`, ...); CalledProcessError when it fails."""
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, check=True).stdout

    def node_state(self) -> str:
        """The node's state as sinfo reports it (idle, mixed, allocated, down*, ...), or '' before it registers."""
        result = subprocess.run(["sinfo", "--noheader", "--Node", "--nodes", self.node, "--format", "%T"],
                                env=self.env, capture_output=True, text=True, check=False)
        return result.stdout.strip() if result.returncode == 0 else ""

    def job_ids(self, name: str | None = None) -> list[str]:
        """The ids of the jobs in the queue (pending, running or completing), of the jobs called `name` if given."""
        args = ["squeue", "--noheader", "--format", "%i"] + (["--name", name] if name else [])
        return self.run(*args).split()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of each daemon's log and output (errors before it opens its log), for a failure
        message."""
        parts = []
        for log in sorted([*self.folder.glob("*.log"), *self.folder.glob("*.out")]):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(parts)


def _start(stack: ExitStack, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    """A daemon in the foreground, its output in `log`, stopped when `stack` closes."""
    with open(log, "ab") as output:
        process = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    stack.callback(_stop, process)
    return process


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it is still there after STOP_TIMEOUT_S."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(what: str, ready: Callable[[], bool], processes: list[subprocess.Popen], cluster: SlurmCluster,
              timeout: float) -> None:
    """Poll `ready()` until it is true; RuntimeError when a daemon exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while not ready():
        dead = [p.args[0] for p in processes if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = f"{', '.join(dead)} exited" if dead else f"not within {timeout:.0f} s"
            raise RuntimeError(f"the test SLURM cluster did not start ({what}: {why})\n{cluster.log_tail()}")
        time.sleep(POLL_S)


def _cancel_all(cluster: SlurmCluster) -> None:
    """Cancel every job still queued or running, and wait for the queue to empty, so that no job's processes
    outlive the cluster."""
    subprocess.run(["scancel", "--user", str(os.getuid())], env=cluster.env, capture_output=True, check=False)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        result = subprocess.run(["squeue", "--noheader"], env=cluster.env, capture_output=True, text=True,
                                check=False)
        if result.returncode != 0 or not result.stdout.strip():
            return
        time.sleep(POLL_S)


@contextmanager
def slurm_cluster(folder: Path, cpus: int = 2, timeout: float = START_TIMEOUT_S) -> Iterator[SlurmCluster]:
    """A one-node cluster of `cpus` CPUs running from `folder` until the block ends, its node idle on entry."""
    missing = missing_programs()
    if missing:
        raise FileNotFoundError(f"SLURM is not installed: {', '.join(missing)} not found")
    folder = folder.resolve()
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "munge").chmod(0o755)  # munged wants its socket's folder reachable by all, writable by its user only
    munge_socket = folder / "munge" / "munge.socket"
    if len(str(munge_socket)) > MAX_SOCKET_PATH:
        raise ValueError(f"the cluster folder {folder} is too deep for munge's socket path; use a shorter one")
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(MUNGE_KEY_BYTES))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, host, cpus, tuple(_free_ports(2)), munge_socket))
    cluster = SlurmCluster(folder, conf, host)
    env = cluster.env
    with ExitStack() as stack:
        # --force: munged also wants every folder above its socket reachable by all users, and pytest's temporary
        # folders are private; only this process's user talks to it.
        munged = _start(stack, [find_program("munged"), "--foreground", "--force", f"--socket={munge_socket}",
                                f"--key-file={key}", f"--pid-file={folder / 'munge' / 'munged.pid'}",
                                f"--log-file={folder / 'munged.log'}",
                                f"--seed-file={folder / 'munge' / 'munged.seed'}"], folder / "munged.out", env)
        _wait_for("munge socket", munge_socket.exists, [munged], cluster, timeout)
        slurmctld = _start(stack, [find_program("slurmctld"), "-D", "-i", "-f", str(conf)],
                           folder / "slurmctld.out", env)
        slurmd = _start(stack, [find_program("slurmd"), "-D", "-N", host, "-f", str(conf)], folder / "slurmd.out",
                        env)
        daemons = [munged, slurmctld, slurmd]
        _wait_for("node idle", lambda: cluster.node_state() == "idle", daemons, cluster, timeout)
        # Last in, first out: the jobs go before the daemons that run them.
        stack.callback(_cancel_all, cluster)
        yield cluster
