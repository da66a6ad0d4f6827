"""Judges of the F2 observations (parval.framework.probes_f2): unload during a first load,
reconfiguration with queued work, overlapping managers (F1.fifo), invalid replacements,
same-ID publication and deferred-callback leases. Pure functions of the recorded facts."""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, flight, listed, named, stalled
from parval.framework.observed import STALLED, all_ok, margin_s, ms, outputs_match, unloaded_ids, waits
from parval.framework.observed import judge as register
from parval.jsontypes import JsonObject

SLOTS_RANGE_TEXT = "model slots must be an integer between 1 and 16"
BARGED = (
    "the later request ran ahead of the waiting reconfiguration (FIFO barging, judged "
    "by F1.fifo), so which configuration it should bind cannot be judged here"
)


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


register("f2.unload_during_load", unload_during_load)


def _reconfigured(v: Verdict, manager: FlightFact, what: str, *, body_in_text: bool = True) -> None:
    body = manager.json()
    got = f"{manager.status} {body}" if body_in_text else f"{manager.status}"
    v.require(
        manager.status == 200 and isinstance(body, dict) and body.get("reconfigured") is True,
        f"{what} answered 200 reconfigured=true (got {got})",
    )


def _opening(f: Facts, *labels: str, managers: tuple[str, ...]) -> tuple[Verdict, list[FlightFact], list[FlightFact]]:
    """What the queued-work judges share: waits honoured, `managers` staggered behind the
    work ahead of them, the occupants and the named flights, everything settled within bound."""
    v = Verdict()
    waits(v, f, managers=managers)
    occupants = listed(f, "occupants")
    flights = [flight(f, label) for label in labels]
    v.require(bool(f["settled"]), "everything completed within bound")
    return v, occupants, flights


def queued_before_barrier(f: Facts) -> Verdict:
    """Work queued before a reconfiguration binds the previous configuration; work after
    the barrier binds the new one."""
    v, occupants, (older, manager, later) = _opening(
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


register("f2.queued_before_barrier", queued_before_barrier)


def unload_not_undone(f: Facts) -> Verdict:
    """A request queued before a targeted unload runs first, and does not reload the model
    after the unload."""
    v, occupants, (older, manager) = _opening(f, "older", "unload", managers=("unload",))
    if not v.blockers:
        all_ok(v, [*occupants, older, manager], "requests and the unload")
        outputs_match(v, f, "base", [*occupants, older], "requests")
        v.require(older.t_done <= manager.t_done + margin_s(f), "the older request ran before the unload")
        v.require(
            bool(f.get("ended_unloaded")), "the model ended unloaded (no older waiter reloaded it after the unload)"
        )
    return v


register("f2.unload_not_undone", unload_not_undone)


def overlapping_managers(f: Facts) -> Verdict:
    """F1.fifo: two reconfigurations queued behind work, then a request, complete in
    enqueue order and the request binds the last manager's configuration."""
    v, occupants, (m1, m2, later) = _opening(
        f, "reconfigure-opt0", "reconfigure-opt1", "later", managers=("reconfigure-opt0", "reconfigure-opt1")
    )
    if not v.blockers:
        all_ok(v, [*occupants, m1, m2, later], "requests and managers")
        m = margin_s(f)
        for first, then, what in (
            (m1, m2, "the managers completed in enqueue order"),
            (m2, later, "the later request ran after both managers"),
        ):
            if then.t_done < first.t_done - m:
                v.require(
                    False, f"{what} ({then.label} finished {ms(first.t_done - then.t_done)} ms before {first.label})"
                )
            elif then.t_done <= first.t_done:
                v.not_forced(f"{first.label} and {then.label} finished too close together to show their order")
            else:
                v.require(True, what)
        outputs_match(v, f, "base", occupants, "work admitted before the managers")
        outputs_match(v, f, "opt1", [later], "the later request (the last manager's configuration)")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


register("f2.overlapping_managers", overlapping_managers)


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


register("f2.unsupported_count", unsupported_count)


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


register("f2.invalid_metadata", invalid_metadata)


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


register("f2.valid_resize", valid_resize)


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


register("f2.runtime_kept", runtime_kept)


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


register("f2.concurrent_same_id", concurrent_same_id)


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


register("f2.post_commit_failure", post_commit_failure)


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


register("f2.native_batch", native_batch)
