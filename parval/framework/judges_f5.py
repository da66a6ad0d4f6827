"""Judges of the F5 observations (parval.framework.probes_f5): two models under
max_loaded_models 1 and 2, a retiring model's residency, and bulk unloads (the ready
model first, no registry convoy, reversed/overlapping/duplicate selections). Pure
functions of the recorded facts."""

from __future__ import annotations

from dataclasses import dataclass

from parval.framework.observed import (
    STALLED,
    Facts,
    FlightFact,
    Judge,
    StatusReads,
    Verdict,
    all_ok,
    flight,
    judged,
    listed,
    margin_s,
    ms,
    named,
    outputs_match,
    samples,
    stalled,
    timing_of,
    unloaded_ids,
    waits,
)
from parval.framework.preconditions import route_absent
from parval.procedure.entry import CTEST_PART, Entry, framework_entry
from parval.status import Status

BUSY_LIMIT_TEXT = "every loaded model is busy"


@dataclass(frozen=True)
class Joint:
    """One status sample of several models (probes_f5.joint_samples): [t, {model:
    [active, queued, loaded] or None}]; an absent model counts 0 active, loaded None."""

    t: float
    models: dict[str, list[int | bool | None] | None]

    def active(self, model: str) -> int:
        x = self.models.get(model)
        return int(x[0] or 0) if x else 0

    def loaded(self, model: str) -> bool | None:
        x = self.models.get(model)
        return None if not x or x[2] is None else bool(x[2])


def joint(facts: Facts, key: str = "joint") -> list[Joint]:
    return [Joint(float(t), dict(m)) for t, m in facts.get(key) or []]


def _pair(f: Facts) -> tuple[str, str]:
    a, b = f["models"][:2]
    return str(a), str(b)


def _tag(f: Facts, model: str) -> str:
    return str((f.get("tags") or {}).get(model, "base"))


def together(f: Facts) -> Verdict:
    """F5.two_models: n cold requests to each of A and B at once. Limit >= 2: all served with
    both models holding slots at once; limit 1: served or refused with the busy-limit 503,
    never two models loaded. Each model's outputs are its own."""
    v = Verdict()
    limit = int(f["limit"])
    a, b = _pair(f)
    n = int(f["count"])
    flights = named(f, *(f"{m}-{i}" for i in range(n) for m in (a, b)))
    rows = joint(f)
    if not rows:
        raise KeyError("no joint status sample of the two models was recorded")
    v.require(bool(f["settled"]), "every request completed (no deadlock)")
    if limit >= 2:
        all_ok(v, flights, "requests")
        both = [s for s in rows if s.active(a) >= 1 and s.active(b) >= 1]
        if both:
            v.require(True, "both models held slots at the same time")
        else:
            v.not_forced("no status sample showed both models holding slots at once")
    else:
        if not any(s.loaded(a) or s.loaded(b) for s in rows):
            v.not_forced("no status sample showed either model loaded, so residency was not observed")
        odd = [
            f"{x.label}={x.status}"
            for x in flights
            if x.status != 200 and not (x.status == 503 and BUSY_LIMIT_TEXT in x.message)
        ]
        v.require(
            not odd,
            "each request answered 200 or 503 'max_loaded_models ... every loaded model is busy'"
            + (f" (got {', '.join(odd)})" if odd else ""),
        )
        v.require(any(x.status == 200 for x in flights), "at least one request was served")
        loaded_both = [s for s in rows if s.loaded(a) and s.loaded(b)]
        v.require(not loaded_both, "never two models loaded under max_loaded_models=1")
    for m in (a, b):
        mine = [x for x in flights if x.model == m]
        # Under limit 1 one model may be refused every time (the busy 503 above).
        if limit >= 2 or any(x.status == 200 for x in mine):
            outputs_match(v, f, _tag(f, m), mine, m)
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


# A warm request served after waiting takes at least this share of B's quicker measured
# warm request (a margin for noise; a busy machine only makes it slower).
WARM_FLOOR = 0.75


def _answered_sooner_than_waiting(f: Facts, warm: FlightFact, durations: list[float]) -> str | None:
    """Whether B's warm request came back sooner than waiting for the rest of A's load and
    then serving could take: the load surely still ran at the last status read that showed
    A unloaded (`unpublished_until`, absent in older records), and a served request takes at
    least WARM_FLOOR of B's quicker warm request measured around the probe. The PASS text,
    or None when that does not show it."""
    unpublished = f.get("unpublished_until")
    if unpublished is None:
        return None
    left = float(unpublished) - warm.t_send
    took = warm.t_done - warm.t_send
    waited_at_least = left + WARM_FLOOR * min(durations)
    if left <= 0 or took >= waited_at_least:
        return None
    return (
        f"the warm model answered in {ms(took)} ms, sooner than waiting for the {ms(left)} ms of the load left "
        f"when it was sent and then serving (at least {ms(waited_at_least)} ms, its warm requests around the "
        f"probe taking {', '.join(str(ms(x)) for x in durations)} ms): it did not wait for the load"
    )


# The flights of one warm_during_cold attempt: (cold request, warm request, the warm
# model's requests just before and after). A record made before attempts varied their
# forcing has no `forcing` and named A and B in its labels.
LABELS = ("cold", "warm", "warm-before", "warm-after")
LABELS_AB = ("cold-a", "warm-b", "warm-b-before", "warm-b-after")


def describe_forcing(forcing: dict[str, object] | None) -> str:
    """How one attempt forced the situation, in words (the BLOCKED text names every try)."""
    if forcing is None:
        return "A cold, B's base request"
    text = f"{forcing['cold']} cold, {forcing['warm']}'s {forcing['request']} request"
    if forcing.get("evict") is not None:
        text += f", the load first evicting {forcing['evict']}"
    return text + f", status read every {forcing['status_poll_ms']} ms"


def warm_during_cold(f: Facts) -> Verdict:
    """F5.two_models: a warm request sent during another model's guarded cold load is
    answered while that load still runs. Over HTTP a warm request held up by the load cannot
    be told from one a busy machine made slow, so anything else is not forced (BLOCKED after
    the attempts), never a FAIL. The attempts are weighed together: each forced
    the situation its own way (`forcing`); a violation in any stands; a PASS is the attempt
    that forced it; BLOCKED names every try and why it was not forced. Every attempt but
    the last must be one that was not forced (else the probe would not have tried again),
    and the attempts must be numbered without a gap: an attempt's evidence taken out could
    hide a violation, so it leaves the result PENDING, never a PASS."""
    tries = [dict(a) for a in f["attempts"]] if "attempts" in f else [f]
    verdicts = [judged(_warm_attempt, a) for a in tries]
    k = len(verdicts)
    for i, v in enumerate(verdicts, 1):
        if v.status is Status.FAIL:
            return v if k == 1 else v.labelled(f"attempt {i} of {k}")
    if "attempts" not in f:  # one attempt on its own (also how the probe decides to try again)
        return verdicts[0]
    numbers = [a.get("attempt") for a in tries]
    if numbers != list(range(k)):
        v = Verdict()
        v.pend(f"the attempts recorded are numbered {numbers}, not 0 to {k - 1}: an attempt's evidence is missing")
        return v
    for i, v in enumerate(verdicts[:-1], 1):
        if not v.retry:
            out = v.labelled(f"attempt {i} of {k}")
            out.pend(f"attempt {i} of {k} does not show the situation was not forced, yet the probe tried again")
            return out
    last = verdicts[-1].labelled(f"attempt {k} of {k}")
    if not verdicts[-1].retry:
        if last.status is Status.PASS and k > 1:
            last.passed.append(
                "earlier attempt(s) not forced: "
                + "; ".join(
                    _try_text(i, a, v) for i, (a, v) in enumerate(zip(tries[:-1], verdicts[:-1], strict=True), 1)
                )
            )
        return last
    out = Verdict()
    for i, (a, v) in enumerate(zip(tries, verdicts, strict=True), 1):
        out.not_forced(f"after {k} attempt(s): {_try_text(i, a, v)}")
    return out


def _try_text(i: int, attempt: Facts, v: Verdict) -> str:
    forcing = attempt.get("forcing")
    return f"try {i} ({describe_forcing(forcing if isinstance(forcing, dict) else None)}): {'; '.join(v.blockers)}"


def _warm_attempt(f: Facts) -> Verdict:
    """One attempt: the warm request answered while the cold load still ran (before its
    publication, which came at least one of the warm model's requests, measured just before
    and after under the same load, after it was sent), or sooner than waiting for the rest
    of the load could have taken (`_answered_sooner_than_waiting`). Over HTTP a warm request
    held up by the load cannot be told from one a busy machine made slow, so anything else
    is not forced, never a FAIL."""
    v = Verdict()
    forcing = f.get("forcing")
    labels = LABELS if forcing is not None else LABELS_AB
    cold, warm = flight(f, labels[0]), flight(f, labels[1])
    refs = named(f, *labels[2:])
    if forcing is not None:
        if cold.model != forcing["cold"] or warm.model != forcing["warm"] or cold.model == warm.model:
            raise ValueError(f"the recorded forcing {forcing} does not name the models the requests went to")
        tag = str(forcing["tag"])
    else:
        tag = _tag(f, str(warm.model))
    v.require(bool(f["settled"]), "both completed")
    if not f["cold_load_seen"]:
        v.not_forced("the cold load finished before it could be observed")
        return v
    all_ok(v, [cold, warm, *refs], "requests")
    durations = [x.elapsed_s for x in refs if x.elapsed_s is not None]
    if len(durations) != len(refs):
        raise KeyError("the warm requests around the probe have no recorded duration")
    d = max(durations)
    published = f["published_at"]
    publication = cold.t_done if published is None else float(published)
    if warm.t_done <= publication and publication - warm.t_send >= d:
        v.require(True, f"the warm model answered in {ms(warm.t_done - warm.t_send)} ms during the cold load")
    elif (decided := _answered_sooner_than_waiting(f, warm, durations)) is not None:
        v.require(True, decided)
    elif publication - warm.t_send < d:
        v.not_forced(
            f"the cold load ended {ms(publication - warm.t_send)} ms after the warm request was sent, within one "
            f"warm request ({ms(d)} ms): waiting for it cannot be told from a slow request"
        )
    else:
        v.not_forced(
            f"the warm model answered {ms(warm.t_done - publication)} ms after the cold load was published: "
            "held up by the load or slowed by the machine, which HTTP cannot tell apart"
        )
    outputs_match(v, f, tag, [warm, *refs], "the warm model")
    return v


def unload_together(f: Facts) -> Verdict:
    """F5.two_models: one bulk unload of both models waits for both models' admitted work,
    lists each once and leaves both unloaded and drained."""
    v = Verdict()
    waits(v, f)
    a, b = _pair(f)
    running = listed(f, "running")
    bulk = flight(f, "unload-both")
    if v.blockers:
        return v
    v.require(bool(f["settled"]), "everything completed (no deadlock)")
    all_ok(v, [*running, bulk], "requests and the unload")
    ids = unloaded_ids(bulk)
    v.require(sorted(ids) == sorted([a, b]), f"both listed once ({ids})")
    last = max(x.t_done for x in running)
    if last < bulk.t_send + margin_s(f):  # the work ended about when the unload was sent: nothing to wait for
        v.not_forced("both models' work ended within a margin of the unload being sent, so its waiting is unseen")
        v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
        return v
    v.require(
        bulk.t_done >= last - margin_s(f),
        "the unload waited for both models' work"
        + ("" if bulk.t_done >= last - margin_s(f) else f" (answered {ms(last - bulk.t_done)} ms before it ended)"),
    )
    v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
    return v


def alternate(f: Facts) -> Verdict:
    """F5.two_models, limit 1: A, B, A in turn are all served with their own outputs, never
    two loaded at once, and the last load evicted the idle other model."""
    v = Verdict()
    a, b = _pair(f)
    seq = listed(f, "sequence")
    all_ok(v, seq, "alternating requests")
    outputs_match(v, f, _tag(f, a), [seq[0], seq[2]], a)
    outputs_match(v, f, _tag(f, b), [seq[1]], b)
    rows = joint(f)
    if not rows:
        raise KeyError("no joint status sample of the two models was recorded")
    if not any(s.loaded(a) or s.loaded(b) for s in rows):
        # Residency (and so an eviction) is read from `loaded`: none seen, nothing shown.
        v.not_forced("no status sample showed either model loaded, so residency was not observed")
        return v
    both = [s for s in rows if s.loaded(a) and s.loaded(b)]
    v.require(not both, "never two models loaded under max_loaded_models=1")
    v.require(bool(f["evicted"]), "the last load evicted the idle other model")
    return v


def retiring(f: Facts) -> Verdict:
    """F5.retiring_residency: a load sent while another model is in teardown is served with
    its own outputs, and (limit 2) the keeper stays loaded throughout."""
    v = Verdict()
    incoming = flight(f, "incoming")
    if not f["teardown_window"]:
        registry: StatusReads | None = f.get("registry")
        if isinstance(registry, dict) and stalled(registry):
            v.block(STALLED.format(what="the unload of the retiring model"))
        else:
            v.not_forced("the unload finished before another load could be sent during its teardown")
        return v
    v.require(bool(f["settled"]), "the unload completed")
    all_ok(v, [flight(f, "unload-retiring")], "the unload of the retiring model")
    v.require(
        incoming.status == 200,
        f"the incoming load was served during the teardown (got {incoming.status}: {incoming.message[:100]})",
    )
    outputs_match(v, f, str(f["incoming_tag"]), [incoming], "the incoming model")
    if f.get("keeper") is not None:
        rows = samples(f, "keeper_samples")
        if not rows:
            raise KeyError("no status sample of the keeper during the incoming load was recorded")
        lost = [s for s in rows if s.loaded is False]
        v.require(
            not lost and f.get("keeper_end_loaded") is True,
            "the keeper stayed loaded (not evicted because of the retiring model)",
        )
    return v


def ready_first(f: Facts) -> Verdict:
    """F5.bulk_ready_first: a bulk [B loading, A ready idle] frees A before B's first load
    is published (status samples of both), lists A first, and both end unloaded."""
    v = Verdict()
    a, b = _pair(f)
    cold, bulk = flight(f, "first-b"), flight(f, "unload-b-a")
    if not f["first_load_seen"]:
        v.not_forced("the first load finished before the bulk unload could be sent during it")
        return v
    # The bulk had a margin to reach the server while B was still loading: a status sample
    # that late still showing B unpublished.
    still = f.get("b_unpublished_at")
    if still is None or float(still) < bulk.t_send + timing_of(f).tol_s:
        v.not_forced("B's load was not seen still in progress a margin after the bulk unload was sent")
        return v
    reads: StatusReads = f.get("registry") or {}
    if reads.get("still_waiting") and stalled(reads):
        v.block(STALLED.format(what="the bulk unload"))
    v.require(bool(f["settled"]), "everything completed (no deadlock)")
    all_ok(v, [cold, bulk], "the first request and the bulk unload")
    outputs_match(v, f, _tag(f, b), [cold], b, phase="cold")
    if not v.blockers:  # samples read through a stalled registry do not show the order
        _freed_first(v, f, a, b, bulk.t_send + timing_of(f).tol_s)
    ids = unloaded_ids(bulk)
    v.require(ids == [a, b], f"reply lists the ready model first ({ids})")
    v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
    return v


def _freed_first(v: Verdict, f: Facts, a: str, b: str, arrived: float) -> None:
    """From status samples of both models once the bulk had reached the server: a sample
    showing A freed while B is still unpublished is the order; one showing B published
    while A is still loaded is the violation; samples that only ever show both changed at
    once cannot tell the order (the poll came too late)."""
    rows = [s for s in joint(f) if s.t >= arrived]
    if not rows:
        raise KeyError("no joint status sample of both models after the bulk unload was sent")
    if any(s.loaded(a) is True and s.loaded(b) is True for s in rows):
        v.require(False, "the ready idle model was freed before the first load finished (B was published first)")
    elif any(s.loaded(a) is False and s.loaded(b) is not True for s in rows):
        v.require(True, "the ready idle model was freed before the first load finished")
    else:
        v.not_forced("no status sample fell between A's release and B's publication, so their order is unseen")


def _lead(x: FlightFact, bulk: FlightFact) -> str:
    if x.raw.get("t_done") is None or bulk.raw.get("t_done") is None:
        return "no reply"
    return f"{(bulk.t_done - x.t_done) * 1000:.0f} ms before it"


def no_convoy(f: Facts) -> Verdict:
    """F5.no_convoy: while A's bulk unload waits for A's work, GET /v1/models, GET /health and
    a warm request to B answer before the unload does."""
    v = Verdict()
    waits(v, f)
    _, b = _pair(f)
    bulk = flight(f, "unload-a")
    if not f["bulk_waiting"]:
        v.not_forced("A's work finished before the unrelated reads could be sent during the unload")
    if v.blockers:
        return v
    v.require(bool(f["settled"]), "everything completed")
    warm = flight(f, "warm-b")
    all_ok(v, listed(f, "busy"), "A's work")
    m = margin_s(f)
    for x, what in (
        (flight(f, "status"), "GET /v1/models"),
        (flight(f, "health"), "GET /health"),
        (warm, "the warm request to B"),
    ):
        # A model request may simply run longer than the unload's wait: its own run begun
        # while the unload waited shows it was not held behind it.
        start = x.latest_run_start if x is warm else None
        if x.status != 200:
            v.require(False, f"{what} answered 200 (got {x.status}: {x.message[:120]})")
        elif x.t_done < bulk.t_done:
            v.require(True, f"{what} answered before A's unload finished ({_lead(x, bulk)})")
        elif start is not None and start < bulk.t_done - m:
            v.require(True, f"{what} began running while A's unload waited (ran {ms(x.t_done - start)} ms)")
        elif x is warm and start is None and bulk.t_done - x.t_send >= m:
            v.not_forced(
                f"{what} answered after A's unload and reports no server-side time: held up or only slower is unseen"
            )
        elif bulk.t_done - x.t_send >= m:
            v.require(False, f"{what}, sent while A's unload waited, was answered only after it finished")
        else:
            v.not_forced(f"A's unload finished within a margin of {what} being sent: its order is not shown")
    outputs_match(v, f, _tag(f, b), [warm], "the warm model")
    return v


def selections(f: Facts) -> Verdict:
    """F5.bulk_selections: reversed, overlapping and duplicate selections (and unload-all)
    at once with work running all finish, list each model once, report the unknown id in
    not_found, leave both unloaded, and both models serve their own outputs afterwards."""
    v = Verdict()
    waits(v, f)
    a, b = _pair(f)
    running, bulks, after = listed(f, "running"), listed(f, "bulks"), listed(f, "after")
    if not bulks:
        raise KeyError("no bulk selection was recorded")
    if v.blockers:
        return v
    if max(x.t_done for x in running) <= min(x.t_send for x in bulks):
        v.not_forced("the work finished before the selections were sent, so they met idle models")
        return v
    v.require(bool(f["settled"]), "every selection finished within bound (no deadlock)")
    absent = [x for x in bulks if x.label == "unload-all" and route_absent(x.status)]
    if absent:
        v.require(True, f"POST /v1/tasks/unload_all_models is absent (HTTP {absent[0].status}): judged without it")
        bulks = [x for x in bulks if x not in absent]
    all_ok(v, [*running, *bulks], "requests and bulk unloads")
    for x in bulks:
        ids = unloaded_ids(x)
        v.require(sorted(ids) == sorted([a, b]), f"{x.label} listed each model once ({ids})")
    dup = flight(f, "bulk-dup").json()
    v.require(isinstance(dup, dict) and dup.get("not_found") == [f["unknown"]], "the unknown id is in not_found")
    v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
    all_ok(v, after, "requests after the selections")
    outputs_match(v, f, _tag(f, a), [after[0]], a)
    outputs_match(v, f, _tag(f, b), [after[1]], b)
    return v


JUDGES: dict[str, Judge] = {
    "f5.together": together,
    "f5.warm_during_cold": warm_during_cold,
    "f5.unload_together": unload_together,
    "f5.alternate": alternate,
    "f5.retiring": retiring,
    "f5.ready_first": ready_first,
    "f5.no_convoy": no_convoy,
    "f5.selections": selections,
}

# The registry entries of the F5 assertions, each combined from the sub-checks of the judges it names.
ENTRIES: tuple[Entry, ...] = (
    framework_entry("F5.two_models", "f5.together", "f5.unload_together", "f5.alternate", "f5.warm_during_cold"),
    framework_entry("F5.bulk_ready_first", "f5.ready_first", faults=("bulk_waits_unpublished",)),
    framework_entry("F5.retiring_residency", "f5.retiring", CTEST_PART, faults=("retiring_resident",)),
    framework_entry("F5.no_convoy", "f5.no_convoy", CTEST_PART, faults=("registry_convoy",)),
    framework_entry("F5.bulk_selections", "f5.selections"),
)
