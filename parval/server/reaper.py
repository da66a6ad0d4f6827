"""No server outlives parval: the registry of live server process groups and the watchdog.

Every process group started by `parval.server.process.spawn` is remembered here until it
is reaped (`_LIVE_SERVERS`/`_LIVE_GROUPS`): an exit of parval through Python (normal,
exception, signal) kills whatever is left (`kill_all_servers`, registered with atexit).
For exits Python never sees (SIGKILL, a crash of the interpreter) a small watchdog process
holds the read end of a pipe from parval and the list of live groups; when the pipe
closes it sends SIGTERM, then SIGKILL, to every group still listed.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Protocol


class Tracked(Protocol):
    """A started server as the registry sees it: its leader process (the group's id)."""

    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int: ...


_LIVE_GROUPS: set[int] = set()
_LIVE_SERVERS: dict[int, Tracked] = {}
_LOCK = threading.Lock()


def live() -> list[Tracked]:
    """Servers started by this process and not reaped yet."""
    with _LOCK:
        return list(_LIVE_SERVERS.values())


def is_live(pgid: int) -> bool:
    """Whether the group is still registered (started and not yet forgotten)."""
    return pgid in _LIVE_GROUPS


def register(server: Tracked) -> None:
    """Remember a freshly started group here and in the watchdog."""
    with _LOCK:
        _LIVE_GROUPS.add(server.pid)
        _LIVE_SERVERS[server.pid] = server
    _watchdog_send(f"+ {server.pid}")


def forget(pgid: int) -> None:
    """The group is gone (its leader was reaped): nothing is left to kill."""
    with _LOCK:
        known = pgid in _LIVE_GROUPS
        _LIVE_GROUPS.discard(pgid)
        _LIVE_SERVERS.pop(pgid, None)
    if known:
        _watchdog_send(f"- {pgid}")


def kill_all_servers() -> None:
    """Last resort: SIGKILL every process group parval started and has not reaped."""
    for pgid in list(_LIVE_GROUPS):
        signal_group(pgid, signal.SIGKILL)
        server = _LIVE_SERVERS.get(pgid)
        if server is not None:
            try:
                server.proc.wait(timeout=1.0)
            except (subprocess.TimeoutExpired, OSError):
                pass
        forget(pgid)


def signal_group(pgid: int, sig: int) -> None:
    """Signal a server's group; never parval's own group, never init's."""
    if pgid <= 1 or pgid == os.getpgid(0):
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# -- watchdog: kills the servers when parval dies without running any Python ----------------
_WATCHDOG_GRACE_S = 2.0
_WATCHDOG_CODE = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
buf = b""
while True:
    try:
        chunk = os.read(0, 4096)
    except InterruptedError:
        continue
    except OSError:
        chunk = b""
    if not chunk:
        break
    buf += chunk
    *lines, buf = buf.split(b"\n")
    for line in lines:
        op, _, pg = line.partition(b" ")
        try:
            pgid = int(pg)
        except ValueError:
            continue
        if pgid <= 1 or pgid == os.getpgid(0):
            continue
        if op == b"+":
            groups.add(pgid)
        elif op == b"-":
            groups.discard(pgid)
def alive(pg):
    try:
        os.killpg(pg, 0)
        return True
    except OSError:
        return False
for pg in groups:
    try:
        os.killpg(pg, signal.SIGTERM)
    except OSError:
        pass
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline and any(alive(pg) for pg in groups):
    time.sleep(0.05)
for pg in groups:
    try:
        os.killpg(pg, signal.SIGKILL)
    except OSError:
        pass
"""
_watchdog: subprocess.Popen[bytes] | None = None
_watchdog_pid_owner: int | None = None


def _watchdog_send(line: str) -> None:
    global _watchdog, _watchdog_pid_owner
    if os.name != "posix":
        return
    with _LOCK:
        if _watchdog is None or _watchdog_pid_owner != os.getpid() or _watchdog.poll() is not None:
            try:
                _watchdog = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _WATCHDOG_CODE, str(_WATCHDOG_GRACE_S)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    close_fds=True,
                )
                _watchdog_pid_owner = os.getpid()
            except OSError:
                _watchdog = None
                return
            for pgid in _LIVE_GROUPS:  # a restarted watchdog learns every live group
                _write_line(_watchdog.stdin, f"+ {pgid}")
        _write_line(_watchdog.stdin, line)


def _write_line(pipe: IO[bytes] | None, line: str) -> None:
    if pipe is None:
        return
    try:
        pipe.write(line.encode() + b"\n")
        pipe.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _close_watchdog() -> None:
    global _watchdog
    wd = _watchdog
    if wd is None or _watchdog_pid_owner != os.getpid():
        return
    try:
        if wd.stdin is not None:
            wd.stdin.close()
        wd.wait(timeout=_WATCHDOG_GRACE_S + 1.0)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
    _watchdog = None


def _at_exit() -> None:
    kill_all_servers()
    _close_watchdog()


atexit.register(_at_exit)
