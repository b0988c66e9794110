"""One home for turning a planned manifest into a pulumi-kubernetes resource."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Callable, cast

import pulumi
import pulumi_kubernetes as k8s

from infra.core import names
from infra.core.manifests import Manifest, SecretParts, SecretValue
from infra.core.releases import API_VERSIONS
from infra.deploy import config as stack_config

# Resolves a planned SecretValue to a secret Output (see infra/deploy/config.py).
SecretResolver = Callable[[SecretValue], pulumi.Output[str]]


SECRET_SECTIONS = ("data", "stringData")


def secret_resolver(secrets: Mapping[str, Any], targets: frozenset[str] = frozenset(),
                    literal: bool = False) -> SecretResolver:
    """Planned SecretValues as secret Outputs, built from one Output per secret item
    (stack_config.secret_item). A stack's few items are used by hundreds of objects: one Output
    each means an item given as an Output is checked once when it resolves, not once per use,
    and a value that is the item itself is that Output, with nothing derived from it."""
    items: dict[str, pulumi.Output[str]] = {}

    def item(key: str) -> pulumi.Output[str]:
        if key not in items:
            items[key] = stack_config.secret_item(secrets, key, targets, literal=literal)
        return items[key]

    def resolve(value: SecretValue) -> pulumi.Output[str]:
        if value.transform is None and len(value.config_keys) == 1:
            return item(value.config_keys[0])
        inputs = [item(key) for key in value.config_keys]
        return pulumi.Output.secret(pulumi.Output.all(*inputs).apply(lambda vs: value.build(*vs)))
    return resolve


def _secret_section(section: dict[str, Any], secrets: SecretResolver) -> Any:
    """A Secret's `data` or `stringData`; a SecretParts value becomes one key per part. Its keys
    depend on the value, so the section is then an Output: not secret itself (how many parts a
    value has is no secret, and `pulumi preview` keeps showing the keys), each value secret."""
    fixed = {k: _resolve(v, secrets) for k, v in section.items() if not isinstance(v, SecretParts)}
    split = {k: v for k, v in section.items() if isinstance(v, SecretParts)}
    if not split:
        return fixed

    # Chained applies, not Output.all: `all` would resolve the nested Outputs and lift their
    # secretness to the section, which `unsecret` would then strip from the values themselves.
    def add(section_so_far: dict[str, Any], pattern: str, planned: SecretParts) -> pulumi.Output[dict[str, Any]]:
        whole = secrets(SecretValue(planned.config_keys, planned.transform, planned.binary))
        return pulumi.Output.unsecret(whole.apply(lambda value: dict(sorted({**section_so_far, **{
            k: pulumi.Output.secret(part) for k, part in planned.parts(pattern, value).items()}}.items()))))

    (first, *rest) = sorted(split.items())
    result = add(fixed, *first)
    for pattern, planned in rest:
        result = result.apply(functools.partial(add, pattern=pattern, planned=planned))
    return result


def _resolve(value: Any, secrets: SecretResolver) -> Any:
    if isinstance(value, SecretValue):
        return secrets(value)
    if isinstance(value, dict):
        return {k: _resolve(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, secrets) for v in value]
    return value


def name_of(resource: pulumi.CustomResource) -> pulumi.Output[str]:
    """A created object's name, as an Output: passing it on orders creation by data dependency."""
    # pulumi_kubernetes is read as untyped (pyproject.toml, mypy): its `metadata` is not declared.
    return cast("pulumi.Output[str]", getattr(resource, "metadata")["name"])


def uid_of(resource: pulumi.CustomResource) -> pulumi.Output[str]:
    """A created object's uid, as an Output: the API server's, new for every object it creates.
    A preview of a creation has none yet (the provider returns the inputs): empty there."""
    metadata = cast("pulumi.Output[dict[str, Any]]", getattr(resource, "metadata"))
    return metadata.apply(lambda m: str((m or {}).get("uid") or ""))


def create(manifest: Manifest, opts: pulumi.ResourceOptions, secrets: SecretResolver,
           namespace: pulumi.Input[str] | None = None,
           metadata: dict[str, Any] | None = None, kubernetes: str | None = None) -> pulumi.CustomResource:
    """Create the resource for `manifest`. `namespace`/`metadata` replace planned metadata values
    with Outputs of other resources, so that Pulumi orders creation by data dependency.
    `kubernetes` prefixes the logical name where the same object goes to several clusters."""
    is_secret = manifest["kind"] == "Secret"
    body: dict[str, Any] = {k: _secret_section(cast(dict[str, Any], v), secrets) if is_secret and k in SECRET_SECTIONS
                            else _resolve(v, secrets) for k, v in manifest.items()}
    meta = dict(body["metadata"])
    if namespace is not None and "namespace" in meta:
        meta["namespace"] = namespace
    meta.update(metadata or {})
    planned = manifest["metadata"]
    name = names.resource_name(planned.get("namespace"), planned["name"], kubernetes)
    # Every object is named, so a replacement in one Kubernetes cluster is delete-first already (the
    # provider says so); a move to another cluster (the flow's `kubernetes`, a new provider) is a
    # replacement the engine would make create-first: the new Connect cluster would join the old
    # one's group and storage topics while it still runs, and the old operator would then delete
    # the shared connectors. Delete-first, the old Connect cluster is gone before the new one
    # starts (docs/operations.md#moving-a-flow-to-another-kubernetes-cluster).
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True))
    resource: pulumi.CustomResource = _construct(manifest["kind"], name, body, meta, opts)
    return resource


def annotate(patch: dict[str, Any], name: str, namespace: pulumi.Input[str],
             opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """A server-side apply patch of an existing custom resource's metadata (pulumi-kubernetes'
    `<Kind>Patch`): it owns the fields it sets, and only those."""
    meta = {**patch["metadata"], "namespace": namespace}
    resource: pulumi.CustomResource = k8s.apiextensions.CustomResourcePatch(
        name, api_version=patch["apiVersion"], kind=patch["kind"], metadata=meta,
        opts=_with_version_aliases(opts, patch["apiVersion"], f"{patch['kind']}Patch"))
    return resource


def _with_version_aliases(opts: pulumi.ResourceOptions, api_version: str, type_name: str) -> pulumi.ResourceOptions:
    """`opts` plus an alias from each other API version of the object's group that a supported
    release writes (releases.API_VERSIONS): the version is part of the type token, so an operator
    upgrade that moves the objects to v1 would otherwise read as new objects replacing the old
    ones of the same names (create, then delete: the connectors gone on the way). With the alias
    the engine finds the old state and updates it in place (tests/engine/test_upgrade_runbook.py)."""
    if api_version not in API_VERSIONS:
        return opts
    aliases = [pulumi.Alias(type_=f"kubernetes:{other}:{type_name}") for other in API_VERSIONS if other != api_version]
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=aliases))


def _construct(kind: str, name: str, body: dict[str, Any], meta: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
    if kind == "Namespace":
        return k8s.core.v1.Namespace(name, metadata=meta, opts=opts)
    if kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(name, metadata=meta, data=body.get("data"), opts=opts)
    if kind == "Secret":
        return k8s.core.v1.Secret(name, metadata=meta, type=body.get("type"), data=body.get("data"),
                                  string_data=body.get("stringData"), opts=opts)
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(name, metadata=meta,
                                          automount_service_account_token=body.get("automountServiceAccountToken"),
                                          opts=opts)
    if kind == "ResourceQuota":
        return k8s.core.v1.ResourceQuota(name, metadata=meta, spec=body["spec"], opts=opts)
    if kind == "PersistentVolumeClaim":
        return k8s.core.v1.PersistentVolumeClaim(name, metadata=meta, spec=body["spec"], opts=opts)
    if kind == "NetworkPolicy":
        return k8s.networking.v1.NetworkPolicy(name, metadata=meta, spec=body["spec"], opts=opts)
    if kind == "CronJob":
        return k8s.batch.v1.CronJob(name, metadata=meta, spec=body["spec"], opts=opts)
    if kind == "Role":
        return k8s.rbac.v1.Role(name, metadata=meta, rules=body["rules"], opts=opts)
    if kind == "RoleBinding":
        return k8s.rbac.v1.RoleBinding(name, metadata=meta, subjects=body["subjects"],
                                       role_ref=body["roleRef"], opts=opts)
    # Custom resources (Strimzi's, the Prometheus Operator's) only: the provider refuses a
    # CustomResource of a core kind ("apiVersion does not have both a group and a version").
    if "/" not in body["apiVersion"]:
        raise ValueError(f"{kind} {body['apiVersion']}: a core kind needs its typed resource here")
    return k8s.apiextensions.CustomResource(name, api_version=body["apiVersion"], kind=kind,
                                            metadata=meta, spec=body["spec"],
                                            opts=_with_version_aliases(opts, body["apiVersion"], kind))
