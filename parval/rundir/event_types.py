"""Every event kind parval writes, one TypedDict per kind (two where a probe may record that
it was skipped): the required keys are the fields parval.rundir.event_fields declares for
the kind (checked when a log is read, so a reader can index them), `NotRequired` the
optional ones parval's writers add and a judge reads with `.get`, typed as those writers
record them (they are not checked on read). tests/rundir/test_event_types.py keeps the two
tables in step and writes one event of every kind, built through its type, to a log that
validates against schemas/events.schema.json.

The table declares a nested object (a reply, a wave's status) only as an object: the ones
the gates read have a TypedDict below with every key optional (`total=False`: older runs
may lack a key, so the gates read them with `.get`), typed as parval's writer records it;
the rest are JSON objects, narrowed where they are read."""

# No `from __future__ import annotations`: TypedDict reads `NotRequired` from evaluated
# annotations only (Python 3.11), and the test compares __required_keys__ with the table.
from typing import Literal, NotRequired, TypedDict

from parval.jsontypes import JsonObject, JsonValue

WaveMode = Literal["together", "ordered", "reversed", "serial"]


class ReplySummary(TypedDict, total=False):
    """A request's or a probe's `reply` (parval.server.client `Reply.summary`)."""

    status: int | None
    outcome: str
    ms: float
    error: str
    error_type: str | None


class RequestOutput(TypedDict, total=False):
    """A request's canonical `output` (parval.gates.canonical); the canonical form and
    audio digests are compared and reported, never computed with."""

    valid: bool
    canon: JsonValue
    audio: JsonValue
    problem: JsonValue


class WaveStatus(TypedDict, total=False):
    """What the status poller saw during one wave (parval.server.status_poller `WindowSummary`)."""

    polls: int
    poll_errors: int
    poll_hz: float | None
    max_active: int | None
    max_active_loaded: int | None
    max_queued: int | None
    fields_present: bool
    expected: int


class DrainedState(TypedDict, total=False):
    """Whether the slots drained after a step (runners/start.py `Drained`)."""

    ok: bool
    active: int | None
    queued: int | None
    fields_present: bool
    waited: bool
    polls_ok: bool
    lag_ms: float | None  # from the step's last reply to the zero read (recorded since counters lag is judged)
    nonzero_reads: int


class InFlightWindow(TypedDict, total=False):
    """The window with every request of a wave in flight (runners/start.py `AllInFlight`)."""

    ms: float
    polls: int
    max_active: int | None
    max_active_loaded: int | None


class CampaignEndEvent(TypedDict):
    kind: Literal["campaign_end"]
    finished: bool


class CountNotRunEvent(TypedDict):
    kind: Literal["count_not_run"]
    count: int
    reason: str


class ServerConfigRecord(TypedDict, total=False):
    """The server config file a start wrote (run_start's `config`): its model entries."""

    models: list[JsonObject]


class RunStartEvent(TypedDict):
    kind: Literal["run_start"]
    run: str
    attempt: int
    role: str
    count: int | None
    exe_role: NotRequired[str]
    config: NotRequired[ServerConfigRecord]
    env: NotRequired[list[str]]  # the names of the variables in the server's environment


class RunEndEvent(TypedDict):
    kind: Literal["run_end"]
    run: str
    attempt: int
    memory: NotRequired[JsonObject | None]  # how the memory sampler ran
    status_fields: NotRequired[JsonObject]  # the /v1/models fields the start published


class RunAbandonedEvent(TypedDict):
    kind: Literal["run_abandoned"]
    run: str
    attempt: int


class ServerReadyEvent(TypedDict):
    kind: Literal["server_ready"]
    run: str
    attempt: int
    argv: list[JsonValue]
    warning_marker: bool


class ServerCrashEvent(TypedDict):
    kind: Literal["server_crash"]
    run: str
    attempt: int
    where: str
    exit_code: int
    signal: NotRequired[str | None]


class SlotCountersEvent(TypedDict):
    kind: Literal["slot_counters"]
    run: str
    attempt: int
    published: bool


class _UnitStopped(TypedDict):
    """A start parval ended early. The record loader names its start (`run`) and attempt
    (None when its server never started) on every one."""

    unit: str
    reason: str
    run: NotRequired[str]
    attempt: NotRequired[int | None]


class StartFailedEvent(_UnitStopped):
    kind: Literal["start_failed"]


class StartAbortedEvent(_UnitStopped):
    kind: Literal["start_aborted"]


class StartTimeoutEvent(_UnitStopped):
    kind: Literal["start_timeout"]


class WaveTimeoutEvent(TypedDict):
    kind: Literal["wave_timeout"]
    run: str
    phase: str
    wave: int
    reason: str
    attempt: NotRequired[int | None]


class MemoryGuardEvent(TypedDict):
    kind: Literal["memory_guard"]
    run: str
    attempt: int
    reason: str
    sample: JsonObject


class RequestEvent(TypedDict):
    kind: Literal["request"]
    run: str
    attempt: int
    phase: str
    wave: int
    req: str
    ref: str | None
    reply: ReplySummary
    t_send: float
    t_done: float
    output: RequestOutput | None
    # Written by every model start's requests (runners/start.py `record`):
    slot: NotRequired[int | None]
    history: NotRequired[list[str] | None]
    artifact: NotRequired[str | None]
    expect_error: NotRequired[bool]
    reversed: NotRequired[bool]
    retry: NotRequired[int]


class WaveEvent(TypedDict):
    kind: Literal["wave"]
    run: str
    attempt: int
    phase: str
    wave: int
    n: int
    mode: WaveMode
    batch_s: float
    status: WaveStatus
    drained: DrainedState
    # Written by every model start's waves (runners/start.py `wave_event`):
    count: NotRequired[int | None]
    t_start: NotRequired[float]
    t_end: NotRequired[float]
    all_in_flight: NotRequired[InFlightWindow | None]
    # and by the mixed waves (runners/phases.py):
    admission: NotRequired[JsonObject]
    trace_confirmed: NotRequired[bool | None]
    order: NotRequired[list[str]]
    retry: NotRequired[int]


class ProbeEvent(TypedDict):
    kind: Literal["probe"]
    run: str
    attempt: int
    name: str
    reply: ReplySummary
    # The per-start unload probe (runners/phases.py `unload_reload`) and the check of
    # /v1/models after it (`Start.observe_unloaded`):
    cycle: NotRequired[int]
    listed: NotRequired[bool]
    loaded_false: NotRequired[bool]
    loaded_field: NotRequired[bool | None]
    still_loaded: NotRequired[bool]
    polls_after: NotRequired[int]


class M4InvalidAlongsideEvent(TypedDict):
    kind: Literal["m4_invalid_alongside"]
    run: str
    attempt: int
    invalid: JsonObject
    rejected: bool
    drained: JsonObject


class M4LoadFailureEvent(TypedDict):
    kind: Literal["m4_load_failure"]
    run: str
    attempt: int
    failure: JsonObject
    failed: bool
    retry: JsonObject
    retried: bool


class M4ProbeSkippedEvent(TypedDict):
    """An m4_invalid_alongside or m4_load_failure probe that recorded why it did not run."""

    kind: Literal["m4_invalid_alongside", "m4_load_failure"]
    run: str
    skipped: str


class _UnloadTimes(TypedDict):
    run: str
    attempt: int
    unload: JsonObject
    unload_done: float
    requests_done: list[JsonValue]
    requests_latency: list[JsonValue]


class _InFlightUnload(_UnloadTimes):
    issued_while_active: bool
    busy: int
    ended_unloaded: bool
    unloaded_seen: bool
    unload_check: JsonObject
    later_order: str
    tries: int


class M4TargetedUnloadEvent(_InFlightUnload):
    kind: Literal["m4_targeted_unload"]


class M4AllUnloadEvent(_InFlightUnload):
    kind: Literal["m4_all_unload"]


class M4UnloadDuringFirstLoadEvent(_UnloadTimes):
    kind: Literal["m4_unload_during_first_load"]
    issued_during_load: bool
    ended_unloaded: bool
    unload_check: JsonObject


class StreamRecord(TypedDict, total=False):
    """One stream of the M6 streaming probe (runners/modes.py)."""

    wave: str
    index: int
    ref: str | None
    status: int | None
    outcome: str
    error: str
    pcm_sha256: str | None
    bytes: int
    done: bool
    events: int
    disconnected: bool
    cut: bool
    t_send: float
    t_done: float


class M6StreamingEvent(TypedDict):
    kind: Literal["m6_streaming"]
    run: str
    attempt: int
    count: int
    streams: list[StreamRecord]
    counters_present: bool
    drained: DrainedState
    max_active: NotRequired[int | None]
    polls: NotRequired[int]


class BatchRecord(TypedDict, total=False):
    """One result of the M6 batch probe, or one batch's reply (no `index`) (runners/modes.py)."""

    batch: int
    index: int
    req: str
    ref: str | None
    canon: str | None
    artifact: str
    status: int | None
    outcome: str
    error: str


class M6BatchEvent(TypedDict):
    kind: Literal["m6_batch"]
    run: str
    attempt: int
    count: int
    batches: int
    expected_results: int
    results: list[BatchRecord]
    drained: DrainedState


class NegativeControlEvent(TypedDict):
    kind: Literal["negative_control"]
    caught: bool | None
    source: NotRequired[JsonObject]  # the request whose reply was altered


class PerfEvent(TypedDict):
    kind: Literal["perf"]
    series: str
    count: int
    batch_s: float
    latencies_s: list[JsonValue]
    failures: int


class RejectionLatencyEvent(TypedDict):
    kind: Literal["rejection_latency"]
    count: int
    latencies_ms: list[JsonValue]
    statuses: NotRequired[JsonValue]


class X1ConfigProbeEvent(TypedDict):
    kind: Literal["x1_config_probe"]
    value: JsonValue
    rejected: bool
    message_ok: NotRequired[bool]  # the startup error was the legacy text


class X1RegistrationProbeEvent(TypedDict):
    kind: Literal["x1_registration_probe"]
    run: str
    value: JsonValue
    reply: ReplySummary
    ok: bool
    message: NotRequired[JsonValue]  # the registration reply's error text


class X3ResizeProbeEvent(TypedDict):
    kind: Literal["x3_resize_probe"]
    run: str
    steps: list[JsonValue]
    ok: NotRequired[bool]  # every step ran
    capacity_refused: NotRequired[JsonValue]  # the server's refusal of two slots


# -- the kinds declared in events format 2: campaign bookkeeping and the framework record ---
# (nothing in the gates reads them; the framework's --rejudge reads observation, ctest_run,
# judge_inputs and record_inputs)


class CampaignStartEvent(TypedDict):
    kind: Literal["campaign_start"]
    plan: str
    plan_sha256: str
    shard: list[JsonValue] | None
    counts: list[JsonValue]
    resumed: bool
    fail_fast: bool


class CampaignStoppedEvent(TypedDict):
    kind: Literal["campaign_stopped"]
    reason: str


class ExecutableCannotStartEvent(TypedDict):
    """The first start of an executable exited before it was ready (rundir/cannot_start.py)."""

    kind: Literal["executable_cannot_start"]
    role: str
    executable: str
    run: str
    exit_code: int
    last_lines: list[JsonValue]  # each a str
    stream: str
    reason: str


class CampaignInterruptedEvent(TypedDict):
    kind: Literal["campaign_interrupted"]
    signal: str
    unit: str | None
    reason: str


class CampaignTimeoutEvent(TypedDict):
    kind: Literal["campaign_timeout"]
    after_s: float
    reason: str


class RecoveryCountEvent(TypedDict):
    kind: Literal["recovery_count"]
    count: int
    reason: str


class UnitBeginEvent(TypedDict):
    kind: Literal["unit_begin"]
    unit: str


class UnitEndEvent(TypedDict):
    kind: Literal["unit_end"]
    unit: str
    ok: bool


class UnitSkippedEvent(TypedDict):
    kind: Literal["unit_skipped"]
    unit: str
    reason: str


class ServerLeftoverEvent(TypedDict):
    kind: Literal["server_leftover"]
    unit: str
    server: str
    stop: JsonObject
    log_tail: str


class ServerUnresponsiveEvent(TypedDict):
    kind: Literal["server_unresponsive"]
    run: str
    attempt: int
    where: str
    requests: int
    outcomes: list[JsonValue]
    request_timeout_s: float
    log_tail: str


class WaveRepeatEvent(TypedDict):
    kind: Literal["wave_repeat"]
    run: str
    attempt: int
    count: int | None
    phase: str
    wave: int
    n: int
    retry: int
    repeat: bool
    reason: str


class TornTailDiscardedEvent(TypedDict):
    kind: Literal["torn_tail_discarded"]
    bytes: int
    sha256: str
    reason: str


class FrameworkStartEvent(TypedDict):
    kind: Literal["framework_start"]
    plan: str
    plan_sha256: str
    only: str | None
    selection: list[JsonValue]


class FrameworkEndEvent(TypedDict):
    kind: Literal["framework_end"]
    record_id: str
    verdict: JsonObject


class ObservationEvent(TypedDict):
    kind: Literal["observation"]
    assertion: str
    name: str
    judge: str
    facts: JsonObject
    evidence: JsonObject


class CheckEvent(TypedDict):
    kind: Literal["check"]
    assertion: str
    name: str
    status: str
    detail: str
    evidence: JsonObject


class CtestRunEvent(TypedDict):
    kind: Literal["ctest_run"]
    run: JsonObject


class CtestEvent(TypedDict):
    kind: Literal["ctest"]
    label: str
    summary: str
    status: str


class JudgeInputsEvent(TypedDict):
    kind: Literal["judge_inputs"]
    selected: list[JsonValue]
    only: str | None
    plan_path: str
    required_tests: list[JsonValue]
    default_transport_unchanged: str | None
    sanitizers: list[JsonValue]
    sanitizers_unavailable: JsonObject
    unrelated_tests: NotRequired[JsonObject]  # older records: none (judges_f6)
    ctest_coverage: NotRequired[JsonObject]


class RecordInputsEvent(TypedDict):
    kind: Literal["record_inputs"]
    procedure_version: str
    parval_version: str
    created_at: str
    elapsed_s: float
    identity: JsonObject
    scope: JsonObject
    contract: JsonObject
    probes: list[JsonValue]
    reproduction: str


class ProbeBeginEvent(TypedDict):
    kind: Literal["probe_begin"]
    probe: str


class ProbeEndEvent(TypedDict):
    kind: Literal["probe_end"]
    probe: str
    ok: bool
    elapsed_s: float


class ProbeErrorEvent(TypedDict):
    kind: Literal["probe_error"]
    probe: str
    error: str


class ProbeSkippedEvent(TypedDict):
    kind: Literal["probe_skipped"]
    probe: str
    status: str
    reason: str


class RigStartEvent(TypedDict):
    kind: Literal["rig_start"]
    rig: str
    flagged: bool
    config: JsonObject
    ui_management: bool


class RigReadyEvent(TypedDict):
    kind: Literal["rig_ready"]
    rig: str
    ready_s: float
    argv: list[JsonValue]


class RigEndEvent(TypedDict):
    kind: Literal["rig_end"]
    rig: str
    stop: JsonObject
    polls: int
    poll_errors: int
    log_tail: str


class FlightEvent(TypedDict):
    kind: Literal["flight"]
    rig: str
    label: str
    path: str
    t_send: float
    t_done: float | None
    cancelled: bool
    reply: JsonObject | None


class CalibrationEvent(TypedDict):
    kind: Literal["calibration"]
    rig: str
    timing: JsonObject
    statuses: list[JsonValue]


class CapabilitiesEvent(TypedDict):
    kind: Literal["capabilities"]
    rig: str
    counters: bool | None
    loaded: bool | None
    bulk_unload: bool | None
    bulk_status: int | None
    management: bool | None
    management_status: int | None
    plan_ui_management: bool


class FirstWaveEvent(TypedDict):
    kind: Literal["first_wave"]
    rig: str
    timeline: list[JsonValue]
    model: str
    count: int
    capacity: list[JsonValue]
    sessions: list[JsonValue]


class ForcedOrderEvent(TypedDict):
    kind: Literal["forced_order"]
    rig: str
    timeline: list[JsonValue]
    model: str
    count: int


class RequestOnlyQueueEvent(TypedDict):
    kind: Literal["request_only_queue"]
    rig: str
    timeline: list[JsonValue]
    model: str
    count: int


class HealthyPlusOverdueEvent(TypedDict):
    kind: Literal["healthy_plus_overdue"]
    rig: str
    count: int
    probe_ms: int


class OverlappingManagersEvent(TypedDict):
    kind: Literal["overlapping_managers"]
    rig: str
    timeline: list[JsonValue]


class ReconfigureQueuedEvent(TypedDict):
    kind: Literal["reconfigure_queued"]
    rig: str
    timeline: list[JsonValue]


class UnloadNotUndoneEvent(TypedDict):
    kind: Literal["unload_not_undone"]
    rig: str
    timeline: list[JsonValue]


# kind -> its TypedDict(s): two where a probe may record that it was skipped.
EVENT_TYPES: dict[str, tuple[type, ...]] = {
    "campaign_end": (CampaignEndEvent,),
    "count_not_run": (CountNotRunEvent,),
    "run_start": (RunStartEvent,),
    "run_end": (RunEndEvent,),
    "run_abandoned": (RunAbandonedEvent,),
    "server_ready": (ServerReadyEvent,),
    "server_crash": (ServerCrashEvent,),
    "slot_counters": (SlotCountersEvent,),
    "start_failed": (StartFailedEvent,),
    "start_aborted": (StartAbortedEvent,),
    "start_timeout": (StartTimeoutEvent,),
    "wave_timeout": (WaveTimeoutEvent,),
    "memory_guard": (MemoryGuardEvent,),
    "request": (RequestEvent,),
    "wave": (WaveEvent,),
    "probe": (ProbeEvent,),
    "m4_invalid_alongside": (M4InvalidAlongsideEvent, M4ProbeSkippedEvent),
    "m4_load_failure": (M4LoadFailureEvent, M4ProbeSkippedEvent),
    "m4_targeted_unload": (M4TargetedUnloadEvent,),
    "m4_all_unload": (M4AllUnloadEvent,),
    "m4_unload_during_first_load": (M4UnloadDuringFirstLoadEvent,),
    "m6_streaming": (M6StreamingEvent,),
    "m6_batch": (M6BatchEvent,),
    "negative_control": (NegativeControlEvent,),
    "perf": (PerfEvent,),
    "rejection_latency": (RejectionLatencyEvent,),
    "x1_config_probe": (X1ConfigProbeEvent,),
    "x1_registration_probe": (X1RegistrationProbeEvent,),
    "x3_resize_probe": (X3ResizeProbeEvent,),
    "campaign_start": (CampaignStartEvent,),
    "campaign_stopped": (CampaignStoppedEvent,),
    "executable_cannot_start": (ExecutableCannotStartEvent,),
    "campaign_interrupted": (CampaignInterruptedEvent,),
    "campaign_timeout": (CampaignTimeoutEvent,),
    "recovery_count": (RecoveryCountEvent,),
    "unit_begin": (UnitBeginEvent,),
    "unit_end": (UnitEndEvent,),
    "unit_skipped": (UnitSkippedEvent,),
    "server_leftover": (ServerLeftoverEvent,),
    "server_unresponsive": (ServerUnresponsiveEvent,),
    "wave_repeat": (WaveRepeatEvent,),
    "torn_tail_discarded": (TornTailDiscardedEvent,),
    "framework_start": (FrameworkStartEvent,),
    "framework_end": (FrameworkEndEvent,),
    "observation": (ObservationEvent,),
    "check": (CheckEvent,),
    "ctest_run": (CtestRunEvent,),
    "ctest": (CtestEvent,),
    "judge_inputs": (JudgeInputsEvent,),
    "record_inputs": (RecordInputsEvent,),
    "probe_begin": (ProbeBeginEvent,),
    "probe_end": (ProbeEndEvent,),
    "probe_error": (ProbeErrorEvent,),
    "probe_skipped": (ProbeSkippedEvent,),
    "rig_start": (RigStartEvent,),
    "rig_ready": (RigReadyEvent,),
    "rig_end": (RigEndEvent,),
    "flight": (FlightEvent,),
    "calibration": (CalibrationEvent,),
    "capabilities": (CapabilitiesEvent,),
    "first_wave": (FirstWaveEvent,),
    "forced_order": (ForcedOrderEvent,),
    "request_only_queue": (RequestOnlyQueueEvent,),
    "healthy_plus_overdue": (HealthyPlusOverdueEvent,),
    "overlapping_managers": (OverlappingManagersEvent,),
    "reconfigure_queued": (ReconfigureQueuedEvent,),
    "unload_not_undone": (UnloadNotUndoneEvent,),
}
