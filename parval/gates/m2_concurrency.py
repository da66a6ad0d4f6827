"""M2, per count N: at least three fresh starts each serve true concurrent cold, warm and
mixed waves of N, the server shows N leases held at once and released after, and every
output (waves, after unload/reload, serial reuse) equals its reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parval.gates.context import Context, exact_result
from parval.gates.exactness import Tally
from parval.gates.records import COUNT_PHASES
from parval.gates.slot_counters import NO_COUNTERS, counters_seen
from parval.status import Result, blocked, failed, passed, pending


def _complete(ctx: Context, n: int) -> list[str]:
    """The starts at count n that ended without a crash."""
    crashed = {c["run"] for c in ctx.rec.crashes}
    return [r for r in ctx.rec.count_runs(n) if r in ctx.rec.ends and r not in crashed]


def _first_run(ctx: Context, n: int) -> str | None:
    runs = ctx.rec.count_runs(n)
    return runs[0] if runs else None


def m2_starts(ctx: Context, n: int) -> Result:
    """M2.starts: three or more fresh starts at count n completed, none crashed."""
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = _complete(ctx, n)
    crashed = [c for c in rec.crashes if c["run"] in runs]
    fails = [f for f in rec.failures if str(f.get("unit", f.get("run", ""))).startswith(f"count{n}-")]
    ev: dict[str, Any] = {"starts": runs, "complete": complete}
    if crashed:
        c = crashed[0]
        return failed(
            "M2.starts",
            f"server crashed during {c['run']} ({c['where']}), exit status {c['exit_code']}",
            crashes=crashed,
            log_tail=c.get("log_tail", ""),
            **ev,
        )
    if fails:
        return blocked(
            "M2.starts", f"{len(fails)} start(s) did not complete: {fails[0]['reason']}", failures=fails, **ev
        )
    if len(complete) >= 3:
        return passed("M2.starts", f"{len(complete)} fresh starts at count {n}", **ev)
    return pending(
        "M2.starts", f"{len(complete)} fresh start(s) at count {n}; the procedure needs at least three", **ev
    )


def _no_start(id_: str, n: int) -> Result:
    return pending(id_, f"no start at count {n}")


def _every_start(ctx: Context, n: int, id_: str, ok: Callable[[str], bool], good: str, lacking: str) -> Result:
    """PASS when every complete start at count n shows `ok`, else FAIL naming those that do
    not; PENDING without a complete start."""
    complete = _complete(ctx, n)
    if not complete:
        return _no_start(id_, n)
    shown = [run for run in complete if ok(run)]
    if len(shown) == len(complete):
        return passed(id_, good, runs=shown)
    return failed(id_, f"starts without {lacking}: {sorted(set(complete) - set(shown))}")


def m2_cold_wave(ctx: Context, n: int) -> Result:
    """M2.cold_wave: every complete start began with a concurrent cold wave of n."""

    def began_cold(run: str) -> bool:
        reqs = ctx.rec.requests(run)
        return (
            bool(reqs)
            and reqs[0]["phase"] == "cold_wave"
            and any(w["phase"] == "cold_wave" and w["n"] == n for w in ctx.rec.waves(run))
        )

    return _every_start(
        ctx,
        n,
        "M2.cold_wave",
        began_cold,
        f"every start began with a true concurrent cold wave of {n}",
        "a leading cold wave",
    )


def m2_warm_waves(ctx: Context, n: int) -> Result:
    """M2.warm_waves: every complete start ran warm waves, and mixed ones when the plan
    declares variations."""

    def ran_warm(run: str) -> bool:
        waves = ctx.rec.waves(run)
        return any(w["phase"] == "warm_wave" for w in waves) and (
            any(w["phase"] == "mixed_wave" for w in waves) or not ctx.plan["requests"].get("variations")
        )

    return _every_start(
        ctx, n, "M2.warm_waves", ran_warm, "every start ran warm and mixed warm waves", "warm/mixed waves"
    )


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


# Fewer status samples than this in one wave are too few to show that n leases were never
# held at once (a wave lasts a few service times; the poller samples every few ms).
MIN_POLLS = 10


def _not_active(ctx: Context, n: int, run: str) -> list[dict[str, Any]]:
    """The concurrent waves of a start in which no attempt showed n loaded leases at once."""
    reqs = ctx.rec.requests(run)
    attempts: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for w in ctx.rec.waves(run):
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
                "phase": phase,
                "wave": wave,
                "max_active_loaded": seen,
                "attempts": len(tries),
                "client_overlap": overlap,
                "max_active": [(t.get("status") or {}).get("max_active") for t in tries],
                "polls": [(t.get("status") or {}).get("polls") for t in tries],
                "counters": counters_seen(tries),
            }
        )
    return bad


def m2_observed_active(ctx: Context, n: int) -> Result:
    """M2.observed_active: the status poller saw n loaded leases at once in every
    concurrent wave (any attempt of it)."""
    complete = _complete(ctx, n)
    if not complete:
        return _no_start("M2.observed_active", n)
    active_bad = [w for run in complete for w in _not_active(ctx, n, run)]
    absent = [w for w in active_bad if w["counters"] == "absent"]
    unanswered = [w for w in active_bad if w["counters"] == "no_answer"]
    counted = [w for w in active_bad if w["counters"] == "present"]
    overlapped = [w for w in counted if w["client_overlap"]]
    # n leases were held at once, but only seen while the model was still loading (a cold or
    # reload wave): that the requests then ran together was not observed, nor its opposite.
    loading_only = [w for w in overlapped if max((x or 0 for x in w["max_active"]), default=0) >= n]
    # Too few status samples in a wave cannot show that n leases were never held together.
    sparse = [
        w for w in overlapped if w not in loading_only and max((p or 0 for p in w["polls"]), default=0) < MIN_POLLS
    ]
    served_serially = [w for w in overlapped if w not in loading_only and w not in sparse]
    problems = []
    if absent:
        problems.append(
            f"{NO_COUNTERS} (/v1/models lists the model without active_slots during "
            f"{len(absent)} wave(s)): the server cannot show that N requests held "
            "slots at once"
        )
    if served_serially:
        problems.append(
            f"{len(served_serially)} wave(s) were all in flight from the client "
            f"yet the server never showed active_slots == {n} with the model loaded"
        )
    if problems:
        return failed("M2.observed_active", "; ".join(problems), waves=active_bad[:30])
    if active_bad:
        parts = []
        apart = [w for w in counted if not w["client_overlap"]]
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
            polls = sorted({max((p or 0 for p in w["polls"]), default=0) for w in sparse})
            parts.append(
                f"the status poller sampled only {', '.join(map(str, polls))} time(s) during {len(sparse)} "
                f"wave(s) (an overloaded machine): too few to show that {n} leases were never held together"
            )
        if unanswered:
            parts.append(f"the status poller got no /v1/models entry for the model during {len(unanswered)} wave(s)")
        return pending("M2.observed_active", "; ".join(parts) + ": concurrency not shown", waves=active_bad[:30])
    waves_all = [w for r in complete for w in ctx.rec.waves(r)]
    concurrent = len(waves_all) - sum(1 for w in waves_all if w["mode"] == "serial")
    return passed(
        "M2.observed_active",
        f"the status poller saw active_slots == {n} (loaded) in all {concurrent} concurrent waves",
        poll_hz=[(w.get("status") or {}).get("poll_hz") for w in waves_all][:10],
    )


def m2_drained(ctx: Context, n: int) -> Result:
    """M2.drained: active_slots == queued_requests == 0 after every wave."""
    complete = _complete(ctx, n)
    if not complete:
        return _no_start("M2.drained", n)
    waves_all = [w for r in complete for w in ctx.rec.waves(r)]
    drained_bad = [
        {"run": run, "phase": w["phase"], "wave": w["wave"], **(w.get("drained") or {}), "counters": counters_seen([w])}
        for run in complete
        for w in ctx.rec.waves(run)
        if not (w.get("drained") or {}).get("ok")
    ]
    if not drained_bad:
        return passed("M2.drained", f"active_slots == queued_requests == 0 after all {len(waves_all)} waves")
    present = [w for w in drained_bad if w["counters"] == "present"]
    absent = [w for w in drained_bad if w["counters"] == "absent"]
    unanswered = [
        w
        for w in drained_bad
        if w["counters"] == "no_answer" or (w["counters"] == "present" and w.get("active") is None)
    ]
    no_queue = [w for w in present if w.get("active") is not None and w.get("queued") is None]
    busy = [w for w in present if w.get("active") is not None and w.get("queued") is not None]
    problems = []
    if absent:
        problems.append(f"{NO_COUNTERS}: no drain to zero can be shown after {len(absent)} wave(s)")
    if busy:
        last = busy[0]
        problems.append(
            f"{len(busy)} wave(s) left counters non-zero (first: {last['run']} "
            f"{last['phase']} {last['wave']}: active_slots {last['active']}, "
            f"queued_requests {last['queued']})"
        )
    if no_queue:
        problems.append(
            f"the server publishes no queued_requests: an empty queue cannot be shown after {len(no_queue)} wave(s)"
        )
    if problems:
        return failed("M2.drained", "; ".join(problems), waves=drained_bad[:30])
    return pending(
        "M2.drained",
        f"the status poller got no answer while checking the drain after {len(unanswered)} wave(s)",
        waves=drained_bad[:30],
    )


def m2_exact(ctx: Context, n: int) -> Result:
    """M2.exact: every wave output at count n equals its reference."""
    runs = ctx.rec.count_runs(n)
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, COUNT_PHASES)])
    return exact_result("M2.exact", tally, f"count {n}: every wave output vs its reference", ctx, _first_run(ctx, n))


def _unload_observed(probe: dict[str, Any] | None, waves: list[dict[str, Any]]) -> str:
    """What the per-start unload probe showed, in words (M2.unload_reload)."""
    if probe is None:
        return "no unload was recorded"
    reply = probe.get("reply") or {}
    if reply.get("status") != 200:
        got = (
            f"answered {reply['status']}"
            if reply.get("status") is not None
            else f"gave no answer ({reply.get('outcome')})"
        )
        err = f": {str(reply['error'])[:120]}" if reply.get("error") else ""
        return f"the unload route /v1/tasks/unload_models {got}{err}"
    if not probe.get("listed"):
        return "the unload reply did not list the model in `unloaded`"
    # The wave summaries only see `loaded` next to active_slots.
    loaded_seen = any((w.get("status") or {}).get("max_active_loaded") is not None for w in waves)
    why = (
        ""
        if loaded_seen
        else (" (no status sample of this start showed loaded:true either: the server may publish no `loaded`)")
    )
    return f"/v1/models never showed the model loaded:false after the unload{why}"


def m2_unload_reload(ctx: Context, n: int) -> Result:
    """M2.unload_reload: every unload of every start showed the model unloaded, and the
    outputs after each reload equal the cold references."""
    rec = ctx.rec
    unload_bad: list[dict[str, Any]] = []
    reload = Tally()
    for run in rec.count_runs(n):
        # Every unload/reload cycle of the start (the campaign runs several for M5).
        probes = [e for e in rec.by_run.get(run, []) if e["kind"] == "probe" and e["name"] == "unload"]
        bad = [p for p in probes if not (p["reply"]["status"] == 200 and p.get("listed") and p.get("loaded_false"))]
        if not probes or bad:
            first_bad = bad[0] if bad else None
            unload_bad.append(
                {
                    "run": run,
                    "probe": first_bad,
                    "cycle": (first_bad or {}).get("cycle"),
                    "cycles": len(probes),
                    "what": _unload_observed(first_bad, rec.waves(run)),
                }
            )
        reload.merge(ctx.judge(rec.requests(run, ("reload_wave",))))
    if unload_bad:
        by_what: dict[str, list[str]] = {}
        for b in unload_bad:
            by_what.setdefault(b["what"], []).append(b["run"])
        return failed(
            "M2.unload_reload",
            "unload/reload not shown: "
            + "; ".join(f"{what} ({len(rs)} start(s): {', '.join(rs)})" for what, rs in by_what.items()),
            starts=unload_bad,
        )
    return exact_result(
        "M2.unload_reload", reload, "outputs after unload/reload vs cold references", ctx, _first_run(ctx, n)
    )


def m2_serial_reuse(ctx: Context, n: int) -> Result:
    """M2.serial_reuse: serial requests after the concurrent waves equal their references."""
    runs = ctx.rec.count_runs(n)
    tally = ctx.judge([e for r in runs for e in ctx.rec.requests(r, ("serial_reuse",))])
    return exact_result("M2.serial_reuse", tally, "serial requests after the concurrent waves", ctx, _first_run(ctx, n))


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
    out = [judge(ctx, n) for judge in JUDGES.values()]
    for r in out:
        r.count = n
    return out
