"""Merging shards: what only part of a sharded campaign collects is taken from the runs that
collected it, and model-level Q5 is judged again over the merged scope (pure, no campaign)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from parval.report.merge import _combine_by_id, _merged_q5, _responsible
from parval.status import Result, Status


def _run(counts: list[int], units: set[str], model_level: list[Result]) -> Any:
    run = SimpleNamespace(
        dir=Path("/runs/x"),
        counts=counts,
        plan_counts=[1, 2],
        units=units,
        ev={"model_checks": {"model_level": [r.to_json() for r in model_level]}},
    )
    run.ran_unit = lambda prefix: any(u == prefix or u.startswith(prefix + "-") for u in run.units)
    return run


def _r(id_: str, status: Status, **evidence: Any) -> Result:
    return Result(id_, status, f"{id_} {status}", dict(evidence))


def test_m6_offline_comes_from_the_run_that_ran_the_lowest_count() -> None:
    low = _run([1], set(), [_r("M6.offline", Status.PASS, compared=4)])
    high = _run([2], {"modes-2"}, [_r("M6.offline", Status.PENDING)])
    [merged] = _combine_by_id([(low, _results_of(low)), (high, _results_of(high))], once=True)
    assert merged.status is Status.PASS
    # A FAIL from the other shard is evidence and still wins.
    high_fail = _run([2], {"modes-2"}, [_r("M6.offline", Status.FAIL)])
    [merged] = _combine_by_id([(low, _results_of(low)), (high_fail, _results_of(high_fail))], once=True)
    assert merged.status is Status.FAIL
    # No run ran the lowest count: the PENDING stands.
    [merged] = _combine_by_id([(high, _results_of(high))], once=True)
    assert merged.status is Status.PENDING


def test_modes_assertions_come_from_the_run_that_ran_the_modes_start() -> None:
    assert _responsible("M6.streaming", 1) is not None
    assert _responsible("M2.exact", 1) is None
    low = _run([1], set(), [_r("M6.streaming", Status.PENDING)])
    high = _run([2], {"modes-2"}, [_r("M6.streaming", Status.PASS, compared=2)])
    [merged] = _combine_by_id([(low, _results_of(low)), (high, _results_of(high))], once=True)
    assert merged.status is Status.PASS


def _results_of(run: Any) -> list[Result]:
    return [Result.from_json(x) for x in run.ev["model_checks"]["model_level"]]


def test_merged_q5_passes_only_when_every_merged_comparison_passed() -> None:
    shards = [
        _run([1], set(), [_r("Q5", Status.PENDING)]),
        _run([2], {"recovery-2", "modes-2"}, [_r("Q5", Status.PENDING)]),
    ]
    merged = [_r("M1.legacy_parity", Status.PASS, compared=3), _r("M4.targeted_unload", Status.PASS, compared=2)]
    q5 = _merged_q5(shards, merged)
    assert q5 is not None and q5.status is Status.PASS and q5.evidence["rests_on"]["comparison verdicts"] == 2
    open_ = [*merged, _r("M6.streaming", Status.BLOCKED)]
    assert getattr(_merged_q5(shards, open_), "status", None) is Status.PENDING
    # An open comparison is not hidden by a shard that passed Q5 over its own part.
    passing_shard = [_run([1], set(), [_r("Q5", Status.PASS)]), shards[1]]
    assert getattr(_merged_q5(passing_shard, open_), "status", None) is Status.PENDING


def test_merged_q5_keeps_a_failure_any_shard_saw() -> None:
    aside = _r("Q5", Status.FAIL, violation=[{"run": "count2-start1", "attempt": 1}])
    shards = [_run([1], set(), [_r("Q5", Status.PENDING)]), _run([2], {"modes-2"}, [aside])]
    merged = [_r("M1.legacy_parity", Status.PASS, compared=3)]
    q5 = _merged_q5(shards, merged)
    assert q5 is not None and q5.status is Status.FAIL
    assert q5.evidence["violation"] == [{"run": "count2-start1", "attempt": 1}]


def test_merged_q5_fails_on_a_mismatch_in_the_merged_verdicts() -> None:
    shards = [_run([1], set(), [_r("Q5", Status.PENDING)])]
    mismatch = {"request": "r3", "expected": "ab", "got": "cd"}
    merged = [_r("M4.all_unload", Status.FAIL, mismatches=[mismatch])]
    q5 = _merged_q5(shards, merged)
    assert q5 is not None and q5.status is Status.FAIL and q5.evidence["violation"] == [mismatch]


def test_merged_q5_is_not_made_up_where_no_run_judged_it() -> None:
    assert _merged_q5([_run([1], set(), [])], [_r("M1.legacy_parity", Status.PASS, compared=3)]) is None
