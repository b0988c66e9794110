"""`plugin.discovery: service_load` on a Connect cluster only where the worker cannot miss a plugin
(infra/plan/stack.py finds_plugins_by_manifest): every class its connectors name Kafka's own, the
operator's image, a Kafka that has the setting. The runtime tier starts the worker with it on
every release (tests/runtime/test_replication.py test_dev_stack_replicates_on_every_release)."""

from __future__ import annotations

import copy

import pytest
import yaml

from infra.core import classes
from infra.core.releases import SUPPORTED
from tests.support.stacks import ROOT, doc_topology, render_topology


def discovery(tmp_path, topology: dict) -> dict[str, str | None]:
    objects = render_topology(tmp_path, topology).objects()
    return {o["metadata"]["name"]: o["spec"]["config"].get("plugin.discovery")
            for o in objects if o["kind"] == "KafkaConnect"}


def test_the_documents_flow_finds_its_plugins_by_manifest(tmp_path):
    assert discovery(tmp_path, doc_topology()) == {"repl-us-west-us-east": "service_load"}


def test_a_class_that_is_not_kafka_s_keeps_kafka_s_default(tmp_path):
    topo = doc_topology()
    topo["flows"][0]["transforms"] = [{"name": "conv", "type": "com.example.smt.Convert$Value",
                                         "keepsTopic": True}]
    assert discovery(tmp_path, topo) == {"repl-us-west-us-east": None}
    topo["flows"][0]["transforms"] = [{"name": "drop", "type": "org.apache.kafka.connect.transforms.Filter"}]
    assert discovery(tmp_path, topo) == {"repl-us-west-us-east": "service_load"}


def test_a_custom_image_keeps_kafka_s_default(tmp_path):
    topo = doc_topology()
    topo["flows"][0]["connect"] = {"image": "registry.example.com/connect-with-plugins:1.0"}
    assert discovery(tmp_path, topo) == {"repl-us-west-us-east": None}


def test_a_converter_in_the_connector_config_counts(tmp_path):
    topo = doc_topology()
    topo["flows"][0]["converters"] = {"value": {"type": "io.confluent.connect.avro.AvroConverter"}}
    assert discovery(tmp_path, topo) == {"repl-us-west-us-east": None}


def test_the_prod_stack_the_flow_with_cloudera_s_transforms_keeps_the_default(tmp_path):
    prod = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text())
    found = discovery(tmp_path, copy.deepcopy(prod))
    assert found == {"orders-to-eu": "service_load", "repl-eu-central-archive": "service_load",
                     "repl-eu-central-us-east": "service_load", "repl-us-east-eu-central": "service_load",
                     "repl-us-west-us-east": "service_load", "telemetry-high": None,
                     "telemetry-small": "service_load"}


def test_every_supported_release_has_the_setting_and_the_rule_reads_kafka_s_package():
    assert {r.kafka for r in SUPPORTED if not r.plugin_discovery_key} == set()
    assert classes.kafka_own(["org.apache.kafka.connect.transforms.Cast$Value",
                              "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"])
    assert not classes.kafka_own(["org.apache.kafka.connect.transforms.Cast$Value", "org.apache.kafkax.Other"])
    assert not classes.kafka_own(["com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes$Value"])


@pytest.mark.parametrize("config,named", [
    ({"transforms.a.type": "x.A", "predicates.p.type": "x.P", "key.converter": "x.K", "b.classes": "x.B, x.C",
      "replication.policy.class": "x.R", "other": "x.O"},
     [("b.classes", "x.B"), ("b.classes", "x.C"), ("key.converter", "x.K"), ("predicates.p.type", "x.P"),
      ("replication.policy.class", "x.R"), ("transforms.a.type", "x.A")]),
])
def test_the_settings_that_name_a_class(config, named):
    assert classes.class_settings(config) == named
