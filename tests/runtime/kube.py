"""The runtime tier's Kubernetes: the rendered objects created for real on the API-server tier's
kube-apiserver, tokens minted for service accounts with TokenRequest, and kubeconfigs that carry
them to the Connect workers' config providers."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from tests.apiserver.client import ApiError, Client
from tests.conftest import CRDS

CRD_FOLDERS = {"kafka.strimzi.io/v1beta2": "0.48.0", "kafka.strimzi.io/v1": "1.2.0"}


class ApiServerKube:
    def __init__(self, client: Client):
        self.client = client
        self.created: list[dict[str, Any]] = []

    def install_crds(self, api_version: str) -> None:
        from tests.test_apiserver import install_crds
        install_crds(self.client, CRD_FOLDERS[api_version])

    def apply(self, obj: dict[str, Any]) -> bool:
        if obj["apiVersion"].startswith("kafka.strimzi.io/"):
            self.install_crds(obj["apiVersion"])
        if self.client.resource(obj["apiVersion"], obj["kind"]) is None:
            return False
        try:
            self.client.create(obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            # Already there: a namespace is kept (this server runs no namespace controller, so a
            # deleted one never goes); anything else left by an earlier rehearsal is replaced.
            if obj["kind"] != "Namespace":
                self.client.delete(obj)
                self.client.create(obj)
        self.created.append(obj)
        return True

    def token(self, namespace: str, service_account: str) -> str:
        status, body = self.client.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 7200}})
        if status != 201:
            raise ApiError(status, body, f"TokenRequest for {namespace}/{service_account}")
        token: str = body["status"]["token"]
        return token

    def kubeconfig(self, token: str, namespace: str) -> str:
        state = self.client.state
        assert state is not None
        ca = base64.b64encode(Path(state.ca_file).read_bytes()).decode()
        port = state.url.rsplit(":", 1)[1]
        # The serving certificate names 127.0.0.1 among its addresses (tests/apiserver/server.py).
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "pod",
            "clusters": [{"name": "api", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                     "certificate-authority-data": ca}}],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "pod", "context": {"cluster": "api", "user": "sa", "namespace": namespace}}]})
