"""The demo's report states, at every count, how many outputs were produced beside another
request, how many differed and the bound on the mismatch rate, and those numbers are what
events.jsonl shows (recounted here pairwise, apart from the judge's sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parval.rundir.mismatch_bound import cell, upper_bound
from tests.gates.test_mismatch_bound import recount

from .kit import Outcome


@pytest.mark.slow  # the whole demo (about a minute on two idle cores)
def test_the_demo_states_the_bound_at_every_count(demo: Outcome) -> None:
    check_bounds(demo.dir)


def check_bounds(out: Path) -> None:
    ev = json.loads((out / "evidence.json").read_text("utf-8"))
    report = (out / "report.md").read_text("utf-8")
    row = next(line for line in report.splitlines() if line.startswith("| **overlapped outputs**"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:-1]
    counts = sorted(int(k) for k in ev["model_checks"]["per_count"])
    assert len(cells) == len(counts) == 4
    for n, shown in zip(counts, cells, strict=True):
        overlapped = recount(out, n)
        checks = ev["model_checks"]["per_count"][str(n)]["assertions"]
        for aid in ("M2.exact", "Q5"):
            a = next(x for x in checks if x["id"] == aid)
            b = a["evidence"]["bound"]
            assert b["overlapped"] == overlapped, (n, aid)
            assert b["differed"] == 0
            assert b["rate_upper_95"] == pytest.approx(upper_bound(0, overlapped))
        assert shown == cell({"overlapped": overlapped, "differed": 0, "rate_upper_95": upper_bound(0, overlapped)})
        if n == 1:
            assert overlapped == 0
        else:
            assert overlapped > 0 and f"{overlapped} overlapped output(s), 0 differed" in report
