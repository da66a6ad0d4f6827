"""Merging refuses runs whose plans differ in what changes outputs or how they are judged,
and keeps local and CI evidence apart; shards of one plan still merge. Synthetic run
directories (manifest.json, plan.json, evidence.json), no campaign."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from parval import PROCEDURE_VERSION
from parval.report.merge import PLAN_FIELDS, LoadedRun, MergeRefused, merge_evidence
from tests.closed_list_kit import complete, passing
from tests.records_kit import seal

PLAN: dict[str, Any] = {
    "schema_version": 1,
    "name": "synthetic",
    "servers": {"baseline": {"executable": "base", "args": []}, "candidate": {"executable": "cand", "args": []}},
    "server": {"backend": "cpu", "threads": 1, "device": 0, "extra_config": {}},
    "model": {
        "id": "m",
        "family": "f",
        "task": "tts",
        "mode": "offline",
        "path": "m.bin",
        "quantization": None,
        "lazy": True,
        "load_options": {"capacity": 4},
        "session_options": {},
        "default_request_options": {},
        "entry_extra": {},
        "cache_sensitive": False,
    },
    "counts": [1, 2],
    "requests": {"base": {"text": "hello", "seed": 1}, "variations": [], "invalid": {"text": "x"}},
    "compare": {
        "volatile_fields": [{"path": "timing", "justification": "wall time"}],
        "tolerance": None,
        "quality_settings": [],
    },
}


def _manifest(provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {
        "procedure_version": PROCEDURE_VERSION,
        "executables": {"baseline": {"sha256": "b" * 64}, "candidate": {"sha256": "c" * 64}},
        "model": {"id": "m", "sha256": "d" * 64, "auxiliary": {}},
        "fixtures": {},
        "platform": {"backend": "cpu"},
    }
    if provenance is not None:
        m["provenance"] = provenance
    return m


def _evidence(shard: list[int] | None, counts: tuple[int, ...] = (1, 2)) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "schema_version": 1,
        "procedure_version": PROCEDURE_VERSION,
        "generated_at": "t",
        "run": {"plan": "p.yaml", "plan_sha256": "p" * 64, "interrupted": False, "shard": shard},
        "identity": {
            "model": "m",
            "family": "f",
            "task": "tts",
            "mode": "offline",
            "backend": "cpu",
            "candidate_sha256": "c" * 64,
        },
        "verdict": {"line": "x", "exit_code": 3, "admitted_counts": [], "counts": {}},
        "assertions": [],
        "model_checks": {
            "per_count": {str(n): {"assertions": [passing("M2.exact", n)]} for n in counts},
            "model_level": [passing("M1.manifest")],
        },
        "framework_checks": {"status": "PASS", "results": [passing("F1.fifo"), passing("X4")]},
        "performance": {},
    }
    return complete(ev)


def _run(
    root: Path,
    name: str,
    plan: dict[str, Any],
    shard: list[int] | None = None,
    provenance: dict[str, Any] | None = None,
    counts: tuple[int, ...] = (1, 2),
) -> LoadedRun:
    d = root / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(_manifest(provenance)))
    (d / "plan.json").write_text(json.dumps(plan))
    ev = _evidence(shard, counts)
    (d / "evidence.json").write_text(json.dumps(ev))
    seal(d)  # as a judged run directory is: readers verify it first
    return LoadedRun(d, ev)


def _set(plan: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(plan)
    node = out
    *parents, last = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return out


def test_shards_of_one_plan_merge(tmp_path: Path) -> None:
    one = _run(tmp_path, "s1", PLAN, [1, 2])
    two = _run(tmp_path, "s2", PLAN, [2, 2])
    merged = merge_evidence([one, two])
    assert merged["verdict"]["counts"] == {"1": "PASS", "2": "PASS"}
    assert merged["verdict"]["admitted_counts"] == [1, 2]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model.load_options", {"capacity": 4, "beam": 5}),
        ("model.session_options", {"n_ctx": 512}),
        ("model.quantization", "q4_0"),
        ("requests", {"base": {"text": "hello", "seed": 2}, "variations": [], "invalid": {"text": "x"}}),
        ("compare.volatile_fields", [{"path": "words", "justification": "assumed to vary"}]),
        ("compare.tolerance", {"pcm_max_abs": 0.01}),
        ("server.threads", 8),
        # how memory, variations and modes are judged differ too
        ("memory", {"stabilisation": {"last_k_waves": 3, "max_growth_mib": 1.0}}),
        ("model.variation_kinds", ["seed"]),
        ("model.admit_modes", ["offline", "batch"]),
        # the servers' environment: GGML_* settings and fault switches change their outputs
        ("servers.candidate.env", {"GGML_CUDA_FORCE_MMQ": "1"}),
        ("servers.baseline.env", {"PARVAL_STANDIN_FAULTS": "mismatch_at_2"}),
    ],
)
def test_plans_that_differ_in_what_changes_outputs_are_refused(tmp_path: Path, field: str, value: Any) -> None:
    assert field in PLAN_FIELDS
    one = _run(tmp_path, "a", PLAN, [1, 2])
    two = _run(tmp_path, "b", _set(PLAN, field, value), [2, 2])
    with pytest.raises(MergeRefused) as exc:
        merge_evidence([one, two])
    assert f"their plans disagree on {field}" in exc.value.message
    assert exc.value.exit_code == 2


def test_a_field_present_in_one_plan_only_is_refused(tmp_path: Path) -> None:
    pinned = _set(PLAN, "identity", {"candidate": {"source_commit": "1" * 40}})
    with pytest.raises(MergeRefused, match="disagree on identity"):
        merge_evidence([_run(tmp_path, "a", PLAN), _run(tmp_path, "b", pinned)])


def test_a_run_without_its_plan_snapshot_is_refused(tmp_path: Path) -> None:
    one = _run(tmp_path, "a", PLAN, [1, 2])
    two = _run(tmp_path, "b", PLAN, [2, 2])
    (two.dir / "plan.json").unlink()
    with pytest.raises(MergeRefused, match="no readable plan.json"):
        merge_evidence([one, LoadedRun(two.dir, two.ev)])


def test_counts_and_waves_may_differ_between_merged_runs(tmp_path: Path) -> None:
    """What a run covers is not what it outputs: the plan counts are a union by count."""
    other = _set(_set(PLAN, "counts", [2, 3]), "waves", {"warm": 5})
    one, two = _run(tmp_path, "a", PLAN), _run(tmp_path, "b", other, counts=(2, 3))
    merged = merge_evidence([one, two])
    # Count 1 only from a, count 3 only from b, count 2 from both.
    assert merged["run"]["count_sources"] == {
        "1": [str(one.dir)],
        "2": [str(one.dir), str(two.dir)],
        "3": [str(two.dir)],
    }
    assert merged["verdict"]["counts"] == {"1": "PASS", "2": "PASS", "3": "PASS"}
    assert merged["verdict"]["admitted_counts"] == [1, 2, 3]
    assert [m["counts"] for m in merged["merged_from"]] == [[1, 2], [2, 3]]


def test_local_and_ci_runs_are_kept_apart(tmp_path: Path) -> None:
    local = {"kind": "local", "service": None, "details": {}}
    ci = {"kind": "ci", "service": "github-actions", "details": {"GITHUB_RUN_ID": "7"}}
    with pytest.raises(MergeRefused, match="disagree on provenance"):
        merge_evidence([_run(tmp_path, "a", PLAN, [1, 2], local), _run(tmp_path, "b", PLAN, [2, 2], ci)])
    merged = merge_evidence([_run(tmp_path, "c", PLAN, [1, 2], ci), _run(tmp_path, "d", PLAN, [2, 2], ci)])
    assert merged["run"]["provenance"] == ci
    assert [m["provenance"] for m in merged["merged_from"]] == [ci, ci]


def test_framework_entries_scoped_to_a_count_stay_scoped_in_a_merge(tmp_path: Path) -> None:
    """A shard whose record does not cover its count keeps that count unadmitted."""
    one = _run(tmp_path, "a", PLAN, [1, 2])
    two = _run(tmp_path, "b", PLAN, [2, 2])
    scoped = {**passing("F1.fifo", 2), "status": "PENDING", "reason": "record does not cover count 2"}
    two.ev["framework_checks"]["results"].append(scoped)
    merged = merge_evidence([one, two])
    assert merged["verdict"]["counts"] == {"1": "PASS", "2": "PENDING"}
    assert merged["verdict"]["admitted_counts"] == [1] and merged["admission_ready"] is False
    fifo = [r for r in merged["framework_checks"]["results"] if r["id"] == "F1.fifo"]
    assert sorted((r.get("count"), r["status"]) for r in fifo if r.get("count")) == [(2, "PENDING")]


def test_the_report_command_refuses_with_exit_2_naming_the_field(tmp_path: Path) -> None:
    from .kit import invoke

    one = _run(tmp_path, "a", PLAN, [1, 2])
    two = _run(tmp_path, "b", _set(PLAN, "compare.tolerance", {"pcm_max_abs": 0.5}), [2, 2])
    p = invoke("report", one.dir, two.dir)
    assert p.returncode == 2 and "their plans disagree on compare.tolerance" in p.stderr
    assert "Traceback" not in p.stderr
