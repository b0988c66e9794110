"""The operator release is an input: its table decides, and its limits are refused clearly."""

from __future__ import annotations

import pytest

from infra.checks import validation
from infra.core import names
from infra.core.releases import SUPPORTED, Flavour, find
from tests.support import patterns
from tests.support.refusals import problems
from tests.support.stacks import doc_topology, on_release, render_topology


def test_defaults_keep_todays_stacks():
    assert validation.parse(doc_topology()).operator.release is find(Flavour.csm, "1.2")
    assert validation.parse(on_release(doc_topology(), "strimzi")).operator.release is find(Flavour.strimzi, "1.2.0")


@pytest.mark.parametrize("flavour,version,allowed", [
    ("csm", "1.0", "a supported csm release (1.2, 1.4): CSM 1.0 ships Strimzi 0.40, which has no pod volumes "
                   "(template.pod.volumes from 0.43): the source cluster's trust and key stores could never be mounted"),
    ("csm", "1.3", "a supported csm release: 1.2, 1.4"),
    ("csm", "0.48.0", "a supported csm release: 1.2, 1.4; 0.48.0 is a strimzi release: set flavour: strimzi"),
    ("strimzi", "0.45.0", "a supported strimzi release: 0.48.0, 0.51.0, 1.2.0"),
])
def test_unknown_and_unsupported_releases_are_refused(flavour, version, allowed):
    t = doc_topology()
    t["operator"].update(flavour=flavour, version=version)
    assert problems(t) == [f"operator: version: got {version!r}; expected {allowed}"]


def test_a_connect_version_outside_the_release_is_refused_wherever_it_is_set():
    t = on_release(patterns.split("strimzi", "1.2.0"), "strimzi", "1.2.0")
    t["operator"]["connect"]["version"] = "3.8.0.1.2"
    t["flows"][0]["connectClusters"][1]["connect"]["version"] = "4.1.0"
    allowed = "a Kafka Connect version strimzi 1.2.0 runs: 4.2.0, 4.2.1, 4.3.0, 4.3.1 (unset: 4.3.1)"
    assert problems(t) == [
        f"operator: connect.version: got '3.8.0.1.2'; expected {allowed}",
        f"flows[0] (workload): connectClusters[1].connect.version: got '4.1.0'; expected {allowed}"]


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: r.name)
def test_each_release_writes_its_api_version_and_default_connect_version(tmp_path, release):
    t = on_release(doc_topology(), release.flavour.value, release.version)
    t["operator"]["connect"].pop("version", None)
    r = render_topology(tmp_path, t)
    connect = next(o for o in r.objects() if o["kind"] == "KafkaConnect")
    assert (connect["apiVersion"], connect["spec"]["version"]) == (release.api_version, release.connect_versions[-1])
    assert r.outputs["operator"] == {"flavour": release.flavour.value, "version": release.version,
                                     "strimziVersion": release.strimzi, "kafkaVersion": release.kafka}


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: r.name)
def test_where_each_release_writes_a_connect_cluster_s_group_and_topics(tmp_path, release):
    """Spec fields from 0.49, `spec.config` keys before 1.0: both on the bridge release (for an
    operator rolled back to 0.48.0, whose CRD has no fields), the same values either way."""
    t = on_release(doc_topology(), release.flavour.value, release.version)
    connect = next(o for o in render_topology(tmp_path, t).objects() if o["kind"] == "KafkaConnect")
    spec, config = connect["spec"], connect["spec"]["config"]
    fields = {s.key: spec[s.field] for s in names.CONNECT_STORAGE if s.field in spec}
    keys = {s.key: config[s.key] for s in names.CONNECT_STORAGE if s.key in config}
    where = {"csm-1.2": "keys", "csm-1.4": "keys", "strimzi-0.48.0": "keys", "strimzi-0.51.0": "both",
             "strimzi-1.2.0": "fields"}[f"{release.flavour.value}-{release.version}"]
    assert (bool(fields), bool(keys)) == {"keys": (False, True), "both": (True, True), "fields": (True, False)}[where]
    assert fields | keys == keys | fields == names.connect_identity(spec, config)
    assert names.connect_identity(spec, config)["group.id"] == f"{connect['metadata']['namespace']}-consumer-group"


def test_kafka_4_has_one_heartbeat_copier_per_cluster_pair(tmp_path):
    o = {c["metadata"]["name"]: c["spec"]["config"] for c in
         render_topology(tmp_path, patterns.multi_instance("strimzi", "1.2.0")).objects() if c["kind"] == "KafkaConnector"}
    assert "heartbeats.replication.enabled" not in o["repl-us-west-us-east-source-first"]
    assert o["repl-us-west-us-east-source-second"]["heartbeats.replication.enabled"] is False
    # Kafka 3.x has no such key: it is never written.
    o = {c["metadata"]["name"]: c["spec"]["config"] for c in
         render_topology(tmp_path, patterns.multi_instance("csm", "1.4")).objects() if c["kind"] == "KafkaConnector"}
    assert not any("heartbeats.replication.enabled" in c for c in o.values())


def test_an_ssl_source_without_a_certificate_is_refused_beside_an_mtls_target():
    t = doc_topology(clusters={"a": {"bootstrapServers": "a:9093", "security": {"protocol": "SSL"}},
                               "b": {"bootstrapServers": "b:9093", "security": {
                                   "protocol": "SSL", "tls": {"clientCertificate": True}}}},
                     flows=[{"source": "a", "target": "b", "topics": ["t.*"]}])
    assert problems(t) == [
        "flows[0] (repl-a-b): heartbeats: got True; expected false, or a client certificate for a (clusters.a.security."
        "tls.clientCertificate): the heartbeat connector produces into a over SSL with the Connect worker's producer, "
        "which carries b's client key store (mTLS) and would authenticate to a as b's client"]
    t["flows"][0]["heartbeats"] = False
    validation.parse(t)


def test_the_rebalance_delay_is_rendered_in_milliseconds_and_bounded(tmp_path):
    """`connect.rebalanceDelaySeconds`: the workers' scheduled.rebalance.max.delay.ms; refused
    outside 0 to a day, with every problem at once."""
    t = doc_topology()
    t["operator"].setdefault("connect", {})["rebalanceDelaySeconds"] = 15
    (connect,) = [o for o in render_topology(tmp_path, t).objects() if o["kind"] == "KafkaConnect"]
    assert connect["spec"]["config"]["scheduled.rebalance.max.delay.ms"] == 15000
    t["operator"]["connect"]["rebalanceDelaySeconds"] = 86_401
    t["flows"][0]["connect"] = {"rebalanceDelaySeconds": -1}
    assert problems(t) == [
        "operator: connect.rebalanceDelaySeconds: got 86401; expected an integer from 0 to 86400",
        "flows[0] (repl-us-west-us-east): connect.rebalanceDelaySeconds: got -1; expected an integer from 0 to 86400"]
