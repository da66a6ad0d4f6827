"""Judges of the F4 observations (parval.framework.probes_f4): clients that go away
(running, queued, waiting for the first load) and SIGTERM with work in flight or stalled
sockets. Pure functions of the recorded facts.

A disconnect cannot cancel backend work, so the contract asks for finite drain: counters
return to zero and the next wave gets every slot with exact outputs. Shutdown must drain
finite work and exit 0 by itself; a process that had to be killed never counts as a
graceful drain.
"""

from __future__ import annotations

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, FlightFact, flight, named
from parval.framework.observed import all_ok, outputs_match, waits
from parval.framework.observed import judge as register


def next_wave_exact(v: Verdict, f: Facts) -> None:
    """After disconnects: every slot is usable again and outputs are exact."""
    n = int(f["count"])
    wave = named(f, *f["next_wave"])
    v.require(bool(f["next_settled"]), "the next wave completed")
    v.require(bool(f["next_full"]), f"the next wave held all {n} slot(s) at once (no stranded lease)")
    all_ok(v, wave, "the next wave")
    outputs_match(v, f, "base", wave, "the next wave")


@register("f4.running_disconnect")
def running_disconnect(f: Facts) -> Verdict:
    """Clients of running requests go away: the backend work finishes, counters drain,
    the requests that stayed are answered, and the next wave gets every slot."""
    v = Verdict()
    waits(v, f)
    dropped = set(f["dropped"])
    occupants = named(f, *f["occupants"])
    v.require(bool(f["settled"]), "client tasks ended")
    v.require(bool(f["drained"]), "counters drained after the dropped requests finished")
    all_ok(v, [x for x in occupants if x.label not in dropped], "the requests that stayed")
    next_wave_exact(v, f)
    return v


@register("f4.queued_disconnect")
def queued_disconnect(f: Facts) -> Verdict:
    """Clients of queued requests go away: the abandoned waiters run or are removed, the
    counters drain, the occupants are answered and the next wave gets every slot."""
    v = Verdict()
    waits(v, f)
    v.require(bool(f["settled"]), "client tasks ended")
    v.require(bool(f["drained"]), "queued_requests and active_slots drained (abandoned waiters ran or were removed)")
    all_ok(v, named(f, *f["occupants"]), "occupants")
    next_wave_exact(v, f)
    return v


@register("f4.init_disconnect")
def init_disconnect(f: Facts) -> Verdict:
    """The client of a request waiting for the first load goes away during the load: the
    load finishes and releases its lease, and the next wave gets every slot."""
    v = Verdict()
    if not f["left_during_load"]:
        v.pend("the first load finished before the client could leave during it")
    v.require(bool(f["settled"]), "the client task ended")
    v.require(bool(f["drained"]), "the abandoned load finished and released its lease")
    next_wave_exact(v, f)
    return v


def shutdown_policy(v: Verdict, running: list[FlightFact], queued: FlightFact) -> dict[str, list[str]]:
    """The documented drain policy: shutdown waits for finite in-flight work. Every request
    admitted before SIGTERM is answered 200; a queued one is answered or rejected with an
    HTTP error; none may lose its connection without a reply. Returns which was which."""
    policy = drain_policy(running, queued)
    v.require(
        not policy["no_reply"],
        "every request in flight at SIGTERM got an HTTP reply"
        + (f" (connection dropped without one: {', '.join(policy['no_reply'])})" if policy["no_reply"] else ""),
    )
    lost = [f"{f.label}={f.status}" for f in running if f.status not in (200, None)]
    v.require(
        not lost,
        "every running request was drained (answered 200)" + (f" (rejected: {', '.join(lost)})" if lost else ""),
    )
    return policy


def drain_policy(running: list[FlightFact], queued: FlightFact) -> dict[str, list[str]]:
    """Which request in flight at SIGTERM was answered 200, rejected, or got no reply."""
    policy: dict[str, list[str]] = {"answered": [], "rejected": [], "no_reply": []}
    for f in (*running, queued):
        key = "answered" if f.status == 200 else ("no_reply" if f.status is None else "rejected")
        policy[key].append(f.label)
    return policy


def _exited_by_itself(stop: dict[str, object]) -> bool:
    return not stop.get("killed") and stop.get("exit_code") == 0


@register("f4.sigterm_inflight")
def sigterm_inflight(f: Facts) -> Verdict:
    """SIGTERM with n running requests and one queued: the server drains finite work by
    itself within the grace, exits 0, and every delivered output is exact."""
    v = Verdict()
    waits(v, f)
    stop = dict(f["stop"] or {})
    grace = float(f["grace_s"])
    v.require(
        not stop.get("killed"), f"the server exited by itself within {grace:g} s (a SIGKILL is never a graceful drain)"
    )
    v.require(stop.get("exit_code") == 0, f"exit code 0 (got {stop.get('exit_code')})")
    running = named(f, *f["running"])
    queued = flight(f, str(f["queued"]))
    shutdown_policy(v, running, queued)
    delivered = [x for x in (*running, queued) if x.status == 200]
    outputs_match(v, f, "base", delivered, "delivered responses")
    return v


@register("f4.stalled_socket_io")
def stalled_socket_io(f: Facts) -> Verdict:
    """SIGTERM with a stalled header and a stalled body connection and no finite work: the
    listener cancels socket I/O and the server exits 0 by itself within the bound."""
    v = Verdict()
    stop = dict(f["stop"] or {})
    bound = float(f["bound_s"])
    drain_s = float(f["drain_s"])
    v.require(
        _exited_by_itself(stop),
        f"exited 0 by itself within {bound:g} s with stalled header/body sockets "
        f"(killed={stop.get('killed')}, exit={stop.get('exit_code')}, {drain_s:.2f} s)",
    )
    return v
