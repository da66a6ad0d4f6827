"""The rules a run is judged by are the ones sealed before its events: a bound edited in
plan.json after the run (and the directory resealed over it) never admits. `parval report
RUN`, `--rejudge`, a merge, `--catalogue` and `--claims` all read RULES CHANGED, in md,
json and junit, and keep a FAIL recorded before. Synthetic sealed run directories and a
recorded clean run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from parval.api import finalize
from parval.claims.render import render_claims
from parval.judge import judge_run
from parval.report.run_table import render_catalogue
from parval.report.write import render_many, render_report
from parval.rundir.integrity import DERIVED
from parval.rundir.rules_seal import rules_changes
from parval.rundir.verified import TamperedRunError, reseal_run
from tests.attack.clean_runs import ARCHIVE, extract
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.ux.test_merge_plans import _manifest

# what the markdown report reads beyond the synthetic evidence of test_every_run_counts
_COMPLETE = {"warnings": [], "failures": [], "performance": {"status": "PASS", "rows": []}, "all_plan_rules": True}


def _loosen(run: Path, reseal: bool = True) -> None:
    """Edit a bound in the run's rules after its events, then reseal the directory over it."""
    plan = json.loads((run / "plan.json").read_text("utf-8"))
    plan.setdefault("memory", {})["max_growth_mib"] = 100000
    (run / "plan.json").write_text(json.dumps(plan), "utf-8")
    if reseal:
        reseal_run(run, "test: a bound changed after the run")


def _sealed_run(tmp_path: Path, *, failing: bool = False, sealed_rules: bool = True) -> Path:
    """One sealed run (ADMITTED as recorded unless `failing`) under tmp_path/runs/a, with the
    catalogue of test_every_run_counts at tmp_path/c.yaml."""
    _, combo = _combo(tmp_path)
    ev = _evidence(combo, "2026-01-01T00:00:00Z", failing=failing) | _COMPLETE
    return _run(tmp_path / "runs", "a", ev, _manifest(), sealed_rules=sealed_rules)


def _runs(tmp_path: Path, *, failing: bool = False, sealed_rules: bool = True) -> tuple[Path, Path, Path]:
    """One run (ADMITTED as recorded unless `failing`) whose rules were loosened and resealed."""
    run = _sealed_run(tmp_path, failing=failing, sealed_rules=sealed_rules)
    _loosen(run)
    return tmp_path / "c.yaml", tmp_path / "runs", run


def _says_rules_changed(text: str, fmt: str) -> None:
    assert "RULES CHANGED" in text, text
    if fmt == "md":
        assert "ADMITTED at" not in text.split("\n", 1)[0]


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_a_bound_loosened_after_the_events_never_admits(tmp_path: Path, fmt: str) -> None:
    _, _, run = _runs(tmp_path)
    text, code = render_report([run], fmt=fmt, catalogue=None, redact=False, rejudge=False)
    assert code == 3, text
    _says_rules_changed(text, fmt)
    if fmt == "json":
        ev = json.loads(text)
        assert ev["verdict"]["admitted_counts"] == [] and ev["admission_ready"] is False
        reasons = ev["rules_changed"]["reasons"]
        assert any("not the snapshot the manifest sealed before the run's events" in r for r in reasons), reasons
        assert any("resealed over a changed plan.json" in r and "a bound changed" in r for r in reasons), reasons
        assert ev["rules_changed"]["recorded_verdict"]["exit_code"] == 0  # what it said before
    elif fmt == "junit":
        (case,) = [c for c in ET.fromstring(text).iter("testcase") if c.get("name") == "rules_sealed_before_events"]
        skipped = case.find("skipped")
        assert skipped is not None and "RULES CHANGED" in str(skipped.get("message"))
    else:
        assert "Judged under rules changed after the run's events" in text, text


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_report_and_claims_agree_on_a_run_whose_rules_changed(tmp_path: Path, fmt: str) -> None:
    cat, root, run = _runs(tmp_path)
    _, alone = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)
    merged_text, merged = render_many([run], fmt, None, False)
    claims_text, claimed = render_claims(cat, root, fmt)
    catalogue_text, catalogued = render_catalogue(root, fmt)
    assert alone == merged == claimed == catalogued == 3, (merged_text, claims_text, catalogue_text)
    for text in (merged_text, claims_text, catalogue_text):
        _says_rules_changed(text, fmt)
    if fmt == "json":
        data = json.loads(claims_text)
        rows = {r["count"]: r["state"] for c in data["combinations"] for r in c["rows"]}
        assert "ADMITTED" not in rows.values(), rows


def test_a_failure_recorded_before_the_rules_changed_is_retained(tmp_path: Path) -> None:
    cat, root, run = _runs(tmp_path, failing=True)
    text, code = render_report([run], fmt="md", catalogue=None, redact=False, rejudge=False)
    assert code == 1 and "RULES CHANGED after the run's events with FAIL retained" in text.split("\n", 1)[0], text
    assert render_claims(cat, root, "json")[1] == 1


def test_a_run_recorded_before_the_snapshot_was_sealed_is_caught_by_its_reseal(tmp_path: Path) -> None:
    # No snapshot in the manifest (an older run): the reseal found plan.json modified.
    _, _, run = _runs(tmp_path, sealed_rules=False)
    reasons = rules_changes(run)
    assert reasons and all("snapshot" not in r for r in reasons), reasons
    assert render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[1] == 3


def test_editing_the_manifest_and_the_rules_together_is_still_caught(tmp_path: Path) -> None:
    # The manifest re-sealed to name the edited plan.json: the chain still names the
    # manifest and plan.json each earlier judging saw.
    run = _sealed_run(tmp_path)
    _loosen(run, reseal=False)
    from tests.catalogue.kit import sha256

    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    manifest["plan"]["snapshot_sha256"] = sha256(run / "plan.json")
    (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    reseal_run(run, "test: the manifest now names the edited plan")
    reasons = rules_changes(run)
    assert any("plan.json changed between judgings" in r for r in reasons), reasons
    assert any("manifest.json, which seals the rules, changed between judgings" in r for r in reasons), reasons
    assert render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[1] == 3


def test_an_unchanged_run_and_an_unresealed_edit(tmp_path: Path) -> None:
    # Nothing changed: no reason, the verdict as recorded. An edit without a reseal is
    # refused outright (exit 2), as before.
    run = _sealed_run(tmp_path)
    assert rules_changes(run) == []
    assert render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[1] == 0
    reseal_run(run, "test: restored from a backup, nothing changed")
    assert rules_changes(run) == []  # a reseal over nothing in the rules is no change of rules
    _loosen(run, reseal=False)
    with pytest.raises(TamperedRunError):
        render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)


def _as_just_recorded(run: Path) -> Path:
    """An unpacked recorded run sealed as the campaign that completed it seals it (extract
    points its manifest at the unpacked plan, a change a reseal would carry)."""
    for name in (*DERIVED, *(p.name for p in run.glob("*.png"))):
        (run / name).unlink(missing_ok=True)
    finalize(run, judge_run(run, first_seal=True))
    return run


@pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")
def test_a_recorded_run_rejudged_under_loosened_rules_is_rules_changed(tmp_path: Path) -> None:
    run = _as_just_recorded(extract(tmp_path)["stateless"])
    first, code = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=True)
    assert code == 0, json.loads(first)["verdict"]  # the recorded run, judged as recorded
    _loosen(run)
    text, code = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=True)
    ev: dict[str, Any] = json.loads(text)
    assert code == 3 and ev["verdict"]["line"].startswith("RULES CHANGED"), ev["verdict"]
    assert ev["admission_ready"] is False and ev["verdict"]["admitted_counts"] == []
    # the run's own evidence.json and report.md say so too
    assert json.loads((run / "evidence.json").read_text("utf-8"))["verdict"]["exit_code"] == 3
    assert "RULES CHANGED" in (run / "report.md").read_text("utf-8").split("\n", 1)[0]
