"""Command-line parsing that mirrors `audiocpp_server`'s argv handling.

Flags are found by name anywhere in argv, a value flag takes the next element (a value flag
given last is ignored), presence-only flags take nothing, unknown arguments are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import StartupError

VERSION_TEXT = "audiocpp_server (parval stand-in) 0.1.0"

USAGE = """\
usage: audiocpp_server --config <server.json> [options]

  --config <server.json>       server config file (required unless --ui)
  --parallel-jobs              opt into the experimental parallel runtime; \
per-model slots default to 1
  --ui / --no-ui               enable / disable the embedded WebUI
  --ui-management              enable dynamic /v1/models/load and /v1/models/unload
  --host <ip>                  IPv4 address to bind (default 127.0.0.1)
  --port <n>                   port to bind (default 8080)
  --backend <b>                cpu|cuda|hip|rocm|vulkan|metal (default cuda)
  --device <id>                device index (default 0)
  --threads <n>                worker threads (default 1)
  --busy-timeout-ms <ms>       admission bound, 0 = unbounded (default 300000)
  --max-loaded-models <n>      residency limit, 0 = none (default 0)
  --idle-unload-ms <ms>        idle retirement, 0 = disabled (default 0)
  --min-free-memory-mb <mb>    memory guard, 0 = disabled (default 0)
  --cors-origins <o>           '*' or ''
  --list-devices, --version, --help

stand-in only:
  --fault NAME[=VALUE]         enable a named fault (repeatable); also PARVAL_STANDIN_FAULTS
                               behaviour variants of a correct server, switched on the same way:
                               registration_outputs (outputs depend on the model id and path),
                               cold_warm_differ (a session's first output after a load differs)
"""

BACKENDS = {"cpu", "cuda", "hip", "rocm", "vulkan", "metal"}


@dataclass
class CliArgs:
    config: str | None = None
    parallel_jobs: bool = False
    ui: bool | None = None
    ui_management: bool = False
    host: str | None = None
    port: int | None = None
    backend: str | None = None
    device: int | None = None
    threads: int | None = None
    busy_timeout_ms: int | None = None
    max_loaded_models: int | None = None
    idle_unload_ms: int | None = None
    min_free_memory_mb: int | None = None
    cors_origins: str | None = None
    show_help: bool = False
    show_version: bool = False
    list_devices: bool = False
    faults: list[str] = field(default_factory=list)


def _value(argv: Sequence[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _int_value(argv: Sequence[str], flag: str) -> int | None:
    raw = _value(argv, flag)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        # the real server parses with std::stoi and reports its bare exception text
        raise StartupError("stoi") from None


def parse_cli(argv: Sequence[str]) -> CliArgs:
    args = CliArgs()
    present = set(argv)
    args.show_help = "--help" in present or "-h" in present
    args.show_version = "--version" in present
    args.list_devices = "--list-devices" in present
    args.parallel_jobs = "--parallel-jobs" in present
    if "--no-ui" in present:
        args.ui = False
    elif "--ui" in present:
        args.ui = True
    args.ui_management = "--ui-management" in present
    args.config = _value(argv, "--config")
    args.host = _value(argv, "--host")
    args.cors_origins = _value(argv, "--cors-origins")
    backend = _value(argv, "--backend")
    if backend is not None:
        if backend not in BACKENDS:
            raise StartupError(f"unsupported server backend: {backend}")
        args.backend = "hip" if backend == "rocm" else backend
    args.port = _int_value(argv, "--port")
    args.device = _int_value(argv, "--device")
    args.threads = _int_value(argv, "--threads")
    args.busy_timeout_ms = _int_value(argv, "--busy-timeout-ms")
    args.max_loaded_models = _int_value(argv, "--max-loaded-models")
    args.idle_unload_ms = _int_value(argv, "--idle-unload-ms")
    args.min_free_memory_mb = _int_value(argv, "--min-free-memory-mb")
    if args.threads is not None and args.threads <= 0:
        raise StartupError("--threads must be positive")
    if args.busy_timeout_ms is not None and args.busy_timeout_ms < 0:
        raise StartupError("--busy-timeout-ms must be >= 0 (0 disables the guard)")
    if args.cors_origins not in (None, "*", ""):
        raise StartupError("--cors-origins must be '*' (allow all origins) or '' (disabled)")
    for i, arg in enumerate(argv):
        if arg == "--fault" and i + 1 < len(argv):
            args.faults.append(argv[i + 1])
    return args
