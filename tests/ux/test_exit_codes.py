"""Exit codes scripts can trust: 0 admitted, 1 FAILED, 2 usage/plan error, 3 incomplete, 4 bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.gates.admission_verdict import PENDING_TEXT, verdict_line
from parval.status import Result, Status

from .kit import Outcome, invoke, parval, write_plan


def _r(id_: str, status: Status, count: int | None = None) -> Result:
    return Result(id_, status, "reason", count=count)


@pytest.mark.parametrize(
    ("ready", "statuses", "interrupted", "code", "start"),
    [
        (True, [Status.PASS], False, 0, "ADMITTED at counts 1, 2"),
        (False, [Status.PASS, Status.FAIL], False, 1, "NOT ADMITTED"),
        (False, [Status.FAIL], True, 1, "NOT ADMITTED"),  # a failure stays a failure when interrupted
        (False, [Status.PENDING], False, 3, PENDING_TEXT),
        (False, [Status.BLOCKED], False, 3, PENDING_TEXT),
        (False, [Status.PASS], True, 3, PENDING_TEXT),
    ],
)
def test_verdict_to_exit_code(ready: bool, statuses: list[Status], interrupted: bool, code: int, start: str) -> None:
    line, got = verdict_line(ready, [1, 2], [_r("M2.exact", s, 2) for s in statuses], interrupted)
    assert got == code
    assert line.startswith(start)


def test_exit_0_admitted(admitted_run: Outcome) -> None:
    assert admitted_run.rc == 0
    ev = admitted_run.evidence
    assert ev["admission_ready"] and ev["verdict"]["admitted_counts"] == [1, 2]
    assert parval("report", admitted_run.dir).returncode == 0  # the installed command, too


def test_exit_1_failed(failed_run: Outcome) -> None:
    assert failed_run.rc == 1, failed_run.stderr[-2000:]
    per = {a["id"]: a["status"] for a in failed_run.evidence["model_checks"]["per_count"]["3"]["assertions"]}
    assert per["M2.exact"] == "FAIL"
    assert failed_run.stdout.startswith("NOT ADMITTED")
    assert invoke("report", failed_run.dir, "--format", "junit").returncode == 1


def test_exit_3_incomplete(shard_runs: tuple[Outcome, Outcome]) -> None:
    for run in shard_runs:
        assert run.rc == 3, run.stderr[-2000:]
        assert run.evidence["verdict"]["line"].startswith(PENDING_TEXT)
        assert invoke("report", run.dir, "--format", "json").returncode == 3


def test_exit_2_bad_plan(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, counts=[1, 17])
    for cmd in ("validate", "run"):
        p = parval(cmd, plan)
        assert p.returncode == 2, p.stderr
        assert "counts[1]: 17 is greater than the maximum of 16" in p.stderr
        assert "Traceback" not in p.stderr
    missing = parval("run", tmp_path / "nope.yaml")
    assert missing.returncode == 2 and "plan file not found" in missing.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--format", "pdf", "."],
        ["report", "/nonexistent/run"],
        ["schema", "nothing"],
        ["run", str(Path(__file__).parents[2] / "plans" / "demo.yaml"), "--shard", "3/2"],
        ["run", "--no-such-option"],
        ["frobnicate"],
    ],
)
def test_exit_2_usage(args: list[str]) -> None:
    p = invoke(*args)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr


def test_exit_4_internal_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from parval import cli
    from parval.report import write

    def boom(*args: object, **kwargs: object) -> tuple[str, int]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(write, "render_report", boom)
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", "."])
    assert exc.value.code == 4
    assert "internal error: RuntimeError: a bug" in capsys.readouterr().err


def test_exit_codes_are_documented() -> None:
    p = invoke("--help")
    text = " ".join(p.stdout.split())
    for phrase in (
        "0 admitted",
        "1 a required assertion FAILED",
        "2 usage or plan error",
        "3 evidence incomplete",
        "4 internal error",
    ):
        assert phrase in text, phrase
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |"):
        assert code in readme
