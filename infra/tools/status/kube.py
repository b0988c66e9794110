"""What `kafka-replication status` reads from each Kubernetes cluster, with the user's kubeconfig,
through the official client (contexts, certificates, tokens and exec credential plugins as
kubectl handles them): the stack's KafkaConnects and KafkaConnectors by name, and the audit's
CronJob with the Jobs it owns. GETs only; every call has a deadline and no retry, so a cluster
that does not answer ends the command in seconds rather than minutes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.core import reading
from infra.tools.status.assess import JSON, Read, Unreadable

SECONDS = 10  # per request: connect and read


class KubeconfigError(ValueError):
    """A kubeconfig or context the client cannot use: the user's input."""


class Reader:
    """One Kubernetes cluster, as one context of a kubeconfig sees it."""

    def __init__(self, kubeconfig: Path | None, context: str | None, api_version: str):
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
        configuration = client.Configuration()
        if kubeconfig is not None:
            # Read (bounded) and shaped before the client sees it: it answers a file that is not a
            # kubeconfig with its own internals' errors.
            loaded = reading.load_yaml_file(kubeconfig, "kubeconfig")
            if not isinstance(loaded, dict) or not isinstance(loaded.get("contexts", []), list):
                raise KubeconfigError("not a kubeconfig (a YAML mapping with clusters, contexts and users)")
        try:
            config.load_kube_config(config_file=str(kubeconfig) if kubeconfig else None,  # type: ignore[no-untyped-call]
                                    context=context, client_configuration=configuration, persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
            where = "" if kubeconfig else "the default ($KUBECONFIG, else ~/.kube/config): "
            raise KubeconfigError(where + (f"context {context}: " if context else "") +
                                  (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)) from None
        configuration.retries = 0
        self.server = configuration.host
        self.api = client.ApiClient(configuration)
        self.group, _, self.version = api_version.partition("/")

    def _get(self, path: str, what: str) -> Read:
        try:
            method, url, headers, _, _ = self.api.param_serialize(
                "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, _request_timeout=SECONDS)
            response.read()  # type: ignore[no-untyped-call]
            data = response.data or b""
        except Exception as exc:  # urllib3's connection and TLS errors, an exec plugin that failed
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            return Unreadable(f"{what}: {self.server} did not answer ({type(exc).__name__}: {first})")
        if response.status == 404:
            return None
        try:
            body: Any = json.loads(data)
        except ValueError:
            body = None
        if response.status != 200:
            message = body.get("message") if isinstance(body, dict) else None
            return Unreadable(f"{what}: HTTP {response.status}: {message or response.reason}")
        return body if isinstance(body, dict) else Unreadable(f"{what}: the answer is not a JSON object")

    def strimzi(self, kind: str, namespace: str, name: str) -> Read:
        plural = {"KafkaConnect": "kafkaconnects", "KafkaConnector": "kafkaconnectors"}[kind]
        return self._get(f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{plural}/{name}",
                         f"{kind} {namespace}/{name}")

    def cron_job(self, namespace: str, name: str) -> Read:
        return self._get(f"/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}", f"CronJob {namespace}/{name}")

    def jobs_of(self, namespace: str, cron_job: str) -> list[JSON] | Unreadable:
        """The Jobs a CronJob owns (their ownerReferences), as the CronJob controller made them."""
        found = self._get(f"/apis/batch/v1/namespaces/{namespace}/jobs", f"Jobs in {namespace}")
        if isinstance(found, Unreadable):
            return found
        items = (found or {}).get("items") or []
        return [j for j in items if isinstance(j, dict) and any(
            isinstance(o, dict) and o.get("kind") == "CronJob" and o.get("name") == cron_job
            for o in (j.get("metadata") or {}).get("ownerReferences") or [])]
