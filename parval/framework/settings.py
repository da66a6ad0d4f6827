"""Framework-only settings (`--probes FILE`). The timing every probe derives from the
server's own measured request, load and teardown times is parval.framework.observed.Timing
(an observation records it, and judges take their tolerances from it).

The plan format is shared with `parval run`; keys that only the framework gate needs
live in this optional YAML file instead of the plan schema:

    source_commit: 0123abcd...          # recorded in the identity (or --source-commit)
    distinct_session_options:          # session_options that make outputs differ
      - {parval_probe: "1"}
      - {parval_probe: "2"}
      - {parval_probe: "3"}
    min_service_ms: 100                 # shorter warm requests cannot force orders
    stalled_io_grace_s: 3               # exit bound with stalled client sockets
    sanitizers: [asan, tsan]            # the sanitizer jobs run here (ASan and TSan are both required)
    sanitizers_unavailable: "..."       # why the ones not run cannot run here ({tsan: "..."} per job);
                                        #   a required job without a reason stays PENDING
    required_tests: [server_config_test] # CTests required besides the two default-transport ones
    default_transport_unchanged: "..."  # why parallel_http_live_body_test and
                                        #   parallel_http_ownership_test are not required (recorded)
    ctest_coverage:                     # other CTest names for a CTest-backed sub-check
      F3.ownership: [session_pool_test, my_ownership_test]
    unrelated_tests:                    # CTests whose failure is unrelated to the parallel scope,
      audio_resample_test: "resampler only; no session, slot or server code"  # each with why;
                                        #   any other failure fails F6.ctest; a test named in
                                        #   ctest_coverage (or required) cannot be listed
    ctest_timeout_s: 1800
    stress: {regex: "stress", seed: 1234, repeat: 20}
    skip: [f4_stalled_io]               # probe names; their assertions stay PENDING
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from parval.errors import UsageError

DEFAULT_DISTINCT: tuple[dict[str, str], ...] = ({"parval_probe": "1"}, {"parval_probe": "2"}, {"parval_probe": "3"})
KNOWN_KEYS = {
    "source_commit",
    "distinct_session_options",
    "min_service_ms",
    "stalled_io_grace_s",
    "sanitizers",
    "sanitizers_unavailable",
    "required_tests",
    "default_transport_unchanged",
    "ctest_coverage",
    "unrelated_tests",
    "ctest_timeout_s",
    "stress",
    "skip",
}


@dataclass(frozen=True)
class Stress:
    regex: str | None
    seed: int
    repeat: int


@dataclass(frozen=True)
class ProbeOptions:
    source_commit: str | None = None
    distinct_session_options: tuple[Mapping[str, object], ...] = DEFAULT_DISTINCT
    min_service_ms: float = 100.0
    stalled_io_grace_s: float = 3.0
    sanitizers: tuple[str, ...] = ("asan", "tsan")
    sanitizers_unavailable: dict[str, str] = field(default_factory=dict)
    required_tests: tuple[str, ...] = ()
    default_transport_unchanged: str | None = None
    ctest_coverage: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unrelated_tests: dict[str, str] = field(default_factory=dict)
    ctest_timeout_s: float = 1800.0
    stress: Stress | None = None
    skip: frozenset[str] = field(default_factory=frozenset)
    path: str | None = None
    sha256: str | None = None


def load_options(path: Path | None) -> ProbeOptions:
    if path is None:
        return ProbeOptions()
    import hashlib

    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise UsageError(f"--probes {path}: cannot read: {exc}") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"--probes {path}: YAML syntax error: {exc}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"--probes {path}: must be a YAML mapping")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise UsageError(f"--probes {path}: unknown key(s) {unknown}; known: {sorted(KNOWN_KEYS)}")
    where = f"--probes {path}"
    distinct = raw.get("distinct_session_options", list(DEFAULT_DISTINCT))
    if not isinstance(distinct, list) or len(distinct) < 3 or not all(isinstance(d, dict) for d in distinct):
        raise UsageError(f"{where}: distinct_session_options must be a list of at least 3 mappings")
    stress = raw.get("stress")
    stress_opt: Stress | None = None
    if stress is not None:
        if not isinstance(stress, dict):
            raise UsageError(f"{where}: stress must be a mapping {{regex, seed, repeat}}")
        stress_opt = Stress(stress.get("regex"), int(stress.get("seed", 1)), int(stress.get("repeat", 10)))
    sanitizers = tuple(str(x) for x in raw.get("sanitizers", ("asan", "tsan")))
    return ProbeOptions(
        source_commit=_opt_str(raw.get("source_commit"), where, "source_commit"),
        distinct_session_options=tuple(dict(d) for d in distinct),
        min_service_ms=_positive(raw.get("min_service_ms", 100.0), where, "min_service_ms"),
        stalled_io_grace_s=_positive(raw.get("stalled_io_grace_s", 3.0), where, "stalled_io_grace_s"),
        sanitizers=sanitizers,
        sanitizers_unavailable=_unavailable(raw.get("sanitizers_unavailable"), where),
        required_tests=_names(raw.get("required_tests", []), where, "required_tests"),
        default_transport_unchanged=_opt_str(
            raw.get("default_transport_unchanged"), where, "default_transport_unchanged"
        ),
        ctest_coverage=_coverage(raw.get("ctest_coverage", {}), where),
        unrelated_tests=_unrelated(raw.get("unrelated_tests", {}), where),
        ctest_timeout_s=_positive(raw.get("ctest_timeout_s", 1800.0), where, "ctest_timeout_s"),
        stress=stress_opt,
        skip=frozenset(str(s) for s in raw.get("skip", [])),
        path=str(path.resolve()),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )


def _names(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise UsageError(f"{where}: {key} must be a list of CTest names")
    return tuple(value)


def _unavailable(value: object, where: str) -> dict[str, str]:
    """`sanitizers_unavailable`: one reason for every job not run, or one per job."""
    from parval.framework.ctest import DEFAULT_SANITIZERS

    if value is None:
        return {}
    if isinstance(value, str) and value.strip():
        return {label: value for label in DEFAULT_SANITIZERS}
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.items()
    ):
        return dict(value)
    raise UsageError(f"{where}: sanitizers_unavailable must be a reason, or a mapping of job to reason")


def _coverage(value: object, where: str) -> dict[str, tuple[str, ...]]:
    """`ctest_coverage` as given (its assertions are checked by runner.check_options)."""
    if not isinstance(value, dict):
        raise UsageError(f"{where}: ctest_coverage must map an assertion to a list of CTest names")
    return {str(k): _names(v, where, f"ctest_coverage.{k}") for k, v in value.items()}


def _unrelated(value: object, where: str) -> dict[str, str]:
    """`unrelated_tests`: each CTest name with why its failure is unrelated to the parallel
    scope. A pattern (or a bare list) is not accepted: it names no test and gives no reason."""
    if isinstance(value, dict) and all(
        isinstance(k, str) and k and isinstance(v, str) and v.strip() for k, v in value.items()
    ):
        return dict(value)
    if isinstance(value, str):
        raise UsageError(
            f"{where}: unrelated_tests {value!r}: a name pattern is no longer accepted; map each "
            "CTest name to why its failure is unrelated (unrelated_tests: {name: reason})"
        )
    raise UsageError(f"{where}: unrelated_tests must map each CTest name to why its failure is unrelated")


def _opt_str(value: object, where: str, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise UsageError(f"{where}: {key} must be a string")


def _positive(value: object, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise UsageError(f"{where}: {key} must be a positive number")
    return float(value)
