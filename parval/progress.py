"""Progress: one plain line per finished step when stderr is not a terminal, a rich live
display on a terminal, JSON events on stdout with --events-json, nothing with --quiet."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

Listener = Callable[[dict[str, Any]], None]

STEP_KINDS = {"unit_begin", "unit_end", "unit_skipped", "wave", "server_ready", "start_failed",
              "start_aborted", "server_crash", "campaign_end", "campaign_timeout"}


def plain_line(e: dict[str, Any]) -> str | None:
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
        return (f"[parval] {e['run']}: {e['phase']} {e['wave']} n={e['n']} {e['batch_s']:.3f}s "
                f"max_active={st.get('max_active')} drained={(e.get('drained') or {}).get('ok')}")
    if k in ("start_failed", "start_aborted", "server_crash"):
        return f"[parval] {e.get('unit') or e.get('run')}: {k.replace('_', ' ')}: {e.get('reason') or e.get('exit_code')}"
    if k in ("campaign_end", "campaign_timeout"):
        return f"[parval] campaign {'finished' if e.get('finished') else 'stopped'}" if k == "campaign_end" \
            else f"[parval] {e['reason']}"
    return None


def make_listener(*, quiet: bool, events_json: bool) -> tuple[Listener, Callable[[dict[str, Any]], None]]:
    """(event listener, finish(evidence))."""
    if events_json:
        def emit(e: dict[str, Any]) -> None:
            if e["kind"] in STEP_KINDS:
                sys.stdout.write(json.dumps({"event": e["kind"], **{k: v for k, v in e.items()
                                 if k in ("run", "unit", "phase", "wave", "n", "batch_s", "ok", "reason")}}) + "\n")
                sys.stdout.flush()

        def done(ev: dict[str, Any]) -> None:
            sys.stdout.write(json.dumps({"event": "verdict", **ev["verdict"],
                                         "admission_ready": ev["admission_ready"]}) + "\n")
        return emit, done
    if quiet:
        return (lambda e: None), (lambda ev: None)
    if sys.stderr.isatty():
        from parval.progress_live import LiveProgress

        live = LiveProgress()
        return live.on_event, live.finish
    t0 = time.monotonic()

    def line(e: dict[str, Any]) -> None:
        text = plain_line(e)
        if text:
            sys.stderr.write(f"{time.monotonic() - t0:8.1f}s {text}\n")
            sys.stderr.flush()
    return line, (lambda ev: None)
