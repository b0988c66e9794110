"""Random topologies: each is either planned with every invariant holding, or rejected with
messages — never an unhandled exception; every Strimzi object planned validates against its
release's CRDs (generated with Java: the conformance tier). Runs on the pure plan (no Pulumi) to
stay fast."""

from __future__ import annotations

import jsonschema
from hypothesis import HealthCheck, given, settings, strategies as st

from infra.topology.schema import DNS1123_LABEL
from tests.support.references import plan_random
from tests.support.schemas import crd_schema, release_of, unknown_fields
from tests.support.stacks import RELEASES, sometimes

VALID_SECURITY = st.one_of(
    st.just({}),
    st.builds(lambda trust, mtls: {"protocol": "SSL", "tls": {"trust": trust, "clientCertificate": mtls}},
              st.sampled_from(["pem", "jks", "pkcs12"]), st.booleans()),
    st.builds(lambda proto, mech: {"protocol": proto, "sasl": {"mechanism": mech, "username": "u"}},
              st.sampled_from(["SASL_PLAINTEXT", "SASL_SSL"]), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])),
    # Every credential from the team's Secrets (docs/topology.md#secrets-by-reference).
    st.builds(lambda mtls: {"protocol": "SSL", "tls": {"clientCertificate": mtls, "secret": {"secretName": "team-tls"}}},
              st.booleans()),
    st.just({"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u",
                                             "passwordSecret": {"secretName": "team-pw", "key": "password"}},
             "tls": {"secret": {"secretName": "team-tls", "ca": "ca.pem"}}}),
    # A source's truststore file from the team's Secret, mounted (refused for a target).
    st.builds(lambda trust, mtls: {"protocol": "SSL", "tls": {"trust": trust, "clientCertificate": mtls,
                                                               "secret": {"secretName": "team-tls", "version": "v1"}}},
              st.sampled_from(["jks", "pkcs12"]), st.booleans()),
)
INVALID_SECURITY = st.sampled_from([{"protocol": "SASL_SSL"}, {"protocol": "PLAINTEXT", "tls": {"trust": "pem"}},
                                    {"protocol": "SSL", "tls": {"trust": "jks", "secret": {"secretName": "team-tls",
                                                                                          "ca": "ca.pem"}}}])


@st.composite
def topologies(draw):
    aliases = draw(st.lists(sometimes(st.sampled_from(["a", "b", "us-west", "eu-1", "dr"]),
                                      st.sampled_from(["Bad_Alias", "x" * 35])),
                            min_size=2, max_size=4, unique=True))
    clusters = {a: {"bootstrapServers": draw(sometimes(st.sampled_from(["k:9092", "k1:9093,k2:9093"]),
                                                       st.just("no-port"))),
                    "security": draw(sometimes(VALID_SECURITY, INVALID_SECURITY))} for a in aliases}
    flows = []
    for _ in range(draw(st.integers(1, 3))):
        source, target = draw(st.permutations(aliases))[:2]
        flow = {"source": source, "target": draw(sometimes(st.just(target), st.sampled_from([source, "nowhere"]))),
                "topics": draw(sometimes(st.sampled_from([["t.*"], "orders", ["a", "b.*"]]), st.just(["a("])))}
        flow.update(draw(st.fixed_dictionaries({}, optional={
            "name": sometimes(st.sampled_from(["f1", "f2", "f3"]), st.just("Bad Name")),
            "replicationPolicy": sometimes(st.sampled_from(["default", "identity"]), st.just("other")),
            "heartbeats": st.booleans(), "checkpoints": st.booleans(),
            "topicsExclude": st.just(["t.skip"]),
            "tasksMax": st.fixed_dictionaries({"source": sometimes(st.integers(1, 8), st.just(0))}),
            "config": st.fixed_dictionaries({"source": st.dictionaries(
                sometimes(st.sampled_from(["offset.lag.max", "producer.override.linger.ms"]),
                          st.sampled_from(["topics", "ssl.key.password"])), st.integers(0, 9), max_size=2)}),
        })))
        flows.append(flow)
    return {"operator": dict(zip(("flavour", "version"), draw(st.sampled_from(RELEASES)))), "clusters": clusters, "flows": flows}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies())
def test_random_topologies_plan_cleanly_or_fail_with_messages(data):
    planned = plan_random(data)
    if planned is None:
        return
    topo, stack = planned
    objects = list(stack.objects)
    names = [o["metadata"]["name"] for o in objects]
    assert all(DNS1123_LABEL.match(n) or set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789-.") for n in names)
    for o in objects:
        if o["apiVersion"].startswith("kafka.strimzi.io/"):
            schema = crd_schema(release_of(data), o["kind"])
            jsonschema.validate(o, schema)
            assert unknown_fields(o, schema) == []
    # Every secret config key the plan needs belongs to a cluster of the topology or the registry.
    for key in stack.secret_keys():
        assert key.split(".")[0] in topo.clusters or key == "registry.password"
