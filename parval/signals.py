"""Ctrl-C / SIGTERM: stop every server parval started within the grace period, keep the
partial evidence, exit 130 / 143. A second signal kills the servers and exits at once."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from parval.errors import Interrupted
from parval.runners.server import _LIVE_GROUPS, kill_all_servers


def _terminate_then_kill(grace_s: float) -> None:
    for pgid in list(_LIVE_GROUPS):
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    timer = threading.Timer(grace_s, kill_all_servers)
    timer.daemon = True
    timer.start()


@contextmanager
def handle_signals(run_dir: Path, grace_s: float = 10.0) -> Iterator[None]:
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if received:
            kill_all_servers()
            os._exit(130 if signum == signal.SIGINT else 143)
        received.append(signum)
        _terminate_then_kill(grace_s)
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
