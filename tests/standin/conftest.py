"""Fixtures: every stand-in started by a test is killed in the finaliser."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from standin_harness import MODEL_BYTES, Launch, Standin


def _launcher(workdir: Path, started: list[Standin]) -> Launch:
    (workdir / "model.bin").write_bytes(MODEL_BYTES)

    def launch(
        models: Sequence[Mapping[str, Any]] = (),
        *,
        parallel: bool = True,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        faults: Sequence[str] = (),
        wait: bool = True,
        **top: Any,
    ) -> Standin:
        config = {"host": "127.0.0.1", "lazy_load": True, **top, "models": list(models)}
        argv = ["--no-ui", *(["--parallel-jobs"] if parallel else []), *args]
        for fault in faults:
            argv += ["--fault", fault]
        server = Standin(workdir, config, argv, env)
        started.append(server)
        return server.wait_ready() if wait else server

    return launch


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    started: list[Standin] = []
    yield _launcher(tmp_path, started)
    for server in started:
        server.close()


@pytest.fixture(scope="module")
def module_launch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launch]:
    started: list[Standin] = []
    yield _launcher(tmp_path_factory.mktemp("standin"), started)
    for server in started:
        server.close()
