"""The plain (one line per finished step) and JSON-lines (`--events-json`) displays.

`--events-json` format v1: every line is an object with `"event"` (the step kind:
campaign_start, unit_begin, server_ready, wave, unit_end, unit_skipped, start_failed,
start_aborted, start_timeout, server_crash, wave_timeout, campaign_stopped,
campaign_timeout, campaign_end; finally `verdict`), `"v": 1`, the step's own fields
(run, unit, count, phase, wave, n, batch_s, ok, reason, ...; a wave's `max_active` and
`drained` are null when the server's counters could not tell) and `"progress"`:
`{requests_done, requests_failed, requests_planned, elapsed_s, eta_s}` (`requests_planned`
and `eta_s` are null until the schedule is known). The last line is
`{"event": "verdict", "line": ..., "exit_code": ..., "admitted_counts": [...],
"admission_ready": ...}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import IO

from parval.jsonread import as_float, as_int, get, item, iterate
from parval.rundir.mismatch_bound import soak_line
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
    "soak_progress",
    "soak_end",
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
    "overlapped",
    "differed",
    "rate_upper_95",
    "soak_waves",
    "left_s",
    "stopped",
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
        n = as_int(e["n"])
        return (
            f"[parval] {e['run']}: {phase_words(e['phase'])} {e['wave']}, {n} request{'s' if n != 1 else ''} "
            f"in {as_float(e['batch_s']):.3f}s, active slots {active_words(e)}, {drained_words(e)}"
        )
    if k in ("start_failed", "start_aborted", "start_timeout", "server_crash", "wave_timeout"):
        what = e.get("reason") or e.get("where") or e.get("exit_code")
        return f"[parval] {e.get('unit') or e.get('run')}: {k.replace('_', ' ')}: {what}"
    if k == "campaign_start":
        shard = f" shard {item(e['shard'], 0)}/{item(e['shard'], 1)}" if e.get("shard") else ""
        counts = ", ".join(str(c) for c in iterate(e.get("counts") or []))
        resumed = " (resumed: units finished before are kept)" if e.get("resumed") else ""
        return f"[parval] campaign {e.get('plan')}{shard}: counts {counts}{resumed}"
    if k == "campaign_end":
        return f"[parval] campaign {'finished' if e.get('finished') else 'stopped'}"
    if k in ("campaign_timeout", "campaign_stopped"):
        return f"[parval] {e.get('reason')}"
    if k in ("soak_progress", "soak_end"):
        return f"[parval] {soak_line(e)}"
    return None


def phase_words(phase: object) -> str:
    """`mixed_wave` as `mixed wave`."""
    return str(phase).replace("_", " ")


def active_words(e: Mapping[str, object]) -> str:
    """The most slots the status poller saw active during a wave, of the wave's requests;
    '?' when no poll showed the counter (a server that publishes none, or polls that failed)."""
    most = get(e.get("status") or {}, "max_active")
    return "?" if most is None else f"{most} of {e.get('n')}"


def drain_known(drained: Mapping[str, object]) -> bool | None:
    """Whether the slots drained after the step; None when it cannot be told (the process
    publishes no counters, or the last poll showed none): `ok: false` then means unknown."""
    if drained.get("ok"):
        return True
    if drained.get("fields_present") is False or not drained:
        return None
    return False


def drained_words(e: Mapping[str, object]) -> str:
    drained = e.get("drained") or {}
    known = drain_known(drained if isinstance(drained, Mapping) else {})
    if known is None:
        return "drained ?"
    if known:
        return "drained"
    return f"not drained (active {get(drained, 'active')}, queued {get(drained, 'queued')})"


def json_line(e: Mapping[str, object], state: ProgressState) -> str | None:
    if e["kind"] not in STEP_KINDS:
        return None
    out: dict[str, object] = {"event": e["kind"], "v": EVENTS_JSON_VERSION}
    out.update({k: e[k] for k in _JSON_FIELDS if k in e})
    if e["kind"] == "wave":
        st = e.get("status") or {}
        out["max_active"] = get(st, "max_active")
        drained = e.get("drained") or {}
        out["drained"] = drain_known(drained if isinstance(drained, Mapping) else {})
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
