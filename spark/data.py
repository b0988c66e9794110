"""Data audit: source records against target records, with Spark built-ins only (no Python UDF
on the hot path).

Every record becomes a fingerprint, xxhash64 over key, value, headers (without the headers the
flow itself adds) and timestamp, with null markers so that a null key and an empty key differ.
MirrorMaker 2 keeps partition numbers, keys, values, headers and timestamps, so a source
partition's records in a time range must be found in the same target partition in the same time
range: the audit compares the two multisets of fingerprints per partition.

Two tiers (docs/audit.md):
  1. counting, always: per (topic, partition, time bucket) each side's record count and the sum
     of the low 32 bits of its fingerprints (Chaperone-style, plus a checksum so that a
     corrupted value changes the bucket). One Spark job: one scan of each side, a small
     aggregate, one row per partition back to the driver.
  2. record diff, only for buckets where tier 1 disagrees: the records of those buckets are read
     again (their offset ranges only) and their fingerprint multisets compared, which yields
     missing records (as contiguous source ranges), duplicates and unexpected records. One
     Spark job as well.
Compacted topics skip both: the latest fingerprint per key is compared instead, never counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window, functions as F

PARTITION = ["topic", "partition"]
BUCKET = [*PARTITION, "bucket"]
# The low 32 bits: sums of them cannot overflow a long (Spark 4 runs in ANSI mode, where a sum
# of 64-bit hashes would fail) below 2^31 records per bucket.
LOW32 = 0xFFFFFFFF
MAX_RANGES = 100  # missing ranges listed per partition; the count is always complete


@dataclass(frozen=True)
class Side:
    """How one side's records are selected and normalised before fingerprinting."""
    topic_names: dict[str, str] | None = None  # target topic -> source topic (prefix policies)
    require_header: str | None = None  # bidirectional target: only records replicated by this flow
    drop_header: str | None = None     # bidirectional source: not records that came from the target
    strip_headers: tuple[str, ...] = ()
    valueless_topics: tuple[str, ...] = ()  # (source names) compared without their values


def prepare(df: DataFrame, side: Side, bucket_ms: int) -> DataFrame:
    """(topic [source name], partition, offset, ts, bucket, fp, key, tombstone)."""
    if side.require_header:
        df = df.filter(F.exists("headers", lambda h: h.key == side.require_header))
    if side.drop_header:
        df = df.filter(~F.exists("headers", lambda h: h.key == side.drop_header))
    topic = F.col("topic")
    if side.topic_names:
        pairs = [F.lit(x) for kv in sorted(side.topic_names.items()) for x in kv]
        topic = F.element_at(F.create_map(*pairs), F.col("topic"))
    headers = F.col("headers")
    if side.strip_headers:
        headers = F.filter("headers", lambda h: ~h.key.isin(*side.strip_headers))
    value = F.col("value")
    if side.valueless_topics:
        value = F.when(topic.isin(*side.valueless_topics), F.lit(None).cast("binary")).otherwise(value)
    ts = F.unix_millis("timestamp")
    # An empty and a missing header list hash alike (xxhash64 skips nulls, an empty array adds nothing).
    fp = F.xxhash64(F.col("key"), value, headers, F.col("timestamp"),
                    F.isnull("key"), F.isnull(value))
    return df.select(topic.alias("topic"), "partition", "offset", ts.alias("ts"),
                     F.floor(ts / F.lit(bucket_ms)).alias("bucket"), fp.alias("fp"), "key",
                     F.isnull("value").alias("tombstone"))


# ----------------------------------------------------------------- tier 1: counting


def _both(source: DataFrame, target: DataFrame) -> DataFrame:
    """Both sides as one frame (`s`: from the source), so that each tier is one Spark job: one
    scan of each side, no join of per-side results."""
    cols = [*BUCKET, "offset", "fp"]
    return source.select(*cols, F.lit(True).alias("s")).unionByName(target.select(*cols, F.lit(False).alias("s")))


@dataclass
class Tier1:
    totals: dict[tuple[str, int], dict]   # per partition: sourceRecords, targetRecords, buckets, bucketsDiffering
    differing: list[dict]                 # per differing bucket: topic, partition, bucket, source/target lo, hi


def compare_buckets(source: DataFrame, target: DataFrame) -> Tier1:
    # Per side first (4 plain aggregates a record, not 8 conditional ones), then the two sides
    # of each bucket side by side: that second step only sees a few rows per bucket.
    per_side = _both(source, target).groupBy(*BUCKET, "s").agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("fp").bitwiseAND(F.lit(LOW32))).alias("h"),
        F.min("offset").alias("lo"), F.max("offset").alias("hi"))
    per_bucket = per_side.groupBy(*BUCKET).agg(*(
        F.coalesce(F.max(F.when(F.col("s") == side, F.col(c))), F.lit(0) if c == "n" else F.lit(None)).alias(f"{p}_{c}")
        for side, p in ((True, "s"), (False, "t")) for c in ("n", "h", "lo", "hi")))
    differs = (F.col("s_n") != F.col("t_n")) | ~F.col("s_h").eqNullSafe(F.col("t_h"))
    # One row per partition, carrying its differing buckets: the driver never sees the others.
    rows = per_bucket.groupBy(*PARTITION).agg(
        F.sum("s_n").alias("s"), F.sum("t_n").alias("t"), F.count(F.lit(1)).alias("b"),
        F.count(F.when(differs, 1)).alias("d"),
        F.collect_list(F.when(differs, F.struct("bucket", "s_lo", "s_hi", "t_lo", "t_hi"))).alias("differing")
    ).collect()
    totals, differing = {}, []
    for r in rows:
        totals[(r["topic"], r["partition"])] = {"sourceRecords": r["s"], "targetRecords": r["t"],
                                                "buckets": r["b"], "bucketsDiffering": r["d"]}
        differing += [{"topic": r["topic"], "partition": r["partition"], **b.asDict()} for b in r["differing"]]
    return Tier1(totals, sorted(differing, key=lambda b: (b["topic"], b["partition"], b["bucket"])))


def in_buckets(buckets: list[dict]) -> Column:
    """Records of these (topic, partition, bucket)s: a set of literals, looked up per record
    (no join, no Spark job to ship the set)."""
    key = F.struct("topic", "partition", "bucket")
    return key.isin(*(F.struct(F.lit(b["topic"]).alias("topic"), F.lit(b["partition"]).cast("int").alias("partition"),
                               F.lit(b["bucket"]).cast("long").alias("bucket")) for b in buckets))


def tier2_ranges(differing: list[dict], side: str) -> dict[tuple[str, int], tuple[int, int]]:
    """The offset span per partition that covers one side's records of the differing buckets."""
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    for b in differing:
        lo, hi = b[f"{side}_lo"], b[f"{side}_hi"]
        if lo is None:
            continue
        key = (b["topic"], b["partition"])
        old = spans.get(key)
        spans[key] = (lo, hi + 1) if old is None else (min(old[0], lo), max(old[1], hi + 1))
    return spans


# ----------------------------------------------------------------- tier 2: records


@dataclass
class PartitionDiff:
    missing: int = 0
    duplicate: int = 0
    unexpected: int = 0
    missing_ranges: list[list[int]] = field(default_factory=list)  # [first offset, last offset, records]


def diff_records(source: DataFrame, target: DataFrame, buckets: list[dict]) -> dict[tuple[str, int], PartitionDiff]:
    """Multiset comparison of fingerprints per partition, in one Spark job, on the records of
    `buckets` only ({topic, partition, bucket}: Tier1.differing).

    Per (partition, fingerprint), source records first, then target records, each in offset
    order: of n identical source records of which the target holds k, the last n - k are
    missing; of m target records, those past n are duplicates, and all m are unexpected when
    n = 0. Missing records then form runs of consecutive source records (not offsets:
    transaction markers and compaction leave offset gaps): within a bucket, the missing records
    with the same number of present source records before them are one run."""
    keep = in_buckets(buckets)
    source, target = source.filter(keep), target.filter(keep)
    by_fp = Window.partitionBy(*PARTITION, "fp").orderBy(F.col("s").desc(), "offset")
    whole = by_fp.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    n_source, n_target = F.count(F.when(F.col("s"), 1)).over(whole), F.count(F.when(~F.col("s"), 1)).over(whole)
    marked = (_both(source, target)
              .withColumn("occurrence", F.row_number().over(by_fp))
              .withColumn("cs", n_source).withColumn("ct", n_target)
              .withColumn("kind", F.when(F.col("s"), F.when(F.col("occurrence") > F.col("ct"), "missing"))
                          .when(F.col("cs") == 0, "unexpected")
                          .when(F.col("occurrence") - F.col("cs") > F.col("cs"), "duplicate"))
              .filter(F.col("s") | F.col("kind").isNotNull()))
    in_bucket = Window.partitionBy(*BUCKET, "s").orderBy("offset")
    present = F.when(F.col("s") & F.col("kind").isNull(), 1).otherwise(0)
    runs = (marked
            .withColumn("before", F.sum(present).over(in_bucket.rowsBetween(Window.unboundedPreceding, 0)))
            .withColumn("present", F.sum(present).over(in_bucket.rowsBetween(Window.unboundedPreceding,
                                                                               Window.unboundedFollowing)))
            .filter(F.col("kind").isNotNull())
            .groupBy(*BUCKET, "kind", F.when(F.col("s"), F.col("before")).otherwise(0).alias("run"))
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"),
                 F.count(F.lit(1)).alias("records"), F.max("present").alias("present"))
            .collect())
    result: dict[tuple[str, int], PartitionDiff] = {}
    missing = []
    for r in runs:
        d = result.setdefault((r["topic"], r["partition"]), PartitionDiff())
        setattr(d, r["kind"], getattr(d, r["kind"]) + r["records"])
        if r["kind"] == "missing":
            missing.append(r)
    for key, ranges in merge_runs(missing).items():
        result[key].missing_ranges = ranges
    return result


def merge_runs(runs: list) -> dict[tuple[str, int], list[list[int]]]:
    """Runs of missing records per partition, in offset order; a run that ends its bucket
    continues into the next bucket's run that starts it."""
    merged: dict[tuple[str, int], list[list[int]]] = {}
    previous = None
    for r in sorted(runs, key=lambda r: (r["topic"], r["partition"], r["first"])):
        key = (r["topic"], r["partition"])
        out = merged.setdefault(key, [])
        if (previous and previous["key"] == key and previous["ends"] and r["run"] == 0
                and r["bucket"] == previous["bucket"] + 1):
            out[-1][1] = r["last"]
            out[-1][2] += r["records"]
        else:
            out.append([r["first"], r["last"], r["records"]])
        previous = {"key": key, "bucket": r["bucket"], "ends": r["run"] == r["present"]}
    return merged


# ----------------------------------------------------------------- compacted topics


def _latest(prepared: DataFrame) -> DataFrame:
    return prepared.groupBy(*PARTITION, "key").agg(
        F.max_by("fp", "offset").alias("fp"), F.max("offset").alias("offset"),
        F.max_by("tombstone", "offset").alias("tombstone"))


def diff_compacted(source: DataFrame, target: DataFrame, replicated_until: dict[tuple[str, int], int]
                   ) -> dict[tuple[str, int], dict]:
    """Latest record per key on each side. Keys whose latest source record is past what the
    connector has replicated (`replicated_until`: first offset not yet replicated) are in flight
    and left out. A source tombstone matches a target that deleted the key or never had it."""
    limits = source.sparkSession.createDataFrame(
        [(t, p, o) for (t, p), o in sorted(replicated_until.items())], "topic string, partition int, until long")
    s = _latest(source).join(F.broadcast(limits), PARTITION).filter(F.col("offset") < F.col("until"))
    s = s.select(*PARTITION, "key", *(F.col(c).alias(f"s_{c}") for c in ("fp", "offset", "tombstone")))
    t = _latest(target).select(*PARTITION, "key", *(F.col(c).alias(f"t_{c}") for c in ("fp", "tombstone")))
    j = s.join(t, [*PARTITION, "key"], "full_outer")
    match = (F.col("s_fp") == F.col("t_fp")) | (
        F.col("s_tombstone") & (F.col("t_fp").isNull() | F.col("t_tombstone")))
    match = F.coalesce(match, F.lit(False))
    j = j.withColumn("missing", F.col("s_fp").isNotNull() & ~match).withColumn(
        "unexpected", F.col("t_fp").isNotNull() & ~F.coalesce(F.col("t_tombstone"), F.lit(False)) & ~match)
    out = {}
    for r in j.groupBy(*PARTITION).agg(
            F.count("s_fp").alias("s"), F.count("t_fp").alias("t"),
            F.sum(F.col("missing").cast("long")).alias("missing"),
            F.sum(F.col("unexpected").cast("long")).alias("unexpected"),
            F.sort_array(F.collect_list(F.when(F.col("missing"), F.col("s_offset")))).alias("offsets")).collect():
        out[(r["topic"], r["partition"])] = {
            "sourceRecords": r["s"], "targetRecords": r["t"], "missing": r["missing"], "unexpected": r["unexpected"],
            "missingRanges": _runs(r["offsets"])}
    return out


def _runs(offsets: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for o in offsets:
        if runs and o == runs[-1][1] + 1:
            runs[-1][1] = o
            runs[-1][2] += 1
        else:
            runs.append([o, o, 1])
    return runs


# ----------------------------------------------------------------- freshness


def heartbeat_times(records: DataFrame) -> dict[str, int]:
    """Newest heartbeat per source alias, in epoch ms, from a replicated heartbeats topic.

    MirrorMaker 2's Heartbeat (connect/mirror-client/.../Heartbeat.java): the key is KEY_SCHEMA
    alone, sourceClusterAlias and targetClusterAlias as int16-length-prefixed strings, with no
    version in front (serializeKey); the value is an int16 version, then the int64 timestamp
    (serializeValue). Read from real heartbeats in tests/runtime/test_replication.py."""
    def int_at(col: Column, pos: int, size: int) -> Column:
        return F.conv(F.hex(F.substring(col, pos, size)), 16, 10).cast("long")
    alias_len = int_at(F.col("key"), 1, 2)
    alias = F.substring(F.col("key"), F.lit(3), alias_len.cast("int")).cast("string")
    stamp = int_at(F.col("value"), 3, 8)
    rows = (records.filter(F.length("value") >= 10).select(alias.alias("alias"), stamp.alias("ms"))
            .groupBy("alias").agg(F.max("ms").alias("ms")).collect())
    return {r["alias"]: r["ms"] for r in rows}
