"""The Pulumi program: topology -> validated model -> plan -> components -> stack outputs."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.sync_await import _sync_await

from components.replication import ReplicationTopology
from infra.core import names
from infra.core.errors import TopologyError
from infra.deploy import config as stack_config, deployment

PREVIOUS_OUTPUTS = "previous-outputs"


class Previous:
    """This stack's last deployment, through one StackReference to the stack itself (its name is
    its URN, so one per run); every run reads its `operator` (the operator move rule)."""

    def __init__(self) -> None:
        name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
        self.reference = pulumi.StackReference(PREVIOUS_OUTPUTS, stack_name=name)

    def output(self, key: str) -> Any:
        """The output `key` (None before the first deployment). Validation must finish before
        resources are declared, so the output is awaited here."""
        return _sync_await(self.reference.get_output_details(key)).value


def main() -> dict[str, Any]:
    config = pulumi.Config()
    try:
        path = stack_config.topology_path(config, pulumi.get_stack())
        document, model, stack_plan, audits = deployment.prepare_file(path)
        previous = Previous()

        def full(key: str) -> str:
            return f"{pulumi.get_project()}:{key}"
        deployment.check(model, stack_plan, audits, lambda key: config.get_secret(key) is not None,
                         previous_flows=lambda: previous.output("flows"),
                         previous_operator=lambda: previous.output("operator"),
                         secret_text=lambda key: pulumi.runtime.get_config(full(key)),
                         is_plain=lambda key: not pulumi.runtime.is_config_secret(full(key)), path=path)
    except TopologyError as exc:
        # RunError: Pulumi shows the message without a Python traceback.
        raise pulumi.RunError(exc.report()) from None
    secrets: dict[str, pulumi.Input[str]] = {key: config.require_secret(key)
                                             for key in deployment.secret_keys(model, stack_plan, audits)}
    topology = ReplicationTopology(names.TOPOLOGY_COMPONENT, {"topology": document, "secrets": secrets})
    # Each output is exported on its own (the keys are known now; the values when deployed).
    outputs = {key: _field(topology.outputs, key) for key in deployment.outputs(stack_plan, audits)}
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs


def _field(outputs: pulumi.Output[Any], key: str) -> pulumi.Output[Any]:
    # Any: the contract's keys one by one, by name (deployment.outputs lists them).
    return outputs.apply(lambda o: o[key])
