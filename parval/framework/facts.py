"""What a probe records of one forced situation (the facts an observation holds) and the
read-only views judges use on them: flights, status samples, timing; and `Obs`, the
collector a probe fills while it forces the situation. Nothing here judges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Required, TypedDict, TypeVar

from parval.framework.settings import Timing
from parval.jsontypes import JsonValue

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
