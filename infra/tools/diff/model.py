"""The diff's objects: a render as a snapshot keyed by (Kubernetes cluster, kind, namespace, name),
the property changes between two, and the fields whose change replaces an object
(pulumi-kubernetes 4.25.0 `forceNewProperties`, and the program's own replace_on_changes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from infra.plan.monitoring import GRAFANA_DASHBOARD_IMMUTABLE
from infra.plan.offsets import shown_kind

# Object identity: (Kubernetes cluster, "" for the default provider; kind; namespace; name).
Key = tuple[str, str, str, str]


# pulumi-kubernetes 4.25.0 `forceNew` (provider/pkg/provider/diff.go), for the kinds a stack can
# hold, and the fields the program itself replaces on (replace_on_changes: the GrafanaDashboard's,
# components/monitoring.py): changing one of these fields deletes the object and creates it again.
REPLACED_BY = {
    "GrafanaDashboard": GRAFANA_DASHBOARD_IMMUTABLE,
    "ConfigMap": ("data", "binaryData"),
    "Secret": ("type", "data", "stringData"),
    "PersistentVolumeClaim": ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    "ResourceQuota": ("spec.scopes",),
    "RoleBinding": ("roleRef",),
    "ClusterRoleBinding": ("roleRef",),
}


# ------------------------------------------------------------------------------- the renders


@dataclass(frozen=True)
class Snapshot:
    """One render of one stack: its Kubernetes objects (secrets masked) and its outputs. An
    absent stack (not on that side) has none."""
    objects: dict[Key, dict[str, Any]]
    outputs: dict[str, Any] = field(default_factory=dict)
    present: bool = True


def key_of(kubernetes: str | None, obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return kubernetes or "", shown_kind(obj), meta.get("namespace") or "", meta["name"]


def snapshot(placed: Iterable[tuple[str | None, dict[str, Any]]], outputs: Mapping[str, Any]) -> Snapshot:
    return Snapshot({key_of(k, obj): obj for k, obj in placed}, dict(outputs))


def read_folder(folder: Path) -> Snapshot:
    """A render written by `render` (infra/tools/render.py `write`): `[<kubernetes>/]<namespace>/<Kind>-<name>.yaml`
    and outputs.json."""
    objects = {}
    for path in sorted(folder.rglob("*.yaml")):
        rel = path.relative_to(folder).parts
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        objects[key_of(rel[0] if len(rel) == 3 else None, obj)] = obj
    outputs_file = folder / "outputs.json"
    outputs = json.loads(outputs_file.read_text(encoding="utf-8")) if outputs_file.exists() else {}
    return Snapshot(objects, outputs)


ABSENT = Snapshot({}, {}, present=False)


# ------------------------------------------------------------------------------- differences


@dataclass(frozen=True)
class Change:
    """One property: its path (`spec.config.topics`), before and after (None: absent)."""
    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class ObjectDiff:
    key: Key
    action: str  # "add", "remove", "change", "replace"
    owner: str   # "flow <name>", "audit", "monitoring" or "stack"
    changes: tuple[Change, ...] = ()
    replaced_by: tuple[str, ...] = ()  # the paths that force the replacement

    @property
    def kubernetes(self) -> str:
        return self.key[0]

    @property
    def title(self) -> str:
        _, kind, namespace, name = self.key
        return f"{kind} {namespace + '/' if namespace else ''}{name}"


@dataclass(frozen=True)
class Effect:
    """What a change does: `kind` is one of KINDS; `subject` the object or flow it is about."""
    kind: str
    owner: str
    kubernetes: str
    subject: str
    text: str
    examples: tuple[str, ...] = ()


# In the order a reviewer should read them: what loses data or state first.
KINDS = {
    "state-lost": "connector state lost",
    "topics-stop": "topics stop replicating",
    "topics-start": "topics start replicating",
    "not-applied": "not applied to running connectors",
    "policy": "policy change",
    "roll": "Connect pods roll",
    "api-version": "API version moves",
    "restart": "connector restarts",
    "state": "connector state",
    "scale": "Connect scales",
    "delete": "deleted",
    "create": "created",
    "undecided": "not decided",
}


@dataclass(frozen=True)
class StackDiff:
    stack: str
    objects: tuple[ObjectDiff, ...]
    effects: tuple[Effect, ...]
    outputs: tuple[Change, ...]
    note: str = ""  # e.g. the stack exists on one side only

    @property
    def changed(self) -> bool:
        return bool(self.objects or self.outputs)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Leaves by path: `a.b`, lists by index `a[0]`; an empty map or list is a leaf."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k in sorted(value):
            out.update(flatten(value[k], f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{path}[{i}]"))
        return out
    return {path: value}


def changes(before: Any, after: Any) -> tuple[Change, ...]:
    a, b = flatten(before), flatten(after)
    out: list[Change] = []
    for p in sorted(a.keys() | b.keys()):
        old, new = a.get(p), b.get(p)
        if old == new:
            continue
        inner_old, inner_new = _document(old), _document(new)
        if inner_old is not None and inner_new is not None:
            # A JSON or YAML document held as text (a ConfigMap's audit.json, a metrics config):
            # its own properties, after the key (`data.audit.json › flows[0].topics[0]`).
            out += [Change(f"{p} › {c.path}", c.before, c.after) for c in changes(inner_old, inner_new)]
        else:
            out.append(Change(p, old, new))
    return tuple(out)


def _document(value: Any) -> Any:
    """The mapping or list a multi-line (or JSON) text holds, or None."""
    if not isinstance(value, str) or not (value.lstrip().startswith(("{", "[")) or "\n" in value):
        return None
    try:
        found = yaml.safe_load(value)  # JSON is YAML
    except yaml.YAMLError:
        return None
    return found if isinstance(found, (dict, list)) and found else None


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")
