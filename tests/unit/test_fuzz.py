"""Fuzzing the front door: generated YAML documents and mutated topologies through the same
`validate` command users run. Every one must end with exit 0 (valid) or 2 (refused, with a
message), never a traceback or an internal error (3), and within a time bound."""

from __future__ import annotations

import copy
import io
import random
from contextlib import redirect_stderr, redirect_stdout

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from infra.__main__ import main
from tests.support import jregex_gen
from tests.support.stacks import doc_topology

FUZZ = settings(max_examples=400, deadline=10_000, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def validate(tmp_path, text: str | bytes) -> tuple[int, str]:
    path = tmp_path / "topology.yaml"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["validate", str(path)])
    return code, err.getvalue()


def assert_clean(code: int, err: str, what) -> None:
    assert code in (0, 2), (code, err, what)
    assert "Traceback" not in err and not err.startswith("internal error"), (err, what)
    if code == 2:
        assert err.startswith("error: "), err


# YAML's own characters, so that generated documents reach every corner of the parser.
YAML_TEXT = st.lists(st.sampled_from(list("ab01:-[]{},&*!|>'\"#%@` \n\t?.~") + ["no", "yes", "---", "clusters",
                                                                              "flows", "&a ", "*a", "<<: "]),
                     max_size=80).map("".join)


@FUZZ
@given(text=YAML_TEXT)
def test_any_yaml_text_is_answered_cleanly(tmp_path_factory, text):
    code, err = validate(tmp_path_factory.mktemp("y"), text)
    assert_clean(code, err, text)


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes_are_answered_cleanly(tmp_path_factory, data):
    code, err = validate(tmp_path_factory.mktemp("b"), data)
    assert_clean(code, err, data)


LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
                   st.sampled_from(["${file:/etc/passwd:x}", "../../x", "a:09093", "0.0.0.0:1", "1e30", "no", "",
                                    "(a|b)*a(a|b){15}", "[[o]]rders", "\\0157rders", "(?=x)", "orders\\..*", ".*"]),
                   st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                                              max_size=2))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


@FUZZ
@given(seed=st.integers(min_value=0, max_value=2**32), values=st.lists(LEAVES, min_size=1, max_size=4),
       drop=st.booleans())
def test_mutated_topologies_are_answered_cleanly(tmp_path_factory, seed, values, drop):
    rng = random.Random(seed)
    topology = doc_topology()
    topology["flows"].append({"source": "us-east", "target": "us-west", "topics": ["orders.*"],
                              "replicationPolicy": "identity"})
    for value in values:
        path = rng.choice([p for p in _paths(topology) if p])
        parent = topology
        for step in path[:-1]:
            parent = parent[step]
        if drop and isinstance(parent, dict):
            parent.pop(path[-1])
        else:
            parent[path[-1]] = copy.deepcopy(value)
    code, err = validate(tmp_path_factory.mktemp("t"), yaml.safe_dump(topology))
    assert_clean(code, err, topology)


@FUZZ
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_random_java_filters_across_flows_are_answered_cleanly(tmp_path_factory, seed):
    rng = random.Random(seed)
    topology = doc_topology()
    topology["clusters"]["eu"] = {"bootstrapServers": "eu.kafka:9093"}
    topology["flows"] = [
        {"source": s, "target": t, "topics": [jregex_gen.pattern(rng) for _ in range(rng.randint(1, 3))],
         "replicationPolicy": rng.choice(["identity", "default"]), "name": f"f{i}"}
        for i, (s, t) in enumerate([("us-west", "us-east"), ("us-east", "eu"), ("eu", "us-west"), ("us-east", "us-west")])]
    code, err = validate(tmp_path_factory.mktemp("j"), yaml.safe_dump(topology))
    assert_clean(code, err, topology["flows"])


# The components' arguments: random types, None, unknown and misspelt keys, sets, bytes, tuples
# and Outputs anywhere in them, through the components' constructors under Pulumi's mocks.
OUTPUT = object()  # stands for an Output, made under the engine
SECRET_TEXT = "S3CRET-never-shown"
ARG_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), st.binary(max_size=4),
                       st.just(OUTPUT), st.sampled_from(["operater", "secret", "flows", "clusters"]),
                       st.frozensets(st.integers(), max_size=2), st.tuples(st.text(max_size=3)))
ARG_VALUES = st.recursive(ARG_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=3)),
    max_leaves=8)
ARG_KEYS = st.one_of(st.sampled_from(["topology", "clusters", "flow", "secrets"]),
                    st.sampled_from(["operator", "operater", "secret", "flows", "Topology", "cluster",
                                     "us-west.password", "us-west.pasword", "x"]))
PLAIN_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                         st.sampled_from(["us-west", "us-east", "orders.*", "strimzi", "SSL", "identity"]))


def _with_outputs(value):
    import pulumi
    if value is OUTPUT:
        return pulumi.Output.from_input("orders")
    if isinstance(value, dict):
        return {k: _with_outputs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_outputs(v) for v in value]
    return value


@settings(FUZZ, max_examples=300)
@given(seed=st.integers(min_value=0, max_value=2**32), topology=st.booleans(),
       changes=st.lists(st.tuples(ARG_KEYS, st.one_of(PLAIN_LEAVES, ARG_VALUES), st.integers(0, 3)), max_size=3),
       whole=st.one_of(st.none(), ARG_VALUES), use_whole=st.integers(0, 4))
def test_component_arguments_are_answered_with_one_clear_error(seed, topology, changes, whole, use_whole):
    """Whatever the arguments, the components accept them or raise TopologyError; never an
    AttributeError, TypeError or KeyError, and secret values never appear in the message."""
    from hypothesis import event

    from components import ReplicationFlow, ReplicationTopology
    from infra.core.errors import TopologyError
    from infra.tools.render import RecordingMocks, under_mocks
    from tests.support.components import flow_args
    from tests.support.stacks import SECRETS

    rng = random.Random(seed)
    secrets = {**SECRETS, "us-west.password": SECRET_TEXT} if topology else {
        **flow_args()["secrets"], "us-west.password": SECRET_TEXT}
    args = {"topology": doc_topology(), "secrets": secrets} if topology else {**flow_args(), "secrets": secrets}
    for key, value, nested in changes:
        if nested != 3 and key in args and isinstance(args[key], dict):
            # Somewhere inside the argument: a random path of the mapping, replaced or added.
            path = rng.choice(list(_paths(args[key])))
            parent = args[key]
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, dict):
                parent[path[-1] if path else key] = copy.deepcopy(value)
            elif isinstance(parent, list) and path:
                parent[path[-1]] = copy.deepcopy(value)
        else:
            args[key] = copy.deepcopy(value)
    component = ReplicationTopology if topology else ReplicationFlow

    def make():
        return component("fuzz", _with_outputs(whole if use_whole == 4 else args)).urn
    try:
        under_mocks(make, RecordingMocks(), "kafka-replication", "fuzz", {}, [])
        event("accepted")
    except TopologyError as exc:
        report = exc.report()
        assert report.startswith(f"{component.__name__} fuzz has ") and SECRET_TEXT not in report, report
        event("refused: its arguments" if all(p.where == "args" for p in exc.problems) else "refused: its topology")
