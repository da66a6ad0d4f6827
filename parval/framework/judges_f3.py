"""Judges of the F3 observations (parval.framework.probes_f3): a weight-load failure that
releases its lease and is retried, a registration retried after a missing checkpoint, an
invalid request alongside healthy work, and the half only the server's CTests can show.
Pure functions of the recorded facts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from parval.framework.checks import Verdict
from parval.framework.facts import Facts, flight, named
from parval.framework.observed import all_ok, outputs_match, waits
from parval.framework.observed import judge as register


def _error(status: int | None) -> bool:
    return status is not None and status >= 400


@register("f3.config_load_failure")
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


@register("f3.registration_retry")
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


@register("f3.invalid_alongside")
def invalid_alongside(f: Facts) -> Verdict:
    """An invalid request among healthy ones is rejected without holding a lease: the
    healthy ones and the next full wave answer 200 with exact outputs, counters drain."""
    v = Verdict()
    waits(v, f)
    healthy = named(f, *f["healthy"])
    bad = flight(f, "invalid")
    after = named(f, *f["after"])
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
    AUDIOCPP_SLOT_VALIDATION hooks where a state must be blocked) can establish it."""

    name: str
    pattern: re.Pattern[str]
    what: str


# (assertion, sub-check, CTest name pattern, what only that CTest shows)
_CTEST_ROWS = (
    (
        "F3.load_failures",
        "primary_injection",
        r"session_pool|parallel_lifecycle|model_slots|slot_validation",
        "primary, null-primary and partial-clone load-failure injection (contract T12/T17)",
    ),
    (
        "F3.ownership",
        "resource_lifetime",
        r"ownership|session_pool|parallel_lifecycle",
        "resource lifetime, cache and RNG privacy of sessions",
    ),
    (
        "F2.callback_lease",
        "stream_and_unstarted_callbacks",
        r"slot_validation|live_body|callback|stream",
        "stream callbacks and abandoned unstarted deferred callbacks (contract T14/T18)",
    ),
    (
        "F5.no_convoy",
        "blocked_metadata",
        r"slot_validation",
        "metadata blocked during bulk/status work (the AUDIOCPP_SLOT_VALIDATION hooks)",
    ),
    (
        "F5.retiring_residency",
        "blocked_teardown",
        r"slot_validation",
        "teardown blocked while a model retires (the AUDIOCPP_SLOT_VALIDATION hooks)",
    ),
)
CTEST_EVIDENCE: dict[str, CTestEvidence] = {
    aid: CTestEvidence(name, re.compile(pattern), what) for aid, name, pattern, what in _CTEST_ROWS
}


def ctest_cases(f: Facts) -> list[tuple[str, str]]:
    """The recorded cases of the default CTest run that match the recorded pattern."""
    pattern = re.compile(str(f["ctest_pattern"]))
    return [(str(c["name"]), str(c["status"])) for c in f.get("cases") or [] if pattern.search(str(c["name"]))]


@register("f3.ctest_evidence")
def ctest_evidence(f: Facts) -> Verdict:
    """The CTest-only half of an assertion, from the default CTest run: PENDING naming the
    tests when there was none (HTTP evidence alone never passes it), FAIL when a matching
    case failed or did not run, PASS only with a passing matching case."""
    v = Verdict()
    pattern = str(f["ctest_pattern"])
    needs = str(f["needs"])
    run = f.get("run")
    if not isinstance(run, dict) or run.get("status") == "not_run":
        why = run.get("reason") if isinstance(run, dict) else "no CTest run in this record"
        observed = [str(x) for x in f.get("observed_over_http") or []]
        v.pend(
            f"needs {needs}: CTest matching {pattern!r} ({why}); over HTTP "
            f"only {', '.join(observed) or 'nothing'} was observed"
        )
        return v
    cases = ctest_cases(f)
    ran = [name for name, status in cases if status == "passed"]
    failed = [name for name, status in cases if status in ("failed", "notrun")]
    if failed:
        v.require(False, f"failed: {', '.join(failed)}")
    elif not ran:
        v.pend(f"needs {needs}: no passing CTest matching {pattern!r} in the run")
    else:
        v.require(True, f"{len(ran)} CTest(s) passed: {', '.join(ran)}")
    return v
