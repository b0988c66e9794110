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
client.authentication.k8s.io/v1 or v1beta1, or (v1) without interactiveMode; an interactive one
(interactiveMode: Always) when standard input is not a terminal, as the provider's is not; exec
together with auth-provider; the removed gcp and azure auth-providers; a user or password in
the server's URL (Go's http.Client sends it as basic authentication in place of the user's
credential: every request anonymous); impersonation details
without `as`; an oidc auth-provider without idp-issuer-url or client-id
(plugin/pkg/client/auth/oidc/oidc.go, `newOIDCAuthProvider`: "Must provide idp-issuer-url").
Before any of that, client-go must decode the whole file into the Go structs of
tools/clientcmd/api/v1/types.go (every entry, used or not):
a value of another JSON type than its field's (`insecure-skip-tls-verify: "true"`, `args:
get-token`) fails the load, so each is named with the type client-go expects. A token or
impersonation value holding a control character such as a line break loads, but Go's net/http
refuses it as a header value, so every request fails.

Stricter than client-go, each for the reason its message gives: the contents, never a path; no
file references (certificate-authority, client-certificate, client-key, tokenFile) — both name
files on whichever machine runs `pulumi up`, which Pulumi ESC cannot supply; https with TLS
verified; a credential on the user (client-go would go on anonymously); no basic authentication
(API servers dropped it in 1.19); no unknown field in an entry it reads (client-go ignores one
silently, so a misspelt `certificate-authority-data` would be lost).

Messages name fields and the topology's own names, never a value of the kubeconfig. The tests
hold these rules to kubectl v1.37.2 (client-go of that release) against a real API server.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import SplitResult, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

from infra.core import names, reading, stores
from infra.core.errors import TopologyError

MAX_ENTRIES = 1000  # clusters, contexts or users: a kubeconfig of a few clusters has a handful
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
SELF_CONTAINED = ("a file on the machine running pulumi up, which Pulumi ESC cannot supply: put the content "
                  "in {data} instead")


def _is_string(value: Any) -> bool:
    # sigs.k8s.io/yaml (go-yaml v2) keeps a timestamp-like scalar a string; PyYAML makes it a date.
    return isinstance(value, (str, datetime.date))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(v is None or _is_string(v) for v in value)


@dataclass(frozen=True)
class Leaf:
    """A Go type JSON decodes from one JSON value; null always decodes (to the zero value)."""
    go: str
    description: str
    accepts: Callable[[Any], bool]


@dataclass(frozen=True)
class Struct:
    name: str  # a key of STRUCTS


@dataclass(frozen=True)
class ListOf:
    item: str  # a key of STRUCTS


STRING = Leaf("string", "a string", _is_string)
BYTES = Leaf("[]byte", "a string (base64)", _is_string)
BOOL = Leaf("bool", "true or false", lambda v: isinstance(v, bool))
STRINGS = Leaf("[]string", "a list of strings", _strings)
STRING_MAP = Leaf("map[string]string", "a mapping of strings to strings",
                  lambda v: isinstance(v, dict) and all(x is None or _is_string(x) for x in v.values()))
STRINGS_MAP = Leaf("map[string][]string", "a mapping of strings to lists of strings",
                   lambda v: isinstance(v, dict) and all(x is None or _strings(x) for x in v.values()))
RAW = Leaf("runtime.RawExtension", "any value", lambda v: True)

# client-go's tools/clientcmd/api/v1/types.go, struct by struct: each field's JSON name and Go
# type (with the Go struct's name, as client-go's decoding error gives it).
GO_NAMES = {"config": "Config", "preferences": "Preferences", "named-cluster": "NamedCluster",
            "named-context": "NamedContext", "named-user": "NamedAuthInfo", "cluster": "Cluster",
            "context": "Context", "user": "AuthInfo", "auth-provider": "AuthProviderConfig", "exec": "ExecConfig",
            "env": "ExecEnvVar", "extension": "NamedExtension"}
STRUCTS: dict[str, dict[str, Leaf | Struct | ListOf]] = {
    "config": {"kind": STRING, "apiVersion": STRING, "preferences": Struct("preferences"),
               "clusters": ListOf("named-cluster"), "users": ListOf("named-user"),
               "contexts": ListOf("named-context"), "current-context": STRING, "extensions": ListOf("extension")},
    "preferences": {"colors": BOOL, "extensions": ListOf("extension")},
    "named-cluster": {"name": STRING, "cluster": Struct("cluster")},
    "named-context": {"name": STRING, "context": Struct("context")},
    "named-user": {"name": STRING, "user": Struct("user")},
    "cluster": {"server": STRING, "tls-server-name": STRING, "insecure-skip-tls-verify": BOOL,
                "certificate-authority": STRING, "certificate-authority-data": BYTES, "proxy-url": STRING,
                "disable-compression": BOOL, "extensions": ListOf("extension")},
    "user": {"client-certificate": STRING, "client-certificate-data": BYTES, "client-key": STRING,
             "client-key-data": BYTES, "token": STRING, "tokenFile": STRING, "as": STRING, "as-uid": STRING,
             "as-groups": STRINGS, "as-user-extra": STRINGS_MAP, "username": STRING, "password": STRING,
             "auth-provider": Struct("auth-provider"), "exec": Struct("exec"), "extensions": ListOf("extension")},
    "context": {"cluster": STRING, "user": STRING, "namespace": STRING, "extensions": ListOf("extension")},
    "auth-provider": {"name": STRING, "config": STRING_MAP},
    "exec": {"command": STRING, "args": STRINGS, "env": ListOf("env"), "apiVersion": STRING, "installHint": STRING,
             "provideClusterInfo": BOOL, "interactiveMode": STRING},
    "env": {"name": STRING, "value": STRING},
    "extension": {"name": STRING, "extension": RAW},
}
# The entries whose unknown fields we refuse (client-go ignores them silently).
FIELDS = {kind: set(STRUCTS[kind]) for kind in ("config", "cluster", "user", "context", "exec")}
# Sent as request headers (Authorization, Impersonate-User, -Uid, -Group, Impersonate-Extra-*):
# Go's net/http refuses a header value with a control character (httpguts.ValidHeaderFieldValue).
HEADER_FIELDS = ("token", "as", "as-uid", "as-groups", "as-user-extra")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# plugin/pkg/client/auth/oidc/oidc.go, newOIDCAuthProvider: refused when empty, in this order.
OIDC_REQUIRED = ("idp-issuer-url", "client-id")
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
        raw = reading.load_yaml(text, "kubeconfig")
    except TopologyError as exc:
        where = sorted({p.field for p in exc.problems if p.field.startswith("line ")})
        return [f"YAML that cannot be read safely{' (' + ', '.join(where) + ')' if where else ''}"]
    if isinstance(raw, str) and "\n" not in raw.strip():
        return ["one line of text, not the contents of a kubeconfig: a path would be read on whichever machine "
                "runs pulumi up; set the contents: pulumi config set --secret KEY \"$(cat FILE)\""]
    if not isinstance(raw, dict):
        return ["not a kubeconfig (a YAML mapping with clusters, contexts and users)"]
    found = _undecodable(raw)
    # The rules below read only values of their Go type (the others are reported above), and
    # do not call a mistyped field missing.
    document, root_dropped = _typed(raw, "config")
    found += _unknown(document, "config", "the kubeconfig")
    if document.get("apiVersion", "v1") != "v1":
        found.append("a kubeconfig whose apiVersion is not v1")
    if document.get("kind", "Config") != "Config":
        found.append("a kubeconfig whose kind is not Config")
    entries = {section: _entries(document, section, found) for section in SECTIONS}
    chosen = context or document.get("current-context")
    if not chosen:
        if "current-context" not in root_dropped:
            found.append("a kubeconfig without current-context, and the topology names no context of it "
                         "(kubernetes.<name>.context)")
    elif "contexts" in root_dropped:
        pass
    elif chosen not in entries["contexts"]:
        found.append(f"a kubeconfig without the context {chosen!r} named by the topology" if context else
                     "a kubeconfig whose current-context names no context it defines")
    elif (chosen_context := entries["contexts"][chosen]) is None:
        pass
    else:
        body, dropped = _typed(chosen_context, "context")
        found += _unknown(body, "context", "its context")
        cluster, user = body.get("cluster"), body.get("user")
        # A name or section client-go cannot decode is reported as such, not as a name not found.
        dropped |= {f for f, section in (("cluster", "clusters"), ("user", "users")) if section in root_dropped}
        if "cluster" in dropped:
            pass
        elif cluster not in entries["clusters"]:
            found.append("a kubeconfig whose context names a cluster it does not define")
        elif (cluster_body := entries["clusters"][cluster]) is not None:
            found += _cluster(*_typed(cluster_body, "cluster"))
        if "user" in dropped:
            pass
        elif user not in entries["users"]:
            found.append("a kubeconfig whose context names a user it does not define (client-go would connect "
                         "anonymously)")
        elif (user_body := entries["users"][user]) is not None:
            found += _user(*_typed(user_body, "user"))
    return found


def api_server(text: str, context: str | None) -> tuple[str, str, int] | None:
    """The API server a usable kubeconfig leads to, as the client connects to it: (scheme, host,
    port), the host in one spelling (names.broker_address's rules: case, a final dot, IP
    addresses however written) and https's default port filled in. None when `problems` finds
    any (they are reported instead)."""
    if problems(text, context):
        return None
    document = reading.load_yaml(text, "kubeconfig")
    contexts = {e["name"]: e["context"] for e in document.get("contexts") or []}
    clusters = {e["name"]: e["cluster"] for e in document.get("clusters") or []}
    chosen = contexts[context or document["current-context"]]
    url = _url(clusters[chosen["cluster"]]["server"])
    if url is None:
        return None
    port = 443 if url.port is None else url.port
    host, _ = names.broker_address(f"{url.hostname or ''}:{port}")
    return url.scheme.lower(), host, port


MAX_UNDECODABLE = 20  # a generated kubeconfig wrong throughout needs no thousand lines to say so


def _undecodable(document: dict[str, Any]) -> list[str]:
    """Every value client-go's decoding into the v1 structs would stop at (clientcmd.Load:
    sigs.k8s.io/yaml to JSON, then a JSON decoder: "cannot unmarshal string into Go struct
    field ... of type bool"), named by its path in the document."""
    found: list[str] = []
    _decode(document, Struct("config"), "", found)
    if len(found) > MAX_UNDECODABLE:
        return found[:MAX_UNDECODABLE] + [f"a kubeconfig with {len(found) - MAX_UNDECODABLE} more values client-go "
                                          "cannot decode"]
    return found


def _decode(value: Any, spec: Leaf | Struct | ListOf, path: str, found: list[str]) -> None:
    if value is None:  # JSON null decodes to the Go zero value, whatever the type
        return
    if isinstance(spec, Leaf):
        if not spec.accepts(value):
            found.append(_undecoded(path, spec.description, spec.go))
    elif isinstance(spec, Struct):
        if not isinstance(value, dict):
            found.append(_undecoded(path, "a mapping", GO_NAMES[spec.name]))
            return
        for field, inner in STRUCTS[spec.name].items():
            if field in value:
                _decode(value[field], inner, f"{path}.{field}" if path else field, found)
    elif not isinstance(value, list):
        found.append(_undecoded(path, "a list of mappings", "[]" + GO_NAMES[spec.item]))
    else:
        for index, item in enumerate(value):
            _decode(item, Struct(spec.item), f"{path}[{index}]", found)


def _undecoded(path: str, description: str, go: str) -> str:
    return f"a kubeconfig whose {path} is not {description} (client-go decodes it as {go} and cannot load the kubeconfig)"


def _typed(body: dict[str, Any], kind: str) -> tuple[dict[str, Any], set[str]]:
    """`body` without its fields of another type than client-go's (reported by _undecodable),
    nested structs likewise, and the dotted paths of the fields left out."""
    kept: dict[str, Any] = {}
    dropped: set[str] = set()
    for field, value in body.items():
        spec = STRUCTS[kind].get(field)
        if spec is None or value is None:
            kept[field] = value
        elif isinstance(spec, Leaf) and not spec.accepts(value) or isinstance(spec, Struct) and not isinstance(
                value, dict) or isinstance(spec, ListOf) and not isinstance(value, list):
            dropped.add(field)
        elif isinstance(spec, Struct):
            kept[field], inner = _typed(value, spec.name)
            dropped |= {f"{field}.{d}" for d in inner}
        else:
            kept[field] = value
    return kept, dropped


def _entries(document: dict[str, Any], section: str, found: list[str]) -> dict[str, dict[str, Any] | None]:
    """A section's entries by name, each `{name: ..., <cluster|context|user>: {...}}`; None for
    an entry client-go cannot decode (reported as such)."""
    value = document.get(section) or []
    kind = SECTIONS[section]
    if len(value) > MAX_ENTRIES:
        found.append(f"a kubeconfig with more than {MAX_ENTRIES} {section}")
        return {}
    out: dict[str, dict[str, Any] | None] = {}
    for entry in value:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(kind), dict)):
            if entry is None or isinstance(entry, dict) and None in (entry.get("name"), entry.get(kind)):
                found.append(f"a kubeconfig with an entry of {section} that is not {{name: ..., {kind}: {{...}}}}")
            elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
                out.setdefault(entry["name"], None)
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


def _text(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    return value if isinstance(value, str) else ""


def _data(body: dict[str, Any], field: str, what: str, found: list[str]) -> str | None:
    """A `*-data` field: base64 (as Go's JSON decoding of []byte reads it) of PEM text."""
    value = _text(body, field)
    if not value:
        return None
    try:
        return base64.b64decode("".join(value.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        found.append(f"a kubeconfig whose {what} {field} is not base64 of PEM text")
        return None


def _url(text: str) -> SplitResult | None:
    """`text` as a URL whose host and port can be read (a bracket left open, a port past 65535
    or not a number are None, as Go's url.Parse refuses them)."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - reading it validates it
    except ValueError:
        return None
    return parts


def _cluster(body: dict[str, Any], dropped: set[str]) -> list[str]:
    found = _unknown(body, "cluster", "its cluster")
    server = _text(body, "server")
    if not server:
        if "server" not in dropped:
            found.append("a kubeconfig whose cluster has no server")
    else:
        parts = _url(server)
        if parts is None:
            found.append("a kubeconfig whose cluster's server is not a URL with a valid host and port (the "
                         "client could never connect)")
        elif parts.scheme != "https" or not parts.hostname:
            found.append("a kubeconfig whose cluster's server is not an https:// URL (the credential would "
                         "cross the network in clear)")
        if parts is not None and (parts.username is not None or parts.password is not None):
            # Go's http.Client sets the URL's user as basic auth before client-go's bearer
            # round-tripper, which then leaves the Authorization header as it is.
            found.append("a kubeconfig whose cluster's server carries a user or password (user:password@host): "
                         "client-go sends it as basic authentication in place of the user's credential (every "
                         "request anonymous), and a URL is shown wherever the server is")
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
    proxy = _text(body, "proxy-url")
    proxy_url = _url(proxy) if proxy else None
    if proxy and proxy_url is None:
        found.append("a kubeconfig whose cluster's proxy-url is not a URL with a valid host and port (the "
                     "client could never connect)")
    elif proxy_url is not None and proxy_url.scheme not in ("http", "https", "socks5"):
        found.append("a kubeconfig whose cluster's proxy-url is not http, https or socks5 (client-go refuses it)")
    return found


CREDENTIALS = ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key-data", "exec",
               "auth-provider")


def _user(body: dict[str, Any], dropped: set[str]) -> list[str]:
    found = _unknown(body, "user", "its user")
    for field, data in (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data"),
                        ("tokenFile", "token")):
        if body.get(field):
            found.append(f"a kubeconfig whose user's {field} names " + SELF_CONTAINED.format(data=data))
    token = _text(body, "token")
    basic = _text(body, "username") or _text(body, "password")
    if token and basic:
        found.append("a kubeconfig whose user has both a token and username/password (client-go allows one)")
    elif basic:
        found.append("a kubeconfig whose user authenticates with username/password, which Kubernetes API servers "
                     "no longer accept (basic authentication was removed in 1.19)")
    found += _header_values(body)
    credentials = bool(token) or any(body.get(f) for f in ("client-certificate", "tokenFile"))
    credentials |= any(f in dropped for f in CREDENTIALS)  # there, though client-go cannot decode it
    credentials |= _client_certificate(body, dropped, found)
    with_auth_provider = body.get("auth-provider") is not None or "auth-provider" in dropped
    if body.get("exec") is not None:
        credentials = True
        found += _exec(body["exec"], with_auth_provider, dropped)
    if body.get("auth-provider") is not None:
        credentials = True
        found += _auth_provider(body["auth-provider"], dropped)
    if not credentials and not basic:
        found.append("a kubeconfig whose user has no credential (no token, client certificate, exec plugin or "
                     "auth-provider): client-go would connect anonymously")
    if not body.get("as") and "as" not in dropped and any(body.get(f) for f in ("as-uid", "as-groups", "as-user-extra")):
        found.append("a kubeconfig whose user asks for impersonated groups, uid or extras without as "
                     "(client-go refuses it)")
    return found


def _header_values(body: dict[str, Any]) -> list[str]:
    found = []
    for field in HEADER_FIELDS:
        value = body.get(field)
        if isinstance(value, dict):
            values = [v for vs in value.values() if isinstance(vs, list) for v in vs]
        else:
            values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and CONTROL.search(v) for v in values):
            found.append(f"a kubeconfig whose user's {field} holds a line break or another control character "
                         "(Go's net/http refuses it in a request header: every request would fail)")
    return found


def _auth_provider(provider: dict[str, Any], dropped: set[str]) -> list[str]:
    if "auth-provider.name" in dropped:
        return []
    if provider.get("name") != "oidc":
        return ["a kubeconfig whose user's auth-provider is not oidc (client-go removed the gcp and azure "
                "providers: use their exec plugins, e.g. gke-gcloud-auth-plugin or kubelogin)"]
    if "auth-provider.config" in dropped:
        return []
    config = provider.get("config") or {}
    return [f"a kubeconfig whose user's oidc auth-provider has no config {key} (client-go's oidc plugin refuses "
            f"it: Must provide {key})" for key in OIDC_REQUIRED if not config.get(key)]


def _client_certificate(body: dict[str, Any], dropped: set[str], found: list[str]) -> bool:
    """The client certificate and key: both or neither, and the key the certificate's."""
    if {"client-certificate-data", "client-key-data"} & dropped:
        return True
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


def _exec(plugin: dict[str, Any], with_auth_provider: bool, dropped: set[str]) -> list[str]:
    found = _unknown(plugin, "exec", "its user's exec")
    if with_auth_provider:
        found.append("a kubeconfig whose user has both exec and auth-provider (client-go allows one)")
    if not plugin.get("command") and "exec.command" not in dropped:
        found.append("a kubeconfig whose user's exec plugin has no command")
    version = plugin.get("apiVersion")
    if version not in EXEC_API_VERSIONS and "exec.apiVersion" not in dropped:
        found.append("a kubeconfig whose user's exec plugin has an apiVersion other than "
                     + " or ".join(EXEC_API_VERSIONS))
    mode = plugin.get("interactiveMode")
    if "exec.interactiveMode" in dropped:
        pass
    elif mode is None and version == EXEC_API_VERSIONS[0]:
        found.append("a kubeconfig whose user's exec plugin (v1) has no interactiveMode: set Never")
    elif mode is not None and mode not in INTERACTIVE_MODES:
        found.append("a kubeconfig whose user's exec plugin has an interactiveMode other than "
                     + ", ".join(INTERACTIVE_MODES))
    elif mode == "Always":
        found.append("a kubeconfig whose user's exec plugin is interactive (interactiveMode: Always): the "
                     "provider has no terminal; set Never")
    if any(e is None or isinstance(e, dict) and e.get("name") in (None, "") for e in plugin.get("env") or []):
        found.append("a kubeconfig whose user's exec env has an entry without a name")
    return found
