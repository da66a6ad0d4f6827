"""`parval catalogue`: the admitted catalogue of a change: propose it, check it, run it
here, or write the Slurm / GitHub Actions jobs that run it on many machines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from parval.errors import UsageError

app = typer.Typer(
    name="catalogue",
    help="The admitted catalogue: which model/backend/mode combinations a change claims at which slot "
    "counts, and the candidate build per backend (`parval schema catalogue`). Propose one (init), check "
    "it (validate), collect its evidence here (run) or on many machines (slurm, matrix), then disclose "
    "every claim with `parval report --catalogue DIR --claims CAT`."
    "\n\nExample: parval catalogue run plans/catalogue.yaml && "
    "parval report --catalogue runs/demo --claims plans/catalogue.yaml",
    no_args_is_help=True,
)

CatalogueArg = Annotated[Path, typer.Argument(help="The catalogue file (YAML; `parval schema catalogue`).")]
OnlyOpt = Annotated[
    list[str] | None, typer.Option("--only", help="Only this combination (claim.build.mode) or claim; repeatable.")
]


@app.command("init")
def init_command(
    server_config: Annotated[
        list[Path] | None,
        typer.Option("--server-config", help="An audiocpp_server config the candidate ships; repeatable."),
    ] = None,
    model_spec: Annotated[
        list[Path] | None,
        typer.Option("--model-spec", help="A model spec (one model entry, or a list of them); repeatable."),
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="Backend of the model specs that name none (default cuda).")
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the catalogue.")] = Path(
        "catalogue.yaml"
    ),
    plans_dir: Annotated[
        Path | None,
        typer.Option("--plans-dir", help="Where to write a starter plan per model (default: the catalogue's folder)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the catalogue and existing starter plans.")] = False,
) -> None:
    """Propose a catalogue from the server configs / model specs a candidate ships.

    Every model is claimed at counts 1..slots (its advertised `slots`) on the backend of its
    config, with a starter plan as `parval init` writes it (an existing plan file is kept).
    The candidate build per backend and each plan's EDIT-ME placeholders are left to you;
    `parval catalogue validate` names what is still missing.

    Example: parval catalogue init --server-config cuda.json --server-config vulkan.json -o plans/catalogue.yaml
    """
    from parval.claims.propose import Source, proposal_warnings, read_model_spec, write_proposal
    from parval.plan.starter import read_server_config

    sources = [Source(p, read_server_config(p), "server config") for p in server_config or []]
    sources += [read_model_spec(p, backend) for p in model_spec or []]
    if not sources:
        raise UsageError("name at least one --server-config or --model-spec")
    if output.exists() and not force:
        raise UsageError(f"{output}: already exists", hint="choose another --output, or pass --force")
    text, plans = write_proposal(sources, output, plans_dir or output.parent, force=force)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, "utf-8")
    for plan, written in plans:
        typer.echo(f"{'wrote' if written else 'kept '} {plan}", err=True)
    typer.echo(f"wrote {output}: {len(plans)} claim(s)", err=True)
    for warning in proposal_warnings(sources):
        typer.echo(warning, err=True)
    typer.echo(f"next: replace the EDIT-ME placeholders, then run: parval catalogue validate {output}", err=True)


@app.command("validate")
def validate_command(
    catalogue: CatalogueArg,
    files: Annotated[
        bool, typer.Option("--files/--no-files", help="Also check each plan's executables and files here.")
    ] = True,
    only: OnlyOpt = None,
) -> None:
    """Check a catalogue (schema, plans, builds) and list its combinations and jobs.

    With --files (default) every effective plan's executables, model and fixture files must
    exist on this machine, as `parval catalogue run` needs them; --no-files checks only what
    a report needs (for a catalogue of another machine's builds). --only checks the files of
    the named combinations alone (what one job of the generated workflow runs). Exit 0
    valid, 2 not.

    Example: parval catalogue validate plans/catalogue.yaml
    """
    from parval.claims.combination import load_catalogue
    from parval.claims.combination_runs import check_combinations

    cat = load_catalogue(catalogue)
    selected = cat.select(only)
    if files:
        check_combinations(selected)
    else:  # what a report needs: each build's identity
        for name in sorted({c.build.name for c in cat.combinations}):
            cat.file.builds[name].candidate.identity_sha256()
    typer.echo(f"{catalogue}: catalogue {cat.name!r} is valid: {len(cat.combinations)} combination(s)")
    for c in selected:
        shards = "" if c.shards == 1 else f", {c.shards} shards"
        typer.echo(
            f"  {c.key}: model {c.model_id} ({c.family}, {c.task}) counts {list(c.counts)}{shards}; "
            f"plan {c.claim.source}"
        )


@app.command("run")
def run_command(
    catalogue: CatalogueArg,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder of the run directories (default: runs/<catalogue name>).")
    ] = None,
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend", help="Run this backend's combinations (default: the backends found here); repeatable."
        ),
    ] = None,
    only: OnlyOpt = None,
    shard: Annotated[
        str | None, typer.Option("--shard", help="Run shard i/n of each selected combination's counts.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines; only the summary.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also show each campaign's own progress (as parval run does).")
    ] = False,
    without_gpu: Annotated[
        bool,
        typer.Option(
            "--without-gpu",
            help="Run combinations whose plan requires GPU memory readings even where NVML cannot read the "
            "device (their M5 stays PENDING); without it such a catalogue run is refused before anything starts.",
        ),
    ] = False,
) -> None:
    """Collect the evidence of every combination whose backend is on this machine.

    Without --only or --backend, the combinations whose backend is found here (the CPU always; \
CUDA when NVML finds a device; HIP/ROCm with /dev/kfd; Vulkan when `vulkaninfo --summary` \
succeeds; Metal on macOS); --only and --backend choose explicitly. One campaign after \
another (GPU campaigns must not share a device), each in its own run directory \
OUT/<claim>.<build>.<mode> (OUT/<...>.shard<i>of<n> with --shard), with a progress line on \
stderr when each combination starts (what is done: run, resume, rerun, judge) and when it ends \
(its verdict). Resumable: a finished combination whose inputs are unchanged \
(effective plan hash, executables', model files' and fixtures' hashes, procedure version) is \
not rerun; an interrupted one is resumed; one whose inputs changed is rerun, the old run \
kept under OUT/superseded/. Exit code: 0 every combination run here admitted, 1 any FAILED, \
3 otherwise, 2 a catalogue or plan problem (nothing is run), 130/143 interrupted.

    Example: parval catalogue run plans/catalogue.yaml --out runs/demo

    Example: parval catalogue run plans/catalogue.yaml --only demo-tts.cpu.offline --shard 2/3
    """
    from parval.claims.combination import load_catalogue
    from parval.claims.combination_runs import run_catalogue, worst_exit
    from parval.commands.run import parse_shard
    from parval.ui.lines import Finish, Listener
    from parval.ui.listener import make_listener

    cat = load_catalogue(catalogue)
    combos = cat.select(only)
    target = out if out is not None else Path("runs") / cat.name

    def listen() -> tuple[Listener, Finish]:
        return make_listener(quiet=not verbose, events_json=False)

    def echo(line: str) -> None:
        if not quiet:
            typer.echo(line, err=True)

    outcomes, signalled = run_catalogue(
        combos,
        target,
        shard=parse_shard(shard),
        backends=backend or None,
        detect=not only,
        listen=listen,
        echo=echo,
        without_gpu=without_gpu,
    )
    ran = [o for o in outcomes if o.exit_code is not None]
    code = worst_exit([int(o.exit_code) for o in ran if o.exit_code is not None]) if ran else 3
    left = len(outcomes) - len(ran)
    typer.echo(
        f"catalogue {cat.name}: {len(ran)} combination(s) with evidence here"
        + (f", {left} left for other machines" if left else "")
        + f"; disclose with: parval report --catalogue {target} --claims {catalogue}"
    )
    if signalled is not None:
        again = _same_run(catalogue, out, backend, only, shard, without_gpu)
        typer.echo(f"parval: error: interrupted; continue with: {again}", err=True)
        code = signalled
    raise typer.Exit(code)


def _same_run(
    catalogue: Path,
    out: Path | None,
    backend: list[str] | None,
    only: list[str] | None,
    shard: str | None,
    without_gpu: bool = False,
) -> str:
    """The `parval catalogue run` command that continues this one: the same catalogue,
    --out, --backend, --only, --shard and --without-gpu (shell-quoted)."""
    import shlex

    words = ["parval", "catalogue", "run", str(catalogue)]
    if out is not None:
        words += ["--out", str(out)]
    for b in backend or []:
        words += ["--backend", b]
    for key in only or []:
        words += ["--only", key]
    if shard is not None:
        words += ["--shard", shard]
    if without_gpu:
        words.append("--without-gpu")
    return shlex.join(words)


@app.command("slurm")
def slurm_command(
    catalogue: CatalogueArg,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder of the run directories (default: runs/<catalogue name>).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the script to FILE (default: stdout).")
    ] = None,
    only: OnlyOpt = None,
    gres: Annotated[
        str | None,
        typer.Option(
            "--gres",
            help="The GRES each task asks for; 'none' leaves the line out. Default: gpu:1 when a selected "
            "combination has a GPU backend, none when all are CPU.",
        ),
    ] = None,
    cpus_per_task: Annotated[
        int | None,
        typer.Option(
            "--cpus-per-task",
            min=0,
            help="The CPUs each task asks for; 0 leaves the line out. Default: the selected plans' largest "
            "server.threads plus one for parval.",
        ),
    ] = None,
    mem: Annotated[
        str | None,
        typer.Option(
            "--mem",
            help="The memory each task asks for (Slurm --mem, e.g. 32G); 'none' leaves the line out. "
            "Default: 16G, to be set to what the model needs.",
        ),
    ] = None,
    exclusive: Annotated[
        bool,
        typer.Option(
            "--exclusive",
            help="Give each task its node to itself (Slurm --exclusive): other jobs on a shared node "
            "disturb the memory and timing measurements.",
        ),
    ] = False,
    time_limit: Annotated[str, typer.Option("--time", help="Each task's time limit (Slurm --time).")] = "12:00:00",
    merge_time: Annotated[
        str, typer.Option("--merge-time", help="The merge job's time limit (Slurm --time); it only reads the runs.")
    ] = "1:00:00",
    partition: Annotated[str | None, typer.Option("--partition", help="The Slurm partition.")] = None,
    sbatch: Annotated[
        list[str] | None, typer.Option("--sbatch", help="A further #SBATCH option, e.g. --account=audio; repeatable.")
    ] = None,
    parval: Annotated[
        str, typer.Option("--parval", help="The parval command the tasks run, relative to the submit directory.")
    ] = ".venv/bin/parval",
) -> None:
    """Write a Slurm array script: one task per combination x shard, then a dependent merge job.

    `bash FILE` submits the array job (each task `parval catalogue run CAT --only KEY --shard i/n`, \
one GPU each with --gres=gpu:1 when a selected combination has a GPU backend, no GRES when all \
are CPU; --gres overrides; --cpus-per-task the plans' server threads plus one and --mem 16G unless \
told otherwise) and a merge job that runs after the whole array (afterany) and writes \
OUT/claims.md, claims.json and claims.xml (`parval report --catalogue OUT --claims CAT`; \
--merge-time, default 1:00:00). Paths stay as given: submit from the folder they are relative \
to, the one this command ran in (the script names it); the venv, the repository and OUT must be \
on a filesystem every node sees. `sbatch FILE` alone submits the array job only, and needs OUT \
to exist already.

    Example: parval catalogue slurm plans/catalogue.yaml -o parval-demo.sbatch && bash parval-demo.sbatch
    """
    from parval.claims.combination import load_catalogue
    from parval.claims.jobs import DEFAULT_MEM, SlurmOptions, default_cpus, default_gres, slurm_script

    cat = load_catalogue(catalogue)
    combos = cat.select(only)
    opts = SlurmOptions(
        gres=default_gres(combos) if gres is None else None if gres == "none" else gres,
        cpus_per_task=default_cpus(combos) if cpus_per_task is None else cpus_per_task or None,
        mem=DEFAULT_MEM if mem is None else None if mem == "none" else mem,
        exclusive=exclusive,
        time=time_limit,
        partition=partition,
        extra=tuple(sbatch or ()),
        parval=parval,
        merge_time=merge_time,
        submit_dir=str(Path.cwd()),
    )
    target = out if out is not None else Path("runs") / cat.name
    text = slurm_script(cat, combos, str(catalogue), str(target), opts)
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, "utf-8")
    output.chmod(0o755)
    typer.echo(f"wrote {output}: submit with: bash {output}", err=True)


@app.command("matrix")
def matrix_command(
    catalogue: CatalogueArg,
    backend: Annotated[
        list[str] | None, typer.Option("--backend", help="Only this backend's combinations; repeatable.")
    ] = None,
    only: OnlyOpt = None,
    workflow: Annotated[
        bool, typer.Option("--workflow", help="Print the GitHub Actions workflow that consumes the matrix instead.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="With --workflow: the runs folder (default: runs/<catalogue name>).")
    ] = None,
) -> None:
    """Print the combinations x shards as JSON for a GitHub Actions `strategy.matrix`.

    One line, `{"include": [{"combination", "claim", "model", "build", "backend", "mode", "shard", \
"shard_args", "runs_on", "artifact"}, ...]}`: `echo "matrix=$(parval catalogue matrix CAT)" >> \
"$GITHUB_OUTPUT"`, then `matrix: ${{ fromJSON(needs.<job>.outputs.matrix) }}`. A selection with \
no combination (e.g. --backend cuda on a CPU-only catalogue) is an error (exit 2), not an empty \
matrix, which GitHub Actions rejects. With --workflow, the whole workflow (docs/catalogue.md, "Scale-out").

    Example: parval catalogue matrix plans/catalogue.yaml --backend cuda

    Example: parval catalogue matrix plans/catalogue.yaml --workflow > .github/workflows/parval.yml
    """
    from parval.claims.combination import load_catalogue
    from parval.claims.jobs import github_workflow, matrix_json, runner_notes

    cat = load_catalogue(catalogue)
    if workflow:
        target = out if out is not None else Path("runs") / cat.name
        runners = {c.backend: c.build.runs_on for c in cat.combinations}
        sys.stdout.write(github_workflow(str(catalogue), str(target), runners=runners))
        for line in runner_notes(runners):
            typer.echo(line, err=True)
        return
    selected = cat.select(only)
    combos = [c for c in selected if not backend or c.backend in backend]
    if not combos:
        # GitHub Actions rejects an empty strategy.matrix: say so here rather than print one.
        have = ", ".join(sorted({c.backend for c in selected})) or "none"
        raise UsageError(
            f"{catalogue}: no combination claims backend {', '.join(backend or [])} (the selected combinations' "
            f"backends: {have}); an empty matrix is not printed, since GitHub Actions rejects one",
            hint="choose a backend the catalogue claims, or leave --backend out",
        )
    typer.echo(matrix_json(combos))
