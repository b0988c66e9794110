"""The audit configuration contract: what the program writes (infra/plan/audit.py, into the audit
ConfigMap) and the job reads (spark/audit.py), versioned, checked by the job before Spark starts.

No dependencies on purpose: the job checks its input with nothing but this module, and the
program's tests check every configuration it renders against the same rules. A field the job
relies on is listed here; a document that breaks a rule is refused whole (exit 2, "could not
audit"), never half-read.
"""

from __future__ import annotations

from typing import Any

# 2: a connector's `topicsExclude` is the list as the connector runs it (Kafka's default
# excludes included), so the job applies it as it stands.
VERSION = 2
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
TRUSTS = ("pem", "jks", "pkcs12")
POLICIES = ("default", "identity")
INT32 = 2**31 - 1
# MirrorSourceConfig.OFFSET_LAG_MAX_DEFAULT (3.8.0 to 4.x): a source connector that does not set
# offset.lag.max writes an offset sync at most every 100 records of a partition. The plan renders
# each connector's own (`offsetLagMax`); the job falls back to this for a configuration without it.
OFFSET_LAG_MAX_DEFAULT = 100
# The job's name on both sides of the boundary: its Kubernetes objects and pods' label, the Spark
# application, its consumer group, the Pushgateway job its metrics are pushed under (which the
# program's alert rules select) and the kind of its termination message.
JOB = "kafka-replication-audit"
# Where the program mounts what the job reads (infra/plan/audit.py), and the job's defaults.
CONFIG_DIR = "/etc/replication-audit/config"
CONFIG_FILE = "audit.json"
CREDENTIALS_DIR = "/etc/replication-audit/kafka"
REPORTS_DIR = "/reports"
# The files of a cluster's credentials directory (`<credentials>/<alias>/<file>`), by secret
# config item: one home for the Secret keys the audit component writes and the job reads.
CREDENTIAL_FILES = {"password": "password", "caCert": "ca.crt", "truststore": "truststore",
                    "truststorePassword": "truststore.password", "clientCert": "client.crt",
                    "clientKey": "client.key"}


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, where: str, expected: str, value: Any) -> None:
        shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        self.problems.append(f"{where}: expected {expected}, got {shown[:80]}")

    def mapping(self, value: Any, where: str, required: tuple[str, ...]) -> bool:
        if not isinstance(value, dict):
            self.fail(where, "an object", value)
            return False
        for key in required:
            if key not in value:
                self.problems.append(f"{where}.{key}: missing")
        return all(key in value for key in required)

    def text(self, value: Any, where: str, choices: tuple[str, ...] | None = None, optional: bool = False) -> None:
        if optional and value is None:
            return
        if not isinstance(value, str) or not value or (choices and value not in choices):
            self.fail(where, f"one of {', '.join(choices)}" if choices else "a non-empty string", value)

    def integer(self, value: Any, where: str, low: int, optional: bool = False) -> None:
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= INT32:
            self.fail(where, f"an integer from {low} to {INT32}", value)

    def flag(self, value: Any, where: str) -> None:
        if not isinstance(value, bool):
            self.fail(where, "true or false", value)

    def strings(self, value: Any, where: str) -> None:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(where, "a list of non-empty strings", value)


def problems(config: Any) -> list[str]:
    """Every way `config` breaks the contract (empty: the job may read it)."""
    c = _Checker()
    if not c.mapping(config, "config", ("version", "clusters", "flows", "settings")):
        return c.problems
    if config["version"] != VERSION:
        c.fail("config.version", f"{VERSION} (this job's contract; deploy the job and program of one release)",
               config["version"])
        return c.problems
    clusters = config["clusters"]
    if c.mapping(clusters, "config.clusters", ()):
        for alias, cluster in sorted(clusters.items()):
            where = f"config.clusters.{alias}"
            if c.mapping(cluster, where, ("bootstrapServers", "securityProtocol")):
                c.text(cluster["bootstrapServers"], f"{where}.bootstrapServers")
                c.text(cluster["securityProtocol"], f"{where}.securityProtocol", PROTOCOLS)
                c.text(cluster.get("saslMechanism"), f"{where}.saslMechanism", MECHANISMS, optional=True)
                c.text(cluster.get("saslUsername"), f"{where}.saslUsername", optional=True)
                c.text(cluster.get("trust"), f"{where}.trust", TRUSTS, optional=True)
                c.flag(cluster.get("clientCertificate", False), f"{where}.clientCertificate")
    settings = config["settings"]
    if c.mapping(settings, "config.settings", ("window", "thresholds")):
        window, thresholds = settings["window"], settings["thresholds"]
        if c.mapping(window, "config.settings.window", ("lookbackMinutes", "graceMinutes", "bucketSeconds")):
            c.integer(window["lookbackMinutes"], "config.settings.window.lookbackMinutes", 1)
            c.integer(window["graceMinutes"], "config.settings.window.graceMinutes", 0)
            c.integer(window["bucketSeconds"], "config.settings.window.bucketSeconds", 1)
        required = ("maxLag", "maxMissing", "maxUnexpected", "maxHeartbeatAgeSeconds")
        if c.mapping(thresholds, "config.settings.thresholds", required):
            for key in required:
                c.integer(thresholds[key], f"config.settings.thresholds.{key}", 0)
            c.integer(thresholds.get("maxDuplicates"), "config.settings.thresholds.maxDuplicates", 0, optional=True)
            c.integer(thresholds.get("maxCheckpointAgeSeconds"), "config.settings.thresholds.maxCheckpointAgeSeconds",
                      0, optional=True)
        c.text(settings.get("pushgateway"), "config.settings.pushgateway", optional=True)
    flows = config["flows"]
    if not isinstance(flows, list):
        c.fail("config.flows", "a list", flows)
        return c.problems
    names = set()
    for i, flow in enumerate(flows):
        where = f"config.flows[{i}]"
        if not c.mapping(flow, where, ("name", "sourceAlias", "targetAlias", "replicationPolicy", "topicPrefix",
                                       "connectors", "heartbeats", "excludeTopics")):
            continue
        c.text(flow["name"], f"{where}.name")
        if flow["name"] in names:
            c.fail(f"{where}.name", "a name no other flow has", flow["name"])
        names.add(flow["name"])
        for role in ("sourceAlias", "targetAlias"):
            if isinstance(clusters, dict) and flow[role] not in clusters:
                c.fail(f"{where}.{role}", "an alias of config.clusters", flow[role])
        c.text(flow["replicationPolicy"], f"{where}.replicationPolicy", POLICIES)
        if not isinstance(flow["topicPrefix"], str):
            c.fail(f"{where}.topicPrefix", "a string", flow["topicPrefix"])
        c.flag(flow.get("aggregation", False), f"{where}.aggregation")
        connectors = flow["connectors"]
        if not isinstance(connectors, list) or not connectors:
            c.fail(f"{where}.connectors", "a non-empty list", connectors)
            continue
        for j, connector in enumerate(connectors):
            at = f"{where}.connectors[{j}]"
            if c.mapping(connector, at, ("name", "restUrl", "topics", "topicsExclude", "compareValue",
                                         "stripHeaders")):
                c.text(connector["name"], f"{at}.name")
                url = connector["restUrl"]
                if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                    c.fail(f"{at}.restUrl", "an http(s) URL", url)
                c.strings(connector["topics"], f"{at}.topics")
                c.strings(connector["topicsExclude"], f"{at}.topicsExclude")
                c.flag(connector["compareValue"], f"{at}.compareValue")
                c.strings(connector["stripHeaders"], f"{at}.stripHeaders")
                c.integer(connector.get("offsetLagMax"), f"{at}.offsetLagMax", 0, optional=True)
        for side in ("heartbeats", "excludeTopics"):
            c.mapping(flow[side], f"{where}.{side}", ("source", "target"))
        loop = flow.get("loopHeaders")
        if loop is not None and c.mapping(loop, f"{where}.loopHeaders", ("added", "dropped")):
            c.text(loop["added"], f"{where}.loopHeaders.added")
            c.text(loop["dropped"], f"{where}.loopHeaders.dropped")
    return c.problems
