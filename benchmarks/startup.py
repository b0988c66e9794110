"""Benchmark of what a rehearsal's JVMs cost to start: class-data sharing (process.class_archive)
and the worker's `plugin.discovery: service_load` (the plan's finds_plugins_by_manifest), each on
and off (prints figures; not a test).

    .venv/bin/python benchmarks/startup.py [--rounds 3] [--flavour strimzi --version 1.2.0]

Each round starts the dev stack's two brokers and its Connect worker as the runtime tier does
(the tests' quick JVM profile), once per contender, the contenders alternating:

- `neither`: no archive (KAFKA_REPLICATION_CDS=0) and Kafka's default discovery (the rendered
  `plugin.discovery` removed);
- `cds`: the class-data archives, Kafka's default discovery;
- `service_load`: no archive, the rendered discovery;
- `ours`: both, as the runtime tier and `rehearse` run.

Measured per contender: the brokers' start (wall, from launch to both listeners) and the CPU
they spent until then; the worker's own "initialization took" (its log) and the CPU it spent
until its connectors ran. A first untimed round of `ours` makes the archives and warms the page
cache. Medians over the rounds, and the ratios against `neither`; docs/performance.md records them.
Needs the API-server tier's kube-apiserver (tools/engine/build.sh) and the jars.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.core import names  # noqa: E402
from infra.tools.rehearsal.apiserver import start, stop  # noqa: E402
from infra.tools.rehearsal.kube import ApiServerKube  # noqa: E402
from infra.tools.rehearsal.kubeapi import Client  # noqa: E402
from infra.tools.rehearsal.run import Rehearsal  # noqa: E402
from benchmarks.common import dev_for_runtime  # noqa: E402

CONTENDERS = {"neither": (False, False), "cds": (True, False), "service_load": (False, True), "ours": (True, True)}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def one(topology: dict, work: Path, kube: ApiServerKube, cds: bool, service_load: bool) -> dict[str, float]:
    os.environ["KAFKA_REPLICATION_CDS"] = "1" if cds else "0"
    r = Rehearsal(topology, work, kube)
    try:
        t0 = time.perf_counter()
        r.start_clusters()
        brokers_wall = time.perf_counter() - t0
        brokers_cpu = sum(cpu_seconds(k.process.popen.pid) for k in r.clusters.values() if k.process)
        objects = r.render()
        if not service_load:
            for o in objects:
                if o["kind"] == "KafkaConnect":
                    o["spec"]["config"].pop(names.PLUGIN_DISCOVERY, None)
        r.deploy(objects)
        r.wait_running()
        (worker,) = r.workers.values()
        assert worker.process is not None
        worker_cpu = cpu_seconds(worker.process.popen.pid)
        log = worker.process.log.read_text(errors="replace")
        init = re.search(r"Kafka Connect worker initialization took (\d+)ms", log)
        assert init, "the worker's log has no initialization time"
        assert ("ReflectionScanner" in log) is not service_load, "the discovery asked for is not the one that ran"
        return {"brokers s": brokers_wall, "brokers CPU s": brokers_cpu, "worker init s": int(init[1]) / 1000,
                "worker CPU s": worker_cpu}
    finally:
        r.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flavour", default="strimzi")
    ap.add_argument("--version", default="1.2.0")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the keeper stops what was started
    work = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    topology = dev_for_runtime(args.flavour, args.version)
    state = start(work / "apiserver")
    kube = ApiServerKube(Client(state))
    runs = 0

    def run(name: str) -> dict[str, float]:
        nonlocal runs
        runs += 1
        return one(topology, work / f"run-{runs}", kube, *CONTENDERS[name])

    try:
        print(f"{args.flavour} {args.version}, {os.cpu_count()} cores, {args.rounds} rounds, contenders alternating")
        run("ours")  # untimed: the archives made, the page cache warm
        figures: dict[str, list[dict[str, float]]] = {n: [] for n in CONTENDERS}
        order = list(CONTENDERS)
        for i in range(args.rounds):
            for name in (order if i % 2 == 0 else order[::-1]):
                found = run(name)
                figures[name].append(found)
                print(f"round {i + 1} {name:>13}: " + ", ".join(f"{k} {v:.2f}" for k, v in found.items()), flush=True)
        keys = list(figures["neither"][0])
        medians = {n: {k: statistics.median(f[k] for f in runs_) for k in keys} for n, runs_ in figures.items()}
        print()
        print(f"{'contender':>13} " + " ".join(f"{k:>14}" for k in keys) + "   (medians; x neither)")
        for name, m in medians.items():
            print(f"{name:>13} " + " ".join(f"{m[k]:>7.2f} {m[k] / medians['neither'][k]:>5.2f}x" for k in keys))
    finally:
        stop(work / "apiserver")
    return 0


if __name__ == "__main__":
    sys.exit(main())
