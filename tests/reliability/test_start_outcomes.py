"""One count start (the real unit code: `Campaign.run_unit` → `count_start`) against each
stand-in fault: every way a start can end is recorded, within its deadline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from parval.judge import MID_RUN
from parval.plan.load import load_plan
from parval.rundir.events import EventLog
from parval.runners import phases
from parval.runners.campaign import Campaign
from parval.runners.start import EXIT_SETTLE_S
from parval.server.process import live_servers

from .conftest import events, fault_plan


def run_count_start(
    plan_path: Path, run_dir: Path, n: int = 1, *, campaign_s: float | None = None
) -> tuple[bool, float, list[dict[str, Any]]]:
    """Run unit count{n}-s1 alone, as the campaign does; (ok, seconds, events)."""
    plan = load_plan(plan_path)
    run_dir.mkdir(parents=True)
    log = EventLog(run_dir / "events.jsonl")
    c = Campaign(plan, run_dir, log, judging=MID_RUN)
    name = f"count{n}-s1"

    async def main() -> bool:
        return await c.run_unit(name, lambda: phases.count_start(c, name, n, 1))

    t0 = time.monotonic()
    try:
        ok = anyio.run(main)
    finally:
        log.close()
    assert not [s for s in live_servers() if str(run_dir) in str(s.directory)]
    return ok, time.monotonic() - t0, events(run_dir)


def _kinds(evs: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in evs]


def test_healthy_start_for_reference(tmp_path: Path) -> None:
    ok, took, evs = run_count_start(fault_plan(tmp_path / "p", "ignore_seed"), tmp_path / "run")
    assert ok and took < 10
    assert "run_end" in _kinds(evs) and "start_aborted" not in _kinds(evs)


@pytest.mark.parametrize(
    "fault, problem",
    [("garbage_replies", "reply is not JSON"), ("bad_base64", "invalid base64"), ("bad_wav", "not a decodable WAV")],
)
def test_malformed_outputs_are_recorded_as_malformed(tmp_path: Path, fault: str, problem: str) -> None:
    ok, took, evs = run_count_start(fault_plan(tmp_path / "p", fault), tmp_path / "run")
    reqs = [e for e in evs if e["kind"] == "request"]
    assert ok and reqs and took < 10
    for e in reqs:
        assert e["reply"]["outcome"] == "ok"  # the HTTP exchange itself succeeded...
        assert e["output"]["valid"] is False  # ...but the output is malformed
        assert problem in e["output"]["problem"]
        assert e["artifact"]  # the raw body is kept for inspection


@pytest.mark.parametrize("fault", ["hang_requests", "drop_connection"])
def test_no_answer_is_indeterminate_and_aborts_the_start(tmp_path: Path, fault: str) -> None:
    plan = fault_plan(tmp_path / "p", fault, timeouts={"request_s": 0.5})
    ok, took, evs = run_count_start(plan, tmp_path / "run")
    # Bounded: the request deadline, the wait for an exit that may be landing, then judging.
    assert not ok and took < 0.5 + EXIT_SETTLE_S + 5
    reqs = [e for e in evs if e["kind"] == "request"]
    assert reqs and all(e["reply"]["outcome"] == "indeterminate" and e["output"] is None for e in reqs)
    (unresp,) = [e for e in evs if e["kind"] == "server_unresponsive"]
    assert unresp["where"] == "cold_wave wave 0" and unresp["log_tail"]
    (aborted,) = [e for e in evs if e["kind"] == "start_aborted"]
    assert "stopped answering" in aborted["reason"] and aborted["log_tail"]
    assert _kinds(evs)[-2:] == ["run_end", "start_aborted"]


def test_per_wave_deadline(tmp_path: Path) -> None:
    plan = fault_plan(tmp_path / "p", "hang_requests", timeouts={"request_s": 60, "wave_s": 0.7, "start_s": 60})
    ok, took, evs = run_count_start(plan, tmp_path / "run")
    assert not ok and took < 0.7 + 5
    assert "wave_timeout" in _kinds(evs)
    (aborted,) = [e for e in evs if e["kind"] == "start_aborted"]
    assert "exceeded timeouts.wave_s" in aborted["reason"]


def test_per_start_deadline_records_a_timeout_with_the_log_tail(tmp_path: Path) -> None:
    plan = fault_plan(tmp_path / "p", "hang_requests", timeouts={"request_s": 60, "wave_s": 60, "start_s": 1.0})
    ok, took, evs = run_count_start(plan, tmp_path / "run")
    assert not ok and took < 1.0 + 5
    (abandoned,) = [e for e in evs if e["kind"] == "run_abandoned"]
    assert abandoned["stop"]["signal"] == "SIGTERM"
    (timeout,) = [e for e in evs if e["kind"] == "start_timeout"]
    assert "timeouts.start_s=1 reached" in timeout["reason"]
    assert timeout["log_tail"] and timeout["log_tail"] == abandoned["log_tail"]
    assert "run_end" not in _kinds(evs)  # an incomplete attempt


def test_never_ready_within_ready_deadline(tmp_path: Path) -> None:
    # 2 s, not less: a stand-in started on a starved core may not have logged a line sooner
    plan = fault_plan(tmp_path / "p", "never_ready", timeouts={"ready_s": 2.0})
    ok, took, evs = run_count_start(plan, tmp_path / "run")
    assert not ok and took < 2.0 + 5
    (failed,) = [e for e in evs if e["kind"] == "start_failed"]
    assert "not ready after 2 s" in failed["reason"] and failed["log_tail"]


def test_startup_crash(tmp_path: Path) -> None:
    ok, took, evs = run_count_start(fault_plan(tmp_path / "p", "startup_crash"), tmp_path / "run")
    assert not ok and took < 5
    (failed,) = [e for e in evs if e["kind"] == "start_failed"]
    assert "exited with status 1" in failed["reason"]
    assert "injected startup crash" in failed["log_tail"]


def test_hang_in_shutdown_is_killed_after_grace(tmp_path: Path) -> None:
    plan = fault_plan(tmp_path / "p", "hang_shutdown", timeouts={"shutdown_grace_s": 0.3})
    ok, took, evs = run_count_start(plan, tmp_path / "run")
    assert not ok and took < 10
    (end,) = [e for e in evs if e["kind"] == "run_end"]
    assert end["stop"]["killed"] is True and 0.3 <= end["stop"]["stop_s"] < 2.5
    (aborted,) = [e for e in evs if e["kind"] == "start_aborted"]
    assert "killed with SIGKILL" in aborted["reason"]


def test_crash_mid_wave_records_exit_status_and_log_tail(tmp_path: Path) -> None:
    plan = fault_plan(
        tmp_path / "p",
        "crash_at_4",
        counts=[1, 4],
        model={"load_options": {"capacity": 4, "service_ms": 40, "load_ms": 20}},
    )
    ok, took, evs = run_count_start(plan, tmp_path / "run", n=4)
    assert not ok and took < 10
    (crash,) = [e for e in evs if e["kind"] == "server_crash"]
    assert crash["exit_code"] == -6 and crash["where"] == "cold_wave wave 0"
    assert "fatal: crash with 4 active requests" in crash["log_tail"]
    (end,) = [e for e in evs if e["kind"] == "run_end"]
    assert end["stop"].get("already_exited") is True
    (aborted,) = [e for e in evs if e["kind"] == "start_aborted"]
    assert "exited with status -6" in aborted["reason"]


class _ExitingServer:
    """A server process seen exiting only after `polls` more looks (an abort under load:
    its sockets close before the exit is reaped)."""

    def __init__(self, polls: int | None) -> None:
        self.polls = polls

    def returncode(self) -> int | None:
        if self.polls is None:
            return None
        self.polls -= 1
        return -6 if self.polls < 0 else None

    async def wait_exit(self, timeout_s: float, step_s: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.returncode() is None:
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(step_s)
        return True

    def log_tail(self) -> str:
        return "fatal: abort"


def _check_alive(server: _ExitingServer) -> tuple[str, list[str]]:
    """Run Start.check_alive over one unanswered request; (abort message, event kinds)."""
    from types import SimpleNamespace

    from parval.runners.start import Start, StartAborted
    from parval.server.client import CONNECT_ERROR

    kinds: list[str] = []
    st: Any = SimpleNamespace(
        name="ref-candidate-legacy",
        unchecked=[CONNECT_ERROR],
        server=server,
        crash_recorded=False,
        attempt=0,
        settings=SimpleNamespace(request_timeout_s=20.0),
        log=SimpleNamespace(write=lambda event: kinds.append(event["kind"])),
    )
    st.record_crash = lambda where, rc: Start.record_crash(st, where, rc)
    with pytest.raises(StartAborted) as aborted:
        anyio.run(Start.check_alive, st, "ref_warm")
    return str(aborted.value), kinds


def test_a_server_exiting_just_after_its_connection_dropped_is_a_crash() -> None:
    """The exit lands a few looks after the unanswered request: a crash (M1 parity FAILs
    on it), never "stopped answering" (which would only BLOCK)."""
    message, kinds = _check_alive(_ExitingServer(polls=5))
    assert kinds == ["server_crash"] and "exited with status -6" in message


def test_a_server_that_stays_up_without_answering_is_unresponsive(monkeypatch: pytest.MonkeyPatch) -> None:
    from parval.runners import start

    monkeypatch.setattr(start, "EXIT_SETTLE_S", 0.2)
    message, kinds = _check_alive(_ExitingServer(polls=None))
    assert kinds == ["server_unresponsive"] and "stopped answering" in message
