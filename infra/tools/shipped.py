"""The project's files that the tools read at run time and that are not Python: the pins Maven and
Go build from (the jars of each operator release, Strimzi's CRD generator, the metrics agent, the
kube-apiserver and kubectl), and the Java sources of the rehearsal's clients.

In a checkout they are read where they live. A wheel ships those outside the packages under
`infra/tools/_shipped/` (setup.py's build step, from its SHIPPED list), and the Java sources and
spark/pom.xml as package data (pyproject.toml): installed, `kafka-replication rehearse` finds
them there, wherever the user runs it.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGED = HERE / "_shipped"
# The folder holding the packages: a checkout's root, or site-packages once installed.
TREE = HERE.parents[1]


def path(relative: str) -> Path:
    """The file (or folder) at `relative` to the checkout's root: the wheel's copy where the
    package is installed, else the checkout's."""
    packaged = PACKAGED / relative
    return packaged if packaged.exists() else TREE / relative
