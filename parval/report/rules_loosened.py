"""A FAIL under stricter rules stands: "never loosen tolerance after a mismatch"; "do not
invent a passing bound after seeing it".

Runs whose plans differ in a field of `parval.report.merge.PLAN_FIELDS` are not evidence of
the same thing and are never merged. Some of those fields are *rules*: a bound the judges
hold the server to, not a setting that changes what it outputs. A run that FAILed under a
rule, followed by a run of the same executables, model files, fixtures and plan settings
with that rule loosened, is the failure hidden by a new bound. So across runs of the same
tested identity, a FAIL recorded under stricter rules counts against every later run that
loosened one of them: a merge (`parval report RUN1 RUN2`), `--catalogue` and `--claims` read
NOT ADMITTED, "rules loosened after a FAIL", naming each loosened field.

Which direction is stricter, field by field (`RULES`; the plan snapshot holds the schema's
defaults, so an unset field is compared as its default, or as no bound where it has none):

- `compare.tolerance`: byte-exact (null) is the strictest; a larger `max_abs_sample_diff`
  is looser (the justification is not a bound).
- `compare.volatile_fields`: a field excluded from comparison that the earlier run compared
  is looser (a superset of paths).
- `timeouts.drain_lag_ms`: a larger lag is looser; unset (the lag is reported, not judged)
  is the loosest.
- `memory.stabilisation.max_growth_mib`, `memory.guard_mib`: a larger bound is looser;
  null (no bound) is the loosest.
- `memory.gpu_interval_ms`, `memory.host_interval_ms`: a longer sampling interval is looser
  (it can miss a peak).
- `memory.gpu_required`: false (GPU memory not judged) is looser than true.
- `memory.baseline_comparison`: dropping a declared comparison with the baseline is looser.
- `memory.stabilisation.last_k_waves`, `memory.stabilisation.metric`,
  `memory.nvml_device_index`: no order can be shown between two values, so any change
  after a FAIL counts as loosened (fails closed).

The other plan fields are the tested identity itself: runs that differ in one of them stay
apart (a refused merge, a catalogue's "not used"), as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from parval.rundir.evidence_types import Evidence

LOOSENED = "rules loosened after a FAIL"
_ABSENT = object()


def _get(plan: Mapping[str, object] | None, path: str) -> object:
    data: object = plan or {}
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return _ABSENT
        data = data[part]
    return data


def _number(value: object, none: float) -> float:
    """A bound as a number: `none` for an unset or null one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return none
    return float(value)


def _larger_is_looser(none: float = math.inf) -> Callable[[object, object], bool]:
    return lambda strict, later: _number(later, none) > _number(strict, none)


def _tolerance(strict: object, later: object) -> bool:
    def diff(t: object) -> float:
        return _number(t.get("max_abs_sample_diff"), 0.0) if isinstance(t, dict) else 0.0

    return diff(later) > diff(strict)


def _volatile(strict: object, later: object) -> bool:
    def paths(v: object) -> set[str]:
        return {str(x.get("path")) for x in v if isinstance(x, dict)} if isinstance(v, list) else set()

    return bool(paths(later) - paths(strict))


def _dropped_true(strict: object, later: object) -> bool:
    return strict is not False and strict is not _ABSENT and later is False


def _dropped(strict: object, later: object) -> bool:
    return strict not in (None, _ABSENT) and later in (None, _ABSENT)


def _changed(strict: object, later: object) -> bool:
    return strict != later


# Rule field (dotted, inside a PLAN_FIELDS entry) -> whether `later` is looser than `strict`.
RULES: dict[str, Callable[[object, object], bool]] = {
    "compare.tolerance": _tolerance,
    "compare.volatile_fields": _volatile,
    "timeouts.drain_lag_ms": _larger_is_looser(),
    "memory.stabilisation.max_growth_mib": _larger_is_looser(),
    "memory.guard_mib": _larger_is_looser(),
    "memory.gpu_interval_ms": _larger_is_looser(0.0),
    "memory.host_interval_ms": _larger_is_looser(0.0),
    "memory.gpu_required": _dropped_true,
    "memory.baseline_comparison": _dropped,
    "memory.stabilisation.last_k_waves": _changed,
    "memory.stabilisation.metric": _changed,
    "memory.nvml_device_index": _changed,
}
# The PLAN_FIELDS entries made of rules only (every leaf of `memory` is one of RULES).
RULE_SECTIONS = ("compare.tolerance", "compare.volatile_fields", "timeouts.drain_lag_ms", "memory")


def _shown(value: object) -> str:
    if value is _ABSENT or value is None:
        return "unset"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def loosened(strict: Mapping[str, object] | None, later: Mapping[str, object] | None) -> list[str]:
    """Each rule `later` loosened against `strict` (plan snapshots): 'compare.tolerance: 0 -> 3'."""
    out = []
    for path, looser in RULES.items():
        a, b = _get(strict, path), _get(later, path)
        if a != b and looser(a, b):
            out.append(f"{path}: {_shown(a)} -> {_shown(b)}")
    return out


def memory_leaves_known(plan: Mapping[str, object] | None) -> bool:
    """Every field of the plan's memory section is one RULES judges (an unknown one is
    compared as identity, whole)."""
    mem = _get(plan, "memory")
    if not isinstance(mem, dict):
        return True
    for key, value in mem.items():
        if key == "stabilisation" and isinstance(value, dict):
            if any(f"memory.stabilisation.{k}" not in RULES for k in value):
                return False
        elif f"memory.{key}" not in RULES:
            return False
    return True


def marked(ev: Evidence, counted: list[tuple[str, list[int]]]) -> Evidence:
    """`ev` unchanged when nothing is `counted` against it; otherwise a copy that reads NOT
    ADMITTED (exit 1) naming each loosened rule, as a merge with the stricter runs' FAILs
    would: each (why, counts FAILED) makes those counts FAIL, and admission stops below the
    lowest. `rules_loosened.reasons` lists the reasons."""
    if not counted:
        return ev
    reasons = [why for why, _ in counted]
    failed = sorted({n for _, ns in counted for n in ns})
    lowest = failed[0] if failed else 0
    out = cast(dict[str, Any], dict(ev))
    verdict = ev["verdict"]
    # a merge's line says how many runs it merged: kept
    _, found, tail = str(verdict.get("line") or "").partition(" (merged from")
    merged = found + tail
    counts = {**(verdict.get("counts") or {}), **{str(n): "FAIL" for n in failed}}
    admitted = [n for n in verdict.get("admitted_counts") or [] if n < lowest]
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    shown = ", ".join(map(str, admitted)) or "none"
    out["verdict"] = {
        **verdict,
        "line": f"NOT ADMITTED — {reasons[0]}{more}; validated counts: {shown}{merged}",
        "exit_code": 1,
        "admitted_counts": admitted,
        "counts": counts,
    }
    out["admission_ready"] = False
    out["all_plan_rules"] = False
    out["rules_loosened"] = {"reasons": reasons, "failed_counts": failed}
    return cast("Evidence", out)
