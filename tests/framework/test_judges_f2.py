"""The F2 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import OUT, config_refs, facts, fl, load_reply, manager, stagger

OPT0, OPT1 = "out-opt0", "out-opt1"
REFS = config_refs(base=OUT, opt0=OPT0, opt1=OPT1)
RECONFIGURED = {"id": "m", "loaded": True, "reconfigured": True}


def flight_of(f: dict[str, Any], label: str) -> dict[str, Any]:
    return next(x for x in f["flights"] if x["label"] == label)


# -- unload during the first load -------------------------------------------------------------


def unload_load(unload_done: float = 0.45, **over: Any) -> dict[str, Any]:
    """The first request loads (0.0 -> 0.40); the unload sent at 0.1 waits for it."""
    base: dict[str, Any] = {
        "model": "m",
        "in_progress": True,
        "stall": None,
        "ended_unloaded": True,
        "samples": [[0.01, 1, 0, False, None, 2], [0.3, 1, 0, True, 4, 2]],
    }
    base.update(over)
    return facts([fl("first", 0.0, 0.40), manager("unload", 0.1, unload_done)], **base)


def test_unload_during_load_passes_an_unload_that_waited() -> None:
    v = run_judge("f2.unload_during_load", unload_load())
    assert v.status is Status.PASS, v.detail()
    targeted = unload_load()
    flight_of(targeted, "unload")["json"] = {"id": "m", "loaded": False}
    assert run_judge("f2.unload_during_load", targeted).status is Status.PASS


def test_unload_during_load_fails_an_unload_that_did_not_wait_for_the_load() -> None:
    v = run_judge("f2.unload_during_load", unload_load(unload_done=0.15))
    assert v.status is Status.FAIL
    assert "waited for the load in progress and its request (250 ms early)" in v.detail()


def test_unload_during_load_fails_a_model_left_loaded_or_an_unnamed_unload() -> None:
    v = run_judge("f2.unload_during_load", unload_load(ended_unloaded=False))
    assert v.status is Status.FAIL and "ended unloaded" in v.detail()
    f = unload_load()
    flight_of(f, "unload")["json"] = {"unloaded": []}
    v = run_judge("f2.unload_during_load", f)
    assert v.status is Status.FAIL and "naming the model" in v.detail()


def test_unload_during_load_is_pending_or_blocked_when_the_situation_was_not_forced() -> None:
    v = run_judge("f2.unload_during_load", unload_load(in_progress=False))
    assert v.status is Status.BLOCKED and v.retry and "before it could be observed" in v.detail()
    # Not forced outranks any timing: a load seen too late never judges the unload's order.
    v = run_judge("f2.unload_during_load", unload_load(in_progress=False, unload_done=0.15))
    assert v.status is Status.BLOCKED
    stall = {"canaries": [{"t_send": 0.2, "t_done": 0.449, "status": 200}], "manager_t_done": 0.45}
    v = run_judge("f2.unload_during_load", unload_load(stall=stall))
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail()
    assert "stalled while the unload waited" in v.detail()  # the blocker names what waited


def test_unload_during_load_with_a_stalled_registry_judges_no_order() -> None:
    """A stalled registry blocks; the unload's early answer was still judged beside it and
    its FAIL outranked the BLOCKED."""
    stall = {"canaries": [{"t_send": 0.1, "t_done": 0.149, "status": 200}], "manager_t_done": 0.15}
    v = run_judge("f2.unload_during_load", unload_load(unload_done=0.15, stall=stall))
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail(), v.detail()


# -- reconfiguration with queued work ---------------------------------------------------------


def barrier(older_output: str = OPT0, later_done: float = 0.75) -> dict[str, Any]:
    """Under opt0: two occupants, an older queued request, a reconfiguration to base, later."""
    return facts(
        [
            fl("occupant0", 0.0, 0.30, output=OPT0),
            fl("occupant1", 0.0, 0.30, output=OPT0),
            fl("older", 0.05, 0.45, output=older_output),
            load_reply("reconfigure-base", 0.10, 0.60, json=RECONFIGURED),
            fl("later", 0.2, later_done),
        ],
        count=2,
        occupants=["occupant0", "occupant1"],
        refs=REFS,
        staggers=[stagger("the reconfiguration", "reconfigure-base", behind=("occupant0", "occupant1", "older"))],
        waits=[{"what": "2 active slot(s) for m", "seen": True}],
    )


def test_queued_before_barrier_passes_work_bound_on_each_side_of_the_barrier() -> None:
    v = run_judge("f2.queued_before_barrier", barrier())
    assert v.status is Status.PASS, v.detail()


def test_queued_before_barrier_fails_an_older_request_that_bound_the_new_configuration() -> None:
    # lease_binding: the waiter queued before the barrier runs with the new configuration.
    v = run_judge("f2.queued_before_barrier", barrier(older_output=OUT))
    assert v.status is Status.FAIL
    assert "previous config) outputs equal their registration's 'opt0' reference (differ: older)" in v.detail()


def test_queued_before_barrier_fails_a_reconfiguration_not_reported() -> None:
    f = barrier()
    flight_of(f, "reconfigure-base")["json"] = {"id": "m", "loaded": True}
    v = run_judge("f2.queued_before_barrier", f)
    assert v.status is Status.FAIL and "reconfigured=true" in v.detail()


def test_queued_before_barrier_blocks_a_later_request_that_barged() -> None:
    v = run_judge("f2.queued_before_barrier", barrier(later_done=0.30))
    assert v.status is Status.BLOCKED and "judged by F1.fifo" in v.detail()


def not_undone(ended_unloaded: bool = True, older_done: float = 0.45) -> dict[str, Any]:
    return facts(
        [
            fl("occupant0", 0.0, 0.30),
            fl("occupant1", 0.0, 0.30),
            fl("older", 0.05, older_done),
            load_reply("unload", 0.10, 0.60, json={"id": "m", "loaded": False}),
        ],
        count=2,
        occupants=["occupant0", "occupant1"],
        ended_unloaded=ended_unloaded,
        staggers=[stagger("the unload", "unload", behind=("occupant0", "occupant1", "older"))],
        waits=[{"what": "2 active slot(s) for m", "seen": True}],
    )


def test_unload_not_undone_passes_and_fails_a_model_reloaded_by_an_older_waiter() -> None:
    assert run_judge("f2.unload_not_undone", not_undone()).status is Status.PASS
    v = run_judge("f2.unload_not_undone", not_undone(ended_unloaded=False))
    assert v.status is Status.FAIL and "no older waiter reloaded it" in v.detail()


def test_unload_not_undone_fails_an_older_request_run_after_the_unload() -> None:
    v = run_judge("f2.unload_not_undone", not_undone(older_done=0.80))
    assert v.status is Status.FAIL and "the older request ran before the unload" in v.detail()


def overlapping(m2_done: float = 0.75, later_output: str = OPT1) -> dict[str, Any]:
    return facts(
        [
            fl("occupant0", 0.0, 0.30),
            fl("occupant1", 0.0, 0.30),
            load_reply("reconfigure-opt0", 0.05, 0.60, json=RECONFIGURED),
            load_reply("reconfigure-opt1", 0.10, m2_done, json=RECONFIGURED),
            fl("later", 0.2, 0.95, output=later_output),
        ],
        count=2,
        occupants=["occupant0", "occupant1"],
        refs=REFS,
        staggers=[
            stagger("the first reconfiguration", "reconfigure-opt0", behind=("occupant0", "occupant1")),
            stagger("the second reconfiguration", "reconfigure-opt1", behind=("occupant0", "occupant1")),
        ],
        waits=[{"what": "2 active slot(s) for m", "seen": True}],
    )


def test_overlapping_managers_names_by_how_much_a_manager_ran_out_of_order() -> None:
    # reconfigure-opt0 answered at 0.60, reconfigure-opt1 at 0.35: 250 ms ahead of it.
    v = run_judge("f2.overlapping_managers", overlapping(m2_done=0.35))
    assert "(reconfigure-opt1 finished 250 ms before reconfigure-opt0)" in v.detail(), v.detail()


def test_overlapping_managers_passes_enqueue_order() -> None:
    v = run_judge("f2.overlapping_managers", overlapping())
    assert v.status is Status.PASS, v.detail()


def test_overlapping_managers_fails_managers_out_of_order_or_the_wrong_configuration() -> None:
    v = run_judge("f2.overlapping_managers", overlapping(m2_done=0.40))
    assert v.status is Status.FAIL and "the managers completed in enqueue order" in v.detail()
    # Two replies read 50 ms out of order on a busy client show no order either way.
    v = run_judge("f2.overlapping_managers", overlapping(m2_done=0.55))
    assert v.status is Status.BLOCKED and v.retry
    assert "reconfigure-opt0 and reconfigure-opt1 finished too close together" in v.detail()
    v = run_judge("f2.overlapping_managers", overlapping(later_output=OPT0))
    assert v.status is Status.FAIL and "'opt1' reference (differ: later)" in v.detail()


# -- invalid replacements ---------------------------------------------------------------------


def kept(what: str, after: str, slots: int = 2) -> dict[str, Any]:
    return {"what": what, "after": after, "sample": {"slots": slots, "loaded": True, "max_parallel": 4}}


def over_capacity(
    status: int = 400, message: str = "does not support the requested slots (capacity=4)", slots_after: int = 2
) -> dict[str, Any]:
    body = {"error": {"type": "invalid_request_error", "message": message}} if status == 400 else RECONFIGURED
    return facts(
        [
            load_reply("resize-over-capacity", 0.0, 0.01, status=status, json=body, message=message),
            fl("after-slots=5", 0.02, 0.2),
        ],
        count=2,
        capacity=4,
        kept=[kept("slots=5", "after-slots=5", slots_after)],
    )


def test_unsupported_count_passes_a_rejection_naming_the_capacity() -> None:
    v = run_judge("f2.unsupported_count", over_capacity())
    assert v.status is Status.PASS, v.detail()


def test_unsupported_count_fails_an_accepted_count_or_a_changed_registration() -> None:
    v = run_judge("f2.unsupported_count", over_capacity(status=200, message=""))
    assert v.status is Status.FAIL and "400 invalid_request_error naming capacity=4" in v.detail()
    v = run_judge("f2.unsupported_count", over_capacity(slots_after=5))
    assert v.status is Status.FAIL and "saw slots=5" in v.detail()


def test_unsupported_count_needs_the_400_its_error_type_and_the_capacity_together() -> None:
    """Each part of the promised rejection on its own is not it."""
    msg = "does not support the requested slots (capacity=4)"
    for status, kind, message in (
        (503, "invalid_request_error", msg),  # the text, but not the status
        (400, "server_error", msg),  # the status and text, another error type
        (400, "invalid_request_error", "does not support the requested slots"),  # no capacity named
    ):
        f = over_capacity()
        f["flights"][0] = load_reply(
            "resize-over-capacity",
            0.0,
            0.01,
            status=status,
            json={"error": {"type": kind, "message": message}},
            message=message,
        )
        v = run_judge("f2.unsupported_count", f)
        assert v.status is Status.FAIL, (status, kind, message, v.detail())
    f = over_capacity()
    f["flights"][0] = load_reply("resize-over-capacity", 0.0, 0.01, status=400, json="not json", message=msg)
    assert run_judge("f2.unsupported_count", f).status is Status.FAIL


def test_unsupported_count_fails_a_registration_read_back_as_no_object() -> None:
    """/v1/models answering something other than an entry object after the rejection shows
    no kept registration: a violation, not missing evidence."""
    f = over_capacity()
    f["kept"][0]["sample"] = ["slots", 2]
    v = run_judge("f2.unsupported_count", f)
    assert v.status is Status.FAIL and "saw slots=None, loaded=None, max_parallel=None" in v.detail(), v.detail()


NONE_ACCEPTED = object()
STRING_TWO = "2"


def metadata(accepted: Any = NONE_ACCEPTED) -> dict[str, Any]:
    values: list[Any] = [0, 17, 1.5, STRING_TWO, None, True]
    text = "model slots must be an integer between 1 and 16"
    forms = [
        load_reply(
            f"slots-{x!r}", 0.1, 0.11, status=200 if x is accepted else 400, message="" if x is accepted else text
        )
        for x in values
    ]
    return facts(
        [
            load_reply("bad-task", 0.0, 0.01, status=500, message="unknown task"),
            fl("after-an invalid task", 0.02, 0.2),
            *forms,
            fl("after-invalid slots values", 0.3, 0.45),
        ],
        count=2,
        capacity=4,
        forms=[{"slots": x, "label": f"slots-{x!r}"} for x in values],
        kept=[
            kept("an invalid task", "after-an invalid task"),
            kept("invalid slots values", "after-invalid slots values"),
        ],
    )


def test_invalid_metadata_passes_every_rejection() -> None:
    v = run_judge("f2.invalid_metadata", metadata())
    assert v.status is Status.PASS, v.detail()


def test_invalid_metadata_fails_an_accepted_string_slots_value() -> None:
    v = run_judge("f2.invalid_metadata", metadata(accepted=STRING_TWO))
    assert v.status is Status.FAIL and "slots='2' rejected 400" in v.detail()


def test_invalid_metadata_accepts_exactly_400_and_above_as_a_rejection() -> None:
    for status, verdict in ((400, Status.PASS), (399, Status.FAIL), (None, Status.FAIL)):
        f = metadata()
        f["flights"][0] = load_reply("bad-task", 0.0, 0.01, status=status, message="unknown task")
        assert run_judge("f2.invalid_metadata", f).status is verdict, status
    # A slots value answered with the promised text but not 400 is not the rejection.
    f = metadata()
    text = "model slots must be an integer between 1 and 16"
    f["flights"][2] = load_reply("slots-0", 0.1, 0.11, status=500, message=text)
    assert run_judge("f2.invalid_metadata", f).status is Status.FAIL


def resize(shown: bool = True, json: Any = RECONFIGURED) -> dict[str, Any]:
    return facts(
        [
            load_reply("resize-1", 0.0, 0.2, json=json),
            fl("after-resize", 0.3, 0.45),
            load_reply("resize-2", 0.5, 0.7, json=RECONFIGURED),
        ],
        count=2,
        other=1,
        resize_shown=shown,
    )


def test_valid_resize_passes_and_fails_a_resize_that_never_showed() -> None:
    assert run_judge("f2.valid_resize", resize()).status is Status.PASS
    v = run_judge("f2.valid_resize", resize(shown=False))
    assert v.status is Status.FAIL and "/v1/models shows slots=1, loaded" in v.detail()
    v = run_judge("f2.valid_resize", resize(json={"id": "m", "loaded": True}))
    assert v.status is Status.FAIL and "resize 2 -> 1 answered 200 reconfigured=true" in v.detail()


# -- same-ID publication ----------------------------------------------------------------------


def same(after: int = 2, listed: int = 1) -> dict[str, Any]:
    return facts(
        [load_reply("register0", 0.0, 0.3), load_reply("register1", 0.0, 0.31)],
        sid="m-same",
        models_before=1,
        models_after=after,
        listed_ids=["m", *["m-same"] * listed],
    )


def test_concurrent_same_id_passes_one_entry_and_fails_a_duplicate() -> None:
    assert run_judge("f2.concurrent_same_id", same()).status is Status.PASS
    v = run_judge("f2.concurrent_same_id", same(after=3, listed=2))
    assert v.status is Status.FAIL
    assert "/health models +2" in v.detail() and "lists m-same once" in v.detail()


def test_concurrent_same_id_without_a_health_models_count_is_pending_not_a_fail() -> None:
    """A /health without `models` once read as 0 and FAILed."""
    f = same()
    del f["models_before"], f["models_after"]
    v = run_judge("f2.concurrent_same_id", f)
    assert v.status is Status.PENDING and "publishes no `models` count" in v.detail()


def post_commit(entry_loaded: Any = False, drained: bool = True, broken: int = 500) -> dict[str, Any]:
    return facts(
        [
            load_reply("reconfigure-missing", 0.0, 0.1, status=broken),
            fl("request-while-broken", 0.2, 0.21, status=500, model="m-same", message="load failed"),
            load_reply("reconfigure-good", 0.3, 0.5),
            fl("request-after-retry", 0.6, 0.9, model="m-same"),
        ],
        sid="m-same",
        entry_loaded=entry_loaded,
        drained=drained,
        refs={**REFS, "m-same|base": {"cold": [OUT], "warm": [OUT]}},
    )


def test_post_commit_failure_passes_a_clean_failure_and_retry() -> None:
    v = run_judge("f2.post_commit_failure", post_commit())
    assert v.status is Status.PASS, v.detail()
    assert "after the retry outputs equal their registration's 'base' cold reference" in v.detail()


def test_post_commit_failure_fails_a_partial_pool_a_held_lease_or_a_silent_success() -> None:
    v = run_judge("f2.post_commit_failure", post_commit(entry_loaded=True))
    assert v.status is Status.FAIL and "no partial pool" in v.detail()
    v = run_judge("f2.post_commit_failure", post_commit(drained=False))
    assert v.status is Status.FAIL and "released its lease" in v.detail()
    v = run_judge("f2.post_commit_failure", post_commit(broken=200))
    assert v.status is Status.FAIL and "fails after commit is an error" in v.detail()


def test_post_commit_failure_reads_400_as_a_failure_and_a_silent_request_as_none() -> None:
    assert run_judge("f2.post_commit_failure", post_commit(broken=400)).status is Status.PASS
    f = post_commit()
    f["flights"][1] = fl("request-while-broken", 0.2, 0.21, status=400, model="m-same", message="load failed")
    assert run_judge("f2.post_commit_failure", f).status is Status.PASS
    f["flights"][1] = fl("request-while-broken", 0.2, None, status=None, model="m-same", message="")
    assert run_judge("f2.post_commit_failure", f).status is not Status.PASS


def test_post_commit_failure_fails_a_request_served_by_the_broken_configuration() -> None:
    # Its load failed after commit: a 2xx on it was served by no pool of that configuration.
    f = post_commit()
    f["flights"][1] = fl("request-while-broken", 0.2, 0.21, status=200, model="m-same")
    v = run_judge("f2.post_commit_failure", f)
    assert v.status is Status.FAIL and v.problems == ["a request on it fails cleanly"], v.detail()


# -- deferred callbacks -----------------------------------------------------------------------


def batch(
    batch_done: float | None = 0.50, drained: bool = True, events: list[Any] | None = None, **over: Any
) -> dict[str, Any]:
    """A batch of two requests (0.0 -> 0.50) with an unload sent at 0.3 that waited for it."""
    done = [{"type": "task.batch.result"}, {"type": "task.batch.done"}, "[DONE]"]
    base: dict[str, Any] = {
        "model": "m",
        "held": True,
        "batch_done_before_unload": False,
        "batch_t_send": 0.0,
        "batch_t_done": batch_done,
        "events": done if events is None else events,
        "drained": drained,
    }
    base.update(over)
    return facts([manager("unload", 0.3, 0.55), fl("after", 0.9, 1.05)], **base)


def test_native_batch_passes_a_lease_held_through_the_exchange() -> None:
    v = run_judge("f2.native_batch", batch())
    assert v.status is Status.PASS, v.detail()


def test_native_batch_fails_an_unload_that_did_not_wait_or_a_lease_kept_after_a_drop() -> None:
    v = run_judge("f2.native_batch", batch(batch_done=None))
    assert v.status is Status.PENDING  # the exchange's end was not recorded: nothing judged
    assert "the batch exchange's end was not recorded" in v.detail()
    v = run_judge("f2.native_batch", batch(batch_done=1.20))
    assert v.status is Status.FAIL and "waited for the whole batch exchange" in v.detail()
    v = run_judge("f2.native_batch", batch(drained=False))
    assert v.status is Status.FAIL and "abandoned after one event released its lease" in v.detail()
    v = run_judge("f2.native_batch", batch(events=[{"type": "task.batch.result"}]))
    assert v.status is Status.FAIL and "with its done event" in v.detail()


def test_native_batch_reads_the_exchange_end_after_it_came_not_the_instant_the_unload_settled() -> None:
    """The old probe read the batch reply the moment the unload settled: on a busy client
    the last event had not been read yet, and the judge failed a correct server."""
    # The exchange's end read 90 ms after the unload's reply: within its own margin.
    assert run_judge("f2.native_batch", batch(batch_done=0.64)).status is Status.PASS
    v = run_judge("f2.native_batch", batch(batch_done_before_unload=True))
    assert v.status is Status.BLOCKED and v.retry and "finished before the unload was sent" in v.detail()
    v = run_judge("f2.native_batch", batch(held=False))
    assert v.status is Status.BLOCKED and v.retry and "never seen holding a slot" in v.detail()


def test_native_batch_names_by_how_much_the_unload_skipped_the_exchange() -> None:
    # The unload answered at 0.55, the exchange ended at 1.30.
    v = run_judge("f2.native_batch", batch(batch_done=1.30))
    assert "(answered 750 ms before it ended)" in v.detail(), v.detail()


def test_native_batch_margin_is_a_quarter_of_the_exchange_measured_from_its_send() -> None:
    """The exchange 0.30 -> 0.80 earns a 125 ms margin (a quarter of its own 500 ms): an
    unload answered 250 ms before its end skipped it."""
    v = run_judge("f2.native_batch", batch(batch_done=0.80, batch_t_send=0.30))
    assert v.status is Status.FAIL and "(answered 250 ms before it ended)" in v.detail(), v.detail()


def test_native_batch_needs_both_the_done_event_and_the_stream_end() -> None:
    for events in (
        [{"type": "task.batch.result"}, {"type": "task.batch.done"}],  # no [DONE]
        [{"type": "task.batch.result"}, "[DONE]"],  # no done event
    ):
        v = run_judge("f2.native_batch", batch(events=events))
        assert v.status is Status.FAIL and v.problems == ["the batch exchange completed with its done event"], events


def test_runtime_kept_fails_a_resize_or_registration_that_left_the_parallel_runtime() -> None:
    """Runtime selection is immutable: after a resize to one slot or a registration without
    slots the entry must still show the parallel runtime's counters and capacity."""
    from .test_judges_generated import runtime_kept

    assert run_judge("f2.runtime_kept", runtime_kept()).status is Status.PASS
    f = runtime_kept()
    f["entries"]["resized"] = {"slots": None, "active": None, "queued": None, "loaded": True, "max_parallel": None}
    v = run_judge("f2.runtime_kept", f)
    assert v.status is Status.FAIL and "after a resize to one slot: slot counters" in v.detail()
    f = runtime_kept()
    f["entries"]["registered"] = None
    assert run_judge("f2.runtime_kept", f).status is Status.BLOCKED


def test_runtime_kept_fails_an_entry_missing_any_one_slot_counter_or_its_capacity() -> None:
    """Each of active, queued and max_parallel_slots is part of the parallel runtime's entry:
    one missing on its own is a runtime that changed."""
    from .test_judges_generated import runtime_kept

    for key, what in (("resized", "after a resize to one slot"), ("registered", "a registration without slots")):
        for field in ("active", "queued", "max_parallel"):
            f = runtime_kept()
            f["entries"][key] = {**f["entries"][key], field: None}
            v = run_judge("f2.runtime_kept", f)
            assert v.status is Status.FAIL and f"{what}: slot counters" in v.detail(), (key, field, v.detail())


def test_runtime_kept_fails_a_resize_to_one_slot_shown_with_another_count() -> None:
    from .test_judges_generated import runtime_kept

    f = runtime_kept()
    f["entries"]["resized"] = {**f["entries"]["resized"], "slots": 2}
    v = run_judge("f2.runtime_kept", f)
    assert v.status is Status.FAIL and "after a resize to one slot: slot counters" in v.detail(), v.detail()


def test_runtime_kept_still_judges_the_registration_when_the_resize_was_never_seen() -> None:
    # The resize not being observed leaves the registration's entry to judge: its lost
    # counters are a violation, and the unseen resize is named.
    from .test_judges_generated import runtime_kept

    f = runtime_kept()
    f["entries"]["resized"] = None
    v = run_judge("f2.runtime_kept", f)
    assert v.status is Status.BLOCKED and "never showed the model loaded after a resize to one slot" in v.detail()
    f["entries"]["registered"] = {**f["entries"]["registered"], "max_parallel": None}
    v = run_judge("f2.runtime_kept", f)
    assert v.status is Status.FAIL and "a registration without slots: slot counters" in v.detail(), v.detail()


def test_unload_during_load_after_the_first_reply_is_not_forced() -> None:
    # The first request was answered (0.40) before the unload was sent (0.45): nothing to wait for.
    f = unload_load()
    f["flights"][1] = manager("unload", 0.45, 0.50)
    v = run_judge("f2.unload_during_load", f)
    assert v.status is Status.BLOCKED and "its waiting is unseen" in v.detail(), v.detail()
