"""The figures `parval bench` measures, as its JSON holds them (format in `measure.py`)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class BenchConfig(TypedDict):
    """How much to measure (`FULL`, `QUICK`)."""

    ns: list[int]
    waves: int
    skew_service_ms: float
    requests: int
    starts: int
    wave_service_ms: float
    poll_blocks: int
    poll_per_block: int
    poll_service_ms: float


class Environment(TypedDict):
    cpus: int | None
    python: str
    platform: str
    loadavg_start: list[float]
    time: str
    loadavg_end: NotRequired[list[float]]  # added once the bench is over


class Spread(TypedDict):
    """Order statistics of one figure, ms (None for no values)."""

    median: float | None
    p95: float | None
    max: float | None


class Distribution(Spread):
    count: int


class SkewSummary(TypedDict):
    """One method at one N: spreads within a wave over its waves."""

    method: str
    n: int
    waves: int
    send_ms: Spread
    accept_ms: Spread
    start_ms: Spread
    lead_ms: Spread
    requests_ok: int
    requests: int
    slow_connects: int
    max_send_to_start_ms: float | None
    tcp_counters: NotRequired[dict[str, int]]  # the run with the poller on


class SkewFigures(TypedDict):
    service_ms: float
    waves: int
    ns: list[int]
    series: list[SkewSummary]
    tcp_counters: dict[str, int]


class StartFigures(TypedDict):
    """One fresh start of the campaign-like loop, ms."""

    call_to_spawn_ms: float | None
    server_own_ready_ms: float | None
    ready_detect_lag_ms: float | None
    ready_to_first_poll_ms: float | None
    first_poll_to_body_ms: float | None
    body_to_first_send_ms: float | None
    start_total_ms: float | None
    start_overhead_ms: float | None
    server_own_stop_ms: float | None
    stop_total_ms: float | None
    stop_overhead_ms: float | None
    stop_graceful: object


class Growth(TypedDict):
    """Time per call over the first and the last tenth of a writer's calls, ms."""

    calls: int
    first_ms: float | None
    last_ms: float | None
    decile_medians_ms: list[float | None]
    first_p95_ms: float | None
    last_p95_ms: float | None
    ratio: float | None
    file_mib: NotRequired[float | None]  # the event log's
    events: NotRequired[int]


class Probe(TypedDict):
    """The same write to the grown run and to an empty one, ms (median)."""

    grown_ms: float | None
    empty_ms: float | None
    ratio: float | None


class ControlledGrowth(TypedDict):
    rounds: int
    append: Probe
    put: Probe


class JudgeTiming(TypedDict, total=False):
    """One judge_run over the loop's run so far (empty when it was never timed)."""

    ms: float
    events: int
    ms_per_1k_events: float | None
    error: str | None


class JudgeTimings(TypedDict):
    mid: JudgeTiming
    end: JudgeTiming


class RssFigures(TypedDict):
    peak_mib: float | None
    before_mib: float | None
    peak_reset: bool


class CampaignFigures(TypedDict):
    requests: int
    n: int
    starts: int
    waves_per_start: int
    service_ms: float
    elapsed_s: float
    gap_ms: Distribution
    gap_parts_ms: dict[str, Distribution]
    per_start: dict[str, float | None]  # each start figure's median over the starts
    starts_detail: list[StartFigures]
    overhead: dict[str, object]  # parval.gates.campaign_cost's, with the per-start cost taken out
    rss: RssFigures
    event_log: Growth
    artifacts: Growth
    controlled: ControlledGrowth
    judge: JudgeTimings


class PollMode(TypedDict):
    interval_ms: float | None
    requests: int
    latency_median_ms: float | None
    latency_p95_ms: float | None
    effect_pct: float | None
    poll_hz: float | None
    poll_errors: int


class PollFigures(TypedDict):
    service_ms: float
    blocks: int
    per_block: int
    failed_requests: int
    modes: dict[str, PollMode]


class SoakFigures(TypedDict):
    """A soak's throughput at n slots (parval.bench.soak_throughput)."""

    n: int
    service_ms: float
    waves: int
    requests: int
    wall_s: float
    overlapped: int  # outputs produced beside another request (parval.rundir.mismatch_bound)
    overlapped_per_min: float | None
    parval_share_pct: float | None  # wall time with no request in flight, % of the waves' wall time
    request_ms_median: float | None


class BenchResults(TypedDict):
    skew: SkewFigures
    campaign: CampaignFigures
    poll: PollFigures
    soak: NotRequired[SoakFigures]


class TargetCheck(TypedDict):
    """One target of the brief, judged on a run's figures (informational)."""

    id: str
    figure: str
    value: object
    target: str
    result: str | None
