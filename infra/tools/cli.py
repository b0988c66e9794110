"""Command line: `kafka-replication` (also `python -m infra`): render, validate, diff, rehearse,
status, failover, failback, init, schema and completion.

Input problems are printed all at once and exit with code 2, without a traceback. An error of
the program itself exits 3 with one line (INFRA_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from infra.core import jsontext
from infra.core.errors import Problem, TopologyError
from contract.release import PACKAGE
from infra.core.names import PROJECT
from infra.tools.status.assess import Health
from infra.tools.status.show import EXIT as STATUS_EXIT

EXIT_OK = 0
EXIT_CHANGES = 1  # diff: something changed; rehearse: not every record arrived
EXIT_INVALID = 2
EXIT_INTERNAL = 3
EXIT_CODES = f"""exit codes:
  {EXIT_OK}  success (diff: no change; status: healthy)
  {EXIT_CHANGES}  diff: the stacks change; rehearse: not every record arrived; status: degraded; failover: not ready;
     lag: a partition past the audit's maxLag
  {EXIT_INVALID}  invalid input: every problem is printed (which flow, which field, what value, what is allowed);
     failover: could not tell
  {EXIT_INTERNAL}  an error of the program itself (INFRA_DEBUG=1 shows the traceback)
  {STATUS_EXIT[Health.down]}  status: down (a flow copies nothing)
  {STATUS_EXIT[Health.unknown]}  status: unknown (an object could not be read); lag: something could not be read
  130 interrupted"""
# Pulumi's stack names; the name also picks Pulumi.<stack>.yaml and stacks/<stack>.yaml.
STACK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
CONFIG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
OUTPUTS = ("text", "markdown", "json")


def _checked_stack(name: str) -> None:
    """A stack name Pulumi takes (it also picks Pulumi.<stack>.yaml and stacks/<stack>.yaml), or exit 2."""
    if not STACK_NAME.fullmatch(name):
        raise TopologyError([_stack_problem(name)], "the command line")


def _stack_problem(stack: str) -> Problem:
    return Problem("--stack", "(argument)", stack, "a Pulumi stack name: letters, digits, '-', '_' and '.'")


def _pairs(values: list[str], flag: str, secret: bool = False) -> dict[str, str]:
    """KEY=VALUE arguments; a malformed secret is reported without its text."""
    pairs, problems = {}, []
    for i, item in enumerate(values):
        key, sep, value = item.partition("=")
        if not sep or not CONFIG_KEY.fullmatch(key):
            shown = f"argument {i + 1} of {flag} (value not shown)" if secret else item
            problems.append(Problem(flag, "(argument)", shown, "KEY=VALUE with a config key such as us-west.password"))
            continue
        pairs[key.removeprefix(f"{PROJECT}:")] = value
    if problems:
        raise TopologyError(problems, "the command line")
    return pairs


def _watch_seconds(text: str) -> int:
    from infra.tools.watching import WATCH_SECONDS
    low, high = WATCH_SECONDS
    if not text.isdigit() or not low <= int(text) <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of seconds from {low} to {high}")
    return int(text)


def reaching(p: argparse.ArgumentParser) -> None:
    """How a command run from the operator's machine reaches a stack's clusters (failover, lag,
    status --live)."""
    p.add_argument("--credentials", type=Path, metavar="DIR",
                   help="the clusters' credentials as the audit's Secret holds them: DIR/<alias>/<file> "
                        "(password, ca.crt, truststore, truststore.password, client.crt, client.key)")
    p.add_argument("--bootstrap", action="append", default=[], metavar="ALIAS=HOST:PORT",
                   help="reach cluster ALIAS at these bootstrap servers from here (repeatable; default: the topology's)")
    p.add_argument("--connect", action="append", default=[], metavar="CONNECT=URL",
                   help="reach Connect cluster CONNECT's REST API at URL, e.g. a `kubectl port-forward` "
                        "(repeatable; default: its in-cluster Service)")


def version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:  # run from a tree that is not installed
        return "unknown (not installed)"


def parser(prog: str = "kafka-replication") -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    top = argparse.ArgumentParser(
        prog=prog, formatter_class=fmt, epilog=EXIT_CODES,
        description="Kafka cross-cluster replication on Kubernetes as code: Strimzi KafkaConnect and the "
                    "MirrorMaker 2 connectors from a per-stack topology (stacks/<stack>.yaml), deployed with Pulumi.")
    top.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    top.add_argument("-C", dest="directory", type=Path, metavar="DIR",
                     help="run as if started in DIR, as git and pulumi do: the Pulumi project is the nearest folder "
                          "from there up holding a Pulumi.yaml, and relative paths are read from DIR")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        # Every command's help ends with the exit codes.
        return sub.add_parser(name, formatter_class=fmt, epilog=EXIT_CODES, help=summary, description=description)

    r = command("render", "render a stack offline: objects, outputs.json and a preview summary",
                description="Render a stack as `pulumi preview` would register it, with no cluster, backend "
                            "or Pulumi CLI: one YAML file per Kubernetes object (secret values masked), "
                            "outputs.json and a summary.")
    r.add_argument("--stack", required=True, help="stack name (dev, prod, ...): picks Pulumi.<stack>.yaml")
    r.add_argument("--topology", help="topology file (default: the stack's `topology` config, else stacks/<stack>.yaml)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config, as `pulumi config set` (repeatable)")
    r.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                   help="secret config, as `pulumi config set --secret` (repeatable; never printed)")
    r.add_argument("--placeholder-secrets", action="store_true",
                   help="fill secret config not given with --secret with placeholder values (say so in the summary)")
    r.add_argument("--previous-outputs", type=Path, metavar="OUTPUTS_JSON",
                   help="the stack's last outputs (e.g. `pulumi stack output --json`), for checks against it")
    r.add_argument("--out", required=True, type=Path,
                   help="output folder (created; replaced if it holds a previous render, refused otherwise)")

    v = command("validate", "validate a topology file",
                description="Every check `render` and `pulumi preview` make on a topology itself, with no "
                            "stack config or secrets.")
    v.add_argument("topology", type=Path, help="the topology file (YAML)")
    v.add_argument("--output", choices=("text", "json"), default="text",
                   help="text (default) or json: {valid, clusters, flows, deployed, warnings, problems}")

    d = command("diff", "what a change does to replication: two offline renders compared",
                description="Render each stack at a git revision (--base) and in the working tree, or one "
                            "stack with two topology files (--before/--after), with no cluster, backend or "
                            "secrets, and print the change: a summary per stack, Kubernetes cluster and flow; "
                            "what it does (Connect pods roll, connectors restart, connector state lost, "
                            "topics that stop or start replicating, policy changes); then each object's "
                            "changed properties, secrets masked (docs/diff.md).")
    d.add_argument("--stack", action="append", default=[], metavar="NAME",
                   help="a stack to compare (repeatable; default: every Pulumi.<stack>.yaml on either side)")
    d.add_argument("--base", default="HEAD", metavar="REF",
                   help="the git revision to compare the working tree with (default HEAD; in a pull request "
                        "origin/<base branch>)")
    d.add_argument("--before", type=Path, metavar="TOPOLOGY", help="compare two topology files instead of revisions: "
                                                                   "the one before (needs --after and one --stack)")
    d.add_argument("--after", type=Path, metavar="TOPOLOGY", help="the topology file after (with --before)")
    d.add_argument("--output", choices=OUTPUTS, default="text",
                   help="text (default, for terminals), markdown (one pull-request comment, at most 64,000 "
                        "characters, truncation said) or json (for tools)")
    d.add_argument("--examples", type=int, default=5, metavar="N",
                   help="topic names shown per topic change (1-50, default 5)")

    h = command("rehearse", "run a topology's replication on this machine and report what arrived",
                description="Run a topology's replication on this machine (Kafka, Connect and MirrorMaker 2 "
                            "for real, docs/rehearsal.md) and report what arrived; exit 0 all arrived (with "
                            "--allow-missing: all that ran), 1 not, 2 invalid input or a class no jar provides.")
    h.add_argument("topology", type=Path, help="the topology file (YAML)")
    h.add_argument("--records", type=int, default=10, help="sample records per source connector (1-100000, default 10)")
    h.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep the logs (default: a temporary folder)")
    h.add_argument("--plugin-path", type=Path, action="append", default=[], metavar="DIR", dest="plugin_paths",
                   help="a folder of the connector plugins and transforms you deploy, as Connect's plugin.path "
                        "holds them: a jar, or a folder of jars, per plugin (repeatable)")
    h.add_argument("--distance", action="append", default=[], metavar="ALIAS=MS[@MBIT]", dest="distances",
                   help="put cluster ALIAS in another region: MS milliseconds of round trip (and MBIT Mbit/s each "
                        "way) between it and everything else, with the kernel's TCP end to end (repeatable; root)")
    h.add_argument("--allow-missing", action="store_true",
                   help="rehearse the connectors that can run when some need a class no jar here provides "
                        "(without it: exit 2, listing them, before anything starts); the report names the others")

    s = command("status", "what a deployed stack's flows are doing, from its Kubernetes clusters",
                description="One screen per stack: each flow's Connect clusters, connectors and tasks with their "
                            "states (a failed one's trace, first line), what the operator reports, and the "
                            "audit's last run; read with your kubeconfig from the objects the stack outputs "
                            "name (docs/status.md).")
    source = s.add_mutually_exclusive_group(required=True)
    source.add_argument("--outputs", metavar="FILE",
                        help="the stack's outputs: `pulumi stack output --json` saved to FILE, or - to "
                             "read them from standard input")
    source.add_argument("--stack", dest="stack_name", metavar="NAME",
                        help="the stack NAME of the project: its outputs read with `pulumi stack output --json` "
                             "(the Pulumi CLI on the PATH, logged in to the stack's backend)")
    s.add_argument("--watch", type=_watch_seconds, metavar="SECONDS",
                   help="read and show again every SECONDS (2 to 3600) until interrupted (exit 130); "
                        "with --output json, one document a line")
    s.add_argument("--flow", action="append", default=[], metavar="NAME", help="a flow (repeatable; default: all)")
    s.add_argument("--kubeconfig", action="append", default=[], metavar="[CLUSTER=]PATH",
                   help="the kubeconfig (default $KUBECONFIG, else ~/.kube/config); CLUSTER=PATH for one Kubernetes "
                        "cluster of the topology's `kubernetes` section (repeatable)")
    s.add_argument("--context", action="append", default=[], metavar="[CLUSTER=]NAME",
                   help="the kubeconfig context (default: its current context); CLUSTER=NAME per cluster")
    s.add_argument("--output", choices=("text", "json"), default="text", help="text (default) or json (docs/status.md)")
    s.add_argument("--live", action="store_true",
                   help="also read each flow's lag now from its Kafka clusters and Connect REST APIs, as "
                        "`kafka-replication lag` does (with --stack; docs/status.md#live-lag): it decides the "
                        "health with the objects")
    reaching(s)

    f = command("failover", "check a flow is ready to fail over and write the runbook's change to its stack",
                description="The failover runbook's readiness check (the audit's, docs/operations.md#the-failover-"
                            "command) run from here against the flow's clusters and Connect REST API: each source "
                            "partition's lag and each group's translated offsets. When the check allows it, the "
                            "runbook's change (the flow's connectors stopped) is written into the stack's topology "
                            "file, comments kept, and the offline diff printed; `pulumi up` is left to your "
                            "pipeline. Exit 0 ready, 1 not ready, 2 could not tell or invalid input.")
    f.add_argument("--stack", required=True, help="stack name: its topology file is the one changed")
    f.add_argument("--flow", required=True, help="the flow to fail over")
    f.add_argument("--procedure", choices=("continuous", "cutoff", "disaster"),
                   help="the runbook's procedure (default: the flow's failover.procedure, else cutoff)")
    f.add_argument("--stop", action="store_true",
                   help="step 5 of a continuous failover: stop the flow once every source partition is replicated "
                        "to its end, whatever the groups do on the target now")
    f.add_argument("--group", action="append", default=[], metavar="GROUP",
                   help="a consumer group to check (repeatable; default: every group with checkpoints of the flow's "
                        "topics, and but on disaster every group with offsets on them on the source)")
    reaching(f)
    f.add_argument("--dry-run", action="store_true", help="check and show, never write")
    f.add_argument("--json", action="store_true", help="print {report, change} as JSON")

    g = command("lag", "the flows' replication lag now, read from their Kafka clusters and Connect REST APIs",
                description="Each lagging source partition of the stack's flows (its lag and the age of its oldest "
                            "record not yet replicated) and each consumer group's newest checkpoint age, read now "
                            "with the audit's clients from here (docs/status.md#live-lag). Exit 0 within the "
                            "audit's maxLag, 1 past it, 2 invalid input, 5 something could not be read.")
    g.add_argument("--stack", required=True, help="stack name: its topology gives the clusters and connectors")
    g.add_argument("--flow", action="append", default=[], metavar="NAME", help="a flow (repeatable; default: all)")
    reaching(g)
    g.add_argument("--watch", type=_watch_seconds, metavar="SECONDS",
                   help="read and show again every SECONDS (2 to 3600) until interrupted (exit 130); "
                        "with --json, one document a line")
    g.add_argument("--json", action="store_true", help="print the report as JSON (spark/lag.py)")

    b = command("failback", "write the runbook's failback of a failed-over flow into its stack",
                description="The controlled failback of docs/operations.md#controlled-failback, written into the "
                            "stack's topology file (comments kept) with the offline diff; `pulumi up` is left to your "
                            "pipeline. Default policy: the reverse flow added beside the stopped one. Identity: the "
                            "flow replaced by the reversed one, stopped, its offsets at the failover record's end "
                            "offsets minus one (`kafka-replication failover` wrote the record when it stopped the "
                            "flow); then --resume sets it running. Exit 0 written, 2 invalid input.")
    b.add_argument("--stack", required=True, help="stack name: its topology file is the one changed")
    b.add_argument("--flow", required=True, help="the flow that was failed over (source to target)")
    b.add_argument("--resume", action="store_true",
                   help="identity: the reversed flow set running, its failback offsets request removed, once the "
                        "operator has carried it out")
    b.add_argument("--dry-run", action="store_true", help="say what would be written, never write")

    i = command("init", "write a stack's first topology file from the template's answers",
                description="Write stacks/<stack>.yaml of the Pulumi project from the answers the project template "
                            "asks for (`pulumi new`: the operator release, two clusters, the topics), saved in "
                            "Pulumi.<stack>.yaml or given here; checked as `validate` checks a file, never "
                            "written over an existing one.")
    i.add_argument("--stack", required=True, help="stack name: writes stacks/<stack>.yaml, reads Pulumi.<stack>.yaml")
    i.add_argument("--operator", metavar="'FLAVOUR VERSION'", help="e.g. 'strimzi 1.2.0' (default: the stack's config)")
    i.add_argument("--source", metavar="ALIAS=BOOTSTRAP", help="the source cluster (default: the stack's config)")
    i.add_argument("--target", metavar="ALIAS=BOOTSTRAP", help="the target cluster (default: the stack's config)")
    i.add_argument("--topics", metavar="REGEX", help="the topics to replicate (default: the stack's config)")

    command("schema", "print the topology's JSON Schema",
            description="Print the JSON Schema of topology files (for editors and CI checks).")
    c = command("completion", "print a shell completion script",
                description="Print a completion script for bash or zsh, e.g. "
                            "`kafka-replication completion bash > /etc/bash_completion.d/kafka-replication`.")
    c.add_argument("shell", choices=("bash", "zsh"), help="the shell")
    return top


def main(argv: list[str] | None = None) -> int:
    invoked = Path(sys.argv[0]).name
    args = parser("python -m infra" if invoked == "__main__.py" else "kafka-replication").parse_args(argv)
    try:
        if args.directory is not None:
            _change_directory(args.directory)
        return _run(args)
    except TopologyError as exc:
        if getattr(args, "output", "text") == "json" and args.command in ("validate", "diff"):
            print(jsontext.dumps(_problems_json(exc), indent=2))
        else:
            print(f"error: {exc.report()}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours, not the user's input: one line, distinct exit code
        if os.environ.get("INFRA_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (INFRA_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL


def _change_directory(directory: Path) -> None:
    try:
        os.chdir(directory)
    except OSError as exc:
        raise TopologyError([Problem("-C", "(argument)", str(directory), f"a folder that can be entered "
                                     f"({exc.strerror or type(exc).__name__})")], "the command line") from None


def _problems_json(exc: TopologyError) -> dict[str, Any]:
    return {"valid": False, "subject": exc.subject,
            "problems": [{"where": p.where, "field": p.field, "value": p.value if isinstance(
                p.value, (str, int, float, bool, type(None))) else repr(p.value), "allowed": p.allowed,
                "line": p.line} for p in exc.problems]}


def _run(args: argparse.Namespace) -> int:
    if args.command == "completion":
        import shtab
        print(shtab.complete(parser(), shell=args.shell))
    elif args.command == "diff":
        return _diff(args)
    elif args.command == "status":
        from infra.tools import status
        if args.stack_name is not None:
            _checked_stack(args.stack_name)
        return status.run(args.outputs, args.flow, args.kubeconfig, args.context, args.output, args.stack_name,
                          args.watch, args.live, status.Reach(args.credentials, args.bootstrap, args.connect))
    elif args.command == "failover":
        from infra.tools import failover
        _checked_stack(args.stack)
        return failover.run(args.stack, args.flow, args.procedure, args.stop, args.group, args.credentials,
                            args.bootstrap, args.connect, args.dry_run, args.json)
    elif args.command == "lag":
        from infra.tools import lag
        _checked_stack(args.stack)
        return lag.run(args.stack, args.flow, args.credentials, args.bootstrap, args.connect, args.watch, args.json)
    elif args.command == "failback":
        from infra.tools import failover
        _checked_stack(args.stack)
        return failover.run_failback(args.stack, args.flow, args.resume, args.dry_run)
    elif args.command == "init":
        from infra.tools import init
        _checked_stack(args.stack)
        path = init.write(args.stack, {k: getattr(args, k) for k in init.ANSWERS})
        print(f"wrote {path}; next: the secrets it needs (`kafka-replication render --stack {args.stack} "
              "--out DIR` names them), then `pulumi preview`")
    elif args.command == "schema":
        from infra.topology.schema import json_schema
        print(json.dumps(json_schema(), indent=2, sort_keys=True))
    elif args.command == "rehearse":
        from infra.tools.rehearsal import cli
        cli.check_path(args.topology)
        cli.check_keep(args.keep)
        if not 1 <= args.records <= 100_000:
            raise TopologyError([Problem("--records", "(argument)", str(args.records), "1 to 100000")],
                                "the command line")
        return cli.rehearse(args.topology, args.records, args.keep, tuple(args.plugin_paths), args.allow_missing,
                            tuple(args.distances))
    elif args.command == "validate":
        from infra.deploy import deployment

        # Every check `render` and `pulumi preview` make on the topology itself (one verdict).
        model, _, _ = deployment.validate_file(args.topology)
        if args.output == "json":
            print(jsontext.dumps({"valid": True, "topology": str(args.topology), "clusters": len(model.clusters),
                              "flows": len(model.topology.flows), "deployed": len(model.flows),
                              "warnings": list(model.warnings), "problems": []}, indent=2))
            return EXIT_OK
        print(f"{args.topology}: ok ({len(model.clusters)} clusters, {len(model.topology.flows)} flows declared, "
              f"{len(model.flows)} deployed)")
        for warning in model.warnings:
            print(f"warning: {warning}")
    else:
        from infra.core import reading
        from infra.tools import render
        _checked_stack(args.stack)
        secrets = _pairs(args.secret, "--secret", secret=True)
        from infra.deploy import config as stack_config
        config = stack_config.plain(args.stack)
        config.update(_pairs(args.set, "--set"))
        if args.topology:
            config["topology"] = str(Path(args.topology).resolve())
        previous = None
        if args.previous_outputs:
            previous = reading.load_json_file(args.previous_outputs, "stack outputs file")
            _check_previous(previous, str(args.previous_outputs))
        render.check_out(args.out)  # before the render, so a bad --out costs nothing
        try:
            result = render.run(args.stack, config, secrets, args.placeholder_secrets, previous, only_read=True)
        finally:
            render.close_event_loop()
        written = render.write(result, args.out)
        print(render.summary(result))
        print(f"\nWrote {len(written)} objects and outputs.json to {args.out}")
    return 0


def _check_previous(previous: object, source: str) -> None:
    """The previous outputs have the shape the checks against them read (`flows`: one object
    per flow name); what a flow's values must be is said by the check that reads them."""
    expected = "an object, as `pulumi stack output --json` prints"
    problems = []
    if not isinstance(previous, dict):
        problems.append(Problem(source, "(json)", type(previous).__name__, expected))
    elif "flows" not in previous:
        # The program's outputs always have it: without it, nothing says what runs now.
        problems.append(Problem(source, "flows", None, "the stack's outputs, which always have `flows` "
                                "(`pulumi stack output --json`; docs/outputs.md)"))
    else:
        flows = previous["flows"]
        if not isinstance(flows, dict):
            problems.append(Problem(source, "flows", type(flows).__name__, "an object of flows by name (docs/outputs.md)"))
        else:
            problems += [Problem(source, f"flows.{name}", type(value).__name__, "an object (docs/outputs.md)")
                         for name, value in sorted(flows.items()) if not isinstance(value, dict)]
    if problems:
        raise TopologyError(problems, "the command line")


def _diff(args: argparse.Namespace) -> int:
    from infra.deploy.config import project_dir
    from infra.tools import diff
    root = project_dir()
    problems = []
    for stack in args.stack:
        if not STACK_NAME.fullmatch(stack):
            problems.append(_stack_problem(stack))
    if not 1 <= args.examples <= 50:
        problems.append(Problem("--examples", "(argument)", args.examples, "1 to 50"))
    files = args.before is not None or args.after is not None
    if files and (args.before is None or args.after is None):
        problems.append(Problem("--before/--after", "(argument)", str(args.before or args.after),
                                "both files: the topology before and after"))
    if files and len(args.stack) != 1:
        problems.append(Problem("--stack", "(argument)", ", ".join(args.stack) or None,
                                "exactly one stack with --before/--after: its config renders both files"))
    if files and args.base != "HEAD":
        problems.append(Problem("--base", "(argument)", args.base, "no --base with --before/--after"))
    if problems:
        raise TopologyError(problems, "the command line")
    if files:
        from infra.core import reading
        for flag, path in (("--before", args.before), ("--after", args.after)):
            reading.load_yaml_file(path, f"topology file ({flag})")  # a missing or unreadable file, said now
        stack = args.stack[0]
        before_label, after_label = str(args.before), str(args.after)
        pairs = [(stack, diff.render_here(stack, args.before), diff.render_here(stack, args.after))]
    else:
        before_label, after_label = args.base, "working tree"
        with tempfile.TemporaryDirectory(prefix="kafka-replication-diff-") as work:
            base = diff.render_at(args.base, args.stack or None, root, Path(work))
        stacks = sorted(base)
        unknown = [s for s in stacks if not base[s].present and not (root / f"Pulumi.{s}.yaml").exists()]
        if unknown:
            raise TopologyError([Problem("--stack", "(argument)", s, f"a stack of {args.base} or the working tree "
                                         f"(a Pulumi.<stack>.yaml): {', '.join(diff.stacks_in(root)) or 'none'}")
                                 for s in unknown], "the command line")
        here = {s: diff.render_here(s) if (root / f"Pulumi.{s}.yaml").exists() else diff.ABSENT for s in stacks}
        pairs = [(s, base[s], here[s]) for s in stacks]
    diffs = [diff.compare(s, before, after, args.examples) for s, before, after in pairs]
    render_fn = {"text": diff.text, "markdown": diff.markdown, "json": diff.as_json}[args.output]
    print(render_fn(diffs, before_label, after_label))
    return EXIT_CHANGES if any(d.changed for d in diffs) else EXIT_OK

