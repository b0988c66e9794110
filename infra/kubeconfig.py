"""A kubeconfig given in secret config (`kubernetes.<name>.kubeconfig: secretConfig`), checked
before anything deploys: what the Kubernetes provider's client-go would refuse, and what it would
accept only to fail, or to send a credential unprotected, later.

Why before: pulumi-kubernetes hands its `kubeconfig` argument to client-go (provider/pkg/provider/
util.go, `parseKubeconfigString`: a path when a file of that name exists, else the contents, then
`clientcmd.Load`) and builds its client from the `context` argument or the current-context
(`clientcmd.NewDefaultClientConfig(...).ClientConfig()`, which runs `ConfirmUsable` of
client-go's tools/clientcmd/validation.go, read at 32ce75a7). A kubeconfig that fails there does
not fail `pulumi preview`: the provider marks the cluster unreachable and previews without it
(provider.go, `unreachableCluster`), so a broken secret would pass review and fail `pulumi up`.

What client-go refuses (validation.go, exec.go, helpers.go, api/v1/conversion.go): two entries
of one name in a section; no usable context; a context whose
cluster has no server; a proxy-url that is not http, https or socks5; a client certificate
without its key, or a key that does not match it; a token together with username/password; an
exec plugin without command or apiVersion, with an apiVersion other than
client.authentication.k8s.io/v1 or v1beta1, or (v1) without interactiveMode; exec together with
auth-provider; the removed gcp and azure auth-providers; impersonation details without `as`.

Stricter than client-go, each for the reason its message gives: the contents, never a path; no
file references (certificate-authority, client-certificate, client-key, tokenFile) — both name
files on whichever machine runs `pulumi up`, which Pulumi ESC cannot supply; https with TLS
verified; a credential on the user (client-go would go on anonymously); no basic authentication
(API servers dropped it in 1.19); no interactive exec plugin (the provider has no terminal); no
unknown field in an entry it reads (client-go ignores one silently, so a misspelt
`certificate-authority-data` would be lost).

Messages name fields and the topology's own names, never a value of the kubeconfig. The tests
hold these rules to kubectl v1.20.2 (client-go of that release) against a real API server.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

from infra import reading, stores
from infra.errors import TopologyError

MAX_ENTRIES = 1000  # clusters, contexts or users: a kubeconfig of a few clusters has a handful
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
SELF_CONTAINED = ("a file on the machine running pulumi up, which Pulumi ESC cannot supply: put the content "
                  "in {data} instead")
# The fields of client-go's tools/clientcmd/api/v1/types.go, per entry.
FIELDS = {
    "config": {"kind", "apiVersion", "preferences", "clusters", "users", "contexts", "current-context",
               "extensions"},
    "cluster": {"server", "tls-server-name", "insecure-skip-tls-verify", "certificate-authority",
                "certificate-authority-data", "proxy-url", "disable-compression", "extensions"},
    "user": {"client-certificate", "client-certificate-data", "client-key", "client-key-data", "token",
             "tokenFile", "as", "as-uid", "as-groups", "as-user-extra", "username", "password", "auth-provider",
             "exec", "extensions"},
    "context": {"cluster", "user", "namespace", "extensions"},
    "exec": {"command", "args", "env", "apiVersion", "installHint", "provideClusterInfo", "interactiveMode"},
}
SECTIONS = {"clusters": "cluster", "contexts": "context", "users": "user"}


def problems(text: str, context: str | None) -> list[str]:
    """What is wrong with `text` as the kubeconfig of one Kubernetes cluster, each as a phrase
    that completes "this is ..."; empty when the provider can use it. `context` is the
    topology's `kubernetes.<name>.context`, which picks a context of this kubeconfig."""
    if not text.strip():
        return ["empty"]
    if len(text.encode()) > reading.MAX_BYTES:
        return [f"larger than {reading.MAX_BYTES} bytes"]
    try:
        document = reading.load_yaml(text, "kubeconfig")
    except TopologyError as exc:
        where = sorted({p.field for p in exc.problems if p.field.startswith("line ")})
        return [f"YAML that cannot be read safely{' (' + ', '.join(where) + ')' if where else ''}"]
    if isinstance(document, str) and "\n" not in document.strip():
        return ["one line of text, not the contents of a kubeconfig: a path would be read on whichever machine "
                "runs pulumi up; set the contents: pulumi config set --secret KEY \"$(cat FILE)\""]
    if not isinstance(document, dict):
        return ["not a kubeconfig (a YAML mapping with clusters, contexts and users)"]
    found: list[str] = []
    found += _unknown(document, "config", "the kubeconfig")
    if document.get("apiVersion", "v1") != "v1":
        found.append("a kubeconfig whose apiVersion is not v1")
    if document.get("kind", "Config") != "Config":
        found.append("a kubeconfig whose kind is not Config")
    entries = {section: _entries(document, section, found) for section in SECTIONS}
    chosen = context or document.get("current-context")
    if not isinstance(chosen, str) or not chosen:
        found.append("a kubeconfig without current-context, and the topology names no context of it "
                     "(kubernetes.<name>.context)")
    elif chosen not in entries["contexts"]:
        found.append(f"a kubeconfig without the context {chosen!r} named by the topology" if context else
                     "a kubeconfig whose current-context names no context it defines")
    else:
        body = entries["contexts"][chosen]
        found += _unknown(body, "context", "its context")
        # Names are strings; anything else names nothing (and cannot be looked up).
        cluster, user = (value if isinstance(value, str) else None for value in (body.get("cluster"), body.get("user")))
        if cluster not in entries["clusters"]:
            found.append("a kubeconfig whose context names a cluster it does not define")
        else:
            found += _cluster(entries["clusters"][cluster])
        if user not in entries["users"]:
            found.append("a kubeconfig whose context names a user it does not define (client-go would connect "
                         "anonymously)")
        else:
            found += _user(entries["users"][user])
    return found


def _entries(document: dict[str, Any], section: str, found: list[str]) -> dict[str, dict[str, Any]]:
    """A section's entries by name, each `{name: ..., <cluster|context|user>: {...}}`."""
    value = document.get(section) or []
    kind = SECTIONS[section]
    if not isinstance(value, list):
        found.append(f"a kubeconfig whose {section} is not a list")
        return {}
    if len(value) > MAX_ENTRIES:
        found.append(f"a kubeconfig with more than {MAX_ENTRIES} {section}")
        return {}
    out: dict[str, dict[str, Any]] = {}
    for entry in value:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(kind), dict)):
            found.append(f"a kubeconfig with an entry of {section} that is not {{name: ..., {kind}: {{...}}}}")
            continue
        if set(entry) - {"name", kind}:
            found.append(f"a kubeconfig with an unknown field in an entry of {section}: "
                         f"{', '.join(sorted(map(str, set(entry) - {'name', kind})))}")
        if entry["name"] in out:
            found.append(f"a kubeconfig that defines two {section} of the same name (client-go refuses it)")
        out[entry["name"]] = entry[kind]
    return out


def _unknown(body: dict[str, Any], kind: str, what: str) -> list[str]:
    unknown = sorted(map(str, set(body) - FIELDS[kind]))
    return [f"a kubeconfig with an unknown field in {what}: {', '.join(unknown)} (client-go ignores it silently)"
            ] if unknown else []


def _text(body: dict[str, Any], field: str, what: str, found: list[str]) -> str:
    value = body.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        found.append(f"a kubeconfig whose {what} {field} is not a string")
        return ""
    return value


def _data(body: dict[str, Any], field: str, what: str, found: list[str]) -> str | None:
    """A `*-data` field: base64 (as Go's JSON decoding of []byte reads it) of PEM text."""
    value = _text(body, field, what, found)
    if not value:
        return None
    try:
        return base64.b64decode("".join(value.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        found.append(f"a kubeconfig whose {what} {field} is not base64 of PEM text")
        return None


def _cluster(body: dict[str, Any]) -> list[str]:
    found = _unknown(body, "cluster", "its cluster")
    server = _text(body, "server", "cluster's", found)
    if not server:
        found.append("a kubeconfig whose cluster has no server")
    else:
        parts = urlsplit(server)
        if parts.scheme != "https" or not parts.hostname:
            found.append("a kubeconfig whose cluster's server is not an https:// URL (the credential would "
                         "cross the network in clear)")
    if body.get("insecure-skip-tls-verify") is True:
        found.append("a kubeconfig with insecure-skip-tls-verify: true (the credential would go to a server "
                     "nobody verified)")
    if body.get("certificate-authority"):
        found.append("a kubeconfig whose cluster's certificate-authority names "
                     + SELF_CONTAINED.format(data="certificate-authority-data"))
    ca = _data(body, "certificate-authority-data", "cluster's", found)
    if ca is not None:
        try:
            stores.parse_certificates(ca)  # at least one, each X.509
        except stores.StoreError as exc:
            found.append(f"a kubeconfig whose certificate-authority-data is unusable: {exc}")
    proxy = _text(body, "proxy-url", "cluster's", found)
    if proxy and urlsplit(proxy).scheme not in ("http", "https", "socks5"):
        found.append("a kubeconfig whose cluster's proxy-url is not http, https or socks5 (client-go refuses it)")
    return found


def _user(body: dict[str, Any]) -> list[str]:
    found = _unknown(body, "user", "its user")
    for field, data in (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data"),
                        ("tokenFile", "token")):
        if body.get(field):
            found.append(f"a kubeconfig whose user's {field} names " + SELF_CONTAINED.format(data=data))
    token = _text(body, "token", "user's", found)
    basic = _text(body, "username", "user's", found) or _text(body, "password", "user's", found)
    if token and basic:
        found.append("a kubeconfig whose user has both a token and username/password (client-go allows one)")
    elif basic:
        found.append("a kubeconfig whose user authenticates with username/password, which Kubernetes API servers "
                     "no longer accept (basic authentication was removed in 1.19)")
    credentials = bool(token) or any(body.get(f) for f in ("client-certificate", "tokenFile"))
    credentials |= _client_certificate(body, found)
    if body.get("exec") is not None:
        credentials = True
        found += _exec(body["exec"], body.get("auth-provider") is not None)
    if body.get("auth-provider") is not None:
        credentials = True
        provider = body["auth-provider"]
        name = provider.get("name") if isinstance(provider, dict) else None
        if name != "oidc":
            found.append("a kubeconfig whose user's auth-provider is not oidc (client-go removed the gcp and azure "
                         "providers: use their exec plugins, e.g. gke-gcloud-auth-plugin or kubelogin)")
    if not credentials and not basic:
        found.append("a kubeconfig whose user has no credential (no token, client certificate, exec plugin or "
                     "auth-provider): client-go would connect anonymously")
    if not body.get("as") and any(body.get(f) for f in ("as-uid", "as-groups", "as-user-extra")):
        found.append("a kubeconfig whose user asks for impersonated groups, uid or extras without as "
                     "(client-go refuses it)")
    return found


def _client_certificate(body: dict[str, Any], found: list[str]) -> bool:
    """The client certificate and key: both or neither, and the key the certificate's."""
    cert = _data(body, "client-certificate-data", "user's", found)
    key = _data(body, "client-key-data", "user's", found)
    if cert is None and key is None:
        return False
    if cert is None or key is None:
        found.append("a kubeconfig whose user has client-"
                     + ("key-data without client-certificate-data" if cert is None else
                        "certificate-data without client-key-data") + " (client-go needs both)")
        return True
    try:
        first = x509.load_der_x509_certificate(stores.parse_certificates(cert)[0])
    except (stores.StoreError, IndexError):
        found.append("a kubeconfig whose user's client-certificate-data holds no PEM certificate")
        return True
    try:
        private = load_pem_private_key(key.encode(), password=None)
    except (ValueError, TypeError):
        found.append("a kubeconfig whose user's client-key-data is not an unencrypted PEM private key")
        return True
    spki = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if private.public_key().public_bytes(*spki) != first.public_key().public_bytes(*spki):
        found.append("a kubeconfig whose user's client key does not match its client certificate "
                     "(client-go refuses the pair)")
    return True


def _exec(plugin: Any, with_auth_provider: bool) -> list[str]:
    if not isinstance(plugin, dict):
        return ["a kubeconfig whose user's exec is not a mapping"]
    found = _unknown(plugin, "exec", "its user's exec")
    if with_auth_provider:
        found.append("a kubeconfig whose user has both exec and auth-provider (client-go allows one)")
    if not plugin.get("command"):
        found.append("a kubeconfig whose user's exec plugin has no command")
    version = plugin.get("apiVersion")
    if version not in EXEC_API_VERSIONS:
        found.append("a kubeconfig whose user's exec plugin has an apiVersion other than "
                     + " or ".join(EXEC_API_VERSIONS))
    mode = plugin.get("interactiveMode")
    if mode is None and version == EXEC_API_VERSIONS[0]:
        found.append("a kubeconfig whose user's exec plugin (v1) has no interactiveMode: set Never")
    elif mode is not None and mode not in INTERACTIVE_MODES:
        found.append("a kubeconfig whose user's exec plugin has an interactiveMode other than "
                     + ", ".join(INTERACTIVE_MODES))
    elif mode == "Always":
        found.append("a kubeconfig whose user's exec plugin is interactive (interactiveMode: Always): the "
                     "provider has no terminal; set Never")
    env = plugin.get("env") or []
    if not isinstance(env, list) or not all(isinstance(e, dict) and e.get("name") for e in env):
        found.append("a kubeconfig whose user's exec env has an entry without a name")
    return found
