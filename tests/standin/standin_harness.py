"""Launching the stand-in server as a subprocess, the way parval launches the real binary."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

MODEL_BYTES = b"stand-in model weights v1\n" * 64
# fast defaults so tests stay quick; individual tests override what they exercise
FAST_KNOBS = {"service_ms": 40, "load_ms": 20, "model_mib": 1, "session_mib": 1}
WARNING_MARKER = "WARNING: --parallel-jobs enables EXPERIMENTAL server behavior."


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model(model_id: str, *, path: str = "model.bin", task: str = "tts", **fields: Any) -> dict[str, Any]:
    """A config model entry with fast knobs; `knobs=` merges into load_options."""
    knobs = dict(FAST_KNOBS)
    knobs.update(fields.pop("knobs", {}))
    entry: dict[str, Any] = {
        "id": model_id,
        "family": fields.pop("family", f"{model_id}_family"),
        "task": task,
        "path": path,
        "load_options": knobs,
    }
    entry.update(fields)
    return entry


def standin_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "parval.standin", *args]


class Standin:
    """One stand-in process with its config, log files and an HTTP client."""

    def __init__(
        self, workdir: Path, config: Mapping[str, Any] | None, args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> None:
        self.workdir = workdir
        self.port = int(config["port"]) if config and "port" in config else free_port()
        self.config_path = workdir / f"server-{self.port}.json"
        if config is not None:
            self.config_path.write_text(json.dumps({"port": self.port, **config}))
        self.stdout_path = workdir / f"stdout-{self.port}.txt"
        self.stderr_path = workdir / f"stderr-{self.port}.txt"
        full_env = dict(os.environ)
        full_env.pop("PARVAL_STANDIN_FAULTS", None)
        full_env.pop("AUDIOCPP_SLOT_VALIDATION_OBSERVER", None)
        full_env.update(env or {})
        argv = ["--config", str(self.config_path), *args] if config is not None else list(args)
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                standin_command(*argv), cwd=workdir, stdout=out, stderr=err, env=full_env, start_new_session=True
            )
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            timeout=20.0,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )
        self.pool = ThreadPoolExecutor(max_workers=16)

    # -- lifecycle ------------------------------------------------------------------------
    def wait_ready(self, timeout: float = 15.0) -> Standin:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stand-in exited {self.proc.returncode}: {self.stderr()}")
            try:
                if self.client.get("/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"stand-in not ready after {timeout} s: {self.stderr()}")

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.client.close()

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout: float = 5.0) -> str:
        """Wait until stderr holds `text` (a line is written after the state it reports)."""
        deadline = time.monotonic() + timeout
        while text not in (got := self.stderr()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on stderr; it ends with: {got[-500:]!r}")
            time.sleep(0.01)
        return got

    # -- HTTP -----------------------------------------------------------------------------
    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.get(path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        if body is not None:
            kwargs["json"] = body
        return self.client.post(path, **kwargs)

    def run(self, model_id: str, request: Mapping[str, Any] | None = None, **top: Any) -> httpx.Response:
        return self.post("/v1/tasks/run", {"model": model_id, "request": dict(request or {}), **top})

    def submit(self, fn: Callable[[], httpx.Response]) -> Future[Timed]:
        """Run a call in the background; the result records when it finished."""

        def timed() -> Timed:
            response = fn()
            return Timed(response, time.monotonic())

        return self.pool.submit(timed)

    def models(self) -> dict[str, dict[str, Any]]:
        data = self.get("/v1/models", timeout=5.0).json()["data"]
        return {entry["id"]: entry for entry in data}

    def wait_for(
        self, predicate: Callable[[dict[str, dict[str, Any]]], bool], timeout: float = 5.0
    ) -> dict[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            snapshot = self.models()
            if predicate(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not reached; last /v1/models: {snapshot}")
            time.sleep(0.005)


class Timed:
    def __init__(self, response: httpx.Response, finished: float) -> None:
        self.response = response
        self.finished = finished


class PeakWatcher:
    """Polls /v1/models in the background and keeps the largest counters seen."""

    def __init__(self, server: Standin, model_id: str) -> None:
        self.server = server
        self.model_id = model_id
        self.max_active = 0
        self.max_queued = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> PeakWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                entry = self.server.models()[self.model_id]
            except httpx.TransportError:
                continue
            self.max_active = max(self.max_active, entry["active_slots"])
            self.max_queued = max(self.max_queued, entry["queued_requests"])
            time.sleep(0.003)


Launch = Callable[..., Standin]
"""The `launch`/`module_launch` fixtures: start a stand-in with models, flags and faults."""


def busy(server: Standin, model_id: str, text: str, **top: Any) -> Future[Timed]:
    """A background `/v1/tasks/run` call."""
    return server.submit(lambda: server.run(model_id, {"text": text}, **top))


def run_cli(
    args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 20.0
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.pop("PARVAL_STANDIN_FAULTS", None)
    full_env.update(env or {})
    return subprocess.run(
        standin_command(*args), cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )
