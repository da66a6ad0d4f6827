"""M4's unloads and crashes judged on synthetic recovery starts: "unloaded" is what
/v1/models showed (never the reply's list of ids), barging needs the server's observed
order, and a recovery start that crashes fails the probe it was running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.gates.m4_recovery import judge_m4
from parval.gates.quality import q5_intermittent
from parval.status import Result, Status
from tests.gates.m_events import UNLOADED, Events, baseline_refs, plan, recovery_start, unload_event


def m4(tmp_path: Path, **events: Any) -> dict[str, Result]:
    ev = Events(tmp_path)
    baseline_refs(ev)
    recovery_start(ev, 2, **events)
    return {r.id: r for r in judge_m4(ev.context(plan()))}


def test_a_clean_recovery_start_passes(tmp_path: Path) -> None:
    res = m4(tmp_path)
    for aid in ("M4.invalid_alongside", "M4.load_failure_retry", "M4.targeted_unload", "M4.all_unload"):
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)
    assert res["M4.unload_during_first_load"].status is Status.PASS, res["M4.unload_during_first_load"].reason


def test_an_unload_that_answers_but_keeps_the_model_loaded_fails(tmp_path: Path) -> None:
    """The reply lists the model (it lists every known id), but /v1/models showed it loaded
    in every sample after the unload."""
    stuck = {**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 12}
    e = unload_event("targeted", unloaded_seen=False, unload_check=stuck, ended_unloaded=True)
    r = m4(tmp_path, m4_targeted_unload=e)["M4.targeted_unload"]
    assert r.status is Status.FAIL and "loaded in all 12 status samples" in r.reason, r.reason
    # Too few samples to tell: not a PASS, not a FAIL.
    few = {**stuck, "polls_after": 2}
    e = unload_event("targeted", unloaded_seen=False, unload_check=few, ended_unloaded=True)
    assert m4(tmp_path / "few", m4_targeted_unload=e)["M4.targeted_unload"].status is Status.PENDING


def _tries(*orders: str) -> list[dict[str, Any]]:
    """One targeted-unload probe event per try, the later request's order as given."""
    past = {"later_samples": {"polls": 7, "max_active": 2, "max_queued": 0}, "active_while_unload_waits": 2}
    return [
        unload_event(
            "targeted",
            later_order=order,
            tries=i,
            max_tries=len(orders) if order == "queued_behind" else 3,
            gap_s=round(0.025 * (1 + 0.5 * (i - 1)), 6),
            **(past if order == "admitted_past" else {}),
        )
        for i, order in enumerate(orders, 1)
    ]


def test_barging_needs_the_servers_observed_order_on_every_try(tmp_path: Path) -> None:
    """More active slots than the work in front of the unload is barging only when the
    server showed the later request admitted while the unload was still pending, and on
    every try (the gap growing): FIFO is enqueue order, not packet arrival, so once may be a
    busy server that had not enqueued the unload yet. An unobserved order is never FAIL."""
    unobserved = unload_event("targeted", later_order="unobserved", active_while_unload_waits=2, max_tries=3)
    r = m4(tmp_path / "a", m4_targeted_unload=unobserved)["M4.targeted_unload"]
    assert r.status is Status.PENDING and "not seen queued behind" in r.reason, r.reason

    r = m4(tmp_path / "b", m4_targeted_unload=_tries("admitted_past", "admitted_past", "admitted_past"))
    r = r["M4.targeted_unload"]
    assert r.status is Status.FAIL and "barged" in r.reason and "every one of 3 tries" in r.reason, r.reason
    assert "0.025, 0.0375, 0.05" in r.reason, r.reason

    # Seen once, then queued behind: the order was shown; the earlier try is disclosed.
    r = m4(tmp_path / "c", m4_targeted_unload=_tries("admitted_past", "queued_behind"))["M4.targeted_unload"]
    assert r.status is Status.PASS, r.reason
    assert any("try 1" in lim and "enqueue order" in lim for lim in r.limitations), r.limitations

    # Seen once, then never observed: BLOCKED naming both, never FAIL.
    r = m4(tmp_path / "d", m4_targeted_unload=_tries("admitted_past", "unobserved", "unobserved"))
    r = r["M4.targeted_unload"]
    assert r.status is Status.BLOCKED and "in 3 tries" in r.reason and "admitted past" in r.reason, r.reason

    # Two of three: not every try.
    r = m4(tmp_path / "e", m4_targeted_unload=_tries("admitted_past", "admitted_past", "unobserved"))
    assert r["M4.targeted_unload"].status is Status.BLOCKED, r["M4.targeted_unload"].reason


def test_barging_seen_once_in_a_try_that_shows_the_order_fails(tmp_path: Path) -> None:
    """Barging seen once is barging: a try whose server answered status reads sent after the
    unload before the later request was sent (the unload reached it first) and that saw the
    later request admitted past it FAILs, though the next try queued behind (as in a
    recorded `--fault barging` run whose last try was edited to queue behind). A try that
    cannot show the order (too few reads between, or none recorded) stays a limitation."""
    shown = _tries("admitted_past", "queued_behind")
    shown[0]["polls_before_later"] = 3
    r = m4(tmp_path / "a", m4_targeted_unload=shown)["M4.targeted_unload"]
    assert r.status is Status.FAIL, r.reason
    assert r.reason.startswith("try 1 of 2: a request sent 0.025 s after the targeted unload"), r.reason
    assert "barged past the unload waiting at the server (3 status reads sent after the unload" in r.reason

    # The three tries of the barging run, the third edited to queue behind: FAIL on try 1.
    edited = _tries("admitted_past", "admitted_past", "queued_behind")
    for t in edited[:2]:
        t["polls_before_later"] = 4
    r = m4(tmp_path / "b", m4_targeted_unload=edited)["M4.targeted_unload"]
    assert r.status is Status.FAIL and "try 1 of 3" in r.reason, r.reason

    for name, polls in (("one_read", 1), ("unrecorded", None)):
        unshown = _tries("admitted_past", "queued_behind")
        if polls is not None:
            unshown[0]["polls_before_later"] = polls
        r = m4(tmp_path / name, m4_targeted_unload=unshown)["M4.targeted_unload"]
        assert r.status is Status.PASS, (name, r.reason)
        assert any("try 1" in lim and "order is not shown" in lim for lim in r.limitations), r.limitations

    # The unload was already answered when the later request was sent: no order to show.
    answered = _tries("admitted_past", "queued_behind")
    answered[0].update(polls_before_later=5, unload_pending_at_later_send=False)
    assert m4(tmp_path / "c", m4_targeted_unload=answered)["M4.targeted_unload"].status is Status.PASS


def test_an_unload_that_returned_early_in_an_earlier_try_fails(tmp_path: Path) -> None:
    """Each try is judged, not only the last: an unload back well before its in-flight work
    in try 1 fails, whatever try 2 showed."""
    early = unload_event(
        "targeted", later_order="unobserved", tries=1, max_tries=3, unload_done=0.5, requests_done=[1.2]
    )
    clean = unload_event("targeted", tries=2, max_tries=3)
    r = m4(tmp_path, m4_targeted_unload=[early, clean])["M4.targeted_unload"]
    assert r.status is Status.FAIL and r.reason.startswith("try 1: unload returned at 0.5s"), r.reason


def test_a_crash_in_the_recovery_start_fails_its_probe_and_blocks_the_rest(tmp_path: Path) -> None:
    """A SIGSEGV during the all-model unload: that assertion FAILs with the crash, the
    probes recorded before it stand, the load-failure probe after it is BLOCKED (it used to
    read "recovery start did not complete": validation pending)."""
    res = m4(tmp_path, crash={"where": "all unload"})
    assert res["M4.all_unload"].status is Status.FAIL
    assert "crashed during all unload" in res["M4.all_unload"].reason
    assert res["M4.load_failure_retry"].status is Status.BLOCKED and "crashed" in res["M4.load_failure_retry"].reason
    for aid in ("M4.invalid_alongside", "M4.targeted_unload", "M4.unload_during_first_load"):
        assert res[aid].status is Status.PASS, (aid, res[aid].reason)


HELD = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
FIRST_LOAD_SKIPPED = {
    "issued_during_load": True,
    "unload": {"status": 200, "outcome": "ok", "ms": 5.0, "error": ""},
    "listed": True,
    "unload_done": 0.2,
    "requests_done": [1.18],
    "requests_latency": [0.3],
    "ended_unloaded": True,
    "unload_check": dict(UNLOADED),
}
INVALID_HELD = {"invalid": {"status": 400, "outcome": "http_error"}, "rejected": True, "drained": HELD}
FAILED_LOAD_HELD = {
    "failure": {"status": 500, "outcome": "http_error"},
    "failed": True,
    "retry": {"status": 200, "outcome": "ok"},
    "retried": True,
    "healthy_in_flight": True,
    "healthy": 2,
    "drained": HELD,
}


@pytest.mark.parametrize(
    ("kind", "aid", "violation", "words"),
    [
        (
            "m4_all_unload",
            "M4.all_unload",
            unload_event("all", unload_done=0.5, requests_done=[1.2]),
            "well before the in-flight work finished",
        ),
        (
            "m4_targeted_unload",
            "M4.targeted_unload",
            unload_event("targeted", unload_done=0.5, requests_done=[1.2]),
            "well before the in-flight work finished",
        ),
        (
            "m4_unload_during_first_load",
            "M4.unload_during_first_load",
            FIRST_LOAD_SKIPPED,
            "did not wait for the first load",
        ),
        ("m4_invalid_alongside", "M4.invalid_alongside", INVALID_HELD, "lease left held"),
        ("m4_load_failure", "M4.load_failure_retry", FAILED_LOAD_HELD, "lease left held"),
    ],
)
def test_lifecycle_failures_in_a_set_aside_recovery_attempt_count(
    tmp_path: Path, kind: str, aid: str, violation: dict[str, Any], words: str
) -> None:
    """An abandoned recovery attempt whose probe showed a violation (an unload that did not
    wait for its work, a lease left held): that M4 assertion and the model-level Q5 fail,
    however clean the redone attempt."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.append("run_start", run="recovery", attempt=-1, role="recovery", count=2)
    ev.append(kind, run="recovery", attempt=-1, **violation)
    ev.append("run_abandoned", run="recovery", attempt=-1)
    recovery_start(ev, 2)
    ctx = ev.context(plan())
    res = {r.id: r for r in judge_m4(ctx)}
    r = res[aid]
    assert r.status is Status.FAIL and "set-aside" in r.reason and words in r.reason, r.reason
    for other, clean in res.items():  # the redone attempt is clean: nothing else fails
        assert other == aid or clean.status is not Status.FAIL, (other, clean.reason)
    assert q5_intermittent(ctx, list(res.values()), None).status is Status.FAIL


def test_a_busy_client_reading_the_unload_reply_first_is_not_a_violation(tmp_path: Path) -> None:
    """The client read the unload's reply 30 ms before the in-flight one (a busy client, 100
    ms requests): only an unload back well before every in-flight reply skipped the work."""
    late_read = unload_event("targeted", unload_done=1.15, requests_done=[1.18], requests_latency=[0.10])
    assert m4(tmp_path / "a", m4_targeted_unload=late_read)["M4.targeted_unload"].status is Status.PASS
    skipped = unload_event("targeted", unload_done=0.80, requests_done=[1.18], requests_latency=[0.10])
    r = m4(tmp_path / "b", m4_targeted_unload=skipped)["M4.targeted_unload"]
    assert r.status is Status.FAIL and "well before the in-flight work finished" in r.reason


def test_an_unload_route_the_server_lacks_is_unsupported_never_a_fail(tmp_path: Path) -> None:
    """A build without the route answers 404 at once, before the work in flight: that is a
    missing precondition named as such, not an unload that skipped the work."""
    missing = {"status": 404, "outcome": "http_error", "ms": 9.0, "error": "unknown endpoint: /v1/tasks/unload_models"}
    check = {**UNLOADED, "reply": missing, "loaded_false": False, "loaded_field": False, "polls_after": 0}
    for which in ("targeted", "all"):
        e = unload_event(which, unload=missing, unload_check=check, unloaded_seen=False, unload_done=0.02)
        r = m4(tmp_path / which, **{f"m4_{which}_unload": e})[f"M4.{which}_unload"]
        assert r.status is Status.UNSUPPORTED, r.reason
        assert "answered 404" in r.reason and "unknown endpoint" in r.reason, r.reason


def test_an_unload_the_server_answers_with_an_error_fails(tmp_path: Path) -> None:
    """A route that exists but answers 500 to the unload is an observed violation."""
    broken = {"status": 500, "outcome": "http_error", "ms": 9.0, "error": "unload failed"}
    check = {**UNLOADED, "reply": broken, "loaded_false": False, "polls_after": 8}
    e = unload_event("targeted", unload=broken, unload_check=check, unloaded_seen=False)
    r = m4(tmp_path, m4_targeted_unload=e)["M4.targeted_unload"]
    assert r.status is Status.FAIL and "the targeted unload answered" in r.reason and "500" in r.reason, r.reason


def first_load(**over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "issued_during_load": True,
        "unload": {"status": 200, "outcome": "ok", "ms": 5.0, "error": ""},
        "listed": True,
        "unload_done": 1.2,
        "requests_done": [1.18],
        "requests_latency": [0.3],
        "ended_unloaded": True,
        "unload_check": dict(UNLOADED),
    }
    return {**e, **over}


def test_an_unload_that_does_not_wait_for_the_first_load_fails(tmp_path: Path) -> None:
    """Back a service time before the first request's reply: it skipped the load in progress."""
    e = first_load(unload_done=0.2)
    r = m4(tmp_path, m4_unload_during_first_load=e)["M4.unload_during_first_load"]
    assert r.status is Status.FAIL, r.reason
    assert r.reason == "unload did not wait for the first load (returned at 0.2s, request done at 1.18s)"
    # Issued once the load had finished: nothing to wait for, so no violation.
    late = first_load(unload_done=0.2, issued_during_load=False)
    r = m4(tmp_path / "late", m4_unload_during_first_load=late)["M4.unload_during_first_load"]
    assert r.status is Status.PENDING and "finished before the unload" in r.reason, r.reason


def test_a_model_that_stays_loaded_after_the_first_load_unload_fails(tmp_path: Path) -> None:
    stuck = {**UNLOADED, "loaded_false": False, "still_loaded": True, "polls_after": 9}
    r = m4(tmp_path, m4_unload_during_first_load=first_load(unload_check=stuck))["M4.unload_during_first_load"]
    assert r.status is Status.FAIL, r.reason
    assert r.reason == "the model stayed loaded after the unload (9 status samples)"


def test_a_pass_needs_the_unloads_own_200(tmp_path: Path) -> None:
    """The waiting is read from the unload's reply time, so an unload whose reply was not
    recorded (lost, or a transport error without a status) is PENDING, never a PASS; an
    error status from a route that exists is the violation."""
    for which in ("targeted", "all"):
        for lost in ({}, {"status": None, "outcome": "timeout", "ms": 30000.0, "error": "read timeout"}):
            e = unload_event(which, unload=lost)
            r = m4(tmp_path / f"{which}-{len(lost)}", **{f"m4_{which}_unload": e})[f"M4.{which}_unload"]
            outcome = "timeout" if lost else "no reply"
            assert r.status is Status.PENDING, r.reason
            assert r.reason == f"the unload's reply was not recorded ({outcome})", r.reason
        refused = {"status": 503, "outcome": "http_error", "ms": 4.0, "error": "server busy"}
        r = m4(tmp_path / f"{which}-503", **{f"m4_{which}_unload": unload_event(which, unload=refused)})
        assert r[f"M4.{which}_unload"].status is Status.FAIL, r[f"M4.{which}_unload"].reason
        assert r[f"M4.{which}_unload"].reason == f"the {which} unload answered 503: server busy"
        bare = {"status": 500, "outcome": "http_error", "ms": 4.0, "error": ""}
        r = m4(tmp_path / f"{which}-500", **{f"m4_{which}_unload": unload_event(which, unload=bare)})
        assert r[f"M4.{which}_unload"].reason == f"the {which} unload answered 500"
        long = {**refused, "error": "e" * 200}
        r = m4(tmp_path / f"{which}-long", **{f"m4_{which}_unload": unload_event(which, unload=long)})
        assert r[f"M4.{which}_unload"].reason == f"the {which} unload answered 503: " + "e" * 120
    for lost in ({}, {"status": None, "outcome": "timeout"}):
        r = m4(tmp_path / f"first-{len(lost)}", m4_unload_during_first_load=first_load(unload=lost))
        assert r["M4.unload_during_first_load"].status is Status.PENDING, r["M4.unload_during_first_load"].reason
    refused = {"status": 500, "outcome": "http_error", "ms": 4.0, "error": "unload failed"}
    r = m4(tmp_path / "first-500", m4_unload_during_first_load=first_load(unload=refused))
    assert r["M4.unload_during_first_load"].status is Status.FAIL
    assert "the first-load unload answered 500: unload failed" in r["M4.unload_during_first_load"].reason


def test_a_first_load_unload_route_the_server_lacks_is_unsupported(tmp_path: Path) -> None:
    missing = {"status": 404, "outcome": "http_error", "ms": 9.0, "error": "unknown endpoint: /v1/tasks/unload_models"}
    check = {**UNLOADED, "reply": missing, "loaded_false": False, "loaded_field": False, "polls_after": 0}
    e = first_load(unload=missing, unload_check=check, unload_done=0.02)
    r = m4(tmp_path, m4_unload_during_first_load=e)["M4.unload_during_first_load"]
    assert r.status is Status.UNSUPPORTED and "answered 404" in r.reason, r.reason


def test_barging_on_every_try_of_a_set_aside_attempt_fails_m4_and_q5(tmp_path: Path) -> None:
    """An abandoned recovery attempt whose three tries all saw the later request admitted
    past the waiting unload: barging, however clean the redone attempt; one such try alone
    is not."""
    for name, orders, fails in (("all", ["admitted_past"] * 3, True), ("one", ["admitted_past"], False)):
        ev = Events(tmp_path / name)
        baseline_refs(ev)
        ev.append("run_start", run="recovery", attempt=-1, role="recovery", count=2)
        for one in _tries(*orders):
            ev.append("m4_targeted_unload", run="recovery", attempt=-1, **one)
        ev.append("run_abandoned", run="recovery", attempt=-1)
        recovery_start(ev, 2)
        ctx = ev.context(plan())
        res = {r.id: r for r in judge_m4(ctx)}
        r = res["M4.targeted_unload"]
        if fails:
            assert r.status is Status.FAIL and "set-aside" in r.reason and "every one of 3 tries" in r.reason, r.reason
            assert q5_intermittent(ctx, list(res.values()), None).status is Status.FAIL
        else:
            assert r.status is Status.PASS, r.reason


def test_barging_shown_once_in_a_set_aside_attempt_fails_m4(tmp_path: Path) -> None:
    """One try of an abandoned recovery attempt that shows the unload reached the server
    first and saw the later request admitted past it: barging, however clean the redone
    attempt."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    ev.append("run_start", run="recovery", attempt=-1, role="recovery", count=2)
    (one,) = _tries("admitted_past")
    ev.append("m4_targeted_unload", run="recovery", attempt=-1, **{**one, "polls_before_later": 2})
    ev.append("run_abandoned", run="recovery", attempt=-1)
    recovery_start(ev, 2)
    res = {r.id: r for r in judge_m4(ev.context(plan()))}
    r = res["M4.targeted_unload"]
    assert r.status is Status.FAIL and "set-aside" in r.reason and "try 1 of 1" in r.reason, r.reason
