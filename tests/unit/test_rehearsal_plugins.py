"""The classes a rendered topology loads by name (infra/tools/rehearsal/plugins.py), and whether
jars hold them: read from the jars' listings, as the rehearsal does before anything starts."""

from __future__ import annotations

import zipfile
from pathlib import Path

import yaml

from infra.tools.rehearsal import plugins
from tests.support.stacks import ROOT, render_topology

CLOUDERA = "com.cloudera.dim.kafka.connect.transforms."


def _jar(path: Path, entries: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as jar:
        for entry in entries:
            jar.writestr(entry, b"")
    return path


def test_what_the_prod_stack_loads_by_name(tmp_path):
    objects = render_topology(tmp_path, yaml.safe_load((ROOT / "stacks/prod.yaml").read_text())).objects()
    needs = plugins.needs(objects)
    metrics = [(n.key, n.name) for n in needs if n.connector == "telemetry-high-source-metrics"]
    assert metrics == [
        ("class", "org.apache.kafka.connect.mirror.MirrorSourceConnector"),
        ("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter"),
        ("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter"),
        ("predicates.NotHeartbeats.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"),
        # `${cfmap:telemetry-high/replication:replication.policy.class}`, read from that ConfigMap
        ("replication.policy.class", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"),
        ("transforms.ConvertFromBytes.converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("transforms.ConvertFromBytes.type", CLOUDERA + "ConvertFromBytes$Value"),
        ("transforms.ConvertToBytes.converter", "org.apache.kafka.connect.json.JsonConverter"),
        ("transforms.ConvertToBytes.type", CLOUDERA + "ConvertToBytes$Value"),
        ("transforms.ReplaceField.type", "org.apache.kafka.connect.transforms.ReplaceField$Value"),
        ("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter")]
    assert {(n.connect, n.key, n.name) for n in needs if n.connector is None and n.namespace == "telemetry-high"} == {
        ("telemetry-high", "config.providers.cfmap.class", "io.strimzi.kafka.KubernetesConfigMapConfigProvider"),
        ("telemetry-high", "config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider"),
        ("telemetry-high", "config.providers.secret.class", "io.strimzi.kafka.KubernetesSecretConfigProvider")}
    # Every class but Cloudera's two: only that connector cannot run.
    held = plugins.index([_jar(tmp_path / "all.jar", sorted({n.name.replace(".", "/") + ".class" for n in needs
                                                             if not n.name.startswith(CLOUDERA)}))])
    found = {(o["metadata"]["namespace"], o["metadata"]["name"]): held for o in objects if o["kind"] == "KafkaConnect"}
    gaps = plugins.missing(needs, found)
    assert [(g.where(), g.key) for g in gaps] == [
        ("flow telemetry, connector telemetry-high-source-metrics", "transforms.ConvertFromBytes.type"),
        ("flow telemetry, connector telemetry-high-source-metrics", "transforms.ConvertToBytes.type")]
    connectors = [(o["metadata"]["namespace"], o["metadata"]["labels"]["strimzi.io/cluster"], o["metadata"]["name"])
                  for o in objects if o["kind"] == "KafkaConnector"]
    assert list(plugins.not_runnable(gaps, connectors)) == [("telemetry-high", "telemetry-high-source-metrics")]


def test_a_class_the_worker_itself_lacks_stops_every_connector_of_its_cluster():
    need = plugins.Need("ns", "c", None, "f", "config.providers.vault.class", "com.example.Vault")
    assert need.where() == "flow f, Connect cluster c"
    connectors = [("ns", "c", "c-source"), ("ns", "c", "c-checkpoint"), ("ns", "other", "other-source")]
    assert plugins.not_runnable([need], connectors) == {("ns", "c-source"): [need], ("ns", "c-checkpoint"): [need]}


def test_the_settings_that_name_classes():
    assert plugins.class_settings({
        "transforms": "A,B", "transforms.A.type": "a.A", "transforms.A.field": "x", "predicates.P.type": "p.P",
        "key.converter": "k.K", "transforms.A.converter": "c.C", "replication.policy.class": "r.R",
        "producer.override.compression.type": "zstd", "consumer.interceptor.classes": "i.One, i.Two",
        "metric.reporters": "m.M", "topic.filter.class": " ", "emit.heartbeats.enabled": True}) == [
        ("consumer.interceptor.classes", "i.One"), ("consumer.interceptor.classes", "i.Two"),
        ("key.converter", "k.K"), ("metric.reporters", "m.M"), ("predicates.P.type", "p.P"),
        ("replication.policy.class", "r.R"), ("transforms.A.converter", "c.C"), ("transforms.A.type", "a.A")]


def test_an_index_holds_binary_names_and_the_aliases_connect_accepts(tmp_path):
    jar = _jar(tmp_path / "a.jar", ["org/apache/kafka/connect/mirror/MirrorSourceConnector.class",
                                    "org/apache/kafka/connect/transforms/InsertField$Value.class",
                                    "META-INF/versions/11/com/example/Only11.class", "module-info.class",
                                    "com/example/readme.txt"])
    classes = tmp_path / "classes"
    (classes / "com/example").mkdir(parents=True)
    (classes / "com/example/Loose.class").write_bytes(b"")
    (tmp_path / "broken.jar").write_text("not a zip")
    held = plugins.index([jar, classes, tmp_path / "broken.jar"])
    assert held.classes == {"org.apache.kafka.connect.mirror.MirrorSourceConnector",
                            "org.apache.kafka.connect.transforms.InsertField$Value", "com.example.Only11",
                            "com.example.Loose"}
    for name in ("org.apache.kafka.connect.mirror.MirrorSourceConnector", "MirrorSourceConnector", "MirrorSource",
                 "InsertField$Value", "com.example.Loose"):
        assert held.holds(name), name
    for name in ("org.apache.kafka.connect.mirror.MirrorSource", "InsertField", "com.example.readme",
                 "org.apache.kafka.connect.transforms.InsertField"):
        assert not held.holds(name), name


def test_what_connect_loads_from_a_plugin_path_folder(tmp_path):
    """Each jar in the folder, and each folder in it with its jars (any depth) and class files;
    a loose class file at the top is no plugin (PluginUtils.pluginLocations)."""
    top = _jar(tmp_path / "p" / "one.jar", ["a/One.class"])
    nested = _jar(tmp_path / "p" / "two" / "lib" / "two.jar", ["b/Two.class"])
    (tmp_path / "p" / "Loose.class").write_bytes(b"")
    (tmp_path / "p" / "notes.txt").write_text("")
    assert plugins.plugin_entries(tmp_path / "p") == [top, tmp_path / "p" / "two", nested]
    assert plugins.index(plugins.plugin_entries(tmp_path / "p")).classes == {"a.One", "b.Two"}
    assert plugins.classpath_entries(f"{tmp_path / 'p'}/*:{tmp_path / 'x.jar'}") == [top, tmp_path / "x.jar"]
