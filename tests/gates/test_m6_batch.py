"""M6.batch pairs each result with the request it answers (by index) and compares it with
the upstream reference of that request and history; a drain that cannot be shown is said
as such (never "0 inexact result(s), 0 error(s), 4/4 results")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval.gates.m6_modes import judge_m6
from parval.outputs.compare import batch_result_canon
from parval.status import Status
from tests.gates.m_events import DRAINED, Events, plan, tts_body

VOL = ["timing"]


def batch_event(
    results: list[tuple[int, int, dict[str, Any]]], drained: dict[str, Any] | None = None
) -> dict[str, Any]:
    names = ["base", "other"]
    rows: list[dict[str, Any]] = []
    for b, idx, body in results:
        result = {**body, "timing": None}
        rows.append(
            {
                "batch": b,
                "index": idx,
                "req": names[idx],
                "ref": f"{names[idx]}|warm",
                "canon": batch_result_canon(result, VOL),
            }
        )
    rows += [{"batch": b, "status": 200, "outcome": "ok", "error": ""} for b in (0, 1)]
    return {"count": 2, "batches": 2, "expected_results": 2, "results": rows, "drained": drained or dict(DRAINED)}


def m6(tmp_path: Path, event: dict[str, Any]) -> Any:
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    for name, seed in (("base", 1), ("other", 2)):
        ev.request("ref-baseline-a", "ref_cold", 0, name, tts_body(seed + 10))  # cold differs from warm
        ev.request("ref-baseline-a", "ref_warm", 0, name, tts_body(seed))
    ev.end("ref-baseline-a")
    ev.start("modes", role="modes", count=2)
    for _ in range(2):  # the warm-up wave: every slot serves once
        ev.request("modes", "modes_warmup", 0, "base", tts_body(11), ref="base|cold")
    ev.append("m6_batch", run="modes", attempt=0, **event)
    ev.end("modes")
    p = plan(
        admit_modes=["offline", "batch"], variations=[{"name": "other", "changes": "seed", "request": {"seed": 2}}]
    )
    return {r.id: r for r in judge_m6(ev.context(p))}["M6.batch"]


def good() -> list[tuple[int, int, dict[str, Any]]]:
    return [(b, i, tts_body(i + 1)) for b in (0, 1) for i in (0, 1)]


def test_independent_results_equal_to_the_warm_references_pass(tmp_path: Path) -> None:
    r = m6(tmp_path, batch_event(good()))
    assert r.status is Status.PASS, r.reason


def test_a_batch_answering_request_zero_twice_fails(tmp_path: Path) -> None:
    rows = [(0, 0, tts_body(1)), (0, 0, tts_body(1)), (1, 0, tts_body(1)), (1, 1, tts_body(2))]
    r = m6(tmp_path, batch_event(rows))
    assert r.status is Status.FAIL and "batch 0: request(s) [0] answered more than once" in r.reason, r.reason
    assert "request(s) [1] never answered" in r.reason


def test_results_are_compared_with_the_reference_of_their_request(tmp_path: Path) -> None:
    rows = [(b, i, tts_body(1)) for b in (0, 1) for i in (0, 1)]  # request 1 answered with request 0's output
    r = m6(tmp_path, batch_event(rows))
    assert r.status is Status.FAIL and "differ from the upstream reference" in r.reason


def test_a_drain_that_cannot_be_shown_is_named_and_pending(tmp_path: Path) -> None:
    no_counters = {"ok": False, "active": None, "queued": None, "fields_present": False}
    r = m6(tmp_path, batch_event(good(), drained=no_counters))
    assert r.status is Status.PENDING and "lease release not shown" in r.reason
    assert "inexact" not in r.reason
    held = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
    r = m6(tmp_path / "held", batch_event(good(), drained=held))
    assert r.status is Status.FAIL and "lease left held" in r.reason
    assert json.dumps(r.evidence)  # evidence stays JSON
