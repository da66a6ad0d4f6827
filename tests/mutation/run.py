"""Mutation testing of the judges: parval/gates/ and parval/judge.py, with mutmut 3.8.

    .venv/bin/python -m tests.mutation.run [--max-children 2] [--workdir DIR] [--only MODULE ...]

It copies the project to a work directory (a fresh temporary one unless --workdir names
one to resume), writes mutmut's configuration there (so it conflicts with nothing in the
checkout), runs `mutmut run` and prints the score per module from mutmut's own results:
killed, survived, no covering test, timeout, and the survivors' names (`mutmut show NAME`
in the work directory prints a mutant). The tests run per mutant are the in-process ones
that judge recorded evidence (no server is started): tests/gates, tests/attack, the
memory-gate and probe-judgment tests. Needs mutmut (`pip install -e '.[dev]'`). Takes
hours on two cores; it is not part of .ci/run."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ["tests/gates", "tests/attack", "tests/test_memory_gate.py", "tests/campaign/test_probe_judgments.py"]
COPY = ["parval", "tests", "schemas", "plans", "README.md", "pyproject.toml"]


def config(only: list[str]) -> str:
    mutate = only or ["parval/gates/", "parval/judge.py"]
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["parval/"]\n'
        f"only_mutate = {json.dumps(mutate)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(TESTS)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        'also_copy = ["plans/", "schemas/", "README.md", "tests/"]\n'
    )


def prepare(work: Path, only: list[str]) -> None:
    for name in COPY:
        src = ROOT / name
        dst = work / name
        if dst.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "mutants"))
        else:
            shutil.copy2(src, dst)
    pyproject = work / "pyproject.toml"
    text = pyproject.read_text()
    if "[tool.mutmut]" not in text:
        pyproject.write_text(text + config(only))


def results(work: Path) -> dict[str, str]:
    """Mutant name -> status, as `mutmut results --all true` prints them."""
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
        if sep and name:
            found[name] = status.strip()
    return found


def module_of(name: str) -> str:
    # e.g. parval.gates.m2_concurrency.x_m2_starts__mutmut_3
    head = name.split(".x_")[0].split(".xǁ")[0]
    return head


def report(found: dict[str, str]) -> str:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for name, status in found.items():
        per[module_of(name)][status] += 1
    lines = [f"{'module':<40} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'score':>7}"]
    total: Counter[str] = Counter()
    for module in sorted(per):
        c = per[module]
        total.update(c)
        lines.append(_row(module, c))
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None, help="resume in (or keep) this work directory")
    parser.add_argument("--only", nargs="*", default=[], help="mutate only these files (paths under parval/)")
    parser.add_argument("--report-only", action="store_true", help="print the score of an existing work directory")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="parval-mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        prepare(work, args.only)
        print(f"mutation work directory: {work}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)], cwd=work, check=False
        )
    found = results(work)
    print(report(found))
    survivors = sorted(n for n, s in found.items() if s == "survived")
    (work / "survivors.txt").write_text("\n".join(survivors) + "\n")
    print(f"{len(survivors)} survivor(s) listed in {work / 'survivors.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
