"""Offline render: the real program under Pulumi's mock engine, no cluster and no CLI.

The mocks record the inputs of every resource the program registers; each Kubernetes object is
written exactly as the program would send it, with secret values replaced by `[secret]`.
"""

from __future__ import annotations

import asyncio
import gc
import atexit
import base64
import copy
import difflib
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pulumi
import yaml
from pulumi.runtime import rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components import program
from infra.core import collector, jsontext, names, stores
from infra.core.errors import Problem, TopologyError
from infra.core.names import PROJECT
from infra.deploy import config as stack_config, deployment
from infra.plan.monitoring import owner
from infra.plan.offsets import shown_kind
from infra.tools import folders

MASK = "[secret]"
COMPONENT_PREFIX = f"{PROJECT}:"
PROVIDER_TYPE = "pulumi:providers:kubernetes"


@dataclass
class Recorded:
    type: str
    name: str
    inputs: dict[str, Any]
    secret_paths: list[str] = field(default_factory=list)
    provider: str = ""  # the provider reference the engine was given ("" for the default)

    @property
    def is_kubernetes(self) -> bool:
        return self.type.startswith("kubernetes:")

    def object(self) -> dict[str, Any]:
        """The Kubernetes object as sent, in clear: its inputs without the engine's own keys."""
        return {k: v for k, v in self.inputs.items() if v is not None and not k.startswith("__")}

    @property
    def kubernetes(self) -> str | None:
        """The Kubernetes cluster of the explicit provider it was given (None: the default)."""
        parts = self.provider.split("::")
        if len(parts) < 4 or parts[2].split("$")[-1] != PROVIDER_TYPE:
            return None
        return parts[3].removeprefix(names.PROVIDER_PREFIX)


SECRET_TYPE = "kubernetes:core/v1:Secret"
# A rehearsal's Secrets as last rendered, by resource name: (inputs, uid) (RecordingMocks.uid).
Uids = dict[str, tuple[dict[str, Any], str]]


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource's inputs; returns them as its state, as a real create would."""

    def __init__(self, previous_outputs: dict[str, Any] | None = None, uids: Uids | None = None) -> None:
        self.resources: list[Recorded] = []
        self.previous_outputs = previous_outputs or {}
        self.uids = uids

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            # The stack's previous outputs, as the engine would read them.
            return f"{args.name}-id", {**args.inputs, "outputs": self.previous_outputs}
        paths: list[str] = []
        inputs = _unwrap(args.inputs, "", paths)
        self.resources.append(Recorded(args.typ, args.name, inputs, paths, args.provider or ""))
        state = inputs
        if args.typ == SECRET_TYPE:
            state = {**inputs, "metadata": {**inputs.get("metadata", {}), "uid": self.uid(args.name, inputs)}}
        return f"{args.name}-id", state

    def uid(self, name: str, inputs: dict[str, Any]) -> str:
        """The uid the API server would give the Secret. Offline, a stand-in named after it: the
        same in every render (`uid-of-<name>`). With `uids` (a rehearsal's, kept across its
        renders), a random one that stays while the Secret's inputs stay, and changes when they
        change, as a replaced Secret's does; the inputs are compared in memory only."""
        if self.uids is None:
            return f"uid-of-{name}"
        seen = self.uids.get(name)
        if seen is not None and seen[0] == inputs:
            return seen[1]
        uid = str(uuid.uuid4())
        self.uids[name] = (copy.deepcopy(inputs), uid)
        return uid

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


def _unwrap(value: Any, path: str, secret_paths: list[str]) -> Any:
    """Strip Pulumi's secret wrappers, noting where they were."""
    if rpc.is_rpc_secret(value):
        secret_paths.append(path)
        return _unwrap(rpc.unwrap_rpc_secret(value), path, secret_paths)
    if isinstance(value, dict):
        return {k: _unwrap(v, f"{path}.{k}" if path else k, secret_paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v, f"{path}[{i}]", secret_paths) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        # The engine carries numbers as doubles; Kubernetes receives JSON integers.
        return int(value)
    return value


@dataclass
class Render:
    stack: str
    resources: list[Recorded]
    outputs: dict[str, Any]
    placeholders: list[str]
    warnings: list[str] = field(default_factory=list)

    def objects(self) -> list[dict[str, Any]]:
        """The Kubernetes objects in clear (tests only: secret values are present here)."""
        return [r.object() for r in self.resources if r.is_kubernetes]

    def objects_by_cluster(self) -> dict[str | None, list[dict[str, Any]]]:
        """The objects in clear per Kubernetes cluster (tests only), as each cluster receives them."""
        out: dict[str | None, list[dict[str, Any]]] = {}
        for r in self.resources:
            if r.is_kubernetes:
                out.setdefault(r.kubernetes, []).append(r.object())
        return out

    def masked_objects(self) -> list[dict[str, Any]]:
        return [_mask(r) for r in self.resources if r.is_kubernetes]

    def placed_objects(self) -> list[tuple[str | None, dict[str, Any]]]:
        """Masked objects with the Kubernetes cluster their provider deploys them to."""
        return [(r.kubernetes, _mask(r)) for r in self.resources if r.is_kubernetes]


def _mask(r: Recorded) -> dict[str, Any]:
    obj = r.object()
    if obj.get("kind") == "Secret":
        for section in ("data", "stringData"):
            if section in obj:
                obj[section] = {k: MASK for k in obj[section]}
    for path in r.secret_paths:  # any other secret Output, wherever it landed
        _set_path(obj, path)
    return obj


def _masked(value: Any) -> Any:
    # A secret map keeps its keys visible, as `pulumi preview` shows a Secret's data keys.
    return {k: MASK for k in value} if isinstance(value, dict) else MASK


def _set_path(obj: dict[str, Any], path: str) -> None:
    parts = [p for p in path.replace("[", ".[").split(".") if p]
    node: Any = obj
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node.get(part)
        if node is None:
            return
    last = parts[-1]
    if last.startswith("["):
        node[int(last[1:-1])] = _masked(node[int(last[1:-1])])
    elif last in node:
        node[last] = _masked(node[last])


def placeholder(key: str, contexts: Mapping[str, str | None] | None = None) -> str:
    """A visible stand-in for secret config `key`, shaped like the real item so that values
    derived from it at deploy time (infra/core/stores.py) can be built: PEM blocks whose content
    spells the placeholder, a JKS truststore (base64) that opens with the password placeholder."""
    value = f"placeholder-{key}"
    alias, _, item = key.rpartition(".")
    if item in ("caCert", "clientCert"):
        return stores.placeholder_certificate(value)
    if item == "clientKey":
        # The PKCS#8 envelope (SEQUENCE, version 0, an algorithm SEQUENCE) around the text.
        body = b"\x02\x01\x00\x30" + bytes([len(value)]) + value.encode()
        return stores.pem("PRIVATE KEY", b"\x30" + bytes([len(body)]) + body)
    if item == "kubeconfig":
        # A kubeconfig the provider could load, with the placeholder as its token; the server's
        # name (.invalid, RFC 2606) resolves nowhere.
        # With the context the topology picks among its contexts (`contexts`, by cluster), if any.
        name = names.kubeconfig_of(key) or key
        context = (contexts or {}).get(name)
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": context or name,
            "clusters": [{"name": name, "cluster": {"server": f"https://{name}.placeholder.invalid"}}],
            "users": [{"name": name, "user": {"token": value}}],
            "contexts": [{"name": context or name, "context": {"cluster": name, "user": name}}]}, sort_keys=False)
    if item == "truststore":
        password = placeholder(f"{alias}.truststorePassword")
        return base64.b64encode(stores.jks(password, trusted=[value.encode()])).decode()
    return value


def run(stack: str, config: dict[str, str] | None = None, secrets: dict[str, str] | None = None,
        placeholder_secrets: bool = False, previous_outputs: dict[str, Any] | None = None,
        only_read: bool = False, uids: Uids | None = None) -> Render:
    """Run the program for `stack` under mocks. Keys are config keys without the project prefix;
    `previous_outputs` stands for the stack's last deployment (an outputs.json). With
    `only_read`, as on the command line, secret config the stack does not read is refused (a
    misspelt key would otherwise leave a placeholder where the value was meant to go).

    Raises TopologyError for invalid input, before any resource is registered.
    """
    config, secrets = dict(config or {}), dict(secrets or {})
    path = stack_config.project_dir() / config.get(stack_config.TOPOLOGY_KEY, f"stacks/{stack}.yaml")
    _, model, stack_plan, audits = deployment.prepare_file(path)
    keys = deployment.secret_keys(model, stack_plan, audits)
    _check_given(keys, config, secrets, placeholder_secrets, only_read)
    filled = []
    if placeholder_secrets:
        contexts = deployment.kubeconfig_contexts(model)
        for key in keys:
            if key not in secrets and key not in config:
                secrets[key] = placeholder(key, contexts)
                filled.append(key)
    deployment.check(model, stack_plan, audits, lambda k: k in secrets or k in config,
                     previous_flows=lambda: (previous_outputs or {}).get("flows"),
                     previous_operator=lambda: (previous_outputs or {}).get("operator"),
                     secret_text=lambda k: None if k in filled else secrets.get(k),  # placeholders: ours, not material
                     is_plain=lambda k: k in config and k not in secrets, path=path)

    mocks = RecordingMocks(previous_outputs, uids)
    all_config = {f"{PROJECT}:{k}": v for k, v in {**config, **secrets}.items()}
    result = under_mocks(program.main, mocks, PROJECT, stack, all_config, [f"{PROJECT}:{k}" for k in secrets])
    return Render(stack, mocks.resources, result, filled, list(model.warnings))


# Secret items read together: a placeholder beside a real value would not open or match it.
PAIRED_ITEMS = (("truststore", "truststorePassword"), ("clientCert", "clientKey"))


def _check_given(keys: list[str], config: Mapping[str, str], secrets: Mapping[str, str], placeholders: bool,
                 only_read: bool = False) -> None:
    """Secret config given on the command line names secret items: a plain setting given as a
    secret (`topology`) would be read by the program as another value than the one checked,
    and a key given twice is ambiguous; a real truststore (or client certificate) beside a placeholder
    password (or key) could never be opened."""
    problems = []
    for key in sorted(secrets):
        if not stack_config.is_secret_item(key):
            problems.append(Problem("--secret", key, "a value (not shown)",
                                    "a secret config key: <alias>.<item> (items: " + ", ".join(stack_config.SECRET_ITEMS)
                                    + f"), {names.REGISTRY_PASSWORD_KEY} or {names.kubeconfig_key('<name>')}; "
                                    "this stack reads " + (", ".join(keys) or "none") + ". Plain settings such as "
                                    "`topology` go with --set"))
        elif key in config:
            problems.append(Problem("--secret", key, "a value (not shown)", "the key once: it is also given with --set"))
        elif only_read and key not in keys:
            close = difflib.get_close_matches(key, keys, n=1)
            problems.append(Problem("--secret", key, "a value (not shown)",
                                    (f"a key this stack reads: did you mean {close[0]}? " if close else
                                     "a key this stack reads: ") + "(" + (", ".join(keys) or "none") + ")"))
    if placeholders:
        for key in keys:
            owner, _, item = key.rpartition(".")
            for first, second in PAIRED_ITEMS:
                other = f"{owner}.{second}" if item == first else f"{owner}.{first}" if item == second else None
                if other in keys and key in secrets and other not in secrets:
                    problems.append(Problem("--secret", other, None,
                                            f"a value beside {key}: the two are read together, and a placeholder "
                                            "would not fit the real one"))
    if problems:
        raise TopologyError(problems, "the command line")


def under_mocks(body: Callable[[], Any], mocks: pulumi.runtime.Mocks, project: str, stack: str,
                config: dict[str, str], secret_keys: list[str]) -> Any:
    """Run `body` as a Pulumi program on the mock engine; what it returns, resolved."""
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False)
    pulumi.runtime.set_all_config(config, secret_keys=secret_keys)
    result: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        return pulumi.Output.from_input(body()).apply(lambda resolved: result.update(value=resolved))

    with collector.program_run():  # as `pulumi up` runs the program (__main__.py)
        _sync_await(run_pulumi_func(lambda: _sync_await(pulumi.Output.from_input(program()).future())))
    return result.get("value")


def close_event_loop() -> None:
    """Close the event loops the engine ran on, before the command exits. Left open, they are
    collected at interpreter exit after the selector's file descriptors, and asyncio prints an
    "Invalid file descriptor" traceback after a successful command. The SDK's mock monitor opens
    one in each worker thread that registers a resource (pulumi/runtime/sync_await.py
    `_ensure_event_loop`), beside the main thread's, and closes none: every loop no longer
    running is closed. A fresh loop takes the main thread's place for whatever runs next in this
    process (tests call the command in-process, the diff renders twice), and those are closed at
    exit in turn, before the interpreter tears anything down."""
    global _CLOSE_AT_EXIT
    _close_idle_loops()
    asyncio.set_event_loop(asyncio.new_event_loop())
    if not _CLOSE_AT_EXIT:
        atexit.register(_close_idle_loops)
        _CLOSE_AT_EXIT = True


_CLOSE_AT_EXIT = False


def _close_idle_loops() -> None:
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        if not loop.is_running() and not loop.is_closed():
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


# ----------------------------------------------------------------- files and summary


def _dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, width=4096, allow_unicode=True)


def object_path(obj: dict[str, Any], kubernetes: str | None = None) -> str:
    """`<namespace>/<Kind>-<name>.yaml`, under `<kubernetes cluster>/` where the topology names them."""
    meta = obj["metadata"]
    folder = meta.get("namespace") or meta["name"]
    local = f"{folder}/{shown_kind(obj)}-{meta['name']}.yaml"
    return f"{kubernetes}/{local}" if kubernetes else local


def check_out(out: Path) -> None:
    """Before rendering: `out` is a folder we may replace (empty, absent or a previous render)
    and can write to (infra/tools/folders.py)."""
    folders.RENDER.check(out)


def write(render: Render, out: Path) -> list[str]:
    out = folders.RENDER.replace(out)  # a previous render goes whole, so no stale object survives
    try:
        written = []
        root = out.resolve()
        for kubernetes, obj in sorted(render.placed_objects(), key=lambda p: object_path(p[1], p[0])):
            rel = object_path(obj, kubernetes)
            path = (out / rel).resolve()
            if root not in path.parents:  # names are checked DNS labels; this guards the folder anyway
                raise folders.RENDER.problem(out, rel, "object paths inside the folder")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_dump(obj), encoding="utf-8")
            written.append(rel)
        (out / "outputs.json").write_text(jsontext.dumps(render.outputs, indent=2, sort_keys=True) + "\n",
                                          encoding="utf-8")
    except OSError as exc:
        raise folders.RENDER.problem(out, None, f"a folder this user can write ({exc.strerror})") from None
    return written


def summary(render: Render) -> str:
    per_flow: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for kubernetes, obj in render.placed_objects():
        meta = obj["metadata"]
        # Objects are grouped per namespace: one per flow, or per Connect cluster of a split flow.
        per_flow[(kubernetes or "", owner(meta["labels"]), meta.get("namespace") or meta["name"])][obj["kind"]] += 1
    components = Counter(r.type.removeprefix(COMPONENT_PREFIX) for r in render.resources
                         if r.type.startswith(COMPONENT_PREFIX))
    providers = sorted(r.name for r in render.resources if r.type == PROVIDER_TYPE)
    lines = [f"Offline preview of stack '{render.stack}' (Pulumi mock engine: no cluster, no Pulumi CLI)", ""]
    current = None
    for kubernetes, flow, namespace in sorted(per_flow):
        if kubernetes and kubernetes != current:
            current = kubernetes
            count = sum(sum(c.values()) for k, c in per_flow.items() if k[0] == kubernetes)
            lines.append(f"Kubernetes cluster {kubernetes} (provider {names.provider_name(kubernetes)}): "
                         f"+ {count} objects")
        kinds = per_flow[(kubernetes, flow, namespace)]
        lines.append(f"  {flow}  (namespace {namespace}): + {sum(kinds.values())} objects")
        for kind in sorted(kinds):
            lines.append(f"      + {kind:<22} {kinds[kind]}")
    total_k8s = sum(sum(c.values()) for c in per_flow.values())
    comp = ", ".join(f"{n} {t}" for t, n in sorted(components.items()))
    explicit = f"; {len(providers)} Kubernetes providers" if providers else ""
    lines += ["", f"Resources: + {total_k8s + sum(components.values()) + len(providers)} to create "
                  f"({total_k8s} Kubernetes objects; components: {comp}{explicit})"]
    if render.warnings:
        lines += [""] + [f"warning: {w}" for w in render.warnings]
    if render.placeholders:
        lines += ["", f"Placeholder values stand in for {len(render.placeholders)} secret config key(s) "
                      "not given with --secret:"]
        lines += [f"      {PROJECT}:{k}" for k in render.placeholders]
    return "\n".join(lines)
