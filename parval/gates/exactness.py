"""Judging recorded outputs against references: exact match, mismatches with both hashes,
errors and indeterminate outcomes (which never count towards a PASS). Outputs of attempts
parval set aside (abandoned, superseded) are judged too, but only their failures count."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from parval.jsonread import contains, get
from parval.outputs.compare import within_tolerance
from parval.rundir.event_index import Records, derived_ref
from parval.rundir.event_types import RequestEvent
from parval.rundir.mismatch_bound import MismatchBound, bound, overlapped_events


@dataclass
class Tally:
    compared: int = 0
    exact: int = 0
    tolerated: int = 0
    mismatches: list[dict[str, object]] = field(default_factory=list)
    errors: list[dict[str, object]] = field(default_factory=list)
    indeterminate: list[dict[str, object]] = field(default_factory=list)
    malformed: list[dict[str, object]] = field(default_factory=list)
    # Read back by `problem` as recorded (its history's membership test is the event's own).
    no_reference: list[dict[str, object]] = field(default_factory=list)
    # Refused for memory (503 insufficient_memory): a resource result, never an output one.
    resource: list[dict[str, object]] = field(default_factory=list)
    # Outputs whose recorded reference label disagrees with the reference their history
    # calls for (records.derived_ref): compared with the derived one, never a PASS.
    relabelled: list[dict[str, object]] = field(default_factory=list)
    # Outputs produced while another request of the model was executing (compared, or a
    # set-aside attempt's mismatch), and how many of them differed: the mismatch bound.
    overlapped: int = 0
    overlapped_differed: int = 0

    def merge(self, other: Tally) -> None:
        self.compared += other.compared
        self.overlapped += other.overlapped
        self.overlapped_differed += other.overlapped_differed
        self.exact += other.exact
        self.tolerated += other.tolerated
        for name in ("mismatches", "errors", "indeterminate", "malformed", "no_reference", "resource", "relabelled"):
            getattr(self, name).extend(getattr(other, name))

    @property
    def clean(self) -> bool:
        return self.compared > 0 and not (
            self.mismatches
            or self.errors
            or self.indeterminate
            or self.malformed
            or self.no_reference
            or self.resource
            or self.relabelled
        )

    @property
    def all_within_declared(self) -> bool:
        """Every mismatch lies within the declared tolerance (which was not applied)."""
        return bool(self.mismatches) and all(m.get("within_declared_tolerance") for m in self.mismatches)

    def bound(self) -> MismatchBound:
        """How much this tally rules out (parval.rundir.mismatch_bound)."""
        return bound(self.overlapped, self.overlapped_differed)

    def summary(self) -> dict[str, object]:
        return {
            "compared": self.compared,
            "exact": self.exact,
            "within_declared_tolerance": self.tolerated,
            "mismatches": self.mismatches[:50],
            "mismatch_count": len(self.mismatches),
            "errors": self.errors[:20],
            "error_count": len(self.errors),
            "indeterminate": self.indeterminate[:20],
            "indeterminate_count": len(self.indeterminate),
            "malformed": self.malformed[:20],
            "malformed_count": len(self.malformed),
            "no_reference": self.no_reference[:20],
            "no_reference_count": len(self.no_reference),
            "refused_for_memory": self.resource[:20],
            "relabelled": self.relabelled[:20],
            "relabelled_count": len(self.relabelled),
        }

    def problem(self) -> str:
        parts = []
        if self.mismatches:
            parts.append(f"{len(self.mismatches)} mismatch(es)")
        if self.errors:
            parts.append(f"{len(self.errors)} request error(s)")
        if self.malformed:
            parts.append(f"{len(self.malformed)} malformed repl(ies)")
        if self.indeterminate:
            parts.append(f"{len(self.indeterminate)} indeterminate outcome(s)")
        if self.no_reference:
            text = f"{len(self.no_reference)} output(s) without a same-history reference"
            unseen = [m for m in self.no_reference if m.get("history") is None or contains(m.get("history") or [], "?")]
            if unseen:
                # No replay can reproduce a slot history nobody saw: say why, and what helps.
                text += (
                    f" ({len(unseen)} whose slot history was not observed: the server's admission order was not "
                    "seen, which a busy machine can cause; run again with fewer other processes)"
                )
            parts.append(text)
        if self.resource:
            parts.append(
                f"{len(self.resource)} request(s) refused for memory (503 insufficient_memory): a VRAM failure is "
                "blocked evidence, never a reason to lower quality settings"
            )
        aside = [m for m in (*self.mismatches, *self.errors, *self.malformed) if "set_aside" in m]
        if aside:
            attempts = sorted({f"{m['run']} attempt {m.get('attempt')} ({m['set_aside']})" for m in aside})
            parts.append(f"{len(aside)} of these in attempt(s) parval set aside: {', '.join(attempts[:5])}")
        if self.relabelled:
            first = self.relabelled[0]
            parts.append(
                f"{len(self.relabelled)} output(s) whose recorded reference label disagrees with the reference their "
                f"history calls for (first: {first['run']} {first['phase']} {first['req']} labelled "
                f"{first['label']}, ran as {first['ref']}); compared with the derived reference, not shown against "
                "the labelled one"
            )
        if self.compared == 0:
            parts.append("nothing compared")
        return ", ".join(parts)


def _where(e: Mapping[str, object]) -> dict[str, object]:
    return {
        "run": e["run"],
        "attempt": e.get("attempt"),
        "phase": e["phase"],
        "wave": e["wave"],
        "req": e["req"],
        "slot": e.get("slot"),
        "history": e.get("history"),
        "artifact": e.get("artifact"),
    }


def failure_key(m: object) -> tuple[object, ...]:
    """Identity of one recorded failure (the same request judged by two assertions)."""
    return tuple(get(m, key) for key in ("run", "attempt", "phase", "wave", "req", "slot", "artifact"))


def set_aside_failures(rec: Records, judged: Tally) -> Tally:
    """The failures of set-aside attempts' requests (as `judge_requests` judged them): only
    mismatches, request errors and malformed replies are kept, each marked with its attempt
    and why it was set aside. Nothing here counts as compared or exact."""
    out = Tally()
    for name in ("mismatches", "errors", "malformed"):
        for m in getattr(judged, name):
            getattr(out, name).append({**m, "set_aside": rec.set_aside_status(m["run"], m.get("attempt"))})
    # A set-aside output that differed was produced all the same: it counts in the bound.
    out.overlapped = out.overlapped_differed = sum(1 for m in out.mismatches if m.get("overlapped"))
    return out


MEMORY_REFUSAL = "insufficient_memory"


def refused_for_memory(e: RequestEvent, run_dir: Path | None) -> bool:
    """Did the server refuse this request with its memory guard (503, error type
    `insufficient_memory`, as the API reference documents)? Read from the reply summary, or
    from the raw reply body for runs that did not record the error type."""
    reply = e.get("reply") or {}
    if reply.get("status") != 503:
        return False
    if "error_type" in reply:
        return reply.get("error_type") == MEMORY_REFUSAL
    if run_dir is None or not e.get("artifact"):
        return False
    try:
        body = json.loads((run_dir / "artifacts" / f"{e['artifact']}.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and err.get("type") == MEMORY_REFUSAL


def judge_requests(
    rec: Records,
    events: list[RequestEvent],
    *,
    run_dir: Path | None = None,
    tolerance: int | None = None,
    volatile: list[str] | None = None,
    declared_tolerance: int | None = None,
    cache_sensitive: bool = False,
    overlap: bool = False,
) -> Tally:
    """Each request against its reference. `tolerance`: the declared tolerance where it
    applies (serial repeats varied within it); `declared_tolerance`: the plan's, which a
    mismatch is checked against for the record when it does not apply. Which reference
    applies is derived from each request's recorded history (records.derived_ref), not
    from the runner's `ref` label; a label that disagrees is recorded in `relabelled`."""
    t = Tally()
    # `overlap`: count the outputs produced beside another request (the bound's n)
    beside = overlapped_events(events, rec.slots()) if overlap else set()
    for e in events:
        reply = e.get("reply") or {}
        outcome = reply.get("outcome")
        if outcome in ("indeterminate", "connect_error", "oversize"):
            t.indeterminate.append({**_where(e), "outcome": outcome, "error": reply.get("error")})
            continue
        if outcome != "ok":
            entry = {**_where(e), "status": reply.get("status"), "error": reply.get("error")}
            (t.resource if refused_for_memory(e, run_dir) else t.errors).append(entry)
            continue
        out = e.get("output") or {}
        if not out.get("valid"):
            t.malformed.append({**_where(e), "problem": out.get("problem", "no output recorded")})
            continue
        key = derived_ref(e, cache_sensitive)
        if e.get("ref") != key:
            t.relabelled.append({**_where(e), "label": e.get("ref"), "ref": key})
        ref = rec.refs.get(key) if key else None
        if ref is None:
            t.no_reference.append({**_where(e), "ref": key})
            continue
        t.compared += 1
        overlapped = id(e) in beside
        t.overlapped += overlapped
        ref_canon = (ref.get("output") or {}).get("canon")
        if out["canon"] == ref_canon:
            t.exact += 1
            continue
        diff: float | None = None
        found: dict[str, object] | None = None
        check = tolerance if tolerance is not None else declared_tolerance
        if check is not None:
            found = tolerance_check(run_dir, e, ref, volatile or [], check)
            measured = found.get("max_abs_sample_diff")
            diff = measured if isinstance(measured, int | float) else None
            if found.get("covered") and tolerance is not None:
                t.tolerated += 1
                continue
        m = {
            **_where(e),
            "ref": key,
            "got_canon": out["canon"],
            "ref_canon": ref_canon,
            "ref_artifact": ref.get("artifact"),
            "got_audio": out.get("audio"),
            "ref_audio": (ref.get("output") or {}).get("audio"),
            "max_abs_sample_diff": diff,
        }
        if overlap:
            m["overlapped"] = overlapped
        if found is not None:
            m["tolerance_check"] = found.get("why", "")
            if tolerance is None and found.get("covered"):
                m["within_declared_tolerance"] = True
        t.overlapped_differed += overlapped
        t.mismatches.append(m)
    return t


def tolerance_check(
    run_dir: Path | None, e: RequestEvent, ref: RequestEvent, volatile: list[str], tolerance: int
) -> dict[str, object]:
    """Does the declared tolerance cover the difference between two recorded requests'
    raw replies? {"covered": bool, "why"/"max_abs_sample_diff": ...}"""
    if run_dir is None or not e.get("artifact") or not ref.get("artifact"):
        return {"covered": False, "why": "raw replies not available to apply the tolerance"}
    try:
        a = (run_dir / "artifacts" / f"{e['artifact']}.json").read_bytes()
        b = (run_dir / "artifacts" / f"{ref['artifact']}.json").read_bytes()
    except OSError as exc:
        return {"covered": False, "why": f"raw reply unreadable: {exc}"}
    covered, found = within_tolerance(a, b, volatile, tolerance)
    return {"covered": covered, **found}
