"""Q1-Q5, the quality rules of the comparison itself: identical settings, exclusions only
of fields measured to vary, a tolerance declared before the run, same-history references
only, and no intermittent mismatch hidden by later repeats or set-aside attempts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace

from parval.gates.exactness import failure_key
from parval.gates.judge_context import REF_PHASES, JudgeContext
from parval.gates.m2_concurrency import active_violations, drain_violations, unload_violations
from parval.gates.m4_recovery import aside_violations
from parval.gates.masking import COMPARISON_IDS
from parval.jsonread import as_int, iterate
from parval.outputs.volatility import VOLATILE_ROOT, MeasuredExclusion, volatility
from parval.procedure import judge_shape as shape
from parval.procedure.entry import MASKED, NEGATIVE, PLAN, SET_ASIDE, Entry, Gate
from parval.rundir.mismatch_bound import MismatchBound, bound
from parval.rundir.mismatch_bound import words as bound_words
from parval.status import Result, Status, combine

# Each judge below declares its registry entry, judged as a quality rule of the comparison.
_q = Gate("rule")


STARTED_BY = ("run_start", "run_end", "server_ready", "request", "wave")


def planned_starts_unrecorded(ctx: JudgeContext) -> str:
    """The planned starts whose record (the settings they loaded) is missing, in words (""
    when none): the four reference starts and, at every count the campaign covered, the
    required count starts. A start that crashed or was stopped still recorded what it
    loaded; its failure is judged where it happened (M2.starts, M1), not here."""
    from parval.gates.execution_path import campaign_counts

    # every start the run's events name (a start whose own record is gone leaves its others)
    started = {str(e["run"]) for e in ctx.rec.events if e.get("kind") in STARTED_BY and e.get("run")}
    refs = sorted(
        r
        for r in started | {"ref-baseline-a", "ref-baseline-b", "ref-candidate-legacy", "ref-candidate-cap1"}
        if r not in ctx.rec.runs
    )
    need = ctx.required_starts
    short = {n: k for n in campaign_counts(ctx) if (k := len(ctx.rec.count_runs(n))) < need}
    parts = [f"{', '.join(refs)} not recorded"] if refs else []
    if short:
        parts.append(f"recorded starts per count {short}, {need} needed")
    return "; ".join(parts)


@shape.judge(
    "Q1",
    _q(
        (
            "`run_start` events: config.models entry of the plan's model in every start (slots and id aside)",
            PLAN + ": compare.quality_settings",
        ),
        notes=("PENDING when no compared start recorded the model's settings",),
    ),
)
def q1_settings(ctx: JudgeContext, results: list[Result]) -> Result:
    """Q1: every compared run loaded the model with the same settings (slots aside)."""
    settings = {}
    unrecorded = []
    for run, start in ctx.rec.runs.items():
        models = (start.get("config") or {}).get("models") or []
        entry = next((m for m in models if m.get("id") == ctx.plan.model.id), None)
        if entry is not None:
            settings[run] = {k: v for k, v in entry.items() if k not in ("slots", "id")}
        else:
            unrecorded.append(run)
    distinct = {repr(sorted(v.items())) for v in settings.values()}
    if len(distinct) > 1:
        first = next(iter(settings.values()))
        differing = sorted({k for v in settings.values() for k in set(v) | set(first) if v.get(k) != first.get(k)})
        return shape.failed(
            "Q1", f"quality settings differ between compared runs: {differing}", violation=differing, settings=settings
        )
    if not settings:
        return shape.pending("Q1", "no compared run recorded the model's settings: nothing to compare")
    if len(settings) < 2:
        return shape.pending("Q1", f"only {next(iter(settings))} recorded the model's settings: nothing to compare")
    if unrecorded:
        return shape.pending("Q1", f"start(s) {unrecorded[:6]} recorded no settings of the model: not compared")
    if missing := planned_starts_unrecorded(ctx):
        return shape.pending("Q1", f"the settings of planned starts are not all recorded: {missing}")
    return shape.passed(
        "Q1",
        f"identical model settings in all {len(settings)} compared runs",
        {"runs with the model's settings": sorted(settings)},
        quality_settings=ctx.plan.quality_settings,
    )


def _baseline_groups(ctx: JudgeContext) -> tuple[dict[str, list[object]], list[str]]:
    """Raw replies of the recorded serial baseline repeats, grouped by identical request
    (same request, same history: its reference key). (groups, problems)"""
    groups: dict[str, list[object]] = {}
    problems: list[str] = []
    if ctx.run_dir is None:
        return groups, ["no run directory: raw replies unavailable"]
    for run in ("ref-baseline-a", "ref-baseline-b"):
        for e in ctx.rec.requests(run, REF_PHASES):
            if (e.get("reply") or {}).get("outcome") != "ok" or not e.get("artifact"):
                continue
            try:
                raw = (ctx.run_dir / "artifacts" / f"{e['artifact']}.json").read_bytes()
                body = json.loads(raw)
            except (OSError, ValueError) as exc:
                problems.append(f"{run} {e['req']}/{e['phase']}: raw reply unreadable ({type(exc).__name__})")
                continue
            groups.setdefault(str(e.get("ref") or f"{e['req']}|{e['phase']}"), []).append(body)
    return groups, problems


@shape.judge(
    "Q2",
    _q(
        (
            PLAN + ": compare.volatile_fields (path, justification)",
            "raw replies (artifacts/<sha256>.json) of identical serial requests in ref-baseline-a and ref-baseline-b",
        ),
        notes=(
            "FAIL when an excluded path is stable across identical requests or names "
            "output content (anything but volatile scalars, numbers or null, inside the top-level `timing` "
            "report, reached through objects only: parity unverified, never excluded); PENDING when "
            "volatility cannot be measured, including a path no baseline "
            "reply carries (the exclusion would hide that field should only the candidate send it)",
        ),
    ),
)
def q2_volatile_fields(ctx: JudgeContext, results: list[Result]) -> Result:
    """Q2: only fields measured to be volatile may be excluded: each excluded path must
    vary across identical serial requests in the recorded baseline runs (every leaf of an
    excluded object); a stable leaf is meaningful output that the exclusion would hide.
    Only volatile scalars may be excluded at all (outputs/volatility.py VOLATILE_ROOT): an
    exclusion of output content fails, whether or not it varies."""
    vol = ctx.plan.volatile_fields
    whole = ctx.content_excluded
    if whole:
        return shape.failed(
            "Q2",
            f"volatile exclusions remove meaningful output: {whole} name output content, not volatile scalars "
            f"of the `{VOLATILE_ROOT}` report: content is compared (parity unverified where it varies), never "
            "excluded",
            violation=whole,
        )
    if not vol:
        return shape.passed(
            "Q2",
            "no field excluded: every output field is compared",
            {"compared fields": "every field"},
            raw_responses="artifacts/",
        )
    groups, problems = _baseline_groups(ctx)
    for run in ("ref-baseline-a", "ref-baseline-b"):
        got = {
            (e["req"], e["phase"])
            for e in ctx.rec.requests(run, REF_PHASES)
            if e.get("artifact") and e.get("ref") and (e.get("reply") or {}).get("outcome") == "ok"
        }
        if not ctx.rec.complete(run) or got != {(q, p) for q in ctx.request_names for p in REF_PHASES}:
            problems.append(f"{run} is not recorded whole (every request cold, warm and repeated warm, raw replies)")
    measured: list[MeasuredExclusion] = [
        {**volatility(groups, v["path"]), "justification": v["justification"]} for v in vol
    ]
    ev: dict[str, object] = {
        "volatile_fields": measured,
        "identical_request_groups": len(groups),
        "raw_responses": "artifacts/",
        "problems": problems,
    }
    content = [m for m in measured if m["status"] == "content"]
    if content:
        return shape.failed(
            "Q2",
            "volatile exclusions remove meaningful output: "
            + "; ".join(f"{m['path']} names output content ({', '.join(m['content'][:6])})" for m in content)
            + f"; only volatile scalars (numbers or null) of the `{VOLATILE_ROOT}` report may be excluded: content "
            "is compared (parity unverified where it varies), never excluded",
            violation=content,
            **ev,
        )
    stable = [m for m in measured if m["status"] == "stable"]
    if stable:
        return shape.failed(
            "Q2",
            "excluded as volatile but identical across identical serial baseline "
            "requests: " + "; ".join(f"{m['path']} (stable: {', '.join(m['stable'][:8])})" for m in stable),
            violation=stable,
            **ev,
        )
    if not any(m["repeated_groups"] for m in measured):
        return shape.pending(
            "Q2",
            "volatility not measurable: fewer than two identical serial baseline requests with raw replies recorded",
            **ev,
        )
    if problems:
        return shape.pending("Q2", "volatility not measured on the whole baseline: " + "; ".join(problems[:4]), **ev)
    # A path that appeared once only, or never in a baseline reply, is not measured to vary:
    # an exclusion that no baseline reply exercises would hide a field only the candidate
    # sends (that is not "excluding nothing").
    unknown = [m for m in measured if m["status"] in ("unmeasured", "absent")]
    if unknown:
        return shape.pending(
            "Q2",
            "volatility not shown for "
            + "; ".join(
                f"{m['path']} (seen once only: {', '.join(m['unmeasured'][:8])})"
                if m["status"] == "unmeasured"
                else f"{m['path']} (never present in a baseline reply: its volatility is unmeasured, and it would "
                "hide that field should only the candidate send it; drop the exclusion)"
                for m in unknown
            ),
            **ev,
        )
    varying = [m for m in measured if m["status"] == "varies"]
    return shape.passed(
        "Q2",
        "only fields measured to vary across identical serial requests are "
        "excluded: "
        + ", ".join(f"{m['path']} ({m['justification']}; {len(m['varying'])} leaf/leaves vary)" for m in varying),
        {"excluded fields measured to vary": varying},
        **ev,
    )


@shape.judge(
    "Q3",
    _q(
        (
            PLAN + ": compare.tolerance (max_abs_sample_diff, justification)",
            "manifest.json: plan.sha256 (the plan is hashed before the run)",
        ),
        notes=(
            "PASS whenever the run was judged with its hashed plan: a tolerance can only come from it",
            "says whether the tolerance applied (only where serial repeats of the baseline varied within it; "
            "16-bit LSB measured at each file's own sample format); a PASS within it is never called exact, "
            "and the negative control then also moves a sample beyond it",
        ),
    ),
)
def q3_tolerance(ctx: JudgeContext, results: list[Result]) -> Result:
    """Q3: a tolerance, if any, was declared in the plan (hashed in the manifest) before
    the run, and applies only where serial repeats were measured to vary."""
    tol = ctx.plan.tolerance
    plan_sha = str((ctx.manifest.get("plan") or {}).get("sha256", ""))[:12]
    if not plan_sha:
        # the plan's hash in the manifest is what shows the comparison rules were fixed before the run
        return shape.pending("Q3", "the manifest records no plan hash: the comparison rules are not shown fixed")
    if not tol:
        return shape.passed("Q3", "byte-exact comparison; no tolerance declared", {"plan hash": plan_sha})
    applies = ctx.tolerance is not None
    how = (
        "applied: serial repeats of the baseline varied within it"
        if applies
        else "not applied: "
        + (
            "serial repeats of the baseline were byte-identical, so outputs must be byte-identical"
            if ctx.serial.measured
            else "serial variation not measured"
        )
    )
    return shape.passed(
        "Q3",
        f"tolerance {tol['max_abs_sample_diff']} (16-bit LSB, at each file's own sample format) declared in the "
        f"plan before the run (plan sha256 {plan_sha} in the manifest): {tol['justification']}; {how}",
        {"plan hash": plan_sha, "declared tolerance": tol},
        tolerance_applies=applies,
    )


@shape.judge(
    "Q4",
    _q(
        ("the M3.history verdicts at every count", PLAN + ": model.cache_sensitive", NEGATIVE),
        notes=("NOT_APPLICABLE for a stateless model; otherwise M3.history's combined status", MASKED),
    ),
)
def q4_history_refs(ctx: JudgeContext, results: list[Result]) -> Result:
    """Q4: a cache-sensitive model's outputs are compared with same-history single-slot
    references only (M3.history at every count), never the closest reference."""
    if not ctx.cache_sensitive:
        return shape.not_applicable("Q4", "stateless model: one reference per request (cold and warm kept apart)")
    hist = [r for r in results if r.id == "M3.history"]
    st = combine(r.status for r in hist)
    if st is Status.PASS:
        return shape.passed(
            "Q4",
            "same-history single-slot references only; never the closest reference",
            {"M3.history at each count": [r.count for r in hist]},
        )
    if st is Status.FAIL:
        bad = [r for r in hist if r.status is Status.FAIL]
        kinds = {r.evidence.get("failure_kind") for r in bad}
        return shape.failed(
            "Q4",
            "see M3.history",
            violation=[{"count": r.count, "reason": r.reason} for r in bad],
            failure_kind="output" if kinds == {"output"} else "lifecycle",
        )
    if st is Status.NOT_APPLICABLE or not hist:
        return shape.pending("Q4", "M3.history was not judged")
    return Result("Q4", st, "see M3.history")


def lifecycle_aside(ctx: JudgeContext, count: int | None) -> list[Mapping[str, object]]:
    """Lifecycle violations seen in attempts parval set aside, in one Q5 scope: at a count,
    its starts' waves and unloads; at model level (None), the recovery start's probes."""
    if count is None:
        return aside_violations(ctx)
    rows = [
        *active_violations(ctx, count, standing=False),
        *drain_violations(ctx, count, standing=False),
        *unload_violations(ctx, count, standing=False),
    ]
    return [r for r in rows if "set_aside" in r]


def comparison_scope(scoped: list[Result]) -> tuple[list[object], list[Result], list[Result], int]:
    """Of one Q5 scope's comparison verdicts: (their recorded mismatches, the verdicts that
    apply, those of them not PASS, how many outputs they compared). Shared by the judge and
    by a merge, which judges Q5 again over the merged verdicts."""
    mismatches = [m for r in scoped for m in iterate(r.evidence.get("mismatches", []))]
    judged = [r for r in scoped if r.status is not Status.NOT_APPLICABLE]
    open_ = [r for r in judged if r.status is not Status.PASS]
    return mismatches, judged, open_, sum(as_int(r.evidence.get("compared") or 0) for r in scoped)


@shape.judge(
    "Q5",
    _q(
        (
            "the mismatches in the evidence of every output-comparison verdict of the scope "
            "(model level, or one count)",
            SET_ASIDE,
            NEGATIVE,
        ),
        ("contaminate_3plus", "intermittent_mismatch"),
        (
            "judged at model level and again for each count; lifecycle violations seen in set-aside attempts "
            "(counters left non-zero, N never active, an unload that did not wait or did not unload) fail it too",
            MASKED,
        ),
    ),
)
def q5_intermittent(ctx: JudgeContext, results: list[Result], count: int | None = None) -> Result:
    """Q5 for one scope (the model-level verdicts, count None, or one count's): every
    mismatch in its comparison verdicts, whatever later repeats did, and every failure seen
    in an attempt parval set aside (abandoned or redone) in that scope: those never prove
    a PASS, but a mismatch, request error, crash or lifecycle violation (counters left
    non-zero, N never active, an unload that did not wait or did not unload) stays failed."""
    scoped = [r for r in results if r.count == count and r.id in COMPARISON_IDS]
    mismatches, judged, open_, compared = comparison_scope(scoped)
    aside, crashes = ctx.set_aside_scope(count)
    seen = {failure_key(m) for m in mismatches}
    mismatches += [m for m in aside.mismatches if failure_key(m) not in seen]
    aside_errors = aside.errors + aside.malformed
    lifecycle = lifecycle_aside(ctx, count)
    problems = []
    if mismatches:
        problems.append(f"{len(mismatches)} mismatch(es) recorded; a mismatch stays failed however many repeats pass")
    if aside_errors:
        problems.append(f"{len(aside_errors)} request error(s) or malformed repl(ies) in attempt(s) parval set aside")
    if crashes:
        problems.append(
            "server crashed in set-aside attempt(s): "
            + ", ".join(
                f"{c['run']} attempt {c.get('attempt')} ({c.get('where')}, exit {c.get('exit_code')})"
                for c in crashes[:5]
            )
        )
    if lifecycle:
        problems.append(
            f"{len(lifecycle)} lifecycle violation(s) in attempt(s) parval set aside: "
            + ", ".join(f"{v.get('run')} {v.get('phase') or v.get('kind') or 'unload'}" for v in lifecycle[:5])
        )
    if problems:
        kind = (
            "output"
            if not (aside_errors or crashes or lifecycle)
            else "request"
            if not (crashes or lifecycle)
            else "lifecycle"
        )
        kept = ("run", "attempt", "where", "exit_code", "signal", "set_aside")
        r = shape.failed(
            "Q5",
            "; ".join(problems),
            violation=[*mismatches[:20], *aside_errors[:10], *crashes[:5], *lifecycle[:10]],
            failure_kind=kind,
            mismatches=mismatches[:50],
            set_aside_errors=aside_errors[:20],
            set_aside_crashes=[{k: c.get(k) for k in kept} for c in crashes],
            set_aside_lifecycle=lifecycle[:20],
        )
    else:
        if open_:
            r = shape.pending(
                "Q5",
                "no mismatch recorded, but not every comparison of the scope was completed: "
                + ", ".join(f"{x.id} {x.status}" for x in open_[:6]),
            )
        else:
            r = shape.passed(
                "Q5",
                "no intermittent mismatch in any repeat",
                {"comparison verdicts": judged, "compared outputs": compared or len(judged)},
            )
    if count is not None:
        b = scope_bound(scoped, mismatches)
        reason = f"{r.reason}; {bound_words(b)}" if r.status in (Status.PASS, Status.FAIL) else r.reason
        r = replace(r, reason=reason, evidence={**r.evidence, "bound": b})
    return replace(r, count=count)


def scope_bound(scoped: list[Result], mismatches: list[object]) -> MismatchBound:
    """One count's bound: that of its widest comparison (M2.exact compares every wave
    output of the count), plus the overlapped mismatches of set-aside attempts it did not
    count (each an output produced, and one that differed)."""
    widest: Mapping[str, object] = {}
    counted: set[tuple[object, ...]] = set()
    for r in scoped:
        b = r.evidence.get("bound")
        if isinstance(b, Mapping) and as_int(b.get("overlapped") or 0) > as_int(widest.get("overlapped") or 0):
            widest = b
        counted |= {failure_key(m) for m in iterate(r.evidence.get("mismatches", []))}
    extra = sum(
        1 for m in mismatches if isinstance(m, Mapping) and m.get("overlapped") and failure_key(m) not in counted
    )
    return bound(as_int(widest.get("overlapped") or 0) + extra, as_int(widest.get("differed") or 0) + extra)


JUDGES: dict[str, Callable[[JudgeContext, list[Result]], Result]] = {
    "Q1": q1_settings,
    "Q2": q2_volatile_fields,
    "Q3": q3_tolerance,
    "Q4": q4_history_refs,
    "Q5": q5_intermittent,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_quality(ctx: JudgeContext, results: list[Result]) -> list[Result]:
    """Q1-Q5 at model level, given every verdict judged so far (Q4 reads M3.history at
    each count; Q5 the model-level verdicts). Each count's own Q5 is `q5_intermittent`."""
    return [judge(ctx, results) for judge in JUDGES.values()]
