"""Evidence → markdown that reads well as a pull-request comment.

Order: the verdict line with its causes in plain words (and, when the evidence shows it,
that the build ignored --parallel-jobs); whether it is ready for admission and the exit code
in words; the M1-M6 / F1-F6 table (per count); why it is not admitted (see
parval/report/failures_md.py); the performance table; the memory charts (Mermaid, which a
pull-request comment renders); one collapsible `<details>` section per assertion with what it
rests on and its reproduction (the full record is evidence.json). The text is kept under
GitHub's comment limit: per-count tables go first, then whole sections, never mid-table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from parval.jsontypes import JsonObject
from parval.procedure.assertion_ids import group_of
from parval.report.failures_md import explain_failure, unresolved_lines
from parval.report.md_base import ICON, ReportContext, cut, detailed, esc, plain, reproduce_lines, short
from parval.report.performance_md import performance_table_markdown
from parval.rundir.evidence_types import Assertion, AssertionEvidence, Evidence, RunInfo
from parval.rundir.mismatch_bound import cell as bound_cell
from parval.rundir.mismatch_bound import count_bound
from parval.rundir.provenance import label
from parval.rundir.rules_seal import UNKNOWN
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
COMMENT_LIMIT = 60_000  # GitHub refuses comments over 65,536 characters (room for a header)


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
    per_count = ev["model_checks"]["per_count"]
    bounds = [count_bound(per_count[str(n)]["assertions"]) if str(n) in per_count else None for n in counts]
    if any(b is not None for b in bounds):
        rows.append(
            "| **overlapped outputs**, differed, mismatch rate (95 % bound) | | "
            + " | ".join(bound_cell(b) for b in bounds)
            + " | |"
        )
    return rows


def other_line(ev: Evidence) -> str:
    by_id = {a["id"]: a for a in ev["assertions"]}
    x = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[:4] if i in by_id)
    q = " · ".join(f"{i} {ICON[by_id[i]['status']]}" for i in OTHER_GROUPS[4:] if i in by_id)
    return f"Execution path: {x} — quality rules: {q}"


# -- per-assertion details -----------------------------------------------------------------
# The tallies of an output comparison, in reading order: (evidence key, what it counts)
_TALLIES = (
    ("compared", "compared"),
    ("exact", "exact"),
    ("within_declared_tolerance", "within the declared tolerance"),
    ("mismatch_count", "mismatches"),
    ("error_count", "request errors"),
    ("malformed_count", "malformed replies"),
    ("indeterminate_count", "indeterminate"),
    ("no_reference_count", "without a reference"),
)
_COUNT_PREFIX = re.compile(r"^count \d+: ")


def _count_label(key: str) -> str:
    return "model level" if key in ("None", "") else f"count {key}"


def summary(a: Assertion, n: int = 200) -> str:
    """The assertion's reason in one line of at most about `n` characters. An entry judged
    at several counts reads as the counts it holds at (with their reason when it is the same
    at each), not as every count's reason run together."""
    per = facts(a).get("per_count")
    # per_count of count → {status, reason} (Q6's maps counts to their verdicts alone)
    if a["status"] != "PASS" or not isinstance(per, dict) or len(per) < 2:
        return cut(plain(a.get("reason", "")), n)
    entries = {str(k): x for k, x in per.items() if isinstance(x, dict)}
    if len(entries) != len(per):
        return cut(plain(a.get("reason", "")), n)
    reasons = {k: _COUNT_PREFIX.sub("", plain(str(x.get("reason", "")))) for k, x in entries.items()}
    numbered = [k for k in entries if k not in ("None", "")]
    where = f"at counts {', '.join(numbered)}" + (" and model level" if len(numbered) < len(entries) else "")
    if len(set(reasons.values())) == 1:
        return cut(f"{where}: {next(iter(reasons.values()))}", n)
    k = (numbered or list(entries))[0]
    return cut(f"{where}; {_count_label(k)}: {reasons[k]}", n)


def rests_on_lines(evidence: AssertionEvidence) -> list[str]:
    """What the entry rests on, as a small table: the judge's own `rests_on` tally and the
    comparison's non-zero counts."""
    rows: list[tuple[str, str]] = []
    rests = evidence.get("rests_on")
    if isinstance(rests, dict):
        for what, value in rests.items():
            shown = "yes" if value is True else "no" if value is False else value
            rows.append((str(what), str(len(shown)) if isinstance(shown, list | dict) else str(shown)))
    for key, what in _TALLIES:
        if key == "compared" and any("compared" in w for w, _ in rows):
            continue
        value = evidence.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value and (what, str(value)) not in rows:
            rows.append((f"outputs {what}" if key != "compared" else "outputs compared", str(value)))
    if not rows:
        return []
    return ["| rests on | |", "|---|---|", *[f"| {esc(w)} | {esc(v)} |" for w, v in rows], ""]


def _details(a: Assertion, per: list[tuple[int | None, Assertion]], cap: int) -> list[str]:
    """One assertion's collapsible section. `cap`: the longest reason shown per count; 0
    leaves the per-count table and the evidence summary out (to fit the comment limit)."""
    open_attr = " open" if a["status"] == "FAIL" else ""
    lines = [
        f"<details{open_attr}><summary>{ICON[a['status']]} <b>{a['id']}</b> {a['status']} — "
        f"{esc(summary(a))}</summary>",
        "",
    ]
    counted = [(n, x) for n, x in per if n is not None]
    if counted and cap > 0:
        lines += ["| count | status | reason |", "|---|---|---|"]
        for n, x in counted:
            reason = _COUNT_PREFIX.sub("", plain(x.get("reason", "")))
            lines.append(f"| {n} | {ICON[x['status']]} {x['status']} | {esc(cut(reason, cap))} |")
        lines.append("")
    if cap > 0:
        worst = next((x for _, x in per if x["status"] == a["status"]), a)
        lines += rests_on_lines(worst.get("evidence") or {})
    if a.get("reproduction"):
        lines += reproduce_lines([a["reproduction"]])
    if a.get("limitations"):
        lines += ["Limitations: " + esc("; ".join(a["limitations"])), ""]
    if a.get("evidence"):
        lines += [f"Full record: `evidence.json` (assertion `{a['id']}`); the events it rests on: `events.jsonl`.", ""]
    lines += ["</details>", ""]
    return lines


def _per_assertion(ev: Evidence) -> list[tuple[Assertion, list[tuple[int | None, Assertion]]]]:
    """Each assertion with its judged entries (per count where judged per count)."""
    by_id: dict[str, list[tuple[int | None, Assertion]]] = {}
    for n, x in detailed(ev):
        by_id.setdefault(x["id"], []).append((n, x))
    return [(a, by_id.get(a["id"], [])) for a in ev["assertions"]]


def _all_details(ev: Evidence, cap: int) -> list[str]:
    return [x for a, per in _per_assertion(ev) for x in _details(a, per, cap)]


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


# -- the first screen: the verdict and its cause ------------------------------------------------
# The verdict line's list of IDs, which the markdown replaces by the causes behind them
_ID_LIST = re.compile(r"\d+ (?:required assertion\(s\) FAILED|assertion\(s\) unresolved) \([^)]*\)")
# Entries that restate the others: nothing admitted (Q6), not every comparison done (Q5)
_CONSEQUENCES = {"Q6", "Q5"}
_ASIDE = re.compile(r" \((?:[^()]|\([^()]*\))*\)")  # an aside, with one level of nested parentheses
_EXIT_WORDS = {
    0: "exit code 0: admitted",
    1: "exit code 1: not admitted, a required check failed",
    3: "exit code 3: evidence collected, validation pending (nothing failed; something is not yet shown)",
}
LEGACY_ONLY = "this build ignored `--parallel-jobs`: it is a legacy-only build"


def facts(a: Assertion | None) -> Mapping[str, object]:
    """An entry's evidence as plain keys (each gate records its own)."""
    if a is None:
        return {}
    return a.get("evidence") or {}


def legacy_only(ev: Evidence) -> list[str]:
    """What shows that the candidate ignored --parallel-jobs (empty when nothing does): X2
    FAILed and its flagged capacity-one start published no slot fields."""
    by_id = {a["id"]: a for a in ev["assertions"]}
    x2 = by_id.get("X2")
    e2 = facts(x2)
    fields = e2.get("cap1_status_fields")
    if x2 is None or x2["status"] != "FAIL" or not isinstance(fields, dict) or fields.get("slot_fields") is not False:
        return []
    said = ["its /v1/models showed no slot fields"]
    violations = e2.get("violation")
    if isinstance(violations, list) and any("printed no" in str(v) for v in violations):
        said.insert(0, "it printed no experimental-runtime warning")
    shown = ["started with `--parallel-jobs`, " + " and ".join(said)]
    if _x1_accepted_slots(by_id.get("X1")):
        shown.append(
            "started without it, it ran with every explicit `slots` value in its config instead of refusing it"
        )
    return shown


def _x1_accepted_slots(x1: Assertion | None) -> bool:
    probes = facts(x1).get("config_probes")
    return (
        x1 is not None
        and x1["status"] == "FAIL"
        and isinstance(probes, list)
        and bool(probes)
        and all(isinstance(p, dict) and not p.get("rejected") and p.get("exit_code") is None for p in probes)
    )


def cause_of(a: Assertion, ev: Evidence) -> tuple[str, str]:
    """The cause of a not-passing entry in plain words, as (its head, the whole clause): the
    first clause of its reason without asides in parentheses (`every wave output vs its
    reference: 21 mismatch(es)`) and what comes before its colon (entries that share a head
    share a cause), or what the evidence names where the reason says too little."""
    if a["id"] in ("X1", "X2") and legacy_only(ev) and (a["id"] == "X2" or _x1_accepted_slots(a)):
        return LEGACY_ONLY, LEGACY_ONLY
    missing = facts(a).get("missing")
    if a["id"] == "M1.manifest" and isinstance(missing, list) and missing:
        said = cut("the manifest lacks the " + _missing_words(missing), 90)
        return said, said
    reason = _COUNT_PREFIX.sub("", plain(a.get("reason", "")))
    clause = _ASIDE.sub("", reason.split("; ", 1)[0]).strip()
    return cut(clause.split(": ", 1)[0], 70), cut(clause, 80)


def _missing_words(missing: list[object]) -> str:
    """`identity.baseline.source_commit (baseline source commit; ...)` entries as words,
    the baseline's and the candidate's of one thing said once: `baseline and candidate
    source commits`."""
    names = [str(m).split(" (", 1)[1].split(";")[0].rstrip(")") if " (" in str(m) else str(m) for m in missing]
    sides: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        side, _, what = name.partition(" ")
        if side in ("baseline", "candidate") and what:
            sides.setdefault(what, []).append(side)
        else:
            sides.setdefault(name, [])
    return ", ".join(f"{' and '.join(s)} {what}{'s' if len(s) > 1 else ''}" if s else what for what, s in sides.items())


def _ids_text(ids: list[str]) -> str:
    """IDs of one cause: a few by name; many as their group range (F1–F6) and how many."""
    if len(ids) <= 3:
        return ", ".join(ids)
    groups = list(dict.fromkeys(group_of(i) for i in ids))
    letters = {g.rstrip("0123456789") for g in groups}
    if len(groups) > 1 and len(letters) == 1:
        return f"{groups[0]}–{groups[-1]}, {len(ids)} assertions"
    return f"{', '.join(ids[:2])} and {len(ids) - 2} more"


def causes(ev: Evidence) -> tuple[list[str], list[str]]:
    """(FAIL causes, unresolved causes), each `cause (IDs)`, the biggest groups first."""
    order = ("FAIL", "BLOCKED", "UNSUPPORTED", "PENDING")
    groups: dict[tuple[bool, str], list[tuple[str, str]]] = {}
    whole: dict[tuple[bool, str], str] = {}
    for a in ev["assertions"]:
        if a["status"] in order:
            head, clause = cause_of(a, ev)
            key = (a["status"] == "FAIL", head)
            groups.setdefault(key, []).append((a["status"], a["id"]))
            whole[key] = clause
    if any(not any(i in _CONSEQUENCES for _, i in ids) for ids in groups.values()):
        groups = {k: v for k, v in groups.items() if not all(i in _CONSEQUENCES for _, i in v)} or groups

    def rank(item: tuple[tuple[bool, str], list[tuple[str, str]]]) -> tuple[int, int, int]:
        (_, cause), ids = item
        return (cause != LEGACY_ONLY, min(order.index(st) for st, _ in ids), -len(ids))

    fails: list[str] = []
    rest: list[str] = []
    for (failed, head), ids in sorted(groups.items(), key=rank):
        # one entry: its whole clause; several: the head they share
        cause = whole[(failed, head)] if len(ids) == 1 else head
        (fails if failed else rest).append(f"{cause} ({_ids_text([i for _, i in ids])})")
    return fails, rest


def headline(ev: Evidence) -> str:
    """The verdict line with its causes in plain words where the evidence line lists IDs:
    FAIL causes first, then what is still unresolved; at most four causes."""
    line = ev["verdict"]["line"]
    match = _ID_LIST.search(line)
    if match is None:
        return line
    fails, rest = causes(ev)
    # a cause the line already leads with (an executable that cannot start) is said once
    said = line[: match.start()]
    fails, rest = ([c for c in cs if c.rsplit(" (", 1)[0][:60] not in said] for cs in (fails, rest))
    shown = fails[:3] + rest[: max(0, 4 - min(len(fails), 3))]
    more = len(fails) + len(rest) - len(shown)
    text = "; ".join(shown[: len(fails[:3])])
    pending = "; ".join(shown[len(fails[:3]) :])
    if text and pending:
        text += "; still unresolved: " + pending
    else:
        text = text or pending
    if more:
        text += f"; {more} more cause(s) below"
    return line[: match.start()] + text + line[match.end() :]


def _header(ev: Evidence, ctx: ReportContext | None = None) -> list[str]:
    ident = ev["identity"]
    v = ev["verdict"]
    admitted = ", ".join(map(str, v["admitted_counts"])) or "none"
    legacy = legacy_only(ev)
    out = [f"**parval: {headline(ev)}**", "", *_cannot_start_block(v.get("cannot_start") or [])]
    if legacy:
        said = "; ".join(legacy)
        out += [f"> **{LEGACY_ONLY[0].upper()}{LEGACY_ONLY[1:]}.** {said[0].upper()}{said[1:]}.", ""]
    out += [
        ("Ready for admission" if ev["admission_ready"] else "Not ready for admission")
        + f" · admitted counts: {admitted} · "
        + _EXIT_WORDS.get(int(v["exit_code"]), f"exit code {v['exit_code']}"),
        "",
        f"Model `{ident['model']}` ({ident['family']}, {ident['task']}, {ident['mode']}) on "
        f"`{ident['backend']}` · candidate `{str(ident['candidate_sha256'])[:12]}` · "
        f"baseline `{str(ident['baseline_sha256'])[:12]}` · "
        f"procedure {ev['procedure_version']} · "
        f"parval {ev.get('parval_version', '?')}",
        "",
    ]
    for line in (ctx or {}).get("integrity") or []:
        out += [f"{esc(line)[:1].upper()}{esc(line)[1:]}", ""]
    changed = ev.get("rules_changed") or {}
    if changed:
        recorded = changed.get("recorded_verdict")
        was = recorded.get("line") if isinstance(recorded, dict) else None
        reasons = changed.get("reasons")
        every = [str(r) for r in reasons] if isinstance(reasons, list) else []
        unknown = bool(every) and all(UNKNOWN in r for r in every)
        what = "rules that cannot be shown to be those sealed before" if unknown else "rules changed after"
        out += [f"> ⚠️ Judged under {what} the run's events: never admission evidence.", ">"]
        out += [f"> - {esc(r)}" for r in every]
        out += [f"> - verdict under those rules: {esc(str(was))}" if was else ">", ""]
    loose = (ev.get("rules_loosened") or {}).get("reasons")
    if isinstance(loose, list) and loose:
        out += ["> ❌ A FAIL under stricter rules stands: rules loosened after a FAIL.", ">"]
        out += [f"> - {esc(str(r))}" for r in loose]
        out += [""]
    missing = ev.get("closed_list") or {}
    if missing:
        out += [f"> ⚠️ {esc(str(missing.get('reason')))}", ""]
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


def _why(ev: Evidence, ctx: ReportContext, budget: int) -> list[str]:
    """Every FAIL explained (tables, reproduction), then what is unresolved. Past `budget`
    characters the remaining FAILs get their reason alone, so that many FAILs still fit."""
    fails = [(n, a) for n, a in detailed(ev) if a["status"] == "FAIL"]
    unresolved = unresolved_lines(ev)
    if not fails and not unresolved:
        return []
    out = ["### Why it is not admitted", ""]
    brief: list[str] = []
    for n, a in fails:
        full = explain_failure(n, a, ev, ctx)
        if sum(len(x) + 1 for x in out + full) <= budget and not brief:
            out += full
        else:
            where = f" at count {n}" if n is not None else ""
            brief.append(f"- ❌ **{a['id']}**{where}: {esc(cut(plain(a.get('reason', '')), 300))}")
    if brief:
        out += ["More FAILs (each explained in evidence.json):", "", *brief, ""]
    if unresolved:
        out += ["Still unresolved (evidence collected; validation pending for these):", "", *unresolved, ""]
    return out


def _memory_section(memory: list[str] | None, pngs: list[str] | None, plot_note: str | None) -> list[str]:
    out = ["### Memory", ""]
    if memory:
        out += memory
    elif plot_note:
        out += [plot_note, ""]
    else:
        return []
    if pngs:
        names = ", ".join(f"`{esc(p)}`" for p in pngs)
        out += [f"Each count's first start over time, as PNG files beside the evidence: {names}.", ""]
    return out


def _fit(head: list[str], blocks: list[list[str]], foot: list[str], limit: int) -> str:
    """head + as many whole blocks as fit + foot, within `limit` characters."""
    text = "\n".join(head)
    kept: list[str] = []
    size = len(text) + len("\n".join(foot)) + 200
    for block in blocks:
        piece = "\n".join(block)
        if size + len(piece) + 1 > limit:
            left = len(blocks) - len(kept)
            kept.append(
                f"… {left} more section(s) left out to fit a pull-request comment: see report.md and evidence.json."
            )
            break
        kept.append(piece)
        size += len(piece) + 1
    return "\n".join([text, *kept, *foot])


def render_markdown(
    ev: Evidence,
    *,
    memory: list[str] | None = None,
    pngs: list[str] | None = None,
    plot_note: str | None = None,
    context: ReportContext | None = None,
) -> str:
    """The pull-request comment. `memory`: the Mermaid chart lines (render.py reads them
    from the run directories); `pngs`: the PNG timelines beside the evidence, named only."""
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
    top += _why(ev, ctx, COMMENT_LIMIT // 2 - sum(len(x) + 1 for x in top))
    mid = ["### Performance (separate from admission)", "", performance_table_markdown(ev["performance"]), ""]
    mid += _memory_section(memory, pngs, plot_note)
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
    head = top + mid + ["### Every assertion", ""]
    size = sum(len(x) + 1 for x in head + foot)
    for cap in (300, 120, 0):
        blocks = [_details(a, per, cap) for a, per in _per_assertion(ev)]
        if size + sum(len(x) + 1 for b in blocks for x in b) <= COMMENT_LIMIT:
            break
    return _fit(head, blocks, foot, COMMENT_LIMIT)
