"""The bundled plans' volatile exclusions are measured to vary against the stand-in (Q2);
excluding all of `timing` is not (its audio_duration_ms is the same on every repeat)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from parval import api
from parval.plan.load import load_plan

DEMO = Path(__file__).resolve().parents[2] / "plans" / "demo.yaml"


def q2(make_plan: Callable[..., Path], tmp_path: Path, volatile: list[dict[str, str]]) -> dict[str, Any]:
    # Only the reference starts matter for Q2: one count keeps the campaign short.
    path = make_plan(counts=[1], compare={"volatile_fields": volatile})
    _, evidence = api.run_plan(load_plan(path), out=tmp_path / "run")
    return next(a for a in evidence["assertions"] if a["id"] == "Q2")


@pytest.mark.slow
def test_demo_and_test_plans_pass_q2_against_the_standin(make_plan: Callable[..., Path], tmp_path: Path) -> None:
    demo = yaml.safe_load(DEMO.read_text())["compare"]["volatile_fields"]
    from tests.conftest import SMALL_PLAN

    assert [v["path"] for v in demo] == [v["path"] for v in SMALL_PLAN["compare"]["volatile_fields"]]
    r = q2(make_plan, tmp_path / "named", demo)
    assert r["status"] == "PASS", r["reason"]


@pytest.mark.slow
def test_excluding_all_of_timing_fails_q2_against_the_standin(make_plan: Callable[..., Path], tmp_path: Path) -> None:
    r = q2(make_plan, tmp_path / "whole", [{"path": "timing", "justification": "said to vary"}])
    assert r["status"] == "FAIL" and "timing.audio_duration_ms" in r["reason"]
