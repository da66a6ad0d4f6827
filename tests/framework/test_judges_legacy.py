"""The legacy-runtime judges over synthetic observations: each passes what the original
guard shows and fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.judges import run_judge
from parval.framework.judges_f1 import LEGACY_SLOTS_TEXT
from parval.framework.observed import ms
from parval.status import Status

from .factkit import facts, fl, manager


def first(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "m",
        "loaded_published": True,
        "end_loaded": True,
        "flagged": False,
        "labels": ["first0", "first1", "first2"],
    }
    return facts([fl(f"first{i}", 0.0, 0.35 + 0.15 * i) for i in range(3)], **{**base, **extra})


def test_first_session_passes_one_published_session() -> None:
    v = run_judge("legacy.first_session", first())
    assert v.status is Status.PASS, v.detail()


def test_first_session_fails_an_unpublished_model_or_a_wrong_output() -> None:
    v = run_judge("legacy.first_session", first(end_loaded=False))
    assert v.status is Status.FAIL and "the model ended loaded" in v.detail()
    f = first()
    f["flights"][2]["output"] = "other"
    v = run_judge("legacy.first_session", f)
    assert v.status is Status.FAIL and "differ: first2" in v.detail()


def test_first_session_stays_pending_without_a_loaded_field() -> None:
    v = run_judge("legacy.first_session", first(loaded_published=False, end_loaded=None))
    assert v.status is Status.PENDING and "no `loaded` field" in v.detail()


def skip(bulk_done: float = 0.035, unloaded: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """The first load in progress (0.2 s load + 0.15 s service) when the bulk unload is sent."""
    base: dict[str, Any] = {
        "model": "m",
        "during_loaded": False,
        "ended_loaded": True,
        "flagged": False,
        "loaded_published": True,
    }
    base.update(extra)
    return facts(
        [
            fl("first", 0.0, 0.35),
            manager("bulk-unload", 0.03, bulk_done, unloaded=[] if unloaded is None else unloaded),
        ],
        **base,
    )


def test_unpublished_skip_passes_an_immediate_unload_that_skips_the_load() -> None:
    v = run_judge("legacy.unpublished_skip", skip())
    assert v.status is Status.PASS, v.detail()


def test_unpublished_skip_fails_an_unload_that_waited_for_the_load() -> None:
    v = run_judge("legacy.unpublished_skip", skip(bulk_done=0.36, unloaded=["m"]))
    assert v.status is Status.FAIL
    assert "without the unpublished model (unloaded=['m'])" in v.detail()


def test_unpublished_skip_a_skipping_reply_read_late_is_not_forced_not_a_fail() -> None:
    """The reply that lists no model is what a skip answers; read as the load finished
    (0.33 against 0.35) it once FAILed "it did not wait" on its time alone."""
    v = run_judge("legacy.unpublished_skip", skip(bulk_done=0.33))
    assert v.status is Status.BLOCKED and v.retry and "whether it answered before" in v.detail(), v.detail()
    late_then_clear = {"attempts": [skip(bulk_done=0.33), skip()]}
    assert run_judge("legacy.unpublished_skip", late_then_clear).status is Status.PASS


def test_unpublished_skip_fails_a_lost_load_and_blocks_on_a_published_one() -> None:
    v = run_judge("legacy.unpublished_skip", skip(ended_loaded=False))
    assert v.status is Status.FAIL and "the skipped load was published" in v.detail()
    v = run_judge("legacy.unpublished_skip", skip(during_loaded=True))
    assert v.status is Status.BLOCKED and v.retry and "already published" in v.detail()


def test_unpublished_skip_on_a_legacy_server_without_a_loaded_field_is_unsupported_not_a_fail() -> None:
    """The precondition once came from the flagged calibration start, so a legacy server
    without `loaded` waited for a publication it never shows and FAILed."""
    v = run_judge("legacy.unpublished_skip", skip(loaded_published=False, during_loaded=None, ended_loaded=False))
    assert v.status is Status.UNSUPPORTED and "no `loaded` field" in v.detail()
    v = run_judge("legacy.unpublished_skip", skip(during_loaded=None, ended_loaded=False))
    assert v.status is Status.BLOCKED and "no status sample" in v.detail()


def serial(done: list[float | None], wall_ms: float = 150.0) -> dict[str, Any]:
    """Three requests sent together; each reply reports a 150 ms server-side run."""
    flights = [{**fl(f"concurrent{i}", 0.0, d), "wall_ms": wall_ms} for i, d in enumerate(done)]
    return facts(flights, flagged=False, labels=[f"concurrent{i}" for i in range(len(done))])


def test_guard_serializes_passes_runs_one_after_another() -> None:
    v = run_judge("legacy.guard_serializes", serial([0.15, 0.30, 0.45]))
    assert v.status is Status.PASS, v.detail()


def test_guard_serializes_needs_the_requests_in_flight_together() -> None:
    """Requests sent one after another's reply never overlap with or without a guard: no
    evidence either way (a client starved on a busy machine can send that late)."""
    f = serial([0.15, 0.30, 0.45])
    for x, send in zip(f["flights"], (0.0, 0.15, 0.30), strict=True):
        x["t_send"] = send
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.BLOCKED and v.retry and "not all in flight at once" in v.detail(), v.detail()
    f = serial([0.15])
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.BLOCKED and "not all in flight at once" in v.detail(), v.detail()


def test_guard_serializes_is_not_held_to_a_calibrated_service_on_a_busy_machine() -> None:
    """The old rule wanted completion gaps of 0.6 x the median of two idle requests; then
    gaps over a third of the quickest client-side request. Under a load average of 14 the
    real legacy server's 25 ms requests (each ~100 ms as the client saw it) came back 21 ms
    apart and FAILed. Now each request's own server-side time places its run: 25 ms runs
    are too short against the margin there, so that is not forced, never a FAIL."""
    v = run_judge("legacy.guard_serializes", serial([0.133, 0.154, 0.205], wall_ms=25.0))
    assert v.status is Status.BLOCKED and v.retry and "too short" in v.detail()
    # A reply read 60 ms late still leaves the runs apart.
    assert run_judge("legacy.guard_serializes", serial([0.21, 0.30, 0.45])).status is Status.PASS


def test_guard_serializes_a_reply_read_late_is_not_an_overlap() -> None:
    """Each run's start was once taken as its reply minus its server-side time: a correct
    guard with three 150 ms runs whose second reply was read 100 ms late ([0.15, 0.40,
    0.45]) FAILed "ran at the same time for 99 ms". The runs fit one after another within
    their send and reply times, so their overlap is unseen (tried again), never a FAIL."""
    v = run_judge("legacy.guard_serializes", serial([0.15, 0.40, 0.45]))
    assert v.status is Status.BLOCKED and v.retry, v.detail()
    assert "fit one after another with a reply read late" in v.detail()
    late_then_clear = {"attempts": [serial([0.15, 0.40, 0.45]), serial([0.15, 0.30, 0.45])]}
    assert run_judge("legacy.guard_serializes", late_then_clear).status is Status.PASS


def test_guard_serializes_fails_runs_that_cannot_have_taken_turns() -> None:
    """Three 150 ms runs sent together whose replies all came within 310 ms: no pair has to
    overlap, but the three cannot all have run one after another before their replies."""
    v = run_judge("legacy.guard_serializes", serial([0.20, 0.30, 0.31]))
    assert v.status is Status.FAIL and "could not have run one after another" in v.detail(), v.detail()


def test_guard_serializes_fails_concurrent_execution() -> None:
    v = run_judge("legacy.guard_serializes", serial([0.15, 0.16, 0.30]))
    assert v.status is Status.FAIL and "concurrent0 and concurrent1 ran at the same time for 139 ms" in v.detail()
    f = serial([0.15, 0.30, None])
    f["settled"] = False
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.FAIL and "every request completed" in v.detail()
    f = serial([0.15, 0.30, 0.45])
    del f["flights"][0]["wall_ms"]
    assert run_judge("legacy.guard_serializes", f).status is Status.PENDING


def wedged(status: int, message: str, done: float) -> dict[str, Any]:
    # factkit.TIMING: the overdue bound is 30 ms, the tolerance 75 ms.
    return facts(
        [fl("holder", 0.0, 0.15), fl("probe", 0.06, done, status=status, message=message)], bound_ms=30, flagged=False
    )


def test_wedged_text_passes_an_immediate_wedged_rejection() -> None:
    ok = wedged(503, "current inference has run 60 ms (> 30 ms); likely wedged", 0.062)
    v = run_judge("legacy.wedged_text", ok)
    assert v.status is Status.PASS, v.detail()


def holder_ran(wall_ms: float | None, probe_done: float = 0.10) -> dict[str, Any]:
    """A holder answered at 0.30 (its own run `wall_ms` long), a caller served 200."""
    holder = {**fl("holder", 0.0, 0.30), **({"wall_ms": wall_ms} if wall_ms is not None else {})}
    return facts([holder, fl("probe", 0.06, probe_done, status=200)], bound_ms=30, flagged=False)


def test_wedged_text_fails_a_caller_served_while_the_holder_ran() -> None:
    v = run_judge("legacy.wedged_text", holder_ran(300.0))  # the holder ran from 0.00: it held the lock
    assert v.status is Status.FAIL and "while the holder still ran" in v.detail()
    v = run_judge("legacy.wedged_text", wedged(500, "boom", 0.07))
    assert v.status is Status.FAIL and "(got 500: boom)" in v.detail()


def test_wedged_text_a_holder_not_shown_holding_the_lock_is_not_forced() -> None:
    """A starved holder can reach the lock after the caller: a caller served first is right.
    Only the holder's own run, begun before the caller was served, shows it held the lock."""
    for wall_ms in (None, 150.0):  # unknown, or a run that began at 0.15, after the caller's reply
        v = run_judge("legacy.wedged_text", holder_ran(wall_ms))
        assert v.status is Status.BLOCKED and "not shown to have begun" in v.detail(), (wall_ms, v.detail())


def test_wedged_text_judges_the_text_not_its_latency() -> None:
    # The wedged text delivered late on a busy machine is still the decisive reply.
    slow = wedged(503, "current inference has run 60 ms (> 30 ms); likely wedged", 0.14)
    assert run_judge("legacy.wedged_text", slow).status is Status.PASS
    # A caller that waited and timed out met a holder not yet older than the bound: not forced.
    late = wedged(503, "timed out after 30 ms waiting for the inference lock", 0.20)
    v = run_judge("legacy.wedged_text", late)
    assert v.status is Status.BLOCKED and v.retry


def test_status_fields_fails_any_slot_field_or_no_entry() -> None:
    ok = facts([], entries=[["created", "id", "object"], ["id", "object"]])
    assert run_judge("legacy.status_fields", ok).status is Status.PASS
    bad = facts([], entries=[["id", "object", "slots"], ["id", "queued_requests"]])
    v = run_judge("legacy.status_fields", bad)
    assert v.status is Status.FAIL and "(found ['queued_requests', 'slots'])" in v.detail()
    assert run_judge("legacy.status_fields", facts([], entries=[])).status is Status.FAIL


def forms(results: list[dict[str, Any]], before: int | None = 3, after: int | None = 3) -> dict[str, Any]:
    return facts([], results=results, models_before=before, models_after=after)


REJECTED: list[dict[str, Any]] = [
    {"slots": s, "status": 400, "message": LEGACY_SLOTS_TEXT} for s in (1, 2, None, False, "4")
]


def test_registration_forms_passes_every_form_rejected() -> None:
    v = run_judge("legacy.registration_forms", forms(REJECTED))
    assert v.status is Status.PASS, v.detail()


def test_registration_forms_fails_an_accepted_form_or_a_registered_model() -> None:
    accepted = [*REJECTED[:4], {"slots": "4", "status": 200, "message": ""}]
    v = run_judge("legacy.registration_forms", forms(accepted, after=4))
    assert v.status is Status.FAIL
    assert 'slots="4" rejected 400' in v.detail() and "(3 -> 4)" in v.detail()
    assert run_judge("legacy.registration_forms", forms(REJECTED, after=4)).status is Status.FAIL


def test_config_forms_fails_a_start_that_accepted_the_slots_key() -> None:
    ok = {"starts": [{"slots": s, "exit_code": 1, "exited": True, "message": True} for s in (1, None)]}
    assert run_judge("legacy.config_forms", ok).status is Status.PASS
    # What the real legacy server shows: it starts (and is stopped: exit 0).
    seen = {"starts": [{"slots": s, "exit_code": 0, "exited": False, "message": False} for s in (1, None)]}
    v = run_judge("legacy.config_forms", seen)
    assert v.status is Status.FAIL
    assert "config slots=1: startup failed" in v.detail() and "config slots=null" in v.detail()


def test_runtime_kept_on_legacy_fails_slot_fields_on_a_registration_without_slots() -> None:
    from .test_judges_generated import legacy_runtime_kept

    assert run_judge("legacy.runtime_kept", legacy_runtime_kept()).status is Status.PASS
    f = legacy_runtime_kept()
    f["entry_keys"] = ["active_slots", "id", "slots"]
    v = run_judge("legacy.runtime_kept", f)
    assert v.status is Status.FAIL and "no slot fields (found ['active_slots', 'slots'])" in v.detail()


def test_guard_serializes_places_a_zero_length_run_at_its_reply() -> None:
    """A reply that reports 0 ms ran at its reply: nothing overlaps it, and runs that short
    cannot show an order (not forced, never a FAIL)."""
    f = serial([0.15, 0.30, 0.45])
    f["flights"][1]["wall_ms"] = 0.0
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.BLOCKED and "the requests run 0 ms, too short" in v.detail(), v.detail()


def test_wedged_text_and_registration_forms_need_the_status_and_the_text_together() -> None:
    # A 503 with another text is neither the wedged rejection nor the timed-out wait.
    v = run_judge("legacy.wedged_text", wedged(503, "server busy", 0.07))
    assert v.status is Status.FAIL and "(got 503: server busy)" in v.detail(), v.detail()
    # The wedged words on another status are no rejection.
    v = run_judge("legacy.wedged_text", wedged(500, "likely wedged", 0.07))
    assert v.status is Status.FAIL and "(got 500: likely wedged)" in v.detail(), v.detail()
    # Served once the holder had finished: the caller met no wedged holder (not forced).
    v = run_judge("legacy.wedged_text", wedged(200, "", 0.20))
    assert v.status is Status.BLOCKED and "the holder finished before the caller was answered" in v.detail()
    # A 400 that does not say the slots key is unsupported, or the text on another status.
    for wrong in ({"status": 400, "message": "bad request"}, {"status": 500, "message": LEGACY_SLOTS_TEXT}):
        results = [*REJECTED[:4], {"slots": "4", **wrong}]
        assert run_judge("legacy.registration_forms", forms(results)).status is Status.FAIL, wrong


def test_config_forms_needs_the_exit_its_code_and_the_text_together() -> None:
    for start in (
        {"exit_code": 1, "exited": True, "message": False},  # exit 1 without the rejection text
        {"exit_code": 2, "exited": True, "message": True},  # the text, another exit code
        {"exit_code": 1, "exited": False, "message": True},  # the text, but it kept running
    ):
        f = {"starts": [{"slots": 1, **start}]}
        assert run_judge("legacy.config_forms", f).status is Status.FAIL, start


def test_guard_serializes_pending_without_server_side_times_names_what_is_missing() -> None:
    f = serial([0.15, 0.30, 0.45])
    del f["flights"][0]["wall_ms"]
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.PENDING and "no server-side time (timing.wall_ms)" in v.detail(), v.detail()


def test_guard_serializes_caps_a_server_side_time_at_the_clients_own_wait() -> None:
    """A run cannot have lasted longer than its client waited for it: a reported 300 ms on
    a 150 ms wait (another clock) is read as 150 ms, so two turns sent at 0.1 s still fit
    one after another, not an overlap."""
    f = serial([0.25, 0.40])
    for x in f["flights"]:
        x["t_send"] = 0.1
    f["flights"][0]["wall_ms"] = 300.0
    v = run_judge("legacy.guard_serializes", f)
    assert v.status is Status.PASS, v.detail()


def test_guard_serializes_tries_every_order_not_only_the_listed_one() -> None:
    # The first-listed request was answered second: the runs fit in the other order.
    v = run_judge("legacy.guard_serializes", serial([0.30, 0.15, 0.45]))
    assert v.status is Status.PASS, v.detail()


def test_guard_serializes_a_late_read_names_the_pair_that_seems_to_overlap() -> None:
    v = run_judge("legacy.guard_serializes", serial([0.15, 0.40, 0.45]))
    assert "concurrent1 and concurrent2 overlap 99 ms if each reply was read" in v.detail(), v.detail()


def test_unpublished_skip_a_late_read_reply_names_how_far_from_the_load_it_was_read() -> None:
    v = run_judge("legacy.unpublished_skip", skip(bulk_done=0.33))
    assert f"read {ms(0.33 - 0.35)} ms from the first request's" in v.detail(), v.detail()


def test_wedged_text_a_caller_that_waited_then_timed_out_says_why_it_is_not_forced() -> None:
    v = run_judge("legacy.wedged_text", wedged(503, "timed out after 30 ms waiting for the inference lock", 0.20))
    assert v.status is Status.BLOCKED and "it waited, then timed out" in v.detail(), v.detail()


def test_registration_forms_is_pending_when_either_models_count_is_unpublished() -> None:
    # Comparing a count with a missing one would FAIL on what was never observed.
    for before, after in ((3, None), (None, 3), (None, None)):
        v = run_judge("legacy.registration_forms", forms(REJECTED, before=before, after=after))
        assert v.status is Status.PENDING and "publishes no `models` count" in v.detail(), (before, after)


def test_runtime_kept_an_unlisted_entry_is_pending_naming_what_is_missing() -> None:
    from .test_judges_generated import legacy_runtime_kept

    f = legacy_runtime_kept()
    f["entry_keys"] = None
    v = run_judge("legacy.runtime_kept", f)
    assert v.status is Status.PENDING and "not listed in /v1/models" in v.detail(), v.detail()
