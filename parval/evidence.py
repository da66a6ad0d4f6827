"""Run directories, the append-only event log, the artifact store and atomic writes.

Format history: events.jsonl v1 = one JSON object per line with `seq`, `t` (wall clock),
`kind`. A torn last line (no trailing newline or not JSON) is discarded on read.

Durability: every event is written with one `write`, flushed and fsynced before `append`
returns (and before any listener sees it), so parval never acts on an event that is not on
disk. A crash can therefore tear at most the last line: readers skip it, and an `EventLog`
reopened on the file (`--resume`) cuts it off, recording a `torn_tail_discarded` event,
before appending. A damaged line anywhere else is corruption and is never skipped
silently (`CorruptEventLog`). Whole files (evidence, manifest, reports, artifacts) are
written atomically: temporary file in the same directory, fsync, rename, fsync directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from parval.errors import RunDirError

EVENTS = "events.jsonl"
MANIFEST = "manifest.json"
EVIDENCE = "evidence.json"
SCHEMA_VERSION = 1


class CorruptEventLog(RunDirError, ValueError):
    """events.jsonl has a damaged line before its last one: corruption, not a torn tail."""


def dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (best effort where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | str, *, sync_dir: bool = True) -> None:
    """Write via a temporary file in the same directory, fsync, rename, fsync the directory:
    readers see the old file or the whole new one, never a partial write. `sync_dir=False`
    leaves the directory fsync to the caller (one for many files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_tree(path: Path) -> str:
    """A file's sha256, or for a directory the sha256 over sorted (relative path, file hash)."""
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()


class EventLog:
    """Append-only JSON-lines log; every event is flushed and fsynced before returning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        existed = path.exists()
        discarded = _truncate_torn_tail(path) if existed else b""
        existing = read_events(path) if existed else []
        self._seq = (int(existing[-1].get("seq", len(existing) - 1)) + 1) if existing else 0
        self._fh = path.open("ab")
        if not existed:
            fsync_dir(path.parent)
        self.listeners: list[Any] = []
        self._last: dict[str, dict[str, Any]] = {}
        self._group: list[dict[str, Any]] | None = None
        if discarded:
            self.append("torn_tail_discarded", bytes=len(discarded),
                        sha256=hashlib.sha256(discarded).hexdigest(),
                        reason="the last line was incomplete (parval stopped while writing it); "
                               "it was cut off and never read as evidence")

    @property
    def seq(self) -> int:
        """The sequence number the next event gets."""
        return self._seq

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"seq": self._seq, "t": round(time.time(), 6), "kind": kind, **fields}
        self._fh.write((dumps(event) + "\n").encode("utf-8"))
        self._fh.flush()
        self._seq += 1
        self._last[kind] = event
        if self._group is not None:
            self._group.append(event)
            return event
        os.fsync(self._fh.fileno())
        for listener in self.listeners:
            listener(event)
        return event

    @contextmanager
    def group(self, store: ArtifactStore | None = None) -> Iterator[None]:
        """Group commit for the replies of one wave: events are written at once but fsynced
        together on exit (after the artifacts' directory), and only then shown to listeners.
        Nothing acts on them before that: the next wave starts after the exit."""
        if self._group is not None:
            yield
            return
        self._group = []
        if store is not None:
            store.defer_dir_sync = True
        try:
            yield
        finally:
            if store is not None:
                store.defer_dir_sync = False
                store.flush()
            os.fsync(self._fh.fileno())
            pending, self._group = self._group, None
            for event in pending:
                for listener in self.listeners:
                    listener(event)

    def last_of(self, kind: str) -> dict[str, Any] | None:
        """The last event of `kind` appended through this object (None if none)."""
        return self._last.get(kind)

    def close(self) -> None:
        self._fh.close()


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
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


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """Events in order. A torn or unparsable final line is skipped, never parsed as
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
            raise CorruptEventLog(f"{path}: line {i + 1} is not a JSON object (corrupted event log)",
                                  hint=f"`parval verify {path.parent}` lists what changed")
        yield event


def read_events(path: Path) -> list[dict[str, Any]]:
    return list(iter_events(path))


class ArtifactStore:
    """Content-addressed storage of raw server responses: artifacts/<sha256>.<ext>."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.defer_dir_sync = False
        self._dirty = False

    def put(self, data: bytes, ext: str = "bin") -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.root / f"{digest}.{ext}"
        if not target.exists():
            atomic_write(target, data, sync_dir=not self.defer_dir_sync)
            self._dirty = self.defer_dir_sync
        return digest

    def flush(self) -> None:
        """Make the renames of deferred puts durable (one directory fsync)."""
        if self._dirty:
            fsync_dir(self.root)
            self._dirty = False

    def path(self, digest: str, ext: str = "bin") -> Path:
        return self.root / f"{digest}.{ext}"


def new_run_dir(out: Path | None, plan_name: str, base: Path | None = None) -> Path:
    """A fresh run directory: `--out DIR` (must not hold a finished run) or runs/<time>-<name>."""
    if out is not None:
        if (out / EVIDENCE).exists() or (out / EVENTS).exists():
            raise RunDirError(
                f"{out}: already holds a run; parval never overwrites evidence",
                hint="choose another --out, or continue it with --resume",
            )
        if out.exists() and not out.is_dir():
            raise RunDirError(f"{out}: exists and is not a directory", hint="choose another --out")
        out.mkdir(parents=True, exist_ok=True)
        return out
    root = (base or Path.cwd()) / "runs"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        candidate = root / (f"{stamp}-{plan_name}" + (f"-{i}" if i else ""))
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError("could not create a run directory")
