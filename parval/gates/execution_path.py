"""X1-X3, the execution path: the unflagged server keeps the legacy runtime (and rejects
every explicit slots field), the flagged one runs the parallel runtime with omitted slots
meaning capacity one, and one flagged process resizes across one with outputs unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from parval.gates.judge_context import JudgeContext, exact_result, run_judges
from parval.jsonread import as_int, get, item, json_text
from parval.jsontypes import JsonValue
from parval.procedure import judge_shape as shape
from parval.procedure.entry import COMPARED, NO_UI, READY, Entry, Gate
from parval.status import Result

# Each judge below declares its registry entry: judged once per run, with notes.
_x = Gate("run").noted


LEGACY = "ref-candidate-legacy"
CAP1 = "ref-candidate-cap1"

# Every explicit slots form the legacy path must reject, at startup and on registration.
X1_FORMS: tuple[object, ...] = (1, 2, None, False, "4")


def _form(value: object) -> str:
    return json.dumps(value)  # 1, false and "4" stay distinct (1 == True in Python)


def _untried_forms(probes: Sequence[Mapping[str, object]]) -> list[str]:
    tried = {_form(p.get("value")) for p in probes}
    return [_form(v) for v in X1_FORMS if _form(v) not in tried]


@shape.judge(
    "X1",
    _x(
        (
            "`x1_config_probe` events: the unflagged candidate started with each slots form "
            "(value, rejected, exit_code, message_ok: the legacy text on stderr)",
            "`x1_registration_probe` events: registrations with each slots form on "
            "ref-candidate-legacy (reply, message, ok)",
            READY + " of ref-candidate-legacy (no warning marker, no slot fields)",
        ),
        'PENDING until every form 1, 2, null, false, "4" was tried at startup and on registration; ' + NO_UI,
        "BLOCKED when ref-candidate-legacy crashed or was stopped before its registration probes",
    ),
)
def x1_legacy_path(ctx: JudgeContext) -> Result:
    """X1: without --parallel-jobs no warning, no slot fields, and every explicit slots
    form rejected with the legacy text at startup and on registration."""
    rec = ctx.rec
    legacy_ready = ctx.ready(LEGACY)
    probes = rec.kind("x1_config_probe")
    regs = rec.kind("x1_registration_probe")
    if legacy_ready is None or not probes:
        return shape.pending("X1", "unflagged candidate run or slots-config probes missing")
    problems = []
    if legacy_ready.get("warning_marker"):
        problems.append("the experimental-runtime warning was printed without --parallel-jobs")
    for p in probes:
        if not (p.get("rejected") and p.get("message_ok")):
            problems.append(f"config slots={json_text(p['value'])} was not rejected at startup with the legacy text")
    for reg in regs:
        if not reg.get("ok"):
            problems.append(
                f"registration slots={json_text(reg['value'])}: got {reg['reply'].get('status')} {reg.get('message')!r}"
            )
    fields = _status_fields(ctx, LEGACY)
    if isinstance(fields, dict) and fields.get("slot_fields"):
        problems.append("/v1/models shows slot fields on the legacy runtime")
    ev: dict[str, object] = {"config_probes": probes, "registration_probes": regs}
    untried = _untried_forms(probes)
    if problems:
        return shape.failed("X1", "; ".join(problems), violation=problems, **ev)
    if untried:
        return shape.pending(
            "X1",
            f'startup not tried with slots forms {", ".join(untried)} (all of 1, 2, null, false, "4" are required)',
            **ev,
        )
    if regs and (reg_untried := _untried_forms(regs)):
        return shape.pending("X1", f"registration not tried with slots forms {', '.join(reg_untried)}", **ev)
    if not regs:
        crashed = ctx.rec.crash_of(LEGACY)
        if crashed is not None or ctx.rec.stop_of(LEGACY) is not None:
            return shape.blocked("X1", f"registration probes not collected: {LEGACY} {ctx.rec.outcome(LEGACY)}", **ev)
        return shape.pending("X1", "startup rejection verified; registration probes need server.ui_management", **ev)
    if LEGACY not in ctx.rec.ends or not isinstance(fields, dict) or "slot_fields" not in fields:
        return shape.pending("X1", f"{LEGACY} did not complete: /v1/models slot fields not recorded", **ev)
    return shape.passed(
        "X1",
        "legacy path: no warning, every explicit slots field rejected "
        f"({len(probes)} config forms, {len(regs)} registration forms)",
        {"startup rejections": probes, "registration rejections": regs, "legacy start": legacy_ready},
        **ev,
    )


def _status_fields(ctx: JudgeContext, run: str) -> JsonValue:
    """The /v1/models fields a start recorded at its end (None when it did not)."""
    end = ctx.rec.ends.get(run)
    return end.get("status_fields") if end else None


def campaign_counts(ctx: JudgeContext) -> list[int]:
    """The counts this run's campaign covered (its --shard share), else the plan's."""
    for e in ctx.rec.events:
        counts = e.get("counts")
        if e.get("kind") == "campaign_start" and isinstance(counts, list) and counts:
            return sorted(as_int(c) for c in counts)
    return ctx.counts


@shape.judge(
    "X2",
    _x(
        (
            READY + " of ref-candidate-cap1 (warning marker; first_slots must be 1) and of "
            "every count start (warning marker)",
        ),
        "PENDING when the flagged capacity-one start (ref-candidate-cap1) is missing",
    ),
)
def x2_flagged_capacity_one(ctx: JudgeContext) -> Result:
    """X2: every flagged start prints the warning, and omitted slots mean capacity one; a
    PASS needs the capacity-one start's /v1/models fields and, at every count the campaign
    covered, the planned flagged starts, each with its readiness record."""
    rec = ctx.rec
    cap1_ready = ctx.ready(CAP1)
    if cap1_ready is None:
        return shape.pending("X2", "flagged capacity-one run missing")
    problems = []
    if not cap1_ready.get("warning_marker"):
        problems.append("flagged capacity-one start printed no experimental-runtime warning")
    fields = _status_fields(ctx, CAP1)
    slots = fields.get("first_slots") if isinstance(fields, dict) else None
    if slots is not None and slots != 1:
        problems.append(f"omitted slots should mean capacity one; /v1/models slots {slots}")
    for run, start in rec.runs.items():
        ready = ctx.ready(run)
        if start["role"] == "count" and ready and not ready["warning_marker"]:
            problems.append(f"{run}: flagged start printed no warning")
    ev = {"cap1_status_fields": fields}
    if problems:
        return shape.failed("X2", "; ".join(problems), violation=problems, **ev)
    if CAP1 not in rec.ends or not isinstance(fields, dict):
        return shape.pending("X2", f"{CAP1} did not complete: its /v1/models fields were not recorded", **ev)
    if slots is None:
        return shape.pending("X2", f"{CAP1}: /v1/models showed no `slots`: capacity one not shown", **ev)
    need = ctx.required_starts
    short = {
        n: len(rs) for n in campaign_counts(ctx) if len(rs := [r for r in rec.count_runs(n) if ctx.ready(r)]) < need
    }
    if short:
        return shape.pending(
            "X2",
            f"flagged starts with a readiness record per count {short}, {need} needed: the warning not shown",
            **ev,
        )
    counted = [run for run, start in rec.runs.items() if start["role"] == "count" and ctx.ready(run)]
    return shape.passed(
        "X2",
        "flagged runs print the warning; omitted slots = capacity one on the parallel runtime",
        {"capacity-one start": cap1_ready, "capacity one shown": slots, "flagged starts": counted},
        **ev,
    )


def _reply_status(step: object) -> object:
    return get(get(step, "reply") or {}, "status")


@shape.judge(
    "X3",
    _x(
        (
            "`x3_resize_probe` event on ref-candidate-cap1 (steps: slots, reply, status_fields; ok, capacity_refused)",
            "`request` events of phase x3_after_resize on ref-candidate-cap1, " + COMPARED,
        ),
        NO_UI + "; PENDING too when the model's capacity refuses two slots",
    ),
)
def x3_resize_across_one(ctx: JudgeContext) -> Result:
    """X3: resized across one (2→1→2→1) on one flagged process, status fields kept, and the
    first output after every resize equal to the cold reference."""
    resize = ctx.rec.kind("x3_resize_probe")
    if not resize:
        return shape.pending("X3", "resize-across-one probe needs server.ui_management (registration)")
    e = resize[-1]
    steps = e.get("steps") or []
    if e.get("capacity_refused"):
        return shape.pending(
            "X3",
            "the model's capacity does not allow two slots (server: "
            f"{e['capacity_refused']!r}): resizing across one cannot be exercised "
            "with this model",
            steps=steps,
        )
    sizes = [get(s, "slots") for s in steps]
    if 2 not in sizes or 1 not in sizes:
        return shape.pending("X3", f"resize steps {sizes} do not cross one (both 2 and 1 are needed)", steps=steps)
    refused = [s for s in steps if get(get(s, "reply") or {}, "error_type") == "insufficient_memory"]
    if refused:
        return shape.blocked(
            "X3",
            f"resizing to {get(refused[0], 'slots')} slots was refused for memory (503 insufficient_memory): "
            "resizing across one could not be exercised",
            steps=steps,
        )
    bad = [s for s in steps if _reply_status(s) != 200 or not get(s, "status_fields")]
    if bad:
        return shape.failed(
            "X3",
            "resizing across one failed or lost the parallel lifecycle: "
            + "; ".join(
                f"slots={json_text(item(s, 'slots'))}: status {_reply_status(s)}, status fields "
                f"{'kept' if get(s, 'status_fields') else 'missing'}"
                for s in bad
            ),
            violation=bad,
            steps=steps,
        )
    if not e.get("ok"):
        return shape.pending("X3", f"the resize probe did not complete its steps ({sizes})", steps=steps)
    outputs = ctx.rec.requests(CAP1, ("x3_after_resize",))
    if len(outputs) < len(steps):
        return shape.pending(
            "X3",
            f"resized across one, but {len(outputs)} of {len(steps)} outputs after a resize were recorded",
            steps=steps,
        )
    r = exact_result(
        "X3",
        ctx.judge(outputs),
        "resized "
        + "→".join(["1", *map(str, sizes)])
        + " on one process, parallel status fields kept; first output after each "
        "resize vs the cold reference",
        ctx,
        CAP1,
    )
    return replace(r, evidence={**r.evidence, "steps": steps})


JUDGES: dict[str, Callable[[JudgeContext], Result]] = {
    "X1": x1_legacy_path,
    "X2": x2_flagged_capacity_one,
    "X3": x3_resize_across_one,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_execution_path(ctx: JudgeContext) -> list[Result]:
    """X1-X3, each reproducible from the start it was judged on."""
    return run_judges(ctx, JUDGES, lambda id_: LEGACY if id_ == "X1" else CAP1)
