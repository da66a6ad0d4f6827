"""Assertion statuses, per-assertion results and how statuses combine.

FAIL beats BLOCKED beats PENDING beats PASS. NOT_APPLICABLE is neutral but must carry a
reason. UNSUPPORTED marks a combination the server itself refuses; it blocks admission
of that count like BLOCKED does (the count stays at one slot).

A `Result` is immutable once built: a later step (masking, a count, a reproduction line,
a limitation) makes a new one with `dataclasses.replace`, so the verdict a judge returned
is never rewritten in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    PENDING = "PENDING"
    BLOCKED = "BLOCKED"
    UNSUPPORTED = "UNSUPPORTED"
    NOT_APPLICABLE = "NOT_APPLICABLE"


# Higher rank wins when statuses combine.
_RANK = {
    Status.NOT_APPLICABLE: 0,
    Status.PASS: 1,
    Status.PENDING: 2,
    Status.UNSUPPORTED: 3,
    Status.BLOCKED: 4,
    Status.FAIL: 5,
}


def combine(statuses: Iterable[Status]) -> Status:
    """Combine statuses: FAIL > BLOCKED > UNSUPPORTED > PENDING > PASS; N/A is neutral.

    An empty or all-NOT_APPLICABLE input gives NOT_APPLICABLE.
    """
    best = Status.NOT_APPLICABLE
    for s in statuses:
        if _RANK[s] > _RANK[best]:
            best = s
    return best


@dataclass(frozen=True)
class Result:
    """One assertion's verdict with everything a reviewer needs to check it.

    Frozen: change one with `dataclasses.replace` (copying `evidence`, and any nested dict
    it changes, rather than editing it). `evidence` is typed read-only; `limitations` is
    kept as a tuple (a list given is converted)."""

    id: str
    status: Status
    reason: str = ""
    evidence: Mapping[str, object] = field(default_factory=dict)
    reproduction: str = ""
    limitations: Sequence[str] = ()
    applicable: bool = True
    count: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.limitations, tuple):
            object.__setattr__(self, "limitations", tuple(self.limitations))
        if self.status is Status.NOT_APPLICABLE:
            object.__setattr__(self, "applicable", False)
            if not self.reason:
                raise ValueError(f"{self.id}: NOT_APPLICABLE needs a reason")

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "status": str(self.status),
            "applicable": self.applicable,
            "reason": self.reason,
            "evidence": dict(self.evidence),
            "reproduction": self.reproduction,
            "limitations": list(self.limitations),
        }
        if self.count is not None:
            out["count"] = self.count
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(
            id=data["id"],
            status=Status(data["status"]),
            reason=data.get("reason", ""),
            evidence=dict(data.get("evidence", {})),
            reproduction=data.get("reproduction", ""),
            limitations=tuple(data.get("limitations", [])),
            applicable=bool(data.get("applicable", True)),
            count=data.get("count"),
        )


def passed(id_: str, reason: str, **evidence: object) -> Result:
    return Result(id_, Status.PASS, reason, dict(evidence))


def failed(id_: str, reason: str, **evidence: object) -> Result:
    return Result(id_, Status.FAIL, reason, dict(evidence))


def pending(id_: str, reason: str, **evidence: object) -> Result:
    return Result(id_, Status.PENDING, reason, dict(evidence))


def blocked(id_: str, reason: str, **evidence: object) -> Result:
    return Result(id_, Status.BLOCKED, reason, dict(evidence))


def not_applicable(id_: str, reason: str) -> Result:
    return Result(id_, Status.NOT_APPLICABLE, reason)
