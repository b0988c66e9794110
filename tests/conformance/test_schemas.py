"""Every rendered object of every stack and variant validates against real schemas.

Core kinds: kubernetes-validate (strict: unknown fields fail) at KUBERNETES_VERSION.
Strimzi kinds: the openAPIV3Schema of the CRDs of the release's own Strimzi line (0.43.0 for CSM
1.2, 0.45.0 for CSM 1.4, 0.48.0, 1.2.0), generated from Strimzi's published artifacts
(infra/tools/rehearsal/crds.py); unknown fields fail, as the server would prune them.
Prometheus Operator kinds: its pinned CRDs (make prometheus-crds).
"""

from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest
import yaml

from infra.core.releases import DEFAULT_VERSION, SUPPORTED, Flavour, find
from infra.tools import render
from tests.support.monitoring import stack_objects
from tests.support.prometheus import crd_schema as operator_schema, crd_validate
from tests.support.schemas import release_of, unknown_fields, validate
from tests.support.stacks import RELEASES, ROOT, doc_topology, on_release, render_topology
from tests.support.variants import STACKS, variant_topologies


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_of_every_stack_validates(stack):
    release = release_of(yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text()))
    objects = render.run(stack, placeholder_secrets=True).objects()
    assert objects
    for obj in objects:
        validate(obj, release)


@pytest.mark.parametrize("name", sorted(variant_topologies()))
def test_every_object_of_every_variant_validates(tmp_path, name):
    topology = variant_topologies()[name]
    objects = render_topology(tmp_path, topology, secrets={}).objects()
    kinds = {o["kind"] for o in objects}
    assert {"Namespace", "ConfigMap", "KafkaConnect", "KafkaConnector", "Role", "RoleBinding"} <= kinds
    for obj in objects:
        validate(obj, release_of(topology))


@pytest.mark.parametrize("flavour,version", RELEASES, ids=[f"{f}-{v}" for f, v in RELEASES])
@pytest.mark.parametrize("flow", [
    {"state": {"source": "stopped", "checkpoint": "paused"}},
    {"exactlyOnce": "preparing"},
    {"exactlyOnce": "enabled"},
], ids=["states", "eos-preparing", "eos-enabled"])
def test_connector_states_and_exactly_once_validate(tmp_path, flavour, version, flow):
    """The objects tests/unit/test_operations.py asserts on, against the release's CRDs."""
    topology = on_release(doc_topology(), flavour, version)
    topology["flows"][0].update(flow)
    for obj in render_topology(tmp_path, topology, secrets={}).objects():
        validate(obj, release_of(topology))


def test_each_release_is_checked_against_its_own_strimzi_line():
    assert {r.name: r.strimzi for r in SUPPORTED} == {
        "csm 1.2": "0.43.0", "csm 1.4": "0.45.0", "strimzi 0.48.0": "0.48.0", "strimzi 0.51.0": "0.51.0",
        "strimzi 1.2.0": "1.2.0"}


def _connect(tmp_path, flavour):
    t = variant_topologies()[f"doc-{flavour}-{DEFAULT_VERSION[Flavour(flavour)]}"]
    return next(o for o in render_topology(tmp_path, t, secrets={}).objects() if o["kind"] == "KafkaConnect")


@pytest.mark.parametrize("break_it,flavour,message", [
    (lambda o: o["spec"].pop("bootstrapServers"), "csm", "'bootstrapServers' is a required property"),
    (lambda o: o["spec"].pop("groupId"), "strimzi", "'groupId' is a required property"),
    (lambda o: o["spec"]["authentication"].update(type="kerberos"), "csm", "'kerberos' is not one of"),
    (lambda o: o["spec"].update(replicas="three"), "strimzi", "'three' is not of type 'integer'"),
])
def test_broken_strimzi_objects_are_rejected(tmp_path, break_it, flavour, message):
    release = find(Flavour(flavour), None)
    obj = copy.deepcopy(_connect(tmp_path, flavour))
    validate(obj, release)
    break_it(obj)
    with pytest.raises(jsonschema.ValidationError, match=message):
        validate(obj, release)


def test_unknown_strimzi_fields_are_rejected(tmp_path):
    obj = copy.deepcopy(_connect(tmp_path, "csm"))
    obj["spec"]["template"]["pod"]["volume"] = obj["spec"]["template"]["pod"].pop("volumes")  # a typo
    with pytest.raises(jsonschema.ValidationError, match="spec.template.pod.volume"):
        validate(obj, find(Flavour.csm, None))


def test_broken_core_objects_are_rejected(doc_render):
    role = copy.deepcopy(next(o for o in doc_render.objects() if o["kind"] == "Role"))
    role["rules"][0]["verb"] = role["rules"][0].pop("verbs")  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(role)


def test_v1_crd_refuses_worker_keys_the_csm_flavour_sets(tmp_path):
    """Why the flavours differ: kafka.strimzi.io/v1 requires the spec fields."""
    obj = copy.deepcopy(_connect(tmp_path, "csm"))
    obj["apiVersion"] = "kafka.strimzi.io/v1"
    with pytest.raises(jsonschema.ValidationError, match="groupId|replicas|configStorageTopic"):
        validate(obj, find(Flavour.strimzi, "1.2.0"))


def test_the_grafana_dashboard_validates_against_grafana_operator_s_crd():
    (resource,) = [o for o in stack_objects("prod") if o["kind"] == "GrafanaDashboard"]
    schema = operator_schema("GrafanaDashboard")
    crd_validate(resource, schema)
    assert unknown_fields(resource, schema) == []
    # The CRD refuses one without its selector, and drops a field it does not know.
    broken = copy.deepcopy(resource)
    del broken["spec"]["instanceSelector"]
    with pytest.raises(jsonschema.ValidationError, match="'instanceSelector' is a required property"):
        crd_validate(broken, schema)
    typo = copy.deepcopy(resource)
    typo["spec"]["folderTitle"] = typo["spec"].pop("folder")
    assert unknown_fields(typo, schema) == [".spec.folderTitle"]


def test_objects_validate_against_the_prometheus_operator_crds():
    for stack in ("dev", "prod"):
        for obj in stack_objects(stack):
            if obj["apiVersion"] == "monitoring.coreos.com/v1":
                schema = operator_schema(obj["kind"])
                crd_validate(obj, schema)
                assert unknown_fields(obj, schema) == [], obj["kind"]
    pod_monitor = next(o for o in render.run("dev", placeholder_secrets=True).objects() if o["kind"] == "PodMonitor")
    broken = copy.deepcopy(pod_monitor)
    broken["spec"]["podMetricsEndpoints"][0]["port"] = 9404  # a number where the CRD wants the port's name
    with pytest.raises(jsonschema.ValidationError, match="9404 is not of type 'string'"):
        crd_validate(broken, operator_schema("PodMonitor"))
