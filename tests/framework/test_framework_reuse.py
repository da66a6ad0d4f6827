"""Reviewed reuse of a framework record across candidate builds (plan framework.reuse), against
real git repositories: reused when no framework path changed, refused naming the file when
one did, adapter-only changes reused with the model gate required; each decision lands in
framework_checks (evidence.json) and the markdown report."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.gates.framework_ref import framework_checks
from parval.gates.framework_reuse import ADAPTER_ONLY, FRAMEWORK_PATHS, REFUSED, REUSED, UNAVAILABLE, classify
from parval.procedure.catalogue import FRAMEWORK_GATE
from parval.report.markdown import render_markdown
from parval.status import Result, Status
from tests.gitkit import git, isolated_git  # noqa: F401 (autouse fixture)
from tests.records_kit import framework_record, x4_json

OLD_EXE = "f" * 64  # the build the record was made for
NEW_EXE = "a" * 64  # the candidate under test

FILES = {
    "app/server/parallel_runtime.cpp": "int run() { return 1; }\n",
    "include/engine/framework/runtime/session.h": "#pragma once\n",
    "src/models/whisper/model.cpp": "void whisper() {}\n",
    "src/models/silero_vad/model.cpp": "void vad() {}\n",
    "docs/README.md": "docs\n",
}


def _commit(repo: Path, changes: dict[str, str], message: str) -> str:
    for rel, text in changes.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def _setup(
    tmp: Path, changes: dict[str, str], family: str = "silero_vad"
) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    repo = tmp / "audio.cpp"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    old = _commit(repo, FILES, "record build")
    new = _commit(repo, changes, "candidate build")
    (tmp / "record.json").write_text(json.dumps(framework_record(OLD_EXE, source_commit=old, record_id="fw-old")))
    plan = {
        "model": {"family": family},
        "framework": {
            "reuse": {"record": "record.json", "record_commit": old[:10], "candidate_commit": new, "repo": "audio.cpp"}
        },
        "identity": {"candidate": {"source_commit": new}},
    }
    manifest = {
        "procedure_version": PROCEDURE_VERSION,
        "plan": {"path": str(tmp / "plan.yaml")},
        "executables": {"candidate": {"sha256": NEW_EXE}},
        "platform": {"backend": "cpu", "machine": platform.machine()},
        "settings": {"counts": [1, 2]},
    }
    return plan, manifest, old, new


def _f(results: list[Result]) -> dict[str, Result]:
    return {r.id: r for r in results if r.id in FRAMEWORK_GATE and r.count is None}


def _evidence(results: list[Result], info: dict[str, Any]) -> dict[str, Any]:
    """Just enough evidence around framework_checks for the markdown renderer."""
    fw = [r.to_json() for r in results]
    return {
        "procedure_version": PROCEDURE_VERSION,
        "parval_version": "t",
        "run": {"dir": "run", "provenance": {"kind": "ci", "service": "github-actions", "details": {}}},
        "identity": {
            "model": "m",
            "family": "silero_vad",
            "task": "vad",
            "mode": "offline",
            "backend": "cpu",
            "candidate_sha256": NEW_EXE,
            "baseline_sha256": "b" * 64,
        },
        "verdict": {"line": "x", "exit_code": 3, "admitted_counts": [], "counts": {"1": "PENDING"}},
        "admission_ready": False,
        "all_plan_rules": False,
        "assertions": fw,
        "model_checks": {"per_count": {"1": {"assertions": []}}, "model_level": []},
        "framework_checks": {**info, "results": fw},
        "performance": {"status": "pending", "rows": []},
    }


def test_unchanged_framework_paths_reuse_the_record(tmp_path: Path) -> None:
    plan, manifest, old, new = _setup(tmp_path, {"docs/README.md": "more docs\n"})
    results, info = framework_checks(None, manifest, x4_json(candidate_commit=new), plan=plan)
    f = _f(results)
    assert all(r.status is Status.PASS for r in f.values()), {r.id: r.reason for r in f.values()}
    assert info["reuse"]["status"] == REUSED and info["reuse"]["other_changed"] == ["docs/README.md"]
    assert info["reuse"]["reason"].endswith(f"({old[:12]}): framework paths unchanged")
    assert info["reuse"]["framework_paths"] == list(FRAMEWORK_PATHS)
    assert f["F1.fifo"].evidence["reused_from"]["record_commit"] == old
    md = render_markdown(_evidence(results, info))
    assert f"framework record reused from {tmp_path / 'record.json'} ({old[:12]}): framework paths unchanged" in md
    assert "`app/server`" in md and "Evidence made: **CI (github-actions)**" in md


def test_a_changed_framework_path_refuses_reuse_naming_the_file(tmp_path: Path) -> None:
    plan, manifest, _, _ = _setup(
        tmp_path,
        {
            "app/server/parallel_runtime.cpp": "int run() { return 2; }\n",
            "src/models/whisper/model.cpp": "void whisper() { }\n",
        },
    )
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    assert all(r.status is Status.PENDING for r in f.values())
    assert "app/server/parallel_runtime.cpp" in f["F2.first_publish"].reason and "refused" in f["F1.fifo"].reason
    assert info["reuse"]["status"] == REFUSED
    assert info["reuse"]["changed_framework"] == ["app/server/parallel_runtime.cpp"]
    md = render_markdown(_evidence(results, info))
    assert "Reuse: **refused**" in md and "`app/server/parallel_runtime.cpp`" in md


def test_adapter_only_changes_reuse_the_record_with_the_model_gate_required(tmp_path: Path) -> None:
    plan, manifest, _, new = _setup(tmp_path, {"src/models/silero_vad/model.cpp": "void vad() { }\n"})
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    assert all(r.status is Status.PASS for r in f.values())
    assert info["reuse"]["status"] == ADAPTER_ONLY and info["reuse"]["model_gate_required"] == ["silero_vad"]
    assert "this run is the silero_vad model gate" in info["reuse"]["reason"]
    assert any("adapter-only" in x for x in f["F1.fifo"].limitations)
    md = render_markdown(_evidence(results, info))
    assert "adapter-only changes in `silero_vad` (model gate required on the new build)" in md
    # Without the plan naming the candidate commit, that tie is stated as a limitation.
    del plan["identity"]
    results, _ = framework_checks(None, manifest, None, plan=plan)
    assert any("not shown to be the silero_vad model gate" in x for x in _f(results)["F1.fifo"].limitations)
    # Another family's adapter: reused, that family's gate required, not this one's.
    info2 = classify(
        ["src/models/whisper/model.cpp"], "silero_vad", record="r", record_commit=new, candidate_commit=new, repo="x"
    )
    assert info2.status == ADAPTER_ONLY and info2.model_gate_required == ["whisper"]
    assert "this run is" not in info2.reason


def test_shared_model_code_outside_a_family_is_a_framework_change() -> None:
    d = classify(
        ["src/models/common.cpp"], "whisper", record="r", record_commit="1" * 40, candidate_commit="2" * 40, repo="x"
    )
    assert d.status == REFUSED and d.changed_framework == ["src/models/common.cpp"]


def test_reuse_of_a_record_from_another_commit_or_unknown_commits_is_pending(tmp_path: Path) -> None:
    plan, manifest, old, new = _setup(tmp_path, {"docs/README.md": "x\n"})
    (tmp_path / "record.json").write_text(json.dumps(framework_record(OLD_EXE, source_commit=new)))
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert "not the reviewed record commit" in _f(results)["F1.fifo"].reason
    plan["framework"]["reuse"]["record_commit"] = "0" * 40
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert info["reuse"]["status"] == UNAVAILABLE
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert (
        "unknown upstream commit" in _f(results)["F1.fifo"].reason
        or "cannot be reviewed" in _f(results)["F1.fifo"].reason
    )
    plan["framework"]["reuse"] = {"record": "record.json"}
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert "lacks record_commit, candidate_commit, repo" in _f(results)["F1.fifo"].reason


def test_the_plan_candidate_commit_must_be_the_one_diffed_to(tmp_path: Path) -> None:
    plan, manifest, old, _ = _setup(tmp_path, {"docs/README.md": "x\n"})
    plan["identity"]["candidate"]["source_commit"] = old
    results, _ = framework_checks(None, manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert "framework.reuse diffed up to candidate commit" in _f(results)["F1.fifo"].reason


def test_reuse_is_read_from_the_manifest_when_the_judge_passes_no_plan(tmp_path: Path) -> None:
    """The manifest records settings.framework and identity, so re-judging needs no plan file."""
    plan, manifest, _, new = _setup(tmp_path, {"app/server/parallel_runtime.cpp": "int run() { return 3; }\n"})
    manifest["settings"]["framework"] = plan["framework"]
    manifest["model"] = plan["model"]
    manifest["identity"] = {"candidate": {"source_commit": new}}
    results, info = framework_checks(None, manifest, None)
    assert info["reuse"]["status"] == REFUSED
    assert all(r.status is Status.PENDING for r in _f(results).values())


def test_the_report_names_an_untrusted_record_and_uncovered_counts(tmp_path: Path) -> None:
    _, manifest, _, _ = _setup(tmp_path, {"docs/README.md": "x\n"})
    manifest["executables"]["candidate"]["sha256"] = OLD_EXE  # the record's own build: no reuse needed
    (tmp_path / "record.json").write_text(json.dumps(framework_record(OLD_EXE, counts=[2], record_id="fw-old")))
    results, info = framework_checks(str(tmp_path / "record.json"), manifest, None, plan={})
    ev = _evidence(results, info)
    ev["model_checks"]["per_count"] = {"1": {"assertions": []}, "2": {"assertions": []}}
    md = render_markdown(ev)
    assert "Record `fw-old`" in md and ": used" in md
    assert "Counts it does not cover (not admissible on it): [1] (record counts [2])" in md
    row = next(line for line in md.splitlines() if line.startswith("| **F1**"))
    assert "F1.fifo ⏳ @1" in row
    (tmp_path / "record.json").write_text(json.dumps({**framework_record(OLD_EXE), "procedure_version": "old"}))
    results, info = framework_checks(str(tmp_path / "record.json"), manifest, None, plan={})
    assert "not used: framework record was made under procedure version old" in render_markdown(
        _evidence(results, info)
    )
