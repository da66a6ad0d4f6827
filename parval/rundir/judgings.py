"""Every judging of a run stays readable, and a report says when their verdicts differ.

A re-judging replaces evidence.json; before it does, the judgment it replaces is kept as
judgings/<sha256>.json and the new judge link of the chain names it (`kept`,
parval.rundir.integrity). `earlier` reads them back in chain order (only those the chain
names and whose content is the hash their name gives); `differences` says how the verdict
and the assertions' statuses of each differ from the judgment being presented, and
`failed_before` whether any of them recorded a FAIL (which a run whose rules changed retains).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from parval.jsonread import as_float
from parval.rundir.files import sha256_file
from parval.rundir.integrity import kept_files, read_chain
from parval.rundir.layout import EVIDENCE


@dataclass(frozen=True)
class Judging:
    """One earlier judgment of a run, as kept in its directory."""

    path: str  # relative to the run directory
    when: str  # the judge link's time (UTC) that replaced it
    evidence: Mapping[str, object]


def _load(path: Path) -> Mapping[str, object] | None:
    try:
        data: object = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def earlier(run_dir: Path) -> list[Judging]:
    """The judgments kept in `run_dir`, oldest first."""
    links, _ = read_chain(run_dir)
    out: list[Judging] = []
    named = set(kept_files(links))
    for link in links:
        rel = link.get("kept")
        if not isinstance(rel, str) or rel not in named or any(j.path == rel for j in out):
            continue
        path = run_dir / rel
        if not path.is_file() or sha256_file(path) != path.name.split(".", 1)[0]:
            continue  # named by the integrity check; never read
        ev = _load(path)
        if ev is not None:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(as_float(link.get("t") or 0)))
            out.append(Judging(rel, when, ev))
    return out


def _verdict(ev: Mapping[str, object]) -> Mapping[str, object]:
    v = ev.get("verdict")
    return v if isinstance(v, dict) else {}


def _statuses(ev: Mapping[str, object]) -> dict[str, str]:
    items = ev.get("assertions")
    out: dict[str, str] = {}
    for a in items if isinstance(items, list) else []:
        if isinstance(a, dict) and isinstance(a.get("id"), str):
            out[a["id"]] = str(a.get("status"))
    return out


def failed_before(run_dir: Path) -> bool:
    """Whether any judgment of `run_dir` kept or on disk (evidence.json) recorded a FAIL."""
    found = [j.evidence for j in earlier(run_dir)]
    current = _load(run_dir / EVIDENCE) if (run_dir / EVIDENCE).is_file() else None
    return any(_verdict(ev).get("exit_code") == 1 for ev in [*found, *([current] if current else [])])


def differences(run_dir: Path, current: Mapping[str, object]) -> list[str]:
    """One line per kept judgment whose verdict or assertion statuses differ from `current`
    (the judgment being presented); empty when every judging agrees."""
    now_v, now_s = _verdict(current), _statuses(current)
    kept = earlier(run_dir)
    out = []
    for j in kept:
        was_v, was_s = _verdict(j.evidence), _statuses(j.evidence)
        changed = [
            f"{aid} {was_s.get(aid, 'absent')} -> {now_s.get(aid, 'absent')}"
            for aid in sorted(set(was_s) | set(now_s))
            if was_s.get(aid) != now_s.get(aid)
        ]
        same_verdict = all(was_v.get(k) == now_v.get(k) for k in ("exit_code", "admitted_counts", "line"))
        if same_verdict and not changed:
            continue
        text = (
            f"verdicts differ between judgings of this run ({len(kept) + 1} judgings): the judgment replaced at "
            f"{j.when}, kept as {j.path}, read {was_v.get('line')!s} (exit {was_v.get('exit_code')})"
        )
        if not same_verdict:
            text += f"; now: {now_v.get('line')!s} (exit {now_v.get('exit_code')})"
        if changed:
            text += (
                "; assertions: "
                + ", ".join(changed[:12])
                + (f" (+{len(changed) - 12} more)" if len(changed) > 12 else "")
            )
        out.append(text)
    return out
