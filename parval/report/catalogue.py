"""`parval report --catalogue DIR`: one line per run under DIR (and the historical records),
superseded runs marked, exit 0 only when every run was admitted."""

from __future__ import annotations

import json
from pathlib import Path

from parval.errors import RunDirError
from parval.jsontypes import JsonObject
from parval.report.catalogue_row import CatalogueRow
from parval.report.evidence_types import Evidence
from parval.report.history import HistoricalRow
from parval.rundir.layout import MANIFEST


def find_runs(root: Path) -> list[Path]:
    if not root.is_dir():
        raise RunDirError(f"{root}: no such directory")
    return sorted(p.parent for p in root.rglob("evidence.json") if p.is_file())


def blocking(ev: Evidence) -> list[str]:
    """The assertions that keep a run from admission: FAIL first, then
    BLOCKED/PENDING/UNSUPPORTED."""
    order = {"FAIL": 0, "BLOCKED": 1, "UNSUPPORTED": 2, "PENDING": 3}
    items = [a for a in ev["assertions"] if a["status"] in order]
    items.sort(key=lambda a: order[a["status"]])
    return [f"{a['id']} {a['status']}" for a in items]


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
            ev: Evidence = json.loads((d / "evidence.json").read_text("utf-8"))
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
    mark_superseded(rows)
    return rows


def _manifest_provenance(run_dir: Path) -> JsonObject | None:
    try:
        provenance: JsonObject | None = json.loads((run_dir / MANIFEST).read_text("utf-8")).get("provenance")
        return provenance
    except (OSError, ValueError, AttributeError):
        return None


def mark_superseded(rows: list[CatalogueRow]) -> None:
    """A run is superseded by a newer run of the same model, backend, task, mode, shard and
    provenance (local and CI stay apart): both are kept, only the newest is current."""
    groups: dict[str, list[CatalogueRow]] = {}
    for r in rows:
        if "error" in r:
            continue
        key = json.dumps(
            [r.get("model"), r.get("family"), r.get("task"), r.get("backend"), r.get("mode"), r.get("shard")]
            + [(r.get("provenance") or {}).get("kind")],
            sort_keys=True,
        )
        groups.setdefault(key, []).append(r)
    for members in groups.values():
        members.sort(key=lambda r: str(r.get("date") or ""))
        newest = members[-1]
        for r in members:
            r["superseded_by"] = None if r is newest else newest["dir"]


def catalogue_exit(rows: list[CatalogueRow]) -> int:
    """0 every current run admitted · 1 any current run has a FAIL (or unreadable evidence) ·
    3 otherwise. Superseded runs are kept and shown, but judged by their replacements."""
    rows = [r for r in rows if not r.get("superseded_by")]
    if any("error" in r or r.get("exit_code") == 1 for r in rows):
        return 1
    return 0 if all(r.get("exit_code") == 0 for r in rows) else 3


def render_catalogue(root: Path, fmt: str) -> tuple[str, int]:
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
    code = catalogue_exit(rows)
    if fmt == "json":
        return json.dumps(
            {"catalogue": str(root), "runs": rows, "historical": history}, indent=2, sort_keys=True
        ) + "\n", code
    if fmt == "junit":
        from parval.report.junit import render_catalogue_junit

        return render_catalogue_junit(rows), code
    from parval.report.catalogue_md import render_catalogue_markdown

    return render_catalogue_markdown(str(root), rows, history), code


def _render_history_only(root: Path, fmt: str, history: list[HistoricalRow]) -> str:
    """Only historical records under DIR: listed, never an admission (exit 3)."""
    if fmt == "json":
        return json.dumps({"catalogue": str(root), "runs": [], "historical": history}, indent=2, sort_keys=True) + "\n"
    from parval.report.catalogue_md import render_catalogue_markdown

    return render_catalogue_markdown(str(root), [], history)
