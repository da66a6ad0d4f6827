"""`parval catalogue run`: every selected combination whose backend is on this machine, one
after another (GPU campaigns must not share a device), each in its own run directory
under OUT (`<key>` or `<key>.shard<i>of<n>`), resumable by its inputs (`inputs.py`).

Everything is checked before anything runs: each effective plan's files and executables,
and each build's declared sha256 against the executable here. A signal stops the
campaign in progress the way `parval run` does (partial evidence written) and the
catalogue with it; the next `parval catalogue run` resumes that combination.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from parval.claims.combination import Combination, run_dir_name
from parval.claims.inputs import Action, check_run_dir, run_state, set_aside
from parval.errors import EXIT_ADMITTED, EXIT_FAILED, EXIT_INCOMPLETE, PlanError, UsageError
from parval.jsontypes import JsonObject
from parval.plan.load import Plan
from parval.rundir.evidence_types import Evidence
from parval.rundir.layout import EVIDENCE


def backends_here() -> dict[str, str]:
    """The backends this machine has, each with how it was found. The CPU always; CUDA when
    NVML finds a device; HIP/ROCm when /dev/kfd exists; Vulkan when `vulkaninfo --summary`
    succeeds; Metal on macOS."""
    found = {"cpu": "always available"}
    from parval.nvml import open_device

    device = open_device(0)
    if not isinstance(device, str):
        found["cuda"] = "NVML found device 0"
        device.close()
    if Path("/dev/kfd").exists():
        found["hip"] = found["rocm"] = "/dev/kfd exists"
    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo:
        try:
            ok = subprocess.run([vulkaninfo, "--summary"], capture_output=True, timeout=30, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            found["vulkan"] = "vulkaninfo --summary succeeded"
    if sys.platform == "darwin":
        found["metal"] = "macOS"
    return found


@dataclass(frozen=True)
class Outcome:
    key: str
    run_dir: Path | None
    action: str  # what was done: run, resume, rerun, judge, up to date, skipped
    exit_code: int | None  # the evidence's verdict; None when not run here
    line: str
    seconds: float


def check_combinations(combos: list[Combination]) -> dict[str, Plan]:
    """Each combination's effective plan with its files checked, and each build's declared
    sha256 against the executable on this machine; PlanError lists every problem."""
    plans: dict[str, Plan] = {}
    problems: list[str] = []
    checked: set[str] = set()
    for c in combos:
        for exe in (c.build.candidate, c.build.baseline):
            if exe is None or exe.where in checked:
                continue
            checked.add(exe.where)
            try:
                exe.identity_sha256()
            except PlanError as err:
                problems.append(str(err))
        try:
            plans[c.key] = c.plan(check_files=True)
        except PlanError as err:
            problems.append(str(err))
    if problems:
        raise PlanError(f"{len(problems)} combination problem(s); nothing was run:\n" + "\n".join(problems))
    return plans


def check_gpu_readable(plans: dict[str, Plan]) -> None:
    """Refuse (exit 2) when any chosen combination's plan requires GPU memory readings that
    NVML cannot give on this machine: each such campaign would run to its end with M5 PENDING."""
    from parval.server.preflight import WITHOUT_GPU, gpu_refusal

    refused = [(key, r) for key, plan in plans.items() if (r := gpu_refusal(plan)) is not None]
    if refused:
        raise UsageError(
            f"{len(refused)} combination(s) require GPU memory readings this machine cannot give; nothing was run:\n"
            + "\n".join(f"  {key}: {r.message}" for key, r in refused),
            hint=f"run them on a machine with the NVIDIA driver, or anyway with {WITHOUT_GPU} (M5 then stays PENDING)",
        )


def worst_exit(codes: list[int]) -> int:
    """1 when any combination FAILED, else 3 when any is incomplete, else 0."""
    if EXIT_FAILED in codes:
        return EXIT_FAILED
    return EXIT_INCOMPLETE if any(c != EXIT_ADMITTED for c in codes) else EXIT_ADMITTED


def _verdict(run_dir: Path) -> tuple[int, str]:
    ev: Evidence = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    return int(ev["verdict"]["exit_code"]), str(ev["verdict"]["line"])


# (the event listener, what is handed the evidence once judged), made afresh for each run
Listen = Callable[[], tuple[Callable[[JsonObject], None], Callable[[Mapping[str, object]], None]]]


def run_one(
    combo: Combination,
    plan: Plan,
    out: Path,
    shard: tuple[int, int] | None,
    listen: Listen,
    started: Callable[[str, str, Path], None] | None = None,
) -> tuple[Outcome, int | None]:
    """One combination: (its outcome, the exit code of a signal that stopped it).
    `started(action, reason, run_dir)` is called once it is known that work is to be done
    (not for an up-to-date combination), before any of it."""
    from parval import api
    from parval.judge import judge_run
    from parval.rundir.events import campaign_shard, read_events
    from parval.rundir.layout import EVENTS
    from parval.rundir.resume import prepare_resume
    from parval.signals import handle_signals

    t0 = time.monotonic()
    out = out.resolve()  # servers run in their own directory: every path handed on is absolute
    run_dir = out / run_dir_name(combo.key, shard)
    state = run_state(plan, run_dir)
    action = str(state.action)
    if state.action is Action.SKIP:
        code, line = _verdict(run_dir)
        return Outcome(combo.key, run_dir, action, code, f"{line} ({state.reason})", time.monotonic() - t0), None
    if started is not None:
        started(action, state.reason, run_dir)
    if state.action is Action.JUDGE:
        evidence = judge_run(run_dir)
        api.finalize(run_dir, evidence)
        code, line = _verdict(run_dir)
        return Outcome(combo.key, run_dir, action, code, line, time.monotonic() - t0), None
    note = ""
    if state.action is Action.RERUN:
        moved = set_aside(run_dir, out)
        note = f" ({state.reason}; the previous run is kept in {moved})"
    with handle_signals(grace_s=plan.timeouts["shutdown_grace_s"]) as sigs:
        skip: set[str] | None = None
        if state.action is Action.RESUME:
            run_dir, skip = prepare_resume(plan, run_dir, shard)
            shard = campaign_shard(read_events(run_dir / EVENTS))
        else:
            run_dir = api.prepare_run_dir(plan, run_dir, plan_text=combo.text())
        listener, finish = listen()
        run_dir, evidence = api.run_plan(plan, run_dir=run_dir, listeners=[listener], shard=shard, skip_runs=skip)
        finish(evidence)
        api.finalize(run_dir, evidence)
    code, line = int(evidence["verdict"]["exit_code"]), str(evidence["verdict"]["line"])
    return Outcome(combo.key, run_dir, action, code, line + note, time.monotonic() - t0), sigs.exit_code


def run_catalogue(
    combos: list[Combination],
    out: Path,
    *,
    shard: tuple[int, int] | None,
    backends: list[str] | None,
    detect: bool,
    listen: Listen,
    echo: Callable[[str], None],
    without_gpu: bool = False,
) -> tuple[list[Outcome], int | None]:
    """Run the selected combinations in order; (outcomes, exit code of a stopping signal).
    `backends`: run only those backends' combinations; `detect`: only those whose backend
    is found on this machine (else every selected one). A combination whose plan requires
    GPU memory NVML cannot read here refuses the whole run before anything starts, unless
    `without_gpu`."""
    out = out.resolve()  # --out as given may be relative; servers run in their own directory
    here = backends_here() if detect and not backends else {}
    wanted = set(backends) if backends else set(here) if detect else {c.backend for c in combos}
    chosen = [c for c in combos if c.backend in wanted]
    plans = check_combinations(chosen)
    if not without_gpu:
        check_gpu_readable(plans)
    for c in chosen:
        check_run_dir(out / run_dir_name(c.key, shard))
    outcomes: list[Outcome] = []
    total = len(combos)
    out.mkdir(parents=True, exist_ok=True)
    for i, combo in enumerate(combos, 1):
        where = f"[{i}/{total}] {combo.key}" + (f" (shard {shard[0]}/{shard[1]})" if shard else "")
        if combo.backend not in wanted:
            why = (
                f"not selected (--backend {', '.join(sorted(wanted))})"
                if backends
                else f"backend {combo.backend} not found on this machine (found: {', '.join(sorted(here))}; "
                f"--backend {combo.backend} runs it anyway)"
            )
            outcomes.append(Outcome(combo.key, None, "skipped", None, why, 0.0))
            echo(f"{where}: skipped: {why}")
            continue

        def started(action: str, reason: str, run_dir: Path, where: str = where) -> None:
            echo(f"{where}: starting: {action} ({reason}) · {os.path.relpath(run_dir)}")

        outcome, signalled = run_one(combo, plans[combo.key], out, shard, listen, started)
        outcomes.append(outcome)
        shown = os.path.relpath(outcome.run_dir) if outcome.run_dir else "-"
        echo(
            f"{where}: {outcome.action} in {outcome.seconds:.1f} s → {outcome.line} "
            f"(exit {outcome.exit_code}) · {shown}"
        )
        if signalled is not None:
            return outcomes, signalled
    return outcomes, None
