"""A rehearsal's Kubernetes (run.Kube) on the kube-apiserver of apiserver.py: the rendered objects
created for real, tokens minted for service accounts with TokenRequest, and kubeconfigs that carry
them to the Connect workers' config providers. With the folder of the release's Strimzi CRDs
(crds.py: generated from Strimzi's published artifacts), the custom resources are created too;
without one the server does not serve them, and they are left out."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from infra.core.releases import GROUP
from infra.tools.rehearsal.kubeapi import ApiError, Client


def install_crds(client: Client, folder: Path) -> None:
    """The Strimzi CRDs of one operator version, replacing those of another. Created by POST,
    as released: the server keeps their CEL rules (x-kubernetes-validations) and enforces them
    (tests/apiserver/test_apiserver.py)."""
    if client.crds == str(folder):
        return
    crds = [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))]
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in crds:
        name = crd["metadata"]["name"]
        if client.request("DELETE", f"{base}/{name}")[0] == 200:
            client.wait_gone(f"{base}/{name}")
    for crd in crds:
        client.create(crd)
        client.wait_established(crd["metadata"]["name"])
    client.forget()
    client.crds = str(folder)


class ApiServerKube:
    def __init__(self, client: Client, crds: Path | None = None):
        """`crds`: the folder of the Strimzi CRDs of the rehearsal's release (crds.for_release)."""
        self.client = client
        self.crds = crds

    def apply(self, obj: dict[str, Any]) -> bool:
        if obj["apiVersion"].startswith(f"{GROUP}/") and self.crds is not None:
            install_crds(self.client, self.crds)
        if self.client.resource(obj["apiVersion"], obj["kind"]) is None:
            return False
        try:
            self.client.create(obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            # Already there: a namespace is kept (this server runs no namespace controller, so a
            # deleted one never goes); anything else is updated in place, as `pulumi up` does (a
            # ConfigMap deleted and created again would be missing, for a moment, to a worker
            # whose config provider reads it then); replaced only where the server refuses the
            # update (a field it holds immutable).
            if obj["kind"] != "Namespace" and not self.client.update(obj):
                self.client.remove(obj)
                self.client.create(obj)
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
        # The serving certificate names 127.0.0.1 among its addresses (apiserver.py).
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "pod",
            "clusters": [{"name": "api", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                     "certificate-authority-data": ca}}],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "pod", "context": {"cluster": "api", "user": "sa", "namespace": namespace}}]})
