"""Judging one model-gate assertion of a recorded run from its events and files, with the
event fields and files the judge reads tracked: what the attack tests take away or shake.

`verdict(run, events, key)` judges one assertion ("M2.exact@2" for a count's, "Q5@2",
"M1.cap1_parity" for a model-level one) the way `parval.judge.judge_run` does, before
masking (which never makes a PASS), computing only what that assertion depends on."""

from __future__ import annotations

import copy
import json
import pathlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from parval.gates import admission_verdict as adm
from parval.gates import execution_path as xp
from parval.gates import m1_baseline as m1
from parval.gates import m2_concurrency as m2
from parval.gates import m3_mixed_waves as m3
from parval.gates import m4_recovery as m4
from parval.gates import m6_modes as m6
from parval.gates import quality
from parval.gates.execution_path import judge_execution_path
from parval.gates.judge_context import JudgeContext
from parval.gates.m1_baseline import judge_m1
from parval.gates.m2_concurrency import judge_m2
from parval.gates.m3_mixed_waves import judge_m3, variation_effects
from parval.gates.m4_recovery import judge_m4
from parval.gates.m5 import memory_results
from parval.gates.m6_modes import judge_m6
from parval.gates.masking import COMPARISON_IDS
from parval.gates.quality import judge_quality, q5_intermittent
from parval.procedure import closed_list
from parval.procedure.assertion_ids import FRAMEWORK_GATE, all_ids
from parval.rundir.event_fields import EventFieldError
from parval.rundir.event_index import build_records
from parval.rundir.events import read_events
from parval.status import Result, Status

PER_COUNT = ("M2.", "M3.", "M5.")
# The identity of an event, not evidence it carries; `argv` is read for the reproduction
# command only, `reversed` to pick the set-aside attempts judged alongside.
IDENTITY = frozenset({"kind", "seq", "t", "argv", "reversed"})
# Keys a judge reads to decide whether an event concerns it at all: an event of which only
# these were read is not evidence of that judge (a cold-wave reply is not evidence of
# M2.warm_waves), but on an event it does rely on, emptying them is an attack like any other.
FILTERS: dict[str, frozenset[str]] = {
    "request": frozenset({"phase", "run", "attempt"}),
    "wave": frozenset({"phase", "run", "attempt"}),
    "probe": frozenset({"name", "run", "attempt"}),
    "run_start": frozenset({"role", "count", "run", "attempt", "exe_role"}),
    # the campaign's counts narrow what X2 asks for; without them it asks for all the plan's
    "campaign_start": frozenset({"counts", "shard"}),
}
DEFAULT_FILTER = frozenset({"run", "attempt"})
# The start roles judges select starts by (count_runs, the memory baseline); other roles are
# read only to be told apart from these.
DISPATCHED_ROLES = frozenset({"count", "membase"})
# Evidence a PASS rests on at least one of (a further witness is redundant by design):
# (assertion id, event kind, key). Each says why.
REDUNDANT = {
    # M3.reversed needs one request pair seen admitted in both orders: every further
    # observed mixed wave is another witness of the same fact (and Q5, Q6 rest on it)
    (aid, "wave", key)
    for aid in ("M3.reversed", "Q5", "Q6")
    for key in ("admission", "order", "trace_confirmed", "retry")
}
# Read only to count the outputs produced beside another request: the bound a verdict
# states beside its status (parval.rundir.mismatch_bound), never a cause of it
# (tests/gates/test_mismatch_bound.py recounts it from the events).
BOUND_READS = {
    (aid, "request", key)
    for aid in ("M2.exact", "M3.reversed", "M3.history", "Q4", "Q5", "Q6")
    for key in ("t_send", "t_done", "retry")
}

# Fields read only to rule a FAIL out or to word a verdict that is not a PASS: how many tries
# an unload probe was allowed decides whether barging was reproduced on every try and whether
# an unshown order is BLOCKED or PENDING; a PASS (the order shown) never rests on it.
NOT_PASS_EVIDENCE = {(kind, "max_tries") for kind in ("m4_targeted_unload", "m4_all_unload")}


@dataclass
class Run:
    """One recorded run: its directory, events, plan snapshot and manifest."""

    dir: Path
    events: list[dict[str, Any]]
    plan: dict[str, Any]
    manifest: dict[str, Any]

    @classmethod
    def load(cls, run_dir: Path) -> Run:
        return cls(
            run_dir,
            read_events(run_dir / "events.jsonl"),
            json.loads((run_dir / "plan.json").read_text()),
            json.loads((run_dir / "manifest.json").read_text()),
        )

    @property
    def counts(self) -> list[int]:
        return sorted(int(c) for c in self.plan["counts"])

    def keys(self) -> list[str]:
        """Every model-gate assertion key of this run (per-count ones once per count)."""
        out = []
        for aid in all_ids():
            if aid in FRAMEWORK_GATE or aid == "X4":
                continue
            if aid.startswith(PER_COUNT):
                out += [f"{aid}@{n}" for n in self.counts]
            else:
                out.append(aid)
                if aid == "Q5":
                    out += [f"Q5@{n}" for n in self.counts]
        return out


class Tracked(dict[str, Any]):
    """An event that notes which of its keys are read while `reads` is set."""

    reads: set[tuple[int, str]] | None = None

    def __init__(self, index: int, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.index = index

    def _note(self, key: object) -> None:
        if Tracked.reads is not None and isinstance(key, str):
            Tracked.reads.add((self.index, key))

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)


@dataclass
class Reads:
    fields: set[tuple[int, str]] = field(default_factory=set)
    files: set[Path] = field(default_factory=set)


@contextmanager
def tracking(run_dir: Path) -> Iterator[Reads]:
    """Note the event keys read (through Tracked events) and the run's files opened."""
    reads = Reads()
    original_bytes, original_text = pathlib.Path.read_bytes, pathlib.Path.read_text
    root = run_dir.resolve()

    def note(path: pathlib.Path) -> None:
        try:
            if path.resolve().is_relative_to(root):
                reads.files.add(path.resolve())
        except OSError:
            pass

    def read_bytes(self: pathlib.Path) -> bytes:
        note(self)
        return original_bytes(self)

    def read_text(self: pathlib.Path, *args: Any, **kwargs: Any) -> str:
        note(self)
        return original_text(self, *args, **kwargs)

    Tracked.reads = reads.fields
    pathlib.Path.read_bytes = read_bytes  # type: ignore[method-assign]
    pathlib.Path.read_text = read_text  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        Tracked.reads = None
        pathlib.Path.read_bytes = original_bytes  # type: ignore[method-assign]
        pathlib.Path.read_text = original_text  # type: ignore[method-assign]


def split(key: str) -> tuple[str, int | None]:
    aid, _, n = key.partition("@")
    return aid, int(n) if n else None


class Refused(Exception):
    """The record loader refused the events (a field a judge reads is missing or wrong)."""


def verdict(run: Run, events: list[dict[str, Any]], key: str, *, tracked: bool = False) -> Result:
    """Judge the assertion `key` on these events (`tracked`: wrap them to note reads)."""
    evs = [Tracked(i, e) if tracked else e for i, e in enumerate(events)]
    noting, Tracked.reads = Tracked.reads, None  # the loader reads every event: not evidence
    try:
        rec = build_records(evs)
    except EventFieldError as exc:
        raise Refused(str(exc)) from exc
    finally:
        Tracked.reads = noting
    ctx = JudgeContext(rec, run.plan, run.manifest, run.dir, str(run.dir / "plan.yaml"))
    aid, n = split(key)
    group = aid.split(".")[0]
    # Only the assertion's own judge (and what it depends on): the reads noted are its own.
    if group in ("X1", "X2", "X3"):
        return xp.JUDGES[aid](ctx)
    if group == "M1":
        # only M1.serial_repeat reads the serial verdict (masking applies it to the others later)
        serial = ctx.serial if aid == "M1.serial_repeat" else (Status.PASS, "", {})
        return m1.JUDGES[aid](ctx, serial)
    if group == "M4":
        return m4.JUDGES[aid](ctx)
    if group == "M6":
        return m6.JUDGES[aid](ctx)
    if group == "M2":
        assert n is not None
        return m2.JUDGES[aid](ctx, n)
    if group == "M3":
        assert n is not None
        return m3.JUDGES[aid](ctx, n, variation_effects(ctx) if aid == "M3.variation" else [])
    if group == "M5":
        assert n is not None
        plan = run.plan
        if aid != "M5.baseline":  # the baseline build's memory is M5.baseline's evidence only
            plan = {**plan, "memory": {**plan["memory"], "baseline_comparison": None}}
        return next(r for r in memory_results(rec, run.dir, plan, [n]) if r.id == aid and r.count == n)
    if aid in ("Q1", "Q2", "Q3"):
        return quality.JUDGES[aid](ctx, [])
    if aid == "Q4":
        hist = [replace(m3.m3_history(ctx, c, []), count=c) for c in run.counts]
        return quality.q4_history_refs(ctx, hist)
    if aid == "Q5":
        if n is None:
            # the serial verdict masks comparisons later; the comparisons themselves do not read it
            tables = [(xp.JUDGES, ()), (m1.JUDGES, ((Status.PASS, "", {}),)), (m4.JUDGES, ()), (m6.JUDGES, ())]
            model = [fn(ctx, *args) for table, args in tables for i, fn in table.items() if i in COMPARISON_IDS]
            return q5_intermittent(ctx, model, None)
        effects = variation_effects(ctx)
        scoped = [fn(ctx, n) for i, fn in m2.JUDGES.items() if i in COMPARISON_IDS]
        scoped += [fn(ctx, n, effects) for i, fn in m3.JUDGES.items() if i in COMPARISON_IDS]
        return q5_intermittent(ctx, [replace(r, count=n) for r in scoped], n)
    if aid == "Q6":
        return q6(run, ctx)
    raise KeyError(key)


def q6(run: Run, ctx: JudgeContext) -> Result:
    """Q6 over every model-gate result. The framework record is not part of this run: its
    entries stand as PASS, so that Q6 shows what the model gate alone gives (the closed list
    would hold every count PENDING without them)."""
    model = [*judge_execution_path(ctx), *judge_m1(ctx, ctx.serial), *judge_m4(ctx), *judge_m6(ctx)]
    effects = variation_effects(ctx)
    per_count = {n: [*judge_m2(ctx, n), *judge_m3(ctx, n, effects)] for n in run.counts}
    for r in memory_results(ctx.rec, run.dir, run.plan, run.counts):
        per_count.setdefault(r.count or 0, []).append(r)
    model += judge_quality(ctx, [*model, *(r for rs in per_count.values() for r in rs)])
    for n, rs in per_count.items():
        rs.append(q5_intermittent(ctx, rs, n))
    framework = [Result(i, Status.PASS, "framework record (not part of this run)") for i in closed_list.FRAMEWORK]
    d = adm.decide(run.counts, model, per_count, framework, interrupted=False, missing="not judged here")
    return next(r for r in d.flat if r.id == "Q6")


def _pick(results: list[Result], aid: str) -> Result:
    return next(r for r in results if r.id == aid)


def copy_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(events)


def emptied(value: Any) -> Any:
    """The empty value of a value's type (None when it is already empty)."""
    if isinstance(value, bool):
        return False if value else None
    if isinstance(value, int | float):
        return 0 if value else None
    if isinstance(value, str):
        return "" if value else None
    if isinstance(value, dict):
        return {} if value else None
    if isinstance(value, list):
        return [] if value else None
    return None


def _providers(events: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Reference key -> the events that could provide it (as build_records picks them)."""
    out: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        run = str(e.get("run", ""))
        if e.get("kind") != "request" or not (run == "ref-baseline-a" or run.startswith("history-")):
            continue
        if e.get("ref") and (e.get("output") or {}).get("valid") and e.get("phase") != "perf_serial":
            out.setdefault(str(e["ref"]), []).append(i)
    return out


def _runs_named(value: Any, names: set[str]) -> set[str]:
    """The run names a result's evidence mentions (the starts it rests on)."""
    if isinstance(value, str):
        return {value} if value in names else set()
    if isinstance(value, dict):
        return {r for v in value.values() for r in _runs_named(v, names)}
    if isinstance(value, list | tuple):
        return {r for v in value for r in _runs_named(v, names)}
    return set()


def pieces(run: Run, key: str) -> list[tuple[str, Any]]:
    """The evidence the judge of `key` reads on the clean run (which it PASSes):
    ("field", (event index, key)) for each non-empty field read on an event it relies on,
    ("event", index) for each such event, the run_start / run_end of each start those belong
    to or its result names, ("file", path) for each file of the run it opened. A reference
    with another provider of the same key is not a piece (the other provides it)."""
    with tracking(run.dir) as reads:
        result = verdict(run, run.events, key, tracked=True)
    assert result.status is Status.PASS, (key, result.reason)
    aid = key.split("@")[0]
    keys_of: dict[int, set[str]] = {}
    for i, k in reads.fields:
        if k not in IDENTITY:
            keys_of.setdefault(i, set()).add(k)
    evidence = {i for i, ks in keys_of.items() if ks - FILTERS.get(str(run.events[i].get("kind")), DEFAULT_FILTER)}
    providers = _providers(run.events)
    shared = {i for idx in providers.values() if len(idx) > 1 for i in idx}
    evidence -= shared
    names = {str(e.get("run")) for e in run.events if e.get("kind") == "run_start"}
    # a wave attempt the campaign repeated: what the poller saw in it is not the evidence
    # of concurrency (the repeat's is), though the attempt's replies are compared like any
    last_try: dict[tuple[Any, ...], int] = {}
    for e in run.events:
        if e.get("kind") == "wave":
            k = (e.get("run"), e.get("attempt"), e.get("phase"), e.get("wave"))
            last_try[k] = max(last_try.get(k, 0), int(e.get("retry", 0)))
    repeated = {
        i
        for i, e in enumerate(run.events)
        if e.get("kind") == "wave"
        and int(e.get("retry", 0)) < last_try[(e.get("run"), e.get("attempt"), e.get("phase"), e.get("wave"))]
    }
    runs_used = {run.events[i].get("run") for i in evidence} | _runs_named(result.evidence, names)
    bounds = {
        i for i, e in enumerate(run.events) if e.get("kind") in ("run_start", "run_end") and e.get("run") in runs_used
    }
    out: list[tuple[str, Any]] = [
        ("field", (i, k))
        for i in sorted(evidence)
        for k in sorted(keys_of[i])
        if k in run.events[i]
        and emptied(run.events[i][k]) is not None
        and (aid, run.events[i].get("kind"), k) not in REDUNDANT
        and (aid, run.events[i].get("kind"), k) not in BOUND_READS
        and (run.events[i].get("kind"), k) not in NOT_PASS_EVIDENCE
        and not (k == "role" and run.events[i].get("role") not in DISPATCHED_ROLES)
        and not (k in ("status", "all_in_flight") and i in repeated)
    ]
    out += [("event", i) for i in sorted(evidence | bounds) if (aid, run.events[i].get("kind"), None) not in REDUNDANT]
    out += [("file", p) for p in sorted(reads.files)]
    return out
