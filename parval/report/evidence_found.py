"""The evidence under a runs folder: every readable run with its identity, the unreadable
ones, the runs set aside and the imported historical records (`find_evidence`), and the
current runs of one tested identity merged into one verdict (`merge_current`), as
`parval report --catalogue DIR` lists them and a catalogue's claims attribute them
(parval.claims.attribution).

Every current run counts, none is superseded by a newer one (an intermittent failure stays
failed when later repeats pass): they are merged the way `parval report RUN1 RUN2` merges.
A run that cannot be merged with the newest is left out, with the reason, when it is
another tested identity (its plan settings or files differ); when only its provenance
differs (local and CI are never merged) it is the same tested identity, and the counts it
FAILED cannot be admitted (`failed_apart`); so it is for a run that FAILed under stricter rules
than the newest run's (parval.report.rules_loosened). A run leaves the verdicts only by an explicit
decision, `--set-aside RUN --reason TEXT`, which every output format shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from parval.errors import ParvalError, UsageError
from parval.jsonread import get
from parval.jsontypes import JsonObject, JsonValue
from parval.procedure.sealed_rules import as_read
from parval.report.history import HistoricalRow, historical_rows
from parval.report.merge import LoadedRun, MergeRefused, against, check_mergeable, failed_counts, merge_evidence
from parval.report.rules_loosened import marked
from parval.report.run_table_row import SetAside
from parval.rundir.evidence_types import Evidence
from parval.rundir.layout import MANIFEST, find_runs


class RunSummary(TypedDict):
    """A run directory as a claims disclosure names it."""

    dir: str
    shard: list[int] | None
    counts: list[int]
    candidate_sha256: str | None
    candidate_commit: str | None
    provenance: JsonValue
    generated_at: str
    verdict: JsonValue


@dataclass
class FoundRun:
    dir: Path
    rel: str
    ev: Evidence
    manifest: JsonObject
    loaded: LoadedRun

    @property
    def identity(self) -> Mapping[str, object]:
        ident: Mapping[str, object] = self.ev.get("identity") or {}
        return ident

    @property
    def candidate_sha256(self) -> str | None:
        ident = self.ev.get("identity")
        return ident.get("candidate_sha256") if ident else None

    @property
    def candidate_commit(self) -> str | None:
        commit = get(get(self.manifest.get("identity") or {}, "candidate") or {}, "source_commit")
        return str(commit) if commit else None

    @property
    def shard(self) -> list[int] | None:
        shard = (self.ev.get("run") or {}).get("shard")
        return list(shard) if shard else None

    @property
    def provenance(self) -> JsonValue:
        prov = self.manifest.get("provenance") or (self.ev.get("run") or {}).get("provenance") or {}
        return prov.get("kind") if isinstance(prov, dict) else None

    @property
    def date(self) -> str:
        return str(self.ev.get("generated_at") or "")

    def summary(self) -> RunSummary:
        return {
            "dir": self.rel,
            "shard": self.shard,
            "counts": self.loaded.counts,
            "candidate_sha256": self.candidate_sha256,
            "candidate_commit": self.candidate_commit,
            "provenance": self.provenance,
            "generated_at": self.date,
            "verdict": (self.ev.get("verdict") or {}).get("line"),
        }


@dataclass
class Found:
    """Everything under the runs folder: readable runs, unreadable ones, historical records."""

    runs: list[FoundRun]
    unreadable: list[dict[str, str]]
    historical: list[HistoricalRow]
    set_aside: list[tuple[FoundRun, str]] = field(default_factory=list)  # (run, the reason given)


def _set_aside(found: Found, root: Path, decisions: Sequence[SetAside]) -> None:
    """Move the runs named by `decisions` out of `found.runs`; a name that is no run under
    `root` is refused (exit 2): a decision about nothing must not pass silently."""
    for decision in decisions:
        want = {decision.run.resolve(), (root / decision.run).resolve()}
        run = next((r for r in found.runs if r.dir.resolve() in want), None)
        if run is None:
            raise UsageError(
                f"--set-aside {decision.run}: no run directory under {root} is that run",
                hint="name a run directory the catalogue lists (its path, or its path under DIR)",
            )
        found.runs.remove(run)
        found.set_aside.append((run, decision.reason))


def find_evidence(root: Path, set_aside: Sequence[SetAside] = ()) -> Found:
    runs: list[FoundRun] = []
    unreadable: list[dict[str, str]] = []
    for d in find_runs(root):
        rel = str(d.relative_to(root)) if d != root else "."
        try:
            ev: Evidence = as_read(d, json.loads((d / "evidence.json").read_text("utf-8")))
            manifest: JsonObject = json.loads((d / MANIFEST).read_text("utf-8"))
            runs.append(FoundRun(d, rel, ev, manifest, LoadedRun(d, ev)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ParvalError) as exc:
            unreadable.append({"dir": rel, "error": f"unreadable evidence: {type(exc).__name__}: {exc}"})
    found = Found(runs, unreadable, [h for h in historical_rows(root) if "error" not in h])
    _set_aside(found, root, set_aside)
    return found


@dataclass
class Attributed:
    """The evidence of one combination."""

    used: list[FoundRun] = field(default_factory=list)  # current, merged into one verdict
    not_used: list[tuple[FoundRun, str]] = field(default_factory=list)  # current, left out: why
    stale: list[tuple[FoundRun, str]] = field(default_factory=list)
    # runs of another procedure version: historical, never current (parval.procedure.version)
    historical_runs: list[tuple[FoundRun, str]] = field(default_factory=list)
    set_aside: list[tuple[FoundRun, str]] = field(default_factory=list)  # (run, the reason given)
    historical: list[HistoricalRow] = field(default_factory=list)
    evidence: Evidence | None = None  # the used runs' (merged) evidence
    covered: dict[int, list[str]] = field(default_factory=dict)  # count → used runs that ran it
    not_run: dict[int, str] = field(default_factory=dict)  # count → why a used run left it out
    # count → (run, why apart): a FAIL in a run of the same tested identity that could not
    # be merged only because its provenance (local/CI) differs; it still counts.
    failed_apart: dict[int, list[tuple[FoundRun, str]]] = field(default_factory=dict)
    # why a run's FAIL under stricter rules counts against the used runs (rules_loosened)
    loosened: list[tuple[str, list[int]]] = field(default_factory=list)  # (why, counts it FAILED)


def stale_reason(run: FoundRun, sha256: str, commit: str | None) -> str | None:
    """Why `run` is not evidence of the candidate build (None: it is)."""
    got = run.candidate_sha256
    if got != sha256:
        return f"tested candidate sha256 {str(got)[:12]}…, the catalogue's candidate is {sha256[:12]}…"
    theirs = run.candidate_commit
    if (
        commit
        and theirs
        and not (commit.lower().startswith(theirs.lower()) or theirs.lower().startswith(commit.lower()))
    ):
        return f"tested source commit {theirs[:12]}, the catalogue's candidate is {commit[:12]}"
    return None


def _same_identity_apart(runs: list[LoadedRun]) -> bool:
    """Runs refused a merge only for their provenance (local and CI)."""
    try:
        check_mergeable(runs, across_provenance=True)
    except MergeRefused:
        return False
    return True


def merge_current(out: Attributed, current: list[FoundRun]) -> None:
    """Every current run of one combination into `out` (module docstring): the claims and the
    catalogue table (`parval.report.run_table`) both judge runs this way."""
    current.sort(key=lambda r: r.date, reverse=True)
    for run in current:  # newest first: the newest run decides what the others must agree with
        try:
            check_mergeable([r.loaded for r in [*out.used, run]])
        except MergeRefused as exc:
            # a FAIL under stricter rules than the newest run's counts against it
            loose = against(run.loaded, out.used[0].loaded) if out.used else None
            if loose is not None:
                out.not_used.append((run, loose))
                out.loosened.append((loose, failed_counts(run.loaded)))
                for n in failed_counts(run.loaded):
                    out.failed_apart.setdefault(n, []).append((run, loose))
                continue
            why = f"cannot be merged with the newer runs: {exc.message}"
            out.not_used.append((run, why))
            if _same_identity_apart([r.loaded for r in [*out.used, run]]):
                for key, status in ((run.ev.get("verdict") or {}).get("counts") or {}).items():
                    if status == "FAIL":
                        out.failed_apart.setdefault(int(key), []).append((run, why))
            continue
        out.used.append(run)
    out.used.sort(key=lambda r: r.date)
    if len(out.used) == 1:
        out.evidence = out.used[0].ev
    elif out.used:
        out.evidence = merge_evidence([r.loaded for r in out.used])
    if out.evidence is not None:
        out.evidence = marked(out.evidence, out.loosened)
    for run in out.used:
        for n in run.loaded.counts:
            out.covered.setdefault(n, []).append(run.rel)
        for n, why in run.loaded.not_run.items():
            out.not_run.setdefault(n, why)
