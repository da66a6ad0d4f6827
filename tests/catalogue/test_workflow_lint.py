"""The GitHub Actions workflow `parval catalogue matrix --workflow` writes, checked the way
GitHub would take it: actionlint (syntax, expressions, action inputs, deprecated action
runtimes, and shellcheck on every `run:` block when shellcheck is on PATH) must find nothing,
and the workflow must match SchemaStore's github-workflow schema as check-jsonschema vendors
it. Both tools come with the `dev` extra; where one is missing the test skips naming it,
which CI (PARVAL_FAIL_ON_SKIP=1) turns into a failure."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .kit import REPO, build, parval, write_catalogue

EXAMPLE = "plans/catalogue.yaml"


def _tool(name: str) -> str:
    """The tool in this interpreter's environment (the dev extra's), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]' brings it")
    return found


def _workflow(tmp_path: Path, catalogue: str | Path, *args: str) -> Path:
    p = parval("catalogue", "matrix", catalogue, "--workflow", *args, cwd=REPO)
    assert p.returncode == 0, p.stderr
    path = tmp_path / ".github" / "workflows" / "parval.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(p.stdout)
    return path


def _multi_backend(tmp_path: Path) -> Path:
    """The example's claims on a CPU build and on a GPU build with runner labels of its own."""
    claims = yaml.safe_load((REPO / EXAMPLE).read_text())["claims"]
    for claim in claims:
        claim["plan" if "plan" in claim else "template"] = str(REPO / "plans" / "demo.yaml")
        claim["backends"] = ["cpu", "cuda"]
    cuda = {
        "candidate": {"executable": "../no/cuda/server", "sha256": "c" * 64},
        "runs_on": ["self-hosted", "linux", "gpu"],
    }
    return write_catalogue(tmp_path / "cat.yaml", claims, {"cpu": build(runs_on=["ubuntu-latest"]), "cuda": cuda})


def _lint(path: Path) -> None:
    actionlint = _tool("actionlint")
    check_jsonschema = _tool("check-jsonschema")
    lint = subprocess.run(
        [actionlint, "-no-color", "-oneline", str(path)],
        capture_output=True,
        text=True,
        cwd=path.parents[2],
        timeout=120,
        check=False,
    )
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    schema = subprocess.run(
        [check_jsonschema, "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_the_example_workflow_passes_actionlint_and_the_schema(tmp_path: Path) -> None:
    _lint(_workflow(tmp_path, EXAMPLE))


def test_a_multi_backend_workflow_passes_actionlint_and_the_schema(tmp_path: Path) -> None:
    catalogue = _multi_backend(tmp_path)
    path = _workflow(tmp_path, catalogue, "--out", "runs/gpu-and-cpu")
    text = path.read_text()
    # the runner labels each backend's jobs need are named, not left implicit
    assert "cpu: [ubuntu-latest], cuda: [self-hosted, linux, gpu]" in text
    _lint(path)


def test_the_workflow_sets_up_python_asks_its_permissions_and_keeps_the_disclosure(tmp_path: Path) -> None:
    text = _workflow(tmp_path, EXAMPLE).read_text()
    workflow = yaml.safe_load(text)
    assert "python3.11" not in text  # the interpreter comes from actions/setup-python
    assert workflow["permissions"] == {"contents": "read"}
    assert "default [self-hosted, <backend>]" in text and "here cpu: [self-hosted, cpu]" in text
    for name, job in workflow["jobs"].items():
        uses = [s.get("uses", "") for s in job["steps"]]
        assert uses[:2] == ["actions/checkout@v7", "actions/setup-python@v7"], (name, uses)
        assert job["steps"][1]["with"] == {"python-version": "3.11"}
        # Node 20 actions stop running when GitHub removes that runtime
        assert not any(u.endswith("@v4") for u in uses), (name, uses)
    report = workflow["jobs"]["report"]
    assert report["permissions"] == {"contents": "read", "pull-requests": "write"}
    uploads = [s for s in report["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(uploads) == 1 and uploads[0]["if"] == "${{ !cancelled() }}"
    assert uploads[0]["with"]["path"].split() == [
        "runs/demo/claims.md",
        "runs/demo/claims.json",
        "runs/demo/claims.xml",
    ]
    # the claims artifact is not one of the run folders the download step merges
    assert not uploads[0]["with"]["name"].startswith("parval-")
    # the last step's exit code is the disclosure's
    assert report["steps"][-1]["run"] == 'exit "$CODE"'
