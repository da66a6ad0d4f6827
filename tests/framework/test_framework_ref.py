"""Model evidence reads framework_checks from the referenced record: its statuses when the
record matches the candidate executable and backend, PENDING (never FAIL) otherwise."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from parval.assertions import FRAMEWORK_GATE
from parval.gates.framework_ref import framework_checks
from parval.status import Status

SHA = "a" * 64


def _manifest(sha: str = SHA, backend: str = "cpu") -> dict[str, Any]:
    return {"executables": {"candidate": {"sha256": sha}},
            "platform": {"backend": backend, "machine": platform.machine()}}


def _record(tmp: Path, **ident: Any) -> Path:
    statuses = {aid: "PASS" for aid in FRAMEWORK_GATE}
    statuses["F6.ctest"] = "PENDING"
    statuses["F2.same_id"] = "FAIL"
    record = {"schema_version": 1, "record_id": "fw-test",
              "identity": {"candidate_sha256": SHA, "backend": "cpu",
                           "platform": {"os": "x", "machine": platform.machine()}, **ident},
              "assertions": [{"id": a, "status": s, "reason": "r", "evidence": {}, "limitations": []}
                             for a, s in statuses.items()],
              "groups": {"F2": {"status": "FAIL", "coverage": "partial", "blanket_pass": False,
                                "summary": "F2 FAIL: 1 FAIL"}},
              "verdict": {"line": "FAIL: F2.same_id"}}
    (tmp / "record.json").write_text(json.dumps(record))
    return tmp / "record.json"


def _by_id(results: list[Any]) -> dict[str, Any]:
    return {r.id: r for r in results}


def test_matching_record_supplies_its_statuses(tmp_path: Path) -> None:
    path = _record(tmp_path)
    results, info = framework_checks(str(path), _manifest(), None)
    r = _by_id(results)
    assert r["F1.fifo"].status is Status.PASS
    assert r["F2.same_id"].status is Status.FAIL
    assert r["F6.ctest"].status is Status.PENDING
    assert r["F1.fifo"].evidence["record"] == "fw-test"
    assert info["record"]["groups"]["F2"]["blanket_pass"] is False
    assert info["record"]["verdict"] == "FAIL: F2.same_id"
    # the run directory works as well as the file
    results_dir, _ = framework_checks(str(tmp_path), _manifest(), None)
    assert _by_id(results_dir)["F2.same_id"].status is Status.FAIL


def test_missing_or_foreign_record_is_pending_not_fail(tmp_path: Path) -> None:
    path = _record(tmp_path)
    cases = {
        "none": framework_checks(None, _manifest(), None),
        "missing": framework_checks(str(tmp_path / "nope.json"), _manifest(), None),
        "other executable": framework_checks(str(path), _manifest(sha="b" * 64), None),
        "other backend": framework_checks(str(path), _manifest(backend="cuda"), None),
    }
    for name, (results, _) in cases.items():
        f = [r for r in results if r.id in FRAMEWORK_GATE]
        assert len(f) == len(FRAMEWORK_GATE), name
        assert all(r.status is Status.PENDING for r in f), name
    reasons = {n: _by_id(r)["F1.fifo"].reason for n, (r, _) in cases.items()}
    assert "another executable" in reasons["other executable"]
    assert "this run uses cuda" in reasons["other backend"]


def test_record_for_another_machine_is_pending(tmp_path: Path) -> None:
    path = _record(tmp_path, platform={"os": "x", "machine": "not-" + platform.machine()})
    results, _ = framework_checks(str(path), _manifest(), None)
    assert all(r.status is Status.PENDING for r in results if r.id in FRAMEWORK_GATE)
    assert "platform" in _by_id(results)["F1.fifo"].reason


def test_minimal_record_without_platform_still_matches(tmp_path: Path) -> None:
    record = {"record_id": "min", "identity": {"candidate_sha256": SHA, "backend": "cpu"},
              "assertions": [{"id": f, "status": "PASS", "reason": "r"} for f in FRAMEWORK_GATE]}
    (tmp_path / "min.json").write_text(json.dumps(record))
    results, _ = framework_checks(str(tmp_path / "min.json"), _manifest(), None)
    assert all(r.status is Status.PASS for r in results if r.id in FRAMEWORK_GATE)
