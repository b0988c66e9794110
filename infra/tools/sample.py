"""Sample data for local audit runs and tests: `python -m infra.tools.sample DIR`.

Simulates four clusters and the flows of SAMPLE_TOPOLOGY record by record (MirrorMaker 2's
behaviour: same partition, key, value, headers and timestamp; loop headers for the bidirectional
pair), injects faults, and writes what the audit reads:

  DIR/audit.json                   the audit configuration, derived by infra/plan/audit.py
  DIR/kafka/<alias>/<topic>/*.parquet   each cluster's topics, in Spark's Kafka row schema
  DIR/kafka/<alias>/topics.json    partitions, cleanup policy, earliest/end offsets
  DIR/connect/<connector>.json     each MirrorSourceConnector's REST offsets payload
  DIR/window.json                  the audited window and the time heartbeats are aged at
  DIR/truth.json                   what the audit must report, computed from the simulation

Faults (FAULTS): a lost range that crosses a transaction marker and a time bucket, a replayed
(duplicated) range, a corrupted value, records produced straight into a target topic, a lagging
partition, a retention gap (records aged out before replication), a stale compacted key, a
record lost in one direction of the bidirectional pair, stale heartbeats for one flow, a target
partition whose window start aged out, and clean at-least-once duplicates that must not count.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from contract import audit as audit_contract
from infra.core.errors import TopologyError
from infra.tools import folders

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, on a bucket boundary
RECORDS = 400                # per partition, one per second
WINDOW = (BASE_MS + 100_000, BASE_MS + 340_000)
NOW_MS = WINDOW[1] + 60_000
MARKER_EVERY = 50            # transactional topics: a commit marker takes an offset every 50 records

SAMPLE_TOPOLOGY = {
    "operator": {"flavour": "strimzi"},
    "clusters": {a: {"bootstrapServers": f"{a}-kafka-bootstrap.kafka-{a}:9092"}
                 for a in ("us-west", "us-east", "eu-central", "archive")},
    "flows": [
        {"source": "us-west", "target": "us-east", "topics": ["orders", "payments", "users"]},
        {"source": "eu-central", "target": "archive", "name": "audit-archive", "replicationPolicy": "identity",
         "topics": ["audit\\..*"]},
        {"source": "us-east", "target": "eu-central", "name": "shared", "bidirectional": True,
         "topics": ["shared\\..*"]},
    ],
    "audit": {"thresholds": {"maxLag": 20, "maxHeartbeatAgeSeconds": 300},
              "window": {"lookbackMinutes": 4, "graceMinutes": 1, "bucketSeconds": 60}},
}


@dataclass
class Record:
    key: bytes | None
    value: bytes | None
    ts: int
    headers: list = field(default_factory=list)
    offset: int = -1


@dataclass
class Partition:
    records: list[Record] = field(default_factory=list)
    earliest: int = 0
    end: int = 0
    transactional: bool = False

    def append(self, record: Record) -> Record:
        if self.transactional and self.records and len(self.records) % MARKER_EVERY == 0:
            self.end += 1  # the commit marker's offset: no record there
        record.offset = self.end
        self.end += 1
        self.records.append(record)
        return record

    def retained(self) -> list[Record]:
        return [r for r in self.records if r.offset >= self.earliest]


class Cluster:
    def __init__(self):
        self.topics: dict[str, list[Partition]] = {}
        self.compacted: set[str] = set()

    def topic(self, name: str, partitions: int, transactional: bool = False) -> list[Partition]:
        return self.topics.setdefault(name, [Partition(transactional=transactional) for _ in range(partitions)])


def _records(prefix: str, partition: int, count: int = RECORDS, headers=None) -> list[Record]:
    return [Record(f"{prefix}-{partition}-{i}".encode(), f"value {prefix} {partition} {i}".encode() * 3,
                   BASE_MS + i * 1000, list(headers or [])) for i in range(count)]


def in_window(r: Record) -> bool:
    return WINDOW[0] <= r.ts < WINDOW[1]


# ----------------------------------------------------------------- simulation


def simulate():
    from infra.checks import validation
    from infra.plan.audit import audit_config
    from infra.plan.stack import plan
    topo = validation.parse(SAMPLE_TOPOLOGY)
    config = audit_config(topo, plan(topo))
    flows = {f["name"]: f for f in config["flows"]}
    clusters = defaultdict(Cluster)
    committed: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)  # connector -> (topic, p) -> offset
    truth: dict = {"flows": {}}

    def expect(flow, topic, p, **values):
        truth["flows"].setdefault(flow, {"topics": {}})["topics"].setdefault(topic, {})[str(p)] = values

    # --- us-west -> us-east (default policy: us-west.<topic>)
    f1 = flows["repl-us-west-us-east"]
    west, east = clusters["us-west"], clusters["us-east"]
    conn1 = f1["connectors"][0]["name"]
    plans = {  # partition -> fault
        ("orders", 0): "lost", ("orders", 1): "replayed", ("orders", 2): "corrupted",
        ("payments", 0): "unexpected", ("payments", 1): "lagging", ("payments", 2): "retention"}
    for topic, n, transactional in (("orders", 3, True), ("payments", 3, False)):
        src, dst = west.topic(topic, n, transactional), east.topic(f"us-west.{topic}", n, transactional)
        for p in range(n):
            fault = plans.get((topic, p))
            for r in _records(topic, p):
                src[p].append(r)
            replicate_until = {"lagging": 350, "retention": 81}.get(fault, RECORDS)
            lost, replayed, corrupted = [], [], None
            for i, r in enumerate(src[p].records[:replicate_until]):
                if fault == "lost" and 145 <= i < 185:
                    lost.append(r)
                    continue
                if fault == "unexpected" and i == 301:
                    for j in range(5):  # someone produced into the replica topic, inside the window
                        dst[p].append(Record(b"stray-%d" % j, b"not replicated", BASE_MS + 300_500 + j * 10))
                copy = Record(r.key, r.value, r.ts, list(r.headers))
                if fault == "corrupted" and i == 250:
                    copy.value = b"corrupted" + r.value[9:]
                    corrupted = r
                dst[p].append(copy)
                if fault == "replayed" and i == 209:  # a task restart redelivers the last 10 records
                    for again in src[p].records[200:210]:
                        dst[p].append(Record(again.key, again.value, again.ts, list(again.headers)))
                        replayed.append(again)
            if fault == "retention":
                src[p].earliest = src[p].records[120].offset  # 0..119 deleted; the connector stopped at 80
            committed[conn1][(topic, p)] = src[p].records[replicate_until - 1].offset
            window_src = [r for r in src[p].retained() if in_window(r)]
            deferred = fault == "retention"
            lag = src[p].end - max(committed[conn1][(topic, p)] + 1, src[p].earliest)
            lost_offsets = max(0, src[p].earliest - committed[conn1][(topic, p)] - 1)
            expect(f1["name"], topic, p,
                   status="deferred" if deferred and not (lag > 20 or lost_offsets) else
                   "findings" if (lost or corrupted or fault in ("unexpected", "lagging", "retention")) else "ok",
                   sourceRecords=0 if deferred else len(window_src),
                   targetRecords=0 if deferred else len([r for r in dst[p].records if in_window(r)]),
                   missing=len(lost) + (1 if corrupted else 0),
                   missingRanges=_ranges(src[p].records, lost + ([corrupted] if corrupted else [])),
                   duplicate=len(replayed), unexpected=(5 if fault == "unexpected" else 0) + (1 if corrupted else 0),
                   lag=lag, lost=lost_offsets)
    # users: compacted; key u7's last update never arrived, u9 was deleted (tombstone) and the
    # target compacted the key away: that one matches.
    src, dst = west.topic("users", 1), east.topic("us-west.users", 1)
    west.compacted.add("users"), east.compacted.add("us-west.users")
    versions = [Record(f"u{k}".encode(), f"user {k} v{v}".encode(), BASE_MS + (k * 10 + v) * 1000)
                for v in range(3) for k in range(20)]
    versions.append(Record(b"u9", None, BASE_MS + 500_000))
    for r in versions:
        src[0].append(r)
    for r in versions:
        if r.key == b"u7" and r.value.endswith(b"v2"):
            continue
        dst[0].append(Record(r.key, r.value, r.ts))
    _compact(src[0])
    _compact(dst[0])
    dst[0].records = [r for r in dst[0].records if r.key != b"u9"]  # tombstone removed after delete.retention.ms
    committed[conn1][("users", 0)] = src[0].end - 1
    u7 = next(r for r in src[0].records if r.key == b"u7")
    expect(f1["name"], "users", 0, status="findings", sourceRecords=20, targetRecords=19, missing=1,
           missingRanges=[[u7.offset, u7.offset, 1]], duplicate=0, unexpected=1, lag=0, lost=0)
    _heartbeats(clusters, f1, last_ms=NOW_MS - 20 * 60_000)  # stale: the heartbeat connector stopped
    truth["flows"][f1["name"]]["freshness"] = {"ageSeconds": 20 * 60.0, "stale": True}

    # --- eu-central -> archive (identity: same names); clean, with at-least-once duplicates
    f2 = flows["audit-archive"]
    eu, archive = clusters["eu-central"], clusters["archive"]
    conn2 = f2["connectors"][0]["name"]
    src, dst = eu.topic("audit.login", 2), archive.topic("audit.login", 2)
    for p in range(2):
        for r in _records("login", p):
            src[p].append(r)
        replayed = 0
        for i, r in enumerate(src[p].records):
            dst[p].append(Record(r.key, r.value, r.ts, list(r.headers)))
            if p == 0 and i in (150, 151, 152, 153, 154):
                dst[p].append(Record(r.key, r.value, r.ts, list(r.headers)))
                replayed += 1
        committed[conn2][("audit.login", p)] = src[p].end - 1
        expect(f2["name"], "audit.login", p, status="ok",
               sourceRecords=len([r for r in src[p].records if in_window(r)]),
               targetRecords=len([r for r in dst[p].records if in_window(r)]),
               missing=0, missingRanges=[], duplicate=replayed, unexpected=0, lag=0, lost=0)
    _heartbeats(clusters, f2, last_ms=NOW_MS - 10_000)
    truth["flows"][f2["name"]]["freshness"] = {"ageSeconds": 10.0, "stale": False}

    # --- us-east <-> eu-central, prefixless, loop headers
    there, back = flows["shared-us-east-eu-central"], flows["shared-eu-central-us-east"]
    local = {a: {p: [Record(f"{a}-{p}-{i}".encode(), f"event {a} {p} {i}".encode(), BASE_MS + i * 1000 + shift)
                     for i in range(RECORDS // 2)] for p in range(2)}
             for a, shift in (("us-east", 0), ("eu-central", 500))}
    lost_record = local["us-east"][1][170]
    for flow, a, b in ((there, "us-east", "eu-central"), (back, "eu-central", "us-east")):
        header = flow["loopHeaders"]["added"]
        for p in range(2):
            arrived = [Record(r.key, r.value, r.ts, [(header, b"")]) for r in local[a][p] if r is not lost_record]
            merged = sorted(local[b][p] + arrived, key=lambda r: r.ts)
            part = clusters[b].topic("shared.events", 2)[p]
            for r in merged:
                part.append(Record(r.key, r.value, r.ts, list(r.headers)))
    for flow, a in ((there, "us-east"), (back, "eu-central")):
        conn = flow["connectors"][0]["name"]
        for p in range(2):
            part = clusters[a].topics["shared.events"][p]
            committed[conn][("shared.events", p)] = part.end - 1
            own = [r for r in local[a][p] if in_window(r)]
            missing = [r for r in local[a][p] if r is lost_record]
            src_records = [r for r in part.records if not r.headers]
            expect(flow["name"], "shared.events", p, status="findings" if missing else "ok",
                   sourceRecords=len(own), targetRecords=len(own) - len(missing), missing=len(missing),
                   missingRanges=_ranges(src_records, [next(r for r in src_records if r.key == m.key)
                                                       for m in missing]),
                   duplicate=0, unexpected=0, lag=0, lost=0)
        _heartbeats(clusters, flow, last_ms=NOW_MS - 30_000)
        truth["flows"][flow["name"]]["freshness"] = {"ageSeconds": 30.0, "stale": False}

    # A target partition whose window start aged out: archive's audit.login[1] lost its first 150
    # records to retention, so the window cannot be compared.
    archive.topics["audit.login"][1].earliest = archive.topics["audit.login"][1].records[150].offset
    expect(f2["name"], "audit.login", 1, status="findings", sourceRecords=0, targetRecords=0, missing=0,
           missingRanges=[], duplicate=0, unexpected=0, lag=0, lost=0,
           unverifiable="the window starts before the target's retained records")

    truth["status"] = "findings"
    for name, flow in truth["flows"].items():
        statuses = {p["status"] for t in flow["topics"].values() for p in t.values()}
        stale = flow.get("freshness", {}).get("stale")
        flow["status"] = "findings" if "findings" in statuses or stale else \
            "deferred" if "deferred" in statuses else "ok"
    return config, clusters, committed, truth


def _ranges(sequence: list[Record], chosen: list[Record]) -> list[list[int]]:
    """Runs of consecutive records of `sequence` (in offset order) that are in `chosen`."""
    marked = {id(r) for r in chosen}
    runs, previous = [], False
    for r in sequence:
        if id(r) in marked:
            if previous:
                runs[-1][1] = r.offset
                runs[-1][2] += 1
            else:
                runs.append([r.offset, r.offset, 1])
        previous = id(r) in marked
    return runs


def _compact(partition: Partition) -> None:
    latest = {}
    for r in partition.records:
        latest[r.key] = r
    partition.records = [r for r in partition.records if latest[r.key] is r]


def _heartbeats(clusters, flow: dict, last_ms: int) -> None:
    """MirrorMaker 2 heartbeats from the flow's source alias, as replicated to the target."""
    src, tgt = flow["sourceAlias"], flow["targetAlias"]
    part = clusters[tgt].topic(flow["heartbeats"]["target"], 1)[0]
    key = _heartbeat_key(src, tgt)
    for i in range(10, -1, -1):
        ms = last_ms - i * 1000
        part.append(Record(key, (0).to_bytes(2, "big") + ms.to_bytes(8, "big"), ms))
    part.records.sort(key=lambda r: r.ts)
    for offset, r in enumerate(part.records):
        r.offset = offset


def _heartbeat_key(source: str, target: str) -> bytes:
    """Heartbeat.serializeKey: the two aliases as int16-length-prefixed strings, no version."""
    def text(s: str) -> bytes:
        return len(s.encode()).to_bytes(2, "big") + s.encode()
    return text(source) + text(target)


# ----------------------------------------------------------------- writing


def write(root: Path) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq
    config, clusters, committed, truth = simulate()
    folders.SAMPLE.replace(root)  # never a folder of the user's own files (infra/tools/folders.py)
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", "UTC")),
                        ("timestampType", pa.int32()), ("headers", pa.list_(header))])
    for alias, cluster in sorted(clusters.items()):
        meta = {}
        for topic, parts in sorted(cluster.topics.items()):
            rows = [{"key": r.key, "value": r.value, "topic": topic, "partition": p, "offset": r.offset,
                     "timestamp": r.ts, "timestampType": 0,
                     "headers": [{"key": k, "value": v} for k, v in r.headers]}
                    for p, part in enumerate(parts) for r in part.retained()]
            (root / "kafka" / alias / topic).mkdir(parents=True)
            pq.write_table(pa.Table.from_pylist(rows, schema), root / "kafka" / alias / topic / "part-0.parquet")
            meta[topic] = {"partitions": len(parts),
                           "cleanupPolicy": "compact" if topic in cluster.compacted else "delete",
                           "earliest": {str(p): part.earliest for p, part in enumerate(parts)},
                           "end": {str(p): part.end for p, part in enumerate(parts)}}
        (root / "kafka" / alias / "topics.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    (root / "connect").mkdir()
    for connector, offsets in sorted(committed.items()):
        flow = next(f for f in config["flows"] if any(c["name"] == connector for c in f["connectors"]))
        payload = {"offsets": [{"partition": {"cluster": flow["sourceAlias"], "partition": p, "topic": t},
                                "offset": {"offset": o}} for (t, p), o in sorted(offsets.items())]}
        (root / "connect" / f"{connector}.json").write_text(json.dumps(payload, indent=1))
    (root / audit_contract.CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True))
    (root / "window.json").write_text(json.dumps({"from": WINDOW[0], "until": WINDOW[1], "now": NOW_MS}))
    (root / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True))
    return truth


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m infra.tools.sample DIR", file=sys.stderr)
        return 2
    try:
        truth = write(Path(argv[0]))
    except TopologyError as exc:
        print(f"error: {exc.report()}", file=sys.stderr)
        return 2
    print(f"sample written to {argv[0]}: {len(truth['flows'])} flows; expected status {truth['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
