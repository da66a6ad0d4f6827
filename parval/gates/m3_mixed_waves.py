"""M3, per count N: mixed warm waves of different requests stay exact. Each declared
variation must really change the output content, request pairs must be seen admitted in
both orders, there are ten such waves per start, and slot history is respected."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from parval.gates.compare import decode_wav_b64, remove_volatile
from parval.gates.context import Context, exact_result
from parval.gates.slot_counters import NO_COUNTERS, counters_seen
from parval.plan.load import VARIATION_KINDS, variation_kind
from parval.status import Result, Status, failed, not_applicable, passed, pending

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


def content_digest(ctx: Context, e: dict[str, Any] | None, cache: dict[str, str | None] | None = None) -> str | None:
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
        vol = [str(v["path"]) for v in (ctx.plan.get("compare") or {}).get("volatile_fields", [])]
        data = remove_volatile(data, vol)
        content = {k: _content_value(k, data[k]) for k in CONTENT_KEYS if k in data}
        if content:
            blob = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
            digest = hashlib.sha256(blob).hexdigest()
    if cache is not None:
        cache[key] = digest
    return digest


def _content_value(key: str, value: Any) -> Any:
    def audio(v: Any) -> Any:
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


def variation_effects(ctx: Context) -> list[dict[str, Any]]:
    """For each declared variation: its kind, and does it change the request field and the
    content of the output (not merely echoed metadata)?"""
    refs = ctx.rec.refs
    base_req = ctx.plan["requests"]["base"]
    base_ref = refs.get("base|cold") or refs.get("hist:base")
    base_content = content_digest(ctx, base_ref)
    out = []
    for v in ctx.plan["requests"].get("variations", []):
        field_, name = v["changes"], v["name"]
        ref = refs.get(f"{name}|cold") or refs.get(f"hist:{name}")
        changed_input = base_req.get(field_) != v["request"].get(field_)
        changed_output = None
        content = content_digest(ctx, ref)
        if content and base_content:
            changed_output = content != base_content
        canon_changed = None
        if ref and base_ref:
            canon_changed = (ref.get("output") or {}).get("canon") != (base_ref.get("output") or {}).get("canon")
        out.append(
            {
                "variation": name,
                "field": field_,
                "kind": variation_kind(v),
                "input_changed": changed_input,
                "output_changed": changed_output,
                "reply_changed": canon_changed,
                "applied": v["request"],
                "audio": (ref.get("output") or {}).get("audio") if ref else None,
            }
        )
    return out


def _mixed(ctx: Context, n: int) -> list[dict[str, Any]]:
    return [e for r in ctx.rec.count_runs(n) for e in ctx.rec.requests(r, ("mixed_wave",))]


def _mixed_waves(ctx: Context, n: int) -> list[dict[str, Any]]:
    return [w for r in ctx.rec.count_runs(n) for w in ctx.rec.waves(r) if w["phase"] == "mixed_wave"]


def m3_variation(ctx: Context, n: int, effects: list[dict[str, Any]]) -> Result:
    """M3.variation: every declared variation changes the effective input and the output
    content, on the reference server and on the candidate, covering the supported kinds."""
    declared = (ctx.plan.get("model") or {}).get("variation_kinds")
    if not effects:
        need = f" (supported kinds: {', '.join(declared)})" if declared else ""
        return pending("M3.variation", f"the plan declares no request variations{need}")
    mixed = _mixed(ctx, n)
    # The candidate's own outputs at this count too: a variation whose output contents are
    # all among the base request's was ignored by the server under test.
    cache: dict[str, str | None] = {}
    contents: dict[str, set[str]] = {}
    for e in mixed:
        if (d := content_digest(ctx, e, cache)) is not None:
            contents.setdefault(e["req"], set()).add(d)
    effects = [
        {**e, "output_changed": False, "ignored_by_candidate": True}
        if contents.get(e["variation"]) and contents.get("base") and contents[e["variation"]] <= contents["base"]
        else e
        for e in effects
    ]
    ignored = [e for e in effects if e["output_changed"] is False]
    same_input = [e for e in effects if not e["input_changed"]]
    if ignored or same_input:
        names = ", ".join(f"{e['variation']} ({e['field']})" for e in ignored + same_input)
        return failed(
            "M3.variation",
            f"not an effective variation: {names} — the output content never differs from the base request's",
            effects=effects,
        )
    unknown = [e["variation"] for e in effects if e["output_changed"] is None]
    used = {e["req"] for e in mixed}
    unused = [e["variation"] for e in effects if e["variation"] not in used]
    shown = {e["kind"] for e in effects if e["output_changed"] and e["variation"] in used}
    problems = []
    if declared is None:
        problems.append(
            "the plan does not declare which variation kinds the model supports "
            f"(model.variation_kinds, any of {', '.join(VARIATION_KINDS)})"
        )
    else:
        missing = [k for k in declared if k not in shown]
        if missing:
            problems.append(f"no effective variation of supported kind(s) {', '.join(missing)} in the mixed waves")
    if unknown:
        problems.append(f"output content unknown for {unknown} (no raw reply with content fields recorded)")
    if unused:
        problems.append(f"not used in mixed waves: {unused}")
    if problems:
        return pending("M3.variation", "; ".join(problems), effects=effects)
    kinds = f" covering {', '.join(declared)}" if declared else ""
    return passed(
        "M3.variation",
        f"{len(effects)} variation(s){kinds} each change the effective "
        "input and the output content: " + ", ".join(f"{e['variation']} ({e['kind']}: {e['field']})" for e in effects),
        effects=effects,
    )


def _order_observed(w: dict[str, Any]) -> bool:
    """Was this wave's admission order observed: the poller saw each request take its slot
    before the next was sent and none finished early, or an observer trace confirmed it."""
    if not isinstance(w.get("order"), list) or w.get("trace_confirmed") is False:
        return False
    adm = w.get("admission") or {}
    return w.get("trace_confirmed") is True or (adm.get("ordered_ok") is True and not adm.get("finished_early"))


def m3_reversed(ctx: Context, n: int, effects: list[dict[str, Any]]) -> Result:
    """M3.reversed: some request pair was observed admitted in both orders, and the
    outputs of those waves are exact."""
    if n == 1:
        return not_applicable("M3.reversed", "one slot: admission order cannot be reversed")
    waves = _mixed_waves(ctx, n)
    if not waves:
        return pending("M3.reversed", f"no mixed wave recorded at count {n}")
    observed = [w for w in waves if _order_observed(w)]
    if not observed:
        if all(counters_seen([w]) == "absent" for w in waves) and not any(w.get("trace_confirmed") for w in waves):
            return pending(
                "M3.reversed",
                f"{NO_COUNTERS} and no observer trace confirmed the "
                "slots: the admission order cannot be observed "
                f"({len(waves)} mixed wave(s))",
            )
        return pending(
            "M3.reversed",
            f"admission order not observed in any of {len(waves)} mixed "
            "wave(s) (a request was not seen taking its slot before the next was sent, "
            "or one finished before the last was admitted)",
        )
    before: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for w in observed:
        order = [str(x) for x in w["order"]]
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                if a != b:
                    before.setdefault((a, b), []).append(w)
    both = sorted({tuple(sorted(p)) for p in before if (p[1], p[0]) in before})
    one_way = sorted(f"{a} before {b}" for (a, b) in before if (b, a) not in before)
    if not both:
        return pending(
            "M3.reversed",
            "no request pair was observed admitted in both orders in "
            f"{len(observed)} observed wave(s); seen in one order only: "
            f"{', '.join(one_way[:10])}",
            one_order_pairs=one_way,
        )
    keys = {(w["run"], w["wave"], int(w.get("retry", 0))) for a, b in both for w in before[(a, b)] + before[(b, a)]}
    reqs = [e for e in _mixed(ctx, n) if (e["run"], e["wave"], int(e.get("retry", 0))) in keys]
    pairs = ", ".join(f"{a}/{b}" for a, b in both)
    r = exact_result(
        "M3.reversed",
        ctx.judge(reqs),
        f"{len(both)} request pair(s) observed admitted in both orders ({pairs}); outputs of those {len(keys)} wave(s)",
        ctx,
    )
    r.evidence.update(
        reversed_pairs=[list(p) for p in both],
        one_order_pairs=one_way,
        observed_waves=len(observed),
        mixed_waves=len(waves),
    )
    return r


def m3_ten_waves(ctx: Context, n: int, effects: list[dict[str, Any]]) -> Result:
    """M3.ten_waves: ten or more mixed warm waves in each of three starts at the largest
    count."""
    largest = max(ctx.counts)
    if n != largest:
        return not_applicable("M3.ten_waves", f"judged at the largest advertised count ({largest}) only")
    per = {r: len({e["wave"] for e in ctx.rec.waves(r) if e["phase"] == "mixed_wave"}) for r in ctx.rec.count_runs(n)}
    short = {r: k for r, k in per.items() if k < 10}
    if len(per) < 3:
        return pending("M3.ten_waves", f"{len(per)} start(s); three are required", mixed_waves=per)
    if short:
        return failed("M3.ten_waves", f"fewer than ten mixed warm waves in {short}", mixed_waves=per)
    return passed(
        "M3.ten_waves", f"{min(per.values())}+ mixed warm waves in each of {len(per)} starts", mixed_waves=per
    )


def m3_history(ctx: Context, n: int, effects: list[dict[str, Any]]) -> Result:
    """M3.history: for a cache-sensitive model, mixed-wave outputs equal same-history
    single-slot replays, with the slot histories known from ordered admission."""
    if not ctx.cache_sensitive:
        return not_applicable(
            "M3.history",
            "model declared stateless (model.cache_sensitive: false): outputs do not depend on session history",
        )
    waves = _mixed_waves(ctx, n)
    disagree = [w for w in waves if w.get("trace_confirmed") is False]
    unordered = [
        w
        for w in waves
        if not (w.get("admission") or {}).get("ordered_ok", True) or (w.get("admission") or {}).get("finished_early")
    ]
    t = ctx.judge(_mixed(ctx, n))
    traced = sum(1 for w in waves if w.get("trace_confirmed"))
    r = exact_result("M3.history", t, "mixed-wave outputs vs same-history single-slot replays", ctx)
    r.evidence.update(trace_confirmed_waves=traced, waves=len(waves))
    if r.status is Status.PASS and disagree:
        r = pending(
            "M3.history",
            f"observer trace disagrees with ordered admission in {len(disagree)} wave(s)",
            waves=[(w["run"], w["wave"]) for w in disagree],
        )
    elif r.status is Status.PASS and unordered:
        r = pending("M3.history", f"ordered admission not observed in {len(unordered)} wave(s): slot histories unknown")
    if not traced:
        r.limitations.append("no [SLOT_VALIDATION] observer trace: slot mapping from ordered admission only")
    return r


JUDGES: dict[str, Callable[[Context, int, list[dict[str, Any]]], Result]] = {
    "M3.variation": m3_variation,
    "M3.reversed": m3_reversed,
    "M3.ten_waves": m3_ten_waves,
    "M3.history": m3_history,
}


def judge_m3(ctx: Context, n: int, effects: list[dict[str, Any]]) -> list[Result]:
    """Every M3 assertion at count n, given the run's `variation_effects`."""
    out = [judge(ctx, n, effects) for judge in JUDGES.values()]
    for r in out:
        r.count = n
    return out
