"""The model gate (M1-M4, M6), execution path (X1-X3) and quality rules (Q1-Q6), judged
purely from recorded events. Per-count assertions return one Result per count."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from parval.gates.compare import decode_wav_b64, remove_volatile, volatility
from parval.gates.exactness import (
    Tally,
    failure_key,
    judge_requests,
    set_aside_failures,
    tolerance_check,
)
from parval.gates.records import COUNT_PHASES, Records
from parval.plan import VARIATION_KINDS, variation_kind
from parval.status import Result, Status, blocked, failed, not_applicable, passed, pending

COMPARISON_IDS = {
    "M1.legacy_parity", "M1.cap1_parity", "M2.exact", "M2.unload_reload", "M2.serial_reuse",
    "M3.variation", "M3.reversed", "M3.history", "M4.invalid_alongside", "M4.load_failure_retry",
    "M4.targeted_unload", "M4.all_unload", "M4.unload_during_first_load", "M6.streaming", "M6.batch",
    "Q4", "Q5",
}


class Context:
    def __init__(self, rec: Records, plan: dict[str, Any], manifest: dict[str, Any],
                 run_dir: Path | None, plan_path: str) -> None:
        self.rec = rec
        self.plan = plan
        self.manifest = manifest
        self.run_dir = run_dir
        self.plan_path = plan_path
        tol = (plan.get("compare") or {}).get("tolerance")
        self.tolerance: int | None = int(tol["max_abs_sample_diff"]) if tol else None
        self.volatile: list[str] = [str(v["path"]) for v in (plan.get("compare") or {}).get("volatile_fields", [])]

    def judge(self, events: list[dict[str, Any]]) -> Tally:
        """Judge these requests; the same starts' and phases' requests in set-aside
        attempts are judged too, and their failures (only) join the tally."""
        t = judge_requests(self.rec, events, run_dir=self.run_dir, tolerance=self.tolerance,
                           volatile=self.volatile)
        scope = {_scope_key(e) for e in events}
        aside = [e for e in self.rec.set_aside_requests() if _scope_key(e) in scope]
        if aside:
            t.merge(self.judge_set_aside(aside))
        return t

    def judge_set_aside(self, events: list[dict[str, Any]]) -> Tally:
        return set_aside_failures(self.rec, [e for e in events if e.get("ref") and not e.get("expect_error")],
                                  run_dir=self.run_dir, tolerance=self.tolerance, volatile=self.volatile)

    def set_aside_scope(self, count: int | None) -> tuple[Tally, list[dict[str, Any]]]:
        """Failures in set-aside attempts for one Q5 scope: count starts at `count`, or
        (None) every other start of the executable under test. (tally, crashes)"""
        def in_scope(run: str, attempt: Any) -> bool:
            start = (self.rec.set_aside.get((run, attempt)) or {}).get("run_start") or {}
            own = start.get("count") if start.get("role") == "count" else None
            return bool(own == count)
        events = [e for e in self.rec.set_aside_requests() if in_scope(e["run"], e.get("attempt"))]
        crashes = [c for c in self.rec.set_aside_crashes() if in_scope(c["run"], c.get("attempt"))]
        return self.judge_set_aside(events), crashes

    def argv(self, run: str) -> str:
        for e in self.rec.by_run.get(run, []):
            if e["kind"] == "server_ready":
                return " ".join(e.get("argv", []))
        return ""

    def repro(self, run: str | None = None, extra: str = "") -> str:
        cmd = f"parval run {self.plan_path}"
        if run and (argv := self.argv(run)):
            cmd += f"   # server: {argv}"
        return cmd + (f"; {extra}" if extra else "")

    @property
    def counts(self) -> list[int]:
        return sorted(int(c) for c in self.plan["counts"])

    @property
    def cache_sensitive(self) -> bool:
        return bool(self.plan["model"].get("cache_sensitive"))


def _scope_key(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e.get("run"), e.get("phase"), bool(e.get("reversed")))


def exact_result(id_: str, tally: Tally, what: str, ctx: Context, run: str | None = None,
                 count: int | None = None) -> Result:
    """The verdict of an output comparison. A FAIL says what it rests on (`failure_kind`):
    "output" (mismatches only: what serial variation or an uncaught negative control may
    mask) or "request" (request errors or malformed replies, which neither explains)."""
    ev = tally.summary()
    if tally.errors or tally.malformed:
        r = failed(id_, f"{what}: {tally.problem()}", failure_kind="request", **ev)
    elif tally.mismatches:
        r = failed(id_, f"{what}: {tally.problem()}", failure_kind="output", **ev)
    elif tally.indeterminate or tally.no_reference or tally.compared == 0:
        r = pending(id_, f"{what}: {tally.problem()}", **ev)
    else:
        note = f" ({tally.tolerated} within the declared tolerance)" if tally.tolerated else ""
        r = passed(id_, f"{what}: {tally.exact + tally.tolerated}/{tally.compared} exact{note}", **ev)
    r.reproduction = ctx.repro(run)
    r.count = count
    return r


# -- execution path ----------------------------------------------------------------------
def judge_x(ctx: Context) -> list[Result]:
    rec = ctx.rec
    out: list[Result] = []
    legacy_ready = _ready(rec, "ref-candidate-legacy")
    cap1_ready = _ready(rec, "ref-candidate-cap1")
    probes = rec.kind("x1_config_probe")
    regs = rec.kind("x1_registration_probe")
    if legacy_ready is None or not probes:
        out.append(pending("X1", "unflagged candidate run or slots-config probes missing"))
    else:
        problems = []
        if legacy_ready.get("warning_marker"):
            problems.append("the experimental-runtime warning was printed without --parallel-jobs")
        for p in probes:
            if not (p.get("rejected") and p.get("message_ok")):
                problems.append(f"config slots={p['value']!r} was not rejected at startup with the legacy text")
        for reg in regs:
            if not reg.get("ok"):
                problems.append(f"registration slots={reg['value']!r}: got {reg['reply'].get('status')} {reg.get('message')!r}")
        fields = (rec.ends.get("ref-candidate-legacy") or {}).get("status_fields") or {}
        if fields.get("slot_fields"):
            problems.append("/v1/models shows slot fields on the legacy runtime")
        ev: dict[str, Any] = {"config_probes": probes, "registration_probes": regs}
        untried = _untried_forms(probes)
        if problems:
            out.append(failed("X1", "; ".join(problems), **ev))
        elif untried:
            out.append(pending("X1", f"startup not tried with slots forms {', '.join(untried)} "
                               "(all of 1, 2, null, false, \"4\" are required)", **ev))
        elif regs and (reg_untried := _untried_forms(regs)):
            out.append(pending("X1", f"registration not tried with slots forms {', '.join(reg_untried)}", **ev))
        elif not regs:
            out.append(pending("X1", "startup rejection verified; registration probes need server.ui_management", **ev))
        else:
            out.append(passed("X1", "legacy path: no warning, every explicit slots field rejected "
                              f"({len(probes)} config forms, {len(regs)} registration forms)", **ev))
    if cap1_ready is None:
        out.append(pending("X2", "flagged capacity-one run missing"))
    else:
        problems = []
        if not cap1_ready.get("warning_marker"):
            problems.append("flagged capacity-one start printed no experimental-runtime warning")
        fields = (rec.ends.get("ref-candidate-cap1") or {}).get("status_fields") or {}
        if fields.get("first_slots") != 1:
            problems.append(f"omitted slots should mean capacity one; /v1/models slots {fields.get('first_slots')}")
        for run, start in rec.runs.items():
            ready = _ready(rec, run)
            if start.get("role") == "count" and ready and not ready.get("warning_marker"):
                problems.append(f"{run}: flagged start printed no warning")
        ev = {"cap1_status_fields": fields}
        out.append(failed("X2", "; ".join(problems), **ev) if problems else
                   passed("X2", "flagged runs print the warning; omitted slots = capacity one on the parallel runtime", **ev))
    out.append(judge_x3(ctx))
    for r in out:
        r.reproduction = ctx.repro("ref-candidate-cap1" if r.id != "X1" else "ref-candidate-legacy")
    return out


# Every explicit slots form the legacy path must reject, at startup and on registration.
X1_FORMS: tuple[Any, ...] = (1, 2, None, False, "4")


def _form(value: Any) -> str:
    return json.dumps(value)  # 1, false and "4" stay distinct (1 == True in Python)


def _untried_forms(probes: list[dict[str, Any]]) -> list[str]:
    tried = {_form(p.get("value")) for p in probes}
    return [_form(v) for v in X1_FORMS if _form(v) not in tried]


def judge_x3(ctx: Context) -> Result:
    """X3: resized across one (2→1→2→1) on one flagged process, status fields kept, and the
    first output after every resize equal to the cold reference."""
    resize = ctx.rec.kind("x3_resize_probe")
    if not resize:
        return pending("X3", "resize-across-one probe needs server.ui_management (registration)")
    e = resize[-1]
    steps = e.get("steps") or []
    if e.get("capacity_refused"):
        return pending("X3", f"the model's capacity does not allow two slots (server: {e['capacity_refused']!r}): "
                       "resizing across one cannot be exercised with this model", steps=steps)
    sizes = [s.get("slots") for s in steps]
    if 2 not in sizes or 1 not in sizes:
        return pending("X3", f"resize steps {sizes} do not cross one (both 2 and 1 are needed)", steps=steps)
    if not e.get("ok"):
        bad = [s for s in steps if (s.get("reply") or {}).get("status") != 200 or not s.get("status_fields")]
        return failed("X3", "resizing across one failed or lost the parallel lifecycle: " + "; ".join(
            f"slots={s['slots']}: status {(s.get('reply') or {}).get('status')}, "
            f"status fields {'kept' if s.get('status_fields') else 'missing'}" for s in bad), steps=steps)
    outputs = ctx.rec.requests("ref-candidate-cap1", ("x3_after_resize",))
    if not outputs:
        return pending("X3", "resized across one, but no output after a resize was recorded", steps=steps)
    r = exact_result("X3", ctx.judge(outputs), "resized " + "→".join(["1", *map(str, sizes)])
                     + " on one process, parallel status fields kept; first output after each resize "
                     "vs the cold reference", ctx, "ref-candidate-cap1")
    r.evidence["steps"] = steps
    return r


def _ready(rec: Records, run: str) -> dict[str, Any] | None:
    for e in rec.by_run.get(run, []):
        if e["kind"] == "server_ready":
            return e
    return None


# -- M1 -----------------------------------------------------------------------------------
def _outputs(rec: Records, run: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["req"], e["phase"]): e for e in rec.requests(run, ("ref_cold", "ref_warm", "ref_warm2"))}


def serial_variation(rec: Records, *, run_dir: Path | None = None, tolerance: int | None = None,
                     volatile: list[str] | None = None) -> tuple[Status, str, dict[str, Any]]:
    """Do serial repeats of the baseline agree? With a tolerance declared in the plan (the
    procedure's model-specific quality criterion), repeats whose only difference is PCM
    samples within it agree; anything else that differs is serial variation."""
    a, b = _outputs(rec, "ref-baseline-a"), _outputs(rec, "ref-baseline-b")
    if not a or not b:
        return Status.PENDING, "two fresh baseline starts are needed to measure serial repeat variation", {}
    diffs: list[dict[str, Any]] = []
    tolerated: list[dict[str, Any]] = []

    def differ(x: dict[str, Any], y: dict[str, Any], where: dict[str, Any], labels: tuple[str, str]) -> None:
        cx, cy = (x.get("output") or {}).get("canon"), (y.get("output") or {}).get("canon")
        if cx == cy:
            return
        if tolerance is not None:
            found = tolerance_check(run_dir, x, y, volatile or [], tolerance)
            if found.pop("covered"):
                tolerated.append({**where, **found})
                return
            where = {**where, "tolerance_check": found.get("why", "")}
        diffs.append({**where, labels[0]: cx, labels[1]: cy})

    for (req, phase), e in a.items():
        ca = (e.get("output") or {}).get("canon")
        other = b.get((req, phase))
        cb = (other.get("output") or {}).get("canon") if other else None
        if not ca or not cb or other is None:
            return Status.PENDING, f"{req}/{phase}: no valid output in one of the starts", {}
        differ(e, other, {"req": req, "phase": phase}, ("start_a", "start_b"))
    for run, outs in (("ref-baseline-a", a), ("ref-baseline-b", b)):
        for (req, phase), e in outs.items():
            if phase == "ref_warm2":
                w = outs.get((req, "ref_warm"))
                if w:
                    differ(w, e, {"req": req, "run": run}, ("warm", "warm2"))
    ev: dict[str, Any] = {"outputs_compared": len(a), "differences": diffs}
    if tolerance is not None:
        ev.update(within_declared_tolerance=tolerated, tolerance=tolerance)
    if diffs:
        return Status.PENDING, (f"parity unverified: serial output varies ({len(diffs)} difference(s) "
                                "between repeats on one slot or across two fresh starts"
                                + (f" beyond the declared tolerance {tolerance}" if tolerance is not None else "")
                                + ")"), ev
    if tolerated:
        return Status.PASS, (f"{len(a)} outputs agree across two fresh starts and warm repeats "
                             f"({len(tolerated)} repeat(s) within the declared tolerance {tolerance})"), ev
    return Status.PASS, f"{len(a)} outputs identical across two fresh starts and warm repeats", ev


def manifest_gaps(ctx: Context) -> list[str]:
    """Each item the procedure's manifest needs (M1.manifest) that this run's manifest lacks.
    What parval cannot discover comes from the plan's `identity` block."""
    man = ctx.manifest

    def at(path: str) -> Any:
        node: Any = man
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    gaps = [f"{path} ({what})" for path, what in (
        ("model.sha256", "checkpoint hash"),
        ("model.task", "task"), ("model.mode", "mode"), ("settings", "settings"),
        ("fixtures", "fixture hashes"), ("requests", "request bodies and seeds"),
        ("executables.baseline.sha256", "baseline executable hash"),
        ("executables.candidate.sha256", "candidate executable hash"),
        ("platform.os", "OS"), ("platform.device", "device"), ("platform.driver", "driver"),
        ("platform.backend", "backend"), ("platform.threads", "threads"),
        ("plan.sha256", "plan hash"),
    ) if at(path) is None or at(path) == ""]
    declared = (ctx.plan.get("model") or {}).get("auxiliary_files") or []
    hashed = at("model.auxiliary") or {}
    if len(hashed) < len(declared):
        gaps.append(f"model.auxiliary ({len(hashed)} of {len(declared)} auxiliary files hashed)")
    if not (at("identity.quantization") or at("model.quantization")):
        gaps.append("identity.quantization (declare it in the plan: identity.quantization)")
    for role in ("baseline", "candidate"):
        for key, what in (("source_commit", "source commit"), ("build_flags", "build flags")):
            if at(f"identity.{role}.{key}") is None:
                gaps.append(f"identity.{role}.{key} ({role} {what}; declare it in the plan)")
    if not ctx.rec.refs:
        gaps.append("references (no baseline reference output recorded)")
    return gaps


def judge_m1(ctx: Context, serial: tuple[Status, str, dict[str, Any]]) -> list[Result]:
    rec = ctx.rec
    out: list[Result] = []
    man = ctx.manifest
    missing = manifest_gaps(ctx)
    ident = man.get("identity") or {}
    ev: dict[str, Any] = {"missing": missing, "identity": ident, "fixtures": len(man.get("fixtures") or {}),
                          "references": len(rec.refs), "platform": {k: v for k, v in (man.get("platform") or {}).items()
                                                                   if k != "gpu"}}
    out.append(pending("M1.manifest", f"the manifest does not identify: {'; '.join(missing)}", **ev) if missing else
               passed("M1.manifest", "manifest hashes checkpoint, auxiliaries, fixtures, executables and plan; records "
                      "quantization, task/mode/settings, seeds, references, source commits, build flags, OS, device, "
                      "driver, backend and threads", **ev))
    out.append(Result("M1.serial_repeat", serial[0], serial[1], serial[2]))
    for id_, run in (("M1.legacy_parity", "ref-candidate-legacy"), ("M1.cap1_parity", "ref-candidate-cap1")):
        events = rec.requests(run, ("ref_cold", "ref_warm", "ref_warm2"))
        if not events:
            out.append(pending(id_, f"{run} did not complete"))
            continue
        out.append(exact_result(id_, ctx.judge(events), f"{run} vs upstream legacy (cold, warm, repeated warm)", ctx, run))
    refs = rec.refs
    colds = {k for k in refs if k.endswith("|cold") or (k.startswith("hist:") and ">" not in k)}
    warms = set(refs) - colds
    if not colds or not warms:
        out.append(pending("M1.cold_warm_refs", "cold and warm references were not both recorded"))
    else:
        same = [k.split("|")[0] for k in colds if k.endswith("|cold") and
                (refs[k].get("output") or {}).get("canon") ==
                (refs.get(k.replace("|cold", "|warm"), {}).get("output") or {}).get("canon")]
        out.append(passed("M1.cold_warm_refs",
                          f"{len(colds)} cold and {len(warms)} warm/history references kept apart; "
                          "cold outputs are compared with cold references only",
                          cold_equals_warm_for=sorted(same)))
    return out


# -- M2 (per count) ----------------------------------------------------------------------
def judge_m2(ctx: Context, n: int) -> list[Result]:
    rec = ctx.rec
    runs = rec.count_runs(n)
    complete = [r for r in runs if r in rec.ends and not _crashed(rec, r)]
    crashed = [c for c in rec.crashes if c["run"] in runs]
    fails = [f for f in rec.failures if str(f.get("unit", f.get("run", ""))).startswith(f"count{n}-")]
    out: list[Result] = []
    ev: dict[str, Any] = {"starts": runs, "complete": complete}
    if crashed:
        c = crashed[0]
        out.append(failed("M2.starts", f"server crashed during {c['run']} ({c['where']}), exit status {c['exit_code']}",
                          crashes=crashed, log_tail=c.get("log_tail", ""), **ev))
    elif fails:
        out.append(blocked("M2.starts", f"{len(fails)} start(s) did not complete: {fails[0]['reason']}",
                           failures=fails, **ev))
    elif len(complete) >= 3:
        out.append(passed("M2.starts", f"{len(complete)} fresh starts at count {n}", **ev))
    else:
        out.append(pending("M2.starts", f"{len(complete)} fresh start(s) at count {n}; the procedure needs at least three", **ev))

    cold_ok, warm_ok, active_bad, drained_bad = [], [], [], []
    for run in complete:
        reqs = rec.requests(run)
        waves = rec.waves(run)
        if reqs and reqs[0]["phase"] == "cold_wave" and any(w["phase"] == "cold_wave" and w["n"] == n for w in waves):
            cold_ok.append(run)
        if any(w["phase"] == "warm_wave" for w in waves) and (
                any(w["phase"] == "mixed_wave" for w in waves) or not ctx.plan["requests"].get("variations")):
            warm_ok.append(run)
        attempts: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for w in waves:
            if w["mode"] != "serial":
                attempts.setdefault((w["phase"], w["wave"]), []).append(w)
        for (phase, wave), tries in attempts.items():
            # A wave counts when any attempt of it showed N loaded leases at once.
            seen = [(t.get("status") or {}).get("max_active_loaded") for t in tries]
            if any(x is not None and x >= n for x in seen):
                continue
            overlap = client_overlap([r for r in reqs if r["phase"] == phase and r["wave"] == wave])
            active_bad.append({"run": run, "phase": phase, "wave": wave, "max_active_loaded": seen,
                               "attempts": len(tries), "client_overlap": overlap,
                               "max_active": [(t.get("status") or {}).get("max_active") for t in tries],
                               "polls": [(t.get("status") or {}).get("polls") for t in tries],
                               "counters": _counters_seen(tries)})
        for w in waves:
            if not (w.get("drained") or {}).get("ok"):
                drained_bad.append({"run": run, "phase": w["phase"], "wave": w["wave"], **(w.get("drained") or {}),
                                    "counters": _counters_seen([w])})
    waves_all = [w for r in complete for w in rec.waves(r)]
    if not complete:
        for id_ in ("M2.cold_wave", "M2.warm_waves", "M2.observed_active", "M2.drained"):
            out.append(pending(id_, f"no start at count {n}"))
    else:
        out.append(passed("M2.cold_wave", f"every start began with a true concurrent cold wave of {n}", runs=cold_ok)
                   if len(cold_ok) == len(complete) else
                   failed("M2.cold_wave", f"starts without a leading cold wave: {sorted(set(complete) - set(cold_ok))}"))
        out.append(passed("M2.warm_waves", "every start ran warm and mixed warm waves", runs=warm_ok)
                   if len(warm_ok) == len(complete) else
                   failed("M2.warm_waves", f"starts without warm/mixed waves: {sorted(set(complete) - set(warm_ok))}"))
        out.append(_observed_active(n, active_bad, waves_all))
        out.append(_drained(drained_bad, waves_all))
    tally = ctx.judge([e for r in runs for e in rec.requests(r, COUNT_PHASES)])
    out.append(exact_result("M2.exact", tally, f"count {n}: every wave output vs its reference", ctx, runs[0] if runs else None))
    unload_bad: list[dict[str, Any]] = []
    reload = Tally()
    for run in runs:
        # Every unload/reload cycle of the start (the campaign runs several for M5).
        probes = [e for e in rec.by_run.get(run, []) if e["kind"] == "probe" and e["name"] == "unload"]
        bad = [p for p in probes if not (p["reply"]["status"] == 200 and p.get("listed") and p.get("loaded_false"))]
        if not probes or bad:
            first_bad = bad[0] if bad else None
            unload_bad.append({"run": run, "probe": first_bad, "cycle": (first_bad or {}).get("cycle"),
                               "cycles": len(probes), "what": _unload_observed(first_bad, rec.waves(run))})
        reload.merge(ctx.judge(rec.requests(run, ("reload_wave",))))
    if unload_bad:
        by_what: dict[str, list[str]] = {}
        for b in unload_bad:
            by_what.setdefault(b["what"], []).append(b["run"])
        out.append(failed("M2.unload_reload", "unload/reload not shown: " + "; ".join(
            f"{what} ({len(rs)} start(s): {', '.join(rs)})" for what, rs in by_what.items()), starts=unload_bad))
    else:
        out.append(exact_result("M2.unload_reload", reload, "outputs after unload/reload vs cold references", ctx, runs[0] if runs else None))
    out.append(exact_result("M2.serial_reuse", ctx.judge([e for r in runs for e in rec.requests(r, ("serial_reuse",))]),
                            "serial requests after the concurrent waves", ctx, runs[0] if runs else None))
    for r in out:
        r.count = n
    return out


def _counters_seen(waves: list[dict[str, Any]]) -> str:
    """What the status poller saw of the slot counters during these wave attempts:
    'present', 'absent' (/v1/models listed the model without active_slots) or 'no_answer'."""
    answered = False
    for w in waves:
        st = w.get("status") or {}
        if st.get("fields_present", st.get("max_active") is not None):
            return "present"
        polls = st.get("polls") or 0
        answered = answered or polls > (st.get("poll_errors") or 0)
    return "absent" if answered else "no_answer"


NO_COUNTERS = "the server publishes no slot counters"


def _observed_active(n: int, active_bad: list[dict[str, Any]], waves_all: list[dict[str, Any]]) -> Result:
    absent = [w for w in active_bad if w["counters"] == "absent"]
    unanswered = [w for w in active_bad if w["counters"] == "no_answer"]
    counted = [w for w in active_bad if w["counters"] == "present"]
    served_serially = [w for w in counted if w["client_overlap"]]
    problems = []
    if absent:
        problems.append(f"{NO_COUNTERS} (/v1/models lists the model without active_slots during {len(absent)} "
                        "wave(s)): the server cannot show that N requests held slots at once")
    if served_serially:
        problems.append(f"{len(served_serially)} wave(s) were all in flight from the client "
                        f"yet the server never showed active_slots == {n} with the model loaded")
    if problems:
        return failed("M2.observed_active", "; ".join(problems), waves=active_bad[:30])
    if active_bad:
        parts = []
        if counted:
            parts.append(f"{len(counted)} wave(s) never overlapped even from the client side "
                         "(an overloaded machine or too short a service time)")
        if unanswered:
            parts.append(f"the status poller got no /v1/models entry for the model during {len(unanswered)} wave(s)")
        return pending("M2.observed_active", "; ".join(parts) + ": concurrency not shown", waves=active_bad[:30])
    concurrent = len(waves_all) - sum(1 for w in waves_all if w["mode"] == "serial")
    return passed("M2.observed_active", f"the status poller saw active_slots == {n} (loaded) in all {concurrent} concurrent waves",
                  poll_hz=[(w.get("status") or {}).get("poll_hz") for w in waves_all][:10])


def _drained(drained_bad: list[dict[str, Any]], waves_all: list[dict[str, Any]]) -> Result:
    if not drained_bad:
        return passed("M2.drained", f"active_slots == queued_requests == 0 after all {len(waves_all)} waves")
    absent = [w for w in drained_bad if w["counters"] == "absent"]
    unanswered = [w for w in drained_bad if w["counters"] == "no_answer"
                  or (w["counters"] == "present" and w.get("active") is None)]
    no_queue = [w for w in drained_bad if w["counters"] == "present" and w.get("active") is not None
                and w.get("queued") is None]
    busy = [w for w in drained_bad if w["counters"] == "present" and w.get("active") is not None
            and w.get("queued") is not None]
    problems = []
    if absent:
        problems.append(f"{NO_COUNTERS}: no drain to zero can be shown after {len(absent)} wave(s)")
    if busy:
        last = busy[0]
        problems.append(f"{len(busy)} wave(s) left counters non-zero (first: {last['run']} {last['phase']} "
                        f"{last['wave']}: active_slots {last['active']}, queued_requests {last['queued']})")
    if no_queue:
        problems.append(f"the server publishes no queued_requests: an empty queue cannot be shown after {len(no_queue)} wave(s)")
    if problems:
        return failed("M2.drained", "; ".join(problems), waves=drained_bad[:30])
    return pending("M2.drained", f"the status poller got no answer while checking the drain after {len(unanswered)} wave(s)",
                   waves=drained_bad[:30])


def _unload_observed(probe: dict[str, Any] | None, waves: list[dict[str, Any]]) -> str:
    """What the per-start unload probe showed, in words (M2.unload_reload)."""
    if probe is None:
        return "no unload was recorded"
    reply = probe.get("reply") or {}
    if reply.get("status") != 200:
        got = f"answered {reply['status']}" if reply.get("status") is not None else f"gave no answer ({reply.get('outcome')})"
        err = f": {str(reply['error'])[:120]}" if reply.get("error") else ""
        return f"the unload route /v1/tasks/unload_models {got}{err}"
    if not probe.get("listed"):
        return "the unload reply did not list the model in `unloaded`"
    # The wave summaries only see `loaded` next to active_slots.
    loaded_seen = any((w.get("status") or {}).get("max_active_loaded") is not None for w in waves)
    why = "" if loaded_seen else (" (no status sample of this start showed loaded:true either: "
                                  "the server may publish no `loaded`)")
    return f"/v1/models never showed the model loaded:false after the unload{why}"


def client_overlap(reqs: list[dict[str, Any]]) -> bool:
    """Were all of a wave's requests in flight together as the client saw it (every send
    before the first reply)? Retried attempts of a wave are judged separately."""
    by_attempt: dict[int, list[dict[str, Any]]] = {}
    for r in reqs:
        by_attempt.setdefault(int(r.get("retry", 0)), []).append(r)
    return any(len(group) > 1 and max(r["t_send"] for r in group) < min(r["t_done"] for r in group)
               for group in by_attempt.values())


def _crashed(rec: Records, run: str) -> bool:
    return any(c["run"] == run for c in rec.crashes)


# -- M3 (per count) ----------------------------------------------------------------------
# Reply fields that carry what the model produced; anything else (echoed seed, options,
# timing, per-artifact meta) is metadata and never shows that an input was effective.
CONTENT_KEYS = ("text", "custom_schema_output", "audio", "named_audio_outputs", "artifacts",
                "segments", "speaker_turns", "words")


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
            digest = hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    if cache is not None:
        cache[key] = digest
    return digest


def _content_value(key: str, value: Any) -> Any:
    def audio(v: Any) -> Any:
        samples, rate, _ = decode_wav_b64(v)
        if samples is None:
            return v
        return {"pcm_sha256": hashlib.sha256(samples.tobytes()).hexdigest(), "rate": rate,
                "shape": list(samples.shape)}
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
        out.append({"variation": name, "field": field_, "kind": variation_kind(v), "input_changed": changed_input,
                    "output_changed": changed_output, "reply_changed": canon_changed, "applied": v["request"],
                    "audio": (ref.get("output") or {}).get("audio") if ref else None})
    return out


def _judge_variation(ctx: Context, mixed: list[dict[str, Any]], effects: list[dict[str, Any]]) -> Result:
    declared = (ctx.plan.get("model") or {}).get("variation_kinds")
    if not effects:
        need = f" (supported kinds: {', '.join(declared)})" if declared else ""
        return pending("M3.variation", f"the plan declares no request variations{need}")
    # The candidate's own outputs at this count too: a variation whose output contents are
    # all among the base request's was ignored by the server under test.
    cache: dict[str, str | None] = {}
    contents: dict[str, set[str]] = {}
    for e in mixed:
        if (d := content_digest(ctx, e, cache)) is not None:
            contents.setdefault(e["req"], set()).add(d)
    effects = [{**e, "output_changed": False, "ignored_by_candidate": True}
               if contents.get(e["variation"]) and contents.get("base")
               and contents[e["variation"]] <= contents["base"] else e for e in effects]
    ignored = [e for e in effects if e["output_changed"] is False]
    same_input = [e for e in effects if not e["input_changed"]]
    if ignored or same_input:
        names = ", ".join(f"{e['variation']} ({e['field']})" for e in ignored + same_input)
        return failed("M3.variation", f"not an effective variation: {names} — the output content never differs "
                      "from the base request's", effects=effects)
    unknown = [e["variation"] for e in effects if e["output_changed"] is None]
    used = {e["req"] for e in mixed}
    unused = [e["variation"] for e in effects if e["variation"] not in used]
    shown = {e["kind"] for e in effects if e["output_changed"] and e["variation"] in used}
    problems = []
    if declared is None:
        problems.append("the plan does not declare which variation kinds the model supports "
                        f"(model.variation_kinds, any of {', '.join(VARIATION_KINDS)})")
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
    return passed("M3.variation", f"{len(effects)} variation(s){kinds} each change the effective input and the output "
                  "content: " + ", ".join(f"{e['variation']} ({e['kind']}: {e['field']})" for e in effects), effects=effects)


def _order_observed(w: dict[str, Any]) -> bool:
    """Was this wave's admission order observed: the poller saw each request take its slot
    before the next was sent and none finished early, or an observer trace confirmed it."""
    if not isinstance(w.get("order"), list) or w.get("trace_confirmed") is False:
        return False
    adm = w.get("admission") or {}
    return w.get("trace_confirmed") is True or (adm.get("ordered_ok") is True and not adm.get("finished_early"))


def _judge_reversed(ctx: Context, runs: list[str], n: int) -> Result:
    rec = ctx.rec
    waves = [w for r in runs for w in rec.waves(r) if w["phase"] == "mixed_wave"]
    if not waves:
        return pending("M3.reversed", f"no mixed wave recorded at count {n}")
    observed = [w for w in waves if _order_observed(w)]
    if not observed:
        if all(_counters_seen([w]) == "absent" for w in waves) and not any(w.get("trace_confirmed") for w in waves):
            return pending("M3.reversed", f"{NO_COUNTERS} and no observer trace confirmed the slots: the admission "
                           f"order cannot be observed ({len(waves)} mixed wave(s))")
        return pending("M3.reversed", f"admission order not observed in any of {len(waves)} mixed wave(s) (a request was "
                       "not seen taking its slot before the next was sent, or one finished before the last was admitted)")
    before: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for w in observed:
        order = [str(x) for x in w["order"]]
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                if a != b:
                    before.setdefault((a, b), []).append(w)
    both = sorted({tuple(sorted(p)) for p in before if (p[1], p[0]) in before})
    one_way = sorted(f"{a} before {b}" for (a, b) in before if (b, a) not in before)
    if not both:
        return pending("M3.reversed", f"no request pair was observed admitted in both orders in {len(observed)} "
                       f"observed wave(s); seen in one order only: {', '.join(one_way[:10])}",
                       one_order_pairs=one_way)
    keys = {(w["run"], w["wave"], int(w.get("retry", 0))) for a, b in both
            for w in before[(a, b)] + before[(b, a)]}
    reqs = [e for r in runs for e in rec.requests(r, ("mixed_wave",))
            if (e["run"], e["wave"], int(e.get("retry", 0))) in keys]
    pairs = ", ".join(f"{a}/{b}" for a, b in both)
    r = exact_result("M3.reversed", ctx.judge(reqs), f"{len(both)} request pair(s) observed admitted in both orders "
                     f"({pairs}); outputs of those {len(keys)} wave(s)", ctx)
    r.evidence.update(reversed_pairs=[list(p) for p in both], one_order_pairs=one_way, observed_waves=len(observed),
                      mixed_waves=len(waves))
    return r


def judge_m3(ctx: Context, n: int, effects: list[dict[str, Any]]) -> list[Result]:
    rec = ctx.rec
    runs = rec.count_runs(n)
    mixed = [e for r in runs for e in rec.requests(r, ("mixed_wave",))]
    out: list[Result] = [_judge_variation(ctx, mixed, effects)]
    if n == 1:
        out.append(not_applicable("M3.reversed", "one slot: admission order cannot be reversed"))
    else:
        out.append(_judge_reversed(ctx, runs, n))
    largest = max(ctx.counts)
    if n != largest:
        out.append(not_applicable("M3.ten_waves", f"judged at the largest advertised count ({largest}) only"))
    else:
        per = {r: len({e["wave"] for e in rec.waves(r) if e["phase"] == "mixed_wave"}) for r in runs}
        short = {r: k for r, k in per.items() if k < 10}
        if len(per) < 3:
            out.append(pending("M3.ten_waves", f"{len(per)} start(s); three are required", mixed_waves=per))
        elif short:
            out.append(failed("M3.ten_waves", f"fewer than ten mixed warm waves in {short}", mixed_waves=per))
        else:
            out.append(passed("M3.ten_waves", f"{min(per.values())}+ mixed warm waves in each of {len(per)} starts", mixed_waves=per))
    if not ctx.cache_sensitive:
        out.append(not_applicable("M3.history", "model declared stateless (model.cache_sensitive: false): outputs do not depend on session history"))
    else:
        waves = [w for r in runs for w in rec.waves(r) if w["phase"] == "mixed_wave"]
        disagree = [w for w in waves if w.get("trace_confirmed") is False]
        unordered = [w for w in waves if not (w.get("admission") or {}).get("ordered_ok", True)
                     or (w.get("admission") or {}).get("finished_early")]
        t = ctx.judge(mixed)
        traced = sum(1 for w in waves if w.get("trace_confirmed"))
        r = exact_result("M3.history", t, "mixed-wave outputs vs same-history single-slot replays", ctx)
        r.evidence.update(trace_confirmed_waves=traced, waves=len(waves))
        if r.status is Status.PASS and disagree:
            r = pending("M3.history", f"observer trace disagrees with ordered admission in {len(disagree)} wave(s)",
                        waves=[(w['run'], w['wave']) for w in disagree])
        elif r.status is Status.PASS and unordered:
            r = pending("M3.history", f"ordered admission not observed in {len(unordered)} wave(s): slot histories unknown")
        if not traced:
            r.limitations.append("no [SLOT_VALIDATION] observer trace: slot mapping from ordered admission only")
        out.append(r)
    for r in out:
        r.count = n
    return out


# -- M4 -------------------------------------------------------------------------------------
def judge_m4(ctx: Context) -> list[Result]:
    rec = ctx.rec
    run = "recovery"
    largest = (rec.runs.get(run) or {}).get("count") or max(ctx.counts)
    out: list[Result] = []
    if run not in rec.ends:
        reason = "recovery start did not complete" if run in rec.runs else "recovery start not run"
        for id_ in ("M4.invalid_alongside", "M4.load_failure_retry", "M4.targeted_unload",
                    "M4.all_unload", "M4.unload_during_first_load"):
            out.append(pending(id_, f"{reason} (count {largest})"))
    else:
        ev = {e["kind"]: e for e in rec.by_run[run] if e["kind"].startswith("m4_")}
        inv = ev.get("m4_invalid_alongside")
        if inv is None or inv.get("skipped"):
            out.append(pending("M4.invalid_alongside", (inv or {}).get("skipped", "not recorded")))
        else:
            t = ctx.judge(rec.requests(run, ("invalid_alongside",)))
            problems = []
            if not inv["rejected"]:
                problems.append(f"invalid request answered {inv['invalid']['status']}")
            if (lease := lease_problem(inv["drained"])) is not None:
                problems.append(lease)
            r = exact_result("M4.invalid_alongside", t, "healthy outputs next to an invalid request", ctx, run)
            if problems:
                r = failed("M4.invalid_alongside", "; ".join(problems), invalid=inv, **t.summary())
            r.evidence["invalid"] = inv["invalid"]
            out.append(r)
        out.append(judge_load_failure(ctx, run, ev.get("m4_load_failure")))
        for which, id_ in (("targeted", "M4.targeted_unload"), ("all", "M4.all_unload")):
            e = ev.get(f"m4_{which}_unload")
            if e is None:
                out.append(pending(id_, "not recorded"))
                continue
            t = ctx.judge(rec.requests(run, (f"unload_{which}_inflight", f"unload_{which}_later")))
            if not e["issued_while_active"]:
                out.append(pending(id_, "could not observe the work in flight before issuing the unload", **e))
            elif e.get("active_while_unload_waits", 0) > e.get("busy", 0):
                out.append(failed(id_, f"a request sent after the {which} unload was admitted while the unload waited "
                                  f"({e['active_while_unload_waits']} active > {e['busy']} in front): it barged past the "
                                  "waiting manager", **e))
            elif not unload_waited(e) or not e["ended_unloaded"]:
                out.append(failed(id_, f"unload returned at {e['unload_done']}s, before the in-flight work finished "
                                  f"(last reply {max(e['requests_done'], default=0)}s), or the model stayed loaded "
                                  f"(ended_unloaded={e['ended_unloaded']})", **e))
            else:
                out.append(exact_result(id_, t, f"{which} unload waited for in-flight work; outputs and reload", ctx, run))
        e = ev.get("m4_unload_during_first_load")
        if e is None:
            out.append(pending("M4.unload_during_first_load", "not recorded"))
        elif not e["issued_during_load"]:
            out.append(pending("M4.unload_during_first_load", "the first load finished before the unload could be issued", **e))
        elif not unload_waited(e) or not e["ended_unloaded"]:
            out.append(failed("M4.unload_during_first_load",
                              f"unload did not wait for the first load (returned at {e['unload_done']}s, request done at "
                              f"{max(e['requests_done'], default=0)}s) or the model stayed loaded ({e['ended_unloaded']=})", **e))
        else:
            out.append(exact_result("M4.unload_during_first_load",
                                    ctx.judge(rec.requests(run, ("unload_during_load_first", "unload_during_load_reload"))),
                                    "unload during the first lazy load waited; reload matches the cold reference", ctx, run))
    for r in out:
        r.limitations.append("reuses M2 unload/reload evidence for the per-start unload/reload")
    out.append(not_applicable("M4.adapter_overrides", "the plan declares no adapter-specific queue/timeout/eviction overrides; shared semantics are F1/F5"))
    return out


def lease_problem(drained: dict[str, Any] | None) -> str | None:
    """What the counters showed after the work: None when they drained. A server that
    publishes no counters is named as such (the candidate must publish them)."""
    if not drained:
        return "drain not recorded"
    if drained.get("ok"):
        return None
    if not drained.get("fields_present", drained.get("active") is not None):
        return "the server publishes no slot counters (active_slots/queued_requests): lease release cannot be shown"
    return f"lease left held: active_slots {drained.get('active')}, queued_requests {drained.get('queued')}"


def judge_load_failure(ctx: Context, run: str, lf: dict[str, Any] | None) -> Result:
    """M4.load_failure_retry: a broken load of the plan's registration fails cleanly while
    healthy work is in flight, releases its lease, and the retry serves exact outputs."""
    id_ = "M4.load_failure_retry"
    if lf is None or lf.get("skipped"):
        return pending(id_, (lf or {}).get("skipped", "not recorded"))
    if not lf["failed"] or not lf["retried"]:
        return failed(id_, f"broken load answered {lf['failure']['status']}, retry {lf['retry']['status']}", **lf)
    if "drained" not in lf:
        return pending(id_, "recorded without healthy work alongside or a drain check", **lf)
    events = ctx.rec.requests(run, ("load_failure_alongside", "load_retry"))
    t = ctx.judge(events)
    if (lease := lease_problem(lf["drained"])) is not None:
        r = failed(id_, f"after the failed load: {lease}", load_failure=lf, **t.summary())
        r.reproduction = ctx.repro(run)
        return r
    r = exact_result(id_, t, "failed load of the same registration with healthy work in flight; "
                     "healthy outputs and the retried load's output", ctx, run)
    if r.status is Status.PASS and not lf.get("healthy_in_flight"):
        r = pending(id_, "the healthy work was not seen in flight before the broken load was sent",
                    load_failure=lf, **t.summary())
    r.evidence["load_failure"] = lf
    return r


def unload_waited(e: dict[str, Any]) -> bool:
    """Did the unload finish only after the work in front of it?

    Replies to the requests and to the unload reach the client within a scheduler tick of
    each other when the server is right, in either order; an unload that skips the work
    returns a whole service time early. So allow a quarter of the shortest request's
    latency as slack, and no more."""
    done = e.get("requests_done") or []
    lat = e.get("requests_latency") or []
    if not done:
        return False
    slack = 0.25 * min(lat) if lat else 0.0
    return bool(float(e["unload_done"]) >= max(done) - slack)


# -- M6 -------------------------------------------------------------------------------------
def _judge_streaming(e: dict[str, Any]) -> Result:
    """Concurrent streams exact vs the offline audio, overlap shown by the server, one
    stream cut by its client while the others stay exact, lease released."""
    n = int(e["count"])
    streams = e.get("streams") or []
    ref = e.get("reference_pcm_sha256")
    drained = e.get("drained") or {}
    counters = bool(e.get("counters_present", drained.get("fields_present", False)))
    if ref is None:
        return pending("M6.streaming", f"no offline reference audio to compare the streams with: "
                       f"{e.get('reference_problem') or 'offline request failed'}", **e)
    kept = [s for s in streams if not s.get("disconnected")]
    bad = [s for s in kept if s.get("pcm_sha256") != ref or not s.get("done")]
    fails, waits = [], []
    errs = [s for s in bad if s.get("outcome") != "ok"]
    if errs:
        got = sorted({str(s.get("status") or s.get("outcome")) for s in errs})
        fails.append(f"{len(errs)} of {len(kept)} stream(s) got no complete stream (answered {', '.join(got)})")
    if len(bad) > len(errs):
        fails.append(f"{len(bad) - len(errs)} of {len(kept)} stream(s) differ from the offline audio or did not finish")
    if not drained.get("ok"):
        if drained.get("fields_present") and drained.get("active") is not None:
            fails.append(f"lease left held after the streams: active_slots {drained.get('active')}, "
                         f"queued_requests {drained.get('queued')}")
        else:
            waits.append(f"lease release not shown: {NO_COUNTERS}")
    if n < 2:
        waits.append(f"concurrent streams need count 2 or more; the modes start ran at count {n}")
    else:
        concurrent = [s for s in streams if s.get("wave") == "concurrent"]
        in_flight = (len(concurrent) > 1 and all("t_send" in s for s in concurrent)
                     and max(s["t_send"] for s in concurrent) < min(s["t_done"] for s in concurrent))
        seen = e.get("max_active")
        if not counters:
            waits.append(f"overlap of the {len(concurrent)} streams not observed: {NO_COUNTERS}")
        elif seen is None or seen < n:
            (fails if in_flight else waits).append(
                f"the server never showed {n} active slots during the concurrent streams (max {seen})"
                + ("" if in_flight else ", and they did not overlap from the client side either"))
        cut = [s for s in streams if s.get("disconnected") and s.get("cut")]
        if not cut:
            meant = [s for s in streams if s.get("disconnected")]
            waits.append("no stream was recorded as cut mid-stream by its client" if not meant or "cut" not in meant[0]
                         else "the disconnecting client received the whole stream before it could cut it")
    if fails:
        return failed("M6.streaming", "; ".join(fails + waits), **e)
    if waits:
        return pending("M6.streaming", "; ".join(waits), **e)
    return passed("M6.streaming", f"{len(kept)} streams exact vs offline audio; {n} streams overlapped (server "
                  f"showed {e.get('max_active')} active); a client cut its stream while the others stayed exact; "
                  "lease released", **e)


def judge_m6(ctx: Context) -> list[Result]:
    rec = ctx.rec
    admit = set(ctx.plan["model"].get("admit_modes", ["offline"]))
    mode = ctx.plan["model"].get("mode", "offline")
    out: list[Result] = []
    if "offline" in admit:
        offline = ctx.judge([e for n in ctx.counts for r in rec.count_runs(n) for e in rec.requests(r, COUNT_PHASES)])
        out.append(passed("M6.offline", f"offline evidence: {offline.compared} /v1/tasks/run outputs compared in this run's "
                          f"count waves (model mode {mode}; exactness judged by M2.exact) admits offline mode only",
                          compared=offline.compared)
                   if offline.compared else
                   pending("M6.offline", "no offline output of a count wave was compared with a reference in this run"))
    else:
        out.append(not_applicable("M6.offline", "the plan does not admit offline mode"))
    if "streaming" not in admit:
        out.append(not_applicable("M6.streaming", "the plan does not admit streaming (model.admit_modes)"))
    else:
        evs = rec.kind("m6_streaming")
        out.append(_judge_streaming(evs[-1]) if evs else pending("M6.streaming", "no streaming evidence recorded"))
    if "batch" not in admit:
        out.append(not_applicable("M6.batch", "the plan does not admit native batching (model.admit_modes)"))
    else:
        evs = rec.kind("m6_batch")
        if not evs:
            out.append(pending("M6.batch", "no batch evidence recorded"))
        else:
            e = evs[-1]
            results = [r for r in e["results"] if "index" in r]
            errors = [r for r in e["results"] if r.get("status") and r["status"] >= 400]
            inexact = [r for r in results if not r["exact"]]
            expected = e["batches"] * e["expected_results"]
            if errors or inexact or len(results) != expected or not e["drained"]["ok"]:
                out.append(failed("M6.batch", f"{len(inexact)} inexact result(s), {len(errors)} error(s), "
                                  f"{len(results)}/{expected} results", **e))
            else:
                out.append(passed("M6.batch", f"{e['batches']} concurrent batches, {len(results)} independent results exact", **e))
    for r in out:
        r.reproduction = ctx.repro("modes")
    return out


# -- quality rules ------------------------------------------------------------------------
def judge_q(ctx: Context, all_results: list[Result]) -> list[Result]:
    rec = ctx.rec
    out: list[Result] = []
    settings = {}
    for run, start in rec.runs.items():
        models = (start.get("config") or {}).get("models") or []
        entry = next((m for m in models if m.get("id") == ctx.plan["model"]["id"]), None)
        if entry is not None:
            settings[run] = {k: v for k, v in entry.items() if k not in ("slots", "id")}
    distinct = {repr(sorted(v.items())) for v in settings.values()}
    if len(distinct) > 1:
        first = next(iter(settings.values()))
        differing = sorted({k for v in settings.values() for k in set(v) | set(first) if v.get(k) != first.get(k)})
        out.append(failed("Q1", f"quality settings differ between compared runs: {differing}"))
    elif not settings:
        out.append(pending("Q1", "no compared run recorded the model's settings: nothing to compare"))
    else:
        out.append(passed("Q1", f"identical model settings in all {len(settings)} compared runs",
                          quality_settings=(ctx.plan.get("compare") or {}).get("quality_settings", {})))
    out.append(judge_q2(ctx))
    tol = (ctx.plan.get("compare") or {}).get("tolerance")
    out.append(passed("Q3", f"tolerance {tol['max_abs_sample_diff']} declared in the plan before the run "
                      f"(plan sha256 {ctx.manifest.get('plan', {}).get('sha256', '')[:12]} in the manifest): {tol['justification']}")
               if tol else passed("Q3", "byte-exact comparison; no tolerance declared"))
    hist = [r for r in all_results if r.id == "M3.history"]
    if not ctx.cache_sensitive:
        out.append(not_applicable("Q4", "stateless model: one reference per request (cold and warm kept apart)"))
    else:
        from parval.status import combine

        st = combine(r.status for r in hist)
        q4 = Result("Q4", st, "same-history single-slot references only; never the closest reference"
                    if st is Status.PASS else "see M3.history")
        if st is Status.FAIL:
            kinds = {r.evidence.get("failure_kind") for r in hist if r.status is Status.FAIL}
            q4.evidence["failure_kind"] = "output" if kinds == {"output"} else "lifecycle"
        out.append(q4)
    out.append(q5([r for r in all_results if r.count is None], ctx=ctx))
    return out


def _baseline_groups(ctx: Context) -> tuple[dict[str, list[Any]], list[str]]:
    """Raw replies of the recorded serial baseline repeats, grouped by identical request
    (same request, same history: its reference key). (groups, problems)"""
    groups: dict[str, list[Any]] = {}
    problems: list[str] = []
    if ctx.run_dir is None:
        return groups, ["no run directory: raw replies unavailable"]
    for run in ("ref-baseline-a", "ref-baseline-b"):
        for e in ctx.rec.requests(run, ("ref_cold", "ref_warm", "ref_warm2")):
            if (e.get("reply") or {}).get("outcome") != "ok" or not e.get("artifact"):
                continue
            try:
                body = json.loads((ctx.run_dir / "artifacts" / f"{e['artifact']}.json").read_bytes())
            except (OSError, ValueError) as exc:
                problems.append(f"{run} {e['req']}/{e['phase']}: raw reply unreadable ({type(exc).__name__})")
                continue
            groups.setdefault(str(e.get("ref") or f"{e['req']}|{e['phase']}"), []).append(body)
    return groups, problems


def judge_q2(ctx: Context) -> Result:
    """Only fields measured to be volatile may be excluded: each excluded path must vary
    across identical serial requests in the recorded baseline runs (every leaf of an
    excluded object); a stable leaf is meaningful output that the exclusion would hide."""
    vol = (ctx.plan.get("compare") or {}).get("volatile_fields", [])
    whole = [v["path"] for v in vol if v["path"].split(".")[-1] in ("meta", "metadata", "artifacts", "named_audio_outputs", "audio", "text", "segments")]
    if whole:
        return failed("Q2", f"volatile exclusions remove meaningful output: {whole}")
    if not vol:
        return passed("Q2", "no field excluded: every output field is compared", raw_responses="artifacts/")
    groups, problems = _baseline_groups(ctx)
    measured = [{**volatility(groups, v["path"]), "justification": v["justification"]} for v in vol]
    ev: dict[str, Any] = {"volatile_fields": measured, "identical_request_groups": len(groups),
                          "raw_responses": "artifacts/", "problems": problems}
    stable = [m for m in measured if m["status"] == "stable"]
    if stable:
        return failed("Q2", "excluded as volatile but identical across identical serial baseline requests: "
                      + "; ".join(f"{m['path']} (stable: {', '.join(m['stable'][:8])})" for m in stable), **ev)
    if not any(m["repeated_groups"] for m in measured):
        return pending("Q2", "volatility not measurable: fewer than two identical serial baseline requests "
                       "with raw replies recorded", **ev)
    # A named path that no baseline reply carries excludes nothing there (e.g. timing.rtf on
    # a task without audio); only a path that appeared once and was never repeated is unknown.
    unknown = [m for m in measured if m["status"] == "unmeasured"]
    if unknown:
        return pending("Q2", "volatility not shown for " + "; ".join(
            f"{m['path']} (seen once only: {', '.join(m['unmeasured'][:8])})" for m in unknown), **ev)
    absent = [m["path"] for m in measured if m["status"] == "absent"]
    note = f"; never present in a baseline reply, so excluding nothing: {', '.join(absent)}" if absent else ""
    return passed("Q2", "only fields measured to vary across identical serial requests are excluded: "
                  + ", ".join(f"{m['path']} ({m['justification']}; {len(m['varying'])} leaf/leaves vary)"
                              for m in measured if m["status"] == "varies") + note, **ev)


def q5(results: list[Result], count: int | None = None, *, ctx: Context | None = None) -> Result:
    """Every mismatch in these results, whatever later repeats did (judged per scope: the
    model-level comparisons, and each count's own waves), and every failure seen in an
    attempt parval set aside (abandoned or redone): those never prove a PASS, but a
    mismatch, request error or crash in them stays failed."""
    mismatches = [m for r in results if r.id in COMPARISON_IDS for m in r.evidence.get("mismatches", [])]
    aside_errors: list[dict[str, Any]] = []
    crashes: list[dict[str, Any]] = []
    if ctx is not None:
        aside, crashes = ctx.set_aside_scope(count)
        seen = {failure_key(m) for m in mismatches}
        mismatches += [m for m in aside.mismatches if failure_key(m) not in seen]
        aside_errors = aside.errors + aside.malformed
    problems = []
    if mismatches:
        problems.append(f"{len(mismatches)} mismatch(es) recorded; a mismatch stays failed however many "
                        "repeats pass")
    if aside_errors:
        problems.append(f"{len(aside_errors)} request error(s) or malformed repl(ies) in attempt(s) parval set aside")
    if crashes:
        problems.append("server crashed in set-aside attempt(s): "
                        + ", ".join(f"{c['run']} attempt {c.get('attempt')} ({c.get('where')}, exit {c.get('exit_code')})"
                                    for c in crashes[:5]))
    if problems:
        kind = "output" if not (aside_errors or crashes) else "request" if not crashes else "lifecycle"
        r = failed("Q5", "; ".join(problems), failure_kind=kind, mismatches=mismatches[:50],
                   set_aside_errors=aside_errors[:20], set_aside_crashes=[
                       {k: c.get(k) for k in ("run", "attempt", "where", "exit_code", "signal", "set_aside")}
                       for c in crashes])
    else:
        r = passed("Q5", "no intermittent mismatch in any repeat")
    r.count = count
    return r
