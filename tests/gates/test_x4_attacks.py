"""Attacks on the X4 judge: a clean verify-protected result PASSes; taking away or emptying
any piece of it the verdict rests on never leaves PASS (plain or wrapped in an X4 entry), and
a FAIL needs the difference it names (a changed protected file or a legacy runtime beyond its
rejection block), never a bare status word."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parval.framework.record_trust import x4_result
from parval.status import Status
from tests.records_kit import CANDIDATE_COMMIT, x4_json

# Keys of the result that are not evidence of X4 (each says why): taking them away may leave
# the verdict as it was.
NOT_EVIDENCE = {
    ("warnings",): "notes for the reader; an empty list is the usual value",
    ("config",): "where the protected-path configuration came from, shown in the report",
    ("upstream_ref",): "the ref as typed; `upstream` is the commit it resolved to",
    ("candidate_dirty",): "adds a limitation when true; absent means a clean tree",
    ("repo",): "the checkout's path, used for the reproduction command only",
    ("version",): "parval's version, shown in the report",
    ("legacy_runtime", "reason"): "the words of the legacy check; its status is the evidence",
    ("legacy_runtime", "hunk"): "the diff text, empty on a PASS",
}


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))


def _strip(data: dict[str, Any], path: tuple[str, ...], how: str) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for k in path[:-1]:
        node = node[k]
    old = node[path[-1]]
    if how == "delete":
        del node[path[-1]]
    else:
        node[path[-1]] = type(old)() if isinstance(old, (str, list, dict)) else None
    return out


def _value(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for k in path:
        data = data[k]
    return data


CLEAN = x4_json("PASS")
# Emptying a value that is already empty (`changed` on a PASS) takes nothing away.
ATTACKS = [
    (p, how)
    for p in _paths(CLEAN)
    if p not in NOT_EVIDENCE
    for how in ("delete", "empty")
    if how == "delete" or _value(CLEAN, p) not in ([], {}, "", None)
]


def _wrapped(result: dict[str, Any]) -> dict[str, Any]:
    return {"id": "X4", "status": "PASS", "reason": "wrapped", "evidence": result}


def test_the_clean_result_passes_plain_and_wrapped() -> None:
    assert x4_result(CLEAN, CANDIDATE_COMMIT).status is Status.PASS
    assert x4_result(_wrapped(CLEAN), CANDIDATE_COMMIT).status is Status.PASS


@pytest.mark.parametrize(("path", "how"), ATTACKS, ids=lambda v: ".".join(v) if isinstance(v, tuple) else v)
def test_taking_evidence_away_never_leaves_pass(path: tuple[str, ...], how: str) -> None:
    attacked = _strip(CLEAN, path, how)
    for form in (attacked, _wrapped(attacked)):
        r = x4_result(form, CANDIDATE_COMMIT)
        assert r.status is not Status.PASS, (path, how, r.reason)
        assert r.status is not Status.FAIL, (path, how, r.reason)  # nothing was observed to differ


@given(st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=4, unique=True))
def test_several_pieces_taken_away_never_leave_pass(attacks: list[tuple[tuple[str, ...], str]]) -> None:
    data = CLEAN
    for path, how in attacks:
        try:
            data = _strip(data, path, how)
        except (KeyError, TypeError):
            continue  # an earlier attack took the parent away
    assert x4_result(data, CANDIDATE_COMMIT).status is not Status.PASS


def test_a_fail_needs_the_difference_it_names() -> None:
    """A result that says FAIL but names neither a changed file nor a legacy runtime
    difference is no observed violation: PENDING, asking for a re-run."""
    bare = {**x4_json("PASS"), "status": "FAIL"}
    r = x4_result(bare, CANDIDATE_COMMIT)
    assert r.status is Status.PENDING and "names no changed protected file" in r.reason
    changed = x4_result(x4_json("FAIL"), CANDIDATE_COMMIT)
    assert changed.status is Status.FAIL and changed.evidence["violation"]["changed"] == ["app/server/runtime.h"]
    legacy = copy.deepcopy(x4_json("PASS"))
    legacy["status"] = "FAIL"
    legacy["legacy_runtime"]["status"] = "FAIL"
    r = x4_result(legacy, CANDIDATE_COMMIT)
    assert r.status is Status.FAIL and r.evidence["violation"]["legacy_runtime"] == "FAIL"


def test_a_pass_needs_protected_paths_that_were_compared() -> None:
    r = x4_result({**x4_json("PASS"), "checked_paths": []}, CANDIDATE_COMMIT)
    assert r.status is Status.PENDING and "compared no protected path" in r.reason
