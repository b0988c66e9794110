"""The policy pack's rules (policy/, docs/policy.md), on Kubernetes objects as the API server
receives them, whoever wrote them: this program, another Pulumi program, or a team deploying
replication by hand. Each rule is a pure function from one object (a mapping with Kubernetes'
field names) to its problems, each saying which object, which field, what was given (never a
secret value itself) and what is allowed.

One home: the pack reports these problems; the program runs the same rules on every object it
plans before it declares any (infra/checks/plans.py `policy_problems`), so it cannot deploy what
the pack refuses; and the topology's own rules share their vocabularies (infra/checks/rules/: which
transforms rename topics, which keys name secrets).

Values a preview cannot know yet (the Output of another resource) reach the rules as `UNKNOWN`
and are passed over: the pack checks them again at `pulumi up`, when they are known.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from infra.checks.rules import TOPIC_KEEPING, renames_topic, secret_named
from infra.core import names, references
from infra.core.errors import Problem
from infra.plan.audit import spark_role_rules
from infra.topology.schema.values import DNS1123_SUBDOMAIN


class Unknown:
    """A value a preview cannot know yet (pulumi_policy's unknown sentinels, mapped by the pack)."""

    def __repr__(self) -> str:
        return "a value unknown until the update"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class Hidden:
    """What a secret-looking value is, shown in its place."""
    what: str

    def __repr__(self) -> str:
        return f"{self.what} (not shown)"


Check = Callable[[Mapping[str, Any]], list[Problem]]


@dataclass(frozen=True)
class Rule:
    """One policy of the pack: its name (the pack's policy name), what it checks, and the check."""
    name: str
    description: str
    check: Check


def describe(obj: Mapping[str, Any]) -> str:
    """`<Kind> <namespace>/<name>` (cluster-scoped: `<Kind> <name>`), as problems name an object."""
    kind = obj.get("kind")
    meta = _mapping(obj.get("metadata"))
    name = meta.get("name")
    namespace = meta.get("namespace")
    shown = name if isinstance(name, str) else "(no metadata.name)"
    if isinstance(namespace, str):
        shown = f"{namespace}/{shown}"
    elif isinstance(namespace, Unknown):
        shown = f"(namespace unknown until the update)/{shown}"
    return f"{kind if isinstance(kind, str) else '(no kind)'} {shown}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(_mapping(obj.get("metadata")).get("labels"))


# ----------------------------------------------------------------- 1. no secret values


# The kinds whose values are readable by whoever may read the object, and which fields hold them.
# A KafkaConnector's config is also shown by Connect's REST API (GET /connectors/<name>/config).
SECRET_FREE = {"ConfigMap": "data", "KafkaConnector": "spec.config", "KafkaConnect": "spec.config"}
PROVIDER_REFERENCE = "${secret:<namespace>/<secret>:<key>}, ${file:<path>:<key>}"
NO_SECRET = {
    "data": ("no secret in a ConfigMap (anyone who may read ConfigMaps reads it): the value in a Secret, and "
             f"here at most a config provider reference to it ({PROVIDER_REFERENCE})"),
    "spec.config": (f"a config provider reference in its place ({PROVIDER_REFERENCE}), the value in a Secret: "
                    "whoever may read the custom resource reads its config, and Connect's REST API shows it"),
}
PEM_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
# A JAAS login module line and its options (Kafka's JaasConfig grammar: `<module> <flag>
# name=value ...;`, values quoted or bare).
JAAS_LINE = re.compile(r"[\w.$]*LoginModule\s+(?P<flag>\w+)(?P<options>[^;]*)")
# Kafka reads the control flag in any case (JaasConfig.loginModuleControlFlag: a switch on
# `flag.toUpperCase(Locale.ROOT)`); str.upper maps as Locale.ROOT does ('ı' to 'I', 'ſ' to 'S').
JAAS_FLAGS = frozenset({"REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL"})
JAAS_OPTION = re.compile(r"(?P<name>[\w.-]+)\s*=\s*(?P<value>\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s;]+)")
# Tokens recognisable by their shape, whatever the key: JSON Web Tokens (Kubernetes service
# account tokens, OAuth access tokens), bearer credentials, and the prefixed tokens of common
# services.
TOKENS = (
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), ("eyJ",)),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}"), ("Bearer",)),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",)),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
)
# A key whose last part names a token (`token`, `accessToken`, `oauth.refresh.token`), beside
# the secret names the topology's rules refuse (infra/checks/rules/ SECRET_LIKE). Not every key with
# `token` in it: `sasl.oauthbearer.token.endpoint.url` is a URL.
TOKEN_NAME = re.compile(r"token$", re.IGNORECASE)
# The worker keys that install config providers name them (`config.providers.secret.class`): no
# value of theirs is a secret.
PROVIDER_KEYS = re.compile(r"config\.providers(\.[^.]+\.class)?")
# One `key: value`, `key=value` or `"key": "value",` line of a file held in one value (a
# properties file, YAML, pretty-printed JSON).
EMBEDDED = re.compile(r"""\s*["']?(?P<key>[A-Za-z_][\w.-]*)["']?\s*[:=]\s*(?P<value>.*?)\s*,?\s*""")
NOT_A_VALUE = frozenset({"", "null", "~", "true", "false", "{", "[", "|", ">", "|-", ">-"})


def only_references(value: str) -> bool:
    """Whether a value is nothing but config provider references (what the worker resolves)."""
    return references.PATTERN.search(value) is not None and not references.PATTERN.sub("", value).strip()


def _secret_key(key: str) -> bool:
    if PROVIDER_KEYS.fullmatch(key) or "jaas" in key.lower():
        return False  # a JAAS line is read option by option (_jaas)
    return secret_named(key) or TOKEN_NAME.search(key.rsplit(".", 1)[-1]) is not None


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _jaas(value: str) -> str | None:
    """The first secret option of a JAAS line given literally, or None."""
    if "LoginModule" not in value:  # what every JAAS_LINE holds
        return None
    for line in JAAS_LINE.finditer(value):
        if line.group("flag").upper() not in JAAS_FLAGS:
            continue
        for option in JAAS_OPTION.finditer(line.group("options")):
            name, given = option.group("name"), _unquoted(option.group("value"))
            if _secret_key(name) and given and not only_references(given):
                return name
    return None


def secret_found(key: str, value: Any) -> Hidden | None:
    """What makes a value secret-looking (shown in its place), or None: a PEM private key, a JAAS
    line with a literal password (or other secret option), a token by its shape, or a literal
    value under a key that names a secret. Config provider references are never secrets."""
    if not isinstance(value, str) or not value.strip() or only_references(value):
        return None
    if "PRIVATE KEY-----" in value and PEM_PRIVATE_KEY.search(value):
        return Hidden("a PEM private key")
    option = _jaas(value)
    if option is not None:
        return Hidden(f"a JAAS line with a literal {option}")
    for what, pattern, hints in TOKENS:
        # Each pattern starts with a literal (`hints`): a substring test, far cheaper than the
        # search over a long value (a ConfigMap's file), rules out most values.
        if any(h in value for h in hints) and pattern.search(value):
            return Hidden(what)
    if _secret_key(key) and "\n" not in value.strip() and not _names_a_secret(key, value):
        return Hidden("a literal value")
    return None


# A key that names a Kubernetes Secret (`secretName`, `credentials-secret-ref`) holds the Secret's
# name, which is no secret: an object name is listed by anyone who may list Secrets.
NAMES_A_SECRET = re.compile(r"secret[-_.]?(name|ref)$", re.IGNORECASE)


def _names_a_secret(key: str, value: str) -> bool:
    return NAMES_A_SECRET.search(key) is not None and len(value) <= 253 and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def _embedded(value: str) -> Iterable[tuple[int, str, Hidden]]:
    """(line number, key, what) of each secret-looking `key: value` line of a multi-line value."""
    for number, line in enumerate(value.splitlines(), 1):
        found = _line_secret(line) if len(line) <= CACHED_VALUE else _read_line(line)  # as _found
        if found is not None:
            yield number, *found


# A plan's objects repeat the same values and lines hundreds of times (the exporter's rules in
# every Connect cluster's ConfigMap, the same references in every connector): each distinct one is
# read once per process (both are pure functions of their strings). Only values and lines up to
# this long are kept (a reference, a JAAS line, a certificate), so the caches hold at most
# 2 x 65,536 of them, 512 MiB at the very worst: a longer value is a file, read line by line.
CACHED_VALUE = 4096


@lru_cache(maxsize=1 << 16)
def _value_secret(key: str, value: str) -> Hidden | None:
    return secret_found(key, value)


def _found(key: str, value: Any) -> Hidden | None:
    """`secret_found`, through the cache for a string short enough to keep."""
    return _value_secret(key, value) if isinstance(value, str) and len(value) <= CACHED_VALUE else \
        secret_found(key, value)


def _read_line(line: str) -> tuple[str, Hidden] | None:
    found = EMBEDDED.fullmatch(line)
    if found is None:
        return None
    given = _unquoted(found.group("value"))
    if given.lower() in NOT_A_VALUE or re.fullmatch(r"-?[\d.]+", given):
        return None
    hidden = _found(found.group("key"), given)
    return None if hidden is None else (found.group("key"), hidden)


_line_secret = lru_cache(maxsize=1 << 16)(_read_line)


def secret_values(obj: Mapping[str, Any]) -> list[Problem]:
    """No secret-looking value in a ConfigMap's `data`, nor in a KafkaConnector's or KafkaConnect's
    `spec.config`; values that only reference a config provider are fine."""
    section = SECRET_FREE.get(str(obj.get("kind")))
    if section is None:
        return []
    values = _mapping(obj.get("data")) if section == "data" else _mapping(_mapping(obj.get("spec")).get("config"))
    where, allowed = describe(obj), NO_SECRET[section]
    problems = []
    for key in sorted(values, key=str):
        value, field = values[key], f"{section}.{key}"
        found = _found(str(key), value)
        if found is not None:
            problems.append(Problem(where, field, found, allowed))
        elif isinstance(value, str) and "\n" in value.strip():
            for number, inner_key, hidden in _embedded(value):
                problems.append(Problem(where, f"{field} (line {number}: {inner_key})", hidden, allowed))
    return problems


# ----------------------------------------------------------------- 2. no topic-renaming transform


# MirrorMaker 2's connectors, by class and by the aliases Connect accepts for them.
MIRROR_CONNECTORS = frozenset(f"{kind}{suffix}" for kind in ("MirrorSource", "MirrorCheckpoint", "MirrorHeartbeat")
                              for suffix in ("", "Connector"))


def _mirror_maker(connector_class: Any) -> bool:
    """Whether a KafkaConnector runs a MirrorMaker 2 connector (or may: an unknown or missing class)."""
    if not isinstance(connector_class, str):
        return True
    return connector_class.rsplit(".", 1)[-1] in MIRROR_CONNECTORS


def topic_renaming_transforms(obj: Mapping[str, Any]) -> list[Problem]:
    """No transform of a MirrorMaker 2 KafkaConnector renames the record's topic (the
    replication policy derives every remote and internal topic name from the source topic)."""
    if obj.get("kind") != "KafkaConnector":
        return []
    spec = _mapping(obj.get("spec"))
    config = _mapping(spec.get("config"))
    chain = config.get("transforms")
    if not _mirror_maker(spec.get("class")) or not isinstance(chain, str):
        return []
    problems = []
    for name in (n.strip() for n in chain.split(",")):
        key = f"transforms.{name}.type"
        given = config.get(key)
        if name and isinstance(given, str) and renames_topic(given):
            problems.append(Problem(describe(obj), f"spec.config.{key}", given, TOPIC_KEEPING))
    return problems


# ----------------------------------------------------------------- 3. RBAC: no wildcard, every object named


WILDCARDS = {
    "apiGroups": "named API groups (\"\" for the core group), no '*': a wildcard grants every API group, those "
                 "installed later included",
    "resources": "named resources, no '*' (nor a '<resource>/*' or '*/<subresource>'): a wildcard grants every "
                 "resource of the groups, Secrets included",
    "verbs": "named verbs (get, list, ...), no '*': a wildcard grants every verb, escalate, bind and impersonate "
             "included",
    "nonResourceURLs": "named URLs, no '*': a wildcard grants every path of the API server",
}
UNNAMED = ("the names of the objects the rule grants (resourceNames): without them a rule grants every object of its "
           "resources")


def _normalised(rules: Any) -> list[str]:
    return sorted(json.dumps({k: sorted(v) if isinstance(v, list) else v for k, v in _mapping(r).items()},
                             sort_keys=True) for r in _list(rules))


def audit_executor_role(obj: Mapping[str, Any]) -> bool:
    """The replication audit's Role in executor mode, exactly as infra/plan/audit.py writes it: Spark's
    driver creates, watches and deletes executor pods and their ConfigMap under names it makes up
    at run time, so its rules cannot name them. Exempt from naming only, and only with exactly
    these rules and the audit's labels: one more rule or verb and every rule must name its objects."""
    meta = _mapping(obj.get("metadata"))
    labels = _labels(obj)
    return (obj.get("kind") == "Role" and meta.get("name") == names.AuditNames.role
            and all(labels.get(k) == v for k, v in names.AUDIT_SELECTOR.items())
            and _normalised(obj.get("rules")) == _normalised(spark_role_rules()))


def rbac_scope(obj: Mapping[str, Any]) -> list[Problem]:
    """Roles and ClusterRoles grant no wildcard (apiGroups, resources, verbs, nonResourceURLs),
    and every rule on resources names its objects (resourceNames)."""
    if obj.get("kind") not in ("Role", "ClusterRole"):
        return []
    where = describe(obj)
    exempt = audit_executor_role(obj)
    problems = []
    for i, rule in enumerate(_list(obj.get("rules"))):
        rule = _mapping(rule)
        for field, allowed in WILDCARDS.items():
            given = rule.get(field)
            if isinstance(given, (list, tuple)) and any(isinstance(v, str) and "*" in v for v in given):
                problems.append(Problem(where, f"rules[{i}].{field}", list(given), allowed))
        resource_names = rule.get("resourceNames")
        if (_list(rule.get("resources")) and not exempt and not isinstance(resource_names, Unknown)
                and not _list(resource_names)):
            problems.append(Problem(where, f"rules[{i}].resourceNames", resource_names, UNNAMED))
    return problems


# ----------------------------------------------------------------- 4. a Connect cluster's own group and topics


def connect_storage(obj: Mapping[str, Any]) -> list[Problem]:
    """Every KafkaConnect names its group and its config, offset and status topics: in
    `spec.config` (kafka.strimzi.io/v1beta2), or the spec fields that replace them in
    kafka.strimzi.io/v1 (which forbids them in `spec.config`) and that the bridge releases' v1beta2
    also has (0.49 to 0.51: the operator takes the field first)."""
    if obj.get("kind") != "KafkaConnect":
        return []
    spec = _mapping(obj.get("spec"))
    config = _mapping(spec.get("config"))
    v1 = str(obj.get("apiVersion", "")).endswith("/v1")
    problems = []
    # Strimzi's defaults when a KafkaConnect leaves them out: every Connect cluster that does, on
    # one Kafka cluster, joins one group and shares these topics.
    for storage in names.CONNECT_STORAGE:
        default = storage.default
        given, path = ((spec.get(storage.field), f"spec.{storage.field}") if v1 else
                       (spec.get(storage.field, config.get(storage.key)), f"spec.config.{storage.key}"))
        if isinstance(given, Unknown) or (given is not None and given != ""):
            continue
        problems.append(Problem(describe(obj), path, given,
                                f"an explicit value, this Connect cluster's own: left out, Strimzi sets {default}, "
                                "and every Connect cluster on the same Kafka cluster that leaves it out shares it "
                                "(one group: each runs the others' connectors and overwrites their state)"))
    return problems


# ----------------------------------------------------------------- 5. the audit never runs twice at once


def audit_cronjob(obj: Mapping[str, Any]) -> bool:
    """Whether a CronJob is the replication audit's: it, its Jobs or their pods carry the audit's
    selector (infra/core/names.py AUDIT_SELECTOR), as the Connect REST policies admit them."""
    if obj.get("kind") != "CronJob":
        return False
    job = _mapping(_mapping(obj.get("spec")).get("jobTemplate"))
    pod = _mapping(_mapping(job.get("spec")).get("template"))
    labels = [_labels(obj), _labels(job), _labels(pod)]
    return any(all(found.get(k) == v for k, v in names.AUDIT_SELECTOR.items()) for found in labels)


def audit_concurrency(obj: Mapping[str, Any]) -> list[Problem]:
    """The audit's CronJob forbids concurrent runs."""
    if not audit_cronjob(obj):
        return []
    given = _mapping(obj.get("spec")).get("concurrencyPolicy")
    if given == "Forbid" or isinstance(given, Unknown):
        return []
    return [Problem(describe(obj), "spec.concurrencyPolicy", given,
                    "Forbid (Kubernetes' default is Allow): a run still going when the next is due must not run "
                    "beside it; two would write the same reports and double the load on the clusters they read")]


# ----------------------------------------------------------------- the pack


RULES = (
    Rule("no-secret-values",
         "No secret-looking value (a literal password, a JAAS line with a password, a PEM private key, a token) in a "
         "ConfigMap's data or a KafkaConnector's or KafkaConnect's spec.config: config provider references only.",
         secret_values),
    Rule("no-topic-renaming-transforms",
         "No MirrorMaker 2 KafkaConnector transform renames the record's topic (RegexRouter, TimestampRouter and "
         "every router the program refuses).",
         topic_renaming_transforms),
    Rule("rbac-named-objects",
         "Roles and ClusterRoles grant no wildcard (apiGroups, resources, verbs) and every rule names its objects "
         "(resourceNames).",
         rbac_scope),
    Rule("connect-own-group-and-topics",
         "Every KafkaConnect sets group.id, config.storage.topic, offset.storage.topic and status.storage.topic.",
         connect_storage),
    Rule("audit-runs-alone",
         "The replication audit's CronJob (labelled with the audit's selector) has concurrencyPolicy: Forbid.",
         audit_concurrency),
)


def problems(objects: Iterable[Mapping[str, Any]]) -> list[Problem]:
    """Every rule's problems with these objects, object by object, rule by rule."""
    return [p for obj in objects for rule in RULES for p in rule.check(obj)]
