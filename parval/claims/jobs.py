"""Job files for the schedulers users already have: parval schedules nothing itself.

* `slurm_script`: one Slurm array script, one task per combination x shard, each task
  `parval catalogue run CAT --only KEY [--shard i/n]`, on one GPU (`--gres=gpu:1`) when a
  selected combination has a GPU backend and without GRES when all are CPU
  (`default_gres`; `--gres` overrides), with the plans' server threads plus one CPUs
  (`default_cpus`) and `DEFAULT_MEM` memory unless told otherwise. Run with `bash`, it
  makes the output folder, submits itself as the array job and then the merge job,
  dependent on the whole array (`afterany`), with a time limit of its own, which writes
  the disclosure (`parval report --catalogue OUT --claims CAT`, md, json and junit). Its
  paths are relative to the folder it was written in, which it names.
* `matrix`: the combinations x shards as JSON a GitHub Actions `strategy.matrix` takes,
  and `github_workflow`, the workflow that consumes it (docs/catalogue.md, "Scale-out"): a marked step
  to build or fetch `audiocpp_server`, one pull-request comment updated in place; its
  pinned actions are `ACTIONS`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from parval.claims.combination import Catalogue, Combination, run_dir_name
from parval.errors import UsageError

# Exit codes of `parval catalogue run` that mean "the combination ran, its evidence is written".
RAN = (0, 1, 3)


# The backend that needs no GPU: a selection of only CPU combinations asks for no GRES.
CPU_BACKEND = "cpu"


def default_gres(combos: list[Combination]) -> str | None:
    """`gpu:1` (each task on a GPU of its own) when any selected combination has a GPU
    backend, else None (all CPU: no GRES line). One array job asks one resource of every
    task, so a mixed selection asks a GPU for its CPU tasks too (split it with --only)."""
    return None if all(c.backend == CPU_BACKEND for c in combos) else "gpu:1"


# Each task's memory when nothing else is said: parval cannot know a model's size, so this
# is a default to change (`--mem`) rather than a measurement.
DEFAULT_MEM = "16G"


def default_cpus(combos: list[Combination]) -> int:
    """The CPUs one task needs: the largest `server.threads` among the selected
    combinations' plans (one server runs at a time), plus one for parval itself (its load
    client and samplers)."""
    return max((int(c.plan(check_files=False).raw["server"]["threads"]) for c in combos), default=1) + 1


@dataclass(frozen=True)
class SlurmOptions:
    gres: str | None = "gpu:1"  # None: no --gres line (CPU-only selections, CPU-only clusters)
    cpus_per_task: int | None = None  # None: no --cpus-per-task line (the cluster's default)
    mem: str | None = DEFAULT_MEM  # None: no --mem line (the cluster's default)
    exclusive: bool = False  # --exclusive: each task has its node to itself
    time: str = "12:00:00"
    partition: str | None = None
    extra: tuple[str, ...] = ()  # further #SBATCH options, e.g. "--account=audio"
    parval: str = ".venv/bin/parval"
    # The merge job only reads the runs and writes the disclosure: minutes, not the tasks'
    # hours (a job without --time gets the partition's default, often its maximum).
    merge_time: str = "1:00:00"
    # The folder the script's relative paths start from (where `parval catalogue slurm` ran).
    submit_dir: str = "."


def tasks(combos: list[Combination]) -> list[tuple[str, tuple[int, int] | None]]:
    """(combination key, shard) for every job, in catalogue order."""
    return [(c.key, shard) for c in combos for shard in c.shard_list()]


def _plain(value: str, what: str) -> str:
    if not value or re.search(r"\s", value):
        raise UsageError(f"{what} {value!r}: paths in job files must not contain whitespace")
    return value


def report_commands(parval: str, catalogue: str, out: str) -> list[str]:
    """The disclosure in the three formats, written beside the runs (the last one's exit
    code, the markdown's, is the disclosure verdict)."""
    base = [parval, "report", "--catalogue", out, "--claims", catalogue]
    return [
        shlex.join([*base, "--format", "json", "--output", f"{out}/claims.json"]),
        shlex.join([*base, "--format", "junit", "--output", f"{out}/claims.xml"]),
        shlex.join([*base, "--output", f"{out}/claims.md"]),
    ]


def slurm_script(cat: Catalogue, combos: list[Combination], catalogue: str, out: str, opts: SlurmOptions) -> str:
    """The array script (module docstring); paths are relative to the submit directory."""
    catalogue, out, parval = (_plain(catalogue, "catalogue"), _plain(out, "--out"), _plain(opts.parval, "--parval"))
    jobs = tasks(combos)
    if not jobs:
        raise UsageError("no combination selected: nothing to submit")
    name = f"parval-{cat.name}"
    directives = [f"--job-name={name}", f"--array=1-{len(jobs)}"]
    if opts.gres:
        directives.append(f"--gres={opts.gres}")
    if opts.cpus_per_task:
        directives.append(f"--cpus-per-task={opts.cpus_per_task}")
    if opts.mem:
        directives.append(f"--mem={opts.mem}")
    if opts.exclusive:
        directives.append("--exclusive")
    directives.append(f"--time={opts.time}")
    if opts.partition:
        directives.append(f"--partition={opts.partition}")
    directives += list(opts.extra)
    directives.append(f"--output={out}/slurm-%A_%a.log")
    merge = "; ".join(report_commands(parval, catalogue, out))
    # the merge job is a job of the same account and partition as the tasks
    merge_opts = [f"--time={opts.merge_time}"]
    if opts.partition:
        merge_opts.append(f"--partition={opts.partition}")
    merge_opts += list(opts.extra)
    here = opts.submit_dir
    exclusive = (
        ["# Each task has its node to itself (--exclusive): neighbours would disturb the memory and timing figures."]
        if opts.exclusive
        else [
            "# On a node shared with other jobs (a shared GPU box), their load disturbs the memory and",
            "# timing measurements: add --exclusive (`parval catalogue slurm --exclusive`) to give each",
            "# task its node to itself.",
        ]
    )
    lines = [
        "#!/bin/bash",
        f"# parval catalogue {cat.name!r}: one array task per combination x shard, then a merge job.",
        f"# Written by `parval catalogue slurm {catalogue}`; regenerate it rather than edit it.",
        f"# Its relative paths ({catalogue}, {out}, {parval}) start from {here},",
        "# the folder `parval catalogue slurm` ran in: submit it from there, since Slurm starts every",
        "# task in the directory sbatch ran in.",
        f"# The venv ({parval}), the repository (the catalogue, its plans and the executables, models",
        f"# and fixtures they name) and {out} must be on a filesystem every node sees (a shared home",
        "# or scratch, not a node's local disk): each task runs on whichever node Slurm picks.",
        f"#   bash THIS_FILE     makes {out}, submits the array job and, dependent on it, the merge job",
        f"#                      that writes the disclosure ({out}/claims.md, claims.json, claims.xml)",
        f"#   sbatch THIS_FILE   submits the array job alone; {out} must exist first (mkdir -p {out}):",
        "#                      Slurm opens the --output log there before the script runs",
        "# Each task's resources: --cpus-per-task N (default: the plans' largest server threads plus one",
        f"# for parval) and --mem SIZE (default {DEFAULT_MEM}, a guess: set it to what the model needs).",
        *exclusive,
        *(f"#SBATCH {d}" for d in directives),
        "set -u",
        f"PARVAL={shlex.quote(parval)}",
        f"CATALOGUE={shlex.quote(catalogue)}",
        f"OUT={shlex.quote(out)}",
        f"SUBMIT_DIR={shlex.quote(here)}",
        'if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then',
        '  if [ ! -f "$CATALOGUE" ] || ! command -v "$PARVAL" >/dev/null; then',
        '    echo "$0: no $CATALOGUE or $PARVAL in $PWD: run it from $SUBMIT_DIR, the folder they are relative to" >&2',
        "    exit 2",
        "  fi",
        '  mkdir -p "$OUT" || exit 2',
        '  jobid=$(sbatch --parsable "$0") || exit 2',
        '  merge=$(sbatch --parsable --dependency="afterany:${jobid%%;*}" '
        f'--job-name={name}-merge {" ".join(shlex.quote(o) for o in merge_opts)} --output="$OUT/slurm-merge-%j.log" \\',
        f"    --wrap {shlex.quote(merge)}) || exit 2",
        '  echo "submitted array job ${jobid%%;*} and merge job ${merge%%;*}"',
        "  exit 0",
        "fi",
        "TASKS=(",
        *(f'  "{key} {"-" if shard is None else f"{shard[0]}/{shard[1]}"}"' for key, shard in jobs),
        ")",
        'read -r key shard <<< "${TASKS[$((SLURM_ARRAY_TASK_ID - 1))]}"',
        'if [ "$shard" = "-" ]; then set --; else set -- --shard "$shard"; fi',
        '"$PARVAL" catalogue run "$CATALOGUE" --only "$key" "$@" --out "$OUT" --quiet',
        "code=$?",
        "# 0 admitted, 1 failed, 3 pending: the combination ran and its evidence is written",
        f'case "$code" in {"|".join(map(str, RAN))}) exit 0 ;; *) exit "$code" ;; esac',
    ]
    return "\n".join(lines) + "\n"


def matrix(combos: list[Combination]) -> dict[str, list[dict[str, str | list[str]]]]:
    """`{"include": [...]}`, one entry per combination x shard (GitHub Actions strategy.matrix)."""
    include: list[dict[str, str | list[str]]] = []
    for c in combos:
        for shard in c.shard_list():
            label = "" if shard is None else f"{shard[0]}/{shard[1]}"
            include.append(
                {
                    "combination": c.key,
                    "claim": c.claim.name,
                    "model": c.model_id,
                    "build": c.build.name,
                    "backend": c.backend,
                    "mode": c.mode,
                    "shard": label,
                    "shard_args": f"--shard {label}" if shard else "",
                    "runs_on": list(c.build.runs_on),
                    "artifact": f"parval-{run_dir_name(c.key, shard)}",
                }
            )
    return {"include": include}


def matrix_json(combos: list[Combination]) -> str:
    """One line, as `$GITHUB_OUTPUT` needs it."""
    return json.dumps(matrix(combos), separators=(",", ":"))


# The actions the workflow uses, at their current major versions (Node 24 runtimes; the
# Node 20 ones, checkout@v4 and the like, stop working when GitHub removes Node 20). The
# default test suite lints the workflow with actionlint, which flags deprecated ones.
ACTIONS = {
    "checkout": "actions/checkout@v7",
    "setup-python": "actions/setup-python@v7",
    "upload-artifact": "actions/upload-artifact@v7",
    "download-artifact": "actions/download-artifact@v8",
}
PYTHON = "3.11"


def runner_notes(runners: dict[str, tuple[str, ...]]) -> list[str]:
    """What `--workflow` says on stderr about self-hosted runner labels: a job whose labels
    no registered runner has is never started, and GitHub does not fail it for a day."""
    return [
        f"parval: note: the {backend} jobs run on [{', '.join(labels)}]: register a self-hosted runner with "
        "those labels, or GitHub keeps them queued, never started, for 24 hours; or set "
        f"builds.{backend}.runs_on in the catalogue (e.g. [ubuntu-latest] for a CPU backend)"
        for backend, labels in sorted(runners.items())
        if "self-hosted" in labels
    ]


def github_workflow(
    catalogue: str, out: str, parval_install: str | None = None, runners: dict[str, tuple[str, ...]] | None = None
) -> str:
    """The workflow that consumes `parval catalogue matrix` (docs/catalogue.md, "Scale-out").

    `runners`: each backend's runner labels (`builds.<backend>.runs_on`), named in a comment,
    since the default, `[self-hosted, <backend>]`, needs runners registered with those labels."""
    catalogue, out = _plain(catalogue, "catalogue"), _plain(out, "--out")
    install = parval_install or "python -m venv .venv && .venv/bin/pip install -e ."
    claims = f".venv/bin/parval report --catalogue {out} --claims {catalogue}"
    steps_setup = [
        f"      - uses: {ACTIONS['checkout']}",
        f"      - uses: {ACTIONS['setup-python']}",
        "        with:",
        f'          python-version: "{PYTHON}"',
        f"      - run: {install}",
    ]
    labels = ", ".join(f"{b}: [{', '.join(r)}]" for b, r in sorted((runners or {}).items()))
    # the first line of the one pull-request comment this workflow keeps up to date
    marker = "<!-- parval catalogue " + re.sub(r"[^\w./-]", "_", catalogue) + " -->"
    return (
        "\n".join(
            [
                f"# Written by `parval catalogue matrix {catalogue} --workflow`: one job per combination x shard",
                "# on a runner of its backend, then one job that discloses every claim, comments it on the",
                "# pull request (one comment, updated in place on every run) and uploads it (claims.md,",
                "# claims.json and the JUnit claims.xml).",
                "# Each combination runs on its build's runner labels, the catalogue's builds.<backend>.runs_on",
                "# (default [self-hosted, <backend>]: register self-hosted runners with those labels, or set",
                "# runs_on, e.g. [ubuntu-latest] for a CPU backend)" + (f"; here {labels}." if labels else "."),
                "# A job whose labels no runner has does not fail: GitHub keeps it queued, never started, until",
                "# it gives up on it after 24 hours.",
                "# Edit the step marked BUILD STEP: it must build or fetch audiocpp_server.",
                "name: parval catalogue",
                "on: [pull_request]",
                "permissions:",
                "  contents: read",
                "jobs:",
                "  matrix:",
                "    runs-on: ubuntu-latest",
                "    outputs:",
                "      matrix: ${{ steps.matrix.outputs.matrix }}",
                "    steps:",
                *steps_setup,
                "      - id: matrix",
                "        run: |",
                f"          matrix=$(.venv/bin/parval catalogue matrix {catalogue})",
                '          echo "matrix=$matrix" >> "$GITHUB_OUTPUT"',
                "  run:",
                "    needs: matrix",
                "    runs-on: ${{ matrix.runs_on }}",
                "    strategy:",
                "      fail-fast: false",
                "      matrix: ${{ fromJSON(needs.matrix.outputs.matrix) }}",
                "    steps:",
                *steps_setup,
                "      # ---- BUILD STEP: edit it to build or fetch audiocpp_server ----------------------------",
                "      # parval builds nothing: this step must leave the executables the catalogue names for this",
                "      # backend (builds.<backend>.candidate.executable and .baseline.executable) where it names",
                "      # them, e.g. from an audio.cpp checkout (CUDA shown; -DAUDIOCPP_SLOT_VALIDATION=ON for the",
                "      # framework record):",
                "      #   cmake -G Ninja -S ../audio.cpp -B ../audio.cpp/build-cuda -DCMAKE_BUILD_TYPE=Release \\",
                "      #     -DENGINE_ENABLE_CUDA=ON -DAUDIOCPP_SLOT_VALIDATION=ON",
                "      #   cmake --build ../audio.cpp/build-cuda --target audiocpp_server",
                "      # or download a release binary. The check below fails the job here, naming what is missing.",
                "      - name: Build or fetch audiocpp_server (BUILD STEP, edit it)",
                "        env:",
                "          BACKEND: ${{ matrix.backend }}",
                "          COMBINATION: ${{ matrix.combination }}",
                "        run: |",
                '          echo "BUILD STEP: nothing built for backend $BACKEND (edit this step of the workflow)"',
                f'          .venv/bin/parval catalogue validate {catalogue} --only "$COMBINATION"',
                "      - name: ${{ matrix.combination }} ${{ matrix.shard }}",
                "        env:",
                "          COMBINATION: ${{ matrix.combination }}",
                "          SHARD: ${{ matrix.shard }}",
                "        run: |",
                "          code=0",
                f'          .venv/bin/parval catalogue run {catalogue} --only "$COMBINATION" '
                f'${{SHARD:+--shard "$SHARD"}} --out {out} --quiet || code=$?',
                "          # 0 admitted, 1 failed, 3 pending: the combination ran and its evidence is written",
                f'          case "$code" in {"|".join(map(str, RAN))}) ;; *) exit "$code" ;; esac',
                f"      - uses: {ACTIONS['upload-artifact']}",
                "        with:",
                "          name: ${{ matrix.artifact }}",
                f"          path: {out}/",
                "          overwrite: true",
                "  report:",
                "    needs: run",
                "    if: ${{ !cancelled() }}",
                "    runs-on: ubuntu-latest",
                "    permissions:",
                "      contents: read",
                "      pull-requests: write",
                "    steps:",
                *steps_setup,
                f"      - uses: {ACTIONS['download-artifact']}",
                "        with:",
                "          pattern: parval-*",
                f"          path: {out}",
                "          merge-multiple: true",
                "      # the disclosure in three formats; the exit code is any format's (the JSON one's here)",
                "      - id: disclose",
                "        run: |",
                f"          {claims} --format junit --output {out}/claims.xml || true",
                f"          {claims} --output {out}/claims.md || true",
                "          code=0",
                f"          {claims} --format json --output {out}/claims.json || code=$?",
                '          echo "code=$code" >> "$GITHUB_OUTPUT"',
                f"      - uses: {ACTIONS['upload-artifact']}",
                "        if: ${{ !cancelled() }}",
                "        with:",
                "          name: claims",
                "          path: |",
                f"            {out}/claims.md",
                f"            {out}/claims.json",
                f"            {out}/claims.xml",
                "          overwrite: true",
                "      # one comment per pull request, found by its first line and updated in place; a pull",
                "      # request from a fork gets a read-only token, so it gets no comment",
                "      - if: ${{ !cancelled() && github.event.pull_request.head.repo.full_name == github.repository }}",
                "        run: |",
                f"          marker='{marker}'",
                '          body="$RUNNER_TEMP/parval-comment.md"',
                f'          {{ echo "$marker"; cat {out}/claims.md; }} > "$body"',
                '          id=$(gh api "repos/$GH_REPO/issues/$PR/comments" --paginate \\',
                '            --jq ".[] | select(.body | startswith(\\"$marker\\")) | .id" | tail -n 1)',
                '          if [ -n "$id" ]; then',
                '            gh api --method PATCH "repos/$GH_REPO/issues/comments/$id" -F "body=@$body" > /dev/null',
                "          else",
                '            gh pr comment "$PR" --body-file "$body"',
                "          fi",
                "        env:",
                "          GH_TOKEN: ${{ github.token }}",
                "          GH_REPO: ${{ github.repository }}",
                "          PR: ${{ github.event.pull_request.number }}",
                "      # the job's verdict is the disclosure's: 0 only when every claimed combination is admitted",
                "      - env:",
                "          CODE: ${{ steps.disclose.outputs.code }}",
                '        run: exit "$CODE"',
            ]
        )
        + "\n"
    )
