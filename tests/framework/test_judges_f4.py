"""The F4 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import facts, fl

SEEN = [{"what": "2 active slot(s) for m", "seen": True}]


def wave(start: float = 1.0) -> list[dict[str, Any]]:
    return [fl("next0", start, start + 0.15), fl("next1", start, start + 0.16)]


def wave_facts(**extra: Any) -> dict[str, Any]:
    return {
        "count": 2,
        "next_settled": True,
        "next_full": True,
        "next_wave": ["next0", "next1"],
        "waits": [dict(w) for w in SEEN],
        **extra,
    }


def running(**extra: Any) -> dict[str, Any]:
    """Two occupants, the first one's client gone, then the next wave."""
    return facts(
        [fl("occupant0", 0.0, None, status=None), fl("occupant1", 0.0, 0.16), *wave()],
        **wave_facts(occupants=["occupant0", "occupant1"], dropped=["occupant0"], **extra),
    )


def test_running_disconnect_passes_a_drained_server() -> None:
    v = run_judge("f4.running_disconnect", running())
    assert v.status is Status.PASS, v.detail()


def test_running_disconnect_fails_a_stranded_lease() -> None:
    v = run_judge("f4.running_disconnect", running(drained=False))
    assert v.status is Status.FAIL and "counters drained after the dropped" in v.detail()
    # A next wave the poller never saw at full strength is not seen, not a stranded lease.
    v = run_judge("f4.running_disconnect", running(next_full=False))
    assert v.status is Status.BLOCKED and v.retry and "never showed the next wave" in v.detail()


def test_running_disconnect_fails_a_request_that_stayed_but_was_not_answered() -> None:
    f = running()
    f["flights"][1]["status"] = 500
    v = run_judge("f4.running_disconnect", f)
    assert v.status is Status.FAIL and "the requests that stayed answered 200 (got occupant1=500)" in v.detail()


def test_running_disconnect_fails_a_wrong_output_after_the_disconnect() -> None:
    f = running()
    f["flights"][3]["output"] = "stale-cache"
    v = run_judge("f4.running_disconnect", f)
    assert v.status is Status.FAIL and "differ: next1" in v.detail()


def test_running_disconnect_is_blocked_when_the_slots_were_never_seen_held() -> None:
    v = run_judge("f4.running_disconnect", running(waits=[{"what": "2 active slot(s) for m", "seen": False}]))
    assert v.status is Status.BLOCKED and "never observed 2 active slot(s)" in v.detail()


def queued(**extra: Any) -> dict[str, Any]:
    return facts(
        [
            fl("occupant0", 0.0, 0.15),
            fl("occupant1", 0.0, 0.16),
            {**fl("queued0", 0.02, None, status=None), "cancelled": True},
            {**fl("queued1", 0.03, None, status=None), "cancelled": True},
            *wave(),
        ],
        **wave_facts(occupants=["occupant0", "occupant1"], queued=["queued0", "queued1"], **extra),
    )


def test_queued_disconnect_passes_and_fails_abandoned_waiters_left_counted() -> None:
    assert run_judge("f4.queued_disconnect", queued()).status is Status.PASS
    v = run_judge("f4.queued_disconnect", queued(drained=False))
    assert v.status is Status.FAIL and "queued_requests and active_slots drained" in v.detail()
    v = run_judge("f4.queued_disconnect", queued(next_settled=False))
    assert v.status is Status.FAIL and "the next wave completed" in v.detail()


def init(**extra: Any) -> dict[str, Any]:
    return facts(
        [{**fl("cold", 0.0, None, status=None), "cancelled": True}, *wave()],
        **wave_facts(**{"load_seen": True, "first_finished": False, "left_during_load": True, **extra}),
    )


def test_init_disconnect_passes_a_released_abandoned_load() -> None:
    assert run_judge("f4.init_disconnect", init()).status is Status.PASS


def test_init_disconnect_fails_an_abandoned_load_that_kept_its_lease() -> None:
    v = run_judge("f4.init_disconnect", init(drained=False))
    assert v.status is Status.FAIL and "released its lease" in v.detail()


def test_init_disconnect_is_pending_when_the_client_could_not_leave_during_the_load() -> None:
    v = run_judge("f4.init_disconnect", init(first_finished=True, left_during_load=False))
    assert v.status is Status.BLOCKED and v.retry
    assert "first load finished before the client could leave" in v.detail()
    # Nothing else is judged of a situation that was not forced.
    v = run_judge("f4.init_disconnect", init(first_finished=True, left_during_load=False, drained=False))
    assert v.status is Status.BLOCKED


def sigterm(stop: dict[str, Any] | None = None, queued_status: int | None = 503, **extra: Any) -> dict[str, Any]:
    """SIGTERM at 0.3 s with two running requests and one queued one."""
    info = (
        {"signal": "SIGTERM", "graceful": True, "killed": False, "grace_s": 5.0, "exit_code": 0, "stop_s": 0.2}
        if stop is None
        else stop
    )
    q = (
        fl("queued", 0.1, 0.31, status=queued_status, message="server is shutting down")
        if queued_status is not None
        else fl("queued", 0.1, None, status=None)
    )
    return facts(
        [fl("occupant0", 0.0, 0.45), fl("occupant1", 0.0, 0.46), q],
        count=2,
        grace_s=5.0,
        waits=[*(dict(w) for w in SEEN), {"what": "queued queued", "seen": True}],
        stop=info,
        drain_s=0.2,
        t_term=0.3,
        running=["occupant0", "occupant1"],
        queued="queued",
        stopped_line=True,
        **{"unanswered_at_stop": [], **extra},
    )


def test_sigterm_inflight_passes_a_drained_graceful_exit() -> None:
    v = run_judge("f4.sigterm_inflight", sigterm())
    assert v.status is Status.PASS, v.detail()
    assert run_judge("f4.sigterm_inflight", sigterm(queued_status=200)).status is Status.PASS


def test_sigterm_inflight_fails_a_kill_or_a_nonzero_exit() -> None:
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 5.0, "exit_code": -9, "waited_s": 5.5}
    v = run_judge("f4.sigterm_inflight", sigterm(stop=killed))
    assert v.status is Status.FAIL and "still running 5 s after it answered its last in-flight request" in v.detail()
    v = run_judge("f4.sigterm_inflight", sigterm(stop={"killed": False, "exit_code": 1}))
    assert v.status is Status.FAIL and "with code 0 (got 1)" in v.detail()


def test_sigterm_inflight_a_kill_after_a_short_grace_is_not_forced() -> None:
    """The reference promises an exit within about a second of SIGTERM; a grace under five
    seconds cannot tell a busy machine's slow exit from a hung one: BLOCKED, asking for more."""
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 2.0, "exit_code": -9, "waited_s": 2.5}
    f = {**sigterm(stop=killed), "grace_s": 2.0}
    v = run_judge("f4.sigterm_inflight", f)
    assert v.status is Status.BLOCKED and "raise timeouts.shutdown_grace_s to 5 s or more" in v.detail()


def test_sigterm_inflight_a_slow_drain_parval_gave_up_on_is_not_forced() -> None:
    """A busy machine drains slower: parval's own kill with work still unanswered is no
    verdict on the server (the replies it cut are not counted as dropped by the server)."""
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 5.0, "exit_code": -9, "waited_s": 45}
    f = sigterm(stop=killed, queued_status=None, unanswered_at_stop=["queued"])
    v = run_judge("f4.sigterm_inflight", f)
    assert v.status is Status.BLOCKED and v.retry and "still working on queued" in v.detail()


def test_sigterm_inflight_fails_dropped_connections_and_undrained_running_work() -> None:
    v = run_judge("f4.sigterm_inflight", sigterm(queued_status=None))
    assert v.status is Status.FAIL and "connection dropped without one: queued" in v.detail()
    f = sigterm()
    f["flights"][0].update(status=503, message="server is shutting down", output=None)
    v = run_judge("f4.sigterm_inflight", f)
    assert v.status is Status.FAIL and "rejected: occupant0=503" in v.detail()


def test_sigterm_inflight_fails_a_truncated_delivered_output() -> None:
    f = sigterm()
    f["flights"][1]["output"] = "truncated"
    v = run_judge("f4.sigterm_inflight", f)
    assert v.status is Status.FAIL and "differ: occupant1" in v.detail()


def test_sigterm_inflight_is_blocked_when_the_queued_request_was_never_seen_queued() -> None:
    f = sigterm()
    f["waits"][1]["seen"] = False
    assert run_judge("f4.sigterm_inflight", f).status is Status.BLOCKED


def test_sigterm_inflight_with_work_not_seen_in_flight_judges_no_exit_time() -> None:
    """With the running requests never seen active, parval's kill a grace after the last
    reply once still FAILed beside the BLOCKED: no exit time is judged then."""
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 5.0, "exit_code": -9, "waited_s": 5.5}
    f = sigterm(stop=killed)
    f["waits"][0]["seen"] = False
    v = run_judge("f4.sigterm_inflight", f)
    assert v.status is Status.BLOCKED and v.retry, v.detail()


def stalled(
    *,
    answered: bool = True,
    closed: float | None = None,
    exited: float | None = 0.04,
    exit_code: int | None = 0,
    final: bool = False,
    bound: float = 1.5,
    held: bool | None = None,
    control: float | None = None,
) -> dict[str, Any]:
    """The control connection stalled the grace (plus the 10 ms the stalled sockets took to
    open) before SIGTERM; the stalled sockets were held open at the close unless `held`."""
    return facts(
        [],
        bound_s=bound,
        final_attempt=final,
        control_answered=answered,
        control_stall_s=bound + 0.01 if control is None else control,
        stalled_at_term_s=0.005,
        held_at_close=(closed is not None) if held is None else held,
        closed_at_s=closed,
        exited_at_s=exited,
        t_term=0.25,
        sockets=["stalled header", "stalled body"],
        stop={"signal": "SIGTERM", "killed": exited is None, "exit_code": exit_code, "grace_s": 1.5},
    )


def test_stalled_socket_io_passes_an_exit_that_cancelled_socket_io() -> None:
    v = run_judge("f4.stalled_socket_io", stalled())
    assert v.status is Status.PASS, v.detail()
    assert "read and answered a connection that had stalled" in v.detail()
    # However long a busy machine takes, as long as it did not wait for the sockets to close.
    assert run_judge("f4.stalled_socket_io", stalled(exited=1.4)).status is Status.PASS


def test_stalled_socket_io_without_evidence_the_server_read_stalled_sockets_is_no_pass() -> None:
    v = run_judge("f4.stalled_socket_io", stalled(answered=False))
    assert v.status is Status.BLOCKED and "not shown reading them" in v.detail()


def waited_each_time(*bounds: float, after: float = 0.02) -> list[dict[str, Any]]:
    """Attempts with these graces, each holding the stalled sockets through its grace and
    exiting `after` seconds once the client closed them; the last is the probe's final one."""
    return [stalled(closed=b, exited=b + after, bound=b, final=b == bounds[-1]) for b in bounds]


def test_stalled_socket_io_fails_a_listener_that_waited_for_the_stalled_connections() -> None:
    # The final attempt (the longest grace) shows it, and an earlier one showed the same.
    v = run_judge("f4.stalled_socket_io", {"attempts": waited_each_time(1.5, 3.0, 6.0)})
    assert v.status is Status.FAIL and "attempt 3 of 3" in v.detail()
    assert "exited only when the client closed the stalled sockets" in v.detail()
    assert "as after a grace of 1.5 s, 3 s before" in v.detail(), v.detail()
    assert run_judge("f4.stalled_socket_io", stalled(exit_code=2)).status is Status.FAIL
    # Still running after the sockets closed: not a stalled-I/O behaviour.
    v = run_judge("f4.stalled_socket_io", stalled(closed=1.5, exited=None, exit_code=-9))
    assert v.status is Status.BLOCKED and "judged by sigterm_inflight" in v.detail()


def test_stalled_socket_io_seen_once_is_not_a_fail() -> None:
    """A shared CI machine once ran the real legacy server's shutdown past a 12 s grace and
    saw it exit just after the close: the final attempt alone FAILed a server that never
    waits on socket I/O. One final attempt that shows it, with no earlier attempt showing
    the same, is not forced; nor is an exit that came long after the close."""
    v = run_judge("f4.stalled_socket_io", stalled(closed=12.0, exited=12.02, final=True, bound=12.0))
    assert v.status is Status.BLOCKED and "no earlier attempt with a shorter grace" in v.detail(), v.detail()
    not_forced = stalled(closed=3.0, exited=None, bound=3.0, answered=False)
    slow = stalled(closed=6.0, exited=6.02, bound=6.0)
    v = run_judge(
        "f4.stalled_socket_io",
        {"attempts": [not_forced, slow, stalled(closed=12.0, exited=12.02, final=True, bound=12.0)]},
    )
    assert v.status is Status.FAIL, v.detail()  # attempt 2 showed it too
    earlier_late = stalled(closed=6.0, exited=8.5, bound=6.0)  # gone 2.5 s after the close: not tied to it
    v = run_judge(
        "f4.stalled_socket_io",
        {"attempts": [not_forced, earlier_late, stalled(closed=12.0, exited=12.02, final=True, bound=12.0)]},
    )
    assert v.status is Status.BLOCKED and "after 3 attempt(s)" in v.detail(), v.detail()
    v = run_judge(
        "f4.stalled_socket_io",
        {
            "attempts": waited_each_time(3.0, 6.0, 12.0)[:2]
            + [stalled(closed=12.0, exited=16.0, final=True, bound=12.0)]
        },
    )
    assert v.status is Status.BLOCKED and "later than 3 s: an exit that late is not tied to the close" in v.detail(), (
        v.detail()
    )


def test_stalled_socket_io_an_exit_after_the_close_without_the_sockets_held_is_not_a_fail() -> None:
    """The final attempt's FAIL once rested on the exit being seen only after the close: a
    process that ended (or dropped the stalled sockets) just before the close, seen gone
    only after it, FAILed. It needs the sockets seen still held open when they were closed."""
    v = run_judge("f4.stalled_socket_io", stalled(closed=6.0, exited=6.02, final=True, bound=6.0, held=False))
    assert v.status is Status.BLOCKED and v.retry and "not seen still holding them open" in v.detail(), v.detail()
    old = stalled(closed=6.0, exited=6.02, final=True, bound=6.0)
    del old["held_at_close"]  # recorded before parval looked
    assert run_judge("f4.stalled_socket_io", old).status is Status.BLOCKED


def test_stalled_socket_io_an_exit_after_a_longer_stall_than_the_control_is_not_a_pass() -> None:
    """The control connection stalled 0.2 s, the stalled sockets up to the whole grace: an
    exit with them open once passed although a read timeout between the two could have
    ended them. The control now stalls the grace; an exit after the stalled sockets had
    stalled longer than the control is not forced."""
    v = run_judge("f4.stalled_socket_io", stalled(exited=1.4, control=0.2))
    assert v.status is Status.BLOCKED and v.retry and "a read timeout may have ended them" in v.detail()
    assert run_judge("f4.stalled_socket_io", stalled(exited=1.4)).status is Status.PASS


def test_an_exit_after_the_close_is_tried_again_with_a_longer_grace_not_failed() -> None:
    """A busy machine's slow shutdown that outlasts the first grace is not a violation: the
    probe tries again, and a later attempt that exits with the sockets still open passes."""
    v = run_judge("f4.stalled_socket_io", stalled(closed=1.5, exited=1.9, exit_code=0))
    assert v.status is Status.BLOCKED and v.retry and "slower than the 1.5 s grace" in v.detail()
    slow_then_done = [stalled(closed=1.5, exited=1.9), stalled(exited=2.4, bound=3.0)]
    v = run_judge("f4.stalled_socket_io", {"attempts": slow_then_done})
    assert v.status is Status.PASS, v.detail()


def test_queued_disconnect_is_blocked_when_the_queue_was_never_seen() -> None:
    f = queued()
    f["waits"][0]["seen"] = False
    v = run_judge("f4.queued_disconnect", f)
    assert v.status is Status.BLOCKED and "never observed 2 active slot(s)" in v.detail(), v.detail()


def test_init_disconnect_needs_the_first_requests_client_to_have_left() -> None:
    # A first request that lost its connection before its client left was dropped, not abandoned.
    f = init()
    f["flights"][0]["cancelled"] = False
    v = run_judge("f4.init_disconnect", f)
    assert v.status is Status.FAIL and "the client of the first request left during the load" in v.detail()


def test_init_disconnect_answered_before_the_client_left_is_not_forced() -> None:
    # The load can end between parval seeing it in progress and the cancel landing (a busy
    # machine): the reply then wins the race, which shows nothing about an abandoned load.
    for cancelled in (False, True):
        f = init()
        f["flights"][0].update(cancelled=cancelled, status=200)
        v = run_judge("f4.init_disconnect", f)
        assert v.status is Status.BLOCKED and "cold answered before its client left" in v.detail(), v.detail()


def test_sigterm_inflight_names_how_long_parval_waited_before_its_kill() -> None:
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 5.0, "exit_code": -9, "waited_s": 45}
    f = sigterm(stop=killed, queued_status=None, unanswered_at_stop=["queued"])
    v = run_judge("f4.sigterm_inflight", f)
    assert "when parval stopped waiting 45.0 s after SIGTERM" in v.detail(), v.detail()


def test_stalled_socket_io_names_when_the_sockets_were_closed_and_the_server_exited() -> None:
    """Each verdict after the close says when parval closed the sockets (and, for the
    violation, how long after that the server exited): the numbers to weigh it by."""
    v = run_judge("f4.stalled_socket_io", stalled(closed=1.5, exited=1.9))
    assert "closed the stalled sockets (1.50 s after SIGTERM)" in v.detail(), v.detail()
    v = run_judge("f4.stalled_socket_io", stalled(closed=6.0, exited=6.25, final=True, bound=6.0, held=False))
    assert "closed the stalled sockets (6.00 s after SIGTERM)" in v.detail(), v.detail()
    v = run_judge("f4.stalled_socket_io", {"attempts": waited_each_time(3.0, 6.0, after=0.25)})
    assert v.status is Status.FAIL and "(6.00 s after SIGTERM, exit 250 ms later)" in v.detail(), v.detail()


def test_a_dropped_request_answered_before_its_client_left_is_not_forced() -> None:
    """The reply can land between parval seeing the slots held and the cancel (a busy
    client): nothing was abandoned, whatever the counters did next."""
    f = running(drained=False)
    f["flights"][0] = fl("occupant0", 0.0, 0.15)  # answered 200, never cancelled
    v = run_judge("f4.running_disconnect", f)
    assert v.status is Status.BLOCKED and v.retry and "occupant0 answered before its client left" in v.detail()
    f = queued(drained=False, waits=[{"what": "queued1 queued", "seen": False}])
    f["flights"][2] = fl("queued0", 0.02, 0.2)
    v = run_judge("f4.queued_disconnect", f)
    assert v.status is Status.BLOCKED and "queued0 answered before its client left" in v.detail(), v.detail()
