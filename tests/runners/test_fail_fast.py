"""--fail-fast: once a count has a FAIL the counts above it are not run, are judged PENDING
"not run" with the reason, and merging treats them as not run. Without the flag every
count runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from parval import api
from parval.gates import admission_verdict as adm
from parval.plan.load import load_plan
from parval.report.merge import LoadedRun
from parval.runners.campaign import Campaign, unit_count
from parval.status import Result, Status
from tests.campaign.helpers import plan_dict
from tests.closed_list_kit import filled


def test_unit_count() -> None:
    assert unit_count("count2-s1") == 2 and unit_count("history-4") == 4
    assert unit_count("independent-8") == 8
    assert unit_count("recovery") is None and unit_count("ref-baseline-a") is None


class _Log:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(dict(event))
        return self.events[-1]


def campaign(fail_fast: bool, failures: dict[int, list[str]]) -> tuple[Campaign, _Log, list[int]]:
    c = object.__new__(Campaign)
    log = _Log()
    judged: list[int] = []

    def count_failures(n: int) -> list[str]:
        judged.append(n)
        return failures.get(n, [])

    c.fail_fast, c.not_run, c._cleared, c.log = fail_fast, {}, set(), log  # type: ignore[assignment]
    c.shard_counts = lambda: [1, 2, 4]  # type: ignore[method-assign]
    c.count_failures = count_failures  # type: ignore[method-assign]
    return c, log, judged


def test_counts_above_a_failed_count_are_not_run() -> None:
    c, log, judged = campaign(True, {2: ["M2.observed_active"]})
    assert c.fail_fast_skip("count1-s1") is None
    assert c.fail_fast_skip("count2-s3") is None  # count 1 passed: count 2 runs
    why = c.fail_fast_skip("count4-s1")
    assert why is not None and "count 2 has a FAIL (M2.observed_active)" in why
    assert c.fail_fast_skip("history-4") == why and c.fail_fast_skip("recovery") is None
    assert [e["count"] for e in log.events if e["kind"] == "count_not_run"] == [4]
    assert judged.count(1) == 1  # a count found clean is judged once


def test_without_the_flag_every_count_runs() -> None:
    c, log, judged = campaign(False, {1: ["M2.exact"], 2: ["M2.exact"]})
    assert all(c.fail_fast_skip(u) is None for u in ("count1-s1", "count2-s1", "count4-s1"))
    assert not log.events and not judged


def test_not_run_counts_are_pending_with_the_reason_and_not_admitted() -> None:
    per_count = {n: [Result("M2.exact", Status.FAIL if n == 2 else Status.PASS, "x", count=n)] for n in (1, 2, 4)}
    events = [{"kind": "count_not_run", "count": 4, "reason": "not run (--fail-fast): count 2 has a FAIL"}]
    d = adm.decide(
        [1, 2, 4],
        *filled([1, 2, 4], [], per_count, []),
        interrupted=False,
        missing="m",
        not_run=adm.not_run_counts(events),
    )
    assert d.verdicts[4] is Status.PENDING and d.verdicts[2] is Status.FAIL
    four = per_count[4][0]
    assert four.status is Status.PENDING and four.reason.startswith("not run (--fail-fast)")
    assert four.count == 4 and d.admitted == [1]


def test_merge_treats_not_run_counts_as_not_run(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    events = [
        {"seq": 0, "kind": "campaign_start", "counts": [1, 2, 4]},
        {"seq": 1, "kind": "count_not_run", "count": 4, "reason": "not run (--fail-fast): x"},
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    ev = {"run": {"shard": None}, "model_checks": {"per_count": {"1": {}, "2": {}, "4": {}}}}
    run = LoadedRun(tmp_path, ev)
    assert run.counts == [1, 2] and run.not_run == {4: "not run (--fail-fast): x"}


@pytest.mark.slow
def test_fail_fast_campaign_skips_counts_above_a_fail(tmp_path: Path) -> None:
    plan = plan_dict(tmp_path, faults=["fake_concurrency"], counts=[1, 2, 3], ten=2, mixed=3)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    run_dir, ev = api.run_plan(load_plan(path), out=tmp_path / "run", fail_fast=True)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    begun = {e["unit"] for e in events if e["kind"] == "unit_begin"}
    assert {"count1-s1", "count2-s1"} <= begun and not any(u.startswith("count3-") for u in begun)
    skipped = [e for e in events if e["kind"] == "unit_skipped" and e.get("not_run")]
    assert {e["unit"] for e in skipped} >= {"count3-s1", "count3-s2", "count3-s3"}
    per3 = ev["model_checks"]["per_count"]["3"]["assertions"]
    assert per3 and all(a["status"] == "PENDING" and "not run (--fail-fast)" in a["reason"] for a in per3)
    assert ev["model_checks"]["per_count"]["2"]["status"] == "FAIL"
    assert ev["verdict"]["exit_code"] == 1 and 3 not in ev["verdict"]["admitted_counts"]
