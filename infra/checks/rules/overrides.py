"""A flow's `config` overrides: only the keys the program does not own, per connector kind and
release, and never a secret written in clear."""

from __future__ import annotations

from collections.abc import Mapping

from infra.checks.rules.secrets import secret_named
from infra.checks.rules.smts import SMT_PREFIXES
from infra.core import names
from infra.core.errors import Problem
from infra.core.releases import Release, find
from infra.plan.connectors import (CLIENT_PREFIXES, CONNECTION_FAMILY, FILTER_CLASSES, FLOW_KEYS, GROUP_SYNC_KEYS,
                                   TOPIC_SYNC_KEYS, WORKER_KEYS, ProgramConfig,
                                   checkpoint_config, connection_client, heartbeat_config, source_config)
from infra.plan.stack import heartbeat_replicators, part_wiring
from infra.topology.resolution import Model
from infra.topology.schema import Flow

CONVERTER_PREFIXES = ("key.converter", "value.converter", "header.converter")


# MirrorSourceConnector.validateEmitOffsetSyncConfigs (Kafka 3.9.0+): with emit.offset-syncs.enabled
# false, any key with these prefixes makes the connector invalid (seen on the real worker).
OFFSET_SYNCS_PREFIXES = ("offset-syncs.topic.", "offset-syncs-")


OWNED = ("a property the program does not set itself (topics, groups, policy and cluster connections come from "
         "the flow)")


def _check_overrides(model: Model) -> dict[int, list[Problem]]:
    """The `config` overrides of each declared flow, by its index: no key the connectors' generators
    own (infra/plan/connectors.py, for that connector kind, release and flow), and no key the typed
    fields or Pulumi secrets hold."""
    topo = model.topology
    release = find(topo.operator.flavour, topo.operator.version)
    if release is None:  # _check_operator has refused the version: no generator to ask
        return {}
    copiers = heartbeat_replicators(model)
    found: dict[int, dict[tuple[str, str], Problem]] = {}
    for d in model.flows:
        flow, declared = d.flow, topo.flows[d.declared]
        if flow.source == flow.target or not {flow.source, flow.target} <= set(topo.clusters):
            continue  # refused above; no connection to build
        where = f"flows[{d.declared}] ({declared.flow_name})"
        instances = dict(declared.instances())
        checked = found.setdefault(d.declared, {})
        for part in d.parts:
            w, heartbeat = part_wiring(model, d, part)
            programs: list[tuple[str, Mapping[str, object], ProgramConfig]] = []
            for spec in part.sources:
                program = source_config(w, spec, copiers[(flow.source, flow.target)])
                programs.append(("config.source", flow.config.source, program))
                if spec.name is not None and spec.where in instances:
                    programs.append((f"{spec.where}.config", instances[spec.where].config, program))
            if flow.with_checkpoints:
                programs.append(("config.checkpoint", flow.config.checkpoint, checkpoint_config(w, part)))
            if heartbeat is not None:
                programs.append(("config.heartbeat", flow.config.heartbeat, heartbeat_config(w, heartbeat)))
            for prefix, config, program in programs:
                for key in config:
                    if (prefix, key) not in checked:
                        reason = _override_reason(flow, release, prefix, key, program)
                        if reason:
                            checked[(prefix, key)] = Problem(where, f"{prefix}.{key}", key, reason)
        # Overrides of connectors the flow does not run (checkpoints off, no heartbeats) are
        # still read as the typed fields and secrets rules say.
        for prefix, config in (("config.checkpoint", flow.config.checkpoint), ("config.heartbeat", flow.config.heartbeat)):
            for key in config:
                if (prefix, key) not in checked:
                    reason = _override_reason(flow, release, prefix, key, None)
                    if reason:
                        checked[(prefix, key)] = Problem(where, f"{prefix}.{key}", key, reason)
    order = ["config.source", "config.checkpoint", "config.heartbeat"]
    out: dict[int, list[Problem]] = {}
    for index, checked in found.items():
        paths = order + [f"{path}.config" for path, _ in topo.flows[index].instances()]
        out[index] = [checked[(path, key)] for path in paths for key in sorted(k for p, k in checked if p == path)]
    return out


def _override_reason(flow: Flow, release: Release, prefix: str, key: str, program: ProgramConfig | None) -> str | None:
    """Why a user's `config` key is refused, or None."""
    client = connection_client(key)
    kind = program.kind.value if program else prefix.rpartition(".")[2]
    if client is not None:
        client_prefix, connection_key = client
        family = next(f for f in CONNECTION_FAMILY if connection_key.startswith(f))
        family = family + "*" if family.endswith(".") else family
        return (f"no `{client_prefix}{family}` key in the {kind} connector's config: `{client_prefix}` configures "
                f"{CLIENT_PREFIXES[client_prefix]}, whose connection (bootstrap.servers, security.protocol, sasl.*, "
                "ssl.*) the program derives from the topology's clusters; a value here would connect it to "
                "another cluster or as another principal")
    if key in FILTER_CLASSES:
        lists = FILTER_CLASSES[key]
        return (f"the flow's typed `{lists}` and its exclude list: MirrorMaker 2's default filter reads them, and "
                f"another class would choose the flow's {lists} itself, past every guardrail on them "
                "(docs/guardrails.md)")
    if key in WORKER_KEYS:
        instead = " (the rebalance delay is `connect.rebalanceDelaySeconds`)" if key == names.REBALANCE_DELAY else ""
        return (f"a connector setting: `{key}` is the Connect worker's, which a connector's config does not read: "
                f"here it would do nothing{instead}")
    if key in TOPIC_SYNC_KEYS and kind == "source":
        return f"the typed `{TOPIC_SYNC_KEYS[key]}` field (docs/topology.md#topic-configuration-and-acl-sync)"
    if key in GROUP_SYNC_KEYS and kind == "checkpoint":
        return f"the typed `{GROUP_SYNC_KEYS[key]}` field (`enabled`, `intervalSeconds`: docs/topology.md#flows)"
    typed = key.startswith(SMT_PREFIXES) or key in ("transforms", "predicates")
    converter = key.startswith(CONVERTER_PREFIXES)
    if program is not None and program.owns(key) and not (typed or converter):
        return OWNED
    if release.connector_options_by_prefix and key.lower().startswith(Release.CONNECTOR_OPTIONS_DROPPED):
        return (f"no key starting with {', '.join(Release.CONNECTOR_OPTIONS_DROPPED)} on {release.name}: its operator (Strimzi "
                f"{release.strimzi}) drops such keys from a KafkaConnector's config by prefix "
                "(KafkaConnectorConfiguration FORBIDDEN_PREFIXES), so the connector would run without it")
    if (flow.bidirectional and release.emit_offset_syncs_key and key.startswith(OFFSET_SYNCS_PREFIXES)
            and prefix not in ("config.checkpoint", "config.heartbeat")):
        return ("no offset-syncs settings in a bidirectional pair: its source connectors emit no offset syncs "
                f"(emit.offset-syncs.enabled=false), and Kafka {release.kafka} refuses the connector when any such "
                "key is set (MirrorSourceConnector.validate)")
    if typed:
        return "the typed `transforms` and `predicates` lists (docs/topology.md#single-message-transforms)"
    if converter:
        return "the typed `converters` field"
    if secret_named(key):
        return "no secrets in connector config: they come from Pulumi secret config (docs/topology.md#secrets)"
    if program is None and key in FLOW_KEYS:
        return OWNED
    return None
