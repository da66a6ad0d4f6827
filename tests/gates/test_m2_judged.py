"""Pins M2's verdicts at one count: each judge's branches (PASS, FAIL, BLOCKED, PENDING,
UNSUPPORTED), their exact reason text and evidence, and the helpers M3, M6 and Q5 reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.gates.m2_concurrency import (
    JUDGES,
    active_violations,
    client_overlap,
    counters_seen,
    drain_violations,
    grouped,
    in_flight_polls,
    judge_m2,
    not_active,
    serial_despite_overlap,
    unload_observed,
    unload_violations,
)
from parval.status import Result, Status
from tests.gates.m_events import (
    COUNTERLESS_DRAIN,
    UNLOADED,
    Events,
    baseline_refs,
    counterless_status,
    counters_status,
    full_start,
    in_flight,
    plan,
    set_aside_attempt,
    tts_body,
)

RUNS = ("count2-s1", "count2-s2", "count2-s3")
ALL_RUNS = "count2-s1, count2-s2, count2-s3"
# What one start at count 2 of plan() records: 7 concurrent waves and a serial one.
CONCURRENT = 21
ALL_WAVES = 24

SERIAL_AT_ONE = {**counters_status(2), "max_active": 1, "max_active_loaded": 1}
HELD = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
STAYED = {**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 9}


def recorded(
    tmp_path: Path,
    plan_: dict[str, Any] | None = None,
    *,
    runs: tuple[str, ...] = RUNS,
    aside: dict[str, Any] | None = None,
    **kw: Any,
) -> tuple[Events, dict[str, Any]]:
    """Baseline references and whole count-2 starts; `aside`: an abandoned attempt of
    count2-s1 recorded first with these full_start arguments."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan_ if plan_ is not None else plan()
    if aside is not None:
        set_aside_attempt(ev, "count2-s1", 2, p, **aside)
    for run in runs:
        full_start(ev, run, 2, p, **kw)
    return ev, p


def judged(ev: Events, p: dict[str, Any], id_: str) -> Result:
    return JUDGES[id_](ev.context(p), 2)


def waves_of(ev: Events, run: str | None = None, phase: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in ev.events
        if e["kind"] == "wave" and run in (None, e["run"]) and phase in (None, e["phase"]) and e["attempt"] == 0
    ]


def drop(ev: Events, kind: str, run: str, **match: Any) -> None:
    """Remove the first event of `kind` of `run` whose fields equal `match`."""
    for i, e in enumerate(ev.events):
        if e["kind"] == kind and e.get("run") == run and all(e.get(k) == v for k, v in match.items()):
            del ev.events[i]
            return
    raise AssertionError(f"no {kind} {match} in {run}")


def reply_as(ev: Events, body: dict[str, Any], run: str, phase: str) -> None:
    """Give every `phase` reply of `run` this stored body instead."""
    spare = ev.request(run, phase, 0, "base", body)
    ev.events.pop()
    for e in ev.events:
        if e["kind"] == "request" and e["run"] == run and e["phase"] == phase:
            e.update(output=spare["output"], artifact=spare["artifact"])


# --- helpers read by M3, M6 and Q5 ----------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "seen"),
    [
        ([{"fields_present": True, "polls": 0}], "present"),
        ([{"max_active": 0, "polls": 0}], "present"),  # an older record: a counter was read
        ([{"fields_present": False, "max_active": 2, "polls": 3}], "absent"),
        ([{"polls": 3, "poll_errors": 2}], "absent"),
        ([{"polls": 3, "poll_errors": 3}], "no_answer"),
        ([{"polls": 3}], "absent"),
        ([{"polls": 1}], "absent"),  # one answered poll, no errors recorded
        ([None], "no_answer"),
        ([{"polls": 3}, None], "absent"),
        ([{"polls": 1, "poll_errors": 1}, {"polls": 2, "fields_present": True}], "present"),
    ],
)
def test_counters_seen_reads_what_the_poller_got(statuses: list[Any], seen: str) -> None:
    assert counters_seen([{"status": s} for s in statuses]) == seen


def _req(t_send: float, t_done: float, retry: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"t_send": t_send, "t_done": t_done}
    if retry is not None:
        r["retry"] = retry
    return r


@pytest.mark.parametrize(
    ("reqs", "overlapped"),
    [
        ([], False),
        ([_req(0, 1)], False),
        ([_req(0, 1), _req(0.5, 1.5)], True),
        ([_req(0, 1), _req(1, 2)], False),  # the last send at the first reply: not together
        ([_req(0, 1), _req(0.5, 2, retry=1)], False),  # attempts are judged apart
        ([_req(0, 1), _req(2, 3), _req(0, 1, retry=1), _req(0.5, 1, retry=1)], True),
        ([_req(0, 1, retry=0), _req(0.5, 1)], True),  # no retry recorded: the first attempt
    ],
)
def test_client_overlap_needs_every_send_before_the_first_reply(reqs: list[Any], overlapped: bool) -> None:
    assert client_overlap(reqs) is overlapped


@pytest.mark.parametrize(
    ("wave", "polls"),
    [
        ({}, 0),
        ({"all_in_flight": None}, 0),
        ({"all_in_flight": {"polls": None}}, 0),
        ({"all_in_flight": {"polls": 7}}, 7),
    ],
)
def test_in_flight_polls(wave: dict[str, Any], polls: int) -> None:
    assert in_flight_polls(wave) == polls


def _wave(phase: str, wave: int, loaded: int | None, *, mode: str = "together", **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "wave": wave, "mode": mode, "attempt": 4, "status": {"max_active_loaded": loaded, **extra}}


def test_not_active_lists_each_concurrent_wave_no_attempt_of_which_held_n() -> None:
    waves = [
        {
            **_wave("cold_wave", 0, 1, max_active=2, fields_present=True),
            "all_in_flight": {"polls": 6, "max_active": 1, "ms": 3.5},
        },
        {**_wave("cold_wave", 0, None), "status": None},
        _wave("warm_wave", 1, 2),  # held n once: fine
        {**_wave("warm_wave", 2, None), "status": {"polls": 3, "poll_errors": 0}},
        _wave("serial_reuse", 0, 0, mode="serial"),  # serial waves are not concurrent
    ]
    reqs = [
        {"phase": "cold_wave", "wave": 0, "t_send": 0.0, "t_done": 1.0},
        {"phase": "cold_wave", "wave": 0, "t_send": 2.0, "t_done": 3.0},
        # overlapping requests of another wave of the phase, and of the same number in another phase
        {"phase": "cold_wave", "wave": 1, "t_send": 0.0, "t_done": 1.0},
        {"phase": "cold_wave", "wave": 1, "t_send": 0.1, "t_done": 1.0},
        {"phase": "warm_wave", "wave": 0, "t_send": 0.0, "t_done": 1.0},
        {"phase": "warm_wave", "wave": 0, "t_send": 0.1, "t_done": 1.0},
        {"phase": "warm_wave", "wave": 2, "t_send": 0.0, "t_done": 1.0},
        {"phase": "warm_wave", "wave": 2, "t_send": 0.1, "t_done": 1.0},
        {"phase": "warm_wave", "wave": 3, "t_send": 5.0, "t_done": 6.0},  # a later wave of the phase
    ]
    assert not_active(2, "r", waves, reqs) == [
        {
            "run": "r",
            "attempt": 4,
            "phase": "cold_wave",
            "wave": 0,
            "max_active_loaded": [1, None],
            "attempts": 2,
            "client_overlap": False,
            "max_active": [2, None],
            "in_flight_max_active": [1, None],
            "in_flight_polls": [6, 0],
            "in_flight_ms": [3.5, None],
            "counters": "present",
        },
        {
            "run": "r",
            "attempt": 4,
            "phase": "warm_wave",
            "wave": 2,
            "max_active_loaded": [None],
            "attempts": 1,
            "client_overlap": True,
            "max_active": [None],
            "in_flight_max_active": [None],
            "in_flight_polls": [0],
            "in_flight_ms": [None],
            "counters": "absent",
        },
    ]
    # at count 3 the wave that held two leases did not hold enough
    assert [(w["phase"], w["wave"]) for w in not_active(3, "r", waves, reqs)] == [
        ("cold_wave", 0),
        ("warm_wave", 1),
        ("warm_wave", 2),
    ]


@pytest.mark.parametrize(
    ("polls", "tops", "violation"),
    [
        ([5], [1], True),  # exactly MIN_POLLS_IN_FLIGHT samples, all below n
        ([4], [1], False),  # one sample too few
        ([5], [2], False),
        ([9], [None], False),
        ([4, 5], [1, 1], True),  # a later attempt shows it
        ([9, 3], [2, 1], False),
    ],
)
def test_serial_despite_overlap_needs_enough_samples_all_below_n(
    polls: list[int], tops: list[int | None], violation: bool
) -> None:
    row: Any = {"in_flight_polls": polls, "in_flight_max_active": tops}
    assert serial_despite_overlap(row, 2) is violation


LONG = "x" * 130


@pytest.mark.parametrize(
    ("state", "probe", "text"),
    [
        ("ok", None, "no unload was recorded"),
        (
            "error",
            {"reply": {"status": 500, "error": "boom"}},
            "the unload route /v1/tasks/unload_models answered 500: boom",
        ),
        ("error", {"reply": {"status": 503, "error": ""}}, "the unload route /v1/tasks/unload_models answered 503"),
        (
            "error",
            {"reply": {"status": None, "outcome": "timeout"}},
            "the unload route /v1/tasks/unload_models gave no answer (timeout)",
        ),
        (
            "error",
            {"reply": {"status": 502, "error": LONG}},
            f"the unload route /v1/tasks/unload_models answered 502: {'x' * 120}",
        ),
        ("error", {}, "the unload route /v1/tasks/unload_models gave no answer (None)"),
        (
            "missing_route",
            {"reply": {"status": 404, "error": LONG}},
            f"this server has no /v1/tasks/unload_models route (answered 404: {'x' * 120})",
        ),
        (
            "missing_route",
            {"reply": {"status": 404}},
            "this server has no /v1/tasks/unload_models route (answered 404)",
        ),
        (
            "no_loaded",
            {"reply": {"status": 200}},
            "/v1/models never showed the model loaded:false after the unload (no status sample of this start "
            "showed loaded:true either: the server may publish no `loaded`)",
        ),
        (
            "stayed",
            {"reply": {"status": 200}, "polls_after": 7},
            "the unload answered 200 but /v1/models showed the model loaded in all 7 status samples after it",
        ),
        (
            "unseen",
            {"reply": {"status": 200}, "polls_after": 3},
            "/v1/models did not show loaded:false after the unload (3 status sample(s) after it: too few to tell)",
        ),
        (
            "unseen",
            {"reply": {"status": 200}},
            "/v1/models did not show loaded:false after the unload (0 status sample(s) after it: too few to tell)",
        ),
    ],
)
def test_unload_observed_says_what_the_probe_showed(state: str, probe: dict[str, Any] | None, text: str) -> None:
    assert unload_observed(state, probe) == text


def test_grouped_names_each_start_once_per_observation() -> None:
    rows: Any = [
        {"run": "a", "what": "stayed"},
        {"run": "b", "what": "stayed"},
        {"run": "a", "what": "stayed"},
        {"run": "a", "what": "erred", "set_aside": "abandoned"},
        {"run": "a", "what": "erred"},
    ]
    assert grouped(rows) == "stayed (2 start(s): a, b); erred (2 start(s): a (set aside: abandoned), a)"


# --- M2.starts ------------------------------------------------------------------------


def test_starts_pass_names_the_complete_starts(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    r = judged(ev, p, "M2.starts")
    assert (r.status, r.reason) == (Status.PASS, "3 fresh starts at count 2")
    assert r.evidence["starts"] == list(RUNS) and r.evidence["complete"] == list(RUNS)
    assert r.evidence["rests_on"] == {"complete starts": 3}


def test_a_candidate_that_cannot_start_fails_every_count(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    cannot = {"executable": "/bin/cand", "run": "count1-s1", "exit_code": 127, "stream": "stderr", "reason": "exited"}
    ev.append("executable_cannot_start", role="baseline", last_lines=["baseline error"], **cannot)
    assert judged(ev, p, "M2.starts").status is Status.PASS  # the baseline's failure is not the candidate's
    ev.append("executable_cannot_start", role="candidate", last_lines=["loading", "error: libfoo.so", "bye"], **cannot)
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.FAIL
    assert r.reason == (
        "the candidate executable exited with status 127 before it was ready: error: libfoo.so "
        "(its first start, count1-s1); no start at count 2 was tried"
    )
    assert r.evidence["log_tail"] == "loading\nerror: libfoo.so\nbye"
    assert r.evidence["violation"]["role"] == "candidate"
    assert r.evidence["starts"] == list(RUNS) and r.evidence["complete"] == list(RUNS)


def test_a_candidate_that_cannot_start_without_recorded_lines_has_no_log_tail(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    cannot = {"executable": "/bin/cand", "run": "count1-s1", "exit_code": 127, "stream": "stderr", "reason": "exited"}
    ev.append("executable_cannot_start", role="candidate", **cannot)
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.FAIL and r.evidence["log_tail"] == ""


def test_a_start_that_failed_before_its_server_started_is_named_by_its_unit(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    ev.append("start_failed", unit="count2-s4", reason="the executable was not found")
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.BLOCKED
    assert [f["run"] for f in r.evidence["failures"]] == ["count2-s4"]


def test_a_crash_at_the_count_fails_with_its_exit_status(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    # a crash of a start at another count is not this count's
    full_start(ev, "count1-s1", 1, p, end=False)
    ev.append("server_crash", run="count1-s1", attempt=0, where="warm_wave 1", exit_code=-6)
    ev.end("count1-s1")
    assert judged(ev, p, "M2.starts").status is Status.PASS
    ev.append("server_crash", run="count2-s2", attempt=0, where="warm_wave 1", exit_code=-11, log_tail="segfault")
    ev.append("server_crash", run="count2-s3", attempt=0, where="cold_wave 0", exit_code=-9)
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.FAIL
    assert r.reason == "server crashed during count2-s2 (warm_wave 1), exit status -11"
    assert r.evidence["log_tail"] == "segfault"
    assert [c["run"] for c in r.evidence["crashes"]] == ["count2-s2", "count2-s3"]
    assert r.evidence["violation"] == r.evidence["crashes"]
    assert r.evidence["complete"] == ["count2-s1"]


def test_a_crash_without_a_log_tail_records_an_empty_one(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    ev.append("server_crash", run="count2-s3", attempt=0, where="cold_wave 0", exit_code=-9)
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.FAIL and r.evidence["log_tail"] == ""


def test_starts_parval_stopped_are_blocked_naming_the_first_three(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    ev.append("start_failed", unit="count1-s1", reason="another count")
    ev.append("start_failed", unit="count20-s1", reason="another count")
    assert judged(ev, p, "M2.starts").status is Status.PASS
    ev.append("start_failed", unit="count2-s4", reason="cannot execute /gone")
    ev.append("wave_timeout", run="count2-s3", attempt=0, phase="warm_wave", wave=1, reason="hung")
    ev.append("start_aborted", unit="count2-s5", reason="stopped answering")
    ev.append("start_timeout", unit="count2-s6", reason="never ready")
    r = judged(ev, p, "M2.starts")
    assert r.status is Status.BLOCKED
    assert r.reason == (
        "4 start(s) did not complete: count2-s4 (before its server started): start_failed: cannot execute /gone; "
        "count2-s3 attempt 0: wave_timeout: hung; "
        "count2-s5 (before its server started): start_aborted: stopped answering"
    )
    assert [f["run"] for f in r.evidence["failures"]] == ["count2-s4", "count2-s3", "count2-s5", "count2-s6"]
    assert r.evidence["complete"] == ["count2-s1", "count2-s2"]


def test_too_few_starts_are_pending(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:2])
    r = judged(ev, p, "M2.starts")
    assert (r.status, r.reason) == (Status.PENDING, "2 complete start(s) at count 2, 3 needed")


# --- M2.cold_wave and M2.warm_waves ---------------------------------------------------


def test_cold_wave_passes_when_every_start_began_with_one(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    drop(ev, "wave", "count2-s2", phase="warm_wave", wave=1)  # a warm gap is not the cold wave's
    r = judged(ev, p, "M2.cold_wave")
    assert (r.status, r.reason) == (Status.PASS, "every start began with a true concurrent cold wave of 2")
    assert r.evidence["runs"] == list(RUNS) and r.evidence["rests_on"] == {"starts": 3, "waves": 3}


def test_a_start_that_did_not_begin_cold_is_pending(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    # its cold requests recorded after its first warm one
    cold = [e for e in ev.events if e["kind"] == "request" and e["run"] == "count2-s2" and e["phase"] == "cold_wave"]
    ev.events = [e for e in ev.events if not any(e is c for c in cold)]
    warm = next(i for i, e in enumerate(ev.events) if e["kind"] == "request" and e["run"] == "count2-s2")
    ev.events[warm + 1 : warm + 1] = cold
    r = judged(ev, p, "M2.cold_wave")
    assert (r.status, r.reason) == (Status.PENDING, "starts without a leading cold wave: ['count2-s2']")


def test_a_serial_cold_wave_is_not_a_concurrent_one(tmp_path: Path) -> None:
    p = plan()
    p["waves"]["serial_reuse"] = 2  # a serial wave of two replies: recorded whole
    ev, p = recorded(tmp_path, p)
    for w in waves_of(ev, "count2-s1", "cold_wave"):
        w["mode"] = "serial"
    r = judged(ev, p, "M2.cold_wave")
    assert (r.status, r.reason) == (Status.PENDING, "starts without a leading cold wave: ['count2-s1']")


def test_a_cold_wave_of_another_size_is_not_one_of_n(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    cold = next(i for i, e in enumerate(ev.events) if e["kind"] == "request" and e["run"] == "count2-s3")
    ev.events.insert(cold, dict(ev.events[cold]))  # a cold wave of three, recorded whole
    waves_of(ev, "count2-s3", "cold_wave")[0]["n"] = 3
    r = judged(ev, p, "M2.cold_wave")
    assert (r.status, r.reason) == (Status.PENDING, "starts without a leading cold wave: ['count2-s3']")


def test_cold_wave_is_pending_on_a_missing_wave_or_start(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    drop(ev, "wave", "count2-s3", phase="cold_wave")
    r = judged(ev, p, "M2.cold_wave")
    assert r.status is Status.PENDING
    assert r.reason == (
        "evidence incomplete at count 2: count2-s3: no cold_wave 0 recorded; "
        "count2-s3: replies without a wave summary (cold_wave 0)"
    )
    ev, p = recorded(tmp_path / "few", runs=RUNS[:2])
    assert judged(ev, p, "M2.cold_wave").reason == "2 complete start(s) at count 2, 3 needed"


def _mixed(n_mixed: int, *, variations: bool) -> dict[str, Any]:
    p = plan(variations=[{"name": "other", "changes": "seed", "request": {"seed": 2}}] if variations else None)
    p["waves"].update(mixed=n_mixed, mixed_at_largest=n_mixed)
    return p


@pytest.mark.parametrize(
    ("p", "status"),
    [
        (_mixed(2, variations=True), Status.PASS),
        (_mixed(0, variations=False), Status.PASS),  # mixed waves are required only with variations
        (_mixed(0, variations=True), Status.PENDING),
    ],
)
def test_warm_waves_need_mixed_ones_only_when_variations_are_declared(
    tmp_path: Path, p: dict[str, Any], status: Status
) -> None:
    ev, p = recorded(tmp_path, p)
    r = judged(ev, p, "M2.warm_waves")
    assert r.status is status
    if status is Status.PASS:
        assert r.reason == "every start ran warm and mixed warm waves"
        assert r.evidence["runs"] == list(RUNS)
    else:
        assert r.reason == f"starts without warm/mixed waves: {list(RUNS)}"


def test_warm_waves_without_any_warm_wave_are_pending(tmp_path: Path) -> None:
    p = _mixed(1, variations=False)
    p["waves"]["warm"] = 0
    ev, p = recorded(tmp_path, p)
    assert judged(ev, p, "M2.warm_waves").reason == f"starts without warm/mixed waves: {list(RUNS)}"


def test_warm_waves_rest_on_the_warm_and_mixed_waves_only(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    assert judged(ev, p, "M2.warm_waves").evidence["rests_on"] == {"starts": 3, "waves": 9}
    drop(ev, "wave", "count2-s1", phase="mixed_wave", wave=1)
    r = judged(ev, p, "M2.warm_waves")
    assert r.status is Status.PENDING
    assert r.reason.startswith("evidence incomplete at count 2: count2-s1: no mixed_wave 1 recorded")


# --- M2.observed_active ---------------------------------------------------------------


def test_observed_active_passes_on_n_loaded_leases_in_every_concurrent_wave(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PASS
    assert r.reason == f"the status poller saw active_slots == 2 (loaded) in all {CONCURRENT} concurrent waves"
    assert r.evidence["rests_on"] == {"concurrent waves": CONCURRENT}
    assert r.evidence["poll_hz"] == [200.0] * 10


def test_serial_leases_while_the_client_overlapped_fail(tmp_path: Path) -> None:
    p = plan()
    p["waves"]["warm"] = 10  # 16 concurrent waves a start: more than the 30 kept
    ev, p = recorded(tmp_path, p, status=SERIAL_AT_ONE, flight=in_flight(2, polls=5, max_active=1))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.FAIL
    assert r.reason == (
        "48 wave(s) had all 2 requests in flight from the client for 5+ successful status samples, "
        "yet the server never showed active_slots == 2"
    )
    assert len(r.evidence["violation"]) == 30 and len(r.evidence["waves"]) == 30
    first = r.evidence["violation"][0]
    assert (first["run"], first["phase"], first["wave"], first["in_flight_polls"]) == ("count2-s1", "cold_wave", 0, [5])


def test_too_few_samples_in_the_window_are_pending_not_a_violation(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, status=SERIAL_AT_ONE, flight=in_flight(2, polls=4, max_active=1))
    for w in waves_of(ev, "count2-s1"):
        w["all_in_flight"] = {**w.get("all_in_flight", {}), "polls": 0}
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PENDING
    assert r.reason == (
        "the status poller got only 0, 4 successful sample(s) inside the window in which all 2 requests were "
        f"in flight during {CONCURRENT} wave(s) (an overloaded machine, or too short an overlap): too few to show "
        "that 2 leases were never held together: concurrency not shown"
    )
    assert len(r.evidence["waves"]) == CONCURRENT


def test_n_leases_seen_only_while_loading_are_pending(tmp_path: Path) -> None:
    loading = {**counters_status(2), "max_active": 2, "max_active_loaded": 1}
    ev, p = recorded(tmp_path, status=loading, flight=in_flight(2, polls=9, max_active=1))
    # with enough samples in the window all below n it is still a violation
    assert judged(ev, p, "M2.observed_active").status is Status.FAIL
    ev, p = recorded(tmp_path / "few", status=loading, flight=in_flight(2, polls=2, max_active=1))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PENDING
    assert r.reason == (
        f"{CONCURRENT} wave(s) showed active_slots == 2 only while the model was still loading: that the 2 "
        "requests then ran together was not observed: concurrency not shown"
    )


def test_waves_the_client_never_overlapped_are_pending(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, status=SERIAL_AT_ONE, overlap=False, flight=in_flight(2, polls=9, max_active=1))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PENDING
    assert r.reason == (
        f"{CONCURRENT} wave(s) never overlapped even from the client side (an overloaded machine or too short "
        "a service time): concurrency not shown"
    )


def test_every_reason_a_wave_did_not_show_concurrency_is_named(tmp_path: Path) -> None:
    no_answer = {"polls": 4, "poll_errors": 4, "max_active": None, "max_active_loaded": None}
    ev, p = recorded(tmp_path, status=SERIAL_AT_ONE, flight=in_flight(2, polls=3, max_active=1))
    for w in waves_of(ev, "count2-s1"):
        w["status"] = no_answer
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PENDING
    assert r.reason == (
        "the status poller got only 3 successful sample(s) inside the window in which all 2 requests were in "
        "flight during 14 wave(s) (an overloaded machine, or too short an overlap): too few to show that 2 "
        "leases were never held together; the status poller got no /v1/models entry for the model during 7 "
        "wave(s): concurrency not shown"
    )


def test_a_server_without_counters_is_unsupported(tmp_path: Path) -> None:
    p = plan()
    p["waves"]["warm"] = 10
    ev, p = recorded(tmp_path, p, status=counterless_status(2))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.UNSUPPORTED
    assert r.reason == (
        "the server publishes no slot counters (/v1/models lists the model without active_slots during 48 "
        "wave(s)): the server cannot show that N requests held slots at once"
    )
    assert len(r.evidence["waves"]) == 30


def test_observed_active_needs_every_start_and_wave(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:2])
    r = judged(ev, p, "M2.observed_active")
    assert (r.status, r.reason) == (Status.PENDING, "2 complete start(s) at count 2, 3 needed")
    ev, p = recorded(tmp_path / "gap")
    drop(ev, "wave", "count2-s2", phase="reload_wave", wave=2)
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.PENDING and r.reason.startswith(
        "evidence incomplete at count 2: count2-s2: no reload_wave 2 recorded"
    )


def test_a_violation_fails_even_with_too_few_starts(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], status=SERIAL_AT_ONE, flight=in_flight(2, polls=5, max_active=1))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.FAIL and r.reason.startswith("7 wave(s) had all 2 requests")


def test_a_violation_in_a_set_aside_attempt_fails_and_says_so(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, aside={"status": SERIAL_AT_ONE, "flight": in_flight(2, polls=6, max_active=1)})
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.FAIL
    assert r.reason == (
        "7 wave(s) had all 2 requests in flight from the client for 5+ successful status samples, yet the "
        "server never showed active_slots == 2 (7 in attempt(s) parval set aside)"
    )
    assert {(w["run"], w["attempt"], w["set_aside"]) for w in r.evidence["violation"]} == {
        ("count2-s1", -1, "abandoned")
    }
    assert r.evidence["waves"] == []
    ctx = ev.context(p)
    assert len(active_violations(ctx, 2, standing=False)) == 7
    assert len(active_violations(ctx, 2)) == 7


@pytest.mark.parametrize(
    ("aside", "violations"),
    [
        ({"status": counterless_status(2), "flight": in_flight(2, polls=9, max_active=1)}, 0),  # no counters
        ({"status": SERIAL_AT_ONE, "overlap": False, "flight": in_flight(2, polls=9, max_active=1)}, 0),
        ({"status": SERIAL_AT_ONE, "flight": in_flight(2, polls=4, max_active=1)}, 0),  # too few samples
        ({"status": SERIAL_AT_ONE, "flight": in_flight(2, polls=5, max_active=1)}, 7),
    ],
)
def test_a_set_aside_attempt_fails_only_on_an_observed_violation(
    tmp_path: Path, aside: dict[str, Any], violations: int
) -> None:
    ev, p = recorded(tmp_path, aside=aside)
    assert len(active_violations(ev.context(p), 2, standing=False)) == violations


@pytest.mark.parametrize(
    ("kw", "violations"),
    [
        ({"status": counterless_status(2), "flight": in_flight(2, polls=9, max_active=1)}, 0),
        ({"status": SERIAL_AT_ONE, "overlap": False, "flight": in_flight(2, polls=9, max_active=1)}, 0),
        ({"status": SERIAL_AT_ONE, "flight": in_flight(2, polls=4, max_active=1)}, 0),
        ({"status": SERIAL_AT_ONE, "flight": in_flight(2, polls=5, max_active=1)}, 7),
    ],
)
def test_a_standing_attempt_fails_only_on_an_observed_violation(
    tmp_path: Path, kw: dict[str, Any], violations: int
) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], **kw)
    ctx = ev.context(p)
    assert len(active_violations(ctx, 2)) == violations
    assert active_violations(ctx, 2, standing=False) == []


# --- M2.drained -----------------------------------------------------------------------


def test_drained_passes_when_the_counters_read_zero_after_every_wave(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PASS
    assert r.reason == f"active_slots == queued_requests == 0 after all {ALL_WAVES} waves"
    assert r.evidence["drain_lag_ms"] is None and r.evidence["nonzero_reads"] == 0
    assert r.evidence["rests_on"] == {"drained waves": ALL_WAVES}


def test_counters_left_non_zero_fail_naming_the_first_wave(tmp_path: Path) -> None:
    p = plan()
    p["waves"]["warm"] = 10
    ev, p = recorded(tmp_path, p, drained={**HELD, "active": 2, "queued": 1})
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.FAIL
    assert r.reason == (
        "51 wave(s) left counters non-zero (first: count2-s1 cold_wave 0: active_slots 2, queued_requests 1)"
    )
    assert len(r.evidence["violation"]) == 30 and len(r.evidence["waves"]) == 30
    assert r.evidence["violation"][0] == {
        "run": "count2-s1",
        "attempt": 0,
        "phase": "cold_wave",
        "wave": 0,
        **HELD,
        "active": 2,
        "queued": 1,
        "counters": "present",
    }


def test_counters_left_non_zero_in_a_set_aside_attempt_fail(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, aside={"drained": HELD})
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.FAIL
    assert r.reason == (
        "8 wave(s) left counters non-zero (first: count2-s1 cold_wave 0: active_slots 1, queued_requests 0); "
        "8 in attempt(s) parval set aside"
    )
    assert {w["set_aside"] for w in r.evidence["violation"]} == {"abandoned"}
    ctx = ev.context(p)
    assert len(drain_violations(ctx, 2, standing=False)) == 8
    assert drain_violations(ctx, 2) == drain_violations(ctx, 2, standing=False)


@pytest.mark.parametrize(
    ("status", "drained", "violations"),
    [
        (counters_status(2), HELD, 8),
        (counters_status(2), {**HELD, "ok": True}, 0),
        (counterless_status(2), HELD, 0),  # the counters read were not the server's
        (counters_status(2), {**HELD, "active": None}, 0),
        (counters_status(2), {**HELD, "queued": None}, 0),
        (counters_status(2), {}, 0),
    ],
)
def test_a_drain_violation_needs_both_counters_read_non_zero(
    tmp_path: Path, status: dict[str, Any], drained: dict[str, Any], violations: int
) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], status=status, drained=drained)
    ctx = ev.context(p)
    assert len(drain_violations(ctx, 2)) == violations
    assert drain_violations(ctx, 2, standing=False) == []


def test_a_set_aside_attempt_at_another_count_is_not_this_count_s(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    full_start(ev, "count1-s1", 1, p, end=False, drained=HELD, unload=STAYED)
    for e in ev.events:
        if e.get("run") == "count1-s1":
            e["attempt"] = -1
    ev.append("run_abandoned", run="count1-s1", attempt=-1)
    ctx = ev.context(p)
    assert drain_violations(ctx, 2) == [] and unload_violations(ctx, 2) == []
    assert len(drain_violations(ctx, 1, standing=False)) == 8


def test_a_drain_violation_fails_even_with_too_few_starts(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], drained=HELD)
    assert judged(ev, p, "M2.drained").status is Status.FAIL


def test_unpublished_counters_are_unsupported_naming_each(tmp_path: Path) -> None:
    no_queue = {"ok": False, "active": 0, "queued": None, "fields_present": True}
    ev, p = recorded(tmp_path, drained=no_queue)
    for w in waves_of(ev, "count2-s1"):
        w.update(status=counterless_status(2), drained=dict(COUNTERLESS_DRAIN))
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.UNSUPPORTED
    assert r.reason == (
        "the server publishes no slot counters: no drain to zero can be shown after 8 wave(s); "
        "the server publishes no queued_requests: an empty queue cannot be shown after 16 wave(s)"
    )
    assert [w["run"] for w in r.evidence["waves"]][:9] == ["count2-s1"] * 8 + ["count2-s2"]
    ev, p = recorded(tmp_path / "q", drained=no_queue)
    r = judged(ev, p, "M2.drained")
    assert r.reason == (
        f"the server publishes no queued_requests: an empty queue cannot be shown after {ALL_WAVES} wave(s)"
    )


def test_no_answer_during_the_drain_check_is_pending(tmp_path: Path) -> None:
    unread = {"ok": False, "active": None, "queued": None, "fields_present": True}
    ev, p = recorded(tmp_path, drained=unread)
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PENDING
    assert r.reason == f"the status poller got no answer while checking the drain after {ALL_WAVES} wave(s)"
    assert len(r.evidence["waves"]) == ALL_WAVES
    ev, p = recorded(tmp_path / "few", runs=RUNS[:2], drained=unread)
    assert judged(ev, p, "M2.drained").reason == "2 complete start(s) at count 2, 3 needed"


def test_drained_needs_every_planned_wave(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    drop(ev, "wave", "count2-s1", phase="serial_reuse")
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PENDING
    assert r.reason.startswith("evidence incomplete at count 2: count2-s1: no serial_reuse 0 recorded")


def _lagging(ev: Events, lags: dict[tuple[str, str, int], float]) -> None:
    for w in waves_of(ev):
        w["drained"] = {**w["drained"], "lag_ms": 20, "nonzero_reads": 1}
        lag = lags.get((w["run"], w["phase"], w["wave"]))
        if lag is not None:
            w["drained"]["lag_ms"] = lag


def test_a_lag_beyond_the_declared_bound_is_pending(tmp_path: Path) -> None:
    p = plan()
    p["timeouts"] = {"drain_lag_ms": 50.5}
    ev, p = recorded(tmp_path, p)
    _lagging(ev, {("count2-s2", "warm_wave", 1): 50.6, ("count2-s3", "cold_wave", 0): 80.4})
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PENDING
    assert r.reason == (
        "the counters lagged the replies: 2 wave(s) read zero later than the declared timeouts.drain_lag_ms "
        "50.5 ms after their last reply (up to 80 ms, first: count2-s2 warm_wave 1); a lag beyond the declared "
        "bound is not a pass"
    )
    assert [(w["run"], w["lag_ms"]) for w in r.evidence["lagging"]] == [("count2-s2", 50.6), ("count2-s3", 80.4)]


def test_a_lag_at_the_declared_bound_passes_and_is_reported(tmp_path: Path) -> None:
    p = plan()
    p["timeouts"] = {"drain_lag_ms": 50}
    ev, p = recorded(tmp_path, p)
    _lagging(ev, {("count2-s2", "warm_wave", 1): 50})
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PASS
    assert r.reason == (
        f"active_slots == queued_requests == 0 after all {ALL_WAVES} waves; they read zero at most 50 ms after "
        f"a wave's last reply ({ALL_WAVES} poll(s) still showed work)"
    )
    assert r.evidence["drain_lag_ms"] == 50.0 and r.evidence["nonzero_reads"] == ALL_WAVES


def test_without_a_declared_bound_the_lag_is_reported_not_judged(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    _lagging(ev, {("count2-s1", "mixed_wave", 1): 912.7})
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.PASS
    assert r.reason.endswith(
        f"they read zero at most 913 ms after a wave's last reply ({ALL_WAVES} poll(s) still showed work)"
    )
    assert r.evidence["drain_lag_ms"] == 912.7


# --- M2.exact and M2.serial_reuse -----------------------------------------------------


def test_exact_passes_with_the_bound_it_rules_out(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    r = judged(ev, p, "M2.exact")
    assert r.status is Status.PASS
    assert r.reason.startswith("count 2: every wave output vs its reference: 45/45 exact; 45 overlapped output(s)")
    assert r.evidence["bound"]["overlapped"] == 45


def test_a_soak_start_at_the_count_is_compared_too(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    ev.start("soak-2-1", role="soak", count=2)
    ev.request("soak-2-1", "mixed_wave", 0, "base", tts_body(7), ref="base|warm", t_send=0, t_done=1)
    ev.request("soak-2-1", "perf_serial", 0, "base", tts_body(7), ref="base|warm")  # not a count phase
    ev.end("soak-2-1")
    r = judged(ev, p, "M2.exact")
    assert r.status is Status.FAIL and r.evidence["compared"] == 46 and r.evidence["mismatch_count"] == 1


def test_a_mismatch_fails_exact_even_when_starts_are_missing(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], body=tts_body(2))
    r = judged(ev, p, "M2.exact")
    assert r.status is Status.FAIL and r.reason.startswith("count 2: every wave output vs its reference: ")


def test_exact_keeps_its_bound_when_the_schedule_is_incomplete(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    drop(ev, "wave", "count2-s3", phase="mixed_wave", wave=0)
    r = judged(ev, p, "M2.exact")
    assert r.status is Status.PENDING and r.reason.startswith("evidence incomplete at count 2: count2-s3")
    assert r.evidence["bound"]["overlapped"] == 45
    ev, p = recorded(tmp_path / "few", runs=RUNS[:2])
    r = judged(ev, p, "M2.exact")
    assert (r.status, r.reason) == (Status.PENDING, "2 complete start(s) at count 2, 3 needed")
    assert r.evidence["bound"]["overlapped"] == 30


@pytest.mark.parametrize("id_", ["M2.exact", "M2.serial_reuse", "M2.unload_reload"])
def test_output_verdicts_reproduce_with_the_first_start_s_server(tmp_path: Path, id_: str) -> None:
    ev, p = recorded(tmp_path)
    for run, argv in (("count2-s2", ["/bin/srv", "--b"]), ("count2-s1", ["/bin/srv", "--slots", "2"])):
        ev.append("server_ready", run=run, attempt=0, argv=argv, warning_marker=False)
    r = judged(ev, p, id_)
    assert r.reproduction == "parval run plan.yaml   # server: /bin/srv --slots 2" and r.count == 2


def test_serial_reuse_compares_only_the_serial_requests(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    r = judged(ev, p, "M2.serial_reuse")
    assert (r.status, r.reason) == (Status.PASS, "serial requests after the concurrent waves: 3/3 exact")
    reply_as(ev, tts_body(3), "count2-s2", "serial_reuse")
    r = judged(ev, p, "M2.serial_reuse")
    assert r.status is Status.FAIL and r.reason.startswith("serial requests after the concurrent waves: ")
    assert r.evidence["mismatch_count"] == 1


def test_serial_reuse_gaps_are_pending_without_a_bound(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    drop(ev, "wave", "count2-s1", phase="serial_reuse")
    r = judged(ev, p, "M2.serial_reuse")
    assert r.status is Status.PENDING and "bound" not in r.evidence
    assert r.reason.startswith("evidence incomplete at count 2: count2-s1: no serial_reuse 0 recorded")


# --- M2.unload_reload -----------------------------------------------------------------


def test_unload_reload_passes_resting_on_every_standing_unload(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, aside={})  # the set-aside attempt's unloads are not counted
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.PASS
    assert r.reason == "outputs after unload/reload vs cold references: 18/18 exact"
    assert r.evidence["rests_on"] == {"compared outputs": 18, "unloads shown": 9}


@pytest.mark.parametrize(
    ("unload", "what"),
    [
        (STAYED, "the unload answered 200 but /v1/models showed the model loaded in all 9 status samples after it"),
        (
            # an older record: `loaded` published, as the waves' loaded leases show
            {k: v for k, v in STAYED.items() if k != "loaded_field"},
            "the unload answered 200 but /v1/models showed the model loaded in all 9 status samples after it",
        ),
        (
            {**STAYED, "polls_after": 5},
            "the unload answered 200 but /v1/models showed the model loaded in all 5 status samples after it",
        ),
        (
            # an error reply fails even when /v1/models then showed loaded:false
            {**UNLOADED, "reply": {"status": 500, "outcome": "http_error", "error": "boom"}},
            "the unload route /v1/tasks/unload_models answered 500: boom",
        ),
        (
            {**UNLOADED, "reply": {"status": None, "outcome": "timeout", "error": ""}, "loaded_false": False},
            "the unload route /v1/tasks/unload_models gave no answer (timeout)",
        ),
    ],
)
def test_an_unload_observed_to_fail_fails(tmp_path: Path, unload: dict[str, Any], what: str) -> None:
    ev, p = recorded(tmp_path, unload=unload)
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.FAIL
    assert r.reason == f"unload/reload not shown: {what} (3 start(s): {ALL_RUNS})"
    state = "stayed" if "answered 200" in what else "error"
    assert r.evidence["violation"][:2] == [
        {"run": "count2-s1", "cycle": 0, "state": state, "what": what},
        {"run": "count2-s1", "cycle": 1, "state": state, "what": what},
    ]


def test_a_set_aside_unload_that_stayed_loaded_fails_and_says_so(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, aside={"unload": STAYED})
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.FAIL
    assert r.reason == (
        "unload/reload not shown: the unload answered 200 but /v1/models showed the model loaded in all 9 status "
        "samples after it (1 start(s): count2-s1 (set aside: abandoned))"
    )
    ctx = ev.context(p)
    assert [v["set_aside"] for v in unload_violations(ctx, 2, standing=False)] == ["abandoned"] * 3


def test_standing_unload_violations_are_left_out_when_asked(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:1], unload=STAYED)
    ctx = ev.context(p)
    assert len(unload_violations(ctx, 2)) == 3
    assert unload_violations(ctx, 2, standing=False) == []


def test_a_reload_output_that_differs_fails(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    reply_as(ev, tts_body(4), "count2-s3", "reload_wave")
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.FAIL
    assert r.reason.startswith("outputs after unload/reload vs cold references: ")
    assert r.evidence["mismatch_count"] == 6


def test_a_missing_unload_route_is_unsupported(tmp_path: Path) -> None:
    missing = {"reply": {"status": 404, "outcome": "http_error", "error": "not found"}, "loaded_false": False}
    ev, p = recorded(tmp_path, unload=missing)
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.UNSUPPORTED
    what = "this server has no /v1/tasks/unload_models route (answered 404: not found)"
    assert r.reason == f"unload/reload cannot be shown: {what} (3 start(s): {ALL_RUNS})"
    assert r.evidence["starts"][0] == {"run": "count2-s1", "cycle": 0, "what": what}
    assert len(r.evidence["starts"]) == 9


@pytest.mark.parametrize(
    ("unload", "status", "what"),
    [
        (
            {**STAYED, "polls_after": 4},
            None,
            "/v1/models did not show loaded:false after the unload (4 status sample(s) after it: too few to tell)",
        ),
        (
            {k: v for k, v in UNLOADED.items() if k != "loaded_field"} | {"loaded_false": False},
            None,
            "/v1/models did not show loaded:false after the unload (8 status sample(s) after it: too few to tell)",
        ),
        (
            # an older record: `loaded` unpublished when no wave saw a loaded lease
            {k: v for k, v in UNLOADED.items() if k != "loaded_field"} | {"loaded_false": False},
            counterless_status(2),
            "/v1/models never showed the model loaded:false after the unload (no status sample of this start "
            "showed loaded:true either: the server may publish no `loaded`)",
        ),
    ],
)
def test_an_unload_not_shown_is_pending(
    tmp_path: Path, unload: dict[str, Any], status: dict[str, Any] | None, what: str
) -> None:
    ev, p = recorded(tmp_path, unload=unload, status=status)
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.PENDING
    assert r.reason == f"unload not shown: {what} (3 start(s): {ALL_RUNS})"
    assert r.evidence["starts"][0] == {"run": "count2-s1", "cycle": 0, "what": what}


def test_a_loaded_false_after_a_200_shows_the_unload(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, unload={**UNLOADED, "loaded_field": False, "still_loaded": True})
    assert judged(ev, p, "M2.unload_reload").status is Status.PASS


@pytest.mark.parametrize(("removed", "extra", "got"), [(1, 0, 2), (0, 1, 4)])
def test_each_start_needs_every_unload_cycle(tmp_path: Path, removed: int, extra: int, got: int) -> None:
    ev, p = recorded(tmp_path)
    for _ in range(removed):
        drop(ev, "probe", "count2-s2", cycle=1)
    for _ in range(extra):
        ev.append("probe", run="count2-s2", attempt=0, name="unload", cycle=3, **UNLOADED)
    ev.append("probe", run="count2-s3", attempt=0, name="health", reply={"status": 200})  # not an unload
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.PENDING
    assert r.reason == f"unload not shown: {got} of 3 unload/reload cycles recorded (1 start(s): count2-s2)"
    assert r.evidence["starts"] == [{"run": "count2-s2", "what": f"{got} of 3 unload/reload cycles recorded"}]


def test_unload_reload_is_pending_when_starts_are_missing(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, runs=RUNS[:2])
    r = judged(ev, p, "M2.unload_reload")
    assert (r.status, r.reason) == (Status.PENDING, "2 complete start(s) at count 2, 3 needed")


def test_an_unload_failure_outranks_a_reload_mismatch(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path, unload={**UNLOADED, "reply": {"status": 404, "error": ""}, "loaded_false": False})
    reply_as(ev, tts_body(4), "count2-s1", "reload_wave")
    # a reload that differs is a failure whatever the route
    assert judged(ev, p, "M2.unload_reload").reason.startswith("outputs after unload/reload vs cold references: ")
    ev, p = recorded(tmp_path / "stay", unload=STAYED)
    reply_as(ev, tts_body(4), "count2-s1", "reload_wave")
    assert judged(ev, p, "M2.unload_reload").reason.startswith("unload/reload not shown: the unload answered 200")


# --- every judge ----------------------------------------------------------------------


def test_judge_m2_judges_every_assertion_at_the_count(tmp_path: Path) -> None:
    ev, p = recorded(tmp_path)
    results = judge_m2(ev.context(p), 2)
    assert [r.id for r in results] == list(JUDGES)
    assert {r.count for r in results} == {2}


# --- every attempt judged against its own requests; the soak's starts judged as the count's --


def test_each_set_aside_attempt_is_judged_against_its_own_requests(tmp_path: Path) -> None:
    """Two set-aside attempts of one start: the first never overlapped from the client (so
    its serial leases show nothing), the second is clean. Neither is a violation."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan()
    for attempt, kw in (
        (-2, {"status": SERIAL_AT_ONE, "overlap": False, "flight": in_flight(2, polls=9, max_active=1)}),
        (-1, {}),
    ):
        set_aside_attempt(ev, "count2-s1", 2, p, attempt, **kw)
    for run in RUNS:
        full_start(ev, run, 2, p)
    assert active_violations(ev.context(p), 2, standing=False) == []
    assert judged(ev, p, "M2.observed_active").status is Status.PASS


def soaked(tmp_path: Path, **kw: Any) -> tuple[Events, dict[str, Any]]:
    """Three clean count-2 starts and one soak start recorded with `kw` (full_start's)."""
    ev, p = recorded(tmp_path)
    first = len(ev.events)
    full_start(ev, "soak2-s1", 2, p, **kw)
    ev.events[first]["role"] = "soak"
    return ev, p


def test_the_soak_starts_waves_count_in_a_pass(tmp_path: Path) -> None:
    ev, p = soaked(tmp_path)
    active = judged(ev, p, "M2.observed_active")
    assert active.status is Status.PASS
    assert (
        f"in all {CONCURRENT + CONCURRENT // 3} concurrent waves ({CONCURRENT // 3} of them in soak starts)"
        in active.reason
    )
    drained = judged(ev, p, "M2.drained")
    assert drained.status is Status.PASS
    assert f"after all {ALL_WAVES + ALL_WAVES // 3} waves ({ALL_WAVES // 3} of them in soak starts)" in drained.reason


def test_a_soak_start_that_leaves_a_lease_held_fails_drained(tmp_path: Path) -> None:
    ev, p = soaked(tmp_path, drained=HELD)
    r = judged(ev, p, "M2.drained")
    assert r.status is Status.FAIL
    assert r.reason.startswith(f"{ALL_WAVES // 3} wave(s) left counters non-zero (first: soak2-s1 cold_wave 0: ")


def test_a_soak_start_with_serial_leases_while_overlapped_fails_observed_active(tmp_path: Path) -> None:
    ev, p = soaked(tmp_path, status=SERIAL_AT_ONE, flight=in_flight(2, polls=9, max_active=1))
    r = judged(ev, p, "M2.observed_active")
    assert r.status is Status.FAIL
    assert {w["run"] for w in r.evidence["violation"]} == {"soak2-s1"}


def test_a_soak_start_whose_unload_left_the_model_loaded_fails_unload_reload(tmp_path: Path) -> None:
    ev, p = soaked(tmp_path, unload=STAYED)
    r = judged(ev, p, "M2.unload_reload")
    assert r.status is Status.FAIL
    assert "soak2-s1" in r.reason
