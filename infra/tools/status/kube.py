"""What `kafka-replication status` reads from each Kubernetes cluster, with the user's kubeconfig,
through the official client (contexts, certificates, tokens and exec credential plugins as
kubectl handles them): the stack's KafkaConnects and KafkaConnectors by name, and the audit's
CronJob with the Jobs it owns. GETs only; each has a deadline and no retry, and a cluster that
did not answer once is not asked again, so an unreachable one ends the command in seconds."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from infra.core import names, reading
from infra.tools.status.assess import JSON, Read, Unreadable

SECONDS = 10  # per request: connect and read
# The audit's Jobs and pods carry its labels (infra/plan/audit.py's job template).
AUDIT_SELECTOR = {"labelSelector": ",".join(f"{k}={v}" for k, v in names.AUDIT_SELECTOR.items())}
PLURALS = {"KafkaConnect": "kafkaconnects", "KafkaConnector": "kafkaconnectors"}


class KubeconfigError(ValueError):
    """A kubeconfig or context the client cannot use: the user's input."""


class _Captured(logging.Handler):
    """What the client logs while it loads a kubeconfig (an exec plugin that failed is logged,
    not raised), kept to be said in our own error rather than printed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage().splitlines()[0] if record.getMessage() else record.levelname)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Reader:
    """One Kubernetes cluster, as one context of a kubeconfig sees it."""

    def __init__(self, kubeconfig: Path | None, context: str | None, api_version: str):
        import yaml
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
        configuration = client.Configuration()
        if kubeconfig is not None:
            # Read (bounded) and shaped before the client sees it: it answers a file that is not a
            # kubeconfig with its own internals' errors.
            loaded = reading.load_yaml_file(kubeconfig, "kubeconfig")
            if not isinstance(loaded, dict) or not isinstance(loaded.get("contexts", []), list):
                raise KubeconfigError("not a kubeconfig (a YAML mapping with clusters, contexts and users)")
        captured, root = _Captured(), logging.getLogger()
        root.addHandler(captured)
        try:
            config.load_kube_config(config_file=str(kubeconfig) if kubeconfig else None,  # type: ignore[no-untyped-call]
                                    context=context, client_configuration=configuration, persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:
            where = "" if kubeconfig else "the default ($KUBECONFIG, else ~/.kube/config): "
            raise KubeconfigError(where + (f"context {context}: " if context else "") + _first(exc)) from None
        finally:
            root.removeHandler(captured)
        credentials = configuration.api_key.get("authorization") or configuration.cert_file or \
            configuration.username
        if captured.lines and not credentials:
            # An exec credential plugin that failed leaves the client without credentials.
            raise KubeconfigError("its user has no credentials: " + "; ".join(captured.lines))
        configuration.retries = 0
        self.server = configuration.host
        self.api = client.ApiClient(configuration)
        self.group, _, self.version = api_version.partition("/")
        self.silent: Unreadable | None = None  # set once the server did not answer

    def _get(self, path: str, what: str, query: dict[str, str] | None = None) -> Read:
        import urllib3
        if self.silent is not None:
            return Unreadable(f"{what}: not asked ({self.silent})")
        try:
            method, url, headers, _, _ = self.api.param_serialize(
                "GET", path + (f"?{urlencode(query)}" if query else ""), header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, _request_timeout=SECONDS)
            response.read()  # type: ignore[no-untyped-call]
            data = response.data or b""
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            cause = getattr(exc, "reason", None) or exc  # retries=0: MaxRetryError wraps the connection's error
            self.silent = Unreadable(f"{self.server} did not answer: {type(cause).__name__}: {_first(cause)[:300]}")
            return Unreadable(f"{what}: {self.silent}")
        try:
            body: Any = json.loads(data)
        except ValueError:
            body = None
        if response.status == 404 and isinstance(body, dict) and body.get("kind") == "Status" \
                and body.get("reason") == "NotFound":
            return None
        if response.status == 404:
            # Not an object's absence: the path itself is not served (another cluster than
            # meant, or CRDs of another API version than the stack's release).
            return Unreadable(f"{what}: HTTP 404: {self.server} does not serve {path} (the right context? the "
                              f"operator's CRDs at {self.group}/{self.version}?)")
        if response.status != 200:
            message = body.get("message") if isinstance(body, dict) else None
            return Unreadable(f"{what}: HTTP {response.status}: {message or response.reason}")
        return body if isinstance(body, dict) else Unreadable(f"{what}: the answer is not a JSON object")

    def strimzi(self, kind: str, namespace: str, name: str) -> Read:
        return self._get(f"/apis/{self.group}/{self.version}/namespaces/{quote(namespace, safe='')}/{PLURALS[kind]}/"
                         f"{quote(name, safe='')}", f"{kind} {namespace}/{name}")

    def cron_job(self, namespace: str, name: str) -> Read:
        return self._get(f"/apis/batch/v1/namespaces/{quote(namespace, safe='')}/cronjobs/{quote(name, safe='')}",
                         f"CronJob {namespace}/{name}")

    def jobs_of(self, namespace: str, cron_job: str) -> list[JSON] | Unreadable:
        """The Jobs a CronJob owns (their ownerReferences), among those with the audit's labels."""
        found = self._get(f"/apis/batch/v1/namespaces/{quote(namespace, safe='')}/jobs", f"Jobs in {namespace}",
                          AUDIT_SELECTOR)
        if isinstance(found, Unreadable):
            return found
        items = (found or {}).get("items") or []
        return [j for j in items if isinstance(j, dict) and any(
            isinstance(o, dict) and o.get("kind") == "CronJob" and o.get("name") == cron_job
            for o in (j.get("metadata") or {}).get("ownerReferences") or [])]

    def pods_of(self, namespace: str) -> list[JSON] | Unreadable:
        """The audit's pods (its labels): the finished run's termination message is on its pod's
        status (contract/lastrun.py)."""
        found = self._get(f"/api/v1/namespaces/{quote(namespace, safe='')}/pods", f"pods in {namespace}",
                          AUDIT_SELECTOR)
        if isinstance(found, Unreadable):
            return found
        return [p for p in (found or {}).get("items") or [] if isinstance(p, dict)]
