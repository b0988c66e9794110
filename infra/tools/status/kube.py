"""What `kafka-replication status` reads from each Kubernetes cluster, with the user's kubeconfig,
through the official client (contexts, certificates, tokens and exec credential plugins as
kubectl handles them): the stack's KafkaConnects and KafkaConnectors by name, and the audit's
CronJob with the Jobs it owns. GETs only; each has a deadline and no retry, and a cluster that
did not answer once is not asked again, so an unreachable one ends the command in seconds."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from infra.core import names, reading
from infra.tools.status.assess import JSON, Read, Unreadable

# Per request: the socket's timeout (a mute server is a ReadTimeoutError at SECONDS), and one second
# more on the wall clock (what a timeout per socket operation cannot end: a server dripping a byte
# at a time); and for loading a kubeconfig (an exec plugin's run), on the wall clock.
SECONDS = 10
COMMAND_SECONDS = 60  # every request of one command: what is not asked by then is said not asked
# What a request header can carry: a credential with a line break (a YAML `token: |` block keeps
# its last one) or a character outside ASCII (a paste gone wrong) fails every request, and
# Python's http.client names the value when it refuses it.
HEADER_VALUE = re.compile(r"[\x20-\x7e]*")
T = TypeVar("T")
TOKEN_KEY = "BearerToken"  # where the client keeps "Bearer <token>" (kubernetes 37.0.2, kube_config.py `_set_config`)
BEARER = re.compile(r"(?i)\b(Bearer|Basic)\s+\S+")
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


class _Late(Exception):
    """A call that did not return within its deadline."""


def within(seconds: float, call: Callable[[], T]) -> T:
    """`call()` on the wall clock: a server answering a byte every few seconds resets a socket's
    timeout at each byte, and an exec plugin or OIDC issuer that never answers has none. The call
    runs in a daemon thread, left behind when late (the command ends without waiting for it)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread as it is
            box["error"] = exc
    worker = threading.Thread(target=run, daemon=True, name="kafka-replication status")
    worker.start()
    worker.join(max(seconds, 0))
    if worker.is_alive():
        raise _Late(f"no answer within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def shown(server: str) -> str:
    """The server's URL as it may be printed: a `user:password@` in it is dropped."""
    try:
        parts = urlsplit(server)
    except ValueError:
        return "the kubeconfig's server"
    if parts.username is None and parts.password is None:
        return server
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class Deadline:
    """One command's budget for all its requests (COMMAND_SECONDS), shared by its readers."""

    def __init__(self, seconds: float = COMMAND_SECONDS):
        self.seconds, self.end = seconds, time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def _refuse_refresh(provider: Any) -> None:
    # The client's OIDC refresh asks the issuer without verifying its certificate when the
    # kubeconfig gives no idp CA (kubernetes 37.0.2, kube_config.py `_refresh_oidc`: verify_ssl
    # False), sending the refresh token and client secret, and with no deadline: status reads,
    # it does not refresh credentials.
    raise KubeconfigError("its user's oidc id-token has expired: refresh it first (any kubectl command does), "
                          "status does not")


class Reader:
    """One Kubernetes cluster, as one context of a kubeconfig sees it."""

    def __init__(self, kubeconfig: Path | None, context: str | None, api_version: str,
                 deadline: Deadline | None = None):
        import urllib3
        import yaml
        from kubernetes import client
        from kubernetes.config import kube_config
        from kubernetes.config.config_exception import ConfigException
        configuration = client.Configuration()
        self.deadline = deadline or Deadline()
        if kubeconfig is not None:
            # Read (bounded) and shaped before the client sees it: it answers a file that is not a
            # kubeconfig with its own internals' errors.
            loaded = reading.load_yaml_file(kubeconfig, "kubeconfig")
            if not isinstance(loaded, dict) or not isinstance(loaded.get("contexts", []), list):
                raise KubeconfigError("not a kubeconfig (a YAML mapping with clusters, contexts and users)")
        captured, root = _Captured(), logging.getLogger()
        root.addHandler(captured)
        where = ("" if kubeconfig else "the default ($KUBECONFIG, else ~/.kube/config): ") + \
            (f"context {context}: " if context else "")

        def load() -> None:
            # load_kube_config's own steps, with the user's auth-provider checked in between.
            loader = kube_config._get_kube_config_loader(  # type: ignore[no-untyped-call]
                filename=str(kubeconfig) if kubeconfig else kube_config.KUBE_CONFIG_DEFAULT_LOCATION,
                active_context=context, persist_config=False)
            provider = loader._user.safe_get("auth-provider") if loader._user is not None else None
            name = provider["name"] if provider is not None and "name" in provider else None
            if provider is not None and name != "oidc":
                raise KubeconfigError(f"its user's auth-provider {name!r} is not oidc (client-go "
                                      "removed the gcp and azure providers: use their exec plugins, e.g. "
                                      "gke-gcloud-auth-plugin or kubelogin)")
            loader._refresh_oidc = _refuse_refresh
            loader.load_and_set(configuration)
        try:
            within(SECONDS, load)
        except KubeconfigError as exc:
            raise KubeconfigError(where + str(exc)) from None
        except _Late:
            raise KubeconfigError(where + f"loading it (its exec plugin or auth-provider) took over {SECONDS} s") \
                from None
        except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError,
                urllib3.exceptions.HTTPError) as exc:
            raise KubeconfigError(where + _first(exc)) from None
        finally:
            root.removeHandler(captured)
        credentials = configuration.api_key.get(TOKEN_KEY) or configuration.cert_file or \
            configuration.username
        if captured.lines and not credentials:
            # An exec credential plugin that failed leaves the client without credentials.
            raise KubeconfigError("its user has no credentials: " + "; ".join(captured.lines))
        token = configuration.api_key.get(TOKEN_KEY) or ""
        basic = f"{configuration.username or ''}:{configuration.password or ''}"
        if not HEADER_VALUE.fullmatch(token) or not HEADER_VALUE.fullmatch(basic):
            raise KubeconfigError(where + "its user's token or password (or what its exec plugin or auth-provider "
                                  "gave) holds a line break, another control character or a character outside ASCII: "
                                  "no request can carry it (a YAML `token: |` block keeps its last line break: write "
                                  "`token: VALUE` or `token: |-`)")
        if configuration.cert_file and configuration.key_file:
            import ssl
            try:  # else every request fails in the TLS handshake, which reads as a server that did not answer
                ssl.create_default_context().load_cert_chain(configuration.cert_file, configuration.key_file)
            except (ssl.SSLError, OSError, ValueError):
                raise KubeconfigError(where + "its user's client key does not match its client certificate (or "
                                      "one of them is not PEM)") from None
        # Nothing the kubeconfig authenticates with is ever printed: error texts are cleaned of it.
        url = urlsplit(configuration.host)
        self.secrets = sorted({s for s in (token, token.partition(" ")[2], configuration.password, url.password,
                                           url.username if url.password else None) if s and len(s) >= 4},
                              key=len, reverse=True)
        configuration.retries = 0
        self.server = shown(configuration.host)
        self.api = client.ApiClient(configuration)
        self.group, _, self.version = api_version.partition("/")
        self.silent: Unreadable | None = None  # set once the server did not answer

    def _get(self, path: str, what: str, query: dict[str, str] | None = None) -> Read:
        import urllib3
        if self.silent is not None:
            return Unreadable(f"{what}: not asked ({self.silent})")
        left = self.deadline.left()
        if left <= 0:
            return Unreadable(f"{what}: not asked (the command's {self.deadline.seconds:.0f} s deadline passed)")

        def request() -> Any:
            method, url, headers, _, _ = self.api.param_serialize(
                "GET", path + (f"?{urlencode(query)}" if query else ""), header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, _request_timeout=SECONDS)
            response.read()  # type: ignore[no-untyped-call]
            return response
        try:
            response = within(min(SECONDS + 1, left), request)
            data = response.data or b""
        except (urllib3.exceptions.HTTPError, OSError, _Late) as exc:
            cause = getattr(exc, "reason", None) or exc  # retries=0: MaxRetryError wraps the connection's error
            said = _first(cause)[:300] if isinstance(cause, _Late) else f"{type(cause).__name__}: {_first(cause)[:300]}"
            self.silent = Unreadable(self.clean(f"{self.server} did not answer: {said}"))
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
            return Unreadable(self.clean(f"{what}: HTTP {response.status}: {message or response.reason}"))
        return body if isinstance(body, dict) else Unreadable(f"{what}: the answer is not a JSON object")

    def clean(self, text: str) -> str:
        """`text` without any credential of the kubeconfig in it (an error may quote a URL or header)."""
        for secret in self.secrets:
            text = text.replace(secret, "[secret]")
        return BEARER.sub(r"\1 [secret]", text)  # one an exec plugin gave since, too

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
