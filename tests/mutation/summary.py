"""The score of one mutmut run over the framework judges, per module, and its survivors
(called by tests/mutation/framework.sh: RESULTS ELAPSED_S MUTANTS_DIR).

A survivor that only changes the text of a verdict's message (the text argument of
Verdict.require/pend/block/not_forced/..., or an exception's message) is counted apart:
a Verdict's status depends on which list a text goes into, never on the text itself, so
such a mutant cannot change a verdict. Every other survivor is listed by name.
"""

from __future__ import annotations

import ast
import collections
import re
import sys
from pathlib import Path

# Calls whose arguments from this index on are only the text of a verdict or an error.
SINKS = {
    "require": 1,
    "pend": 0,
    "block": 0,
    "not_forced": 0,
    "unsupported": 0,
    "not_applicable": 0,
    "labelled": 0,
    "append": 0,
    "KeyError": 0,
    "RuntimeError": 0,
    "ValueError": 0,
}


def results(path: Path) -> tuple[dict[str, collections.Counter[str]], list[tuple[str, str]]]:
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    survivors = []
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(parval\.[\w.]+?)\.(x\S*?__mutmut_\d+): (.+)", line)
        if m:
            module, name, status = m.group(1), m.group(2), m.group(3).strip()
            rows[module][status] += 1
            if status == "survived":
                survivors.append((module, name))
    return rows, survivors


def functions(mutants: Path) -> dict[tuple[str, str], str]:
    """Every mutant function (and its original) as mutmut wrote it, dedented."""
    out = {}
    for path in (mutants / "parval" / "framework").glob("*.py"):
        lines = path.read_text().splitlines(keepends=True)
        module = "parval.framework." + path.stem
        for node in ast.walk(ast.parse("".join(lines))):
            if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name:
                body = lines[node.lineno - 1 : node.end_lineno]
                indent = len(body[0]) - len(body[0].lstrip())
                out[(module, node.name)] = "".join(line[indent:] for line in body)
    return out


def only_message_text(orig: str, mutant: str) -> bool:
    """The two functions differ only in string constants, each inside the text argument of
    a verdict method or an exception."""
    a, b = ast.parse(orig).body[0], ast.parse(mutant).body[0]
    na, nb = list(ast.walk(a))[1:], list(ast.walk(b))[1:]  # the names of the two defs differ
    if len(na) != len(nb):
        return False
    changed = []
    for x, y in zip(na, nb, strict=True):
        if type(x) is not type(y):
            return False
        if isinstance(x, ast.Constant) and isinstance(y, ast.Constant) and x.value != y.value:
            if not (isinstance(x.value, str) and isinstance(y.value, str)):
                return False
            changed.append(y)
        elif isinstance(x, ast.Name) and isinstance(y, ast.Name) and x.id != y.id:
            return False
        elif isinstance(x, ast.Attribute) and isinstance(y, ast.Attribute) and x.attr != y.attr:
            return False
    if not changed:
        return False
    parents = {child: node for node in ast.walk(b) for child in ast.iter_child_nodes(node)}
    return all(_in_a_message(const, parents) for const in changed)


def _in_a_message(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.Raise):
            return True
        if isinstance(parent, ast.Call):
            fn = parent.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
            if name in SINKS and node in parent.args[SINKS[name] :]:
                return True
        node = parent
    return False


def main() -> None:
    rows, survivors = results(Path(sys.argv[1]))
    sources = functions(Path(sys.argv[3]))
    text: collections.Counter[str] = collections.Counter()
    listed = []
    for module, name in survivors:
        orig = sources.get((module, re.sub(r"__mutmut_\d+$", "__mutmut_orig", name)))
        mutant = sources.get((module, name))
        if orig is not None and mutant is not None and only_message_text(orig, mutant):
            text[module] += 1
        else:
            listed.append(f"{module}.{name}")
    head = ("module", "mutants", "killed", "survived", "(text)", "no tests", "score", "non-text")
    print(f"{head[0]:40} " + " ".join(f"{h:>9}" for h in head[1:]))
    total: collections.Counter[str] = collections.Counter()
    for module in [*sorted(rows), "all"]:
        c = total if module == "all" else rows[module]
        if module != "all":
            total.update(c)
        t = sum(text.values()) if module == "all" else text[module]
        n = sum(c.values())
        cells = (n, c["killed"], c["survived"], t, c["no tests"])
        score = 100 * c["killed"] / max(n, 1)
        strict = 100 * c["killed"] / max(n - t, 1)
        print(f"{module:40} " + " ".join(f"{x:9}" for x in cells) + f" {score:8.1f}% {strict:8.1f}%")
    print(
        f"({sys.argv[2]} s; text: survivors that only change a verdict's or an error's message; "
        "non-text: the score leaving them out)"
    )
    print("\nsurviving mutants that change more than a message (mutmut show NAME, in the kept copy):")
    for name in listed:
        print("  " + name)


if __name__ == "__main__":
    main()
