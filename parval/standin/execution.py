"""Executing one admitted request: real service time, deterministic output, output faults.

The executor tracks which requests of each model are executing at once, which is what the
concurrency-dependent faults key on (contaminate_3plus, intermittent_mismatch).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .config import ModelSpec
from .faults import Faults
from .inference_request import InferenceRequest
from .model_pool import COLD, LoadedPool, Session, touched_memory
from .synthesis import Rendered, identity_digest, perturb, render
from .traces import Traces

SEED_ENV = "PARVAL_STANDIN_SEED"


def rare_hit(one_in: int | None, seed: str, k: int) -> bool:
    """Does the k-th overlapped output of a server with this seed differ (one in `one_in`)?"""
    digest = hashlib.sha256(f"{seed}:{k}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % max(1, one_in or 1) == 0


@dataclass(frozen=True)
class Job:
    route: str
    spec: ModelSpec
    pool: LoadedPool
    session: Session
    slot: int
    request: InferenceRequest
    accept_ns: int


@dataclass(eq=False)
class _Running:
    key: str
    peak: int = 1
    partners: set[str] = field(default_factory=set)
    mismatch: bool = False


# What the memory_step_every fault keeps with every Nth request.
STEP_MIB = 3


class Executor:
    def __init__(self, faults: Faults, traces: Traces) -> None:
        self._faults = faults
        self._traces = traces
        self._lock = threading.Lock()
        self._running: dict[str, list[_Running]] = {}
        self._overlapping_starts = 0
        self._mismatch_fired = False
        self._leaks: list[npt.NDArray[np.uint8]] = []
        self._rendered = 0  # requests rendered (memory_step_every counts them)
        self._noise = np.random.default_rng()
        self._overlapped_outputs = 0
        # rare_contamination: which outputs differ follows the seed (PARVAL_STANDIN_SEED, passed
        # through the plan's servers.<name>.env) and the start this server is (its directory,
        # less the run's sequence suffix), so a campaign repeats exactly
        start = re.sub(r"-\d+$", "", os.path.basename(os.getcwd()))
        self._rare_seed = f"{os.environ.get(SEED_ENV, '1')}:{start}"

    def request_key(self, job: Job) -> str:
        """Identity of the request alone (what a session remembers as its history)."""
        parts: dict[str, Any] = {
            "model_sha256": job.pool.file_hash,
            "family": job.spec.family,
            "task": job.spec.task,
            "config": job.spec.config,
            "weight": job.spec.weight,
            "session_options": dict(job.spec.session_options),
            "request": job.request.identity(ignore_seed=self._faults.on("ignore_seed")),
        }
        if self._faults.on("registration_outputs"):
            parts["registration"] = {"id": job.spec.id, "path": str(job.spec.path)}
        return identity_digest(parts).hex()

    @contextmanager
    def _tracked(self, model_id: str, key: str) -> Iterator[_Running]:
        record = _Running(key)
        with self._lock:
            runs = self._running.setdefault(model_id, [])
            overlapping = bool(runs)
            runs.append(record)
            for run in runs:
                run.peak = max(run.peak, len(runs))
                if len(runs) >= 3:
                    run.partners.update(r.key for r in runs if r is not run)
            if overlapping and self._faults.on("rare_contamination"):
                self._overlapped_outputs += 1
                record.mismatch = rare_hit(
                    self._faults.value("rare_contamination"), self._rare_seed, self._overlapped_outputs
                )
            if overlapping and self._faults.on("intermittent_mismatch") and not self._mismatch_fired:
                self._overlapping_starts += 1
                if self._overlapping_starts == self._faults.value("intermittent_mismatch"):
                    record.mismatch = True
                    self._mismatch_fired = True
        try:
            yield record
        finally:
            with self._lock:
                runs.remove(record)

    def _render(self, job: Job, key: str, record: _Running) -> Rendered:
        knobs = job.pool.knobs
        digest = bytes.fromhex(key)
        if knobs.cache_sensitive:
            digest = identity_digest({"request": key, "history": job.session.history})
        elif self._faults.on("cold_warm_differ") and job.session.history == COLD:
            digest = identity_digest({"request": key, "history": COLD})
        if self._faults.on("contaminate_3plus") and record.peak >= 3 and record.partners:
            digest = identity_digest({"request": digest.hex(), "mixed": min(record.partners)})
        rendered = render(job.spec.task, digest, job.request, knobs.sample_rate)
        if self._faults.on("serial_nondeterminism"):
            rendered = perturb(rendered, self._noise, text_suffix=True)
        if record.mismatch:
            rendered = perturb(rendered, np.random.default_rng(len(key)), text_suffix=False)
        job.session.history = key
        if self._faults.on("memory_growth"):
            self._leaks.append(touched_memory(self._faults.value("memory_growth")))
        if self._faults.on("memory_growth_kib"):
            self._leaks.append(touched_memory(self._faults.value("memory_growth_kib") / 1024))
        if self._faults.on("memory_step_every"):
            with self._lock:
                self._rendered += 1
                step = self._rendered % self._faults.value("memory_step_every") == 0
            if step:
                self._leaks.append(touched_memory(STEP_MIB))
        return rendered

    def execute(
        self, job: Job, *, steps: int = 1, on_step: Callable[[Rendered, int], None] | None = None
    ) -> tuple[Rendered, float]:
        """Run the request; returns the output and the measured wall time in ms.

        Offline (`on_step` None): hold the slot for the service time, then produce the
        output. Streaming: produce the output first, then hand `steps` pieces to `on_step`
        spread over the service time (an exception from `on_step` ends the run early).
        """
        key = self.request_key(job)
        service_s = job.pool.knobs.service_seconds(job.request.text)
        start_ns = time.monotonic_ns()
        started = time.perf_counter()
        try:
            with self._tracked(job.spec.id, key) as record:
                if on_step is None:
                    time.sleep(service_s)
                    rendered = self._render(job, key, record)
                else:
                    rendered = self._render(job, key, record)
                    for index in range(steps):
                        time.sleep(service_s / steps)
                        on_step(rendered, index)
            return rendered, (time.perf_counter() - started) * 1000.0
        finally:
            self._traces.request(
                route=job.route,
                model=job.spec.id,
                accept_ns=job.accept_ns,
                start_ns=start_ns,
                end_ns=time.monotonic_ns(),
                slot=job.slot,
                text=job.request.text,
            )

    def execute_batch(self, jobs: list[Job]) -> tuple[list[Rendered], float]:
        """A native batch: one execution window serving every entry on the leased session."""
        keys = [self.request_key(job) for job in jobs]
        service_s = max(job.pool.knobs.service_seconds(job.request.text) for job in jobs)
        start_ns = time.monotonic_ns()
        started = time.perf_counter()
        with self._tracked(jobs[0].spec.id, keys[0]) as record:
            time.sleep(service_s)
            outputs = [self._render(job, key, record) for job, key in zip(jobs, keys, strict=True)]
        end_ns = time.monotonic_ns()
        for job in jobs:
            self._traces.request(
                route=job.route,
                model=job.spec.id,
                accept_ns=job.accept_ns,
                start_ns=start_ns,
                end_ns=end_ns,
                slot=job.slot,
                text=job.request.text,
            )
        return outputs, (time.perf_counter() - started) * 1000.0
