"""Routes, JSON shapes, status codes and error texts on both runtimes."""

from __future__ import annotations

import time

import httpx
import pytest
from standin_harness import Launch, Standin, model

PARALLEL_FIELDS = [
    "id",
    "object",
    "owned_by",
    "family",
    "task",
    "mode",
    "slots",
    "active_slots",
    "queued_requests",
    "max_parallel_slots",
    "loaded",
    "path",
]
LEGACY_FIELDS = ["id", "object", "owned_by", "family", "task", "mode", "loaded", "path"]
SLOTS_REQUIRE_FLAG = "slots requires --parallel-jobs at server startup"
SLOTS_RANGE = "model slots must be an integer between 1 and 16"


@pytest.fixture(scope="module")
def parallel(module_launch: Launch) -> Standin:
    return module_launch(
        [model("m", slots=2), model("a", task="asr")], args=["--ui-management"], max_request_body_bytes=4096
    )


@pytest.fixture(scope="module")
def legacy(module_launch: Launch) -> Standin:
    return module_launch([model("m")], parallel=False, args=["--ui-management"])


@pytest.fixture(scope="module")
def unmanaged(module_launch: Launch) -> Standin:
    return module_launch([model("m")])


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["type"], error["message"]


def test_health_shape(parallel: Standin) -> None:
    response = parallel.get("/health")
    assert response.json() == {"status": "ok", "backend": "cuda", "models": 2, "ui": False, "ui_management": True}
    assert response.headers["connection"] == "close"
    assert response.headers["content-length"] == str(len(response.content))
    assert response.headers["content-type"] == "application/json"


def test_models_shape_parallel_and_legacy(parallel: Standin, legacy: Standin) -> None:
    body = parallel.get("/v1/models").json()
    assert body["object"] == "list"
    first = body["data"][0]
    assert list(first) == PARALLEL_FIELDS
    assert first["slots"] == 2 and first["max_parallel_slots"] is None and first["loaded"] is False
    assert first["path"].endswith("model.bin") and first["path"].startswith("/")
    assert [e["id"] for e in body["data"]] == ["m", "a"]
    assert list(legacy.get("/v1/models").json()["data"][0]) == LEGACY_FIELDS
    extra = parallel.get("/v1/models?include_session_options=1&include_params=true").json()
    assert list(extra["data"][0])[-2:] == ["session_options", "params"]


def test_unknown_endpoint_and_method(parallel: Standin) -> None:
    assert error_of(parallel.get("/v1/nope")) == (404, "not_found", "unknown endpoint: /v1/nope")
    assert error_of(parallel.client.put("/v1/models")) == (404, "not_found", "unknown endpoint: /v1/models")
    assert error_of(parallel.get("/")) == (404, "not_found", "WebUI is disabled")


def test_error_mapping_on_inference_routes(parallel: Standin) -> None:
    assert error_of(parallel.run("ghost", {"text": "x"})) == (500, "server_error", "unknown model id: ghost")
    response = parallel.post("/v1/tasks/run", content=b'{"model": "m",')
    assert error_of(response)[:2] == (500, "server_error")
    assert error_of(response)[2].startswith("failed to parse json at byte")
    assert error_of(parallel.post("/v1/tasks/run", {"request": {}}))[2] == ("missing required json key: model")
    assert error_of(parallel.run("m", {"text": "x"}, busy_timeout_ms=-1)) == (
        500,
        "server_error",
        "busy_timeout_ms must be >= 0 (0 means no client-side bound)",
    )
    assert error_of(parallel.run("m", {"text": "x" * 5000})) == (
        500,
        "server_error",
        "request body exceeds the maximum of 4096 bytes",
    )
    assert error_of(parallel.run("m", {"text": "hi", "max_tokens": -1})) == (
        400,
        "invalid_request_error",
        "max_tokens must be a non-negative integer",
    )
    assert error_of(parallel.run("m", {"text": ""})) == (
        400,
        "invalid_request_error",
        "tts request requires non-empty text",
    )
    assert error_of(parallel.run("a", {})) == (
        400,
        "invalid_request_error",
        "asr request requires input audio (audio or audio_base64)",
    )
    assert parallel.models()["m"]["active_slots"] == 0


def test_management_is_forbidden_without_ui_management(unmanaged: Standin) -> None:
    forbidden = (403, "forbidden", "dynamic model management is disabled")
    assert error_of(unmanaged.post("/v1/models/load", {"id": "x", "family": "f", "path": "model.bin"})) == forbidden
    assert error_of(unmanaged.post("/v1/models/unload", {"id": "m"})) == forbidden
    # bulk unload has no management gate
    assert unmanaged.post("/v1/tasks/unload_models", {"model_ids": ["m"]}).status_code == 200


def test_legacy_registration_without_slots_works(legacy: Standin) -> None:
    body = {"id": "plain", "family": "f", "path": "model.bin"}
    assert legacy.post("/v1/models/load", body).json() == {"id": "plain", "loaded": True, "reconfigured": False}
    assert list(legacy.models()["plain"]) == LEGACY_FIELDS


@pytest.mark.parametrize("slots", [1, 2, None, False, "4"])
def test_legacy_registration_rejects_every_slots_form(legacy: Standin, slots: object) -> None:
    body = {"id": "new", "family": "f", "path": "model.bin", "slots": slots}
    assert error_of(legacy.post("/v1/models/load", body)) == (400, "invalid_request_error", SLOTS_REQUIRE_FLAG)
    assert "new" not in legacy.models()


def test_legacy_forbidden_comes_before_slots_rejection(launch: Launch) -> None:
    server = launch([model("m")], parallel=False)
    response = server.post("/v1/models/load", {"id": "m", "family": "f", "path": "model.bin", "slots": 1})
    assert response.status_code == 403


@pytest.mark.parametrize("slots", [0, 17, "2", 1.5, None, True])
def test_parallel_registration_rejects_invalid_slots(parallel: Standin, slots: object) -> None:
    body = {"id": "m", "family": "m_family", "path": "model.bin", "slots": slots}
    assert error_of(parallel.post("/v1/models/load", body)) == (400, "invalid_request_error", SLOTS_RANGE)


def test_unload_validation_and_not_found(parallel: Standin) -> None:
    assert error_of(parallel.post("/v1/tasks/unload_models", {})) == (
        400,
        "invalid_request_error",
        "request requires a 'model_ids' string array",
    )
    assert error_of(parallel.post("/v1/tasks/unload_models", {"model_ids": ["m", 3]})) == (
        400,
        "invalid_request_error",
        "each element of 'model_ids' must be a string",
    )
    body = parallel.post("/v1/tasks/unload_models", {"model_ids": ["x", "m", "m", "y", "x"]}).json()
    assert body == {"unloaded": ["m"], "not_found": ["x", "y", "x"]}
    assert error_of(parallel.post("/v1/models/unload", {"id": "zz"})) == (404, "not_found", "unknown model id: zz")
    assert parallel.post("/v1/tasks/unload_all_models").json() == {"unloaded": ["m", "a"]}


def test_legacy_bulk_unload_lists_only_resident_models(launch: Launch) -> None:
    server = launch([model("a"), model("b")], parallel=False)
    assert server.run("a", {"text": "hi"}).status_code == 200
    assert server.post("/v1/tasks/unload_all_models").json() == {"unloaded": ["a"]}
    assert server.post("/v1/tasks/unload_models", {"model_ids": ["a", "b", "c"]}).json() == {
        "unloaded": [],
        "not_found": ["c"],
    }


def test_legacy_runtime_serialises_with_busy_guard_texts(launch: Launch) -> None:
    server = launch([model("m", knobs={"service_ms": 600})], parallel=False)
    first = server.submit(lambda: server.run("m", {"text": "one"}))
    time.sleep(0.1)
    waited = server.run("m", {"text": "two"}, busy_timeout_ms=200)
    assert error_of(waited) == (
        503,
        "server_busy",
        "model 'm' is busy: timed out after 200 ms waiting for the inference lock",
    )
    wedged = error_of(server.run("m", {"text": "three"}, busy_timeout_ms=100))
    assert wedged[:2] == (503, "server_busy")
    assert wedged[2].startswith("model 'm' is busy: current inference has run ")
    assert wedged[2].endswith(
        "ms (busy_timeout_ms=100); the previous request has likely wedged and cannot be cancelled"
    )
    assert first.result(5).response.status_code == 200
