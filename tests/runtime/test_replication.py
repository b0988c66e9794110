"""The runtime tier: replication for real. Kafka brokers (one single-node KRaft cluster per alias,
with the security the topology declares), distributed Connect workers and the MirrorMaker 2
connectors, at the Kafka version and with the config providers of each supported operator
release (pom.xml), configured by exactly what the program renders: the objects are created on a
real kube-apiserver with real material in their Secrets, each worker's config providers read it
as the flow's service account (a TokenRequest token), and each KafkaConnector is sent to its
worker as the operator sends it (infra/tools/rehearsal/operator.py: the only stand-in, for the
operator, reproduced from each release's source).

Not run here: the operator's own reconciliation and pods (infra/tools/rehearsal/operator.py says how
each is stood in for). Without the jars or the API server these tests skip, and fail under CI
(APISERVER_REQUIRED=1, .ci/run).
"""

from __future__ import annotations

import base64
import copy
import re
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from infra.checks import validation
from infra.tools.rehearsal.process import RuntimeStartError
from tests.support.material import material
from tests.support.processes import run_kept
from tests.support.replication import (HAND_MADE_STATES, DEV, RELEASE_IDS, RUNTIME_IDS, Ledger, arrived, audit_run,
                                       dev_for_runtime, eventually, expected, for_runtime, halted, records, rehearsal,
                                       running, under_writes, user_topics)
from tests.support.stacks import (RELEASE_ENDS, RELEASES, RELEASES_BY_WORKER_CONNECTION, ROOT, RUNTIME_RELEASES, ids,
                                  on_release, unavailable)
from tests.support.worker_metrics import GROUP, attach_exporter, prove_worker_metrics

pytestmark = pytest.mark.runtime


# ------------------------------------------------------------------ the dev stack, every release


@pytest.mark.parametrize("flavour,version", RELEASES, ids=RELEASE_IDS)
def test_dev_stack_replicates_on_every_release(flavour, version, runtime_api, tmp_path, monkeypatch):
    """The documents' flow (us-west SASL_SSL PLAIN, JKS trust -> us-east SASL_SSL PLAIN, PEM
    trust; Default policy) on the release's Kafka, config providers and worker file; on each
    release a stack stays on, with the release's metrics exporter on the worker and its scrape
    proven once the flow has copied (tests/support/worker_metrics.py)."""
    metered = (flavour, version) in RUNTIME_RELEASES
    with rehearsal(dev_for_runtime(flavour, version), tmp_path, runtime_api) as r:
        if metered:
            attach_exporter(monkeypatch, r, flavour, version)
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {"test.orders": 2, "other": 1})
        sent = records(6, "dev")
        r.clients.produce(source, "test.orders", sent)
        r.clients.produce(source, "other", [{"key": "x", "value": "not replicated"}])
        # A consumer group on the source, before the connectors start (the metrics' checkpoints read it too).
        r.clients.consume(source, ["test.orders"], 6, 30_000, group=GROUP)
        assert r.clients.group_offsets(source, GROUP) == {"test.orders:0": 3, "test.orders:1": 3}

        r.deploy()
        states = running(r)
        assert sorted(states) == ["repl-us-west-us-east-checkpoint", "repl-us-west-us-east-heartbeat",
                                   "repl-us-west-us-east-source"]
        assert [t["state"] for t in states["repl-us-west-us-east-heartbeat"]["tasks"]] == ["RUNNING"]
        # The worker found every plugin (the connectors, Strimzi's config providers) by its
        # ServiceLoader manifest, as the rendered `plugin.discovery` asks, with no reflective scan.
        (worker,) = r.workers.values()
        log = worker.process.log.read_text(errors="replace")
        assert "plugin.discovery = service_load" in log and "ReflectionScanner" not in log

        # Default policy: `<source>.<topic>`, every record intact, in its partition and offset.
        assert arrived(r, "us-east", "us-west.test.orders", 6) == expected(sent, "us-west.test.orders")
        # Heartbeats: written into the source by the heartbeat connector (its producer overrides
        # reach us-west), and replicated back as `us-west.heartbeats` by the source connector.
        # Kafka's Heartbeat key (serializeKey): the two aliases, int16-length-prefixed.
        key = "\x00\x07us-west\x00\x07us-east"
        assert {h["key"] for h in r.clients.consume(source, ["heartbeats"], 1, 60_000)} == {key}
        assert {h["key"] for h in r.clients.consume(target, ["us-west.heartbeats"], 1, 60_000)} == {key}
        # Checkpoints, and the group's offsets translated and committed on the target.
        assert r.clients.consume(target, ["us-west.checkpoints.internal"], 1, 90_000)
        translated = {"us-west.test.orders:0": 3, "us-west.test.orders:1": 3}
        eventually("the group's offsets on us-east",
                   lambda: r.clients.group_offsets(target, GROUP) == translated, 120)
        # The excluded topic never arrives; the target holds the flow's topics and nothing else.
        assert user_topics(r, "us-east") == [
            "repl-us-west-us-east-config-topic", "repl-us-west-us-east-offsets-topic",
            "repl-us-west-us-east-status-topic", "us-west.checkpoints.internal", "us-west.heartbeats",
            "us-west.test.orders"]
        assert user_topics(r, "us-west") == ["heartbeats", "mm2-offset-syncs.us-east.internal", "other", "test.orders"]
        if metered:
            prove_worker_metrics(r, flavour, version, tmp_path)


def test_the_worker_runs_the_kafka_of_its_connect_version(runtime_api, tmp_path):
    """`spec.version` chooses the Connect image (operator.connect_version): on Strimzi 0.48.0,
    4.0.0 rather than the default 4.1.0, and the dev flow replicates on it. The brokers stay the
    release's (they are the user's clusters, not the operator's)."""
    topo = dev_for_runtime("strimzi", "0.48.0")
    topo["operator"].setdefault("connect", {})["version"] = "4.0.0"
    with rehearsal(topo, tmp_path, runtime_api) as r:
        r.clients.create_topics(r.client("us-west"), {"test.orders": 2})
        sent = records(4, "v400")
        r.clients.produce(r.client("us-west"), "test.orders", sent)
        r.deploy()
        running(r)
        (connect,) = [o for o in r.objects if o["kind"] == "KafkaConnect"]
        assert connect["spec"]["version"] == "4.0.0"
        (worker,) = r.workers.values()
        assert worker.get("/")["version"] == "4.0.0"
        assert arrived(r, "us-east", "us-west.test.orders", 4) == expected(sent, "us-west.test.orders")


# ------------------------------------------------------------------ the prod stack, every release


PROD = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text())
# Cloudera's ConvertFromBytes/ConvertToBytes SMTs ship only in CSM's Connect image, and are on no
# public registry: the prod variant here runs the metrics connector without its chain (the
# ReplaceField between them needs their structured values). Every other transform, predicate and
# setting is prod's own.
CLOUDERA_ONLY = "com.cloudera."


def prod_for_runtime(flavour: str, version: str) -> dict:
    topo = for_runtime(on_release(PROD, flavour, version))
    for flow in topo["flows"]:
        for part in flow.get("connectClusters", []):
            for source in part.get("sources", []):
                if any(t["type"].startswith(CLOUDERA_ONLY) for t in source.get("transforms", [])):
                    source.pop("transforms")
                    source.pop("predicates", None)
    return topo


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def values(got: list[dict]) -> list[tuple[str, str, str]]:
    return sorted((r["topic"], r["key"], r["value"]) for r in got)


@pytest.mark.heavy
@pytest.mark.parametrize("flavour,version", RUNTIME_RELEASES, ids=RUNTIME_IDS)
def test_prod_stack_replicates_on_every_release(flavour, version, runtime_api, tmp_path):
    """prod: four clusters with four security setups (SASL_SSL PLAIN with JKS trust, SASL_SSL
    SCRAM-SHA-512 with PEM trust, SSL with client certificates, SASL_PLAINTEXT SCRAM-SHA-256),
    the documented flow, prefixless replication, a chain, a bidirectional prefixless pair with the
    loop filter, a flow split over two Connect clusters with two source connectors on one."""
    with rehearsal(prod_for_runtime(flavour, version), tmp_path, runtime_api) as r:
        c = {alias: r.client(alias) for alias in r.clusters}
        produce = {
            "us-west": {"test.a": 2, "payments.card": 2, "payments.internal.x": 1, "low.cpu": 2,
                        "high.metrics.cpu": 2, "high.events.login": 2},
            "us-east": {"orders.eu": 3, "shared.ref": 3},
            "eu-central": {"shared.ref": 2, "audit.log": 2},
        }
        for alias, topics in produce.items():
            r.clients.create_topics(c[alias], {t: 1 for t in topics if not (alias == "eu-central" and t == "shared.ref")}
                                    | ({"shared.ref": 1} if alias == "eu-central" else {}))
            for topic, n in topics.items():
                r.clients.produce(c[alias], topic, [{"key": f"{alias}-{topic}-{i}", "value": f"{{\"host\": \"h{i}\"}}",
                                                     "headers": {"n": str(i)}} for i in range(n)])
        r.deploy()
        states = running(r, 240)
        # Every connector of every flow runs, the heartbeat connectors included.
        assert sorted(states) == sorted(
            f"{name}-{kind}" for name, kinds in {
                "repl-us-west-us-east": ("source", "checkpoint", "heartbeat"),
                "orders-to-eu": ("source", "checkpoint", "heartbeat"),
                "repl-eu-central-archive": ("source", "heartbeat"),
                "repl-us-east-eu-central": ("source", "heartbeat"),
                "repl-eu-central-us-east": ("source", "heartbeat"),
                "telemetry-small": ("source", "checkpoint"),  # one heartbeat connector per flow
                "telemetry-high": ("source-metrics", "source-events", "checkpoint", "heartbeat"),
            }.items() for kind in kinds)

        def read(alias: str, topic: str, n: int) -> list[tuple[str, str, str]]:
            return values(r.clients.consume(c[alias], [topic], n, 90_000))

        body = [f"{{\"host\": \"h{i}\"}}" for i in range(3)]
        # The documented flow: prefixed, the excluded payments topic absent.
        assert read("us-east", "us-west.payments.card", 2) == [
            ("us-west.payments.card", f"us-west-payments.card-{i}", body[i]) for i in range(2)]
        # Prefixless into eu-central, then on to the archive (a chain of identity flows).
        assert read("eu-central", "orders.eu", 3) == [("orders.eu", f"us-east-orders.eu-{i}", body[i]) for i in range(3)]
        assert read("archive", "orders.eu", 3) == [("orders.eu", f"us-east-orders.eu-{i}", body[i]) for i in range(3)]
        assert read("archive", "audit.log", 2) == [("audit.log", f"eu-central-audit.log-{i}", body[i]) for i in range(2)]
        # The split flow: each Connect cluster's topics, prefixed; the events connector's header.
        assert read("archive", "us-west.low.cpu", 2) == [("us-west.low.cpu", f"us-west-low.cpu-{i}", body[i])
                                                        for i in range(2)]
        assert read("archive", "us-west.high.metrics.cpu", 2) == [
            ("us-west.high.metrics.cpu", f"us-west-high.metrics.cpu-{i}", body[i]) for i in range(2)]
        # A chain that writes headers keeps Connect's default header converter (ByteArrayConverter
        # refuses InsertHeader's typed value), which hands the copied headers on base64-encoded:
        # pinned here as it happens (docs/topology.md#headers).
        events = r.clients.consume(c["archive"], ["us-west.high.events.login"], 2, 90_000)
        assert sorted((e["key"], e["headers"]) for e in events) == [
            (f"us-west-high.events.login-{i}", {"n": b64(str(i)), "replicated-by": "telemetry"}) for i in range(2)]
        # Without such a chain, headers arrive as they were.
        lows = r.clients.consume(c["archive"], ["us-west.low.cpu"], 2, 90_000)
        assert sorted((e["key"], e["headers"]) for e in lows) == [(f"us-west-low.cpu-{i}", {"n": str(i)}) for i in range(2)]
        # The bidirectional pair: each side's records arrive once on the other, and never return.
        both = sorted([("shared.ref", f"us-east-shared.ref-{i}", body[i]) for i in range(3)]
                      + [("shared.ref", f"eu-central-shared.ref-{i}", body[i]) for i in range(2)])
        assert read("us-east", "shared.ref", 5) == both
        assert read("eu-central", "shared.ref", 5) == both
        # What crossed carries the loop filter's mark of where it came from.
        crossed = r.clients.consume(c["eu-central"], ["shared.ref"], 5, 90_000)
        assert sorted((e["key"], e["headers"]) for e in crossed) == sorted(
            [(f"us-east-shared.ref-{i}", {"n": b64(str(i)), "replicated-from-us-east": "true"}) for i in range(3)]
            + [(f"eu-central-shared.ref-{i}", {"n": str(i)}) for i in range(2)])
        time.sleep(15)  # quiescence: several refresh and poll cycles later, still five on each side
        assert r.clients.end_offsets(c["us-east"], ["shared.ref"]) == {"shared.ref:0": 5}
        assert r.clients.end_offsets(c["eu-central"], ["shared.ref"]) == {"shared.ref:0": 5}
        assert "us-west.payments.internal.x" not in r.clients.topics(c["us-east"])


# ------------------------------------------------------------------ security modes, trust formats


SECURITY = {
    "clusters": {
        "plain": {"bootstrapServers": "plain-kafka.kafka-plain:9092"},
        "p12": {"bootstrapServers": "p12-kafka.kafka-p12:9093",
                "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-256", "username": "mover"},
                             "tls": {"trust": "pkcs12"}}},
        "jks": {"bootstrapServers": "jks-kafka.kafka-jks:9093",
                "security": {"protocol": "SSL", "tls": {"trust": "jks", "clientCertificate": True}}},
        "tls": {"bootstrapServers": "tls-kafka.kafka-tls:9093", "security": {"protocol": "SSL", "tls": {"trust": "pem"}}},
    },
    "flows": [
        {"source": "p12", "target": "plain", "topics": ["a\\..*"], "replicationPolicy": "identity",
         "topicsExclude": [".*heartbeats"]},
        {"source": "jks", "target": "plain", "topics": ["b\\..*"], "replicationPolicy": "identity",
         "topicsExclude": [".*heartbeats"]},
        {"source": "plain", "target": "tls", "topics": ["c\\..*"], "replicationPolicy": "identity",
         "topicsExclude": [".*heartbeats"]},
    ],
}


@pytest.mark.parametrize("flavour,version", RELEASES_BY_WORKER_CONNECTION, ids=ids(RELEASES_BY_WORKER_CONNECTION))
def test_security_modes_and_trust_formats(flavour, version, runtime_api, tmp_path):
    """What dev and prod do not cover: PLAINTEXT as source and target, SASL_SSL SCRAM-SHA-256
    with a PKCS12 truststore as a source, SSL with client certificates and a JKS truststore as a
    source, TLS without client certificates as a target; Identity policy throughout. (A target
    trusts PEM only: Strimzi's KafkaConnect takes PEM certificates, and JKS or PKCS12 targets are
    refused before deploy.)

    The target's `caCert` is a bundle whose first certificate is an unrelated CA and whose second
    is the one the brokers chain to (a rotation's old and new CA): every release trusts the
    whole bundle, through one trusted key per certificate (infra/plan/connection.py)."""
    topo = for_runtime(on_release({"operator": {}, **SECURITY}, flavour, version))
    with rehearsal(topo, tmp_path, runtime_api) as r:
        decoy, own = material("retired-root").ca_pem, r.clusters["tls"].material.ca_pem
        r.secret_config["tls.caCert"] = decoy + own
        sent = {"p12": "a.orders", "jks": "b.orders", "plain": "c.orders"}
        for alias, topic in sent.items():
            r.clients.create_topics(r.client(alias), {topic: 2})
            r.clients.produce(r.client(alias), topic, records(4, alias))
        r.deploy()
        states = running(r)
        assert sorted(states) == sorted(f"repl-{s}-{t}-{k}" for s, t in (("p12", "plain"), ("jks", "plain"),
                                                                             ("plain", "tls"))
                                         for k in ("source", "checkpoint", "heartbeat"))
        # Identity: names kept, every record intact.
        assert arrived(r, "plain", "a.orders", 4) == expected(records(4, "p12"), "a.orders")
        assert arrived(r, "plain", "b.orders", 4) == expected(records(4, "jks"), "b.orders")
        assert arrived(r, "tls", "c.orders", 4) == expected(records(4, "plain"), "c.orders")
        (ca,) = [o for o in r.objects if o["kind"] == "Secret" and o["metadata"]["name"] == "target-tls-ca"]
        assert ca["stringData"] == {"ca-0.crt": decoy, "ca-1.crt": own, "ca.crt": decoy + own}


# ------------------------------------------------------------------ least privilege, for real


def test_connectors_read_only_what_the_role_grants(runtime_api, tmp_path):
    """The Role the program renders is all the connectors need (the dev flow runs with it, above);
    without one of its Secrets the source connector is refused by the worker, naming it."""
    with rehearsal(dev_for_runtime("csm", "1.2"), tmp_path, runtime_api) as r:
        objects = r.render()
        (role,) = [o for o in objects if o["kind"] == "Role"]
        (secrets_rule,) = [rule for rule in role["rules"] if rule["resources"] == ["secrets"]]
        assert secrets_rule["resourceNames"] == ["source-us-west"]
        secrets_rule["resourceNames"] = []
        role["rules"] = [rule for rule in role["rules"] if rule["resourceNames"]]
        with pytest.raises(RuntimeStartError) as refused:
            r.deploy(objects)
        assert str(refused.value) == (
            "repl-us-west-us-east/repl-us-west-us-east: PUT /connectors/repl-us-west-us-east-source/config: HTTP 500: "
            '{"error_code":500,"message":"Failed to retrieve Secret source-us-west from Kubernetes namespace '
            'repl-us-west-us-east"}')


# ------------------------------------------------------------------ exactly-once


@pytest.mark.parametrize("flavour,version", RELEASE_ENDS, ids=ids(RELEASE_ENDS))
def test_exactly_once_rollout_and_a_hard_kill(flavour, version, runtime_api, tmp_path):
    """The documents' two-step rollout on a running flow: preparing, then enabled (a rolling update
    of the workers); a read_committed consumer on the target sees every record exactly once. Then
    the worker killed (SIGKILL) under steady writes: still every record exactly once, in order."""
    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["exactlyOnce"] = "preparing"
    with rehearsal(topo, tmp_path, runtime_api) as r:
        source = r.client("us-west")
        r.clients.create_topics(source, {"test.orders": 2})
        ledger = Ledger(r, "test.orders", "us-west.test.orders")
        ledger.produce("before")
        r.deploy(r.render())
        running(r)
        enabled = copy.deepcopy(topo)
        enabled["flows"][0]["exactlyOnce"] = "enabled"
        r.redeploy(r.render(enabled))
        (connect,) = [o for o in r.objects if o["kind"] == "KafkaConnect"]
        assert connect["spec"]["config"]["exactly.once.source.support"] == "enabled"
        running(r)
        ledger.produce("after")
        got = r.clients.consume(r.client("us-east"), ["us-west.test.orders"], 8, 90_000, isolation="read_committed")
        assert sorted(g["key"] for g in got) == sorted([f"before-k{i}" for i in range(4)] + [f"after-k{i}" for i in range(4)])
        assert sum(r.clients.end_offsets(r.client("us-east"), ["us-west.test.orders"]).values()) >= 8

        # The worker's JVM killed (SIGKILL) while producers write, its container restarted as the
        # kubelet restarts it. Its open transactions are aborted when the new tasks' producers
        # fence them, and the source offsets were committed in the same transactions as the
        # records (KIP-618), so a read_committed consumer sees every record once, in order per
        # partition: Kafka's ExactlyOnceSourceIntegrationTest kills workers and finds none twice.
        # (No ninth record of the eight above either: the read of one more than the ledger holds.)
        (connect_key,) = r.workers
        under_writes(r, ledger, "kill", lambda: r.kill_worker(connect_key))
        got = r.clients.consume(r.client("us-east"), [ledger.remote], len(ledger.sent), 120_000, isolation="read_committed")
        assert {p: [g["key"] for g in sorted(got, key=lambda g: g["offset"]) if g["partition"] == p] for p in (0, 1)} == {
            p: [s["key"] for s in ledger.sent if s["partition"] == p] for p in (0, 1)}
        assert len(r.clients.consume(r.client("us-east"), [ledger.remote], len(ledger.sent) + 1, 15_000,
                                     isolation="read_committed")) == len(ledger.sent)


# ------------------------------------------------------------------ the audit on real Kafka


def partition_findings(result: dict) -> dict[str, list[str]]:
    return {f"{t['target']}[{p['partition']}]": p["findings"]
            for flow in result["flows"] for t in flow["topics"] for p in t["partitions"]}


def test_audit_on_real_kafka(runtime_api, tmp_path):
    """The audit's verdicts on real clusters: exit 0 on a healthy flow, then exit 1 naming each
    real fault: an extra record in a target topic, a value that differs, a connector stopped
    while the source keeps growing, and a group's checkpoints gone stale (the checkpoint connector
    stopped while the group reads on at the source)."""
    topo = dev_for_runtime("csm", "1.2")  # checkpoints emitted every 5 s
    topo["flows"][0]["config"]["source"]["offset.lag.max"] = 2
    topo["audit"] = {"thresholds": {"maxLag": 3, "maxCheckpointAgeSeconds": 5}, "window": {"graceMinutes": 0}}
    start_ms = int(time.time() * 1000) - 60_000
    group, checkpoints = "test.readers", ["us-west.checkpoints.internal"]
    with rehearsal(topo, tmp_path, runtime_api, **HAND_MADE_STATES) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {"test.orders": 2})
        r.clients.produce(source, "test.orders", [{"key": f"k{i}", "value": f"v{i}", "partition": i % 2}
                                                  for i in range(10)])
        r.clients.consume(source, ["test.orders"], 10, 30_000, group=group)  # commits 5 and 5
        r.deploy()
        running(r)
        worker = r.workers[("repl-us-west-us-east", "repl-us-west-us-east")]
        connector = "repl-us-west-us-east-source"
        assert len(arrived(r, "us-east", "us-west.test.orders", 10)) == 10
        eventually("the group's checkpoints", lambda: sum(r.clients.end_offsets(target, checkpoints).values()) >= 2, 120)

        def committed() -> dict[int, int]:
            offsets = worker.get(f"/connectors/{connector}/offsets")["offsets"]
            return {o["partition"]["partition"]: o["offset"]["offset"] for o in offsets
                    if o["partition"].get("topic") == "test.orders"}
        eventually("the source connector's committed offsets", lambda: committed() == {0: 4, 1: 4}, 120)

        code, result, _ = audit_run(r, tmp_path, start_ms, "healthy")
        assert (code, result["status"]) == (0, "ok"), result
        assert {k: result["totals"][k] for k in ("sourceRecords", "targetRecords", "missing", "unexpected")} == {
            "sourceRecords": 10, "targetRecords": 10, "missing": 0, "unexpected": 0}
        (row,) = result["flows"][0]["checkpoints"]  # exact: the group committed nothing since
        assert {k: row[k] for k in ("group", "partitions", "behindRecords", "behindMax", "findings")} == {
            "group": group, "partitions": 2, "behindRecords": 0, "behindMax": 0, "findings": []}
        assert 0 <= row["ageSeconds"] < 300
        # When the stack's CA copies expire, read from the mounted files (us-west's JKS through
        # keytool, us-east's PEM), as `cryptography` reads each cluster's CA certificate.
        assert result["certificates"] == [
            {"cluster": alias, "item": item, "notAfter": int(x509.load_pem_x509_certificate(
                r.clusters[alias].material.ca_pem.encode()).not_valid_after_utc.timestamp()) * 1000}
            for alias, item in (("us-east", "caCert"), ("us-west", "truststore"))]

        # 1. An extra record produced straight into the target topic.
        r.clients.produce(target, "us-west.test.orders", [{"key": "intruder", "value": "x", "partition": 0}])
        code, result, _ = audit_run(r, tmp_path, start_ms, "extra-record")
        assert (code, result["status"]) == (1, "findings")
        assert partition_findings(result) == {"us-west.test.orders[0]": ["1 unexpected record(s)"],
                                              "us-west.test.orders[1]": []}

        # 2. A value that differs: the connector stopped, the record's offset marked as replicated
        # (Connect's offsets API), and another value written in its place on the target.
        worker.request("PUT", f"/connectors/{connector}/stop")
        halted(worker, connector, "STOPPED")
        now = int(time.time() * 1000)
        (offset,) = r.clients.produce(source, "test.orders", [{"key": "k-diff", "value": "original", "partition": 1,
                                                               "timestamp": now}])
        r.clients.produce(target, "us-west.test.orders", [{"key": "k-diff", "value": "corrupted", "partition": 1,
                                                           "timestamp": now}])
        worker.request("PATCH", f"/connectors/{connector}/offsets", {"offsets": [
            {"partition": {"cluster": "us-west", "topic": "test.orders", "partition": 1}, "offset": {"offset": offset}}]})
        worker.request("PUT", f"/connectors/{connector}/resume")
        worker.wait_running(connector)
        code, result, _ = audit_run(r, tmp_path, start_ms, "value-differs")
        assert (code, result["status"]) == (1, "findings")
        assert partition_findings(result) == {"us-west.test.orders[0]": ["1 unexpected record(s)"],
                                              "us-west.test.orders[1]": ["1 missing record(s)",
                                                                         "1 unexpected record(s)"]}

        # 3. The connector stopped while the source keeps growing.
        worker.request("PUT", f"/connectors/{connector}/stop")
        halted(worker, connector, "STOPPED")
        r.clients.produce(source, "test.orders", [{"key": f"late{i}", "value": "v", "partition": 0} for i in range(5)])
        code, result, _ = audit_run(r, tmp_path, start_ms, "connector-stopped")
        assert (code, result["status"]) == (1, "findings")
        findings = partition_findings(result)
        assert findings["us-west.test.orders[0]"] == ["lag of 5 record(s)"], findings

        # 4. Stale checkpoints: the connector back, the checkpoint connector stopped, and the group
        # reading on at the source (to offsets 10 and 6) with no checkpoint of it written.
        worker.request("PUT", f"/connectors/{connector}/resume")
        worker.wait_running(connector)
        checkpoint = "repl-us-west-us-east-checkpoint"
        worker.request("PUT", f"/connectors/{checkpoint}/stop")
        eventually("the checkpoint connector stopped, its tasks gone", lambda: (lambda st: st["connector"]["state"]
                   == "STOPPED" and st["tasks"] == [])(worker.status(checkpoint)), 60)
        assert len(r.clients.consume(source, ["test.orders"], 6, 30_000, group=group)) == 6
        assert r.clients.group_offsets(source, group) == {"test.orders:0": 10, "test.orders:1": 6}
        time.sleep(6)  # past maxCheckpointAgeSeconds
        code, result, _ = audit_run(r, tmp_path, start_ms, "checkpoints-stale")
        assert (code, result["status"]) == (1, "findings")
        (row,) = result["flows"][0]["checkpoints"]
        assert (row["behindRecords"], row["behindMax"]) == (6, 5) and row["ageSeconds"] > 5
        assert row["findings"] == [
            f"group {group}: its newest checkpoint is {row['ageSeconds']:.0f} s old (threshold 5 s) and its commits on "
            "us-west are up to 5 record(s) of a partition past it (offset.lag.max 2): consumers failing over now "
            "would read 6 record(s) again"]


# ------------------------------------------------------------------ python -m infra rehearse


def rehearse_cli(*args: str, timeout: float = 900):
    import sys

    from infra.tools.rehearsal.apiserver import apiserver_binary
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    # In a session the keeper guards: stopped from outside, this test ends the command's servers too.
    return run_kept([sys.executable, "-m", "infra", "rehearse", *args], timeout=timeout, cwd=ROOT)


# The dev stack's rehearsal through the command, every line of its report: from the installed
# package (tests/runtime/test_installed.py).


STAMP = "com.example.transforms.Stamp"


def stamp_plugin(folder: Path) -> Path:
    """A plugin.path folder holding tests/data/plugins/Stamp.java compiled against the
    release's Connect API, in a folder of its own (`<folder>/stamp/stamp.jar`)."""
    import subprocess
    import zipfile

    from infra.tools.rehearsal import jars
    from infra.tools.rehearsal.process import java
    classes = folder / "classes"
    done = subprocess.run([str(Path(java()).with_name("javac")), "-nowarn", "-d", str(classes), "-cp",
                           jars.classpath(validation.parse(DEV).operator.release),
                           str(ROOT / "tests/data/plugins/Stamp.java")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    jar = folder / "plugins" / "stamp" / "stamp.jar"
    jar.parent.mkdir(parents=True)
    with zipfile.ZipFile(jar, "w") as archive:
        for found in sorted(classes.rglob("*.class")):
            archive.write(found, found.relative_to(classes).as_posix())
    return folder / "plugins"


def test_rehearse_loads_a_plugin_path_and_reports_what_the_worker_refuses(tmp_path):
    """A team's own transform, on two source connectors of one flow: no jar holds it, so the
    rehearsal exits 2 before anything starts; with its plugin folder the real worker loads it
    with Connect's plugin isolation: the connector that configures it replicates, the one that
    leaves out its required setting is refused by the worker, with the worker's own message, exit 1.
    The second run puts the source 30 ms away (`--distance`): its broker in the far namespace."""
    topo = copy.deepcopy(DEV)
    flow = topo["flows"][0]
    del flow["topics"]
    flow["sources"] = [
        {"name": "stamped", "topics": [r"test\.a.*"],
         "transforms": [{"name": "Stamp", "type": STAMP, "keepsTopic": True, "config": {"value": "team-a"}}]},
        {"name": "unset", "topics": [r"test\.b.*"],
         "transforms": [{"name": "Stamp", "type": STAMP, "keepsTopic": True}]}]
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(topo))
    started = time.monotonic()
    done = rehearse_cli(str(path), "--records", "3")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines()[:2] == [
        "error: the rehearsal has 2 problem(s):",
        "  - flow repl-us-west-us-east, connector repl-us-west-us-east-source-stamped: transforms.Stamp.type: got "
        f"'{STAMP}'; expected a class of the jars the workers run here for csm 1.2 (Apache Kafka's Connect and "
        "MirrorMaker 2, Strimzi's config providers) or of a --plugin-path folder (a jar, or a folder of jars, per "
        "plugin); or --allow-missing to rehearse the connectors that can run"]
    assert time.monotonic() - started < 60  # the jars' listings, no JVM
    plugins = stamp_plugin(tmp_path)
    done = rehearse_cli(str(path), "--records", "3", "--plugin-path", str(plugins), "--keep", str(tmp_path / "work"),
                        "--distance", "us-west=30")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "at a distance: us-west, 30 ms round trip, from everything else (the kernel's TCP through a delaying " \
           "relay)" in lines, done.stdout
    # The source broker listened on the link's far address, which only its namespace has.
    server = (tmp_path / "work" / "rehearsal" / "kafka" / "us-west" / "server.properties").read_text()
    assert re.search(r"^listeners=CLIENTS://10\.200\.\d+\.\d+:9093,", server, re.M), server
    assert re.fullmatch(r"     ok  repl-us-west-us-east: us-west/test\.a\.rehearsal -> us-east/us-west\.test\.a\.rehearsal: "
                        r"3/3 records, all within \d+\.\d s of the connectors running", lines[-4])
    assert lines[-3:] == [
        "MISSING  repl-us-west-us-east: us-west/test.b.rehearsal -> us-east/us-west.test.b.rehearsal: 0/3 records",
        "  error: repl-us-west-us-east/repl-us-west-us-east: PUT /connectors/repl-us-west-us-east-source-unset/config: "
        'HTTP 400: {"error_code":400,"message":"Connector configuration is invalid and contains the following 1 '
        'error(s):\\nMissing required configuration \\"transforms.Stamp.value\\" which has no default value.\\n'
        'You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"}',
        "  error: repl-us-west-us-east-source-unset: 0 of 3 sample records arrived in us-east/us-west.test.b.rehearsal"]
    # Connect found it in the pod's plugin.path, as its own log says.
    log = next((tmp_path / "work" / "rehearsal" / "pods").glob("*/worker.log")).read_text()
    assert f"Added plugin '{STAMP}'" in log


def test_rehearse_refuses_invalid_input_before_starting_anything(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "topology.yaml"
    path.write_text("clusters: {a: {bootstrapServers: 'a:9092'}}\nflows: [{source: a, target: b, topics: [x]}]\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "infra", "rehearse", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "flows[0] (repl-a-b): target: got 'b'; expected a cluster alias defined under `clusters`: a" in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.heavy
def test_make_rehearse_of_the_prod_stack_runs_what_can_run_here_and_names_the_rest():
    """README's `make rehearse STACK=prod`, as written, on prod's own topology: its metrics
    connector loads Cloudera's SMTs, which no public registry holds; it is named before the
    start and in the report, and every other flow's samples arrive: exit 0."""
    from infra.tools.rehearsal.apiserver import apiserver_binary
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    done = run_kept(["make", "-s", "--no-print-directory", "rehearse", "STACK=prod"], timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    why = ("it loads com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes$Value (transforms.ConvertFromBytes.type), "
           "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes$Value (transforms.ConvertToBytes.type), which no "
           "jar here provides (--plugin-path adds a folder of plugins)")
    assert f"not run here: telemetry-high-source-metrics: {why}" in lines
    # Without --keep, the run's folder (brokers' logs and stores) goes with the run.
    (work,) = [m.group(1) for line in lines if (m := re.match(r"rehearsing stacks/prod\.yaml in (\S+); ", line))]
    assert work.startswith(tempfile.gettempdir()) and not Path(work).exists()
    assert re.fullmatch(r"4 Kafka cluster\(s\) up in \d+ s", lines[-10])
    assert re.fullmatch(r"7 Connect worker\(s\), 17 connector\(s\) running \d+ s after the start", lines[-9])
    assert lines[-8] == ("NOT RUN  telemetry: us-west/high.metrics.rehearsal -> archive/us-west.high.metrics.rehearsal: "
                         f"telemetry-high-source-metrics not run here: {why}")
    arrived = [re.sub(r"all within \d+\.\d s", "all within N s", line) for line in lines[-7:]]
    assert arrived == [f"     ok  {flow}: {path}: 10/10 records, all within N s of the connectors running" for flow, path in (
        ("orders-to-eu", "us-east/orders.rehearsal -> eu-central/orders.rehearsal"),
        ("repl-eu-central-archive", "eu-central/orders.rehearsal -> archive/orders.rehearsal"),
        ("repl-eu-central-us-east", "eu-central/shared.rehearsal -> us-east/shared.rehearsal"),
        ("repl-us-east-eu-central", "us-east/shared.rehearsal -> eu-central/shared.rehearsal"),
        ("repl-us-west-us-east", "us-west/test.rehearsal -> us-east/us-west.test.rehearsal"),
        ("telemetry", "us-west/high.events.rehearsal -> archive/us-west.high.events.rehearsal"),
        ("telemetry", "us-west/low.rehearsal -> archive/us-west.low.rehearsal"))]
