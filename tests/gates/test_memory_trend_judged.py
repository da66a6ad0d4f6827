"""memory_trend figure by figure: t quantiles, change points and the plateau a start needs,
per-start and shared slopes with their 95 % bounds, when growth has stopped (by plateau or by
range, exactly at the jitter bound) or is shown, and the words of trend_text and growth_text."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from parval.gates import memory_trend as mt
from parval.gates.memory_trend import Trend, growth_text, judge_trend, trend_text


def judged(series: Sequence[Sequence[float]], k: int = 3, unit: str = "wave") -> Trend:
    return judge_trend(list(enumerate(series, start=1)), k, unit)


@pytest.mark.parametrize(("dof", "q"), [(1, 12.706), (2, 4.303), (29, 2.045), (30, 2.042), (31, 2.0), (400, 2.0)])
def test_t_quantile_by_degrees_of_freedom(dof: int, q: float) -> None:
    assert mt.t975(dof) == q


@pytest.mark.parametrize("dof", [0, -1])
def test_a_slope_interval_needs_a_degree_of_freedom(dof: int) -> None:
    with pytest.raises(ValueError, match="^a slope interval needs at least one degree of freedom$"):
        mt.t975(dof)


@pytest.mark.parametrize(
    ("values", "cut"),
    [
        ([], 0),
        ([5.0], 0),
        ([5.0, 5.999], 0),  # under a MiB apart: one plateau
        ([5.0, 6.0], 1),  # exactly a MiB is a change
        ([1.0, 5.0, 5.5, 5.9], 1),
        ([1.0, 5.0, 5.5, 6.0], 2),
        ([3.0, 3.0, 9.0], 2),
    ],
)
def test_the_last_change_point(values: list[float], cut: int) -> None:
    assert mt.plateau_from(values) == cut


@pytest.mark.parametrize(
    ("values", "lengths"),
    [([], []), ([7.0], [1]), ([0.0, 0.0, 5.0, 5.0, 5.0, 10.0], [2, 3, 1]), ([1.0, 1.5, 1.9], [3])],
)
def test_stretches_between_change_points(values: list[float], lengths: list[int]) -> None:
    assert mt.segments(values) == lengths


@pytest.mark.parametrize(
    ("values", "k", "needed"),
    [
        ([5.0, 5.0, 5.0], 3, 3),  # one stretch: the declared length
        ([], 3, 3),
        ([], 0, 1),
        ([0.0, 0.0, 5.0, 5.0, 5.0, 10.0], 2, 4),  # longer than the 3 before the last change
        ([0.0, 0.0, 0.0, 5.0, 5.0], 1, 4),  # the first stretch counts too
        ([0.0, 5.0, 5.0, 5.0], 3, 3),
    ],
)
def test_the_plateau_a_start_needs(values: list[float], k: int, needed: int) -> None:
    assert mt.required_plateau(values, k) == needed


def test_one_series_slope_and_its_lower_bound() -> None:
    assert mt._slope([]) == (None, None)
    assert mt._slope([4.0]) == (None, None)
    assert mt._slope([1.0, 3.0]) == (2.0, None)  # no residual degree of freedom
    assert mt._slope([0.0, 1.0, 2.0]) == (1.0, 1.0)
    # slope 0.5, residuals (-0.5, 1, -0.5): se sqrt(1.5 / 1 / 2), t(1) = 12.706
    b, low = mt._slope([0.0, 2.0, 1.0])
    assert b == pytest.approx(0.5)
    assert low == pytest.approx(0.5 - 12.706 * 0.75**0.5)


@pytest.mark.parametrize(
    ("series", "slope", "high"),
    [
        ([], None, None),
        ([[5.0]], None, None),
        ([[5.0, 5.0, 5.0]], 0.0, 0.0),
        ([[1.0, 3.0]], 2.0, None),  # 2 points, one level, one slope: no degree of freedom left
        ([[0.0, 1.0], [5.0, 6.0]], 1.0, 1.0),
        ([[0.0, 2.0, 1.0]], 0.5, 0.5 + 12.706 * 0.75**0.5),
        # a one-point series adds a point and a level: the same degrees of freedom
        ([[0.0, 2.0, 1.0], [7.0]], 0.5, 0.5 + 12.706 * 0.75**0.5),
        ([[7.0], [0.0, 2.0, 1.0]], 0.5, 0.5 + 12.706 * 0.75**0.5),
        # sse 3 over 6 - 2 - 1 = 3 degrees of freedom, sxx 4: se 0.5, t(3) = 3.182
        ([[0.0, 2.0, 1.0], [10.0, 12.0, 11.0]], 0.5, 0.5 + 3.182 * 0.5),
    ],
)
def test_the_shared_slope_and_its_upper_bound(
    series: list[list[float]], slope: float | None, high: float | None
) -> None:
    b, h = mt.pooled_slope(series)
    assert b == (None if slope is None else pytest.approx(slope))
    assert h == (None if high is None else pytest.approx(high))


def test_judged_figures_of_two_starts_stopped_by_range() -> None:
    """Start 2 steps up once and stays: both end flat, but the shared slope over the plateaus
    projects past a MiB over five waves; the slope over every point does not."""
    t = judged([[10.00049, 10.5, 10.0, 10.5], [20.0, 21.0, 20.0, 20.0, 20.0, 20.0]])
    assert t == {
        "unit": "wave",
        "min_plateau": 3,
        "starts": [
            {
                "start_index": 1,
                "values_mib": [10.0, 10.5, 10.0, 10.5],
                "plateau_from": 0,
                "plateau_points": 4,
                "plateau_needed": 3,
                "rise_mib": 0.5,
                "slope_mib": 0.0999,
                "slope_low_mib": -0.5085,
            },
            {
                "start_index": 2,
                "values_mib": [20.0, 21.0, 20.0, 20.0, 20.0, 20.0],
                "plateau_from": 2,
                "plateau_points": 4,
                "plateau_needed": 3,
                "rise_mib": 0.0,
                "slope_mib": -0.0857,
                "slope_low_mib": -0.3643,
            },
        ],
        "plateau_slope_mib": 0.0499,
        "plateau_slope_high_mib": 0.2223,
        "range_slope_mib": -0.0445,
        "range_slope_high_mib": 0.1476,
        "steps": 5,
        "stopped": True,
        "stopped_by": "range",
        "grows": False,
    }
    assert trend_text(t, "peak") == (
        "peak: no growth from the first wave: shared slope over every wave of every start -0.04 MiB/wave "
        "(95 % upper +0.15: +0.7 MiB over 5 waves, under 1 MiB); rise over the whole range +0.5, +0.0 MiB"
    )


def test_figures_are_rounded_for_the_evidence() -> None:
    # slope 0.25026, lower bound 0.24923: MiB to three places, slopes to four
    row = judged([[1.00049, 1.25061, 1.50101]])["starts"][0]
    assert row["values_mib"] == [1.0, 1.251, 1.501]
    assert row["rise_mib"] == 0.501
    assert (row["slope_mib"], row["slope_low_mib"]) == (0.2503, 0.2492)


def test_two_flat_starts_stop_on_their_plateaus() -> None:
    t = judged([[10.0, 10.0, 10.0, 10.0], [20.0, 20.5, 20.0, 20.5]])
    assert (t["stopped"], t["stopped_by"], t["grows"], t["steps"]) == (True, "plateau", False, 3)
    assert (t["plateau_slope_mib"], t["plateau_slope_high_mib"]) == (0.05, 0.2225)
    assert (t["range_slope_mib"], t["range_slope_high_mib"]) == (0.05, 0.2225)
    assert trend_text(t, "peak") == (
        "peak: 2 of 2 starts end flat (within 1 MiB) for at least 3 waves (flat tail 4 of 4, 4 of 4 waves); "
        "shared slope over them +0.05 MiB/wave (95 % upper +0.22: +0.7 MiB over 3 waves, under 1 MiB); "
        "rise over the whole range +0.0, +0.5 MiB"
    )
    assert growth_text(t, "peak") == (
        "peak slope over the whole range: start 1 +0.00 MiB/wave (95 % lower +0.00); "
        "start 2 +0.10 MiB/wave (95 % lower -0.51)"
    )


@pytest.mark.parametrize("series", [[], [[]]])
def test_no_points_never_stopped_never_growing(series: list[list[float]]) -> None:
    t = judged(series)
    assert (t["stopped"], t["stopped_by"], t["grows"]) == (False, None, False)
    assert (t["plateau_slope_mib"], t["range_slope_mib"]) == (None, None)


def test_a_start_with_no_points_has_nothing_to_show() -> None:
    row = judged([[]])["starts"][0]
    assert row == {
        "start_index": 1,
        "values_mib": [],
        "plateau_from": 0,
        "plateau_points": 0,
        "plateau_needed": 3,
        "rise_mib": 0.0,
        "slope_mib": None,
        "slope_low_mib": None,
    }
    assert judged([])["steps"] == 0


def test_exactly_a_mib_over_the_tested_range_is_not_stopped() -> None:
    """A perfect line of 0.25 MiB a wave over four waves adds exactly the jitter bound: not
    stopped (on its plateau or over its range); 0.2 a wave (0.8 MiB) is."""
    t = judged([[0.0, 0.25, 0.5, 0.75, 1.0]])
    assert (t["stopped"], t["stopped_by"]) == (False, None)
    assert (t["plateau_slope_high_mib"], t["range_slope_high_mib"], t["steps"]) == (0.25, 0.25, 4)
    assert trend_text(t, "peak") == (
        "peak: 1 of 1 starts end flat (within 1 MiB) for at least 3 waves (flat tail 4 of 5 waves); "
        "shared slope over them +0.25 MiB/wave (95 % upper +0.25: +1.0 MiB over 4 waves, not under 1 MiB); "
        "rise over the whole range +1.0 MiB"
    )
    t = judged([[0.0, 0.2, 0.4, 0.6, 0.8]])
    assert (t["stopped"], t["stopped_by"]) == (True, "plateau")
    assert trend_text(t, "peak") == (
        "peak: 1 of 1 starts end flat (within 1 MiB) for at least 3 waves (flat tail 5 of 5 waves); "
        "shared slope over them +0.20 MiB/wave (95 % upper +0.20: +0.8 MiB over 4 waves, under 1 MiB); "
        "rise over the whole range +0.8 MiB"
    )


def test_a_falling_series_has_stopped_growing() -> None:
    t = judged([[4.0, 3.7, 3.4, 3.1]])
    assert (t["stopped"], t["stopped_by"], t["grows"]) == (True, "plateau", False)
    assert trend_text(t, "peak") == (
        "peak: 1 of 1 starts end flat (within 1 MiB) for at least 3 waves (flat tail 4 of 4 waves); "
        "shared slope over them -0.30 MiB/wave (95 % upper -0.30: +0.0 MiB over 3 waves, under 1 MiB); "
        "rise over the whole range -0.9 MiB"
    )


# Ten starts that swing 1.2 MiB and back: no plateau, no trend (shared upper bound 0.33 MiB a
# wave: 0.7 MiB over two waves).
SWINGING = [[0.0, 1.2, 0.0]] * 10


def test_wandering_with_no_trend_is_stopped_by_range_only_with_the_declared_points() -> None:
    t = judged(SWINGING, k=3)
    assert (t["stopped"], t["stopped_by"]) == (True, "range")
    assert (t["range_slope_mib"], t["range_slope_high_mib"], t["steps"]) == (0.0, 0.3327, 2)
    assert all((r["plateau_points"], r["plateau_needed"]) == (1, 3) for r in t["starts"])
    # three points per start where four are declared: the slope over them counts for nothing
    t = judged(SWINGING, k=4)
    assert (t["stopped"], t["stopped_by"]) == (False, None)


@pytest.mark.parametrize(("rate", "stopped_by"), [(0.25, None), (0.2, "range")])
def test_one_start_shown_to_grow_is_not_diluted_by_many(rate: float, stopped_by: str | None) -> None:
    """Twenty swinging starts and one perfect line: 0.25 MiB a wave over four waves is a MiB
    at its lower bound (shown to grow: not stopped); 0.2 a wave is 0.8 MiB (stopped)."""
    line = [rate * i for i in range(5)]
    t = judged([*[[0.0, 1.2, 0.0, 1.2, 0.0]] * 20, line])
    assert t["starts"][-1]["slope_low_mib"] == rate
    assert t["range_slope_high_mib"] is not None and t["range_slope_high_mib"] * t["steps"] < 1.0
    assert t["stopped_by"] == stopped_by


@pytest.mark.parametrize(
    ("series", "grows"),
    [
        ([[0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.5, 3.0, 4.5, 6.0]], True),
        ([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0]], False),  # a flat start: lower bound exactly 0
        ([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 9.0]], False),  # two points: no lower bound
        ([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 4.0, 3.0]], False),
    ],
)
def test_growth_is_shown_only_when_every_start_rises_at_its_lower_bound(series: list[list[float]], grows: bool) -> None:
    assert judged(series)["grows"] is grows


def test_steady_growth_in_words() -> None:
    t = judged([[0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.5, 3.0, 4.5, 6.0]])
    assert (t["stopped"], t["grows"], t["plateau_slope_mib"], t["plateau_slope_high_mib"]) == (False, True, None, None)
    assert (t["range_slope_mib"], t["range_slope_high_mib"]) == (1.25, 1.4735)
    assert trend_text(t, "peak") == (
        "peak: 0 of 2 starts end flat (within 1 MiB) for at least 3 waves (flat tail 1 of 5, 1 of 5 waves); "
        "no slope can be fitted over them; rise over the whole range +4.0, +6.0 MiB"
    )
    assert growth_text(t, "peak") == (
        "peak slope over the whole range: start 1 +1.00 MiB/wave (95 % lower +1.00); "
        "start 2 +1.50 MiB/wave (95 % lower +1.50)"
    )


def test_a_plateau_too_short_for_the_stretch_before_it_is_named() -> None:
    t = judged([[0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0]], k=2, unit="cycle")
    assert t["starts"][0]["plateau_needed"] == 5 and t["stopped"] is False
    assert trend_text(t, "residue") == (
        "residue: 0 of 1 starts end flat (within 1 MiB) for at least 2 cycles (flat tail 3 of 7 "
        "(needs 5: longer than the stretch before a change) cycles); shared slope over them +0.00 MiB/cycle "
        "(95 % upper +0.00: +0.0 MiB over 6 cycles, under 1 MiB); rise over the whole range +5.0 MiB"
    )


def test_a_slope_without_an_interval_in_words() -> None:
    t = judged([[5.0, 5.0]], k=2, unit="cycle")
    assert (t["plateau_slope_mib"], t["plateau_slope_high_mib"], t["stopped"]) == (0.0, None, False)
    assert trend_text(t, "residue") == (
        "residue: 1 of 1 starts end flat (within 1 MiB) for at least 2 cycles (flat tail 2 of 2 cycles); "
        "shared slope over them +0.00 MiB/cycle (no interval: too few points); rise over the whole range +0.0 MiB"
    )
    assert growth_text(t, "residue") == (
        "residue slope over the whole range: start 1 too few cycles for a slope interval"
    )


def test_six_starts_are_listed_one_by_one() -> None:
    series = [[float(i), float(i)] for i in range(6)]
    series[0] = [0.0, 2.0]
    t = judged(series, k=2)
    text = trend_text(t, "peak")
    assert "(flat tail 1 of 2, 2 of 2, 2 of 2, 2 of 2, 2 of 2, 2 of 2 waves)" in text
    assert text.endswith("rise over the whole range +2.0, +0.0, +0.0, +0.0, +0.0, +0.0 MiB")
    assert growth_text(t, "peak") == "peak slope over the whole range: " + "; ".join(
        f"start {i} too few waves for a slope interval" for i in range(1, 7)
    )


def test_past_six_starts_only_the_short_plateaus_and_the_range_of_rises_are_given() -> None:
    # eight starts: seven short (a step of 3 MiB at the end), one flat for exactly the two waves it needs
    short = [[0.0, 0.0, float(3 * i)] for i in range(1, 8)]
    t = judged([*short, [1.0, 1.0]], k=2)
    text = trend_text(t, "peak")
    assert "(flat tail 7 short, first 6: 1 of 3 (needs 3: longer than the stretch before a change), " in text
    assert text.count("1 of 3") == 6 and "2 of 2" not in text
    assert text.endswith("rise over the whole range +0.0 … +21.0 MiB in 8 starts")
    assert text.startswith("peak: 1 of 8 starts end flat (within 1 MiB) for at least 2 waves")


def test_past_six_starts_growth_names_the_steepest_six() -> None:
    rates = [0.5, 3.0, 1.0, 0.0, 2.0, 4.0, -1.0]
    series: list[list[float]] = [[r * i for i in range(4)] for r in rates]
    series.append([9.0])  # one point: no slope at all
    t = judged(series)
    assert growth_text(t, "peak") == (
        "peak slope over the whole range: 5 of 8 starts rise at their 95 % lower bound; steepest "
        "start 6 +4.00 MiB/wave; start 2 +3.00 MiB/wave; start 5 +2.00 MiB/wave; start 3 +1.00 MiB/wave; "
        "start 1 +0.50 MiB/wave; start 4 +0.00 MiB/wave"
    )
    # with the point-only start among the steepest six, it is left out of the words
    t = judged([[0.5 * i for i in range(4)], [2.0 * i for i in range(4)], *[[5.0]] * 6])
    assert growth_text(t, "peak") == (
        "peak slope over the whole range: 2 of 8 starts rise at their 95 % lower bound; steepest "
        "start 2 +2.00 MiB/wave; start 1 +0.50 MiB/wave"
    )
