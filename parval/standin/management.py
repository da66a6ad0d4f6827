"""Management operations: targeted unload, registration/reconfiguration, bulk unload, idle.

Each takes the model's exclusive lease through its admission gate, so it waits behind
older queued work and is a barrier for newer work (contract §3.10, §4.3, §4.10, §4.11).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from .config import SLOTS_REQUIRE_FLAG, ConfigError, ModelSpec, SlotsError, parse_model
from .errors import InvalidRequestError, NotFoundError, ServerError
from .model_pool import capacity_message, parse_knobs
from .runtime import ModelEntry, Runtime
from .scheduler import ManagementTicket, now_ms
from .traces import stderr_line


class Management:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self._bulk_lock = threading.Lock()
        self._faults = runtime.faults

    @contextlib.contextmanager
    def _convoy(self) -> Iterator[None]:
        """The R5 regression: hold the global registry lock while waiting for a model."""
        if self._faults.on("registry_convoy"):
            with self.rt.registry_lock:
                yield
        else:
            yield

    def _barrier(self, entry: ModelEntry, timeout_ms: int) -> ManagementTicket:
        return entry.gate.queue_management(timeout_ms, jump_ahead=self._faults.on("lease_binding"))

    def _skips(self, entry: ModelEntry) -> bool:
        """The unload_skips_load fault: do not wait for a first load in progress."""
        return self._faults.on("unload_skips_load") and entry.loading and entry.pool is None

    def _unload_held(self, entry: ModelEntry) -> None:
        try:
            # unload_keeps_loaded: the unload waits and answers as usual, but the model stays
            # loaded (the reply still lists it: only /v1/models shows the difference).
            if not (self.rt.parallel and self._faults.on("unload_keeps_loaded")):
                self.rt.unload(entry)
        finally:
            entry.gate.release_exclusive()

    # -- targeted -------------------------------------------------------------------------
    def unload_one(self, model_id: str) -> dict[str, Any]:
        entry = self.rt.find(model_id)
        if entry is None:
            raise NotFoundError(f"unknown model id: {model_id}")
        with self._convoy():
            if not self._skips(entry):
                ticket = self._barrier(entry, self.rt.ceiling_ms(entry))
                ticket.wait()
                self._unload_held(entry)
        return {"id": model_id, "loaded": False}

    def load_model(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ServerError("model load request must be a JSON object")
        if not self.rt.parallel and "slots" in body:
            raise InvalidRequestError(SLOTS_REQUIRE_FLAG)
        try:
            spec = parse_model(body, Path.cwd(), lazy_default=True, parallel_jobs=self.rt.parallel, registration=True)
        except SlotsError as exc:
            raise InvalidRequestError(str(exc)) from None
        except ConfigError as exc:
            raise ServerError(str(exc)) from None
        with self.rt.registry_lock:
            entry = self.rt.find(spec.id)
            created = entry is None
            if entry is None:
                entry = self.rt.new_entry(spec)
                entry.gate.try_acquire_exclusive()  # fresh gate: always succeeds
                self.rt.register(entry)
        if not created:
            return self._reconfigure(entry, spec)
        try:
            with entry.init_lock:
                self.rt.load_locked(entry)
        finally:
            entry.gate.release_exclusive()
        return {"id": spec.id, "loaded": True, "reconfigured": False}

    def _reconfigure(self, entry: ModelEntry, spec: ModelSpec) -> dict[str, Any]:
        with self._convoy():
            self._barrier(entry, self.rt.ceiling_ms(entry)).wait()
            try:
                old = entry.spec
                new = replace(
                    spec,
                    busy_timeout_ms=old.busy_timeout_ms,
                    lazy=old.lazy,
                    default_request_options=old.default_request_options,
                )
                changed = old.identity() != new.identity()
                if changed and new.count > 1:
                    capacity = parse_knobs(new.load_options).capacity
                    if new.count > capacity:
                        # checked before anything is torn down: the old pool stays
                        raise InvalidRequestError(capacity_message(new.family, capacity))
                if changed:
                    self.rt.unload(entry)
                    entry.spec = new
                    entry.gate.resize(new.count)
                self.rt.ensure_loaded(entry)
            finally:
                entry.gate.release_exclusive()
        return {"id": spec.id, "loaded": True, "reconfigured": changed}

    # -- bulk -----------------------------------------------------------------------------
    def unload_models(self, model_ids: list[str]) -> dict[str, Any]:
        selected: list[ModelEntry] = []
        not_found: list[str] = []
        for model_id in model_ids:
            entry = self.rt.find(model_id)
            if entry is None:
                not_found.append(model_id)
            elif entry not in selected:
                selected.append(entry)
        return {"unloaded": self._bulk(selected), "not_found": not_found}

    def unload_all(self) -> dict[str, Any]:
        if self._faults.on("segv_unload_all_busy") and any(e.gate.active_count() > 0 for e in self.rt.snapshot()):
            stderr_line("fatal: segmentation fault in unload_all_models with requests running")
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.kill(os.getpid(), signal.SIGSEGV)
        return {"unloaded": self._bulk(self.rt.snapshot())}

    def _bulk(self, selected: list[ModelEntry]) -> list[str]:
        with self._convoy():
            if not self.rt.parallel:
                return self._legacy_bulk(selected)
            if self._faults.on("bulk_waits_unpublished"):
                return self._bulk_in_selection_order(selected)
            return self._bulk_ready_first(selected)

    def _legacy_bulk(self, selected: list[ModelEntry]) -> list[str]:
        """Legacy: only resident models are listed; unpublished loads are skipped."""
        unloaded: list[str] = []
        for entry in selected:
            if not entry.loaded:
                continue
            entry.gate.queue_management(0).wait()
            if entry.loaded:
                unloaded.append(entry.spec.id)
            self._unload_held(entry)
        return unloaded

    def _bulk_in_selection_order(self, selected: list[ModelEntry]) -> list[str]:
        unloaded: list[str] = []
        for entry in selected:
            if not self._skips(entry):
                entry.gate.queue_management(0).wait()
                self._unload_held(entry)
            unloaded.append(entry.spec.id)
        return unloaded

    def _bulk_ready_first(self, selected: list[ModelEntry]) -> list[str]:
        tickets: list[tuple[ModelEntry, ManagementTicket | None]] = []
        with self._bulk_lock:
            for entry in selected:
                skip = self._skips(entry)
                tickets.append((entry, None if skip else entry.gate.queue_management(0)))
        immediate = [ticket is None or ticket.granted for _, ticket in tickets]
        unloaded: list[str] = []
        for (entry, ticket), ready in zip(tickets, immediate, strict=True):
            if ready:
                if ticket is not None:
                    self._unload_held(entry)
                unloaded.append(entry.spec.id)
        for (entry, ticket), ready in zip(tickets, immediate, strict=True):
            if not ready and ticket is not None:
                ticket.wait()
                self._unload_held(entry)
                unloaded.append(entry.spec.id)
        if self._faults.on("busy_unload_errors") and not all(immediate):
            raise ServerError("bulk unload failed after waiting for in-flight work")
        return unloaded

    # -- idle retirement ------------------------------------------------------------------
    def idle_loop(self, stop: threading.Event) -> None:
        idle_ms = self.rt.cfg.idle_unload_ms
        period_s = max(1000, idle_ms // 10) / 1000.0
        while not stop.wait(period_s):
            if now_ms() - self.rt.last_activity_ms < idle_ms:
                continue
            count = 0
            for entry in self.rt.snapshot():
                if entry.resident and entry.gate.try_acquire_exclusive():
                    self._unload_held(entry)
                    count += 1
            if count:
                stderr_line(f"[server] idle {idle_ms} ms: unloaded {count} model(s)")
