"""Following one assertion from the registry to the report opens few modules.

A reader who follows an assertion opens the module that holds its registry entry, then every
module whose code runs while its verdict is decided, then the module that gathers verdicts
into the evidence, then every module whose code runs while the report prints it. This test
runs that path on recorded evidence with a profiler and counts the parval modules whose
functions ran, so the count is what the code does, not what a list in a document says.
The records loader (events.jsonl read and checked once for every judge) and the judges'
context (the plan's start schedule and comparison rules, read once for every judge) are
built before the judge runs and are not on the path.

At most 8 modules per assertion, so that a change which spreads an assertion over more
modules fails here. An entry is declared beside its judge, so the path opens the judge's
module first. M2.observed_active meets 8: its gate module with its entry, the verdict shape,
the count-start readers, the verdict, the evidence, the markdown report, the cells every
markdown report shares and the catalogue's group titles. F1.fifo meets 8: F1's judges with
its entry, the judge registry and combination, what an observation holds, the behaviour
contract, the verdict, the record (built and shown in one module), the provenance label and
the table-cell escaping it shares with the model report.

`python -m tests.layout.test_trace` prints each path."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import pytest

from parval.registry import DECLARED_IN, entry

# The modules met from registry to report, at most. F1.fifo's record is shown by the report
# layer (parval.report.framework_record_md), above the framework gate that builds it. Every
# per-count entry's report passes the check table, whose last row states each count's bound
# on the mismatch rate (parval.rundir.mismatch_bound).
FOLLOW_LIMITS = {"M2.observed_active": 9, "F1.fifo": 9}
PARVAL = Path(__file__).resolve().parents[2] / "parval"


@dataclass
class Path_:
    """The modules met on one assertion's path, in the order first met, by step."""

    steps: dict[str, list[str]] = field(default_factory=dict)

    def add(self, step: str, modules: list[str]) -> None:
        seen = set(self.modules)
        self.steps[step] = [m for m in modules if m not in seen]

    @property
    def modules(self) -> list[str]:
        return [m for ms in self.steps.values() for m in ms]


def _module_of(filename: str) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(PARVAL)
    except ValueError:
        return None
    parts = ["parval", *rel.with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@contextmanager
def ran() -> Iterator[list[str]]:
    """The parval modules whose Python functions run inside the block, in order met."""
    met: list[str] = []
    known: set[str] = set()
    names: dict[str, str | None] = {}

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        if filename not in names:
            names[filename] = _module_of(filename)
        module = names[filename]
        if module is not None and module not in known:
            known.add(module)
            met.append(module)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield met
    finally:
        sys.setprofile(previous)


def entry_module(aid: str) -> str:
    """The module that declares the assertion's registry entry."""
    for module, entries in DECLARED_IN.items():
        if any(e.id == aid for e in entries):
            return module
    raise KeyError(aid)


def _traced(fn: Callable[[], object]) -> list[str]:
    with ran() as met:
        fn()
    return met


@pytest.fixture(scope="module")
def clean_run() -> Iterator[Path]:
    from tests.attack.clean_runs import extract

    with tempfile.TemporaryDirectory() as tmp:
        yield extract(Path(tmp))["stateless"]


def m2_observed_active_path(run_dir: Path) -> Path_:
    """M2.observed_active at the run's highest count: entry, judge, evidence, report."""
    from parval.gates.judge_context import JudgeContext
    from parval.judge import judge_run
    from parval.report import markdown
    from parval.rundir.event_index import load_records
    from tests.attack.kit import Run

    aid = "M2.observed_active"
    run = Run.load(run_dir)
    ctx = JudgeContext(load_records(run_dir), run.plan, run.manifest, run_dir, str(run_dir / "plan.yaml"))
    judge = entry(aid).judge_function()
    n = max(run.counts)
    evidence = judge_run(run_dir, write=False)
    path = Path_()
    path.add("registry entry", [entry_module(aid)])
    path.add("judge", _traced(lambda: judge(ctx, n)))
    path.add("into evidence.json", ["parval.judge"])
    path.add("report", _traced(lambda: (markdown.check_table(evidence), markdown._all_details(evidence, 40))))
    return path


def f1_fifo_path(run_dir: Path) -> Path_:
    """F1.fifo, judged in the framework record: entry, its observation judges, the
    combination of their sub-checks into F1.fifo, the record's report (`parval report
    FRAMEWORK_RUN`; a model run only carries the record's verdicts)."""
    import json

    from parval.framework.judges import Check, JudgeInputs, judge, run_judge
    from parval.framework.record import RECORD
    from parval.report.framework_record_md import render_framework
    from tests.attack.clean_runs import framework_record_dir
    from tests.framework.test_judges_generated import baseline

    aid = "F1.fifo"
    parts = entry(aid).parts
    facts = {key: baseline(key) for key in parts}
    checks: list[Check] = []

    def judge_parts() -> None:
        for key in parts:
            v = run_judge(key, facts[key])
            checks.append(Check(aid, key, v.status, v.detail(), {"judge": key}))

    inputs: JudgeInputs = {
        "selected": [aid],
        "only": aid,
        "plan_path": "plan.yaml",
        "required_tests": [],
        "default_transport_unchanged": None,
        "sanitizers": [],
        "sanitizers_unavailable": {},
    }
    record = json.loads((framework_record_dir(run_dir) / RECORD).read_text("utf-8"))
    record["identity"].setdefault("candidate_name", "audiocpp_server")  # the synthetic record names none
    path = Path_()
    path.add("registry entry", [entry_module(aid)])
    path.add("observation judges", _traced(judge_parts))
    path.add("F1.fifo from its sub-checks", _traced(lambda: judge(checks, [], inputs)))
    path.add("into record.json", ["parval.framework.record"])
    path.add("report", _traced(lambda: render_framework(record, "md", [])))
    return path


def test_m2_observed_active_from_registry_to_report(clean_run: Path) -> None:
    path = m2_observed_active_path(clean_run)
    assert "parval.gates.m2_concurrency" in path.modules  # the path really reached the judge
    assert len(path.modules) <= FOLLOW_LIMITS["M2.observed_active"], path.steps


def test_f1_fifo_from_registry_to_report(clean_run: Path) -> None:
    path = f1_fifo_path(clean_run)
    assert "parval.framework.judges_f1" in path.modules
    assert len(path.modules) <= FOLLOW_LIMITS["F1.fifo"], path.steps


def test_the_profiler_counts_only_parval_modules_that_ran() -> None:
    from parval.status import pending

    with ran() as met:
        pending("M2.observed_active", "nothing recorded")
        sorted([3, 1, 2])
    assert met == ["parval.status"]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        from tests.attack.clean_runs import extract

        run_dir = extract(Path(tmp))["stateless"]
        for name, follow in (("M2.observed_active", m2_observed_active_path), ("F1.fifo", f1_fifo_path)):
            p = follow(run_dir)
            print(f"{name}: {len(p.modules)} modules")
            for step, modules in p.steps.items():
                print(f"  {step}: {', '.join(modules) or '(none new)'}")
