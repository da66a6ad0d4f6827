"""The reply side of `release_together`'s raw exchange: an incremental HTTP/1.1 response
parser fed from a non-blocking socket (httpx cannot take over a hand-staged request)."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_HEADER_BYTES = 1 << 20


class ProtocolError(Exception):
    """The reply is not a well-formed HTTP/1.1 response."""


@dataclass
class ResponseReader:
    """Incremental HTTP/1.1 response parser: Content-Length, chunked, or until close."""

    max_body: int
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    complete: bool = False
    oversize: bool = False
    _buf: bytearray = field(default_factory=bytearray)
    _length: int | None = None
    _chunked: bool = False
    _chunk_left: int = 0  # bytes of the current chunk still to read (+2 for its CRLF)
    _trailers: bool = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        if self.status is None:
            self._parse_head()
        if self.status is not None and not self.complete:
            self._parse_body()

    def end(self) -> None:
        """The server closed the connection."""
        if self.status is None:
            raise ProtocolError("Server disconnected without sending a response.")
        if self.complete:
            return
        if self._length is None and not self._chunked:
            self.complete = True  # close-delimited body
            return
        raise ProtocolError("peer closed connection without sending complete message body")

    def _parse_head(self) -> None:
        while self.status is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEADER_BYTES:
                    raise ProtocolError("response header block too large")
                return
            block = bytes(self._buf[:end]).decode("latin-1")
            del self._buf[: end + 4]
            lines = block.split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise ProtocolError(f"malformed status line: {lines[0][:80]!r}")
            status = int(parts[1])
            if 100 <= status < 200:
                continue  # interim response (100 Continue): the real one follows
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if not sep:
                    raise ProtocolError(f"malformed header line: {line[:80]!r}")
                key = name.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            self.status, self.headers = status, headers
            if status in (204, 304):
                self._length = 0
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                self._chunked = True
            elif "content-length" in headers:
                try:
                    self._length = int(headers["content-length"].split(",")[0])
                except ValueError:
                    raise ProtocolError("malformed Content-Length") from None

    def _take(self, data: bytes | bytearray) -> None:
        if len(self.body) + len(data) > self.max_body:
            self.body += data[: max(0, self.max_body - len(self.body))]
            self.oversize = self.complete = True
            return
        self.body += data

    def _parse_body(self) -> None:
        if not self._chunked:
            if self._length is None:
                self._take(self._buf)
                self._buf.clear()
                return
            need = self._length - len(self.body)
            self._take(self._buf[:need])
            del self._buf[:need]
            if len(self.body) >= self._length:
                self.complete = True
            return
        while not self.complete:
            if self._trailers:
                end = self._buf.find(b"\r\n")
                if end < 0:
                    return
                line = bytes(self._buf[:end])
                del self._buf[: end + 2]
                if not line:
                    self.complete = True
                continue
            if self._chunk_left == 0:
                end = self._buf.find(b"\r\n")
                if end < 0:
                    return
                size_text = bytes(self._buf[:end]).split(b";")[0].strip()
                del self._buf[: end + 2]
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ProtocolError("malformed chunk size") from None
                if size == 0:
                    self._trailers = True
                    continue
                self._chunk_left = size + 2
            data_left = self._chunk_left - 2
            if data_left > 0:
                piece = self._buf[:data_left]
                del self._buf[: len(piece)]
                self._chunk_left -= len(piece)
                self._take(piece)
                if self.complete or self._chunk_left > 2:
                    return
            if len(self._buf) < 2:
                return
            del self._buf[:2]  # the CRLF after the chunk data
            self._chunk_left = 0
