"""Real schemas for rendered objects: kubernetes-validate for core kinds, Strimzi's CRDs for its
kinds (unknown fields are what the server would prune), the Prometheus Operator's for monitoring."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

from tests.support.stacks import CRDS

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
        from tests.support import prometheus
        schema = prometheus.crd_schema(obj["kind"])
        prometheus.crd_validate(obj, schema)
        pruned = unknown_fields(obj, schema)
        if pruned:
            raise jsonschema.ValidationError(f"unknown fields (the server would drop them): {pruned}")
    else:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
