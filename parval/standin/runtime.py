"""Model registry, request leases, lazy loading, residency limits and unload mechanics.

Both runtimes share this class; they differ in the admission gate of each model (FIFO
slots with `--parallel-jobs`, the legacy busy guard without it) and in a few rules that
the management and route modules ask `parallel` about.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from .busy_guard import BusyGuard
from .config import ModelSpec, ServerConfig
from .errors import InsufficientMemoryError, ServerBusyError, ServerError
from .faults import Faults
from .model_pool import LoadedPool, build_pool, parse_knobs, teardown_pool, touched_memory
from .scheduler import AdmissionGate, ModelSlots, now_ms
from .traces import stderr_line


@dataclass(eq=False)
class ModelEntry:
    spec: ModelSpec
    gate: AdmissionGate
    init_lock: threading.Lock = field(default_factory=threading.Lock)
    pool: LoadedPool | None = None
    loaded: bool = False  # a complete pool is published
    resident: bool = False  # counts against max_loaded_models
    loading: bool = False  # a load is building the pool right now
    capacity: int | None = None  # max_parallel_slots of the published pool
    last_used_ms: float = 0.0
    load_attempts: int = 0
    saw_two_active: bool = False
    released_ms: list[float] = field(default_factory=list)  # when leases ended (fault counter_lag_ms)

    def lagging(self, lag_ms: int) -> int:
        """Leases that ended within the last `lag_ms` (dropping older ones)."""
        cutoff = now_ms() - lag_ms
        self.released_ms = [t for t in self.released_ms if t >= cutoff]
        return len(self.released_ms)


def _available_host_mib() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20


class Runtime:
    def __init__(self, cfg: ServerConfig, faults: Faults) -> None:
        self.cfg = cfg
        self.faults = faults
        self.parallel = cfg.parallel_jobs
        self.served = 0  # inference leases granted (the crash_legacy_after fault counts them)
        self.registry_lock = threading.RLock()
        self._entries: dict[str, ModelEntry] = {}
        self._load_lock = threading.Lock()
        self.last_activity_ms = now_ms()
        # retain_after_unload: weights of unloaded pools that were never freed; and what
        # unload_keeps_mib keeps with every unload
        self.retained: list[object] = []
        # allocator_cache_mib: kept by the first unload and never grown (an allocator's cache)
        self.unload_cache: object | None = None
        for spec in cfg.models:
            self._entries[spec.id] = self.new_entry(spec)

    # -- registry -------------------------------------------------------------------------
    def new_entry(self, spec: ModelSpec) -> ModelEntry:
        gate: AdmissionGate
        if self.parallel:
            gate = ModelSlots(
                spec.id,
                spec.count,
                barging=self.faults.on("barging"),
                overdue_suppressed=self.faults.on("overdue_suppressed"),
                serial=self.faults.on("fake_concurrency"),
                queued_counter_stuck=self.faults.on("queued_counter_stuck"),
            )
        else:
            gate = BusyGuard(spec.id)
        return ModelEntry(spec, gate)

    def register(self, entry: ModelEntry) -> None:
        with self.registry_lock:
            self._entries[entry.spec.id] = entry

    def find(self, model_id: str) -> ModelEntry | None:
        with self.registry_lock:
            return self._entries.get(model_id)

    def lookup(self, model_id: str) -> ModelEntry:
        entry = self.find(model_id)
        if entry is None:
            raise ServerError(f"unknown model id: {model_id}")
        return entry

    def snapshot(self) -> list[ModelEntry]:
        with self.registry_lock:
            return list(self._entries.values())

    def _unlocked_snapshot(self) -> list[ModelEntry]:
        # residency scans must not wait for the registry lock (a manager may hold it)
        return list(self._entries.values())

    # -- leases ---------------------------------------------------------------------------
    def ceiling_ms(self, entry: ModelEntry) -> int:
        spec_value = entry.spec.busy_timeout_ms
        return spec_value if spec_value is not None else self.cfg.busy_timeout_ms

    def resolve_timeout(self, entry: ModelEntry, requested: int | None) -> int:
        ceiling = self.ceiling_ms(entry)
        if requested is None or requested <= 0:
            return ceiling
        if ceiling <= 0:
            return requested
        return min(requested, ceiling)

    @contextlib.contextmanager
    def request_lease(self, entry: ModelEntry, requested_timeout: int | None) -> Iterator[int]:
        """Hold one request slot; every exit path releases it."""
        slot = entry.gate.acquire_run(self.resolve_timeout(entry, requested_timeout))
        try:
            self.served += 1
            if not self.parallel and self.faults.on("crash_legacy_after"):
                if self.served > self.faults.value("crash_legacy_after"):
                    stderr_line(f"fatal: legacy runtime crash after {self.served - 1} requests")
                    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
                    os.abort()
            self.last_activity_ms = now_ms()
            active = entry.gate.active_count()
            if active >= 2:
                entry.saw_two_active = True
            if active >= 4 and self.faults.on("crash_at_4"):
                stderr_line("fatal: crash with 4 active requests")
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file litter
                os.abort()
            yield slot
        finally:
            entry.gate.release_slot(slot)
            if self.faults.on("counter_lag_ms"):
                entry.released_ms.append(now_ms())

    # -- loading --------------------------------------------------------------------------
    def ensure_loaded(self, entry: ModelEntry) -> LoadedPool:
        """Inside a lease: reuse the published pool or build it (one initializer)."""
        with entry.init_lock:
            pool = entry.pool
            if pool is not None:
                entry.last_used_ms = now_ms()
                return pool
            return self.load_locked(entry)

    def load_locked(self, entry: ModelEntry) -> LoadedPool:
        """Build and publish the pool; the caller holds `entry.init_lock`."""
        entry.loading = True
        try:
            guarded = self.cfg.max_loaded_models > 0 or self.cfg.min_free_memory_mb > 0
            with self._load_lock if guarded else contextlib.nullcontext():
                self._evict_for(entry)
                self._check_memory(entry)
                entry.load_attempts += 1
                if self.faults.on("memory_refused_at") and entry.spec.count >= self.faults.value("memory_refused_at"):
                    raise InsufficientMemoryError(
                        f"cannot load model '{entry.spec.id}': estimated {entry.spec.count * 2.0:.2f} GiB + 512 MiB "
                        "headroom exceeds available host memory (1.00 GiB)"
                    )
                if self.faults.on("first_load_fails") and entry.load_attempts == 1:
                    raise ServerError(f"failed to load model '{entry.spec.id}': injected first-load failure")
                pool = build_pool(entry.spec)
                entry.pool = pool
                entry.capacity = pool.knobs.capacity
                entry.resident = True
                entry.loaded = True
                entry.last_used_ms = self.last_activity_ms = now_ms()
                return pool
        finally:
            entry.loading = False

    def _evict_for(self, entry: ModelEntry) -> None:
        limit = self.cfg.max_loaded_models
        if limit <= 0:
            return
        others = sorted(
            (e for e in self._unlocked_snapshot() if e is not entry and e.resident), key=lambda e: e.last_used_ms
        )
        excess = len(others) - (limit - 1)
        for candidate in others:
            if excess <= 0:
                break
            if candidate.gate.try_acquire_exclusive():
                try:
                    self.unload(candidate)
                finally:
                    candidate.gate.release_exclusive()
                excess -= 1
        if excess > 0:
            raise ServerBusyError(
                f"cannot load model '{entry.spec.id}': max_loaded_models={limit} and every "
                "loaded model is busy; retry later"
            )

    def _check_memory(self, entry: ModelEntry) -> None:
        headroom = self.cfg.min_free_memory_mb
        if headroom <= 0:
            return
        knobs = parse_knobs(entry.spec.load_options)
        estimate_mib = knobs.model_mib + knobs.session_mib * entry.spec.count
        available = _available_host_mib()
        if estimate_mib + headroom > available:
            raise InsufficientMemoryError(
                f"cannot load model '{entry.spec.id}': estimated {estimate_mib / 1024:.2f} GiB + "
                f"{headroom} MiB headroom exceeds available host memory "
                f"({available / 1024:.2f} GiB)"
            )

    def unload(self, entry: ModelEntry) -> None:
        """Under the model's exclusive lease: clear logical state first, then tear down."""
        pool = entry.pool
        entry.loaded = False
        entry.capacity = None
        entry.pool = None
        if not self.faults.on("retiring_resident"):
            entry.resident = False
        try:
            if pool is not None and self.faults.on("retain_after_unload"):
                # logically unloaded, but the weights stay allocated: each reload adds a copy
                self.retained.append(pool.memory)
                pool.memory = pool.memory[:0]
            if pool is not None:
                teardown_pool(pool)
            if self.faults.on("unload_keeps_mib"):
                self.retained.append(touched_memory(self.faults.value("unload_keeps_mib")))
            if self.faults.on("allocator_cache_mib") and self.unload_cache is None:
                self.unload_cache = touched_memory(self.faults.value("allocator_cache_mib"))
        finally:
            entry.resident = False

    def load_eager_models(self) -> None:
        """Startup: load non-lazy models in config order, deferring those over the limit."""
        limit = self.cfg.max_loaded_models
        loaded = 0
        for entry in self.snapshot():
            if entry.spec.lazy:
                continue
            if limit > 0 and loaded >= limit:
                stderr_line(
                    f"model '{entry.spec.id}' registered but not loaded "
                    f"(max_loaded_models={limit} reached); it loads on first use"
                )
                continue
            with entry.init_lock:
                self.load_locked(entry)
            loaded += 1
        sys.stderr.flush()
