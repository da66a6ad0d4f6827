"""`parval verify` and `parval report` against modified run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from parval.judge import judge_run
from parval.rundir.files import sha256_file
from parval.rundir.integrity import IntegrityError, chain_problems, verify_problems

from .conftest import load_evidence, parval


def _flip(path: Path, offset: int | None = None) -> None:
    raw = bytearray(path.read_bytes())
    i = len(raw) // 2 if offset is None else offset
    raw[i] ^= 0x01
    path.write_bytes(bytes(raw))


def test_clean_run_verifies(complete_run: Path) -> None:
    proc = parval("verify", complete_run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK")
    assert "sealed" in proc.stdout


def test_evidence_records_the_hash_of_the_events_it_was_judged_from(complete_run: Path) -> None:
    ev = load_evidence(complete_run)
    assert ev["run"]["events_sha256"] == sha256_file(complete_run / "events.jsonl")
    assert ev["run"]["manifest_sha256"] == sha256_file(complete_run / "manifest.json")
    assert ev["run"]["files_sha256"] == sha256_file(complete_run / "files.sha256")


def test_one_flipped_byte_in_any_file_is_named(run_copy: Path) -> None:
    """Every file of the run (artifacts, logs, samples, events, manifest, plan copies,
    evidence, report, listing, chain): flip one byte, verify names it, flip it back."""
    files = sorted(p for p in run_copy.rglob("*") if p.is_file() and p.stat().st_size > 0)
    assert len(files) > 20
    names = {p.relative_to(run_copy).as_posix() for p in files}
    assert {"events.jsonl", "manifest.json", "evidence.json", "report.md", "files.sha256", "chain.jsonl"} <= names
    assert any(n.startswith("artifacts/") for n in names)
    missed = []
    for p in files:
        rel = p.relative_to(run_copy).as_posix()
        _flip(p)
        problems, _ = verify_problems(run_copy)
        if not any(rel in msg or p.name in msg for msg in problems) and not (
            rel in ("files.sha256", "chain.jsonl") and problems
        ):
            missed.append(rel)
        _flip(p)
    assert not missed, f"flipped byte not detected in: {missed}"
    assert verify_problems(run_copy)[0] == []


@pytest.mark.parametrize("rel", ["events.jsonl", "manifest.json", "artifacts"])
def test_cli_verify_exit_1_names_the_modified_file(run_copy: Path, rel: str) -> None:
    target = run_copy / rel
    if target.is_dir():
        target = sorted(target.iterdir())[0]
    _flip(target, 5)
    proc = parval("verify", run_copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"modified: {target.relative_to(run_copy).as_posix()}" in proc.stdout
    assert "TAMPERED" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_missing_and_added_files_are_named(run_copy: Path) -> None:
    log = sorted((run_copy / "servers").rglob("stderr.log"))[0]
    log.unlink()
    (run_copy / "servers" / "extra.txt").write_text("not from the run\n")
    problems, _ = verify_problems(run_copy)
    assert f"missing: {log.relative_to(run_copy).as_posix()}" in problems
    assert "added: servers/extra.txt" in problems


def test_verify_exit_2_for_something_that_is_not_a_run(tmp_path: Path) -> None:
    proc = parval("verify", tmp_path)
    assert proc.returncode == 2 and "not a parval run directory" in proc.stderr
    proc = parval("verify", tmp_path / "nope")
    assert proc.returncode == 2 and "no such run directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_refuses_to_present_a_tampered_run_as_valid(run_copy: Path) -> None:
    ok = parval("report", run_copy, "--format", "json")
    assert ok.returncode in (0, 1, 3) and "INVALID" not in ok.stdout
    # Rewrite a recorded output (as someone "fixing" a mismatch would) in events.jsonl.
    raw = (run_copy / "events.jsonl").read_text()
    lines = raw.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if '"kind":"request"' in line)
    event = json.loads(lines[i])
    event["reply"]["status"] = 201
    lines[i] = json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n"
    (run_copy / "events.jsonl").write_text("".join(lines))
    bad = parval("report", run_copy)
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert bad.stdout == "" and "modified: events.jsonl" in bad.stderr and "refused" in bad.stderr
    # Re-judging does not launder it: the run is refused, not re-certified.
    rejudged = parval("report", run_copy, "--rejudge")
    assert rejudged.returncode == 2, rejudged.stdout + rejudged.stderr
    assert "modified" in rejudged.stderr and "Traceback" not in rejudged.stderr
    with pytest.raises(IntegrityError):
        judge_run(run_copy)


def test_a_report_says_the_run_was_verified(run_copy: Path) -> None:
    md = parval("report", run_copy)
    assert md.returncode in (0, 1, 3) and "Integrity verified:" in md.stdout


def test_deleting_the_listing_and_chain_does_not_let_a_reader_reseal(run_copy: Path) -> None:
    """Deleting files.sha256 and chain.jsonl once let the next judging write a fresh listing,
    after which `parval verify` reported nothing."""
    raw = (run_copy / "events.jsonl").read_text().replace('"status":200', '"status":201', 1)
    (run_copy / "events.jsonl").write_text(raw)
    (run_copy / "files.sha256").unlink()
    (run_copy / "chain.jsonl").unlink()
    for args in (("report", run_copy), ("report", run_copy, "--rejudge")):
        proc = parval(*args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "sealed once" in proc.stderr and "--reseal" in proc.stderr
    assert not (run_copy / "files.sha256").exists()
    with pytest.raises(IntegrityError, match="sealed once"):
        judge_run(run_copy)
    # Resealing is an explicit, recorded action, and every later reader says so.
    assert parval("verify", run_copy, "--reseal").returncode == 2  # no reason given
    sealed = parval("verify", run_copy, "--reseal", "--reason", "restored from a backup")
    assert sealed.returncode == 0 and "RESEALED" in sealed.stdout and "missing: files.sha256" in sealed.stdout
    again = parval("report", run_copy, "--rejudge")
    assert again.returncode in (0, 1, 3), again.stderr
    assert "resealed explicitly" in again.stdout and "restored from a backup" in again.stdout
    ok = parval("verify", run_copy)
    assert ok.returncode == 0 and "resealed explicitly" in ok.stdout


def test_rejudging_an_unmodified_run_keeps_it_verifiable(run_copy: Path) -> None:
    proc = parval("report", run_copy, "--rejudge", "--format", "json")
    assert proc.returncode in (0, 1, 3) and "INVALID" not in proc.stdout
    assert chain_problems(run_copy) == []
    problems, info = verify_problems(run_copy)
    # The re-judged evidence and its rewritten report are sealed, as after `parval run`.
    assert problems == [] and info["sealed"] is True


def test_a_framework_record_directory_verifies_and_a_changed_record_is_named(tmp_path: Path) -> None:
    """`parval framework` writes record.json (not evidence.json) beside events and manifest."""
    from parval.rundir.integrity import verify_problems, write_listing

    run = tmp_path / "fw"
    run.mkdir()
    (run / "events.jsonl").write_text('{"kind": "framework_start", "seq": 1}\n')
    (run / "manifest.json").write_text('{"schema_version": 1}')
    (run / "record.json").write_text('{"verdict": {"line": "ok"}}')
    write_listing(run, first=True)
    problems, _ = verify_problems(run)
    assert problems == []
    (run / "record.json").write_text('{"verdict": {"line": "admitted"}}')
    problems, _ = verify_problems(run)
    assert any("record.json" in p for p in problems)
    # A model run directory without evidence.json is still incomplete.
    (run / "record.json").unlink()
    problems, _ = verify_problems(run)
    assert "missing: evidence.json" in problems


def test_merges_and_the_catalogue_verify_every_run_first(complete_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    one, two = root / "a", root / "b"
    shutil.copytree(complete_run, one)
    shutil.copytree(complete_run, two)
    assert parval("report", "--catalogue", root).returncode in (0, 1, 3)
    _flip(sorted((two / "artifacts").iterdir())[0], 3)
    merged = parval("report", one, two)
    assert merged.returncode == 2 and merged.stdout == ""
    assert str(two) in merged.stderr and "modified: artifacts/" in merged.stderr
    listing = parval("report", "--catalogue", root)
    assert listing.returncode == 2 and str(two) in listing.stderr and "modified: artifacts/" in listing.stderr


def test_a_model_run_refuses_a_modified_framework_record_up_front(tmp_path: Path) -> None:
    from tests.conftest import write_plan
    from tests.records_kit import framework_record, write_record_dir

    d = write_record_dir(tmp_path / "fw", framework_record("a" * 64))
    (d / "record.json").write_text((d / "record.json").read_text().replace('"PASS"', '"FAIL"', 1))
    plan = write_plan(tmp_path / "plan", framework={"record": str(d)})
    proc = parval("run", plan, "--out", tmp_path / "run", "-q")
    assert proc.returncode == 2 and "modified: record.json" in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists()  # refused before any server started
