"""HTTP/1.1 transport: one thread per connection, one request per connection.

Every response carries `Connection: close`; non-streamed ones carry `Content-Length`,
streamed ones are chunked with `Cache-Control: no-cache`. The listen backlog is 16.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .errors import ApiError, ServerError


class ClientGone(Exception):
    """The peer closed the connection while a response was being written."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: Message
    body: bytes
    accept_ns: int

    def json_body(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except json.JSONDecodeError as exc:
            raise ServerError(f"failed to parse json at byte {exc.pos}") from None
        except UnicodeDecodeError as exc:
            raise ServerError(f"failed to parse json at byte {exc.start}") from None

    def json_object(self) -> dict[str, Any]:
        body = self.json_body()
        if not isinstance(body, dict):
            raise ServerError("request body must be a JSON object")
        return body


def compact_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Responder:
    """Writes exactly one response (plain or streamed) for one handler."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        self.headers_sent = False
        self.streaming_sse = False
        self._finished = False

    def _write(self, data: bytes) -> None:
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError as exc:
            raise ClientGone(str(exc)) from exc

    def _head(self, status: int, content_type: str, headers: dict[str, str]) -> None:
        handler = self._handler
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Connection", "close")
        self.headers_sent = True
        try:
            handler.end_headers()
        except OSError as exc:
            raise ClientGone(str(exc)) from exc

    def send(
        self, status: int, body: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        extra = dict(headers or {})
        extra["Content-Length"] = str(len(body))
        self._head(status, content_type, extra)
        if self._handler.command != "HEAD":
            self._write(body)
        self._finished = True

    def json(self, status: int, obj: Any) -> None:
        self.send(status, compact_json(obj))

    def error(self, err: ApiError) -> None:
        self.send(err.status, err.body())

    def start_stream(self, content_type: str) -> None:
        self._head(200, content_type, {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache"})
        self.streaming_sse = content_type == "text/event-stream"

    def chunk(self, data: bytes) -> None:
        if data:
            self._write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def sse(self, obj: Any) -> None:
        self.chunk(b"data: " + compact_json(obj) + b"\n\n")

    def sse_done(self) -> None:
        self.chunk(b"data: [DONE]\n\n")

    def end_stream(self) -> None:
        if not self._finished:
            self._finished = True
            self._write(b"0\r\n\r\n")

    def fail_stream(self, message: str) -> None:
        """An error after streaming headers: an SSE error event, then the body ends."""
        try:
            if self.streaming_sse:
                self.sse({"type": "error", "error": {"message": message}})
            self.end_stream()
        except ClientGone:
            pass


class StandinServer(ThreadingHTTPServer):
    request_queue_size = 16
    daemon_threads = False  # shutdown joins the connection workers
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], dispatch: Callable[[HttpRequest, Responder], None], max_body: int
    ) -> None:
        self.dispatch = dispatch
        self.max_body = max_body
        self._accepted: dict[int, int] = {}
        self._accepted_lock = threading.Lock()
        # Connections still reading their request (headers or body): shutdown cancels
        # this socket I/O before joining the workers, as the real listener does.
        self._reading: set[socket.socket] = set()
        # Of those, the ones whose request line already came (stalled mid-request).
        self._mid_request: set[socket.socket] = set()
        super().__init__(address, StandinHandler)

    def reading(self, conn: socket.socket, active: bool) -> None:
        with self._accepted_lock:
            if active:
                self._reading.add(conn)
            else:
                self._reading.discard(conn)
                self._mid_request.discard(conn)

    def request_line_read(self, conn: socket.socket) -> None:
        with self._accepted_lock:
            if conn in self._reading:
                self._mid_request.add(conn)

    def cancel_stalled_reads(self, *, mid_request: bool = True) -> None:
        """Unblock workers stuck on a client that stopped sending (`mid_request=False`: only
        those that never sent a request line, leaving clients stalled mid-request waited on)."""
        with self._accepted_lock:
            stalled = [c for c in self._reading if mid_request or c not in self._mid_request]
        for conn in stalled:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        with self._accepted_lock:
            self._accepted[id(conn)] = time.monotonic_ns()
        return conn, addr

    def accept_ns(self, conn: object) -> int:
        with self._accepted_lock:
            return self._accepted.pop(id(conn), time.monotonic_ns())

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Peers that vanish are normal; anything else is reported on stderr."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, (OSError, ClientGone)):
            traceback.print_exc()


class StandinHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "audiocpp_server"
    sys_version = ""
    server: StandinServer

    def version_string(self) -> str:
        return "audiocpp_server"

    def handle(self) -> None:
        self.server.reading(self.request, True)
        try:
            super().handle()
        finally:
            self.server.reading(self.request, False)

    def parse_request(self) -> bool:
        self.server.request_line_read(self.request)
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:
        """The real server does not log requests unless asked to."""

    def _read_body(self) -> bytes:
        limit = self.server.max_body
        too_big = ServerError(f"request body exceeds the maximum of {limit} bytes")
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > limit:
                    raise too_big
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            raise too_big
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        self.close_connection = True
        accept_ns = self.server.accept_ns(self.request)
        out = Responder(self)
        try:
            body = self._read_body()
        except ApiError as err:
            out.error(err)
            return
        except ValueError:
            out.error(ServerError("malformed chunked request body"))
            return
        finally:
            self.server.reading(self.request, False)
        parts = urlsplit(self.path)
        request = HttpRequest(self.command, parts.path, dict(parse_qsl(parts.query)), self.headers, body, accept_ns)
        self.server.dispatch(request, out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _serve
