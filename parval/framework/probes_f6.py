"""F6: the common CTests, the ASan/TSan builds and a seeded stress job, through
parval/framework/ctest_run.py. A job without a build directory is listed as not run, with the
reason, and its assertion stays PENDING."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from parval.framework.ctest import DEFAULT_LABEL, STRESS_LABEL, CTestRun
from parval.framework.ctest_run import run_ctest
from parval.framework.probe_context import FrameworkContext
from parval.rundir.event_types import CtestEvent

STRESS_SEED_ENV = "AUDIOCPP_STRESS_SEED"


# Files of a configured build directory that carry its compile flags, in the order read.
FLAG_FILES = ("CMakeCache.txt", "compile_commands.json", "build.ninja", "CMakeFiles/CMakeConfigureLog.yaml")
_FSANITIZE = re.compile(rb"-fsanitize=([a-z,]+)")
_READ_LIMIT = 64 * 1024 * 1024


def sanitize_flags(build_dir: Path) -> tuple[list[str] | None, list[str]]:
    """The -fsanitize values a build directory was configured or compiled with (the cache,
    the compile commands, the build files), and the files read; None when none is readable."""
    found: set[str] = set()
    read: list[str] = []
    for name in FLAG_FILES:
        try:
            with (build_dir / name).open("rb") as fh:
                raw = fh.read(_READ_LIMIT)
        except OSError:
            continue
        read.append(name)
        found |= {v.decode() for m in _FSANITIZE.finditer(raw) for v in m.group(1).split(b",") if v}
    return (sorted(found) if read else None), read


async def ctest_runs(ctx: FrameworkContext) -> list[CTestRun]:
    fw = ctx.plan.framework
    regex = fw.get("ctest_regex")
    build = fw.get("ctest_build_dir")
    timeout = ctx.options.ctest_timeout_s
    runs: list[CTestRun] = []

    async def run(
        build_dir: str,
        label: str,
        *,
        tests_regex: str | None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> CTestRun:
        """run_ctest in a thread, at the probes file's timeout, logged."""
        call = functools.partial(
            run_ctest,
            ctx.plan.resolve(build_dir),
            label=label,
            timeout_s=timeout,
            tests_regex=tests_regex,
            extra_args=extra_args,
            env=env,
            meta=meta,
        )
        result: CTestRun = await anyio.to_thread.run_sync(call)
        ctx.log.write(CtestEvent(kind="ctest", label=result.label, summary=result.summary(), status=result.status))
        return result

    if build:
        runs.append(await run(build, DEFAULT_LABEL, tests_regex=regex))
    else:
        runs.append(CTestRun.not_run(DEFAULT_LABEL, "no framework.ctest_build_dir in the plan"))
    dirs = fw.get("sanitizer_build_dirs") or {}
    for label in ctx.options.sanitizers:
        if label in dirs:
            where = ctx.plan.resolve(dirs[label])
            # What the build directory shows it was compiled with (judges_f6._built_with).
            flags, source = sanitize_flags(where)
            meta = {"sanitizer": label, "sanitize_flags": flags, "flags_from": source}
            runs.append(await run(dirs[label], label, tests_regex=regex, meta=meta))
        else:
            runs.append(
                CTestRun.not_run(
                    label, f"no framework.sanitizer_build_dirs.{label} in the plan (unsupported platform or not built)"
                )
            )
    stress = ctx.options.stress
    if stress is None:
        runs.append(CTestRun.not_run(STRESS_LABEL, "no stress job in the probes file (stress: {regex, seed, repeat})"))
    elif not build:
        runs.append(CTestRun.not_run(STRESS_LABEL, "the stress job needs framework.ctest_build_dir"))
    else:
        runs.append(
            await run(
                build,
                STRESS_LABEL,
                tests_regex=stress.regex,
                extra_args=("--repeat", f"until-fail:{stress.repeat}"),
                env={STRESS_SEED_ENV: str(stress.seed)},
                meta={"seed": stress.seed, "repeat": stress.repeat},
            )
        )
    return runs
