"""`kafka-replication diff`: pairs of topologies with the exact change each makes and what it does.

Each case renders the dev stack twice (stacks/dev.yaml and a copy with one change) through the
offline render, as the command does, and compares them (infra/tools/diff/). The git path runs the
command for real in a repository of its own: the base tree's program renders in a child process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infra.__main__ import main
from infra.filters import topics
from infra.tools import diff, render
from tests.support.stacks import GIT, ROOT, SECRETS

NS = "repl-us-west-us-east"
DEV = (ROOT / "stacks/dev.yaml").read_text()
FLOW = "flow repl-us-west-us-east"
PAIR = "us-west → us-east"
SOURCE = f"KafkaConnector {NS}/{NS}-source"
CHECKPOINT = f"KafkaConnector {NS}/{NS}-checkpoint"
HEARTBEAT = f"KafkaConnector {NS}/{NS}-heartbeat"
CONNECT = f"KafkaConnect {NS}/{NS}"
RESTART = "Strimzi sends the new configuration to Connect, which restarts the connector and its tasks"
FLOW_LINE = '    groups: ["test.*"]\n'


def edited(tmp_path: Path, name: str, old: str, new: str) -> Path:
    assert old in DEV, old
    path = tmp_path / f"{name}.yaml"
    path.write_text(DEV.replace(old, new, 1))
    return path


@pytest.fixture(scope="module")
def base() -> diff.Snapshot:
    return diff.render_here("dev")


def compare(base: diff.Snapshot, path: Path) -> diff.StackDiff:
    return diff.compare("dev", base, diff.render_here("dev", path))


def effects(sd: diff.StackDiff) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    return [(e.kind, e.owner, e.subject, e.text, e.examples) for e in sd.effects]


def objects(sd: diff.StackDiff) -> list[tuple[diff.Key, str, tuple[str, ...]]]:
    return [(d.key, d.action, d.replaced_by) for d in sd.objects]


def test_no_change_is_no_change(base):
    sd = diff.compare("dev", base, diff.render_here("dev"))
    assert (sd.objects, sd.effects, sd.outputs, sd.changed) == ((), (), (), False)


def test_filter_narrowing_names_the_topics_that_stop_replicating(base, tmp_path):
    sd = compare(base, edited(tmp_path, "narrow", 'topics: ["test.*"]', r'topics: ["test\\.orders", "test\\.payments"]'))
    assert objects(sd) == [
        (("", "ConfigMap", NS, "replication"), "replace", ("data",)),
        (("", "ConfigMap", "replication-audit", "kafka-replication-audit"), "replace", ("data",)),
        (("", "KafkaConnector", NS, f"{NS}-checkpoint"), "change", ()),
        (("", "KafkaConnector", NS, f"{NS}-source"), "change", ()),
    ]
    replication = sd.objects[0]
    assert replication.changes == (diff.Change("data.topics", "test.*", r"test\.orders,test\.payments"),)
    # The audit's configuration is a JSON document in the ConfigMap: diffed inside.
    assert [c.path for c in sd.objects[1].changes] == [
        "data.audit.json › flows[0].connectors[0].topics[0]", "data.audit.json › flows[0].connectors[0].topics[1]"]
    # Only the digest of what the connectors read changes in their spec: Strimzi sends it.
    assert [c.path for c in sd.objects[3].changes] == ["spec.config.kafka-replication.configmaps.digest"]
    assert effects(sd) == [
        ("topics-stop", PAIR, f"source connectors {NS}-source",
         "topics that no longer match the filters of the source connectors between these clusters "
         "(the shortest shown; there may be more)", ("test", "testa", "testb", "testc", "testd")),
        ("restart", FLOW, CHECKPOINT, f"{RESTART} (the ConfigMap values it reads: topics)", ()),
        ("restart", FLOW, SOURCE, f"{RESTART} (the ConfigMap values it reads: topics)", ()),
    ]


def test_filter_widening_names_the_topics_that_start(base, tmp_path):
    sd = compare(base, edited(tmp_path, "widen", 'topics: ["test.*"]', 'topics: ["test.*", "orders"]'))
    assert effects(sd)[0] == (
        "topics-start", PAIR, f"source connectors {NS}-source",
        "topics that now match the filters of the source connectors between these clusters", ("orders",))
    assert [e.kind for e in sd.effects] == ["topics-start", "restart", "restart"]


def test_a_group_id_change_is_flagged_as_state_loss(base, tmp_path):
    # The flow's name is its Connect cluster's: a new name is a new group id and storage topics.
    sd = compare(base, edited(tmp_path, "renamed", "  - source: us-west\n", "  - name: west-east\n    source: us-west\n"))
    lost = [e for e in sd.effects if e.kind == "state-lost"]
    assert [(e.subject, e.text) for e in lost] == [
        (CONNECT,
         "Connect cluster west-east/west-east takes its place on the same Kafka with a new identity (group id "
         "repl-us-west-us-east-consumer-group → west-east-consumer-group, config storage topic "
         "repl-us-west-us-east-config-topic → west-east-config-topic, offset storage topic "
         "repl-us-west-us-east-offsets-topic → west-east-offsets-topic, status storage topic "
         "repl-us-west-us-east-status-topic → west-east-status-topic): its workers start with no connector "
         "configurations, offsets or statuses, so the source connectors copy every topic again from the earliest "
         "offset (duplicates in the target), and the old storage topics are left behind"),
        (CHECKPOINT, "the MirrorCheckpointConnector is replaced by west-east/west-east-checkpoint: Connect keeps "
                     "connector offsets per Connect cluster and connector name, so west-east-checkpoint starts "
                     f"without {NS}-checkpoint's"),
        (HEARTBEAT, "the MirrorHeartbeatConnector is replaced by west-east/west-east-heartbeat: Connect keeps "
                    "connector offsets per Connect cluster and connector name, so west-east-heartbeat starts "
                    f"without {NS}-heartbeat's"),
        (SOURCE, "the MirrorSourceConnector is replaced by west-east/west-east-source: Connect keeps connector "
                 "offsets per Connect cluster and connector name, so west-east-source starts without "
                 f"{NS}-source's: it copies its topics again from the earliest offset (duplicates in the target)"),
    ]
    # The same clusters replicate the same topics: no topic stops or starts.
    assert not [e for e in sd.effects if e.kind.startswith("topics")]
    assert (diff.counts(sd.objects), sd.effects[-1].text) == (
        "17 added, 17 removed, 2 changed, 1 replaced", "the namespace is deleted, and with it every object in it")


def test_a_group_id_change_in_place_is_state_loss():
    """A KafkaConnect edited by hand (same name, new group id): state lost, and the pods roll."""
    before = diff.render_here("dev")
    key = ("", "KafkaConnect", NS, NS)
    changed = json.loads(json.dumps(before.objects[key]))
    changed["spec"]["config"]["group.id"] = "other-group"
    sd = diff.compare("dev", before, diff.Snapshot({**before.objects, key: changed}, before.outputs))
    assert effects(sd) == [
        ("state-lost", FLOW, CONNECT,
         "a new group id (group id repl-us-west-us-east-consumer-group → other-group) is a new Connect cluster: its "
         "workers start with no connector configurations, offsets or statuses, so the source connectors copy every "
         "topic again from the earliest offset (duplicates in the target), and the old storage topics are left behind",
         ()),
        ("roll", FLOW, CONNECT, "Strimzi rolls the Connect pods one by one (spec.config.group.id changed): every "
                                "connector's tasks restart on the new workers", ()),
    ]


UPGRADE_ROLL = ("Strimzi rolls the Connect pods one by one (the operator moves from strimzi {0} to strimzi {1}, "
                "whose images run the workers; spec.version changed): every connector's tasks restart on the new "
                "workers")


def on_release(tmp_path: Path, version: str, flavour: str = "strimzi") -> Path:
    """The dev stack on another operator release, with that release's default Connect version."""
    return edited(tmp_path, f"{flavour}-{version}", "operator:\n  flavour: csm\n  connect:\n    version: 3.8.0.1.2\n",
                  f"operator:\n  flavour: {flavour}\n  version: '{version}'\n  connect:\n")


def test_an_operator_upgrade_through_the_bridge_release_keeps_the_connect_cluster(tmp_path):
    """0.48.0 → 0.51.0 → 1.2.0 (docs/operations.md#operator-upgrades): on the bridge the group id
    and storage topics gain the v1 spec fields with the same values, beside the spec.config keys
    (kept there for an operator rolled back to 0.48.0), which is the same Connect cluster (no
    state lost); at 1.2.0 the keys go (v1 forbids them); each step rolls the pods onto the new
    release's images and Kafka version; the move to v1 (at 1.2.0) is said for each object, as an
    update in place."""
    sides = {v: diff.render_here("dev", on_release(tmp_path, v)) for v in ("0.48.0", "0.51.0", "1.2.0")}
    to_bridge = diff.compare("dev", sides["0.48.0"], sides["0.51.0"])
    moved = ("kafka.strimzi.io/v1beta2 → kafka.strimzi.io/v1: Pulumi updates the object in place (aliased from its "
             "old type, no create or delete); the cluster's {0} CRD must serve kafka.strimzi.io/v1 first "
             "(docs/operations.md#operator-upgrades)")
    assert effects(to_bridge) == [("roll", FLOW, CONNECT, UPGRADE_ROLL.format("0.48.0", "0.51.0"), ())]
    connect = ("", "KafkaConnect", NS, NS)
    # kube-state-metrics' configuration moves to v1 with the bridge (its CRDs serve both), so it
    # reads the objects still when the next release's CRDs serve v1 alone (monitoring/operator.py).
    ksm = ("", "ConfigMap", "replication-monitoring", "kafka-replication-kube-state-metrics")
    assert [d.key for d in to_bridge.objects] == [ksm, connect]
    assert to_bridge.objects[0].changes == tuple(
        diff.Change(f"data.config.yaml › spec.resources[{i}].groupVersionKind.version", "v1beta2", "v1") for i in (0, 1))
    assert [(c.path, c.before, c.after) for c in to_bridge.objects[1].changes if "group" in c.path.lower()
            or "storage" in c.path.lower()] == [
        ("spec.configStorageTopic", None, f"{NS}-config-topic"), ("spec.groupId", None, f"{NS}-consumer-group"),
        ("spec.offsetStorageTopic", None, f"{NS}-offsets-topic"), ("spec.statusStorageTopic", None, f"{NS}-status-topic")]
    to_v1 = diff.compare("dev", sides["0.51.0"], sides["1.2.0"])
    assert effects(to_v1) == [
        ("roll", FLOW, CONNECT, UPGRADE_ROLL.format("0.51.0", "1.2.0"), ()),
        ("api-version", FLOW, CONNECT, moved.format("KafkaConnect"), ()),
        *[("api-version", FLOW, c, moved.format("KafkaConnector"), ()) for c in (CHECKPOINT, HEARTBEAT, SOURCE)]]
    assert [(d.key[1], d.changes) for d in to_v1.objects] == [
        ("KafkaConnect", (diff.Change("apiVersion", "kafka.strimzi.io/v1beta2", "kafka.strimzi.io/v1"),
                          diff.Change("spec.config.config.storage.topic", f"{NS}-config-topic", None),
                          diff.Change("spec.config.group.id", f"{NS}-consumer-group", None),
                          diff.Change("spec.config.offset.storage.topic", f"{NS}-offsets-topic", None),
                          diff.Change("spec.config.status.storage.topic", f"{NS}-status-topic", None),
                          diff.Change("spec.version", "4.2.0", "4.3.1"))),
        *[("KafkaConnector", (diff.Change("apiVersion", "kafka.strimzi.io/v1beta2", "kafka.strimzi.io/v1"),))] * 3]
    # Skipping the bridge is the same Connect cluster too, but no cluster serves both versions for it.
    direct = diff.compare("dev", sides["0.48.0"], sides["1.2.0"])
    assert not [e for e in direct.effects if e.kind == "state-lost"]


def test_a_group_id_moved_to_a_spec_field_with_another_value_is_still_state_loss(tmp_path):
    before = diff.render_here("dev", on_release(tmp_path, "0.48.0"))
    after = diff.render_here("dev", on_release(tmp_path, "0.51.0"))
    key = ("", "KafkaConnect", NS, NS)
    after.objects[key]["spec"]["groupId"] = "other-group"
    lost = [e.text for e in diff.compare("dev", before, after).effects if e.kind == "state-lost"]
    assert lost == ["a new group id (group id repl-us-west-us-east-consumer-group → other-group) is a new Connect "
                    "cluster: its workers start with no connector configurations, offsets or statuses, so the source "
                    "connectors copy every topic again from the earliest offset (duplicates in the target), and the "
                    "old storage topics are left behind"]


def test_a_csm_upgrade_rolls_the_pods_onto_the_new_release(tmp_path):
    """CSM 1.2 → 1.4: the same API version, a new Kafka line; the pinned Connect version moves
    with it (3.8.0.1.2 is not a CSM 1.4 version)."""
    before = diff.render_here("dev")
    after = diff.render_here("dev", edited(tmp_path, "csm-1.4", "  flavour: csm\n  connect:\n    version: 3.8.0.1.2\n",
                                           "  flavour: csm\n  version: '1.4'\n  connect:\n    version: 3.9.0.1.4\n"))
    sd = diff.compare("dev", before, after)
    assert effects(sd) == [("roll", FLOW, CONNECT, "Strimzi rolls the Connect pods one by one (the operator moves from "
                            "csm 1.2 to csm 1.4, whose images run the workers; spec.version changed): every "
                            "connector's tasks restart on the new workers", ())]


def test_the_diff_command_ends_without_a_traceback(tmp_path):
    """Two renders in one process, then exit: the engine's event loops are all closed first
    (render.close_event_loop), so nothing prints after the report."""
    after = on_release(tmp_path, "0.48.0")
    done = subprocess.run([sys.executable, "-m", "infra", "diff", "--stack", "dev", "--before", "stacks/dev.yaml",
                           "--after", str(after)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.startswith("Replication diff: stacks/dev.yaml → ") and "~ operatorFlavour: 'csm' → 'strimzi'" \
        in done.stdout


def test_connect_resources_roll_the_pods_and_replicas_scale(base, tmp_path):
    roll = compare(base, edited(tmp_path, "roll", FLOW_LINE, FLOW_LINE + "    connect: {resources: {requests: "
                                "{cpu: '1', memory: 2Gi}, limits: {memory: 2Gi}}}\n"))
    assert effects(roll) == [("roll", FLOW, CONNECT, "Strimzi rolls the Connect pods one by one (spec.resources "
                              "changed): every connector's tasks restart on the new workers", ())]
    scale = compare(base, edited(tmp_path, "scale", "    replicas: 3", "    replicas: 5"))
    assert effects(scale) == [("scale", FLOW, CONNECT, "Connect scales from 3 to 5 workers; the tasks are "
                               "rebalanced (no pod rolls)", ())]
    assert scale.objects[0].changes == (diff.Change("spec.replicas", 3, 5),)
    down = compare(base, edited(tmp_path, "down", "    replicas: 3", "    replicas: 2"))
    assert effects(down) == [("scale", FLOW, CONNECT, "Connect scales from 3 to 2 workers; the tasks are rebalanced "
                              "(no pod rolls): the removed workers' tasks wait 300 s for them to come back before the "
                              "others take them (scheduled.rebalance.max.delay.ms; connect.rebalanceDelaySeconds), and "
                              "replicate nothing meanwhile", ())]
    quick = compare(base, edited(tmp_path, "quick", "    replicas: 3", "    replicas: 2\n    rebalanceDelaySeconds: 20"))
    assert [e.kind for e in quick.effects] == ["roll", "scale"]
    assert "tasks wait 20 s for them" in quick.effects[1].text
    assert quick.objects[0].changes == (diff.Change("spec.config.scheduled.rebalance.max.delay.ms", None, 20000),
                                        diff.Change("spec.replicas", 3, 2))


def test_a_grafana_dashboard_s_new_selector_replaces_it_and_its_folder_changes_in_place(tmp_path):
    monitoring = "  dashboard: true\n"
    with_grafana = edited(tmp_path, "grafana", monitoring, monitoring + "  grafanaOperator: {instanceSelector: "
                          "{dashboards: grafana}}\n")
    before = diff.render_here("dev", with_grafana)
    key = ("", "GrafanaDashboard", "replication-monitoring", "kafka-replication")
    moved = tmp_path / "moved.yaml"
    moved.write_text(with_grafana.read_text().replace("{dashboards: grafana}", "{dashboards: replication}"))
    assert objects(diff.compare("dev", before, diff.render_here("dev", moved))) == [
        (key, "replace", ("spec.instanceSelector",))]
    foldered = tmp_path / "foldered.yaml"
    foldered.write_text(with_grafana.read_text().replace("{dashboards: grafana}}", "{dashboards: grafana}, "
                                                         "folder: Replication}"))
    assert objects(diff.compare("dev", before, diff.render_here("dev", foldered))) == [(key, "change", ())]


def test_tasks_restart_the_connector_and_a_state_change_is_said(base, tmp_path):
    sd = compare(base, edited(tmp_path, "restart", FLOW_LINE,
                              FLOW_LINE + "    tasksMax: {source: 6}\n    state: {heartbeat: paused}\n"))
    assert effects(sd) == [
        ("restart", FLOW, SOURCE, f"{RESTART} (spec.tasksMax)", ()),
        ("state", FLOW, HEARTBEAT, "the MirrorHeartbeatConnector goes from running to paused", ()),
    ]


def test_a_state_written_out_as_running_is_no_state_change():
    """Objects of a program that left a running connector's state out (Strimzi's default), then
    the same connector with `state: running` written (the drift fix): an update and no effect."""
    before = diff.render_here("dev")
    key = ("", "KafkaConnector", NS, f"{NS}-source")
    old = json.loads(json.dumps(before.objects[key]))
    assert old["spec"].pop("state") == "running"
    sd = diff.compare("dev", diff.Snapshot({**before.objects, key: old}), diff.Snapshot(before.objects))
    assert [c for o in sd.objects for c in o.changes] == [diff.Change("spec.state", None, "running")]
    assert effects(sd) == []


def test_a_policy_change_names_the_remote_topics(base, tmp_path):
    sd = compare(base, edited(tmp_path, "identity", FLOW_LINE, FLOW_LINE + "    replicationPolicy: identity\n"
                              "    topicsExclude: ['.*heartbeats']\n"))
    policy = [(e.subject, e.text, e.examples) for e in sd.effects if e.kind == "policy"]
    assert policy == [(SOURCE, "the replication policy changes (replication.policy.class: "
                               "org.apache.kafka.connect.mirror.DefaultReplicationPolicy → "
                               "org.apache.kafka.connect.mirror.IdentityReplicationPolicy): remote topics get other "
                               "names, continuing from the stored offsets, so the new remote topics hold only what is "
                               "copied from now on and consumers of the old names stop receiving records",
                       ("us-west.test → test", "us-west.testa → testa", "us-west.testb → testb"))]
    stop = [e for e in sd.effects if e.kind == "topics-stop"]
    assert stop[0].examples == ("testheartbeats", "testaheartbeats", "testbheartbeats", "testcheartbeats",
                                "testdheartbeats")
    assert [(e.subject, e.text) for e in sd.effects if e.kind == "restart"] == [
        (CHECKPOINT, f"{RESTART} (topics.exclude; the ConfigMap values it reads: replication.policy.class)"),
        (HEARTBEAT, f"{RESTART} (the ConfigMap values it reads: replication.policy.class)"),
        (SOURCE, f"{RESTART} (topics.exclude; the ConfigMap values it reads: replication.policy.class)"),
    ]


def test_a_configmap_change_a_connector_cannot_see_is_said():
    """Objects deployed by hand, without the digest: the ConfigMap changes, the spec does not."""
    before = diff.render_here("dev")
    strip = {k: _without_digest(v) for k, v in before.objects.items()}
    cm = ("", "ConfigMap", NS, "replication")
    after = {**strip, cm: {**strip[cm], "data": {**strip[cm]["data"], "topics": "orders"}}}
    sd = diff.compare("dev", diff.Snapshot(strip), diff.Snapshot(after))
    assert [(e.kind, e.subject, e.text) for e in sd.effects if e.kind == "not-applied"] == [
        ("not-applied", s, "only values the connector reads through a ConfigMap change (topics): the configuration "
                           "Strimzi compares is unchanged, so it sends nothing, and the running connector keeps the "
                           "old values until it restarts with its tasks (strimzi.io/restart=includeTasks from Strimzi 0.48; on "
                           "CSM, strimzi.io/restart=true and strimzi.io/restart-task=<id> for each task)")
        for s in (CHECKPOINT, SOURCE)]


def _without_digest(obj):
    if obj.get("kind") != "KafkaConnector" or "spec" not in obj:
        return obj
    config = {k: v for k, v in obj["spec"]["config"].items() if k != "kafka-replication.configmaps.digest"}
    return {**obj, "spec": {**obj["spec"], "config": config}}


def test_the_digest_is_of_the_configmap_values_a_connector_reads(base):
    heartbeat = base.objects[("", "KafkaConnector", NS, f"{NS}-heartbeat")]
    cm = {k[3]: v.get("data", {}) for k, v in base.objects.items() if k[1] == "ConfigMap" and k[2] == NS}
    # What the heartbeat connector reads from ConfigMaps: the policy, both aliases and how to
    # reach the source cluster (it produces there).
    read = [("replication", "replication.policy.class"), ("source-us-west", "alias"),
            ("source-us-west", "bootstrap.servers"), ("source-us-west", "heartbeat.ssl.truststore.location"),
            ("source-us-west", "heartbeat.ssl.truststore.type"), ("source-us-west", "sasl.mechanism"),
            ("source-us-west", "security.protocol"), ("source-us-west", "ssl.truststore.location"),
            ("target-us-east", "alias")]
    lines = sorted(f"{NS}/{name}:{key}={cm[name][key]}" for name, key in read)
    assert heartbeat["spec"]["config"]["kafka-replication.configmaps.digest"] == \
        hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def test_secrets_are_masked_in_every_format(tmp_path):
    """Real secret values rendered on both sides, a Secret's keys changing: no value is printed."""
    config = {"topology": str(edited(tmp_path, "pem", "tls: {trust: jks}", "tls: {trust: pem}"))}
    secrets_after = {k: v for k, v in SECRETS.items() if not k.startswith("us-west.truststore")}
    secrets_after["us-west.caCert"] = SECRETS["us-east.caCert"]
    before = render.run("dev", {}, dict(SECRETS))
    after = render.run("dev", config, secrets_after)
    sd = diff.compare("dev", diff.snapshot(before.placed_objects(), before.outputs),
                      diff.snapshot(after.placed_objects(), after.outputs))
    secret, files = ([d for d in sd.objects if d.key == ("", "Secret", NS, name)][0]
                     for name in ("source-us-west", "source-us-west-tls"))
    assert (secret.action, secret.replaced_by, files.action, files.replaced_by) == (
        "replace", ("stringData",), "replace", ("data", "stringData"))
    # Which keys the Secrets hold shows; what they hold never does.
    assert {c.path: (c.before, c.after) for c in secret.changes} == {
        "stringData.ca-truststore.password": (None, "[secret]"), "stringData.ssl.truststore.password": ("[secret]", None)}
    assert {c.path: (c.before, c.after) for c in files.changes} == {
        "data.ca-truststore.jks": (None, "[secret]"), "data.truststore.jks": ("[secret]", None),
        "stringData.ca.crt": (None, "[secret]")}
    for out in (diff.text([sd], "a", "b"), diff.markdown([sd], "a", "b"), diff.as_json([sd], "a", "b")):
        for value in {**SECRETS, **secrets_after}.values():
            for line in str(value).splitlines():
                if len(line) > 8:
                    assert line not in out


def test_markdown_fits_one_comment_and_says_what_it_left_out(base, tmp_path):
    sd = compare(base, edited(tmp_path, "renamed", "  - source: us-west\n", "  - name: west-east\n    source: us-west\n"))
    whole = diff.markdown([sd], "main", "branch")
    assert whole.startswith("<!-- kafka-replication-diff -->\n### Replication diff: `main` → `branch`\n")
    assert "| dev | (default) | flow west-east | 17 added |" in whole
    assert "left out" not in whole
    cut = diff.markdown([sd], "main", "branch", limit=6000)
    assert len(cut) <= 6000
    details = whole.count("<details>")
    assert cut.endswith(f"_{details - cut.count('<details>')} of {details} objects' details are left out to fit one "
                        "comment (6,000 characters): run `kafka-replication diff` for the whole diff._")
    # What it does is never cut before the details.
    assert "**connector state lost**" in cut


def test_json_output_for_tools(base, tmp_path):
    sd = compare(base, edited(tmp_path, "scale", "    replicas: 3", "    replicas: 5"))
    assert json.loads(diff.as_json([sd], "HEAD", "working tree")) == {
        "before": "HEAD", "after": "working tree", "changed": True,
        "stacks": [{"stack": "dev", "note": None, "changed": True,
                    "objects": [{"kubernetes": None, "kind": "KafkaConnect", "namespace": NS, "name": NS,
                                 "action": "change", "owner": FLOW, "replacedBy": [],
                                 "changes": [{"path": "spec.replicas", "before": 3, "after": 5}]}],
                    "effects": [{"kind": "scale", "title": "Connect scales", "kubernetes": None, "owner": FLOW,
                                 "subject": CONNECT, "text": "Connect scales from 3 to 5 workers; the tasks are "
                                                             "rebalanced (no pod rolls)", "examples": []}],
                    "outputs": []}]}


def test_text_output(base, tmp_path):
    sd = compare(base, edited(tmp_path, "scale", "    replicas: 3", "    replicas: 5"))
    assert diff.text([sd], "HEAD", "working tree") == "\n".join([
        "Replication diff: HEAD → working tree", "",
        "Stack dev: 1 changed",
        f"  {FLOW}: 1 changed", "",
        "What it does (stack dev):",
        f"  ! Connect scales — {FLOW}, {CONNECT}: Connect scales from 3 to 5 workers; the tasks are rebalanced "
        "(no pod rolls)", "",
        "Changes (stack dev):",
        f" ~ {CONNECT}",
        "      ~ spec.replicas: 3 → 5"])


# --------------------------------------------------------------------------- topic languages


def test_difference_on_listed_names_and_patterns():
    listed = topics.Topics((topics.Filter(("orders", "payments", "refunds")),))
    fewer = topics.Topics((topics.Filter(("orders", "payments")),))
    assert topics.difference(listed, fewer, 5) == ["refunds"]
    assert topics.difference(fewer, listed, 5) == []
    wide = topics.Topics((topics.Filter(("orders.*",), ("orders\\.internal\\..*",)),))
    # Kafka's default excludes apply: `orders-internal` was never replicated.
    assert topics.difference(wide, fewer, 3) == ["ordersa", "ordersb", "ordersc"]
    assert topics.difference(fewer, None, 5) == ["orders", "payments"]


# --------------------------------------------------------------------------- the command


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_command_exit_codes_and_formats(capsys, tmp_path):
    same = run(capsys, "diff", "--stack", "dev", "--before", "stacks/dev.yaml", "--after", "stacks/dev.yaml")
    assert same == (0, "Replication diff: stacks/dev.yaml → stacks/dev.yaml\n\nStack dev: no changes\n", "")
    scale = edited(tmp_path, "scale", "    replicas: 3", "    replicas: 5")
    code, out, _ = run(capsys, "diff", "--stack", "dev", "--before", "stacks/dev.yaml", "--after", str(scale),
                       "--output", "json")
    assert (code, json.loads(out)["changed"]) == (1, True)
    code, out, _ = run(capsys, "diff", "--stack", "dev", "--before", "stacks/dev.yaml", "--after", str(scale),
                       "--output", "markdown")
    assert code == 1 and out.startswith("<!-- kafka-replication-diff -->\n")


def test_command_refuses_bad_arguments_all_at_once(capsys, tmp_path):
    code, out, err = run(capsys, "diff", "--before", "stacks/dev.yaml", "--examples", "0", "--stack", "a b")
    assert (code, out) == (2, "")
    assert err == (
        "error: the command line has 3 problem(s):\n"
        "  - --stack: (argument): got 'a b'; expected a Pulumi stack name: letters, digits, '-', '_' and '.'\n"
        "  - --examples: (argument): got 0; expected 1 to 50\n"
        "  - --before/--after: (argument): got 'stacks/dev.yaml'; expected both files: the topology before and after\n")
    code, _, err = run(capsys, "diff", "--before", "a.yaml", "--after", "b.yaml")
    assert (code, err) == (2, "error: the command line has 1 problem(s):\n  - --stack: (argument): missing; expected "
                              "exactly one stack with --before/--after: its config renders both files\n")
    code, out, err = run(capsys, "diff", "--stack", "dev", "--base", "no-such-ref-anywhere", "--output", "json")
    assert code == 2 and err == ""
    assert json.loads(out)["problems"] == [{
        "where": "--base", "field": "(argument)", "value": "no-such-ref-anywhere", "line": None,
        "allowed": f"a commit of the repository at {ROOT} (fetch the base branch first, e.g. `git fetch origin main`)"}]
    code, _, err = run(capsys, "diff", "--stack", "dev", "--base=--upload-pack=x")
    assert code == 2 and "--base: (argument): got '--upload-pack=x'; expected a git revision" in err


def test_an_invalid_topology_on_either_side_is_exit_2(capsys, tmp_path):
    bad = edited(tmp_path, "bad", "    replicas: 3", "    replicas: -1")
    code, out, err = run(capsys, "diff", "--stack", "dev", "--before", "stacks/dev.yaml", "--after", str(bad))
    assert (code, out) == (2, "")
    # Two files and maybe several stacks: the report says which stack and file.
    assert err == (f"error: stack dev's topology ({bad.resolve()}) has 1 problem(s):\n"
                   "  - line 9: operator: connect.replicas: got -1; expected an integer from 1 to 2147483647\n")




def test_against_a_git_revision(tmp_path):
    """The command in a repository of its own: the base renders in a child process from the
    commit's tree, the working tree in the command's own."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("contract", "infra", "components"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "stacks").mkdir()
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml", "stacks/dev.yaml"):
        shutil.copy(ROOT / name, repo / name)
    env = {**os.environ, **GIT, "PYTHONPATH": str(repo)}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "stacks/dev.yaml").write_text(DEV.replace('topics: ["test.*"]', r'topics: ["test\\.orders"]'))
    done = subprocess.run([sys.executable, "-m", "infra", "diff", "--base", "HEAD"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stderr) == (1, "")
    lines = done.stdout.splitlines()
    assert lines[:5] == ["Replication diff: HEAD → working tree", "", "Stack dev: 2 changed, 2 replaced; 3 outputs changed",
                         "  audit: 1 replaced", f"  {FLOW}: 2 changed, 1 replaced"]
    assert f"  ! topics stop replicating — {PAIR}, source connectors {NS}-source: topics that no longer match the " \
           "filters of the source connectors between these clusters (the shortest shown; there may be more)" in lines
    assert "      e.g. test, testa, testb, testc, testd" in lines
    # A new stack on the working tree's side only: all its objects are added.
    shutil.copy(ROOT / "Pulumi.dev.yaml", repo / "Pulumi.copy.yaml")
    shutil.copy(repo / "stacks/dev.yaml", repo / "stacks/copy.yaml")
    done = subprocess.run([sys.executable, "-m", "infra", "diff", "--stack", "copy", "--output", "json"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600)
    stack = json.loads(done.stdout)["stacks"][0]
    assert (done.returncode, stack["note"], {o["action"] for o in stack["objects"]}) == (1, "the stack is new", {"add"})


def _repo(tmp_path: Path) -> tuple[Path, dict]:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT}
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    return repo, env


def test_a_base_whose_tree_is_empty_has_no_stacks(tmp_path):
    from infra.tools.diff import sources
    repo, env = _repo(tmp_path)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "empty"], cwd=repo, env=env, check=True)
    (repo / "Pulumi.dev.yaml").write_text("config: {}\n")
    assert sources.render_at("HEAD", None, repo, tmp_path / "work") == {"dev": sources.ABSENT}


def test_a_base_with_a_link_out_of_the_tree_leaves_the_link_out(tmp_path):
    from infra.tools.diff import sources
    repo, env = _repo(tmp_path)
    (repo / "absolute").symlink_to("/etc/passwd")
    (repo / "upward").symlink_to("../../outside")
    (repo / "kept.txt").write_text("kept\n")
    for args in (["add", "-A"], ["commit", "-q", "-m", "links"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    assert sources.render_at("HEAD", None, repo, tmp_path / "work") == {}
    assert sorted(p.name for p in (tmp_path / "work" / "tree").iterdir()) == ["kept.txt"]


def test_a_base_outside_a_git_repository_says_so(tmp_path):
    from infra.core.errors import TopologyError
    from infra.tools.diff import sources
    with pytest.raises(TopologyError) as exc:
        sources.render_at("main", None, tmp_path, tmp_path / "work")
    assert [str(p) for p in exc.value.problems] == [
        f"--base: (argument): got 'main'; expected a revision of a git repository: {tmp_path} is not in one "
        "(compare two files with --before and --after instead)"]


def test_a_working_tree_problem_names_its_stack_and_file(tmp_path):
    from infra.core.errors import TopologyError
    from infra.tools.diff import sources
    broken = tmp_path / "t.yaml"
    broken.write_text(DEV + "\nunknownKey: 1\n")
    with pytest.raises(TopologyError) as exc:
        sources.render_here("dev", broken)
    assert exc.value.subject == f"stack dev's topology ({broken})"


# --------------------------------------------------------------------------- the command line


def test_help_describes_every_argument_and_the_exit_codes(capsys):
    from infra.tools.cli import parser
    top = parser()
    for action in top._subparsers._group_actions[0].choices.values():  # type: ignore[union-attr]
        for arg in action._actions:
            assert arg.help, f"{action.prog}: {arg.option_strings or arg.dest} has no help"
    with pytest.raises(SystemExit) as exit_:
        main(["diff", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert out.startswith("usage: ")
    assert out[out.index("exit codes:"):] == """exit codes:
  0  success (diff: no change; status: healthy)
  1  diff: the stacks change; rehearse: not every record arrived; status: degraded; failover: not ready;
     lag: a partition past the audit's maxLag
  2  invalid input: every problem is printed (which flow, which field, what value, what is allowed);
     failover: could not tell
  3  an error of the program itself (INFRA_DEBUG=1 shows the traceback)
  4  status: down (a flow copies nothing)
  5  status: unknown (an object could not be read); lag: something could not be read
  130 interrupted
"""


def test_version_and_completion(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    from importlib import metadata
    assert capsys.readouterr().out.split()[-1] == metadata.version("kafka-replication")
    code, out, _ = run(capsys, "completion", "bash")
    assert code == 0 and "complete" in out and "diff" in out and "--placeholder-secrets" in out


def test_validate_json(capsys, tmp_path):
    code, out, _ = run(capsys, "validate", "stacks/dev.yaml", "--output", "json")
    assert (code, json.loads(out)) == (0, {"valid": True, "topology": "stacks/dev.yaml", "clusters": 2, "flows": 1,
                                           "deployed": 1, "warnings": [], "problems": []})
    bad = edited(tmp_path, "bad", "    replicas: 3", "    replicas: -1")
    code, out, err = run(capsys, "validate", str(bad), "--output", "json")
    found = json.loads(out)
    assert (code, err, found["valid"], len(found["problems"])) == (2, "", False, 1)
    assert found["problems"][0]["field"].endswith("replicas")


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "kafka-replication"
    done = subprocess.run([str(script), "validate", "stacks/dev.yaml"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "stacks/dev.yaml: ok (2 clusters, 1 flows declared, 1 deployed)\n")


def test_a_removed_flow_says_what_it_leaves_behind_and_what_a_flow_added_back_does(tmp_path):
    """Nothing deletes a Connect cluster's topics with it: the diff names them, and the MirrorMaker
    2 topics of the pair unless another Connect cluster between the same clusters still uses them."""
    # us-west trusts PEM here: it is a target too (the flow `back`).
    dev = DEV.replace("tls: {trust: jks}", "tls: {trust: pem}")
    (tmp_path / "after.yaml").write_text(dev)
    (tmp_path / "before.yaml").write_text(dev.replace(FLOW_LINE, FLOW_LINE + (
        "  - name: orders\n    source: us-west\n    target: us-east\n    topics: [\"orders[.].*\"]\n"
        "  - name: back\n    source: us-east\n    target: us-west\n    topics: [\"back[.].*\"]\n"), 1))
    sd = diff.compare("dev", diff.render_here("dev", tmp_path / "before.yaml"),
                      diff.render_here("dev", tmp_path / "after.yaml"))
    deleted = {e.subject: e.text for e in sd.effects if e.kind == "delete" and e.subject.startswith("KafkaConnect ")}
    tail = ("the remote topics and what they hold. A Connect cluster named {name} later takes these storage topics "
            "again: its connectors resume after the source offsets stored here, so records the source still holds "
            "are copied and records it deleted meanwhile never arrive; delete the storage topics to retire the "
            "flow for good (a flow added back then copies every topic from the earliest offset: duplicates in the "
            "target); docs/operations.md#removing-a-flow")
    stops = "the Connect cluster is deleted: its workers stop, and every connector on it stops replicating. "
    assert deleted == {
        "KafkaConnect orders/orders": stops + (
            "Left on the target Kafka: its group id orders-consumer-group, config storage topic orders-config-topic, "
            "offset storage topic orders-offsets-topic, status storage topic orders-status-topic, and "
            "us-west.checkpoints.internal on us-east and mm2-offset-syncs.us-east.internal on us-west (another "
            "Connect cluster between the same clusters still uses both), with " + tail.format(name="orders")),
        "KafkaConnect back/back": stops + (
            "Left on the target Kafka: its group id back-consumer-group, config storage topic back-config-topic, "
            "offset storage topic back-offsets-topic, status storage topic back-status-topic, and "
            "us-east.checkpoints.internal on us-west and mm2-offset-syncs.us-west.internal on us-east, with "
            + tail.format(name="back")),
    }
