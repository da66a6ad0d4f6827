"""M1, the one-slot baseline: the manifest identifies what was compared, serial repeats of
the baseline agree, the candidate at one slot matches upstream, and cold and warm
references are kept apart. Serial variation also decides how comparisons are masked."""

from __future__ import annotations

from collections.abc import Callable, Sized
from dataclasses import replace

from parval.gates.judge_context import REF_PHASES, JudgeContext, SerialVerdict, exact_result
from parval.gates.serial import serial_variation
from parval.procedure import judge_shape as shape
from parval.procedure.entry import COMPARED, MANIFEST, MASKED, NEGATIVE, PLAN, REFS, SET_ASIDE, STARTS, Entry, Gate
from parval.procedure.names import REFERENCE_RUNS
from parval.rundir.event_index import COUNT_PHASES, schedule_missing, starts_missing
from parval.status import Result, Status

__all__ = ["ENTRIES", "JUDGES", "judge_m1", "serial_variation"]

# Each judge below declares its registry entry: judged once per run, with notes.
_m1 = Gate("run").noted


# What the procedure's manifest must record: (path in the manifest, what it is).
MANIFEST_ITEMS = (
    ("model.sha256", "checkpoint hash"),
    ("model.task", "task"),
    ("model.mode", "mode"),
    ("settings", "settings"),
    ("fixtures", "fixture hashes"),
    ("requests", "request bodies and seeds"),
    ("executables.baseline.sha256", "baseline executable hash"),
    ("executables.candidate.sha256", "candidate executable hash"),
    ("platform.os", "OS"),
    ("platform.device", "device"),
    ("platform.driver", "driver"),
    ("platform.backend", "backend"),
    ("platform.threads", "threads"),
    ("plan.sha256", "plan hash"),
)


def manifest_gaps(ctx: JudgeContext) -> list[str]:
    """Each item the procedure's manifest needs (M1.manifest) that this run's manifest lacks.
    What parval cannot discover comes from the plan's `identity` block."""
    man = ctx.manifest

    def at(path: str) -> object:
        node: object = man
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def blank(value: object) -> bool:
        # a list (build_flags may be one) declares something only if one item is non-blank
        if isinstance(value, list):
            return all(blank(item) for item in value)
        return value is None or (isinstance(value, str) and not value.strip())

    gaps = [f"{path} ({what})" for path, what in MANIFEST_ITEMS if blank(at(path))]
    declared = ctx.plan.model.auxiliary_files
    hashed = at("model.auxiliary") or {}
    if not isinstance(hashed, Sized):  # as len() would
        raise TypeError(f"object of type '{type(hashed).__name__}' has no len()")
    if len(hashed) < len(declared):
        gaps.append(f"model.auxiliary ({len(hashed)} of {len(declared)} auxiliary files hashed)")
    if not (at("identity.quantization") or at("model.quantization")):
        gaps.append("identity.quantization (declare it in the plan: identity.quantization)")
    for role in ("baseline", "candidate"):
        for key, what in (("source_commit", "source commit"), ("build_flags", "build flags")):
            if blank(at(f"identity.{role}.{key}")):
                gaps.append(f"identity.{role}.{key} ({role} {what}; declare it in the plan)")
    if not ctx.rec.refs:
        gaps.append("references (no baseline reference output recorded)")
    elif ctx.reference_gap is not None:
        gaps.append(f"references ({ctx.reference_gap})")
    return gaps


@shape.judge(
    "M1.manifest",
    _m1(
        (
            MANIFEST,
            PLAN + ": model.auxiliary_files and the identity block (quantization, source commits, build flags)",
            REFS,
        ),
        "PENDING naming each item the manifest lacks (an empty or blank value is lacking); what parval "
        "cannot discover is declared in the plan's identity block",
    ),
)
def m1_manifest(ctx: JudgeContext, serial: SerialVerdict) -> Result:
    """M1.manifest: the run's manifest identifies everything the comparison rests on."""
    man = ctx.manifest
    missing = manifest_gaps(ctx)
    platform = {k: v for k, v in (man.get("platform") or {}).items() if k != "gpu"}
    ev: dict[str, object] = {
        "missing": missing,
        "identity": man.get("identity") or {},
        "fixtures": len(man.get("fixtures") or {}),
        "references": len(ctx.rec.refs),
        "platform": platform,
    }
    if missing:
        return shape.pending("M1.manifest", f"the manifest does not identify: {'; '.join(missing)}", **ev)
    return shape.passed(
        "M1.manifest",
        "manifest hashes checkpoint, auxiliaries, fixtures, executables "
        "and plan; records quantization, task/mode/settings, seeds, references, source "
        "commits, build flags, OS, device, driver, backend and threads",
        {"manifest items": [p for p, _ in MANIFEST_ITEMS], "references": len(ctx.rec.refs)},
        **ev,
    )


@shape.judge(
    "M1.serial_repeat",
    _m1(
        (
            "`request` events of ref-baseline-a and ref-baseline-b (ref_cold, ref_warm, ref_warm2: output canon)",
            "raw replies in artifacts/<sha256>.json when the plan declares a tolerance",
        ),
        "decided by parval.gates.serial:serial_variation; PENDING (parity unverified) "
        "when outputs differ across the two fresh starts or warm repeats",
        "a declared compare.tolerance applies only when the repeats varied within it; byte-identical "
        "repeats are deterministic output, and comparisons stay byte-exact",
        "the stand-in fault serial_nondeterminism keeps it PENDING, never PASS",
    ),
)
def m1_serial_repeat(ctx: JudgeContext, serial: SerialVerdict) -> Result:
    """M1.serial_repeat: the verdict of `serial_variation`, judged once per run."""
    if serial.status is Status.PASS:
        shown = {"outputs compared": serial.outputs_compared}
        return shape.passed("M1.serial_repeat", serial.reason, shown, **serial.evidence)
    return Result("M1.serial_repeat", serial.status, serial.reason, serial.evidence)


def _parity(id_: str, run: str, ctx: JudgeContext) -> Result:
    """A candidate reference start against upstream legacy: every request cold, warm and
    repeated warm. A start whose server crashed fails what it was collecting; one parval
    stopped is BLOCKED naming why; a PASS needs every planned output."""
    rec = ctx.rec
    events = rec.requests(run, REF_PHASES)
    what = f"{run} vs upstream legacy (cold, warm, repeated warm)"
    if run not in rec.runs:
        stop = next((f for f in rec.failures if f.get("run") == run), None)
        if stop is not None:
            return shape.blocked(id_, f"{run} did not start: {stop['reason']}", failure=stop)
        return shape.pending(id_, f"{run} not run")
    crash = rec.crash_of(run)
    if crash is not None:
        r = shape.failed(
            id_,
            f"{what}: the candidate server crashed during {crash['where']} (exit status {crash['exit_code']}) "
            f"after {len(events)} output(s)",
            violation={k: crash.get(k) for k in ("run", "attempt", "where", "exit_code", "signal")},
            log_tail=crash.get("log_tail", ""),
        )
        return replace(r, reproduction=ctx.repro(run))
    r = exact_result(id_, ctx.judge(events), what, ctx, run)
    if r.status is Status.FAIL:
        return r
    stop = rec.stop_of(run)
    if stop is not None:
        return shape.blocked(id_, f"{what}: the start was stopped ({stop['reason']}) after {len(events)} output(s)")
    if not rec.complete(run):
        return shape.pending(id_, f"{run} did not complete ({rec.outcome(run)})")
    have = {(e["req"], e["phase"]) for e in events}
    lacking = [f"{q}/{p}" for q in ctx.request_names for p in REF_PHASES if (q, p) not in have]
    if lacking:
        return shape.pending(id_, f"{what}: no output recorded for {', '.join(lacking[:6])}")
    return r


@shape.judge(
    "M1.legacy_parity",
    _m1(
        (
            "`request` events of ref-candidate-legacy (ref_cold, ref_warm, ref_warm2), " + COMPARED,
            STARTS + " of ref-candidate-legacy",
            NEGATIVE,
            SET_ASIDE,
        ),
        MASKED,
        "FAIL when the start's server crashed (whatever it had collected before); BLOCKED when parval "
        "stopped it; a PASS needs every request cold, warm and repeated warm",
        "the stand-in fault crash_legacy_after makes it FAIL; garbage_replies makes it FAIL or BLOCKED",
    ),
)
def m1_legacy_parity(ctx: JudgeContext, serial: SerialVerdict) -> Result:
    """M1.legacy_parity: the unflagged candidate matches upstream legacy."""
    return _parity("M1.legacy_parity", "ref-candidate-legacy", ctx)


@shape.judge(
    "M1.cap1_parity",
    _m1(
        (
            "`request` events of ref-candidate-cap1 (ref_cold, ref_warm, ref_warm2), " + COMPARED,
            STARTS + " of ref-candidate-cap1",
            NEGATIVE,
            SET_ASIDE,
        ),
        MASKED,
        "FAIL when the start's server crashed; BLOCKED when parval stopped it; a PASS needs every output",
    ),
)
def m1_cap1_parity(ctx: JudgeContext, serial: SerialVerdict) -> Result:
    """M1.cap1_parity: the flagged candidate at capacity one matches upstream legacy."""
    return _parity("M1.cap1_parity", "ref-candidate-cap1", ctx)


@shape.judge(
    "M1.cold_warm_refs",
    _m1(
        (
            REFS + ": cold keys (<req>|cold, hist:<req>) and warm/history keys",
            "`request` events of every start (phase, req, history, ref): the reference each output's history "
            "calls for against the one its label names",
        ),
        "PENDING when cold and warm references were not both recorded, or when a recorded label names a "
        "reference other than the one the request's history calls for",
    ),
)
def m1_cold_warm_refs(ctx: JudgeContext, serial: SerialVerdict) -> Result:
    """M1.cold_warm_refs: cold and warm/history references recorded and kept apart (for a
    stateless model: a cold and a warm reference of every request)."""
    refs = ctx.rec.refs
    colds = {k for k in refs if k.endswith("|cold") or (k.startswith("hist:") and ">" not in k)}
    warms = set(refs) - colds
    if not colds or not warms:
        return shape.pending("M1.cold_warm_refs", "cold and warm references were not both recorded")
    if ctx.reference_gap is not None:
        return shape.pending("M1.cold_warm_refs", f"references incomplete: {ctx.reference_gap}")
    # every reference start's labels are checked below: each must have recorded every request
    # cold, warm and warm again (a request missing is a label not checked)
    for run in REFERENCE_RUNS:
        if run not in ctx.rec.runs:
            return shape.pending(
                "M1.cold_warm_refs", f"reference start {run} not recorded: the labels of its outputs were not checked"
            )
        have = {(e["req"], e["phase"]) for e in ctx.rec.requests(run, REF_PHASES)}
        if lacking := [f"{q}/{p}" for q in ctx.request_names for p in REF_PHASES if (q, p) not in have]:
            return shape.pending(
                "M1.cold_warm_refs",
                f"reference start {run} recorded no {', '.join(lacking[:6])}: the labels of its outputs were not "
                "all checked",
            )
    if ctx.relabelled:
        # the judges compare with the derived reference; a run whose labels say otherwise
        # did not show its cold outputs kept to cold references
        wrong = ctx.relabelled
        return shape.pending(
            "M1.cold_warm_refs",
            f"{len(wrong)} recorded output(s) labelled with a reference other than the one their history calls for "
            "(first: "
            + ", ".join(
                f"{e['run']} {e['phase']} {e['req']} labelled {e['label']}, ran as {e['ref']}" for e in wrong[:3]
            )
            + "): cold and warm references not shown kept apart",
            relabelled=wrong[:30],
        )
    # the labels checked are those of every recorded wave: a PASS rests on them all
    from parval.gates.execution_path import campaign_counts

    for n in campaign_counts(ctx):
        stopped = starts_missing(ctx, n, "M1.cold_warm_refs")
        if stopped is not None and stopped.status is Status.BLOCKED:
            # a start the server crashed in (or parval stopped) recorded no later waves: that
            # count is judged by its M2.starts and never admitted; it hides no label
            continue
        gaps = stopped or schedule_missing(ctx, n, "M1.cold_warm_refs", COUNT_PHASES)
        if gaps is not None:
            return replace(gaps, count=None)
    if not ctx.cache_sensitive:
        lacking = [k for q in ctx.request_names for k in (f"{q}|cold", f"{q}|warm") if k not in refs]
        if lacking:
            return shape.pending("M1.cold_warm_refs", f"no reference recorded for {', '.join(lacking[:6])}")

    def canon(key: str) -> object:
        ref = refs.get(key)
        return ((ref["output"] if ref else None) or {}).get("canon")

    same = [k.split("|")[0] for k in colds if k.endswith("|cold") and canon(k) == canon(k.replace("|cold", "|warm"))]
    return shape.passed(
        "M1.cold_warm_refs",
        f"{len(colds)} cold and {len(warms)} warm/history references kept apart; "
        "cold outputs are compared with cold references only",
        {"cold references": sorted(colds), "warm references": sorted(warms)},
        cold_equals_warm_for=sorted(same),
    )


JUDGES: dict[str, Callable[[JudgeContext, SerialVerdict], Result]] = {
    "M1.manifest": m1_manifest,
    "M1.serial_repeat": m1_serial_repeat,
    "M1.legacy_parity": m1_legacy_parity,
    "M1.cap1_parity": m1_cap1_parity,
    "M1.cold_warm_refs": m1_cold_warm_refs,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_m1(ctx: JudgeContext, serial: SerialVerdict) -> list[Result]:
    """M1, given the run's serial-variation verdict (see `serial_variation`)."""
    return [judge(ctx, serial) for judge in JUDGES.values()]
