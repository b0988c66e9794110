"""The value types of a topology document: bounded integers and shaped strings (names, quantities,
images, labels, regex lists checked as Java reads them) and the closed sets users choose from."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from infra.core import names, references
from infra.filters import jregex

# Matched whole (fullmatch): `$` would let a final line break through.
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# Aliases end up in topic names (`<alias>.<topic>`) and in Kubernetes object names.
MAX_ALIAS = 30
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


BOOTSTRAP = re.compile(r"[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}")


# Regexes in one topics/groups list: allow-lists of thousands of names are what migrations write
# (the file's own bound, 1 MiB, caps them too).
MAX_FILTERS = 20_000


# Values the platform reads, refused here in the platform's terms rather than at deploy time.
INT32 = 2**31 - 1  # Kubernetes and Kafka integer fields are 32-bit
INT64_MIN, INT64 = -2**63, 2**63 - 1  # Java's long: Kafka's offsets and LONG settings


def _integer(low: int, high: int) -> BeforeValidator:
    """An integer in [low, high], said in those words (YAML may hand over 1e30 or true)."""
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"an integer from {low} to {high}")
        try:
            number = int(value) if not isinstance(value, float) or value.is_integer() else None
        except (ValueError, OverflowError):
            number = None
        if number is None or not low <= number <= high:
            raise ValueError(f"an integer from {low} to {high}")
        return number
    # The JSON Schema says the same bounds (an editor's checks agree with `validate`); it asks for
    # the integer itself, where `validate` also takes "3" or 3.0 (tests/unit/test_topology_schema.py).
    return BeforeValidator(check, json_schema_input_type=Annotated[int, Field(ge=low, le=high)])


def _shaped(pattern: str, description: str, longest: int, empty: bool = False) -> BeforeValidator:
    """A string of a given shape, refused with a description users read (never the regex);
    empty only where the shape allows it (`empty`)."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        if not isinstance(value, str) or (not value and not empty) or len(value) > longest \
                or not compiled.fullmatch(value):
            raise ValueError(f"{description} (at most {longest} characters)")
        return value
    # JSON Schema patterns are not anchored: the whole string, as fullmatch.
    return BeforeValidator(check, json_schema_input_type=Annotated[
        str, Field(pattern=f"^(?:{pattern})$", min_length=0 if empty else 1, max_length=longest)])


Count = Annotated[int, _integer(1, INT32)]


Amount = Annotated[int, _integer(0, INT32)]


DnsSubdomain = Annotated[str, _shaped(DNS1123_SUBDOMAIN.pattern,
                                      "a Kubernetes object name: lowercase letters, digits, '-' and '.'", 253)]


# An OCI image reference as the container runtime parses it (registry[:port]/path[:tag][@digest]).
ImageRef = Annotated[str, _shaped(
    r"(?:[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?",
    "an image reference such as registry.example.com/team/image:1.0 (lowercase path, optional tag and digest)",
    512)]


# A JVM / Spark memory size (JavaUtils.byteStringAs): one token, never split into arguments.
MemorySize = Annotated[str, _shaped(r"[1-9][0-9]{0,8}([kmgtpKMGTP][bB]?|[bB])?",
                                    "a JVM memory size such as 512m or 2g", 12)]


# A SASL username lands inside a JAAS line `username="..."`: no quote, backslash or control
# character. Nor `${`: every release writes a target's username literally into the Connect
# worker's file, where the worker resolves `${...}` as a config-provider reference (Kafka's
# ConfigTransformer), and a registry username `user:password` is split at its first ':' (the
# kubelet reads `auth` that way), so neither holds one.
Username = Annotated[str, _shaped(r'(?:(?!\$\{)[^"\\\x00-\x1f\x7f])+',
                                  "a username without quotes, backslashes, control characters (line breaks) or ${ (the "
                                  "Connect worker would resolve it as a config-provider reference)",
                                  256)]


# A key of a ConfigMap or Secret (Kubernetes' IsConfigMapKey): letters, digits, '-', '_', '.'.
SecretKey = Annotated[str, _shaped(r"(?!\.{1,2}$)[-._a-zA-Z0-9]+", "a Secret key: letters, digits, '-', '_' and '.' "
                                   "(not '.' or '..')", 253)]


# A Secret of the flow's namespace, by name only: the connectors' config providers, the operator and
# a pod's volumes read Secrets of their own namespace (a `namespace/name` could never be read).
SecretName = Annotated[str, _shaped(DNS1123_SUBDOMAIN.pattern,
                                    "the name of a Secret in the flow's own namespace: lowercase letters, digits, "
                                    "'-' and '.', no namespace (connectors, the operator and pods read Secrets of "
                                    "their own namespace only)", 253)]


# A label of a Secret's value (its rotation), written into connector configs and a pod template.
SecretVersion = Annotated[str, _shaped(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?",
                                       "a version label: letters, digits, '-', '_' and '.', starting and ending with a "
                                       "letter or digit, such as 2026-12-03 or v2", 63)]


RegistryUsername = Annotated[str, _shaped(r'(?:(?!\$\{)[^"\\\x00-\x1f\x7f:])+',
                                          "a username without ':' (the registry's `auth` is user:password, split at "
                                          "the first ':'), quotes, backslashes, control characters or ${", 256)]


class PullPolicy(str, Enum):
    Always = "Always"
    IfNotPresent = "IfNotPresent"
    Never = "Never"


_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")


def quantity(text: str) -> float:
    """A Kubernetes resource quantity (`500m`, `4Gi`, `2`) as a number."""
    match = _QUANTITY.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a quantity such as 500m, 2 or 4Gi")
    return float(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def _quantity_value(value: str) -> str:
    quantity(value)  # ValueError with the expected form
    return value


# A Kubernetes resource quantity (`500m`, `2`, `4Gi`), and a resource name (`cpu`, `memory`,
# `example.com/gpu`).
Quantity = Annotated[str, Field(max_length=64), AfterValidator(_quantity_value)]


ResourceName = Annotated[str, _shaped(r"([a-z0-9.-]+/)?[a-z0-9]([-a-z0-9._]*[a-z0-9])?",
                                      "a resource name such as cpu, memory or example.com/gpu", 253)]


class _Strict(BaseModel):
    # Unknown keys are errors: a typo must never be silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TargetConnection(str, Enum):
    # Where connectors read the TARGET cluster's connection properties from.
    workerFile = "workerFile"          # ${file:/tmp/strimzi-connect.properties:...}, as documented
    clusterObjects = "clusterObjects"  # the target ConfigMap/Secrets of the flow namespace


class Protocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (Protocol.SSL, Protocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (Protocol.SASL_PLAINTEXT, Protocol.SASL_SSL)


class Mechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


class Trust(str, Enum):
    pem = "pem"        # a PEM CA certificate (secret config `<alias>.caCert`)
    jks = "jks"        # a JKS truststore file (base64 in `<alias>.truststore`) and its password
    pkcs12 = "pkcs12"  # a PKCS12 truststore file (base64 in `<alias>.truststore`) and its password


class Policy(str, Enum):
    default = "default"    # DefaultReplicationPolicy: replicated topics are `<source alias>.<topic>`
    identity = "identity"  # IdentityReplicationPolicy: prefixless, topic names unchanged


class ExactlyOnce(str, Enum):
    # exactly.once.source.support of the flow's Connect workers; an existing Connect cluster goes
    # disabled -> preparing -> enabled (the documents' two-step rollout).
    disabled = "disabled"
    preparing = "preparing"
    enabled = "enabled"


class StartFrom(str, Enum):
    earliest = "earliest"  # MirrorSourceConnector's default: at-least-once from the start
    latest = "latest"      # new partitions from their end: breaks at-least-once


class ConnectorState(str, Enum):
    running = "running"
    paused = "paused"
    stopped = "stopped"


def _no_reference(value: Any) -> str | int | bool:
    if isinstance(value, float) or not isinstance(value, (str, int, bool)):
        raise ValueError("a string, an integer or true/false")
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64:
        # ConfigDef reads numbers as Java ints, longs or doubles: a larger one fails the connector.
        raise ValueError("an integer within Java's long (-9223372036854775808 to 9223372036854775807)")
    if isinstance(value, str) and references.MARKER in value:
        raise ValueError("a value without ${...}: config-provider references are the program's own (cluster "
                         "connections and secrets); in a connector or SMT setting one could read any file or "
                         "Secret the Connect worker can, and an SMT would stamp it on every record")
    return value


# Connector, SMT, predicate and converter settings: plain values only.
ConfigValue = Annotated[str | int | bool, BeforeValidator(_no_reference)]


DnsLabel = Annotated[str, _shaped(DNS1123_LABEL.pattern,
                                  "lowercase letters, digits and '-' (DNS-1123), starting and ending alphanumeric", 30)]


def _own_namespace(value: str) -> str:
    if names.is_system_namespace(value):
        raise ValueError(f"a namespace of the stack's own, not 'default' or one starting with "
                         f"'{names.SYSTEM_NAMESPACE_PREFIX}' (Kubernetes' own): the stack creates the namespace and "
                         "deletes it when the section is removed or the stack destroyed")
    return value


# A namespace the stack creates (the audit's, monitoring's): Kubernetes' 63 characters.
NamespaceName = Annotated[str, _shaped(DNS1123_LABEL.pattern, "lowercase letters, digits and '-' (DNS-1123), "
                                       "starting and ending alphanumeric", 63), AfterValidator(_own_namespace)]


# Kafka splits `transforms`/`predicates` on commas and uses the names inside property keys.
SmtName = Annotated[str, _shaped(r"[A-Za-z][A-Za-z0-9_-]*", "a name of letters, digits, '_' and '-', starting "
                                 "with a letter", 60)]


ClassName = Annotated[str, _shaped(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*",
                                   "a Java class name such as org.apache.kafka.connect.transforms.InsertField$Value",
                                   300)]


def _as_list(value: Any) -> Any:
    # A single regex may be written as a string.
    return [value] if isinstance(value, str) else value


def _item_problems(value: list[str], read: Callable[[str], object], unread: str) -> list[str]:
    """Each item as Kafka splits the property (on commas, whitespace trimmed) and as `read` takes
    it (RegexError: Java rejects it; Unsupported: the checks cannot `unread` it)."""
    bad = []
    for item in value:
        if "," in item:
            bad.append(f"{item!r}: one regex per list item (Kafka splits the list on commas)")
        elif item != item.strip():
            bad.append(f"{item!r}: no leading or trailing whitespace (Kafka trims it)")
        else:
            try:
                read(item)
            except jregex.RegexError as exc:
                bad.append(f"{item!r} is not a valid Java regex ({exc})")
            except jregex.Unsupported as exc:
                bad.append(f"{item!r} uses {exc}, which the topology checks cannot {unread}; "
                           "rewrite it without that construct")
    return bad


def _refused(value: list[str], bad: list[str]) -> list[str]:
    if len(value) > MAX_FILTERS:
        bad.append(f"{len(value)} filters: at most {MAX_FILTERS} per list")
    if bad:
        raise ValueError("; ".join(bad))
    return value


def _check_regexes(value: list[str]) -> list[str]:
    """Each item is a Java regex (Kafka compiles the list joined with '|') that the guardrails'
    automata model exactly (infra/filters/jregex/)."""
    bad = _item_problems(value, jregex.parse, "model exactly")
    if not bad:
        try:
            jregex.compile_filter(tuple(value))  # the list as Kafka joins it, within our bounds
        except (jregex.RegexError, jregex.Unsupported) as exc:
            bad.append(f"the list as Kafka joins it: {exc}")
    return _refused(value, bad)


# Topic and group filters: a single regex may be written as a string; each item must compile.
_Item = Annotated[str, Field(min_length=1)]
# What the file may hold (the JSON Schema's input type): the list, or its one item as a string.
_ONE_OR_LIST = BeforeValidator(_as_list, json_schema_input_type=_Item | list[_Item])
RegexList = Annotated[list[_Item], _ONE_OR_LIST, AfterValidator(_check_regexes)]


Regexes = Annotated[RegexList, Field(min_length=1)]


def _check_property_regexes(value: list[str]) -> list[str]:
    """Topic configuration properties left out of the sync (`config.properties.exclude`): Java
    regexes no guardrail reads, so only their syntax is checked (jregex.check_syntax: a lookahead
    is fine here); the list rules are the topic filters'."""
    return _refused(value, _item_problems(value, jregex.check_syntax, "read"))


# Property-name regexes (the topic configuration sync's exclusions): a single one may be a string.
PropertyRegexList = Annotated[list[_Item], _ONE_OR_LIST, AfterValidator(_check_property_regexes)]


class OffsetsAction(str, Enum):
    list = "list"    # the operator writes the connector's offsets to a ConfigMap
    alter = "alter"  # the operator sets the offsets given here (connector stopped)
    reset = "reset"  # the operator deletes every offset of the connector (connector stopped)


# A topic name as Kafka accepts it; consumer groups are free text, bounded here.
TopicName = Annotated[str, _shaped(r"[A-Za-z0-9._-]+", "a Kafka topic name (letters, digits, '.', '_', '-')", 249)]


GroupName = Annotated[str, _shaped(r"[^\x00-\x1f\x7f]+", "a consumer group name without control characters", 1024)]


OffsetsRequestId = Annotated[str, _shaped(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                                          "a request id such as 2026-11-24-rewind (lowercase letters, digits, '-')",
                                          40)]


class FailoverProcedure(str, Enum):
    """The documents' failover procedures (docs/operations.md)."""
    continuous = "continuous"  # continuous and controlled: consumers move first; Default policy only
    cutoff = "cutoff"          # controlled with a cutoff: producers stopped, consumers drained
    disaster = "disaster"      # the source is gone: clients restart on the target


class Exporter(str, Enum):
    jmxPrometheusExporter = "jmxPrometheusExporter"    # the Prometheus JMX exporter agent, our rules
    strimziMetricsReporter = "strimziMetricsReporter"  # Strimzi's metrics reporter (Strimzi 0.48 and newer)


# apimachinery IsQualifiedName: an optional DNS-1123 subdomain prefix (at most 253) and '/', then a
# name of at most 63 alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _label_key(value: Any) -> str:
    prefix, slash, name = value.rpartition("/") if isinstance(value, str) else ("", "", "")
    if not (isinstance(value, str) and len(name) <= 63 and _LABEL_NAME.fullmatch(name)
            and (not slash or (len(prefix) <= 253 and DNS1123_SUBDOMAIN.fullmatch(prefix)))):
        raise ValueError("a Kubernetes label key such as release or example.com/team: an optional DNS subdomain "
                         "(at most 253 characters) and '/', then a name of at most 63 letters, digits, '-', '_' "
                         "and '.', starting and ending with a letter or digit")
    return value


LabelKey = Annotated[str, BeforeValidator(_label_key)]


LabelValue = Annotated[str, _shaped(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?",
                                    "a Kubernetes label value (letters, digits, '-', '_', '.'; may be empty)", 63,
                                    empty=True)]
