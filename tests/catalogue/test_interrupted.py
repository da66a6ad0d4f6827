"""`parval catalogue run` interrupted and run again with a relative --out: the resumed
combination's run directory reaches the campaign absolute, and the command printed to
continue keeps every option that chose what runs where (no campaign here)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from parval import api
from parval.claims import combination_runs as runner
from parval.claims.inputs import Action, RunState
from parval.plan.load import load_plan
from tests.conftest import write_plan
from tests.ux.kit import invoke

from .kit import build, write_catalogue

KEY = "tiny.cpu.offline"


def test_a_resumed_combination_under_a_relative_out_runs_in_an_absolute_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Servers run with their own directory as the working directory: a relative run
    directory handed on would be resolved twice (every resumed start failing)."""
    plan = load_plan(write_plan(tmp_path / "plan"))
    run_dir = api.prepare_run_dir(plan, tmp_path / "runs" / KEY)
    (run_dir / "events.jsonl").write_text(json.dumps({"seq": 0, "kind": "campaign_start"}) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_state", lambda plan, run_dir: RunState(Action.RESUME, "interrupted"))
    given: list[Path] = []

    def run_plan(plan: Any, *, run_dir: Path, **kw: Any) -> tuple[Path, dict[str, Any]]:
        given.append(run_dir)
        return run_dir, {"verdict": {"exit_code": 3, "line": "evidence collected; validation pending"}}

    monkeypatch.setattr(api, "run_plan", run_plan)
    monkeypatch.setattr(api, "finalize", lambda run_dir, evidence: None)
    combo: Any = SimpleNamespace(key=KEY)
    outcome, signalled = runner.run_one(combo, plan, Path("runs"), None, lambda: (print, print))
    assert signalled is None and outcome.action == "resume"
    assert given == [run_dir.resolve()] and given[0].is_absolute()


def test_the_interrupt_hint_keeps_only_out_backend_and_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_plan(tmp_path / "plans")
    write_catalogue(
        tmp_path / "cat" / "catalogue.yaml",
        [{"name": "tiny", "plan": "../plans/plan.yaml", "backends": ["cpu"]}],
        {"cpu": build()},
    )
    monkeypatch.chdir(tmp_path)
    seen: dict[str, Any] = {}

    def run_catalogue(combos: Any, out: Path, **kw: Any) -> tuple[list[runner.Outcome], int]:
        seen.update(out=out, **kw)
        return [], 130  # stopped by SIGINT before any combination had evidence

    monkeypatch.setattr(runner, "run_catalogue", run_catalogue)
    args = ["catalogue", "run", "cat/catalogue.yaml", "--out", "my runs", "--only", KEY, "--backend", "cpu"]
    got = invoke(*args, "--shard", "1/2")
    assert got.returncode == 130, got.stderr
    assert seen["out"] == Path("my runs") and seen["shard"] == (1, 2)
    hint = got.stderr.split("continue with: ", 1)[1].strip()
    assert shlex.split(hint) == ["parval", *args[:4], "my runs", "--backend", "cpu", "--only", KEY, "--shard", "1/2"]
