"""release_together speaks HTTP/1.1 itself (connections staged before the release): its
replies must be the same records Client.request gives, for every way a reply can end."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream

from parval.bench.util import MODEL_ID, model_entry, running_standin, write_model
from parval.server.client import CONNECT_ERROR, HTTP_ERROR, INDETERMINATE, OK, OVERSIZE, Client
from parval.server.waves import release_together

Respond = Callable[[bytes], list[bytes] | None]


async def _read_request(stream: SocketStream) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:  # the final byte comes at the release
        body += await stream.receive()
    return head + b"\r\n\r\n" + body


@asynccontextmanager
async def canned_server(respond: Respond, seen: list[bytes]) -> AsyncIterator[str]:
    """A listener that answers each request with the pieces `respond` returns (None: hang)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def handle(stream: SocketStream) -> None:
        async with stream:
            try:
                request = await _read_request(stream)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
            seen.append(request)
            pieces = respond(request)
            if pieces is None:
                await anyio.sleep(30)
                return
            for piece in pieces:
                await stream.send(piece)
                await anyio.sleep(0.001)

    async with listener:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, handle)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                tg.cancel_scope.cancel()


async def _release(
    respond: Respond, n: int = 3, *, max_body: int = 1 << 20, timeout_s: float = 5.0
) -> tuple[list[Any], list[bytes]]:
    seen: list[bytes] = []
    async with canned_server(respond, seen) as url:
        client = Client(url, max_connections=8, request_timeout_s=timeout_s, max_body_bytes=max_body)
        try:
            body = {"model": "m", "request": {"text": "hi"}}
            replies = await release_together(client, "/v1/tasks/run", [body] * n, timeout_s)
        finally:
            await client.aclose()
    return replies, seen


def _ok_json(request: bytes) -> list[bytes]:
    text = json.loads(request.partition(b"\r\n\r\n")[2])["request"]["text"].encode()
    body = b'{"text":"' + text + b'"}'
    return [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Dup: a\r\nX-Dup: b\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n",
        body[:5],
        body[5:],
    ]


def test_content_length_replies_in_order_and_complete_requests() -> None:
    replies, seen = anyio.run(_release, _ok_json)
    assert [r.outcome for r in replies] == [OK] * 3
    assert all(r.status == 200 and r.json() == {"text": "hi"} for r in replies)
    assert replies[0].headers["content-type"] == "application/json"
    assert replies[0].headers["x-dup"] == "a, b"
    assert all(r.t_done >= r.t_send > 0 for r in replies)
    assert len(seen) == 3
    for raw in seen:
        head, _, body = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"POST /v1/tasks/run HTTP/1.1\r\n")
        assert b"\r\nConnection: close" in head
        assert json.loads(body) == {"model": "m", "request": {"text": "hi"}}


def test_chunked_reply_after_an_interim_100() -> None:
    def respond(_: bytes) -> list[bytes]:
        return [
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5;ext=1\r\nhello\r\n",
            b"6\r\n world\r\n",
            b"0\r\nX-Trailer: 1\r\n\r\n",
        ]

    replies, _ = anyio.run(_release, respond, 2)
    assert [(r.outcome, r.status, r.body) for r in replies] == [(OK, 200, b"hello world")] * 2


def test_close_delimited_reply_and_http_error() -> None:
    def respond(_: bytes) -> list[bytes]:
        return [
            b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n",
            b'{"error":{"message":"boom","type":"server_error"}}',
        ]

    replies, _ = anyio.run(_release, respond, 2)
    assert all(r.outcome == HTTP_ERROR and r.status == 500 for r in replies)
    assert replies[0].error_message() == "boom"


def test_oversize_body() -> None:
    def respond(_: bytes) -> list[bytes]:
        return [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"x" * 100]

    replies, _ = anyio.run(lambda: _release(respond, 1, max_body=10))
    assert replies[0].outcome == OVERSIZE
    assert replies[0].error == "response body exceeds 10 bytes"
    assert len(replies[0].body) <= 10


def test_disconnect_without_reply_and_truncated_body() -> None:
    replies, _ = anyio.run(_release, lambda _: [], 1)
    assert replies[0].outcome == INDETERMINATE and replies[0].status is None
    assert "Server disconnected without sending a response" in replies[0].error

    replies, _ = anyio.run(_release, lambda _: [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"], 1)
    assert replies[0].outcome == INDETERMINATE
    assert "RemoteProtocolError" in replies[0].error


def test_read_timeout_is_indeterminate() -> None:
    t0 = time.monotonic()
    replies, _ = anyio.run(lambda: _release(lambda _: None, 2, timeout_s=0.3))
    assert [r.outcome for r in replies] == [INDETERMINATE] * 2
    assert replies[0].error == "timeout: ReadTimeout"
    assert time.monotonic() - t0 < 5


def test_connection_refused_is_a_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused

        async def go() -> list[Any]:
            client = Client(f"http://127.0.0.1:{port}", max_connections=4, request_timeout_s=2, max_body_bytes=1000)
            try:
                return await release_together(client, "/v1/tasks/run", [{"a": 1}] * 2)
            finally:
                await client.aclose()

        replies = anyio.run(go)
    assert [r.outcome for r in replies] == [CONNECT_ERROR] * 2
    assert replies[0].error.startswith("connect: ")


def test_same_records_as_client_request_against_the_standin(tmp_path: Path) -> None:
    model = write_model(tmp_path)

    async def go() -> tuple[list[Any], list[Any]]:
        entry = model_entry(model, slots=2, service_ms=10)
        async with running_standin(tmp_path, "standin", entry) as server:
            client = Client(server.base_url, max_connections=6, request_timeout_s=10, max_body_bytes=64 << 20)
            try:
                bodies = [
                    {"model": MODEL_ID, "request": {"text": "same", "seed": 5}},
                    {"model": "no-such-model", "request": {"text": "x"}},
                ]
                together = await release_together(client, "/v1/tasks/run", bodies)
                one_by_one = [await client.post("/v1/tasks/run", b) for b in bodies]
            finally:
                await client.aclose()
        return together, one_by_one

    together, one_by_one = anyio.run(go)
    for a, b in zip(together, one_by_one, strict=True):
        assert (a.method, a.path, a.status, a.outcome) == (b.method, b.path, b.status, b.outcome)
        ja, jb = a.json(), b.json()
        assert isinstance(ja, dict) and isinstance(jb, dict)
        ja.pop("timing", None)
        jb.pop("timing", None)
        assert ja == jb
        assert a.headers["content-type"] == b.headers["content-type"]
    assert together[1].outcome == HTTP_ERROR
    assert together[1].error_message() == one_by_one[1].error_message()


@pytest.mark.parametrize("n", [1, 16])
def test_sizes(n: int) -> None:
    replies, seen = anyio.run(_release, _ok_json, n)
    assert len(replies) == n == len(seen)
    assert all(r.outcome == OK for r in replies)
