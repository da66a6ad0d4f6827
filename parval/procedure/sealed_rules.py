"""Evidence judged under rules changed after its events is never admission evidence.

"Never loosen tolerance after a mismatch"; "do not invent a passing bound after seeing it".
A run's rules are sealed before its first event (parval.rundir.rules_seal names every sign
that they changed since). Its evidence then reads RULES CHANGED wherever it is read
(`parval report RUN`, `--rejudge`, merges, `--catalogue`, `--claims`): no count admitted,
exit 3, or 1 when it recorded a FAIL (a failure is retained, never forgotten). The
verdict it was judged with is kept under `rules_changed.recorded_verdict`; every output
format shows the reasons. A reseal that could not compare the rules with what was sealed
leaves them unknown: RULES UNKNOWN, the same in every respect. `as_read` applies this, the
procedure-version rule (parval.procedure.version) and the closed list of required assertions
(parval.procedure.closed_list) to evidence read from a run directory: the one call every
reader makes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from parval.procedure.closed_list import closed_list_evidence
from parval.procedure.version import historical_evidence
from parval.rundir.judgings import failed_before
from parval.rundir.rules_seal import UNKNOWN, rules_changes

if TYPE_CHECKING:
    from parval.rundir.evidence_types import Evidence

RULES_CHANGED = "RULES CHANGED"
RULES_UNKNOWN = "RULES UNKNOWN"


def rules_changed_evidence(ev: Evidence, reasons: list[str], *, failed_earlier: bool = False) -> Evidence:
    """`ev` unchanged when neither `reasons` nor the evidence itself names a change of
    rules; otherwise a copy whose verdict is RULES CHANGED, or RULES UNKNOWN when every
    reason is that the rules could not be compared (see the module docstring).
    `failed_earlier`: an earlier judging of the run recorded a FAIL, retained here."""
    marked = ev.get("rules_changed") or {}
    listed = marked.get("reasons")
    earlier = [str(r) for r in listed] if isinstance(listed, list) else []
    every = [*earlier, *(r for r in reasons if r not in earlier)]
    if not every:
        return ev
    # Applied again (a re-read), the verdict the evidence was judged with is kept.
    kept = marked.get("recorded_verdict")
    recorded: dict[str, object] = {**kept} if isinstance(kept, dict) else {**ev["verdict"]}
    failed = failed_earlier or recorded.get("exit_code") == 1 or ev["verdict"].get("exit_code") == 1
    retained = " with FAIL retained" if failed else ""
    if all(UNKNOWN in r for r in every):
        line = (
            f"{RULES_UNKNOWN}{retained}: the rules judged by cannot be shown to be those sealed before the "
            f"run's events, never admission evidence ({every[0]}); re-run it"
        )
    else:
        line = (
            f"{RULES_CHANGED} after the run's events{retained}: judged under rules "
            f"other than those sealed before its events, never admission evidence ({every[0]}); re-run it"
        )
    if ev.get("historical") and not marked:  # both: the procedure version leads, as everywhere
        line = f"{ev['verdict']['line']}; and {line}"
    out = cast(dict[str, Any], dict(ev))
    out["verdict"] = {**ev["verdict"], "line": line, "exit_code": 1 if failed else 3, "admitted_counts": []}
    out["admission_ready"] = False
    out["all_plan_rules"] = False
    out["rules_changed"] = {"reasons": every, "recorded_verdict": recorded}
    return cast("Evidence", out)


def as_read(run_dir: Path, ev: Evidence) -> Evidence:
    """The evidence of `run_dir` as every reader must present it: historical when of another
    procedure version, RULES CHANGED (or UNKNOWN) when its rules are not shown to be those
    sealed before its events, admitting nothing when it lacks a result the closed list requires."""
    read = historical_evidence(closed_list_evidence(ev))
    reasons = rules_changes(run_dir)
    if not reasons and not ev.get("rules_changed"):
        return read
    # A FAIL an earlier judging recorded stands under changed or unknown rules.
    return rules_changed_evidence(read, reasons, failed_earlier=failed_before(run_dir))
