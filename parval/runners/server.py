"""A fresh server process per start: config file, own process group, logs to files,
readiness by polling /health under a deadline, SIGTERM → grace → SIGKILL of the group.

Every process group started here is remembered until it is reaped, so that an exit of
parval (normal, exception or signal) can kill whatever is left (`kill_all_servers`).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from parval.errors import ServerStartError

# Environment variables passed through to servers besides the plan's explicit `env`.
ENV_ALLOW = (
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
    "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
    "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "SYSTEMROOT", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
)
WARNING_MARKER = "--parallel-jobs enables EXPERIMENTAL"

_LIVE_GROUPS: set[int] = set()


def kill_all_servers() -> None:
    """Last resort: SIGKILL every process group parval started and has not reaped."""
    for pgid in list(_LIVE_GROUPS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _LIVE_GROUPS.discard(pgid)


atexit.register(kill_all_servers)


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
    config: dict[str, Any]
    flagged: bool
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    ui_management: bool = False


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
    stop_info: dict[str, Any] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
        return self.proc.poll() is None

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
        rc = self.proc.poll()
        if rc is not None:
            self.exit_code = rc
            _LIVE_GROUPS.discard(self.proc.pid)
        return rc

    async def stop(self, grace_s: float) -> dict[str, Any]:
        """SIGTERM the group, wait `grace_s`, then SIGKILL. Records how it ended."""
        t0 = time.monotonic()
        info: dict[str, Any] = {"signal": "SIGTERM", "graceful": False, "killed": False}
        if self.returncode() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            deadline = t0 + grace_s
            while self.returncode() is None and time.monotonic() < deadline:
                await anyio.sleep(0.02)
            if self.returncode() is None:
                _signal_group(self.proc.pid, signal.SIGKILL)
                info["killed"] = True
                with anyio.CancelScope(shield=True):
                    while self.returncode() is None:
                        await anyio.sleep(0.01)
            else:
                info["graceful"] = self.exit_code == 0
        else:
            info["signal"] = None
            info["already_exited"] = True
        # The group may hold children even after the leader exited.
        _signal_group(self.proc.pid, signal.SIGKILL)
        _LIVE_GROUPS.discard(self.proc.pid)
        info["exit_code"] = self.exit_code
        info["stop_s"] = round(time.monotonic() - t0, 4)
        self.stop_info = info
        return info

    def kill_now(self) -> None:
        _signal_group(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.returncode()
        _LIVE_GROUPS.discard(self.proc.pid)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW}
    env.update(extra)
    return env


def spawn(spec: LaunchSpec, directory: Path, name: str) -> ServerProcess:
    """Write the config and start the process (no shell; new session = own process group)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = dict(spec.config)
    host = str(config.setdefault("host", "127.0.0.1"))
    port = int(config.get("port") or free_port(host))
    config["port"] = port
    cfg_path = directory / "config.json"
    cfg_path.write_text(json.dumps(config, indent=2) + "\n")
    argv = [str(spec.executable), "--config", str(cfg_path), "--no-ui"]
    if spec.flagged:
        argv.append("--parallel-jobs")
    if spec.ui_management:
        argv.append("--ui-management")
    argv.extend(spec.extra_args)
    with (directory / "stdout.log").open("wb") as out, (directory / "stderr.log").open("wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=server_env(spec.env),
                cwd=str(directory),
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerStartError(f"{name}: cannot execute {argv[0]}: {exc.strerror or exc}") from None
    _LIVE_GROUPS.add(proc.pid)
    (directory / "argv.json").write_text(json.dumps(argv) + "\n")
    return ServerProcess(name, directory, argv, host, port, proc, time.monotonic())


async def wait_ready(server: ServerProcess, deadline_s: float) -> float:
    """Poll GET /health until 200. Raises ServerStartError (with the log tail) on exit or deadline."""
    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=httpx.Timeout(2.0)) as client:
        while True:
            rc = server.returncode()
            if rc is not None:
                raise ServerStartError(
                    f"{server.name}: server exited with status {rc} before becoming ready",
                    log_tail=server.log_tail(),
                )
            try:
                resp = await client.get(server.base_url + "/health")
                if resp.status_code == 200:
                    server.ready_s = time.monotonic() - server.started
                    return server.ready_s
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > deadline_s:
                server.kill_now()
                raise ServerStartError(
                    f"{server.name}: server not ready after {deadline_s:.0f} s (GET /health)",
                    log_tail=server.log_tail(),
                    hint="raise timeouts.ready_s in the plan if loading is slow",
                )
            await anyio.sleep(0.03)


def server_config(
    plan_server: dict[str, Any], model_entry: dict[str, Any], models: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The server config JSON for one start (the repo's tools use the same minimal shape)."""
    cfg: dict[str, Any] = {
        "host": plan_server.get("host", "127.0.0.1"),
        "backend": plan_server["backend"],
        "device": plan_server["device"],
        "threads": plan_server["threads"],
        "busy_timeout_ms": plan_server["busy_timeout_ms"],
        "max_loaded_models": plan_server["max_loaded_models"],
        "lazy_load": True,
        "models": models if models is not None else [model_entry],
    }
    cfg.update(plan_server.get("extra_config", {}))
    return cfg
