"""The Prometheus Operator's CRDs (tools/prometheus-operator, `make prometheus-crds`): their
schemas for validating rendered objects, and installing them on the API-server tier's server."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from infra.tools.rehearsal.kubeapi import Client
from tests.support.stacks import unavailable

CRDS_CACHE = Path.home() / ".cache" / "kafka-replication" / "prometheus-operator-crds"


def crd_schema(kind: str) -> dict:
    files = {"PodMonitor": "monitoring.coreos.com_podmonitors.yaml",
             "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml"}
    found = sorted(CRDS_CACHE.glob(f"*/{files[kind]}"))
    if not found:
        unavailable("no Prometheus Operator CRDs: run `make prometheus-crds` (tools/prometheus-operator)")
    crd = yaml.safe_load(found[-1].read_text())
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1" and v.get("served")]
    return served["schema"]["openAPIV3Schema"]


def crd_validate(obj: dict, schema: dict) -> None:
    """The schema as the API server reads it: its patterns are Go's (`(?i)` inside), which
    Python's metaschema check would refuse, so the schema is used without that check."""
    jsonschema.validators.validator_for(schema)(schema).validate(obj)


# The Prometheus Operator's CRDs (tools/prometheus-operator/go.mod, `make prometheus-crds`).
PROMETHEUS_CRDS = Path.home() / ".cache" / "kafka-replication" / "prometheus-operator-crds"


CRD_BASE = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def prometheus_crds(client: Client, installed: bool) -> None:
    """The PodMonitor and PrometheusRule CRDs installed (or removed) on the server, as the
    operator's release ships them. Created by POST, as Strimzi's are."""
    folders = sorted(PROMETHEUS_CRDS.glob("v*"))
    if not folders:
        unavailable("no Prometheus Operator CRDs: run `make prometheus-crds` (tools/prometheus-operator)")
    crds = [yaml.safe_load(p.read_text()) for p in sorted(folders[-1].glob("*.yaml"))]
    assert {c["spec"]["names"]["kind"] for c in crds} == {"PodMonitor", "PrometheusRule"}
    for crd in crds:
        name = crd["metadata"]["name"]
        present = client.request("GET", f"{CRD_BASE}/{name}")[0] == 200
        if installed and not present:
            client.create(crd)
            client.wait_established(name)
        elif not installed and present:
            client.request("DELETE", f"{CRD_BASE}/{name}")
            client.wait_gone(f"{CRD_BASE}/{name}")
    client.forget()
