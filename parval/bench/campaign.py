"""A campaign-like loop on parval's real machinery (plan, Campaign, fresh starts,
`wave_together` with its records, trace read, liveness and drained checks): the gap
between waves, the per-start overhead beyond the server's own readiness, parval's peak
RSS over the whole loop, and whether evidence writing slows down as the run grows."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import yaml

from parval.bench.figures import (
    CampaignFigures,
    ControlledGrowth,
    Distribution,
    Growth,
    JudgeTiming,
    Probe,
    StartFigures,
)
from parval.bench.timing import ExitWatcher, TimedArtifactStore, TimedEventLog
from parval.bench.util import (
    MODEL_ID,
    FileGrowthWatcher,
    median,
    percentile,
    proc_status_kib,
    reset_peak_rss,
    rnd,
    standin_executable,
    write_model,
)
from parval.jsonread import as_float, as_int
from parval.jsontypes import JsonObject
from parval.judge import MID_RUN
from parval.plan.schemas import schema_version
from parval.rundir.artifacts import ArtifactStore
from parval.rundir.event_types import RequestEvent
from parval.rundir.events import EventLog
from parval.rundir.layout import EVENTS

if TYPE_CHECKING:
    from parval.rundir.event_types import DrainedState

START_GRACE_S = 10.0


def bench_plan(workdir: Path, *, service_ms: float, poll_ms: float) -> Path:
    exe = str(standin_executable())
    model = write_model(workdir)
    raw = {
        "schema_version": schema_version("plan"),
        "name": "bench",
        "description": "parval bench: campaign-like loop on the stand-in",
        "servers": {"baseline": {"executable": exe}, "candidate": {"executable": exe}},
        "server": {"backend": "cpu", "threads": 1},
        "model": {
            "id": MODEL_ID,
            "family": "standin_tts",
            "task": "tts",
            "mode": "offline",
            "path": model.name,
            "lazy": True,
            "load_options": {"capacity": 16, "service_ms": service_ms, "load_ms": 20, "model_mib": 1, "session_mib": 1},
        },
        "counts": [1, 16],
        "requests": {"base": {"text": "parval bench wave request", "seed": 1234}},
        "memory": {"gpu_required": False, "host_interval_ms": 50},
        "status_poll_ms": poll_ms,
        "timeouts": {"ready_s": 30, "request_s": 30, "wave_s": 60, "start_s": 600, "shutdown_grace_s": START_GRACE_S},
    }
    path = workdir / "bench-plan.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _wave_gaps(requests: list[JsonObject]) -> list[tuple[int, float, float, float]]:
    """(wave, last reply of this wave, first send of the next) from request events."""
    by_wave: dict[int, list[JsonObject]] = {}
    for e in requests:
        by_wave.setdefault(as_int(e["wave"]), []).append(e)
    waves = sorted(by_wave)
    out = []
    for k, nxt in zip(waves, waves[1:], strict=False):
        last_done = max(as_float(e["t_done"]) for e in by_wave[k])
        first_send = min(as_float(e["t_send"]) for e in by_wave[nxt])
        out.append((k, last_done, first_send, (first_send - last_done) * 1000.0))
    return out


async def run_campaign(
    workdir: Path, *, total_requests: int, n: int, starts: int, service_ms: float, poll_ms: float = 5.0
) -> CampaignFigures:
    from parval import api
    from parval.judge import judge_run
    from parval.plan.load import load_plan
    from parval.runners.campaign import Campaign
    from parval.runners.phases import wave_together

    plan = load_plan(bench_plan(workdir, service_ms=service_ms, poll_ms=poll_ms))
    run_dir = api.prepare_run_dir(plan, workdir / "run")
    waves_per_start = max(2, total_requests // (n * starts))
    rss_before = proc_status_kib("VmRSS")
    peak_reset = reset_peak_rss()
    log = TimedEventLog(run_dir / EVENTS)
    campaign = Campaign(plan, run_dir, log, judging=MID_RUN)
    store = TimedArtifactStore(run_dir / "artifacts")
    campaign.store = store
    captured: list[JsonObject] = []
    log.listeners.append(lambda e: captured.append(e) if e["kind"] == "request" else None)
    per_start: list[StartFigures] = []
    gaps: list[float] = []
    parts: dict[str, list[float]] = {"record_ms": [], "checks_ms": [], "drained_ms": [], "next_wave_ms": []}
    judge_mid: JudgeTiming = {}
    t_begin = time.monotonic()
    with FileGrowthWatcher(run_dir / "servers", "*/stdout.log") as watch:
        for s in range(starts):
            name = f"bench-s{s}"
            spec = campaign.launch("candidate", flagged=True, slots=n)
            captured.clear()
            drained_ms: list[float] = []
            marks: dict[str, float] = {"call": time.monotonic()}
            async with campaign.start(name, "count", spec, n, start_index=s + 1) as st:
                marks["body"] = time.monotonic()
                exit_watch = ExitWatcher(st.server.pid)
                # instance-level wrapper: how long each drained check waits
                setattr(st, "drained", _timed(st.drained, drained_ms))  # noqa: B010
                wave_events: list[JsonObject] = []
                log.listeners.append(lambda e, we=wave_events: we.append(e) if e["kind"] == "wave" else None)
                base = campaign.requests[0]
                for w in range(waves_per_start):
                    await wave_together(campaign, st, "warm_wave", w, [base] * n)
                log.sync()  # the listeners see the last wave's events before they go
                del log.listeners[-1:]
                server = st.server
                first_sample = st.poller.samples[0].t if st.poller.samples else None
                t0_start = st.t0
                marks["exit_body"] = time.monotonic()
            marks["after"] = time.monotonic()
            run_end = log.returned[-1] if log.kinds and log.kinds[-1] == "run_end" else None
            ready_at = next(
                (t for k, t in zip(reversed(log.kinds), reversed(log.returned), strict=True) if k == "server_ready"),
                None,
            )
            # per-wave breakdown on the campaign thread, from when its appends returned (not
            # when the writer thread made them durable): replies done -> records -> checks
            # (incl. drained) -> next send; a repeated wave counts from its last attempt
            reqs = list(captured)
            for k, last_done, first_send, gap in _wave_gaps(reqs):
                gaps.append(gap)
                done_at = t0_start + last_done
                recorded = [log.returned_by_seq[as_int(e["seq"])] for e in reqs if as_int(e["wave"]) == k]
                summarised = [log.returned_by_seq[as_int(e["seq"])] for e in wave_events if as_int(e["wave"]) == k]
                if recorded and summarised:
                    parts["record_ms"].append((max(recorded) - done_at) * 1000.0)
                    parts["checks_ms"].append((summarised[-1] - max(recorded)) * 1000.0)
                    parts["next_wave_ms"].append((t0_start + first_send - summarised[-1]) * 1000.0)
            parts["drained_ms"].extend(drained_ms)
            stdout = str(server.stdout_path)
            listen = watch.first.get(stdout)
            first_send0 = min((as_float(e["t_send"]) for e in reqs if as_int(e["wave"]) == 0), default=None)
            per_start.append(
                _start_figures(
                    marks,
                    server.started,
                    listen,
                    ready_at,
                    first_sample,
                    t0_start + first_send0 if first_send0 is not None else None,
                    exit_watch.exited,
                    run_end,
                    server.stop_info,
                )
            )
            if s == starts // 2 - 1 or (starts == 1 and not judge_mid):
                judge_mid = _time_judge(judge_run, run_dir, log)
    elapsed = time.monotonic() - t_begin
    log.close()
    judge_end = _time_judge(judge_run, run_dir, log)
    from parval.gates.campaign_cost import campaign_overhead, overhead_beyond_starts_pct
    from parval.rundir.events import read_events

    overhead = campaign_overhead(read_events(run_dir / EVENTS), wall_s=elapsed) or {}
    summary = _start_summary(per_start)
    fixed_ms = [summary.get(k) for k in ("start_overhead_ms", "stop_overhead_ms")]
    fixed_s = sum(v for v in fixed_ms if v is not None) / 1000.0 if all(v is not None for v in fixed_ms) else None
    if overhead:
        overhead["per_start_fixed_s"] = rnd(fixed_s, 4)
        overhead["beyond_starts_pct"] = overhead_beyond_starts_pct(overhead, fixed_s)
    controlled = _controlled_growth(run_dir, captured[-1] if captured else {"kind": "request"})
    peak = proc_status_kib("VmHWM")
    return {
        "requests": len([k for k in log.kinds if k == "request"]),
        "n": n,
        "starts": starts,
        "waves_per_start": waves_per_start,
        "service_ms": service_ms,
        "elapsed_s": round(elapsed, 3),
        "gap_ms": _dist(gaps),
        "gap_parts_ms": {k: _dist(v) for k, v in parts.items()},
        "per_start": summary,
        "starts_detail": per_start,
        "overhead": overhead,
        "rss": {
            "peak_mib": rnd(peak / 1024 if peak else None, 1),
            "before_mib": rnd(rss_before / 1024 if rss_before else None, 1),
            "peak_reset": peak_reset,
        },
        "event_log": _append_growth(log),
        "artifacts": _growth(store.durations),
        "controlled": controlled,
        "judge": {"mid": judge_mid, "end": judge_end},
    }


def _timed(
    drained: Callable[[float], Awaitable[DrainedState]], sink: list[float]
) -> Callable[[float], Awaitable[DrainedState]]:
    async def timed_drained(timeout_s: float = 1.5) -> DrainedState:
        t0 = time.monotonic()
        try:
            return await drained(timeout_s)
        finally:
            sink.append((time.monotonic() - t0) * 1000.0)

    return timed_drained


def _dist(values: list[float]) -> Distribution:
    return {
        "median": rnd(median(values)),
        "p95": rnd(percentile(values, 95)),
        "max": rnd(max(values) if values else None),
        "count": len(values),
    }


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1000.0, 3)


def _start_figures(
    marks: dict[str, float],
    spawned: float,
    listen: float | None,
    ready: float | None,
    first_sample: float | None,
    first_send: float | None,
    exited: float | None,
    run_end: float | None,
    stop_info: Mapping[str, object],
) -> StartFigures:
    own_ready = _ms(spawned, listen)
    to_first_send = _ms(marks["call"], first_send)
    own_stop = _ms(marks["exit_body"], exited)
    stop_total = _ms(marks["exit_body"], run_end or marks["after"])
    return {
        "call_to_spawn_ms": _ms(marks["call"], spawned),
        "server_own_ready_ms": own_ready,
        "ready_detect_lag_ms": _ms(listen, ready),
        "ready_to_first_poll_ms": _ms(ready, first_sample),
        "first_poll_to_body_ms": _ms(first_sample, marks["body"]),
        "body_to_first_send_ms": _ms(marks["body"], first_send),
        "start_total_ms": to_first_send,
        "start_overhead_ms": (
            round(to_first_send - own_ready, 3) if to_first_send is not None and own_ready is not None else None
        ),
        "server_own_stop_ms": own_stop,
        "stop_total_ms": stop_total,
        "stop_overhead_ms": (
            round(stop_total - own_stop, 3) if stop_total is not None and own_stop is not None else None
        ),
        "stop_graceful": stop_info.get("graceful"),
    }


def _start_summary(rows: Sequence[Mapping[str, object]]) -> dict[str, float | None]:
    keys = [k for k in (rows[0] if rows else {}) if k.endswith("_ms")]
    out: dict[str, float | None] = {}
    for key in keys:
        vals = [as_float(r[key]) for r in rows if r.get(key) is not None]
        out[key] = rnd(median(vals))
    start = out.get("start_overhead_ms")
    stop = out.get("stop_overhead_ms")
    out["overhead_ms"] = rnd(start + stop) if start is not None and stop is not None else None
    return out


def _growth(durations: list[float]) -> Growth:
    """Median time per call over the first and the last tenth of the calls."""
    k = max(1, len(durations) // 10)
    first = [d * 1000.0 for d in durations[:k]]
    last = [d * 1000.0 for d in durations[-k:]]
    m_first, m_last = median(first), median(last)
    deciles = [
        rnd(median([d * 1000.0 for d in durations[i * k : (i + 1) * k]]), 4)
        for i in range(min(10, len(durations) // k))
    ]
    return {
        "calls": len(durations),
        "first_ms": rnd(m_first, 4),
        "last_ms": rnd(m_last, 4),
        "decile_medians_ms": deciles,
        "first_p95_ms": rnd(percentile(first, 95), 4),
        "last_p95_ms": rnd(percentile(last, 95), 4),
        "ratio": rnd(m_last / m_first if m_first and m_last is not None else None),
    }


def _append_growth(log: TimedEventLog) -> Growth:
    """Like for like: appends of `request` events only (the bulk of a run's events)."""
    out = _growth([d for d, k in zip(log.durations, log.kinds, strict=True) if k == "request"])
    try:
        out["file_mib"] = round(log.path.stat().st_size / (1024 * 1024), 3)
    except OSError:
        out["file_mib"] = None
    out["events"] = len(log.kinds)
    return out


def _controlled_growth(run_dir: Path, sample: JsonObject, rounds: int = 200) -> ControlledGrowth:
    """Size effect alone: the same append/put to the grown run and to an empty one,
    alternating, so that load from other processes hits both alike."""
    import shutil

    probe = run_dir / "bench-probe"
    probe.mkdir()
    shutil.copyfile(run_dir / EVENTS, probe / "grown.jsonl")
    # a request event as recorded, written again as it was (read back, so checked on read)
    event = cast(RequestEvent, {k: v for k, v in sample.items() if k not in ("seq", "t")})
    logs = {"grown": EventLog(probe / "grown.jsonl"), "empty": EventLog(probe / "empty.jsonl")}
    stores = {"grown": ArtifactStore(run_dir / "artifacts"), "empty": ArtifactStore(probe / "artifacts")}
    nonce = os.urandom(8).hex()  # every put writes a new file
    blob = next((p.read_bytes() for p in sorted((run_dir / "artifacts").iterdir())[:1]), b"{}")
    times: dict[str, list[float]] = {f"{what}_{size}": [] for what in ("append", "put") for size in ("grown", "empty")}
    try:
        for i in range(rounds):
            for size in ("grown", "empty") if i % 2 == 0 else ("empty", "grown"):
                t0 = time.perf_counter()
                logs[size].write(event)
                t1 = time.perf_counter()
                stores[size].put(blob + f" probe {nonce} {i} {size}".encode(), "json")
                t2 = time.perf_counter()
                times[f"append_{size}"].append((t1 - t0) * 1000.0)
                times[f"put_{size}"].append((t2 - t1) * 1000.0)
    finally:
        for one in logs.values():
            one.close()

    def measured(what: str) -> Probe:
        grown, empty = median(times[f"{what}_grown"]), median(times[f"{what}_empty"])
        return {
            "grown_ms": rnd(grown, 4),
            "empty_ms": rnd(empty, 4),
            "ratio": rnd(grown / empty if grown is not None and empty else None),
        }

    return {"rounds": rounds, "append": measured("append"), "put": measured("put")}


class _Judge(Protocol):
    """`parval.judge.judge_run` as the bench calls it."""

    def __call__(self, run_dir: Path, *, write: bool = ...) -> object: ...


def _time_judge(judge_run: _Judge, run_dir: Path, log: TimedEventLog) -> JudgeTiming:
    t0 = time.perf_counter()
    try:
        judge_run(run_dir, write=False)
        error = None
    except Exception as exc:  # a judge failure is a figure here, not a crash of the bench
        error = f"{type(exc).__name__}: {exc}"[:300]
    ms = (time.perf_counter() - t0) * 1000.0
    events = len(log.kinds)
    return {
        "ms": round(ms, 2),
        "events": events,
        "ms_per_1k_events": round(ms * 1000.0 / events, 2) if events else None,
        "error": error,
    }
