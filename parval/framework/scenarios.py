"""Building blocks the probes share: occupying slots, queueing behind them, staggering
managers, reading observer traces and judging completion order.

Orders are forced, not assumed: work is only sent after the server reports what came
before it (active or queued). Managers are invisible in `/v1/models`, so the one thing a
probe cannot observe is a manager's enqueue; it is staggered by a gap derived from the
measured request time and checked to still be pending afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from parval.framework.checks import Verdict
from parval.framework.rig import Flight, Rig, Snapshot
from parval.framework.settings import Timing
from parval.runners.trace import read_trace


def timing(rig: Rig) -> Timing:
    assert rig.ctx.timing is not None, "calibration runs first"
    return rig.ctx.timing


def active_loaded(model: str, k: int) -> Callable[[Snapshot], bool]:
    return lambda s: s.active(model) >= k and bool(s.loaded(model))


def queued_at_least(model: str, k: int) -> Callable[[Snapshot], bool]:
    return lambda s: s.queued(model) >= k


async def occupy(rig: Rig, model: str, n: int, v: Verdict, *, label: str = "occupant",
                 stagger_s: float | None = None, loaded: bool = True) -> list[Flight]:
    """n requests holding n slots (observed). With `stagger_s` they are admitted one by one
    that far apart, so their slots also free one by one. `loaded=False` accepts slots
    still waiting for the first load (their leases age during the load)."""
    t = timing(rig)
    flights: list[Flight] = []

    def held(k: int) -> Callable[[Snapshot], bool]:
        return active_loaded(model, k) if loaded else (lambda s: s.active(model) >= k)

    if stagger_s is None:
        for i in range(n):
            flights.append(await rig.start_run(f"{label}{i}", model))
        if await rig.wait(held(n), t.slack_s) is None:
            v.block(f"never observed {n} active slot(s) for {model}")
        return flights
    for i in range(n):
        flights.append(await rig.start_run(f"{label}{i}", model))
        if await rig.wait(held(i + 1), t.slack_s) is None:
            v.block(f"never observed {i + 1} active slot(s) for {model}")
            break
        await anyio.sleep(stagger_s)
    return flights


async def enqueue(rig: Rig, model: str, label: str, want_queued: int, v: Verdict, *,
                  request: dict[str, Any] | None = None, busy_timeout_ms: int | None = None,
                  observe_s: float | None = None) -> Flight:
    """Send one request and wait until `queued_requests` shows it waiting."""
    t = timing(rig)
    flight = await rig.start_run(label, model, request=request, busy_timeout_ms=busy_timeout_ms)
    seen = await rig.wait(queued_at_least(model, want_queued), observe_s or t.slack_s)
    if seen is None:
        v.block(f"{label} never observed queued (queued_requests >= {want_queued})")
    return flight


async def registry_stalled(rig: Rig, manager: Flight) -> bool:
    """Read status while `manager` waits: True when the read could only be answered once the
    manager finished (a registry lock held across a management wait), or never."""
    t = timing(rig)
    # Two reads a gap apart: the first may reach the registry before the manager takes its
    # lock (a race, not evidence of a free registry); a held lock stalls the second.
    for i in range(2):
        if i:
            await anyio.sleep(t.gap_s)
        canary = await rig.start(f"status-canary{i}", "GET", "/health", timeout_s=t.slack_s + 5)
        await canary.wait(t.slack_s)
        if not canary.finished or canary.status != 200:
            return True
        if manager.finished:
            break
    if not manager.finished:
        return False
    # Blocked reads are answered when the lock is released, within a few ms of the
    # manager's own reply (either order); a free registry answers long before it.
    window = max(0.005, 0.2 * (manager.t_done - canary.t_send))
    return canary.t_done >= manager.t_done - window


STALLED = ("status reads stalled while {what} waited (registry lock held across a management "
           "wait; judged by F5.no_convoy), so the forced order could not be observed")


async def stagger_manager(rig: Rig, flight: Flight, v: Verdict, what: str) -> None:
    """After sending a manager: give it a gap to enqueue, then it must still be waiting,
    and status reads must still answer (a stalled registry confounds the scenario)."""
    t = timing(rig)
    await anyio.sleep(t.gap_s)
    if v.blockers:  # the scenario is already unjudgeable; do not pile consequences on it
        return
    v.require(not flight.finished, f"{what} was still waiting for older work after the stagger")
    if await registry_stalled(rig, flight):
        v.block(STALLED.format(what=what))


def all_ok(v: Verdict, flights: list[Flight], what: str) -> bool:
    bad = [f"{f.label}={f.status}" for f in flights if f.status != 200]
    return v.require(not bad, f"{what} answered 200" + (f" (got {', '.join(bad)})" if bad else ""))


def no_overtaking(v: Verdict, ordered: list[Flight], tol_s: float, what: str) -> None:
    """In FIFO admission an earlier-enqueued identical request finishes no later than a
    later one (within `tol_s`, under a service time)."""
    worst: tuple[float, str, str] | None = None
    for i, early in enumerate(ordered):
        for late in ordered[i + 1:]:
            lead = early.t_done - late.t_done
            if lead > tol_s and (worst is None or lead > worst[0]):
                worst = (lead, early.label, late.label)
    if worst is None:
        v.require(True, f"{what}: no later request finished ahead of an earlier one")
    else:
        v.require(False, f"{what}: {worst[2]} finished {worst[0] * 1000:.0f} ms before the "
                         f"earlier-enqueued {worst[1]} (overtaken)")


def trace_lines(rig: Rig, offset: int = 0) -> list[dict[str, Any]]:
    """Observer-trace lines (validation builds) written to stderr since byte `offset`."""
    return read_trace(rig.server.stderr_path, offset)[0]


def model_count(health: Any) -> int | None:
    """`models` from a GET /health body (registered entries, loading ones included)."""
    value = health.get("models") if isinstance(health, dict) else None
    return value if isinstance(value, int) else None


def unloaded_ids(flight: Flight) -> list[str]:
    body = flight.json()
    if isinstance(body, dict) and isinstance(body.get("unloaded"), list):
        return [str(x) for x in body["unloaded"]]
    return []


async def reset(rig: Rig, models: list[str]) -> bool:
    """Unload (bulk, unbounded) and wait for drained counters before the next scenario;
    False when the server could not unload (no bulk route), so the models may be warm."""
    t = timing(rig)
    if rig.ctx.caps.bulk_unload is False:
        return False
    reply = await rig.call("reset", "POST", "/v1/tasks/unload_models", {"model_ids": models},
                           timeout_s=t.slack_s + 30)
    # The legacy runtime publishes no slot counters: nothing to wait for there.
    if reply.status == 200 and rig.flagged and rig.ctx.caps.counters is not False:
        await rig.drained(models, t.slack_s)
    return reply.status == 200


async def references(rig: Rig, model: str, tag: str, *, cold: bool = True) -> dict[str, set[str]]:
    """Serial outputs of the base request right after a load (cold, warm, repeated warm for
    cache-sensitive models), recorded as this registration's references."""
    unloaded = await reset(rig, [model]) if cold else False
    chain = [await rig.run(f"ref-{tag}-{i}", model) for i in range(3 if rig.ctx.plan.cache_sensitive else 2)]
    outputs = [rig.output(f) for f in chain]
    if not unloaded:  # the model may have been warm already: no cold reference from this chain
        return rig.ctx.add_refs(model, tag, [None, *outputs])
    return rig.ctx.add_refs(model, tag, outputs)


async def own_references(rig: Rig, model: str, tag: str = "base", *, unload: bool = True) -> None:
    """References for a registration a probe derived (its outputs may depend on the id or
    path), collected on this server unless already known; `unload` leaves it cold again."""
    if not rig.ctx.refs.get(rig.ctx.ref_key(model, tag)):
        await references(rig, model, tag)
        if unload:
            await reset(rig, [model])


def outputs_match(rig: Rig, v: Verdict, tag: str, flights: list[Flight], what: str,
                  *, phase: str | None = None) -> None:
    """Each successful flight equals its own registration's reference for `phase` (None:
    a history the probe did not force). A missing or ambiguous reference is not judged."""
    ok = [f for f in flights if f.status == 200]
    if not ok:  # nothing compared is no evidence of exact outputs
        v.pend(f"{what}: no successful reply whose output could be compared")
        return
    wrong: list[str] = []
    unjudged: list[str] = []
    for f in ok:
        model = f.model or rig.ctx.model_id
        ref, why = rig.ctx.reference(model, tag, phase)
        if ref is None:
            unjudged.append(why)
        elif rig.output(f) != ref:
            wrong.append(f.label)
    for why in sorted(set(unjudged)):
        v.pend(f"{what} outputs not compared: {why}")
    if len(unjudged) == len(ok):
        return
    ref_what = f"'{tag}' {phase} reference" if phase else f"'{tag}' reference"
    v.require(not wrong, f"{what} outputs equal their registration's {ref_what}"
              + (f" (differ: {', '.join(wrong)})" if wrong else ""))
