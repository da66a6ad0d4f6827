"""The job files (`parval catalogue slurm|matrix`), every catalogue command's help, and the
Slurm and GitHub Actions recipes of docs/catalogue.md, which must be exactly what the commands print for
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

PAGE = (REPO / "docs" / "catalogue.md").read_text()
EXAMPLE = "plans/catalogue.yaml"


def _fenced(after: str, lang: str) -> str:
    """The first ```lang block after the text `after` in docs/catalogue.md."""
    start = PAGE.index(after)
    m = re.search(rf"```{lang}\n(.*?)```", PAGE[start:], re.S)
    assert m, f"no ```{lang} block after {after!r}"
    return m.group(1)


# How the docs write the folder a generated Slurm script names (where it was written).
SUBMIT_DIR_SHOWN = "/path/to/parval"


def _cmd(*args: str) -> str:
    p = parval(*args, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_docs_slurm_recipe_is_the_generated_script() -> None:
    generated = _cmd("catalogue", "slurm", EXAMPLE).replace(str(REPO), SUBMIT_DIR_SHOWN)
    assert _fenced("### Slurm", "bash") == generated


def test_the_docs_workflow_is_the_generated_one() -> None:
    assert _fenced("### GitHub Actions", "yaml") == _cmd("catalogue", "matrix", EXAMPLE, "--workflow")


def test_the_docs_example_is_the_shipped_catalogue() -> None:
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
    # the merge job has a time limit of its own, and the account the tasks have
    assert "--job-name=parval-demo-merge --time=1:00:00 --account=audio --output=" in text
    assert "--time=0:20:00" in _cmd("catalogue", "slurm", EXAMPLE, "--merge-time", "0:20:00")
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
    # the folder the paths start from is named, and that every node must see them
    assert f"# Its relative paths (plans/catalogue.yaml, runs/new, echo) start from {REPO},\n" in text
    assert "must be on a filesystem every node sees" in text
    assert f"SUBMIT_DIR={REPO}\n" in text
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
    assert wrong.returncode == 2, wrong.stderr
    assert f"in {elsewhere}: run it from {REPO}, the folder they are relative to" in wrong.stderr
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
    assert f"parval catalogue {command}" in PAGE
    p = parval("catalogue", command, "--help")
    assert p.returncode == 0 and "Example" in p.stdout, p.stdout


def test_the_commands_are_there() -> None:
    assert _catalogue_commands() == ["init", "matrix", "run", "slurm", "validate"]


def _step(workflow: dict[str, object], job: str, needle: str) -> dict[str, str]:
    steps = workflow["jobs"][job]["steps"]  # type: ignore[index]
    return next(s for s in steps if needle in json.dumps(s))


def test_the_workflow_builds_its_server_and_says_where_jobs_wait(tmp_path: Path) -> None:
    """The run job has a marked step to build or fetch audiocpp_server, which checks (by
    `catalogue validate --only`) that the combination's executables are there; the header and
    stderr say that a job whose runner labels no runner has waits instead of failing."""
    p = parval("catalogue", "matrix", EXAMPLE, "--workflow", cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "GitHub keeps it queued, never started, until\n# it gives up on it after 24 hours" in p.stdout
    assert "the cpu jobs run on [self-hosted, cpu]: register a self-hosted runner" in p.stderr
    assert "builds.cpu.runs_on" in p.stderr
    workflow = yaml.safe_load(p.stdout)
    build_step = _step(workflow, "run", "BUILD STEP")
    assert build_step["name"] == "Build or fetch audiocpp_server (BUILD STEP, edit it)"
    assert 'parval catalogue validate plans/catalogue.yaml --only "$COMBINATION"' in build_step["run"]
    names = [s.get("name", "") for s in workflow["jobs"]["run"]["steps"]]
    assert names.index(build_step["name"]) < names.index("${{ matrix.combination }} ${{ matrix.shard }}")
    # the check the step ends with: one combination's files, naming what is missing
    ok = parval("catalogue", "validate", EXAMPLE, "--only", "demo-tts-small.cpu.offline", cwd=REPO)
    assert ok.returncode == 0 and "demo-tts-small.cpu.offline" in ok.stdout and "demo-tts.cpu" not in ok.stdout
    labelled = {"cpu": build(runs_on=["ubuntu-latest"])}
    claims = yaml.safe_load((REPO / EXAMPLE).read_text())["claims"][:1]
    claims[0]["plan"] = str(REPO / "plans" / "demo.yaml")
    cat = write_catalogue(tmp_path / "cat.yaml", claims, labelled)
    quiet = parval("catalogue", "matrix", cat, "--workflow", cwd=REPO)
    assert quiet.returncode == 0 and "self-hosted" not in quiet.stderr, quiet.stderr


def test_the_workflow_updates_its_own_pull_request_comment(tmp_path: Path) -> None:
    """The comment step finds the comment it posted before by its first line and edits it;
    only the first run posts a new one. Run here with a `gh` that records its calls."""
    workflow = yaml.safe_load(_cmd("catalogue", "matrix", EXAMPLE, "--workflow"))
    step = _step(workflow, "report", "gh pr comment")
    script = step["run"]
    assert script.splitlines()[0].startswith("marker='<!-- parval catalogue plans/catalogue.yaml -->'")
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    (tmp_path / "runs" / "demo" / "claims.md").write_text("**parval claims**\n")
    existing = tmp_path / "existing-id"
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        f'if [ "$1" = api ] && [ "$2" != --method ] && [ -f {existing} ]; then cat {existing}; fi\n'
    )
    gh.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "GH_REPO": "o/r", "PR": "5"}

    def run() -> list[str]:
        calls.unlink(missing_ok=True)
        p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert p.returncode == 0, p.stderr
        return calls.read_text().splitlines()

    first = run()
    assert first[0].startswith("api repos/o/r/issues/5/comments --paginate --jq")
    assert first[1] == f"pr comment 5 --body-file {tmp_path}/parval-comment.md"
    body = (tmp_path / "parval-comment.md").read_text()
    assert body == "<!-- parval catalogue plans/catalogue.yaml -->\n**parval claims**\n"
    existing.write_text("77\n")
    again = run()
    assert again[1] == f"api --method PATCH repos/o/r/issues/comments/77 -F body=@{tmp_path}/parval-comment.md"
    assert not any(c.startswith("pr comment") for c in again)
