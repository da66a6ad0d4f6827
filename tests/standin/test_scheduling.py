"""FIFO admission, counters, busy timeouts and the scheduling faults (parallel runtime)."""

from __future__ import annotations

import signal
import time

import pytest
from standin_harness import Launch, PeakWatcher, Standin, busy, model


def test_concurrent_requests_are_observed_and_counters_drain(launch: Launch) -> None:
    server = launch([model("m", slots=3, knobs={"service_ms": 400})])
    calls = [busy(server, "m", f"text {i}") for i in range(3)]
    seen = server.wait_for(lambda m: m["m"]["active_slots"] == 3)
    assert seen["m"]["queued_requests"] == 0
    assert all(c.result(10).response.status_code == 200 for c in calls)
    drained = server.models()["m"]
    assert (drained["active_slots"], drained["queued_requests"]) == (0, 0)
    assert (drained["loaded"], drained["max_parallel_slots"]) == (True, 4)


def test_extra_callers_queue_behind_the_slots(launch: Launch) -> None:
    server = launch([model("m", slots=2, knobs={"service_ms": 300})])
    calls = [busy(server, "m", f"t{i}") for i in range(4)]
    server.wait_for(lambda m: m["m"]["active_slots"] == 2 and m["m"]["queued_requests"] == 2)
    assert all(c.result(10).response.status_code == 200 for c in calls)


def _fifo_with_manager(server: Standin) -> dict[str, float]:
    """Two running, an older queued request, then an unload, then staggered later requests."""
    running = [busy(server, "m", f"run {i}") for i in range(2)]
    server.wait_for(lambda m: m["m"]["active_slots"] == 2)
    older = busy(server, "m", "older")
    server.wait_for(lambda m: m["m"]["queued_requests"] == 1)
    unload = server.submit(lambda: server.post("/v1/models/unload", {"id": "m"}))
    time.sleep(0.05)
    later = []
    for i in range(2):
        later.append(busy(server, "m", f"later {i}"))
        time.sleep(0.03)
    done = {
        "older": older.result(10),
        "unload": unload.result(10),
        **{f"later{i}": c.result(10) for i, c in enumerate(later)},
    }
    assert all(c.result(10).response.status_code == 200 for c in running)
    assert all(t.response.status_code == 200 for t in done.values())
    return {name: t.finished for name, t in done.items()}


def test_fifo_management_barrier_has_no_barging(launch: Launch) -> None:
    # teardown time keeps the unload's reply after the reply of the request it waited for
    server = launch(
        [model("m", slots=2, lazy=False, knobs={"service_ms": 250, "teardown_ms": 100})], args=["--ui-management"]
    )
    finished = _fifo_with_manager(server)
    assert finished["older"] < finished["unload"] < finished["later0"]
    assert finished["unload"] < finished["later1"]


def test_barging_fault_lets_later_requests_overtake_the_manager(launch: Launch) -> None:
    server = launch(
        [model("m", slots=2, lazy=False, knobs={"service_ms": 250, "teardown_ms": 100})],
        args=["--ui-management"],
        faults=["barging"],
    )
    finished = _fifo_with_manager(server)
    assert min(finished["later0"], finished["later1"]) < finished["unload"]


def test_request_only_queue_is_served_in_enqueue_order(launch: Launch) -> None:
    # The first request must hold the slot while the four others are queued one by one (each
    # seen queued before the next is sent): at 120 ms a busy machine (the suites run on every
    # core) let it finish first, and the queue drained before the count was seen.
    server = launch([model("m", slots=1, lazy=False, knobs={"service_ms": 1000})])
    first = busy(server, "m", "first")
    server.wait_for(lambda m: m["m"]["active_slots"] == 1)
    queued = []
    for i in range(4):
        queued.append(busy(server, "m", f"q{i}"))
        expected = i + 1
        server.wait_for(lambda m: m["m"]["queued_requests"] == expected)  # noqa: B023
    order = [c.result(10).finished for c in queued]
    assert first.result(10).finished < order[0]
    assert order == sorted(order)


def _overdue_probe(server: Standin) -> tuple[int, str, float]:
    running = [busy(server, "m", f"run {i}") for i in range(2)]
    server.wait_for(lambda m: m["m"]["active_slots"] == 2)
    time.sleep(0.05)
    manager = server.submit(lambda: server.post("/v1/tasks/unload_all_models"))
    time.sleep(0.05)
    assert not manager.done()
    started = time.monotonic()
    probe = server.run("m", {"text": "probe"}, busy_timeout_ms=15)
    elapsed = time.monotonic() - started
    assert manager.result(10).response.json() == {"unloaded": ["m"]}
    assert all(c.result(10).response.status_code == 200 for c in running)
    error = probe.json()["error"]
    assert error["type"] == "server_busy"
    return probe.status_code, error["message"], elapsed


def test_overdue_requests_fail_fast_while_a_manager_waits(launch: Launch) -> None:
    server = launch([model("m", slots=2, knobs={"service_ms": 600})])
    status, message, _ = _overdue_probe(server)
    assert (status, message) == (503, "model 'm': all active slots exceeded busy_timeout_ms")


def test_overdue_suppressed_fault_turns_fail_fast_into_a_timeout(launch: Launch) -> None:
    server = launch([model("m", slots=2, knobs={"service_ms": 600})], faults=["overdue_suppressed"])
    status, message, elapsed = _overdue_probe(server)
    assert (status, message) == (503, "model 'm': timed out waiting for a slot")
    assert elapsed >= 0.015


def test_one_healthy_slot_permits_waiting(launch: Launch) -> None:
    server = launch([model("m", slots=2, lazy=False, knobs={"service_ms": 500})])
    old = busy(server, "m", "old")
    time.sleep(0.2)
    fresh = busy(server, "m", "fresh")
    server.wait_for(lambda m: m["m"]["active_slots"] == 2)
    probe = server.run("m", {"text": "probe"}, busy_timeout_ms=100)
    assert probe.json()["error"]["message"] == "model 'm': timed out waiting for a slot"
    assert old.result(5).response.status_code == fresh.result(5).response.status_code == 200


def test_timeout_zero_is_unbounded_and_requests_are_clamped(launch: Launch) -> None:
    server = launch(
        [
            model("m", slots=1, lazy=False, knobs={"service_ms": 300}),
            model("c", slots=1, lazy=False, busy_timeout_ms=80, knobs={"service_ms": 300}),
        ],
        args=["--busy-timeout-ms", "0"],
    )
    for model_id in ("m", "c"):
        busy(server, model_id, "holder")
    server.wait_for(lambda m: m["m"]["active_slots"] == m["c"]["active_slots"] == 1)
    waits = server.submit(lambda: server.run("m", {"text": "waits"}))  # T = 0: no bound
    # A bounded request is rejected by its bound either way: it waited the bound out, or
    # the holder had already outlived the bound when it came (a busy machine's late send).
    bounded = server.run("m", {"text": "r"}, busy_timeout_ms=50)  # C = 0 -> R
    assert bounded.status_code == 503
    assert bounded.json()["error"]["message"] in (
        "model 'm': timed out waiting for a slot",
        "model 'm': all active slots exceeded busy_timeout_ms",
    )
    clamped = server.run("c", {"text": "r"}, busy_timeout_ms=0)  # R = 0 -> model ceiling 80
    assert clamped.status_code == 503
    assert clamped.json()["error"]["message"] in (
        "model 'c': timed out waiting for a slot",
        "model 'c': all active slots exceeded busy_timeout_ms",
    )
    assert waits.result(10).response.status_code == 200  # the unbounded one waited the holder out


def test_manager_admission_texts(launch: Launch) -> None:
    server = launch(
        [model("m", slots=1, lazy=False, busy_timeout_ms=100, knobs={"service_ms": 500})], args=["--ui-management"]
    )
    busy(server, "m", "holder")
    server.wait_for(lambda m: m["m"]["active_slots"] == 1)
    waited = server.post("/v1/models/unload", {"id": "m"})
    assert waited.json()["error"]["message"] == "model 'm': timed out waiting for a slot"
    overdue = server.post("/v1/models/unload", {"id": "m"})
    assert (overdue.status_code, overdue.json()["error"]["message"]) == (
        503,
        "model 'm': active slot exceeded busy_timeout_ms",
    )


def test_fake_concurrency_fault_runs_one_at_a_time(launch: Launch) -> None:
    server = launch([model("m", slots=3, lazy=False, knobs={"service_ms": 150})], faults=["fake_concurrency"])
    with PeakWatcher(server, "m") as watcher:
        calls = [busy(server, "m", f"t{i}") for i in range(3)]
        assert all(c.result(10).response.status_code == 200 for c in calls)
    assert watcher.max_active == 1 and watcher.max_queued >= 1


def test_counters_no_drain_fault_reports_a_stuck_slot(launch: Launch) -> None:
    server = launch([model("m", slots=2, knobs={"service_ms": 150})], faults=["counters_no_drain"])
    assert server.run("m", {"text": "solo"}).status_code == 200
    assert server.models()["m"]["active_slots"] == 0  # one at a time drains fine
    calls = [busy(server, "m", f"t{i}") for i in range(2)]
    assert all(c.result(10).response.status_code == 200 for c in calls)
    assert server.models()["m"]["active_slots"] == 1


def test_crash_at_4_fault_aborts_on_the_fourth_active_request(launch: Launch) -> None:
    server = launch([model("m", slots=4, knobs={"service_ms": 300})], faults=["crash_at_4"])
    three = [busy(server, "m", f"t{i}") for i in range(3)]
    assert all(c.result(10).response.status_code == 200 for c in three)
    assert server.proc.poll() is None
    fourth = [busy(server, "m", f"u{i}") for i in range(4)]
    assert server.proc.wait(10) == -signal.SIGABRT
    assert "fatal: crash with 4 active requests" in server.stderr()
    for call in fourth:
        with pytest.raises(Exception):  # noqa: B017 (connections die with the process)
            call.result(10).response.raise_for_status()
