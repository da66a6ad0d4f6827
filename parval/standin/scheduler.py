"""Per-model FIFO slot scheduler of the parallel runtime (contract §4.1-4.4).

One queue holds requests and management waiters in enqueue order. Dispatch assigns
ownership (a slot, or the exclusive lease) to the queue head before waking anyone, so a
later caller can never take an older caller's reservation; the head blocks everything
behind it. Overrun checks are strict (`now - since > T`) and T <= 0 never overruns.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from .errors import ServerBusyError


def now_ms() -> float:
    return time.monotonic() * 1000.0


class ManagementTicket(Protocol):
    @property
    def granted(self) -> bool: ...

    def wait(self) -> None:
        """Block until the exclusive lease is held; raises ServerBusyError on expiry."""


class AdmissionGate(Protocol):
    """What the runtime needs from a model's admission control (FIFO slots or busy guard)."""

    def acquire_run(self, timeout_ms: int) -> int: ...
    def release_slot(self, slot: int) -> None: ...
    def queue_management(self, timeout_ms: int, *, jump_ahead: bool = False) -> ManagementTicket: ...
    def try_acquire_exclusive(self) -> bool: ...
    def release_exclusive(self) -> None: ...
    def resize(self, count: int) -> None: ...
    def active_count(self) -> int: ...
    def queued_requests(self) -> int: ...


@dataclass(eq=False)
class _Waiter:
    management: bool
    deadline: float | None
    granted: bool = False
    expired: bool = False
    slot: int = -1


class _Ticket:
    def __init__(self, slots: ModelSlots, waiter: _Waiter) -> None:
        self._slots = slots
        self._waiter = waiter

    @property
    def granted(self) -> bool:
        with self._slots._cond:
            return self._waiter.granted

    def wait(self) -> None:
        self._slots._wait(self._waiter)


class ModelSlots:
    """FIFO admission for one model with `count` request slots."""

    def __init__(
        self,
        model_id: str,
        count: int,
        *,
        barging: bool = False,
        overdue_suppressed: bool = False,
        serial: bool = False,
        queued_counter_stuck: bool = False,
    ) -> None:
        self._id = model_id
        self._since: list[float | None] = [None] * count
        self._exclusive = False
        self._exclusive_since = 0.0
        self._queue: deque[_Waiter] = deque()
        self._cond = threading.Condition()
        self._barging = barging
        self._overdue_suppressed = overdue_suppressed
        self._serial = serial
        self._queued_counter_stuck = queued_counter_stuck
        self._stuck = 0  # timed-out waiters the faulty accounting still counts

    # -- requests -------------------------------------------------------------------------
    def acquire_run(self, timeout_ms: int) -> int:
        with self._cond:
            now = now_ms()
            if not self._exclusive and (not self._queue or self._barging):
                slot = self._free_slot()
                if slot is not None:
                    self._since[slot] = now
                    return slot
            self._check_request_overdue(now, timeout_ms)
            waiter = _Waiter(False, now + timeout_ms if timeout_ms > 0 else None)
            self._queue.append(waiter)
            self._dispatch()
            self._wait_locked(waiter)
            return waiter.slot

    def release_slot(self, slot: int) -> None:
        with self._cond:
            if 0 <= slot < len(self._since):
                self._since[slot] = None
            self._dispatch()

    def _check_request_overdue(self, now: float, timeout_ms: int) -> None:
        if timeout_ms <= 0:
            return
        if self._exclusive:
            if now - self._exclusive_since > timeout_ms:
                raise ServerBusyError(f"model '{self._id}': exclusive operation exceeded busy_timeout_ms")
            return
        leased = [s for s in self._since if s is not None]
        if self._overdue_suppressed and any(w.management for w in self._queue):
            return  # the historical bug: a waiting manager disabled the fail-fast check
        if leased and all(now - s > timeout_ms for s in leased):
            raise ServerBusyError(f"model '{self._id}': all active slots exceeded busy_timeout_ms")

    # -- management -----------------------------------------------------------------------
    def queue_management(self, timeout_ms: int, *, jump_ahead: bool = False) -> ManagementTicket:
        with self._cond:
            now = now_ms()
            if timeout_ms > 0:
                if self._exclusive and now - self._exclusive_since > timeout_ms:
                    raise ServerBusyError(f"model '{self._id}': exclusive operation exceeded busy_timeout_ms")
                if any(s is not None and now - s > timeout_ms for s in self._since):
                    raise ServerBusyError(f"model '{self._id}': active slot exceeded busy_timeout_ms")
            waiter = _Waiter(True, now + timeout_ms if timeout_ms > 0 else None)
            if jump_ahead:
                position = 0
                while position < len(self._queue) and self._queue[position].management:
                    position += 1
                self._queue.insert(position, waiter)
            else:
                self._queue.append(waiter)
            self._dispatch()
            return _Ticket(self, waiter)

    def try_acquire_exclusive(self) -> bool:
        with self._cond:
            if self._exclusive or self._queue or any(s is not None for s in self._since):
                return False
            self._exclusive = True
            self._exclusive_since = now_ms()
            return True

    def release_exclusive(self) -> None:
        with self._cond:
            self._exclusive = False
            self._dispatch()

    def resize(self, count: int) -> None:
        """Change the slot count; only called while the exclusive lease is held."""
        with self._cond:
            self._since = [None] * count

    # -- status ---------------------------------------------------------------------------
    def active_count(self) -> int:
        with self._cond:
            return sum(s is not None for s in self._since)

    def queued_requests(self) -> int:
        with self._cond:
            return sum(not w.management for w in self._queue) + self._stuck

    # -- internals ------------------------------------------------------------------------
    def _free_slot(self) -> int | None:
        if self._serial and any(s is not None for s in self._since):
            return None
        for index, since in enumerate(self._since):
            if since is None:
                return index
        return None

    def _idle(self) -> bool:
        return not self._exclusive and all(s is None for s in self._since)

    def _dispatch(self) -> None:
        now = now_ms()
        while self._queue:
            head = self._queue[0]
            if head.deadline is not None and now >= head.deadline:
                self._queue.popleft()
                head.expired = True
                continue
            if self._exclusive:
                break
            if head.management:
                if not self._idle():
                    break
                self._queue.popleft()
                self._exclusive = True
                self._exclusive_since = now
                head.granted = True
                continue
            slot = self._free_slot()
            if slot is None:
                break
            self._queue.popleft()
            self._since[slot] = now
            head.slot = slot
            head.granted = True
        if self._barging and not self._exclusive:
            # the historical bug: spare slots go to any waiting request, skipping managers
            for waiter in list(self._queue):
                slot = self._free_slot()
                if slot is None:
                    break
                if not waiter.management:
                    self._queue.remove(waiter)
                    self._since[slot] = now
                    waiter.slot = slot
                    waiter.granted = True
        self._cond.notify_all()

    def _wait(self, waiter: _Waiter) -> None:
        with self._cond:
            self._wait_locked(waiter)

    def _wait_locked(self, waiter: _Waiter) -> None:
        while not waiter.granted:
            remaining = None if waiter.deadline is None else waiter.deadline - now_ms()
            if waiter.expired or (remaining is not None and remaining <= 0):
                if waiter in self._queue:
                    self._queue.remove(waiter)
                if self._queued_counter_stuck and not waiter.management:
                    self._stuck += 1
                self._dispatch()
                raise ServerBusyError(f"model '{self._id}': timed out waiting for a slot")
            self._cond.wait(None if remaining is None else remaining / 1000.0)
