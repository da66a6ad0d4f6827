"""What every markdown report shares: status icons, table-cell escaping, short hashes and the
walk over every judged entry, so the run report, its failure section and the catalogue
render the same evidence the same way."""

from __future__ import annotations

from typing import TypedDict

from parval.jsontypes import JsonObject
from parval.rundir.evidence_types import Assertion, Evidence, RunInfo

ICON = {"PASS": "✅", "FAIL": "❌", "PENDING": "⏳", "BLOCKED": "⛔", "UNSUPPORTED": "🚫", "NOT_APPLICABLE": "➖"}
MAX_ROWS = 10


class ReportContext(TypedDict, total=False):
    """What the markdown needs beyond the evidence (`parval.report.render.report_context`)."""

    argv: dict[str, list[str]]  # each server's command line, by run name
    requests: JsonObject  # the request bodies, by request name (the manifest's)
    run_dirs: list[str]  # the run directories read
    integrity: list[str]  # what was verified of each before it was read


def esc(text: object) -> str:
    """Safe inside a table cell; `<` outside code spans is escaped (GitHub hides unknown tags)."""
    parts = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def short(h: object, n: int = 16) -> str:
    """A hash cut to `n` characters in a code span (a dash when there is none)."""
    return f"`{str(h)[:n]}…`" if h else "–"


def detailed(ev: Evidence) -> list[tuple[int | None, Assertion]]:
    """Every judged entry with its count (None for model-level and most framework entries)."""
    out: list[tuple[int | None, Assertion]] = []
    for a in ev["model_checks"].get("model_level", []):
        out.append((None, a))
    for n, c in sorted(ev["model_checks"]["per_count"].items(), key=lambda kv: int(kv[0])):
        for a in c.get("assertions", []):
            out.append((int(n), a))
    for a in ev["framework_checks"].get("results", []):
        out.append((a.get("count"), a))  # a count the framework record does not cover
    return out


def count_sources(ev: Evidence, count: int | None) -> list[str]:
    """The run directories whose events judged `count` (the one run's when not merged)."""
    run: RunInfo = ev.get("run") or {}
    if count is not None and run.get("count_sources"):
        return list(run["count_sources"].get(str(count)) or [])
    if run.get("dir"):
        return [str(run["dir"])]
    return list((run.get("count_sources") or {}).get("1") or [])
