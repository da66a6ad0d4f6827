"""retain_after_unload: a logical unload that keeps the weights; every reload adds a copy."""

from __future__ import annotations

from standin_harness import Launch, model
from test_output_faults import rss_mib


def test_retained_weights_accumulate_per_reload(launch: Launch) -> None:
    server = launch([model("m", knobs={"model_mib": 48, "session_mib": 1})], faults=["retain_after_unload"])
    idle = rss_mib(server)
    residues = []
    for _ in range(3):
        assert server.run("m", {"text": "x"}).status_code == 200
        assert server.post("/v1/tasks/unload_all_models", {}).status_code == 200
        assert server.models()["m"]["loaded"] is False  # logically unloaded
        residues.append(rss_mib(server) - idle)
    assert residues[0] > 40 and residues[1] - residues[0] > 40 and residues[2] - residues[1] > 40


def test_without_the_fault_the_idle_level_returns(launch: Launch) -> None:
    server = launch([model("m", knobs={"model_mib": 48, "session_mib": 1})])
    idle = rss_mib(server)
    for _ in range(3):
        assert server.run("m", {"text": "x"}).status_code == 200
        assert server.post("/v1/tasks/unload_all_models", {}).status_code == 200
    assert rss_mib(server) - idle < 24
