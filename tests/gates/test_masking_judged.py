"""Masking verdict by verdict: which results a missing negative control or serial variation
changes, into what status, with which reason, limitation and evidence; and when the last
negative control counts as caught, with a tolerance in force or not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parval.gates.masking import (
    COMPARISON_IDS,
    UNCAUGHT_LIMITATION,
    mask_comparison,
    mask_comparisons,
    negative_control_caught,
    output_failure,
    tolerance_path_caught,
)
from parval.gates.serial import SerialVerdict
from parval.rundir.event_index import build_records
from parval.status import Result, Status
from tests.gates.cmp_events import tts_reply

STEADY = SerialVerdict(Status.PASS, "identical", measured=True, varies=False, tolerance_applies=False)
WITHIN = SerialVerdict(Status.PASS, "within tolerance", measured=True, varies=True, tolerance_applies=True)
VARIES = SerialVerdict(Status.PENDING, "serial output varies", measured=True, varies=True, tolerance_applies=False)
UNMEASURED = SerialVerdict(Status.PENDING, "not measured", measured=False, varies=False, tolerance_applies=False)
LOST = SerialVerdict(Status.BLOCKED, "baseline crashed", measured=True, varies=True, tolerance_applies=False)
LOST_STEADY = SerialVerdict(Status.BLOCKED, "baseline b lost", measured=False, varies=False, tolerance_applies=False)

NO_CONTROL = "negative control not caught (or not run): the comparator was not shown able to fail; "


def result(status: Status, id_: str = "M2.exact", kind: str | None = None) -> Result:
    evidence: dict[str, object] = {"compared": 3}
    if kind is not None:
        evidence["failure_kind"] = kind
    return Result(id_, status, "3 compared", evidence, "parval run p.yaml", ("earlier",), count=2)


@pytest.mark.parametrize("id_", sorted(COMPARISON_IDS))
def test_every_comparison_pass_is_blocked_without_a_caught_control(id_: str) -> None:
    r = result(Status.PASS, id_)
    assert mask_comparison(r, True, STEADY) is r
    got = mask_comparison(r, False, STEADY)
    assert got.status is Status.BLOCKED and got.reason == NO_CONTROL + "3 compared"
    assert got.evidence == {"compared": 3, "status_before_negative_control": "PASS"}
    assert (got.id, got.reproduction, got.limitations, got.count) == (id_, "parval run p.yaml", ("earlier",), 2)


@pytest.mark.parametrize(
    "r",
    [
        result(Status.PASS, "M2.drained"),  # not a comparison
        result(Status.FAIL, "M2.drained", "output"),
        Result("M2.exact", Status.NOT_APPLICABLE, "no variations"),
        result(Status.FAIL),  # a lifecycle FAIL (no failure_kind)
        result(Status.FAIL, kind="request"),
    ],
)
@pytest.mark.parametrize("serial", [VARIES, LOST, UNMEASURED])
def test_what_masking_never_touches(r: Result, serial: SerialVerdict) -> None:
    assert mask_comparison(r, False, serial) is r
    assert mask_comparison(r, True, serial) is r


def test_an_output_fail_without_a_control_stands_with_a_limitation() -> None:
    r = result(Status.FAIL, kind="output")
    for serial in (STEADY, WITHIN, UNMEASURED, LOST_STEADY):
        got = mask_comparison(r, False, serial)
        assert got.status is Status.FAIL and got.reason == "3 compared" and got.evidence == r.evidence
        assert got.limitations == ("earlier", UNCAUGHT_LIMITATION)
    assert mask_comparison(r, True, UNMEASURED) is r  # a mismatch against an unmeasured baseline stands
    assert mask_comparison(r, True, WITHIN) is r


@pytest.mark.parametrize(("serial", "status"), [(VARIES, Status.PENDING), (LOST, Status.BLOCKED)])
def test_serial_variation_masks_an_output_fail(serial: SerialVerdict, status: Status) -> None:
    r = result(Status.FAIL, kind="output")
    got = mask_comparison(r, True, serial)
    assert got.status is status and got.limitations == ("earlier",)
    assert got.reason == f"parity unverified ({serial.reason}); 3 compared"
    assert got.evidence == {"compared": 3, "failure_kind": "output", "status_before_serial_check": "FAIL"}
    uncaught = mask_comparison(r, False, serial)
    assert uncaught.status is status and uncaught.reason == got.reason
    assert uncaught.limitations == ("earlier", UNCAUGHT_LIMITATION)


@pytest.mark.parametrize(
    ("serial", "status"), [(VARIES, Status.PENDING), (UNMEASURED, Status.PENDING), (LOST_STEADY, Status.BLOCKED)]
)
def test_a_pass_is_not_given_while_serial_variation_is_not_shown_absent(serial: SerialVerdict, status: Status) -> None:
    got = mask_comparison(result(Status.PASS), True, serial)
    assert got.status is status and got.reason == f"parity unverified ({serial.reason}); 3 compared"
    assert got.evidence == {"compared": 3, "status_before_serial_check": "PASS"}
    assert mask_comparison(result(Status.PASS), True, WITHIN).status is Status.PASS


def test_a_pending_comparison_is_blocked_only_for_the_control() -> None:
    r = result(Status.PENDING)
    assert mask_comparison(r, True, VARIES) is r
    got = mask_comparison(r, False, STEADY)
    assert got.status is Status.BLOCKED and got.evidence["status_before_negative_control"] == "PENDING"


def test_mask_comparisons_keeps_the_order_and_leaves_the_judges_results_alone() -> None:
    rs = [result(Status.PASS, "M2.drained"), result(Status.PASS), result(Status.FAIL, kind="output")]
    got = mask_comparisons(rs, False, STEADY)
    assert [r.status for r in got] == [Status.PASS, Status.BLOCKED, Status.FAIL]
    assert got[0] is rs[0] and rs[1].status is Status.PASS and rs[2].limitations == ("earlier",)
    assert output_failure(rs[2]) and not output_failure(result(Status.FAIL, kind="request"))


# -- the negative control ------------------------------------------------------------------
def controls(*caught: Any, source: str | None = None) -> list[dict[str, Any]]:
    out = []
    for c in caught:
        e: dict[str, Any] = {"kind": "negative_control", "caught": c}
        if source is not None:
            e["source"] = {"artifact": source}
        out.append(e)
    return out


@pytest.mark.parametrize(
    ("events", "caught"),
    [
        ([], False),
        (controls(True), True),
        (controls(False, True), True),  # the last one counts
        (controls(True, False), False),
        (controls(True, False, True), True),
        (controls(False, True, False), False),
        (controls(None), False),  # recorded as not judged
    ],
)
def test_the_last_negative_control_decides(events: list[dict[str, Any]], caught: bool) -> None:
    assert negative_control_caught(build_records(events), None, None) is caught


def artifact(run_dir: Path, name: str, body: bytes) -> str:
    (run_dir / "artifacts").mkdir(exist_ok=True)
    (run_dir / "artifacts" / f"{name}.json").write_bytes(body)
    return name


def test_with_a_tolerance_the_last_control_must_show_the_tolerance_path(tmp_path: Path) -> None:
    good = artifact(tmp_path, "good", json.dumps(tts_reply()).encode())
    events = [*controls(True, source=good), *controls(True, source="missing"), *controls(True, source=good)]
    assert negative_control_caught(build_records(events), tmp_path, 2) is True
    assert negative_control_caught(build_records(events[:2]), tmp_path, 2) is False
    assert negative_control_caught(build_records(events[1:]), None, 2) is False


@pytest.mark.parametrize(
    ("neg", "body"),
    [
        ({"kind": "negative_control", "caught": True}, None),  # names no source reply
        ({"kind": "negative_control", "caught": True, "source": None}, None),
        ({"kind": "negative_control", "caught": True, "source": {"artifact": ""}}, None),
        ({"kind": "negative_control", "caught": True, "source": {"artifact": "a"}}, b"not json"),
        # audio with no samples: nothing to move beyond the tolerance
        (
            {"kind": "negative_control", "caught": True, "source": {"artifact": "a"}},
            json.dumps(tts_reply(np.array([], dtype=np.int16))).encode(),
        ),
    ],
)
def test_a_tolerance_path_not_shown_able_to_fail(tmp_path: Path, neg: Any, body: bytes | None) -> None:
    if body is not None:
        artifact(tmp_path, "a", body)
    assert tolerance_path_caught(neg, tmp_path, 2) is False


def test_the_tolerance_path_is_shown_from_the_source_reply(tmp_path: Path) -> None:
    neg: Any = {"kind": "negative_control", "caught": True, "source": {"artifact": "a"}}
    artifact(tmp_path, "a", json.dumps(tts_reply()).encode())
    assert tolerance_path_caught(neg, tmp_path, 2) is True
    assert tolerance_path_caught(neg, None, 2) is False
    text = artifact(tmp_path, "t", json.dumps({"text": "hello"}).encode())
    assert tolerance_path_caught({**neg, "source": {"artifact": text}}, tmp_path, 2) is True


@pytest.mark.parametrize("body", ["[1, 2]", "3", '"text"'])
def test_a_control_source_that_is_not_an_object_shows_nothing(tmp_path: Path, body: str) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "a.json").write_text(body)
    neg: Any = {"kind": "negative_control", "caught": True, "source": {"artifact": "a"}}
    assert tolerance_path_caught(neg, tmp_path, 2) is False
