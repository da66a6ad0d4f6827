"""The schedule: which fresh servers run, in which order, doing what. It records
everything as events and never decides pass or fail (the gates do that)."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Awaitable, Callable
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Protocol

import anyio

from parval.errors import ServerStartError
from parval.plan.load import Plan
from parval.procedure.names import (
    BASELINE_RUNS,
    HISTORY_PREFIX,
    MEMBASE_PREFIX,
    REF_BASELINE_A,
    REF_BASELINE_B,
    REF_CAP1,
    REF_LEGACY,
    count_start_name,
)
from parval.rundir import cannot_start as cs
from parval.rundir.event_types import (
    CampaignEndEvent,
    CampaignInterruptedEvent,
    CampaignStartEvent,
    CampaignStoppedEvent,
    CampaignTimeoutEvent,
    CountNotRunEvent,
    RecoveryCountEvent,
    ServerLeftoverEvent,
    StartAbortedEvent,
    StartFailedEvent,
    StartTimeoutEvent,
    UnitBeginEvent,
    UnitEndEvent,
    UnitSkippedEvent,
)
from parval.rundir.events import EventLog, read_events
from parval.rundir.mismatch_bound import MismatchBound
from parval.runners import phases as ph
from parval.runners.campaign_context import CampaignContext
from parval.runners.soak import soak_units
from parval.runners.start import StartAborted
from parval.server.groups import real_error

Unit = tuple[str, Callable[[], Awaitable[None]]]


class MidRunJudging(Protocol):
    """What the campaign judges while it runs, from the events recorded so far: the count M4
    and M6 run at, and (--fail-fast) the counts that already FAIL. The caller hands in the
    gates' own judgement (parval.judge.MID_RUN), so the recorder never imports the judges."""

    def largest_validated(self, events: Path, plan: Plan, run_dir: Path, counts: list[int]) -> int:
        """The largest count of the consecutive prefix of `counts` whose M2 assertions passed."""
        ...

    def count_failures(self, events: Path, plan: Plan, run_dir: Path, n: int) -> list[str]:
        """The per-count assertions (M2, M3) that FAIL at count n."""
        ...

    def soak_bound(self, events: Path, plan: Plan, run_dir: Path, n: int) -> MismatchBound:
        """M2.exact's bound at count n so far (the soak's progress and its target)."""
        ...


class Campaign(CampaignContext):
    """The schedule of units (fresh starts and probes), run in order under the deadlines."""

    def __init__(
        self,
        plan: Plan,
        run_dir: Path,
        log: EventLog,
        *,
        judging: MidRunJudging,
        shard: tuple[int, int] | None = None,
        skip_runs: set[str] | None = None,
        fail_fast: bool = False,
    ) -> None:
        super().__init__(plan, run_dir, log, shard=shard)
        self.judging = judging
        self.fail_fast = fail_fast
        # --fail-fast: count -> why it is not run (a lower count already has a FAIL).
        self.not_run: dict[int, str] = {}
        self._cleared: set[int] = set()
        self.skip_runs = skip_runs or set()
        if self.skip_runs:  # resumed: an executable found unable to start stays so
            self.cannot_start.update(cs.cannot_start_events(read_events(log.path)))
            self.started.update(self.cannot_start)

    # -- schedule ---------------------------------------------------------------------
    def units(self) -> list[Unit]:
        from parval.runners import probes, recovery, references

        def ref(name: str, role: str, flagged: bool) -> Unit:
            return name, partial(references.reference_run, self, name, role, flagged)

        units: list[Unit] = [
            ref(REF_BASELINE_A, "baseline", False),
            ref(REF_BASELINE_B, "baseline", False),
            ref(REF_LEGACY, "candidate", False),
            ("x1-config-slots", lambda: probes.x1_config_rejection(self)),
            ref(REF_CAP1, "candidate", True),
            # The comparator's negative control plants into a reference reply, so it runs once
            # the references exist and before any count start: a campaign cut short later
            # (interrupted, past timeouts.campaign_s) keeps it, and its comparison PASSes
            # stay trustworthy (parval/gates/masking.py).
            ("negative-control", lambda: references.negative_control(self)),
        ]
        counts = self.shard_counts()
        for n in counts:
            for s in range(1, self.plan.starts_per_count + 1):
                name = count_start_name(n, s)
                units.append((name, partial(ph.count_start, self, name, n, s)))
            if self.plan.cache_sensitive:
                units.append((f"{HISTORY_PREFIX}{n}", partial(references.history_replays, self, n)))
            if self.plan.memory.get("baseline_comparison"):
                units.append(
                    (f"{MEMBASE_PREFIX}{n}", partial(ph.memory_baseline_start, self, f"{MEMBASE_PREFIX}{n}", n))
                )
            if self.plan.performance["independent_servers"] and n > 1:
                from parval.runners.independent import independent_servers

                units.append((f"independent-{n}", partial(independent_servers, self, n)))
        if max(self.plan.counts) in counts:
            # M4 and M6 run once, at the largest count validated so far (chosen when they start).
            units.append(("recovery", lambda: recovery.recovery_start(self, self.largest_validated())))
            units.append(("modes", lambda: probes.modes_start(self, self.largest_validated())))
        return units

    def largest_validated(self) -> int:
        """The largest count of the consecutive prefix whose M2 assertions passed so far. A
        count the plan never tests ends the prefix ([1, 2, 4] stops at 2: 4 can never be
        admitted); a count another shard runs does not."""
        best = self.judging.largest_validated(self.log.path, self.plan, self.run_dir, self.shard_counts())
        self.log.write(
            RecoveryCountEvent(kind="recovery_count", count=best, reason="largest consecutive count whose M2 passed")
        )
        return best

    def fail_fast_skip(self, unit: str) -> str | None:
        """With --fail-fast: why a unit of a count above a count with a FAIL is not run
        (admission is consecutive, so such a count cannot be admitted); None to run it.
        Judged from the evidence recorded so far, with the gates' own functions (`judging`)."""
        n = unit_count(unit)
        if not self.fail_fast or n is None:
            return None
        if n not in self.not_run:
            for lower in self.shard_counts():
                if lower >= n or lower in self._cleared:
                    continue
                failed = self.count_failures(lower)
                if not failed:
                    self._cleared.add(lower)
                    continue
                reason = (
                    f"not run (--fail-fast): count {lower} has a FAIL "
                    f"({', '.join(failed[:4])}{'…' if len(failed) > 4 else ''}), so no count "
                    "above it can be admitted"
                )
                for above in self.shard_counts():
                    if above > lower and above not in self.not_run:
                        self.not_run[above] = reason
                        self.log.write(
                            CountNotRunEvent(
                                kind="count_not_run", count=above, after_count=lower, failed=failed, reason=reason
                            )
                        )
                break
        return self.not_run.get(n)

    def cannot_start_skip(self, unit: str) -> tuple[str, str] | None:
        """(role, why) when `unit` needs an executable whose first start exited before it
        was ready (rundir/cannot_start.py): no other start of it is tried. None to run it."""
        for role in unit_executables(unit):
            if (event := self.cannot_start.get(role)) is not None:
                return (
                    role,
                    f"not run: {cs.cause(event)} (its first start, {event.get('run')}); no other start of it is tried",
                )
        return None

    def count_failures(self, n: int) -> list[str]:
        """The per-count assertions (M2, M3) that FAIL at count n in the evidence so far."""
        return self.judging.count_failures(self.log.path, self.plan, self.run_dir, n)

    async def run(self) -> None:
        from parval import signals

        self.log.write(
            CampaignStartEvent(
                kind="campaign_start",
                plan=self.plan.name,
                plan_sha256=self.plan.sha256,
                shard=list(self.shard) if self.shard else None,
                counts=self.shard_counts(),
                resumed=bool(self.skip_runs),
                fail_fast=self.fail_fast,
            )
        )
        t0 = time.monotonic()
        finished = True
        interrupted_in: list[str | None] = []
        current: str | None = None
        error: Exception | None = None
        async with anyio.create_task_group() as watch:
            with anyio.CancelScope() as main:
                watch.start_soon(self._watch_interrupt, main)
                with anyio.move_on_after(self.plan.timeouts["campaign_s"]) as scope:
                    try:
                        for name, unit in chain(self.units(), soak_units(self, self.judging, t0)):
                            if signals.interrupted() is not None:
                                interrupted_in.append(None)
                                break
                            if name in self.skip_runs:
                                self.log.write(
                                    UnitSkippedEvent(kind="unit_skipped", unit=name, reason="completed before resume")
                                )
                                continue
                            if (why := self.fail_fast_skip(name)) is not None:
                                self.log.write(
                                    UnitSkippedEvent(kind="unit_skipped", unit=name, reason=why, not_run=True)
                                )
                                continue
                            if (cause := self.cannot_start_skip(name)) is not None:
                                role, why = cause
                                self.log.write(
                                    UnitSkippedEvent(
                                        kind="unit_skipped", unit=name, reason=why, not_run=True, cannot_start=role
                                    )
                                )
                                continue
                            current = name
                            self.log.write(UnitBeginEvent(kind="unit_begin", unit=name))
                            ok = await self.run_unit(name, unit)
                            current = None
                            self.log.write(UnitEndEvent(kind="unit_end", unit=name, ok=ok))
                            if not ok and self.plan.raw["stop_on_crash"]:
                                finished = False
                                self.log.write(
                                    CampaignStoppedEvent(
                                        kind="campaign_stopped", reason=f"{name} failed and stop_on_crash is set"
                                    )
                                )
                                break
                    except Exception as exc:  # a bug: re-raised below, not wrapped in a group
                        error = exc
            if main.cancelled_caught:
                interrupted_in.append(current)
            watch.cancel_scope.cancel()
        if error is not None:
            raise error
        signum = signals.interrupted()
        if interrupted_in and signum is not None:
            finished = False
            self.log.write(
                CampaignInterruptedEvent(
                    kind="campaign_interrupted",
                    signal=signal.Signals(signum).name,
                    unit=interrupted_in[-1],
                    reason="interrupted by a signal; the unfinished unit is redone by `parval run PLAN --resume RUN`",
                )
            )
        elif scope.cancelled_caught:
            finished = False
            self.log.write(
                CampaignTimeoutEvent(
                    kind="campaign_timeout",
                    after_s=round(time.monotonic() - t0, 1),
                    reason=f"timeouts.campaign_s={self.plan.timeouts['campaign_s']} reached",
                )
            )
        self.log.write(
            CampaignEndEvent(kind="campaign_end", finished=finished, elapsed_s=round(time.monotonic() - t0, 3))
        )

    async def _watch_interrupt(self, scope: anyio.CancelScope) -> None:
        """Cancel the campaign from inside the event loop once a signal has arrived."""
        from parval import signals

        while True:
            if signals.interrupted() is not None:
                scope.cancel()
                return
            await anyio.sleep(0.05)

    async def run_unit(self, name: str, unit: Callable[[], Awaitable[None]]) -> bool:
        """Run one unit under the per-start deadline; record every way it can end.

        A cancellation (Ctrl-C, campaign deadline) propagates: the unit gets no unit_end,
        so a resume redoes it. Servers the unit started and left running are stopped."""
        from parval.server.process import live_servers

        before = {s.pid for s in live_servers()}
        begin = self.log.seq
        try:
            try:
                with anyio.fail_after(self.plan.timeouts["start_s"]):
                    await unit()
                return True
            except BaseExceptionGroup as group:
                raise real_error(group) from None
        except ServerStartError as exc:
            self.log.write(StartFailedEvent(kind="start_failed", unit=name, reason=exc.message, log_tail=exc.log_tail))
        except StartAborted as exc:
            self.log.write(StartAbortedEvent(kind="start_aborted", unit=name, reason=str(exc), log_tail=exc.log_tail))
        except TimeoutError:
            abandoned = self.log.last_of("run_abandoned")
            seq = abandoned.get("seq") if abandoned else None  # the int EventLog.write gave it
            tail = str(abandoned.get("log_tail", "")) if abandoned and isinstance(seq, int) and seq >= begin else ""
            self.log.write(
                StartTimeoutEvent(
                    kind="start_timeout",
                    unit=name,
                    log_tail=tail,
                    reason=f"timeouts.start_s={self.plan.timeouts['start_s']:g} reached",
                )
            )
        finally:
            leftovers = [s for s in live_servers() if s.pid not in before]
            if leftovers:
                with anyio.CancelScope(shield=True):
                    for server in leftovers:
                        stop = await server.stop(self.settings.grace_s)
                        self.log.write(
                            ServerLeftoverEvent(
                                kind="server_leftover",
                                unit=name,
                                server=server.name,
                                stop=stop,
                                log_tail=server.log_tail(2000),
                            )
                        )
        return False


_COUNT_UNIT = re.compile(
    rf"count(\d+)-s\d+|soak(\d+)-s\d+|{re.escape(HISTORY_PREFIX)}(\d+)|independent-(\d+)|{re.escape(MEMBASE_PREFIX)}(\d+)"
)


def unit_executables(unit: str) -> tuple[str, ...]:
    """Which of the plan's executables a unit starts: the baseline for its references,
    history replays and memory baselines; none for the negative control; else the candidate."""
    if unit == "negative-control":
        return ()
    if unit in BASELINE_RUNS or unit.startswith((HISTORY_PREFIX, MEMBASE_PREFIX)):
        return ("baseline",)
    return ("candidate",)


def unit_count(unit: str) -> int | None:
    """The count a per-count unit belongs to (count2-s1, history-2, independent-2)."""
    m = _COUNT_UNIT.fullmatch(unit)
    return int(next(g for g in m.groups() if g)) if m else None
