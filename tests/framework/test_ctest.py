"""F6 through parval/framework/ctest.py: a real (tiny, compiler-free) CMake build directory
with the required common tests, sanitizer jobs and a seeded stress job; F3's CTest half."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from parval.framework.ctest import CTestCase, CTestRun
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f3 import attach_ctest
from parval.status import Status

from .helpers import by_id, run

CMAKE = """cmake_minimum_required(VERSION 3.16)
project(fake_audiocpp NONE)
enable_testing()
add_test(NAME parallel_http_live_body_test COMMAND true)
add_test(NAME parallel_http_ownership_test COMMAND true)
add_test(NAME session_pool_test COMMAND true)
add_test(NAME server_stress_test COMMAND sh -c "test -n \\"$AUDIOCPP_STRESS_SEED\\"")
add_test(NAME server_config_test COMMAND {config})
"""


def _build(tmp: Path, name: str, *, failing: bool = False, flags: str = "") -> Path:
    src = tmp / f"{name}-src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE.format(config="false" if failing else "true"))
    build = tmp / name
    extra = [f"-DCMAKE_CXX_FLAGS={flags}"] if flags else []
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), *extra], check=True, capture_output=True, timeout=120)
    return build


needs_cmake = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("ctest") is None, reason="cmake/ctest not installed"
)


@needs_cmake
def test_f6_runs_ctest_sanitizers_and_seeded_stress(tmp_path: Path) -> None:
    build = _build(tmp_path, "build")
    asan = _build(tmp_path, "asan", flags="-fsanitize=address -g")
    _, record = run(
        tmp_path,
        only="F6",
        framework={
            "ctest_build_dir": str(build),
            "ctest_regex": "parallel|session|config",
            "sanitizer_build_dirs": {"asan": str(asan)},
        },
        probes={"stress": {"regex": "stress", "seed": 42, "repeat": 2}},
    )
    res = by_id(record)
    assert res["F6.ctest"]["status"] == "PASS", res["F6.ctest"]["reason"]
    assert res["F6.stress"]["status"] == "PASS" and "seed 42" in res["F6.stress"]["reason"]
    # TSan has no build directory: the job is listed as not run, with the reason.
    assert res["F6.sanitizers"]["status"] == "PENDING"
    assert any(line.startswith("tsan not run") for line in res["F6.sanitizers"]["limitations"])
    assert "asan: PASS" in res["F6.sanitizers"]["reason"]
    assert {r["label"] for r in record["ctest_runs"]} == {"default", "asan", "tsan", "stress"}
    assert record["probes"] == []  # no HTTP assertion selected: no server was started


@needs_cmake
def test_f6_failing_common_test_fails(tmp_path: Path) -> None:
    build = _build(tmp_path, "build", failing=True)
    _, record = run(tmp_path, only="F6.ctest", framework={"ctest_build_dir": str(build)})
    f6 = by_id(record)["F6.ctest"]
    assert f6["status"] == "FAIL" and "server_config_test" in f6["reason"]
    assert record["verdict"]["exit_code"] == 1


@needs_cmake
def test_a_sanitizer_build_without_its_flag_is_not_a_sanitizer_run(tmp_path: Path) -> None:
    plain = _build(tmp_path, "not-asan")
    _, record = run(
        tmp_path,
        only="F6.sanitizers",
        framework={"sanitizer_build_dirs": {"asan": str(plain)}, "ctest_regex": "parallel|session|config"},
        probes={"sanitizers": ["asan"], "sanitizers_unavailable": {"tsan": "no TSan runtime here"}},
    )
    san = by_id(record)["F6.sanitizers"]
    assert san["status"] == "PENDING" and "not built with -fsanitize=address" in san["reason"], san
    assert "tsan not run: no TSan runtime here" in san["limitations"]


def _ctx(**options: object) -> FrameworkContext:
    ctx = FrameworkContext.__new__(FrameworkContext)
    from parval.framework.judges import Findings
    from parval.framework.settings import ProbeOptions

    ctx.findings = Findings()
    ctx.options = ProbeOptions(**options)  # type: ignore[arg-type]
    return ctx


def _cases(**statuses: str) -> list[CTestCase]:
    return [CTestCase(name, status) for name, status in statuses.items()]  # type: ignore[arg-type]


def test_f3_takes_its_ctest_half_from_the_default_run() -> None:
    ctx = _ctx()
    ok = CTestRun(
        "default",
        "b",
        "passed",
        tests=_cases(session_pool_test="passed", server_parallel_lifecycle_test="passed", unrelated="passed"),
    )
    attach_ctest(ctx, [ok])
    assert {c.status for c in ctx.findings.of("F3.load_failures")} == {Status.PASS}
    ctx = _ctx()
    bad = CTestRun("default", "b", "failed", tests=_cases(session_pool_test="failed"))
    attach_ctest(ctx, [bad])
    assert [c.status for c in ctx.findings.of("F3.ownership")] == [Status.FAIL]
    ctx = _ctx()
    attach_ctest(ctx, [CTestRun.not_run("default", "no build dir")])
    # Without CTest the injection half is PENDING naming the tests, so HTTP alone never passes it.
    [missing] = ctx.findings.of("F3.load_failures")
    assert missing.status is Status.PENDING and "session_pool_test" in missing.detail
    assert "no build dir" in missing.detail


def test_a_test_that_only_resembles_a_topic_passes_nothing() -> None:
    """A broad name pattern once let parallel_http_ownership_test pass cache/RNG privacy and
    session_pool_smoke pass primary/partial-clone injection: only the named tests count."""
    ctx = _ctx()
    run_ = CTestRun(
        "default",
        "b",
        "passed",
        tests=_cases(parallel_http_ownership_test="passed", session_pool_smoke="passed", slot_validation_x="passed"),
    )
    attach_ctest(ctx, [run_])
    statuses = {c.assertion: c for c in ctx.findings.checks}
    assert set(statuses) == {
        "F3.load_failures",
        "F3.ownership",
        "F2.callback_lease",
        "F5.no_convoy",
        "F5.retiring_residency",
    }
    assert all(c.status is Status.PENDING for c in statuses.values()), {a: c.detail for a, c in statuses.items()}
    assert "shared_weight_cache_test (absent)" in statuses["F3.ownership"].detail
    assert "session_pool_test (absent)" in statuses["F3.load_failures"].detail


def test_the_probes_file_may_name_other_tests_for_a_sub_check() -> None:
    ctx = _ctx(ctest_coverage={"F3.ownership": ("my_ownership_test",)})
    attach_ctest(ctx, [CTestRun("default", "b", "passed", tests=_cases(my_ownership_test="passed"))])
    [own] = ctx.findings.of("F3.ownership")
    assert own.status is Status.PASS and own.evidence["tests_from"] == "probes file ctest_coverage"


def test_the_coverage_table_names_exact_tests_with_reasons() -> None:
    from parval.framework.judges_f3 import CTEST_EVIDENCE

    for aid, need in CTEST_EVIDENCE.items():
        assert need.tests and all(t.endswith("_test") and "*" not in t for t in need.tests), aid
        assert need.why and need.what, aid
