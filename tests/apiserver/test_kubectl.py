"""Kubeconfig checks held against kubectl (client-go): where it decides we agree, and where we are
stricter kubectl would go on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from infra.tools.rehearsal.apiserver import State, kubectl_binary
from tests.support.kubeconfigs import _mutate, b64, broken, check, cluster, exec_plugin, user, valid
from tests.support.material import material
from tests.support.stacks import APISERVER_COUNTS as COUNTS, unavailable


def kubectl(config: dict | str, context: str | None, home: Path) -> tuple[bool, str]:
    """Whether kubectl (client-go) loads the kubeconfig and lists namespaces as the admin."""
    binary = kubectl_binary()
    if binary is None:
        unavailable("no kubectl: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    path = home / "kubeconfig"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    argv = [str(binary), "--kubeconfig", str(path), *(["--context", context] if context else []),
            "get", "--raw", "/api/v1/namespaces", "--request-timeout=10s"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={"HOME": str(home), "PATH": os.environ.get("PATH", "")})
    return done.returncode == 0, done.stderr.strip()[-300:]


def served(state: State) -> dict:
    return valid(server=state.url, token=state.token, ca=Path(state.ca_file).read_text())


def with_certificate(state: State) -> dict:
    return _mutate(served(state), lambda c: (user(c).pop("token"), user(c).update({
        "client-certificate-data": b64(Path(state.client_cert).read_text()),
        "client-key-data": b64(Path(state.client_key).read_text())})))


# Cases where client-go decides: we accept exactly what kubectl can use. Each builds a kubeconfig
# from the server's state; the context is the topology's (None: current-context).
RUNTIME = {
    "token": (served, None, True),
    "client certificate": (with_certificate, None, True),
    "exec plugin (v1beta1)": (lambda s: _mutate(served(s), lambda c: (user(c).pop("token"), user(c).update(
        exec=exec_plugin(s.token)))), None, True),
    "the topology's context": (lambda s: _mutate(served(s), lambda c: c.update({"current-context": "other"})),
                               "admin@c", True),
    **{case: ((lambda s, case=case: broken(case, served(s))), None, False) for case in (
        "no current-context", "current-context undefined", "context's cluster undefined", "context's user undefined",
        "no server", "no credential", "basic", "token and basic", "certificate without key", "CA not base64",
        "exec without command", "not YAML", "apiVersion v2", "empty", "two contexts of one name",
        # client-go cannot decode the file, or sends a header Go refuses, or its oidc plugin refuses.
        "insecure as a string", "exec args as a string", "exec env as a mapping", "preferences colors as a string",
        "a user no context names", "as-user-extra of strings", "token with a line break",
        # Go's http.Client sends the URL's user as basic auth, which the server does not take:
        # kubectl is anonymous and refused.
        "a password in the server's URL",
        "impersonated user with a line break", "oidc without idp-issuer-url", "oidc without client-id",
        # client-go refuses the removed exec v1alpha1 and gcp auth-provider, and an exec v1 without
        # interactiveMode; an interactiveMode it cannot decode fails the load.
        "exec v1alpha1", "gcp auth-provider", "exec v1 without interactiveMode", "exec interactiveMode as a bool")},
    # client-go refuses an interactive plugin when standard input is not a terminal: kubectl's is
    # not here, nor is the provider's.
    "exec interactive": (lambda s: _mutate(served(s), lambda c: (user(c).pop("token"), user(c).update(
        exec={**exec_plugin(s.token), "interactiveMode": "Always"}))), None, False),
    # client-go ignores the misspelt field, then cannot verify the server.
    "a misspelt field": (lambda s: _mutate(served(s), lambda c: cluster(c).update({
        "certificate-authority-date": cluster(c).pop("certificate-authority-data")})), None, False),
    "key of another certificate": (lambda s: _mutate(with_certificate(s), lambda c: user(c).update({
        "client-key-data": b64(material("other").client_key_pem)})), None, False),
}


# Where we are stricter than client-go on purpose: kubectl uses these, we refuse them (reasons
# in RULES). The files named exist, so only our rule stands in the way.
STRICTER = {
    "insecure": lambda s, d: _mutate(served(s), lambda c: (cluster(c).pop("certificate-authority-data"),
                                                         cluster(c).update({"insecure-skip-tls-verify": True}))),
    "CA file": lambda s, d: _mutate(served(s), lambda c: (cluster(c).pop("certificate-authority-data"),
                                                        cluster(c).update({"certificate-authority": s.ca_file}))),
    "token file": lambda s, d: _mutate(served(s), lambda c: (
        (d / "token").write_text(s.token), user(c).pop("token"), user(c).update(tokenFile=str(d / "token")))),
    "an unknown field": lambda s, d: _mutate(served(s), lambda c: cluster(c).update(colour="blue")),
}


@pytest.mark.apiserver
def test_kubectl_agrees_where_client_go_decides(apiserver, tmp_path):
    disagreements = []
    for case, (build, context, usable) in sorted(RUNTIME.items()):
        config = build(apiserver.state)
        ours = check(config, context)
        theirs, why = kubectl(config, context, tmp_path)
        assert (ours == []) == usable, (case, ours)
        if theirs != usable:
            disagreements.append(f"{case}: kubectl {'used' if theirs else 'refused'} it ({why})")
        COUNTS["kubeconfigs judged by kubectl"] += 1
    assert disagreements == []


@pytest.mark.apiserver
def test_where_we_are_stricter_kubectl_would_go_on(apiserver, tmp_path):
    for case, build in sorted(STRICTER.items()):
        config = build(apiserver.state, tmp_path)
        assert check(config) != [], case
        theirs, why = kubectl(config, None, tmp_path)
        assert theirs, f"{case}: kubectl refused it too ({why}): not a choice of ours"
        COUNTS["kubeconfigs judged by kubectl"] += 1
