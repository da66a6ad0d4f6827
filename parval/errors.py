"""The error tree: every user-facing failure carries a message and an exit code.

Exit codes (documented in README.md, docs/running.md and `parval --help`):
  0  admitted: every required assertion PASS
  1  a required assertion FAILED (or verify/verify-protected found a difference)
  2  usage or plan error (bad plan, missing file, bad argument, git error)
  3  evidence incomplete: PENDING/BLOCKED, or the run was interrupted
  4  internal error (a bug in parval, or a start parval could not prepare; the run stays resumable)
  130/143/129  interrupted by SIGINT/SIGTERM/SIGHUP (partial evidence written)
"""

from __future__ import annotations

EXIT_ADMITTED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 4
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
EXIT_SIGHUP = 129  # 128 + SIGHUP: the terminal or SSH session went away


class ParvalError(Exception):
    """Base class: `message` is shown to the user without a traceback."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(ParvalError):
    exit_code = EXIT_USAGE


class PlanError(UsageError):
    """A plan that cannot be loaded: YAML syntax, schema, missing files."""


class InputFileError(UsageError):
    """A file named on the command line or in a plan is missing or unreadable."""


class GitError(UsageError):
    """git failed: not a repository, unknown commit."""


class RunDirError(UsageError):
    """A run directory is missing, incomplete or does not match."""


class ResumeRefused(UsageError):
    """`--resume` refused because the manifest no longer matches."""


class ServerStartError(ParvalError):
    """A server process could not be started or never became ready. `server_exit`: the
    status of a process that exited by itself before it was ready (None otherwise: it was
    killed at the readiness deadline, or never ran)."""

    exit_code = EXIT_INCOMPLETE

    def __init__(
        self, message: str, *, log_tail: str = "", hint: str | None = None, server_exit: int | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.log_tail = log_tail
        self.server_exit = server_exit


class StartPreparationError(ParvalError):
    """parval could not prepare a server start (the run directory, the config file it
    writes, the log files): parval's failure, never recorded as the server's. The campaign
    stops unfinished (no `campaign_end`, exit 4), so `--resume` can continue it."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(
            message,
            hint="parval stopped the campaign unfinished: once this is fixed, continue it "
            "(`parval run --resume RUN`, or the same `parval catalogue run` again)",
        )
