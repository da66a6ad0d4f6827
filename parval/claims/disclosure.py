"""How every claimed combination and count stands (`parval report --catalogue DIR --claims CAT`).

Verdicts are read as the judges gave them (the evidence's `verdict.admitted_counts`,
`verdict.counts`, its assertions, `framework_checks`, `performance`), for the evidence of
the catalogue's candidate build (`attribution.py`). One row per claimed count:

* ADMITTED: the count is among the evidence's admitted counts;
* NOT ADMITTED: the count's verdict is FAIL (the failing assertions are listed), in the
  merged evidence of every current run or in a current run kept apart only by its
  provenance (local/CI), or the evidence's run directory was modified after judging
  (INVALID EVIDENCE);
* BLOCKED: the count's verdict is BLOCKED or UNSUPPORTED (it stays at one slot);
* PENDING: the count's verdict is PENDING (the unresolved assertions are listed); a count
  whose own verdict is PASS but sits above a count that is not admitted takes that count's
  state (admission is the consecutive validated counts from one upward);
* NOT RUN: no current evidence covers the count (and none at all: otherwise
  STALE: only evidence of another executable hash or source commit covers it; or
  HISTORICAL: only runs made under another procedure version cover it, or only an
  imported record of an earlier procedure names the combination).

Exit code: 0 only when every claimed count is ADMITTED; 1 when any is NOT ADMITTED; 3
otherwise (BLOCKED, PENDING, NOT RUN, STALE or HISTORICAL rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypedDict

from parval.claims.attribution import attribute
from parval.claims.combination import Catalogue, Combination
from parval.errors import EXIT_ADMITTED, EXIT_FAILED, EXIT_INCOMPLETE, RunDirError
from parval.jsontypes import JsonValue
from parval.report.evidence_found import Attributed, FoundRun, find_evidence
from parval.report.load import run_problems
from parval.report.run_table_row import SetAside
from parval.rundir.evidence_types import Assertion, Evidence, PerformanceRow
from parval.rundir.mismatch_bound import MismatchBound, summed_per_count


class State(StrEnum):
    ADMITTED = "ADMITTED"
    NOT_ADMITTED = "NOT ADMITTED"
    BLOCKED = "BLOCKED"
    PENDING = "PENDING"
    NOT_RUN = "NOT RUN"
    STALE = "STALE"
    HISTORICAL = "HISTORICAL"


_FOR_VERDICT = {
    "FAIL": State.NOT_ADMITTED,
    "BLOCKED": State.BLOCKED,
    "UNSUPPORTED": State.BLOCKED,
    "PENDING": State.PENDING,
}
_LISTED = {State.NOT_ADMITTED: ("FAIL",), State.BLOCKED: ("BLOCKED", "UNSUPPORTED"), State.PENDING: ("PENDING",)}


class CountRowJson(TypedDict):
    count: int
    state: str
    reason: str
    blocking: list[str]
    bound: MismatchBound | None


class FrameworkUse(TypedDict, total=False):
    """Which framework record a combination's evidence used (only the first four keys
    when there is no current evidence)."""

    record: JsonValue
    path: JsonValue
    trusted: bool
    reason: JsonValue
    reused: bool
    reuse_status: JsonValue
    reuse_reason: JsonValue
    record_commit: JsonValue
    status: JsonValue


@dataclass
class CountRow:
    count: int
    state: State
    reason: str
    blocking: list[str] = field(default_factory=list)  # "ID STATUS", worst first
    # overlapped outputs and mismatches at the count, summed over every run of the tested
    # identity, and their bound (None where no run states one)
    bound: MismatchBound | None = None

    def to_json(self) -> CountRowJson:
        return {
            "count": self.count,
            "state": str(self.state),
            "reason": self.reason,
            "blocking": self.blocking,
            "bound": self.bound,
        }


@dataclass
class CombinationDisclosure:
    combo: Combination
    candidate_sha256: str
    found: Attributed
    rows: list[CountRow]
    invalid: list[str]

    @property
    def admitted(self) -> list[int]:
        return [r.count for r in self.rows if r.state is State.ADMITTED]

    @property
    def beyond(self) -> list[int]:
        """Claimed counts that are not admitted."""
        return [r.count for r in self.rows if r.state is not State.ADMITTED]

    @property
    def framework(self) -> FrameworkUse:
        """Which framework record the evidence used, whether it was trusted and reused."""
        ev = self.found.evidence
        if ev is None:
            return {"record": None, "trusted": False, "reason": "no current evidence", "reused": False}
        fc = ev.get("framework_checks") or {}
        rec = fc.get("record") or {}
        reuse = fc.get("reuse") or {}
        return {
            "record": rec.get("id"),
            "path": rec.get("path"),
            "trusted": bool(fc.get("trusted")),
            "reason": fc.get("untrusted_reason"),
            "reused": bool(reuse.get("reused")),
            "reuse_status": reuse.get("status"),
            "reuse_reason": reuse.get("reason") if reuse else None,
            "record_commit": reuse.get("record_commit"),
            "status": fc.get("status"),
        }

    def performance_rows(self) -> dict[int, PerformanceRow]:
        ev = self.found.evidence
        rows = ((ev.get("performance") or {}).get("rows") or []) if ev else []
        return {int(r["count"]): r for r in rows if int(r["count"]) in self.combo.counts}

    def to_json(self) -> dict[str, object]:
        c, ev = self.combo, self.found.evidence
        return {
            "combination": c.key,
            "claim": c.claim.name,
            "model": c.model_id,
            "family": c.family,
            "task": c.task,
            "backend": c.backend,
            "build": c.build.name,
            "mode": c.mode,
            "plan": str(c.claim.source),
            "claimed_counts": list(c.counts),
            "admitted_counts": self.admitted,
            "claimed_beyond_admitted": self.beyond,
            "candidate": {"sha256": self.candidate_sha256, "source_commit": c.build.candidate.source_commit},
            "rows": [r.to_json() for r in self.rows],
            "evidence": {
                "runs": [r.summary() for r in self.found.used],
                "merged": len(self.found.used) > 1,
                "verdict": None if ev is None else ev.get("verdict"),
                "admission_ready": None if ev is None else ev.get("admission_ready"),
                "invalid": self.invalid,
                "not_used": [{**r.summary(), "why": why} for r, why in self.found.not_used],
                "stale": [{**r.summary(), "why": why} for r, why in self.found.stale],
                "historical_runs": [
                    {**r.summary(), "procedure_version": r.ev.get("procedure_version"), "why": why}
                    for r, why in self.found.historical_runs
                ],
                "set_aside": [{**r.summary(), "why": why} for r, why in self.found.set_aside],
                "historical": self.found.historical,
            },
            "framework": self.framework,
        }


def _entries(ev: Evidence, n: int) -> list[Assertion]:
    """Every judged entry that bears on count n: model-level, the count's, the framework's."""
    out: list[Assertion] = []
    if mc := ev.get("model_checks"):
        out += mc.get("model_level") or []
        if (per_count := mc.get("per_count")) and (counted := per_count.get(str(n))):
            out += counted.get("assertions") or []
    if fc := ev.get("framework_checks"):
        out += [a for a in fc.get("results") or [] if a.get("count") in (None, n)]
    return out


def _blocking(ev: Evidence, n: int, statuses: tuple[str, ...]) -> tuple[list[str], str]:
    found = [a for a in _entries(ev, n) if a.get("status") in statuses]
    found.sort(key=lambda a: statuses.index(str(a["status"])))
    ids = list(dict.fromkeys(f"{a['id']} {a['status']}" for a in found))
    first = str(found[0].get("reason") or "") if found else ""
    return ids, first if len(first) <= 200 else first[:197] + "..."


def count_rows(combo: Combination, found: Attributed, invalid: list[str]) -> list[CountRow]:
    """One row per claimed count (module docstring)."""
    ev = found.evidence
    rows: list[CountRow] = []
    verdict = ev.get("verdict") if ev else None
    admitted = set(verdict.get("admitted_counts") or []) if verdict else set()
    by_count = (verdict.get("counts") or {}) if verdict else {}
    line = str(verdict.get("line", "")) if verdict else ""
    for n in combo.counts:
        if ev is not None and invalid:
            rows.append(CountRow(n, State.NOT_ADMITTED, "INVALID EVIDENCE: " + "; ".join(invalid[:3])))
            continue
        if n in found.failed_apart:  # the same tested identity failed it under the other provenance
            run, why = found.failed_apart[n][0]
            rows.append(
                CountRow(n, State.NOT_ADMITTED, f"count {n} FAILED in {run.rel}, not merged ({why})", [run.rel])
            )
            continue
        if ev is None or n not in found.covered:
            rows.append(_uncovered(n, found))
            continue
        if n in admitted:
            rows.append(CountRow(n, State.ADMITTED, line))
            continue
        status = str(by_count.get(str(n), "PENDING"))
        state = _FOR_VERDICT.get(status)
        if state is None:  # PASS, yet not admitted: a lower count is not
            below = next((r for r in rows if r.count < n and r.state is not State.ADMITTED), None)
            if below is None:  # the judge's admission rule (Q6) says why
                level: list[Assertion] = (ev.get("model_checks") or {}).get("model_level") or []
                q6 = next((a for a in level if a["id"] == "Q6"), None)
                reason, limits = (None, None) if q6 is None else (q6.get("reason"), q6.get("limitations"))
                parts = [str(reason or line), *(limits or [])]
                if not admitted and line not in parts:  # nothing admitted: the verdict line says why first
                    parts.insert(0, line)
                why = "; ".join(parts)
                rows.append(CountRow(n, State.PENDING, f"count {n} passes but is not admitted: {why}", ["Q6"]))
            else:
                rows.append(
                    CountRow(
                        n,
                        below.state,
                        f"count {n} passes, but count {below.count} is {below.state}: admission is "
                        "the consecutive validated counts from one upward",
                        [f"count {below.count} {below.state}"],
                    )
                )
            continue
        blocking, first = _blocking(ev, n, _LISTED[state])
        rows.append(CountRow(n, state, first or f"count {n} verdict {status}", blocking))
    if not invalid:
        # Every run of the tested identity counts, merged or kept apart by provenance.
        runs = {id(r): r for r in found.used} | {id(r): r for rs in found.failed_apart.values() for r, _ in rs}
        bounds = summed_per_count(r.ev for r in runs.values())
        for row in rows:
            row.bound = bounds.get(str(row.count))
    return rows


def _uncovered(n: int, found: Attributed) -> CountRow:
    if n in found.not_run:
        return CountRow(n, State.NOT_RUN, found.not_run[n])
    old = [(r, why) for r, why in found.historical_runs if n in r.loaded.counts]
    if old:
        run, why = old[-1]
        return CountRow(n, State.HISTORICAL, f"only the run {run.rel}, {why}")
    stale = [(r, why) for r, why in found.stale if n in r.loaded.counts]
    if stale:
        run, why = stale[-1]
        return CountRow(n, State.STALE, f"only stale evidence ({run.rel}): {why}; new executables inherit nothing")
    if found.historical:
        h = found.historical[0]
        return CountRow(
            n,
            State.HISTORICAL,
            f"only the imported record {h['dir']} (procedure {h.get('procedure_version')}); "
            "historical evidence never counts toward admission",
        )
    if found.used:
        return CountRow(n, State.NOT_RUN, f"count {n} is not among the counts the current runs ran")
    return CountRow(n, State.NOT_RUN, "no evidence at all")


@dataclass
class Disclosure:
    catalogue: Catalogue
    runs_dir: Path
    combinations: list[CombinationDisclosure]
    unreadable: list[dict[str, str]]
    set_aside: list[tuple[FoundRun, str]] = field(default_factory=list)  # every run set aside, with its reason

    @property
    def rows(self) -> list[tuple[CombinationDisclosure, CountRow]]:
        return [(c, r) for c in self.combinations for r in c.rows]

    @property
    def exit_code(self) -> int:
        states = [r.state for _, r in self.rows]
        if any(s is State.NOT_ADMITTED for s in states):
            return EXIT_FAILED
        return EXIT_ADMITTED if all(s is State.ADMITTED for s in states) else EXIT_INCOMPLETE

    def summary(self) -> dict[str, int]:
        out = {str(s): 0 for s in State}
        for _, r in self.rows:
            out[str(r.state)] += 1
        return out


def disclose(catalogue: Catalogue, runs_dir: Path, set_aside: Sequence[SetAside] = ()) -> Disclosure:
    """The disclosure of every combination of `catalogue` from the evidence under `runs_dir`."""
    if not runs_dir.is_dir():
        raise RunDirError(f"{runs_dir}: no such directory", hint="point --catalogue at the folder holding the runs")
    found = find_evidence(runs_dir, set_aside)
    shas = {c.build.name: c.build.candidate.identity_sha256() for c in catalogue.combinations}
    out: list[CombinationDisclosure] = []
    for combo in catalogue.combinations:
        sha = shas[combo.build.name]
        att = attribute(combo, found, sha)
        invalid = [f"{r.rel}: {p}" for r in att.used for p in run_problems(r.dir, r.ev)]
        out.append(CombinationDisclosure(combo, sha, att, count_rows(combo, att, invalid), invalid))
    return Disclosure(catalogue, runs_dir, out, found.unreadable, found.set_aside)
