"""A changed topic filter on a running flow, on the runtime tier: what reaches the running
connector when `pulumi up` applies a new render, and what does not.

A connector's topic filter is a `${cfmap:...}` reference the worker resolves when the connector
starts, and Strimzi PUTs a connector's config only when the spec differs from what Connect
returns, unresolved (infra/tools/rehearsal/operator.py `needs_reconfiguring`). The program therefore
puts a digest of the ConfigMap values each connector reads into its config
(`kafka-replication.configmaps.digest`, infra/plan/connectors.py `with_digest`). Here, on one pair of
real Kafka clusters and one real Connect worker with Strimzi's config providers:

- without the digest (objects deployed before it), the changed filter reaches the API server's
  ConfigMap and no connector: the stand-in PUTs nothing and the old filter keeps replicating;
- with it, the changed digest is a changed spec: the stand-in PUTs both connectors that read the
  filter, Connect restarts them, and they replicate what the new filter selects and nothing the
  old one alone did.

The documents' dev flow (SASL_SSL both ways) on Strimzi 1.2.0, without heartbeats."""

from __future__ import annotations

import copy
import time

import pytest

from infra.plan.connectors import CONFIGMAPS_DIGEST
from tests.support.replication import (arrived, dev_for_runtime, eventually, expected, records, rehearsal, running,
                                       user_topics)

pytestmark = pytest.mark.runtime

NS = "repl-us-west-us-east"
SOURCE, CHECKPOINT = f"{NS}-source", f"{NS}-checkpoint"
OLD_FILTER = ["test.*"]                           # stacks/dev.yaml's
NEW_FILTER = ["test\\.payments", "billing\\..*"]  # narrowed and changed
OLD_ONLY, BOTH, NEW_ONLY = "test.orders", "test.payments", "billing.invoices"
NEGATIVE_WAIT = 45.0  # seconds after the change in which the new-only topic must not arrive
N = 4                 # records per batch, over two partitions


def remote(topic: str) -> str:
    return f"us-west.{topic}"  # DefaultReplicationPolicy


def topology(topics: list[str]) -> dict:
    topo = dev_for_runtime("strimzi", "1.2.0")
    flow = topo["flows"][0]
    flow["heartbeats"] = False
    flow["topics"] = topics
    return topo


def without_digest(objects: list[dict]) -> list[dict]:
    """The render as a program without the digest wrote it: the key gone from every connector."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj["kind"] == "KafkaConnector":
            obj["spec"]["config"].pop(CONFIGMAPS_DIGEST, None)
    return out


def digests(objects: list[dict]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["spec"]["config"][CONFIGMAPS_DIGEST]
            for o in objects if o["kind"] == "KafkaConnector" and CONFIGMAPS_DIGEST in o["spec"]["config"]}


def only(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def specs(objects: list[dict]) -> dict[str, dict]:
    """Each KafkaConnector's spec, by name."""
    return {o["metadata"]["name"]: o["spec"] for o in only(objects, "KafkaConnector")}


def test_a_changed_filter_reaches_the_running_connector_through_the_digest(runtime_api, tmp_path):
    old_topo, new_topo = topology(OLD_FILTER), topology(NEW_FILTER)
    with rehearsal(old_topo, tmp_path, runtime_api) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {OLD_ONLY: 2, BOTH: 2, NEW_ONLY: 2})
        orders, payments, invoices = records(N, "orders-1"), records(N, "payments-1"), records(N, "invoices-1")
        r.clients.produce(source, OLD_ONLY, orders)
        r.clients.produce(source, BOTH, payments)
        r.clients.produce(source, NEW_ONLY, invoices)

        def remote_count(topic: str) -> int:
            return sum(r.clients.end_offsets(target, [remote(topic)]).values())

        def holds_exactly(topic: str, sent: list[dict]) -> None:
            """The target's copy holds `sent`, in its partitions and offsets, and nothing more."""
            assert arrived(r, "us-east", remote(topic), len(sent)) == expected(sent, remote(topic))
            assert remote_count(topic) == len(sent)

        # ---- deployed without the digest, at the old filter
        old_render, new_render = r.render(old_topo), r.render(new_topo)
        # Only the ConfigMap's value and the digests differ: no worker rolls, the change is
        # applied to the running worker (Rehearsal.update).
        assert only(old_render, "KafkaConnect") == only(new_render, "KafkaConnect")
        assert specs(without_digest(old_render)) == specs(without_digest(new_render))
        old_digests, new_digests = digests(old_render), digests(new_render)
        assert sorted(old_digests) == sorted(new_digests) == [CHECKPOINT, SOURCE]
        assert all(old_digests[name] != new_digests[name] for name in old_digests)

        r.deploy(without_digest(old_render))
        running(r)
        (connect,) = {c for c, _ in r.connectors.values()}
        worker = r.workers[connect]
        stored = worker.connector_config(SOURCE)
        assert stored is not None and CONFIGMAPS_DIGEST not in stored
        assert stored["topics"].startswith("${cfmap:")  # resolved by the worker, not stored resolved
        holds_exactly(OLD_ONLY, orders)
        holds_exactly(BOTH, payments)
        assert remote(NEW_ONLY) not in user_topics(r, "us-east")

        # ---- the negative control: the new filter applied without the digest
        puts = len(r.config_puts)
        changed_at = time.monotonic()
        r.update(without_digest(r.render(new_topo)))
        assert r.config_puts[puts:] == []  # the spec did not change: nothing PUT
        status, configmap = r.kube.client.request("GET", f"/api/v1/namespaces/{NS}/configmaps/replication")
        assert status == 200 and configmap["data"]["topics"] == ",".join(NEW_FILTER)
        running(r)
        orders2, payments2 = records(N, "orders-2"), records(N, "payments-2")
        r.clients.produce(source, OLD_ONLY, orders2)
        r.clients.produce(source, BOTH, payments2)
        # The running connector still selects the old filter: the old-only topic's new records arrive.
        holds_exactly(OLD_ONLY, orders + orders2)
        holds_exactly(BOTH, payments + payments2)
        time.sleep(max(0.0, NEGATIVE_WAIT - (time.monotonic() - changed_at)))
        negative_waited = time.monotonic() - changed_at
        assert remote(NEW_ONLY) not in user_topics(r, "us-east")
        assert CONFIGMAPS_DIGEST not in (worker.connector_config(SOURCE) or {})

        # ---- the digest deployed (the current program's objects at the old filter): the added
        # key is a changed spec, so both connectors are PUT and restart on the old filter.
        puts = len(r.config_puts)
        r.update(r.render(old_topo))
        assert sorted(r.config_puts[puts:]) == [(NS, CHECKPOINT), (NS, SOURCE)]
        running(r)

        # ---- the change with the digest, as `pulumi up` applies it
        puts = len(r.config_puts)
        changed_at = time.monotonic()
        r.update(r.render(new_topo))
        assert sorted(r.config_puts[puts:]) == [(NS, CHECKPOINT), (NS, SOURCE)]
        assert {name: (worker.connector_config(name) or {}).get(CONFIGMAPS_DIGEST)
                for name in (SOURCE, CHECKPOINT)} == new_digests
        running(r)
        # The topic only the new filter selects: its records, produced before any change, arrive
        # under the remote name, in their partitions and offsets.
        eventually(f"{N} records in {remote(NEW_ONLY)}",
                   lambda: remote(NEW_ONLY) in user_topics(r, "us-east") and remote_count(NEW_ONLY) == N, 120)
        positive_took = time.monotonic() - changed_at
        holds_exactly(NEW_ONLY, invoices)
        # Records produced now to the old-only topic do not arrive; those to the topic both
        # filters select do (produced after them: once they are there, the others would be).
        orders3, payments3 = records(N, "orders-3"), records(N, "payments-3")
        r.clients.produce(source, OLD_ONLY, orders3)
        r.clients.produce(source, BOTH, payments3)
        holds_exactly(BOTH, payments + payments2 + payments3)
        time.sleep(10)
        holds_exactly(OLD_ONLY, orders + orders2)
        holds_exactly(NEW_ONLY, invoices)

    print(f"negative control waited {negative_waited:.1f} s; with the digest the new-only topic "
          f"arrived {positive_took:.1f} s after the change")
    # The negative control waited longer than the change took to arrive with the digest.
    assert positive_took < negative_waited


def test_a_removed_flow_added_back_resumes_and_one_renamed_copies_again(runtime_api, tmp_path):
    """docs/operations.md#removing-a-flow on a real worker: the flow removed (its namespace's
    objects gone from the render, as `pulumi up` deletes them: the stand-in stops its pods) while
    the source keeps being written, then added back under the same name: its Connect cluster reads
    the storage topics the first one left on the target and resumes after the offsets stored at
    its clean stop, every record once. Then renamed: a new Connect cluster, new storage topics,
    and every record copied a second time."""
    topo = topology(OLD_FILTER)
    with rehearsal(topo, tmp_path, runtime_api) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {OLD_ONLY: 2})
        sent = records(N, "before")
        r.clients.produce(source, OLD_ONLY, sent)
        rendered = r.render(topo)
        r.deploy(rendered)
        running(r)
        assert arrived(r, "us-east", remote(OLD_ONLY), N) == expected(sent, remote(OLD_ONLY))

        # Removed: every object of the flow's namespace, the namespace with them.
        r.update([o for o in rendered if o["metadata"].get("namespace") != NS
                  and not (o["kind"] == "Namespace" and o["metadata"]["name"] == NS)])
        assert r.workers == {} and r.connectors == {}
        left = {t for t in user_topics(r, "us-east") if t.startswith(NS)}
        assert left == {f"{NS}-config-topic", f"{NS}-offsets-topic", f"{NS}-status-topic"}
        meanwhile = records(N, "meanwhile")
        r.clients.produce(source, OLD_ONLY, meanwhile)
        time.sleep(5)
        assert sum(r.clients.end_offsets(target, [remote(OLD_ONLY)]).values()) == N  # nothing copies them

        # Added back under the same name: resumed, nothing twice.
        r.update(rendered)
        running(r)
        assert arrived(r, "us-east", remote(OLD_ONLY), 2 * N) == expected(sent + meanwhile, remote(OLD_ONLY))
        time.sleep(5)
        assert sum(r.clients.end_offsets(target, [remote(OLD_ONLY)]).values()) == 2 * N

        # Renamed: a new Connect cluster on new storage topics copies every record again.
        renamed = copy.deepcopy(topo)
        renamed["flows"][0]["name"] = "again"
        r.update(r.render(renamed))
        running(r)
        assert {c for c, _ in r.connectors.values()} == {("again", "again")}
        twice = eventually("every record copied a second time", lambda: (lambda got: got if len(got) == 4 * N
                           else None)(arrived(r, "us-east", remote(OLD_ONLY), 4 * N)), 120)
        for partition in (0, 1):
            keys = [g["key"] for g in twice if g["partition"] == partition]
            once = [s["key"] for s in sent + meanwhile if s["partition"] == partition]
            assert keys == once + once  # the earliest offset again, in order
