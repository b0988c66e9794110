"""Operator upgrades on the engine tier: docs/operations.md "Operator upgrades", run as written
against a real kube-apiserver holding the dev stack, with kubectl of the server's release, the
CRDs each Strimzi line generates (infra/tools/rehearsal/crds.py) laid out as the release archives
hold them, and the Pulumi CLI's engine with the program.

The proof is the engine's: each preview and update is a set of steps on the URNs the state holds,
and an update where the type token changed is an alias the engine resolved (no create, no delete).
The API server's: it serves each object in the version the CRDs make it store, refuses the 1.x
CRDs while v1beta2 is still a stored version, and keeps each object's uid across the upgrade.

No operator runs here: the StrimziPodSet the Cluster Operator writes for each Connect cluster's
pods is created as it would be (`operator_pod_set`), the one object of the stand-in's here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from infra.core import names, releases
from infra.core.releases import Flavour
from infra.tools.rehearsal import crds
from infra.tools.rehearsal.apiserver import kubectl_binary
from tests.engine.harness import REPLACE, UPDATE, Engine
from tests.engine.test_day_two_runbook import OPERATIONS, run_command
from tests.engine.test_engine import Single, one_cluster, short, without_waiting
from tests.support.schemas import strimzi_crds

NS = "repl-us-west-us-east"
SECTION = "Operator upgrades"
VERSION_LINE = re.compile(r'operator\.version: "([^"]+)"')
CONNECTORS = ("checkpoint", "heartbeat", "source")


def steps(section: str) -> list[str]:
    """Every line of the first `sh` block under `section`, comments included (they say where the
    topology changes)."""
    text = OPERATIONS.read_text()
    start = text.index(f"\n## {section}\n")
    block = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert block, f"docs/operations.md, {section}: no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def on_release(topology: dict[str, Any], flavour: str, version: str, connect: str | None = None) -> dict[str, Any]:
    t = yaml.safe_load(yaml.safe_dump(topology))
    t["operator"] = {**{k: v for k, v in t["operator"].items() if k not in ("flavour", "version", "connect")},
                     "flavour": flavour, "version": version,
                     "connect": {k: v for k, v in t["operator"].get("connect", {}).items() if k != "version"}}
    if connect:
        t["operator"]["connect"]["version"] = connect
    t["operator"]["readiness"] = {"wait": False}
    return t


def release_archives(directory: Path) -> Path:
    """`strimzi-<version>/install/cluster-operator/` with the CRD files the runbook names, for
    each Strimzi line the path crosses, as the release archives lay them out."""
    for version in ("0.51.0", "1.2.0"):
        release = releases.find(Flavour.strimzi, version)
        assert release is not None
        folder = directory / f"strimzi-{version}" / "install" / "cluster-operator"
        folder.mkdir(parents=True)
        for _, name in crds.FILES.values():
            shutil.copy(strimzi_crds(release) / name, folder / name)
    return directory


def walk(lines: list[str], engine: Engine, one: Single, dev: dict[str, Any], archives: Path) -> Iterator[tuple[str, str, Any]]:
    """The runbook's lines run in order: a comment naming `operator.version` edits the topology
    there, other comments are skipped, each command runs (run_command). Yields (the topology's
    release, the line, its result) for each command, before the next one runs."""
    version = "0.48.0"
    for line in lines:
        wanted = VERSION_LINE.search(line)
        if wanted:
            version = wanted.group(1)
            one.topology.write_text(yaml.safe_dump(on_release(dev, "strimzi", version), sort_keys=False))
        elif not line.lstrip().startswith("#"):
            yield version, line, run_command(line, engine, one, cwd=archives)


def objects(one: Single, version: str) -> dict[str, dict[str, Any]]:
    """The stack's KafkaConnect and KafkaConnectors as the server serves them in `version`."""
    base = f"/apis/kafka.strimzi.io/{version}/namespaces/{NS}"
    found = {f"KafkaConnect/{NS}": one.client.request("GET", f"{base}/kafkaconnects/{NS}")[1]}
    for c in CONNECTORS:
        found[f"KafkaConnector/{NS}-{c}"] = one.client.request("GET", f"{base}/kafkaconnectors/{NS}-{c}")[1]
    return found


def stored_versions(one: Single) -> dict[str, list[str]]:
    return {kind: one.client.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                     f"{kind}")[1]["status"]["storedVersions"]
            for kind in ("kafkaconnects.kafka.strimzi.io", "kafkaconnectors.kafka.strimzi.io",
                         "strimzipodsets.core.strimzi.io")}


POD_SETS = f"/apis/core.strimzi.io/{{version}}/namespaces/{NS}/strimzipodsets"


def operator_pod_set(one: Single) -> dict[str, Any]:
    """The StrimziPodSet the Cluster Operator writes for the stack's Connect cluster (named
    `<name>-connect`, KafkaConnectResources.componentName; its pods as KafkaConnectCluster.
    generatePodSet lists them), created in the version 0.48.0 serves: a stand-in's object."""
    name = f"{NS}-connect"
    labels = {"strimzi.io/cluster": NS, "strimzi.io/kind": "KafkaConnect", "strimzi.io/name": name}
    body = {"apiVersion": "core.strimzi.io/v1beta2", "kind": "StrimziPodSet",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "pods": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-0", "labels": labels},
                               "spec": {"containers": [{"name": name, "image": "quay.io/strimzi/kafka"}]}}]}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    assert one.client.request("POST", "/api/v1/namespaces", namespace)[0] in (201, 409)  # the stack's, when deployed
    code, created = one.client.request("POST", POD_SETS.format(version="v1beta2"), body)
    assert code == 201, created
    return created


def kubectl(line: str, one: Single, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A runbook's kubectl line whose failure is the point (run_command asserts success)."""
    binary = kubectl_binary()
    assert binary is not None
    return subprocess.run([str(binary), *line.split()[1:]], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, "KUBECONFIG": str(one.kubeconfig)})


def expected(version: str, connectors: bool) -> dict[str, str]:
    found = {f"kubernetes:kafka.strimzi.io/{version}:KafkaConnect::{NS}/{NS}": UPDATE}
    if connectors:
        found.update({f"kubernetes:kafka.strimzi.io/{version}:KafkaConnector::{NS}/{NS}-{c}": UPDATE
                      for c in CONNECTORS})
    return found


def test_strimzi_0_48_to_1_2_through_the_bridge_release_updates_the_same_objects(engine: Engine, tmp_path):
    """The runbook's five steps: every preview and update is updates of the stack's own objects
    under their new type token; the objects keep their uids (never deleted and created again),
    their group id and storage topics; the 1.x CRDs go in only once step 3 stored everything as
    v1; and a last preview on 1.2.0 has nothing to do."""
    dev = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    start = on_release(dev, "strimzi", "0.48.0")
    lines = steps(SECTION)
    archives = release_archives(tmp_path / "archives")
    runs: list[tuple[str, str, dict[str, str]]] = []
    with one_cluster(engine, tmp_path, start, "upgrade") as one:
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        before = objects(one, "v1beta2")
        pod_set = operator_pod_set(one)
        for version, line, done in walk(lines, engine, one, dev, archives):
            if line.startswith("kubectl patch crd kafkaconnects.kafka.strimzi.io --subresource=status"):
                assert stored_versions(one)["kafkaconnectors.kafka.strimzi.io"] == ["v1beta2", "v1"]
            if line.startswith("pulumi"):
                assert done.code == 0, done.output
                runs.append((version, line.split()[1], short(done.changes())))
        # The gate the runbook names: v1 the only stored version, or the 1.x CRDs are refused.
        assert stored_versions(one) == {"kafkaconnects.kafka.strimzi.io": ["v1"], "kafkaconnectors.kafka.strimzi.io": ["v1"],
                                        "strimzipodsets.core.strimzi.io": ["v1"]}
        after = objects(one, "v1")
        pod_set_after = one.client.request("GET", POD_SETS.format(version="v1") + f"/{NS}-connect")[1]
        last = engine.run("preview", one.project, "dev", kubeconfig=one.kubeconfig)
    # The bridge step moves kube-state-metrics' configuration to v1 too (the newest version 0.51.0
    # serves: infra/plan/monitoring/operator.py), a ConfigMap, which the provider replaces.
    bridge = {**expected("v1beta2", False), f"kubernetes:core/v1:ConfigMap::replication-monitoring/{names.KSM_CONFIGMAP}": REPLACE}
    assert runs == [("0.51.0", "preview", bridge), ("0.51.0", "up", bridge),
                    ("1.2.0", "preview", expected("v1", True)), ("1.2.0", "up", expected("v1", True))]
    assert last.code == 0 and last.changes() == {}, last.output
    assert {k: o["metadata"]["uid"] for k, o in after.items()} == {k: o["metadata"]["uid"] for k, o in before.items()}
    connect_before, connect_after = before[f"KafkaConnect/{NS}"]["spec"], after[f"KafkaConnect/{NS}"]["spec"]
    assert {k: connect_before["config"][k] for k in ("group.id", "config.storage.topic", "offset.storage.topic",
                                                      "status.storage.topic")} == {
        "group.id": f"{NS}-consumer-group", "config.storage.topic": f"{NS}-config-topic",
        "offset.storage.topic": f"{NS}-offsets-topic", "status.storage.topic": f"{NS}-status-topic"}
    assert {k: connect_after[k] for k in ("groupId", "configStorageTopic", "offsetStorageTopic",
                                          "statusStorageTopic")} == {
        "groupId": f"{NS}-consumer-group", "configStorageTopic": f"{NS}-config-topic",
        "offsetStorageTopic": f"{NS}-offsets-topic", "statusStorageTopic": f"{NS}-status-topic"}
    assert (connect_before["version"], connect_after["version"]) == ("4.1.0", "4.3.1")
    assert all(o["apiVersion"] == "kafka.strimzi.io/v1" for o in after.values())
    assert (pod_set_after["apiVersion"], pod_set_after["metadata"]["uid"], pod_set_after["spec"]["pods"]) == (
        "core.strimzi.io/v1", pod_set["metadata"]["uid"], pod_set["spec"]["pods"])


def test_a_strimzi_pod_set_left_stored_as_v1beta2_refuses_the_1_x_crds(engine: Engine, tmp_path):
    """Why step 3 migrates the operator's StrimziPodSets too: with only the stack's own kinds
    migrated (what the runbook did before), `status.storedVersions` of strimzipodsets still holds
    v1beta2, and step 4's 1.2.0 CRDs are refused; the runbook's StrimziPodSet lines let them in,
    the object kept (its uid)."""
    dev = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    archives = release_archives(tmp_path / "archives")
    lines = [line for line in steps(SECTION) if line.startswith("kubectl")]
    (bridge,) = [line for line in lines if line.startswith("kubectl replace -f strimzi-0.51.0/")]
    (final,) = [line for line in lines if line.startswith("kubectl replace -f strimzi-1.2.0/")]
    pod_set_lines = [line for line in lines if "strimzipodsets" in line]
    assert len(pod_set_lines) == 3
    # Step 3 for the stack's own kinds, of which this server holds no object: nothing to write back.
    own_kinds = [line for line in lines if line.startswith("kubectl patch crd kafkaconnect")]
    assert len(own_kinds) == 4
    with one_cluster(engine, tmp_path, on_release(dev, "strimzi", "0.48.0"), "upgrade-pod-sets") as one:
        pod_set = operator_pod_set(one)
        run_command(bridge, engine, one, cwd=archives)
        for line in own_kinds:
            run_command(line, engine, one, cwd=archives)
        refused = kubectl(final, one, archives)
        for line in pod_set_lines:
            run_command(line, engine, one, cwd=archives)
        accepted = kubectl(final, one, archives)
        served = one.client.request("GET", POD_SETS.format(version="v1") + f"/{NS}-connect")[1]
    assert refused.returncode == 1
    assert ('The CustomResourceDefinition "strimzipodsets.core.strimzi.io" is invalid: status.storedVersions[0]: '
            'Invalid value: "v1beta2": missing from spec.versions') in refused.stderr
    assert "kafkaconnect" not in refused.stderr  # the stack's own kinds went in
    assert accepted.returncode == 0, accepted.stderr
    assert (served["apiVersion"], served["metadata"]["uid"]) == ("core.strimzi.io/v1", pod_set["metadata"]["uid"])


def test_csm_1_2_to_1_4_updates_the_connect_cluster_only(engine: Engine, tmp_path):
    """The same API version on both sides: the KafkaConnect is updated (its Connect version), with
    CSM 1.4's CRDs (Strimzi 0.45.0's) replacing 1.2's (0.43.0's) under it."""
    dev = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    with one_cluster(engine, tmp_path, dev, "csm-upgrade") as one:
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        uid = objects(one, "v1beta2")[f"KafkaConnect/{NS}"]["metadata"]["uid"]
        folder = strimzi_crds(releases.find(Flavour.csm, "1.4"))  # type: ignore[arg-type]
        kubectl = f"kubectl replace -f {folder / crds.FILES['KafkaConnect'][1]} -f {folder / crds.FILES['KafkaConnector'][1]}"
        run_command(kubectl, engine, one)
        one.topology.write_text(yaml.safe_dump(on_release(dev, "csm", "1.4", "3.9.0.1.4"), sort_keys=False))
        preview = engine.run("preview", one.project, "dev", kubeconfig=one.kubeconfig)
        applied = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        connect = objects(one, "v1beta2")[f"KafkaConnect/{NS}"]
    assert preview.code == 0 and applied.code == 0, (preview.output, applied.output)
    assert short(preview.changes()) == short(applied.changes()) == expected("v1beta2", False)
    assert (connect["metadata"]["uid"], connect["spec"]["version"]) == (uid, "3.9.0.1.4")


def test_objects_kept_with_their_v1beta2_field_ownership_refuse_every_apply_once_1_x_serves_v1_alone(
        engine: Engine, tmp_path):
    """Why step 3 resets each object's field ownership: written back as they are read (what
    Strimzi's crd-upgrade does), the objects keep managedFields entries in v1beta2, which the API
    server can no longer convert once the 1.2.0 CRDs are in; the 1.2.0 preview then fails."""
    dev = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    archives = release_archives(tmp_path / "archives")
    kept = [line.replace(line[line.index("| ") + 2:], "kubectl replace -f -") if "managedFields" in line else line
            for line in steps(SECTION)]
    assert sum("kubectl replace -f -" in line for line in kept) == 3
    with one_cluster(engine, tmp_path, on_release(dev, "strimzi", "0.48.0"), "upgrade-kept") as one:
        assert engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig).code == 0
        for version, line, done in walk(kept, engine, one, dev, archives):
            if line.startswith("pulumi") and version == "1.2.0":
                break
            assert not line.startswith("pulumi") or done.code == 0, done.output
    assert (line, done.code) == ("pulumi preview --stack dev", 1), done.output
    assert "request to convert CR to an invalid group/version: kafka.strimzi.io/v1beta2" in done.output
