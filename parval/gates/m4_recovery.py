"""M4, judged once on the recovery start at the largest count validated: an invalid request,
a failed load, unloads (targeted, all, during the first load) next to in-flight work leave
the healthy outputs exact, wait for the work in front of them and release every lease.

A recovery start whose server crashed fails the probe it was running (the crash is what it
observed) and leaves the probes after it BLOCKED naming the crash; one parval stopped is
BLOCKED with the reason. Violations seen in a set-aside recovery attempt count too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from parval.gates.admission_verdict import RECOVERY_COUNT
from parval.gates.judge_context import JudgeContext, exact_result
from parval.gates.unload_evidence import (
    ORDER_SHOWN_POLLS,
    admitted_past,
    barging_reproduced,
    barging_shown,
    first_load_violation,
    missing_route,
    server_order,
    unload_check,
    unload_unanswered,
    unload_violation,
    unloaded_state,
)
from parval.jsonread import as_int, get, opt_int
from parval.jsontypes import JsonObject, JsonValue
from parval.procedure import judge_shape as shape
from parval.procedure.entry import COMPARED, MASKED, NEGATIVE, NO_UI, Declaration, Entry, Gate
from parval.procedure.server_facts import ROUTE_BULK_UNLOAD
from parval.status import Result, Status

__all__ = ["ENTRIES", "JUDGES", "judge_load_failure", "judge_m4", "lease_problem"]

# Each judge below declares its registry entry, judged once per model on the recovery start
# (`_m4`: an output comparison that names the negative control).
RECOVERY = "on the recovery start, at the largest count validated so far"


def _m4(evidence: tuple[str, ...], faults: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> Declaration:
    return Gate("model")((*evidence, NEGATIVE), faults, (*notes, RECOVERY, MASKED))


def _unload_event(which: str) -> str:
    return (
        f"`m4_{which}_unload` event (issued_while_active, unload_done, requests_done, "
        "requests_latency, busy, gap_s, unload_pending_at_later_send, polls_before_later, later_order, later_samples, "
        "unloaded_seen, unload_check)"
    )


UNLOAD_NOTES = (
    "unloaded means /v1/models showed loaded:false after the in-flight work drained (or on the quiet "
    "second unload), never the reply's `unloaded` list; barging needs the server's order: the later request, "
    "sent a gap derived from the measured service time after the still-pending unload, seen queued behind "
    "it with a slot free (needed for a PASS) or admitted past it; the probe is tried again (3 tries: the gap "
    "grows after a try that saw the later request admitted past, shrinks after one that saw no order, as with a "
    "quick model) until it queues behind; barging FAILs when one try shows the unload reached the server first "
    "(the server answered status reads sent after the unload before the later request was sent) and saw the "
    "later request admitted past it, or when every try saw it admitted past; a try that cannot show the order "
    "is a limitation (FIFO is enqueue order, not packet arrival: a busy server may not have enqueued the unload "
    "yet); otherwise PENDING, or BLOCKED once the tries are spent",
    "a recovery start whose server crashed FAILs the probe it was running and leaves the later probes BLOCKED",
)


RUN = "recovery"

# The M4 assertions judged on the recovery start (M4.adapter_overrides is not), in the
# order the start runs them, each with its event kind and the `where` a crash names.
ON_RECOVERY = (
    "M4.invalid_alongside",
    "M4.load_failure_retry",
    "M4.targeted_unload",
    "M4.all_unload",
    "M4.unload_during_first_load",
)
PROBES: dict[str, tuple[str, tuple[str, ...]]] = {
    "M4.unload_during_first_load": ("m4_unload_during_first_load", ("unload during first load",)),
    "M4.invalid_alongside": ("m4_invalid_alongside", ("invalid alongside",)),
    "M4.targeted_unload": ("m4_targeted_unload", ("targeted unload",)),
    "M4.all_unload": ("m4_all_unload", ("all unload",)),
    "M4.load_failure_retry": ("m4_load_failure", ("failed load", "load failure retry")),
}


def _missing(ctx: JudgeContext, id_: str) -> Result | None:
    """None when the recovery start ran to its end; otherwise what that means for `id_`:
    FAIL when the server crashed during its probe, BLOCKED naming the crash or the stop
    when its probe was not reached, PENDING when the start did not run. A probe recorded
    before the crash is judged on what it recorded (None)."""
    rec = ctx.rec
    if rec.complete(RUN):
        return None
    start = rec.runs.get(RUN)
    largest = (start["count"] if start else None) or max(ctx.counts)
    if RUN not in rec.runs:
        stop = next((f for f in rec.failures if f.get("run") == RUN), None)
        if stop is not None:
            return shape.blocked(id_, f"recovery start (count {largest}) did not start: {stop['reason']}", failure=stop)
        return shape.pending(id_, f"recovery start not run (count {largest})")
    kind, wheres = PROBES[id_]
    crash = rec.crash_of(RUN)
    recorded = _probe(ctx, kind) is not None
    if crash is not None:
        text = f"server crashed during {crash['where']} (exit status {crash['exit_code']})"
        if crash["where"] in wheres:
            return shape.failed(
                id_,
                f"recovery start (count {largest}): {text} while collecting this probe",
                violation={k: crash.get(k) for k in ("run", "attempt", "where", "exit_code", "signal")},
                log_tail=crash.get("log_tail", ""),
            )
        if recorded:
            return None
        return shape.blocked(id_, f"not collected: the recovery start's {text} before this probe", crash=crash)
    stop = rec.stop_of(RUN)
    if recorded:
        return None
    why = f"stopped: {stop['reason']}" if stop else "did not complete"
    return (shape.blocked if stop else shape.pending)(id_, f"recovery start (count {largest}) {why}")


def _probe(ctx: JudgeContext, kind: str) -> JsonObject | None:
    """The recovery start's last event of this m4_* kind (its last try)."""
    found = _tries(ctx, kind)
    return found[-1] if found else None


def _tries(ctx: JudgeContext, kind: str) -> list[JsonObject]:
    """Every try of this m4_* probe in the standing recovery attempt, in order."""
    return [e for e in ctx.rec.by_run.get(RUN, []) if e["kind"] == kind]


def _aside_tries(ctx: JudgeContext, kind: str) -> list[list[JsonObject]]:
    """The tries of this probe in each set-aside recovery attempt."""
    groups: dict[object, list[JsonObject]] = {}
    for e in _aside(ctx, kind):
        groups.setdefault(e.get("attempt"), []).append(e)
    return list(groups.values())


def _aside_unload_violations(ctx: JudgeContext, which: str) -> list[tuple[str, str, object]]:
    """(set-aside status, violation in words, evidence) of every set-aside recovery attempt's
    unload probe: a violation in any try, barging in a try that shows the order, or barging
    seen on every try."""
    kind = f"m4_{which}_unload"
    out: list[tuple[str, str, object]] = [
        (str(a["set_aside"]), why, a) for a in _aside(ctx, kind) if (why := unload_violation(a, which)) is not None
    ]
    out += [
        (str(group[-1]["set_aside"]), why, group)
        for group in _aside_tries(ctx, kind)
        if (why := barging_shown(group, which) or barging_reproduced(group, which)) is not None
    ]
    return out


def _aside(ctx: JudgeContext, kind: str) -> list[JsonObject]:
    """Events of this kind in set-aside recovery attempts (their violations count)."""
    return [
        {**e, "set_aside": entry["status"]}
        for (run, _a), entry in ctx.rec.set_aside.items()
        if run == RUN
        for e in entry["events"]
        if e.get("kind") == kind
    ]


def _object(value: JsonValue) -> JsonObject:
    """A recorded object (a probe's `drained`, `invalid`, `unload_check`): read as one."""
    if isinstance(value, dict):
        return value
    raise AttributeError(f"'{type(value).__name__}' object has no attribute 'get'")


def _drained(value: JsonValue) -> JsonObject | None:
    """A probe's drain check (None when it recorded none)."""
    return _object(value) if value else None


def _items(value: JsonValue) -> list[JsonValue]:
    """A recorded list (the probe's reply times), to count."""
    if isinstance(value, list):
        return value
    raise TypeError(f"object of type '{type(value).__name__}' has no len()")


def lease_problem(drained: Mapping[str, object] | None) -> str | None:
    """What the counters showed after the work: None when they drained. A server that
    publishes no counters is named as such (the candidate must publish them)."""
    if not drained:
        return "drain not recorded"
    if drained.get("ok"):
        return None
    if not drained.get("fields_present", drained.get("active") is not None):
        return "the server publishes no slot counters (active_slots/queued_requests): lease release cannot be shown"
    return f"lease left held: active_slots {drained.get('active')}, queued_requests {drained.get('queued')}"


def lease_unshown(id_: str, drained: Mapping[str, object] | None, **evidence: object) -> Result | None:
    """Where the lease release cannot be judged: PENDING when the drain check was not
    recorded, UNSUPPORTED when the server publishes no slot counters (a missing
    precondition, never a FAIL). None when the counters were read (drained or held)."""
    if lease_held(drained) or (drained or {}).get("ok"):
        return None
    if not drained:
        return shape.pending(id_, "drain not recorded", **evidence)
    if not drained.get("fields_present", drained.get("active") is not None):
        return shape.unsupported(id_, str(lease_problem(drained)), **evidence)
    return shape.unsupported(
        id_, "the server publishes no queued_requests: an empty queue cannot be shown", drained=drained, **evidence
    )


def lease_held(drained: Mapping[str, object] | None) -> bool:
    """An observed violation: counters published and still non-zero after the work."""
    return bool(
        drained and not drained.get("ok") and drained.get("active") is not None and drained.get("queued") is not None
    )


@shape.judge(
    "M4.invalid_alongside",
    _m4(
        (
            "`m4_invalid_alongside` event (invalid reply, rejected, drained)",
            "`request` events of phase invalid_alongside on the recovery start, " + COMPARED,
        ),
        notes=("PENDING when the plan names no requests.invalid",),
    ),
)
def m4_invalid_alongside(ctx: JudgeContext) -> Result:
    """M4.invalid_alongside: an invalid request is rejected, the healthy ones next to it
    stay exact, and the leases drain."""
    id_ = "M4.invalid_alongside"
    held = [e for e in _aside(ctx, "m4_invalid_alongside") if "skipped" not in e and lease_held(_drained(e["drained"]))]
    if held:
        return shape.failed(
            id_, f"lease left held in a set-aside recovery attempt ({held[0]['set_aside']})", violation=held
        )
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    inv = _probe(ctx, "m4_invalid_alongside")
    if inv is None or inv.get("skipped"):
        return shape.pending(id_, str((inv or {}).get("skipped", "not recorded")))
    t = ctx.judge(ctx.rec.requests(RUN, ("invalid_alongside",)))
    problems = []
    status = opt_int(get(inv["invalid"], "status"))
    if status is not None and status < 400:
        problems.append(f"invalid request answered {status}")
    elif status is None and not inv["rejected"]:
        problems.append(f"invalid request got no answer ({get(inv['invalid'], 'outcome')})")
    drained = _drained(inv["drained"])
    if lease_held(drained):
        problems.append(str(lease_problem(drained)))
    r = exact_result(id_, t, "healthy outputs next to an invalid request", ctx, RUN)
    if not problems and r.status is not Status.FAIL:
        unshown = lease_unshown(id_, drained, invalid=inv, **t.summary())
        if unshown is not None:
            return unshown
    if problems:
        r = shape.failed(id_, "; ".join(problems), violation=problems, invalid=inv, **t.summary())
        r = replace(r, reproduction=ctx.repro(RUN))
    r = replace(r, evidence={**r.evidence, "invalid": inv["invalid"]})
    if r.status is Status.PASS:
        if status is None:
            return shape.pending(id_, "the invalid request's reply was not recorded", invalid=inv)
        rests_on = {**shape.rests_on(r), "rejected invalid request": status}
        r = replace(r, evidence={**r.evidence, "rests_on": rests_on})
    return r


def judge_load_failure(ctx: JudgeContext, run: str, lf: JsonObject | None) -> Result:
    """M4.load_failure_retry on this start's probe: a broken load of the plan's
    registration fails cleanly while healthy work is in flight, releases its lease, and
    the retry serves exact outputs."""
    id_ = "M4.load_failure_retry"
    if lf is None or lf.get("skipped"):
        return shape.pending(id_, str((lf or {}).get("skipped", "not recorded")))
    if not lf["failed"] or not lf["retried"]:
        return shape.failed(
            id_,
            f"broken load answered {get(lf['failure'], 'status')}, retry {get(lf['retry'], 'status')}",
            violation={"failure": lf["failure"], "retry": lf["retry"]},
            **lf,
        )
    if "drained" not in lf:
        return shape.pending(id_, "recorded without healthy work alongside or a drain check", **lf)
    events = ctx.rec.requests(run, ("load_failure_alongside", "load_retry"))
    t = ctx.judge(events)
    counts = [len(ctx.rec.requests(run, (p,))) for p in ("load_failure_alongside", "load_retry")]
    if counts != [as_int(lf.get("healthy") or 0), 1]:
        return shape.pending(
            id_, f"{counts[0]} healthy and {counts[1]} retried output(s) recorded (expected {lf.get('healthy')} and 1)"
        )
    drained = _drained(lf["drained"])
    if lease_held(drained):
        lease = lease_problem(drained)
        r = shape.failed(id_, f"after the failed load: {lease}", violation=lf["drained"], load_failure=lf)
        return replace(r, evidence={**r.evidence, **t.summary()}, reproduction=ctx.repro(run))
    if (unshown := lease_unshown(id_, drained, load_failure=lf, **t.summary())) is not None:
        return replace(unshown, reason=f"after the failed load: {unshown.reason}")
    r = exact_result(
        id_,
        t,
        "failed load of the same registration with healthy work in flight; "
        "healthy outputs and the retried load's output",
        ctx,
        run,
    )
    if r.status is Status.PASS and not lf.get("healthy_in_flight"):
        r = shape.pending(
            id_,
            "the healthy work was not seen in flight before the broken load was sent",
            load_failure=lf,
            **t.summary(),
        )
    return replace(r, evidence={**r.evidence, "load_failure": lf})


@shape.judge(
    "M4.load_failure_retry",
    _m4(
        (
            "`m4_load_failure` event (failure, retry, drained, healthy_in_flight)",
            "`request` events of phases load_failure_alongside and load_retry",
        ),
        notes=("PENDING when the plan sets recovery.load_failure: none; " + NO_UI,),
    ),
)
def m4_load_failure_retry(ctx: JudgeContext) -> Result:
    """M4.load_failure_retry on the recovery start (see `judge_load_failure`)."""
    id_ = "M4.load_failure_retry"
    held = [e for e in _aside(ctx, "m4_load_failure") if "skipped" not in e and lease_held(_drained(e.get("drained")))]
    if held:
        return shape.failed(
            id_, f"lease left held in a set-aside recovery attempt ({held[0]['set_aside']})", violation=held
        )
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    return judge_load_failure(ctx, RUN, _probe(ctx, "m4_load_failure"))


def _unload(ctx: JudgeContext, which: str, id_: str) -> Result:
    """An unload (`targeted` or `all`) issued while work was in flight waited for it,
    admitted nothing past it, left the model unloaded (/v1/models loaded:false after the
    work drained), and outputs and reload stay exact."""
    kind = f"m4_{which}_unload"
    for status, aside_why, seen in _aside_unload_violations(ctx, which):
        return shape.failed(id_, f"in a set-aside recovery attempt ({status}): {aside_why}", violation=seen)
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    tries = _tries(ctx, kind)
    if not tries:
        return shape.pending(id_, "not recorded")
    e = tries[-1]
    if (reply := missing_route(e)) is not None:
        route = "/v1/tasks/unload_models" if which == "targeted" else "/v1/tasks/unload_all_models"
        return shape.unsupported(id_, f"this server has no {route} route: the {which} unload {reply}", **e)
    for one in tries:  # a violation in any try counts, not only in the last
        if (why := unload_violation(one, which)) is not None:
            r = shape.failed(id_, why if one is e else f"try {one.get('tries')}: {why}", violation=why, **one)
            return replace(r, reproduction=ctx.repro(RUN))
    # Barging seen once, in a try that shows the unload reached the server first, is barging
    # whatever the other tries saw; so is barging seen on every try.
    if (why := barging_shown(tries, which) or barging_reproduced(tries, which)) is not None:
        return replace(shape.failed(id_, why, violation=why, **e), reproduction=ctx.repro(RUN))
    # Admitted past the unload in tries that cannot show the order: not shown to be barging
    # (the unload may not have been enqueued yet on a busy server); disclosed with the
    # verdict the last try gives.
    not_reproduced = [
        f"try {one.get('tries')}: {w} (the order is not shown: the server's FIFO is enqueue order, not packet "
        f"arrival, and fewer than {ORDER_SHOWN_POLLS} status reads were answered between the unload's send and "
        "the later request's, so the unload may not have been enqueued yet)"
        for one in tries
        if (w := admitted_past(one, which)) is not None
    ]
    inflight = ctx.rec.requests(RUN, (f"unload_{which}_inflight",))
    later = ctx.rec.requests(RUN, (f"unload_{which}_later",))
    t = ctx.judge([*inflight, *later])
    r = exact_result(id_, t, f"{which} unload waited for in-flight work; outputs and reload", ctx, RUN)
    if r.status is not Status.PASS:
        return r
    n_tries = as_int(e["tries"])
    if n_tries != len(tries) or len(inflight) != as_int(e["busy"]) * n_tries or len(later) != n_tries:
        return shape.pending(
            id_,
            f"{len(inflight)} in-flight and {len(later)} later output(s) and {len(tries)} probe record(s) for "
            f"{n_tries} tr(ies)",
            **e,
        )
    if not e["issued_while_active"]:
        return shape.pending(id_, "could not observe the work in flight before issuing the unload", **e)
    if (unanswered := unload_unanswered(e)) is not None:
        return shape.pending(id_, unanswered, **e)
    if not e["requests_done"] or len(_items(e["requests_latency"])) != len(_items(e["requests_done"])):
        return shape.pending(id_, "the in-flight work's replies were not recorded", **e)
    if server_order(e) != "queued_behind":
        tried = as_int(e.get("tries") or 1)
        exhausted = tried >= as_int(e.get("max_tries") or tried + 1)
        unshown = (shape.blocked if exhausted else shape.pending)(
            id_,
            "the later request was not seen queued behind the waiting unload with a slot free"
            + (f" in {tried} tries" if exhausted else "")
            + (f" ({len(not_reproduced)} saw it admitted past the unload, not every try)" if not_reproduced else ""),
            **e,
        )
        return replace(unshown, limitations=[*unshown.limitations, *not_reproduced])
    state = "ok" if e.get("unloaded_seen") else unloaded_state(e)
    if state != "ok" or not e.get("unloaded_seen"):
        return shape.pending(
            id_,
            "the model was not shown unloaded: /v1/models showed no loaded:false after the in-flight work drained "
            + ("(the server publishes no `loaded`)" if state == "no_loaded" else "(too few status samples)"),
            **e,
        )
    rests_on = {**shape.rests_on(r), "unload waited": True, "later request queued behind": True, "unloaded": True}
    return replace(
        r, evidence={**r.evidence, "rests_on": rests_on, "probe": e}, limitations=[*r.limitations, *not_reproduced]
    )


@shape.judge(
    "M4.targeted_unload",
    _m4(
        (_unload_event("targeted"), "`request` events of phases unload_targeted_inflight and unload_targeted_later"),
        ("barging", "unload_keeps_loaded"),
        UNLOAD_NOTES,
    ),
)
def m4_targeted_unload(ctx: JudgeContext) -> Result:
    """M4.targeted_unload: unloading this model waits for its in-flight work."""
    return _unload(ctx, "targeted", "M4.targeted_unload")


@shape.judge(
    "M4.all_unload",
    _m4(
        (_unload_event("all"), "`request` events of phases unload_all_inflight and unload_all_later"),
        ("unload_keeps_loaded", "segv_unload_all_busy"),
        UNLOAD_NOTES,
    ),
)
def m4_all_unload(ctx: JudgeContext) -> Result:
    """M4.all_unload: unloading every model waits for the in-flight work."""
    return _unload(ctx, "all", "M4.all_unload")


@shape.judge(
    "M4.unload_during_first_load",
    _m4(
        (
            "`m4_unload_during_first_load` event (issued_during_load, unload_done, requests_done, unload_check)",
            "`request` events of phases unload_during_load_first and unload_during_load_reload",
        ),
        ("unload_skips_load",),
        UNLOAD_NOTES[1:],
    ),
)
def m4_unload_during_first_load(ctx: JudgeContext) -> Result:
    """M4.unload_during_first_load: an unload issued during the first lazy load waits for
    it, the model ends unloaded, and the reload matches the cold reference."""
    id_ = "M4.unload_during_first_load"
    for a in _aside(ctx, "m4_unload_during_first_load"):
        if (why := first_load_violation(a)) is not None:
            return shape.failed(id_, f"in a set-aside recovery attempt ({a['set_aside']}): {why}", violation=a)
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    e = _probe(ctx, "m4_unload_during_first_load")
    if e is None:
        return shape.pending(id_, "not recorded")
    if (reply := missing_route(e)) is not None:
        return shape.unsupported(id_, f"this server has no {ROUTE_BULK_UNLOAD} route: the unload {reply}", **e)
    if (why := first_load_violation(e)) is not None:
        return replace(shape.failed(id_, why, violation=why, **e), reproduction=ctx.repro(RUN))
    phases = ("unload_during_load_first", "unload_during_load_reload")
    if [len(ctx.rec.requests(RUN, (p,))) for p in phases] != [1, 1]:
        return shape.pending(id_, "the first request's or the reload's output was not recorded", **e)
    r = exact_result(
        id_,
        ctx.judge(ctx.rec.requests(RUN, phases)),
        "unload during the first lazy load waited; reload matches the cold reference",
        ctx,
        RUN,
    )
    if r.status is not Status.PASS:
        return r
    if not e["issued_during_load"]:
        return shape.pending(id_, "the first load finished before the unload could be issued", **e)
    if (unanswered := unload_unanswered(e)) is not None:
        return shape.pending(id_, unanswered, **e)
    if not e["requests_done"] or len(_items(e["requests_latency"])) != len(_items(e["requests_done"])):
        return shape.pending(id_, "the first request's reply times were not recorded", **e)
    ended = e.get("ended_unloaded") if "unload_check" not in e else unload_check(_object(e["unload_check"])) == "ok"
    if not ended:
        return shape.pending(id_, "the model was not shown unloaded after the unload (too few status samples)", **e)
    rests_on = {**shape.rests_on(r), "unload waited for the load": True, "unloaded": True}
    return replace(r, evidence={**r.evidence, "rests_on": rests_on})


@shape.judge(
    "M4.adapter_overrides",
    Declaration(
        "model",
        ("nothing: no plan declares adapter-specific queue/timeout/eviction overrides yet",),
        notes=("always NOT_APPLICABLE; the shared semantics are judged by F1 and F5",),
    ),
)
def m4_adapter_overrides(ctx: JudgeContext) -> Result:
    """M4.adapter_overrides: not applicable until a plan declares adapter overrides."""
    return shape.not_applicable(
        "M4.adapter_overrides",
        "the plan declares no adapter-specific queue/timeout/eviction overrides; shared semantics are F1/F5",
    )


JUDGES: dict[str, Callable[[JudgeContext], Result]] = {
    "M4.invalid_alongside": m4_invalid_alongside,
    "M4.load_failure_retry": m4_load_failure_retry,
    "M4.targeted_unload": m4_targeted_unload,
    "M4.all_unload": m4_all_unload,
    "M4.unload_during_first_load": m4_unload_during_first_load,
    "M4.adapter_overrides": m4_adapter_overrides,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_m4(ctx: JudgeContext) -> list[Result]:
    """Every M4 assertion; those on the recovery start note that the per-start
    unload/reload is M2's evidence."""
    note = "reuses M2 unload/reload evidence for the per-start unload/reload"
    out = [judge(ctx) for judge in JUDGES.values()]
    start = ctx.rec.runs.get(RUN)
    count = start["count"] if start else None
    # The count the recovery start ran at: admission never goes above it (admission_verdict);
    # a PASS whose start names no count (0) admits no count.
    ran_at = count if isinstance(count, int) and not isinstance(count, bool) and count >= 1 else 0
    return [
        replace(
            r,
            limitations=[*r.limitations, note],
            evidence={**r.evidence, RECOVERY_COUNT: ran_at} if r.status is Status.PASS else r.evidence,
        )
        if r.id in ON_RECOVERY
        else r
        for r in out
    ]


def aside_violations(ctx: JudgeContext) -> list[Mapping[str, object]]:
    """Lifecycle violations in set-aside recovery attempts (Q5 at model level): a lease left
    held, an unload that did not wait, barged or left the model loaded."""
    out: list[Mapping[str, object]] = []
    for kind in ("m4_invalid_alongside", "m4_load_failure"):
        out += [
            {"run": RUN, "kind": kind, **e}
            for e in _aside(ctx, kind)
            if "skipped" not in e and lease_held(_drained(e.get("drained")))
        ]
    for which in ("targeted", "all"):
        out += [
            {"run": RUN, "kind": f"m4_{which}_unload", "set_aside": status, "violation": why}
            for status, why, _ in _aside_unload_violations(ctx, which)
        ]
    out += [
        {"run": RUN, "kind": "m4_unload_during_first_load", "set_aside": e["set_aside"], "violation": why}
        for e in _aside(ctx, "m4_unload_during_first_load")
        if (why := first_load_violation(e)) is not None
    ]
    return out
