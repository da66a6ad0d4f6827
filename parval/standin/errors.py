"""HTTP-facing errors with the real server's status codes and `type` strings."""

from __future__ import annotations

import json


class ApiError(Exception):
    """An error answered as `{"error":{"message":...,"type":...}}` with `status`."""

    status = 500
    kind = "server_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> bytes:
        return error_body(self.message, self.kind)


class InvalidRequestError(ApiError):
    status = 400
    kind = "invalid_request_error"


class ForbiddenError(ApiError):
    status = 403
    kind = "forbidden"


class NotFoundError(ApiError):
    status = 404
    kind = "not_found"


class ServerBusyError(ApiError):
    status = 503
    kind = "server_busy"


class ServerError(ApiError):
    """Anything the real server does not map explicitly becomes a 500 `server_error`."""


class StartupError(Exception):
    """Fails the process before serving: `audiocpp_server failed: <message>`, exit 1."""


def error_body(message: str, kind: str) -> bytes:
    payload = {"error": {"message": message, "type": kind}}
    return json.dumps(payload, separators=(",", ":")).encode()


class InsufficientMemoryError(ApiError):
    status = 503
    kind = "insufficient_memory"
