"""The closed list: every assertion the procedure requires of a model run, and where each is
judged (once per run, at each count, or from the framework record and X4).

"Missing applicable admission evidence remains pending"; "a group cannot pass by omitting a
failed assertion". Admission is computed over this list, never over the results that happen
to be present: an assertion without a result is PENDING in the verdict. Two places apply it,
and every verdict path goes through one of them:

- `parval.gates.admission_verdict.decide` (judging a run, `--rejudge`, merges, and so the
  catalogue's and the claims' merged verdicts) adds a PENDING entry for every gap
  (`gaps`) before any count verdict is computed;
- `closed_list_evidence`, applied by `parval.procedure.sealed_rules.as_read` to evidence
  read from a run directory (`parval report RUN`, the run table, a catalogue's or claims'
  single run), holds evidence that lacks an entry to no admitted count.

An assertion that does not apply to the recorded combination is not left out: its judge
says NOT_APPLICABLE with the implementation or platform reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from parval.procedure.assertion_ids import EXECUTION_PATH, FRAMEWORK_GATE, MODEL_GATE, QUALITY_RULES, group_of

if TYPE_CHECKING:
    from parval.rundir.evidence_types import Evidence

# Groups judged at each count (with Q5, judged at each count and once over the run).
PER_COUNT_GROUPS = ("M2", "M3", "M5")
PER_COUNT: tuple[str, ...] = (*(i for i in MODEL_GATE if group_of(i) in PER_COUNT_GROUPS), "Q5")
# Judged from the framework record (F1-F6) and the verify-protected result (X4).
FRAMEWORK: tuple[str, ...] = (*FRAMEWORK_GATE, "X4")
# Judged once over the run (Q6, the admission rule itself, is computed from the rest).
MODEL_LEVEL: tuple[str, ...] = (
    *(i for i in EXECUTION_PATH if i not in FRAMEWORK),
    *(i for i in MODEL_GATE if group_of(i) not in PER_COUNT_GROUPS),
    *QUALITY_RULES,
)

# A gap: (assertion ID, the count it is missing at; None for a once-per-run or framework ID).
Gap = tuple[str, "int | None"]


def gaps(
    model_level: Iterable[str],
    per_count: Mapping[int, Iterable[str]],
    framework: Iterable[str],
    *,
    admission_rule: bool = True,
) -> list[Gap]:
    """The required entries no result stands for: `model_level` and `framework` are the IDs
    of the once-per-run and the (unscoped) framework results, `per_count` each count's IDs.
    `admission_rule`: Q6 is required too (False while it is being computed)."""
    have = set(model_level)
    fw = set(framework)
    out: list[Gap] = [(i, None) for i in MODEL_LEVEL if i not in have and (admission_rule or i != "Q6")]
    out += [(i, None) for i in FRAMEWORK if i not in fw]
    for n, ids in sorted(per_count.items()):
        at = set(ids)
        out += [(i, n) for i in PER_COUNT if i not in at]
    return out


def describe(found: list[Gap], limit: int = 8) -> str:
    """'M4.targeted_unload, M2.exact@2, ...' (the first `limit`)."""
    names = [i if n is None else f"{i}@{n}" for i, n in found]
    return ", ".join(names[:limit]) + ("…" if len(names) > limit else "")


def excuses_mode_under_test(id_: str, status: str, mode: object) -> bool:
    """A NOT_APPLICABLE M6 entry for the mode the model runs in: a plan's choice never
    excuses the mode under test (parval.gates.m6_modes), so no result stands for it."""
    return status == "NOT_APPLICABLE" and isinstance(mode, str) and id_ == f"M6.{mode}"


def evidence_gaps(ev: Evidence) -> list[Gap]:
    """The closed list's gaps in stored evidence (its model, per-count and framework blocks;
    the `assertions` listing fills gaps in as PENDING and is not read). A NOT_APPLICABLE for
    the mode under test (`identity.mode`) is a gap too."""
    checks = ev.get("model_checks") or {}
    mode = (ev.get("identity") or {}).get("mode")
    level = [
        str(a.get("id"))
        for a in checks.get("model_level") or []
        if not excuses_mode_under_test(str(a.get("id")), str(a.get("status")), mode)
    ]
    per_count = {
        int(n): [str(a.get("id")) for a in (block or {}).get("assertions") or []]
        for n, block in (checks.get("per_count") or {}).items()
    }
    results = (ev.get("framework_checks") or {}).get("results") or []
    fw = [str(a.get("id")) for a in results if a.get("count") is None]
    return gaps(level, per_count, fw)


CLOSED_LIST = "required assertion(s) missing from the evidence"


def closed_list_evidence(ev: Evidence) -> Evidence:
    """`ev` unchanged when it holds a result for every entry of the closed list; otherwise a
    copy that admits no count (exit 3, or 1 when it recorded a FAIL) and names the missing
    entries; the verdict it was recorded with is kept under `closed_list.recorded_verdict`."""
    found = evidence_gaps(ev)
    if not found:
        return ev
    marked = ev.get("closed_list") or {}
    kept = marked.get("recorded_verdict")
    recorded: dict[str, object] = {**kept} if isinstance(kept, dict) else {**ev["verdict"]}
    failed = recorded.get("exit_code") == 1 or ev["verdict"].get("exit_code") == 1
    why = (
        f"{len(found)} {CLOSED_LIST} ({describe(found)}): PENDING, so no count is admitted "
        "(re-judge the run's events with `parval report RUN --rejudge`)"
    )
    line = str(recorded.get("line") or "") if failed else "evidence collected; validation pending"
    out = cast(dict[str, Any], dict(ev))
    out["verdict"] = {
        **ev["verdict"],
        "line": f"{line} — {why}" if not failed else f"{line}; {why}",
        "exit_code": 1 if failed else 3,
        "admitted_counts": [],
    }
    out["admission_ready"] = False
    out["all_plan_rules"] = False
    out["closed_list"] = {
        "missing": [{"id": i, "count": n} for i, n in found],
        "reason": why,
        "recorded_verdict": recorded,
    }
    return cast("Evidence", out)
