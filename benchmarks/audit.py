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
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import functions as F  # noqa: E402

from infra.checks import validation  # noqa: E402
from infra.plan.audit import audit_config  # noqa: E402
from infra.plan.stack import plan  # noqa: E402
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
    (root / "audit.json").write_text(json.dumps(config))
    (root / "connect").mkdir(exist_ok=True)
    payload = {"offsets": [{"partition": {"cluster": "src", "partition": p, "topic": "bench"},
                            "offset": {"offset": per - 1}} for p in range(PARTITIONS)]}
    (root / "connect" / f"{config['flows'][0]['connectors'][0]['name']}.json").write_text(json.dumps(payload))
    return {"span_ms": span_s * 1000, "missing": LOST + CORRUPTED, "duplicate": REPLAYED, "unexpected": CORRUPTED}


def raw_scan(spark, root: Path) -> int:
    total = 0
    for alias in ("src", "dst"):
        df = spark.read.schema(KAFKA_ROW).parquet(str(next((root / "kafka" / alias).glob("*bench"))))
        # Every column the audit reads (the Kafka row minus timestampType), a trivial aggregate.
        row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("key")), F.sum(F.length("value")),
                     F.max("timestamp"), F.max("offset"), F.sum(F.size("headers")), F.sum(F.length("topic")),
                     F.sum("partition")).collect()[0]
        total += row["n"]
    return total


def run_audit(spark, root: Path, span_ms: int) -> dict:
    config = json.loads((root / "audit.json").read_text())
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
    spark = audit.spark_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
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


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000_000, 10_000_000])
