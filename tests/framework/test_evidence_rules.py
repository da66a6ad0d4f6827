"""Pure pieces of the evidence discipline: per-registration cold/warm references,
preconditions, CTest-only evidence, the shutdown drain policy, covered counts and the
re-judge of a framework run from its events."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from typer.testing import CliRunner

from parval.cli import app
from parval.framework.ctest import CTestCase, CTestRun
from parval.framework.judges import Check, Findings
from parval.framework.judges_f4 import shutdown_policy
from parval.framework.observed import FlightFact, Verdict, outputs_match
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, MANAGEMENT, Capabilities, first_missing
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f3 import attach_ctest
from parval.framework.record import covered_counts
from parval.framework.rejudge import rejudge_framework
from parval.framework.settings import ProbeOptions
from parval.status import Status

from .helpers import run


def bare_ctx(cache_sensitive: bool = False) -> Any:
    ctx = FrameworkContext.__new__(FrameworkContext)
    ctx.refs = {}
    ctx.plan = SimpleNamespace(cache_sensitive=cache_sensitive)  # type: ignore[assignment]
    ctx.findings = Findings()
    ctx.caps = Capabilities(plan_ui_management=True)
    ctx.options = ProbeOptions()
    return ctx


def fact(label: str, model: str, status: int | None, out: str = "") -> FlightFact:
    return FlightFact(
        {
            "label": label,
            "model": model,
            "t_send": 0.0,
            "t_done": None if status is None else 1.0,
            "status": status,
            "output": out if status == 200 else None,
        }
    )


def refs(ctx: Any) -> dict[str, Any]:
    return {"model_id": "m", "refs": ctx.refs_json()}


def test_cold_output_is_compared_with_the_cold_reference_only() -> None:
    ctx = bare_ctx()
    ctx.add_refs("m", "base", ["COLD", "WARM", "WARM"])
    v = Verdict()
    # A cold request that returned the warm output matches "a" reference but not its own.
    outputs_match(v, refs(ctx), "base", [fact("first", "m", 200, "WARM")], "first", phase="cold")
    assert v.status is Status.FAIL
    v = Verdict()
    outputs_match(v, refs(ctx), "base", [fact("first", "m", 200, "COLD")], "first", phase="cold")
    assert v.status is Status.PASS
    # A request whose history the probe did not force cannot be judged when cold != warm.
    v = Verdict()
    outputs_match(v, refs(ctx), "base", [fact("any", "m", 200, "WARM")], "any")
    assert v.status is Status.PENDING and "differ" in v.detail()


def test_each_registration_needs_its_own_reference() -> None:
    ctx = bare_ctx()
    ctx.add_refs("m", "base", ["A", "A"])
    v = Verdict()
    # The derived id's output depends on its registration: never compared with m's.
    outputs_match(v, refs(ctx), "base", [fact("after-retry", "m-retry", 200, "B")], "after", phase="cold")
    assert v.status is Status.PENDING and "no serial reference was recorded for m-retry" in v.detail()
    ctx.add_refs("m-retry", "base", ["B", "B"])
    v = Verdict()
    outputs_match(v, refs(ctx), "base", [fact("after-retry", "m-retry", 200, "B")], "after", phase="cold")
    assert v.status is Status.PASS
    v = Verdict()
    outputs_match(v, refs(ctx), "base", [fact("x", "m-retry", 200, "A")], "after", phase="cold")
    assert v.status is Status.FAIL


def test_no_successful_reply_is_no_output_evidence() -> None:
    ctx = bare_ctx()
    ctx.add_refs("m", "base", ["A", "A"])
    v = Verdict()
    outputs_match(v, refs(ctx), "base", [], "delivered responses")
    assert v.status is Status.PENDING


def test_preconditions_name_what_is_missing() -> None:
    caps = Capabilities(plan_ui_management=False, counters=True, loaded=True, bulk_unload=True)
    status, text = first_missing(caps, (MANAGEMENT,)) or (None, "")
    assert status is Status.PENDING and "ui_management: false" in text
    caps = Capabilities(
        plan_ui_management=True,
        management=False,
        management_status=404,
        counters=False,
        bulk_unload=False,
        bulk_status=404,
    )
    status, text = first_missing(caps, (MANAGEMENT,)) or (None, "")
    assert status is Status.UNSUPPORTED and "no /v1/models/load route (HTTP 404)" in text
    status, text = first_missing(caps, (COUNTERS,)) or (None, "")
    assert status is Status.UNSUPPORTED and "slot counters" in text
    assert (first_missing(caps, (BULK_UNLOAD,)) or (None, ""))[0] is Status.UNSUPPORTED
    assert first_missing(Capabilities(plan_ui_management=True, management=True), (MANAGEMENT,)) is None
    assert (first_missing(Capabilities(), (COUNTERS,)) or (None, ""))[0] is Status.PENDING


def _run(tests: dict[str, str]) -> CTestRun:
    cases = [CTestCase(n, s, 0.1) for n, s in tests.items()]  # type: ignore[arg-type]
    return CTestRun(
        label="default",
        build_dir="/b",
        status="passed",
        reason="ok",
        command=["ctest"],
        exit_code=0,
        tests=cases,
        parsed_from="junit",
    )


def test_http_evidence_alone_never_passes_ctest_only_areas() -> None:
    ctx = bare_ctx()
    # An HTTP sub-check that passed (as its judge would have decided it).
    ctx.findings.checks.append(Check("F3.load_failures", "registration_failure_retry", Status.PASS, "ok"))
    attach_ctest(ctx, [])
    got = {(c.assertion, c.name): c for c in ctx.findings.checks}
    for aid, name in (
        ("F3.load_failures", "primary_injection"),
        ("F3.ownership", "resource_lifetime"),
        ("F5.no_convoy", "blocked_metadata"),
        ("F5.retiring_residency", "blocked_teardown"),
        ("F2.callback_lease", "stream_and_unstarted_callbacks"),
    ):
        assert got[(aid, name)].status is Status.PENDING, (aid, got[(aid, name)].detail)
    assert "registration_failure_retry" in got[("F3.load_failures", "primary_injection")].detail
    # The HTTP ownership test is no load-failure injection evidence.
    ctx = bare_ctx()
    attach_ctest(ctx, [_run({"parallel_http_ownership_test": "passed"})], {"F3.load_failures", "F3.ownership"})
    got = {(c.assertion, c.name): c for c in ctx.findings.checks}
    assert got[("F3.load_failures", "primary_injection")].status is Status.PENDING
    # Nor does it show cache/RNG privacy alone: every test the table names must pass.
    assert got[("F3.ownership", "resource_lifetime")].status is Status.PENDING
    ctx = bare_ctx()
    all_three = {"parallel_http_ownership_test": "passed", "session_pool_test": "passed"}
    attach_ctest(ctx, [_run({**all_three, "shared_weight_cache_test": "passed"})], {"F3.ownership"})
    assert [c.status for c in ctx.findings.checks] == [Status.PASS]
    ctx = bare_ctx()
    attach_ctest(ctx, [_run({"session_pool_test": "failed", "server_parallel_lifecycle_test": "passed"})])
    got = {(c.assertion, c.name): c for c in ctx.findings.checks}
    assert got[("F3.load_failures", "primary_injection")].status is Status.FAIL
    assert got[("F5.no_convoy", "blocked_metadata")].status is Status.PASS


def test_shutdown_needs_a_reply_for_every_request_in_flight() -> None:
    running = [fact("r0", "m", 200, "A"), fact("r1", "m", 200, "A")]
    v = Verdict()
    policy = shutdown_policy(v, running, fact("queued", "m", 503, "{}"))
    assert v.status is Status.PASS and policy["rejected"] == ["queued"]
    v = Verdict()
    policy = shutdown_policy(v, running, fact("queued", "m", None))  # connection dropped
    assert v.status is Status.FAIL and policy["no_reply"] == ["queued"]
    assert "connection dropped without one: queued" in v.detail()
    v = Verdict()
    shutdown_policy(v, [fact("r0", "m", 503, "{}")], fact("queued", "m", 200, "A"))
    assert v.status is Status.FAIL and "rejected: r0=503" in v.detail()  # running work was not drained


def test_covered_counts_need_fifo_and_first_publish_passed() -> None:
    def c(aid: str, name: str, status: Status) -> Check:
        return Check(aid, name, status, "")

    checks = [
        c("F2.first_publish", "first_publish@1", Status.PASS),
        c("F1.cap1_fifo", "forced_order@1", Status.PASS),
        c("F2.first_publish", "first_publish@2", Status.PASS),
        c("F1.fifo", "forced_order@2", Status.PENDING),
        c("F2.first_publish", "first_publish@4", Status.FAIL),
        c("F1.fifo", "forced_order@4", Status.PASS),
    ]
    assert covered_counts(checks) == [1]


def test_report_rejudge_rebuilds_the_record_from_its_events(tmp_path: Path) -> None:
    run_dir, record = run(tmp_path, only="F6")  # no server: CTest only, not run
    assert record["identity"]["counts"] == [] and "procedure_version" in record
    assert (run_dir / "manifest.json").exists() and (run_dir / "files.sha256").exists()
    assert rejudge_framework(run_dir) == record
    res = CliRunner().invoke(app, ["report", str(run_dir), "--rejudge", "--format", "json"])
    assert res.exit_code == record["verdict"]["exit_code"], res.output
    assert json.loads(res.output) == record
    md = CliRunner().invoke(app, ["report", str(run_dir), "--rejudge"])
    assert "identical to the stored record.json" in md.output and "F6.ctest" in md.output


def test_runtime_selection_is_not_probed_on_a_server_without_slot_counters() -> None:
    """F2's runtime-immutability probe reads vanished counters as a changed runtime, so it
    runs only where the calibration saw the counters: otherwise the sub-check is left open
    (the precondition names them) and no resize or registration is sent."""
    from types import SimpleNamespace

    import anyio

    from parval.framework.probes_f2 import runtime_immutable

    asked: list[tuple[str, str, tuple[str, ...]]] = []

    def unmet(assertion: str, name: str, *needs: str) -> bool:
        asked.append((assertion, name, needs))
        return True

    class NoCalls:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the probe went on to {name} without the counters")

    rig = SimpleNamespace(ctx=SimpleNamespace(unmet=unmet))
    anyio.run(runtime_immutable, rig, NoCalls())
    assert asked == [("F2.invalid_replacement", "runtime_immutable@flagged", ("counters",))]
