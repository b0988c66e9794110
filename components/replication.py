"""The public components: Pulumi's (name, args, opts) with typed Args and Output properties,
usable from another Python program without a topology file, and from TypeScript, Go, C# or YAML
through the component provider (components/__main__.py; its schema is components/schema.json).

    ReplicationTopology   kafka-replication:index:ReplicationTopology
      every flow of a topology, checked together (the rules across flows need all of them), the
      replication audit when the topology has an `audit` section, and the monitoring objects
      (PodMonitor, PrometheusRule, dashboard ConfigMap, GrafanaDashboard) when `monitoring` asks for them
    ReplicationFlow       kafka-replication:index:ReplicationFlow
      one flow between two clusters, with its own checks (a bidirectional flow is two directions)

Both validate their arguments before creating anything, themselves included: unknown or
missing arguments, wrong types, Outputs where plain data is needed and secret values that are
not text first (components/arguments.py), then the topology they make. Either raises one error
that lists every problem (field paths as in docs/topology.md). Inside, each flow as deployed is a
FlowDirection (components/flow.py), the audit a ReplicationAudit (components/audit.py) and the
monitoring objects a ReplicationMonitoring (components/monitoring.py).
"""

# No `from __future__ import annotations`: Pulumi's analyzer reads these annotations as types.
from typing import TYPE_CHECKING, Any, Mapping, NotRequired, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from components import arguments
from components.audit import ReplicationAudit
from components.flow import FlowDirection
from components.kube import secret_resolver
from components.monitoring import ReplicationMonitoring
from contract.release import RELEASE
from infra.core import names
from infra.core.errors import TopologyError
from infra.deploy import config as stack_config, deployment
from infra.plan import monitoring
from infra.plan.audit import AuditPlan
from infra.plan.types import StackPlan
from infra.topology.resolution import Model
from infra.topology.schema import KubernetesCluster

if TYPE_CHECKING:
    # Editors and type checkers read the model's own types (generated from its JSON Schema): a
    # misspelt key or a value no choice allows is refused before the program runs.
    from contract.output_types import Outputs, OutputsFlow
    from components.topology_types import Cluster, Flow, Operator, Topology
else:
    # Pulumi's analyzer reads the hints when the provider runs: there they stay mappings, which
    # the provider schema types field by field from the same JSON Schemas (provider_schema.py).
    Cluster = Flow = Operator = Topology = Outputs = OutputsFlow = dict[str, Any]


class ReplicationTopologyArgs(TypedDict):
    topology: pulumi.Input[Topology]
    """The topology: the fields of a stacks/<stack>.yaml document (operator, clusters, flows,
    audit), as docs/topology.md describes them. It decides which resources exist, so it must be
    known when the program runs (not the Output of another resource)."""
    secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """Secret material by item, as the stack's secret config names it without the project
    prefix (`<alias>.password`, `<alias>.caCert`, `registry.password`...; docs/topology.md#secrets).
    Each value is text or an Output of text (a secret Output); every one stays secret. Items the
    topology does not use are allowed; a name that is no secret item is refused."""


class ReplicationFlowArgs(TypedDict):
    clusters: pulumi.Input[dict[str, Cluster]]
    """The flow's two Kafka clusters by alias, each as under `clusters` in a topology."""
    flow: pulumi.Input[Flow]
    """The flow, as one item of `flows` in a topology (source, target, topics, ...)."""
    operator: NotRequired[pulumi.Input[Operator]]
    """The operator section of a topology (flavour, version, connect defaults); its defaults
    when unset or None."""
    secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """Secret material by item, as for ReplicationTopology."""


class ReplicationTopology(pulumi.ComponentResource):
    """Every replication flow of a topology and its audit, checked together before anything is
    created: each flow's rules and the rules across flows (docs/guardrails.md)."""

    flows: pulumi.Output[dict[str, OutputsFlow]]
    """Per flow as deployed: the outputs contract of docs/outputs.md (`flows`)."""
    outputs: pulumi.Output[Outputs]
    """The whole outputs contract of docs/outputs.md (outputsVersion, operator, flows, audit)."""

    def __init__(self, name: str, args: ReplicationTopologyArgs, opts: Optional[pulumi.ResourceOptions] = None):
        subject = f"ReplicationTopology {name}"
        given = arguments.check(args, "ReplicationTopology", arguments.TOPOLOGY, subject)
        prepared = _prepare(given.values["topology"], given.secrets, subject)
        super().__init__(names.component_type("index", "ReplicationTopology"), name, None, opts)
        # A stack that ran this program before the component existed had its flows and audit
        # under the stack itself: the alias keeps their URNs (tests/unit/test_components.py).
        deployed = _deploy(self, prepared, given.secrets, [pulumi.Alias(parent=None)])
        self.outputs = _plain(deployed)
        self.flows = _plain(deployed["flows"])
        self.register_outputs({"flows": self.flows, "outputs": self.outputs})


class ReplicationFlow(pulumi.ComponentResource):
    """One replication flow between two Kafka clusters (both directions of a bidirectional
    pair), checked on its own before anything is created."""

    flows: pulumi.Output[dict[str, OutputsFlow]]
    """Per flow as deployed (two for a bidirectional pair): the `flows` contract of docs/outputs.md."""

    def __init__(self, name: str, args: ReplicationFlowArgs, opts: Optional[pulumi.ResourceOptions] = None):
        subject = f"ReplicationFlow {name}"
        given = arguments.check(args, "ReplicationFlow", arguments.FLOW, subject)
        document = {"clusters": given.values["clusters"], "flows": [given.values["flow"]]}
        if "operator" in given.values:
            document["operator"] = given.values["operator"]
        prepared = _prepare(document, given.secrets, subject)
        super().__init__(names.component_type("index", "ReplicationFlow"), name, None, opts)
        deployed = _deploy(self, prepared, given.secrets, [])
        self.flows = _plain(deployed["flows"])
        self.register_outputs({"flows": self.flows})


def _plain(value: Any) -> pulumi.Output[Any]:
    """Plain data as one Output. Output.from_input would wrap every nested dict, list and leaf of
    the outputs contract in an Output of its own (tens of thousands at 500 flows), each checked
    for unknowns over its whole subtree: the largest cost the program added to registering its
    objects."""
    return pulumi.Output.from_input(True).apply(lambda _: value)


Prepared = tuple[Model, StackPlan, tuple[AuditPlan, ...]]


def _prepare(document: Any, secrets: Mapping[str, Any], subject: str) -> Prepared:
    """The document's model and plans, and everything that can still refuse them, before the
    component registers: a refused component leaves nothing behind."""
    try:
        model, stack_plan, audits = deployment.prepare(document, subject)
        # Material given as text is checked now; secret Outputs when they resolve (secret_resolver).
        deployment.check(model, stack_plan, audits, lambda key: key in secrets,
                         secret_text=lambda key: secrets[key] if isinstance(secrets.get(key), str) else None)
    except TopologyError as exc:
        raise TopologyError(exc.problems, subject) from None
    return model, stack_plan, audits


def _deploy(parent: pulumi.ComponentResource, prepared: Prepared, secrets: Mapping[str, Any],
            aliases: list[pulumi.Alias]) -> Outputs:
    model, stack_plan, audits = prepared
    for warning in model.warnings:
        pulumi.log.warn(warning, parent)
    resolve = secret_resolver(secrets, frozenset(d.flow.target for d in model.flows),
                              deployment.writes_target_literally(model))
    providers = kubernetes_providers(parent, model.topology.kubernetes or {}, secrets)
    moved = pulumi.ResourceOptions(parent=parent, aliases=list(aliases))
    flows = []
    for flow_plan in stack_plan.flows:  # a loop, not a comprehension: as in ClusterAccess
        flows.append(FlowDirection(flow_plan, resolve, moved, providers))
    for audit_plan in audits:
        # The REST NetworkPolicies live in the flows' namespaces: created after them.
        ReplicationAudit(audit_plan, resolve, pulumi.ResourceOptions.merge(moved, pulumi.ResourceOptions(
            depends_on=flows)), providers[audit_plan.kubernetes] if audit_plan.kubernetes else None)
    for monitoring_plan in monitoring.plan_monitorings(model, stack_plan):
        # The PodMonitor selects pods of the flows' namespaces; nothing orders it after them.
        ReplicationMonitoring(monitoring_plan, resolve, moved,
                              providers[monitoring_plan.kubernetes] if monitoring_plan.kubernetes else None)
    return deployment.outputs(stack_plan, audits)


def kubernetes_providers(parent: pulumi.ComponentResource, clusters: Mapping[str, KubernetesCluster],
                         secrets: Mapping[str, Any]) -> dict[str, pulumi.ProviderResource]:
    """One explicit provider per Kubernetes cluster of the topology: a kubeconfig context, or
    a whole kubeconfig from secret config. With the section, every resource gets one of these
    (tests/unit/test_kubernetes.py checks each), so nothing falls back to the ambient context."""
    providers: dict[str, pulumi.ProviderResource] = {}
    for name, cluster in sorted(clusters.items()):
        opts = pulumi.ResourceOptions(parent=parent)
        if cluster.kubeconfig is not None:
            kubeconfig = stack_config.secret_item(secrets, names.kubeconfig_key(name), contexts={name: cluster.context})
            providers[name] = k8s.Provider(names.provider_name(name), kubeconfig=kubeconfig, context=cluster.context,
                                           opts=opts)
        else:
            providers[name] = k8s.Provider(names.provider_name(name), context=cluster.context, opts=opts)
    return providers


# The components the provider serves; its schema carries the newest release's version (the release
# workflow publishes the schema of the tagged tree).
PUBLIC = (ReplicationTopology, ReplicationFlow)
VERSION = RELEASE


def provider() -> Any:
    """The component provider of PUBLIC: Pulumi's, whose schema (inferred from the Args and
    Output annotations above by its analyzer) has the topology inputs typed from the model
    (components/provider_schema.py). It constructs the components as Pulumi's does."""
    import json

    from pulumi.provider.experimental.component import ComponentProvider

    from components import provider_schema
    from infra.topology.schema import json_schema
    hosted = ComponentProvider(list(PUBLIC), names.PACKAGE, version=VERSION)
    hosted.schema = json.dumps(provider_schema.typed(json.loads(hosted.schema or "{}"), json_schema()))
    return hosted


def provider_schema() -> dict[str, Any]:
    """The Pulumi package schema the component provider serves (components/schema.json)."""
    import json
    schema: dict[str, Any] = json.loads(provider().schema)
    return schema

