"""A verdict is never rewritten in place (parval/status.py): `Result` is frozen, a later
step (a count, a reproduction line, a limitation, masking) builds a new one with
`dataclasses.replace`, and the one a judge returned stays as it was."""

from __future__ import annotations

import dataclasses
import json

import pytest

from parval.procedure import judge_shape as shape
from parval.status import Result, Status


def verdict() -> Result:
    return shape.passed("M2.exact", "3/3 exact", {"compared outputs": 3}, compared=3)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("id", "M2.other"),
        ("status", Status.FAIL),
        ("reason", "rewritten"),
        ("evidence", {}),
        ("reproduction", "parval run other.yaml"),
        ("limitations", ["added"]),
        ("applicable", False),
        ("count", 2),
    ],
)
def test_no_field_of_a_result_can_be_assigned(name: str, value: object) -> None:
    r = verdict()
    before = dataclasses.asdict(r)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(r, name, value)
    assert dataclasses.asdict(r) == before


def test_limitations_are_a_tuple_and_cannot_grow_in_place() -> None:
    r = Result("M2.exact", Status.PENDING, "open", limitations=["a"])
    assert r.limitations == ("a",)
    with pytest.raises(AttributeError):
        r.limitations.append("b")  # type: ignore[attr-defined]
    assert r.limitations == ("a",)


def test_a_change_is_a_new_result() -> None:
    r = verdict()
    r2 = dataclasses.replace(r, count=2, limitations=[*r.limitations, "note"], evidence={**r.evidence, "x": 1})
    assert (r2.count, r2.limitations, r2.evidence["x"]) == (2, ("note",), 1)
    assert r.count is None and r.limitations == () and "x" not in r.evidence
    na = dataclasses.replace(r, status=Status.NOT_APPLICABLE, reason="one slot")
    assert na.applicable is False and r.applicable is True
    with pytest.raises(ValueError, match="NOT_APPLICABLE needs a reason"):
        dataclasses.replace(r, status=Status.NOT_APPLICABLE, reason="")


def test_the_json_form_is_unchanged_and_not_shared_with_the_result() -> None:
    r = Result("M2.exact", Status.PASS, "ok", {"rests_on": {"n": 1}}, "repro", ["lim"], count=2)
    out = r.to_json()
    assert json.dumps(out) == json.dumps(
        {
            "id": "M2.exact",
            "status": "PASS",
            "applicable": True,
            "reason": "ok",
            "evidence": {"rests_on": {"n": 1}},
            "reproduction": "repro",
            "limitations": ["lim"],
            "count": 2,
        }
    )
    out["evidence"]["added"] = True
    out["limitations"].append("more")
    assert r.evidence == {"rests_on": {"n": 1}} and r.limitations == ("lim",)
    assert Result.from_json(r.to_json()) == r


def test_enforce_gives_a_new_result_and_leaves_the_judges_own_untouched() -> None:
    mute = Result("M9.other", Status.PENDING, "  ")
    out = shape.enforce(mute, "M9.other")
    assert out.reason.startswith("unresolved") and mute.reason == "  " and out is not mute
    withheld = Result("M9.other", Status.PASS, "because", {"rests_on": {}})
    out = shape.enforce(withheld, "M9.other")
    assert out.status is Status.PENDING and withheld.status is Status.PASS
    assert "withheld" not in withheld.evidence
