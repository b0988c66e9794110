"""Which KafkaConnectors an apply of the stack has the stand-in operator reconcile at once
(infra/tools/rehearsal/operator.py `reconciled_at_apply`, called by Rehearsal.update): those the
operator's watches see, a connector new or changed and every connector of a KafkaConnect that
changed; the others, unchanged (a state set by hand on the worker included), wait for the
periodic reconciliation, as with the operator."""

from __future__ import annotations

import copy

from infra.core import names
from infra.tools.rehearsal.operator import reconciled_at_apply

NS = "repl-plain-scram"
CONNECTOR = {"kind": "KafkaConnector", "metadata": {"name": f"{NS}-source", "namespace": NS,
                                                     "labels": {names.CLUSTER_LABEL: NS}},
             "spec": {"class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "tasksMax": 2,
                      "config": {"topics": "rot\\..*"}}}
SENT = {(NS, f"{NS}-source"): ((NS, NS), copy.deepcopy(CONNECTOR))}


def test_an_unchanged_connector_of_an_unchanged_connect_cluster_waits_for_the_periodic_reconciliation():
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, set()) is False
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, {("other", "other")}) is False  # another's change


def test_a_new_or_changed_connector_or_one_of_a_changed_connect_cluster_is_reconciled_at_once():
    changed = copy.deepcopy(CONNECTOR)
    changed["spec"]["config"]["topics"] = "rot\\..*|more"
    assert reconciled_at_apply(changed, SENT, set()) is True                          # its own object changed
    paused = copy.deepcopy(CONNECTOR)
    paused["spec"]["state"] = "paused"
    assert reconciled_at_apply(paused, SENT, set()) is True                           # its state in the topology
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), {}, set()) is True           # never reconciled
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, {(NS, NS)}) is True    # its KafkaConnect changed
