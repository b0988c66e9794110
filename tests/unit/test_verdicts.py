"""One verdict: `validate` refuses exactly what `render` (and so `pulumi preview`, which runs the
same checks) refuses on the topology itself, with the same problems.

The documents are every topology the suite has handed the validation pipeline before this
module runs (tests/support/stacks.py records them; it is the last module of the suite), plus the
stacks and documented examples, so that a check added to one path and not the other is caught
on the topologies the other tests were written for. Render fills secret config with
placeholders: what is left to refuse is the topology's alone.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from infra.__main__ import main
from infra.core import reading
from tests.support.stacks import DOC_TOPOLOGY, DOCUMENTS_SEEN, ROOT, doc_topology
from tests.support.verdicts import verdicts, verdicts_of

FILES = sorted([*ROOT.glob("stacks/*.yaml"), *ROOT.glob("docs/examples/**/*.yaml")])


def test_validate_and_render_agree_on_every_topology_of_the_suite(tmp_path):
    documents = list(DOCUMENTS_SEEN.values())
    documents += [d for d in (reading.load_yaml_file(f, "topology file") for f in FILES) if isinstance(d, dict)]
    documents.append(DOC_TOPOLOGY)
    disagree, refused = [], 0
    for i, (v, r) in enumerate(verdicts_of(tmp_path, documents)):
        refused += v is not None
        if v != r:
            disagree.append((i, json.dumps(documents[i])[:300], v, r))
    assert not disagree, disagree
    # Both outcomes were exercised (the whole suite records hundreds of documents).
    assert len(documents) > 3 and (refused > 0 or len(documents) == len(FILES) + 1)


def image_pull_secret_named(name: str) -> dict:
    t = doc_topology()
    t["operator"]["imagePullSecret"]["name"] = name
    return t


def test_validate_refuses_what_only_the_plan_can_see(tmp_path):
    """An image-pull Secret named like a flow's Secret: a name collision only the plan sees."""
    t = image_pull_secret_named("source-us-west")
    expected = ["namespace repl-us-west-us-east: Secret name: got 'source-us-west'; expected a name of its own: the "
                "program also writes Secret 'source-us-west' there (repl-us-west-us-east)"]
    assert verdicts(tmp_path, t) == (expected, expected)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert main(["validate", str(path)]) == 2
    assert err.getvalue() == f"error: the topology has 1 problem(s):\n  - {expected[0]}\n"


@pytest.mark.parametrize("where, change, expected", [
    ("flow name", lambda t: t["flows"][0].update(name="orders\n"),
     "line 36: flows[0] (orders\\n): name: got 'orders\\n'; expected lowercase letters, digits and '-' "
     "(DNS-1123), at most 40 characters"),
    ("alias", lambda t: t["clusters"].update({"us-east\n": t["clusters"].pop("us-east")}) or
     t["flows"][0].update(target="us-east\n"),
     "line 20: clusters.us-east\\n: alias: got 'us-east\\n'; expected lowercase letters, digits and '-' (DNS-1123), "
     "at most 30 characters"),
])
def test_a_final_line_break_is_not_a_name(tmp_path, where, change, expected):
    """`$` matches before a final line break; names are matched whole, and shown escaped."""
    t = doc_topology()
    change(t)
    v, r = verdicts(tmp_path, t)
    assert v == r and v is not None and v[0] == expected, (where, v)
