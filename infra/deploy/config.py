"""Stack configuration: where the topology is, and the secret values the plan asks for."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import pulumi

from infra.core import names, references, stores
from infra.core.errors import Problem, TopologyError
from infra.core.names import PROJECT
from infra.deploy import kubeconfig

TOPOLOGY_KEY = "topology"
# What the Pulumi CLI looks for from its working directory up (its workspace.DetectProjectPath).
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


def project_dir(start: Path | None = None) -> Path:
    """The Pulumi project's folder, which every relative path of its stacks is read from: the
    nearest folder holding a Pulumi.yaml from `start` (default the working directory: where
    `pulumi` runs the program, or the command line's `-C DIR`) up, as the Pulumi CLI finds it; the
    working directory itself when none does. Never the package's own folder: installed, that is
    site-packages."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / name).is_file() for name in PROJECT_FILES):
            return folder
    return here

# What each per-cluster secret item is, for error messages and docs/topology.md.
SECRET_ITEMS = {
    "password": "the SASL password",
    "caCert": "the PEM CA certificate (TLS trust: pem)",
    "truststore": "the truststore file, base64-encoded (TLS trust: jks or pkcs12)",
    "truststorePassword": "the truststore password (TLS trust: jks or pkcs12)",
    "clientCert": "the PEM client certificate (tls.clientCertificate)",
    "clientKey": "the PEM private key, unencrypted PKCS#8 (tls.clientCertificate)",
}


def is_secret_item(key: str) -> bool:
    """Whether `key` names a secret item some topology reads: `<alias>.<item>` of SECRET_ITEMS,
    the registry password or a Kubernetes cluster's kubeconfig."""
    alias, _, item = key.partition(".")
    return (key == names.REGISTRY_PASSWORD_KEY or names.kubeconfig_of(key) is not None
            or (item in SECRET_ITEMS and "." not in item and alias != ""))


def topology_path(config: pulumi.Config, stack: str) -> Path:
    return project_dir() / (config.get(TOPOLOGY_KEY) or f"stacks/{stack}.yaml")


def _owner(key: str) -> tuple[str, str]:
    """Where a secret config key belongs in the topology, and what it holds."""
    if key == names.REGISTRY_PASSWORD_KEY:
        return "operator.imagePullSecret", "the registry password"
    kubernetes = names.kubeconfig_of(key)
    if kubernetes is not None:
        return f"kubernetes.{kubernetes}", f"the kubeconfig of Kubernetes cluster {kubernetes} (its contents)"
    alias, item = key.split(".", 1)
    return f"clusters.{alias}", SECRET_ITEMS[item]


def missing_secrets(keys: list[str], present: Callable[[str], bool]) -> list[Problem]:
    problems = []
    for key in keys:
        if present(key):
            continue
        command = f"pulumi config set --secret {PROJECT}:{key} ..."
        where, what = _owner(key)
        if key == names.REGISTRY_PASSWORD_KEY:
            problems.append(Problem(where, "password", None, f"{what} in secret config: {command}"))
        else:
            problems.append(Problem(where, f"secret config {PROJECT}:{key}", None, f"{what}: {command}"))
    return problems


class NotShown:
    def __repr__(self) -> str:
        return "the secret value (not shown)"


def unusable_secrets(keys: list[str], text: Callable[[str], str | None], targets: frozenset[str] = frozenset(),
                     contexts: Mapping[str, str | None] | None = None, literal: bool = False) -> list[Problem]:
    """Secret material the Connect worker (or the registry, or Java) would refuse, found before
    anything deploys; the values themselves are never shown. Passwords are non-empty single
    lines, and a target's SASL password has no `"` or `\\`: Strimzi writes it into the worker's
    JAAS line unescaped (the program escapes the JAAS lines it writes itself). Certificates must
    be PEM X.509, and still usable (stores.expiry_problem: a trust list with one certificate not
    yet expired, a client certificate not expired); a truststore base64 of a JKS/PKCS12 file
    that opens with its password; client keys unencrypted PKCS#8 (Kafka's PemStore reads nothing else). A kubeconfig must be one the
    Kubernetes provider can use (infra/deploy/kubeconfig.py); `contexts` has the topology's context for
    it, by Kubernetes cluster. Where the release writes a target's password literally into the
    worker file (`literal`), it has no `${`: the worker would resolve it as a config-provider
    reference (Kafka's ConfigTransformer), reading a file or Secret instead of the password."""
    problems = []
    present = set(keys)
    for key in keys:
        value = text(key)
        if value is None:
            continue
        kubernetes = names.kubeconfig_of(key)
        if kubernetes is not None:
            where, what = _owner(key)
            problems += [Problem(where, f"secret config {PROJECT}:{key}", NotShown(), f"{what}; this is {problem}")
                         for problem in kubeconfig.problems(value, (contexts or {}).get(kubernetes))]
            continue
        owner, _, item = key.partition(".")
        problem = _material_problem(item, value, lambda other: text(f"{owner}.{other}")
                                    if f"{owner}.{other}" in present else None, owner in targets, literal)
        if problem:
            where, what = _owner(key)
            problems.append(Problem(where, f"secret config {PROJECT}:{key}", NotShown(), f"{what}; this is {problem}"))
    return problems


def _material_problem(item: str, value: str, sibling: Callable[[str], str | None], target: bool,
                      literal: bool = False) -> str | None:
    if item in ("password", "truststorePassword"):
        if not value:
            return "empty"
        if any(c in value for c in "\r\n"):
            return "a value with a line break"
        if item == "password" and target and any(c in value for c in '"\\'):
            return ("a password with \" or \\: the cluster is a flow's target, and Strimzi writes its password "
                    "into the Connect worker's JAAS line unescaped, which breaks the worker")
        if item == "password" and target and literal and references.MARKER in value:
            return ("a password with ${: the cluster is a flow's target, and this operator release writes its "
                    "password literally into the Connect worker's file, where the worker would resolve ${...} as a "
                    "config-provider reference (reading a file or Secret instead)")
        return None
    if item in ("caCert", "clientCert"):
        try:
            found = stores.certificates_only(value)
        except stores.StoreError as exc:
            return f"unusable: {exc}"
        return stores.expiry_problem(found, "client" if item == "clientCert" else "trust")
    if item == "truststore":
        password = sibling("truststorePassword")
        if password is None:
            return None  # reported as missing
        try:
            pem_text = stores.truststore_pem(value, password)
        except stores.StoreError as exc:
            return f"unusable: {exc}"
        return stores.expiry_problem(stores.certificates(pem_text), "trust")
    if item == "clientKey":
        return stores.private_key_problem(value)
    return None


def plain_secrets(keys: list[str], is_plain: Callable[[str], bool]) -> list[Problem]:
    """Secret items set as plain config: Pulumi keeps those in clear in Pulumi.<stack>.yaml and
    prints them, and every Output built from them would be plain."""
    problems = []
    for key in keys:
        if is_plain(key):
            where, _ = _owner(key)
            problems.append(Problem(where, f"secret config {PROJECT}:{key}", "a plain (not secret) value",
                                    f"a secret: pulumi config rm {PROJECT}:{key}, then "
                                    f"pulumi config set --secret {PROJECT}:{key} ..."))
    return problems


def secret_item(secrets: Mapping[str, Any], key: str, targets: frozenset[str] = frozenset(),
                contexts: Mapping[str, str | None] | None = None, literal: bool = False) -> pulumi.Output[str]:
    """One secret item (text, or an Output such as secret config) as a secret Output. Text was
    checked before anything deployed (deployment.check); an Output is checked like text
    (`unusable_secrets`) when it resolves, failing the update before anything holds it."""
    value = secrets[key]
    if isinstance(value, str):
        return pulumi.Output.secret(value)

    def checked(text: str) -> str:
        problems = unusable_secrets([key], {key: text}.get, targets, contexts, literal)
        if problems:
            raise TopologyError(problems, "the secret arguments")
        return text
    return pulumi.Output.secret(pulumi.Output.from_input(value).apply(checked))


def plain(stack: str) -> dict[str, str]:
    """Plain (non-secret) values of Pulumi.<stack>.yaml, as `pulumi config` would give them
    (keys without the project prefix): what the offline render and the diff run with."""
    from infra.core import reading
    path = project_dir() / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    document = reading.load_yaml_file(path, "stack settings file") or {}
    values = (document.get("config") if isinstance(document, dict) else None) or {}
    if not isinstance(values, dict):
        raise TopologyError([Problem(str(path), "config", type(values).__name__, "a mapping of config keys")])
    return {k.removeprefix(f"{PROJECT}:"): v for k, v in values.items()
            if k.startswith(f"{PROJECT}:") and isinstance(v, str)}
