"""The judge writes each block the gates build only once it matches the evidence schema."""

from __future__ import annotations

import pytest

from parval.rundir.evidence_types import assertions_block, performance_block, verdict_block
from parval.status import Result, Status

VERDICT = {"line": "VALIDATED", "exit_code": 0, "admitted_counts": [1], "counts": {"1": "PASS"}}


def test_a_block_matching_the_schema_is_taken_as_it_is() -> None:
    assert verdict_block(VERDICT) is VERDICT
    entry = Result("M2.exact", Status.PASS, "3/3 exact", {"compared": 3}, count=1).to_json()
    assert assertions_block([entry]) == [entry]


def test_a_block_not_matching_the_schema_is_refused_naming_where() -> None:
    with pytest.raises(ValueError, match=r"verdict .*exit_code"):
        verdict_block({**VERDICT, "exit_code": "0"})
    with pytest.raises(ValueError, match="verdict .*'line' is a required property"):
        verdict_block({k: v for k, v in VERDICT.items() if k != "line"})
    with pytest.raises(ValueError, match="assertions"):
        assertions_block([{"id": "M2.exact"}])
    with pytest.raises(ValueError, match="performance"):
        performance_block({"status": "PASS"})
