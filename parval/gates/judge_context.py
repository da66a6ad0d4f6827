"""What every model-gate judge reads (the recorded run, its plan and manifest) and how an
output comparison becomes a verdict, shared so that all groups judge outputs alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

from parval.gates.exactness import Tally, judge_requests, set_aside_failures
from parval.gates.serial import SerialVerdict, serial_variation
from parval.outputs.volatility import content_exclusions
from parval.plan.judged import JudgedPlan, as_judged
from parval.plan.waves import StartSchedule
from parval.procedure import judge_shape as shape
from parval.procedure.names import MEMBASE_PREFIX
from parval.rundir.event_index import DERIVED_PHASES, REF_PHASES, Records, SetAsideCrash, derived_ref, typed
from parval.rundir.event_types import RequestEvent, ServerReadyEvent
from parval.rundir.mismatch_bound import words as bound_words
from parval.status import Result, Status

__all__ = ["REF_PHASES", "JudgeContext", "SerialVerdict", "exact_result", "run_judges"]


class JudgeContext:
    """One run as the model-gate judges see it, with the plan's comparison rules applied."""

    def __init__(
        self,
        rec: Records,
        plan: JudgedPlan | Mapping[str, object],
        manifest: dict[str, Any],
        run_dir: Path | None,
        plan_path: str,
    ) -> None:
        self.rec = rec
        self.plan = as_judged(plan)
        self.manifest = manifest
        self.run_dir = run_dir
        self.plan_path = plan_path
        tol = self.plan.tolerance
        # The plan's tolerance; `tolerance` below is where it applies.
        self.declared_tolerance: int | None = tol["max_abs_sample_diff"] if tol else None
        self.volatile: list[str] = self.plan.volatile
        # Declared exclusions that name output content: never excluded, and no comparison
        # under such a plan PASSes (recorded canonical forms may have left the content out).
        self.content_excluded: list[str] = content_exclusions(self.volatile)
        # What each count's starts must record, read from the plan once for every judge.
        self.required_starts: int = self.plan.required_starts
        self.schedules: Mapping[int, StartSchedule] = self.plan.schedules

    @cached_property
    def serial(self) -> SerialVerdict:
        """What serial repeats of the upstream baseline showed (M1.serial_repeat)."""
        # a plan that names no requests: each baseline start's own requests are compared
        names = self.request_names if self.plan.base_request is not None else None
        return serial_variation(
            self.rec, run_dir=self.run_dir, tolerance=self.declared_tolerance, volatile=self.volatile, requests=names
        )

    @property
    def request_names(self) -> list[str]:
        """The plan's request names: base and each variation."""
        return self.plan.request_names

    @cached_property
    def reference_gap(self) -> str | None:
        """Why the reference table cannot be trusted whole (None when it can): the upstream
        start it comes from (ref-baseline-a) must have run to its end and recorded every
        request cold, warm and repeated warm with a valid output."""
        run = "ref-baseline-a"
        if run not in self.rec.runs:
            return f"the upstream reference start {run} was not recorded"
        if not self.rec.complete(run):
            return f"the upstream reference start {run} did not complete ({self.rec.outcome(run)})"
        have = {
            (e["req"], e["phase"]) for e in self.rec.requests(run, REF_PHASES) if (e.get("output") or {}).get("valid")
        }
        lacking = [f"{q}/{p}" for q in self.request_names for p in REF_PHASES if (q, p) not in have]
        if lacking:
            return f"the upstream reference start {run} recorded no valid {', '.join(lacking[:6])}"
        # the reference table is keyed by the reference start's labels: each must be the
        # reference its request's phase makes it (cold, warm, repeated warm)
        wrong = [
            {"req": e["req"], "phase": e["phase"], "label": e.get("ref"), "ref": key}
            for e in self.rec.requests(run, REF_PHASES)
            if e.get("ref") != (key := derived_ref(e, self.cache_sensitive))
        ]
        if wrong:
            return f"the upstream reference start {run} labels " + ", ".join(
                f"{e['req']}/{e['phase']} as {e['label']}, not {e['ref']}" for e in wrong[:4]
            )
        return None

    @cached_property
    def relabelled(self) -> list[dict[str, object]]:
        """Every standing request whose recorded reference label disagrees with the
        reference derived from its history (records.derived_ref): run, phase, req, label,
        and the derived ref. Such labels are recorded, never followed."""
        out: list[dict[str, object]] = []
        # a membase start (the baseline build's memory at a count) has its outputs compared
        # with nothing: its labels decide nothing
        for run in (r for r in self.rec.runs if not r.startswith(MEMBASE_PREFIX)):
            for e in self.rec.requests(run, DERIVED_PHASES):
                key = derived_ref(e, self.cache_sensitive)
                if e.get("ref") != key:
                    out.append(
                        {"run": run, "phase": e["phase"], "wave": e["wave"], "req": e["req"], "label": e.get("ref")}
                        | {"ref": key}
                    )
        return out

    @property
    def tolerance(self) -> int | None:
        """The declared tolerance where it applies: only when serial repeats of the baseline
        were measured to vary within it. Byte-identical repeats are deterministic output,
        which must stay byte-identical."""
        if self.declared_tolerance is None:
            return None
        return self.declared_tolerance if self.serial.tolerance_applies else None

    def judge(self, events: list[RequestEvent], *, overlap: bool = False) -> Tally:
        """Judge these requests; the same starts' and phases' requests in set-aside
        attempts are judged too, and their failures (only) join the tally. `overlap`: count
        the outputs produced beside another request (a verdict that states its bound)."""
        t = self._judge_requests(events, overlap)
        scope = {_scope_key(e) for e in events}
        aside = [e for e in self.rec.set_aside_requests() if _scope_key(e) in scope]
        if aside:
            t.merge(self.judge_set_aside(aside, overlap=overlap))
        return t

    def judge_set_aside(self, events: list[RequestEvent], *, overlap: bool = False) -> Tally:
        """Failures only, in set-aside attempts' requests that have a reference."""
        chosen = [e for e in events if e.get("ref") and not e.get("expect_error")]
        return set_aside_failures(self.rec, self._judge_requests(chosen, overlap))

    def _judge_requests(self, events: list[RequestEvent], overlap: bool = False) -> Tally:
        return judge_requests(
            self.rec,
            events,
            run_dir=self.run_dir,
            tolerance=self.tolerance,
            volatile=self.volatile,
            declared_tolerance=self.declared_tolerance,
            cache_sensitive=self.cache_sensitive,
            overlap=overlap,
        )

    def set_aside_scope(self, count: int | None) -> tuple[Tally, list[SetAsideCrash]]:
        """Failures in set-aside attempts for one Q5 scope: count starts at `count`, or
        (None) every other start of the executable under test. (tally, crashes)"""

        def in_scope(run: str, attempt: int | None) -> bool:
            entry = self.rec.set_aside.get((run, attempt)) if attempt is not None else None
            if entry is None:
                return count is None
            start = entry["run_start"]
            own = start["count"] if start["role"] in ("count", "soak") else None
            return bool(own == count)

        events = [e for e in self.rec.set_aside_requests() if in_scope(e["run"], e.get("attempt"))]
        crashes = [c for c in self.rec.set_aside_crashes() if in_scope(c["run"], c.get("attempt"))]
        return self.judge_set_aside(events, overlap=count is not None), crashes

    def ready(self, run: str) -> ServerReadyEvent | None:
        """The start's `server_ready` event, if it got that far."""
        found = typed(self.rec.by_run.get(run, []), "server_ready")
        return found[0] if found else None

    def argv(self, run: str) -> str:
        ready = self.ready(run)
        return " ".join(str(a) for a in ready["argv"]) if ready else ""

    def repro(self, run: str | None = None, extra: str = "") -> str:
        cmd = f"parval run {self.plan_path}"
        if run and (argv := self.argv(run)):
            cmd += f"   # server: {argv}"
        return cmd + (f"; {extra}" if extra else "")

    @property
    def counts(self) -> list[int]:
        return list(self.plan.counts)

    @property
    def cache_sensitive(self) -> bool:
        return self.plan.model.cache_sensitive


def _scope_key(e: RequestEvent) -> tuple[object, ...]:
    return (e.get("run"), e.get("phase"), bool(e.get("reversed")))


def exact_result(
    id_: str,
    tally: Tally,
    what: str,
    ctx: JudgeContext,
    run: str | None = None,
    count: int | None = None,
    *,
    bounded: bool = False,
) -> Result:
    """The verdict of an output comparison. A FAIL says what it rests on (`failure_kind`):
    "output" (mismatches only: what serial variation or an uncaught negative control may
    mask) or "request" (request errors or malformed replies, which neither explains). A
    request the server refused for memory is BLOCKED (a VRAM failure is blocked evidence).
    `bounded`: the verdict states how much it rules out (`bound` in its evidence, and in
    words beside a PASS or FAIL): never a cause of either."""
    ev = tally.summary()
    if bounded:
        ev["bound"] = tally.bound()
    if tally.errors or tally.malformed:
        r = shape.failed(
            id_, f"{what}: {tally.problem()}", violation=[*tally.errors, *tally.malformed], failure_kind="request", **ev
        )
    elif tally.mismatches and tally.all_within_declared and not ctx.serial.measured:
        r = shape.pending(
            id_,
            f"{what}: {len(tally.mismatches)} output(s) differ from their reference within the declared tolerance "
            f"({ctx.declared_tolerance} LSB), which applies only once serial repeats are measured to vary, and "
            "serial variation was not measured",
            **ev,
        )
    elif tally.mismatches:
        note = (
            " (within the declared tolerance, which does not apply: serial repeats of the baseline were "
            "byte-identical, and deterministic output must be byte-identical)"
            if tally.all_within_declared
            else ""
        )
        r = shape.failed(
            id_, f"{what}: {tally.problem()}{note}", violation=tally.mismatches, failure_kind="output", **ev
        )
    elif tally.resource:
        r = shape.blocked(id_, f"{what}: {tally.problem()}", **ev)
    elif tally.indeterminate or tally.no_reference or tally.compared == 0:
        r = shape.pending(id_, f"{what}: {tally.problem()}", **ev)
    elif tally.relabelled:
        r = shape.pending(id_, f"{what}: {tally.problem()}", **ev)
    elif ctx.content_excluded:
        r = shape.pending(
            id_,
            f"{what}: parity unverified: the plan declares output content volatile ({', '.join(ctx.content_excluded)}"
            "; see Q2): content is never excluded from comparison",
            **ev,
        )
    elif ctx.reference_gap is not None:
        r = shape.pending(id_, f"{what}: references incomplete: {ctx.reference_gap}", **ev)
    elif tally.tolerated:
        r = shape.passed(
            id_,
            f"{what}: {tally.exact} of {tally.compared} exact, {tally.tolerated} within the declared tolerance "
            f"({ctx.tolerance} LSB; serial repeats varied within it)",
            {"compared outputs": tally.compared},
            **ev,
        )
    else:
        r = shape.passed(
            id_, f"{what}: {tally.exact}/{tally.compared} exact", {"compared outputs": tally.compared}, **ev
        )
    if bounded and r.status in (Status.PASS, Status.FAIL):
        r = replace(r, reason=f"{r.reason}; {bound_words(tally.bound())}")
    return replace(r, reproduction=ctx.repro(run), count=count)


def run_judges(
    ctx: JudgeContext, judges: Mapping[str, Callable[[JudgeContext], Result]], start: str | Callable[[str], str]
) -> list[Result]:
    """Every judge of a group's table, each result reproducible from the start it was judged
    on: `start` names it, or maps an assertion id to it."""
    out = [judge(ctx) for judge in judges.values()]
    return [replace(r, reproduction=ctx.repro(start if isinstance(start, str) else start(r.id))) for r in out]
