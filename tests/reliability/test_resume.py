"""SIGKILL parval mid-campaign, then `--resume`: the same verdicts, nothing completed re-run."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from parval.errors import ResumeRefused
from parval.plan.load import load_plan
from parval.rundir.resume import prepare_resume
from tests.conftest import write_plan

from .conftest import events, load_evidence, parval, start_parval, statuses, wait_for_event, wait_no_servers


def _kill_mid_campaign(plan: Path, run_dir: Path, unit: str) -> None:
    """Start a campaign and SIGKILL parval while `unit` has a server answering requests."""
    proc = start_parval("run", plan, "--out", run_dir, "-q")
    try:
        wait_for_event(run_dir, lambda e: e.get("kind") == "request" and e.get("run") == unit, timeout=90, proc=proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow  # a killed campaign and its resume: two campaigns (about 30 s)
def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path, tmp_run: Path, complete_run: Path) -> None:
    plan = write_plan(tmp_path / "plan")
    _kill_mid_campaign(plan, tmp_run, "count1-s2")
    # Nothing parval started survives it, although parval itself ran no cleanup at all.
    assert wait_no_servers(tmp_run, timeout=5.0) == []
    before = events(tmp_run)
    done_before = {e["unit"] for e in before if e["kind"] == "unit_end"}
    assert "count1-s1" in done_before and "count1-s2" not in done_before
    assert not (tmp_run / "evidence.json").exists()
    # A crash mid-write leaves a torn last line: it must be discarded, never read.
    with (tmp_run / "events.jsonl").open("ab") as fh:
        fh.write(b'{"kind":"request","run":"count1-s2","reply":{"outcome":"ok"')
    # The partial run can be judged and reported meanwhile (this judging must not stop
    # the resume: the torn tail it saw is not part of what it judged).
    partial = parval("report", tmp_run, "--format", "json")
    assert partial.returncode in (1, 3) and json.loads(partial.stdout)["run"]["interrupted"] is True

    proc = parval("run", plan, "--resume", tmp_run, "-q", timeout=180)
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    evs = events(tmp_run)
    assert [e for e in evs if e["kind"] == "torn_tail_discarded"]
    # Completed units are skipped, not re-run: one run_start per completed start.
    skipped = {e["unit"] for e in evs if e["kind"] == "unit_skipped"}
    assert skipped == done_before
    starts = Counter(e["run"] for e in evs if e["kind"] == "run_start")
    for run in done_before:
        if run in starts:
            assert starts[run] == 1, run
    assert starts["count1-s2"] == 2  # the interrupted start was redone...
    ends = [e for e in evs if e["kind"] == "run_end" and e["run"] == "count1-s2"]
    assert len(ends) == 1  # ...from a fresh process; only the redo completed
    redo = [e for e in evs if e["kind"] == "run_start" and e["run"] == "count1-s2"][-1]
    assert ends[0]["attempt"] == redo["attempt"]

    resumed, never = load_evidence(tmp_run), load_evidence(complete_run)
    assert resumed["run"]["interrupted"] is False
    got, want = statuses(resumed), statuses(never)
    assert got.keys() == want.keys()
    # The same verdicts, except where a busy machine left a situation unforced in one of the
    # two campaigns (PASS in one, PENDING or BLOCKED in the other); never a FAIL in only one.
    differ = {k: (got[k], want[k]) for k in got if got[k] != want[k]}
    unforced = {"PENDING", "BLOCKED"}
    assert all({a, b} <= {"PASS", *unforced} for a, b in differ.values()), differ
    assert resumed["verdict"]["exit_code"] == proc.returncode
    if not differ:
        assert resumed["verdict"]["exit_code"] == never["verdict"]["exit_code"]
    assert parval("verify", tmp_run).returncode == 0


def test_resume_refuses_a_changed_plan_model_executable_or_fixture(tmp_path: Path) -> None:
    from parval import api

    def fresh(tag: str, **over: object) -> tuple[Path, Path]:
        plan = write_plan(tmp_path / tag, **over)
        run_dir = api.prepare_run_dir(load_plan(plan), tmp_path / f"{tag}-run")
        (run_dir / "events.jsonl").write_text(json.dumps({"seq": 0, "kind": "campaign_start"}) + "\n")
        return plan, run_dir

    # plan text
    plan, run_dir = fresh("plan")
    assert prepare_resume(load_plan(plan), run_dir)[1] == set()
    plan.write_text(plan.read_text().replace("starts_per_count: 3", "starts_per_count: 4"))
    with pytest.raises(ResumeRefused, match="plan"):
        prepare_resume(load_plan(plan), run_dir)
    # model file
    plan, run_dir = fresh("model")
    (plan.parent / "model.bin").write_bytes(b"other weights\n")
    with pytest.raises(ResumeRefused, match="model.sha256"):
        prepare_resume(load_plan(plan), run_dir)
    # executable: a copy of the stand-in that then changes
    exe = tmp_path / "server"
    from tests.conftest import STANDIN

    exe.write_bytes(STANDIN.read_bytes())
    exe.chmod(0o755)
    plan, run_dir = fresh("exe", servers={"candidate": {"executable": str(exe)}})
    exe.write_bytes(STANDIN.read_bytes() + b"# rebuilt\n")
    with pytest.raises(ResumeRefused, match="executables.candidate.sha256"):
        prepare_resume(load_plan(plan), run_dir)
    # a fixture named by a request
    (tmp_path / "fixture").mkdir()
    (tmp_path / "fixture" / "ref.wav").write_bytes(b"RIFF....WAVE")
    plan, run_dir = fresh(
        "fixture", requests={"base": {"text": "hi", "seed": 1, "voice_ref": str(tmp_path / "fixture" / "ref.wav")}}
    )
    (tmp_path / "fixture" / "ref.wav").write_bytes(b"RIFF....WAVE changed")
    with pytest.raises(ResumeRefused, match="fixtures"):
        prepare_resume(load_plan(plan), run_dir)


def test_cli_resume_refusal_says_why_and_exits_2(tmp_path: Path, run_copy: Path) -> None:
    plan = write_plan(tmp_path / "plan")
    proc = parval("run", plan, "--resume", run_copy)
    assert proc.returncode == 2
    assert "already finished" in proc.stderr and "Traceback" not in proc.stderr
    # An unfinished run whose model changed since.
    raw = (run_copy / "events.jsonl").read_bytes()
    cut = raw[: raw.rindex(b'"kind":"campaign_end"')]
    (run_copy / "events.jsonl").write_bytes(cut[: cut.rindex(b"\n") + 1])
    (run_copy / "files.sha256").unlink()
    (run_copy / "chain.jsonl").unlink()
    (plan.parent / "model.bin").write_bytes(b"retrained\n")
    proc = parval("run", plan, "--resume", run_copy)
    assert proc.returncode == 2
    assert "manifest no longer matches" in proc.stderr and "model.sha256" in proc.stderr
    proc = parval("run", plan, "--resume", tmp_path / "missing")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_resume_refuses_a_run_modified_since_it_was_judged(run_copy: Path, tmp_path: Path) -> None:
    from parval.judge import judge_run

    plan = write_plan(tmp_path / "plan")
    # An interrupted run that was judged (as after Ctrl-C): events up to a unit boundary.
    raw = (run_copy / "events.jsonl").read_bytes()
    cut = raw[: raw.index(b'"unit":"count2-s1"')]
    (run_copy / "events.jsonl").write_bytes(cut[: cut.rindex(b"\n") + 1])
    (run_copy / "files.sha256").unlink()
    (run_copy / "chain.jsonl").unlink()
    judge_run(run_copy, first_seal=True)  # what the interrupted campaign's own process does
    assert prepare_resume(load_plan(plan), run_copy)[1] >= {"count1-s1", "count1-s3"}
    artifact = sorted((run_copy / "artifacts").iterdir())[0]
    artifact.write_bytes(artifact.read_bytes() + b" ")
    with pytest.raises(ResumeRefused, match="changed since it was last judged.*artifact"):
        prepare_resume(load_plan(plan), run_copy)


def _unfinished(run_dir: Path) -> None:
    """The run as if parval stopped just before the campaign ended (every unit complete)."""
    raw = (run_dir / "events.jsonl").read_bytes()
    cut = raw[: raw.rindex(b'"kind":"campaign_end"')]
    (run_dir / "events.jsonl").write_bytes(cut[: cut.rindex(b"\n") + 1])
    (run_dir / "files.sha256").unlink()
    (run_dir / "chain.jsonl").unlink()


def test_resume_without_the_plan_uses_the_one_the_run_keeps(
    run_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unfinished(run_copy)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative paths resolve where the plan was, not from here
    proc = parval("run", "--resume", run_copy, "-q", timeout=180)
    assert proc.returncode in (0, 1, 3), proc.stderr
    evidence = load_evidence(run_copy)
    assert evidence["run"]["interrupted"] is False
    assert Counter(e["kind"] for e in events(run_copy))["campaign_end"] == 1


def test_resume_with_a_different_plan_is_refused_naming_what_differs(run_copy: Path, tmp_path: Path) -> None:
    _unfinished(run_copy)
    other = write_plan(tmp_path / "other", starts_per_count=4)
    proc = parval("run", other, "--resume", run_copy)
    assert proc.returncode == 2, proc.stderr
    assert "not the plan" in proc.stderr and "starts_per_count" in proc.stderr
    assert f"parval run --resume {run_copy}" in proc.stderr and "Traceback" not in proc.stderr
    (run_copy / "plan.yaml").unlink()
    proc = parval("run", "--resume", run_copy)
    assert proc.returncode == 2 and "holds no plan.yaml" in proc.stderr and "Traceback" not in proc.stderr
    proc = parval("run")
    assert proc.returncode == 2 and "--resume RUN" in proc.stderr


def _tiny_plan(directory: Path) -> Path:
    from tests import plankit
    from tests.conftest import MODEL_BYTES

    return plankit.write(directory, plankit.merge(plankit.small_plan(), plankit.TINY), model=MODEL_BYTES)


@pytest.mark.slow
def test_resume_of_a_relative_run_directory_starts_its_servers(tmp_path: Path) -> None:
    """`parval run --resume runs/x` as the docs write it, from the folder above: the
    servers run in their own directories, so the run directory must reach them absolute
    (a relative one sent every remaining start's --config to runs/x/servers/.../runs/x/...:
    every start failed and the run was sealed finished)."""
    plan = _tiny_plan(tmp_path / "plan")
    run_dir = tmp_path / "runs" / "x"
    proc = start_parval("run", plan, "--out", "runs/x", "-q", cwd=tmp_path)
    try:
        wait_for_event(run_dir, lambda e: e.get("kind") == "unit_end", timeout=90, proc=proc)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done_before = {e["unit"] for e in events(run_dir) if e["kind"] == "unit_end"}
    assert done_before

    resumed = parval("run", "--resume", "runs/x", "-q", cwd=tmp_path, timeout=180)
    assert resumed.returncode in (0, 1, 3), resumed.stderr
    assert "Traceback" not in resumed.stderr
    evs = events(run_dir)
    assert [e for e in evs if e["kind"] in ("start_failed", "start_aborted", "start_timeout")] == []
    redone = [e for e in evs if e["kind"] == "run_start" and e["run"] not in done_before]
    assert redone, "the resume started no server"
    configs = [Path(e["argv"][e["argv"].index("--config") + 1]) for e in evs if e["kind"] == "server_ready"]
    assert configs and all(c.is_absolute() and c.is_file() for c in configs)
    evidence = load_evidence(run_dir)
    assert evidence["run"]["interrupted"] is False
    assert evidence["failures"] == []
    assert wait_no_servers(run_dir) == []


def test_a_start_parval_cannot_prepare_stops_the_campaign_unfinished(tmp_path: Path) -> None:
    """A start that fails on parval's side (here its server directory cannot be made) is not
    the server's failure: no start_failed, no campaign_end, exit 4, and the run resumes."""
    plan = _tiny_plan(tmp_path / "plan")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "servers").write_text("a file where parval puts the servers' directories\n")
    proc = parval("run", plan, "--out", run_dir, "-q")
    assert proc.returncode == 4, proc.stderr
    assert "cannot prepare the start" in proc.stderr and "--resume" in proc.stderr
    assert "Traceback" not in proc.stderr
    kinds = [e["kind"] for e in events(run_dir)]
    assert "run_start" in kinds
    assert not {"start_failed", "unit_end", "campaign_end"} & set(kinds), kinds
    assert not (run_dir / "evidence.json").exists()
    (run_dir / "servers").unlink()
    assert prepare_resume(load_plan(plan), run_dir)[1] == set()


@pytest.mark.slow
def test_a_resumed_run_reports_progress_of_what_is_left(run_copy: Path) -> None:
    """The progress lines of a resumed run count the requests it still sends: the starts
    kept from before are taken off the planned total (no `264/638 … ~16s left`)."""
    from parval.ui.state import planned_requests

    raw = (run_copy / "events.jsonl").read_bytes()
    lines = raw.splitlines(keepends=True)
    cut = next(i for i, x in enumerate(lines) if b'"kind":"unit_begin"' in x and b'"count1-s2"' in x)
    (run_copy / "events.jsonl").write_bytes(b"".join(lines[:cut]))
    (run_copy / "files.sha256").unlink()
    (run_copy / "chain.jsonl").unlink()
    whole = planned_requests(json.loads((run_copy / "plan.json").read_text()), None)
    proc = parval("run", "--resume", run_copy, timeout=180)  # stderr a pipe: plain lines
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "campaign" in proc.stderr and "(resumed: units finished before are kept)" in proc.stderr
    ends = [x for x in proc.stderr.splitlines() if ": done · requests" in x]
    assert ends, proc.stderr
    assert all("units kept from before the resume" in x for x in ends)
    left = {int(x.split(" of ")[1].split()[0]) for x in ends if " of " in x}
    assert whole and left and max(left) < whole, (whole, ends)
