"""One Pulumi operation on a stack, by the real Pulumi CLI, with the program served inline.

    python -m tests.engine.driver preview|up|refresh|destroy --dir PROJECT --stack STACK
        [--events FILE] [--expect-no-changes] [--program kafka-replication|consumer|by-hand]
        [--policy-pack PATH ... --policy-events FILE]

The Python language host (the `pulumi-language-python` Go module) is not on the module proxy,
so the CLI cannot start the program itself. The Automation API does what that host does: it
serves the same program (`components.program.main`, which `__main__.py` calls) over the language
runtime's gRPC interface and runs `pulumi <operation> --client=<address>`; everything else
(the engine, state, config, secrets, plugins, the provider) is the CLI's own. Each run is a
process of its own, so that no Pulumi SDK state is shared with the test process.

The CLI's standard output is printed as it comes; its standard error after it ends; the exit
code is the CLI's. With --events, the engine's resource events are written to FILE as JSON:
one {"urn", "type", "op"} per resource step (`resourcePreEvent`), in the engine's order.

With --policy-pack, preview and up run the pack (`pulumi preview --policy-pack PATH`), and with
--policy-events its events are written to FILE as JSON, in the engine's order: each violation
({"violation": policy, "urn", "message", "level"}) and each resource's analysis
({"analyzed": urn, "pack", "passed", "failed"}, the engine's `policyAnalyzeSummaryEvent`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

import pulumi
import pulumi.automation._stack as automation_stack
from pulumi import automation as auto

from infra.core import names

# The by-hand program's ConfigMap password: it must never be printed.
BY_HAND_PASSWORD = "by-hand-literal-Passw0rd"
BY_HAND_NAMESPACE = "mm2-by-hand"


def consumer(reference: str) -> Any:
    """A second project that reads a kafka-replication stack's outputs through a StackReference
    and the typed reader (contract/outputs.py), as docs/outputs.md shows other teams."""
    def program() -> None:
        from contract import outputs
        typed = outputs.from_stack_reference(pulumi.StackReference(reference))
        pulumi.export("flows", typed.apply(lambda o: {
            name: {"namespace": f.namespace, "source": f.source_alias, "target": f.target_alias,
                   "restUrl": f.connect_rest_url, "connectClusters": [c.name for c in f.connect_clusters],
                   "replicatedTopic": f.replicated_topic("orders")}
            for name, f in sorted(o.flows.items())}))
        pulumi.export("operator", typed.apply(lambda o: [o.operator_flavour, o.operator_version, o.kafka_version]))
    return program


def by_hand_objects() -> list[dict[str, Any]]:
    """What a team deploying MirrorMaker 2 by hand, without our components, might declare: each
    object breaks one policy of the pack (docs/policy.md) and nothing else."""
    meta = {"namespace": BY_HAND_NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "source-kafka", **meta},
         "data": {"bootstrap.servers": "source-kafka:9093", "sasl.mechanism": "PLAIN",
                  "sasl.password": BY_HAND_PASSWORD}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "connect", **meta},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["source-kafka"],
                    "verbs": ["*"]}]},
        {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaConnect", "metadata": {"name": "mm2", **meta},
         "spec": {"version": "3.8.0", "replicas": 1, "bootstrapServers": "target-kafka:9092",
                  "config": {"group.id": "mm2", "config.storage.topic": "mm2-configs",
                             "offset.storage.topic": "mm2-offsets"}}},
        {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaConnector", "metadata": {"name": "mm2-source", **meta},
         "spec": {"class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "tasksMax": 1,
                  "config": {"topics": "orders.*", "transforms": "rename",
                             "transforms.rename.type": "org.apache.kafka.connect.transforms.RegexRouter",
                             "transforms.rename.regex": "(.*)", "transforms.rename.replacement": "copy.$1"}}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "audit", "labels": dict(names.AUDIT_SELECTOR),
                                                                   **meta},
         "spec": {"schedule": "17 * * * *", "concurrencyPolicy": "Allow", "jobTemplate": {"spec": {"template": {
             "spec": {"restartPolicy": "Never", "containers": [{"name": "audit", "image": "audit:1"}]}}}}}},
    ]


def by_hand() -> Any:
    """The by-hand objects declared with pulumi-kubernetes' own resources, as such a team would."""
    def program() -> None:
        import pulumi_kubernetes as k8s
        namespace = k8s.core.v1.Namespace(BY_HAND_NAMESPACE, metadata={"name": BY_HAND_NAMESPACE})
        opts = pulumi.ResourceOptions(depends_on=[namespace])
        for obj in by_hand_objects():
            name, kind, meta = obj["metadata"]["name"], obj["kind"], obj["metadata"]
            if kind == "ConfigMap":
                k8s.core.v1.ConfigMap(name, metadata=meta, data=obj["data"], opts=opts)
            elif kind == "Role":
                k8s.rbac.v1.Role(name, metadata=meta, rules=obj["rules"], opts=opts)
            elif kind == "CronJob":
                k8s.batch.v1.CronJob(name, metadata=meta, spec=obj["spec"], opts=opts)
            else:
                k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=kind, metadata=meta,
                                                 spec=obj["spec"], opts=opts)
    return program


def record_policy_summaries(into: list[dict[str, Any]]) -> None:
    """Keep the engine's `policyAnalyzeSummaryEvent`s, which the Automation API's EngineEvent
    does not carry over (pulumi 3.272's automation/events.py knows no such field): its event
    stream parses every event with EngineEvent.from_json, wrapped here to look first."""
    parse = automation_stack.EngineEvent.from_json

    class Recording(automation_stack.EngineEvent):
        @classmethod
        def from_json(cls, data: dict[str, Any]) -> auto.EngineEvent:
            summary = data.get("policyAnalyzeSummaryEvent")
            if summary is not None:
                into.append({"analyzed": summary.get("resourceUrn"), "pack": summary.get("policyPackName"),
                             "passed": summary.get("passed", []), "failed": summary.get("failed", [])})
            return parse(data)
    automation_stack.EngineEvent = Recording


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.engine.driver")
    ap.add_argument("operation", choices=["preview", "up", "refresh", "destroy"])
    ap.add_argument("--dir", required=True, help="the project directory (Pulumi.yaml, Pulumi.<stack>.yaml)")
    ap.add_argument("--stack", required=True)
    ap.add_argument("--events", help="write the resource events here (JSON)")
    ap.add_argument("--expect-no-changes", action="store_true")
    ap.add_argument("--refresh", action="store_true", help="preview or up: read the cluster first (--refresh)")
    ap.add_argument("--program", default="kafka-replication")
    ap.add_argument("--reference", help="consumer program: the stack it reads")
    ap.add_argument("--policy-pack", action="append", default=[], help="run this policy pack (preview, up)")
    ap.add_argument("--policy-events", help="write the policy packs' events here (JSON)")
    args = ap.parse_args(argv)

    if args.program == "consumer":
        program = consumer(args.reference)
    elif args.program == "by-hand":
        program = by_hand()
    else:
        from components.program import main as program
        from infra.core import collector
        collector.for_the_process()  # as __main__.py runs it: this process serves one operation
    # A LocalWorkspace of the project directory holding the program (auto.select_stack with a
    # work_dir would run the project's own runtime instead).
    stack = auto.Stack.select(args.stack, auto.LocalWorkspace(work_dir=args.dir, program=program))
    events: list[dict[str, str]] = []
    policy_events: list[dict[str, Any]] = []
    record_policy_summaries(policy_events)

    def on_event(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            events.append({"urn": pre.metadata.urn, "type": pre.metadata.type, "op": str(pre.metadata.op.value)})
        violation = event.policy_event
        if violation is not None:
            policy_events.append({"violation": violation.policy_name, "urn": violation.resource_urn,
                                  "message": violation.message, "level": violation.enforcement_level})

    def on_output(line: str) -> None:
        print(line, flush=True)

    common: dict[str, Any] = {"on_output": on_output, "on_event": on_event, "color": "never"}
    if args.expect_no_changes:
        common["expect_no_changes"] = True
    packs = {"policy_packs": args.policy_pack} if args.policy_pack else {}
    try:
        refresh = {"refresh": True} if args.refresh else {}
        if args.operation == "preview":
            stack.preview(diff=True, **packs, **refresh, **common)
        elif args.operation == "up":
            stack.up(diff=True, **packs, **refresh, **common)
        elif args.operation == "refresh":
            stack.refresh(**common)
        else:
            common.pop("expect_no_changes", None)
            stack.destroy(**common)
        code = 0
    except auto.CommandError as exc:
        # The Automation API keeps the CLI's result only as text: "\n code: N\n stdout: ...\n stderr: ...".
        found = re.match(r"\n code: (-?\d+)\n stdout: .*\n stderr: (.*)\Z", str(exc), re.DOTALL)
        print(found.group(2) if found else str(exc), file=sys.stderr, flush=True)
        code = int(found.group(1)) if found and found.group(1) != "0" else 1
    finally:
        if args.events:
            with open(args.events, "w") as out:
                json.dump(events, out, indent=1)
        if args.policy_events:
            with open(args.policy_events, "w") as out:
                json.dump(policy_events, out, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
