"""Whether evidence is current: made under the procedure version this parval implements.

"Label historical evidence with its procedure version ... Do not recalculate old reports as
passes merely by changing the plan." Evidence of any other procedure version (a run's
manifest, a framework record) is historical: it never admits a count and never exits 0,
whichever parval judges it and whichever path reads it (`parval report RUN`, `--rejudge`,
merges, `--catalogue`, `--claims`, a model run's framework record). This module is the one
place that decides it; every path asks `is_current` / `historical_evidence`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from parval import PROCEDURE_VERSION

if TYPE_CHECKING:
    from parval.rundir.evidence_types import Evidence

HISTORICAL = "HISTORICAL"


def is_current(version: object) -> bool:
    """True only for this parval's own procedure version (an unnamed one is not current)."""
    return version == PROCEDURE_VERSION


def historical_reason(version: object) -> str:
    return (
        f"made under procedure {version or 'unknown'}; this parval implements procedure "
        f"{PROCEDURE_VERSION}: historical evidence, never admission evidence (re-run it)"
    )


def historical_evidence(ev: Evidence) -> Evidence:
    """`ev` unchanged when current; otherwise a copy whose verdict is HISTORICAL: no count
    admitted, exit 3, or 1 when it recorded a FAIL (a failure is retained, never forgotten).
    The verdict the evidence had is kept under `historical.recorded_verdict`."""
    version = ev.get("procedure_version")
    if is_current(version):
        return ev
    marked = ev.get("historical") or {}
    # Applied again (a re-read), the verdict the evidence was judged with is kept.
    kept = marked.get("recorded_verdict")
    recorded: dict[str, object] = {**kept} if isinstance(kept, dict) else {**ev["verdict"]}
    failed = recorded.get("exit_code") == 1 or ev["verdict"].get("exit_code") == 1
    why = historical_reason(version)
    line = f"{HISTORICAL} evidence (procedure {version or 'unknown'}){' with FAIL retained' if failed else ''}: {why}"
    out = cast(dict[str, Any], dict(ev))
    out["verdict"] = {**ev["verdict"], "line": line, "exit_code": 1 if failed else 3, "admitted_counts": []}
    out["admission_ready"] = False
    out["all_plan_rules"] = False
    out["historical"] = {
        "procedure_version": version,
        "current_procedure_version": PROCEDURE_VERSION,
        "reason": why,
        "recorded_verdict": recorded,
    }
    return cast("Evidence", out)
