"""The schedule: which fresh servers run, in which order, doing what. It records
everything as events and never decides pass or fail (the gates do that)."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from parval.errors import ServerStartError
from parval.evidence import ArtifactStore, EventLog, read_events
from parval.plan import NamedRequest, Plan, resolve_executable
from parval.runners import phases as ph
from parval.runners.groups import real_error
from parval.runners.memory import MemoryConfig
from parval.runners.server import LaunchSpec, server_config
from parval.runners.start import Start, StartAborted, StartSettings, fresh_start

Unit = tuple[str, Callable[[], Any]]


class Campaign:
    def __init__(self, plan: Plan, run_dir: Path, log: EventLog, *,
                 shard: tuple[int, int] | None = None, skip_runs: set[str] | None = None,
                 fail_fast: bool = False) -> None:
        self.plan = plan
        self.fail_fast = fail_fast
        # --fail-fast: count -> why it is not run (a lower count already has a FAIL).
        self.not_run: dict[int, str] = {}
        self._cleared: set[int] = set()
        self.run_dir = run_dir
        self.log = log
        self.store = ArtifactStore(run_dir / "artifacts")
        self.requests: list[NamedRequest] = plan.requests()
        self.shard = shard
        self.skip_runs = skip_runs or set()
        self.attempt = 0
        mem = plan.memory
        t = plan.timeouts
        self.settings = StartSettings(
            model_id=plan.model_id,
            request_timeout_s=t["request_s"],
            ready_timeout_s=t["ready_s"],
            grace_s=t["shutdown_grace_s"],
            poll_interval_s=plan.status_poll_s,
            max_wave=max(plan.counts) + 2,
            max_body_bytes=int(t["max_response_mib"] * 1024 * 1024),
            volatile=plan.volatile_fields,
            memory=MemoryConfig(
                gpu_interval_s=float(mem["gpu_interval_ms"]) / 1000,
                host_interval_s=float(mem["host_interval_ms"]) / 1000,
                nvml_device_index=mem["nvml_device_index"],
                guard_mib=mem["guard_mib"],
            ),
        )

    # -- plumbing ---------------------------------------------------------------------
    def body(self, req: NamedRequest | dict[str, Any], model_id: str | None = None) -> dict[str, Any]:
        request = req.body if isinstance(req, NamedRequest) else req
        return {"model": model_id or self.plan.model_id, "request": request}

    def model_entry(self, slots: int | None | str = "omit", **overrides: Any) -> dict[str, Any]:
        m = self.plan.model
        entry: dict[str, Any] = {
            "id": m["id"], "family": m["family"], "task": m["task"], "mode": m["mode"],
            "path": str(self.plan.model_path), "lazy": m["lazy"],
        }
        for key in ("load_options", "session_options", "default_request_options"):
            if m[key]:
                entry[key] = m[key]
        entry.update(m["entry_extra"])
        if slots != "omit":
            entry["slots"] = slots
        entry.update(overrides)
        return entry

    def launch(self, role: str, *, flagged: bool, slots: int | None | str = "omit",
               ui_management: bool = False, extra_env: dict[str, str] | None = None,
               models: list[dict[str, Any]] | None = None) -> LaunchSpec:
        spec = self.plan.baseline if role == "baseline" else self.plan.candidate
        exe = resolve_executable(spec.executable, self.plan.base_dir)
        if exe is None:
            raise ServerStartError(f"servers.{role}.executable: '{spec.executable}' not found")
        env = dict(spec.env)
        env.setdefault("AUDIOCPP_SLOT_VALIDATION_OBSERVER", "1")
        env.update(extra_env or {})
        cfg = server_config(self.plan.server, self.model_entry(slots), models)
        return LaunchSpec(exe, cfg, flagged and spec.knows_parallel_jobs, tuple(spec.args), env,
                          ui_management=ui_management)

    def start(self, name: str, role: str, spec: LaunchSpec, count: int | None,
              **meta: Any) -> Any:
        self.attempt += 1
        return fresh_start(
            name=name, role=role, attempt=self.log.seq, spec=spec,
            directory=self.run_dir / "servers" / f"{name}-{self.log.seq}", log=self.log,
            store=self.store, settings=self.settings, count=count,
            cache_sensitive=self.plan.cache_sensitive, meta=meta,
        )

    # -- schedule ---------------------------------------------------------------------
    def units(self) -> list[Unit]:
        from parval.runners import probes, references

        units: list[Unit] = [
            ("ref-baseline-a", lambda: references.reference_run(self, "ref-baseline-a", "baseline", False)),
            ("ref-baseline-b", lambda: references.reference_run(self, "ref-baseline-b", "baseline", False)),
            ("ref-candidate-legacy", lambda: references.reference_run(self, "ref-candidate-legacy", "candidate", False)),
            ("x1-config-slots", lambda: probes.x1_config_rejection(self)),
            ("ref-candidate-cap1", lambda: references.reference_run(self, "ref-candidate-cap1", "candidate", True)),
        ]
        counts = self.shard_counts()
        for n in counts:
            for s in range(1, self.plan.starts_per_count + 1):
                name = f"count{n}-s{s}"
                units.append((name, partial(ph.count_start, self, name, n, s)))
            if self.plan.cache_sensitive:
                units.append((f"history-{n}", partial(references.history_replays, self, n)))
            if self.plan.performance["independent_servers"] and n > 1:
                from parval.runners.independent import independent_servers

                units.append((f"independent-{n}", partial(independent_servers, self, n)))
        if max(self.plan.counts) in counts:
            # M4 and M6 run once, at the largest count validated so far (chosen when they start).
            units.append(("recovery", lambda: probes.recovery_start(self, self.largest_validated())))
            units.append(("modes", lambda: probes.modes_start(self, self.largest_validated())))
        units.append(("negative-control", lambda: references.negative_control(self)))
        return units

    def largest_validated(self) -> int:
        """The largest count of the consecutive prefix whose M2 assertions passed so far."""
        from parval.gates.model import Context, judge_m2
        from parval.gates.records import build_records
        from parval.status import Status

        rec = build_records(read_events(self.log.path))
        ctx = Context(rec, self.plan.raw, {}, self.run_dir, str(self.plan.path))
        best = min(self.shard_counts())
        for n in self.shard_counts():
            if any(r.status is not Status.PASS for r in judge_m2(ctx, n)):
                break
            best = n
        self.log.append("recovery_count", count=best, reason="largest consecutive count whose M2 passed")
        return best

    def fail_fast_skip(self, unit: str) -> str | None:
        """With --fail-fast: why a unit of a count above a count with a FAIL is not run
        (admission is consecutive, so such a count cannot be admitted); None to run it.
        Judged from the evidence recorded so far, with the gates' own functions."""
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
                reason = (f"not run (--fail-fast): count {lower} has a FAIL "
                          f"({', '.join(failed[:4])}{'…' if len(failed) > 4 else ''}), so no count "
                          "above it can be admitted")
                for above in self.shard_counts():
                    if above > lower and above not in self.not_run:
                        self.not_run[above] = reason
                        self.log.append("count_not_run", count=above, after_count=lower,
                                        failed=failed, reason=reason)
                break
        return self.not_run.get(n)

    def count_failures(self, n: int) -> list[str]:
        """The per-count assertions (M2, M3) that FAIL at count n in the evidence so far."""
        from parval.gates.model import Context, judge_m2, judge_m3, variation_effects
        from parval.gates.records import build_records
        from parval.status import Status

        rec = build_records(read_events(self.log.path))
        ctx = Context(rec, self.plan.raw, {}, self.run_dir, str(self.plan.path))
        results = [*judge_m2(ctx, n), *judge_m3(ctx, n, variation_effects(ctx))]
        return sorted({r.id for r in results if r.status is Status.FAIL})

    def shard_counts(self) -> list[int]:
        counts = self.plan.counts
        if self.shard is None:
            return counts
        i, n = self.shard
        return [c for k, c in enumerate(counts) if k % n == i - 1]

    async def run(self) -> None:
        from parval import signals

        self.log.append("campaign_start", plan=self.plan.name, plan_sha256=self.plan.sha256,
                        shard=list(self.shard) if self.shard else None,
                        counts=self.shard_counts(), resumed=bool(self.skip_runs),
                        fail_fast=self.fail_fast)
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
                        for name, unit in self.units():
                            if signals.interrupted() is not None:
                                interrupted_in.append(None)
                                break
                            if name in self.skip_runs:
                                self.log.append("unit_skipped", unit=name, reason="completed before resume")
                                continue
                            if (why := self.fail_fast_skip(name)) is not None:
                                self.log.append("unit_skipped", unit=name, reason=why, not_run=True)
                                continue
                            current = name
                            self.log.append("unit_begin", unit=name)
                            ok = await self.run_unit(name, unit)
                            current = None
                            self.log.append("unit_end", unit=name, ok=ok)
                            if not ok and self.plan.raw["stop_on_crash"]:
                                finished = False
                                self.log.append("campaign_stopped", reason=f"{name} failed and stop_on_crash is set")
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
            self.log.append("campaign_interrupted", signal=signal.Signals(signum).name,
                            unit=interrupted_in[-1],
                            reason="interrupted by a signal; the unfinished unit is redone by "
                                   "`parval run PLAN --resume RUN`")
        elif scope.cancelled_caught:
            finished = False
            self.log.append("campaign_timeout", after_s=round(time.monotonic() - t0, 1),
                            reason=f"timeouts.campaign_s={self.plan.timeouts['campaign_s']} reached")
        self.log.append("campaign_end", finished=finished, elapsed_s=round(time.monotonic() - t0, 3))

    async def _watch_interrupt(self, scope: anyio.CancelScope) -> None:
        """Cancel the campaign from inside the event loop once a signal has arrived."""
        from parval import signals

        while True:
            if signals.interrupted() is not None:
                scope.cancel()
                return
            await anyio.sleep(0.05)

    async def run_unit(self, name: str, unit: Callable[[], Any]) -> bool:
        """Run one unit under the per-start deadline; record every way it can end.

        A cancellation (Ctrl-C, campaign deadline) propagates: the unit gets no unit_end,
        so a resume redoes it. Servers the unit started and left running are stopped."""
        from parval.runners.server import live_servers

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
            self.log.append("start_failed", unit=name, reason=exc.message, log_tail=exc.log_tail)
        except StartAborted as exc:
            self.log.append("start_aborted", unit=name, reason=str(exc), log_tail=exc.log_tail)
        except TimeoutError:
            abandoned = self.log.last_of("run_abandoned")
            tail = abandoned.get("log_tail", "") if abandoned and abandoned["seq"] >= begin else ""
            self.log.append("start_timeout", unit=name, log_tail=tail,
                            reason=f"timeouts.start_s={self.plan.timeouts['start_s']:g} reached")
        finally:
            leftovers = [s for s in live_servers() if s.pid not in before]
            if leftovers:
                with anyio.CancelScope(shield=True):
                    for server in leftovers:
                        stop = await server.stop(self.settings.grace_s)
                        self.log.append("server_leftover", unit=name, server=server.name,
                                        stop=stop, log_tail=server.log_tail(2000))
        return False


_COUNT_UNIT = re.compile(r"count(\d+)-s\d+|history-(\d+)|independent-(\d+)")


def unit_count(unit: str) -> int | None:
    """The count a per-count unit belongs to (count2-s1, history-2, independent-2)."""
    m = _COUNT_UNIT.fullmatch(unit)
    return int(next(g for g in m.groups() if g)) if m else None


def wave_bodies(c: Campaign, reqs: list[NamedRequest]) -> list[dict[str, Any]]:
    return [c.body(r) for r in reqs]


async def wave_together(c: Campaign, st: Start, phase: str, wave: int,
                        reqs: list[NamedRequest]) -> None:
    """N requests released together; histories known when every slot's history is the same.

    A warm wave whose N leases were not seen at once is repeated (every attempt recorded
    and compared). Cold and reload waves are not: a repeat would no longer be cold."""
    from parval.runners.phases import WAVE_ATTEMPTS, decide_repeat

    attempts = WAVE_ATTEMPTS if phase == "warm_wave" and len(reqs) > 1 else 1
    for retry in range(attempts):
        event = await _wave_together_once(c, st, phase, wave, reqs, retry)
        if attempts == 1 or not decide_repeat(c, st, event, len(reqs), retry):
            return


async def _wave_together_once(c: Campaign, st: Start, phase: str, wave: int,
                              reqs: list[NamedRequest], retry: int) -> dict[str, Any]:
    from parval.runners.waves import release_together

    n = len(reqs)
    same_history = all(h == st.histories[0] for h in st.histories[:n])
    history = list(st.histories[0]) if same_history else None
    st.phases.set("reload" if phase == "reload_wave" else f"{phase}:{wave}")
    offset = st.server.stderr_size()
    t_start = time.monotonic()
    with anyio.move_on_after(c.plan.timeouts["wave_s"]) as scope:
        replies = await release_together(st.client, c.settings.route, wave_bodies(c, reqs))
    t_end = time.monotonic()
    if scope.cancelled_caught:
        c.log.append("wave_timeout", run=st.name, phase=phase, wave=wave)
        raise StartAborted(f"{st.name}: {phase} wave {wave} exceeded timeouts.wave_s")
    with st.log.group(st.store):
        for req, reply in zip(reqs, replies, strict=True):
            st.record(phase, wave, req.name, reply, history=history, retry=retry)
    if same_history:
        for i in range(n):
            st.histories[i].append(reqs[0].name)
    trace, _ = st.trace_lines(offset)
    await st.check_alive(f"{phase} wave {wave}")
    drained = await st.drained()
    event = st.wave_event(phase, wave, n, "together", t_start, t_end, replies, drained,
                          trace_lines=len(trace), retry=retry)
    st.phases.set("idle")
    return event
