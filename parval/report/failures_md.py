"""The report's "why it is not admitted" section: every FAIL with its requests, slot
histories, both hashes and the commands that reproduce it, then what is still unresolved,
grouped by reason. Kept apart from the layout of the whole report, which only orders it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Literal

from parval.jsonread import iterate
from parval.report.md_base import (
    ICON,
    MAX_ROWS,
    ReportContext,
    count_sources,
    cut,
    detailed,
    esc,
    plain,
    reproduce_lines,
    short,
)
from parval.rundir.evidence_types import Assertion, AssertionEvidence, Evidence, MergedRun, RunInfo

UNRESOLVED = ("BLOCKED", "UNSUPPORTED", "PENDING")
_ProblemList = Literal["errors", "malformed", "indeterminate", "no_reference"]
_ProblemCount = Literal["errors_count", "malformed_count", "indeterminate_count", "no_reference_count"]
# (the evidence's request list, its total before shortening, the section's title)
_PROBLEM_LISTS: tuple[tuple[_ProblemList, _ProblemCount, str], ...] = (
    ("errors", "errors_count", "Request errors"),
    ("malformed", "malformed_count", "Malformed replies"),
    ("indeterminate", "indeterminate_count", "Indeterminate outcomes"),
    ("no_reference", "no_reference_count", "Outputs without a same-history reference"),
)


def _history(h: object) -> str:
    if h is None:
        return "(unknown)"
    if not h:
        return "(fresh slot)"
    return " → ".join(str(x) for x in iterate(h))


def _where(m: Mapping[str, object]) -> list[str]:
    return [
        esc(m.get("run", "–")),
        f"{esc(m.get('phase', '–'))} · {m.get('wave', '–')}",
        f"`{esc(m.get('req', '–'))}`",
        esc("–" if m.get("slot") is None else m["slot"]),
        esc(_history(m.get("history"))),
    ]


def _more(items: Sequence[object], total: int) -> list[str]:
    shown = min(len(items), MAX_ROWS)
    return ["", f"… {total - shown} more in evidence.json."] if total > shown else []


def mismatch_table(items: Sequence[Mapping[str, object]], total: int) -> list[str]:
    rows = [
        "| # | run | phase · wave | request | slot | slot history "
        "| got (canonical sha256) | reference (canonical sha256) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, m in enumerate(items[:MAX_ROWS], 1):
        ref = f"{short(m.get('ref_canon'))} ({esc(m.get('ref', ''))})"
        rows.append(f"| {i} | " + " | ".join(_where(m)) + f" | {short(m.get('got_canon'))} | {ref} |")
    return rows + _more(items, total)


def error_table(items: Sequence[Mapping[str, object]], total: int, what: str) -> list[str]:
    rows = [
        f"{what}:",
        "",
        "| # | run | phase · wave | request | slot | slot history | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, m in enumerate(items[:MAX_ROWS], 1):
        outcome = m.get("error") or m.get("problem") or m.get("outcome") or m.get("ref") or ""
        status = f"HTTP {m['status']}: " if m.get("status") else ""
        rows.append(f"| {i} | " + " | ".join(_where(m)) + f" | {esc(cut(plain(status + str(outcome)), 200))} |")
    return rows + _more(items, total)


# Event bookkeeping a reader has no use for: the event kind, its sequence number and epoch time
_INTERNAL = ("kind", "seq", "t")


def cell(key: str, value: object) -> str:
    """One evidence value as a table cell: a slots form keeps its JSON spelling (null, false
    and "4" are different forms), a missing value is a dash, a long text keeps its end (a log
    tail's last words say what happened)."""
    if key in ("value", "slots"):
        return esc(json.dumps(value))
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value).strip()
    if len(text) > 80:
        tail = text[-79:]
        text = "…" + (tail.split(" ", 1)[1] if " " in tail[:30] else tail)
    return esc(text)


def _record_rows(value: list[Mapping[str, object]]) -> tuple[list[str], list[list[str]]]:
    """The columns worth reading (scalars, bookkeeping left out; a start's attempt shown as
    its server directory) and the rows."""
    first = value[0]
    cols = [
        k for k in first if k not in _INTERNAL and (isinstance(first[k], str | int | float | bool) or first[k] is None)
    ]
    server_dir = "run" in cols and "attempt" in cols
    cols = [k for k in cols if k != "attempt"][:6]
    head = cols + (["server files"] if server_dir else [])
    rows = []
    for v in value[:MAX_ROWS]:
        row = [cell(c, v.get(c)) for c in cols]
        if server_dir:
            row.append(f"`servers/{esc(v.get('run'))}-{v.get('attempt')}/`")
        rows.append(row)
    return head, rows


def generic_evidence(evidence: Mapping[str, object]) -> list[str]:
    """Lists of records as small tables, scalars as one line: for FAILs without mismatches.
    A list that repeats one already shown (a violation that is the records) is shown once."""
    lines: list[str] = []
    scalars = []
    shown: list[object] = []
    for key, value in sorted(evidence.items()):
        if key in ("per_count", "status_before_negative_control", "status_before_serial_check", "rests_on"):
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            if value in shown:
                continue
            shown.append(value)
            cols, rows = _record_rows(value)
            if not cols:
                continue
            lines += [f"{key.replace('_', ' ')}:", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
            if len(value) > MAX_ROWS:
                lines += ["", f"… {len(value) - MAX_ROWS} more in evidence.json."]
            lines.append("")
        elif (isinstance(value, str | int | float | bool) or value is None) and key not in _INTERNAL:
            scalars.append(f"{key.replace('_', ' ')}: {cut(plain(cell(key, value)), 120)}")
    if scalars:
        lines.append("Facts: " + "; ".join(scalars[:12]))
    return lines


def campaign_command(ev: Evidence, count: int | None) -> str:
    """`parval run PLAN [--shard i/n]` for the run that judged `count` (any run if None)."""
    runs = ev.get("merged_from") or [_whole_campaign(ev.get("run") or {})]
    run = next((r for r in runs if count is None or r.get("counts") is None or count in r["counts"]), runs[0])
    cmd = f"parval run {shlex.quote(str(run.get('plan') or 'PLAN'))}"
    if shard := run.get("shard"):
        cmd += f" --shard {shard[0]}/{shard[1]}"
    return cmd


def _whole_campaign(run: RunInfo) -> MergedRun:
    """One run's record as the run that judged every count (no counts of its own)."""
    return {"plan": run.get("plan"), "shard": run.get("shard")}


def reproduce_block(
    a: Assertion, first: Mapping[str, object] | None, ev: Evidence, context: ReportContext, count: int | None
) -> list[str]:
    cmds: list[str | None] = [
        "# the whole campaign, as parval ran it:",
        a.get("reproduction") or campaign_command(ev, count),
    ]
    if first is not None:
        argv = (context.get("argv") or {}).get(str(first.get("run")))
        req = first.get("req")
        if argv:
            cmds += [
                "" if cmds else None,
                f"# this server alone ({first.get('run')}), exactly as started:",
                " ".join(shlex.quote(x) for x in argv),
            ]
        history = first.get("history") or []
        bodies = context.get("requests") or {}
        if req in bodies:
            if history:
                cmds.append(f"# send the slot's history first, one at a time: {', '.join(map(str, iterate(history)))}")
            # `req` is one of the bodies' (string) names here.
            payload = json.dumps({"model": ev["identity"]["model"], "request": bodies[str(req)]}, sort_keys=True)
            cmds += [
                f"# then request '{req}' (port: see the server's config.json):",
                "curl -sS http://127.0.0.1:$PORT/v1/tasks/run -H 'Content-Type: application/json' \\",
                f"  -d {shlex.quote(payload)}",
            ]
        if first.get("artifact") and (first.get("ref_artifact") or first.get("ref_canon")):
            dirs = count_sources(ev, count)
            base = dirs[0] if dirs else "RUN_DIR"
            cmds += [
                "" if cmds else None,
                "# compare the two recorded responses byte for byte:",
                f"cmp {base}/artifacts/{first['artifact']}.json {base}/artifacts/{first.get('ref_artifact')}.json",
            ]
    return reproduce_lines([c for c in cmds if c is not None])


def explain_failure(count: int | None, a: Assertion, ev: Evidence, context: ReportContext) -> list[str]:
    where = f" at count {count}" if count is not None else ""
    lines = [f"#### ❌ {a['id']}{where}", "", esc(plain(a.get("reason", ""))), ""]
    e: AssertionEvidence = a.get("evidence") or {}
    mism = e.get("mismatches") or []
    first: Mapping[str, object] | None = None
    if mism:
        total = int(e.get("mismatch_count", len(mism)))
        first = mism[0]
        lines += mismatch_table(mism, total) + [""]
        lines += [
            f"First mismatch: got canonical sha256 `{first.get('got_canon')}` (artifact "
            f"`{first.get('artifact')}`), reference `{first.get('ref_canon')}` "
            f"(artifact `{first.get('ref_artifact')}`)."
        ]
        ga, ra = (mism[0].get("got_audio") or {}), (mism[0].get("ref_audio") or {})
        if ga or ra:
            lines[-1] += f" Audio: got {_audio(ga)}, reference {_audio(ra)}."
        lines.append("")
    for key, count_key, what in _PROBLEM_LISTS:
        items = e.get(key) or []
        if items:
            first = first or items[0]
            lines += error_table(items, int(e.get(count_key, len(items))), what) + [""]
    if not mism and not any(e.get(k) for k, _, _ in _PROBLEM_LISTS):
        lines += generic_evidence(e) + [""]
        first = next(
            (v[0] for v in e.values() if isinstance(v, list) and v and isinstance(v[0], dict) and v[0].get("run")), None
        )
    lines += reproduce_block(a, first, ev, context, count)
    return lines


def _audio(info: Mapping[str, object]) -> str:
    parts = []
    for name, v in info.items():
        if isinstance(v, dict):
            parts.append(
                f"{name} {v.get('frames')} frames @ {v.get('sample_rate')} Hz sha256 {short(v.get('sha256'), 12)}"
            )
    return "; ".join(parts) or "–"


def unresolved_lines(ev: Evidence) -> list[str]:
    groups: dict[tuple[str, str], list[str]] = {}
    for n, a in detailed(ev):
        if a["status"] in UNRESOLVED:
            label = a["id"] + (f"@{n}" if n is not None else "")
            groups.setdefault((a["status"], a.get("reason", "")), []).append(label)
    lines = []
    for (status, reason), ids in sorted(groups.items(), key=lambda kv: (UNRESOLVED.index(kv[0][0]), -len(kv[1]))):
        shown = ", ".join(ids[:8]) + (f" (+{len(ids) - 8} more)" if len(ids) > 8 else "")
        lines.append(f"- {ICON[status]} **{status}** {esc(shown)}: {esc(cut(plain(reason), 300))}")
    return lines
