"""M4 runs "once per model/backend at the largest admitted count": a count above the one
the recovery start ran at (validated by another run or shard) has no recovery evidence, so
admission ends below it; its M4 entries are PENDING there, naming the count M4 ran at."""

from __future__ import annotations

from parval.gates.admission_verdict import RECOVERY_COUNT, decide
from parval.status import Result, Status
from tests.closed_list_kit import filled


def _count(n: int) -> list[Result]:
    return [Result("M2.exact", Status.PASS, "exact", count=n)]


def _decide(recovery_at: int | None) -> tuple[list[int], dict[int, list[Result]]]:
    evidence = {RECOVERY_COUNT: recovery_at} if recovery_at is not None else {}
    model_level = [Result("M4.invalid_alongside", Status.PASS, "held", evidence)]
    per_count = {n: _count(n) for n in (1, 2, 3)}
    d = decide([1, 2, 3], *filled([1, 2, 3], model_level, per_count, []), interrupted=False, missing="not collected")
    return d.admitted, per_count


def test_admission_stops_at_the_count_m4_ran_at() -> None:
    admitted, per_count = _decide(2)
    assert admitted == [1, 2]
    (m4,) = [r for r in per_count[3] if r.id == "M4.invalid_alongside"]
    assert m4.status is Status.PENDING and "M4 ran at count 2 (its recovery start), below count 3" in m4.reason


def test_recovery_at_the_largest_count_admits_every_count() -> None:
    assert _decide(3)[0] == [1, 2, 3]
    assert _decide(None)[0] == [1, 2, 3]  # evidence that names no count: as before


def test_a_recovery_start_that_names_no_count_admits_none() -> None:
    """M4 PASSes with the count its start ran at, 0 when the start's `run_start` names none
    (an emptied field): no count can be shown at or below it."""
    admitted, per_count = _decide(0)
    assert admitted == []
    (m4,) = [r for r in per_count[1] if r.id == "M4.invalid_alongside"]
    assert m4.status is Status.PENDING and "names no count it ran at" in m4.reason
