"""Servers that hang, crash, send garbage or never become ready: every campaign ends within
its deadlines with the right recorded outcome, and nothing malformed counts as a PASS.

Whole campaigns (a few seconds each). Every fault is also covered start by start, much
faster, in test_start_outcomes.py; the campaigns marked slow repeat that end to end."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from parval import api
from parval.plan.load import load_plan

from .conftest import events, fault_plan, load_evidence, per_count, statuses, wait_no_servers

COMPARISONS = ("M1.legacy_parity", "M1.cap1_parity", "M2.exact", "M2.unload_reload", "M2.serial_reuse")


def _run(plan: Path, run_dir: Path, limit_s: float) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    """The campaign in this process (the CLI path is covered elsewhere): exit code the CLI
    would give, the evidence written, the events."""
    t0 = time.monotonic()
    _, evidence = api.run_plan(load_plan(plan), out=run_dir)
    took = time.monotonic() - t0
    assert took < limit_s, f"campaign took {took:.1f} s (limit {limit_s} s)"
    assert wait_no_servers(run_dir, timeout=1.0) == []
    assert load_evidence(run_dir) == evidence
    return int(evidence["verdict"]["exit_code"]), evidence, events(run_dir)


def _no_comparison_passes_for_candidate(ev: dict[str, Any]) -> None:
    s = statuses(ev)
    for id_ in COMPARISONS:
        assert s[id_] != "PASS", (id_, s[id_])


@pytest.mark.slow
def test_never_ready_is_blocked_with_the_log_tail(tmp_path: Path, tmp_run: Path) -> None:
    # The readiness deadline leaves a busy machine time to start the interpreter and print the
    # banner before the server is killed: the log tail is what it printed by then.
    plan = fault_plan(tmp_path / "plan", "never_ready", timeouts={"ready_s": 3.0})
    rc, ev, evs = _run(plan, tmp_run, limit_s=90)
    failed = [e for e in evs if e["kind"] == "start_failed"]
    assert {e["unit"] for e in failed} >= {"ref-candidate-legacy", "ref-candidate-cap1", "count1-s1"}
    for e in failed:
        assert "not ready after 3 s" in e["reason"]
        assert "audio.cpp is optimized for CUDA" in e["log_tail"]  # the server's own stderr
    m2 = per_count(ev, 1, "M2.starts")
    assert m2["status"] == "BLOCKED" and "not ready" in m2["reason"]
    assert rc in (1, 3) and not ev["admission_ready"]
    _no_comparison_passes_for_candidate(ev)


@pytest.mark.slow
def test_startup_crash_is_recorded_with_exit_status_and_log(tmp_path: Path, tmp_run: Path) -> None:
    # The candidate exits at startup on its first start: a build that cannot start. No other
    # start of it is tried, and M2.starts FAILs at every count naming the exit and the log.
    plan = fault_plan(tmp_path / "plan", "startup_crash")
    rc, ev, evs = _run(plan, tmp_run, limit_s=40)
    failed = [e for e in evs if e["kind"] == "start_failed"]
    assert [e["unit"] for e in failed] == ["ref-candidate-legacy"]
    assert "exited with status 1 before becoming ready" in failed[0]["reason"]
    assert "injected startup crash" in failed[0]["log_tail"]
    [broken] = [e for e in evs if e["kind"] == "executable_cannot_start"]
    assert broken["role"] == "candidate" and broken["exit_code"] == 1
    assert "count1-s1" in {e["unit"] for e in evs if e["kind"] == "unit_skipped" and e.get("cannot_start")}
    m2 = per_count(ev, 1, "M2.starts")
    assert m2["status"] == "FAIL" and "injected startup crash" in m2["reason"]
    assert rc == 1 and "injected startup crash" in ev["verdict"]["line"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["hang_requests", "drop_connection"])
def test_server_that_stops_answering_aborts_the_start_as_indeterminate(
    tmp_path: Path, tmp_run: Path, fault: str
) -> None:
    plan = fault_plan(tmp_path / "plan", fault, timeouts={"request_s": 0.5, "wave_s": 5})
    rc, ev, evs = _run(plan, tmp_run, limit_s=45)
    unresponsive = [e for e in evs if e["kind"] == "server_unresponsive"]
    assert {e["run"] for e in unresponsive} >= {"ref-candidate-legacy", "count1-s1"}
    assert all(e["log_tail"] for e in unresponsive)
    aborted = [e for e in evs if e["kind"] == "start_aborted" and e["unit"] == "count1-s1"]
    assert aborted and "stopped answering" in aborted[0]["reason"] and aborted[0]["log_tail"]
    cand = [e for e in evs if e["kind"] == "request" and e["run"] == "count1-s1"]
    assert cand and all(e["reply"]["outcome"] == "indeterminate" for e in cand)
    assert all(e["output"] is None for e in cand)
    assert per_count(ev, 1, "M2.starts")["status"] == "BLOCKED"
    _no_comparison_passes_for_candidate(ev)
    assert rc in (1, 3)


@pytest.mark.parametrize(
    "fault, problem",
    [
        ("garbage_replies", "reply is not JSON"),
        pytest.param("bad_base64", "invalid base64", marks=pytest.mark.slow),
        pytest.param("bad_wav", "not a decodable WAV", marks=pytest.mark.slow),
    ],
)
def test_malformed_replies_fail_and_never_pass(tmp_path: Path, tmp_run: Path, fault: str, problem: str) -> None:
    plan = fault_plan(tmp_path / "plan", fault)
    rc, ev, evs = _run(plan, tmp_run, limit_s=40)
    cand = [e for e in evs if e["kind"] == "request" and e["run"] == "count1-s1"]
    assert cand and all(e["output"]["valid"] is False for e in cand)
    assert all(problem in e["output"]["problem"] for e in cand)
    s = statuses(ev)
    assert s["M1.legacy_parity"] in ("FAIL", "BLOCKED") and s["M2.exact"] in ("FAIL", "BLOCKED")
    exact = per_count(ev, 1, "M2.exact")
    before = exact.get("evidence", {}).get("status_before_negative_control", exact["status"])
    assert before == "FAIL"
    _no_comparison_passes_for_candidate(ev)
    assert rc == 1


@pytest.mark.slow
def test_server_hanging_in_shutdown_is_killed_and_blocks_the_start(tmp_path: Path, tmp_run: Path) -> None:
    plan = fault_plan(tmp_path / "plan", "hang_shutdown", timeouts={"shutdown_grace_s": 0.5})
    rc, ev, evs = _run(plan, tmp_run, limit_s=40)
    end = [e for e in evs if e["kind"] == "run_end" and e["run"] == "count1-s1"][0]
    assert end["stop"]["killed"] is True and end["stop"]["stop_s"] < 0.5 + 2.0
    aborted = [e for e in evs if e["kind"] == "start_aborted" and e["unit"] == "count1-s1"]
    assert aborted and "did not exit within timeouts.shutdown_grace_s" in aborted[0]["reason"]
    assert aborted[0]["log_tail"]
    m2 = per_count(ev, 1, "M2.starts")
    assert m2["status"] == "BLOCKED" and "SIGKILL" in m2["reason"]
    assert rc in (1, 3)


# Two starts at count 4, four requests at once on a stand-in that runs four (tests/plankit.py
# `fault_plan`): the crash_at_4 fault aborts each start's first concurrent wave.
CRASH: dict[str, Any] = {"counts": [1, 4], "starts": 2, "capacity": 4}


@pytest.mark.slow
def test_crash_mid_wave_fails_the_count_and_the_campaign_goes_on(tmp_path: Path, tmp_run: Path) -> None:
    plan = fault_plan(tmp_path / "plan", "crash_at_4", **CRASH)
    rc, ev, evs = _run(plan, tmp_run, limit_s=60)
    crashes = [e for e in evs if e["kind"] == "server_crash"]
    assert {e["run"] for e in crashes} == {"count4-s1", "count4-s2"}
    for c in crashes:
        assert c["exit_code"] == -6 and c["signal"] == "SIGABRT"
        assert "fatal: crash with 4 active requests" in c["log_tail"]
    ends = {e["unit"] for e in evs if e["kind"] == "unit_end"}
    assert {"count4-s1", "count4-s2", "recovery", "modes"} <= ends  # went on
    m2 = per_count(ev, 4, "M2.starts")
    assert m2["status"] == "FAIL" and "exit status -6" in m2["reason"]
    assert "fatal: crash with 4 active requests" in m2["evidence"]["log_tail"]
    assert per_count(ev, 1, "M2.starts")["status"] != "FAIL"
    assert any(f.get("kind") == "server_crash" for f in ev["failures"])
    assert rc == 1 and 4 not in ev["verdict"]["admitted_counts"]


@pytest.mark.slow
def test_stop_on_crash_stops_the_campaign(tmp_path: Path, tmp_run: Path) -> None:
    plan = fault_plan(tmp_path / "plan", "crash_at_4", stop_on_crash=True, **CRASH)
    rc, ev, evs = _run(plan, tmp_run, limit_s=60)
    kinds = [e["kind"] for e in evs]
    assert "campaign_stopped" in kinds
    begun = [e["unit"] for e in evs if e["kind"] == "unit_begin"]
    assert begun[-1] == "count4-s1" and "count4-s2" not in begun
    assert per_count(ev, 4, "M2.starts")["status"] == "FAIL"
    assert ev["run"]["interrupted"] is True and rc == 1


def test_whole_campaign_deadline(tmp_path: Path, tmp_run: Path) -> None:
    plan = fault_plan(tmp_path / "plan", "ignore_seed", timeouts={"campaign_s": 2.0})
    rc, ev, evs = _run(plan, tmp_run, limit_s=2.0 + 6.0)
    kinds = [e["kind"] for e in evs]
    assert kinds[-2:] == ["campaign_timeout", "campaign_end"] and evs[-1]["finished"] is False
    assert "timeouts.campaign_s=2" in evs[-2]["reason"]
    # The server running at the deadline was stopped and that was recorded (a fresh start
    # records run_abandoned; a probe server outside one is caught as server_leftover). A probe
    # server that was already exiting on its own (an X1 config probe rejecting `slots`) is
    # recorded as such, not signalled.
    stopped = [e for e in evs if e["kind"] in ("run_abandoned", "server_leftover")]
    assert len(stopped) == 1
    stop = stopped[0]["stop"]
    assert stop["signal"] == "SIGTERM" or (stop["signal"] is None and stop["already_exited"] is True)
    assert ev["run"]["interrupted"] is True and rc in (1, 3) and not ev["admission_ready"]
