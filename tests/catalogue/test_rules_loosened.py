"""A FAIL under stricter rules stands (issue 38, finding 4): a run that FAILed under a
bound, tolerance or drain lag, followed by a run of the same executables, files, fixtures
and plan settings with that rule loosened, never admits what the FAIL holds. A merge
(`parval report A B`), `--catalogue` and `--claims` read NOT ADMITTED, "rules loosened
after a FAIL", naming the field, in md, json and junit. Which direction is stricter is
parval.report.rules_loosened's docstring; each direction is checked here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from parval.claims.render import render_claims
from parval.report.merge import MergeRefused
from parval.report.rules_loosened import LOOSENED, RULES, loosened
from parval.report.run_table import render_catalogue
from parval.report.write import render_many
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run

Change = Callable[[dict[str, Any]], None]


def _tolerance(diff: int | None) -> Change:
    def change(plan: dict[str, Any]) -> None:
        plan["compare"]["tolerance"] = (
            None if diff is None else {"max_abs_sample_diff": diff, "justification": "dither of the vocoder"}
        )

    return change


def _drain_lag(ms: float | None) -> Change:
    def change(plan: dict[str, Any]) -> None:
        timeouts = plan.setdefault("timeouts", {})
        if ms is None:
            timeouts.pop("drain_lag_ms", None)
        else:
            timeouts["drain_lag_ms"] = ms

    return change


def _growth(mib: float) -> Change:
    def change(plan: dict[str, Any]) -> None:
        plan.setdefault("memory", {})["stabilisation"] = {"last_k_waves": 3, "max_growth_mib": mib}

    return change


def _runs(
    tmp_path: Path, first: Change, later: Change, *, first_fails: bool = True, other: Change | None = None
) -> tuple[Path, Path, list[Path]]:
    """a (2026-01-01, FAIL at count 2 unless not `first_fails`) under `first`, then b
    (2026-01-02, PASS) under `later` (and `other`, a change of another plan setting)."""
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"

    def both(plan: dict[str, Any]) -> None:
        later(plan)
        if other is not None:
            other(plan)

    a = _run(root, "a", _evidence(combo, "2026-01-01T00:00:00Z", failing=first_fails), plan_changes=first)
    b = _run(root, "b", _evidence(combo, "2026-01-02T00:00:00Z", failing=False), plan_changes=both)
    return cat, root, [a, b]


LOOSENINGS = [
    ("compare.tolerance", _tolerance(None), _tolerance(3)),
    ("compare.tolerance", _tolerance(1), _tolerance(5)),
    ("timeouts.drain_lag_ms", _drain_lag(50), _drain_lag(500)),
    ("timeouts.drain_lag_ms", _drain_lag(50), _drain_lag(None)),
    ("memory.stabilisation.max_growth_mib", _growth(8), _growth(64)),
]


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
@pytest.mark.parametrize(("field", "strict", "loose"), LOOSENINGS)
def test_a_fail_under_a_stricter_rule_counts_against_the_loosened_rerun(
    tmp_path: Path, fmt: str, field: str, strict: Change, loose: Change
) -> None:
    cat, root, dirs = _runs(tmp_path, strict, loose)
    merged_text, merged = render_many(dirs, fmt, None, False)
    catalogue_text, catalogued = render_catalogue(root, fmt)
    claims_text, claimed = render_claims(cat, root, fmt)
    assert merged == catalogued == claimed == 1, (merged_text, catalogue_text, claims_text)
    for text in (merged_text, catalogue_text, claims_text):
        assert LOOSENED in text and field in text, text
        assert "ADMITTED at counts" not in text
    if fmt == "json":
        ev = json.loads(merged_text)
        assert ev["verdict"]["line"].startswith(f"NOT ADMITTED — {LOOSENED}"), ev["verdict"]
        assert ev["verdict"]["counts"]["2"] == "FAIL" and 2 not in ev["verdict"]["admitted_counts"]
        assert field in ev["rules_loosened"]["reasons"][0] and ev["rules_loosened"]["failed_counts"] == [2]
        assert [m["dir"] for m in ev["merged_from"]] == [str(dirs[1])]
        (verdict,) = json.loads(catalogue_text)["verdicts"]
        assert verdict["admitted_counts"] == [] and verdict["exit_code"] == 1
        assert any(field in b for b in verdict["blocking"]), verdict["blocking"]
        rows = {r["count"]: r for c in json.loads(claims_text)["combinations"] for r in c["rows"]}
        assert rows[2]["state"] == "NOT ADMITTED" and field in rows[2]["reason"], rows[2]
    elif fmt == "junit":
        for text in (merged_text, catalogue_text, claims_text):
            failures = [c for c in ET.fromstring(text).iter("testcase") if c.find("failure") is not None]
            assert failures, text


@pytest.mark.parametrize(("field", "strict", "loose"), LOOSENINGS)
def test_without_a_fail_the_runs_stay_apart_as_before(
    tmp_path: Path, field: str, strict: Change, loose: Change
) -> None:
    # nothing failed under the stricter rule: other rules, other tested identity (exit 2)
    cat, root, dirs = _runs(tmp_path, strict, loose, first_fails=False)
    with pytest.raises(MergeRefused, match="their plans disagree on"):
        render_many(dirs, "json", None, False)
    assert render_catalogue(root, "json")[1] == 0  # the newest run alone
    assert render_claims(cat, root, "json")[1] == 0


def test_a_fail_under_looser_rules_does_not_count_as_loosened(tmp_path: Path) -> None:
    # the re-run tightened the tolerance: nothing was loosened after the FAIL
    cat, root, dirs = _runs(tmp_path, _tolerance(5), _tolerance(None))
    with pytest.raises(MergeRefused):
        render_many(dirs, "json", None, False)
    text, _ = render_catalogue(root, "json")
    assert LOOSENED not in text


def test_a_fail_of_another_tested_identity_stays_apart(tmp_path: Path) -> None:
    # another plan setting changed as well (the model's load options): not the same thing tested
    def options(plan: dict[str, Any]) -> None:
        plan["model"]["load_options"] = {**plan["model"].get("load_options", {}), "beam": 5}

    cat, root, dirs = _runs(tmp_path, _tolerance(None), _tolerance(3), other=options)
    with pytest.raises(MergeRefused, match="model.load_options"):
        render_many(dirs, "json", None, False)
    text, code = render_catalogue(root, "json")
    assert code == 0 and LOOSENED not in text


@pytest.mark.parametrize(
    ("path", "strict", "later", "looser"),
    [
        ("compare.tolerance", None, {"max_abs_sample_diff": 2}, True),
        ("compare.tolerance", {"max_abs_sample_diff": 2}, None, False),
        ("compare.tolerance", {"max_abs_sample_diff": 0}, None, False),
        ("compare.volatile_fields", [{"path": "timing.wall_ms"}], [{"path": "timing.wall_ms"}, {"path": "x"}], True),
        ("compare.volatile_fields", [{"path": "timing.wall_ms"}, {"path": "x"}], [{"path": "timing.wall_ms"}], False),
        ("timeouts.drain_lag_ms", 50, 60, True),
        ("timeouts.drain_lag_ms", 50, None, True),
        ("timeouts.drain_lag_ms", None, 50, False),
        ("memory.stabilisation.max_growth_mib", 8, 9, True),
        ("memory.stabilisation.max_growth_mib", 8, None, True),
        ("memory.stabilisation.max_growth_mib", 9, 8, False),
        ("memory.guard_mib", 100, None, True),
        ("memory.guard_mib", None, 100, False),
        ("memory.host_interval_ms", 50, 100, True),
        ("memory.host_interval_ms", 100, 50, False),
        ("memory.gpu_interval_ms", 10, 20, True),
        ("memory.gpu_required", True, False, True),
        ("memory.gpu_required", False, True, False),
        ("memory.baseline_comparison", {"reason": "retention check"}, None, True),
        ("memory.baseline_comparison", None, {"reason": "retention check"}, False),
        # no order between two values: any change after a FAIL counts (fails closed)
        ("memory.stabilisation.last_k_waves", 3, 5, True),
        ("memory.stabilisation.metric", "host_rss", "host_pss", True),
        ("memory.nvml_device_index", 0, 1, True),
    ],
)
def test_which_direction_is_stricter(path: str, strict: Any, later: Any, looser: bool) -> None:
    assert path in RULES

    def plan(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        node = out
        *parents, leaf = path.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
        return out

    found = loosened(plan(strict), plan(later))
    assert bool(found) is looser, found
    if looser:
        assert found[0].startswith(f"{path}: ")
