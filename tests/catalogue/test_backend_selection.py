"""`parval catalogue run` runs only the combinations whose backend is on this machine (or
those --backend names); every other one is reported skipped with why, and is never run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from parval.claims import combination_runs as runner
from parval.claims.combination_runs import Outcome, run_catalogue


def _combo(key: str, backend: str) -> Any:
    return SimpleNamespace(key=key, backend=backend)


COMBOS = [_combo("tts.cpu.offline", "cpu"), _combo("tts.cuda.offline", "cuda"), _combo("tts.vulkan.offline", "vulkan")]


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which combinations were run (run_one faked: no campaign starts)."""
    done: list[str] = []
    monkeypatch.setattr(runner, "backends_here", lambda: {"cpu": "always"})
    monkeypatch.setattr(runner, "check_combinations", lambda combos: {c.key: None for c in combos})
    monkeypatch.setattr(runner, "check_gpu_readable", lambda plans: None)
    monkeypatch.setattr(runner, "check_run_dir", lambda path: None)

    def run_one(combo: Any, plan: Any, out: Path, shard: Any, listen: Any, started: Any) -> tuple[Outcome, None]:
        done.append(combo.key)
        return Outcome(combo.key, out / combo.key, "run", 0, "admitted", 0.1), None

    monkeypatch.setattr(runner, "run_one", run_one)
    return done


def _run(tmp_path: Path, **kw: Any) -> tuple[list[Outcome], list[str]]:
    lines: list[str] = []
    outcomes, signalled = run_catalogue(
        COMBOS,
        tmp_path,
        shard=None,
        listen=lambda: None,
        echo=lines.append,
        **kw,  # type: ignore[arg-type]
    )
    assert signalled is None
    return outcomes, lines


def test_by_default_only_the_backends_found_here_run(tmp_path: Path, ran: list[str]) -> None:
    outcomes, lines = _run(tmp_path, backends=None, detect=True)
    assert ran == ["tts.cpu.offline"]
    skipped = {o.key: o.line for o in outcomes if o.action == "skipped"}
    assert skipped.keys() == {"tts.cuda.offline", "tts.vulkan.offline"}
    assert all(o.exit_code is None for o in outcomes if o.action == "skipped")
    assert (
        "backend cuda not found on this machine (found: cpu; --backend cuda runs it anyway)"
        in skipped["tts.cuda.offline"]
    )
    assert any(line.startswith("[2/3] tts.cuda.offline: skipped: backend cuda not found") for line in lines), lines


def test_backend_chooses_explicitly_whatever_is_found(tmp_path: Path, ran: list[str]) -> None:
    outcomes, _ = _run(tmp_path, backends=["cuda"], detect=True)
    assert ran == ["tts.cuda.offline"]
    skipped = {o.key: o.line for o in outcomes if o.action == "skipped"}
    assert skipped == {
        "tts.cpu.offline": "not selected (--backend cuda)",
        "tts.vulkan.offline": "not selected (--backend cuda)",
    }


def test_only_runs_every_selected_combination(tmp_path: Path, ran: list[str]) -> None:
    """--only (detect off) names combinations explicitly: they run wherever their backend is."""
    outcomes, _ = _run(tmp_path, backends=None, detect=False)
    assert ran == [c.key for c in COMBOS] and not [o for o in outcomes if o.action == "skipped"]


def test_detection_finds_the_cpu_and_a_gpu_backend_only_with_its_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVML device, no /dev/kfd, no vulkaninfo: the CPU only; an NVML device adds CUDA."""
    import parval.nvml as nvml

    monkeypatch.setattr(nvml, "open_device", lambda index: "NVML cannot initialise (no NVIDIA driver)")
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if str(self) == "/dev/kfd" else real_exists(self))
    found = runner.backends_here()
    assert "cpu" in found and not {"cuda", "hip", "rocm", "vulkan"} & found.keys()

    closed: list[bool] = []
    monkeypatch.setattr(nvml, "open_device", lambda index: SimpleNamespace(close=lambda: closed.append(True)))
    assert runner.backends_here()["cuda"] == "NVML found device 0" and closed == [True]


def test_a_gpu_plan_on_a_machine_without_nvml_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A combination that requires GPU memory readings NVML cannot give here would run its
    whole campaign and end M5 PENDING: the catalogue run refuses at once (exit 2), naming
    it, unless --without-gpu."""
    from parval import nvml
    from parval.errors import UsageError

    done: list[str] = []
    gpu_plan = SimpleNamespace(
        path=Path("cuda.yaml"), memory={"gpu_required": True, "nvml_device_index": 0}, written=None
    )
    cpu_plan = SimpleNamespace(path=Path("cpu.yaml"), memory={"gpu_required": False})
    monkeypatch.setattr(nvml, "probe", lambda index: "not found (no NVIDIA driver)")
    monkeypatch.setattr(
        runner,
        "check_combinations",
        lambda combos: {c.key: gpu_plan if c.backend == "cuda" else cpu_plan for c in combos},
    )
    monkeypatch.setattr(runner, "check_run_dir", lambda path: None)

    def run_one(combo: Any, plan: Any, out: Path, shard: Any, listen: Any, started: Any) -> tuple[Outcome, None]:
        done.append(combo.key)
        return Outcome(combo.key, out / combo.key, "run", 3, "pending", 0.1), None

    monkeypatch.setattr(runner, "run_one", run_one)
    kw: Any = {"shard": None, "listen": lambda: None, "echo": lambda line: None, "detect": True}
    with pytest.raises(UsageError) as refused:
        run_catalogue(COMBOS, tmp_path, backends=["cpu", "cuda"], **kw)
    assert done == []
    assert "tts.cuda.offline: cuda.yaml: memory.gpu_required is true" in refused.value.message
    assert "tts.cpu.offline" not in refused.value.message
    assert "--without-gpu" in str(refused.value)
    run_catalogue(COMBOS, tmp_path, backends=["cpu", "cuda"], without_gpu=True, **kw)
    assert done == ["tts.cpu.offline", "tts.cuda.offline"]
