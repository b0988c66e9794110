"""An invariant of bidirectional pairs: each direction's objects are the other's with the two
aliases swapped (check_symmetry, run by the plan on every pair)."""

from __future__ import annotations

import re
from typing import Any

from infra.core import names
from infra.core.manifests import JSON
from infra.plan.connectors import CONFIGMAPS_DIGEST
from infra.plan.types import FlowPlan, PartPlan


def check_symmetry(a: FlowPlan, b: FlowPlan) -> None:
    """The two directions of a bidirectional pair replicate alike: with the names derived from
    the aliases swapped, their connectors (classes, tasks, state, every property but the cluster
    connections, which differ per cluster by nature) and replication ConfigMaps are equal."""
    for part_a, part_b in zip(a.parts, b.parts, strict=True):
        na, nb = part_a.names, part_b.names
        mapping = {na.namespace: nb.namespace, na.source_configmap: nb.source_configmap,
                   na.target_configmap: nb.target_configmap}
        if _swap(_replication_view(part_a), mapping) != _replication_view(part_b):
            raise AssertionError(f"bidirectional pair {a.name} / {b.name} is not symmetric")


def _replication_view(part: PartPlan) -> list[JSON]:
    connection = ("source.cluster.", "target.cluster.", "producer.override.", "consumer.override.", "admin.override.")
    # The storage topics an identity flow excludes are those of every Connect cluster on its
    # target, which other flows of the stack add to: not a property of the pair.
    view: list[JSON] = [
        {k: ",".join(t for t in v.split(",") if not names.is_storage_topic(t)) if k == "topics.exclude" else v
         for k, v in o["data"].items()}
        for o in part.access if o["kind"] == "ConfigMap"
        and o["metadata"]["name"].startswith(part.names.replication_configmap)
        and o["metadata"]["name"] != part.names.metrics_configmap]  # the exporter's rules: not replication
    for c in part.connectors:
        # Which connector of a cluster pair copies the heartbeats is decided across the whole
        # stack (heartbeat_replicators), so the key may differ between the two directions.
        # The digest covers each direction's own ConfigMaps (their aliases differ by nature), the
        # versions the Secrets of its own connections.
        config = {k: v for k, v in c.config.items()
                  if (not k.startswith(connection) or k.endswith(".cluster.alias"))
                  and k not in ("heartbeats.replication.enabled", CONFIGMAPS_DIGEST, names.REFERENCED_SECRETS)}
        # An offsets request names one connector of one direction (infra/plan/offsets.py).
        spec = {k: v for k, v in c.manifest["spec"].items() if k not in ("listOffsets", "alterOffsets")}
        view.append({**spec, "config": config, "name": c.name})
    return view


def _swap(value: Any, mapping: dict[str, str]) -> Any:
    """Replace every occurrence of the mapping's keys, in one pass (so a -> b, b -> a swaps).
    Names, and names that start derived ones (`repl-a-b` in `repl-a-b-heartbeat`), but never a
    name inside a word: `source-a` is not in the user's key `offset-syncs-source-admin.retries`."""
    names_ = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(f"(?<![a-z0-9-])(?:{names_})(?![a-z0-9])")

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return pattern.sub(lambda m: mapping[m.group(0)], v) if isinstance(v, str) else v
    return walk(value)
