"""Route table and error mapping; the transport-level faults act here."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable

from .errors import ApiError, NotFoundError, ServerError
from .execution import Executor
from .faults import Faults
from .http_transport import ClientGone, HttpRequest, Responder
from .inference_routes import InferenceRoutes
from .management import Management
from .management_routes import ManagementRoutes
from .runtime import Runtime
from .speech_routes import SpeechRoutes
from .traces import Traces, stderr_line
from .transcription_routes import TranscriptionRoutes

Handler = Callable[[HttpRequest, Responder], None]
INFERENCE_PATHS = frozenset(
    {
        "/v1/tasks/run",
        "/v1/tasks/stream",
        "/v1/tasks/batch",
        "/v1/audio/speech",
        "/v1/audio/transcriptions",
        "/v1/audio/transcriptions/details",
    }
)
INDEX_HTML = b"<!doctype html><title>audiocpp_server</title><p>audio.cpp server stand-in</p>\n"


class StandinApp:
    def __init__(self, runtime: Runtime, faults: Faults, traces: Traces) -> None:
        self.rt = runtime
        self.faults = faults
        self.management = Management(runtime)
        self.shutting_down = threading.Event()
        inference = InferenceRoutes(runtime, Executor(faults, traces), traces, faults)
        transcription = TranscriptionRoutes(inference)
        speech = SpeechRoutes(inference)
        status = ManagementRoutes(runtime, self.management)
        self.routes: dict[tuple[str, str], Handler] = {
            ("GET", "/health"): status.health,
            ("GET", "/v1/models"): status.models,
            ("GET", "/v1/audio/voices"): status.voices,
            ("POST", "/v1/models/load"): status.models_load,
            ("POST", "/v1/models/unload"): status.models_unload,
            ("POST", "/v1/tasks/unload_models"): status.unload_models,
            ("POST", "/v1/tasks/unload_all_models"): status.unload_all_models,
            ("POST", "/v1/tasks/run"): inference.tasks_run,
            ("POST", "/v1/tasks/stream"): inference.tasks_stream,
            ("POST", "/v1/tasks/batch"): inference.tasks_batch,
            ("POST", "/v1/audio/speech"): speech.audio_speech,
            ("POST", "/v1/audio/transcriptions"): transcription.transcriptions,
            ("POST", "/v1/audio/transcriptions/details"): transcription.details,
            ("GET", "/"): self._index,
            ("GET", "/index.html"): self._index,
            ("GET", "/favicon.ico"): self._favicon,
        }

    def _index(self, http: HttpRequest, out: Responder) -> None:
        if not self.rt.cfg.ui:
            raise NotFoundError("WebUI is disabled")
        out.send(200, INDEX_HTML, "text/html; charset=utf-8")

    def _favicon(self, http: HttpRequest, out: Responder) -> None:
        out.send(204, b"", "image/x-icon")

    def _transport_fault(self) -> bool:
        """Returns True when a fault decided that no response is written."""
        if self.faults.on("hang_requests"):
            # the request was read; hold the connection open until the process stops
            self.shutting_down.wait()
            return True
        return self.faults.on("drop_connection")

    def dispatch(self, http: HttpRequest, out: Responder) -> None:
        try:
            if http.method == "OPTIONS" and (self.rt.cfg.ui or self.rt.cfg.cors_origins == "*"):
                out.send(204, b"", "text/plain")
                return
            handler = self.routes.get((http.method, http.path))
            if handler is None:
                raise NotFoundError(f"unknown endpoint: {http.path}")
            if http.path in INFERENCE_PATHS and self._transport_fault():
                return
            handler(http, out)
        except ClientGone:
            pass
        except ApiError as err:
            self._fail(out, err)
        except Exception as exc:  # the real listener maps anything else to 500 server_error
            stderr_line(traceback.format_exc().rstrip())
            self._fail(out, ServerError(str(exc) or type(exc).__name__))

    @staticmethod
    def _fail(out: Responder, err: ApiError) -> None:
        try:
            if out.headers_sent:
                out.fail_stream(err.message)
            else:
                out.error(err)
        except ClientGone:
            pass
