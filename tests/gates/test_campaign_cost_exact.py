"""The campaign overhead figure exactly: what counts as the server's time, the rounding,
and the sentence the report prints (parval/gates/campaign_cost.py)."""

from __future__ import annotations

from parval.gates.campaign_cost import campaign_overhead, describe_overhead, overhead_beyond_starts_pct


def test_the_overhead_figure_field_by_field() -> None:
    events = [
        {"kind": "server_ready", "ready_s": 0.5},
        {"kind": "server_ready"},  # no readiness recorded: a start, no time
        {"kind": "request", "t_send": 1, "t_done": 1.25},
        {"kind": "request", "t_send": 2.0, "t_done": 1.5},  # clock went back: no negative time
        {"kind": "request", "t_send": None, "t_done": 1.5},  # never sent: not a request served
        {"kind": "request", "t_send": 1.0},
        {"kind": "wave_repeat", "repeat": True},
        {"kind": "wave_repeat"},
        {"kind": "wave", "t_send": 0.0, "t_done": 5.0, "ready_s": 9.0, "repeat": True, "elapsed_s": 1.0},
        {"kind": "campaign_end", "elapsed_s": 2.2222},
    ]
    assert campaign_overhead(events) == {
        "wall_s": 2.222,
        "server_s": 0.75,
        "service_s": 0.25,
        "readiness_s": 0.5,
        "starts": 2,
        "requests": 2,
        "repeated_waves": 1,
        "overhead_s": 1.472,
        "ratio": 2.96,
        "per_start_s": 0.736,
    }
    # a given wall time replaces the campaign's; with none and no end there is no figure
    assert campaign_overhead(events, wall_s=0.5)["overhead_s"] == 0.0  # type: ignore[index]
    assert campaign_overhead(events[:-1], wall_s=1.0)["wall_s"] == 1.0  # type: ignore[index]
    assert campaign_overhead(events[:-1]) is None
    idle = campaign_overhead([{"kind": "campaign_end"}])
    assert idle == {
        "wall_s": 0.0,
        "server_s": 0.0,
        "service_s": 0.0,
        "readiness_s": 0.0,
        "starts": 0,
        "requests": 0,
        "repeated_waves": 0,
        "overhead_s": 0.0,
        "ratio": None,
        "per_start_s": None,
    }
    assert campaign_overhead([{"kind": "campaign_end", "elapsed_s": 1.23456}]) is not None
    assert campaign_overhead([{"kind": "campaign_end", "elapsed_s": 1.23456}])["wall_s"] == 1.235  # type: ignore[index]


def test_the_sentence_and_the_share_beyond_each_starts_fixed_cost() -> None:
    o = campaign_overhead(
        [
            {"kind": "server_ready", "ready_s": 1.0},
            {"kind": "request", "t_send": 0.0, "t_done": 3.0},
            {"kind": "campaign_end", "elapsed_s": 10.0},
        ]
    )
    assert o is not None
    assert describe_overhead(o) == (
        "campaign wall 10.0 s for 1 requests over 1 starts; server time 4.0 s (service 3.0 s + readiness "
        "1.0 s); overhead 6.0 s (6.0 s per start), wall/server 2.5x"
    )
    assert describe_overhead({**o, "ratio": None}).endswith("wall/server n/a")
    assert describe_overhead(None) == "campaign overhead: not available (the campaign did not end)"
    assert describe_overhead({}) == "campaign overhead: not available (the campaign did not end)"
    assert overhead_beyond_starts_pct(o, 1.5) == 112.5  # (6 - 1 x 1.5) / 4
    assert overhead_beyond_starts_pct({"overhead_s": 1.0, "starts": 3, "server_s": 3.0}, 0.1) == 23.33
    assert overhead_beyond_starts_pct({"overhead_s": 1.0, "starts": 1, "server_s": 0.0}, 0.1) is None
    assert overhead_beyond_starts_pct({"overhead_s": 1.0, "starts": 1}, 0.1) is None
