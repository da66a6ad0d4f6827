"""The building blocks every framework judge stands on, word for word: a Verdict's status
and text, attempts, margins, references, registration and how sub-checks become one F
assertion result."""

from __future__ import annotations

from typing import Any

import pytest

from parval.framework import contract, judges_f1, judges_f2, judges_f3, judges_f4, judges_f5
from parval.framework.ctest import CTestCase, CTestRun
from parval.framework.judges import (
    JUDGES,
    Check,
    Findings,
    JudgeInputs,
    assemble,
    assertion_result,
    judge,
    over_attempts,
    run_judge,
)
from parval.framework.judges_f6 import assess_f6
from parval.framework.observed import (
    INF,
    STALLED,
    FlightFact,
    Verdict,
    all_ok,
    margin_s,
    ms,
    no_overtaking,
    outputs_match,
    reference,
    waits,
)
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.registry import ENTRIES
from parval.status import Status

from .factkit import facts, fl, manager, stagger


def verdict(**lists: list[str]) -> Verdict:
    v = Verdict()
    for name, texts in lists.items():
        getattr(v, name).extend(texts)
    return v


def test_a_verdicts_status_and_text_follow_the_strongest_list() -> None:
    assert (verdict().status, verdict().detail()) == (Status.PENDING, "not set up: the judge was shown no evidence")
    assert (verdict(passed=["a", "b"]).status, verdict(passed=["a", "b"]).detail()) == (Status.PASS, "a; b")
    v = verdict(passed=["a"], pendings=["p", "q"])
    assert (v.status, v.detail()) == (Status.PENDING, "not set up: p; q")
    v = verdict(passed=["a"], pendings=["p"], unsupported_by=["u", "w"])
    assert (v.status, v.detail()) == (Status.UNSUPPORTED, "u; w")
    v = verdict(pendings=["p"], unsupported_by=["u"], blockers=["b", "c"])
    assert (v.status, v.detail()) == (Status.BLOCKED, "could not be judged: b; c")
    v = verdict(blockers=["b"], problems=["x", "y"])
    assert (v.status, v.detail()) == (Status.FAIL, "violated: x; y")
    v = verdict(inapplicable=["n", "m"])
    assert (v.status, v.detail()) == (Status.NOT_APPLICABLE, "n; m")
    v = verdict(inapplicable=["n"], passed=["a"])
    assert (v.status, v.detail()) == (Status.PASS, "a")
    v = verdict(problems=["x"])
    v.verbatim = "as given"
    assert v.detail() == "as given"


def test_not_forced_blocks_and_asks_for_another_attempt_only_when_that_is_all() -> None:
    v = Verdict()
    v.require(True, "ok")
    v.not_forced("too fast")
    assert v.status is Status.BLOCKED and v.retry and v.blockers == v.unforced == ["too fast"]
    v.block("another defect")
    assert v.status is Status.BLOCKED and not v.retry
    w = Verdict()
    w.pend("not set up")
    assert not w.retry
    assert w.require(False, "broken") is False and w.require(True, "fine") is True
    labelled = verdict(problems=["x"], blockers=["b"], unforced=["b"], pendings=["p"], passed=["a"])
    labelled.unsupported_by.append("u")
    labelled.inapplicable.append("n")
    labelled.verbatim = "kept"
    got = labelled.labelled("attempt 2 of 3")
    assert got.problems == ["attempt 2 of 3: x"] and got.blockers == ["attempt 2 of 3: b"]
    assert got.unforced == ["attempt 2 of 3: b"] and got.pendings == ["attempt 2 of 3: p"]
    assert got.passed == ["attempt 2 of 3: a"] and got.unsupported_by == ["attempt 2 of 3: u"]
    assert got.inapplicable == ["attempt 2 of 3: n"] and got.verbatim == "kept"


def _forced() -> Verdict:
    return verdict(passed=["seen"])


def _unforced(text: str) -> Verdict:
    v = Verdict()
    v.not_forced(text)
    return v


def test_attempts_a_violation_stands_else_the_first_forced_pass_else_the_last() -> None:
    failed = verdict(problems=["wrong order"])
    got = over_attempts([_unforced("slow"), failed, _forced()])
    assert (got.status, got.detail()) == (Status.FAIL, "violated: attempt 2 of 3: wrong order")
    got = over_attempts([_unforced("slow"), _unforced("slower"), _forced(), verdict(passed=["later"])])
    assert got.status is Status.PASS
    assert got.detail() == "attempt 3 of 4: seen; earlier attempt(s) not forced: slow; slower"
    got = over_attempts([_forced()])
    assert got.detail() == "attempt 1 of 1: seen"
    got = over_attempts([_unforced("a"), _unforced("b")])
    assert (got.status, got.detail()) == (Status.BLOCKED, "could not be judged: after 2 attempt(s): b")
    got = over_attempts([])
    assert (got.status, got.detail()) == (Status.PENDING, "not set up: no attempt was recorded")


def test_run_judge_judges_attempts_and_turns_missing_evidence_into_pending() -> None:
    def fussy(f: dict[str, Any]) -> Verdict:
        v = Verdict()
        v.require(f["x"] == 1, "x is one")
        return v

    JUDGES["test.fussy"] = fussy
    try:
        assert run_judge("test.fussy", {"x": 1}).status is Status.PASS
        v = run_judge("test.fussy", {})
        assert (v.status, v.detail()) == (
            Status.PENDING,
            "not set up: the observation lacks evidence this judge reads (KeyError: 'x')",
        )
        v = run_judge("test.fussy", {"attempts": [{"x": 2}, {"x": 1}]})
        assert (v.status, v.detail()) == (Status.FAIL, "violated: attempt 1 of 2: x is one")
        assert run_judge("test.fussy", {"attempts": "not a list", "x": 1}).status is Status.PASS
    finally:
        del JUDGES["test.fussy"]
    with pytest.raises(KeyError, match="no framework judge named 'nope'"):
        run_judge("nope", {})


def test_a_key_is_registered_once() -> None:
    def one(f: dict[str, Any]) -> Verdict:
        return Verdict()

    def two(f: dict[str, Any]) -> Verdict:
        return Verdict()

    assert assemble({"test.a": one}, {"test.b": two}) == {"test.a": one, "test.b": two}
    with pytest.raises(ValueError, match="judge test.a registered twice"):
        assemble({"test.a": one}, {"test.a": one})
    # The registry holds every group's table, each key with its group's function.
    for table in (judges_f1.JUDGES, judges_f2.JUDGES, judges_f3.JUDGES, judges_f4.JUDGES, judges_f5.JUDGES):
        assert all(JUDGES[key] is fn for key, fn in table.items())


def test_ms_and_the_margin_of_an_observation() -> None:
    assert ms(0.1234) == 123 and ms(INF) == ms(-INF) == 10**9 and ms(-0.05) == -50
    # half the quickest successful request measured here, or the calibrated half request
    f = facts([fl("a", 0.0, 0.4), fl("b", 0.0, 0.3), fl("c", 0.0, 0.05, status=503), fl("d", 0.0, None)])
    assert margin_s(f) == pytest.approx(0.15)
    f = facts([fl("a", 0.0, 0.1)])
    assert margin_s(f) == pytest.approx(0.075)  # factkit's calibrated 150 ms request, halved
    assert margin_s(facts([])) == pytest.approx(0.075)


def test_no_overtaking_names_the_worst_overtaking_beyond_the_margin() -> None:
    def run(done: list[float], tol: float) -> Verdict:
        v = Verdict()
        no_overtaking(v, [FlightFact(fl(f"r{i}", 0.0, d)) for i, d in enumerate(done)], tol, "queue")
        return v

    assert run([0.1, 0.2, 0.3], 0.05).detail() == "queue: no later request finished ahead of an earlier one"
    assert run([0.2, 0.1, 0.3], 0.1).status is Status.PASS  # exactly the margin: not beyond it
    v = run([0.5, 0.3, 0.1], 0.05)
    assert v.detail() == "violated: queue: r2 finished 400 ms before the earlier-enqueued r0 (overtaken)"
    v = run([0.2, 0.1, 0.35, 0.05], 0.01)
    assert v.detail() == "violated: queue: r3 finished 300 ms before the earlier-enqueued r2 (overtaken)"


def test_all_ok_needs_items_and_names_the_bad_ones() -> None:
    v = Verdict()
    assert all_ok(v, [], "requests") is False and v.pendings == ["no requests were recorded"]
    v = Verdict()
    items = [
        FlightFact(fl("a", 0, 1)),
        FlightFact(fl("b", 0, 1, status=503)),
        FlightFact(fl("c", 0, None, status=None)),
    ]
    assert all_ok(v, items, "requests") is False
    assert v.problems == ["requests answered 200 (got b=503, c=None)"]
    v = Verdict()
    assert all_ok(v, items[:1], "requests") is True and v.passed == ["requests answered 200"]


def test_references_per_registration_and_phase() -> None:
    refs = {"m|base": {"cold": ["c"], "warm": ["w"]}, "m|same": {"cold": ["s"], "warm": ["s"]}, "m|none": {}}
    assert reference(refs, "m", "base", "cold") == ("c", "")
    assert reference(refs, "m", "base", "warm2") == (None, "no warm2 serial reference was recorded for m (base)")
    assert reference(refs, "m", "same", None) == ("s", "")
    assert reference(refs, "m", "base", None) == (
        None,
        "the any phase serial references of m (base) differ (2 outputs), so the equivalent single-slot "
        "history cannot be told",
    )
    assert reference(refs, "m", "none", "cold") == (None, "no serial reference was recorded for m (none)")
    assert reference(refs, "x", "base", "cold") == (None, "no serial reference was recorded for x (base)")


def test_outputs_match_compares_each_reply_with_its_own_registration() -> None:
    f = facts([fl("a", 0, 1), fl("b", 0, 1, output="other"), fl("e", 0, 1, status=500)])
    v = Verdict()
    outputs_match(v, f, "base", [FlightFact(x) for x in f["flights"]], "wave", phase="cold")
    assert v.problems == ["wave outputs equal their registration's 'base' cold reference (differ: b)"]
    v = Verdict()
    outputs_match(v, f, "base", [FlightFact(f["flights"][0])], "wave")
    assert v.passed == ["wave outputs equal their registration's 'base' reference"]
    v = Verdict()
    outputs_match(v, f, "base", [FlightFact(f["flights"][2])], "wave")
    assert v.pendings == ["wave: no successful reply whose output could be compared"]
    g = facts([fl("a", 0, 1, model="z")], model_id="m")
    v = Verdict()
    outputs_match(v, g, "base", [FlightFact(g["flights"][0])], "wave")
    assert v.pendings == ["wave outputs not compared: no serial reference was recorded for z (base)"]
    assert v.status is Status.PENDING and not v.problems
    h = facts([{**fl("a", 0, 1), "model": None}], model_id="m")
    v = Verdict()
    outputs_match(v, h, "base", [FlightFact(h["flights"][0])], "wave")
    assert v.passed == ["wave outputs equal their registration's 'base' reference"]


def test_waits_stagger_rules() -> None:
    base = facts(
        [fl("occupant0", 0.0, 0.30), manager("unload", 0.05, 0.60)],
        waits=[{"what": "1 active slot(s)", "seen": True}, {"what": "x", "seen": False, "unseen": "x not seen"}],
        staggers=[stagger("the unload", "unload", behind=("occupant0",))],
    )
    v = Verdict()
    waits(v, base, managers=("unload",))
    assert v.blockers == v.unforced == ["x not seen"]
    assert not v.passed and not v.problems  # a wait unseen: the manager's order is not judged
    v = Verdict()
    waits(v, {**base, "waits": base["waits"][:1]}, managers=("unload",))
    assert v.passed == ["the unload was still waiting for older work after the stagger"] and not v.blockers
    base["waits"][1] = {"what": "y", "seen": False}
    v = Verdict()
    waits(v, base)
    assert v.blockers == ["never observed y"] and not v.passed  # no manager named: staggers not read
    skipped = {**base, "staggers": [{**base["staggers"][0], "skipped": True}], "waits": base["waits"][:1]}
    v = Verdict()
    waits(v, skipped, managers=("unload",))
    assert not v.blockers and not v.passed and not v.problems
    with pytest.raises(KeyError):
        waits(Verdict(), {**base, "waits": []})
    with pytest.raises(KeyError):
        waits(Verdict(), base, managers=("other",))


def _check(name: str, status: Status, detail: str = "d") -> Check:
    return Check("F1.fifo", name, status, detail)


def test_an_assertion_combines_its_sub_checks_worst_first() -> None:
    limits = contract.limitations("F1.fifo")
    r = assertion_result("F1.fifo", [], unrun_reason="nothing ran", reproduction="repro", extra_limitations=["e"])
    assert (r.status, r.reason, r.reproduction, r.limitations) == (
        Status.PENDING,
        "nothing ran",
        "repro",
        (*limits, "e"),
    )
    assert r.evidence["checks"] == [] and r.evidence["contract"] == contract.coverage_json("F1.fifo")
    ok = [_check("a", Status.PASS), _check("b", Status.NOT_APPLICABLE, "no spare slot")]
    r = assertion_result("F1.fifo", ok, unrun_reason="-", reproduction="repro")
    assert (r.status, r.reason) == (Status.PASS, "2 sub-check(s) passed: a, b")
    assert r.limitations == (*limits, "b not applicable: no spare slot") and r.reproduction == "repro"
    assert [c["name"] for c in r.evidence["checks"]] == ["a", "b"]
    bad = [_check("a", Status.PASS), _check("b", Status.BLOCKED, "slow"), _check("c", Status.FAIL, "barged")]
    r = assertion_result("F1.fifo", bad, unrun_reason="-", reproduction="repro")
    assert (r.status, r.reason) == (Status.FAIL, "b BLOCKED: slow | c FAIL: barged")
    na = [_check("a", Status.NOT_APPLICABLE, "x"), _check("b", Status.NOT_APPLICABLE, "y")]
    r = assertion_result("F1.fifo", na, unrun_reason="-", reproduction="repro", extra_limitations=["e"])
    assert (r.status, r.reason, r.limitations) == (Status.NOT_APPLICABLE, "a: x; b: y", (*limits, "e"))
    assert r.reproduction == "repro" and len(r.evidence["checks"]) == 2


def test_a_check_round_trips_through_json() -> None:
    c = Check("F2.same_id", "n", Status.BLOCKED, "why", {"judge": "k"})
    assert Check.from_json(c.to_json()) == c
    assert c.to_json() == {
        "assertion": "F2.same_id",
        "name": "n",
        "status": "BLOCKED",
        "detail": "why",
        "evidence": {"judge": "k"},
    }
    assert Check.from_json({"assertion": "F1.fifo", "name": "x", "status": "PASS", "detail": "d"}).evidence == {}


def test_attempts_all_not_forced_end_on_the_last_and_a_pass_counts_only_the_attempts_before_it() -> None:
    got = over_attempts([_unforced("a"), _unforced("b"), _unforced("c")])
    assert got.detail() == "could not be judged: after 3 attempt(s): c"
    got = over_attempts([_unforced("slow"), _forced(), _unforced("after")])
    assert got.detail() == "attempt 2 of 3: seen; earlier attempt(s) not forced: slow"


def test_a_manager_answered_before_older_work_is_a_violation_only_beyond_the_margin() -> None:
    def answered(t_done: float, *, skipped_first: bool = False) -> Verdict:
        f = facts(
            [fl("occupant0", 0.0, 0.60), manager("unload", 0.05, t_done), manager("bulk", 0.06, 0.9)],
            waits=[{"what": "1 active slot(s)", "seen": True}],
            staggers=[
                {**stagger("the bulk", "bulk", behind=("occupant0",)), "skipped": skipped_first},
                stagger("the unload", "unload", behind=("occupant0",), still_waiting=False),
            ],
        )
        v = Verdict()
        waits(v, f, managers=("bulk", "unload"))
        return v

    m = margin_s(facts([fl("occupant0", 0.0, 0.60)]))
    within = answered(0.60 - m / 2)
    assert not within.problems and within.unforced == [
        "the older work finished before the unload could be seen waiting behind it"
    ]
    beyond = answered(0.60 - m - 0.05)
    assert beyond.problems == [
        f"the unload answered {ms(m + 0.05)} ms before the older work it had to wait for finished"
    ]
    # A manager whose stagger was skipped does not stop the next one from being judged.
    assert answered(0.60 - m - 0.05, skipped_first=True).problems == beyond.problems


def test_a_stalled_registry_names_the_manager_that_waited() -> None:
    f = facts(
        [fl("occupant0", 0.0, 0.30), manager("unload", 0.05, 0.60)],
        waits=[{"what": "1 active slot(s)", "seen": True}],
        staggers=[stagger("the unload", "unload", behind=("occupant0",), canary=(0.1, None))],
    )
    v = Verdict()
    waits(v, f, managers=("unload",))
    assert v.blockers == [STALLED.format(what="the unload")] and "while the unload waited" in v.blockers[0]


def test_every_assertion_result_carries_its_assertion_id() -> None:
    """Judging gives every registered F assertion one result under its own ID, built from the
    sub-checks its own judges produced for it (F1-F5) or from its own CTest judgement (F6)."""
    entries = [e for e in ENTRIES if e.id in FRAMEWORK_GATE]
    assert [e.id for e in entries] == list(FRAMEWORK_GATE)
    combined, f6_ids = [e for e in entries if e.parts], [e.id for e in entries if not e.parts]
    assert {e.group for e in combined} == {"F1", "F2", "F3", "F4", "F5"}
    assert f6_ids == ["F6.ctest", "F6.sanitizers", "F6.stress"]
    findings = Findings()
    for e in combined:
        for part in e.parts:
            findings.observe(e.id, part, part, {})  # no facts: each judge's own PENDING
    runs = [CTestRun("default", "b", "passed", tests=[CTestCase("parallel_http_live_body_test", "passed")])]
    inputs: JudgeInputs = {"selected": list(FRAMEWORK_GATE), "only": None, "plan_path": "p.yaml", "sanitizers": []}
    results = judge(findings.checks, runs, inputs)
    assert [r.id for r in results] == list(FRAMEWORK_GATE)
    by_id = {r.id: r for r in results}
    for e in combined:
        # Only this assertion's sub-checks, each from the judge it named.
        checks = [(c["assertion"], c["name"], c["evidence"]["judge"]) for c in by_id[e.id].evidence["checks"]]
        assert checks == [(e.id, part, part) for part in e.parts], e.id
    f6 = assess_f6(runs, sanitizers=[])
    assert [r.id for r in f6] == f6_ids
    # Each F6 result is its own judgement, not the stand-in for an assertion nothing judged.
    assert [(by_id[r.id].status, by_id[r.id].reason) for r in f6] == [(r.status, r.reason) for r in f6]


@pytest.mark.parametrize("status", [Status.BLOCKED, Status.PENDING, Status.NOT_APPLICABLE])
def test_a_given_sub_check_keeps_its_status_and_its_text_word_for_word(status: Status) -> None:
    v = run_judge("given", {"status": status.value, "detail": "skipped by the probes file"})
    assert v.status is status and v.detail() == "skipped by the probes file"
    # The text, not a placeholder, is what an attempt label or a later summary reads.
    assert [*v.blockers, *v.pendings, *v.inapplicable] == ["skipped by the probes file"]


def test_a_given_sub_check_cannot_claim_a_judgement_and_says_why() -> None:
    v = run_judge("given", {"status": "PASS", "detail": "x"})
    assert v.status is Status.PENDING and "a given sub-check cannot be PASS" in v.detail(), v.detail()


def test_a_missing_precondition_is_reported_word_for_word() -> None:
    absent = run_judge("precondition", {"capabilities": {"counters": False}, "needs": ["counters"]})
    assert absent.status is Status.UNSUPPORTED and absent.unsupported_by == [absent.detail()]
    assert absent.detail().startswith("needs the slot counters (active_slots, queued_requests)"), absent.detail()
    unknown = run_judge("precondition", {"capabilities": {}, "needs": ["counters"]})
    assert unknown.status is Status.PENDING and unknown.pendings == [unknown.detail()]
    assert unknown.detail() == "needs the slot counters in /v1/models: not determined"


def test_a_stagger_naming_no_older_work_is_missing_evidence_named() -> None:
    f = facts(
        [fl("occupant0", 0.0, 0.30), manager("unload", 0.05, 0.60)],
        waits=[{"what": "1 active slot(s)", "seen": True}],
        staggers=[stagger("the unload", "unload", still_waiting=False)],
    )
    with pytest.raises(KeyError, match="names no older work"):
        waits(Verdict(), f, managers=("unload",))


def test_an_observation_that_is_not_an_object_is_missing_evidence_not_a_crash() -> None:
    v = run_judge("given", ["not", "an", "object"])  # type: ignore[arg-type]
    assert v.status is Status.PENDING and "lacks evidence" in v.detail(), v.detail()
