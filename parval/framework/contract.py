"""Behaviour-contract cells (parallel_server_behavior_contract.md, version 2026-10-04) and
which of them each F assertion's black-box probes cover.

Every cell keeps the contract's own coverage label (D directly exercised, P partial, U no
behavioural test) and its test links. Each F assertion lists the cells its probes reach,
with parval's own label for that evidence: D when an HTTP probe forces the cell with the
ordering observed, P when it reaches only part of the stated combination, U when parval
cannot reach it over HTTP (CTest only). Any P/U cell, and every area the contract labels
"Partially tested", becomes a limitation: the assertion may pass, its group is never a
blanket pass.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import NotRequired, TypedDict

CONTRACT_VERSION = "2026-10-04"
CONTRACT_DOC = "docs/maintainers/parallel_server_behavior_contract.md"


@dataclass(frozen=True)
class Cell:
    id: str
    table: str
    where: str
    label: str  # the contract's D/P/U
    tests: tuple[str, ...]
    text: str

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "tests": list(self.tests)}


@dataclass(frozen=True)
class Coverage:
    """What one F assertion's probes reach: (cell id, parval label, note) and areas."""

    cells: tuple[tuple[str, str, str], ...]
    areas: tuple[str, ...]
    outside_http: str = ""  # what only CTest/sanitizers can show for this assertion


def _load() -> tuple[dict[str, str], dict[str, Cell], dict[str, Coverage]]:
    """The cells and coverage, transcribed from the contract into contract.json (data)."""
    raw = json.loads(resources.files("parval.framework").joinpath("contract.json").read_text("utf-8"))
    cells = {r[0]: Cell(r[0], r[1], r[2], r[3], tuple(r[4].split()), r[5]) for r in raw["cells"]}
    coverage = {
        aid: Coverage(
            tuple((str(c), str(lab), str(n)) for c, lab, n in v["cells"]),
            tuple(v["areas"].split()),
            v.get("outside", ""),
        )
        for aid, v in raw["coverage"].items()
    }
    return dict(raw["areas"]), cells, coverage


class CoverageJson(TypedDict):
    """What an F assertion's evidence records of its contract coverage (coverage_json)."""

    cells: list[dict[str, object]]
    areas: dict[str, str] | list[str]  # an assertion without coverage: []
    outside_http: NotRequired[str]


# "Validation by area and known limits": every area is labelled partially tested.
AREAS, CELLS, COVERAGE = _load()


def coverage_json(assertion_id: str) -> CoverageJson:
    cov = COVERAGE.get(assertion_id)
    if cov is None:
        return {"cells": [], "areas": []}
    cells = [{**CELLS[cid].to_json(), "parval_label": label, "probe": note} for cid, label, note in cov.cells]
    return {"cells": cells, "areas": {a: AREAS[a] for a in cov.areas}, "outside_http": cov.outside_http}


def limitations(assertion_id: str) -> list[str]:
    """Why this assertion's pass is never a blanket pass for its group."""
    cov = COVERAGE.get(assertion_id)
    if cov is None:
        return []
    out: list[str] = []
    for cid, label, note in cov.cells:
        cell = CELLS[cid]
        if cell.label != "D" or label != "D":
            tests = " ".join(cell.tests) or "GAP"
            out.append(
                f"contract cell '{cell.where}' ({cell.table}) is {cell.label} [{tests}] in the "
                f"contract; parval covers it {label}: {note}"
            )
    if cov.outside_http:
        out.append(f"not observable over HTTP: {cov.outside_http}")
    partial = [a for a in cov.areas if AREAS[a] != "Directly tested"]
    if partial:
        out.append(
            "contract area(s) " + ", ".join(partial) + " labelled 'Partially tested': "
            "a pass here is not a blanket pass for the group"
        )
    return out
