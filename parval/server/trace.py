"""The slot-validation observer trace (`[SLOT_VALIDATION] {json}` lines on a validation
build's stderr, with AUDIOCPP_SLOT_VALIDATION_OBSERVER=1): which slot/session served what."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRACE_PREFIX = "[SLOT_VALIDATION] "


def parse_trace(data: bytes) -> list[dict[str, Any]]:
    """Trace objects in order. Other stderr writers may interleave, so match the prefix
    anywhere in a line and parse the rest as JSON (key order is not fixed)."""
    out: list[dict[str, Any]] = []
    for raw in data.decode("utf-8", "replace").splitlines():
        idx = raw.find(TRACE_PREFIX)
        if idx < 0:
            continue
        try:
            obj = json.loads(raw[idx + len(TRACE_PREFIX) :])
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def read_trace(path: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Trace objects written to `path` since byte `offset`, and the new offset."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return [], offset
    return parse_trace(data), offset + len(data)
