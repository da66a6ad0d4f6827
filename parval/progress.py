"""Progress of a running campaign, as an observer of the event log (never a decider).

Three outputs, picked by `make_listener` (the hook `parval run` calls):

* a terminal (stderr is a TTY): a rich live display, refreshed four times a second
  (`parval.progress_live`, the only module besides the CLI that imports rich);
* anything else (CI, nohup, tee): one plain line per finished step on stderr;
* `--events-json`: one JSON object per line on stdout for wrapping scripts (format below);
* `--quiet`: nothing (the CLI prints only the verdict).

`--events-json` format v1: every line is an object with `"event"` (the step kind:
campaign_start, unit_begin, server_ready, wave, unit_end, unit_skipped, start_failed,
start_aborted, start_timeout, server_crash, wave_timeout, campaign_stopped,
campaign_timeout, campaign_end; finally `verdict`), `"v": 1`, the step's own fields
(run, unit, count, phase, wave, n, batch_s, ok, reason, ...) and `"progress"`:
`{requests_done, requests_failed, requests_planned, elapsed_s, eta_s}` (`requests_planned`
and `eta_s` are null until the schedule is known). The last line is
`{"event": "verdict", "line": ..., "exit_code": ..., "admitted_counts": [...],
"admission_ready": ...}`.

A listener must never break the run it watches: every listener is wrapped so that an
exception disables that display (with one warning) instead of propagating.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

Listener = Callable[[dict[str, Any]], None]
Finish = Callable[[dict[str, Any]], None]

EVENTS_JSON_VERSION = 1

# Events that finish (or begin) a step: one plain line / one JSON line each.
STEP_KINDS = {"campaign_start", "unit_begin", "unit_end", "unit_skipped", "wave", "server_ready",
              "start_failed", "start_aborted", "start_timeout", "server_crash", "wave_timeout",
              "campaign_stopped", "campaign_end", "campaign_timeout"}
_JSON_FIELDS = ("run", "unit", "count", "phase", "wave", "n", "batch_s", "ok", "reason", "ready_s",
                "counts", "shard", "plan", "finished", "elapsed_s", "exit_code", "where", "role",
                "after_s")
_START = re.compile(r"count(\d+)-s(\d+)")


@dataclass
class ProgressState:
    """Everything the displays show, folded from the event stream (pure; testable)."""

    t0: float = field(default_factory=time.monotonic)
    unit: str = "-"
    run: str = "-"
    count: int | None = None
    start: int | None = None
    starts_per_count: int | None = None
    phase: str = "-"
    done: int = 0
    failed: int = 0
    planned: int | None = None
    units_done: int = 0
    last_active: tuple[int, int] | None = None  # (max active observed, wave size)
    pid: int | None = None
    server_dir: Path | None = None
    run_dir: Path | None = None
    plan_raw: dict[str, Any] | None = None
    shard_counts: list[int] | None = None
    problems: list[str] = field(default_factory=list)

    # -- folding -----------------------------------------------------------------------
    def update(self, e: dict[str, Any]) -> None:
        k = e.get("kind")
        if k == "campaign_start":
            self.shard_counts = [int(c) for c in e.get("counts") or []] or None
            self._plan_totals()
        elif k == "unit_begin":
            self.unit = str(e.get("unit"))
            m = _START.fullmatch(self.unit)
            self.count, self.start = (int(m.group(1)), int(m.group(2))) if m else (None, None)
            self.phase = "starting"
        elif k == "unit_end":
            self.units_done += 1
            self.pid = None
        elif k == "run_start":
            self.run = str(e.get("run"))
            if e.get("count") is not None:
                self.count = int(e["count"])
        elif k == "server_ready":
            self.pid = e.get("pid")
            self._server_dir(e.get("argv") or [])
            self.phase = "ready"
        elif k == "request":
            ok = (e.get("reply") or {}).get("outcome") == "ok" or bool(e.get("expect_error"))
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self.phase = f"{e.get('phase')} {e.get('wave')}"
        elif k == "wave":
            st = e.get("status") or {}
            if st.get("max_active") is not None:
                self.last_active = (int(st["max_active"]), int(e.get("n") or 0))
            self.phase = f"{e.get('phase')} {e.get('wave')} done"
        elif k == "unit_skipped" and e.get("not_run") and self.planned is not None:
            m = _START.fullmatch(str(e.get("unit")))
            if m and self.plan_raw is not None:  # a count start --fail-fast leaves out
                self.planned -= start_requests(self.plan_raw, int(m.group(1)))
        elif k == "wave_repeat":
            if e.get("repeat") and self.planned is not None:
                self.planned += int(e.get("n") or 0)  # a repeated wave adds its requests
        elif k in ("start_failed", "start_aborted", "start_timeout", "server_crash"):
            self.problems.append(f"{e.get('unit') or e.get('run')}: {k.replace('_', ' ')}")

    def _server_dir(self, argv: list[str]) -> None:
        """The server's directory (from `--config DIR/config.json`) and so the run directory."""
        if "--config" not in argv:
            return
        i = argv.index("--config")
        if i + 1 >= len(argv):
            return
        self.server_dir = Path(argv[i + 1]).parent
        if self.run_dir is None and self.server_dir.parent.name == "servers":
            self.run_dir = self.server_dir.parent.parent
            if self.plan_raw is None:
                try:
                    self.plan_raw = json.loads((self.run_dir / "plan.json").read_text("utf-8"))
                except (OSError, ValueError):
                    return
                self._plan_totals()

    def _plan_totals(self) -> None:
        if self.plan_raw is None:
            return
        self.starts_per_count = int(self.plan_raw.get("starts_per_count", 3))
        self.planned = planned_requests(self.plan_raw, self.shard_counts)

    # -- derived -----------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    @property
    def finished_requests(self) -> int:
        return self.done + self.failed

    def eta(self) -> float | None:
        """Seconds left: elapsed time per finished request times the requests still planned."""
        n = self.finished_requests
        if not self.planned or n == 0:
            return None
        return max(0.0, self.elapsed * (self.planned - n) / n)

    def snapshot(self) -> dict[str, Any]:
        eta = self.eta()
        return {"requests_done": self.done, "requests_failed": self.failed,
                "requests_planned": self.planned, "elapsed_s": round(self.elapsed, 2),
                "eta_s": None if eta is None else round(eta, 1)}

    def ratio(self) -> str:
        planned = f"/{self.planned}" if self.planned else ""
        eta = self.eta()
        left = f", ~{fmt_duration(eta)} left" if eta is not None else ""
        return f"requests {self.finished_requests}{planned} ({self.failed} failed){left}"


def start_requests(plan_raw: dict[str, Any], n: int) -> int:
    """Requests the schedule plans for one fresh start at count n (0 if unknown)."""
    from parval.plan import Plan
    from parval.schedule import schedule_rows

    try:
        rows = schedule_rows(Plan(path=Path("plan.yaml"), raw=plan_raw, sha256=""))
    except (KeyError, TypeError, ValueError):
        return 0
    for name, starts, _waves, requests in rows:
        if name.startswith(f"count {n} (") and starts:
            return requests // starts
    return 0


def planned_requests(plan_raw: dict[str, Any], counts: list[int] | None) -> int | None:
    """Requests the schedule (parval.schedule) plans for the counts this campaign runs."""
    from parval.plan import Plan
    from parval.schedule import schedule_rows

    try:
        plan = Plan(path=Path("plan.yaml"), raw=plan_raw, sha256="")
        rows = schedule_rows(plan)
        largest = max(plan.counts)
    except (KeyError, TypeError, ValueError):
        return None
    wanted = set(counts or plan.counts)
    total = 0
    for name, _starts, _waves, requests in rows:
        m = re.match(r"(count|recovery at) (\d+)", name)
        if m and m.group(1) == "count" and int(m.group(2)) not in wanted:
            continue
        if m and m.group(1) == "recovery at" and largest not in wanted:
            continue
        total += requests
    return total or None


def fmt_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def plain_line(e: dict[str, Any]) -> str | None:
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
        return (f"[parval] {e['run']}: {e['phase']} {e['wave']} n={e['n']} {e['batch_s']:.3f}s "
                f"max_active={st.get('max_active')} drained={(e.get('drained') or {}).get('ok')}")
    if k in ("start_failed", "start_aborted", "start_timeout", "server_crash", "wave_timeout"):
        what = e.get("reason") or e.get("where") or e.get("exit_code")
        return f"[parval] {e.get('unit') or e.get('run')}: {k.replace('_', ' ')}: {what}"
    if k == "campaign_start":
        shard = f" shard {e['shard'][0]}/{e['shard'][1]}" if e.get("shard") else ""
        return f"[parval] campaign {e.get('plan')}{shard}: counts {e.get('counts')}"
    if k == "campaign_end":
        return f"[parval] campaign {'finished' if e.get('finished') else 'stopped'}"
    if k in ("campaign_timeout", "campaign_stopped"):
        return f"[parval] {e.get('reason')}"
    return None


def json_line(e: dict[str, Any], state: ProgressState) -> str | None:
    if e["kind"] not in STEP_KINDS:
        return None
    out: dict[str, Any] = {"event": e["kind"], "v": EVENTS_JSON_VERSION}
    out.update({k: e[k] for k in _JSON_FIELDS if k in e})
    if e["kind"] == "wave":
        st = e.get("status") or {}
        out["max_active"] = st.get("max_active")
        out["drained"] = (e.get("drained") or {}).get("ok")
    out["progress"] = state.snapshot()
    return json.dumps(out, sort_keys=True, default=str)


def verdict_json(evidence: dict[str, Any]) -> str:
    v = evidence["verdict"]
    return json.dumps({"event": "verdict", "v": EVENTS_JSON_VERSION, "line": v["line"],
                       "exit_code": v["exit_code"], "admitted_counts": v["admitted_counts"],
                       "admission_ready": evidence["admission_ready"]}, sort_keys=True)


def guarded(listener: Listener, stream: IO[str]) -> Listener:
    """A display error disables that display; it never interrupts the campaign."""
    broken: list[bool] = []

    def call(e: dict[str, Any]) -> None:
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


def make_listener(*, quiet: bool, events_json: bool, plan: Any = None,
                  stderr: IO[str] | None = None,
                  stdout: IO[str] | None = None) -> tuple[Listener, Finish]:
    """(event listener, finish(evidence)) for `parval run`.

    `plan` (a parval.plan.Plan) lets the display estimate the remaining time from the
    first event on; without it the plan is read from the run directory once the first
    server is up."""
    err = stderr if stderr is not None else sys.stderr
    out = stdout if stdout is not None else sys.stdout
    state = ProgressState()
    if plan is not None:
        state.plan_raw = dict(plan.raw)
        state._plan_totals()
    if events_json:
        def emit(e: dict[str, Any]) -> None:
            state.update(e)
            line = json_line(e, state)
            if line:
                out.write(line + "\n")
                out.flush()

        def done(ev: dict[str, Any]) -> None:
            out.write(verdict_json(ev) + "\n")
            out.flush()
        return guarded(emit, err), done
    if quiet:
        return (lambda e: None), (lambda ev: None)
    if _isatty(err):
        from parval.progress_live import LiveProgress

        live = LiveProgress(state, err)
        return guarded(live.on_event, err), live.finish

    def line(e: dict[str, Any]) -> None:
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
