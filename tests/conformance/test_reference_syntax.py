"""Config-provider references written and read as Kafka's own pattern reads them, run by the JDK
(tests/support/java/ReferenceCheck.java)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from infra.core import references
from infra.tools import render
from tests.support.variants import STACKS

ROOT = Path(__file__).resolve().parents[2]


JAVA_REFERENCES = ROOT / "tests" / "support" / "java" / "ReferenceCheck.java"


def java_references(values: list[str]) -> list[list[tuple[str, str, str]]]:
    """Kafka's own pattern, run by the JDK (tests/support/java/ReferenceCheck.java)."""
    java = shutil.which("java")
    assert java, "the JDK is needed: Java is the oracle of Kafka's config variables"
    done = subprocess.run([java, str(JAVA_REFERENCES)], input="\n".join(values) + "\n", capture_output=True,
                          text=True, timeout=300, check=True)
    rows = done.stdout.split("\n")[:-1]
    return [[tuple(m.split("\x01")) for m in row.split("\x02")] if row else [] for row in rows]


def test_references_are_written_and_read_as_kafka_reads_them():
    """Every value of every connector of both stacks, and values that stress the pattern, are
    parsed by references.parse exactly as Kafka's ConfigTransformer pattern finds them."""
    values = sorted({str(v) for stack in STACKS for o in render.run(stack, placeholder_secrets=True).objects()
                     if o["kind"] == "KafkaConnector" for v in o["spec"]["config"].values()})
    values += ["${cfmap:ns/obj:key:with:colons}", "${file:/tmp/a.properties:k}", "${secret:k}", "${a:}",
               "plain", "${cfmap:ns/a:k},${cfmap:ns/b:k2}", "${unclosed:ns/a:k", "x${cfmap:ns/o:k}y${}"]
    java = java_references(values)
    assert len(java) == len(values)
    for value, found in zip(values, java):
        assert [(r.provider, r.path, r.key) for r in references.parse(value)] == found, value
    assert sum(map(len, java)) > 100
