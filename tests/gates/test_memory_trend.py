"""memory_trend.judge_trend on series that wander with no trend (the real audiocpp_server's
per-wave peaks at two slots: they depend on which requests a wave carries, and the 20 ms
sampler catches a wave's top or misses it), and on the growth such wandering must not hide."""

from __future__ import annotations

import random

from parval.gates.memory_trend import judge_trend, trend_text

# Host RSS per-wave peaks (MiB) of the three count-2 starts of one run of the real server
# with plans/examples/silero-vad.yaml: a pattern that repeats with the waves' requests, and
# a step of about a MiB late in two starts; no start's last stretch is long enough to be a
# plateau, and no start shows growth over its range.
REAL = [
    [15.074, 15.617, 14.715, 14.715, 15.074, 15.074, 14.73, 14.73, 14.445, 14.73, 16.098, 16.098],
    [14.836, 14.836, 14.191, 14.492, 14.852, 15.395, 14.5, 14.5, 14.215, 14.5, 14.859, 14.859],
    [14.93, 14.93, 14.285, 14.57, 14.93, 14.93, 14.57, 14.57, 14.285, 14.57, 14.93, 15.613],
]


def judged(series: list[list[float]], k: int = 3) -> dict[str, object]:
    return dict(judge_trend(list(enumerate(series, start=1)), k, "wave"))


def test_a_series_that_wanders_with_no_trend_has_stopped_from_its_first_wave() -> None:
    t = judge_trend(list(enumerate(REAL, start=1)), 3, "wave")
    assert t["stopped"] and t["stopped_by"] == "range", t
    text = trend_text(t, "host_rss per-wave peak")
    assert "no growth from the first wave: shared slope over every wave of every start +0.02 MiB/wave" in text
    assert "(95 % upper +0.06: +0.7 MiB over 11 waves, under 1 MiB)" in text


def test_growth_under_the_wandering_is_not_hidden() -> None:
    # Each growth shape added to the same wandering series: a MiB over the tested range
    # (slow), steps of 3 MiB every fourth wave, a late step that stays, and growth in one
    # start only.
    slow = [[v + 0.1 * i for i, v in enumerate(s)] for s in REAL]
    steps = [[v + 3.0 * (i // 4) for i, v in enumerate(s)] for s in REAL]
    late = [[v + (4.0 if i >= 9 else 0.0) for i, v in enumerate(s)] for s in REAL]
    one = [REAL[0], REAL[1], [v + 0.3 * i for i, v in enumerate(REAL[2])]]
    for name, series in (("slow", slow), ("steps", steps), ("late", late), ("one start", one)):
        assert not judged(series)["stopped"], name


def test_many_starts_do_not_dilute_one_that_grows() -> None:
    # A soak adds a start every few minutes: one start of forty rising 0.15 MiB a wave (+6 MiB
    # over its range) is not outweighed by the others' flat series.
    rng = random.Random(7)
    flat = [[15.0 + rng.uniform(-0.4, 0.4) for _ in range(42)] for _ in range(39)]
    assert judged(flat)["stopped"]
    growing = [15.0 + 0.15 * i + rng.uniform(-0.4, 0.4) for i in range(42)]
    assert not judged([*flat, growing])["stopped"]
    t = judge_trend(list(enumerate([*flat, growing], start=1)), 3, "wave")
    text = trend_text(t, "host_rss per-wave peak")
    assert "in 40 starts" in text and len(text) < 600, text


def test_too_few_waves_in_a_start_is_never_stopped_by_the_slope() -> None:
    # The slope over a series shorter than the declared window counts for nothing.
    short = [s[:2] for s in REAL]
    assert not judged(short)["stopped"]
