"""Benchmark of the data audit (prints figures; not a test). `python benchmarks/audit.py [N ...]`

For each size N (record pairs; default 1M and 10M) on local[2]:
  - generates one topic of 8 partitions, 1000 records/s per partition (120-byte values, one
    header), as Parquet in the Kafka row schema (a file per partition, sorted by offset, 8 MiB
    row groups, millisecond timestamps), and its replica with faults in a small share of the
    60 s buckets: 100 records lost, 50 replayed, 10 values corrupted (in 3 of ~N/60000 buckets);
  - times, in the same run and on the same files (Spark contenders after one untimed run each):
      raw    Spark's scan of both sides: the same columns, a trivial aggregate
      audit  the audit of that flow (spark.audit.run: offsets, both tiers, findings)
      naive  a single-process Python diff: pyarrow reads, a Counter of (partition, key, value,
             timestamp, headers) per side
  - checks that the audit found exactly the injected faults;
  - prints records audited per second, audit/raw and audit/naive rate ratios, peak memory.

`python benchmarks/audit.py --kafka [N ...]` (default 5M) measures the production path instead:
two single-broker Kafka clusters started here (the rehearsal's brokers in Kafka's own JVM settings,
PLAINTEXT on loopback;
the release's jars, pom.xml), the same topic, records and faults written to them (`record`
below is the generator's formula, the one the Spark expressions of `generate` compute), and the
audit reading them as the CronJob does: librdkafka for metadata and offsets-for-times, Spark's
Kafka source (spark/pom.xml's jars) for records. Against it, a raw Spark Kafka scan of the same
topics and offsets with the same aggregate as `raw`:
  - warm: both in this process's JVM, each after one untimed run;
  - cold: each in a fresh process (a fresh JVM, as a CronJob's pod starts), timed from the
    session's creation to the answer; the session's start is printed apart.
The connector's committed offsets come from a recorded payload (every source record replicated),
as in the Parquet mode: no Connect worker runs here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import functions as F  # noqa: E402

from contract import audit as audit_contract  # noqa: E402
from infra.checks import validation  # noqa: E402
from infra.plan.audit import audit_config  # noqa: E402
from infra.plan.stack import plan  # noqa: E402
from infra.tools.rehearsal.process import stop_all  # noqa: E402
from spark import audit  # noqa: E402
from spark.clusters import KAFKA_ROW  # noqa: E402

PARTITIONS = 8
RATE = 1000  # records per second per partition
BASE_MS = 1_767_225_600_000
TOPOLOGY = {"clusters": {"src": {"bootstrapServers": "src:9092"}, "dst": {"bootstrapServers": "dst:9092"}},
            "flows": [{"source": "src", "target": "dst", "topics": ["bench"], "heartbeats": False}]}
LOST, REPLAYED, CORRUPTED = 100, 50, 10


def generate(spark, root: Path, n: int) -> dict:
    """Source and replica dumps; returns the injected faults."""
    per = n // PARTITIONS
    span_s = per // RATE
    ids = spark.range(n)
    src = ids.select(
        F.concat(F.lit("key-"), F.col("id").cast("string")).cast("binary").alias("key"),
        F.concat(F.sha2(F.col("id").cast("string"), 256), F.sha2(F.col("id").cast("string"), 224))
        .substr(1, 120).cast("binary").alias("value"),
        F.lit("bench").alias("topic"),
        (F.col("id") % PARTITIONS).cast("int").alias("partition"),
        (F.col("id") / PARTITIONS).cast("long").alias("offset"),
        F.timestamp_millis(F.lit(BASE_MS) + ((F.col("id") / PARTITIONS).cast("long") * 1000 / RATE).cast("long"))
        .alias("timestamp"),
        F.lit(0).alias("timestampType"),
        F.array(F.struct(F.lit("trace").alias("key"), F.col("id").cast("string").cast("binary").alias("value")))
        .alias("headers"))
    # Faults in three partitions: records lost in 3 and corrupted in 6 a third of the way in,
    # replayed in 5 at two thirds.
    a = per // 3
    b = 2 * per // 3
    lost = (F.col("partition") == 3) & (F.col("offset") >= a) & (F.col("offset") < a + LOST)
    replay = (F.col("partition") == 5) & (F.col("offset") >= b) & (F.col("offset") < b + REPLAYED)
    corrupt = (F.col("partition") == 6) & (F.col("offset") >= a) & (F.col("offset") < a + CORRUPTED)
    replica = src.filter(~lost).withColumn(
        "value", F.when(corrupt, F.lit(b"corrupted")).otherwise(F.col("value")))
    replica = replica.unionByName(src.filter(replay))
    # Target offsets: the record's position in the replica partition (a different log).
    from pyspark.sql import Window
    replica = replica.withColumn("offset", F.row_number().over(
        Window.partitionBy("partition").orderBy("timestamp", "offset")).cast("long") - 1)
    replica = replica.withColumn("topic", F.lit("src.bench"))
    # Kafka's timestamps are epoch milliseconds: written as such (not Spark's default INT96), the
    # dump's row groups carry timestamp statistics, the dump's equivalent of Kafka's time index.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
    for alias, df, topic in (("src", src, "bench"), ("dst", replica, "src.bench")):
        # One file per Kafka partition (a partition is a log of its own), sorted by offset in
        # 8 MiB row groups: tier 2 reads an offset span of a partition the way Kafka seeks to it,
        # through row-group statistics, instead of scanning the partition or its neighbours.
        staging = root / "staging" / alias
        df.write.partitionBy("partition").parquet(str(staging))
        for p in range(PARTITIONS):
            (spark.read.parquet(str(staging / f"partition={p}")).withColumn("partition", F.lit(p))
             .select(*KAFKA_ROW.fieldNames()).coalesce(1).sortWithinPartitions("offset")
             .write.mode("append").option("parquet.block.size", 8 * 1024 * 1024)
             .parquet(str(root / "kafka" / alias / topic)))
    shutil.rmtree(root / "staging")
    ends = {"src": {str(p): per for p in range(PARTITIONS)},
            "dst": {str(p): per - (LOST if p == 3 else 0) + (REPLAYED if p == 5 else 0) for p in range(PARTITIONS)}}
    for alias, topic in (("src", "bench"), ("dst", "src.bench")):
        (root / "kafka" / alias / "topics.json").write_text(json.dumps({topic: {
            "partitions": PARTITIONS, "cleanupPolicy": "delete", "earliest": {str(p): 0 for p in range(PARTITIONS)},
            "end": ends[alias]}}))
    topo = validation.parse(TOPOLOGY)
    config = audit_config(topo, plan(topo))
    (root / audit_contract.CONFIG_FILE).write_text(json.dumps(config))
    (root / "connect").mkdir(exist_ok=True)
    payload = {"offsets": [{"partition": {"cluster": "src", "partition": p, "topic": "bench"},
                            "offset": {"offset": per - 1}} for p in range(PARTITIONS)]}
    (root / "connect" / f"{config['flows'][0]['connectors'][0]['name']}.json").write_text(json.dumps(payload))
    return {"span_ms": span_s * 1000, "missing": LOST + CORRUPTED, "duplicate": REPLAYED, "unexpected": CORRUPTED}


def scanned(df) -> int:
    """The raw contender's work on one side: every column the audit reads (the Kafka row minus
    timestampType), a trivial aggregate; the records counted."""
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("key")), F.sum(F.length("value")),
                 F.max("timestamp"), F.max("offset"), F.sum(F.size("headers")), F.sum(F.length("topic")),
                 F.sum("partition")).collect()[0]
    return int(row["n"])


def raw_scan(spark, root: Path) -> int:
    return sum(scanned(spark.read.schema(KAFKA_ROW).parquet(str(next((root / "kafka" / alias).glob("*bench")))))
               for alias in ("src", "dst"))


def run_audit(spark, root: Path, span_ms: int) -> dict:
    config = json.loads((root / audit_contract.CONFIG_FILE).read_text())
    window = audit.Window(BASE_MS, BASE_MS + span_ms + 1000, 60_000)
    return audit.run(config, audit.local_clusters(spark, root), audit.local_fetch(root), window, BASE_MS + span_ms,
                     audit.java_filters(spark))


def naive(root: Path) -> dict:
    import pyarrow.parquet as pq
    counts = []
    for alias in ("src", "dst"):
        table = pq.read_table(next((root / "kafka" / alias).glob("*bench")),
                              columns=["partition", "key", "value", "timestamp", "headers"])
        c: Counter = Counter()
        for batch in table.to_batches():
            cols = batch.to_pydict()
            c.update(zip(cols["partition"], cols["key"], cols["value"], cols["timestamp"],
                         (tuple((h["key"], h["value"]) for h in hs) for hs in cols["headers"])))
        counts.append(c)
    s, t = counts
    return {"missing": sum((s - t).values()), "extra": sum((t - s).values())}


def vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(sizes: list[int]) -> None:
    spark = session(kafka=False)
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
    print(f"Spark {spark.version}, local[2], {os.cpu_count()} cores; shuffle partitions "
          f"{spark.conf.get('spark.sql.shuffle.partitions')}")
    print(f"{'pairs':>10} {'raw rec/s':>12} {'audit rec/s':>12} {'naive rec/s':>12} {'audit/raw':>10} "
          f"{'audit/naive':>12}  found")
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="audit-bench-"))
        try:
            t0 = time.perf_counter()
            faults = generate(spark, root, n)
            gen = time.perf_counter() - t0
            # Each Spark contender runs once untimed (JIT, file cache, query compilation), then
            # is timed; the audit's first, cold run is printed too (a CronJob run is cold).
            raw_scan(spark, root)
            t0 = time.perf_counter()
            records = raw_scan(spark, root)
            raw = time.perf_counter() - t0
            t0 = time.perf_counter()
            run_audit(spark, root, faults["span_ms"])
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            result = run_audit(spark, root, faults["span_ms"])
            aud = time.perf_counter() - t0
            t0 = time.perf_counter()
            nv = naive(root)
            nav = time.perf_counter() - t0
            tot = result["totals"]
            found = (tot["missing"], tot["duplicate"], tot["unexpected"])
            expected = (faults["missing"], faults["duplicate"], faults["unexpected"])
            parts = [p for f in result["flows"] for t in f["topics"] for p in t["partitions"]]
            differing = sum(p.get("bucketsDiffering", 0) for p in parts)
            buckets = sum(p.get("buckets", 0) for p in parts)
            print(f"{n:>10} {records / raw:>12,.0f} {records / aud:>12,.0f} {records / nav:>12,.0f} "
                  f"{raw / aud:>10.2f} {nav / aud:>12.2f}  {'exact' if found == expected else f'{found} != {expected}'}"
                  f" (naive: {nv['missing']} missing, {nv['extra']} extra)")
            print(f"{'':>10} times: generate {gen:.1f} s, raw {raw:.1f} s, audit {aud:.1f} s (cold {cold:.1f} s, "
                  f"{raw / cold:.2f}x raw), naive {nav:.1f} s; "
                  f"{records:,} records read; buckets differing {differing}/{buckets}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"peak memory: driver JVM {vm_hwm_mib(jvm_pid):.0f} MiB, Python "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (the naive diff's Counters)")
    spark.stop()


# ----------------------------------------------------------------- Kafka mode


def record(i: int, base_ms: int) -> tuple[bytes, bytes, int, int, int, bytes]:
    """Record `i` of the source topic: key, value, partition, offset, timestamp, trace header,
    as `generate`'s Spark expressions make it."""
    digest = (hashlib.sha256(str(i).encode()).hexdigest() + hashlib.sha224(str(i).encode()).hexdigest())[:120]
    offset = i // PARTITIONS
    return (f"key-{i}".encode(), digest.encode(), i % PARTITIONS, offset, base_ms + offset * 1000 // RATE,
            str(i).encode())


def fill(bootstrap: str, n: int, base_ms: int) -> dict:
    """The source topic `bench` and its replica `src.bench` with the faults of `generate`."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    per = n // PARTITIONS
    a, b = per // 3, 2 * per // 3
    for alias, topic in (("src", "bench"), ("dst", "src.bench")):
        admin = AdminClient({"bootstrap.servers": bootstrap[alias]})
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result()
        # Idempotent: each partition's records keep the order they are produced in.
        producer = Producer({"bootstrap.servers": bootstrap[alias], "enable.idempotence": True, "linger.ms": 20,
                             "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                             "log_level": 3})

        def send(key, value, partition, ts, trace):
            while True:
                try:
                    producer.produce(topic, value, key, partition, timestamp=ts, headers=[("trace", trace)])
                    return
                except BufferError:
                    producer.poll(0.05)

        for i in range(per * PARTITIONS):
            key, value, partition, offset, ts, trace = record(i, base_ms)
            if alias == "dst":
                if partition == 3 and a <= offset < a + LOST:
                    continue
                if partition == 6 and a <= offset < a + CORRUPTED:
                    value = b"corrupted"
            send(key, value, partition, ts, trace)
            if alias == "dst" and partition == 5 and b <= offset < b + REPLAYED:
                send(key, value, partition, ts, trace)
            if i % 10_000 == 0:
                producer.poll(0)
        if producer.flush(600) != 0:
            raise SystemExit(f"{topic}: records left unsent")
    return {"span_ms": per * 1000 // RATE, "missing": LOST + CORRUPTED, "duplicate": REPLAYED, "unexpected": CORRUPTED}


def kafka_config(bootstrap: dict, root: Path, per: int) -> dict:
    topo = validation.parse({**TOPOLOGY, "clusters": {a: {"bootstrapServers": s} for a, s in bootstrap.items()}})
    config = audit_config(topo, plan(topo))
    (root / "connect").mkdir(parents=True, exist_ok=True)
    payload = {"offsets": [{"partition": {"cluster": "src", "partition": p, "topic": "bench"},
                            "offset": {"offset": per - 1}} for p in range(PARTITIONS)]}
    (root / "connect" / f"{config['flows'][0]['connectors'][0]['name']}.json").write_text(json.dumps(payload))
    return config


def kafka_raw_scan(spark, bootstrap: dict) -> int:
    return sum(scanned(spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap[alias])
                       .option("assign", json.dumps({topic: list(range(PARTITIONS))}))
                       .option("startingOffsets", "earliest").option("endingOffsets", "latest")
                       .option("includeHeaders", "true").load())
               for alias, topic in (("src", "bench"), ("dst", "src.bench")))


def kafka_audit(spark, config: dict, root: Path, window: tuple[int, int, int]) -> dict:
    from spark.clusters import KafkaCluster, librdkafka_config, spark_kafka_options
    from spark.job import Clusters

    def make(alias):
        cluster = config["clusters"][alias]
        return KafkaCluster(spark, librdkafka_config(cluster, root), spark_kafka_options(cluster, root))
    start, until, now = window
    return audit.run(config, Clusters(make), audit.local_fetch(root), audit.Window(start, until, 60_000), now,
                     audit.java_filters(spark))


def session(kafka: bool = True):
    """local[2] as the benchmark runs it; with Spark's Kafka source (spark/pom.xml's jars) for `kafka`."""
    if kafka:
        from infra.tools.rehearsal import jars
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--jars {','.join(str(j) for j in jars.audit_jars())} pyspark-shell"
    spark = audit.spark_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child(spec_path: str) -> None:
    """One cold measure in this fresh process: prints its JSON."""
    spec = json.loads(Path(spec_path).read_text())
    t0 = time.perf_counter()
    spark = session()
    started = time.perf_counter() - t0
    t0 = time.perf_counter()
    if spec["what"] == "raw":
        answer = {"records": kafka_raw_scan(spark, spec["bootstrap"])}
    else:
        answer = {"totals": kafka_audit(spark, spec["config"], Path(spec["root"]), tuple(spec["window"]))["totals"]}
    print(json.dumps({**answer, "seconds": time.perf_counter() - t0, "session": started}))
    spark.stop()


def cold(spec: dict, root: Path) -> dict:
    path = root / f"cold-{spec['what']}.json"
    path.write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True,
                          timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"the cold {spec['what']} run failed:\n{done.stderr[-3000:]}")
    answer: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


ROUNDS = 3  # warm rounds of each contender in Kafka mode, alternating


def kafka_main(sizes: list[int]) -> None:
    from infra.tools.rehearsal import jars
    from infra.tools.rehearsal.kafka import KafkaCluster
    from infra.tools.rehearsal.process import Network, free_ports
    release = validation.parse(TOPOLOGY).operator.release  # the default release's brokers
    spark = session()
    print(f"Spark {spark.version}, local[2], {os.cpu_count()} cores, Kafka's source; brokers of {release.name} "
          f"(Kafka {release.kafka})")
    print(f"{'pairs':>10} {'raw rec/s':>12} {'audit rec/s':>12} {'audit/raw':>10} {'cold raw s':>11} "
          f"{'cold audit s':>13} {'cold a/r':>9}  found")
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="audit-bench-kafka-"))
        network = Network(root)
        bootstrap = {a: f"127.0.0.1:{p}" for a, p in zip(("src", "dst"), free_ports("127.0.0.1", 2))}
        model = validation.parse({**TOPOLOGY, "clusters": {a: {"bootstrapServers": s} for a, s in bootstrap.items()}})
        brokers = []
        try:
            for alias in ("src", "dst"):
                k = KafkaCluster(alias, model.clusters[alias], None, root / "kafka" / alias, network, jvm="steady")
                k.ip = "127.0.0.1"  # the address the bootstrap names: librdkafka and Spark reach it as it is
                brokers.append(k)
                k.start(jars.classpath(release))
            per = n // PARTITIONS
            # Recent timestamps: the brokers' time retention (7 days) would delete old ones.
            base_ms = (int(time.time()) - 3600) * 1000
            t0 = time.perf_counter()
            faults = fill(bootstrap, n, base_ms)
            gen = time.perf_counter() - t0
            config = kafka_config(bootstrap, root, per)
            window = (base_ms, base_ms + faults["span_ms"] + 1000, base_ms + faults["span_ms"])
            kafka_raw_scan(spark, bootstrap)  # untimed: the JIT, the page cache, query compilation
            kafka_audit(spark, config, root, window)
            # Alternating rounds, the ratio of each round's medians: a drift of the machine
            # (another process, the page cache) falls on both contenders alike.
            raws, auds = [], []
            for i in range(ROUNDS):
                for what in (("raw", "audit") if i % 2 == 0 else ("audit", "raw")):  # neither always first
                    t0 = time.perf_counter()
                    if what == "raw":
                        records = kafka_raw_scan(spark, bootstrap)
                        raws.append(time.perf_counter() - t0)
                    else:
                        result = kafka_audit(spark, config, root, window)
                        auds.append(time.perf_counter() - t0)
            raw, aud = statistics.median(raws), statistics.median(auds)
            c_raw = cold({"what": "raw", "bootstrap": bootstrap}, root)
            c_aud = cold({"what": "audit", "config": config, "root": str(root), "window": window}, root)
            expected = (faults["missing"], faults["duplicate"], faults["unexpected"])
            found = [(t["missing"], t["duplicate"], t["unexpected"]) for t in (result["totals"], c_aud["totals"])]
            verdict = "exact" if all(f == expected for f in found) else f"{found} != {expected}"
            print(f"{n:>10} {records / raw:>12,.0f} {records / aud:>12,.0f} {raw / aud:>10.2f} "
                  f"{c_raw['seconds']:>11.1f} {c_aud['seconds']:>13.1f} {c_raw['seconds'] / c_aud['seconds']:>9.2f}"
                  f"  {verdict}")
            print(f"{'':>10} {ROUNDS} alternating rounds, medians: raw {raw:.1f} s ({', '.join(f'{t:.1f}' for t in raws)}), "
                  f"audit {aud:.1f} s ({', '.join(f'{t:.1f}' for t in auds)})")
            print(f"{'':>10} times: fill {gen:.1f} s, raw {raw:.1f} s, audit {aud:.1f} s; cold sessions start in "
                  f"{c_raw['session']:.1f} s and {c_aud['session']:.1f} s; {records:,} records read "
                  f"({c_raw['records']:,} cold)")
        finally:
            stop_all([p for k in brokers for p in k.processes])
            shutil.rmtree(root, ignore_errors=True)
    spark.stop()


def arguments(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka", action="store_true", help="on two Kafka clusters started here, as the CronJob reads "
                    "(default size 5,000,000 pairs); without it, on Parquet (default sizes 1,000,000 and 10,000,000)")
    ap.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)  # one cold run, in its own process
    ap.add_argument("sizes", nargs="*", type=int, metavar="PAIRS", help="sizes, in record pairs")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        ap.error("sizes are positive numbers of record pairs")
    return args


if __name__ == "__main__":
    args = arguments(sys.argv[1:])
    if args.child is not None:
        child(args.child)
    elif args.kafka:
        kafka_main(args.sizes or [5_000_000])
    else:
        main(args.sizes or [1_000_000, 10_000_000])
