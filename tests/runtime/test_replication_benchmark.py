"""The replication benchmark (benchmarks/replication.py) runs at a tiny size on real Kafka and Connect."""

from __future__ import annotations

import pytest

from tests.audit.test_audit_benchmark import bench
from tests.support.stacks import unavailable


@pytest.mark.runtime
def test_replication_benchmark_runs_at_a_tiny_size():
    from infra.tools.rehearsal.apiserver import apiserver_binary
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    out = bench("replication.py", "--records", "200", "--rounds", "1", timeout=1200)
    ratios = [line.split() for line in out.splitlines() if line.strip().startswith("ours /")]
    assert len(ratios) == 2 and all(len(r) == 7 for r in ratios), out
