"""Real schemas for rendered objects: kubernetes-validate for core kinds, Strimzi's CRDs for its
kinds (unknown fields are what the server would prune), the Prometheus Operator's for monitoring.

Strimzi's CRDs are those of the release's own Strimzi line (CSM 1.2 ships 0.43.0, CSM 1.4 0.45.0),
generated from its published artifacts (infra/tools/rehearsal/crds.py), which takes Java: the
tiers that have it validate Strimzi kinds (tests/conformance/test_schemas.py holds every stack
and variant); the unit tier validates core kinds only, and says so by passing no release."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

from infra.core.releases import SUPPORTED, Release
from infra.tools.rehearsal import crds
from infra.topology.schema.topology import Operator
from tests.support.stacks import unavailable

KUBERNETES_VERSION = "1.33.0"


def release_of(topology: dict) -> Release:
    """The supported release a topology document names (its operator section, as the schema reads it)."""
    return Operator.model_validate(topology.get("operator", {})).release


def release_of_objects(objects: list[dict]) -> Release:
    """The release a render is for, from its KafkaConnects: their API version and Kafka version
    (`spec.version`, always rendered) name one supported release (their versions are disjoint)."""
    found = {next(r for r in SUPPORTED if r.api_version == o["apiVersion"] and o["spec"]["version"] in r.connect_versions)
             for o in objects if o["kind"] == "KafkaConnect"}
    assert len(found) == 1, found
    return found.pop()


def strimzi_crds(release: Release) -> Path:
    """The folder of the release's Strimzi CRDs, generated on first use (the tier is skipped, or
    fails where required, when they cannot be: no Maven or no Java 21)."""
    try:
        return crds.for_release(release)
    except crds.CrdsError as exc:
        unavailable(str(exc))
        raise


@lru_cache(maxsize=None)
def crd_schema(release: Release, kind: str) -> dict:
    crd = yaml.safe_load((strimzi_crds(release) / crds.FILES[kind][1]).read_text())
    version = release.api_version.split("/")[1]
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


CRD_GROUPS = ("kafka.strimzi.io/", "monitoring.coreos.com/", "grafana.integreatly.org/")


def validate(obj: dict, release: Release | None = None) -> None:
    """`obj` against its real schema. Custom resources need the CRDs that tools build (Strimzi's
    with Java, the Prometheus Operator's with Go) and a Strimzi kind the release whose CRDs it is
    checked against: without a release (the unit tier, Python only) core kinds alone are
    checked, and the custom resources are left to tests/conformance/test_schemas.py."""
    if release is None and obj["apiVersion"].startswith(CRD_GROUPS):
        return
    if obj["apiVersion"].startswith("kafka.strimzi.io/"):
        assert release is not None
        assert obj["apiVersion"] == release.api_version, (obj["apiVersion"], release.name)
        schema = crd_schema(release, obj["kind"])
        jsonschema.validate(obj, schema)
        pruned = unknown_fields(obj, schema)
        if pruned:
            raise jsonschema.ValidationError(f"unknown fields (the server would drop them): {pruned}")
    elif obj["apiVersion"].startswith(("monitoring.coreos.com/", "grafana.integreatly.org/")):
        # The Prometheus Operator's PodMonitor and PrometheusRule, grafana-operator's
        # GrafanaDashboard: their pinned CRDs (make prometheus-crds grafana-crds).
        from tests.support import prometheus
        schema = prometheus.crd_schema(obj["kind"])
        prometheus.crd_validate(obj, schema)
        pruned = unknown_fields(obj, schema)
        if pruned:
            raise jsonschema.ValidationError(f"unknown fields (the server would drop them): {pruned}")
    else:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
