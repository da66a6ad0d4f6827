"""Judges of the F5 observations (parval.framework.probes_f5): two models under
max_loaded_models 1 and 2, a retiring model's residency, and bulk unloads (the ready
model first, no registry convoy, reversed/overlapping/duplicate selections). Pure
functions of the recorded facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, flight, named, samples, stalled, timing_of
from parval.framework.facts import flights as all_flights
from parval.framework.observed import STALLED, all_ok, outputs_match, unloaded_ids, waits
from parval.framework.observed import judge as register

BUSY_LIMIT_TEXT = "every loaded model is busy"


@dataclass(frozen=True)
class Joint:
    """One status sample of several models (probes_f5.joint_samples): [t, {model:
    [active, queued, loaded] or None}]; an absent model counts 0 active, loaded None."""

    t: float
    models: dict[str, Any]

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


@register("f5.together")
def together(f: Facts) -> Verdict:
    """F5.two_models: n cold requests to each of A and B at once. Limit >= 2: all served with
    both models holding slots at once; limit 1: served or refused with the busy-limit 503,
    never two models loaded. Each model's outputs are its own."""
    v = Verdict()
    limit = int(f["limit"])
    a, b = _pair(f)
    flights = all_flights(f)
    rows = joint(f)
    v.require(bool(f["settled"]), "every request completed (no deadlock)")
    if limit >= 2:
        all_ok(v, flights, "requests")
        both = [s for s in rows if s.active(a) >= 1 and s.active(b) >= 1]
        v.require(bool(both), "both models held slots at the same time")
    else:
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


@register("f5.warm_during_cold")
def warm_during_cold(f: Facts) -> Verdict:
    """F5.two_models: a warm request to B during A's cold load answers within a service
    (plus half a load) and before the cold request."""
    t = timing_of(f)
    v = Verdict()
    cold, warm = flight(f, "cold-a"), flight(f, "warm-b")
    v.require(bool(f["settled"]), "both completed")
    if not f["cold_load_seen"]:
        v.pend("the cold load finished before it could be observed")
    all_ok(v, [cold, warm], "requests")
    lat = warm.elapsed_s if warm.elapsed_s is not None else float("inf")
    v.require(
        lat < t.service_s + t.load_s / 2 and warm.t_done < cold.t_done,
        f"the warm model answered in {lat * 1000:.0f} ms without waiting for the cold load",
    )
    outputs_match(v, f, _tag(f, str(warm.model)), [warm], "the warm model")
    return v


@register("f5.unload_together")
def unload_together(f: Facts) -> Verdict:
    """F5.two_models: one bulk unload of both models waits for both models' admitted work,
    lists each once and leaves both unloaded and drained."""
    t = timing_of(f)
    v = Verdict()
    waits(v, f)
    a, b = _pair(f)
    running = named(f, *f["running"])
    bulk = flight(f, "unload-both")
    v.require(bool(f["settled"]), "everything completed (no deadlock)")
    all_ok(v, [*running, bulk], "requests and the unload")
    ids = unloaded_ids(bulk)
    v.require(sorted(ids) == sorted([a, b]), f"both listed once ({ids})")
    v.require(bulk.t_done >= max(x.t_done for x in running) - t.tol_s, "the unload waited for both models' work")
    v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
    return v


@register("f5.alternate")
def alternate(f: Facts) -> Verdict:
    """F5.two_models, limit 1: A, B, A in turn are all served with their own outputs, never
    two loaded at once, and the last load evicted the idle other model."""
    v = Verdict()
    a, b = _pair(f)
    seq = named(f, *f["sequence"])
    all_ok(v, seq, "alternating requests")
    outputs_match(v, f, _tag(f, a), [seq[0], seq[2]], a)
    outputs_match(v, f, _tag(f, b), [seq[1]], b)
    both = [s for s in joint(f) if s.loaded(a) and s.loaded(b)]
    v.require(not both, "never two models loaded under max_loaded_models=1")
    v.require(bool(f["evicted"]), "the last load evicted the idle other model")
    return v


@register("f5.retiring")
def retiring(f: Facts) -> Verdict:
    """F5.retiring_residency: a load sent while another model is in teardown is served with
    its own outputs, and (limit 2) the keeper stays loaded throughout."""
    v = Verdict()
    incoming = flight(f, "incoming")
    if not f["teardown_window"]:
        v.pend("the unload finished before another load could be sent during its teardown")
    v.require(bool(f["settled"]), "the unload completed")
    v.require(
        incoming.status == 200,
        f"the incoming load was served during the teardown (got {incoming.status}: {incoming.message[:100]})",
    )
    outputs_match(v, f, str(f["incoming_tag"]), [incoming], "the incoming model")
    if f.get("keeper") is not None:
        lost = [s for s in samples(f, "keeper_samples") if s.loaded is False]
        v.require(
            not lost and f.get("keeper_end_loaded") is True,
            "the keeper stayed loaded (not evicted because of the retiring model)",
        )
    return v


@register("f5.ready_first")
def ready_first(f: Facts) -> Verdict:
    """F5.bulk_ready_first: a bulk [B loading, A ready idle] frees A before B's first load
    finishes (and before B is published), lists A first, and both end unloaded."""
    v = Verdict()
    a, b = _pair(f)
    cold, bulk = flight(f, "first-b"), flight(f, "unload-b-a")
    if not f["first_load_seen"]:
        v.pend("the first load finished before the bulk unload could be sent during it")
    registry = f.get("registry") or {}
    if registry.get("still_waiting") and stalled(registry):
        v.block(STALLED.format(what="the bulk unload"))
    v.require(bool(f["settled"]), "everything completed (no deadlock)")
    all_ok(v, [cold, bulk], "the first request and the bulk unload")
    outputs_match(v, f, _tag(f, b), [cold], b, phase="cold")
    freed, published = f.get("freed_at"), f.get("published_at")
    freed_first = (
        freed is not None and float(freed) < cold.t_done and (published is None or float(freed) < float(published))
    )
    v.require(bool(v.blockers) or freed_first, "the ready idle model was freed before the first load finished")
    ids = unloaded_ids(bulk)
    v.require(ids == [a, b], f"reply lists the ready model first ({ids})")
    v.require(bool(f["ended_unloaded"]), "both ended unloaded with drained counters")
    return v


def _lead(x: FlightFact, bulk: FlightFact) -> str:
    if x.raw.get("t_done") is None or bulk.raw.get("t_done") is None:
        return "no reply"
    return f"{(bulk.t_done - x.t_done) * 1000:.0f} ms before it"


@register("f5.no_convoy")
def no_convoy(f: Facts) -> Verdict:
    """F5.no_convoy: while A's bulk unload waits for A's work, GET /v1/models, GET /health and
    a warm request to B answer before the unload does."""
    v = Verdict()
    waits(v, f)
    _, b = _pair(f)
    bulk = flight(f, "unload-a")
    if not f["bulk_waiting"]:
        v.pend("A's work finished before the unrelated reads could be sent during the unload")
    v.require(bool(f["settled"]), "everything completed")
    warm = flight(f, "warm-b")
    for x, what in (
        (flight(f, "status"), "GET /v1/models"),
        (flight(f, "health"), "GET /health"),
        (warm, "the warm request to B"),
    ):
        v.require(
            x.status == 200 and x.t_done < bulk.t_done, f"{what} answered before A's unload finished ({_lead(x, bulk)})"
        )
    outputs_match(v, f, _tag(f, b), [warm], "the warm model")
    return v


@register("f5.selections")
def selections(f: Facts) -> Verdict:
    """F5.bulk_selections: reversed, overlapping and duplicate selections (and unload-all)
    at once with work running all finish, list each model once, report the unknown id in
    not_found, leave both unloaded, and both models serve their own outputs afterwards."""
    t = timing_of(f)
    v = Verdict()
    a, b = _pair(f)
    running, bulks, after = named(f, *f["running"]), named(f, *f["bulks"]), named(f, *f["after"])
    v.require(bool(f["settled"]), f"every selection finished within {t.slack_s:.1f} s (no deadlock)")
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
