"""Integrity of a run directory: every recorded file is hashed into `files.sha256` when the
run is judged, and evidence.json records that list's hash plus the events' hash. `parval
verify` and `parval report` recompute them: a modified, missing or added file is named."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from parval.evidence import atomic_write, sha256_file

LISTING = "files.sha256"
# Written after judging (derived from the evidence), so not part of the chain.
DERIVED = {LISTING, "evidence.json", "report.md", "report.json", "report.xml"}


def _tracked(run_dir: Path) -> list[Path]:
    out = []
    for p in sorted(run_dir.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(run_dir).as_posix()
        if rel in DERIVED or rel.endswith(".png") or "/." in f"/{rel}":
            continue
        out.append(p)
    return out


def write_listing(run_dir: Path) -> str:
    lines = [f"{sha256_file(p)}  {p.relative_to(run_dir).as_posix()}\n" for p in _tracked(run_dir)]
    text = "".join(lines)
    atomic_write(run_dir / LISTING, text)
    return hashlib.sha256(text.encode()).hexdigest()


def check_listing(run_dir: Path) -> list[str]:
    """Problems: files modified, missing or added since the listing was written."""
    listing = run_dir / LISTING
    if not listing.exists():
        return [f"{LISTING} missing"]
    expected: dict[str, str] = {}
    for line in listing.read_text().splitlines():
        digest, _, rel = line.partition("  ")
        expected[rel] = digest
    problems = []
    present = {p.relative_to(run_dir).as_posix(): p for p in _tracked(run_dir)}
    for rel, digest in expected.items():
        if rel not in present:
            problems.append(f"missing: {rel}")
        elif sha256_file(present[rel]) != digest:
            problems.append(f"modified: {rel}")
    for rel in sorted(set(present) - set(expected)):
        problems.append(f"added: {rel}")
    for p in (run_dir / "artifacts").glob("*.*") if (run_dir / "artifacts").exists() else []:
        if not p.name.startswith(".") and sha256_file(p) != p.name.split(".", 1)[0]:
            problems.append(f"artifact content does not match its name: artifacts/{p.name}")
    return problems


def integrity_problems(run_dir: Path, evidence: dict[str, Any]) -> list[str]:
    problems = check_listing(run_dir)
    run = evidence.get("run", {})
    if (run_dir / "events.jsonl").exists() and run.get("events_sha256") != sha256_file(run_dir / "events.jsonl"):
        problems.append("modified: events.jsonl (hash differs from the one the evidence was judged from)")
    listing = run_dir / LISTING
    if listing.exists() and run.get("files_sha256") and run["files_sha256"] != sha256_file(listing):
        problems.append(f"modified: {LISTING}")
    return sorted(set(problems))
