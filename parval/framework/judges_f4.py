"""Judges of the F4 observations (parval.framework.probes_f4): clients that go away
(running, queued, waiting for the first load) and SIGTERM with work in flight or stalled
sockets. Pure functions of the recorded facts.

A disconnect cannot cancel backend work, so the contract asks for finite drain: counters
return to zero and the next wave gets every slot with exact outputs. Shutdown must drain
finite work and exit 0 by itself; a process that had to be killed never counts as a
graceful drain.
"""

from __future__ import annotations

from functools import partial

from parval.framework.observed import (
    Facts,
    FlightFact,
    Judge,
    Verdict,
    all_ok,
    flight,
    judged,
    listed,
    ms,
    outputs_match,
    over_attempts,
    waits,
)
from parval.procedure.entry import Entry, framework_entry


def next_wave_exact(v: Verdict, f: Facts) -> None:
    """After disconnects: every slot is usable again and outputs are exact."""
    n = int(f["count"])
    wave = listed(f, "next_wave")
    v.require(bool(f["next_settled"]), "the next wave completed")
    if f["next_full"]:
        v.require(True, f"the next wave held all {n} slot(s) at once (no stranded lease)")
    else:
        v.not_forced(f"the status never showed the next wave's {n} request(s) active at once")
    all_ok(v, wave, "the next wave")
    outputs_match(v, f, "base", wave, "the next wave")


def _answered_first(v: Verdict, dropped: list[FlightFact], what: str) -> bool:
    """A reply that came before the cancel landed (a race on a busy client) leaves nothing
    abandoned: not forced, naming the requests. True when so."""
    answered = [x.label for x in dropped if x.status is not None]
    if answered:
        v.not_forced(f"{', '.join(answered)} answered before its client left, so no {what} was abandoned")
    return bool(answered)


def running_disconnect(f: Facts) -> Verdict:
    """Clients of running requests go away: the backend work finishes, counters drain,
    the requests that stayed are answered, and the next wave gets every slot."""
    v = Verdict()
    waits(v, f)
    dropped = set(f["dropped"])
    occupants = listed(f, "occupants")
    if _answered_first(v, [x for x in occupants if x.label in dropped], "running request"):
        return v
    v.require(bool(f["settled"]), "client tasks ended")
    v.require(bool(f["drained"]), "counters drained after the dropped requests finished")
    all_ok(v, [x for x in occupants if x.label not in dropped], "the requests that stayed")
    next_wave_exact(v, f)
    return v


def queued_disconnect(f: Facts) -> Verdict:
    """Clients of queued requests go away: the abandoned waiters run or are removed, the
    counters drain, the occupants are answered and the next wave gets every slot."""
    v = Verdict()
    waits(v, f)
    gone = listed(f, "queued")
    if _answered_first(v, gone, "queued request"):
        return v
    v.require(all(x.cancelled for x in gone), "the clients of the queued requests left")
    v.require(bool(f["settled"]), "client tasks ended")
    v.require(bool(f["drained"]), "queued_requests and active_slots drained (abandoned waiters ran or were removed)")
    all_ok(v, listed(f, "occupants"), "occupants")
    next_wave_exact(v, f)
    return v


def init_disconnect(f: Facts) -> Verdict:
    """The client of a request waiting for the first load goes away during the load: the
    load finishes and releases its lease, and the next wave gets every slot."""
    v = Verdict()
    if not f["left_during_load"]:
        v.not_forced("the first load finished before the client could leave during it")
        return v
    cold = flight(f, "cold")
    if _answered_first(v, [cold], "load"):
        return v
    v.require(cold.cancelled, "the client of the first request left during the load")
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


# The server reference: on SIGTERM the process exits "within about a second" once its finite
# work is done. Still running this long after its last reply is a hung exit on any machine.
HUNG_EXIT_S = 5.0


def stopped(v: Verdict, f: Facts) -> None:
    """How the process ended after SIGTERM. Exit 0 by itself is the graceful drain. A
    SIGKILL is never one: it is a violation when the server was still running a grace after
    it had answered everything in flight (it did not exit although its finite work was
    done), and only not forced while that work was still unanswered (the grace was too short
    for this machine)."""
    stop = dict(f["stop"])
    grace = float(f["grace_s"])
    if not stop.get("killed"):
        v.require(stop.get("exit_code") == 0, f"the server exited by itself with code 0 (got {stop.get('exit_code')})")
        return
    pending = [str(x) for x in f["unanswered_at_stop"]]
    if pending:
        v.not_forced(
            f"the server was still working on {', '.join(pending)} when parval stopped waiting "
            f"{float(stop.get('waited_s') or 0):.1f} s after SIGTERM (raise timeouts.shutdown_grace_s)"
        )
        return
    if grace < HUNG_EXIT_S:
        # The server reference promises an exit "within about a second" of SIGTERM; a grace
        # this short cannot tell a busy machine's slow exit from a hung one.
        v.not_forced(
            f"still running {grace:g} s after it answered its last in-flight request, a grace too short to "
            f"tell a slow exit on a busy machine from a hung one (raise timeouts.shutdown_grace_s to "
            f"{HUNG_EXIT_S:g} s or more)"
        )
        return
    v.require(
        False,
        f"still running {grace:g} s after it answered its last in-flight request; killed with SIGKILL "
        "(a SIGKILL is never a graceful drain)",
    )


def sigterm_inflight(f: Facts) -> Verdict:
    """SIGTERM with n running requests and one queued: the server drains finite work by
    itself, exits 0, and every delivered output is exact."""
    v = Verdict()
    waits(v, f)
    running = listed(f, "running")
    queued = flight(f, str(f["queued"]))
    if v.blockers:
        # The work was not seen in flight at SIGTERM: how long the server took to exit and
        # which request it answered are not judged against a situation that was not forced.
        return v
    stopped(v, f)
    if v.blockers:  # parval's own SIGKILL cut the replies: the drain policy is not shown
        return v
    shutdown_policy(v, running, queued)
    delivered = [x for x in (*running, queued) if x.status == 200]
    outputs_match(v, f, "base", delivered, "delivered responses")
    return v


def stalled_socket_io(f: Facts) -> Verdict:
    """SIGTERM with a stalled header and a stalled body connection and no finite work: the
    listener cancels socket I/O and the server exits 0 by itself. Evidence that the server
    was reading stalled connections: a control connection that stalled as long as the
    stalled sockets may be held (the grace) before SIGTERM, then finished its request, was
    answered; an exit with the stalled sockets open counts once they had stalled no longer
    than that control (else a read timeout may have ended them).

    The violation: the server still held the stalled sockets open when the client closed
    them, and exited promptly only after (it was waiting on their I/O). One attempt cannot
    tell that from a shutdown slower than its grace on a busy machine, so the attempts are
    weighed together: it is a FAIL only in the probe's final attempt (the longest grace),
    when an earlier attempt with a shorter grace showed the same; before that it is not
    forced, and the probe tries again with a longer grace."""
    tries = [dict(a) for a in f["attempts"]] if "attempts" in f else [f]
    verdicts = [judged(partial(_stalled_attempt, earlier=tries[:i]), a) for i, a in enumerate(tries)]
    return verdicts[0] if len(verdicts) == 1 else over_attempts(verdicts)


def _prompt_s(f: Facts) -> float:
    """How soon after the client closed the stalled sockets an exit counts as caused by the
    close: a quarter of the grace the server was given before it, at least a second."""
    return max(1.0, float(f["bound_s"]) / 4)


def _exited_on_close(f: Facts) -> bool:
    """Still running and holding the stalled sockets open through the grace, then gone
    promptly once the client closed them."""
    closed, exited = f.get("closed_at_s"), f.get("exited_at_s")
    if closed is None or exited is None or f.get("held_at_close") is not True:
        return False
    return float(closed) < float(exited) <= float(closed) + _prompt_s(f)


def _stalled_attempt(f: Facts, *, earlier: list[Facts]) -> Verdict:
    """One attempt of the stalled-I/O shutdown, `earlier` the attempts before it."""
    v = Verdict()
    if not f["control_answered"]:
        v.not_forced(
            "a stalled connection completed afterwards was not answered, so the server was not shown reading them"
        )
        return v
    control = float(f["control_stall_s"])
    v.require(True, "the server read and answered a connection that had stalled")
    stop = dict(f["stop"])
    closed = f["closed_at_s"]  # seconds after SIGTERM when parval closed the stalled sockets (None: not needed)
    exited = f["exited_at_s"]  # seconds after SIGTERM when the process was seen gone (None: never)
    if exited is not None and (closed is None or float(exited) <= float(closed)):
        stalled_for = float(f["stalled_at_term_s"]) + float(exited)
        if stalled_for > control:
            v.not_forced(
                f"the stalled sockets had stalled {stalled_for:.2f} s when the server exited, longer than the "
                f"control connection it was shown to read ({control:.2f} s): a read timeout may have ended them"
            )
        else:
            v.require(
                stop.get("exit_code") == 0,
                f"exited by itself {float(exited):.2f} s after SIGTERM with the stalled sockets still open "
                f"(exit {stop.get('exit_code')})",
            )
        return v
    if exited is None:
        v.block(
            "the server did not exit after SIGTERM even once the stalled sockets were closed: not a "
            "stalled-I/O behaviour (a shutdown that never completes is judged by sigterm_inflight)"
        )
        return v
    after = float(exited) - float(closed or 0)
    if not f.get("final_attempt"):
        v.not_forced(
            f"it exited only after the client closed the stalled sockets ({float(closed or 0):.2f} s after "
            f"SIGTERM): a listener waiting on stalled I/O, or a shutdown slower than the {f['bound_s']} s grace"
        )
    elif f.get("held_at_close") is not True:
        v.not_forced(
            f"it exited after the client closed the stalled sockets ({float(closed or 0):.2f} s after SIGTERM), "
            "but it was not seen still holding them open then, so that it waited on them is unseen"
        )
    elif not _exited_on_close(f):
        v.not_forced(
            f"it exited {after:.2f} s after the client closed the stalled sockets, later than "
            f"{_prompt_s(f):g} s: an exit that late is not tied to the close (a slow shutdown looks the same)"
        )
    elif not any(_exited_on_close(e) for e in earlier):
        v.not_forced(
            f"it exited only when the client closed the stalled sockets, but no earlier attempt with a shorter "
            f"grace showed the same: seen once, a shutdown slower than the {f['bound_s']} s grace on a busy "
            "machine looks the same"
        )
    else:
        seen = [f"{float(e['bound_s']):g} s" for e in earlier if _exited_on_close(e)]
        v.require(
            False,
            f"it exited only when the client closed the stalled sockets ({float(closed or 0):.2f} s after "
            f"SIGTERM, exit {ms(after)} ms later), as after a grace of {', '.join(seen)} before: the listener "
            "waited on stalled I/O",
        )
    return v


JUDGES: dict[str, Judge] = {
    "f4.running_disconnect": running_disconnect,
    "f4.queued_disconnect": queued_disconnect,
    "f4.init_disconnect": init_disconnect,
    "f4.sigterm_inflight": sigterm_inflight,
    "f4.stalled_socket_io": stalled_socket_io,
}

# The registry entries of the F4 assertions, each combined from the sub-checks of the judges it names.
ENTRIES: tuple[Entry, ...] = (
    framework_entry("F4.disconnect", "f4.running_disconnect", "f4.queued_disconnect", "f4.init_disconnect"),
    framework_entry("F4.shutdown", "f4.sigterm_inflight", "f4.stalled_socket_io"),
)
