"""Whether a field the plan excludes from comparison as volatile really varies: measured
over replies to identical requests, never assumed (the excluded paths as `remove_volatile`
in outputs/compare.py walks them)."""

from __future__ import annotations

import json
from typing import TypedDict

# What may be excluded from comparison at all, the one rule (the procedure's quality rules:
# "exclude only named, justified volatile fields such as timing, never an entire metadata
# object"; "compare all audio/stems, transcripts, artifacts and meaningful metadata").
# Only volatile scalars are: numbers (or null) inside the server's own timing report, the
# top-level `timing` object (API reference 6.1: wall_ms, rtf, ttft_ms, live timing), reached
# through objects only. Everything else a reply carries is output content: text, language,
# audio and named outputs, artifacts and their payloads, segments, words, speaker turns,
# structured outputs, any string, boolean or array, and any field reached through an array
# (a segment's or a word's time is that item's output). Content is never excluded:
# `remove_volatile` (outputs/compare.py) keeps it in the comparison whatever the plan says, Q2
# fails a plan that declares it volatile, and comparisons under such a plan are "parity
# unverified" (`content_exclusions`). A varying content field is parity unverified, never
# a reason to exclude it.
VOLATILE_ROOT = "timing"


def content_path(path: str) -> bool:
    """Does a declared exclusion name output content (anything outside the top-level
    timing report)?"""
    return path.split(".")[0] != VOLATILE_ROOT


def content_exclusions(paths: list[str]) -> list[str]:
    """The declared exclusions that name output content (see VOLATILE_ROOT)."""
    return [p for p in paths if content_path(p)]


def volatile_scalar(node: object) -> bool:
    """Is this value volatile scalars only: a number or null, or an object holding only
    those (no string, boolean or array anywhere under it)?"""
    if node is None:
        return True
    if isinstance(node, bool):
        return False
    if isinstance(node, int | float):
        return True
    if isinstance(node, dict):
        return all(volatile_scalar(v) for v in node.values())
    return False


def excludable(path: str, node: object) -> bool:
    """May the value a declared path names (reached through objects only) be removed from
    a reply before comparison? Only volatile scalars inside the timing report."""
    return not content_path(path) and volatile_scalar(node)


def content_at(data: object, path: str) -> list[str]:
    """Where a declared path names output content in this reply: a node reached through an
    array, or a value that is not volatile scalars (a string, boolean, array, or an object
    holding one). Empty when it names only volatile scalars, or nothing."""
    out: list[str] = []

    def walk(node: object, parts: list[str], where: str, through_list: bool) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, parts, f"{where}[{i}]", True)
            return
        if not isinstance(node, dict) or parts[0] not in node:
            return
        here = f"{where}.{parts[0]}" if where else parts[0]
        if len(parts) > 1:
            walk(node[parts[0]], parts[1:], here, through_list)
        elif through_list:
            out.append(f"{here} (inside an array)")
        elif not volatile_scalar(node[parts[0]]):
            out.append(f"{here} ({type(node[parts[0]]).__name__})")

    walk(data, path.split("."), "", False)
    return out


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


class Volatility(TypedDict):
    """What the baseline's identical requests showed of one excluded path (Q2)."""

    path: str
    status: str  # content, absent, stable, unmeasured or varies
    varying: list[str]
    stable: list[str]
    unmeasured: list[str]
    content: list[str]
    groups: int
    repeated_groups: int


class MeasuredExclusion(Volatility):
    """An excluded path's volatility, with the plan's reason for excluding it."""

    justification: str


def volatility(groups: dict[str, list[object]], path: str) -> Volatility:
    """Is an excluded path measured to vary? `groups` holds parsed replies to identical
    requests (one group per request and history). A leaf varies when it differs within some
    group; it is stable when it was seen in a group of two or more replies and never
    differed; unmeasured when it never was. status: content (the path names output content,
    by name or in some reply: never excludable, see VOLATILE_ROOT), varies (every leaf
    varies), stable (some leaf is stable), unmeasured (some leaf could not be measured),
    absent (never appeared)."""
    seen: set[str] = set()
    content: set[str] = set()
    varying: set[str] = set()
    measured: set[str] = set()
    repeated = 0
    for replies in groups.values():
        for r in replies:
            content.update(content_at(r, path))
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
    status = (
        "content"
        if content or content_path(path)
        else "absent"
        if not seen
        else "stable"
        if stable
        else "unmeasured"
        if unmeasured
        else "varies"
    )
    return {
        "path": path,
        "status": status,
        "varying": sorted(varying),
        "stable": stable,
        "unmeasured": unmeasured,
        "content": sorted(content),
        "groups": len(groups),
        "repeated_groups": repeated,
    }
