"""The classes a topology's Connect clusters load by name, and which of them no jar here provides:
said before a rehearsal starts anything, with the flow and connector that needs each.

A Connect worker loads by name its connectors (`spec.class`), their transforms and predicates
(`transforms.<alias>.type`, `predicates.<alias>.type`), converters (`*.converter`), and every
setting of Kafka's CLASS and LIST-of-classes types (`replication.policy.class`,
`config.providers.<name>.class`, `*.classes`), from its classpath or its `plugin.path`
(`org.apache.kafka.connect.runtime.isolation.PluginUtils`: each jar or folder in a plugin.path
folder is one plugin). A class that neither holds fails the connector (or the whole worker) only
once it runs; here it is found in the jars' listings, before any JVM starts.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.core import names, references
from infra.core.classes import class_settings

ARCHIVES = (".jar", ".zip")  # what PluginUtils.isArchive reads


@dataclass(frozen=True)
class Need:
    namespace: str
    connect: str          # the KafkaConnect's name
    connector: str | None  # None: the worker itself needs it (every connector of the cluster fails)
    flow: str
    key: str
    name: str             # the class name, as written

    def where(self) -> str:
        owner = f"connector {self.connector}" if self.connector else f"Connect cluster {self.connect}"
        return f"flow {self.flow}, {owner}"


def needs(objects: Iterable[dict[str, Any]]) -> list[Need]:
    """Every class the rendered objects' Connect clusters and connectors load by name."""
    objects = list(objects)
    configmaps = {(o["metadata"]["namespace"], o["metadata"]["name"]): o.get("data") or {}
                  for o in objects if o["kind"] == "ConfigMap"}

    def resolved(value: str) -> str | None:
        whole = references.configmap_key(value)
        if whole:
            found = configmaps.get(whole[:2], {}).get(whole[2])
            return found if isinstance(found, str) else None
        return None if references.MARKER in value else value

    out = []
    for obj in objects:
        if obj["kind"] not in ("KafkaConnect", "KafkaConnector"):
            continue
        meta, spec = obj["metadata"], obj.get("spec") or {}
        labels = meta.get("labels") or {}
        flow = labels.get(names.FLOW_LABEL, meta["namespace"])
        config = {k: v for k, v in (spec.get("config") or {}).items() if isinstance(v, str)}
        settings = class_settings({k: resolved(v) or "" for k, v in config.items()})
        if obj["kind"] == "KafkaConnect":
            out += [Need(meta["namespace"], meta["name"], None, flow, k, n) for k, n in settings]
        else:
            connect = labels[names.CLUSTER_LABEL]
            if spec.get("class"):
                out.append(Need(meta["namespace"], connect, meta["name"], flow, "class", spec["class"]))
            out += [Need(meta["namespace"], connect, meta["name"], flow, k, n) for k, n in settings]
    return out


@dataclass
class Index:
    """The classes some jars and folders hold: binary names (`a.b.C$D`) and the simple names
    Connect also accepts for plugins (`C$D`; a connector's without `Connector`)."""
    classes: set[str]
    simple: set[str]

    def holds(self, name: str) -> bool:
        if "." in name:
            return name in self.classes
        return name in self.simple or f"{name}Connector" in self.simple


def index(entries: Iterable[Path]) -> Index:
    """The classes of jars, and of class folders (a .class file's path under its folder)."""
    classes: set[str] = set()

    def add(relative: str) -> None:
        if relative.endswith(".class") and not relative.endswith(("module-info.class", "package-info.class")):
            name = relative[:-len(".class")]
            if name.startswith("META-INF/versions/"):  # a multi-release jar's copy
                name = name.split("/", 3)[-1]
            classes.add(name.replace("/", "."))

    for entry in entries:
        if entry.is_dir():
            for found in entry.rglob("*.class"):
                add(found.relative_to(entry).as_posix())
        elif entry.suffix in ARCHIVES and entry.is_file():
            try:
                with zipfile.ZipFile(entry) as archive:
                    for name in archive.namelist():
                        add(name)
            except (zipfile.BadZipFile, OSError):
                continue  # the worker cannot read it either
    return Index(classes, {c.rsplit(".", 1)[-1] for c in classes})


def classpath_entries(classpath: str) -> list[Path]:
    """The jars and folders of a Java classpath (`folder/*` is the folder's jars)."""
    out: list[Path] = []
    for part in classpath.split(":"):
        if part.endswith("/*"):
            out += sorted(p for p in Path(part[:-2]).glob("*") if p.suffix in ARCHIVES)
        elif part:
            out.append(Path(part))
    return out


def plugin_locations(folder: Path) -> list[Path]:
    """The plugins of a plugin.path folder: each jar and each folder in it
    (PluginUtils.pluginLocations)."""
    return [c for c in sorted(folder.iterdir()) if c.is_dir() or c.suffix in ARCHIVES]


def plugin_entries(folder: Path) -> list[Path]:
    """What Connect loads from a plugin.path folder: each jar in it, and each folder in it with
    its jars and class files (pluginUrls)."""
    out: list[Path] = []
    for child in plugin_locations(folder):
        out.append(child)
        if child.is_dir():
            out += sorted(p for p in child.rglob("*") if p.suffix in ARCHIVES and p.is_file())
    return out


def missing(wanted: Iterable[Need], found: Mapping[tuple[str, str], Index]) -> list[Need]:
    """The needs whose class the index of their Connect cluster ((namespace, name)) lacks."""
    # In a stable order (flow, Connect cluster, connector, setting): the report is read and compared.
    return sorted((n for n in wanted if not found[(n.namespace, n.connect)].holds(n.name)),
                  key=lambda n: (n.flow, n.namespace, n.connect, n.connector or "", n.key, n.name))


def not_runnable(gaps: Iterable[Need], connectors: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], list[Need]]:
    """Connectors ((namespace, name)) that cannot run, with why: their own missing classes, and
    every connector of a Connect cluster that lacks one itself. `connectors`: (namespace,
    KafkaConnect, connector) of every rendered connector."""
    out: dict[tuple[str, str], list[Need]] = {}
    gaps = list(gaps)
    for namespace, connect, connector in connectors:
        why = [g for g in gaps if g.namespace == namespace and g.connect == connect
               and g.connector in (None, connector)]
        if why:
            out[(namespace, connector)] = why
    return out
