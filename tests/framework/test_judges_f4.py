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
        "waits": list(SEEN),
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
    v = run_judge("f4.running_disconnect", running(next_full=False))
    assert v.status is Status.FAIL and "held all 2 slot(s) at once (no stranded lease)" in v.detail()
    v = run_judge("f4.running_disconnect", running(drained=False))
    assert v.status is Status.FAIL and "counters drained after the dropped" in v.detail()


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
            fl("queued0", 0.02, None, status=None),
            fl("queued1", 0.03, None, status=None),
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
        [fl("cold", 0.0, None, status=None), *wave()],
        **wave_facts(**{"load_seen": True, "first_finished": False, "left_during_load": True, **extra}),
    )


def test_init_disconnect_passes_a_released_abandoned_load() -> None:
    assert run_judge("f4.init_disconnect", init()).status is Status.PASS


def test_init_disconnect_fails_an_abandoned_load_that_kept_its_lease() -> None:
    v = run_judge("f4.init_disconnect", init(drained=False))
    assert v.status is Status.FAIL and "released its lease" in v.detail()


def test_init_disconnect_is_pending_when_the_client_could_not_leave_during_the_load() -> None:
    v = run_judge("f4.init_disconnect", init(first_finished=True, left_during_load=False))
    assert v.status is Status.PENDING and "first load finished before the client could leave" in v.detail()


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
        waits=list(SEEN) + [{"what": "queued queued", "seen": True}],
        stop=info,
        drain_s=0.2,
        t_term=0.3,
        running=["occupant0", "occupant1"],
        queued="queued",
        stopped_line=True,
        **extra,
    )


def test_sigterm_inflight_passes_a_drained_graceful_exit() -> None:
    v = run_judge("f4.sigterm_inflight", sigterm())
    assert v.status is Status.PASS, v.detail()
    assert run_judge("f4.sigterm_inflight", sigterm(queued_status=200)).status is Status.PASS


def test_sigterm_inflight_fails_a_kill_or_a_nonzero_exit() -> None:
    killed = {"signal": "SIGTERM", "graceful": False, "killed": True, "grace_s": 5.0, "exit_code": -9}
    v = run_judge("f4.sigterm_inflight", sigterm(stop=killed))
    assert v.status is Status.FAIL and "exited by itself within 5 s" in v.detail() and "got -9" in v.detail()
    v = run_judge("f4.sigterm_inflight", sigterm(stop={"killed": False, "exit_code": 1}))
    assert v.status is Status.FAIL and "exit code 0 (got 1)" in v.detail()


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


def stalled(killed: bool, exit_code: int | None, drain_s: float) -> dict[str, Any]:
    return facts(
        [],
        bound_s=1.5,
        drain_s=drain_s,
        t_term=0.25,
        sockets=["stalled header", "stalled body"],
        stop={"signal": "SIGTERM", "killed": killed, "exit_code": exit_code, "grace_s": 1.5},
    )


def test_stalled_socket_io_passes_an_exit_that_cancelled_socket_io() -> None:
    v = run_judge("f4.stalled_socket_io", stalled(False, 0, 0.04))
    assert v.status is Status.PASS and "(killed=False, exit=0, 0.04 s)" in v.detail()


def test_stalled_socket_io_fails_a_listener_that_joined_the_stalled_connection() -> None:
    v = run_judge("f4.stalled_socket_io", stalled(True, -9, 1.52))
    assert v.status is Status.FAIL and "killed=True, exit=-9, 1.52 s" in v.detail()
    assert run_judge("f4.stalled_socket_io", stalled(False, 2, 0.1)).status is Status.FAIL
