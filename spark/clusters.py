"""How the audit reaches a Kafka cluster: metadata and watermarks through confluent-kafka
(librdkafka), records through Spark's Kafka source — or, for local runs and tests, Parquet dumps
with exactly the Kafka source's row schema.

Both kinds of cluster answer the same questions, so everything above this module is the same in
production and in tests:
  topics()                  {topic: TopicInfo(partitions, compacted)}
  watermarks(topics)        {(topic, partition): (earliest, end)}
  offsets_for_times(t, [ms]) per ms, {partition: first offset with timestamp >= ms (end when none)}
  read(ranges)              a DataFrame of the records in {(topic, partition): (start, end)}
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from infra.audit import CREDENTIAL_FILES
from infra.connection import jaas_config
from infra.model import Mechanism
from spark.offsets import Unverifiable

# Spark's Kafka source with includeHeaders=true: the schema of every record DataFrame here.
KAFKA_ROW = T.StructType([
    T.StructField("key", T.BinaryType()),
    T.StructField("value", T.BinaryType()),
    T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()),
    T.StructField("timestamp", T.TimestampType()),
    T.StructField("timestampType", T.IntegerType()),
    T.StructField("headers", T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                                       T.StructField("value", T.BinaryType())]))),
])
Ranges = dict[tuple[str, int], tuple[int, int]]
METADATA_FILE = "topics.json"


@dataclass(frozen=True)
class TopicInfo:
    partitions: int
    compacted: bool


# ----------------------------------------------------------------- client configuration


def _read(directory: Path, item: str) -> str:
    path = directory / CREDENTIAL_FILES[item]
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise Unverifiable(f"credentials: cannot read {path} ({exc.strerror})") from None


def _pem_from_store(directory: Path, store_type: str) -> Path:
    """librdkafka trusts PEM only: export a JKS/PKCS#12 truststore's certificates with keytool
    (the Spark image has a JDK)."""
    store = directory / CREDENTIAL_FILES["truststore"]
    out = Path(tempfile.mkdtemp(prefix="audit-trust-")) / "ca.pem"
    result = subprocess.run(["keytool", "-list", "-rfc", "-keystore", str(store), "-storetype", store_type,
                             "-storepass:file", str(directory / CREDENTIAL_FILES["truststorePassword"])],
                            capture_output=True, text=True)
    if result.returncode:
        raise Unverifiable(f"credentials: keytool could not read {store}: {result.stderr.strip()[:200]}")
    # Keep the certificates only: keytool's listing wraps them in alias names, dates and counts.
    pem = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", result.stdout, re.DOTALL)
    if not pem:
        raise Unverifiable(f"credentials: {store} holds no certificate")
    out.write_text("\n".join(pem) + "\n")
    return out


def librdkafka_config(cluster: dict, credentials: Path) -> dict:
    """confluent-kafka client properties for a cluster of the audit configuration."""
    conf = {"bootstrap.servers": cluster["bootstrapServers"], "security.protocol": cluster["securityProtocol"]}
    if cluster["saslMechanism"]:
        conf.update({"sasl.mechanism": cluster["saslMechanism"], "sasl.username": cluster["saslUsername"],
                     "sasl.password": _read(credentials, "password")})
    trust = cluster["trust"]
    if trust == "pem":
        conf["ssl.ca.location"] = str(credentials / CREDENTIAL_FILES["caCert"])
    elif trust:
        conf["ssl.ca.location"] = str(_pem_from_store(credentials, trust.upper()))
    if cluster["clientCertificate"]:
        conf["ssl.certificate.location"] = str(credentials / CREDENTIAL_FILES["clientCert"])
        conf["ssl.key.location"] = str(credentials / CREDENTIAL_FILES["clientKey"])
    return conf


def spark_kafka_options(cluster: dict, credentials: Path) -> dict:
    """Options of Spark's Kafka source (the Java client, `kafka.`-prefixed) for the same cluster."""
    opts = {"kafka.bootstrap.servers": cluster["bootstrapServers"],
            "kafka.security.protocol": cluster["securityProtocol"]}
    if cluster["saslMechanism"]:
        opts["kafka.sasl.mechanism"] = cluster["saslMechanism"]
        opts["kafka.sasl.jaas.config"] = jaas_config(Mechanism(cluster["saslMechanism"]), cluster["saslUsername"],
                                                     _read(credentials, "password"))
    trust = cluster["trust"]
    if trust == "pem":
        opts.update({"kafka.ssl.truststore.type": "PEM",
                     "kafka.ssl.truststore.location": str(credentials / CREDENTIAL_FILES["caCert"])})
    elif trust:
        opts.update({"kafka.ssl.truststore.type": trust.upper(),
                     "kafka.ssl.truststore.location": str(credentials / CREDENTIAL_FILES["truststore"]),
                     "kafka.ssl.truststore.password": _read(credentials, "truststorePassword")})
    if cluster["clientCertificate"]:
        opts.update({"kafka.ssl.keystore.type": "PEM",
                     "kafka.ssl.keystore.certificate.chain": _read(credentials, "clientCert"),
                     "kafka.ssl.keystore.key": _read(credentials, "clientKey")})
    return opts


# ----------------------------------------------------------------- Kafka


class KafkaCluster:
    """A live cluster: librdkafka for metadata, Spark's Kafka source for records."""

    def __init__(self, spark: SparkSession | None, client_config: dict, spark_options: dict | None = None,
                 timeout_seconds: float = 30.0):
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient
        self.spark, self.options, self.timeout = spark, spark_options or {}, timeout_seconds
        # Metadata only: no group membership, nothing committed.
        self.consumer = Consumer({**client_config, "group.id": "kafka-replication-audit",
                                  "enable.auto.commit": False, "log_level": 3})
        self.admin = AdminClient({**client_config, "log_level": 3})

    def _call(self, what: str, fn, *args):
        from confluent_kafka import KafkaException
        try:
            return fn(*args)
        except KafkaException as exc:
            raise Unverifiable(f"{what}: {exc.args[0]}") from None

    def partitions(self) -> dict[str, int]:
        meta = self._call("metadata", self.consumer.list_topics, None, self.timeout)
        return {t: len(m.partitions) for t, m in sorted(meta.topics.items()) if m.error is None}

    def cleanup_policies(self, names: list[str]) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource
        if not names:
            return {}
        futures = self.admin.describe_configs([ConfigResource("topic", t) for t in names],
                                              request_timeout=self.timeout)
        return {resource.name: self._call(f"configs of {resource.name}", future.result)["cleanup.policy"].value
                for resource, future in futures.items()}

    def topics(self) -> dict[str, TopicInfo]:
        partitions = self.partitions()
        policies = self.cleanup_policies(sorted(partitions))
        return {t: TopicInfo(n, "compact" in policies[t].split(",")) for t, n in partitions.items()}

    def watermarks(self, topics: dict[str, TopicInfo]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition
        return {(t, p): self._call(f"watermarks of {t}[{p}]", self.consumer.get_watermark_offsets,
                                   TopicPartition(t, p), self.timeout)
                for t, info in sorted(topics.items()) for p in range(info.partitions)}

    def offsets_for_times(self, topic: str, partitions: int, times: list[int], ends: dict[int, int]
                          ) -> list[dict[int, int]]:
        from confluent_kafka import TopicPartition
        out = []
        for ms in times:
            found = self._call(f"offsets for time of {topic}", self.consumer.offsets_for_times,
                               [TopicPartition(topic, p, ms) for p in range(partitions)], self.timeout)
            # -1: no record at or after `ms`: the window ends at the partition's end.
            out.append({tp.partition: tp.offset if tp.offset >= 0 else ends[tp.partition] for tp in found})
        return out

    def read(self, ranges: Ranges) -> DataFrame:
        ranges = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
        if not ranges:
            return self.spark.createDataFrame([], KAFKA_ROW)
        starting, ending = {}, {}
        for (topic, partition), (start, end) in sorted(ranges.items()):
            starting.setdefault(topic, {})[str(partition)] = start
            ending.setdefault(topic, {})[str(partition)] = end
        assign = {t: sorted(int(p) for p in parts) for t, parts in starting.items()}
        return (self.spark.read.format("kafka").options(**self.options)
                .option("assign", json.dumps(assign)).option("startingOffsets", json.dumps(starting))
                .option("endingOffsets", json.dumps(ending)).option("includeHeaders", "true")
                # A range that aged out while we read fails the query instead of skipping.
                .option("failOnDataLoss", "true").load()
                .select(*KAFKA_ROW.fieldNames()))


# ----------------------------------------------------------------- Parquet dumps


class ParquetCluster:
    """`<root>/<topic>/*.parquet` in the Kafka row schema, with `<root>/topics.json`:
    {topic: {"partitions": n, "cleanupPolicy": "delete", "earliest": {p: offset}, "end": {p: offset}}}
    (earliest/end as the broker would report them: records may have aged out before the dump)."""

    def __init__(self, spark: SparkSession, root: Path):
        self.spark, self.root = spark, Path(root)
        path = self.root / METADATA_FILE
        try:
            self.meta = json.loads(path.read_text())
        except OSError as exc:
            raise Unverifiable(f"{path}: {exc.strerror}") from None

    def topics(self) -> dict[str, TopicInfo]:
        return {t: TopicInfo(m["partitions"], "compact" in m.get("cleanupPolicy", "delete").split(","))
                for t, m in sorted(self.meta.items())}

    def watermarks(self, topics: dict[str, TopicInfo]) -> dict[tuple[str, int], tuple[int, int]]:
        return {(t, p): (self.meta[t]["earliest"][str(p)], self.meta[t]["end"][str(p)])
                for t, info in sorted(topics.items()) for p in range(info.partitions)}

    def _frame(self, topics) -> DataFrame:
        paths = [str(self.root / t) for t in sorted(topics) if (self.root / t).is_dir()]
        if not paths:
            return self.spark.createDataFrame([], KAFKA_ROW)
        return self.spark.read.schema(KAFKA_ROW).parquet(*paths)

    def offsets_for_times(self, topic: str, partitions: int, times: list[int], ends: dict[int, int]
                          ) -> list[dict[int, int]]:
        # The broker's time index, emulated: one pass over the topic for every time asked.
        rows = (self._frame([topic]).groupBy("partition").agg(*(
            F.min(F.when(F.col("timestamp") >= F.timestamp_millis(F.lit(ms)), F.col("offset"))).alias(f"o{i}")
            for i, ms in enumerate(times))).collect())
        found = {r["partition"]: r for r in rows}
        return [{p: found[p][f"o{i}"] if p in found and found[p][f"o{i}"] is not None else ends[p]
                 for p in range(partitions)} for i in range(len(times))]

    def read(self, ranges: Ranges) -> DataFrame:
        ranges = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
        if not ranges:
            return self.spark.createDataFrame([], KAFKA_ROW)
        wanted = None
        for (topic, partition), (start, end) in sorted(ranges.items()):
            cond = ((F.col("topic") == topic) & (F.col("partition") == partition)
                    & (F.col("offset") >= start) & (F.col("offset") < end))
            wanted = cond if wanted is None else wanted | cond
        return self._frame({t for t, _ in ranges}).filter(wanted)
