"""Benchmark of replication as we configure it, against MirrorMaker 2's defaults (prints figures;
not a test).

    .venv/bin/python benchmarks/replication.py [--records 100000] [--size 512] [--rounds 2]
                                               [--flavour csm --version 1.2]

Both run for real, in the same run, on the same brokers and the same Connect worker: the dev
stack's flow (us-west SASL_SSL -> us-east SASL_SSL, infra/rehearsal) as the program renders it,
and beside it a MirrorSourceConnector with MirrorMaker 2's defaults (tasks.max 1, no overrides:
only the cluster connections, the topic, the byte converters MirrorMaker 2 itself uses and
replication factor 1 for these single-broker clusters). For each, a producer writes `--records`
records of `--size` bytes into a 6-partition source topic as fast as it can while a consumer
on the target reads them: throughput (records/s and MB/s from the first write to the last
arrival) and end-to-end latency (arrival minus the record's timestamp, p50 and p99). Rounds
alternate; the medians are printed with the ratios ours/defaults. docs/performance.md records
them. Needs the API-server tier's kube-apiserver (tools/engine/build.sh, `make engine`) and the jars (pom.xml).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.tools.rehearsal.apiserver import start, stop  # noqa: E402
from infra.tools.rehearsal.kube import ApiServerKube  # noqa: E402
from infra.tools.rehearsal.kubeapi import Client  # noqa: E402
from infra.tools.rehearsal.run import Rehearsal  # noqa: E402
from tests.runtime.test_replication import DEV, for_runtime  # noqa: E402
from tests.support.stacks import on_release  # noqa: E402

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PARTITIONS = 6


def defaults_connector(r: Rehearsal, topic: str, tasks: int | None = None) -> dict[str, str]:
    source, target = r.clusters["us-west"].client_properties(), r.clusters["us-east"].client_properties()
    config = {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
              "source.cluster.alias": "us-west", "target.cluster.alias": "us-east", "topics": topic,
              "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES,
              "replication.factor": "1", "offset-syncs.topic.replication.factor": "1"}
    config.update({f"source.cluster.{k}": v for k, v in source.items()})
    config.update({f"target.cluster.{k}": v for k, v in target.items()})
    if tasks is not None:
        config["tasks.max"] = str(tasks)
    return config


def measure(r: Rehearsal, source_topic: str, target_topic: str, records: int, size: int) -> dict[str, float]:
    arrivals: dict = {}
    reader = threading.Thread(target=lambda: arrivals.update(r.clients.call(
        "latency", r.client("us-east"), timeout=900, topic=target_topic, count=records, timeoutMs=600_000)))
    reader.start()
    time.sleep(2)  # the reader is subscribed before the first record is written
    started = time.time() * 1000
    r.clients.call("load", r.client("us-west"), timeout=900, topic=source_topic, count=records, size=size)
    reader.join()
    if arrivals.get("records", 0) < records:
        raise SystemExit(f"{target_topic}: {arrivals.get('records')} of {records} records arrived")
    seconds = (arrivals["lastArrival"] - started) / 1000
    return {"records/s": records / seconds, "MB/s": arrivals["bytes"] / seconds / 1e6,
            "p50 ms": arrivals["p50"], "p99 ms": arrivals["p99"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--flavour", default="csm")
    ap.add_argument("--version", default="1.2")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="replication-bench-"))
    state = start(work / "apiserver")
    r = Rehearsal(for_runtime(on_release(DEV, args.flavour, args.version)), work / "rehearsal", ApiServerKube(Client(state)))
    try:
        r.start_clusters()
        src = r.client("us-west")
        names = ("ours", "defaults", "defaults+tasks")
        results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        topics = {name: [(f"{t}.bench{i}", f"us-west.{t}.bench{i}") for i in range(args.rounds)]
                  for name, t in zip(names, ("test", "base", "tasks"))}
        r.clients.create_topics(src, {s: PARTITIONS for pairs in topics.values() for s, _ in pairs})
        r.deploy()
        r.wait_running()
        worker = r.workers[("repl-us-west-us-east", "repl-us-west-us-east")]
        (ours,) = [o for o in r.objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"].endswith("-source")]
        tasks = int(ours["spec"]["tasksMax"])
        for i in range(args.rounds):
            for name, n in (("defaults", None), ("defaults+tasks", tasks)):
                worker.put_connector(f"{name}-{i}", defaults_connector(r, topics[name][i][0], n))
                worker.wait_running(f"{name}-{i}", min_tasks=1)
        for i in range(args.rounds):
            for name in names:
                figures = measure(r, *topics[name][i], args.records, args.size)
                results[name].append(figures)
                print(f"round {i + 1} {name:>14}: " + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()), flush=True)
        print(f"\n{args.records} records of {args.size} B, {PARTITIONS} partitions, "
              f"{args.flavour} {args.version}, medians of {args.rounds} round(s):")
        print(f"{'':>22} {'records/s':>12} {'MB/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
        med = {n: {k: statistics.median(f[k] for f in fs) for k in fs[0]} for n, fs in results.items()}
        for name, m in med.items():
            print(f"{name:>22} {m['records/s']:>12,.0f} {m['MB/s']:>8.2f} {m['p50 ms']:>8.0f} {m['p99 ms']:>8.0f}")
        for base in ("defaults", "defaults+tasks"):
            print(f"{'ours / ' + base:>22} " + " ".join(
                f"{med['ours'][k] / med[base][k]:>{w}.2f}"
                for k, w in (("records/s", 12), ("MB/s", 8), ("p50 ms", 8), ("p99 ms", 8))))
        print("(ratios above 1: faster for throughput, slower for latency; defaults+tasks is MirrorMaker 2's "
              f"defaults with our tasks.max, {tasks})")
    finally:
        r.stop()
        stop(work / "apiserver")
    return 0


if __name__ == "__main__":
    sys.exit(main())
