"""Passwords from Secrets the team keeps (`security.sasl.passwordSecret`): what the render
references instead of creating, what the Role grants, what the audit mounts, and every refusal
(docs/topology.md#secrets-by-reference)."""

from __future__ import annotations

import copy
import json

import pytest

from infra.checks import policies, validation
from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.plan.audit import plan_audits
from infra.plan.stack import plan
from tests.support.refusals import problems as refused
from tests.support.stacks import SECRETS, by_kind_name, doc_topology, on_release, render_topology

NS = "repl-us-west-us-east"
SOURCE_REF = {"secretName": "kafka-creds", "key": "replicator-password"}
TARGET_REF = {"secretName": "east-creds", "key": "password"}
# What stays in secret config: the stores and the registry; no password.
KEPT = {k: v for k, v in SECRETS.items() if k not in ("us-west.password", "us-east.password")}
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def referencing(flavour: str = "strimzi", version: str = "1.2.0", audit: bool = True) -> dict:
    topo = on_release(doc_topology(), flavour, version)
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"] = SOURCE_REF
    topo["clusters"]["us-east"]["security"]["sasl"]["passwordSecret"] = TARGET_REF
    if audit:
        topo["audit"] = {"image": "reg/audit:1", "schedule": "17 * * * *"}
    return topo


def _flow(render) -> dict:
    return by_kind_name([o for o in render.objects() if o["metadata"].get("namespace") == NS])


def test_passwords_by_reference_on_a_release_whose_connectors_read_the_target_s_objects(tmp_path):
    objs = _flow(render_topology(tmp_path, referencing(), secrets=KEPT, placeholder_secrets=False))
    secrets = sorted(name for kind, name in objs if kind == "Secret")
    # No target password Secret: the KafkaConnect reads the team's. The source Secret keeps the
    # truststore's password (and the heartbeat's PEM of it), no JAAS line.
    assert secrets == ["cloudera-registry", "source-us-west", "source-us-west-tls", "target-us-east-ca"]
    source = objs[("Secret", "source-us-west")]["stringData"]
    assert (sorted(source), source["ssl.truststore.password"]) == (
        ["ssl.truststore.password", "truststore-certificates.pem"], "tsp-US-WEST-71bd")
    connect = objs[("KafkaConnect", NS)]["spec"]
    assert connect["authentication"] == {"type": "plain", "username": "replicator",
                                         "passwordSecret": {"secretName": "east-creds", "password": "password"}}
    source_jaas = f'{PLAIN} required username="replicator" password="${{secret:{NS}/kafka-creds:replicator-password}}";'
    target_jaas = f'{PLAIN} required username="replicator" password="${{secret:{NS}/east-creds:password}}";'
    jaas = {kind: {k: v for k, v in objs[("KafkaConnector", f"{NS}-{kind}")]["spec"]["config"].items()
                   if k.endswith("sasl.jaas.config")} for kind in ("source", "checkpoint", "heartbeat")}
    assert jaas == {
        "source": {"source.cluster.sasl.jaas.config": source_jaas, "target.cluster.sasl.jaas.config": target_jaas},
        "checkpoint": {"source.cluster.sasl.jaas.config": source_jaas, "target.cluster.sasl.jaas.config": target_jaas},
        # The heartbeat connector writes into the source cluster (docs/heartbeats.md), its producer too.
        "heartbeat": {"target.cluster.sasl.jaas.config": source_jaas, "producer.override.sasl.jaas.config": source_jaas}}
    (secret_rule, configmap_rule) = objs[("Role", f"{NS}-connector-configuration")]["rules"]
    assert secret_rule == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                           "resourceNames": ["east-creds", "kafka-creds", "source-us-west",
                                             "target-us-east-ca"]}
    assert configmap_rule["resources"] == ["configmaps"]
    # The policy pack's secret rule reads the JAAS lines option by option: a reference is no secret.
    assert policies.problems(objs.values()) == []


def test_passwords_by_reference_where_the_worker_file_holds_the_target_s_connection(tmp_path):
    objs = _flow(render_topology(tmp_path, referencing("csm", "1.2"), secrets=KEPT, placeholder_secrets=False))
    assert objs[("KafkaConnect", NS)]["spec"]["authentication"]["passwordSecret"] == {
        "secretName": "east-creds", "password": "password"}
    config = objs[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    # The operator writes the target's JAAS line into the worker file from the team's Secret.
    assert config["target.cluster.sasl.jaas.config"] == "${file:/tmp/strimzi-connect.properties:sasl.jaas.config}"
    assert config["source.cluster.sasl.jaas.config"] == (
        f'{PLAIN} required username="replicator" password="${{secret:{NS}/kafka-creds:replicator-password}}";')
    assert ("Secret", "target-us-east-password") not in objs


def test_no_password_is_asked_for_and_none_is_written(tmp_path):
    model = validation.parse(referencing())
    stack_plan = plan(model)
    keys = deployment.secret_keys(model, stack_plan, plan_audits(model, stack_plan))
    assert keys == ["registry.password", "us-east.caCert", "us-west.truststore", "us-west.truststorePassword"]
    # Rendered with every password of the suite's secret config given anyway: none is read.
    text = json.dumps(render_topology(tmp_path, referencing(), secrets=KEPT, placeholder_secrets=False).objects())
    assert "pw-US-WEST" not in text and "pw-US-EAST" not in text


def test_the_audit_mounts_the_team_s_secret_as_its_password_file(tmp_path):
    r = render_topology(tmp_path, referencing(), secrets=KEPT, placeholder_secrets=False)
    objs = by_kind_name([o for o in r.objects() if o["metadata"].get("namespace") == "replication-audit"])
    assert objs[("Secret", "kafka-replication-audit-us-west")]["data"].keys() == {"truststore"}
    assert objs[("Secret", "kafka-replication-audit-us-west")]["stringData"].keys() == {"truststore.password"}
    assert objs[("Secret", "kafka-replication-audit-us-east")]["stringData"].keys() == {"ca.crt"}
    pod = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["kafka-us-west"] == {"name": "kafka-us-west", "projected": {"defaultMode": 0o440, "sources": [
        {"secret": {"name": "kafka-replication-audit-us-west"}},
        {"secret": {"name": "kafka-creds", "items": [{"key": "replicator-password", "path": "password"}]}}]}}
    assert volumes["kafka-us-east"]["projected"]["sources"][1] == {
        "secret": {"name": "east-creds", "items": [{"key": "password", "path": "password"}]}}


def test_a_cluster_whose_only_credential_is_a_reference_is_mounted_from_it_alone(tmp_path):
    topo = referencing()
    for alias in ("us-west", "us-east"):
        topo["clusters"][alias]["security"] = {**topo["clusters"][alias]["security"], "protocol": "SASL_PLAINTEXT"}
        topo["clusters"][alias]["security"].pop("tls")
    r = render_topology(tmp_path, topo, secrets={"registry.password": "reg-PW-88aa"}, placeholder_secrets=False)
    objs = by_kind_name(r.objects())
    assert sorted(name for kind, name in objs if kind == "Secret") == ["cloudera-registry"]
    pod = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert {v["name"]: v for v in pod["volumes"]}["kafka-us-west"] == {"name": "kafka-us-west", "projected": {
        "defaultMode": 0o440, "sources": [
            {"secret": {"name": "kafka-creds", "items": [{"key": "replicator-password", "path": "password"}]}}]}}


def test_a_reference_that_cannot_work_is_refused():
    topo = referencing()
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"] = {"secretName": "team/kafka-creds", "key": ""}
    topo["clusters"]["us-east"]["security"]["sasl"]["passwordSecret"] = {"secretName": "east-creds"}
    assert refused(topo) == [
        "clusters.us-west: security.sasl.passwordSecret.secretName: got 'team/kafka-creds'; expected the name of a "
        "Secret in the flow's own namespace: lowercase letters, digits, '-' and '.', no namespace (connectors, the "
        "operator and pods read Secrets of their own namespace only) (at most 253 characters)",
        "clusters.us-west: security.sasl.passwordSecret.key: got ''; expected a Secret key: letters, digits, '-', "
        "'_' and '.' (not '.' or '..') (at most 253 characters)",
        "clusters.us-east: security.sasl.passwordSecret.key: missing; expected a value (required)",
    ]


@pytest.mark.parametrize("name,what", [
    ("target-us-east-password", "flow repl-us-west-us-east's target password"),
    ("cloudera-registry", "the registry Secret (operator.imagePullSecret)"),
])
def test_a_reference_to_a_secret_the_program_creates_is_refused(name, what):
    topo = referencing()
    topo["clusters"]["us-east"]["security"]["sasl"]["passwordSecret"] = {"secretName": name, "key": "pass"}
    assert refused(topo) == [
        f"clusters.us-east: security.sasl.passwordSecret.secretName: got {name!r}; expected a Secret the program does "
        f"not create: in namespace {NS} it creates {name} ({what}) and would overwrite yours; rename your Secret"]


def test_the_audit_s_own_secret_names_are_refused_too():
    topo = referencing()
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"] = {
        "secretName": "kafka-replication-audit-us-west", "key": "password"}
    assert refused(topo) == [
        "clusters.us-west: security.sasl.passwordSecret.secretName: got 'kafka-replication-audit-us-west'; expected a "
        "Secret the program does not create: in namespace replication-audit it creates kafka-replication-audit-us-west "
        "(the audit's credentials for us-west) and would overwrite yours; rename your Secret"]


def test_a_password_both_referenced_and_in_secret_config_is_refused():
    model = validation.parse(referencing())
    stack_plan = plan(model)
    audits = plan_audits(model, stack_plan)
    given = {**KEPT, "us-west.password": "left-behind"}
    with pytest.raises(TopologyError) as exc:
        deployment.check(model, stack_plan, audits, given.__contains__, secret_text=given.get)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.us-west: secret config kafka-replication:us-west.password: got the secret value (not shown); "
        "expected no value: the password is read from Secret kafka-creds (key replicator-password, "
        "security.sasl.passwordSecret), never from config; remove it: pulumi config rm kafka-replication:us-west.password"]
    assert "left-behind" not in str(exc.value.report())


def test_the_documents_example_is_unchanged_without_references(tmp_path):
    # Without `passwordSecret` the passwords come from secret config, as before.
    topo = on_release(copy.deepcopy(doc_topology()), "strimzi", "1.2.0")
    objs = _flow(render_topology(tmp_path, topo, placeholder_secrets=False))
    assert objs[("Secret", "target-us-east-password")]["stringData"]["pass"] == "pw-US-EAST-c3d1"
    assert objs[("KafkaConnect", NS)]["spec"]["authentication"]["passwordSecret"] == {
        "secretName": "target-us-east-password", "password": "pass"}


def test_a_declared_version_restarts_the_readers_and_rolls_the_pods_that_authenticate_with_it(tmp_path):
    topo = referencing(audit=False)
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"] = {**SOURCE_REF, "version": "v1"}
    topo["clusters"]["us-east"]["security"]["sasl"]["passwordSecret"] = {**TARGET_REF, "version": "2026-12-03"}
    before = _flow(render_topology(tmp_path, topo, secrets=KEPT, placeholder_secrets=False))
    versions = {kind: before[("KafkaConnector", f"{NS}-{kind}")]["spec"]["config"][
        "kafka-replication.referenced.versions"] for kind in ("source", "checkpoint", "heartbeat")}
    # Each connector names the versions of what it reads: the heartbeat reads the source alone.
    assert versions == {"source": "east-creds:password=2026-12-03,kafka-creds:replicator-password=v1",
                        "checkpoint": "east-creds:password=2026-12-03,kafka-creds:replicator-password=v1",
                        "heartbeat": "kafka-creds:replicator-password=v1"}
    pod = before[("KafkaConnect", NS)]["spec"]["template"]["pod"]
    assert pod["metadata"] == {"annotations": {
        "kafka-replication.io/referenced-versions": "east-creds:password=2026-12-03",
        # Beside the uids of the program's own Secrets the pods read (components/flow.py).
        "kafka-replication.io/source-files-uid": f"uid-of-{NS}/source-us-west-tls",
        "kafka-replication.io/target-access-uid": f"uid-of-{NS}/target-us-east-ca"}}
    # The source's rotation: its readers' configs change, the Connect pods do not.
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"]["version"] = "v2"
    after = _flow(render_topology(tmp_path, topo, secrets=KEPT, placeholder_secrets=False))
    changed = sorted(name for (kind, name), o in after.items() if o != before[(kind, name)])
    assert changed == [f"{NS}-checkpoint", f"{NS}-heartbeat", f"{NS}-source"]


def test_a_version_is_a_label():
    topo = referencing()
    topo["clusters"]["us-west"]["security"]["sasl"]["passwordSecret"] = {**SOURCE_REF, "version": "rotated on 3/12"}
    assert refused(topo) == [
        "clusters.us-west: security.sasl.passwordSecret.version: got 'rotated on 3/12'; expected a version label: "
        "letters, digits, '-', '_' and '.', starting and ending with a letter or digit, such as 2026-12-03 or v2 "
        "(at most 63 characters)"]


def test_the_operator_stand_in_refuses_a_missing_secret_or_key_as_strimzi_does(tmp_path):
    """Strimzi reads the Secrets the KafkaConnect's authentication names while hashing them
    (ReconcilerUtils.getValidatedSecret, 1.2.0): a missing one fails the reconciliation, the
    KafkaConnect NotReady, before any pod changes. The stand-in refuses the same."""
    from infra.tools.rehearsal import operator

    objs = _flow(render_topology(tmp_path, referencing(), secrets=KEPT, placeholder_secrets=False))
    connect = objs[("KafkaConnect", NS)]
    ours = {name: {k: v.encode() for k, v in o.get("stringData", {}).items()}
            for (kind, name), o in objs.items() if kind == "Secret"}
    with pytest.raises(operator.OperatorRefusal) as missing:
        operator.check_auth_secrets(connect, ours)
    assert str(missing.value) == f"Secret east-creds not found in namespace {NS}"
    with pytest.raises(operator.OperatorRefusal) as no_key:
        operator.check_auth_secrets(connect, {**ours, "east-creds": {"pass": b"x"}})
    assert str(no_key.value) == "Items with key(s) [password] are missing in Secret east-creds"
    operator.check_auth_secrets(connect, {**ours, "east-creds": {"password": b"x"}})


def test_two_clusters_naming_one_secret_key_are_refused():
    topo = referencing()
    topo["clusters"]["us-east"]["security"]["sasl"]["passwordSecret"] = SOURCE_REF
    assert refused(topo) == [
        "clusters.us-west: security.sasl.passwordSecret: got 'kafka-creds:replicator-password'; expected a Secret key "
        f"no other cluster reads in namespace {NS}: clusters.us-east reads the same, and one key holds one password"]


def test_the_audit_s_executors_mount_only_the_audit_s_own_secrets(tmp_path):
    topo = referencing()
    topo["audit"]["executors"] = {"instances": 2, "cores": 1, "memory": "1g"}
    topo["clusters"]["us-east"]["security"] = {"protocol": "SASL_PLAINTEXT",
                                               "sasl": topo["clusters"]["us-east"]["security"]["sasl"]}
    r = render_topology(tmp_path, topo, secrets=KEPT, placeholder_secrets=False)
    cron = by_kind_name(r.objects())[("CronJob", "kafka-replication-audit")]
    command = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    mounted = sorted(a for a in command if a.startswith("spark.kubernetes.executor.secrets."))
    # us-east's only credential is the team's Secret: the driver reads it, no Secret of ours to mount.
    assert mounted == ["spark.kubernetes.executor.secrets.kafka-replication-audit-us-west=/etc/replication-audit/kafka/us-west"]


def test_the_failover_and_lag_commands_ask_for_a_referenced_password_s_file(tmp_path):
    from infra.tools import failover

    model = validation.parse(referencing())
    (tmp_path / "us-west").mkdir()
    problems = [str(p) for p in failover.credential_problems(model, ["us-west"], tmp_path)]
    assert problems[0] == (f"--credentials: (argument): got {str(tmp_path / 'us-west' / 'password')!r}; expected a file: "
                           "password of clusters.us-west")


def _kept_registry() -> dict:
    topo = referencing(audit=False)
    topo["operator"]["imagePullSecret"] = {"secretName": "team-registry"}
    return topo


def test_a_registry_secret_the_team_keeps_is_named_by_the_pods_and_never_created(tmp_path):
    model = validation.parse(_kept_registry())
    stack_plan = plan(model)
    # No registry password asked for: the program creates no registry Secret.
    assert deployment.secret_keys(model, stack_plan, ()) == ["us-east.caCert", "us-west.truststore",
                                                             "us-west.truststorePassword"]
    kept = {k: v for k, v in KEPT.items() if k != "registry.password"}
    objs = _flow(render_topology(tmp_path, _kept_registry(), secrets=kept, placeholder_secrets=False))
    assert sorted(name for kind, name in objs if kind == "Secret") == ["source-us-west", "source-us-west-tls",
                                                                       "target-us-east-ca"]
    pod = objs[("KafkaConnect", NS)]["spec"]["template"]["pod"]
    assert pod["imagePullSecrets"] == [{"name": "team-registry"}]


@pytest.mark.parametrize("pull,message", [
    ({"secretName": "team-registry", "username": "bot"},
     "`secretName` (a Secret your team keeps) alone, or `name`, `server` and `username` (a Secret the program "
     "creates), not both: remove username"),
    ({"name": "registry", "server": "registry.example.com"},
     "`name`, `server` and `username` (a Secret the program creates; missing username), or `secretName` alone "
     "(a Secret your team keeps)"),
])
def test_a_registry_secret_half_ours_half_kept_is_refused_by_the_model_and_the_json_schema(pull, message):
    import jsonschema

    from infra.topology.schema import json_schema

    topo = referencing(audit=False)
    topo["operator"]["imagePullSecret"] = pull
    assert refused(topo) == [f"operator: imagePullSecret: got {pull!r}; expected {message}"]
    (error,) = jsonschema.Draft202012Validator(json_schema()).iter_errors(topo)
    assert list(error.absolute_path) == ["operator", "imagePullSecret"]
    topo["operator"]["imagePullSecret"] = {"secretName": "team-registry"}
    assert list(jsonschema.Draft202012Validator(json_schema()).iter_errors(topo)) == []


def test_a_kept_registry_secret_named_as_one_the_program_creates_is_refused():
    topo = _kept_registry()
    topo["operator"]["imagePullSecret"] = {"secretName": "target-us-east-ca"}
    assert refused(topo) == [
        "operator: imagePullSecret.secretName: got 'target-us-east-ca'; expected a Secret the program does not "
        f"create: in namespace {NS} it creates target-us-east-ca (flow repl-us-west-us-east's target CA) and would "
        "overwrite yours; rename your Secret"]
