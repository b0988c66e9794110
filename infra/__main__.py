"""`python -m infra` and the `kafka-replication` console script: the command line of
infra/tools/cli.py."""

from infra.tools.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
