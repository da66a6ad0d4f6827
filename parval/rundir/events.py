"""The append-only event log (events.jsonl).

Format history (`EVENTS_FORMAT`; `parval schema events` prints the JSON Schema of a line):
* v1: one JSON object per line with `seq`, `t` (wall clock), `kind` and the kind's fields;
  only the kinds the model gates read were declared (parval.rundir.event_fields). A log
  has no format marker.
* v2: every kind parval writes is declared (one TypedDict per kind, event_types.py), with
  the fields every writer passes, and checked when written; the first event of a log
  carries `events_format: 2`.
Every reader goes through `iter_events`: a log without a marker is format 1 and its events
are upgraded on read (event_fields.UPGRADES); a log of a newer format than this parval
reads is refused (RunDirError: upgrade parval). A torn last line (no trailing newline or
not JSON) is discarded on read.

Durability: every event is written to the file at once, flushed and fsynced before
`EventLog.write` returns (and before any listener sees it), so parval never acts on an event that is not on
disk. A crash can therefore tear at most the last line: readers skip it, and an `EventLog`
reopened on the file (`--resume`) cuts it off, recording a `torn_tail_discarded` event,
before appending. A damaged line anywhere else is corruption and is never skipped
silently (`CorruptEventLog`).

Sync-behind (`EventLog(path, sync_behind=True)`, what campaigns use): the replies and
wave events of a wave (`DEFERRABLE`) are written and flushed to the OS at once, and a
writer thread makes them durable (their artifacts first, then the log) while the next wave
runs; listeners see them only once they are durable. Every other event is a barrier:
`EventLog.write` returns only when it and everything before it are on disk, so no start is marked
complete (`run_end`, `unit_end`) and nothing is judged before its events are durable. A
killed parval loses nothing (the data is in the OS already); only a power loss can lose
the last wave's events, and then its start has no `run_end` and is redone on resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from parval.errors import RunDirError
from parval.jsonread import as_int, item
from parval.jsontypes import JsonObject
from parval.rundir.event_fields import EVENTS_FORMAT as EVENTS_FORMAT  # the format written, and the newest read
from parval.rundir.event_fields import FORMAT_FIELD, check_written, events_format, upgraded
from parval.rundir.event_types import Event, TornTailDiscardedEvent
from parval.rundir.files import dumps, fsync_dir

if TYPE_CHECKING:
    from parval.rundir.artifacts import ArtifactStore


# The events of the release path (one wave's replies and its summary) that sync-behind
# makes durable in the writer thread; every other kind is a barrier.
DEFERRABLE = frozenset({"request", "wave", "wave_repeat"})


class EventListener(Protocol):
    """Shown each event, as written to events.jsonl, once it is durable (in order; with
    sync-behind, from the writer thread)."""

    def __call__(self, event: JsonObject, /) -> None: ...


class CorruptEventLog(RunDirError, ValueError):
    """events.jsonl has a damaged line before its last one: corruption, not a torn tail."""


class _Writer:
    """The sync-behind thread: runs queued jobs (artifact fsyncs), fsyncs the log, then
    hands the now-durable events to the listeners, in order."""

    def __init__(self, fd: int, deliver: EventListener) -> None:
        self._fd = fd
        self._deliver = deliver
        self._cond = threading.Condition()
        self._jobs: list[Callable[[], None]] = []
        self._events: list[JsonObject] = []
        self._busy = False
        self._closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="parval-evidence-writer", daemon=True)
        self._thread.start()

    def submit(self, events: list[JsonObject], jobs: list[Callable[[], None]]) -> None:
        with self._cond:
            self._events.extend(events)
            self._jobs.extend(jobs)
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until everything submitted is durable and delivered; re-raise its error."""
        with self._cond:
            while (self._events or self._jobs or self._busy) and self.error is None:
                self._cond.wait()
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def close(self) -> None:
        try:
            self.drain()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._events or self._jobs or self._closed):
                    self._cond.wait()
                if self._closed and not (self._events or self._jobs):
                    return
                events, self._events = self._events, []
                jobs, self._jobs = self._jobs, []
                self._busy = True
            try:
                for job in jobs:  # artifacts before the events that name them
                    job()
                os.fsync(self._fd)
                for event in events:
                    self._deliver(event)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the appending thread
                self.error = exc
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


class EventLog:
    """Append-only JSON-lines log; every event is flushed and fsynced before returning
    (with `sync_behind`, the release-path events are made durable by a writer thread)."""

    def __init__(self, path: Path, *, sync_behind: bool = False) -> None:
        self.path = path
        existed = path.exists()
        discarded = _truncate_torn_tail(path) if existed else b""
        existing = read_events(path) if existed else []
        self._seq = (as_int(existing[-1].get("seq", len(existing) - 1)) + 1) if existing else 0
        # The first event of a new log names its format; a reopened log keeps the format of
        # its first event (an older run resumed stays format 1: it has no marker).
        self._format_due = not existing
        self._fh = path.open("ab")
        if not existed:
            fsync_dir(path.parent)
        self.listeners: list[EventListener] = []
        self._last: dict[str, JsonObject] = {}
        self._group: list[JsonObject] | None = None
        self._store: ArtifactStore | None = None
        self._writer = _Writer(self._fh.fileno(), self._notify) if sync_behind else None
        if discarded:
            self.write(
                TornTailDiscardedEvent(
                    kind="torn_tail_discarded",
                    bytes=len(discarded),
                    sha256=hashlib.sha256(discarded).hexdigest(),
                    reason="the last line was incomplete (parval stopped while writing it); "
                    "it was cut off and never read as evidence",
                )
            )

    @property
    def seq(self) -> int:
        """The sequence number the next event gets."""
        return self._seq

    def write(self, event: Event) -> JsonObject:
        """Append one event, built through its kind's TypedDict (parval/rundir/event_types.py)
        so that mypy checks its fields; returns it as recorded (with `seq` and `t`)."""
        fields = {k: v for k, v in event.items() if k != "kind"}
        return self._append(event["kind"], cast(JsonObject, fields))

    def append(self, kind: str, **fields: Any) -> JsonObject:
        """Append an event given as a kind and loose fields, checked at run time only: for
        events that are data already (tests, tools that replay a log). parval's own writers
        use `write`."""
        return self._append(kind, fields)

    def _append(self, kind: str, fields: JsonObject) -> JsonObject:
        # Kept although mypy checks every `write`: a TypedDict does not stop a None or a
        # stray type arriving through an `Any`, and the check costs microseconds.
        check_written(kind, fields)
        event: JsonObject = {"seq": self._seq, "t": round(time.time(), 6), "kind": kind, **fields}
        if self._format_due:
            event[FORMAT_FIELD] = EVENTS_FORMAT
            self._format_due = False
        self._fh.write((dumps(event) + "\n").encode("utf-8"))
        self._fh.flush()
        self._seq += 1
        self._last[kind] = event
        if self._group is not None:
            self._group.append(event)
            return event
        if self._writer is not None:
            if kind in DEFERRABLE:
                self._writer.submit([event], self._store_jobs())
                return event
            self._writer.drain()  # a barrier: everything before it is durable first
        os.fsync(self._fh.fileno())
        self._notify(event)
        return event

    def _notify(self, event: JsonObject) -> None:
        for listener in list(self.listeners):  # the writer thread may call this
            listener(event)

    def _store_jobs(self) -> list[Callable[[], None]]:
        job = self._store.take_sync_job() if self._store is not None else None
        return [job] if job is not None else []

    def sync(self) -> None:
        """Wait until every event appended so far is durable and shown to the listeners."""
        if self._writer is not None:
            self._writer.drain()

    @contextmanager
    def group(self, store: ArtifactStore | None = None) -> Iterator[None]:
        """Group commit for the replies of one wave: events are written at once but fsynced
        together on exit (after the artifacts' directory), and only then shown to listeners.
        Nothing acts on them before that: the next wave starts after the exit."""
        if self._group is not None:
            yield
            return
        self._group = []
        behind = self._writer is not None and store is not None
        if store is not None:
            store.defer_dir_sync = True
            store.defer_file_sync = behind
            if behind:
                self._store = store
        try:
            yield
        finally:
            pending, self._group = self._group, None
            if store is not None:
                store.defer_dir_sync = store.defer_file_sync = False
            if behind and self._writer is not None and all(e["kind"] in DEFERRABLE for e in pending):
                self._writer.submit(pending, self._store_jobs())
            else:
                if self._writer is not None:
                    self._writer.submit([], self._store_jobs())
                    self._writer.drain()
                if store is not None:
                    store.flush()
                os.fsync(self._fh.fileno())
                for event in pending:
                    self._notify(event)

    def last_of(self, kind: str) -> JsonObject | None:
        """The last event of `kind` appended through this object (None if none)."""
        return self._last.get(kind)

    def close(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._fh.close()


def _parse_line(line: bytes) -> JsonObject | None:
    try:
        event: object = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _clean_length(raw: bytes) -> int:
    """Length of `raw` without a torn last line (no trailing newline, or not a JSON object)."""
    keep = len(raw)
    if raw and not raw.endswith(b"\n"):
        keep = raw.rfind(b"\n") + 1
    if keep:
        start = raw.rfind(b"\n", 0, keep - 1) + 1
        last = raw[start:keep]
        if last.strip() and _parse_line(last) is None:
            keep = start
    return keep


def clean_length(path: Path) -> int:
    """How many bytes of the event log a reopening EventLog keeps (all but a torn tail)."""
    return _clean_length(path.read_bytes())


def _truncate_torn_tail(path: Path) -> bytes:
    """Cut a torn last line (no trailing newline, or not a JSON object) so that new events
    start on a clean line. Returns the bytes cut off (empty when the file was clean)."""
    raw = path.read_bytes()
    keep = _clean_length(raw)
    if keep == len(raw):
        return b""
    with path.open("r+b") as fh:
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return raw[keep:]


def _iter_lines(path: Path) -> Iterator[JsonObject]:
    """The events as recorded. A torn or unparsable final line is skipped, never parsed as
    evidence; a damaged line before it raises CorruptEventLog naming the line."""
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the text after the last newline is torn (or empty)
    for i, line in enumerate(complete):
        if not line.strip():
            continue
        event = _parse_line(line)
        if event is None:
            if i == len(complete) - 1:
                return
            raise CorruptEventLog(
                f"{path}: line {i + 1} is not a JSON object (corrupted event log)",
                hint=f"`parval verify {path.parent}` lists what changed",
            )
        yield event


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """Events in order, as this parval reads them: a log of a newer events format than
    EVENTS_FORMAT raises RunDirError (upgrade parval); the events of a format-1 log (no
    marker) are upgraded (event_fields.UPGRADES). Torn and damaged lines as `_iter_lines`."""
    log_format: int | None = None
    for event in _iter_lines(path):
        if log_format is None:
            log_format = events_format(event, str(path))
        yield upgraded(event) if log_format == 1 else event


def read_events(path: Path) -> list[dict[str, Any]]:
    return list(iter_events(path))


def campaign_shard(events: Sequence[Mapping[str, object]]) -> tuple[int, int] | None:
    """The `--shard i/n` a campaign ran with, from its first `campaign_start` event."""
    for e in events:
        if e.get("kind") == "campaign_start":
            shard = e.get("shard")
            return (as_int(item(shard, 0)), as_int(item(shard, 1))) if shard else None
    return None
