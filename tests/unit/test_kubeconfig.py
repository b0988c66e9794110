"""A kubeconfig in secret config is checked before anything deploys (infra/deploy/kubeconfig.py).

Two parts: the exact reason for each rule, offline; and, in the API-server tier, kubectl v1.37.2
(client-go of that release, built with the server by tools/engine/build.sh) as the oracle.
Against a real API server it must reach the server with every kubeconfig we accept and fail with
every one we refuse for a runtime reason; for the rules where we are deliberately stricter, it is
shown to accept the kubeconfig, so each such rule is a choice of ours and says why.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.deploy import kubeconfig
from infra.core import names
from infra.tools import render
from infra.core.errors import TopologyError
from tests.support.stacks import ROOT, render_topology
from tests.support.material import material
from tests.support.kubeconfigs import valid
from tests.support.kubeconfigs import K, RULES, _mutate, b64, broken, check, cluster, exec_plugin, user


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


@pytest.mark.parametrize("case", sorted(RULES))
def test_each_rule_refuses_with_its_reason(case):
    assert check(valid()) == []
    assert check(broken(case, valid())) == RULES[case][1]


def test_usable_kubeconfigs_pass():
    assert check(valid()) == []
    cert = _mutate(valid(), lambda c: (user(c).pop("token"), user(c).update({
        "client-certificate-data": b64(material("kube").client_cert_pem),
        "client-key-data": b64(material("kube").client_key_pem)})))
    assert check(cert) == []
    assert check(_mutate(valid(), lambda c: (user(c).pop("token"), user(c).update(exec=exec_plugin("x"))))) == []
    assert check(_mutate(valid(), lambda c: (user(c).pop("token"), user(c).update({"auth-provider": oidc()})))) == []
    # Every typed field at its type, null for any (Go's zero value), a date-like string as YAML leaves it.
    typed = _mutate(valid(), lambda c: (
        c.update(preferences={"colors": True, "extensions": [{"name": "e", "extension": {"any": [1]}}]}),
        cluster(c).update({"disable-compression": False, "insecure-skip-tls-verify": False, "tls-server-name": None,
                           "extensions": [{"name": "e", "extension": None}]}),
        user(c).update({"as": "admin", "as-groups": ["g", None], "as-user-extra": {"scopes": ["view"]},
                        "as-uid": None, "extensions": None}),
        user(c).update(exec={**exec_plugin("x"), "env": [{"name": "A", "value": None}], "provideClusterInfo": True,
                             "installHint": None}),
        user(c).pop("token"), c["contexts"][0]["context"].update(namespace=None)))
    assert check(typed) == []
    assert check(yaml.safe_dump(valid()) + "preferences: {colors: null}\n") == []
    # JSON is YAML, and client-go reads either.
    assert check(json.dumps(valid())) == []


def test_the_topology_context_picks_one_of_its_contexts():
    config = _mutate(valid(), lambda c: c.pop("current-context"))
    assert check(config, "admin@c") == []
    assert check(config, "ops@c") == ["a kubeconfig without the context 'ops@c' named by the topology"]


def test_every_problem_at_once_and_no_value_shown():
    config = _mutate(valid(token="s3cr3t-t0ken"), lambda c: (
        cluster(c).update(server="http://s3cr3t-host", foo=1), user(c).update(username="u", password="s3cr3t")))
    found = check(config)
    assert found == [
        "a kubeconfig with an unknown field in its cluster: foo (client-go ignores it silently)",
        K + "cluster's server is not an https:// URL (the credential would cross the network in clear)",
        K + "user has both a token and username/password (client-go allows one)"]
    assert "s3cr3t" not in " ".join(found)


def test_hostile_documents_are_bounded():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    assert check(bomb) == ["YAML that cannot be read safely"]
    assert check("[" * 100 + "]" * 100) == ["YAML that cannot be read safely"]
    assert check("x" * (2 << 20)) == [f"larger than {1 << 20} bytes"]
    many = _mutate(valid(), lambda c: c.update(users=[{"name": f"u{i}", "user": {}} for i in range(1001)]))
    assert "a kubeconfig with more than 1000 users" in check(many)


# ------------------------------------------------------------------ in the stack


REGIONS_KEY = names.kubeconfig_key("k8s-eu-central")


def test_a_missing_kubeconfig_is_reported_not_crashed():
    with pytest.raises(TopologyError) as exc:
        render.run("regions", secrets={}, placeholder_secrets=False)
    assert ("  - kubernetes.k8s-eu-central: secret config kafka-replication:kubernetes.k8s-eu-central.kubeconfig: "
            "missing; expected the kubeconfig of Kubernetes cluster k8s-eu-central (its contents): pulumi config set "
            "--secret kafka-replication:kubernetes.k8s-eu-central.kubeconfig ...") in exc.value.report().splitlines()


def test_an_unusable_kubeconfig_stops_the_deployment():
    with pytest.raises(TopologyError) as exc:
        render.run("regions", secrets={REGIONS_KEY: yaml.safe_dump(broken("no server", valid()))},
                   placeholder_secrets=True)
    assert exc.value.report().splitlines()[1:] == [
        "  - kubernetes.k8s-eu-central: secret config kafka-replication:kubernetes.k8s-eu-central.kubeconfig: got "
        "the secret value (not shown); expected the kubeconfig of Kubernetes cluster k8s-eu-central (its contents); "
        "this is a kubeconfig whose cluster has no server"]


def test_a_plain_kubeconfig_is_refused():
    with pytest.raises(TopologyError) as exc:
        render.run("regions", config={REGIONS_KEY: yaml.safe_dump(valid())}, placeholder_secrets=True)
    assert exc.value.report().splitlines()[1:] == [
        "  - kubernetes.k8s-eu-central: secret config kafka-replication:kubernetes.k8s-eu-central.kubeconfig: got "
        "'a plain (not secret) value'; expected a secret: pulumi config rm "
        "kafka-replication:kubernetes.k8s-eu-central.kubeconfig, then pulumi config set --secret "
        "kafka-replication:kubernetes.k8s-eu-central.kubeconfig ..."]


# ------------------------------------------------------------------ kubectl as the oracle


# ------------------------------------------------------------------ any input


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=20)
# Every struct of client-go's v1 types, where the base kubeconfig below holds one.
WAYS = {"config": [], "preferences": ["preferences"], "named-cluster": ["clusters", 0],
        "named-context": ["contexts", 0], "named-user": ["users", 0], "cluster": ["clusters", 0, "cluster"],
        "context": ["contexts", 0, "context"], "user": ["users", 0, "user"],
        "auth-provider": ["users", 0, "user", "auth-provider"], "exec": ["users", 0, "user", "exec"],
        "env": ["users", 0, "user", "exec", "env", 0], "extension": ["clusters", 0, "cluster", "extensions", 0]}
PLACES = [(kind, field) for kind in sorted(WAYS) for field in sorted(kubeconfig.STRUCTS[kind])]
assert {kind for kind, _ in PLACES} == set(kubeconfig.STRUCTS)


def every_struct() -> dict:
    return _mutate(valid(), lambda c: (
        c.update(preferences={"colors": False}),
        cluster(c).update(extensions=[{"name": "e", "extension": {}}]),
        user(c).update({"auth-provider": oidc(), "exec": {**exec_plugin("x"), "env": [{"name": "A", "value": "b"}]}})))


def _path(way: list) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in way).lstrip(".")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PLACES), JSON), min_size=1, max_size=5))
def test_any_value_in_any_field_gets_reasons_not_a_crash(changes):
    config = every_struct()
    placed = None
    for (where, field), value in changes:
        target = config
        for step in WAYS[where]:  # an earlier change may have replaced the way there
            target = target[step] if isinstance(target, (dict, list)) and _has(target, step) else None
        placed = None
        if isinstance(target, dict):
            target[field] = value
            placed = (where, field, value)
    found = check(config)
    assert all(isinstance(p, str) and p for p in found)
    if placed:  # the last change stands: a value client-go cannot decode there is named with its type
        where, field, value = placed
        spec = kubeconfig.STRUCTS[where][field]
        if isinstance(spec, kubeconfig.Leaf) and value is not None and not spec.accepts(value):
            path = _path([*WAYS[where], field])
            assert undecodable(path, spec.description, spec.go) in found or len(found) > kubeconfig.MAX_UNDECODABLE


def _has(container, step) -> bool:
    return step in container if isinstance(container, dict) else isinstance(step, int) and step < len(container)


def test_a_kubeconfig_given_as_an_output_is_checked_when_it_resolves():
    """Through the component (ESC or another program hands an Output): checked when it resolves,
    in a process of its own as `pulumi up` runs a program (see test_components)."""
    script = f"""
import sys, pulumi, yaml
from components import ReplicationTopology
from infra.deploy import deployment
from infra.core import reading
from infra.tools import render
from infra.core.errors import TopologyError
document = reading.load_yaml_file("stacks/regions.yaml", "topology file")
keys = deployment.secret_keys(*deployment.prepare(document, "regions"))
secrets = {{key: render.placeholder(key) for key in keys}}
secrets[{REGIONS_KEY!r}] = pulumi.Output.secret({yaml.safe_dump(broken("http", valid()))!r})
try:
    render.under_mocks(lambda: ReplicationTopology("t", {{"topology": document, "secrets": secrets}}).outputs,
                       render.RecordingMocks(), "p", "s", {{}}, [])
except TopologyError as exc:
    print(exc.report())
    sys.exit(2)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=render.stack_config.ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "the secret arguments has 1 problem(s):",
        "  - kubernetes.k8s-eu-central: secret config kafka-replication:kubernetes.k8s-eu-central.kubeconfig: got "
        "the secret value (not shown); expected the kubeconfig of Kubernetes cluster k8s-eu-central (its contents); "
        "this is a kubeconfig whose cluster's server is not an https:// URL (the credential would cross the network "
        "in clear)"]


def test_a_topology_context_in_a_secret_kubeconfig_reaches_the_provider(tmp_path):
    topology = yaml.safe_load((ROOT / "stacks" / "regions.yaml").read_text())
    topology["kubernetes"]["k8s-eu-central"]["context"] = "eu-admin"
    # The offline render's placeholder kubeconfig defines that context, so the render passes the check.
    rendered = render_topology(tmp_path, topology, secrets={})
    (provider,) = [r for r in rendered.resources if r.name == names.provider_name("k8s-eu-central")]
    assert provider.inputs["context"] == "eu-admin"
    assert check(yaml.safe_load(provider.inputs["kubeconfig"]), "eu-admin") == []
    assert "kubeconfig" in provider.secret_paths
