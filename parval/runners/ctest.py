"""CTest / sanitizer runner for the framework assertions F6.ctest, F6.sanitizers, F6.stress.

`run_ctest` runs CTest once (argument list, no shell), reads the JUnit file CTest writes
(CTest >= 3.21) and falls back to CTest's per-test stdout lines when no JUnit file appears
(older CTest, a killed run). It never raises for a missing build directory or executable:
those become a `CTestRun` with status "not_run" and the reason, which F6 reports as PENDING.
`assess_f6` turns recorded runs into the three F6 results.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from parval.status import Result, Status, not_applicable

CaseStatus = Literal["passed", "failed", "skipped", "notrun"]
RunStatus = Literal["passed", "failed", "error", "not_run"]

# Required when the default transport changed (procedure-assertions F6.ctest); a plan that
# keeps the legacy listener passes its own list.
DEFAULT_REQUIRED_TESTS: tuple[str, ...] = (
    "parallel_http_live_body_test",
    "parallel_http_ownership_test",
)
DEFAULT_SANITIZERS: tuple[str, ...] = ("asan", "tsan")
# The CTests relevant to the parallel scope (scheduler, sessions, slots, server/HTTP paths);
# a failure outside it is an unrelated common-suite failure, disclosed separately.
RELEVANT_TESTS = re.compile(r"parallel|slot|session|schedul|lifecycle|ownership|server|http|busy|registry|model_manag")
DEFAULT_LABEL = "default"
STRESS_LABEL = "stress"

STDOUT_TAIL_CHARS = 8_000
STDERR_TAIL_CHARS = 2_000
_MESSAGE_CHARS = 500

# `  3/12 Test  #3: server_config_test .........   Passed    0.01 sec`
# `  2/5 Test #2: bad_test ...................***Failed    0.00 sec`
# `  5/5 Test #5: disabled_test ..............***Not Run (Disabled)   0.00 sec`
_SUMMARY_LINE = re.compile(
    r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(?P<name>.+?)\s+\.*\s*"
    r"(?P<result>\S.*?)\s+(?P<time>\d+(?:\.\d+)?)\s+sec\s*$"
)


@dataclass
class CTestCase:
    name: str
    status: CaseStatus
    time_s: float | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "time_s": self.time_s,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CTestCase:
        return cls(
            name=str(data["name"]),
            status=cast(CaseStatus, data["status"]),
            time_s=data.get("time_s"),
            message=str(data.get("message", "")),
        )


@dataclass
class CTestRun:
    """One CTest invocation and what it showed; `label` says which F6 job it is."""

    label: str
    build_dir: str
    status: RunStatus
    reason: str = ""
    command: list[str] = field(default_factory=list)
    exit_code: int | None = None
    duration_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    tests: list[CTestCase] = field(default_factory=list)
    parsed_from: Literal["junit", "stdout", "none"] = "none"
    tests_regex: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""

    @classmethod
    def not_run(
        cls,
        label: str,
        reason: str,
        *,
        build_dir: Path | str = "",
        tests_regex: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> CTestRun:
        """A job that was not (or could not be) run, e.g. TSan on a platform without it."""
        return cls(
            label=label,
            build_dir=str(build_dir),
            status="not_run",
            reason=reason,
            tests_regex=tests_regex,
            meta=dict(meta or {}),
            started_at=_now(),
        )

    def case(self, name: str) -> CTestCase | None:
        for c in self.tests:
            if c.name == name:
                return c
        return None

    @property
    def failures(self) -> list[CTestCase]:
        # CTest itself counts "Not Run" (e.g. executable missing) as a failure.
        return [c for c in self.tests if c.status in ("failed", "notrun")]

    @property
    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "skipped": 0, "notrun": 0}
        for c in self.tests:
            out[c.status] += 1
        return out

    @property
    def reproduction(self) -> str:
        """The command without the temporary JUnit path, quoted for a POSIX shell."""
        if not self.command:
            return ""
        cmd: list[str] = []
        skip = False
        for arg in self.command:
            if skip:
                skip = False
                continue
            if arg == "--output-junit":
                skip = True
                continue
            cmd.append(arg)
        envs = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join([*envs, *(shlex.quote(a) for a in cmd)])

    def summary(self) -> str:
        if self.status == "not_run":
            return f"{self.label}: not run ({self.reason})"
        c = self.counts
        total = len(self.tests)
        detail = f"{c['passed']}/{total} passed"
        if self.failures:
            detail += "; failed: " + ", ".join(f.name for f in self.failures)
        if self.status == "error":
            detail += f"; {self.reason}"
        return f"{self.label}: {self.status} ({detail})"

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "build_dir": self.build_dir,
            "status": self.status,
            "reason": self.reason,
            "command": list(self.command),
            "reproduction": self.reproduction,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "started_at": self.started_at,
            "tests_regex": self.tests_regex,
            "env": dict(self.env),
            "meta": dict(self.meta),
            "parsed_from": self.parsed_from,
            "counts": self.counts,
            "tests": [c.to_json() for c in self.tests],
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CTestRun:
        return cls(
            label=str(data["label"]),
            build_dir=str(data.get("build_dir", "")),
            status=cast(RunStatus, data["status"]),
            reason=str(data.get("reason", "")),
            command=[str(a) for a in data.get("command", [])],
            exit_code=data.get("exit_code"),
            duration_s=float(data.get("duration_s", 0.0)),
            stdout_tail=str(data.get("stdout_tail", "")),
            stderr_tail=str(data.get("stderr_tail", "")),
            tests=[CTestCase.from_json(c) for c in data.get("tests", [])],
            parsed_from=data.get("parsed_from", "none"),
            tests_regex=data.get("tests_regex"),
            env={str(k): str(v) for k, v in dict(data.get("env", {})).items()},
            meta=dict(data.get("meta", {})),
            started_at=str(data.get("started_at", "")),
        )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------
# parsing


def parse_junit(path: Path) -> list[CTestCase] | None:
    """Test cases from CTest's JUnit file; None if absent or unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    cases: list[CTestCase] = []
    for tc in root.iter("testcase"):
        name = tc.get("name") or tc.get("classname") or ""
        if not name:
            continue
        failure = tc.find("failure")
        if failure is None:
            failure = tc.find("error")
        skipped = tc.find("skipped")
        ctest_status = tc.get("status")
        message = ""
        status: CaseStatus
        if ctest_status == "fail" or failure is not None:
            status = "failed"
            message = failure.get("message", "") if failure is not None else ""
        elif ctest_status == "disabled":
            status, message = "skipped", "Disabled"
        elif ctest_status == "notrun" or skipped is not None:
            message = skipped.get("message", "") if skipped is not None else ""
            # CTest writes status="notrun" both for SKIP_RETURN_CODE/SKIP_REGULAR_EXPRESSION
            # (a deliberate skip) and for "Unable to find executable" (counted as failed).
            status = "skipped" if message.startswith("SKIP_") else "notrun"
        else:
            status = "passed"
        cases.append(CTestCase(name, status, _float(tc.get("time")), message[:_MESSAGE_CHARS]))
    return cases


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _classify(result: str) -> CaseStatus:
    text = result.lstrip("*").strip()
    if text.startswith("Passed"):
        return "passed"
    if text.startswith("Skipped") or "(Disabled)" in text:
        return "skipped"
    if text.startswith("Not Run"):
        return "notrun"
    return "failed"  # ***Failed, ***Timeout, ***Exception: SegFault, ...


def parse_ctest_stdout(text: str) -> list[CTestCase]:
    """Test cases from CTest's `N/M Test #k: name .... Result  t sec` lines."""
    cases: dict[str, CTestCase] = {}
    for line in text.splitlines():
        m = _SUMMARY_LINE.match(line)
        if not m:
            continue
        result = m["result"].strip()
        status = _classify(result)
        message = "" if status == "passed" else result.lstrip("*").strip()
        cases[m["name"]] = CTestCase(m["name"], status, float(m["time"]), message)
    return list(cases.values())


# --------------------------------------------------------------------------------------
# running


def run_ctest(
    build_dir: Path,
    *,
    tests_regex: str | None,
    label: str = DEFAULT_LABEL,
    ctest: str = "ctest",
    timeout_s: float = 1800,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> CTestRun:
    """Run CTest in `build_dir` and record the outcome; never raises for a missing tool.

    `env` entries are added to the inherited environment (e.g. ASAN_OPTIONS, a stress seed)
    and recorded; `meta` is free-form context kept with the run (seed, platform limits).
    """
    started = _now()
    env_over = dict(env or {})
    meta_d = dict(meta or {})

    def not_run(reason: str) -> CTestRun:
        run = CTestRun.not_run(
            label, reason, build_dir=build_dir, tests_regex=tests_regex, meta=meta_d
        )
        run.env, run.started_at = env_over, started
        return run

    if not build_dir.is_dir():
        return not_run(f"build directory not found: {build_dir}")
    exe = shutil.which(ctest)
    if exe is None:
        return not_run(f"ctest executable not found: {ctest}")

    tmp = Path(tempfile.mkdtemp(prefix="parval-ctest-"))
    junit = tmp / "junit.xml"
    cmd = [
        exe,
        "--test-dir",
        str(build_dir.resolve()),
        "--output-on-failure",
        "--output-junit",
        str(junit),
    ]
    if tests_regex is not None:
        cmd += ["-R", tests_regex]
    cmd += list(extra_args)
    t0 = time.monotonic()
    timed_out = False
    try:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env_over},
                # Own process group, so a timeout also stops the tests CTest started.
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            run = not_run(f"cannot start {ctest}: {exc}")
            run.command = cmd
            return run
        try:
            out_b, err_b = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc)
            out_b, err_b = proc.communicate()
        duration = time.monotonic() - t0
        stdout = out_b.decode("utf-8", "replace")
        stderr = err_b.decode("utf-8", "replace")
        from_junit = parse_junit(junit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    from_stdout = parse_ctest_stdout(stdout)
    tests: list[CTestCase]
    parsed_from: Literal["junit", "stdout", "none"]
    if from_junit is not None:
        tests, parsed_from = from_junit, "junit"
        # JUnit failure messages are often empty; the stdout line says Timeout/SegFault.
        detail = {c.name: c.message for c in from_stdout if c.message}
        for c in tests:
            if not c.message and c.name in detail:
                c.message = detail[c.name]
    elif from_stdout:
        tests, parsed_from = from_stdout, "stdout"
    else:
        tests, parsed_from = [], "none"

    run = CTestRun(
        label=label,
        build_dir=str(build_dir),
        status="passed",
        command=cmd,
        exit_code=proc.returncode,
        duration_s=duration,
        stdout_tail=stdout[-STDOUT_TAIL_CHARS:],
        stderr_tail=stderr[-STDERR_TAIL_CHARS:],
        tests=tests,
        parsed_from=parsed_from,
        tests_regex=tests_regex,
        env=env_over,
        meta=meta_d,
        started_at=started,
    )
    run.status, run.reason = _verdict(run, timed_out, timeout_s, build_dir, stderr)
    return run


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _verdict(
    run: CTestRun, timed_out: bool, timeout_s: float, build_dir: Path, stderr: str
) -> tuple[RunStatus, str]:
    n = len(run.tests)
    if timed_out:
        return "error", f"ctest did not finish within {timeout_s:g} s (killed); {n} test(s) seen"
    failures = run.failures
    if failures:
        names = ", ".join(f"{c.name} ({c.message or c.status})" for c in failures)
        return "failed", f"{len(failures)} of {n} test(s) failed: {names}"
    first_err = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
    if n == 0:
        if run.exit_code == 0:
            where = "" if run.tests_regex is None else f" matching -R {run.tests_regex!r}"
            hint = ""
            if not (build_dir / "CTestTestfile.cmake").exists():
                hint = " (no CTestTestfile.cmake: not a configured build with tests?)"
            return "not_run", f"ctest found no tests{where}{hint}"
        if "Unknown argument" in stderr or "Unknown argument" in run.stdout_tail:
            return "error", "ctest rejected the arguments (needs CTest >= 3.21 for --output-junit)"
        return "error", f"ctest exited {run.exit_code} without test results: {first_err}"
    if run.exit_code != 0:
        return "error", f"ctest exited {run.exit_code} although no test failed: {first_err}"
    skipped = run.counts["skipped"]
    note = f" ({skipped} skipped)" if skipped else ""
    return "passed", f"{n - skipped} of {n} test(s) passed{note}"


# --------------------------------------------------------------------------------------
# F6


def _latest(runs: Sequence[CTestRun], label: str) -> tuple[CTestRun | None, list[CTestRun]]:
    """The last run with `label` (a rerun supersedes) and the ones it superseded."""
    same = [r for r in runs if r.label == label]
    return (same[-1], same[:-1]) if same else (None, [])


def _superseded_notes(label: str, earlier: Sequence[CTestRun]) -> list[str]:
    # A rerun is allowed, but an earlier failure must stay visible to the reviewer.
    return [
        f"an earlier '{label}' run ({r.started_at or 'time unknown'}) was {r.status}: {r.reason}"
        for r in earlier
        if r.status in ("failed", "error")
    ]


def assess_f6(
    runs: list[CTestRun],
    required_tests: Sequence[str] = DEFAULT_REQUIRED_TESTS,
    sanitizers: Sequence[str] = DEFAULT_SANITIZERS,
    sanitizers_unavailable: str | None = None,
) -> list[Result]:
    """F6.ctest, F6.sanitizers and F6.stress from recorded runs (selected by label).

    `sanitizers_unavailable` is the platform/implementation reason no sanitizer job can run
    here; without it an empty `sanitizers` list is PENDING, never NOT_APPLICABLE."""
    return [
        _assess_ctest(runs, required_tests),
        _assess_sanitizers(runs, sanitizers, sanitizers_unavailable),
        _assess_stress(runs),
    ]


def _nothing_ran(run: CTestRun) -> str | None:
    """A run that 'passed' without one test passing proves nothing."""
    if run.status == "passed" and run.counts["passed"] == 0:
        return f"no test passed ({run.counts['skipped']} of {len(run.tests)} skipped)"
    return None


def _assess_ctest(runs: Sequence[CTestRun], required: Sequence[str]) -> Result:
    rid = "F6.ctest"
    run, earlier = _latest(runs, DEFAULT_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no default CTest run recorded")
    req_status = {name: (c.status if (c := run.case(name)) else "absent") for name in required}
    relevant = [c.name for c in run.failures if c.name in required or RELEVANT_TESTS.search(c.name)]
    unrelated = [c.name for c in run.failures if c.name not in relevant]
    evidence = {"run": run.to_json(), "required": req_status, "relevant_failures": relevant,
                "unrelated_failures": unrelated, "relevant_pattern": RELEVANT_TESTS.pattern}
    limitations = _superseded_notes(DEFAULT_LABEL, earlier)
    if unrelated:
        limitations.append("unrelated common-suite failure(s), disclosed separately (outside the parallel "
                           f"scope {RELEVANT_TESTS.pattern!r}): {', '.join(unrelated)}")

    def result(status: Status, reason: str) -> Result:
        return Result(rid, status, reason, evidence, run.reproduction, limitations)

    if run.status == "not_run":
        return result(Status.PENDING, f"default CTest run not run: {run.reason}")
    if run.status == "error" or (run.status == "failed" and (relevant or not unrelated)):
        reason = run.reason if not relevant else f"failed: {', '.join(relevant)}"
        return result(Status.FAIL, reason)
    if (empty := _nothing_ran(run)) is not None:
        return result(Status.PENDING, f"default CTest run: {empty}")
    missing = [f"{n} ({s})" for n, s in req_status.items() if s != "passed"]
    if missing:
        return result(Status.PENDING, "required test(s) did not run: " + ", ".join(missing))
    req = f"; required: {', '.join(required)}" if required else ""
    return result(Status.PASS, f"{run.reason}{req}")


def _assess_sanitizers(runs: Sequence[CTestRun], sanitizers: Sequence[str],
                       unavailable: str | None = None) -> Result:
    rid = "F6.sanitizers"
    if not sanitizers:
        if unavailable:
            return not_applicable(rid, f"no sanitizer job can run here: {unavailable}")
        return Result(rid, Status.PENDING, "no sanitizer job requested and no platform reason given "
                      "(ASan and TSan run separately where supported; name why they cannot here)")
    jobs: dict[str, dict[str, Any]] = {}
    statuses: list[Status] = []
    parts: list[str] = []
    limitations: list[str] = []
    repro: list[str] = []
    for label in sanitizers:
        run, earlier = _latest(runs, label)
        limitations += _superseded_notes(label, earlier)
        if run is None:
            status, reason, job = Status.PENDING, "no run recorded", {"status": "not_run"}
        else:
            job = run.to_json()
            reason = run.reason
            status = {
                "passed": Status.PASS,
                "not_run": Status.PENDING,
            }.get(run.status, Status.FAIL)
            if (empty := _nothing_ran(run)) is not None:
                status, reason = Status.PENDING, empty
            if run.reproduction:
                repro.append(run.reproduction)
        job["assessed"] = str(status)
        job["reason"] = reason
        jobs[label] = job
        statuses.append(status)
        word = {Status.PASS: "PASS", Status.PENDING: "not run", Status.FAIL: "FAIL"}[status]
        parts.append(f"{label}: {word} ({reason})")
        if status is Status.PENDING:
            # The procedure wants unrun sanitizer jobs listed with their platform limits.
            limitations.append(f"{label} not run: {reason}")
    if Status.FAIL in statuses:
        overall = Status.FAIL
    elif Status.PENDING in statuses:
        overall = Status.PENDING
    else:
        overall = Status.PASS
    return Result(rid, overall, "; ".join(parts), {"jobs": jobs}, "\n".join(repro), limitations)


def _assess_stress(runs: Sequence[CTestRun]) -> Result:
    rid = "F6.stress"
    run, earlier = _latest(runs, STRESS_LABEL)
    if run is None:
        return Result(rid, Status.PENDING, "no seeded stress run recorded")
    seed = run.meta.get("seed")
    evidence: dict[str, Any] = {"run": run.to_json(), "seed": seed}
    limitations = _superseded_notes(STRESS_LABEL, earlier)
    if seed is None:
        limitations.append("no seed recorded with the stress run (meta['seed'])")
    status = {"passed": Status.PASS, "not_run": Status.PENDING}.get(run.status, Status.FAIL)
    reason = run.reason if status is not Status.PENDING else f"stress run not run: {run.reason}"
    if (empty := _nothing_ran(run)) is not None:
        status, reason = Status.PENDING, f"stress run: {empty}"
    if status is Status.PASS and seed is not None:
        reason += f"; seed {seed}"
    return Result(rid, status, reason, evidence, run.reproduction, limitations)
