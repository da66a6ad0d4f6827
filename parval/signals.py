"""Ctrl-C / SIGTERM / SIGHUP during `parval run`.

First signal: the campaign is cancelled cleanly from inside its event loop (it polls
`interrupted()`): the server of the current start is stopped within its grace period
(SIGTERM, then SIGKILL to the whole process group), the start is recorded as abandoned,
the campaign records `campaign_interrupted`, and the partial evidence is judged and
written (evidence.json marked interrupted, report.md). `parval run` then exits 130
(SIGINT), 143 (SIGTERM) or 129 (SIGHUP). The handler itself never raises into the running code (an
exception at an arbitrary bytecode could tear an event write); a timer thread kills every
server that is still alive shortly after the grace period, whatever the event loop does.

Second signal: every server group is killed at once and parval exits immediately
(`os._exit`), with the same exit code. Events already on disk stay valid (each was
fsynced when written); `parval run PLAN --resume RUN` continues the campaign.

SIGHUP (the SSH session or terminal went away) is handled like SIGINT, so a hangup leaves
a resumable run instead of killing parval mid-write; the terminal it was writing to is
gone, so stdout/stderr that were a terminal are pointed at /dev/null first (a write to a
hung-up terminal fails). Where SIGHUP is already ignored (`nohup`), it stays ignored: the
campaign goes on.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

from parval.errors import EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGTERM
from parval.server.reaper import kill_all_servers

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What signal.signal takes and returns: a function, SIG_DFL/SIG_IGN, or None (not set from Python).
SignalHandler = Callable[[int, FrameType | None], object] | int | None
# Extra time after the grace period before the timer thread SIGKILLs what is left.
KILL_MARGIN_S = 2.0


def exit_code_for(signum: int) -> int:
    return {signal.SIGTERM: EXIT_SIGTERM, signal.SIGHUP: EXIT_SIGHUP}.get(signal.Signals(signum), EXIT_SIGINT)


def _detach_from_terminal(fds: tuple[int, ...]) -> None:
    """Point `fds` (those that were a terminal) at /dev/null: after a hangup, writing the
    verdict or a progress line to the dead terminal would fail (EIO) before the evidence is
    written."""
    if not fds:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)


@dataclass
class SignalState:
    grace_s: float
    received: list[int] = field(default_factory=list)

    @property
    def signum(self) -> int | None:
        return self.received[0] if self.received else None

    @property
    def name(self) -> str | None:
        return signal.Signals(self.received[0]).name if self.received else None

    @property
    def exit_code(self) -> int | None:
        return exit_code_for(self.received[0]) if self.received else None


_current: SignalState | None = None


def current() -> SignalState | None:
    """The state of the innermost active `handle_signals` block (None outside one)."""
    return _current


def interrupted() -> int | None:
    """The first signal received inside `handle_signals`, or None."""
    return _current.signum if _current is not None else None


@contextmanager
def handle_signals(grace_s: float = 10.0) -> Iterator[SignalState]:
    """Install the SIGINT/SIGTERM/SIGHUP handlers for the block (main thread only); SIGHUP
    ignored on entry (under `nohup`) stays ignored."""
    global _current
    state = SignalState(grace_s)
    terminals = tuple(fd for fd in (1, 2) if os.isatty(fd))  # after a hangup isatty() is False

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            _detach_from_terminal(terminals)
        if state.received:
            kill_all_servers()
            os._exit(exit_code_for(state.received[0]))
        state.received.append(signum)
        timer = threading.Timer(grace_s + KILL_MARGIN_S, kill_all_servers)
        timer.daemon = True
        timer.start()

    if threading.current_thread() is not threading.main_thread():
        yield state  # signals are only delivered to the main thread; nothing to install
        return
    # Only SIGHUP keeps an ignored disposition (`nohup` asked for it). SIGINT is ignored in
    # any job a non-interactive shell starts with `&`: parval still stops cleanly on it.
    previous: dict[int, SignalHandler] = {
        s: signal.signal(s, handler) for s in HANDLED if s != signal.SIGHUP or signal.getsignal(s) is not signal.SIG_IGN
    }
    outer, _current = _current, state
    try:
        yield state
    finally:
        _current = outer
        for s, h in previous.items():
            signal.signal(s, h)
