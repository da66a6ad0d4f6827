"""The F6 gate: F6.ctest, F6.sanitizers and F6.stress judged from recorded CTest runs.

Pure: it reads `CTestRun`s (as recorded by parval.framework.probes_f6 or read back from the
event log for --rejudge) and never runs anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from parval.framework.ctest import DEFAULT_LABEL, STRESS_LABEL, CTestRun
from parval.status import Result, Status, not_applicable

# Required when the default transport changed (procedure-assertions F6.ctest); a plan that
# keeps the legacy listener passes its own list.
DEFAULT_REQUIRED_TESTS: tuple[str, ...] = ("parallel_http_live_body_test", "parallel_http_ownership_test")
DEFAULT_SANITIZERS: tuple[str, ...] = ("asan", "tsan")
# The CTests relevant to the parallel scope (scheduler, sessions, slots, server/HTTP paths);
# a failure outside it is an unrelated common-suite failure, disclosed separately.
RELEVANT_TESTS = re.compile(r"parallel|slot|session|schedul|lifecycle|ownership|server|http|busy|registry|model_manag")


def _latest(runs: Sequence[CTestRun], label: str) -> tuple[CTestRun | None, list[CTestRun]]:
    """The last run with `label` (a rerun supersedes) and the ones it superseded."""
    same = [r for r in runs if r.label == label]
    return (same[-1], same[:-1]) if same else (None, [])


def _superseded_notes(label: str, earlier: Sequence[CTestRun]) -> list[str]:
    # A rerun is allowed, but an earlier failure must stay visible to the reviewer.
    return [
        f"an earlier '{label}' run ({r.started_at or 'time unknown'}) was {r.status}: {r.reason}"
        for r in earlier
        if r.status in ("failed", "error")
    ]


def assess_f6(
    runs: list[CTestRun],
    required_tests: Sequence[str] = DEFAULT_REQUIRED_TESTS,
    sanitizers: Sequence[str] = DEFAULT_SANITIZERS,
    sanitizers_unavailable: str | None = None,
) -> list[Result]:
    """F6.ctest, F6.sanitizers and F6.stress from recorded runs (selected by label).

    `sanitizers_unavailable` is the platform/implementation reason no sanitizer job can run
    here; without it an empty `sanitizers` list is PENDING, never NOT_APPLICABLE."""
    return [
        _assess_ctest(runs, required_tests),
        _assess_sanitizers(runs, sanitizers, sanitizers_unavailable),
        _assess_stress(runs),
    ]


def _nothing_ran(run: CTestRun) -> str | None:
    """A run that 'passed' without one test passing proves nothing."""
    if run.status == "passed" and run.counts["passed"] == 0:
        return f"no test passed ({run.counts['skipped']} of {len(run.tests)} skipped)"
    return None


def _assess_ctest(runs: Sequence[CTestRun], required: Sequence[str]) -> Result:
    rid = "F6.ctest"
    run, earlier = _latest(runs, DEFAULT_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no default CTest run recorded")
    req_status = {name: (c.status if (c := run.case(name)) else "absent") for name in required}
    relevant = [c.name for c in run.failures if c.name in required or RELEVANT_TESTS.search(c.name)]
    unrelated = [c.name for c in run.failures if c.name not in relevant]
    evidence = {
        "run": run.to_json(),
        "required": req_status,
        "relevant_failures": relevant,
        "unrelated_failures": unrelated,
        "relevant_pattern": RELEVANT_TESTS.pattern,
    }
    limitations = _superseded_notes(DEFAULT_LABEL, earlier)
    if unrelated:
        limitations.append(
            "unrelated common-suite failure(s), disclosed separately (outside the parallel "
            f"scope {RELEVANT_TESTS.pattern!r}): {', '.join(unrelated)}"
        )

    def result(status: Status, reason: str) -> Result:
        return Result(rid, status, reason, evidence, run.reproduction, limitations)

    if run.status == "not_run":
        return result(Status.PENDING, f"default CTest run not run: {run.reason}")
    if run.status == "error" or (run.status == "failed" and (relevant or not unrelated)):
        reason = run.reason if not relevant else f"failed: {', '.join(relevant)}"
        return result(Status.FAIL, reason)
    if (empty := _nothing_ran(run)) is not None:
        return result(Status.PENDING, f"default CTest run: {empty}")
    missing = [f"{n} ({s})" for n, s in req_status.items() if s != "passed"]
    if missing:
        return result(Status.PENDING, "required test(s) did not run: " + ", ".join(missing))
    req = f"; required: {', '.join(required)}" if required else ""
    return result(Status.PASS, f"{run.reason}{req}")


def _assess_sanitizers(runs: Sequence[CTestRun], sanitizers: Sequence[str], unavailable: str | None = None) -> Result:
    rid = "F6.sanitizers"
    if not sanitizers:
        if unavailable:
            return not_applicable(rid, f"no sanitizer job can run here: {unavailable}")
        return Result(
            rid,
            Status.PENDING,
            "no sanitizer job requested and no platform reason given "
            "(ASan and TSan run separately where supported; name why they cannot here)",
        )
    jobs: dict[str, dict[str, Any]] = {}
    statuses: list[Status] = []
    parts: list[str] = []
    limitations: list[str] = []
    repro: list[str] = []
    for label in sanitizers:
        run, earlier = _latest(runs, label)
        limitations += _superseded_notes(label, earlier)
        if run is None:
            status, reason, job = Status.PENDING, "no run recorded", {"status": "not_run"}
        else:
            job = run.to_json()
            reason = run.reason
            status = {"passed": Status.PASS, "not_run": Status.PENDING}.get(run.status, Status.FAIL)
            if (empty := _nothing_ran(run)) is not None:
                status, reason = Status.PENDING, empty
            if run.reproduction:
                repro.append(run.reproduction)
        job["assessed"] = str(status)
        job["reason"] = reason
        jobs[label] = job
        statuses.append(status)
        word = {Status.PASS: "PASS", Status.PENDING: "not run", Status.FAIL: "FAIL"}[status]
        parts.append(f"{label}: {word} ({reason})")
        if status is Status.PENDING:
            # The procedure wants unrun sanitizer jobs listed with their platform limits.
            limitations.append(f"{label} not run: {reason}")
    if Status.FAIL in statuses:
        overall = Status.FAIL
    elif Status.PENDING in statuses:
        overall = Status.PENDING
    else:
        overall = Status.PASS
    return Result(rid, overall, "; ".join(parts), {"jobs": jobs}, "\n".join(repro), limitations)


def _assess_stress(runs: Sequence[CTestRun]) -> Result:
    rid = "F6.stress"
    run, earlier = _latest(runs, STRESS_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no seeded stress run recorded")
    seed = run.meta.get("seed")
    evidence: dict[str, Any] = {"run": run.to_json(), "seed": seed}
    limitations = _superseded_notes(STRESS_LABEL, earlier)
    if seed is None:
        limitations.append("no seed recorded with the stress run (meta['seed'])")
    status = {"passed": Status.PASS, "not_run": Status.PENDING}.get(run.status, Status.FAIL)
    reason = run.reason if status is not Status.PENDING else f"stress run not run: {run.reason}"
    if (empty := _nothing_ran(run)) is not None:
        status, reason = Status.PENDING, f"stress run: {empty}"
    if status is Status.PASS and seed is not None:
        reason += f"; seed {seed}"
    return Result(rid, status, reason, evidence, run.reproduction, limitations)
