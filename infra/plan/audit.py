"""The audit configuration: what the replication audit checks, derived from the same plan as
the deployment, so that it checks exactly what was deployed. Plain data (JSON); no secrets:
credentials reach the audit as files of mounted Secrets (CREDENTIAL_FILES), never through this
document."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Union

# The job checks what we write against the same contract, and reads the same credential files.
from contract import lastrun
from contract.audit import CREDENTIAL_FILES, INT32, OFFSET_LAG_MAX_DEFAULT, VERSION
from contract.output_types import OutputsAudit
from infra.core import names
from infra.core.manifests import (JSON, ConfigMap, CronJob, Manifest, Namespace, NetworkPolicy, ObjectMeta,
                                  PersistentVolumeClaim, PolicyRule, Role, RoleBinding, Secret, SecretValue,
                                  ServiceAccount, meta, opaque_secret, secret_values)
from infra.core.names import AuditNames, secret_key
from infra.plan.connectors import SMT_INSERT_HEADER
from infra.plan.failover import kafka_long
from infra.plan.types import StackPlan
from infra.topology.resolution import Model, SourceSpec
from infra.topology.schema import Audit


def _cluster(topo: Model, alias: str) -> JSON:
    cluster = topo.clusters[alias]
    sec = cluster.security
    tls = sec.effective_tls
    return {"bootstrapServers": cluster.bootstrapServers,
            "securityProtocol": sec.protocol.value,
            "saslMechanism": sec.sasl.mechanism.value if sec.sasl else None,
            "saslUsername": sec.sasl.username if sec.sasl else None,
            "trust": tls.trust.value if tls else None,
            "clientCertificate": bool(tls and tls.clientCertificate)}


def _comparison(spec: SourceSpec) -> JSON:
    """How the data audit compares one connector's records. Header SMTs add headers the source
    never had (stripped before comparing); any other SMT or converter may rewrite values, so
    those connectors are compared on key, headers and timestamp only."""
    rewrites = bool(spec.converters) or any(t.type != SMT_INSERT_HEADER for t in spec.transforms)
    return {"compareValue": not rewrites,
            "stripHeaders": sorted(str(t.config["header"]) for t in spec.transforms
                                   if t.type == SMT_INSERT_HEADER and "header" in t.config)}


def _offset_lag_max(spec: SourceSpec) -> int:
    """The connector's offset.lag.max as its worker reads it (a long; MirrorSourceConfig's default
    when unset), within the audit configuration's integers: the checkpoint staleness the audit
    judges tolerates that many records (spark/checkpoints.py checkpoint_staleness)."""
    number = kafka_long(spec.config.get("offset.lag.max", OFFSET_LAG_MAX_DEFAULT))
    # Not a LONG: the worker refuses the connector before any checkpoint.
    return OFFSET_LAG_MAX_DEFAULT if number is None else min(max(number, 0), INT32)


def audited_aliases(stack_plan: StackPlan) -> list[str]:
    return sorted({a for f in stack_plan.flows for a in (f.flow.source, f.flow.target)})


def settings(audit: Audit | None) -> JSON:
    audit = audit or Audit()
    return {"window": audit.window.model_dump(), "thresholds": audit.thresholds.model_dump(),
            "pushgateway": audit.pushgateway}


def audit_config(topo: Model, stack_plan: StackPlan) -> JSON:
    flows = []
    for flow_plan in stack_plan.flows:
        flow, internal = flow_plan.flow, flow_plan.internal_topics
        # Topics the data audit leaves out on the target side: MirrorMaker 2's and Connect's own.
        storage = {t for part in flow_plan.parts for t in (part.names.config_storage_topic,
                                                          part.names.offset_storage_topic,
                                                          part.names.status_storage_topic)}
        target_internal = sorted({t for t in (internal.target_checkpoints, internal.target_heartbeats) if t} | storage)
        loop = flow_plan.loop_headers
        flows.append({
            "name": flow_plan.name,
            "sourceAlias": flow.source,
            "targetAlias": flow.target,
            "replicationPolicy": flow.policy.value,
            "topicPrefix": flow_plan.topic_prefix,
            # Several flows may write one target topic only when they say so: then records
            # from the other flows are expected there, not findings.
            "aggregation": flow.aggregation,
            "connectors": [{"name": part.names.source_connector(spec.name), "restUrl": part.names.rest_url,
                            "topics": list(spec.topics), "topicsExclude": list(spec.kafka_topics_exclude),
                            "offsetLagMax": _offset_lag_max(spec), **_comparison(spec)}
                           for part in flow_plan.parts for spec in part.spec.sources],
            "heartbeats": {"source": internal.source_heartbeats, "target": internal.target_heartbeats},
            "excludeTopics": {"source": sorted(t for t in (internal.source_offset_syncs, internal.source_heartbeats)
                                               if t),
                              "target": target_internal},
            # Bidirectional pairs: records carrying `dropped` came from the target side and are
            # never replicated back; replicated records carry `added`, stripped before comparing.
            "loopHeaders": {"added": loop[0], "dropped": loop[1]} if loop else None,
            # Read by the failover readiness check (spark/failover.py).
            "checkpointsTopic": internal.target_checkpoints,
            "failover": {"procedure": flow.failover.procedure.value},
        })
    return {"version": VERSION,
            "clusters": {alias: _cluster(topo, alias) for alias in audited_aliases(stack_plan)},
            "flows": flows,
            "settings": settings(topo.audit)}


# ----------------------------------------------------------------- the audit's Kubernetes objects

SPARK_KUBERNETES = "k8s://https://kubernetes.default.svc"
AUDIT_MODULE = "/opt/kafka-replication/spark/audit.py"  # where spark/Dockerfile installs the job
BINARY_ITEMS = {"truststore"}  # base64 in secret config, so in a Secret's `data`


AuditObject = Union[ServiceAccount, Role, RoleBinding, ConfigMap, Secret, PersistentVolumeClaim, CronJob]


@dataclass(frozen=True)
class AuditPlan:
    namespace: Namespace
    objects: tuple[AuditObject, ...]            # in the audit namespace, in creation order
    rest_policies: tuple[NetworkPolicy, ...]    # in the flows' namespaces
    outputs: OutputsAudit
    # The Kubernetes cluster it runs in, beside the Connect REST APIs it reads; None: the
    # ambient context (no `kubernetes` section).
    kubernetes: str | None = None

    def secret_keys(self) -> list[str]:
        return sorted({k for o in self.objects for v in secret_values(o) for k in v.config_keys})

    def placed(self) -> list[tuple[str | None, Manifest]]:
        return [(self.kubernetes, o) for o in (self.namespace, *self.objects, *self.rest_policies)]


def plan_audits(topo: Model, stack_plan: StackPlan) -> tuple[AuditPlan, ...]:
    """The audit of every Kubernetes cluster hosting flows, auditing those flows (their Connect
    REST APIs are reachable only there); one audit without a `kubernetes` section; none
    without an `audit` section."""
    clusters = stack_plan.kubernetes_clusters
    if not clusters:
        single = plan_audit(topo, stack_plan)
        return (single,) if single else ()
    return tuple(a for k in clusters for a in [plan_audit(topo, stack_plan.in_cluster(k), k)] if a)


def _meta(name: str, namespace: str | None) -> ObjectMeta:
    return meta(name, namespace, {**names.PART_OF, **names.AUDIT_SELECTOR})


def spark_role_rules() -> list[PolicyRule]:
    """What Spark's driver does on Kubernetes in client mode, and nothing more: it creates,
    watches and deletes its executor pods (by label: deletecollection) and the ConfigMap of
    their Spark configuration. No services (client mode has no driver service), no secrets (the
    kubelet mounts them), no persistent volume claims (none requested)."""
    return [
        {"apiGroups": [""], "resources": ["configmaps"],
         "verbs": ["create", "delete", "deletecollection", "get", "list"]},
        {"apiGroups": [""], "resources": ["pods"],
         "verbs": ["create", "delete", "deletecollection", "get", "list", "watch"]},
    ]


def _command(audit: Audit, n: AuditNames, own_secrets: list[str]) -> list[str]:
    job = ["--config", f"{names.AUDIT_CONFIG_DIR}/{names.AUDIT_CONFIG_FILE}", "--out", names.AUDIT_REPORTS_DIR,
           "--runs", "--credentials", names.AUDIT_CREDENTIALS_DIR, *(["--push"] if audit.pushgateway else [])]
    if audit.executors is None:
        # Local mode: driver and executors are threads of this pod; no Kubernetes API access.
        return [names.AUDIT_PYTHON, "-m", "spark.audit", "--master", "local[*]", *job]
    ex = audit.executors
    conf: dict[str, str] = {
        "spark.master": SPARK_KUBERNETES,
        "spark.submit.deployMode": "client",
        # Executors connect back to this pod by IP: client mode needs no driver service.
        "spark.driver.host": "$(POD_IP)",
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.port": str(names.AUDIT_DRIVER_PORT),
        "spark.driver.blockManager.port": str(names.AUDIT_BLOCK_MANAGER_PORT),
        "spark.driver.memory": audit.driverMemory,
        # Executors are owned by this pod: they go when the Job's pod goes.
        "spark.kubernetes.driver.pod.name": "$(POD_NAME)",
        "spark.kubernetes.namespace": n.namespace,
        "spark.kubernetes.container.image": audit.image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": n.service_account,
        "spark.executor.instances": str(ex.instances),
        "spark.executor.cores": str(ex.cores),
        "spark.executor.memory": ex.memory,
        **{f"spark.kubernetes.executor.label.{k}": v for k, v in names.AUDIT_SELECTOR.items()},
        # Executors read Kafka too: the same credential files at the same paths.
        # Only the audit's own Secrets: a referenced password is read by the driver alone, which
        # hands the clients' settings to the executors in the Kafka source's options (referenced
        # TLS material, read from files by the executors too, is refused with executors:
        # infra/checks/rules/referenced.py).
        **{f"spark.kubernetes.executor.secrets.{n.credentials_secret(a)}": n.credentials_dir(a)
           for a in own_secrets},
    }
    if audit.imagePullPolicy:
        conf["spark.kubernetes.container.image.pullPolicy"] = audit.imagePullPolicy.value
    args = ["/opt/spark/bin/spark-submit"]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return [*args, AUDIT_MODULE, *job]


def plan_audit(topo: Model, stack_plan: StackPlan, kubernetes: str | None = None) -> AuditPlan | None:
    audit = topo.audit
    if audit is None:
        return None
    n = AuditNames(audit.namespace)
    ns = n.namespace
    aliases = audited_aliases(stack_plan)
    # Clusters reached with credentials (PLAINTEXT ones have none: no Secret, nothing to mount).
    secret_aliases = [a for a in aliases if topo.clusters[a].security.client_items]
    objects: list[AuditObject] = [{"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": _meta(n.service_account, ns),
                                   "automountServiceAccountToken": audit.executors is not None}]
    if audit.executors:
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(n.role, ns),
                        "rules": spark_role_rules()})
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                        "metadata": _meta(n.role_binding, ns),
                        "subjects": [{"kind": "ServiceAccount", "name": n.service_account, "namespace": ns}],
                        "roleRef": {"kind": "Role", "name": n.role, "apiGroup": "rbac.authorization.k8s.io"}})
    config = audit_config(topo, stack_plan)
    objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(n.configmap, ns),
                    "data": {names.AUDIT_CONFIG_FILE: json.dumps(config, indent=2, sort_keys=True) + "\n"}})
    volumes: list[JSON] = [{"name": "config", "configMap": {"name": n.configmap}}]
    mounts: list[JSON] = [{"name": "config", "mountPath": names.AUDIT_CONFIG_DIR, "readOnly": True}]
    for alias in secret_aliases:
        items = topo.clusters[alias].security.secret_items
        sources: list[JSON] = []
        if items:
            objects.append(opaque_secret(_meta(n.credentials_secret(alias), ns), {
                CREDENTIAL_FILES[i]: SecretValue((secret_key(alias, i),), binary=i in BINARY_ITEMS) for i in items}))
            sources.append({"secret": {"name": n.credentials_secret(alias)}})
        kept: dict[str, list[JSON]] = {}
        for item, (name, key) in topo.clusters[alias].security.referenced_items.items():
            kept.setdefault(name, []).append({"key": key, "path": CREDENTIAL_FILES[item]})
        # The team's Secrets, of the same names in the audit's namespace (a pod mounts Secrets of
        # its own namespace only), projected beside ours as the same files (`password`, `ca.crt`...).
        sources += [{"secret": {"name": name, "items": items}} for name, items in sorted(kept.items())]
        volumes.append({"name": f"kafka-{alias}", "projected": {"sources": sources, "defaultMode": 0o440}}
                       if kept else
                       {"name": f"kafka-{alias}", "secret": {"secretName": n.credentials_secret(alias),
                                                            "defaultMode": 0o440}})
        mounts.append({"name": f"kafka-{alias}", "mountPath": n.credentials_dir(alias), "readOnly": True})
    claim = audit.reports.claim or n.reports_claim_default
    if not audit.reports.claim:
        spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": audit.reports.size}}}
        if audit.reports.storageClassName:
            spec["storageClassName"] = audit.reports.storageClassName
        objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(claim, ns), "spec": spec})
    volumes += [{"name": "reports", "persistentVolumeClaim": {"claimName": claim}},
                {"name": "scratch", "emptyDir": {}}]
    mounts += [{"name": "reports", "mountPath": names.AUDIT_REPORTS_DIR},
               {"name": "scratch", "mountPath": "/tmp"}]
    period = audit.period_seconds
    env: list[JSON] = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "SPARK_LOCAL_DIRS", "value": "/tmp"},
           {"name": "PYTHONUNBUFFERED", "value": "1"}]
    if audit.executors is None:
        # `python -m` starts the JVM through PySpark: the driver's heap is set here.
        env.append({"name": "PYSPARK_SUBMIT_ARGS", "value": f"--driver-memory {audit.driverMemory} pyspark-shell"})
    container: JSON = {
        "name": "audit", "image": audit.image, "command": _command(audit, n, [a for a in secret_aliases if topo.clusters[a].security.secret_items]), "env": env,
        "resources": audit.resources.model_dump(exclude_none=True), "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True},
        # The job writes its run's summary there (contract/lastrun.py); when it dies without one,
        # the kubelet keeps the log's tail instead.
        "terminationMessagePath": lastrun.TERMINATION_LOG, "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if audit.imagePullPolicy:
        container["imagePullPolicy"] = audit.imagePullPolicy.value
    if audit.executors:
        container["ports"] = [{"name": "driver", "containerPort": names.AUDIT_DRIVER_PORT},
                              {"name": "block-manager", "containerPort": names.AUDIT_BLOCK_MANAGER_PORT}]
    pod: JSON = {"serviceAccountName": n.service_account, "restartPolicy": "Never",
           "automountServiceAccountToken": audit.executors is not None,
           "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container], "volumes": volumes}
    objects.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(n.cronjob, ns), "spec": {
        "schedule": audit.schedule,
        # A run still going when the next is due: skip the next, never run two at once.
        "concurrencyPolicy": "Forbid",
        # Missed by more than this (controller down, Forbid): wait for the next slot.
        "startingDeadlineSeconds": min(600, max(60, period // 4)),
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {"metadata": {"labels": {**names.PART_OF, **names.AUDIT_SELECTOR}}, "spec": {
            # Exit 1 (findings) and 2 (could not audit) are results, not crashes: retrying rarely
            # helps, and the job already retries its reads.
            "backoffLimit": 1,
            "activeDeadlineSeconds": audit.deadline_seconds,
            "ttlSecondsAfterFinished": max(period * 3, 86400),
            "template": {"metadata": {"labels": {**names.PART_OF, **names.AUDIT_SELECTOR}}, "spec": pod},
        }},
    }})
    policies = tuple(rest_policy(n, flow_plan.name, part.names.connect, part.names.namespace)
                     for flow_plan in stack_plan.flows for part in flow_plan.parts)
    outputs: OutputsAudit = {"namespace": ns, "cronJob": n.cronjob, "schedule": audit.schedule,
               "activeDeadlineSeconds": audit.deadline_seconds, "serviceAccount": n.service_account,
               "configMap": n.configmap, "mode": "executors" if audit.executors else "local",
               "reports": {"persistentVolumeClaim": claim, "path": names.AUDIT_REPORTS_DIR,
                           "latest": f"{names.AUDIT_REPORTS_DIR}/latest/report.json",
                           "pushgateway": audit.pushgateway}}
    if kubernetes:
        outputs["kubernetesCluster"] = kubernetes
    namespace: Namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, None)}
    return AuditPlan(namespace, tuple(objects), policies, outputs, kubernetes)


def rest_policy(n: AuditNames, flow: str, connect: str, namespace: str) -> NetworkPolicy:
    """Strimzi's own policy admits only the operator (and Connect pods) to the REST API; policies
    add up, so this one admits the audit's pods to port 8083 as well."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": meta(n.rest_policy(connect), namespace, names.flow_labels(flow)),
            "spec": {"podSelector": {"matchLabels": {names.CLUSTER_LABEL: connect, "strimzi.io/kind": "KafkaConnect"}},
                     "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name":
                                                                                   n.namespace}},
                                            "podSelector": {"matchLabels": dict(names.AUDIT_SELECTOR)}}],
                                  "ports": [{"protocol": "TCP", "port": names.CONNECT_REST_PORT}]}]}}
