"""A single-node Slurm cluster of its own for a test: munged, slurmctld and slurmd from
the distribution's packages (Debian: `apt-get install -y slurm-wlm munge`, which `.ci/run`
does), each with its private key, socket, ports, state and logs under one directory, so
nothing of the machine's own Slurm or munge (if any) is touched.

The node declares one generic GPU resource (`Gres=gpu:1`, a gres.conf entry on
/dev/null), so the `--gres=gpu:1` that `parval catalogue slurm` writes is scheduled exactly
as on a GPU cluster: one task on the node's one GPU at a time. `start_cluster` returns
the reason instead when Slurm is not installed or does not come up (the test then skips
naming it); `Cluster.stop` ends every daemon it started, by pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo", "scancel")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, n: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Cluster:
    dir: Path
    env: dict[str, str]
    pidfiles: list[Path] = field(default_factory=list)

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), env=self.env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )

    def job_state(self, jobid: str) -> str:
        p = self.run("scontrol", "-o", "show", "job", jobid)
        for part in p.stdout.split():
            if part.startswith("JobState="):
                return part.split("=", 1)[1]
        return "UNKNOWN"

    def wait_job(self, jobid: str, timeout: float) -> str:
        """The final state of job `jobid` (COMPLETED, FAILED, ...), or TIMEOUT."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.job_state(jobid)
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                return state
            time.sleep(2)
        return "TIMEOUT"

    def logs(self) -> str:
        return "; ".join(f"{p.name}: {_tail(p)}" for p in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        """Cancel what is left, then end slurmd, slurmctld and munged (the pids they wrote)."""
        try:
            self.run("scancel", "--full", "--user", str(os.getuid()), timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for pidfile in reversed(self.pidfiles):
            try:
                pid = int(pidfile.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if not _alive(pid):
                continue
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def start_cluster(directory: Path) -> Cluster | str:
    """A running one-node cluster, or why there is none (Slurm absent, not root, no start)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"Slurm is not installed (no {', '.join(missing)}): apt-get install -y slurm-wlm munge (.ci/run does)"
    if os.geteuid() != 0:
        return "a single-node Slurm needs root here (slurmd starts the jobs as their user)"
    directory.mkdir(parents=True, exist_ok=True)
    munge_dir = directory / "munge"
    munge_dir.mkdir(mode=0o700)
    key = munge_dir / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = munge_dir / "munge.socket"
    host = socket.gethostname().split(".")[0]
    env = {**os.environ, "SLURM_CONF": str(directory / "slurm.conf")}
    cluster = Cluster(directory, env)
    munged = [
        "munged",
        "--force",
        f"--socket={sock}",
        f"--key-file={key}",
        f"--pid-file={munge_dir / 'munged.pid'}",
        f"--log-file={directory / 'munged.log'}",
        f"--seed-file={munge_dir / 'munged.seed'}",
    ]
    p = subprocess.run(munged, capture_output=True, text=True, timeout=30, check=False)
    cluster.pidfiles.append(munge_dir / "munged.pid")
    if p.returncode != 0:
        cluster.stop()
        return f"munged did not start: {p.stderr.strip() or p.stdout.strip()}"
    for sub in ("state", "spool"):
        (directory / sub).mkdir()
    conf = f"""ClusterName=parvaltest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={directory / "state"}
SlurmdSpoolDir={directory / "spool"}
SlurmctldPidFile={directory / "slurmctld.pid"}
SlurmdPidFile={directory / "slurmd.pid"}
SlurmctldLogFile={directory / "slurmctld.log"}
SlurmdLogFile={directory / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=3600
GresTypes=gpu
NodeName={host} CPUs={os.cpu_count() or 1} RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
    (directory / "slurm.conf").write_text(conf)
    (directory / "gres.conf").write_text(f"NodeName={host} Name=gpu Count=1 File=/dev/null\n")
    for daemon in ("slurmctld", "slurmd"):
        p = cluster.run(daemon, "-f", str(directory / "slurm.conf"), timeout=60)
        cluster.pidfiles.append(directory / f"{daemon}.pid")
        if p.returncode != 0:
            cluster.stop()
            return f"{daemon} did not start (exit {p.returncode}): {p.stderr.strip()} {cluster.logs()}"
        time.sleep(0.5)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = cluster.run("sinfo", "-h", "-o", "%T").stdout.strip()
        if state == "idle":
            return cluster
        time.sleep(1)
    cluster.stop()
    return f"the Slurm node did not become idle within 60 s (state {state!r}): {cluster.logs()}"
