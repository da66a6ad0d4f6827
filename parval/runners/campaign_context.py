"""What every campaign step shares: the plan, the event log and artifact store, the
start settings, model entries, launch specs, request bodies and fresh starts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from parval.errors import ServerStartError
from parval.plan.load import OMIT, NamedRequest, Plan, model_entry, shard_counts
from parval.rundir import cannot_start as cs
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import ExecutableCannotStartEvent
from parval.rundir.events import EventLog
from parval.runners.fresh import fresh_start
from parval.runners.start import Start, StartSettings
from parval.server.groups import real_error
from parval.server.launch import launch_spec
from parval.server.memory import MemoryConfig
from parval.server.process import LaunchSpec, tail


class CampaignContext:
    """What every campaign step uses: the plan, the event log and artifacts, launch
    settings, request bodies and fresh starts."""

    def __init__(self, plan: Plan, run_dir: Path, log: EventLog, *, shard: tuple[int, int] | None = None) -> None:
        self.plan = plan
        self.run_dir = run_dir
        self.log = log
        self.store = ArtifactStore(run_dir / "artifacts")
        self.requests: list[NamedRequest] = plan.requests()
        self.shard = shard
        # Executables ("baseline", "candidate") started in this campaign so far, and those
        # whose first start exited before it was ready (role -> its executable_cannot_start).
        self.started: set[str] = set()
        self.cannot_start: dict[str, Mapping[str, object]] = {}
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
    def body(self, req: NamedRequest | dict[str, object], model_id: str | None = None) -> dict[str, object]:
        request = req.body if isinstance(req, NamedRequest) else req
        return {"model": model_id or self.plan.model_id, "request": request}

    def model_entry(self, slots: object = OMIT, **overrides: object) -> dict[str, object]:
        """The plan's model entry with `slots` and any keys of the entry (`id`, `path`) set."""
        entry = model_entry(self.plan, slots=slots)
        entry.update(overrides)
        return entry

    def launch(
        self,
        role: str,
        *,
        flagged: bool,
        slots: object = OMIT,
        ui_management: bool = False,
        extra_env: dict[str, str] | None = None,
        models: list[dict[str, object]] | None = None,
    ) -> LaunchSpec:
        return launch_spec(
            self.plan,
            role,
            models or [self.model_entry(slots)],
            flagged=flagged,
            ui_management=ui_management,
            extra_env=extra_env,
        )

    def start(
        self,
        name: str,
        role: str,
        spec: LaunchSpec,
        count: int | None,
        *,
        start_index: int | None = None,
        exe_role: str | None = None,
    ) -> AbstractAsyncContextManager[Start]:
        """`start_index`: which of a count's starts; `exe_role`: "baseline" for a start of
        the baseline executable (both recorded on run_start)."""
        return self._start(name, role, spec, count, start_index, exe_role)

    @asynccontextmanager
    async def _start(
        self, name: str, role: str, spec: LaunchSpec, count: int | None, start_index: int | None, exe_role: str | None
    ) -> AsyncIterator[Start]:
        """A fresh start (`fresh_start`). The first start of an executable that exits by
        itself before it is ready records `executable_cannot_start` (rundir/cannot_start.py):
        the campaign tries no other start of it. A readiness timeout is not that."""
        first = spec.role not in self.started
        self.started.add(spec.role)
        directory = self.run_dir / "servers" / f"{name}-{self.log.seq}"
        ready = False
        try:
            async with fresh_start(
                name=name,
                role=role,
                attempt=self.log.seq,
                spec=spec,
                directory=directory,
                log=self.log,
                store=self.store,
                settings=self.settings,
                count=count,
                cache_sensitive=self.plan.cache_sensitive,
                start_index=start_index,
                exe_role=exe_role,
            ) as st:
                ready = True
                yield st
        except BaseException as exc:
            err = real_error(exc) if isinstance(exc, BaseExceptionGroup) else exc
            if first and not ready and isinstance(err, ServerStartError) and err.server_exit is not None and spec.role:
                self.record_cannot_start(name, spec, err.server_exit, directory)
            raise

    def record_cannot_start(self, name: str, spec: LaunchSpec, exit_code: int, directory: Path) -> None:
        stderr = cs.last_lines(tail(directory.absolute() / "stderr.log"))
        stdout = cs.last_lines(tail(directory.absolute() / "stdout.log"))
        lines, stream = (stderr, "stderr") if stderr else (stdout, "stdout")
        fields: dict[str, object] = {
            "role": spec.role,
            "executable": str(spec.executable),
            "run": name,
            "exit_code": exit_code,
            "last_lines": lines,
            "stream": stream,
        }
        reason = f"{cs.cause(fields)}; its first start ({name}) never became ready, so no other start of it is tried"
        self.cannot_start[spec.role] = self.log.write(
            ExecutableCannotStartEvent(
                kind="executable_cannot_start",
                role=spec.role,
                executable=str(spec.executable),
                run=name,
                exit_code=exit_code,
                last_lines=lines,
                stream=stream,
                reason=reason,
            )
        )

    def shard_counts(self) -> list[int]:
        return shard_counts(self.plan.counts, self.shard)
