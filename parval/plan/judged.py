"""The plan as the judges read it: built once from a run's plan snapshot (plan.json) when the
run is judged, with every rule the gates apply already read and defaulted.

A snapshot is the plan as it was loaded when the run was made, possibly under an older
schema, so a key may be missing: each one reads as the default the judges have always
given it (a section that is absent reads as its defaults). The parts recorded as evidence
as they were declared (the tolerance, the applied variation requests, the quality
settings) are kept as declared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from parval.jsonread import as_float, as_int, get, item, iterate
from parval.jsontypes import JsonObject, JsonValue
from parval.plan.sections import Stabilisation, Tolerance, VolatileField
from parval.plan.variations import omitted_kinds, unjustified_omissions, variation_kind
from parval.plan.waves import StartSchedule, start_schedule

# The procedure's minimum of fresh starts per advertised count.
MIN_STARTS = 3


@dataclass(frozen=True)
class Variation:
    """One of `requests.variations`: what it changes, its kind and the request it sends."""

    name: str
    changes: str
    kind: str  # its declared kind, else the kind of the field it changes
    request: JsonObject


@dataclass(frozen=True)
class JudgedModel:
    """`model`, as far as the judges read it."""

    id: str
    family: str = ""
    task: str = ""
    mode: str = "offline"
    cache_sensitive: bool = False
    admit_modes: tuple[str, ...] = ("offline",)
    auxiliary_files: tuple[str, ...] = ()
    variation_kinds: tuple[str, ...] | None = None  # None: the plan declares none
    variation_kinds_justification: Mapping[str, object] = field(default_factory=dict)
    omitted_kinds: tuple[str, ...] = ()  # kinds the task supports that variation_kinds leaves out
    unjustified_omissions: tuple[str, ...] = ()  # omitted kinds without a reason


@dataclass(frozen=True)
class MemoryRules:
    """The memory rules declared before the run (`memory`)."""

    gpu_required: bool = True
    baseline_reason: str | None = None  # memory.baseline_comparison.reason, when declared
    stabilisation: Stabilisation | None = None


@dataclass(frozen=True)
class JudgedPlan:
    counts: tuple[int, ...]  # sorted
    model: JudgedModel
    required_starts: int  # starts_per_count, at least MIN_STARTS
    schedules: Mapping[int, StartSchedule]  # what one start records at each count
    # requests: None when the snapshot declares none (serial repeats are then judged on
    # whatever requests the baselines recorded)
    base_request: JsonObject | None = None
    variations: tuple[Variation, ...] = ()
    tolerance: Tolerance | None = None
    volatile_fields: tuple[VolatileField, ...] = ()
    quality_settings: JsonValue = field(default_factory=dict)
    drain_lag_ms: float | None = None  # timeouts.drain_lag_ms: None when not declared
    memory: MemoryRules = MemoryRules()
    backend: str = ""
    framework_record: str | None = None
    framework_protected: str | None = None

    @property
    def volatile(self) -> list[str]:
        """The declared volatile paths."""
        return [v["path"] for v in self.volatile_fields]

    @property
    def request_names(self) -> list[str]:
        """The plan's request names: base and each variation."""
        return ["base", *(v.name for v in self.variations)]


def judged_plan(raw: Mapping[str, object]) -> JudgedPlan:
    """The judges' view of a plan snapshot (plan.json, or a loaded plan's `raw`)."""
    counts = tuple(sorted(as_int(c) for c in iterate(item(raw, "counts"))))
    reqs = raw.get("requests")
    compare = raw.get("compare") or {}
    tol = get(compare, "tolerance")
    fw = raw.get("framework", {})
    return JudgedPlan(
        counts=counts,
        model=_model(item(raw, "model")),
        required_starts=max(MIN_STARTS, as_int(raw.get("starts_per_count", MIN_STARTS))),
        schedules={n: start_schedule(raw, n) for n in counts},
        base_request=_object(item(reqs, "base")) if reqs else None,
        variations=tuple(_variation(v) for v in iterate(get(reqs, "variations", []))) if reqs else (),
        tolerance=(
            {
                "max_abs_sample_diff": as_int(item(tol, "max_abs_sample_diff")),
                "justification": str(item(tol, "justification")),
            }
            if tol
            else None
        ),
        volatile_fields=tuple(
            {"path": str(item(v, "path")), "justification": str(get(v, "justification", ""))}
            for v in iterate(get(compare, "volatile_fields", []))
        ),
        quality_settings=_json(get(compare, "quality_settings", {})),
        drain_lag_ms=_number(get(raw.get("timeouts") or {}, "drain_lag_ms")),
        memory=_memory(raw.get("memory") or {}),
        backend=str(get(raw.get("server") or {}, "backend", "")),
        framework_record=_path(get(fw, "record")),
        framework_protected=_path(get(fw, "protected")),
    )


def _model(m: object) -> JudgedModel:
    model: Mapping[str, object] = m if isinstance(m, Mapping) else {}
    kinds = get(m, "variation_kinds")
    return JudgedModel(
        id=str(item(m, "id")),
        family=str(model.get("family", "")),
        task=str(model.get("task", "")),
        mode=str(model.get("mode", "offline")),
        cache_sensitive=bool(model.get("cache_sensitive")),
        admit_modes=tuple(str(k) for k in iterate(model.get("admit_modes", ["offline"]))),
        auxiliary_files=tuple(str(f) for f in iterate(model.get("auxiliary_files") or [])),
        variation_kinds=None if kinds is None else tuple(str(k) for k in iterate(kinds)),
        variation_kinds_justification=_mapping(model.get("variation_kinds_justification") or {}),
        omitted_kinds=tuple(omitted_kinds(model)),
        unjustified_omissions=tuple(unjustified_omissions(model)),
    )


def _variation(v: object) -> Variation:
    declared = v if isinstance(v, Mapping) else {}
    return Variation(
        name=str(item(v, "name")),
        changes=str(item(v, "changes")),
        kind=variation_kind(declared),
        request=_object(item(v, "request")),
    )


def _memory(mem: object) -> MemoryRules:
    declared = get(mem, "baseline_comparison") or None
    rule = get(mem, "stabilisation")
    stabilisation: Stabilisation | None = (
        {
            "last_k_waves": as_int(item(rule, "last_k_waves")),
            "max_growth_mib": as_float(item(rule, "max_growth_mib")),
            "metric": str(get(rule, "metric", "host_rss")),
        }
        if rule
        else None
    )
    return MemoryRules(
        gpu_required=bool(get(mem, "gpu_required", True)),
        baseline_reason=str(item(declared, "reason")) if declared else None,
        stabilisation=stabilisation,
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _path(value: object) -> str | None:
    return str(value) if value else None


def _json(value: object) -> JsonValue:
    """A value of a JSON document (the snapshot is one), as its JSON type."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _object(value: object) -> JsonObject:
    found = _json(value)
    if isinstance(found, dict):
        return found
    raise TypeError(f"expected a JSON object, not '{type(value).__name__}'")


def _mapping(value: object) -> Mapping[str, object]:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    raise AttributeError(f"'{type(value).__name__}' object has no attribute 'get'")


def as_judged(plan: JudgedPlan | Mapping[str, object]) -> JudgedPlan:
    """The judges' view of `plan`: itself when it is one, else built from the snapshot."""
    return plan if isinstance(plan, JudgedPlan) else judged_plan(plan)
