"""One closed list (issue 38, finding 3): a verdict is computed over every assertion the
procedure requires, never over the results that happen to be present. Evidence from which
an assertion was removed (as a parval that did not emit it would leave it) admits nothing
in `parval report RUN`, a merge, `--catalogue` and `--claims`, in md, json and junit, and
every path that reads the same runs gives the same verdict. Synthetic sealed runs and a
recorded clean run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from parval.claims.render import render_claims
from parval.report.run_table import render_catalogue
from parval.report.write import render_many, render_report
from parval.rundir.integrity import CHAIN, LISTING
from tests.attack.clean_runs import ARCHIVE, extract
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.catalogue.test_rules_sealed import _COMPLETE, _as_just_recorded
from tests.records_kit import seal
from tests.ux.test_merge_plans import _manifest

M4_GONE = ("M4.targeted_unload", "M4.all_unload")


def _without(ev: dict[str, Any], ids: tuple[str, ...]) -> dict[str, Any]:
    """`ev` as a parval that did not emit `ids` would write it: no entry for them, and a
    verdict that admits what the rest admits."""
    checks = ev["model_checks"]
    checks["model_level"] = [a for a in checks["model_level"] if a["id"] not in ids]
    for block in checks["per_count"].values():
        block["assertions"] = [a for a in block["assertions"] if a["id"] not in ids]
    ev["assertions"] = [a for a in ev["assertions"] if a["id"] not in ids]
    return ev


def _synthetic(tmp_path: Path, names: tuple[str, ...] = ("a", "b")) -> tuple[Path, Path, list[Path]]:
    _, combo = _combo(tmp_path)
    dirs = []
    for i, name in enumerate(names):
        ev = _evidence(combo, f"2026-01-0{i + 1}T00:00:00Z", failing=False) | _COMPLETE
        # the recorded M4 FAILs are what was removed
        dirs.append(_run(tmp_path / "runs", name, _without(ev, M4_GONE), _manifest(), sealed_rules=True))
    return tmp_path / "c.yaml", tmp_path / "runs", dirs


def _admits_nothing(text: str, fmt: str) -> None:
    if fmt == "json":
        data = json.loads(text)
        if "combinations" in data:  # claims
            states = {r["state"] for c in data["combinations"] for r in c["rows"]}
            assert "ADMITTED" not in states, states
        elif "verdicts" in data:  # catalogue
            assert all(v["admitted_counts"] == [] for v in data["verdicts"]), data["verdicts"]
        else:
            assert data["verdict"]["admitted_counts"] == [] and data["admission_ready"] is False, data["verdict"]
    elif fmt == "junit":
        cases = list(ET.fromstring(text).iter("testcase"))
        # the verdict (a merge's or a run's `admission` case, a catalogue's or claim's row) is not green
        open_ = [c for c in cases if c.find("failure") is not None or c.find("skipped") is not None]
        assert open_ and "ADMITTED at counts" not in text, text
    else:
        assert "ADMITTED at counts" not in text, text


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_runs_from_which_an_assertion_was_removed_never_admit(tmp_path: Path, fmt: str) -> None:
    cat, root, dirs = _synthetic(tmp_path)
    alone_text, alone = render_report([dirs[0]], fmt=fmt, catalogue=None, redact=False, rejudge=False)
    merged_text, merged = render_many(dirs, fmt, None, False)
    one_text, one = render_many(dirs[:1], fmt, None, False)
    catalogue_text, catalogued = render_catalogue(root, fmt)
    claims_text, claimed = render_claims(cat, root, fmt)
    # every path: the same verdict, and no count admitted
    assert alone == merged == one == catalogued == claimed == 3, (alone_text, merged_text, claims_text)
    for text in (alone_text, merged_text, one_text, catalogue_text, claims_text):
        _admits_nothing(text, fmt)
    if fmt == "json":
        ev = json.loads(alone_text)
        assert [m["id"] for m in ev["closed_list"]["missing"]] == list(M4_GONE)
        assert "required assertion(s) missing from the evidence" in ev["verdict"]["line"]
        assert ev["closed_list"]["recorded_verdict"]["exit_code"] == 0  # what it claimed
        merged_ev = json.loads(merged_text)
        gone = {a["id"]: a for a in merged_ev["assertions"] if a["id"] in M4_GONE}
        assert {a["status"] for a in gone.values()} == {"PENDING"}, gone
        assert merged_ev["model_checks"]["groups"]["M4"] == "PENDING"
        assert merged_ev["verdict"]["counts"] == {"1": "PENDING", "2": "PENDING"}


def test_complete_synthetic_runs_still_admit(tmp_path: Path) -> None:
    # the control: nothing removed, every path admits
    _, combo = _combo(tmp_path)
    ev = _evidence(combo, "2026-01-01T00:00:00Z", failing=False) | _COMPLETE
    run = _run(tmp_path / "runs", "a", ev, _manifest(), sealed_rules=True)
    assert render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[1] == 0
    assert render_many([run], "json", None, False)[1] == 0
    assert render_catalogue(tmp_path / "runs", "json")[1] == 0
    assert render_claims(tmp_path / "c.yaml", tmp_path / "runs", "json")[1] == 0


def _stripped_copy(run: Path, to: Path, ids: tuple[str, ...]) -> Path:
    """A copy of a recorded, judged run whose evidence.json lacks `ids`, sealed over it as a
    parval that did not emit them would have sealed it."""
    shutil.copytree(run, to)
    path = to / "evidence.json"
    path.write_text(json.dumps(_without(json.loads(path.read_text("utf-8")), ids)), "utf-8")
    for name in (LISTING, CHAIN):
        (to / name).unlink()
    seal(to)
    return to


@pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")
def test_a_recorded_run_without_its_recovery_assertions_admits_nowhere(tmp_path: Path) -> None:
    run = _as_just_recorded(extract(tmp_path / "x")["stateless"])
    assert render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)[1] == 0  # as recorded
    root = tmp_path / "runs"
    a = _stripped_copy(run, root / "a", M4_GONE)
    b = _stripped_copy(run, root / "b", M4_GONE)
    stored, code = render_report([a], fmt="json", catalogue=None, redact=False, rejudge=False)
    assert code == 3 and json.loads(stored)["verdict"]["admitted_counts"] == [], json.loads(stored)["verdict"]
    merged, merged_code = render_many([a, b], "json", None, False)
    ev = json.loads(merged)
    assert merged_code == 3 and ev["verdict"]["admitted_counts"] == [], ev["verdict"]
    assert "ADMITTED at" not in ev["verdict"]["line"]
    targeted = next(x for x in ev["assertions"] if x["id"] == "M4.targeted_unload")
    assert targeted["status"] == "PENDING" and "not collected by any merged run" in targeted["reason"]
    catalogue, catalogued = render_catalogue(root, "json")
    assert catalogued == 3 and all(v["admitted_counts"] == [] for v in json.loads(catalogue)["verdicts"])
    # the recorded events still hold the M4 results: a re-judgement reads them again
    again, code = render_report([a], fmt="json", catalogue=None, redact=False, rejudge=True)
    assert code == 0 and "closed_list" not in json.loads(again)
