"""Which reference an output is compared with is derived from the recorded history (the
phase it ran in: the first wave after a fresh start or a reload is cold), never from the
runner's `ref` label: a recorded run whose post-reload requests are re-pointed at the warm
reference no longer PASSes "vs cold references" (issue 33, item 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parval.api import finalize
from parval.judge import judge_run
from parval.report.write import render_report
from parval.rundir.integrity import DERIVED
from parval.rundir.verified import reseal_run
from tests.attack.clean_runs import ARCHIVE, extract

pytestmark = pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")


def _as_just_recorded(run: Path) -> Path:
    """An unpacked recorded run sealed as the campaign that completed it seals it."""
    for name in (*DERIVED, *(p.name for p in run.glob("*.png"))):
        (run / name).unlink(missing_ok=True)
    finalize(run, judge_run(run, first_seal=True))
    return run


def _rejudged(run: Path) -> dict[str, Any]:
    text, _ = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=True)
    out: dict[str, Any] = json.loads(text)
    return out


def _verdicts(report: dict[str, Any], id_: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("id") == id_ and "status" in node:
                found.append(node)
                return
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(report["assertions"])
    return found


def _repoint_reloads_at_warm(run: Path) -> int:
    """Re-point every post-reload request's recorded reference label at the warm one."""
    path = run / "events.jsonl"
    lines = path.read_text("utf-8").splitlines()
    changed = 0
    out = []
    for line in lines:
        e = json.loads(line)
        if e.get("kind") == "request" and e.get("phase") == "reload_wave" and str(e.get("ref")).endswith("|cold"):
            e["ref"] = str(e["ref"]).replace("|cold", "|warm")
            changed += 1
            line = json.dumps(e, sort_keys=True, separators=(",", ":"))
        out.append(line)
    path.write_text("\n".join(out) + "\n", "utf-8")
    return changed


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _as_just_recorded(extract(tmp_path_factory.mktemp("relabel"))["stateless"])


def test_post_reload_requests_relabelled_warm_no_longer_pass_vs_cold_references(
    stateless: Path, tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(stateless, run)
    clean = _rejudged(run)
    # the correct case: the recorded run PASSes both, comparing with the cold references
    assert {v["status"] for v in _verdicts(clean, "M2.unload_reload")} == {"PASS"}
    assert {v["status"] for v in _verdicts(clean, "M1.cold_warm_refs")} == {"PASS"}

    assert _repoint_reloads_at_warm(run) > 0
    reseal_run(run, "attack test: post-reload requests re-pointed at the warm reference")
    attacked = _rejudged(run)
    assert not attacked["verdict"]["line"].startswith("RULES CHANGED"), attacked["verdict"]
    reloads = _verdicts(attacked, "M2.unload_reload")
    assert reloads and all(v["status"] != "PASS" for v in reloads), [(v["status"], v["reason"]) for v in reloads]
    assert any("disagrees with the reference their history calls for" in v["reason"] for v in reloads)
    refs = _verdicts(attacked, "M1.cold_warm_refs")
    assert refs and all(v["status"] != "PASS" for v in refs), [(v["status"], v["reason"]) for v in refs]
    assert "labelled base|warm, ran as base|cold" in refs[0]["reason"]
    assert attacked["admission_ready"] is False
