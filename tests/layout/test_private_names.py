"""A module's `_private` names are its own: no parval module imports another's (what two
modules share is named as shared)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "parval"


def private_imports(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("parval"):
                found += [
                    f"{path.relative_to(root.parent)}:{node.lineno} imports {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    found = private_imports()
    assert not found, "\n".join(found)


def test_the_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from parval.rundir.integrity import _hidden\n")
    assert private_imports(tmp_path) == [f"{tmp_path.name}/a.py:1 imports parval.rundir.integrity._hidden"]
