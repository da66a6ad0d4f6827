"""`parval report --catalogue DIR` as markdown: current runs, then superseded runs and the
imported historical records, each in its own table so nothing historical reads as current."""

from __future__ import annotations

from parval.report.catalogue_row import CatalogueRow
from parval.report.history import HistoricalRow
from parval.report.md_base import esc, short
from parval.rundir.provenance import label

CATALOGUE_HEAD = [
    "| run | model | family | task | backend | mode | admitted counts "
    "| blocking assertions | date | candidate sha256 |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def render_catalogue_markdown(root: str, rows: list[CatalogueRow], history: list[HistoricalRow] | None = None) -> str:
    """Current runs; then superseded runs and historical records, each apart (never current)."""
    current = [r for r in rows if not r.get("superseded_by")]
    superseded = [r for r in rows if r.get("superseded_by")]
    admitted = sum(1 for r in current if r.get("admission_ready"))
    out = [
        f"**parval catalogue: {len(rows)} run(s) under `{esc(root)}`, {admitted} admission-ready**",
        "",
        *CATALOGUE_HEAD,
        *_catalogue_rows(current),
    ]
    if superseded:
        out += [
            "",
            f"Superseded runs ({len(superseded)}; kept, replaced by a newer run of the "
            "same model/backend/task/mode/shard):",
            "",
            *CATALOGUE_HEAD,
            *_catalogue_rows(superseded),
        ]
        out += [f"- `{esc(r['dir'])}` superseded by `{esc(r['superseded_by'])}`" for r in superseded]
    if history:
        out += [
            "",
            f"Historical records ({len(history)}; imported with `parval import`, never count toward admission):",
            "",
            "| record | model | backend | procedure | entries | failures retained | "
            "limitations | imported | tested candidate sha256 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        out += [_history_row(h) for h in history]
    return "\n".join(out) + "\n"


def _history_row(h: HistoricalRow) -> str:
    if "error" in h:
        return f"| `{esc(h['dir'])}` | ❌ {esc(h['error'])} | | | | | | | |"
    failures = h["failures"]
    fails = ", ".join(failures[:4]) + (f" (+{len(failures) - 4})" if len(failures) > 4 else "")
    return (
        f"| `{esc(h['dir'])}` | {esc(h['model'])} | {esc(h['backend'])} | "
        f"{esc(h['procedure_version'])} | {h['entries']} | {esc(fails) or '–'} | "
        f"{h['limitations']} | {esc(h['imported_at'])} | {short(h['candidate_sha256'], 12)} |"
    )


def _catalogue_rows(rows: list[CatalogueRow]) -> list[str]:
    out: list[str] = []
    for r in rows:
        if "error" in r:
            out.append(f"| `{esc(r['dir'])}` | ❌ {esc(r['error'])} | | | | | | | | |")
            continue
        block = r["blocking"]
        shown = ", ".join(block[:3]) + (f" (+{len(block) - 3} more)" if len(block) > 3 else "")
        counts = ", ".join(map(str, r["admitted_counts"])) or "none"
        shard = f" (shard {s[0]}/{s[1]})" if (s := r.get("shard")) else ""
        made = f" ({esc(label(r['provenance']))})" if r.get("provenance") else ""
        out.append(
            f"| `{esc(r['dir'])}`{shard}{made} | {esc(r['model'])} | {esc(r['family'])} "
            f"| {esc(r['task'])} | {esc(r['backend'])} | {esc(r['mode'])} | {counts} "
            f"| {esc(shown) or '–'} | {esc(r['date'])} "
            f"| {short(r['candidate_sha256'], 12)} |"
        )
    return out
