"""Command line: `python -m infra render|schema|validate`.

Input problems are printed all at once and exit with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from infra import PROJECT
from infra.errors import TopologyError

EXIT_INVALID = 2


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    pairs = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: {flag} takes KEY=VALUE, got {item!r}")
        pairs[key.removeprefix(f"{PROJECT}:")] = value
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
    args = parser.parse_args(argv)

    try:
        if args.command == "schema":
            from infra.model import json_schema
            print(json.dumps(json_schema(), indent=2, sort_keys=True))
        elif args.command == "validate":
            from infra.model import load, warnings
            topo = load(args.topology)
            print(f"{args.topology}: ok ({len(topo.clusters)} clusters, {len(topo.flows)} flows declared, "
                  f"{len(topo.sorted_flows())} deployed)")
            for warning in warnings(topo):
                print(f"warning: {warning}")
        else:
            from infra import render
            config = _stack_config(args.stack)
            config.update(_pairs(args.set, "--set"))
            if args.topology:
                config["topology"] = str(Path(args.topology).resolve())
            previous = json.loads(args.previous_outputs.read_text()) if args.previous_outputs else None
            result = render.run(args.stack, config, _pairs(args.secret, "--secret"), args.placeholder_secrets,
                                previous)
            written = render.write(result, args.out)
            print(render.summary(result))
            print(f"\nWrote {len(written)} objects and outputs.json to {args.out}")
    except TopologyError as exc:
        print(f"error: {exc.report()}", file=sys.stderr)
        return EXIT_INVALID
    return 0


def _stack_config(stack: str) -> dict[str, str]:
    """Plain (non-secret) values of Pulumi.<stack>.yaml, as `pulumi config` would give them."""
    import yaml
    from infra.config import ROOT
    path = ROOT / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    values = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    return {k.removeprefix(f"{PROJECT}:"): v for k, v in values.items()
            if k.startswith(f"{PROJECT}:") and isinstance(v, str)}


if __name__ == "__main__":
    sys.exit(main())
