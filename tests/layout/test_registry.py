"""The assertion registry (parval/registry.py) cannot drift from the code: every
catalogue ID has exactly one entry, declared in the module of its judge, every named judge
is the function that really judges it (the gate modules' own `JUDGES` tables, the
framework's registered observation judges), every fault named is a stand-in fault, and
`parval explain` prints what the registry says."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from parval.procedure.assertion_ids import FRAMEWORK_GATE, all_ids
from parval.procedure.entry import CTEST_PART
from parval.registry import DECLARED_IN, ENTRIES, SCOPES, Entry, entry
from tests.layout.imports import ROOT

# Each model group's gate module, whose `JUDGES` table maps an ID to the function judging it.
GATE_MODULES = {
    "X1": "execution_path",
    "X2": "execution_path",
    "X3": "execution_path",
    "M1": "m1_baseline",
    "M2": "m2_concurrency",
    "M3": "m3_mixed_waves",
    "M4": "m4_recovery",
    "M5": "m5",
    "M6": "m6_modes",
    "Q1": "quality",
    "Q2": "quality",
    "Q3": "quality",
    "Q4": "quality",
    "Q5": "quality",
}
# Judged outside any JUDGES table: (module, function).
DECIDED_ELSEWHERE = {
    "X4": ("parval.framework.record_trust", "x4_result"),
    "Q6": ("parval.gates.admission_verdict", "q6"),
}
# Framework judges that judge no server behaviour (skipped / not set up).
NOT_BEHAVIOUR = {"given", "precondition"}
# Stand-in switches that are behaviours a correct server may have, not faults.
BEHAVIOURS = {"registration_outputs", "cold_warm_differ", "pcm32_output"}


def _gate(group: str) -> ModuleType:
    return importlib.import_module(f"parval.gates.{GATE_MODULES[group]}")


def _framework_judges() -> dict[str, Callable[..., Any]]:
    from parval.framework.judges import JUDGES

    return dict(JUDGES)


def _assess_f6() -> Callable[..., Any]:
    """The one `assess_f6` under parval/framework (wherever it lives now)."""
    found = [p for p in sorted((ROOT / "framework").glob("*.py")) if "\ndef assess_f6(" in p.read_text("utf-8")]
    assert len(found) == 1, f"assess_f6 defined in {found}"
    fn: Callable[..., Any] = importlib.import_module(f"parval.framework.{found[0].stem}").assess_f6
    return fn


def _by_id() -> dict[str, Entry]:
    return {e.id: e for e in ENTRIES}


# -- one entry per catalogue ID -----------------------------------------------------------


def test_every_catalogue_id_has_exactly_one_entry() -> None:
    counts = Counter(e.id for e in ENTRIES)
    twice = sorted(i for i, n in counts.items() if n > 1)
    assert not twice, f"IDs with more than one entry: {twice}"
    missing = [i for i in all_ids() if i not in counts]
    assert not missing, f"catalogue IDs without a registry entry: {missing}"
    unknown = sorted(set(counts) - set(all_ids()))
    assert not unknown, f"entries naming IDs the catalogue does not have: {unknown}"
    assert len(ENTRIES) == len(all_ids())


def test_entry_lookup() -> None:
    assert entry("M2.observed_active").id == "M2.observed_active"
    with pytest.raises(KeyError, match="not an assertion ID"):
        entry("M2.nope")


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.id)
def test_entry_is_complete(e: Entry) -> None:
    assert e.scope in SCOPES, f"{e.id}: unknown scope {e.scope!r}"
    assert e.evidence and all(x.strip() for x in e.evidence), f"{e.id}: no evidence named"
    assert e.reproduce.strip(), f"{e.id}: no reproduction"
    assert e.asks, f"{e.id}: no catalogue text"


def test_scopes_follow_where_the_gates_judge() -> None:
    by = _by_id()
    per_count = {i for i in all_ids() if i.split(".")[0] in ("M2", "M3", "M5")}
    assert {i for i, e in by.items() if e.scope == "count"} == per_count
    assert {i for i, e in by.items() if e.scope == "record"} == set(FRAMEWORK_GATE)
    assert by["X4"].scope == "commit"
    assert {i for i, e in by.items() if e.scope == "rule"} == {"Q1", "Q2", "Q3", "Q4", "Q5"}


# -- the judges are the functions that judge ----------------------------------------------


def test_every_entry_is_declared_beside_its_judge() -> None:
    """A model entry lives in the module that defines its judge; a framework entry in the
    module of its group's judges (parval.framework.judges_f<n>), which defines its judge
    (F6) or every judge its sub-checks name (F1-F5; the shared CTest half aside)."""
    judges = _framework_judges()
    astray: list[str] = []
    for module, entries in DECLARED_IN.items():
        for e in entries:
            fn = e.judge_function()
            if e.id not in FRAMEWORK_GATE:
                home = f"{fn.__module__}:{fn.__name__}"
                if fn.__module__ != module or home != e.judge:
                    astray.append(f"{e.id} declared in {module}, judged by {home}")
                continue
            group_module = f"parval.framework.judges_{e.group.lower()}"
            judged_in = {fn.__module__} if not e.parts else {judges[k].__module__ for k in e.parts if k != CTEST_PART}
            if module != group_module or judged_in != {group_module}:
                astray.append(f"{e.id} declared in {module}, its judges in {sorted(judged_in)}")
    assert not astray, "registry entries not declared beside their judges:\n" + "\n".join(astray)


def test_every_gate_modules_entries_are_its_judges_table() -> None:
    """A gate module's `ENTRIES` are those of the judges its `JUDGES` table dispatches to."""
    for module in sorted(set(GATE_MODULES.values())):
        gate = importlib.import_module(f"parval.gates.{module}")
        assert [e.id for e in gate.ENTRIES] == list(gate.JUDGES), module
        assert DECLARED_IN[gate.__name__] == gate.ENTRIES, module


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.id)
def test_every_judge_resolves_to_a_callable(e: Entry) -> None:
    assert callable(e.judge_function()), e.judge


def test_model_judges_are_what_their_gate_tables_dispatch_to() -> None:
    by = _by_id()
    tabled: set[str] = set()
    for group in sorted(set(GATE_MODULES)):
        table = _gate(group).JUDGES
        ids = [i for i in table if i.split(".")[0] == group]
        assert ids, f"{GATE_MODULES[group]}.JUDGES judges nothing of {group}"
        for id_ in ids:
            assert by[id_].judge_function() is table[id_], (
                f"{id_}: the registry names {by[id_].judge}, but "
                f"parval.gates.{GATE_MODULES[group]}.JUDGES dispatches to "
                f"{table[id_].__module__}:{table[id_].__name__}"
            )
        tabled |= set(table)
    for id_, (module, name) in DECIDED_ELSEWHERE.items():
        assert by[id_].judge_function() is getattr(importlib.import_module(module), name)
    model_ids = {i for i in all_ids() if i not in FRAMEWORK_GATE}
    assert tabled | set(DECIDED_ELSEWHERE) == model_ids, (
        "model IDs neither in a gate module's JUDGES table nor decided elsewhere: "
        f"{sorted(model_ids - tabled - set(DECIDED_ELSEWHERE))}"
    )


def test_every_model_gate_judge_goes_through_the_verdict_shape() -> None:
    """A new model-gate judge cannot skip the shape of parval/procedure/judge_shape.py: each registered
    model assertion's judge is a `@shape.judge(ID)` function for that very ID."""
    from parval.procedure.judge_shape import entry_of

    model_ids = [i for i in all_ids() if i not in FRAMEWORK_GATE]
    by = _by_id()
    unshaped = {
        i: by[i].judge for i in model_ids if (found := entry_of(by[i].judge_function())) is None or found.id != i
    }
    assert not unshaped, f"model-gate judges not registered with @shape.judge(ID): {unshaped}"


def test_framework_entries_name_their_combiner_and_judge_keys() -> None:
    from parval.framework.judges import assertion_result

    judges = _framework_judges()
    f6 = _assess_f6()
    fed: set[str] = set()
    for e in ENTRIES:
        if e.id not in FRAMEWORK_GATE:
            assert not e.parts, f"{e.id}: only framework entries combine judge keys"
            continue
        if e.group == "F6":
            assert e.judge_function() is f6, f"{e.id}: judged by assess_f6, not {e.judge}"
            assert not e.parts
            continue
        assert e.judge_function() is assertion_result, f"{e.id}: {e.judge}"
        assert e.parts, f"{e.id}: names no observation judge"
        unknown = [k for k in e.parts if k not in judges]
        assert not unknown, f"{e.id}: not registered framework judges: {unknown}"
        assert not set(e.parts) & NOT_BEHAVIOUR, e.id
        fed |= set(e.parts)
    left_out = sorted(set(judges) - NOT_BEHAVIOUR - fed)
    assert not left_out, f"registered framework judges no F entry lists in its parts: {left_out}"


def _probe_feeds() -> set[tuple[str, str]]:
    """(assertion, judge key) of every `observe("F..", name, "key", ...)` call with literal
    arguments in the framework probes."""
    feeds: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "framework").glob("probes_*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "observe"
                and len(node.args) >= 3
            ):
                continue
            aid, key = node.args[0], node.args[2]
            if (
                isinstance(aid, ast.Constant)
                and isinstance(aid.value, str)
                and isinstance(key, ast.Constant)
                and isinstance(key.value, str)
            ):
                feeds.add((aid.value, key.value))
    return feeds


def test_every_judge_key_a_probe_feeds_is_in_that_entrys_parts() -> None:
    from parval.framework.judges_f3 import CTEST_EVIDENCE

    feeds = _probe_feeds()
    assert len(feeds) > 30, "the probe scan found too few observe() calls"
    feeds |= {(aid, "f3.ctest_evidence") for aid in CTEST_EVIDENCE}
    by = _by_id()
    missing = sorted(f"{aid} <- {key}" for aid, key in feeds if key not in NOT_BEHAVIOUR and key not in by[aid].parts)
    assert not missing, f"judge keys the probes feed but the registry does not list: {missing}"


# -- faults -------------------------------------------------------------------------------


def test_every_fault_named_is_a_standin_fault() -> None:
    from parval.standin.faults import FAULT_DEFAULTS

    named = {f for e in ENTRIES for f in e.faults}
    assert named, "no entry names a stand-in fault"
    unknown = sorted(named - set(FAULT_DEFAULTS))
    assert not unknown, f"faults the stand-in does not have: {unknown}"
    behaviours = sorted(named & BEHAVIOURS)
    assert not behaviours, f"behaviours of a correct server named as faults: {behaviours}"


def test_framework_regressions_are_listed_with_their_assertion() -> None:
    from tests.framework.helpers import REGRESSIONS

    by = _by_id()
    for fault, target in REGRESSIONS.items():
        assert fault in by[target].faults, f"{target} does not list the regression {fault}"


# -- parval explain -----------------------------------------------------------------------


def _explain(assertion: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parval", "explain", assertion], capture_output=True, text=True, timeout=120, check=False
    )


def test_explain_prints_the_catalogue_text_judge_and_evidence() -> None:
    from parval.gates.m2_concurrency import JUDGES

    res = _explain("M2.observed_active")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())  # wrapped text, compared unwrapped
    e = entry("M2.observed_active")
    assert " ".join(e.asks.split()) in out
    assert JUDGES["M2.observed_active"].__name__ in out
    assert e.judge in out
    for x in e.evidence:
        assert " ".join(x.split()) in out, x
    assert "fake_concurrency" in out


def test_explain_lists_the_framework_judge_keys() -> None:
    res = _explain("F1.fifo")
    assert res.returncode == 0, res.stderr
    for key in entry("F1.fifo").parts:
        assert key in res.stdout, key
    assert "assertion_result" in res.stdout


def test_explain_an_unknown_id_is_a_usage_error() -> None:
    res = _explain("NOPE")
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "'NOPE' is not an assertion ID" in res.stderr


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.id)
def test_every_entry_describes_within_100_columns(e: Entry) -> None:
    from parval.commands.explain import describe

    text = describe(e)
    assert text.startswith(e.id)
    long = [line for line in text.splitlines() if len(line) > 100]
    assert not long, long
