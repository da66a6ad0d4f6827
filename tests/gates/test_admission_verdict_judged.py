"""The admission verdict where the existing tests do not reach: executables that cannot start
in the verdict line and block, the mode under test never excused, the closed list filled in
where each entry is judged, M4's recovery count capping admission, and where entries were
judged in the words of one aggregated entry."""

from __future__ import annotations

import pytest

from parval.gates import admission_verdict as adm
from parval.status import Result, Status
from tests.closed_list_kit import filled

P, F, Pe, B, U, NA = (
    Status.PASS,
    Status.FAIL,
    Status.PENDING,
    Status.BLOCKED,
    Status.UNSUPPORTED,
    Status.NOT_APPLICABLE,
)

CAUSE = "the candidate executable exited with status 127 before it was ready: error: libfoo.so"
CANNOT = {
    "kind": "executable_cannot_start",
    "role": "candidate",
    "executable": "/opt/server",
    "run": "count1-s1",
    "exit_code": 127,
    "last_lines": ["loading", "error: libfoo.so"],
    "stream": "stderr",
}


def test_a_cause_leads_every_line_but_admitted() -> None:
    fail = [Result("M2.exact", F, "x", count=1)]
    assert adm.verdict_line(False, [], fail, False, [CAUSE]) == (
        f"NOT ADMITTED — {CAUSE}; 1 required assertion(s) FAILED (M2.exact@1); validated counts: none",
        1,
    )
    assert adm.verdict_line(False, [1], [Result("Q1", P, "ok")], True, [CAUSE, "second"]) == (
        f"evidence collected; validation pending (run interrupted); {CAUSE}; second; validated counts so far: 1",
        3,
    )
    open_ = [Result("M5.stable", Pe, "a"), Result("X3", B, "b"), Result("M1.x", U, "c"), Result("M3.x", NA, "d")]
    assert adm.verdict_line(False, [1, 2], [*open_, Result("M5.stable", Pe, "a", count=2)], False, [CAUSE]) == (
        f"BLOCKED — {CAUSE}; 3 assertion(s) unresolved (M1.x, M5.stable, X3); validated counts: 1, 2",
        3,
    )


@pytest.mark.parametrize(("n", "listed"), [(6, "(Q0, Q1, Q2, Q3, Q4, Q5)"), (7, "(Q0, Q1, Q2, Q3, Q4, Q5…)")])
def test_six_unresolved_are_named_in_full_more_are_cut(n: int, listed: str) -> None:
    statuses = [Result(f"Q{i}", Pe, "open") for i in range(n)]
    assert adm.verdict_line(False, [], statuses, False, [CAUSE]) == (
        f"BLOCKED — {CAUSE}; {n} assertion(s) unresolved {listed}; validated counts: none",
        3,
    )
    assert adm.verdict_line(False, [], statuses, False) == (
        f"evidence collected; validation pending — {n} assertion(s) unresolved {listed}; validated counts: none",
        3,
    )


def test_eight_failures_are_named_in_full() -> None:
    fails = [Result(f"X{i}", F, "x") for i in range(8)]
    assert adm.verdict_line(False, [1], fails, False) == (
        "NOT ADMITTED — 8 required assertion(s) FAILED (X0, X1, X2, X3, X4, X5, X6, X7); validated counts: 1",
        1,
    )


def test_a_failure_outranks_an_interruption() -> None:
    line, code = adm.verdict_line(True, [1], [Result("X1", F, "x")], True)
    assert line.startswith("NOT ADMITTED — 1 required assertion(s) FAILED (X1)") and code == 1


def _passing_counts(counts: list[int]) -> dict[int, list[Result]]:
    return {n: [Result("M2.exact", P, "ok", count=n)] for n in counts}


def test_an_executable_that_cannot_start_is_in_the_verdict_block() -> None:
    args = filled([1], [], _passing_counts([1]), [], but=("F1.fifo",))
    d = adm.decide([1], *args, interrupted=False, missing="not collected", cannot_start=[CANNOT])
    assert d.cannot_start == [CANNOT]
    assert d.line.startswith(f"BLOCKED — {CAUSE}; ") and d.exit_code == 3
    assert d.verdict_json() == {
        "line": d.line,
        "exit_code": 3,
        "admitted_counts": [],
        "counts": {"1": "PENDING"},
        "cannot_start": [
            {
                "role": "candidate",
                "executable": "/opt/server",
                "run": "count1-s1",
                "exit_code": 127,
                "cause": CAUSE,
                "last_lines": ["loading", "error: libfoo.so"],
                "stream": "stderr",
            }
        ],
    }


def test_not_applicable_is_no_verdict_for_the_mode_under_test() -> None:
    model = [Result("M6.streaming", NA, "plan admits offline only"), Result("M6.batch", NA, "no batching")]
    per: dict[int, list[Result]] = {}
    framework: list[Result] = []
    adm.fill_closed_list([1], model, per, framework, "not collected", mode="streaming")
    assert (model[0].id, model[0].status) == ("M6.streaming", Pe)
    assert model[0].reason == (
        "NOT_APPLICABLE is no verdict for streaming, the mode the model runs in (plan admits offline only): "
        "nothing is admitted until streaming evidence is (add streaming to model.admit_modes and run again)"
    )
    assert model[1] == Result("M6.batch", NA, "no batching")  # another mode's may be excused
    assert [r.id for r in model].count("M6.streaming") == 1  # replaced, not filled in again


def test_the_closed_list_is_filled_in_where_each_entry_is_judged() -> None:
    model: list[Result] = [Result("M1.manifest", P, "ok")]
    per: dict[int, list[Result]] = {1: [Result("M2.exact", P, "ok", count=1)]}
    framework: list[Result] = []
    adm.fill_closed_list([1, 2], model, per, framework, "not collected")
    gap = "not collected (required by the procedure: without it nothing is admitted)"
    assert sorted(per) == [1, 2]
    m2_at_2 = next(r for r in per[2] if r.id == "M2.exact")
    assert (m2_at_2.status, m2_at_2.reason, m2_at_2.count) == (Pe, gap, 2)
    assert [r.id for r in per[1]].count("M2.exact") == 1
    fifo = next(r for r in framework if r.id == "F1.fifo")
    assert (fifo.status, fifo.reason, fifo.count) == (Pe, gap, None)
    assert any(r.id == "X4" for r in framework) and not any(r.id == "X4" for r in model)
    m4 = next(r for r in model if r.id == "M4.targeted_unload")
    assert (m4.status, m4.reason, m4.count) == (Pe, gap, None)
    assert not any(r.id.startswith("F") for r in model)
    assert model[0] == Result("M1.manifest", P, "ok")


def _m4(id_: str, at: int) -> Result:
    return Result(id_, P, "held", {adm.RECOVERY_COUNT: at})


def test_counts_above_the_recovery_count_are_pending_and_not_admitted() -> None:
    model = [_m4("M4.targeted_unload", 3), _m4("M4.all_unload", 2), Result("M4.invalid_alongside", P, "ok")]
    per = {n: [Result("M2.exact", P, "ok", count=n)] for n in (1, 2, 3)}
    verdicts = {1: P, 2: P, 3: P}
    assert adm.trim_to_recovery([1, 2, 3, 4], verdicts, per, model) == [1, 2]
    why3 = (
        "M4 ran at count 2 (its recovery start), below count 3: recovery evidence is required at the "
        "largest admitted count (run the recovery start at count 3)"
    )
    assert [(r.id, r.status, r.reason, r.evidence, r.count) for r in per[3][1:]] == [
        ("M4.all_unload", Pe, why3, {"ran_at": 2}, 3),
        ("M4.targeted_unload", Pe, why3, {"ran_at": 2}, 3),
    ]
    assert [r.id for r in per[4]] == ["M4.all_unload", "M4.targeted_unload"]  # a count with no entries yet
    assert per[4][0].reason.endswith("(run the recovery start at count 4)")
    assert per[1] == [Result("M2.exact", P, "ok", count=1)] and len(per[2]) == 1
    assert verdicts == {1: P, 2: P, 3: Pe, 4: Pe}


def test_a_recovery_start_at_count_one_admits_count_one() -> None:
    per: dict[int, list[Result]] = {}
    verdicts = {1: P, 2: P}
    assert adm.trim_to_recovery([1, 2], verdicts, per, [_m4("M4.all_unload", 1)]) == [1]
    assert per[2][0].reason.startswith("M4 ran at count 1 (its recovery start), below count 2: ")
    assert verdicts == {1: P, 2: Pe}


def test_a_recovery_start_at_count_zero_names_no_count() -> None:
    per: dict[int, list[Result]] = {}
    verdicts = {1: P}
    assert adm.trim_to_recovery([1], verdicts, per, [_m4("M4.all_unload", 0)]) == []
    (r,) = per[1]
    assert (r.status, r.evidence) == (Pe, {"ran_at": 0})
    assert r.reason == (
        "the recovery start (M4) names no count it ran at: recovery evidence at the largest admitted count is not shown"
    )
    assert verdicts == {1: Pe}


def test_recovery_at_or_above_the_admitted_counts_changes_nothing() -> None:
    per = {1: [Result("M2.exact", P, "ok", count=1)]}
    verdicts = {1: P, 2: P}
    assert adm.trim_to_recovery([1, 2], verdicts, per, [_m4("M4.all_unload", 2)]) == [1, 2]
    assert adm.trim_to_recovery([], verdicts, per, [_m4("M4.all_unload", 1)]) == []
    # only an M4 entry names the recovery count
    assert adm.trim_to_recovery([1, 2], verdicts, per, [Result("M5.x", P, "ok", {adm.RECOVERY_COUNT: 1})]) == [1, 2]
    assert per == {1: [Result("M2.exact", P, "ok", count=1)]} and verdicts == {1: P, 2: P}


def test_the_once_per_model_probes_from_a_shard_that_starts_above_one() -> None:
    def every(n: int) -> bool:
        return True

    assert adm.largest_consecutive([3], [1, 2, 3], every) == 3
    assert adm.largest_consecutive([3, 5], [1, 3, 5], every) == 3
    assert adm.largest_consecutive([1, 2, 3], [1, 2, 3], lambda n: n < 3) == 2
    assert adm.largest_consecutive([2, 3], [2, 3], lambda n: n == 3) == 2  # the smallest when none is


def test_a_count_above_with_no_verdict_reads_pending() -> None:
    short = Result("M3.ten_waves", NA, "ran 4", {"short": True, "planned": 4}, count=2)
    per = {1: [Result("M3.ten_waves", P, "ten", count=1)], 2: [short]}
    admitted, dropped = adm.trim_to_ten_waves([1, 2, 3], {1: P, 2: P}, per)
    assert (admitted, dropped) == ([1], [2])
    assert per[2][0].reason.startswith("count 2 would be the largest admitted count (count 3 is PENDING), but")


def test_where_each_entry_was_judged_in_the_words_of_a_passing_entry() -> None:
    entries = [
        Result("M5.baseline", P, "model level: judged once"),
        Result("M5.baseline", P, "flat"),
        Result("M5.baseline", P, "count 2: already placed", count=2),
        Result("M5.baseline", P, "stable", count=3),
    ]
    assert adm.aggregate(entries).reason == (
        "model level: judged once; model level: flat; count 2: already placed; count 3: stable"
    )


def test_a_count_not_run_without_any_entry_is_pending() -> None:
    per: dict[int, list[Result]] = {1: [Result("M2.exact", P, "ok", count=1)]}
    adm.mark_not_run(per, {2: "count 1 failed"})
    assert per[2] == []
    d = adm.decide(
        [1, 2],
        *filled([1], [], _passing_counts([1]), []),  # count 2 has no entry at all
        interrupted=False,
        missing="not collected",
        not_run={2: "count 1 failed"},
    )
    assert d.verdicts == {1: P, 2: Pe} and d.admitted == [1] and d.exit_code == 3
