"""Changes from the previous deployment that the program refuses (`previous_flows`): state a
running flow would lose, and history an identity failback would copy back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from infra.core.errors import Problem
from infra.core.releases import UPGRADES, Flavour, Release, find, upgrade_path
from infra.topology.resolution import Direction, Model
from infra.topology.schema import ExactlyOnce, OffsetsAction, Policy, StartFrom


def _json_kind(value: Any) -> str:
    """A JSON value described by its kind, as users read JSON (never Python's names)."""
    if value is None:
        return "null (or missing)"
    for kind, name in ((bool, "a boolean"), (int, "a number"), (float, "a number"), (list, "a list"),
                       (dict, "an object")):
        if isinstance(value, kind):
            return name
    return "not a string"


def check_transitions(model: Model, previous_flows: Mapping[str, Any] | None) -> list[Problem]:
    """Changes that must not be made in one step, judged against the stack's previous outputs.
    A previous state that cannot be read is refused, never taken as "not disabled": the two-step
    rollout is only enforced if the program knows where the running Connect cluster stands."""
    problems = []
    known = {e.value for e in ExactlyOnce}
    for d in model.flows:
        flow = d.flow
        if flow.exactlyOnce is not ExactlyOnce.enabled or previous_flows is None:
            continue  # nothing deployed before: a new stack may start enabled
        watch = " and ".join(f"kubectl get pods -n {d.names(p).namespace} --watch" for p in d.parts)
        rollout = ("deploy exactlyOnce: preparing, wait until the Connect pods' rolling restart has finished "
                   f"({watch}), then deploy exactlyOnce: enabled")
        if not isinstance(previous_flows, Mapping):
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                f"previous stack outputs the program can read: their `flows` is {type(previous_flows).__name__}, "
                "not a mapping of flows, so whether the running Connect cluster has exactly-once disabled is "
                "unknown. Pass the stack's real outputs (`pulumi stack output --json` to --previous-outputs), or "
                + rollout))
            continue
        if d.name not in previous_flows:
            continue  # a new flow may start enabled
        before = previous_flows[d.name]
        state = before.get("exactlyOnce") if isinstance(before, Mapping) else None
        if state == ExactlyOnce.disabled.value:
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                "preparing first: this flow's running Connect cluster has exactly-once disabled. "
                + rollout[:1].upper() + rollout[1:]))
        elif not (isinstance(state, str) and state in known):
            shown = repr(state) if isinstance(state, str) else _json_kind(state)
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                f"previous stack outputs the program can read: flows.{d.name}.exactlyOnce there is {shown}, "
                f"not one of {', '.join(sorted(known))}, so whether the running Connect cluster has exactly-once "
                "disabled is unknown. Pass the stack's real outputs (`pulumi stack output --json` to "
                "--previous-outputs), or " + rollout))
    return problems


def failback_candidates(model: Model) -> list[Direction]:
    """The identity flows that would copy the old target's history back if they reversed a
    deployed flow: one direction, from the earliest offsets, with no offsets alter of every
    source connector and no acknowledgement. Only these need the previous deployment read."""
    out = []
    for d in model.flows:
        flow = d.flow
        if (flow.policy is not Policy.identity or flow.bidirectional or flow.startFrom is StartFrom.latest
                or flow.acknowledgeReplayedHistory):
            continue
        altered = {r.connector for r in flow.offsets if r.action is OffsetsAction.alter}
        if not all(d.names(p).source_connector(s.name) in altered for p in d.parts for s in p.sources):
            out.append(d)
    return out


def check_failback(model: Model, previous_flows: Mapping[str, Any] | None) -> list[Problem]:
    """An identity flow deployed in place of the previous deployment's identity flow in the other
    direction (a failback, docs/operations.md#controlled-failback) that starts from the earliest
    offsets: it would copy every record still retained on the old target back into the
    same-named topics of the old source, those that came from there included. Refused unless it
    starts where the failover left (an offsets alter of its source connectors, or `startFrom:
    latest`), or the flow acknowledges the copy."""
    if not isinstance(previous_flows, Mapping):
        return []  # a new stack; unreadable outputs are check_transitions' to refuse
    reversed_ = {(str(f.get("targetAlias")), str(f.get("sourceAlias"))): name for name, f in previous_flows.items()
                 if isinstance(f, Mapping) and f.get("replicationPolicy") == Policy.identity.value}
    current = {d.name for d in model.flows}
    release = find(model.topology.operator.flavour, model.topology.operator.version)
    problems = []
    for d in failback_candidates(model):
        flow = d.flow
        forward = reversed_.get((flow.source, flow.target))
        if forward is None or forward in current or d.name in previous_flows:
            continue
        sources = ", ".join(d.names(p).source_connector(s.name) for p in d.parts for s in p.sources)
        at = f"at {flow.source}'s end offsets when the failover stopped replication, minus one"
        if release is not None and not release.offset_management:
            # No offsets requests on this release (infra/plan/offsets.py): the Connect REST API
            # sets them, which the program cannot see, so the acknowledgement is the user's.
            start = (f"Deploy it with state.source: stopped and acknowledgeReplayedHistory: true, set the offsets of "
                     f"{sources} {at}, through the Connect REST API (PATCH /connectors/<name>/offsets: "
                     f"{release.name} has no offsets requests), then running")
        else:
            start = f"Deploy it with state.source: stopped and an offsets alter of {sources} {at}, then running"
        problems.append(Problem(
            d.where, "startFrom", flow.startFrom.value,
            f"a start where the failover left: this identity flow reverses the deployed flow {forward} "
            f"({flow.target} -> {flow.source}), and from the earliest offsets it would copy every record still "
            f"retained on {flow.source} back into the same-named topics of {flow.target}, those that came from "
            f"{flow.target} included. {start} (docs/operations.md#controlled-failback); or startFrom: latest if "
            f"nothing was produced on {flow.source} since; or acknowledgeReplayedHistory: true to copy it all"))
    return problems


def _steps() -> str:
    return ", ".join(f"{a.value} {va} -> {b.value} {vb}" for (a, va), (b, vb) in UPGRADES.items())


def check_operator_move(model: Model, previous_operator: Any,
                        previous_flows: Callable[[], Any] = lambda: None) -> list[Problem]:
    """The operator release the stack moves to, against the one its previous outputs say it runs
    on (`operator`: flavour and version): the same release, or the next step of its line
    (releases.UPGRADES). A jump over the bridge, a move back or across flavours fails in a real
    cluster (objects stored in an API version the next operator does not serve) or is a move no
    runbook covers: refused, with the way there when there is one. A step of the line is judged
    on the Connect versions deployed as well (`check_connect_versions`), read from
    `previous_flows()` only then."""
    if previous_operator is None:
        return []  # a new stack, or outputs from before the operator was an output
    operator = model.topology.operator
    new = operator.release
    field = "version"
    flavour = previous_operator.get("flavour") if isinstance(previous_operator, Mapping) else None
    version = previous_operator.get("version") if isinstance(previous_operator, Mapping) else None
    previous = find(Flavour(flavour), version) if flavour in {f.value for f in Flavour} and \
        isinstance(version, str) else None
    if previous is None:
        def kind(value: Any) -> str:
            return "a string" if isinstance(value, str) else _json_kind(value)
        if not isinstance(previous_operator, Mapping):
            what = kind(previous_operator)
        elif isinstance(flavour, str) and isinstance(version, str):
            what = f"{flavour} {version}"
        else:
            what = (f"flavour {flavour!r}" if isinstance(flavour, str) else f"flavour {kind(flavour)}") + \
                (f", version {version!r}" if isinstance(version, str) else f", version {kind(version)}")
        return [Problem("operator", field, new.version, (
            f"previous stack outputs the program can read: their `operator` is {what}, not a release this version "
            "of kafka-replication supports, so whether this move is safe for the objects deployed is unknown. Pass "
            "the stack's real outputs (`pulumi stack output --json` to --previous-outputs), or move the stack with "
            "the version of kafka-replication that deployed it"))]
    if previous == new:
        return []
    if previous.flavour is not new.flavour:
        field = "flavour"
    path = upgrade_path(previous, new)
    if path is not None and len(path) == 1:
        return check_connect_versions(previous, new, previous_flows())
    said = f"the stack runs {previous.name} (its previous outputs)"
    if path is not None:
        first = path[0]
        return [Problem("operator", field, f"{new.flavour.value} {new.version}", (
            f"{first.name} first: {said}, and {previous.name} -> {new.name} skips "
            + ", ".join(r.name for r in path[:-1]) + ". Move one release at a time, each with its operator and CRDs "
            f"and a pulumi up: {' -> '.join(r.name for r in (previous, *path))} (docs/operations.md#operator-upgrades)"))]
    if previous.storage_version not in new.api_versions:
        why = (f"its objects are stored as {previous.storage_version}, which {new.name} does not serve: it could "
               "not read them back")
    elif new.strimzi_line < previous.strimzi_line:
        why = f"{new.name} is older than {previous.name}: no runbook moves a stack back"
    else:
        why = f"{previous.name} -> {new.name} is not a move the runbook covers"
    return [Problem("operator", field, f"{new.flavour.value} {new.version}", (
        f"{previous.name} or a supported next release: {said}, and {why}. The supported moves, one per pulumi up: "
        f"{_steps()} (docs/operations.md#operator-upgrades); for another release, deploy a new stack"))]


def check_connect_versions(previous: Release, new: Release, previous_flows: Any) -> list[Problem]:
    """A step of the line judged on the Kafka version of every Connect cluster deployed
    (`connectClusters[].connectVersion` of the previous outputs). The new operator reconciles the
    deployed KafkaConnects as soon as it is installed, before the `pulumi up` that moves the
    stack: one whose version it does not accept goes NotReady, and its connectors are not
    reconciled until then (Strimzi KafkaVersion.Lookup.kafkaConnectVersion, at 0.48.0, 0.51.0 and
    1.2.0: an InvalidResourceException "Kafka version ... is not supported" unless the
    KafkaConnect names its own image). Strimzi's order is the custom resources first, to a version
    both releases accept, then the operator; where the two accept none in common (CSM 1.2 -> 1.4)
    the window cannot be avoided and the runbook says so."""
    common = [v for v in previous.connect_versions if v in new.connect_versions]
    if not common:
        return []
    way = (f"Set operator.version back to {previous.version} with connect.version: {common[-1]} (accepted by both) "
           f"and pulumi up, then install {new.name}'s operator and CRDs and set operator.version: {new.version} "
           "(docs/operations.md#operator-upgrades)")
    deployed, unknown = [], []
    for name, flow in sorted(previous_flows.items()) if isinstance(previous_flows, Mapping) else []:
        clusters = flow.get("connectClusters") if isinstance(flow, Mapping) else None
        for i, cluster in enumerate(clusters if isinstance(clusters, list) else [None]):
            version = cluster.get("connectVersion") if isinstance(cluster, Mapping) else None
            image = cluster.get("connectImage") if isinstance(cluster, Mapping) else None
            if isinstance(image, str):
                continue  # the operator takes its own image's word for the version
            at = f"flows.{name}.connectClusters[{i}]"
            if isinstance(version, str):
                if version not in new.connect_versions:
                    named = [str(cluster.get(k)) for k in ("namespace", "name") if isinstance(cluster.get(k), str)]
                    deployed.append(f"the KafkaConnect {'/'.join(named) or at} (flow {name}) runs Kafka {version}")
            else:
                unknown.append(at)
    if not isinstance(previous_flows, Mapping):
        unknown.append("flows")
    if unknown:
        return [Problem("operator", "version", new.version, (
            f"previous stack outputs that say each Connect cluster's Kafka version: {', '.join(unknown)} has no "
            "connectVersion (outputs written before kafka-replication recorded it), so whether "
            f"{new.name}'s operator accepts the KafkaConnects deployed is unknown. Run pulumi up once on "
            f"{previous.name} with this version of kafka-replication (nothing else changed), then move the "
            f"operator; a Connect version {new.name} accepts is one of {', '.join(new.connect_versions)}"))]
    if deployed:
        return [Problem("operator", "version", new.version, (
            f"a Connect version both releases accept, deployed before the operator moves: the stack runs "
            f"{previous.name}, and {'; '.join(deployed)}, which {new.name} does not accept (it accepts "
            f"{', '.join(new.connect_versions)}). {new.name}'s operator reconciles the deployed KafkaConnects as "
            "soon as it is installed, before this pulumi up: those Connect clusters go NotReady and their "
            f"connectors are not reconciled until then. {way}"))]
    return []
