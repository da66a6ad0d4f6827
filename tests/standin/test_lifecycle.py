"""Loading, unloading, reconfiguration, residency limits and the lifecycle faults."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from standin_harness import Launch, Standin, busy, model

SLOW_LOAD = {"load_ms": 500, "service_ms": 50}


def observer_lines(server: Standin) -> list[dict[str, Any]]:
    prefix = "[SLOT_VALIDATION] "
    return [json.loads(line[len(prefix) :]) for line in server.stderr().splitlines() if line.startswith(prefix)]


def test_concurrent_first_requests_share_one_initializer(launch: Launch) -> None:
    server = launch(
        [model("m", slots=3, knobs={"load_ms": 400, "service_ms": 50})], env={"AUDIOCPP_SLOT_VALIDATION_OBSERVER": "1"}
    )
    started = time.monotonic()
    calls = [busy(server, "m", f"first {i}") for i in range(3)]
    loading = server.wait_for(lambda m: m["m"]["active_slots"] == 3)["m"]
    assert (loading["loaded"], loading["max_parallel_slots"]) == (False, None)
    assert all(c.result(10).response.status_code == 200 for c in calls)
    assert time.monotonic() - started < 0.4 * 2  # one load, not three in a row
    lines = observer_lines(server)
    assert sorted(line["slot"] for line in lines) == [0, 1, 2]
    sessions = {line["slot"]: line["session"] for line in lines}
    assert len(set(sessions.values())) == 3
    assert server.run("m", {"text": "again"}).status_code == 200
    assert observer_lines(server)[-1]["session"] == sessions[0]  # the published pool is reused


@pytest.mark.parametrize("fault", [None, "unload_skips_load"])
def test_unload_waits_for_a_first_load(launch: Launch, fault: str | None) -> None:
    server = launch([model("m", knobs=SLOW_LOAD)], faults=[fault] if fault else [])
    request = busy(server, "m", "cold")
    server.wait_for(lambda m: m["m"]["active_slots"] == 1 and not m["m"]["loaded"])
    started = time.monotonic()
    unload = server.post("/v1/tasks/unload_models", {"model_ids": ["m"]})
    elapsed = time.monotonic() - started
    assert unload.json() == {"unloaded": ["m"], "not_found": []}
    assert request.result(10).response.status_code == 200
    final = server.models()["m"]
    if fault is None:
        assert elapsed > 0.3 and final["loaded"] is False
    else:
        assert elapsed < 0.3 and final["loaded"] is True


def test_legacy_bulk_unload_skips_an_unpublished_load(launch: Launch) -> None:
    server = launch([model("m", knobs=SLOW_LOAD)], parallel=False)
    request = busy(server, "m", "cold")
    time.sleep(0.15)
    started = time.monotonic()
    assert server.post("/v1/tasks/unload_all_models").json() == {"unloaded": []}
    assert time.monotonic() - started < 0.3
    assert request.result(10).response.status_code == 200
    assert server.models()["m"]["loaded"] is True


@pytest.mark.parametrize("fault", [None, "bulk_waits_unpublished"])
def test_bulk_unload_frees_ready_idle_models_first(launch: Launch, fault: str | None) -> None:
    server = launch(
        [model("slow", knobs={"load_ms": 700}), model("keeper", lazy=False)], faults=[fault] if fault else []
    )
    request = busy(server, "slow", "cold")
    server.wait_for(lambda m: m["slow"]["active_slots"] == 1)
    unload = server.submit(lambda: server.post("/v1/tasks/unload_models", {"model_ids": ["slow", "keeper"]}))
    time.sleep(0.25)
    keeper_freed_early = server.models()["keeper"]["loaded"] is False
    body = unload.result(10).response.json()
    assert request.result(10).response.status_code == 200
    if fault is None:
        assert keeper_freed_early and body["unloaded"] == ["keeper", "slow"]
    else:
        assert not keeper_freed_early and body["unloaded"] == ["slow", "keeper"]


def test_max_loaded_models_evicts_the_least_recently_used(launch: Launch) -> None:
    server = launch([model("a"), model("b", knobs={"service_ms": 400}), model("c")], max_loaded_models=1)
    assert server.run("a", {"text": "x"}).status_code == 200
    assert server.run("b", {"text": "x"}).status_code == 200
    assert [m["loaded"] for m in server.models().values()] == [False, True, False]
    holder = busy(server, "b", "hold")
    server.wait_for(lambda m: m["b"]["active_slots"] == 1)
    refused = server.run("c", {"text": "x"})
    assert (refused.status_code, refused.json()["error"]) == (
        503,
        {
            "message": "cannot load model 'c': max_loaded_models=1 and every loaded model is busy; retry later",
            "type": "server_busy",
        },
    )
    assert holder.result(10).response.status_code == 200
    assert server.models()["c"]["active_slots"] == 0


@pytest.mark.parametrize(("fault", "limit"), [(None, 1), ("retiring_resident", 1), (None, 2), ("retiring_resident", 2)])
def test_a_retiring_model_no_longer_counts_as_resident(launch: Launch, fault: str | None, limit: int) -> None:
    models = [model("retiring", lazy=False, knobs={"teardown_ms": 700}), model("incoming")]
    if limit == 2:
        models.insert(1, model("keeper", lazy=False))
    server = launch(models, max_loaded_models=limit, args=["--ui-management"], faults=[fault] if fault else [])
    unload = server.submit(lambda: server.post("/v1/models/unload", {"id": "retiring"}))
    server.wait_for(lambda m: m["retiring"]["loaded"] is False)
    incoming = server.run("incoming", {"text": "x"})
    keeper_loaded = server.models().get("keeper", {"loaded": True})["loaded"]
    assert unload.result(10).response.status_code == 200
    if fault is None:
        assert incoming.status_code == 200 and keeper_loaded
    elif limit == 1:
        assert incoming.status_code == 503
        assert "max_loaded_models=1" in incoming.json()["error"]["message"]
    else:
        assert incoming.status_code == 200 and not keeper_loaded


@pytest.mark.parametrize("fault", [None, "registry_convoy"])
def test_waiting_manager_does_not_block_unrelated_work(launch: Launch, fault: str | None) -> None:
    server = launch(
        [model("busy", lazy=False, knobs={"service_ms": 800}), model("other", lazy=False)],
        args=["--ui-management"],
        faults=[fault] if fault else [],
    )
    holder = busy(server, "busy", "hold")
    server.wait_for(lambda m: m["busy"]["active_slots"] == 1)
    unload = server.submit(lambda: server.post("/v1/models/unload", {"id": "busy"}))
    time.sleep(0.1)
    started = time.monotonic()
    assert server.get("/health").status_code == 200
    assert server.run("other", {"text": "x"}).status_code == 200
    elapsed = time.monotonic() - started
    assert unload.result(10).response.status_code == holder.result(10).response.status_code == 200
    if fault is None:
        assert elapsed < 0.4
    else:
        assert elapsed > 0.5


def test_reconfiguration_beyond_capacity_keeps_the_old_pool(launch: Launch, tmp_path: Path) -> None:
    server = launch([model("m", slots=2, lazy=False, family="fam")], args=["--ui-management"])
    body = {
        "id": "m",
        "family": "fam",
        "path": str(tmp_path / "model.bin"),
        "task": "tts",
        "load_options": {"service_ms": 40, "load_ms": 20, "model_mib": 1, "session_mib": 1},
    }
    refused = server.post("/v1/models/load", {**body, "slots": 5})
    assert (refused.status_code, refused.json()["error"]) == (
        400,
        {
            "message": "model 'fam' does not support the requested slots for this backend/task/mode (capacity=4)",
            "type": "invalid_request_error",
        },
    )
    kept = server.models()["m"]
    assert (kept["slots"], kept["loaded"], kept["max_parallel_slots"]) == (2, True, 4)
    for slots in (1, 2, 1, 4, 1):
        response = server.post("/v1/models/load", {**body, "slots": slots})
        assert response.json() == {"id": "m", "loaded": True, "reconfigured": True}
        assert server.models()["m"]["slots"] == slots
    again = server.post("/v1/models/load", {**body, "slots": 1})
    assert again.json() == {"id": "m", "loaded": True, "reconfigured": False}
    assert server.run("m", {"text": "after resize"}).status_code == 200


def test_registration_publishes_and_failed_loads_stay_registered(launch: Launch, tmp_path: Path) -> None:
    server = launch([model("m")], args=["--ui-management"])
    path = str(tmp_path / "model.bin")
    added = server.post("/v1/models/load", {"id": "n", "family": "fam", "path": path, "slots": 2})
    assert added.json() == {"id": "n", "loaded": True, "reconfigured": False}
    assert server.get("/health").json()["models"] == 2
    too_many = server.post("/v1/models/load", {"id": "big", "family": "bigfam", "path": path, "slots": 5})
    assert too_many.status_code == 500
    assert "(capacity=4)" in too_many.json()["error"]["message"]
    missing = server.post("/v1/models/load", {"id": "gone", "family": "f", "path": str(tmp_path / "absent.bin")})
    assert missing.status_code == 500 and "absent.bin" in missing.json()["error"]["message"]
    models = server.models()
    assert (models["big"]["loaded"], models["gone"]["loaded"]) == (False, False)
    assert server.post("/v1/models/load", {"id": "x", "path": path}).json()["error"]["message"] == (
        "missing required json key: family"
    )


def test_lazy_load_of_a_missing_or_empty_model_file_fails(launch: Launch, tmp_path: Path) -> None:
    (tmp_path / "empty.bin").write_bytes(b"")
    server = launch([model("gone", path="absent.bin"), model("empty", path="empty.bin")])
    for model_id, name in (("gone", "absent.bin"), ("empty", "empty.bin")):
        response = server.run(model_id, {"text": "x"})
        assert response.status_code == 500
        assert response.json()["error"]["type"] == "server_error"
        assert str(tmp_path / name) in response.json()["error"]["message"]
        assert server.models()[model_id]["active_slots"] == 0


@pytest.mark.parametrize("fault", [None, "lease_binding"])
def test_an_unload_is_not_undone_by_an_older_waiter(launch: Launch, fault: str | None) -> None:
    # teardown time keeps the unload's reply after the reply of the request it waited for
    server = launch(
        [model("m", slots=1, lazy=False, knobs={"service_ms": 300, "teardown_ms": 150})],
        args=["--ui-management"],
        faults=[fault] if fault else [],
    )
    busy(server, "m", "running")
    server.wait_for(lambda m: m["m"]["active_slots"] == 1)
    older = busy(server, "m", "older queued")
    server.wait_for(lambda m: m["m"]["queued_requests"] == 1)
    unload = server.submit(lambda: server.post("/v1/models/unload", {"id": "m"}))
    assert older.result(10).response.status_code == unload.result(10).response.status_code == 200
    ended_loaded = server.models()["m"]["loaded"]
    if fault is None:
        assert older.result().finished < unload.result().finished and not ended_loaded
    else:
        assert unload.result().finished < older.result().finished and ended_loaded


def test_first_load_fails_fault_then_retry_succeeds(launch: Launch) -> None:
    server = launch([model("m")], faults=["first_load_fails"])
    failed = server.run("m", {"text": "x"})
    assert (failed.status_code, failed.json()["error"]) == (
        500,
        {"message": "failed to load model 'm': injected first-load failure", "type": "server_error"},
    )
    state = server.models()["m"]
    assert (state["loaded"], state["active_slots"]) == (False, 0)
    assert server.run("m", {"text": "x"}).status_code == 200
    assert server.models()["m"]["loaded"] is True


def test_idle_unload_retires_resident_models(launch: Launch) -> None:
    server = launch([model("m")], idle_unload_ms=100)
    assert server.run("m", {"text": "x"}).status_code == 200
    server.wait_for(lambda m: m["m"]["loaded"] is False, timeout=3.0)
    # The stand-in clears the model's state before it logs the retirement: wait for the line.
    server.wait_for_log("[server] idle 100 ms: unloaded 1 model(s)", timeout=3.0)


@pytest.mark.parametrize("fault", [None, "lease_binding"])
def test_requests_queued_before_a_reconfiguration_use_the_old_config(
    launch: Launch, fault: str | None, tmp_path: Path
) -> None:
    knobs = {"service_ms": 300, "load_ms": 20, "model_mib": 1, "session_mib": 1}
    server = launch(
        [model("m", slots=1, lazy=False, family="fam", knobs=knobs)],
        args=["--ui-management"],
        faults=[fault] if fault else [],
    )
    request = {"text": "queued before the barrier", "seed": 4}
    old_reference = server.run("m", request).json()["audio"]
    busy(server, "m", "running")
    server.wait_for(lambda m: m["m"]["active_slots"] == 1)
    older = server.submit(lambda: server.run("m", request))
    server.wait_for(lambda m: m["m"]["queued_requests"] == 1)
    reconfigure = server.post(
        "/v1/models/load",
        {
            "id": "m",
            "family": "fam",
            "path": str(tmp_path / "model.bin"),
            "task": "tts",
            "load_options": knobs,
            "session_options": {"style": "new"},
        },
    )
    assert reconfigure.json() == {"id": "m", "loaded": True, "reconfigured": True}
    older_audio = older.result(10).response.json()["audio"]
    new_reference = server.run("m", request).json()["audio"]
    assert new_reference != old_reference
    assert older_audio == (old_reference if fault is None else new_reference)


def test_load_failure_inside_a_stream_is_an_sse_error_event(launch: Launch) -> None:
    server = launch([model("s", mode="streaming")], faults=["first_load_fails"])
    response = server.post("/v1/audio/speech", {"model": "s", "input": "x", "stream": True})
    assert response.status_code == 200
    assert response.text == (
        'data: {"type":"error","error":{"message":"failed to load model \'s\': injected first-load failure"}}\n\n'
    )
    assert server.models()["s"]["active_slots"] == 0
