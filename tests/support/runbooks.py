"""The commands docs/operations.md gives users, as the tests read them: every line of every `sh`
block (backslash continuations joined, comments and blank lines left out), under its headings.

LEDGER says, for each, how the tests hold it, so that a command added to the document without a
test that runs it fails tests/unit/test_runbooks.py until someone says what runs it:
- RUN: a test extracts the line from the document and runs it as written (the test named);
- PARSED: a test reads the line from the document and runs what it says through a stand-in
  (the runtime tier's operator for `pulumi up`, the command inside a pipeline);
- RETYPED: a test runs the same action written out again (the test named): to be moved to RUN;
- SUITE: a command of the test suite itself, run by `make test`;
- NEVER: it cannot run on this machine (why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.support.stacks import ROOT

OPERATIONS = ROOT / "docs" / "operations.md"


@dataclass(frozen=True)
class Command:
    headings: tuple[str, ...]  # the ##, ### ... headings above it (the document's title left out)
    line: int                  # of the block's opening fence
    text: str                  # the command, as a shell reads it


def commands(text: str) -> list[Command]:
    found: list[Command] = []
    headings: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        heading = re.match(r"^(#+) (.*)", lines[i])
        if heading:
            depth = len(heading.group(1))
            headings = headings[:depth - 1] + [heading.group(2)]
        if lines[i].strip() == "```sh":
            opening, pending = i + 1, ""
            i += 1
            while lines[i].strip() != "```":
                stripped = lines[i].strip()
                if stripped.endswith("\\"):
                    pending += stripped[:-1].rstrip() + " "
                else:
                    pending += stripped
                    if pending and not pending.startswith("#"):
                        found.append(Command(tuple(headings[1:]), opening, pending))
                    pending = ""
                i += 1
        i += 1
    return found


TITLE = "Operating replication"  # the document's title: the section of the commands above its first heading


def _under(command: Command, section: str) -> bool:
    """Whether `command` is right under the heading `section` (TITLE: above every heading)."""
    return command.headings[-1:] == (section,) or (section == TITLE and not command.headings)


def block(section: str, first: str) -> list[str]:
    """The commands of the `sh` block under `section` (a heading's text, or TITLE) whose first
    command starts with `first`, as written."""
    chosen = [c for c in commands(OPERATIONS.read_text()) if _under(c, section)]
    openings = [c.line for c in chosen if c.text.startswith(first)]
    assert openings, f"docs/operations.md, {section}: no sh block starting with {first!r}"
    return [c.text for c in chosen if c.line == openings[0]]


def line(section: str, first: str) -> str:
    """The one command under the heading `section` that starts with `first`, as written."""
    found = [c.text for c in commands(OPERATIONS.read_text()) if _under(c, section) and c.text.startswith(first)]
    assert len(found) == 1, f"docs/operations.md, {section}: {len(found)} commands starting with {first!r}"
    return found[0]


RUN, PARSED, RETYPED, SUITE, NEVER = "run as written", "parsed", "retyped", "suite", "never here"
_DRIFT = "tests/engine/test_day_two_runbook.py::test_state_and_replicas_changed_by_hand_are_seen_with_refresh_and_put_back"
_SCALE = "tests/engine/test_day_two_runbook.py::test_connect_replicas_scaled_as_the_runbook_says"
_UPGRADE = "tests/engine/test_upgrade_runbook.py::test_strimzi_0_48_to_1_2_through_the_bridge_release_updates_the_same_objects"
_CA = "tests/runtime/test_pause_and_scale.py::test_client_certificates_and_trust_rotated_on_the_brokers_and_in_the_stack"
_CA_LINES = ("tests/engine/test_day_two_runbook.py::test_the_ca_rotation_s_lines_run_as_written; what the brokers make of each "
             f"step: {_CA}, each `pulumi up` through the operator stand-in")
_ROTATE = "tests/engine/test_day_two_runbook.py::test_a_rotated_source_password_restarts_exactly_the_connectors_that_read_it"
_RULES = "tests/conformance/test_runbook_commands.py::test_checking_the_rules_yourself_runs_as_written"
_BOARD = "tests/conformance/test_runbook_commands.py::test_the_dashboard_export_runs_as_written"
_NO_POD = "no kubelet here: the API server cannot reach a pod"
_OPENING = "tests/engine/test_day_two_runbook.py::test_the_opening_lines_and_the_readiness_job_run_as_written"
_READY = ("tests/runtime/test_runtime_failover.py::test_failover_readiness_on_real_kafka, in the audit's pod "
          "(tests/support/replication.py in_audit_pod: its files at the CronJob's paths)")
_REPLAY = "tests/engine/test_day_two_runbook.py::test_the_replay_steps_run_as_written"
_OFFSETS = ("tests/runtime/test_runtime_offsets.py::test_list_alter_and_reset_on_the_real_worker, after the stand-in "
            "operator carried the request out")
# The port-forward before a curl line never runs here; tests/support/portforward.py opens its port.
_FORWARDED = "(the port-forward before it stood in for: tests/support/portforward.py)"

# (section, how the command starts[, how its block's first command starts]) -> (how it is held,
# by what or why); an entry naming the block comes before one that does not.
LEDGER: dict[tuple[str, ...], tuple[str, str]] = {
    ("Operating replication", "python -m infra validate stacks/dev.yaml && pulumi"): (RUN, _OPENING),
    ("Operating replication", "pulumi stack output flows --json | jq"): (RUN, _OPENING),
    ("Operating replication", "python3 -m spark.audit failover"): (RUN, _READY),
    ("Checking the endpoint", "kubectl -n repl-us-west-us-east get configmap connect-metrics"): (RUN, _SCALE),
    ("Checking the endpoint", "kubectl -n repl-us-west-us-east port-forward"): (NEVER, _NO_POD),
    ("Checking the endpoint", "curl -s localhost:9404/metrics"):
        (RUN, f"tests/runtime/test_replication.py::test_dev_stack_replicates_on_every_release on CSM 1.2 {_FORWARDED}"),
    ("How it is proven", ".venv/bin/python -m pytest -q tests/unit/test_metrics.py"): (SUITE, "make test"),
    ("How it is proven", "SCRAPE_REWRITE=1"): (SUITE, "the scrape files' rewrite"),
    ("How it is proven", "RECORD_ALERTS=1"): (SUITE, "the recordings' rewrite"),
    ("Checking the rules yourself", "make promtool"): (RUN, _RULES),
    ("Checking the rules yourself", "make render STACK=prod"): (RUN, _RULES),
    ("Checking the rules yourself", ".venv/bin/python -c"): (RUN, _RULES),
    ("Checking the rules yourself", "~/.cache/kafka-replication/promtool/usr/bin/promtool check rules"):
        (RUN, _RULES),
    ("Checking the rules yourself", ".venv/bin/python -m pytest tests/conformance/test_alert_rules.py"):
        (SUITE, "make test"),
    ("Dashboard", "make render STACK=dev"): (RUN, _BOARD),
    ("Dashboard", ".venv/bin/python -c"): (RUN, _BOARD),
    ("What on-call sees", "make dashboard-picture"):
        (RUN, "tests/conformance/test_runbook_commands.py::test_the_dashboard_picture_is_drawn_as_written"),
    ("Pause, resume and drift", "kubectl -n repl-us-west-us-east patch kafkaconnector"): (RUN, _DRIFT),
    ("Pause, resume and drift", "kubectl -n repl-us-west-us-east scale kafkaconnect"): (RUN, _DRIFT),
    ("Pause, resume and drift", "pulumi preview --refresh"): (RUN, _DRIFT),
    ("Pause, resume and drift", "pulumi up --refresh"): (RUN, _DRIFT),
    ("Credential rotation", "pulumi config set --secret --stack dev kafka-replication:us-west.password"):
        (RUN, _ROTATE),
    ("Credential rotation", "pulumi preview --stack dev"): (RUN, _ROTATE),
    ("Credential rotation", "pulumi up --stack dev"): (RUN, _ROTATE),
    # The CA rotation's block (the one whose first command sets the client certificate).
    ("Credential rotation", "pulumi up --stack dev", "pulumi config set --secret --stack dev "
     "kafka-replication:us-west.clientCert"): (RUN, _CA_LINES),
    ("Credential rotation", "pulumi config set --secret --stack dev kafka-replication:us-west.clientCert"):
        (RUN, _CA_LINES),
    ("Credential rotation", "pulumi config set --secret --stack dev kafka-replication:us-west.clientKey"):
        (RUN, _CA_LINES),
    ("Credential rotation", "pulumi config set --secret --stack dev kafka-replication:us-west.caCert"):
        (RUN, _CA_LINES),
    ("Scaling a running flow", "python -m infra diff"): (RUN, _SCALE),
    ("Scaling a running flow", "pulumi preview --stack dev"): (RUN, _SCALE),
    ("Scaling a running flow", "pulumi up --stack dev"): (RUN, _SCALE),
    ("Operator upgrades", "kubectl replace -f strimzi-"): (RUN, _UPGRADE),
    ("Operator upgrades", "pulumi preview --stack dev"): (RUN, _UPGRADE),
    ("Operator upgrades", "pulumi up --stack dev"): (RUN, _UPGRADE),
    ("Operator upgrades", "kubectl patch crd"): (RUN, _UPGRADE),
    ("Operator upgrades", "kubectl get kafkaconnect"): (RUN, _UPGRADE),
    ("Operator upgrades", "kubectl get strimzipodsets"): (RUN, _UPGRADE),
    ("Step by step: replay from an offset", "python -m infra validate stacks/dev.yaml"): (RUN, _REPLAY),
    ("Step by step: replay from an offset", "pulumi preview && pulumi up"): (RUN, _REPLAY),
    ("Step by step: replay from an offset", "kubectl -n orders get kafkaconnector"): (RUN, _OFFSETS),
    ("Step by step: replay from an offset", "pulumi up"): (RUN, _REPLAY),
    ("Step by step: replay from an offset", "kubectl -n orders get configmap"): (RUN, _OFFSETS),
    ("What the stack says about each flow", "pulumi stack output flows --json | jq"):
        (RUN, f"{_OPENING} (the same line as the opening block's)"),
    ("Is the flow ready? The readiness check", "python3 -m spark.audit failover"): (RUN, _READY),
    ("Is the flow ready? The readiness check", "kubectl -n replication-audit create job failover-check"):
        (RUN, f"{_OPENING}: the Job created on the server; no kubelet here starts it, and "
              "tests/audit/test_packaging.py::test_the_readiness_job_runs_as_the_runbook_writes_it_in_an_image_"
              "like_environment runs its command"),
    ("Is the flow ready? The readiness check", "kubectl -n replication-audit logs"): (NEVER, _NO_POD),
    ("The failover command", "kafka-replication failover"):
        (RUN, "tests/runtime/test_runtime_failover.py::test_failover_readiness_on_real_kafka, in a project whose "
              f"stack is prod, {_FORWARDED}"),
    ("Controlled failback", "kubectl -n repl-us-east-us-west port-forward"): (NEVER, _NO_POD),
    ("Controlled failback", "curl -fsS -X PATCH"):
        (RUN, "tests/runtime/test_failover_drills.py::failback_identity on CSM 1.2, its body the drill's offsets "
              f"{_FORWARDED}"),
}


def held(command: Command, block_first: str = "") -> tuple[str, str] | None:
    """The ledger's entry for a command (`block_first`: its block's first command): under its
    nearest heading with an entry whose start it has, one naming its block first."""
    for heading in reversed(("Operating replication", *command.headings)):
        found = [(len(key), entry) for key, entry in LEDGER.items()
                 if key[0] == heading and command.text.startswith(key[1])
                 and (len(key) == 2 or block_first.startswith(key[2]))]
        if found:
            return max(found, key=lambda f: f[0])[1]
    return None


def ledger(text: str) -> list[tuple[Command, tuple[str, str] | None]]:
    """Every command of the document with its ledger entry."""
    found = commands(text)
    first = {}
    for c in found:
        first.setdefault(c.line, c.text)
    return [(c, held(c, first[c.line])) for c in found]
