"""Evidence → markdown that reads well as a pull-request comment."""

from __future__ import annotations

import json
from typing import Any

from parval.gates.performance import performance_table_markdown

ICON = {"PASS": "✅", "FAIL": "❌", "PENDING": "⏳", "BLOCKED": "⛔", "UNSUPPORTED": "🚫",
        "NOT_APPLICABLE": "➖"}
GROUPS = ["X1", "X2", "X3", "X4", "M1", "M2", "M3", "M4", "M5", "M6",
          "F1", "F2", "F3", "F4", "F5", "F6", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _group_table(ev: dict[str, Any]) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for a in ev["assertions"]:
        groups.setdefault(a["id"].split(".", 1)[0], []).append(a)
    rows = ["| group | status | assertions |", "|---|---|---|"]
    from parval.status import Status, combine

    for g in GROUPS:
        items = groups.get(g, [])
        if not items:
            continue
        st = str(combine(Status(a["status"]) for a in items))
        detail = ", ".join(f"{a['id']} {ICON[a['status']]}" for a in items) if len(items) > 1 else ""
        rows.append(f"| {g} | {ICON[st]} {st} | {detail} |")
    return rows


def _counts_table(ev: dict[str, Any]) -> list[str]:
    per = ev["model_checks"]["per_count"]
    groups = sorted({g for c in per.values() for g in c["groups"]})
    rows = ["| count | verdict | " + " | ".join(groups) + " |", "|---|---|" + "---|" * len(groups)]
    for n, c in sorted(per.items(), key=lambda kv: int(kv[0])):
        verdict = ev["verdict"]["counts"].get(n, c["status"])
        cells = " | ".join(f"{ICON[c['groups'][g]]} {c['groups'][g]}" if g in c["groups"] else "" for g in groups)
        admitted = " (admitted)" if int(n) in ev["verdict"]["admitted_counts"] else ""
        rows.append(f"| {n} | {ICON[verdict]} {verdict}{admitted} | {cells} |")
    return rows


def _details(a: dict[str, Any]) -> list[str]:
    ev = json.dumps(a["evidence"], indent=2, sort_keys=True, default=str)
    if len(ev) > 6000:
        ev = ev[:6000] + "\n… (truncated; full evidence in evidence.json)"
    lines = [f"<details><summary>{ICON[a['status']]} <b>{a['id']}</b> {a['status']} — {_esc(a['reason'])[:200]}</summary>", ""]
    if a.get("reproduction"):
        lines += ["Reproduce:", "", "```sh", a["reproduction"], "```", ""]
    if a.get("limitations"):
        lines += ["Limitations: " + "; ".join(a["limitations"]), ""]
    lines += ["```json", ev, "```", "", "</details>"]
    return lines


def render_markdown(ev: dict[str, Any], *, plots: list[tuple[str, str]] | None = None,
                    plot_note: str | None = None) -> str:
    ident = ev["identity"]
    v = ev["verdict"]
    out = [
        f"**parval: {v['line']}**",
        "",
        f"Model `{ident['model']}` ({ident['family']}, {ident['task']}, {ident['mode']}) on "
        f"`{ident['backend']}` · candidate `{str(ident['candidate_sha256'])[:12]}` · "
        f"baseline `{str(ident['baseline_sha256'])[:12]}` · procedure {ev['procedure_version']} · "
        f"parval {ev['parval_version']}",
        "",
        f"admission_ready: **{str(ev['admission_ready']).lower()}** · all_plan_rules: "
        f"{str(ev['all_plan_rules']).lower()} · admitted counts: "
        f"{', '.join(map(str, v['admitted_counts'])) or 'none'}",
        "",
    ]
    if ev["run"].get("interrupted"):
        out += ["> ⚠️ The run was interrupted: this evidence is partial.", ""]
    out += ["### Checks", "", *_group_table(ev), "", "### Per count", "", *_counts_table(ev), ""]
    out += ["### Performance (separate from admission)", "", performance_table_markdown(ev["performance"]), ""]
    if plots:
        out += ["### Memory", ""] + [f"![{label}]({path})" for label, path in plots] + [""]
    elif plot_note:
        out += ["### Memory", "", plot_note, ""]
    out += ["### Every assertion", ""]
    for a in ev["assertions"]:
        out += _details(a)
    out += ["", f"<sub>events sha256 {ev['run']['events_sha256'][:16]} · manifest sha256 "
            f"{ev['run']['manifest_sha256'][:16]} · plan sha256 {ev['run']['plan_sha256'][:16]}</sub>", ""]
    return "\n".join(out)
