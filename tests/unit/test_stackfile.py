"""The changes the failover and failback commands write into a user's topology file
(infra/tools/stackfile.py): on the lines they concern alone, every other line as the user wrote
it, each checked to parse to the document with that one change; a layout they cannot change on
its own lines refused with what to write by hand."""

from __future__ import annotations

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.tools import stackfile
from tests.support.stacks import ROOT
from tests.unit.test_failover_command import STOPPED_LINE, TOPOLOGY


# ----------------------------------------------------------------- the change, on the user's lines


def test_the_flow_is_stopped_on_one_line_added_after_its_last_and_nothing_else_moves():
    lines = TOPOLOGY.splitlines(keepends=True)
    at = lines.index("    failover: {procedure: cutoff}\n") + 1
    assert stackfile.stopped_text(TOPOLOGY, 0) == "".join(lines[:at] + [STOPPED_LINE] + lines[at:])


def test_states_already_written_are_rewritten_where_they_are_their_comments_kept():
    text = """\
flows:
  - source: a   # the west
    target: b
    topics: [x]
    state:
      source: running
      # paused for the migration
      checkpoint: paused
    sources:
      - name: one
        topics: [y]
        state: running  # its own
  - {source: b, target: a, topics: [z]}
"""
    assert stackfile.stopped_text(text, 0) == """\
flows:
  - source: a   # the west
    target: b
    topics: [x]
    state: {source: stopped, checkpoint: stopped, heartbeat: stopped}
      # paused for the migration
    sources:
      - name: one
        topics: [y]
        state: stopped  # its own
  - {source: b, target: a, topics: [z]}
"""


def test_a_flow_in_flow_style_is_refused_with_what_to_write_by_hand():
    text = "flows:\n  - {source: a, target: b, topics: [x]}\n"
    with pytest.raises(TopologyError) as refused:
        stackfile.stopped_text(text, 0)
    assert [str(p) for p in refused.value.problems] == [
        "flows[0]: (layout): missing; expected a flow written in block style, which the command changes on its "
        "own lines; set `state: {source: stopped, checkpoint: stopped, heartbeat: stopped}` there by hand "
        "(docs/operations.md#the-failover-command)"]


@pytest.mark.parametrize("stack,index", [("dev", 0), ("prod", 0), ("prod", 1), ("prod", 3), ("regions", 1)])
def test_every_flow_of_the_shipped_stacks_is_stopped_by_one_added_line(stack, index):
    text = (ROOT / "stacks" / f"{stack}.yaml").read_text()
    new = stackfile.stopped_text(text, index)
    old_lines, new_lines = text.splitlines(), new.splitlines()
    assert len(new_lines) == len(old_lines) + 1
    added = [i for i, line in enumerate(new_lines) if i >= len(old_lines) or line != old_lines[i]][0]
    assert new_lines[:added] + new_lines[added + 1:] == old_lines
    assert new_lines[added].strip() == STOPPED_LINE.strip()
    expected = yaml.safe_load(text)
    expected["flows"][index]["state"] = dict(stackfile.STOPPED)
    assert yaml.safe_load(new) == expected


def test_a_flow_is_added_after_the_last_one_above_the_comments_that_lead_on():
    entry = {"source": "b", "target": "a", "topics": ["orders.*"], "failover": {"procedure": "cutoff"}}
    lines = TOPOLOGY.splitlines(keepends=True)
    at = lines.index("    failover: {procedure: cutoff}\n") + 1
    assert stackfile.replaced_text(TOPOLOGY, None, entry) == "".join(lines[:at] + [
        "  - source: b\n", "    target: a\n", "    topics: [orders.*]\n", "    failover: {procedure: cutoff}\n"]
        + lines[at:])


def test_a_flow_is_replaced_in_its_place_the_comments_above_it_kept():
    text = "flows:\n  # west to east\n  - source: a\n    target: b\n    topics: [x]\n  - source: c\n    target: d\n" \
           "    topics: [y]\n"
    entry = {"source": "b", "target": "a", "topics": ["x"], "state": {"source": "stopped"},
             "offsets": [{"connector": "repl-b-a-source", "action": "alter", "request": "failback",
                          "offsets": [{"topic": "x", "partition": 0, "offset": 9}]}]}
    assert stackfile.replaced_text(text, 0, entry) == """\
flows:
  # west to east
  - source: b
    target: a
    topics: [x]
    state: {source: stopped}
    offsets:
    - connector: repl-b-a-source
      action: alter
      request: failback
      offsets:
      - {topic: x, partition: 0, offset: 9}
  - source: c
    target: d
    topics: [y]
"""


def test_keys_are_set_where_they_are_and_removed_with_their_values():
    text = stackfile.replaced_text("flows:\n  - source: a\n    target: b\n    topics: [x]\n", 0, {
        "source": "b", "target": "a", "topics": ["x"], "state": {"source": "stopped"},
        "offsets": [{"connector": "c", "action": "alter", "request": "failback", "offsets": []}]})
    assert stackfile.set_keys(text, 0, {"state": {"source": "running"}}, removed=("offsets",)) == (
        "flows:\n  - source: b\n    target: a\n    topics: [x]\n    state: {source: running}\n")
    assert stackfile.set_keys("flows:\n  - source: a\n    target: b\n", 0, {"startFrom": "latest"}) == (
        "flows:\n  - source: a\n    target: b\n    startFrom: latest\n")
    with pytest.raises(TopologyError) as refused:
        stackfile.set_keys("flows:\n  - {source: a, target: b}\n", 0, {"startFrom": "latest"})
    assert [str(p) for p in refused.value.problems] == [
        "flows[0]: (layout): missing; expected a flow written in block style, which the command changes on its "
        "own lines; make the change by hand (docs/operations.md#the-failover-command)"]


def test_a_file_ruamel_cannot_place_is_refused_not_a_traceback():
    text = "flows:\n  - &one\n    source: a\n    target: b\n    source: c\n"  # a key twice
    with pytest.raises(TopologyError) as refused:
        stackfile.stopped_text(text, 0)
    assert [str(p) for p in refused.value.problems] == [
        "flows: (layout): got 'DuplicateKeyError'; expected a file whose flows the command can place line by line; "
        "make the change by hand (docs/operations.md#the-failover-command)"]
