"""M1.manifest names every item of the procedure's manifest that is missing (PENDING),
and passes only when all of them are recorded."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from parval.gates.m1_baseline import m1_manifest
from parval.plan.load import load_plan
from parval.rundir.manifest import build_manifest
from parval.status import Status
from tests.gates.m_events import Events, plan, tts_body

ROOT = Path(__file__).resolve().parents[2]
SERIAL = (Status.PASS, "serial outputs identical", {})

FULL: dict[str, Any] = {
    "plan": {"path": "plan.yaml", "sha256": "p" * 64, "name": "t"},
    "executables": {"baseline": {"sha256": "b" * 64}, "candidate": {"sha256": "c" * 64}},
    "model": {"id": "m", "task": "tts", "mode": "offline", "quantization": "", "sha256": "m" * 64, "auxiliary": {}},
    "fixtures": {},
    "requests": {"base": {"text": "hello", "seed": 1}},
    "settings": {"counts": [1, 2]},
    "identity": {
        "baseline": {"source_commit": "612c5e9f", "build_flags": "-DGGML_CUDA=ON"},
        "candidate": {"source_commit": "7a1b2c3d", "build_flags": "-DGGML_CUDA=ON"},
        "quantization": "q8_0",
    },
    "platform": {"os": "Linux-6.1", "backend": "cuda", "device": 0, "driver": "NVRM 550.54", "threads": 4},
}


def manifest_result(
    tmp_path: Path, manifest: dict[str, Any], *, refs: bool = True, p: dict[str, Any] | None = None
) -> Any:
    ev = Events(tmp_path)
    p = p or plan()
    if refs:
        ev.start("ref-baseline-a", role="reference")
        names = ["base", *(v["name"] for v in p["requests"].get("variations", []))]
        for name in names:
            for phase in ("ref_cold", "ref_warm", "ref_warm2"):
                ev.request("ref-baseline-a", phase, 0, name, tts_body(1))
        ev.end("ref-baseline-a")
    ctx = ev.context(p, manifest)
    return m1_manifest(ctx, SERIAL)


def test_complete_manifest_passes(tmp_path: Path) -> None:
    r = manifest_result(tmp_path, FULL)
    assert r.status is Status.PASS, r.reason


def test_the_five_fields_of_old_are_not_enough(tmp_path: Path) -> None:
    # Executables, model, OS and plan hashed, but no source commits, build flags,
    # quantization, driver or threads: not a complete identification.
    old = {k: copy.deepcopy(FULL[k]) for k in ("plan", "executables", "model", "fixtures", "requests", "settings")}
    old["platform"] = {"os": "Linux-6.1", "backend": "cpu", "device": 0}
    r = manifest_result(tmp_path, old)
    assert r.status is Status.PENDING
    for item in (
        "identity.baseline.source_commit",
        "identity.candidate.source_commit",
        "identity.baseline.build_flags",
        "identity.candidate.build_flags",
        "identity.quantization",
        "platform.driver",
        "platform.threads",
    ):
        assert item in r.reason, (item, r.reason)
    assert "platform.os" not in r.reason and "model.sha256" not in r.reason


def test_each_missing_item_is_named(tmp_path: Path) -> None:
    for path, named in (
        ("executables.candidate.sha256", "candidate executable hash"),
        ("model.sha256", "checkpoint hash"),
        ("identity.candidate.source_commit", "candidate source commit"),
        ("platform.driver", "driver"),
    ):
        m = copy.deepcopy(FULL)
        node = m
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = None
        r = manifest_result(tmp_path, m)
        assert r.status is Status.PENDING and path in r.reason and named in r.reason, r.reason


def test_unhashed_auxiliary_file_and_no_references(tmp_path: Path) -> None:
    r = manifest_result(tmp_path, FULL, p=plan(auxiliary_files=["voices/a.wav"]))
    assert r.status is Status.PENDING and "model.auxiliary (0 of 1" in r.reason
    r = manifest_result(tmp_path, FULL, refs=False)
    assert r.status is Status.PENDING and "references" in r.reason


def test_demo_manifest_records_identity_and_names_only_what_it_lacks(tmp_path: Path) -> None:
    demo = load_plan(ROOT / "plans" / "demo.yaml")
    m = build_manifest(demo)
    assert m["identity"]["quantization"] == "none"
    assert m["identity"]["candidate"]["build_flags"].startswith("none")
    assert m["platform"]["driver"] == "not applicable (cpu backend)"
    assert m["platform"]["threads"] == 1
    r = manifest_result(tmp_path, m, p=demo.raw)
    # The demo cannot know the stand-in's source commit: pending, naming just that.
    assert r.status is Status.PENDING
    assert r.evidence["missing"] == [
        "identity.baseline.source_commit (baseline source commit; declare it in the plan)",
        "identity.candidate.source_commit (candidate source commit; declare it in the plan)",
    ]
