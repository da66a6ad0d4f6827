"""Q6/E3: admission is the consecutive validated counts from one upward; statuses combine
FAIL > BLOCKED > PENDING > PASS with NOT_APPLICABLE neutral."""

from __future__ import annotations

import pytest

from parval.gates.admission import admitted_counts, verdict_line
from parval.status import Result, Status, combine, not_applicable

P, F, Pe, B, NA = Status.PASS, Status.FAIL, Status.PENDING, Status.BLOCKED, Status.NOT_APPLICABLE


def test_combine_order() -> None:
    assert combine([P, Pe, B, F]) is F
    assert combine([P, Pe, B]) is B
    assert combine([P, Pe]) is Pe
    assert combine([P, NA]) is P
    assert combine([NA]) is NA
    assert combine([]) is NA


def test_not_applicable_needs_a_reason() -> None:
    with pytest.raises(ValueError):
        Result("M6.batch", Status.NOT_APPLICABLE)
    assert not_applicable("M6.batch", "plan does not admit batching").applicable is False


@pytest.mark.parametrize(
    ("counts", "verdicts", "expected"),
    [
        ([1, 2, 4], {1: P, 2: P, 4: P}, [1, 2, 4]),
        ([1, 2, 4], {1: P, 2: P, 4: F}, [1, 2]),
        ([1, 2, 4], {1: P, 2: F, 4: P}, [1]),  # a pass at 4 never skips a failed 2
        ([1, 2, 3, 4], {1: P, 2: P, 3: B, 4: P}, [1, 2]),  # memory-blocked 3 is not skipped
        ([1, 2, 4], {1: P, 2: P}, [1, 2]),  # 4 never ran: never admitted
        ([2, 4], {2: P, 4: P}, []),  # nothing validated from one upward
        ([1, 2], {1: Pe, 2: P}, []),
    ],
)
def test_admitted_counts(counts: list[int], verdicts: dict[int, Status], expected: list[int]) -> None:
    assert admitted_counts(counts, verdicts) == expected


def test_verdict_line_pending_wording_and_exit_codes() -> None:
    pend = [Result("M5.stable", Pe, "no rule")]
    line, code = verdict_line(False, [1], pend, interrupted=False)
    assert line.startswith("evidence collected; validation pending") and code == 3
    line, code = verdict_line(False, [1], [Result("M2.exact", F, "x", count=4)], interrupted=False)
    assert line.startswith("NOT ADMITTED") and "M2.exact@4" in line and code == 1
    line, code = verdict_line(True, [1, 2], [Result("M2.exact", P, "x")], interrupted=False)
    assert line == "ADMITTED at counts 1, 2" and code == 0
    _, code = verdict_line(False, [1], [Result("M2.exact", P, "x")], interrupted=True)
    assert code == 3
