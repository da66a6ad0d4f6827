"""Sync-behind evidence writing: the release path does not wait for fsync, yet nobody
acts on an event before it is durable, artifacts are durable before the events naming
them, and a barrier event (run_end, unit_end, ...) returns only when everything is."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_fields import EVENT_FIELDS, OneOf
from parval.rundir.events import EventLog, read_events


def declared(kind: str) -> dict[str, Any]:
    """Placeholder values for every field `kind` declares: the log refuses an event without
    them, and these tests are about durability, not content."""
    out: dict[str, Any] = {}
    for name, ftype in EVENT_FIELDS[kind].fields.items():
        if isinstance(ftype, OneOf):
            out[name] = ftype.values[0]
        elif ftype.nullable:
            out[name] = None
        else:
            out[name] = next(v for v in ("x", 0, 0.0, False, {}, []) if ftype.accepts(v))
    return out


class FsyncSpy:
    """Records, for every fsync, which file (inode) and how many bytes it then held."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, int]] = []
        self.lock = threading.Lock()
        real = os.fsync

        def fsync(fd: int) -> None:
            st = os.fstat(fd)
            real(fd)
            with self.lock:
                self.calls.append((st.st_ino, st.st_size))

        monkeypatch.setattr(os, "fsync", fsync)

    def synced(self, ino: int) -> int:
        with self.lock:
            return max((size for i, size in self.calls if i == ino), default=0)


def ends(path: Path) -> dict[int, int]:
    """seq -> byte offset where that event's line ends."""
    out, pos = {}, 0
    for line in path.read_bytes().splitlines(keepends=True):
        pos += len(line)
        out[len(out)] = pos
    return out


def test_listeners_see_only_durable_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = FsyncSpy(monkeypatch)
    path = tmp_path / "events.jsonl"
    log = EventLog(path, sync_behind=True)
    ino = os.stat(path).st_ino
    seen: list[tuple[int, int]] = []
    log.listeners.append(lambda e: seen.append((e["seq"], spy.synced(ino))))
    for i in range(50):
        kind = "request" if i % 5 else "wave"
        log.append(kind, **declared(kind), i=i)
    log.close()
    offsets = ends(path)
    assert [s for s, _ in seen] == list(range(50))  # every event, in order
    assert all(offsets[s] <= synced for s, synced in seen)


def test_a_barrier_returns_only_when_everything_is_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = FsyncSpy(monkeypatch)
    path = tmp_path / "events.jsonl"
    log = EventLog(path, sync_behind=True)
    ino = os.stat(path).st_ino
    for i in range(20):
        log.append("request", **declared("request"), i=i)
    log.append("run_end", run="r", attempt=0)
    assert spy.synced(ino) == path.stat().st_size  # run_end and all before it are on disk
    log.close()
    assert [e["kind"] for e in read_events(path)][-1] == "run_end"


def test_artifacts_are_durable_before_the_events_that_name_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = FsyncSpy(monkeypatch)
    path = tmp_path / "events.jsonl"
    log = EventLog(path, sync_behind=True)
    store = ArtifactStore(tmp_path / "artifacts")
    ino = os.stat(path).st_ino
    order: list[str] = []

    def listener(e: dict[str, Any]) -> None:
        art = store.path(e["artifact"], "json")
        order.append("ok" if any(i == art.stat().st_ino for i, _ in spy.calls) else "not synced")

    log.listeners.append(listener)
    with log.group(store):
        for i in range(8):
            digest = store.put(f'{{"reply": {i}}}'.encode(), "json")
            log.append("request", **{**declared("request"), "i": i, "artifact": digest})
    log.sync()
    assert order == ["ok"] * 8
    assert spy.synced(ino) == path.stat().st_size
    log.close()


def test_without_sync_behind_every_event_is_fsynced_inline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = FsyncSpy(monkeypatch)
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    ino = os.stat(path).st_ino
    log.append("request", **declared("request"), i=1)
    assert spy.synced(ino) == path.stat().st_size
    log.close()


def test_a_listener_error_reaches_the_appending_thread(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", sync_behind=True)

    def broken(e: dict[str, Any]) -> None:
        raise RuntimeError("listener bug")

    log.listeners.append(broken)
    log.append("request", **declared("request"), i=1)
    with pytest.raises(RuntimeError, match="listener bug"):
        log.sync()
    log.listeners.clear()
    log.close()
