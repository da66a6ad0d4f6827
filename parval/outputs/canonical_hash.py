"""The sha256 of a reply's canonical JSON without encoding its long strings through `json`.

A reply's canonical form is `json.dumps(data, sort_keys=True, separators=(",", ":"))`; most
of its bytes are one or a few base64 audio strings, which the encoder copies character by
character to escape nothing. A string of printable ASCII without a quote or a backslash is
encoded as itself between quotes, so the hash can read it directly: the rest of the reply
is encoded with a placeholder in its place and the pieces are hashed in order. The bytes
hashed are exactly the encoder's output (checked placeholder by placeholder; any doubt and
the whole reply goes through `json.dumps` as before).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping

import numpy as np

# Shorter strings are cheaper to encode than to set aside.
MIN_SET_ASIDE_CHARS = 1024
_NONCE = secrets.token_hex(16)  # per process: no reply can guess a placeholder


def canonical_json(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def canonical_sha256(data: object) -> str:
    """sha256 hex of `canonical_json(data).encode()`: the same digest, computed faster for
    long plain strings among the values of a dict (at the top, or in a top-level list)."""
    set_aside: list[bytes] = []
    shallow = _with_placeholders(data, set_aside)
    if not set_aside:
        return _encoded_sha256(data)
    text = canonical_json(shallow)
    spans: list[tuple[int, int, bytes]] = []  # (start, end, the string it stands for)
    for i, value in enumerate(set_aside):
        quoted = json.dumps(_placeholder(i))
        where = text.find(quoted)
        if where < 0 or text.find(quoted, where + 1) >= 0:  # not exactly once: no splice
            return _encoded_sha256(data)
        spans.append((where, where + len(quoted), value))
    digest = hashlib.sha256()
    at = 0
    # in the order the encoder wrote them; each placeholder found exactly once and holding no
    # quote, so the spans never overlap
    for start, end, value in sorted(spans):
        digest.update(text[at:start].encode())
        digest.update(b'"')
        digest.update(value)
        digest.update(b'"')
        at = end
    digest.update(text[at:].encode())
    return digest.hexdigest()


def _encoded_sha256(data: object) -> str:
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def _placeholder(i: int) -> str:
    return f"@@{_NONCE}:{i}@@"


def _plain_ascii(value: object) -> bytes | None:
    """`value` as ASCII bytes when `json.dumps(value) == '"' + value + '"'` (ensure_ascii
    escapes a quote, a backslash and everything outside space..~), else None."""
    if not isinstance(value, str) or len(value) < MIN_SET_ASIDE_CHARS or not value.isascii():
        return None
    if '"' in value or "\\" in value:
        return None
    raw = value.encode("ascii")
    codes = np.frombuffer(raw, dtype=np.uint8)
    return raw if codes.min() >= 0x20 and codes.max() <= 0x7E else None


def _aside(value: object, set_aside: list[bytes]) -> object:
    raw = _plain_ascii(value)
    if raw is None:
        return value
    set_aside.append(raw)
    return _placeholder(len(set_aside) - 1)


def _dict_aside(node: Mapping[object, object], set_aside: list[bytes]) -> dict[object, object]:
    return {k: _aside(v, set_aside) for k, v in node.items()}


def _with_placeholders(data: object, set_aside: list[bytes]) -> object:
    """A shallow copy with long plain strings replaced, in an order that does not matter
    (each placeholder is found by its own number); the input is not changed."""
    if not isinstance(data, dict):
        return data
    out: dict[object, object] = {}
    for key, value in data.items():
        if isinstance(value, list):
            out[key] = [_dict_aside(item, set_aside) if isinstance(item, dict) else item for item in value]
        elif isinstance(value, dict):
            out[key] = _dict_aside(value, set_aside)
        else:
            out[key] = _aside(value, set_aside)
    return out
