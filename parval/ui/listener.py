"""Progress of a running campaign, as an observer of the event log (never a decider).

Three outputs, picked by `make_listener` (the hook `parval run` calls):

* a terminal (stderr is a TTY): a rich live display, refreshed four times a second
  (`parval.ui.live`, the only module besides the CLI that imports rich);
* anything else (CI, nohup, tee): one plain line per finished step on stderr;
* `--events-json`: one JSON object per line on stdout for wrapping scripts
  (`parval.ui.lines` documents the format);
* `--quiet`: nothing (the CLI prints only the verdict).

A listener must never break the run it watches: every listener is wrapped so that an
exception disables that display (with one warning) instead of propagating.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

from parval.ui.lines import Finish, Listener, guarded, json_line, plain_line, verdict_json
from parval.ui.state import ProgressState

if TYPE_CHECKING:
    from parval.plan.load import Plan


def make_listener(
    *,
    quiet: bool,
    events_json: bool,
    plan: Plan | None = None,
    stderr: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> tuple[Listener, Finish]:
    """(event listener, finish(evidence)) for `parval run`.

    `plan` (a parval.plan.load.Plan) lets the display estimate the remaining time from the
    first event on; without it the plan is read from the run directory once the first
    server is up."""
    err = stderr if stderr is not None else sys.stderr
    out = stdout if stdout is not None else sys.stdout
    state = ProgressState()
    if plan is not None:
        state.plan_raw = dict(plan.raw)
        state._plan_totals()
    if events_json:

        def emit(e: Mapping[str, object]) -> None:
            state.update(e)
            line = json_line(e, state)
            if line:
                out.write(line + "\n")
                out.flush()

        def done(ev: Mapping[str, object]) -> None:
            out.write(verdict_json(ev) + "\n")
            out.flush()

        return guarded(emit, err), done
    if quiet:
        return (lambda e: None), (lambda ev: None)
    if _isatty(err):
        from parval.ui.live import LiveProgress

        live = LiveProgress(state, err)
        return guarded(live.on_event, err), live.finish

    def line(e: Mapping[str, object]) -> None:
        state.update(e)
        text = plain_line(e)
        if text:
            if e["kind"] == "unit_end":
                text += f" · {state.ratio()}"
            err.write(f"{state.elapsed:8.1f}s {text}\n")
            err.flush()

    return guarded(line, err), (lambda ev: None)


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
