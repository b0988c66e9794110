"""Day two on the runtime tier: a replicating flow paused and resumed (through the Connect REST
API and through the topology) and its source connector's tasks scaled down and up, on real
Kafka and a real Connect worker with MirrorMaker 2, every record accounted for per partition.

What `pulumi up` does here is the stand-in's (infra/tools/rehearsal/operator.py): each render
applied to the running worker (Rehearsal.update), each KafkaConnector reconciled as Strimzi's
AbstractConnectOperator does (a config PUT where the spec differs, then `updateState`). The
drift commands themselves, kubectl and `pulumi up --refresh`, run on the engine tier
(tests/engine/test_day_two_runbook.py)."""

from __future__ import annotations

import copy
import re
import shlex
import time
from datetime import datetime

import pytest

from tests.support.replication import (Ledger, copied_at_least_once, dev_for_runtime, eventually, halted,
                                       records, rehearsal, replicating, running)
from tests.support.stacks import OFFSETS_RELEASES, RELEASE_ENDS, RELEASES_BY_WORKER_CONNECTION, ROOT, ids

pytestmark = pytest.mark.runtime

NS = "repl-us-west-us-east"
SOURCE = f"{NS}-source"
TOPIC, REMOTE = "test.orders", "us-west.test.orders"
QUIET = 10.0  # seconds in which a paused connector must copy nothing
# The operator's periodic reconciliation here (Rehearsal.reconcile_every): Strimzi's
# STRIMZI_FULL_RECONCILIATION_INTERVAL_MS, 120 s by default, lowered as an operator's user may.
RECONCILE = 10.0


@pytest.mark.parametrize("flavour,version", RELEASE_ENDS, ids=ids(RELEASE_ENDS))
def test_pause_resume_and_scaling_account_for_every_record(flavour, version, runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["heartbeats"] = False
    with rehearsal(topo, tmp_path, runtime_api, reconcile_every=RECONCILE) as r:
        r.clients.create_topics(r.client("us-west"), {TOPIC: 2})
        ledger = Ledger(r, TOPIC, REMOTE)
        produce, holds_exactly, sent = ledger.produce, ledger.holds_exactly, ledger.sent

        def copied() -> int:
            return sum(r.clients.end_offsets(r.client("us-east"), [REMOTE]).values())

        def state() -> str:
            return worker.status(SOURCE)["connector"]["state"]

        def stays_paused(before: int) -> None:
            halted(worker, SOURCE, "PAUSED")
            produce(f"paused-{len(sent)}")
            time.sleep(QUIET)
            assert state() == "PAUSED" and copied() == before

        produce("before")
        r.deploy()
        running(r)
        (worker,) = r.workers.values()
        holds_exactly()

        # Paused by hand through the REST API: nothing the operator watches changed, so no apply
        # puts it back (operator.reconciled_at_apply); its next periodic reconciliation does, as
        # the KafkaConnector says running (updateState); what was produced meanwhile arrives.
        with r.reconciling:  # seen PAUSED, copying nothing, before any reconciliation meets it
            worker.request("PUT", f"/connectors/{SOURCE}/pause")
            stays_paused(len(sent))
            r.update(r.objects)
            assert state() == "PAUSED"
        eventually("the source connector RUNNING again, resumed by a periodic reconciliation",
                   lambda: state() == "RUNNING", 6 * RECONCILE, 0.5)
        running(r)
        holds_exactly()

        # Paused and resumed through the topology, as `pulumi up` applies it.
        paused = copy.deepcopy(topo)
        paused["flows"][0]["state"] = {"source": "paused"}
        objects = r.render(paused)
        assert spec_of(objects, SOURCE)["state"] == "paused"
        r.update(objects)
        stays_paused(len(sent))
        objects = r.render(topo)
        assert spec_of(objects, SOURCE)["state"] == "running"
        r.update(objects)
        running(r)
        holds_exactly()

        # Scaled down to one task and back: the tasks are reconfigured on the running worker,
        # committing their offsets as they stop, so nothing is copied twice.
        for tasks in (1, 3):
            scaled = copy.deepcopy(topo)
            scaled["flows"][0]["tasksMax"] = {"source": tasks}
            objects = r.render(scaled)
            assert spec_of(objects, SOURCE)["tasksMax"] == tasks
            r.update(objects)
            states = running(r)
            # One task per partition at most: two partitions, so two tasks when allowed three.
            eventually(f"{min(tasks, 2)} source task(s)",
                       lambda: len(worker.status(SOURCE)["tasks"]) == min(tasks, 2), 60, 1)
            assert SOURCE in states
            produce(f"tasks-{tasks}")
            holds_exactly()

        # A task fails and nobody restarts it: a record larger than the target topic takes (a
        # producer error Connect does not retry) fails the task copying partition 0. Once the
        # limit is back, the operator's periodic reconciliation restarts it (the KafkaConnector's
        # autoRestart, which the render enables) and it copies on. The stand-in restarts as
        # Strimzi does (operator.auto_restart): at once the first time, then after its back-off.
        assert spec_of(r.objects, SOURCE)["autoRestart"] == {"enabled": True}
        r.clients.alter_topic_configs(r.client("us-east"), REMOTE, {"max.message.bytes": "1024"})
        big = {**records(1, "big")[0], "value": "x" * 4000, "partition": 0}
        r.clients.produce(r.client("us-west"), TOPIC, [big])
        sent.append(big)
        eventually("a FAILED source task", lambda: any(t["state"] == "FAILED" for t in worker.status(SOURCE)["tasks"]),
                   60, 0.5)
        r.clients.alter_topic_configs(r.client("us-east"), REMOTE, {"max.message.bytes": "1048588"})
        produce("after-failure")
        eventually("the source tasks RUNNING again, restarted by the operator",
                   lambda: [t["state"] for t in worker.status(SOURCE)["tasks"]] == ["RUNNING", "RUNNING"], 240, 2)
        restarts = [at for ns, name, at in r.auto_restarted if (ns, name) == (NS, SOURCE)]
        # One restart after the limit was back; or, when a reconciliation fell before it, a first
        # restart that failed again and a second only once two minutes had passed (the back-off).
        assert len(restarts) in (1, 2), restarts
        if len(restarts) == 2:
            first, second = (datetime.fromisoformat(at) for at in restarts)
            assert (second - first).total_seconds() >= 120, restarts
        assert r.auto_restarts[(NS, SOURCE)]["count"] == len(restarts)
        # The failed task's records are all copied, in order; those it had sent but not yet
        # committed are copied again (at least once, as the default policy allows).
        copied_at_least_once(r, "us-east", REMOTE, sent)


def spec_of(objects: list[dict], name: str) -> dict:
    (found,) = [o["spec"] for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"] == name]
    return found


# ------------------------------------------------------------------ credential rotation


def rotate_scram(r, alias: str, user: str) -> None:
    """The user's SCRAM-SHA-512 password changed on the cluster's broker first (new sessions need
    the new one), then in the stack's secret config, which the next render reads."""
    cluster = r.clusters[alias]
    new = f"rotated-{cluster.password}"
    r.clients.alter_scram(r.client(alias), user, "SCRAM-SHA-512", new)
    cluster.password = new
    r.secret_config[f"{alias}.password"] = new


ROTATION = {
    "operator": {},
    "clusters": {
        "plain": {"bootstrapServers": "plain-kafka.kafka-plain:9092"},
        "scram": {"bootstrapServers": "scram-kafka.kafka-scram:9093",
                  "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "mover"},
                               "tls": {"trust": "pem"}}},
    },
    "flows": [{"source": "plain", "target": "scram", "topics": ["rot\\..*"], "replicationPolicy": "identity",
               "topicsExclude": [".*heartbeats"], "heartbeats": False}],
}
REAUTH = 10  # seconds: every SASL connection to the target authenticates again this often


@pytest.mark.parametrize("flavour,version", RELEASES_BY_WORKER_CONNECTION, ids=ids(RELEASES_BY_WORKER_CONNECTION))
def test_a_target_password_rotated_on_the_broker_and_in_the_stack(flavour, version, runtime_api, tmp_path):
    """A real SCRAM user of the target whose password changes on the broker, then in the stack's
    secret config, applied as `pulumi up` applies it: the operator rolls the Connect cluster,
    whose target credentials changed (`strimzi.io/auth-hash`; the stand-in, operator.auth_hash),
    and nothing else restarts. Established connections keep the old credential's session until
    they must authenticate again (every REAUTH seconds here), so replication running well past
    that proves no client kept the old password. Every record arrives; the old pods, locked out
    before the roll, may leave offsets uncommitted, so records sent before the rotation may be
    copied twice (at least once), and nothing after."""
    from tests.support.replication import for_runtime
    from tests.support.stacks import on_release

    topo = for_runtime(on_release(ROTATION, flavour, version))
    with rehearsal(topo, tmp_path, runtime_api, reauthenticate={"scram": REAUTH}) as r:
        ledger, connect = replicating(r, "plain", "scram")
        produce, sent = ledger.produce, ledger.sent

        # The password changes on the broker first (the old one stops working for new sessions),
        # then in the stack.
        rotate_scram(r, "scram", "mover")
        puts = len(r.config_puts)
        rendered = r.render()
        rolls = [connect]
        if (flavour, version) == ("strimzi", "1.2.0"):
            # The Secrets alone changed, the KafkaConnect kept as deployed (what a change made
            # outside the stack is): the operator, which watches custom resources, does nothing
            # until its next periodic reconciliation, which rolls the pods (the stand-in's, as
            # the operator's: the rehearsal's reconciler, called here at once).
            held = [r.connects[connect] if o["kind"] == "KafkaConnect" else o for o in rendered]
            # By the time it is applied the old pod is locked out: its group membership fails to
            # authenticate again and the worker exits (DistributedHerder: "Uncaught exception in
            # herder work thread"). Nothing of the apply may ask it anything (reconciled_at_apply).
            old = r.workers[connect].process
            eventually("the old worker locked out", lambda: old is not None and old.popen.poll() is not None,
                       4 * REAUTH + 60)
            r.update(held)
            assert (r.rolled, list(r.pending_rolls)) == ([], [connect])
            r.periodic_reconciliation()
            assert (r.rolled, r.pending_rolls) == ([connect], {})
            rolls.append(connect)  # the stack's own change of the KafkaConnect below rolls it again
        # The stack's render: the KafkaConnect's pod template names the replaced Secret's uid
        # (names.TARGET_ACCESS_UID), a change the operator reconciles at once.
        uids = {o["spec"]["template"]["pod"]["metadata"]["annotations"]["kafka-replication.io/target-access-uid"]
                for o in (r.connects[connect], next(o for o in rendered if o["kind"] == "KafkaConnect"))}
        assert len(uids) == 2, uids
        r.update(rendered)
        assert (r.rolled, r.pending_rolls) == (rolls, {})
        assert r.config_puts[puts:] == []  # no connector config changed: the roll restarted them
        running(r)
        produce("after")
        copied_again = copied_at_least_once(r, "scram", "rot.orders", sent)
        time.sleep(2 * REAUTH)
        produce("well-after")
        # Nothing more copied twice after the roll.
        assert copied_at_least_once(r, "scram", "rot.orders", sent) == copied_again
        # Once changed on the broker, the old password stops working for the old pods at their
        # next re-authentication: offsets they had not committed by then are copied again after
        # the roll (at least once). Only records sent before the rotation, each at most twice.
        assert copied_again <= {f"before-k{i}" for i in range(4)}, copied_again
        assert {t["state"] for n in r.workers[connect].get("/connectors") for t in
                r.workers[connect].status(n)["tasks"]} == {"RUNNING"}


SOURCE_ROTATION = {
    "operator": {},
    "clusters": {
        "scram": {"bootstrapServers": "scram-kafka.kafka-scram:9093",
                  "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "mover"},
                               "tls": {"trust": "pem"}}},
        "plain": {"bootstrapServers": "plain-kafka.kafka-plain:9092"},
    },
    "flows": [{"source": "scram", "target": "plain", "topics": ["rot\\..*"], "replicationPolicy": "identity",
               "topicsExclude": [".*heartbeats"]}],
}
@pytest.mark.parametrize("flavour,version", RELEASES_BY_WORKER_CONNECTION, ids=ids(RELEASES_BY_WORKER_CONNECTION))
def test_a_source_password_rotated_on_the_broker_and_in_the_stack(flavour, version, runtime_api, tmp_path):
    """A real SCRAM user of the source whose password changes on the broker, then in the stack,
    applied as `pulumi up` applies it: the source Secret is replaced (a new uid), so exactly the
    connectors that read it change (`kafka-replication.source-access.uid`): Strimzi PUTs their
    configs, Connect restarts them and their tasks, which read the new password. The Connect
    cluster does not roll (its own credentials are the target's). Every record arrives, those
    sent before the rotation at most twice (a task locked out at re-authentication before its
    restart may leave its offsets uncommitted), nothing twice after; every task RUNNING."""
    from tests.support.replication import for_runtime
    from tests.support.stacks import on_release

    topo = for_runtime(on_release(SOURCE_ROTATION, flavour, version))
    with rehearsal(topo, tmp_path, runtime_api, reauthenticate={"scram": REAUTH}) as r:
        r.clients.create_topics(r.client("scram"), {"rot.orders": 2})
        ledger = Ledger(r, "rot.orders", "rot.orders", source="scram", target="plain")
        produce, sent = ledger.produce, ledger.sent
        produce("before")
        r.deploy()
        running(r)
        assert copied_at_least_once(r, "plain", "rot.orders", sent) == set()
        (connect,) = r.workers

        rotate_scram(r, "scram", "mover")
        puts = len(r.config_puts)
        r.update(r.render())
        assert r.rolled == []
        assert sorted(name for _, name in r.config_puts[puts:]) == [
            f"repl-scram-plain-{k}" for k in ("checkpoint", "heartbeat", "source")]
        running(r)
        produce("after")
        twice = copied_at_least_once(r, "plain", "rot.orders", sent)
        time.sleep(2 * REAUTH)
        produce("well-after")
        assert copied_at_least_once(r, "plain", "rot.orders", sent) == twice <= {f"before-k{i}" for i in range(4)}, twice
        worker = r.workers[connect]
        assert {t["state"] for n in worker.get("/connectors") for t in worker.status(n)["tasks"]} == {"RUNNING"}


def ca_rotation_runbook() -> list[list[tuple[str, list[str]]]]:
    """docs/operations.md#credential-rotation, the CA rotation's `sh` block: per `pulumi up`, the
    `pulumi config set` lines before it, each as (secret config key, the files it concatenates)."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("\n## Credential rotation\n"):]
    block = re.search(r"```sh\n(# 1\. The brokers.*?)```", section, re.S)
    assert block, "docs/operations.md, Credential rotation: no CA rotation block"
    steps: list[list[tuple[str, list[str]]]] = [[]]
    for line in block.group(1).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        argv = shlex.split(line)
        if argv[:2] == ["pulumi", "up"]:
            steps.append([])
            continue
        # As the shell gives it to pulumi: its flags first, then the key, `--` and one value
        # (anything after the value is an argument too: `accepts at most 2 arg(s)`).
        assert argv[:6] == ["pulumi", "config", "set", "--secret", "--stack", "dev"] and argv[7] == "--" \
            and len(argv) == 9, line
        value = re.fullmatch(r"\$\(cat ([^)]*)\)", argv[8])
        assert value, line
        steps[-1].append((argv[6].removeprefix("kafka-replication:us-west."), value.group(1).split()))
    assert steps[-1] == [], "the block ends with `pulumi up`"
    return steps[:-1]


CERTIFICATES = {
    "operator": {},
    "clusters": {
        alias: {"bootstrapServers": f"{alias}-kafka.kafka-{alias}:9093",
                "security": {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}}}
        for alias in ("east", "west")},
    "flows": [{"source": "west", "target": "east", "topics": ["rot\\..*"], "replicationPolicy": "identity",
               "topicsExclude": [".*heartbeats"], "heartbeats": False}],
}


@pytest.mark.parametrize("flavour,version", RELEASES_BY_WORKER_CONNECTION, ids=ids(RELEASES_BY_WORKER_CONNECTION))
def test_client_certificates_and_trust_rotated_on_the_brokers_and_in_the_stack(flavour, version, runtime_api,
                                                                               tmp_path):
    """A CA rotation of both clusters of a mutual-TLS flow, in the runbook's order, its secret
    config changes read from the runbook's block, each `pulumi up` applied as the stand-in
    applies it: the brokers accept client certificates of the new
    CA beside the old; the stack takes the new client certificates and trusts both CAs (a
    bundle), the source's first: the Connect cluster rolls (the source's mounted store files,
    names.SOURCE_FILES_UID) and its new pods hold the new files; then the target's: it rolls
    again (its target material, operator.auth_hash); no connector config is sent again (the
    material is all files, no password); the
    brokers move to the new CA alone, their own certificates and the clients they accept (restarted, so every
    connection is made again: a client still holding the old certificate, or trusting only the
    old CA, is refused); the stack retires the old CA: a roll again, and nothing else. Every
    record arrives, in order per partition; those sent before the brokers' restarts at most
    twice (a task cut off mid-flush), and nothing twice afterwards."""
    from infra.tools.rehearsal import material
    from tests.support.replication import for_runtime
    from tests.support.stacks import on_release

    topo = for_runtime(on_release(CERTIFICATES, flavour, version))
    with rehearsal(topo, tmp_path, runtime_api) as r:
        ledger, connect = replicating(r, "west", "east")
        produce, sent = ledger.produce, ledger.sent
        aliases = ("east", "west")
        old = {a: r.clusters[a].material for a in aliases}
        new = {a: material.for_cluster(a, tuple(h for h, _ in r.clusters[a].hosts), generation=1) for a in aliases}

        def restart(alias: str) -> None:
            r.clusters[alias].stop()
            r.start_cluster(alias)

        # The runbook's secret config changes, as written: two `pulumi up`s.
        step_2, step_4 = ca_rotation_runbook()

        def apply(changes: list[tuple[str, list[str]]], clusters: tuple[str, ...] = aliases) -> None:
            """Each `pulumi config set` of the runbook, for these clusters (its files: the old or
            new CA, the new client certificate or key), then `pulumi up` as the stand-in applies
            it. The material is all files (PEM trust, no password): the pods roll onto it and
            no connector config is sent again."""
            files = {"ca-old.crt": lambda a: old[a].ca_pem, "ca-new.crt": lambda a: new[a].ca_pem,
                     "client-new.crt": lambda a: new[a].client_cert_pem,
                     "client-new.key": lambda a: new[a].client_key_pem}
            for a in clusters:
                for key, names_ in changes:
                    r.secret_config[f"{a}.{key}"] = "".join(files[n.removeprefix("us-west-")](a) for n in names_)
            puts = len(r.config_puts)
            r.update(r.render())
            assert r.config_puts[puts:] == []

        # 1. The brokers accept the new CA's client certificates beside the old one's.
        for a in aliases:
            r.clusters[a].client_cas = new[a].ca_pem
            restart(a)
        # 2. The stack: the new client certificates, and both CAs trusted; the source's first,
        # alone. Its store files are mounted, and a running pod would see a replaced Secret only
        # at the kubelet's next sync (the stand-in's, kubelet.py: a minute later): the Connect
        # cluster rolls (names.SOURCE_FILES_UID) and its new pods hold the new files.
        apply(step_2, ("west",))
        assert r.rolled == [connect]
        held = r.workers[connect].setup.files
        assert new["west"].client_cert_pem.encode() in held["/mnt/source-west-tls/keystore.pem"]
        assert held["/mnt/source-west-tls/ca.crt"] == (old["west"].ca_pem + new["west"].ca_pem).encode()
        apply(step_2, ("east",))
        assert r.rolled == [connect, connect]
        running(r)
        produce("window")
        copied_at_least_once(r, "east", "rot.orders", sent)

        # 3. The brokers on the new CA alone: their certificates, and the clients they accept.
        for a in aliases:
            r.clusters[a].material, r.clusters[a].client_cas = new[a], ""
            restart(a)
            # What a client that kept the old certificate meets now.
            stale = {**r.client(a), "ssl.keystore.certificate.chain": old[a].client_cert_pem,
                     "ssl.keystore.key": old[a].client_key_pem}
            with pytest.raises(RuntimeError) as refused:
                r.clients.topics(stale)
            assert "SslAuthenticationException" in str(refused.value), str(refused.value)
        produce("new-ca")
        copied_at_least_once(r, "east", "rot.orders", sent)

        # 4. The old CA retired from the stack.
        apply(step_4)
        assert r.rolled == [connect, connect, connect]
        running(r)
        twice = copied_at_least_once(r, "east", "rot.orders", sent)
        produce("retired")
        assert copied_at_least_once(r, "east", "rot.orders", sent) == twice
        assert twice <= {f"{tag}-k{i}" for tag in ("before", "window") for i in range(4)}, twice
        worker = r.workers[connect]
        assert {t["state"] for n in worker.get("/connectors") for t in worker.status(n)["tasks"]} == {"RUNNING"}


# ------------------------------------------------------------------ Connect replicas

@pytest.mark.parametrize("flavour,version", RELEASE_ENDS, ids=ids(RELEASE_ENDS))
def test_connect_replicas_scaled_on_a_replicating_flow(flavour, version, runtime_api, tmp_path):
    """`connect.replicas` 1 → 2 → 1 on a flow that replicates, applied as `pulumi up` applies it
    and as the operator scales (Rehearsal `scale`: the pods added or removed, none rolled): the
    second worker joins the Connect group and takes tasks, then leaves it and its tasks move
    back; every record arrives once, in its partition and offset."""
    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["heartbeats"] = False
    topo["operator"]["connect"]["replicas"] = 1
    # The tasks of a pod that left wait this long for it (Kafka's default 300 s: see the runbook).
    topo["operator"]["connect"]["rebalanceDelaySeconds"] = 10
    topo["flows"][0]["tasksMax"] = {"source": 2}
    with rehearsal(topo, tmp_path, runtime_api, scale=True) as r:
        r.clients.create_topics(r.client("us-west"), {TOPIC: 2})
        ledger = Ledger(r, TOPIC, REMOTE)
        produce, holds_exactly = ledger.produce, ledger.holds_exactly

        def hosts() -> set[str]:
            """The workers running the source connector's tasks (their REST host)."""
            return {t["worker_id"].split(":")[0] for t in first.status(SOURCE)["tasks"] if t["state"] == "RUNNING"}

        produce("one")
        r.deploy()
        running(r)
        (first,) = r.workers.values()
        holds_exactly()
        for replicas in (2, 1):
            scaled = copy.deepcopy(topo)
            scaled["operator"]["connect"]["replicas"] = replicas
            objects = r.render(scaled)
            (connect,) = [o for o in objects if o["kind"] == "KafkaConnect"]
            assert connect["spec"]["replicas"] == replicas
            r.update(objects)
            pods = [first, *r.pods[(NS, NS)]]
            assert len(pods) == replicas and r.rolled == []
            # Tasks on every pod: the second one's share after it joins, the first's alone after.
            eventually(f"the source tasks on {replicas} worker(s)",
                       lambda: hosts() == {p.host for p in pods} and len(first.status(SOURCE)["tasks"]) == 2, 180, 2)
            produce(f"replicas-{replicas}")
            holds_exactly()


# ------------------------------------------------------------------ a split over Connect clusters


# Offsets requests need Strimzi 0.44 or later: not CSM 1.2 (whose refusal test_runtime_offsets.py
# holds); one release per worker-file generator (tests/support/stacks.py OFFSETS_RELEASES).


@pytest.mark.parametrize("flavour,version", OFFSETS_RELEASES, ids=ids(OFFSETS_RELEASES))
def test_a_replicating_flow_split_over_two_connect_clusters_copies_nothing_again(flavour, version, runtime_api,
                                                                                  tmp_path):
    """docs/operations.md "Scaling a running flow", the split without copying again: the flow's
    source connector stopped with its offsets listed; the split deployed with each part's source
    connector stopped and its offsets altered to the listed ones for its topics; then running.
    The old Connect cluster goes, two new ones (new group ids) take its topics, and every record,
    those produced while it was stopped too, arrives once."""
    import json

    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["heartbeats"] = False
    topics = {"test.a": "us-west.test.a", "test.b": "us-west.test.b"}
    with rehearsal(topo, tmp_path, runtime_api) as r:
        r.clients.create_topics(r.client("us-west"), {t: 2 for t in topics})
        ledgers = [Ledger(r, t, remote) for t, remote in topics.items()]

        def produce(tag: str) -> None:
            for ledger in ledgers:
                ledger.produce(f"{ledger.topic}-{tag}")

        def holds_exactly() -> None:
            for ledger in ledgers:
                ledger.holds_exactly()

        produce("before")
        r.deploy()
        running(r)
        holds_exactly()

        # 1. The source connector stopped, its offsets listed.
        listing = copy.deepcopy(topo)
        listing["flows"][0]["state"] = {"source": "stopped"}
        listing["flows"][0]["offsets"] = [{"connector": SOURCE, "action": "list", "request": "before-split"}]
        r.update(r.render(listing))
        listed = json.loads(r.listed[(NS, f"{SOURCE}-offsets")]["data"]["offsets.json"])["offsets"]
        assert sorted((o["partition"]["topic"], o["partition"]["partition"], o["offset"]["offset"]) for o in listed) == [
            (t, p, 1) for t in topics for p in (0, 1)]
        produce("stopped")  # written while nothing copies: the parts copy them

        # 2. The split, each part's source connector stopped with the listed offsets of its topics.
        split = copy.deepcopy(topo)
        flow = split["flows"][0]
        del flow["topics"]
        flow["connectClusters"] = [{"name": "a", "topics": ["test\\.a"]}, {"name": "b", "topics": ["test\\.b"]}]
        flow["state"] = {"source": "stopped"}
        flow["offsets"] = [
            {"connector": f"{NS}-{part}-source", "action": "alter", "request": "split",
             "offsets": [{"topic": o["partition"]["topic"], "partition": o["partition"]["partition"],
                          "offset": o["offset"]["offset"]} for o in listed if o["partition"]["topic"] == f"test.{part}"]}
            for part in ("a", "b")]
        r.update(r.render(split))
        assert sorted(r.workers) == [(f"{NS}-a", f"{NS}-a"), (f"{NS}-b", f"{NS}-b")]

        # 3. Running, the requests carried out and removed.
        del flow["state"], flow["offsets"]
        r.update(r.render(split))
        running(r)
        produce("after")
        holds_exactly()
