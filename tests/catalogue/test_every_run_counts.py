"""Every run of one tested identity counts: an older run's intermittent mismatch is not
erased by a newer passing run, and `parval report A B` and `parval report --catalogue DIR
--claims CAT` give the same verdict for the same runs in md, json and junit. Synthetic
sealed run directories, no campaign."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from parval.claims.combination import Combination, load_catalogue
from parval.claims.render import render_claims
from parval.report.merge import MergeRefused
from parval.report.run_table import render_catalogue
from parval.report.write import render_many
from tests.closed_list_kit import complete, passing
from tests.conftest import write_plan
from tests.records_kit import seal
from tests.ux.kit import invoke
from tests.ux.test_merge_plans import PLAN, _manifest

from .kit import STANDIN, build, sha256, write_catalogue


def _combo(tmp_path: Path) -> tuple[Path, Combination]:
    plan = write_plan(tmp_path / "plan")
    claims = [{"name": "m", "plan": str(plan), "backends": ["cpu"], "counts": [1, 2]}]
    cat = write_catalogue(tmp_path / "c.yaml", claims, {"cpu": build()})
    return cat, load_catalogue(cat).combinations[0]


def _evidence(combo: Combination, date: str, failing: bool) -> dict[str, Any]:
    per_count = {str(n): {"assertions": [passing("M2.exact", n)]} for n in (1, 2)}
    if failing:  # 3 mismatches at count 2: an intermittent failure
        per_count["2"]["assertions"][0] |= {"status": "FAIL", "reason": "3 mismatches at count 2"}
    return complete(
        {
            "schema_version": 1,
            "procedure_version": _manifest()["procedure_version"],
            "generated_at": date,
            "run": {"plan": "p.yaml", "plan_sha256": "p" * 64, "interrupted": False, "shard": None},
            "identity": {
                "model": combo.model_id,
                "family": "f",
                "task": "tts",
                "mode": combo.mode,
                "backend": combo.backend,
                "candidate_sha256": sha256(STANDIN),
                "baseline_sha256": "b" * 64,
                "model_sha256": "d" * 64,
            },
            "verdict": {
                "line": "x",
                "exit_code": 1 if failing else 0,
                "admitted_counts": [1] if failing else [1, 2],
                "counts": {"1": "PASS", "2": "FAIL" if failing else "PASS"},
            },
            "admission_ready": not failing,
            "assertions": [],
            "model_checks": {"per_count": per_count, "model_level": [passing("M1.manifest")]},
            "framework_checks": {"status": "PASS", "results": [passing("F1.fifo"), passing("X4")]},
            "performance": {},
        }
    )


def _run(
    root: Path,
    name: str,
    ev: dict[str, Any],
    manifest: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    *,
    sealed_rules: bool = False,
    plan_changes: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """A sealed run directory; `sealed_rules`: its manifest seals plan.json, as parval
    writes a run now (runs recorded before name no snapshot)."""
    d = root / name
    d.mkdir(parents=True)
    m = manifest or _manifest()
    m["model"]["id"] = ev["identity"]["model"]
    m["executables"]["candidate"]["sha256"] = ev["identity"]["candidate_sha256"]
    plan = copy.deepcopy(PLAN)
    plan["model"]["id"] = ev["identity"]["model"]
    if env is not None:
        plan["servers"]["candidate"]["env"] = env
    if plan_changes is not None:
        plan_changes(plan)
    (d / "plan.json").write_text(json.dumps(plan))
    if sealed_rules:
        m["plan"] = {"path": "p.yaml", "sha256": "p" * 64, "name": "p", "snapshot_sha256": sha256(d / "plan.json")}
    (d / "manifest.json").write_text(json.dumps(m))
    (d / "evidence.json").write_text(json.dumps(ev))
    seal(d)
    return d


def _two_runs(tmp_path: Path, old_fails: bool, new_fails: bool = False) -> tuple[Path, Path, list[Path]]:
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    old = _run(root, "a", _evidence(combo, "2026-01-01T00:00:00Z", failing=old_fails))
    new = _run(root, "b", _evidence(combo, "2026-01-02T00:00:00Z", failing=new_fails))
    return cat, root, [old, new]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    return _two_runs(tmp_path, old_fails=True)


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_a_rerun_does_not_erase_an_intermittent_mismatch(runs: tuple[Path, Path, list[Path]], fmt: str) -> None:
    cat, root, dirs = runs
    _, merged_code = render_many(dirs, "json", None, False)
    assert merged_code == 1  # `parval report a b`: NOT ADMITTED
    text, code = render_claims(cat, root, fmt)
    assert code == merged_code, text
    if fmt == "json":
        data = json.loads(text)
        rows = {r["count"]: r["state"] for c in data["combinations"] for r in c["rows"]}
        assert rows == {1: "ADMITTED", 2: "NOT ADMITTED"}
        assert [r["dir"] for r in data["combinations"][0]["evidence"]["runs"]] == ["a", "b"]
        assert data["combinations"][0]["evidence"]["not_used"] == []
    elif fmt == "junit":
        suite = ET.fromstring(text).find("testsuite")
        assert suite is not None and suite.get("failures") == "1"
    else:
        assert "NOT ADMITTED" in text and "superseded" not in text


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_the_catalogue_table_merges_the_two_runs(runs: tuple[Path, Path, list[Path]], fmt: str) -> None:
    _, root, dirs = runs
    text, code = render_catalogue(root, fmt)
    assert code == 1, text
    if fmt == "json":
        (verdict,) = json.loads(text)["verdicts"]
        assert verdict["runs"] == ["a", "b"] and verdict["exit_code"] == 1 and verdict["admitted_counts"] == [1]
    elif fmt == "junit":
        (case,) = ET.fromstring(text).iter("testcase")
        assert case.get("name") == "a + b" and case.find("failure") is not None
    else:
        assert "| `a`, `b` | NOT ADMITTED | 1 | M2.exact FAIL" in text


@pytest.mark.parametrize(("old_fails", "new_fails"), [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_report_runs_and_the_catalogue_agree(tmp_path: Path, old_fails: bool, new_fails: bool, fmt: str) -> None:
    """`parval report a b`, `parval report --catalogue DIR --claims CAT` and `parval report
    --catalogue DIR` give the same exit code for the same runs, in every format."""
    cat, root, dirs = _two_runs(tmp_path, old_fails, new_fails)
    _, merged = render_many(dirs, fmt, None, False)
    assert merged == (1 if old_fails or new_fails else 0)
    assert render_many([], fmt, root, False)[1] == merged
    assert render_claims(cat, root, fmt)[1] == merged


def test_an_older_ci_failure_is_not_displaced_by_a_newer_local_run(tmp_path: Path) -> None:
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    ci = _manifest({"kind": "ci", "service": "github", "details": {}})
    _run(root, "ci", _evidence(combo, "2026-01-01T00:00:00Z", failing=True), ci)
    _run(root, "local", _evidence(combo, "2026-01-02T00:00:00Z", failing=False), _manifest({"kind": "local"}))
    text, code = render_claims(cat, root, "json")
    (c,) = json.loads(text)["combinations"]
    assert code == 1 and {r["count"]: r["state"] for r in c["rows"]} == {1: "ADMITTED", 2: "NOT ADMITTED"}
    assert "count 2 FAILED in ci, not merged" in c["rows"][1]["reason"] and "provenance" in c["rows"][1]["reason"]
    table, table_code = render_catalogue(root, "json")
    (v,) = json.loads(table)["verdicts"]
    assert table_code == 1 and v["runs"] == ["local"] and v["failed_apart"] == ["count 2 FAILED in ci"]


def test_a_run_of_another_build_stays_stale(tmp_path: Path) -> None:
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    other = _evidence(combo, "2026-01-01T00:00:00Z", failing=True)
    other["identity"]["candidate_sha256"] = "e" * 64
    _run(root, "old-build", other)
    _run(root, "b", _evidence(combo, "2026-01-02T00:00:00Z", failing=False))
    text, code = render_claims(cat, root, "json")
    (c,) = json.loads(text)["combinations"]
    assert code == 0 and [s["dir"] for s in c["evidence"]["stale"]] == ["old-build"]
    table, table_code = render_catalogue(root, "json")
    (v,) = json.loads(table)["verdicts"]
    assert table_code == 0 and v["runs"] == ["b"] and [s["dir"] for s in v["stale"]] == ["old-build"]


def test_runs_whose_server_env_differs_are_not_merged(tmp_path: Path) -> None:
    """`servers.*.env` changes what a server does: another env is another tested identity."""
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    old = _run(root, "a", _evidence(combo, "2026-01-01T00:00:00Z", failing=False), env={"GGML_SCHED_MAX": "1"})
    new = _run(root, "b", _evidence(combo, "2026-01-02T00:00:00Z", failing=False))
    with pytest.raises(MergeRefused, match="their plans disagree on servers.candidate.env"):
        render_many([old, new], "json", None, False)
    (c,) = json.loads(render_claims(cat, root, "json")[0])["combinations"]
    assert [r["dir"] for r in c["evidence"]["runs"]] == ["b"]
    (left,) = c["evidence"]["not_used"]
    assert left["dir"] == "a" and "servers.candidate.env" in left["why"]


@pytest.mark.parametrize("claims", [True, False])
def test_a_run_leaves_the_verdict_only_by_a_recorded_set_aside(
    runs: tuple[Path, Path, list[Path]], claims: bool
) -> None:
    """`--set-aside RUN --reason TEXT`: the older failing run leaves the verdict, and md,
    json and junit all name it and the reason."""
    cat, root, dirs = runs
    base = ["report", "--catalogue", root, *(["--claims", cat] if claims else [])]
    decision = ["--set-aside", dirs[0], "--reason", "built with the fault switch on"]
    assert invoke(*base).returncode == 1  # without a decision the failure counts
    md = invoke(*base, *decision)
    assert md.returncode == 0, md.stdout + md.stderr
    assert "`a`" in md.stdout and "built with the fault switch on" in md.stdout and "set aside" in md.stdout.lower()
    data = json.loads(invoke(*base, *decision, "--format", "json").stdout)
    (left,) = data["set_aside"]
    assert left["dir"] == "a" and left["why"] == "built with the fault switch on"
    if claims:
        (c,) = data["combinations"]
        assert [r["dir"] for r in c["evidence"]["runs"]] == ["b"]
        assert [r["dir"] for r in c["evidence"]["set_aside"]] == ["a"]
    else:
        assert [v["runs"] for v in data["verdicts"]] == [["b"]]
    junit = invoke(*base, *decision, "--format", "junit")
    assert junit.returncode == 0
    skipped = [c for c in ET.fromstring(junit.stdout).iter("testcase") if c.get("name") == "a"]
    assert len(skipped) == 1
    note = skipped[0].find("skipped")
    assert note is not None and note.get("message") == "set aside: built with the fault switch on"


def test_a_set_aside_needs_a_reason_and_a_run(runs: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    cat, root, dirs = runs
    base = ["report", "--catalogue", root, "--claims", cat]
    p = invoke(*base, "--set-aside", dirs[0])
    assert p.returncode == 2 and "needs its own, non-empty --reason TEXT" in p.stderr
    p = invoke(*base, "--set-aside", dirs[0], "--reason", " ")
    assert p.returncode == 2 and "non-empty --reason" in p.stderr
    p = invoke(*base, "--set-aside", tmp_path / "nowhere", "--reason", "x")
    assert p.returncode == 2 and "no run directory under" in p.stderr
    p = invoke("report", *dirs, "--set-aside", dirs[0], "--reason", "x")
    assert p.returncode == 2 and "--set-aside RUN leaves a run out of the verdicts of --catalogue DIR" in p.stderr


def test_the_bound_is_summed_over_every_run_of_the_tested_identity(tmp_path: Path) -> None:
    """Each count's overlapped outputs and mismatches add up over the runs (every run
    counts), and the bound is taken again over the sum: catalogue and claims alike."""
    from parval.rundir.mismatch_bound import bound

    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    for name, date, overlapped in (("a", "2026-01-01T00:00:00Z", 400), ("b", "2026-01-02T00:00:00Z", 600)):
        ev = _evidence(combo, date, failing=False)
        ev["model_checks"]["per_count"]["2"]["assertions"][0]["evidence"] = {"bound": bound(overlapped, 0)}
        _run(root, name, ev)
    (v,) = json.loads(render_catalogue(root, "json")[0])["verdicts"]
    assert v["bounds"] == {"2": bound(1000, 0)}
    (c,) = json.loads(render_claims(cat, root, "json")[0])["combinations"]
    assert {r["count"]: r["bound"] for r in c["rows"]} == {1: None, 2: bound(1000, 0)}
    md = render_claims(cat, root, "md")[0]
    assert "| 1,000, 0 differed, < 0.3 % |" in md
    assert "count 2: 1,000, 0 differed, < 0.3 %" in render_catalogue(root, "md")[0]
