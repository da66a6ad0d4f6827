"""Building blocks the probes share: occupying slots, queueing behind them, staggering
managers, reading observer traces (what they saw goes into an `Obs`; judging is in
parval.framework.observed and the judges_* modules).

Orders are forced, not assumed: work is only sent after the server reports what came
before it (active or queued). Managers are invisible in `/v1/models`, so the one thing a
probe cannot observe is a manager's enqueue; it is staggered by a gap derived from the
measured request time and checked to still be pending afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio

from parval.framework.facts import Facts, Obs
from parval.framework.judges import run_judge
from parval.framework.poller import Snapshot
from parval.framework.rig import Flight, Rig
from parval.framework.settings import Timing
from parval.rundir.files import dumps
from parval.server.trace import TraceLine, read_trace

# How often a probe forces one situation before it settles on BLOCKED (each attempt is kept).
ATTEMPTS = 3


def timing(rig: Rig) -> Timing:
    assert rig.ctx.timing is not None, "calibration runs first"
    return rig.ctx.timing


def active_loaded(model: str, k: int) -> Callable[[Snapshot], bool]:
    return lambda s: s.active(model) >= k and bool(s.loaded(model))


def newest_queued(rig: Rig, model: str) -> Callable[[Snapshot], bool]:
    """The request just sent to `model` waits in its queue: every request in flight to it is
    accounted for (active or queued) and one is queued. Admission is FIFO, so the one queued
    last is the newest; counting what is in flight (not a fixed queue length) holds while
    older work leaves the queue meanwhile."""
    return lambda s: s.queued(model) >= 1 and s.active(model) + s.queued(model) >= rig.in_flight(model)


async def occupy(
    rig: Rig,
    model: str,
    n: int,
    obs: Obs,
    *,
    label: str = "occupant",
    stagger_s: float | None = None,
    loaded: bool = True,
) -> list[Flight]:
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
        obs.wait(f"{n} active slot(s) for {model}", await rig.wait(held(n), t.slack_s) is not None)
        return flights
    for i in range(n):
        flights.append(await rig.start_run(f"{label}{i}", model))
        if not obs.wait(f"{i + 1} active slot(s) for {model}", await rig.wait(held(i + 1), t.slack_s) is not None):
            break
        await anyio.sleep(stagger_s)
    return flights


async def enqueue(
    rig: Rig,
    model: str,
    label: str,
    obs: Obs,
    *,
    request: dict[str, object] | None = None,
    busy_timeout_ms: int | None = None,
    observe_s: float | None = None,
) -> Flight:
    """Send one request and wait until the status shows it waiting in the queue."""
    t = timing(rig)
    flight = await rig.start_run(label, model, request=request, busy_timeout_ms=busy_timeout_ms)
    seen = await rig.wait(newest_queued(rig, model), observe_s or t.slack_s)
    obs.wait(f"{label} queued (every request in flight to {model} admitted, one waiting)", seen is not None)
    return flight


async def canaries(rig: Rig, manager: Flight) -> list[dict[str, object]]:
    """Status reads while `manager` waits (judged by `facts.stalled`). Two reads a gap
    apart: the first may reach the registry before the manager takes its lock (a race, not
    evidence of a free registry); a held lock stalls the second."""
    t = timing(rig)
    reads: list[dict[str, object]] = []
    for i in range(2):
        if i:
            await anyio.sleep(t.gap_s)
        canary = await rig.start(f"status-canary{i}", "GET", "/health", timeout_s=t.slack_s + 5)
        await canary.wait(t.slack_s)
        reads.append(rig.fact(canary))
        if not canary.finished or canary.status != 200 or manager.finished:
            break
    return reads


async def attempts(key: str, scenario: Callable[[int], Awaitable[Facts]], tries: int = ATTEMPTS) -> Facts:
    """Force one situation up to `tries` times: again only while the judge `key` says it was
    not forced (BLOCKED naming what), so a busy machine costs another attempt, never a
    verdict. One attempt is its own facts; several are kept together (`{"attempts": [...]}`,
    judged by judges.over_attempts). `scenario(i)` may force harder on attempt i."""
    made: list[Facts] = []
    for i in range(tries):
        facts = json.loads(dumps(await scenario(i)))
        made.append(facts)
        if not run_judge(key, facts).retry:
            break
    return made[0] if len(made) == 1 else {"attempts": made}


async def stagger_manager(
    rig: Rig, flight: Flight, obs: Obs, what: str, behind: list[Flight], *, read_status: bool = True
) -> None:
    """After sending a manager: give it a gap to enqueue, then record whether it still
    waits (behind the older work `behind`) and whether status reads still answer (a stalled
    registry confounds the scenario; `read_status=False` skips those reads, for an attempt
    that must be quick)."""
    t = timing(rig)
    await anyio.sleep(t.gap_s)
    entry: dict[str, object] = {"what": what, "manager": flight.label, "behind": [f.label for f in behind]}
    obs.facts.setdefault("staggers", []).append(entry)
    if obs.blocked:  # the scenario is already unjudgeable; do not pile consequences on it
        entry["skipped"] = True
        return
    entry["still_waiting"] = not flight.finished
    entry["canaries"] = await canaries(rig, flight) if read_status else []
    entry["manager_t_done"] = rig.rel(flight.t_done) if flight.finished else None


async def observe_after(
    rig: Rig, obs: Obs, model: str, label: str, check: tuple[str, str, str], flights: list[Flight], **evidence: object
) -> None:
    """End a scenario: whether `model` drained, then one more request to it (`label`);
    record `check` (assertion, sub-check, judge) over the flights and that request."""
    obs["drained"] = await rig.drained([model], timing(rig).slack_s)
    after = await rig.run(label, model)
    assertion, name, judge = check
    rig.ctx.findings.observe(assertion, name, judge, rig.observed(obs, [*flights, after]), **evidence)


def trace_lines(rig: Rig, offset: int = 0) -> list[TraceLine]:
    """Observer-trace lines (validation builds) written to stderr since byte `offset`."""
    return read_trace(rig.server.stderr_path, offset)[0]


def model_count(health: object) -> int | None:
    """`models` from a GET /health body (registered entries, loading ones included)."""
    value = health.get("models") if isinstance(health, dict) else None
    return value if isinstance(value, int) else None


async def reset(rig: Rig, models: list[str]) -> bool:
    """Unload (bulk, unbounded) and wait for drained counters before the next scenario;
    False when the server could not unload (no bulk route), so the models may be warm."""
    t = timing(rig)
    if rig.ctx.caps.bulk_unload is False:
        return False
    reply = await rig.call("reset", "POST", "/v1/tasks/unload_models", {"model_ids": models}, timeout_s=t.slack_s + 30)
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
