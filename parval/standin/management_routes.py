"""Status and management routes: /health, /v1/models, load/unload, bulk unload, voices."""

from __future__ import annotations

from typing import Any

from .errors import ForbiddenError, InvalidRequestError, ServerError
from .http_transport import HttpRequest, Responder
from .management import Management
from .runtime import ModelEntry, Runtime


def _flag(query: dict[str, str], key: str) -> bool:
    return query.get(key) in ("true", "1")


class ManagementRoutes:
    def __init__(self, runtime: Runtime, management: Management) -> None:
        self.rt = runtime
        self.mgmt = management

    def _gate(self) -> None:
        if not self.rt.cfg.ui_management:
            raise ForbiddenError("dynamic model management is disabled")

    def health(self, http: HttpRequest, out: Responder) -> None:
        cfg = self.rt.cfg
        out.json(
            200,
            {
                "status": "ok",
                "backend": cfg.backend,
                "models": len(self.rt.snapshot()),
                "ui": cfg.ui,
                "ui_management": cfg.ui_management,
            },
        )

    def model_json(self, entry: ModelEntry, *, session_options: bool, params: bool) -> dict[str, Any]:
        spec = entry.spec
        item: dict[str, Any] = {
            "id": spec.id,
            "object": "model",
            "owned_by": "engine",
            "family": spec.family,
            "task": spec.task,
            "mode": spec.mode,
        }
        if self.rt.parallel:
            active = entry.gate.active_count()
            if entry.saw_two_active and self.rt.faults.on("counters_no_drain"):
                active += 1
            if self.rt.faults.on("counter_lag_ms"):
                active += entry.lagging(self.rt.faults.value("counter_lag_ms"))
            item["slots"] = spec.count
            item["active_slots"] = active
            item["queued_requests"] = entry.gate.queued_requests()
            item["max_parallel_slots"] = entry.capacity
        item["loaded"] = entry.loaded
        item["path"] = str(spec.path)
        if session_options:
            item["session_options"] = dict(spec.session_options)
        if params:
            item["params"] = []
        return item

    def models(self, http: HttpRequest, out: Responder) -> None:
        session_options = _flag(http.query, "include_session_options")
        params = _flag(http.query, "include_params")
        data = [self.model_json(e, session_options=session_options, params=params) for e in self.rt.snapshot()]
        out.json(200, {"object": "list", "data": data})

    def models_load(self, http: HttpRequest, out: Responder) -> None:
        self._gate()
        out.json(200, self.mgmt.load_model(http.json_body()))

    def models_unload(self, http: HttpRequest, out: Responder) -> None:
        self._gate()
        body = http.json_object()
        model_id = body.get("id")
        if not isinstance(model_id, str):
            raise ServerError("missing required json key: id")
        out.json(200, self.mgmt.unload_one(model_id))

    def unload_models(self, http: HttpRequest, out: Responder) -> None:
        body = http.json_object()
        ids = body.get("model_ids")
        if not isinstance(ids, list):
            raise InvalidRequestError("request requires a 'model_ids' string array")
        if not all(isinstance(i, str) for i in ids):
            raise InvalidRequestError("each element of 'model_ids' must be a string")
        out.json(200, self.mgmt.unload_models(ids))

    def unload_all_models(self, http: HttpRequest, out: Responder) -> None:
        out.json(200, self.mgmt.unload_all())

    def voices(self, http: HttpRequest, out: Responder) -> None:
        model_id = http.query.get("model")
        if model_id is not None:
            self.rt.lookup(model_id)
        out.json(200, {"voices": []})
