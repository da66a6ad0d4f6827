"""Judges of the F2 observations: the first published pool (F2.first_publish, both
runtimes), unload during a first load (F2.unload_vs_load, both runtimes), reconfiguration
with queued work, invalid replacements and runtime selection, same-ID publication and
deferred-callback leases. Pure functions of the recorded facts; `JUDGES` maps the key each
observation names to its judge (a key keeps the prefix of the probe that first recorded it:
`f1.first_wave` and the `legacy.*` keys below judge F2)."""

from __future__ import annotations

from parval.framework.observed import (
    STALLED,
    Facts,
    FlightFact,
    Judge,
    Sample,
    Verdict,
    all_ok,
    flight,
    listed,
    margin_s,
    ms,
    named,
    outputs_match,
    queued_work_opening,
    samples,
    stalled,
    unloaded_ids,
)
from parval.jsontypes import JsonObject
from parval.procedure.entry import CTEST_PART, Entry, framework_entry

# The slot fields the parallel runtime adds to /v1/models (F1.legacy_admission and F2
# runtime selection check that the legacy runtime lists none).
SLOT_FIELDS = ("slots", "active_slots", "queued_requests", "max_parallel_slots")
SLOTS_RANGE_TEXT = "model slots must be an integer between 1 and 16"
BARGED = (
    "the later request ran ahead of the waiting reconfiguration (FIFO barging, judged "
    "by F1.fifo), so which configuration it should bind cannot be judged here"
)


# -- F2.first_publish ----------------------------------------------------------------------------


def first_labels(f: Facts) -> list[str]:
    """The n+1 concurrent first requests a first wave sends at count n."""
    return [f"first{i}" for i in range(int(f["count"]) + 1)]


def load_seen_in_progress(rows: list[Sample]) -> bool:
    """A status sample showed the first requests admitted before the pool was published."""
    for s in rows:
        if s.loaded:
            return False
        if (s.active or 0) >= 1 and s.loaded is False:
            return True
    return False


def _first_pool(v: Verdict, f: Facts) -> None:
    """What one complete first pool must show: every first request completed, the load seen
    in progress and all n slots active in it, one capacity published once, loaded false ->
    true once, never more than n leases or sessions."""
    n = int(f["count"])
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, named(f, *first_labels(f)), "concurrent first requests")
    rows = samples(f)
    if not rows:
        raise KeyError("no status sample of the first wave was recorded")
    if not load_seen_in_progress(rows):
        v.not_forced("the first load was never seen in progress (no sample with a request active before publication)")
    max_active = max((s.active or 0 for s in rows), default=0)
    if max_active < n:
        v.not_forced(f"the status never showed the {n} slot(s) of the pool active at once (max {max_active})")
    else:
        v.require(True, f"all {n} slot(s) were seen active in the first wave")
    caps = [s.capacity for s in rows]
    published = sorted({c for c in caps if c is not None})
    appearances = sum(1 for a, b in zip(caps, caps[1:], strict=False) if a is None and b is not None)
    v.require(
        len(published) <= 1 and appearances <= 1,
        f"max_parallel_slots appeared once with one value (seen {published}, {appearances} appearance(s))",
    )
    loaded = [bool(s.loaded) for s in rows]
    flips = sum(1 for a, b in zip(loaded, loaded[1:], strict=False) if a != b)
    v.require(flips <= 1, f"loaded went false -> true once ({flips} change(s))")
    v.require(max_active <= n, f"never more than {n} active slot(s) (max {max_active})")
    if f.get("traced"):
        sessions = f.get("sessions") or []
        v.require(len(sessions) <= n, f"{len(sessions)} distinct session(s) served {n} slot(s)")
    if f.get("flagged"):
        slots_field = {s.slots for s in rows}
        v.require(slots_field == {n}, f"/v1/models reports slots={n} (saw {sorted(map(str, slots_field))})")


def first_wave(f: Facts) -> Verdict:
    """F2.first_publish: the pool above, and every output equals the registration's reference."""
    v = Verdict()
    _first_pool(v, f)
    outputs_match(v, f, "base", named(f, *first_labels(f)), "first-wave")
    return v


def first_session(f: Facts) -> Verdict:
    """F2.first_publish on the legacy path: concurrent first requests all complete with the
    reference output and the model ends loaded (when `loaded` is published at all)."""
    v = Verdict()
    items = listed(f, "labels")
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, items, "concurrent first requests")
    outputs_match(v, f, "base", items, "legacy first-request")
    if f.get("loaded_published"):
        v.require(f.get("end_loaded") is True, "the model ended loaded")
    else:
        v.pend("the server publishes no `loaded` field, so the published session is not observable")
    return v


# -- F2.unload_vs_load ---------------------------------------------------------------------------


def unload_during_load(f: Facts) -> Verdict:
    """An unload sent while the first load runs waits for the load and its request, names
    the model, and leaves it unloaded with drained counters; the first output is cold."""
    v = Verdict()
    model = str(f["model"])
    first = flight(f, "first")
    unload = flight(f, "unload")
    if not f["in_progress"]:
        v.not_forced("the first load finished before it could be observed in progress")
        return v
    stall = f.get("stall")
    if stall is not None and stalled(stall):
        v.block(STALLED.format(what="the unload"))
    v.require(bool(f["settled"]), "both completed within bound")
    all_ok(v, [first], "the first request")
    outputs_match(v, f, "base", [first], "the first request", phase="cold")
    ok_reply = unload.status == 200 and (
        model in unloaded_ids(unload) or unload.json() == {"id": model, "loaded": False}
    )
    v.require(ok_reply, f"the unload answered 200 naming the model (got {unload.status})")
    if not v.blockers and first.t_done <= unload.t_send + margin_s(f):
        v.not_forced("the first request was answered about when the unload was sent, so its waiting is unseen")
    elif not v.blockers:  # a stalled registry answers in its own order: the unload's is not judged
        early = unload.t_done < first.t_done - margin_s(f)
        v.require(
            not early,
            "the unload waited for the load in progress and its request"
            + (f" ({ms(first.t_done - unload.t_done)} ms early)" if early else ""),
        )
    v.require(bool(f["ended_unloaded"]), "the model ended unloaded with drained counters")
    return v


def unpublished_skip(f: Facts) -> Verdict:
    """F2.unload_vs_load: a bulk unload sent while the first load is in progress answers at
    once without the unpublished model, and the load is still published afterwards."""
    v = Verdict()
    first = flight(f, "first")
    bulk = flight(f, "bulk-unload")
    model = str(f["model"])
    if not f["loaded_published"]:
        v.unsupported("the legacy /v1/models publishes no `loaded` field, so an unpublished load is not observable")
        return v
    during = f["during_loaded"]
    if during is not False:
        v.not_forced(
            "the load was already published when the unload was sent"
            if during
            else "no status sample was taken between the first request and the unload"
        )
        return v
    v.require(bool(f["settled"]), "the first request completed")
    skipped = v.require(
        bulk.status == 200 and model not in unloaded_ids(bulk),
        f"bulk unload answered at once without the unpublished model (unloaded={unloaded_ids(bulk)})",
    )
    # The reply is the evidence: one that skipped the load but was read only as the load
    # finished shows nothing about waiting (a busy machine reads replies late).
    if bulk.t_done < first.t_done - margin_s(f):
        v.require(True, "it did not wait for the load in progress")
    elif skipped:
        v.not_forced(
            f"the bulk unload's reply was read {ms(bulk.t_done - first.t_done)} ms from the first request's, so "
            "whether it answered before the load finished is unseen"
        )
    all_ok(v, [first], "the first request")
    v.require(bool(f.get("ended_loaded")), "the model ended loaded (the skipped load was published)")
    return v


# -- F2.reconfigure_queued -----------------------------------------------------------------------


def _reconfigured(v: Verdict, manager: FlightFact, what: str, *, body_in_text: bool = True) -> None:
    body = manager.json()
    got = f"{manager.status} {body}" if body_in_text else f"{manager.status}"
    v.require(
        manager.status == 200 and isinstance(body, dict) and body.get("reconfigured") is True,
        f"{what} answered 200 reconfigured=true (got {got})",
    )


def queued_before_barrier(f: Facts) -> Verdict:
    """Work queued before a reconfiguration binds the previous configuration; work after
    the barrier binds the new one."""
    v, occupants, (older, manager, later) = queued_work_opening(
        f, "older", "reconfigure-base", "later", managers=("reconfigure-base",)
    )
    if not v.blockers:
        all_ok(v, [*occupants, older, later], "requests")
        _reconfigured(v, manager, "the reconfiguration")
        outputs_match(v, f, "opt0", [*occupants, older], "work bound before the barrier (previous config)")
        if later.t_done < manager.t_done - margin_s(f):
            v.block(BARGED)
        else:
            outputs_match(v, f, "base", [later], "work after the barrier (new config)")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


def unload_not_undone(f: Facts) -> Verdict:
    """A request queued before a targeted unload runs first, and does not reload the model
    after the unload."""
    v, occupants, (older, manager) = queued_work_opening(f, "older", "unload", managers=("unload",))
    if not v.blockers:
        all_ok(v, [*occupants, older, manager], "requests and the unload")
        outputs_match(v, f, "base", [*occupants, older], "requests")
        v.require(older.t_done <= manager.t_done + margin_s(f), "the older request ran before the unload")
        v.require(
            bool(f.get("ended_unloaded")), "the model ended unloaded (no older waiter reloaded it after the unload)"
        )
    return v


# -- F2.invalid_replacement and runtime selection ------------------------------------------------


def _kept(v: Verdict, f: Facts, entry: JsonObject) -> None:
    """After a rejected replacement the working registration is unchanged and serves."""
    n, cap, what = f["count"], f["capacity"], str(entry["what"])
    sample = entry.get("sample")
    seen: JsonObject = sample if isinstance(sample, dict) else {}
    v.require(
        sample is not None
        and seen.get("slots") == n
        and seen.get("loaded") is True
        and seen.get("max_parallel") == cap,
        f"after {what}: slots={n}, loaded, max_parallel_slots={cap} kept "
        f"(saw slots={seen.get('slots')}, loaded={seen.get('loaded')}, "
        f"max_parallel={seen.get('max_parallel')})",
    )
    after = flight(f, str(entry["after"]))
    all_ok(v, [after], f"a request after {what}")
    outputs_match(v, f, "base", [after], f"after {what}")


def _kept_after(v: Verdict, f: Facts, what: str) -> None:
    """The registration as recorded right after `what` (missing: KeyError, not judged)."""
    entries = [e for e in f["kept"] if e["what"] == what]
    if not entries:
        raise KeyError(f"no record of the registration after {what}")
    for entry in entries:
        _kept(v, f, entry)


def unsupported_count(f: Facts) -> Verdict:
    """A replacement with more slots than the capacity is a 400 naming the capacity, and
    the working registration is kept."""
    v = Verdict()
    cap = int(f["capacity"])
    reply = flight(f, "resize-over-capacity")
    body = reply.json()
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    v.require(
        reply.status == 400 and kind == "invalid_request_error" and f"capacity={cap}" in reply.message,
        f"slots={cap + 1} against capacity {cap}: 400 invalid_request_error naming capacity={cap} "
        f"(got {reply.status} {reply.message[:120]})",
    )
    _kept_after(v, f, f"slots={cap + 1}")
    return v


def invalid_metadata(f: Facts) -> Verdict:
    """An unknown task and every invalid slots value are rejected (slots: 400 with the range
    text), and the working registration is kept after each."""
    v = Verdict()
    bad = flight(f, "bad-task")
    v.require(bad.status is not None and bad.status >= 400, f"an unknown task is rejected (got {bad.status})")
    _kept_after(v, f, "an invalid task")
    if not f["forms"]:
        raise KeyError("no invalid slots form was recorded")
    for form in f["forms"]:
        reply = flight(f, str(form["label"]))
        v.require(
            reply.status == 400 and SLOTS_RANGE_TEXT in reply.message,
            f"slots={form['slots']!r} rejected 400 '{SLOTS_RANGE_TEXT}' (got {reply.status})",
        )
    _kept_after(v, f, "invalid slots values")
    return v


def valid_resize(f: Facts) -> Verdict:
    """A valid resize reconfigures, shows in /v1/models, serves, and resizes back."""
    v = Verdict()
    n, other = int(f["count"]), int(f["other"])
    resize = flight(f, f"resize-{other}")
    _reconfigured(v, resize, f"resize {n} -> {other}", body_in_text=False)
    v.require(bool(f["resize_shown"]), f"/v1/models shows slots={other}, loaded")
    after = flight(f, "after-resize")
    all_ok(v, [after], "a request after the resize")
    outputs_match(v, f, "base", [after], "after the resize")
    back = flight(f, f"resize-{n}")
    v.require(back.status == 200, f"resize back to {n} answered 200")
    return v


def runtime_kept(f: Facts) -> Verdict:
    """Runtime selection cannot change through registration or reconfiguration: after a
    resize to one slot and after a registration without slots, /v1/models still shows the
    parallel runtime's slot counters and a published capacity (a legacy entry has none)."""
    v = Verdict()
    n = int(f["count"])
    all_ok(
        v,
        named(f, "resize-1", "after-resize-1", f"resize-back-{n}", "register-omitted", "after-register-omitted"),
        "the resize across one, the registration without slots and a request after each",
    )
    for key, what, slots in (
        ("resized", "after a resize to one slot", 1),
        ("registered", "a registration without slots", None),
    ):
        entry = f["entries"][key]
        if entry is None:
            v.not_forced(f"/v1/models never showed the model loaded {what}")
            continue
        parallel = (
            entry.get("active") is not None
            and entry.get("queued") is not None
            and entry.get("max_parallel") is not None
        )
        v.require(
            parallel and (slots is None or entry.get("slots") == slots),
            f"{what}: slot counters and a published capacity kept (saw {entry})",
        )
    return v


def legacy_runtime_kept(f: Facts) -> Verdict:
    """F2 runtime selection on the unflagged runtime: a registration without slots is served
    and listed without slot fields (it did not switch to the parallel runtime)."""
    v = Verdict()
    all_ok(v, named(f, "register-omitted", "after-register-omitted", "models-after"), "the registration and a request")
    keys = f["entry_keys"]
    if keys is None:
        raise KeyError("the registered entry was not listed in /v1/models")
    if "id" not in keys:
        raise KeyError("the listed entry has no id")
    present = sorted(k for k in keys if k in SLOT_FIELDS)
    v.require(not present, f"the new entry has no slot fields (found {present})")
    return v


# -- F2.same_id ----------------------------------------------------------------------------------


def concurrent_same_id(f: Facts) -> Verdict:
    """Two concurrent registrations of one new id both succeed and publish one entry."""
    v = Verdict()
    sid = str(f["sid"])
    v.require(bool(f["settled"]), "both registrations completed")
    all_ok(v, named(f, "register0", "register1"), "concurrent same-ID registrations")
    before, after = f.get("models_before"), f.get("models_after")
    if isinstance(before, int) and isinstance(after, int):
        v.require(after - before == 1, f"exactly one entry was published (/health models +{after - before})")
    else:
        v.pend("GET /health publishes no `models` count, so the number of entries published is not observable")
    ids = f.get("listed_ids")
    if isinstance(ids, list) and ids:
        v.require(ids.count(sid) == 1, f"/v1/models lists {sid} once (listed {ids.count(sid)} time(s))")
    else:
        v.pend("GET /v1/models listed no entries, so the published entry is not observable")
    return v


def post_commit_failure(f: Facts) -> Verdict:
    """A replacement whose load fails after commit is an error that leaves the new
    configuration registered and unloaded with its lease released; a retry recovers it."""
    v = Verdict()
    broken = flight(f, "reconfigure-missing")
    v.require(
        broken.status is not None and broken.status >= 400,
        f"a replacement whose load fails after commit is an error (got {broken.status})",
    )
    v.require(f.get("entry_loaded") is False, "the new configuration stays registered and unloaded (no partial pool)")
    failing = flight(f, "request-while-broken")
    v.require(failing.status is not None and failing.status >= 400, "a request on it fails cleanly")
    v.require(bool(f["drained"]), "the failed load released its lease")
    fixed = flight(f, "reconfigure-good")
    v.require(fixed.status == 200, f"a retry with the good path loads (got {fixed.status})")
    ok = flight(f, "request-after-retry")
    all_ok(v, [ok], "a request after the retry")
    outputs_match(v, f, "base", [ok], "after the retry", phase="cold")
    return v


# -- F2.callback_lease ---------------------------------------------------------------------------


def native_batch(f: Facts) -> Verdict:
    """A native batch holds its lease until the exchange completes (an unload waits for it)
    or is dropped (the lease is released)."""
    v = Verdict()
    manager = flight(f, "unload")
    if not f["held"]:
        v.not_forced("the batch was never seen holding a slot before the unload was sent")
        return v
    if f["batch_done_before_unload"]:
        v.not_forced("the batch exchange finished before the unload was sent, so nothing was deferred")
        return v
    v.require(bool(f["settled"]), "the unload and the batch exchange completed")
    batch_done = f["batch_t_done"]
    if batch_done is None:
        raise KeyError("the batch exchange's end was not recorded")
    # The exchange's own length, measured here, is the margin: an unload that skipped the
    # lease answers while most of it is still to come.
    m = max(margin_s(f), 0.25 * (float(batch_done) - float(f["batch_t_send"])))
    v.require(
        float(batch_done) <= manager.t_done + m,
        "the unload waited for the whole batch exchange"
        + (
            ""
            if float(batch_done) <= manager.t_done + m
            else f" (answered {ms(float(batch_done) - manager.t_done)} ms before it ended)"
        ),
    )
    events = f["events"]
    v.require(
        any(isinstance(e, dict) and e.get("type") == "task.batch.done" for e in events) and "[DONE]" in events,
        "the batch exchange completed with its done event",
    )
    v.require(bool(f["drained"]), "a batch abandoned after one event released its lease")
    all_ok(v, [flight(f, "after")], "a request after the abandoned batch")
    return v


JUDGES: dict[str, Judge] = {
    "f1.first_wave": first_wave,
    "legacy.first_session": first_session,
    "f2.unload_during_load": unload_during_load,
    "legacy.unpublished_skip": unpublished_skip,
    "f2.queued_before_barrier": queued_before_barrier,
    "f2.unload_not_undone": unload_not_undone,
    "f2.unsupported_count": unsupported_count,
    "f2.invalid_metadata": invalid_metadata,
    "f2.valid_resize": valid_resize,
    "f2.runtime_kept": runtime_kept,
    "legacy.runtime_kept": legacy_runtime_kept,
    "f2.concurrent_same_id": concurrent_same_id,
    "f2.post_commit_failure": post_commit_failure,
    "f2.native_batch": native_batch,
}

# The registry entries of the F2 assertions, each combined from the sub-checks of the judges it names.
ENTRIES: tuple[Entry, ...] = (
    framework_entry("F2.first_publish", "f1.first_wave", "legacy.first_session"),
    framework_entry(
        "F2.unload_vs_load", "f2.unload_during_load", "legacy.unpublished_skip", faults=("unload_skips_load",)
    ),
    framework_entry(
        "F2.reconfigure_queued",
        "f2.queued_before_barrier",
        "f2.unload_not_undone",
        faults=("lease_binding",),
        notes=(
            "PENDING when the plan's distinct session_options do not change the output "
            "(the configuration a request used cannot be told)",
        ),
    ),
    framework_entry("F2.callback_lease", "f2.native_batch", CTEST_PART),
    framework_entry(
        "F2.invalid_replacement",
        "f2.unsupported_count",
        "f2.invalid_metadata",
        "f2.valid_resize",
        "f2.runtime_kept",
        "legacy.runtime_kept",
    ),
    framework_entry("F2.same_id", "f2.concurrent_same_id", "f2.post_commit_failure"),
)
