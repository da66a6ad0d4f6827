"""The catalogue file: its schema, errors that name their place, and the effective plan each
combination runs (no campaign here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from parval.claims.catalogue_file import read_catalogue, relative_to_plan
from parval.claims.combination import load_catalogue
from parval.errors import PlanError
from parval.plan.schemas import load_schema
from tests.conftest import write_plan

from .kit import REPO, STANDIN, build, parval, write_catalogue


def _cat(tmp_path: Path, claims: list[dict[str, Any]], builds: dict[str, Any] | None = None) -> Path:
    write_plan(tmp_path / "plans")
    return write_catalogue(tmp_path / "cat" / "catalogue.yaml", claims, builds or {"cpu": build()})


def _error(path: Path) -> str:
    with pytest.raises(PlanError) as err:
        load_catalogue(path)
    return str(err.value)


def test_the_schema_is_shipped_and_printed() -> None:
    schema = load_schema("catalogue")
    jsonschema.Draft202012Validator.check_schema(schema)
    p = parval("schema", "catalogue")
    assert p.returncode == 0 and json.loads(p.stdout) == schema


def test_the_example_catalogue_validates() -> None:
    p = parval("catalogue", "validate", REPO / "plans" / "catalogue.yaml")
    assert p.returncode == 0, p.stderr
    assert "demo-tts.cpu.offline: model demo-tts" in p.stdout and "2 shards" in p.stdout
    assert "demo-tts-small.cpu.offline: model demo-tts-small" in p.stdout


def test_schema_errors_name_their_place(tmp_path: Path) -> None:
    path = _cat(tmp_path, [{"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu"], "counts": [0]}])
    doc = yaml.safe_load(path.read_text())
    doc["claims"][0]["colour"] = "red"
    path.write_text(yaml.safe_dump(doc))
    text = _error(path)
    assert "catalogue.yaml: claims[0].counts[0]: 0 is less than the minimum of 1" in text
    assert "claims[0]: Additional properties are not allowed ('colour' was unexpected)" in text
    assert "parval schema catalogue" in text


def test_problems_beyond_the_schema_name_their_place(tmp_path: Path) -> None:
    claims = [
        {"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu", "cuda"]},
        {"name": "a", "plan": "../plans/nowhere.yaml", "template": "../plans/plan.yaml", "backends": ["cpu"]},
        {"name": "b", "template": "../plans/plan.yaml", "backends": ["cpu"], "counts": [2, 4]},
    ]
    text = _error(_cat(tmp_path, claims))
    assert "claims[0] (a).backends[1]: no build 'cuda': add builds.cuda.candidate" in text
    assert "claims[1] (a).name: 'a' is also claims[0]'s name" in text
    assert "claims[1] (a): name either a plan or a template (with overrides), not both" in text
    assert "claims[1] (a).plan: '../plans/nowhere.yaml' (relative to the catalogue folder " in text
    assert ") does not exist" in text
    assert "claims[2] (b).overrides: a template needs overrides" in text
    assert "claims[2] (b).counts: must include 1" in text


def test_the_effective_plans_are_checked_like_plans(tmp_path: Path) -> None:
    claims = [
        {"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu"], "shards": 3},
        {"name": "b", "plan": "../plans/plan.yaml", "backends": ["cpu"], "overrides": {"waves": {"warm": -1}}},
    ]
    text = _error(_cat(tmp_path, claims))
    assert "claims[0] (a).shards: 3 shards for 2 count(s)" in text
    assert "claims[1] (b) → b.cpu.offline (plan + overrides): waves.warm: -1 is less than the minimum of 1" in text
    # Two claims of the same model on the same backend and mode contradict each other.
    text = _error(_cat(tmp_path, [claims[0] | {"shards": 1}, {**claims[0], "name": "c", "shards": 1}]))
    assert "c.cpu.offline: model 'small-tts' on cpu/offline is already claimed by a.cpu.offline" in text


def test_the_effective_plan_carries_the_catalogues_decisions(tmp_path: Path) -> None:
    local = tmp_path / "cat" / "bin" / "server"
    local.parent.mkdir(parents=True)
    local.write_text(STANDIN.read_text())
    local.chmod(0o755)
    builds = {
        "cpu": build(records=None),
        "vulkan": build("bin/server", commit="abcdef1", framework={"record": "fw/record.json"}),
    }
    claims = [
        {
            "name": "m",
            "template": "../plans/plan.yaml",
            "overrides": {"model": {"id": "other-id", "load_options": {"capacity": 4}}},
            "backends": ["cpu", "vulkan"],
            "modes": ["offline", "streaming"],
            "counts": [1, 2, 4],
        }
    ]
    cat = load_catalogue(_cat(tmp_path, claims, builds))
    keys = [c.key for c in cat.combinations]
    assert keys == ["m.cpu.offline", "m.cpu.streaming", "m.vulkan.offline", "m.vulkan.streaming"]
    vk = cat.combinations[3]
    data = vk.data
    assert data["name"] == "m.vulkan.streaming" and data["server"]["backend"] == "vulkan"
    assert data["model"]["mode"] == "streaming" and data["model"]["admit_modes"] == ["streaming"]
    # overrides merge key by key: the template's other load options stay
    assert data["model"]["id"] == "other-id"
    assert data["model"]["load_options"] == {"capacity": 4, "service_ms": 40, "load_ms": 20}
    assert data["counts"] == [1, 2, 4]
    # a path relative to the catalogue is re-expressed relative to the plan's folder
    assert data["servers"]["candidate"]["executable"] == "../cat/bin/server"
    assert data["identity"]["candidate"]["source_commit"] == "abcdef1"
    assert data["framework"]["record"] == "../cat/fw/record.json"
    plan = vk.plan(check_files=False)
    assert plan.path == (tmp_path / "plans" / "plan.yaml").resolve()  # relative paths resolve there
    assert plan.model_path == (tmp_path / "plans" / "model.bin").resolve()
    # the text is deterministic: the same catalogue gives the same plan hash
    again = load_catalogue(tmp_path / "cat" / "catalogue.yaml").combinations[3].plan(check_files=False)
    assert again.sha256 == plan.sha256 and yaml.safe_load(vk.text()) == data
    # the candidate on PATH stays a name; a file beside the plan gets "./" (a bare name means PATH)
    assert cat.combinations[0].data["servers"]["candidate"]["executable"] == str(STANDIN)
    assert relative_to_plan("./x", tmp_path / "p", tmp_path / "p") == "./x"
    assert relative_to_plan("parval-standin", tmp_path, tmp_path / "p") == "parval-standin"


def test_two_builds_of_one_backend_are_two_combinations(tmp_path: Path) -> None:
    builds = {"cuda-sm80": {**build(), "backend": "cuda"}, "cuda-sm90": {**build(), "backend": "cuda"}}
    claims = [{"name": "a", "plan": "../plans/plan.yaml", "backends": ["cuda-sm80", "cuda-sm90"]}]
    cat = load_catalogue(_cat(tmp_path, claims, builds))
    assert [(c.key, c.backend) for c in cat.combinations] == [
        ("a.cuda-sm80.offline", "cuda"),
        ("a.cuda-sm90.offline", "cuda"),
    ]
    assert cat.combinations[0].data["server"]["backend"] == "cuda"
    text = _error(_cat(tmp_path, claims, {"cuda-sm80": build(), "cuda-sm90": build()}))
    assert "builds.cuda-sm80.backend: 'cuda-sm80' is not a backend name" in text


def test_select_names_the_unknown_combination(tmp_path: Path) -> None:
    cat = load_catalogue(_cat(tmp_path, [{"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu"]}]))
    assert [c.key for c in cat.select(["a"])] == ["a.cpu.offline"]
    with pytest.raises(PlanError, match="no combination or claim named 'b'"):
        cat.select(["b"])


def test_build_identity_is_declared_or_hashed_here(tmp_path: Path) -> None:
    sha = "a" * 64
    builds = {"cpu": build(), "cuda": build("../nowhere/server"), "hip": build(STANDIN, sha256=sha)}
    builds["hip"]["candidate"]["sha256"] = sha
    claims = [{"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu", "cuda", "hip"]}]
    cat = read_catalogue(
        _cat(tmp_path, claims, {k: {kk: vv for kk, vv in v.items() if kk != "sha256"} for k, v in builds.items()})
    )
    assert len(cat.builds["cpu"].candidate.identity_sha256()) == 64
    with pytest.raises(PlanError, match="is not on this machine, and no sha256 is given"):
        cat.builds["cuda"].candidate.identity_sha256()
    with pytest.raises(PlanError, match="sha256 aaaaaaaaaaaa… is declared, but"):
        cat.builds["hip"].candidate.identity_sha256()
    p = parval("catalogue", "validate", "--no-files", tmp_path / "cat" / "catalogue.yaml")
    assert p.returncode == 2 and "builds.cuda.candidate.executable" in p.stderr


def test_validate_checks_every_plans_files(tmp_path: Path) -> None:
    path = _cat(tmp_path, [{"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu"]}])
    (tmp_path / "plans" / "model.bin").unlink()
    p = parval("catalogue", "validate", path)
    assert p.returncode == 2
    assert "claims[0] (a) → a.cpu.offline: 1 problem(s) with named files" in p.stderr and "model.path" in p.stderr
    assert parval("catalogue", "validate", "--no-files", path).returncode == 0
    # a catalogue handed to `parval validate` says what it is
    v = parval("validate", path)
    assert v.returncode == 2 and "a catalogue, not a plan" in v.stderr and "parval catalogue validate" in v.stderr


def test_run_checks_everything_before_running_anything(tmp_path: Path) -> None:
    claims = [
        {"name": "a", "plan": "../plans/plan.yaml", "backends": ["cpu"]},
        {"name": "b", "template": "../plans/plan.yaml", "overrides": {"model": {"id": "b"}}, "backends": ["cpu"]},
    ]
    path = _cat(tmp_path, claims)
    out = tmp_path / "runs"
    (out / "b.cpu.offline").mkdir(parents=True)
    (out / "b.cpu.offline" / "notes.txt").write_text("not a run")
    p = parval("catalogue", "run", path, "--out", out)
    assert p.returncode == 2 and "b.cpu.offline: exists but is not a parval run directory" in p.stderr
    assert sorted(x.name for x in out.iterdir()) == ["b.cpu.offline"]  # a.cpu.offline was not started
    (tmp_path / "plans" / "model.bin").unlink()
    p = parval("catalogue", "run", path, "--out", out)
    assert p.returncode == 2 and "nothing was run" in p.stderr and "model.path" in p.stderr
