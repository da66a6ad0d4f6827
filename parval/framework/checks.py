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
