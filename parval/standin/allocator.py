"""The stand-in's heap kept as a server with its own workspaces keeps it: flat after the first
requests.

By default glibc raises its mmap threshold to the size of every large block freed (up to 32
MiB), so after the first request the rendering's temporaries (arrays of a few hundred KiB)
move from mmap to the heap arena of whichever worker thread served it, and each arena keeps
its own high-water mark: the process RSS steps up by a MiB or two, wave after wave, until
every arena has seen its largest request, while blocks that are still mmapped come and go
with each request (a per-wave peak that depends on when the sampler looked). One arena that
serves every block and keeps what it freed makes the heap what a real server's preallocated
workspaces are: it reaches the high-water mark of the work at the largest count in the first
waves and then stays (the allocator caching that stops). A load reserves that mark up front
(`reserve_heap`, a few MiB per slot, touched and freed), as a real server allocates its
sessions' workspaces at load, so the repeated-use waves find it resident from the first."""

from __future__ import annotations

import ctypes
import threading

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

# The largest mmap threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2): every block the
# stand-in allocates for a request comes from the heap.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
# Free heap is never handed back: the high-water mark stays resident.
TRIM_THRESHOLD_BYTES = 2**31 - 1


# Heap a slot's request can use at once (the rendering's float temporaries and the reply's
# encodings of the longest demo clip, with room to spare), reserved per slot at load.
WORK_MIB_PER_SLOT = 8
_BLOCK = 1024 * 1024
_reserved = 0  # MiB of heap reserved so far (the heap keeps it: it only grows)
_reserve_lock = threading.Lock()


def _libc() -> ctypes.CDLL | None:
    """The C library's symbols as the process already has them (no library search: that
    runs ldconfig, and the stand-in must take its signal handlers at once)."""
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def reserve_heap(slots: int) -> int:
    """Touch and free WORK_MIB_PER_SLOT MiB of heap per slot (beyond what earlier loads did);
    with `fix_heap` in force the heap keeps it resident for the requests. The MiB now
    reserved (0 without glibc's malloc)."""
    global _reserved
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc"):
        return 0
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None
    with _reserve_lock:
        want = slots * WORK_MIB_PER_SLOT
        if want <= _reserved:
            return _reserved
        blocks = [libc.malloc(_BLOCK) for _ in range(want)]
        for block in blocks:
            if block:
                ctypes.memset(block, 1, _BLOCK)
        for block in blocks:
            libc.free(block)
        _reserved = want
        return _reserved


def fix_heap() -> bool:
    """Set glibc's thresholds before the worker threads start; False where there is no glibc
    mallopt (another C library: nothing to set)."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(
        mallopt(param, value) == 1
        for param, value in (
            (M_ARENA_MAX, 1),
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
            (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
        )
    )
