"""`parval report --catalogue DIR --claims CAT` as markdown: the verdict line, one row per
claimed combination and count, the counts claimed beyond what was admitted, the evidence
and framework record each combination used, then the procedure's comparison table (P5)
across the catalogue with the model and framework verdicts beside the speed figures."""

from __future__ import annotations

from typing import TypedDict

from parval.claims.disclosure import CombinationDisclosure, CountRow, Disclosure, State
from parval.gates.performance import TABLE_COLUMNS
from parval.jsontypes import JsonValue
from parval.report.md_base import esc, short
from parval.report.performance_md import pct_cell, time_cell
from parval.rundir.evidence_types import TimeStats
from parval.rundir.mismatch_bound import cell as bound_cell

STATE_ICON = {
    State.ADMITTED: "✅",
    State.NOT_ADMITTED: "❌",
    State.BLOCKED: "⛔",
    State.PENDING: "⏳",
    State.NOT_RUN: "⬜",
    State.STALE: "🔁",
    State.HISTORICAL: "📜",
}
SHOWN = 4


class ComparisonRow(TypedDict):
    """One backend/model/count of the comparison across the catalogue (P5 figures beside
    the verdicts; the figures None without current evidence)."""

    combination: str
    backend_model: str
    count: int
    state: str
    admitted: bool
    model_checks: str | None
    framework_checks: str | None
    framework_record: JsonValue
    memory: str | None
    base_one_request: TimeStats | None
    candidate_one_slot: TimeStats | None
    one_request_saved_pct: float | None
    base_n_serial: TimeStats | None
    candidate_n_slots: TimeStats | None
    n_saved_pct: float | None


def verdict_line(d: Disclosure) -> str:
    rows = d.rows
    admitted = sum(r.state is State.ADMITTED for _, r in rows)
    if d.exit_code == 0:
        return (
            f"every claimed combination is ADMITTED ({admitted} count(s) over "
            f"{len(d.combinations)} combination(s), for the catalogue's candidate builds)"
        )
    counts = " · ".join(f"{k} {v}" for k, v in d.summary().items() if v)
    return f"NOT READY for merge — {admitted} of {len(rows)} claimed count(s) admitted ({counts})"


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else "")


def _why(row: CountRow) -> str:
    if row.state is State.ADMITTED:
        return "–"
    if row.blocking:
        return f"{_listed(row.blocking)}: {row.reason}" if row.reason else _listed(row.blocking)
    return row.reason


def _evidence_cell(c: CombinationDisclosure) -> str:
    used = c.found.used
    if not used:
        return "none"
    dirs = ", ".join(f"`{esc(r.rel)}`" for r in used)
    return dirs + (f" (merged from {len(used)} runs)" if len(used) > 1 else "")


def _framework_cell(c: CombinationDisclosure) -> str:
    fw = c.framework
    if c.found.evidence is None:
        return "–"
    if not fw["record"]:
        return f"none: {esc(fw['reason'] or 'no record referenced')}"
    cell = f"`{esc(fw['record'])}`" + (" (trusted)" if fw["trusted"] else f" (not trusted: {esc(fw['reason'])})")
    if fw["reused"]:
        cell += f"; reused from commit {esc(str(fw['record_commit'])[:12])} (framework paths unchanged)"
    elif fw["reuse_status"]:
        cell += f"; reuse refused: {esc(fw['reuse_reason'])}"
    return cell


def _claims_table(d: Disclosure) -> list[str]:
    out = [
        "| combination | model | count | disclosure | why / blocking assertions "
        "| overlapped outputs, differed, mismatch rate (95 %) | evidence | framework record |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in d.combinations:
        for r in c.rows:
            out.append(
                f"| `{esc(c.combo.key)}` | {esc(c.combo.model_id)} | {r.count} | {STATE_ICON[r.state]} {r.state} "
                f"| {esc(_why(r))} | {bound_cell(r.bound) or '–'} | {_evidence_cell(c)} | {_framework_cell(c)} |"
            )
    return out


def _beyond(d: Disclosure) -> list[str]:
    out: list[str] = []
    for c in d.combinations:
        if not c.beyond:
            continue
        states = ", ".join(f"{r.count} {r.state}" for r in c.rows if r.state is not State.ADMITTED)
        claimed = ", ".join(map(str, c.combo.counts))
        if c.admitted:
            advice = f"admitted {', '.join(map(str, c.admitted))} → advertise at most `slots: {max(c.admitted)}`"
        else:
            advice = "nothing admitted → do not enable parallel slots for it"
        out.append(f"- `{esc(c.combo.key)}`: claims {claimed}; {advice}; not admitted: {states}")
    return out or ["Every claimed count is admitted."]


def _evidence_section(d: Disclosure) -> list[str]:
    out = ["| build | backend | candidate executable | sha256 | source commit |", "|---|---|---|---|---|"]
    for name, b in sorted(d.catalogue.file.builds.items()):
        sha = next((c.candidate_sha256 for c in d.combinations if c.combo.build.name == name), b.candidate.sha256)
        commit = esc(b.candidate.source_commit or "–")
        out.append(f"| {name} | {b.backend} | `{esc(b.candidate.executable)}` | {short(sha, 12)} | {commit} |")
    out.append("")
    for c in d.combinations:
        f = c.found
        parts = []
        if f.used:
            verdict = f.evidence["verdict"].get("line", "") if f.evidence and "verdict" in f.evidence else ""
            parts.append(f"verdict {esc(verdict)}")
        for r, why in f.not_used:
            parts.append(f"not used `{esc(r.rel)}`: {esc(why)}")
        for r, why in f.stale:
            parts.append(f"stale `{esc(r.rel)}`: {esc(why)}")
        for r, why in f.historical_runs:
            parts.append(f"historical `{esc(r.rel)}`: {esc(why)}")
        for r, why in f.set_aside:
            parts.append(f"set aside `{esc(r.rel)}`: {esc(why)}")
        for h in f.historical:
            parts.append(f"historical `{esc(h['dir'])}` (procedure {esc(h.get('procedure_version'))}, never admission)")
        if c.invalid:
            parts.append("INVALID EVIDENCE: " + esc("; ".join(c.invalid[:3])))
        out.append(f"- `{esc(c.combo.key)}` ({_evidence_cell(c)}): " + ("; ".join(parts) or "no evidence"))
    return out


def _framework_section(d: Disclosure) -> list[str]:
    records: dict[str, list[CombinationDisclosure]] = {}
    for c in d.combinations:
        if c.found.evidence is not None:
            records.setdefault(str(c.framework["record"] or "(none)"), []).append(c)
    out = ["| framework record | used by | trusted | reused from another build |", "|---|---|---|---|"]
    for rec, users in records.items():
        fw = users[0].framework
        trusted = "yes" if fw["trusted"] else f"no: {esc(fw['reason'])}"
        reused = f"yes, from {esc(str(fw['record_commit'])[:12])}" if fw["reused"] else "no"
        names = ", ".join(f"`{esc(u.combo.key)}`" for u in users)
        out.append(f"| `{esc(rec)}` | {names} | {trusted} | {reused} |")
    return out if records else ["No current evidence references a framework record."]


def comparison_rows(d: Disclosure) -> list[ComparisonRow]:
    """One row per backend/model/count with the verdicts beside the P5 figures."""
    out: list[ComparisonRow] = []
    for c in d.combinations:
        perf = c.performance_rows()
        ev = c.found.evidence
        memory = (ev.get("performance") or {}).get("memory_verdict") if ev else None
        for r in c.rows:
            p = perf.get(r.count) if r.state not in (State.STALE, State.HISTORICAL, State.NOT_RUN) else None
            out.append(
                {
                    "combination": c.combo.key,
                    "backend_model": f"{c.combo.backend}/{c.combo.model_id}",
                    "count": r.count,
                    "state": str(r.state),
                    "admitted": r.state is State.ADMITTED,
                    "model_checks": None if p is None else p.get("model_checks"),
                    "framework_checks": None if p is None else p.get("framework_checks"),
                    "framework_record": c.framework.get("record"),
                    "memory": memory if p is not None else None,
                    "base_one_request": None if p is None else p.get("base_one_request"),
                    "candidate_one_slot": None if p is None else p.get("candidate_one_slot"),
                    "one_request_saved_pct": None if p is None else p.get("one_request_saved_pct"),
                    "base_n_serial": None if p is None else p.get("base_n_serial"),
                    "candidate_n_slots": None if p is None else p.get("candidate_n_slots"),
                    "n_saved_pct": None if p is None else p.get("n_saved_pct"),
                }
            )
    return out


def comparison_markdown(rows: list[ComparisonRow]) -> list[str]:
    out = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    for r in rows:
        state = State(r["state"])
        label = f"{r['backend_model']} (N={r['count']})"
        if r["model_checks"] is None:
            cells = [label, f"{STATE_ICON[state]} {state}: no current evidence", "–", *["–"] * 6]
        else:
            verdicts = f"model checks {r['model_checks']}; memory {r['memory']}"
            checks = f"{STATE_ICON[state]} {state}; {verdicts}"
            if state is State.NOT_ADMITTED:
                checks = f"**NOT ADMITTED** — {verdicts}"
            elif state is not State.ADMITTED:
                checks = f"**not admitted ({state})** — {verdicts}"
            fw = f"{r['framework_checks']} ({r['framework_record'] or 'no record'})"
            base_n = r["base_n_serial"]
            cells = [
                label,
                checks,
                fw,
                time_cell(r["base_one_request"]),
                time_cell(r["candidate_one_slot"]),
                pct_cell(r["one_request_saved_pct"], r["admitted"]),
                time_cell(base_n),
                time_cell(r["candidate_n_slots"]),
                pct_cell(r["n_saved_pct"], r["admitted"], bool(base_n and base_n.get("estimate"))),
            ]
        out.append("| " + " | ".join(esc(x) for x in cells) + " |")
    return out


def _set_aside_section(d: Disclosure) -> list[str]:
    """The runs left out of every verdict by `--set-aside RUN --reason TEXT`, with the reason."""
    if not d.set_aside:
        return []
    head = f"### Set aside ({len(d.set_aside)}; left out of every verdict by an explicit decision)"
    return [head, "", *(f"- `{esc(r.rel)}`: {esc(why)}" for r, why in d.set_aside), ""]


def render_claims_markdown(d: Disclosure) -> str:
    cat = d.catalogue
    out = [
        f"**parval claims: {verdict_line(d)}**",
        "",
        f"Catalogue `{esc(cat.name)}` (`{esc(cat.path)}`), evidence under `{esc(d.runs_dir)}`. "
        "A count is admitted only on evidence of the catalogue's candidate build; stale and "
        "historical evidence is disclosed, never counted.",
        "",
        "### Claims",
        "",
        *_claims_table(d),
        "",
        *_set_aside_section(d),
        "### Claimed beyond what was admitted",
        "",
        *_beyond(d),
        "",
        "### Evidence used",
        "",
        *_evidence_section(d),
        "",
        "### Framework records",
        "",
        *_framework_section(d),
        "",
        "### Comparison across the catalogue (P5; separate from admission)",
        "",
        *comparison_markdown(comparison_rows(d)),
        "",
        "- time saved % = 100 * (base - candidate) / base; positive means less elapsed time",
        "- speed is not part of admission: slower models can pass correctness, faster mismatching models "
        "cannot; a faster row that is not admitted says so",
    ]
    if d.unreadable:
        out += ["", "Unreadable run directories (attributed to no claim):", ""]
        out += [f"- `{esc(u['dir'])}`: {esc(u['error'])}" for u in d.unreadable]
    return "\n".join(out) + "\n"
