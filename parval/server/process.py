"""A fresh server process per start: config file, own process group, logs to files,
readiness by polling /health under a deadline, SIGTERM → grace → SIGKILL of the group.

Safe by default:

* Servers bind to 127.0.0.1 unless the plan sets `server.host` (or a `host` in
  `server.extra_config`) explicitly.
* No shell: the server is started from an argument list (`subprocess.Popen(argv)`).
* The server's environment is the plan's explicit `env` for that server plus only these
  variables taken from parval's own environment (`ENV_ALLOW`): PATH, HOME, USER, LANG,
  LC_ALL, TMPDIR, TZ, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
  NVIDIA_VISIBLE_DEVICES, VK_ICD_FILENAMES, VK_DRIVER_FILES, HIP_VISIBLE_DEVICES,
  ROCR_VISIBLE_DEVICES, SYSTEMROOT, OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE. Nothing else (no
  tokens, no proxies) leaks through. A variable left out that changes how a server runs
  (threads, devices, preloaded libraries: `dropped_env`) is named by `parval validate` and
  `parval run`, never dropped silently; the plan's `servers.<name>.env` passes it.

No server outlives parval: every group started here is registered with
`parval.server.reaper` (atexit and a watchdog process kill what is left).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx

from parval.errors import ServerStartError, StartPreparationError
from parval.jsonread import as_int
from parval.jsontypes import JsonObject
from parval.procedure.server_facts import ROUTE_HEALTH
from parval.rundir.files import atomic_write
from parval.server import reaper

# Environment variables passed through to servers besides the plan's explicit `env`
# (keep the module docstring's list in step; a test checks it).
ENV_ALLOW = (
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "TZ",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",  # what CUDA_VISIBLE_DEVICES's numbers mean (FASTEST_FIRST or PCI_BUS_ID)
    "NVIDIA_VISIBLE_DEVICES",
    "VK_ICD_FILENAMES",
    "VK_DRIVER_FILES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "SYSTEMROOT",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)
# Variables not passed that change how a server runs (thread pools, devices, ggml and BLAS
# settings, allocators, preloaded libraries): each one set here is named, never dropped silently.
BEHAVIOUR_PREFIXES = (
    "OMP_",
    "GOMP_",
    "KMP_",
    "GGML_",
    "CUDA_",
    "NVIDIA_",
    "MKL_",
    "OPENBLAS_",
    "BLIS_",
    "VK_",
    "HIP_",
    "HSA_",
    "ROCR_",
    "AUDIOCPP_",
)
BEHAVIOUR_NAMES = ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX")
# After SIGKILL, how long to wait for the kernel to reap the leader before giving up.
KILL_WAIT_S = 5.0


def live_servers() -> list[ServerProcess]:
    """Servers started by this process and not reaped yet."""
    return [s for s in reaper.live() if isinstance(s, ServerProcess)]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def tail(path: Path, max_bytes: int = 4000) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


@dataclass
class LaunchSpec:
    executable: Path
    config: dict[str, object]  # written to the start's config.json
    flagged: bool
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    ui_management: bool = False
    role: str = ""  # the plan's server it starts: "baseline" or "candidate"


@dataclass
class ServerProcess:
    name: str
    directory: Path
    argv: list[str]
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    started: float
    ready_s: float | None = None
    exit_code: int | None = None
    stop_info: JsonObject = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{connect_host(self.host)}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stdout_path(self) -> Path:
        return self.directory / "stdout.log"

    @property
    def stderr_path(self) -> Path:
        return self.directory / "stderr.log"

    def alive(self) -> bool:
        return self.returncode() is None

    def log_tail(self, max_bytes: int = 4000) -> str:
        return tail(self.stderr_path, max_bytes) + tail(self.stdout_path, 1000)

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    def stderr_size(self) -> int:
        try:
            return self.stderr_path.stat().st_size
        except OSError:
            return 0

    def returncode(self) -> int | None:
        """The leader's exit status once it exited (and the group is cleaned up), else None."""
        rc = self.proc.poll()
        if rc is not None:
            self.exit_code = rc
            if reaper.is_live(self.proc.pid):
                reaper.signal_group(self.proc.pid, signal.SIGKILL)  # orphans left in the group
                reaper.forget(self.proc.pid)
        return rc

    async def stop(self, grace_s: float) -> JsonObject:
        """SIGTERM the group, wait `grace_s`, then SIGKILL. Records how it ended.

        Bounded: at most grace_s + KILL_WAIT_S, even for a process that cannot be reaped."""
        t0 = time.monotonic()
        info: JsonObject = {"signal": "SIGTERM", "graceful": False, "killed": False, "grace_s": grace_s}
        if self.returncode() is None:
            reaper.signal_group(self.proc.pid, signal.SIGTERM)
            if not await self.wait_exit(grace_s, 0.02):
                reaper.signal_group(self.proc.pid, signal.SIGKILL)
                info["killed"] = True
                info["reason"] = (
                    f"still running {grace_s:g} s after SIGTERM (timeouts.shutdown_grace_s); killed with SIGKILL"
                )
                with anyio.CancelScope(shield=True):
                    if not await self.wait_exit(KILL_WAIT_S, 0.01):
                        info["unreaped"] = True
            else:
                info["graceful"] = self.exit_code == 0
        else:
            info["signal"] = None
            info["already_exited"] = True
        self.returncode()  # the leader has exited: SIGKILL what is left of its group, forget it
        info["exit_code"] = self.exit_code
        info["stop_s"] = round(time.monotonic() - t0, 4)
        self.stop_info = info
        return info

    async def wait_exit(self, timeout_s: float, step_s: float = 0.02) -> bool:
        """True once the leader exited; False when `timeout_s` passed first."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.returncode() is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(step_s)

    def kill_now(self) -> None:
        reaper.signal_group(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        self.returncode()


def connect_host(host: str) -> str:
    """Where parval connects for a bind address: wildcard binds are reached on loopback."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host in ("::", "[::]"):
        return "[::1]"
    if ":" in host and not host.startswith("["):
        return f"[{host}]"
    return host


def server_env(extra: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of parval's environment plus the plan's explicit `env`."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k in ENV_ALLOW}
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


def dropped_env(
    explicit: Mapping[str, Mapping[str, str]], environ: Mapping[str, str] | None = None
) -> dict[str, list[str]]:
    """The variables set in parval's environment that change how a server runs but do not
    reach it, each with the servers (the keys of `explicit`, their plan `env`) it misses."""
    environ = os.environ if environ is None else environ
    out: dict[str, list[str]] = {}
    for name in sorted(environ):
        if name in ENV_ALLOW or not (name.startswith(BEHAVIOUR_PREFIXES) or name in BEHAVIOUR_NAMES):
            continue
        missing = [role for role, env in explicit.items() if name not in env]
        if missing:
            out[name] = missing
    return out


def spawn(spec: LaunchSpec, directory: Path, name: str) -> ServerProcess:
    """Write the config and start the process (no shell; new session = own process group).

    The server runs with `directory` as its working directory, so every path handed to it is
    absolute (a relative one would be resolved a second time from there). A start parval
    cannot prepare (its own files: the directory, the config, the logs) raises
    StartPreparationError: parval's failure, never recorded as the server's."""
    directory = directory.absolute()
    config = dict(spec.config)
    host = str(config.setdefault("host", "127.0.0.1"))
    port = as_int(config.get("port") or free_port(connect_host(host).strip("[]")))
    config["port"] = port
    cfg_path = directory / "config.json"
    argv = [str(spec.executable), "--config", str(cfg_path), "--no-ui"]
    if spec.flagged:
        argv.append("--parallel-jobs")
    if spec.ui_management:
        argv.append("--ui-management")
    argv.extend(spec.extra_args)
    with contextlib.ExitStack() as files:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            atomic_write(cfg_path, json.dumps(config, indent=2) + "\n")
            out = files.enter_context((directory / "stdout.log").open("wb"))
            err = files.enter_context((directory / "stderr.log").open("wb"))
        except OSError as exc:
            raise StartPreparationError(f"{name}: cannot prepare the start in {directory}: {exc}") from None
        # The config as the server will look for it, from its own working directory.
        if not (directory / argv[2]).is_file():
            raise StartPreparationError(f"{name}: --config {argv[2]} does not name, from {directory}, the file written")
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=server_env(spec.env),
                cwd=str(directory),
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ServerStartError(f"{name}: cannot execute {argv[0]}: {reason}") from None
    server = ServerProcess(name, directory, argv, host, port, proc, time.monotonic())
    reaper.register(server)
    atomic_write(directory / "argv.json", json.dumps(argv) + "\n")
    return server


async def wait_ready(server: ServerProcess, deadline_s: float) -> float:
    """Poll GET /health until 200. Raises ServerStartError (with the log tail) on exit or
    deadline; on the deadline the server is killed first."""
    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=httpx.Timeout(min(2.0, max(0.1, deadline_s)))) as client:
        while True:
            rc = server.returncode()
            if rc is not None:
                raise ServerStartError(
                    f"{server.name}: server exited with status {rc} before becoming ready",
                    log_tail=server.log_tail(),
                    server_exit=rc,
                )
            try:
                with anyio.move_on_after(max(0.05, deadline_s - (time.monotonic() - t0))):
                    resp = await client.get(server.base_url + ROUTE_HEALTH)
                    if resp.status_code == 200:
                        server.ready_s = time.monotonic() - server.started
                        return server.ready_s
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > deadline_s:
                server.kill_now()
                raise ServerStartError(
                    f"{server.name}: server not ready after {deadline_s:g} s (GET /health)",
                    log_tail=server.log_tail(),
                    hint="raise timeouts.ready_s in the plan if loading is slow",
                )
            await anyio.sleep(0.03)


def server_config(
    plan_server: Mapping[str, object], model_entry: dict[str, object], models: list[dict[str, object]] | None = None
) -> dict[str, object]:
    """The server config JSON for one start (the repo's tools use the same minimal shape)."""
    cfg: dict[str, object] = {
        "host": plan_server.get("host") or "127.0.0.1",  # loopback unless the plan says otherwise
        "backend": plan_server["backend"],
        "device": plan_server["device"],
        "threads": plan_server["threads"],
        "busy_timeout_ms": plan_server["busy_timeout_ms"],
        "max_loaded_models": plan_server["max_loaded_models"],
        "lazy_load": True,
        "models": models if models is not None else [model_entry],
    }
    extra = plan_server.get("extra_config", {})
    if not isinstance(extra, Mapping):  # the plan schema makes it an object
        raise TypeError(f"server.extra_config is not an object: {extra!r}")
    cfg.update(extra)
    return cfg
