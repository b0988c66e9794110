"""Small topologies the unit tests build on: flows among clusters a, b, c behind SASL PLAIN over
TLS (`among`), and one flow between two clusters of any security (`pair`)."""

from __future__ import annotations

from tests.support.stacks import doc_topology, on_release

PEM_SASL = {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "u"}, "tls": {"trust": "pem"}}


def clusters(*aliases: str) -> dict:
    return {a: {"bootstrapServers": f"{a}-kafka:9093", "security": PEM_SASL} for a in aliases}


def among(*flows: dict, aliases=("a", "b", "c")) -> dict:
    return doc_topology(clusters=clusters(*aliases), flows=list(flows))


def pair(source_security: dict, target_security: dict, flavour: str = "csm", version: str | None = None,
         **flow) -> dict:
    return on_release(doc_topology(
        operator={"flavour": flavour},
        clusters={"a": {"bootstrapServers": "a:9092", "security": source_security},
                  "b": {"bootstrapServers": "b:9092", "security": target_security}},
        flows=[{"source": "a", "target": "b", "topics": ["orders.*"], **flow}]), flavour, version)
