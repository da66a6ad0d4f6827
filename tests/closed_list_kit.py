"""Synthetic evidence made whole: a PASS entry for every entry of the procedure's closed list
(parval.procedure.closed_list) the test does not write itself, so that what a test leaves
out is not a gap that holds every count PENDING."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from parval.procedure.closed_list import FRAMEWORK, evidence_gaps, gaps
from parval.status import Result, Status


def passing(id_: str, count: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": id_,
        "status": "PASS",
        "applicable": True,
        "reason": "ok",
        "evidence": {},
        "reproduction": "",
        "limitations": [],
    }
    if count is not None:
        out["count"] = count
    return out


def complete(ev: dict[str, Any], *, but: tuple[str, ...] = ()) -> dict[str, Any]:
    """`ev` with a PASS entry, in place, for each gap of the closed list except the IDs in `but`."""
    checks = ev["model_checks"]
    for id_, n in evidence_gaps(ev):  # type: ignore[arg-type]
        if id_ in but:
            continue
        if n is not None:
            checks["per_count"][str(n)]["assertions"].append(passing(id_, n))
        elif id_.startswith("F") or id_ == "X4":
            ev["framework_checks"]["results"].append(passing(id_))
        else:
            checks["model_level"].append(passing(id_))
    return ev


def filled(
    counts: list[int],
    model_level: list[Result],
    per_count: dict[int, list[Result]],
    framework: list[Result],
    *,
    but: tuple[str, ...] = (),
) -> tuple[list[Result], dict[int, list[Result]], list[Result]]:
    """`decide`'s results with a PASS for each gap of the closed list (in place) except the
    IDs in `but`: a test of one rule gives only the results it is about."""
    for n in counts:
        per_count.setdefault(n, [])
    found = gaps(
        [r.id for r in model_level],
        {n: [r.id for r in rs] for n, rs in per_count.items()},
        [r.id for r in framework if r.count is None],
        admission_rule=False,
    )
    for id_, n in found:
        if id_ in but:
            continue
        r = Result(id_, Status.PASS, "ok")
        if n is not None:
            per_count[n].append(replace(r, count=n))
        elif id_ in FRAMEWORK:
            framework.append(r)
        else:
            model_level.append(r)
    return model_level, per_count, framework
