"""One Pulumi operation on a stack, by the real Pulumi CLI, with the program served inline.

    python -m tests.engine.driver preview|up|refresh|destroy --dir PROJECT --stack STACK
        [--events FILE] [--expect-no-changes] [--program kafka-replication|consumer]

The Python language host (the `pulumi-language-python` Go module) is not on the module proxy,
so the CLI cannot start the program itself. The Automation API does what that host does: it
serves the same program (`infra.program.main`, which `__main__.py` calls) over the language
runtime's gRPC interface and runs `pulumi <operation> --client=<address>`; everything else
(the engine, state, config, secrets, plugins, the provider) is the CLI's own. Each run is a
process of its own, so that no Pulumi SDK state is shared with the test process.

The CLI's standard output is printed as it comes; its standard error after it ends; the exit
code is the CLI's. With --events, the engine's resource events are written to FILE as JSON:
one {"urn", "type", "op"} per resource step (`resourcePreEvent`), in the engine's order.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

import pulumi
from pulumi import automation as auto


def consumer(reference: str) -> Any:
    """A second project that reads a kafka-replication stack's outputs through a StackReference
    and the typed reader (infra/outputs.py), as docs/outputs.md shows other teams."""
    def program() -> None:
        from infra import outputs
        typed = outputs.from_stack_reference(pulumi.StackReference(reference))
        pulumi.export("flows", typed.apply(lambda o: {
            name: {"namespace": f.namespace, "source": f.source_alias, "target": f.target_alias,
                   "restUrl": f.connect_rest_url, "connectClusters": [c.name for c in f.connect_clusters],
                   "replicatedTopic": f.replicated_topic("orders")}
            for name, f in sorted(o.flows.items())}))
        pulumi.export("operator", typed.apply(lambda o: [o.operator_flavour, o.operator_version, o.kafka_version]))
    return program


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.engine.driver")
    ap.add_argument("operation", choices=["preview", "up", "refresh", "destroy"])
    ap.add_argument("--dir", required=True, help="the project directory (Pulumi.yaml, Pulumi.<stack>.yaml)")
    ap.add_argument("--stack", required=True)
    ap.add_argument("--events", help="write the resource events here (JSON)")
    ap.add_argument("--expect-no-changes", action="store_true")
    ap.add_argument("--program", default="kafka-replication")
    ap.add_argument("--reference", help="consumer program: the stack it reads")
    args = ap.parse_args(argv)

    if args.program == "consumer":
        program = consumer(args.reference)
    else:
        from infra.program import main as program
    # A LocalWorkspace of the project directory holding the program (auto.select_stack with a
    # work_dir would run the project's own runtime instead).
    stack = auto.Stack.select(args.stack, auto.LocalWorkspace(work_dir=args.dir, program=program))
    events: list[dict[str, str]] = []

    def on_event(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            events.append({"urn": pre.metadata.urn, "type": pre.metadata.type, "op": str(pre.metadata.op.value)})

    def on_output(line: str) -> None:
        print(line, flush=True)

    common: dict[str, Any] = {"on_output": on_output, "on_event": on_event, "color": "never"}
    if args.expect_no_changes:
        common["expect_no_changes"] = True
    try:
        if args.operation == "preview":
            stack.preview(diff=True, **common)
        elif args.operation == "up":
            stack.up(diff=True, **common)
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
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
