"""M6, judged once on the modes start: each mode the plan admits (offline, streaming,
native batching) is shown exact under concurrency; a mode it does not admit is N/A.

Stream and batch outputs are compared with the upstream reference of the same request and
history (cold with cold, warm with warm: the modes start warms every slot first), never
with an output of the candidate itself. A batch result is paired with the request it
answers by its index: every request of a batch needs exactly one result.

A modes start whose server crashed fails the first mode whose evidence it had not yet
recorded (it was collecting that one: warm-up included) and blocks the modes after it,
naming the crash; one parval stopped blocks every mode it did not record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from parval.gates.judge_context import JudgeContext, run_judges
from parval.gates.m2_concurrency import NO_COUNTERS
from parval.outputs.compare import BATCH_EXCLUDED, canonicalize
from parval.procedure import judge_shape as shape
from parval.procedure.entry import COUNT_REQUESTS, MASKED, NEGATIVE, PLAN, REFS, Declaration, Entry, Gate
from parval.rundir.event_index import COUNT_PHASES
from parval.rundir.event_types import BatchRecord, M6BatchEvent, M6StreamingEvent
from parval.status import Result, Status


# Each judge below declares its registry entry, judged once per model, NOT_APPLICABLE for a
# mode the plan leaves out (`_m6_compared`: an output comparison that names the negative control).
def _m6(evidence: tuple[str, ...], *notes: str) -> Declaration:
    return Gate("model").noted(
        evidence,
        *notes,
        "NOT_APPLICABLE when the plan's model.admit_modes leaves the mode out; PENDING when that mode is model.mode "
        "(a plan choice never excuses the mode under test)",
    )


def _m6_compared(evidence: tuple[str, ...], *notes: str) -> Declaration:
    return _m6((*evidence, NEGATIVE), *notes, MASKED)


RUN = "modes"
# The modes the modes start collects, in its order, each with the event that records it.
PROBES: tuple[tuple[str, str, Literal["m6_streaming", "m6_batch"]], ...] = (
    ("M6.streaming", "streaming", "m6_streaming"),
    ("M6.batch", "batch", "m6_batch"),
)


def not_recorded(ctx: JudgeContext, id_: str) -> Result:
    """The verdict of an admitted mode whose probe event the modes start did not record:
    FAIL when the server crashed while collecting it, BLOCKED naming the crash (a mode after
    the one it was collecting) or parval's stop, PENDING otherwise."""
    rec = ctx.rec
    crash = rec.crash_of(RUN)
    stop = rec.stop_of(RUN)
    start = rec.runs.get(RUN)
    n = start["count"] if start else None
    if crash is not None:
        text = f"modes start (count {n}): server crashed during {crash['where']} (exit status {crash['exit_code']})"
        admitted = _admits(ctx)
        collecting = next((pid for pid, mode, kind in PROBES if mode in admitted and not rec.kind(kind)), None)
        if collecting == id_:
            return shape.failed(
                id_,
                f"{text} while collecting this mode's evidence",
                violation={k: crash.get(k) for k in ("run", "attempt", "where", "exit_code", "signal")},
                log_tail=crash.get("log_tail", ""),
            )
        return shape.blocked(id_, f"not collected: {text} before this mode's probe", crash=crash)
    if stop is not None:
        return shape.blocked(id_, f"not collected: the modes start (count {n}) stopped: {stop['reason']}", stop=stop)
    what = "streaming" if id_ == "M6.streaming" else "batch"
    return shape.pending(id_, f"no {what} evidence recorded")


def _admits(ctx: JudgeContext) -> set[str]:
    return set(ctx.plan.model.admit_modes)


def not_admitted(ctx: JudgeContext, id_: str, mode: str, what: str) -> Result:
    """M6.<mode> when the plan's model.admit_modes leaves `mode` out. A plan choice is no
    implementation or platform reason: it makes another mode NOT_APPLICABLE, never the mode
    the model runs in (model.mode), whose evidence is the evidence being admitted: that one
    is PENDING, and nothing is admitted (`parval validate` and `parval run` refuse such a
    plan; a run recorded before that rule is held to it when judged)."""
    admits = sorted(_admits(ctx))
    if mode == ctx.plan.model.mode:
        return shape.pending(
            id_,
            f"model.admit_modes {admits} leaves out {mode}, the mode the model runs in (model.mode): the plan "
            f"excuses no mode under test, so nothing is admitted (add {mode} to model.admit_modes and run again)",
            admit_modes=admits,
            mode=mode,
        )
    return shape.not_applicable(id_, f"the plan does not admit {what}")


@shape.judge(
    "M6.offline",
    _m6(
        (PLAN + ": model.admit_modes, model.mode", COUNT_REQUESTS),
        "exactness itself is M2.exact's; PENDING when no count-wave output was compared",
    ),
)
def m6_offline(ctx: JudgeContext) -> Result:
    """M6.offline: offline outputs of the count waves, shown exact at the lowest count.

    Offline evidence admits offline mode; whether a count is admitted is its own M2.exact
    (and admission stops at the first count not validated), so a violation at a higher count
    fails that count, not offline mode at the counts below it."""
    if "offline" not in _admits(ctx):
        return not_admitted(ctx, "M6.offline", "offline", "offline mode")
    from parval.gates.m2_concurrency import m2_exact

    rec = ctx.rec
    mode = ctx.plan.model.mode
    lowest = min(ctx.counts)
    offline = ctx.judge([e for r in rec.count_runs(lowest) for e in rec.requests(r, COUNT_PHASES)])
    if not offline.compared:
        return shape.pending(
            "M6.offline", f"no offline output of a count-{lowest} wave was compared with a reference in this run"
        )
    exact = m2_exact(ctx, lowest)
    if exact.status is not Status.PASS:
        return shape.pending(
            "M6.offline",
            f"the count-{lowest} waves' offline outputs are not shown exact (M2.exact at count {lowest}: "
            f"{exact.status})",
        )
    return shape.passed(
        "M6.offline",
        f"offline evidence: {offline.compared} /v1/tasks/run outputs of the count-{lowest} waves compared "
        f"and exact (model mode {mode}; each count's outputs are judged by its M2.exact) admits offline mode only",
        {"compared offline outputs": offline.compared},
        compared=offline.compared,
        shown_at_count=lowest,
    )


def warmup_problem(ctx: JudgeContext) -> tuple[str | None, str | None]:
    """(violation, missing) of the modes start's warm-up wave: every slot served the base
    request once before the mode outputs (so they are warm), each output equal to its cold
    reference."""
    reqs = ctx.rec.requests("modes", ("modes_warmup",))
    t = ctx.judge(reqs)
    if t.errors or t.malformed or t.mismatches:
        return f"the warm-up wave before the mode outputs: {t.problem()}", None
    start = ctx.rec.runs.get("modes")
    slots = int((start["count"] if start else None) or 0)
    if slots < 1:
        return None, "the modes start's slot count was not recorded (its run_start has no count)"
    if not t.clean or len(reqs) < slots:
        return None, f"no whole warm-up wave recorded before the mode outputs ({len(reqs)} of {slots}; {t.problem()})"
    return None, None


def _ref_pcm(ctx: JudgeContext, key: object) -> str | None:
    """The PCM sha256 of the upstream reference `key` (its first audio output)."""
    ref = ctx.rec.refs.get(key) if isinstance(key, str) else None
    audio = ((ref["output"] if ref else None) or {}).get("audio") or {}
    if not isinstance(audio, dict):  # as audio.get would
        raise AttributeError(f"'{type(audio).__name__}' object has no attribute 'get'")
    first = audio.get("audio") or next(iter(audio.values()), None)
    return str(first["sha256"]) if isinstance(first, dict) and first.get("sha256") else None


def _drain_problem(drained: Mapping[str, object]) -> tuple[str | None, str | None]:
    """(violation, missing) of a drain check after the mode's work."""
    if drained.get("ok"):
        return None, None
    if drained.get("fields_present") and drained.get("active") is not None:
        return (f"lease left held: active_slots {drained.get('active')}, queued_requests {drained.get('queued')}", None)
    return None, f"lease release not shown: {NO_COUNTERS}"


def _streaming(ctx: JudgeContext, e: M6StreamingEvent) -> Result:
    """Concurrent streams exact vs the upstream reference of their history, overlap shown
    by the server, one stream cut by its client while the others stay exact, lease
    released."""
    n = int(e["count"])
    streams = e.get("streams") or []
    drained = e.get("drained") or {}
    counters = bool(e.get("counters_present", drained.get("fields_present", False)))
    kept = [s for s in streams if not s.get("disconnected")]
    unrefd = [s for s in kept if _ref_pcm(ctx, s.get("ref")) is None]
    if unrefd or not kept:
        return shape.pending(
            "M6.streaming",
            f"{len(unrefd)} stream(s) without an upstream reference of the same request and history "
            f"({sorted({str(s.get('ref')) for s in unrefd})[:4]})"
            if kept
            else "no stream recorded",
            **e,
        )
    errs = [s for s in kept if s.get("outcome") != "ok"]
    wrong = [s for s in kept if s not in errs and (s.get("pcm_sha256") != _ref_pcm(ctx, s["ref"]) or not s.get("done"))]
    fails, waits = [], []
    if errs:
        got = sorted({str(s.get("status") or s.get("outcome")) for s in errs})
        fails.append(f"{len(errs)} of {len(kept)} stream(s) got no complete stream (answered {', '.join(got)})")
    if wrong:
        fails.append(f"{len(wrong)} of {len(kept)} stream(s) differ from their reference or did not finish")
    violation, missing = _drain_problem(drained)
    if violation:
        fails.append(f"{violation} after the streams")
    if missing:
        waits.append(missing)
    warm_bad, warm_missing = warmup_problem(ctx)
    if warm_bad:
        fails.append(warm_bad)
    if warm_missing:
        waits.append(warm_missing)
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
            (fails if in_flight and int(e.get("polls") or 0) >= 5 else waits).append(
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
        return shape.failed("M6.streaming", "; ".join(fails + waits), violation=fails, **e)
    if waits:
        return shape.pending("M6.streaming", "; ".join(waits), **e)
    return shape.passed(
        "M6.streaming",
        f"{len(kept)} streams exact vs the upstream reference of their history; {n} streams "
        f"overlapped (server showed {e.get('max_active')} active); a client cut its "
        "stream while the others stayed exact; lease released",
        {"exact streams": kept, "cut streams": [s for s in streams if s.get("cut")]},
        **e,
    )


@shape.judge(
    "M6.streaming",
    _m6_compared(
        (
            "`m6_streaming` event on the modes start (streams: ref, pcm_sha256, done, disconnected, "
            "cut, t_send / t_done; max_active, counters_present, drained)",
            REFS + ": the reference each stream names (warm: the modes start warms every slot first)",
        ),
        "PENDING at count 1, without slot counters, or when no stream was cut mid-stream",
        "each stream is compared with the upstream reference of its request and history, never with an "
        "output of the candidate",
    ),
)
def m6_streaming(ctx: JudgeContext) -> Result:
    """M6.streaming, on the last streaming probe (see `_streaming`)."""
    if "streaming" not in _admits(ctx):
        return not_admitted(ctx, "M6.streaming", "streaming", "streaming (model.admit_modes)")
    evs = ctx.rec.kind("m6_streaming")
    return _streaming(ctx, evs[-1]) if evs else not_recorded(ctx, "M6.streaming")


def _batch_ref_canon(ctx: JudgeContext, key: object, cache: dict[str, str | None]) -> str | None:
    """The upstream reference of `key`, canonicalised as a batch result is (no timing)."""
    if not isinstance(key, str):
        return None
    if key not in cache:
        ref = ctx.rec.refs.get(key)
        canon = None
        if ref and ref.get("artifact") and ctx.run_dir is not None:
            try:
                body = (ctx.run_dir / "artifacts" / f"{ref['artifact']}.json").read_bytes()
            except OSError:
                body = b""
            out = canonicalize(body, [*ctx.volatile, *BATCH_EXCLUDED]) if body else None
            canon = out.canon if out is not None and out.valid else None
        cache[key] = canon
    return cache[key]


def batch_pairing(e: M6BatchEvent) -> tuple[list[str], list[BatchRecord]]:
    """(pairing problems, result rows): every request of each batch answered once, by the
    result whose index names it."""
    rows = [r for r in e["results"] if "index" in r]
    problems = []
    want = int(e["expected_results"])
    for b in range(int(e["batches"])):
        got = [int(r["index"]) for r in rows if r.get("batch") == b]
        twice = sorted({i for i in got if got.count(i) > 1})
        missing = [i for i in range(want) if i not in got]
        stray = sorted({i for i in got if not 0 <= i < want})
        if twice or missing or stray:
            parts = []
            if twice:
                parts.append(f"request(s) {twice} answered more than once")
            if missing:
                parts.append(f"request(s) {missing} never answered")
            if stray:
                parts.append(f"result index(es) {stray} name no request")
            problems.append(f"batch {b}: " + ", ".join(parts))
    return problems, rows


def _in_order(batches: set[int | None]) -> list[int | None]:
    """The batch numbers in order, then None where a result names no batch (a record that
    is only inconsistent, never a reason for the judge to stop)."""
    numbers: list[int | None] = [*sorted(b for b in batches if b is not None)]
    return numbers + [None] if None in batches else numbers


@shape.judge(
    "M6.batch",
    _m6_compared(
        (
            "`m6_batch` event on the modes start (batches, expected_results, results: batch, index, ref, canon, "
            "artifact, status; drained)",
            REFS + ": the reference each result names, compared without `timing` (null in batch results)",
        ),
        "every request of a batch needs exactly one result, paired by index (batch_repeats_first fails it); "
        "PENDING when the drain cannot be shown (no counters), FAIL when a lease is left held",
    ),
)
def m6_batch(ctx: JudgeContext) -> Result:
    """M6.batch: concurrent native batches give one independent result for each request
    (paired by index), each equal to the upstream reference of that request, and the
    leases drain."""
    id_ = "M6.batch"
    if "batch" not in _admits(ctx):
        return not_admitted(ctx, id_, "batch", "native batching (model.admit_modes)")
    evs = ctx.rec.kind("m6_batch")
    if not evs:
        return not_recorded(ctx, id_)
    e = evs[-1]
    pairing, results = batch_pairing(e)
    recorded = {r.get("batch") for r in e["results"]}
    if e["batches"] < 2 or recorded != set(range(e["batches"])):
        return shape.pending(
            id_,
            f"the batch probe's record is inconsistent ({e['batches']} batches, results of {_in_order(recorded)})",
            **e,
        )
    errors = [r for r in e["results"] if (status := r.get("status")) and status >= 400]
    cache: dict[str, str | None] = {}
    unrefd = [r for r in results if _batch_ref_canon(ctx, r.get("ref"), cache) is None]
    inexact = [r for r in results if r not in unrefd and r.get("canon") != _batch_ref_canon(ctx, r["ref"], cache)]
    violation, missing = _drain_problem(e["drained"])
    warm_bad, warm_missing = warmup_problem(ctx)
    missing = missing or warm_missing
    fails = [warm_bad] if warm_bad else []
    if pairing:
        fails.append("; ".join(pairing))
    if errors:
        fails.append(f"{len(errors)} batch(es) answered an error ({', '.join(str(r['status']) for r in errors)})")
    if inexact:
        fails.append(f"{len(inexact)} result(s) differ from the upstream reference of their request")
    if violation:
        fails.append(f"{violation} after the batches")
    if fails:
        return shape.failed(
            id_, "; ".join(fails), violation=[*pairing, *inexact, *errors, *([violation] if violation else [])], **e
        )
    if unrefd:
        return shape.pending(
            id_,
            f"{len(unrefd)} result(s) without an upstream reference of the same request and history "
            f"({sorted({str(r.get('ref')) for r in unrefd})[:4]})",
            **e,
        )
    if missing:
        return shape.pending(id_, f"{missing} after the batches", **e)
    return shape.passed(
        id_,
        f"{e['batches']} concurrent batches, {len(results)} independent results, each paired with its request "
        "and equal to that request's upstream reference",
        {"paired results": results},
        **e,
    )


JUDGES: dict[str, Callable[[JudgeContext], Result]] = {
    "M6.offline": m6_offline,
    "M6.streaming": m6_streaming,
    "M6.batch": m6_batch,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_m6(ctx: JudgeContext) -> list[Result]:
    """Every M6 assertion, each reproducible from the modes start."""
    return run_judges(ctx, JUDGES, "modes")
