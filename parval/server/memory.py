"""Memory sampling side task (M5): host memory of the server process tree and GPU memory.

Host and GPU sampling each run in their own daemon thread so that a slow /proc read or a
slow NVML call never delays the other loop, nor the campaign's event loop (status poller,
HTTP clients). Samples are handed to the event loop through a queue and delivered to
`sink` from there, so `sink` and `on_guard` always run in the caller's thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict, TypeVar

import anyio

from parval.nvml import GpuDevice, open_device
from parval.server.host_memory import tree_memory_detail

_DRAIN_INTERVAL_S = 0.02
_MAX_ERRORS_KEPT = 20


class HostSample(TypedDict):
    """One host-memory sample of the server's process tree (a memory.jsonl line)."""

    t: float
    phase: str
    kind: Literal["host"]
    rss_mib: float
    pss_mib: float | None
    pids: list[int]


class GpuSample(TypedDict):
    """One NVML sample of the device and of the server's processes on it."""

    t: float
    phase: str
    kind: Literal["gpu"]
    device_used_mib: float
    device_total_mib: float
    process_mib: float | None


MemorySample = HostSample | GpuSample


class GuardStop(GpuSample):
    """The GPU sample that tripped memory.guard_mib, with the limit it reached."""

    guard_mib: float


_Delivered = TypeVar("_Delivered", MemorySample, GuardStop)


class SamplerInfo(TypedDict):
    """How the sampler ran (run_end's `memory`)."""

    gpu: str
    host: str
    gpu_interval_s: float
    host_interval_s: float
    nvml_device_index: int | None
    guard_mib: float | None
    samples: int
    host_samples: int
    gpu_samples: int
    gpu_process_nonzero_samples: int
    errors: int
    recent_errors: list[str]
    guard_stop: GuardStop | None
    host_ended: NotRequired[str]


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
        sink: Callable[[MemorySample], None],
        on_guard: Callable[[GuardStop], None] | None = None,
        *,
        gpu_opener: Callable[[int], GpuDevice | str] | None = None,
    ) -> None:
        self._pid = pid
        self._config = config
        self._phases = phases
        self._sink = sink
        self._on_guard = on_guard
        self._gpu_opener = gpu_opener or (lambda index: open_device(index))
        self._queue: queue.SimpleQueue[MemorySample] = queue.SimpleQueue()
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
        self._guard_sample: GuardStop | None = None
        self._lock = threading.Lock()

    def info(self) -> SamplerInfo:
        with self._lock:
            out: SamplerInfo = {
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
            threading.Thread(target=self._host_thread, args=(stop,), name="parval-mem-host", daemon=True),
            threading.Thread(target=self._gpu_thread, args=(stop,), name="parval-mem-gpu", daemon=True),
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
                tripped: GuardStop = {**sample, "guard_mib": guard}
                with self._lock:
                    self._guard_sample = tripped
                if self._on_guard is not None:
                    self._call(self._on_guard, tripped.copy(), "on_guard")

    def _call(self, fn: Callable[[_Delivered], None], sample: _Delivered, what: str) -> None:
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
                rss, pss, pids, pss_error = tree_memory_detail(self._pid)
            except ProcessLookupError as exc:
                with self._lock:
                    self._host_ended = f"{exc} (t={t:.3f})"
                return False
            self._tree_pids = pids
            if first:
                first = False
                with self._lock:
                    self._host_info = "proc rss+pss" if pss_error is None else f"proc rss (pss {pss_error})"
            self._queue.put({"t": t, "phase": phase, "kind": "host", "rss_mib": rss, "pss_mib": pss, "pids": pids})
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
