"""Ctrl-C and SIGTERM: servers stopped within the grace period, partial evidence written
and marked interrupted, exit 130/143; a second Ctrl-C kills at once."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_plan

from .conftest import events, load_evidence, start_parval, wait_for_event, wait_no_servers

# One request (no variations) and a slower model: a campaign reaches its count waves fast
# and each wave lasts long enough to be interrupted in the middle.
SLOW_WAVES: dict[str, Any] = {
    "requests": {"variations": []},
    "model": {"load_options": {"capacity": 2, "service_ms": 200, "load_ms": 20}},
    "waves": {"warm": 3, "mixed": 0, "mixed_at_largest": 0, "serial_reuse": 1},
    "performance": {"enabled": False, "warm_repeats": 1, "rejection_probe": False},
}


def _finish(proc: Any, timeout: float, out: list[str] | None = None) -> tuple[int, str, float]:
    t0 = time.monotonic()
    stdout, err = proc.communicate(timeout=timeout)
    if out is not None:
        out.append(stdout)
    return proc.returncode, err, time.monotonic() - t0


@pytest.mark.slow
def test_ctrl_c_during_a_wave_stops_servers_and_writes_partial_evidence(tmp_path: Path, tmp_run: Path) -> None:
    sig, code = signal.SIGINT, 130
    plan = write_plan(tmp_path / "plan", **SLOW_WAVES)
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    cold = wait_for_event(
        tmp_run, lambda e: e.get("kind") == "wave" and e.get("run") == "count1-s1", timeout=60, proc=proc
    )
    time.sleep(0.05)  # the first warm wave of count1-s1 is now in flight (200 ms per request)
    proc.send_signal(sig)
    out: list[str] = []
    rc, err, took = _finish(proc, timeout=30, out=out)
    assert rc == code, err
    assert "Traceback" not in err and f"interrupted by {sig.name}" in err
    assert took < 5.0 + 5.0  # grace (5 s in the plan) plus judging, never a hang
    assert wait_no_servers(tmp_run, timeout=1.0) == []

    ev = load_evidence(tmp_run)
    assert ev["run"]["interrupted"] is True
    assert ev["verdict"]["exit_code"] == 3 or ev["verdict"]["exit_code"] == 1
    # stdout (-q: the verdict alone) says the verdict is of an interrupted run
    assert out[0].splitlines() == [f"(interrupted) {ev['verdict']['line']}"]
    assert (tmp_run / "report.md").exists()
    evs = events(tmp_run)
    kinds = [e["kind"] for e in evs]
    assert kinds[-2:] == ["campaign_interrupted", "campaign_end"]
    assert evs[-2]["signal"] == sig.name and evs[-2]["unit"] == "count1-s1"
    assert evs[-1]["finished"] is False
    # The interrupted start has no run_end (incomplete: a resume redoes it) but a record of
    # how its server was stopped: SIGTERM, within the grace period.
    abandoned = [e for e in evs if e["kind"] == "run_abandoned"]
    assert [e["run"] for e in abandoned] == ["count1-s1"]
    assert abandoned[0]["stop"]["signal"] == "SIGTERM" and not abandoned[0]["stop"]["killed"]
    assert not [e for e in evs if e["kind"] == "run_end" and e["run"] == "count1-s1"]
    assert not [e for e in evs if e["kind"] == "unit_end" and e["unit"] == "count1-s1"]
    # The wave in flight was not recorded as a wave: nothing half-done counts as evidence.
    assert [e["wave"] for e in evs if e["kind"] == "wave" and e["run"] == "count1-s1"] == [cold["wave"]]


def test_sigterm_exits_143_with_partial_evidence(tmp_path: Path, tmp_run: Path) -> None:
    plan = write_plan(tmp_path / "plan")
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    wait_for_event(
        tmp_run, lambda e: e.get("kind") == "request" and e.get("run") == "ref-baseline-b", timeout=60, proc=proc
    )
    proc.send_signal(signal.SIGTERM)
    rc, err, took = _finish(proc, timeout=30)
    assert rc == 143 and took < 10, err
    assert "interrupted by SIGTERM" in err and "Traceback" not in err
    assert wait_no_servers(tmp_run, timeout=1.0) == []
    ev = load_evidence(tmp_run)
    assert ev["run"]["interrupted"] is True and (tmp_run / "report.md").exists()
    evs = events(tmp_run)
    assert [e["kind"] for e in evs][-2:] == ["campaign_interrupted", "campaign_end"]
    assert evs[-2]["signal"] == "SIGTERM" and evs[-2]["unit"] == "ref-baseline-b"
    # what was completed before stays, and the run directory is consistent
    assert {e["unit"] for e in evs if e["kind"] == "unit_end"} == {"ref-baseline-a"}


def test_server_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path, tmp_run: Path) -> None:
    plan = write_plan(
        tmp_path / "plan",
        servers={"baseline": {"args": ["--fault", "hang_shutdown"]}},
        timeouts={"shutdown_grace_s": 1.0},
    )
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    wait_for_event(tmp_run, lambda e: e.get("kind") == "request", timeout=60, proc=proc)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, err, _ = _finish(proc, timeout=30)
    assert rc == 130, err
    assert time.monotonic() - t0 < 1.0 + 6.0
    assert wait_no_servers(tmp_run, timeout=1.0) == []
    stop = [e for e in events(tmp_run) if e["kind"] == "run_abandoned"][0]["stop"]
    assert stop["killed"] is True and 1.0 <= stop["stop_s"] < 3.0
    assert load_evidence(tmp_run)["run"]["interrupted"] is True


def test_second_ctrl_c_kills_at_once(tmp_path: Path, tmp_run: Path) -> None:
    plan = write_plan(
        tmp_path / "plan",
        servers={"baseline": {"args": ["--fault", "hang_shutdown"]}},
        timeouts={"shutdown_grace_s": 60},
    )
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    wait_for_event(tmp_run, lambda e: e.get("kind") == "request", timeout=60, proc=proc)
    proc.send_signal(signal.SIGINT)  # stopping now waits up to 60 s for the server...
    time.sleep(0.5)
    assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)  # ...unless the user insists
    rc, err, _ = _finish(proc, timeout=10)
    assert rc == 130, err
    assert time.monotonic() - t0 < 2.0
    assert wait_no_servers(tmp_run, timeout=2.0) == []


def test_ctrl_c_while_a_server_is_starting(tmp_path: Path, tmp_run: Path) -> None:
    plan = write_plan(
        tmp_path / "plan", servers={"baseline": {"args": ["--fault", "never_ready"]}}, timeouts={"ready_s": 60}
    )
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    wait_for_event(tmp_run, lambda e: e.get("kind") == "run_start", timeout=60, proc=proc)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    rc, err, took = _finish(proc, timeout=30)
    assert rc == 130 and took < 8.0, err
    assert wait_no_servers(tmp_run, timeout=1.0) == []
    assert load_evidence(tmp_run)["run"]["interrupted"] is True


@pytest.mark.slow
def test_no_server_outlives_an_internal_error(tmp_path: Path, tmp_run: Path) -> None:
    """A bug in parval mid-start (exit 4): the server is still stopped on the way out."""
    import subprocess
    import sys

    plan = write_plan(tmp_path / "plan")
    code = (
        "from parval.runners import phases\n"
        "async def boom(*a, **k):\n    raise RuntimeError('a bug in parval')\n"
        "phases.wave_ordered = boom\n"
        "from parval.cli import main\nmain()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", str(plan), "--out", str(tmp_run), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 4, proc.stderr
    assert "internal error: RuntimeError: a bug in parval" in proc.stderr
    assert wait_no_servers(tmp_run, timeout=1.0) == []
    end = [e for e in events(tmp_run) if e["kind"] == "run_end"][-1]
    assert end["run"] == "count1-s1" and end["stop"]["signal"] == "SIGTERM"
