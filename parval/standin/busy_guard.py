"""The legacy runtime's per-model timed mutex (`BusyGuard`, capacity one).

Requests and management share the one lock. With a bound T > 0 a caller first fails fast
when the current holder has already run longer than T (treated as wedged), otherwise it
waits at most T for the lock; T <= 0 waits without bound.
"""

from __future__ import annotations

import threading

from .errors import ServerBusyError
from .scheduler import ManagementTicket, now_ms


class _GuardTicket:
    """Legacy management does not queue a barrier; it takes the lock when it waits."""

    def __init__(self, guard: BusyGuard, timeout_ms: int) -> None:
        self._guard = guard
        self._timeout_ms = timeout_ms
        self._held = False

    @property
    def granted(self) -> bool:
        return self._held

    def wait(self) -> None:
        self._guard._lock_for(self._timeout_ms)
        self._held = True


class BusyGuard:
    def __init__(self, model_id: str) -> None:
        self._id = model_id
        self._mutex = threading.Lock()
        self._busy_since = 0.0
        self._holder_is_request = False
        self._waiting = 0
        self._state = threading.Lock()

    def _lock_for(self, timeout_ms: int) -> None:
        with self._state:
            self._waiting += 1
        try:
            if timeout_ms <= 0:
                self._mutex.acquire()
            else:
                since = self._busy_since
                now = now_ms()
                if since > 0 and now - since > timeout_ms:
                    raise ServerBusyError(
                        f"model '{self._id}' is busy: "
                        f"current inference has run {int(now - since)} ms "
                        f"(busy_timeout_ms={timeout_ms}); the previous request has likely wedged "
                        "and cannot be cancelled"
                    )
                if not self._mutex.acquire(timeout=timeout_ms / 1000.0):
                    raise ServerBusyError(
                        f"model '{self._id}' is busy: timed out after {timeout_ms} ms waiting for the inference lock"
                    )
        finally:
            with self._state:
                self._waiting -= 1
        self._busy_since = now_ms()

    def acquire_run(self, timeout_ms: int) -> int:
        self._lock_for(timeout_ms)
        self._holder_is_request = True
        return 0

    def release_slot(self, slot: int) -> None:
        self._holder_is_request = False
        self._busy_since = 0.0
        self._mutex.release()

    def queue_management(self, timeout_ms: int, *, jump_ahead: bool = False) -> ManagementTicket:
        return _GuardTicket(self, timeout_ms)

    def try_acquire_exclusive(self) -> bool:
        if not self._mutex.acquire(blocking=False):
            return False
        self._busy_since = now_ms()
        return True

    def release_exclusive(self) -> None:
        self._busy_since = 0.0
        self._mutex.release()

    def resize(self, count: int) -> None:
        """The legacy guard always has capacity one."""

    def active_count(self) -> int:
        return 1 if self._holder_is_request else 0

    def queued_requests(self) -> int:
        with self._state:
            return self._waiting
