"""Process lifecycle: the real server's startup order, readiness line and graceful stop.

Order: parse args -> load config -> warning block (flagged) -> backend notice -> eager
loads -> bind/listen (backlog 16) -> `audiocpp_server listening on http://<host>:<port>`
-> serve until SIGTERM/SIGINT -> stop accepting, join workers -> `audiocpp_server stopped`.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .allocator import fix_heap
from .app import StandinApp
from .cli import USAGE, VERSION_TEXT, parse_cli
from .config import ConfigError, load_server_config
from .errors import ApiError, StartupError
from .faults import FAULTS_ENV, Faults, parse_faults
from .http_transport import StandinServer
from .runtime import Runtime
from .traces import Traces

PARALLEL_WARNING = (
    "WARNING: --parallel-jobs enables EXPERIMENTAL server behavior.",
    "WARNING: validated scope: controlled CPU session/queue lifecycle tests plus representative",
    (
        "WARNING: CUDA/Vulkan capacity-one cold/warm inference; "
        "no catalogue multi-slot models are admitted by this framework PR."
    ),
    "WARNING: reconfiguration, unload/eviction, disconnect and shutdown have partial coverage.",
    ("WARNING: real concurrent GPU streams/batches, Metal execution and hung-backend cancellation are unverified."),
    "WARNING: see docs/maintainers/parallel_server_behavior_contract.md for the behavior contract.",
    "WARNING: per-model slots default to 1 and must fit the session capacity of the loaded model.",
    ("WARNING: queued requests wait FIFO under busy_timeout_ms. Busy timeout does not cancel backend execution."),
)


def _fail(message: str) -> int:
    sys.stderr.write(f"audiocpp_server failed: {message}\n")
    sys.stderr.flush()
    return 1


def _install_stop_handlers(stop: threading.Event, faults: Faults) -> None:
    if faults.on("hang_shutdown"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)


def _wait(stop: threading.Event) -> None:
    # short waits keep the main thread responsive to signal handlers
    while not stop.wait(0.1):
        pass


def _bind(host: str, port: int, app: StandinApp, max_body: int) -> StandinServer:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise StartupError(f"server host must be an IPv4 address: {host}") from None
    try:
        return StandinServer((host, port), app.dispatch, max_body)
    except OSError:
        raise StartupError(f"could not bind {host}:{port}") from None


def run(argv: Sequence[str]) -> int:
    stop = threading.Event()
    try:
        args = parse_cli(argv)
        if args.list_devices:
            print("0: cpu (parval stand-in)")
            return 0
        if args.show_version:
            print(VERSION_TEXT)
            return 0
        if args.show_help:
            print(USAGE, end="")
            return 0
        faults = parse_faults(args.faults, os.environ.get(FAULTS_ENV))
        _install_stop_handlers(stop, faults)
        fix_heap()  # before any worker thread starts: one arena for them all
        cfg = load_server_config(args)
        if cfg.parallel_jobs:
            sys.stderr.write("\n".join(PARALLEL_WARNING) + "\n")
        if cfg.backend != "cuda":
            sys.stderr.write(
                f"audio.cpp is optimized for CUDA. The {cfg.backend} server backend "
                "is intended for portability and testing, "
                "but performance and model coverage may be lower than CUDA.\n"
            )
        sys.stderr.flush()
        if faults.on("startup_crash"):
            raise StartupError("injected startup crash")
        runtime = Runtime(cfg, faults)
        runtime.load_eager_models()
        app = StandinApp(runtime, faults, Traces.from_environment())
        if faults.on("never_ready"):
            _wait(stop)
            return 0
        server = _bind(cfg.host, cfg.port, app, cfg.max_request_body_bytes)
    except (StartupError, ConfigError) as exc:
        return _fail(str(exc))
    except ApiError as exc:
        return _fail(exc.message)
    print(f"audiocpp_server listening on http://{cfg.host}:{cfg.port}", flush=True)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="standin-listener")
    serving.start()
    if cfg.idle_unload_ms > 0:
        threading.Thread(target=app.management.idle_loop, args=(stop,), daemon=True, name="standin-idle").start()
    _wait(stop)
    server.shutdown()
    serving.join()
    app.shutting_down.set()  # hung handlers (hang_requests) give up their connections
    # clients that stopped sending (stalled_io_wait: those stalled mid-request are waited on)
    server.cancel_stalled_reads(mid_request=not faults.on("stalled_io_wait"))
    server.server_close()  # joins the connection workers: finite in-flight work finishes
    print("audiocpp_server stopped", flush=True)
    return 0
