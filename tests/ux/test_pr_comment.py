"""report.md as a pull-request comment: the verdict and its cause on the first screen, no
debugging dump (event bookkeeping, Python reprs, counts named twice), memory charts that a
comment renders (Mermaid, not relative PNG links), and never over GitHub's comment limit."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from parval.report.markdown import render_markdown
from parval.report.render import render_evidence

from .kit import Outcome, parval

if TYPE_CHECKING:
    from parval.report.plots import StartMemory

REPO = Path(__file__).resolve().parents[2]
GITHUB_COMMENT_LIMIT = 65_536

# What reads like a debugging dump: a raw JSON block, event sequence numbers and epoch times,
# Python reprs, the model-level entry called `count None`, a count named twice, a start's
# sequence number called an attempt, the evidence record's key names, relative image links.
INTERNALS = {
    "raw JSON block": re.compile(r"```json"),
    "event sequence number": re.compile(r'"seq"|\| seq \|'),
    "epoch time": re.compile(r'"t": \d{6,}|\| 1[6-9]\d{8}\.\d+ \|'),
    "count None": re.compile(r"count None"),
    "Python repr": re.compile(r"slots=(None|False|True|'[^']*')"),
    "count named twice": re.compile(r"(count \d+): \1:"),
    "attempt number": re.compile(r"\battempt \d+"),
    "evidence keys": re.compile(r"admission_ready|all_plan_rules"),
    "relative image link": re.compile(r"!\[[^]]*\]\((?!https?:)[^)]+\)"),
    "meaningless campaign ratio": re.compile(r"wall/server"),
}


def internals(text: str) -> dict[str, list[str]]:
    return {name: found for name, rx in INTERNALS.items() if (found := [m.group(0) for m in rx.finditer(text)][:3])}


def summaries(text: str) -> list[str]:
    return re.findall(r"<summary>(.*?)</summary>", text)


# -- the demo, as a user first runs it -------------------------------------------------------


@pytest.mark.slow
def test_the_demo_comment_gives_the_verdict_and_its_cause_first(demo: Outcome) -> None:
    text = (demo.dir / "report.md").read_text("utf-8")
    first = text.splitlines()[0]
    if demo.rc == 3:  # a loaded machine can make the stand-in miss a concurrent wave (rc 1)
        assert first.startswith("**parval: evidence collected; validation pending — no framework record")
    # grouped by cause, not the IDs in alphabetical order
    assert "(F1–F6, 24 assertions)" in first, first
    assert "F1.cap1_fifo, F1.fifo" not in first
    assert "the manifest lacks the baseline and candidate source commits (M1.manifest)" in first
    assert "no verify-protected result attached (X4)" in first
    screen = "\n".join(text.splitlines()[:5])
    assert f"exit code {demo.rc}: " in screen and "admitted counts: none" in screen


@pytest.mark.slow
def test_the_demo_comment_has_no_debugging_dump_and_fits(demo: Outcome) -> None:
    text = (demo.dir / "report.md").read_text("utf-8")
    assert internals(text) == {}
    assert len(text) < GITHUB_COMMENT_LIMIT
    # the memory charts render inside the comment: one per count judged, each start a line
    charts = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    assert charts and all("xychart-beta" in c for c in charts)
    count4 = next(c for c in charts if 'title "count 4: host RSS' in c)
    assert count4.count("    line [") == 3  # the plan's three starts, not the first alone
    assert "memory-count4.png" in text and (demo.dir / "memory-count4.png").exists()


# -- the verdict line and the first screen ------------------------------------------------------


def test_the_first_line_leads_with_the_fail_cause(failed_run: Outcome) -> None:
    ev = failed_run.evidence
    first = render_markdown(ev).splitlines()[0]
    # the evidence's own line lists IDs; the comment says what they are about
    assert "required assertion(s) FAILED (" in ev["verdict"]["line"]
    assert "required assertion(s) FAILED (" not in first
    assert first.startswith("**parval: NOT ADMITTED — ")
    fail_at = first.index("(M2.exact")
    assert "still unresolved: " in first and fail_at < first.index("still unresolved: ")
    assert first.endswith(ev["verdict"]["line"].rsplit(")", 1)[1] + "**"), first  # the rest as judged


def _legacy_only(ev: dict[str, Any]) -> dict[str, Any]:
    """`ev` as a legacy-only candidate gives it: X2 FAILs with no slot fields on the flagged
    start, X1 FAILs because every config slots form started (the real legacy server's
    reasons, word for word)."""
    ev = copy.deepcopy(ev)
    forms: list[Any] = [1, 2, None, False, "4"]
    x1_reason = "; ".join(f"config slots={v!r} was not rejected at startup with the legacy text" for v in forms)
    probes = [
        {"exit_code": None, "kind": "x1_config_probe", "message_ok": False, "rejected": False, "seq": 56 + i, "t": 1e9}
        | {"value": v}
        for i, v in enumerate(forms)
    ]
    x2_violation = ["flagged capacity-one start printed no experimental-runtime warning"]
    for a in ev["assertions"] + ev["model_checks"]["model_level"]:
        if a["id"] == "X1":
            a.update(status="FAIL", reason=x1_reason, evidence={"config_probes": probes, "violation": [x1_reason]})
        if a["id"] == "X2":
            fields = {"first_slots": None, "max_parallel_seen": [None], "slot_fields": False, "slots_seen": []}
            a.update(
                status="FAIL",
                reason=x2_violation[0],
                evidence={"cap1_status_fields": fields, "violation": x2_violation},
            )
    return ev


def test_a_legacy_only_build_is_said_in_plain_words_on_the_first_screen(failed_run: Outcome) -> None:
    said = "this build ignored `--parallel-jobs`: it is a legacy-only build"
    assert said not in render_markdown(failed_run.evidence).lower()  # only when the evidence shows it
    text = render_markdown(_legacy_only(failed_run.evidence))
    first, screen = text.splitlines()[0], "\n".join(text.splitlines()[:4])
    assert f"{said} (X1, X2)" in first
    assert "printed no experimental-runtime warning" in screen and "showed no slot fields" in screen
    # the X1 reason reads with the plan's spelling of each slots form
    assert "slots=null" in text and "slots=false" in text and 'slots="4"' in text
    assert internals(text) == {}


# -- per-assertion details ----------------------------------------------------------------------


def test_details_summarise_what_each_entry_rests_on(failed_run: Outcome) -> None:
    text = render_markdown(failed_run.evidence)
    assert internals(text) == {}
    exact = text.split("<b>M2.exact</b>")[1].split("</details>")[0]
    assert "| rests on | |" in exact and "| outputs compared |" in exact
    assert "Full record: `evidence.json` (assertion `M2.exact`)" in exact and "`events.jsonl`" in exact
    # an entry judged at every count reads as the counts it holds at, not each reason run together
    q5 = next(s for s in summaries(text) if "<b>M2.starts</b>" in s)
    assert "count 1: count 1" not in q5 and q5.count("count 1") <= 1


def test_summaries_are_cut_at_a_word_boundary(failed_run: Outcome) -> None:
    ev = copy.deepcopy(failed_run.evidence)
    words = [f"word{i:03d}" for i in range(80)]
    target = next(a for a in ev["assertions"] if a["status"] == "PASS")
    target["reason"] = " ".join(words)
    target["evidence"].pop("per_count", None)
    summary = next(s for s in summaries(render_markdown(ev)) if f"<b>{target['id']}</b>" in s)
    assert summary.endswith("…")
    assert summary.removesuffix("…").split()[-1] in words


def test_a_comment_with_many_fails_stays_under_the_limit(failed_run: Outcome) -> None:
    ev = copy.deepcopy(failed_run.evidence)
    exact = next(a for a in ev["model_checks"]["per_count"]["3"]["assertions"] if a["id"] == "M2.exact")
    big = copy.deepcopy(exact["evidence"])
    big["mismatches"] = [dict(m, req=f"{m['req']}-{'x' * 60}-{i}") for i, m in enumerate(big["mismatches"] * 10)]

    def fail(a: dict[str, Any]) -> None:
        a.update(status="FAIL", reason="outputs differ: " + "a long reason " * 40, evidence=copy.deepcopy(big))

    for a in ev["assertions"] + ev["model_checks"].get("model_level", []):
        fail(a)
    for c in ev["model_checks"]["per_count"].values():
        for a in c["assertions"]:
            fail(a)
    text = render_markdown(ev)
    assert len(text) < GITHUB_COMMENT_LIMIT
    assert text.count("<details") == text.count("</details>") and text.count("```") % 2 == 0
    assert "#### ❌ " in text and "More FAILs" in text  # the first FAILs explained in full, the rest listed


# -- memory --------------------------------------------------------------------------------------


def test_every_start_of_a_count_is_charted_inline(shard_runs: tuple[Outcome, Outcome]) -> None:
    one, _ = shard_runs
    text = render_evidence(one.evidence, "md", run_dirs=[one.dir])
    assert not re.search(r"!\[[^]]*\]\([^)]*\.png\)", text)
    charts = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    ran = {d.name.split("-")[0] for d in one.dir.glob("servers/count*")}
    counts = sorted(int(n) for n in one.evidence["model_checks"]["per_count"] if f"count{n}" in ran)
    assert [int(m) for c in charts for m in re.findall(r'title "count (\d+): host RSS', c)] == counts
    starts = len(list(one.dir.glob(f"servers/count{counts[0]}-s*-*")))
    assert starts > 1 and charts[0].count("    line [") == starts


def _start(unload_status: bool) -> StartMemory:
    from parval.report.plots import StartMemory

    phases = ["startup", "cold_wave:0", "warm_wave:1", "unload", "reload", "idle", "shutdown"]
    transitions = [(float(i), p) for i, p in enumerate(phases)]
    samples: list[dict[str, object]] = [
        {"t": i + 0.5, "phase": p, "kind": "host", "rss_mib": 100.0 + 10 * i, "pids": [1]}
        for i, p in enumerate(phases[:-1])
    ]
    # after the stop began, the process is going or gone: not the server's memory
    samples += [
        {"t": 6.2, "phase": "shutdown", "kind": "host", "rss_mib": 3.0, "pids": [1]},
        {"t": 6.4, "phase": "shutdown", "kind": "host", "rss_mib": 0.0, "pids": []},
    ]
    return StartMemory("count2-s1", samples, transitions, unload_status)


def test_the_memory_line_ends_at_the_last_sample_while_the_server_ran() -> None:
    from parval.report.plots import phase_peaks

    peaks = phase_peaks(_start(True), "rss_mib")
    assert [label for label, _ in peaks] == ["start", "cold", "warm 1", "unload 1", "reload 1"]
    assert min(v for _, v in peaks) == 100.0  # no reading taken during or after the shutdown


def test_no_unload_is_labelled_where_none_succeeded() -> None:
    from parval.report.plots import mermaid_memory_chart

    chart = "\n".join(mermaid_memory_chart(2, [_start(False)], key="rss_mib", what="host RSS"))
    assert "unload" not in chart.split("```")[1] and '"rerun 1"' in chart
    assert "No unload succeeded" in chart
    assert '"unload 1"' in "\n".join(mermaid_memory_chart(2, [_start(True)], key="rss_mib", what="host RSS"))


def test_the_campaign_line_says_nothing_it_cannot_support(shard_runs: tuple[Outcome, Outcome]) -> None:
    one, _ = shard_runs
    text = render_markdown(one.evidence)
    line = next(x for x in text.splitlines() if x.startswith("Campaign"))
    o = one.evidence["performance"]["campaign_overhead"]
    said = f"{o['wall_s']:.1f} s from start to end, {o['requests']} requests over {o['starts']} server starts."
    assert line == f"Campaign: {said}"


def test_parval_report_writes_the_same_plain_comment(shard_runs: tuple[Outcome, Outcome], tmp_path: Path) -> None:
    one, _ = shard_runs
    out = tmp_path / "comment.md"
    p = parval("report", one.dir, "--output", out)
    assert p.returncode == one.rc, p.stderr
    assert internals(out.read_text("utf-8")) == {}


def _reproduce_blocks(text: str) -> list[str]:
    return re.findall(r"Reproduce:\n\n```sh\n(.*?)```", text, re.S)


def test_reproduce_commands_carry_no_absolute_local_paths(
    failed_run: Outcome, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A PR comment is read on other machines: its Reproduce commands name the run's files
    relative to the folder the report is made in (the plan, in a folder beside it, too), and a
    file further away by a token, never by a `../../` path that spells out where it lies
    (which --redact-paths could not hide); evidence.json keeps the paths."""
    monkeypatch.chdir(failed_run.dir.parent)
    blocks = _reproduce_blocks(render_markdown(failed_run.evidence))
    assert blocks
    text = "\n".join(blocks)
    assert str(failed_run.dir) not in text and str(failed_run.plan) not in text
    assert f"--config {failed_run.dir.name}/servers/count3-s1-" in text
    assert f"parval run {os.path.relpath(failed_run.plan, failed_run.dir.parent)}" in text
    assert blocks[0].startswith("# paths relative to the folder the report was made in")
    # from far away, what is not near becomes a token rather than an absolute path
    far = tmp_path / "a" / "b" / "c"
    far.mkdir(parents=True)
    monkeypatch.chdir(far)
    text = "\n".join(_reproduce_blocks(render_markdown(failed_run.evidence)))
    assert str(failed_run.dir) not in text and "<path:" in text and "../../" not in text
    # --redact-paths hashes whatever absolute path the rest of the comment names
    redacted = parval("report", failed_run.dir, "--redact-paths")
    assert redacted.returncode == failed_run.rc and str(tmp_path.parent) not in redacted.stdout
