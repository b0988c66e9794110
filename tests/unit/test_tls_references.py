"""TLS material from Secrets the team keeps (`security.tls.secret`): the CA and the mTLS key pair
referenced, never read; what the render writes instead, what the Role grants, what the audit
mounts, and every refusal (docs/topology.md#secrets-by-reference)."""

from __future__ import annotations

import json

import pytest

from infra.checks import policies, validation
from infra.checks.rules import referenced
from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.plan.audit import plan_audits
from infra.plan.stack import plan
from infra.topology.schema import json_schema
from tests.support.refusals import problems as refused
from tests.support.stacks import SECRETS, by_kind_name, doc_topology, on_release, render_topology

NS = "repl-us-west-us-east"
WEST = {"secretName": "west-tls", "version": "v1"}  # cert-manager's keys: ca.crt, tls.crt, tls.key
EAST = {"secretName": "east-user", "ca": "ca.pem", "certificate": "user.crt", "key": "user.key"}  # a KafkaUser's
ONLY_REGISTRY = {"registry.password": SECRETS["registry.password"]}


def mtls(flavour: str = "strimzi", version: str = "1.2.0", audit: bool = False) -> dict:
    """Both clusters mTLS (protocol SSL), every piece of TLS material from the team's Secrets."""
    topo = on_release(doc_topology(), flavour, version)
    topo["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {"clientCertificate": True, "secret": WEST}}
    topo["clusters"]["us-east"]["security"] = {"protocol": "SSL", "tls": {"clientCertificate": True, "secret": EAST}}
    if audit:
        topo["audit"] = {"image": "reg/audit:1", "schedule": "17 * * * *"}
    return topo


def _flow(tmp_path, topo: dict) -> dict:
    r = render_topology(tmp_path, topo, secrets=ONLY_REGISTRY, placeholder_secrets=False)
    return by_kind_name([o for o in r.objects() if o["metadata"].get("namespace") == NS])


def _ssl(config: dict) -> dict:
    return {k: v for k, v in config.items() if ".ssl." in k or k.startswith("ssl.")}


def test_mtls_material_by_reference_on_a_release_whose_connectors_read_the_target_s_objects(tmp_path):
    objs = _flow(tmp_path, mtls())
    # No Secret of the program holds TLS material: the registry's is its only one.
    assert sorted(name for kind, name in objs if kind == "Secret") == ["cloudera-registry"]
    spec = objs[("KafkaConnect", NS)]["spec"]
    assert spec["tls"] == {"trustedCertificates": [{"secretName": "east-user", "certificate": "ca.pem"}]}
    assert spec["authentication"] == {"type": "tls", "certificateAndKey": {
        "secretName": "east-user", "certificate": "user.crt", "key": "user.key"}}
    # Nothing mounted: the source's material is inline PEM behind references.
    assert spec["template"] == {"pod": {"imagePullSecrets": [{"name": "cloudera-registry"}]}}
    west = {"ssl.truststore.type": f"${{cfmap:{NS}/source-us-west:ssl.truststore.type}}",
            "ssl.truststore.certificates": f"${{secret:{NS}/west-tls:ca.crt}}",
            "ssl.keystore.type": f"${{cfmap:{NS}/source-us-west:ssl.keystore.type}}",
            "ssl.keystore.certificate.chain": f"${{secret:{NS}/west-tls:tls.crt}}",
            "ssl.keystore.key": f"${{secret:{NS}/west-tls:tls.key}}"}
    east = {"ssl.truststore.type": f"${{cfmap:{NS}/target-us-east:ssl.truststore.type}}",
            "ssl.truststore.certificates": f"${{secret:{NS}/east-user:ca.pem}}",
            "ssl.keystore.type": f"${{cfmap:{NS}/target-us-east:ssl.keystore.type}}",
            "ssl.keystore.certificate.chain": f"${{secret:{NS}/east-user:user.crt}}",
            "ssl.keystore.key": f"${{secret:{NS}/east-user:user.key}}"}
    both = {**{f"source.cluster.{k}": v for k, v in west.items()}, **{f"target.cluster.{k}": v for k, v in east.items()}}
    config = {kind: objs[("KafkaConnector", f"{NS}-{kind}")]["spec"]["config"] for kind in ("source", "checkpoint",
                                                                                          "heartbeat")}
    assert _ssl(config["source"]) == both
    assert _ssl(config["checkpoint"]) == both
    # The heartbeat writes into the source (its `target.cluster.`), with the Connect framework's
    # producer overridden to the source's inline PEM over the worker's own (the target's).
    heartbeat_west = {**west, "ssl.truststore.type": f"${{cfmap:{NS}/source-us-west:heartbeat.ssl.truststore.type}}",
                      "ssl.keystore.type": f"${{cfmap:{NS}/source-us-west:heartbeat.ssl.keystore.type}}"}
    assert _ssl(config["heartbeat"]) == {**{f"target.cluster.{k}": v for k, v in west.items()},
                                         **{f"producer.override.{k}": v for k, v in heartbeat_west.items()}}
    source_cm = objs[("ConfigMap", "source-us-west")]["data"]
    assert {k: v for k, v in source_cm.items() if "ssl" in k} == {
        "ssl.truststore.type": "PEM", "ssl.keystore.type": "PEM",
        "heartbeat.ssl.truststore.type": "PEM", "heartbeat.ssl.keystore.type": "PEM"}
    # The connectors that read west's Secret restart with its version.
    assert {kind: c["kafka-replication.referenced.versions"] for kind, c in config.items()} == {
        kind: "west-tls:ca.crt=v1,west-tls:tls.crt=v1,west-tls:tls.key=v1" for kind in config}
    (secret_rule, configmap_rule) = objs[("Role", f"{NS}-connector-configuration")]["rules"]
    assert secret_rule == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                           "resourceNames": ["east-user", "west-tls"]}
    assert configmap_rule["resourceNames"] == ["replication", "source-us-west", "target-us-east"]
    assert policies.problems(objs.values()) == []


def test_no_tls_material_is_asked_for_and_none_is_written(tmp_path):
    model = validation.parse(mtls(audit=True))
    stack_plan = plan(model)
    assert deployment.secret_keys(model, stack_plan, plan_audits(model, stack_plan)) == ["registry.password"]
    # Rendered with the rest of the suite's secret config given anyway (a value of a referenced
    # item is refused: test_material_both_referenced_and_in_secret_config_is_refused): no
    # certificate or key is written anywhere.
    given = {k: v for k, v in SECRETS.items() if k not in (
        "us-west.clientCert", "us-west.clientKey", "us-east.caCert", "us-east.clientCert", "us-east.clientKey")}
    text = json.dumps(render_topology(tmp_path, mtls(audit=True), secrets=given, placeholder_secrets=False).objects())
    assert "-----BEGIN" not in text


def test_a_declared_version_rolls_the_pods_that_authenticate_with_the_target_s_pair(tmp_path):
    topo = mtls()
    topo["clusters"]["us-east"]["security"]["tls"]["secret"] = {**EAST, "version": "2026-12-06"}
    pod = _flow(tmp_path, topo)[("KafkaConnect", NS)]["spec"]["template"]["pod"]
    assert pod["metadata"] == {"annotations": {"kafka-replication.io/referenced-versions":
                                               "east-user:ca.pem=2026-12-06,east-user:user.crt=2026-12-06,"
                                               "east-user:user.key=2026-12-06"}}


def test_the_audit_projects_the_team_s_keys_as_its_credential_files(tmp_path):
    r = render_topology(tmp_path, mtls(audit=True), secrets=ONLY_REGISTRY, placeholder_secrets=False)
    objs = by_kind_name([o for o in r.objects() if o["metadata"].get("namespace") == "replication-audit"])
    assert [name for kind, name in objs if kind == "Secret"] == []
    pod = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["kafka-us-east"] == {"name": "kafka-us-east", "projected": {"defaultMode": 0o440, "sources": [
        {"secret": {"name": "east-user", "items": [{"key": "ca.pem", "path": "ca.crt"},
                                                   {"key": "user.crt", "path": "client.crt"},
                                                   {"key": "user.key", "path": "client.key"}]}}]}}
    assert volumes["kafka-us-west"]["projected"]["sources"] == [
        {"secret": {"name": "west-tls", "items": [{"key": "ca.crt", "path": "ca.crt"},
                                                  {"key": "tls.crt", "path": "client.crt"},
                                                  {"key": "tls.key", "path": "client.key"}]}}]


def test_the_team_s_secrets_to_sync_name_every_key_and_what_it_holds():
    model = validation.parse(mtls(audit=True))
    assert referenced.kept_keys(model) == {
        (None, NS, "east-user"): {"ca.pem": ("us-east", "caCert"), "user.crt": ("us-east", "clientCert"),
                            "user.key": ("us-east", "clientKey")},
        (None, NS, "west-tls"): {"ca.crt": ("us-west", "caCert"), "tls.crt": ("us-west", "clientCert"),
                           "tls.key": ("us-west", "clientKey")},
        (None, "replication-audit", "east-user"): {"ca.pem": ("us-east", "caCert"), "user.crt": ("us-east", "clientCert"),
                                             "user.key": ("us-east", "clientKey")},
        (None, "replication-audit", "west-tls"): {"ca.crt": ("us-west", "caCert"), "tls.crt": ("us-west", "clientCert"),
                                            "tls.key": ("us-west", "clientKey")}}


@pytest.mark.parametrize("trust, key, unread", [("jks", "ca", "`ca`"), ("pem", "truststore", "`truststore`"),
                                                ("pem", "truststorePassword", "`truststorePassword`")])
def test_a_secret_key_its_trust_does_not_read_is_refused_by_the_model_and_the_json_schema(trust, key, unread):
    import jsonschema

    topo = mtls()
    tls = topo["clusters"]["us-west"]["security"]["tls"]
    tls["trust"], tls["secret"] = trust, {**WEST, key: "x.key"}
    assert refused(topo)[0] == (
        f"clusters.us-west: security.tls: got {tls!r}; expected only the `secret` keys `trust: {trust}` reads (`ca` "
        f"with `pem`; `truststore` and `truststorePassword` with `jks` or `pkcs12`): remove {unread}")
    errors = list(jsonschema.Draft202012Validator(json_schema()).iter_errors(topo))
    # `tls` may be null too (anyOf): the branch for an object is the one that says why.
    (error,) = errors
    assert list(error.absolute_path) == ["clusters", "us-west", "security", "tls"]
    del tls["secret"][key]
    assert list(jsonschema.Draft202012Validator(json_schema()).iter_errors(topo)) == []


def test_the_heartbeat_over_a_worker_of_store_files_is_refused():
    # CSM 1.2 (Strimzi 0.43): the worker sets the target's PKCS12 stores, which the heartbeat's
    # producer must override with a JKS store made from the source's PEM at deploy time.
    assert refused(mtls("csm", "1.2")) == [
        "clusters.us-west: security.tls.secret: got 'west-tls'; expected TLS material in secret config "
        "(`<alias>.caCert`...): flow repl-us-west-us-east's heartbeat connector reads it as a JKS store over the csm "
        "1.2 worker's store files (its target us-east uses TLS), made at deploy time from the value, which a "
        "reference never shows; or a release from Strimzi 0.47, whose worker sets inline PEM"]
    # Over a PLAINTEXT target the worker sets no store: the heartbeat's inline PEM stands alone.
    topo = mtls("csm", "1.2")
    topo["clusters"]["us-east"]["security"] = {"protocol": "PLAINTEXT"}
    model = validation.parse(topo)
    heartbeat = next(c for c in plan(model).flows[0].parts[0].connectors if c.manifest["metadata"]["name"].endswith(
        "heartbeat"))
    assert heartbeat.config["producer.override.ssl.truststore.certificates"] == f"${{secret:{NS}/west-tls:ca.crt}}"


def test_the_audit_s_executors_are_refused_with_material_by_reference():
    topo = mtls(audit=True)
    topo["audit"]["executors"] = {"instances": 2, "cores": 1, "memory": "1g"}
    assert refused(topo) == [
        f"audit: executors.instances: got 2; expected no `executors` (local mode) while clusters.{alias} takes its "
        f"TLS material from Secret {secret} (security.tls.secret): Spark mounts the audit's own Secrets on its "
        "executors, not yours; or the material in secret config"
        for alias, secret in (("us-east", "east-user"), ("us-west", "west-tls"))]


def test_a_reference_to_a_secret_the_program_creates_is_refused():
    topo = mtls()
    topo["clusters"]["us-west"]["security"]["tls"]["secret"] = {"secretName": "source-us-west"}
    assert refused(topo) == [
        "clusters.us-west: security.tls.secret.secretName: got 'source-us-west'; expected a Secret the program does "
        f"not create: in namespace {NS} it creates source-us-west (flow repl-us-west-us-east's source Secret) and "
        "would overwrite yours; rename your Secret"]


def test_material_both_referenced_and_in_secret_config_is_refused():
    model = validation.parse(mtls())
    stack_plan = plan(model)
    given = {**ONLY_REGISTRY, "us-east.caCert": SECRETS["us-east.caCert"]}
    with pytest.raises(TopologyError) as exc:
        deployment.check(model, stack_plan, (), given.__contains__, secret_text=given.get)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.us-east: secret config kafka-replication:us-east.caCert: got the secret value (not shown); "
        "expected no value: the CA certificate is read from Secret east-user (key ca.pem, security.tls.secret), "
        "never from config; remove it: pulumi config rm kafka-replication:us-east.caCert"]
    assert "BEGIN CERTIFICATE" not in str(exc.value.report())


def test_the_operator_stand_in_refuses_a_missing_trusted_secret_or_key_as_strimzi_does(tmp_path):
    """Strimzi reads each trusted certificate's Secret before the authentication's
    (ReconcilerUtils.getTrustedCertificateAsync through validatedSecret, 1.2.0): a missing Secret
    or `certificate` key fails the reconciliation, the KafkaConnect NotReady."""
    from infra.tools.rehearsal import operator

    connect = _flow(tmp_path, mtls())[("KafkaConnect", NS)]
    with pytest.raises(operator.OperatorRefusal) as missing:
        operator.check_auth_secrets(connect, {})
    assert str(missing.value) == f"Secret east-user not found in namespace {NS}"
    with pytest.raises(operator.OperatorRefusal) as no_key:
        operator.check_auth_secrets(connect, {"east-user": {"ca.crt": b"x", "user.crt": b"x", "user.key": b"x"}})
    assert str(no_key.value) == "Items with key(s) [ca.pem] are missing in Secret east-user"
    operator.check_auth_secrets(connect, {"east-user": {"ca.pem": b"x", "user.crt": b"x", "user.key": b"x"}})
