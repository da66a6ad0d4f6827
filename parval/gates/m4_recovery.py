"""M4, judged once on the recovery start at the largest count validated: an invalid request,
a failed load, unloads (targeted, all, during the first load) next to in-flight work leave
the healthy outputs exact, wait for the work in front of them and release every lease."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parval.gates.context import Context, exact_result
from parval.status import Result, Status, failed, not_applicable, pending

RUN = "recovery"

# The M4 assertions judged on the recovery start (M4.adapter_overrides is not).
ON_RECOVERY = (
    "M4.invalid_alongside",
    "M4.load_failure_retry",
    "M4.targeted_unload",
    "M4.all_unload",
    "M4.unload_during_first_load",
)


def _missing(ctx: Context, id_: str) -> Result | None:
    """PENDING when the recovery start did not complete; None when it did."""
    rec = ctx.rec
    if RUN in rec.ends:
        return None
    largest = (rec.runs.get(RUN) or {}).get("count") or max(ctx.counts)
    reason = "recovery start did not complete" if RUN in rec.runs else "recovery start not run"
    return pending(id_, f"{reason} (count {largest})")


def _probe(ctx: Context, kind: str) -> dict[str, Any] | None:
    """The recovery start's last event of this m4_* kind."""
    found = [e for e in ctx.rec.by_run[RUN] if e["kind"] == kind]
    return found[-1] if found else None


def lease_problem(drained: dict[str, Any] | None) -> str | None:
    """What the counters showed after the work: None when they drained. A server that
    publishes no counters is named as such (the candidate must publish them)."""
    if not drained:
        return "drain not recorded"
    if drained.get("ok"):
        return None
    if not drained.get("fields_present", drained.get("active") is not None):
        return "the server publishes no slot counters (active_slots/queued_requests): lease release cannot be shown"
    return f"lease left held: active_slots {drained.get('active')}, queued_requests {drained.get('queued')}"


def unload_waited(e: dict[str, Any]) -> bool:
    """Did the unload finish only after the work in front of it?

    Replies to the requests and to the unload reach the client within a scheduler tick of
    each other when the server is right, in either order; an unload that skips the work
    returns a whole service time early. So allow a quarter of the shortest request's
    latency as slack, and no more."""
    done = e.get("requests_done") or []
    lat = e.get("requests_latency") or []
    if not done:
        return False
    slack = 0.25 * min(lat) if lat else 0.0
    return bool(float(e["unload_done"]) >= max(done) - slack)


def m4_invalid_alongside(ctx: Context) -> Result:
    """M4.invalid_alongside: an invalid request is rejected, the healthy ones next to it
    stay exact, and the leases drain."""
    id_ = "M4.invalid_alongside"
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    inv = _probe(ctx, "m4_invalid_alongside")
    if inv is None or inv.get("skipped"):
        return pending(id_, (inv or {}).get("skipped", "not recorded"))
    t = ctx.judge(ctx.rec.requests(RUN, ("invalid_alongside",)))
    problems = []
    if not inv["rejected"]:
        problems.append(f"invalid request answered {inv['invalid']['status']}")
    if (lease := lease_problem(inv["drained"])) is not None:
        problems.append(lease)
    r = exact_result(id_, t, "healthy outputs next to an invalid request", ctx, RUN)
    if problems:
        r = failed(id_, "; ".join(problems), invalid=inv, **t.summary())
    r.evidence["invalid"] = inv["invalid"]
    return r


def judge_load_failure(ctx: Context, run: str, lf: dict[str, Any] | None) -> Result:
    """M4.load_failure_retry on this start's probe: a broken load of the plan's
    registration fails cleanly while healthy work is in flight, releases its lease, and
    the retry serves exact outputs."""
    id_ = "M4.load_failure_retry"
    if lf is None or lf.get("skipped"):
        return pending(id_, (lf or {}).get("skipped", "not recorded"))
    if not lf["failed"] or not lf["retried"]:
        return failed(id_, f"broken load answered {lf['failure']['status']}, retry {lf['retry']['status']}", **lf)
    if "drained" not in lf:
        return pending(id_, "recorded without healthy work alongside or a drain check", **lf)
    events = ctx.rec.requests(run, ("load_failure_alongside", "load_retry"))
    t = ctx.judge(events)
    if (lease := lease_problem(lf["drained"])) is not None:
        r = failed(id_, f"after the failed load: {lease}", load_failure=lf, **t.summary())
        r.reproduction = ctx.repro(run)
        return r
    r = exact_result(
        id_,
        t,
        "failed load of the same registration with healthy work in flight; "
        "healthy outputs and the retried load's output",
        ctx,
        run,
    )
    if r.status is Status.PASS and not lf.get("healthy_in_flight"):
        r = pending(
            id_,
            "the healthy work was not seen in flight before the broken load was sent",
            load_failure=lf,
            **t.summary(),
        )
    r.evidence["load_failure"] = lf
    return r


def m4_load_failure_retry(ctx: Context) -> Result:
    """M4.load_failure_retry on the recovery start (see `judge_load_failure`)."""
    if (missing := _missing(ctx, "M4.load_failure_retry")) is not None:
        return missing
    return judge_load_failure(ctx, RUN, _probe(ctx, "m4_load_failure"))


def _unload(ctx: Context, which: str, id_: str) -> Result:
    """An unload (`targeted` or `all`) issued while work was in flight waited for it,
    admitted nothing past it, unloaded the model, and outputs and reload stay exact."""
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    e = _probe(ctx, f"m4_{which}_unload")
    if e is None:
        return pending(id_, "not recorded")
    t = ctx.judge(ctx.rec.requests(RUN, (f"unload_{which}_inflight", f"unload_{which}_later")))
    if not e["issued_while_active"]:
        return pending(id_, "could not observe the work in flight before issuing the unload", **e)
    if e.get("active_while_unload_waits", 0) > e.get("busy", 0):
        return failed(
            id_,
            f"a request sent after the {which} unload was admitted while the "
            f"unload waited ({e['active_while_unload_waits']} active > {e['busy']} in "
            "front): it barged past the waiting manager",
            **e,
        )
    if not unload_waited(e) or not e["ended_unloaded"]:
        return failed(
            id_,
            f"unload returned at {e['unload_done']}s, before the in-flight work "
            f"finished (last reply {max(e['requests_done'], default=0)}s), or the model "
            f"stayed loaded (ended_unloaded={e['ended_unloaded']})",
            **e,
        )
    return exact_result(id_, t, f"{which} unload waited for in-flight work; outputs and reload", ctx, RUN)


def m4_targeted_unload(ctx: Context) -> Result:
    """M4.targeted_unload: unloading this model waits for its in-flight work."""
    return _unload(ctx, "targeted", "M4.targeted_unload")


def m4_all_unload(ctx: Context) -> Result:
    """M4.all_unload: unloading every model waits for the in-flight work."""
    return _unload(ctx, "all", "M4.all_unload")


def m4_unload_during_first_load(ctx: Context) -> Result:
    """M4.unload_during_first_load: an unload issued during the first lazy load waits for
    it, and the reload matches the cold reference."""
    id_ = "M4.unload_during_first_load"
    if (missing := _missing(ctx, id_)) is not None:
        return missing
    e = _probe(ctx, "m4_unload_during_first_load")
    if e is None:
        return pending(id_, "not recorded")
    if not e["issued_during_load"]:
        return pending(id_, "the first load finished before the unload could be issued", **e)
    if not unload_waited(e) or not e["ended_unloaded"]:
        return failed(
            id_,
            "unload did not wait for the first load (returned at "
            f"{e['unload_done']}s, request done at {max(e['requests_done'], default=0)}s)"
            f" or the model stayed loaded ({e['ended_unloaded']=})",
            **e,
        )
    phases = ("unload_during_load_first", "unload_during_load_reload")
    return exact_result(
        id_,
        ctx.judge(ctx.rec.requests(RUN, phases)),
        "unload during the first lazy load waited; reload matches the cold reference",
        ctx,
        RUN,
    )


def m4_adapter_overrides(ctx: Context) -> Result:
    """M4.adapter_overrides: not applicable until a plan declares adapter overrides."""
    return not_applicable(
        "M4.adapter_overrides",
        "the plan declares no adapter-specific queue/timeout/eviction overrides; shared semantics are F1/F5",
    )


JUDGES: dict[str, Callable[[Context], Result]] = {
    "M4.invalid_alongside": m4_invalid_alongside,
    "M4.load_failure_retry": m4_load_failure_retry,
    "M4.targeted_unload": m4_targeted_unload,
    "M4.all_unload": m4_all_unload,
    "M4.unload_during_first_load": m4_unload_during_first_load,
    "M4.adapter_overrides": m4_adapter_overrides,
}


def judge_m4(ctx: Context) -> list[Result]:
    """Every M4 assertion; those on the recovery start note that the per-start
    unload/reload is M2's evidence."""
    out = [judge(ctx) for judge in JUDGES.values()]
    for r in out:
        if r.id in ON_RECOVERY:
            r.limitations.append("reuses M2 unload/reload evidence for the per-start unload/reload")
    return out
