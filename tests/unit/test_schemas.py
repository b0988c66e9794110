"""Every rendered object of every stack validates against real schemas.

Core kinds: kubernetes-validate (strict: unknown fields fail) at KUBERNETES_VERSION.
Strimzi kinds: the CRDs' openAPIV3Schema from ../shared/strimzi-crds, or from STRIMZI_CRDS_DIR
(folders named by operator version, as shared/strimzi-crds), to check against the operator you run.
"""

from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest

from infra.core.releases import DEFAULT_VERSION, Flavour
from infra.tools import render
from tests.support.schemas import validate
from tests.support.stacks import render_topology
from tests.support.variants import STACKS, variant_topologies


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_of_every_stack_validates(stack):
    objects = render.run(stack, placeholder_secrets=True).objects()
    assert objects
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("name", sorted(variant_topologies()))
def test_every_object_of_every_variant_validates(tmp_path, name):
    objects = render_topology(tmp_path, variant_topologies()[name], secrets={}).objects()
    kinds = {o["kind"] for o in objects}
    assert {"Namespace", "ConfigMap", "KafkaConnect", "KafkaConnector", "Role", "RoleBinding"} <= kinds
    for obj in objects:
        validate(obj)


def _connect(tmp_path, flavour):
    t = variant_topologies()[f"doc-{flavour}-{DEFAULT_VERSION[Flavour(flavour)]}"]
    return next(o for o in render_topology(tmp_path, t, secrets={}).objects() if o["kind"] == "KafkaConnect")


@pytest.mark.parametrize("break_it,flavour", [
    (lambda o: o["spec"].pop("bootstrapServers"), "csm"),
    (lambda o: o["spec"].pop("groupId"), "strimzi"),
    (lambda o: o["spec"]["authentication"].update(type="kerberos"), "csm"),
    (lambda o: o["spec"].update(replicas="three"), "strimzi"),
])
def test_broken_strimzi_objects_are_rejected(tmp_path, break_it, flavour):
    obj = copy.deepcopy(_connect(tmp_path, flavour))
    validate(obj)
    break_it(obj)
    with pytest.raises(jsonschema.ValidationError):
        validate(obj)


def test_unknown_strimzi_fields_are_rejected(tmp_path):
    obj = copy.deepcopy(_connect(tmp_path, "csm"))
    obj["spec"]["template"]["pod"]["volume"] = obj["spec"]["template"]["pod"].pop("volumes")  # a typo
    with pytest.raises(jsonschema.ValidationError, match="spec.template.pod.volume"):
        validate(obj)


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
        validate(obj)
