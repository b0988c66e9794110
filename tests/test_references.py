"""Every ${cfmap:}/${secret:}/${file:} reference of every connector resolves, and the Role grants
exactly what the connectors read: nothing dangles, nothing extra is readable."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from infra.core import names, references
from infra.tools import render
from infra.checks import validation
from infra.topology.resolution import Model
from infra.plan.stack import StackPlan, plan, role
from tests.conftest import doc_topology, parse_or_reject, render_topology
from tests.test_schemas import STACKS, variant_topologies

ROOT = Path(__file__).resolve().parent.parent
REF = re.compile(r"\$\{(cfmap|secret|file):([^}]*)\}")
# Unprefixed keys Strimzi 0.40-0.45 writes into the worker properties file (CSM 1.x;
# kafka_connect_config_generator.sh at 0.43.0 and 0.45.0); tests/runtime models every release.
WORKER_FILE_KEYS = {"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
                    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
                    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type"}


def plan_random(data: dict) -> tuple[Model, StackPlan] | None:
    """A generated topology planned, with what every plan must keep (no object twice, every
    reference resolved), or None when it was refused with complete messages."""
    topo = parse_or_reject(data)
    if topo is None:
        return None
    stack = plan(topo)
    objects = list(stack.objects)
    assert len({(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}) == len(objects)
    assert check_references(objects) > 0
    return topo, stack


def check_references(objects: list[dict]) -> int:
    """Assert every reference resolves; return how many were checked."""
    stored = {}
    for o in objects:
        if o["kind"] in ("ConfigMap", "Secret"):
            keys = set(o.get("data", {})) | set(o.get("stringData", {}))
            stored[(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])] = keys
    # The Connect Roles (the audit has its own, tested in test_audit_plan).
    roles = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "Role" and names.FLOW_LABEL in o["metadata"]["labels"]}
    connects = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "KafkaConnect"}
    read: dict[str, dict[str, set[str]]] = {}
    checked = 0
    for c in (o for o in objects if o["kind"] == "KafkaConnector"):
        ns = c["metadata"]["namespace"]
        assert c["metadata"]["labels"]["strimzi.io/cluster"] == connects[ns]["metadata"]["name"]
        for prop, value in c["spec"]["config"].items():
            for provider, body in REF.findall(str(value)):
                checked += 1
                if provider == "file":
                    path, key = body.rsplit(":", 1)
                    assert connects[ns]["apiVersion"].endswith("v1beta2"), f"{prop}: worker file on a v1 operator"
                    assert path == "/tmp/strimzi-connect.properties" and key in WORKER_FILE_KEYS, prop
                    continue
                where, key = body.rsplit(":", 1)
                ref_ns, name = where.split("/")
                kind = "ConfigMap" if provider == "cfmap" else "Secret"
                assert ref_ns == ns, f"{prop} reads another namespace: {value}"
                assert key in stored.get((kind, ns, name), set()), f"{prop}: {value} dangles"
                read.setdefault(ns, {}).setdefault(kind, set()).add(name)
        # Store locations point into a mounted file of the source Secret.
        for prop, value in c["spec"]["config"].items():
            if prop.endswith((".ssl.truststore.location", ".ssl.keystore.location")) and "cfmap" in str(value):
                cm_name, key = value.split("/", 1)[1].rstrip("}").split(":")
                cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cm_name
                          and o["metadata"]["namespace"] == ns)
                location = cm["data"][key]
                template = connects[ns]["spec"]["template"]
                (mount,) = [m for m in template["connectContainer"]["volumeMounts"] if location.startswith(m["mountPath"])]
                (volume,) = [v for v in template["pod"]["volumes"] if v["name"] == mount["name"]]
                assert location == f'{mount["mountPath"]}/{location.rsplit("/", 1)[1]}'
                assert {"key": location.rsplit("/", 1)[1], "path": location.rsplit("/", 1)[1]} in volume["secret"]["items"]
    for ns, connect_role in roles.items():
        granted = {{"configmaps": "ConfigMap", "secrets": "Secret"}[r["resources"][0]]: set(r["resourceNames"])
                   for r in connect_role["rules"]}
        assert all(r["verbs"] == ["get"] and len(r["resources"]) == 1 for r in connect_role["rules"])
        assert granted == read.get(ns, {}), f"{ns}: Role grants {granted}, connectors read {read.get(ns)}"
    return checked


@pytest.mark.parametrize("stack", STACKS)
def test_stack_references_resolve(stack):
    assert check_references(render.run(stack, placeholder_secrets=True).objects()) > 0


@pytest.mark.parametrize("name", sorted(variant_topologies()))
def test_variant_references_resolve(tmp_path, name):
    assert check_references(render_topology(tmp_path, variant_topologies()[name], secrets={}).objects()) > 0


def test_a_dangling_reference_is_caught(doc_render):
    objects = doc_render.objects()
    for o in objects:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "source-us-west":
            del o["data"]["sasl.mechanism"]
    with pytest.raises(AssertionError, match="dangles"):
        check_references(objects)


def test_an_extra_grant_is_caught(doc_render):
    objects = doc_render.objects()
    role = next(o for o in objects if o["kind"] == "Role")
    role["rules"][0]["resourceNames"].append("target-us-east-password")
    with pytest.raises(AssertionError, match="Role grants"):
        check_references(objects)


# ----------------------------------------------------------------- the syntax's one home


JAVA_REFERENCES = ROOT / "tests" / "runtime" / "ReferenceCheck.java"


def java_references(values: list[str]) -> list[list[tuple[str, str, str]]]:
    """Kafka's own pattern, run by the JDK (tests/runtime/ReferenceCheck.java)."""
    java = shutil.which("java")
    assert java, "the JDK is needed: Java is the oracle of Kafka's config variables"
    done = subprocess.run([java, str(JAVA_REFERENCES)], input="\n".join(values) + "\n", capture_output=True,
                          text=True, timeout=300, check=True)
    rows = done.stdout.split("\n")[:-1]
    return [[tuple(m.split("\x01")) for m in row.split("\x02")] if row else [] for row in rows]


def test_references_are_written_and_read_as_kafka_reads_them():
    """Every value of every connector of both stacks, and values that stress the pattern, are
    parsed by references.parse exactly as Kafka's ConfigTransformer pattern finds them."""
    values = sorted({str(v) for stack in STACKS for o in render.run(stack, placeholder_secrets=True).objects()
                     if o["kind"] == "KafkaConnector" for v in o["spec"]["config"].values()})
    values += ["${cfmap:ns/obj:key:with:colons}", "${file:/tmp/a.properties:k}", "${secret:k}", "${a:}",
               "plain", "${cfmap:ns/a:k},${cfmap:ns/b:k2}", "${unclosed:ns/a:k", "x${cfmap:ns/o:k}y${}"]
    java = java_references(values)
    assert len(java) == len(values)
    for value, found in zip(values, java):
        assert [(r.provider, r.path, r.key) for r in references.parse(value)] == found, value
    assert sum(map(len, java)) > 100


def test_reference_constructors():
    assert references.cfmap("ns", "obj", "topics") == "${cfmap:ns/obj:topics}"
    assert references.kubernetes(references.Provider.SECRET, "ns", "s", "sasl.jaas.config") == \
        "${secret:ns/s:sasl.jaas.config}"
    assert references.file("/tmp/strimzi-connect.properties", "bootstrap.servers") == \
        "${file:/tmp/strimzi-connect.properties:bootstrap.servers}"
    (ref,) = references.parse("${secret:ns/s:sasl.jaas.config}")
    assert ref.kubernetes_object == ("ns", "s")
    (ref,) = references.parse("${file:/tmp/strimzi-connect.properties:bootstrap.servers}")
    assert ref.kubernetes_object is None
    assert references.WORKER_CONFIG == {
        "config.providers": "cfmap,secret,file",
        "config.providers.cfmap.class": "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
        "config.providers.secret.class": "io.strimzi.kafka.KubernetesSecretConfigProvider",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    }
    with pytest.raises(ValueError, match="names a ConfigMap or a Secret"):
        references.kubernetes(references.Provider.FILE, "ns", "obj", "k")


def test_the_role_follows_the_references():
    """The RBAC rules are derived from the parsed references: a connector reading one more
    Secret makes the Role grant exactly that one more."""
    topo = validation.parse(doc_topology())
    part = plan(topo).flows[0].parts[0]
    n = part.names
    extra = dataclasses.replace(part.connectors[0], manifest={**part.connectors[0].manifest, "spec": {
        **part.connectors[0].manifest["spec"],
        "config": {**part.connectors[0].config, "x": references.kubernetes(
            references.Provider.SECRET, n.namespace, "extra-secret", "k")}}})
    before = role(topo.flows[0].flow, n, part.connectors)
    after = role(topo.flows[0].flow, n, (extra, *part.connectors[1:]))
    grants = {r["resources"][0]: r["resourceNames"] for r in after["rules"]}
    assert grants["secrets"] == sorted([*next(r["resourceNames"] for r in before["rules"]
                                               if r["resources"] == ["secrets"]), "extra-secret"])
    other = dataclasses.replace(extra, manifest={**extra.manifest, "spec": {**extra.manifest["spec"], "config": {
        "x": references.kubernetes(references.Provider.SECRET, "another-namespace", "s", "k")}}})
    with pytest.raises(AssertionError, match="only their own namespace"):
        role(topo.flows[0].flow, n, (other,))
