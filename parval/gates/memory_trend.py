"""Whether memory has stopped growing, judged on series from several starts together: the
per-wave peaks of the repeated-use waves, or the residue after each unload.

A test on the sign of the steps alone (Mann-Kendall) reads an allocator that steps up once
and then stays as growth; a regression after the last change point tells that plateau from
a trend. So each start's series is cut at its last change point (the longest tail that stays
within `JITTER_MIB`), and growth has stopped only where every start has such a plateau of at
least the required length (the declared number of waves, and longer than any stretch
before its last change) and the slope fitted over all the plateaus together (one line per
start, a shared slope) is, at its 95 % upper bound, too small to add `JITTER_MIB` over the
tested range. Growth in steps keeps moving the change point to the end; slow growth stays
inside the jitter band but keeps a slope. A series that wanders by more than the band with no
trend (per-wave peaks that depend on which requests a wave carries, a sampler that catches a
wave's top or misses it) has no plateau to find; it has stopped too where the shared slope
over every point of every start, at its 95 % upper bound, adds less than `JITTER_MIB` over
the tested range, and no start's own slope shows it growing by that much: no growth at that
resolution from the first point. Growth is shown when every start's own slope over
its whole series is above zero at its 95 % lower bound; the declared bound says how much of
it is a FAIL (the caller decides)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

# A change between two points of a series smaller than this is jitter (page-level noise in
# RSS, a sampler that missed the very top of a wave), not growth.
JITTER_MIB = 1.0

# Two-sided 95 % Student t quantiles by degrees of freedom (1-30); 2.0 above 30.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(dof: int) -> float:
    """The 97.5 % quantile of Student's t with `dof` degrees of freedom (dof >= 1)."""
    if dof < 1:
        raise ValueError("a slope interval needs at least one degree of freedom")
    return _T975[dof - 1] if dof <= len(_T975) else 2.0


class StartTrend(TypedDict):
    """One start's series and what it showed."""

    start_index: int
    values_mib: list[float]
    plateau_from: int  # index of the first point of the flat tail (its last change point)
    plateau_points: int
    plateau_needed: int  # min_plateau, or one more than the longest stretch before the last change
    rise_mib: float  # last point minus first
    slope_mib: float | None  # whole-series least-squares slope per step (None under 2 points)
    slope_low_mib: float | None  # its 95 % lower bound (None under 3 points)


class Trend(TypedDict):
    """The starts' series judged together (`stopped`, `grows`) with the figures behind it."""

    unit: str  # what one step of a series is ("wave", "cycle")
    min_plateau: int
    starts: list[StartTrend]
    plateau_slope_mib: float | None  # shared slope over the plateaus
    plateau_slope_high_mib: float | None  # its 95 % upper bound (None: cannot be bounded)
    range_slope_mib: float | None  # shared slope over every point of every start
    range_slope_high_mib: float | None  # its 95 % upper bound
    steps: int  # steps of the longest series: the tested range the slope is projected over
    stopped: bool
    stopped_by: str | None  # "plateau", "range" (no growth from the first point) or None
    grows: bool  # every start's whole-series slope above zero at its 95 % lower bound


def plateau_from(values: Sequence[float]) -> int:
    """Index where the longest tail whose points stay within JITTER_MIB of each other begins
    (the last change point); len(values) for an empty series."""
    start = len(values)
    low, high = math.inf, -math.inf
    for i in range(len(values) - 1, -1, -1):
        low, high = min(low, values[i]), max(high, values[i])
        if high - low >= JITTER_MIB:
            break
        start = i
    return start


def segments(values: Sequence[float]) -> list[int]:
    """The lengths of the series' stretches between its change points, first to last (each
    the longest stretch within JITTER_MIB that ends where the next begins)."""
    out: list[int] = []
    end = len(values)
    while end > 0:
        cut = plateau_from(values[:end])
        out.append(end - cut)
        end = cut
    return out[::-1]


def required_plateau(values: Sequence[float], min_plateau: int) -> int:
    """How long the last stretch must be to show growth has stopped: at least `min_plateau`,
    and longer than every stretch before its last change, the first included (growth in
    steps every few waves ends on a stretch no longer than the ones before it, and a single
    step seen halfway may be the first of such steps)."""
    return max(min_plateau, max(segments(values)[:-1], default=0) + 1)


def _slope(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Least-squares slope per step of one series and its 95 % lower bound."""
    n = len(values)
    if n < 2:
        return None, None
    x = np.arange(n, dtype=float)
    y = np.asarray(values, dtype=float)
    xc = x - x.mean()
    sxx = float(xc @ xc)
    b = float(xc @ (y - y.mean())) / sxx
    if n < 3:
        return b, None
    resid = y - y.mean() - b * xc
    se = math.sqrt(float(resid @ resid) / (n - 2) / sxx)
    return b, b - t975(n - 2) * se


def pooled_slope(series: Sequence[Sequence[float]]) -> tuple[float | None, float | None]:
    """The slope shared by several series (each with its own level) and its 95 % upper
    bound; (None, None) without a point pair, bound None without a residual degree of freedom."""
    sxx = sxy = 0.0
    resid: list[tuple[np.ndarray, np.ndarray]] = []
    points = 0
    for values in series:
        if len(values) < 2:
            points += len(values)
            continue
        x = np.arange(len(values), dtype=float)
        y = np.asarray(values, dtype=float)
        xc, yc = x - x.mean(), y - y.mean()
        sxx += float(xc @ xc)
        sxy += float(xc @ yc)
        resid.append((xc, yc))
        points += len(values)
    if sxx == 0.0:
        return None, None
    b = sxy / sxx
    dof = points - len(series) - 1
    if dof < 1:
        return b, None
    sse = sum(float((yc - b * xc) @ (yc - b * xc)) for xc, yc in resid)
    se = math.sqrt(sse / dof / sxx)
    return b, b + t975(dof) * se


def judge_trend(series: Sequence[tuple[int, Sequence[float]]], min_plateau: int, unit: str) -> Trend:
    """The starts' series (start index, values in order) judged together: stopped when every
    start ends on a plateau of at least `min_plateau` points and the shared slope over the
    plateaus, at its 95 % upper bound, adds less than JITTER_MIB over the longest series."""
    rows: list[StartTrend] = []
    for index, values in series:
        cut = plateau_from(values)
        slope, low = _slope(values)
        rows.append(
            {
                "start_index": index,
                "values_mib": [round(v, 3) for v in values],
                "plateau_from": cut,
                "plateau_points": len(values) - cut,
                "plateau_needed": required_plateau(values, min_plateau),
                "rise_mib": round(values[-1] - values[0], 3) if values else 0.0,
                "slope_mib": None if slope is None else round(slope, 4),
                "slope_low_mib": None if low is None else round(low, 4),
            }
        )
    steps = max((len(v) for _, v in series), default=1) - 1
    b, high = pooled_slope([list(v)[plateau_from(v) :] for _, v in series])
    flat = bool(rows) and all(r["plateau_points"] >= r["plateau_needed"] for r in rows)
    on_plateau = flat and _within_jitter(high, steps)
    whole, whole_high = pooled_slope([list(v) for _, v in series])
    # Every start needs the declared number of points for the slope over them to count.
    # ... and none may be shown to grow by JITTER_MIB over its own range (pooling many starts
    # must not dilute one that leaks).
    level = (
        bool(rows)
        and all(len(r["values_mib"]) >= min_plateau and not _shown_to_grow(r) for r in rows)
        and _within_jitter(whole_high, steps)
    )
    stopped_by = "plateau" if on_plateau else "range" if level else None
    grows = bool(rows) and all(r["slope_low_mib"] is not None and r["slope_low_mib"] > 0 for r in rows)
    return {
        "unit": unit,
        "min_plateau": min_plateau,
        "starts": rows,
        "plateau_slope_mib": None if b is None else round(b, 4),
        "plateau_slope_high_mib": None if high is None else round(high, 4),
        "range_slope_mib": None if whole is None else round(whole, 4),
        "range_slope_high_mib": None if whole_high is None else round(whole_high, 4),
        "steps": steps,
        "stopped": stopped_by is not None,
        "stopped_by": stopped_by,
        "grows": grows,
    }


def _shown_to_grow(r: StartTrend) -> bool:
    """A start whose own slope, at its 95 % lower bound, adds JITTER_MIB over its series."""
    low = r["slope_low_mib"]
    return low is not None and low * (len(r["values_mib"]) - 1) >= JITTER_MIB


def _within_jitter(high: float | None, steps: int) -> bool:
    """A slope whose 95 % upper bound adds less than JITTER_MIB over `steps`."""
    return high is not None and max(high, 0.0) * steps < JITTER_MIB


def _projected(slope: float, high: float | None, steps: int, unit: str) -> str:
    """A slope with its upper bound projected over the tested range, in words."""
    if high is None:
        return f"{slope:+.2f} MiB/{unit} (no interval: too few points)"
    under = "under" if _within_jitter(high, steps) else "not under"
    return (
        f"{slope:+.2f} MiB/{unit} (95 % upper {high:+.2f}: {max(high, 0.0) * steps:+.1f} MiB over {steps} {unit}s, "
        f"{under} {JITTER_MIB:g} MiB)"
    )


# Past this many starts (a soak adds one per few minutes) the per-start figures are given as
# their range: the evidence keeps each one.
LISTED_STARTS = 6


def _rises(rows: Sequence[StartTrend]) -> str:
    rises = [r["rise_mib"] for r in rows]
    if len(rises) <= LISTED_STARTS:
        return ", ".join(f"{v:+.1f}" for v in rises) + " MiB"
    return f"{min(rises):+.1f} … {max(rises):+.1f} MiB in {len(rises)} starts"


def trend_text(t: Trend, what: str) -> str:
    """The test and its numbers, in words."""
    rows = t["starts"]
    unit = t["unit"]
    flat = sum(r["plateau_points"] >= r["plateau_needed"] for r in rows)
    short = [r for r in rows if r["plateau_points"] < r["plateau_needed"]]
    listed = rows if len(rows) <= LISTED_STARTS else short[:LISTED_STARTS]
    lengths = ("" if listed is rows else f"{len(short)} short, first {len(listed)}: ") + ", ".join(
        f"{r['plateau_points']} of {len(r['values_mib'])}"
        + (
            f" (needs {r['plateau_needed']}: longer than the stretch before a change)"
            if r["plateau_needed"] > t["min_plateau"]
            else ""
        )
        for r in listed
    )
    slope = t["plateau_slope_mib"]
    fitted = (
        "no slope can be fitted over them"
        if slope is None
        else f"shared slope over them {_projected(slope, t['plateau_slope_high_mib'], t['steps'], unit)}"
    )
    rises = _rises(rows)
    plateaus = (
        f"{flat} of {len(rows)} starts end flat (within {JITTER_MIB:g} MiB) for at least "
        f"{t['min_plateau']} {unit}s (flat tail {lengths} {unit}s); {fitted}"
    )
    whole = t["range_slope_mib"]
    if t["stopped_by"] == "range" and whole is not None:
        # The plateaus did not show it; the slope over every point did: say that first.
        level = f"no growth from the first {unit}: shared slope over every {unit} of every start " + _projected(
            whole, t["range_slope_high_mib"], t["steps"], unit
        )
        return f"{what}: {level}; rise over the whole range {rises}"
    return f"{what}: {plateaus}; rise over the whole range {rises}"


def growth_text(t: Trend, what: str) -> str:
    """Each start's whole-series slope with its lower bound, in words."""
    parts = [
        f"start {r['start_index']} {r['slope_mib']:+.2f} MiB/{t['unit']} (95 % lower {r['slope_low_mib']:+.2f})"
        if r["slope_mib"] is not None and r["slope_low_mib"] is not None
        else f"start {r['start_index']} too few {t['unit']}s for a slope interval"
        for r in t["starts"]
    ]
    if len(parts) > LISTED_STARTS:
        rising = sum(1 for r in t["starts"] if (r["slope_low_mib"] or 0.0) > 0)
        steepest = sorted(t["starts"], key=lambda r: -(r["slope_mib"] or 0.0))[:LISTED_STARTS]
        return (
            f"{what} slope over the whole range: {rising} of {len(parts)} starts rise at their 95 % lower bound; "
            "steepest "
            + "; ".join(
                f"start {r['start_index']} {r['slope_mib']:+.2f} MiB/{t['unit']}"
                for r in steepest
                if r["slope_mib"] is not None
            )
        )
    return f"{what} slope over the whole range: " + "; ".join(parts)
