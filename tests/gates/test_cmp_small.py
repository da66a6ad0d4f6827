"""Q1 needs compared runs; re-judging keeps the procedure version the run was made under."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.gates.judge_context import JudgeContext
from parval.gates.quality import q1_settings
from parval.judge import judge_run, procedure_versions
from parval.plan.schemas import schema_errors
from parval.status import Status
from tests.conftest import SMALL_PLAN
from tests.gates.cmp_events import Events, plan, tts_reply


def q1(ev: Events, model_id: str = "m") -> Any:
    declared = plan()
    declared["model"]["id"] = model_id
    return q1_settings(JudgeContext(ev.records(), declared, {}, ev.run_dir, "plan.yaml"), [])


def test_q1_with_no_compared_run_is_pending(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    r = q1(ev, model_id="not-registered-anywhere")
    assert r.status is Status.PENDING and "no compared run" in r.reason
    # both baseline starts registered "m" the same way, but the other planned starts are missing
    r = q1(ev)
    assert r.status is Status.PENDING and "ref-candidate-legacy" in r.reason, r.reason


def test_q1_fails_when_settings_differ(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start("count2-s1", config={"models": [{"id": "m", "path": "other.bin"}]})
    ev.end("count2-s1", a)
    r = q1(ev)
    assert r.status is Status.FAIL and "path" in r.reason


def test_procedure_versions() -> None:
    assert procedure_versions({"procedure_version": PROCEDURE_VERSION}) == (PROCEDURE_VERSION, [])
    made, warn = procedure_versions({"procedure_version": "2020-01-01"})
    assert made == "2020-01-01" and "2020-01-01" in warn[0] and PROCEDURE_VERSION in warn[0]
    made, warn = procedure_versions({})
    assert made == "unknown" and warn


def run_dir(tmp_path: Path, version: str) -> Path:
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    (tmp_path / "plan.json").write_text(json.dumps(SMALL_PLAN))
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "procedure_version": version,
                "plan": {"path": str(tmp_path / "plan.yaml"), "sha256": "0" * 64},
                "executables": {"baseline": {"sha256": "a" * 64}, "candidate": {"sha256": "b" * 64}},
                "model": {"sha256": "c" * 64},
            }
        )
    )
    return tmp_path


def test_rejudging_keeps_the_runs_procedure_version(tmp_path: Path) -> None:
    ev = judge_run(run_dir(tmp_path / "old", "2020-01-01"), write=False)
    assert ev["procedure_version"] == "2020-01-01"
    assert ev["judged_with_procedure_version"] == PROCEDURE_VERSION and ev["procedure_version_differs"] is True
    assert ev["warnings"] and "2020-01-01" in ev["warnings"][0]
    manifest = next(a for a in ev["assertions"] if a["id"] == "M1.manifest")
    assert any("2020-01-01" in line for line in manifest["limitations"])
    same = judge_run(run_dir(tmp_path / "new", PROCEDURE_VERSION), write=False)
    assert same["procedure_version"] == PROCEDURE_VERSION and not same["procedure_version_differs"]
    assert same["warnings"] == []
    assert schema_errors(ev, "evidence") == [] and schema_errors(same, "evidence") == []


def test_q1_takes_a_crashed_starts_settings_and_names_a_start_never_recorded(tmp_path: Path) -> None:
    """A start that crashed recorded what it loaded: its crash fails M2.starts at its count,
    and does not leave Q1 (and so every lower count) unresolved. A planned start with no
    record at all is what Q1 cannot compare."""
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    config = {"models": [{"id": "m", "path": "model.bin"}]}
    for run in ("ref-candidate-legacy", "ref-candidate-cap1"):
        ev.end(run, ev.start(run, role="reference", count=1, config=config))
    for n in (1, 2):
        for i in (1, 2, 3):
            a = ev.start(f"count{n}-s{i}", count=n, config=config)
            ev.crash(f"count{n}-s{i}", a) if n == 2 else ev.end(f"count{n}-s{i}", a)
    r = q1(ev)
    assert r.status is Status.PASS, r.reason
    ev.events = [e for e in ev.events if e.get("run") != "count2-s3"]
    r = q1(ev)
    assert r.status is Status.PENDING and "recorded starts per count {2: 2}, 3 needed" in r.reason, r.reason
