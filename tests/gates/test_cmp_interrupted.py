"""Evidence without a negative control (a campaign stopped before it, or a run recorded when
the control was the last unit) keeps the output mismatches it recorded: M2.exact and Q5
FAIL with their own reasons, never BLOCKED."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.judge import judge_run
from tests.conftest import SMALL_PLAN
from tests.gates.cmp_events import SAMPLES, Events, tts_reply


def interrupted_run(tmp_path: Path) -> Path:
    """ref-baseline-a/-b agree; count1-s1's cold reply differs by one sample; the campaign
    stopped there (no negative_control, no campaign_end)."""
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    other = SAMPLES.copy()
    other[100] += 5
    a = ev.start("count1-s1", count=1, config={"models": [{"id": "m", "path": "model.bin"}]})
    ev.request("count1-s1", a, "cold_wave", tts_reply(other))
    ev.end("count1-s1", a)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    (tmp_path / "plan.json").write_text(json.dumps(SMALL_PLAN))
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "plan": {"path": str(tmp_path / "plan.yaml"), "sha256": "0" * 64},
                "executables": {"baseline": {"sha256": "a" * 64}, "candidate": {"sha256": "b" * 64}},
                "model": {"sha256": "c" * 64},
                "procedure_version": PROCEDURE_VERSION,  # current evidence, not historical
            }
        )
    )
    return tmp_path


def count_verdict(ev: dict[str, Any], aid: str, count: int) -> dict[str, Any]:
    return next(a for a in ev["model_checks"]["per_count"][str(count)]["assertions"] if a["id"] == aid)


def test_a_mismatch_recorded_before_the_negative_control_stays_failed(tmp_path: Path) -> None:
    ev = judge_run(interrupted_run(tmp_path), write=False)
    assert ev["model_checks"]["negative_control"] is None  # the control never ran
    exact = count_verdict(ev, "M2.exact", 1)
    assert exact["status"] == "FAIL", exact["reason"]
    assert "negative control" not in exact["reason"]  # its own reason: the mismatch
    assert "status_before_negative_control" not in exact.get("evidence", {})
    assert any("negative control" in line for line in exact["limitations"])
    q5 = count_verdict(ev, "Q5", 1)
    assert q5["status"] == "FAIL" and "mismatch" in q5["reason"], q5["reason"]
    assert ev["admission_ready"] is False
    # NOT ADMITTED naming the mismatch, not "validation pending (run interrupted)".
    line = ev["verdict"]["line"]
    assert ev["verdict"]["exit_code"] == 1 and "M2.exact@1" in line and "Q5@1" in line, line
