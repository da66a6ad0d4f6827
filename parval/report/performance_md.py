"""The performance report (P5) as markdown: the procedure's table columns exactly, then cold
start, independent-server and HTTP 503 rejection tables, so a reviewer reads speed next to
the quality verdicts that decide admission."""

from __future__ import annotations

from collections.abc import Mapping

from parval.gates.performance import MIN_WARM_REPEATS, TABLE_COLUMNS
from parval.jsonread import as_float
from parval.report.md_base import esc
from parval.rundir.evidence_types import Performance, TimeStats


def time_cell(st: TimeStats | None) -> str:
    if st is None:
        return "not measured"
    if st.get("blocked"):
        return f"memory blocked: {st['blocked']}"
    if st["median_s"] is None:
        return "pending (no clean repeats)"
    cell = f"{st['median_s']:.3f} s ({st['min_s']:.3f}–{st['max_s']:.3f}, n={st['n']})"
    if st["estimate"]:
        cell += " **estimate** (N x one request, not measured)"
    if st["n"] < MIN_WARM_REPEATS:
        cell += f" pending: n<{MIN_WARM_REPEATS}"
    if st["failed_repeats"]:
        cell += f"; {st['failed_repeats']} failed repeats excluded"
    return cell


def pct_cell(pct: float | None, admitted: bool, vs_estimate: bool = False) -> str:
    """A time saved, labelled when its count is not admitted (faster or slower, the figure
    is of a server whose answers are not shown to be right)."""
    if pct is None:
        return "n/a"
    cell = f"{pct:+.1f}%"
    if vs_estimate:
        cell += " (vs estimate)"
    if not admitted:
        cell += " (not admitted)"
    return cell


def checks_cell(checks: str, admitted: bool, failed: bool) -> str:
    """The row's verdicts: a row with a FAIL is NOT ADMITTED (bold); one still pending is
    not admitted yet, which is not a failure."""
    if admitted:
        return checks
    if failed:
        return f"**NOT ADMITTED** — {checks}"
    return f"not admitted yet — {checks}"


def campaign_line(o: Mapping[str, object] | None) -> str:
    """How long the campaign took and what it ran. The server-time and overhead figures stay
    in evidence.json: they sum every request's service time, so with requests served
    concurrently they exceed the wall time and say nothing about parval's own cost."""
    if not o:
        return "Campaign: its duration is not available (the campaign did not end)."
    return (
        f"Campaign: {as_float(o['wall_s']):.1f} s from start to end, {o['requests']} requests "
        f"over {o['starts']} server starts."
    )


def performance_table_markdown(perf: Performance) -> str:
    """The P5 table (exact procedure columns), then cold, independent-server and 503 tables."""
    memory = perf.get("memory_verdict", "?")
    lines = [
        f"Performance: **{perf['status']}** (separate from admission). "
        f"Quality: model checks {perf.get('model_checks', '?')}; "
        f"shared framework checks {perf.get('framework_checks', '?')}; memory (M5) {memory}.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "|" + "---|" * len(TABLE_COLUMNS),
    ]
    for r in perf["rows"]:
        failed = any(str(v).startswith("FAIL") for v in (r["model_checks"], r["framework_checks"], memory))
        checks = checks_cell(f"{r['model_checks']}; memory {memory}", r["admitted"], failed)
        base_n = r["base_n_serial"]
        cells = [
            f"{r['backend_model']} (N={r['count']})",
            checks,
            r["framework_checks"],
            time_cell(r["base_one_request"]),
            time_cell(r["candidate_one_slot"]),
            pct_cell(r["one_request_saved_pct"], r["admitted"]),
            time_cell(base_n),
            time_cell(r["candidate_n_slots"]),
            pct_cell(r["n_saved_pct"], r["admitted"], bool(base_n and base_n["estimate"])),
        ]
        lines.append("| " + " | ".join(esc(c) for c in cells) + " |")

    lines += [
        "",
        "| N | row status | cold s (base / candidate 1 slot / candidate N) | independent one-slot servers (optional) |",
        "|---|---|---|---|",
    ]
    for r in perf["rows"]:
        colds = " / ".join(
            "n/a" if st is None or st.get("cold_s") is None else f"{st['cold_s']:.3f}"
            for st in (r["base_one_request"], r["candidate_one_slot"], r["candidate_n_slots"])
        )
        indep = r["independent_servers"]
        indep_cell = (
            indep
            if isinstance(indep, str)
            else f"{time_cell(indep)}; candidate N slots {pct_cell(indep['candidate_saved_pct'], r['admitted'])}"
        )
        status = r["status"] + (f" ({'; '.join(r['pending'])})" if r["pending"] else "")
        lines.append(f"| {r['count']} | {esc(status)} | {colds} | {esc(indep_cell)} |")

    lines += [
        "",
        "HTTP 503 rejection latency (not generation time):",
        "",
        "| N | median ms (min–max, n) |",
        "|---|---|",
    ]
    if not perf.get("rejection_latency"):
        lines.append("| – | not measured |")
    for p in perf.get("rejection_latency") or []:
        cell = (
            "not measured"
            if p["median_ms"] is None
            else f"{p['median_ms']:.3f} ms ({p['min_ms']:.3f}–{p['max_ms']:.3f}, n={p['n']})"
        )
        if p.get("not_503"):
            cell += f"; {p['not_503']} repl(y/ies) not 503 left out"
        lines.append(f"| {p['count']} | {cell} |")
    lines += [""] + [f"- {n}" for n in perf.get("notes", [])]
    if "campaign_overhead" in perf:  # a single run's record; a merged record has one per run
        lines += ["", campaign_line(perf["campaign_overhead"])]
    return "\n".join(lines) + "\n"
