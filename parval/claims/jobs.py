"""Job files for the schedulers users already have: parval schedules nothing itself.

* `slurm_script`: one Slurm array script, one task per combination x shard, each task
  `parval catalogue run CAT --only KEY [--shard i/n]`, on one GPU (`--gres=gpu:1`) when a
  selected combination has a GPU backend and without GRES when all are CPU
  (`default_gres`; `--gres` overrides). Run with `bash`, it submits itself as the array
  job and then the merge job, dependent on the whole array (`afterany`), which writes the
  disclosure (`parval report --catalogue OUT --claims CAT`, md, json and junit).
* `matrix`: the combinations x shards as JSON a GitHub Actions `strategy.matrix` takes,
  and `github_workflow`, the workflow that consumes it (README "Scale-out").
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


@dataclass(frozen=True)
class SlurmOptions:
    gres: str | None = "gpu:1"  # None: no --gres line (CPU-only selections, CPU-only clusters)
    time: str = "12:00:00"
    partition: str | None = None
    extra: tuple[str, ...] = ()  # further #SBATCH options, e.g. "--account=audio"
    parval: str = ".venv/bin/parval"


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
    directives.append(f"--time={opts.time}")
    if opts.partition:
        directives.append(f"--partition={opts.partition}")
    directives += list(opts.extra)
    directives.append(f"--output={out}/slurm-%A_%a.log")
    merge = "; ".join(report_commands(parval, catalogue, out))
    lines = [
        "#!/bin/bash",
        f"# parval catalogue {cat.name!r}: one array task per combination x shard, then a merge job.",
        f"# Written by `parval catalogue slurm {catalogue}`; regenerate it rather than edit it.",
        "#   bash THIS_FILE     submits the array job and, dependent on it, the merge job that writes",
        f"#                      the disclosure ({out}/claims.md, claims.json, claims.xml)",
        "#   sbatch THIS_FILE   submits the array job alone",
        "# Submit from the directory the paths below are relative to.",
        *(f"#SBATCH {d}" for d in directives),
        "set -u",
        f"PARVAL={shlex.quote(parval)}",
        f"CATALOGUE={shlex.quote(catalogue)}",
        f"OUT={shlex.quote(out)}",
        'if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then',
        '  mkdir -p "$OUT" || exit 2',
        '  jobid=$(sbatch --parsable "$0") || exit 2',
        '  merge=$(sbatch --parsable --dependency="afterany:${jobid%%;*}" '
        f'--job-name={name}-merge --output="$OUT/slurm-merge-%j.log" \\',
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


def github_workflow(catalogue: str, out: str, parval_install: str | None = None) -> str:
    """The workflow that consumes `parval catalogue matrix` (README "Scale-out")."""
    catalogue, out = _plain(catalogue, "catalogue"), _plain(out, "--out")
    install = parval_install or "python3.11 -m venv .venv && .venv/bin/pip install -e '.[dev]'"
    claims = f".venv/bin/parval report --catalogue {out} --claims {catalogue}"
    steps_setup = ["      - uses: actions/checkout@v4", f"      - run: {install}"]
    return (
        "\n".join(
            [
                f"# Written by `parval catalogue matrix {catalogue} --workflow`: one job per combination x shard",
                "# on a runner of its backend, then one job that discloses every claim.",
                "name: parval catalogue",
                "on: [pull_request]",
                "jobs:",
                "  matrix:",
                "    runs-on: ubuntu-latest",
                "    outputs:",
                "      matrix: ${{ steps.matrix.outputs.matrix }}",
                "    steps:",
                *steps_setup,
                "      - id: matrix",
                f'        run: echo "matrix=$(.venv/bin/parval catalogue matrix {catalogue})" >> "$GITHUB_OUTPUT"',
                "  run:",
                "    needs: matrix",
                "    runs-on: ${{ matrix.runs_on }}",
                "    strategy:",
                "      fail-fast: false",
                "      matrix: ${{ fromJSON(needs.matrix.outputs.matrix) }}",
                "    steps:",
                *steps_setup,
                "      - name: ${{ matrix.combination }} ${{ matrix.shard }}",
                "        run: |",
                "          code=0",
                f"          .venv/bin/parval catalogue run {catalogue} --only ${{{{ matrix.combination }}}} "
                f"${{{{ matrix.shard_args }}}} --out {out} --quiet || code=$?",
                "          # 0 admitted, 1 failed, 3 pending: the combination ran and its evidence is written",
                "          " + " || ".join(f'[ "$code" -eq {c} ]' for c in RAN),
                "      - uses: actions/upload-artifact@v4",
                f'        with: {{name: "${{{{ matrix.artifact }}}}", path: "{out}/"}}',
                "  report:",
                "    needs: run",
                "    if: always()",
                "    runs-on: ubuntu-latest",
                "    steps:",
                *steps_setup,
                "      - uses: actions/download-artifact@v4",
                f'        with: {{pattern: "parval-*", path: "{out}", merge-multiple: true}}',
                f"      - run: {claims} --format junit --output parval-claims.xml || true",
                f"      - run: {claims} --output claims.md || true",
                "      - run: gh pr comment ${{ github.event.pull_request.number }} --body-file claims.md",
                '        env: {GH_TOKEN: "${{ github.token }}"}',
                "      # its exit code is the disclosure's: 0 only when every claimed combination is admitted",
                f"      - run: {claims} --format json --output claims.json",
            ]
        )
        + "\n"
    )
