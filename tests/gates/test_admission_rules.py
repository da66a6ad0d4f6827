"""Q6/E3: admission is the consecutive validated counts from one upward; statuses combine
FAIL > BLOCKED > PENDING > PASS with NOT_APPLICABLE neutral."""

from __future__ import annotations

import pytest

from parval.gates.admission_verdict import admitted_counts, verdict_line
from parval.status import Result, Status, combine, not_applicable
from tests.closed_list_kit import filled

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
        ([1, 2, 4], {1: P, 2: P, 4: P}, [1, 2]),  # 3 never tested: 4 is never enabled
        ([1, 3], {1: P, 3: P}, [1]),  # 2 never tested: 3 is never enabled
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


def _count(n: int, status: Status, *, short: bool = False) -> list[Result]:
    if short:
        ten = Result("M3.ten_waves", NA, "ran 4 mixed waves", {"short": True, "planned": 4}, count=n)
    else:
        ten = Result("M3.ten_waves", P, "ten", {"rests_on": {"starts": 3}}, count=n)
    return [Result("M2.exact", status, "x", {"rests_on": {"o": 1}} if status is P else {}, count=n), ten]


def test_q6_reports_what_the_rule_gives_and_no_admission_as_its_own_verdict() -> None:
    from parval.gates.admission_verdict import decide

    model = [Result("M1.manifest", P, "ok", {"rests_on": {"m": 1}})]
    d = decide(
        [1, 2, 4],
        *filled([1, 2, 4], list(model), {1: _count(1, P), 2: _count(2, P), 4: _count(4, P)}, []),
        interrupted=False,
        missing="x",
    )
    q6 = next(r for r in d.flat if r.id == "Q6")
    assert d.admitted == [1, 2] and q6.status is Pe and "never tested" in q6.reason and not d.admission_ready
    d = decide(
        [1, 2], *filled([1, 2], list(model), {1: _count(1, F), 2: _count(2, P)}, []), interrupted=False, missing="x"
    )
    q6 = next(r for r in d.flat if r.id == "Q6")
    assert d.admitted == [] and q6.status is F and q6.reason.startswith("no count admitted: count 1 is FAIL")
    d = decide(
        [1, 2], *filled([1, 2], list(model), {1: _count(1, P), 2: _count(2, P)}, []), interrupted=False, missing="x"
    )
    q6 = next(r for r in d.flat if r.id == "Q6")
    assert d.admitted == [1, 2] and q6.status is P and d.admission_ready


def test_the_largest_admitted_count_needs_its_ten_mixed_waves() -> None:
    """[1, 2, 4] with 4 failing: count 2 ran the plan's lower `waves.mixed`, so it cannot be
    the largest admitted count (and neither can 1): nothing is admitted, and count 2's
    M3.ten_waves says why."""
    from parval.gates.admission_verdict import decide

    model = [Result("M1.manifest", P, "ok", {"rests_on": {"m": 1}})]
    per = {1: _count(1, P, short=True), 2: _count(2, P, short=True), 3: _count(3, P), 4: _count(4, F)}
    d = decide([1, 2, 3, 4], *filled([1, 2, 3, 4], list(model), per, []), interrupted=False, missing="x")
    assert d.admitted == [1, 2, 3]
    per = {1: _count(1, P, short=True), 2: _count(2, P, short=True), 3: _count(3, F)}
    d = decide([1, 2, 3], *filled([1, 2, 3], list(model), per, []), interrupted=False, missing="x")
    assert d.admitted == []
    ten2 = next(r for r in per[2] if r.id == "M3.ten_waves")
    assert ten2.status is Pe and "largest admitted count" in ten2.reason and "count 3 is FAIL" in ten2.reason
    per = {1: _count(1, P), 2: _count(2, P, short=True), 3: _count(3, F)}
    assert decide([1, 2, 3], *filled([1, 2, 3], list(model), per, []), interrupted=False, missing="x").admitted == [1]


def test_the_once_per_model_probes_stop_at_a_count_the_plan_skips() -> None:
    """M4 and M6 run at the largest count that can still be admitted: with counts [1, 2, 4]
    that is 2 even when 4 validates (3 was never tested); a count another shard runs is no gap."""
    from parval.gates.admission_verdict import largest_consecutive

    def every(n: int) -> bool:
        return True

    assert largest_consecutive([1, 2, 4], [1, 2, 4], every) == 2
    assert largest_consecutive([1, 2, 3, 4], [1, 2, 3, 4], every) == 4
    assert largest_consecutive([1, 2, 3, 4], [1, 2, 3, 4], lambda n: n != 3) == 2
    assert largest_consecutive([1, 2], [1, 2], lambda n: False) == 1  # none validated: the smallest
    # shard 2 of [1, 2, 3, 4] runs [2, 4]: 3 is tested elsewhere, so 4 is reachable
    assert largest_consecutive([2, 4], [1, 2, 3, 4], every) == 4
    assert largest_consecutive([2, 4], [1, 2, 4], every) == 2
