"""Real scale-out: the demo plan as a catalogue claim split into three shards, submitted as
the array job `parval catalogue slurm` writes to a real single-node Slurm (munged,
slurmctld, slurmd; `slurm_cluster.py`), one shard per task on the node's one GPU resource,
then the dependent merge job's disclosure. Its merged verdict must be the unsharded run's.
Skips, naming why, where Slurm is not installed or does not start."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .kit import PARVAL, REPO, build, parval, write_catalogue, write_records
from .slurm_cluster import Cluster, start_cluster

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    got = start_cluster(tmp_path / "slurm")
    if isinstance(got, str):
        pytest.skip(got)
    try:
        yield got
    finally:
        got.stop()


def _statuses(ev: dict[str, Any]) -> dict[str, str]:
    return {a["id"]: a["status"] for a in ev["assertions"]}


@pytest.mark.timeout(1800)
def test_the_generated_array_job_merges_to_the_unsharded_verdict(tmp_path: Path, cluster: Cluster) -> None:
    t0 = time.monotonic()
    work = tmp_path / "work"
    records = write_records(work)
    claim = {"name": "demo", "plan": str(REPO / "plans" / "demo.yaml"), "backends": ["cpu"], "shards": 3}
    catalogue = write_catalogue(work / "catalogue.yaml", [claim], {"cpu": build(records=records)}, name="slurmdemo")

    # The unsharded run, on this machine.
    local = parval("catalogue", "run", catalogue, "--out", work / "local", timeout=900)
    assert local.returncode in (0, 1, 3), local.stderr
    full = json.loads((work / "local" / "demo.cpu.offline" / "evidence.json").read_text())

    # The generated job file, submitted from the work folder the way a user would: `bash FILE`.
    gen = parval(
        "catalogue", "slurm", "catalogue.yaml", "--out", "runs", "--parval", PARVAL, "-o", "job.sbatch", cwd=work
    )
    assert gen.returncode == 0, gen.stderr
    script = (work / "job.sbatch").read_text()
    assert "#SBATCH --array=1-3" in script and "#SBATCH --gres=gpu:1" in script
    submitted = cluster.run("bash", "job.sbatch", cwd=work)
    assert submitted.returncode == 0, submitted.stderr + cluster.logs()
    words = submitted.stdout.split()
    array_id, merge_id = words[words.index("job") + 1], words[-1]
    assert cluster.wait_job(merge_id, timeout=1500) == "COMPLETED" or (work / "runs" / "claims.json").exists(), (
        cluster.logs()
    )
    assert cluster.job_state(f"{array_id}_1") == "COMPLETED", cluster.logs()

    shards = sorted(p.name for p in (work / "runs").iterdir() if p.is_dir())
    assert shards == [f"demo.cpu.offline.shard{i}of3" for i in (1, 2, 3)]
    for i in (1, 2, 3):
        assert (work / "runs" / f"slurm-{array_id}_{i}.log").exists()
    claims = json.loads((work / "runs" / "claims.json").read_text())
    (combo,) = claims["combinations"]
    assert combo["evidence"]["merged"] is True and len(combo["evidence"]["runs"]) == 3
    merged = combo["evidence"]["verdict"]
    for key in ("admitted_counts", "counts", "exit_code"):
        assert merged[key] == full["verdict"][key], (key, merged, full["verdict"])
    assert combo["evidence"]["admission_ready"] is full["admission_ready"]
    # The whole record, assertion by assertion, as `parval report` merges the three shards.
    report = parval("report", *(work / "runs" / s for s in shards), "--format", "json")
    assert _statuses(json.loads(report.stdout)) == _statuses(full)
    assert (work / "runs" / "claims.md").read_text().startswith("**parval claims: ")
    assert (work / "runs" / "claims.xml").exists()
    print(f"\nslurm scale-out test: {time.monotonic() - t0:.0f} s (verdict: {full['verdict']['line']})")
