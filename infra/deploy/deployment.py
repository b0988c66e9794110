"""From a topology document to what a deployment needs, and what can still refuse it: the one
home for both, used by the program, the public components and the offline render."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from contract.output_types import Outputs
from infra.checks import plans, rules, validation
from infra.core import names, reading
from infra.core.errors import Problem, TopologyError, at_lines
from infra.core.names import PROJECT, secret_key
from infra.core.releases import WorkerFile
from infra.deploy import config as stack_config, kubeconfig
from infra.plan.audit import AuditPlan, plan_audits
from infra.plan.outputs import stack_outputs
from infra.plan.stack import plan
from infra.plan.types import StackPlan
from infra.topology.resolution import Model
from infra.topology.schema import ExactlyOnce


def prepare(document: Any, source: str) -> tuple[Model, StackPlan, tuple[AuditPlan, ...]]:
    """The validated model and the plans of a topology document (TopologyError: every problem):
    the flows', and the audit's (one per Kubernetes cluster hosting flows, none without `audit`).

    One run prepares the same document up to three times (`render` before the program, the
    program before its component, the component itself: each must refuse before anything
    registers), which for hundreds of flows is seconds each. What it returns is frozen and does
    not depend on `source` (only refusals name it), so an accepted document is prepared once
    per process: the later calls get the same objects."""
    key = _frozen(document)
    if key is not None and key in _PREPARED:
        return _PREPARED[key]
    model = validation.parse(document, source)
    stack_plan = plan(model)
    prepared = model, stack_plan, plan_audits(model, stack_plan)
    if key is not None:
        _PREPARED[key] = prepared
        while len(_PREPARED) > _PREPARED_KEPT:
            del _PREPARED[next(iter(_PREPARED))]
    return prepared


_PREPARED: dict[Any, tuple[Model, StackPlan, tuple[AuditPlan, ...]]] = {}
_PREPARED_KEPT = 4


def _frozen(value: Any) -> Any:
    """A hashable image of a YAML document that tells apart what validation tells apart (a key
    `1` from a key `'1'`, `true` from `1`, the order of keys); None where a value is not
    hashable, not equal to itself (NaN) or nested too deep to walk: that document is prepared
    every time."""
    try:
        return _freeze(value)
    except (TypeError, RecursionError):
        return None


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return (dict, tuple((_freeze(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return (list, tuple(_freeze(v) for v in value))
    hash(value)  # TypeError for what cannot be a key
    if value != value:
        raise TypeError("NaN")
    # By type, and floats by their digits: 1, 1.0 and True, 0.0 and -0.0 are equal in Python.
    return (type(value), repr(value) if isinstance(value, float) else value)


def validate(document: Any, source: str) -> tuple[Model, StackPlan, tuple[AuditPlan, ...]]:
    """`prepare`, and everything else the topology alone can refuse (what `check` refuses
    beyond it needs the stack's secret config or its previous outputs): `validate`, `render`
    and `pulumi preview` give one verdict on a topology."""
    model, stack_plan, audits = prepare(document, source)
    problems = plans.problems(model, stack_plan, audits)
    if problems:
        raise TopologyError(problems)
    return model, stack_plan, audits


def prepare_file(path: str | Path, whole: bool = False) -> tuple[Any, Model, StackPlan, tuple[AuditPlan, ...]]:
    """A topology file's document and `prepare` of it (`validate` when `whole`); its problems
    say their lines. The one way the program, `render` and `validate` read the file."""
    text = reading.read_text(path, "topology file")
    with validation.located(text):
        document = reading.load_yaml(text, str(path))
        return (document, *(validate if whole else prepare)(document, str(path)))


def validate_file(path: str | Path) -> tuple[Model, StackPlan, tuple[AuditPlan, ...]]:
    """`validate` on a topology file; its problems say their lines."""
    _, model, stack_plan, audits = prepare_file(path, whole=True)
    return model, stack_plan, audits


def outputs(stack_plan: StackPlan, audits: tuple[AuditPlan, ...]) -> Outputs:
    """The stack outputs (docs/outputs.md): the flows', and the audit's, or with a `kubernetes`
    section each Kubernetes cluster's audit under `audits`."""
    out = stack_outputs(stack_plan)
    for audit in audits:
        if audit.kubernetes:
            out.setdefault("audits", {})[audit.kubernetes] = audit.outputs
        else:
            out["audit"] = audit.outputs
    return out


def secret_keys(model: Model, stack_plan: StackPlan, audits: tuple[AuditPlan, ...]) -> list[str]:
    """Every secret item the deployment needs: the flows', the audits' and the kubeconfigs."""
    kubeconfigs = {names.kubeconfig_key(k) for k, c in (model.topology.kubernetes or {}).items()
                   if c.kubeconfig is not None}
    return sorted(set(stack_plan.secret_keys()) | {k for a in audits for k in a.secret_keys()} | kubeconfigs)


def _one_name_per_kubernetes_cluster(model: Model, secret_text: Callable[[str], str | None]) -> list[Problem]:
    """Two `kubernetes` entries whose kubeconfigs lead to one API server are one Kubernetes
    cluster under two names: each would get an audit in the same namespace, and flows would
    count it twice. Compared on what the client connects to (infra/deploy/kubeconfig.py api_server);
    entries that name a context of the ambient kubeconfig are compared by rules.py."""
    seen: dict[tuple[str, str, int], str] = {}
    problems = []
    for name, cluster in sorted((model.topology.kubernetes or {}).items()):
        text = secret_text(names.kubeconfig_key(name)) if cluster.kubeconfig is not None else None
        server = kubeconfig.api_server(text, cluster.context) if text is not None else None
        if server is None:
            continue
        if server in seen:
            problems.append(Problem(f"kubernetes.{name}", f"secret config {PROJECT}:{names.kubeconfig_key(name)}",
                                    stack_config.NotShown(),
                                    f"a kubeconfig of another Kubernetes cluster: it leads to the API server "
                                    f"kubernetes.{seen[server]}'s leads to (one cluster, one name: two would each "
                                    "get the audit's namespace and objects)"))
        seen.setdefault(server, name)
    return problems


def _referenced_and_configured(model: Model, has_secret: Callable[[str], bool]) -> list[Problem]:
    """An item both referenced (`sasl.passwordSecret`, `tls.secret`) and still in secret config:
    the config value is never read, and whoever rotates it there would believe it used."""
    fields = {"password": "security.sasl.passwordSecret"}
    what = {"password": "the password", "caCert": "the CA certificate", "truststore": "the truststore",
            "truststorePassword": "the truststore password", "clientCert": "the client certificate",
            "clientKey": "the client key"}
    problems = []
    for alias, cluster in sorted(model.topology.clusters.items()):
        for item, (name, key) in cluster.security.referenced_items.items():
            config_key = secret_key(alias, item)
            if has_secret(config_key):
                problems.append(Problem(
                    f"clusters.{alias}", f"secret config {PROJECT}:{config_key}", stack_config.NotShown(),
                    f"no value: {what[item]} is read from Secret {name} (key {key}, {fields.get(item, 'security.tls.secret')}), "
                    f"never from config; remove it: pulumi config rm {PROJECT}:{config_key}"))
    return problems


def kubeconfig_contexts(model: Model) -> dict[str, str | None]:
    """Per Kubernetes cluster, the context the topology picks (None: the kubeconfig's current)."""
    return {name: c.context for name, c in (model.topology.kubernetes or {}).items()}


def writes_target_literally(model: Model) -> bool:
    """Whether the release writes a target's SASL password literally into the worker file."""
    return model.operator.release.worker_file is WorkerFile.literalStores


def check(model: Model, stack_plan: StackPlan, audits: tuple[AuditPlan, ...], has_secret: Callable[[str], bool],
          previous_flows: Callable[[], Mapping[str, Any] | None] = lambda: None,
          previous_operator: Callable[[], Any] = lambda: None,
          secret_text: Callable[[str], str | None] = lambda key: None,
          is_plain: Callable[[str], bool] = lambda key: False, subject: str = "the topology",
          path: str | Path | None = None) -> None:
    """What can still refuse a valid topology's deployment (secret items, names, transitions),
    checked before any resource is declared. `secret_text(key)` reads a secret value (None when
    it cannot be read yet), never shown; `is_plain(key)` tells a value set without --secret.
    With the topology file's `path`, what the topology alone refuses names its lines, as
    `validate_file` says it: one verdict, one report."""
    keys = secret_keys(model, stack_plan, audits)
    problems = stack_config.missing_secrets(keys, has_secret)
    problems += stack_config.plain_secrets([k for k in keys if has_secret(k)], is_plain)
    problems += stack_config.unusable_secrets(keys, secret_text, frozenset(d.flow.target for d in model.flows),
                                              kubeconfig_contexts(model),
                                              literal=writes_target_literally(model))
    own = plans.problems(model, stack_plan, audits)
    if path is not None and own:
        text = reading.read_text(path, "topology file")
        own = at_lines(own, lambda steps: reading.line_of(text, steps))
    problems += own
    problems += _one_name_per_kubernetes_cluster(model, secret_text)
    problems += _referenced_and_configured(model, has_secret)
    # The release the stack runs on: every deployment, since every release move is judged.
    problems += rules.check_operator_move(model, previous_operator(), previous_flows)
    # The previous flows are read only where a rule needs them.
    if any(f.exactlyOnce is ExactlyOnce.enabled for f in model.topology.flows) or rules.failback_candidates(model):
        previous = previous_flows()
        problems += rules.check_transitions(model, previous)
        problems += rules.check_failback(model, previous)
    if problems:
        raise TopologyError(problems, subject)
