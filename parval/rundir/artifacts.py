"""Content-addressed storage of raw server responses: artifacts/<sha256>.<ext>."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from parval.rundir.files import atomic_write, fsync_dir, fsync_file


class ArtifactStore:
    """Content-addressed storage of raw server responses: artifacts/<sha256>.<ext>."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.defer_dir_sync = False
        self.defer_file_sync = False
        self._dirty = False
        self._unsynced: list[Path] = []

    def put(self, data: bytes, ext: str = "bin") -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.root / f"{digest}.{ext}"
        if not target.exists():
            atomic_write(target, data, sync_dir=not self.defer_dir_sync, sync_file=not self.defer_file_sync)
            self._dirty = self._dirty or self.defer_dir_sync
            if self.defer_file_sync:
                self._unsynced.append(target)
        return digest

    def take_sync_job(self) -> Callable[[], None] | None:
        """The fsyncs deferred so far (files, then the directory), for the writer thread."""
        files, self._unsynced = self._unsynced, []
        dirty, self._dirty = self._dirty, False
        if not files and not dirty:
            return None

        def job() -> None:
            for path in files:
                fsync_file(path)
            fsync_dir(self.root)

        return job

    def flush(self) -> None:
        """Make the renames of deferred puts durable (one directory fsync)."""
        if self._dirty:
            fsync_dir(self.root)
            self._dirty = False

    def path(self, digest: str, ext: str = "bin") -> Path:
        return self.root / f"{digest}.{ext}"
