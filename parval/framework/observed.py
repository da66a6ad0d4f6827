"""Probes record, judges decide: what an observation holds and what the framework judges of
every group share.

A probe drives the server and writes down what it saw (an `observation` event, filled
through `Obs`): every request's send and completion times, status, error text and output
hash, the status samples and observer-trace lines of the window, whether bounded waits saw
what they waited for, the measured timing (`Timing`, which also sets the tolerances judges
allow) and the references the outputs are compared with. A judge (a pure function in the
judges_f1 ... judges_f5 module of the assertion group it judges, listed in that module's
`JUDGES` table and assembled by parval.framework.judges) reads those facts through the
views here (flights, samples, timing) and fills a `Verdict`, with the building blocks
below, at run time and again in `parval report --rejudge`, so a fix to a judge applies to
an old record.

This module and the `judges*` modules import nothing that talks to a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Required, TypedDict, TypeVar

from parval.jsontypes import JsonValue
from parval.status import Status

# -- what an observation holds -------------------------------------------------------------

Facts = dict[str, Any]
INF = float("inf")
V = TypeVar("V")


def _of(kind: type[V], value: object) -> V | None:
    """`value` when it has the recorded type, else None (a fact the probe could not take)."""
    return value if isinstance(value, kind) else None


class FlightRecord(TypedDict, total=False):
    """One request as parval.framework.rig.Rig.fact records it: times relative to the rig
    start, `t_done` None while unanswered; a reply adds its time, outcome and output hash
    (a run) or error text and small JSON body (anything else)."""

    label: Required[str]
    model: str | None
    method: str
    path: str
    t_send: Required[float]
    finished: bool
    t_done: float | None
    status: int | None
    cancelled: bool
    ms: float
    outcome: str
    error: str
    artifact: str
    output: str | None
    wall_ms: float
    message: str
    json: JsonValue


class StatusRead(TypedDict, total=False):
    """One status read taken while a manager waited (a canary flight, or the slowest poll)."""

    t_send: Required[float]
    t_done: float | None
    status: int | None


class StatusReads(TypedDict, total=False):
    """The status reads taken while a manager waited, and when the manager answered (None:
    still waiting after the reads); judged by `stalled`."""

    still_waiting: bool
    canaries: list[StatusRead]
    manager_t_done: float | None


class Stagger(StatusReads, total=False):
    """A manager staggered behind older work (parval.framework.scenarios.stagger_manager):
    whether it still waited after the gap, and the status reads taken meanwhile."""

    what: Required[str]
    manager: Required[str]
    behind: Required[list[str]]
    skipped: bool


@dataclass(frozen=True)
class FlightFact:
    """One request as recorded: times relative to the rig start (None: never finished)."""

    raw: FlightRecord

    @property
    def label(self) -> str:
        return str(self.raw["label"])

    @property
    def model(self) -> str | None:
        return _of(str, self.raw.get("model"))

    @property
    def status(self) -> int | None:
        return _of(int, self.raw.get("status"))

    @property
    def t_send(self) -> float:
        return float(self.raw["t_send"])

    @property
    def t_done(self) -> float:
        t = self.raw.get("t_done")
        return INF if t is None else float(t)

    @property
    def finished(self) -> bool:
        return self.raw.get("t_done") is not None or bool(self.raw.get("finished"))

    @property
    def elapsed_s(self) -> float | None:
        ms = self.raw.get("ms")
        return None if ms is None else float(ms) / 1000

    @property
    def wall_s(self) -> float | None:
        """The server's own prepare+run time for this request (timing.wall_ms), if reported."""
        ms = self.raw.get("wall_ms")
        return None if ms is None else float(ms) / 1000

    @property
    def latest_run_start(self) -> float | None:
        """The latest the server's own run can have begun (reply time minus its run; a reply
        read late only moves the true start earlier); None without a server-side time."""
        wall = self.wall_s
        return None if wall is None or not self.finished else self.t_done - wall

    @property
    def message(self) -> str:
        return str(self.raw.get("message") or "")

    @property
    def output(self) -> str | None:
        return _of(str, self.raw.get("output"))

    @property
    def cancelled(self) -> bool:
        return bool(self.raw.get("cancelled"))

    def json(self) -> JsonValue:
        return self.raw.get("json")


def flights(facts: Facts, key: str = "flights") -> list[FlightFact]:
    return [FlightFact(f) for f in facts.get(key) or []]


def named(facts: Facts, *labels: str) -> list[FlightFact]:
    """The recorded flights with these labels, in that order. A label the observation names
    but holds no flight for is missing evidence (KeyError: the judge gives PENDING)."""
    by = {f.label: f for f in flights(facts)}
    missing = [x for x in labels if x not in by]
    if missing:
        raise KeyError(f"observation has no flight {', '.join(map(repr, missing))}")
    return [by[x] for x in labels]


def flight(facts: Facts, label: str) -> FlightFact:
    return named(facts, label)[0]


def listed(facts: Facts, *keys: str) -> list[FlightFact]:
    """The flights whose labels the observation lists under `keys` (in that order); a list
    that is absent or empty is missing evidence (KeyError: the judge gives PENDING)."""
    labels: list[str] = []
    for key in keys:
        found = facts[key]
        if not isinstance(found, list) or not found:
            raise KeyError(f"the observation lists no {key}")
        labels += [str(x) for x in found]
    return named(facts, *labels)


def with_prefix(facts: Facts, prefix: str) -> list[FlightFact]:
    return [f for f in flights(facts) if f.label.startswith(prefix)]


@dataclass(frozen=True)
class Timing:
    """Measured on the candidate: warm request, cold load and idle unload times (seconds).

    Every window a probe needs is derived from these, so the same probe forces the same
    orders on a 150 ms stand-in and a 3 s real checkpoint.
    """

    service_s: float
    load_s: float
    teardown_s: float

    @property
    def gap_s(self) -> float:
        """Stagger between sends whose enqueue cannot be observed (managers)."""
        return min(0.25, max(0.03, self.service_s / 6))

    @property
    def tol_s(self) -> float:
        """Completion-time tolerance: a request that ran later finishes >= a service later."""
        return self.service_s / 2

    @property
    def overdue_ms(self) -> int:
        """Probe busy timeout for overdue checks: leaves room for the whole probe window."""
        return max(10, int((0.9 * self.service_s - 2 * self.gap_s) * 1000 / 2.5))

    @property
    def ceiling_ms(self) -> int:
        """Short model ceiling for timeout checks: half a request, so an occupant is still
        young (not overdue) when a bounded caller arrives and still running when it gives up."""
        return max(30, int(self.service_s * 1000 / 2))

    @property
    def slack_s(self) -> float:
        """Bound for any single forced scenario to finish (deadlock detection)."""
        return max(5.0, 8 * (self.service_s + self.load_s + self.teardown_s))

    def too_short(self, min_service_ms: float) -> str | None:
        if self.service_s * 1000 < min_service_ms:
            return (
                f"a warm request takes {self.service_s * 1000:.0f} ms, under min_service_ms="
                f"{min_service_ms:g}: too short to force an order; use a longer request fixture"
            )
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "service_ms": round(self.service_s * 1000, 2),
            "load_ms": round(self.load_s * 1000, 2),
            "teardown_ms": round(self.teardown_s * 1000, 2),
            "gap_ms": round(self.gap_s * 1000, 2),
            "tolerance_ms": round(self.tol_s * 1000, 2),
            "overdue_probe_ms": self.overdue_ms,
            "short_ceiling_ms": self.ceiling_ms,
            "scenario_bound_s": round(self.slack_s, 2),
        }


def timing_of(facts: Facts) -> Timing:
    t = facts["timing"]
    return Timing(float(t["service_ms"]) / 1000, float(t["load_ms"]) / 1000, float(t["teardown_ms"]) / 1000)


@dataclass(frozen=True)
class Sample:
    """One status sample of one model: [t, active, queued, loaded, max_parallel, slots]."""

    t: float
    active: int | None
    queued: int | None
    loaded: bool | None
    capacity: int | None
    slots: JsonValue


def samples(facts: Facts, key: str = "samples") -> list[Sample]:
    return [Sample(*row) for row in facts.get(key) or []]


class Obs:
    """The collector a probe fills while it forces a situation (no judgement here).

    `wait` records a bounded wait and whether it saw what it waited for; a probe reads
    `blocked` only to stop forcing a situation that can no longer be judged."""

    def __init__(self, **facts: object) -> None:
        self.facts: Facts = {"waits": [], **facts}

    def wait(self, what: str, seen: bool, *, unseen: str | None = None) -> bool:
        """A bounded wait for `what`; `unseen` is the text when it was not seen (default
        "never observed <what>")."""
        entry: dict[str, object] = {"what": what, "seen": bool(seen)}
        if unseen is not None:
            entry["unseen"] = unseen
        self.facts["waits"].append(entry)
        return bool(seen)

    @property
    def blocked(self) -> bool:
        return any(not w["seen"] for w in self.facts["waits"]) or any(
            stalled(s) for s in self.facts.get("staggers", [])
        )

    def __setitem__(self, key: str, value: object) -> None:
        self.facts[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.facts[key]


def stalled(stagger: StatusReads) -> bool:
    """From the status canaries read while a manager waited: True when a read could only be
    answered once the manager finished (a registry lock held across a management wait)."""
    canaries = stagger.get("canaries") or []
    if not canaries:
        return False
    for c in canaries:
        if c.get("t_done") is None or c.get("status") != 200:
            return True
    manager_done = stagger.get("manager_t_done")
    if manager_done is None:  # still waiting after the reads: the registry answered freely
        return False
    last = canaries[-1]
    last_done = last.get("t_done")
    if last_done is None:  # not reached: every read answered (checked above)
        return True
    # Blocked reads are answered when the lock is released, within a few ms of the
    # manager's own reply (either order); a free registry answers long before it.
    window = max(0.005, 0.2 * (float(manager_done) - float(last["t_send"])))
    return float(last_done) >= float(manager_done) - window


# -- what a judge fills --------------------------------------------------------------------


class Verdict:
    """Collects what was required of one forced situation and why it could not be judged
    (filled by a judge over recorded facts, with the building blocks below)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.blockers: list[str] = []
        self.unsupported_by: list[str] = []
        self.pendings: list[str] = []
        self.passed: list[str] = []
        self.inapplicable: list[str] = []
        self.unforced: list[str] = []  # blockers that say the situation was not forced
        self.verbatim: str | None = None  # a given sub-check's own text, shown as it is

    def require(self, condition: bool, text: str) -> bool:
        (self.passed if condition else self.problems).append(text)
        return condition

    def block(self, text: str) -> None:
        """Something else got in the way (another defect, a stalled registry): trying the
        same situation again would meet it again."""
        self.blockers.append(text)

    def not_forced(self, text: str) -> None:
        """The probe could not force the situation this time (the machine was too slow, the
        load finished too fast): BLOCKED, and worth another attempt."""
        self.blockers.append(text)
        self.unforced.append(text)

    def labelled(self, prefix: str) -> Verdict:
        """A copy whose texts name which attempt they come from."""
        out = Verdict()
        for name in ("problems", "blockers", "unsupported_by", "pendings", "passed", "inapplicable", "unforced"):
            setattr(out, name, [f"{prefix}: {x}" for x in getattr(self, name)])
        out.verbatim = self.verbatim
        return out

    @property
    def retry(self) -> bool:
        """BLOCKED only because the situation was not forced: a probe tries again."""
        return self.status is Status.BLOCKED and len(self.unforced) == len(self.blockers)

    def pend(self, text: str) -> None:
        self.pendings.append(text)

    def unsupported(self, text: str) -> None:
        """The server refuses the combination (it lacks the route or the counters)."""
        self.unsupported_by.append(text)

    def not_applicable(self, text: str) -> None:
        """The case does not arise here (a platform or implementation reason)."""
        self.inapplicable.append(text)

    @property
    def status(self) -> Status:
        if self.problems:
            return Status.FAIL
        if self.blockers:
            return Status.BLOCKED
        if self.unsupported_by:
            return Status.UNSUPPORTED
        if self.pendings:
            return Status.PENDING
        if self.inapplicable and not self.passed:
            return Status.NOT_APPLICABLE
        if not self.passed:  # nothing was shown: no evidence is never a pass
            return Status.PENDING
        return Status.PASS

    def detail(self) -> str:
        if self.verbatim is not None:
            return self.verbatim
        if self.problems:
            return "violated: " + "; ".join(self.problems)
        if self.blockers:
            return "could not be judged: " + "; ".join(self.blockers)
        if self.unsupported_by:
            return "; ".join(self.unsupported_by)
        if self.pendings:
            return "not set up: " + "; ".join(self.pendings)
        if self.inapplicable and not self.passed:
            return "; ".join(self.inapplicable)
        return "; ".join(self.passed) or "not set up: the judge was shown no evidence"


Judge = Callable[[Facts], Verdict]


# -- pure building blocks of judges ----------------------------------------------------------

STALLED = (
    "status reads stalled while {what} waited (registry lock held across a management "
    "wait; judged by F5.no_convoy), so the forced order could not be observed"
)


def margin_s(facts: Facts) -> float:
    """How far apart two client-observed completions may land in either order when a
    correct server orders them strictly: half a request, measured in this observation (the
    quickest successful request it holds, which ran under the same load) or, when that is
    shorter, half the calibrated request. A busy machine stretches both."""
    t = timing_of(facts)
    quick = [x.elapsed_s for x in flights(facts) if x.output is not None and x.elapsed_s is not None]
    return max(t.tol_s, 0.5 * min(quick)) if quick else t.tol_s


def waits(v: Verdict, facts: Facts, *, managers: tuple[str, ...] = ()) -> None:
    """The waits that force the situation: the probe must have recorded them, a bounded
    wait that never saw its state means the situation was not forced (BLOCKED, tried again).
    Each manager in `managers` must have been staggered behind older work: one that had
    already finished is a violation only when that older work was still running when it
    answered (else not forced); a stalled registry blocks. With a wait unseen the older
    work was not shown queued ahead of the manager, so its order is not judged."""
    recorded = facts["waits"]
    if not recorded:
        raise KeyError("observation records no bounded wait (the forced situation is unknown)")
    unseen = [w for w in recorded if not w["seen"]]
    for w in unseen:
        v.not_forced(str(w.get("unseen") or f"never observed {w['what']}"))
    staggers = {str(s["manager"]): s for s in facts["staggers"]} if managers else {}
    for label in managers:
        s = staggers[label]  # KeyError: the stagger was not recorded
        if s.get("skipped") or unseen:
            continue
        if not s["still_waiting"]:
            _finished_early(v, facts, s)
        elif stalled(s):
            v.block(STALLED.format(what=s["what"]))
        else:
            v.require(True, f"{s['what']} was still waiting for older work after the stagger")


def _finished_early(v: Verdict, facts: Facts, s: Stagger) -> None:
    """A manager seen finished after its stagger: did it skip older work still running?"""
    manager = named(facts, str(s["manager"]))[0]
    behind = named(facts, *s["behind"])
    if not behind:
        raise KeyError("the stagger names no older work the manager waited behind")
    last = max(x.t_done for x in behind)
    if manager.t_done < last - margin_s(facts):
        v.require(
            False,
            f"{s['what']} answered {ms(last - manager.t_done)} ms before the older work it had to wait for finished",
        )
    else:
        v.not_forced(f"the older work finished before {s['what']} could be seen waiting behind it")


def all_ok(v: Verdict, items: Iterable[FlightFact], what: str) -> bool:
    """Every one of `items` answered 200; no item at all is no evidence (PENDING)."""
    items = list(items)
    if not items:
        v.pend(f"no {what} were recorded")
        return False
    bad = [f"{f.label}={f.status}" for f in items if f.status != 200]
    return v.require(not bad, f"{what} answered 200" + (f" (got {', '.join(bad)})" if bad else ""))


def no_overtaking(v: Verdict, ordered: list[FlightFact], tol_s: float, what: str) -> None:
    """In FIFO admission an earlier-enqueued identical request finishes no later than a
    later one (within `tol_s`, under a service time)."""
    worst: tuple[float, str, str] | None = None
    for i, early in enumerate(ordered):
        for late in ordered[i + 1 :]:
            lead = early.t_done - late.t_done
            if lead > tol_s and (worst is None or lead > worst[0]):
                worst = (lead, early.label, late.label)
    if worst is None:
        v.require(True, f"{what}: no later request finished ahead of an earlier one")
    else:
        v.require(
            False,
            f"{what}: {worst[2]} finished {worst[0] * 1000:.0f} ms before the earlier-enqueued {worst[1]} (overtaken)",
        )


def unloaded_ids(f: FlightFact) -> list[str]:
    body = f.json()
    unloaded = body.get("unloaded") if isinstance(body, dict) else None
    if isinstance(unloaded, list):
        return [str(x) for x in unloaded]
    return []


def reference(refs: dict[str, dict[str, list[str]]], model: str, tag: str, phase: str | None) -> tuple[str | None, str]:
    """The one reference output a flight of this registration and phase must equal, or
    None with why it cannot be judged (no reference, or an ambiguous one)."""
    phases = refs.get(f"{model}|{tag}", {})
    if not phases:
        return None, f"no serial reference was recorded for {model} ({tag})"
    if phase is None:
        # The history of the flight is not forced: only a registration whose cold and
        # warm outputs coincide has one reference for it.
        seen = set().union(*map(set, phases.values()))
        want = "any phase"
    else:
        seen = set(phases.get(phase, []))
        want = phase
    if len(seen) == 1:
        return next(iter(seen)), ""
    if not seen:
        return None, f"no {want} serial reference was recorded for {model} ({tag})"
    return None, (
        f"the {want} serial references of {model} ({tag}) differ ({len(seen)} outputs), "
        "so the equivalent single-slot history cannot be told"
    )


def outputs_match(
    v: Verdict, facts: Facts, tag: str, items: list[FlightFact], what: str, *, phase: str | None = None
) -> None:
    """Each successful flight equals its own registration's reference for `phase` (None:
    a history the probe did not force). A missing or ambiguous reference is not judged."""
    refs = facts.get("refs") or {}
    default_model = str(facts.get("model_id", ""))
    ok = [f for f in items if f.status == 200]
    if not ok:  # nothing compared is no evidence of exact outputs
        v.pend(f"{what}: no successful reply whose output could be compared")
        return
    wrong: list[str] = []
    unjudged: list[str] = []
    for f in ok:
        ref, why = reference(refs, f.model or default_model, tag, phase)
        if ref is None:
            unjudged.append(why)
        elif f.output != ref:
            wrong.append(f.label)
    for why in sorted(set(unjudged)):
        v.pend(f"{what} outputs not compared: {why}")
    if len(unjudged) == len(ok):
        return
    ref_what = f"'{tag}' {phase} reference" if phase else f"'{tag}' reference"
    v.require(
        not wrong,
        f"{what} outputs equal their registration's {ref_what}" + (f" (differ: {', '.join(wrong)})" if wrong else ""),
    )


def ms(seconds: float) -> int:
    return int(seconds * 1000) if seconds not in (INF, -INF) else 10**9


def queued_work_opening(
    f: Facts, *labels: str, managers: tuple[str, ...]
) -> tuple[Verdict, list[FlightFact], list[FlightFact]]:
    """What the queued-work judges share: waits honoured, `managers` staggered behind the
    work ahead of them, the occupants and the named flights, everything settled within bound."""
    v = Verdict()
    waits(v, f, managers=managers)
    occupants = listed(f, "occupants")
    flights = [flight(f, label) for label in labels]
    v.require(bool(f["settled"]), "everything completed within bound")
    return v, occupants, flights


def judged(fn: Judge, facts: Facts) -> Verdict:
    """`fn(facts)`; facts without a field the judge reads are missing evidence: PENDING
    naming it, never a pass and never a violation."""
    try:
        return fn(facts)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        v = Verdict()
        v.pend(f"the observation lacks evidence this judge reads ({type(exc).__name__}: {exc})")
        return v


def over_attempts(verdicts: list[Verdict]) -> Verdict:
    """Several attempts at one situation: a violation seen in any attempt stands (it is not
    undone by a later attempt); else the first attempt that forced the situation and passed;
    else the last attempt, saying how many were made."""
    if not verdicts:
        v = Verdict()
        v.pend("no attempt was recorded")
        return v
    k = len(verdicts)
    for i, v in enumerate(verdicts, 1):
        if v.status is Status.FAIL:
            return v.labelled(f"attempt {i} of {k}")
    for i, v in enumerate(verdicts, 1):
        if v.status is Status.PASS:
            earlier = "; ".join(b for w in verdicts[: i - 1] for b in w.blockers)
            out = v.labelled(f"attempt {i} of {k}")
            if earlier:
                out.passed.append(f"earlier attempt(s) not forced: {earlier}")
            return out
    return verdicts[-1].labelled(f"after {k} attempt(s)")
