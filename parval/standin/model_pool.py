"""Loaded model pools: the model file's hash, real host memory and one session per slot.

Per-model behaviour comes from `load_options` (values arrive as strings or numbers):
capacity, service_ms, ms_per_char, load_ms, teardown_ms, model_mib, session_mib,
cache_sensitive, native_batch, sample_rate.
"""

from __future__ import annotations

import hashlib
import mmap
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .allocator import reserve_heap
from .config import ModelSpec
from .errors import ApiError, ServerError

MIB = 1024 * 1024
COLD = "cold"


class CapacityError(ApiError):
    """Unsupported slot count: 500 on a first load (the handler does not map it)."""


def capacity_message(family: str, capacity: int) -> str:
    return f"model '{family}' does not support the requested slots for this backend/task/mode (capacity={capacity})"


@dataclass(frozen=True)
class ModelKnobs:
    capacity: int = 4
    service_ms: float = 120.0
    ms_per_char: float = 0.0
    load_ms: float = 150.0
    teardown_ms: float = 0.0
    model_mib: float = 16.0
    session_mib: float = 4.0
    cache_sensitive: bool = False
    native_batch: bool = False
    sample_rate: int = 16000

    def service_seconds(self, text: str) -> float:
        return max(0.0, self.service_ms + self.ms_per_char * len(text)) / 1000.0


def _number(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ServerError(f"load option {key} must be a number, got '{raw}'") from None
    if value < 0:
        raise ServerError(f"load option {key} must be >= 0, got '{raw}'")
    return value


def _flag(options: Mapping[str, str], key: str) -> bool:
    raw = options.get(key, "false").strip().lower()
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off", ""):
        return False
    raise ServerError(f"load option {key} must be a boolean, got '{raw}'")


def parse_knobs(options: Mapping[str, str]) -> ModelKnobs:
    base = ModelKnobs()
    return ModelKnobs(
        capacity=max(1, min(16, int(_number(options, "capacity", base.capacity)))),
        service_ms=_number(options, "service_ms", base.service_ms),
        ms_per_char=_number(options, "ms_per_char", base.ms_per_char),
        load_ms=_number(options, "load_ms", base.load_ms),
        teardown_ms=_number(options, "teardown_ms", base.teardown_ms),
        model_mib=_number(options, "model_mib", base.model_mib),
        session_mib=_number(options, "session_mib", base.session_mib),
        cache_sensitive=_flag(options, "cache_sensitive"),
        native_batch=_flag(options, "native_batch"),
        sample_rate=max(1000, int(_number(options, "sample_rate", base.sample_rate))),
    )


def touched_memory(mib: float) -> npt.NDArray[np.uint8]:
    """Allocate and write every page so the memory really counts as resident.

    The pages come from their own anonymous mapping, unmapped as soon as the array is
    dropped (as a real server's large weight buffers are): heap allocations of this size
    stay cached in per-thread malloc arenas after a free, which would make a clean
    unload look like retained memory."""
    size = int(mib * MIB)
    if size == 0:
        return np.empty(0, dtype=np.uint8)
    buffer = mmap.mmap(-1, size)
    memory = np.frombuffer(buffer, dtype=np.uint8)
    memory.fill(1)
    return memory


@dataclass(eq=False)
class Session:
    index: int
    memory: npt.NDArray[np.uint8]
    # key of the previous request this session served; outputs of cache-sensitive models
    # depend on it (cold differs from warm, like reference-KV reuse)
    history: str = COLD

    @property
    def address(self) -> str:
        return f"0x{id(self):x}"


@dataclass(eq=False)
class LoadedPool:
    file_hash: str
    knobs: ModelKnobs
    memory: npt.NDArray[np.uint8]
    sessions: list[Session] = field(default_factory=list)


def hash_model_path(model_id: str, path: Path) -> str:
    """sha256 of the model file (or of a directory's files); missing or empty fails."""
    digest = hashlib.sha256()
    if path.is_file():
        files = [path]
        if path.stat().st_size == 0:
            raise ServerError(f"failed to load model '{model_id}': model file is empty: {path}")
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        if not files:
            raise ServerError(f"failed to load model '{model_id}': model directory is empty: {path}")
    else:
        raise ServerError(f"failed to load model '{model_id}': model path not found: {path}")
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode())
        with file.open("rb") as handle:
            while chunk := handle.read(MIB):
                digest.update(chunk)
    return digest.hexdigest()


def build_pool(spec: ModelSpec) -> LoadedPool:
    """Build the complete pool (primary plus one session per configured slot)."""
    knobs = parse_knobs(spec.load_options)
    if spec.count > knobs.capacity:
        raise CapacityError(capacity_message(spec.family, knobs.capacity))
    file_hash = hash_model_path(spec.id, spec.path)
    time.sleep(knobs.load_ms / 1000.0)
    memory = touched_memory(knobs.model_mib)
    sessions = [Session(i, touched_memory(knobs.session_mib)) for i in range(spec.count)]
    reserve_heap(spec.count)
    return LoadedPool(file_hash, knobs, memory, sessions)


def teardown_pool(pool: LoadedPool) -> None:
    """Destroy sessions, then weights; takes `teardown_ms` of real time."""
    time.sleep(pool.knobs.teardown_ms / 1000.0)
    for session in pool.sessions:
        session.memory = np.empty(0, dtype=np.uint8)
    pool.sessions.clear()
    pool.memory = np.empty(0, dtype=np.uint8)
