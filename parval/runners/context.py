"""What every campaign step shares: the plan, the event log and artifact store, the
start settings, model entries, launch specs, request bodies and fresh starts."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

from parval.plan.load import OMIT, NamedRequest, Plan, model_entry, shard_counts
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.events import EventLog
from parval.runners.fresh import fresh_start
from parval.runners.start import Start, StartSettings
from parval.server.launch import launch_spec
from parval.server.memory import MemoryConfig
from parval.server.process import LaunchSpec


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
        self, name: str, role: str, spec: LaunchSpec, count: int | None, **meta: object
    ) -> AbstractAsyncContextManager[Start]:
        return fresh_start(
            name=name,
            role=role,
            attempt=self.log.seq,
            spec=spec,
            directory=self.run_dir / "servers" / f"{name}-{self.log.seq}",
            log=self.log,
            store=self.store,
            settings=self.settings,
            count=count,
            cache_sensitive=self.plan.cache_sensitive,
            meta=meta,
        )

    def shard_counts(self) -> list[int]:
        return shard_counts(self.plan.counts, self.shard)
