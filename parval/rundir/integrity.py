"""Integrity of a run directory: what was recorded can be shown unchanged later.

Three pieces, all plain text next to the evidence:

* `files.sha256` (sha256sum format) lists every recorded file — events.jsonl, manifest.json,
  plan copies, artifacts/, servers/ logs and samples — written each time the run is judged.
* `chain.jsonl` gets one link per judging (`kind: judge`: the listing's hash, the length and
  hash of events.jsonl, the manifest's hash) and one per sealing (`kind: seal`: the hashes
  of the derived files evidence.json, report.md and plots, written after them). Each link
  holds the sha256 of the line before it, so links cannot be dropped or reordered silently.
* evidence.json records `run.events_sha256`, `run.files_sha256`, `run.manifest_sha256`.
* judgings/ keeps every earlier judging's evidence.json, named by its sha256, before a
  re-judging replaces it (and a chain a reseal could not read); the judge link that replaced
  it names the kept file (`kept`), so no judgment is ever lost from the run directory.

What the integrity check covers is the run: every file in a subdirectory (artifacts/,
servers/, ...), the top-level files parval writes or reads by name (`RUN_FILES`, the derived
reports and plots) and every file the listing names. A top-level file of any other name
(`parval report RUN > RUN/pr.md`) is one parval neither wrote nor ever reads: it is named
("not part of the run: pr.md") and never listed, and it changes nothing.

Every reader of evidence first calls `parval.rundir.verified.verified`, which checks
everything strictly (`verify_problems`: a file modified, missing or added is named) and
refuses a modified directory (exit 2); `parval verify RUN` shows the same differences
(exit 1). Re-judging and `--resume` allow only growth (`chain_problems`): new files and
events appended after the judged prefix.

A run directory is sealed once: the first judging writes the listing and the chain. A
directory that shows it was judged or completed (a derived file such as evidence.json or
record.json, or a campaign_end/framework_end event) but has lost files.sha256 and
chain.jsonl is never silently sealed again; `parval verify RUN --reseal --reason TEXT`
reseals it as it stands now, and that reseal stays in the chain (and in every report).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from parval.errors import EXIT_FAILED, ParvalError, RunDirError
from parval.jsonread import as_int, as_object
from parval.jsontypes import JsonObject
from parval.rundir.events import clean_length
from parval.rundir.files import atomic_write, dumps, fsync_dir, sha256_file
from parval.rundir.layout import EVENTS, EVIDENCE, MANIFEST, PLAN_SNAPSHOT

LISTING = "files.sha256"
FRAMEWORK_RECORD = "record.json"  # `parval framework` writes this instead of evidence.json
CHAIN = "chain.jsonl"
# Derived from the evidence and written after judging: sealed separately, not listed.
DERIVED = {LISTING, CHAIN, EVIDENCE, "report.md", "report.json", "report.xml"}
# Earlier judgings' evidence.json (and a chain a reseal replaced), kept under their sha256.
JUDGINGS = "judgings"
# Top-level files parval writes or reads by name (every file in a subdirectory is the run's).
RUN_FILES = frozenset(
    {EVENTS, MANIFEST, PLAN_SNAPSHOT, "plan.yaml", "probes.yaml", FRAMEWORK_RECORD, "historical.json", *DERIVED}
)


class IntegrityError(ParvalError):
    """A run directory was modified after it was judged."""

    exit_code = EXIT_FAILED


class ChainSummary(TypedDict):
    """What `verify_problems` found besides the problems: the chain's links, the files the
    listing names, and whether the last link seals the derived files."""

    links: int
    files: int
    sealed: bool


# Events that a finished campaign or framework run always writes before it is judged.
COMPLETION_EVENTS = ("campaign_end", "framework_end")


def _is_derived(rel: str) -> bool:
    return rel in DERIVED or (rel.endswith(".png") and "/" not in rel)


def _hidden(rel: str) -> bool:
    return "/." in f"/{rel}"  # temporary files of atomic writes, editor droppings


def part_of_run(rel: str) -> bool:
    """Whether parval writes or reads the file at `rel` (see the module docstring)."""
    return "/" in rel or rel in RUN_FILES or _is_derived(rel)


def _tracked(run_dir: Path, listed: Mapping[str, str] | None = None) -> list[Path]:
    """The files a listing covers: the run's own (`part_of_run`), plus any other file an
    earlier listing (`listed`) named; never derived files or kept judgings."""
    out = []
    for p in sorted(run_dir.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(run_dir).as_posix()
        if _is_derived(rel) or _hidden(rel) or rel.startswith(f"{JUDGINGS}/"):
            continue
        if part_of_run(rel) or (listed is not None and rel in listed):
            out.append(p)
    return out


def not_part_of_run(run_dir: Path) -> list[str]:
    """Files in `run_dir` that parval neither wrote nor ever reads: top-level files of a name
    parval does not use that no listing names, and files in judgings/ that no link of the
    chain names. They are named by every check, and change nothing."""
    listing = run_dir / LISTING
    listed = _read_listing(run_dir) if listing.is_file() else {}
    out = [
        p.name
        for p in sorted(run_dir.iterdir())
        if p.is_file() and not _hidden(p.name) and not part_of_run(p.name) and p.name not in listed
    ]
    kept = run_dir / JUDGINGS
    if kept.is_dir():
        links, _ = read_chain(run_dir)
        named = set(kept_files(links))
        for p in sorted(kept.iterdir()):
            rel = f"{JUDGINGS}/{p.name}"
            if p.is_file() and not _hidden(p.name) and rel not in named:
                out.append(rel)
    return out


def _derived_present(run_dir: Path) -> list[Path]:
    return sorted(
        p for p in run_dir.iterdir() if p.is_file() and p.name not in (LISTING, CHAIN) and _is_derived(p.name)
    )


def _sha256_prefix(path: Path, length: int) -> str | None:
    """sha256 of the first `length` bytes, or None when the file is shorter."""
    h = hashlib.sha256()
    left = length
    with path.open("rb") as fh:
        while left > 0:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                return None
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


# -- the chain --------------------------------------------------------------------------------
def read_chain(run_dir: Path) -> tuple[list[JsonObject], list[str]]:
    """The chain's links and any problem with the chain itself."""
    path = run_dir / CHAIN
    if not path.exists():
        return [], []
    links: list[JsonObject] = []
    problems: list[str] = []
    prev: str | None = None
    raw = path.read_bytes()
    for i, line in enumerate(raw.split(b"\n")[:-1] if raw.endswith(b"\n") else raw.split(b"\n")):
        try:
            link: object = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            problems.append(f"modified: {CHAIN} (line {i + 1} is not JSON)")
            break
        if not isinstance(link, dict) or link.get("prev") != prev:
            problems.append(f"modified: {CHAIN} (line {i + 1} does not follow the line before it)")
            break
        links.append(link)
        prev = hashlib.sha256(line).hexdigest()
    if not raw.endswith(b"\n") and raw:
        problems.append(f"modified: {CHAIN} (no final newline)")
    return links, problems


def _append_link(run_dir: Path, link: Mapping[str, object]) -> None:
    path = run_dir / CHAIN
    raw = path.read_bytes() if path.exists() else b""
    lines = raw.split(b"\n")[:-1]
    written = {
        "n": len(lines),
        "t": round(time.time(), 3),
        "prev": hashlib.sha256(lines[-1]).hexdigest() if lines else None,
        **link,
    }
    atomic_write(path, raw + (dumps(written) + "\n").encode())


def _last(links: list[JsonObject], kind: str) -> JsonObject | None:
    return next((link for link in reversed(links) if link.get("kind") == kind), None)


# -- kept judgings ----------------------------------------------------------------------------
_KEPT_NAME = re.compile(rf"{JUDGINGS}/[0-9a-f]{{64}}\.(json|jsonl)")


def kept_files(links: list[JsonObject]) -> list[str]:
    """Every file the chain's links name as kept (judgings/<sha256>.<ext>), in chain order;
    a link naming any other path names nothing parval reads."""
    out = []
    for link in links:
        for key in ("kept", "kept_chain"):
            rel = link.get(key)
            if isinstance(rel, str) and _KEPT_NAME.fullmatch(rel) and rel not in out:
                out.append(rel)
    return out


def keep(run_dir: Path, data: bytes, ext: str) -> str:
    """Keep `data` as judgings/<sha256>.<ext> (once); returns its path relative to the run."""
    digest = hashlib.sha256(data).hexdigest()
    rel = f"{JUDGINGS}/{digest}.{ext}"
    if not (run_dir / rel).is_file():
        (run_dir / JUDGINGS).mkdir(exist_ok=True)
        atomic_write(run_dir / rel, data)
    return rel


def kept_problems(run_dir: Path, links: list[JsonObject]) -> list[str]:
    """Every kept judging the chain names is there, its content the hash its name gives."""
    out = []
    for rel in kept_files(links):
        path = run_dir / rel
        if not path.is_file():
            out.append(f"missing: {rel}")
        elif sha256_file(path) != Path(rel).name.split(".", 1)[0]:
            out.append(f"modified: {rel}")
    return out


# -- listing ----------------------------------------------------------------------------------
def _read_listing(run_dir: Path) -> dict[str, str]:
    expected: dict[str, str] = {}
    for line in (run_dir / LISTING).read_text("utf-8", "replace").splitlines():
        digest, _, rel = line.partition("  ")
        expected[rel] = digest
    return expected


def check_listing(run_dir: Path, *, allow_growth: bool = False) -> list[str]:
    """Files modified, missing (or, unless `allow_growth`, added) since the listing."""
    listing = run_dir / LISTING
    if not listing.exists():
        return [f"missing: {LISTING}"]
    expected = _read_listing(run_dir)
    problems = []
    present = {p.relative_to(run_dir).as_posix(): p for p in _tracked(run_dir, expected)}
    for rel, digest in expected.items():
        if rel not in present:
            problems.append(f"missing: {rel}")
        elif allow_growth and rel == EVENTS:
            continue  # append-only: its judged prefix is checked through the chain
        elif sha256_file(present[rel]) != digest:
            problems.append(f"modified: {rel}")
    if not allow_growth:
        for rel in sorted(set(present) - set(expected)):
            problems.append(f"added: {rel}")
    artifacts = run_dir / "artifacts"
    for p in sorted(artifacts.glob("*.*")) if artifacts.is_dir() else []:
        if not p.name.startswith(".") and sha256_file(p) != p.name.split(".", 1)[0]:
            problems.append(f"artifact content does not match its name: artifacts/{p.name}")
    return problems


def chain_problems(run_dir: Path) -> list[str]:
    """Everything judged before is unchanged; only growth (new files, appended events)."""
    listing = run_dir / LISTING
    links, problems = read_chain(run_dir)
    judged = _last(links, "judge")
    if judged is None and not listing.exists():
        return problems  # never judged: nothing recorded to compare with
    if not listing.exists():
        return [*problems, f"missing: {LISTING}"]
    if judged is None:  # a run judged before chains existed: the listing alone
        return [*problems, *(p for p in check_listing(run_dir, allow_growth=True))]
    if sha256_file(listing) != judged.get("files_sha256"):
        problems.append(f"modified: {LISTING}")
    problems.extend(check_listing(run_dir, allow_growth=True))
    events = run_dir / EVENTS
    if events.exists():
        n = as_int(judged.get("events_bytes", 0))
        if _sha256_prefix(events, n) != judged.get("events_prefix_sha256"):
            problems.append(f"modified: {EVENTS} (the {n} bytes judged earlier changed)")
    manifest = run_dir / MANIFEST
    if manifest.exists() and sha256_file(manifest) != judged.get("manifest_sha256"):
        problems.append(f"modified: {MANIFEST}")
    problems.extend(kept_problems(run_dir, links))
    return sorted(set(problems))


def judged_before(run_dir: Path) -> list[str]:
    """What shows a run directory was judged or completed (so it must carry its listing and
    chain): derived files present, or a completion event in events.jsonl."""
    shown = [p.name for p in _derived_present(run_dir)]
    if (run_dir / FRAMEWORK_RECORD).is_file():
        shown.append(FRAMEWORK_RECORD)
    events = run_dir / EVENTS
    if events.is_file():
        with events.open("rb") as fh:
            for raw in fh:
                kind = _event_kind(raw)
                if kind in COMPLETION_EVENTS:
                    shown.append(f"a {kind} event in {EVENTS}")
                    break
    return shown


def _event_kind(raw: bytes) -> str | None:
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    kind = event.get("kind") if isinstance(event, dict) else None
    return kind if isinstance(kind, str) else None


def unsealed_problem(run_dir: Path) -> str | None:
    """Why an unsealed directory may not be sealed now (None: it was never judged)."""
    if (run_dir / LISTING).exists() or (run_dir / CHAIN).exists():
        return None
    shown = judged_before(run_dir)
    if not shown:
        return None
    return (
        f"missing: {LISTING} and {CHAIN}, although the directory was judged or completed "
        f"({', '.join(shown)}): a run directory is sealed once"
    )


def write_listing(run_dir: Path, *, first: bool = False) -> str:
    """Called when a run is judged: refuse if anything judged before changed (or the seal of
    a judged run is gone), then list every recorded file and add a chain link. `first`: the
    process that just completed the run seals it (its completion event is its own). Returns
    the listing's sha256."""
    problems = chain_problems(run_dir)
    if not first and (lost := unsealed_problem(run_dir)) is not None:
        problems = [lost, *problems]
    if problems:
        raise IntegrityError(
            f"{run_dir}: refusing to judge a run directory modified since it was last judged: "
            + "; ".join(problems[:8]),
            hint=f"`parval verify {run_dir}` lists every difference; "
            f"`parval verify {run_dir} --reseal --reason TEXT` reseals it as it stands (recorded)",
        )
    # The judgment this judging replaces stays readable, named by the new link.
    evidence = run_dir / EVIDENCE
    if evidence.is_file():
        return list_and_link(run_dir, kept=keep(run_dir, evidence.read_bytes(), "json"))
    return list_and_link(run_dir)


def list_and_link(run_dir: Path, **extra: object) -> str:
    lines = [f"{sha256_file(p)}  {p.relative_to(run_dir).as_posix()}\n" for p in _tracked(run_dir)]
    text = "".join(lines)
    atomic_write(run_dir / LISTING, text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    events = run_dir / EVENTS
    manifest = run_dir / MANIFEST
    rules = run_dir / PLAN_SNAPSHOT
    # The complete lines judged: a resume may later cut a torn tail off, never more.
    complete = clean_length(events) if events.exists() else 0
    _append_link(
        run_dir,
        {
            "kind": "judge",
            "files_sha256": digest,
            "events_bytes": complete,
            "events_prefix_sha256": _sha256_prefix(events, complete) if events.exists() else None,
            "events_sha256": sha256_file(events) if events.exists() else None,
            "manifest_sha256": sha256_file(manifest) if manifest.exists() else None,
            # The rules judged by: parval.rundir.rules_seal compares them across judgings.
            "rules_sha256": sha256_file(rules) if rules.exists() else None,
            **extra,
        },
    )
    return digest


def seal_run(run_dir: Path) -> None:
    """After evidence.json and the reports are written: record their hashes in the chain."""
    derived = {p.name: sha256_file(p) for p in _derived_present(run_dir)}
    _append_link(run_dir, {"kind": "seal", "derived": derived})
    fsync_dir(run_dir)


# -- strict checks: parval verify, parval report -------------------------------------------
def verify_problems(run_dir: Path, *, evidence_hashes: bool = True) -> tuple[list[str], ChainSummary]:
    """Every difference between the run directory and what was recorded, plus a summary.
    `evidence_hashes=False`: leave out whether evidence.json names the files it was judged
    from (a re-judging replaces it; everything recorded must still match)."""
    links, problems = read_chain(run_dir)
    listing = run_dir / LISTING
    info: ChainSummary = {"links": len(links), "files": 0, "sealed": False}
    if not listing.exists():
        lost = [f"missing: {CHAIN}"] if not (run_dir / CHAIN).exists() else []
        return [*problems, f"missing: {LISTING}", *lost], info
    info["files"] = len(_read_listing(run_dir))
    problems.extend(kept_problems(run_dir, links))
    problems.extend(check_listing(run_dir))
    judged = _last(links, "judge")
    listing_sha = sha256_file(listing)
    events = run_dir / EVENTS
    events_sha = sha256_file(events) if events.exists() else None
    manifest = run_dir / MANIFEST
    manifest_sha = sha256_file(manifest) if manifest.exists() else None
    if judged is None:
        problems.append(f"missing: {CHAIN} (no record of when the run was judged)")
    else:
        if judged.get("files_sha256") != listing_sha:
            problems.append(f"modified: {LISTING}")
        if judged.get("events_sha256") != events_sha:
            problems.append(f"modified: {EVENTS} (hash differs from the one it was judged from)")
        if judged.get("manifest_sha256") != manifest_sha:
            problems.append(f"modified: {MANIFEST} (hash differs from the one it was judged with)")
    evidence_path = run_dir / EVIDENCE
    evidence: object = None
    if evidence_path.exists():
        try:
            evidence = json.loads(evidence_path.read_text("utf-8"))
        except (ValueError, UnicodeDecodeError):
            problems.append(f"modified: {EVIDENCE} (not valid JSON)")
    elif not (run_dir / FRAMEWORK_RECORD).exists():
        # A framework run's verdict is record.json, which the listing itself covers.
        problems.append(f"missing: {EVIDENCE}")
    if isinstance(evidence, dict):
        if evidence_hashes:
            problems.extend(_evidence_mismatch(evidence, events_sha, listing_sha, manifest_sha))
    elif evidence is not None:
        problems.append(f"modified: {EVIDENCE} (not a JSON object)")
    seal = _last(links, "seal")
    if seal is not None and links and links[-1] is seal:
        info["sealed"] = True
        sealed = as_object(seal.get("derived") or {}, "items")
        problems.extend(sealed_problems(run_dir, sealed))
        for p in _derived_present(run_dir):
            if p.name not in sealed:
                problems.append(f"added: {p.name}")
    return sorted(set(problems)), info


def sealed_problems(directory: Path, sealed: Mapping[str, object]) -> list[str]:
    """Every file a seal names (name -> sha256) must still be there, unchanged."""
    out = []
    for name, digest in sorted(sealed.items()):
        p = directory / name
        if not p.exists():
            out.append(f"missing: {name}")
        elif sha256_file(p) != digest:
            out.append(f"modified: {name}")
    return out


def _evidence_mismatch(
    evidence: Mapping[str, object], events_sha: str | None, listing_sha: str, manifest_sha: str | None
) -> list[str]:
    run = evidence.get("run")
    run = run if isinstance(run, dict) else {}
    out = []
    if run.get("events_sha256") != events_sha:
        out.append(f"modified: {EVENTS} (hash differs from the one the evidence was judged from)")
    if run.get("files_sha256") is not None and run.get("files_sha256") != listing_sha:
        out.append(f"modified: {LISTING} (hash differs from the one the evidence records)")
    if run.get("manifest_sha256") is not None and run.get("manifest_sha256") != manifest_sha:
        out.append(f"modified: {MANIFEST} (hash differs from the one the evidence records)")
    return out


def integrity_problems(run_dir: Path, evidence: Mapping[str, object]) -> list[str]:
    """For `parval report`: every reason not to present this run's evidence as valid.

    `evidence` is what is about to be presented; it must be the one on disk (or, after a
    re-judge, carry the hashes of the files it was judged from)."""
    problems, _ = verify_problems(run_dir)
    if (run_dir / LISTING).exists():
        events = run_dir / EVENTS
        problems.extend(
            _evidence_mismatch(
                evidence,
                sha256_file(events) if events.exists() else None,
                sha256_file(run_dir / LISTING),
                sha256_file(run_dir / MANIFEST) if (run_dir / MANIFEST).exists() else None,
            )
        )
    return sorted(set(problems))


def verify_run(run_dir: Path) -> tuple[list[str], ChainSummary]:
    """Problems (empty when clean) and a summary. RunDirError when `run_dir` is not a
    judged parval run directory."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if not (run_dir / EVENTS).exists() and not (run_dir / MANIFEST).exists():
        raise RunDirError(f"{run_dir}: not a parval run directory (no events.jsonl or manifest.json)")
    if not (run_dir / LISTING).exists() and not (run_dir / CHAIN).exists():
        raise RunDirError(
            f"{run_dir}: this run was never judged (no {LISTING}), so there is nothing recorded to verify against",
            hint=f"continue it with `parval run --resume {run_dir}` or judge it "
            f"with `parval report {run_dir} --rejudge`",
        )
    return verify_problems(run_dir)
