"""The monitoring operators' CRDs: the Prometheus Operator's PodMonitor and PrometheusRule
(tools/prometheus-operator, `make prometheus-crds`) and grafana-operator's GrafanaDashboard
(tools/grafana-operator, `make grafana-crds`), each at the version its go.mod pins: their schemas
for validating rendered objects, and installing them on an API server of the tests."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from infra.tools.rehearsal.kubeapi import Client
from tests.support.stacks import unavailable

CACHE = Path.home() / ".cache" / "kafka-replication"
# The Prometheus Operator's CRDs (tools/prometheus-operator/go.mod, `make prometheus-crds`).
CRDS_CACHE = PROMETHEUS_CRDS = CACHE / "prometheus-operator-crds"
# grafana-operator's (tools/grafana-operator/go.mod, `make grafana-crds`).
GRAFANA_CRDS = CACHE / "grafana-operator-crds"

# kind: (its cache folder, its file there, the version the program writes, how to get it)
CRDS = {
    "PodMonitor": (PROMETHEUS_CRDS, "monitoring.coreos.com_podmonitors.yaml", "v1",
                   "make prometheus-crds` (tools/prometheus-operator)"),
    "PrometheusRule": (PROMETHEUS_CRDS, "monitoring.coreos.com_prometheusrules.yaml", "v1",
                       "make prometheus-crds` (tools/prometheus-operator)"),
    "GrafanaDashboard": (GRAFANA_CRDS, "grafana.integreatly.org_grafanadashboards.yaml", "v1beta1",
                         "make grafana-crds` (tools/grafana-operator)"),
}


def _crd_files(kinds: list[str]) -> list[Path]:
    out = []
    for kind in kinds:
        folder, name, _, how = CRDS[kind]
        found = sorted(folder.glob(f"v*/{name}"))
        if not found:
            unavailable(f"no {kind} CRD: run `{how}")
        out.append(found[-1])
    return out


def crd_schema(kind: str) -> dict:
    (path,) = _crd_files([kind])
    crd = yaml.safe_load(path.read_text())
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == CRDS[kind][2] and v.get("served")]
    return served["schema"]["openAPIV3Schema"]


def crd_validate(obj: dict, schema: dict) -> None:
    """The schema as the API server reads it: its patterns are Go's (`(?i)` inside), which
    Python's metaschema check would refuse, so the schema is used without that check."""
    jsonschema.validators.validator_for(schema)(schema).validate(obj)


CRD_BASE = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _installed(client: Client, kinds: list[str], installed: bool) -> None:
    """The CRDs of `kinds` installed (or removed) on the server, as their operator's release
    ships them. Created by POST, as Strimzi's are."""
    crds = [yaml.safe_load(p.read_text()) for p in _crd_files(kinds)]
    assert [c["spec"]["names"]["kind"] for c in crds] == kinds
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


def prometheus_crds(client: Client, installed: bool) -> None:
    """The Prometheus Operator's PodMonitor and PrometheusRule CRDs, installed or removed."""
    _installed(client, ["PodMonitor", "PrometheusRule"], installed)


def grafana_crds(client: Client, installed: bool) -> None:
    """grafana-operator's GrafanaDashboard CRD, installed or removed."""
    _installed(client, ["GrafanaDashboard"], installed)
