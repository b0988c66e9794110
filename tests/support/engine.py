"""The engine tier's servers and the checks of what a run left behind on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from infra.core import names
from infra.plan.offsets import is_patch
from infra.tools.rehearsal.apiserver import ServerError, State, kubeconfig, start_many
from infra.tools.rehearsal.kubeapi import Client
from tests.support.stacks import unavailable

# What the provider waits on, run for real: namespace deletion, claim protection, and the
# quota status a ResourceQuota's create waits for (a split flow's `resourceQuota`).
CONTROLLERS = ("namespace-controller", "garbage-collector-controller",
               "persistentvolumeclaim-protection-controller", "resourcequota-controller")


# The ambient kubeconfig's current context of the regions stack: it leads nowhere, so that a
# resource without its explicit provider could not reach any server.
NOWHERE = "nowhere"


def servers(stack: str, topology: dict[str, Any], directory: Path,
            controllers: tuple[str, ...] = CONTROLLERS) -> tuple[dict[str, State], dict, dict[str, str]]:
    """One API server per Kubernetes cluster of the stack; the ambient kubeconfig; the
    kubeconfigs given as secret config."""
    section = topology.get("kubernetes") or {"": {}}
    dirs = [directory / f"apiserver-{name or stack}" for name in sorted(section)]
    try:
        states = dict(zip(sorted(section), start_many(dirs, timeout=90, controllers=controllers)))
    except ServerError as exc:
        unavailable(f"the servers did not start: {exc}")
    if "" in states:
        return states, kubeconfig({stack: states[""]}, stack), {}
    by_context = {entry["context"]: states[name] for name, entry in section.items() if "context" in entry}
    ambient = kubeconfig(by_context, NOWHERE)
    ambient["contexts"].append({"name": NOWHERE, "context": {"cluster": "nowhere", "user": "nobody"}})
    secret = {names.kubeconfig_key(name): yaml.safe_dump(kubeconfig({f"{name}-admin": states[name]}, f"{name}-admin"))
              for name, entry in section.items() if entry.get("kubeconfig") == "secretConfig"}
    return states, ambient, secret


def ours_left(client: Client, objects: list[dict[str, Any]]) -> list[str]:
    """The objects of the render the server still holds (none, once destroyed)."""
    left = []
    for obj in objects:
        res = client.resource(obj["apiVersion"], obj["kind"])
        if res is None:
            continue
        meta = obj["metadata"]
        path = (f"{res.path}/namespaces/{meta['namespace']}/{res.plural}/{meta['name']}" if res.namespaced
                else f"{res.path}/{res.plural}/{meta['name']}")
        if client.request("GET", path)[0] != 404:
            left.append(f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}")
    return left


def object_type_and_name(obj: dict[str, Any]) -> tuple[str, str]:
    """The provider's type token and the resource name the program gives an object."""
    group_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
    kind = obj["kind"] + ("Patch" if is_patch(obj) else "")
    meta = obj["metadata"]
    return f"kubernetes:{group_version}:{kind}", f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
