"""The operator stand-in's `strimzi.io/manual-rolling-update` on a Connect cluster's StrimziPodSet
(Rehearsal.annotate_for_rolling), read from Strimzi's AbstractConnectOperator.manualRollingUpdate
at 0.43.0 and 1.2.0: called first in every reconciliation of the KafkaConnect, it rolls every pod
of an annotated pod set; the operator watches KafkaConnect, not its pod sets, so the annotation
waits for the next reconciliation (the periodic one, two minutes by default, or a change of the
KafkaConnect). The pods roll onto the Secrets as they are then. The rolls are recorded here
instead of run (the roll itself, real workers replaced, is the runtime tier's:
tests/runtime/test_referenced_secrets.py's truststore drill)."""

from __future__ import annotations

import base64

from infra.tools.rehearsal.run import Rehearsal
from tests.support.replication import dev_for_runtime

CONNECT = ("repl", "repl")


def rehearsal_recording_rolls(tmp_path, monkeypatch) -> tuple[Rehearsal, list]:
    r = Rehearsal(dev_for_runtime("strimzi", "1.2.0"), tmp_path, kube=None, reconcile_every=None)  # type: ignore[arg-type]
    running = {"metadata": {"namespace": "repl", "name": "repl"}, "spec": {"replicas": 1}}
    r.workers[CONNECT] = object()  # type: ignore[assignment]
    r.connects[CONNECT] = running
    r.objects = [{"kind": "Secret", "metadata": {"namespace": "repl", "name": "west-stores"},
                  "data": {"truststore.jks": base64.b64encode(b"old and new CA").decode()}}]
    rolls: list = []
    monkeypatch.setattr(r, "_roll", lambda key, connect, secrets, configmaps: rolls.append((key, connect, secrets)))
    return r, rolls


def test_an_annotated_pod_set_rolls_at_the_next_reconciliation_onto_the_secrets_as_they_are(tmp_path, monkeypatch):
    r, rolls = rehearsal_recording_rolls(tmp_path, monkeypatch)
    r.annotate_for_rolling("repl", "repl")
    assert (rolls, r.manual_rolls) == ([], {CONNECT})  # nothing the operator watches changed
    r.periodic_reconciliation()
    assert rolls == [(CONNECT, r.connects[CONNECT], {"west-stores": {"truststore.jks": b"old and new CA"}})]
    # The pod set the operator writes after the roll carries no annotation: the next pass rolls nothing.
    assert r.manual_rolls == set()
    r.periodic_reconciliation()
    assert len(rolls) == 1


def test_with_a_secret_only_change_pending_the_pods_roll_twice_as_the_operator_rolls_them(tmp_path, monkeypatch):
    # manualRollingUpdate rolls the pods as they are; reconcilePodSet, later in the same pass,
    # rolls them again onto the new auth hash: two rolls, not one.
    r, rolls = rehearsal_recording_rolls(tmp_path, monkeypatch)
    changed = {"metadata": {"namespace": "repl", "name": "repl"}, "spec": {"replicas": 1, "version": "4.2.0"}}
    r.pending_rolls[CONNECT] = (changed, {}, {})
    r.annotate_for_rolling("repl", "repl")
    r.periodic_reconciliation()
    assert [(key, connect) for key, connect, _ in rolls] == [(CONNECT, r.connects[CONNECT]), (CONNECT, changed)]
    assert (r.manual_rolls, r.pending_rolls) == (set(), {})


def test_an_annotation_on_a_connect_cluster_that_is_gone_rolls_nothing(tmp_path, monkeypatch):
    r, rolls = rehearsal_recording_rolls(tmp_path, monkeypatch)
    r.annotate_for_rolling("repl", "other")
    r.periodic_reconciliation()
    assert (rolls, r.manual_rolls) == ([], set())
