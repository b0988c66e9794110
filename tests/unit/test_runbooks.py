"""Every command docs/operations.md gives users is held by the tests, and the ledger says how
(tests/support/runbooks.py): a command added without saying what runs it fails here."""

from __future__ import annotations

import ast
from collections import Counter

from tests.support import runbooks
from tests.support.stacks import ROOT


def test_every_command_of_the_runbooks_is_in_the_ledger():
    found = runbooks.ledger(runbooks.OPERATIONS.read_text())
    assert len(found) > 50
    unheld = [f"line {c.line} ({' > '.join(c.headings) or 'intro'}): {c.text}" for c, entry in found if entry is None]
    assert unheld == []


def test_every_ledger_entry_holds_a_command():
    found = runbooks.commands(runbooks.OPERATIONS.read_text())
    used = {key for c in found for key, entry in runbooks.LEDGER.items()
            if key[1] and c.text.startswith(key[1]) and key[0] in ("Operating replication", *c.headings)}
    assert set(runbooks.LEDGER) - used == set()


def test_what_runs_a_command_exists():
    """A RUN, PARSED or RETYPED entry that names a test function names one that is there."""
    for status, by in runbooks.LEDGER.values():
        for ref in [w.rstrip(",;:)") for w in by.split() if "::" in w]:
            path, name = ref.split("::")
            tree = ast.parse((ROOT / path).read_text())
            assert name in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, ref


def test_the_ledger_refuses_a_command_it_does_not_know():
    doc = "# Title\n\n## Pause, resume and drift\n\n```sh\nkubectl -n x delete kafkaconnect y\n```\n"
    (command,) = runbooks.commands(doc)
    assert command.headings == ("Pause, resume and drift",) and runbooks.held(command) is None


def test_the_parser_joins_continuations_and_skips_comments():
    doc = "# T\n\n## A\n\n### B\n\n```sh\n# a comment\nkubectl get x \\\n  -o json   # trailing\n\nmake y\n```\n"
    assert [(c.headings, c.line, c.text) for c in runbooks.commands(doc)] == [
        (("A", "B"), 7, "kubectl get x -o json   # trailing"), (("A", "B"), 7, "make y")]


def test_how_the_commands_are_held():
    """How many commands each way: a command moved from retyped to run as written changes it."""
    counts = Counter(entry[0] for _, entry in runbooks.ledger(runbooks.OPERATIONS.read_text()) if entry)
    print(dict(counts))
    assert counts == {runbooks.RUN: 54, runbooks.SUITE: 4, runbooks.NEVER: 3}


def test_the_ca_rotation_s_up_lines_are_held_by_the_ca_rotation_s_test():
    """The same `pulumi up --stack dev` line in two blocks: the CA rotation's ledger entry, named
    by its block's first command, holds its two."""
    entries = [entry for c, entry in runbooks.ledger(runbooks.OPERATIONS.read_text())
               if c.text.startswith("pulumi up --stack dev") and c.headings == ("Credential rotation",)]
    assert [e[1].split()[0] for e in entries if e] == [
        "tests/engine/test_day_two_runbook.py::test_a_rotated_source_password_restarts_exactly_the_connectors_that_read_it",
        "tests/engine/test_day_two_runbook.py::test_the_ca_rotation_s_lines_run_as_written;",
        "tests/engine/test_day_two_runbook.py::test_the_ca_rotation_s_lines_run_as_written;"]


def test_every_pulumi_config_set_gives_one_value_after_the_double_dash():
    """Pulumi reads everything after `--` as arguments: a flag written after the value is one
    more (`accepts at most 2 arg(s), received 4`, which docs/operations.md once had)."""
    import shlex
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in doc.read_text().splitlines():
            if line.strip().startswith("pulumi config set") and " -- " in line:
                argv = shlex.split(line, comments=True)
                assert len(argv) == argv.index("--") + 2, f"{doc.name}: {line}"
