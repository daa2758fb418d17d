"""A tiny run of the benchmark, so that it cannot rot; its figures are not asserted."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import main
from bench.contender import KINDS
from pycurator.testing.pytest_plugin import ZooKeeperTarget


def test_a_tiny_benchmark_run_reports_every_contender(
    zk_server: ZooKeeperTarget, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    argv = ["--hosts", zk_server.hosts, "--cycles", "3", "--warmup", "1", "--rounds", "1"]
    assert main([*argv, "--latency-ms", "1", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert set(results["loopback"]["table"]) == set(KINDS)
    assert set(results["latency"]["table"]) == {"pycurator", "curator"}
    assert results["machine"]["zookeeper"].startswith("Zookeeper version: 3.8")
