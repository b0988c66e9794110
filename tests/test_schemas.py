"""Every rendered object of every stack validates against real schemas.

Core kinds: kubernetes-validate (strict: unknown fields fail) at KUBERNETES_VERSION.
Strimzi kinds: the CRDs' openAPIV3Schema from ../shared/strimzi-crds, or from STRIMZI_CRDS_DIR
(folders named by operator version, as shared/strimzi-crds), to check against the operator you run.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from infra.tools import render
from tests.patterns import PATTERNS
from infra.core.releases import DEFAULT_VERSION, Flavour
from tests.conftest import CRDS, RELEASES, doc_topology, on_release, render_topology

KUBERNETES_VERSION = "1.33.0"
CRD_FOLDER = {"kafka.strimzi.io/v1beta2": "0.48.0", "kafka.strimzi.io/v1": "1.2.0"}
CRD_FILES = {"KafkaConnect": "041-Crd-kafkaconnect.yaml", "KafkaConnector": "047-Crd-kafkaconnector.yaml"}


@lru_cache(maxsize=None)
def crd_schema(api_version: str, kind: str) -> dict:
    path = Path(CRDS) / CRD_FOLDER[api_version] / CRD_FILES[kind]
    crd = yaml.safe_load(path.read_text())
    version = api_version.split("/")[1]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
    return served["schema"]["openAPIV3Schema"]


def unknown_fields(obj, schema: dict, path: str = "") -> list[str]:
    """Fields the API server would silently prune (structural schemas drop unknown fields)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found = []
    if isinstance(obj, dict) and "properties" in schema:
        for key, value in obj.items():
            if key not in schema["properties"]:
                found.append(f"{path}.{key}")
            else:
                found += unknown_fields(value, schema["properties"][key], f"{path}.{key}")
    elif isinstance(obj, list) and "items" in schema:
        for i, item in enumerate(obj):
            found += unknown_fields(item, schema["items"], f"{path}[{i}]")
    return found


def validate(obj: dict) -> None:
    if obj["apiVersion"].startswith("kafka.strimzi.io/"):
        schema = crd_schema(obj["apiVersion"], obj["kind"])
        jsonschema.validate(obj, schema)
        pruned = unknown_fields(obj, schema)
        if pruned:
            raise jsonschema.ValidationError(f"unknown fields (the server would drop them): {pruned}")
    elif obj["apiVersion"].startswith("monitoring.coreos.com/"):
        # The Prometheus Operator's PodMonitor and PrometheusRule: its pinned CRDs (make prometheus-crds).
        from tests import test_monitoring
        schema = test_monitoring.crd_schema(obj["kind"])
        test_monitoring.crd_validate(obj, schema)
        pruned = unknown_fields(obj, schema)
        if pruned:
            raise jsonschema.ValidationError(f"unknown fields (the server would drop them): {pruned}")
    else:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def variant_topologies() -> dict[str, dict]:
    """Every security setup and pattern on every supported operator release
    (`<variant>-<flavour>-<release>`)."""
    def two(source, target, flavour, version):
        return on_release(doc_topology(clusters={"a": {"bootstrapServers": "a:9093", "security": source},
                                                 "b": {"bootstrapServers": "b:9093", "security": target}},
                                       flows=[{"source": "a", "target": "b", "topics": ["t.*"],
                                               "connect": {"resources": {"requests": {"cpu": "1"}}}}]),
                          flavour, version)
    sasl = {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"}}
    mtls = {"protocol": "SSL", "tls": {"clientCertificate": True}}
    variants = {}
    for flavour, version in RELEASES:
        at = f"{flavour}-{version}"
        variants[f"doc-{at}"] = on_release(doc_topology(), flavour, version)
        variants[f"sasl-{at}"] = two(sasl, sasl, flavour, version)
        variants[f"mtls-{at}"] = two(mtls, mtls, flavour, version)
        variants[f"plain-{at}"] = two({}, {}, flavour, version)
        for name, make in PATTERNS.items():
            variants[f"{name}-{at}"] = make(flavour, version)
    return variants


STACKS = sorted(p.stem for p in (Path(__file__).parent.parent / "stacks").glob("*.yaml"))


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
