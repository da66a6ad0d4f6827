"""Model evidence reads framework_checks from the referenced record: its statuses when the
record is shown to be one for this run (schema, procedure version, integrity, executable,
backend, platform, source commit, counts), PENDING naming why (never FAIL) otherwise; X4
only from a result that names both commits."""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.framework.record_trust import COUNT_SCOPED, framework_checks
from parval.gates import admission_verdict as adm
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.rundir.integrity import CHAIN, LISTING, seal_run, write_listing
from parval.status import Result, Status
from tests.closed_list_kit import filled
from tests.records_kit import CANDIDATE_COMMIT, framework_record, write_record_dir, x4_json

SHA = "a" * 64


def _manifest(sha: str = SHA, backend: str = "cpu", counts: list[int] | None = None) -> dict[str, Any]:
    return {
        "procedure_version": PROCEDURE_VERSION,
        "executables": {"candidate": {"sha256": sha}},
        "platform": {"backend": backend, "machine": platform.machine()},
        "settings": {"counts": counts or [1, 2, 4]},
    }


def _record(tmp: Path, **changes: Any) -> Path:
    record = framework_record(
        SHA, record_id="fw-test", statuses={"F6.ctest": "PENDING", "F2.same_id": "FAIL"}, **changes
    )
    return _write(tmp, record)


def _write(tmp: Path, record: dict[str, Any]) -> Path:
    """`record` in a sealed framework run directory of its own under `tmp`; its record.json."""
    n = len(list(tmp.glob("fw-*")))
    return write_record_dir(tmp / f"fw-{n}", record) / "record.json"


def _by_id(results: list[Result]) -> dict[str, Result]:
    return {r.id: r for r in results if r.count is None}


def _all_f_pending(results: list[Result]) -> bool:
    f = [r for r in results if r.id in FRAMEWORK_GATE]
    return len(f) == len(FRAMEWORK_GATE) and all(r.status is Status.PENDING for r in f)


def test_matching_record_supplies_its_statuses(tmp_path: Path) -> None:
    path = _record(tmp_path)
    results, info = framework_checks(str(path), _manifest(), None)
    r = _by_id(results)
    assert r["F1.fifo"].status is Status.PASS
    assert r["F2.same_id"].status is Status.FAIL
    assert r["F6.ctest"].status is Status.PENDING
    assert r["F1.fifo"].evidence["record"] == "fw-test"
    assert info["trusted"] is True and info["coverage"]["missing"] == []
    assert not [x for x in results if x.count is not None]
    assert info["record"]["groups"]["F2"]["blanket_pass"] is False
    # the run directory works as well as the file
    results_dir, _ = framework_checks(str(path.parent), _manifest(), None)
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
        assert _all_f_pending(results), name
    reasons = {n: _by_id(r)["F1.fifo"].reason for n, (r, _) in cases.items()}
    assert "another executable" in reasons["other executable"]
    assert "this run uses cuda" in reasons["other backend"]


def test_a_missing_relative_record_names_the_plan_folder(tmp_path: Path) -> None:
    """The plan's `framework.record` as written, and the folder it was resolved from."""
    plans = tmp_path / "plans"
    plan = {"framework": {"record": "../runs/fw-gone"}}
    results, _ = framework_checks(str(plans / "../runs/fw-gone"), _manifest(), None, plan=plan, plan_dir=plans)
    assert _all_f_pending(results)
    reason = _by_id(results)["F1.fifo"].reason
    assert (
        reason == f"framework record '../runs/fw-gone' (relative to the plan's folder {plans}) is missing or unreadable"
    )


def test_record_for_another_machine_is_pending(tmp_path: Path) -> None:
    path = _record(tmp_path, platform={"os": "x", "machine": "not-" + platform.machine()})
    results, _ = framework_checks(str(path), _manifest(), None)
    assert _all_f_pending(results)
    assert "platform" in _by_id(results)["F1.fifo"].reason


def test_record_that_breaks_the_schema_is_pending(tmp_path: Path) -> None:
    # A hand-made record with a passing F list but none of the record's structure.
    minimal = {
        "record_id": "min",
        "identity": {"candidate_sha256": SHA, "backend": "cpu"},
        "assertions": [{"id": f, "status": "PASS", "reason": "r"} for f in FRAMEWORK_GATE],
    }
    results, info = framework_checks(str(_write(tmp_path, minimal)), _manifest(), None)
    assert _all_f_pending(results)
    assert "schemas/framework.schema.json" in _by_id(results)["F1.fifo"].reason
    assert info["trusted"] is False
    bad_status = framework_record(SHA, statuses={"F1.fifo": "GREAT"})
    results, _ = framework_checks(str(_write(tmp_path, bad_status)), _manifest(), None)
    assert _all_f_pending(results) and "GREAT" in _by_id(results)["F1.fifo"].reason


def test_record_of_another_procedure_version_is_pending(tmp_path: Path) -> None:
    record = {**framework_record(SHA), "procedure_version": "2025-01-01"}
    results, _ = framework_checks(str(_write(tmp_path, record)), _manifest(), None)
    assert _all_f_pending(results)
    assert "procedure version 2025-01-01" in _by_id(results)["F3.ownership"].reason


def test_a_record_of_the_runs_own_old_procedure_version_is_not_current(tmp_path: Path) -> None:
    # An old run and a record of its own (old) procedure version: historical evidence,
    # never current F passes (the run's version is no licence).
    old = "2026-05-01"
    record = {**framework_record(SHA), "procedure_version": old}
    results, info = framework_checks(str(_write(tmp_path, record)), {**_manifest(), "procedure_version": old}, None)
    assert info["trusted"] is False and _all_f_pending(results)
    assert f"procedure version {old}" in _by_id(results)["F1.fifo"].reason
    assert PROCEDURE_VERSION in _by_id(results)["F1.fifo"].reason


def _sealed_record_dir(tmp: Path) -> Path:
    """A framework run directory with the integrity listing and chain of a parval run."""
    d = write_record_dir(tmp / "fw-run", framework_record(SHA))
    seal_run(d)
    return d


def test_tampered_record_directory_is_pending(tmp_path: Path) -> None:
    d = _sealed_record_dir(tmp_path)
    results, info = framework_checks(str(d), _manifest(), None)
    assert info["trusted"] is True, info
    assert _by_id(results)["F1.fifo"].status is Status.PASS
    # A FAIL turned into a PASS after the record was listed.
    record = json.loads((d / "record.json").read_text())
    record["assertions"][0]["reason"] = "edited afterwards"
    (d / "record.json").write_text(json.dumps(record))
    results, info = framework_checks(str(d), _manifest(), None)
    assert _all_f_pending(results)
    reason = _by_id(results)["F1.fifo"].reason
    assert "not accepted" in reason and "modified: record.json" in reason


def test_a_record_without_its_sealed_run_directory_is_not_accepted(tmp_path: Path) -> None:
    """A bare record.json (no listing or chain beside it) was once trusted as it stood."""
    (tmp_path / "record.json").write_text(json.dumps(framework_record(SHA)))
    results, info = framework_checks(str(tmp_path / "record.json"), _manifest(), None)
    assert _all_f_pending(results) and info["trusted"] is False
    assert "not inside a sealed framework run directory" in _by_id(results)["F1.fifo"].reason
    # Deleting the listing and chain of a sealed one does not make it acceptable either.
    d = _sealed_record_dir(tmp_path)
    (d / LISTING).unlink()
    (d / CHAIN).unlink()
    results, _ = framework_checks(str(d), _manifest(), None)
    assert _all_f_pending(results)


def test_a_record_of_another_device_or_driver_is_not_used(tmp_path: Path) -> None:
    manifest = {**_manifest(), "platform": {**_manifest()["platform"], "device": 0, "driver": "550.54"}}
    assert (
        _by_id(
            framework_checks(str(_write(tmp_path, framework_record(SHA, device=0, driver="550.54"))), manifest, None)[0]
        )["F1.fifo"].status
        is Status.PASS
    )
    other_device = _write(tmp_path, framework_record(SHA, device=1, driver="550.54"))
    results, _ = framework_checks(str(other_device), manifest, None)
    assert _all_f_pending(results) and "device index 1 (this run: 0)" in _by_id(results)["F1.fifo"].reason
    other_driver = _write(tmp_path, framework_record(SHA, device=0, driver="535.10"))
    results, _ = framework_checks(str(other_driver), manifest, None)
    assert _all_f_pending(results) and "driver '535.10'" in _by_id(results)["F1.fifo"].reason
    gpus = {"available": True, "devices": [{"name": "NVIDIA H200"}]}
    here = {**manifest, "platform": {**manifest["platform"], "gpu": {"available": True, "devices": [{"name": "L4"}]}}}
    results, _ = framework_checks(
        str(_write(tmp_path, framework_record(SHA, device=0, driver="550.54", gpu=gpus))), here, None
    )
    assert _all_f_pending(results) and "GPU(s) ['NVIDIA H200']" in _by_id(results)["F1.fifo"].reason


def test_a_record_that_does_not_name_the_device_or_driver_of_the_run_is_not_trusted(tmp_path: Path) -> None:
    """Device and driver were compared only where both sides named them: a record without
    them was trusted by a run on any device. Now such a record is PENDING naming what it
    lacks (never a model FAIL)."""
    manifest = {**_manifest(), "platform": {**_manifest()["platform"], "device": 0, "driver": "550.54"}}
    for missing, text in (("device", "names no device index (this run: 0)"), ("driver", "names no driver")):
        ident = {"device": 0, "driver": "550.54", missing: None}
        results, info = framework_checks(str(_write(tmp_path, framework_record(SHA, **ident))), manifest, None)
        assert _all_f_pending(results) and info["trusted"] is False
        assert text in _by_id(results)["F1.fifo"].reason, _by_id(results)["F1.fifo"].reason
        assert not any(r.status is Status.FAIL for r in results)
    here = {**manifest, "platform": {**manifest["platform"], "gpu": {"available": True, "devices": [{"name": "L4"}]}}}
    unnamed = framework_record(SHA, device=0, driver="550.54", gpu={"available": False, "reason": "no NVML"})
    results, _ = framework_checks(str(_write(tmp_path, unnamed)), here, None)
    assert _all_f_pending(results) and "names no GPU models (this run: ['L4'])" in _by_id(results)["F1.fifo"].reason
    # A run that names none of them asks nothing of the record.
    bare = framework_record(SHA, device=None, driver=None, gpu=None)
    assert _by_id(framework_checks(str(_write(tmp_path, bare)), _manifest(), None)[0])["F1.fifo"].status is Status.PASS


def test_a_record_made_in_ci_says_so_in_a_local_run(tmp_path: Path) -> None:
    ci = {"kind": "ci", "service": "github-actions", "details": {}}
    path = _write(tmp_path, framework_record(SHA, provenance=ci))
    manifest = {**_manifest(), "provenance": {"kind": "local", "service": None, "details": {}}}
    results, _ = framework_checks(str(path), manifest, None)
    fifo = _by_id(results)["F1.fifo"]
    assert fifo.status is Status.PASS
    assert any("made CI (github-actions), this run local" in x for x in fifo.limitations), fifo.limitations


def test_record_outside_the_listing_or_with_a_broken_chain_is_pending(tmp_path: Path) -> None:
    d = _sealed_record_dir(tmp_path)
    (d / CHAIN).write_text((d / CHAIN).read_text().replace('"prev":null', '"prev":"x"'))
    results, _ = framework_checks(str(d), _manifest(), None)
    assert _all_f_pending(results) and CHAIN in _by_id(results)["F1.fifo"].reason
    other = tmp_path / "other"
    other.mkdir()
    (other / "events.jsonl").write_text("{}\n")
    write_listing(other)
    (other / "record.json").write_text(json.dumps(framework_record(SHA)))  # written after the listing, never sealed
    results, _ = framework_checks(str(other), _manifest(), None)
    assert _all_f_pending(results) and "added: record.json" in _by_id(results)["F1.fifo"].reason
    (other / LISTING).unlink()
    results, _ = framework_checks(str(other), _manifest(), None)
    assert _all_f_pending(results) and f"missing: {LISTING}" in _by_id(results)["F1.fifo"].reason


def test_a_count_the_record_does_not_cover_cannot_be_admitted(tmp_path: Path) -> None:
    path = _write(tmp_path, framework_record(SHA, counts=[2, 4]))
    results, info = framework_checks(
        str(path),
        _manifest(counts=[1, 2, 4]),
        None,
        plan={"identity": {"candidate": {"source_commit": CANDIDATE_COMMIT}}},
    )
    assert info["coverage"]["missing"] == [1]  # count 1 too: FIFO and pool drain apply there
    scoped = [r for r in results if r.count is not None]
    assert {(r.id, r.count) for r in scoped} == {(f, 1) for f in COUNT_SCOPED}
    assert all(r.status is Status.PENDING and "does not cover count 1" in r.reason for r in scoped)
    # Unscoped entries keep the record's statuses.
    assert _by_id(results)["F1.fifo"].status is Status.PASS
    # Admission: count 1 is not validated, so nothing is admitted (counts start at one).
    fw = results[:-1] + [Result("X4", Status.PASS, "x4")]
    per_count = {n: [Result("M2.exact", Status.PASS, "ok", count=n)] for n in (1, 2, 4)}
    d = adm.decide([1, 2, 4], *filled([1, 2, 4], [], per_count, fw), interrupted=False, missing="-")
    assert d.verdicts[1] is Status.PENDING and d.verdicts[2] is d.verdicts[4] is Status.PASS
    assert d.admitted == [] and d.admission_ready is False
    # A record covering 1 and 2 only admits 1 and 2.
    results, _ = framework_checks(
        str(_write(tmp_path, framework_record(SHA, counts=[1, 2]))), _manifest(counts=[1, 2, 4]), None
    )
    fw = results[:-1] + [Result("X4", Status.PASS, "x4")]
    d = adm.decide(
        [1, 2, 4],
        *filled([1, 2, 4], [], {n: list(rs) for n, rs in per_count.items()}, fw),
        interrupted=False,
        missing="-",
    )
    assert d.admitted == [1, 2] and d.verdicts[4] is Status.PENDING and not d.admission_ready
    # Everything covered: admitted.
    results, _ = framework_checks(
        str(_write(tmp_path, framework_record(SHA, counts=[1, 2, 4]))), _manifest(counts=[1, 2, 4]), None
    )
    fw = results[:-1] + [Result("X4", Status.PASS, "x4")]
    d = adm.decide(
        [1, 2, 4],
        *filled([1, 2, 4], [], {n: list(rs) for n, rs in per_count.items()}, fw),
        interrupted=False,
        missing="-",
    )
    # Every count validated, but admission stops at count 3, which was never tested.
    assert d.verdicts[4] is Status.PASS and d.admitted == [1, 2] and d.admission_ready is False


def test_a_record_without_identity_counts_covers_no_count(tmp_path: Path) -> None:
    path = _write(tmp_path, framework_record(SHA, counts=None))
    results, info = framework_checks(str(path), _manifest(counts=[1, 2]), None)
    assert info["coverage"]["missing"] == [1, 2]
    scoped = [r for r in results if r.count is not None]
    assert len(scoped) == 2 * len(COUNT_SCOPED)
    assert all("no identity.counts" in r.reason for r in scoped)


def test_record_from_another_source_commit_than_the_plan_names_is_pending(tmp_path: Path) -> None:
    path = _write(tmp_path, framework_record(SHA, source_commit="2" * 40))
    plan = {"identity": {"candidate": {"source_commit": CANDIDATE_COMMIT[:10]}}}
    results, _ = framework_checks(str(path), _manifest(), None, plan=plan)
    assert _all_f_pending(results) and "source commit 222222222222" in _by_id(results)["F1.fifo"].reason
    results, _ = framework_checks(
        str(_write(tmp_path, framework_record(SHA, source_commit=CANDIDATE_COMMIT))), _manifest(), None, plan=plan
    )
    assert _by_id(results)["F1.fifo"].status is Status.PASS


def test_x4_needs_both_commits_and_the_plans_candidate(tmp_path: Path) -> None:
    path = _write(tmp_path, framework_record(SHA))
    plan = {"identity": {"candidate": {"source_commit": CANDIDATE_COMMIT}}}

    def x4(protected: dict[str, Any] | None, plan_: dict[str, Any] | None = plan) -> Result:
        return _by_id(framework_checks(str(path), _manifest(), protected, plan=plan_)[0])["X4"]

    good = x4(x4_json())
    assert good.status is Status.PASS and good.evidence["candidate_commit"] == CANDIDATE_COMMIT
    # The whole verify-protected result is the evidence; the reason counts what was checked.
    assert good.evidence == {**x4_json(), "rests_on": {"checked protected paths": 1}}
    assert good.reason == (
        "1 protected path(s) identical to upstream; legacy runtime app/server/runtime.cpp: synthetic"
    )
    assert good.reproduction == (
        f"parval verify-protected --repo /synthetic/audio.cpp --upstream {x4_json()['upstream']}"
    )
    bad = x4(x4_json("FAIL"))
    assert bad.status is Status.FAIL
    assert bad.reason.startswith("1 protected file(s) changed: app/server/runtime.h")
    legacy = x4({"assertion": "X4", "status": "PASS", "upstream": "0" * 40, "changed": []})
    assert legacy.status is Status.PENDING and "schemas/protected.schema.json" in legacy.reason
    no_commit = x4(x4_json(candidate_commit=None))
    assert no_commit.status is Status.PENDING and "candidate source commit" in no_commit.reason
    no_upstream = {k: v for k, v in x4_json().items() if k != "upstream"}
    assert x4(no_upstream).status is Status.PENDING and "upstream" in x4(no_upstream).reason
    other = x4(x4_json(candidate_commit="3" * 40))
    assert other.status is Status.PENDING and "the plan names" in other.reason
    # Without a plan commit the result is used, with the missing tie stated.
    unpinned = x4(x4_json(), None)
    assert unpinned.status is Status.PASS and any("names no candidate" in x for x in unpinned.limitations)
    # An X4 entry carrying the verify-protected JSON as evidence is checked the same way.
    entry = {"id": "X4", "status": "PASS", "reason": "r", "evidence": x4_json(candidate_commit=None)}
    assert x4(entry).status is Status.PENDING


def test_protected_writer_output_is_accepted(tmp_path: Path) -> None:
    """What verify-protected writes (with the candidate commit) is trusted as X4."""
    data = x4_json()
    data["candidate_commit"] = hashlib.sha1(b"c").hexdigest()
    path = _write(tmp_path, framework_record(SHA))
    results, _ = framework_checks(str(path), _manifest(), data)
    assert _by_id(results)["X4"].status is Status.PASS
