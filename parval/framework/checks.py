"""Sub-checks and how they become F assertion results.

A probe records what it forced (an observation) and a pure judge over those facts decides
one sub-check (parval.framework.observed). A sub-check is FAIL when the
server broke the contract, BLOCKED when the forced situation could not be judged because
something else got in the way (another defect, a stalled registry), PENDING when the
situation could not be set up here (403 without ui_management, a too-short request), and
NOT_APPLICABLE only with a platform/implementation reason. An assertion combines its
sub-checks (FAIL > BLOCKED > PENDING > PASS) and carries the contract limitations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from parval.framework import contract
from parval.jsontypes import JsonObject
from parval.status import Result, Status, combine


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


class Verdict:
    """Collects what was required of one forced situation and why it could not be judged
    (filled by a judge over recorded facts, parval.framework.observed)."""

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
