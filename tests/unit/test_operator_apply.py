"""Which KafkaConnectors an apply of the stack has the stand-in operator reconcile at once
(infra/tools/rehearsal/operator.py `reconciled_at_apply`, called by Rehearsal.update): every one,
but for a connector unchanged on a Connect cluster whose Secrets alone changed, which waits, as
the operator does, for the periodic reconciliation that rolls the pods."""

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


def test_an_unchanged_connector_waits_for_the_roll_its_secrets_asked_for():
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, {(NS, NS)}) is False


def test_a_changed_new_or_unrolled_connector_is_reconciled_at_once():
    changed = copy.deepcopy(CONNECTOR)
    changed["spec"]["config"]["topics"] = "rot\\..*|more"
    assert reconciled_at_apply(changed, SENT, {(NS, NS)}) is True          # its own object changed
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), {}, {(NS, NS)}) is True  # never reconciled
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, set()) is True     # no roll pending
    elsewhere = {("other", "other")}
    assert reconciled_at_apply(copy.deepcopy(CONNECTOR), SENT, elsewhere) is True  # another cluster's roll
