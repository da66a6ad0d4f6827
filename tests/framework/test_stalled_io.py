"""F4.shutdown's stalled-socket case on the stand-in: a listener that waits on clients
that stopped sending mid-request fails it, after attempts with a doubled grace each; the
clean stand-in passes it on its first attempt."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import by_id, explain, run

pytestmark = pytest.mark.slow


def _stalled_check(record: dict) -> dict:  # type: ignore[type-arg]
    checks = by_id(record)["F4.shutdown"]["evidence"]["checks"]
    return next(c for c in checks if c["name"] == "stalled_socket_io")


def test_a_listener_waiting_on_stalled_io_fails_after_longer_graces(tmp_path: Path) -> None:
    _, record = run(tmp_path, faults=["stalled_io_wait"], only="F4.shutdown", probes={"stalled_io_grace_s": 0.5})
    check = _stalled_check(record)
    assert check["status"] == "FAIL", explain(record)
    assert "exited only when the client closed the stalled sockets" in check["detail"]
    assert "attempt 3 of 3" in check["detail"], check["detail"]


def test_the_clean_standin_exits_with_the_stalled_sockets_open(tmp_path: Path) -> None:
    _, record = run(tmp_path, only="F4.shutdown", probes={"stalled_io_grace_s": 0.5})
    check = _stalled_check(record)
    assert check["status"] == "PASS", explain(record)
