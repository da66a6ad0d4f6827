"""F6.ctest and "unrelated" CTest failures: a failure is unrelated only where the probes
file named that test, with why, before the run (`unrelated_tests`, recorded in the
judge_inputs event); a test the coverage table maps to an F entry never is. Anything else
that failed is a FAIL naming the tests. A record made when a name pattern decided it is
PENDING naming what to declare, never a PASS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parval.errors import UsageError
from parval.framework.judges import JudgeInputs, judge
from parval.framework.judges_f6 import LEGACY_RELEVANT_PATTERN, assess_f6, coverage_map
from parval.framework.probe_run import check_options
from parval.framework.settings import ProbeOptions, load_options
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.status import Result, Status
from tests.test_ctest import REQ, fake_run

SMOKE_WHY = "checkpoint loading on CPU only; the parallel runtime is not linked into it"


def _ctest(runs: list, **kw: object) -> Result:  # type: ignore[type-arg]
    return {r.id: r for r in assess_f6(runs, **kw)}["F6.ctest"]  # type: ignore[arg-type]


def test_undeclared_failures_outside_the_old_pattern_fail() -> None:
    """`cpu_checkpoint_smoke_test` and an adapter test failing once gave PASS with '2 tests
    failed': their names missed the parallel-scope regex."""
    run = fake_run("default", {**REQ, "cpu_checkpoint_smoke_test": "failed", "whisper_adapter_test": "failed"})
    res = _ctest([run])
    assert res.status is Status.FAIL
    assert res.reason.startswith("failed: cpu_checkpoint_smoke_test, whisper_adapter_test;")
    assert "cpu_checkpoint_smoke_test, whisper_adapter_test not declared unrelated before the run" in res.reason
    assert res.evidence["failures"]["whisper_adapter_test"] == {"standing": "undeclared"}


def test_a_test_that_is_f_evidence_is_never_unrelated() -> None:
    """`shared_weight_cache_test` failing once gave F6.ctest PASS although
    ctest_coverage.json names it as F3.ownership evidence; declaring it unrelated changes nothing."""
    run = fake_run("default", {**REQ, "shared_weight_cache_test": "failed"})
    for declared in ({}, {"shared_weight_cache_test": "we think it is flaky"}):
        res = _ctest([run], unrelated=declared)
        assert res.status is Status.FAIL, declared
        assert "shared_weight_cache_test is evidence for F3.ownership (never unrelated)" in res.reason
        assert res.evidence["failures"]["shared_weight_cache_test"] == {"standing": "evidence", "for": ["F3.ownership"]}
    # A probes file's ctest_coverage names more evidence: that test is never unrelated either.
    mine = fake_run("default", {**REQ, "my_ownership_test": "failed"})
    mapped = coverage_map({"F3.ownership": ["my_ownership_test"]})
    res = _ctest([mine], unrelated={"my_ownership_test": "x"}, mapped=mapped)
    assert res.status is Status.FAIL and "my_ownership_test is evidence for F3.ownership" in res.reason
    # A required test too.
    req = fake_run("default", {**REQ, "server_config_test": "failed"})
    res = _ctest([req], required=["server_config_test"], unrelated={"server_config_test": "x"})
    assert res.status is Status.FAIL and "evidence for F6.ctest (required)" in res.reason


def test_declared_unrelated_failures_pass_and_are_disclosed() -> None:
    """The correct case: every failure declared unrelated, with why, before the run."""
    run = fake_run("default", {**REQ, "session_pool_test": "passed", "cpu_checkpoint_smoke_test": "failed"})
    res = _ctest([run], unrelated={"cpu_checkpoint_smoke_test": SMOKE_WHY})
    assert res.status is Status.PASS
    assert res.reason == (
        "3 test(s) passed; every failure was declared unrelated before the run: cpu_checkpoint_smoke_test; "
        "required: parallel_http_live_body_test, parallel_http_ownership_test"
    )
    assert (
        "unrelated common-suite failure, disclosed separately: cpu_checkpoint_smoke_test "
        f"(declared before the run: {SMOKE_WHY})"
    ) in res.limitations
    # A clean run of the same build passes as before.
    clean = _ctest([fake_run("default", {**REQ, "session_pool_test": "passed"})])
    assert clean.status is Status.PASS and clean.reason.startswith("3 of 3 test(s) passed; required: ")


def _inputs(**extra: object) -> JudgeInputs:
    base: JudgeInputs = {
        "selected": list(FRAMEWORK_GATE),
        "only": None,
        "plan_path": "plan.yaml",
        "required_tests": [],
        "default_transport_unchanged": None,
        "sanitizers": ["asan", "tsan"],
        "sanitizers_unavailable": {},
    }
    return {**base, **extra}  # type: ignore[typeddict-item]


def _judged(run: object, inputs: JudgeInputs) -> Result:
    return {r.id: r for r in judge([], [run], inputs)}["F6.ctest"]  # type: ignore[list-item]


def test_a_record_from_before_declarations_is_pending_naming_what_to_declare() -> None:
    """A record whose judge_inputs predate `unrelated_tests` called failures unrelated by a
    name pattern: that is no longer accepted, and never a PASS."""
    run = fake_run("default", {**REQ, "cpu_checkpoint_smoke_test": "failed"})
    res = _judged(run, _inputs())
    assert res.status is Status.PENDING
    assert res.reason.startswith("failed: cpu_checkpoint_smoke_test, which this record calls unrelated only by")
    assert "no longer accepted: name each in the probes file's unrelated_tests with why" in res.reason
    assert res.evidence["old_pattern"] == LEGACY_RELEVANT_PATTERN.pattern
    # A pattern recorded as the declaration reads the same way.
    assert _judged(run, _inputs(unrelated_tests="smoke|adapter")).status is Status.PENDING
    # What the pattern called relevant, or what is F evidence, stays a FAIL.
    both = fake_run("default", {**REQ, "shared_weight_cache_test": "failed", "server_x_test": "failed"})
    res = _judged(both, _inputs())
    assert res.status is Status.FAIL and res.reason.startswith("failed: shared_weight_cache_test, server_x_test")
    # A record with declarations: judged by them (the probes file's ctest_coverage included).
    assert _judged(run, _inputs(unrelated_tests={})).status is Status.FAIL
    ok = _judged(run, _inputs(unrelated_tests={"cpu_checkpoint_smoke_test": SMOKE_WHY}))
    assert ok.status is Status.PASS
    mine = fake_run("default", {**REQ, "my_test": "failed"})
    inputs = _inputs(unrelated_tests={"my_test": "x"}, ctest_coverage={"F3.ownership": ["my_test"]})
    assert _judged(mine, inputs).status is Status.FAIL


def test_the_probes_file_declares_each_unrelated_test_with_why(tmp_path: Path) -> None:
    p = tmp_path / "probes.yaml"
    p.write_text(f"unrelated_tests:\n  cpu_checkpoint_smoke_test: {SMOKE_WHY!r}\n")
    assert load_options(p).unrelated_tests == {"cpu_checkpoint_smoke_test": SMOKE_WHY}
    for bad, says in (
        ("unrelated_tests: 'smoke|adapter'\n", "a name pattern is no longer accepted"),
        ("unrelated_tests: [cpu_checkpoint_smoke_test]\n", "must map each CTest name to why"),
        ("unrelated_tests: {cpu_checkpoint_smoke_test: ''}\n", "must map each CTest name to why"),
    ):
        p.write_text(bad)
        with pytest.raises(UsageError, match=says):
            load_options(p)


def test_a_test_that_is_f_evidence_cannot_be_declared_unrelated() -> None:
    check_options(ProbeOptions(unrelated_tests={"cpu_checkpoint_smoke_test": SMOKE_WHY}))
    for name, says in (
        ("shared_weight_cache_test", "shared_weight_cache_test (evidence for F3.ownership)"),
        ("parallel_http_live_body_test", "parallel_http_live_body_test (a required test)"),
    ):
        with pytest.raises(UsageError, match=re.escape(f"unrelated_tests: {says}")):
            check_options(ProbeOptions(unrelated_tests={name: "x"}))
    with pytest.raises(UsageError, match="evidence for F3.ownership"):
        check_options(ProbeOptions(unrelated_tests={"my_test": "x"}, ctest_coverage={"F3.ownership": ("my_test",)}))
