"""The admission verdict word for word: the verdict line, Q6's reasons and evidence, the one
entry per assertion made of per-count entries, counts a --fail-fast campaign left out, the
largest count's ten mixed waves, and the `model_checks` block."""

from __future__ import annotations

from parval.gates import admission_verdict as adm
from parval.procedure.assertion_ids import all_ids
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


def test_verdict_lines_word_for_word() -> None:
    fail = [Result("M2.exact", F, "x", count=4), Result("X1", F, "y"), Result("M2.exact", F, "x", count=2)]
    assert adm.verdict_line(False, [1], fail, interrupted=False) == (
        "NOT ADMITTED — 3 required assertion(s) FAILED (M2.exact@2, M2.exact@4, X1); validated counts: 1",
        1,
    )
    many = [Result(f"M2.exact{i}", F, "x") for i in range(9)]
    line, _ = adm.verdict_line(False, [], many, interrupted=False)
    assert line.endswith("M2.exact7…); validated counts: none") and "M2.exact8" not in line
    assert adm.verdict_line(False, [1, 2], [Result("M2.exact", P, "x")], interrupted=True) == (
        "evidence collected; validation pending (run interrupted); validated counts so far: 1, 2",
        3,
    )
    statuses = [Result("M5.stable", Pe, "a"), Result("X3", B, "b"), Result("M1.x", U, "c"), Result("Q1", P, "d")]
    statuses += [Result(f"Q{i}", Pe, "e") for i in range(2, 8)]
    assert adm.verdict_line(False, [1], statuses, interrupted=False) == (
        "evidence collected; validation pending — 9 assertion(s) unresolved (M1.x, M5.stable, Q2, Q3, Q4, Q5…); "
        "validated counts: 1",
        3,
    )
    assert adm.verdict_line(True, [1, 2], [Result("Q1", P, "d")], interrupted=False) == ("ADMITTED at counts 1, 2", 0)


def test_q6_word_for_word_on_each_branch() -> None:
    r = adm.q6([1, 2], {1: P, 2: P}, [1, 2])
    assert (r.status, r.reason) == (P, "admitted counts [1, 2]: the consecutive validated counts from one upward")
    assert r.evidence == {
        "per_count": {"1": "PASS", "2": "PASS"},
        "admitted": [1, 2],
        "rule_admits": [1, 2],
        "never_tested": [],
        "rests_on": {"admitted counts": 2, "count verdicts": 2},
    }
    assert r.limitations == ()

    r = adm.q6([1, 2, 3], {1: P, 2: F, 3: P}, [1])
    assert (r.status, r.reason) == (
        Pe,
        "admitted counts [1]: the consecutive validated counts from one upward; not admitted: 2 (FAIL), 3 (PASS)",
    )
    assert r.limitations == ()

    r = adm.q6([1, 2], {1: P, 2: P}, [1, 2, 3])
    assert (r.status, r.reason) == (Pe, "the reported admission [1, 2, 3] is not what the rule gives ([1, 2])")
    assert r.evidence["admitted"] == [1, 2, 3] and r.evidence["rule_admits"] == [1, 2]

    r = adm.q6([1, 2, 4, 6], {1: P, 2: P, 4: P, 6: P}, [1, 2])
    assert (r.status, r.reason) == (
        Pe,
        "admitted counts [1, 2]; 4, 6 can never be admitted by this plan: count(s) 3, 5 never tested "
        "(add them to counts)",
    )
    assert r.limitations == ("counts [3, 5] were not tested and are never enabled",)
    assert r.evidence["never_tested"] == [3, 5]

    for first, status in ((Pe, Pe), (B, B), (U, U), (NA, Pe)):
        r = adm.q6([1, 2], {1: first, 2: P}, [])
        assert (r.status, r.reason) == (status, f"no count admitted: count 1 is {first}")
        assert r.evidence["per_count"] == {"1": str(first), "2": "PASS"}
    r = adm.q6([1, 2], {1: F, 2: P}, [])
    assert (r.status, r.reason) == (F, "no count admitted: count 1 is FAIL")
    assert r.evidence["violation"] == {"count 1": "FAIL"}
    r = adm.q6([2, 3], {2: P, 3: P}, [])
    assert (r.status, r.reason) == (Pe, "no count admitted: count 1 was not tested")
    assert r.limitations == ("counts [1] were not tested and are never enabled",)
    r = adm.q6([1, 2], {2: P}, [])
    assert (r.status, r.reason) == (Pe, "no count admitted: count 1 is PENDING")
    assert r.evidence["per_count"] == {"1": "PENDING", "2": "PASS"}


def test_one_entry_per_assertion_from_its_per_count_entries() -> None:
    one = Result("M2.exact", P, "only", count=1)
    assert adm.aggregate([one]) is one
    a = Result("M2.exact", P, "fine at 1", {"a": 1}, "repro-1", ["lim-b"], count=1)
    b = Result("M2.exact", F, "broken at 2", {"b": 2}, "repro-2", ["lim-a", "lim-b"], count=2)
    c = Result("M2.exact", Pe, "open at 3", {"c": 3}, "repro-3", count=3)
    r = adm.aggregate([a, b, c])
    assert (r.id, r.status, r.reason, r.reproduction, r.applicable) == ("M2.exact", F, "broken at 2", "repro-2", True)
    assert r.limitations == ("lim-a", "lim-b") and r.count is None
    assert r.evidence == {
        "b": 2,
        "per_count": {
            "1": {"status": "PASS", "reason": "fine at 1"},
            "2": {"status": "FAIL", "reason": "broken at 2"},
            "3": {"status": "PENDING", "reason": "open at 3"},
        },
    }
    r = adm.aggregate([a, Result("M2.exact", P, "fine at 2", {"x": 0}, "repro-2", count=2)])
    assert (r.status, r.reason, r.reproduction) == (P, "count 1: fine at 1; count 2: fine at 2", "repro-1")
    assert r.evidence == {
        "a": 1,
        "per_count": {"1": {"status": "PASS", "reason": "fine at 1"}, "2": {"status": "PASS", "reason": "fine at 2"}},
    }
    na = [Result("M3.reversed", NA, "one slot", count=1), Result("M3.reversed", NA, "declared", count=2)]
    r = adm.aggregate(na)
    assert (r.status, r.reason, r.applicable) == (NA, "one slot", False)
    mixed = [Result("M3.reversed", NA, "one slot", count=1), Result("M3.reversed", P, "seen", count=2)]
    r = adm.aggregate(mixed)
    assert (r.status, r.reason, r.applicable) == (P, "count 1: one slot; count 2: seen", True)


def test_counts_a_fail_fast_campaign_left_out_are_pending_with_the_recorded_reason() -> None:
    events = [
        {"kind": "count_not_run", "count": 4, "reason": "count 2 failed"},
        {"kind": "count_not_run", "count": 8},
        {"kind": "count_not_run", "count": None, "reason": "ignored"},
        {"kind": "run_start", "count": 3},
    ]
    not_run = adm.not_run_counts(events)
    assert not_run == {4: "count 2 failed", 8: "not run (--fail-fast)"}
    per_count = {
        4: [Result("M2.exact", P, "a", count=4), Result("M2.exact", F, "b", count=4), Result("M3.x", P, "c", count=4)]
    }
    d = adm.decide(
        [1, 4],
        *filled([1, 4], [], {1: [Result("M2.exact", P, "ok", count=1)], **per_count}, []),
        interrupted=False,
        missing="-",
        not_run={4: "count 2 failed"},
    )
    fresh = [r for r in d.flat if r.count == 4]
    assert [(r.id, r.status, r.reason, r.evidence) for r in fresh[:2]] == [
        ("M2.exact", Pe, "count 2 failed", {"not_run": True}),
        ("M3.x", Pe, "count 2 failed", {"not_run": True}),
    ]
    assert {(r.status, r.reason) for r in fresh} == {(Pe, "count 2 failed")}
    assert d.verdicts == {1: P, 4: Pe}


def test_decide_names_every_assertion_and_is_ready_only_when_everything_passes() -> None:
    per = {1: [Result("M2.exact", P, "ok", count=1)], 2: [Result("M2.exact", P, "ok", count=2)]}

    def whole(model: list[Result], fw: list[Result], **kw: object) -> adm.Decision:
        args = filled([1, 2], model, {n: list(rs) for n, rs in per.items()}, fw)
        return adm.decide([1, 2], *args, interrupted=bool(kw.get("interrupted")), missing="not collected")

    d = whole([Result("M1.x", P, "ok")], [])
    assert d.admitted == [1, 2] and d.admission_ready is True and d.exit_code == 0
    assert [r.id for r in d.assertions] == all_ids()
    assert d.verdict_json() == {
        "line": "ADMITTED at counts 1, 2",
        "exit_code": 0,
        "admitted_counts": [1, 2],
        "counts": {"1": "PASS", "2": "PASS"},
    }
    assert d.verdict_json("merged")["line"] == "merged"
    # every count admitted, but a model-level entry open: not ready
    d = whole([Result("M1.x", Pe, "open")], [])
    assert d.admission_ready is False and d.admitted == []
    # a framework entry open: not ready, though every count's own entries pass
    d = whole([], [Result("F1.fifo", Pe, "open")])
    assert d.admission_ready is False
    d = whole([], [], interrupted=True)
    assert d.admission_ready is False and d.exit_code == 3


def test_an_assertion_no_result_stands_for_is_pending_in_the_verdict() -> None:
    """The closed list (issue 38, finding 3): results that leave out a required assertion,
    once per run, at one count or from the framework, admit nothing there; the missing entry
    is PENDING in the count verdicts, not only in the listing."""
    per = {1: [Result("M2.exact", P, "ok", count=1)], 2: [Result("M2.exact", P, "ok", count=2)]}
    for left_out, counts_admitted in (("M4.targeted_unload", []), ("M6.batch", []), ("F1.fifo", []), ("X4", [])):
        args = filled([1, 2], [], {n: list(rs) for n, rs in per.items()}, [], but=(left_out,))
        d = adm.decide([1, 2], *args, interrupted=False, missing="not collected")
        assert d.admitted == counts_admitted and d.exit_code == 3 and not d.admission_ready, left_out
        gap = next(r for r in d.assertions if r.id == left_out)
        assert gap.status is Pe and gap.reason.startswith("not collected (required by the procedure"), gap
        assert d.verdicts == {1: Pe, 2: Pe}
    # left out at count 2 only: count 1 is still admitted
    args = filled([1, 2], [], {1: list(per[1]), 2: list(per[2])}, [])
    args[1][2] = [r for r in args[1][2] if r.id != "M5.stable"]
    d = adm.decide([1, 2], *args, interrupted=False, missing="not collected")
    assert d.admitted == [1] and d.verdicts == {1: P, 2: Pe}
    assert any(r.id == "M5.stable" and r.count == 2 and r.status is Pe for r in d.flat)


def test_the_largest_admitted_count_needs_its_ten_mixed_waves_word_for_word() -> None:
    def count(n: int, short: bool) -> list[Result]:
        ten = (
            Result("M3.ten_waves", NA, "ran 4", {"short": True, "planned": 4}, count=n)
            if short
            else Result("M3.ten_waves", P, "ten", count=n)
        )
        return [Result("M2.exact", P, "ok", count=n), ten]

    per = {1: count(1, False), 2: count(2, True), 3: count(3, True)}
    verdicts = {1: P, 2: P, 3: F}
    admitted, dropped = adm.trim_to_ten_waves([1, 2, 3], verdicts, per)
    assert (admitted, dropped) == ([1], [2])
    assert verdicts == {1: P, 2: Pe, 3: F}
    required = per[2][1]
    assert (required.id, required.status, required.count) == ("M3.ten_waves", Pe, 2)
    assert required.reason == (
        "count 2 would be the largest admitted count (count 3 is FAIL), but it ran 4 mixed warm wave(s) per "
        "start: ten are required at the largest admitted count (run count 2 again with waves.mixed of ten or more, "
        "or leave waves.mixed unset)"
    )
    assert required.evidence == {"short": True, "planned": 4, "required_as_largest": True}
    assert per[2][0].status is P and per[3][1].status is NA  # the others are untouched
    # the top of the plan, and a count above it never tested
    per = {1: count(1, False), 2: count(2, True)}
    adm.trim_to_ten_waves([1, 2], {1: P, 2: P}, per)
    assert "(the largest count)" in per[2][1].reason
    per = {1: count(1, False), 2: count(2, True), 4: count(4, False)}
    adm.trim_to_ten_waves([1, 2, 4], {1: P, 2: P, 4: P}, per)
    assert "(count 3 was not tested)" in per[2][1].reason
    # a short count that is not the largest admitted needs nothing
    per = {1: count(1, True), 2: count(2, False)}
    assert adm.trim_to_ten_waves([1, 2], {1: P, 2: P}, per) == ([1, 2], [])
    # NOT_APPLICABLE without `short` (one slot) is not a short count
    per = {1: [Result("M3.ten_waves", NA, "one slot", count=1)]}
    assert adm.trim_to_ten_waves([1], {1: P}, per) == ([1], [])
    per = {1: [Result("M3.ten_waves", P, "ok", {"short": True}, count=1)]}
    assert adm.trim_to_ten_waves([1], {1: P}, per) == ([1], [])
    assert adm.trim_to_ten_waves([1], {1: P}, {}) == ([1], [])


def test_the_model_checks_block() -> None:
    m1 = Result("M1.x", P, "ok")
    per = {1: [Result("M2.exact", P, "ok", count=1), Result("M3.reversed", NA, "one slot", count=1)]}
    flat = [m1, *per[1]]
    block = adm.model_checks_block(flat, [m1], per, sources={1: ["run-a"]})
    assert block == {
        "status": "PASS",
        "groups": {"M1": "PASS", "M2": "PASS", "M3": "NOT_APPLICABLE"},
        "per_count": {
            "1": {
                "status": "PASS",
                "groups": {"M2": "PASS", "M3": "NOT_APPLICABLE"},
                "assertions": [r.to_json() for r in per[1]],
                "sources": ["run-a"],
            }
        },
        "model_level": [m1.to_json()],
    }
    assert "sources" not in adm.model_checks_block(flat, [m1], per)["per_count"]["1"]


def test_admitted_counts_of_an_empty_plan_is_nothing() -> None:
    assert adm.admitted_counts([], {}) == []
    assert adm.count_verdicts([], {}, []) == {}
    fw = [Result("F1.fifo", P, "ok"), Result("F2.drain", Pe, "not covered", count=2)]
    v = adm.count_verdicts([Result("M1.x", P, "ok")], {1: [], 2: []}, fw)
    assert v == {1: P, 2: Pe}
