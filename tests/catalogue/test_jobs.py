"""The job files (`parval catalogue slurm|matrix`), every catalogue command's help, and the
README's Slurm and GitHub Actions recipes, which must be exactly what the commands print for
the example catalogue (so they cannot drift). No campaign, no Slurm here: test_slurm.py
submits the script to a real one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
import yaml

from parval.cli import app

from .kit import REPO, build, parval, write_catalogue

README = (REPO / "README.md").read_text()
EXAMPLE = "plans/catalogue.yaml"


def _fenced(after: str, lang: str) -> str:
    """The first ```lang block after the text `after` in the README."""
    start = README.index(after)
    m = re.search(rf"```{lang}\n(.*?)```", README[start:], re.S)
    assert m, f"no ```{lang} block after {after!r}"
    return m.group(1)


def _cmd(*args: str) -> str:
    p = parval(*args, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_readme_slurm_recipe_is_the_generated_script() -> None:
    assert _fenced("**Slurm**", "bash") == _cmd("catalogue", "slurm", EXAMPLE)


def test_the_readme_workflow_is_the_generated_one() -> None:
    assert _fenced("**GitHub Actions**", "yaml") == _cmd("catalogue", "matrix", EXAMPLE, "--workflow")


def test_the_readme_example_is_the_shipped_catalogue() -> None:
    shown = yaml.safe_load(_fenced("## The admitted catalogue", "yaml"))
    assert shown == yaml.safe_load((REPO / EXAMPLE).read_text())


def test_the_slurm_script_has_one_task_per_combination_and_shard(tmp_path: Path) -> None:
    text = _cmd("catalogue", "slurm", EXAMPLE, "--out", "runs/x", "--gres", "none", "--sbatch", "--account=audio")
    assert "#SBATCH --array=1-3" in text and "--gres" not in text and "#SBATCH --account=audio" in text
    tasks = re.search(r"TASKS=\(\n(.*?)\n\)", text, re.S)
    assert tasks and tasks.group(1).split("\n") == [
        '  "demo-tts.cpu.offline 1/2"',
        '  "demo-tts.cpu.offline 2/2"',
        '  "demo-tts-small.cpu.offline -"',
    ]
    assert '--dependency="afterany:${jobid%%;*}"' in text
    assert "--claims plans/catalogue.yaml --format json --output runs/x/claims.json" in text
    only = _cmd("catalogue", "slurm", EXAMPLE, "--only", "demo-tts-small")
    assert "#SBATCH --array=1-1" in only and "--gres" not in only  # all CPU: no GRES asked
    forced = _cmd("catalogue", "slurm", EXAMPLE, "--only", "demo-tts-small", "--gres", "gpu:1")
    assert "#SBATCH --gres=gpu:1" in forced  # the explicit override
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True, check=False).returncode == 0


def test_a_gpu_combination_asks_for_a_gpu(tmp_path: Path) -> None:
    """Each task asks for one GPU when a selected combination has a GPU backend (one array
    job asks the same of every task); an all-CPU selection asks for none."""
    claims = yaml.safe_load((REPO / EXAMPLE).read_text())["claims"]
    for claim in claims:
        claim["plan" if "plan" in claim else "template"] = str(REPO / "plans" / "demo.yaml")
    claims[1]["backends"] = ["cpu", "cuda"]
    builds = {"cpu": build(), "cuda": {"candidate": {"executable": "../no/cuda/server", "sha256": "c" * 64}}}
    cat = str(write_catalogue(tmp_path / "cat.yaml", claims, builds))
    mixed = _cmd("catalogue", "slurm", cat)
    assert "#SBATCH --array=1-4" in mixed and "#SBATCH --gres=gpu:1" in mixed
    cuda = _cmd("catalogue", "slurm", cat, "--only", "demo-tts-small.cuda.offline")
    assert "#SBATCH --array=1-1" in cuda and "#SBATCH --gres=gpu:1" in cuda
    assert "--gres" not in _cmd("catalogue", "slurm", cat, "--only", "demo-tts-small.cpu.offline")
    assert "#SBATCH --gres=gpu:a100:1" in _cmd("catalogue", "slurm", cat, "--gres", "gpu:a100:1")
    assert "--gres" not in _cmd("catalogue", "slurm", cat, "--gres", "none")


def test_the_slurm_script_asks_cpus_memory_and_optionally_the_whole_node(tmp_path: Path) -> None:
    """--cpus-per-task is the plans' largest server threads plus one for parval, --mem a
    default to edit; both can be set or left out, and --exclusive gives each task its node."""
    text = _cmd("catalogue", "slurm", EXAMPLE)
    assert "#SBATCH --cpus-per-task=2" in text and "#SBATCH --mem=16G" in text  # the demo: 1 thread
    assert "#SBATCH --exclusive" not in text and "add --exclusive" in text  # said, not asked
    claims = yaml.safe_load((REPO / EXAMPLE).read_text())["claims"]
    for claim in claims:
        claim["plan" if "plan" in claim else "template"] = str(REPO / "plans" / "demo.yaml")
    claims[1]["overrides"]["server"] = {"threads": 4}
    cat = str(write_catalogue(tmp_path / "cat.yaml", claims, {"cpu": build()}))
    assert "#SBATCH --cpus-per-task=5" in _cmd("catalogue", "slurm", cat)
    assert "#SBATCH --cpus-per-task=2" in _cmd("catalogue", "slurm", cat, "--only", "demo-tts")
    set_ = _cmd("catalogue", "slurm", EXAMPLE, "--cpus-per-task", "8", "--mem", "64G", "--exclusive")
    assert "#SBATCH --cpus-per-task=8\n#SBATCH --mem=64G\n#SBATCH --exclusive\n" in set_
    left_out = _cmd("catalogue", "slurm", EXAMPLE, "--cpus-per-task", "0", "--mem", "none")
    assert "--cpus-per-task=" not in left_out and "--mem=" not in left_out


def test_the_slurm_submission_makes_the_log_folder_and_checks_where_it_runs(tmp_path: Path) -> None:
    """`bash FILE` makes the --out folder Slurm writes the task logs to before submitting
    (sbatch alone would need it already: the header says so), and refuses to submit from a
    directory the relative paths do not start from."""
    text = _cmd("catalogue", "slurm", EXAMPLE, "--out", "runs/new", "--parval", "echo")
    assert "sbatch THIS_FILE   submits the array job alone; runs/new must exist first" in text
    assert "Submit it from the directory the relative paths below start from" in text
    bin_dir, root, elsewhere = tmp_path / "bin", tmp_path / "root", tmp_path / "elsewhere"
    for d in (bin_dir, root / "plans", elsewhere):
        d.mkdir(parents=True)
    calls = tmp_path / "sbatch-calls"
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho 42\n')
    sbatch.chmod(0o755)
    (root / "plans" / "catalogue.yaml").write_text("")
    (tmp_path / "job.sbatch").write_text(text)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}

    def submit(cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(tmp_path / "job.sbatch")], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )

    wrong = submit(elsewhere)
    assert wrong.returncode == 2 and "run it from the directory they are relative to" in wrong.stderr
    assert not calls.exists() and not (elsewhere / "runs").exists()
    right = submit(root)
    assert right.returncode == 0, right.stderr
    assert right.stdout.strip() == "submitted array job 42 and merge job 42"
    assert (root / "runs" / "new").is_dir()
    assert len(calls.read_text().splitlines()) == 2


def test_the_slurm_task_runs_its_combination(tmp_path: Path) -> None:
    """A task's own lines (not the submission branch) pick its combination and shard."""
    text = _cmd("catalogue", "slurm", EXAMPLE, "--parval", "echo")
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    for task, expected in ((2, "--only demo-tts.cpu.offline --shard 2/2"), (3, "--only demo-tts-small.cpu.offline")):
        p = subprocess.run(
            ["bash", str(script)],
            env={"PATH": "/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": str(task)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert p.returncode == 0, p.stderr
        assert f"catalogue run plans/catalogue.yaml {expected} --out runs/demo --quiet" in p.stdout


def test_the_matrix_is_what_strategy_matrix_takes() -> None:
    out = _cmd("catalogue", "matrix", EXAMPLE)
    assert out.count("\n") == 1  # one line, for $GITHUB_OUTPUT
    include = json.loads(out)["include"]
    assert [(e["combination"], e["shard"]) for e in include] == [
        ("demo-tts.cpu.offline", "1/2"),
        ("demo-tts.cpu.offline", "2/2"),
        ("demo-tts-small.cpu.offline", ""),
    ]
    assert include[0]["shard_args"] == "--shard 1/2" and include[2]["shard_args"] == ""
    assert include[0]["runs_on"] == ["self-hosted", "cpu"]
    assert len({e["artifact"] for e in include}) == 3  # artifacts never collide
    workflow = yaml.safe_load(_cmd("catalogue", "matrix", EXAMPLE, "--workflow"))
    run = workflow["jobs"]["run"]
    assert run["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.matrix) }}"
    used = set(re.findall(r"\$\{\{ matrix\.(\w+)", json.dumps(run)))
    assert {"combination", "shard", "runs_on", "artifact"} <= used <= set(include[0]), used
    # GitHub Actions rejects an empty matrix: a selection without combinations is an error
    empty = parval("catalogue", "matrix", EXAMPLE, "--backend", "cuda", cwd=REPO)
    assert empty.returncode == 2 and empty.stdout == "", empty.stdout
    assert "no combination claims backend cuda (the selected combinations' backends: cpu)" in empty.stderr
    assert "GitHub Actions rejects" in empty.stderr
    cpu = json.loads(_cmd("catalogue", "matrix", EXAMPLE, "--backend", "cpu"))["include"]
    assert [e["artifact"] for e in cpu] == [e["artifact"] for e in include]


def _catalogue_commands() -> list[str]:
    group = typer.main.get_command(app)
    sub = getattr(group, "commands", {})["catalogue"]
    return sorted(getattr(sub, "commands", {}))


@pytest.mark.parametrize("command", _catalogue_commands())
def test_every_catalogue_command_is_documented_and_helped(command: str) -> None:
    assert f"parval catalogue {command}" in README
    p = parval("catalogue", command, "--help")
    assert p.returncode == 0 and "Example" in p.stdout, p.stdout


def test_the_commands_are_there() -> None:
    assert _catalogue_commands() == ["init", "matrix", "run", "slurm", "validate"]
