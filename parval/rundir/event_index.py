"""Recorded events, organised for the gates: one attempt of each start stands as its
evidence (the last complete one, else one whose server died), and the reference table.

Every other attempt is set aside (abandoned: interrupted, past a deadline, redone on
`--resume`; or superseded by a later complete one). A set-aside attempt is never proof of
a PASS, but what failed in it (a mismatch, a request error, a crash) still counts."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypedDict, cast, overload

from parval.jsontypes import JsonObject
from parval.plan.waves import StartSchedule
from parval.rundir.event_fields import check_read
from parval.rundir.event_types import (
    CampaignEndEvent,
    M6BatchEvent,
    M6StreamingEvent,
    MemoryGuardEvent,
    NegativeControlEvent,
    PerfEvent,
    ProbeEvent,
    RejectionLatencyEvent,
    RequestEvent,
    RunEndEvent,
    RunStartEvent,
    ServerCrashEvent,
    ServerReadyEvent,
    StartAbortedEvent,
    StartFailedEvent,
    StartTimeoutEvent,
    WaveEvent,
    WaveTimeoutEvent,
    X1ConfigProbeEvent,
    X1RegistrationProbeEvent,
    X3ResizeProbeEvent,
)
from parval.rundir.events import read_events
from parval.status import Result, Status

COUNT_PHASES = ("cold_wave", "warm_wave", "mixed_wave", "reload_wave", "serial_reuse")

# The serial baseline repeats and reference phases a one-slot reference start records.
REF_PHASES = ("ref_cold", "ref_warm", "ref_warm2")

# Which reference an output must equal is derived from where it ran, never taken from the
# `ref` label the runner wrote: the requests of these phases are the first on a freshly
# loaded model (the upstream reference start's cold request, a fresh start's true cold
# wave, the wave right after an unload), so they are compared with the cold reference;
# those of the warm phases ran on a model that had already served requests.
COLD_PHASES = ("ref_cold", "cold_wave", "reload_wave")
# reference-start phases: how many times the same request ran before on the one slot
REF_WARM_REPEATS = {"ref_warm": 1, "ref_warm2": 2}
WARM_PHASES = ("warm_wave", "mixed_wave", "serial_reuse")
DERIVED_PHASES = (*COLD_PHASES, *REF_WARM_REPEATS, *WARM_PHASES)


def derived_ref(e: Mapping[str, object], cache_sensitive: bool) -> str | None:
    """The reference a request's output must equal, derived from its recorded history:
    its phase (the first requests after a fresh start or a reload are cold; a reference
    start's warm repeats follow the same request), and for a warm request on a
    cache-sensitive model its recorded slot history (None when that history was not
    observed). For phases outside COLD_PHASES, REF_WARM_REPEATS and WARM_PHASES (probes
    judged by their own assertions) the runner's label stands. A label that disagrees with
    this is recorded (`Tally.relabelled`), never followed."""
    phase = e.get("phase")
    if phase not in DERIVED_PHASES:
        label = e.get("ref")
        return label if isinstance(label, str) else None
    req = str(e.get("req"))
    if phase in COLD_PHASES:
        return f"hist:{req}" if cache_sensitive else f"{req}|cold"
    if isinstance(phase, str) and phase in REF_WARM_REPEATS:
        return "hist:" + ">".join([req] * (REF_WARM_REPEATS[phase] + 1)) if cache_sensitive else f"{req}|warm"
    history = e.get("history")
    if not isinstance(history, list):
        return None  # no recorded slot history: no reference is shown to apply
    if cache_sensitive:
        # an unobserved slot history has no same-history reference (never the closest one)
        if "?" in history:
            return None
        return "hist:" + ">".join([*map(str, history), req])
    # stateless: warm, unless the slot was seen to have served nothing yet
    return f"{req}|{'cold' if history == [] else 'warm'}"


# Events that record a start ended early by parval (not by the server dying): it could not
# start, stopped answering, hung past a deadline, or hit the memory guard.
STOPPED_KINDS = ("start_failed", "start_aborted", "start_timeout", "wave_timeout", "memory_guard")
StoppedEvent = StartFailedEvent | StartAbortedEvent | StartTimeoutEvent | WaveTimeoutEvent | MemoryGuardEvent


class SetAsideCrash(ServerCrashEvent):
    """A server crash in a set-aside attempt, with why the attempt was set aside."""

    set_aside: str


class SetAside(TypedDict):
    """An attempt that does not stand: its start, why it was set aside (superseded or
    abandoned), its events, and whether it ran the executable under test."""

    run_start: RunStartEvent
    status: str
    events: list[JsonObject]
    candidate: bool


@dataclass
class Records:
    events: list[JsonObject]
    runs: dict[str, RunStartEvent] = field(default_factory=dict)  # name -> run_start
    ends: dict[str, RunEndEvent] = field(default_factory=dict)  # name -> run_end
    by_run: dict[str, list[JsonObject]] = field(default_factory=dict)
    failures: list[StoppedEvent] = field(default_factory=list)  # STOPPED_KINDS, each with its attempt
    crashes: list[ServerCrashEvent] = field(default_factory=list)
    # (run, attempt) -> the first STOPPED_KINDS event of that attempt
    stopped: dict[tuple[str, int], StoppedEvent] = field(default_factory=dict)
    refs: dict[str, RequestEvent] = field(default_factory=dict)  # ref key -> request event
    # Attempts that do not stand: (run, attempt) -> its start, status and events.
    set_aside: dict[tuple[str, int], SetAside] = field(default_factory=dict)

    @overload
    def kind(self, kind: Literal["negative_control"]) -> list[NegativeControlEvent]: ...
    @overload
    def kind(self, kind: Literal["perf"]) -> list[PerfEvent]: ...
    @overload
    def kind(self, kind: Literal["rejection_latency"]) -> list[RejectionLatencyEvent]: ...
    @overload
    def kind(self, kind: Literal["campaign_end"]) -> list[CampaignEndEvent]: ...
    @overload
    def kind(self, kind: Literal["m6_streaming"]) -> list[M6StreamingEvent]: ...
    @overload
    def kind(self, kind: Literal["m6_batch"]) -> list[M6BatchEvent]: ...
    @overload
    def kind(self, kind: Literal["x1_config_probe"]) -> list[X1ConfigProbeEvent]: ...
    @overload
    def kind(self, kind: Literal["x1_registration_probe"]) -> list[X1RegistrationProbeEvent]: ...
    @overload
    def kind(self, kind: Literal["x3_resize_probe"]) -> list[X3ResizeProbeEvent]: ...
    def kind(self, kind: str) -> Sequence[Mapping[str, object]]:
        """Events of one kind from complete attempts (or not tied to a start), as their
        kind's TypedDict where the gates read it (see `typed`)."""
        out = []
        for e in self.events:
            if e.get("kind") != kind:
                continue
            run = e.get("run")
            if run is None or self._chosen(e):
                out.append(e)
        return out

    def _chosen(self, e: Mapping[str, object]) -> bool:
        start = self.runs.get(str(e.get("run")))
        return start is not None and e.get("attempt", start["attempt"]) == start["attempt"]

    def requests(self, run: str, phases: tuple[str, ...] | None = None) -> list[RequestEvent]:
        return [e for e in typed(self.by_run.get(run, []), "request") if phases is None or e["phase"] in phases]

    def waves(self, run: str) -> list[WaveEvent]:
        return typed(self.by_run.get(run, []), "wave")

    def set_aside_status(self, run: object, attempt: object) -> str:
        entry = self.set_aside.get((run, attempt)) if isinstance(run, str) and isinstance(attempt, int) else None
        return str(entry["status"]) if entry else "unknown"

    def set_aside_requests(
        self, run: str | None = None, phases: tuple[str, ...] | None = None, *, candidate_only: bool = True
    ) -> list[RequestEvent]:
        """Request events of set-aside attempts (of one start, or all), in recorded order.
        By default only starts of the executable under test: a reference start's outputs
        are references, not outputs to judge."""
        out: list[RequestEvent] = []
        for (name, _attempt), entry in self.set_aside.items():
            if (run is not None and name != run) or (candidate_only and not entry["candidate"]):
                continue
            out += [e for e in typed(entry["events"], "request") if phases is None or e.get("phase") in phases]
        return out

    def set_aside_crashes(self) -> list[SetAsideCrash]:
        return [
            {**e, "set_aside": entry["status"]}
            for entry in self.set_aside.values()
            if entry["candidate"]
            for e in typed(entry["events"], "server_crash")
        ]

    def stop_of(self, run: str) -> StoppedEvent | None:
        """Why parval ended the standing attempt of `run` early (None when it did not)."""
        start = self.runs.get(run)
        return self.stopped.get((run, start["attempt"])) if start else None

    def crash_of(self, run: str) -> ServerCrashEvent | None:
        """The server crash of the standing attempt of `run` (None when it did not crash)."""
        return next((c for c in self.crashes if c["run"] == run), None)

    def complete(self, run: str) -> bool:
        """The standing attempt of `run` ran to its end: recorded its end, no crash, not
        stopped early (an aborted start also records its end)."""
        return run in self.ends and self.crash_of(run) is None and self.stop_of(run) is None

    def outcome(self, run: str) -> str:
        """How a start ended, in words (for reasons): complete, or what ended it."""
        if run not in self.runs:
            return "not run"
        crash = self.crash_of(run)
        if crash is not None:
            sig = f", {crash['signal']}" if crash.get("signal") else ""
            return f"server crashed during {crash['where']} (exit status {crash['exit_code']}{sig})"
        stop = self.stop_of(run)
        if stop is not None:
            return f"stopped: {stop['reason']}"
        return "complete" if run in self.ends else "did not complete"

    def slots(self) -> dict[str, int]:
        """Each start's slot count (the count it runs at; starts of no count are absent)."""
        return {name: c for name, s in self.runs.items() if (c := s.get("count")) is not None}

    def count_runs(self, n: int) -> list[str]:
        return sorted(r for r, s in self.runs.items() if s.get("role") == "count" and s.get("count") == n)

    def soak_runs(self, n: int) -> list[str]:
        """The soak's added starts at count n (parval.runners.soak): judged with the count's
        outputs and memory, never one of its required starts."""
        return sorted(r for r, s in self.runs.items() if s.get("role") == "soak" and s.get("count") == n)


def load_records(run_dir: Path) -> Records:
    path = run_dir / "events.jsonl"
    return build_records(read_events(path), where=str(path))


def build_records(events: list[JsonObject], *, where: str = "events.jsonl") -> Records:
    """The records of a run's events, after checking that every event carries the fields
    its kind declares (parval.rundir.event_fields): a judge never meets a missing field.

    The check is what lets the records hand out each event as its kind's TypedDict
    (parval.rundir.event_types): the casts here and in `typed` rest on it."""
    events = check_read(events, where)
    rec = Records(events)
    starts: dict[str, list[RunStartEvent]] = defaultdict(list)
    ended: set[tuple[str, int]] = set()
    crashed: set[tuple[str, int]] = set()
    abandoned: set[tuple[str, int]] = set()
    latest: dict[str, int] = {}
    for i, e in enumerate(events):
        kind = e.get("kind")
        if kind in STOPPED_KINDS:
            # A unit's failure names the unit; it belongs to that start's latest attempt.
            # A unit that failed before its server started (an executable not found) has
            # no attempt; it still names its start, so every reader finds `run`.
            run = str(e.get("run") or e.get("unit"))
            attempt = e.get("attempt", latest.get(run))
            e = events[i] = {**e, "run": run, "attempt": attempt if isinstance(attempt, int) else None}
            stop = cast(StoppedEvent, e)
            if isinstance(attempt, int):
                rec.stopped.setdefault((run, attempt), stop)
            rec.failures.append(stop)
        if kind == "run_start":
            start = cast(RunStartEvent, e)
            latest[start["run"]] = start["attempt"]
            starts[start["run"]].append(start)
        elif kind in ("run_end", "server_crash", "run_abandoned"):
            which = _attempt_of(e)
            {"run_end": ended, "server_crash": crashed, "run_abandoned": abandoned}[kind].add(which)
    for name, attempts in starts.items():
        whole = [
            a
            for a in attempts
            if (name, a["attempt"]) in ended
            and (name, a["attempt"]) not in crashed
            and (name, a["attempt"]) not in rec.stopped
        ]
        died = [a for a in attempts if (name, a["attempt"]) in crashed and (name, a["attempt"]) not in abandoned]
        cut = [a for a in attempts if (name, a["attempt"]) in ended and (name, a["attempt"]) in rec.stopped]
        # The last complete attempt stands. A start whose server died is judged too (a
        # crash is evidence), and so is one parval stopped after it had started (it hung,
        # stopped answering, hit the memory guard): never complete, but what it showed
        # counts. One that parval itself abandoned (interrupted, redone on resume) never
        # stands, but is kept below as set aside: its failures count.
        standing = whole or died or cut
        if standing:
            rec.runs[name] = standing[-1]
    for name, attempts in starts.items():
        chosen = rec.runs.get(name)
        for a in attempts:
            if chosen is not None and a["attempt"] == chosen["attempt"]:
                continue
            which = (name, a["attempt"])
            status = "superseded" if which in ended and which not in abandoned else "abandoned"
            rec.set_aside[which] = {"run_start": a, "status": status, "events": [], "candidate": _candidate(a)}
    for e in events:
        if "run" not in e or "attempt" not in e:
            continue
        kind, run_name, attempt = e.get("kind"), e["run"], e["attempt"]
        aside = (
            rec.set_aside.get((run_name, attempt)) if isinstance(run_name, str) and isinstance(attempt, int) else None
        )
        if aside is not None:
            aside["events"].append(e)
        if isinstance(run_name, str) and rec._chosen(e):
            rec.by_run.setdefault(run_name, []).append(e)
            if kind == "run_end":
                rec.ends[run_name] = cast(RunEndEvent, e)
            if kind == "server_crash":
                rec.crashes.append(cast(ServerCrashEvent, e))
    # Reference table: upstream legacy first start, then same-history replays (baseline).
    for run in sorted(rec.runs, key=lambda r: (r != "ref-baseline-a", r)):
        if run != "ref-baseline-a" and not run.startswith("history-"):
            continue
        for req in rec.requests(run):
            key = req["ref"]
            out = req["output"] or {}
            if key and out.get("valid") and key not in rec.refs and req["phase"] != "perf_serial":
                rec.refs[key] = req
    return rec


def _attempt_of(e: JsonObject) -> tuple[str, int]:
    """(run, attempt) of an event whose kind declares both (run_end, server_crash, ...)."""
    run, attempt = e["run"], e["attempt"]
    assert isinstance(run, str) and isinstance(attempt, int), "checked by event_fields on read"
    return run, attempt


# kind -> its TypedDict, for `typed`.
@overload
def typed(events: Iterable[JsonObject], kind: Literal["request"]) -> list[RequestEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["wave"]) -> list[WaveEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["server_crash"]) -> list[ServerCrashEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["server_ready"]) -> list[ServerReadyEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["probe"]) -> list[ProbeEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["negative_control"]) -> list[NegativeControlEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["perf"]) -> list[PerfEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["rejection_latency"]) -> list[RejectionLatencyEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["campaign_end"]) -> list[CampaignEndEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["m6_streaming"]) -> list[M6StreamingEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["m6_batch"]) -> list[M6BatchEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["x1_config_probe"]) -> list[X1ConfigProbeEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["x1_registration_probe"]) -> list[X1RegistrationProbeEvent]: ...
@overload
def typed(events: Iterable[JsonObject], kind: Literal["x3_resize_probe"]) -> list[X3ResizeProbeEvent]: ...
def typed(events: Iterable[JsonObject], kind: str) -> Sequence[Mapping[str, object]]:
    """The events of one kind, as its TypedDict: every event of a `Records` passed
    event_fields' check (build_records), so it carries its kind's declared fields."""
    return [e for e in events if e.get("kind") == kind]


def _candidate(start: RunStartEvent) -> bool:
    """Did this start run the executable under test (not a baseline reference or replay)?"""
    return start.get("exe_role") != "baseline" and start.get("role") != "history"


# -- the starts of one count: which ran to their end, which waves were recorded whole ------
# The fresh starts of one advertised count as the M2/M3 judges read them. A judge that
# PASSes rests on every planned start and wave; a missing one leaves it PENDING (BLOCKED
# when a start was stopped), never PASS.


class JudgedRun(Protocol):
    """What the count-start readers need of a judged run (gates.judge_context.JudgeContext)."""

    @property
    def rec(self) -> Records: ...

    @property
    def required_starts(self) -> int:
        """Fresh starts each count needs: the plan's starts_per_count, at least
        parval.plan.judged.MIN_STARTS."""
        ...

    @property
    def schedules(self) -> Mapping[int, StartSchedule]:
        """What one start records at each of the plan's counts."""
        ...


def complete_starts(ctx: JudgedRun, n: int) -> list[str]:
    """The starts at count n that ran to their end (no crash, not stopped early)."""
    return [r for r in ctx.rec.count_runs(n) if ctx.rec.complete(r)]


def starts_missing(ctx: JudgedRun, n: int, id_: str) -> Result | None:
    """PENDING/BLOCKED naming what is missing when count n lacks the complete starts a PASS
    rests on (every recorded start complete, and at least the required number); None when
    it has them. A crashed or stopped start makes it BLOCKED (M2.starts judges the crash)."""
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = complete_starts(ctx, n)
    need = ctx.required_starts
    if len(complete) >= need and len(complete) == len(runs):
        return None
    bad = {r: rec.outcome(r) for r in runs if r not in complete}
    text = f"{len(complete)} complete start(s) at count {n}, {need} needed"
    if bad:
        text += ": " + "; ".join(f"{r} {why}" for r, why in sorted(bad.items()))
    stopped = any(rec.crash_of(r) or rec.stop_of(r) for r in bad)
    status = Status.BLOCKED if stopped else Status.PENDING
    return Result(id_, status, text, {"starts": runs, "complete": complete}, count=n)


def _key(e: RequestEvent | WaveEvent) -> tuple[str, int, int]:
    # A serial wave's requests are numbered 0..k-1 but belong to its one wave summary.
    wave = 0 if e["phase"] == "serial_reuse" else int(e["wave"])
    return str(e["phase"]), wave, int(e.get("retry", 0))


def wave_gaps(ctx: JudgedRun, run: str, n: int, phases: tuple[str, ...]) -> list[str]:
    """What is missing from a start's recorded waves of these phases: a planned wave with no
    summary, a wave summary without one reply per request, replies without a summary."""
    rec = ctx.rec
    waves = [w for w in rec.waves(run) if w["phase"] in phases]
    replies = Counter(_key(e) for e in rec.requests(run, phases))
    summaries = {_key(w) for w in waves}
    schedule = ctx.schedules[n]
    gaps = []
    for phase in phases:
        recorded = {int(w["wave"]) for w in waves if w["phase"] == phase}
        missing = [k for k in schedule.waves[phase] if k not in recorded]
        if missing:
            gaps.append(f"{run}: no {phase} {', '.join(map(str, missing[:6]))} recorded")
    for w in waves:
        want = schedule.serial_requests if w["mode"] == "serial" else int(w["n"])
        got = replies.get(_key(w), 0)
        if got != want:
            gaps.append(f"{run}: {w['phase']} {w['wave']} recorded {got} of {want} replies")
    orphans = sorted(k for k in replies if k not in summaries)
    if orphans:
        gaps.append(f"{run}: replies without a wave summary ({', '.join(f'{p} {w}' for p, w, _ in orphans[:4])})")
    return gaps


def schedule_missing(ctx: JudgedRun, n: int, id_: str, phases: tuple[str, ...]) -> Result | None:
    """PENDING naming the first gaps when a complete start at count n lacks part of its
    planned waves of `phases` (None when every one was recorded whole)."""
    gaps = [g for run in complete_starts(ctx, n) for g in wave_gaps(ctx, run, n, phases)]
    if not gaps:
        return None
    more = f" (+{len(gaps) - 5} more)" if len(gaps) > 5 else ""
    return Result(
        id_, Status.PENDING, f"evidence incomplete at count {n}: {'; '.join(gaps[:5])}{more}", {"gaps": gaps}, count=n
    )
