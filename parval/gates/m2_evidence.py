"""What the starts of one advertised count showed of concurrency, drain and unloads, in
their standing attempts and in the attempts parval set aside: the observed violations the
M2 judges (and Q5) FAIL on, and the rows they explain the rest with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from parval.gates.context import Context
from parval.gates.slot_counters import counters_seen
from parval.gates.unload_evidence import unload_check

# Successful status samples taken wholly inside the window in which the client had all N
# requests of a wave in flight (last send to first reply): with fewer, the poller cannot
# show that N leases were never held together (the campaign repeats such a wave).
MIN_POLLS_IN_FLIGHT = 5


class UnloadRow(TypedDict):
    """One start's unload/reload cycle that was not shown, in words (`what`)."""

    run: str
    what: str
    cycle: NotRequired[object]
    state: NotRequired[str]
    set_aside: NotRequired[str]


def client_overlap(reqs: list[dict[str, Any]]) -> bool:
    """Were all of a wave's requests in flight together as the client saw it (every send
    before the first reply)? Retried attempts of a wave are judged separately."""
    by_attempt: dict[int, list[dict[str, Any]]] = {}
    for r in reqs:
        by_attempt.setdefault(int(r.get("retry", 0)), []).append(r)
    return any(
        len(group) > 1 and max(r["t_send"] for r in group) < min(r["t_done"] for r in group)
        for group in by_attempt.values()
    )


def in_flight_polls(w: dict[str, Any]) -> int:
    """Successful status samples wholly inside the window in which all the wave's requests
    were in flight (0 when the runner recorded no such window)."""
    return int((w.get("all_in_flight") or {}).get("polls") or 0)


def not_active(n: int, run: str, waves: list[dict[str, Any]], reqs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The concurrent waves (of these events) in which no attempt showed n loaded leases."""
    attempts: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for w in waves:
        if w["mode"] != "serial":
            attempts.setdefault((w["phase"], w["wave"]), []).append(w)
    bad = []
    for (phase, wave), tries in attempts.items():
        seen = [(t.get("status") or {}).get("max_active_loaded") for t in tries]
        if any(x is not None and x >= n for x in seen):
            continue
        overlap = client_overlap([r for r in reqs if r["phase"] == phase and r["wave"] == wave])
        bad.append(
            {
                "run": run,
                "attempt": tries[0].get("attempt"),
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


def serial_despite_overlap(w: dict[str, Any], n: int) -> bool:
    """An observed violation: some attempt had all n requests in flight from the client
    with enough successful samples inside that window, every one below n active."""
    for polls, top in zip(w["in_flight_polls"], w["in_flight_max_active"], strict=True):
        if polls >= MIN_POLLS_IN_FLIGHT and top is not None and top < n:
            return True
    return False


def set_aside_count_events(ctx: Context, n: int, kind: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(run, events of `kind`) of each set-aside attempt of a count-n start."""
    out = []
    for (run, _attempt), entry in ctx.rec.set_aside.items():
        start = entry["run_start"]
        if start.get("role") == "count" and start.get("count") == n:
            out.append((run, [e for e in entry["events"] if e.get("kind") == kind]))
    return out


def set_aside_requests(ctx: Context, n: int) -> list[tuple[str, list[dict[str, Any]]]]:
    return set_aside_count_events(ctx, n, "request")


def active_violations(ctx: Context, n: int, *, standing: bool = True) -> list[dict[str, object]]:
    """Waves (standing attempts unless `standing` is False, and set-aside attempts) that
    showed fewer than n leases while all n requests were in flight, with enough samples in
    that window to show it."""
    out = []
    for run in ctx.rec.count_runs(n) if standing else []:
        for w in not_active(n, run, ctx.rec.waves(run), ctx.rec.requests(run)):
            if w["counters"] == "present" and w["client_overlap"] and serial_despite_overlap(w, n):
                out.append(w)
    aside_reqs = dict(set_aside_requests(ctx, n))
    for run, waves in set_aside_count_events(ctx, n, "wave"):
        for w in not_active(n, run, waves, aside_reqs.get(run, [])):
            if w["counters"] == "present" and w["client_overlap"] and serial_despite_overlap(w, n):
                out.append({**w, "set_aside": ctx.rec.set_aside_status(run, w.get("attempt"))})
    return out


def drain_row(run: str, w: dict[str, Any]) -> dict[str, object]:
    return {
        "run": run,
        "attempt": w.get("attempt"),
        "phase": w["phase"],
        "wave": w["wave"],
        **(w.get("drained") or {}),
        "counters": counters_seen([w]),
    }


def drain_violations(ctx: Context, n: int, *, standing: bool = True) -> list[dict[str, object]]:
    """Waves (standing attempts unless `standing` is False, and set-aside attempts) after
    which the counters stayed non-zero."""
    runs = ctx.rec.count_runs(n) if standing else []
    rows = [drain_row(run, w) for run in runs for w in ctx.rec.waves(run) if not w["drained"].get("ok")]
    rows += [
        {**drain_row(run, w), "set_aside": ctx.rec.set_aside_status(run, w.get("attempt"))}
        for run, waves in set_aside_count_events(ctx, n, "wave")
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


def loaded_published(ctx: Context, run: str, probe: Mapping[str, object]) -> bool:
    """Did this process publish `loaded` in /v1/models (recorded with the probe; for older
    runs: did any wave summary see a loaded lease)?"""
    if "loaded_field" in probe:
        return bool(probe["loaded_field"])
    return any((w.get("status") or {}).get("max_active_loaded") is not None for w in ctx.rec.waves(run))


def unload_state(ctx: Context, run: str, p: dict[str, Any]) -> str:
    """What one per-start unload probe showed (see `slot_counters.unload_check`)."""
    if p["reply"].get("status") == 200 and p.get("loaded_false"):
        return "ok"
    return unload_check(p, loaded_field=loaded_published(ctx, run, p))


def unload_observed(state: str, probe: dict[str, Any] | None) -> str:
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


def unload_probes(ctx: Context, n: int) -> list[tuple[str, dict[str, Any], str | None]]:
    """(run, unload probe, set-aside status or None) of every start at count n."""
    out: list[tuple[str, dict[str, Any], str | None]] = [
        (run, e, None)
        for run in ctx.rec.count_runs(n)
        for e in ctx.rec.by_run.get(run, [])
        if e["kind"] == "probe" and e["name"] == "unload"
    ]
    out += [
        (run, e, ctx.rec.set_aside_status(run, e.get("attempt")))
        for run, events in set_aside_count_events(ctx, n, "probe")
        for e in events
        if e["name"] == "unload"
    ]
    return out


def unload_violations(ctx: Context, n: int, *, standing: bool = True) -> list[UnloadRow]:
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
