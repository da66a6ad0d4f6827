"""Atomic, durable writes and content hashes of files in a run directory.

Whole files (evidence, manifest, reports, artifacts) are written atomically: temporary file
in the same directory, fsync, rename, fsync directory."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path


def dumps(data: object) -> str:
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


@functools.cache
def process_umask() -> int:
    """This process's umask, read without changing it where Linux shows it (/proc), else by
    setting and restoring it once."""
    try:
        for line in Path("/proc/self/status").read_text("ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes | str, *, sync_dir: bool = True, sync_file: bool = True) -> None:
    """Write via a temporary file in the same directory, fsync, rename, fsync the directory:
    readers see the old file or the whole new one, never a partial write. `sync_dir=False`
    leaves the directory fsync to the caller (one for many files); `sync_file=False` the
    file's own fsync too (a writer thread does both, see `ArtifactStore`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600; the file replacing it gets a new file's permissions
        # (the umask's), as a report or evidence file shared with a team should
        os.fchmod(fd, 0o666 & ~process_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if sync_file:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def write_json(path: Path, data: object) -> None:
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


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
