"""The classes a Connect configuration names, and which of them are Kafka's own.

A Connect worker loads by name its connectors (`connector.class`), their transforms and
predicates (`transforms.<alias>.type`, `predicates.<alias>.type`), converters (`*.converter`),
and every setting of Kafka's CLASS and LIST-of-classes types (`replication.policy.class`,
`config.providers.<name>.class`, `*.classes`). The plan reads them to choose how the worker finds
its plugins (`plugin.discovery`); the rehearsal reads them to name the classes no jar provides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# Every plugin Apache Kafka ships carries a ServiceLoader manifest from 3.6.0 (KIP-898), so a
# worker whose classes are all Kafka's finds them without scanning its classpath reflectively.
KAFKA_PACKAGE = "org.apache.kafka."


def class_settings(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, class name) of each setting that names a class, in key order; placeholders are the
    caller's to resolve first."""
    out = []
    for key, value in sorted(config.items()):
        if not isinstance(value, str) or not value.strip():
            continue
        if key.endswith(".classes") or key == "metric.reporters":
            out += [(key, part.strip()) for part in value.split(",") if part.strip()]
        elif (re.fullmatch(r"(transforms|predicates)\.[^.]+\.type", key) or key.endswith(".converter")
              or key.endswith(".class")):
            out.append((key, value.strip()))
    return out


def kafka_own(names: Iterable[str]) -> bool:
    """Whether every class named is Apache Kafka's (nested classes included: `Cast$Value`)."""
    return all(name.startswith(KAFKA_PACKAGE) for name in names)
