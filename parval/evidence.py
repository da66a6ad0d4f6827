"""Run directories, the append-only event log, the artifact store and atomic writes.

Format history: events.jsonl v1 = one JSON object per line with `seq`, `t` (wall clock),
`kind`. A torn last line (no trailing newline or not JSON) is discarded on read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EVENTS = "events.jsonl"
MANIFEST = "manifest.json"
EVIDENCE = "evidence.json"
SCHEMA_VERSION = 1


def dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write via a temporary file in the same directory, fsync, then rename."""
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
        existing = read_events(path) if path.exists() else []
        if path.exists():
            _truncate_torn_tail(path)
        self._seq = (existing[-1]["seq"] + 1) if existing else 0
        self._fh = path.open("ab")
        self.listeners: list[Any] = []

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"seq": self._seq, "t": round(time.time(), 6), "kind": kind, **fields}
        self._fh.write((dumps(event) + "\n").encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._seq += 1
        for listener in self.listeners:
            listener(event)
        return event

    def close(self) -> None:
        self._fh.close()


def _truncate_torn_tail(path: Path) -> None:
    """Cut a partial last line (a crash mid-write) so new events start on a clean line."""
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        keep = raw.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(keep)


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """Events in order; a torn or unparsable final line is skipped, never parsed as evidence."""
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the text after the last newline is torn (or empty)
    for i, line in enumerate(complete):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if i == len(complete) - 1:
                return
            raise ValueError(f"{path}: line {i + 1} is not JSON (corrupted event log)") from None
        if isinstance(event, dict):
            yield event


def read_events(path: Path) -> list[dict[str, Any]]:
    return list(iter_events(path))


class ArtifactStore:
    """Content-addressed storage of raw server responses: artifacts/<sha256>.<ext>."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def put(self, data: bytes, ext: str = "bin") -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.root / f"{digest}.{ext}"
        if not target.exists():
            atomic_write(target, data)
        return digest

    def path(self, digest: str, ext: str = "bin") -> Path:
        return self.root / f"{digest}.{ext}"


def new_run_dir(out: Path | None, plan_name: str, base: Path | None = None) -> Path:
    """A fresh run directory: `--out DIR` (must not hold a finished run) or runs/<time>-<name>."""
    if out is not None:
        if (out / EVIDENCE).exists() or (out / EVENTS).exists():
            from parval.errors import RunDirError

            raise RunDirError(
                f"{out}: already holds a run; parval never overwrites evidence",
                hint="choose another --out, or continue it with --resume",
            )
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
