"""The one HTTP client. Every call returns a Reply record; HTTP errors, timeouts and
resets are data, never exceptions (measurement never raises for the server's errors).

Every call is bounded by a whole-request deadline (`timeouts.request_s`), not only by
httpx's per-read timeout: a server that trickles bytes cannot stretch a request forever.
A request whose fate is unknown (deadline, reset, dropped connection) is INDETERMINATE and
can never count towards a PASS."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from parval.rundir.event_types import ReplySummary

# Outcomes: the request's fate as far as the client can know it.
OK = "ok"  # 2xx with a body
HTTP_ERROR = "http_error"  # a complete non-2xx reply
INDETERMINATE = "indeterminate"  # timeout, reset, connection dropped: unknown what happened
OVERSIZE = "oversize"  # body larger than the plan's limit
CONNECT_ERROR = "connect_error"  # never reached the server


@dataclass
class Reply:
    method: str
    path: str
    status: int | None
    body: bytes
    t_send: float
    t_done: float
    outcome: str
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def elapsed_s(self) -> float:
        return self.t_done - self.t_send

    def json(self) -> Any:
        """Parsed JSON body or None (malformed bodies are data too)."""
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None

    def error_message(self) -> str:
        data = self.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message", ""))
        return self.body[:300].decode("utf-8", "replace")

    def error_type(self) -> str | None:
        """The error body's `type` (e.g. `insufficient_memory`), None when there is none."""
        data = self.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            kind = data["error"].get("type")
            return str(kind) if kind is not None else None
        return None

    def summary(self) -> ReplySummary:
        out: ReplySummary = {
            "status": self.status,
            "outcome": self.outcome,
            "ms": round(self.elapsed_s * 1000, 3),
            "error": self.error or (self.error_message() if self.outcome == HTTP_ERROR else ""),
        }
        if self.outcome == HTTP_ERROR:
            out["error_type"] = self.error_type()
        return out


class Client:
    def __init__(self, base_url: str, *, max_connections: int, request_timeout_s: float, max_body_bytes: int) -> None:
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=0)
        self.base_url = base_url
        self.timeout = request_timeout_s
        self.max_body = max_body_bytes
        self._http = httpx.AsyncClient(
            base_url=base_url, limits=limits, timeout=httpx.Timeout(request_timeout_s, connect=10.0)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, body: object = None, timeout_s: float | None = None) -> Reply:
        sent = _Sent(method, path, time.monotonic())
        limit = timeout_s or self.timeout
        reply: Reply | None = None
        with anyio.move_on_after(limit):
            reply = await self._request(sent, body, limit)
        if reply is None:
            return sent.end(INDETERMINATE, f"timeout: no complete reply within {limit:g} s")
        return reply

    async def _request(self, sent: _Sent, body: object, limit: float) -> Reply:
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if content is not None else {}
        try:
            async with self._http.stream(
                sent.method,
                sent.path,
                content=content,
                headers=headers,
                timeout=httpx.Timeout(limit, connect=min(10.0, limit)),
            ) as resp:
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_body:
                    return sent.end(
                        OVERSIZE,
                        f"response body of {declared} bytes exceeds timeouts.max_response_mib ({self.max_body} bytes)",
                        resp.status_code,
                    )
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > self.max_body:
                        return sent.end(
                            OVERSIZE,
                            f"response body exceeds timeouts.max_response_mib ({self.max_body} bytes)",
                            resp.status_code,
                            b"".join(chunks),
                        )
                    chunks.append(chunk)
                outcome = OK if 200 <= resp.status_code < 300 else HTTP_ERROR
                t_done = time.monotonic()
                return Reply(
                    sent.method,
                    sent.path,
                    resp.status_code,
                    b"".join(chunks),
                    sent.t_send,
                    t_done,
                    outcome,
                    headers=dict(resp.headers),
                )
        except httpx.ConnectError as exc:
            return sent.end(CONNECT_ERROR, f"connect: {exc}")
        except (httpx.HTTPError, OSError) as exc:
            return sent.lost(exc)

    async def post(self, path: str, body: object, timeout_s: float | None = None) -> Reply:
        return await self.request("POST", path, body, timeout_s)

    async def get(self, path: str, timeout_s: float | None = None) -> Reply:
        return await self.request("GET", path, None, timeout_s)

    async def sse(
        self, path: str, body: object, *, stop_after_events: int | None = None, timeout_s: float | None = None
    ) -> tuple[Reply, list[object]]:
        """POST and read a Server-Sent-Events reply. `stop_after_events` disconnects early
        (a client going away mid-stream). Events are parsed JSON, or the string '[DONE]'."""
        sent = _Sent("POST", path, time.monotonic())
        events: list[object] = []
        limit = timeout_s or self.timeout
        result: Reply | None = None
        with anyio.move_on_after(limit):
            result = await self._sse(sent, body, stop_after_events, limit, events)
        if result is None:
            return sent.end(INDETERMINATE, f"timeout: stream not finished within {limit:g} s"), events
        return result, events

    async def _sse(
        self, sent: _Sent, body: object, stop_after_events: int | None, limit: float, events: list[object]
    ) -> Reply:
        try:
            async with self._http.stream(
                sent.method,
                sent.path,
                content=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
                timeout=httpx.Timeout(limit, connect=min(10.0, limit)),
            ) as resp:
                status = resp.status_code
                if status >= 300:
                    raw = b""
                    async for chunk in resp.aiter_bytes():
                        raw += chunk
                        if len(raw) > self.max_body:
                            return sent.end(OVERSIZE, f"error body exceeds {self.max_body} bytes", status)
                    return sent.end(HTTP_ERROR, "", status, raw)
                size = 0
                async for line in resp.aiter_lines():
                    size += len(line) + 1
                    if size > self.max_body:
                        error = f"stream exceeds timeouts.max_response_mib ({self.max_body} bytes)"
                        return sent.end(OVERSIZE, error, status)
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    try:
                        events.append("[DONE]" if data == "[DONE]" else json.loads(data))
                    except (ValueError, RecursionError):
                        events.append({"type": "__malformed__", "raw": data[:200]})
                    if stop_after_events is not None and len(events) >= stop_after_events:
                        return sent.end(INDETERMINATE, "client disconnected on purpose", status)
                return sent.end(OK, "", status)
        except (httpx.HTTPError, OSError) as exc:
            return sent.lost(exc)


@dataclass(frozen=True)
class _Sent:
    """A request on its way: what every Reply for it carries."""

    method: str
    path: str
    t_send: float

    def end(self, outcome: str, error: str = "", status: int | None = None, body: bytes = b"") -> Reply:
        """The Reply for this request, ending now."""
        return Reply(self.method, self.path, status, body, self.t_send, time.monotonic(), outcome, error)

    def lost(self, exc: BaseException) -> Reply:
        """Cut off by a timeout, reset or dropped connection: its fate is unknown."""
        if isinstance(exc, httpx.TimeoutException):
            return self.end(INDETERMINATE, f"timeout: {type(exc).__name__}")
        return self.end(INDETERMINATE, f"{type(exc).__name__}: {exc}")
