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
from datetime import datetime, timezone
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from contract import audit as audit_contract
from contract.audit import CREDENTIAL_FILES
from contract.certificates import CertificateError, not_after, pem_certificates
from contract.clientprops import KEYSTORE_FILE, jaas_config, java_client_props, pem_keystore
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


_WORK: list[tempfile.TemporaryDirectory[str]] = []


def _private_file(name: str) -> Path:
    """A file in a folder of this process's own, mode 0700, removed when the process exits:
    what is made here from the mounted credentials (a private key among them) does not outlive
    the audit."""
    if not _WORK:
        _WORK.append(tempfile.TemporaryDirectory(prefix="audit-credentials-"))
    out = Path(_WORK[0].name) / f"{len(list(Path(_WORK[0].name).iterdir()))}-{name}"
    out.touch(mode=0o600)
    return out


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
    out = _private_file("ca.pem")
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


def certificate_expiries(cluster: dict, credentials: Path) -> dict[str, int]:
    """When each certificate item the audit is given for a cluster expires, in epoch seconds, by
    secret config item: a trust list when its last certificate does (an expired CA beside the
    renewed one, a bundle during a rotation, is harmless; the deployer refuses a list whose every
    certificate has expired), a client certificate when its own does (the first of its chain).
    These are the stack's copies, the same the connectors read."""
    def ders(path: Path, item: str) -> list[bytes]:
        try:
            found = pem_certificates(path.read_text(errors="replace"))
        except OSError as exc:
            raise Unverifiable(f"credentials: cannot read {item} ({path}): {exc.strerror}") from None
        except CertificateError as exc:
            raise Unverifiable(f"credentials: {item} ({path}): {exc}") from None
        if not found:
            raise Unverifiable(f"credentials: {item} ({path}) holds no certificate")
        return found

    def expiry(der: bytes, item: str) -> int:
        try:
            return not_after(der)
        except CertificateError as exc:
            raise Unverifiable(f"credentials: {item}: {exc}") from None
    out = {}
    trust = cluster["trust"]
    if trust == "pem":
        out["caCert"] = max(expiry(d, "caCert") for d in ders(credentials / CREDENTIAL_FILES["caCert"], "caCert"))
    elif trust:
        out["truststore"] = max(expiry(d, "truststore")
                                for d in ders(_pem_from_store(credentials, trust.upper()), "truststore"))
    if cluster["clientCertificate"]:
        out["clientCert"] = expiry(ders(credentials / CREDENTIAL_FILES["clientCert"], "clientCert")[0], "clientCert")
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
    """Options of Spark's Kafka source (the Java client, `kafka.`-prefixed) for the same cluster:
    the connectors' property set (contract/clientprops.py), its values taken from the mounted
    credential files."""
    trust, mechanism = cluster["trust"], cluster["saslMechanism"]
    values = {
        "bootstrap": lambda: cluster["bootstrapServers"],
        "protocol": lambda: cluster["securityProtocol"],
        "mechanism": lambda: mechanism,
        "jaas": lambda: jaas_config(mechanism, cluster["saslUsername"], _read(credentials, "password")),
        "truststore": lambda: str(credentials / CREDENTIAL_FILES["caCert" if trust == "pem" else "truststore"]),
        "truststorePassword": lambda: _read(credentials, "truststorePassword"),
        "keystore": lambda: str(_pem_keystore(credentials)),
    }
    return {f"kafka.{p.key}": p.constant if p.item is None else values[p.item]()
            for p in java_client_props(mechanism, trust, cluster["clientCertificate"])}


def _pem_keystore(directory: Path) -> Path:
    """The PEM key store file the connectors mount (key, then certificate chain), made from the
    mounted key and certificate; private to this process."""
    out = _private_file(KEYSTORE_FILE)
    out.write_text(pem_keystore(_read(directory, "clientKey"), _read(directory, "clientCert")))
    return out


# ----------------------------------------------------------------- Kafka


class KafkaCluster:
    """A live cluster: librdkafka for metadata, Spark's Kafka source for records."""

    def __init__(self, spark: SparkSession | None, client_config: dict, spark_options: dict | None = None,
                 timeout_seconds: float = 30.0):
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient
        self.spark, self.options, self.timeout = spark, spark_options or {}, timeout_seconds
        self.client_config = client_config  # the readiness reads (spark/live.py LiveCluster) make their own clients
        # Metadata only: no group membership, nothing committed.
        self.consumer = Consumer({**client_config, "group.id": audit_contract.JOB,
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
    (earliest/end as the broker would report them: records may have aged out before the dump).
    The files hold exactly the retained records: offsets in [earliest, end) of each partition."""

    def __init__(self, spark: SparkSession, root: Path):
        self.spark, self.root = spark, Path(root)
        self._groups: dict[str, list[_RowGroup]] = {}
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

    def offsets_for_times(self, topic: str, partitions: int, times: list[int], ends: dict[int, int]
                          ) -> list[dict[int, int]]:
        """The broker's answer (the first offset whose timestamp is at or after each time), found
        the way its time index finds it: row-group statistics (timestamp and offset ranges) say
        where to look, and only row groups that can hold an earlier answer are read."""
        groups = sorted(self._row_groups(topic), key=lambda g: g.offsets[0])
        answers = []
        for ms in times:
            best: dict[int, int] = {}
            for g in groups:
                if g.times[1] < ms:
                    continue
                # In offset order, a row group can only improve on an answer when its first
                # offset is below the answer of a partition it may hold.
                if all(p in best and best[p] <= g.offsets[0]
                       for p in range(max(g.partitions[0], 0), min(g.partitions[1], partitions - 1) + 1)):
                    continue
                for p, offset in g.first_at_or_after(ms).items():
                    if p < partitions and (p not in best or offset < best[p]):
                        best[p] = offset
            answers.append({p: best.get(p, ends[p]) for p in range(partitions)})
        return answers

    def _row_groups(self, topic: str) -> list[_RowGroup]:
        if topic not in self._groups:
            groups = [g for f in sorted((self.root / topic).glob("*.parquet")) for g in _RowGroup.of_file(f)]
            # The metadata promises the records of [earliest, end): a partition with none in the
            # files is a broken dump, which must not pass for an empty, matching partition.
            meta = self.meta.get(topic, {})
            for p in range(meta.get("partitions", 0)):
                earliest, end = meta["earliest"][str(p)], meta["end"][str(p)]
                if end > earliest and not any(g.partitions[0] <= p <= g.partitions[1] for g in groups):
                    raise Unverifiable(f"{self.root / topic}: the metadata says partition {p} holds offsets "
                                       f"{earliest}-{end}, the files hold none of them")
            self._groups[topic] = groups
        return self._groups[topic]

    def _whole(self, topic: str, bounds: dict[int, tuple[int, int]]) -> bool:
        """Whether the ranges cover every record the dump holds of the topic: [earliest, end)
        of each partition."""
        meta = self.meta.get(topic)
        if not meta:
            return False
        for p in range(meta["partitions"]):
            earliest, end = meta["earliest"][str(p)], meta["end"][str(p)]
            start, stop = bounds.get(p, (end, end))
            if earliest < end and (start > earliest or stop < end):
                return False
        return True

    def read(self, ranges: Ranges) -> DataFrame:
        """The records of the ranges, as the Kafka source reads them. Each topic's directory is
        read on its own (no per-record comparison of topic names)."""
        ranges = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
        frames = []
        for topic in sorted({t for t, _ in ranges}):
            bounds = {p: r for (t, p), r in ranges.items() if t == topic}
            self._row_groups(topic)  # refuses a dump that lacks promised records
            if not (self.root / topic).is_dir():
                continue
            frame = self.spark.read.schema(KAFKA_ROW).parquet(str(self.root / topic))
            if self._whole(topic, bounds):
                # Every retained record of the topic is wanted: like the Kafka source, read them
                # without testing each one.
                frames.append(frame)
                continue
            # Per partition its own offset range: pushed down, it prunes row groups by their
            # partition and offset statistics.
            frames.append(frame.filter(reduce(Column.__or__, (
                (F.col("partition") == p) & (F.col("offset") >= start) & (F.col("offset") < stop)
                for p, (start, stop) in sorted(bounds.items())))))
        if not frames:
            return self.spark.createDataFrame([], KAFKA_ROW)
        return reduce(DataFrame.unionByName, frames)


@dataclass(frozen=True)
class _RowGroup:
    """One Parquet row group of a dump, with the ranges its statistics give (whole ranges when a
    writer left them out, e.g. INT96 timestamps: then it is simply read)."""
    path: Path
    index: int
    partitions: tuple[int, int]
    offsets: tuple[int, int]
    times: tuple[int, int]  # epoch ms

    @classmethod
    def of_file(cls, path: Path) -> list[_RowGroup]:
        meta = pq.ParquetFile(path).metadata
        column = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        groups = []
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            if rg.num_rows == 0:
                continue

            def stats(name, whole, convert=int):
                st = rg.column(column[name]).statistics
                return (convert(st.min), convert(st.max)) if st is not None and st.has_min_max else whole
            groups.append(cls(path, i, stats("partition", (0, 2**31)), stats("offset", (0, 2**63)),
                              stats("timestamp", (-2**63, 2**63), _epoch_ms)))
        return groups

    def first_at_or_after(self, ms: int) -> dict[int, int]:
        table = pq.ParquetFile(self.path).read_row_group(self.index, columns=["partition", "offset", "timestamp"])
        stamps = pc.cast(table["timestamp"], pa.timestamp("ms", tz="UTC"), safe=False).cast(pa.int64())
        found = table.filter(pc.greater_equal(stamps, ms)).group_by("partition").aggregate([("offset", "min")])
        return dict(zip(found["partition"].to_pylist(), found["offset_min"].to_pylist()))


def _epoch_ms(value) -> int:
    if isinstance(value, datetime):
        return int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    return int(value)
