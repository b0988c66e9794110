"""The URNs a program run registers, as the Pulumi engine makes them, with the aliases each
resource declares resolved as the engine resolves them.

Pulumi's mock monitor shortens URNs (only the parent's last type, the stack's type included), so
the URNs here are computed from each registration's parent, type and name by the engine's rule
(resource.NewURN: `urn:pulumi:<stack>::<project>::<parent's qualified type>$<type>::<name>`, no
parent type under the stack). An alias spec names the type, name or parent a resource had; a
child inherits one alias per alias of its parent: its own type and name under the parent's old
URN (pkg/resource/deploy, inheritedChildAlias)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pulumi.runtime import mocks

ROOT = "pulumi:pulumi:Stack"


@dataclass
class Registered:
    urn: str      # the engine's URN
    type: str
    name: str
    parent: str   # the parent's engine URN ("" for the stack itself)
    aliases: list = field(default_factory=list)  # alias_pb2.Alias messages


def qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def make_urn(prefix: str, parent: str | None, typ: str, name: str) -> str:
    parent_type = qualified_type(parent) if parent else ""
    qualified = f"{parent_type}${typ}" if parent_type and parent_type != ROOT else typ
    return f"{prefix}::{qualified}::{name}"


class Recorder:
    """Wraps the mock monitor's RegisterResource for the duration of a `with` block."""

    def __enter__(self) -> "Recorder":
        self.registered: list[Registered] = []
        self._original = mocks.MockMonitor.RegisterResource
        engine_urn: dict[str, str] = {}  # the mock's URN -> the engine's
        recorder = self

        def register(monitor, request):
            response = recorder._original(monitor, request)
            prefix = "::".join(response.urn.split("::")[:2])
            parent = engine_urn.get(request.parent, "") if request.parent else ""
            urn = make_urn(prefix, parent or None, request.type, request.name)
            engine_urn[response.urn] = urn
            recorder.registered.append(Registered(urn, request.type, request.name, parent, list(request.aliases)))
            return response
        mocks.MockMonitor.RegisterResource = register
        return self

    def __exit__(self, *exc) -> None:
        mocks.MockMonitor.RegisterResource = self._original

    def urns(self) -> list[str]:
        return sorted(r.urn for r in self.registered if r.type != ROOT)

    def alias_urns(self) -> dict[str, set[str]]:
        """Every resource's URN -> the other URNs it answers to (its aliases, and those
        inherited from its ancestors' aliases)."""
        by_urn = {r.urn: r for r in self.registered}
        memo: dict[str, set[str]] = {}

        def olds(urn: str) -> set[str]:
            if urn in memo:
                return memo[urn]
            r = by_urn[urn]
            prefix = "::".join(urn.split("::")[:2])
            parent_olds = olds(r.parent) if r.parent in by_urn else set()
            found = {make_urn(prefix, old_parent, r.type, r.name) for old_parent in parent_olds}
            for alias in r.aliases:
                if alias.urn:
                    found.add(alias.urn)
                    continue
                spec = alias.spec
                typ, name = spec.type or r.type, spec.name or r.name
                if spec.noParent:
                    parents: list[str | None] = [None]
                elif spec.parentUrn:
                    parents = [spec.parentUrn]
                else:
                    parents = [r.parent or None, *parent_olds]
                found |= {make_urn(prefix, p, typ, name) for p in parents}
            memo[urn] = found - {urn}
            return memo[urn]

        return {r.urn: olds(r.urn) for r in self.registered if r.type != ROOT}
