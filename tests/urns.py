"""The URNs a program run registers, with the aliases each resource declares, resolved as the
Pulumi engine resolves them (pkg/resource/deploy: an alias spec names the type, name or parent it
had; a child inherits one alias per alias of its parent, its own name and type under the
parent's old URN)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pulumi.runtime import mocks

ROOT = "pulumi:pulumi:Stack"


@dataclass
class Registered:
    urn: str
    type: str
    name: str
    parent: str
    aliases: list = field(default_factory=list)  # alias_pb2.Alias messages


class Recorder:
    """Wraps the mock monitor's RegisterResource for the duration of a `with` block."""

    def __enter__(self) -> "Recorder":
        self.registered: list[Registered] = []
        self._original = mocks.MockMonitor.RegisterResource
        recorder = self

        def register(monitor, request):
            response = recorder._original(monitor, request)
            recorder.registered.append(Registered(response.urn, request.type, request.name, request.parent,
                                                  list(request.aliases)))
            return response
        mocks.MockMonitor.RegisterResource = register
        return self

    def __exit__(self, *exc) -> None:
        mocks.MockMonitor.RegisterResource = self._original

    def urns(self) -> list[str]:
        return sorted(r.urn for r in self.registered if r.type != ROOT)

    def alias_urns(self) -> dict[str, set[str]]:
        """Every resource's URN -> the URNs it also answers to (its aliases, and those inherited
        from its ancestors' aliases)."""
        by_urn = {r.urn: r for r in self.registered}
        memo: dict[str, set[str]] = {}

        def olds(urn: str) -> set[str]:
            if urn in memo:
                return memo[urn]
            r = by_urn[urn]
            prefix = "::".join(urn.split("::")[:2])
            found: set[str] = set()
            parent_olds = olds(r.parent) if r.parent and r.parent in by_urn else set()
            for old_parent in parent_olds:  # inherited: this resource under each old parent URN
                found.add(_urn(prefix, old_parent, r.type, r.name))
            for alias in r.aliases:
                if alias.urn:
                    found.add(alias.urn)
                    continue
                spec = alias.spec
                typ, name = spec.type or r.type, spec.name or r.name
                if spec.noParent:
                    parents = [None]
                elif spec.parentUrn:
                    parents = [spec.parentUrn]
                else:
                    parents = [r.parent, *parent_olds]
                found |= {_urn(prefix, p, typ, name) for p in parents}
            memo[urn] = found - {urn}
            return memo[urn]

        return {r.urn: olds(r.urn) for r in self.registered if r.type != ROOT}


def _urn(prefix: str, parent: str | None, typ: str, name: str) -> str:
    """urn:pulumi:<stack>::<project>::<parent types>$<type>::<name>, as resource.NewURN makes it:
    a resource under the stack (or none) has no parent type."""
    parent_type = parent.split("::")[3] if parent else ""
    qualified = f"{parent_type}${typ}" if parent_type and parent_type != ROOT else typ
    return f"{prefix}::{qualified}::{name}"
