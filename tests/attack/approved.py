"""The approved verdicts of every model-gate judge on the checked-in clean runs: each
assertion's result as the report shows it (status, reason, evidence) and, for a fixed
sample of the evidence it reads, the status and reason once that piece is taken away.

A judge's reason is what a user reads to act on a verdict, so a change to one is reviewed
like a change to the verdict: tests/attack/test_approved.py compares the judges with
tests/attack/approved.json; after a deliberate change, regenerate it and review the diff:

    .venv/bin/python -m tests.attack.approved
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from parval.rundir.event_fields import EVENT_FIELDS, Shape
from parval.status import Result, Status
from tests.attack.clean_runs import RUNS, extract
from tests.attack.kit import Refused, Run, copy_events, emptied, pieces, verdict

HERE = Path(__file__).resolve().parent
APPROVED = HERE / "approved.json"
NO_SHAPE = Shape({})
SAMPLE = 4  # pieces taken away per assertion: evenly spaced over what its judge reads


def shown(r: Result, run: Run) -> dict[str, Any]:
    """A result as evidence.json carries it (JSON round trip: what the report reads), with
    the directory the runs were unpacked into written <runs>."""
    text = json.dumps(r.to_json(), sort_keys=True, default=str)
    out: dict[str, Any] = json.loads(text.replace(str(run.dir.parent.parent), "<runs>"))
    return out


def sample(found: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Up to SAMPLE pieces of each sort (field, event, file), evenly spaced."""
    out = []
    for sort in ("field", "event", "file"):
        of = [p for p in found if p[0] == sort]
        step = max(1, len(of) // SAMPLE)
        out += of[::step][:SAMPLE]
    return out


def label(run: Run, piece: tuple[str, Any]) -> str:
    what, where = piece
    if what == "field":
        i, k = where
        return f"event {i} ({run.events[i].get('kind')}) without {k}"
    if what == "event":
        return f"without event {where} ({run.events[where].get('kind')})"
    return f"without file {Path(where).relative_to(run.dir.resolve()).as_posix()}"


def taken_away(run: Run, key: str, piece: tuple[str, Any]) -> dict[str, str]:
    """The verdict of `key` once `piece` is taken away: a field emptied where its kind
    declares it (deleting it would only have the loader refuse the run), else deleted; an
    event deleted; a file moved aside while judging."""
    what, where = piece
    events = copy_events(run.events)
    hidden = None
    if what == "field":
        i, k = where
        if k in EVENT_FIELDS.get(str(events[i].get("kind")), NO_SHAPE).fields:
            events[i][k] = emptied(events[i][k])
        else:
            del events[i][k]
    elif what == "event":
        del events[where]
    else:
        hidden = Path(where).with_name(Path(where).name + ".taken-away")
        Path(where).rename(hidden)
    try:
        r = verdict(run, events, key)
    except Refused as exc:
        return {"status": "REFUSED", "reason": str(exc).split(":")[0]}
    finally:
        if hidden is not None:
            hidden.rename(where)
    return {"status": str(r.status), "reason": r.reason.replace(str(run.dir.parent.parent), "<runs>")}


def approve_key(runs: dict[str, Run], key: str) -> dict[str, Any]:
    """The approved entry of one assertion key: its clean result on each run and, on the
    first run it passes on, the sampled pieces taken away."""
    entry: dict[str, Any] = {"clean": {}, "taken_away": {}}
    attacked_on = None
    for kind in RUNS:
        run = runs[kind]
        r = verdict(run, run.events, key)
        entry["clean"][kind] = shown(r, run)
        if r.status is Status.PASS and attacked_on is None:
            attacked_on = kind
    if attacked_on is not None:
        run = runs[attacked_on]
        entry["taken_away"] = {
            "run": attacked_on,
            "verdicts": {label(run, p): taken_away(run, key, p) for p in sample(pieces(run, key))},
        }
    return entry


def keys(runs: dict[str, Run]) -> list[str]:
    return runs[RUNS[0]].keys()


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = {kind: Run.load(d) for kind, d in extract(root / "runs").items()}
        out = {key: approve_key(runs, key) for key in keys(runs)}
    APPROVED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {APPROVED} ({len(out)} assertion keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
