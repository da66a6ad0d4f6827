"""Combining assertions into groups, counts and the admission verdict (Q6, E3-E5)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from parval.jsonread import as_int
from parval.plan.waves import skipped_counts
from parval.procedure import judge_shape as shape
from parval.procedure.assertion_ids import all_ids, group_of
from parval.procedure.closed_list import FRAMEWORK as CLOSED_FRAMEWORK
from parval.procedure.closed_list import excuses_mode_under_test, gaps
from parval.procedure.entry import PLAN, Declaration, Entry
from parval.rundir.cannot_start import cause as cannot_start_cause
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
    """Only the consecutive validated counts from one upward: admission stops at the first
    count that was not validated, tested or not (a count the plan skips is never enabled,
    so nothing above it is admitted either)."""
    admitted: list[int] = []
    tested = set(counts)
    for n in range(1, max(counts, default=0) + 1):
        if n not in tested or verdicts.get(n) is not Status.PASS:
            break
        admitted.append(n)
    return admitted


def largest_consecutive(counts: list[int], planned: list[int], validated: Callable[[int], bool]) -> int:
    """The largest of `counts` (one shard's, ascending) reached without passing a count that
    was not validated or that the plan never tests; the smallest when none is. A count that
    another shard runs is no gap. Used to place the once-per-model probes (M4, M6) at the
    largest count that can still be admitted."""
    best = min(counts)
    tested = set(planned)
    for n in counts:
        if (n > min(tested) and n - 1 not in tested) or not validated(n):
            break
        best = n
    return best


def _ten_waves_short(rs: list[Result]) -> Result | None:
    """The count's M3.ten_waves entry when the count ran fewer than ten mixed waves per
    start (it cannot be the largest admitted count), else None."""
    return next(
        (r for r in rs if r.id == "M3.ten_waves" and r.status is Status.NOT_APPLICABLE and r.evidence.get("short")),
        None,
    )


def trim_to_ten_waves(
    counts: list[int], verdicts: dict[int, Status], per_count: dict[int, list[Result]]
) -> tuple[list[int], list[int]]:
    """(admitted counts, counts dropped from the top): the procedure wants ten mixed warm
    waves in each start at the largest *admitted* count, so while the top of the admitted
    run of counts ran fewer, its M3.ten_waves becomes PENDING (it is now required there)
    and admission ends below it."""
    dropped: list[int] = []
    while True:
        admitted = admitted_counts(counts, verdicts)
        if not admitted or (short := _ten_waves_short(per_count.get(admitted[-1], []))) is None:
            return admitted, dropped
        top = admitted[-1]
        required = Result(
            "M3.ten_waves",
            Status.PENDING,
            f"count {top} would be the largest admitted count ({_why_not_above(counts, verdicts, top)}), but it "
            f"ran {short.evidence.get('planned')} mixed warm wave(s) per start: ten are required at the largest "
            f"admitted count (run count {top} again with waves.mixed of ten or more, or leave waves.mixed unset)",
            {**short.evidence, "required_as_largest": True},
            count=top,
        )
        per_count[top] = [required if r is short else r for r in per_count[top]]
        verdicts[top] = combine([verdicts[top], Status.PENDING])
        dropped.append(top)


# The evidence key of a passing M4 result naming the count its recovery start ran at.
RECOVERY_COUNT = "recovery_count"


def trim_to_recovery(
    admitted: list[int], verdicts: dict[int, Status], per_count: dict[int, list[Result]], model_level: list[Result]
) -> list[int]:
    """Admitted counts no larger than the count M4's recovery start ran at: "once per
    model/backend at the largest admitted count". A count above it (another shard or run
    validated it) has no recovery evidence: its M4 entries are PENDING there, and admission
    ends below it."""
    ran = [
        as_int(r.evidence[RECOVERY_COUNT])
        for r in model_level
        if r.id.startswith("M4.") and RECOVERY_COUNT in r.evidence
    ]
    if not ran or not admitted:
        return admitted
    at = min(ran)
    for n in [c for c in admitted if c > at]:
        why = (
            f"M4 ran at count {at} (its recovery start), below count {n}: recovery evidence is required at the "
            f"largest admitted count (run the recovery start at count {n})"
            if at >= 1
            else "the recovery start (M4) names no count it ran at: recovery evidence at the largest admitted "
            "count is not shown"
        )
        ids = sorted({r.id for r in model_level if RECOVERY_COUNT in r.evidence})
        per_count[n] = [*per_count.get(n, []), *(Result(i, Status.PENDING, why, {"ran_at": at}, count=n) for i in ids)]
        verdicts[n] = combine([verdicts.get(n, Status.PENDING), Status.PENDING])
    return [c for c in admitted if c <= at]


def _why_not_above(counts: list[int], verdicts: dict[int, Status], n: int) -> str:
    above = n + 1
    if above not in counts:
        return f"count {above} was not tested" if above <= max(counts) else "the largest count"
    return f"count {above} is {verdicts.get(above, Status.PENDING)}"


@shape.judge(
    "Q6",
    Declaration(
        "run",
        (
            "the verdict of every count (its M2, M3, M5 and Q5 results, with the model-level and framework results)",
            PLAN + ": counts",
        ),
        notes=(
            "decided in parval.gates.admission_verdict:decide over the closed list of required assertions "
            "(parval.procedure.closed_list: one without a result is PENDING in the verdict): admission stops at "
            "the first count not validated, "
            "tested or not, and ends below a count that would be the largest admitted without its ten mixed "
            "waves; PASS when what is reported is what the rule gives; PENDING when the plan skips a count "
            "(nothing above it can be admitted); with no count admitted, count 1's status",
        ),
    ),
)
def q6(counts: list[int], verdicts: dict[int, Status], admitted: list[int]) -> Result:
    """Q6: what the run reports as admitted is what the rule gives (the consecutive
    validated counts from one upward, never an untested count), and the plan's every count
    is admitted. No count admitted is a verdict of its own: count 1's."""
    per = {str(n): str(verdicts.get(n, Status.PENDING)) for n in sorted(counts)}
    gaps = skipped_counts(counts)
    rule = admitted_counts(counts, verdicts)
    lim = [f"counts {gaps} were not tested and are never enabled"] if gaps else []
    ev: dict[str, object] = {"per_count": per, "admitted": admitted, "rule_admits": rule, "never_tested": gaps}
    not_admitted = [n for n in sorted(counts) if n not in admitted]
    if admitted != rule:
        return shape.pending("Q6", f"the reported admission {admitted} is not what the rule gives ({rule})", **ev)
    if not admitted:
        first = verdicts.get(1, Status.PENDING) if 1 in counts else Status.PENDING
        why = "count 1 was not tested" if 1 not in counts else f"count 1 is {first}"
        reason = f"no count admitted: {why}"
        if first is Status.FAIL:
            return shape.failed("Q6", reason, violation={"count 1": str(first)}, **ev)
        status = first if first in (Status.BLOCKED, Status.UNSUPPORTED) else Status.PENDING
        return Result("Q6", status, reason, ev, limitations=lim)
    if gaps:
        above = [n for n in counts if n > min(gaps)]
        r = shape.pending(
            "Q6",
            f"admitted counts {admitted}; {', '.join(map(str, above))} can never be admitted by this plan: count(s) "
            f"{', '.join(map(str, gaps))} never tested (add them to counts)",
            **ev,
        )
        return replace(r, limitations=lim)
    reason = f"admitted counts {admitted}: the consecutive validated counts from one upward"
    if not_admitted:
        # the plan's own claim (its counts) is not admitted whole: not a PASS
        r = shape.pending(
            "Q6", reason + "; not admitted: " + ", ".join(f"{n} ({per[str(n)]})" for n in not_admitted), **ev
        )
        return replace(r, limitations=lim)
    r = shape.passed("Q6", reason, {"admitted counts": admitted, "count verdicts": per}, **ev)
    return replace(r, limitations=lim)


# The registry entry the judge above declares.
ENTRIES: tuple[Entry, ...] = shape.entries_of({"Q6": q6})


def verdict_line(
    admission_ready: bool,
    admitted: list[int],
    statuses: list[Result],
    interrupted: bool,
    cannot_start: Sequence[str] = (),
) -> tuple[str, int]:
    """The first line of every report and the exit code (0 / 1 / 3). `cannot_start`: the
    causes, in plain words, of executables whose first start exited before it was ready
    (rundir/cannot_start.py): they lead the line, whatever else it says."""
    fails = sorted({f"{r.id}" + (f"@{r.count}" if r.count else "") for r in statuses if r.status is Status.FAIL})
    adm = ", ".join(str(n) for n in admitted) or "none"
    cause = "".join(f"{c}; " for c in cannot_start)
    if fails:
        return (
            f"NOT ADMITTED — {cause}{len(fails)} required assertion(s) FAILED ({', '.join(fails[:8])}"
            f"{'…' if len(fails) > 8 else ''}); validated counts: {adm}"
        ), 1
    if interrupted:
        return f"{PENDING_TEXT} (run interrupted); {cause}validated counts so far: {adm}", 3
    if admission_ready:
        return f"ADMITTED at counts {adm}", 0
    unresolved = sorted({r.id for r in statuses if r.status in (Status.PENDING, Status.BLOCKED, Status.UNSUPPORTED)})
    if cause:
        return (
            f"BLOCKED — {cause}{len(unresolved)} assertion(s) unresolved "
            f"({', '.join(unresolved[:6])}{'…' if len(unresolved) > 6 else ''}); validated counts: {adm}"
        ), 3
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
    reason = worst.reason if st is not Status.PASS else "; ".join(_where_judged(r) for r in results)
    if st is Status.NOT_APPLICABLE:
        reason = worst.reason
    lim = sorted({x for r in results for x in r.limitations})
    evidence = {**worst.evidence, "per_count": per}
    return Result(first.id, st, reason, evidence, worst.reproduction, lim, applicable=st is not Status.NOT_APPLICABLE)


def _where_judged(r: Result) -> str:
    """`count 2: <reason>` (`model level: ...` for an entry judged once), unless the reason
    already says where it was judged."""
    where = "model level" if r.count is None else f"count {r.count}"
    return r.reason if r.reason.startswith(where) else f"{where}: {r.reason}"


def as_json(results: list[Result]) -> list[dict[str, object]]:
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
    # executable_cannot_start events (rundir/cannot_start.py): shown under the verdict line
    cannot_start: list[Mapping[str, object]] = field(default_factory=list)

    def verdict_json(self, line: str | None = None) -> dict[str, object]:
        """The evidence's `verdict` block; `line` replaces the verdict line (merged runs say so)."""
        out: dict[str, object] = {
            "line": self.line if line is None else line,
            "exit_code": self.exit_code,
            "admitted_counts": self.admitted,
            "counts": {str(n): str(v) for n, v in self.verdicts.items()},
        }
        if self.cannot_start:
            out["cannot_start"] = [
                {
                    "role": e.get("role"),
                    "executable": e.get("executable"),
                    "run": e.get("run"),
                    "exit_code": e.get("exit_code"),
                    "cause": cannot_start_cause(e),
                    "last_lines": e.get("last_lines"),
                    "stream": e.get("stream"),
                }
                for e in self.cannot_start
            ]
        return out


def not_run_counts(events: Sequence[Mapping[str, object]]) -> dict[int, str]:
    """Counts a `--fail-fast` campaign did not run, with the reason it recorded."""
    return {
        as_int(e["count"]): str(e.get("reason") or "not run (--fail-fast)")
        for e in events
        if e.get("kind") == "count_not_run" and e.get("count") is not None
    }


def mark_not_run(per_count: dict[int, list[Result]], not_run: dict[int, str]) -> None:
    """A count that was not run has no evidence: each of its entries is PENDING with the
    reason it was not run (never PASS, never a FAIL it did not show)."""
    for n, reason in not_run.items():
        ids = [r.id for r in per_count.get(n, [])]
        per_count[n] = [replace(pending(id_, reason, not_run=True), count=n) for id_ in dict.fromkeys(ids)]


def fill_closed_list(
    counts: list[int],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    framework: list[Result],
    missing: str,
    mode: str | None = None,
) -> None:
    """A PENDING entry, saying `missing`, for every entry of the closed list
    (parval.procedure.closed_list) that no result stands for, in place: where it is judged
    (once per run, at each count, framework), so that the count verdicts see it. `mode`:
    the mode the model runs in, whose M6 entry is never NOT_APPLICABLE (evidence judged
    before that rule said so on the plan's word): PENDING."""
    for n in counts:
        per_count.setdefault(n, [])
    for i, r in enumerate(model_level):
        if excuses_mode_under_test(r.id, str(r.status), mode):
            model_level[i] = pending(
                r.id,
                f"NOT_APPLICABLE is no verdict for {mode}, the mode the model runs in ({r.reason}): nothing is "
                f"admitted until {mode} evidence is (add {mode} to model.admit_modes and run again)",
            )
    found = gaps(
        [r.id for r in model_level],
        {n: [r.id for r in rs] for n, rs in per_count.items()},
        [r.id for r in framework if r.count is None],
        admission_rule=False,
    )
    for id_, at in found:
        entry = pending(id_, f"{missing} (required by the procedure: without it nothing is admitted)")
        if at is not None:
            per_count[at].append(replace(entry, count=at))
        elif id_ in CLOSED_FRAMEWORK:
            framework.append(entry)
        else:
            model_level.append(entry)


def decide(
    counts: list[int],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    framework: list[Result],
    *,
    interrupted: bool,
    missing: str,
    not_run: dict[int, str] | None = None,
    cannot_start: Sequence[Mapping[str, object]] = (),
    mode: str | None = None,
) -> Decision:
    """Count verdicts, admitted counts (Q6 appended to `model_level`), one entry per
    assertion ID, the verdict line and exit code, over the closed list of required
    assertions: an entry no result stands for is PENDING in the verdict (`missing` says
    why). `not_run`: counts a --fail-fast campaign left out, each with its reason; `mode`:
    the mode the model runs in (its M6 entry is never excused as NOT_APPLICABLE)."""
    if not_run:
        mark_not_run(per_count, not_run)
    fill_closed_list(counts, model_level, per_count, framework, missing, mode)
    verdicts = count_verdicts(model_level, per_count, framework)
    admitted, _ = trim_to_ten_waves(counts, verdicts, per_count)
    admitted = trim_to_recovery(admitted, verdicts, per_count, model_level)
    model_level.append(q6(counts, verdicts, admitted))
    admission_ready = (
        not interrupted and admitted == counts and combine(r.status for r in model_level + framework) is Status.PASS
    )
    flat = model_level + [r for rs in per_count.values() for r in rs]
    by_id: dict[str, list[Result]] = {}
    for r in flat + framework:
        by_id.setdefault(r.id, []).append(r)
    assertions = [aggregate(by_id[i]) if i in by_id else pending(i, missing) for i in all_ids()]
    causes = [cannot_start_cause(e) for e in cannot_start]
    line, code = verdict_line(admission_ready, admitted, flat + framework, interrupted, causes)
    return Decision(verdicts, admitted, admission_ready, flat, assertions, line, code, list(cannot_start))


def model_checks_block(
    flat: list[Result],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    sources: dict[int, list[str]] | None = None,
) -> dict[str, object]:
    """The evidence's `model_checks` statuses: overall, by group, per count, model-level."""
    counts: dict[str, dict[str, object]] = {}
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
