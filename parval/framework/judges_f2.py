"""Judges of the F2 observations (parval.framework.probes_f2): unload during a first load,
reconfiguration with queued work, overlapping managers (F1.fifo), invalid replacements,
same-ID publication and deferred-callback leases. Pure functions of the recorded facts."""

from __future__ import annotations

from typing import Any

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, flight, named, stalled, timing_of
from parval.framework.observed import STALLED, all_ok, outputs_match, unloaded_ids, waits
from parval.framework.observed import judge as register

SLOTS_RANGE_TEXT = "model slots must be an integer between 1 and 16"
BARGED = (
    "the later request ran ahead of the waiting reconfiguration (FIFO barging, judged "
    "by F1.fifo), so which configuration it should bind cannot be judged here"
)


@register("f2.unload_during_load")
def unload_during_load(f: Facts) -> Verdict:
    """An unload sent while the first load runs waits for the load and its request, names
    the model, and leaves it unloaded with drained counters; the first output is cold."""
    t = timing_of(f)
    v = Verdict()
    model = str(f["model"])
    first = flight(f, "first")
    unload = flight(f, "unload")
    if not f["in_progress"]:
        v.pend("the first load finished before it could be observed in progress")
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
    early = unload.t_done < first.t_done - t.tol_s
    v.require(
        not early,
        "the unload waited for the load in progress and its request"
        + (f" ({(first.t_done - unload.t_done) * 1000:.0f} ms early)" if early else ""),
    )
    v.require(bool(f["ended_unloaded"]), "the model ended unloaded with drained counters")
    return v


def _reconfigured(v: Verdict, manager: FlightFact, what: str, *, body_in_text: bool = True) -> None:
    body = manager.json()
    got = f"{manager.status} {body}" if body_in_text else f"{manager.status}"
    v.require(
        manager.status == 200 and isinstance(body, dict) and body.get("reconfigured") is True,
        f"{what} answered 200 reconfigured=true (got {got})",
    )


def _opening(f: Facts, *labels: str) -> tuple[Verdict, list[FlightFact], list[FlightFact]]:
    """What the queued-work judges share: waits honoured, the occupants and the named
    flights, everything settled within bound."""
    v = Verdict()
    waits(v, f)
    occupants = named(f, *f["occupants"])
    flights = [flight(f, label) for label in labels]
    v.require(bool(f["settled"]), "everything completed within bound")
    return v, occupants, flights


@register("f2.queued_before_barrier")
def queued_before_barrier(f: Facts) -> Verdict:
    """Work queued before a reconfiguration binds the previous configuration; work after
    the barrier binds the new one."""
    v, occupants, (older, manager, later) = _opening(f, "older", "reconfigure-base", "later")
    if not v.blockers:
        all_ok(v, [*occupants, older, later], "requests")
        _reconfigured(v, manager, "the reconfiguration")
        outputs_match(v, f, "opt0", [*occupants, older], "work bound before the barrier (previous config)")
        if later.t_done < manager.t_done:
            v.block(BARGED)
        else:
            outputs_match(v, f, "base", [later], "work after the barrier (new config)")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


@register("f2.unload_not_undone")
def unload_not_undone(f: Facts) -> Verdict:
    """A request queued before a targeted unload runs first, and does not reload the model
    after the unload."""
    t = timing_of(f)
    v, occupants, (older, manager) = _opening(f, "older", "unload")
    if not v.blockers:
        all_ok(v, [*occupants, older, manager], "requests and the unload")
        outputs_match(v, f, "base", [*occupants, older], "requests")
        v.require(older.t_done <= manager.t_done + t.tol_s, "the older request ran before the unload")
        v.require(
            bool(f.get("ended_unloaded")), "the model ended unloaded (no older waiter reloaded it after the unload)"
        )
    return v


@register("f2.overlapping_managers")
def overlapping_managers(f: Facts) -> Verdict:
    """F1.fifo: two reconfigurations queued behind work, then a request, complete in
    enqueue order and the request binds the last manager's configuration."""
    v, occupants, (m1, m2, later) = _opening(f, "reconfigure-opt0", "reconfigure-opt1", "later")
    if not v.blockers:
        all_ok(v, [*occupants, m1, m2, later], "requests and managers")
        v.require(m1.t_done < m2.t_done, "the managers completed in enqueue order")
        v.require(later.t_done > m2.t_done, "the later request ran after both managers")
        outputs_match(v, f, "base", occupants, "work admitted before the managers")
        outputs_match(v, f, "opt1", [later], "the later request (the last manager's configuration)")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


def _kept(v: Verdict, f: Facts, entry: dict[str, Any]) -> None:
    """After a rejected replacement the working registration is unchanged and serves."""
    n, cap, what = f["count"], f["capacity"], str(entry["what"])
    sample = entry.get("sample")
    seen: dict[str, Any] = sample if isinstance(sample, dict) else {}
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
    for entry in f.get("kept") or []:
        if entry["what"] == what:
            _kept(v, f, entry)


@register("f2.unsupported_count")
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


@register("f2.invalid_metadata")
def invalid_metadata(f: Facts) -> Verdict:
    """An unknown task and every invalid slots value are rejected (slots: 400 with the range
    text), and the working registration is kept after each."""
    v = Verdict()
    bad = flight(f, "bad-task")
    v.require(bad.status is not None and bad.status >= 400, f"an unknown task is rejected (got {bad.status})")
    _kept_after(v, f, "an invalid task")
    for form in f.get("forms") or []:
        reply = flight(f, str(form["label"]))
        v.require(
            reply.status == 400 and SLOTS_RANGE_TEXT in reply.message,
            f"slots={form['slots']!r} rejected 400 '{SLOTS_RANGE_TEXT}' (got {reply.status})",
        )
    _kept_after(v, f, "invalid slots values")
    return v


@register("f2.valid_resize")
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


@register("f2.concurrent_same_id")
def concurrent_same_id(f: Facts) -> Verdict:
    """Two concurrent registrations of one new id both succeed and publish one entry."""
    v = Verdict()
    sid = str(f["sid"])
    v.require(bool(f["settled"]), "both registrations completed")
    all_ok(v, named(f, "register0", "register1"), "concurrent same-ID registrations")
    delta = (f.get("models_after") or 0) - (f.get("models_before") or 0)
    v.require(delta == 1, f"exactly one entry was published (model count +{delta})")
    ids = list(f.get("listed_ids") or [])
    v.require(ids.count(sid) == 1, f"/v1/models lists {sid} once")
    return v


@register("f2.post_commit_failure")
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


@register("f2.native_batch")
def native_batch(f: Facts) -> Verdict:
    """A native batch holds its lease until the exchange completes (an unload waits for it)
    or is dropped (the lease is released)."""
    t = timing_of(f)
    v = Verdict()
    manager = flight(f, "unload")
    v.require(bool(f["held"]), "the batch held a slot")
    v.require(bool(f["settled"]), "the unload completed")
    batch_done = f.get("batch_t_done")
    v.require(
        batch_done is not None and float(batch_done) <= manager.t_done + t.tol_s,
        "the unload waited for the whole batch exchange",
    )
    events = f.get("events") or []
    v.require(
        any(isinstance(e, dict) and e.get("type") == "task.batch.done" for e in events) and "[DONE]" in events,
        "the batch exchange completed with its done event",
    )
    v.require(bool(f["drained"]), "a batch abandoned after one event released its lease")
    all_ok(v, [flight(f, "after")], "a request after the abandoned batch")
    return v
