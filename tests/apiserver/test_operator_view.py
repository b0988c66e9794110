"""The operator's view of a stack, for real: kube-state-metrics (built from its module,
tools/engine/kube-state-metrics) runs against a real kube-apiserver with the configuration the
stack renders (the ConfigMap of infra/plan/monitoring/operator.py), and the
`KafkaReplicationOperator*` alerts are replayed by promtool on exactly the series it exported.

The statuses are written here through the status subresource, as Strimzi's operator writes them
(this tier runs no operator): a connector that failed gets a `NotReady` condition and no `Ready`
(KafkaConnectorStatus, StatusUtils), a deprecation a `Warning` condition with reason
`DeprecatedFields`. On each API version a stack writes: v1 (Strimzi 1.2.0), v1beta2 (CSM 1.2)."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request

import pytest
import yaml

from infra.core import names
from infra.core.releases import Flavour, find
from infra.plan import monitoring
from infra.tools.rehearsal.apiserver import built, kubeconfig
from infra.tools.rehearsal.process import free_ports
from infra.tools.rehearsal.kube import ApiServerKube, install_crds
from infra.tools.rehearsal.local import on_release
from tests.apiserver.test_status_command import write_status
from tests.conformance.test_alert_rules import run_promtool
from tests.support.monitoring import FLOW, monitored
from tests.support.schemas import strimzi_crds
from tests.support.stacks import render_topology, started_apiserver, unavailable

pytestmark = pytest.mark.apiserver

SOURCE, CHECKPOINT, HEARTBEAT = (f"{FLOW}-{c}" for c in ("source", "checkpoint", "heartbeat"))
AT = "2026-11-29T10:00:00Z"


def ready(extra: list[dict] | None = None) -> list[dict]:
    return [{"type": "Ready", "status": "True", "lastTransitionTime": AT}, *(extra or [])]


# What the operator reports of each object: the KafkaConnect Ready with a deprecation, the source
# connector failed, the checkpoint connector Ready with a warning, the heartbeat connector Ready.
CONDITIONS = {
    ("KafkaConnect", FLOW): ready([{"type": "Warning", "status": "True", "reason": "DeprecatedFields",
                                    "message": "In API version v1beta2 the property ... is deprecated",
                                    "lastTransitionTime": AT}]),
    ("KafkaConnector", SOURCE): [{"type": "NotReady", "status": "True", "reason": "Throwable",
                                  "message": "Connector has failed, see connectorStatus for more details.",
                                  "lastTransitionTime": AT}],
    ("KafkaConnector", CHECKPOINT): ready([{"type": "Warning", "status": "True", "reason": "UpdateState",
                                            "message": "Connector state cannot be changed", "lastTransitionTime": AT}]),
    ("KafkaConnector", HEARTBEAT): ready(),
}


def expand(template: str, labels: dict[str, str]) -> str:
    """An annotation as Prometheus writes it for an alert of these labels."""
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)


def scraped(port: int, deadline: float) -> dict[str, dict[str, str]]:
    """Our series kube-state-metrics exports, by `<kind>/<name>`: their labels; waited for until
    all four objects are there (it finds the CRDs through discovery, then lists)."""
    found: dict[str, dict[str, str]] = {}
    while time.monotonic() < deadline:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            text = ""
        found = {}
        for name, body in re.findall(r"^(kube_kafka_replication_connect(?:or)?_status)\{(.*)\} 1$", text, re.M):
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', body))
            found[f"{labels['customresource_kind']}/{labels['name']}"] = {"metric": name, **labels}
        if len(found) == 5:
            return found
        time.sleep(1)
    raise AssertionError(f"kube-state-metrics exported {sorted(found)} within its deadline")


@pytest.fixture(scope="module")
def binary():
    path = built("kube-state-metrics")
    if path is None:
        unavailable("no kube-state-metrics binary: run tools/engine/build.sh kube-state-metrics (docs/engine.md)")
    return path


@pytest.mark.parametrize(("flavour", "version"), [("strimzi", "1.2.0"), ("csm", "1.2")])
def test_kube_state_metrics_exports_the_operator_s_view_and_the_alerts_fire_on_it(
        flavour, version, binary, tmp_path_factory, tmp_path):
    release = find(Flavour(flavour), version)
    assert release is not None
    rendered = render_topology(tmp_path, on_release(monitored(), flavour, version))
    objects = rendered.objects()
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == names.KSM_CONFIGMAP]
    (tmp_path / "ksm.yaml").write_text(config["data"]["config.yaml"])
    for server in started_apiserver(tmp_path_factory, f"apiserver-ksm-{flavour}"):
        install_crds(server, strimzi_crds(release))
        kube = ApiServerKube(server)
        other = {**next(o for o in objects if o["kind"] == "KafkaConnect"),
                 "metadata": {"name": "their-connect", "namespace": "other-team"}}
        for obj in [o for o in objects if o["kind"] == "Namespace"] + [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other-team"}}] + [
                o for o in objects if o["kind"] in ("KafkaConnect", "KafkaConnector")] + [other]:
            assert kube.apply(obj), obj["metadata"]
        for obj in objects:
            if (obj["kind"], obj["metadata"]["name"]) in CONDITIONS:
                write_status(server, obj, {"conditions": CONDITIONS[(obj["kind"], obj["metadata"]["name"])],
                                           "observedGeneration": 1})
        write_status(server, other, {"conditions": [{"type": "NotReady", "status": "True",
                                                     "reason": "InvalidResourceException", "message": "...",
                                                     "lastTransitionTime": AT}], "observedGeneration": 1})
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig({"test": server.state}, "test")))
        port, telemetry = free_ports("127.0.0.1", 2)
        ksm = subprocess.Popen([str(binary), f"--kubeconfig={tmp_path / 'kubeconfig'}", "--custom-resource-state-only",
                                f"--custom-resource-state-config-file={tmp_path / 'ksm.yaml'}", "--host=127.0.0.1",
                                f"--port={port}", "--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry}"],
                               stdout=subprocess.DEVNULL, stderr=open(tmp_path / "ksm.log", "w"))
        try:
            series = scraped(port, time.monotonic() + 120)
        finally:
            ksm.terminate()
            ksm.wait(30)
    group, api = release.api_version.split("/")
    common = {"customresource_group": group, "customresource_version": api}
    expected = {
        f"KafkaConnect/{FLOW}": {"metric": monitoring.CONNECT_INFO, "flow": FLOW, "ready": "True",
                                 "warnings": "True", "deprecated": "Warning"},
        f"KafkaConnector/{SOURCE}": {"metric": monitoring.CONNECTOR_INFO, "flow": FLOW},
        f"KafkaConnector/{CHECKPOINT}": {"metric": monitoring.CONNECTOR_INFO, "flow": FLOW, "ready": "True",
                                         "warnings": "True"},
        f"KafkaConnector/{HEARTBEAT}": {"metric": monitoring.CONNECTOR_INFO, "flow": FLOW, "ready": "True"},
        "KafkaConnect/their-connect": {"metric": monitoring.CONNECT_INFO},
    }
    got = {key: {k: v for k, v in labels.items() if v != ""} for key, labels in series.items()}
    assert got == {key: {**common, "customresource_kind": key.split("/")[0], "name": key.split("/")[1],
                         "exported_namespace": "other-team" if "their" in key else FLOW, **want}
                   for key, want in expected.items()}, (tmp_path / "ksm.log").read_text()[-3000:]

    # The stack's rules on those series, as Prometheus would scrape them for half an hour.
    rules = next(o for o in objects if o["kind"] == "PrometheusRule")["spec"]["groups"]
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(rules))
    inputs = [{"series": labels.pop("metric") + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
               + ', job="kube-state-metrics"}', "values": "1x30"} for labels in series.values()]
    fired = {"KafkaReplicationOperatorNotReady": ("KafkaConnector", SOURCE),
             "KafkaReplicationOperatorWarning": ("KafkaConnector", CHECKPOINT),
             "KafkaReplicationOperatorDeprecated": ("KafkaConnect", FLOW)}
    annotations = {r["alert"]: r["annotations"] for g in rules for r in g["rules"] if r["alert"] in fired}

    def alert(name: str, kind: str, obj: str) -> dict:
        labels = {"severity": "warning", "threshold": "for 15m", "flow": FLOW, "exported_namespace": FLOW,
                  "kind": kind, "name": obj}
        return {"exp_labels": labels, "exp_annotations": {k: expand(v, labels) for k, v in annotations[name].items()}}
    # Held 15 minutes: nothing at 10, each alert on its object alone at 20 (the other team's
    # KafkaConnect, not Ready all along, pages no one).
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [{"eval_time": at, "alertname": name, "exp_alerts": [alert(name, *fired[name])]
                             if at == "20m" else []} for name in fired for at in ("10m", "20m")]}]}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
