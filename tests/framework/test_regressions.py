"""The five historical regressions and the suppressed overdue rejection, as stand-in faults.

Each test runs every probe with the fault on and shows its assertion FAILs and is the only
one that does (other assertions may be BLOCKED when the fault keeps their scenario from being
judged, with the reason naming the assertion that judges it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import REGRESSIONS, by_id, explain, failing, run

GRACE = {"stalled_io_grace_s": 1.5}


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "target"), list(REGRESSIONS.items()))
def test_regression_fails_exactly_its_assertion(tmp_path: Path, fault: str, target: str) -> None:
    # Every probe runs (a run of the target's probe alone would judge a subset of this record;
    # `--only` itself is tested in tests/framework/test_cli.py).
    _, record = run(tmp_path, faults=[fault], probes=GRACE)
    assert by_id(record)[target]["status"] == "FAIL", explain(record)
    assert failing(record).keys() == {target}, explain(record)
    assert record["verdict"]["exit_code"] == 1
    for a in record["assertions"]:
        if a["status"] == "BLOCKED":
            # Blocked by the fault (naming the assertion that judges it), or a situation a busy
            # machine kept from forming after its bounded attempts: never a silent block.
            reason = a["reason"]
            assert "judged by" in reason or "barging" in reason or " attempt(s): " in reason, reason


@pytest.mark.slow
def test_queued_counter_stuck_fails_timeouts(tmp_path: Path) -> None:
    # A queued request that timed out stays in queued_requests: the accounting never drains.
    _, record = run(tmp_path, faults=["queued_counter_stuck"], only="F1.timeouts")
    res = by_id(record)
    assert res["F1.timeouts"]["status"] == "FAIL", explain(record)
    assert failing(record).keys() == {"F1.timeouts"}
    assert "no timed-out request stays counted" in res["F1.timeouts"]["reason"]


@pytest.mark.slow
def test_timeouts_pass_on_the_clean_standin(tmp_path: Path) -> None:
    _, record = run(tmp_path, only="F1.timeouts")
    assert by_id(record)["F1.timeouts"]["status"] == "PASS", explain(record)
