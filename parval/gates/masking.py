"""How far an output comparison can be trusted, applied after every gate has judged: a
comparator never shown able to fail proves nothing by a PASS (a difference it reported
shows it can fail), and a baseline whose serial repeats vary cannot show parity.
Lifecycle and request-error FAILs stand either way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from parval.gates.serial import SerialVerdict
from parval.outputs.compare import within_tolerance
from parval.outputs.planted import plant_beyond
from parval.rundir.event_index import Records
from parval.rundir.event_types import NegativeControlEvent
from parval.status import Result, Status

# The verdicts that rest on output comparison: the ones masked, and the ones Q5 reads.
COMPARISON_IDS = {
    "M1.legacy_parity",
    "M1.cap1_parity",
    "M2.exact",
    "M2.unload_reload",
    "M2.serial_reuse",
    "M3.variation",
    "M3.reversed",
    "M3.history",
    "M4.invalid_alongside",
    "M4.load_failure_retry",
    "M4.targeted_unload",
    "M4.all_unload",
    "M4.unload_during_first_load",
    "M6.streaming",
    "M6.batch",
    "Q4",
    "Q5",
}


UNCAUGHT_LIMITATION = (
    "negative control not caught (or not run): the comparator was not shown to see every "
    "difference, so more outputs may differ than recorded"
)


def negative_control_caught(rec: Records, run_dir: Path | None = None, tolerance: int | None = None) -> bool:
    """Did the last planted mismatch (the negative control) get caught? With a tolerance in
    force, the planted sample change beyond it must not be covered by it either: the
    tolerance path is shown able to fail too (judged again from the recorded artifacts)."""
    neg = rec.kind("negative_control")
    if not neg or neg[-1].get("caught") is not True:
        return False
    if tolerance is None:
        return True
    return tolerance_path_caught(neg[-1], run_dir, tolerance)


def tolerance_path_caught(neg: NegativeControlEvent, run_dir: Path | None, tolerance: int) -> bool:
    """The control's reply with one sample moved by one LSB more than the tolerance must not
    be within the tolerance of the original (False when that cannot be shown)."""
    source = (neg.get("source") or {}).get("artifact")
    if run_dir is None or not source:
        return False
    try:
        body = (run_dir / "artifacts" / f"{source}.json").read_bytes()
        beyond = plant_beyond(body, tolerance)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # a body that is not an object
        return False
    if beyond is None:
        return False
    covered, _ = within_tolerance(beyond, body, [], tolerance)
    return not covered


def output_failure(r: Result) -> bool:
    """Does this FAIL rest on output comparison only? Unmarked FAILs are lifecycle."""
    return r.evidence.get("failure_kind") == "output"


def mask_comparisons(results: list[Result], caught: bool, serial: SerialVerdict) -> list[Result]:
    """A comparator that cannot fail proves nothing by agreeing: without a caught planted
    mismatch the comparison verdicts other than FAIL are BLOCKED. An output FAIL stands
    with its reason: the difference it reports shows the comparator able to fail, all the
    control would show (and a mismatch stays failed, Q5), whether the control was lost to
    an interrupted campaign or ran and was missed; it gains a limitation only (more outputs
    may differ than recorded). Serial variation makes them "parity unverified": a PASS is
    not given while serial variation is not shown absent (or within a declared tolerance),
    and an output FAIL is masked only where variation was measured and seen (a mismatch
    against an unmeasured baseline stands).
    Only verdicts that rest on output comparison are masked: a FAIL on lifecycle evidence
    (a lease left held, barging, an unload that did not wait, counters not drained) or on
    request errors stands whatever the outputs do.
    Returns the results in order, each changed one a new Result (the judges' own are left
    as they were)."""
    return [mask_comparison(r, caught, serial) for r in results]


def mask_comparison(r: Result, caught: bool, serial: SerialVerdict) -> Result:
    """One result as `mask_comparisons` leaves it: `r` itself, or a new masked Result."""
    if r.id not in COMPARISON_IDS or r.status is Status.NOT_APPLICABLE:
        return r
    if r.status is Status.FAIL and not output_failure(r):
        return r
    if not caught and r.status is Status.FAIL:
        # A recorded difference needs no control; serial variation may still explain it.
        r = replace(r, limitations=(*r.limitations, UNCAUGHT_LIMITATION))
    elif not caught:
        return replace(
            r,
            status=Status.BLOCKED,
            reason="negative control not caught (or not run): the comparator was not shown able to fail; " + r.reason,
            evidence={**r.evidence, "status_before_negative_control": str(r.status)},
        )
    varies = serial.varies and serial.status is not Status.PASS
    if serial.status is not Status.PASS and (r.status is Status.PASS or (r.status is Status.FAIL and varies)):
        return replace(
            r,
            status=Status.BLOCKED if serial.status is Status.BLOCKED else Status.PENDING,
            reason=f"parity unverified ({serial.reason}); " + r.reason,
            evidence={**r.evidence, "status_before_serial_check": str(r.status)},
        )
    return r
