"""File names of a run directory and creating a fresh one (docs/run-directory.md)."""

from __future__ import annotations

import time
from pathlib import Path

from parval.errors import RunDirError

EVENTS = "events.jsonl"
MANIFEST = "manifest.json"
PLAN_SNAPSHOT = "plan.json"  # the plan as the judges read it (the run's rules)
EVIDENCE = "evidence.json"
SCHEMA_VERSION = 1


def new_run_dir(out: Path | None, plan_name: str, base: Path | None = None, *, suffix: str = "") -> Path:
    """A fresh run directory: `--out DIR` (must not hold a finished run) or
    runs/<time>-<name><suffix> (the suffix tells a framework record's directory apart)."""
    if out is not None:
        if (out / EVIDENCE).exists() or (out / EVENTS).exists():
            raise RunDirError(
                f"{out}: already holds a run; parval never overwrites evidence",
                hint="choose another --out, or continue it with --resume",
            )
        if out.exists() and not out.is_dir():
            raise RunDirError(f"{out}: exists and is not a directory", hint="choose another --out")
        out.mkdir(parents=True, exist_ok=True)
        return out
    root = (base or Path.cwd()) / "runs"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        candidate = root / (f"{stamp}-{plan_name}{suffix}" + (f"-{i}" if i else ""))
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError("could not create a run directory")


def find_runs(root: Path) -> list[Path]:
    """Every run directory under `root` (a folder holding an evidence.json), in path order."""
    if not root.is_dir():
        raise RunDirError(f"{root}: no such directory")
    return sorted(p.parent for p in root.rglob(EVIDENCE) if p.is_file())


def enclosing_run_dir(path: Path) -> Path | None:
    """The run directory (or framework record directory) `path` would be written into, if
    any: a folder at or above it holding events.jsonl or the integrity chain. A file added
    there changes what was sealed, and every later reader refuses the run."""
    for folder in [path.resolve().parent, *path.resolve().parent.parents]:
        if (folder / EVENTS).is_file() or (folder / "chain.jsonl").is_file():
            return folder
    return None
