"""Evidence → markdown that reads well as a pull-request comment.

Order: the verdict line; the M1-M6 / F1-F6 table (per count); why it is not admitted
(every FAIL with its requests, slot histories, both hashes and reproduction commands; then
what is still pending, grouped by reason); the performance table; the memory plots; one
collapsible `<details>` section per assertion with its evidence and reproduction. The text
is kept under GitHub's comment limit by shortening the evidence excerpts first.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from parval.gates.performance import performance_table_markdown
from parval.provenance import label
from parval.status import Status, combine

ICON = {"PASS": "✅", "FAIL": "❌", "PENDING": "⏳", "BLOCKED": "⛔", "UNSUPPORTED": "🚫",
        "NOT_APPLICABLE": "➖"}
MODEL_GROUPS = {"M1": "Scope / serial quality", "M2": "Every admitted count",
                "M3": "Mixed / repeated quality", "M4": "Model recovery", "M5": "Memory reuse",
                "M6": "Execution modes"}
FRAMEWORK_GROUPS = {"F1": "Scheduling and compatibility", "F2": "Load / configuration transitions",
                    "F3": "Failure / resource lifetime", "F4": "Disconnect / shutdown",
                    "F5": "Multiple models / eviction", "F6": "Regressions / sanitizers"}
OTHER_GROUPS = ["X1", "X2", "X3", "X4", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
GROUPS = [*OTHER_GROUPS[:4], *MODEL_GROUPS, *FRAMEWORK_GROUPS, *OTHER_GROUPS[4:]]
COMMENT_LIMIT = 60_000  # GitHub refuses comments over 65,536 characters
MAX_ROWS = 10
UNRESOLVED = ("BLOCKED", "UNSUPPORTED", "PENDING")


def _esc(text: Any) -> str:
    """Safe inside a table cell; `<` outside code spans is escaped (GitHub hides unknown tags)."""
    parts = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _group(id_: str) -> str:
    return id_.split(".", 1)[0]


def _short(h: Any, n: int = 16) -> str:
    return f"`{str(h)[:n]}…`" if h else "–"


# -- gathering the detailed (per count / model-level / framework) entries -------------------
def detailed(ev: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
    """Every judged entry with its count (None for model-level and most framework entries)."""
    out: list[tuple[int | None, dict[str, Any]]] = []
    for a in ev["model_checks"].get("model_level", []):
        out.append((None, a))
    for n, c in sorted(ev["model_checks"]["per_count"].items(), key=lambda kv: int(kv[0])):
        for a in c.get("assertions", []):
            out.append((int(n), a))
    for a in ev["framework_checks"].get("results", []):
        out.append((a.get("count"), a))  # a count the framework record does not cover
    return out


def _count_sources(ev: dict[str, Any], count: int | None) -> list[str]:
    run = ev.get("run") or {}
    if count is not None and run.get("count_sources"):
        return list(run["count_sources"].get(str(count)) or [])
    return [str(run["dir"])] if run.get("dir") else list((run.get("count_sources") or {}).get("1") or [])


# -- the check table -----------------------------------------------------------------------
def _status_of(entries: list[dict[str, Any]]) -> str:
    return str(combine(Status(a["status"]) for a in entries))


def check_table(ev: dict[str, Any]) -> list[str]:
    counts = sorted(int(n) for n in ev["model_checks"]["per_count"])
    entries = detailed(ev)
    head = "| group | status | " + " | ".join(f"count {n}" for n in counts) + " | not passing |"
    rows = [head, "|---|---|" + "---|" * len(counts) + "---|"]
    titles = {**MODEL_GROUPS, **FRAMEWORK_GROUPS}
    for g, title in titles.items():
        mine = [(n, a) for n, a in entries if _group(a["id"]) == g]
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
        rows.append(f"| **{g}** {title} | {ICON[st]} {st} | " + " | ".join(cells)
                    + f" | {_esc(', '.join(listed[:6]) + more)} |")
    verdicts = ev["verdict"].get("counts", {})
    admitted = set(ev["verdict"].get("admitted_counts", []))
    cells = [f"{ICON.get(verdicts.get(str(n), 'PENDING'), '')} {verdicts.get(str(n), '?')}"
             + (" **admitted**" if n in admitted else "") for n in counts]
    rows.append("| **count verdict** | | " + " | ".join(cells) + " | |")
    return rows


def other_line(ev: dict[str, Any]) -> str:
    by_id = {a["id"]: a for a in ev["assertions"]}
    x = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[:4] if i in by_id)
    q = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[4:] if i in by_id)
    return f"Execution path: {x} — quality rules: {q}"


# -- why it is not admitted ----------------------------------------------------------------
def _history(h: Any) -> str:
    if h is None:
        return "(unknown)"
    if not h:
        return "(fresh slot)"
    return " → ".join(str(x) for x in h)


def _where(m: dict[str, Any]) -> list[str]:
    return [_esc(m.get("run", "–")), f"{_esc(m.get('phase', '–'))} · {m.get('wave', '–')}",
            f"`{_esc(m.get('req', '–'))}`", _esc("–" if m.get("slot") is None else m["slot"]),
            _esc(_history(m.get("history")))]


def mismatch_table(items: list[dict[str, Any]], total: int) -> list[str]:
    rows = ["| # | run | phase · wave | request | slot | slot history | got (canonical sha256) | reference (canonical sha256) |",
            "|---|---|---|---|---|---|---|---|"]
    for i, m in enumerate(items[:MAX_ROWS], 1):
        ref = f"{_short(m.get('ref_canon'))} ({_esc(m.get('ref', ''))})"
        rows.append(f"| {i} | " + " | ".join(_where(m)) + f" | {_short(m.get('got_canon'))} | {ref} |")
    if total > min(len(items), MAX_ROWS):
        rows += ["", f"… {total - min(len(items), MAX_ROWS)} more in evidence.json."]
    return rows


def error_table(items: list[dict[str, Any]], total: int, what: str) -> list[str]:
    rows = [f"{what}:", "", "| # | run | phase · wave | request | slot | slot history | outcome |",
            "|---|---|---|---|---|---|---|"]
    for i, m in enumerate(items[:MAX_ROWS], 1):
        outcome = m.get("error") or m.get("problem") or m.get("outcome") or m.get("ref") or ""
        status = f"HTTP {m['status']}: " if m.get("status") else ""
        rows.append(f"| {i} | " + " | ".join(_where(m)) + f" | {_esc(status + str(outcome))[:200]} |")
    if total > min(len(items), MAX_ROWS):
        rows += ["", f"… {total - min(len(items), MAX_ROWS)} more in evidence.json."]
    return rows


def generic_evidence(evidence: dict[str, Any]) -> list[str]:
    """Lists of records as small tables, scalars as one line: for FAILs without mismatches."""
    lines: list[str] = []
    scalars = []
    for key, value in sorted(evidence.items()):
        if key in ("per_count", "status_before_negative_control", "status_before_serial_check"):
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            cols = [k for k in value[0] if isinstance(value[0][k], str | int | float | bool) or value[0][k] is None][:7]
            if not cols:
                continue
            lines += [f"`{key}`:", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            for v in value[:MAX_ROWS]:
                lines.append("| " + " | ".join(_esc(v.get(c, ""))[:80] for c in cols) + " |")
            if len(value) > MAX_ROWS:
                lines += ["", f"… {len(value) - MAX_ROWS} more in evidence.json."]
            lines.append("")
        elif isinstance(value, str | int | float | bool) or value is None:
            scalars.append(f"{key}={value}")
    if scalars:
        lines.append("Facts: " + _esc(", ".join(scalars[:12])))
    return lines


def campaign_command(ev: dict[str, Any], count: int | None) -> str:
    """`parval run PLAN [--shard i/n]` for the run that judged `count` (any run if None)."""
    runs = ev.get("merged_from") or [{**(ev.get("run") or {}), "counts": None}]
    run = next((r for r in runs if count is None or r.get("counts") is None or count in r["counts"]), runs[0])
    cmd = f"parval run {shlex.quote(str(run.get('plan') or 'PLAN'))}"
    if run.get("shard"):
        cmd += f" --shard {run['shard'][0]}/{run['shard'][1]}"
    return cmd


def reproduce_block(a: dict[str, Any], first: dict[str, Any] | None, ev: dict[str, Any],
                    context: dict[str, Any], count: int | None) -> list[str]:
    cmds: list[str | None] = ["# the whole campaign, as parval ran it:",
                              a.get("reproduction") or campaign_command(ev, count)]
    if first is not None:
        argv = (context.get("argv") or {}).get(str(first.get("run")))
        req = first.get("req")
        if argv:
            cmds += ["" if cmds else None, f"# this server alone ({first.get('run')}), exactly as started:",
                     " ".join(shlex.quote(x) for x in argv)]
        history = first.get("history") or []
        bodies = context.get("requests") or {}
        if req in bodies:
            if history:
                cmds.append(f"# send the slot's history first, one at a time: {', '.join(map(str, history))}")
            payload = json.dumps({"model": ev["identity"]["model"], "request": bodies[req]}, sort_keys=True)
            cmds += [f"# then request '{req}' (port: see the server's config.json):",
                     "curl -sS http://127.0.0.1:$PORT/v1/tasks/run -H 'Content-Type: application/json' \\",
                     f"  -d {shlex.quote(payload)}"]
        if first.get("artifact") and (first.get("ref_artifact") or first.get("ref_canon")):
            dirs = _count_sources(ev, count)
            base = dirs[0] if dirs else "RUN_DIR"
            cmds += ["" if cmds else None, "# compare the two recorded responses byte for byte:",
                     f"cmp {base}/artifacts/{first['artifact']}.json {base}/artifacts/{first.get('ref_artifact')}.json"]
    lines = [c for c in cmds if c is not None]
    if not lines:
        return []
    return ["Reproduce:", "", "```sh", *lines, "```", ""]


def explain_failure(count: int | None, a: dict[str, Any], ev: dict[str, Any],
                    context: dict[str, Any]) -> list[str]:
    where = f" at count {count}" if count is not None else ""
    lines = [f"#### ❌ {a['id']}{where}", "", _esc(a.get("reason", "")), ""]
    e = a.get("evidence") or {}
    mism = e.get("mismatches") or []
    first: dict[str, Any] | None = None
    if mism:
        total = int(e.get("mismatch_count", len(mism)))
        first = mism[0]
        lines += mismatch_table(mism, total) + [""]
        lines += [f"First mismatch: got canonical sha256 `{first.get('got_canon')}` (artifact "
                  f"`{first.get('artifact')}`), reference `{first.get('ref_canon')}` "
                  f"(artifact `{first.get('ref_artifact')}`)."]
        ga, ra = (first.get("got_audio") or {}), (first.get("ref_audio") or {})
        if ga or ra:
            lines[-1] += f" Audio: got {_audio(ga)}, reference {_audio(ra)}."
        lines.append("")
    for key, what in (("errors", "Request errors"), ("malformed", "Malformed replies"),
                      ("indeterminate", "Indeterminate outcomes"), ("no_reference", "Outputs without a same-history reference")):
        items = e.get(key) or []
        if items:
            first = first or items[0]
            lines += error_table(items, int(e.get(f"{key}_count", len(items))), what) + [""]
    if not mism and not any(e.get(k) for k in ("errors", "malformed", "indeterminate", "no_reference")):
        lines += generic_evidence(e) + [""]
        first = next((v[0] for v in e.values() if isinstance(v, list) and v and isinstance(v[0], dict)
                      and v[0].get("run")), None)
    lines += reproduce_block(a, first, ev, context, count)
    return lines


def _audio(info: dict[str, Any]) -> str:
    parts = []
    for name, v in info.items():
        if isinstance(v, dict):
            parts.append(f"{name} {v.get('frames')} frames @ {v.get('sample_rate')} Hz sha256 {_short(v.get('sha256'), 12)}")
    return "; ".join(parts) or "–"


def unresolved_lines(ev: dict[str, Any]) -> list[str]:
    groups: dict[tuple[str, str], list[str]] = {}
    for n, a in detailed(ev):
        if a["status"] in UNRESOLVED:
            label = a["id"] + (f"@{n}" if n is not None else "")
            groups.setdefault((a["status"], a.get("reason", "")), []).append(label)
    lines = []
    for (status, reason), ids in sorted(groups.items(), key=lambda kv: (UNRESOLVED.index(kv[0][0]), -len(kv[1]))):
        shown = ", ".join(ids[:8]) + (f" (+{len(ids) - 8} more)" if len(ids) > 8 else "")
        lines.append(f"- {ICON[status]} **{status}** {_esc(shown)}: {_esc(reason)[:300]}")
    return lines


# -- per-assertion details -----------------------------------------------------------------
def _details(a: dict[str, Any], per: list[tuple[int | None, dict[str, Any]]], cap: int) -> list[str]:
    open_attr = " open" if a["status"] == "FAIL" else ""
    lines = [f"<details{open_attr}><summary>{ICON[a['status']]} <b>{a['id']}</b> {a['status']} — "
             f"{_esc(a.get('reason', ''))[:200]}</summary>", ""]
    counted = [(n, x) for n, x in per if n is not None]
    if counted:
        lines += ["| count | status | reason |", "|---|---|---|"]
        for n, x in counted:
            lines.append(f"| {n} | {ICON[x['status']]} {x['status']} | {_esc(x.get('reason', ''))[:300]} |")
        lines.append("")
    if a.get("reproduction"):
        lines += ["Reproduce:", "", "```sh", a["reproduction"], "```", ""]
    if a.get("limitations"):
        lines += ["Limitations: " + _esc("; ".join(a["limitations"])), ""]
    if cap > 0:
        worst = next((x for _, x in per if x["status"] == a["status"]), a)
        text = json.dumps(worst.get("evidence", {}), indent=1, sort_keys=True, default=str)
        if len(text) > cap:
            text = text[:cap] + "\n… (shortened; the full evidence is in evidence.json)"
        lines += ["```json", text, "```", ""]
    lines += ["</details>", ""]
    return lines


def _all_details(ev: dict[str, Any], cap: int) -> list[str]:
    by_id: dict[str, list[tuple[int | None, dict[str, Any]]]] = {}
    for n, x in detailed(ev):
        by_id.setdefault(x["id"], []).append((n, x))
    out: list[str] = []
    for a in ev["assertions"]:
        out += _details(a, by_id.get(a["id"], []), cap)
    return out


# -- the framework record this evidence relies on ----------------------------------------------
def framework_lines(ev: dict[str, Any]) -> list[str]:
    """Which framework record was used (or why not), its count coverage and any reviewed reuse."""
    fw = ev.get("framework_checks") or {}
    rec, reuse, cov = fw.get("record"), fw.get("reuse"), fw.get("coverage")
    if rec is None and reuse is None:
        return []
    out = ["### Framework record", ""]
    if rec is not None:
        out.append(f"Record `{_esc(rec.get('id'))}` ({_esc(rec.get('path'))}), procedure "
                   f"{_esc(rec.get('procedure_version'))}: "
                   + ("used" if fw.get("trusted") else f"not used: {_esc(fw.get('untrusted_reason'))}"))
    if cov and cov.get("missing"):
        out.append(f"Counts it does not cover (not admissible on it): {cov['missing']} "
                   f"(record counts {cov.get('record_counts')}).")
    if reuse is not None:
        out += ["", f"Reuse: **{_esc(reuse.get('status'))}** — {_esc(reuse.get('reason'))}", "",
                "Framework paths diffed (" + _esc(reuse.get("record_commit", ""))[:12] + " → "
                + _esc(reuse.get("candidate_commit", ""))[:12] + "): "
                + ", ".join(f"`{p}`" for p in reuse.get("framework_paths", []))]
        for key, title in (("changed_framework", "changed framework files"), ("other_changed", "other changed files")):
            files = reuse.get(key) or []
            if files:
                out.append(f"{title}: " + ", ".join(f"`{_esc(f)}`" for f in files[:20])
                           + (f" (+{len(files) - 20} more)" if len(files) > 20 else ""))
        for fam, files in sorted((reuse.get("adapter_changes") or {}).items()):
            out.append(f"adapter-only changes in `{_esc(fam)}` (model gate required on the new build): "
                       + ", ".join(f"`{_esc(f)}`" for f in files[:10]))
    return [*out, ""]


# -- the whole report ----------------------------------------------------------------------
def _provenance(ev: dict[str, Any], ctx: dict[str, Any]) -> Any:
    """Where the evidence was made: the evidence's own record, else the one run's manifest."""
    prov = (ev.get("run") or {}).get("provenance")
    dirs = ctx.get("run_dirs") or []
    if prov is None and len(dirs) == 1 and not ev.get("merged_from"):
        try:
            prov = json.loads((Path(dirs[0]) / "manifest.json").read_text("utf-8")).get("provenance")
        except (OSError, ValueError, AttributeError):
            prov = None
    return prov


def _header(ev: dict[str, Any], ctx: dict[str, Any] | None = None) -> list[str]:
    ident = ev["identity"]
    v = ev["verdict"]
    out = [
        f"**parval: {v['line']}**",
        "",
        f"Model `{ident['model']}` ({ident['family']}, {ident['task']}, {ident['mode']}) on "
        f"`{ident['backend']}` · candidate `{str(ident['candidate_sha256'])[:12]}` · "
        f"baseline `{str(ident['baseline_sha256'])[:12]}` · procedure {ev['procedure_version']} · "
        f"parval {ev.get('parval_version', '?')}",
        "",
        f"admission_ready: **{str(ev['admission_ready']).lower()}** · all_plan_rules: "
        f"{str(ev['all_plan_rules']).lower()} · admitted counts: "
        f"{', '.join(map(str, v['admitted_counts'])) or 'none'} · exit code {v['exit_code']}",
        "",
    ]
    prov = _provenance(ev, ctx or {})
    if prov is not None:
        out += [f"Evidence made: **{_esc(label(prov))}** (local and CI results are kept apart)", ""]
    if ev.get("merged_from"):
        out += [f"Merged from {len(ev['merged_from'])} runs (same executables, model files and fixtures):", "",
                "| run | shard | counts | plan sha256 | that run alone |", "|---|---|---|---|---|"]
        for r in ev["merged_from"]:
            shard = f"{r['shard'][0]}/{r['shard'][1]}" if r.get("shard") else "–"
            out.append(f"| `{_esc(r['dir'])}` | {shard} | {r['counts']} | {_short(r.get('plan_sha256'), 12)} | "
                       f"{_esc(r['verdict'])[:120]} |")
        out += ["", "events sha256 per run: " + ", ".join(_short(r.get("events_sha256"), 12)
                                                         for r in ev["merged_from"])]
        out.append("")
    if (ev.get("run") or {}).get("interrupted"):
        out += ["> ⚠️ A run was interrupted: this evidence is partial.", ""]
    return out


def render_markdown(ev: dict[str, Any], *, plots: list[tuple[str, str]] | None = None,
                    plot_note: str | None = None, context: dict[str, Any] | None = None) -> str:
    ctx = context or {}
    top = _header(ev, ctx)
    top += ["### Checks (M1–M6 model gate, F1–F6 shared framework gate)", "", *check_table(ev), "",
            other_line(ev), "", *framework_lines(ev)]
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
    run = ev.get("run") or {}
    hashes = [f"{name} sha256 {str(run[key])[:16]}" for name, key in
              (("events", "events_sha256"), ("manifest", "manifest_sha256"), ("plan", "plan_sha256"))
              if run.get(key)]
    if ev.get("merged_from"):
        hashes.append(f"merged from {len(ev['merged_from'])} runs (see each run's hashes above)")
    foot = ["", "<sub>" + " · ".join(hashes) + "</sub>", ""]
    head = "\n".join(top + mid)
    for cap in (2000, 600, 0):
        body = "\n".join(["### Every assertion", "", *_all_details(ev, cap)] + foot)
        if len(head) + len(body) <= COMMENT_LIMIT:
            break
    return head + "\n" + body


CATALOGUE_HEAD = ["| run | model | family | task | backend | mode | admitted counts | blocking assertions | date | candidate sha256 |",
                  "|---|---|---|---|---|---|---|---|---|---|"]


def render_catalogue_markdown(root: str, rows: list[dict[str, Any]],
                              history: list[dict[str, Any]] | None = None) -> str:
    """Current runs; then superseded runs and historical records, each apart (never current)."""
    current = [r for r in rows if not r.get("superseded_by")]
    superseded = [r for r in rows if r.get("superseded_by")]
    admitted = sum(1 for r in current if r.get("admission_ready"))
    out = [f"**parval catalogue: {len(rows)} run(s) under `{_esc(root)}`, {admitted} admission-ready**", "",
           *CATALOGUE_HEAD, *_catalogue_rows(current)]
    if superseded:
        out += ["", f"Superseded runs ({len(superseded)}; kept, replaced by a newer run of the same "
                "model/backend/task/mode/shard):", "", *CATALOGUE_HEAD, *_catalogue_rows(superseded)]
        out += [f"- `{_esc(r['dir'])}` superseded by `{_esc(r['superseded_by'])}`" for r in superseded]
    if history:
        out += ["", f"Historical records ({len(history)}; imported with `parval import`, never count toward "
                "admission):", "",
                "| record | model | backend | procedure | entries | failures retained | limitations | "
                "imported | tested candidate sha256 |", "|---|---|---|---|---|---|---|---|---|"]
        for h in history:
            if "error" in h:
                out.append(f"| `{_esc(h['dir'])}` | ❌ {_esc(h['error'])} | | | | | | | |")
                continue
            fails = ", ".join(h["failures"][:4]) + (f" (+{len(h['failures']) - 4})" if len(h["failures"]) > 4 else "")
            out.append(f"| `{_esc(h['dir'])}` | {_esc(h['model'])} | {_esc(h['backend'])} | "
                       f"{_esc(h['procedure_version'])} | {h['entries']} | {_esc(fails) or '–'} | "
                       f"{h['limitations']} | {_esc(h['imported_at'])} | {_short(h['candidate_sha256'], 12)} |")
    return "\n".join(out) + "\n"


def _catalogue_rows(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for r in rows:
        if "error" in r:
            out.append(f"| `{_esc(r['dir'])}` | ❌ {_esc(r['error'])} | | | | | | | | |")
            continue
        block = r["blocking"]
        shown = ", ".join(block[:3]) + (f" (+{len(block) - 3} more)" if len(block) > 3 else "")
        counts = ", ".join(map(str, r["admitted_counts"])) or "none"
        shard = f" (shard {r['shard'][0]}/{r['shard'][1]})" if r.get("shard") else ""
        made = f" ({_esc(label(r['provenance']))})" if r.get("provenance") else ""
        out.append(f"| `{_esc(r['dir'])}`{shard}{made} | {_esc(r['model'])} | {_esc(r['family'])} | {_esc(r['task'])} | "
                   f"{_esc(r['backend'])} | {_esc(r['mode'])} | {counts} | {_esc(shown) or '–'} | "
                   f"{_esc(r['date'])} | {_short(r['candidate_sha256'], 12)} |")
    return out
