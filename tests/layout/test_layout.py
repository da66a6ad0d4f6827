"""The package layout keeps its promises: dependencies run one way (no import cycles) and
the stand-in imports nothing from the rest of parval. Modules are cut by concept, not by
length, so no line count is enforced."""

from __future__ import annotations

from tests.layout.imports import ROOT, cycles, graph, modules


def test_no_import_cycles() -> None:
    found = cycles(graph())
    assert not found, "import cycles (every import counts, also inside functions):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_standin_imports_nothing_from_the_rest_of_parval() -> None:
    g = graph()
    leaks = {
        m: sorted(d for d in deps if not d.startswith("parval.standin") and d != "parval")
        for m, deps in g.items()
        if m.startswith("parval.standin")
    }
    assert not any(leaks.values()), {m: d for m, d in leaks.items() if d}


def test_the_graph_sees_real_imports() -> None:
    g = graph()
    assert "parval.errors" in g["parval.cli"]
    assert (ROOT / "cli.py").is_file()


def test_every_package_ships_in_the_wheel() -> None:
    import tomllib

    listed = set(tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    assert packages <= listed, f"packages missing from pyproject.toml: {sorted(packages - listed)}"
