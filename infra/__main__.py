"""Command line: `python -m infra render|schema|validate|rehearse`.

Input problems are printed all at once and exit with code 2, without a traceback. An error of
the program itself exits 3 with one line (INFRA_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from infra import PROJECT
from infra.errors import Problem, TopologyError

EXIT_INVALID = 2
EXIT_INTERNAL = 3
# Pulumi's stack names; the name also picks Pulumi.<stack>.yaml and stacks/<stack>.yaml.
STACK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
CONFIG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="render a stack offline: objects, outputs.json and a preview summary")
    r.add_argument("--stack", required=True, help="stack name (dev, prod, ...)")
    r.add_argument("--topology", help="topology file (default: the stack's `topology` config, else stacks/<stack>.yaml)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config, as `pulumi config set`")
    r.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                   help="secret config, as `pulumi config set --secret`")
    r.add_argument("--placeholder-secrets", action="store_true",
                   help="fill secret config not given with --secret with placeholder values (say so in the summary)")
    r.add_argument("--previous-outputs", type=Path, metavar="OUTPUTS_JSON",
                   help="the stack's last outputs (e.g. `pulumi stack output --json`), for checks against it")
    r.add_argument("--out", required=True, type=Path, help="output folder (replaced if it holds a previous render)")
    v = sub.add_parser("validate", help="validate a topology file")
    v.add_argument("topology", type=Path)
    sub.add_parser("schema", help="print the topology's JSON Schema")
    h = sub.add_parser("rehearse", help="run a topology's replication on this machine (Kafka, Connect, MirrorMaker 2) "
                                        "and report what arrived; exit 0 all arrived, 1 not, 2 invalid input")
    h.add_argument("topology", type=Path)
    h.add_argument("--records", type=int, default=10, help="sample records per source connector (default 10)")
    h.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep the logs (default: a temporary folder)")
    args = parser.parse_args(argv)

    try:
        return _run(args)
    except TopologyError as exc:
        print(f"error: {exc.report()}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours, not the user's input: one line, distinct exit code
        if os.environ.get("INFRA_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (INFRA_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    if args.command == "schema":
        from infra.schema import json_schema
        print(json.dumps(json_schema(), indent=2, sort_keys=True))
    elif args.command == "rehearse":
        from infra.rehearsal import cli
        cli.check_path(args.topology)
        if not 1 <= args.records <= 100_000:
            raise TopologyError([Problem("--records", "(argument)", str(args.records), "1 to 100000")],
                                "the command line")
        return cli.rehearse(args.topology, args.records, args.keep)
    elif args.command == "validate":
        from infra import deployment
        # Every check `render` and `pulumi preview` make on the topology itself (one verdict).
        model, _, _ = deployment.validate_file(args.topology)
        print(f"{args.topology}: ok ({len(model.clusters)} clusters, {len(model.topology.flows)} flows declared, "
              f"{len(model.flows)} deployed)")
        for warning in model.warnings:
            print(f"warning: {warning}")
    else:
        from infra import reading, render
        if not STACK_NAME.fullmatch(args.stack):
            raise TopologyError([Problem("--stack", "(argument)", args.stack,
                                         "a Pulumi stack name: letters, digits, '-', '_' and '.'")], "the command line")
        secrets = _pairs(args.secret, "--secret", secret=True)
        config = _stack_config(args.stack)
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


def _stack_config(stack: str) -> dict[str, str]:
    """Plain (non-secret) values of Pulumi.<stack>.yaml, as `pulumi config` would give them."""
    from infra import reading
    from infra.config import ROOT
    path = ROOT / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    document = reading.load_yaml_file(path, "stack settings file") or {}
    values = (document.get("config") if isinstance(document, dict) else None) or {}
    if not isinstance(values, dict):
        raise TopologyError([Problem(str(path), "config", type(values).__name__, "a mapping of config keys")])
    return {k.removeprefix(f"{PROJECT}:"): v for k, v in values.items()
            if k.startswith(f"{PROJECT}:") and isinstance(v, str)}


if __name__ == "__main__":
    sys.exit(main())
