"""The API-server tier: every rendered object against a real kube-apiserver (v1.37.2, the pin of
tools/engine/kube-apiserver/go.mod), and the RBAC the renders create proven with
SubjectAccessReviews against its real authorizer.

The server is built by tools/engine/build.sh (`make engine`) and started per session on loopback
(infra/tools/rehearsal/apiserver.py). Without it these tests skip; with APISERVER_REQUIRED=1 (set by
.ci/run) they fail instead, so CI cannot pass without the server. Every object, the audit's
batch/v1 CronJob included, is sent as a dry run with strict field validation, so the server itself
refuses a misspelt field; what it returns is compared with what was sent as a second check. The
Strimzi CRDs' CEL rules (x-kubernetes-validations) are kept and enforced (docs/apiserver.md).
"""

from __future__ import annotations

import base64
import copy
import time
from collections import Counter

import pytest
import yaml

from infra.core import names
from infra.core.releases import SUPPORTED, Release
from infra.plan import monitoring
from infra.tools import render
from infra.tools.rehearsal.apiserver import ServerError, apiserver_binary, kubeconfig, start_many, stop
from infra.tools.rehearsal.kube import install_crds
from infra.tools.rehearsal.local import on_release
from infra.tools.rehearsal.kubeapi import ApiError, Client, service_account_user
from tests.support.prometheus import CRD_BASE, grafana_crds, prometheus_crds
from tests.support.references import REF
from tests.support.schemas import release_of_objects, strimzi_crds
from tests.support.stacks import APISERVER_COUNTS as COUNTS, ROOT, render_topology, unavailable
from tests.support.variants import STACKS, variant_topologies

pytestmark = pytest.mark.apiserver


def _release(line: str) -> Release:
    return next(r for r in SUPPORTED if r.strimzi == line)


def flavour_of(objects: list[dict]) -> str:
    """The Strimzi line of a render's release (0.43.0 for CSM 1.2, 0.45.0 for CSM 1.4...)."""
    return release_of_objects(objects).strimzi


def dropped(sent, returned, path: str = "") -> list[str]:
    """Fields we sent that the server did not keep. Without strict field validation the server
    prunes unknown fields (custom resources by their structural schema, core kinds by decoding)
    with a warning only; with it, this is the second check: whatever it accepted, it kept."""
    if isinstance(sent, dict) and isinstance(returned, dict):
        out = []
        for key, value in sent.items():
            if key not in returned:
                out.append(f"{path}.{key}")
            else:
                out += dropped(value, returned[key], f"{path}.{key}")
        return out
    if isinstance(sent, list) and isinstance(returned, list):
        if len(sent) != len(returned):
            return [f"{path}: {len(sent)} items sent, {len(returned)} kept"]
        return [d for i, (s, r) in enumerate(zip(sent, returned)) for d in dropped(s, r, f"{path}[{i}]")]
    return []


def as_stored(obj: dict) -> dict:
    """What the server stores for what we send: stringData is written into data."""
    if obj["kind"] != "Secret" or "stringData" not in obj:
        return obj
    obj = copy.deepcopy(obj)
    for key, value in obj.pop("stringData").items():
        obj.setdefault("data", {})[key] = base64.b64encode(value.encode()).decode()
    return obj


MONITORING_GROUP = "monitoring.coreos.com"
GRAFANA_GROUP = "grafana.integreatly.org"


def ready_for(client: Client, objects: list[dict]) -> int:
    """The render's CRD flavour installed and its namespaces created (for real); returns how
    many namespaces. The Prometheus Operator's CRDs only where the render has its objects."""
    install_crds(client, strimzi_crds(release_of_objects(objects)))
    if any(o["apiVersion"].startswith(f"{MONITORING_GROUP}/") for o in objects):
        prometheus_crds(client, True)
    if any(o["apiVersion"].startswith(f"{GRAFANA_GROUP}/") for o in objects):
        grafana_crds(client, True)
    namespaces = [o for o in objects if o["kind"] == "Namespace"]
    for ns in namespaces:
        client.ensure(ns)
    return len(namespaces)


def apply(client: Client, objects: list[dict]) -> Counter:
    """Namespaces for real, everything else as a server-side dry run with strict field
    validation; every object must be accepted whole. Returns counts by how each object was
    checked."""
    counts: Counter = Counter({"namespaces created": ready_for(client, objects)})
    for obj in objects:
        if obj["kind"] == "Namespace":
            continue
        returned = client.create(obj, dry_run=True, strict=True)
        lost = dropped(as_stored(obj), returned)
        assert not lost, f"{obj['kind']} {obj['metadata']['name']}: the server dropped {lost}"
        counts["objects accepted by dry run"] += 1
    return counts


def renders(tmp_path_factory) -> dict[str, list[dict]]:
    out = {}
    for s in STACKS:
        if s in SEVERAL_CLUSTERS:
            continue  # one API server per Kubernetes cluster: test_each_cluster_receives_its_own_objects
        out[f"stack {s}"] = render.run(s, placeholder_secrets=True).objects()
    for name, topo in sorted(variant_topologies().items()):
        out[f"variant {name}"] = render_topology(tmp_path_factory.mktemp(name), topo, secrets={}).objects()
    # Grouped by flavour: CRDs are swapped once per group.
    return dict(sorted(out.items(), key=lambda kv: (flavour_of(kv[1]), kv[0])))


@pytest.fixture(scope="module")
def all_renders(tmp_path_factory) -> dict[str, list[dict]]:
    return renders(tmp_path_factory)


def test_every_object_of_every_render_is_accepted(apiserver, all_renders):
    assert {flavour_of(objs) for objs in all_renders.values()} == {"0.43.0", "0.45.0", "0.48.0", "0.51.0", "1.2.0"}
    # The audit's CronJob is among the objects, and the server serves batch/v1 CronJob: it is
    # checked by the server like every other object.
    assert any(o["kind"] == "CronJob" for objs in all_renders.values() for o in objs)
    assert apiserver.resource("batch/v1", "CronJob") is not None
    total: Counter = Counter()
    for name, objects in all_renders.items():
        counts = apply(apiserver, objects)
        assert sum(counts.values()) == len(objects), name
        total += counts
    COUNTS.update(total)
    COUNTS["renders applied"] += len(all_renders)
    assert total["objects accepted by dry run"] > 100


# ------------------------------------------------------------------ the tier can fail


def _first(objects, kind):
    return copy.deepcopy(next(o for o in objects if o["kind"] == kind))


def _stack(all_renders, flavour: str) -> list[dict]:
    return next(objs for name, objs in all_renders.items() if name.startswith("variant doc") and flavour_of(objs) == flavour)


BROKEN = {
    # Structural CRD validation (what jsonschema-only checks could also see)...
    "v1 KafkaConnect without groupId": ("1.2.0", "KafkaConnect", lambda o: o["spec"].pop("groupId")),
    "replicas as a string": ("1.2.0", "KafkaConnect", lambda o: o["spec"].update(replicas="three")),
    "unknown authentication type": ("0.48.0", "KafkaConnect",
                                    lambda o: o["spec"]["authentication"].update(type="kerberos")),
    # ...and what only the server knows: names, required core fields, references of RBAC.
    "ConfigMap name not DNS-1123": ("0.48.0", "ConfigMap", lambda o: o["metadata"].update(name="Source_US")),
    "Role rule without verbs": ("0.48.0", "Role", lambda o: o["rules"][0].pop("verbs")),
    "RoleBinding to a ClusterRole kind misspelt": ("0.48.0", "RoleBinding",
                                                   lambda o: o["roleRef"].update(kind="Rol")),
    "object in a namespace that does not exist": ("0.48.0", "Secret",
                                                  lambda o: o["metadata"].update(namespace="no-such-namespace")),
    "Secret data not base64": ("0.48.0", "Secret",
                               lambda o: (o.pop("stringData", None), o.update(data={"password": "not base64!"}))),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_objects_are_rejected(apiserver, all_renders, case):
    folder, kind, break_it = BROKEN[case]
    objects = _stack(all_renders, folder)
    ready_for(apiserver, objects)
    obj = _first(objects, kind)
    apiserver.create(obj, dry_run=True, strict=True)
    break_it(obj)
    with pytest.raises(ApiError) as err:
        apiserver.create(obj, dry_run=True, strict=True)
    assert err.value.status in (400, 404, 422), err.value
    COUNTS["broken objects rejected"] += 1


def refused_as_unknown(client: Client, obj: dict, field: str) -> None:
    """Strict field validation: the server refuses the object, naming the unknown field."""
    version = obj["apiVersion"].rsplit("/", 1)[-1]
    with pytest.raises(ApiError) as err:
        client.create(obj, dry_run=True, strict=True)
    assert (err.value.status, err.value.body["message"]) == (
        400, f'{obj["kind"]} in version "{version}" cannot be handled as a {obj["kind"]}: '
             f'strict decoding error: unknown field "{field}"')


def test_a_misspelt_field_is_refused_and_would_be_caught_as_dropped(apiserver, all_renders):
    """A misspelt field, in a custom resource and in a core kind: with strict field validation
    the server refuses it; without, it accepts and prunes it, and the comparison of what it
    keeps with what was sent (the tier's second check) still fails the object."""
    objects = _stack(all_renders, "1.2.0")
    ready_for(apiserver, objects)
    connector = _first(objects, "KafkaConnector")
    connector["spec"]["taskMax"] = connector["spec"].pop("tasksMax")
    refused_as_unknown(apiserver, connector, "spec.taskMax")
    assert dropped(connector, apiserver.create(connector, dry_run=True)) == [".spec.taskMax"]
    role = _first(objects, "Role")
    role["rules"][0]["resourceName"] = role["rules"][0].pop("resourceNames")
    refused_as_unknown(apiserver, role, "rules[0].resourceName")
    assert dropped(role, apiserver.create(role, dry_run=True)) == [".rules[0].resourceName"]
    COUNTS["broken objects rejected"] += 2


def cel_rules(schema) -> list[str]:
    """The CEL rules (x-kubernetes-validations) of a CRD's schemas."""
    if isinstance(schema, dict):
        own = [v["rule"] for v in schema.get("x-kubernetes-validations", [])]
        return own + [r for k, v in schema.items() if k != "x-kubernetes-validations" for r in cel_rules(v)]
    if isinstance(schema, list):
        return [r for v in schema for r in cel_rules(v)]
    return []


@pytest.mark.parametrize("flavour", ["0.48.0", "1.2.0"])
def test_the_strimzi_cel_rules_are_kept_and_enforced(apiserver, all_renders, flavour):
    """The KafkaConnect CRD's CEL rules are stored as sent, and enforced: JMX Prometheus
    metrics without the ConfigMap that configures them are refused with the rule's message."""
    objects = _stack(all_renders, flavour)
    ready_for(apiserver, objects)
    sent = next(crd for crd in (yaml.safe_load(p.read_text()) for p in sorted(strimzi_crds(_release(flavour)).glob("*.yaml")))
                if crd["spec"]["names"]["kind"] == "KafkaConnect")
    status, stored = apiserver.request("GET", f"{CRD_BASE}/{sent['metadata']['name']}")
    assert status == 200
    assert sorted(cel_rules(stored["spec"])) == sorted(cel_rules(sent["spec"]))  # the server sorts keys
    assert "self.type != 'jmxPrometheusExporter' || has(self.valueFrom)" in cel_rules(sent["spec"])
    connect = _first(objects, "KafkaConnect")
    assert connect["spec"]["metricsConfig"]["type"] == "jmxPrometheusExporter"
    apiserver.create(connect, dry_run=True, strict=True)
    connect["spec"]["metricsConfig"].pop("valueFrom")
    with pytest.raises(ApiError) as err:
        apiserver.create(connect, dry_run=True, strict=True)
    assert (err.value.status, err.value.body["message"]) == (
        422, f'KafkaConnect.kafka.strimzi.io "{connect["metadata"]["name"]}" is invalid: '
             "spec.metricsConfig: Invalid value: valueFrom property is required")
    COUNTS["broken objects rejected"] += 1


def test_a_bridge_release_connect_cluster_keeps_its_group_under_an_operator_rolled_back(apiserver, tmp_path):
    """An operator rolled back from 0.51.0 to 0.48.0 (its CRDs applied again before step 3): the
    API server prunes the spec fields 0.48.0's schema lacks, for real, and what its operator reads
    (the spec.config keys alone) is still this Connect cluster's group and topics, because the
    program writes them in both places on the bridge (releases.py connect_identity_in_config).
    Without the keys it would be Strimzi's defaults: a new group, sharing them with every Connect
    cluster that has fallen back to them (docs/operations.md#rolling-back-the-operator)."""
    topology = on_release(yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text()), "strimzi", "0.51.0")
    objects = render_topology(tmp_path, topology).objects()
    connect = _first(objects, "KafkaConnect")
    fields = {s.key: connect["spec"][s.field] for s in names.CONNECT_STORAGE}
    assert {s.key: connect["spec"]["config"][s.key] for s in names.CONNECT_STORAGE} == fields
    install_crds(apiserver, strimzi_crds(_release("0.48.0")))
    (namespace,) = [o for o in objects if o["kind"] == "Namespace"
                    and o["metadata"]["name"] == connect["metadata"]["namespace"]]
    apiserver.ensure(namespace)
    try:
        stored = apiserver.create(connect)
        assert not {s.field for s in names.CONNECT_STORAGE} & set(stored["spec"])  # pruned: 0.48.0 has none
        assert names.connect_identity({}, stored["spec"]["config"]) == fields
        apiserver.remove(connect)
        without = copy.deepcopy(connect)
        for storage in names.CONNECT_STORAGE:
            del without["spec"]["config"][storage.key]
        stored = apiserver.create(without)
        assert names.connect_identity({}, stored["spec"]["config"]) == {
            "group.id": "connect-cluster", "config.storage.topic": "connect-cluster-configs",
            "offset.storage.topic": "connect-cluster-offsets", "status.storage.topic": "connect-cluster-status"}
        apiserver.remove(without)
    finally:
        install_crds(apiserver, strimzi_crds(_release("0.51.0")))


# ------------------------------------------------------------------ the Prometheus Operator's objects


def test_monitoring_objects_are_accepted_and_checked(apiserver, all_renders):
    """The dev stack's PodMonitor and PrometheusRule against the operator's CRDs; broken ones
    refused, a misspelt field refused by strict field validation and caught as dropped without."""
    objects = all_renders["stack dev"]
    ready_for(apiserver, objects)
    monitors = [o for o in objects if o["apiVersion"].startswith(f"{MONITORING_GROUP}/")]
    assert sorted(o["kind"] for o in monitors) == ["PodMonitor", "PrometheusRule"]
    for obj in monitors:
        assert dropped(obj, apiserver.create(obj, dry_run=True, strict=True)) == []
    pod_monitor = _first(objects, "PodMonitor")
    pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] = 9404  # the CRD wants the port's name
    rule = _first(objects, "PrometheusRule")
    rule["spec"]["groups"][0]["rules"][0].pop("expr")              # every rule needs an expression
    for broken in (pod_monitor, rule):
        with pytest.raises(ApiError) as err:
            apiserver.create(broken, dry_run=True, strict=True)
        assert err.value.status == 422, err.value
    typo = _first(objects, "PodMonitor")
    typo["spec"]["podMetricEndpoints"] = typo["spec"].pop("podMetricsEndpoints")
    refused_as_unknown(apiserver, typo, "spec.podMetricEndpoints")
    assert dropped(typo, apiserver.create(typo, dry_run=True)) == [".spec.podMetricEndpoints"]
    COUNTS["broken objects rejected"] += 3


def test_the_grafana_dashboard_is_accepted_and_its_selector_cannot_be_updated(apiserver, all_renders):
    """The prod stack's GrafanaDashboard against grafana-operator's CRD, created for real; an
    update of its instanceSelector or uid is refused by the CRD's own rules (CEL, evaluated by the
    API server against the stored object), which is why the program replaces the object when one
    changes (components/monitoring.py, GRAFANA_DASHBOARD_IMMUTABLE) and the engine tier sees it
    replaced (tests/engine/test_engine.py)."""
    objects = all_renders["stack prod"]
    ready_for(apiserver, objects)
    dashboard = _first(objects, "GrafanaDashboard")
    assert dropped(dashboard, apiserver.create(dashboard, dry_run=True, strict=True)) == []
    apiserver.create(dashboard)
    try:
        path = f"/apis/{GRAFANA_GROUP}/v1beta1/namespaces/{dashboard['metadata']['namespace']}/grafanadashboards/" \
               f"{dashboard['metadata']['name']}"
        for field, value, message in (
                ("instanceSelector", {"matchLabels": {"dashboards": "other"}}, "spec.instanceSelector is immutable"),
                ("uid", "another-uid", "spec.uid is immutable")):
            status, live = apiserver.request("GET", path)
            assert status == 200
            changed = copy.deepcopy(live)
            changed["spec"][field] = value
            status, body = apiserver.request("PUT", path, changed)
            assert status == 422 and message in body["message"], (field, status, body)
            COUNTS["broken objects rejected"] += 1
        # What may change in place does: the dashboard's JSON, its folder.
        status, live = apiserver.request("GET", path)
        live["spec"]["folder"] = "Replication"
        assert apiserver.request("PUT", path, live)[0] == 200
    finally:
        apiserver.remove(dashboard)
    assert monitoring.GRAFANA_DASHBOARD_IMMUTABLE == ("spec.instanceSelector", "spec.uid")


def test_a_cluster_without_the_prometheus_operator_deploys_the_defaults(apiserver, all_renders):
    """monitoring.prometheusOperator is off by default: a render with the defaults holds no
    Prometheus Operator object and applies whole where its CRDs are not installed."""
    prometheus_crds(apiserver, False)
    try:
        assert apiserver.resource(f"{MONITORING_GROUP}/v1", "PodMonitor") is None
        defaults = {name: objs for name, objs in all_renders.items() if name.startswith("variant doc-")}
        assert defaults
        for name, objects in defaults.items():
            assert not [o for o in objects if o["apiVersion"].startswith(f"{MONITORING_GROUP}/")], name
            counts = apply(apiserver, objects)
            assert sum(counts.values()) == len(objects), name
    finally:
        prometheus_crds(apiserver, True)


# ------------------------------------------------------------------ RBAC, proven


VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
# What Spark's driver needs in client mode with executors as pods, stated here independently of
# the plan (infra/plan/audit.py) so that the two are compared: executor pods, and their ConfigMap.
SPARK_DRIVER_NEEDS = {("pods", v) for v in ("create", "delete", "deletecollection", "get", "list", "watch")} | \
                     {("configmaps", v) for v in ("create", "delete", "deletecollection", "get", "list")}
AUDIT_PROBED = ("pods", "configmaps", "secrets", "services", "persistentvolumeclaims", "serviceaccounts")


def is_audit(obj: dict) -> bool:
    return names.AUDIT_SELECTOR.items() <= obj["metadata"].get("labels", {}).items()


def referenced(objects: list[dict]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """Per Connect cluster (namespace, KafkaConnect name): the (resource, name) its connectors
    read through ${cfmap:}/${secret:}, from the connector configs themselves."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for c in (o for o in objects if o["kind"] == "KafkaConnect"):
        out[(c["metadata"]["namespace"], c["metadata"]["name"])] = set()
    for c in (o for o in objects if o["kind"] == "KafkaConnector"):
        key = (c["metadata"]["namespace"], c["metadata"]["labels"]["strimzi.io/cluster"])
        for provider, body in REF.findall(str(c["spec"]["config"])):
            if provider != "file":
                where = body.rsplit(":", 1)[0]
                out[key].add(("configmaps" if provider == "cfmap" else "secrets", where.split("/")[1]))
    return out


def rbac_matrix(client: Client, objects: list[dict]) -> int:
    """Create the render's namespaces, ServiceAccounts, Roles and RoleBindings for real, ask the
    authorizer every question below, then delete them again. Returns the number of checks."""
    ready_for(client, objects)
    rbac = [o for o in objects if o["kind"] in ("ServiceAccount", "Role", "RoleBinding")]
    for obj in rbac:
        client.create(obj)
    # The RBAC authorizer reads Roles through an informer cache: wait until it has seen them
    # (and, on the way out, their deletion), or one render's grants leak into the next's answers.
    probes = [(service_account_user(ns, f"{connect}-connect"), ns, sorted(reads)[0])
              for (ns, connect), reads in referenced(objects).items() if reads]
    _settle(client, probes, True)
    checks = 0
    try:
        stored = {(o["metadata"]["namespace"], {"Secret": "secrets", "ConfigMap": "configmaps"}[o["kind"]],
                   o["metadata"]["name"]) for o in objects if o["kind"] in ("Secret", "ConfigMap")}
        namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}

        def ask(user, groups, verb, resource, ns, name, expected):
            nonlocal checks
            got = client.allowed(user, groups, verb, resource, ns, name)
            checks += 1
            assert got == expected, (f"{user} {verb} {resource}/{name or '*'} in {ns}: "
                                     f"{'allowed' if got else 'denied'}, expected {'allowed' if expected else 'denied'}")

        for (ns, connect), reads in referenced(objects).items():
            # Strimzi runs Connect pods as the service account <name>-connect.
            user, groups = service_account_user(ns, f"{connect}-connect")
            for other_ns in sorted(namespaces):
                names = {(r, n) for (o_ns, r, n) in stored if o_ns == other_ns} | {
                    ("secrets", "not-in-the-render"), ("configmaps", "not-in-the-render")}
                for resource, name in sorted(names):
                    for verb in ("get", "update", "patch", "delete"):
                        expected = other_ns == ns and verb == "get" and (resource, name) in reads
                        ask(user, groups, verb, resource, other_ns, name, expected)
                for resource in ("secrets", "configmaps"):
                    for verb in ("list", "watch", "create", "deletecollection"):
                        ask(user, groups, verb, resource, other_ns, None, False)
            assert reads, f"{ns}/{connect}: its connectors read nothing, nothing proven"
        audit_sa = [o for o in rbac if o["kind"] == "ServiceAccount" and is_audit(o)]
        for sa in audit_sa:
            ns = sa["metadata"]["namespace"]
            user, groups = service_account_user(ns, sa["metadata"]["name"])
            executors = any(o["kind"] == "Role" and is_audit(o) and o["metadata"]["namespace"] == ns for o in rbac)
            for other_ns in sorted(namespaces):
                for resource in AUDIT_PROBED:
                    for verb in VERBS:
                        expected = executors and other_ns == ns and (resource, verb) in SPARK_DRIVER_NEEDS
                        ask(user, groups, verb, resource, other_ns, None, expected)
            for sub in ("pods/exec", "pods/log", "pods/portforward"):
                ask(user, groups, "create", sub, ns, None, False)
    finally:
        for obj in reversed(rbac):
            client.delete(obj)
        _settle(client, probes, False)
    return checks


def _settle(client: Client, probes: list, allowed: bool, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    for (user, groups), ns, (resource, name) in probes:
        while client.allowed(user, groups, "get", resource, ns, name) != allowed:
            if time.monotonic() > deadline:
                raise AssertionError(f"the authorizer did not see the RBAC objects of {ns} within {seconds} s")
            time.sleep(0.05)


def test_rbac_matrix_of_every_render(apiserver, all_renders):
    total = 0
    audits_with_executors = 0
    for name, objects in all_renders.items():
        total += rbac_matrix(apiserver, objects)
        audits_with_executors += any(o["kind"] == "Role" and is_audit(o) for o in objects)
    assert audits_with_executors >= 1, "no render runs Spark executors: the audit Role is never proven"
    COUNTS["SubjectAccessReviews"] += total
    assert total > 1000


def test_the_matrix_can_fail(apiserver, all_renders):
    """One extra grant (list secrets) in one Role: the matrix must refuse it."""
    objects = copy.deepcopy(_stack(all_renders, "0.48.0"))
    role = next(o for o in objects if o["kind"] == "Role")
    role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]})
    with pytest.raises(AssertionError, match="list secrets/\\* in .*: allowed, expected denied"):
        rbac_matrix(apiserver, objects)
    # A missing grant: the connectors read a Secret the Role does not name.
    objects = copy.deepcopy(_stack(all_renders, "0.48.0"))
    role = next(o for o in objects if o["kind"] == "Role")
    role["rules"] = [r for r in role["rules"] if r["resources"] != ["secrets"]]
    with pytest.raises(AssertionError, match="get secrets/.*: denied, expected allowed"):
        rbac_matrix(apiserver, objects)


# ------------------------------------------------------------------ several Kubernetes clusters

# The stacks that deploy to several Kubernetes clusters (a `kubernetes` section).
SEVERAL_CLUSTERS = ("regions",)
# The ambient kubeconfig's current context: where a resource without an explicit provider would
# go. It names no server of the test, so such a resource could not be applied anywhere.
AMBIENT_DEFAULT = "ambient-default"


@pytest.fixture(scope="module")
def regions_clusters(tmp_path_factory):
    """One API server per Kubernetes cluster of the regions stack, all running at once, and how
    Pulumi reaches each: a context of the ambient kubeconfig, or a whole kubeconfig in secret
    config, as stacks/regions.yaml says."""
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    section = yaml.safe_load((ROOT / "stacks" / "regions.yaml").read_text())["kubernetes"]
    directories = [tmp_path_factory.mktemp(f"apiserver-{name}") for name in sorted(section)]
    try:
        states = dict(zip(sorted(section), start_many(directories)))
    except ServerError as exc:
        unavailable(f"the servers did not start: {exc}")
    by_context = {entry["context"]: states[name] for name, entry in section.items() if "context" in entry}
    ambient = kubeconfig(by_context, AMBIENT_DEFAULT)
    ambient["contexts"].append({"name": AMBIENT_DEFAULT, "context": {"cluster": "nowhere", "user": "nobody"}})
    secrets = {names.kubeconfig_key(name): yaml.safe_dump(kubeconfig({f"{name}-admin": states[name]}, f"{name}-admin"))
               for name, entry in section.items() if entry.get("kubeconfig") == "secretConfig"}
    assert by_context and secrets, "stacks/regions.yaml should use both ways of reaching a cluster"
    yield states, ambient, secrets
    for d in directories:
        stop(d)


def routed(rendered: render.Render, ambient: dict) -> dict[str, tuple[Client, list[dict]]]:
    """Each object with the server its provider's inputs reach, resolved as client-go does
    (a context of the ambient kubeconfig, or the kubeconfig given to the provider): by URL."""
    providers = {r.name: r.inputs for r in rendered.resources if r.type == render.PROVIDER_TYPE}
    out: dict[str, tuple[Client, list[dict]]] = {}
    for r in rendered.resources:
        if not r.is_kubernetes:
            continue
        inputs = providers[names.provider_name(r.kubernetes)] if r.kubernetes else {}
        if inputs.get("kubeconfig"):
            client = Client.from_kubeconfig(yaml.safe_load(inputs["kubeconfig"]), inputs.get("context"))
        else:
            client = Client.from_kubeconfig(ambient, inputs.get("context"))
        out.setdefault(client.url, (client, []))[1].append(r.object())
    return out


def test_each_cluster_receives_its_own_objects(regions_clusters, tmp_path):
    """Three API servers run at once as the regions stack's three Kubernetes clusters. Every
    object goes where its provider's kubeconfig or context leads; each server accepts exactly its
    cluster's objects, proves its own RBAC matrix, and holds none of the other clusters'."""
    states, ambient, secrets = regions_clusters
    rendered = render.run("regions", secrets=secrets, placeholder_secrets=True)
    expected = rendered.objects_by_cluster()
    assert None not in expected, "an object without an explicit provider"
    routes = routed(rendered, ambient)
    # The route each provider's inputs lead to is the server of the cluster it is named for.
    assert {url: len(objects) for url, (_, objects) in routes.items()} == {
        states[name].url: len(objects) for name, objects in expected.items()}
    namespaces = {name: {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
                  for name, objects in expected.items()}
    total: Counter = Counter()
    for name, objects in sorted(expected.items()):
        client, received = routes[states[name].url]
        assert received == objects, f"{name}: the objects its provider reaches differ"
        counts = apply(client, received)
        assert sum(counts.values()) == len(received), name
        total += counts
        total["SubjectAccessReviews"] += rbac_matrix(client, received)
    for name, state in states.items():
        status, listed = Client(state).request("GET", "/api/v1/namespaces")
        assert status == 200
        # Exactly its own namespaces beside the server's own: none of another cluster's arrived.
        present = {n["metadata"]["name"] for n in listed["items"]} - {"default", "kube-node-lease", "kube-public",
                                                                      "kube-system"}
        assert present == namespaces[name], name
    assert len(set(map(frozenset, namespaces.values()))) == len(states) == 3
    COUNTS.update(total)
    COUNTS["renders applied"] += 1
    COUNTS["API servers running as Kubernetes clusters"] = len(states)


def test_a_resource_without_its_provider_reaches_no_cluster(regions_clusters):
    """The routing can fail: an object that lost its provider goes to the ambient current
    context, which leads to none of the clusters' servers; one given another cluster's provider
    lands on that cluster's server, and the counts per server no longer match."""
    states, ambient, secrets = regions_clusters
    rendered = render.run("regions", secrets=secrets, placeholder_secrets=True)
    first = next(r for r in rendered.resources if r.is_kubernetes)
    moved = copy.deepcopy(rendered)
    next(r for r in moved.resources if r.is_kubernetes).provider = ""
    with pytest.raises(LookupError, match="^0 clusters named 'nowhere' in the kubeconfig$"):
        routed(moved, ambient)
    other = next(r.provider for r in rendered.resources if r.is_kubernetes and r.kubernetes != first.kubernetes)
    next(r for r in moved.resources if r.is_kubernetes).provider = other
    routes = routed(moved, ambient)
    assert len(routes[states[first.kubernetes].url][1]) == len(rendered.objects_by_cluster()[first.kubernetes]) - 1


def test_a_rehearsal_replaces_a_claim_an_earlier_one_left(apiserver):
    """This server runs no controllers: a PersistentVolumeClaim an earlier rehearsal left (the
    audit's reports claim) carries `kubernetes.io/pvc-protection` forever once deleted, unless the
    rehearsal clears it as the controller would (no pod uses it)."""
    from infra.tools.rehearsal.kube import ApiServerKube
    kube = ApiServerKube(apiserver)
    apiserver.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "claims-again"}})
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "reports", "namespace": "claims-again", "labels": {"round": "1"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    path = "/api/v1/namespaces/claims-again/persistentvolumeclaims/reports"
    assert kube.apply(claim)
    assert apiserver.request("GET", path)[1]["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    claim["metadata"]["labels"] = {"round": "2"}
    assert kube.apply(claim)  # deleted, its finalizer cleared, created again
    status, stored = apiserver.request("GET", path)
    assert status == 200 and stored["metadata"]["labels"] == {"round": "2"}
    assert "deletionTimestamp" not in stored["metadata"]
