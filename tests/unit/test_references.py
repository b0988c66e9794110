"""Every ${cfmap:}/${secret:}/${file:} reference of every connector resolves, and the Role grants
exactly what the connectors read: nothing dangles, nothing extra is readable."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from infra.checks import validation
from infra.core import references
from infra.plan.objects import role
from infra.plan.stack import plan
from infra.tools import render
from tests.support.references import check_references, team_secrets
from tests.support.stacks import ROOT, doc_topology, render_topology
from tests.support.variants import STACKS, variant_topologies


@pytest.mark.parametrize("stack", STACKS)
def test_stack_references_resolve(stack):
    # regions references a Secret the team keeps (eu-central's password): there in every reader.
    model = validation.parse(yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text()))
    assert check_references(render.run(stack, placeholder_secrets=True).objects() + team_secrets(model)) > 0


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


def test_a_store_mounted_from_a_key_nobody_makes_is_caught(tmp_path):
    """A source truststore by reference: mounted from the team's Secret, which must hold the key."""
    topo = doc_topology()
    topo["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {"trust": "jks", "secret": {
        "secretName": "west-stores"}}}
    model = validation.parse(topo)
    objects = render_topology(tmp_path, topo, secrets={}).objects() + team_secrets(model)
    assert check_references(objects) > 0
    kept = next(o for o in objects if o["metadata"]["name"] == "west-stores")
    del kept["stringData"]["truststore.jks"]
    with pytest.raises(AssertionError, match="mounted from a key nobody makes"):
        check_references(objects)


def test_an_extra_grant_is_caught(doc_render):
    objects = doc_render.objects()
    role = next(o for o in objects if o["kind"] == "Role")
    role["rules"][0]["resourceNames"].append("target-us-east-password")
    with pytest.raises(AssertionError, match="Role grants"):
        check_references(objects)


# ----------------------------------------------------------------- the syntax's one home


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


def test_a_value_that_is_one_configmap_reference_names_its_key():
    from infra.core.references import configmap_key
    assert configmap_key("${cfmap:repl-a-b/replication:replication.policy.class}") == (
        "repl-a-b", "replication", "replication.policy.class")
    assert configmap_key(" ${cfmap:ns/cm:k} ") == ("ns", "cm", "k")
    assert configmap_key("x-${cfmap:ns/cm:k}") is None           # not the whole value
    assert configmap_key("${secret:ns/s:k}") is None             # a Secret, not a ConfigMap
    assert configmap_key("${cfmap:cm:k}") is None                # no namespace
    assert configmap_key("${cfmap:ns/a:k}${cfmap:ns/b:k}") is None
    assert configmap_key("org.apache.kafka.connect.mirror.IdentityReplicationPolicy") is None
