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
from hypothesis import given, settings, strategies as st

from infra.core import names
from infra.core.errors import TopologyError
from infra.deploy import kubeconfig
from infra.tools import render
from tests.support.kubeconfigs import (RULES, K, _mutate, b64, broken, check, cluster, exec_plugin, oidc, undecodable,
                                       user, valid)
from tests.support.material import material
from tests.support.stacks import ROOT, render_topology


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
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
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
