"""The one integrity check every reader of a run directory's evidence calls first
(`verified`), and the explicit reseal (`parval verify RUN --reseal --reason TEXT`).

`parval report` (with or without --rejudge, model or framework runs), merges, the
catalogue and a model run that uses a framework record all call `verified(run_dir)`
before they read anything: it refuses a modified directory (TamperedRunError, exit 2)
naming every file, and says what it verified for the report to state. How the listing,
the chain and the seal work is parval.rundir.integrity.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from parval import __version__
from parval.errors import RunDirError
from parval.jsonread import as_float
from parval.jsontypes import JsonObject
from parval.rundir.integrity import (
    CHAIN,
    LISTING,
    keep,
    list_and_link,
    not_part_of_run,
    read_chain,
    seal_run,
    unsealed_problem,
    verify_problems,
)
from parval.rundir.layout import EVENTS, MANIFEST


class TamperedRunError(RunDirError):
    """Evidence a reader was about to read differs from what was sealed (exit 2: nothing is
    read or rendered from it)."""


class VerifiedJson(TypedDict):
    """`Verified` as a report states it."""

    run_dir: str
    verified: bool
    files: int
    links: int
    sealed: bool
    resealed: list[str]
    not_part_of_run: list[str]
    judgings: list[str]


@dataclass(frozen=True)
class Verified:
    """What `verified` established about one run directory, for the report to state."""

    run_dir: Path
    files: int
    links: int
    sealed: bool
    unsealed: bool  # never judged: the reader's judging will be its first seal
    resealed: tuple[str, ...]
    extra: tuple[str, ...] = ()  # files parval neither wrote nor reads (integrity.not_part_of_run)
    judgings: tuple[str, ...] = ()  # how this run's judgings' verdicts differ (rundir.judgings)

    def line(self) -> str:
        if self.unsealed:
            text = f"integrity: {self.run_dir} was never judged; this judgement seals it"
        else:
            text = (
                f"integrity verified: {self.files} recorded file(s), events.jsonl and manifest.json match "
                f"files.sha256 and a chain of {self.links} link(s) in {self.run_dir}"
            )
        if self.resealed:
            text += "; resealed explicitly: " + "; ".join(self.resealed)
        if self.extra:
            text += "; not part of the run (parval neither wrote nor reads it): " + ", ".join(self.extra)
        if self.judgings:
            text += "; " + "; ".join(self.judgings)
        return text

    def to_json(self) -> VerifiedJson:
        return {
            "run_dir": str(self.run_dir),
            "verified": not self.unsealed,
            "files": self.files,
            "links": self.links,
            "sealed": self.sealed,
            "resealed": list(self.resealed),
            "not_part_of_run": list(self.extra),
            "judgings": list(self.judgings),
        }


def verified(run_dir: Path, *, rejudging: bool = False) -> Verified:
    """The integrity check every reader of a run directory's evidence calls before reading
    it: every file recorded when it was judged is there, unchanged, nothing was added, and
    the chain holds. Raises TamperedRunError (exit 2) naming every difference; a directory
    judged before that lost its listing and chain is refused, never sealed again silently.
    A directory never judged (no derived file, no completion event) may be judged now.
    `rejudging`: the caller replaces evidence.json, so whether it names the current files is
    not asked (after an explicit reseal it names the files before the reseal)."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if (lost := unsealed_problem(run_dir)) is not None:
        raise TamperedRunError(
            f"{run_dir}: refused: {lost}",
            hint=f"if this directory is to be trusted as it stands: `parval verify {run_dir} --reseal --reason TEXT`",
        )
    extra = tuple(not_part_of_run(run_dir))
    if not (run_dir / LISTING).exists() and not (run_dir / CHAIN).exists():
        return Verified(run_dir, 0, 0, False, True, (), extra)
    problems, info = verify_problems(run_dir, evidence_hashes=not rejudging)
    if problems:
        raise TamperedRunError(
            f"{run_dir}: refused: modified after it was judged: "
            + "; ".join(problems[:12])
            + (f" (+{len(problems) - 12} more)" if len(problems) > 12 else ""),
            hint=f"`parval verify {run_dir}` lists every difference",
        )
    links, _ = read_chain(run_dir)
    return Verified(run_dir, info["files"], info["links"], info["sealed"], False, tuple(reseals(links)), extra)


def reseal_run(run_dir: Path, reason: str) -> list[str]:
    """`parval verify RUN --reseal --reason TEXT`: seal the directory as it stands now, with
    what was found different and why, as a link of its chain (a new chain when the old one
    is gone). Returns the differences it sealed over."""
    if not reason.strip():
        raise RunDirError("--reseal needs --reason TEXT: why this directory may be trusted as it stands")
    if not (run_dir / EVENTS).exists() and not (run_dir / MANIFEST).exists():
        raise RunDirError(f"{run_dir}: not a parval run directory (no events.jsonl or manifest.json)")
    found, _ = verify_problems(run_dir)
    links, broken = read_chain(run_dir)
    # plan.json and manifest.json can be compared with what was sealed only through a
    # readable chain that recorded an earlier judging (parval.rundir.rules_seal).
    compared = not broken and any(link.get("kind") == "judge" and link.get("manifest_sha256") for link in links)
    resealed: dict[str, object] = {
        "reason": reason.strip(),
        "parval_version": __version__,
        "found": found,
        "rules_compared": compared,
    }
    extra: dict[str, object] = {}
    if broken:
        # A chain that cannot be read cannot be extended: kept as it was, a new one begins.
        extra["kept_chain"] = keep(run_dir, (run_dir / CHAIN).read_bytes(), "jsonl")
        (run_dir / CHAIN).unlink()
    list_and_link(run_dir, resealed=resealed, **extra)
    seal_run(run_dir)
    return found


def reseals(links: list[JsonObject]) -> list[str]:
    """Every explicit reseal in a chain, as 'time: reason'."""
    out = []
    for link in links:
        r = link.get("resealed")
        if isinstance(r, dict):
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(as_float(link.get("t") or 0)))
            out.append(f"{when}: {r.get('reason')}")
    return out
