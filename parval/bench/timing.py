"""Timed stand-ins for parval's evidence writers, and a process-exit watcher: what the
campaign bench measures its loop with."""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

from parval.jsonread import as_int
from parval.jsontypes import JsonObject
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import Event
from parval.rundir.events import EventLog


class TimedEventLog(EventLog):
    """EventLog that notes how long each append took and when it returned."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, sync_behind=True)  # as a campaign's log
        self.durations: list[float] = []
        self.kinds: list[str] = []
        self.returned: list[float] = []
        self.returned_by_seq: dict[int, float] = {}

    def write(self, event: Event) -> JsonObject:
        t0 = time.perf_counter()
        written = super().write(event)
        self.durations.append(time.perf_counter() - t0)
        self.kinds.append(event["kind"])
        self.returned.append(time.monotonic())
        self.returned_by_seq[as_int(written["seq"])] = self.returned[-1]
        return written


class TimedArtifactStore(ArtifactStore):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.durations: list[float] = []

    def put(self, data: bytes, ext: str = "bin") -> str:
        t0 = time.perf_counter()
        digest = super().put(data, ext)
        self.durations.append(time.perf_counter() - t0)
        return digest


class ExitWatcher:
    """The exact moment a process exits, from a pidfd in a side thread (Linux >= 5.3)."""

    def __init__(self, pid: int) -> None:
        self.exited: float | None = None
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._fd = None
            return
        threading.Thread(target=self._run, name="bench-exit-watch", daemon=True).start()

    def _run(self) -> None:
        assert self._fd is not None
        try:
            poller = select.poll()
            poller.register(self._fd, select.POLLIN)
            for _ in range(6000):  # bounded: at most 10 minutes
                if poller.poll(100):
                    self.exited = time.monotonic()
                    return
        finally:
            os.close(self._fd)
