"""Helpers for the catalogue tests: writing catalogues, the synthetic shared records, the
installed `parval` command."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.records_kit import CANDIDATE_COMMIT, UPSTREAM, framework_record, write_record_dir, x4_json

BIN = Path(sys.executable).parent
PARVAL = BIN / "parval"
STANDIN = BIN / "parval-standin"
REPO = Path(__file__).resolve().parents[2]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.resolve().read_bytes()).hexdigest()


def write_records(directory: Path, candidate: Path = STANDIN) -> tuple[Path, Path]:
    """A synthetic F1-F6 record for `candidate` and a passing X4 result (the verdict then
    depends on the model gate alone; the framework tests cover real records)."""
    directory.mkdir(parents=True, exist_ok=True)
    x4 = directory / "x4.json"
    # A record is used only inside its sealed run directory, as `parval framework` leaves it.
    record = write_record_dir(
        directory / "framework", framework_record(sha256(candidate), record_id=f"fw-{sha256(candidate)[:8]}")
    )
    x4.write_text(json.dumps(x4_json()))
    return record, x4


def build(
    candidate: Path | str = STANDIN,
    *,
    commit: str | None = CANDIDATE_COMMIT,
    baseline_commit: str | None = UPSTREAM,
    records: tuple[Path, Path] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One `builds.<backend>` entry: the stand-in as candidate and baseline by default."""
    out: dict[str, Any] = {"candidate": {"executable": str(candidate)}, **extra}
    if commit:
        out["candidate"]["source_commit"] = commit
    out["baseline"] = {"executable": str(STANDIN)}
    if baseline_commit:
        out["baseline"]["source_commit"] = baseline_commit
    if records is not None:
        out["framework"] = {"record": str(records[0]), "protected": str(records[1])}
    return out


def write_catalogue(path: Path, claims: list[dict[str, Any]], builds: dict[str, Any], name: str = "t") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": 1, "kind": "parval-catalogue", "name": name, "builds": builds, "claims": claims}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def parval(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PARVAL), *map(str, args)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def claims_json(runs: Path, catalogue: Path) -> tuple[int, dict[str, Any]]:
    p = parval("report", "--catalogue", runs, "--claims", catalogue, "--format", "json")
    assert p.returncode in (0, 1, 3), p.stderr
    data: dict[str, Any] = json.loads(p.stdout)
    return p.returncode, data


def states(data: dict[str, Any]) -> dict[tuple[str, int], str]:
    """(combination, count) → disclosure state."""
    return {(c["combination"], r["count"]): r["state"] for c in data["combinations"] for r in c["rows"]}
