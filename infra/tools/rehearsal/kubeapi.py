"""A minimal Kubernetes REST client for the API-server tier: discovery, create (for real or as a
server-side dry run, with strict field validation when asked), delete, and SubjectAccessReviews.
Plain urllib: the tier needs these few calls only, each visible here."""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from infra.tools.rehearsal.apiserver import State, tls_context

JSON = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    path: str        # /api/v1 or /apis/<group>/<version>
    plural: str
    namespaced: bool


class ApiError(Exception):
    def __init__(self, status: int, body: JSON, what: str):
        self.status, self.body = status, body
        super().__init__(f"{what}: HTTP {status}: {body.get('message', body)}")


class Client:
    def __init__(self, state: State | None = None, *, url: str = "", token: str = "",
                 context: ssl.SSLContext | None = None):
        if state is not None:
            url, token, context = state.url, state.token, tls_context(state.ca_file)
        self.state = state
        self.url, self.token, self.context = url, token, context
        self._discovery: dict[str, dict[str, Resource] | None] = {}
        self.crds: str | None = None  # the Strimzi CRD flavour installed (tests/apiserver/test_apiserver.py)

    @classmethod
    def from_kubeconfig(cls, config: JSON, context: str | None = None) -> "Client":
        """The server a kubeconfig addresses, as client-go picks it: the given context, else
        current-context; its cluster's server and CA data, its user's token (the only kinds of
        entry apiserver.kubeconfig writes)."""
        def entry(section: str, name: str) -> JSON:
            found = [e[section[:-1]] for e in config[section] if e["name"] == name]
            if len(found) != 1:
                raise LookupError(f"{len(found)} {section} named {name!r} in the kubeconfig")
            chosen: JSON = found[0]
            return chosen
        chosen = entry("contexts", context or config["current-context"])
        cluster, user = entry("clusters", chosen["cluster"]), entry("users", chosen["user"])
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        tls = ssl.create_default_context(cadata=ca)
        tls.check_hostname = False  # as tls_context: the serving certificate names "localhost"
        return cls(url=cluster["server"], token=user["token"], context=tls)

    def request(self, method: str, path: str, body: JSON | None = None, query: JSON | None = None) -> tuple[int, JSON]:
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.context) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw)
            except ValueError:
                return exc.code, {"message": raw.decode(errors="replace")}

    # ------------------------------------------------------------------ discovery

    def forget(self) -> None:
        """Drop cached discovery (after CRDs change)."""
        self._discovery.clear()

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """Where objects of this kind live, or None when the server does not serve it."""
        if api_version not in self._discovery:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            status, body = self.request("GET", path)
            self._discovery[api_version] = None if status == 404 else {
                r["kind"]: Resource(path, r["name"], r["namespaced"])
                for r in body.get("resources", []) if "/" not in r["name"]}
            if status not in (200, 404):
                raise ApiError(status, body, f"discovery of {api_version}")
        found = self._discovery[api_version]
        return found.get(kind) if found else None

    def _collection(self, obj: JSON) -> str:
        res = self.resource(obj["apiVersion"], obj["kind"])
        if res is None:
            raise ApiError(404, {"message": "not served by this server"}, f"{obj['apiVersion']} {obj['kind']}")
        ns = obj["metadata"].get("namespace")
        return f"{res.path}/namespaces/{ns}/{res.plural}" if res.namespaced else f"{res.path}/{res.plural}"

    # ------------------------------------------------------------------ objects

    def create(self, obj: JSON, dry_run: bool = False, strict: bool = False) -> JSON:
        """POST the object; raise ApiError unless the server accepts it. With dry_run, the
        server runs admission and validation and stores nothing. With strict, an unknown field
        is an error (`fieldValidation=Strict`, HTTP 400) rather than a warning and a field the
        server drops."""
        query = {**({"dryRun": "All"} if dry_run else {}), **({"fieldValidation": "Strict"} if strict else {})}
        status, body = self.request("POST", self._collection(obj), obj, query or None)
        if status not in (200, 201):
            raise ApiError(status, body, f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")
        return body

    def ensure(self, obj: JSON) -> None:
        """Create for real, accepting one that already exists (namespaces shared by renders)."""
        try:
            self.create(obj)
        except ApiError as exc:
            if exc.status != 409:
                raise

    def update(self, obj: JSON) -> bool:
        """PUT the object over the one of its name, at that one's resourceVersion (an update in
        place, as `kubectl replace` makes it); False when there is none or the server refuses it
        (a field it holds immutable)."""
        path = f"{self._collection(obj)}/{obj['metadata']['name']}"
        status, live = self.request("GET", path)
        if status != 200:
            return False
        body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
        return self.request("PUT", path, body)[0] == 200

    def delete(self, obj: JSON) -> None:
        status, body = self.request("DELETE", f"{self._collection(obj)}/{obj['metadata']['name']}")
        if status not in (200, 202, 404):
            raise ApiError(status, body, f"delete {obj['kind']} {obj['metadata']['name']}")

    def remove(self, obj: JSON, timeout: float = 30) -> None:
        """Delete and wait until it is gone. This server runs no controllers, so a finalizer one
        would clear is cleared here: `kubernetes.io/pvc-protection` (added by the
        StorageObjectInUseProtection admission plugin) goes once no pod uses the claim, and no
        pod ever runs on this server."""
        path = f"{self._collection(obj)}/{obj['metadata']['name']}"
        self.delete(obj)
        status, body = self.request("GET", path)
        if status == 200 and body.get("metadata", {}).get("finalizers"):
            body["metadata"]["finalizers"] = []
            status, answer = self.request("PUT", path, body)
            if status not in (200, 404, 409):  # 409: changed meanwhile; the wait below decides
                raise ApiError(status, answer, f"clear the finalizers of {obj['kind']} {obj['metadata']['name']}")
        self.wait_gone(path, timeout)

    def wait_established(self, crd_name: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
            conditions = {c["type"]: c["status"] for c in (body.get("status") or {}).get("conditions") or []}
            if status == 200 and conditions.get("Established") == "True":
                return
            time.sleep(0.1)
        raise TimeoutError(f"CRD {crd_name} not established after {timeout} s")

    def wait_gone(self, path: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.request("GET", path)[0] == 404:
                return
            time.sleep(0.1)
        raise TimeoutError(f"{path} still present after {timeout} s")

    # ------------------------------------------------------------------ authorization

    def allowed(self, user: str, groups: list[str], verb: str, resource: str, namespace: str | None = None,
                name: str | None = None, group: str = "") -> bool:
        """The real authorizer's answer to a SubjectAccessReview. `resource` may name a
        subresource: "pods/exec"."""
        resource, _, subresource = resource.partition("/")
        attrs = {"verb": verb, "resource": resource, "group": group}
        if subresource:
            attrs["subresource"] = subresource
        if namespace:
            attrs["namespace"] = namespace
        if name:
            attrs["name"] = name
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": user, "groups": groups, "resourceAttributes": attrs}}
        status, body = self.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        if status != 201:
            raise ApiError(status, body, "SubjectAccessReview")
        return bool(body["status"].get("allowed"))


def service_account_user(namespace: str, name: str) -> tuple[str, list[str]]:
    """The user and groups a service account's token authenticates as."""
    return (f"system:serviceaccount:{namespace}:{name}",
            ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"])
