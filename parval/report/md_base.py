"""What every markdown report shares: status icons, table-cell escaping, short hashes and the
walk over every judged entry, so the run report, its failure section and the catalogue
render the same evidence the same way."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TypedDict

from parval.jsontypes import JsonObject
from parval.rundir.evidence_types import Assertion, Evidence, RunInfo

ICON = {"PASS": "✅", "FAIL": "❌", "PENDING": "⏳", "BLOCKED": "⛔", "UNSUPPORTED": "🚫", "NOT_APPLICABLE": "➖"}
MAX_ROWS = 10


# -- absolute paths (shown relative in Reproduce commands, hashed by --redact-paths) --------
PATH_COMPONENT = r"[\w.+@%~=-]+"
ABSOLUTE_PATH = re.compile(rf"(?<![\w.:/])(/(?:{PATH_COMPONENT}/)*{PATH_COMPONENT})")
_KEEP = ("/v1/", "/health")


def path_token(path: str) -> str:
    """What stands for a path not shown: the first 12 hex digits of its sha256."""
    return f"<path:{hashlib.sha256(path.encode()).hexdigest()[:12]}>"


def kept_path(path: str) -> bool:
    """Server routes and single-component paths (/tmp) are no machine's secret."""
    return path.count("/") < 2 or path.startswith(_KEEP)


# How far above the report's folder a path may lie and still be shown relative to it.
NEAR_LEVELS = 1


def local_paths(text: str, base: Path) -> tuple[str, bool]:
    """A command of a report without this machine's absolute paths: one inside `base` (the
    folder the report is made in) or at most NEAR_LEVELS folders above it as a relative
    path, any other as its `path_token`; and whether anything was changed. Server routes
    and single-component paths are kept."""
    changed = False
    roots = {os.path.abspath(base), os.path.realpath(base)}

    def sub(m: re.Match[str]) -> str:
        nonlocal changed
        path = m.group(1)
        if kept_path(path):
            return path
        changed = True
        for candidate in (path, os.path.realpath(path)):
            for root in roots:
                rel = os.path.relpath(candidate, root)
                # inside the folder, or beside it (../audio.cpp/build/...): a path a reader can follow
                if rel.split(os.sep)[: NEAR_LEVELS + 1].count(os.pardir) <= NEAR_LEVELS:
                    return rel
        return path_token(path)

    return ABSOLUTE_PATH.sub(sub, text), changed


def reproduce_lines(commands: list[str]) -> list[str]:
    """A Reproduce block. A PR comment is read on other machines: this machine's absolute
    paths become relative to the folder the report is made in, or `<path:…>` tokens for
    files far from it (evidence.json keeps them whole; --redact-paths hashes the rest of
    the report too)."""
    if not commands:
        return []
    here = Path.cwd()
    shown = [local_paths(c, here) for c in commands]
    note = (
        [f"# paths relative to the folder the report was made in ({here.name}/); <path:…>: a file far from it"]
        if any(changed for _, changed in shown)
        else []
    )
    return ["Reproduce:", "", "```sh", *note, *(c for c, _ in shown), "```", ""]


class ReportContext(TypedDict, total=False):
    """What the markdown needs beyond the evidence (`parval.report.render.report_context`)."""

    argv: dict[str, list[str]]  # each server's command line, by run name
    requests: JsonObject  # the request bodies, by request name (the manifest's)
    run_dirs: list[str]  # the run directories read
    integrity: list[str]  # what was verified of each before it was read


def esc(text: object) -> str:
    """Safe inside a table cell; `<` outside code spans is escaped (GitHub hides unknown tags)."""
    parts = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def cut(text: object, n: int) -> str:
    """`text` in at most about `n` characters, cut at a word boundary with an ellipsis."""
    s = str(text).strip()
    if len(s) <= n:
        return s
    head = s[:n].rstrip()
    space = head.rfind(" ")
    if space > n // 2:
        head = head[:space]
    return head.rstrip(" ,;:(") + "…"


# Python reprs a judge's reason may carry, in the JSON forms the plan and the server use
_REPR = {"None": "null", "False": "false", "True": "true"}
_SLOT_REPR = re.compile(r"\b(slots)=(None|False|True|'([^']*)')")
_REPEATED_COUNT = re.compile(r"\b(count \d+): \1: ")
# a start's attempt number is the event sequence number its server directory is named by
_ATTEMPT = re.compile(r"\b([A-Za-z][\w.]*(?:-[\w.]+)*) attempt (\d+)\b")


def plain(reason: object) -> str:
    """A judge's reason as a reader should see it: no Python reprs (`slots=None` is
    `slots=null`), no count named twice, the model-level entry not called `count None`, and a
    start named by its server directory rather than by the sequence number of its start."""
    s = str(reason)
    s = _SLOT_REPR.sub(lambda m: f"{m[1]}=" + (f'"{m[3]}"' if m[3] is not None else _REPR[m[2]]), s)
    s = _REPEATED_COUNT.sub(r"\1: ", s)
    s = s.replace("count None: ", "model level: ")
    return _ATTEMPT.sub(r"\1 (servers/\1-\2)", s)


def short(h: object, n: int = 16) -> str:
    """A hash cut to `n` characters in a code span (a dash when there is none)."""
    return f"`{str(h)[:n]}…`" if h else "–"


def detailed(ev: Evidence) -> list[tuple[int | None, Assertion]]:
    """Every judged entry with its count (None for model-level and most framework entries)."""
    out: list[tuple[int | None, Assertion]] = []
    for a in ev["model_checks"].get("model_level", []):
        out.append((None, a))
    for n, c in sorted(ev["model_checks"]["per_count"].items(), key=lambda kv: int(kv[0])):
        for a in c.get("assertions", []):
            out.append((int(n), a))
    for a in ev["framework_checks"].get("results", []):
        out.append((a.get("count"), a))  # a count the framework record does not cover
    return out


def count_sources(ev: Evidence, count: int | None) -> list[str]:
    """The run directories whose events judged `count` (the one run's when not merged)."""
    run: RunInfo = ev.get("run") or {}
    if count is not None and run.get("count_sources"):
        return list(run["count_sources"].get(str(count)) or [])
    if run.get("dir"):
        return [str(run["dir"])]
    return list((run.get("count_sources") or {}).get("1") or [])
