"""Namespaces the stack creates and owns (the audit's, monitoring's): Kubernetes' own are refused,
since removing the section or destroying the stack would delete them; what Kubernetes accepts
(63 characters) is accepted. Label values may be empty, as in Kubernetes."""

from __future__ import annotations

import pytest

from infra.deploy import deployment
from tests.support.refusals import refusals as refused_by
from tests.support.stacks import doc_topology, render_topology, write_topology

OWN = ("expected a namespace of the stack's own, not 'default' or one starting with 'kube-' (Kubernetes' own): the "
       "stack creates the namespace and deletes it when the section is removed or the stack destroyed")


def refusals(tmp_path, topology: dict) -> list[str]:
    return refused_by(deployment.validate_file, write_topology(tmp_path, topology))


def monitored(namespace: str, **monitoring) -> dict:
    t = doc_topology()
    t["monitoring"] = {"namespace": namespace, "prometheusOperator": True, "dashboard": True, **monitoring}
    return t


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "default", "kube-monitoring"])
def test_kubernetes_namespaces_are_refused_for_monitoring(tmp_path, namespace):
    assert refusals(tmp_path, monitored(namespace)) == [
        f"line 37: topology: monitoring.namespace: got '{namespace}'; {OWN}"]


def test_kubernetes_namespaces_are_refused_for_the_audit(tmp_path):
    t = doc_topology()
    t["audit"] = {"namespace": "kube-system"}
    (problem,) = refusals(tmp_path, t)
    assert problem.endswith(f"audit: namespace: got 'kube-system'; {OWN}"), problem


def test_a_namespace_of_63_characters_is_accepted_and_rendered(tmp_path):
    namespace = "replication-monitoring-of-the-platform-team-" + "x" * 19
    assert len(namespace) == 63
    objects = render_topology(tmp_path, monitored(namespace, labels={"release": "", "team": "kafka"}),
                              secrets={}).objects()
    placed = sorted({(o["kind"], o["metadata"].get("namespace")) for o in objects
                     if o["kind"] in ("PodMonitor", "PrometheusRule")})
    assert placed == [("PodMonitor", namespace), ("PrometheusRule", namespace)]
    assert [o["metadata"] for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == namespace] == [
        {"name": namespace, "labels": {"app.kubernetes.io/component": "monitoring",
                                       "app.kubernetes.io/part-of": "kafka-replication",
                                       "app.kubernetes.io/managed-by": "pulumi"}}]
    rule = next(o for o in objects if o["kind"] == "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "" and rule["metadata"]["labels"]["team"] == "kafka"


def test_a_namespace_over_63_characters_is_refused(tmp_path):
    namespace = "x" * 64
    assert refusals(tmp_path, monitored(namespace)) == [
        f"line 37: topology: monitoring.namespace: got '{namespace}'; expected lowercase letters, digits and '-' "
        "(DNS-1123), starting and ending alphanumeric (at most 63 characters)"]


LABEL_KEY = ("expected a Kubernetes label key such as release or example.com/team: an optional DNS subdomain (at most 253 "
             "characters) and '/', then a name of at most 63 letters, digits, '-', '_' and '.', starting and ending "
             "with a letter or digit")


@pytest.mark.parametrize("key", ["a" * 64, "Example.com/team", "a..b/team", "a/b/c", "example.com/", "-team"])
def test_label_keys_kubernetes_refuses_are_refused(tmp_path, key):
    (problem,) = refusals(tmp_path, monitored("replication-monitoring", labels={key: "x"}))
    assert problem.endswith(f"got '{key}'; {LABEL_KEY}"), problem


@pytest.mark.parametrize("key", ["release", "example.com/team", "a" * 63, "x.y-z/A_b.c", "a" * 253 + "/b"])
def test_label_keys_kubernetes_accepts_are_accepted(tmp_path, key):
    deployment.validate_file(write_topology(tmp_path, monitored("replication-monitoring", labels={key: "x"})))
