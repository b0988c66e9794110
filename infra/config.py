"""Stack configuration: where the topology is, and the secret values the plan asks for."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pulumi

from infra import PROJECT, names, stores
from infra.connection import SecretValue
from infra.errors import Problem

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY_KEY = "topology"

# What each per-cluster secret item is, for error messages and docs/topology.md.
SECRET_ITEMS = {
    "password": "the SASL password",
    "caCert": "the PEM CA certificate (TLS trust: pem)",
    "truststore": "the truststore file, base64-encoded (TLS trust: jks or pkcs12)",
    "truststorePassword": "the truststore password (TLS trust: jks or pkcs12)",
    "clientCert": "the PEM client certificate (tls.clientCertificate)",
    "clientKey": "the PEM private key, unencrypted PKCS#8 (tls.clientCertificate)",
}


def topology_path(config: pulumi.Config, stack: str) -> Path:
    return ROOT / (config.get(TOPOLOGY_KEY) or f"stacks/{stack}.yaml")


def missing_secrets(keys: list[str], present: Callable[[str], bool]) -> list[Problem]:
    problems = []
    for key in keys:
        if present(key):
            continue
        command = f"pulumi config set --secret {PROJECT}:{key} ..."
        if key == names.REGISTRY_PASSWORD_KEY:
            problems.append(Problem("operator.imagePullSecret", "password", None,
                                    f"the registry password in secret config: {command}"))
        else:
            alias, item = key.split(".", 1)
            problems.append(Problem(f"clusters.{alias}", f"secret config {PROJECT}:{key}", None,
                                    f"{SECRET_ITEMS[item]}: {command}"))
    return problems


class _NotShown:
    def __repr__(self) -> str:
        return "the secret value (not shown)"


def unusable_secrets(keys: list[str], text: Callable[[str], str | None]) -> list[Problem]:
    """Secret material the Connect worker would refuse, found before anything deploys. Client
    keys: Kafka's PemStore reads unencrypted PKCS#8 only (a cert-manager key is PKCS#1)."""
    problems = []
    for key in keys:
        value = text(key) if key.endswith(".clientKey") else None
        problem = stores.private_key_problem(value) if value is not None else None
        if problem:
            alias = key.split(".", 1)[0]
            problems.append(Problem(f"clusters.{alias}", f"secret config {PROJECT}:{key}", _NotShown(),
                                    f"{SECRET_ITEMS['clientKey']}; this is {problem}"))
    return problems


def secret_resolver(config: pulumi.Config) -> Callable[[SecretValue], pulumi.Output]:
    def resolve(value: SecretValue) -> pulumi.Output:
        inputs = [config.require_secret(key) for key in value.config_keys]
        return pulumi.Output.secret(pulumi.Output.all(*inputs).apply(lambda vs: value.build(*vs)))
    return resolve
