"""The framework run: probes in a fixed order (calibration first), each on its own fresh
servers and under its own deadline, then CTest, then one result per F assertion.

A probe that cannot finish (server did not start, deadline, a parval error) leaves its
assertions BLOCKED with the reason; it never turns into a PASS or a model FAIL. A probe
whose preconditions the calibration start found missing (slot counters, bulk unload,
management routes) is not run: its assertions are PENDING/UNSUPPORTED naming them.
Every sub-check is a judge's verdict over a recorded observation, and the results come from
parval.framework.judges.judge, which combines sub-checks and CTest runs without a server
(`parval report --rejudge` re-runs the judges over the observations first).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NotRequired, TypedDict

import anyio

from parval.errors import ServerStartError, UsageError
from parval.framework.ctest import CTestRun
from parval.framework.judges import judge
from parval.framework.judges_f6 import DEFAULT_REQUIRED_TESTS, coverage_map
from parval.framework.preconditions import BULK_UNLOAD, COUNTERS, LOADED, MANAGEMENT, first_missing
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import cap1_probe, fifo_probe, flagged_timeouts_probe, overdue_probe, unsupported_probe
from parval.framework.probes_f2 import callback_probe, reconfigure_probe, unload_load_probe
from parval.framework.probes_f3 import CTEST_EVIDENCE, attach_ctest, failures_probe
from parval.framework.probes_f4 import disconnect_probe, shutdown_probe, stalled_io_probe
from parval.framework.probes_f5 import bulk_probe, limit_probe
from parval.framework.probes_f6 import ctest_runs
from parval.framework.probes_legacy import legacy_probe
from parval.framework.settings import ProbeOptions
from parval.procedure.assertion_ids import FRAMEWORK_GATE, group_of
from parval.rundir.event_types import (
    JudgeInputsEvent,
    ProbeBeginEvent,
    ProbeEndEvent,
    ProbeErrorEvent,
    ProbeSkippedEvent,
)
from parval.server.groups import real_error
from parval.status import Result, Status


@dataclass(frozen=True)
class Probe:
    name: str
    assertions: tuple[str, ...]
    run: Callable[[FrameworkContext], Awaitable[None]]
    # Preconditions every scenario of the probe rests on (parval.framework.preconditions);
    # probes with mixed needs check them per scenario instead.
    needs: tuple[str, ...] = ()


async def _limit2(ctx: FrameworkContext) -> None:
    await limit_probe(ctx, 2)


async def _limit1(ctx: FrameworkContext) -> None:
    await limit_probe(ctx, 1)


CALIBRATION = Probe("f1_cap1", ("F1.cap1_fifo", "F2.first_publish", "F1.fifo"), cap1_probe)
SLOTS = (COUNTERS, LOADED)
PROBES: tuple[Probe, ...] = (
    CALIBRATION,
    Probe("f1_fifo", ("F1.fifo", "F2.first_publish"), fifo_probe, SLOTS),
    Probe("f1_overdue", ("F1.overdue",), overdue_probe, (*SLOTS, BULK_UNLOAD)),
    Probe("f1_timeouts", ("F1.timeouts",), flagged_timeouts_probe, SLOTS),
    Probe(
        "legacy",
        ("F1.legacy_admission", "F1.timeouts", "F2.first_publish", "F2.unload_vs_load", "F2.invalid_replacement"),
        legacy_probe,
    ),
    Probe("f1_unsupported", ("F1.unsupported",), unsupported_probe),
    Probe("f2_unload_load", ("F2.unload_vs_load",), unload_load_probe, SLOTS),
    Probe(
        "f2_reconfigure",
        ("F2.reconfigure_queued", "F2.invalid_replacement", "F2.same_id", "F1.fifo"),
        reconfigure_probe,
        (*SLOTS, MANAGEMENT),
    ),
    Probe("f2_callback", ("F2.callback_lease",), callback_probe, SLOTS),
    Probe("f3_failures", ("F3.load_failures", "F3.ownership"), failures_probe, SLOTS),
    Probe("f4_disconnect", ("F4.disconnect",), disconnect_probe, SLOTS),
    Probe("f4_shutdown", ("F4.shutdown",), shutdown_probe, SLOTS),
    Probe("f4_stalled_io", ("F4.shutdown",), stalled_io_probe),
    Probe("f5_limit2", ("F5.two_models", "F5.retiring_residency"), _limit2, (*SLOTS, BULK_UNLOAD)),
    Probe("f5_limit1", ("F5.two_models", "F5.retiring_residency"), _limit1, (*SLOTS, BULK_UNLOAD)),
    Probe("f5_bulk", ("F5.bulk_ready_first", "F5.no_convoy", "F5.bulk_selections"), bulk_probe, (*SLOTS, BULK_UNLOAD)),
)


def parse_selection(only: str | None) -> set[str]:
    """`--only F1,F5.no_convoy` → the assertion ids it names (groups expand)."""
    if not only:
        return set(FRAMEWORK_GATE)
    chosen: set[str] = set()
    for part in (p.strip() for p in only.split(",") if p.strip()):
        matched = {a for a in FRAMEWORK_GATE if a == part or group_of(a) == part}
        if not matched:
            raise UsageError(f"--only {part!r}: not an F assertion or group (e.g. F1, F5.no_convoy)")
        chosen |= matched
    return chosen


def check_options(options: ProbeOptions) -> None:
    """What the probes file names must exist: probes to skip, CTest-backed sub-checks."""
    check_skips(options.skip)
    unknown = sorted(set(options.ctest_coverage) - set(CTEST_EVIDENCE))
    if unknown:
        raise UsageError(
            f"probes file ctest_coverage: {unknown} have no CTest-backed sub-check; known: {sorted(CTEST_EVIDENCE)}"
        )
    check_unrelated(options)


def check_unrelated(options: ProbeOptions) -> None:
    """A test declared unrelated must not be evidence for an F entry or a required test:
    its failure is never unrelated (judges_f6)."""
    mapped = coverage_map(options.ctest_coverage)
    required = {*options.required_tests, *DEFAULT_REQUIRED_TESTS}
    clash = sorted(
        f"{t} (evidence for {', '.join(mapped[t])})" if t in mapped else f"{t} (a required test)"
        for t in options.unrelated_tests
        if t in mapped or t in required
    )
    if clash:
        raise UsageError(
            f"probes file unrelated_tests: {', '.join(clash)}: a test that is evidence for an F entry "
            "or required by F6.ctest is never unrelated; remove it from unrelated_tests"
        )


def check_skips(skip: frozenset[str]) -> None:
    names = {p.name for p in PROBES}
    unknown = sorted(skip - names)
    if unknown:
        raise UsageError(f"probes file skip: unknown probe(s) {unknown}; known: {sorted(names)}")
    if CALIBRATION.name in skip:
        raise UsageError(f"probes file skip: {CALIBRATION.name} is the calibration start; it cannot be skipped")


class ProbeOutcome(TypedDict):
    """How one probe ended, as the record lists it (`probes`)."""

    probe: str
    outcome: str  # ok, error, skipped, blocked or precondition
    error: NotRequired[str]
    elapsed_s: NotRequired[float]
    assertions: NotRequired[list[str]]


async def run_probes(ctx: FrameworkContext, selected: set[str]) -> tuple[list[ProbeOutcome], list[CTestRun]]:
    """Run every probe the selection needs; returns per-probe outcomes and CTest runs."""
    outcomes: list[ProbeOutcome] = []
    calibrated = True
    http = {a for p in PROBES for a in p.assertions}
    for probe in PROBES if selected & http else ():
        if probe is not CALIBRATION and not selected & set(probe.assertions):
            continue
        if probe.name in ctx.options.skip:
            for aid in probe.assertions:
                ctx.findings.add(aid, probe.name, Status.PENDING, "skipped by the probes file")
            outcomes.append({"probe": probe.name, "outcome": "skipped"})
            continue
        if not calibrated:
            for aid in probe.assertions:
                ctx.findings.add(
                    aid, probe.name, Status.BLOCKED, "the calibration start failed, so no timing could be derived"
                )
            outcomes.append({"probe": probe.name, "outcome": "blocked"})
            continue
        gap = first_missing(ctx.caps, probe.needs)
        if gap is not None:
            for aid in probe.assertions:
                if aid in selected:
                    ctx.findings.observe(
                        aid,
                        probe.name,
                        "precondition",
                        {"capabilities": ctx.caps.to_json(), "needs": list(probe.needs)},
                        precondition=True,
                    )
            ctx.log.write(ProbeSkippedEvent(kind="probe_skipped", probe=probe.name, status=str(gap[0]), reason=gap[1]))
            outcomes.append(
                {"probe": probe.name, "outcome": "precondition", "error": gap[1], "assertions": list(probe.assertions)}
            )
            continue
        outcome = await _run_one(ctx, probe)
        outcomes.append(outcome)
        if probe is CALIBRATION and outcome["outcome"] != "ok":
            calibrated = False
    runs: list[CTestRun] = []
    if selected & {a for a in FRAMEWORK_GATE if a.startswith("F6.") or a in CTEST_EVIDENCE}:
        runs = await ctest_runs(ctx)
        attach_ctest(ctx, runs, selected)
    return outcomes, runs


async def _run_one(ctx: FrameworkContext, probe: Probe) -> ProbeOutcome:
    t0 = time.monotonic()
    ctx.log.write(ProbeBeginEvent(kind="probe_begin", probe=probe.name))
    error = ""
    try:
        try:
            with anyio.fail_after(float(ctx.plan.timeouts["start_s"])):
                await probe.run(ctx)
        except BaseExceptionGroup as group:
            raise real_error(group, require_single=False) from None
    except ServerStartError as exc:
        error = f"server did not start: {exc.message}"
        ctx.log.write(ProbeErrorEvent(kind="probe_error", probe=probe.name, error=error, log_tail=exc.log_tail))
    except TimeoutError:
        error = f"timeouts.start_s={ctx.plan.timeouts['start_s']} reached"
        ctx.log.write(ProbeErrorEvent(kind="probe_error", probe=probe.name, error=error))
    except Exception as exc:  # a probe bug or an unexpected reply shape: recorded, never a pass
        error = f"{type(exc).__name__}: {exc}"
        ctx.log.write(
            ProbeErrorEvent(kind="probe_error", probe=probe.name, error=error, traceback=traceback.format_exc())
        )
    elapsed = round(time.monotonic() - t0, 3)
    ctx.log.write(ProbeEndEvent(kind="probe_end", probe=probe.name, ok=not error, elapsed_s=elapsed))
    if error:
        for aid in probe.assertions:
            ctx.findings.add(aid, probe.name, Status.BLOCKED, f"probe {probe.name} did not complete: {error}")
    return {
        "probe": probe.name,
        "outcome": "error" if error else "ok",
        "error": error,
        "elapsed_s": elapsed,
        "assertions": list(probe.assertions),
    }


def judge_inputs(ctx: FrameworkContext, selected: set[str], only: str | None) -> JudgeInputsEvent:
    """Everything besides the sub-checks and CTest runs that judging reads (recorded as an
    event, so `parval report --rejudge` needs nothing else)."""
    return JudgeInputsEvent(
        kind="judge_inputs",
        selected=sorted(selected),
        only=only,
        plan_path=str(ctx.plan.path),
        required_tests=list(ctx.options.required_tests),
        default_transport_unchanged=ctx.options.default_transport_unchanged,
        sanitizers=list(ctx.options.sanitizers),
        sanitizers_unavailable=ctx.options.sanitizers_unavailable,
        unrelated_tests=dict(ctx.options.unrelated_tests),
        ctest_coverage={k: list(v) for k, v in ctx.options.ctest_coverage.items()},
    )


def results(ctx: FrameworkContext, selected: set[str], runs: list[CTestRun], only: str | None) -> list[Result]:
    return judge(ctx.findings.checks, runs, judge_inputs(ctx, selected, only))
