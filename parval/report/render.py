"""Rendering one evidence record (a run's or a merged one): the report next to the
evidence, and `parval report` text in md, json or junit with the memory plots linked."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from parval.jsontypes import JsonObject
from parval.report.md_base import ReportContext
from parval.rundir.events import iter_events
from parval.rundir.evidence_types import Evidence, built_record
from parval.rundir.files import atomic_write
from parval.rundir.layout import EVENTS, MANIFEST


def _plots(run_dir: Path, evidence: Evidence) -> tuple[list[tuple[str, str]], str | None]:
    from parval.report.plots import plot_memory_timeline

    plots: list[tuple[str, str]] = []
    note = None
    servers = run_dir / "servers"
    for n in evidence["model_checks"]["per_count"]:
        candidates = sorted(servers.glob(f"count{n}-s1-*"))
        if not candidates:
            continue
        d = candidates[-1]
        samples = (
            [json.loads(x) for x in (d / "memory.jsonl").read_text().splitlines() if x.strip()]
            if (d / "memory.jsonl").exists()
            else []
        )
        phases = [tuple(p) for p in json.loads((d / "phases.json").read_text())] if (d / "phases.json").exists() else []
        if not samples:
            continue
        target = run_dir / f"memory-count{n}.png"
        if not target.exists():
            msg = plot_memory_timeline(samples, phases, target, title=f"count {n}, start 1 ({d.name})")
            if msg:
                note = msg
                break
        plots.append((f"memory timeline, count {n}", str(target.resolve())))
    return plots, note


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
    plots, note = _plots(run_dir, evidence)
    local = [(label, Path(path).name) for label, path in plots]
    atomic_write(
        run_dir / "report.md", render_markdown(evidence, plots=local, plot_note=note, context=report_context([run_dir]))
    )


def render_evidence(
    ev: Evidence,
    fmt: str,
    *,
    run_dirs: list[Path],
    plots: bool = True,
    image_base: Path | None = None,
    redact: bool = False,
    integrity: list[str] | None = None,
) -> str:
    """Evidence (one run's or merged) → text in `fmt` (md, json or junit). Memory plots are
    linked relative to `image_base` (the directory the report is written to; default cwd).
    `integrity`: what was verified of each run directory before it was read (stated in the
    markdown; JSON is the evidence record itself, which a modified directory never reaches)."""
    if fmt == "json":
        return json.dumps(ev, indent=2, sort_keys=True) + "\n"
    if fmt == "junit":
        from parval.report.junit import render_junit

        return render_junit(ev)
    from parval.report.markdown import render_markdown

    images: list[tuple[str, str]] = []
    note = None
    if plots:
        for d in run_dirs:
            found, note = _plots(d, ev if len(run_dirs) == 1 else _only_run_counts(d, ev))
            images += [
                (label, Path(path).name if redact else _relative(Path(path), image_base)) for label, path in found
            ]
    return render_markdown(ev, plots=images, plot_note=note, context=report_context(run_dirs, integrity))


def _relative(path: Path, base: Path | None) -> str:
    try:
        return os.path.relpath(path, (base or Path.cwd()).resolve())
    except ValueError:  # another drive (Windows)
        return str(path)


def _only_run_counts(run_dir: Path, ev: Evidence) -> Evidence:
    """For a merged report: plot each count from the run that contributed it."""
    sources = (ev.get("run") or {}).get("count_sources") or {}
    keep = {n: c for n, c in ev["model_checks"]["per_count"].items() if str(run_dir) in (sources.get(n) or [])[:1]}
    return {**ev, "model_checks": {**ev["model_checks"], "per_count": keep}}
