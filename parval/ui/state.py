"""What the progress displays show, folded from the event stream (pure; observes the event
log, never decides anything)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from parval.jsonread import as_int, get, iterate, opt_int
from parval.jsontypes import JsonObject
from parval.rundir.mismatch_bound import soak_line

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
    units_kept: int = 0  # finished before a resume (not run again)
    last_active: tuple[int, int] | None = None  # (max active observed, wave size) in the last wave
    waves_done: int = 0
    pid: int | None = None
    server_dir: Path | None = None
    run_dir: Path | None = None
    plan_raw: JsonObject | None = None
    shard_counts: list[int] | None = None
    problems: list[str] = field(default_factory=list)
    soak: str | None = None  # the soak's last progress line

    # -- folding -----------------------------------------------------------------------
    def update(self, e: Mapping[str, object]) -> None:
        k = e.get("kind")
        if k == "campaign_start":
            self.shard_counts = [as_int(c) for c in iterate(e.get("counts") or [])] or None
            self._plan_totals()
        elif k == "unit_begin":
            self.unit = str(e.get("unit"))
            m = _START.fullmatch(self.unit)
            self.count, self.start = (int(m.group(1)), int(m.group(2))) if m else (None, None)
            self.phase = "starting"
        elif k in ("soak_progress", "soak_end"):
            self.soak = soak_line(e)
        elif k == "unit_end":
            self.units_done += 1
            self.pid = None
        elif k == "run_start":
            self.run = str(e.get("run"))
            if e.get("count") is not None:
                self.count = as_int(e["count"])
        elif k == "server_ready":
            self.pid = opt_int(e.get("pid"))
            self._server_dir(e.get("argv") or [])
            self.phase = "ready"
        elif k == "request":
            ok = get(e.get("reply") or {}, "outcome") == "ok" or bool(e.get("expect_error"))
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self.phase = f"{e.get('phase')} {e.get('wave')}"
        elif k == "wave":
            st = e.get("status") or {}
            most = get(st, "max_active")
            # None after a wave: no poll showed the counter (shown as '?', not as none active)
            self.last_active = None if most is None else (as_int(most), as_int(e.get("n") or 0))
            self.waves_done += 1
            self.phase = f"{e.get('phase')} {e.get('wave')} done"
        elif k == "unit_skipped":
            # a unit --fail-fast leaves out, or one a resumed run kept from before: the
            # progress counts what this run still sends
            if self.planned is not None and self.plan_raw is not None:
                self.planned = max(0, self.planned - unit_requests(self.plan_raw, str(e.get("unit"))))
            if not e.get("not_run"):
                self.units_kept += 1
        elif k == "wave_repeat":
            if e.get("repeat") and self.planned is not None:
                self.planned += as_int(e.get("n") or 0)  # a repeated wave adds its requests
        elif k in ("m4_targeted_unload", "m4_all_unload"):
            if as_int(e.get("tries") or 1) > 1 and self.planned is not None:
                # a repeated unload probe: its wave and the later request
                self.planned += as_int(e.get("busy") or 0) + 1
        elif k in ("start_failed", "start_aborted", "start_timeout", "server_crash"):
            self.problems.append(f"{e.get('unit') or e.get('run')}: {k.replace('_', ' ')}")

    def _server_dir(self, argv: object) -> None:
        """The server's directory (from `--config DIR/config.json`) and so the run directory."""
        if not isinstance(argv, Sequence):
            raise TypeError(f"argv: '{type(argv).__name__}' is not a sequence")
        if "--config" not in argv:
            return
        i = argv.index("--config")
        if i + 1 >= len(argv):
            return
        config = argv[i + 1]
        if not isinstance(config, (str, os.PathLike)):
            raise TypeError(f"argument should be a str or an os.PathLike object, not '{type(config).__name__}'")
        self.server_dir = Path(config).parent
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
        self.starts_per_count = as_int(self.plan_raw.get("starts_per_count", 3))
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

    def snapshot(self) -> dict[str, int | float | None]:
        eta = self.eta()
        return {
            "requests_done": self.done,
            "requests_failed": self.failed,
            "requests_planned": self.planned,
            "elapsed_s": round(self.elapsed, 2),
            "eta_s": None if eta is None else round(eta, 1),
        }

    def ratio(self) -> str:
        """The requests done of those this run sends (after a resume: of those left), and
        the time left."""
        planned = f" of {self.planned}" if self.planned else ""
        eta = self.eta()
        left = f", about {fmt_duration(eta)} left" if eta is not None else ""
        kept = f" ({self.units_kept} units kept from before the resume)" if self.units_kept else ""
        return f"requests {self.finished_requests}{planned} done, {self.failed} failed{left}{kept}"


def start_requests(plan_raw: JsonObject, n: int) -> int:
    """Requests the schedule plans for one fresh start at count n (0 if unknown)."""
    from parval.plan.load import Plan
    from parval.plan.schedule import schedule_rows

    try:
        rows = schedule_rows(Plan(path=Path("plan.yaml"), raw=plan_raw, sha256=""))
    except (KeyError, TypeError, ValueError):
        return 0
    for name, starts, _waves, requests in rows:
        if name.startswith(f"count {n} (") and starts:
            return requests // starts
    return 0


def unit_requests(plan_raw: JsonObject, unit: str) -> int:
    """Requests the schedule plans for one unit of the campaign (0 if unknown)."""
    m = _START.fullmatch(unit)
    if m:
        return start_requests(plan_raw, int(m.group(1)))
    from parval.plan.load import Plan
    from parval.plan.schedule import schedule_rows

    try:
        rows = schedule_rows(Plan(path=Path("plan.yaml"), raw=plan_raw, sha256=""))
    except (KeyError, TypeError, ValueError):
        return 0
    for name, _starts, _waves, requests in rows:
        if name == unit or (unit == "recovery" and name.startswith("recovery at ")):
            return requests
    return 0


def planned_requests(plan_raw: JsonObject, counts: list[int] | None) -> int | None:
    """Requests the schedule (parval.plan.schedule) plans for the counts this campaign runs."""
    from parval.plan.load import Plan
    from parval.plan.schedule import schedule_rows

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
