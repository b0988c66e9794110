"""What each difference does, read from the plan's own facts and the sources of the releases we
deploy (see the package's docstring): rolls, restarts, state lost, topics that stop or start."""

from __future__ import annotations

import functools
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from infra.core import names, references
from infra.core.releases import API_VERSIONS, RESTART_WITH_TASKS
from infra.filters import topics
from infra.plan.connectors import CONFIGMAPS_DIGEST, ConnectorKind
from infra.plan.monitoring import owner
from infra.tools.diff.model import KINDS, REPLACED_BY, Effect, Key, ObjectDiff, Snapshot, StackDiff, _under, changes

EXAMPLES = 5


# The Connect cluster's identity (Kafka WorkerConfig / DistributedConfig): a new value is a new
# cluster, with empty configurations, offsets and statuses. Strimzi 1.x also takes them as fields.
CONNECT_STATE = {path: s.label for s in names.CONNECT_STORAGE
                 for path in (f"spec.config.{s.key}", f"spec.{s.field}")}


SOURCE_CLASS = ConnectorKind.source.connector_class


# Kafka's ConfigDef LIST type splits on commas with the whitespace around them.
LIST_SPLIT = re.compile(r"\s*,\s*")


def compare(stack: str, before: Snapshot, after: Snapshot, examples: int = EXAMPLES) -> StackDiff:
    diffs = []
    for key in sorted(before.objects.keys() | after.objects.keys()):
        old, new = before.objects.get(key), after.objects.get(key)
        who = owner(((new or old) or {}).get("metadata", {}).get("labels"))
        if old is None:
            diffs.append(ObjectDiff(key, "add", who, changes(None, new)))
        elif new is None:
            diffs.append(ObjectDiff(key, "remove", who, changes(old, None)))
        else:
            found = changes(old, new)
            if not found:
                continue
            forcing = tuple(p for p in REPLACED_BY.get(key[1], ()) if any(_under(c.path, p) for c in found))
            diffs.append(ObjectDiff(key, "replace" if forcing else "change", who, found, forcing))
    note = ("" if before.present and after.present else
            "the stack is new" if after.present else "the stack is removed")
    effects = _Reader(before, after, diffs, examples).effects() if diffs else []
    return StackDiff(stack, tuple(diffs), tuple(effects), changes(before.outputs, after.outputs), note)


# ------------------------------------------------------------------------------- effects


def resolve(value: Any, objects: Mapping[Key, Mapping[str, Any]], kubernetes: str) -> Any:
    """A config value with its `${cfmap:<namespace>/<name>:<key>}` references replaced by what the
    ConfigMap of the same render holds, as the worker's provider would read it. Other references
    (secrets, the worker's file) stay as written."""
    if not isinstance(value, str) or references.MARKER not in value:
        return value

    def one(match: re.Match[str]) -> str:
        ref = references.Reference(match.group(1), match.group(3) or "", match.group(4))
        place = ref.kubernetes_object
        if ref.provider != references.Provider.CONFIGMAP.value or place is None:
            return match.group(0)
        cm = objects.get((kubernetes, "ConfigMap", place[0], place[1]))
        data = (cm or {}).get("data") or {}
        return str(data[ref.key]) if ref.key in data else match.group(0)

    return references.PATTERN.sub(one, value)


def effective(obj: Mapping[str, Any], objects: Mapping[Key, Mapping[str, Any]], kubernetes: str) -> dict[str, Any]:
    config = (obj.get("spec") or {}).get("config") or {}
    return {k: resolve(v, objects, kubernetes) for k, v in config.items()}


def source_filter(config: Mapping[str, Any]) -> topics.Filter:
    """A MirrorSource connector's filter from its effective config (DefaultTopicFilter's keys)."""
    return topics.Filter(kafka_list(config.get("topics")), kafka_list(config.get("topics.exclude")))


def kafka_list(value: Any) -> tuple[str, ...]:
    text = "" if value is None else str(value).strip()
    return tuple(LIST_SPLIT.split(text)) if text else ()


class _Reader:
    """Reads the object differences of one stack as what they do."""

    def __init__(self, before: Snapshot, after: Snapshot, diffs: list[ObjectDiff], examples: int) -> None:
        self.before, self.after, self.diffs, self.examples = before, after, diffs, examples
        self.out: list[Effect] = []

    def add(self, kind: str, d: ObjectDiff | tuple[str, str], subject: str, text: str,
            examples: Iterable[str] = ()) -> None:
        who, kube = (d.owner, d.kubernetes) if isinstance(d, ObjectDiff) else d
        self.out.append(Effect(kind, who, kube, subject, text, tuple(examples)))

    def effects(self) -> list[Effect]:
        renamed, replaced = self._renamed_connectors(), self._replaced_connects()
        changed = {d.key for d in self.diffs}
        for key in sorted(self.before.objects.keys() & self.after.objects.keys()):
            if key[1] == "KafkaConnector" and key not in changed and "spec" in self.after.objects[key]:
                # Unchanged as written: what the worker resolves may still differ.
                self._connector(ObjectDiff(key, "change", owner(self.after.objects[key]["metadata"].get("labels"))),
                                renamed)
        for d in self.diffs:
            kind = d.key[1]
            self._api_version(d)
            if kind == "KafkaConnect":
                self._connect(d, replaced)
            elif kind == "KafkaConnector":
                self._connector(d, renamed)
            elif kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "NetworkPolicy"):
                self._access(d)
            elif kind == "Namespace" and d.action == "remove":
                self.add("delete", d, d.title, "the namespace is deleted, and with it every object in it")
        self._topics()
        order = list(KINDS)
        return sorted(self.out, key=lambda e: (order.index(e.kind), e.kubernetes, e.owner, e.subject))

    # --- Connect clusters

    def _connect(self, d: ObjectDiff, replaced: dict[Key, Key]) -> None:
        if d.action == "add" and d.key in replaced.values():
            return
        if d.action == "add":
            self.add("create", d, d.title, "a new Connect cluster: Strimzi deploys its workers")
            return
        if d.action == "remove" and d.key in replaced:
            new_key = replaced[d.key]
            old_state = _connect_state(self.before.objects[d.key])
            new_state = _connect_state(self.after.objects[new_key])
            shown = ", ".join(f"{label} {old_state[label]} → {new_state.get(label)}" for label in old_state
                              if old_state[label] != new_state.get(label))
            self.add("state-lost", d, d.title,
                     f"Connect cluster {new_key[2] + '/' if new_key[2] else ''}{new_key[3]} takes its place on the "
                     f"same Kafka with a new identity ({shown or 'a new name'}): its workers start with no connector "
                     "configurations, offsets or statuses, so the source connectors copy every topic again from "
                     "the earliest offset (duplicates in the target), and the old storage topics are left behind")
            return
        if d.action == "remove":
            self.add("delete", d, d.title, "the Connect cluster is deleted: its workers stop, and every "
                                           "connector on it stops replicating. " + self._left_behind(d.key))
            return
        # The identity the worker runs with, not where the object writes it: a release that moves
        # the group id and storage topics from spec.config to spec fields (v1) keeps the cluster.
        old_state, new_state = _connect_state(self.before.objects[d.key]), _connect_state(self.after.objects[d.key])
        lost = [label for label in old_state if old_state[label] != new_state[label]]
        if lost:
            shown = ", ".join(f"{label} {old_state[label]} → {new_state[label]}" for label in lost)
            self.add("state-lost", d, d.title,
                     f"a new {' and '.join(lost)} ({shown}) is a new Connect cluster: its workers start with "
                     "no connector configurations, offsets or statuses, so the source connectors copy every "
                     "topic again from the earliest offset (duplicates in the target), and the old storage "
                     "topics are left behind")
        spec = [c for c in d.changes if _under(c.path, "spec")]
        rolling = [c for c in spec if not (_under(c.path, "spec.replicas") or _under(c.path, "spec.logging")
                                           or (c.path in CONNECT_STATE and not lost))]
        upgrade = self._operator_upgrade(self.after.objects[d.key])
        if rolling or upgrade:
            paths = sorted({_field(c.path) for c in rolling})
            why = "; ".join(filter(None, [upgrade, ", ".join(paths) + " changed" if paths else ""]))
            self.add("roll", d, d.title, f"Strimzi rolls the Connect pods one by one ({why}): every connector's "
                                         "tasks restart on the new workers")
        for c in spec:
            if c.path == "spec.replicas":
                text = f"Connect scales from {c.before} to {c.after} workers; the tasks are rebalanced (no pod rolls)"
                if isinstance(c.before, int) and isinstance(c.after, int) and c.after < c.before:
                    config = (self.after.objects[d.key].get("spec") or {}).get("config") or {}
                    delay = int(config.get(names.REBALANCE_DELAY, names.DEFAULT_REBALANCE_DELAY_MS)) // 1000
                    text += (f": the removed workers' tasks wait {delay} s for them to come back before the others "
                             f"take them ({names.REBALANCE_DELAY}; connect.rebalanceDelaySeconds), and replicate "
                             "nothing meanwhile")
                self.add("scale", d, d.title, text)
        if any(_under(c.path, "spec.logging") for c in spec) and not (rolling or upgrade):
            self.add("roll", d, d.title, "only the loggers change: Strimzi sets them through the Connect REST "
                                         "API, no pod rolls")

    def _left_behind(self, key: Key) -> str:
        """What a deleted Connect cluster leaves on the Kafka clusters, and what its topics then do
        to a flow added back. Nothing deletes a topic when its KafkaConnect goes (Strimzi deletes
        the pods, not the storage the worker created); the worker's group id and storage topics
        are its identity (names.connect_identity), so a Connect cluster of the same name later
        reads them again: its connectors' configurations and the source offsets Connect stored
        (MirrorUtils.wrapPartition keys them by alias, topic and partition)."""
        kube, _, namespace, name = key
        state = _connect_state(self.before.objects[key])
        storage = ", ".join(f"{label} {value}" for label, value in state.items())
        pairs = sorted({_aliases(effective(o, self.before.objects, kube)) for k, o in self.before.objects.items()
                        if k[0] == kube and k[1] == "KafkaConnector" and k[2] == namespace
                        and _connector_home(o)[0] == name} - {("", "")})
        mirror = []
        for source, target in pairs:
            flow = names.FlowNames(name, source, target)
            kept = " (another Connect cluster between the same clusters still uses both)" \
                if (kube, source, target) in self._pairs_after else ""
            mirror.append(f"{flow.checkpoints_topic} on {target} and {flow.offset_syncs_topic} on {source}{kept}")
        return (f"Left on the target Kafka: its {storage}"
                + (", and " + "; ".join(mirror) if mirror else "")
                + ", with the remote topics and what they hold. A Connect cluster named "
                f"{name} later takes these storage topics again: its connectors resume after the source offsets "
                "stored here, so records the source still holds are copied and records it deleted meanwhile "
                "never arrive; delete the storage topics to retire the flow for good (a flow added back then "
                "copies every topic from the earliest offset: duplicates in the target); "
                "docs/operations.md#removing-a-flow")

    @functools.cached_property
    def _pairs_after(self) -> set[tuple[str, str, str]]:
        """(Kubernetes cluster, source alias, target alias) of every connector after the change:
        read once per diff, however many Connect clusters it deletes."""
        return {(k[0], *_aliases(effective(o, self.after.objects, k[0]))) for k, o in self.after.objects.items()
                if k[1] == "KafkaConnector"}

    def _operator_upgrade(self, connect: Mapping[str, Any]) -> str:
        """Why an operator upgrade rolls a Connect cluster, or "": the new release runs its workers
        on its own images (the operator's Connect image map is per release), unless the
        KafkaConnect names its own image."""
        old, new = (side.outputs.get("operator") or {} for side in (self.before, self.after))
        if not old or not new or old.get("version") == new.get("version") or (connect.get("spec") or {}).get("image"):
            return ""
        return (f"the operator moves from {old.get('flavour')} {old.get('version')} to {new.get('flavour')} "
                f"{new.get('version')}, whose images run the workers")

    def _api_version(self, d: ObjectDiff) -> None:
        moved = next((c for c in d.changes if c.path == "apiVersion"), None)
        if d.action != "change" or moved is None or not {moved.before, moved.after} <= set(API_VERSIONS):
            return
        self.add("api-version", d, d.title,
                 f"{moved.before} → {moved.after}: Pulumi updates the object in place (aliased from its old type, "
                 f"no create or delete); the cluster's {d.key[1]} CRD must serve {moved.after} first "
                 "(docs/operations.md#operator-upgrades)")

    # --- connectors

    def _pairs(self, kind: str, same: Callable[[Key, Key], bool]) -> dict[Key, Key]:
        """Removed objects of `kind` paired with an added one that takes its place (`same`)."""
        removed = [d.key for d in self.diffs if d.key[1] == kind and d.action == "remove"]
        added = [d.key for d in self.diffs if d.key[1] == kind and d.action == "add"]
        pairs: dict[Key, Key] = {}
        for r in removed:
            for a in added:
                if a[0] == r[0] and a not in pairs.values() and same(r, a):
                    pairs[r] = a
                    break
        return pairs

    def _renamed_connectors(self) -> dict[Key, Key]:
        """A removed and an added connector of one class between the same clusters (the aliases
        the worker resolves): the same replication under another name."""
        def same(r: Key, a: Key) -> bool:
            old, new = self.before.objects[r], self.after.objects[a]
            eo, en = effective(old, self.before.objects, r[0]), effective(new, self.after.objects, a[0])
            return (_connector_home(old)[1] == _connector_home(new)[1]
                    and all(eo.get(k) == en.get(k) for k in ("source.cluster.alias", "target.cluster.alias")))
        return self._pairs("KafkaConnector", same)

    def _replaced_connects(self) -> dict[Key, Key]:
        """A removed and an added Connect cluster on the same Kafka: one takes the other's place."""
        def same(r: Key, a: Key) -> bool:
            return bool((self.before.objects[r].get("spec") or {}).get("bootstrapServers")
                        == (self.after.objects[a].get("spec") or {}).get("bootstrapServers"))
        return self._pairs("KafkaConnect", same)

    def _connector(self, d: ObjectDiff, renamed: dict[Key, Key]) -> None:
        objects = self.after.objects if d.action != "remove" else self.before.objects
        obj = objects[d.key]
        cls = str((obj.get("spec") or {}).get("class", ""))
        short = cls.rsplit(".", 1)[-1] or "connector"
        if d.action == "remove" and d.key in renamed:
            to = renamed[d.key]
            where = f"{to[2]}/{to[3]}" if to[2] != d.key[2] else to[3]
            self.add("state-lost", d, d.title,
                     f"the {short} is replaced by {where}: Connect keeps connector offsets per Connect cluster and "
                     f"connector name, so {to[3]} starts without {d.key[3]}'s"
                     + (": it copies its topics again from the earliest offset (duplicates in the target)"
                        if cls == SOURCE_CLASS else ""))
            return
        if d.action == "add" and d.key in renamed.values():
            return
        if d.action == "add":
            self.add("create", d, d.title, f"a new {short}: Strimzi creates it on its Connect cluster")
            return
        if d.action == "remove":
            self.add("delete", d, d.title, f"the {short} is deleted from its Connect cluster")
            return
        old, new = self.before.objects[d.key], self.after.objects[d.key]
        kube = d.kubernetes
        if _connector_home(old)[0] != _connector_home(new)[0]:
            self.add("state-lost", d, d.title,
                     f"the {short} moves from Connect cluster {_connector_home(old)[0]} to {_connector_home(new)[0]}: "
                     "its offsets stay in the old cluster's offset storage topic")
        sent = [c for c in d.changes if _under(c.path, "spec.config") or c.path in
                ("spec.class", "spec.tasksMax", "spec.version")]
        # What the worker resolves: the values behind the config-provider references.
        before_eff, after_eff = effective(old, self.before.objects, kube), effective(new, self.after.objects, kube)
        literal_old, literal_new = old["spec"].get("config") or {}, new["spec"].get("config") or {}
        hidden = sorted(k for k in before_eff.keys() | after_eff.keys()
                        if before_eff.get(k) != after_eff.get(k) and literal_old.get(k) == literal_new.get(k))
        if sent:
            paths = sorted({c.path.removeprefix("spec.config.") for c in sent} - {CONFIGMAPS_DIGEST})
            read = [f"the ConfigMap values it reads: {', '.join(hidden)}"] if hidden else []
            self.add("restart", d, d.title, "Strimzi sends the new configuration to Connect, which restarts the "
                                            "connector and its tasks (" + "; ".join(paths + read) + ")")
        for c in d.changes:
            # An absent state is running (Strimzi's default): writing it out changes nothing.
            if c.path == "spec.state" and (c.before or "running") != (c.after or "running"):
                self.add("state", d, d.title, f"the {short} goes from {c.before or 'running'} to {c.after or 'running'}")
        if hidden and not sent:
            self.add("not-applied", d, d.title,
                     "only values the connector reads through a ConfigMap change (" + ", ".join(hidden) + "): the "
                     "configuration Strimzi compares is unchanged, so it sends nothing, and the running connector "
                     "keeps the old values until it restarts with its tasks (" + RESTART_WITH_TASKS + ")")
        alias_old, alias_new = before_eff.get("source.cluster.alias"), after_eff.get("source.cluster.alias")
        if cls == SOURCE_CLASS and alias_old != alias_new:
            self.add("state-lost", d, d.title,
                     f"the source cluster alias changes ({_short(alias_old)} → {_short(alias_new)}): MirrorMaker 2 "
                     "keys its offsets by alias, topic and partition, so every topic is copied again from the "
                     "earliest offset")
        policy = [k for k in ("replication.policy.class", "replication.policy.separator")
                  if before_eff.get(k) != after_eff.get(k)]
        if policy and cls == SOURCE_CLASS:
            # The source connector names the remote topics; its offsets (by source partition) stay.
            changed = "; ".join(f"{k}: {_short(before_eff.get(k))} → {_short(after_eff.get(k))}" for k in policy)
            self.add("policy", d, d.title,
                     f"the replication policy changes ({changed}): remote topics get other names, continuing from "
                     "the stored offsets, so the new remote topics hold only what is copied from now on and "
                     "consumers of the old names stop receiving records",
                     _renames(before_eff, after_eff, self.examples))

    # --- access

    def _access(self, d: ObjectDiff) -> None:
        if d.action == "add":
            text = "new access rules: " + _rules(self.after.objects[d.key])
        elif d.action == "remove":
            text = "access rules removed: " + _rules(self.before.objects[d.key])
        else:
            text = ("access rules change: " + _rules(self.before.objects[d.key]) + " → "
                    + _rules(self.after.objects[d.key]))
        self.add("policy", d, d.title, text)

    # --- topics

    def _topics(self) -> None:
        """Topics that stop or start replicating, per pair of Kafka clusters (the union of the
        running source connectors between them)."""
        before, after = _flow_filters(self.before), _flow_filters(self.after)
        for pair in sorted(before.keys() | after.keys()):
            old, new = before.get(pair), after.get(pair)
            if old == new:
                continue
            where = (pair, "")  # about Kafka clusters, not one Kubernetes cluster
            subject = "source connectors " + ", ".join(sorted(set((old.connectors if old else ()) + (new.connectors if new else ()))))
            allowance = topics.Allowance()
            try:
                stop = difference(old, new, self.examples, allowance)
                start = difference(new, old, self.examples, allowance)
            except topics.Undecided as exc:
                self.add("undecided", where, subject,
                         f"the topics that stop or start replicating could not be decided ({exc}): compare the "
                         "filters by hand")
                continue
            if stop:
                self.add("topics-stop", where, subject, _topic_text(stop, self.examples, "no longer match"), stop)
            if start:
                self.add("topics-start", where, subject, _topic_text(start, self.examples, "now match"), start)


def _topic_text(found: list[str], limit: int, verb: str) -> str:
    more = " (the shortest shown; there may be more)" if len(found) >= limit else ""
    return f"topics that {verb} the filters of the source connectors between these clusters{more}"


@dataclass(frozen=True)
class FlowTopics:
    """A flow's running source connectors and their filters, as the worker resolves them."""
    connectors: tuple[str, ...]
    topics: topics.Topics


def _flow_filters(side: Snapshot) -> dict[str, FlowTopics]:
    """What each pair of Kafka clusters replicates on one side (by the aliases the worker
    resolves, whatever flow, namespace or Kubernetes cluster the connectors are in): the running
    source connectors' `topics` and `topics.exclude`, resolved through the render's ConfigMaps and
    split as Kafka splits lists."""
    found: dict[str, list[tuple[str, topics.Filter]]] = defaultdict(list)
    for key, obj in sorted(side.objects.items()):
        spec = obj.get("spec") or {}
        if key[1] != "KafkaConnector" or spec.get("class") != SOURCE_CLASS or spec.get("state") in ("stopped", "paused"):
            continue
        config = effective(obj, side.objects, key[0])
        pair = f"{config.get('source.cluster.alias')} → {config.get('target.cluster.alias')}"
        found[pair].append((key[3], source_filter(config)))
    return {k: FlowTopics(tuple(n for n, _ in v), topics.Topics(tuple(f for _, f in v))) for k, v in found.items()}


def difference(a: FlowTopics | None, b: FlowTopics | None, count: int, allowance: topics.Allowance) -> list[str]:
    """Up to `count` shortest topics `a` replicates and `b` does not (None: no running source)."""
    if a is None:
        return []
    return topics.difference(a.topics, b.topics if b is not None else None, count, allowance)


def remote_topic(config: Mapping[str, Any], topic: str) -> str | None:
    """The remote name of `topic` under a connector's policy (Kafka's DefaultReplicationPolicy
    and IdentityReplicationPolicy; None for another class)."""
    cls = str(config.get("replication.policy.class") or "org.apache.kafka.connect.mirror.DefaultReplicationPolicy")
    if cls.endswith(".IdentityReplicationPolicy"):
        return topic
    if cls.endswith(".DefaultReplicationPolicy"):
        return f"{config.get('source.cluster.alias')}{config.get('replication.policy.separator') or '.'}{topic}"
    return None


def _renames(before: Mapping[str, Any], after: Mapping[str, Any], count: int) -> list[str]:
    """`old remote name → new remote name` for the shortest topics the connector replicates."""
    try:
        found = topics.difference(source_filter(after), None, min(count, 3))
    except topics.Undecided:
        return []
    out = []
    for topic in found:
        old, new = remote_topic(before, topic), remote_topic(after, topic)
        if old is not None and new is not None:
            out.append(f"{old} → {new}")
    return out


def _connect_state(obj: Mapping[str, Any]) -> dict[str, str]:
    """A KafkaConnect's identity, by label, as the worker gets it (names.connect_identity)."""
    spec = obj.get("spec") or {}
    identity = names.connect_identity(spec, spec.get("config") or {})
    return {s.label: identity[s.key] for s in names.CONNECT_STORAGE}


def _aliases(config: Mapping[str, Any]) -> tuple[str, str]:
    """A MirrorMaker 2 connector's (source, target) cluster aliases from its effective config;
    empty where it has none."""
    return str(config.get("source.cluster.alias", "")), str(config.get("target.cluster.alias", ""))


def _connector_home(obj: Mapping[str, Any]) -> tuple[str, str]:
    labels = obj.get("metadata", {}).get("labels") or {}
    return str(labels.get(names.CLUSTER_LABEL, "")), str((obj.get("spec") or {}).get("class", ""))


def _field(path: str) -> str:
    """`spec.template.pod.volumes[0].name` → `spec.template`; a worker config key whole
    (`spec.config.group.id`)."""
    return path if path.startswith("spec.config.") else ".".join(path.split(".")[:2])


def _rules(obj: Mapping[str, Any]) -> str:
    if obj.get("kind") in ("Role", "ClusterRole"):
        rules = obj.get("rules") or []
        return "; ".join(
            f"{','.join(r.get('verbs', []))} {','.join(r.get('resources', []))}"
            + (f" named {','.join(r['resourceNames'])}" if r.get("resourceNames") else " (any name)")
            for r in rules) or "none"
    if obj.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef") or {}
        subjects = ", ".join(f"{s.get('kind')} {s.get('namespace', '') + '/' if s.get('namespace') else ''}{s.get('name')}"
                             for s in obj.get("subjects") or [])
        return f"{ref.get('kind')} {ref.get('name')} to {subjects or 'nobody'}"
    spec = obj.get("spec") or {}
    return json.dumps({k: spec[k] for k in sorted(spec)}, sort_keys=True)


def _short(value: Any, limit: int = 80) -> str:
    text = "(absent)" if value is None else json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"
