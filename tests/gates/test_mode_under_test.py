"""The mode the model runs in is the mode its evidence admits, or nothing is (issue 38,
finding 2): `parval validate` and `parval run` refuse a plan whose model.admit_modes leaves
model.mode out (exit 2, naming the field), and the judge never makes the mode under test
NOT_APPLICABLE on the plan's word (a run recorded before the rule: PENDING, nothing
admitted). Another mode the plan leaves out stays NOT_APPLICABLE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parval.errors import PlanError
from parval.gates.m6_modes import judge_m6
from parval.plan.load import load_plan
from parval.report.run_table import render_catalogue
from parval.report.write import render_many, render_report
from parval.status import Status
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.catalogue.test_rules_sealed import _COMPLETE
from tests.gates.m_events import Events, plan
from tests.ux.kit import PLAN, invoke, write_plan
from tests.ux.test_merge_plans import _manifest

ROOT = Path(__file__).resolve().parents[2]


def _judged(tmp_path: Path, mode: str, admit: list[str]) -> dict[str, Any]:
    p: dict[str, Any] = plan()
    p["model"].update(mode=mode, admit_modes=admit)
    return {r.id: r for r in judge_m6(Events(tmp_path).context(p))}


def test_an_empty_admit_modes_leaves_the_offline_mode_under_test_pending(tmp_path: Path) -> None:
    res = _judged(tmp_path, "offline", [])
    offline = res["M6.offline"]
    assert offline.status is Status.PENDING, offline
    assert "leaves out offline, the mode the model runs in" in offline.reason
    assert "add offline to model.admit_modes" in offline.reason
    # the modes the model does not run in: the plan may leave them out
    assert res["M6.streaming"].status is Status.NOT_APPLICABLE
    assert res["M6.batch"].status is Status.NOT_APPLICABLE


def test_a_streaming_model_whose_plan_leaves_streaming_out_is_pending(tmp_path: Path) -> None:
    res = _judged(tmp_path, "streaming", ["offline"])
    assert res["M6.streaming"].status is Status.PENDING, res["M6.streaming"]
    assert "leaves out streaming, the mode the model runs in" in res["M6.streaming"].reason


def test_offline_left_out_of_a_streaming_model_is_not_applicable(tmp_path: Path) -> None:
    res = _judged(tmp_path, "streaming", ["streaming"])
    assert res["M6.offline"].status is Status.NOT_APPLICABLE
    assert res["M6.offline"].reason == "the plan does not admit offline mode"


@pytest.mark.parametrize("admit", [[], ["batch"], ["streaming"]])
def test_validate_and_run_refuse_a_plan_that_leaves_the_mode_out(tmp_path: Path, admit: list[str]) -> None:
    path = write_plan(tmp_path, model={**PLAN["model"], "mode": "offline", "admit_modes": admit})
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert caught.value.exit_code == 2
    for cmd in ("validate", "run"):
        p = invoke(cmd, path)
        assert p.returncode == 2, (cmd, p.stderr)
        assert "model.admit_modes" in p.stderr and "leaves out model.mode (offline)" in p.stderr, p.stderr
        assert "add offline to model.admit_modes" in p.stderr, p.stderr


@pytest.mark.parametrize("name", ["plans/demo.yaml", "plans/framework-demo.yaml", "plans/examples/silero-vad.yaml"])
def test_the_shipped_plans_admit_their_mode(name: str) -> None:
    raw = load_plan(ROOT / name, check_files=False).raw
    assert raw["model"]["mode"] in raw["model"]["admit_modes"]


def test_evidence_that_excused_the_mode_under_test_admits_nowhere(tmp_path: Path) -> None:
    """Evidence judged before the rule, M6.offline NOT_APPLICABLE "the plan does not admit
    offline mode" for an offline model: read alone, merged, or in the catalogue, it admits
    nothing."""
    _, combo = _combo(tmp_path)
    ev = _evidence(combo, "2026-01-01T00:00:00Z", failing=False) | _COMPLETE
    assert ev["identity"]["mode"] == "offline"
    offline = next(a for a in ev["model_checks"]["model_level"] if a["id"] == "M6.offline")
    offline.update(status="NOT_APPLICABLE", applicable=False, reason="the plan does not admit offline mode")
    run = _run(tmp_path / "runs", "a", ev, _manifest(), sealed_rules=True)
    text, code = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=False)
    assert code == 3 and json.loads(text)["verdict"]["admitted_counts"] == [], text
    text, code = render_many([run], "json", None, False)
    merged = json.loads(text)
    assert code == 3 and merged["verdict"]["admitted_counts"] == [], merged["verdict"]
    m6 = next(a for a in merged["assertions"] if a["id"] == "M6.offline")
    assert m6["status"] == "PENDING" and "the mode the model runs in" in m6["reason"], m6
    assert render_catalogue(tmp_path / "runs", "json")[1] == 3
