"""M2, per count N: at least three fresh starts each serve true concurrent cold, warm and
mixed waves of N, the server shows N leases held at once and released after, and every
output (waves, after unload/reload, serial reuse) equals its reference.

Lifecycle violations (counters left non-zero, N leases never held while the client had N
requests in flight, an unload that left the model loaded) count in set-aside attempts too:
an attempt parval set aside is never proof of a PASS, but what it showed fails."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NotRequired, TypedDict

from parval.gates.exactness import Tally
from parval.gates.judge_context import JudgeContext, exact_result
from parval.gates.unload_evidence import unload_check
from parval.jsontypes import JsonObject
from parval.plan.waves import MIN_POLLS_IN_FLIGHT, UNLOAD_CYCLES
from parval.procedure import judge_shape as shape
from parval.procedure.entry import (
    COMPARED,
    COUNT_REQUESTS,
    DRAINED,
    MASKED,
    NEGATIVE,
    PLAN,
    SET_ASIDE,
    STARTS,
    WAVE_STATUS,
    WAVES,
    Entry,
    Gate,
)
from parval.rundir.cannot_start import cannot_start_events
from parval.rundir.cannot_start import cause as cannot_start_cause
from parval.rundir.event_index import COUNT_PHASES, complete_starts, schedule_missing, starts_missing, typed
from parval.rundir.event_types import ProbeEvent, RequestEvent, WaveEvent
from parval.status import Result, Status

__all__ = ["ENTRIES", "JUDGES", "client_overlap", "judge_m2"]

# Each judge below declares its registry entry, judged once per count.
_m2 = Gate("count")


# --- what the status poller saw of the slot counters (also read by M3 and M6) ------

NO_COUNTERS = "the server publishes no slot counters"


def counters_seen(waves: Sequence[WaveEvent]) -> str:
    """What the status poller saw of the slot counters during these wave attempts:
    'present', 'absent' (/v1/models listed the model without active_slots) or 'no_answer'."""
    answered = False
    for w in waves:
        st = w.get("status") or {}
        if st.get("fields_present", st.get("max_active") is not None):
            return "present"
        polls = st.get("polls") or 0
        answered = answered or polls > (st.get("poll_errors") or 0)
    return "absent" if answered else "no_answer"


# --- what the starts of one count showed: the violations M2 (and Q5) FAIL on -------


class UnloadRow(TypedDict):
    """One start's unload/reload cycle that was not shown, in words (`what`)."""

    run: str
    what: str
    cycle: NotRequired[object]
    state: NotRequired[str]
    set_aside: NotRequired[str]


def client_overlap(reqs: list[RequestEvent]) -> bool:
    """Were all of a wave's requests in flight together as the client saw it (every send
    before the first reply)? Retried attempts of a wave are judged separately."""
    by_attempt: dict[int, list[RequestEvent]] = {}
    for r in reqs:
        by_attempt.setdefault(int(r.get("retry", 0)), []).append(r)
    return any(
        len(group) > 1 and max(r["t_send"] for r in group) < min(r["t_done"] for r in group)
        for group in by_attempt.values()
    )


def in_flight_polls(w: WaveEvent) -> int:
    """Successful status samples wholly inside the window in which all the wave's requests
    were in flight (0 when the runner recorded no such window)."""
    return int((w.get("all_in_flight") or {}).get("polls") or 0)


class NotActive(TypedDict):
    """A concurrent wave in which no attempt showed n loaded leases, with what each
    attempt showed (lists: one entry per attempt)."""

    run: str
    attempt: int
    phase: str
    wave: int
    max_active_loaded: list[int | None]
    attempts: int
    client_overlap: bool
    max_active: list[int | None]
    in_flight_max_active: list[int | None]
    in_flight_polls: list[int]
    in_flight_ms: list[float | None]
    counters: str
    set_aside: NotRequired[str]


def not_active(n: int, run: str, waves: list[WaveEvent], reqs: list[RequestEvent]) -> list[NotActive]:
    """The concurrent waves (of these events) in which no attempt showed n loaded leases."""
    attempts: dict[tuple[str, int], list[WaveEvent]] = {}
    for w in waves:
        if w["mode"] != "serial":
            attempts.setdefault((w["phase"], w["wave"]), []).append(w)
    bad: list[NotActive] = []
    for (phase, wave), tries in attempts.items():
        seen = [(t.get("status") or {}).get("max_active_loaded") for t in tries]
        if any(x is not None and x >= n for x in seen):
            continue
        overlap = client_overlap([r for r in reqs if r["phase"] == phase and r["wave"] == wave])
        bad.append(
            {
                "run": run,
                "attempt": tries[0]["attempt"],
                "phase": phase,
                "wave": wave,
                "max_active_loaded": seen,
                "attempts": len(tries),
                "client_overlap": overlap,
                "max_active": [(t.get("status") or {}).get("max_active") for t in tries],
                "in_flight_max_active": [(t.get("all_in_flight") or {}).get("max_active") for t in tries],
                "in_flight_polls": [in_flight_polls(t) for t in tries],
                "in_flight_ms": [(t.get("all_in_flight") or {}).get("ms") for t in tries],
                "counters": counters_seen(tries),
            }
        )
    return bad


def serial_despite_overlap(w: NotActive, n: int) -> bool:
    """An observed violation: some attempt had all n requests in flight from the client
    with enough successful samples inside that window, every one below n active."""
    for polls, top in zip(w["in_flight_polls"], w["in_flight_max_active"], strict=True):
        if polls >= MIN_POLLS_IN_FLIGHT and top is not None and top < n:
            return True
    return False


def set_aside_count_events(ctx: JudgeContext, n: int) -> list[tuple[str, list[JsonObject]]]:
    """(run, events) of each set-aside attempt of a start at count n, the soak's included
    (`typed` picks a kind). One entry per attempt: a start set aside twice has two."""
    out = []
    for (run, _attempt), entry in ctx.rec.set_aside.items():
        start = entry["run_start"]
        if start["role"] in ("count", "soak") and start["count"] == n:
            out.append((run, entry["events"]))
    return out


def set_aside_waves(ctx: JudgeContext, n: int) -> list[tuple[str, list[WaveEvent]]]:
    return [(run, typed(events, "wave")) for run, events in set_aside_count_events(ctx, n)]


def starts_at(ctx: JudgeContext, n: int) -> list[str]:
    """The standing starts at count n whose waves M2 judges: the required ones and the
    soak's (parval.runners.soak), which run the same waves."""
    return [*ctx.rec.count_runs(n), *ctx.rec.soak_runs(n)]


def complete_at(ctx: JudgeContext, n: int) -> list[str]:
    """Those of them that ran to their end."""
    return [*complete_starts(ctx, n), *(r for r in ctx.rec.soak_runs(n) if ctx.rec.complete(r))]


def active_violations(ctx: JudgeContext, n: int, *, standing: bool = True) -> list[NotActive]:
    """Waves (standing attempts unless `standing` is False, and set-aside attempts) that
    showed fewer than n leases while all n requests were in flight, with enough samples in
    that window to show it."""
    out = []
    for run in starts_at(ctx, n) if standing else []:
        for w in not_active(n, run, ctx.rec.waves(run), ctx.rec.requests(run)):
            if w["counters"] == "present" and w["client_overlap"] and serial_despite_overlap(w, n):
                out.append(w)
    # each attempt's waves against that attempt's own requests
    for run, events in set_aside_count_events(ctx, n):
        for w in not_active(n, run, typed(events, "wave"), typed(events, "request")):
            if w["counters"] == "present" and w["client_overlap"] and serial_despite_overlap(w, n):
                out.append({**w, "set_aside": ctx.rec.set_aside_status(run, w["attempt"])})
    return out


def drain_row(run: str, w: WaveEvent) -> dict[str, object]:
    return {
        "run": run,
        "attempt": w["attempt"],
        "phase": w["phase"],
        "wave": w["wave"],
        **(w.get("drained") or {}),
        "counters": counters_seen([w]),
    }


def drain_violations(ctx: JudgeContext, n: int, *, standing: bool = True) -> list[dict[str, object]]:
    """Waves (standing attempts unless `standing` is False, and set-aside attempts) after
    which the counters stayed non-zero."""
    runs = starts_at(ctx, n) if standing else []
    rows = [drain_row(run, w) for run in runs for w in ctx.rec.waves(run) if not w["drained"].get("ok")]
    rows += [
        {**drain_row(run, w), "set_aside": ctx.rec.set_aside_status(run, w["attempt"])}
        for run, waves in set_aside_waves(ctx, n)
        for w in waves
        if not (w.get("drained") or {}).get("ok")
    ]
    return [
        r
        for r in rows
        if not r.get("ok")
        and r["counters"] == "present"
        and r.get("active") is not None
        and r.get("queued") is not None
    ]


def loaded_published(ctx: JudgeContext, run: str, probe: Mapping[str, object]) -> bool:
    """Did this process publish `loaded` in /v1/models (recorded with the probe; for older
    runs: did any wave summary see a loaded lease)?"""
    if "loaded_field" in probe:
        return bool(probe["loaded_field"])
    return any((w.get("status") or {}).get("max_active_loaded") is not None for w in ctx.rec.waves(run))


def unload_state(ctx: JudgeContext, run: str, p: ProbeEvent) -> str:
    """What one per-start unload probe showed (see `unload_evidence.unload_check`)."""
    if p["reply"].get("status") == 200 and p.get("loaded_false"):
        return "ok"
    return unload_check(p, loaded_field=loaded_published(ctx, run, p))


def unload_observed(state: str, probe: ProbeEvent | None) -> str:
    """What the per-start unload probe showed, in words (M2.unload_reload)."""
    if probe is None:
        return "no unload was recorded"
    reply = probe.get("reply") or {}
    if state == "error":
        got = (
            f"answered {reply['status']}"
            if reply.get("status") is not None
            else f"gave no answer ({reply.get('outcome')})"
        )
        err = f": {str(reply['error'])[:120]}" if reply.get("error") else ""
        return f"the unload route /v1/tasks/unload_models {got}{err}"
    if state == "missing_route":
        err = f": {str(reply['error'])[:120]}" if reply.get("error") else ""
        return f"this server has no /v1/tasks/unload_models route (answered 404{err})"
    if state == "no_loaded":
        return (
            "/v1/models never showed the model loaded:false after the unload (no status sample of this start "
            "showed loaded:true either: the server may publish no `loaded`)"
        )
    if state == "stayed":
        return (
            f"the unload answered 200 but /v1/models showed the model loaded in all {probe.get('polls_after')} "
            "status samples after it"
        )
    return (
        f"/v1/models did not show loaded:false after the unload ({int(probe.get('polls_after') or 0)} status "
        "sample(s) after it: too few to tell)"
    )


def unload_probes(ctx: JudgeContext, n: int) -> list[tuple[str, ProbeEvent, str | None]]:
    """(run, unload probe, set-aside status or None) of every start at count n, the
    soak's included."""
    out: list[tuple[str, ProbeEvent, str | None]] = [
        (run, e, None)
        for run in starts_at(ctx, n)
        for e in typed(ctx.rec.by_run.get(run, []), "probe")
        if e["name"] == "unload"
    ]
    out += [
        (run, e, ctx.rec.set_aside_status(run, e["attempt"]))
        for run, events in set_aside_count_events(ctx, n)
        for e in typed(events, "probe")
        if e["name"] == "unload"
    ]
    return out


def unload_violations(ctx: JudgeContext, n: int, *, standing: bool = True) -> list[UnloadRow]:
    """Unload probes (standing attempts unless `standing` is False, and set-aside attempts)
    observed to fail: an error reply other than the 404 of a route the build lacks, or the
    model still loaded in enough samples after a 200. A missing route or an unpublished
    `loaded` is a missing precondition (`unload_unsupported`, `M2.unload_reload`), never one."""
    out: list[UnloadRow] = []
    for run, p, aside in unload_probes(ctx, n):
        if aside is None and not standing:
            continue
        state = unload_state(ctx, run, p)
        if state in ("error", "stayed"):
            row: UnloadRow = {"run": run, "cycle": p.get("cycle"), "state": state, "what": unload_observed(state, p)}
            out.append(row if aside is None else {**row, "set_aside": aside})
    return out


def grouped(bad: list[UnloadRow]) -> str:
    by_what: dict[str, list[str]] = {}
    for b in bad:
        label = b["run"] + (f" (set aside: {b['set_aside']})" if "set_aside" in b else "")
        labels = by_what.setdefault(b["what"], [])
        if label not in labels:
            labels.append(label)
    return "; ".join(f"{what} ({len(rs)} start(s): {', '.join(rs)})" for what, rs in by_what.items())


# --- the M2 judges -----------------------------------------------------------------


def _first_run(ctx: JudgeContext, n: int) -> str | None:
    runs = ctx.rec.count_runs(n)
    return runs[0] if runs else None


def _stop_text(stop: Mapping[str, object]) -> str:
    attempt = stop.get("attempt")
    which = "(before its server started)" if attempt is None else f"attempt {attempt}"
    return f"{stop['run']} {which}: {stop['kind']}: {stop['reason']}"


@shape.judge(
    "M2.starts",
    _m2(
        (STARTS + " of the count<N>-s<k> starts",),
        ("crash_at_4",),
        (
            "FAIL at every count when the candidate executable's first start exited by itself before it was ready "
            "(executable_cannot_start: a build that cannot start cannot be admitted at any count; a readiness "
            "timeout is not that)",
            "BLOCKED when parval stopped a start (start_failed / start_aborted / start_timeout / wave_timeout /"
            " memory_guard), naming why; the faults hang_requests and drop_connection leave it BLOCKED",
            "every other M2/M3 judge PASSes only on the complete starts (at least three, every one recorded) and "
            "every planned wave recorded whole (its summary and one reply per request); a start parval stopped "
            "never counts as complete",
        ),
    ),
)
def m2_starts(ctx: JudgeContext, n: int) -> Result:
    """M2.starts: three or more fresh starts at count n completed, none crashed; a start
    parval stopped (it hung, stopped answering, could not start, hit the memory guard) is
    BLOCKED with what was seen."""
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = complete_starts(ctx, n)
    crashed = [c for c in rec.crashes if c["run"] in runs]
    stops = [f for f in rec.failures if f["run"].startswith(f"count{n}-")]  # build_records names each start
    ev: dict[str, object] = {"starts": runs, "complete": complete}
    if (broken := cannot_start_events(rec.events).get("candidate")) is not None:
        return shape.failed(
            "M2.starts",
            f"{cannot_start_cause(broken)} (its first start, {broken.get('run')}); no start at count {n} was tried",
            violation=dict(broken),
            log_tail="\n".join(str(x) for x in lines) if isinstance(lines := broken.get("last_lines"), list) else "",
            **ev,
        )
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
    ctx: JudgeContext, n: int, id_: str, phases: tuple[str, ...], ok: Callable[[str], bool], good: str, lacking: str
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


def m2_cold_wave_ok(ctx: JudgeContext, n: int) -> Callable[[str], bool]:
    def began_cold(run: str) -> bool:
        reqs = ctx.rec.requests(run)
        return (
            bool(reqs)
            and reqs[0]["phase"] == "cold_wave"
            and any(w["phase"] == "cold_wave" and w["n"] == n and w["mode"] != "serial" for w in ctx.rec.waves(run))
        )

    return began_cold


@shape.judge(
    "M2.cold_wave",
    _m2(
        ("the first `request` event of each complete start (phase cold_wave)", WAVES + ": a cold_wave of N"),
        notes=("PENDING when no start at the count completed",),
    ),
)
def m2_cold_wave(ctx: JudgeContext, n: int) -> Result:
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


@shape.judge(
    "M2.warm_waves",
    _m2(
        (
            WAVES + ": warm_wave and mixed_wave",
            PLAN + ": requests.variations (mixed waves required only when variations are declared)",
        )
    ),
)
def m2_warm_waves(ctx: JudgeContext, n: int) -> Result:
    """M2.warm_waves: every complete start ran its planned warm waves, and its mixed ones
    when the plan declares variations."""
    variations = bool(ctx.plan.variations)

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


@shape.judge(
    "M2.observed_active",
    _m2(
        (
            "every concurrent wave attempt: " + WAVE_STATUS,
            "`request` events of each wave (t_send / t_done: did the client have them all in flight?)",
        ),
        ("fake_concurrency",),
        (
            "FAIL when a wave attempt had all N requests in flight from the client with at least 5 successful "
            "status samples inside that window (the wave event's all_in_flight), every one below N; the same "
            "in an attempt parval set aside; UNSUPPORTED when the server publishes no slot counters",
            "PENDING when a wave never overlapped even from the client side, when N leases were seen "
            "only while the model was still loading, when fewer than 5 successful samples fell inside the "
            "all-in-flight window (the campaign repeats such a wave first), or when the poller got no "
            "/v1/models answer",
        ),
    ),
)
def m2_observed_active(ctx: JudgeContext, n: int) -> Result:
    """M2.observed_active: the status poller saw n loaded leases at once in every
    concurrent wave (any attempt of it). A FAIL needs enough successful samples inside the
    window in which the client had all n requests in flight, every one below n."""
    id_ = "M2.observed_active"
    complete = complete_at(ctx, n)
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
        f"the status poller saw active_slots == {n} (loaded) in all {len(waves_all)} concurrent waves"
        + _soak_share(ctx, n, waves_all),
        {"concurrent waves": waves_all},
        poll_hz=[(w.get("status") or {}).get("poll_hz") for w in waves_all][:10],
    )


@shape.judge(
    "M2.drained",
    _m2(
        (DRAINED + " after every wave", WAVE_STATUS, SET_ASIDE),
        ("counters_no_drain",),
        (
            "FAIL when counters stay non-zero (also in an attempt parval set aside); UNSUPPORTED when they "
            "are absent or queued_requests is not published; PENDING when the poller got no answer during "
            "the drain check",
        ),
    ),
)
def m2_drained(ctx: JudgeContext, n: int) -> Result:
    """M2.drained: active_slots == queued_requests == 0 after every wave."""
    id_ = "M2.drained"
    complete = complete_at(ctx, n)
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
    lags = [
        (drain_row(r, w), float(lag))
        for r in complete
        for w in ctx.rec.waves(r)
        if (lag := w["drained"].get("lag_ms")) is not None
    ]
    nonzero = sum(int(w["drained"].get("nonzero_reads") or 0) for w in waves_all)
    worst = max(lags, key=lambda x: x[1]) if lags else None
    lag_text = (
        f"; they read zero at most {worst[1]:.0f} ms after a wave's last reply ({nonzero} poll(s) still showed work)"
        if worst
        else ""
    )
    bound = drain_lag_bound(ctx)
    if worst is not None and bound is not None and worst[1] > bound:
        late = [row for row, lag in lags if lag > bound]
        return shape.pending(
            id_,
            f"the counters lagged the replies: {len(late)} wave(s) read zero later than the declared "
            f"timeouts.drain_lag_ms {bound:g} ms after their last reply (up to {worst[1]:.0f} ms, first: "
            f"{late[0]['run']} {late[0]['phase']} {late[0]['wave']}); a lag beyond the declared bound is not a pass",
            lagging=late[:30],
        )
    return shape.passed(
        id_,
        f"active_slots == queued_requests == 0 after all {len(waves_all)} waves{_soak_share(ctx, n, waves_all)}"
        f"{lag_text}",
        {"drained waves": waves_all},
        drain_lag_ms=worst[1] if worst else None,
        nonzero_reads=nonzero,
    )


def _soak_share(ctx: JudgeContext, n: int, waves: list[WaveEvent]) -> str:
    soak = set(ctx.rec.soak_runs(n))
    k = sum(1 for w in waves if w["run"] in soak)
    return f" ({k} of them in soak starts)" if k else ""


def drain_lag_bound(ctx: JudgeContext) -> float | None:
    """How long the plan lets counters lag a wave's last reply (timeouts.drain_lag_ms); None
    when it declares none (the lag is reported, not judged)."""
    return ctx.plan.drain_lag_ms


@shape.judge(
    "M2.exact",
    _m2(
        (COUNT_REQUESTS, NEGATIVE, SET_ASIDE),
        ("contaminate_3plus", "intermittent_mismatch", "ignore_seed", "sub16_noise", "rare_contamination"),
        (
            MASKED,
            "ignore_seed fails it when only the candidate ignores the seed; garbage_replies makes it FAIL or BLOCKED",
            "outputs are compared at each file's own sample format (sub16_noise: PCM_32 samples that differ "
            "below 16 bits fail); a reply refused for memory (503 insufficient_memory, the fault "
            "memory_refused_at) is BLOCKED, never FAIL",
        ),
    ),
)
def m2_exact(ctx: JudgeContext, n: int) -> Result:
    """M2.exact: every wave output at count n equals its reference."""
    runs = [*ctx.rec.count_runs(n), *ctx.rec.soak_runs(n)]
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, COUNT_PHASES)], overlap=True)
    return _outputs_verdict(
        ctx, n, "M2.exact", tally, COUNT_PHASES, f"count {n}: every wave output vs its reference", bounded=True
    )


def _outputs_verdict(
    ctx: JudgeContext,
    n: int,
    id_: str,
    tally: Tally,
    phases: tuple[str, ...],
    what: str,
    run: str | None = None,
    *,
    bounded: bool = False,
) -> Result:
    """An output comparison at count n: a mismatch or error FAILs whatever else is missing;
    a PASS also needs every planned start and wave of `phases` recorded whole."""
    r = exact_result(id_, tally, what, ctx, run or _first_run(ctx, n), count=n, bounded=bounded)
    if r.status is Status.PASS:
        for gap in (starts_missing(ctx, n, id_), schedule_missing(ctx, n, id_, phases)):
            if gap is not None:
                # what the outputs recorded so far rule out is kept (a soak's progress)
                return replace(gap, evidence={**gap.evidence, "bound": tally.bound()}) if bounded else gap
    return r


@shape.judge(
    "M2.unload_reload",
    _m2(
        (
            "`probe` events named unload of every start (reply, loaded_false, polls_after, still_loaded, "
            "loaded_field, cycle): what /v1/models showed after the unload",
            "`request` events of phase reload_wave, compared with the cold references",
            NEGATIVE,
            SET_ASIDE,
        ),
        ("unload_keeps_loaded",),
        (
            MASKED,
            "unloaded means /v1/models showed loaded:false after the unload, never that the reply's "
            "`unloaded` list names the model (it lists every known id); FAIL when the route errs (other than "
            "a 404) or at least 5 samples after a 200 all showed the model loaded; UNSUPPORTED when the "
            "route answers 404 (this build has none); PENDING with fewer samples or when the server "
            "publishes no `loaded`",
        ),
    ),
)
def m2_unload_reload(ctx: JudgeContext, n: int) -> Result:
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
        for run in complete_at(ctx, n)
        if (got := sum(1 for p in probes if p[0] == run and p[2] is None)) != UNLOAD_CYCLES
    ]
    if unseen:
        return shape.pending(id_, "unload not shown: " + grouped(unseen), starts=unseen)
    if reload_result.status is Status.PASS:
        unloads = [p for _, p, aside in probes if aside is None]
        rests_on = {**shape.rests_on(reload_result), "unloads shown": len(unloads)}
        return replace(reload_result, evidence={**reload_result.evidence, "rests_on": rests_on})
    return reload_result


@shape.judge(
    "M2.serial_reuse",
    _m2(("`request` events of phase serial_reuse of every start at the count, " + COMPARED, NEGATIVE), notes=(MASKED,)),
)
def m2_serial_reuse(ctx: JudgeContext, n: int) -> Result:
    """M2.serial_reuse: serial requests after the concurrent waves equal their references."""
    runs = ctx.rec.count_runs(n)
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, ("serial_reuse",))])
    return _outputs_verdict(
        ctx, n, "M2.serial_reuse", tally, ("serial_reuse",), "serial requests after the concurrent waves"
    )


JUDGES: dict[str, Callable[[JudgeContext, int], Result]] = {
    "M2.starts": m2_starts,
    "M2.cold_wave": m2_cold_wave,
    "M2.warm_waves": m2_warm_waves,
    "M2.observed_active": m2_observed_active,
    "M2.drained": m2_drained,
    "M2.exact": m2_exact,
    "M2.unload_reload": m2_unload_reload,
    "M2.serial_reuse": m2_serial_reuse,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_m2(ctx: JudgeContext, n: int) -> list[Result]:
    """Every M2 assertion at count n."""
    return [replace(judge(ctx, n), count=n) for judge in JUDGES.values()]
