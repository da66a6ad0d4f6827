"""`parval report --catalogue DIR` as markdown: the runs, then the verdicts (every run of one
model/backend/mode merged), then the imported historical records, each in its own table so
nothing historical reads as current."""

from __future__ import annotations

from parval.report.history import HistoricalRow
from parval.report.md_base import esc, short
from parval.report.run_table_row import CatalogueRow, CatalogueVerdict, RunWhy
from parval.rundir.mismatch_bound import per_count_words
from parval.rundir.provenance import label

_VERDICT = {0: "ADMITTED", 1: "NOT ADMITTED"}
CATALOGUE_HEAD = [
    "| run | model | family | task | backend | mode | admitted counts "
    "| blocking assertions | date | candidate sha256 |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def render_catalogue_markdown(
    root: str,
    rows: list[CatalogueRow],
    history: list[HistoricalRow] | None = None,
    verdicts: list[CatalogueVerdict] | None = None,
    set_aside: list[RunWhy] | None = None,
) -> str:
    """The runs; the verdicts (what the exit code reads); historical records apart (never current)."""
    verdicts = verdicts or []
    admitted = sum(1 for v in verdicts if v["exit_code"] == 0)
    out = [
        f"**parval catalogue: {len(rows)} run(s) under `{esc(root)}`, "
        f"{admitted} of {len(verdicts)} verdict(s) admitted**",
        "",
        *CATALOGUE_HEAD,
        *_catalogue_rows(rows),
    ]
    if verdicts:
        out += [
            "",
            "Verdicts (every run of one model/family/task/backend/mode that tested the newest "
            "candidate build, merged as `parval report RUN...` merges them; an older run's "
            "failure stays failed):",
            "",
            "| model | backend | mode | runs merged | verdict | admitted counts | blocking assertions "
            "| overlapped outputs, differed, mismatch rate (95 %) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for v in verdicts:
            block = v["blocking"]
            shown = ", ".join(block[:3]) + (f" (+{len(block) - 3} more)" if len(block) > 3 else "")
            out.append(
                f"| {esc(v['model'])} | {esc(v['backend'])} | {esc(v['mode'])} "
                f"| {', '.join(f'`{esc(d)}`' for d in v['runs'])} | {_VERDICT.get(v['exit_code'], 'INCOMPLETE')} "
                f"| {', '.join(map(str, v['admitted_counts'])) or 'none'} | {esc(shown) or '–'} "
                f"| {per_count_words(v.get('bounds') or {}) or '–'} |"
            )
        for v in verdicts:
            out += [f"- `{esc(w['dir'])}` not merged: {esc(w['why'])}" for w in v["not_used"]]
            out += [f"- `{esc(w['dir'])}` stale: {esc(w['why'])}" for w in v["stale"]]
            out += [f"- `{esc(w['dir'])}` historical: {esc(w['why'])}" for w in v["historical"]]
    if set_aside:
        out += ["", f"Set aside ({len(set_aside)}; left out of every verdict by an explicit decision):", ""]
        out += [f"- `{esc(w['dir'])}` set aside: {esc(w['why'])}" for w in set_aside]
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
