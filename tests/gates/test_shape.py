"""The verdict shape every model-gate judge goes through (parval/procedure/judge_shape.py): a PASS
without named non-empty evidence, or a FAIL without an observed violation, is withheld as
PENDING naming what it lacked."""

from __future__ import annotations

import pytest

from parval.procedure import judge_shape as shape
from parval.procedure.entry import Declaration
from parval.status import Result, Status

# The registry entry every test judge declares (none is a catalogue assertion).
DECLARED = Declaration("run", ("the test's own arguments",))


@shape.judge("M9.example", DECLARED)
def example(status: Status, evidence: dict[str, object]) -> Result:
    return Result("M9.example", status, "because", dict(evidence))


def test_a_pass_must_name_non_empty_evidence() -> None:
    assert example(Status.PASS, {"rests_on": {"outputs": 3}}).status is Status.PASS
    for bad in ({}, {"rests_on": {}}, {"rests_on": {"outputs": 0}}, {"rests_on": {"waves": []}}):
        r = example(Status.PASS, bad)
        assert r.status is Status.PENDING and r.reason.startswith("PASS withheld"), bad
    r = shape.passed("M9.example", "x", {"outputs": [], "waves": [1]})
    assert shape.shape_problem(r) == "evidence it rests on is empty: outputs"


def test_a_fail_must_carry_the_observed_violation() -> None:
    assert example(Status.FAIL, {"violation": ["reply 3 differs"]}).status is Status.FAIL
    r = example(Status.FAIL, {"mismatch_count": 0})
    assert r.status is Status.PENDING and "no observed violation" in r.reason


def test_everything_else_names_what_is_missing() -> None:
    @shape.judge("M9.other", DECLARED)
    def mute() -> Result:
        return Result("M9.other", Status.PENDING, "  ")

    assert "unresolved" in mute().reason


def test_a_judge_answers_for_its_own_assertion_only() -> None:
    @shape.judge("M9.one", DECLARED)
    def wrong() -> Result:
        return Result("M9.two", Status.PENDING, "x")

    with pytest.raises(ValueError, match="returned a result for M9.two"):
        wrong()
    found = shape.entry_of(example)
    assert found is not None and found.id == "M9.example"


def test_a_judge_carries_the_entry_it_declares() -> None:
    found = shape.entry_of(example)
    assert found is not None and found.id == "M9.example" and found.scope == "run"
    assert found.judge == f"{__name__}:example"
    assert shape.entries_of({"M9.example": example}) == (found,)
    with pytest.raises(ValueError, match="not a judge registered for M9.other"):
        shape.entries_of({"M9.other": example})


def test_a_withheld_verdict_keeps_its_evidence_and_says_what_was_withheld() -> None:
    r = Result("M9.example", Status.PASS, "because", {"rests_on": {"outputs": 0}, "seen": 1}, "parval run p.yaml")
    out = shape.enforce(r, "M9.example")
    assert out.id == "M9.example" and out.status is Status.PENDING
    assert out.reason == "PASS withheld: evidence it rests on is empty: outputs; because"
    assert out.evidence == {"rests_on": {"outputs": 0}, "seen": 1, "withheld": "PASS"}
    assert out.reproduction == "parval run p.yaml"
    empty_pass = shape.passed("M9.example", "x", {"outputs": [], "waves": []})
    assert empty_pass.evidence["empty_evidence"] == ["outputs", "waves"]
    assert shape.shape_problem(empty_pass) == "evidence it rests on is empty: outputs, waves"
    assert shape.shape_problem(Result("M9.example", Status.BLOCKED, "")) == "it gives no reason naming what is missing"
    assert shape.blocked("M9.example", "no GPU", gpu=None).status is Status.BLOCKED
