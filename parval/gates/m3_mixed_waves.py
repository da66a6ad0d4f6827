"""M3, per count N: mixed warm waves of different requests stay exact. Each declared
variation must really change the output content, request pairs must be seen admitted in
both orders, there are ten such waves per start, and slot history is respected."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TypedDict

import soundfile as sf

from parval.gates.judge_context import JudgeContext, exact_result
from parval.gates.m2_concurrency import NO_COUNTERS, counters_seen
from parval.jsonread import get
from parval.outputs.compare import decode_wav_b64, remove_volatile
from parval.plan.variations import VARIATION_KINDS, supported_kinds
from parval.plan.waves import TEN_WAVES
from parval.procedure import judge_shape as shape
from parval.procedure.entry import MASKED, NEGATIVE, PLAN, REFS, WAVES, Declaration, Entry, Gate
from parval.rundir.event_index import complete_starts, schedule_missing, starts_missing
from parval.rundir.event_types import RequestEvent, WaveEvent
from parval.status import Result, Status

__all__ = ["ENTRIES", "JUDGES", "content_digest", "judge_m3", "m3_variation", "variation_effects"]

# Each judge below declares its registry entry, judged once per count (MIXED and ORDER: the
# evidence several of them read).
MIXED = "`request` events of phase mixed_wave of the count<N>-s<k> starts"
ORDER = "the mixed_wave `wave` events (order, admission: ordered_ok / finished_early, trace_confirmed)"
_m3 = Gate("count")


def _mixed_waves(ctx: JudgeContext, n: int) -> list[WaveEvent]:
    return [w for r in ctx.rec.count_runs(n) for w in ctx.rec.waves(r) if w["phase"] == "mixed_wave"]


def _order_observed(w: WaveEvent) -> bool:
    """Was this wave's admission order observed: the poller saw each request take its slot
    before the next was sent and none finished early, or an observer trace confirmed it."""
    if not isinstance(w.get("order"), list) or w.get("trace_confirmed") is False:
        return False
    adm = w.get("admission") or {}
    return w.get("trace_confirmed") is True or (adm.get("ordered_ok") is True and not adm.get("finished_early"))


@shape.judge(
    "M3.reversed",
    _m3(
        (ORDER, MIXED + " of the waves seen in both orders", NEGATIVE),
        notes=(
            "NOT_APPLICABLE at count 1; PENDING until some request pair is observed admitted in both orders",
            MASKED,
        ),
    ),
)
def m3_reversed(ctx: JudgeContext, n: int, effects: list[VariationEffect]) -> Result:
    """M3.reversed: some request pair was observed admitted in both orders, and the
    outputs of those waves are exact."""
    id_ = "M3.reversed"
    if n == 1:
        return shape.not_applicable(id_, "one slot: admission order cannot be reversed")
    waves = _mixed_waves(ctx, n)
    if not waves:
        return shape.pending(id_, f"no mixed wave recorded at count {n}")
    observed = [w for w in waves if _order_observed(w)]
    if not observed:
        if all(counters_seen([w]) == "absent" for w in waves) and not any(w.get("trace_confirmed") for w in waves):
            return shape.pending(
                id_,
                f"{NO_COUNTERS} and no observer trace confirmed the "
                "slots: the admission order cannot be observed "
                f"({len(waves)} mixed wave(s))",
            )
        return shape.pending(
            id_,
            f"admission order not observed in any of {len(waves)} mixed "
            "wave(s) (a request was not seen taking its slot before the next was sent, "
            "or one finished before the last was admitted)",
        )
    before: dict[tuple[str, str], list[WaveEvent]] = {}
    for w in observed:
        order = [str(x) for x in w["order"]]
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                if a != b:
                    before.setdefault((a, b), []).append(w)
    both = sorted({tuple(sorted(p)) for p in before if (p[1], p[0]) in before})
    one_way = sorted(f"{a} before {b}" for (a, b) in before if (b, a) not in before)
    if not both:
        return shape.pending(
            id_,
            "no request pair was observed admitted in both orders in "
            f"{len(observed)} observed wave(s); seen in one order only: "
            f"{', '.join(one_way[:10])}",
            one_order_pairs=one_way,
        )
    keys = {(w["run"], w["wave"], int(w.get("retry", 0))) for a, b in both for w in before[(a, b)] + before[(b, a)]}
    reqs = [e for e in mixed_outputs(ctx, n) if (e["run"], e["wave"], int(e.get("retry", 0))) in keys]
    pairs = ", ".join(f"{a}/{b}" for a, b in both)
    r = exact_result(
        id_,
        ctx.judge(reqs, overlap=True),
        f"{len(both)} request pair(s) observed admitted in both orders ({pairs}); outputs of those {len(keys)} wave(s)",
        ctx,
        bounded=True,
    )
    evidence = {
        **r.evidence,
        "reversed_pairs": [list(p) for p in both],
        "one_order_pairs": one_way,
        "observed_waves": len(observed),
        "mixed_waves": len(waves),
    }
    if r.status is Status.PASS:
        evidence["rests_on"] = {**shape.rests_on(r), "reversed pairs": len(both)}
    r = replace(r, evidence=evidence)
    if r.status is Status.PASS:
        if len(reqs) < len(keys) * n:
            return shape.pending(id_, f"{len(keys) * n - len(reqs)} output(s) of the reversed waves not recorded")
        for gap in (starts_missing(ctx, n, id_), schedule_missing(ctx, n, id_, ("mixed_wave",))):
            if gap is not None:
                return gap
    return r


def mixed_wave_counts(ctx: JudgeContext, n: int) -> dict[str, int]:
    """Start → distinct mixed warm waves it recorded at count n."""
    return {r: len({e["wave"] for e in ctx.rec.waves(r) if e["phase"] == "mixed_wave"}) for r in ctx.rec.count_runs(n)}


@shape.judge(
    "M3.ten_waves",
    _m3(
        (WAVES + ": mixed_wave, per start",),
        notes=(
            "judged at every count: PASS where each of three starts ran ten mixed waves; NOT_APPLICABLE at a "
            "count below the largest whose waves.mixed is lower (it can be admitted only below a larger "
            "admitted count), and PENDING there once it would be the largest admitted count (admission ends "
            "below it); PENDING at the largest count when the plan runs fewer than ten (never a FAIL: the "
            "shortfall is the plan's)",
        ),
    ),
)
def m3_ten_waves(ctx: JudgeContext, n: int, effects: list[VariationEffect]) -> Result:
    """M3.ten_waves: ten or more mixed warm waves in each of three starts at the largest
    admitted count. Judged at every count: where each start ran ten, the count can be the
    largest admitted; where it did not, it can be admitted only below a larger admitted
    count that did (admission applies this, `parval.gates.admission_verdict`). Too few waves is the
    plan's shortfall, not the server's: never a FAIL."""
    id_ = "M3.ten_waves"
    per = mixed_wave_counts(ctx, n)
    largest = max(ctx.counts)
    planned = len(ctx.schedules[n].waves["mixed_wave"])
    short = {r: k for r, k in per.items() if k < TEN_WAVES}
    if planned < TEN_WAVES and n != largest:
        return Result(
            id_,
            Status.NOT_APPLICABLE,
            f"count {n} runs {planned} mixed warm wave(s) per start (waves.mixed): it can be admitted only "
            f"below a larger admitted count that ran {TEN_WAVES}",
            {"short": True, "planned": planned, "mixed_waves": per},
        )
    if (missing := starts_missing(ctx, n, id_)) is not None:
        return replace(missing, evidence={**missing.evidence, "mixed_waves": per})
    if short:
        why = (
            f"the plan runs {planned} (waves.{'mixed_at_largest' if n == largest else 'mixed'})"
            if planned < TEN_WAVES
            else f"{planned} were planned"
        )
        return shape.pending(
            id_, f"fewer than {TEN_WAVES} mixed warm waves recorded in {short}: {why}", mixed_waves=per
        )
    if (gaps := schedule_missing(ctx, n, id_, ("mixed_wave",))) is not None:
        return gaps
    return shape.passed(
        id_,
        f"{min(per.values())}+ mixed warm waves in each of {len(per)} starts",
        {"starts with ten mixed waves": complete_starts(ctx, n)},
        mixed_waves=per,
    )


@shape.judge(
    "M3.history",
    _m3(
        (
            MIXED + ", compared with the history-* same-history single-slot replays",
            ORDER,
            PLAN + ": model.cache_sensitive",
            NEGATIVE,
        ),
        notes=(
            "NOT_APPLICABLE for a stateless model (model.cache_sensitive: false); without "
            "a [SLOT_VALIDATION] observer trace the slot mapping rests on ordered admission",
            MASKED,
        ),
    ),
)
def m3_history(ctx: JudgeContext, n: int, effects: list[VariationEffect]) -> Result:
    """M3.history: for a cache-sensitive model, mixed-wave outputs equal same-history
    single-slot replays, with the slot histories known from ordered admission."""
    id_ = "M3.history"
    if not ctx.cache_sensitive:
        return shape.not_applicable(
            id_, "model declared stateless (model.cache_sensitive: false): outputs do not depend on session history"
        )
    waves = _mixed_waves(ctx, n)
    disagree = [w for w in waves if w.get("trace_confirmed") is False]
    # without an admission record the slot each request took (so its history) is unknown
    unordered = [
        w
        for w in waves
        if not (w.get("admission") or {}).get("ordered_ok", False) or (w.get("admission") or {}).get("finished_early")
    ]
    t = ctx.judge(mixed_outputs(ctx, n), overlap=True)
    traced = sum(1 for w in waves if w.get("trace_confirmed"))
    r = exact_result(id_, t, "mixed-wave outputs vs same-history single-slot replays", ctx, bounded=True)
    r = replace(r, evidence={**r.evidence, "trace_confirmed_waves": traced, "waves": len(waves)})
    if r.status is Status.PASS and disagree:
        r = shape.pending(
            id_,
            f"observer trace disagrees with ordered admission in {len(disagree)} wave(s)",
            waves=[(w["run"], w["wave"]) for w in disagree],
        )
    elif r.status is Status.PASS and unordered:
        r = shape.pending(id_, f"ordered admission not observed in {len(unordered)} wave(s): slot histories unknown")
    elif r.status is Status.PASS and (missing := starts_missing(ctx, n, id_)) is not None:
        r = missing
    elif r.status is Status.PASS and (gaps := schedule_missing(ctx, n, id_, ("mixed_wave",))) is not None:
        r = gaps
    if not traced:
        note = "no [SLOT_VALIDATION] observer trace: slot mapping from ordered admission only"
        r = replace(r, limitations=[*r.limitations, note])
    return r


# --- M3.variation: each declared variation changes the output's content ------------


def mixed_outputs(ctx: JudgeContext, n: int) -> list[RequestEvent]:
    """The candidate's mixed-wave request events at count n."""
    return [e for r in ctx.rec.count_runs(n) for e in ctx.rec.requests(r, ("mixed_wave",))]


# Reply fields that carry what the model produced; anything else (echoed seed, options,
# timing, per-artifact meta) is metadata and never shows that an input was effective.
CONTENT_KEYS = (
    "text",
    "custom_schema_output",
    "audio",
    "named_audio_outputs",
    "artifacts",
    "segments",
    "speaker_turns",
    "words",
)


def content_digest(ctx: JudgeContext, e: RequestEvent | None, cache: dict[str, str | None] | None = None) -> str | None:
    """Hash of a recorded reply's content (decoded audio samples, text, structured outputs,
    artifact payloads) from its raw body; None when the body or any content is missing."""
    if e is None or not (e.get("output") or {}).get("valid") or not e.get("artifact") or ctx.run_dir is None:
        return None
    key = str(e["artifact"])
    if cache is not None and key in cache:
        return cache[key]
    digest: str | None = None
    try:
        data = json.loads((ctx.run_dir / "artifacts" / f"{key}.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        data = remove_volatile(data, ctx.volatile)
        content = {k: _content_value(k, data[k]) for k in CONTENT_KEYS if k in data}
        if content:
            blob = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
            digest = hashlib.sha256(blob).hexdigest()
    if cache is not None:
        cache[key] = digest
    return digest


def _content_value(key: str, value: object) -> object:
    def audio(v: object) -> object:
        samples, rate, _ = decode_wav_b64(v)
        if samples is None:
            return v
        return {"pcm_sha256": hashlib.sha256(samples.tobytes()).hexdigest(), "rate": rate, "shape": list(samples.shape)}

    if key == "audio":
        return audio(value)
    if key == "named_audio_outputs" and isinstance(value, list):
        return [{"id": o.get("id"), "audio": audio(o.get("audio"))} if isinstance(o, dict) else o for o in value]
    if key == "artifacts" and isinstance(value, list):
        return [{k: o.get(k) for k in ("id", "kind", "payload")} if isinstance(o, dict) else o for o in value]
    return value


def _length_of(ctx: JudgeContext, e: RequestEvent | None, field_: str, request: Mapping[str, object]) -> object:
    """The effective length a request had: its output audio's frames (text-to-audio tasks)
    or its input audio file's frames (audio-input tasks); None when unknown."""
    if field_ in ("audio", "file"):
        path = request.get(field_)
        if not isinstance(path, str) or path.startswith("data:"):
            return None
        p = Path(path) if Path(path).is_absolute() else Path(ctx.plan_path).parent / path
        try:
            return int(sf.info(str(p)).frames)
        except (OSError, RuntimeError, TypeError, ValueError):
            return None
    audio = ((e["output"] if e else None) or {}).get("audio") or {}
    frames = [get(a, "frames") for a in audio.values()] if isinstance(audio, dict) else []
    return frames or None


class VariationEffect(TypedDict):
    """What one declared variation changed: the request field, the output content, the
    effective length (a length variation), the reply; None where it could not be told."""

    variation: str
    field: str
    kind: str
    input_changed: bool
    output_changed: bool | None
    length_changed: bool | None
    reply_changed: bool | None
    applied: object
    audio: object


def variation_effects(ctx: JudgeContext) -> list[VariationEffect]:
    """For each declared variation: its kind, and does it change the request field, the
    content of the output (not merely echoed metadata) and, for a length variation, the
    effective length?"""
    refs = ctx.rec.refs
    base_req = ctx.plan.base_request or {}
    base_ref = refs.get("base|cold") or refs.get("hist:base")
    base_content = content_digest(ctx, base_ref)
    out: list[VariationEffect] = []
    for v in ctx.plan.variations:
        field_, name = v.changes, v.name
        ref = refs.get(f"{name}|cold") or refs.get(f"hist:{name}")
        changed_input = base_req.get(field_) != v.request.get(field_)
        changed_output = None
        content = content_digest(ctx, ref)
        if content and base_content:
            changed_output = content != base_content
        canon_changed = None
        if ref and base_ref:
            canon_changed = (ref.get("output") or {}).get("canon") != (base_ref.get("output") or {}).get("canon")
        kind = v.kind
        length_changed = None
        if kind == "length":
            a, b = _length_of(ctx, base_ref, field_, base_req), _length_of(ctx, ref, field_, v.request)
            length_changed = None if a is None or b is None else a != b
        out.append(
            {
                "variation": name,
                "field": field_,
                "kind": kind,
                "input_changed": changed_input,
                "output_changed": changed_output,
                "length_changed": length_changed,
                "reply_changed": canon_changed,
                "applied": v.request,
                "audio": (ref.get("output") or {}).get("audio") if ref else None,
            }
        )
    return out


def _kinds_text(ctx: JudgeContext) -> tuple[list[str], str]:
    """The task's kinds the plan omits, with the plan's reasons (limitations to show)."""
    model = ctx.plan.model
    why = model.variation_kinds_justification
    omitted = list(model.omitted_kinds)
    return omitted, "; ".join(f"{k}: {why.get(k) or '(no reason given)'}" for k in omitted)


@shape.judge(
    "M3.variation",
    Declaration(
        "count",
        (
            PLAN + ": requests.base, requests.variations, model.variation_kinds, model.variation_kinds_justification",
            REFS + ": content digest of each variation's reference vs the base request's",
            MIXED + ", content digests of their raw replies (artifacts/<sha256>.json)",
            NEGATIVE,
        ),
        ("ignore_seed",),
        notes=(
            MASKED,
            "the variation effects are measured once per run by parval.gates.m3_mixed_waves:variation_effects",
            "PENDING when the plan declares no variations or no model.variation_kinds, when it leaves out a "
            "kind its task supports (tts, clon: length, seed, reference; asr, vad, diar, sep, align, spk: length, "
            "content) without a reason, when a length variation does not change the effective length, or when "
            "a variation changes nothing even on the upstream reference (a plan defect; a variation that "
            "changes no input, or whose kind is not a kind of its field, is refused at plan load, exit 2)",
            "FAIL only when the upstream reference's output changes but the candidate's does not",
        ),
    ),
)
def m3_variation(ctx: JudgeContext, n: int, effects: list[VariationEffect]) -> Result:
    """M3.variation: every declared variation changes the effective input and the output
    content, on the reference server and on the candidate, covering the kinds the task
    supports (an omitted kind needs the plan's reason, which the result shows)."""
    id_ = "M3.variation"
    model = ctx.plan.model
    declared = model.variation_kinds
    omitted, omitted_text = _kinds_text(ctx)
    limitations = [f"variation kinds the task supports but the plan leaves out: {omitted_text}"] if omitted else []

    def out(r: Result) -> Result:
        return replace(r, limitations=[*r.limitations, *limitations])

    unjustified = list(model.unjustified_omissions)
    if declared is not None and not declared:
        if unjustified or supported_kinds(model.task) is None:
            return out(
                shape.pending(
                    id_,
                    "model.variation_kinds is empty: the plan declares no variation kind the model supports "
                    + (f"and gives no reason for {', '.join(unjustified)} " if unjustified else "")
                    + "(model.variation_kinds_justification)",
                )
            )
        return out(shape.not_applicable(id_, f"the plan says the model supports no variation kind: {omitted_text}"))
    if not effects:
        need = f" (supported kinds: {', '.join(declared)})" if declared else ""
        return out(shape.pending(id_, f"the plan declares no request variations{need}"))
    mixed = mixed_outputs(ctx, n)
    # The candidate's own outputs at this count too: a variation whose output contents are
    # all among the base request's was ignored by the server under test.
    cache: dict[str, str | None] = {}
    contents: dict[str, set[str]] = {}
    undigested = 0
    for e in mixed:
        if (d := content_digest(ctx, e, cache)) is not None:
            contents.setdefault(e["req"], set()).add(d)
        elif (e.get("reply") or {}).get("outcome") == "ok":
            undigested += 1
    ignored_by_candidate = [
        e
        for e in effects
        if e["output_changed"]
        and contents.get(e["variation"])
        and contents.get("base")
        and contents[e["variation"]] <= contents["base"]
    ]
    if ignored_by_candidate:
        names = ", ".join(f"{e['variation']} ({e['field']})" for e in ignored_by_candidate)
        return out(
            shape.failed(
                id_,
                f"the candidate ignores {names}: its output content at count {n} never differs from the base "
                "request's, while the upstream reference's does",
                violation=ignored_by_candidate,
                effects=effects,
            )
        )
    defects = [e for e in effects if e["output_changed"] is False or not e["input_changed"]]
    wrong_length = [e for e in effects if e["length_changed"] is False]
    unknown = [e["variation"] for e in effects if e["output_changed"] is None]
    unknown_length = [e["variation"] for e in effects if e["kind"] == "length" and e["length_changed"] is None]
    used = {e["req"] for e in mixed}
    unused = [e["variation"] for e in effects if e["variation"] not in used]
    strangers = sorted(used - set(ctx.request_names))
    shown = {
        e["kind"]
        for e in effects
        if e["output_changed"] and e["variation"] in used and e not in wrong_length and e in effects
    }
    problems = []
    if defects:
        problems.append(
            "plan defect: "
            + ", ".join(f"{e['variation']} ({e['field']})" for e in defects)
            + " does not change the output content even on the upstream reference (choose an input the model uses)"
        )
    if wrong_length:
        problems.append(
            "labelled length but the effective length did not change: "
            + ", ".join(f"{e['variation']} ({e['field']})" for e in wrong_length)
        )
    if declared is None:
        problems.append(
            "the plan does not declare which variation kinds the model supports "
            f"(model.variation_kinds, any of {', '.join(VARIATION_KINDS)})"
        )
    else:
        missing = [k for k in declared if k not in shown]
        if missing:
            problems.append(f"no effective variation of supported kind(s) {', '.join(missing)} in the mixed waves")
        if unjustified:
            problems.append(
                f"the task supports {', '.join(unjustified)} but the plan neither varies nor gives a reason "
                "(model.variation_kinds_justification)"
            )
    if unknown:
        problems.append(f"output content unknown for {unknown} (no raw reply with content fields recorded)")
    if undigested:
        problems.append(
            f"{undigested} mixed-wave output(s) at count {n} without a readable raw reply: whether the candidate "
            "ignored a variation is not known for them"
        )
    if unknown_length:
        problems.append(f"effective length unknown for {unknown_length}")
    if unused:
        problems.append(f"not used in mixed waves: {unused}")
    if strangers:
        problems.append(f"mixed-wave outputs of requests the plan does not name: {strangers}")
    if not problems:
        for gap in (starts_missing(ctx, n, id_), schedule_missing(ctx, n, id_, ("mixed_wave",))):
            if gap is not None:
                return out(gap)
    if problems:
        return out(shape.pending(id_, "; ".join(problems), effects=effects))
    kinds = f" covering {', '.join(declared)}" if declared else ""
    return out(
        shape.passed(
            id_,
            f"{len(effects)} variation(s){kinds} each change the effective "
            "input and the output content: "
            + ", ".join(f"{e['variation']} ({e['kind']}: {e['field']})" for e in effects),
            {"variations": effects, "mixed-wave outputs": [e for e in mixed if e["req"] != "base"]},
            effects=effects,
        )
    )


JUDGES: dict[str, Callable[[JudgeContext, int, list[VariationEffect]], Result]] = {
    "M3.variation": m3_variation,
    "M3.reversed": m3_reversed,
    "M3.ten_waves": m3_ten_waves,
    "M3.history": m3_history,
}

# The registry entries the judges above declare, in the table's order.
ENTRIES: tuple[Entry, ...] = shape.entries_of(JUDGES)


def judge_m3(ctx: JudgeContext, n: int, effects: list[VariationEffect]) -> list[Result]:
    """Every M3 assertion at count n, given the run's `variation_effects`."""
    return [replace(judge(ctx, n, effects), count=n) for judge in JUDGES.values()]
