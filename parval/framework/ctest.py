"""CTest records for the framework assertions F6.ctest, F6.sanitizers, F6.stress.

`CTestRun`/`CTestCase` are what a CTest invocation showed, as recorded in the event log and
the record; the parsers read CTest's JUnit file (CTest >= 3.21) and, as a fallback, its
per-test stdout lines. Running CTest is parval.framework.ctest_run; judging the recorded runs
is parval.framework.judges_f6.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Required, TypedDict

CaseStatus = Literal["passed", "failed", "skipped", "notrun"]
RunStatus = Literal["passed", "failed", "error", "not_run"]
# Why a run is an "error" (no test failed): parval stopped it at ctest_timeout_s, the CTest
# is too old for the arguments parval passes, or CTest itself gave no results.
ErrorKind = Literal["", "parval_timeout", "ctest_too_old", "no_results"]

DEFAULT_LABEL = "default"
STRESS_LABEL = "stress"
# ASan and TSan run separately where supported; a job not run needs a platform reason.
DEFAULT_SANITIZERS: tuple[str, ...] = ("asan", "tsan")

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


class CTestCaseJson(TypedDict, total=False):
    """One test case as `CTestCase.to_json` records it."""

    name: Required[str]
    status: Required[CaseStatus]
    time_s: float | None
    message: str


class CTestRunJson(TypedDict, total=False):
    """One CTest run as `CTestRun.to_json` records it (older records lack some fields)."""

    label: Required[str]
    build_dir: str
    status: Required[RunStatus]
    reason: str
    command: list[str]
    reproduction: str
    exit_code: int | None
    duration_s: float
    started_at: str
    error_kind: ErrorKind
    tests_regex: str | None
    env: dict[str, str]
    meta: dict[str, object]
    parsed_from: Literal["junit", "stdout", "none"]
    counts: dict[str, int]
    tests: list[CTestCaseJson]
    stdout_tail: str
    stderr_tail: str


@dataclass
class CTestCase:
    name: str
    status: CaseStatus
    time_s: float | None = None
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: CTestCaseJson) -> CTestCase:
        return cls(
            name=str(data["name"]),
            status=data["status"],
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
    meta: dict[str, object] = field(default_factory=dict)
    started_at: str = ""
    error_kind: ErrorKind = ""

    @classmethod
    def not_run(
        cls,
        label: str,
        reason: str,
        *,
        build_dir: Path | str = "",
        tests_regex: str | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> CTestRun:
        """A job that was not (or could not be) run, e.g. TSan on a platform without it."""
        return cls(
            label=label,
            build_dir=str(build_dir),
            status="not_run",
            reason=reason,
            tests_regex=tests_regex,
            meta=dict(meta or {}),
            started_at=now(),
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

    def to_json(self) -> dict[str, object]:
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
            "error_kind": self.error_kind,
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
    def from_json(cls, data: CTestRunJson) -> CTestRun:
        return cls(
            label=str(data["label"]),
            build_dir=str(data.get("build_dir", "")),
            status=data["status"],
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
            error_kind=data.get("error_kind") or _error_kind(data),
        )


def _error_kind(data: CTestRunJson) -> ErrorKind:
    """The error kind of a run recorded before runs carried one, from its reason text."""
    if data.get("status") != "error":
        return ""
    reason = str(data.get("reason", ""))
    if "(killed)" in reason:
        return "parval_timeout"
    if "needs CTest >= 3.21" in reason:
        return "ctest_too_old"
    return "no_results"


def now() -> str:
    """The UTC time stamp a run records as `started_at`."""
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
