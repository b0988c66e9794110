"""Passwords from Secrets the team keeps (`security.sasl.passwordSecret`), on real Kafka with SCRAM
users and a real Connect worker whose Strimzi config providers read the team's Secrets from the
API server: the flow replicates with no credential of its own anywhere in the render, and each
password's rotation, declared by its `version`, reaches exactly what reads it.

The team's Secrets are made by the rehearsal as the team's tooling would sync them (credentials.py
`kept_secrets`). What `pulumi up` does to the Connect cluster is the operator stand-in's
(infra/tools/rehearsal/operator.py: the roll on a changed pod template, the connector config PUT
where the spec differs, the refusal of a missing Secret)."""

from __future__ import annotations

import copy
import dataclasses
import json
import time

import pytest

from tests.support.replication import (copied_at_least_once, eventually, for_runtime, rehearsal, replicating,
                                       running)
from tests.support.stacks import on_release

pytestmark = pytest.mark.runtime

REAUTH = 10  # seconds: every SASL connection authenticates again this often


def _cluster(alias: str) -> dict:
    return {"bootstrapServers": f"{alias}-kafka.kafka-{alias}:9092",
            "security": {"protocol": "SASL_PLAINTEXT", "sasl": {
                "mechanism": "SCRAM-SHA-512", "username": "mover",
                "passwordSecret": {"secretName": f"{alias}-kafka", "key": "password", "version": "v1"}}}}


TOPOLOGY = {
    "operator": {},
    "clusters": {"west": _cluster("west"), "east": _cluster("east")},
    "flows": [{"source": "west", "target": "east", "topics": ["rot\\..*"], "replicationPolicy": "identity",
               "topicsExclude": [".*heartbeats"]}],
}
NS = "repl-west-east"


def _up(r, topo: dict) -> list[str]:
    """`pulumi up` of the topology as the stand-in applies it: the connectors whose config it
    sent again (the suffix of each name), sorted."""
    puts = len(r.config_puts)
    r.update(r.render(topo))
    return sorted(name.removeprefix(f"{NS}-") for _, name in r.config_puts[puts:])


def _rotated(r, topo: dict, alias: str) -> dict:
    """The user's password changed on the broker (new sessions need the new one) and in the
    team's Secret (the rehearsal's kept Secrets follow the cluster's password), and its version
    raised in the topology: the topology the next `pulumi up` deploys."""
    cluster = r.clusters[alias]
    new = f"rotated-{cluster.password}"
    r.clients.alter_scram(r.client(alias), "mover", "SCRAM-SHA-512", new)
    cluster.password = new
    topo = copy.deepcopy(topo)
    ref = topo["clusters"][alias]["security"]["sasl"]["passwordSecret"]
    ref["version"] = f"v{int(ref['version'][1:]) + 1}"
    return topo


def test_a_flow_whose_every_credential_is_a_reference_replicates_and_rotates(runtime_api, tmp_path):
    """On Strimzi 1.2.0, where the connectors read the target through the flow's objects: both
    JAAS lines reference the team's Secrets inline, the KafkaConnect authenticates with the
    target's. The source's rotation restarts the three connectors that read it (config PUTs) and
    rolls nothing; the target's rolls the Connect pods at once and restarts the connectors that
    read it. Every record arrives, in order per partition; only records sent before a rotation
    may arrive twice (a task locked out at re-authentication before its restart leaves its
    offsets uncommitted), nothing after."""
    topo = for_runtime(on_release(TOPOLOGY, "strimzi", "1.2.0"))
    with rehearsal(topo, tmp_path, runtime_api, reauthenticate={"west": REAUTH, "east": REAUTH}) as r:
        ledger, connect = replicating(r, "west", "east")
        produce, sent = ledger.produce, ledger.sent

        # The program created no Secret: the team's are the only ones, in the flow's namespace.
        secrets = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in r.objects if o["kind"] == "Secret")
        assert secrets == [(NS, "east-kafka"), (NS, "west-kafka")]
        program = [o for o in r.objects if o["kind"] != "Secret"]
        passwords = [r.clusters[a].password for a in ("west", "east")]
        assert not [p for p in passwords if p in json.dumps(program)]

        # The source's password rotated: its readers restart, the pods stay.
        topo = _rotated(r, topo, "west")
        assert _up(r, topo) == ["checkpoint", "heartbeat", "source"]
        assert r.rolled == []
        running(r)
        produce("after-west")
        before_west = {f"before-k{i}" for i in range(4)}
        twice = copied_at_least_once(r, "east", "rot.orders", sent)
        assert twice <= before_west, twice

        # The target's: the pods roll at once onto the new password (the pod template's version),
        # and the connectors that read the target through its objects get a new config.
        topo = _rotated(r, topo, "east")
        assert _up(r, topo) == ["checkpoint", "source"]
        assert r.rolled == [connect]
        running(r)
        produce("after-east")
        # Well past a re-authentication on both sides: no client kept an old password.
        time.sleep(2 * REAUTH)
        produce("well-after")
        twice = copied_at_least_once(r, "east", "rot.orders", sent)
        assert twice <= before_west | {f"after-west-k{i}" for i in range(4)}, twice
        worker = r.workers[connect]
        assert {t["state"] for n in worker.get("/connectors") for t in worker.status(n)["tasks"]} == {"RUNNING"}


def _mtls(alias: str) -> dict:
    # cert-manager's Secret shape (ca.crt, tls.crt, tls.key), the keys' defaults.
    return {"bootstrapServers": f"{alias}-kafka.kafka-{alias}:9093",
            "security": {"protocol": "SSL", "tls": {"clientCertificate": True,
                                                    "secret": {"secretName": f"{alias}-tls", "version": "v1"}}}}


MTLS = {**TOPOLOGY, "clusters": {"west": _mtls("west"), "east": _mtls("east")}}


def _reissued(r, topo: dict, alias: str, new) -> dict:
    """The team's tooling re-issued `alias`'s client certificate from another CA (`new`'s): its
    Secret's `tls.crt` and `tls.key` replaced, its `ca.crt` (the brokers' CA) kept, the reference's
    `version` raised in the topology. The rehearsal's kept Secrets follow the cluster's material
    (credentials.py `kept_secrets`), and so do its own clients."""
    old = r.clusters[alias].material
    r.clusters[alias].material = dataclasses.replace(old, client_cert_pem=new.client_cert_pem,
                                                     client_key_pem=new.client_key_pem)
    topo = copy.deepcopy(topo)
    ref = topo["clusters"][alias]["security"]["tls"]["secret"]
    ref["version"] = f"v{int(ref['version'][1:]) + 1}"
    return topo


def test_tls_material_by_reference_replicates_over_mutual_tls_and_rotates(runtime_api, tmp_path):
    """Both clusters mutual TLS, their CA and key pair from the team's Secrets (`tls.secret`), on
    Strimzi 1.2.0: the connectors read the source's and the target's material inline through the
    real config provider (no store file mounted), the worker trusts and authenticates with the
    target's through the KafkaConnect (the stand-in's worker file, from the same Secret), and the
    heartbeat connector's producer overrides the worker's target material with the source's. No
    certificate or key of the program's own anywhere; every record arrives once, in order; the
    heartbeats reach the source.

    Then each cluster's client certificate is re-issued from a new CA in its Secret, its
    `version` raised, and its brokers, which accepted both CAs' clients meanwhile, restarted to
    accept the new CA's alone: the source's re-issue restarts the three connectors that read it
    (config PUTs) and rolls nothing, the target's rolls the Connect pods; a client that kept its
    old certificate is refused, and every record still arrives, those sent before a broker
    restart at most twice (a task cut off mid-flush), nothing twice afterwards."""
    from infra.tools.rehearsal import material

    topo = for_runtime(on_release(MTLS, "strimzi", "1.2.0"))
    with rehearsal(topo, tmp_path, runtime_api) as r:
        ledger, connect = replicating(r, "west", "east")
        produce, sent = ledger.produce, ledger.sent
        secrets = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in r.objects if o["kind"] == "Secret")
        assert secrets == [(NS, "east-tls"), (NS, "west-tls")]
        program = json.dumps([o for o in r.objects if o["kind"] != "Secret"])
        assert "-----BEGIN" not in program
        spec = next(o for o in r.objects if o["kind"] == "KafkaConnect")["spec"]
        assert (spec["tls"], spec["authentication"]) == (
            {"trustedCertificates": [{"secretName": "east-tls", "certificate": "ca.crt"}]},
            {"type": "tls", "certificateAndKey": {"secretName": "east-tls", "certificate": "tls.crt", "key": "tls.key"}})
        assert "volumes" not in spec.get("template", {}).get("pod", {})
        states = running(r)
        assert sorted(states) == [f"{NS}-{k}" for k in ("checkpoint", "heartbeat", "source")]
        produce("after")
        assert copied_at_least_once(r, "east", "rot.orders", sent) == set()
        # Kafka's Heartbeat key: the two aliases, int16-length-prefixed.
        key = "\x00\x04west\x00\x04east"
        assert {h["key"] for h in r.clients.consume(r.client("west"), ["heartbeats"], 1, 60_000)} == {key}

        old = {a: r.clusters[a].material for a in ("west", "east")}
        new = {a: material.for_cluster(a, tuple(h for h, _ in r.clusters[a].hosts), generation=1)
               for a in ("west", "east")}
        for a in ("west", "east"):  # the brokers accept the new CA's client certificates beside the old
            r.clusters[a].client_cas = new[a].ca_pem
            r.clusters[a].stop()
            r.start_cluster(a)

        def moved(alias: str) -> None:
            """The brokers of `alias` on the new CA's clients alone; the old certificate refused."""
            r.clusters[alias].client_cas_only = True
            r.clusters[alias].stop()
            r.start_cluster(alias)
            stale = {**r.client(alias), "ssl.keystore.certificate.chain": old[alias].client_cert_pem,
                     "ssl.keystore.key": old[alias].client_key_pem}
            with pytest.raises(RuntimeError) as refused:
                r.clients.topics(stale)
            assert "SslAuthenticationException" in str(refused.value), str(refused.value)

        # The source's re-issue: the connectors that read it restart and resolve the new pair.
        topo = _reissued(r, topo, "west", new["west"])
        assert _up(r, topo) == ["checkpoint", "heartbeat", "source"]
        assert r.rolled == []
        kept = {o["metadata"]["name"]: o["stringData"] for o in r.render(topo) if o["kind"] == "Secret"}
        assert (kept["west-tls"]["tls.crt"], kept["west-tls"]["ca.crt"]) == (new["west"].client_cert_pem,
                                                                              old["west"].ca_pem)
        running(r)
        moved("west")
        running(r)
        produce("west-moved")
        copied_at_least_once(r, "east", "rot.orders", sent)

        # The target's: the pods roll onto the new pair (the pod template's version), and the
        # connectors that read the target through its objects get a new config.
        topo = _reissued(r, topo, "east", new["east"])
        assert _up(r, topo) == ["checkpoint", "source"]
        assert r.rolled == [connect]
        running(r)
        moved("east")
        running(r)
        produce("east-moved")
        twice = copied_at_least_once(r, "east", "rot.orders", sent)
        assert twice <= {f"{tag}-k{i}" for tag in ("before", "after", "west-moved") for i in range(4)}, twice
        produce("last")
        assert copied_at_least_once(r, "east", "rot.orders", sent) == twice
        worker = r.workers[connect]
        assert {t["state"] for n in worker.get("/connectors") for t in worker.status(n)["tasks"]} == {"RUNNING"}


def _stores(alias: str) -> dict:
    # cert-manager's JKS keys (truststore.jks) and a password key beside them: a server-TLS source.
    return {"bootstrapServers": f"{alias}-kafka.kafka-{alias}:9093",
            "security": {"protocol": "SSL", "tls": {"trust": "jks", "secret": {"secretName": f"{alias}-stores",
                                                                             "version": "v1"}}}}


STORES = {**TOPOLOGY, "clusters": {"west": _stores("west"), "east": {"bootstrapServers": "east-kafka.kafka-east:9092"}}}
PATH = "/mnt/source-west-tls/truststore.jks"  # the source's truststore in the Connect pods
SYNC = 5.0  # seconds: the kubelet's sync here (a minute by default)


def test_a_jks_truststore_by_reference_is_mounted_and_its_rotation_rolls_the_pods(runtime_api, tmp_path):
    """The source's JKS truststore and its password from the team's Secret, on Strimzi 1.2.0: the store
    file mounted into the Connect pods from that Secret (the stand-in's pod files), its password read by
    the real config provider, and the heartbeat's producer reading the same file (its target is
    PLAINTEXT). Then the source's CA rotates: the team's tooling puts the old and the new CA in its
    store, which the running pod holds only from the kubelet's next sync (the stand-in's kubelet,
    kubelet.py: nothing of the stack changes, nothing rolls); the runbook's
    `strimzi.io/manual-rolling-update` on the pod set rolls the pods at the operator's next
    reconciliation (Rehearsal.annotate_for_rolling); its `version` is raised, and `pulumi up` rolls the
    pods and restarts the connectors that read the password; the brokers then serve a certificate of the
    new CA, a client trusting the old CA alone is refused, and every record arrives, those sent before
    the brokers' restart at most twice. Without the `version` raised, the pods keep the old store and
    nothing sent after the brokers' move arrives (checked by hand)."""
    from infra.core import stores
    from infra.tools.rehearsal import material

    topo = for_runtime(on_release(STORES, "strimzi", "1.2.0"))
    with rehearsal(topo, tmp_path, runtime_api) as r:
        ledger, connect = replicating(r, "west", "east")
        produce, sent = ledger.produce, ledger.sent
        secrets = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in r.objects if o["kind"] == "Secret")
        assert secrets == [(NS, "west-stores")]
        spec = next(o for o in r.objects if o["kind"] == "KafkaConnect")["spec"]
        assert spec["template"]["pod"]["volumes"] == [{"name": "source-west-tls", "secret": {
            "secretName": "west-stores", "items": [{"key": "truststore.jks", "path": "truststore.jks"}]}}]
        held = r.workers[connect].files[PATH]
        assert held[:4] == b"\xfe\xed\xfe\xed"  # the JKS file the team keeps, as the pod mounts it
        states = running(r)
        assert sorted(states) == [f"{NS}-{k}" for k in ("checkpoint", "heartbeat", "source")]
        key = "\x00\x04west\x00\x04east"
        assert {h["key"] for h in r.clients.consume(r.client("west"), ["heartbeats"], 1, 60_000)} == {key}

        old = r.clusters["west"].material
        new = material.for_cluster("west", tuple(h for h, _ in r.clusters["west"].hosts), generation=1)
        # The team's tooling changes its store first (both CAs; the rehearsal's kept Secret follows
        # the material), before the stack is deployed again: nothing rolls, and the running pod
        # holds the old file until the kubelet's next sync (kubelet.py, lowered here to SYNC).
        r.kubelet.sync_seconds = SYNC
        r.clusters["west"].material = dataclasses.replace(old, ca_pem=old.ca_pem + new.ca_pem)
        assert _up(r, topo) == [] and r.rolled == []
        pod = r.workers[connect]
        assert pod.files[PATH] == held and r.kubelet.projected == []
        eventually("the kubelet's sync", lambda: r.kubelet.projected, 6 * SYNC, 1)
        assert r.kubelet.projected == [(pod.name, PATH)]
        synced = (pod.pod / PATH.lstrip("/")).read_bytes()
        assert stores.store_certificates(synced, "tsp-west") == stores.certificates(old.ca_pem + new.ca_pem)
        # The runbook's step for a store rotated with no change in git (docs/operations.md): the
        # pod set annotated, its pods rolled at the operator's next reconciliation (run here at
        # once), their tasks reading the store as it is then.
        r.annotate_for_rolling(*connect)
        r.periodic_reconciliation()
        assert (r.rolled, r.manual_rolls) == ([connect], set())
        annotated = r.workers[connect].files[PATH]
        assert stores.store_certificates(annotated, "tsp-west") == stores.certificates(old.ca_pem + new.ca_pem)
        running(r)
        topo = copy.deepcopy(topo)
        topo["clusters"]["west"]["security"]["tls"]["secret"]["version"] = "v2"
        assert _up(r, topo) == ["checkpoint", "heartbeat", "source"]
        assert r.rolled == [connect, connect]
        # The new pods mount the new store: both CAs (the rehearsal's store password, run.py).
        rolled = r.workers[connect].files[PATH]
        assert stores.store_certificates(held, "tsp-west") == stores.certificates(old.ca_pem)
        assert stores.store_certificates(rolled, "tsp-west") == stores.certificates(old.ca_pem + new.ca_pem)
        running(r)
        produce("rolled")
        copied_at_least_once(r, "east", "rot.orders", sent)

        # The brokers on a certificate of the new CA.
        r.clusters["west"].material = dataclasses.replace(new, ca_pem=old.ca_pem + new.ca_pem)
        r.clusters["west"].stop()
        r.start_cluster("west")
        stale = {**r.client("west"), "ssl.truststore.certificates": old.ca_pem}
        with pytest.raises(RuntimeError) as refused:
            r.clients.topics(stale)
        assert "SslAuthenticationException" in str(refused.value), str(refused.value)
        running(r)
        produce("moved")
        twice = copied_at_least_once(r, "east", "rot.orders", sent)
        assert twice <= {f"{tag}-k{i}" for tag in ("before", "rolled") for i in range(4)}, twice
        produce("last")
        assert copied_at_least_once(r, "east", "rot.orders", sent) == twice
