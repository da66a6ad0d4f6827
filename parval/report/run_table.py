"""`parval report --catalogue DIR`: one line per run under DIR (and the historical records),
then one verdict per model/backend/mode: every run of it that tested the newest candidate
build merged as `parval report RUN...` merges them (an older run's failure is never erased by
a newer passing one; a run of another procedure version is historical, listed apart); exit 0
only when every verdict admits."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from parval.errors import RunDirError
from parval.jsontypes import JsonObject, JsonValue
from parval.procedure.sealed_rules import as_read
from parval.procedure.version import historical_reason, is_current
from parval.report.history import HistoricalRow
from parval.report.rules_loosened import LOOSENED
from parval.report.run_table_row import CatalogueRow, CatalogueVerdict, RunWhy, SetAside
from parval.rundir.evidence_types import Evidence
from parval.rundir.layout import MANIFEST, find_runs
from parval.rundir.mismatch_bound import summed_per_count

if TYPE_CHECKING:
    from parval.report.evidence_found import FoundRun as FoundRunT


def blocking(ev: Evidence) -> list[str]:
    """The assertions that keep a run from admission: FAIL first, then
    BLOCKED/PENDING/UNSUPPORTED."""
    order = {"FAIL": 0, "BLOCKED": 1, "UNSUPPORTED": 2, "PENDING": 3}
    items = [a for a in ev["assertions"] if a["status"] in order]
    items.sort(key=lambda a: order[a["status"]])
    # Another procedure version's evidence admits nothing, whatever its assertions say.
    hist = ev.get("historical")
    first = [f"HISTORICAL (procedure {hist.get('procedure_version')})"] if hist else []
    # Nor does evidence judged under rules changed after its events.
    if ev.get("rules_changed"):
        unknown = str(ev["verdict"].get("line", "")).startswith("RULES UNKNOWN")
        first.append(
            "RULES UNKNOWN (resealed with nothing to compare them with)"
            if unknown
            else "RULES CHANGED after the run's events"
        )
    return [*first, *(f"{a['id']} {a['status']}" for a in items)]


def catalogue_rows(root: Path) -> list[CatalogueRow]:
    """One row per run under `root`, every run directory verified before it is read (one
    modified directory refuses the whole catalogue, naming it: exit 2)."""
    from parval.rundir.verified import TamperedRunError, verified

    refused: list[str] = []
    for d in find_runs(root):
        try:
            verified(d)
        except TamperedRunError as exc:
            refused.append(exc.message)
    if refused:
        raise TamperedRunError(
            f"{root}: {len(refused)} run director(y/ies) modified after judging: " + " | ".join(refused[:5]),
            hint="`parval verify RUN` lists every difference of a run",
        )
    rows: list[CatalogueRow] = []
    for d in find_runs(root):
        try:
            ev: Evidence = as_read(d, json.loads((d / "evidence.json").read_text("utf-8")))
            ident, v = ev["identity"], ev["verdict"]
        except (OSError, ValueError, KeyError) as exc:
            rows.append({"dir": str(d), "error": f"unreadable evidence: {exc}"})
            continue
        rows.append(
            {
                "dir": str(d.relative_to(root)) if d != root else ".",
                "model": ident.get("model"),
                "family": ident.get("family"),
                "task": ident.get("task"),
                "backend": ident.get("backend"),
                "mode": ident.get("mode"),
                "admitted_counts": v.get("admitted_counts", []),
                "admission_ready": ev.get("admission_ready"),
                "exit_code": v.get("exit_code"),
                "blocking": blocking(ev),
                "date": ev.get("generated_at"),
                "candidate_sha256": ident.get("candidate_sha256"),
                "shard": (ev.get("run") or {}).get("shard"),
                "procedure_version": ev.get("procedure_version"),
                "provenance": (ev.get("run") or {}).get("provenance") or _manifest_provenance(d),
            }
        )
    return rows


def _manifest_provenance(run_dir: Path) -> JsonObject | None:
    try:
        provenance: JsonObject | None = json.loads((run_dir / MANIFEST).read_text("utf-8")).get("provenance")
        return provenance
    except (OSError, ValueError, AttributeError):
        return None


def catalogue_verdicts(
    root: Path, set_aside: Sequence[SetAside] = ()
) -> tuple[list[CatalogueVerdict], list[dict[str, str]], list[RunWhy]]:
    """One verdict per model/family/task/backend/mode under `root` (module docstring); runs
    of an older candidate build than the newest run's are stale, as the claims make them."""
    from parval.report.evidence_found import Attributed, find_evidence, merge_current

    groups: dict[str, list[FoundRunT]] = {}
    found = find_evidence(root, set_aside)
    for run in found.runs:
        i = run.identity
        key = json.dumps([i.get(k) for k in ("model", "family", "task", "backend", "mode")], default=str)
        groups.setdefault(key, []).append(run)
    out: list[CatalogueVerdict] = []
    for every in groups.values():
        # Runs of another procedure version are historical: listed apart while any current
        # run exists (however recent they are), judged (HISTORICAL) only when none does.
        current = [r for r in every if is_current(r.ev.get("procedure_version"))]
        members = current or every
        old = [r for r in every if r not in members]
        members.sort(key=lambda r: r.date)
        sha = members[-1].candidate_sha256
        att = Attributed()
        stale = [r for r in members if r.candidate_sha256 != sha]
        merge_current(att, [r for r in members if r.candidate_sha256 == sha])
        ev = att.evidence
        assert ev is not None  # the newest run is always used
        verdict = ev["verdict"]
        apart = [
            f"count {n} FAILED in {r.rel}" + (f" ({why})" if why.startswith(LOOSENED) else "")
            for n, found in sorted(att.failed_apart.items())
            for r, why in found
        ]
        i = att.used[-1].identity
        out.append(
            {
                "model": _json(i.get("model")),
                "family": _json(i.get("family")),
                "task": _json(i.get("task")),
                "backend": _json(i.get("backend")),
                "mode": _json(i.get("mode")),
                "candidate_sha256": sha,
                "runs": [r.rel for r in att.used],
                "exit_code": 1 if apart else int(verdict.get("exit_code", 3)),
                "admitted_counts": [] if apart else list(verdict.get("admitted_counts") or []),
                "blocking": [*apart, *blocking(ev)],
                "failed_apart": apart,
                "not_used": [RunWhy(dir=r.rel, why=why) for r, why in att.not_used],
                "stale": [
                    RunWhy(
                        dir=r.rel,
                        why=f"tested candidate sha256 {str(r.candidate_sha256)[:12]}…, the newest run's is "
                        f"{str(sha)[:12]}…; new executables inherit nothing",
                    )
                    for r in stale
                ],
                "historical": [RunWhy(dir=r.rel, why=historical_reason(r.ev.get("procedure_version"))) for r in old],
                "bounds": summed_per_count(r.ev for r in att.used),
            }
        )
    return out, found.unreadable, [RunWhy(dir=r.rel, why=why) for r, why in found.set_aside]


def _json(value: object) -> JsonValue:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def catalogue_exit(rows: list[CatalogueRow], verdicts: list[CatalogueVerdict]) -> int:
    """0 every verdict admits · 1 any verdict has a FAIL (or a run's evidence is unreadable) ·
    3 otherwise."""
    if any("error" in r for r in rows) or any(v["exit_code"] == 1 for v in verdicts):
        return 1
    return 0 if all(v["exit_code"] == 0 for v in verdicts) else 3


def render_catalogue(root: Path, fmt: str, set_aside: Sequence[SetAside] = ()) -> tuple[str, int]:
    from parval.report.history import historical_rows

    rows = catalogue_rows(root)
    history = historical_rows(root)
    if not rows and history:
        return _render_history_only(root, fmt, history), 3
    if not rows:
        raise RunDirError(
            f"{root}: no run directory (with an evidence.json) under it",
            hint="point --catalogue at the directory holding your runs, e.g. runs/",
        )
    verdicts, unreadable, left = catalogue_verdicts(root, set_aside)
    errors = {u["dir"]: u["error"] for u in unreadable}
    for r in rows:  # a run no verdict could read fails the catalogue, never drops out of it
        if r["dir"] in errors:
            r["error"] = errors[r["dir"]]
    code = catalogue_exit(rows, verdicts)
    if fmt == "json":
        doc = {"catalogue": str(root), "runs": rows, "verdicts": verdicts, "set_aside": left, "historical": history}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n", code
    if fmt == "junit":
        from parval.report.junit import render_catalogue_junit

        return render_catalogue_junit(rows, verdicts, left), code
    from parval.report.run_table_md import render_catalogue_markdown

    return render_catalogue_markdown(str(root), rows, history, verdicts, left), code


def _render_history_only(root: Path, fmt: str, history: list[HistoricalRow]) -> str:
    """Only historical records under DIR: listed, never an admission (exit 3)."""
    if fmt == "json":
        return json.dumps({"catalogue": str(root), "runs": [], "historical": history}, indent=2, sort_keys=True) + "\n"
    from parval.report.run_table_md import render_catalogue_markdown

    return render_catalogue_markdown(str(root), [], history)
