"""The JUnit of a run carries its verdict as a test case: an incomplete run (exit 3) once
had 0 failures, every unresolved assertion a skip, so CI showed green while admission was
pending. Anything but ADMITTED is a failing `admission` case; ADMITTED passes."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from parval.report.write import render_report
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run

_COMPLETE = {"warnings": [], "failures": [], "performance": {"status": "PASS", "rows": []}, "all_plan_rules": True}


@pytest.mark.parametrize(("exit_code", "failures"), [(0, 0), (3, 1), (1, 2)])
def test_the_verdict_is_a_junit_case(tmp_path: Path, exit_code: int, failures: int) -> None:
    _, combo = _combo(tmp_path)
    ev = _evidence(combo, "2026-01-01T00:00:00Z", failing=exit_code == 1) | _COMPLETE
    ev["verdict"] |= {"exit_code": exit_code, "line": f"verdict with exit {exit_code}"}
    run = _run(tmp_path / "runs", "a", ev)
    text, code = render_report([run], fmt="junit", catalogue=None, redact=False, rejudge=False)
    assert code == exit_code
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None and suite.get("failures") == str(failures), text
    (case,) = [c for c in suite.iter("testcase") if c.get("name") == "admission"]
    failure = case.find("failure")
    if exit_code == 0:
        assert failure is None
    else:
        assert failure is not None and failure.get("message") == f"verdict with exit {exit_code}"
