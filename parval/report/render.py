"""Rendering one evidence record (a run's or a merged one): the report next to the
evidence, and `parval report` text in md, json or junit. The markdown carries its memory
charts inline (Mermaid); the PNG timelines stay files beside the evidence, named, not linked
(a pull-request comment cannot show a relative image)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from parval.jsontypes import JsonObject
from parval.report.md_base import ReportContext
from parval.report.plots import StartMemory
from parval.rundir.events import iter_events
from parval.rundir.evidence_types import Evidence, built_record
from parval.rundir.files import atomic_write
from parval.rundir.layout import EVENTS, MANIFEST


def _unloads(run_dir: Path) -> dict[str, bool]:
    """Per server start (its directory name under servers/): whether any unload it was asked
    for succeeded. A start with no unload request is absent."""
    out: dict[str, bool] = {}
    if not (run_dir / EVENTS).exists():
        return out
    for e in iter_events(run_dir / EVENTS):
        if e.get("kind") == "probe" and str(e.get("name", "")).startswith("unload"):
            reply = e.get("reply")
            status = reply.get("status") if isinstance(reply, dict) else None
            key = f"{e.get('run')}-{e.get('attempt')}"
            out[key] = out.get(key, False) or (isinstance(status, int) and 200 <= status < 300)
    return out


def _start_memory(d: Path, unloads: Mapping[str, bool]) -> StartMemory | None:
    samples = (
        [json.loads(x) for x in (d / "memory.jsonl").read_text().splitlines() if x.strip()]
        if (d / "memory.jsonl").exists()
        else []
    )
    if not samples:
        return None
    phases = [tuple(p) for p in json.loads((d / "phases.json").read_text())] if (d / "phases.json").exists() else []
    run = d.name.rsplit("-", 1)[0]
    return StartMemory(run, samples, [(float(t), str(p)) for t, p in phases], unloads.get(d.name, True))


def _memory(run_dir: Path, evidence: Evidence) -> tuple[list[str], list[str], str | None]:
    """Per count: the Mermaid charts of every start's memory (markdown lines), the PNG
    timeline of its first start written beside the evidence (file names; matplotlib
    permitting), and a note when a PNG could not be drawn."""
    from parval.report.plots import mermaid_memory_chart, plot_memory_timeline

    charts: list[str] = []
    pngs: list[str] = []
    note = None
    unloads = _unloads(run_dir)
    for n in sorted(evidence["model_checks"]["per_count"], key=int):
        # servers/count<N>-s<K>-<seq>: one directory per start, in start order
        dirs = sorted(run_dir.glob(f"servers/count{n}-s*-*"), key=lambda d: int(d.name.rsplit("-", 1)[1]))
        starts = [s for d in dirs if (s := _start_memory(d, unloads)) is not None]
        if not starts:
            continue
        charts += mermaid_memory_chart(int(n), starts, key="rss_mib", what="host RSS")
        charts += mermaid_memory_chart(int(n), starts, key="device_used_mib", what="GPU device memory")
        target = run_dir / f"memory-count{n}.png"
        if not target.exists() and note is None:
            first = starts[0]
            title = f"count {n}, start 1 ({dirs[0].name})"
            note = plot_memory_timeline(first.samples, first.transitions, target, title=title, unloaded=first.unloaded)
        if target.exists():
            pngs.append(target.name)
    return charts, pngs, note


def report_context(run_dirs: list[Path], integrity: list[str] | None = None) -> ReportContext:
    """What the markdown needs beyond the evidence to explain a failure: each server's
    command line (by run name), the request bodies (by request name), where each run's
    artifacts are, and what was verified of each run directory before it was read."""
    argv: dict[str, list[str]] = {}
    requests: JsonObject = {}
    for d in run_dirs:
        if (d / EVENTS).exists():
            for e in iter_events(d / EVENTS):
                if e.get("kind") == "server_ready" and e.get("run") and e.get("argv"):
                    argv.setdefault(str(e["run"]), [str(a) for a in e["argv"]])
        if (d / MANIFEST).exists():
            try:
                requests.update(json.loads((d / MANIFEST).read_text("utf-8")).get("requests") or {})
            except ValueError:
                pass
    return {"argv": argv, "requests": requests, "run_dirs": [str(d) for d in run_dirs], "integrity": integrity or []}


def write_reports(run_dir: Path, judged: Mapping[str, object]) -> None:
    """report.md next to evidence.json (plots are linked by file name, beside it), for the
    record the judge has just built."""
    from parval.report.markdown import render_markdown

    evidence = built_record(judged)
    charts, pngs, note = _memory(run_dir, evidence)
    atomic_write(
        run_dir / "report.md",
        render_markdown(evidence, memory=charts, pngs=pngs, plot_note=note, context=report_context([run_dir])),
    )


def render_evidence(
    ev: Evidence,
    fmt: str,
    *,
    run_dirs: list[Path],
    plots: bool = True,
    redact: bool = False,
    integrity: list[str] | None = None,
) -> str:
    """Evidence (one run's or merged) → text in `fmt` (md, json or junit); the markdown's
    memory charts are read from each run directory (`plots`).
    `integrity`: what was verified of each run directory before it was read (stated in the
    markdown; JSON is the evidence record itself, which a modified directory never reaches)."""
    if fmt == "json":
        return json.dumps(ev, indent=2, sort_keys=True) + "\n"
    if fmt == "junit":
        from parval.report.junit import render_junit

        return render_junit(ev)
    from parval.report.markdown import render_markdown

    charts: list[str] = []
    pngs: list[str] = []
    note = None
    if plots:
        for d in run_dirs:
            found, files, note = _memory(d, ev if len(run_dirs) == 1 else _only_run_counts(d, ev))
            charts += found
            pngs += [f if redact or len(run_dirs) == 1 else f"{d.name}/{f}" for f in files]
    return render_markdown(ev, memory=charts, pngs=pngs, plot_note=note, context=report_context(run_dirs, integrity))


def _only_run_counts(run_dir: Path, ev: Evidence) -> Evidence:
    """For a merged report: plot each count from the run that contributed it."""
    sources = (ev.get("run") or {}).get("count_sources") or {}
    keep = {n: c for n, c in ev["model_checks"]["per_count"].items() if str(run_dir) in (sources.get(n) or [])[:1]}
    return {**ev, "model_checks": {**ev["model_checks"], "per_count": keep}}
