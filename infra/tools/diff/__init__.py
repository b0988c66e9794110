"""What a change does to replication: two renders of each stack compared object by object, and
each difference read as Strimzi, Kafka Connect, MirrorMaker 2 and pulumi-kubernetes act on it.

The renders are the offline render of `python -m infra render` (no cluster, no backend, secret
config filled with placeholders), so the diff needs nothing a pull request's reviewer lacks.
Secret values are masked in both renders: a Secret shows its keys, never its data.

Objects are matched by (Kubernetes cluster, kind, namespace, name). A difference is
- added or removed;
- replaced, where pulumi-kubernetes 4.25.0 deletes and creates the object instead of patching it
  (`forceNewProperties`, provider/pkg/provider/diff.go: a ConfigMap's `data`, a Secret's `type`
  and `data`, a RoleBinding's `roleRef`, a claim's storage fields, and any object's name or
  namespace, which here is a removal and an addition);
- changed otherwise.

What each does (`Effect`), from the sources of the releases we deploy:
- KafkaConnect: a change to its spec rolls the Connect pods, since Strimzi hashes the worker
  configuration and the pod template into the pods (KafkaConnectAssemblyOperator,
  `strimzi.io/configuration-hash`, Strimzi 1.2.0); `replicas` alone scales, `logging` alone is
  applied in place. A new group id or new storage topics is a new Connect cluster: connector
  configurations, offsets and statuses start empty. A deleted one leaves its storage topics and
  the pair's MirrorMaker 2 topics on the Kafka clusters (nothing deletes a topic): said with what
  a Connect cluster of the same name, added back, resumes from.
- KafkaConnector: Strimzi compares the spec's config (with `tasks.max` and the class) to what
  the Connect REST API returns and, when they differ, sends it; Connect then restarts the
  connector and its tasks (AbstractConnectOperator.maybeCreateOrUpdateConnector). Connect keeps
  source offsets per connector name, and MirrorMaker 2 keys them by source cluster alias, topic
  and partition (MirrorUtils.wrapPartition, Kafka 3.8.0): a new name or a new source alias starts
  from the earliest offsets again (`auto.offset.reset=earliest`), so the target gets duplicates.
- A value a connector reads through a config provider (`${cfmap:...}`) is resolved by the worker
  when the connector starts. Where only that value changes, the spec Strimzi compares does not,
  and the running connector keeps the old value until something restarts it: said as such.
- Topic filters: the topics that stop or start replicating are computed on the filters'
  automata (infra/filters/topics.py), per flow, with the shortest examples.
"""

from infra.tools.diff.effects import (CONNECT_STATE, EXAMPLES, LIST_SPLIT, SOURCE_CLASS, FlowTopics, compare,
                                      difference, effective, kafka_list, remote_topic, resolve, source_filter)
from infra.tools.diff.model import (ABSENT, KINDS, REPLACED_BY, Change, Effect, Key, ObjectDiff, Snapshot, StackDiff,
                                    changes, flatten, key_of, read_folder, snapshot)
from infra.tools.diff.report import COMMENT_LIMIT, COMMENT_MARKER, SIGNS, VERBS, as_json, counts, markdown, text
from infra.tools.diff.sources import MAX_REF, RENDER_SECONDS, render_at, render_here, stacks_in

__all__ = ["ABSENT", "COMMENT_LIMIT", "COMMENT_MARKER", "CONNECT_STATE", "Change", "EXAMPLES", "Effect",
           "FlowTopics", "KINDS", "Key", "LIST_SPLIT", "MAX_REF", "ObjectDiff", "RENDER_SECONDS",
           "REPLACED_BY", "SIGNS", "SOURCE_CLASS", "Snapshot", "StackDiff", "VERBS", "as_json", "changes",
           "compare", "counts", "difference", "effective", "flatten", "kafka_list", "key_of", "markdown",
           "read_folder", "remote_topic", "render_at", "render_here", "resolve", "snapshot", "source_filter",
           "stacks_in", "text"]
