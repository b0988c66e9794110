"""Operator upgrades on the runtime tier: the dev flow replicating on real Kafka while its operator
goes 0.48.0 → 0.51.0 → 1.2.0 (and CSM 1.2 → 1.4), each step rolling the Connect workers onto the
next release's jars with what that release's render gives them. Every record arrives exactly
once: the workers of each release join the same Connect cluster (group id, storage topics) and
resume from its committed offsets; a Connect cluster that lost its state would copy every topic
again from the earliest offset, and the exact end offsets would show it.

What rolls the workers is the stand-in's (Rehearsal.upgrade: the operator's Connect images are
per release, so an upgrade rolls every pod); the Kubernetes side of the runbook (CRDs, aliases,
storage versions) runs on the engine tier (tests/engine/test_upgrade_runbook.py)."""

from __future__ import annotations

import pytest

from infra.core import releases
from infra.core.releases import Flavour
from tests.support.replication import Ledger, dev_for_runtime, rehearsal, running
from tests.support.schemas import strimzi_crds

pytestmark = pytest.mark.runtime

TOPIC, REMOTE = "test.orders", "us-west.test.orders"
NS = "repl-us-west-us-east"
PATHS = {"strimzi": ("0.48.0", "0.51.0", "1.2.0"), "csm": ("1.2", "1.4")}


@pytest.mark.parametrize("flavour", sorted(PATHS))
def test_a_flow_replicates_across_the_operator_upgrade_with_its_offsets(flavour, runtime_api, tmp_path):
    path = PATHS[flavour]
    topo = dev_for_runtime(flavour, path[0])
    topo["flows"][0]["heartbeats"] = False
    seen: list[tuple[str, str, dict[str, str]]] = []
    with rehearsal(topo, tmp_path, runtime_api) as r:
        r.clients.create_topics(r.client("us-west"), {TOPIC: 2})
        ledger = Ledger(r, TOPIC, REMOTE)
        produce = ledger.produce

        def holds_exactly(version: str) -> None:
            ledger.holds_exactly()

        produce(path[0])
        r.deploy()
        running(r)
        holds_exactly(path[0])
        for version in path[1:]:
            produce(f"before-{version}")  # sent on the old release, copied by the new one
            release = releases.find(Flavour(flavour), version)
            assert release is not None
            r.kube.crds = strimzi_crds(release)  # type: ignore[attr-defined]
            r.upgrade(dev_for_runtime(flavour, version) | {"flows": topo["flows"]})
            running(r)
            produce(f"after-{version}")
            holds_exactly(version)
            (worker,) = r.workers.values()
            seen.append((version, worker.get("/")["version"], worker_identity(worker.setup.properties)))
    identity = {"group.id": f"{NS}-consumer-group", "config.storage.topic": f"{NS}-config-topic",
                "offset.storage.topic": f"{NS}-offsets-topic", "status.storage.topic": f"{NS}-status-topic"}
    kafka = {v: releases.Release.apache_kafka(releases.find(Flavour(flavour), v).default_connect_version)  # type: ignore[union-attr]
             for v in path[1:]}
    assert seen == [(v, kafka[v], identity) for v in path[1:]]


def worker_identity(properties: dict[str, str]) -> dict[str, str]:
    return {k: properties[k] for k in ("group.id", "config.storage.topic", "offset.storage.topic",
                                       "status.storage.topic")}
