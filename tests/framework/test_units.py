"""Pure pieces of the framework gate: contract mapping, sub-check combination, selection,
the probes file, derived timing and the record's group/verdict rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.errors import UsageError
from parval.framework import contract
from parval.framework.judges import Check, Findings, assertion_result
from parval.framework.observed import Timing, Verdict
from parval.framework.probe_run import PROBES, parse_selection
from parval.framework.record import groups, verdict
from parval.framework.settings import ProbeOptions, load_options
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.status import Result, Status


def test_every_f_assertion_maps_to_contract_cells_with_labels() -> None:
    assert set(contract.COVERAGE) == set(FRAMEWORK_GATE)
    for aid, cov in contract.COVERAGE.items():
        assert cov.areas, aid
        for cid, label, note in cov.cells:
            assert cid in contract.CELLS, (aid, cid)
            assert label in ("D", "P", "U") and note
        doc = contract.coverage_json(aid)
        assert all(c["label"] in ("D", "P", "U") for c in doc["cells"])


def test_partial_areas_make_every_assertion_carry_a_limitation() -> None:
    # The contract labels every validation area "Partially tested": no blanket pass anywhere.
    for aid in FRAMEWORK_GATE:
        lims = contract.limitations(aid)
        assert any("not a blanket pass" in line for line in lims), aid
    assert any("is P [T1]" in line for line in contract.limitations("F2.first_publish"))


def test_every_http_assertion_has_a_probe() -> None:
    covered = {a for p in PROBES for a in p.assertions}
    assert covered == {a for a in FRAMEWORK_GATE if not a.startswith("F6.")}


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([Status.PASS, Status.PASS], Status.PASS),
        ([Status.PASS, Status.PENDING], Status.PENDING),
        ([Status.PENDING, Status.BLOCKED], Status.BLOCKED),
        ([Status.BLOCKED, Status.FAIL, Status.PASS], Status.FAIL),
    ],
)
def test_assertion_combines_its_sub_checks(statuses: list[Status], expected: Status) -> None:
    checks = [Check("F1.fifo", f"c{i}", s, "detail") for i, s in enumerate(statuses)]
    r = assertion_result("F1.fifo", checks, unrun_reason="x", reproduction="r")
    assert r.status is expected
    assert r.evidence["contract"]["cells"]
    # The reason names each sub-check that did not pass, with its status; a PASS names them all.
    not_passed = [f"{c.name} {c.status}" for c in checks if c.status is not Status.PASS]
    assert all(name in r.reason for name in not_passed or [c.name for c in checks]), r.reason


def test_no_sub_check_is_pending_and_na_becomes_a_limitation() -> None:
    r = assertion_result("F5.no_convoy", [], unrun_reason="nothing ran", reproduction="r")
    assert r.status is Status.PENDING and r.reason == "nothing ran"
    f = Findings()
    f.add("F1.unsupported", "b", Status.NOT_APPLICABLE, "no queue capacity")
    checks = [Check("F1.unsupported", "a", Status.PASS, "ok"), *f.of("F1.unsupported")]
    r = assertion_result("F1.unsupported", checks, unrun_reason="x", reproduction="r")
    assert r.status is Status.PASS
    assert any("b not applicable: no queue capacity" in line for line in r.limitations)
    with pytest.raises(ValueError):
        f.add("F9.nope", "x", Status.PENDING, "")


@pytest.mark.parametrize("status", [Status.PASS, Status.FAIL, Status.UNSUPPORTED])
def test_a_verdict_on_the_server_comes_only_from_a_judge_over_observed_facts(status: Status) -> None:
    # `add` records sub-checks that judge no server behaviour; a PASS or FAIL given there
    # would be a conclusion without the facts a rejudge needs.
    with pytest.raises(ValueError, match="come from a judge"):
        Findings().add("F1.fifo", "x", status, "decided in the probe")


def test_observations_are_recorded_and_judged_as_json() -> None:
    seen: list[tuple[str, str, str, dict[str, object], dict[str, object]]] = []
    f = Findings(observe=lambda *event: seen.append(event))
    caps = {"counters": False, "loaded": True, "bulk_unload": True, "plan_ui_management": True}
    check = f.observe(
        "F1.fifo", "forced_order@2", "precondition", {"capabilities": caps, "needs": ("counters",)}, precondition=True
    )
    assert check.status is Status.UNSUPPORTED and "publishes none" in check.detail
    assert check.evidence == {"judge": "precondition", "precondition": True}
    [(aid, name, key, facts, evidence)] = seen
    assert (aid, name, key) == ("F1.fifo", "forced_order@2", "precondition")
    assert facts["needs"] == ["counters"]  # as the event holds it: JSON lists, not tuples
    with pytest.raises(KeyError, match="no framework judge"):
        f.observe("F1.fifo", "x", "f9.unknown", {})


def test_verdict_order_of_findings() -> None:
    v = Verdict()
    assert v.status is Status.PENDING  # shown nothing: no evidence is never a pass
    v.require(True, "seen")
    assert v.status is Status.PASS
    v.pend("not set up")
    assert v.status is Status.PENDING
    v.block("confounded")
    assert v.status is Status.BLOCKED and "confounded" in v.detail()
    v.require(False, "broken")
    assert v.status is Status.FAIL and v.detail() == "violated: broken"


def test_selection() -> None:
    assert parse_selection(None) == set(FRAMEWORK_GATE)
    assert parse_selection("F5") == {a for a in FRAMEWORK_GATE if a.startswith("F5.")}
    assert parse_selection("F1.fifo, F6") == {"F1.fifo", "F6.ctest", "F6.sanitizers", "F6.stress"}
    with pytest.raises(UsageError):
        parse_selection("F7")


def test_probes_file(tmp_path: Path) -> None:
    assert load_options(None) == ProbeOptions()
    p = tmp_path / "p.yaml"
    p.write_text("source_commit: abc\nstress: {regex: stress, seed: 9, repeat: 3}\nskip: [f4_stalled_io]\n")
    o = load_options(p)
    assert o.source_commit == "abc" and o.stress is not None and o.stress.seed == 9
    assert o.skip == {"f4_stalled_io"} and o.sha256
    for bad in ("nope: 1\n", "distinct_session_options: [{a: 1}]\n", "min_service_ms: -1\n", "- 1\n"):
        p.write_text(bad)
        with pytest.raises(UsageError):
            load_options(p)


def test_timing_windows_scale_with_the_measured_request() -> None:
    fast = Timing(service_s=0.15, load_s=0.2, teardown_s=0.15)
    slow = Timing(service_s=3.0, load_s=10.0, teardown_s=1.0)
    assert fast.gap_s == pytest.approx(0.03) and slow.gap_s == 0.25
    for t in (fast, slow):
        assert t.overdue_ms / 1000 + 2 * t.gap_s < t.service_s
        assert t.ceiling_ms / 1000 < t.service_s
    assert fast.too_short(100) is None
    assert "too short" in (Timing(0.05, 0.1, 0.0).too_short(100) or "")


def _r(aid: str, status: Status, lim: bool = False) -> Result:
    return Result(aid, status, "r", limitations=["partial"] if lim else [])


def test_groups_are_never_a_blanket_pass_over_partial_areas() -> None:
    res = [_r("F4.disconnect", Status.PASS, True), _r("F4.shutdown", Status.PASS, True), _r("F6.ctest", Status.PENDING)]
    g = groups(res)
    assert g["F4"]["status"] == "PASS" and g["F4"]["blanket_pass"] is False
    assert g["F4"]["coverage"] == "partial" and "not a blanket pass" in g["F4"]["summary"]
    assert g["F6"]["status"] == "PENDING"


def test_verdict_exit_codes() -> None:
    assert verdict([_r("F1.fifo", Status.PASS)])["exit_code"] == 0
    assert verdict([_r("F1.fifo", Status.PASS), _r("F6.ctest", Status.PENDING)])["exit_code"] == 3
    v = verdict([_r("F1.fifo", Status.FAIL), _r("F6.ctest", Status.PENDING)])
    assert v["exit_code"] == 1 and "F1.fifo" in v["line"]
    na = Result("F2.callback_lease", Status.NOT_APPLICABLE, "no batch")
    assert verdict([_r("F1.fifo", Status.PASS), na])["exit_code"] == 0
