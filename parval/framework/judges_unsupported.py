"""Judges of the F1.unsupported observations (parval.framework.probes_unsupported): a
count above the capacity is refused naming it and holds nothing; an unsupported execution
mode is refused without holding a lease (or the server has no route for it: UNSUPPORTED).
Pure functions of the recorded facts."""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, flight, listed, samples
from parval.framework.observed import all_ok, outputs_match
from parval.framework.observed import judge as register
from parval.framework.preconditions import route_absent


def count_over_capacity(f: Facts) -> Verdict:
    """Every request to a registration with slots = capacity + 1 gets an error naming the
    capacity; no lease stays held; the entry stays registered, unloaded, without a
    published capacity."""
    v = Verdict()
    cap = int(f["capacity"])
    for r in listed(f, "requests"):
        v.require(
            r.status is not None and r.status >= 400 and f"capacity={cap}" in r.message,
            f"{r.label}: an error naming capacity={cap} (got {r.status}: {r.message[:120]})",
        )
    v.require(bool(f["drained"]), "no lease stays held")
    end = samples({"samples": [f["end"]]}) if f.get("end") else []
    v.require(
        bool(end) and end[0].loaded is False and end[0].capacity is None and end[0].slots == cap + 1,
        f"the entry stays registered with slots={cap + 1}, unloaded, no capacity published",
    )
    return v


register("unsupported.count_over_capacity", count_over_capacity)


def unsupported_mode(f: Facts) -> Verdict:
    """The other execution mode on this model's route is refused with an error, the refusal
    releases its lease and a request afterwards is served with the reference output. A
    server without that route at all does not support the mode: UNSUPPORTED."""
    v = Verdict()
    route = str(f["route"])
    refused = flight(f, "unsupported-mode")
    if route_absent(refused.status):
        v.unsupported(
            f"the server has no {route} route (HTTP {refused.status}), so the mode refusal cannot be exercised"
        )
        return v
    v.require(
        refused.status is not None and 400 <= refused.status < 600,
        f"{route} on a {f['mode']} model is refused with an error (got {refused.status})",
    )
    v.require(bool(f["drained"]), "the refusal released its lease")
    after = flight(f, "after-refusal")
    all_ok(v, [after], "a request after the refusal")
    outputs_match(v, f, "base", [after], "after the refusal")
    return v


register("unsupported.unsupported_mode", unsupported_mode)
