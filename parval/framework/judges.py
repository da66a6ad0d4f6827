"""Judging a framework run, with no server: the registry of every observation judge, an
observation judged into a sub-check, and sub-checks combined into one result per F
assertion.

The key an observation names -> the pure function that judges it (each group's module
lists its own in a `JUDGES` table; this module assembles them, so importing it is what
makes every key known), attempt by attempt, with missing evidence PENDING (`run_judge`).
A probe hands what it observed to `Findings.observe`; the sub-check (`Check`) is that
judge's verdict. A sub-check is FAIL when the server broke the contract, BLOCKED when the
forced situation could not be judged because something else got in the way (another
defect, a stalled registry), PENDING when the situation could not be set up here (403
without ui_management, a too-short request), and NOT_APPLICABLE only with a
platform/implementation reason. An assertion combines its sub-checks (FAIL > BLOCKED >
PENDING > PASS) and carries the contract limitations (`assertion_result`); `judge` gives
every F assertion its result from the recorded sub-checks, CTest runs and judging inputs,
at run time and in `parval report --rejudge`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, NotRequired, TypedDict, get_args

from parval.framework import contract, judges_f1, judges_f2, judges_f3, judges_f4, judges_f5
from parval.framework.ctest import DEFAULT_SANITIZERS, CTestRun
from parval.framework.judges_f6 import assess_f6, coverage_map
from parval.framework.observed import Facts, Judge, Verdict, judged, over_attempts
from parval.framework.preconditions import Capabilities, first_missing
from parval.jsontypes import JsonObject
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.rundir.event_types import JudgeInputsEvent
from parval.rundir.files import dumps
from parval.status import Result, Status, combine

# -- sub-checks ----------------------------------------------------------------------------------


class CheckJson(TypedDict):
    """A sub-check as `Check.to_json` writes it."""

    assertion: str
    name: str
    status: str
    detail: str
    evidence: NotRequired[JsonObject]


@dataclass
class Check:
    assertion: str
    name: str
    status: Status
    detail: str
    evidence: JsonObject = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {
            "assertion": self.assertion,
            "name": self.name,
            "status": str(self.status),
            "detail": self.detail,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, raw: CheckJson) -> Check:
        return cls(
            str(raw["assertion"]),
            str(raw["name"]),
            Status(raw["status"]),
            str(raw["detail"]),
            dict(raw.get("evidence") or {}),
        )


# -- judges of situations that were not forced -----------------------------------------------


def given(facts: Facts) -> Verdict:
    """A sub-check that is not a judgement of server behaviour: skipped by the probes file,
    a probe that could not finish, a too-short request, a capacity the case needs, a
    platform reason."""
    v = Verdict()
    status = Status(facts["status"])
    text = str(facts["detail"])
    if status is Status.BLOCKED:
        v.block(text)
    elif status is Status.PENDING:
        v.pend(text)
    elif status is Status.NOT_APPLICABLE:
        v.not_applicable(text)
    else:
        raise ValueError(
            f"a given sub-check cannot be {status}: PASS, FAIL and UNSUPPORTED come from a judge over what was observed"
        )
    v.verbatim = text
    return v


def precondition(facts: Facts) -> Verdict:
    """What the calibration start found missing, from the recorded capabilities."""
    v = Verdict()
    if not facts["needs"]:
        raise KeyError("the observation names no precondition")
    gap = first_missing(Capabilities.from_json(facts["capabilities"]), tuple(facts["needs"]))
    if gap is None:
        v.require(True, "preconditions met: " + ", ".join(facts["needs"]))
    elif gap[0] is Status.UNSUPPORTED:
        v.unsupported(gap[1])
        v.verbatim = gap[1]
    else:
        v.pend(gap[1])
        v.verbatim = gap[1]
    return v


def assemble(*tables: dict[str, Judge]) -> dict[str, Judge]:
    """One registry from the groups' tables; a key listed twice is a programming error."""
    registry: dict[str, Judge] = {}
    for table in tables:
        for key, fn in table.items():
            if key in registry:
                raise ValueError(f"judge {key} registered twice")
            registry[key] = fn
    return registry


JUDGES: dict[str, Judge] = assemble(
    {"given": given, "precondition": precondition},
    judges_f1.JUDGES,
    judges_f2.JUDGES,
    judges_f3.JUDGES,
    judges_f4.JUDGES,
    judges_f5.JUDGES,
)


# Judges that read every attempt of an observation themselves (a later attempt is weighed
# against the earlier ones), rather than attempt by attempt.
WHOLE_RECORD: frozenset[Judge] = frozenset({judges_f4.stalled_socket_io, judges_f5.warm_during_cold})


def run_judge(key: str, facts: Facts) -> Verdict:
    """The verdict of the judge `key` over one observation; an observation of several
    attempts (a probe that tried again) is judged attempt by attempt (`over_attempts`),
    unless the judge weighs the attempts together (`WHOLE_RECORD`)."""
    fn = JUDGES.get(key)
    if fn is None:
        raise KeyError(f"no framework judge named {key!r} (recorded by another parval version?)")
    attempts = facts.get("attempts") if isinstance(facts, dict) else None
    if isinstance(attempts, list) and fn not in WHOLE_RECORD:
        return over_attempts([judged(fn, a) for a in attempts])
    return judged(fn, facts)


# -- the sub-checks of one run ----------------------------------------------------------------


# (assertion, sub-check name, judge key, facts, evidence the check carries)
Observe = Callable[[str, str, str, Facts, JsonObject], object]


class Findings:
    """Every sub-check of one framework run, in the order the probes produced them.

    A probe hands over what it observed (`observe`: facts + the key of a pure judge); the
    sub-check is that judge's verdict over the facts. Both the observation and the derived
    check are events: `parval report --rejudge` re-runs the judges over the observations."""

    def __init__(self, record: Callable[[Check], object] | None = None, observe: Observe | None = None) -> None:
        self.checks: list[Check] = []
        self._record = record
        self._observe = observe

    def observe(self, assertion: str, name: str, judge: str, facts: Facts, **evidence: object) -> Check:
        """Record what one situation showed and judge it with the judge named `judge`."""
        if assertion not in FRAMEWORK_GATE:
            raise ValueError(f"unknown framework assertion {assertion}")
        # Judged as recorded: the judge reads the JSON the event holds, nothing more.
        facts = json.loads(dumps(facts))
        recorded: JsonObject = json.loads(dumps(evidence))
        if self._observe is not None:
            self._observe(assertion, name, judge, facts, recorded)
        verdict = run_judge(judge, facts)
        return self._add(assertion, name, verdict.status, verdict.detail(), {"judge": judge, **recorded})

    def add(self, assertion: str, name: str, status: Status, detail: str, **evidence: object) -> Check:
        """A sub-check that judges no server behaviour (skipped, not set up, a probe that
        could not finish): only PENDING or BLOCKED, recorded as a `given` observation."""
        if status not in (Status.PENDING, Status.BLOCKED, Status.NOT_APPLICABLE):
            raise ValueError(
                f"a given sub-check cannot be {status}: PASS, FAIL and UNSUPPORTED come from a judge "
                "over what was observed"
            )
        return self.observe(assertion, name, "given", {"status": str(status), "detail": detail}, **evidence)

    def _add(self, assertion: str, name: str, status: Status, detail: str, evidence: JsonObject) -> Check:
        check = Check(assertion, name, status, detail, evidence)
        self.checks.append(check)
        if self._record is not None:
            self._record(check)
        return check

    def of(self, assertion: str) -> list[Check]:
        return [c for c in self.checks if c.assertion == assertion]


# -- sub-checks into F assertion results ------------------------------------------------------


def assertion_result(
    assertion: str,
    checks: Iterable[Check],
    *,
    unrun_reason: str,
    reproduction: str,
    extra_limitations: Iterable[str] = (),
) -> Result:
    """One F assertion from its sub-checks; no sub-check at all is PENDING with a reason."""
    items = list(checks)
    limitations = [*contract.limitations(assertion), *extra_limitations]
    evidence: dict[str, object] = {
        "checks": [c.to_json() for c in items],
        "contract": contract.coverage_json(assertion),
    }
    if not items:
        return Result(assertion, Status.PENDING, unrun_reason, evidence, reproduction, limitations)
    status = combine(c.status for c in items)
    if status is Status.NOT_APPLICABLE:
        reasons = "; ".join(f"{c.name}: {c.detail}" for c in items)
        return Result(assertion, status, reasons, evidence, reproduction, limitations)
    bad = [c for c in items if c.status not in (Status.PASS, Status.NOT_APPLICABLE)]
    if bad:
        reason = " | ".join(f"{c.name} {c.status}: {c.detail}" for c in bad)
    else:
        reason = f"{len(items)} sub-check(s) passed: " + ", ".join(c.name for c in items)
    for c in items:
        if c.status is Status.NOT_APPLICABLE:
            limitations.append(f"{c.name} not applicable: {c.detail}")
    return Result(assertion, status, reason, evidence, reproduction, limitations)


class JudgeInputs(TypedDict, total=False):
    """What judging reads besides the sub-checks and CTest runs (the `judge_inputs` event;
    `judge` names a field an old or damaged record lacks, by a KeyError)."""

    selected: list[str]
    only: str | None
    plan_path: str
    required_tests: list[str]
    default_transport_unchanged: str | None
    sanitizers: list[str]
    sanitizers_unavailable: dict[str, str] | str  # older records: one text
    unrelated_tests: dict[str, str]  # older records: none (unrelated by a name pattern)
    ctest_coverage: dict[str, list[str]]  # the probes file's; older records: none


JudgeInputField = Literal[
    "selected",
    "only",
    "plan_path",
    "required_tests",
    "default_transport_unchanged",
    "sanitizers",
    "sanitizers_unavailable",
    "unrelated_tests",
    "ctest_coverage",
]
JUDGE_INPUT_FIELDS: tuple[JudgeInputField, ...] = get_args(JudgeInputField)


def _unavailable(raw: object) -> dict[str, str]:
    """`sanitizers_unavailable` as recorded: one reason per job (older records: one text)."""
    if isinstance(raw, str) and raw:
        return {label: raw for label in DEFAULT_SANITIZERS}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _declared(inputs: JudgeInputs | JudgeInputsEvent) -> dict[str, str] | None:
    """The tests declared unrelated before the run, with why (None: a record from before
    such declarations, which called failures unrelated by a name pattern)."""
    raw = inputs.get("unrelated_tests")
    if not isinstance(raw, dict):
        return None  # absent, or a pattern: no longer accepted
    return {str(k): str(v) for k, v in raw.items()}


def judge(checks: list[Check], runs: list[CTestRun], inputs: JudgeInputs | JudgeInputsEvent) -> list[Result]:
    """One Result per F assertion, in catalogue order: a pure function of the recorded
    sub-checks, CTest runs and judging inputs."""
    findings = Findings()
    findings.checks = list(checks)
    selected = set(inputs["selected"])
    only = inputs["only"]
    reproduction = f"parval framework {inputs['plan_path']} --only {{id}}"
    out: list[Result] = []
    f6: dict[str, Result] = {}
    if runs:
        for r in assess_f6(
            runs,
            [str(t) for t in inputs.get("required_tests") or []],
            inputs["sanitizers"],
            _unavailable(inputs.get("sanitizers_unavailable")),
            inputs.get("default_transport_unchanged"),
            _declared(inputs),
            coverage_map(inputs.get("ctest_coverage")),
        ):
            f6[r.id] = replace(
                r,
                limitations=[*contract.limitations(r.id), *r.limitations],
                evidence={**r.evidence, "contract": contract.coverage_json(r.id)},
            )
    for aid in FRAMEWORK_GATE:
        if aid not in selected:
            r = Result(
                aid,
                Status.PENDING,
                f"not selected in this record (--only {only})",
                {"checks": [c.to_json() for c in findings.of(aid)]},
                reproduction.format(id=aid),
            )
        elif aid in f6:
            r = f6[aid]
        else:
            r = assertion_result(
                aid,
                findings.of(aid),
                unrun_reason="no probe produced evidence for this assertion",
                reproduction=reproduction.format(id=aid),
            )
        out.append(r)
    return out
