"""`parval report`: one run, several runs merged, or a catalogue, in md, json or junit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from parval.errors import UsageError
from parval.report.load import load_run
from parval.report.merge import LoadedRun, merge_evidence
from parval.report.render import render_evidence
from parval.report.run_table import render_catalogue
from parval.report.run_table_row import SetAside

FORMATS = ("md", "json", "junit")


def check_options(fmt: str, catalogue: Path | None, set_aside: Sequence[SetAside]) -> None:
    """The options every form of `parval report` checks first."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use md, json or junit")
    if set_aside and catalogue is None:
        raise UsageError(
            "--set-aside RUN leaves a run out of the verdicts of --catalogue DIR",
            hint="parval report --catalogue runs/ --set-aside runs/old --reason 'why'; "
            "or leave the run out of `parval report RUN...`",
        )


def render_report(
    runs: list[Path],
    *,
    fmt: str,
    catalogue: Path | None,
    redact: bool,
    rejudge: bool,
    output: Path | None = None,
    set_aside: Sequence[SetAside] = (),
) -> tuple[str, int]:
    """`parval report`: one run, several runs (merged) or a catalogue of runs → (text, exit
    code). The disclosure of a catalogue's claims (`--claims`) is parval.claims.render."""
    check_options(fmt, catalogue, set_aside)
    if catalogue is not None or len(runs) != 1:
        if rejudge:
            raise UsageError(
                "--rejudge works on one run directory at a time",
                hint="re-judge each run (parval report RUN --rejudge), then merge",
            )
        return render_many(runs, fmt=fmt, catalogue=catalogue, redact=redact, set_aside=set_aside)
    run_dir = runs[0]
    refuse_folder_of_runs(run_dir)
    from parval.framework.rejudge import is_framework_run

    if is_framework_run(run_dir):  # a shared framework record (parval framework)
        from parval.framework.rejudge import load_framework_record
        from parval.report.framework_record_md import render_framework

        record, notes = load_framework_record(run_dir, rejudge)
        return render_framework(record, fmt, notes), int(record["verdict"]["exit_code"])
    ev, check = load_run(run_dir, rejudge)
    text = render_evidence(ev, fmt, run_dirs=[run_dir], redact=redact, integrity=[check.line()])
    if redact:
        from parval.report.redact import redact_paths

        text = redact_paths(text)
    return text, int(ev["verdict"]["exit_code"])


def refuse_folder_of_runs(path: Path) -> None:
    """A folder that holds runs rather than being one (`parval report runs`): said, with the
    command that reports them all."""
    from parval.rundir.layout import EVENTS, MANIFEST

    if not path.is_dir() or (path / EVENTS).exists() or (path / MANIFEST).exists():
        return
    try:
        held = sorted(d.name for d in path.iterdir() if (d / EVENTS).is_file() or (d / MANIFEST).is_file())
    except OSError:
        return
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise UsageError(
            f"{path}: a folder of {len(held)} run(s) ({shown}), not a run directory",
            hint=f"`parval report --catalogue {path}` reports every run in it; "
            f"`parval report {path / held[-1]}` reports one",
        )


def render_many(
    runs: list[Path], fmt: str, catalogue: Path | None, redact: bool, set_aside: Sequence[SetAside] = ()
) -> tuple[str, int]:
    """`parval report RUN1 RUN2 ...` or `parval report --catalogue DIR` → (text, exit code)."""
    if catalogue is not None:
        if runs:
            raise UsageError("give either run directories or --catalogue DIR, not both")
        text, code = render_catalogue(catalogue, fmt, set_aside)
    else:
        if not runs:
            raise UsageError("no run directory given", hint="parval report RUN_DIR [RUN_DIR ...]")
        resolved = [p.resolve() for p in runs]
        dupes = sorted({str(p) for p in resolved if resolved.count(p) > 1})
        if dupes:
            raise UsageError(f"run directory given twice: {', '.join(dupes)}")
        # Every run is verified before any is read; one modified run refuses the merge.
        read = [(p, *load_run(p, False)) for p in runs]
        loaded = [LoadedRun(p, ev) for p, ev, _ in read]
        ev = merge_evidence(loaded)
        text = render_evidence(
            ev, fmt, run_dirs=[r.dir for r in loaded], redact=redact, integrity=[check.line() for _, _, check in read]
        )
        code = int(ev["verdict"]["exit_code"])
    if redact:
        from parval.report.redact import redact_paths

        text = redact_paths(text)
    return text, code
