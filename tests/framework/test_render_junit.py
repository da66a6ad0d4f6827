"""`parval report FRAMEWORK_RUN --format junit` writes one test case per F assertion through
the same JUnit writer as a model run's report: PASS passes, FAIL is a <failure>, every other
status a <skipped> naming it; the suite counts them."""

from __future__ import annotations

from typing import Any, cast
from xml.etree import ElementTree as ET

from parval.framework.record import FrameworkRecord
from parval.report.framework_record_md import render_framework


def test_framework_junit_has_a_case_per_assertion_by_status() -> None:
    record = cast(
        FrameworkRecord,
        {
            "record_id": "fw-test",
            "assertions": [
                {"id": "F1.fifo", "status": "PASS", "reason": "ok"},
                {"id": "F1.overdue", "status": "FAIL", "reason": "waited 30 s instead of failing <fast>"},
                {"id": "F2.same_id", "status": "PENDING", "reason": "not forced"},
                {"id": "F6.ctest", "status": "NOT_APPLICABLE", "reason": "no build"},
            ],
        },
    )
    root = ET.fromstring(render_framework(record, "junit", []))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "fw-test",
        "4",
        "1",
        "2",
    )
    cases: dict[str, Any] = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases["F1.fifo"]) == []
    failure = cases["F1.overdue"].find("failure")
    assert failure is not None and failure.get("message") == "waited 30 s instead of failing <fast>"
    assert cases["F2.same_id"].find("skipped").get("message") == "PENDING: not forced"
    assert cases["F6.ctest"].find("skipped").get("message") == "NOT_APPLICABLE: no build"


def test_framework_markdown_escapes_reason_cells_as_the_model_report_does() -> None:
    record = cast(
        FrameworkRecord,
        {
            "record_id": "fw-test",
            "identity": {"candidate_name": "s", "candidate_sha256": "0" * 64, "backend": "cpu"},
            "verdict": {"line": "v"},
            "procedure_version": "p",
            "assertions": [{"id": "F1.fifo", "status": "FAIL", "reason": "a | b\nc <d>"}],
            "groups": {},
        },
    )
    md = render_framework(record, "md", [])
    assert "| F1.fifo | FAIL | a \\| b c &lt;d> |" in md
