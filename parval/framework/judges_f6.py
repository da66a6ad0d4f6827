"""The F6 gate: F6.ctest, F6.sanitizers and F6.stress judged from recorded CTest runs.

Pure: it reads `CTestRun`s (as recorded by parval.framework.probes_f6 or read back from the
event log for --rejudge) and never runs anything. A FAIL needs a test that failed; a run
parval itself stopped (ctest_timeout_s) is BLOCKED, a CTest too old for the arguments or a
job never run is PENDING, and a sanitizer job counts only from a build directory shown to
be built with that sanitizer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from parval.framework.ctest import DEFAULT_LABEL, DEFAULT_SANITIZERS, STRESS_LABEL, CTestRun
from parval.procedure.entry import CTEST, FRAMEWORK, Entry
from parval.status import Result, Status, combine, not_applicable

# Required whenever the default transport may have changed (procedure-assertions F6.ctest);
# leaving them out needs a written reason (the probes file's default_transport_unchanged).
DEFAULT_REQUIRED_TESTS: tuple[str, ...] = ("parallel_http_live_body_test", "parallel_http_ownership_test")
# What -fsanitize= value a build directory of each sanitizer job must show.
SANITIZE_FLAG: dict[str, str] = {"asan": "address", "tsan": "thread", "ubsan": "undefined", "msan": "memory"}
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


def required_tests(extra: Sequence[str], transport_unchanged: str | None) -> tuple[list[str], list[str]]:
    """(the CTests F6.ctest requires, limitations): the default-transport tests unless a
    reason says the transport did not change, plus the probes file's own."""
    base = [] if transport_unchanged else list(DEFAULT_REQUIRED_TESTS)
    notes = [f"{', '.join(DEFAULT_REQUIRED_TESTS)} not required: {transport_unchanged}"] if transport_unchanged else []
    return list(dict.fromkeys([*base, *extra])), notes


def assess_f6(
    runs: list[CTestRun],
    required: Sequence[str] = (),
    sanitizers: Sequence[str] = DEFAULT_SANITIZERS,
    sanitizers_unavailable: Mapping[str, str] | None = None,
    transport_unchanged: str | None = None,
) -> list[Result]:
    """F6.ctest, F6.sanitizers and F6.stress from recorded runs (selected by label).

    `required` are CTests required besides the default-transport ones; `sanitizers` the jobs
    that were run; `sanitizers_unavailable` the platform reason per job not run (a required
    job without one stays PENDING)."""
    return [
        _assess_ctest(runs, required, transport_unchanged),
        _assess_sanitizers(runs, sanitizers, dict(sanitizers_unavailable or {})),
        _assess_stress(runs),
    ]


# The registry entries of F6, judged by assess_f6 above.
F6_PLAN = "the framework plan: framework.ctest_build_dir, framework.ctest_regex, framework.sanitizer_build_dirs"


def _f6(id_: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Entry(
        id_,
        "record",
        f"{assess_f6.__module__}:{assess_f6.__name__}",
        (CTEST, *evidence),
        reproduce=FRAMEWORK.format(id=id_),
        notes=(*notes, "a rerun with the same label supersedes the earlier run (named as a limitation)"),
    )


ENTRIES: tuple[Entry, ...] = (
    _f6(
        "F6.ctest",
        (
            F6_PLAN,
            "parallel_http_live_body_test and parallel_http_ownership_test, plus the probes file's required_tests "
            "(default_transport_unchanged: the reason they are not required)",
        ),
        "judged on the default-labelled run; FAIL only on a relevant failing test; BLOCKED when parval "
        "stopped CTest (ctest_timeout_s); PENDING when it was not run, CTest is older than 3.21, no test "
        "passed, or a required test did not run",
    ),
    _f6(
        "F6.sanitizers",
        (F6_PLAN, "the probes file's sanitizers / sanitizers_unavailable", "-fsanitize= in the build directory"),
        "ASan and TSan both required, one job each; a job counts only from a build directory built with its "
        "-fsanitize flag; PENDING for a job not run without a platform reason (sanitizers_unavailable), "
        "which is listed as a limitation",
    ),
    _f6(
        "F6.stress",
        (F6_PLAN, "the probes file's stress job (regex, seed, repeat)"),
        "the stress-labelled run (ctest --repeat until-fail with AUDIOCPP_STRESS_SEED); "
        "PENDING when not run; a missing seed is a limitation",
    ),
)


def _nothing_ran(run: CTestRun) -> str | None:
    """A run that 'passed' without one test passing proves nothing."""
    if run.status == "passed" and run.counts["passed"] == 0:
        return f"no test passed ({run.counts['skipped']} of {len(run.tests)} skipped)"
    return None


def _error_status(run: CTestRun) -> tuple[Status, str]:
    """A run that ended without a test failing (parval's own timeout, an old CTest, no
    results): never a FAIL, since no test was seen to fail."""
    if run.error_kind == "parval_timeout":
        return Status.BLOCKED, f"parval stopped the CTest run before it finished: {run.reason}"
    if run.error_kind == "ctest_too_old":
        return Status.PENDING, f"{run.reason}: install CTest >= 3.21 and run again"
    return Status.BLOCKED, f"CTest gave no usable result: {run.reason}"


def _assess_ctest(runs: Sequence[CTestRun], extra: Sequence[str], transport_unchanged: str | None) -> Result:
    rid = "F6.ctest"
    required, notes = required_tests(extra, transport_unchanged)
    run, earlier = _latest(runs, DEFAULT_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no default CTest run recorded", limitations=notes)
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
    limitations = [*notes, *_superseded_notes(DEFAULT_LABEL, earlier)]
    if unrelated:
        limitations.append(
            "unrelated common-suite failure(s), disclosed separately (outside the parallel "
            f"scope {RELEVANT_TESTS.pattern!r}): {', '.join(unrelated)}"
        )

    def result(status: Status, reason: str) -> Result:
        return Result(rid, status, reason, evidence, run.reproduction, limitations)

    if run.status == "not_run":
        return result(Status.PENDING, f"default CTest run not run: {run.reason}")
    if relevant or (run.status == "failed" and not unrelated):
        return result(Status.FAIL, f"failed: {', '.join(relevant)}" if relevant else run.reason)
    if run.status == "error":
        return result(*_error_status(run))
    if (empty := _nothing_ran(run)) is not None:
        return result(Status.PENDING, f"default CTest run: {empty}")
    missing = [f"{n} ({s})" for n, s in req_status.items() if s != "passed"]
    if missing:
        return result(Status.PENDING, "required test(s) did not run: " + ", ".join(missing))
    req = f"; required: {', '.join(required)}" if required else ""
    return result(Status.PASS, f"{run.reason}{req}")


def _built_with(run: CTestRun, label: str) -> str | None:
    """Why the run's build directory is not shown to be a `label` build (None when it is)."""
    flag = SANITIZE_FLAG.get(label)
    if flag is None:
        return None  # a job parval knows no flag for: its label is all there is
    found = run.meta.get("sanitize_flags")
    if not isinstance(found, list):
        return f"the -fsanitize flags of {run.build_dir} were not recorded"
    if flag not in found:
        seen = ", ".join(found) or "none"
        return f"{run.build_dir} was not built with -fsanitize={flag} (found: {seen}): not a {label} run"
    return None


def _sanitizer_job(run: CTestRun | None, label: str) -> tuple[Status, str, dict[str, object]]:
    if run is None:
        return Status.PENDING, "no run recorded", {"status": "not_run"}
    job = run.to_json()
    if run.status == "not_run":
        return Status.PENDING, run.reason, job
    failures = [c.name for c in run.failures]
    if failures:
        return Status.FAIL, f"failed: {', '.join(failures)}", job
    if run.status == "error":
        status, reason = _error_status(run)
        return status, reason, job
    if (not_built := _built_with(run, label)) is not None:
        return Status.PENDING, not_built, job
    if (empty := _nothing_ran(run)) is not None:
        return Status.PENDING, empty, job
    return Status.PASS, run.reason, job


def _assess_sanitizers(runs: Sequence[CTestRun], sanitizers: Sequence[str], unavailable: dict[str, str]) -> Result:
    rid = "F6.sanitizers"
    jobs: dict[str, dict[str, object]] = {}
    statuses: list[Status] = []
    parts: list[str] = []
    limitations: list[str] = []
    repro: list[str] = []
    job: dict[str, object]
    for label in dict.fromkeys([*DEFAULT_SANITIZERS, *sanitizers]):
        if label not in sanitizers:
            if label in unavailable:
                limitations.append(f"{label} not run: {unavailable[label]}")
                parts.append(f"{label}: not run here ({unavailable[label]})")
                jobs[label] = {"status": "not_run", "assessed": "NOT_APPLICABLE", "reason": unavailable[label]}
                continue
            status, reason, job = Status.PENDING, "not requested and no platform reason given", {"status": "not_run"}
        else:
            run, earlier = _latest(runs, label)
            limitations += _superseded_notes(label, earlier)
            status, reason, job = _sanitizer_job(run, label)
            if run is not None and run.reproduction:
                repro.append(run.reproduction)
        job["assessed"] = str(status)
        job["reason"] = reason
        jobs[label] = job
        statuses.append(status)
        word = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.BLOCKED: "BLOCKED"}.get(status, "not run")
        parts.append(f"{label}: {word} ({reason})")
        if status is Status.PENDING:
            # The procedure wants unrun sanitizer jobs listed with their platform limits.
            limitations.append(f"{label} not run: {reason}")
    if not statuses:
        return not_applicable(rid, "no sanitizer job can run here: " + "; ".join(parts))
    overall = combine(statuses)
    result = Result(rid, overall, "; ".join(parts), {"jobs": jobs}, "\n".join(repro), limitations)
    return result


def _assess_stress(runs: Sequence[CTestRun]) -> Result:
    rid = "F6.stress"
    run, earlier = _latest(runs, STRESS_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no seeded stress run recorded")
    seed = run.meta.get("seed")
    evidence: dict[str, object] = {"run": run.to_json(), "seed": seed}
    limitations = _superseded_notes(STRESS_LABEL, earlier)
    if seed is None:
        limitations.append("no seed recorded with the stress run (meta['seed'])")
    failures = [c.name for c in run.failures]
    if run.status == "not_run":
        status, reason = Status.PENDING, f"stress run not run: {run.reason}"
    elif failures or run.status == "failed":
        status, reason = Status.FAIL, run.reason
    elif run.status == "error":
        status, reason = _error_status(run)
    elif (empty := _nothing_ran(run)) is not None:
        status, reason = Status.PENDING, f"stress run: {empty}"
    else:
        status, reason = Status.PASS, run.reason
    if status is Status.PASS and seed is not None:
        reason += f"; seed {seed}"
    return Result(rid, status, reason, evidence, run.reproduction, limitations)
