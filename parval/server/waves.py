"""Concurrent waves: N requests released together (`release_together`).

`release_together` stages every request before the release: it opens each connection
and writes each encoded request except its final byte. The release is then one
synchronous loop that writes the N final bytes back to back (no await, so no other task
runs in between); only then is any request complete, so no server can start one early.
Connection setup (connect, accept, a server thread per connection) and, after a short
settle, the server's reading of the staged headers happen before the release and cannot
spread the arrivals (the old way, one task per request each connecting after the gate,
spread N=16 sends over ~8 ms; `parval bench` measures both). The servers answer with
`Connection: close`, so a connection serves exactly one request either way. Replies are
the same `Reply` records `Client.request` returns (HTTP errors, timeouts and resets are
data, never exceptions); `t_send` is the release instant of that request.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from parval import __version__
from parval.server.client import CONNECT_ERROR, HTTP_ERROR, INDETERMINATE, OK, OVERSIZE, Client, Reply
from parval.server.response import ProtocolError, ResponseReader

CONNECT_TIMEOUT_S = 10.0  # as Client: httpx.Timeout(..., connect=10.0)
# After staging, a moment for thread-per-connection servers to accept the connections and
# read the staged headers, so that this per-connection work is done before the release:
# about 0.125 ms per connection, at most 2 ms (parval bench: it roughly halves the
# stand-in's start spread at N=16; a C++ server needs far less, and it costs little).
SETTLE_PER_CONNECTION_S = 0.000125
SETTLE_MAX_S = 0.002
RECEIVE_BYTES = 1 << 16


async def release_together(
    client: Client, path: str, bodies: Sequence[object], timeout_s: float | None = None
) -> list[Reply]:
    """Send N requests at (nearly) the same instant; one Reply per body, in order.

    Stage: connect and write all but the last byte of each request (concurrently).
    Release: write the N last bytes in one loop without yielding. Then read the replies.
    """
    target = _target(client.base_url)
    if target is None or not bodies:
        return await _release_via_client(client, path, bodies, timeout_s)
    host, port, prefix = target
    encoded: dict[int, bytes] = {}  # the same body object (e.g. [body] * n) is encoded once
    exchanges = [_Exchange(_request_bytes(host, port, prefix + path, body, encoded)) for body in bodies]
    read_timeout = timeout_s or client.timeout
    try:
        family, address = await _resolve(host, port)
    except OSError as exc:  # name resolution failed: nothing was sent
        now = time.monotonic()
        return [Reply("POST", path, None, b"", now, now, CONNECT_ERROR, f"connect: {exc}") for _ in bodies]
    try:
        async with anyio.create_task_group() as tg:
            for ex in exchanges:
                tg.start_soon(_stage, ex, family, address, path, read_timeout)
        await anyio.sleep(min(SETTLE_MAX_S, SETTLE_PER_CONNECTION_S * len(exchanges)))
        _release(exchanges)
        async with anyio.create_task_group() as tg:
            for ex in exchanges:
                if ex.reply is None:
                    tg.start_soon(_finish, ex, path, read_timeout, client.max_body)
    finally:
        for ex in exchanges:
            if ex.sock is not None:
                ex.sock.close()
    return [ex.reply for ex in exchanges if ex.reply is not None]


async def _release_via_client(
    client: Client, path: str, bodies: Sequence[object], timeout_s: float | None
) -> list[Reply]:
    """Fallback for non-plain-HTTP base URLs: one task per request behind one event."""
    replies: list[Reply | None] = [None] * len(bodies)
    gate = anyio.Event()
    all_ready = anyio.Event()
    ready = 0

    async def one(i: int) -> None:
        nonlocal ready
        ready += 1
        if ready == len(bodies):
            all_ready.set()
        await gate.wait()
        replies[i] = await client.post(path, bodies[i], timeout_s)

    async with anyio.create_task_group() as tg:
        for i in range(len(bodies)):
            tg.start_soon(one, i)
        await all_ready.wait()
        gate.set()
    return [r for r in replies if r is not None]


# -- the raw exchange behind release_together ---------------------------------------------


@dataclass
class _Exchange:
    payload: bytes
    sock: socket.socket | None = None
    sent: int = 0
    t_send: float = 0.0
    write_error: OSError | None = None
    reply: Reply | None = None


def _target(base_url: str) -> tuple[str, int, str] | None:
    parts = urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    return parts.hostname, parts.port or 80, parts.path.rstrip("/")


async def _resolve(host: str, port: int) -> tuple[int, tuple[object, ...]]:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        if not infos:
            raise OSError(f"cannot resolve {host}") from None
        family, _type, _proto, _name, sockaddr = infos[0]
        return int(family), tuple(sockaddr)
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    return int(family), (host, port)


def _request_bytes(host: str, port: int, target: str, body: object, cache: dict[int, bytes]) -> bytes:
    content = cache.get(id(body))
    if content is None:
        content = b"" if body is None else json.dumps(body).encode()
        cache[id(body)] = content
    name = f"[{host}]" if ":" in host else host
    host_header = name if port == 80 else f"{name}:{port}"
    head = [
        f"POST {target} HTTP/1.1",
        f"Host: {host_header}",
        "Accept: */*",
        "Accept-Encoding: identity",
        "Connection: close",
        f"User-Agent: parval/{__version__}",
        f"Content-Length: {len(content)}",
    ]
    if body is not None:
        head.append("Content-Type: application/json")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + content


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _fail(ex: _Exchange, path: str, t_send: float, outcome: str, error: str) -> None:
    ex.reply = Reply("POST", path, None, b"", t_send, time.monotonic(), outcome, error)


async def _send_all(sock: socket.socket, data: memoryview) -> int:
    sent = 0
    while sent < len(data):
        try:
            sent += sock.send(data[sent:])
        except BlockingIOError:
            await anyio.wait_writable(sock)
    return sent


async def _stage(ex: _Exchange, family: int, address: tuple[object, ...], path: str, write_timeout: float) -> None:
    """Connect, then write everything but the final byte."""
    t0 = time.monotonic()
    sock = ex.sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with anyio.fail_after(CONNECT_TIMEOUT_S):
            err = sock.connect_ex(address)
            if err == errno.EINPROGRESS:
                await anyio.wait_writable(sock)
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
    except TimeoutError:
        return _fail(ex, path, t0, INDETERMINATE, "timeout: ConnectTimeout")
    except OSError as exc:
        return _fail(ex, path, t0, CONNECT_ERROR, f"connect: {exc}")
    try:
        with anyio.fail_after(write_timeout):
            ex.sent = await _send_all(sock, memoryview(ex.payload)[:-1])
    except TimeoutError:
        _fail(ex, path, t0, INDETERMINATE, "timeout: WriteTimeout")
    except OSError as exc:
        _fail(ex, path, t0, INDETERMINATE, _describe(exc))


def _release(exchanges: list[_Exchange]) -> None:
    """The release: every staged request's final byte, back to back, no await."""
    for ex in exchanges:
        if ex.sock is None or ex.reply is not None:
            continue
        ex.t_send = time.monotonic()
        try:
            ex.sent += ex.sock.send(ex.payload[ex.sent :])
        except BlockingIOError:
            pass  # the rest goes out in _finish
        except OSError as exc:
            ex.write_error = exc  # a reply may still be waiting (an early error response)


async def _finish(ex: _Exchange, path: str, read_timeout: float, max_body: int) -> None:
    assert ex.sock is not None
    sock = ex.sock
    reader = ResponseReader(max_body)
    try:
        if ex.write_error is None and ex.sent < len(ex.payload):
            with anyio.fail_after(read_timeout):
                ex.sent += await _send_all(sock, memoryview(ex.payload)[ex.sent :])
        while not reader.complete:
            try:
                chunk = sock.recv(RECEIVE_BYTES)
            except BlockingIOError:
                with anyio.fail_after(read_timeout):
                    await anyio.wait_readable(sock)
                continue
            if not chunk:
                reader.end()
                break
            reader.feed(chunk)
    except TimeoutError:
        return _fail(ex, path, ex.t_send, INDETERMINATE, "timeout: ReadTimeout")
    except ProtocolError as exc:
        return _fail(
            ex,
            path,
            ex.t_send,
            INDETERMINATE,
            _describe(ex.write_error) if ex.write_error else f"RemoteProtocolError: {exc}",
        )
    except OSError as exc:
        if not reader.complete:  # a reset after a complete reply changes nothing
            return _fail(ex, path, ex.t_send, INDETERMINATE, _describe(ex.write_error or exc))
    status = reader.status
    assert status is not None
    body = bytes(reader.body)
    if reader.oversize:
        ex.reply = Reply(
            "POST", path, status, body, ex.t_send, time.monotonic(), OVERSIZE, f"response body exceeds {max_body} bytes"
        )
        return
    outcome = OK if 200 <= status < 300 else HTTP_ERROR
    ex.reply = Reply("POST", path, status, body, ex.t_send, time.monotonic(), outcome, headers=reader.headers)
