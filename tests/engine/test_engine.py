"""The engine tier: the program under the real Pulumi engine, against real Kubernetes API servers.

What runs (docs/engine.md): the Pulumi CLI and its Kubernetes provider, built by
tools/engine/build.sh at the versions its go.mod files pin (the provider installed as a plugin
from the file); a local file backend with a passphrase; secrets set with
`pulumi config set --secret`, as README tells users; and for each of the dev, prod and regions
stacks, one kube-apiserver per Kubernetes cluster of the stack (1.37, with etcd and the
kube-controller-manager's namespace, garbage-collector and claim-protection controllers), with
the Strimzi CRDs of the stack's operator release and the Prometheus Operator's and
grafana-operator's CRDs installed.

The Python language host is not on the module proxy: the program is served to the CLI by the
Automation API (tests/engine/driver.py), as `pulumi up` inside an automation program does, and
the policy pack (policy/) runs as an executable analyzer (tests/engine/harness.py policy_pack).

No operator runs on these servers, so nothing would ever report Ready: the stacks' lifecycles
run their topology with `operator.readiness.wait: false` (the one change, in a copy); waiting
for readiness, and failing when it never comes, are test_readiness_*.

Without the binaries this tier skips; under CI (APISERVER_REQUIRED=1) it fails instead.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from contract import outputs
from infra.checks import policies
from infra.checks.rules import referenced
from infra.core import names
from infra.core.errors import TopologyError
from infra.core.releases import Release
from infra.deploy import deployment
from infra.plan import monitoring
from infra.tools import render
from infra.tools.rehearsal.apiserver import kubeconfig, stop
from infra.tools.rehearsal.kube import install_crds
from infra.tools.rehearsal.kubeapi import Client
from tests.engine import driver, harness
from tests.engine.harness import CREATE, DEFAULT_PROVIDER, DELETE, REPLACE, SAME, UPDATE, Engine, Run
from tests.support.engine import CONTROLLERS, NOWHERE, object_type_and_name, ours_left, servers
from tests.support.material import secrets_for
from tests.support.prometheus import grafana_crds, prometheus_crds
from tests.support.schemas import strimzi_crds
from tests.support.stacks import ROOT
from tests.support.urns import Recorder

pytestmark = [pytest.mark.engine]

STACKS = ("dev", "prod", "regions")
STACK_TYPE = "pulumi:pulumi:Stack"


def secret_values(keys: list[str], kubeconfigs: dict[str, str]) -> dict[str, str]:
    """A value for each secret config key: the kubeconfigs of the servers, real stores and PEM
    blocks (tests/support/material.py), and for plain secrets a value no other text contains."""
    def plain(key: str) -> str:
        return f"s3cret-{key}-{base64.b32encode(key.encode()).decode().strip('=').lower()[:12]}"
    values = {}
    for key in keys:
        alias, _, item = key.rpartition(".")
        if key in kubeconfigs:
            values[key] = kubeconfigs[key]
        elif item in ("caCert", "clientCert", "clientKey", "truststore", "truststorePassword"):
            trust = "jks"  # both stacks' truststores are JKS; the program reads the store to check it
            values[key] = secrets_for(alias, plain(f"{alias}.truststorePassword"), trust)[key]
        else:
            values[key] = plain(key)
    return values


def secret_forms(values: dict[str, str]) -> dict[str, str]:
    """Every form a secret could leak in: the value, its base64 (Secret `data`), and for a
    kubeconfig its token."""
    forms = {}
    for key, value in values.items():
        forms[key] = value
        forms[f"{key} (base64)"] = base64.b64encode(value.encode()).decode()
        if key.endswith(".kubeconfig"):
            for user in yaml.safe_load(value)["users"]:
                forms[f"{key} token"] = user["user"]["token"]
    return forms


@dataclass
class Deployment:
    """A stack deployed by the engine, and what each step printed and did."""
    stack: str
    engine: Engine
    project: Path
    kubeconfig: Path
    topology: Path
    clients: dict[str, Client]          # by Kubernetes cluster ("" for the stack's only one)
    secrets: dict[str, str]
    rendered: render.Render
    render_urns: set[str]
    aliases: dict[str, set[str]] = field(default_factory=dict)  # URN -> the URNs it answers to
    before_missing: set[str] = field(default_factory=set)  # recorded URNs no resource answers to
    runs: dict[str, Run] = field(default_factory=dict)
    cli: dict[str, str] = field(default_factory=dict)  # what other CLI commands printed
    outputs: dict[str, Any] = field(default_factory=dict)
    consumer_outputs: dict[str, Any] = field(default_factory=dict)
    state_before_destroy: str = ""
    left: dict[str, list[str]] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)  # the team's Secrets' values (keep_team_secrets)

    def run(self, operation: str, name: str | None = None, **kwargs: Any) -> Run:
        result = self.engine.run(operation, self.project, self.stack, kubeconfig=self.kubeconfig, **kwargs)
        self.runs[name or operation] = result
        return result

    def command(self, name: str, *args: str, check: bool = True) -> str:
        done = self.engine.cli(*args, "--stack", self.stack, cwd=self.project, kubeconfig=self.kubeconfig,
                               check=check)
        self.cli[name] = done.stdout + done.stderr
        return done.stdout


def without_waiting(stack: str, directory: Path) -> Path:
    topology = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text())
    topology.setdefault("operator", {})["readiness"] = {"wait": False}
    path = directory / f"{stack}.yaml"
    path.write_text(yaml.safe_dump(topology, sort_keys=False))
    return path


# A default StorageClass whose claims bind when their first pod runs, as most clusters' default
# is: the provider's await then takes a Pending claim as ready. (With no class at all, nothing
# ever binds here, and `pulumi up` would wait five minutes for the audit's report claim.)
STORAGE_CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                 "metadata": {"name": "standard",
                              "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                 "provisioner": "kafka-replication.test/none", "volumeBindingMode": "WaitForFirstConsumer"}


def prepared(client: Client, release: Release) -> None:
    """What the stack needs of a cluster before it deploys: the Strimzi CRDs of its release, the
    Prometheus Operator's and grafana-operator's CRDs, a default StorageClass."""
    install_crds(client, strimzi_crds(release))
    prometheus_crds(client, True)
    grafana_crds(client, True)
    client.create(STORAGE_CLASS)


def keep_team_secrets(model: Any, clients: dict[str, Client]) -> dict[str, str]:
    """Each Secret of the team's the topology references, made with a distinctive value for each
    key in each (Kubernetes cluster, namespace) that reads it (infra/checks/rules/referenced.py
    `kept_keys`, `readers`); the values, by where they are."""
    kept = {}
    for (kubernetes, namespace, name), keys in referenced.kept_keys(model).items():
        values = {key: f"team-kept-{alias}-{item}-{base64.b32encode(namespace.encode()).decode().strip('=').lower()[:10]}"
                  for key, (alias, item) in keys.items()}
        clients[kubernetes or ""].create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                          "metadata": {"name": name, "namespace": namespace}, "stringData": values})
        kept.update({f"{kubernetes or ''}/{namespace}/{name}:{key}": value for key, value in values.items()})
    return kept


def deploy(engine: Engine, stack: str, directory: Path) -> Deployment:
    """preview, up, up again, refresh, the outputs read by another project, then destroy."""
    topology_path = without_waiting(stack, directory)
    topology = yaml.safe_load(topology_path.read_text())
    states, ambient, secret_kubeconfigs = servers(stack, topology, directory)
    clients = {name: Client(state) for name, state in states.items()}
    try:
        document, model, stack_plan, audits = deployment.prepare_file(topology_path)
        for client in clients.values():
            prepared(client, model.operator.release)
        kubeconfig_path = directory / "kubeconfig"
        kubeconfig_path.write_text(yaml.safe_dump(ambient))
        keys = deployment.secret_keys(model, stack_plan, audits)
        secrets = secret_values(keys, secret_kubeconfigs)
        with Recorder() as recorder:
            rendered = render.run(stack, {"topology": str(topology_path)}, secrets)
        project = engine.project(stack)
        d = Deployment(stack, engine, project, kubeconfig_path, topology_path, clients, secrets, rendered,
                       set(recorder.urns()), recorder.alias_urns())
        d.command("config topology", "config", "set", "kafka-replication:topology", str(topology_path))
        for key, value in secrets.items():
            done = engine.set_secret(project, stack, key, value)
            d.cli[f"config {key}"] = done.stdout + done.stderr
        d.run("preview")
        d.run("up")
        # The Secrets the team keeps (sasl.passwordSecret), synced into the namespaces that read
        # them as its tooling would once they exist: a second `up` and a refresh read nothing of them.
        d.kept = keep_team_secrets(model, clients)
        d.run("up", "second up", expect_no_changes=True)
        d.run("refresh", expect_no_changes=True)
        d.outputs = json.loads(d.command("stack output", "stack", "output", "--json"))
        consumer = engine.consumer(f"consumer-{stack}", project)
        reference = f"organization/{harness.PROJECT}/{stack}"
        d.runs["consumer up"] = engine.run("up", consumer, "consumer", program="consumer", reference=reference)
        d.consumer_outputs = json.loads(engine.cli("stack", "output", "--json", "--stack", "consumer",
                                                   cwd=consumer).stdout)
        d.state_before_destroy = engine.state_text(project)
        recorded = ROOT / "tests" / "data" / f"urns-{stack}.txt"
        if recorded.exists() and d.runs["up"].code == 0:
            as_before(d, set(recorded.read_text().split()), directory)
        d.run("destroy")
        by_server: dict[str, list[dict[str, Any]]] = {}
        for r in rendered.resources:
            if r.is_kubernetes:
                by_server.setdefault(r.kubernetes or "", []).append(r.object())
        assert set(by_server) <= set(clients), (set(by_server), set(clients))
        d.left = {name: ours_left(clients[name], objs) for name, objs in by_server.items()}
        print(f"engine tier, {stack}: " + ", ".join(f"{name} {run.seconds:.1f} s" for name, run in d.runs.items()))
        return d
    finally:
        for name in states:
            stop(directory / f"apiserver-{name or stack}")


def as_before(d: Deployment, before: set[str], directory: Path) -> None:
    """The stack's state as it was before the public components existed: each resource under
    the URN tests/data recorded for it (the one of its aliases found there), the resources that
    came later left out; imported, previewed, and the real state imported back."""
    exported = directory / "state.json"
    d.command("stack export", "stack", "export", "--file", str(exported))
    state = json.loads(exported.read_text())
    old = {urn: (aliases & before).pop() for urn, aliases in d.aliases.items() if aliases & before}
    stack_urn = next(r["urn"] for r in state["deployment"]["resources"] if r["type"] == STACK_TYPE)

    def moved(urn: str) -> str | None:
        if urn in old:
            return old[urn]
        return urn if urn == stack_urn or DEFAULT_PROVIDER in urn else None

    resources = []
    for r in state["deployment"]["resources"]:
        urn = moved(r["urn"])
        if urn is None:
            continue  # came with the components: the ReplicationTopology, the metrics rules
        r = {**r, "urn": urn}
        if r.get("parent"):
            r["parent"] = moved(r["parent"]) or stack_urn  # children of the ReplicationTopology sat under the stack
        r["dependencies"] = [u for u in map(moved, r.get("dependencies", [])) if u]
        r["propertyDependencies"] = {k: [u for u in map(moved, v) if u]
                                     for k, v in r.get("propertyDependencies", {}).items()}
        r.pop("aliases", None)
        resources.append(r)
    d.before_missing = before - {r["urn"] for r in resources}
    rewritten = directory / "state-before.json"
    rewritten.write_text(json.dumps({**state, "deployment": {**state["deployment"], "resources": resources}}))
    d.command("stack import (before)", "stack", "import", "--file", str(rewritten))
    d.run("preview", "preview from before")
    d.command("stack import (back)", "stack", "import", "--file", str(exported))


@pytest.fixture(scope="module", params=STACKS)
def deployed(request, engine, tmp_path_factory) -> Deployment:
    return deploy(engine, request.param, tmp_path_factory.mktemp(f"deploy-{request.param}"))


def test_preview_shows_exactly_the_render(deployed):
    preview = deployed.runs["preview"]
    assert preview.code == 0, preview.output
    steps = preview.steps()
    # Every resource the offline render registers, under the URN the real engine gives it.
    assert set(steps) == deployed.render_urns
    # The Kubernetes objects among them are exactly the objects the render lists.
    kubernetes = {(u.split("::")[2].rpartition("$")[2], u.split("::")[3]) for u in steps
                  if u.split("::")[2].rpartition("$")[2].startswith("kubernetes:")}
    # (An object the audit repeats in each Kubernetes cluster is named under its cluster.)
    expected = set()
    for r in deployed.rendered.resources:
        if r.is_kubernetes:
            kind, local = object_type_and_name(r.object())
            assert r.name in (local, f"{r.kubernetes}/{local}"), (r.name, local)
            expected.add((kind, r.name))
    assert kubernetes == expected
    assert set(steps.values()) == {CREATE}


def test_up_creates_everything_and_a_second_up_changes_nothing(deployed):
    up, again = deployed.runs["up"], deployed.runs["second up"]
    assert up.code == 0, up.output
    assert up.steps() == {urn: CREATE for urn in deployed.render_urns}
    assert again.code == 0, again.output
    assert set(again.steps().values()) == {SAME}


def test_refresh_finds_no_drift(deployed):
    refresh = deployed.runs["refresh"]
    assert refresh.code == 0, refresh.output
    # Every resource refreshed; no drift, or --expect-no-changes would have failed it.
    assert refresh.steps() == {urn: "refresh" for urn in deployed.render_urns}


def test_outputs_follow_the_contract_and_reach_another_project(deployed):
    schema = outputs.SCHEMA
    jsonschema.validate(deployed.outputs, schema)
    assert deployed.outputs == json.loads(json.dumps(deployed.rendered.outputs))
    consumer = deployed.runs["consumer up"]
    assert consumer.code == 0, consumer.output
    typed = outputs.read(deployed.outputs)
    assert deployed.consumer_outputs == {
        "flows": {name: {"namespace": f.namespace, "source": f.source_alias, "target": f.target_alias,
                         "restUrl": f.connect_rest_url, "connectClusters": [c.name for c in f.connect_clusters],
                         "replicatedTopic": f.replicated_topic("orders")}
                  for name, f in sorted(typed.flows.items())},
        "operator": [typed.operator_flavour, typed.operator_version, typed.kafka_version]}


def test_the_engine_moves_every_recorded_urn_through_its_alias(deployed):
    """A stack deployed before the public components (its URNs in tests/data/urns-<stack>.txt)
    previews with today's program as no change: every resource found through its alias, only
    what came with the components created (the engine's own alias resolution, not ours)."""
    if not (ROOT / "tests" / "data" / f"urns-{deployed.stack}.txt").exists():
        # The regions stack came after the components: it has no URNs of before to keep.
        assert deployed.stack == "regions" and "preview from before" not in deployed.runs
        return
    # A source Secret left with nothing but store files is retired on purpose: its files moved to
    # the source's files Secret (FlowNames.source_files_secret), a URN of its own, created.
    assert {u.rsplit("::", 1)[1] for u in deployed.before_missing} == RETIRED[deployed.stack]
    preview = deployed.runs["preview from before"]
    assert preview.code == 0, preview.output
    steps = preview.steps()
    created = {urn for urn, op in steps.items() if op == CREATE}
    files = {f"kubernetes:core/v1:Secret::{o['metadata']['namespace']}/{v['secret']['secretName']}"
             for o in deployed.rendered.objects() if o["kind"] == "KafkaConnect"
             for v in o["spec"].get("template", {}).get("pod", {}).get("volumes", [])}
    assert files
    assert {urn.split("::")[2].rpartition("$")[2] + "::" + urn.split("::")[3] for urn in created} == (
        {"kafka-replication:index:ReplicationTopology::replication",
         # kube-state-metrics' configuration of the operator's view (monitoring/operator.py)
         f"kubernetes:core/v1:ConfigMap::replication-monitoring/{names.KSM_CONFIGMAP}"}
        # prod's GrafanaDashboard (monitoring.grafanaOperator), which came after the components
        | ({f"kubernetes:grafana.integreatly.org/v1beta1:GrafanaDashboard::replication-monitoring/"
            f"{names.GRAFANA_DASHBOARD}"} if deployed.stack == "prod" else set())
        | {f"kubernetes:core/v1:ConfigMap::{o['metadata']['namespace']}/connect-metrics"
           for o in deployed.rendered.objects() if o["kind"] == "KafkaConnect"}
        | files)
    assert {op for urn, op in steps.items() if urn not in created} == {SAME}
    assert len(steps) - len(created) == len(
        (ROOT / "tests" / "data" / f"urns-{deployed.stack}.txt").read_text().split()) - len(deployed.before_missing)


# URNs of before that today's program retires on purpose, by stack (the same as
# tests/unit/test_components.py's).
RETIRED = {"dev": set(), "prod": {"repl-eu-central-archive/source-eu-central"}}


# The Secrets the team keeps that each stack references, where the engine test made them.
KEPT = {"dev": set(), "prod": set(), "regions": {
    f"{kubernetes}/{namespace}/{key}" for kubernetes, namespace in (
        ("k8s-eu-central", "orders-us-east-to-eu"), ("k8s-eu-central", "orders-us-west-to-eu"),
        ("k8s-eu-central", "replication-audit"), ("k8s-us-east", "reference-eu-to-us-east"),
        ("k8s-us-east", "replication-audit"), ("k8s-us-west", "reference-eu-to-us-west"),
        ("k8s-us-west", "replication-audit")) for key in ("eu-central-replicator:password", "eu-central-tls:ca.crt")}}


def test_a_referenced_password_stays_in_the_team_s_secret(deployed):
    """regions reads eu-central's password and CA from Secrets the team keeps (docs/topology.md
    #secrets-by-reference): the engine deploys it, the KafkaConnects on eu-central authenticate
    with and trust the team's Secrets and no password or CA Secret of ours exists for it; their
    values (made in every namespace that reads them, test_no_secret_in_clear) enter neither state
    nor outputs."""
    assert set(deployed.kept) == KEPT[deployed.stack]
    if not deployed.kept:
        return
    auth = {o["metadata"]["name"]: o["spec"]["authentication"]["passwordSecret"]
            for o in deployed.rendered.objects() if o["kind"] == "KafkaConnect"}
    assert auth == {"orders-us-east-to-eu": {"secretName": "eu-central-replicator", "password": "password"},
                    "orders-us-west-to-eu": {"secretName": "eu-central-replicator", "password": "password"},
                    "reference-eu-to-us-east": {"secretName": "target-us-east-password", "password": "pass"},
                    "reference-eu-to-us-west": {"secretName": "target-us-west-password", "password": "pass"}}
    # Its CA too (`tls.secret`): the KafkaConnects on eu-central trust the team's Secret's key.
    trust = {o["metadata"]["name"]: o["spec"]["tls"]["trustedCertificates"]
             for o in deployed.rendered.objects() if o["kind"] == "KafkaConnect"}
    assert {name: t for name, t in trust.items() if name.startswith("orders-")} == {
        name: [{"secretName": "eu-central-tls", "certificate": "ca.crt"}]
        for name in ("orders-us-east-to-eu", "orders-us-west-to-eu")}
    assert "target-eu-central-password" not in deployed.state_before_destroy
    assert "target-eu-central-ca" not in deployed.state_before_destroy
    assert "source-eu-central-tls" not in deployed.state_before_destroy
    assert deployed.runs["second up"].code == 0 and deployed.runs["refresh"].code == 0


def test_no_secret_in_clear(deployed):
    forms = secret_forms({**deployed.secrets, **deployed.kept})
    texts = {"state": deployed.state_before_destroy, "state after destroy": deployed.engine.state_text(deployed.project),
             "outputs": json.dumps(deployed.outputs), "stack config": (deployed.project / f"Pulumi.{deployed.stack}.yaml").read_text(),
             **{f"pulumi {name}": run.output for name, run in deployed.runs.items()},
             **{f"pulumi {name}": text for name, text in deployed.cli.items()}}
    leaks = sorted(f"{form} in {where}" for form, value in forms.items() for where, text in texts.items()
                   if value in text)
    assert leaks == []
    config = yaml.safe_load(texts["stack config"])["config"]
    assert {k.split(":", 1)[1] for k, v in config.items() if isinstance(v, dict) and "secure" in v} == set(deployed.secrets)


def test_destroy_leaves_nothing(deployed):
    destroy = deployed.runs["destroy"]
    assert destroy.code == 0, destroy.output
    assert set(destroy.steps()) == deployed.render_urns
    assert set(destroy.steps().values()) == {DELETE}
    assert deployed.left and all(left == [] for left in deployed.left.values()), deployed.left


# ----------------------------------------------------------------- errors, as the engine shows them


def reported(stack: str, topology: Path | None, secrets: dict[str, str]) -> list[str]:
    """The lines of the report the program gives for this input (the offline render's)."""
    config = {"topology": str(topology)} if topology else {}
    with pytest.raises(TopologyError) as caught:
        render.run(stack, config, secrets)
    return caught.value.report().splitlines()


def assert_refused(run: Run, lines: list[str]) -> None:
    assert run.code != 0, run.output
    missing = [line for line in lines if line not in run.output]
    assert missing == [], run.output
    assert "Traceback" not in run.output and 'File "' not in run.output, run.output
    assert run.steps() == {}  # nothing registered, so nothing could be created


def test_bad_input_stops_preview_with_our_message(engine, tmp_path):
    """A missing secret, an invalid topology and an unusable kubeconfig each stop `pulumi
    preview` with the program's own report, printed by the CLI, and a non-zero exit."""
    nowhere = tmp_path / "kubeconfig"
    nowhere.write_text(yaml.safe_dump(kubeconfig({}, NOWHERE)))
    dev = engine.project("dev", "errors-dev")
    # No secret set at all: every missing one, by key, with the command that sets it.
    assert_refused(engine.run("preview", dev, "dev", kubeconfig=nowhere), reported("dev", None, {}))

    # An invalid topology: every problem at once, by line and field.
    bad = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    bad["flows"][0]["topics"] = ["test.*", "(unclosed"]
    bad["flows"].append({"source": "us-west", "target": "nowhere"})
    path = tmp_path / "invalid.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False))
    engine.cli("config", "set", "kafka-replication:topology", str(path), "--stack", "dev", cwd=dev)
    lines = reported("dev", path, {})
    assert len([line for line in lines if line.startswith("  - ")]) >= 2
    assert_refused(engine.run("preview", dev, "dev", kubeconfig=nowhere), lines)

    # The regions stack with a kubeconfig in secret config that names no context to use.
    regions = engine.project("regions", "errors-regions")
    document, model, stack_plan, audits = deployment.prepare_file(ROOT / "stacks" / "regions.yaml")
    unusable = {names.kubeconfig_key("k8s-eu-central"): "apiVersion: v1\nkind: Config\nclusters: []\n"}
    values = secret_values(deployment.secret_keys(model, stack_plan, audits), unusable)
    for key, value in values.items():
        engine.set_secret(regions, "regions", key, value)
    run = engine.run("preview", regions, "regions", kubeconfig=nowhere)
    assert_refused(run, reported("regions", None, values))
    assert "kubernetes.k8s-eu-central: secret config kafka-replication:kubernetes.k8s-eu-central.kubeconfig: " \
           "got the secret value (not shown)" in run.output
    assert values[names.kubeconfig_key("k8s-eu-central")] not in run.output


@contextmanager
def one_cluster(engine: Engine, tmp_path: Path, topology: dict[str, Any], name: str,
                controllers: tuple[str, ...] = CONTROLLERS, secrets: dict[str, str] | None = None) -> Iterator[Single]:
    """A stack of the dev stack's shape on one API server, until the block ends: the topology
    written, the server prepared, a project with the topology and every secret it needs set
    (or `secrets`)."""
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(topology, sort_keys=False))
    states, ambient, _ = servers("dev", topology, tmp_path, controllers)
    try:
        kubeconfig, project = stack_project(engine, path, states, ambient, "dev", name, secrets)
        yield Single(Client(states[""]), kubeconfig, project, path)
    finally:
        stop(tmp_path / "apiserver-dev")


def stack_project(engine: Engine, path: Path, states: dict[str, Any], ambient: dict[str, Any], stack: str,
                  name: str, secrets: dict[str, str] | None = None) -> tuple[Path, Path]:
    """For the topology at `path` and its started API servers (`states`, support/engine.py
    `servers`): each server prepared for its release, the ambient kubeconfig written beside the
    topology, and a project `name` of `stack` with the topology and every secret it needs set (or
    `secrets`). The kubeconfig and the project."""
    _, model, stack_plan, audits = deployment.prepare_file(path)
    for state in states.values():
        prepared(Client(state), model.operator.release)
    kubeconfig = path.parent / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(ambient))
    project = engine.project(stack, name)
    engine.cli("config", "set", "kafka-replication:topology", str(path), "--stack", stack, cwd=project)
    values = secrets if secrets is not None else secret_values(deployment.secret_keys(model, stack_plan, audits), {})
    for key, value in values.items():
        engine.set_secret(project, stack, key, value)
    return kubeconfig, project


@dataclass
class Single:
    client: Client
    kubeconfig: Path
    project: Path
    topology: Path


# ----------------------------------------------------------------- readiness


def test_readiness_timeout_fails_the_update(engine, tmp_path):
    """With `pulumi.com/waitFor` in place and nothing to make the custom resources Ready (no
    operator on this server), `pulumi up` waits for the stack's timeout on the KafkaConnect, then
    fails naming it; its connectors, which depend on it, are never created."""
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    topology["operator"]["readiness"] = {"wait": True, "timeoutSeconds": 60}
    with one_cluster(engine, tmp_path, topology, "readiness-timeout", controllers=()) as one:  # nothing is deleted
        started = time.monotonic()
        run = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        elapsed = time.monotonic() - started
        on_server = {kind: sorted(o["metadata"]["name"] for o in one.client.request(
            "GET", f"/apis/kafka.strimzi.io/v1beta2/namespaces/repl-us-west-us-east/{kind}")[1]["items"])
            for kind in ("kafkaconnects", "kafkaconnectors")}
    rendered = render.run("dev", {"topology": str(one.topology)}, placeholder_secrets=True).objects()
    waited = sorted((o["kind"], o["metadata"]["name"]) for o in rendered
                    if "condition=Ready" in o["metadata"].get("annotations", {}).get(names.WAIT_FOR, ""))
    assert waited == [("KafkaConnect", "repl-us-west-us-east"), ("KafkaConnector", "repl-us-west-us-east-checkpoint"),
                      ("KafkaConnector", "repl-us-west-us-east-heartbeat"),
                      ("KafkaConnector", "repl-us-west-us-east-source")]
    assert run.code != 0
    assert 60 <= elapsed < 180, (elapsed, run.output)
    connect = ("urn:pulumi:dev::kafka-replication::kafka-replication:index:ReplicationTopology"
               "$kafka-replication:flow:ReplicationFlow$kafka-replication:flow:ConnectCluster"
               "$kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::repl-us-west-us-east/repl-us-west-us-east")
    assert (f'resource "{connect}" was successfully created, but the Kubernetes API server reported that it '
            "failed to fully initialize or become live: timed out waiting for the condition") in run.output
    assert [e for e in run.events if e["type"].endswith(":KafkaConnector")] == []
    assert on_server == {"kafkaconnects": ["repl-us-west-us-east"], "kafkaconnectors": []}


# ----------------------------------------------------------------- topology changes


@dataclass
class Rendered:
    """An offline render with the engine URN of each resource."""
    render: render.Render
    objects: dict[str, dict[str, Any]]            # URN -> the object
    components: set[str]                          # URNs of the component resources


def rendered(topology: dict[str, Any], path: Path, secrets: dict[str, str], before: Rendered | None) -> Rendered:
    path.write_text(yaml.safe_dump(topology, sort_keys=False))
    with Recorder() as recorder:
        result = render.run("dev", {"topology": str(path)}, secrets,
                            previous_outputs=before.render.outputs if before else None)
    by_name = {(r.type, r.name): r.urn for r in recorder.registered}
    objects = {by_name[(r.type, r.name)]: r.object() for r in result.resources if r.is_kubernetes}
    components = {r.urn for r in recorder.registered if r.type.startswith(f"{harness.PROJECT}:")}
    return Rendered(result, objects, components)


# pulumi-kubernetes replaces a ConfigMap or Secret whose data changes (it takes them as
# immutable unless the provider sets enableConfigMapMutable / enableSecretMutable): a named one is
# deleted, then created again. Every other kind is updated in place.
REPLACED_KINDS = ("ConfigMap", "Secret")


def _at(obj: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        obj = obj.get(key, {}) if isinstance(obj, dict) else {}
    return obj


def replaced(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A ConfigMap or Secret that changes; a GrafanaDashboard whose field its CRD holds immutable
    changes (the program asks for that: components/monitoring.py)."""
    if new["kind"] in REPLACED_KINDS:
        return True
    return new["kind"] == "GrafanaDashboard" and any(
        _at(old, path) != _at(new, path) for path in monitoring.GRAFANA_DASHBOARD_IMMUTABLE)


def expected_changes(before: Rendered, after: Rendered) -> dict[str, str]:
    """What the engine must do between two renders: create what is new, delete what is gone,
    update (or replace: `replaced`) an object whose inputs changed."""
    out = {urn: CREATE for urn in (set(after.objects) | after.components) - (set(before.objects) | before.components)}
    out |= {urn: DELETE for urn in (set(before.objects) | before.components) - (set(after.objects) | after.components)}
    out |= {urn: REPLACE if replaced(before.objects[urn], after.objects[urn]) else UPDATE
            for urn in set(before.objects) & set(after.objects) if before.objects[urn] != after.objects[urn]}
    return out


def short(changes: dict[str, str]) -> dict[str, str]:
    """URN -> operation, the URN cut to its last type and name (for readable expectations)."""
    return {f"{urn.split('::')[2].rpartition('$')[2]}::{urn.split('::')[3]}": op for urn, op in changes.items()}


ARCHIVE = {"bootstrapServers": "archive-kafka-bootstrap.kafka-archive:9093",
           "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "replicator"},
                        "tls": {"trust": "pem"}}}


def changed_topics(t: dict[str, Any]) -> None:
    t["flows"][0]["topics"] = ["test.*", "orders.*"]


def changed_state(t: dict[str, Any]) -> None:
    t["flows"][0]["state"] = {"checkpoint": "paused"}


def added_flow(t: dict[str, Any]) -> None:
    t["clusters"]["archive"] = ARCHIVE
    t["flows"].append({"source": "us-west", "target": "archive", "topics": ["orders.*"], "groups": ["orders.*"]})


def removed_flow(t: dict[str, Any]) -> None:
    t["flows"].pop()


def split(t: dict[str, Any]) -> None:
    flow = t["flows"][0]
    del flow["topics"]
    flow["connectClusters"] = [{"name": "tests", "topics": ["test.*"]}, {"name": "orders", "topics": ["orders.*"]}]


def grafana_dashboard(t: dict[str, Any]) -> None:
    t["monitoring"]["grafanaOperator"] = {"instanceSelector": {"dashboards": "grafana"}}


def grafana_instances(t: dict[str, Any]) -> None:
    t["monitoring"]["grafanaOperator"]["instanceSelector"] = {"dashboards": "replication"}


# What `pulumi preview` cannot show (docs/operations.md#dashboard): the provider (4.25.0) previews
# a replacement's create as a server-side dry run under the object's own name, which the API
# server takes as an update of the live object, and the CRD's immutability rule refuses it
# (pulumi/pulumi-kubernetes#3984, open). `pulumi up` deletes, then creates: it replaces.
PREVIEW_FAILS = {"its Grafana instances": 'GrafanaDashboard.grafana.integreatly.org "kafka-replication" is invalid: '
                                          "spec.instanceSelector: Invalid value: spec.instanceSelector is immutable"}


CHANGES = [("topic filter", changed_topics), ("connector state", changed_state), ("new flow", added_flow),
           ("flow removed", removed_flow), ("split into two Connect clusters", split),
           ("a GrafanaDashboard", grafana_dashboard), ("its Grafana instances", grafana_instances)]
ARCHIVE_SECRETS = ("archive.caCert", "archive.password")


def test_topology_changes_preview_and_apply_exactly(engine, tmp_path):
    """Each change of the dev stack's topology, previewed then applied by the engine: exactly
    the creates, updates, replacements and deletes the offline renders of before and after
    imply, by URN, in the preview and in the update alike."""
    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    _, model, stack_plan, audits = deployment.prepare_file(tmp_path / "dev.yaml")
    secrets = secret_values([*deployment.secret_keys(model, stack_plan, audits), *ARCHIVE_SECRETS], {})
    base = {k: v for k, v in secrets.items() if k not in ARCHIVE_SECRETS}
    seen: dict[str, dict[str, str]] = {}
    with one_cluster(engine, tmp_path, topology, "changes", secrets=base) as one:
        project, config, path = one.project, one.kubeconfig, one.topology
        before = rendered(topology, path, base, None)
        up = engine.run("up", project, "dev", kubeconfig=config)
        assert up.code == 0, up.output
        for name, change in CHANGES:
            change(topology)
            given = secrets if "archive" in topology["clusters"] else base
            if name == "new flow":
                for key in ARCHIVE_SECRETS:
                    engine.set_secret(project, "dev", key, secrets[key])
            after = rendered(topology, path, given, before)
            expected = expected_changes(before, after)
            preview = engine.run("preview", project, "dev", kubeconfig=config)
            applied = engine.run("up", project, "dev", kubeconfig=config)
            assert applied.code == 0, (name, applied.output)
            if name in PREVIEW_FAILS:
                assert preview.code == 1 and PREVIEW_FAILS[name] in preview.output, (name, preview.output)
            else:
                assert preview.code == 0, (name, preview.output)
                assert preview.changes() == expected, name
            assert applied.changes() == expected, name
            seen[name] = short(expected)
            before = after
    # The small steps, spelled out.
    # The connectors that read the filter are updated too: their digest of the ConfigMap values
    # they read changes, so Strimzi sends them and Connect restarts them (infra/plan/connectors.py).
    assert seen["topic filter"] == {
        "kubernetes:core/v1:ConfigMap::repl-us-west-us-east/replication": REPLACE,
        "kubernetes:core/v1:ConfigMap::replication-audit/kafka-replication-audit": REPLACE,
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector::repl-us-west-us-east/repl-us-west-us-east-source": UPDATE,
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector::repl-us-west-us-east/repl-us-west-us-east-checkpoint":
            UPDATE}
    assert seen["connector state"] == {
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector::repl-us-west-us-east/repl-us-west-us-east-checkpoint": UPDATE,
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule::replication-monitoring/kafka-replication": UPDATE}
    added = seen["new flow"]
    assert {k: op for k, op in added.items() if op != CREATE} == {
        "kubernetes:core/v1:ConfigMap::replication-audit/kafka-replication-audit": REPLACE,
        "kubernetes:batch/v1:CronJob::replication-audit/kafka-replication-audit": UPDATE,  # the new cluster's Secret
        "kubernetes:monitoring.coreos.com/v1:PodMonitor::replication-monitoring/kafka-replication": UPDATE,
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule::replication-monitoring/kafka-replication": UPDATE}
    assert "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::repl-us-west-archive/repl-us-west-archive" in added
    assert {k: (DELETE if op == CREATE else op) for k, op in added.items()} == seen["flow removed"]
    # The GrafanaDashboard: created, then replaced by `pulumi up` when its selector changes (an
    # update would be refused: the CRD holds spec.instanceSelector immutable,
    # tests/apiserver/test_apiserver.py), which `pulumi preview` cannot show (PREVIEW_FAILS).
    dashboard = "kubernetes:grafana.integreatly.org/v1beta1:GrafanaDashboard::replication-monitoring/kafka-replication"
    assert seen["a GrafanaDashboard"] == {dashboard: CREATE}
    assert seen["its Grafana instances"] == {dashboard: REPLACE}
    assert seen["split into two Connect clusters"][
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::repl-us-west-us-east/repl-us-west-us-east"] == DELETE
    assert {k for k, op in seen["split into two Connect clusters"].items()
            if op == CREATE and ":KafkaConnect::" in k} == {
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::repl-us-west-us-east-tests/repl-us-west-us-east-tests",
        "kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::repl-us-west-us-east-orders/repl-us-west-us-east-orders"}


# ----------------------------------------------------------------- offsets requests


def test_an_offsets_request_is_asked_once(engine, tmp_path):
    """An offsets request (docs/operations.md#offsets-as-code) is a KafkaConnectorPatch that sets
    Strimzi's `strimzi.io/connector-offsets` annotation. The operator removes the annotation once
    it has carried the request out; after that, `pulumi refresh` and `pulumi up` must not put it
    back (which would ask again). A new request id asks again."""
    from tests.support.stacks import on_release
    topology = on_release(yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text()), "strimzi", "1.2.0")
    topology["operator"]["readiness"] = {"wait": False}
    topology["flows"][0]["offsets"] = [{"connector": "repl-us-west-us-east-source", "action": "list", "request": "l1"}]
    connector = "/apis/kafka.strimzi.io/v1/namespaces/repl-us-west-us-east/kafkaconnectors/repl-us-west-us-east-source"
    annotation = "strimzi.io/connector-offsets"
    with one_cluster(engine, tmp_path, topology, "offsets") as one:
        client, project, config, path = one.client, one.project, one.kubeconfig, one.topology

        def annotations() -> dict[str, str]:
            return client.request("GET", connector)[1]["metadata"].get("annotations", {})

        up = engine.run("up", project, "dev", kubeconfig=config)
        assert up.code == 0, up.output
        asked = annotations()
        # What the operator does when it has written the list (AbstractConnectOperator): the
        # annotation removed, by its own field manager (Client sends JSON, so a PUT of the object).
        live = client.request("GET", connector)[1]
        del live["metadata"]["annotations"][annotation]
        status, body = client.request("PUT", connector, live, {"fieldManager": "strimzi-cluster-operator"})
        assert status == 200, body
        refresh = engine.run("refresh", project, "dev", kubeconfig=config)
        again = engine.run("up", project, "dev", kubeconfig=config)
        after_again = annotations()
        topology["flows"][0]["offsets"][0]["request"] = "l2"
        path.write_text(yaml.safe_dump(topology, sort_keys=False))
        second = engine.run("up", project, "dev", kubeconfig=config)
        asked_again = annotations()
    patch = [u for u in up.steps() if ":KafkaConnectorPatch::" in u]
    assert len(patch) == 1 and up.steps()[patch[0]] == CREATE
    assert asked[annotation] == "list" and asked["kafka-replication.io/offsets-request"] == "list/l1"
    assert refresh.code == 0 and again.code == 0, (refresh.output, again.output)
    assert again.changes() == {}  # the patch's inputs did not change: nothing to apply again
    assert annotation not in after_again, after_again
    assert second.code == 0, second.output
    assert asked_again[annotation] == "list" and asked_again["kafka-replication.io/offsets-request"] == "list/l2"


# ----------------------------------------------------------------- the policy pack


def test_the_policy_pack_passes_our_preview_and_stops_a_program_written_by_hand(engine, tmp_path):
    """`pulumi preview --policy-pack` (docs/policy.md) with the pack of policy/: its policies, and
    the rules of infra/checks/policies.py they call, as the CLI runs them. The pack runs as an executable
    analyzer (harness.Engine.policy_pack) because the Python language host, through which the CLI
    starts a directory pack, cannot be built here (it is not on the Go module proxy); the CLI
    launches the executable as the analyzer plugin itself and reads the PulumiPolicy.yaml beside it.

    The dev stack previews with every policy passing on every Kubernetes resource. A program
    written by hand (driver.by_hand: pulumi-kubernetes' resources, no component of ours) that
    breaks each policy once is stopped by the preview, each violation with the policy's exact
    message, the one the program would give for its own objects."""
    pack = engine.policy_pack()
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    with one_cluster(engine, tmp_path, topology, "policy-dev") as one:
        ours = engine.run("preview", one.project, "dev", kubeconfig=one.kubeconfig, policy_packs=(pack,))
        by_hand = engine.run("preview", engine.plain_project("by-hand", "dev"), "dev", kubeconfig=one.kubeconfig,
                             program="by-hand", policy_packs=(pack,))
    every = sorted(rule.name for rule in policies.RULES)
    listed = re.compile(rf"kafka-replication\|local\|{re.escape(str(pack))} +0\.1\.0")

    assert ours.code == 0, ours.output
    assert listed.search(ours.output), ours.output  # "Policy Packs run:", with the pack's version
    assert [e for e in ours.policy if "violation" in e] == []
    analyzed = {e["analyzed"]: e for e in ours.policy if "analyzed" in e}
    kubernetes = {urn for urn in ours.steps() if urn.split("::")[2].rpartition("$")[2].startswith("kubernetes:")}
    assert len(kubernetes) == len(render.run("dev", placeholder_secrets=True).objects())
    for urn in kubernetes:
        assert (analyzed[urn]["pack"], analyzed[urn]["passed"], analyzed[urn]["failed"]) == (
            "kafka-replication", every, []), urn

    assert by_hand.code != 0, by_hand.output
    assert listed.search(by_hand.output), by_hand.output
    stopped_by_hand(by_hand)


def stopped_by_hand(by_hand: Run, project: str = "by-hand") -> None:
    """The preview of the program written by hand (in `project`), stopped with each policy's
    exact violation, once each, and no secret value in any message."""
    expected = []
    for obj in driver.by_hand_objects():
        kind, _ = object_type_and_name(obj)
        for rule in policies.RULES:
            for problem in rule.check(obj):
                expected.append({"violation": rule.name, "urn": f"urn:pulumi:dev::{project}::{kind}::{obj['metadata']['name']}",
                                 "message": f"{rule.description}\n{problem}\n", "level": "mandatory"})
                assert str(problem) in by_hand.output
    assert sorted(expected, key=json.dumps) == sorted((e for e in by_hand.policy if "violation" in e), key=json.dumps)
    assert sorted(e["violation"] for e in expected) == sorted(rule.name for rule in policies.RULES)  # each, once
    assert all(driver.BY_HAND_PASSWORD not in e["message"] for e in by_hand.policy if "violation" in e)


def test_the_published_pack_runs_from_its_own_folder_and_virtualenv(engine, tmp_path):
    """docs/policy.md#publishing-it: the folder `make policy-pack` writes, copied outside the
    checkout, its requirements installed by pip into a virtualenv of its own, stops the program
    written by hand with the same violations as policy/ does. Its Python runs isolated (`-I`: no
    PYTHONPATH, no working directory on the path), so every rule it runs comes from the folder.
    It runs as an executable analyzer, as the in-checkout pack's test explains; `pulumi policy
    publish` (which needs a Pulumi Cloud backend) is not run here."""
    built = tmp_path / "built"
    done = subprocess.run([sys.executable, "-m", "infra.tools.policy_pack", str(built)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    pack = tmp_path / "elsewhere" / "kafka-replication-policy"
    shutil.copytree(built, pack)
    # The marker says the folder is the writer's to replace (infra/tools/folders.py).
    assert sorted(p.name for p in pack.iterdir()) == [".kafka-replication-policy-pack", "PulumiPolicy.yaml",
                                                     "__main__.py", "contract", "infra", "requirements.txt", "rules.py"]
    assert yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"] == "venv"
    python = pack / "venv" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", str(pack / "venv")], check=True, timeout=120)
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(pack / "requirements.txt")],
                               capture_output=True, text=True, timeout=900, cwd=pack)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    # Nothing of this checkout in the pack's environment: not the project, not its path.
    assert subprocess.run([str(python), "-I", "-c", "import infra"], capture_output=True, cwd=tmp_path).returncode == 1
    launcher = pack.parent / "kafka-replication-policy-launcher"
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(str(python))} -I -u -m pulumi.policy "$@" {shlex.quote(str(pack))}\n')
    launcher.chmod(0o755)
    shutil.copy(pack / "PulumiPolicy.yaml", pack.parent / "PulumiPolicy.yaml")  # beside the executable, as the CLI reads it
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    with one_cluster(engine, tmp_path, topology, "policy-published") as one:
        by_hand = engine.run("preview", engine.plain_project("by-hand-published", "dev"), "dev",
                             kubeconfig=one.kubeconfig, program="by-hand", policy_packs=(launcher,))
    assert by_hand.code != 0, by_hand.output
    # Listed under "Policy Packs run" (the CLI shortens a long path to /tmp/.../<folder>/<name>).
    assert re.search(r"kafka-replication\|local\|\S*/kafka-replication-policy-launcher +0\.1\.0", by_hand.output), \
        by_hand.output
    stopped_by_hand(by_hand, "by-hand-published")
