"""On a GPU box: the servers' environment (an allow-list whose gaps are named, never silent,
and recorded per start), a CUDA device that is not the GPU NVML reads, the campaign's time
(bounded by the plan's timeouts, estimated from an earlier run), and the demo's import path
without the dev toolchain."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from parval.server.process import ENV_ALLOW, server_env

from .kit import PLAN, invoke, parval, write_plan

REPO = Path(__file__).resolve().parents[2]
# What changes how a server runs but is not on the allow-list.
DROPPED = {
    "OMP_NUM_THREADS": "3",
    "GGML_CUDA_NO_PINNED": "1",
    "MKL_NUM_THREADS": "2",
    "OPENBLAS_NUM_THREADS": "2",
    "CUDA_LAUNCH_BLOCKING": "1",
    "LD_PRELOAD": "",
}


def _small(directory: Path, **changes: object) -> Path:
    return write_plan(directory, counts=[1], starts_per_count=1, **changes)


def test_cuda_device_order_reaches_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA_VISIBLE_DEVICES is passed, and its numbers mean what CUDA_DEVICE_ORDER says."""
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env = server_env({})
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert "CUDA_DEVICE_ORDER" in ENV_ALLOW


def test_validate_names_every_dropped_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in DROPPED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # passed: not named
    servers = {**PLAN["servers"], "baseline": {**PLAN["servers"]["baseline"], "env": {"OMP_NUM_THREADS": "3"}}}
    plan = _small(tmp_path, servers=servers)
    p = invoke("validate", plan)
    assert p.returncode == 0, p.stderr
    named = dict(
        re.findall(r"^warning: (\S+) is set here but not passed to the servers.*to (.*) in the plan$", p.stderr, re.M)
    )
    assert set(named) == set(DROPPED), p.stderr
    assert named["OMP_NUM_THREADS"] == "servers.candidate.env"  # the baseline gets it from the plan
    assert named["GGML_CUDA_NO_PINNED"] == "servers.baseline.env and servers.candidate.env"
    assert 'add MKL_NUM_THREADS: "2" to' in p.stderr
    assert "warning:" not in p.stdout


@pytest.mark.slow
def test_run_names_dropped_variables_and_records_what_the_server_got(tmp_path: Path) -> None:
    import os

    plan = _small(tmp_path / "plan")
    env = {**os.environ, "OMP_NUM_THREADS": "3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "GGML_SCHED_MAX_COPIES": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "parval", "run", str(plan), "--out", str(tmp_path / "run"), "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert p.returncode in (1, 3), p.stderr
    assert "warning: OMP_NUM_THREADS is set here but not passed" in p.stderr
    assert "warning: GGML_SCHED_MAX_COPIES is set here but not passed" in p.stderr
    starts = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    starts = [e for e in starts if e["kind"] == "run_start"]
    assert starts
    expected = sorted({k for k in env if k in ENV_ALLOW} | {"AUDIOCPP_SLOT_VALIDATION_OBSERVER"})
    for e in starts:
        assert e["env"] == expected, e["run"]
        assert "CUDA_DEVICE_ORDER" in e["env"] and "OMP_NUM_THREADS" not in e["env"]


def _cuda(directory: Path, device: int, nvml_index: int) -> Path:
    return _small(
        directory,
        server={"backend": "cuda", "device": device, "threads": 1},
        memory={"gpu_required": False, "nvml_device_index": nvml_index},
    )


@pytest.mark.parametrize(
    ("visible", "order", "device", "nvml_index", "says"),
    [
        ("2,3", "PCI_BUS_ID", 1, 0, "is the GPU NVML numbers 3, but memory.nvml_device_index is 0"),
        ("2,3", "PCI_BUS_ID", 1, 3, None),
        ("2,3", None, 1, 0, "set it to 3 (and set CUDA_DEVICE_ORDER=PCI_BUS_ID"),
        ("0,1", "PCI_BUS_ID", 2, 0, "server.device 2 is not among the 2 GPU(s)"),
        (None, "PCI_BUS_ID", 1, 0, "server.device 1 is CUDA's GPU 1"),
        (None, "PCI_BUS_ID", 1, 1, None),
    ],
)
def test_validate_warns_when_the_cuda_device_is_not_the_gpu_nvml_reads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    visible: str | None,
    order: str | None,
    device: int,
    nvml_index: int,
    says: str | None,
) -> None:
    for name, value in (("CUDA_VISIBLE_DEVICES", visible), ("CUDA_DEVICE_ORDER", order)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    p = invoke("validate", _cuda(tmp_path, device, nvml_index))
    assert p.returncode == 0, p.stderr
    gpu = [line for line in p.stderr.splitlines() if "server.device" in line]
    if says is None:
        assert gpu == [], p.stderr
    else:
        assert len(gpu) == 1 and says in gpu[0], p.stderr


def test_validate_resolves_a_gpu_uuid_through_nvml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA_VISIBLE_DEVICES naming GPUs by UUID (prefix): NVML says which index that is."""
    uuids = ["GPU-aaaa-0000", "GPU-bbbb-1111", "GPU-cccc-2222"]
    fake = types.ModuleType("pynvml")
    fake.NVMLError = type("NVMLError", (Exception,), {})  # type: ignore[attr-defined]
    fake.nvmlInit = lambda: None  # type: ignore[attr-defined]
    fake.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    fake.nvmlDeviceGetCount = lambda: len(uuids)  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    fake.nvmlDeviceGetUUID = lambda h: uuids[h].encode()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc,GPU-aaaa")
    p = invoke("validate", _cuda(tmp_path / "a", 0, 0))
    assert "is the GPU NVML numbers 2, but memory.nvml_device_index is 0" in p.stderr, p.stderr
    p = invoke("validate", _cuda(tmp_path / "b", 1, 0))
    assert "server.device" not in p.stderr, p.stderr


def test_validate_bounds_the_campaign_time(tmp_path: Path) -> None:
    p = invoke("validate", REPO / "plans" / "demo.yaml")
    assert "time: at most 15.0 min (timeouts.campaign_s 900 s)" in p.stdout, p.stdout
    assert "--like RUN" in p.stdout
    short = _small(tmp_path, timeouts={**PLAN["timeouts"], "start_s": 30, "campaign_s": 3600})
    starts = int(re.findall(r"^total\s+(\d+)", invoke("validate", short).stdout, re.M)[0])
    assert (
        f"time: at most {starts * 30 / 60:.1f} min ({starts} starts x timeouts.start_s 30 s)"
        in invoke("validate", short).stdout
    )


@pytest.mark.slow
def test_validate_like_scales_an_earlier_run(tmp_path: Path) -> None:
    plan = _small(tmp_path / "small")
    run = tmp_path / "run"
    p = parval("run", plan, "--out", run, "-q", timeout=180)
    assert p.returncode in (1, 3), p.stderr
    wall = sum(
        e["elapsed_s"]
        for e in map(json.loads, (run / "events.jsonl").read_text().splitlines())
        if e["kind"] == "campaign_end"
    )

    def about(plan: Path) -> float:
        v = invoke("validate", plan, "--like", run)
        assert v.returncode == 0, v.stderr
        (line,) = [x for x in v.stdout.splitlines() if x.startswith("time: about ")]
        value, unit = re.match(r"time: about ([\d.]+) (s|min|h),", line).groups()  # type: ignore[union-attr]
        return float(value) * {"s": 1, "min": 60, "h": 3600}[unit]

    # its own plan: the run's time (starts and requests counted as the schedule counts them)
    assert about(plan) == pytest.approx(wall, abs=1.0)
    # three times the starts and more requests: longer, in proportion
    bigger = write_plan(tmp_path / "bigger", counts=[1, 2], starts_per_count=3)
    assert 1.5 * wall < about(bigger) < 6 * wall
    other = write_plan(
        tmp_path / "other", counts=[1], starts_per_count=1, model={**PLAN["model"], "id": "another-model"}
    )
    assert (
        "tested model ux-tts on backend cpu, this plan another-model on cpu"
        in invoke("validate", other, "--like", run).stderr
    )
    bad = invoke("validate", plan, "--like", tmp_path)
    assert bad.returncode == 2 and "not a run directory" in bad.stderr


BLOCKER = """
import importlib.abc, sys
DEV = {"hypothesis", "mypy", "ruff", "mutmut", "pytest", "_pytest", "xdist", "markdown", "matplotlib",
       "check_jsonschema", "actionlint"}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in DEV:
            raise ImportError(f"{name} is a dev-only package: `pip install -e .` does not install it")
        return None
sys.meta_path.insert(0, Blocker())
from parval.cli import main
sys.exit(main())
"""


@pytest.mark.slow
def test_the_demo_needs_no_dev_package(tmp_path: Path) -> None:
    """`pip install -e .` (no extra) is enough for `parval run` and `parval report`: a runtime
    module importing pytest, hypothesis, mypy, ruff, mutmut, markdown or matplotlib fails here."""
    plan = _small(tmp_path / "plan")

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", BLOCKER, *map(str, args)], capture_output=True, text=True, timeout=180, check=False
        )

    p = run("run", plan, "--out", tmp_path / "run")
    assert p.returncode in (1, 3), p.stderr
    assert "dev-only" not in p.stderr and "Traceback" not in p.stderr
    for fmt in ("md", "json", "junit"):
        r = run("report", tmp_path / "run", "--format", fmt, "--output", tmp_path / f"report.{fmt}")
        assert r.returncode in (1, 3) and "dev-only" not in r.stderr, r.stderr
    assert run("validate", REPO / "plans" / "demo.yaml").returncode == 0
