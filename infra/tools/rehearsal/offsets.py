"""The operator's offsets management (Strimzi 0.44 and newer), reproduced against the real
Connect worker: what AbstractConnectOperator.manageConnectorOffsets and KafkaConnectApiImpl do
with a KafkaConnector whose `strimzi.io/connector-offsets` annotation asks for it (tags 0.45.0,
0.48.0, 1.2.0, which agree on every step below).

- The operation runs in the reconciliation of a connector whose config is up to date, after its
  state was set (maybeCreateOrUpdateConnector: updateState, then manageConnectorOffsets).
- list: GET /connectors/<name>/offsets; the answer parsed and written pretty-printed (Jackson's
  default pretty printer) under `offsets.json` of `spec.listOffsets.toConfigMap.name`, merged
  into that ConfigMap's data if it exists, with the labels of Labels.generateDefaultLabels
  (generateListOffsetsConfigMap). Without `spec.listOffsets` it only warns.
- alter: the connector STOPPED (verifyConnectorStopped: GET /connectors/<name>/status), then
  `offsets.json` of `spec.alterOffsets.fromConfigMap.name` must exist and parse as JSON, and is
  sent as it stands with PATCH /connectors/<name>/offsets (getOffsetsForAlterRequest).
- reset: the connector STOPPED, then DELETE /connectors/<name>/offsets.
- Success removes the annotation (removeConnectorOffsetsAnnotations, a JSON patch); a failure
  leaves it and adds a warning condition, and the next reconciliation tries again.

Where the stand-in differs, it says so: it waits for STOPPED instead of failing and coming back
at the next periodic reconciliation; it sends the alter body re-serialized (same JSON value);
it sets no ownerReference on the listed ConfigMap (the rehearsal's API server has no garbage
collector, and the uid of the connector is not read here).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from infra.core import names
from infra.core.names import CONNECTOR_OFFSETS_ANNOTATION
from infra.tools.rehearsal.connect import Worker
from infra.tools.rehearsal.process import RestError, RuntimeStartError

MANAGED_BY = "strimzi-cluster-operator"  # AbstractModel.STRIMZI_CLUSTER_OPERATOR_NAME
# Labels.STRIMZI_LABELS_EXCLUSION_PATTERN's default: labels not copied from the custom resource.
EXCLUDED_LABELS = re.compile(r"(^app.kubernetes.io/(?!part-of).*|^kustomize.toolkit.fluxcd.io.*)")


def pretty(value: Any, level: int = 0) -> str:
    """Jackson's DefaultPrettyPrinter (ObjectMapper.writerWithDefaultPrettyPrinter): objects one
    entry a line, two spaces a level, `"key" : value`; arrays on the line, `[ a, b ]`; empty ones
    `{ }` and `[ ]`; text as written (no escaping beyond JSON's)."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = ",\n".join(f"{'  ' * (level + 1)}{json.dumps(k, ensure_ascii=False)} : {pretty(v, level + 1)}"
                           for k, v in value.items())
        return "{\n" + inner + "\n" + "  " * level + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(pretty(v, level) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def default_labels(connector: Mapping[str, Any]) -> dict[str, str]:
    """Labels.generateDefaultLabels(resource, name, "kafka-connector", MANAGED_BY)."""
    name = connector["metadata"]["name"]
    labels = {k: v for k, v in connector["metadata"].get("labels", {}).items() if not EXCLUDED_LABELS.match(k)}
    labels.update({"strimzi.io/kind": connector["kind"], "strimzi.io/name": name, "strimzi.io/cluster": name,
                   "strimzi.io/component-type": "kafka-connector", "app.kubernetes.io/name": "kafka-connector",
                   "app.kubernetes.io/instance": name, "app.kubernetes.io/part-of": f"strimzi-{name}",
                   "app.kubernetes.io/managed-by": MANAGED_BY})
    return labels


def wait_stopped(worker: Worker, name: str, timeout: float) -> None:
    """verifyConnectorStopped, until it passes: the operator fails ("Connector is not in STOPPED
    state") and tries again at its next reconciliation; the stand-in waits for that instead."""
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        try:
            state = worker.status(name)["connector"]["state"]
        except RuntimeStartError:
            state = None  # just created: no status yet, not STOPPED either
        if state == "STOPPED":
            return
        time.sleep(1)
    raise RuntimeStartError(f"{name}: Connector is not in STOPPED state (it is {state} after {timeout:.0f} s)")


def manage(worker: Worker, connector: Mapping[str, Any], configmaps: Mapping[tuple[str, str], Mapping[str, str]],
           timeout: float = 60) -> dict[str, Any] | None:
    """Carry out the connector's annotation: the ConfigMap the operator writes (list), or None.
    Raises RuntimeStartError with the operator's warning when it would not succeed."""
    meta, spec = connector["metadata"], connector["spec"]
    name, namespace = meta["name"], meta["namespace"]
    action = meta.get("annotations", {}).get(CONNECTOR_OFFSETS_ANNOTATION)
    path = f"/connectors/{name}/offsets"
    if action == "list":
        if "listOffsets" not in spec:
            raise RuntimeStartError("Failed to list the connector offsets due to missing property listOffsets in "
                                    "KafkaConnector CR.")
        target = spec["listOffsets"]["toConfigMap"]["name"]
        text = pretty(worker.request("GET", path))
        data = {**configmaps.get((namespace, target), {}), names.OFFSETS_KEY: text}
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": target, "namespace": namespace, "labels": default_labels(connector)},
                "data": data}
    if action == "alter":
        if "alterOffsets" not in spec:
            raise RuntimeStartError("Failed to alter the connector offsets due to missing property alterOffsets in "
                                    "KafkaConnector CR.")
        wait_stopped(worker, name, timeout)
        source = spec["alterOffsets"]["fromConfigMap"]["name"]
        if (namespace, source) not in configmaps:
            raise RuntimeStartError(f"Encountered error fetching offsets to use in alter operation. ConfigMap "
                                    f"{namespace}/{source} does not exist.")
        body = configmaps[(namespace, source)].get(names.OFFSETS_KEY)
        if body is None:
            raise RuntimeStartError(f"Encountered error fetching offsets to use in alter operation. Data field "
                                    f"{names.OFFSETS_KEY} is missing.")
        worker.request("PATCH", path, json.loads(body))
        return None
    if action == "reset":
        wait_stopped(worker, name, timeout)
        worker.request("DELETE", path)
        return None
    if action in (None, "none"):
        return None
    # KafkaConnectorOffsetsAnnotation.valueOf refuses any other value.
    raise RuntimeStartError(f"{name}: {CONNECTOR_OFFSETS_ANNOTATION}={action} is none of list, alter, reset")


def retried(error: RuntimeStartError) -> bool:
    """Whether the operator would retry the request at its next reconciliation rather than the
    stand-in refuse it: the worker's 409 (its configuration stale after a concurrent change, or
    a rebalance). On any failure the operator keeps its annotation, adds a warning condition and
    repeats at its next reconciliation (AbstractConnectOperator.alterConnectorOffsets, 1.2.0);
    the stand-in raises on the others, which tests prove as refusals."""
    return isinstance(error, RestError) and error.status == 409


def without_annotation(connector: Mapping[str, Any]) -> dict[str, Any]:
    """The KafkaConnector after removeConnectorOffsetsAnnotations."""
    meta = dict(connector["metadata"])
    annotations = {k: v for k, v in meta.get("annotations", {}).items() if k != CONNECTOR_OFFSETS_ANNOTATION}
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    return {**connector, "metadata": meta}
