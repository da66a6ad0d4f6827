"""Writing reports next to the evidence, and rendering `parval report` output."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from parval.errors import RunDirError, UsageError
from parval.evidence import EVENTS, EVIDENCE, MANIFEST, atomic_write, iter_events

FORMATS = ("md", "json", "junit")


def _plots(run_dir: Path, evidence: dict[str, Any]) -> tuple[list[tuple[str, str]], str | None]:
    from parval.report.plots import plot_memory_timeline

    plots: list[tuple[str, str]] = []
    note = None
    servers = run_dir / "servers"
    for n in evidence["model_checks"]["per_count"]:
        candidates = sorted(servers.glob(f"count{n}-s1-*"))
        if not candidates:
            continue
        d = candidates[-1]
        samples = [json.loads(x) for x in (d / "memory.jsonl").read_text().splitlines() if x.strip()] \
            if (d / "memory.jsonl").exists() else []
        phases = [tuple(p) for p in json.loads((d / "phases.json").read_text())] \
            if (d / "phases.json").exists() else []
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


def report_context(run_dirs: list[Path]) -> dict[str, Any]:
    """What the markdown needs beyond the evidence to explain a failure: each server's
    command line (by run name), the request bodies (by request name) and where each run's
    artifacts are."""
    argv: dict[str, list[str]] = {}
    requests: dict[str, Any] = {}
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
    return {"argv": argv, "requests": requests, "run_dirs": [str(d) for d in run_dirs]}


def write_reports(run_dir: Path, evidence: dict[str, Any]) -> None:
    """report.md next to evidence.json (plots are linked by file name, beside it)."""
    from parval.report.markdown import render_markdown

    plots, note = _plots(run_dir, evidence)
    local = [(label, Path(path).name) for label, path in plots]
    atomic_write(run_dir / "report.md", render_markdown(evidence, plots=local, plot_note=note,
                                                        context=report_context([run_dir])))


def load_run(run_dir: Path, rejudge: bool) -> dict[str, Any]:
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if rejudge or not (run_dir / EVIDENCE).exists():
        if not (run_dir / EVENTS).exists():
            raise RunDirError(f"{run_dir}: no events.jsonl: not a parval run directory")
        from parval.integrity import seal_run
        from parval.judge import judge_run

        evidence = judge_run(run_dir)
        # The run directory's own report follows the new judgement, sealed like `parval run`.
        write_reports(run_dir, evidence)
        seal_run(run_dir)
        return evidence
    try:
        data: dict[str, Any] = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    except ValueError as exc:
        raise RunDirError(f"{run_dir / EVIDENCE}: not valid JSON ({exc})",
                          hint="re-judge the recorded events with --rejudge") from None
    return data


def run_problems(run_dir: Path, ev: dict[str, Any]) -> list[str]:
    from parval.integrity import integrity_problems

    return integrity_problems(run_dir, ev)


def render_evidence(ev: dict[str, Any], fmt: str, *, run_dirs: list[Path], plots: bool = True,
                    image_base: Path | None = None, redact: bool = False) -> str:
    """Evidence (one run's or merged) → text in `fmt` (md, json or junit). Memory plots are
    linked relative to `image_base` (the directory the report is written to; default cwd)."""
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
            images += [(label, Path(path).name if redact else _relative(Path(path), image_base))
                       for label, path in found]
    return render_markdown(ev, plots=images, plot_note=note, context=report_context(run_dirs))


def _relative(path: Path, base: Path | None) -> str:
    try:
        return os.path.relpath(path, (base or Path.cwd()).resolve())
    except ValueError:  # another drive (Windows)
        return str(path)


def _only_run_counts(run_dir: Path, ev: dict[str, Any]) -> dict[str, Any]:
    """For a merged report: plot each count from the run that contributed it."""
    sources = (ev.get("run") or {}).get("count_sources") or {}
    keep = {n: c for n, c in ev["model_checks"]["per_count"].items()
            if str(run_dir) in (sources.get(n) or [])[:1]}
    return {**ev, "model_checks": {**ev["model_checks"], "per_count": keep}}


def render_report(runs: list[Path], *, fmt: str, catalogue: Path | None, redact: bool,
                  rejudge: bool, output: Path | None = None) -> tuple[str, int]:
    """`parval report`: one run, several runs (merged) or a catalogue → (text, exit code)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use md, json or junit")
    if catalogue is not None or len(runs) != 1:
        if rejudge:
            raise UsageError("--rejudge works on one run directory at a time",
                             hint="re-judge each run (parval report RUN --rejudge), then merge")
        from parval.report.merge import render_many

        return render_many(runs, fmt=fmt, catalogue=catalogue, redact=redact,
                           image_base=output.parent if output is not None else None)
    run_dir = runs[0]
    from parval.framework.rejudge import is_framework_run

    if is_framework_run(run_dir):  # a shared framework record (parval framework)
        from parval.framework.render import load_framework_record, render_framework

        record, notes = load_framework_record(run_dir, rejudge)
        return render_framework(record, fmt, notes), int(record["verdict"]["exit_code"])
    ev = load_run(run_dir, rejudge)
    problems = run_problems(run_dir, ev)
    if problems:
        from parval.report.merge import invalidate

        ev = invalidate(ev, problems)
    text = render_evidence(ev, fmt, run_dirs=[run_dir], plots=not problems,
                           image_base=output.parent if output is not None else None, redact=redact)
    if redact:
        from parval.report.redact import redact_paths

        text = redact_paths(text)
    return text, int(ev["verdict"]["exit_code"])
