"""Clean stand-in campaigns recorded once and checked in (tests/attack/clean-runs.tar.xz):
the evidence the attack tests take apart. Every model-gate assertion that can PASS on the
stand-in PASSes on one of them (the stateless run: modes, memory baseline; the
cache-sensitive run: same-history references).

Regenerate after a change to what the campaign records:

    .venv/bin/python -m tests.attack.clean_runs

(about a minute per run on two cores). A slow test checks that a fresh recording still
gives the checked-in runs' verdicts."""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE / "clean-runs.tar.xz"
RUNS = ("stateless", "cache_sensitive")


def plan(kind: str, directory: Path) -> dict[str, Any]:
    from tests.campaign.helpers import plan_dict

    text = "Hi"
    p = plan_dict(directory, counts=[1, 2], ten=10, warm=1, cache_sensitive=kind == "cache_sensitive")
    p["model"]["load_options"].update(capacity=2, service_ms=60, load_ms=40, sample_rate=1000)
    p["requests"] = {
        "base": {"text": text, "seed": 7},
        "variations": [
            {"name": "longer", "changes": "text", "request": {"text": text + " there, longer", "seed": 7}},
            {"name": "seed", "changes": "seed", "request": {"text": text, "seed": 8}},
        ],
        "invalid": {"text": "x", "max_tokens": -1},
    }
    p["waves"]["serial_reuse"] = 1
    p["memory"] = {
        "gpu_required": False,
        "host_interval_ms": 50,
        "stabilisation": {"last_k_waves": 3, "max_growth_mib": 64},
    }
    p["performance"] = {"enabled": False}
    if kind == "stateless":
        # native batching needs an offline model; the memory comparison with the baseline build
        p["model"]["admit_modes"] = ["offline", "batch"]
        p["model"]["load_options"]["native_batch"] = True
        p["memory"]["baseline_comparison"] = {"reason": "retention after unload, compared with upstream"}
    else:
        # the stand-in streams speech for mode=streaming models; two warm waves give the
        # same-history references of the warmed slots' streams
        p["model"].update(mode="streaming", admit_modes=["offline", "streaming"])
        p["waves"]["warm"] = 2
    return p


def record(kind: str, directory: Path) -> Path:
    """Run the campaign into directory/<kind> and strip what no judge reads."""
    import yaml

    from parval import api
    from parval.plan.load import load_plan

    work = directory / kind
    work.mkdir(parents=True, exist_ok=True)
    path = work / "plan.yaml"
    path.write_text(yaml.safe_dump(plan(kind, work)))
    api.run_plan(load_plan(path), out=work / "run")
    run = work / "run"
    for status in run.glob("servers/*/status.jsonl"):
        status.unlink()
    for name in ("report.md",):
        (run / name).unlink(missing_ok=True)
    for png in run.glob("*.png"):
        png.unlink()
    return run


def main(argv: list[str]) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for kind in RUNS:
            record(kind, root)
        with tarfile.open(ARCHIVE, "w:xz") as tar:
            for kind in RUNS:
                tar.add(root / kind, arcname=kind)
    print(f"wrote {ARCHIVE} ({ARCHIVE.stat().st_size // 1024} KiB)")
    return 0


def extract(target: Path) -> dict[str, Path]:
    """Unpack the checked-in runs under `target`: kind -> run directory.

    Each run's manifest names the plan where it was recorded; it is pointed at the unpacked
    plan, so the framework record and the X4 result beside it are the ones found
    (`framework_record_dir`). A framework record is used only inside its sealed run
    directory: runs recorded with a sealed record directory (`framework`) keep it as it is,
    and an older recording's one-file record (`framework.json`, as its plan names it) is
    unpacked as one. A model run trusts a record only when it names the device, driver and
    GPUs the run names: such an older synthetic record (tests.records_kit) gets the ones
    records_kit gives a record now where it names none."""
    import json

    from tests.records_kit import framework_record, write_record_dir

    with tarfile.open(ARCHIVE, "r:xz") as tar:
        tar.extractall(target, filter="data")
    for kind in RUNS:
        manifest_path = target / kind / "run" / "manifest.json"
        manifest = json.loads(manifest_path.read_text("utf-8"))
        manifest["plan"]["path"] = str(target / kind / "plan.yaml")
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        record_path = target / kind / "framework.json"
        if record_path.is_file():
            record = json.loads(record_path.read_text("utf-8"))
            named = framework_record("", backend=str(record["identity"].get("backend")))["identity"]
            for key in ("device", "driver", "gpu"):
                if key in named:
                    record["identity"].setdefault(key, named[key])
            record_path.unlink()
            write_record_dir(record_path, record)
    return {kind: target / kind / "run" for kind in RUNS}


def framework_record_dir(run_dir: Path) -> Path:
    """The framework record directory beside a run unpacked by `extract`, as its plan names it."""
    import yaml

    plan = yaml.safe_load((run_dir.parent / "plan.yaml").read_text("utf-8"))
    return run_dir.parent / str(plan["framework"]["record"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

__all__ = ["extract", "framework_record_dir", "plan", "record", "shutil"]
