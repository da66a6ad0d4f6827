"""Reviewed reuse of a framework record across candidate builds (plan framework.reuse), against
real git repositories: reused when no framework path changed, refused naming the file when
one did, adapter-only changes reused with the model gate required; each decision lands in
framework_checks (evidence.json) and the markdown report."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest

from parval import PROCEDURE_VERSION
from parval.framework.record_trust import framework_checks
from parval.framework.reuse import (
    ADAPTER_ONLY,
    ADAPTER_ONLY_RULE,
    ADAPTER_PATHS,
    CARRY,
    INCOMPLETE,
    REFUSED,
    RERUN,
    REUSED,
    UNAVAILABLE,
    adapter_only_rule,
    classify,
)
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.report.markdown import render_markdown
from parval.status import Result, Status
from tests.gitkit import git, isolated_git  # noqa: F401 (autouse fixture)
from tests.records_kit import framework_record, write_record_dir, x4_json

OLD_EXE = "f" * 64  # the build the record was made for
NEW_EXE = "a" * 64  # the candidate under test
FLAGS = "-DCMAKE_BUILD_TYPE=Release -DAUDIOCPP_PARALLEL=ON"
CPU_UNAFFECTED = "the change is in the CUDA graph path only; CPU default/unsupported-mode coverage: fw-old F6.ctest"
# What an adapter-only change may not carry over: evidence the candidate build must give itself.
NOT_CARRIED = ("F3.ownership", "F6.ctest", "F6.sanitizers", "F6.stress")

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
    write_record_dir(
        tmp / "fw-old", framework_record(OLD_EXE, source_commit=old, record_id="fw-old", build_flags=FLAGS)
    )
    plan = {
        "model": {"family": family},
        "framework": {
            "reuse": {
                "record": "fw-old",
                "record_commit": old[:10],
                "candidate_commit": new,
                "repo": "audio.cpp",
                "candidate_sha256": NEW_EXE,
            }
        },
        "identity": {"candidate": {"source_commit": new, "build_flags": FLAGS}},
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


def test_an_unchanged_tree_reuses_the_record(tmp_path: Path) -> None:
    plan, manifest, old, new = _setup(tmp_path, {})
    results, info = framework_checks(None, manifest, x4_json(candidate_commit=new), plan=plan)
    f = _f(results)
    assert all(r.status is Status.PASS for r in f.values()), {r.id: r.reason for r in f.values()}
    assert info["reuse"]["status"] == REUSED and info["reuse"]["refused_files"] == []
    assert info["reuse"]["reason"].endswith(f"({old[:12]}): no file changed up to candidate {new[:12]}")
    assert [p["path"] for p in info["reuse"]["adapter_paths"]] == [root for root, _ in ADAPTER_PATHS]
    assert all(p["why"] for p in info["reuse"]["adapter_paths"])
    assert f["F1.fifo"].evidence["reused_from"]["record_commit"] == old
    md = render_markdown(_evidence(results, info))
    assert f"framework record reused from {tmp_path / 'fw-old'} ({old[:12]})" in md
    assert "`src/models/<family>`" in md and "Evidence made: **CI (github-actions)**" in md


@pytest.mark.parametrize(
    "changed",
    [
        "app/server/runtime.cpp",
        "external/cpp-httplib/httplib.h",  # the default transport F6 names
        "tests/server/test_parallel_http_ownership.cpp",  # the CTests
        "src/CMakeLists.txt",
        "external/cJSON/cJSON.c",
        "src/capi/audiocpp.cpp",
        "app/streaming/session.cpp",
        "third_party/vendor/lib.cpp",
        "src/models/whisper/CMakeLists.txt",  # a build file, even in a family's directory
        "src/models/common.cpp",  # shared model code outside any one family
        "docs/README.md",
    ],
)
def test_anything_not_known_to_be_one_familys_adapter_refuses_reuse(tmp_path: Path, changed: str) -> None:
    """FRAMEWORK_PATHS was once an allow-list: cpp-httplib, tests/, src/CMakeLists.txt,
    cJSON, src/capi, app/streaming and vendored code all came out 'reused'."""
    plan, manifest, _, _ = _setup(tmp_path, {changed: "changed\n"})
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    assert all(r.status is Status.PENDING for r in f.values())
    assert info["reuse"]["status"] == REFUSED and info["reuse"]["refused_files"] == [changed]
    assert changed in f["F1.fifo"].reason and "not known to be one model family's adapter" in f["F1.fifo"].reason
    md = render_markdown(_evidence(results, info))
    assert "Reuse: **refused**" in md and f"`{changed}`" in md


def test_a_dirty_checkout_refuses_reuse(tmp_path: Path) -> None:
    """An uncommitted change to app/server/runtime.cpp once came out 'reused': the diff of
    two commits says nothing about a binary built from a modified tree."""
    plan, manifest, _, _ = _setup(tmp_path, {"src/models/silero_vad/model.cpp": "void vad() { }\n"})
    (tmp_path / "audio.cpp" / "app" / "server" / "parallel_runtime.cpp").write_text("uncommitted\n")
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert info["reuse"]["status"] == REFUSED and info["reuse"]["dirty"]
    reason = _f(results)["F1.fifo"].reason
    assert "uncommitted changes" in reason and "app/server/parallel_runtime.cpp" in reason


def test_reuse_keeps_an_executable_check_and_needs_the_binarys_source_commit(tmp_path: Path) -> None:
    """Under reuse the executable hash was once not checked at all, and without a declared
    candidate source commit nothing tied the binary to the reviewed commit."""
    plan, manifest, _, new = _setup(tmp_path, {})
    del plan["identity"]
    results, _ = framework_checks(None, manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert "needs the plan's identity.candidate.source_commit" in _f(results)["F1.fifo"].reason
    (tmp_path / "b").mkdir()
    plan, manifest, _, new = _setup(tmp_path / "b", {})
    del plan["framework"]["reuse"]["candidate_sha256"]
    results, _ = framework_checks(None, manifest, None, plan=plan)
    assert "names no candidate_sha256" in _f(results)["F1.fifo"].reason and NEW_EXE in _f(results)["F1.fifo"].reason
    plan["framework"]["reuse"]["candidate_sha256"] = "c" * 64
    results, _ = framework_checks(None, manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert "is not this run's candidate executable" in _f(results)["F1.fifo"].reason


def test_adapter_only_changes_reuse_the_record_with_the_model_gate_required(tmp_path: Path) -> None:
    plan, manifest, _, new = _setup(tmp_path, {"src/models/silero_vad/model.cpp": "void vad() { }\n"})
    plan["framework"]["reuse"]["cpu_unaffected"] = CPU_UNAFFECTED
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    carried = {fid: r for fid, r in f.items() if fid not in NOT_CARRIED}
    assert all(r.status is Status.PASS for r in carried.values()), {r.id: r.reason for r in carried.values()}
    assert info["reuse"]["status"] == ADAPTER_ONLY and info["reuse"]["model_gate_required"] == ["silero_vad"]
    assert "this run is the silero_vad model gate" in info["reuse"]["reason"]
    assert f"CPU path unaffected: {CPU_UNAFFECTED}" in info["reuse"]["reason"]
    assert any("only adapter paths changed" in x for x in f["F1.fifo"].limitations)
    assert any(x.startswith("carried over the adapter-only change: scheduling") for x in f["F1.fifo"].limitations)
    md = render_markdown(_evidence(results, info))
    assert "adapter-only changes in `silero_vad` (model gate required on the new build)" in md
    # Another family's adapter: reused, that family's gate required, not this one's.
    info2 = classify(
        ["src/models/whisper/model.cpp"],
        "silero_vad",
        record="r",
        record_commit=new,
        candidate_commit=new,
        repo="x",
        cpu_smoke="runs/whisper-cpu-smoke",
    )
    assert info2.status == ADAPTER_ONLY and info2.model_gate_required == ["whisper"]
    assert "this run is" not in info2.reason and "CPU checkpoint smoke: runs/whisper-cpu-smoke" in info2.reason


def test_an_adapter_only_change_does_not_carry_ownership_or_regressions(tmp_path: Path) -> None:
    """One comment line in a family's session.cpp once carried every F entry as PASS,
    F3.ownership and the F6 CTests, sanitizers and stress included: evidence that depends on
    the changed adapter must come from the candidate build itself."""
    plan, manifest, old, new = _setup(
        tmp_path, {"src/models/silero_vad/session.cpp": "// a comment\nvoid session() {}\n"}
    )
    plan["framework"]["reuse"]["cpu_unaffected"] = CPU_UNAFFECTED
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    assert info["reuse"]["status"] == ADAPTER_ONLY
    for fid in NOT_CARRIED:
        r = f[fid]
        assert r.status is Status.PENDING, (fid, r.reason)
        assert "not carried over from" in r.reason and "src/models/silero_vad/session.cpp" in r.reason
        assert f"rerun {fid} there" in r.reason and new[:12] in r.reason
        assert r.evidence["reused_from"]["record_commit"] == old
    assert "changed ownership path" in f["F3.ownership"].reason
    assert "applicable common regressions" in f["F6.ctest"].reason
    assert f["F3.load_failures"].status is Status.PASS and f["F1.fifo"].status is Status.PASS
    assert "F3.ownership, F6.ctest, F6.sanitizers, F6.stress are not carried over" in info["reuse"]["reason"]
    rule = info["reuse"]["adapter_only_rule"]
    assert any(s.startswith("For adapter-only changes, rerun") for s in rule["procedure"])
    assert {r["entry"]: r["evidence"] for r in rule["rows"]}["F3.ownership"] == RERUN


def test_the_adapter_only_rule_names_every_f_entry_and_why() -> None:
    for fid in FRAMEWORK_GATE:
        what, why = adapter_only_rule(fid)
        assert what in (CARRY, RERUN) and why
    assert {fid for fid in FRAMEWORK_GATE if adapter_only_rule(fid)[0] == RERUN} == set(NOT_CARRIED)
    assert all(key in FRAMEWORK_GATE or key.startswith("F") and "." not in key for key in ADAPTER_ONLY_RULE)


def test_an_adapter_only_reuse_needs_cpu_smoke_evidence_or_why_the_cpu_path_is_unaffected(tmp_path: Path) -> None:
    """CPU checkpoint smoke evidence (or the recorded reason the CPU path is unaffected) once
    existed nowhere: an adapter-only reuse passed without either."""
    plan, manifest, _, _ = _setup(tmp_path, {"src/models/silero_vad/session.cpp": "// a comment\n"})
    results, info = framework_checks(None, manifest, None, plan=plan)
    f = _f(results)
    assert info["reuse"]["status"] == INCOMPLETE and not info["reuse"]["reused"]
    assert all(r.status is Status.PENDING for r in f.values())
    reason = f["F1.fifo"].reason
    assert "framework.reuse.cpu_smoke" in reason and "framework.reuse.cpu_unaffected" in reason
    assert "CPU checkpoint smoke tests" in reason
    # Nothing changed: no CPU behaviour changed either, so none is needed.
    (tmp_path / "b").mkdir()
    plan, manifest, _, _ = _setup(tmp_path / "b", {})
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert info["reuse"]["status"] == REUSED
    assert all(r.status is Status.PASS for r in _f(results).values())


@pytest.mark.parametrize(
    ("record_flags", "plan_flags", "why"),
    [
        (FLAGS, FLAGS + " -DGGML_NATIVE=OFF", "another flag set is not the same build"),
        (FLAGS, FLAGS.split()[::-1], "another flag set is not the same build"),  # order matters
        (FLAGS, None, "reuse needs the plan's identity.candidate.build_flags"),
        (None, FLAGS, "names no build flags (identity.build_flags)"),
    ],
)
def test_build_flags_are_part_of_the_reused_identity(
    tmp_path: Path, record_flags: str | None, plan_flags: object, why: str
) -> None:
    """Build flags were in no framework identity: a record built with other flags was reused."""
    plan, manifest, old, _ = _setup(tmp_path, {})
    write_record_dir(
        tmp_path / "fw-flags",
        framework_record(OLD_EXE, source_commit=old, record_id="fw-flags", build_flags=record_flags),
    )
    plan["framework"]["reuse"]["record"] = "fw-flags"
    plan["identity"]["candidate"]["build_flags"] = plan_flags
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert info["trusted"] is False
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert why in _f(results)["F1.fifo"].reason


def test_the_same_flags_written_as_a_list_are_the_same_build(tmp_path: Path) -> None:
    plan, manifest, _, _ = _setup(tmp_path, {})
    plan["identity"]["candidate"]["build_flags"] = FLAGS.split()
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert info["trusted"] is True and all(r.status is Status.PASS for r in _f(results).values())


def test_a_record_of_this_executable_with_other_declared_flags_is_not_trusted(tmp_path: Path) -> None:
    _, manifest, _, _ = _setup(tmp_path, {})
    path = write_record_dir(tmp_path / "fw-same", framework_record(NEW_EXE, build_flags="-O0")) / "record.json"
    plan = {"identity": {"candidate": {"build_flags": "-O2"}}}
    results, info = framework_checks(str(path), manifest, None, plan=plan)
    assert all(r.status is Status.PENDING for r in _f(results).values())
    assert "was built with flags '-O0', the plan names '-O2'" in info["untrusted_reason"]
    # Not named on one side: the executable hash decides, as before.
    results, info = framework_checks(str(path), manifest, None, plan={})
    assert info["trusted"] is True


def test_reuse_of_a_record_from_another_commit_or_unknown_commits_is_pending(tmp_path: Path) -> None:
    plan, manifest, old, new = _setup(tmp_path, {})
    write_record_dir(tmp_path / "fw-other", framework_record(OLD_EXE, source_commit=new))
    plan["framework"]["reuse"]["record"] = "fw-other"
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
    plan["framework"]["reuse"] = {"record": "fw-old"}
    results, info = framework_checks(None, manifest, None, plan=plan)
    assert "lacks record_commit, candidate_commit, repo" in _f(results)["F1.fifo"].reason


def test_the_plan_candidate_commit_must_be_the_one_diffed_to(tmp_path: Path) -> None:
    plan, manifest, old, _ = _setup(tmp_path, {})
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
    _, manifest, _, _ = _setup(tmp_path, {})
    manifest["executables"]["candidate"]["sha256"] = OLD_EXE  # the record's own build: no reuse needed
    path = (
        write_record_dir(tmp_path / "fw-c", framework_record(OLD_EXE, counts=[2], record_id="fw-old")) / "record.json"
    )
    results, info = framework_checks(str(path), manifest, None, plan={})
    ev = _evidence(results, info)
    ev["model_checks"]["per_count"] = {"1": {"assertions": []}, "2": {"assertions": []}}
    md = render_markdown(ev)
    assert "Record `fw-old`" in md and ": used" in md
    assert "Counts it does not cover (not admissible on it): [1] (record counts [2])" in md
    row = next(line for line in md.splitlines() if line.startswith("| **F1**"))
    assert "F1.fifo ⏳ @1" in row
    old = write_record_dir(tmp_path / "fw-d", {**framework_record(OLD_EXE), "procedure_version": "old"})
    results, info = framework_checks(str(old / "record.json"), manifest, None, plan={})
    assert "not used: framework record was made under procedure version old" in render_markdown(
        _evidence(results, info)
    )
