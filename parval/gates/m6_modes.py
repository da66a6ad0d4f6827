"""M6, judged once on the modes start: each mode the plan admits (offline, streaming,
native batching) is shown exact under concurrency; a mode it does not admit is N/A."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parval.gates.context import Context, run_judges
from parval.gates.records import COUNT_PHASES
from parval.gates.slot_counters import NO_COUNTERS
from parval.status import Result, failed, not_applicable, passed, pending


def _admits(ctx: Context) -> set[str]:
    return set(ctx.plan["model"].get("admit_modes", ["offline"]))


def m6_offline(ctx: Context) -> Result:
    """M6.offline: offline outputs of the count waves were compared (M2.exact judges them)."""
    if "offline" not in _admits(ctx):
        return not_applicable("M6.offline", "the plan does not admit offline mode")
    rec = ctx.rec
    mode = ctx.plan["model"].get("mode", "offline")
    offline = ctx.judge([e for n in ctx.counts for r in rec.count_runs(n) for e in rec.requests(r, COUNT_PHASES)])
    if not offline.compared:
        return pending("M6.offline", "no offline output of a count wave was compared with a reference in this run")
    return passed(
        "M6.offline",
        f"offline evidence: {offline.compared} /v1/tasks/run outputs "
        f"compared in this run's count waves (model mode {mode}; exactness judged by "
        "M2.exact) admits offline mode only",
        compared=offline.compared,
    )


def _streaming(e: dict[str, Any]) -> Result:
    """Concurrent streams exact vs the offline audio, overlap shown by the server, one
    stream cut by its client while the others stay exact, lease released."""
    n = int(e["count"])
    streams = e.get("streams") or []
    ref = e.get("reference_pcm_sha256")
    drained = e.get("drained") or {}
    counters = bool(e.get("counters_present", drained.get("fields_present", False)))
    if ref is None:
        return pending(
            "M6.streaming",
            "no offline reference audio to compare the streams with: "
            f"{e.get('reference_problem') or 'offline request failed'}",
            **e,
        )
    kept = [s for s in streams if not s.get("disconnected")]
    bad = [s for s in kept if s.get("pcm_sha256") != ref or not s.get("done")]
    fails, waits = [], []
    errs = [s for s in bad if s.get("outcome") != "ok"]
    if errs:
        got = sorted({str(s.get("status") or s.get("outcome")) for s in errs})
        fails.append(f"{len(errs)} of {len(kept)} stream(s) got no complete stream (answered {', '.join(got)})")
    if len(bad) > len(errs):
        fails.append(f"{len(bad) - len(errs)} of {len(kept)} stream(s) differ from the offline audio or did not finish")
    if not drained.get("ok"):
        if drained.get("fields_present") and drained.get("active") is not None:
            fails.append(
                "lease left held after the streams: active_slots "
                f"{drained.get('active')}, queued_requests {drained.get('queued')}"
            )
        else:
            waits.append(f"lease release not shown: {NO_COUNTERS}")
    if n < 2:
        waits.append(f"concurrent streams need count 2 or more; the modes start ran at count {n}")
    else:
        concurrent = [s for s in streams if s.get("wave") == "concurrent"]
        in_flight = (
            len(concurrent) > 1
            and all("t_send" in s for s in concurrent)
            and max(s["t_send"] for s in concurrent) < min(s["t_done"] for s in concurrent)
        )
        seen = e.get("max_active")
        if not counters:
            waits.append(f"overlap of the {len(concurrent)} streams not observed: {NO_COUNTERS}")
        elif seen is None or seen < n:
            (fails if in_flight else waits).append(
                f"the server never showed {n} active slots during the concurrent streams "
                f"(max {seen})" + ("" if in_flight else ", and they did not overlap from the client side either")
            )
        cut = [s for s in streams if s.get("disconnected") and s.get("cut")]
        if not cut:
            meant = [s for s in streams if s.get("disconnected")]
            waits.append(
                "no stream was recorded as cut mid-stream by its client"
                if not meant or "cut" not in meant[0]
                else "the disconnecting client received the whole stream before it could cut it"
            )
    if fails:
        return failed("M6.streaming", "; ".join(fails + waits), **e)
    if waits:
        return pending("M6.streaming", "; ".join(waits), **e)
    return passed(
        "M6.streaming",
        f"{len(kept)} streams exact vs offline audio; {n} streams "
        f"overlapped (server showed {e.get('max_active')} active); a client cut its "
        "stream while the others stayed exact; lease released",
        **e,
    )


def m6_streaming(ctx: Context) -> Result:
    """M6.streaming, on the last streaming probe (see `_streaming`)."""
    if "streaming" not in _admits(ctx):
        return not_applicable("M6.streaming", "the plan does not admit streaming (model.admit_modes)")
    evs = ctx.rec.kind("m6_streaming")
    return _streaming(evs[-1]) if evs else pending("M6.streaming", "no streaming evidence recorded")


def m6_batch(ctx: Context) -> Result:
    """M6.batch: concurrent native batches give every independent result, each exact, and
    the leases drain."""
    if "batch" not in _admits(ctx):
        return not_applicable("M6.batch", "the plan does not admit native batching (model.admit_modes)")
    evs = ctx.rec.kind("m6_batch")
    if not evs:
        return pending("M6.batch", "no batch evidence recorded")
    e = evs[-1]
    results = [r for r in e["results"] if "index" in r]
    errors = [r for r in e["results"] if r.get("status") and r["status"] >= 400]
    inexact = [r for r in results if not r["exact"]]
    expected = e["batches"] * e["expected_results"]
    if errors or inexact or len(results) != expected or not e["drained"]["ok"]:
        return failed(
            "M6.batch",
            f"{len(inexact)} inexact result(s), {len(errors)} error(s), {len(results)}/{expected} results",
            **e,
        )
    return passed("M6.batch", f"{e['batches']} concurrent batches, {len(results)} independent results exact", **e)


JUDGES: dict[str, Callable[[Context], Result]] = {
    "M6.offline": m6_offline,
    "M6.streaming": m6_streaming,
    "M6.batch": m6_batch,
}


def judge_m6(ctx: Context) -> list[Result]:
    """Every M6 assertion, each reproducible from the modes start."""
    return run_judges(ctx, JUDGES, "modes")
