"""A build that cannot start (issue 32): the first start of an executable that exits by
itself before it is ready is the server's failure, observed. The campaign tries no other
start of that executable, and the report's first line names the cause with the server's
own words; a candidate that cannot start is NOT ADMITTED (exit 1). A plan that needs a GPU
is refused before anything starts on a machine without NVML."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from parval.errors import UsageError
from parval.plan.load import load_plan
from parval.server.preflight import gpu_refusal
from tests import plankit
from tests.conftest import MODEL_BYTES

from .conftest import events, load_evidence, parval, per_count, wait_no_servers

LOADER = (
    "error while loading shared libraries: libcudart.so.12: cannot open shared object file: No such file or directory"
)


def _broken_build(directory: Path) -> Path:
    """An executable that fails the way a build missing its CUDA runtime does."""
    exe = directory / "audiocpp_server"
    exe.write_text(f"#!/bin/sh\necho 'audiocpp_server starting' \necho '{exe}: {LOADER}' >&2\nexit 127\n")
    exe.chmod(0o755)
    return exe


def _plan(tmp_path: Path, role: str) -> Path:
    exe = _broken_build(tmp_path)
    return plankit.write(
        tmp_path / "plan", plankit.small_plan(servers={role: {"executable": str(exe)}}), model=MODEL_BYTES
    )


def test_a_candidate_that_cannot_start_fails_fast_and_says_why(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "candidate")
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    proc = parval("run", plan, "--out", run_dir, "-q", timeout=120)
    took = time.monotonic() - t0
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert took < 60, f"the campaign took {took:.1f} s"
    assert wait_no_servers(run_dir, timeout=1.0) == []
    evs = events(run_dir)

    # one start of the candidate, none after it
    cand = [e for e in evs if e["kind"] == "run_start" and not str(e["run"]).startswith("ref-baseline")]
    assert [e["run"] for e in cand] == ["ref-candidate-legacy"]
    [broken] = [e for e in evs if e["kind"] == "executable_cannot_start"]
    assert broken["role"] == "candidate" and broken["exit_code"] == 127 and broken["run"] == "ref-candidate-legacy"
    assert any(LOADER in line for line in broken["last_lines"]) and broken["stream"] == "stderr"
    skipped = {e["unit"]: e for e in evs if e["kind"] == "unit_skipped"}
    for unit in ("x1-config-slots", "ref-candidate-cap1", "count1-s1", "count2-s3", "recovery", "modes"):
        assert unit in skipped, unit
        assert skipped[unit]["cannot_start"] == "candidate" and skipped[unit].get("not_run") is True
        assert "exited with status 127 before it was ready" in skipped[unit]["reason"]
    assert "negative-control" not in skipped  # it starts nothing
    assert not [e for e in evs if e["kind"] == "x1_config_probe"]  # no exit taken as a rejection
    assert [e for e in evs if e["kind"] == "campaign_end"][-1]["finished"] is True

    ev = load_evidence(run_dir)
    assert ev["verdict"]["exit_code"] == 1 and not ev["admission_ready"]
    for n in (1, 2):
        m2 = per_count(ev, n, "M2.starts")
        assert m2["status"] == "FAIL" and "candidate executable exited with status 127" in m2["reason"]
    [entry] = ev["verdict"]["cannot_start"]
    assert entry["role"] == "candidate" and any(LOADER in x for x in entry["last_lines"])

    report = (run_dir / "report.md").read_text("utf-8").splitlines()
    first = report[0]
    assert first.startswith(
        "**parval: NOT ADMITTED — the candidate executable exited with status 127 before it was ready"
    )
    assert LOADER in first
    screen = "\n".join(report[:12])
    assert "The candidate executable cannot start." in screen and "tried no other start" in screen
    assert f"{LOADER}" in screen.split("\n", 1)[1]  # the server's own lines under the verdict
    assert "audiocpp_server starting" not in screen  # stderr says why; stdout is not dumped there
    assert proc.stdout.splitlines()[0] == ev["verdict"]["line"]

    # merged with a second run of the same build, the cause still leads the merged verdict
    again = tmp_path / "run2"
    assert parval("run", plan, "--out", again, "-q", timeout=120).returncode == 1
    merged = parval("report", run_dir, again, "--format", "md", timeout=60)
    assert merged.returncode == 1, merged.stderr
    head = merged.stdout.splitlines()[0]
    assert "the candidate executable exited with status 127 before it was ready" in head and LOADER in head, head
    assert head.count("exited with status 127") == 1  # one cause, not one per run
    assert "The candidate executable cannot start." in "\n".join(merged.stdout.splitlines()[:12])


@pytest.mark.slow
def test_a_baseline_that_cannot_start_is_blocked_and_says_why(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "baseline")
    # the candidate is sound: cut the plan to one count and one start to keep this short
    doc = plankit.merge(
        plankit.small_plan(servers={"baseline": {"executable": str(tmp_path / "audiocpp_server")}}),
        {"counts": [1], "starts_per_count": 1, "performance": {"enabled": False}},
    )
    plan = plankit.write(tmp_path / "plan", doc, model=MODEL_BYTES)
    run_dir = tmp_path / "run"
    proc = parval("run", plan, "--out", run_dir, "-q", timeout=120)
    assert "Traceback" not in proc.stderr
    evs = events(run_dir)
    base = [e["run"] for e in evs if e["kind"] == "run_start" and str(e["run"]).startswith("ref-baseline")]
    assert base == ["ref-baseline-a"]  # ref-baseline-b is not tried
    skipped = {e["unit"]: e for e in evs if e["kind"] == "unit_skipped"}
    assert skipped["ref-baseline-b"]["cannot_start"] == "baseline"
    assert "count1-s1" not in skipped  # the candidate still runs
    ev = load_evidence(run_dir)
    first = (run_dir / "report.md").read_text("utf-8").splitlines()[0]
    assert "the baseline executable exited with status 127 before it was ready" in first and LOADER in first
    # the baseline's failure is not the candidate's: nothing FAILs for it
    assert proc.returncode == ev["verdict"]["exit_code"] == 3, first
    assert first.startswith("**parval: BLOCKED — ")


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from parval.cli import main

    with pytest.raises(SystemExit) as stop:
        main(args)
    out = capsys.readouterr()
    return int(stop.value.code or 0), out.out, out.err


def test_gpu_required_without_nvml_is_refused_before_the_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # CI has no GPU; the probe is faked so that a machine with one gives the same answer
    monkeypatch.setattr("parval.nvml.probe", lambda index: "unavailable: NVML init failed: Driver Not Loaded")
    plan = plankit.write(tmp_path / "plan", plankit.small_plan(memory={"gpu_required": True}), model=MODEL_BYTES)
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    code, _, err = _cli(["run", str(plan), "--out", str(run_dir), "-q"], capsys)
    assert code == 2, err
    assert time.monotonic() - t0 < 10
    assert "memory.gpu_required" in err and "NVML device 0 unavailable" in err and "Driver Not Loaded" in err
    assert "memory.gpu_required: false" in err and "--without-gpu" in err
    assert not run_dir.exists()  # nothing started, nothing written
    code, out, err = _cli(["validate", str(plan)], capsys)
    assert code == 0 and "count" in out
    assert "refuses this plan (exit 2)" in err and "memory.gpu_required" in err


def test_gpu_refusal_passes_with_nvml_and_for_cpu_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = load_plan(
        plankit.write(tmp_path / "gpu", plankit.small_plan(memory={"gpu_required": True}), model=MODEL_BYTES)
    )
    cpu = load_plan(plankit.write(tmp_path / "cpu", plankit.small_plan(), model=MODEL_BYTES))
    monkeypatch.setattr("parval.nvml.probe", lambda index: "unavailable: NVML init failed: no driver")
    refusal = gpu_refusal(gpu)
    assert isinstance(refusal, UsageError) and "memory.gpu_required" in refusal.message
    assert "no driver" in refusal.message
    assert gpu_refusal(cpu) is None
    monkeypatch.setattr("parval.nvml.probe", lambda index: None)  # NVML available
    assert gpu_refusal(gpu) is None


def test_gpu_refusal_says_default_only_when_the_plan_left_gpu_required_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("parval.nvml.probe", lambda index: "unavailable: no driver")
    explicit = load_plan(
        plankit.write(tmp_path / "explicit", plankit.small_plan(memory={"gpu_required": True}), model=MODEL_BYTES)
    )
    raw = plankit.small_plan()
    del raw["memory"]["gpu_required"]
    left_out = load_plan(plankit.write(tmp_path / "default", raw, model=MODEL_BYTES))
    said = gpu_refusal(explicit)
    assert said is not None and "memory.gpu_required is true, but" in said.message
    assert "(the default)" not in said.message
    said = gpu_refusal(left_out)
    assert said is not None and "memory.gpu_required is true (the default), but" in said.message
