"""Local vs CI provenance (E7), read from the CI environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.rundir.provenance import detect, label


def test_ci_services_and_plain_ci_are_ci() -> None:
    gh = detect({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "42", "HOME": "/x"})
    assert gh == {"kind": "ci", "service": "github-actions", "details": {"GITHUB_RUN_ID": "42"}}
    assert detect({"GITLAB_CI": "true", "CI_JOB_ID": "9"})["service"] == "gitlab-ci"
    assert detect({"CI": "1"}) == {"kind": "ci", "service": None, "details": {}}
    assert label(gh) == "CI (github-actions)"


def test_no_or_false_ci_variables_are_local() -> None:
    for env in ({}, {"CI": "false"}, {"CI": "0", "GITHUB_ACTIONS": ""}):
        assert detect(env)["kind"] == "local", env
    assert label(detect({})) == "local"
    assert label(None).startswith("unknown")


def test_the_manifest_records_where_the_run_was_made(monkeypatch: pytest.MonkeyPatch) -> None:
    from parval.plan.load import load_plan
    from parval.rundir.manifest import build_manifest

    plan = load_plan(Path(__file__).resolve().parents[1] / "plans" / "demo.yaml")
    for var in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD", "CIRCLECI"):
        monkeypatch.delenv(var, raising=False)
    assert build_manifest(plan)["provenance"]["kind"] == "local"
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("CI_PIPELINE_ID", "77")
    prov = build_manifest(plan)["provenance"]
    assert prov == {"kind": "ci", "service": "gitlab-ci", "details": {"CI_PIPELINE_ID": "77"}}
    assert build_manifest(plan)["settings"]["framework"]["reuse"] is None


def test_a_single_run_report_shows_its_manifest_provenance(tmp_path: Path) -> None:
    from parval.report.markdown import _header

    (tmp_path / "manifest.json").write_text('{"provenance": {"kind": "ci", "service": "gitlab-ci", "details": {}}}')
    ev = {
        "identity": {
            "model": "m",
            "family": "f",
            "task": "t",
            "mode": "offline",
            "backend": "cpu",
            "candidate_sha256": "c",
            "baseline_sha256": "b",
        },
        "verdict": {"line": "x", "admitted_counts": [], "exit_code": 3},
        "procedure_version": "v",
        "admission_ready": False,
        "all_plan_rules": False,
        "run": {"dir": str(tmp_path)},
        "assertions": [],
    }
    assert "Evidence made: **CI (gitlab-ci)**" in "\n".join(_header(ev, {"run_dirs": [str(tmp_path)]}))
    assert not any("Evidence made" in line for line in _header(ev, {}))
