"""How one count's row reads the judges' verdict, for the cases the campaigns in
test_disclosure_states.py do not produce: a passing count above one that is not admitted,
UNSUPPORTED, a count --fail-fast left out, evidence modified after judging."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.claims.combination import Combination, load_catalogue
from parval.claims.disclosure import State, count_rows
from parval.report.evidence_found import Attributed
from tests.conftest import write_plan

from .kit import build, write_catalogue


@pytest.fixture
def combo(tmp_path: Path) -> Combination:
    plan = write_plan(tmp_path / "plan")
    claims = [{"name": "m", "plan": str(plan), "backends": ["cpu"], "counts": [1, 2, 3, 4]}]
    return load_catalogue(write_catalogue(tmp_path / "c.yaml", claims, {"cpu": build()})).combinations[0]


def _entry(id_: str, status: str, count: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "status": status, "reason": f"{id_} is {status}"}
    if count is not None:
        out["count"] = count
    return out


def _evidence(counts: dict[str, str], admitted: list[int], per_count: dict[str, list[dict[str, Any]]]) -> Any:
    return {
        "verdict": {"counts": counts, "admitted_counts": admitted, "line": "verdict line"},
        "model_checks": {
            "model_level": [_entry("Q6", "PASS") | {"limitations": ["counts [3] were not tested"]}],
            "per_count": {n: {"assertions": a} for n, a in per_count.items()},
        },
        "framework_checks": {"results": []},
    }


def test_a_passing_count_above_a_failed_one_is_not_admitted(combo: Combination) -> None:
    ev = _evidence(
        {"1": "FAIL", "2": "PASS", "3": "UNSUPPORTED", "4": "PASS"},
        [],
        {"1": [_entry("M2.exact", "FAIL", 1)], "3": [_entry("M6.streaming", "UNSUPPORTED", 3)]},
    )
    rows = count_rows(combo, Attributed(evidence=ev, covered={1: ["r"], 2: ["r"], 3: ["r"], 4: ["r"]}), [])
    assert [r.state for r in rows] == [State.NOT_ADMITTED, State.NOT_ADMITTED, State.BLOCKED, State.NOT_ADMITTED]
    assert rows[0].blocking == ["M2.exact FAIL"] and rows[0].reason == "M2.exact is FAIL"
    assert rows[1].blocking == ["count 1 NOT ADMITTED"] and "admission is the consecutive" in rows[1].reason
    assert rows[2].blocking == ["M6.streaming UNSUPPORTED"]


def test_a_passing_count_the_judge_did_not_admit_says_why(combo: Combination) -> None:
    ev = _evidence({"1": "PASS", "2": "PASS", "3": "PASS", "4": "PASS"}, [1, 2, 3], {})
    rows = count_rows(combo, Attributed(evidence=ev, covered={n: ["r"] for n in (1, 2, 3, 4)}), [])
    assert [r.state for r in rows] == [State.ADMITTED] * 3 + [State.PENDING]
    assert rows[3].blocking == ["Q6"] and "counts [3] were not tested" in rows[3].reason


def test_a_count_fail_fast_left_out_is_not_run(combo: Combination) -> None:
    ev = _evidence({"1": "PASS", "2": "FAIL", "4": "PASS"}, [1], {"2": [_entry("M2.exact", "FAIL", 2)]})
    found = Attributed(evidence=ev, covered={1: ["r"], 2: ["r"], 4: ["r"]}, not_run={3: "not run (--fail-fast)"})
    rows = count_rows(combo, found, [])
    assert [r.state for r in rows] == [State.ADMITTED, State.NOT_ADMITTED, State.NOT_RUN, State.NOT_ADMITTED]
    assert rows[2].reason == "not run (--fail-fast)"
    assert rows[3].blocking == ["count 2 NOT ADMITTED"]


def test_modified_evidence_admits_nothing(combo: Combination) -> None:
    ev = _evidence({"1": "PASS"}, [1], {})
    rows = count_rows(combo, Attributed(evidence=ev, covered={1: ["r"]}), ["r: modified: events.jsonl"])
    assert {r.state for r in rows} == {State.NOT_ADMITTED}
    assert rows[0].reason == "INVALID EVIDENCE: r: modified: events.jsonl"


@pytest.mark.parametrize("reused", [True, False])
def test_the_framework_record_a_row_used_and_its_reuse_are_disclosed(combo: Combination, reused: bool) -> None:
    """A record reused from another build's commit is named with that commit (markdown and
    JSON); a refused reuse says why; both name the record and whether it was trusted."""
    from types import SimpleNamespace

    from parval.claims import render_md as claims_md
    from parval.claims.disclosure import CombinationDisclosure

    ev = _evidence({"1": "PASS"}, [1], {})
    ev["framework_checks"] = {
        "record": {"id": "fw-cuda-0a1b", "path": "runs/fw/record.json"},
        "trusted": reused,
        "untrusted_reason": None if reused else "framework record reuse refused: app/server/runtime.cpp changed",
        "status": "PASS" if reused else "PENDING",
        "reuse": {
            "status": "reused" if reused else "refused",
            "reused": reused,
            "reason": "only adapter paths changed" if reused else "app/server/runtime.cpp is framework code",
            "record_commit": "c0ffee1234567890",
        },
    }
    found = Attributed(evidence=ev, covered={n: ["r"] for n in (1, 2, 3, 4)})
    c = CombinationDisclosure(combo, "sha", found, count_rows(combo, found, []), [])
    fw = c.to_json()["framework"]
    assert fw["record"] == "fw-cuda-0a1b" and fw["reused"] is reused and fw["record_commit"] == "c0ffee1234567890"
    cell = claims_md._framework_cell(c)
    section = "\n".join(claims_md._framework_section(SimpleNamespace(combinations=[c])))  # type: ignore[arg-type]
    if reused:
        assert cell == "`fw-cuda-0a1b` (trusted); reused from commit c0ffee123456 (framework paths unchanged)"
        assert f"| `fw-cuda-0a1b` | `{combo.key}` | yes | yes, from c0ffee123456 |" in section
    else:
        assert "reuse refused: app/server/runtime.cpp is framework code" in cell and "(not trusted: " in cell
        assert f"| `fw-cuda-0a1b` | `{combo.key}` | no: framework record reuse refused" in section
        assert section.endswith("| no |")
