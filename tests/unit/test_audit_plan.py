"""The ReplicationAudit's objects, field by field: CronJob, RBAC, Secrets, NetworkPolicies,
outputs; and the audit section's validation."""

from __future__ import annotations

import json

import pytest

from infra.checks import validation
from infra.core.errors import TopologyError
from infra.plan.audit import audit_config, spark_role_rules
from infra.plan.stack import plan
from infra.tools import render
from tests.support.schemas import validate
from tests.support.stacks import SECRETS, by_kind_name, doc_topology, render_topology

NS = "replication-audit"
APP = {"app.kubernetes.io/name": "kafka-replication-audit"}


def _audit_render(tmp_path, audit: dict, secrets=None):
    return render_topology(tmp_path, doc_topology(audit=audit), secrets=secrets, placeholder_secrets=False)


@pytest.fixture
def local(tmp_path):
    return _audit_render(tmp_path, {"image": "reg/audit:1", "schedule": "17 * * * *"})


@pytest.fixture(scope="module")
def prod():
    return render.run("prod", placeholder_secrets=True)


def _objects(r, namespace=NS):
    return by_kind_name([o for o in r.objects() if o["metadata"].get("namespace", o["metadata"]["name"]) == namespace])


def test_local_mode_cronjob(local):
    objs = _objects(local)
    assert sorted(objs) == [("ConfigMap", "kafka-replication-audit"), ("CronJob", "kafka-replication-audit"),
                            ("Namespace", NS), ("PersistentVolumeClaim", "kafka-replication-audit-reports"),
                            ("Secret", "kafka-replication-audit-us-east"), ("Secret", "kafka-replication-audit-us-west"),
                            ("ServiceAccount", "kafka-replication-audit")]
    cron = objs[("CronJob", "kafka-replication-audit")]["spec"]
    assert {k: v for k, v in cron.items() if k != "jobTemplate"} == {
        "schedule": "17 * * * *", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 600,
        "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 3}
    job = cron["jobTemplate"]["spec"]
    assert (job["backoffLimit"], job["activeDeadlineSeconds"], job["ttlSecondsAfterFinished"]) == (1, 2880, 86400)
    assert job["activeDeadlineSeconds"] < 3600  # below the hourly period
    pod = job["template"]["spec"]
    assert job["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "kafka-replication-audit"
    assert (pod["serviceAccountName"], pod["restartPolicy"], pod["automountServiceAccountToken"]) == (
        "kafka-replication-audit", "Never", False)
    (c,) = pod["containers"]
    assert c["command"] == ["python3", "-m", "spark.audit", "--master", "local[*]",
                            "--config", "/etc/replication-audit/config/audit.json", "--out", "/reports", "--runs",
                            "--credentials", "/etc/replication-audit/kafka"]
    assert {"name": "PYSPARK_SUBMIT_ARGS", "value": "--driver-memory 1g pyspark-shell"} in c["env"]
    assert c["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    assert "ports" not in c
    assert c["volumeMounts"] == [
        {"name": "config", "mountPath": "/etc/replication-audit/config", "readOnly": True},
        {"name": "kafka-us-east", "mountPath": "/etc/replication-audit/kafka/us-east", "readOnly": True},
        {"name": "kafka-us-west", "mountPath": "/etc/replication-audit/kafka/us-west", "readOnly": True},
        {"name": "reports", "mountPath": "/reports"}, {"name": "scratch", "mountPath": "/tmp"}]
    assert pod["volumes"][1] == {"name": "kafka-us-east", "secret": {"secretName": "kafka-replication-audit-us-east",
                                                                     "defaultMode": 0o440}}
    # No executors: no Role, no API token.
    assert not any(k == "Role" for k, _ in objs)
    assert objs[("ServiceAccount", "kafka-replication-audit")]["automountServiceAccountToken"] is False


def test_credentials_only_in_secrets(local):
    objs = _objects(local)
    assert objs[("Secret", "kafka-replication-audit-us-west")]["stringData"] == {
        "password": SECRETS["us-west.password"], "truststore.password": SECRETS["us-west.truststorePassword"]}
    assert objs[("Secret", "kafka-replication-audit-us-west")]["data"] == {"truststore": SECRETS["us-west.truststore"]}
    assert objs[("Secret", "kafka-replication-audit-us-east")]["stringData"] == {
        "ca.crt": SECRETS["us-east.caCert"], "password": SECRETS["us-east.password"]}
    config = objs[("ConfigMap", "kafka-replication-audit")]["data"]["audit.json"]
    topo = validation.parse(doc_topology(audit={"image": "reg/audit:1"}))
    assert json.loads(config) == audit_config(topo, plan(topo))
    for value in SECRETS.values():
        assert value not in config
    rendered = json.dumps(local.masked_objects())
    assert [v for v in SECRETS.values() if v in rendered] == []


def test_rest_api_network_policy_in_the_flow_namespace(local):
    (policy,) = [o for o in local.objects() if o["kind"] == "NetworkPolicy"]
    assert policy["metadata"]["name"] == "repl-us-west-us-east-audit-rest"
    assert policy["metadata"]["namespace"] == "repl-us-west-us-east"
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"strimzi.io/cluster": "repl-us-west-us-east", "strimzi.io/kind": "KafkaConnect"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                               "podSelector": {"matchLabels": APP}}],
                     "ports": [{"protocol": "TCP", "port": 8083}]}]}


def test_executor_mode_spark_submit_and_driver_role(prod):
    objs = _objects(prod)
    role = objs[("Role", "kafka-replication-audit")]
    assert role["rules"] == spark_role_rules() == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "delete", "deletecollection", "get", "list"]},
        {"apiGroups": [""], "resources": ["pods"],
         "verbs": ["create", "delete", "deletecollection", "get", "list", "watch"]}]
    binding = objs[("RoleBinding", "kafka-replication-audit")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kafka-replication-audit", "namespace": NS}]
    assert binding["roleRef"] == {"kind": "Role", "name": "kafka-replication-audit",
                                  "apiGroup": "rbac.authorization.k8s.io"}
    cron = objs[("CronJob", "kafka-replication-audit")]["spec"]
    assert (cron["schedule"], cron["startingDeadlineSeconds"]) == ("*/30 * * * *", 450)
    assert cron["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 1440
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    (c,) = pod["containers"]
    cmd = c["command"]
    assert cmd[0] == "/opt/spark/bin/spark-submit"
    conf = dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")
    assert conf == {
        "spark.master": "k8s://https://kubernetes.default.svc", "spark.submit.deployMode": "client",
        "spark.driver.host": "$(POD_IP)", "spark.driver.bindAddress": "0.0.0.0", "spark.driver.port": "7078",
        "spark.driver.blockManager.port": "7079", "spark.driver.memory": "2g",
        "spark.kubernetes.driver.pod.name": "$(POD_NAME)", "spark.kubernetes.namespace": NS,
        "spark.kubernetes.container.image": "registry.example.com/kafka-replication-audit:0.1.0",
        "spark.kubernetes.container.image.pullPolicy": "IfNotPresent",
        "spark.kubernetes.authenticate.driver.serviceAccountName": "kafka-replication-audit",
        "spark.executor.instances": "3", "spark.executor.cores": "2", "spark.executor.memory": "4g",
        "spark.kubernetes.executor.label.app.kubernetes.io/name": "kafka-replication-audit",
        **{f"spark.kubernetes.executor.secrets.kafka-replication-audit-{a}": f"/etc/replication-audit/kafka/{a}"
           for a in ("archive", "eu-central", "us-east", "us-west")}}
    assert sorted(n for k, n in objs if k == "Secret") == [
        "kafka-replication-audit-archive", "kafka-replication-audit-eu-central", "kafka-replication-audit-us-east",
        "kafka-replication-audit-us-west"]
    assert objs[("Secret", "kafka-replication-audit-archive")]["stringData"].keys() == {"password"}
    assert objs[("Secret", "kafka-replication-audit-eu-central")]["stringData"].keys() == {
        "ca.crt", "client.crt", "client.key"}  # mTLS, no SASL
    assert cmd[-9:] == ["/opt/kafka-replication/spark/audit.py", "--config", "/etc/replication-audit/config/audit.json",
                        "--out", "/reports", "--runs", "--credentials", "/etc/replication-audit/kafka", "--push"]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in c["env"]
    assert c["ports"] == [{"name": "driver", "containerPort": 7078}, {"name": "block-manager", "containerPort": 7079}]
    # One NetworkPolicy per Connect cluster of every flow (split flows have several).
    connect_clusters = [c for f in prod.outputs["flows"].values() for c in f["connectClusters"]]
    policies = [o for o in prod.objects() if o["kind"] == "NetworkPolicy"]
    assert sorted((p["metadata"]["namespace"], p["metadata"]["name"]) for p in policies) == sorted(
        (c["namespace"], f"{c['name']}-audit-rest") for c in connect_clusters)


def test_every_audit_object_is_schema_valid(local, prod):
    for r in (local, prod):
        for obj in _objects(r).values():
            validate(obj)


def test_outputs(local, prod):
    assert local.outputs["audit"] == {
        "namespace": NS, "cronJob": "kafka-replication-audit", "schedule": "17 * * * *",
        "activeDeadlineSeconds": 2880, "serviceAccount": "kafka-replication-audit",
        "configMap": "kafka-replication-audit", "mode": "local",
        "reports": {"persistentVolumeClaim": "kafka-replication-audit-reports", "path": "/reports",
                    "latest": "/reports/latest/report.json", "pushgateway": None}}
    assert prod.outputs["audit"]["mode"] == "executors"
    assert prod.outputs["audit"]["reports"]["pushgateway"] == "http://pushgateway.monitoring.svc:9091"


def test_no_audit_section_no_audit(doc_render):
    assert "audit" not in doc_render.outputs
    assert not [o for o in doc_render.objects() if o["kind"] in ("CronJob", "NetworkPolicy")]


def test_existing_claim_is_used_not_created(tmp_path):
    r = _audit_render(tmp_path, {"reports": {"claim": "shared-reports"}})
    objs = _objects(r)
    assert ("PersistentVolumeClaim", "kafka-replication-audit-reports") not in objs
    pod = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert {"name": "reports", "persistentVolumeClaim": {"claimName": "shared-reports"}} in pod["volumes"]


def test_audit_section_problems_reported_together():
    with pytest.raises(TopologyError) as err:
        validation.parse(doc_topology(audit={"schedule": "*/30 * * * *", "activeDeadlineSeconds": 1800,
                                        "namespace": "repl-us-west-us-east", "reports": {"size": "lots"}}))
    # The schema refuses the size; the rules across fields still run on the rest, in one report.
    assert [str(p) for p in err.value.problems] == [
        "audit: reports.size: got 'lots'; expected 'lots' is not a quantity such as 500m, 2 or 4Gi",
        "audit: activeDeadlineSeconds: got 1800; expected less than the schedule's shortest period (1800 s): "
        "a run must end before the next one is due",
        "audit: namespace: got 'repl-us-west-us-east'; expected a namespace no flow uses"]


@pytest.mark.parametrize("schedule, message", [
    ("61 * * * *", "minute: '61' is not in 0-59"),
    ("* * *", "five fields"),
    ("0 0 30 2 *", "fires less than twice in four years"),
])
def test_bad_schedules(schedule, message):
    with pytest.raises(TopologyError, match=message):
        validation.parse(doc_topology(audit={"schedule": schedule}))


def test_audit_secrets_are_required_config(tmp_path):
    secrets = {k: v for k, v in SECRETS.items() if k != "us-west.truststorePassword"}
    with pytest.raises(TopologyError, match="us-west.truststorePassword"):
        _audit_render(tmp_path, {"image": "reg/audit:1"}, secrets=secrets)


def test_plaintext_clusters_get_no_secret_and_no_executor_mount(tmp_path):
    topo = doc_topology(audit={"executors": {"instances": 2}})
    topo["clusters"]["us-east"]["security"] = {"protocol": "PLAINTEXT"}
    topo["flows"][0]["target"] = "us-east"
    r = render_topology(tmp_path, topo, placeholder_secrets=True)
    objs = _objects(r)
    assert sorted(n for k, n in objs if k == "Secret") == ["kafka-replication-audit-us-west"]
    cmd = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"][
        "containers"][0]["command"]
    assert [a for a in cmd if "executor.secrets" in a] == [
        "spark.kubernetes.executor.secrets.kafka-replication-audit-us-west=/etc/replication-audit/kafka/us-west"]


def test_the_image_holds_what_the_cronjob_runs():
    """spark-submit runs AUDIT_MODULE, which imports the `spark` package: the Dockerfile must put
    it there and on PYTHONPATH, and bake in Spark's Kafka source (nothing is downloaded at run
    time)."""
    from pathlib import Path

    from infra.plan.audit import AUDIT_MODULE
    dockerfile = (Path(__file__).resolve().parents[2] / "spark" / "Dockerfile").read_text()
    root = AUDIT_MODULE.rsplit("/spark/", 1)[0]
    assert f"COPY spark {root}/spark" in dockerfile
    assert f"ENV PYTHONPATH={root}" in dockerfile
    # Spark's Kafka source: spark/pom.xml's jars, copied into Spark's own jar folder.
    assert "COPY spark/pom.xml" in dockerfile and "COPY --from=jars /build/jars/ /opt/spark/jars/" in dockerfile
    assert "spark-sql-kafka-0-10_2.13" in (Path(__file__).resolve().parents[2] / "spark" / "pom.xml").read_text()
