"""The policy pack (policy/, docs/policy.md): each policy's validation called as the engine calls it
(ResourceValidationArgs with the engine's unknown-checking props, a report_violation collector;
the pack itself is never constructed here: constructing it serves it), with the objects of the
offline renders. Every policy passes on the dev, prod and regions stacks; each fires on a bad
object with its exact message; and the program refuses, with the same rules, what the pack
refuses (infra/checks/policies.py, infra/checks/plans.py policy_problems, infra/checks/rules/).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import yaml
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from infra.checks import plans, policies, rules
from infra.core import names
from infra.core.errors import Problem, TopologyError
from infra.deploy import deployment
from infra.plan import stack as plan
from infra.tools import render
from policy import rules as pack
from tests.support.stacks import ROOT, write_topology

STACKS = ("dev", "prod", "regions")
POLICY = {p.name: p for p in pack.POLICIES}
SECRET = "hunter2-Secret-Value"
REFERENCE = "${secret:repl-us-west-us-east/source-us-west:sasl.password}"
NO_SECRET_IN_CONFIGMAP = ("expected no secret in a ConfigMap (anyone who may read ConfigMaps reads it): the value "
                          "in a Secret, and here at most a config provider reference to it "
                          "(${secret:<namespace>/<secret>:<key>}, ${file:<path>:<key>})")
NO_SECRET_IN_CONFIG = ("expected a config provider reference in its place (${secret:<namespace>/<secret>:<key>}, "
                       "${file:<path>:<key>}), the value in a Secret: whoever may read the custom resource reads its "
                       "config, and Connect's REST API shows it")
UNNAMED = ("expected the names of the objects the rule grants (resourceNames): without them a rule grants every "
           "object of its resources")


def type_token(obj: dict[str, Any]) -> str:
    group_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
    return f"kubernetes:{group_version}:{obj['kind']}"


def violations(policy: ResourceValidationPolicy, obj: dict[str, Any], resource_type: str | None = None,
               name: str = "resource") -> list[str]:
    """What `policy` reports for `obj`, called as the pack's servicer calls it (Analyze)."""
    reported: list[str] = []
    args = ResourceValidationArgs(resource_type or type_token(obj), unknown_checking_proxy(copy.deepcopy(obj)),
                                  f"urn:pulumi:test::test::{resource_type or type_token(obj)}::{name}", name,
                                  None, None)  # no options or provider: the rules read neither
    result = policy.validate(args, lambda message, urn=None: reported.append(message))
    assert result is None  # synchronous: nothing left to await
    return reported


@pytest.fixture(scope="module")
def renders() -> dict[str, render.Render]:
    return {stack: render.run(stack, placeholder_secrets=True) for stack in STACKS}


def one(renders: dict[str, render.Render], stack: str, kind: str, name: str | None = None) -> dict[str, Any]:
    """A copy of the rendered object of this kind (and name), to mutate."""
    found = [o for o in renders[stack].objects() if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert found, (stack, kind, name)
    return copy.deepcopy(found[0])


# ----------------------------------------------------------------- the renders pass


def test_the_pack_holds_one_mandatory_policy_per_rule():
    assert [p.name for p in pack.POLICIES] == [r.name for r in policies.RULES] == [
        "no-secret-values", "no-topic-renaming-transforms", "rbac-named-objects", "connect-own-group-and-topics",
        "audit-runs-alone"]
    assert {p.enforcement_level for p in pack.POLICIES} == {pack.EnforcementLevel.MANDATORY}


@pytest.mark.parametrize("stack", STACKS)
def test_every_policy_passes_on_the_render(renders, stack):
    resources = [r for r in renders[stack].resources if r.is_kubernetes]
    found = {p.name: [m for r in resources for m in violations(p, r.object(), r.type, r.name)] for p in pack.POLICIES}
    assert found == {p.name: [] for p in pack.POLICIES}
    # ... and each policy had objects of its kinds to read.
    kinds = {r.object()["kind"] for r in resources}
    assert {"ConfigMap", "KafkaConnector", "KafkaConnect", "Role", "CronJob"} <= kinds
    assert [o for o in (r.object() for r in resources) if policies.audit_cronjob(o)] != []


def test_the_program_plans_nothing_the_pack_refuses():
    for stack in STACKS:
        _, model, stack_plan, audits = deployment.prepare_file(ROOT / "stacks" / f"{stack}.yaml")
        assert plans.policy_problems(model, stack_plan, audits) == []


def test_prod_runs_the_audit_with_executors_under_the_one_exempt_role(renders):
    role = one(renders, "prod", "Role", names.AuditNames.role)
    assert policies.audit_executor_role(role)
    assert all("resourceNames" not in rule for rule in role["rules"])
    assert violations(POLICY["rbac-named-objects"], role) == []


def test_non_kubernetes_resources_are_not_read():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"password": SECRET}}
    assert violations(POLICY["no-secret-values"], config_map, "random:index/randomPassword:RandomPassword") == []


# ----------------------------------------------------------------- 1. no secret values


def test_a_literal_password_in_a_configmap(renders):
    config_map = one(renders, "dev", "ConfigMap", "source-us-west")
    config_map["data"]["sasl.password"] = SECRET
    assert violations(POLICY["no-secret-values"], config_map) == [
        "ConfigMap repl-us-west-us-east/source-us-west: data.sasl.password: got a literal value (not shown); "
        + NO_SECRET_IN_CONFIGMAP]


@pytest.mark.parametrize("key", ["secretName", "credentials-secret-ref", "mm2.password.secretName", "tlsSecretRef"])
def test_a_configmap_that_only_names_a_secret_passes(renders, key):
    """The name of a Kubernetes Secret is no secret: a key that names one, holding an object name."""
    config_map = one(renders, "dev", "ConfigMap", "replication")
    config_map["data"][key] = "kafka-mm2-credentials"
    assert violations(POLICY["no-secret-values"], config_map) == []


@pytest.mark.parametrize("key, value", [("secretName", "Not An Object Name!"), ("password", "kafka-mm2-credentials"),
                                        ("secretValue", "kafka-mm2-credentials")])
def test_a_secret_key_with_a_literal_is_still_refused(renders, key, value):
    config_map = one(renders, "dev", "ConfigMap", "replication")
    config_map["data"][key] = value
    assert violations(POLICY["no-secret-values"], config_map) == [
        f"ConfigMap repl-us-west-us-east/replication: data.{key}: got a literal value (not shown); "
        + NO_SECRET_IN_CONFIGMAP]


def test_a_password_line_in_a_file_held_by_a_configmap(renders):
    config_map = one(renders, "dev", "ConfigMap", "replication")
    config_map["data"]["client.properties"] = f"security.protocol=SASL_SSL\nssl.truststore.password = {SECRET}\n"
    (message,) = violations(POLICY["no-secret-values"], config_map)
    assert message == ("ConfigMap repl-us-west-us-east/replication: data.client.properties (line 2: "
                       "ssl.truststore.password): got a literal value (not shown); " + NO_SECRET_IN_CONFIGMAP)
    assert SECRET not in message


def test_values_and_lines_past_the_cached_length_are_read_all_the_same(renders):
    """The scan keeps its verdicts on values and lines up to policies.CACHED_VALUE characters
    (policies._value_secret); a longer file, a longer line and a longer value are read uncached,
    with the same verdicts."""
    from infra.checks import policies
    padding = "# " + "x" * policies.CACHED_VALUE
    config_map = one(renders, "dev", "ConfigMap", "replication")
    config_map["data"]["client.properties"] = f"{padding}\nssl.truststore.password = {SECRET}\n"
    config_map["data"]["long.properties"] = f"ssl.key.password = {SECRET}{'y' * policies.CACHED_VALUE}\nother=1\n"
    config_map["data"]["password"] = SECRET + "z" * policies.CACHED_VALUE
    assert violations(POLICY["no-secret-values"], config_map) == [
        "ConfigMap repl-us-west-us-east/replication: data.client.properties (line 2: ssl.truststore.password): "
        "got a literal value (not shown); " + NO_SECRET_IN_CONFIGMAP,
        "ConfigMap repl-us-west-us-east/replication: data.long.properties (line 1: ssl.key.password): "
        "got a literal value (not shown); " + NO_SECRET_IN_CONFIGMAP,
        "ConfigMap repl-us-west-us-east/replication: data.password: got a literal value (not shown); "
        + NO_SECRET_IN_CONFIGMAP]


def test_a_jaas_line_with_a_literal_password_in_a_connector(renders):
    connector = one(renders, "dev", "KafkaConnector", "repl-us-west-us-east-source")
    connector["spec"]["config"]["source.cluster.sasl.jaas.config"] = (
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="replicator" password="{SECRET}";')
    assert violations(POLICY["no-secret-values"], connector) == [
        "KafkaConnector repl-us-west-us-east/repl-us-west-us-east-source: spec.config.source.cluster.sasl.jaas.config: "
        "got a JAAS line with a literal password (not shown); " + NO_SECRET_IN_CONFIG]


@pytest.mark.parametrize("flag", ["REQUIRED", "Required", "requisite", "SUFFICIENT", "optional", "requıred"])
def test_a_jaas_control_flag_in_any_case_is_read_as_kafka_reads_it(renders, flag):
    """Kafka's JaasConfig upper-cases the control flag (Locale.ROOT): any case is a JAAS line."""
    connector = one(renders, "dev", "KafkaConnector", "repl-us-west-us-east-source")
    connector["spec"]["config"]["source.cluster.sasl.jaas.config"] = (
        f'org.apache.kafka.common.security.plain.PlainLoginModule {flag} username="replicator" password="{SECRET}";')
    assert violations(POLICY["no-secret-values"], connector) == [
        "KafkaConnector repl-us-west-us-east/repl-us-west-us-east-source: spec.config.source.cluster.sasl.jaas.config: "
        "got a JAAS line with a literal password (not shown); " + NO_SECRET_IN_CONFIG]


def test_a_jaas_line_whose_password_is_a_reference_is_fine(renders):
    connector = one(renders, "dev", "KafkaConnector", "repl-us-west-us-east-source")
    connector["spec"]["config"]["source.cluster.sasl.jaas.config"] = (
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="replicator" password="{REFERENCE}";')
    connector["spec"]["config"]["ssl.key.password"] = "${file:/opt/kafka/external-configuration/x.properties:key}"
    assert violations(POLICY["no-secret-values"], connector) == []


def test_a_pem_private_key_in_a_connect_cluster_config(renders):
    connect = one(renders, "dev", "KafkaConnect")
    connect["spec"]["config"]["ssl.keystore.key"] = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"
    assert violations(POLICY["no-secret-values"], connect) == [
        "KafkaConnect repl-us-west-us-east/repl-us-west-us-east: spec.config.ssl.keystore.key: got a PEM private key "
        "(not shown); " + NO_SECRET_IN_CONFIG]


def test_a_token_under_any_key(renders):
    connector = one(renders, "dev", "KafkaConnector", "repl-us-west-us-east-heartbeat")
    connector["spec"]["config"]["client.id"] = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl"
    connector["spec"]["config"]["sasl.oauthbearer.token.endpoint.url"] = "https://idp.example.com/token"  # a URL
    connector["spec"]["config"]["oauth.access.token"] = SECRET
    assert violations(POLICY["no-secret-values"], connector) == [
        "KafkaConnector repl-us-west-us-east/repl-us-west-us-east-heartbeat: spec.config.client.id: got a JSON Web "
        "Token (not shown); " + NO_SECRET_IN_CONFIG,
        "KafkaConnector repl-us-west-us-east/repl-us-west-us-east-heartbeat: spec.config.oauth.access.token: got a "
        "literal value (not shown); " + NO_SECRET_IN_CONFIG]


def test_an_unknown_value_is_left_for_the_update(renders):
    config_map = one(renders, "dev", "ConfigMap", "source-us-west")
    config_map["data"]["sasl.password"] = UNKNOWN_STRING_VALUE
    config_map["metadata"]["namespace"] = UNKNOWN_STRING_VALUE
    assert violations(POLICY["no-secret-values"], config_map) == []
    config_map["data"]["ssl.truststore.password"] = SECRET
    assert violations(POLICY["no-secret-values"], config_map) == [
        "ConfigMap (namespace unknown until the update)/source-us-west: data.ssl.truststore.password: got a literal "
        "value (not shown); " + NO_SECRET_IN_CONFIGMAP]


# ----------------------------------------------------------------- 2. no topic-renaming transform


@pytest.mark.parametrize("smt", ["org.apache.kafka.connect.transforms.RegexRouter",
                                 "org.apache.kafka.connect.transforms.TimestampRouter",
                                 "io.debezium.transforms.ByLogicalTableRouter",
                                 "com.example.CustomTopicRouter$Value"])
def test_a_renaming_transform_on_a_mirror_connector(renders, smt):
    connector = one(renders, "dev", "KafkaConnector", "repl-us-west-us-east-source")
    connector["spec"]["config"].update({"transforms": "mask, rename", "transforms.mask.type":
                                        "org.apache.kafka.connect.transforms.MaskField$Value",
                                        "transforms.rename.type": smt, "transforms.rename.regex": "(.*)"})
    assert violations(POLICY["no-topic-renaming-transforms"], connector) == [
        f"KafkaConnector repl-us-west-us-east/repl-us-west-us-east-source: spec.config.transforms.rename.type: got "
        f"{smt!r}; expected an SMT that keeps the record's topic: topic-renaming transforms break the replication "
        "policy (target topic names, offset syncs, checkpoints and loop detection all derive from the source topic "
        "name)"]


def test_the_pack_refuses_every_transform_the_program_calls_renaming():
    connector = {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaConnector",
                 "metadata": {"name": "by-hand", "namespace": "mm2"},
                 "spec": {"class": "MirrorSourceConnector", "config": {
                     "transforms": ",".join(f"t{i}" for i in range(len(rules.TOPIC_RENAMING_SMTS))),
                     **{f"transforms.t{i}.type": smt for i, smt in enumerate(sorted(rules.TOPIC_RENAMING_SMTS))}}}}
    assert len(violations(POLICY["no-topic-renaming-transforms"], connector)) == len(rules.TOPIC_RENAMING_SMTS)
    connector["spec"]["config"] = {"transforms": "a", "transforms.a.type": sorted(rules.TOPIC_KEEPING_SMTS)[0]}
    assert violations(POLICY["no-topic-renaming-transforms"], connector) == []


def test_other_connectors_may_route():
    sink = {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaConnector", "metadata": {"name": "s3", "namespace": "x"},
            "spec": {"class": "io.confluent.connect.s3.S3SinkConnector",
                     "config": {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter"}}}
    assert violations(POLICY["no-topic-renaming-transforms"], sink) == []


def test_the_program_refuses_a_renaming_transform_with_the_same_rule(tmp_path):
    """The topology's rule (infra/checks/rules/ _check_smts) asks the predicate the pack asks."""
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    smt = "org.apache.kafka.connect.transforms.RegexRouter"
    topology["flows"][0]["transforms"] = [{"name": "rename", "type": smt, "config": {"regex": "(.*)"}}]
    with pytest.raises(TopologyError) as caught:
        deployment.validate_file(write_topology(tmp_path, topology))
    assert [str(replace(p, line=None)) for p in caught.value.problems] == [
        f"flows[0] (repl-us-west-us-east): transforms[0].type: got {smt!r}; expected " + rules.TOPIC_KEEPING]
    assert rules.renames_topic(smt) and not rules.renames_topic("org.apache.kafka.connect.transforms.MaskField$Key")


# ----------------------------------------------------------------- 3. RBAC


def test_a_wildcard_verb_in_a_role(renders):
    role = one(renders, "dev", "Role")
    role["rules"][0]["verbs"] = ["*"]
    assert violations(POLICY["rbac-named-objects"], role) == [
        "Role repl-us-west-us-east/repl-us-west-us-east-connector-configuration: rules[0].verbs: got ['*']; expected "
        "named verbs (get, list, ...), no '*': a wildcard grants every verb, escalate, bind and impersonate included"]


def test_a_rule_without_resource_names(renders):
    role = one(renders, "dev", "Role")
    del role["rules"][1]["resourceNames"]
    role["rules"][0]["resourceNames"] = []  # Kubernetes reads an empty list as none
    assert violations(POLICY["rbac-named-objects"], role) == [
        "Role repl-us-west-us-east/repl-us-west-us-east-connector-configuration: rules[0].resourceNames: got []; "
        + UNNAMED,
        "Role repl-us-west-us-east/repl-us-west-us-east-connector-configuration: rules[1].resourceNames: missing; "
        + UNNAMED]


def test_a_cluster_role_with_wildcard_groups_and_resources():
    cluster_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": "mm2-reader"},
                    "rules": [{"apiGroups": ["*"], "resources": ["pods/*"], "verbs": ["get"], "resourceNames": ["a"]},
                              {"nonResourceURLs": ["/metrics*"], "verbs": ["get"]}]}
    assert violations(POLICY["rbac-named-objects"], cluster_role) == [
        "ClusterRole mm2-reader: rules[0].apiGroups: got ['*']; expected named API groups (\"\" for the core group), "
        "no '*': a wildcard grants every API group, those installed later included",
        "ClusterRole mm2-reader: rules[0].resources: got ['pods/*']; expected named resources, no '*' (nor a "
        "'<resource>/*' or '*/<subresource>'): a wildcard grants every resource of the groups, Secrets included",
        "ClusterRole mm2-reader: rules[1].nonResourceURLs: got ['/metrics*']; expected named URLs, no '*': a "
        "wildcard grants every path of the API server"]


def test_the_audit_role_is_exempt_only_exactly_as_written(renders):
    role = one(renders, "prod", "Role", names.AuditNames.role)
    role["rules"][1]["verbs"].append("update")
    assert violations(POLICY["rbac-named-objects"], role) == [
        f"Role replication-audit/kafka-replication-audit: rules[{i}].resourceNames: missing; " + UNNAMED for i in (0, 1)]
    unlabelled = one(renders, "prod", "Role", names.AuditNames.role)
    del unlabelled["metadata"]["labels"][next(iter(names.AUDIT_SELECTOR))]
    assert len(violations(POLICY["rbac-named-objects"], unlabelled)) == 2


def test_the_program_refuses_a_role_it_would_plan_with_a_wildcard(monkeypatch):
    """Were a generator to write what the pack refuses, the program stops before declaring anything."""
    planned = plan.role

    def wide(*args: Any) -> Any:
        role = planned(*args)
        role["rules"][0]["verbs"] = ["*"]
        return role
    monkeypatch.setattr(plan, "role", wide)
    with pytest.raises(TopologyError) as caught:
        render.run("dev", placeholder_secrets=True)
    assert [str(p) for p in caught.value.problems] == [
        "Role repl-us-west-us-east/repl-us-west-us-east-connector-configuration: rules[0].verbs: got ['*']; expected "
        "named verbs (get, list, ...), no '*': a wildcard grants every verb, escalate, bind and impersonate included"]


# ----------------------------------------------------------------- 4. a Connect cluster's own group and topics


def storage_message(field: str, default: str, given: str = "missing") -> str:
    return (f"KafkaConnect repl-us-west-us-east/repl-us-west-us-east: {field}: {given}; expected an explicit value, "
            f"this Connect cluster's own: left out, Strimzi sets {default}, and every Connect cluster on the same "
            "Kafka cluster that leaves it out shares it (one group: each runs the others' connectors and overwrites "
            "their state)")


def test_a_connect_cluster_without_its_group_and_topics(renders):
    connect = one(renders, "dev", "KafkaConnect")
    del connect["spec"]["config"]["group.id"]
    connect["spec"]["config"]["status.storage.topic"] = ""
    assert violations(POLICY["connect-own-group-and-topics"], connect) == [
        storage_message("spec.config.group.id", "connect-cluster"),
        storage_message("spec.config.status.storage.topic", "connect-cluster-status", "got ''")]


def test_a_v1_connect_cluster_names_them_in_its_spec(renders):
    connect = one(renders, "dev", "KafkaConnect")
    config = connect["spec"]["config"]
    connect["apiVersion"] = "kafka.strimzi.io/v1"
    connect["spec"].update({"groupId": config.pop("group.id"), "configStorageTopic": config.pop("config.storage.topic"),
                            "offsetStorageTopic": config.pop("offset.storage.topic"),
                            "statusStorageTopic": config.pop("status.storage.topic")})
    assert violations(POLICY["connect-own-group-and-topics"], connect) == []
    del connect["spec"]["offsetStorageTopic"]
    assert violations(POLICY["connect-own-group-and-topics"], connect) == [
        storage_message("spec.offsetStorageTopic", "connect-cluster-offsets")]


def test_a_bridge_release_connect_cluster_may_name_them_as_spec_fields_in_v1beta2(renders):
    """Strimzi 0.49-0.51 read the v1 fields in v1beta2 too, the field first (the 0.51.0 row writes
    them so); a config key still counts where the field is absent, and neither is still refused."""
    connect = one(renders, "dev", "KafkaConnect")
    config = connect["spec"]["config"]
    connect["spec"].update({"groupId": config.pop("group.id"), "configStorageTopic": config.pop("config.storage.topic")})
    assert connect["apiVersion"] == "kafka.strimzi.io/v1beta2"
    assert violations(POLICY["connect-own-group-and-topics"], connect) == []
    del connect["spec"]["groupId"]
    assert violations(POLICY["connect-own-group-and-topics"], connect) == [
        storage_message("spec.config.group.id", "connect-cluster")]


# ----------------------------------------------------------------- 5. the audit runs alone


def audit_message(given: str) -> str:
    return (f"CronJob replication-audit/kafka-replication-audit: spec.concurrencyPolicy: {given}; expected Forbid "
            "(Kubernetes' default is Allow): a run still going when the next is due must not run beside it; two "
            "would write the same reports and double the load on the clusters they read")


@pytest.mark.parametrize("stack", STACKS)
def test_the_audit_cronjob_allowing_concurrent_runs(renders, stack):
    cronjob = one(renders, stack, "CronJob", names.AuditNames.cronjob)
    cronjob["spec"]["concurrencyPolicy"] = "Allow"
    assert violations(POLICY["audit-runs-alone"], cronjob) == [audit_message("got 'Allow'")]
    del cronjob["spec"]["concurrencyPolicy"]
    assert violations(POLICY["audit-runs-alone"], cronjob) == [audit_message("missing")]


def test_an_audit_cronjob_written_by_hand_is_known_by_its_pods_labels(renders):
    cronjob = one(renders, "dev", "CronJob", names.AuditNames.cronjob)
    cronjob["metadata"]["labels"] = {}
    cronjob["spec"]["jobTemplate"]["metadata"]["labels"] = {}
    cronjob["spec"]["concurrencyPolicy"] = "Replace"
    assert violations(POLICY["audit-runs-alone"], cronjob) == [audit_message("got 'Replace'")]
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"] = {}
    assert violations(POLICY["audit-runs-alone"], cronjob) == []  # another CronJob: not the audit's


# ----------------------------------------------------------------- the program, through the same rules


def test_the_program_refuses_a_secret_it_would_write_into_a_connector(tmp_path):
    """A value of the topology's `config` that is a token is refused as the pack would refuse it,
    by `validate` and by the render (the program's path) alike, its value never shown."""
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZXBsIn0.c2lnbmF0dXJl"
    topology["flows"][0]["config"] = {"source": {"client.id": token}}
    path = write_topology(tmp_path, topology)
    expected = ["KafkaConnector repl-us-west-us-east/repl-us-west-us-east-source: spec.config.client.id: got a JSON "
                "Web Token (not shown); " + NO_SECRET_IN_CONFIG]
    for attempt in (lambda: deployment.validate_file(path),
                    lambda: render.run("dev", {"topology": str(path)}, placeholder_secrets=True)):
        with pytest.raises(TopologyError) as caught:
            attempt()
        assert [str(p) for p in caught.value.problems] == expected
        assert token not in caught.value.report()


def test_problems_name_object_field_value_and_what_is_allowed():
    (problem,) = policies.rbac_scope({"kind": "Role", "metadata": {"name": "r", "namespace": "n"},
                                      "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
    assert problem == Problem("Role n/r", "rules[0].resourceNames", None, UNNAMED.removeprefix("expected "))

