"""Mutation testing of the judges: parval/gates/ and parval/judge.py, with mutmut 3.8.

    .venv/bin/python -m tests.mutation.run [--max-children 2] [--workdir DIR] [--only FILE ...]
    .venv/bin/python -m tests.mutation.run --report-only --workdir DIR

It copies the project to a work directory (a fresh temporary one unless --workdir names
one to resume), writes mutmut's configuration there (so it conflicts with nothing in the
checkout), rewrites each `@shape.judge(...)` there as an assignment after its function (mutmut
leaves decorated functions unmutated, and those are the judges themselves) and runs mutmut
in passes, each on the survivors of the one before:

1. `DIR/fast`: every mutant, against the in-process tests that judge synthetic or recorded
   evidence without starting a server (FAST below); seconds per mutant.
2. `DIR/approved`: FAST plus the approved verdicts of every judge on the checked-in clean
   runs (tests/attack/test_approved.py).
3. `DIR/attack`: those plus the Hypothesis attack tests (tests/attack/test_attacks.py, the
   default small profile), which reach every judge but take a while per mutant.

A mutant counts as killed when any pass kills it. The score is printed per module
(killed, survived, no covering test, other: timeouts, suspicious), and the survivors are
listed in DIR/survivors.txt (`mutmut show NAME` in DIR/fast prints one). Resuming in the
same DIR re-copies the tests and sources; mutmut keeps the results of mutants whose
function did not change. Needs mutmut (`pip install -e '.[dev]'`). Takes about an hour
on two shared cores; it is not part of .ci/run."""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAST = [
    "tests/gates",
    "tests/attack/test_judged_evidence.py",
    "tests/test_memory_gate.py",
    "tests/test_performance.py",
    "tests/test_performance_exact.py",
    "tests/test_memory_rules_exact.py",
    "tests/test_protected.py",
    "tests/test_schema_overhead.py",
    "tests/campaign/test_probe_judgments.py",
    "tests/framework/test_framework_ref.py",
    "tests/framework/test_framework_reuse.py",
    "tests/runners/test_observe_once.py::test_campaign_overhead_from_events",
    "tests/runners/test_observe_once.py::test_overhead_beyond_the_per_start_cost",
]
APPROVED = [*FAST, "tests/attack/test_approved.py"]
PASSES = [("fast", FAST), ("approved", APPROVED), ("attack", [*APPROVED, "tests/attack/test_attacks.py"])]
# the judges of a model run, and the checks of the framework record it trusts
MUTATE = [
    "parval/gates/*",
    "parval/judge.py",
    "parval/procedure/judge_shape.py",
    "parval/framework/record_trust.py",
    "parval/framework/record_identity.py",
    "parval/framework/reuse.py",
]
COPY = ["parval", "tests", "schemas", "plans", "README.md", "pyproject.toml"]


def config(only: list[str], tests: list[str]) -> str:
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["parval/"]\n'
        f"only_mutate = {json.dumps(only or MUTATE)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        # -n 0: mutmut records which test reaches which mutant in its own process; tests
        # spread over xdist workers (the default addopts) would reach none
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-n", "0"]\n'
        'also_copy = ["plans/", "schemas/", "README.md", "tests/"]\n'
    )


def prepare(work: Path, only: list[str], tests: list[str]) -> None:
    """Copy the checkout's current sources and tests into `work` (replacing older copies)."""
    work.mkdir(parents=True, exist_ok=True)
    for name in COPY:
        src = ROOT / name
        dst = work / name
        if dst.is_dir():
            shutil.rmtree(dst)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "mutants", ".hypothesis"))
        else:
            shutil.copy2(src, dst)
    _undecorate(work, only)
    pyproject = work / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + config(only, tests))


def undecorate_judges(source: str) -> str:
    """The same module with each `@shape.judge(...)` decorator applied by an assignment after
    its function instead (`f = shape.judge(...)(f)`): mutmut leaves decorated functions
    unmutated, and these are the judges themselves."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.decorator_list
        and all((ast.get_source_segment(source, d) or "").startswith("shape.judge(") for d in node.decorator_list)
    ]
    for fn in reversed(found):  # bottom up: earlier line numbers stay valid
        decorators = [ast.get_source_segment(source, d) or "" for d in fn.decorator_list]
        first = fn.decorator_list[0].lineno - 1
        applied = "".join(f"{fn.name} = {d}({fn.name})\n" for d in reversed(decorators))
        end = fn.end_lineno or fn.lineno
        lines[end:end] = ["\n", applied]
        del lines[first : fn.lineno - 1]
    return "".join(lines)


def _undecorate(work: Path, only: list[str]) -> None:
    for path in sorted((work / "parval").rglob("*.py")):
        rel = path.relative_to(work).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in (only or MUTATE)):
            text = path.read_text()
            if "@shape.judge(" in text:
                path.write_text(undecorate_judges(text))


def mutmut(work: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, check=False)


def results(work: Path) -> dict[str, str]:
    """Mutant name -> status, as `mutmut results --all true` prints them."""
    if not (work / "mutants").exists():
        return {}
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name and "__mutmut_" in name:
            found[name] = status.strip()
    return found


def combined(passes: list[dict[str, str]]) -> dict[str, str]:
    """Each mutant's status in the last pass that ran it (a later pass runs only survivors)."""
    out = dict(passes[0]) if passes else {}
    for later in passes[1:]:
        for name, status in out.items():
            if status == "survived" and later.get(name) not in (None, "not checked"):
                out[name] = later[name]
    return out


def _results(work: Path, passes: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    return [results(work / name) for name, _ in passes]


def module_of(name: str) -> str:
    # e.g. parval.gates.m2_concurrency.x_m2_starts__mutmut_3, parval.judge.xǁC__m__mutmut_1
    return name.split(".x_")[0].split(".xǁ")[0]


def report(found: dict[str, str]) -> str:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for name, status in found.items():
        per[module_of(name)][status] += 1
    head = f"{'module':<40} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'score':>7}"
    lines = [head]
    total: Counter[str] = Counter()
    for module in sorted(per):
        total.update(per[module])
        lines.append(_row(module, per[module]))
    lines.append(_row("all", total))
    return "\n".join(lines)


def _row(label: str, c: Counter[str]) -> str:
    n = sum(c.values())
    killed = c.get("killed", 0)
    survived = c.get("survived", 0)
    untested = c.get("no tests", 0)
    other = n - killed - survived - untested
    score = 100.0 * killed / n if n else 0.0
    return f"{label:<40} {n:>8} {killed:>7} {survived:>9} {untested:>9} {other:>6} {score:>6.1f}%"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None, help="resume in (or keep) this work directory")
    parser.add_argument("--only", nargs="*", default=[], help="mutate only these files (globs under parval/)")
    parser.add_argument("--fast-only", action="store_true", help="run the first pass only")
    parser.add_argument("--report-only", action="store_true", help="print the score of an existing work directory")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="parval-mutation-"))
    passes = PASSES[:1] if args.fast_only else PASSES
    children = str(args.max_children)
    if not args.report_only:
        print(f"mutation work directory: {work}", flush=True)
        for i, (name, tests) in enumerate(passes):
            prepare(work / name, args.only, tests)
            survivors = (
                [] if i == 0 else sorted(n for n, s in combined(_results(work, passes[:i])).items() if s == "survived")
            )
            if i and not survivors:
                break
            mutmut(work / name, "run", "--max-children", children, *survivors)
    found = combined(_results(work, passes))
    print(report(found))
    survivors = sorted(n for n, s in found.items() if s == "survived")
    (work / "survivors.txt").write_text("".join(f"{n}\n" for n in survivors))
    print(f"{len(survivors)} survivor(s) listed in {work / 'survivors.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
