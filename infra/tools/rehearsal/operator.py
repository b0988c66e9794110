"""The stand-in for the operator, and the only one: what a release's operator does with a
rendered KafkaConnect and its KafkaConnectors, reproduced from the release's source at its tag.

- `worker`: the worker file (/tmp/strimzi-connect.properties), the files the pod holds (mounted
  Secrets, the stores the container builds), its environment, and the objects the operator
  itself creates beside the KafkaConnect (its service account's Role, the trusted-certificates
  Secret). Which way a release writes the worker's connection is the release table's
  `WorkerFile` (infra/core/releases.py), the same row the plan reads.
  - literalStores (Strimzi 0.43.0, 0.45.0 as CSM 1.2, 1.4 ship them):
    `docker-images/kafka-based/kafka/scripts/kafka_connect_config_generator.sh` and
    `kafka_connect_run.sh` (stores under /tmp/kafka, a random password per pod), the user
    configuration with `KafkaConnectConfiguration.DEFAULTS`.
  - pemReferences (Strimzi 0.48.0, 1.2.0): `cluster-operator/.../model/
    KafkaConnectConfigurationBuilder.java`, `KafkaConnectCluster.generateRole`,
    `AbstractConnectOperator` (the `<name>-connect-tls-trusted-certs` Secret), at those tags.
- `worker` also attaches the Prometheus JMX exporter agent when the KafkaConnect's
  `spec.metricsConfig` is `jmxPrometheusExporter`, as the release does: the operator reads the
  ConfigMap key it names, turns its YAML into JSON (`MetricsModel.metricsJson`, 0.43.0;
  `JmxPrometheusExporterModel`, 0.48.0 and 1.2.0: Jackson YAML in, JSON out, "{}" when empty)
  and mounts it as `/opt/kafka/custom-config/metrics-config.json`
  (`KafkaConnectCluster.KAFKA_CONNECT_CONFIG_VOLUME_MOUNT`); the pod's environment enables the
  agent (`KAFKA_CONNECT_METRICS_ENABLED` to 0.47, `KAFKA_CONNECT_JMX_EXPORTER_ENABLED` from
  0.48) and `kafka_connect_run.sh` adds
  `-javaagent:<jmx_prometheus_javaagent jar>=9404:$KAFKA_HOME/custom-config/metrics-config.json`.
- `connector_requests`, `needs_reconfiguring` and `state_change`: what the operator sends to the
  worker's REST API for a KafkaConnector (`AbstractConnectOperator.maybeCreateOrUpdateConnector`,
  the same rule at every tag here): it GETs the connector's config, PUTs the config of
  `asJson` (the spec's config with `connector.class` and `tasks.max`) only when it differs
  from what Connect returns (`needsReconfiguring`), then brings the connector to the spec's
  state (`updateState`).

Where the stand-in must differ from a pod, it says so: the REST listener and the exporter agent
are bound to the pod's own loopback address (pods here share one network), and the worker's
Kubernetes client reaches
the API server through a kubeconfig holding the service account's token instead of the
in-cluster files.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import secrets as random_secrets
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from contract.clientprops import LOGIN_MODULES
from infra.core import names, stores
from infra.core.releases import Release, WorkerFile
from infra.plan import metrics
from infra.plan.connectors import ConnectorKind

WORKER_FILE = "/tmp/strimzi-connect.properties"
REST_PORT = 8083
PASSWORD_MOUNT = "/opt/kafka/connect-password"   # KafkaConnectCluster.PASSWORD_VOLUME_MOUNT
CERTS_MOUNT = "/opt/kafka/connect-certs"         # KafkaConnectCluster.TLS_CERTS_BASE_VOLUME_MOUNT
STORE_DIR = "/tmp/kafka"                         # kafka_connect_run.sh
CUSTOM_CONFIG = "/opt/kafka/custom-config"       # KafkaConnectCluster.KAFKA_CONNECT_CONFIG_VOLUME_MOUNT
METRICS_JSON = f"{CUSTOM_CONFIG}/metrics-config.json"  # MetricsModel.CONFIG_MAP_KEY, as kafka_connect_run.sh reads it
# KafkaConnectConfiguration.DEFAULTS: the converters at every tag here; the group id and storage
# topics come from names.connect_identity (the spec fields, the config, Strimzi's defaults).
CONVERTER_DEFAULTS = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
STRIMZI_PROVIDERS = {  # KafkaConnectConfigurationBuilder.printConfigProviders (0.48.0, 1.2.0)
    "config.providers.strimzienv.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "config.providers.strimzienv.param.allowlist.pattern": ".*",
    "config.providers.strimzifile.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "config.providers.strimzidir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
    "config.providers.strimzidir.param.allowed.paths": "/opt/kafka",
    "config.providers.strimzisecrets.class": "io.strimzi.kafka.KubernetesSecretConfigProvider",
}
MECHANISMS = {"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
PREFIXES = ("", "producer.", "consumer.", "admin.")

Secrets = Mapping[str, Mapping[str, bytes]]  # Secret name -> key -> bytes, in the flow namespace
ConfigMaps = Mapping[str, Mapping[str, str]]  # ConfigMap name -> key -> text, in the flow namespace


class OperatorRefusal(RuntimeError):
    """What the release's operator would report on the KafkaConnect's status instead of a pod."""


@dataclass
class WorkerSetup:
    properties: dict[str, str]               # the worker file, key by key
    files: dict[str, bytes]                  # path inside the pod -> content
    env: dict[str, str] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)  # what the operator creates in the namespace
    jvm_options: list[str] = field(default_factory=list)          # KAFKA_OPTS of kafka_connect_run.sh (agents)

    def worker_file(self) -> str:
        return "".join(f"{k}={_escape(v)}\n" for k, v in self.properties.items())


def _escape(value: str) -> str:
    # java.util.Properties: a backslash escapes, a line break needs one; nothing else here does.
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _string(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _pkcs12(password: str, certs: list[bytes] | None = None, key_pem: str | None = None,
            chain_pem: str | None = None) -> bytes:
    enc = serialization.BestAvailableEncryption(password.encode())
    if key_pem is not None and chain_pem is not None:
        key = serialization.load_pem_private_key(key_pem.encode(), None)
        chain = [x509.load_der_x509_certificate(c) for c in stores.certificates(chain_pem)]
        return pkcs12.serialize_key_and_certificates(b"user", key, chain[0], chain[1:] or None, enc)  # type: ignore[arg-type]
    trusted = [pkcs12.PKCS12Certificate(x509.load_der_x509_certificate(c), f"ca-{i}".encode())
               for i, c in enumerate(certs or [])]
    return pkcs12.serialize_java_truststore(trusted, enc)


def metrics_json(connect: Mapping[str, Any], configmaps: ConfigMaps) -> str | None:
    """The exporter configuration the operator mounts for a KafkaConnect, None without the JMX
    exporter; refused as the operator refuses it (MetricsModel.metricsJson, 0.43.0)."""
    config = connect["spec"].get("metricsConfig")
    if not config or config.get("type") != "jmxPrometheusExporter":
        return None
    ref = config["valueFrom"]["configMapKeyRef"]
    if ref["name"] not in configmaps:
        raise OperatorRefusal(f"ConfigMap {ref['name']} does not exist")
    data = configmaps[ref["name"]].get(ref["key"])
    if data is None:
        raise OperatorRefusal(f"ConfigMap {ref['name']} does not contain specified key {ref['key']}")
    return json.dumps(yaml.safe_load(data), separators=(",", ":")) if data else "{}"


def trusted_keys(entry: Mapping[str, str], secrets: Mapping[str, Mapping[str, bytes]]) -> list[str]:
    """The keys of its Secret a `trustedCertificates` entry names: its `certificate`, or every key
    its `pattern` matches as a glob (Strimzi: a Java glob PathMatcher at 0.48.0 and 1.2.0
    (ReconcilerUtils), a shell glob over the mounted Secret at 0.43.0 and 0.45.0 (tls_utils.sh
    prepare_truststore); alike for key names, which hold no `/`), sorted."""
    if "certificate" in entry:
        return [entry["certificate"]]
    return sorted(k for k in secrets[entry["secretName"]] if fnmatch.fnmatchcase(k, entry["pattern"]))


def volume_files(connect: Mapping[str, Any], secrets: Secrets) -> dict[str, bytes]:
    """The files of the pod's Secret volumes (template.pod.volumes), by their path where
    connectContainer.volumeMounts mount them: what the kubelet projects (kubelet.py)."""
    template = connect["spec"].get("template", {})
    mounts = {m["name"]: m["mountPath"] for m in template.get("connectContainer", {}).get("volumeMounts", [])}
    files: dict[str, bytes] = {}
    for volume in template.get("pod", {}).get("volumes", []):
        if "secret" not in volume or volume["name"] not in mounts:
            continue
        mounted = secrets[volume["secret"]["secretName"]]
        items = volume["secret"].get("items") or [{"key": k, "path": k} for k in mounted]
        for item in items:
            files[f"{mounts[volume['name']]}/{item['path']}"] = mounted[item["key"]]
    return files


def worker(release: Release, connect: Mapping[str, Any], secrets: Secrets, rest_host: str,
           configmaps: ConfigMaps | None = None, agent: str | None = None) -> WorkerSetup:
    """The pod the operator would start for `connect`. `configmaps` (the namespace's) and
    `agent` (the exporter jar) are needed only where the KafkaConnect asks for metrics."""
    meta, spec = connect["metadata"], connect["spec"]
    name, namespace = meta["name"], meta["namespace"]
    check_volumes(release, connect)
    check_auth_secrets(connect, secrets)
    files = volume_files(connect, secrets)

    tls, auth = spec.get("tls"), spec.get("authentication")
    protocol = "SSL" if tls is not None else "PLAINTEXT"
    if auth is not None and auth["type"] in MECHANISMS:
        protocol = "SASL_SSL" if protocol == "SSL" else "SASL_PLAINTEXT"
    trusted = [(c["secretName"], trusted_keys(c, secrets)) for c in (tls or {}).get("trustedCertificates", [])]
    user = {k: _string(v) for k, v in spec.get("config", {}).items() if not connect_config_forbidden(release, k)}
    user = {**CONVERTER_DEFAULTS, **user, **names.connect_identity(spec, user)}
    props: dict[str, str] = {"bootstrap.servers": spec["bootstrapServers"]}
    env: dict[str, str] = {}
    objects: list[dict[str, Any]] = []

    def each(key: str, value: str, prefixes: tuple[str, ...] = PREFIXES) -> None:
        for p in prefixes:
            props[p + key] = value

    if release.worker_file is WorkerFile.literalStores:
        # kafka_connect_config_generator.sh: REST, plugins, the user's configuration, security.
        props.update({"rest.port": str(REST_PORT), "rest.advertised.host.name": rest_host,
                      "rest.advertised.port": str(REST_PORT), "plugin.path": "/opt/kafka/plugins"})
        props.update(user)
        each("security.protocol", protocol)
        password = random_secrets.token_urlsafe(24)  # CERTS_STORE_PASSWORD: random per pod
        if tls is not None and trusted:
            # kafka_connect_tls_prepare_certificates.sh: each trusted file imported into one PKCS12
            # with keytool -import, which reads the first certificate of a file only
            # (tls_utils.sh prepare_truststore at 0.43.0/0.45.0; keytool Main.addTrustedCert).
            # A pattern is a shell glob there (`for file in $BASEPATH/$cert`): each file it matches.
            certs = [stores.certificates(secrets[s][k].decode())[0] for s, keys in trusted for k in keys]
            for s, keys in trusted:
                for k in keys:
                    files[f"{CERTS_MOUNT}/{s}/{k}"] = secrets[s][k]
            if certs:  # none matched: no store is written, and the worker fails to open it, as there
                files[f"{STORE_DIR}/cluster.truststore.p12"] = _pkcs12(password, certs)
            each("ssl.truststore.location", f"{STORE_DIR}/cluster.truststore.p12")
            each("ssl.truststore.password", password)
            props["ssl.truststore.type"] = "PKCS12"
        if tls is not None and auth is not None and auth["type"] == "tls":
            ck = auth["certificateAndKey"]
            pair = secrets[ck["secretName"]]
            files[f"{STORE_DIR}/cluster.keystore.p12"] = _pkcs12(
                password, key_pem=pair[ck["key"]].decode(), chain_pem=pair[ck["certificate"]].decode())
            each("ssl.keystore.location", f"{STORE_DIR}/cluster.keystore.p12")
            each("ssl.keystore.password", password)
            each("ssl.keystore.type", "PKCS12")
        if auth is not None and auth["type"] in MECHANISMS:
            ps = auth["passwordSecret"]
            secret_password = secrets[ps["secretName"]][ps["password"]].decode()
            files[f"{PASSWORD_MOUNT}/{ps['secretName']}/{ps['password']}"] = secret_password.encode()
            each("sasl.mechanism", MECHANISMS[auth["type"]])
            each("sasl.jaas.config", _strimzi_jaas(auth, secret_password))
        props["consumer.client.rack"] = ""  # STRIMZI_RACK_ID, unset without rack awareness
    else:
        # KafkaConnectConfigurationBuilder: every value behind a config provider.
        each("security.protocol", protocol)
        role_secrets: list[str] = []
        if tls is not None and trusted:
            internal = f"{names.connect_component(name)}-tls-trusted-certs"
            # 0.48.0 (AbstractConnectOperator.tlsTrustedCertsSecret): every key of each named
            # Secret whose name contains ".crt", whatever the entry's certificate or pattern says,
            # raw, under `<secret>-<key>`; the worker reads them all through `*.crt`.
            copied = {f"{s}-{k}": v for s in sorted({s for s, _ in trusted}) for k, v in sorted(secrets[s].items())
                      if ".crt" in k}
            data: Mapping[str, bytes] = copied
            ref_key = "*.crt"
            if release.certificates_in_one_key:
                # `ca.crt` (0.49.0 to 1.2.0): one key holding, per entry, the first
                # certificate of its key, or of each key its pattern matches (sorted PEMs joined by
                # line breaks), re-encoded as PEM; the entries joined by line breaks
                # (ReconcilerUtils.getTrustedCertificateAsync: CertificateUtils.x509Certificate
                # reads the first; AbstractConnectOperator joins them).
                def first(value: bytes) -> str:
                    return stores.pem("CERTIFICATE", stores.certificates(value.decode())[0]).rstrip("\n")
                entries = ["\n".join(sorted(first(secrets[s][k]) for k in keys)) for s, keys in trusted]
                data, ref_key = {"ca.crt": "\n".join(entries).encode()}, "ca.crt"
            objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                            "metadata": {"name": internal, "namespace": namespace},
                            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}})
            role_secrets.append(internal)
            each("ssl.truststore.certificates", f"${{strimzisecrets:{namespace}/{internal}:{ref_key}}}")
            each("ssl.truststore.type", "PEM")
        if auth is not None and auth["type"] == "tls":
            ck = auth["certificateAndKey"]
            each("ssl.keystore.certificate.chain", f"${{strimzisecrets:{namespace}/{ck['secretName']}:{ck['certificate']}}}")
            each("ssl.keystore.key", f"${{strimzisecrets:{namespace}/{ck['secretName']}:{ck['key']}}}")
            each("ssl.keystore.type", "PEM")
            role_secrets.append(ck["secretName"])
        if auth is not None and auth["type"] in MECHANISMS:
            ps = auth["passwordSecret"]
            if release.password_through_provider:
                reference = f"${{strimzisecrets:{namespace}/{ps['secretName']}:{ps['password']}}}"
                role_secrets.append(ps["secretName"])
            else:
                reference = f"${{strimzidir:{PASSWORD_MOUNT}/{ps['secretName']}:{ps['password']}}}"
                files[f"{PASSWORD_MOUNT}/{ps['secretName']}/{ps['password']}"] = secrets[ps["secretName"]][ps["password"]]
            each("sasl.mechanism", MECHANISMS[auth["type"]])
            each("sasl.jaas.config", _strimzi_jaas(auth, reference))
        providers = user.pop("config.providers", None)
        props["config.providers"] = ",".join(filter(None, [providers, "strimzienv,strimzifile,strimzidir,strimzisecrets"]))
        props.update(STRIMZI_PROVIDERS)
        props.update(user)
        props.update({"rest.advertised.host.name": "${strimzienv:ADVERTISED_HOSTNAME}",
                      "rest.advertised.port": str(REST_PORT), "plugin.path": "/opt/kafka/plugins"})
        env["ADVERTISED_HOSTNAME"] = rest_host
        if role_secrets or release.connect_role_always:
            objects += _operator_role(name, namespace, role_secrets)
    # Stand-in: pods here share one network, so each worker's REST listener is bound to its own
    # loopback address (a pod listens on 0.0.0.0:8083 of its own).
    props["listeners"] = f"http://{rest_host}:{REST_PORT}"
    files[WORKER_FILE] = b""  # written by the caller from `properties`
    jvm_options: list[str] = []
    exporter = metrics_json(connect, configmaps) if configmaps is not None else None
    if exporter is not None:
        if agent is None:
            raise OperatorRefusal("the KafkaConnect asks for the JMX exporter and no agent jar was given")
        files[METRICS_JSON] = exporter.encode()
        env[release.metrics_enabled_env] = "true"
        # Stand-in: `<host>:<port>` instead of the port alone, the pod's own address.
        jvm_options.append(f"-javaagent:{agent}={rest_host}:{metrics.METRICS_PORT}:{METRICS_JSON}")
    return WorkerSetup(props, files, env, objects, jvm_options)


def _strimzi_jaas(auth: Mapping[str, Any], password: str) -> str:
    """The JAAS line as Strimzi writes it: quoted, not escaped (docs/heartbeats.md, known limits)."""
    return f'{LOGIN_MODULES[MECHANISMS[auth["type"]]]} required username="{auth["username"]}" password="{password}";'


def _operator_role(connect: str, namespace: str, secret_names: list[str]) -> list[dict[str, Any]]:
    """KafkaConnectCluster.generateRole / generateRoleBindingForRole: the pods' service account
    may `get` the Secrets its worker file references; with none (0.48.0 creates the Role anyway)
    the rule names no Secret, which Kubernetes reads as every Secret of the namespace."""
    sa = names.connect_component(connect)
    rule: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
    if secret_names:
        rule["resourceNames"] = secret_names
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": sa, "namespace": namespace}, "rules": [rule]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             # KafkaConnectResources.connectRoleBindingName: the component's name + "-connect-role".
             "metadata": {"name": f"{sa}-connect-role", "namespace": namespace},
             "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa}}]


def service_account(connect: Mapping[str, Any]) -> dict[str, Any]:
    """The ServiceAccount the operator creates for the Connect pods."""
    meta = connect["metadata"]
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": names.connect_component(meta["name"]), "namespace": meta["namespace"]}}


# AbstractConnectorSpec.FORBIDDEN_PARAMETERS: KafkaConnectorConfiguration drops these keys of
# `spec.config` before anything is compared or sent (`connector.plugin.version` from 0.50.0).
FORBIDDEN_CONNECTOR_OPTIONS = Release.CONNECTOR_OPTIONS_DROPPED
FORBIDDEN_CONNECTOR_OPTIONS_0_50 = (*FORBIDDEN_CONNECTOR_OPTIONS, "connector.plugin.version")
# Connector states after which updateState acts; UNASSIGNED and RESTARTING are left for a later
# reconciliation ("as these are transient, and typically lead to RUNNING, we ignore them").
SETTLED_STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED")


# Volumes the operator adds to the Connect pod itself (KafkaConnectCluster.getVolumes): the
# temporary directory and the configuration ConfigMap, named `kafka-metrics-and-logging` at 0.43.0
# and 0.45.0, `kafka-connect-configurations` from 0.48.0; `kube-api-access` at 1.2.0.
OWN_VOLUMES = ("strimzi-tmp",)
ALLOWED_MOUNT_PATH = "/mnt"


def check_volumes(release: Release, connect: Mapping[str, Any]) -> None:
    """What the operator refuses of the pod template's volumes (TemplateUtils.addAdditionalVolumes
    and addAdditionalVolumeMounts, InvalidResourceException: the KafkaConnect is NotReady): a mount
    path outside /mnt (ALLOWED_MOUNT_PATH), a volume named twice or like one of its own (its
    fixed volumes; the trusted-certificate and password volumes, named after their Secrets, on
    the releases that mount them: 0.43.0 and 0.45.0)."""
    spec = connect["spec"]
    template = spec.get("template", {})
    for mount in template.get("connectContainer", {}).get("volumeMounts", []):
        path = str(mount.get("mountPath", ""))
        if not (path == ALLOWED_MOUNT_PATH or path.startswith(ALLOWED_MOUNT_PATH + "/")):
            raise OperatorRefusal(f"volume mount {mount.get('name')}: the mount path {path} is forbidden: additional "
                                  f"volumes are mounted under {ALLOWED_MOUNT_PATH} only")
    own = set(OWN_VOLUMES)
    literal = release.worker_file is WorkerFile.literalStores
    own.add("kafka-metrics-and-logging" if literal else "kafka-connect-configurations")
    if release.v1_semantics:
        own.add("kube-api-access")
    if literal:
        own |= {c["secretName"] for c in (spec.get("tls") or {}).get("trustedCertificates", [])}
    if not release.password_through_provider:
        # AuthenticationUtils.configureClientAuthenticationVolumes (0.43.0 to 0.51.0): the
        # password or certificate Secret mounted as a volume named after it.
        auth = spec.get("authentication") or {}
        own |= {s["secretName"] for s in (auth.get("passwordSecret"), auth.get("certificateAndKey")) if s}
    seen: set[str] = set()
    for volume in template.get("pod", {}).get("volumes", []):
        name = str(volume.get("name"))
        if name in own or name in seen:
            raise OperatorRefusal(f"volume {name}: a name the operator's own volumes or another volume of the "
                                  "template already use")
        seen.add(name)


def connect_config_forbidden(release: Release, key: str) -> bool:
    """Whether the operator drops `key` of KafkaConnect.spec.config (AbstractConfiguration.
    filterForbidden: the lowercased key starts with a forbidden prefix and is no exception)."""
    lowered = key.lower()
    return lowered.startswith(release.connect_config_forbidden_prefixes) and \
        lowered not in Release.CONNECT_CONFIG_EXCEPTIONS


def check_auth_secrets(connect: Mapping[str, Any], secrets: Secrets) -> None:
    """What the operator refuses of the Secrets the KafkaConnect's authentication names: one that
    does not exist, or lacks a key (ReconcilerUtils.getValidatedSecret, 1.2.0: "Secret <name> not
    found in namespace <ns>", "Items with key(s) [...] are missing in Secret <name>";
    VertxUtil.getValidatedSecret at 0.40.0, without the namespace). It reads them while hashing
    them (authTlsHash), before the pods are touched: the reconciliation fails, the KafkaConnect
    is NotReady (InvalidConfigurationException) and running pods stay as they are. The trusted
    certificates' Secrets first, alike: the Secret, and an entry's `certificate` key (a `pattern`
    may match none) (getTrustedCertificateAsync at 1.2.0, getCertificateAsync at 0.43.0 and
    0.48.0, through validatedSecret). The Secrets the team keeps (`sasl.passwordSecret`,
    `tls.secret`) are where this can happen: the program creates its own."""
    spec = connect["spec"]
    auth = spec.get("authentication") or {}
    namespace = connect["metadata"]["namespace"]
    trusted = [(entry, ("certificate",) if "certificate" in entry else ())
               for entry in (spec.get("tls") or {}).get("trustedCertificates", [])]
    for ref, keys in (*trusted, (auth.get("passwordSecret"), ("password",)),
                      (auth.get("certificateAndKey"), ("certificate", "key"))):
        if not ref:
            continue
        found = secrets.get(ref["secretName"])
        if found is None:
            raise OperatorRefusal(f"Secret {ref['secretName']} not found in namespace {namespace}")
        missing = [ref[k] for k in keys if ref[k] not in found]
        if missing:
            raise OperatorRefusal(f"Items with key(s) [{', '.join(missing)}] are missing in Secret {ref['secretName']}")


def auth_hash(connect: Mapping[str, Any], secrets: Secrets) -> str:
    """What the operator hashes into the Connect pods' `strimzi.io/auth-hash` annotation, so that
    a change rolls the pods: the trusted certificates (each entry's key, or every key its
    pattern matches), the SASL password, the client certificate and key (VertxUtil.authTlsHash at
    0.43.0 and 0.45.0, ReconcilerUtils.authTlsHash at 0.48.0 and 1.2.0, via
    KafkaConnectAssemblyOperator.generateAuthHash). Strimzi sums Java hash codes; a digest
    stands in: only whether it changes matters."""
    check_auth_secrets(connect, secrets)
    spec = connect["spec"]
    parts: list[bytes] = []
    for entry in (spec.get("tls") or {}).get("trustedCertificates", []):
        parts += [secrets[entry["secretName"]][k] for k in trusted_keys(entry, secrets)]
    auth = spec.get("authentication") or {}
    if auth.get("type") in MECHANISMS:
        ps = auth["passwordSecret"]
        parts.append(secrets[ps["secretName"]][ps["password"]])
    elif auth.get("type") == "tls" and auth.get("certificateAndKey"):
        ck = auth["certificateAndKey"]
        parts += [secrets[ck["secretName"]][ck["certificate"]], secrets[ck["secretName"]][ck["key"]]]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def connect_version(release: Release, connect: Mapping[str, Any]) -> str:
    """The Kafka version whose Connect image the operator runs: `spec.version`, or the release's
    default (KafkaVersion.Lookup.kafkaConnectVersion via KafkaConnectCluster.fromCrd, 0.43.0 to
    1.2.0). A version the release does not support, with no `spec.image`, is refused:
    InvalidResourceException, the KafkaConnect NotReady."""
    spec = connect["spec"]
    version = str(spec.get("version") or release.default_connect_version)
    if version not in release.connect_versions and not spec.get("image"):
        raise OperatorRefusal(f"Kafka version {version} is not supported. Supported versions are: "
                              f"{', '.join(sorted(release.connect_versions))}.")
    return version


def check_connector_resources(connect: Mapping[str, Any]) -> None:
    """The operator reconciles a KafkaConnector only on a KafkaConnect annotated
    `strimzi.io/use-connector-resources: "true"`: otherwise KafkaConnectAssemblyOperator.
    reconcileConnector fails it with NoSuchResourceException (0.43.0 to 1.2.0)."""
    meta = connect["metadata"]
    if str(meta.get("annotations", {}).get(names.USE_CONNECTOR_RESOURCES, "false")).lower() != "true":
        raise OperatorRefusal(f"KafkaConnect {meta['name']} is not configured with annotation "
                              f"{names.USE_CONNECTOR_RESOURCES}")


def connector_requests(release: Release, connector: Mapping[str, Any]) -> tuple[str, dict[str, str], str]:
    """(name, the config the operator PUTs to /connectors/<name>/config, the state to set):
    AbstractConnectOperator.asJson puts the spec's config (KafkaConnectorConfiguration: forbidden
    keys dropped, values as strings), `tasks.max`, `connector.plugin.version` (1.x, from
    `spec.version`) and `connector.class`; the state follows as requests of its own."""
    spec = connector["spec"]
    forbidden = FORBIDDEN_CONNECTOR_OPTIONS_0_50 if release.plugin_version_dropped else FORBIDDEN_CONNECTOR_OPTIONS

    def dropped(key: str) -> bool:
        # 0.43.0 drops by prefix (`tasks.max.enforce` too), later releases the exact keys.
        lowered = key.lower()
        return lowered.startswith(forbidden) if release.connector_options_by_prefix else lowered in forbidden
    config = {k: _string(v) for k, v in spec.get("config", {}).items() if not dropped(k)}
    if "tasksMax" in spec:
        config["tasks.max"] = str(spec["tasksMax"])
    if "version" in spec and release.connector_plugin_version:
        config["connector.plugin.version"] = str(spec["version"])
    config["connector.class"] = spec["class"]
    return connector["metadata"]["name"], config, spec.get("state", "running")


def reconciled_at_apply(connector: Mapping[str, Any], sent: Mapping[tuple[str, str], tuple[Any, Any]],
                        reconciled: Container[tuple[str, str]]) -> bool:
    """Whether an apply of the stack (`pulumi up`) has the operator reconcile this KafkaConnector
    now: when it is new or changed since it was last reconciled (`sent`, by (namespace, name): (its
    KafkaConnect, the object)), which the operator's watch on KafkaConnectors sees (ADDED or
    MODIFIED, KafkaConnectAssemblyOperator.connectorEventHandler: 1.2.0 line 471, 0.48.0 496,
    0.43.0 534), or when its Connect cluster is in `reconciled`: its KafkaConnect changed, and every
    reconciliation of a KafkaConnect ends by reconciling its connectors (reconcileConnectors: 1.2.0
    line 199, 0.48.0 207, 0.43.0 229). Otherwise nothing the operator watches changed, and it meets
    the connector at its next periodic reconciliation only: a state set by hand on the worker
    stays until then, and a Connect cluster whose Secrets alone changed is asked nothing by the
    apply, though its old pods may be locked out by then (a worker whose group membership fails to
    authenticate exits: DistributedHerder.run, "Uncaught exception in herder work thread")."""
    meta = connector["metadata"]
    last = sent.get((meta["namespace"], meta["name"]))
    return (last is None or last[1] != connector
            or (meta["namespace"], meta["labels"][names.CLUSTER_LABEL]) in reconciled)


def needs_reconfiguring(name: str, config: Mapping[str, str], actual: Mapping[str, str]) -> bool:
    """Whether the operator PUTs `config` (connector_requests) to a connector whose
    `GET /connectors/<name>/config` answered `actual`.

    AbstractConnectOperator.maybeCreateOrUpdateConnector (Strimzi 1.2.0, lines 414-450) PUTs only
    when needsReconfiguring (lines 452-473) says so: the desired map is the spec's config as
    KafkaConnectorConfiguration reads it, plus `tasks.max` (when the spec sets it),
    `connector.plugin.version` (when it sets `version`), `name` and `connector.class`, which is
    what asJson sends plus the `name` Connect adds on a PUT; it is compared with Connect's
    answer as string maps (`!desiredConfig.equals(actualConfig)`). Connect answers with the
    config as stored, its `${provider:...}` references unresolved, so a changed value behind a
    reference is no difference. The same lines at 0.43.0 (324-342), 0.45.0 (421-439) and 0.48.0
    (523-541), without the plugin version."""
    return {**config, "name": name} != dict(actual)


def state_change(release: Release, current: str | None, wanted: str) -> str | None:
    """The request (`pause`, `stop`, `resume`, or None) that brings a connector Connect reports
    in state `current` to the spec's `wanted` state (running, paused, stopped):
    AbstractConnectOperator.updateState (1.2.0, lines 517-572; 0.43.0, lines 353-408, the same
    without the FAILED case, which 1.1.0 adds). UNASSIGNED, RESTARTING or no status: nothing."""
    target = wanted.upper()
    if current == "RUNNING":
        return {"PAUSED": "pause", "STOPPED": "stop"}.get(target)
    if current == "PAUSED":
        return {"RUNNING": "resume", "STOPPED": "stop"}.get(target)
    if current == "STOPPED":
        return {"RUNNING": "resume", "PAUSED": "pause"}.get(target)
    if current == "FAILED" and release.failed_connector_stops:
        # A FAILED connector is stopped when asked; asked to pause, the reconciliation fails.
        return "stop" if target == "STOPPED" else None
    return None


# The operator's periodic reconciliation: STRIMZI_FULL_RECONCILIATION_INTERVAL_MS, 120000 by
# default (ClusterOperatorConfig.FULL_RECONCILIATION_INTERVAL_MS, 1.2.0). Every pass reconciles
# every KafkaConnect (ClusterOperator's timer, reconcileAll: 1.2.0 lines 124-127) and so each of
# its connectors: config, state, offsets, restarts, then autoRestart (maybeCreateOrUpdateConnector,
# AbstractConnectOperator 1.2.0 lines 414-450). A KafkaConnector is also reconciled on a change of
# its own or of its KafkaConnect (reconciled_at_apply).
RECONCILIATION_SECONDS = 120.0


def min_tasks(spec: Mapping[str, Any]) -> int:
    """The tasks a connector has for certain once it has generated them. The source and checkpoint
    connectors may rightly have none (no topic, no group matches yet); the heartbeat connector has
    one unless its heartbeats are off (MirrorHeartbeatConnector.taskConfigs: none only when its
    interval is negative: `emit.heartbeats.enabled=false` or a negative interval in seconds)."""
    if spec.get("class") != ConnectorKind.heartbeat.connector_class:
        return 0
    interval = str(spec.get("config", {}).get("emit.heartbeats.interval.seconds", "1"))
    enabled = str(spec.get("config", {}).get("emit.heartbeats.enabled", "true")).lower() != "false"
    return 1 if enabled and not interval.startswith("-") else 0


def auto_restart_backoff_minutes(count: int) -> int:
    """Minutes after the `count`-th restart before the next: n² + n, at most 60 (0, 2, 6, 12, 20,
    30, 42, 56, then hourly). AbstractConnectOperator.nextAutoRestartBackOffIntervalInMinutes,
    the same at 0.43.0, 0.45.0, 0.48.0, 0.51.0 and 1.2.0."""
    return min(count * count + count, 60)


def _minutes_since(timestamp: str, now: datetime) -> int:
    """ChronoUnit.MINUTES.between(then, now) (StatusUtils.minutesDifferenceUntilNow): whole
    minutes, truncated."""
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int((now - then).total_seconds() // 60)


def auto_restart(spec: Mapping[str, Any], status: Mapping[str, Any], previous: Mapping[str, Any] | None,
                 now: datetime) -> tuple[bool, dict[str, Any] | None]:
    """What one reconciliation does with a KafkaConnector's `spec.autoRestart`, given the worker's
    `GET /connectors/<name>/status` and the KafkaConnector's last `status.autoRestart`: whether
    it restarts the connector (`POST .../restart?includeTasks=true&onlyFailed=true`) and the
    `status.autoRestart` it writes.

    AbstractConnectOperator.autoRestartFailedConnectorAndTasks (1.2.0, lines 589-633; the same
    rule at 0.43.0, 0.45.0, 0.48.0, 0.51.0): a FAILED connector or any FAILED task is restarted
    when there was no restart yet, or when fewer than `maxRestarts` were made (none: unlimited)
    and the back-off since the last one has passed (shouldAutoRestart, `>=`); the count goes up
    by one and the timestamp is now (StatusUtils.incrementAutoRestartStatus), whether the restart
    request succeeded or not. Nothing failed: the status is dropped once longer than the back-off
    has passed since the last restart (shouldResetAutoRestartStatus, `>`), kept before."""
    settings = spec.get("autoRestart") or {}
    if not settings.get("enabled"):
        return False, None
    failed = (status.get("connector") or {}).get("state") == "FAILED" or any(
        t.get("state") == "FAILED" for t in status.get("tasks") or [])
    last = (previous or {}).get("lastRestartTimestamp")
    count = int((previous or {}).get("count", 0))
    if failed:
        limit = settings.get("maxRestarts")
        if last is None or ((limit is None or count < limit)
                            and _minutes_since(last, now) >= auto_restart_backoff_minutes(count)):
            stamp = now.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
            return True, {**(previous or {}), "count": count + 1, "lastRestartTimestamp": stamp}
        return False, dict(previous or {}) or None
    if previous and last is not None and count > 0 and _minutes_since(last, now) > auto_restart_backoff_minutes(count):
        return False, None
    return False, dict(previous) if previous else None
