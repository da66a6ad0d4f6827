"""The plain (one line per finished step) and JSON-lines (`--events-json`) displays.

`--events-json` format v1: every line is an object with `"event"` (the step kind:
campaign_start, unit_begin, server_ready, wave, unit_end, unit_skipped, start_failed,
start_aborted, start_timeout, server_crash, wave_timeout, campaign_stopped,
campaign_timeout, campaign_end; finally `verdict`), `"v": 1`, the step's own fields
(run, unit, count, phase, wave, n, batch_s, ok, reason, ...) and `"progress"`:
`{requests_done, requests_failed, requests_planned, elapsed_s, eta_s}` (`requests_planned`
and `eta_s` are null until the schedule is known). The last line is
`{"event": "verdict", "line": ..., "exit_code": ..., "admitted_counts": [...],
"admission_ready": ...}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import IO

from parval.jsonread import get, item
from parval.ui.state import ProgressState

# An event of the campaign's event log; the judged evidence.
Listener = Callable[[Mapping[str, object]], None]
Finish = Callable[[Mapping[str, object]], None]

EVENTS_JSON_VERSION = 1

# Events that finish (or begin) a step: one plain line / one JSON line each.
STEP_KINDS = {
    "campaign_start",
    "unit_begin",
    "unit_end",
    "unit_skipped",
    "wave",
    "server_ready",
    "start_failed",
    "start_aborted",
    "start_timeout",
    "server_crash",
    "wave_timeout",
    "campaign_stopped",
    "campaign_end",
    "campaign_timeout",
}
_JSON_FIELDS = (
    "run",
    "unit",
    "count",
    "phase",
    "wave",
    "n",
    "batch_s",
    "ok",
    "reason",
    "ready_s",
    "counts",
    "shard",
    "plan",
    "finished",
    "elapsed_s",
    "exit_code",
    "where",
    "role",
    "after_s",
)


def plain_line(e: Mapping[str, object]) -> str | None:
    """The one line a finished step prints when stderr is not a terminal (None: no line)."""
    k = e["kind"]
    if k == "unit_begin":
        return f"[parval] {e['unit']}: starting"
    if k == "unit_end":
        return f"[parval] {e['unit']}: {'done' if e['ok'] else 'ended early'}"
    if k == "unit_skipped":
        return f"[parval] {e['unit']}: skipped ({e['reason']})"
    if k == "server_ready":
        return f"[parval] {e['run']}: server ready in {e['ready_s']:.2f}s"
    if k == "wave":
        st = e.get("status") or {}
        return (
            f"[parval] {e['run']}: {e['phase']} {e['wave']} n={e['n']} {e['batch_s']:.3f}s "
            f"max_active={get(st, 'max_active')} drained={get(e.get('drained') or {}, 'ok')}"
        )
    if k in ("start_failed", "start_aborted", "start_timeout", "server_crash", "wave_timeout"):
        what = e.get("reason") or e.get("where") or e.get("exit_code")
        return f"[parval] {e.get('unit') or e.get('run')}: {k.replace('_', ' ')}: {what}"
    if k == "campaign_start":
        shard = f" shard {item(e['shard'], 0)}/{item(e['shard'], 1)}" if e.get("shard") else ""
        return f"[parval] campaign {e.get('plan')}{shard}: counts {e.get('counts')}"
    if k == "campaign_end":
        return f"[parval] campaign {'finished' if e.get('finished') else 'stopped'}"
    if k in ("campaign_timeout", "campaign_stopped"):
        return f"[parval] {e.get('reason')}"
    return None


def json_line(e: Mapping[str, object], state: ProgressState) -> str | None:
    if e["kind"] not in STEP_KINDS:
        return None
    out: dict[str, object] = {"event": e["kind"], "v": EVENTS_JSON_VERSION}
    out.update({k: e[k] for k in _JSON_FIELDS if k in e})
    if e["kind"] == "wave":
        st = e.get("status") or {}
        out["max_active"] = get(st, "max_active")
        out["drained"] = get(e.get("drained") or {}, "ok")
    out["progress"] = state.snapshot()
    return json.dumps(out, sort_keys=True, default=str)


def verdict_json(evidence: Mapping[str, object]) -> str:
    v = evidence["verdict"]
    return json.dumps(
        {
            "event": "verdict",
            "v": EVENTS_JSON_VERSION,
            "line": item(v, "line"),
            "exit_code": item(v, "exit_code"),
            "admitted_counts": item(v, "admitted_counts"),
            "admission_ready": evidence["admission_ready"],
        },
        sort_keys=True,
    )


def guarded(listener: Listener, stream: IO[str]) -> Listener:
    """A display error disables that display; it never interrupts the campaign."""
    broken: list[bool] = []

    def call(e: Mapping[str, object]) -> None:
        if broken:
            return
        try:
            listener(e)
        except Exception as exc:  # progress must never break measurement
            broken.append(True)
            try:
                stream.write(f"parval: progress display disabled: {type(exc).__name__}: {exc}\n")
            except Exception:
                pass

    return call
