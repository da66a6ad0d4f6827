"""CTest runner and F6 assessment, driven by fake `ctest` executables in tmp_path."""

from __future__ import annotations

import json
import stat
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
import pytest

from parval.framework.ctest import CTestCase, CTestRun, parse_ctest_stdout
from parval.framework.ctest_run import run_ctest
from parval.framework.judges_f6 import assess_f6
from parval.status import Status

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "ctest.schema.json").read_text())

# Captured from CTest 3.25 (--output-on-failure) on a project with these tests.
REAL_STDOUT = """\
Test project /tmp/ctx/b
    Start 1: good_test
1/6 Test #1: good_test ........................   Passed    0.00 sec
    Start 2: bad_test
2/6 Test #2: bad_test .........................***Failed    0.00 sec
some failure output: 1 == 2 Passed 3 sec
    Start 3: skip_test
3/6 Test #3: skip_test ........................***Skipped   0.00 sec
    Start 4: notrun_test
4/6 Test #4: notrun_test ......................***Not Run   0.00 sec
    Start 5: disabled_test
5/6 Test #5: disabled_test ....................***Not Run (Disabled)   0.00 sec
    Start 6: a_very_long_test_name_that_exceeds_the_column_width_for_sure_xx
6/6 Test #6: a_very_long_test_name_that_exceeds_the_column_width_for_sure_xx ...   Passed    1.25 sec
  7/9 Test #7: slow_test .........................................................***Timeout   1.00 sec
  8/9 Test #8: segv_test .........................................................***Exception: SegFault  0.00 sec

50% tests passed, 2 tests failed out of 4
"""  # noqa: E501 - lines copied verbatim from CTest output

REAL_JUNIT = """\
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="6" failures="1" disabled="1" skipped="2" hostname=""
\ttime="0" timestamp="2026-11-30T00:56:52">
\t<testcase name="good_test" classname="good_test" time="0.00174409" status="run">
\t\t<system-out></system-out>
\t</testcase>
\t<testcase name="bad_test" classname="bad_test" time="0.00146522" status="fail">
\t\t<failure message=""/>
\t\t<system-out></system-out>
\t</testcase>
\t<testcase name="skip_test" classname="skip_test" time="0.00136241" status="notrun">
\t\t<skipped message="SKIP_RETURN_CODE=77"/>
\t</testcase>
\t<testcase name="notrun_test" classname="notrun_test" time="0" status="notrun">
\t\t<skipped message="Unable to find executable"/>
\t</testcase>
\t<testcase name="disabled_test" classname="disabled_test" time="0" status="disabled">
\t\t<system-out>Disabled</system-out>
\t</testcase>
\t<testcase name="segv_test" classname="segv_test" time="0.002" status="fail">
\t\t<failure message=""/>
\t</testcase>
</testsuite>
"""


def junit_for(cases: dict[str, str]) -> str:
    body = []
    for name, status in cases.items():
        inner = "<failure message=''/>" if status == "fail" else ""
        body.append(f"<testcase name='{name}' time='0.5' status='{status}'>{inner}</testcase>")
    return f"<testsuite tests='{len(cases)}'>{''.join(body)}</testsuite>"


def stdout_for(cases: dict[str, str]) -> str:
    lines = ["Test project /build"]
    for i, (name, status) in enumerate(cases.items(), 1):
        result = "  Passed" if status == "run" else "***Failed"
        lines.append(f"{i}/{len(cases)} Test #{i}: {name} ......{result}    0.50 sec")
    return "\n".join(lines) + "\n"


def make_ctest(
    tmp_path: Path,
    *,
    stdout: str = "",
    junit: str | None = None,
    rc: int = 0,
    sleep_s: float = 0.0,
    spawn_child: bool = False,
    name: str = "fake-ctest",
) -> Path:
    """A fake ctest: records its argv/env, writes `junit` to --output-junit, prints stdout."""
    spec = tmp_path / f"{name}.json"
    spec.write_text(json.dumps({"stdout": stdout, "junit": junit, "rc": rc, "sleep": sleep_s}))
    script = tmp_path / name
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""\
            import json, os, subprocess, sys, time
            spec = json.load(open({str(spec)!r}))
            argv = sys.argv[1:]
            with open({str(tmp_path / (name + ".argv"))!r}, "w") as fh:
                json.dump({{"argv": argv, "seed": os.environ.get("STRESS_SEED")}}, fh)
            if {spawn_child!r}:
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            time.sleep(spec["sleep"])
            if spec["junit"] is not None and "--output-junit" in argv:
                with open(argv[argv.index("--output-junit") + 1], "w") as fh:
                    fh.write(spec["junit"])
            sys.stdout.write(spec["stdout"])
            sys.exit(spec["rc"])
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def recorded_argv(fake: Path) -> list[str]:
    data: list[str] = json.loads(Path(str(fake) + ".argv").read_text())["argv"]
    return data


@pytest.fixture
def build(tmp_path: Path) -> Path:
    d = tmp_path / "build"
    d.mkdir()
    (d / "CTestTestfile.cmake").write_text("# fake\n")
    return d


def test_junit_parsed_with_statuses_and_command(tmp_path: Path, build: Path) -> None:
    fake = make_ctest(tmp_path, stdout=REAL_STDOUT, junit=REAL_JUNIT, rc=8)
    run = run_ctest(build, tests_regex="good|bad", ctest=str(fake), extra_args=["-j", "4"])
    assert run.parsed_from == "junit"
    got = {c.name: c.status for c in run.tests}
    assert got == {
        "good_test": "passed",
        "bad_test": "failed",
        "skip_test": "skipped",
        "notrun_test": "notrun",
        "disabled_test": "skipped",
        "segv_test": "failed",
    }
    assert run.status == "failed" and run.exit_code == 8
    assert "bad_test" in run.reason and "notrun_test" in run.reason
    # The stdout line fills in what the JUnit failure message leaves empty.
    assert run.case("segv_test") == CTestCase("segv_test", "failed", 0.002, "Exception: SegFault")
    argv = recorded_argv(fake)
    assert argv[:3] == ["--test-dir", str(build.resolve()), "--output-on-failure"]
    assert argv[3] == "--output-junit" and argv[5:] == ["-R", "good|bad", "-j", "4"]
    assert not Path(argv[4]).parent.exists()  # temporary JUnit directory cleaned up
    assert "--output-junit" not in run.reproduction and "-R 'good|bad'" in run.reproduction
    assert "1/6 Test #1" in run.stdout_tail
    jsonschema.validate(run.to_json(), SCHEMA)


def test_stdout_fallback_without_junit(tmp_path: Path, build: Path) -> None:
    fake = make_ctest(tmp_path, stdout=REAL_STDOUT, rc=8)
    run = run_ctest(build, tests_regex=None, ctest=str(fake))
    assert run.parsed_from == "stdout"
    assert "-R" not in recorded_argv(fake)
    got = {c.name: (c.status, c.time_s) for c in run.tests}
    assert got == {
        "good_test": ("passed", 0.0),
        "bad_test": ("failed", 0.0),
        "skip_test": ("skipped", 0.0),
        "notrun_test": ("notrun", 0.0),
        "disabled_test": ("skipped", 0.0),
        "a_very_long_test_name_that_exceeds_the_column_width_for_sure_xx": ("passed", 1.25),
        "slow_test": ("failed", 1.0),
        "segv_test": ("failed", 0.0),
    }
    assert run.case("slow_test") is not None and run.case("slow_test").message == "Timeout"  # type: ignore[union-attr]
    assert run.status == "failed"


def test_parse_ignores_test_output_lines() -> None:
    assert parse_ctest_stdout("some failure output: 1 == 2 Passed 3 sec\nTest project x\n") == []


def test_passing_run(tmp_path: Path, build: Path) -> None:
    cases = {"parallel_http_live_body_test": "run", "parallel_http_ownership_test": "run"}
    fake = make_ctest(tmp_path, stdout=stdout_for(cases), junit=junit_for(cases))
    run = run_ctest(build, tests_regex="parallel_http", ctest=str(fake), env={"STRESS_SEED": "7"})
    assert run.status == "passed", run.reason
    assert run.reason == "2 of 2 test(s) passed"
    assert run.env == {"STRESS_SEED": "7"}
    assert json.loads(Path(str(fake) + ".argv").read_text())["seed"] == "7"
    assert run.reproduction.startswith("STRESS_SEED=7 ")


def test_missing_build_dir_and_ctest_are_not_run(tmp_path: Path, build: Path) -> None:
    run = run_ctest(tmp_path / "nope", tests_regex=None, label="asan")
    assert run.status == "not_run" and "build directory not found" in run.reason
    assert run.label == "asan"
    run = run_ctest(build, tests_regex=None, ctest=str(tmp_path / "no-such-ctest"))
    assert run.status == "not_run" and "ctest executable not found" in run.reason
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    run = run_ctest(build, tests_regex=None, ctest=str(plain))
    assert run.status == "not_run"
    jsonschema.validate(run.to_json(), SCHEMA)


def test_no_tests_found_is_not_run(tmp_path: Path) -> None:
    empty = tmp_path / "empty-build"
    empty.mkdir()
    fake = make_ctest(tmp_path, stdout="Test project x\n", junit="<testsuite tests='0'/>")
    run = run_ctest(empty, tests_regex="zzz", ctest=str(fake))
    assert run.status == "not_run"
    assert "no tests matching -R 'zzz'" in run.reason and "CTestTestfile.cmake" in run.reason


def test_nonzero_exit_without_results_is_error(tmp_path: Path, build: Path) -> None:
    fake = make_ctest(tmp_path, stdout="", rc=1)
    run = run_ctest(build, tests_regex=None, ctest=str(fake))
    assert run.status == "error" and "exited 1" in run.reason
    cases = {"a_test": "run"}
    fake = make_ctest(tmp_path, junit=junit_for(cases), rc=8, name="fake2")
    run = run_ctest(build, tests_regex=None, ctest=str(fake))
    assert run.status == "error" and "although no test failed" in run.reason


def test_timeout_kills_process_group(tmp_path: Path, build: Path) -> None:
    fake = make_ctest(tmp_path, stdout="never printed", sleep_s=30, spawn_child=True)
    t0 = time.monotonic()
    run = run_ctest(build, tests_regex=None, ctest=str(fake), timeout_s=0.5, label="stress")
    # A surviving grandchild holding the pipe open would make this wait 60 s.
    assert time.monotonic() - t0 < 10
    assert run.status == "error" and "did not finish within 0.5 s" in run.reason
    assert run.error_kind == "parval_timeout"


def test_stdout_tail_bounded(tmp_path: Path, build: Path) -> None:
    cases = {"t": "run"}
    fake = make_ctest(tmp_path, stdout="x" * 50_000 + "\n" + stdout_for(cases))
    run = run_ctest(build, tests_regex=None, ctest=str(fake))
    assert len(run.stdout_tail) <= 8_000 and run.status == "passed"


def test_json_round_trip(tmp_path: Path, build: Path) -> None:
    fake = make_ctest(tmp_path, stdout=REAL_STDOUT, junit=REAL_JUNIT, rc=8)
    run = run_ctest(build, tests_regex=None, ctest=str(fake), meta={"seed": 3})
    data = json.loads(json.dumps(run.to_json()))
    jsonschema.validate(data, SCHEMA)
    assert CTestRun.from_json(data).to_json() == data


# --------------------------------------------------------------------------------------
# F6


def fake_run(label: str, cases: dict[str, str], **kw: object) -> CTestRun:
    tests = [CTestCase(n, s, 0.1) for n, s in cases.items()]  # type: ignore[arg-type]
    failed = [t for t in tests if t.status in ("failed", "notrun")]
    run = CTestRun(
        label=label,
        build_dir="/b",
        status="failed" if failed else "passed",
        reason=("failed: " + ", ".join(t.name for t in failed))
        if failed
        else f"{len(tests)} of {len(tests)} test(s) passed",
        command=["ctest", "--test-dir", "/b"],
        exit_code=8 if failed else 0,
        tests=tests,
        parsed_from="junit",
    )
    for k, v in kw.items():
        setattr(run, k, v)
    return run


REQ = {"parallel_http_live_body_test": "passed", "parallel_http_ownership_test": "passed"}


def by_id(runs: list[CTestRun], **kw: object) -> dict[str, tuple[Status, str]]:
    results = assess_f6(runs, **kw)  # type: ignore[arg-type]
    json.dumps([r.to_json() for r in results])  # evidence stays serialisable
    return {r.id: (r.status, r.reason) for r in results}


def san_run(label: str, cases: dict[str, str], flags: list[str] | None = None, **kw: object) -> CTestRun:
    """A sanitizer job from a build directory shown to be built with its -fsanitize flag."""
    flag = {"asan": ["address"], "tsan": ["thread"]}[label] if flags is None else flags
    return fake_run(label, cases, meta={"sanitizer": label, "sanitize_flags": flag}, **kw)


def test_f6_all_pass() -> None:
    runs = [
        fake_run("default", {**REQ, "session_pool_test": "passed"}),
        san_run("asan", {"session_pool_test": "passed"}),
        san_run("tsan", {"session_pool_test": "passed"}),
        fake_run("stress", {"stress_test": "passed"}, meta={"seed": 1234}),
    ]
    got = by_id(runs)
    assert {k: v[0] for k, v in got.items()} == {
        "F6.ctest": Status.PASS,
        "F6.sanitizers": Status.PASS,
        "F6.stress": Status.PASS,
    }
    assert "parallel_http_ownership_test" in got["F6.ctest"][1]
    assert "seed 1234" in got["F6.stress"][1]


def test_f6_nothing_recorded_is_pending() -> None:
    got = by_id([])
    assert got["F6.ctest"] == (Status.PENDING, "no default CTest run recorded")
    assert got["F6.sanitizers"][0] is Status.PENDING
    assert "asan: not run (no run recorded)" in got["F6.sanitizers"][1]
    assert got["F6.stress"] == (Status.PENDING, "no seeded stress run recorded")


def test_f6_ctest_failure_names_tests() -> None:
    got = by_id([fake_run("default", {**REQ, "server_config_test": "failed"})])
    assert got["F6.ctest"] == (
        Status.FAIL,
        "failed: server_config_test; server_config_test not declared unrelated before the run "
        "(in the probes file's unrelated_tests)",
    )


def test_f6_ctest_required_missing_or_skipped_is_pending() -> None:
    run = fake_run("default", {"parallel_http_live_body_test": "skipped", "session_pool_test": "passed"})
    status, reason = by_id([run])["F6.ctest"]
    assert status is Status.PENDING
    assert "parallel_http_live_body_test (skipped)" in reason
    assert "parallel_http_ownership_test (absent)" in reason
    # The probes file's own list adds to the default-transport tests, never replaces them.
    status, reason = by_id([run], required=["session_pool_test"])["F6.ctest"]
    assert status is Status.PENDING and "parallel_http_ownership_test (absent)" in reason


def test_f6_an_empty_required_list_still_requires_the_default_transport_tests() -> None:
    run = fake_run("default", {"session_pool_test": "passed"})
    status, reason = by_id([run], required=[])["F6.ctest"]
    assert status is Status.PENDING
    assert "parallel_http_live_body_test (absent)" in reason and "parallel_http_ownership_test (absent)" in reason
    # Leaving them out needs a written reason, which the result carries as a limitation.
    res = {r.id: r for r in assess_f6([run], transport_unchanged="legacy listener kept (no http.cpp change)")}
    assert res["F6.ctest"].status is Status.PASS
    assert any("legacy listener kept" in lim for lim in res["F6.ctest"].limitations)


def test_f6_ctest_not_run_is_pending_with_reason(tmp_path: Path) -> None:
    run = run_ctest(tmp_path / "missing", tests_regex=None)
    status, reason = by_id([run])["F6.ctest"]
    assert status is Status.PENDING and "build directory not found" in reason


def test_f6_parvals_own_ctest_timeout_is_blocked_and_an_old_ctest_pending() -> None:
    killed = fake_run(
        "default",
        REQ,
        status="error",
        reason="ctest did not finish within 1800 s (killed)",
        error_kind="parval_timeout",
    )
    status, reason = by_id([killed])["F6.ctest"]
    assert status is Status.BLOCKED and "parval stopped the CTest run" in reason
    old = fake_run(
        "default",
        {},
        status="error",
        reason="ctest rejected the arguments (needs CTest >= 3.21 for --output-junit)",
        error_kind="ctest_too_old",
    )
    status, reason = by_id([old])["F6.ctest"]
    assert status is Status.PENDING and "CTest >= 3.21" in reason
    # A run recorded before runs named their error kind is read from its reason.
    legacy = CTestRun.from_json({**killed.to_json(), "error_kind": None})
    assert legacy.error_kind == "parval_timeout"
    # A relevant test that failed before the kill is still a failure.
    failed = fake_run("default", {**REQ, "session_pool_test": "failed"}, status="error", error_kind="parval_timeout")
    assert by_id([failed])["F6.ctest"][0] is Status.FAIL


def test_f6_sanitizers_recorded_separately() -> None:
    asan = san_run("asan", {"t": "passed"})
    tsan = CTestRun.not_run("tsan", "TSan is not supported by MSVC")
    results = {r.id: r for r in assess_f6([fake_run("default", REQ), asan, tsan])}
    san = results["F6.sanitizers"]
    assert san.status is Status.PENDING
    assert san.evidence["jobs"]["asan"]["assessed"] == "PASS"
    assert san.evidence["jobs"]["tsan"]["assessed"] == "PENDING"
    assert "tsan not run: TSan is not supported by MSVC" in san.limitations
    failing = san_run("tsan", {"t": "failed"})
    assert by_id([asan, failing])["F6.sanitizers"][0] is Status.FAIL
    # No job requested is not a platform reason: PENDING until one is named.
    assert by_id([], sanitizers=[])["F6.sanitizers"][0] is Status.PENDING
    reason = "MSVC build: no TSan, ASan not configured"
    status, text = by_id([], sanitizers=[], sanitizers_unavailable={"asan": reason, "tsan": reason})["F6.sanitizers"]
    assert status is Status.NOT_APPLICABLE and "MSVC build" in text


def test_f6_asan_alone_still_requires_tsan_or_a_reason() -> None:
    asan = san_run("asan", {"t": "passed"})
    res = {r.id: r for r in assess_f6([asan], sanitizers=["asan"])}["F6.sanitizers"]
    assert res.status is Status.PENDING
    assert "tsan: not run (not requested and no platform reason given)" in res.reason
    assert "tsan not run: not requested and no platform reason given" in res.limitations
    res = {r.id: r for r in assess_f6([asan], sanitizers=["asan"], sanitizers_unavailable={"tsan": "no TSan on arm64"})}
    san = res["F6.sanitizers"]
    assert san.status is Status.PASS and "tsan not run: no TSan on arm64" in san.limitations


def test_f6_a_sanitizer_job_counts_only_from_a_build_with_its_flag() -> None:
    wrong = san_run("tsan", {"t": "passed"}, flags=["address"])
    res = {r.id: r for r in assess_f6([san_run("asan", {"t": "passed"}), wrong])}["F6.sanitizers"]
    assert res.status is Status.PENDING and "not built with -fsanitize=thread (found: address)" in res.reason
    unknown = fake_run("tsan", {"t": "passed"})  # no flags recorded
    res = {r.id: r for r in assess_f6([san_run("asan", {"t": "passed"}), unknown])}["F6.sanitizers"]
    assert res.status is Status.PENDING and "-fsanitize flags of /b were not recorded" in res.reason


def test_f6_sanitize_flags_are_read_from_the_build_directory(tmp_path: Path) -> None:
    from parval.framework.probes_f6 import sanitize_flags

    assert sanitize_flags(tmp_path) == (None, [])
    (tmp_path / "CMakeCache.txt").write_text("CMAKE_CXX_FLAGS:STRING=-O1 -g\n")
    assert sanitize_flags(tmp_path) == ([], ["CMakeCache.txt"])
    (tmp_path / "compile_commands.json").write_text('[{"command": "c++ -fsanitize=thread,undefined -c a.cpp"}]')
    assert sanitize_flags(tmp_path) == (["thread", "undefined"], ["CMakeCache.txt", "compile_commands.json"])


def test_f6_all_skipped_runs_prove_nothing() -> None:
    skipped = {"session_pool_test": "skipped", "parallel_lifecycle_test": "skipped"}
    got = by_id(
        [
            fake_run("default", {**REQ, **skipped}),
            san_run("asan", skipped),
            san_run("tsan", skipped),
            fake_run("stress", {"stress_test": "skipped"}, meta={"seed": 1}),
        ]
    )
    assert got["F6.ctest"][0] is Status.PASS  # REQ passed: something ran
    assert got["F6.sanitizers"][0] is Status.PENDING and "asan: not run (no test passed" in got["F6.sanitizers"][1]
    assert got["F6.stress"][0] is Status.PENDING and "no test passed" in got["F6.stress"][1]
    only_skipped = by_id([fake_run("default", skipped)], transport_unchanged="x")["F6.ctest"]
    assert only_skipped[0] is Status.PENDING and "no test passed (2 of 2 skipped)" in only_skipped[1]


RESAMPLE = {"audio_resample_test": "resampler only; no session, slot or server code"}


def test_f6_unrelated_common_failure_declared_before_the_run_is_disclosed_not_failed() -> None:
    run = fake_run("default", {**REQ, "audio_resample_test": "failed"})
    res = {r.id: r for r in assess_f6([run], unrelated=RESAMPLE)}["F6.ctest"]
    assert res.status is Status.PASS
    assert "every failure was declared unrelated before the run: audio_resample_test" in res.reason
    assert any(
        "unrelated common-suite failure" in lim
        and "audio_resample_test" in lim
        and RESAMPLE["audio_resample_test"] in lim
        for lim in res.limitations
    )
    both = fake_run("default", {**REQ, "audio_resample_test": "failed", "session_pool_test": "failed"})
    res = {r.id: r for r in assess_f6([both], unrelated=RESAMPLE)}["F6.ctest"]
    assert res.status is Status.FAIL and res.reason.startswith("failed: session_pool_test;")
    # Not declared: a failure like any other.
    res = {r.id: r for r in assess_f6([run])}["F6.ctest"]
    assert res.status is Status.FAIL and res.reason.startswith("failed: audio_resample_test;")


def test_f6_stress_failure_and_not_run() -> None:
    assert by_id([fake_run("stress", {"s": "failed"})])["F6.stress"][0] is Status.FAIL
    status, reason = by_id([CTestRun.not_run("stress", "no GPU")])["F6.stress"]
    assert status is Status.PENDING and "no GPU" in reason
    results = {r.id: r for r in assess_f6([fake_run("stress", {"s": "passed"})])}
    assert results["F6.stress"].status is Status.PASS
    assert any("no seed" in lim for lim in results["F6.stress"].limitations)
    killed = fake_run("stress", {}, status="error", reason="killed", error_kind="parval_timeout")
    assert by_id([killed])["F6.stress"][0] is Status.BLOCKED


def test_f6_rerun_supersedes_but_earlier_failure_is_noted() -> None:
    first = fake_run("default", {**REQ, "flaky_test": "failed"}, started_at="t1")
    second = fake_run("default", {**REQ, "flaky_test": "passed"}, started_at="t2")
    res = {r.id: r for r in assess_f6([first, second])}["F6.ctest"]
    assert res.status is Status.PASS
    assert any("earlier 'default' run (t1) was failed" in lim for lim in res.limitations)


def test_f6_evidence_names_what_each_verdict_rests_on() -> None:
    """The record's evidence is what a reviewer reads: the run, the required tests' states,
    the failures in and outside the parallel scope, and each sanitizer job as assessed."""
    run = fake_run("default", {**REQ, "audio_resample_test": "failed"})
    stress = fake_run("stress", {"stress_test": "passed"}, meta={"seed": 7})
    res = {
        r.id: r
        for r in assess_f6(
            [run, san_run("asan", {"t": "passed"}), stress],
            sanitizers=["asan"],
            sanitizers_unavailable={"tsan": "no TSan on arm64"},
            unrelated=RESAMPLE,
        )
    }
    ev = res["F6.ctest"].evidence
    assert ev["run"] == run.to_json() and ev["required"] == REQ
    assert ev["failures"] == {
        "audio_resample_test": {"standing": "declared_unrelated", "why": RESAMPLE["audio_resample_test"]}
    }
    assert ev["unrelated_declared"] == RESAMPLE
    jobs = res["F6.sanitizers"].evidence["jobs"]
    assert jobs["tsan"] == {"status": "not_run", "assessed": "NOT_APPLICABLE", "reason": "no TSan on arm64"}
    assert jobs["asan"]["status"] == "passed" and jobs["asan"]["assessed"] == "PASS"
    assert jobs["asan"]["reason"] == "1 of 1 test(s) passed"
    assert res["F6.stress"].evidence == {"run": stress.to_json(), "seed": 7}
    # A job neither run nor excused, and one requested but not recorded.
    jobs = {r.id: r for r in assess_f6([], sanitizers=["asan"])}["F6.sanitizers"].evidence["jobs"]
    assert jobs["asan"] == {"status": "not_run", "assessed": "PENDING", "reason": "no run recorded"}
    assert jobs["tsan"] == {
        "status": "not_run",
        "assessed": "PENDING",
        "reason": "not requested and no platform reason given",
    }


def test_f6_a_run_ctest_called_failed_fails_even_without_a_named_case() -> None:
    """CTest's own verdict (status failed) is the observation, also when no case was parsed."""
    for label, rid in (("default", "F6.ctest"), ("stress", "F6.stress")):
        run = fake_run(label, REQ if label == "default" else {"s": "passed"}, status="failed", reason="ctest: 1 failed")
        assert by_id([run])[rid] == (Status.FAIL, "ctest: 1 failed")
    # A failed stress run keeps its seed in the evidence, not in a passing reason.
    failed = fake_run("stress", {"s": "failed"}, meta={"seed": 9})
    assert by_id([failed])["F6.stress"] == (Status.FAIL, "failed: s")
    relevant = fake_run("default", {**REQ, "session_pool_test": "failed", "parallel_x_test": "failed"})
    status, reason = by_id([relevant])["F6.ctest"]
    assert status is Status.FAIL and reason.startswith("failed: session_pool_test, parallel_x_test;")
    assert "session_pool_test is evidence for F3.load_failures, F3.ownership (never unrelated)" in reason
    two = san_run("asan", {"a_test": "failed", "b_test": "failed"})
    assert "asan: FAIL (failed: a_test, b_test)" in by_id([two], sanitizers=["asan"])["F6.sanitizers"][1]


def test_f6_earlier_errors_and_an_unknown_time_are_noted() -> None:
    first = fake_run("default", REQ, status="error", reason="no results", started_at=None)
    second = fake_run("default", REQ, started_at="t2")
    res = {r.id: r for r in assess_f6([first, second])}["F6.ctest"]
    assert res.status is Status.PASS
    assert "an earlier 'default' run (time unknown) was error: no results" in res.limitations
    # Without any run, the written reason for not requiring the transport tests still shows.
    res = {r.id: r for r in assess_f6([], transport_unchanged="no http.cpp change")}["F6.ctest"]
    assert res.status is Status.PENDING and any("no http.cpp change" in lim for lim in res.limitations)


def test_f6_a_sanitizer_build_without_any_flag_says_none() -> None:
    res = {r.id: r for r in assess_f6([san_run("asan", {"t": "passed"}, flags=[])], sanitizers=["asan"])}
    assert "/b was not built with -fsanitize=address (found: none): not a asan run" in res["F6.sanitizers"].reason


def test_f6_a_stress_case_that_failed_before_an_error_is_a_failure() -> None:
    run = fake_run("stress", {"s": "failed"}, status="error", reason="killed", error_kind="parval_timeout")
    assert by_id([run])["F6.stress"] == (Status.FAIL, "killed")
    both = san_run("asan", {"t": "passed"}, flags=["undefined", "leak"])
    reason = by_id([both], sanitizers=["asan"])["F6.sanitizers"][1]
    assert "(found: undefined, leak)" in reason, reason
