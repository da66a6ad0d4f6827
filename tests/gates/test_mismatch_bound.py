"""The bound beside every output verdict: how many outputs were produced while another
request of the model was executing, how many differed, and the exact binomial 95 % upper
bound on the per-output mismatch rate. Recounted here from events.jsonl, independently of
the judge's own sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from parval.rundir.events import read_events
from parval.rundir.mismatch_bound import (
    bound,
    count_bound,
    overlapped_events,
    percent,
    summed,
    summed_per_count,
    upper_bound,
    words,
)

COUNT_PHASES = ("cold_wave", "warm_wave", "mixed_wave", "reload_wave", "serial_reuse")


def test_zero_in_n_is_about_three_over_n() -> None:
    for n in (100, 1000, 10_000):
        assert upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n))
        assert 2.9 / n < upper_bound(0, n) < 3.0 / n
    assert upper_bound(0, 0) == 1.0


def test_the_bound_is_the_exact_binomial_one() -> None:
    """At the bound, seeing k or fewer mismatches in n has probability 5 %."""
    for k, n in ((1, 100), (3, 1000), (10, 400)):
        p = upper_bound(k, n)
        cdf = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
        assert cdf == pytest.approx(0.05, abs=1e-6)
    assert upper_bound(5, 5) == 1.0


def test_a_shown_bound_is_never_lower_than_the_bound() -> None:
    for rate in (0.000878, 0.02951, 0.0874e-2, 0.5, 1.0):
        shown = float(percent(rate).split()[0]) / 100
        assert shown >= rate - 1e-12
        assert shown <= rate * 1.1 + 1e-12


def test_words() -> None:
    assert words(bound(102, 0)) == "102 overlapped output(s), 0 differed: mismatch rate < 2.9 % (95 %)"
    assert words(bound(3412, 0)) == "3,412 overlapped output(s), 0 differed: mismatch rate < 0.088 % (95 %)"
    assert words(bound(0, 0)) == "no overlapped outputs: no bound on the mismatch rate"


def test_overlap_is_the_client_in_flight_window_at_two_or_more_slots() -> None:
    def req(run: str, name: str, t0: float, t1: float, attempt: int = 1) -> dict[str, Any]:
        return {"run": run, "attempt": attempt, "phase": "w", "wave": 0, "req": name, "t_send": t0, "t_done": t1}

    reqs = [
        req("a", "r0", 0.0, 1.0),
        req("a", "r1", 0.5, 0.7),  # inside r0
        req("a", "r2", 1.0, 2.0),  # starts as r0 ends: apart
        req("a", "r3", 3.0, 4.0),
        req("a", "r4", 3.9, 5.0, attempt=2),  # another attempt (another process): apart
        req("one", "r0", 0.0, 1.0),  # one slot: queued, never executing together
        req("one", "r1", 0.5, 1.5),
    ]
    found = overlapped_events(reqs, {"a": 2, "one": 1})
    assert sorted(str(e["req"]) for e in reqs if id(e) in found) == ["r0", "r1"]
    assert all(e["run"] == "a" for e in reqs if id(e) in found)
    # the same request sent twice in one wave: each copy counts
    twice = [req("a", "base", 0.0, 1.0), req("a", "base", 0.1, 0.9)]
    assert len(overlapped_events(twice, {"a": 2})) == 2


def test_a_count_sums_over_runs() -> None:
    def ev(overlapped: int, differed: int) -> dict[str, Any]:
        b = bound(overlapped, differed)
        return {
            "model_checks": {
                "per_count": {"2": {"assertions": [{"id": "Q5", "evidence": {"bound": b}}]}, "1": {"assertions": []}}
            }
        }

    total = summed_per_count([ev(100, 0), ev(200, 1)])
    assert total == {"2": bound(300, 1)}
    assert summed([]) is None
    assert count_bound([{"id": "M2.exact", "evidence": {"bound": bound(5, 0)}}]) == bound(5, 0)


# -- recounted from the events of the checked-in clean runs ---------------------------------


def recount(run_dir: Path, n: int) -> int:
    """Outputs of count n's standing starts whose client window overlapped another request of
    the same start's attempt: a plain pairwise count over events.jsonl."""
    events = read_events(run_dir / "events.jsonl")
    starts = {e["run"]: e for e in events if e["kind"] == "run_start" and e.get("role") == "count"}
    standing = {}
    for e in events:
        if e["kind"] == "run_end" and e["run"] in starts:
            standing[e["run"]] = e["attempt"]
    reqs = [
        e
        for e in events
        if e["kind"] == "request"
        and e["run"] in standing
        and starts[e["run"]]["count"] == n
        and e["attempt"] == standing[e["run"]]
    ]
    total = 0
    for e in reqs:
        if e["phase"] not in COUNT_PHASES or (e.get("reply") or {}).get("outcome") != "ok" or n < 2:
            continue
        if not (e.get("output") or {}).get("valid") or not e.get("ref"):
            continue
        if any(
            o is not e and o["run"] == e["run"] and o["t_send"] < e["t_done"] and e["t_send"] < o["t_done"]
            for o in reqs
        ):
            total += 1
    return total


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.attack.clean_runs import extract

    return extract(tmp_path_factory.mktemp("clean"))


def test_the_judge_counts_what_the_events_show(clean: dict[str, Path]) -> None:
    from parval.judge import judge_run

    run_dir = clean["stateless"]
    ev = judge_run(run_dir, write=False)
    per_count = ev["model_checks"]["per_count"]
    for key, checks in per_count.items():
        n = int(key)
        m2 = next(a for a in checks["assertions"] if a["id"] == "M2.exact")
        q5 = next(a for a in checks["assertions"] if a["id"] == "Q5")
        expected = recount(run_dir, n)
        assert m2["evidence"]["bound"]["overlapped"] == expected
        assert q5["evidence"]["bound"] == m2["evidence"]["bound"]
        if n >= 2:
            assert expected > 0
            assert m2["status"] == "PASS" and f"{expected} overlapped output(s), 0 differed" in m2["reason"]
        else:
            assert expected == 0
    json.dumps(ev)  # the bound is plain JSON
