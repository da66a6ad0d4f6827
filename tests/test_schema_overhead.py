"""`performance.campaign_overhead` in evidence.json has a schema: a record with a malformed
figure does not validate, one from a real campaign does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from parval.gates.campaign_cost import campaign_overhead
from parval.plan.schemas import schema_errors

EVENTS: list[dict[str, Any]] = [
    {"kind": "server_ready", "ready_s": 0.5},
    {"kind": "request", "t_send": 0.0, "t_done": 0.2},
    {"kind": "request", "t_send": 0.1, "t_done": 0.3},
    {"kind": "campaign_end", "elapsed_s": 1.2},
]


def performance(overhead: Any) -> dict[str, Any]:
    return {"status": "pending", "rows": [], "campaign_overhead": overhead}


def errors_for(perf: dict[str, Any]) -> list[str]:
    return [e for e in schema_errors({"performance": perf}, "evidence") if "campaign_overhead" in e]


def test_a_measured_overhead_validates() -> None:
    figure = campaign_overhead(EVENTS)
    assert figure is not None and figure["starts"] == 1 and figure["requests"] == 2
    assert errors_for(performance(figure)) == []
    assert errors_for(performance(None)) == []  # the campaign did not end


@pytest.mark.parametrize("bad", [{"wall_s": "1.2"}, {"extra": 1}, {"starts": 1.5}])
def test_a_malformed_overhead_does_not_validate(bad: dict[str, Any]) -> None:
    figure = copy.deepcopy(campaign_overhead(EVENTS))
    assert figure is not None
    figure.update(bad)
    assert errors_for(performance(figure))
