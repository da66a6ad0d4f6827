"""A reseal that could not compare plan.json and manifest.json with what was sealed (the
listing and the chain gone or unreadable) leaves the rules unknown: no count is admitted by
`parval report RUN` (md, json, junit), `--rejudge`, a merge or `--catalogue`, and every one
says why. A re-judging never destroys the judgment it replaces: it stays in the run directory
under judgings/, by its hash, named by the chain, and the report says how the verdicts differ.

The recipe: edit the rules (`model.admit_modes`) in plan.json and the snapshot hash the
manifest seals, delete files.sha256 and chain.jsonl, reseal with a reason, re-judge."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from parval.report.run_table import render_catalogue
from parval.report.write import render_many, render_report
from parval.rundir.integrity import CHAIN, LISTING, read_chain
from parval.rundir.rules_seal import rules_changes
from tests.attack.clean_runs import ARCHIVE, extract
from tests.catalogue.test_rules_sealed import _as_just_recorded
from tests.ux.kit import invoke

JUDGINGS = "judgings"  # where a re-judging keeps the judgment it replaces

pytestmark = pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _edit_rules(run: Path, admit_modes: list[str]) -> None:
    """plan.json edited, and the manifest's sealed snapshot hash made to name the edit."""
    plan = json.loads((run / "plan.json").read_text("utf-8"))
    plan["model"]["admit_modes"] = admit_modes
    (run / "plan.json").write_text(json.dumps(plan), "utf-8")
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    manifest["plan"]["snapshot_sha256"] = _sha(run / "plan.json")
    (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")


def _laundered(run: Path, *, lose: tuple[str, ...] = (LISTING, CHAIN)) -> None:
    _edit_rules(run, ["offline"])
    for name in lose:
        (run / name).unlink()
    sealed = invoke("verify", run, "--reseal", "--reason", "restored from a backup")
    assert sealed.returncode == 0 and f"sealed over: missing: {lose[0]}" in sealed.stdout, sealed


def _not_admitted(text: str, fmt: str) -> None:
    if fmt == "json":
        ev: dict[str, Any] = json.loads(text)
        assert ev["verdict"]["admitted_counts"] == [] and ev["admission_ready"] is False, ev["verdict"]
        assert ev["verdict"]["line"].startswith("RULES UNKNOWN"), ev["verdict"]["line"]
        reasons = ev["rules_changed"]["reasons"]
        assert any("rules unknown" in r and "missing: files.sha256" in r for r in reasons), reasons
        assert any("restored from a backup" in r for r in reasons), reasons
    elif fmt == "junit":
        root = ET.fromstring(text)
        assert sum(int(s.get("failures") or 0) for s in root.iter("testsuite")) > 0, text[:500]
        (case,) = [c for c in root.iter("testcase") if c.get("name") == "admission"]
        failure = case.find("failure")
        assert failure is not None and "RULES UNKNOWN" in str(failure.get("message")), text[:800]
    else:
        first = text.split("\n", 1)[0]
        assert "RULES UNKNOWN" in first and "ADMITTED at" not in first, first
        assert "missing: files.sha256" in text and "restored from a backup" in text


@pytest.fixture
def admitted(tmp_path: Path) -> Path:
    """The recorded stateless run (admit_modes [offline, batch]), ADMITTED as recorded."""
    run = _as_just_recorded(extract(tmp_path / "rec")["stateless"])
    ev = json.loads((run / "evidence.json").read_text("utf-8"))
    assert ev["verdict"]["exit_code"] == 0 and ev["verdict"]["admitted_counts"], ev["verdict"]
    return run


def test_a_reseal_over_a_lost_listing_and_chain_admits_nothing_anywhere(admitted: Path, tmp_path: Path) -> None:
    run = admitted
    original = (run / "evidence.json").read_bytes()
    _laundered(run)
    rejudged = invoke("report", run, "--rejudge")
    assert rejudged.returncode == 3, rejudged.stdout[:600]
    _not_admitted(rejudged.stdout, "md")
    assert any(r.startswith("rules unknown") for r in rules_changes(run)), rules_changes(run)
    for fmt in ("md", "json", "junit"):
        text, code = render_report([run], fmt=fmt, catalogue=None, redact=False, rejudge=False)
        assert code == 3, text[:400]
        _not_admitted(text, fmt)
        merged, code = render_many([run], fmt, None, False)
        assert code == 3
        _not_admitted(merged, fmt)
    catalogue, code = render_catalogue(run.parent, "md")
    assert code == 3 and "RULES" in catalogue and "ADMITTED at" not in catalogue, catalogue[:800]
    # The judgment the re-judging replaced is kept, by its hash, named by the chain.
    kept = f"{JUDGINGS}/{hashlib.sha256(original).hexdigest()}.json"
    assert (run / kept).read_bytes() == original
    links, _ = read_chain(run)
    assert kept in [link.get("kept") for link in links]
    ev = json.loads(render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[0])
    (differ,) = ev["judgings"]
    assert kept in differ and "M6.batch PASS -> NOT_APPLICABLE" in differ and "ADMITTED" in differ, differ
    assert "verdicts differ between judgings" in rejudged.stdout
    junit, _ = render_report([run], fmt="junit", catalogue=None, redact=False, rejudge=False)
    assert 'name="judgings_differ_1"' in junit and "M6.batch PASS -&gt; NOT_APPLICABLE" in junit, junit[:1500]
    assert invoke("verify", run).returncode == 0


def test_the_same_edit_with_the_chain_kept_reads_rules_changed(admitted: Path) -> None:
    # Only the listing lost: the chain names the rules every earlier judging saw.
    _laundered(admitted, lose=(LISTING,))
    text, code = render_report([admitted], fmt="json", catalogue=None, redact=False, rejudge=True)
    ev = json.loads(text)
    assert code == 3 and ev["verdict"]["line"].startswith("RULES CHANGED"), ev["verdict"]


def test_a_reseal_over_an_unreadable_chain_keeps_it_and_leaves_the_rules_unknown(admitted: Path) -> None:
    # Nothing else changed: the listing still matches, but without the chain nothing shows it
    # is the listing sealed when the run was judged.
    run = admitted
    broken = (run / CHAIN).read_bytes().replace(b'"prev":null', b'"prev":"x"', 1)
    (run / CHAIN).write_bytes(broken)
    assert invoke("verify", run).returncode == 1
    assert invoke("verify", run, "--reseal", "--reason", "chain damaged").returncode == 0
    kept = f"{JUDGINGS}/{hashlib.sha256(broken).hexdigest()}.jsonl"
    assert (run / kept).read_bytes() == broken  # the damaged chain, as it was
    links, problems = read_chain(run)
    assert problems == [] and links[0].get("kept_chain") == kept
    text, code = render_report([run], fmt="md", catalogue=None, redact=False, rejudge=True)
    assert code == 3 and "RULES UNKNOWN" in text.split("\n", 1)[0], text[:600]
    assert invoke("verify", run).returncode == 0


def test_a_kept_judging_is_sealed_like_the_rest(admitted: Path) -> None:
    run = admitted
    invoke("report", run, "--rejudge")
    (kept,) = sorted((run / JUDGINGS).iterdir())
    (run / JUDGINGS / "notes.json").write_text("{}")  # no link names it: not part of the run
    ok = invoke("verify", run)
    assert ok.returncode == 0 and f"not part of the run: {JUDGINGS}/notes.json" in ok.stdout, ok
    kept.unlink()
    gone = invoke("verify", run)
    assert gone.returncode == 1 and f"missing: {JUDGINGS}/{kept.name}" in gone.stdout, gone
    refused = invoke("report", run)
    assert refused.returncode == 2 and f"missing: {JUDGINGS}/{kept.name}" in refused.stderr


@pytest.mark.slow
def test_the_issue_recipe_a_failing_batch_run_is_never_laundered(tmp_path: Path) -> None:
    """Stand-in `--fault batch_repeats_first`, admit_modes [offline, batch]: M6.batch FAIL.
    Edit admit_modes to [offline] (and the snapshot hash), delete the listing and the chain,
    reseal, re-judge: never ADMITTED, the FAIL retained and kept, exit 1."""
    import yaml

    from parval import api
    from parval.plan.load import load_plan
    from tests.attack.clean_runs import plan

    work = tmp_path / "runs" / "batch"
    work.mkdir(parents=True)
    campaign = plan("stateless", work)  # admit_modes [offline, batch], native batching
    campaign["servers"]["candidate"]["args"] = ["--fault", "batch_repeats_first"]
    plan_path = work / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(campaign))
    run = work / "run"
    _, ev = api.run_plan(load_plan(plan_path), out=run)
    assert [a["status"] for a in ev["assertions"] if a["id"] == "M6.batch"] == ["FAIL"], ev["verdict"]
    assert ev["verdict"]["exit_code"] == 1
    original = (run / "evidence.json").read_bytes()
    _laundered(run)
    rejudged = invoke("report", run, "--rejudge")
    assert rejudged.returncode == 1, rejudged
    first = rejudged.stdout.split("\n", 1)[0]
    assert "RULES UNKNOWN with FAIL retained" in first and "ADMITTED at" not in first, first
    for fmt in ("json", "junit"):
        text, code = render_report([run], fmt=fmt, catalogue=None, redact=False, rejudge=False)
        assert code == 1
        _not_admitted(text, fmt)
    assert render_catalogue(run.parent, "md")[1] == 1
    kept = run / JUDGINGS / f"{hashlib.sha256(original).hexdigest()}.json"
    assert json.loads(kept.read_text("utf-8"))["verdict"]["exit_code"] == 1  # the recorded FAIL
    assert "M6.batch FAIL" in rejudged.stdout
