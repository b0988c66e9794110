"""Fuzzing the front door: generated YAML documents and mutated topologies through the same
`validate` command users run. Every one must end with exit 0 (valid) or 2 (refused, with a
message), never a traceback or an internal error (3), and within a time bound."""

from __future__ import annotations

import copy
import io
import random
from contextlib import redirect_stderr, redirect_stdout

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.__main__ import main
from tests import jregex_gen
from tests.conftest import doc_topology

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
