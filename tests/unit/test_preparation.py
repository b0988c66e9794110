"""A document is prepared (validated and planned) once per process (infra/deploy/deployment.py
`prepare`): the later calls of one run get the same frozen objects, what validation tells apart
is never confused, and a refusal is never kept."""

from __future__ import annotations

import copy

import pytest

from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.deploy.deployment import _frozen
from tests.support.stacks import doc_topology


def test_an_accepted_document_is_prepared_once(monkeypatch):
    calls = []
    parse = deployment.validation.parse
    monkeypatch.setattr(deployment.validation, "parse", lambda d, s: calls.append(s) or parse(d, s))
    first = deployment.prepare(doc_topology(), "a.yaml")
    again = deployment.prepare(copy.deepcopy(doc_topology()), "the component")
    assert again is first and calls == ["a.yaml"]


def test_a_changed_document_is_prepared_anew():
    t = doc_topology()
    first = deployment.prepare(t, "a.yaml")
    t["flows"][0]["topics"] = ["orders"]
    assert deployment.prepare(t, "a.yaml")[1] is not first[1]


def test_a_refusal_is_not_kept_and_names_its_source_each_time():
    t = doc_topology()
    t["flows"][0]["name"] = "BAD"
    for source in ("a.yaml", "b.yaml"):
        with pytest.raises(TopologyError) as exc:
            deployment.prepare(t, source)
        assert "flows[0] (BAD): name: got 'BAD'" in str(exc.value.problems[0])
    assert deployment._PREPARED == {}


@pytest.mark.parametrize("one, other", [
    ({1: "a"}, {"1": "a"}),
    ({"x": True}, {"x": 1}),
    ({"x": 1.0}, {"x": 1}),
    ({"x": 0.0}, {"x": -0.0}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"x": [1]}, {"x": (1,)}),
    ({"x": None}, {"x": "null"}),
])
def test_what_validation_tells_apart_is_kept_apart(one, other):
    assert _frozen(one) != _frozen(other)


@pytest.mark.parametrize("document", [{"x": float("nan")}, {"x": {1, 2}}, {"x": [bytearray(b"a")]}])
def test_documents_that_cannot_be_keyed_are_prepared_every_time(document):
    assert _frozen(document) is None


def test_a_document_nested_too_deep_is_prepared_every_time():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert _frozen({"x": deep}) is None
