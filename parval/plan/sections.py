"""The shapes of a loaded plan's sections, as schemas/plan.schema.json fixes them.

A plan is validated against the schema and its defaults filled in before any section is
read (parval.plan.load), so every key with a schema default is present; keys the schema
gives no default are `NotRequired`. The sections stay plain dicts (TypedDicts): they are
written back as they are (plan.json, the manifest's settings). Free-form objects passed
through to the server (options, extra config) are `dict[str, object]`."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ServerEntry(TypedDict):
    """`servers.baseline` / `servers.candidate`: one build's executable."""

    executable: str
    args: list[str]
    env: dict[str, str]
    knows_parallel_jobs: bool


class ServerSection(TypedDict):
    """`server`: server-wide settings written to every start's config file."""

    host: str
    backend: str
    device: int
    threads: int
    busy_timeout_ms: int
    max_loaded_models: int
    extra_config: dict[str, object]  # merged into the server config as it is
    ui_management: bool


class ModelSection(TypedDict):
    """`model`: the model under test and its config entry."""

    id: str
    family: str
    task: str
    mode: str
    path: str
    auxiliary_files: list[str]
    quantization: str
    lazy: bool
    load_options: dict[str, object]
    session_options: dict[str, object]
    default_request_options: dict[str, object]
    entry_extra: dict[str, object]
    cache_sensitive: bool
    admit_modes: list[str]
    variation_kinds: NotRequired[list[str]]
    variation_kinds_justification: dict[str, str]


class VolatileField(TypedDict):
    path: str
    justification: str


class Tolerance(TypedDict):
    max_abs_sample_diff: int
    justification: str


class CompareSection(TypedDict):
    """`compare`: what output comparison ignores or tolerates."""

    volatile_fields: list[VolatileField]
    tolerance: Tolerance | None
    quality_settings: dict[str, object]


class BaselineComparison(TypedDict):
    reason: str


class Stabilisation(TypedDict):
    last_k_waves: int
    max_growth_mib: float
    metric: str


class MemorySection(TypedDict):
    """`memory`: sampling and the memory rules declared before the run."""

    gpu_interval_ms: float
    host_interval_ms: float
    nvml_device_index: int | None
    gpu_required: bool
    baseline_comparison: BaselineComparison | None
    guard_mib: float | None
    stabilisation: Stabilisation | None


class PerformanceSection(TypedDict):
    enabled: bool
    warm_repeats: int
    independent_servers: bool
    rejection_probe: bool


class SoakSection(TypedDict, total=False):
    """`soak`: one of minutes, until_rate_below or waves (the schema requires exactly one)."""

    minutes: float
    until_rate_below: float
    waves: int
    waves_per_start: int


class RecoverySection(TypedDict):
    load_failure: str


class FrameworkReuse(TypedDict):
    record: str
    record_commit: str
    candidate_commit: str
    repo: str
    candidate_sha256: NotRequired[str]


class FrameworkSection(TypedDict):
    """`framework`: the framework record, ctest builds and protected result to attach."""

    record: str | None
    ctest_build_dir: str | None
    ctest_regex: str | None
    sanitizer_build_dirs: dict[str, str]
    protected: str | None
    reuse: FrameworkReuse | None


class BuildIdentity(TypedDict, total=False):
    """`identity.baseline` / `identity.candidate`: what parval cannot read off a build."""

    source_commit: str
    build_flags: str | list[str]


class IdentitySection(TypedDict, total=False):
    """`identity` (optional, no defaults): what the plan declares about the builds and the model."""

    baseline: BuildIdentity
    candidate: BuildIdentity
    quantization: str
    driver: str
