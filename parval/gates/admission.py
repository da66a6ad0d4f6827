"""Combining assertions into groups, counts and the admission verdict (Q6, E3-E5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parval.procedure.catalogue import all_ids, group_of
from parval.status import Result, Status, combine, pending

PENDING_TEXT = "evidence collected; validation pending"


def count_verdicts(
    model_level: list[Result], per_count: dict[int, list[Result]], framework: list[Result]
) -> dict[int, Status]:
    # A framework entry scoped to one count (the record does not cover it) holds that count only.
    base = combine([*(r.status for r in model_level), *(r.status for r in framework if r.count is None)])
    return {
        n: combine([base, *(r.status for r in rs), *(r.status for r in framework if r.count == n)])
        for n, rs in per_count.items()
    }


def admitted_counts(counts: list[int], verdicts: dict[int, Status]) -> list[int]:
    """Only the consecutive validated counts from one upward; a count never run is never
    admitted, and a failure stops the run of admitted counts there."""
    admitted: list[int] = []
    for n in sorted(counts):
        if n != (admitted[-1] + 1 if admitted else 1) and not admitted and n != 1:
            break
        if verdicts.get(n) is not Status.PASS:
            break
        admitted.append(n)
    return admitted


def q6(counts: list[int], verdicts: dict[int, Status], admitted: list[int]) -> Result:
    per = {str(n): str(verdicts.get(n, Status.PENDING)) for n in sorted(counts)}
    gaps = [n for n in range(1, max(counts) + 1) if n not in counts]
    lim = [f"counts {gaps} were not tested and are never enabled"] if gaps else []
    if admitted:
        reason = f"admitted counts {admitted}: the consecutive validated counts from one upward"
    else:
        reason = "no count admitted: count 1 is not validated"
    return Result("Q6", Status.PASS, reason, {"per_count": per, "admitted": admitted}, limitations=lim)


def verdict_line(
    admission_ready: bool, admitted: list[int], statuses: list[Result], interrupted: bool
) -> tuple[str, int]:
    """The first line of every report and the exit code (0 / 1 / 3)."""
    fails = sorted({f"{r.id}" + (f"@{r.count}" if r.count else "") for r in statuses if r.status is Status.FAIL})
    adm = ", ".join(str(n) for n in admitted) or "none"
    if fails:
        return (
            f"NOT ADMITTED — {len(fails)} required assertion(s) FAILED ({', '.join(fails[:8])}"
            f"{'…' if len(fails) > 8 else ''}); validated counts: {adm}"
        ), 1
    if interrupted:
        return f"{PENDING_TEXT} (run interrupted); validated counts so far: {adm}", 3
    if admission_ready:
        return f"ADMITTED at counts {adm}", 0
    unresolved = sorted({r.id for r in statuses if r.status in (Status.PENDING, Status.BLOCKED, Status.UNSUPPORTED)})
    return (
        f"{PENDING_TEXT} — {len(unresolved)} assertion(s) unresolved "
        f"({', '.join(unresolved[:6])}{'…' if len(unresolved) > 6 else ''}); "
        f"validated counts: {adm}"
    ), 3


def group_statuses(results: list[Result]) -> dict[str, str]:
    groups: dict[str, list[Status]] = {}
    for r in results:
        groups.setdefault(group_of(r.id), []).append(r.status)
    return {g: str(combine(s)) for g, s in sorted(groups.items())}


def aggregate(results: list[Result]) -> Result:
    """One entry per assertion ID from its per-count entries (the worst status wins)."""
    first = results[0]
    if len(results) == 1:
        return first
    st = combine(r.status for r in results)
    worst = next((r for r in results if r.status is st), first)
    per = {str(r.count): {"status": str(r.status), "reason": r.reason} for r in results}
    reason = worst.reason if st is not Status.PASS else "; ".join(f"count {r.count}: {r.reason}" for r in results)
    if st is Status.NOT_APPLICABLE:
        reason = worst.reason
    lim = sorted({x for r in results for x in r.limitations})
    evidence = {**worst.evidence, "per_count": per}
    return Result(first.id, st, reason, evidence, worst.reproduction, lim, applicable=st is not Status.NOT_APPLICABLE)


def as_json(results: list[Result]) -> list[dict[str, Any]]:
    return [r.to_json() for r in results]


@dataclass
class Decision:
    """Everything the verdict of one run (or of merged runs) is made of."""

    verdicts: dict[int, Status]
    admitted: list[int]
    admission_ready: bool
    flat: list[Result]
    assertions: list[Result]
    line: str
    exit_code: int

    def verdict_json(self, line: str | None = None) -> dict[str, Any]:
        """The evidence's `verdict` block; `line` replaces the verdict line (merged runs say so)."""
        return {
            "line": self.line if line is None else line,
            "exit_code": self.exit_code,
            "admitted_counts": self.admitted,
            "counts": {str(n): str(v) for n, v in self.verdicts.items()},
        }


def not_run_counts(events: list[dict[str, Any]]) -> dict[int, str]:
    """Counts a `--fail-fast` campaign did not run, with the reason it recorded."""
    return {
        int(e["count"]): str(e.get("reason") or "not run (--fail-fast)")
        for e in events
        if e.get("kind") == "count_not_run" and e.get("count") is not None
    }


def mark_not_run(per_count: dict[int, list[Result]], not_run: dict[int, str]) -> None:
    """A count that was not run has no evidence: each of its entries is PENDING with the
    reason it was not run (never PASS, never a FAIL it did not show)."""
    for n, reason in not_run.items():
        ids = [r.id for r in per_count.get(n, [])]
        fresh = []
        for id_ in dict.fromkeys(ids):
            r = pending(id_, reason, not_run=True)
            r.count = n
            fresh.append(r)
        per_count[n] = fresh


def decide(
    counts: list[int],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    framework: list[Result],
    *,
    interrupted: bool,
    missing: str,
    not_run: dict[int, str] | None = None,
) -> Decision:
    """Count verdicts, admitted counts (Q6 appended to `model_level`), one entry per
    assertion ID (`missing` explains IDs nobody collected), the verdict line and exit code.
    `not_run`: counts a --fail-fast campaign left out, each with its reason."""
    if not_run:
        mark_not_run(per_count, not_run)
    verdicts = count_verdicts(model_level, per_count, framework)
    admitted = admitted_counts(counts, verdicts)
    model_level.append(q6(counts, verdicts, admitted))
    admission_ready = (
        not interrupted and admitted == counts and combine(r.status for r in model_level + framework) is Status.PASS
    )
    flat = model_level + [r for rs in per_count.values() for r in rs]
    by_id: dict[str, list[Result]] = {}
    for r in flat + framework:
        by_id.setdefault(r.id, []).append(r)
    assertions = [aggregate(by_id[i]) if i in by_id else pending(i, missing) for i in all_ids()]
    line, code = verdict_line(admission_ready, admitted, flat + framework, interrupted)
    return Decision(verdicts, admitted, admission_ready, flat, assertions, line, code)


def model_checks_block(
    flat: list[Result],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    sources: dict[int, list[str]] | None = None,
) -> dict[str, Any]:
    """The evidence's `model_checks` statuses: overall, by group, per count, model-level."""
    counts: dict[str, Any] = {}
    for n, rs in per_count.items():
        counts[str(n)] = {
            "status": str(combine(r.status for r in rs)),
            "groups": group_statuses(rs),
            "assertions": as_json(rs),
        }
        if sources is not None:
            counts[str(n)]["sources"] = sources[n]
    return {
        "status": str(combine(r.status for r in flat)),
        "groups": group_statuses(flat),
        "per_count": counts,
        "model_level": as_json(model_level),
    }
