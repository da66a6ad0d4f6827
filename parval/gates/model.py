"""The model gate (M1-M4, M6), execution path (X1-X3) and quality rules (Q1-Q6), judged
purely from recorded events. Per-count assertions return one Result per count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.exactness import Tally, judge_requests
from parval.gates.records import COUNT_PHASES, Records
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

    def judge(self, events: list[dict[str, Any]]) -> Tally:
        return judge_requests(self.rec, events, run_dir=self.run_dir, tolerance=self.tolerance)

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


def exact_result(id_: str, tally: Tally, what: str, ctx: Context, run: str | None = None,
                 count: int | None = None) -> Result:
    ev = tally.summary()
    if tally.mismatches:
        r = failed(id_, f"{what}: {tally.problem()}", **ev)
    elif tally.errors or tally.malformed:
        r = failed(id_, f"{what}: {tally.problem()}", **ev)
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
        if problems:
            out.append(failed("X1", "; ".join(problems), **ev))
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
    resize = rec.kind("x3_resize_probe")
    if not resize:
        out.append(pending("X3", "resize-across-one probe needs server.ui_management (registration)"))
    elif resize[-1].get("ok"):
        out.append(passed("X3", "resized 2→1→2→1 on one process; parallel status fields kept", steps=resize[-1]["steps"]))
    else:
        out.append(failed("X3", "resizing across one failed or lost the parallel lifecycle", steps=resize[-1]["steps"]))
    for r in out:
        r.reproduction = ctx.repro("ref-candidate-cap1" if r.id != "X1" else "ref-candidate-legacy")
    return out


def _ready(rec: Records, run: str) -> dict[str, Any] | None:
    for e in rec.by_run.get(run, []):
        if e["kind"] == "server_ready":
            return e
    return None


# -- M1 -----------------------------------------------------------------------------------
def _outputs(rec: Records, run: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["req"], e["phase"]): e for e in rec.requests(run, ("ref_cold", "ref_warm", "ref_warm2"))}


def serial_variation(rec: Records) -> tuple[Status, str, dict[str, Any]]:
    a, b = _outputs(rec, "ref-baseline-a"), _outputs(rec, "ref-baseline-b")
    if not a or not b:
        return Status.PENDING, "two fresh baseline starts are needed to measure serial repeat variation", {}
    diffs = []
    for (req, phase), e in a.items():
        ca = (e.get("output") or {}).get("canon")
        other = b.get((req, phase))
        cb = (other.get("output") or {}).get("canon") if other else None
        if not ca or not cb:
            return Status.PENDING, f"{req}/{phase}: no valid output in one of the starts", {}
        if ca != cb:
            diffs.append({"req": req, "phase": phase, "start_a": ca, "start_b": cb})
    for run, outs in (("ref-baseline-a", a), ("ref-baseline-b", b)):
        for (req, phase), e in outs.items():
            if phase == "ref_warm2":
                w = outs.get((req, "ref_warm"))
                if w and (w.get("output") or {}).get("canon") != (e.get("output") or {}).get("canon"):
                    diffs.append({"req": req, "run": run, "warm": (w.get("output") or {}).get("canon"),
                                  "warm2": (e.get("output") or {}).get("canon")})
    ev = {"outputs_compared": len(a), "differences": diffs}
    if diffs:
        return Status.PENDING, (f"parity unverified: serial output varies ({len(diffs)} difference(s) "
                                "between repeats on one slot or across two fresh starts)"), ev
    return Status.PASS, f"{len(a)} outputs identical across two fresh starts and warm repeats", ev


def judge_m1(ctx: Context, serial: tuple[Status, str, dict[str, Any]]) -> list[Result]:
    rec = ctx.rec
    out: list[Result] = []
    man = ctx.manifest
    missing = [k for k, v in {
        "executables.baseline.sha256": man.get("executables", {}).get("baseline", {}).get("sha256"),
        "executables.candidate.sha256": man.get("executables", {}).get("candidate", {}).get("sha256"),
        "model.sha256": man.get("model", {}).get("sha256"),
        "platform.os": man.get("platform", {}).get("os"),
        "plan.sha256": man.get("plan", {}).get("sha256"),
    }.items() if not v]
    out.append(failed("M1.manifest", f"manifest lacks {', '.join(missing)}") if missing else
               passed("M1.manifest", "manifest hashes executables, model, fixtures and plan; records platform",
                      fixtures=len(man.get("fixtures", {}))))
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
                               "polls": [(t.get("status") or {}).get("polls") for t in tries]})
        for w in waves:
            if not (w.get("drained") or {}).get("ok"):
                drained_bad.append({"run": run, "phase": w["phase"], "wave": w["wave"], **(w.get("drained") or {})})
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
        served_serially = [w for w in active_bad if w["client_overlap"]]
        out.append(failed("M2.observed_active", f"{len(served_serially)} wave(s) were all in flight from the client "
                          f"yet the server never showed active_slots == {n} with the model loaded",
                          waves=active_bad[:30]) if served_serially else
                   pending("M2.observed_active", f"{len(active_bad)} wave(s) never overlapped even from the client side "
                           "(an overloaded machine or too short a service time): concurrency not shown",
                           waves=active_bad[:30]) if active_bad else
                   passed("M2.observed_active", f"the status poller saw active_slots == {n} (loaded) in all {len(waves_all) - sum(1 for w in waves_all if w['mode'] == 'serial')} concurrent waves",
                          poll_hz=[(w.get('status') or {}).get('poll_hz') for w in waves_all][:10]))
        out.append(failed("M2.drained", f"{len(drained_bad)} wave(s) left counters non-zero", waves=drained_bad[:30])
                   if drained_bad else passed("M2.drained", f"active_slots == queued_requests == 0 after all {len(waves_all)} waves"))
    tally = ctx.judge([e for r in runs for e in rec.requests(r, COUNT_PHASES)])
    out.append(exact_result("M2.exact", tally, f"count {n}: every wave output vs its reference", ctx, runs[0] if runs else None))
    unload_bad = []
    reload = Tally()
    for run in runs:
        probes = [e for e in rec.by_run.get(run, []) if e["kind"] == "probe" and e["name"] == "unload"]
        if not probes or not (probes[0]["reply"]["status"] == 200 and probes[0].get("listed") and probes[0].get("loaded_false")):
            unload_bad.append({"run": run, "probe": probes[0] if probes else None})
        reload.merge(ctx.judge(rec.requests(run, ("reload_wave",))))
    if unload_bad:
        out.append(failed("M2.unload_reload", f"unload did not complete cleanly in {len(unload_bad)} start(s)", starts=unload_bad))
    else:
        out.append(exact_result("M2.unload_reload", reload, "outputs after unload/reload vs cold references", ctx, runs[0] if runs else None))
    out.append(exact_result("M2.serial_reuse", ctx.judge([e for r in runs for e in rec.requests(r, ("serial_reuse",))]),
                            "serial requests after the concurrent waves", ctx, runs[0] if runs else None))
    for r in out:
        r.count = n
    return out


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
def variation_effects(ctx: Context) -> list[dict[str, Any]]:
    """For each declared variation: does it change the request field and the output?"""
    refs = ctx.rec.refs
    base_req = ctx.plan["requests"]["base"]
    base_ref = refs.get("base|cold") or refs.get("hist:base")
    out = []
    for v in ctx.plan["requests"].get("variations", []):
        field_, name = v["changes"], v["name"]
        ref = refs.get(f"{name}|cold") or refs.get(f"hist:{name}")
        changed_input = base_req.get(field_) != v["request"].get(field_)
        changed_output = None
        if ref and base_ref:
            changed_output = (ref.get("output") or {}).get("canon") != (base_ref.get("output") or {}).get("canon")
        out.append({"variation": name, "field": field_, "input_changed": changed_input,
                    "output_changed": changed_output, "applied": v["request"],
                    "audio": (ref.get("output") or {}).get("audio") if ref else None})
    return out


def judge_m3(ctx: Context, n: int, effects: list[dict[str, Any]]) -> list[Result]:
    rec = ctx.rec
    runs = rec.count_runs(n)
    mixed = [e for r in runs for e in rec.requests(r, ("mixed_wave",))]
    out: list[Result] = []
    if not effects:
        out.append(pending("M3.variation", "the plan declares no request variations"))
    else:
        # The candidate's own outputs at this count too: a variation whose outputs are all
        # among the base request's outputs was ignored by the server under test.
        canon: dict[str, set[str]] = {}
        for e in mixed:
            if (e.get("output") or {}).get("valid"):
                canon.setdefault(e["req"], set()).add(e["output"]["canon"])
        effects = [{**e, "output_changed": False, "ignored_by_candidate": True}
                   if canon.get(e["variation"]) and canon.get("base")
                   and canon[e["variation"]] <= canon["base"] else e for e in effects]
        ignored = [e for e in effects if e["output_changed"] is False]
        same_input = [e for e in effects if not e["input_changed"]]
        unknown = [e for e in effects if e["output_changed"] is None]
        used = {e["req"] for e in mixed}
        unused = [e["variation"] for e in effects if e["variation"] not in used]
        if ignored or same_input:
            names = ", ".join(f"{e['variation']} ({e['field']})" for e in ignored + same_input)
            out.append(failed("M3.variation", f"not an effective variation: {names} — the output never differs from the base request",
                              effects=effects))
        elif unknown or unused:
            out.append(pending("M3.variation", f"variation effect unknown for {[e['variation'] for e in unknown]}; "
                               f"not used in mixed waves: {unused}", effects=effects))
        else:
            out.append(passed("M3.variation", f"{len(effects)} variation(s) each change the effective input and the output: "
                              + ", ".join(f"{e['variation']} ({e['field']})" for e in effects), effects=effects))
    if n == 1:
        out.append(not_applicable("M3.reversed", "one slot: admission order cannot be reversed"))
    else:
        rev = [e for e in mixed if e.get("reversed")]
        t = ctx.judge(rev)
        out.append(exact_result("M3.reversed", t, "reversed-admission mixed waves", ctx) if rev else
                   pending("M3.reversed", "no reversed-admission wave recorded"))
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
            if not inv["drained"]["ok"]:
                problems.append(f"lease left held: {inv['drained']}")
            r = exact_result("M4.invalid_alongside", t, "healthy outputs next to an invalid request", ctx, run)
            if problems:
                r = failed("M4.invalid_alongside", "; ".join(problems), invalid=inv, **t.summary())
            r.evidence["invalid"] = inv["invalid"]
            out.append(r)
        lf = ev.get("m4_load_failure")
        if lf is None or lf.get("skipped"):
            out.append(pending("M4.load_failure_retry", (lf or {}).get("skipped", "not recorded")))
        elif not lf["failed"] or not lf["retried"]:
            out.append(failed("M4.load_failure_retry", f"broken load answered {lf['failure']['status']}, retry {lf['retry']['status']}", **lf))
        else:
            out.append(exact_result("M4.load_failure_retry", ctx.judge(rec.requests(run, ("load_retry",))),
                                    "failed registration then retry; output of the retried load", ctx, run))
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
def judge_m6(ctx: Context) -> list[Result]:
    rec = ctx.rec
    admit = set(ctx.plan["model"].get("admit_modes", ["offline"]))
    mode = ctx.plan["model"].get("mode", "offline")
    out: list[Result] = []
    if "offline" in admit:
        out.append(passed("M6.offline", f"offline evidence (/v1/tasks/run, model mode {mode}) admits offline mode only"))
    else:
        out.append(not_applicable("M6.offline", "the plan does not admit offline mode"))
    if "streaming" not in admit:
        out.append(not_applicable("M6.streaming", "the plan does not admit streaming (model.admit_modes)"))
    else:
        evs = rec.kind("m6_streaming")
        if not evs:
            out.append(pending("M6.streaming", "no streaming evidence recorded"))
        else:
            e = evs[-1]
            bad = [s for s in e["streams"] if not s["disconnected"] and
                   (s["pcm_sha256"] != e["reference_pcm_sha256"] or not s["done"])]
            n = e["count"]
            if bad or not e["drained"]["ok"] or e.get("reference_pcm_sha256") is None:
                out.append(failed("M6.streaming", f"{len(bad)} stream(s) differ from the offline audio or did not finish; "
                                  f"drained={e['drained']['ok']}", **e))
            elif n > 1 and e["max_active"] < n:
                out.append(failed("M6.streaming", f"streams never overlapped: max active {e['max_active']} < {n}", **e))
            else:
                out.append(passed("M6.streaming", f"{len(e['streams'])} streams exact vs offline audio; a client disconnected "
                                  "mid-stream while the others stayed exact; lease released", **e))
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
    else:
        out.append(passed("Q1", f"identical model settings in all {len(settings)} compared runs",
                          quality_settings=(ctx.plan.get("compare") or {}).get("quality_settings", {})))
    vol = (ctx.plan.get("compare") or {}).get("volatile_fields", [])
    whole = [v["path"] for v in vol if v["path"].split(".")[-1] in ("meta", "metadata", "artifacts", "named_audio_outputs", "audio", "text", "segments")]
    out.append(failed("Q2", f"volatile exclusions remove meaningful output: {whole}") if whole else
               passed("Q2", "only named, justified volatile fields excluded: " +
                      ", ".join(f"{v['path']} ({v['justification']})" for v in vol), raw_responses="artifacts/"))
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
        out.append(Result("Q4", st, "same-history single-slot references only; never the closest reference"
                          if st is Status.PASS else "see M3.history"))
    out.append(q5([r for r in all_results if r.count is None]))
    return out


def q5(results: list[Result], count: int | None = None) -> Result:
    """Every mismatch in these results, whatever later repeats did (judged per scope: the
    model-level comparisons, and each count's own waves)."""
    mismatches = [m for r in results if r.id in COMPARISON_IDS for m in r.evidence.get("mismatches", [])]
    r = (failed("Q5", f"{len(mismatches)} mismatch(es) recorded; a mismatch stays failed however many "
                "repeats pass", mismatches=mismatches[:50]) if mismatches else
         passed("Q5", "no intermittent mismatch in any repeat"))
    r.count = count
    return r
