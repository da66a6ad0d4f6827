"""Everything the probes share: the plan, the candidate launch settings, model entries
derived from the plan's model, measured timing, reference outputs and the findings."""

from __future__ import annotations

import copy
from pathlib import Path

from parval.errors import PlanError
from parval.framework.judges import Findings
from parval.framework.observed import Timing
from parval.framework.preconditions import Capabilities, first_missing
from parval.framework.settings import ProbeOptions
from parval.outputs.compare import canonicalize
from parval.plan.load import OMIT, Plan, model_entry, resolve_executable
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import CheckEvent, ObservationEvent
from parval.rundir.events import EventLog
from parval.server.launch import launch_spec
from parval.server.process import LaunchSpec
from parval.status import Status


class FrameworkContext:
    def __init__(self, plan: Plan, run_dir: Path, log: EventLog, options: ProbeOptions) -> None:
        self.plan = plan
        self.run_dir = run_dir
        self.log = log
        self.options = options
        self.findings = Findings(
            lambda check: log.write(
                CheckEvent(
                    kind="check",
                    assertion=check.assertion,
                    name=check.name,
                    status=str(check.status),
                    detail=check.detail,
                    evidence=check.evidence,
                )
            ),
            lambda assertion, name, judge, facts, evidence: log.write(
                ObservationEvent(
                    kind="observation", assertion=assertion, name=name, judge=judge, facts=facts, evidence=evidence
                )
            ),
        )
        # Raw reply bodies of every probe request, content-addressed (made durable at the end).
        self.artifacts = ArtifactStore(run_dir / "artifacts")
        self.artifacts.defer_dir_sync = True
        self.artifacts.defer_file_sync = True
        exe = resolve_executable(plan.candidate.executable, plan.base_dir)
        if exe is None:
            raise PlanError(f"servers.candidate.executable: '{plan.candidate.executable}' not found")
        self.exe = exe
        t = plan.timeouts
        self.ready_timeout_s = float(t["ready_s"])
        self.request_timeout_s = float(t["request_s"])
        self.grace_s = float(t["shutdown_grace_s"])
        self.max_body_bytes = int(float(t["max_response_mib"]) * 1024 * 1024)
        self.poll_interval_s = plan.status_poll_s
        self.route = str(plan.raw["requests"]["route"])
        self.ui = bool(plan.server["ui_management"])
        self.timing: Timing | None = None
        self.capacity: int | None = None
        # Serial reference outputs per registration (model id + configuration tag) and
        # phase ("cold": first request after a load, "warm", "warm2": repeated warm), so a
        # cold output is never accepted because it equals a warm one or another model's.
        self.refs: dict[str, dict[str, set[str]]] = {}
        self.notes: list[str] = []
        self.caps = Capabilities(plan_ui_management=self.ui)

    def unmet(self, assertion: str, name: str, *needs: str, caps: Capabilities | None = None) -> bool:
        """Record a sub-check left open by a missing precondition; True when one is missing.
        `caps`: what another server of this run showed (the unflagged one), default the
        calibration start's."""
        caps = self.caps if caps is None else caps
        if first_missing(caps, needs) is None:
            return False
        self.findings.observe(
            assertion, name, "precondition", {"capabilities": caps.to_json(), "needs": list(needs)}, precondition=True
        )
        return True

    def too_short(self, assertion: str, name: str) -> bool:
        """Record a sub-check PENDING when a warm request is too short to force an order
        (the measured timing decides); True when it is."""
        assert self.timing is not None
        if (short := self.timing.too_short(self.options.min_service_ms)) is None:
            return False
        self.findings.add(assertion, name, Status.PENDING, short)
        return True

    def load_too_fast(self, assertion: str, name: str, gaps: int, load: str, what: str) -> bool:
        """Record a sub-check PENDING when `load` takes under `gaps` request gaps, too fast to
        `what` while it runs (the measured timing decides); True when it does."""
        assert self.timing is not None
        load_s, gap_s = self.timing.load_s, self.timing.gap_s
        if load_s >= gaps * gap_s:
            return False
        self.findings.add(assertion, name, Status.PENDING, f"{load} takes {load_s * 1000:.0f} ms: too fast to {what}")
        return True

    # -- ids and entries --------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self.plan.model_id

    def derived_id(self, suffix: str) -> str:
        return f"{self.plan.model_id}-{suffix}"

    def session_options(self, distinct: int | None = None) -> dict[str, object]:
        """The plan's session options, or those plus the n-th distinguishing set."""
        opts = dict(self.plan.model["session_options"])
        if distinct is not None:
            opts.update(self.options.distinct_session_options[distinct])
        return opts

    def entry(
        self, model_id: str | None = None, *, slots: object = OMIT, distinct: int | None = None, **overrides: object
    ) -> dict[str, object]:
        """A config/registration entry derived from the plan's model (only id/options vary).

        Entries are always lazy: first-request and first-load probes need a cold model.
        """
        return model_entry(
            self.plan,
            model_id=model_id,
            lazy=True,
            slots=slots,
            session_options=self.session_options(distinct),
            **overrides,
        )

    @staticmethod
    def registration(entry: dict[str, object]) -> dict[str, object]:
        """A /v1/models/load body: the keys that route parses (no lazy/busy/defaults)."""
        drop = {
            "lazy",
            "busy_timeout_ms",
            "default_request_options",
            "voice_presets",
            "default_voice_preset",
            "live_ingest",
        }
        return {k: v for k, v in entry.items() if k not in drop}

    def launch_spec(
        self, models: list[dict[str, object]], *, flagged: bool, ui: bool | None = None, **server: object
    ) -> LaunchSpec:
        return launch_spec(
            self.plan, "candidate", models, flagged=flagged, ui_management=self.ui if ui is None else ui, server=server
        )

    # -- requests and outputs ---------------------------------------------------------------
    def base_request(self) -> dict[str, object]:
        return copy.deepcopy(self.plan.requests()[0].body)

    def canon(self, body: bytes) -> str | None:
        out = canonicalize(body, self.plan.volatile_fields)
        return out.canon if out.valid else None

    @staticmethod
    def ref_key(model: str, tag: str) -> str:
        return f"{model}|{tag}"

    def add_refs(self, model: str, tag: str, chain: list[str | None]) -> dict[str, set[str]]:
        """A serial chain after a load: cold, warm, then repeated warm (cache-sensitive)."""
        phases = self.refs.setdefault(self.ref_key(model, tag), {})
        # A stateless model's history does not matter after the first request.
        names = ["cold", "warm", "warm2" if self.plan.cache_sensitive else "warm"]
        names += [names[-1]] * max(0, len(chain) - len(names))
        for phase, out in zip(names, chain, strict=False):
            if out is not None:
                phases.setdefault(phase, set()).add(out)
        return phases

    def refs_json(self) -> dict[str, dict[str, list[str]]]:
        """Every reference known so far, as an observation records it."""
        return {key: {phase: sorted(outs) for phase, outs in phases.items()} for key, phases in self.refs.items()}

    def ref_outputs(self, model: str, tag: str) -> set[str]:
        phases = self.refs.get(self.ref_key(model, tag), {})
        return set().union(*phases.values()) if phases else set()
