"""M2, per count N: at least three fresh starts each serve true concurrent cold, warm and
mixed waves of N, the server shows N leases held at once and released after, and every
output (waves, after unload/reload, serial reuse) equals its reference.

Lifecycle violations (counters left non-zero, N leases never held while the client had N
requests in flight, an unload that left the model loaded) count in set-aside attempts too:
an attempt parval set aside is never proof of a PASS, but what it showed fails."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from parval.gates import shape
from parval.gates.context import Context, exact_result
from parval.gates.count_starts import complete_starts, schedule_missing, starts_missing
from parval.gates.exactness import Tally
from parval.gates.m2_evidence import (
    MIN_POLLS_IN_FLIGHT,
    UnloadRow,
    active_violations,
    client_overlap,
    drain_row,
    drain_violations,
    grouped,
    not_active,
    unload_observed,
    unload_probes,
    unload_state,
    unload_violations,
)
from parval.gates.records import COUNT_PHASES
from parval.gates.slot_counters import NO_COUNTERS
from parval.plan.waves import UNLOAD_CYCLES
from parval.status import Result, Status

__all__ = ["JUDGES", "MIN_POLLS_IN_FLIGHT", "client_overlap", "judge_m2"]


def _first_run(ctx: Context, n: int) -> str | None:
    runs = ctx.rec.count_runs(n)
    return runs[0] if runs else None


def _stop_text(stop: Mapping[str, object]) -> str:
    attempt = stop.get("attempt")
    which = "(before its server started)" if attempt is None else f"attempt {attempt}"
    return f"{stop['run']} {which}: {stop['kind']}: {stop['reason']}"


@shape.judge("M2.starts")
def m2_starts(ctx: Context, n: int) -> Result:
    """M2.starts: three or more fresh starts at count n completed, none crashed; a start
    parval stopped (it hung, stopped answering, could not start, hit the memory guard) is
    BLOCKED with what was seen."""
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = complete_starts(ctx, n)
    crashed = [c for c in rec.crashes if c["run"] in runs]
    stops = [f for f in rec.failures if str(f.get("run", f.get("unit", ""))).startswith(f"count{n}-")]
    ev: dict[str, object] = {"starts": runs, "complete": complete}
    if crashed:
        c = crashed[0]
        return shape.failed(
            "M2.starts",
            f"server crashed during {c['run']} ({c['where']}), exit status {c['exit_code']}",
            violation=crashed,
            crashes=crashed,
            log_tail=c.get("log_tail", ""),
            **ev,
        )
    if stops:
        return shape.blocked(
            "M2.starts",
            f"{len(stops)} start(s) did not complete: {'; '.join(_stop_text(f) for f in stops[:3])}",
            failures=stops,
            **ev,
        )
    missing = starts_missing(ctx, n, "M2.starts")
    if missing is not None:
        return missing
    return shape.passed("M2.starts", f"{len(complete)} fresh starts at count {n}", {"complete starts": complete}, **ev)


def _every_start(
    ctx: Context, n: int, id_: str, phases: tuple[str, ...], ok: Callable[[str], bool], good: str, lacking: str
) -> Result:
    """PASS when every complete start at count n recorded its planned waves of `phases`
    whole and shows `ok`; PENDING naming what is missing otherwise (a start that does not
    show it was not recorded doing it: no server behaviour was observed to be wrong)."""
    if (missing := starts_missing(ctx, n, id_)) is not None:
        return missing
    if (gaps := schedule_missing(ctx, n, id_, phases)) is not None:
        return gaps
    complete = complete_starts(ctx, n)
    shown = [run for run in complete if ok(run)]
    if len(shown) < len(complete):
        return shape.pending(id_, f"starts without {lacking}: {sorted(set(complete) - set(shown))}")
    waves = [w for r in complete for w in ctx.rec.waves(r) if w["phase"] in phases]
    return shape.passed(id_, good, {"starts": shown, "waves": waves}, runs=shown)


def m2_cold_wave_ok(ctx: Context, n: int) -> Callable[[str], bool]:
    def began_cold(run: str) -> bool:
        reqs = ctx.rec.requests(run)
        return (
            bool(reqs)
            and reqs[0]["phase"] == "cold_wave"
            and any(w["phase"] == "cold_wave" and w["n"] == n and w["mode"] != "serial" for w in ctx.rec.waves(run))
        )

    return began_cold


@shape.judge("M2.cold_wave")
def m2_cold_wave(ctx: Context, n: int) -> Result:
    """M2.cold_wave: every complete start began with a concurrent cold wave of n."""
    return _every_start(
        ctx,
        n,
        "M2.cold_wave",
        ("cold_wave",),
        m2_cold_wave_ok(ctx, n),
        f"every start began with a true concurrent cold wave of {n}",
        "a leading cold wave",
    )


@shape.judge("M2.warm_waves")
def m2_warm_waves(ctx: Context, n: int) -> Result:
    """M2.warm_waves: every complete start ran its planned warm waves, and its mixed ones
    when the plan declares variations."""
    variations = bool(ctx.plan["requests"].get("variations"))

    def ran_warm(run: str) -> bool:
        waves = ctx.rec.waves(run)
        return any(w["phase"] == "warm_wave" for w in waves) and (
            any(w["phase"] == "mixed_wave" for w in waves) or not variations
        )

    return _every_start(
        ctx,
        n,
        "M2.warm_waves",
        ("warm_wave", "mixed_wave"),
        ran_warm,
        "every start ran warm and mixed warm waves",
        "warm/mixed waves",
    )


@shape.judge("M2.observed_active")
def m2_observed_active(ctx: Context, n: int) -> Result:
    """M2.observed_active: the status poller saw n loaded leases at once in every
    concurrent wave (any attempt of it). A FAIL needs enough successful samples inside the
    window in which the client had all n requests in flight, every one below n."""
    id_ = "M2.observed_active"
    complete = complete_starts(ctx, n)
    violations = active_violations(ctx, n)
    active_bad = [w for run in complete for w in not_active(n, run, ctx.rec.waves(run), ctx.rec.requests(run))]
    absent = [w for w in active_bad if w["counters"] == "absent"]
    if violations:
        aside = sum(1 for w in violations if "set_aside" in w)
        return shape.failed(
            id_,
            f"{len(violations)} wave(s) had all {n} requests in flight from the client for "
            f"{MIN_POLLS_IN_FLIGHT}+ successful status samples, yet the server never showed active_slots == {n}"
            + (f" ({aside} in attempt(s) parval set aside)" if aside else ""),
            violation=violations[:30],
            waves=active_bad[:30],
        )
    if absent:
        # A missing counter is a missing precondition: nothing was observed to be wrong.
        return shape.unsupported(
            id_,
            f"{NO_COUNTERS} (/v1/models lists the model without active_slots during "
            f"{len(absent)} wave(s)): the server cannot show that N requests held slots at once",
            waves=absent[:30],
        )
    if (missing := starts_missing(ctx, n, id_)) is not None:
        return missing
    if (gaps := schedule_missing(ctx, n, id_, COUNT_PHASES)) is not None:
        return gaps
    if active_bad:
        unanswered = [w for w in active_bad if w["counters"] == "no_answer"]
        counted = [w for w in active_bad if w["counters"] == "present"]
        apart = [w for w in counted if not w["client_overlap"]]
        overlapped = [w for w in counted if w["client_overlap"]]
        # n leases were held at once, but only seen while the model was still loading (a
        # cold or reload wave): that the requests then ran together was not observed.
        loading_only = [w for w in overlapped if max((x or 0 for x in w["max_active"]), default=0) >= n]
        sparse = [w for w in overlapped if w not in loading_only]
        parts = []
        if apart:
            parts.append(
                f"{len(apart)} wave(s) never overlapped even from the client side "
                "(an overloaded machine or too short a service time)"
            )
        if loading_only:
            parts.append(
                f"{len(loading_only)} wave(s) showed active_slots == {n} only while the model was still "
                f"loading: that the {n} requests then ran together was not observed"
            )
        if sparse:
            polls = sorted({max(w["in_flight_polls"], default=0) for w in sparse})
            parts.append(
                f"the status poller got only {', '.join(map(str, polls))} successful sample(s) inside the window "
                f"in which all {n} requests were in flight during {len(sparse)} wave(s) (an overloaded machine, "
                f"or too short an overlap): too few to show that {n} leases were never held together"
            )
        if unanswered:
            parts.append(f"the status poller got no /v1/models entry for the model during {len(unanswered)} wave(s)")
        return shape.pending(id_, "; ".join(parts) + ": concurrency not shown", waves=active_bad[:30])
    waves_all = [w for r in complete for w in ctx.rec.waves(r) if w["mode"] != "serial"]
    return shape.passed(
        id_,
        f"the status poller saw active_slots == {n} (loaded) in all {len(waves_all)} concurrent waves",
        {"concurrent waves": waves_all},
        poll_hz=[(w.get("status") or {}).get("poll_hz") for w in waves_all][:10],
    )


@shape.judge("M2.drained")
def m2_drained(ctx: Context, n: int) -> Result:
    """M2.drained: active_slots == queued_requests == 0 after every wave."""
    id_ = "M2.drained"
    complete = complete_starts(ctx, n)
    drained_bad = [drain_row(run, w) for run in complete for w in ctx.rec.waves(run) if not (w["drained"]).get("ok")]
    busy = drain_violations(ctx, n)
    absent = [w for w in drained_bad if w["counters"] == "absent"]
    no_queue = [
        w for w in drained_bad if w["counters"] == "present" and w.get("active") is not None and w.get("queued") is None
    ]
    if busy:
        last = busy[0]
        aside = sum(1 for w in busy if "set_aside" in w)
        return shape.failed(
            id_,
            f"{len(busy)} wave(s) left counters non-zero (first: {last['run']} "
            f"{last['phase']} {last['wave']}: active_slots {last['active']}, "
            f"queued_requests {last['queued']})" + (f"; {aside} in attempt(s) parval set aside" if aside else ""),
            violation=busy[:30],
            waves=drained_bad[:30],
        )
    # Counters the server does not publish are a missing precondition, never a violation.
    unpublished = []
    if absent:
        unpublished.append(f"{NO_COUNTERS}: no drain to zero can be shown after {len(absent)} wave(s)")
    if no_queue:
        unpublished.append(
            f"the server publishes no queued_requests: an empty queue cannot be shown after {len(no_queue)} wave(s)"
        )
    if unpublished:
        return shape.unsupported(id_, "; ".join(unpublished), waves=[*absent, *no_queue][:30])
    if (missing := starts_missing(ctx, n, id_)) is not None:
        return missing
    if (gaps := schedule_missing(ctx, n, id_, COUNT_PHASES)) is not None:
        return gaps
    if drained_bad:
        return shape.pending(
            id_,
            f"the status poller got no answer while checking the drain after {len(drained_bad)} wave(s)",
            waves=drained_bad[:30],
        )
    waves_all = [w for r in complete for w in ctx.rec.waves(r)]
    return shape.passed(
        id_, f"active_slots == queued_requests == 0 after all {len(waves_all)} waves", {"drained waves": waves_all}
    )


@shape.judge("M2.exact")
def m2_exact(ctx: Context, n: int) -> Result:
    """M2.exact: every wave output at count n equals its reference."""
    runs = ctx.rec.count_runs(n)
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, COUNT_PHASES)])
    return _outputs_verdict(ctx, n, "M2.exact", tally, COUNT_PHASES, f"count {n}: every wave output vs its reference")


def _outputs_verdict(
    ctx: Context, n: int, id_: str, tally: Tally, phases: tuple[str, ...], what: str, run: str | None = None
) -> Result:
    """An output comparison at count n: a mismatch or error FAILs whatever else is missing;
    a PASS also needs every planned start and wave of `phases` recorded whole."""
    r = exact_result(id_, tally, what, ctx, run or _first_run(ctx, n), count=n)
    if r.status is Status.PASS:
        if (missing := starts_missing(ctx, n, id_)) is not None:
            return missing
        if (gaps := schedule_missing(ctx, n, id_, phases)) is not None:
            return gaps
    return r


@shape.judge("M2.unload_reload")
def m2_unload_reload(ctx: Context, n: int) -> Result:
    """M2.unload_reload: every unload of every start showed the model unloaded
    (/v1/models loaded:false after it), and the outputs after each reload equal the cold
    references."""
    id_ = "M2.unload_reload"
    rec = ctx.rec
    probes = unload_probes(ctx, n)
    violations = unload_violations(ctx, n)
    if violations:
        return shape.failed(id_, "unload/reload not shown: " + grouped(violations), violation=violations)
    reload = Tally()
    for run in rec.count_runs(n):
        reload.merge(ctx.judge(rec.requests(run, ("reload_wave",))))
    reload_result = _outputs_verdict(
        ctx, n, id_, reload, ("reload_wave",), "outputs after unload/reload vs cold references"
    )
    if reload_result.status is Status.FAIL:
        return reload_result
    states = [(run, p, unload_state(ctx, run, p)) for run, p, aside in probes if aside is None]
    routeless: list[UnloadRow] = [
        {"run": run, "cycle": p.get("cycle"), "what": unload_observed(state, p)}
        for run, p, state in states
        if state == "missing_route"
    ]
    if routeless:
        return shape.unsupported(id_, "unload/reload cannot be shown: " + grouped(routeless), starts=routeless)
    unseen: list[UnloadRow] = [
        {"run": run, "cycle": p.get("cycle"), "what": unload_observed(state, p)}
        for run, p, state in states
        if state in ("unseen", "no_loaded")
    ]
    unseen += [
        {"run": run, "what": f"{got} of {UNLOAD_CYCLES} unload/reload cycles recorded"}
        for run in complete_starts(ctx, n)
        if (got := sum(1 for p in probes if p[0] == run and p[2] is None)) != UNLOAD_CYCLES
    ]
    if unseen:
        return shape.pending(id_, "unload not shown: " + grouped(unseen), starts=unseen)
    if reload_result.status is Status.PASS:
        unloads = [p for _, p, aside in probes if aside is None]
        rests_on = {**reload_result.evidence["rests_on"], "unloads shown": len(unloads)}
        return replace(reload_result, evidence={**reload_result.evidence, "rests_on": rests_on})
    return reload_result


@shape.judge("M2.serial_reuse")
def m2_serial_reuse(ctx: Context, n: int) -> Result:
    """M2.serial_reuse: serial requests after the concurrent waves equal their references."""
    runs = ctx.rec.count_runs(n)
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, ("serial_reuse",))])
    return _outputs_verdict(
        ctx, n, "M2.serial_reuse", tally, ("serial_reuse",), "serial requests after the concurrent waves"
    )


JUDGES: dict[str, Callable[[Context, int], Result]] = {
    "M2.starts": m2_starts,
    "M2.cold_wave": m2_cold_wave,
    "M2.warm_waves": m2_warm_waves,
    "M2.observed_active": m2_observed_active,
    "M2.drained": m2_drained,
    "M2.exact": m2_exact,
    "M2.unload_reload": m2_unload_reload,
    "M2.serial_reuse": m2_serial_reuse,
}


def judge_m2(ctx: Context, n: int) -> list[Result]:
    """Every M2 assertion at count n."""
    return [replace(judge(ctx, n), count=n) for judge in JUDGES.values()]
