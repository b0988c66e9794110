"""The job's shared plumbing, used by the audit (spark/audit.py), the failover readiness check
(spark/failover.py) and the live lag (spark/lag.py) alike: reading the audit configuration
against the contract, the output folder check, a report command's run, cluster readers made on
first use and the Spark session."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from contract import audit as contract
from spark.offsets import Unverifiable

CONFIG_LIMIT = 16 << 20  # bytes of an audit configuration (thousands of flows fit)


class CouldNotAudit(Exception):
    """The run cannot produce a verdict (exit 2): bad input, an unwritable output folder, nothing
    to audit. Never confused with findings (exit 1)."""


def report_command(out: Path | None, produce: Callable[[], dict[str, Any]], failed: str, report_file: str,
                   shown: Callable[[dict[str, Any]], str], exits: dict[str, int]) -> int:
    """A command that writes one report (the failover check, the live lag): the output folder
    checked first, the report made, written to `<out>/<report_file>` and `shown`; its exit code
    `exits[report["verdict"]]`. Anything that keeps it from a report, a crash included, is
    `exits["error"]` with `failed` and the reason on standard error, never a verdict."""
    try:
        if out:
            check_out(out)
        result = produce()
    except (CouldNotAudit, Unverifiable) as exc:
        print(f"{failed}: {exc}", file=sys.stderr)
        return exits["error"]
    except Exception as exc:
        print(f"{failed}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return exits["error"]
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / report_file).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    text = shown(result)
    if text:
        print(text)
    return exits[result["verdict"]]


class Clusters(dict):
    """Cluster readers made on first use; a cluster that cannot be reached fails only its flows."""

    def __init__(self, make):
        super().__init__()
        self.make, self.failed = make, {}

    def __missing__(self, alias):
        if alias in self.failed:
            raise self.failed[alias]
        try:
            self[alias] = self.make(alias)
        except Unverifiable as exc:
            self.failed[alias] = exc
            raise
        return self[alias]


def check_out(out: Path) -> None:
    existing = out
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise CouldNotAudit(f"the output folder {out} cannot be written ({existing} is not a writable folder)")


def read_config(path: Path) -> dict:
    """The audit configuration, checked against the contract before anything else runs."""
    try:
        if not path.is_file():
            raise CouldNotAudit(f"the audit configuration {path} is not a readable file")
        with open(path, "rb") as handle:
            text = handle.read(CONFIG_LIMIT + 1)
        if len(text) > CONFIG_LIMIT:
            raise CouldNotAudit(f"the audit configuration {path} is larger than {CONFIG_LIMIT} bytes")
        config = json.loads(text.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise CouldNotAudit(f"cannot read the audit configuration {path}: {exc}") from None
    found = contract.problems(config)
    if found:
        raise CouldNotAudit(f"the audit configuration {path} breaks contract version {contract.VERSION}: "
                            + "; ".join(found[:10]) + (f" (and {len(found) - 10} more)" if len(found) > 10 else ""))
    return config


def spark_session(master: str | None):
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(contract.JOB)
    if master:
        builder = builder.master(master)
    if (master or "").startswith("local"):
        # One machine: a few shuffle partitions, not Spark's 200 meant for clusters.
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    return (builder.config("spark.sql.session.timeZone", "UTC")
            # JAAS lines carry the SASL password: keep them out of logs and the UI.
            .config("spark.redaction.regex", r"(?i)secret|password|token|jaas|ssl\.keystore\.key")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate())
