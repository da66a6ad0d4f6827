"""Recorded events, organised for the gates: only complete attempts of each start count
(an interrupted start that was redone contributes nothing), and the reference table."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parval.evidence import read_events

COUNT_PHASES = ("cold_wave", "warm_wave", "mixed_wave", "reload_wave", "serial_reuse")


@dataclass
class Records:
    events: list[dict[str, Any]]
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)      # name -> run_start
    ends: dict[str, dict[str, Any]] = field(default_factory=dict)      # name -> run_end
    by_run: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)       # start_failed/aborted/timeout
    crashes: list[dict[str, Any]] = field(default_factory=list)
    refs: dict[str, dict[str, Any]] = field(default_factory=dict)      # ref key -> request event

    def kind(self, kind: str) -> list[dict[str, Any]]:
        """Events of one kind from complete attempts (or not tied to a start)."""
        out = []
        for e in self.events:
            if e.get("kind") != kind:
                continue
            run = e.get("run")
            if run is None or self._chosen(e):
                out.append(e)
        return out

    def _chosen(self, e: dict[str, Any]) -> bool:
        start = self.runs.get(str(e.get("run")))
        return start is not None and e.get("attempt", start["attempt"]) == start["attempt"]

    def requests(self, run: str, phases: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        return [e for e in self.by_run.get(run, []) if e["kind"] == "request"
                and (phases is None or e["phase"] in phases)]

    def waves(self, run: str) -> list[dict[str, Any]]:
        return [e for e in self.by_run.get(run, []) if e["kind"] == "wave"]

    def count_runs(self, n: int) -> list[str]:
        return sorted(r for r, s in self.runs.items() if s.get("role") == "count" and s.get("count") == n)


def load_records(run_dir: Path) -> Records:
    return build_records(read_events(run_dir / "events.jsonl"))


def build_records(events: list[dict[str, Any]]) -> Records:
    rec = Records(events)
    starts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ended: set[tuple[str, int]] = set()
    crashed: set[tuple[str, int]] = set()
    abandoned: set[tuple[str, int]] = set()
    for e in events:
        kind = e.get("kind")
        if kind == "run_start":
            starts[e["run"]].append(e)
        elif kind == "run_end":
            ended.add((e["run"], e["attempt"]))
        elif kind == "server_crash":
            crashed.add((e["run"], e["attempt"]))
        elif kind == "run_abandoned":
            abandoned.add((e["run"], e["attempt"]))
    for name, attempts in starts.items():
        complete = [a for a in attempts if (name, a["attempt"]) in ended]
        died = [a for a in attempts if (name, a["attempt"]) in crashed
                and (name, a["attempt"]) not in abandoned]
        # The last complete attempt stands. A start whose server died is judged too (a
        # crash is evidence); one that parval itself abandoned (interrupted, redone on
        # resume) is not evidence at all.
        if complete:
            rec.runs[name] = complete[-1]
        elif died:
            rec.runs[name] = died[-1]
    for e in events:
        kind = e.get("kind")
        if kind in ("start_failed", "start_aborted", "start_timeout", "wave_timeout"):
            rec.failures.append(e)
        if "run" in e and "attempt" in e and rec._chosen(e):
            rec.by_run.setdefault(e["run"], []).append(e)
            if kind == "run_end":
                rec.ends[e["run"]] = e
            if kind == "server_crash":
                rec.crashes.append(e)
    # Reference table: upstream legacy first start, then same-history replays (baseline).
    for run in sorted(rec.runs, key=lambda r: (r != "ref-baseline-a", r)):
        if run != "ref-baseline-a" and not run.startswith("history-"):
            continue
        for e in rec.requests(run):
            key = e.get("ref")
            out = e.get("output") or {}
            if key and out.get("valid") and key not in rec.refs and e["phase"] != "perf_serial":
                rec.refs[key] = e
    return rec
