"""Topic configuration and ACL sync (docs/topology.md#topic-configuration-and-acl-sync) on real
Kafka and a real Connect worker, on every release: the flow's settings decide what reaches the
remote topic, and nothing moves once they are off.

Both clusters run Kafka's StandardAuthorizer here (Rehearsal.authorizers), so that ACLs exist
at all; the replication user is a super user on both."""

from __future__ import annotations

import copy
import time

import pytest

from tests.support.replication import dev_for_runtime, eventually, records, rehearsal, running
from tests.support.stacks import RELEASE_ENDS, ids

pytestmark = pytest.mark.runtime

TOPIC, REMOTE = "test.orders", "us-west.test.orders"
INTERVAL = 5   # seconds between syncs, here
QUIET = 4 * INTERVAL


def acl(principal: str, topic: str) -> str:
    return f"TOPIC {topic} LITERAL {principal} * READ ALLOW"


@pytest.mark.parametrize("flavour,version", RELEASE_ENDS, ids=ids(RELEASE_ENDS))
def test_topic_configs_and_acls_follow_the_flow_s_settings(flavour, version, runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)
    flow = topo["flows"][0]
    flow["heartbeats"] = False
    flow["syncTopicConfigs"] = {"exclude": ["retention\\.bytes"], "intervalSeconds": INTERVAL}
    flow["syncTopicAcls"] = {"enabled": True, "intervalSeconds": INTERVAL}
    with rehearsal(topo, tmp_path, runtime_api, authorizers=frozenset({"us-west", "us-east"})) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {TOPIC: 2})
        r.clients.alter_topic_configs(source, TOPIC, {"retention.ms": "86400000", "retention.bytes": "1048576"})
        r.clients.create_acls(source, [{"topic": TOPIC, "principal": "User:reader", "operation": "READ"}])
        r.clients.produce(source, TOPIC, records(2, "sync"))
        r.deploy()
        running(r)

        def remote_configs() -> dict[str, str]:
            return r.clients.topic_configs(target, REMOTE) if REMOTE in r.clients.topics(target) else {}

        # Copied when the remote topic is created, but for the flow's exclusion.
        eventually("the remote topic's retention", lambda: remote_configs().get("retention.ms") == "86400000", 90)
        assert "retention.bytes" not in remote_configs()
        eventually("the reader's ACL on the remote topic", lambda: acl("User:reader", REMOTE) in r.clients.acls(target),
                   90)
        # A change on the source reaches the remote topic at the next sync.
        r.clients.alter_topic_configs(source, TOPIC, {"retention.ms": "43200000"})
        eventually("the changed retention", lambda: remote_configs().get("retention.ms") == "43200000", 60)

        # Both off, as `pulumi up` applies it: nothing more moves.
        off = copy.deepcopy(topo)
        off["flows"][0]["syncTopicConfigs"] = {"enabled": False}
        off["flows"][0]["syncTopicAcls"] = {"enabled": False}
        r.update(r.render(off))
        running(r)
        r.clients.alter_topic_configs(source, TOPIC, {"retention.ms": "21600000"})
        r.clients.create_acls(source, [{"topic": TOPIC, "principal": "User:late", "operation": "READ"}])
        time.sleep(QUIET)
        assert remote_configs().get("retention.ms") == "43200000"
        assert [a for a in r.clients.acls(target) if REMOTE in a] == [acl("User:reader", REMOTE)]
