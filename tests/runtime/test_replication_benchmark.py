"""The replication benchmark (benchmarks/replication.py) runs at a tiny size on real Kafka and Connect."""

from __future__ import annotations

import pytest

from tests.support.benchmarks import bench
from tests.support.stacks import unavailable


@pytest.mark.runtime
def test_replication_benchmark_runs_at_a_tiny_size():
    from infra.tools.rehearsal.apiserver import apiserver_binary
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    out = bench("replication.py", "--records", "3000", "--partitions", "3", "--rounds", "1", "--seconds", "2",
                "--tasks", "2", "--set", "producer.override.linger.ms=0", "--rtt", "40", timeout=1200)
    lines = out.splitlines()
    catch_up = lines.index(next(x for x in lines if x.startswith("catch-up: 3,000 records of 512 B")))
    latency = lines.index(next(x for x in lines if x.startswith("latency: records of 512 B")))
    # Every contender copied every record (the script exits 1 otherwise), each row with its ratio.
    rows = {x[:16].strip(): x[16:].split() for x in lines[catch_up + 2:latency]
            if x.strip() and not x.startswith("busy:")}
    # records/s, MB/s, seconds, first s, x defaults, then where the CPU went: busy share, and CPU
    # seconds per million records of the worker, the source and the target broker.
    assert all(0 < float(r[5]) <= 1.05 for r in rows.values()), out
    assert sorted(rows) == ["defaults", "ours", "ours, --set 1", "ours, tasks 2"], out
    assert rows["defaults"][4] == "1.00" and all(len(r) == 9 for r in rows.values()), out
    # Three rates (fractions of the defaults' catch-up rate), each for every contender.
    lat = [(x[:16].strip(), x[16:].split()) for x in lines[latency + 2:] if x.strip()]
    assert [name for name, _ in lat] == ["defaults", "ours", "ours, tasks 2", "ours, --set 1"] * 3, out
    # The source was in another region, 40 ms away (--rtt: its broker in a network namespace behind
    # the kernel's link, infra/tools/rehearsal/distance.py): no record arrived sooner than its
    # producer's 20 ms to the source plus the 20 ms the worker's fetch answer spends coming back.
    link = "source link: 40 ms round trip (the kernel through a relay)"
    assert link in lines[catch_up] and link in lines[latency], out
    assert all(float(row[1]) >= 40 for _, row in lat), out
