"""What every model-gate judge reads (the recorded run, its plan and manifest) and how an
output comparison becomes a verdict, shared so that all groups judge outputs alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from parval.gates.exactness import Tally, judge_requests, set_aside_failures
from parval.gates.records import Records
from parval.status import Result, Status, failed, passed, pending

# What serial repeats of the baseline showed (M1.serial_repeat): status, reason, evidence.
SerialVerdict = tuple[Status, str, dict[str, Any]]

# The serial baseline repeats and reference phases a one-slot reference start records.
REF_PHASES = ("ref_cold", "ref_warm", "ref_warm2")


class Context:
    """One run as the model-gate judges see it, with the plan's comparison rules applied."""

    def __init__(
        self, rec: Records, plan: dict[str, Any], manifest: dict[str, Any], run_dir: Path | None, plan_path: str
    ) -> None:
        self.rec = rec
        self.plan = plan
        self.manifest = manifest
        self.run_dir = run_dir
        self.plan_path = plan_path
        compare = plan.get("compare") or {}
        tol = compare.get("tolerance")
        self.tolerance: int | None = int(tol["max_abs_sample_diff"]) if tol else None
        self.volatile: list[str] = [str(v["path"]) for v in compare.get("volatile_fields", [])]

    def judge(self, events: list[dict[str, Any]]) -> Tally:
        """Judge these requests; the same starts' and phases' requests in set-aside
        attempts are judged too, and their failures (only) join the tally."""
        t = self._judge_requests(events)
        scope = {_scope_key(e) for e in events}
        aside = [e for e in self.rec.set_aside_requests() if _scope_key(e) in scope]
        if aside:
            t.merge(self.judge_set_aside(aside))
        return t

    def judge_set_aside(self, events: list[dict[str, Any]]) -> Tally:
        """Failures only, in set-aside attempts' requests that have a reference."""
        chosen = [e for e in events if e.get("ref") and not e.get("expect_error")]
        return set_aside_failures(self.rec, self._judge_requests(chosen))

    def _judge_requests(self, events: list[dict[str, Any]]) -> Tally:
        return judge_requests(self.rec, events, run_dir=self.run_dir, tolerance=self.tolerance, volatile=self.volatile)

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

    def ready(self, run: str) -> dict[str, Any] | None:
        """The start's `server_ready` event, if it got that far."""
        for e in self.rec.by_run.get(run, []):
            if e["kind"] == "server_ready":
                return e
        return None

    def argv(self, run: str) -> str:
        ready = self.ready(run)
        return " ".join(ready.get("argv", [])) if ready else ""

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


def exact_result(
    id_: str, tally: Tally, what: str, ctx: Context, run: str | None = None, count: int | None = None
) -> Result:
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
        agreed = tally.exact + tally.tolerated
        r = passed(id_, f"{what}: {agreed}/{tally.compared} exact{note}", **ev)
    r.reproduction = ctx.repro(run)
    r.count = count
    return r


def run_judges(
    ctx: Context, judges: Mapping[str, Callable[[Context], Result]], start: str | Callable[[str], str]
) -> list[Result]:
    """Every judge of a group's table, each result reproducible from the start it was judged
    on: `start` names it, or maps an assertion id to it."""
    out = [judge(ctx) for judge in judges.values()]
    for r in out:
        r.reproduction = ctx.repro(start if isinstance(start, str) else start(r.id))
    return out
