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
from types import MappingProxyType

from parval.framework.ctest import DEFAULT_LABEL, DEFAULT_SANITIZERS, STRESS_LABEL, CTestRun
from parval.framework.judges_f3 import CTEST_EVIDENCE
from parval.procedure.entry import CTEST, FRAMEWORK, Entry
from parval.status import Result, Status, combine, not_applicable

# Required whenever the default transport may have changed (procedure-assertions F6.ctest);
# leaving them out needs a written reason (the probes file's default_transport_unchanged).
DEFAULT_REQUIRED_TESTS: tuple[str, ...] = ("parallel_http_live_body_test", "parallel_http_ownership_test")
# What -fsanitize= value a build directory of each sanitizer job must show.
SANITIZE_FLAG: dict[str, str] = {"asan": "address", "tsan": "thread", "ubsan": "undefined", "msan": "memory"}
# A failed CTest is "unrelated" (disclosed separately, procedure: "Disclose unrelated
# common-suite failures separately") only where the probes file named it, with why, before
# the run (`unrelated_tests`, recorded in the judge_inputs event); a test the coverage table
# maps to an F entry, or a required one, never is. Anything else that failed is a FAIL.
NONE_DECLARED: Mapping[str, str] = MappingProxyType({})
DECLARE = "the probes file's unrelated_tests"
# How records made before those declarations told unrelated failures apart: a name pattern.
# It is no longer accepted; it still says which old failures were judged relevant (FAIL).
LEGACY_RELEVANT_PATTERN = re.compile(
    r"parallel|slot|session|schedul|lifecycle|ownership|server|http|busy|registry|model_manag"
)


def coverage_map(overrides: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """CTest name -> the F entries it is evidence for: ctest_coverage.json's rows plus the
    probes file's `ctest_coverage` (both count: either names the test as F evidence)."""
    out: dict[str, list[str]] = {}
    for aid, need in CTEST_EVIDENCE.items():
        for test in [*need.tests, *(overrides or {}).get(aid, ())]:
            out.setdefault(str(test), [])
            if aid not in out[str(test)]:
                out[str(test)].append(aid)
    return out


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
    unrelated: Mapping[str, str] | None = NONE_DECLARED,
    mapped: Mapping[str, Sequence[str]] | None = None,
) -> list[Result]:
    """F6.ctest, F6.sanitizers and F6.stress from recorded runs (selected by label).

    `required` are CTests required besides the default-transport ones; `sanitizers` the jobs
    that were run; `sanitizers_unavailable` the platform reason per job not run (a required
    job without one stays PENDING); `unrelated` the tests declared unrelated before the run,
    each with its justification (None: a record made before such declarations); `mapped`
    each CTest that is evidence for an F entry (default: coverage_map())."""
    return [
        _assess_ctest(runs, required, transport_unchanged, unrelated, coverage_map() if mapped is None else mapped),
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
        "judged on the default-labelled run; FAIL on any failing test except one the probes file declared "
        "unrelated before the run (unrelated_tests, with a justification: disclosed as a limitation); a test "
        "ctest_coverage maps to an F entry, or a required one, is never unrelated; a record from before those "
        "declarations (unrelated by a name pattern) is PENDING naming the tests to declare; BLOCKED when parval "
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


def _classify_failures(
    failed: Sequence[str],
    required: Sequence[str],
    unrelated: Mapping[str, str] | None,
    mapped: Mapping[str, Sequence[str]],
) -> dict[str, dict[str, object]]:
    """Each failed test's standing: evidence for an F entry or required (never unrelated),
    declared unrelated (with why), not declared, or (a record from before declarations)
    outside the old name pattern only."""
    out: dict[str, dict[str, object]] = {}
    for name in failed:
        if name in mapped or name in required:
            why = [*mapped.get(name, ()), *(["F6.ctest (required)"] if name in required else [])]
            out[name] = {"standing": "evidence", "for": why}
        elif unrelated is None:
            legacy = LEGACY_RELEVANT_PATTERN.search(name) is not None
            out[name] = {"standing": "relevant_by_old_pattern" if legacy else "old_pattern_only"}
        elif name in unrelated:
            out[name] = {"standing": "declared_unrelated", "why": unrelated[name]}
        else:
            out[name] = {"standing": "undeclared"}
    return out


def _fail_reason(failing: Sequence[str], standing: Mapping[str, Mapping[str, object]]) -> str:
    """`failed: a, b` and, per kind, why none of them is an unrelated failure."""
    parts = [f"failed: {', '.join(failing)}"]
    for name in failing:
        s = standing[name]
        entries = s.get("for")
        if s["standing"] == "evidence" and isinstance(entries, list):
            parts.append(f"{name} is evidence for {', '.join(str(e) for e in entries)} (never unrelated)")
    undeclared = [n for n in failing if standing[n]["standing"] == "undeclared"]
    if undeclared:
        parts.append(f"{', '.join(undeclared)} not declared unrelated before the run (in {DECLARE})")
    return "; ".join(parts)


def _assess_ctest(
    runs: Sequence[CTestRun],
    extra: Sequence[str],
    transport_unchanged: str | None,
    unrelated: Mapping[str, str] | None,
    mapped: Mapping[str, Sequence[str]],
) -> Result:
    rid = "F6.ctest"
    required, notes = required_tests(extra, transport_unchanged)
    run, earlier = _latest(runs, DEFAULT_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no default CTest run recorded", limitations=notes)
    req_status = {name: (c.status if (c := run.case(name)) else "absent") for name in required}
    standing = _classify_failures([c.name for c in run.failures], required, unrelated, mapped)
    disclosed = [n for n, s in standing.items() if s["standing"] == "declared_unrelated"]
    old_only = [n for n, s in standing.items() if s["standing"] == "old_pattern_only"]
    failing = [n for n in standing if n not in disclosed and n not in old_only]
    evidence: dict[str, object] = {
        "run": run.to_json(),
        "required": req_status,
        "failures": standing,
        "unrelated_declared": None if unrelated is None else dict(unrelated),
    }
    if unrelated is None:
        evidence["old_pattern"] = LEGACY_RELEVANT_PATTERN.pattern
    limitations = [*notes, *_superseded_notes(DEFAULT_LABEL, earlier)]
    for name in disclosed:
        why = standing[name]["why"]
        limitations.append(
            f"unrelated common-suite failure, disclosed separately: {name} (declared before the run: {why})"
        )

    def result(status: Status, reason: str) -> Result:
        return Result(rid, status, reason, evidence, run.reproduction, limitations)

    if run.status == "not_run":
        return result(Status.PENDING, f"default CTest run not run: {run.reason}")
    if failing:
        return result(Status.FAIL, _fail_reason(failing, standing))
    if run.status == "failed" and not standing:
        return result(Status.FAIL, run.reason)
    if run.status == "error":
        return result(*_error_status(run))
    if (empty := _nothing_ran(run)) is not None:
        return result(Status.PENDING, f"default CTest run: {empty}")
    if old_only:
        return result(
            Status.PENDING,
            f"failed: {', '.join(old_only)}, which this record calls unrelated only by the name pattern "
            f"{LEGACY_RELEVANT_PATTERN.pattern!r}, no longer accepted: name each in {DECLARE} with why "
            "its failure is unrelated (or fix it) and run CTest again",
        )
    missing = [f"{n} ({s})" for n, s in req_status.items() if s != "passed"]
    if missing:
        return result(Status.PENDING, "required test(s) did not run: " + ", ".join(missing))
    req = f"; required: {', '.join(required)}" if required else ""
    if disclosed:
        passed = run.counts["passed"]
        return result(
            Status.PASS,
            f"{passed} test(s) passed; every failure was declared unrelated before the run: "
            f"{', '.join(disclosed)}{req}",
        )
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
