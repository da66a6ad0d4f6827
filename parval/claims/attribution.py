"""The evidence under a runs folder (parval.report.evidence_found) attributed to a
catalogue's combinations.

A run belongs to a combination when its evidence names the combination's model id,
backend and mode (so runs made with plain `parval run` count too). It is *current* when it
tested the catalogue's candidate build for that backend: the same executable sha256 and,
where both the catalogue and the run name one, the same source commit; otherwise it is
STALE evidence (new executables inherit nothing). The current runs are merged into one
verdict (`merge_current`). Imported historical records (`parval import`) are attributed by
model, backend and mode, and never count toward admission; nor does a run made under
another procedure version (`historical_runs`).
"""

from __future__ import annotations

from parval.claims.combination import Combination
from parval.procedure.version import historical_reason, is_current
from parval.report.evidence_found import Attributed, Found, FoundRun, merge_current, stale_reason


def belongs_to(run: FoundRun, combo: Combination) -> bool:
    i = run.identity
    return (i.get("model"), i.get("backend"), i.get("mode")) == (combo.model_id, combo.backend, combo.mode)


def attribute(combo: Combination, found: Found, sha256: str) -> Attributed:
    """The evidence of `combo` for the candidate build with `sha256` (module docstring)."""
    out = Attributed()
    commit = combo.build.candidate.source_commit
    current: list[FoundRun] = []
    for run in found.runs:
        if not belongs_to(run, combo):
            continue
        version = run.ev.get("procedure_version")
        if not is_current(version):
            out.historical_runs.append((run, historical_reason(version)))
            continue
        why = stale_reason(run, sha256, commit)
        if why is None:
            current.append(run)
        else:
            out.stale.append((run, why))
    merge_current(out, current)
    out.set_aside = [(r, why) for r, why in found.set_aside if belongs_to(r, combo)]
    out.historical = [
        h
        for h in found.historical
        if (h.get("model"), h.get("backend")) == (combo.model_id, combo.backend) and h.get("mode") in (None, combo.mode)
    ]
    return out
