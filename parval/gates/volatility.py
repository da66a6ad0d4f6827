"""Whether a field the plan excludes from comparison as volatile really varies: measured
over replies to identical requests, never assumed (the excluded paths as `remove_volatile`
in gates/compare.py walks them)."""

from __future__ import annotations

import json


def leaves_at(data: object, path: str) -> dict[str, str] | None:
    """Every leaf under the nodes a dotted volatile `path` names (through lists, as
    `remove_volatile` walks them): leaf path -> canonical JSON of its value. None when the
    path names nothing in this reply. Empty objects and lists are leaves themselves."""
    out: dict[str, str] = {}
    found = False

    def collect(node: object, where: str) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                collect(v, f"{where}.{k}")
        elif isinstance(node, list) and node:
            for i, v in enumerate(node):
                collect(v, f"{where}[{i}]")
        else:
            out[where] = json.dumps(node, sort_keys=True)

    def walk(node: object, parts: list[str], where: str) -> None:
        nonlocal found
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, parts, f"{where}[{i}]")
            return
        if not isinstance(node, dict) or parts[0] not in node:
            return
        here = f"{where}.{parts[0]}" if where else parts[0]
        if len(parts) == 1:
            found = True
            collect(node[parts[0]], here)
        else:
            walk(node[parts[0]], parts[1:], here)

    walk(data, path.split("."), "")
    return out if found else None


_ABSENT = "\0absent"


def volatility(groups: dict[str, list[object]], path: str) -> dict[str, object]:
    """Is an excluded path measured to vary? `groups` holds parsed replies to identical
    requests (one group per request and history). A leaf varies when it differs within some
    group; it is stable when it was seen in a group of two or more replies and never
    differed; unmeasured when it never was. status: varies (every leaf varies), stable (some
    leaf is stable), unmeasured (some leaf could not be measured), absent (never appeared)."""
    seen: set[str] = set()
    varying: set[str] = set()
    measured: set[str] = set()
    repeated = 0
    for replies in groups.values():
        found = [leaves_at(r, path) for r in replies]
        leaves = {leaf for f in found if f is not None for leaf in f}
        seen |= leaves
        if len(replies) < 2:
            continue
        repeated += 1
        for leaf in leaves:
            values = {(f or {}).get(leaf, _ABSENT) for f in found}
            measured.add(leaf)
            if len(values) > 1:
                varying.add(leaf)
    stable = sorted(measured - varying)
    unmeasured = sorted(seen - measured)
    status = "absent" if not seen else "stable" if stable else "unmeasured" if unmeasured else "varies"
    return {
        "path": path,
        "status": status,
        "varying": sorted(varying),
        "stable": stable,
        "unmeasured": unmeasured,
        "groups": len(groups),
        "repeated_groups": repeated,
    }
