"""The F3 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.ctest import CTestCase, CTestRun
from parval.framework.judges import Findings, run_judge
from parval.framework.judges_f3 import CTEST_EVIDENCE
from parval.framework.probes_f3 import attach_ctest
from parval.framework.settings import ProbeOptions
from parval.status import Status

from .factkit import OUT, facts, fl


def load_failure(first: int | None = 500, again: int | None = 500, **extra: Any) -> dict[str, Any]:
    """A config model whose load fails, requested twice."""
    f = facts(
        [
            fl("load-fails", 0.0, 0.21, status=first, model="m-missing", message="load failed"),
            fl("load-fails-again", 0.3, 0.51, status=again, model="m-missing", message="load failed"),
        ],
        model="m-missing",
        drained_first=True,
        loaded_after=False,
        drained_again=True,
    )
    f.update(extra)
    return f


def test_config_load_failure_passes_an_error_then_a_retried_load() -> None:
    v = run_judge("f3.config_load_failure", load_failure())
    assert v.status is Status.PASS, v.detail()


def test_config_load_failure_fails_a_stuck_503_on_the_retry() -> None:
    v = run_judge("f3.config_load_failure", load_failure(again=503))
    assert v.status is Status.FAIL and "not a stuck 503; got 503" in v.detail()


def test_config_load_failure_fails_a_held_lease_or_a_published_model() -> None:
    v = run_judge("f3.config_load_failure", load_failure(drained_first=False))
    assert v.status is Status.FAIL and "the failed load released its lease" in v.detail()
    v = run_judge("f3.config_load_failure", load_failure(loaded_after=True))
    assert v.status is Status.FAIL and "nothing was published" in v.detail()
    v = run_judge("f3.config_load_failure", load_failure(first=200))
    assert v.status is Status.FAIL and "first load fails answers an error (got 200)" in v.detail()


def retry(entry: Any = None, good: int = 200, output: str = "out-retry", refs: bool = True) -> dict[str, Any]:
    """A registration with a missing checkpoint, the listing, the good one, one request."""
    listed = {"id": "m-retry", "loaded": False, "active_slots": 0} if entry is None else entry
    f = facts(
        [
            fl(
                "register-missing",
                0.0,
                0.05,
                status=500,
                model="",
                path="/v1/models/load",
                message="checkpoint not found",
            ),
            fl("register-good", 0.1, 0.35, status=good, model="", path="/v1/models/load", json={}),
            fl("after-retry", 0.4, 0.6, model="m-retry", output=output),
        ],
        model="m-retry",
        entry=listed,
    )
    if refs:
        f["refs"]["m-retry|base"] = {"cold": ["out-retry"], "warm": ["out-retry"]}
    return f


def test_registration_retry_passes_a_failed_then_good_registration() -> None:
    v = run_judge("f3.registration_retry", retry())
    assert v.status is Status.PASS, v.detail()


def test_registration_retry_fails_an_entry_left_loaded_or_leased() -> None:
    v = run_judge("f3.registration_retry", retry(entry={"id": "m-retry", "loaded": False, "active_slots": 1}))
    assert v.status is Status.FAIL and "no lease held" in v.detail()
    v = run_judge("f3.registration_retry", retry(entry=False))  # the entry vanished from the listing
    assert v.status is Status.FAIL


def test_registration_retry_compares_with_its_own_registration_only() -> None:
    # Equal to the plan model's output but not to its own registration's: a mismatch.
    v = run_judge("f3.registration_retry", retry(output=OUT))
    assert v.status is Status.FAIL and "differ: after-retry" in v.detail()
    v = run_judge("f3.registration_retry", retry(refs=False))
    assert v.status is Status.PENDING and "no serial reference was recorded for m-retry" in v.detail()
    v = run_judge("f3.registration_retry", retry(good=500))
    assert v.status is Status.FAIL and "good checkpoint loads (got 500)" in v.detail()


def alongside(invalid: int = 400, **extra: Any) -> dict[str, Any]:
    """A healthy request and an invalid one at count 2, then the next two requests."""
    f = facts(
        [
            fl("healthy0", 0.0, 0.15),
            fl("invalid", 0.01, 0.02, status=invalid, message="max_tokens"),
            fl("after0", 0.3, 0.45),
            fl("after1", 0.3, 0.46),
        ],
        count=2,
        healthy=["healthy0"],
        after=["after0", "after1"],
        after_settled=True,
        waits=[{"what": "1 healthy request(s) running when the invalid one is sent", "seen": True}],
    )
    if invalid == 200:
        f["flights"][1]["output"] = "other"
    f.update(extra)
    return f


def test_invalid_alongside_passes_a_rejected_invalid_request() -> None:
    v = run_judge("f3.invalid_alongside", alongside())
    assert v.status is Status.PASS, v.detail()


def test_invalid_alongside_fails_an_accepted_invalid_request_or_a_held_lease() -> None:
    v = run_judge("f3.invalid_alongside", alongside(invalid=200))
    assert v.status is Status.FAIL and "the invalid request is rejected (got 200)" in v.detail()
    v = run_judge("f3.invalid_alongside", alongside(drained=False))
    assert v.status is Status.FAIL and "no lease stays held" in v.detail()
    f = alongside()
    f["flights"][3]["status"] = 503
    v = run_judge("f3.invalid_alongside", f)
    assert v.status is Status.FAIL and "the next requests answered 200 (got after1=503)" in v.detail()


def test_invalid_alongside_fails_a_healthy_output_the_invalid_one_corrupted() -> None:
    f = alongside()
    f["flights"][0]["output"] = "corrupted"
    v = run_judge("f3.invalid_alongside", f)
    assert v.status is Status.FAIL and "differ: healthy0" in v.detail()


def ctest(aid: str, run: dict[str, Any] | None, cases: dict[str, str], observed: list[str]) -> dict[str, Any]:
    need = CTEST_EVIDENCE[aid]
    return {
        "assertion": aid,
        "needs": need.what,
        "tests": list(need.tests),
        "observed_over_http": observed,
        "run": run,
        "cases": [{"name": n, "status": s} for n, s in cases.items()],
    }


RAN = {"label": "default", "status": "passed", "reason": "ok"}


def test_ctest_evidence_is_pending_without_a_run_naming_what_http_showed() -> None:
    v = run_judge("f3.ctest_evidence", ctest("F3.load_failures", None, {}, ["registration_failure_retry"]))
    assert v.status is Status.PENDING
    assert "no CTest run in this record" in v.detail() and "only registration_failure_retry" in v.detail()
    not_run = {"label": "default", "status": "not_run", "reason": "no build dir"}
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", not_run, {}, []))
    assert v.status is Status.PENDING and "(no build dir)" in v.detail() and "only nothing" in v.detail()


OWNERSHIP = {
    "shared_weight_cache_test": "passed",
    "session_pool_test": "passed",
    "parallel_http_ownership_test": "passed",
}


def test_ctest_evidence_passes_only_when_every_named_test_passed() -> None:
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", RAN, OWNERSHIP, []))
    assert v.status is Status.PASS and "3 CTest(s) passed" in v.detail()
    # The HTTP ownership test alone shows no cache/RNG privacy.
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", RAN, {"parallel_http_ownership_test": "passed"}, []))
    assert v.status is Status.PENDING and "shared_weight_cache_test (absent)" in v.detail()
    # A test whose name merely resembles the topic is no load-failure injection evidence.
    smoke = {"session_pool_smoke": "passed", "server_parallel_lifecycle_test": "passed"}
    v = run_judge("f3.ctest_evidence", ctest("F3.load_failures", RAN, smoke, []))
    assert v.status is Status.PENDING and "session_pool_test (absent)" in v.detail()
    skipped = {**OWNERSHIP, "session_pool_test": "skipped"}
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", RAN, skipped, []))
    assert v.status is Status.PENDING and "session_pool_test (skipped)" in v.detail()


def test_ctest_evidence_fails_a_failed_or_unrun_named_test() -> None:
    cases = {"session_pool_test": "failed", "server_parallel_lifecycle_test": "passed"}
    v = run_judge("f3.ctest_evidence", ctest("F3.load_failures", RAN, cases, []))
    assert v.status is Status.FAIL and "failed: session_pool_test" in v.detail()
    cases = {"server_parallel_lifecycle_test": "passed", "parallel_http_ownership_test": "notrun"}
    v = run_judge("f3.ctest_evidence", ctest("F2.callback_lease", RAN, cases, []))
    assert v.status is Status.FAIL and "parallel_http_ownership_test" in v.detail()
    v = run_judge("f3.ctest_evidence", ctest("F5.no_convoy", RAN, cases, []))
    assert v.status is Status.PASS
    killed = {**RAN, "status": "error", "reason": "killed", "error_kind": "parval_timeout"}
    assert run_judge("f3.ctest_evidence", ctest("F5.no_convoy", killed, {}, [])).status is Status.BLOCKED


def test_attach_ctest_records_the_cases_it_read_as_observations() -> None:
    seen: list[tuple[str, str, str, dict[str, Any]]] = []
    findings = Findings(observe=lambda aid, name, key, f, _ev: seen.append((aid, name, key, f)))
    ctx: Any = type("Ctx", (), {})()
    ctx.findings = findings
    ctx.options = ProbeOptions()
    run = CTestRun(
        "default", "b", "failed", tests=[CTestCase("session_pool_test", "failed"), CTestCase("unrelated", "passed")]
    )
    attach_ctest(ctx, [run], {"F3.load_failures"})
    [(aid, name, key, f)] = seen
    assert (aid, name, key) == ("F3.load_failures", "primary_injection", "f3.ctest_evidence")
    assert f["cases"] == [{"name": "session_pool_test", "status": "failed"}, {"name": "unrelated", "status": "passed"}]
    assert f["run"]["status"] == "failed" and findings.checks[0].status is Status.FAIL


def test_the_coverage_table_is_read_row_by_row_from_its_reviewed_file() -> None:
    import json
    from importlib import resources

    from parval.framework.judges_f3 import CTestEvidence, _coverage

    raw = json.loads(resources.files("parval.framework").joinpath("ctest_coverage.json").read_text("utf-8"))
    want = {r["assertion"]: CTestEvidence(r["sub_check"], tuple(r["tests"]), r["what"], r["why"]) for r in raw["rows"]}
    assert _coverage() == want == CTEST_EVIDENCE
    assert {"F3.load_failures", "F3.ownership", "F2.callback_lease"} <= want.keys()


def test_ctest_evidence_names_what_it_needs_and_why_it_could_not_judge() -> None:
    need = CTEST_EVIDENCE["F3.ownership"].what
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", None, {}, []))
    tests = ", ".join(CTEST_EVIDENCE["F3.ownership"].tests)
    assert v.detail() == (
        f"not set up: needs {need}: CTest(s) {tests} (no CTest run in this record); over HTTP only nothing was observed"
    )
    stopped = {"label": "default", "status": "failed", "error_kind": "parval_timeout", "reason": "killed at 1800 s"}
    v = run_judge("f3.ctest_evidence", ctest("F3.ownership", stopped, {}, []))
    assert v.status is Status.BLOCKED
    assert v.detail().endswith("the CTest run was stopped by parval before it finished (killed at 1800 s)")
    partial = ctest("F3.ownership", RAN, {"session_pool_test": "passed", "shared_weight_cache_test": "skipped"}, [])
    v = run_judge("f3.ctest_evidence", partial)
    assert v.status is Status.PENDING and f"needs {need}: CTest(s) shared_weight_cache_test (skipped), " in v.detail()
    none = {**ctest("F3.ownership", RAN, {}, []), "tests": []}
    v = run_judge("f3.ctest_evidence", none)
    assert v.status is Status.PENDING and "the coverage table names no CTest for this sub-check" in v.detail()
