"""Every config-provider reference of a plan resolved against the objects it planned, and
generated topologies planned with what every plan must keep."""

from __future__ import annotations

import re

from infra.checks.rules import referenced
from infra.core import names
from infra.plan.stack import plan
from infra.plan.types import StackPlan
from infra.topology.resolution import Model
from tests.support.stacks import parse_or_reject

REF = re.compile(r"\$\{(cfmap|secret|file):([^}]*)\}")


# Unprefixed keys Strimzi 0.40-0.45 writes into the worker properties file (CSM 1.x;
# kafka_connect_config_generator.sh at 0.43.0 and 0.45.0); tests/support/worker.py models every release.
WORKER_FILE_KEYS = {"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
                    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
                    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type"}


def plan_random(data: dict) -> tuple[Model, StackPlan] | None:
    """A generated topology planned, with what every plan must keep (no object twice, every
    reference resolved), or None when it was refused with complete messages."""
    topo = parse_or_reject(data)
    if topo is None:
        return None
    stack = plan(topo)
    objects = list(stack.objects)
    assert len({(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}) == len(objects)
    assert check_references(objects + team_secrets(topo)) > 0
    return topo, stack


def team_secrets(model: Model) -> list[dict]:
    """The Secrets the team keeps that the topology references (`sasl.passwordSecret`,
    `tls.secret`), in every namespace that reads them, as its tooling would have them: what
    references may resolve to besides the plan's own objects."""
    return [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
             "stringData": {key: "" for key in keys}}
            for (_, namespace, name), keys in referenced.kept_keys(model).items()]


def check_references(objects: list[dict]) -> int:
    """Assert every reference resolves; return how many were checked."""
    stored = {}
    for o in objects:
        if o["kind"] in ("ConfigMap", "Secret"):
            keys = set(o.get("data", {})) | set(o.get("stringData", {}))
            stored[(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])] = keys
    # The Connect Roles (the audit has its own, tested in test_audit_plan).
    roles = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "Role" and names.FLOW_LABEL in o["metadata"]["labels"]}
    connects = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "KafkaConnect"}
    read: dict[str, dict[str, set[str]]] = {}
    checked = 0
    for c in (o for o in objects if o["kind"] == "KafkaConnector"):
        ns = c["metadata"]["namespace"]
        assert c["metadata"]["labels"]["strimzi.io/cluster"] == connects[ns]["metadata"]["name"]
        for prop, value in c["spec"]["config"].items():
            for provider, body in REF.findall(str(value)):
                checked += 1
                if provider == "file":
                    path, key = body.rsplit(":", 1)
                    assert connects[ns]["apiVersion"].endswith("v1beta2"), f"{prop}: worker file on a v1 operator"
                    assert path == "/tmp/strimzi-connect.properties" and key in WORKER_FILE_KEYS, prop
                    continue
                where, key = body.rsplit(":", 1)
                ref_ns, name = where.split("/")
                kind = "ConfigMap" if provider == "cfmap" else "Secret"
                assert ref_ns == ns, f"{prop} reads another namespace: {value}"
                assert key in stored.get((kind, ns, name), set()), f"{prop}: {value} dangles"
                read.setdefault(ns, {}).setdefault(kind, set()).add(name)
        # Store locations point into a mounted file of a Secret that holds its key (the source
        # files Secret, or the team's for a truststore by reference).
        for prop, value in c["spec"]["config"].items():
            if prop.endswith((".ssl.truststore.location", ".ssl.keystore.location")) and "cfmap" in str(value):
                cm_name, key = value.split("/", 1)[1].rstrip("}").split(":")
                cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cm_name
                          and o["metadata"]["namespace"] == ns)
                location = cm["data"][key]
                template = connects[ns]["spec"]["template"]
                (mount,) = [m for m in template["connectContainer"]["volumeMounts"] if location.startswith(m["mountPath"])]
                (volume,) = [v for v in template["pod"]["volumes"] if v["name"] == mount["name"]]
                assert location == f'{mount["mountPath"]}/{location.rsplit("/", 1)[1]}'
                (item,) = [i for i in volume["secret"]["items"] if i["path"] == location.rsplit("/", 1)[1]]
                assert item["key"] in stored.get(("Secret", ns, volume["secret"]["secretName"]), set()), \
                    f"{prop}: {location} is mounted from a key nobody makes"
    # The Secrets and keys the KafkaConnect itself names (its trust and authentication).
    for ns, connect in connects.items():
        spec = connect["spec"]
        named = [(t["secretName"], t.get("certificate")) for t in (spec.get("tls") or {}).get("trustedCertificates", [])]
        auth = spec.get("authentication") or {}
        if "passwordSecret" in auth:
            named.append((auth["passwordSecret"]["secretName"], auth["passwordSecret"]["password"]))
        if "certificateAndKey" in auth:
            pair = auth["certificateAndKey"]
            named += [(pair["secretName"], pair["certificate"]), (pair["secretName"], pair["key"])]
        for name, key in named:
            checked += 1
            assert ("Secret", ns, name) in stored, f"{ns}: the KafkaConnect names Secret {name}, which nobody makes"
            assert key is None or key in stored[("Secret", ns, name)], f"{ns}: Secret {name} has no key {key}"
    for ns, connect_role in roles.items():
        granted = {{"configmaps": "ConfigMap", "secrets": "Secret"}[r["resources"][0]]: set(r["resourceNames"])
                   for r in connect_role["rules"]}
        assert all(r["verbs"] == ["get"] and len(r["resources"]) == 1 for r in connect_role["rules"])
        assert granted == read.get(ns, {}), f"{ns}: Role grants {granted}, connectors read {read.get(ns)}"
    return checked
