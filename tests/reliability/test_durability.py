"""Durability: fsync before acting, atomic writes, torn tails never read as evidence."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parval.errors import EXIT_USAGE, RunDirError
from parval.rundir.events import CorruptEventLog, EventLog, read_events
from parval.rundir.files import atomic_write, write_json


def _events(n: int) -> list[dict[str, Any]]:
    return [{"kind": "note", "i": i, "text": "x" * (i % 7), "nested": {"a": [i, None]}} for i in range(n)]


def _write_log(path: Path, n: int) -> bytes:
    log = EventLog(path)
    for e in _events(n):
        log.append(e.pop("kind"), **e)
    log.close()
    return path.read_bytes()


def test_every_event_is_fsynced_before_anyone_acts_on_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        order.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log = EventLog(tmp_path / "events.jsonl")
    log.listeners.append(lambda e: order.append(f"listener:{e['kind']}"))
    order.clear()
    log.append("a")
    log.append("b")
    log.close()
    assert order == ["fsync", "listener:a", "fsync", "listener:b"]
    assert [e["kind"] for e in read_events(tmp_path / "events.jsonl")] == ["a", "b"]


@pytest.mark.parametrize(
    "tail",
    [
        b'{"seq": 9, "kind": "requ',  # cut mid-line
        b'{"seq":9,"t":1.0,"kind":"note","ok":true}',  # complete JSON but no newline: still torn
        b"\x00\x00\x00\x00",  # blocks allocated, never written
        b"garbage that is not json\n",  # a newline-terminated last line that is not JSON
    ],
)
def test_torn_last_line_is_discarded_and_never_parsed(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "events.jsonl"
    clean = _write_log(path, 5)
    path.write_bytes(clean + tail)
    assert [e["i"] for e in read_events(path)] == list(range(5))
    log = EventLog(path)  # reopening (a resume) cuts the tail off, then appends
    log.append("after")
    log.close()
    evs = read_events(path)
    assert [e["kind"] for e in evs] == ["note"] * 5 + ["torn_tail_discarded", "after"]
    assert evs[5]["bytes"] == len(tail)
    assert [e["seq"] for e in evs] == list(range(7))
    assert path.read_bytes().startswith(clean)
    assert tail not in path.read_bytes()


def test_damaged_line_before_the_last_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    raw = bytearray(_write_log(path, 4))
    raw[raw.index(b"\n") + 1] = ord("#")  # the first byte of line 2
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptEventLog, match="line 2") as info:
        read_events(path)
    assert isinstance(info.value, RunDirError) and info.value.exit_code == EXIT_USAGE


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_log_cut_anywhere_reads_as_a_prefix_of_what_was_written(tmp_path: Path, cut: int) -> None:
    path = tmp_path / f"events-{cut}.jsonl"
    full = _write_log(path, 12)
    written = read_events(path)
    path.write_bytes(full[: cut % (len(full) + 1)])
    got = read_events(path)
    assert got == written[: len(got)]
    # Exactly the events whose whole line (with its newline) survived.
    assert len(got) == full[: cut % (len(full) + 1)].count(b"\n")


def test_atomic_write_leaves_old_file_whole_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "evidence.json"
    write_json(target, {"v": 1})
    before = target.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write(target, json.dumps({"v": 2}))
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evidence.json"]  # no temp file left


def test_evidence_manifest_and_reports_go_through_atomic_write() -> None:
    """The writers of evidence.json, manifest.json and the reports use atomic_write."""
    import inspect

    from parval import api, judge
    from parval.report import render

    assert "write_json(run_dir / MANIFEST" in inspect.getsource(api.prepare_run_dir)
    assert "write_json(run_dir / EVIDENCE" in inspect.getsource(judge.judge_run)
    assert "atomic_write(" in inspect.getsource(render.write_reports)
