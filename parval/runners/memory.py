"""Memory sampling side task (M5): host memory of the server process tree and GPU memory.

Host and GPU sampling each run in their own daemon thread so that a slow /proc read or a
slow NVML call never delays the other loop, nor the campaign's event loop (status poller,
HTTP clients). Samples are handed to the event loop through a queue and delivered to
`sink` from there, so `sink` and `on_guard` always run in the caller's thread.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from parval.runners.nvml import GpuDevice, open_device

_KIB_PER_MIB = 1024.0
_DRAIN_INTERVAL_S = 0.02
_MAX_ERRORS_KEPT = 20


@dataclass(frozen=True)
class MemoryConfig:
    gpu_interval_s: float = 0.010
    host_interval_s: float = 0.050
    nvml_device_index: int | None = 0  # NVML numbering; differs from the backend --device index
    guard_mib: float | None = None  # device use at/above this stops the test (BLOCKED)


class PhaseTracker:
    """Current campaign phase ('startup', 'cold_load', 'warm_wave:3', 'unload', ...).

    Read from the sampler threads, so updates are guarded by a lock.
    """

    def __init__(self, initial: str = "startup") -> None:
        self._lock = threading.Lock()
        self._current = initial
        self._transitions: list[tuple[float, str]] = [(time.monotonic(), initial)]

    def set(self, phase: str) -> None:
        with self._lock:
            if phase != self._current:
                self._current = phase
                self._transitions.append((time.monotonic(), phase))

    @property
    def current(self) -> str:
        return self._current

    def transitions(self) -> list[tuple[float, str]]:
        with self._lock:
            return list(self._transitions)


# --- host memory from /proc ------------------------------------------------------------


def _children_via_task_files(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:  # thread or process exited meanwhile
            continue
    return kids


def _ppid_map() -> dict[int, list[int]]:
    """Fallback when the kernel lacks /proc/<pid>/task/<tid>/children."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may contain spaces/parentheses: fields resume after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(int(name))
    return parents


_HAS_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _process_tree(pid: int) -> list[int]:
    parents = None if _HAS_CHILDREN_FILES else _ppid_map()
    seen: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(_children_via_task_files(p) if parents is None else parents.get(p, []))
    return seen


def _status_rss_kib(pid: int) -> tuple[float, str]:
    """(VmRSS KiB, state letter); raises OSError when the process is gone."""
    rss = 0.0  # zombies and kernel threads have no VmRSS line
    state = ""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("VmRSS:"):
                rss = float(line.split()[1])
                break
    return rss, state


def _pss_kib(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return float(line.split()[1])
    return 0.0  # no address space (zombie): nothing resident


def _host_tree_memory(pid: int) -> tuple[float, float | None, list[int], str | None]:
    try:
        root_rss, state = _status_rss_kib(pid)
    except OSError as exc:
        raise ProcessLookupError(f"process {pid} is gone") from exc
    if state == "Z":
        raise ProcessLookupError(f"process {pid} is a zombie")
    rss = root_rss
    pids = [pid]
    for child in _process_tree(pid)[1:]:
        try:
            rss += _status_rss_kib(child)[0]
        except OSError:  # exited between listing and reading
            continue
        pids.append(child)
    pss = 0.0
    pss_error: str | None = None
    for p in pids:
        try:
            pss += _pss_kib(p)
        except FileNotFoundError as exc:
            if p == pid:  # smaps_rollup absent (kernel < 4.14); a vanished child is skipped
                pss_error = f"smaps_rollup unreadable: {exc}"
                break
        except OSError as exc:  # e.g. PermissionError: a partial sum would mislead
            pss_error = f"smaps_rollup unreadable: {exc}"
            break
    return (
        rss / _KIB_PER_MIB,
        None if pss_error else pss / _KIB_PER_MIB,
        sorted(pids),
        pss_error,
    )


def host_tree_memory(pid: int) -> tuple[float, float | None, list[int]]:
    """(RSS MiB, PSS MiB or None, pids) summed over `pid` and all its descendants.

    RSS comes from /proc/<pid>/status VmRSS, PSS from /proc/<pid>/smaps_rollup (None when
    any tree member's is unreadable). Raises ProcessLookupError when `pid` itself is gone.
    """
    rss, pss, pids, _ = _host_tree_memory(pid)
    return rss, pss, pids


def _join_all(threads: list[threading.Thread], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))


# --- the sampler ---------------------------------------------------------------------


class MemorySampler:
    """Samples host memory of the `pid` tree and NVML device/process memory until cancelled.

    `gpu_opener` exists for tests (fake devices); it defaults to NVML.
    """

    def __init__(
        self,
        pid: int,
        config: MemoryConfig,
        phases: PhaseTracker,
        sink: Callable[[dict[str, Any]], None],
        on_guard: Callable[[dict[str, Any]], None] | None = None,
        *,
        gpu_opener: Callable[[int], GpuDevice | str] = open_device,
    ) -> None:
        self._pid = pid
        self._config = config
        self._phases = phases
        self._sink = sink
        self._on_guard = on_guard
        self._gpu_opener = gpu_opener
        self._queue: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._tree_pids: list[int] = [pid]  # latest host tree, reused by the GPU loop
        self._gpu_info = (
            "unavailable: no NVML device configured (nvml_device_index is None)"
            if config.nvml_device_index is None
            else "unavailable: sampler not started"
        )
        self._host_info = "proc rss+pss"
        self._host_ended: str | None = None
        self._gpu_process_matched = 0
        self._counts = {"host": 0, "gpu": 0}
        self._errors: list[str] = []
        self._error_count = 0
        self._guard_sample: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = {
                "gpu": self._gpu_info,
                "host": self._host_info,
                "gpu_interval_s": self._config.gpu_interval_s,
                "host_interval_s": self._config.host_interval_s,
                "nvml_device_index": self._config.nvml_device_index,
                "guard_mib": self._config.guard_mib,
                "samples": self._counts["host"] + self._counts["gpu"],
                "host_samples": self._counts["host"],
                "gpu_samples": self._counts["gpu"],
                "gpu_process_nonzero_samples": self._gpu_process_matched,
                "errors": self._error_count,
                "recent_errors": list(self._errors),
                "guard_stop": self._guard_sample,
            }
            if self._host_ended:
                out["host_ended"] = self._host_ended
            return out

    async def run(self) -> None:
        """Sample until cancelled; never raises except cancellation."""
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=self._host_thread, args=(stop,), name="parval-mem-host", daemon=True
            ),
            threading.Thread(
                target=self._gpu_thread, args=(stop,), name="parval-mem-gpu", daemon=True
            ),
        ]
        for th in threads:
            th.start()
        try:
            while True:
                self._drain()
                await anyio.sleep(_DRAIN_INTERVAL_S)
        finally:
            stop.set()
            # Let the threads finish their current sample so nothing taken before
            # cancellation is lost; bounded so a hung NVML call cannot hang shutdown.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_join_all, threads, 1.0)
            self._drain()

    # -- delivery (event-loop thread) --

    def _drain(self) -> None:
        while True:
            try:
                sample = self._queue.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self._counts[sample["kind"]] += 1
            self._call(self._sink, sample, "sink")
            guard = self._config.guard_mib
            if (
                guard is not None
                and self._guard_sample is None
                and sample["kind"] == "gpu"
                and sample["device_used_mib"] >= guard
            ):
                tripped = {**sample, "guard_mib": guard}
                with self._lock:
                    self._guard_sample = tripped
                if self._on_guard is not None:
                    self._call(self._on_guard, dict(tripped), "on_guard")

    def _call(
        self, fn: Callable[[dict[str, Any]], None], sample: dict[str, Any], what: str
    ) -> None:
        try:
            fn(sample)
        except Exception as exc:  # a side task must not take the campaign down
            self._error(f"{what} raised {type(exc).__name__}: {exc}")

    def _error(self, text: str) -> None:
        with self._lock:
            self._error_count += 1
            if len(self._errors) < _MAX_ERRORS_KEPT:
                self._errors.append(text)

    # -- sampling threads --

    def _every(self, interval: float, stop: threading.Event, step: Callable[[], bool]) -> None:
        """Call `step` every `interval` s until it returns False or `stop` is set.

        Missed ticks are skipped rather than bursted, so timestamps stay evenly spread.
        """
        next_t = time.monotonic()
        while not stop.is_set():
            try:
                if not step():
                    return
            except Exception as exc:
                self._error(f"{type(exc).__name__}: {exc}")
            next_t += interval
            now = time.monotonic()
            if next_t < now:
                next_t = now
            stop.wait(next_t - now)

    def _host_thread(self, stop: threading.Event) -> None:
        first = True

        def step() -> bool:
            nonlocal first
            t = time.monotonic()
            phase = self._phases.current
            try:
                rss, pss, pids, pss_error = _host_tree_memory(self._pid)
            except ProcessLookupError as exc:
                with self._lock:
                    self._host_ended = f"{exc} (t={t:.3f})"
                return False
            self._tree_pids = pids
            if first:
                first = False
                with self._lock:
                    self._host_info = (
                        "proc rss+pss" if pss_error is None else f"proc rss (pss {pss_error})"
                    )
            self._queue.put(
                {
                    "t": t,
                    "phase": phase,
                    "kind": "host",
                    "rss_mib": rss,
                    "pss_mib": pss,
                    "pids": pids,
                }
            )
            return True

        self._every(self._config.host_interval_s, stop, step)

    def _gpu_thread(self, stop: threading.Event) -> None:
        index = self._config.nvml_device_index
        if index is None:
            return
        with self._lock:
            self._gpu_info = "unavailable: NVML still initialising"
        try:
            opened = self._gpu_opener(index)  # NVML init can take long: keep it off the host loop
        except Exception as exc:
            opened = f"unavailable: {type(exc).__name__}: {exc}"
        if isinstance(opened, str):
            with self._lock:
                self._gpu_info = opened
            return
        device = opened
        with self._lock:
            self._gpu_info = device.struct

        def step() -> bool:
            t = time.monotonic()
            phase = self._phases.current
            used, total = device.memory_mib()
            pids = self._tree_pids
            proc = device.process_mib(pids)
            if proc:
                with self._lock:
                    self._gpu_process_matched += 1
            self._queue.put(
                {
                    "t": t,
                    "phase": phase,
                    "kind": "gpu",
                    "device_used_mib": used,
                    "device_total_mib": total,
                    "process_mib": proc,
                }
            )
            return True

        try:
            self._every(self._config.gpu_interval_s, stop, step)
        finally:
            device.close()
