"""The slot-validation observer trace (`[SLOT_VALIDATION] {json}` lines on a validation
build's stderr, with AUDIOCPP_SLOT_VALIDATION_OBSERVER=1): which slot/session served what."""

from __future__ import annotations

import json
from pathlib import Path

TRACE_PREFIX = "[SLOT_VALIDATION] "

# One trace object: parsed JSON whose keys vary by build (read with .get, never trusted).
TraceLine = dict[str, object]


def parse_trace(data: bytes) -> list[TraceLine]:
    """Trace objects in order. Other stderr writers may interleave, so match the prefix
    anywhere in a line and parse the rest as JSON (key order is not fixed)."""
    out: list[TraceLine] = []
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


def read_trace(path: Path, offset: int = 0) -> tuple[list[TraceLine], int]:
    """Trace objects written to `path` since byte `offset`, and the new offset."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return [], offset
    return parse_trace(data), offset + len(data)
