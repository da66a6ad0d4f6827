"""Shared pieces of `parval bench`: launching the stand-in through parval's own server
runner, reading its request trace, order statistics and kernel/process counters."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from parval.errors import ServerStartError
from parval.jsontypes import JsonObject
from parval.plan.load import resolve_executable
from parval.server.process import LaunchSpec, ServerProcess, spawn, wait_ready

MODEL_BYTES = b"parval bench stand-in model\n" * 64
MODEL_ID = "bench-tts"
TRACE_ENV = "PARVAL_STANDIN_TRACE"


def standin_executable() -> Path:
    exe = resolve_executable("parval-standin", Path.cwd())
    if exe is None:
        raise ServerStartError(
            "parval-standin not found on PATH or beside the interpreter",
            hint="install parval (pip install -e .) in this environment",
        )
    return exe


def model_entry(
    model_path: Path,
    *,
    slots: int | None,
    service_ms: float,
    load_ms: float = 5.0,
    capacity: int = 16,
    lazy: bool = False,
) -> JsonObject:
    entry: JsonObject = {
        "id": MODEL_ID,
        "family": "standin_tts",
        "task": "tts",
        "mode": "offline",
        "path": str(model_path),
        "lazy": lazy,
        "load_options": {
            "capacity": capacity,
            "service_ms": service_ms,
            "load_ms": load_ms,
            "model_mib": 1,
            "session_mib": 1,
        },
    }
    if slots is not None:
        entry["slots"] = slots
    return entry


def standin_config(entry: JsonObject) -> dict[str, object]:
    return {
        "host": "127.0.0.1",
        "backend": "cpu",
        "device": 0,
        "threads": 1,
        "busy_timeout_ms": 300000,
        "max_loaded_models": 0,
        "lazy_load": True,
        "models": [entry],
    }


@asynccontextmanager
async def running_standin(
    workdir: Path, name: str, entry: JsonObject, *, trace: Path | None = None, ready_s: float = 30.0
) -> AsyncIterator[ServerProcess]:
    """A fresh stand-in (flagged, 127.0.0.1, free port) started and stopped the way a
    campaign does it; it is always stopped, and killed if stopping fails."""
    env = {TRACE_ENV: str(trace)} if trace is not None else {}
    spec = LaunchSpec(standin_executable(), standin_config(entry), True, (), env)
    server = spawn(spec, workdir / name, name)
    try:
        await wait_ready(server, ready_s)
        yield server
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await server.stop(5.0)
        finally:
            if server.alive():
                server.kill_now()


def write_model(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "bench-model.bin"
    path.write_bytes(MODEL_BYTES)
    return path


class TraceReader:
    """Incremental reader of the stand-in's PARVAL_STANDIN_TRACE file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_lines(self) -> list[JsonObject]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written stays for next time
        self.offset += end
        out: list[JsonObject] = []
        for raw in data[:end].splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out


# -- statistics ------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolation percentile (q in 0..100); None for no values."""
    data = sorted(v for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: list[float]) -> float | None:
    return percentile(values, 50.0)


def rnd(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def spread_ms(stamps_s: list[float]) -> float | None:
    return (max(stamps_s) - min(stamps_s)) * 1000.0 if len(stamps_s) > 1 else None


# -- kernel and process counters -------------------------------------------------------


def tcp_listen_counters() -> dict[str, int]:
    """TcpExt ListenOverflows/ListenDrops and Tcp RetransSegs (host-wide, from /proc)."""
    out: dict[str, int] = {}
    for path, prefix, keys in (
        ("/proc/net/netstat", "TcpExt:", ("ListenOverflows", "ListenDrops")),
        ("/proc/net/snmp", "Tcp:", ("RetransSegs",)),
    ):
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            continue
        rows = [ln.split() for ln in lines if ln.startswith(prefix)]
        if len(rows) >= 2:
            table = dict(zip(rows[0][1:], rows[1][1:], strict=False))
            for key in keys:
                if key in table:
                    out[key] = int(table[key])
    return out


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in after if k in before}


def proc_status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class FileGrowthWatcher:
    """Notes (monotonic) when files matching a glob first become non-empty and when they
    next grow: the stand-in's stdout holds its 'listening' line, then its 'stopped' line.
    A stat every `period_s` in a side thread; nothing is sent to the server."""

    def __init__(self, root: Path, pattern: str, period_s: float = 0.0005) -> None:
        self.root = root
        self.pattern = pattern
        self.period_s = period_s
        self.first: dict[str, float] = {}
        self.grew: dict[str, float] = {}
        self._size: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-file-watch", daemon=True)

    def _run(self) -> None:
        known: list[Path] = []
        last_glob = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now - last_glob > 0.005:
                known = list(self.root.glob(self.pattern))
                last_glob = now
            for path in known:
                try:
                    size = os.stat(path).st_size
                except OSError:
                    continue
                key = str(path)
                t = time.monotonic()
                prev = self._size.get(key, 0)
                if size > 0 and key not in self.first:
                    self.first[key] = t
                elif size > prev and key in self.first and key not in self.grew:
                    self.grew[key] = t
                self._size[key] = size
            time.sleep(self.period_s)

    def __enter__(self) -> FileGrowthWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)
