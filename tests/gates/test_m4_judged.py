"""M4's recovery judges and the unload evidence they read, pinned exactly: each verdict, its
reason text and evidence, the thresholds (half a latency early, 5 samples, 2 status reads),
and that a missing or crashed recovery start never PASSes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.gates import m4_recovery as m4r
from parval.gates import unload_evidence as ue
from parval.gates.admission_verdict import RECOVERY_COUNT
from parval.status import Result, Status
from tests.gates.m_events import DRAINED, UNLOADED, Events, baseline_refs, plan, recovery_start, tts_body, unload_event

OK_REPLY = {"status": 200, "outcome": "ok", "ms": 5.0, "error": ""}


# --- unload_check: what /v1/models showed after an unload -------------------------------


@pytest.mark.parametrize(
    ("check", "loaded_field", "expected"),
    [
        ({**UNLOADED, "reply": {"status": 404}}, None, "missing_route"),
        ({**UNLOADED, "reply": {"status": 500}}, None, "error"),
        ({**UNLOADED, "reply": {}}, None, "error"),
        ({"loaded_false": True}, None, "error"),
        (dict(UNLOADED), None, "ok"),
        ({**UNLOADED, "loaded_false": False, "loaded_field": False}, None, "no_loaded"),
        ({"reply": {"status": 200}, "still_loaded": True, "polls_after": 9}, False, "no_loaded"),
        ({"reply": {"status": 200}, "still_loaded": True, "polls_after": 9}, None, "stayed"),
        ({"reply": {"status": 200}, "loaded_field": True, "still_loaded": True, "polls_after": 9}, False, "stayed"),
        ({"reply": {"status": 200}, "still_loaded": True, "polls_after": 5}, None, "stayed"),
        ({"reply": {"status": 200}, "still_loaded": True, "polls_after": 4}, None, "unseen"),
        ({"reply": {"status": 200}, "still_loaded": True}, None, "unseen"),
        ({"reply": {"status": 200}, "still_loaded": False, "polls_after": 9}, None, "unseen"),
        ({"reply": {"status": 200}}, None, "unseen"),
    ],
)
def test_unload_check_names_what_the_models_list_showed(
    check: dict[str, Any], loaded_field: bool | None, expected: str
) -> None:
    assert ue.unload_check(check, loaded_field=loaded_field) == expected


def test_a_recorded_time_that_is_not_a_number_raises_as_comparing_it_would() -> None:
    assert ue.times([1, 2.5]) == [1, 2.5]
    assert ue.times([]) == []
    with pytest.raises(TypeError, match="^'<' not supported for a recorded time of type 'str'$"):
        ue.times([1.0, "2"])


# --- returned_early: back before every in-flight reply by more than half a latency --------


@pytest.mark.parametrize(
    ("unload_done", "done", "latency", "early"),
    [
        (0.75, [1.0, 2.0], [0.5, 1.0], False),  # exactly half the shortest latency early
        (0.7, [1.0, 2.0], [0.5, 1.0], True),
        (0.7, [2.0, 1.0], [1.0, 0.5], True),
        (0.2, [], [0.5], False),
        (0.2, [1.0], [], False),
        (0.2, None, [0.5], False),
        (0.2, [1.0], None, False),
    ],
)
def test_an_unload_returned_early_only_well_before_the_first_in_flight_reply(
    unload_done: float, done: list[float] | None, latency: list[float] | None, early: bool
) -> None:
    e = {"unload_done": unload_done, "requests_done": done, "requests_latency": latency}
    assert ue.returned_early(e) is early


@pytest.mark.parametrize(
    ("e", "expected"),
    [
        ({"unloaded_seen": True, "unload_check": {"reply": {"status": 500}}}, "ok"),
        ({"unloaded_seen": False, "unload_check": {**UNLOADED, "reply": {"status": 500}}}, "error"),
        ({"unload_check": {"reply": {"status": 200}, "still_loaded": True, "polls_after": 6}}, "stayed"),
        ({"unload_check": "loaded"}, "unseen"),
        ({}, "unseen"),
    ],
)
def test_unloaded_state_reads_the_models_list_never_the_reply(e: dict[str, Any], expected: str) -> None:
    assert ue.unloaded_state(e) == expected


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("queued_behind", "queued_behind"),
        ("admitted_past", "admitted_past"),
        ("unobserved", "unobserved"),
        ("barged", "unobserved"),
        (None, "unobserved"),
    ],
)
def test_server_order_is_queued_behind_admitted_past_or_unobserved(order: str | None, expected: str) -> None:
    assert ue.server_order({"later_order": order}) == expected


PAST = {
    "issued_while_active": True,
    "later_order": "admitted_past",
    "gap_s": 0.03,
    "later_samples": {"max_active": 3},
    "busy": 2,
}
PAST_WORDS = (
    "a request sent 0.03 s after the all unload (still pending) was admitted while the unload waited "
    "(the server showed 3 active > 2 in front)"
)


def test_admitted_past_needs_the_unload_issued_while_work_was_active() -> None:
    assert ue.admitted_past(PAST, "all") == PAST_WORDS
    assert ue.admitted_past({**PAST, "issued_while_active": False}, "all") is None
    assert ue.admitted_past({**PAST, "later_order": "queued_behind"}, "all") is None
    bare = {"issued_while_active": True, "later_order": "admitted_past", "busy": 1}
    assert ue.admitted_past(bare, "targeted") == (
        "a request sent None s after the targeted unload (still pending) was admitted while the unload waited "
        "(the server showed None active > 1 in front)"
    )


SHOWN = {**PAST, "unload_pending_at_later_send": True, "polls_before_later": 2, "tries": 1}


@pytest.mark.parametrize(
    ("over", "shown"),
    [
        ({}, True),
        ({"polls_before_later": 7}, True),
        ({"polls_before_later": 1}, False),
        ({"polls_before_later": True}, False),
        ({"polls_before_later": 2.0}, False),
        ({"polls_before_later": None}, False),
        ({"unload_pending_at_later_send": False}, False),
        ({"issued_while_active": False}, False),
    ],
)
def test_the_order_is_shown_by_two_status_reads_answered_while_the_unload_was_pending(
    over: dict[str, Any], shown: bool
) -> None:
    assert ue.order_shown({**SHOWN, **over}) is shown


def test_barging_shown_names_the_first_try_that_shows_the_order() -> None:
    quiet = {**SHOWN, "later_order": "queued_behind", "tries": 1}
    unshown = {**SHOWN, "polls_before_later": 1, "tries": 2}
    first = {**SHOWN, "tries": 3, "polls_before_later": 4}
    second = {**SHOWN, "tries": 4, "polls_before_later": 9}
    assert ue.barging_shown([quiet, unshown, first, second], "all") == (
        f"try 3 of 4: {PAST_WORDS}: it barged past the unload waiting at the server (4 status reads sent after "
        "the unload were answered before the later request was sent)"
    )
    assert ue.barging_shown([quiet, unshown], "all") is None
    assert ue.barging_shown([], "all") is None


def test_barging_is_reproduced_only_when_every_allowed_try_saw_it() -> None:
    tries = [{**PAST, "gap_s": g, "max_tries": 3} for g in (0.01, 0.02, 0.04)]
    assert ue.barging_reproduced(tries, "all") == (
        f"{PAST_WORDS.replace('0.03', '0.04')}: it barged past the waiting manager, on every one of 3 tries "
        "(gaps 0.01, 0.02, 0.04 s)"
    )
    assert ue.barging_reproduced(tries[:2], "all") is None  # tries left
    assert ue.barging_reproduced([*tries[:2], {**tries[2], "later_order": "unobserved"}], "all") is None
    assert ue.barging_reproduced([], "all") is None
    # Without max_tries one try is all it was allowed.
    (one,) = [{k: v for k, v in PAST.items()}]
    assert ue.barging_reproduced([one], "targeted") == (
        f"{ue.admitted_past(one, 'targeted')}: it barged past the waiting manager, on every one of 1 tries "
        "(gaps 0.03 s)"
    )
    assert ue.barging_reproduced([{**one, "max_tries": 0}], "all") is not None
    assert ue.barging_reproduced([{**one, "max_tries": 2}], "all") is None


@pytest.mark.parametrize(
    ("e", "expected"),
    [
        ({"unload": {"status": 404, "error": "no such route"}}, "answered 404: no such route"),
        ({"unload": {"status": 404}}, "answered 404"),
        ({"unload": {"status": 404, "error": None}}, "answered 404"),
        ({"unload": {"status": 404, "error": "x" * 130}}, "answered 404: " + "x" * 120),
        ({"unload_check": {"reply": {"status": 404, "error": "gone"}}}, "answered 404: gone"),
        ({"unload": {}, "unload_check": {"reply": {"status": 404}}}, "answered 404"),
        ({"unload": {"status": 200}, "unload_check": {"reply": {"status": 404}}}, None),
        ({"unload": {"status": 500}}, None),
        ({"unload_check": {}}, None),
        ({}, None),
    ],
)
def test_missing_route_is_a_404_to_the_unload(e: dict[str, Any], expected: str | None) -> None:
    assert ue.missing_route(e) == expected


def test_a_recorded_unload_reply_that_is_not_an_object_raises() -> None:
    with pytest.raises(AttributeError, match="^'str' object has no attribute 'get'$"):
        ue.missing_route({"unload": "404"})


@pytest.mark.parametrize(
    ("reply", "refused", "unanswered"),
    [
        (OK_REPLY, None, None),
        ({"status": 404, "error": "gone"}, None, "the unload's reply was not recorded (no reply)"),
        ({"status": None, "outcome": "timeout"}, None, "the unload's reply was not recorded (timeout)"),
        (
            {"status": 503, "outcome": "http_error", "error": "busy"},
            "the all unload answered 503: busy",
            "the unload's reply was not recorded (http_error)",
        ),
        (
            {"status": 500, "outcome": "", "error": ""},
            "the all unload answered 500",
            "the unload's reply was not recorded (no reply)",
        ),
        ("200", None, "the unload's reply was not recorded (no reply)"),
        (None, None, "the unload's reply was not recorded (no reply)"),
    ],
)
def test_the_unloads_own_reply(reply: object, refused: str | None, unanswered: str | None) -> None:
    e = {"unload": reply}
    assert ue.unload_reply(e) == (reply if isinstance(reply, dict) else {})
    assert ue.unload_refused(e, "all") == refused
    assert ue.unload_unanswered(e) == unanswered


def _probe(**over: Any) -> dict[str, Any]:
    return unload_event("all", **over)


@pytest.mark.parametrize(
    ("e", "expected"),
    [
        (_probe(), None),
        (_probe(unload={"status": 404}, unload_done=0.1), None),
        (_probe(unload={"status": 500, "error": "boom"}), "the all unload answered 500: boom"),
        (
            _probe(unload_done=0.5, requests_done=[1.25, 1.5], requests_latency=[0.5, 0.5]),
            "unload returned at 0.5s, well before the in-flight work finished (first reply 1.25s, last 1.5s)",
        ),
        (_probe(unload_done=0.5, requests_done=[1.25], issued_while_active=False), None),
        (
            _probe(
                unloaded_seen=False,
                unload_check={**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 7},
            ),
            "the all unload answered 200 but /v1/models showed the model loaded in all 7 status samples after it",
        ),
        (
            _probe(unloaded_seen=False, unload_check={**UNLOADED, "reply": {"status": 502}}),
            "the all unload answered {'status': 502}",
        ),
        (_probe(unloaded_seen=False, unload_check={**UNLOADED, "loaded_false": False}), None),
    ],
)
def test_unload_violation_in_words(e: dict[str, Any], expected: str | None) -> None:
    assert ue.unload_violation(e, "all") == expected


FIRST = {
    "issued_during_load": True,
    "unload": OK_REPLY,
    "unload_done": 1.2,
    "requests_done": [1.18],
    "requests_latency": [0.3],
    "unload_check": dict(UNLOADED),
}


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, None),
        ({"unload": {"status": 500, "error": "no"}}, "the first-load unload answered 500: no"),
        (
            {"unload_done": 0.25, "requests_done": [1.0, 1.5], "requests_latency": [0.25, 0.5]},
            "unload did not wait for the first load (returned at 0.25s, request done at 1.5s)",
        ),
        ({"unload_done": 0.25, "issued_during_load": False}, None),
        (
            {"unload_check": {**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 5}},
            "the model stayed loaded after the unload (5 status samples)",
        ),
        ({"unload_check": {**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 4}}, None),
        ({"unload_check": {**UNLOADED, "reply": {"status": 500}}}, None),
        ({"unload_check": None}, None),
    ],
)
def test_first_load_violation_in_words(over: dict[str, Any], expected: str | None) -> None:
    assert ue.first_load_violation({**FIRST, **over}) == expected


# --- the leases after the work ---------------------------------------------------------

NO_COUNTERS = "the server publishes no slot counters (active_slots/queued_requests): lease release cannot be shown"


@pytest.mark.parametrize(
    ("drained", "problem", "held"),
    [
        (None, "drain not recorded", False),
        ({}, "drain not recorded", False),
        ({"ok": True, "active": 0, "queued": 0}, None, False),
        (
            {"ok": False, "active": 1, "queued": 0, "fields_present": True},
            "lease left held: active_slots 1, queued_requests 0",
            True,
        ),
        ({"ok": False, "active": 0, "queued": 2}, "lease left held: active_slots 0, queued_requests 2", True),
        ({"ok": False, "active": 0, "queued": None}, "lease left held: active_slots 0, queued_requests None", False),
        (
            {"ok": False, "active": None, "queued": 0, "fields_present": True},
            "lease left held: active_slots None, queued_requests 0",
            False,
        ),
        ({"ok": False, "active": None, "queued": None}, NO_COUNTERS, False),
        ({"ok": False, "active": 1, "queued": 1, "fields_present": False}, NO_COUNTERS, True),
    ],
)
def test_lease_problem_and_held(drained: dict[str, Any] | None, problem: str | None, held: bool) -> None:
    assert m4r.lease_problem(drained) == problem
    assert m4r.lease_held(drained) is held


@pytest.mark.parametrize(
    ("drained", "status", "reason"),
    [
        (None, Status.PENDING, "drain not recorded"),
        ({}, Status.PENDING, "drain not recorded"),
        ({"ok": False, "active": None, "queued": None, "fields_present": False}, Status.UNSUPPORTED, NO_COUNTERS),
        ({"ok": False, "active": None, "queued": None}, Status.UNSUPPORTED, NO_COUNTERS),
        (
            {"ok": False, "active": 0, "queued": None, "fields_present": True},
            Status.UNSUPPORTED,
            "the server publishes no queued_requests: an empty queue cannot be shown",
        ),
    ],
)
def test_a_lease_release_that_cannot_be_shown_is_never_a_fail(
    drained: dict[str, Any] | None, status: Status, reason: str
) -> None:
    r = m4r.lease_unshown("M4.x", drained, seen=1)
    assert r is not None and (r.id, r.status, r.reason) == ("M4.x", status, reason)
    assert r.evidence["seen"] == 1
    if reason.startswith("the server publishes no queued"):
        assert r.evidence["drained"] == drained


@pytest.mark.parametrize(
    "drained", [{"ok": True}, {"ok": False, "active": 1, "queued": 0}, {"ok": False, "active": 0, "queued": 0}]
)
def test_a_lease_release_read_from_the_counters_is_shown(drained: dict[str, Any]) -> None:
    assert m4r.lease_unshown("M4.x", drained) is None


# --- the judges on synthetic recovery starts --------------------------------------------

REPRO = "parval run plan.yaml"
NOTE = "reuses M2 unload/reload evidence for the per-start unload/reload"


def judged(tmp_path: Path, *, counts: list[int] | None = None, **events: Any) -> dict[str, Result]:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, **events)
    return {r.id: r for r in m4r.judge_m4(ev.context(plan(counts=counts)))}


def test_a_clean_recovery_start_passes_with_the_count_it_ran_at(tmp_path: Path) -> None:
    res = judged(tmp_path)
    for aid in m4r.ON_RECOVERY:
        r = res[aid]
        assert r.status is Status.PASS, (aid, r.reason)
        assert r.evidence[RECOVERY_COUNT] == 2
        assert NOTE in r.limitations
    assert res["M4.invalid_alongside"].evidence["invalid"] == {"status": 400, "outcome": "http_error"}
    assert res["M4.invalid_alongside"].evidence["rests_on"] == {"compared outputs": 1, "rejected invalid request": 400}
    assert res["M4.targeted_unload"].evidence["rests_on"] == {
        "compared outputs": 2,
        "unload waited": True,
        "later request queued behind": True,
        "unloaded": True,
    }
    assert res["M4.targeted_unload"].evidence["probe"]["later_order"] == "queued_behind"
    assert list(res["M4.targeted_unload"].limitations) == [NOTE]
    assert res["M4.unload_during_first_load"].evidence["rests_on"] == {
        "compared outputs": 2,
        "unload waited for the load": True,
        "unloaded": True,
    }
    lf = res["M4.load_failure_retry"]
    assert lf.evidence["load_failure"]["healthy"] == 2 and lf.evidence["rests_on"] == {"compared outputs": 3}
    na = res["M4.adapter_overrides"]
    assert na.status is Status.NOT_APPLICABLE and not na.limitations
    assert na.reason == (
        "the plan declares no adapter-specific queue/timeout/eviction overrides; shared semantics are F1/F5"
    )
    assert list(res) == list(m4r.JUDGES)


@pytest.mark.parametrize(("count", "ran_at"), [(1, 1), (3, 3), (None, 0), (0, 0), (-1, 0)])
def test_a_pass_names_the_count_the_recovery_start_ran_at(tmp_path: Path, count: object, ran_at: int) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2)
    (start,) = [e for e in ev.events if e["kind"] == "run_start" and e["run"] == "recovery"]
    start["count"] = count
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan(counts=[1, 3])))}
    assert res["M4.invalid_alongside"].status is Status.PASS
    assert res["M4.invalid_alongside"].evidence[RECOVERY_COUNT] == ran_at


def test_a_result_other_than_pass_carries_no_recovery_count(tmp_path: Path) -> None:
    res = judged(tmp_path, m4_invalid_alongside=None)
    r = res["M4.invalid_alongside"]
    assert (r.status, r.reason) == (Status.PENDING, "not recorded")
    assert RECOVERY_COUNT not in r.evidence and NOTE in r.limitations


# --- a recovery start that did not run, crashed or was stopped --------------------------


def test_a_recovery_start_not_run_is_pending_at_the_largest_count(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan(counts=[1, 3])))}
    for aid in m4r.ON_RECOVERY:
        assert (res[aid].status, res[aid].reason) == (Status.PENDING, "recovery start not run (count 3)"), aid
        assert RECOVERY_COUNT not in res[aid].evidence


def test_a_recovery_start_that_could_not_start_is_blocked_with_its_reason(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.append("start_failed", unit="count-1", reason="other start")
    ev.append("start_failed", unit="recovery", reason="executable not found")
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan(counts=[1, 3])))}
    for aid in m4r.ON_RECOVERY:
        r = res[aid]
        assert r.status is Status.BLOCKED, aid
        assert r.reason == "recovery start (count 3) did not start: executable not found"
        assert r.evidence["failure"]["unit"] == "recovery"


@pytest.mark.parametrize(
    ("where", "aid"),
    [
        ("unload during first load", "M4.unload_during_first_load"),
        ("invalid alongside", "M4.invalid_alongside"),
        ("targeted unload", "M4.targeted_unload"),
        ("all unload", "M4.all_unload"),
        ("failed load", "M4.load_failure_retry"),
    ],
)
def test_a_crash_fails_the_probe_it_was_collecting_and_blocks_the_later_ones(
    tmp_path: Path, where: str, aid: str
) -> None:
    res = judged(tmp_path, counts=[1, 3], crash={"where": where})
    r = res[aid]
    assert r.status is Status.FAIL
    assert r.reason == (
        f"recovery start (count 2): server crashed during {where} (exit status -11) while collecting this probe"
    )
    assert r.evidence["violation"] == {
        "run": "recovery",
        "attempt": 0,
        "where": where,
        "exit_code": -11,
        "signal": "SIGSEGV",
    }
    assert r.evidence["log_tail"] == ""
    order = [
        "M4.unload_during_first_load",
        "M4.invalid_alongside",
        "M4.targeted_unload",
        "M4.all_unload",
        "M4.load_failure_retry",
    ]
    for before in order[: order.index(aid)]:
        assert res[before].status is Status.PASS, (before, res[before].reason)
    for after in order[order.index(aid) + 1 :]:
        assert res[after].status is Status.BLOCKED
        assert res[after].reason == (
            f"not collected: the recovery start's server crashed during {where} (exit status -11) before this probe"
        )
        assert res[after].evidence["crash"]["where"] == where


def _recovery_events(tmp_path: Path, **events: Any) -> Events:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, **events)
    return ev


def test_a_crash_named_as_the_load_failure_retry_fails_that_probe(tmp_path: Path) -> None:
    ev = _recovery_events(tmp_path, m4_load_failure=None)
    ev.events.insert(
        -1,
        {
            "kind": "server_crash",
            "run": "recovery",
            "attempt": 0,
            "where": "load failure retry",
            "exit_code": 134,
            "log_tail": "abort",
        },
    )
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}
    r = res["M4.load_failure_retry"]
    assert r.status is Status.FAIL
    assert r.reason == (
        "recovery start (count 2): server crashed during load failure retry (exit status 134) while collecting "
        "this probe"
    )
    assert r.evidence["violation"]["signal"] is None and r.evidence["log_tail"] == "abort"
    assert res["M4.all_unload"].status is Status.PASS


def test_a_crash_after_the_last_probe_leaves_what_was_recorded_to_be_judged(tmp_path: Path) -> None:
    ev = _recovery_events(tmp_path)
    ev.events.insert(-1, {"kind": "server_crash", "run": "recovery", "attempt": 0, "where": "shutdown", "exit_code": 1})
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}
    for aid in m4r.ON_RECOVERY:
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)


def test_a_recovery_start_parval_stopped_blocks_the_probes_it_did_not_reach(tmp_path: Path) -> None:
    ev = _recovery_events(tmp_path, m4_load_failure=None, m4_all_unload=None)
    ev.events.insert(-1, {"kind": "start_timeout", "unit": "recovery", "attempt": 0, "reason": "hung past 60 s"})
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan(counts=[1, 3])))}
    for aid in ("M4.load_failure_retry", "M4.all_unload"):
        assert (res[aid].status, res[aid].reason) == (
            Status.BLOCKED,
            "recovery start (count 2) stopped: hung past 60 s",
        ), aid
    for aid in ("M4.invalid_alongside", "M4.targeted_unload", "M4.unload_during_first_load"):
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)


def test_a_recovery_start_without_its_end_is_pending_never_pass(tmp_path: Path) -> None:
    """A standing start that neither ended, crashed nor was stopped (a record the loader
    does not build today): every probe not recorded is PENDING, the recorded ones judged."""
    ev = _recovery_events(tmp_path, m4_load_failure=None)
    ctx = ev.context(plan(counts=[1, 3]))
    del ctx.rec.ends["recovery"]
    ctx.rec.runs["recovery"]["count"] = None
    res = {r.id: r for r in m4r.judge_m4(ctx)}
    r = res["M4.load_failure_retry"]
    assert (r.status, r.reason) == (Status.PENDING, "recovery start (count 3) did not complete")
    assert res["M4.all_unload"].status is Status.PASS


# --- M4.invalid_alongside ---------------------------------------------------------------

HELD = {"ok": False, "active": 1, "queued": 0, "fields_present": True}


def _invalid(**over: Any) -> dict[str, Any]:
    return {"invalid": {"status": 400, "outcome": "http_error"}, "rejected": True, "drained": dict(DRAINED), **over}


@pytest.mark.parametrize(
    ("probe", "reason"),
    [
        (_invalid(invalid={"status": 200, "outcome": "ok"}), "invalid request answered 200"),
        (_invalid(invalid={"status": 399, "outcome": "ok"}), "invalid request answered 399"),
        (
            _invalid(invalid={"status": None, "outcome": "timeout"}, rejected=False),
            "invalid request got no answer (timeout)",
        ),
        (_invalid(drained=HELD), "lease left held: active_slots 1, queued_requests 0"),
        (
            _invalid(invalid={"status": 200, "outcome": "ok"}, drained=HELD),
            "invalid request answered 200; lease left held: active_slots 1, queued_requests 0",
        ),
    ],
)
def test_an_invalid_request_accepted_or_a_lease_held_fails(tmp_path: Path, probe: dict[str, Any], reason: str) -> None:
    r = judged(tmp_path, m4_invalid_alongside=probe)["M4.invalid_alongside"]
    assert (r.status, r.reason) == (Status.FAIL, reason)
    assert r.evidence["violation"] == reason.split("; ")
    assert r.evidence["invalid"] == probe["invalid"]
    assert r.evidence["compared"] == 1 and r.reproduction == REPRO
    assert RECOVERY_COUNT not in r.evidence


@pytest.mark.parametrize(
    ("probe", "status", "reason"),
    [
        (
            _invalid(invalid={"status": 400, "outcome": "http_error"}),
            Status.PASS,
            "healthy outputs next to an invalid request: 1/1 exact",
        ),
        (
            _invalid(invalid={"status": 422, "outcome": "http_error"}),
            Status.PASS,
            "healthy outputs next to an invalid request: 1/1 exact",
        ),
        (
            _invalid(invalid={"status": None, "outcome": "reset"}, rejected=True),
            Status.PENDING,
            "the invalid request's reply was not recorded",
        ),
        (_invalid(drained={}), Status.PENDING, "drain not recorded"),
        (
            _invalid(drained={"ok": False, "active": None, "queued": None, "fields_present": False}),
            Status.UNSUPPORTED,
            NO_COUNTERS,
        ),
        ({"skipped": "the plan names no requests.invalid"}, Status.PENDING, "the plan names no requests.invalid"),
    ],
)
def test_an_invalid_request_rejected_passes_only_on_its_recorded_reply_and_drain(
    tmp_path: Path, probe: dict[str, Any], status: Status, reason: str
) -> None:
    r = judged(tmp_path, m4_invalid_alongside=probe)["M4.invalid_alongside"]
    assert (r.status, r.reason) == (status, reason)
    if status is not Status.PASS and "skipped" not in probe:
        # the whole probe record (its kind, start and attempt too) beside a verdict it cannot give
        assert r.evidence["invalid"] == {"kind": "m4_invalid_alongside", "run": "recovery", "attempt": 0, **probe}


def test_healthy_outputs_that_differ_next_to_an_invalid_request_fail(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, body=tts_body(2))
    res = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}
    r = res["M4.invalid_alongside"]
    assert r.status is Status.FAIL and r.reason.startswith("healthy outputs next to an invalid request: ")
    assert r.evidence["invalid"] == {"status": 400, "outcome": "http_error"}
    assert r.evidence["failure_kind"] == "output"
    # a lease release that cannot be shown does not hide the wrong outputs
    ev = Events(tmp_path / "undrained")
    baseline_refs(ev)
    recovery_start(ev, 2, body=tts_body(2), m4_invalid_alongside=_invalid(drained={}))
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.invalid_alongside"]
    assert r.status is Status.FAIL and r.reason.startswith("healthy outputs next to an invalid request: ")


# --- M4.load_failure_retry --------------------------------------------------------------


def _load_failure(**over: Any) -> dict[str, Any]:
    return {
        "failure": {"status": 500, "outcome": "http_error"},
        "failed": True,
        "retry": {"status": 200, "outcome": "ok"},
        "retried": True,
        "healthy_in_flight": True,
        "healthy": 2,
        "drained": dict(DRAINED),
        **over,
    }


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"failed": False, "failure": {"status": 200, "outcome": "ok"}}, "broken load answered 200, retry 200"),
        ({"retried": False, "retry": {"status": 503, "outcome": "http_error"}}, "broken load answered 500, retry 503"),
    ],
)
def test_a_broken_load_that_succeeds_or_a_retry_that_fails_fails(
    tmp_path: Path, over: dict[str, Any], reason: str
) -> None:
    lf = _load_failure(**over)
    r = judged(tmp_path, m4_load_failure=lf)["M4.load_failure_retry"]
    assert (r.status, r.reason) == (Status.FAIL, reason)
    assert r.evidence["violation"] == {"failure": lf["failure"], "retry": lf["retry"]}
    assert r.evidence["healthy"] == 2 and r.evidence["kind"] == "m4_load_failure"


def test_a_lease_held_after_the_failed_load_fails(tmp_path: Path) -> None:
    r = judged(tmp_path, m4_load_failure=_load_failure(drained=HELD))["M4.load_failure_retry"]
    assert (r.status, r.reason) == (
        Status.FAIL,
        "after the failed load: lease left held: active_slots 1, queued_requests 0",
    )
    assert r.evidence["violation"] == HELD and r.evidence["compared"] == 3
    assert r.evidence["load_failure"]["drained"] == HELD and r.reproduction == REPRO


@pytest.mark.parametrize(
    ("lf", "status", "reason"),
    [
        (None, Status.PENDING, "not recorded"),
        ({"skipped": "recovery.load_failure: none"}, Status.PENDING, "recovery.load_failure: none"),
        (
            {k: v for k, v in _load_failure().items() if k != "drained"},
            Status.PENDING,
            "recorded without healthy work alongside or a drain check",
        ),
        (_load_failure(healthy=3), Status.PENDING, "2 healthy and 1 retried output(s) recorded (expected 3 and 1)"),
        (
            {k: v for k, v in _load_failure().items() if k != "healthy"},
            Status.PENDING,
            "2 healthy and 1 retried output(s) recorded (expected None and 1)",
        ),
        (_load_failure(drained={}), Status.PENDING, "after the failed load: drain not recorded"),
        (
            _load_failure(drained={"ok": False, "active": 0, "queued": None, "fields_present": True}),
            Status.UNSUPPORTED,
            "after the failed load: the server publishes no queued_requests: an empty queue cannot be shown",
        ),
        (
            _load_failure(healthy_in_flight=False),
            Status.PENDING,
            "the healthy work was not seen in flight before the broken load was sent",
        ),
        (
            {k: v for k, v in _load_failure().items() if k != "healthy_in_flight"},
            Status.PENDING,
            "the healthy work was not seen in flight before the broken load was sent",
        ),
        (
            _load_failure(),
            Status.PASS,
            "failed load of the same registration with healthy work in flight; healthy outputs and the retried "
            "load's output: 3/3 exact",
        ),
    ],
)
def test_a_load_failure_passes_only_with_healthy_work_in_flight_and_a_drain(
    tmp_path: Path, lf: dict[str, Any] | None, status: Status, reason: str
) -> None:
    r = judged(tmp_path, m4_load_failure=lf)["M4.load_failure_retry"]
    assert (r.status, r.reason) == (status, reason)
    if status is Status.PASS or "in flight" in reason or "failed load:" in reason:
        assert r.evidence["load_failure"]["kind"] == "m4_load_failure"
        assert r.evidence["compared"] == 3


def test_wrong_outputs_around_a_failed_load_fail(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, body=tts_body(2), m4_load_failure=_load_failure(healthy_in_flight=False))
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.load_failure_retry"]
    assert r.status is Status.FAIL and r.reason.startswith("failed load of the same registration")
    assert r.evidence["load_failure"]["healthy_in_flight"] is False


# --- M4.targeted_unload and M4.all_unload -----------------------------------------------

NOT_QUEUED = "the later request was not seen queued behind the waiting unload with a slot free"


def _unload_res(tmp_path: Path, which: str, probe: object) -> Result:
    return judged(tmp_path, **{f"m4_{which}_unload": probe})[f"M4.{which}_unload"]


@pytest.mark.parametrize(
    ("which", "route"), [("targeted", "/v1/tasks/unload_models"), ("all", "/v1/tasks/unload_all_models")]
)
def test_an_unload_route_the_server_lacks_names_the_route(tmp_path: Path, which: str, route: str) -> None:
    missing = {"status": 404, "outcome": "http_error", "ms": 1.0, "error": "not found"}
    r = _unload_res(tmp_path, which, unload_event(which, unload=missing, unload_done=0.01))
    assert (r.status, r.reason) == (
        Status.UNSUPPORTED,
        f"this server has no {route} route: the {which} unload answered 404: not found",
    )
    assert r.evidence["unload"] == missing


@pytest.mark.parametrize("which", ["targeted", "all"])
def test_an_unload_violation_in_the_last_try_fails_without_a_try_number(tmp_path: Path, which: str) -> None:
    probe = unload_event(which, unload_done=0.5, requests_done=[1.25], requests_latency=[0.5])
    r = _unload_res(tmp_path, which, probe)
    reason = "unload returned at 0.5s, well before the in-flight work finished (first reply 1.25s, last 1.25s)"
    assert (r.status, r.reason) == (Status.FAIL, reason)
    assert r.evidence["violation"] == reason and r.evidence["unload_done"] == 0.5
    assert r.reproduction == REPRO


def test_barging_fails_with_the_servers_order_as_its_violation(tmp_path: Path) -> None:
    past = {"later_order": "admitted_past", "later_samples": {"polls": 7, "max_active": 2, "max_queued": 0}}
    probe = unload_event("all", tries=1, max_tries=1, **past)
    r = _unload_res(tmp_path, "all", probe)
    words = (
        "a request sent 0.025 s after the all unload (still pending) was admitted while the unload waited "
        "(the server showed 2 active > 1 in front)"
    )
    reason = f"{words}: it barged past the waiting manager, on every one of 1 tries (gaps 0.025 s)"
    assert (r.status, r.reason) == (Status.FAIL, reason)
    assert r.evidence["violation"] == reason and r.reproduction == REPRO


def test_wrong_outputs_around_an_unload_fail(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, body=tts_body(2))
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.all_unload"]
    assert r.status is Status.FAIL
    assert r.reason.startswith("all unload waited for in-flight work; outputs and reload: ")


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"tries": 2}, "1 in-flight and 1 later output(s) and 1 probe record(s) for 2 tr(ies)"),
        ({"busy": 2}, "1 in-flight and 1 later output(s) and 1 probe record(s) for 1 tr(ies)"),
        ({"issued_while_active": False}, "could not observe the work in flight before issuing the unload"),
        ({"unload": {"status": None, "outcome": "reset"}}, "the unload's reply was not recorded (reset)"),
        ({"requests_done": []}, "the in-flight work's replies were not recorded"),
        ({"requests_latency": [0.1, 0.1]}, "the in-flight work's replies were not recorded"),
        ({"later_order": "unobserved", "max_tries": 3}, NOT_QUEUED),
        ({"later_order": "unobserved", "tries": 1}, NOT_QUEUED),
        ({"later_order": "unobserved", "max_tries": 1}, f"{NOT_QUEUED} in 1 tries"),
        (
            {"unloaded_seen": False, "unload_check": {**UNLOADED, "loaded_false": False, "loaded_field": False}},
            "the model was not shown unloaded: /v1/models showed no loaded:false after the in-flight work drained "
            "(the server publishes no `loaded`)",
        ),
        (
            {"unloaded_seen": False},
            "the model was not shown unloaded: /v1/models showed no loaded:false after the in-flight work drained "
            "(too few status samples)",
        ),
        (
            {"unloaded_seen": False, "unload_check": {**UNLOADED, "loaded_false": False, "polls_after": 2}},
            "the model was not shown unloaded: /v1/models showed no loaded:false after the in-flight work drained "
            "(too few status samples)",
        ),
    ],
)
def test_an_unload_passes_only_on_everything_it_needs(tmp_path: Path, over: dict[str, Any], reason: str) -> None:
    r = _unload_res(tmp_path, "targeted", unload_event("targeted", **over))
    status = Status.BLOCKED if reason.endswith("tries") else Status.PENDING
    assert (r.status, r.reason) == (status, reason)
    assert r.evidence["kind"] == "m4_targeted_unload"
    assert RECOVERY_COUNT not in r.evidence


def test_a_missing_later_output_is_pending(tmp_path: Path) -> None:
    ev = _recovery_events(tmp_path)
    (later,) = [e for e in ev.events if e.get("phase") == "unload_all_later"]
    ev.events.remove(later)
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.all_unload"]
    assert (r.status, r.reason) == (
        Status.PENDING,
        "1 in-flight and 0 later output(s) and 1 probe record(s) for 1 tr(ies)",
    )


def test_an_unload_not_recorded_is_pending(tmp_path: Path) -> None:
    r = _unload_res(tmp_path, "all", None)
    assert (r.status, r.reason) == (Status.PENDING, "not recorded")


UNSHOWN_ORDER = (
    "try 1: a request sent 0.025 s after the targeted unload (still pending) was admitted while the unload waited "
    "(the server showed 2 active > 1 in front) (the order is not shown: the server's FIFO is enqueue order, not "
    "packet arrival, and fewer than 2 status reads were answered between the unload's send and the later "
    "request's, so the unload may not have been enqueued yet)"
)


def _two_tries(second: str, max_tries: int) -> list[dict[str, Any]]:
    past = {"later_order": "admitted_past", "later_samples": {"polls": 7, "max_active": 2, "max_queued": 0}}
    return [
        unload_event("targeted", tries=1, max_tries=max_tries, **past),
        unload_event("targeted", tries=2, max_tries=max_tries, later_order=second),
    ]


def test_a_try_admitted_past_without_the_order_shown_is_a_limitation_of_the_pass(tmp_path: Path) -> None:
    r = _unload_res(tmp_path, "targeted", _two_tries("queued_behind", 2))
    assert r.status is Status.PASS, r.reason
    assert list(r.limitations) == [UNSHOWN_ORDER, NOTE]


@pytest.mark.parametrize(("max_tries", "status", "tail"), [(3, Status.PENDING, ""), (2, Status.BLOCKED, " in 2 tries")])
def test_a_try_admitted_past_is_disclosed_beside_an_unshown_order(
    tmp_path: Path, max_tries: int, status: Status, tail: str
) -> None:
    r = _unload_res(tmp_path, "targeted", _two_tries("unobserved", max_tries))
    assert (r.status, r.reason) == (status, f"{NOT_QUEUED}{tail} (1 saw it admitted past the unload, not every try)")
    assert list(r.limitations) == [UNSHOWN_ORDER, NOTE]


def test_a_violation_in_a_superseded_recovery_attempt_names_it(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.append("run_start", run="recovery", attempt=-1, role="recovery", count=2)
    bad = unload_event("all", unload={"status": 500, "outcome": "http_error", "ms": 1.0, "error": "oops"})
    ev.append("m4_all_unload", run="recovery", attempt=-1, **bad)
    ev.append("run_end", run="recovery", attempt=-1)
    recovery_start(ev, 2)
    ctx = ev.context(plan())
    r = {r.id: r for r in m4r.judge_m4(ctx)}["M4.all_unload"]
    assert (r.status, r.reason) == (
        Status.FAIL,
        "in a set-aside recovery attempt (superseded): the all unload answered 500: oops",
    )
    assert r.evidence["violation"]["set_aside"] == "superseded"
    assert m4r.aside_violations(ctx) == [
        {
            "run": "recovery",
            "kind": "m4_all_unload",
            "set_aside": "superseded",
            "violation": "the all unload answered 500: oops",
        }
    ]


# --- M4.unload_during_first_load --------------------------------------------------------


def _first(**over: Any) -> dict[str, Any]:
    return {**FIRST, "listed": True, "ended_unloaded": True, **over}


@pytest.mark.parametrize(
    ("probe", "status", "reason"),
    [
        (None, Status.PENDING, "not recorded"),
        (
            _first(unload={"status": 404, "outcome": "http_error", "error": "nope"}, unload_done=0.01),
            Status.UNSUPPORTED,
            "this server has no /v1/tasks/unload_models route: the unload answered 404: nope",
        ),
        (
            _first(unload_done=0.25, requests_done=[1.0], requests_latency=[0.5]),
            Status.FAIL,
            "unload did not wait for the first load (returned at 0.25s, request done at 1.0s)",
        ),
        (
            _first(unload={"status": None, "outcome": "eof"}),
            Status.PENDING,
            "the unload's reply was not recorded (eof)",
        ),
        (_first(requests_done=[]), Status.PENDING, "the first request's reply times were not recorded"),
        (_first(requests_latency=[]), Status.PENDING, "the first request's reply times were not recorded"),
        (
            _first(unload_check={**UNLOADED, "loaded_false": False}),
            Status.PENDING,
            "the model was not shown unloaded after the unload (too few status samples)",
        ),
        (
            _first(unload_check={**UNLOADED, "reply": {"status": 500}}),
            Status.PENDING,
            "the model was not shown unloaded after the unload (too few status samples)",
        ),
        (
            _first(),
            Status.PASS,
            "unload during the first lazy load waited; reload matches the cold reference: 2/2 exact",
        ),
    ],
)
def test_an_unload_during_the_first_load(
    tmp_path: Path, probe: dict[str, Any] | None, status: Status, reason: str
) -> None:
    r = judged(tmp_path, m4_unload_during_first_load=probe)["M4.unload_during_first_load"]
    assert (r.status, r.reason) == (status, reason)
    if status is Status.FAIL:
        assert r.evidence["violation"] == reason and r.reproduction == REPRO
    if status is Status.UNSUPPORTED:
        assert r.evidence["unload"]["status"] == 404
    if probe is not None and status is not Status.PASS:  # the probe's record stays with the verdict
        assert r.evidence["kind"] == "m4_unload_during_first_load"
        assert r.evidence["requests_done"] == probe["requests_done"]


def test_an_unload_during_the_first_load_that_finished_first_or_was_not_shown_unloaded(tmp_path: Path) -> None:
    late = judged(tmp_path / "late", m4_unload_during_first_load=_first(issued_during_load=False))
    r = late["M4.unload_during_first_load"]
    assert (r.status, r.reason) == (Status.PENDING, "the first load finished before the unload could be issued")
    assert r.evidence["issued_during_load"] is False
    # the status samples decide, not the probe's own `ended_unloaded`
    probe = _first(ended_unloaded=True, unload_check={**UNLOADED, "loaded_false": False})
    r = judged(tmp_path / "both", m4_unload_during_first_load=probe)["M4.unload_during_first_load"]
    assert r.status is Status.PENDING


def test_an_unload_during_the_first_load_needs_both_outputs(tmp_path: Path) -> None:
    for phase in ("unload_during_load_first", "unload_during_load_reload"):
        ev = _recovery_events(tmp_path / phase)
        ev.events.remove(next(e for e in ev.events if e.get("phase") == phase))
        r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.unload_during_first_load"]
        assert (r.status, r.reason) == (
            Status.PENDING,
            "the first request's or the reload's output was not recorded",
        ), phase
        assert r.evidence["kind"] == "m4_unload_during_first_load"


def test_a_reload_that_differs_after_the_first_load_unload_fails(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, body=tts_body(2), m4_unload_during_first_load=_first(issued_during_load=False))
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.unload_during_first_load"]
    assert r.status is Status.FAIL
    assert r.reason.startswith("unload during the first lazy load waited; reload matches the cold reference: ")


# --- violations in set-aside recovery attempts ------------------------------------------


def _aside_ctx(tmp_path: Path, kind: str, *probes: dict[str, Any]) -> Any:
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.append("run_start", run="recovery", attempt=-1, role="recovery", count=2)
    for p in probes:
        ev.append(kind, run="recovery", attempt=-1, **p)
    ev.append("run_abandoned", run="recovery", attempt=-1)
    recovery_start(ev, 2)
    return ev.context(plan())


@pytest.mark.parametrize(
    ("kind", "aid", "probe"),
    [
        ("m4_invalid_alongside", "M4.invalid_alongside", _invalid(drained=HELD)),
        ("m4_load_failure", "M4.load_failure_retry", _load_failure(drained=HELD)),
    ],
)
def test_a_lease_held_in_a_set_aside_attempt_fails(tmp_path: Path, kind: str, aid: str, probe: dict[str, Any]) -> None:
    ctx = _aside_ctx(tmp_path, kind, _invalid() if kind == "m4_invalid_alongside" else _load_failure(), probe)
    r = {r.id: r for r in m4r.judge_m4(ctx)}[aid]
    assert (r.status, r.reason) == (Status.FAIL, "lease left held in a set-aside recovery attempt (abandoned)")
    (held,) = r.evidence["violation"]
    assert held["drained"] == HELD and held["set_aside"] == "abandoned"
    (seen,) = m4r.aside_violations(ctx)
    assert seen == {"run": "recovery", "kind": kind, **probe, "attempt": -1, "set_aside": "abandoned"}


@pytest.mark.parametrize(
    ("kind", "probe"),
    [
        ("m4_invalid_alongside", _invalid()),
        ("m4_invalid_alongside", {"skipped": "no invalid request", "drained": HELD}),
        ("m4_load_failure", _load_failure(drained={"ok": False, "active": None, "queued": None})),
        ("m4_load_failure", {k: v for k, v in _load_failure().items() if k != "drained"}),
        ("m4_load_failure", {"skipped": "none", "drained": HELD}),
        ("m4_all_unload", unload_event("all")),
        ("m4_unload_during_first_load", _first()),
    ],
)
def test_a_clean_or_skipped_set_aside_attempt_shows_no_violation(
    tmp_path: Path, kind: str, probe: dict[str, Any]
) -> None:
    ctx = _aside_ctx(tmp_path, kind, probe)
    assert m4r.aside_violations(ctx) == []
    res = {r.id: r for r in m4r.judge_m4(ctx)}
    for aid in m4r.ON_RECOVERY:
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)


def test_a_first_load_unload_that_kept_the_model_in_a_set_aside_attempt_fails(tmp_path: Path) -> None:
    stuck = _first(unload_check={**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 6})
    ctx = _aside_ctx(tmp_path, "m4_unload_during_first_load", stuck)
    r = {r.id: r for r in m4r.judge_m4(ctx)}["M4.unload_during_first_load"]
    why = "the model stayed loaded after the unload (6 status samples)"
    assert (r.status, r.reason) == (Status.FAIL, f"in a set-aside recovery attempt (abandoned): {why}")
    assert r.evidence["violation"]["set_aside"] == "abandoned"
    assert m4r.aside_violations(ctx) == [
        {"run": "recovery", "kind": "m4_unload_during_first_load", "set_aside": "abandoned", "violation": why}
    ]


def test_barging_on_every_try_of_a_set_aside_attempt_is_listed_once_per_attempt(tmp_path: Path) -> None:
    past = {"later_order": "admitted_past", "later_samples": {"max_active": 2}, "max_tries": 2}
    tries = [unload_event("targeted", tries=i, gap_s=0.5 * i, **past) for i in (1, 2)]
    ctx = _aside_ctx(tmp_path, "m4_targeted_unload", *tries)
    seen = m4r.aside_violations(ctx)
    assert [s["kind"] for s in seen] == ["m4_targeted_unload"]
    assert seen[0]["violation"].endswith("on every one of 2 tries (gaps 0.5, 1.0 s)")
    r = {r.id: r for r in m4r.judge_m4(ctx)}["M4.targeted_unload"]
    assert r.status is Status.FAIL
    assert r.reason.startswith("in a set-aside recovery attempt (abandoned): a request sent 1.0 s after")
    assert [t["tries"] for t in r.evidence["violation"]] == [1, 2]


def test_a_load_failure_that_names_no_healthy_count_expects_none(tmp_path: Path) -> None:
    """No `healthy` recorded: the probe counts as run with no healthy work beside it, so one
    healthy output recorded is a mismatch of the record, never a PASS."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    lf = {k: v for k, v in _load_failure().items() if k != "healthy"}
    recovery_start(ev, 1, m4_load_failure=lf)
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.load_failure_retry"]
    assert (r.status, r.reason) == (Status.PENDING, "1 healthy and 1 retried output(s) recorded (expected None and 1)")


def _served(tmp_path: Path, **events: Any) -> dict[str, Result]:
    """A recovery start whose server_ready names the server's argv (the reproduction shows it)."""
    ev = _recovery_events(tmp_path, **events)
    start = next(i for i, e in enumerate(ev.events) if e["kind"] == "run_start" and e["run"] == "recovery")
    ready = {"kind": "server_ready", "run": "recovery", "attempt": 0, "argv": ["srv", "--port", "9"]}
    ev.events.insert(start + 1, {**ready, "warning_marker": False})
    return {r.id: r for r in m4r.judge_m4(ev.context(plan()))}


SERVED = "parval run plan.yaml   # server: srv --port 9"


def test_an_unload_verdict_reproduces_the_recovery_start_with_its_server(tmp_path: Path) -> None:
    early = unload_event("all", unload_done=0.5, requests_done=[1.25], requests_latency=[0.5])
    past = {"later_order": "admitted_past", "later_samples": {"max_active": 2}, "max_tries": 1}
    res = _served(tmp_path, m4_all_unload=early, m4_targeted_unload=unload_event("targeted", **past))
    assert res["M4.all_unload"].status is Status.FAIL and res["M4.all_unload"].reproduction == SERVED
    barged = res["M4.targeted_unload"]
    assert barged.status is Status.FAIL and barged.reproduction == SERVED
    assert barged.evidence["later_order"] == "admitted_past"
    res = _served(tmp_path / "clean")
    assert res["M4.all_unload"].status is Status.PASS and res["M4.all_unload"].reproduction == SERVED


def test_a_crash_without_a_log_tail_records_an_empty_one(tmp_path: Path) -> None:
    ev = _recovery_events(tmp_path, m4_load_failure=None)
    crash = {"kind": "server_crash", "run": "recovery", "attempt": 0, "where": "failed load", "exit_code": 9}
    ev.events.insert(-1, crash)
    r = {r.id: r for r in m4r.judge_m4(ev.context(plan()))}["M4.load_failure_retry"]
    assert r.status is Status.FAIL and r.evidence["log_tail"] == ""
