"""Units of the campaign runner that decide how long to wait and what to repeat: the
status poller's freshness, the mixed-wave schedule, the repeat decision, the drain and
ordered-admission waits on a server without slot counters, progress totals, overhead."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from parval.gates.campaign_cost import campaign_overhead, describe_overhead
from parval.plan.load import NamedRequest
from parval.runners import phases as ph
from parval.runners.start import Start
from parval.server.admission import ordered_admission
from parval.server.client import HTTP_ERROR, OK, Reply
from parval.server.status_poller import StatusPoller, StatusSample
from parval.ui.state import ProgressState


def sample(active: int | None, *, t_sent: float | None = None, loaded: bool | None = True) -> StatusSample:
    now = time.monotonic()
    return StatusSample(
        t=now,
        ok=True,
        active=active,
        queued=0 if active is not None else None,
        loaded=loaded,
        present=True,
        t_sent=now if t_sent is None else t_sent,
    )


# -- StatusPoller.wait_for: only samples polled after the call -----------------------------


def test_wait_for_ignores_a_sample_from_before_the_call() -> None:
    async def main() -> tuple[StatusSample | None, StatusSample | None]:
        p = StatusPoller("http://127.0.0.1:9", "m", 0.01)
        p.add(sample(2))  # satisfies the predicate, but was polled before the call
        stale = await p.wait_for(lambda s: s.active == 2, 0.05)
        fresh_one: list[StatusSample] = []

        async def later() -> None:
            await anyio.sleep(0.01)
            fresh_one.append(sample(2))
            p.add(fresh_one[0])

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            got = await p.wait_for(lambda s: s.active == 2, 2.0)
        assert got is fresh_one[0]
        return stale, got

    stale, got = anyio.run(main)
    assert stale is None and got is not None


def test_wait_for_ignores_a_poll_sent_before_the_call_that_lands_after() -> None:
    async def main() -> StatusSample | None:
        p = StatusPoller("http://127.0.0.1:9", "m", 0.01)
        sent_before = time.monotonic()

        async def later() -> None:
            await anyio.sleep(0.01)
            p.add(sample(0, t_sent=sent_before))  # in flight when the caller asked

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            return await p.wait_for(lambda s: s.active == 0, 0.1)

    assert anyio.run(main) is None


class _CountingPoller(StatusPoller):
    """A poller whose polls are samples made up in-process (no server)."""

    async def poll_once(self, client: object) -> StatusSample:
        s = sample(0)
        self.add(s)
        return s


def test_wait_for_asks_for_a_poll_instead_of_sitting_out_the_interval() -> None:
    async def main() -> tuple[StatusSample | None, int]:
        p = _CountingPoller("http://127.0.0.1:9", "m", 600.0)  # next scheduled poll in 10 minutes
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.run)
            first = await p.wait_for(lambda s: True, 5.0)
            got = await p.wait_for(lambda s: s.active == 0, 5.0)
            tg.cancel_scope.cancel()
        assert first is not None
        return got, len(p.samples)

    got, polls = anyio.run(main)
    assert got is not None and polls == 2


# -- mixed waves: every pair admitted together is also admitted reversed -------------------

DEMO = [NamedRequest(n, n, {"text": n}) for n in ("base", "long_text", "other_seed", "few_tokens")]


@pytest.mark.parametrize(("n", "waves"), [(2, 4), (2, 10), (4, 10), (3, 6)])
def test_mixed_waves_admit_every_pair_in_both_orders(n: int, waves: int) -> None:
    orders = [[r.name for r in ph.mixed_order(DEMO, n, m)] for m in range(waves)]
    pairs = {(o[i], o[j]) for o in orders for i, j in itertools.combinations(range(n), 2) if o[i] != o[j]}
    assert pairs
    missing = {p for p in pairs if (p[1], p[0]) not in pairs}
    assert not missing, (orders, missing)
    # the odd waves are the reversed ones (recorded as mode "reversed")
    assert all(orders[m] == orders[m - 1][::-1] for m in range(1, waves, 2))


def test_mixed_waves_still_use_every_request() -> None:
    assert {r.name for m in range(4) for r in ph.mixed_order(DEMO, 2, m)} == {r.name for r in DEMO}
    assert [ph.mixed_order(DEMO, 1, m)[0].name for m in range(4)] == [r.name for r in DEMO]


# -- the repeat decision -------------------------------------------------------------------


def fake_start(samples: list[StatusSample]) -> Start:
    poller = StatusPoller("http://127.0.0.1:9", "m", 0.005)
    for s in samples:
        poller.add(s)
    settings = SimpleNamespace(poll_interval_s=0.005)
    st = Start(
        "count2-s1",
        "candidate",
        7,
        None,
        None,
        poller,
        None,
        None,
        None,  # type: ignore[arg-type]
        settings,
        2,
        False,
    )  # type: ignore[arg-type]
    return st


def wave(max_active: int | None, flight: dict[str, Any] | None) -> dict[str, Any]:
    return {"phase": "warm_wave", "wave": 1, "status": {"max_active_loaded": max_active}, "all_in_flight": flight}


def test_no_repeat_when_the_server_publishes_no_counters() -> None:
    st = fake_start([sample(None)])
    decision = ph.repeat_reason(st, wave(None, {"ms": 40.0, "polls": 0, "max_active": None}), 2)
    assert decision is not None and decision[0] is False
    assert "publishes no slot counters" in decision[1]


def test_no_repeat_when_counters_stayed_below_n_with_all_in_flight() -> None:
    st = fake_start([sample(0)])
    decision = ph.repeat_reason(st, wave(1, {"ms": 30.0, "polls": 5, "max_active": 1}), 2)
    assert decision is not None and decision[0] is False
    assert "stayed at 1 in 5 polls" in decision[1]


def test_repeat_when_the_client_overlap_was_too_short_to_see() -> None:
    st = fake_start([sample(0)])
    decision = ph.repeat_reason(st, wave(1, {"ms": 0.4, "polls": 0, "max_active": None}), 2)
    assert decision is not None and decision[0] is True


def test_nothing_to_decide_when_concurrency_was_shown_or_n_is_one() -> None:
    st = fake_start([sample(0)])
    assert ph.repeat_reason(st, wave(2, {"ms": 30.0, "polls": 5, "max_active": 2}), 2) is None
    assert ph.repeat_reason(st, wave(None, None), 1) is None


def test_decide_repeat_records_the_reason_and_stops_after_the_last_attempt() -> None:
    st = fake_start([sample(0)])
    logged: list[dict[str, Any]] = []
    c = SimpleNamespace(log=SimpleNamespace(write=lambda event: logged.append(dict(event))))
    short = wave(1, {"ms": 0.4, "polls": 0, "max_active": None})
    assert ph.decide_repeat(c, st, short, 2, 0) is True  # type: ignore[arg-type]
    assert ph.decide_repeat(c, st, short, 2, ph.WAVE_ATTEMPTS - 1) is False  # type: ignore[arg-type]
    assert [e["repeat"] for e in logged] == [True, False]
    assert all(e["kind"] == "wave_repeat" and e["reason"] for e in logged)


def test_all_in_flight_counts_only_polls_inside_the_window() -> None:
    st = fake_start([])
    st.t0 = time.monotonic()
    t = time.monotonic()
    replies = [
        Reply("POST", "/v1/tasks/run", 200, b"{}", t, t + 0.05, OK),
        Reply("POST", "/v1/tasks/run", 200, b"{}", t + 0.01, t + 0.08, OK),
    ]
    st.poller.add(StatusSample(t=t + 0.02, ok=True, active=1, queued=1, loaded=True, present=True, t_sent=t + 0.015))
    st.poller.add(StatusSample(t=t + 0.03, ok=True, active=1, queued=1, loaded=True, present=True, t_sent=t + 0.025))
    # a failed poll and one whose model entry lacked the counters, both inside the window and
    # carrying stale numbers: neither shows anything
    st.poller.add(StatusSample(t=t + 0.035, ok=False, active=2, queued=0, loaded=True, present=True, t_sent=t + 0.032))
    st.poller.add(StatusSample(t=t + 0.04, ok=True, active=2, queued=0, loaded=True, present=False, t_sent=t + 0.036))
    st.poller.add(StatusSample(t=t + 0.06, ok=True, active=2, queued=0, loaded=True, present=True, t_sent=t + 0.055))
    flight = st.all_in_flight(replies)
    assert flight is not None
    assert flight["polls"] == 2 and flight["max_active"] == 1 and 39 < flight["ms"] < 41


# -- waits on a server without counters ----------------------------------------------------


def test_drained_does_not_wait_without_counters_and_waits_with_them() -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        bare = fake_start([sample(None)])
        with anyio.fail_after(5):
            none = await bare.drained(timeout_s=30.0)  # would block 30 s if it waited
        counted = fake_start([sample(1)])

        async def later() -> None:
            await anyio.sleep(0.01)
            counted.poller.add(sample(0))

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            done = await counted.drained(timeout_s=30.0)
        return none, done

    none, done = anyio.run(main)
    assert none["ok"] is False and none["fields_present"] is False and none["waited"] is False
    assert done["ok"] is True and done["fields_present"] is True


class _NoWaitPoller(StatusPoller):
    async def wait_for(self, predicate: Any, timeout_s: float) -> StatusSample | None:
        raise AssertionError("waited for counters the server does not publish")


class _FakeClient:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def post(self, path: str, body: Any, timeout_s: float | None = None) -> Reply:
        self.sent.append(body)
        t = time.monotonic()
        await anyio.sleep(0.005)
        return Reply("POST", path, 200, b"{}", t, time.monotonic(), OK)


def test_ordered_admission_without_counters_sends_in_order_and_waits_for_nothing() -> None:
    client = _FakeClient()
    poller = _NoWaitPoller("http://127.0.0.1:9", "m", 0.01)

    async def main() -> tuple[list[Reply], dict[str, Any]]:
        return await ordered_admission(
            client,
            poller,
            "/v1/tasks/run",
            ["a", "b", "c"],  # type: ignore[arg-type]
            admit_timeout_s=2.0,
            observe=False,
        )

    replies, info = anyio.run(main)
    assert client.sent == ["a", "b", "c"] and len(replies) == 3
    assert info["ordered_ok"] is False and info["observed"] is False


def test_admission_wait_is_bounded_by_the_measured_service_time() -> None:
    st = fake_start([sample(0)])
    assert st.admit_timeout_s(2.0) == 2.0  # nothing measured yet: the ceiling
    st.latencies.extend([0.030, 0.025, 0.040])
    bound = st.admit_timeout_s(2.0)
    assert bound == pytest.approx(4 * 0.025 + 4 * 0.005)
    st.latencies[:] = [5.0]
    assert st.admit_timeout_s(2.0) == 2.0


# -- progress totals and the overhead figure -----------------------------------------------


def test_repeated_waves_are_counted_in_the_progress_totals() -> None:
    state = ProgressState()
    state.planned = 100
    state.update({"kind": "wave_repeat", "n": 2, "repeat": True})
    state.update({"kind": "wave_repeat", "n": 2, "repeat": False})
    assert state.planned == 102


def test_campaign_overhead_from_events() -> None:
    events = [
        {"kind": "server_ready", "ready_s": 0.5},
        {"kind": "request", "t_send": 1.0, "t_done": 1.25},
        {"kind": "request", "t_send": 1.0, "t_done": 1.5},
        {"kind": "server_ready", "ready_s": 0.25},
        {"kind": "wave_repeat", "repeat": True},
        {"kind": "wave_repeat", "repeat": False},
        {"kind": "campaign_end", "elapsed_s": 3.0},
    ]
    o = campaign_overhead(events)
    assert o is not None
    assert o["server_s"] == 1.5 and o["overhead_s"] == 1.5 and o["ratio"] == 2.0
    assert o["starts"] == 2 and o["requests"] == 2 and o["repeated_waves"] == 1
    assert o["per_start_s"] == 0.75
    assert "wall/server 2.0x" in describe_overhead(o)
    assert campaign_overhead(events[:-1]) is None


def test_overhead_beyond_the_per_start_cost() -> None:
    from parval.gates.campaign_cost import overhead_beyond_starts_pct

    o = {"overhead_s": 3.0, "starts": 2, "server_s": 10.0}
    assert overhead_beyond_starts_pct(o, 1.0) == 10.0  # 3 s - 2 x 1 s = 1 s of 10 s
    assert overhead_beyond_starts_pct(o, 2.0) == 0.0
    assert overhead_beyond_starts_pct(o, None) is None


class _SlowClient(_FakeClient):
    async def post(self, path: str, body: Any, timeout_s: float | None = None) -> Reply:
        self.sent.append(body)
        t = time.monotonic()
        await anyio.sleep(0.3)
        return Reply("POST", path, 200, b"{}", t, time.monotonic(), OK)


def _ordered_wave(client: _FakeClient, leases: int, admit_timeout_s: float) -> tuple[list[Reply], dict[str, Any]]:
    """An ordered wave of three requests to `client`, beside a server whose status always
    shows `leases` leases (polled every 5 ms)."""
    poller = StatusPoller("http://127.0.0.1:9", "m", 0.005)

    async def main() -> tuple[list[Reply], dict[str, Any]]:
        async def status() -> None:
            while True:
                poller.add(sample(leases))
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(status)
            out = await ordered_admission(
                client,
                poller,
                "/v1/tasks/run",
                ["a", "b", "c"],  # type: ignore[arg-type]
                admit_timeout_s=admit_timeout_s,
            )
            tg.cancel_scope.cancel()
        return out

    return anyio.run(main)


def test_a_server_that_keeps_one_lease_stalls_the_wave_once_and_is_not_repeated() -> None:
    client = _SlowClient()
    replies, info = _ordered_wave(client, 1, 0.05)  # a server that never holds more than one lease
    assert client.sent == ["a", "b", "c"] and len(replies) == 3
    stalled = info["stalled"]
    assert stalled["request"] == 1 and stalled["outstanding"] == 2 and stalled["max_active"] == 1
    assert len(info["admit_waits_ms"]) == 2  # request 0 and 1 waited; request 2 did not
    st = fake_start([sample(1)])
    event = {
        "phase": "mixed_wave",
        "wave": 0,
        "status": {"max_active_loaded": 1},
        "all_in_flight": {"ms": 0.0, "polls": 0, "max_active": None},
        "admission": info,
    }
    decision = ph.repeat_reason(st, event, 3)
    assert decision is not None and decision[0] is False and "stayed at 1" in decision[1]


def test_wait_status_returns_at_once_for_a_field_never_published() -> None:
    async def main() -> tuple[StatusSample | None, StatusSample | None]:
        bare = fake_start([sample(None, loaded=None)])
        with anyio.fail_after(5):
            none = await bare.wait_status(lambda s: s.loaded is False, 30.0, needs=("loaded",))
        full = fake_start([sample(1, loaded=True)])

        async def later() -> None:
            await anyio.sleep(0.01)
            full.poller.add(sample(0, loaded=False))

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            got = await full.wait_status(lambda s: s.loaded is False, 30.0, needs=("loaded",))
        return none, got

    none, got = anyio.run(main)
    assert none is None and got is not None and got.loaded is False


class _SerialClient(_FakeClient):
    """Like a server that runs one request at a time: the first ends soon, the rest later."""

    async def post(self, path: str, body: Any, timeout_s: float | None = None) -> Reply:
        self.sent.append(body)
        t = time.monotonic()
        await anyio.sleep(0.04 if body == "a" else 0.3)
        return Reply("POST", path, 200, b"{}", t, time.monotonic(), OK)


def test_a_stall_is_seen_even_when_the_first_request_ends_during_the_wait() -> None:
    _, info = _ordered_wave(_SerialClient(), 1, 0.15)
    assert info["stalled"]["request"] == 1 and info["stalled"]["polls"] >= 2
    assert len(info["admit_waits_ms"]) == 2


def test_counts_left_out_by_fail_fast_leave_the_progress_totals(tmp_path: Path) -> None:
    from parval.plan.load import load_plan
    from tests.conftest import write_plan

    state = ProgressState()
    state.plan_raw = load_plan(write_plan(tmp_path)).raw  # as plan.json holds it
    state.planned = 100
    # count 2 start of the small plan: 2 x (cold + 1 warm + 2 mixed + 3 reload) + 1 serial
    state.update({"kind": "unit_skipped", "unit": "count2-s1", "not_run": True, "reason": "x"})
    assert state.planned == 100 - 15 and state.units_kept == 0
    # a unit a resumed run kept from before is not sent again either: the totals count what is left
    state.update({"kind": "unit_skipped", "unit": "count2-s2", "reason": "completed before resume"})
    assert state.planned == 100 - 30 and state.units_kept == 1


class _RefusingClient(_FakeClient):
    """Like a server whose memory guard refuses the load: every request answered 503 at once."""

    async def post(self, path: str, body: Any, timeout_s: float | None = None) -> Reply:
        self.sent.append(body)
        t = time.monotonic()
        await anyio.sleep(0.001)
        return Reply(
            "POST", path, 503, b'{"error": {"message": "insufficient memory"}}', t, time.monotonic(), HTTP_ERROR
        )


def test_a_refused_request_is_not_waited_for() -> None:
    """A request answered with an error holds no slot: the next one goes out at once instead of
    after the whole admission timeout, and the admission reads unobserved (never ordered)."""
    client = _RefusingClient()
    _, info = _ordered_wave(client, 0, 30.0)  # no lease is ever held
    assert client.sent == ["a", "b", "c"]
    assert info["ordered_ok"] is False and "stalled" not in info
    # none waited out the 30 s timeout (a generous margin for a busy machine)
    assert len(info["admit_waits_ms"]) == 3 and max(info["admit_waits_ms"]) < 15_000, info
