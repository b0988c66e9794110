"""Kubeconfigs for the checks of infra/deploy/kubeconfig.py: a valid one, and every rule as a way
to break it (`RULES`: the mutation and the exact reasons), which the unit tier checks and the
API-server tier holds to kubectl."""

from __future__ import annotations

import base64
import copy

import yaml

from infra.deploy import kubeconfig
from tests.support.material import material


def valid(server: str = "https://api.example.com:6443", token: str = "t0ken", ca: str | None = None) -> dict:
    ca = ca or material("kube").ca_pem
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "admin@c",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "certificate-authority-data": base64.b64encode(ca.encode()).decode()}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "admin@c", "context": {"cluster": "c", "user": "admin"}}],
    }


K = "a kubeconfig whose "


def check(config: dict | str, context: str | None = None) -> list[str]:
    return kubeconfig.problems(str(config) if isinstance(config, str) else yaml.safe_dump(config), context)


def cluster(config: dict) -> dict:
    return config["clusters"][0]["cluster"]


def user(config: dict) -> dict:
    return config["users"][0]["user"]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def exec_plugin(token: str, api_version: str = "client.authentication.k8s.io/v1beta1") -> dict:
    """An exec plugin printing an ExecCredential with `token`, as cloud plugins do."""
    credential = f'{{"apiVersion":"{api_version}","kind":"ExecCredential","status":{{"token":"{token}"}}}}'
    return {"apiVersion": api_version, "command": "/bin/sh", "args": ["-c", f"echo '{credential}'"]}


class Text(str):
    """A case that replaces the whole kubeconfig text (the others change the document)."""


def _mutate(config: dict, how) -> dict:
    config = copy.deepcopy(config)
    how(config)
    return config


RULES = {
    "empty": (lambda c: Text("  \n"), ["empty"]),
    "a path": (lambda c: Text("/home/ci/.kube/config"),
               ["one line of text, not the contents of a kubeconfig: a path would be read on whichever machine "
                "runs pulumi up; set the contents: pulumi config set --secret KEY \"$(cat FILE)\""]),
    "not YAML": (lambda c: Text("clusters: [\n"), ["YAML that cannot be read safely"]),
    "a duplicate key": (lambda c: Text("users: []\nusers: []\n"), ["YAML that cannot be read safely (line 2)"]),
    "a list": (lambda c: Text("- a\n- b\n"), ["not a kubeconfig (a YAML mapping with clusters, contexts and users)"]),
    "apiVersion v2": (lambda c: c.update(apiVersion="v2"), ["a kubeconfig whose apiVersion is not v1"]),
    "no current-context": (lambda c: c.pop("current-context"), [
        "a kubeconfig without current-context, and the topology names no context of it (kubernetes.<name>.context)"]),
    "current-context undefined": (lambda c: c.update({"current-context": "other"}), [
        "a kubeconfig whose current-context names no context it defines"]),
    "context's cluster undefined": (lambda c: c["contexts"][0]["context"].update(cluster="d"), [
        "a kubeconfig whose context names a cluster it does not define"]),
    "context's user undefined": (lambda c: c["contexts"][0]["context"].update(user="nobody"), [
        K + "context names a user it does not define (client-go would connect anonymously)"]),
    "no server": (lambda c: cluster(c).pop("server"), [K + "cluster has no server"]),
    "http": (lambda c: cluster(c).update(server="http://api.example.com"), [
        K + "cluster's server is not an https:// URL (the credential would cross the network in clear)"]),
    "a password in the server's URL": (lambda c: cluster(c).update(
        server=cluster(c)["server"].replace("https://", "https://admin:pw@")), [
        K + "cluster's server carries a user or password (user:password@host): client-go sends it as basic "
        "authentication in place of the user's credential (every request anonymous), and a URL is shown wherever the "
        "server is"]),
    "insecure": (lambda c: cluster(c).update({"insecure-skip-tls-verify": True}), [
        "a kubeconfig with insecure-skip-tls-verify: true (the credential would go to a server nobody verified)"]),
    "CA file": (lambda c: cluster(c).update({"certificate-authority": "/etc/ca.crt"}), [
        K + "cluster's certificate-authority names a file on the machine running pulumi up, which Pulumi ESC "
        "cannot supply: put the content in certificate-authority-data instead"]),
    "CA not base64": (lambda c: cluster(c).update({"certificate-authority-data": "not base64!"}), [
        K + "cluster's certificate-authority-data is not base64 of PEM text"]),
    "CA not a certificate": (lambda c: cluster(c).update({"certificate-authority-data": b64("hello")}), [
        K + "certificate-authority-data is unusable: no PEM certificate (-----BEGIN CERTIFICATE-----)"]),
    "a misspelt field": (lambda c: cluster(c).update({"certificate-authority-date": "x"}), [
        "a kubeconfig with an unknown field in its cluster: certificate-authority-date (client-go ignores it "
        "silently)"]),
    "proxy ftp": (lambda c: cluster(c).update({"proxy-url": "ftp://proxy:21"}), [
        K + "cluster's proxy-url is not http, https or socks5 (client-go refuses it)"]),
    "no credential": (lambda c: user(c).pop("token"), [
        K + "user has no credential (no token, client certificate, exec plugin or auth-provider): client-go "
        "would connect anonymously"]),
    "token file": (lambda c: (user(c).pop("token"), user(c).update(tokenFile="/var/run/token")), [
        K + "user's tokenFile names a file on the machine running pulumi up, which Pulumi ESC cannot supply: "
        "put the content in token instead"]),
    "basic": (lambda c: (user(c).pop("token"), user(c).update(username="a", password="b")), [
        K + "user authenticates with username/password, which Kubernetes API servers no longer accept (basic "
        "authentication was removed in 1.19)"]),
    "token and basic": (lambda c: user(c).update(username="a", password="b"), [
        K + "user has both a token and username/password (client-go allows one)"]),
    "certificate without key": (lambda c: user(c).update({"client-certificate-data": b64(material("kube").client_cert_pem)}), [
        K + "user has client-certificate-data without client-key-data (client-go needs both)"]),
    "key of another certificate": (lambda c: user(c).update({
        "client-certificate-data": b64(material("kube").client_cert_pem),
        "client-key-data": b64(material("other").client_key_pem)}), [
        K + "user's client key does not match its client certificate (client-go refuses the pair)"]),
    "exec without command": (lambda c: user(c).update(exec={"apiVersion": "client.authentication.k8s.io/v1beta1"}), [
        K + "user's exec plugin has no command"]),
    "exec v1alpha1": (lambda c: user(c).update(exec=exec_plugin("x", "client.authentication.k8s.io/v1alpha1")), [
        K + "user's exec plugin has an apiVersion other than client.authentication.k8s.io/v1 or "
        "client.authentication.k8s.io/v1beta1"]),
    "exec v1 without interactiveMode": (lambda c: user(c).update(exec=exec_plugin("x", "client.authentication.k8s.io/v1")), [
        K + "user's exec plugin (v1) has no interactiveMode: set Never"]),
    "exec interactive": (lambda c: user(c).update(exec={**exec_plugin("x"), "interactiveMode": "Always"}), [
        K + "user's exec plugin is interactive (interactiveMode: Always): the provider has no terminal; set Never"]),
    "gcp auth-provider": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": {"name": "gcp"}})), [
        K + "user's auth-provider is not oidc (client-go removed the gcp and azure providers: use their exec "
        "plugins, e.g. gke-gcloud-auth-plugin or kubelogin)"]),
    "two contexts of one name": (lambda c: c["contexts"].append(copy.deepcopy(c["contexts"][0])), [
        "a kubeconfig that defines two contexts of the same name (client-go refuses it)"]),
    "impersonated groups without as": (lambda c: user(c).update({"as-groups": ["g"]}), [
        K + "user asks for impersonated groups, uid or extras without as (client-go refuses it)"]),
}


def broken(case: str, base: dict) -> dict | str:
    how, _ = RULES[case]
    config = copy.deepcopy(base)
    result = how(config)
    return result if isinstance(result, Text) else config


# ------------------------------------------------------------------ each rule, exactly


def undecodable(path: str, expected: str, go: str) -> str:
    return f"a kubeconfig whose {path} is not {expected} (client-go decodes it as {go} and cannot load the kubeconfig)"


def oidc(**config) -> dict:
    return {"name": "oidc", "config": {"idp-issuer-url": "https://issuer.example.com", "client-id": "kubernetes",
                                       **config}}


HEADER = " holds a line break or another control character (Go's net/http refuses it in a request header: every " \
         "request would fail)"
# A value of another JSON type than its field's in client-go's tools/clientcmd/api/v1/types.go:
# client-go cannot load the file, whichever entry holds the value.
DECODING = {
    "insecure as a string": (lambda c: cluster(c).update({"insecure-skip-tls-verify": "true"}), [
        undecodable("clusters[0].cluster.insecure-skip-tls-verify", "true or false", "bool")]),
    "disable-compression as a string": (lambda c: cluster(c).update({"disable-compression": "false"}), [
        undecodable("clusters[0].cluster.disable-compression", "true or false", "bool")]),
    "server as a number": (lambda c: cluster(c).update(server=6443), [
        undecodable("clusters[0].cluster.server", "a string", "string")]),
    "CA data as a list": (lambda c: cluster(c).update({"certificate-authority-data": ["a"]}), [
        undecodable("clusters[0].cluster.certificate-authority-data", "a string (base64)", "[]byte")]),
    "cluster extensions as a mapping": (lambda c: cluster(c).update(extensions={"a": {}}), [
        undecodable("clusters[0].cluster.extensions", "a list of mappings", "[]NamedExtension")]),
    "extension without a string name": (lambda c: c.update(extensions=[{"name": 1, "extension": {"any": ["x"]}}]), [
        undecodable("extensions[0].name", "a string", "string")]),
    "preferences colors as a string": (lambda c: c.update(preferences={"colors": "true"}), [
        undecodable("preferences.colors", "true or false", "bool")]),
    "preferences as a list": (lambda c: c.update(preferences=[]), [
        undecodable("preferences", "a mapping", "Preferences")]),
    "current-context as a list": (lambda c: c.update({"current-context": ["admin@c"]}), [
        undecodable("current-context", "a string", "string")]),
    "clusters as a mapping": (lambda c: c.update(clusters={"c": cluster(c)}), [
        undecodable("clusters", "a list of mappings", "[]NamedCluster")]),
    "a cluster as a string": (lambda c: c["clusters"][0].update(cluster="https://api.example.com"), [
        undecodable("clusters[0].cluster", "a mapping", "Cluster")]),
    "context namespace as a number": (lambda c: c["contexts"][0]["context"].update(namespace=7), [
        undecodable("contexts[0].context.namespace", "a string", "string")]),
    "context user as a list": (lambda c: c["contexts"][0]["context"].update(user=["admin"]), [
        undecodable("contexts[0].context.user", "a string", "string")]),
    "token as a number": (lambda c: user(c).update(token=12345), [
        undecodable("users[0].user.token", "a string", "string")]),
    "as-groups as a string": (lambda c: user(c).update({"as": "a", "as-groups": "g"}), [
        undecodable("users[0].user.as-groups", "a list of strings", "[]string")]),
    "as-user-extra of strings": (lambda c: user(c).update({"as": "a", "as-user-extra": {"scopes": "view"}}), [
        undecodable("users[0].user.as-user-extra", "a mapping of strings to lists of strings", "map[string][]string")]),
    "exec as a string": (lambda c: user(c).update(exec="aws eks get-token"), [
        undecodable("users[0].user.exec", "a mapping", "ExecConfig")]),
    "exec args as a string": (lambda c: user(c).update(exec={**exec_plugin("x"), "args": "get-token"}), [
        undecodable("users[0].user.exec.args", "a list of strings", "[]string")]),
    "exec args of numbers": (lambda c: user(c).update(exec={**exec_plugin("x"), "args": ["--port", 8080]}), [
        undecodable("users[0].user.exec.args", "a list of strings", "[]string")]),
    "exec env as a mapping": (lambda c: user(c).update(exec={**exec_plugin("x"), "env": {"AWS_PROFILE": "ops"}}), [
        undecodable("users[0].user.exec.env", "a list of mappings", "[]ExecEnvVar")]),
    "exec env value as a number": (lambda c: user(c).update(exec={**exec_plugin("x"), "env": [
        {"name": "PORT", "value": 8080}]}), [undecodable("users[0].user.exec.env[0].value", "a string", "string")]),
    "exec provideClusterInfo as a string": (lambda c: user(c).update(exec={**exec_plugin("x"),
                                                                           "provideClusterInfo": "true"}), [
        undecodable("users[0].user.exec.provideClusterInfo", "true or false", "bool")]),
    "exec command as a list": (lambda c: user(c).update(exec={**exec_plugin("x"), "command": ["aws", "eks"]}), [
        undecodable("users[0].user.exec.command", "a string", "string")]),
    "exec interactiveMode as a bool": (lambda c: user(c).update(exec={
        **exec_plugin("x", "client.authentication.k8s.io/v1"), "interactiveMode": False}), [
        undecodable("users[0].user.exec.interactiveMode", "a string", "string")]),
    "auth-provider config as a list": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": {
        "name": "oidc", "config": ["idp-issuer-url"]}})), [
        undecodable("users[0].user.auth-provider.config", "a mapping of strings to strings", "map[string]string")]),
    "auth-provider config of a number": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": oidc(
        **{"client-id": 42})})), [
        undecodable("users[0].user.auth-provider.config", "a mapping of strings to strings", "map[string]string")]),
    "auth-provider name as a list": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": {
        **oidc(), "name": ["oidc"]}})), [undecodable("users[0].user.auth-provider.name", "a string", "string")]),
    "a user no context names": (lambda c: c["users"].append({"name": "other", "user": {"exec": {"args": "x"}}}), [
        undecodable("users[1].user.exec.args", "a list of strings", "[]string")]),
}
RULES.update(DECODING)
RULES.update({
    "token with a line break": (lambda c: user(c).update(token="t0ken\n"), [K + "user's token" + HEADER]),
    "token with a control character": (lambda c: user(c).update(token="t0\x00ken"), [K + "user's token" + HEADER]),
    "impersonated user with a line break": (lambda c: user(c).update({"as": "admin\r\nX-Evil: 1"}), [
        K + "user's as" + HEADER]),
    "impersonated group with a line break": (lambda c: user(c).update({"as": "a", "as-groups": ["g\n"]}), [
        K + "user's as-groups" + HEADER]),
    "oidc without idp-issuer-url": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": oidc(
        **{"idp-issuer-url": ""})})), [
        K + "user's oidc auth-provider has no config idp-issuer-url (client-go's oidc plugin refuses it: Must "
        "provide idp-issuer-url)"]),
    "oidc without client-id": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": {
        "name": "oidc", "config": {"idp-issuer-url": "https://issuer.example.com", "client-id": None}}})), [
        K + "user's oidc auth-provider has no config client-id (client-go's oidc plugin refuses it: Must provide "
        "client-id)"]),
    "oidc without config": (lambda c: (user(c).pop("token"), user(c).update({"auth-provider": {"name": "oidc"}})), [
        K + "user's oidc auth-provider has no config idp-issuer-url (client-go's oidc plugin refuses it: Must "
        "provide idp-issuer-url)",
        K + "user's oidc auth-provider has no config client-id (client-go's oidc plugin refuses it: Must provide "
        "client-id)"]),
})
