"""What a probe needs from the server before anything it observes can be judged.

The calibration start finds out (and records as a `capabilities` event) whether the
candidate publishes the parallel runtime's counters in `/v1/models`, whether the bulk
unload route exists and whether the management routes are enabled by the plan and
answered by the server. A probe whose need is missing is never run against it: its
sub-checks are PENDING (the plan can enable it) or UNSUPPORTED (the server lacks it),
naming what is missing, so a 404 or an absent field is never read as a violation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from parval.rundir.event_types import CapabilitiesEvent
from parval.status import Status

COUNTERS = "counters"
LOADED = "loaded"
BULK_UNLOAD = "bulk_unload"
MANAGEMENT = "management"
NEEDS = (COUNTERS, LOADED, BULK_UNLOAD, MANAGEMENT)

# An HTTP status that says the route itself is not there (not the model, not the body).
ROUTE_ABSENT = (404, 405, 501)


@dataclass
class Capabilities:
    """None: not determined (the calibration start did not get that far)."""

    counters: bool | None = None
    loaded: bool | None = None
    bulk_unload: bool | None = None
    bulk_status: int | None = None
    management: bool | None = None
    management_status: int | None = None
    plan_ui_management: bool = False

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def event(self, rig: str) -> CapabilitiesEvent:
        """The `capabilities` event of the rig that showed them."""
        return CapabilitiesEvent(
            kind="capabilities",
            rig=rig,
            counters=self.counters,
            loaded=self.loaded,
            bulk_unload=self.bulk_unload,
            bulk_status=self.bulk_status,
            management=self.management,
            management_status=self.management_status,
            plan_ui_management=self.plan_ui_management,
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Capabilities:
        """The capabilities as recorded (`to_json`); a field not recorded keeps its default."""
        caps = cls()
        for known in fields(cls):
            if known.name in raw:
                setattr(caps, known.name, raw[known.name])
        return caps


def route_absent(status: int | None) -> bool:
    return status in ROUTE_ABSENT


def _known(present: bool | None, undetermined: str, absent: str) -> tuple[Status, str] | None:
    """Met (None) when present; PENDING when not determined, UNSUPPORTED when absent."""
    if present is None:
        return Status.PENDING, undetermined
    return None if present else (Status.UNSUPPORTED, absent)


def missing(caps: Capabilities, need: str) -> tuple[Status, str] | None:
    """Why `need` is not met (status, text), or None when it is."""
    if need == MANAGEMENT:
        if not caps.plan_ui_management:
            return Status.PENDING, (
                "needs the management routes (/v1/models/load, /v1/models/unload): "
                "the plan sets server.ui_management: false"
            )
        what = (
            "answered 403 (dynamic model management is disabled)"
            if caps.management_status == 403
            else f"has no /v1/models/load route (HTTP {caps.management_status})"
        )
        return _known(
            caps.management,
            "needs the management routes: their presence was not determined",
            f"needs the management routes: the server {what}",
        )
    if need == BULK_UNLOAD:
        return _known(
            caps.bulk_unload,
            "needs POST /v1/tasks/unload_models: its presence was not determined",
            f"needs POST /v1/tasks/unload_models: the server has no such route (HTTP {caps.bulk_status})",
        )
    if need == COUNTERS:
        return _known(
            caps.counters,
            "needs the slot counters in /v1/models: not determined",
            "needs the slot counters (active_slots, queued_requests) in /v1/models: "
            "the server publishes none (not the parallel runtime: a legacy build, "
            "or --parallel-jobs ignored), so no order, lease or drain is observable",
        )
    if need == LOADED:
        return _known(
            caps.loaded,
            "needs the `loaded` field in /v1/models: not determined",
            "needs the `loaded` field in /v1/models: the server does not publish it, "
            "so publication and unload are not observable",
        )
    raise ValueError(f"unknown need {need}")


def first_missing(caps: Capabilities, needs: tuple[str, ...]) -> tuple[Status, str] | None:
    """The strongest missing need (UNSUPPORTED before PENDING), or None."""
    found = [m for m in (missing(caps, n) for n in needs) if m is not None]
    found.sort(key=lambda m: 0 if m[0] is Status.UNSUPPORTED else 1)
    return found[0] if found else None
