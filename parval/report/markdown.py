"""Evidence → markdown that reads well as a pull-request comment.

Order: the verdict line; the M1-M6 / F1-F6 table (per count); why it is not admitted (see
parval/report/failures_md.py); the performance table; the memory plots; one collapsible
`<details>` section per assertion with its evidence and reproduction. The text is kept
under GitHub's comment limit by shortening the evidence excerpts first.
"""

from __future__ import annotations

import json
from pathlib import Path

from parval.jsontypes import JsonObject
from parval.procedure.catalogue import group_of
from parval.report.failures_md import explain_failure, unresolved_lines
from parval.report.md_base import ICON, ReportContext, detailed, esc, short
from parval.report.performance_md import performance_table_markdown
from parval.rundir.evidence_types import Assertion, Evidence, RunInfo
from parval.rundir.provenance import label
from parval.status import Status, combine

MODEL_GROUPS = {
    "M1": "Scope / serial quality",
    "M2": "Every admitted count",
    "M3": "Mixed / repeated quality",
    "M4": "Model recovery",
    "M5": "Memory reuse",
    "M6": "Execution modes",
}
FRAMEWORK_GROUPS = {
    "F1": "Scheduling and compatibility",
    "F2": "Load / configuration transitions",
    "F3": "Failure / resource lifetime",
    "F4": "Disconnect / shutdown",
    "F5": "Multiple models / eviction",
    "F6": "Regressions / sanitizers",
}
OTHER_GROUPS = ["X1", "X2", "X3", "X4", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
COMMENT_LIMIT = 60_000  # GitHub refuses comments over 65,536 characters


# -- the check table -----------------------------------------------------------------------
def _status_of(entries: list[Assertion]) -> str:
    return str(combine(Status(a["status"]) for a in entries))


def check_table(ev: Evidence) -> list[str]:
    counts = sorted(int(n) for n in ev["model_checks"]["per_count"])
    entries = detailed(ev)
    head = "| group | status | " + " | ".join(f"count {n}" for n in counts) + " | not passing |"
    rows = [head, "|---|---|" + "---|" * len(counts) + "---|"]
    titles = {**MODEL_GROUPS, **FRAMEWORK_GROUPS}
    for g, title in titles.items():
        mine = [(n, a) for n, a in entries if group_of(a["id"]) == g]
        if not mine:
            continue
        st = _status_of([a for _, a in mine])
        cells = []
        for k in counts:
            at = [a for c, a in mine if c == k]
            cells.append(f"{ICON[_status_of(at)]}" if at else "")
        bad: dict[str, list[str]] = {}
        for n, a in mine:
            if a["status"] not in ("PASS", "NOT_APPLICABLE"):
                bad.setdefault(f"{a['id']} {ICON[a['status']]}", []).append("" if n is None else str(n))
        listed = [k + (f" @{','.join(c for c in v if c)}" if any(v) else "") for k, v in bad.items()]
        more = f" (+{len(listed) - 6} more)" if len(listed) > 6 else ""
        rows.append(
            f"| **{g}** {title} | {ICON[st]} {st} | " + " | ".join(cells) + f" | {esc(', '.join(listed[:6]) + more)} |"
        )
    verdicts = ev["verdict"].get("counts", {})
    admitted = set(ev["verdict"].get("admitted_counts", []))
    cells = [
        f"{ICON.get(verdicts.get(str(n), 'PENDING'), '')} {verdicts.get(str(n), '?')}"
        + (" **admitted**" if n in admitted else "")
        for n in counts
    ]
    rows.append("| **count verdict** | | " + " | ".join(cells) + " | |")
    return rows


def other_line(ev: Evidence) -> str:
    by_id = {a["id"]: a for a in ev["assertions"]}
    x = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[:4] if i in by_id)
    q = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[4:] if i in by_id)
    return f"Execution path: {x} — quality rules: {q}"


# -- per-assertion details -----------------------------------------------------------------
def _details(a: Assertion, per: list[tuple[int | None, Assertion]], cap: int) -> list[str]:
    open_attr = " open" if a["status"] == "FAIL" else ""
    lines = [
        f"<details{open_attr}><summary>{ICON[a['status']]} <b>{a['id']}</b> {a['status']} — "
        f"{esc(a.get('reason', ''))[:200]}</summary>",
        "",
    ]
    counted = [(n, x) for n, x in per if n is not None]
    if counted:
        lines += ["| count | status | reason |", "|---|---|---|"]
        for n, x in counted:
            lines.append(f"| {n} | {ICON[x['status']]} {x['status']} | {esc(x.get('reason', ''))[:300]} |")
        lines.append("")
    if a.get("reproduction"):
        lines += ["Reproduce:", "", "```sh", a["reproduction"], "```", ""]
    if a.get("limitations"):
        lines += ["Limitations: " + esc("; ".join(a["limitations"])), ""]
    if cap > 0:
        worst = next((x for _, x in per if x["status"] == a["status"]), a)
        text = json.dumps(worst.get("evidence", {}), indent=1, sort_keys=True, default=str)
        if len(text) > cap:
            text = text[:cap] + "\n… (shortened; the full evidence is in evidence.json)"
        lines += ["```json", text, "```", ""]
    lines += ["</details>", ""]
    return lines


def _all_details(ev: Evidence, cap: int) -> list[str]:
    by_id: dict[str, list[tuple[int | None, Assertion]]] = {}
    for n, x in detailed(ev):
        by_id.setdefault(x["id"], []).append((n, x))
    out: list[str] = []
    for a in ev["assertions"]:
        out += _details(a, by_id.get(a["id"], []), cap)
    return out


# -- the framework record this evidence relies on ----------------------------------------------
def framework_lines(ev: Evidence) -> list[str]:
    """Which framework record was used (or why not), its count coverage and any reviewed reuse."""
    fw = ev.get("framework_checks") or {}
    rec, reuse, cov = fw.get("record"), fw.get("reuse"), fw.get("coverage")
    if rec is None and reuse is None:
        return []
    out = ["### Framework record", ""]
    if rec is not None:
        out.append(
            f"Record `{esc(rec.get('id'))}` ({esc(rec.get('path'))}), procedure "
            f"{esc(rec.get('procedure_version'))}: "
            + ("used" if fw.get("trusted") else f"not used: {esc(fw.get('untrusted_reason'))}")
        )
    if cov and cov.get("missing"):
        out.append(
            f"Counts it does not cover (not admissible on it): {cov['missing']} "
            f"(record counts {cov.get('record_counts')})."
        )
    if reuse is not None:
        out += [
            "",
            f"Reuse: **{esc(reuse.get('status'))}** — {esc(reuse.get('reason'))}",
            "",
            "Diffed "
            + esc(reuse.get("record_commit", ""))[:12]
            + " → "
            + esc(reuse.get("candidate_commit", ""))[:12]
            + "; reused only for changes under the reviewed adapter paths: "
            + ", ".join(f"`{esc(p.get('path'))}/<family>`" for p in reuse.get("adapter_paths", [])),
        ]
        for title, listed in (
            ("changed files not known to be one family's adapter", reuse.get("refused_files")),
            ("uncommitted changes in the checkout", reuse.get("dirty")),
        ):
            files = listed or []
            if files:
                out.append(
                    f"{title}: "
                    + ", ".join(f"`{esc(f)}`" for f in files[:20])
                    + (f" (+{len(files) - 20} more)" if len(files) > 20 else "")
                )
        for fam, files in sorted((reuse.get("adapter_changes") or {}).items()):
            out.append(
                f"adapter-only changes in `{esc(fam)}` "
                "(model gate required on the new build): " + ", ".join(f"`{esc(f)}`" for f in files[:10])
            )
    return [*out, ""]


# -- the whole report ----------------------------------------------------------------------
def _provenance(ev: Evidence, ctx: ReportContext) -> object:
    """Where the evidence was made: the evidence's own record, else the one run's manifest."""
    prov = (ev.get("run") or {}).get("provenance")
    dirs = ctx.get("run_dirs") or []
    if prov is None and len(dirs) == 1 and not ev.get("merged_from"):
        try:
            manifest = json.loads((Path(dirs[0]) / "manifest.json").read_text("utf-8"))
            prov = manifest.get("provenance")
        except (OSError, ValueError, AttributeError):
            prov = None
    return prov


def _cannot_start_block(entries: list[JsonObject]) -> list[str]:
    """Right under the verdict line: each executable that could not start, with the
    server's own last output (a few lines)."""
    out: list[str] = []
    for e in entries:
        lines = e.get("last_lines")
        said = [str(x) for x in lines] if isinstance(lines, list) else []
        out += [
            f"> **The {esc(str(e.get('role')))} executable cannot start.** `{esc(str(e.get('executable')))}` "
            f"exited with status {e.get('exit_code')} before it was ready ({esc(str(e.get('run')))}, its first "
            "start); parval tried no other start of it."
        ]
        if said:
            out += [f"> Its last {e.get('stream') or 'output'} lines:", ">", *[f">     {x}" for x in said]]
        else:
            out += ["> It printed nothing."]
        out += [""]
    return out


def _header(ev: Evidence, ctx: ReportContext | None = None) -> list[str]:
    ident = ev["identity"]
    v = ev["verdict"]
    out = [
        f"**parval: {v['line']}**",
        "",
        *_cannot_start_block(v.get("cannot_start") or []),
        f"Model `{ident['model']}` ({ident['family']}, {ident['task']}, {ident['mode']}) on "
        f"`{ident['backend']}` · candidate `{str(ident['candidate_sha256'])[:12]}` · "
        f"baseline `{str(ident['baseline_sha256'])[:12]}` · "
        f"procedure {ev['procedure_version']} · "
        f"parval {ev.get('parval_version', '?')}",
        "",
        f"admission_ready: **{str(ev['admission_ready']).lower()}** · all_plan_rules: "
        f"{str(ev['all_plan_rules']).lower()} · admitted counts: "
        f"{', '.join(map(str, v['admitted_counts'])) or 'none'} · exit code {v['exit_code']}",
        "",
    ]
    for line in (ctx or {}).get("integrity") or []:
        out += [f"{esc(line)[:1].upper()}{esc(line)[1:]}", ""]
    changed = ev.get("rules_changed") or {}
    if changed:
        recorded = changed.get("recorded_verdict")
        was = recorded.get("line") if isinstance(recorded, dict) else None
        reasons = changed.get("reasons")
        out += ["> ⚠️ Judged under rules changed after the run's events: never admission evidence.", ">"]
        out += [f"> - {esc(str(r))}" for r in (reasons if isinstance(reasons, list) else [])]
        out += [f"> - verdict under the changed rules: {esc(str(was))}" if was else ">", ""]
    prov = _provenance(ev, ctx or {})
    if prov is not None:
        out += [f"Evidence made: **{esc(label(prov))}** (local and CI results are kept apart)", ""]
    if ev.get("merged_from"):
        out += [
            f"Merged from {len(ev['merged_from'])} runs (same executables, model files and fixtures):",
            "",
            "| run | shard | counts | plan sha256 | that run alone |",
            "|---|---|---|---|---|",
        ]
        for r in ev["merged_from"]:
            shard = f"{s[0]}/{s[1]}" if (s := r.get("shard")) else "–"
            out.append(
                f"| `{esc(r['dir'])}` | {shard} | {r['counts']} "
                f"| {short(r.get('plan_sha256'), 12)} | "
                f"{esc(r['verdict'])[:120]} |"
            )
        out += ["", "events sha256 per run: " + ", ".join(short(r.get("events_sha256"), 12) for r in ev["merged_from"])]
        out.append("")
    if (ev.get("run") or {}).get("interrupted"):
        out += ["> ⚠️ A run was interrupted: this evidence is partial.", ""]
    return out


def render_markdown(
    ev: Evidence,
    *,
    plots: list[tuple[str, str]] | None = None,
    plot_note: str | None = None,
    context: ReportContext | None = None,
) -> str:
    ctx = context or {}
    top = _header(ev, ctx)
    top += [
        "### Checks (M1–M6 model gate, F1–F6 shared framework gate)",
        "",
        *check_table(ev),
        "",
        other_line(ev),
        "",
        *framework_lines(ev),
    ]
    fails = [(n, a) for n, a in detailed(ev) if a["status"] == "FAIL"]
    unresolved = unresolved_lines(ev)
    if fails or unresolved:
        top += ["### Why it is not admitted", ""]
    for n, a in fails:
        top += explain_failure(n, a, ev, ctx)
    if unresolved:
        top += ["Still unresolved (evidence collected; validation pending for these):", "", *unresolved, ""]
    mid = ["### Performance (separate from admission)", "", performance_table_markdown(ev["performance"]), ""]
    if plots:
        mid += ["### Memory", ""] + [f"![{label}]({path})" for label, path in plots] + [""]
    elif plot_note:
        mid += ["### Memory", "", plot_note, ""]
    run: RunInfo = ev.get("run") or {}
    hashes = [
        f"{name} sha256 {str(value)[:16]}"
        for name, value in (
            ("events", run.get("events_sha256")),
            ("manifest", run.get("manifest_sha256")),
            ("plan", run.get("plan_sha256")),
        )
        if value
    ]
    if ev.get("merged_from"):
        hashes.append(f"merged from {len(ev['merged_from'])} runs (see each run's hashes above)")
    foot = ["", "<sub>" + " · ".join(hashes) + "</sub>", ""]
    head = "\n".join(top + mid)
    for cap in (2000, 600, 0):
        body = "\n".join(["### Every assertion", "", *_all_details(ev, cap)] + foot)
        if len(head) + len(body) <= COMMENT_LIMIT:
            break
    return head + "\n" + body
