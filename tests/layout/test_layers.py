"""The packages form a stack: every import points to a lower layer.

Each package of parval is a unit; the top-level modules are grouped into units below. Units
in one layer are independent of each other (the judges, the campaign's recorder and the
framework probes share what they need from below, never from each other). Every import
counts: at module level, inside functions and under TYPE_CHECKING alike (a type named
in a signature is a dependency a reader has to follow, however late it is resolved).
"""

from __future__ import annotations

import ast

from tests.layout.imports import ROOT, graph, modules

# Bottom to top. A unit may import only units of lower layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("foundation", "standin"),  # errors, JSON types and readers, Status/Result, NVML; the stand-in
    ("outputs",),  # canonical outputs and which of their fields are volatile
    ("plan", "protected"),  # the plan; the source boundary (X4)
    ("rundir",),  # the run directory: events, records, evidence and manifest types, files
    ("procedure",),  # the procedure as data: catalogue, entries, names, server facts, versions
    ("server",),  # talking to one server process
    ("signals", "ui"),  # Ctrl-C and the progress displays
    ("gates", "runners", "framework"),  # the judges, the campaign (recorder), the F1-F6 gate
    ("judge",),  # a run's events through every gate into evidence.json
    ("report", "registry"),  # what a run shows; the assertion registry assembled from the judges
    ("api",),  # library entry points: run, judge, report
    ("claims", "bench"),  # the admitted catalogue; parval's own speed
    ("commands",),
    ("cli",),
)

# Top-level modules and the unit each belongs to (a package is a unit by itself).
MODULE_UNITS = {
    "parval": "foundation",
    "parval.errors": "foundation",
    "parval.jsontypes": "foundation",
    "parval.jsonread": "foundation",
    "parval.status": "foundation",
    "parval.nvml": "foundation",
    "parval.signals": "signals",
    "parval.judge": "judge",
    "parval.registry": "registry",
    "parval.api": "api",
    "parval.cli": "cli",
    "parval.__main__": "cli",
}

# Arrows that run up, each with why it cannot be turned yet (none today).
EXCEPTIONS: dict[tuple[str, str], str] = {}


def unit_of(module: str) -> str:
    if module in MODULE_UNITS:
        return MODULE_UNITS[module]
    parts = module.split(".")
    if len(parts) > 2 or (ROOT / parts[1]).is_dir():
        return parts[1]
    raise KeyError(f"{module}: a top-level module in no unit (add it to MODULE_UNITS)")


def upward(g: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import from one unit to another of the same or a higher layer."""
    level = {unit: i for i, layer in enumerate(layers) for unit in layer}
    out = []
    for mod, deps in sorted(g.items()):
        for dep in sorted(deps):
            a, b = unit_of(mod), unit_of(dep)
            if a != b and level[b] >= level[a] and (mod, dep) not in EXCEPTIONS:
                same = "its sibling" if level[b] == level[a] else "a higher layer"
                out.append(f"{mod} -> {dep} ({a} imports {b}, {same})")
    return out


def test_every_import_points_down() -> None:
    found = upward(graph(), LAYERS)
    assert not found, "imports against the layers (tests/layout/test_layers.py LAYERS):\n" + "\n".join(found)


def test_every_unit_is_in_one_layer() -> None:
    declared = [u for layer in LAYERS for u in layer]
    assert len(declared) == len(set(declared))
    units = {unit_of(m) for m in modules()}
    assert units == set(declared), f"in no layer: {sorted(units - set(declared))}"


def test_an_upward_import_is_caught() -> None:
    g = {"parval.plan.schedule": {"parval.runners.phases"}, "parval.runners.phases": {"parval.plan.waves"}}
    assert upward(g, LAYERS) == ["parval.plan.schedule -> parval.runners.phases (plan imports runners, a higher layer)"]
    sibling = {"parval.runners.campaign": {"parval.gates.m2_concurrency"}}
    assert upward(sibling, LAYERS) == [
        "parval.runners.campaign -> parval.gates.m2_concurrency (runners imports gates, its sibling)"
    ]


def test_every_exception_is_still_needed() -> None:
    g = graph()
    stale = [f"{a} -> {b}" for a, b in EXCEPTIONS if b not in g.get(a, set())]
    assert not stale, f"exceptions no import needs any more: {stale}"


def test_every_package_says_what_it_holds_and_may_import() -> None:
    missing = []
    for name, path in modules().items():
        if path.name != "__init__.py" or name == "parval":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
        if "May import" not in doc:
            missing.append(name)
    assert not missing, f"packages whose docstring does not say what they may import: {missing}"


# Module names two packages share, each for the same role in its own package (a package's
# loader, renderer, ...); any other name is one module's alone.
SHARED_NAMES = {
    "__main__": "python -m entry points (parval, the stand-in)",
    "cli": "the command-line apps (parval, the stand-in)",
    "config": "the configuration each reads (protected paths; the stand-in's server config)",
    "errors": "the stand-in keeps its own, importing nothing of parval",
    "load": "each package's loader (the plan; run directories for reports)",
    "render": "each package's renderer (a run's report; the claims disclosure)",
    "report": "the `parval report` command; the bench's printed figures",
    "campaign": "the campaign (runners) and the bench's campaign-like loop",
    "waves": "the waves of a plan (its constants) and of a server (their release)",
}


def test_no_two_modules_share_a_name_for_different_things() -> None:
    stems: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name != "__init__.py":
            stems.setdefault(path.stem, []).append(str(path.relative_to(ROOT.parent)))
    shared = {stem: paths for stem, paths in stems.items() if len(paths) > 1 and stem not in SHARED_NAMES}
    assert not shared, f"modules of one name in several packages (rename them, or justify in SHARED_NAMES): {shared}"
    stale = sorted(stem for stem in SHARED_NAMES if len(stems.get(stem, [])) < 2)
    assert not stale, f"SHARED_NAMES lists names no longer shared: {stale}"
