"""Judges of the F3 observations (parval.framework.probes_f3): a weight-load failure that
releases its lease and is retried, a registration retried after a missing checkpoint, an
invalid request alongside healthy work, and the half only the server's CTests can show.
Pure functions of the recorded facts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from parval.framework.observed import Facts, Judge, Verdict, all_ok, flight, listed, named, outputs_match, waits
from parval.procedure.entry import CTEST_PART, Entry, framework_entry


def _error(status: int | None) -> bool:
    return status is not None and status >= 400


def config_load_failure(f: Facts) -> Verdict:
    """A config model whose first load fails: the request answers an error, the lease is
    released, nothing is published, and a later request retries the load (not a stuck 503)."""
    v = Verdict()
    first = flight(f, "load-fails")
    again = flight(f, "load-fails-again")
    v.require(_error(first.status), f"a request whose first load fails answers an error (got {first.status})")
    v.require(bool(f["drained_first"]), "the failed load released its lease")
    v.require(f.get("loaded_after") is False, "nothing was published")
    v.require(
        _error(again.status) and again.status != 503,
        f"a later request retries the load (an error again, not a stuck 503; got {again.status})",
    )
    v.require(bool(f["drained_again"]), "the retry released its lease too")
    return v


def registration_retry(f: Facts) -> Verdict:
    """A registration with a missing checkpoint fails but stays registered, unloaded and
    lease-free; re-registering the good checkpoint loads and serves its own reference."""
    v = Verdict()
    fail = flight(f, "register-missing")
    v.require(_error(fail.status), f"registration with a missing checkpoint fails (got {fail.status})")
    entry = f.get("entry")
    v.require(
        isinstance(entry, dict) and entry.get("loaded") is False and not entry.get("active_slots"),
        "the entry stays registered, unloaded, with no lease held",
    )
    good = flight(f, "register-good")
    v.require(good.status == 200, f"the retry with the good checkpoint loads (got {good.status})")
    out = named(f, "after-retry")
    all_ok(v, out, "a request after the retry")
    outputs_match(v, f, "base", out, "after the retry", phase="cold")
    return v


def invalid_alongside(f: Facts) -> Verdict:
    """An invalid request among healthy ones is rejected without holding a lease: the
    healthy ones and the next full wave answer 200 with exact outputs, counters drain."""
    v = Verdict()
    waits(v, f)
    healthy = listed(f, "healthy")
    bad = flight(f, "invalid")
    after = listed(f, "after")
    v.require(bool(f["settled"]), "everything completed within bound")
    v.require(_error(bad.status), f"the invalid request is rejected (got {bad.status})")
    all_ok(v, healthy, "healthy requests")
    outputs_match(v, f, "base", healthy, "healthy requests")
    v.require(bool(f["drained"]), "no lease stays held")
    v.require(bool(f["after_settled"]), "the next requests completed")
    all_ok(v, after, "the next requests")
    outputs_match(v, f, "base", after, "the next requests")
    return v


# -- what only the server's CTests can show --------------------------------------------------


@dataclass(frozen=True)
class CTestEvidence:
    """Evidence a black box cannot give: only the server's own tests (with the
    AUDIOCPP_SLOT_VALIDATION hooks where a state must be blocked) can establish it. `tests`
    are exact CTest names, reviewed in ctest_coverage.json (with why each one counts)."""

    name: str
    tests: tuple[str, ...]
    what: str
    why: str


def _coverage() -> dict[str, CTestEvidence]:
    raw = json.loads(resources.files("parval.framework").joinpath("ctest_coverage.json").read_text("utf-8"))
    return {
        str(r["assertion"]): CTestEvidence(
            str(r["sub_check"]), tuple(map(str, r["tests"])), str(r["what"]), str(r["why"])
        )
        for r in raw["rows"]
    }


# assertion -> the CTest-only sub-check and the tests that cover it (ctest_coverage.json).
CTEST_EVIDENCE: dict[str, CTestEvidence] = _coverage()


def ctest_evidence(f: Facts) -> Verdict:
    """The CTest-only half of an assertion, from the default CTest run: PASS only when every
    test the coverage table names for it ran and passed; FAIL when one failed or could not
    run; PENDING naming what is missing otherwise (HTTP evidence alone never passes it)."""
    v = Verdict()
    tests = [str(t) for t in f["tests"]]
    if not tests:
        raise KeyError("the coverage table names no CTest for this sub-check")
    needs = str(f["needs"])
    run = f.get("run")
    observed = [str(x) for x in f.get("observed_over_http") or []]
    if not isinstance(run, dict) or run.get("status") == "not_run":
        why = run.get("reason") if isinstance(run, dict) else "no CTest run in this record"
        v.pend(
            f"needs {needs}: CTest(s) {', '.join(tests)} ({why}); over HTTP "
            f"only {', '.join(observed) or 'nothing'} was observed"
        )
        return v
    if run.get("error_kind") == "parval_timeout":
        v.block(f"the CTest run was stopped by parval before it finished ({run.get('reason')})")
        return v
    status = {str(c["name"]): str(c["status"]) for c in f["cases"]}
    failed = [t for t in tests if status.get(t) in ("failed", "notrun")]
    missing = [f"{t} ({status.get(t, 'absent')})" for t in tests if status.get(t) != "passed"]
    if failed:
        v.require(False, f"failed: {', '.join(failed)}")
    elif missing:
        v.pend(f"needs {needs}: CTest(s) {', '.join(missing)} did not pass in the run")
    else:
        v.require(True, f"{len(tests)} CTest(s) passed: {', '.join(tests)}")
    return v


JUDGES: dict[str, Judge] = {
    "f3.config_load_failure": config_load_failure,
    "f3.registration_retry": registration_retry,
    "f3.invalid_alongside": invalid_alongside,
    "f3.ctest_evidence": ctest_evidence,
}

# The registry entries of the F3 assertions, each combined from the sub-checks of the judges it names.
ENTRIES: tuple[Entry, ...] = (
    framework_entry("F3.load_failures", "f3.config_load_failure", "f3.registration_retry", CTEST_PART),
    framework_entry(
        "F3.ownership",
        "f3.config_load_failure",
        "f3.invalid_alongside",
        CTEST_PART,
        notes=("PENDING for invalid_alongside when the plan names no requests.invalid",),
    ),
)
