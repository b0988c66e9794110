"""A rehearsal's credentials, made from the material its Kafka clusters were started with: the
secret config a stack of them needs, and the Secrets a team keeps itself that the topology
references instead."""

from __future__ import annotations

import base64
import secrets as random_secrets
from typing import Any

from infra.checks.rules import referenced
from infra.tools.rehearsal.kafka import KafkaCluster
from infra.topology.resolution import Model


def _material(model: Model, clusters: dict[str, KafkaCluster], alias: str, item: str) -> str:
    """A secret config item's value (infra/deploy/config.py's: a truststore base64-encoded), from
    the material the cluster `alias` was started with."""
    kafka, tls = clusters[alias], model.clusters[alias].security.effective_tls
    return {"password": kafka.password or "", "caCert": kafka.material.ca_pem, "truststorePassword": f"tsp-{alias}",
            "truststore": kafka.material.truststore_b64(tls.trust.value if tls else "jks", f"tsp-{alias}"),
            "clientCert": kafka.material.client_cert_pem, "clientKey": kafka.material.client_key_pem}[item]


def secret_material(model: Model, clusters: dict[str, KafkaCluster]) -> dict[str, str]:
    """The secret config a stack of these clusters needs (infra/deploy/config.py's keys)."""
    return {"registry.password": random_secrets.token_urlsafe(12),
            **{f"{alias}.{item}": _material(model, clusters, alias, item)
               for alias, cluster in model.clusters.items() for item in cluster.security.secret_items}}


def kept_secrets(model: Model, clusters: dict[str, KafkaCluster]) -> list[dict[str, Any]]:
    """The Secrets a team keeps itself (External Secrets, Vault, cert-manager...) that the topology
    references (`sasl.passwordSecret`, `tls.secret`), made here from the clusters' material in
    every namespace that reads them (infra/checks/rules/referenced.py `kept_keys`; one API server
    here), as the team's tooling would sync them: text under `stringData`, a store file under
    `data`. They are applied with the render, never part of it: the program only references them."""
    one_server = {(namespace, name): keys for (_, namespace, name), keys in referenced.kept_keys(model).items()}
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "the-team"}},
             **{field: {key: _material(model, clusters, *held) for key, held in sorted(keys.items())
                        if (held[1] == "truststore") == (field == "data")} for field in ("stringData", "data")}}
            for (namespace, name), keys in sorted(one_server.items())]


def secret_data(obj: dict[str, Any]) -> dict[str, bytes]:
    """A Secret's content as a pod reads it: `data` base64-decoded, `stringData` over it."""
    data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    data.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
    return data
