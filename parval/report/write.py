"""Writing reports next to the evidence, and rendering `parval report` output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval.errors import RunDirError
from parval.evidence import EVIDENCE, atomic_write


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
        msg = plot_memory_timeline(samples, phases, target, title=f"count {n}, start 1 ({d.name})")  # type: ignore[arg-type]
        if msg:
            note = msg
            break
        plots.append((f"memory timeline, count {n}", target.name))
    return plots, note


def write_reports(run_dir: Path, evidence: dict[str, Any]) -> None:
    from parval.report.markdown import render_markdown

    plots, note = _plots(run_dir, evidence)
    atomic_write(run_dir / "report.md", render_markdown(evidence, plots=plots, plot_note=note))


def load_run(run_dir: Path, rejudge: bool) -> dict[str, Any]:
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if rejudge or not (run_dir / EVIDENCE).exists():
        if not (run_dir / "events.jsonl").exists():
            raise RunDirError(f"{run_dir}: no events.jsonl: not a parval run directory")
        from parval.judge import judge_run

        return judge_run(run_dir)
    data: dict[str, Any] = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    return data


def render_report(runs: list[Path], *, fmt: str, catalogue: Path | None, redact: bool,
                  rejudge: bool) -> tuple[str, int]:
    from parval.report.markdown import render_markdown

    if catalogue is not None or len(runs) != 1:
        from parval.report.merge import render_many

        return render_many(runs, fmt=fmt, catalogue=catalogue, redact=redact)
    run_dir = runs[0]
    ev = load_run(run_dir, rejudge)
    from parval.integrity import integrity_problems

    problems = integrity_problems(run_dir, ev)
    if problems:
        ev = {**ev, "verdict": {**ev["verdict"], "exit_code": 1,
                                "line": "INVALID EVIDENCE — the run directory was modified after judging: "
                                + "; ".join(problems[:5])}, "admission_ready": False, "all_plan_rules": False}
    if fmt == "json":
        text = json.dumps(ev, indent=2, sort_keys=True) + "\n"
    elif fmt == "junit":
        from parval.report.junit import render_junit

        text = render_junit(ev)
    else:
        plots, note = _plots(run_dir, ev) if not problems else ([], None)
        text = render_markdown(ev, plots=plots, plot_note=note)
    if redact:
        from parval.report.redact import redact_paths

        text = redact_paths(text)
    return text, int(ev["verdict"]["exit_code"])
