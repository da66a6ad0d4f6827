"""Docs that stay true: the README's first commands and one screen, the docs site's pages
(docs/, mkdocs.yml) and the generated command reference, every command documented and
helped, every shipped plan valid, the demo's evidence matching the evidence schema, and
every command the README and the docs show run as written (test_doc_commands_run_as_written)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import typer

from parval.cli import app
from parval.plan.schemas import load_schema

from .kit import Outcome, invoke

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
# The demo needs parval's runtime dependencies only; the tests add the dev extra.
SETUP = "python3.11 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/parval run plans/demo.yaml"
TESTS = ".venv/bin/python -m pytest"
TEST_SETUP = f".venv/bin/pip install -e '.[dev]' && {TESTS}"


def _commands() -> list[str]:
    group = typer.main.get_command(app)
    commands: dict[str, object] = getattr(group, "commands", {})
    assert commands
    return sorted(commands)


def test_readme_starts_with_the_two_commands() -> None:
    lines = [x for x in README.read_text().splitlines() if x.strip()]
    assert lines[0].startswith("# ")
    assert not lines[1].startswith(("#", "```"))  # one sentence
    assert lines[2].startswith("```")
    assert lines[3:6] == [SETUP, TEST_SETUP, "```"]


def test_ci_runs_the_readme_test_command() -> None:
    text = (REPO / ".ci" / "run").read_text()
    assert any(line.strip() == TESTS for line in text.splitlines())
    assert "-m venv .venv" in text and "pip install" in text and "-e '.[dev]'" in text


def test_ci_runs_each_test_once() -> None:
    """A test that fails under load is a finding: .ci/run never retries one into a pass."""
    commands = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    pytests = [c for c in commands if "-m pytest" in c]
    assert pytests == [TESTS, ".venv/bin/python -m pytest -m slow -n 2"], pytests
    for retry in ("--lf", "--last-failed", "--reruns", "--sw", "--stepwise", "||", "until ", "while "):
        assert not any(retry in c for c in pytests), retry
    assert not any(c.startswith(("for ", "until ", "while ")) for c in commands), "no loop in .ci/run"


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def _docs_text() -> str:
    """The README and every written docs page (not the generated reference), as one text."""
    return "\n".join(p.read_text() for p in [README, *_pages()] if p.name != "commands.md")


def test_readme_fits_one_screen() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    for page in _pages():  # the README links into the docs it leaves out
        if page.name != "index.md":
            assert f"(docs/{page.name}" in README.read_text(), page.name


@pytest.mark.parametrize("command", _commands())
def test_every_command_is_documented_and_helped(command: str) -> None:
    assert f"parval {command}" in _docs_text(), f"neither README nor docs/ mention `parval {command}`"
    assert f"## parval {command}\n" in (DOCS / "commands.md").read_text(), f"`parval {command}`: no reference"
    p = invoke(command, "--help")
    assert p.returncode == 0, p.stderr
    assert "Example" in p.stdout, f"`parval {command} --help` has no example"


def test_the_command_reference_is_generated_from_the_app() -> None:
    from .command_reference import REGENERATE, commands, render

    assert (DOCS / "commands.md").read_text() == render(), f"docs/commands.md is out of date; run `{REGENERATE}`"
    group = typer.main.get_command(app)
    every = [f"parval {c}" for c in _commands()]
    every += [f"parval catalogue {c}" for c in getattr(getattr(group, "commands", {})["catalogue"], "commands", {})]
    assert set(every) <= set(commands()), sorted(set(every) - set(commands()))


def test_the_site_lists_every_page_in_its_nav() -> None:
    """mkdocs.yml names every page (mkdocs only warns of one left out: strict makes it fail,
    this says which), builds strictly, and fails on a broken link or anchor."""
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert config["strict"] is True and config["theme"]["name"] == "material"
    assert config["validation"]["links"]["anchors"] == "warn"  # warn + strict: a broken anchor fails
    listed = [next(iter(entry.values())) for entry in config["nav"]]
    assert sorted(listed) == sorted(p.name for p in _pages())
    assert listed.index("gpu-box.md") < listed.index("commands.md") and listed.index("gpu-box.md") < listed.index(
        "plans.md"
    )
    # .ci/run builds it strictly, and not --quiet: mkdocs then stops counting warnings
    (build,) = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if "mkdocs build" in line]
    assert "--strict" in build and "--quiet" not in build and " -q" not in build, build


def test_top_level_help() -> None:
    p = invoke("--help")
    assert p.returncode == 0
    for command in _commands():
        assert command in p.stdout
    assert "Example" in p.stdout and "Exit codes" in p.stdout


def _is_catalogue(path: Path) -> bool:
    return "kind: parval-catalogue" in path.read_text()


@pytest.mark.parametrize(
    "plan", sorted(p for p in (REPO / "plans").glob("*.yaml") if not _is_catalogue(p)), ids=lambda p: p.name
)
def test_every_shipped_plan_validates(plan: Path) -> None:
    p = invoke("validate", plan)
    assert p.returncode == 0, p.stderr
    assert "is valid" in p.stdout


def test_docs_pages() -> None:
    """What a user looks for by task is on its page (README: links to them)."""
    for page, heading in (
        ("index.md", "## What parval does"),
        ("running.md", "## Exit codes"),
        ("running.md", "## Progress output"),
        ("running.md", "## Many runs, one verdict"),
        ("plans.md", "## Plan format"),
        ("plans.md", "## Comparison rules"),
        ("run-directory.md", "# The run directory"),
        ("standin.md", "# The stand-in server"),
        ("catalogue.md", "## Scale-out"),
        ("gpu-box.md", "# GPU box"),
    ):
        assert heading in (DOCS / page).read_text(), (page, heading)
    text = (DOCS / "catalogue.md").read_text()
    assert "sbatch" in text and "--array" in text  # the Slurm example
    assert "strategy:" in text and "matrix:" in text  # the GitHub Actions example
    assert "parval catalogue matrix" in text and "fromJSON(needs.matrix.outputs.matrix)" in text


def test_the_docs_list_every_standin_fault() -> None:
    from parval.standin.faults import FAULT_DEFAULTS

    text = (DOCS / "standin.md").read_text()
    missing = [f for f in FAULT_DEFAULTS if f"`{f}`" not in text]
    assert not missing, f"docs/standin.md does not describe faults {missing}"


@pytest.mark.slow
def test_demo_runs_and_its_evidence_matches_the_schema(demo: Outcome) -> None:
    jsonschema.validate(demo.evidence, load_schema("evidence"))
    verdict = demo.evidence["verdict"]
    assert verdict["exit_code"] == demo.rc
    assert sorted(verdict["counts"]) == ["1", "2", "3", "4"]
    if demo.rc == 3:  # complete and never admitted: every count pending the framework record
        assert set(verdict["counts"].values()) == {"PENDING"}, verdict["counts"]


def test_the_gpu_box_page() -> None:
    section = (DOCS / "gpu-box.md").read_text()
    for needed in ("server.device", "memory.nvml_device_index", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        assert needed in section, needed
    from parval.server.process import ENV_ALLOW

    assert all(name in section for name in ENV_ALLOW), "the allow-list, in full"
    assert "nohup" in section and "systemd-run" in section and "parval catalogue slurm" in section


def _sh_blocks(section: str) -> list[list[str]]:
    blocks = section.split("```sh\n")[1:]
    return [[line for line in b.split("```")[0].splitlines() if line.strip()] for b in blocks]


@pytest.mark.slow
def test_gpu_box_commands_run_as_written(tmp_path: Path) -> None:
    """The page's parval commands (unattended demo run, then both validates), exactly as
    written, in a directory laid out as the repository root: relative paths, `.venv/bin/parval`."""
    import shutil
    import subprocess
    import sys
    import time

    root = tmp_path / "checkout"
    shutil.copytree(REPO / "plans", root / "plans")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "parval").symlink_to(Path(sys.executable).parent / "parval")
    blocks = [b for b in _sh_blocks((DOCS / "gpu-box.md").read_text()) if any(".venv/bin/parval" in line for line in b)]
    (nohup,) = [b for b in blocks if any("nohup" in line for line in b)]
    (validates,) = [b for b in blocks if all("parval validate" in line for line in b)]

    def sh(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, text=True, timeout=60, check=False)

    assert [sh(line).returncode for line in nohup] == [0, 0]
    deadline = time.monotonic() + 400
    log = root / "runs" / "demo.log"
    while time.monotonic() < deadline and "evidence collected" not in (log.read_text() if log.exists() else ""):
        time.sleep(1.0)
    assert (root / "runs" / "demo" / "evidence.json").is_file(), log.read_text()
    plain, like = (sh(line) for line in validates)
    assert plain.returncode == 0 and "time: at most" in plain.stdout, plain.stderr
    assert like.returncode == 0 and "time: about" in like.stdout and "scaled from runs/demo" in like.stdout, like.stderr


# --- Every command the README and the docs show, run as written --------------------------
#
# A command shown is a line of a ```sh block in README.md or docs/*.md (docs/commands.md has
# none: it is the app's help). Each page says it runs from the repository root; the test runs
# every command there, in a folder laid out as the repository root, pages in the site's
# order (a page may use what an earlier one made: runs/demo), each distinct command once.

# The pages whose commands another test runs as written, and why not this one.
PAGES_RUN_ELSEWHERE: dict[str, str] = {
    "gpu-box.md": "the cmake lines need an audio.cpp checkout and CUDA; the parval lines start a run "
    "in the background and wait for it: test_gpu_box_commands_run_as_written runs them",
    "first-real-run.md": "needs the real audiocpp_server, its models and WAV files: "
    "tests/real/test_first_run.py runs the page as written on ../shared/real-audiocpp",
}

# The commands this test does not run here, each with why.
NOT_RUN_HERE: dict[str, str] = {
    SETUP: "makes a virtual environment from the package registry: .ci/run does exactly this, "
    "and tests/ux/test_pr_comment.py runs the demo as this command does",
    TEST_SETUP: "installs from the package registry and runs this suite: .ci/run does exactly this",
    # The README's first real run: the same lines as docs/first-real-run.md shows them.
    **dict.fromkeys(
        (
            ".venv/bin/parval init --server-config runs/first/server.json --baseline "
            "../shared/real-audiocpp/bin/audiocpp_server --candidate ../shared/real-audiocpp/bin/audiocpp_server "
            "--speech ../shared/real-audiocpp/fixtures/speech16k.wav --measure --output runs/first/silero.yaml",
            ".venv/bin/parval validate runs/first/silero.yaml",
            ".venv/bin/parval run runs/first/silero.yaml --out runs/first/run",
        ),
        "needs the real audiocpp_server: tests/real/test_first_run.py runs these lines as docs/first-real-run.md "
        "shows them",
    ),
    ".venv/bin/parval import runs/2026-05-whisper/evidence.json --procedure 2026-05-01 --out history/whisper-may": (
        "needs evidence made under an older procedure version (tests/ux/test_history.py imports such records)"
    ),
    "bash parval-demo.sbatch": "needs Slurm: tests/catalogue/test_slurm.py submits this script to a single-node Slurm",
    ".venv/bin/ruff check parval tests": ".ci/run runs it as a stage of its own",
    ".venv/bin/ruff format --check parval tests": ".ci/run runs it as a stage of its own",
    ".venv/bin/mypy": ".ci/run runs it as a stage of its own",
    ".venv/bin/python -m tests.mutation.run --max-children 2": "takes hours on two cores (not part of .ci/run)",
    ".venv/bin/python -m tests.ux.command_reference > docs/commands.md": "its output is the checked-in page: "
    "test_the_command_reference_is_generated_from_the_app",
}

# Files a page shows in full for the user to save before its commands (page -> name, the
# page's first block in that language).
SAVED_FILES: dict[str, tuple[str, str]] = {"getting-started.md": ("server.json", "json")}

# Exit codes other than 0. The demo plans have no framework record, so their campaigns and
# every report of them end pending (3); a loaded machine can make the stand-in miss a
# concurrent wave (M2.observed_active FAIL, 1): either way the evidence is complete.
PENDING = (1, 3)
EXITS: dict[str, tuple[int, ...]] = {
    ".venv/bin/parval run plans/demo.yaml --out runs/demo --quiet": PENDING,
    ".venv/bin/parval report runs/demo --output demo-report.md": PENDING,
    ".venv/bin/parval report runs/demo --format junit --output demo-report.xml": PENDING,
    ".venv/bin/parval report runs/demo --rejudge --format json --output demo-evidence.json": PENDING,
    ".venv/bin/parval report --catalogue runs": PENDING,
    ".venv/bin/parval validate plans/my-tts.yaml": (2,),  # names the EDIT-ME placeholders left
    ".venv/bin/parval catalogue run plans/catalogue.yaml --only demo-tts-small.cpu.offline --out runs/catalogue": (
        PENDING
    ),
    ".venv/bin/parval report --catalogue runs/catalogue --claims plans/catalogue.yaml --output claims.md": PENDING,
    ".venv/bin/parval run plans/demo.yaml --shard 1/2 --out runs/demo-1of2 --quiet": PENDING,
    ".venv/bin/parval run plans/demo.yaml --shard 2/2 --out runs/demo-2of2 --quiet": PENDING,
    ".venv/bin/parval report runs/demo-1of2 runs/demo-2of2 --output demo-merged.md": PENDING,
    # the stand-in's record: no CTest run or sanitizer build, so those sub-checks stay PENDING
    ".venv/bin/parval framework plans/framework-demo.yaml --out runs/fw-demo": (3,),
    ".venv/bin/parval report runs/fw-demo --rejudge --output fw-demo.md": (3,),
}


def _site_order() -> list[Path]:
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    return [README, *(DOCS / next(iter(entry.values())) for entry in nav)]


def _fenced(text: str, lang: str) -> list[str]:
    """The bodies of the page's ```lang blocks, indented ones (inside a list) too."""
    import re

    pattern = re.compile(rf"^([ \t]*)```{lang}\n(.*?)^\1```[ \t]*$", re.MULTILINE | re.DOTALL)
    return [m.group(2) for m in pattern.finditer(text)]


def _shown(page: Path) -> list[str]:
    """The commands a page shows: every line of its ```sh blocks, in order."""
    return [line.strip() for body in _fenced(page.read_text(), "sh") for line in body.splitlines() if line.strip()]


def _to_run() -> list[tuple[Path, str]]:
    seen: set[str] = set()
    out: list[tuple[Path, str]] = []
    for page in _site_order():
        if page.name in PAGES_RUN_ELSEWHERE:
            continue
        for command in _shown(page):
            if command not in NOT_RUN_HERE and command not in seen:
                seen.add(command)
                out.append((page, command))
    return out


# The commands fall into chains that share nothing: a chain's first command makes a run (or
# none), the ones after it read that run. Each chain runs in a checkout of its own, so the slow
# suite's workers take them side by side; within a chain the pages' order holds. A command is
# in the first chain one of whose markers it contains, else in "quick".
CHAINS: dict[str, tuple[str, ...]] = {
    "shards": ("runs/demo-",),
    "framework": ("runs/fw-demo", "framework-demo"),
    "catalogue": ("runs/catalogue", "--claims"),
    "demo": ("runs/demo", "--catalogue runs"),
    "bench": ("parval bench",),
}


def _chain(command: str) -> str:
    return next((name for name, markers in CHAINS.items() if any(m in command for m in markers)), "quick")


def test_every_command_shown_is_run_or_says_why_not() -> None:
    """Every ```sh line of the README and the docs is run by test_doc_commands_run_as_written,
    or listed above with why; no entry of those lists names a command no page shows."""
    shown = {c for page in _site_order() for c in _shown(page)}
    assert set(NOT_RUN_HERE) <= shown, f"listed but shown nowhere: {sorted(set(NOT_RUN_HERE) - shown)}"
    assert set(EXITS) <= {c for _, c in _to_run()}, sorted(set(EXITS) - {c for _, c in _to_run()})
    assert set(PAGES_RUN_ELSEWHERE) <= {p.name for p in _pages()}
    assert [p.name for p in _site_order()[1:]] == [p.name for p in _site_order()[1:] if p.is_file()]
    assert len(_to_run()) >= 20, _to_run()
    assert {_chain(c) for _, c in _to_run()} == {*CHAINS, "quick"}, "a chain that runs nothing"
    for _page, command in _to_run():
        assert command.startswith(".venv/bin/"), f"one way of invoking parval: {command}"


def test_the_readme_first_real_run_is_the_page_s() -> None:
    """The README's five steps show the lines docs/first-real-run.md shows (and
    tests/real/test_first_run.py runs), never a variant of them."""
    page = _shown(DOCS / "first-real-run.md")
    readme = [c for c in _shown(README) if "runs/first" in c]
    assert len(readme) == 3 and all(c in page for c in readme), readme


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("chain", [*CHAINS, "quick"])
def test_doc_commands_run_as_written(chain: str, tmp_path: Path) -> None:
    """Every command the README and the docs show (but those listed above), exactly as
    written, in a folder laid out as the repository root: relative paths, `.venv/bin/...`;
    one chain of them (CHAINS) per checkout."""
    import os
    import shutil
    import subprocess
    import sys
    import time

    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("plans", "schemas", "docs"):
        shutil.copytree(REPO / name, root / name)
    for name in ("README.md", "pyproject.toml", "mkdocs.yml"):
        shutil.copy(REPO / name, root / name)
    (root / "parval").symlink_to(REPO / "parval")
    (root / "tests").symlink_to(REPO / "tests")
    (root / ".venv").symlink_to(Path(sys.executable).parent.parent)  # the venv itself: its python finds pyvenv.cfg
    for page, (name, lang) in SAVED_FILES.items():
        (root / name).write_text(_fenced((DOCS / page).read_text(), lang)[0])
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    failures: list[str] = []
    for page, command in [(page, c) for page, c in _to_run() if _chain(c) == chain]:
        started = time.monotonic()
        p = subprocess.run(
            ["bash", "-c", command],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        print(f"{time.monotonic() - started:6.1f}s exit {p.returncode} {page.name}: {command}")
        if p.returncode not in EXITS.get(command, (0,)) or "Traceback" in p.stderr:
            failures.append(f"{page.name}: `{command}` exited {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    assert not failures, "\n\n".join(failures)
