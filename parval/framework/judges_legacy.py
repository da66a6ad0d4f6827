"""Judges of the legacy observations (parval.framework.probes_legacy): one session from
concurrent first requests, the unpublished-load skip of legacy bulk unload, the original
guard's serialization and wedged fail-fast, no slot fields, every explicit slots form
rejected. Pure functions of the recorded facts."""

from __future__ import annotations

import math

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, flight, timing_of
from parval.framework.facts import flights as all_flights
from parval.framework.observed import all_ok, outputs_match, unloaded_ids
from parval.framework.observed import judge as register

LEGACY_SLOTS_TEXT = "slots requires --parallel-jobs at server startup"
SLOT_FIELDS = ("slots", "active_slots", "queued_requests", "max_parallel_slots")


@register("legacy.first_session")
def first_session(f: Facts) -> Verdict:
    """F2.first_publish on the legacy path: concurrent first requests all complete with the
    reference output and the model ends loaded (when `loaded` is published at all)."""
    v = Verdict()
    items = all_flights(f)
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, items, "concurrent first requests")
    outputs_match(v, f, "base", items, "legacy first-request")
    if f.get("loaded_published"):
        v.require(f.get("end_loaded") is True, "the model ended loaded")
    else:
        v.pend("the server publishes no `loaded` field, so the published session is not observable")
    return v


@register("legacy.unpublished_skip")
def unpublished_skip(f: Facts) -> Verdict:
    """F2.unload_vs_load: a bulk unload sent while the first load is in progress answers at
    once without the unpublished model, and the load is still published afterwards."""
    t = timing_of(f)
    v = Verdict()
    first = flight(f, "first")
    bulk = flight(f, "bulk-unload")
    model = str(f["model"])
    v.require(bool(f["settled"]), "the first request completed")
    if f.get("during_loaded") is True:
        v.block("the load was already published when the unload was sent")
        return v
    v.require(
        bulk.status == 200 and model not in unloaded_ids(bulk),
        f"bulk unload answered at once without the unpublished model (unloaded={unloaded_ids(bulk)})",
    )
    v.require(bulk.t_done < first.t_done - t.tol_s, "it did not wait for the load in progress")
    all_ok(v, [first], "the first request")
    v.require(bool(f.get("ended_loaded")), "the model ended loaded (the skipped load was published)")
    return v


def _ms_or_none(seconds: float) -> int | None:
    return round(seconds * 1000) if math.isfinite(seconds) else None


@register("legacy.guard_serializes")
def guard_serializes(f: Facts) -> Verdict:
    """F1.legacy_admission: concurrent requests to one model complete a service apart."""
    t = timing_of(f)
    v = Verdict()
    items = all_flights(f)
    v.require(bool(f["settled"]), "every request completed")
    all_ok(v, items, "requests")
    done = sorted(x.t_done for x in items)
    gaps = [b - a for a, b in zip(done, done[1:], strict=False)]
    v.require(
        all(g >= 0.6 * t.service_s for g in gaps), f"completions a service apart ({[_ms_or_none(g) for g in gaps]} ms)"
    )
    return v


@register("legacy.wedged_text")
def wedged_text(f: Facts) -> Verdict:
    """F1.legacy_admission: a holder older than the caller's bound is treated as wedged, the
    caller rejected at once with the wedged text."""
    t = timing_of(f)
    v = Verdict()
    bound = int(f["bound_ms"])
    probe = flight(f, "probe")
    v.require(bool(f["settled"]), "the holder completed")
    msg = probe.message
    v.require(
        probe.status == 503 and "current inference has run" in msg and "likely wedged" in msg,
        f"503 'current inference has run ... likely wedged' (got {probe.status}: {msg[:120]})",
    )
    lat = (probe.elapsed_s or 0.0) * 1000
    v.require(
        lat < bound + t.tol_s * 1000,
        f"rejected in {lat:.0f} ms against its {bound} ms bound (the wedged text is only produced before waiting)",
    )
    return v


@register("legacy.status_fields")
def status_fields(f: Facts) -> Verdict:
    """F1.legacy_admission: the legacy /v1/models lists the models without slot fields."""
    v = Verdict()
    entries = f.get("entries") or []
    present = sorted({k for keys in entries if keys is not None for k in keys if k in SLOT_FIELDS})
    v.require(bool(entries) and not present, f"legacy /v1/models has no slot fields (found {present})")
    return v


@register("legacy.registration_forms")
def registration_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: every explicit slots form of a registration is rejected 400 with
    the legacy text, and nothing was registered."""
    v = Verdict()
    for r in f["results"]:
        v.require(
            r["status"] == 400 and r["message"] == LEGACY_SLOTS_TEXT,
            f"slots={r['slots']!r} rejected 400 '{LEGACY_SLOTS_TEXT}' (got {r['status']})",
        )
    before, after = f.get("models_before"), f.get("models_after")
    v.require(before == after, f"registered model count unchanged ({before} -> {after})")
    return v


@register("legacy.config_forms")
def config_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: an unflagged start with a slots field in its config exits 1
    with the rejection text."""
    v = Verdict()
    for s in f["starts"]:
        v.require(
            bool(s["exited"]) and s["exit_code"] == 1 and bool(s["message"]),
            f"config slots={s['slots']!r}: startup failed with exit 1 and the rejection text",
        )
    return v
