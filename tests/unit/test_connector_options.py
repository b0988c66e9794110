"""What the operator drops of a KafkaConnector's config: Strimzi 0.43.0 (CSM 1.2) drops `name*`,
`connector.class*` and `tasks.max*` by prefix, later releases the exact keys only. The stand-in
drops as each release does; the program refuses on CSM 1.2 what would be dropped unseen."""

from __future__ import annotations

import pytest

from infra.core import names
from infra.core.releases import Flavour, find
from infra.tools.rehearsal import operator
from tests.support.refusals import problems
from tests.support.stacks import doc_topology, on_release

CONNECTOR = {"metadata": {"name": "c"}, "spec": {
    "class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "tasksMax": 2,
    "config": {"tasks.max.enforce": False, "name.suffix": "x", "connector.class.loader": "y", "tasks.max": 9,
               "replication.factor": 3}}}


@pytest.mark.parametrize("flavour,version,kept", [
    ("csm", "1.2", {"replication.factor": "3"}),
    ("csm", "1.4", {"replication.factor": "3", "tasks.max.enforce": "false", "name.suffix": "x",
                    "connector.class.loader": "y"}),
    ("strimzi", "1.2.0", {"replication.factor": "3", "tasks.max.enforce": "false", "name.suffix": "x",
                          "connector.class.loader": "y"}),
])
def test_the_stand_in_drops_as_the_release_does(flavour, version, kept):
    name, config, state = operator.connector_requests(find(Flavour(flavour), version), CONNECTOR)
    assert (name, state) == ("c", "running")
    assert config == {**kept, "tasks.max": "2", "connector.class": CONNECTOR["spec"]["class"]}


def test_csm_1_2_refuses_a_key_its_operator_drops_by_prefix():
    t = on_release(doc_topology(), "csm", "1.2")
    t["flows"][0]["config"] = {"source": {"tasks.max.enforce": False}}
    (problem,) = problems(t)
    assert problem.endswith(
        "config.source.tasks.max.enforce: got 'tasks.max.enforce'; expected no key starting with name, "
        "connector.class, tasks.max on csm 1.2: its operator (Strimzi 0.43.0) drops such keys from a "
        "KafkaConnector's config by prefix (KafkaConnectorConfiguration FORBIDDEN_PREFIXES), so the connector would "
        "run without it"), problem
    t = on_release(t, "csm", "1.4")
    assert problems_or_none(t) is None


def problems_or_none(t):
    from infra.checks import validation
    validation.parse(t)
    return None


def test_the_stand_in_refuses_connectors_of_a_connect_without_connector_resources():
    """KafkaConnectAssemblyOperator.reconcileConnector (0.43.0 to 1.2.0): NoSuchResourceException."""
    connect = {"metadata": {"name": "repl-a-b", "namespace": "repl-a-b", "annotations": {}}}
    with pytest.raises(operator.OperatorRefusal,
                       match="^KafkaConnect repl-a-b is not configured with annotation "
                             "strimzi.io/use-connector-resources$"):
        operator.check_connector_resources(connect)
    connect["metadata"]["annotations"][names.USE_CONNECTOR_RESOURCES] = "false"
    with pytest.raises(operator.OperatorRefusal):
        operator.check_connector_resources(connect)
    connect["metadata"]["annotations"][names.USE_CONNECTOR_RESOURCES] = "true"
    operator.check_connector_resources(connect)


def test_every_rendered_connect_carries_the_annotation(doc_objects):
    (connect,) = [o for k, o in doc_objects.items() if k[0] == "KafkaConnect"]
    assert connect["metadata"]["annotations"][names.USE_CONNECTOR_RESOURCES] == "true"
    operator.check_connector_resources(connect)


@pytest.mark.parametrize("flavour,version,dropped", [
    ("csm", "1.2", ["listeners.https.ssl.x", "rest.extension.classes", "ssl.keystore.type", "producer.interceptor.classes"]),
    ("strimzi", "0.48.0", ["listeners.https.ssl.x", "rest.extension.classes", "ssl.keystore.type",
                           "producer.interceptor.classes", "prometheus.metrics.reporter.listener"]),
    ("strimzi", "1.2.0", ["listeners.https.ssl.x", "rest.extension.classes", "ssl.keystore.type",
                          "producer.interceptor.classes", "prometheus.metrics.reporter.listener", "group.id",
                          "config.storage.topic"]),
])
def test_the_stand_in_drops_the_connect_config_the_release_drops(flavour, version, dropped):
    release = find(Flavour(flavour), version)
    candidates = ["listeners.https.ssl.x", "rest.extension.classes", "ssl.keystore.type", "producer.interceptor.classes",
                  "prometheus.metrics.reporter.listener", "group.id", "config.storage.topic",
                  "ssl.endpoint.identification.algorithm", "ssl.cipher.suites", "producer.linger.ms", "SSL.Protocol"]
    assert [k for k in candidates if operator.connect_config_forbidden(release, k)] == dropped


def test_no_rendered_connect_config_key_is_one_the_operator_drops():
    """What the program writes into KafkaConnect.spec.config reaches the worker on every release."""
    import tempfile
    from pathlib import Path

    from tests.support.schemas import release_of
    from tests.support.stacks import render_topology
    from tests.support.variants import renders
    for name, topology in sorted(renders().items()):
        release = release_of(topology)
        with tempfile.TemporaryDirectory() as folder:
            for obj in render_topology(Path(folder), topology, secrets={}).objects():
                if obj["kind"] == "KafkaConnect":
                    assert [k for k in obj["spec"].get("config", {}) if operator.connect_config_forbidden(release, k)] \
                        == [], name


@pytest.mark.parametrize("flavour,version,rule", [
    ("csm", "1.4", None),
    ("strimzi", "0.48.0", {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
    ("strimzi", "1.2.0", None),
])
def test_the_connect_role_of_a_plaintext_target_is_the_release_s(tmp_path, flavour, version, rule):
    """Strimzi 0.48.0 creates the Connect pods' Role even when the worker reads no Secret through it,
    and its rule then names none: `get` on every Secret of the namespace (AbstractConnectOperator.
    connectRole). 1.x creates none; 0.4x before 0.48 reads mounted files."""
    from infra.tools import render as render_module
    from tests.support.stacks import write_topology
    t = on_release(doc_topology(), flavour, version)
    t["clusters"]["us-east"]["security"] = {}
    objects = render_module.run("t", {"topology": str(write_topology(tmp_path, t))}, {},
                                placeholder_secrets=True).objects()
    connect = next(o for o in objects if o["kind"] == "KafkaConnect")
    secrets = {o["metadata"]["name"]: {} for o in objects if o["kind"] == "Secret"}
    secrets["source-us-west-tls"] = {"truststore.jks": b"x"}  # the mounted store file
    setup = operator.worker(find(Flavour(flavour), version), connect, secrets, "127.0.0.9")
    roles = [o for o in setup.objects if o["kind"] == "Role"]
    assert [r["rules"][0] for r in roles] == ([] if rule is None else [rule])


def _rendered_connect(tmp_path, flavour, version):
    from infra.tools import render as render_module
    from tests.support.stacks import write_topology
    t = on_release(doc_topology(), flavour, version)
    objects = render_module.run("t", {"topology": str(write_topology(tmp_path, t))}, {},
                                placeholder_secrets=True).objects()
    return next(o for o in objects if o["kind"] == "KafkaConnect")


@pytest.mark.parametrize("flavour,version", [("csm", "1.2"), ("csm", "1.4"), ("strimzi", "0.48.0"), ("strimzi", "1.2.0")])
def test_the_stand_in_refuses_the_volumes_the_operator_refuses(tmp_path, flavour, version):
    """TemplateUtils: additional mounts under /mnt only; no volume named like the operator's own."""
    import copy
    release = find(Flavour(flavour), version)
    connect = _rendered_connect(tmp_path, flavour, version)
    operator.check_volumes(release, connect)  # what the program renders passes
    outside = copy.deepcopy(connect)
    outside["spec"]["template"]["connectContainer"]["volumeMounts"][0]["mountPath"] = "/opt/kafka/x"
    with pytest.raises(operator.OperatorRefusal, match="the mount path /opt/kafka/x is forbidden"):
        operator.check_volumes(release, outside)
    clash = copy.deepcopy(connect)
    clash["spec"]["template"]["pod"]["volumes"].append({"name": "strimzi-tmp", "emptyDir": {}})
    with pytest.raises(operator.OperatorRefusal, match="^volume strimzi-tmp: a name the operator's own volumes"):
        operator.check_volumes(release, clash)
    twice = copy.deepcopy(connect)
    twice["spec"]["template"]["pod"]["volumes"].append(copy.deepcopy(twice["spec"]["template"]["pod"]["volumes"][0]))
    with pytest.raises(operator.OperatorRefusal, match="another volume of the template"):
        operator.check_volumes(release, twice)


@pytest.mark.parametrize("flavour,version,default,other", [("csm", "1.2", "3.8.0.1.2", None),
                                                           ("csm", "1.4", "3.9.0.1.4", "3.9.0.1.3"),
                                                           ("strimzi", "0.48.0", "4.1.0", "4.0.0"),
                                                           ("strimzi", "1.2.0", "4.3.1", "4.2.0")])
def test_the_stand_in_runs_the_connect_image_of_spec_version(flavour, version, default, other):
    """KafkaVersion.Lookup.kafkaConnectVersion: spec.version or the default; an unsupported one
    without spec.image refused (InvalidResourceException); with an image, that image runs."""
    release = find(Flavour(flavour), version)
    assert operator.connect_version(release, {"spec": {}}) == default
    if other:
        assert operator.connect_version(release, {"spec": {"version": other}}) == other
    with pytest.raises(operator.OperatorRefusal) as refused:
        operator.connect_version(release, {"spec": {"version": "3.7.0"}})
    assert str(refused.value) == (f"Kafka version 3.7.0 is not supported. Supported versions are: "
                                  f"{', '.join(sorted(release.connect_versions))}.")
    assert operator.connect_version(release, {"spec": {"version": "3.7.0", "image": "example/connect:1"}}) == "3.7.0"
    # The jars the rehearsal runs for it: the Apache release of a CSM build's line.
    assert [release.apache_kafka(v) for v in release.connect_versions] == {
        "1.2": ["3.8.0"], "1.4": ["3.9.0", "3.9.0"], "0.48.0": ["4.0.0", "4.1.0"],
        "1.2.0": ["4.2.0", "4.2.1", "4.3.0", "4.3.1"]}[version]
