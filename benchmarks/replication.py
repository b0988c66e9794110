"""Benchmark of the source connector as we configure it, against MirrorMaker 2's defaults (prints
figures; not a test).

    .venv/bin/python benchmarks/replication.py [--records 2000000] [--size 512] [--partitions 12]
        [--rounds 2] [--rates 0.25,0.5,0.75] [--seconds 20] [--tasks N] [--set KEY=VALUE]
        [--workers 1] [--flavour csm --version 1.2] [--rtt MS] [--bandwidth MBIT]

Everything runs for real on this machine: the dev stack's clusters (us-west SASL_SSL -> us-east
SASL_SSL, infra/rehearsal), its Connect cluster as the program renders it, brokers and workers in
JVMs set as Kafka's start scripts set them (process.jvm_options `steady`, not the tests' quick
start), and on that worker, one at a time, MirrorSourceConnectors that copy one topic each:

- `defaults`: MirrorMaker 2's defaults at our task count (no client setting: only the cluster
  connections, the topic, the byte converters MirrorMaker 2 itself uses and replication factor 1
  for these single-broker clusters);
- `ours`: the dev stack's source connector as rendered (every key, references resolved by the
  worker's config providers as in the cluster), the topic alone changed;
- `ours, tasks N`: the same with `--tasks` (the sizing docs/performance.md recommends for the
  worker's cores, when it differs from the render's);
- `ours, --set N`: the same with the Nth `--set KEY=VALUE,...` settings (a setting tried before
  it becomes a default, or a flow's `config.source` override).

Two measures, the contenders alternating within each round:

- catch-up: the source topic filled first (`--records` records of `--size` random bytes over
  `--partitions` partitions), then the connector created; the time from its creation to the
  target topic holding every record (its end offsets), in records/s and MB/s. Random bytes do not
  compress: a compression setting shows its cost here, not its gain on the wire.
- latency: records written at fixed rates for `--seconds` each (the rates are fractions of the
  defaults' catch-up throughput measured in the same run: what they sustain), read on the target
  as they arrive; p50, p99 and max of arrival minus the record's timestamp.

With `--rtt` or `--bandwidth`, the source cluster is in another region: its broker runs in a
network namespace behind a link that delays each packet by half the round trip each way and caps
the bandwidth (infra/tools/rehearsal/distance.py), with the kernel's TCP in between, so that the
sockets' buffers limit each connection as across a real link. Everything that reaches the source
crosses it: the worker's consumers, as a Connect cluster beside its target reads a source in
another region, and the test clients that fill the topics and write the latency measure's records
too (their time to write is not measured; a record's latency includes its producer's one-way trip
to the source). `--through proxy` uses the fault proxy instead (links.py), the worker alone behind
it: that proxy reads on as fast as the sender writes, so no window limits a connection (kinder
than a real link; kept to compare).

Medians over the rounds, and the ratios against `defaults`. docs/performance.md records them.
Needs the API-server tier's kube-apiserver (tools/engine/build.sh, `make engine`) and the jars.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.tools.rehearsal.apiserver import start, stop  # noqa: E402
from infra.tools.rehearsal.distance import Distance  # noqa: E402
from infra.tools.rehearsal.kube import ApiServerKube  # noqa: E402
from infra.tools.rehearsal.kubeapi import Client  # noqa: E402
from infra.tools.rehearsal.run import Rehearsal  # noqa: E402
from benchmarks.common import DEV  # noqa: E402
from infra.tools.rehearsal.local import local_topology, on_release  # noqa: E402

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
SOURCE_CONNECTOR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def defaults_config(r: Rehearsal, topic: str, tasks: int) -> dict[str, str]:
    source, target = r.clusters["us-west"].client_properties(), r.clusters["us-east"].client_properties()
    config = {"connector.class": SOURCE_CONNECTOR, "tasks.max": str(tasks),
              "source.cluster.alias": "us-west", "target.cluster.alias": "us-east", "topics": topic,
              "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES,
              "replication.factor": "1", "offset-syncs.topic.replication.factor": "1"}
    config.update({f"source.cluster.{k}": v for k, v in source.items()})
    config.update({f"target.cluster.{k}": v for k, v in target.items()})
    return config


def ours_config(rendered: dict[str, Any], topic: str, tasks: int) -> dict[str, str]:
    """The rendered source connector's config, as Strimzi sends it (class and tasks from the spec)."""
    config = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in rendered["spec"]["config"].items()}
    return {**config, "connector.class": rendered["spec"]["class"], "tasks.max": str(tasks), "topics": topic}


class Bench:
    def __init__(self, r: Rehearsal, args: argparse.Namespace) -> None:
        self.r, self.args = r, args
        self.connect = ("repl-us-west-us-east", "repl-us-west-us-east")  # the dev flow's Connect cluster
        self.worker = r.workers[self.connect]
        (self.ours,) = [o for o in r.objects if o["kind"] == "KafkaConnector"
                        and o["spec"]["class"] == SOURCE_CONNECTOR]
        self.tasks = int(self.ours["spec"]["tasksMax"])
        self.contenders = {"defaults": lambda t: defaults_config(r, t, self.tasks),
                           "ours": lambda t: ours_config(self.ours, t, self.tasks)}
        if args.tasks and args.tasks != self.tasks:
            self.contenders[f"ours, tasks {args.tasks}"] = lambda t: ours_config(self.ours, t, args.tasks)
        for i, group in enumerate(args.set, 1):
            tried = dict(kv.split("=", 1) for kv in group.split(","))
            self.contenders[f"ours, --set {i}"] = (
                lambda t, tried=tried: {**ours_config(self.ours, t, self.tasks), **tried})
        self.serial = 0

    def topic(self, what: str) -> str:
        # Outside the dev flow's filter (`test.*`): only the contender's connector copies it.
        self.serial += 1
        return f"bench.{what}.{self.serial}"

    def connector(self, name: str, config: dict[str, str]) -> str:
        connector = f"bench-{self.serial}-{name.replace(' ', '').replace(',', '-')}"
        self.worker.put_connector(connector, config)
        return connector

    def remove(self, connector: str) -> None:
        self.worker.request("DELETE", f"/connectors/{connector}")

    def target_records(self, topic: str) -> int:
        try:
            return sum(self.r.clients.end_offsets(self.r.client("us-east"), [f"us-west.{topic}"]).values())
        except RuntimeError as exc:
            if "UnknownTopicOrPartition" in str(exc):
                return 0  # not created yet
            raise

    def fill(self, records: int) -> str:
        """A new source topic holding `records` records. A load that fails (the loader sends each
        record once, without retries: Clients.java `load`) leaves its topic aside and is done again
        on a new one: the connector has not seen it yet and no figure depends on it."""
        src = self.r.client("us-west")
        for attempt in range(3):
            topic = self.topic("catchup")
            self.r.clients.create_topics(src, {topic: self.args.partitions})
            try:
                self.r.clients.call("load", src, timeout=1800, topic=topic, count=records, size=self.args.size)
                return topic
            except RuntimeError as exc:
                if "records not written" not in str(exc) or attempt == 2:
                    raise
                why = [x for x in str(exc).splitlines() if x.startswith(("java.", "Caused by"))]
                print(f"(loading {topic} failed, loaded again on a new topic: {' / '.join(why)})",
                      file=sys.stderr, flush=True)
        raise AssertionError("unreachable")

    def processes(self) -> dict[str, list[int]]:
        """The pids whose CPU the copy spends: the Connect cluster's pods, each cluster's broker."""
        pods = [self.worker, *self.r.pods.get(self.connect, [])]
        return {"worker": [w.process.popen.pid for w in pods if w.process is not None],
                **{alias: [c.process.popen.pid] for alias, c in sorted(self.r.clusters.items())
                   if c.process is not None}}

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the machine's busy time (every core, /proc/stat: all but idle and
        iowait) and each of `processes` (user + system, /proc/PID/stat)."""
        tick = os.sysconf("SC_CLK_TCK")
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        out = {"machine": (sum(fields) - fields[3] - fields[4]) / tick}
        for name, pids in self.processes().items():
            out[name] = 0.0
            for pid in pids:
                stat = Path(f"/proc/{pid}/stat").read_text()
                out[name] += sum(int(x) for x in stat.rsplit(")", 1)[1].split()[11:13]) / tick
        return out

    def catch_up(self, name: str, records: int = 0) -> dict[str, float]:
        a, src = self.args, self.r.client("us-west")
        records = records or a.records
        topic = self.fill(records)
        started, cpu = time.monotonic(), self.cpu()
        connector = self.connector(name, self.contenders[name](topic))
        first = None
        last, moved = -1, time.monotonic()
        while (copied := self.target_records(topic)) < records:
            if first is None and copied:
                first = time.monotonic()
            if copied != last:
                last, moved = copied, time.monotonic()
            elif time.monotonic() - moved > 120:
                source = self.r.clients.end_offsets(src, [topic])
                target = self.r.clients.end_offsets(self.r.client("us-east"), [f"us-west.{topic}"])
                raise SystemExit(f"{name}: {copied} of {records} records on the target, none more for 120 s; "
                                 f"source {source}, target {target}; the connector: {self.worker.status(connector)}")
            time.sleep(0.2)
        seconds = time.monotonic() - started
        spent = {k: v - cpu[k] for k, v in self.cpu().items()}
        self.remove(connector)
        # Where the copy's CPU went: the machine's share busy (1.0: every core, all the time), and
        # CPU seconds per million records copied for the worker and each broker.
        per_m = 1e6 / records
        return {"records/s": records / seconds, "MB/s": records * a.size / seconds / 1e6, "seconds": seconds,
                "first s": (first or time.monotonic()) - started,
                "busy": spent["machine"] / seconds / (os.cpu_count() or 1),
                "worker cpu s/M": spent["worker"] * per_m, "source cpu s/M": spent["us-west"] * per_m,
                "target cpu s/M": spent["us-east"] * per_m}

    def latency(self, name: str, rate: int) -> dict[str, float]:
        a = self.args
        topic = self.topic(f"latency{rate}")
        count = rate * a.seconds
        self.r.clients.create_topics(self.r.client("us-west"), {topic: a.partitions})
        connector = self.connector(name, self.contenders[name](topic))
        self.worker.wait_running(connector, min_tasks=1)
        arrivals: dict[str, Any] = {}
        reader = threading.Thread(target=lambda: arrivals.update(self.r.clients.call(
            "latency", self.r.client("us-east"), timeout=a.seconds + 600, topic=f"us-west.{topic}", count=count,
            timeoutMs=(a.seconds + 300) * 1000)))
        reader.start()
        time.sleep(2)  # the reader is assigned before the first record is written
        self.r.clients.call("load", self.r.client("us-west"), timeout=a.seconds + 600, topic=topic, count=count,
                            size=a.size, rate=rate)
        reader.join()
        self.remove(connector)
        if arrivals.get("records", 0) < count:
            raise SystemExit(f"{name} at {rate}/s: {arrivals.get('records')} of {count} records arrived")
        return {"p50 ms": arrivals["p50"], "p99 ms": arrivals["p99"], "max ms": arrivals["max"]}


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(f[k] for f in rounds) for k in rounds[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rates", default="0.25,0.5,0.75", help="fractions of the defaults' catch-up records/s")
    ap.add_argument("--seconds", type=int, default=20, help="how long each rate is held")
    ap.add_argument("--tasks", type=int, default=0, help="a third contender: ours with this tasks.max")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE...]",
                    help="a contender: ours with these connector settings (repeatable: a contender each)")
    ap.add_argument("--workers", type=int, default=1, help="Connect workers (pods) of the Connect cluster")
    ap.add_argument("--flavour", default="csm")
    ap.add_argument("--version", default="1.2")
    ap.add_argument("--rtt", type=int, default=0, metavar="MS", help="the round trip between the worker and the source")
    ap.add_argument("--bandwidth", type=int, default=0, metavar="MBIT", help="the link's cap each way (0: none)")
    ap.add_argument("--through", choices=("kernel", "proxy"), default="kernel",
                    help="the source's link: the kernel's TCP through a delaying relay (default), or the fault proxy")
    args = ap.parse_args()
    if args.rtt < 0 or args.bandwidth < 0:
        ap.error("--rtt and --bandwidth take a number of milliseconds and megabits per second, 0 or more")
    # A stopped run stops its brokers, worker and API server too (they run in sessions of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="replication-bench-"))
    state = start(work / "apiserver")
    r = Rehearsal(local_topology(on_release(DEV, args.flavour, args.version)), work / "rehearsal",
                  ApiServerKube(Client(state)), scale=args.workers > 1, jvm="steady",
                  linked=bool(args.rtt or args.bandwidth) and args.through == "proxy",
                  distances={"us-west": Distance(args.rtt, args.bandwidth)}
                  if (args.rtt or args.bandwidth) and args.through == "kernel" else {})
    try:
        r.start_clusters()
        if r.links is not None:
            r.links["us-west"].slow(latency_ms=args.rtt // 2,
                                    rate_kb_per_s=args.bandwidth * 1000 // 8 if args.bandwidth else None)
        objects = r.render()
        for o in objects:
            if o["kind"] == "KafkaConnect":
                o["spec"]["replicas"] = args.workers
        r.deploy(objects)
        r.wait_running()
        b = Bench(r, args)
        names = list(b.contenders)
        # Untimed, a catch-up of a tenth of the records by each: the worker's JIT compiles the
        # copy's code before the first timed contender, which would otherwise pay for it alone.
        for name in names:
            b.catch_up(name, max(args.records // 10, 1))
        catch: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for i in range(args.rounds):
            for name in (names if i % 2 == 0 else names[::-1]):
                figures = b.catch_up(name)
                catch[name].append(figures)
                print(f"catch-up round {i + 1} {name:>16}: " + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()),
                      flush=True)
        caught = {n: medians(fs) for n, fs in catch.items()}
        base = caught["defaults"]["records/s"]
        rates = sorted({max(1, int(base * float(f))) for f in args.rates.split(",") if f.strip()})
        lat: dict[tuple[str, int], list[dict[str, float]]] = {(n, q): [] for n in names for q in rates}
        for i in range(args.rounds):
            for rate in rates:
                for name in (names if i % 2 == 0 else names[::-1]):
                    figures = b.latency(name, rate)
                    lat[(name, rate)].append(figures)
                    print(f"latency round {i + 1} {name:>16} at {rate:,}/s: "
                          + ", ".join(f"{k} {v:,.0f}" for k, v in figures.items()), flush=True)

        link = (f"{args.rtt} ms round trip" + (f", {args.bandwidth} Mbit/s" if args.bandwidth else "")
                + f" ({'the kernel through a relay' if r.distances else 'the fault proxy'})"
                if r.links is not None or r.distances else "loopback")
        where = (f"{args.flavour} {args.version}, {args.workers} worker(s), {args.partitions} partitions, "
                 f"tasks.max {b.tasks} (render), source link: {link}, medians of {args.rounds} round(s)")
        print(f"\ncatch-up: {args.records:,} records of {args.size} B; {where}")
        print(f"{'contender':>16} {'records/s':>12} {'MB/s':>8} {'seconds':>8} {'first s':>8} {'x defaults':>10} "
              f"{'busy':>5} {'worker':>7} {'source':>7} {'target':>7}")
        for name, m in caught.items():
            print(f"{name:>16} {m['records/s']:>12,.0f} {m['MB/s']:>8.1f} {m['seconds']:>8.1f} {m['first s']:>8.1f} "
                  f"{m['records/s'] / base:>10.2f} {m['busy']:>5.2f} {m['worker cpu s/M']:>7.1f} "
                  f"{m['source cpu s/M']:>7.1f} {m['target cpu s/M']:>7.1f}")
        print("busy: the machine's cores' busy share during the copy (1.00: all of them, all the time); worker, "
              "source, target: CPU seconds per million records copied")
        print(f"\nlatency: records of {args.size} B written at fixed rates for {args.seconds} s; {where}")
        print(f"{'contender':>16} {'rate/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99 x defaults':>14}")
        for rate in rates:
            for name in names:
                m = medians(lat[(name, rate)])
                d = medians(lat[("defaults", rate)])
                print(f"{name:>16} {rate:>9,} {m['p50 ms']:>8.0f} {m['p99 ms']:>8.0f} {m['max ms']:>8.0f} "
                      f"{m['p99 ms'] / max(d['p99 ms'], 1):>14.2f}")
    except BaseException:
        print(f"the run's brokers, worker and API server logs are kept in {work}", file=sys.stderr)
        raise
    finally:
        r.stop()
        stop(work / "apiserver")
    shutil.rmtree(work, ignore_errors=True)  # gigabytes of topics
    return 0


if __name__ == "__main__":
    sys.exit(main())
